#!/usr/bin/env bash
# Part of `make test`: the operators' kit as a whole.
# - The alert rules pass `promtool check rules` and their unit tests (`promtool test rules`), and
#   the PrometheusRule in deploy/kubernetes/monitoring.yaml carries exactly the same groups.
# - Every alert names a runbook heading of docs/operations.md, and every runbook there has an alert.
# - Every Kubernetes manifest passes kubernetes-validate (PyPI, pinned, --strict); only the
#   Prometheus Operator's kinds and CloudNativePG's Cluster, whose schemas it lacks, may go unchecked.
# - A live broker's /metrics passes `promtool check metrics`, and every metric the rules and the
#   Grafana dashboard name is one it exposes.
# Needs DATABASE_URL (migrated) and TOKENBROKER_BIN_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
rules=deploy/prometheus/tokenbroker.rules.yaml
promtool check rules "$rules"
promtool test rules deploy/prometheus/tokenbroker.rules.test.yaml

k8s=.run/venv-k8s
if ! "$k8s/bin/pip" show kubernetes-validate 2>/dev/null | grep -q "^Version: 1.37.0$"; then
  python3 -m venv "$k8s"
  "$k8s/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==1.37.0"
fi
out=$("$k8s/bin/kubernetes-validate" --strict deploy/kubernetes/*.yaml 2>&1) || { echo "$out" >&2; exit 1; }
echo "$out" >&2
if echo "$out" | grep -v "^INFO" | grep -v -E "Couldn't find schema for kind ((ServiceMonitor|PrometheusRule) with api version monitoring.coreos.com/v1|Cluster with api version postgresql.cnpg.io/v1)" | grep -q .; then
  echo "ops-check: kubernetes-validate did not pass every manifest (above)" >&2; exit 1
fi

source scripts/live.sh ops
# Some traffic, so that per-route, per-client and JWKS series exist.
sid=$(live_session ops-alice)
curl -sf -XPOST "$LIVE_BROKER/v1/tenants/$LIVE_TENANT/sessions/$sid/token" -H "Authorization: Bearer $LIVE_KEY" -d '{"force_refresh":true}' >/dev/null
curl -s -o /dev/null -XPOST "$LIVE_BROKER/v1/tenants/$LIVE_TENANT/sessions/ses_nobody/token" -H "Authorization: Bearer $LIVE_KEY"
sleep 1.5   # the backlog is counted a second after start
metrics=$(mktemp); trap 'rm -f "$metrics"; live_stop' EXIT
curl -sf "$LIVE_BROKER/metrics" > "$metrics"
promtool check metrics < "$metrics"

python3 - "$rules" deploy/kubernetes/monitoring.yaml docs/operations.md deploy/grafana/tokenbroker.json "$metrics" <<'PY'
import json, re, sys, yaml
rules_path, monitoring, guide, dashboard, metrics = sys.argv[1:]
rules = yaml.safe_load(open(rules_path))
problems = []
crs = {d["kind"]: d for d in yaml.safe_load_all(open(monitoring)) if d}
if crs.get("PrometheusRule", {}).get("spec") != rules:
    problems.append(f"the PrometheusRule in {monitoring} is not {rules_path}")

# Runbooks: the headings under "## Alert runbooks", GitHub's anchors.
text = open(guide).read()
section = text.split("## Alert runbooks", 1)[1].split("\n## ", 1)[0]
def anchor(h): return re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
runbooks = {anchor(h) for h in re.findall(r"^### (.+)$", section, re.M)}
alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
named = set()
for a in alerts:
    ref = a.get("annotations", {}).get("runbook", "")
    page, _, frag = ref.partition("#")
    if page != guide or frag not in runbooks:
        problems.append(f"{a['alert']}: runbook {ref!r} is not a heading under '## Alert runbooks' in {guide}")
    named.add(frag)
for r in sorted(runbooks - named):
    problems.append(f"{guide}: runbook '{r}' has no alert")

# Every metric named by a rule or a panel is exposed (histograms by their family name).
exposed = set(re.findall(r"^# TYPE (\S+) ", open(metrics).read(), re.M)) | {"up"}
def family(n): return re.sub(r"_(bucket|count|sum)$", "", n) if n not in exposed else n
exprs = [r["expr"] for r in alerts] + [t["expr"] for p in json.load(open(dashboard))["panels"] for t in p["targets"]]
for e in exprs:
    for n in re.findall(r"\b((?:tokenbroker|process)_[a-z_]+)\b", e):
        if family(n) not in exposed:
            problems.append(f"{n} (in {e!r}) is not exposed at /metrics")
if problems:
    sys.exit("ops-check:\n  " + "\n  ".join(problems))
print(f"ops-check: {len(alerts)} alerts with runbooks; rules, PrometheusRule and dashboard name only exposed metrics", file=sys.stderr)
PY
