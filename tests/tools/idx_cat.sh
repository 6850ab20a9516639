#!/bin/sh
# tests/tools/idx_cat.sh — idx-cat joins ranges of IDX pairs byte for byte,
# --shuffle reorders them (the same items, the same order for a seed), bad
# ranges fail; and neocog-unipen --look binary writes only ink or paper,
# --variant-blocks writes one drawing of every sample a block, and its usage
# errors are worded as every program's (io/opts.h).
#   idx_cat.sh IDX_CAT NEOCOG_UNIPEN   (NC_SOURCE_ROOT names the source tree)
set -u
cat_bin=$1
unipen_bin=$2
root=${NC_SOURCE_ROOT:-.}
mi=$root/tests/data/mnist-t1k-images-idx3-ubyte.gz
ml=$root/tests/data/mnist-t1k-labels-idx1-ubyte.gz
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nc-idxcat.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
gzip -dc "$mi" >"$tmp/i"
gzip -dc "$ml" >"$tmp/l"

# items 10..14 then 100..102: the header counts 8, the bytes are the inputs'
"$cat_bin" "$tmp/a" "$mi" "$ml" 10 5 "$tmp/i" "$tmp/l" 100 3 2>/dev/null || fail "join: exit $?"
[ "$(od -An -tu1 -j4 -N4 "$tmp/a-images-idx3-ubyte" | tr -s ' ')" = " 0 0 0 8" ] ||
    fail "image count"
[ "$(wc -c <"$tmp/a-images-idx3-ubyte")" -eq $((16 + 8 * 784)) ] || fail "image bytes"
{ tail -c +$((16 + 10 * 784 + 1)) "$tmp/i" | head -c $((5 * 784))
  tail -c +$((16 + 100 * 784 + 1)) "$tmp/i" | head -c $((3 * 784)); } >"$tmp/want"
tail -c +17 "$tmp/a-images-idx3-ubyte" | cmp -s - "$tmp/want" || fail "image contents"
{ tail -c +$((8 + 10 + 1)) "$tmp/l" | head -c 5
  tail -c +$((8 + 100 + 1)) "$tmp/l" | head -c 3; } >"$tmp/wantl"
tail -c +9 "$tmp/a-labels-idx1-ubyte" | cmp -s - "$tmp/wantl" || fail "labels"

# COUNT 0: all from FIRST
"$cat_bin" "$tmp/b" "$mi" "$ml" 990 0 2>/dev/null || fail "count 0: exit $?"
[ "$(wc -c <"$tmp/b-labels-idx1-ubyte")" -eq 18 ] || fail "count 0: not 10 items"

# --shuffle: the same items (labels as a multiset), another order, and the
# same order again for the same seed
"$cat_bin" --shuffle 7 "$tmp/s" "$mi" "$ml" 0 200 2>/dev/null || fail "shuffle: exit $?"
"$cat_bin" --shuffle 7 "$tmp/t" "$mi" "$ml" 0 200 2>/dev/null || fail "shuffle again: exit $?"
"$cat_bin" "$tmp/u" "$mi" "$ml" 0 200 2>/dev/null || fail "plain 200: exit $?"
cmp -s "$tmp/s-images-idx3-ubyte" "$tmp/t-images-idx3-ubyte" || fail "shuffle not repeatable"
cmp -s "$tmp/s-images-idx3-ubyte" "$tmp/u-images-idx3-ubyte" && fail "shuffle kept the order"
sorted() { tail -c +9 "$1" | od -An -v -tu1 | tr -s ' ' '\n' | sort -n | tr '\n' ' '; }
[ "$(sorted "$tmp/s-labels-idx1-ubyte")" = "$(sorted "$tmp/u-labels-idx1-ubyte")" ] ||
    fail "shuffle changed the labels"

# ranges beyond the input, and bad usage
"$cat_bin" "$tmp/c" "$mi" "$ml" 995 10 2>/dev/null && fail "a range past the end passed"
"$cat_bin" "$tmp/c" "$mi" "$ml" 0 2>/dev/null
[ $? -eq 2 ] || fail "usage: not exit 2"
[ -e "$tmp/c-images-idx3-ubyte" ] && fail "a failed run wrote a file"

# neocog-unipen --look binary: every pixel 0 or 255; --look paper is refused
"$unipen_bin" --data "$root/tests/data/unipen-2w.jsonl.gz" --split all --classes all94 \
    --look binary --count 50 --out "$tmp/bin" 2>/dev/null || fail "--look binary: exit $?"
grey=$(tail -c +17 "$tmp/bin-images-idx3-ubyte" | od -An -v -tu1 | tr -s ' ' '\n' |
       awk 'NF && $1 != 0 && $1 != 255 { n++ } END { print n + 0 }')
[ "$grey" = 0 ] || fail "--look binary: $grey grey pixels"
"$unipen_bin" --data "$root/tests/data/unipen-2w.jsonl.gz" --look paper --out "$tmp/p" \
    2>"$tmp/err"
[ $? -eq 2 ] || fail "--look paper: not a usage error"
grep -q "^neocog-unipen: bad value for --look: 'paper'" "$tmp/err" ||
    fail "--look paper: said '$(cat "$tmp/err")'"
# --variant-blocks: block v is every sample's drawing v (block 0: the images of
# --variants 1, in another order), all the blocks the images of --variants K
# without it; each block holds every sample's label once; not with --count
u2=$root/tests/data/unipen-2w.jsonl.gz
for a in "blk --variants 3 --variant-blocks" "one --variants 1" "mix --variants 3"; do
    set -- $a
    n=$1; shift
    "$unipen_bin" --data "$u2" --split all --classes digits --seed 5 "$@" --out "$tmp/$n" \
        2>/dev/null || fail "--variants ($n): exit $?"
done
rows() { tail -c +17 "$1" | od -An -v -tx1 -w784 | tr -d ' '; }
rows "$tmp/blk-images-idx3-ubyte" >"$tmp/blk.rows"
nb=$(($(wc -l <"$tmp/blk.rows") / 3))
[ "$nb" -gt 0 ] && [ "$(wc -l <"$tmp/blk.rows")" -eq $((3 * nb)) ] || fail "blocks: $nb images a block"
head -n "$nb" "$tmp/blk.rows" | sort >"$tmp/b0"
sed -n "$((nb + 1)),$((2 * nb))p" "$tmp/blk.rows" | sort >"$tmp/b1"
rows "$tmp/one-images-idx3-ubyte" | sort | cmp -s - "$tmp/b0" || fail "block 0 is not --variants 1"
cmp -s "$tmp/b0" "$tmp/b1" && fail "blocks 0 and 1 hold the same drawings"
sort "$tmp/blk.rows" >"$tmp/ball"
rows "$tmp/mix-images-idx3-ubyte" | sort | cmp -s - "$tmp/ball" || fail "blocks: not the drawings of --variants 3"
cmp -s "$tmp/blk-images-idx3-ubyte" "$tmp/mix-images-idx3-ubyte" && fail "blocks: the order of --variants 3"
labels() { tail -c +9 "$1" | od -An -v -tu1 -w1 | tr -d ' '; }
labels "$tmp/one-labels-idx1-ubyte" | sort >"$tmp/l1"
for b in 0 1 2; do
    labels "$tmp/blk-labels-idx1-ubyte" | sed -n "$((b * nb + 1)),$(((b + 1) * nb))p" | sort |
        cmp -s - "$tmp/l1" || fail "block $b: not every sample's label once"
done
"$unipen_bin" --data "$u2" --variants 3 --variant-blocks --count 5 --out "$tmp/vc" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "not with --count" "$tmp/err" || fail "--variant-blocks --count: $(cat "$tmp/err")"

# its options are io/opts.h's: the common wording, --help on stdout
"$unipen_bin" --data "$root/tests/data/unipen-2w.jsonl.gz" --out "$tmp/p" --variants 0 \
    2>"$tmp/err"
[ $? -eq 2 ] && grep -q "bad value for --variants: '0'" "$tmp/err" ||
    fail "--variants 0: exit or wording: $(cat "$tmp/err")"
"$unipen_bin" --data "$root/tests/data/unipen-2w.jsonl.gz" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "one of --out PREFIX or --counts" "$tmp/err" ||
    fail "no --out: exit or wording: $(cat "$tmp/err")"
"$unipen_bin" --help >"$tmp/help" || fail "--help: exit $?"
grep -q -- "--look none|binary|stretch|r16|blur" "$tmp/help" || fail "--help: no --look"
[ -e "$tmp/p-images-idx3-ubyte" ] && fail "a usage error wrote a file"

[ $failed -eq 0 ] && echo "idx-cat and --look: all checks passed"
exit $((failed > 0))
