#!/usr/bin/env bash
# Report benchmark (release build) on an existing ledger: wall time and
# peak RSS of the cost report by cluster and by app, and of the capacity
# report, over the dataset's 30 days in daily steps, each as JSON and as
# the HTML page.
#
# Default ledger: the 10M-event one `bash bench/inventory.sh` leaves in
# bench/data (2026-10-01 to 2026-10-31). Results go to
# bench/results/report-<ledger name>.json.
#
# Usage: bash bench/report.sh [LEDGER_DIR] [FROM] [TO] [STEP]
set -euo pipefail
cd "$(dirname "$0")/.."
ledger=${1:-bench/data/inventory-10000000-42}
from=${2:-2026-10-01T00:00:00Z}
to=${3:-2026-10-31T00:00:00Z}
step=${4:-1d}
[ -d "$ledger" ] || { echo "no ledger at $ledger (bash bench/inventory.sh makes one)" >&2; exit 2; }
cargo build --release --locked -p annal-cli -p annal-bench
annal=target/release/annal
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p bench/results
results="bench/results/report-$(basename "$ledger").json"
echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; ledger $ledger, $from to $to, step $step"

run() { # name, then the report arguments
  local name=$1; shift
  # Exit 3 (a capacity budget broken) is an answer, not a failure.
  /usr/bin/time -f "%M %e" -o "$work/$name.time" "$annal" --data "$ledger" report "$@" \
    --from "$from" --to "$to" --step "$step" > "$work/$name.out" || [ $? -eq 3 ]
  read -r rss wall < "$work/$name.time"
  echo "$name $wall $rss $(wc -c < "$work/$name.out")" | tee -a "$work/runs"
}
run cost-cluster-json cost --by cluster -o json
run cost-app-json cost --by app -o json
run cost-tenant-html cost --by tenant -o html
run capacity-json capacity -o json
run capacity-html capacity -o html

python3 - "$work/runs" "$work/cost-cluster-json.out" "$ledger" "$from" "$to" "$step" "$results" <<'EOF'
import json, sys
runs, cost, ledger, start, end, step, out = sys.argv[1:]
doc = {"ledger": ledger, "from": start, "to": end, "step": step, "runs": []}
for line in open(runs):
    name, wall, rss, size = line.split()
    doc["runs"].append({"report": name, "wall_s": float(wall), "peak_rss_mb": round(int(rss) / 1024), "output_bytes": int(size)})
c = json.load(open(cost))
doc["cost_by_cluster"] = {"groups": len(c["totals"]), "rows": len(c["rows"]),
    "object_hours": round(sum(t["object_hours"] for t in c["totals"]), 1),
    "ledger_bytes": sum(t["ledger_bytes"] for t in c["totals"])}
json.dump(doc, open(out, "w"), indent=2)
print(json.dumps(doc, indent=2))
EOF
echo "results: $results"
