#!/usr/bin/env bash
# The CTR model zoo against CPU PyTorch (issues 27 and 47): for each
# model.kind, ours (`worker -local`, two AMS shards + one worker in one
# process) and ../shared/peers/torch_zoo.py (--model KIND) on the same files,
# seeds and shapes, in the same run. Data sets (DATA):
#   frappe       train on frappe.validation.libfm, test on frappe.test.libfm,
#                dim 16, MLP 200-80, 5 epochs, 65536 buckets (the Frappe benchmark)
#   generated    ctrgen's data (GEN_SAMPLES train samples, 40000 test), dim 18,
#                MLP 200-80, 1 epoch
#   interaction  generated with data.interaction_share: 0.8 (80% of the
#                teacher's logit variance from a user x item dot product)
#   movielens    ua.base / ua.test as libFFM for both, dim 18, MLP 200-80, 5 epochs
#   movielens-groups  the same, ours on the sample groups (users at level 1)
#
# Two modes:
#   DEFAULTS=1 (issue 47): each side at its own defaults. Ours gets only
#     -set model.kind and the shape flags the peer also gets: -dim (not for
#     lr, which has no embedding), -hidden (not for lr and fm, which have no
#     MLP), -epochs, -batch-size, and model.cross_layers for dcnv2; the peer
#     gets the same shape flags (--dim, --hidden, --epochs, --batch,
#     --cross-layers) and --buckets, nothing else. movielens-groups adds
#     -format group for ours (its files are sample groups).
#   default (issue 27): both sides on one recipe: sparse Adagrad 0.05 with
#     PyTorch's accumulator start and eps, dense Adam 0.001; movielens with
#     bench/configs/movielens.yaml (Adagrad 0.1) and the peer at --emb-lr 0.1.
#
# SPLIT=valid trains on the training file less a held-out part and tests on
# that part, never reading a test file: the splits the defaults are chosen on
# (frappe: every 5th line of the train file held out; movielens: every 9th
# rating of ua.base, about 10 per user as in ua.test; generated: a validation
# file drawn from the same world with another seed). OURS="-set k=v ..." adds
# flags to ours (a candidate setting); PEER_CACHE=1 reuses the peer's output
# of an earlier run with the same command line (bench/out/zoo/peer-cache),
# for sweeps of ours only; a recorded run leaves it unset.
#
# Prints one table per data set: AUC and samples/s per seed, their means, and
# ours minus the peer's AUC (mean and the worst pair).
#
# Usage: [DEFAULTS=1] [SPLIT=valid] [MODELS="mlp fm"] [SEEDS="1 2 3"]
#        [DATA="frappe generated movielens"] [GEN_SAMPLES=200000] [OURS=...] bench/zoo.sh
# Needs /usr/bin/python3 with python3-torch, python3-numpy and
# libopenblas0-pthread; ../shared/data/frappe and ml-100k for those parts.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out/zoo
mkdir -p "$out/peer-cache"
go build -o "$out/" ./cmd/worker ./cmd/ctrgen ./cmd/movielens
models=(${MODELS:-mlp lr fm deepfm dcnv2 wdl})
seeds=(${SEEDS:-1 2 3})
threads=$(nproc)
split=${SPLIT:-test}
extra=(${OURS:-})

# holdout IN EVERY TRAIN VALID: every EVERY-th line of IN to VALID, the rest to TRAIN.
holdout() {
	[ -f "$3" ] && [ -f "$4" ] && return 0
	awk -v n="$2" -v tr="$3" -v va="$4" '{ if (NR % n == 0) print > va; else print > tr }' "$1"
}

# generate DIR CONFIG: ctrgen's train and test files (or train and a
# validation file of another seed) into DIR, with the data: section of CONFIG.
generate() {
	local dir=$1 cfg=$2
	mkdir -p "$dir"
	if [ ! -f "$dir/train.libffm" ]; then
		"$out/ctrgen" ${cfg:+-config "$cfg"} -train "$dir/train.libffm" -test "$dir/test.libffm" \
			-train-samples "${GEN_SAMPLES:-200000}" >/dev/null 2>&1
		"$out/ctrgen" ${cfg:+-config "$cfg"} -seed 7 -train "$dir/valid.libffm" -train-samples 40000 >/dev/null 2>&1
	fi
	train=$dir/train.libffm test=$dir/test.libffm
	[ "$split" = valid ] && test=$dir/valid.libffm
	return 0
}

# movielens DIR: ua.base and ua.test (SPLIT=valid: ua.base less every 9th
# rating, and that rating) converted into DIR.
movielens() {
	local d=../shared/data/ml-100k dir=$1
	[ -f "$d/ua.base" ] || return 1
	if [ ! -f "$dir/ua.base.group" ]; then
		local src=$d
		if [ "$split" = valid ]; then
			src=$out/ml-valid-src
			mkdir -p "$src"
			ln -sf "$(realpath $d/u.user)" "$(realpath $d/u.item)" "$src/"
			rm -f "$src/ua.base" "$src/ua.test"
			holdout "$d/ua.base" 9 "$src/ua.base" "$src/ua.test"
		fi
		"$out/movielens" -data "$src" -out "$dir" >/dev/null
	fi
}

# files SET: the train and test files and the shared flags of data set SET.
files() {
	ours_data=() peer_lr=() ours_fmt=()
	case $1 in
	frappe)
		local d=../shared/data/frappe
		[ -f "$d/frappe.validation.libfm" ] || return 1
		train=$d/frappe.validation.libfm test=$d/frappe.test.libfm format=libfm dim=16 epochs=5 buckets=65536
		if [ "$split" = valid ]; then
			train=$out/frappe-valid/train.libfm test=$out/frappe-valid/valid.libfm
			mkdir -p "$out/frappe-valid"
			holdout "$d/frappe.validation.libfm" 5 "$train" "$test"
		fi
		;;
	generated | interaction)
		format=libffm dim=18 epochs=1 buckets=$((1 << 20))
		if [ "$1" = generated ]; then
			generate "$out/gen" ""
		else
			printf 'data:\n  interaction_share: 0.8\n' >"$out/interaction.yaml"
			generate "$out/gen-interaction" "$out/interaction.yaml"
		fi
		;;
	movielens | movielens-groups)
		local dir=$out/ml
		[ "$split" = valid ] && dir=$out/ml-valid
		movielens "$dir" || return 1
		train=$dir/ua.base.libffm test=$dir/ua.test.libffm format=libffm dim=18 epochs=5 buckets=$((1 << 20))
		if [ "$1" = movielens-groups ]; then
			ours_data=(-train "$dir/ua.base.group" -test "$dir/ua.test.group")
			ours_fmt=(-format group)
		fi
		if [ -z "${DEFAULTS:-}" ]; then
			# bench/configs/movielens.yaml's model (Adagrad 0.1 from
			# PyTorch's accumulator start); the peer at the same rate.
			[ "$1" = movielens-groups ] || ours_data=(-train "$train" -test "$test")
			ours_data=(-config bench/configs/movielens.yaml "${ours_data[@]}")
			[ "$1" = movielens-groups ] || ours_data+=(-set train.format=libffm)
			peer_lr=(--emb-lr 0.1)
		fi
		;;
	*)
		echo "unknown data set $1" >&2
		exit 2
		;;
	esac
}

# peer ARGS...: torch_zoo.py's JSON line (from the cache with PEER_CACHE=1).
peer() {
	local key
	key=$(echo "$*" | sha1sum | cut -c1-16)
	if [ -n "${PEER_CACHE:-}" ] && [ -s "$out/peer-cache/$key" ]; then
		cat "$out/peer-cache/$key"
		return
	fi
	OPENBLAS_NUM_THREADS=$threads /usr/bin/python3 ../shared/peers/torch_zoo.py "$@" | tail -n 1 | tee "$out/peer-cache/$key"
}

for set in ${DATA:-frappe generated movielens}; do
	if ! files "$set"; then
		echo "$set: data absent; skipped"
		continue
	fi
	echo "## $set ($split split${DEFAULTS:+, each side at its defaults}; load: $(cat /proc/loadavg))"
	rows=()
	for m in "${models[@]}"; do
		ours=(-local -quiet -json -train "$train" -test "$test" -format "$format")
		[ ${#ours_data[@]} -eq 0 ] || ours=(-local -quiet -json -format "$format" "${ours_data[@]}")
		ours+=("${ours_fmt[@]}" -epochs "$epochs" -set model.kind="$m")
		peer_args=(--model "$m" --train "$train" --test "$test" --format "$format" --dim "$dim" --epochs "$epochs" --buckets "$buckets" --threads "$threads" "${peer_lr[@]}")
		if [ -n "${DEFAULTS:-}" ]; then
			[ "$m" = lr ] || ours+=(-dim "$dim")
			case $m in
			lr | fm) ;;
			*) ours+=(-hidden 200,80) peer_args+=(--hidden 200,80) ;;
			esac
			[ "$m" = dcnv2 ] && ours+=(-set model.cross_layers=2) && peer_args+=(--cross-layers 2)
			ours+=(-batch-size 256) peer_args+=(--batch 256)
		else
			# PyTorch's Adagrad: the accumulator starts at 0 (0 is refused
			# as "default", a tiny value is the same), eps 1e-10.
			[ ${#peer_lr[@]} -gt 0 ] || ours+=(-set model.tables[0].optimizer.initial_accumulator=1e-12 -set model.tables[0].optimizer.eps=1e-10)
			[ "$m" = lr ] || ours+=(-dim "$dim")
			case $m in
			lr) ours+=(-dim 1 -set model.hidden= -set model.tables[0].optimizer.name=adagrad -set model.tables[0].optimizer.lr="${peer_lr[1]:-0.05}"
				-set model.tables[0].optimizer.initial_accumulator=1e-12 -set model.tables[0].optimizer.eps=1e-10) ;; # torch_zoo's w(.)
			fm) ours+=(-set model.hidden=) ;;
			*) peer_args+=(--hidden 200,80) ;;
			esac
			[ "$m" = dcnv2 ] && peer_args+=(--cross-layers 2)
		fi
		ours+=("${extra[@]}")
		for seed in "${seeds[@]}"; do
			o=$("$out/worker" "${ours[@]}" -seed "$seed" | tail -n 1)
			p=$(peer "${peer_args[@]}" --seed "$seed")
			rows+=("$m|$seed|$o|$p")
		done
	done
	echo "load: $(cat /proc/loadavg)"
	/usr/bin/python3 - "${rows[@]}" <<'PY'
import json, sys
from collections import defaultdict
print("| model | seed | ours AUC | ours samples/s | PyTorch AUC | PyTorch samples/s | speed ratio | AUC difference |")
print("|---|---|---|---|---|---|---|---|")
by = defaultdict(list)
for r in sys.argv[1:]:
    m, seed, o, p = r.split("|", 3)
    o, p = json.loads(o), json.loads(p)
    by[m].append((o, p))
    print(f"| {m} | {seed} | {o['test_auc']:.4f} | {o['samples_per_second']:.0f} | {p['test_auc']:.4f} | "
          f"{p['samples_per_second']:.0f} | {o['samples_per_second'] / p['samples_per_second']:.1f} | "
          f"{o['test_auc'] - p['test_auc']:+.4f} |")
for m, rs in by.items():
    oa = sum(o["test_auc"] for o, _ in rs) / len(rs)
    pa = sum(p["test_auc"] for _, p in rs) / len(rs)
    os_ = sum(o["samples_per_second"] for o, _ in rs) / len(rs)
    ps = sum(p["samples_per_second"] for _, p in rs) / len(rs)
    worst = min(o["test_auc"] - p["test_auc"] for o, p in rs)
    print(f"| **{m} mean** | | **{oa:.4f}** | **{os_:.0f}** | **{pa:.4f}** | **{ps:.0f}** | **{os_ / ps:.1f}** | "
          f"**{oa - pa:+.4f}** (worst pair {worst:+.4f}) |")
PY
done
