#!/usr/bin/env bash
# SLIDE inference autotune on Bibtex (issue 30): for each sparsity, train
# bench/configs/xc_bibtex.yaml (40 epochs) and report, on the test split,
# P@1 with sparse inference (the calibrated tables of
# slide.Layer.TuneInference) and with dense inference of the same model
# (the reference, same run), their difference, the one-sample latency of
# each, and what the calibration chose. Then the same at sparsity 0.1 with
# model.output.infer_tune.off (the training tables, as before).
#
# Usage: bench/slide_autotune.sh [sparsities...]   (default 0.02 0.05 0.1 0.2 0.5)
# Needs ../shared/data/bibtex.
set -euo pipefail
cd "$(dirname "$0")/.."
data=../shared/data/bibtex
if [ ! -f "$data/train.txt" ]; then
	echo "slide_autotune: $data is absent; nothing to measure" >&2
	exit 1
fi
out=bench/out
mkdir -p "$out"
go build -o "$out/worker" ./cmd/worker
models=$(mktemp -d)
trap 'rm -rf "$models"' EXIT
sps=("$@")
[ ${#sps[@]} -gt 0 ] || sps=(0.02 0.05 0.1 0.2 0.5)
echo "load before: $(uptime)"
n=0
run() { # sparsity, extra flags
	local sp=$1
	shift
	n=$((n + 1))
	"$out/worker" -local -quiet -json -config bench/configs/xc_bibtex.yaml -sparsity "$sp" \
		-snapshot-store "$models/run$n" -train "$data/train.txt" -test "$data/test.txt" "$@" | tail -n 1 |
		python3 -c '
import json, sys
r = json.load(sys.stdin); e = r["test"]; d, s = e["dense"], e["sparse"]
t = e.get("infer_tune") or {}
tab = ("inference tables K=%d L=%d" % (t["k"], t["l"]) if t.get("separate") else "training tables") if t else "training tables (tuning off)"
print("sparsity %s: P@1 sparse %.4f dense %.4f (sparse - dense %+.4f); one-sample latency sparse %.2f ms dense %.2f ms; %s, calibration agreement %.3f (training tables %.3f)" % (
    sys.argv[1], s["p1"], d["p1"], s["p1"] - d["p1"], e["sparse_latency_ms"], e["dense_latency_ms"], tab,
    t.get("agreement", float("nan")), t.get("training_agreement", float("nan"))))' "$sp$*"
	echo "load: $(uptime)"
}
for sp in "${sps[@]}"; do
	run "$sp"
done
run 0.1 -set model.output.infer_tune.off=true
echo "load after: $(uptime)"
