#!/usr/bin/env bash
# Web UI benchmark (release build): each page's server time (time to the
# first byte over loopback, RUNS requests (default 21), p50 and p95), then first
# contentful paint and page weight in headless Chromium over the DevTools
# protocol (tools/ui-check, cache off), on the standard comparison ledger
# (seeded, 100 clusters, 5% late). The ledger is generated straight into
# bench/data/ui-EVENTS-SEED unless it is there. Results:
# bench/results/ui-EVENTS-SEED.json.
#
# Usage: bash bench/ui.sh [EVENTS] [OBJECTS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-10000000}
objects=${2:-1000000}
seed=${3:-42}
data=bench/data
mkdir -p "$data" bench/results
cargo build --release --locked -p annal-cli -p annal-bench
npm ci --prefix tools/ui-check --no-audit --no-fund --loglevel=error
ledger="$data/ui-$events-$seed"
params="$data/ui-$events-$seed.params.json"
if [ ! -d "$ledger" ]; then
  target/release/annal --data "$ledger" init > /dev/null
  target/release/annal-bench dataset --events "$events" --objects "$objects" --seed "$seed" \
    --params "$params" --out - |
    /usr/bin/time -f "ingest: peak RSS %M KB, wall %e s" \
      target/release/annal --data "$ledger" ingest --format envelope -
fi
log="$data/ui-serve.log"
target/release/annal --data "$ledger" serve --listen 127.0.0.1:0 2> "$log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 600); do grep -q "http://" "$log" && break; sleep 0.5; done
base=$(grep -o "http://[0-9.:]*" "$log" | head -1)
[ -n "$base" ] || { cat "$log" >&2; exit 1; }
python3 - "$params" "$base" "bench/results/ui-$events-$seed.json" <<'PY'
import json, os, statistics, subprocess, sys, time, urllib.parse, urllib.request
params, base, out = sys.argv[1], sys.argv[2], sys.argv[3]
p = json.load(open(params))
cluster, group, kind, ns, name = p["object"]
day = p["day"]
at = f"{day}T12:00:00Z"
q = urllib.parse.urlencode
pages = [
    ("fleet", f"/ui/fleet?{q({'at': at})}"),
    ("timeline", "/ui/timeline"),
    ("timeline-cluster", f"/ui/timeline?{q({'cluster': p['cluster']})}"),
    ("inventory-cluster", f"/ui/inventory?{q({'at': at, 'cluster': p['cluster']})}"),
    ("inventory-fleet", f"/ui/inventory?{q({'at': at})}"),
    ("object", f"/ui/object?{q({'cluster': cluster, 'group': group, 'kind': kind, 'namespace': ns, 'name': name})}"),
    ("diff-cluster", f"/ui/diff?{q({'from': day + 'T00:00:00Z', 'to': at, 'cluster': p['cluster']})}"),
    ("integrity", "/ui/integrity?index=0"),
]
results = []
for label, path in pages:
    seconds = []
    for _ in range(int(os.environ.get("RUNS", "21"))):
        t = time.perf_counter()
        with urllib.request.urlopen(base + path, timeout=600) as r:
            r.read(1)
            seconds.append(time.perf_counter() - t)
            r.read()
    seconds.sort()
    results.append({"page": label, "path": path, "p50_ms": 1000 * statistics.median(seconds),
                    "p95_ms": 1000 * seconds[int(0.95 * (len(seconds) - 1))]})
plan = {"base": base, "pages": [{"name": l, "path": p} for l, p in pages]}
run = subprocess.run(["node", "tools/ui-check/check.mjs"], input=json.dumps(plan), capture_output=True, text=True, check=True)
browser = {d["name"]: d for d in map(json.loads, run.stdout.splitlines())}
print(f"{'page':18} {'p50 ms':>8} {'p95 ms':>8} {'FCP ms':>8} {'KB':>6}  problems")
for r in results:
    b = browser[r["page"]]
    r.update(fcp_ms=b["fcp_ms"], bytes=b["bytes"], problems=b["problems"])
    print(f"{r['page']:18} {r['p50_ms']:8.1f} {r['p95_ms']:8.1f} {b['fcp_ms'] or 0:8.0f} {b['bytes'] / 1024:6.0f}  {len(b['problems'])}")
json.dump({"events": p.get("events"), "pages": results}, open(out, "w"), indent=1)
PY
