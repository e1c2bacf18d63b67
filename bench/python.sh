#!/usr/bin/env bash
# The Python package's costs (issue 54), against the Go side in the same
# run: a model trained on TRAIN generated sample-group samples (the
# default model) and exported;
#   1. xps.export.open on it: the dump read into numpy, in MB/s of the
#      arrays (target: at least 100 MB/s at 1M rows), against exportdump
#      alone writing to /dev/null;
#   2. predict over gRPC, one request in flight, CANDIDATES candidates:
#      the Go load client (serveload -grpc) and xps.serve.Client on the
#      same serve and requests, alternated ROUNDS times, RUN_SECONDS each
#      (target: the Python client's p50 at most 0.3 ms above the Go
#      client's).
#
# Usage: bench/python.sh [TRAIN]   (default 1000000 samples)
# Environment: CANDIDATES (150), ROUNDS (3), RUN_SECONDS (10).
# Needs: python3-numpy, python3-grpcio, python3-protobuf, python3-venv (apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
k=${CANDIDATES:-150}
rounds=${ROUNDS:-3}
secs=${RUN_SECONDS:-10}
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin" ./cmd/worker ./cmd/serve ./cmd/serveload ./cmd/ctrgen ./cmd/exportdump
/usr/bin/python3 -m venv --system-site-packages "$bin/venv"
"$bin/venv/bin/pip" install -q --no-deps --no-build-isolation ./python
export XPS_BIN=$bin
echo "== generating $n training samples (sample groups), training, exporting"
"$bin/ctrgen" -format group -train "$bin/train.grp" -test "$bin/test.grp" -train-samples "$n" -test-samples 20000 >/dev/null 2>&1
"$bin/worker" -local -quiet -set "job.train=$bin/train.grp" -set "job.test=$bin/test.grp" -set train.format=group \
	-set "export.store=$bin/exports" -set export.every=-1s >/dev/null 2>&1
echo "== 1. xps.export.open"
for r in $(seq "$rounds"); do
	t0=$(date +%s.%N)
	"$bin/exportdump" -store "$bin/exports" >/dev/null
	t1=$(date +%s.%N)
	"$bin/venv/bin/python" - "$bin/exports" "$t0" "$t1" <<'PY'
import sys, time
import xps
t = time.perf_counter()
m = xps.export.open(sys.argv[1])
s = time.perf_counter() - t
go = float(sys.argv[3]) - float(sys.argv[2])
rows = sum(len(i) for i, _ in m.tables.values())
print(f"  {rows:,} rows, {m.nbytes / 1e6:.1f} MB: xps.export.open {s:.3f} s ({m.nbytes / 1e6 / s:.0f} MB/s); "
      f"exportdump to /dev/null {go:.3f} s ({m.nbytes / 1e6 / go:.0f} MB/s)")
PY
done
echo "== 2. predict over gRPC, 1 in flight, $k candidates"
port=$((20000 + RANDOM % 20000))
gport=$((port + 1))
"$bin/serve" -store "$bin/exports" -listen "127.0.0.1:$port" -grpc "127.0.0.1:$gport" 2>"$bin/serve.log" &
for _ in $(seq 300); do curl -sf "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
"$bin/serveload" -test "$bin/test.grp" -candidates "$k" -dump "$bin/requests.jsonl"
for r in $(seq "$rounds"); do
	go=$("$bin/serveload" -grpc "127.0.0.1:$gport" -test "$bin/test.grp" -candidates "$k" -in-flight 1 -duration "${secs}s")
	"$bin/venv/bin/python" - "$bin/requests.jsonl" "127.0.0.1:$port" "127.0.0.1:$gport" "$secs" "$go" <<'PY'
import json, sys, time
import numpy as np
import xps
reqs = [json.loads(l) for l in open(sys.argv[1])]
c = xps.serve.Client(sys.argv[2], grpc=sys.argv[3])
secs, go = float(sys.argv[4]), json.loads(sys.argv[5])
lat, i, end = [], 0, time.perf_counter() + secs
while time.perf_counter() < end:
    r = reqs[i % len(reqs)]
    t = time.perf_counter()
    c.predict_grpc(r["user"], r["candidates"])
    lat.append(time.perf_counter() - t)
    i += 1
lat = np.sort(np.array(lat)) * 1000
p50, p99 = float(np.percentile(lat, 50)), float(np.percentile(lat, 99))
print(f"  Go serveload: p50 {go['p50_ms']:.3f} ms, p99 {go['p99_ms']:.3f} ms, {go['requests_per_second']:.0f}/s; "
      f"xps.serve.Client: p50 {p50:.3f} ms, p99 {p99:.3f} ms, {len(lat) / secs:.0f}/s; "
      f"p50 added {p50 - go['p50_ms']:+.3f} ms (target <= 0.3)")
PY
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
