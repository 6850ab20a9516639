#!/bin/sh
# systemd/verify.sh — `systemd-analyze verify` on the unit files, with
# ExecStart pointing at the freshly built daemon (verify checks that the
# binary exists).  Exit 77 (meson's skip) when systemd-analyze is missing.
# usage: verify.sh NEOCOGD_BINARY UNIT_DIR
set -eu
command -v systemd-analyze >/dev/null 2>&1 || exit 77
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e "s|@sbindir@/neocogd|$bin|" -e "s|@sysconfdir@|/etc|" \
    "$src/neocogd.service" > "$tmp/neocogd.service"
cp "$src/neocogd.socket" "$src/neocogd-http.socket" "$tmp/"
cd "$tmp"
# --man=no: Documentation= need not be installed here.  Output is kept:
# any warning about these units fails the test.
out=$(systemd-analyze verify --man=no ./neocogd.socket ./neocogd-http.socket \
      ./neocogd.service 2>&1) || { echo "$out"; exit 1; }
echo "$out"
if echo "$out" | grep -E "neocogd(-http)?\.(service|socket)" >/dev/null; then
    exit 1
fi
exit 0
