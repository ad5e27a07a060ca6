#!/usr/bin/env bash
# HTTP ingest load benchmark (release build): CLIENTS concurrent clients
# post batches of BATCH envelopes to `annal serve` on loopback for SECONDS,
# then the server is stopped with SIGTERM and the ledger's size is checked
# against the events the server acknowledged. Prints throughput, latency,
# the server's peak RSS; results in bench/results/http-CLIENTS-SECONDS.json.
#
# Usage: bash bench/http.sh [CLIENTS] [SECONDS] [BATCH] [MAX_IN_FLIGHT]
# With LATENCIES=FILE set, every answered request's start and latency go
# to FILE (CSV), to see where in time the tail falls. With BIN=DIR set,
# DIR's annal and annal-bench are run instead of a fresh release build
# (an A/B of two builds, alternating).
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-64}
seconds=${2:-60}
batch=${3:-100}
in_flight=${4:-64}
mkdir -p bench/data bench/results
bin=${BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --locked -p annal-cli -p annal-bench
  bin=target/release
fi
work=$(mktemp -d bench/data/http.XXXXXX)
server=
trap 'if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
"$bin/annal" --data "$work/ledger" init >/dev/null
token="ingest-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf 'ingest %s\n' "$token" > "$work/tokens"
port=$((20000 + RANDOM % 20000))
/usr/bin/time -f "server: peak RSS %M KB, CPU %P" -o "$work/time" \
  "$bin/annal" --data "$work/ledger" serve --listen "127.0.0.1:$port" \
  --tokens "$work/tokens" --max-in-flight "$in_flight" 2> "$work/server.log" &
timer=$!
until grep -q "serving on" "$work/server.log"; do
  kill -0 "$timer" 2>/dev/null || { cat "$work/server.log"; exit 1; }
  sleep 0.1
done
# SIGTERM goes to annal itself, not to /usr/bin/time around it.
server=$(pgrep -P "$timer" annal)
out="bench/results/http-$clients-$seconds.json"
echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $clients clients × $batch envelopes per request, $seconds s, --max-in-flight $in_flight"
/usr/bin/time -f "clients: CPU %P (user %U s, system %S s)" -o "$work/client-time" \
  "$bin/annal-bench" http-load --addr "127.0.0.1:$port" --token "$token" \
  --clients "$clients" --seconds "$seconds" --batch "$batch" --out "$out" \
  ${LATENCIES:+--latencies "$LATENCIES"}
kill -TERM "$server"
wait "$timer" || true
server=
cat "$work/time" "$work/client-time"
size=$("$bin/annal" --data "$work/ledger" status -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["size"])')
acked=$(python3 -c "import json; print(json.load(open('$out'))['acknowledged_events'])")
echo "ledger size $size, acknowledged $acked"
[ "$size" = "$acked" ] || { echo "MISMATCH: the ledger does not hold exactly the acknowledged events" >&2; exit 1; }
python3 - "$out" "$size" "$work/time" <<'PY'
import json, re, sys
path, size, timing = sys.argv[1], int(sys.argv[2]), open(sys.argv[3]).read()
d = json.load(open(path))
d["ledger_size"] = size
m = re.search(r"peak RSS (\d+) KB", timing)
d["server_peak_rss_kb"] = int(m.group(1)) if m else None
json.dump(d, open(path, "w"), indent=2)
PY
