#!/usr/bin/env bash
# Audit-log ingest benchmark (release build).
#
# Repeats the published Kubernetes audit samples (../shared/fixtures/real
# k8s-audit, when present) and annal's own (ingest/testdata/audit.jsonl)
# with fresh seeded auditIDs into one large JSONL (not committed; same seed,
# same bytes), ingests it with `--format k8s-audit` into a fresh ledger and
# prints events/s and peak RSS.
#
# Usage: bash bench/audit.sh [COUNT] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000000}
seed=${2:-42}
data=bench/data
mkdir -p "$data"
cargo build --release --locked -p annal-cli -p annal-bench
from=(--from ingest/testdata/audit.jsonl)
[ -d ../shared/fixtures/real/k8s-audit ] && from+=(--from ../shared/fixtures/real/k8s-audit)
input="$data/audit-$count-$seed.jsonl"
[ -f "$input" ] || target/release/annal-bench audit --count "$count" --seed "$seed" "${from[@]}" --out "$input"
ledger=$(mktemp -d "$data/ledger.XXXXXX")
trap 'rm -rf "$ledger"' EXIT
target/release/annal --data "$ledger" init >/dev/null
echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; input $(du -h "$input" | cut -f1), $count audit events"
echo "== ingest --format k8s-audit"
/usr/bin/time -f "peak RSS %M KB, wall %e s, CPU %P" \
  target/release/annal --data "$ledger" ingest --format k8s-audit --cluster bench --no-progress "$input"
echo "== ledger size on disk: $(du -sh "$ledger" | cut -f1)"
