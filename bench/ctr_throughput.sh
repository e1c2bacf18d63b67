#!/usr/bin/env bash
# Throughput on the XDL paper's model (23 fields x 18 dims, MLP 200-80-1,
# batch 256, Adagrad for embeddings, Adam for the MLP) over generated data
# written to a libFFM file: ours (two AMS shards and one worker over
# loopback gRPC, in one process; training time only, data already parsed,
# evaluation excluded) against the PyTorch CPU reference on the same file,
# in the same run, and ours again with the 10 user fields compressed
# (bench/configs/ctr_levels.yaml: streamed in order, one level-1 node per
# run of a user). The last line is the ratio of the plain run.
#
# Usage: bench/ctr_throughput.sh [train_samples] [test_samples] [data_config.yaml]
# (the optional YAML's data: section shapes the generated data, e.g.
#  `data: {mean_bag: 20}` for heavier multi-hot bags)
# Needs: /usr/bin/python3 with python3-torch, python3-numpy, libopenblas0-pthread
# (apt-get install -y python3-torch python3-numpy libopenblas0-pthread).
set -euo pipefail
cd "$(dirname "$0")/.."
ntrain=${1:-200000}
ntest=${2:-20000}
gencfg=()
if [ -n "${3:-}" ]; then gencfg=(-config "$3"); fi
out=bench/out
mkdir -p "$out"
go build -o "$out/ctrgen" ./cmd/ctrgen
go build -o "$out/worker" ./cmd/worker
train="$out/ctr_train.libffm"
test="$out/ctr_test.libffm"
"$out/ctrgen" "${gencfg[@]}" -train "$train" -test "$test" -train-samples "$ntrain" -test-samples "$ntest"
echo "load: $(cat /proc/loadavg)"
ours=$("$out/worker" -local -quiet -json -train "$train" -test "$test" -format libffm \
	-dim 18 -hidden 200,80 -batch-size 256 -epochs 1 | tail -n 1)
echo "ours: $ours"
# The same, with the user fields compressed (only for the default data shape).
packed='{}'
if [ -z "${3:-}" ]; then
	packed=$("$out/worker" -local -quiet -json -train "$train" -test "$test" -format libffm \
		-dim 18 -hidden 200,80 -batch-size 256 -epochs 1 -config bench/configs/ctr_levels.yaml | tail -n 1)
	echo "ours, user fields compressed: $packed"
fi
echo "load: $(cat /proc/loadavg)"
peer=$(OPENBLAS_NUM_THREADS=$(nproc) /usr/bin/python3 ../shared/peers/torch_ctr.py --train "$train" --test "$test" \
	--format libffm --dim 18 --hidden 200,80 --batch 256 --epochs 1 --threads "$(nproc)" | tail -n 1)
echo "peer: $peer"
/usr/bin/python3 - "$ours" "$peer" "$packed" <<'PY'
import json, sys
o, p, c = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
print(f"ours {o['samples_per_second']:.0f} samples/s (AUC {o['test_auc']:.4f}), "
      f"pytorch {p['samples_per_second']:.0f} samples/s (AUC {p['test_auc']:.4f})")
if c:
    print(f"ours with user fields compressed {c['samples_per_second']:.0f} samples/s (AUC {c['test_auc']:.4f}), "
          f"ratio {c['samples_per_second'] / p['samples_per_second']:.2f}")
print(f"ratio {o['samples_per_second'] / p['samples_per_second']:.2f}")
PY
