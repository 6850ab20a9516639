#!/usr/bin/env python3
"""tests/deploy/check-manifests.py — the Kubernetes manifests of deploy/k8s
parse as YAML and hold what the deployment relies on, checked without a
cluster: kinds and API versions, a Deployment whose container listens on
0.0.0.0 (listen_tcp, http) and has a readiness probe on /readyz and a
liveness probe on /healthz at the HTTP port, resource requests and limits,
a termination grace above drain_grace_ms + drain_timeout_s; a Service and a
PodDisruptionBudget that select the Deployment's pods, and a Service whose
target ports name the container's.  Exit 77 (skip) without PyYAML
(Debian: python3-yaml).

usage: check-manifests.py DEPLOY_K8S_DIR"""
import os
import sys

try:
    import yaml
except ImportError:
    print("python3-yaml is not installed: skipped")
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def dig(obj, *path):
    for key in path:
        if isinstance(obj, dict):
            obj = obj.get(key)
        elif isinstance(obj, list) and isinstance(key, int) and key < len(obj):
            obj = obj[key]
        else:
            return None
    return obj


def flag(args, name):
    """The value of --name=V or --name V in a container's args, or None."""
    for i, a in enumerate(args):
        if a == "--" + name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--" + name + "="):
            return a.split("=", 1)[1]
    return None


folder = sys.argv[1]
docs = {}
for name in sorted(os.listdir(folder)):
    if not name.endswith((".yaml", ".yml")):
        continue
    with open(os.path.join(folder, name)) as f:
        try:
            for doc in yaml.safe_load_all(f):
                if doc is None:
                    continue
                check(isinstance(doc, dict) and "kind" in doc and "apiVersion" in doc
                      and dig(doc, "metadata", "name"),
                      f"{name}: a document without kind, apiVersion or metadata.name")
                docs.setdefault(doc.get("kind"), []).append((name, doc))
        except yaml.YAMLError as e:
            check(False, f"{name}: not YAML: {e}")

want = {"Deployment": "apps/v1", "Service": "v1", "PodDisruptionBudget": "policy/v1"}
for kind, version in want.items():
    if check(kind in docs, f"no {kind}"):
        for name, doc in docs[kind]:
            check(doc["apiVersion"] == version, f"{name}: {kind} is {version}, not {doc['apiVersion']}")

if "Deployment" in docs:
    name, dep = docs["Deployment"][0]
    labels = dig(dep, "spec", "template", "metadata", "labels") or {}
    sel = dig(dep, "spec", "selector", "matchLabels") or {}
    check(sel and all(labels.get(k) == v for k, v in sel.items()),
          f"{name}: the selector does not match the pod template's labels")
    c = dig(dep, "spec", "template", "spec", "containers", 0) or {}
    check(c.get("image"), f"{name}: no image")
    args = c.get("args") or []
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
    tcp, http = flag(args, "listen-tcp"), flag(args, "http")
    check(tcp and tcp.startswith("0.0.0.0:"), f"{name}: --listen-tcp is {tcp}, not 0.0.0.0:PORT")
    check(http and http.startswith("0.0.0.0:"), f"{name}: --http is {http}, not 0.0.0.0:PORT")
    if tcp and http:
        check(ports.get("proto") == int(tcp.rsplit(":", 1)[1]),
              f"{name}: containerPort proto is not --listen-tcp's port")
        check(ports.get("http") == int(http.rsplit(":", 1)[1]),
              f"{name}: containerPort http is not --http's port")
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        got = dig(c, probe, "httpGet", "path")
        port = dig(c, probe, "httpGet", "port")
        check(got == path, f"{name}: {probe} asks {got}, not {path}")
        check(port in ("http", ports.get("http")), f"{name}: {probe} is not on the HTTP port")
    for what in ("requests", "limits"):
        r = dig(c, "resources", what) or {}
        check("cpu" in r and "memory" in r, f"{name}: resources.{what} lacks cpu or memory")
    grace_ms = int(flag(args, "drain-grace-ms") or 0)
    drain_s = int(flag(args, "drain-timeout-s") or 30)
    term = dig(dep, "spec", "template", "spec", "terminationGracePeriodSeconds") or 30
    check(term * 1000 > grace_ms + drain_s * 1000,
          f"{name}: terminationGracePeriodSeconds {term} does not cover "
          f"drain_grace_ms {grace_ms} + drain_timeout_s {drain_s}")
    check(dig(dep, "spec", "template", "spec", "securityContext", "runAsNonRoot") is True,
          f"{name}: not runAsNonRoot")
    for kind in ("Service", "PodDisruptionBudget"):
        for n, doc in docs.get(kind, []):
            s = dig(doc, "spec", "selector")
            s = s.get("matchLabels", s) if isinstance(s, dict) else None
            check(s and all(labels.get(k) == v for k, v in s.items()),
                  f"{n}: the {kind}'s selector does not pick the Deployment's pods")
    for n, svc in docs.get("Service", []):
        for p in dig(svc, "spec", "ports") or []:
            check(p.get("targetPort") in ports or p.get("targetPort") in ports.values(),
                  f"{n}: targetPort {p.get('targetPort')} is no container port")

for n, pdb in docs.get("PodDisruptionBudget", []):
    spec = pdb.get("spec") or {}
    check(("minAvailable" in spec) != ("maxUnavailable" in spec),
          f"{n}: give exactly one of minAvailable and maxUnavailable")

for f in failures:
    print("FAIL:", f)
print(f"{sum(len(v) for v in docs.values())} documents, {len(failures)} problems")
sys.exit(1 if failures else 0)
