#!/bin/sh
# tests/camera/chars.sh — `neocog camera --charset all` end to end: words
# rendered from two UNIPEN writers' strokes (tests/data/unipen-2w.jsonl.gz)
# by neocog-streamgen, read through the real neocogd with the digit column
# and the 94-class model.  Asserts: every frame answered; at least 8 of the
# 12 rendered strings come back as a line with as many words as the truth
# (the word gaps come back as spaces; these two writers are harder than the
# validation writers of docs/characters.md); the digits charset, on the same
# frames, puts no space inside a line.  Letters themselves are not judged:
# the shipped character model is a first one (models/cnn-printable94.md).
#
# usage: chars.sh NEOCOGD NEOCOG STREAMGEN SOURCE_ROOT; exit 77 (skip)
# without the daemon or the generator.
set -u
neocogd=$1 neocog=$2 streamgen=$3 root=$4
[ -x "$neocogd" ] && [ -x "$streamgen" ] || { echo "no daemon or streamgen: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/neocog-chars-XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$tmp/models"
ln -s "$root/models/cnn-column.ncm" "$root/models/cnn-printable94.ncm" "$tmp/models/"
"$streamgen" --unipen "$root/tests/data/unipen-2w.jsonl.gz" --writers all --text words \
    --frames 6 --seed 3 --out "$tmp/s.mjpeg" --truth "$tmp/truth.tsv" >/dev/null ||
    fail "neocog-streamgen"
sock=$tmp/n.sock
"$neocogd" --models "$tmp/models" --listen-unix "$sock" --listen-tcp none --http none \
    --gpus 0 --workers 2 >"$tmp/d.log" 2>&1 &
pid=$!
n="$neocog --server unix:$sock"
i=0
until $n status >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 300 ] || { cat "$tmp/d.log"; fail "neocogd did not start"; }
    sleep 0.1
done

# frame -> its strings' word counts, from the truth (frame, string, text, ...)
awk -F'\t' '!/^#/ { w[$1] = w[$1] " " split($3, x, " ") } END { for (f in w) print f w[f] }' \
    "$tmp/truth.tsv" | sort -n >"$tmp/want"
# frame -> the word count of each line of the answer
for cs in all digits; do
    $n camera --charset $cs --format jsonl "$tmp/s.mjpeg" 2>/dev/null >"$tmp/$cs.jsonl" ||
        fail "neocog camera --charset $cs"
    sed -n 's/^{"frame":\([0-9]*\),"text":"\([^"]*\)".*/\1\t\2/p' "$tmp/$cs.jsonl" |
        awk -F'\t' '{ n = split($2, l, /\\n/); s = $1
                      for (k = 1; k <= n; k++) s = s " " split(l[k], x, " "); print s }' \
        >"$tmp/$cs.got"
done
[ "$(wc -l <"$tmp/all.got")" -eq 6 ] || fail "$(wc -l <"$tmp/all.got") of 6 frames answered"
# lines whose word count is the truth's (frames with a line missing or extra
# count all their lines as wrong)
same=$(paste -d'|' "$tmp/want" "$tmp/all.got" |
    awk -F'|' '{ nw = split($1, w, " "); ng = split($2, g, " "); lines += nw - 1
                 if (nw == ng) for (k = 2; k <= nw; k++) ok += w[k] == g[k] }
               END { print ok + 0 "/" lines }')
echo "charset all: $same lines with the truth's words per line"
sed 's/,"count".*//' "$tmp/all.jsonl"
[ "${same%/*}" -ge 8 ] || fail "word gaps: only $same lines right (at least 8 of 12 wanted)"
# digits: no line holds more than one word
awk '{ for (k = 2; k <= NF; k++) if ($k > 1) bad = 1 } END { exit bad }' "$tmp/digits.got" ||
    fail "the digits charset put a space inside a line"
echo "ok"
