#!/usr/bin/env bash
# Throughput on the XDL paper's model (23 fields x 18 dims, MLP 200-80-1,
# batch 256, Adagrad for embeddings, Adam for the MLP) over generated data
# written to a libFFM file: ours (two AMS shards and one worker in one
# process, `worker -local`: the worker calls the shards directly; training
# time only, data already parsed, evaluation excluded) against the PyTorch
# CPU reference on the same file, in the same run; ours again with pulls
# and pushes over loopback gRPC (`-local-grpc`), and ours with the 10 user
# fields compressed (bench/configs/ctr_levels.yaml: streamed in order, one
# level-1 node per run of a user). The last line is the ratio of the plain
# run.
#
# Usage: [BATCH=256] bench/ctr_throughput.sh [train_samples] [test_samples] [data_config.yaml]
# (the optional YAML's data: section shapes the generated data, e.g.
#  `data: {mean_bag: 20}` for heavier multi-hot bags)
# Needs: /usr/bin/python3 with python3-torch, python3-numpy, libopenblas0-pthread
# (apt-get install -y python3-torch python3-numpy libopenblas0-pthread).
set -euo pipefail
cd "$(dirname "$0")/.."
ntrain=${1:-200000}
ntest=${2:-20000}
batch=${BATCH:-256}
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
	-dim 18 -hidden 200,80 -batch-size "$batch" -epochs 1 | tail -n 1)
echo "ours: $ours"
overgrpc=$("$out/worker" -local -local-grpc -quiet -json -train "$train" -test "$test" -format libffm \
	-dim 18 -hidden 200,80 -batch-size "$batch" -epochs 1 | tail -n 1)
echo "ours over loopback gRPC: $overgrpc"
# The same, with the user fields compressed (only for the default data shape).
packed='{}'
if [ -z "${3:-}" ]; then
	packed=$("$out/worker" -local -quiet -json -train "$train" -test "$test" -format libffm \
		-dim 18 -hidden 200,80 -batch-size "$batch" -epochs 1 -config bench/configs/ctr_levels.yaml | tail -n 1)
	echo "ours, user fields compressed: $packed"
fi
echo "load: $(cat /proc/loadavg)"
peer=$(OPENBLAS_NUM_THREADS=$(nproc) /usr/bin/python3 ../shared/peers/torch_ctr.py --train "$train" --test "$test" \
	--format libffm --dim 18 --hidden 200,80 --batch "$batch" --epochs 1 --threads "$(nproc)" | tail -n 1)
echo "peer: $peer"
/usr/bin/python3 - "$ours" "$peer" "$packed" "$overgrpc" "$batch" <<'PY'
import json, sys
o, p, c, g = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
print(f"batch {sys.argv[5]}: ours {o['samples_per_second']:.0f} samples/s (AUC {o['test_auc']:.4f}, "
      f"fetch wait {o['fetch_wait_seconds']:.2f} of {o['seconds']:.2f} s), "
      f"pytorch {p['samples_per_second']:.0f} samples/s (AUC {p['test_auc']:.4f})")
print(f"ours over loopback gRPC {g['samples_per_second']:.0f} samples/s (AUC {g['test_auc']:.4f}, "
      f"fetch wait {g['fetch_wait_seconds']:.2f} of {g['seconds']:.2f} s), "
      f"ratio {g['samples_per_second'] / p['samples_per_second']:.2f}")
if c:
    print(f"ours with user fields compressed {c['samples_per_second']:.0f} samples/s (AUC {c['test_auc']:.4f}), "
          f"ratio {c['samples_per_second'] / p['samples_per_second']:.2f}")
print(f"ratio {o['samples_per_second'] / p['samples_per_second']:.2f}")
PY
