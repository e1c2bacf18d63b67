#!/usr/bin/env bash
# serve under a flood of hostile requests (issue 48): a model trained on
# generated sample-group data (ctrgen, TRAIN samples) is exported and
# served twice in turn, with its default limits ("limited") and with them
# opened as wide as the server was before issue 48 ("open": 64 MiB bodies,
# a million features, 1024 in flight). For each, the resting RSS is read
# once the model is loaded and served a warm-up, then serveload sends
# well-formed requests (one in flight, CANDIDATES candidates) for SECONDS
# while FLOOD clients send requests of one user with FEATURES user
# features (and the same candidates) in closed loops; the peak RSS (VmHWM)
# of the server over the run, the p99 of the well-formed requests and the
# flood's answers by HTTP status are printed. Target: limited peak <=
# resting + 256 MiB.
#
# Usage: bench/serve_flood.sh [TRAIN]   (default 200000 samples)
# Environment: FLOOD (32), FEATURES (300000), CANDIDATES (150), RUN_SECONDS (20)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200000}
flood=${FLOOD:-32}
feats=${FEATURES:-300000}
k=${CANDIDATES:-150}
secs=${RUN_SECONDS:-20}
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin" ./cmd/worker ./cmd/serve ./cmd/serveload ./cmd/ctrgen
echo "== generating $n training samples, training, exporting"
"$bin/ctrgen" -format group -train "$bin/train.grp" -test "$bin/test.grp" -train-samples "$n" -test-samples 20000 2>/dev/null
"$bin/worker" -local -set "job.train=$bin/train.grp" -set "job.test=$bin/test.grp" -set train.format=group \
  -set "export.store=$bin/exports" -set export.every=-1s 2>&1 | grep -E "exported|trained" | sed -e 's/^/  /'
rss() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
run() { # name, serve flags...
  local name=$1; shift
  local port=$((20000 + RANDOM % 20000))
  "$bin/serve" -store "$bin/exports" -listen "127.0.0.1:$port" -grpc "" "$@" 2>"$bin/serve-$name.log" &
  local pid=$!
  for _ in $(seq 300); do curl -sf "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  "$bin/serveload" -url "http://127.0.0.1:$port/predict" -test "$bin/test.grp" -candidates "$k" -in-flight 1 -duration 3s >/dev/null
  local rest
  rest=$(rss $pid VmRSS)
  local out
  out=$("$bin/serveload" -url "http://127.0.0.1:$port/predict" -test "$bin/test.grp" -candidates "$k" -in-flight 1 \
    -duration "${secs}s" -flood "$flood" -flood-user-features "$feats")
  local peak
  peak=$(rss $pid VmHWM)
  kill $pid; wait $pid 2>/dev/null || true
  python3 - "$name" "$rest" "$peak" "$out" <<'PY'
import json, sys
name, rest, peak, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
grow = (peak - rest) / 1024
print(f"{name}: resting RSS {rest/1024:.0f} MiB, peak {peak/1024:.0f} MiB (+{grow:.0f} MiB); "
      f"well-formed: {out['requests']} answered, {out['errors']} refused, p50 {out['p50_ms']} ms, p99 {out['p99_ms']} ms; "
      f"flood answers {out.get('flood')}")
if name == "limited":
    print(f"target peak <= resting + 256 MiB: {'met' if grow <= 256 else 'NOT met'}")
PY
}
echo "== $flood flood clients of $feats user features and $k candidates, for ${secs}s beside one well-formed client"
run limited
run open -max-body-bytes 67108864 -max-user-features 1000000 -max-features 2000000 -max-in-flight 1024
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
