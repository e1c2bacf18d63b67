#!/usr/bin/env bash
# Behaviour-sequence models (issue 28): DIN and DIEN, ours against the
# PyTorch reference written from the papers (bench/torch_seq.py), on the
# same libFFM files, seeds and shapes, in the same run:
#   drift      ctrgen -seq (planted interest process with drift), SEQ_SAMPLES
#              train samples, 20000 test
#   nodrift    the same with -drift=false
#   movielens  MovieLens-100K as sequences (cmd/movielens -history 50: the
#              previous 50 movies by time, split by time)
# Models: mlp (the history sum-pooled like any bag field: the baseline),
# din, dien. Both sides: dim 18 per field, MLP 200-80, attention 80-40,
# history of 50, batch 256, sparse Adagrad 0.05 (PyTorch's accumulator
# start), dense Adam DENSE_LR, EPOCHS epochs. Ours reads the libFFM files
# (flat: AUC beside the peer's) and the same samples as sample groups (the
# history once per user node: its speed with compression). The PyTorch
# reference trains the same epochs on the same files.
#
# Then serving: requests of 1 user x 100 candidates with a history of 50,
# ours in process (serve.Server.Score, BenchmarkServeSequence: p50, p99,
# allocations) and the reference's (--serve-bench: one forward of the 100
# rows under no_grad), both on the machine's cores.
#
# Usage: [DATA="drift nodrift movielens"] [MODELS="mlp din dien"]
#        [SEQ_SAMPLES=200000] [EPOCHS=2] [DENSE_LR=0.003] bench/seq.sh
# Needs /usr/bin/python3 with python3-torch, python3-numpy and
# libopenblas0-pthread; ../shared/data/ml-100k for the MovieLens part.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out/seq
mkdir -p "$out"
go build -o "$out/" ./cmd/worker ./cmd/ctrgen ./cmd/movielens
models=(${MODELS:-mlp din dien})
epochs=${EPOCHS:-2}
lr=${DENSE_LR:-0.003}
n=${SEQ_SAMPLES:-200000}
threads=$(nproc)

# files SET: the data set's files (libFFM for both, groups for ours) and
# its fields.
files() {
	case $1 in
	drift | nodrift)
		local d=""
		[ "$1" = nodrift ] && d=-drift=false
		train=$out/$1.libffm test=$out/$1-test.libffm gtrain=$out/$1.group gtest=$out/$1-test.group
		if [ ! -f "$gtrain" ]; then
			"$out/ctrgen" -seq $d -train "$train" -test "$test" -train-samples "$n" -test-samples 20000 2>"$out/$1.best"
			"$out/ctrgen" -seq $d -format group -train "$gtrain" -test "$gtest" -train-samples "$n" -test-samples 20000 2>/dev/null
		fi
		hist=2,3 target=6,7 neg=4,5
		echo "$1: $(grep -o 'best achievable.*' "$out/$1.best")"
		;;
	movielens)
		local d=../shared/data/ml-100k
		[ -f "$d/u.data" ] || return 1
		[ -f "$out/ml/seq.base.group" ] || "$out/movielens" -data "$d" -out "$out/ml" -history 50 >/dev/null
		train=$out/ml/seq.base.libffm test=$out/ml/seq.test.libffm gtrain=$out/ml/seq.base.group gtest=$out/ml/seq.test.group
		hist=8,9 target=5,7 neg=10,11
		;;
	esac
}

# ours KIND FORMAT TRAIN TEST: one JSON line of worker -local. The
# negatives fields are DIEN's auxiliary loss only: for mlp they would be two
# more bags in the MLP's input, which the reference's mlp does not have.
ours() {
	local negs=()
	[ "$1" = mlp ] || negs=(-set "model.sequence.negatives=[$neg]")
	"$out/worker" -local -quiet -json -train "$3" -test "$4" -format "$2" -epochs "$epochs" -dim 18 \
		-set model.kind="$1" -set "model.sequence.history=[$hist]" -set "model.sequence.target=[$target]" \
		"${negs[@]}" -set model.dense_optimizer.lr="$lr" \
		-set model.tables[0].optimizer.initial_accumulator=1e-12 -set model.tables[0].optimizer.eps=1e-10 | tail -n 1
}

# peer KIND [FLAGS]: one JSON line of the reference.
peer() {
	local m=$1
	shift
	# Its fastest setting on this machine: OpenBLAS on every core, torch's
	# own pool on one (both pools at 2 spin against each other: 2-4x
	# slower, which would flatter us).
	OPENBLAS_NUM_THREADS=$threads /usr/bin/python3 bench/torch_seq.py --model "$m" --train "$train" --test "$test" \
		--history "$hist" --target "$target" --negatives "$neg" --max-len 50 --dim 18 --hidden 200,80 \
		--epochs "$epochs" --dense-lr "$lr" --threads 1 "$@" | tail -n 1
}

for set in ${DATA:-drift nodrift movielens}; do
	if ! files "$set"; then
		echo "$set: data absent; skipped"
		continue
	fi
	echo "## $set (load: $(cat /proc/loadavg))"
	rows=()
	for m in "${models[@]}"; do
		o=$(ours "$m" libffm "$train" "$test")
		g=$(ours "$m" group "$gtrain" "$gtest")
		flags=()
		[ "$set" = drift ] && [ "$m" != mlp ] && flags=(--serve-bench)
		p=$(peer "$m" "${flags[@]}")
		rows+=("$m|$o|$g|$p")
	done
	echo "load: $(cat /proc/loadavg)"
	/usr/bin/python3 - "${rows[@]}" <<'PY'
import json, sys
print("| model | ours AUC | ours samples/s | ours, groups: AUC | samples/s | PyTorch AUC | PyTorch samples/s | speed ratio (groups) |")
print("|---|---|---|---|---|---|---|---|")
auc = {}
for r in sys.argv[1:]:
    m, o, g, p = r.split("|", 3)
    o, g, p = json.loads(o), json.loads(g), json.loads(p)
    auc[m] = (o["test_auc"], p["test_auc"])
    print(f"| {m} | {o['test_auc']:.4f} | {o['samples_per_second']:.0f} | {g['test_auc']:.4f} | {g['samples_per_second']:.0f} | "
          f"{p['test_auc']:.4f} | {p['samples_per_second']:.0f} | {o['samples_per_second'] / p['samples_per_second']:.1f}x "
          f"({g['samples_per_second'] / p['samples_per_second']:.1f}x) |")
    if "p50_ms" in p:
        print(f"|   {m} serving (PyTorch, 1 user x {p['serve_candidates']}, history {p['serve_history']}) | p50 {p['p50_ms']} ms | p99 {p['p99_ms']} ms |")
for m, (o, p) in auc.items():
    print(f"{m}: ours - PyTorch AUC {o - p:+.4f} (target >= -0.002: {'met' if o - p >= -0.002 else 'NOT met'})")
if "mlp" in auc:
    for m in ("din", "dien"):
        if m in auc:
            d = auc[m][0] - auc["mlp"][0]
            print(f"{m} - mlp (ours): {d:+.4f} (target >= 0.01: {'met' if d >= 0.01 else 'NOT met'})")
if "din" in auc and "dien" in auc:
    print(f"dien - din (ours): {auc['dien'][0] - auc['din'][0]:+.4f}")
PY
done
echo "## serving, ours in process (load: $(cat /proc/loadavg))"
go test ./serve/ -run XXX -bench BenchmarkServeSequence -benchtime 1000x -count 1 2>/dev/null |
	grep -oE '^BenchmarkServeSequence/[a-z]+|[0-9.]+ (p50_ms|p99_ms|allocs/op)' | paste -sd' ' | sed -e 's/BenchmarkServeSequence/\n/g'
echo
echo "load: $(cat /proc/loadavg)"
