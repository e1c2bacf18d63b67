#!/usr/bin/env bash
# The CTR model zoo against CPU PyTorch (issue 27): for each model.kind,
# ours (`worker -local`, two AMS shards + one worker in one process) and
# ../shared/peers/torch_zoo.py (--model KIND) on the same files, seeds and
# shapes, in the same run:
#   frappe     train on frappe.validation.libfm, test on frappe.test.libfm,
#              dim 16, MLP 200-80, 5 epochs, 65536 buckets (the Frappe benchmark)
#   generated  ctrgen's data (GEN_SAMPLES train samples, 40000 test), dim 18,
#              MLP 200-80, 1 epoch
#   movielens  ua.base / ua.test (ours as sample groups, PyTorch as libFFM),
#              bench/configs/movielens.yaml's model, 5 epochs
# Both train at batch 256 with the same optimizers (sparse Adagrad 0.05 with
# PyTorch's accumulator start and eps, dense Adam 0.001), and dcnv2 with 2
# cross layers; lr is ours with dim-1 rows and Adagrad (torch_zoo's w(.)). Prints one table per
# data set: test AUC and samples/s, per seed and their means.
#
# Usage: [MODELS="mlp fm"] [SEEDS="1 2 3"] [DATA="frappe generated movielens"] [GEN_SAMPLES=200000] bench/zoo.sh
# Needs /usr/bin/python3 with python3-torch, python3-numpy and
# libopenblas0-pthread; ../shared/data/frappe for the Frappe part.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out/zoo
mkdir -p "$out"
go build -o "$out/" ./cmd/worker ./cmd/ctrgen ./cmd/movielens
models=(${MODELS:-mlp lr fm deepfm dcnv2 wdl})
seeds=(${SEEDS:-1 2 3})
threads=$(nproc)

# files SET: the train and test files and the shared flags of data set SET.
files() {
	case $1 in
	frappe)
		local d=../shared/data/frappe
		[ -f "$d/frappe.validation.libfm" ] || return 1
		train=$d/frappe.validation.libfm test=$d/frappe.test.libfm format=libfm dim=16 epochs=5 buckets=65536
		;;
	generated)
		train=$out/gen.libffm test=$out/gen-test.libffm format=libffm dim=18 epochs=1 buckets=$((1 << 20))
		[ -f "$train" ] || "$out/ctrgen" -train "$train" -test "$test" -train-samples "${GEN_SAMPLES:-200000}" >/dev/null 2>&1
		;;
	movielens)
		local d=../shared/data/ml-100k
		[ -f "$d/ua.base" ] || return 1
		[ -f "$out/ml/ua.base.group" ] || "$out/movielens" -data "$d" -out "$out/ml" >/dev/null
		# Ours reads the sample groups (users at level 1), PyTorch the same
		# samples as libFFM; bench/configs/movielens.yaml's model (Adagrad
		# 0.1 from PyTorch's accumulator start), 5 epochs.
		train=$out/ml/ua.base.libffm test=$out/ml/ua.test.libffm format=libffm dim=18 epochs=5 buckets=$((1 << 20))
		ours_data=(-config bench/configs/movielens.yaml -train "$out/ml/ua.base.group" -test "$out/ml/ua.test.group")
		peer_lr=(--emb-lr 0.1)
		;;
	esac
}

for set in ${DATA:-frappe generated movielens}; do
	ours_data=() peer_lr=()
	if ! files "$set"; then
		echo "$set: data absent; skipped"
		continue
	fi
	echo "## $set (load: $(cat /proc/loadavg))"
	rows=()
	for m in "${models[@]}"; do
		# PyTorch's Adagrad: the accumulator starts at 0 (ours: TensorFlow's
		# 0.1 unless told; 0 is refused, a tiny value is the same), eps 1e-10.
		ours=(-local -quiet -json -train "$train" -test "$test" -format "$format")
		[ ${#ours_data[@]} -eq 0 ] || ours=(-local -quiet -json "${ours_data[@]}")
		ours+=(-epochs "$epochs" -set model.kind="$m"
			-set model.tables[0].optimizer.initial_accumulator=1e-12 -set model.tables[0].optimizer.eps=1e-10)
		[ "$m" = lr ] || ours+=(-dim "$dim")
		peer=(--model "$m" --train "$train" --test "$test" --format "$format" --dim "$dim" --epochs "$epochs" --buckets "$buckets" --threads "$threads" "${peer_lr[@]}")
		case $m in
		lr) ours+=(-dim 1 -set model.hidden= -set model.tables[0].optimizer.name=adagrad -set model.tables[0].optimizer.lr="${peer_lr[1]:-0.05}") ;; # torch_zoo's w(.)
		fm) ours+=(-set model.hidden=) ;;
		*) peer+=(--hidden 200,80) ;;
		esac
		[ "$m" = dcnv2 ] && peer+=(--cross-layers 2)
		for seed in "${seeds[@]}"; do
			o=$("$out/worker" "${ours[@]}" -seed "$seed" | tail -n 1)
			p=$(OPENBLAS_NUM_THREADS=$threads /usr/bin/python3 ../shared/peers/torch_zoo.py "${peer[@]}" --seed "$seed" | tail -n 1)
			rows+=("$m|$seed|$o|$p")
		done
	done
	echo "load: $(cat /proc/loadavg)"
	/usr/bin/python3 - "${rows[@]}" <<'PY'
import json, sys
from collections import defaultdict
print("| model | seed | ours AUC | ours samples/s | PyTorch AUC | PyTorch samples/s | speed ratio |")
print("|---|---|---|---|---|---|---|")
by = defaultdict(list)
for r in sys.argv[1:]:
    m, seed, o, p = r.split("|", 3)
    o, p = json.loads(o), json.loads(p)
    by[m].append((o, p))
    print(f"| {m} | {seed} | {o['test_auc']:.4f} | {o['samples_per_second']:.0f} | {p['test_auc']:.4f} | "
          f"{p['samples_per_second']:.0f} | {o['samples_per_second'] / p['samples_per_second']:.1f} |")
for m, rs in by.items():
    oa = sum(o["test_auc"] for o, _ in rs) / len(rs)
    pa = sum(p["test_auc"] for _, p in rs) / len(rs)
    os_ = sum(o["samples_per_second"] for o, _ in rs) / len(rs)
    ps = sum(p["samples_per_second"] for _, p in rs) / len(rs)
    print(f"| **{m} mean** | | **{oa:.4f}** | **{os_:.0f}** | **{pa:.4f}** | **{ps:.0f}** | **{os_ / ps:.1f}** | AUC {oa - pa:+.4f}")
PY
done
