#!/usr/bin/env bash
# Change-history benchmark (release build): one object's history, a day of
# drift, the diff of a day, the `changes` of one cluster, and coverage,
# on the standard comparison ledger of `bench/run` (seeded, 5% late).
#
# Generates the dataset straight into a fresh ledger (the JSONL is never
# written), unless bench/data/changes-EVENTS-SEED already holds one, then
# times the SQL cases 21 times each in one process (annal-bench sql) and
# the commands once each as a user runs them. The object and the day come
# from the dataset's parameters. Results: bench/results/changes-EVENTS-SEED.json.
#
# Usage: bash bench/changes.sh [EVENTS] [OBJECTS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-10000000}
objects=${2:-1000000}
seed=${3:-42}
data=bench/data
mkdir -p "$data" bench/results
cargo build --release --locked -p annal-cli -p annal-bench
ledger="$data/changes-$events-$seed"
params="$data/changes-$events-$seed.params.json"
if [ ! -d "$ledger" ]; then
  target/release/annal --data "$ledger" init > /dev/null
  target/release/annal-bench dataset --events "$events" --objects "$objects" --seed "$seed" \
    --params "$params" --out - |
    /usr/bin/time -f "ingest: peak RSS %M KB, wall %e s" \
      target/release/annal --data "$ledger" ingest --format envelope -
fi
cases="$data/changes-cases.json"
python3 - "$params" "$cases" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
cluster, group, kind, ns, name = p["object"]
day = p["day"]
next_day = day[:8] + "%02d" % (int(day[8:10]) + 1)
cases = [
    ("object-history", f"SELECT * FROM object_history('{cluster}', '{kind}', '{ns}', '{name}')"),
    ("drift-day", f"SELECT * FROM drift('{day}T00:00:00Z', '{next_day}T00:00:00Z')"),
    ("diff-day", f"SELECT count(*) FROM inventory_diff('{day}T00:00:00Z', '{next_day}T00:00:00Z')"),
    ("changes-one-cluster", f"SELECT count(*) FROM changes WHERE cluster = '{p['cluster']}'"),
]
json.dump([{"name": n, "sql": s} for n, s in cases], open(sys.argv[2], "w"), indent=1)
print(f"object {cluster} {kind} {ns}/{name}, day {day}")
PY
results="bench/results/changes-$events-$seed.json"
target/release/annal-bench sql --data "$ledger" --cases "$cases" --runs 21 --out "$results"
python3 - "$results" <<'PY'
import json, statistics, sys
for c in json.load(open(sys.argv[1]))["cases"]:
    s = sorted(c["seconds"])
    print(f"{c['name']:22} median {statistics.median(s):.4f} s  min {s[0]:.4f} s  rows {c['rows'][0]}")
PY
day=$(python3 -c "import json; print(json.load(open('$params'))['day'])")
obj=($(python3 -c "import json; print(' '.join(json.load(open('$params'))['object']))"))
annal="target/release/annal --data $ledger"
/usr/bin/time -f "annal history: %e s, %M KB" \
  $annal history --cluster "${obj[0]}" --group "${obj[1]}" --kind "${obj[2]}" --namespace "${obj[3]}" --name "${obj[4]}" > /dev/null
/usr/bin/time -f "annal drift (a day): %e s, %M KB" \
  $annal drift --since "${day}T00:00:00Z" --until "${day}T23:59:59Z" -o json > /dev/null || true
/usr/bin/time -f "annal coverage (the ledger): %e s, %M KB" \
  $annal coverage --to 2026-11-01T00:00:00Z -o json > /dev/null
/usr/bin/time -f "annal inventory (stale check included): %e s, %M KB" \
  $annal inventory --at "${day}T12:00:00Z" -o json > /dev/null
