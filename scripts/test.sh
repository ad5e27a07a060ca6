#!/usr/bin/env bash
# annal's whole test suite, from a fresh machine: formatting, lints, every
# Rust test (unit, property, end-to-end with real processes and files), and
# two independent checks in Python: a ledger's Merkle root recomputed from its
# leaf files, and the JSON Schema against the examples.
#
# The Kafka tests run against a real broker: Tansu, installed by
# scripts/tansu.sh (once; about 8 minutes) and started by the tests. The
# HTML report test and the web UI tests render in headless Chromium (Debian's
# package, installed here when missing; the UI tests drive it over the
# DevTools protocol with puppeteer-core from npm), and the proof tests run tools/verify_proof.py (Python
# with blake3 and cryptography from PyPI).
#
# Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

command -v cargo >/dev/null || { echo "cargo not found: install Rust with rustup first" >&2; exit 2; }
rustup component add rustfmt clippy >/dev/null 2>&1 || true

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step "Kafka-protocol broker for the Kafka tests (Tansu, installed once outside the clone)"
ANNAL_TANSU=$(bash scripts/tansu.sh)
export ANNAL_TANSU ANNAL_REQUIRE_KAFKA=1
echo "$ANNAL_TANSU"

step "Python modules for the independent verifiers (blake3, cryptography from PyPI)"
python3 -c 'import blake3, cryptography' 2>/dev/null \
  || python3 -m pip install --quiet --disable-pip-version-check blake3 cryptography
export ANNAL_REQUIRE_PYTHON=1

step "Chromium for the HTML report test (Debian's package)"
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then apt_get=(apt-get); else apt_get=(sudo apt-get); fi
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive "${apt_get[@]}" install -y -qq --no-install-recommends chromium >/dev/null
fi
export ANNAL_CHROMIUM=/usr/bin/chromium ANNAL_REQUIRE_CHROMIUM=1
/usr/bin/chromium --version

step "puppeteer-core for the web UI tests (npm, pinned by tools/ui-check/package-lock.json)"
command -v npm >/dev/null || { echo "npm not found: apt-get install nodejs npm" >&2; exit 2; }
npm ci --prefix tools/ui-check --no-audit --no-fund --loglevel=error
export ANNAL_REQUIRE_UI_CHECK=1

step "cargo test"
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$work/cargo-test.log"

# The `annal` binary `cargo test` built for the end-to-end tests. (`cargo run
# -p annal-cli` would resolve DataFusion's features for that package alone
# and compile DataFusion a second time.)
target_dir=$(cargo metadata --format-version 1 --no-deps --locked \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
annal="$target_dir/debug/annal"
[ -x "$annal" ] || { echo "no $annal after cargo test" >&2; exit 1; }

step "independent root check (Python, BLAKE3 from PyPI)"
"$annal" --data "$work/data" demo >/dev/null
python3 examples/recompute_root.py "$work/data" > "$work/python-root"
sed -n 2,3p "$work/data/checkpoint" > "$work/signed-root"
if ! diff -u "$work/signed-root" "$work/python-root"; then
  echo "independent root check: FAILED (Python root differs from the signed checkpoint)" >&2
  exit 1
fi
while read -r size root; do
  got=$(python3 examples/recompute_root.py store/testdata/golden "$size" | tail -1)
  if [ "$got" != "$root" ]; then
    echo "independent root check: golden root of size $size differs: Python $got, annal $root" >&2
    exit 1
  fi
done < store/testdata/golden/roots.txt
echo "independent root check: the Python recomputation matches the signed checkpoint and all $(wc -l < store/testdata/golden/roots.txt) golden roots"

step "JSON Schema check (Python jsonschema from PyPI)"
python3 -c 'import jsonschema' 2>/dev/null || python3 -m pip install --quiet --disable-pip-version-check jsonschema
"$annal" --data "$work/formats" init >/dev/null
find ingest/testdata -type f ! -name '*.md' -print0 | sort -z \
  | xargs -0 "$annal" --data "$work/formats" ingest --cluster ci --no-progress >/dev/null
if [ -d ../shared/fixtures/real ]; then
  # The published samples too (all valid ones: the broken ones are the
  # conformance test's business).
  find ../shared/fixtures/real -type f ! -name SOURCES.md ! -path '*/malformed/*' ! -name fal_01_003.jsonl -print0 \
    | sort -z | xargs -0 "$annal" --data "$work/formats" ingest --cluster ci --no-progress >/dev/null 2>&1
fi
python3 scripts/check_schema.py "$work/formats"

step "Parquet export read by pyarrow and DuckDB (from PyPI)"
python3 -c 'import duckdb, pyarrow' 2>/dev/null \
  || python3 -m pip install --quiet --disable-pip-version-check duckdb pyarrow
"$annal" --data "$work/formats" export parquet --to "$work/parquet" >/dev/null
python3 scripts/check_parquet.py "$annal" "$work/formats" "$work/parquet"

# One closing line over everything that ran (cargo prints one per test binary).
passed=$(grep -Eo '[0-9]+ passed' "$work/cargo-test.log" | awk '{s+=$1} END {print s+3}')
failed=$(grep -Eo '[0-9]+ failed' "$work/cargo-test.log" | awk '{s+=$1} END {print s+0}')
echo "summary: $passed passed, $failed failed"
