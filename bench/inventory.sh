#!/usr/bin/env bash
# As-of inventory benchmark (release build): annal's inventory_at(T) against
# DuckDB over annal's Parquet export, in the same run.
#
# Appends a seeded fleet (CLUSTERS clusters, OBJECTS objects, EVENTS events,
# 5% delivered late) to a fresh ledger with every derived index on, times
# inventory_at at 20 random instants (whole fleet, one cluster), exports the
# tables to Parquet and asks DuckDB the same questions. The ledger and the
# export stay in bench/data (not committed) for reruns; results go to
# bench/results/inventory-EVENTS-SEED.json.
#
# Usage: bash bench/inventory.sh [EVENTS] [OBJECTS] [CLUSTERS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-10000000}
objects=${2:-1000000}
clusters=${3:-100}
seed=${4:-42}
data=bench/data
mkdir -p "$data" bench/results
cargo build --release --locked -p annal-cli -p annal-bench
ledger="$data/inventory-$events-$seed"
export_dir="$data/parquet-$events-$seed"
results="bench/results/inventory-$events-$seed.json"
echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
/usr/bin/time -f "annal-bench: peak RSS %M KB, wall %e s" \
  target/release/annal-bench inventory --data "$ledger" --events "$events" \
  --objects "$objects" --clusters "$clusters" --seed "$seed" --out "$results"
echo "== export parquet"
/usr/bin/time -f "export: peak RSS %M KB, wall %e s" \
  target/release/annal --data "$ledger" export parquet --table objects --to "$export_dir"
du -sh "$export_dir"/objects
echo "== duckdb"
venv="$data/venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet duckdb pyarrow
"$venv/bin/python" bench/duckdb_inventory.py "$export_dir" "$results"
