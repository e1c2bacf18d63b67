#!/usr/bin/env bash
# The data plane (issue 50): the XDL paper's model (23 fields x 18 dims,
# MLP 414-200-80-1, Adagrad rows, Adam MLP) over generated data, trained
# by one worker in one process calling its embedded shards directly
# (`worker -local`) and in separate processes (cmd/etcd, cmd/scheduler,
# two cmd/ams, one cmd/worker over loopback gRPC), alternated, ROUNDS
# rounds (default 3) at each batch size (BATCHES, default "256 5000").
#
# Per run: training samples/s; CPU seconds per 1M samples summed over
# every process of the run (the worker's from /usr/bin/time, the others'
# from /proc); the worker's wait on pulls as a share of its training time
# (fetch_wait_seconds / seconds); heap allocations per batch of the worker
# (its allocs_per_batch, whole process) and of the two shards together
# (go_memstats_mallocs_total from their /metrics, before and after the
# worker, per trained batch). Then, per batch size, the medians and the
# ratios separate / direct.
#
# With OLD=REV the separate shape also runs on REV's binaries (a git
# worktree in bench/out/old), alternated with the others: the data plane
# before and after.
#
# KIND trains another kind of the zoo (model.kind; default the XDL
# model, mlp). EXTRA adds worker flags to every run (both shapes).
#
# With PEER=1 each round also runs ../shared/peers/torch_zoo.py (--model
# KIND, the same files, dims, hidden layers, batch and epochs; needs
# /usr/bin/python3 with python3-torch, python3-numpy and
# libopenblas0-pthread), and the summary gives each shape's ratio to it.
#
# Usage: [ROUNDS=3] [BATCHES="256 5000"] [OLD=REV] [KIND=mlp] [PEER=1] [EXTRA=...] bench/dataplane.sh [train_samples]
# (default 1000000). Writes bench/out/dataplane.jsonl, one line per run.
set -euo pipefail
cd "$(dirname "$0")/.."
ntrain=${1:-1000000}
rounds=${ROUNDS:-3}
batches=${BATCHES:-256 5000}
out=bench/out
mkdir -p "$out/new"
for c in etcd scheduler ams worker ctrgen; do go build -o "$out/new/$c" "./cmd/$c"; done
shapes="direct separate"
if [ -n "${OLD:-}" ]; then
	rm -rf "$out/old-src"
	git worktree add -f --detach "$out/old-src" "$OLD" >/dev/null 2>&1
	mkdir -p "$out/old"
	for c in ams worker; do (cd "$out/old-src" && go build -o "../old/$c" "./cmd/$c"); done
	git worktree remove --force "$out/old-src"
	shapes="direct separate old"
fi
train="$out/dp_train.libffm"
test="$out/dp_test.libffm"
[ -s "$train" ] && [ "$(wc -l <"$train")" = "$ntrain" ] ||
	"$out/new/ctrgen" -train "$train" -test "$test" -train-samples "$ntrain" -test-samples 10000 >/dev/null
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
cpu() { # user+system seconds of process $1
	awk -v t="$(getconf CLK_TCK)" '{print ($14 + $15) / t}' "/proc/$1/stat"
}
mallocs() { # go_memstats_mallocs_total of the process serving /metrics at $1
	curl -s "http://$1/metrics" | awk '/^go_memstats_mallocs_total/ {print $2}'
}
port() { echo $((20000 + RANDOM % 10000)); }
kind=${KIND:-mlp}
model=(-format libffm -dim 18 -hidden 200,80 -epochs 1 -test "$test" -set model.kind="$kind" ${EXTRA:-})
[ -z "${PEER:-}" ] || shapes="$shapes peer"
results="$out/dataplane.jsonl"
: >"$results"
echo "cores: $(nproc); train samples: $ntrain; rounds: $rounds; load before: $(cat /proc/loadavg)"

direct() { # batch
	/usr/bin/time -o "$work/wtime" -f '%e %U %S' "$out/new/worker" -local -quiet -json -train "$train" \
		"${model[@]}" -batch-size "$1" | tail -n 1 >"$work/run.json"
	read -r _ u s <"$work/wtime"
	echo "{\"cpu\": $(echo "$u + $s" | bc), \"shard_mallocs\": 0}" >"$work/cpu.json"
}

peer() { # batch: torch_zoo.py on the same files and shape
	local cross=()
	[ "$kind" = dcnv2 ] && cross=(--cross-layers 2)
	/usr/bin/time -o "$work/wtime" -f '%e %U %S' env OPENBLAS_NUM_THREADS="$(nproc)" /usr/bin/python3 \
		../shared/peers/torch_zoo.py --model "$kind" --train "$train" --test "$test" --format libffm --dim 18 \
		--hidden 200,80 --epochs 1 --batch "$1" --threads "$(nproc)" "${cross[@]}" | tail -n 1 >"$work/run.json"
	read -r _ u s <"$work/wtime"
	echo "{\"cpu\": $(echo "$u + $s" | bc), \"shard_mallocs\": 0}" >"$work/cpu.json"
}

separate() { # batch bindir
	local b=$1 bin=$2 e s a0 a1 h0 h1
	e=127.0.0.1:$(port)
	"$out/new/etcd" -addr "$e" >"$work/etcd.log" 2>&1 &
	local etcd=$!
	"$out/new/scheduler" -etcd "$e" -shards 2 -workers 1 -train "$train" >"$work/scheduler.log" 2>&1 &
	s=$!
	h0=127.0.0.1:$(port)
	h1=127.0.0.1:$(port)
	"$bin/ams" -etcd "$e" -id ams-0 -listen 127.0.0.1:0 -http "$h0" >"$work/ams0.log" 2>&1 &
	a0=$!
	"$bin/ams" -etcd "$e" -id ams-1 -listen 127.0.0.1:0 -http "$h1" >"$work/ams1.log" 2>&1 &
	a1=$!
	pids=($etcd $s $a0 $a1)
	until curl -sf "http://$h0/metrics" >/dev/null && curl -sf "http://$h1/metrics" >/dev/null; do sleep 0.2; done
	local m0 m1
	m0=$(mallocs "$h0")
	m1=$(mallocs "$h1")
	/usr/bin/time -o "$work/wtime" -f '%e %U %S' "$bin/worker" -etcd "$e" -quiet -json -train "$train" \
		"${model[@]}" -batch-size "$b" >"$work/sep.out" 2>"$work/worker.log" ||
		{ echo "separate worker failed:"; tail -n 20 "$work/worker.log"; exit 1; }
	tail -n 1 "$work/sep.out" >"$work/run.json"
	read -r _ u w <"$work/wtime"
	local total
	total=$(echo "$u + $w + $(cpu $a0) + $(cpu $a1) + $(cpu $s) + $(cpu $etcd)" | bc)
	echo "{\"cpu\": $total, \"shard_mallocs\": $(echo "$(mallocs "$h0") - $m0 + $(mallocs "$h1") - $m1" | bc)}" >"$work/cpu.json"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	pids=()
}

for round in $(seq "$rounds"); do
	for b in $batches; do
		for shape in $shapes; do
			case $shape in
			direct) direct "$b" ;;
			separate) separate "$b" "$out/new" ;;
			old) separate "$b" "$out/old" ;;
			peer) peer "$b" ;;
			esac
			/usr/bin/python3 - "$shape" "$b" "$round" "$work" "$(cat /proc/loadavg)" >>"$results" <<'PY'
import json, sys
shape, b, rnd, work, load = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
r = json.load(open(f"{work}/run.json"))
c = json.load(open(f"{work}/cpu.json"))
if shape == "peer":  # torch_zoo.py's line: samples/s and AUC, no wait or batches
    r = {"samples_per_second": r["samples_per_second"], "samples": r["train_samples"], "fetch_wait_seconds": 0,
         "seconds": 1, "batches": 1, "test_auc": r["test_auc"]}
print(json.dumps({"shape": shape, "batch": b, "round": rnd, "samples_per_second": r["samples_per_second"],
    "cpu_s_per_1m": c["cpu"] / r["samples"] * 1e6, "fetch_wait": r["fetch_wait_seconds"] / r["seconds"],
    "worker_allocs_per_batch": r.get("allocs_per_batch"), "shard_allocs_per_batch": c["shard_mallocs"] / max(r["batches"], 1),
    "test_auc": r["test_auc"], "load": load}))
PY
			tail -n 1 "$results"
		done
	done
done
/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
def med(shape, b, k):
    v = [r[k] for r in runs if r["shape"] == shape and r["batch"] == b]
    return statistics.median(v) if v else float("nan")
for b in sorted({r["batch"] for r in runs}):
    d = med("direct", b, "samples_per_second")
    print(f"batch {b}: direct {d:,.0f} samples/s, {med('direct', b, 'cpu_s_per_1m'):.1f} CPU-s per 1M samples")
    p = med("peer", b, "samples_per_second")
    if p == p:
        print(f"  PyTorch (torch_zoo.py): {p:,.0f} samples/s; test AUC {med('peer', b, 'test_auc'):.4f}; "
              f"direct / PyTorch {d / p:.2f}, separate / PyTorch {med('separate', b, 'samples_per_second') / p:.2f}")
    for shape in ("separate", "old"):
        s = med(shape, b, "samples_per_second")
        if s != s:
            continue
        pairs = [x["samples_per_second"] / y["samples_per_second"] for x in runs for y in runs
                 if x["shape"] == shape and y["shape"] == "direct" and x["batch"] == b == y["batch"] and x["round"] == y["round"]]
        print(f"  {shape}: {s:,.0f} samples/s = {s / d:.2f} of direct (pairs {', '.join(f'{p:.2f}' for p in pairs)}); "
              f"CPU {med(shape, b, 'cpu_s_per_1m'):.1f} s per 1M = {med(shape, b, 'cpu_s_per_1m') / med('direct', b, 'cpu_s_per_1m'):.2f}x direct; "
              f"pull wait {med(shape, b, 'fetch_wait'):.0%} of training; allocs per batch: worker {med(shape, b, 'worker_allocs_per_batch'):.0f}, "
              f"shards {med(shape, b, 'shard_allocs_per_batch'):.0f}; test AUC {med(shape, b, 'test_auc'):.4f}")
PY
