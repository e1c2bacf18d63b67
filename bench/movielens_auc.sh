#!/usr/bin/env bash
# MovieLens-100K quality (issue 3): ua.base to train, ua.test to test,
# label = rating >= 4; level 1 = user id, age, gender, occupation, zip;
# level 0 = item id and its genres. Ours trains from the sample-group
# format (bench/configs/movielens.yaml, one process: two AMS shards + one
# worker); the PyTorch CPU reference trains on the same samples written as
# libFFM, with the same dims, MLP, optimizers and epochs. Three seeds each,
# in the same run. Prints a markdown table and the mean AUCs.
#
# Usage: [SEEDS="1 2 3 4 5"] bench/movielens_auc.sh [extra worker flags...]
# Needs ../shared/data/ml-100k and /usr/bin/python3 with python3-torch,
# python3-numpy and libopenblas0-pthread.
set -euo pipefail
cd "$(dirname "$0")/.."
data=../shared/data/ml-100k
if [ ! -f "$data/ua.base" ]; then
	echo "movielens_auc: $data is absent; nothing to measure" >&2
	exit 1
fi
out=bench/out
mkdir -p "$out/ml"
go build -o "$out/worker" ./cmd/worker
go run ./cmd/movielens -data "$data" -out "$out/ml"
epochs=5
echo "load: $(cat /proc/loadavg)"
rows=()
for seed in ${SEEDS:-1 2 3}; do
	o=$("$out/worker" -local -quiet -json -config bench/configs/movielens.yaml \
		-train "$out/ml/ua.base.group" -test "$out/ml/ua.test.group" -seed "$seed" "$@" | tail -n 1)
	p=$(OPENBLAS_NUM_THREADS=$(nproc) /usr/bin/python3 ../shared/peers/torch_ctr.py --format libffm \
		--train "$out/ml/ua.base.libffm" --test "$out/ml/ua.test.libffm" \
		--dim 18 --hidden 200,80 --epochs "$epochs" --threads "$(nproc)" --seed "$seed" | tail -n 1)
	rows+=("$seed|$o|$p")
done
echo "load: $(cat /proc/loadavg)"
/usr/bin/python3 - "${rows[@]}" <<'PY'
import json, sys
print("| seed | ours AUC | ours logloss | ours samples/s | samples per user node | PyTorch AUC | PyTorch logloss | PyTorch samples/s |")
print("|---|---|---|---|---|---|---|---|")
oa, pa = [], []
for r in sys.argv[1:]:
    seed, o, p = r.split("|", 2)
    o, p = json.loads(o), json.loads(p)
    nodes = o["nodes_per_level"]
    print(f"| {seed} | {o['test_auc']:.4f} | {o['test_logloss']:.4f} | {o['samples_per_second']:.0f} | "
          f"{nodes[0] / nodes[1]:.1f} | {p['test_auc']:.4f} | {p['test_logloss']:.4f} | {p['samples_per_second']:.0f} |")
    oa.append(o["test_auc"]); pa.append(p["test_auc"])
print(f"mean AUC: ours {sum(oa)/len(oa):.4f}, PyTorch {sum(pa)/len(pa):.4f}")
PY
