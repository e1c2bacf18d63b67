#!/usr/bin/env bash
# Serving latency and throughput (issue 23): a model trained on generated
# sample-group data (ctrgen, TRAIN samples, the default model: one table of
# dim 18, MLP 200-80) by `worker -local`, which exports its final model;
# `serve` loads the export; `serveload` sends requests of one user and
# CANDIDATES candidates built from the test file over loopback HTTP, first
# at each of IN_FLIGHT requests in flight (default 1, 2, 4 and 8), for
# RUN_SECONDS each; then the PyTorch peer (bench/peers/torch_serve.py,
# ../shared/peers/torch_ctr.py's network) scores the same requests one at a
# time in its own process, on the same 2 cores. The summary gives both
# sides' p50/p99 and requests/s at each setting, and the targets of issue
# 52 at one setting, 2 in flight: our p99 under 5 ms and our requests/s
# at least 10x the peer's.
#
# Usage: bench/serve.sh [TRAIN]   (default 1000000 samples)
# Environment: CANDIDATES (150), IN_FLIGHT ("1 2 4 8"), RUN_SECONDS (20), QUANT (fp32)
# Needs: python3-torch, python3-numpy, libopenblas0-pthread (apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
k=${CANDIDATES:-150}
inflight=(${IN_FLIGHT:-1 2 4 8})
secs=${RUN_SECONDS:-20}
quant=${QUANT:-fp32}
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin" ./cmd/worker ./cmd/serve ./cmd/serveload ./cmd/ctrgen
echo "== generating $n training samples (sample groups)"
"$bin/ctrgen" -format group -train "$bin/train.grp" -test "$bin/test.grp" -train-samples "$n" -test-samples 20000 2>&1 | sed -e 's/^/  /'
echo "== training, exporting the final model ($quant)"
"$bin/worker" -local -set "job.train=$bin/train.grp" -set "job.test=$bin/test.grp" -set train.format=group \
  -set "export.store=$bin/exports" -set export.every=-1s -set "export.quant=$quant" 2>&1 | grep -E "exported|test AUC|trained" | sed -e 's/^/  /'
port=$((20000 + RANDOM % 20000))
"$bin/serve" -store "$bin/exports" -listen "127.0.0.1:$port" 2>"$bin/serve.log" &
for _ in $(seq 300); do curl -sf "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
curl -s "127.0.0.1:$port/status?model=default"
"$bin/serveload" -test "$bin/test.grp" -candidates "$k" -dump "$bin/requests.jsonl"
runs=()
for f in "${inflight[@]}"; do
	echo "== ours: $f in flight"
	runs+=("$("$bin/serveload" -url "http://127.0.0.1:$port/predict" -test "$bin/test.grp" -candidates "$k" -in-flight "$f" -duration "${secs}s")")
	echo "  ${runs[-1]}"
done
kill %1 2>/dev/null || true
echo "== the PyTorch peer, one request at a time"
peer=$(OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/peers/torch_serve.py --requests "$bin/requests.jsonl" --seconds "$secs")
echo "  $peer"
python3 - "$peer" "${runs[@]}" <<'PY'
import json, sys
peer, runs = json.loads(sys.argv[1]), [json.loads(a) for a in sys.argv[2:]]
for r in runs:
    print(f"ours, {r['in_flight']} in flight: p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, {r['requests_per_second']:.0f} requests/s "
          f"({r['requests_per_second'] / peer['requests_per_second']:.1f}x the peer)")
print(f"peer (PyTorch):     p50 {peer['p50_ms']} ms, p99 {peer['p99_ms']} ms, {peer['requests_per_second']:.0f} requests/s "
      f"(forward alone: p50 {peer['forward_p50_ms']} ms, {peer['forward_requests_per_second']:.0f} requests/s)")
two = [r for r in runs if r['in_flight'] == 2]
if two:
    r = two[0]
    x = r['requests_per_second'] / peer['requests_per_second']
    print(f"at 2 in flight: p99 {r['p99_ms']} ms (target < 5 ms: {'met' if r['p99_ms'] < 5 else 'NOT met'}), "
          f"{x:.1f}x the peer's requests/s (target >= 10x: {'met' if x >= 10 else 'NOT met'})")
PY
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
