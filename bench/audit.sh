#!/usr/bin/env bash
# Audit-log ingest benchmark (release build): the native log and the
# managed clusters' exports of the same requests.
#
# Repeats the published Kubernetes audit samples (../shared/fixtures/real
# k8s-audit, when present) and annal's own (ingest/testdata/audit.jsonl)
# with fresh seeded auditIDs into one large JSONL per shape (not committed;
# same seed, same bytes): `native` (the API server's log), `gke` (Cloud
# Logging entries), `aks` (kube-audit diagnostic records), `eks`
# (CloudWatch events). Each is ingested with `--format auto` into a fresh
# ledger; prints events/s, peak RSS and each export's time per event
# relative to the native log's.
#
# Usage: bash bench/audit.sh [COUNT] [SEED] [SHAPE...]   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000000}
seed=${2:-42}
shift 2 2>/dev/null || shift $#
shapes=("$@")
[ ${#shapes[@]} -eq 0 ] && shapes=(native gke aks eks)
data=bench/data
mkdir -p "$data"
cargo build --release --locked -p annal-cli -p annal-bench
from=(--from ingest/testdata/audit.jsonl)
[ -d ../shared/fixtures/real/k8s-audit ] && from+=(--from ../shared/fixtures/real/k8s-audit)
echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $count audit events per shape"
declare -A wall
for shape in "${shapes[@]}"; do
  input="$data/audit-$shape-$count-$seed.jsonl"
  [ -f "$input" ] || target/release/annal-bench audit --count "$count" --seed "$seed" --shape "$shape" "${from[@]}" --out "$input"
  ledger=$(mktemp -d "$data/ledger.XXXXXX")
  target/release/annal --data "$ledger" init >/dev/null
  echo "== $shape: input $(du -h "$input" | cut -f1)"
  /usr/bin/time -f "%e %M" -o "$ledger.time" \
    target/release/annal --data "$ledger" ingest --cluster bench --no-progress "$input" 2>"$ledger.err" \
    || { tail -3 "$ledger.err"; exit 1; }
  read -r secs rss < "$ledger.time"
  wall[$shape]=$secs
  echo "   $shape: wall ${secs} s, $(awk -v n="$count" -v s="$secs" 'BEGIN{printf "%.0f", n/s}') events/s, peak RSS $((rss / 1024)) MB, ledger $(du -sh "$ledger" | cut -f1)"
  rm -rf "$ledger" "$ledger.time" "$ledger.err"
done
if [ -n "${wall[native]:-}" ]; then
  for shape in "${shapes[@]}"; do
    [ "$shape" = native ] && continue
    echo "== $shape / native time per event: $(awk -v a="${wall[$shape]}" -v b="${wall[native]}" 'BEGIN{printf "%.2f", a/b}')x"
  done
fi
