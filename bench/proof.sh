#!/usr/bin/env bash
# Proof benchmark (release build) on an existing ledger: how long an auditor
# waits for inclusion and consistency proofs (each a fresh `annal` process:
# open the store, read O(log n) nodes, sign if needed, print JSON), how long
# the independent Python verifier takes to check them, and `annal verify
# --checkpoint` over the whole log.
#
# Default ledger: the 10M-event one `bash bench/inventory.sh` leaves in
# bench/data. Indexes and sizes are drawn from SEED. Results go to
# bench/results/proof-<ledger name>.json.
#
# Usage: bash bench/proof.sh [LEDGER_DIR] [PROOFS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
ledger=${1:-bench/data/inventory-10000000-42}
proofs=${2:-20}
seed=${3:-42}
[ -d "$ledger" ] || { echo "no ledger at $ledger (bash bench/inventory.sh makes one)" >&2; exit 2; }
cargo build --release --locked -p annal-cli -p annal-bench
annal=target/release/annal
python3 -c 'import blake3, cryptography' 2>/dev/null \
  || python3 -m pip install --quiet --disable-pip-version-check blake3 cryptography
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p bench/results
results="bench/results/proof-$(basename "$ledger").json"
echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"

"$annal" --data "$ledger" key show | head -1 > "$work/key.vkey"
"$annal" --data "$ledger" checkpoint > "$work/saved.cp"
size=$(sed -n 2p "$work/saved.cp")
echo "== ledger $ledger: $size entries"

# Seeded draws: indexes in [0, size), older sizes in [1, size).
python3 - "$size" "$proofs" "$seed" > "$work/draws" <<'EOF'
import random, sys
size, n, seed = map(int, sys.argv[1:])
rng = random.Random(seed)
for _ in range(n):
    print(rng.randrange(size), rng.randrange(1, size))
EOF

now() { date +%s.%N; }
: > "$work/times"
while read -r index from; do
  t0=$(now)
  "$annal" --data "$ledger" proof inclusion --index "$index" > "$work/inclusion.json"
  t1=$(now)
  python3 tools/verify_proof.py "$work/inclusion.json" --key "$work/key.vkey" > /dev/null
  t2=$(now)
  "$annal" --data "$ledger" proof consistency --from "$from" > "$work/consistency.json"
  t3=$(now)
  python3 tools/verify_proof.py "$work/consistency.json" --key "$work/key.vkey" > /dev/null
  t4=$(now)
  hashes=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["path"]), len(json.load(open(sys.argv[2]))["path"]))' "$work/inclusion.json" "$work/consistency.json")
  echo "$index $from $(echo "$t1 - $t0" | bc) $(echo "$t2 - $t1" | bc) $(echo "$t3 - $t2" | bc) $(echo "$t4 - $t3" | bc) $hashes" >> "$work/times"
done < "$work/draws"

echo "== annal verify --checkpoint (whole log)"
/usr/bin/time -f "%M %e" -o "$work/verify.time" \
  "$annal" --data "$ledger" -o json verify --checkpoint "$work/saved.cp" --key "$work/key.vkey" > "$work/verify.json"

python3 - "$work/times" "$work/verify.json" "$work/verify.time" "$size" "$seed" "$results" <<'EOF'
import json, statistics, sys
times, verify, vtime, size, seed, out = sys.argv[1:]
rows = [line.split() for line in open(times)]
col = lambda i: sorted(float(r[i]) for r in rows)
def summary(xs):
    return {"p50_s": round(statistics.median(xs), 4), "min_s": round(xs[0], 4), "max_s": round(xs[-1], 4)}
v = json.load(open(verify))
rss_kb, wall = open(vtime).read().split()
doc = {
    "entries": int(size), "seed": int(seed), "proofs": len(rows),
    "inclusion_annal": summary(col(2)), "inclusion_python_verify": summary(col(3)),
    "consistency_annal": summary(col(4)), "consistency_python_verify": summary(col(5)),
    "inclusion_hashes": sorted({int(r[6]) for r in rows}), "consistency_hashes": sorted({int(r[7]) for r in rows}),
    "verify_checkpoint": {"intact": v["intact"], "consistent": v["saved_checkpoint"]["consistent"] if v["saved_checkpoint"] else None,
                          "bytes": v["bytes"], "wall_s": float(wall), "mb_per_s": round(v["bytes"] / 1e6 / float(wall), 1),
                          "peak_rss_mb": round(int(rss_kb) / 1024)},
}
json.dump(doc, open(out, "w"), indent=2)
print(json.dumps(doc, indent=2))
EOF
echo "results: $results"
