#!/bin/sh
# tests/tools/misread_montage.sh — scripts/misread-montage on a made-up set:
# an image counts as misread when any scores file answers it wrongly, the
# indices are printed in the set's order, the PNG is as wide as 12 cells and
# as tall as the rows it needs; a scores file of the wrong length and a
# missing set are refused.
#   misread_montage.sh PYTHON3 SCRIPT   (PYTHON3 empty: skipped, exit 77)
set -u
py=${1:-}
script=${2:-}
if [ -z "$py" ] || ! "$py" -c 'import sys' 2>/dev/null; then
    echo "misread-montage: no python3, skipped"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nc-montage.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# 5 images of 4x4, image i all of grey 40*i + pixel index, labels 0..4;
# scores a: the label's class highest except images 1 (answers 2) and 3
# (answers 0); scores b: right except image 4 (answers 1).
"$py" - "$tmp" <<'EOF' || { echo "FAIL: making the set"; exit 1; }
import struct, sys
d = sys.argv[1]
with open(d + '/s-images-idx3-ubyte', 'wb') as f:
    f.write(struct.pack('>IIII', 0x803, 5, 4, 4))
    f.write(bytes(40 * i + p for i in range(5) for p in range(16)))
with open(d + '/s-labels-idx1-ubyte', 'wb') as f:
    f.write(struct.pack('>II', 0x801, 5) + bytes(range(5)))
def scores(name, answers):
    rows = []
    for a in answers:
        rows += [0.9 if c == a else 0.1 * c for c in range(5)]
    with open(d + '/' + name, 'wb') as f:
        f.write(struct.pack('<%df' % len(rows), *rows))
scores('a.f32', [0, 2, 2, 0, 4])
scores('b.f32', [0, 1, 2, 3, 1])
EOF

"$py" "$script" "$tmp/s" "$tmp/m.png" "$tmp/a.f32" "$tmp/b.f32" >"$tmp/out" 2>"$tmp/err" ||
    fail "run: exit $?: $(cat "$tmp/err")"
grep -q "^3 of 5 misread" "$tmp/out" || fail "count: said '$(cat "$tmp/out")'"
[ "$(sed -n 's/.*: *//p' "$tmp/out")" = "1 3 4" ] || fail "indices: said '$(cat "$tmp/out")'"
# each file alone: a misreads 1 and 3, b only 4
"$py" "$script" "$tmp/s" "$tmp/m1.png" "$tmp/a.f32" >"$tmp/out1" 2>/dev/null
[ "$(sed -n 's/.*: *//p' "$tmp/out1")" = "1 3" ] || fail "a alone: said '$(cat "$tmp/out1")'"

if [ -f "$tmp/m.png" ]; then
    [ "$(od -An -tx1 -N8 "$tmp/m.png" | tr -s ' ')" = " 89 50 4e 47 0d 0a 1a 0a" ] ||
        fail "no PNG signature"
    # IHDR: width 12 cells of 4*3+4 px, height 1 row of 4*3+14 px
    [ "$(od -An -tx1 -j12 -N4 "$tmp/m.png" | tr -d ' \n')" = 49484452 ] || fail "no IHDR"
    size=$(od -An -tu1 -j16 -N8 "$tmp/m.png" |
           awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4, \
                        $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 }')
    [ "$size" = "$((12 * (4 * 3 + 4))) $((4 * 3 + 14))" ] || fail "IHDR size: $size"
    # the pixels: the first cell is image 1 inverted and 3x, the second image 3
    "$py" - "$tmp/m.png" <<'EOF' || fail "PNG pixels"
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
w, h = struct.unpack('>II', data[16:24])
n = struct.unpack('>I', data[33:37])[0]
assert data[37:41] == b'IDAT', 'no IDAT'
raw = zlib.decompress(data[41:41 + n])
assert len(raw) == h * (w + 1), 'IDAT holds %d bytes' % len(raw)
px = lambda x, y: raw[y * (w + 1) + 1 + x]
assert px(0, 0) == 255 - 40, px(0, 0)
assert px(11, 11) == 255 - (40 + 15), px(11, 11)
assert px(16, 0) == 255 - 120, px(16, 0)
assert px(w - 1, 0) == 255, 'an empty cell is not white'
EOF
else
    fail "no PNG written"
fi

# a scores file of the wrong length: refused, naming it
head -c 96 "$tmp/a.f32" >"$tmp/short.f32"
"$py" "$script" "$tmp/s" "$tmp/x.png" "$tmp/short.f32" >/dev/null 2>"$tmp/err" &&
    fail "a short scores file passed"
grep -q "short.f32" "$tmp/err" || fail "short scores file: said '$(cat "$tmp/err")'"
[ -e "$tmp/x.png" ] && fail "a refused run wrote a PNG"
# a missing set
"$py" "$script" "$tmp/nope" "$tmp/y.png" "$tmp/a.f32" >/dev/null 2>&1 &&
    fail "a missing set passed"
[ -e "$tmp/y.png" ] && fail "a missing set wrote a PNG"

[ $failed -eq 0 ] && echo "misread-montage: all checks passed"
exit $((failed > 0))
