#!/usr/bin/env bash
# serve's memory by part (issue 52): a model trained on generated
# sample-group data (ctrgen, TRAIN samples, the default model: one table
# of dim 18, MLP 200-80) by `worker -local`, which exports its final model;
# `serve` loads it, and its /status accounting (serve.Memory: the model's
# values, its tables whole, the Go heap and runtime,
# the resident set) is read at rest and again after REQUESTS requests of
# 150 candidates. Prints each part in MiB and as a multiple of the values.
#
# Usage: bench/serve_memory.sh [TRAIN]   (default 1000000 samples)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin" ./cmd/worker ./cmd/serve ./cmd/serveload ./cmd/ctrgen
"$bin/ctrgen" -format group -train "$bin/train.grp" -test "$bin/test.grp" -train-samples "$n" -test-samples 20000 >/dev/null 2>&1
"$bin/worker" -local -quiet -set "job.train=$bin/train.grp" -set "job.test=$bin/test.grp" -set train.format=group \
	-set "export.store=$bin/exports" -set export.every=-1s >/dev/null
port=$((20000 + RANDOM % 20000))
"$bin/serve" -store "$bin/exports" -listen "127.0.0.1:$port" 2>"$bin/serve.log" &
for _ in $(seq 300); do curl -sf "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
show() { # when
	curl -s "127.0.0.1:$port/status?model=default" | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin); m = s["memory"]; v = m["values_bytes"]
print(sys.argv[1] + ": export %d, %s rows;" % (s["export"], sum(s["rows"].values())),
      "; ".join("%s %.1f MiB (%.2fx)" % (k[:-6], m[k] / 2**20, m[k] / v) for k in
                ["values_bytes", "tables_bytes", "heap_bytes", "runtime_bytes", "rss_bytes"]))' "$1"
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
show "at rest"
"$bin/serveload" -url "http://127.0.0.1:$port/predict" -test "$bin/test.grp" -candidates 150 -in-flight 4 -duration 10s >/dev/null
show "after 10 s of requests, 4 in flight"
