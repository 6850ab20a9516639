#!/bin/sh
# tests/tools/classify.sh — neocog-classify as a user runs it: any image
# format, the daemon's preparation and calibrated answer, rejects with their
# reason, the ensemble of two files, clear errors.
#   classify.sh NEOCOG_CLASSIFY   (run from anywhere; NC_SOURCE_ROOT names
#                                  the source tree, as meson's test_env does)
set -u
bin=$1
root=${NC_SOURCE_ROOT:-.}
cnn=$root/models/cnn-column.ncm
neo=$root/models/neocognitron.ncm
photos=$root/tests/data/photos
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nc-classify.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# An MNIST digit as PGM: its label and a calibrated confidence in (0.9, 1].
out=$("$bin" --top 3 "$cnn" "$root/tests/data/sample-7.pgm") || fail "sample-7: exit $?"
echo "$out" | awk -F'\t' '$2 == "7" && $3 > 0.9 && $3 <= 1 && NF == 6 {ok = 1} END {exit !ok}' ||
    fail "sample-7 --top 3: '$out'"

# Phone photos (JPEG): the first ten single digits read right, as neocogd does.
right=0
for f in $(awk -F'\t' '!/^#/ && length($2) == 1 {print $1 "\t" $2}' "$photos/truth.tsv" |
           head -10 | tr '\t' ':'); do
    file=${f%%:*}; want=${f##*:}
    got=$("$bin" "$cnn" "$photos/$file" | cut -f2)
    [ "$got" = "$want" ] && right=$((right + 1))
done
[ "$right" -ge 9 ] || fail "photos: $right of 10 read right"

# A threshold above every confidence rejects, and says why.
out=$("$bin" --min-conf 1 "$cnn" "$root/tests/data/sample-2.pgm")
echo "$out" | grep -q "	?	.*rejected: below threshold" || fail "--min-conf 1: '$out'"

# The ensemble of a CNN and a neocognitron file.
out=$("$bin" "$cnn,$neo" "$root/tests/data/sample-7.pgm") || fail "ensemble: exit $?"
[ "$(echo "$out" | cut -f2)" = "7" ] || fail "ensemble: '$out'"

# Errors: a file that is not an image, a missing one, a bad option.
printf 'not an image' > "$tmp/bad.jpg"
"$bin" "$cnn" "$tmp/bad.jpg" 2> "$tmp/err" >/dev/null
rc=$?
[ $rc -eq 1 ] && grep -q "bad.jpg" "$tmp/err" || fail "not an image: exit $rc, '$(cat "$tmp/err")'"
"$bin" "$cnn" "$tmp/missing.png" 2> "$tmp/err" >/dev/null
rc=$?
[ $rc -eq 1 ] && grep -q "missing.png: No such file" "$tmp/err" || fail "missing: exit $rc"
"$bin" --bogus 1 "$cnn" x 2> "$tmp/err" >/dev/null
rc=$?
[ $rc -eq 2 ] && grep -q "unknown option --bogus" "$tmp/err" || fail "--bogus: exit $rc"

echo "classify: $failed failed"
[ $failed -eq 0 ]
