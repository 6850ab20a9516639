#!/bin/sh
# tests/install/install.sh — the `install` test: `meson install` of a built
# tree into a temporary DESTDIR, then the installed pieces as a user meets
# them.  Checks that the files land where the prefix says (programs, man
# pages, units, sysusers, config, models, docs), that no @placeholder@ is
# left in them, that the man pages name every daemon setting and client
# option, that the installed daemon looks for models in the installed
# models folder by default and through the installed config, and that it
# starts with the installed config (its models and listen address pointed
# into the DESTDIR), recognises tests/data/sample-7.pgm and sample-2.pgm
# through the installed `neocog` as 7 and 2 (sample-2.pgm through the installed
# Python client too, when it was built), and exits 0 on SIGTERM.
#
# usage: install.sh BUILD_DIR SOURCE_DIR
# environment (tests/install/meson.build): NC_PREFIX_* the install paths
# of this build, NC_MESON the meson to install with, NC_TEST_DATA.
# Exit 77 (skip) only when no meson program is there to install with.
set -eu

build=$1
src=$2
data=${NC_TEST_DATA:-$src/tests/data}
bindir=$NC_PREFIX_BINDIR
sbindir=$NC_PREFIX_SBINDIR
mandir=$NC_PREFIX_MANDIR
sysconfdir=$NC_PREFIX_SYSCONFDIR
modelsdir=$NC_PREFIX_MODELSDIR
docdir=$NC_PREFIX_DOCDIR
unitdir=$NC_PREFIX_UNITDIR
sysusersdir=$NC_PREFIX_SYSUSERSDIR
# The Python client's folder, when it was built (a path no file has, else).
pythondir=${NC_PREFIX_PYTHONDIR:-/nonexistent}

meson=${NC_MESON:-}
if [ -z "$meson" ]; then
    meson=$(command -v meson 2>/dev/null) || { echo "skip: no meson to install with"; exit 77; }
fi

fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

# The daemon takes the source tree's models/ when its binary lies under the
# build folder, so the DESTDIR must not.
base=${TMPDIR:-/tmp}
case "$base/" in
    "$build"/*) base=/tmp ;;
esac
tmp=$(mktemp -d "$base/neocogd-install.XXXXXX")
pid=
cleanup() {
    if [ -n "$pid" ]; then
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- meson install ------------------------------------------------------------
root=$tmp/root
if ! "$meson" install -C "$build" --destdir "$root" --no-rebuild >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    echo "FAIL: meson install --destdir failed (is the build complete? run ninja first)"
    exit 1
fi
echo "ok: meson install --destdir $root"

# ---- what is installed where ----------------------------------------------------
for p in "$sbindir/neocogd" "$bindir/neocog" "$bindir/neocog-classify" "$bindir/neocog-train"; do
    [ -x "$root$p" ] || fail "$p not installed (or not executable)"
done
for p in "$mandir/man8/neocogd.8" "$mandir/man1/neocog.1" "$mandir/man5/neocogd.conf.5" \
         "$unitdir/neocogd.service" "$unitdir/neocogd.socket" "$unitdir/neocogd-http.socket" \
         "$sysusersdir/neocogd.conf" "$sysconfdir/neocogd/neocogd.conf" \
         "$modelsdir/README.md" "$docdir/README.md" "$docdir/daemon/README.md"; do
    [ -f "$root$p" ] || fail "$p not installed"
done
for f in "$src"/models/*.ncm; do
    [ -f "$root$modelsdir/${f##*/}" ] ||
        fail "models/${f##*/} not installed in $modelsdir (list it in models/meson.build)"
done
for f in "$src"/docs/*.md; do
    [ -f "$root$docdir/docs/${f##*/}" ] || fail "docs/${f##*/} not installed in $docdir/docs"
done
# Nothing may land outside the prefix's folders above.
find "$root" -type f | sed "s|^$root||" > "$tmp/files"
while IFS= read -r f; do
    case "$f" in
        "$bindir"/*|"$sbindir"/*|"$mandir"/*|"$sysconfdir"/*|"$modelsdir"/*|"$docdir"/*|"$unitdir"/*|"$sysusersdir"/*) ;;
        "$pythondir"/neocog/*) ;;
        *) fail "$f installed outside the expected folders" ;;
    esac
done < "$tmp/files"
echo "ok: $(wc -l < "$tmp/files") files installed"

conf=$root$sysconfdir/neocogd/neocogd.conf
service=$root$unitdir/neocogd.service
if grep -n '@[a-z_]*@' "$conf" "$root$unitdir"/neocogd* "$root$mandir"/man*/neocog*; then
    fail "a @placeholder@ is left in an installed file (above)"
fi
grep -q "^models = $modelsdir\$" "$conf" || fail "$sysconfdir/neocogd/neocogd.conf: no 'models = $modelsdir' line"
grep -q "^ExecStart=$sbindir/neocogd --config $sysconfdir/neocogd/neocogd.conf\$" "$service" ||
    fail "neocogd.service: ExecStart does not run $sbindir/neocogd with $sysconfdir/neocogd/neocogd.conf"
# Every man: page a unit names is installed.
for u in "$root$unitdir"/neocogd*; do
    docs=$(sed -n 's/^Documentation=//p' "$u")
    [ -n "$docs" ] || fail "${u##*/}: no Documentation="
    for d in $docs; do
        case "$d" in
            man:*\(*\))
                page=${d#man:}
                name=${page%(*}
                sec=${page#*(}
                sec=${sec%)}
                [ -f "$root$mandir/man$sec/$name.$sec" ] ||
                    fail "${u##*/}: Documentation=$d is not installed"
                ;;
            *) fail "${u##*/}: Documentation=$d is not an installed man page" ;;
        esac
    done
done

# ---- the man pages and the config match the programs -------------------------------
daemon=$root$sbindir/neocogd
client=$root$bindir/neocog
"$daemon" --help > "$tmp/daemon-help" || fail "neocogd --help exited non-zero"
keys=$(sed -n 's/^  --\([a-z-]*\) .*/\1/p' "$tmp/daemon-help" | tr - _)
[ -n "$keys" ] || fail "neocogd --help lists no settings"
for k in $keys; do
    grep -q "^\.BI $k \"" "$root$mandir/man5/neocogd.conf.5" ||
        fail "man/neocogd.conf.5 does not describe the setting $k"
    grep -q "^#\{0,1\}$k =" "$conf" || fail "systemd/neocogd.conf has no '$k =' line"
done
"$client" --help > "$tmp/client-help" || fail "neocog --help exited non-zero"
"$client" camera --help >> "$tmp/client-help" || fail "neocog camera --help exited non-zero"
opts=$(grep -o -- '--[a-z][a-z0-9-]*' "$tmp/client-help" | sort -u)
for o in $opts; do
    roff=$(printf '%s' "$o" | sed 's/-/\\-/g')
    grep -qF -- "$roff" "$root$mandir/man1/neocog.1" || fail "man/neocog.1 does not mention $o"
done
if command -v groff >/dev/null 2>&1; then
    for page in "$root$mandir"/man*/neocog*; do
        out=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff: ${page##*/} failed"
        if [ -n "$out" ]; then
            echo "$out"
            fail "groff warns about ${page##*/}"
        fi
    done
fi

# ---- where the installed daemon looks for models -----------------------------------
# No listener: it logs where it looks, then stops before serving anything.
for how in "no options" "--config"; do
    if [ "$how" = "--config" ]; then set -- --config "$conf"; else set --; fi
    rc=0
    "$daemon" "$@" --listen-tcp none --listen-unix none --http none > "$tmp/probe.log" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] || fail "neocogd ($how) with no listener exited 0"
    grep -q "models from $modelsdir\$" "$tmp/probe.log" || {
        cat "$tmp/probe.log"
        fail "neocogd ($how) does not look for models in $modelsdir"
    }
done

# ---- the installed daemon, config and client together ----------------------------
sock=$tmp/neocogd.sock
"$daemon" --config "$conf" --models "$root$modelsdir" --listen-unix "$sock" \
    --listen-tcp none --http none > "$tmp/daemon.log" 2>&1 &
pid=$!
deadline=$(($(date +%s) + 90))
ready=0
while [ "$(date +%s)" -lt "$deadline" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
        break
    fi
    if [ -S "$sock" ] &&
       "$client" --server "unix:$sock" --timeout 5000 status > "$tmp/status" 2>&1; then
        ready=1
        break
    fi
    sleep 0.2
done
if [ "$ready" -ne 1 ]; then
    cat "$tmp/daemon.log" "$tmp/status" 2>/dev/null
    echo "FAIL: the installed neocogd did not become ready"
    exit 1
fi
grep -q "$root$modelsdir/cnn-column.ncm" "$tmp/status" || {
    cat "$tmp/status"
    fail "neocog status does not show the installed cnn-column.ncm"
}
out=$("$client" --server "unix:$sock" recognize "$data/sample-7.pgm" "$data/sample-2.pgm") || {
    cat "$tmp/daemon.log"
    fail "neocog recognize exited non-zero"
}
echo "$out"
# txt output: "FILE: LABEL (confidence C)", one line per file in order.
got=$(printf '%s\n' "$out" | sed -n 's/^.*sample-\([0-9]\)\.pgm: \([0-9]\) (.*/\1\2/p' | tr '\n' ' ')
[ "$got" = "77 22 " ] || fail "recognised sample-7.pgm and sample-2.pgm as '$got' (file digit, answer), want '77 22 '"
# The installed Python client, imported from where its Python looks.
if [ -n "${NC_PYTHON:-}" ]; then
    got=$(PYTHONPATH=$root$pythondir "$NC_PYTHON" -c 'import sys, neocog
print(neocog.Client(sys.argv[1]).recognize(sys.argv[2]).text)' "unix:$sock" "$data/sample-2.pgm") ||
        fail "the installed Python client (in $pythondir) failed"
    [ "$got" = 2 ] || fail "the installed Python client read sample-2.pgm as '$got', want 2"
fi

kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
if [ "$rc" -ne 0 ]; then
    cat "$tmp/daemon.log"
    fail "the installed neocogd exited $rc on SIGTERM, want 0"
fi

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "ok: installed neocogd served 7 and 2 and stopped cleanly"
