#!/usr/bin/env bash
# Ingest and verify benchmark (release build).
#
# Generates a seeded dataset of ~1 KB Envelope v1 events (not committed; same
# seed, same bytes), ingests it into a fresh ledger with flushes on every
# group commit, and verifies it. Prints throughput and peak RSS.
#
# Usage: bash bench/ingest.sh [COUNT] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000000}
seed=${2:-42}
data=bench/data
mkdir -p "$data"
cargo build --release --locked -p annal-cli -p annal-bench
input="$data/envelopes-$count-$seed.jsonl"
[ -f "$input" ] || target/release/annal-bench envelopes --count "$count" --seed "$seed" --out "$input"
ledger=$(mktemp -d "$data/ledger.XXXXXX")
trap 'rm -rf "$ledger"' EXIT
target/release/annal --data "$ledger" init >/dev/null
echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; input $(du -h "$input" | cut -f1), $count events"
echo "== ingest"
/usr/bin/time -f "peak RSS %M KB, wall %e s, CPU %P" \
  target/release/annal --data "$ledger" ingest --format envelope --no-progress "$input"
echo "== verify"
/usr/bin/time -f "peak RSS %M KB, wall %e s, CPU %P" \
  target/release/annal --data "$ledger" verify
echo "== ledger size on disk: $(du -sh "$ledger" | cut -f1)"
