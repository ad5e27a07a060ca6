#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 600), seeded with the
# published samples in ../shared/fixtures/real when present.
#
# Usage: bash fuzz/run.sh [SECONDS] [TARGET...]
# Needs cargo-fuzz (`cargo install cargo-fuzz`); RUSTC_BOOTSTRAP lets the
# stable toolchain accept the flags cargo-fuzz passes. No AddressSanitizer
# (`--sanitizer none`): the C libraries under the Kafka source (librdkafka's
# configure, zstd) do not link with it, and the decoders are safe Rust, so
# what the targets hunt is panics (libFuzzer's coverage guidance stays on).
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-600}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(envelope k8s_audit gke_audit aks_audit eks_audit k8s_object argocd flux fleet k8s_event auto)
fi
fixtures=../../shared/fixtures/real
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O --sanitizer none
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  if [ -d "$fixtures" ] && [ -z "$(ls -A "corpus/$t")" ]; then
    find "$fixtures" -type f ! -name SOURCES.md -size -64k -exec cp {} "corpus/$t/" \;
    cp ../examples/*.jsonl "corpus/$t/" 2>/dev/null || true
    cp ../ingest/testdata/cloud-audit/*.json* "corpus/$t/" 2>/dev/null || true
  fi
  echo "== $t for ${seconds}s"
  cargo fuzz run -O --sanitizer none "$t" "corpus/$t" -- -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 2>&1 \
    | grep -E '^(#[0-9]+ +DONE|Done|==[0-9]+==|SUMMARY|artifact)' || true
  # libFuzzer exits non-zero on a crash; the artifact line above names it.
  if ls "artifacts/$t"/crash-* >/dev/null 2>&1; then
    echo "!! $t: crash artifacts in fuzz/artifacts/$t"
    exit 1
  fi
done
