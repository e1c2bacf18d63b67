#!/usr/bin/env bash
# Speed of light (issue 30): how close the CTR trainer comes to the
# machine's compute limit, in one run, on the XDL paper's model (23 fields
# x 18 dims, MLP 414-200-80-1, Adagrad rows, Adam MLP) over generated data,
# at batch 256 and 5000:
#
#  1. the compute bound: the seconds OpenBLAS (../shared/peers/blas_gemm.py,
#     this run) takes for one batch's MLP GEMMs, forward (nn), weight
#     gradient (tn) and input gradient (nt) of each layer, give the samples/s
#     the MLP's FLOPs allow; ours is reported as a fraction of it;
#  2. ours in one process with the worker calling the embedded shards
#     directly (`worker -local`), and in separate processes (cmd/etcd,
#     cmd/scheduler, two cmd/ams, one cmd/worker over loopback gRPC) on the
#     same cores and file: samples/s (training only) and their ratio;
#  3. heap allocations per batch (the worker's allocs_per_batch: its whole
#     process, reading and evaluation included);
#  4. the compressed data's per-node bound (20 of the 23 fields at user
#     level, SOL_USER_RUN samples per user, default 20): the same GEMMs
#     with the first layer's user part over the batch's user nodes, and
#     ours in one process on that data;
#  5. the CPU seconds of each process of the separate run (/usr/bin/time
#     for the worker, /proc for the shards and the scheduler), per sample
#     and per pulled id: the per-core costs behind the capacity model in
#     BENCHMARKS.md ("Capacity model").
#
# Usage: bench/speed_of_light.sh [train_samples]   (default 1000000)
# Needs /usr/bin/python3 with python3-numpy and libopenblas0-pthread (installed
# here when missing and run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
ntrain=${1:-1000000}
out=bench/out
mkdir -p "$out"
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null || ! ldconfig -p | grep -q libopenblas; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && apt-get install -y -qq python3-numpy libopenblas0-pthread >/dev/null
	else
		echo "speed_of_light: needs python3-numpy and libopenblas0-pthread" >&2
		exit 1
	fi
fi
for c in etcd scheduler ams worker ctrgen; do go build -o "$out/$c" "./cmd/$c"; done
train="$out/sol_train.libffm"
test="$out/sol_test.libffm"
"$out/ctrgen" -train "$train" -test "$test" -train-samples "$ntrain" -test-samples 10000 >/dev/null
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
cpu() { # user+system seconds of process $1 (and its reaped children)
	awk -v t="$(getconf CLK_TCK)" '{print ($14 + $15 + $16 + $17) / t}' "/proc/$1/stat"
}
model=(-format libffm -dim 18 -hidden 200,80 -epochs 1 -test "$test")
echo "cores: $(nproc); train samples: $ntrain; load before: $(cat /proc/loadavg)"
for batch in 256 5000; do
	OPENBLAS_NUM_THREADS=$(nproc) /usr/bin/python3 ../shared/peers/blas_gemm.py \
		"${batch}x414x200" "${batch}x200x80" "${batch}x80x1" >"$work/blas.json"
	"$out/worker" -local -quiet -json -train "$train" "${model[@]}" -batch-size "$batch" | tail -n 1 >"$work/direct.json"
	echo "load after the direct run: $(cat /proc/loadavg)"
	port=$((23000 + RANDOM % 2000))
	"$out/etcd" -addr "127.0.0.1:$port" >"$work/etcd.log" 2>&1 &
	pids+=($!)
	etcd=127.0.0.1:$port
	"$out/scheduler" -etcd "$etcd" -shards 2 -workers 1 -train "$train" >"$work/scheduler.log" 2>&1 &
	sched=$!
	pids+=($sched)
	"$out/ams" -etcd "$etcd" -id ams-0 -listen 127.0.0.1:0 >"$work/ams0.log" 2>&1 &
	a0=$!
	"$out/ams" -etcd "$etcd" -id ams-1 -listen 127.0.0.1:0 >"$work/ams1.log" 2>&1 &
	a1=$!
	pids+=($a0 $a1)
	/usr/bin/time -o "$work/wtime" -f '%e %U %S' "$out/worker" -etcd "$etcd" -quiet -json -train "$train" \
		"${model[@]}" -batch-size "$batch" >"$work/sep.out" 2>"$work/worker.log" ||
		{ echo "separate worker failed:"; tail -n 20 "$work/worker.log"; exit 1; }
	tail -n 1 "$work/sep.out" >"$work/sep.json"
	echo "{\"ams0\": $(cpu $a0), \"ams1\": $(cpu $a1), \"scheduler\": $(cpu $sched)}" >"$work/cpu.json"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	pids=()
	echo "load after the separate run: $(cat /proc/loadavg)"
	/usr/bin/python3 - "$batch" "$work" <<'PY'
import json, sys
batch, work = int(sys.argv[1]), sys.argv[2]
blas = [json.loads(l) for l in open(f"{work}/blas.json")]
# One batch's MLP: every layer's forward (nn) and weight gradient (tn); the
# input gradient (nt) of every layer (the first one's feeds the embeddings).
secs = sum(r["seconds"] for r in blas)
flops = sum(2 * r["m"] * r["k"] * r["n"] for r in blas)
bound = batch / secs
direct = json.load(open(f"{work}/direct.json"))
sep = json.load(open(f"{work}/sep.json"))
cpu = json.load(open(f"{work}/cpu.json"))
wall, wu, ws = (float(x) for x in open(f"{work}/wtime").read().split()[-3:])
d, s = direct["samples_per_second"], sep["samples_per_second"]
print(f"batch {batch}: compute bound {bound:,.0f} samples/s (OpenBLAS {flops / secs / 1e9:.0f} GFLOP/s over "
      f"{flops / batch / 1e3:.0f} kFLOP a sample); ours direct {d:,.0f} samples/s = {d / bound:.2f} of the bound; "
      f"separate processes {s:,.0f} samples/s = {s / bound:.2f} of the bound, {s / d:.2f}x direct")
n = sep["samples"]
ids = sep.get("unique_ids_per_batch", 0) / batch
shard_cpu = cpu["ams0"] + cpu["ams1"]
print(f"  separate run: {n:,} samples in {sep['seconds']:.1f} s of training; unique ids per sample {ids:.2f}; "
      f"shards' CPU {shard_cpu:.1f} s ({shard_cpu / n * 1e6:.2f} us a sample, "
      f"{shard_cpu / max(n * ids, 1) * 1e9:.0f} ns per pulled-and-pushed id); worker CPU {wu + ws:.1f} s "
      f"({(wu + ws) / n * 1e6:.2f} us a sample, wall {wall:.1f} s, with reading the file and the test set); "
      f"scheduler CPU {cpu['scheduler']:.1f} s")
print(f"  heap allocations per batch (whole process, reading and evaluation included): direct "
      f"{direct.get('allocs_per_batch', float('nan')):.0f}, separate worker {sep.get('allocs_per_batch', float('nan')):.0f}")
print("SOL_JSON " + json.dumps({"batch": batch, "bound": bound, "gflops": flops / secs / 1e9, "direct": d,
      "separate": s, "ids_per_sample": ids, "shard_cpu_s": shard_cpu, "worker_cpu_s": wu + ws, "samples": n}))
PY
done
# The compressed data's per-node bound: 20 of the 23 fields at user level,
# each user's samples consecutive (samples_per_user), in the sample-group
# format streamed in order, as bench/compression.sh. The first layer's
# user part (360 of its 414 inputs) runs once per user node, so the bound
# times, at OpenBLAS's speed, the GEMMs of one batch as the worker runs
# them: the user part over the batch's user nodes (U = batch / the
# measured samples per node), the rest over its samples.
comp="$work/compressed.yaml"
cat >"$comp" <<YAML
data: {fields: 23, user_fields: 20, samples_per_user: ${SOL_USER_RUN:-20}, train_samples: $ntrain, test_samples: 10000}
train: {shuffle: false, format: group}
YAML
"$out/ctrgen" -config "$comp" -format group -train "$out/sol_comp.train" -test "$out/sol_comp.test" >/dev/null 2>&1
for batch in 256 5000; do
	"$out/worker" -local -quiet -json -config "$comp" -train "$out/sol_comp.train" -test "$out/sol_comp.test" \
		-dim 18 -hidden 200,80 -epochs 1 -batch-size "$batch" | tail -n 1 >"$work/comp.json"
	users=$(/usr/bin/python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); n = o["nodes_per_level"]; print(max(1, round(int(sys.argv[2]) * n[1] / n[0])))' "$work/comp.json" "$batch")
	OPENBLAS_NUM_THREADS=$(nproc) /usr/bin/python3 ../shared/peers/blas_gemm.py \
		"${users}x360x200" "${batch}x54x200" "${batch}x200x80" "${batch}x80x1" >"$work/blas.json"
	/usr/bin/python3 - "$batch" "$users" "$work" <<'PY'
import json, sys
batch, users, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
blas = [json.loads(l) for l in open(f"{work}/blas.json")]
secs = sum(r["seconds"] for r in blas)
flops = sum(2 * r["m"] * r["k"] * r["n"] for r in blas)
bound = batch / secs
o = json.load(open(f"{work}/comp.json"))
d = o["samples_per_second"]
print(f"compressed data, batch {batch}: {batch / users:.1f} samples per user node; per-node compute bound {bound:,.0f} samples/s "
      f"(OpenBLAS {flops / secs / 1e9:.0f} GFLOP/s over {flops / batch / 1e3:.0f} kFLOP a sample); ours direct {d:,.0f} "
      f"samples/s = {d / bound:.2f} of the bound; test AUC {o['test_auc']:.4f}")
print("SOL_COMP_JSON " + json.dumps({"batch": batch, "users_per_batch": users, "bound": bound, "gflops": flops / secs / 1e9,
      "direct": d, "samples": o["samples"]}))
PY
done
echo "load after: $(cat /proc/loadavg)"
