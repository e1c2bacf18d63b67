#!/usr/bin/env bash
# SLIDE output layer speed on the Amazon-670K shape (issue 7), ours against
# the PyTorch dense-softmax reference in the same run, on the same files:
#
#   - training samples/s over the same 40 batches of 128 (hidden 128,
#     sparsity 0.005; ours: bench/configs/xc_670k.yaml, two AMS shards and
#     the worker in one process; reference: torch_xc.py --max-batches 40);
#   - P@1 of the 40-batch models on the first 1,000 test samples, ours with
#     sparse and dense inference, and the latency of one prediction
#     (batch of 1: ours pulls the sample's rows from the shards, runs the
#     dense layers and the top-5 of the output layer);
#   - peak RSS of both processes (/usr/bin/time -v).
#
# Usage: bench/slide.sh [extra worker flags...]
# The data (cmd/xcgen, seed 1: 5,120 training samples = 40 batches, 1,000
# test samples) is written to bench/out/xc670k once. Needs /usr/bin/python3
# with python3-torch, python3-numpy and libopenblas0-pthread, and about
# 8 GB of memory.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
data=$out/xc670k
mkdir -p "$data"
go build -o "$out/worker" ./cmd/worker
go build -o "$out/xcgen" ./cmd/xcgen
if [ ! -f "$data/test.txt" ]; then
	"$out/xcgen" -quiet -out "$data/train.txt" -samples 5120 -test-out "$data/test.txt" -test-samples 1000
fi
threads=$(nproc)
echo "load before ours: $(uptime)"
/usr/bin/time -v -o "$out/xc670k/ours.time" "$out/worker" -local -quiet -json -config bench/configs/xc_670k.yaml \
	-train "$data/train.txt" -test "$data/test.txt" "$@" | tail -n 1 > "$out/xc670k/ours.json"
echo "load before reference: $(uptime)"
OPENBLAS_NUM_THREADS=$threads /usr/bin/time -v -o "$out/xc670k/ref.time" /usr/bin/python3 ../shared/peers/torch_xc.py \
	--train "$data/train.txt" --test "$data/test.txt" --hidden 128 --batch 128 --epochs 1 --max-batches 40 \
	--test-limit 1000 --threads "$threads" | tail -n 1 > "$out/xc670k/ref.json"
echo "load after: $(uptime)"
/usr/bin/python3 - "$out/xc670k" <<'PY'
import json, re, sys
d = sys.argv[1]
o = json.load(open(d + "/ours.json"))
p = json.load(open(d + "/ref.json"))
def rss(f):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(f).read())
    return int(m.group(1)) / 1024 / 1024
e = o["test"]
sp, dn = e.get("sparse") or {}, e.get("dense") or {}
print("| figure | ours | PyTorch reference | ours / reference |")
print("|---|---|---|---|")
print("| training samples/s (40 batches of 128) | %.0f | %.1f | %.1fx |" % (o["samples_per_second"], p["samples_per_second"], o["samples_per_second"] / p["samples_per_second"]))
print("| one-sample latency, sparse inference (ms) | %.2f | | %.3f |" % (e["sparse_latency_ms"], e["sparse_latency_ms"] / p["latency_ms_batch1"]))
print("| one-sample latency, dense inference (ms) | %.2f | %.2f | %.2f |" % (e["dense_latency_ms"], p["latency_ms_batch1"], e["dense_latency_ms"] / p["latency_ms_batch1"]))
print("| batched scoring per sample, sparse / dense (ms) | %.3f / %.3f | %.4f (dense, batches of 256) | |" % (e["sparse_batched_ms_per_sample"], e["dense_batched_ms_per_sample"], p["latency_ms_per_sample_batch256"]))
print("| test P@1 after 40 batches, sparse / dense inference | %.4f / %.4f | %.4f | |" % (sp.get("p1", 0), dn.get("p1", 0), p["p@1"]))
print("| peak RSS (GiB) | %.2f | %.2f | %.2f |" % (rss(d + "/ours.time"), rss(d + "/ref.time"), rss(d + "/ours.time") / rss(d + "/ref.time")))
print("ours: K=%d L=%d R=%d, layer %.0f MB; phases of the train stage (s): %s; LSH recall of the exact top-1/top-5: %.3f/%.3f" % (
    o["k"], o["l"], o["r"], o["layer_bytes"] / 1e6, json.dumps(o["phases"]), e.get("recall_top1", 0), e.get("recall_top5", 0)))
print("speed ratio %.1fx (target >= 10x); sparse latency %.2f ms (target < 5 ms)" % (o["samples_per_second"] / p["samples_per_second"], e["sparse_latency_ms"]))
PY
