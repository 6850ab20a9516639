#!/bin/sh
# scripts/nvcc-deps (its path is $1) against a stand-in nvcc that prints its
# arguments one a line: a compile (-c, -o OUT) gets -MD -MF OUT.d appended,
# every other call passes through as it came, and nvcc's status is its own.
set -eu
w=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
printf '#!/bin/sh\nfor a in "$@"; do printf "%%s\\n" "$a"; done\n' >"$t/nvcc"
chmod +x "$t/nvcc"
NVCC_REAL=$t/nvcc
export NVCC_REAL
fail=0
expect() {     # WANT, then the wrapper's arguments
    want=$1
    shift
    got=$("$w" "$@" | tr '\n' '|')
    if [ "$got" != "$want" ]; then
        echo "nvcc-deps $*: passed on '$got', expected '$want'"
        fail=1
    fi
}
expect '-O3|-o|dir/a b.cu.o|-c|../x.cu|-MD|-MF|dir/a b.cu.o.d|' -O3 -o 'dir/a b.cu.o' -c ../x.cu
expect '-c|x.cu|-o|x.o|-MD|-MF|x.o.d|' -c x.cu -o x.o
expect '-o|prog|a.o|b.o|-lcudart|' -o prog a.o b.o -lcudart
expect '--version|' --version
expect '-c|x.cu|' -c x.cu
expect '-c|x.cu|-o|' -c x.cu -o
NVCC_REAL=false
if "$w" -c x.cu -o x.o; then
    echo "nvcc-deps: a failing nvcc's status was lost"
    fail=1
fi
[ $fail = 0 ] && echo "nvcc-deps: every call passed on as expected"
exit $fail
