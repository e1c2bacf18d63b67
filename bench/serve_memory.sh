#!/usr/bin/env bash
# serve's memory by part (issue 52): a model trained on generated
# sample-group data (ctrgen, TRAIN samples, the default model: one table
# of dim 18, MLP 200-80) by `worker -local`, which exports its final model;
# `serve` loads it, and its /status accounting (serve.Memory: the model's
# values, its tables whole, the Go heap and runtime, the resident set) is
# read at rest, after a full reload (a second job's final export into the
# same store: the peak resident set while serve loads it beside the model
# serving, VmHWM), and after 10 s of requests of 150 candidates. The fixed
# cost is the resident set of serve at rest on a model of one sample's
# rows; the issue's ratios are (RSS - fixed) / values.
#
# Usage: bench/serve_memory.sh [TRAIN]   (default 1000000 samples)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin" ./cmd/worker ./cmd/serve ./cmd/serveload ./cmd/ctrgen
"$bin/ctrgen" -format group -train "$bin/train.grp" -test "$bin/test.grp" -train-samples "$n" -test-samples 20000 >/dev/null 2>&1
"$bin/ctrgen" -format group -train "$bin/tiny.grp" -test "$bin/tiny-test.grp" -train-samples 1 -test-samples 1 >/dev/null 2>&1
train() { # train-file store
	"$bin/worker" -local -quiet -set "job.train=$1" -set "job.test=$bin/test.grp" -set train.format=group \
		-set "export.store=$2" -set export.every=-1s >/dev/null
}
train "$bin/train.grp" "$bin/exports"
train "$bin/tiny.grp" "$bin/tiny"
port=$((20000 + RANDOM % 20000))
serve() { # store
	"$bin/serve" -store "$1" -listen "127.0.0.1:$port" -grpc "" 2>>"$bin/serve.log" &
	pid=$!
	for _ in $(seq 300); do curl -sf "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
}
status() { curl -s "127.0.0.1:$port/status?model=default"; }
serve "$bin/tiny"
fixed=$(status | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["memory"]["rss_bytes"])')
kill $pid; wait $pid 2>/dev/null || true
echo "fixed: serve at rest on a model of one sample's rows: RSS $((fixed / 1048576)) MiB"
show() { # when [peak-rss]
	status | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin); m = s["memory"]; v = m["values_bytes"]; fixed = int(sys.argv[2])
print(sys.argv[1] + ": export %d, %s rows;" % (s["export"], sum(s["rows"].values())),
      "; ".join("%s %.1f MiB (%.2fx)" % (k[:-6], m[k] / 2**20, m[k] / v) for k in
                ["values_bytes", "tables_bytes", "heap_bytes", "runtime_bytes", "rss_bytes"]),
      "; (rss - fixed) / values %.2f" % ((m["rss_bytes"] - fixed) / v))
if len(sys.argv) > 3:
    peak = int(sys.argv[3])
    print("  peak RSS during the reload %.1f MiB: (peak - fixed) / values %.2f" % (peak / 2**20, (peak - fixed) / v))' "$@"
}
serve "$bin/exports"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
show "at rest" "$fixed"
before=$(status | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["export"])')
echo 5 >"/proc/$pid/clear_refs" # resets VmHWM to the current RSS
train "$bin/train.grp" "$bin/exports" # a second job: its final export is a full one
for _ in $(seq 600); do
	[ "$(status | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["export"])')" != "$before" ] && break
	sleep 0.1
done
hwm=$(awk '/^VmHWM:/ {print $2 * 1024}' "/proc/$pid/status")
show "after a full reload" "$fixed" "$hwm"
"$bin/serveload" -url "http://127.0.0.1:$port/predict" -test "$bin/test.grp" -candidates 150 -in-flight 4 -duration 10s >/dev/null
show "after 10 s of requests, 4 in flight" "$fixed"
