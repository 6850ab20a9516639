#!/bin/sh
# tests/tools/train_neocog_chars.sh — the neocognitron learns characters, not
# only digits: `neocog-train neocognitron --train --val` on the 94 classes of
# tests/data/unipen-2w.jsonl.gz (471 characters of two writers, about five a
# class, rendered plain by neocog-unipen) with small plane counts and the
# interpolating-vector classifier.  The file it writes loads in `eval --idx`
# with the set's 94 labels in their order (the same classes with two labels
# swapped are refused), answers its training images with at most 10 % error
# and a fresh deformed rendering of them with at most 50 % (chance: 98.9 %);
# `eval --sheet` draws the errors to a PNG; a --val whose classes differ
# from --train's is refused, and so is
# --resume with a checkpoint of other sets.
#   train_neocog_chars.sh NEOCOG_TRAIN NEOCOG_UNIPEN   (NC_SOURCE_ROOT names the source tree)
set -u
train_bin=$1
unipen_bin=$2
root=${NC_SOURCE_ROOT:-.}
strokes=$root/tests/data/unipen-2w.jsonl.gz
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nc-neochars.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# "error       12.34% (56 / 471)" -> 56
errors_of() { sed -n 's/^error  *[0-9.]*% (\([0-9]*\) \/ \([0-9]*\)).*/\1/p' "$1"; }

"$unipen_bin" --data "$strokes" --split all --classes all94 --plain --out "$tmp/c" \
    2>/dev/null || fail "render plain: exit $?"
"$unipen_bin" --data "$strokes" --split all --classes all94 --seed 2 --out "$tmp/d" \
    2>/dev/null || fail "render deformed: exit $?"
[ "$(wc -l <"$tmp/c-classes.txt")" -eq 94 ] || fail "not 94 classes"

"$train_bin" neocognitron --train "$tmp/c" --val "$tmp/c" --train-digits 200,200,471 \
    --k-max 30,60,1000 --interp --threads 2 --checkpoint "$tmp/ck" --out "$tmp/m.ncm" \
    >"$tmp/train.txt" 2>&1 || { cat "$tmp/train.txt"; fail "train: exit $?"; }
grep -q "(94 classes)" "$tmp/train.txt" || fail "the record's data does not say 94 classes"

"$train_bin" eval --model "$tmp/m.ncm" --idx "$tmp/c" >"$tmp/eval.txt" 2>&1 ||
    { cat "$tmp/eval.txt"; fail "eval on the training images: exit $?"; }
grep -q "answer by interpolating vectors" "$tmp/eval.txt" || fail "not the IV classifier"
grep -q "(471 images, 94 classes)" "$tmp/eval.txt" || fail "eval: not 471 images of 94 classes"
e=$(errors_of "$tmp/eval.txt")
echo "training images: ${e:-?} of 471 wrong"
[ -n "$e" ] && [ "$e" -le 47 ] || fail "training images: ${e:-no figure} errors, more than 10 %"

"$train_bin" eval --model "$tmp/m.ncm" --idx "$tmp/d" >"$tmp/evald.txt" 2>&1 ||
    fail "eval on the deformed rendering: exit $?"
e=$(errors_of "$tmp/evald.txt")
echo "deformed rendering: ${e:-?} of 471 wrong"
[ -n "$e" ] && [ "$e" -le 235 ] || fail "deformed rendering: ${e:-no figure} errors, more than 50 %"

# --sheet of the errors: a PNG, each tile listed with its labels (the
# captions' glyphs are checked in test_train_chars)
"$train_bin" eval --model "$tmp/m.ncm" --idx "$tmp/d" --sheet "$tmp/sheet.png" --sheet-max 40 \
    >"$tmp/sheet.txt" 2>&1 || fail "eval --sheet: exit $?"
[ "$(od -An -c -N4 "$tmp/sheet.png" 2>/dev/null | tr -d ' ')" = "211PNG" ] ||
    fail "--sheet wrote no PNG"
grep -q "^  #[0-9]* true [A-Za-z] answer" "$tmp/sheet.txt" || fail "the sheet lists no letter"

# the labels are the file's: the same images under a classes file with "A"
# and "B" swapped are refused
sed 's/^A$/@@/; s/^B$/A/; s/^@@$/B/' "$tmp/c-classes.txt" >"$tmp/s-classes.txt"
cmp -s "$tmp/c-classes.txt" "$tmp/s-classes.txt" && fail "the swap changed nothing"
cp "$tmp/c-images-idx3-ubyte" "$tmp/s-images-idx3-ubyte"
cp "$tmp/c-labels-idx1-ubyte" "$tmp/s-labels-idx1-ubyte"
"$train_bin" eval --model "$tmp/m.ncm" --idx "$tmp/s" >/dev/null 2>&1 &&
    fail "eval took a set whose labels are not the model's"

# --val of other classes; --resume from a checkpoint of other sets
"$train_bin" neocognitron --train "$tmp/c" --val "$tmp/s" --train-digits 20,20,40 \
    --out "$tmp/x.ncm" >/dev/null 2>&1 && fail "--val of other classes taken"
"$train_bin" neocognitron --train "$tmp/d" --val "$tmp/c" --train-digits 200,200,471 \
    --k-max 30,60,1000 --interp --threads 2 --checkpoint "$tmp/ck" --resume \
    --out "$tmp/y.ncm" >/dev/null 2>&1 && fail "--resume took a checkpoint of other sets"
[ -e "$tmp/x.ncm" ] || [ -e "$tmp/y.ncm" ] && fail "a refused run wrote a model"

[ $failed -eq 0 ] && echo "neocognitron on 94 characters: all checks passed"
