#!/bin/sh
# tests/tools/train_opts.sh — every neocog-train subcommand parses its
# options with io/opts: --help prints its table and exits 0; a bad value
# fails with exit 2 and a sentence naming the option; an unknown option and
# a missing value likewise.
#   train_opts.sh NEOCOG_TRAIN
set -u
bin=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nc-trainopts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# expect STATUS TEXT ARGS...: neocog-train ARGS exits STATUS and says TEXT
# (stdout and stderr together).
expect() {
    want=$1
    text=$2
    shift 2
    "$bin" "$@" >"$tmp/out" 2>&1
    got=$?
    [ "$got" -eq "$want" ] || fail "$*: exit $got, not $want"
    grep -qF -- "$text" "$tmp/out" || fail "$*: no '$text' in: $(cat "$tmp/out")"
}

# SUBCOMMAND OPTION BAD-VALUE: one option of each table, and a value it refuses.
while read -r sub opt bad; do
    expect 0 "--$opt" "$sub" --help
    expect 0 "-h, --help" "$sub" -h
    expect 2 "neocog-train $sub: bad value for --$opt: '$bad'" "$sub" "--$opt" "$bad"
    expect 2 "neocog-train $sub: bad value for --$opt: '$bad'" "$sub" "--$opt=$bad"
    expect 2 "neocog-train $sub: option --$opt needs a value" "$sub" "--$opt"
    expect 2 "neocog-train $sub: unknown option --bogus (try --help)" "$sub" --bogus
done <<'TABLE'
cnn epochs ten
cnn gpu-kernels fast
neocognitron q abc
neocognitron train-digits 1,2
eval threads 0
eval set test
committee threads 65
committee heights 0
calibrate reject-rate 0.9
calibrate gpu -1
cascade count x
cascade first-member 99
combine classes 1
convert test-error 101
TABLE

# the checks after the options say what is missing, as usage errors
expect 2 "neocog-train cnn: --out FILE is required (try --help)" cnn --data "$tmp"
expect 2 "neocog-train cascade: need --model IN and --out OUT" cascade --model x
expect 2 "neocog-train convert: need IN and OUT" convert x
expect 2 "unknown command 'bogus'" bogus

[ "$failed" -eq 0 ] || exit 1
echo "train_opts: ok"
