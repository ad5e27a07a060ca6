#!/usr/bin/env bash
# Kafka consume benchmark (release build): COUNT seeded envelopes (~1 KB)
# are produced to a 3-partition topic on a local Tansu broker (in memory),
# then `annal serve --kafka-*` consumes them into an empty ledger. Reports
# events/s from the first committed batch to the last, the server's peak
# RSS, and checks that the ledger holds exactly COUNT events and verifies.
# Results in bench/results/kafka-COUNT-SEED.json.
#
# COMPRESSION=lz4 (or gzip, zstd, snappy) has the producer compress its
# batches; the default is none. With Tansu 0.6.0 the broker sets the pace:
# it answers every fetch only once the consumer's fetch.wait.max.ms has
# passed, data or not, and serves at most 5 MiB per fetch, so the consumer
# waits for data part of the time (docs/performance.md "Kafka consume").
#
# SERVE_OPTIONS="--kafka-option KEY=VALUE ..." passes options to the
# consuming `annal serve` (docs/performance.md "Kafka consume": fetch settings).
#
# Usage: bash bench/kafka.sh [COUNT] [SEED]
# With BIN=DIR set, DIR's annal and annal-bench are run instead of a fresh
# release build (an A/B of two builds, alternating).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000000}
seed=${2:-42}
compression=${COMPRESSION:-none}
mkdir -p bench/data bench/results
tansu=$(bash scripts/tansu.sh)
bin=${BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --locked -p annal-cli -p annal-bench
  bin=target/release
fi
work=$(mktemp -d bench/data/kafka.XXXXXX)
broker= server=
trap 'for p in $server $broker; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
kport=$((20000 + RANDOM % 20000))
"$tansu" broker --listener-url "tcp://127.0.0.1:$kport" --advertised-listener-url "tcp://127.0.0.1:$kport" \
  --storage-engine memory://tansu/ --silent >/dev/null 2>&1 &
broker=$!
until (exec 3<>"/dev/tcp/127.0.0.1/$kport") 2>/dev/null; do sleep 0.1; done
"$tansu" topic create bench --partitions 3 --broker "tcp://127.0.0.1:$kport" >/dev/null
echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $count envelopes, seed $seed, 3 partitions, $compression"
"$bin/annal-bench" kafka-produce --brokers "127.0.0.1:$kport" --topic bench \
  --partitions 3 --count "$count" --seed "$seed" --compression "$compression"
"$bin/annal" --data "$work/ledger" init >/dev/null
port=$((20000 + RANDOM % 20000))
/usr/bin/time -f "server: peak RSS %M KB, CPU %P" -o "$work/time" \
  "$bin/annal" --data "$work/ledger" serve --listen "127.0.0.1:$port" \
  --kafka-brokers "127.0.0.1:$kport" --kafka-topic bench --kafka-group bench ${SERVE_OPTIONS:-} 2> "$work/server.log" &
timer=$!
until grep -q "serving on" "$work/server.log"; do
  kill -0 "$timer" 2>/dev/null || { cat "$work/server.log"; exit 1; }
  sleep 0.1
done
server=$(pgrep -P "$timer" annal)
out="bench/results/kafka-$count-$seed.json"
# Watches the consumer's counter: time from the first committed batch to
# the last message.
# (When the server stops early, e.g. on a full disk, its log says why.)
python3 - "$port" "$count" "$out" "$compression" <<'PY' || { echo "the server stopped; its log:" >&2; tail -n 20 "$work/server.log" >&2; exit 1; }
import json, sys, time, urllib.request
port, count, out, compression = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
def metric(name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    return next(int(float(l.split()[1])) for l in text.splitlines() if l.startswith(name + " "))
def messages():
    return metric("annal_kafka_messages_total")
start = time.time()
first = None
while True:
    n = messages()
    now = time.time()
    if first is None and n > 0:
        first = (now, n)
    if n >= count:
        break
    if now - start > 3600:
        sys.exit("timed out")
    time.sleep(0.05)
t0, n0 = first
rate = (count - n0) / (now - t0)
batches = metric("annal_kafka_batches_total")
print(f"consumed {count} messages: {rate:,.0f} events/s after the first batch ({now - start:.1f} s from start, including the group join), {batches} group commits")
json.dump({"count": count, "compression": compression, "events_per_second": round(rate), "seconds_from_start": round(now - start, 2),
           "seconds_from_first_batch": round(now - t0, 2), "group_commits": batches}, open(out, "w"), indent=2)
PY
kill -TERM "$server"
wait "$timer" || true
server=
cat "$work/time"
size=$("$bin/annal" --data "$work/ledger" status -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["size"])')
echo "ledger size $size"
[ "$size" = "$count" ] || { echo "MISMATCH: the ledger holds $size events, not $count" >&2; exit 1; }
"$bin/annal" --data "$work/ledger" verify >/dev/null
python3 - "$out" "$size" "$work/time" <<'PY'
import json, re, sys
path, size, timing = sys.argv[1], int(sys.argv[2]), open(sys.argv[3]).read()
d = json.load(open(path))
d["ledger_size"] = size
m = re.search(r"peak RSS (\d+) KB", timing)
d["server_peak_rss_kb"] = int(m.group(1)) if m else None
json.dump(d, open(path, "w"), indent=2)
PY
