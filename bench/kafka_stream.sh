#!/usr/bin/env bash
# Streaming training from Kafka (issue 4): a kafkad broker process, the
# worker (-local: embedded etcd, 2 AMS shards, scheduler) training with
# -streaming on topic ctr (4 partitions), and kafkaput producing the
# generated CTR data (libFFM, XDL-paper-like 23 fields):
#   phase 1: the producer at RATE1 messages/s (below what training keeps up with)
#   phase 2: the producer as fast as it can (above it: the job must fall behind
#            gracefully, its lag growing, not fail)
# Prints the worker's progress lines (samples/s, lag) and a summary.
# Usage: bench/kafka_stream.sh [RATE1] [SECONDS1] [N2]
set -euo pipefail
cd "$(dirname "$0")/.."
rate1=${1:-15000}
secs1=${2:-20}
n2=${3:-600000}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$out"' EXIT
go build -o "$out" ./cmd/kafkad ./cmd/kafkaput ./cmd/worker ./cmd/ctrgen
port=$((20000 + RANDOM % 20000))
"$out/ctrgen" -train "$out/train.libffm" -train-samples $((rate1 * secs1 + n2 + 20000)) >/dev/null
"$out/kafkad" -port "$port" -topics ctr:4 >"$out/kafkad.log" &
sleep 1
b=127.0.0.1:$port
"$out/kafkaput" -brokers "$b" -topic ctr -limit 20000 "$out/train.libffm"
"$out/worker" -local -kafka "$b" -topic ctr -streaming true -json >"$out/worker.json" 2>"$out/progress.log" &
wpid=$!
sleep 5
echo "== phase 1: producer at $rate1 messages/s for ${secs1}s"
start=$(date +%s.%N)
"$out/kafkaput" -brokers "$b" -topic ctr -rate "$rate1" -limit $((rate1 * secs1 + 20000)) "$out/train.libffm"
echo "== phase 2: producer unthrottled, $n2 messages"
"$out/kafkaput" -brokers "$b" -topic ctr -limit $((rate1 * secs1 + 20000 + n2)) "$out/train.libffm" | tail -1
sleep 5
kill -INT $wpid
wait $wpid || true
grep -E "batch|stopped" "$out/progress.log" | sed -e 's/^/  /'
tail -3 "$out/progress.log" | sed -e "s/^/  /"
tail -1 "$out/worker.json" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({k: r[k] for k in ("samples","samples_per_second","progressive","stopped")}))'
echo "load: $(cut -d" " -f1-3 /proc/loadavg)"
