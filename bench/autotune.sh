#!/usr/bin/env bash
# train.autotune against the job's own defaults (issue 47), in one run on
# the same data and seeds: for each data set, `worker -local` at its
# defaults (model.kind mlp and the shape flags below), then the same job
# with -autotune true over the six flat kinds (autotune.kinds: mlp, lr, fm,
# deepfm, dcnv2, wdl) at the default budget (3x one run, the winner's run
# included). Data sets (DATA):
#   frappe       train on frappe.validation.libfm (no validation file: the
#                search holds out a tenth, job.holdout 10), test on
#                frappe.test.libfm, 5 epochs
#   generated    the built-in generated data, TRAIN_SAMPLES train samples,
#                40,000 validation samples of its own stream, 1 epoch
#   interaction  the same with data.interaction_share 0.8
# Prints one line per run: test AUC, the best achievable AUC (generated
# data), the winner, the search's samples against the budget, wall time.
# The peer's figures at its defaults come from `DEFAULTS=1 bench/zoo.sh`.
#
# Usage: [DATA="frappe generated interaction"] [SEEDS="1 2"] [TRAIN_SAMPLES=200000] bench/autotune.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out/autotune
mkdir -p "$out"
go build -o "$out/" ./cmd/worker
cd "$out" # the models (xps-models/: the jobs' and the trials') stay under bench/out

kinds=mlp,lr,fm,deepfm,dcnv2,wdl
# summary JSON-LINE: the figures of a worker's -json line.
summary() {
	/usr/bin/python3 -c '
import json, sys
r = json.loads(sys.argv[1])
a = r.get("autotune")
best = r.get("best_auc")
line = "test AUC %.4f" % r["test_auc"]
if best: line += " (best achievable %.4f)" % best
if a:
    p = a["plan"]
    run = p["run_samples"] - a.get("resumed_samples", 0)
    line += "; winner %s, valid %s %.4f; searched %d + the job %d = %d of %d samples; %d trials, %d stopped early" % (
        json.dumps(a["winner"]), a["metric"], a["figure"], a["searched_samples"], run,
        a["searched_samples"] + run, p["budget_samples"], len(a["trials"]), a["stopped_early"])
    line += "; search %.1fs" % a["seconds"]
line += "; the job %.1fs" % r["wall_seconds"]
print(line)' "$1"
}
for set in ${DATA:-frappe generated interaction}; do
	case $set in
	frappe)
		d=$(cd ../../.. && pwd)/../shared/data/frappe
		if [ ! -f "$d/frappe.validation.libfm" ]; then
			echo "frappe: $d absent, skipped"
			continue
		fi
		args=(-train "$d/frappe.validation.libfm" -test "$d/frappe.test.libfm" -format libfm -epochs 5)
		;;
	generated) args=(-train-samples "${TRAIN_SAMPLES:-200000}" -set data.valid_samples=40000 -epochs 1) ;;
	interaction) args=(-train-samples "${TRAIN_SAMPLES:-200000}" -set data.valid_samples=40000 -set data.interaction_share=0.8 -epochs 1) ;;
	*)
		echo "unknown data set $set" >&2
		exit 2
		;;
	esac
	for seed in ${SEEDS:-1}; do
		common=(-local -http "" -quiet -json -seed "$seed" "${args[@]}")
		for mode in defaults autotune; do
			extra=()
			[ $mode = autotune ] && extra=(-autotune true -set autotune.kinds=$kinds -set autotune.seed="$seed" -set autotune.output="$set-$seed.yaml")
			if line=$(./worker "${common[@]}" "${extra[@]}" 2>stderr | tail -n 1) && [ -n "$line" ]; then
				echo "$set seed $seed $mode: $(summary "$line")"
			else
				echo "$set seed $seed $mode: failed: $(tail -n 1 stderr)"
			fi
		done
	done
done
