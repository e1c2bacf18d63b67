#!/usr/bin/env bash
# D-SLIDE (issue 29): the SLIDE output layer split into 1, 2 and 4 shares
# (model.output.owners), each with its own hash tables, trained by
# exchanging per-sample softmax sums; today every share lives in the one
# worker's process. Same data, seeds and settings for every owner count,
# one run after the other:
#
#   bibtex  ../shared/data/bibtex, bench/configs/xc_bibtex.yaml at sparsity
#           0.2 (the sparse case of bench/xc_bibtex.sh), seeds SEEDS
#   670k    cmd/xcgen's Amazon-670K shape, XC_SAMPLES training samples
#           (default 20000) and 1000 test, bench/configs/xc_670k.yaml, XC_EPOCHS
#           epochs (default 2), seed 1
#
# Per run: test P@1 with sparse and dense inference, samples/s, the
# busiest share's active labels against the mean (largest and mean over
# the steps), and the bytes a batch would move between shares on
# different machines as D-SLIDE and as dense model parallelism (every
# share's logits and the hidden gradient).
#
# Usage: [DATA="bibtex 670k"] [OWNERS="1 2 4"] [SEEDS="1 2"] bench/dslide.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out/dslide
mkdir -p "$out"
go build -o "$out/" ./cmd/worker ./cmd/xcgen

# run NAME CONFIG TRAIN TEST OWNERS SEED [FLAGS]: one JSON line, summarised.
run() {
	local name=$1 cfg=$2 train=$3 test=$4 owners=$5 seed=$6
	shift 6
	"$out/worker" -local -quiet -json -config "$cfg" -train "$train" -test "$test" \
		-set model.output.owners="$owners" -set model.seed="$seed" "$@" | tail -n 1 > "$out/$name-$owners-$seed.json"
	/usr/bin/python3 - "$out/$name-$owners-$seed.json" "$name" "$owners" "$seed" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); e = r["test"]
s, d = e.get("sparse") or {}, e["dense"]
imb = "%.2f / %.2f" % (r.get("owner_imbalance", 1), r.get("owner_imbalance_mean", 1)) if r["owners"] > 1 else "-"
wire = "%.3f / %.1f (%.0fx)" % (r["step_bytes"] / 1e6, r["dense_step_bytes"] / 1e6, r["dense_step_bytes"] / r["step_bytes"]) if r.get("step_bytes") else "-"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {s.get('p1', float('nan')):.4f} | {d['p1']:.4f} | "
      f"{r['samples_per_second']:.0f} | {imb} | {wire} |")
PY
}

echo "| data | owners | seed | P@1 sparse inf. | P@1 dense inf. | samples/s | busiest share / mean (max / mean) | MB per batch: D-SLIDE / dense MP |"
echo "|---|---|---|---|---|---|---|---|"
for set in ${DATA:-bibtex 670k}; do
	echo "load before $set: $(cat /proc/loadavg)" >&2
	case $set in
	bibtex)
		d=../shared/data/bibtex
		if [ ! -f "$d/train.txt" ]; then
			echo "bibtex: $d absent; skipped" >&2
			continue
		fi
		for o in ${OWNERS:-1 2 4}; do
			for s in ${SEEDS:-1 2}; do
				run bibtex bench/configs/xc_bibtex.yaml "$d/train.txt" "$d/test.txt" "$o" "$s" -sparsity 0.2
			done
		done
		;;
	670k)
		d=$out/xc670k
		n=${XC_SAMPLES:-20000}
		mkdir -p "$d"
		[ -f "$d/train-$n.txt" ] || "$out/xcgen" -quiet -out "$d/train-$n.txt" -samples "$n" -test-out "$d/test.txt" -test-samples 1000
		for o in ${OWNERS:-1 2 4}; do
			run 670k bench/configs/xc_670k.yaml "$d/train-$n.txt" "$d/test.txt" "$o" 1 -epochs "${XC_EPOCHS:-2}"
		done
		;;
	esac
	echo "load after $set: $(cat /proc/loadavg)" >&2
done
