#!/bin/sh
# tests/deploy/check.sh — deploy/ checked without a cluster or a container
# engine: the Kubernetes manifests parse and hold what the deployment needs
# (check-manifests.py), HAProxy accepts the example config (haproxy -c, its
# stats socket's folder replaced by a temporary one), and the Containerfile
# names only files that exist.  Exit 77 (skip) when neither PyYAML nor
# haproxy is installed; with one of them, that part runs.
#
# usage: check.sh SOURCE_ROOT
set -u
root=$1
fail=0
ran=0
python3 "$root/tests/deploy/check-manifests.py" "$root/deploy/k8s"
case $? in
0) ran=1 ;;
77) ;;
*) fail=1 ;;
esac
if command -v haproxy >/dev/null 2>&1; then
    tmp=$(mktemp -d /tmp/neocog-check-XXXXXX)
    sed "s#/run/haproxy/#$tmp/#" "$root/deploy/haproxy/haproxy.cfg" >"$tmp/haproxy.cfg"
    if haproxy -c -q -f "$tmp/haproxy.cfg"; then
        ran=1
    else
        echo "FAIL: haproxy -c refuses deploy/haproxy/haproxy.cfg"
        fail=1
    fi
    rm -rf "$tmp"
fi
for f in $(sed -n 's/^COPY \([^ -][^ ]*\) .*/\1/p' "$root/deploy/Containerfile"); do
    [ "$f" = . ] || [ -e "$root/$f" ] || { echo "FAIL: Containerfile copies $f, which is missing"; fail=1; }
done
[ "$fail" -eq 0 ] || exit 1
[ "$ran" -eq 1 ] || { echo "neither python3-yaml nor haproxy is installed: skipped"; exit 77; }
echo "ok"
