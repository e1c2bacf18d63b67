#!/usr/bin/env bash
# Two models in one serve process (issue 52): a model trained on generated
# sample-group data (ctrgen, TRAIN samples, the default model: one table
# of dim 18, MLP 200-80) by `worker -local`, its final export copied to a
# second store, so that models a and b are the same size. `serveload`
# sends model a requests of 150 candidates at 2 in flight for RUN_SECONDS,
# in three settings alternated ROUNDS times:
#   alone      serve -store A: a alone in its process
#   idle       serve -models FILE (a and b): b idle
#   reloading  the same, b reloaded in full over and over meanwhile (its
#              entry in the models file changed every 2 s: serve loads b
#              anew beside the b serving, then switches it in), which
#              takes a core for as long as each load lasts
# and prints each setting's requests/s, p50, p99 and max, and the ratios
# to alone. The issue's target: a beside b idle at least 0.9 of a alone,
# and b's reloads never pausing a (a's max latency).
#
# Usage: bench/serve_models.sh [TRAIN]   (default 1000000 samples)
# Environment: ROUNDS (2), RUN_SECONDS (20)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
rounds=${ROUNDS:-2}
secs=${RUN_SECONDS:-20}
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin" ./cmd/worker ./cmd/serve ./cmd/serveload ./cmd/ctrgen
"$bin/ctrgen" -format group -train "$bin/train.grp" -test "$bin/test.grp" -train-samples "$n" -test-samples 20000 >/dev/null 2>&1
"$bin/worker" -local -quiet -set "job.train=$bin/train.grp" -set "job.test=$bin/test.grp" -set train.format=group \
	-set "export.store=$bin/a" -set export.every=-1s >/dev/null 2>&1
cp -r "$bin/a" "$bin/b"
models() { # b's max_in_flight
	printf 'models:\n  - {name: a, store: %s}\n  - {name: b, store: %s, limits: {max_in_flight: %d}}\n' "$bin/a" "$bin/b" "$1" >"$bin/models.yaml.new"
	mv "$bin/models.yaml.new" "$bin/models.yaml"
}
models 8
port=$((20000 + RANDOM % 20000))
start() { # serve's arguments
	"$bin/serve" -listen "127.0.0.1:$port" -grpc "" "$@" 2>>"$bin/serve.log" &
	pid=$!
	for _ in $(seq 600); do curl -sf "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
}
load() { "$bin/serveload" -url "http://127.0.0.1:$port/predict?model=a" -test "$bin/test.grp" -candidates 150 -in-flight 2 -duration "${secs}s"; }
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
results=()
for r in $(seq "$rounds"); do
	start -store "a=$bin/a"
	results+=("alone $(load)")
	kill $pid; wait $pid 2>/dev/null || true
	start -models "$bin/models.yaml" -poll 500ms
	results+=("idle $(load)")
	before=$(grep -c 'model switched in.*model=b' "$bin/serve.log" || true)
	(i=0; while true; do i=$((i + 1)); models $((8 + i % 2)); sleep 2; done) &
	toggler=$!
	results+=("reloading $(load)")
	kill $toggler; wait $toggler 2>/dev/null || true
	after=$(grep -c 'model switched in.*model=b' "$bin/serve.log" || true)
	echo "round $r: b reloaded $((after - before)) times while a was measured"
	kill $pid; wait $pid 2>/dev/null || true
	models 8
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "${results[@]}" <<'PY'
import json, sys
rows = {}
for arg in sys.argv[1:]:
    name, js = arg.split(" ", 1)
    rows.setdefault(name, []).append(json.loads(js))
alone = sum(r["requests_per_second"] for r in rows["alone"]) / len(rows["alone"])
print("| model a | requests/s | x alone | p50 ms | p99 ms | max ms | errors |")
print("|---|---|---|---|---|---|---|")
for name in ["alone", "idle", "reloading"]:
    for r in rows[name]:
        print("| %s | %.0f | %.2f | %.2f | %.2f | %.1f | %d |" % (name, r["requests_per_second"], r["requests_per_second"] / alone,
              r["p50_ms"], r["p99_ms"], r["max_ms"], r["errors"]))
PY
