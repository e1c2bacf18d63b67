#!/usr/bin/env bash
# Training data larger than memory (issue 26): the window shuffle (the
# default, train.shuffle with train.shuffle_window) against the whole data
# in memory (train.in_memory) and no shuffle, in one run.
#
#   1. quality: MovieLens-100K groups in user order (bench/configs/
#      movielens.yaml, 3 seeds) and a generated file sorted by user; test AUC
#      with a window of about a tenth of the data, the default window (which
#      holds all of it), the whole data in memory, and shuffle: false.
#   2. speed: samples/s of the window shuffle and of the in-memory mode on
#      the same generated file (3 alternating runs each).
#   3. memory: a worker process (separate etcd, 2 shards and scheduler)
#      with GOMEMLIMIT trains a file at least 3x that limit to its end,
#      shuffled through a window; its peak RSS (/usr/bin/time) against the
#      window's size. The in-memory mode on the same file is refused before
#      it loads.
#
# Usage: bench/shuffle.sh [quality|speed|memory ...] (default: all three)
# Needs ../shared/data/ml-100k for the MovieLens part (skipped without it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out/shuffle
mkdir -p "$out"
go build -o "$out/" ./cmd/worker ./cmd/ctrgen ./cmd/movielens ./cmd/etcd ./cmd/ams ./cmd/scheduler
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(quality speed memory)
json() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(" ".join(str(d[k]) for k in sys.argv[1:]))' "$@"; }

# run ARGS...: one -local job, its JSON summary's test AUC and samples/s.
run() { "$out/worker" -local -quiet -json "$@" | json test_auc samples_per_second; }

quality() {
	echo "## quality (load: $(cat /proc/loadavg))"
	local data=../shared/data/ml-100k
	if [ -f "$data/ua.base" ]; then
		"$out/movielens" -data "$data" -out "$out/ml" >/dev/null
		local ml=(-config bench/configs/movielens.yaml -train "$out/ml/ua.base.group" -test "$out/ml/ua.test.group")
		local w=$(( $(stat -c %s "$out/ml/ua.base.group") / 20 )) # payload is about half the text: a tenth of the data
		for seed in 1 2 3; do
			echo "movielens seed $seed | window $w: $(run "${ml[@]}" -seed "$seed" -set train.shuffle_window=$w)" \
				"| default window: $(run "${ml[@]}" -seed "$seed")" \
				"| in memory: $(run "${ml[@]}" -seed "$seed" -set train.in_memory=true)" \
				"| no shuffle: $(run "${ml[@]}" -seed "$seed" -set train.shuffle=false)"
		done
	else
		echo "movielens: $data is absent; skipped"
	fi
	# A generated file sorted by user: its user fields (the first 10)
	# sort the lines, so that each user's samples are consecutive.
	"$out/ctrgen" -train "$out/gen.libffm" -test "$out/gen-test.libffm" -train-samples 500000 >/dev/null
	sort -s -k2,11 "$out/gen.libffm" > "$out/gen-sorted.libffm"
	local g=(-train "$out/gen-sorted.libffm" -test "$out/gen-test.libffm" -set model.field_levels=1,1,1,1,1,1,1,1,1,1)
	local w=$(( $(stat -c %s "$out/gen-sorted.libffm") / 30 ))
	for seed in 1 2; do
		echo "generated sorted by user seed $seed | window $w: $(run "${g[@]}" -seed "$seed" -set train.shuffle_window=$w)" \
			"| default window: $(run "${g[@]}" -seed "$seed")" \
			"| in memory: $(run "${g[@]}" -seed "$seed" -set train.in_memory=true)" \
			"| no shuffle: $(run "${g[@]}" -seed "$seed" -set train.shuffle=false)"
	done
}

speed() {
	echo "## speed (load: $(cat /proc/loadavg))"
	[ -f "$out/gen.libffm" ] || "$out/ctrgen" -train "$out/gen.libffm" -test "$out/gen-test.libffm" -train-samples 500000 >/dev/null
	local g=(-train "$out/gen.libffm" -test "$out/gen-test.libffm" -epochs 3)
	local w=$(( $(stat -c %s "$out/gen.libffm") / 30 ))
	for i in 1 2 3; do
		echo "run $i | window $w: $(run "${g[@]}" -set train.shuffle_window=$w)" \
			"| in memory: $(run "${g[@]}" -set train.in_memory=true)"
	done
	echo "load: $(cat /proc/loadavg)"
}

memory() {
	echo "## memory (load: $(cat /proc/loadavg))"
	local limit=$((384 << 20)) window=$((64 << 20)) samples=${MEMORY_SAMPLES:-4000000}
	local f="$out/big.libffm"
	[ -f "$f" ] || "$out/ctrgen" -train "$f" -test "$out/big-test.libffm" -train-samples "$samples" -test-samples 20000 >/dev/null
	local size=$(stat -c %s "$f")
	echo "training file $((size >> 20)) MiB, GOMEMLIMIT $((limit >> 20)) MiB ($(python3 -c "print(f'{$size/$limit:.1f}')")x), window $((window >> 20)) MiB"
	local e=127.0.0.1:$((20000 + RANDOM % 20000))
	"$out/etcd" -addr "$e" >/dev/null 2>&1 &
	local etcd=$!
	# job NAME ARGS...: a scheduler and 2 shards for cluster NAME, and the
	# worker with ARGS under /usr/bin/time.
	job() {
		local name=$1 pids=()
		shift
		"$out/scheduler" -etcd "$e" -cluster "$name" -shards 2 -train "$f" -workers 1 >"$out/sched-$name.log" 2>&1 &
		pids+=($!)
		for i in 0 1; do
			"$out/ams" -etcd "$e" -cluster "$name" -id "ams-$i" >/dev/null 2>&1 &
			pids+=($!)
		done
		GOMEMLIMIT=$limit /usr/bin/time -f "worker peak RSS %M KiB, %e s" "$out/worker" -etcd "$e" -cluster "$name" \
			-train "$f" -test "$out/big-test.libffm" -quiet "$@" 2>&1 | tail -n 3
		kill "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
	}
	job window -set train.shuffle_window=$window
	echo "the same without a shuffle (the worker's overhead: the test set, the pipeline's batches, buffers):"
	job noshuffle -set train.shuffle=false
	echo "the in-memory mode on the same file, with train.memory_limit half of GOMEMLIMIT:"
	GOMEMLIMIT=$limit "$out/worker" -local -quiet -train "$f" -test "$out/big-test.libffm" -set train.in_memory=true 2>&1 | tail -n 2 || true
	kill "$etcd" 2>/dev/null || true
	wait 2>/dev/null || true
}

for p in "${parts[@]}"; do "$p"; done
