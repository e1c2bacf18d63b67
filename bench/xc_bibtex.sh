#!/usr/bin/env bash
# Bibtex quality (issue 7): P@1/3/5 on the test split of ours, with the
# SLIDE output layer trained densely (sparsity 1) and sparsely (sparsity
# 0.2), and of the PyTorch dense-softmax reference (torch_xc.py --hidden 512
# --lr 0.001 --epochs 40), in the same run. Prints one line per model.
#
# Usage: bench/xc_bibtex.sh [extra worker flags...]
# Needs ../shared/data/bibtex and /usr/bin/python3 with python3-torch,
# python3-numpy and libopenblas0-pthread.
set -euo pipefail
cd "$(dirname "$0")/.."
data=../shared/data/bibtex
if [ ! -f "$data/train.txt" ]; then
	echo "xc_bibtex: $data is absent; nothing to measure" >&2
	exit 1
fi
out=bench/out
mkdir -p "$out"
go build -o "$out/worker" ./cmd/worker
echo "load before: $(uptime)"
for sp in 1 0.2; do
	o=$("$out/worker" -local -quiet -json -config bench/configs/xc_bibtex.yaml -sparsity "$sp" \
		-train "$data/train.txt" -test "$data/test.txt" "$@" | tail -n 1)
	echo "$o" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin); e = r["test"]; d = e["dense"]
s = e.get("sparse")
line = "ours sparsity %s: dense inference P@1 %.4f P@3 %.4f P@5 %.4f" % (sys.argv[1], d["p1"], d["p3"], d["p5"])
if s: line += "; sparse inference P@1 %.4f P@3 %.4f P@5 %.4f" % (s["p1"], s["p3"], s["p5"])
print(line + "; %.0f samples/s, %d epochs" % (r["samples_per_second"], r["epochs"]))' "$sp"
	echo "load: $(uptime)"
done
p=$(OPENBLAS_NUM_THREADS=$(nproc) /usr/bin/python3 ../shared/peers/torch_xc.py --train "$data/train.txt" \
	--test "$data/test.txt" --hidden 512 --lr 0.001 --epochs 40 --threads "$(nproc)" | tail -n 1)
echo "$p" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
print("pytorch reference: P@1 %.4f P@3 %.4f P@5 %.4f; %.0f samples/s, %d epochs" % (r["p@1"], r["p@3"], r["p@5"], r["samples_per_second"], r["epochs"]))'
echo "load after: $(uptime)"
