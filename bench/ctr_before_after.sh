#!/usr/bin/env bash
# CTR training throughput of two revisions of the worker, alternating, back
# to back on one machine and one data file (the XDL paper's model as in
# bench/ctr_throughput.sh: `worker -local`, 23 fields x 18 dims, MLP
# 200-80-1, Adagrad/Adam, 1 epoch), with the PyTorch reference once in the
# same run. Prints each run's samples/s and, per pair, after/before.
#
# Usage: [BATCH=256] [ROUNDS=3] bench/ctr_before_after.sh BEFORE_REV [AFTER_REV] [train_samples]
# AFTER_REV defaults to the working tree. Needs the peer's python3-torch
# (see bench/ctr_throughput.sh) for the reference line; without it that
# line is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: bench/ctr_before_after.sh BEFORE_REV [AFTER_REV] [train_samples]}
after=${2:-}
ntrain=${3:-200000}
batch=${BATCH:-256}
rounds=${ROUNDS:-3}
out=bench/out/before_after
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/before" >/dev/null 2>&1 || true; git worktree remove --force "$tmp/after" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
build() { # rev dest
	if [ -z "$1" ]; then go build -o "$2" ./cmd/worker; return; fi
	git worktree add --detach "$tmp/$(basename "$2")" "$1" >/dev/null 2>&1
	(cd "$tmp/$(basename "$2")" && go build -o "$OLDPWD/$2" ./cmd/worker)
}
build "$before" "$out/before"
build "$after" "$out/after"
go build -o "$out/ctrgen" ./cmd/ctrgen
train="$out/train.libffm"
test="$out/test.libffm"
"$out/ctrgen" -train "$train" -test "$test" -train-samples "$ntrain" -test-samples 20000
run() {
	"$out/$1" -local -quiet -json -train "$train" -test "$test" -format libffm -dim 18 -hidden 200,80 \
		-batch-size "$batch" -epochs 1 | tail -n 1 |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_per_second"])'
}
for r in $(seq "$rounds"); do
	echo "load: $(cat /proc/loadavg)"
	b=$(run before)
	a=$(run after)
	echo "round $r: before $b samples/s, after $a samples/s, after/before $(/usr/bin/python3 -c "print(f'{$a/$b:.3f}')")"
done
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	OPENBLAS_NUM_THREADS=$(nproc) /usr/bin/python3 ../shared/peers/torch_ctr.py --train "$train" --test "$test" \
		--format libffm --dim 18 --hidden 200,80 --batch "$batch" --epochs 1 --threads "$(nproc)" | tail -n 1 |
		/usr/bin/python3 -c 'import json,sys; print("pytorch:", round(json.load(sys.stdin)["samples_per_second"]), "samples/s")'
fi
