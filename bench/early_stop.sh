#!/usr/bin/env bash
# Early stopping on Bibtex (issue 27): the training file split into 3,880
# training and 1,000 validation samples (shuffle seed 7, the split the
# Bibtex config was chosen on), the Bibtex config for 40 epochs at
# sparsity 0.1 (where the held-out P@1 peaked early and fell), three ways
# in one run: no validation set (the last model), a validation set (the
# best model kept), and a validation set with patience 5 (stopped early).
# Prints one line per run: test P@1 (dense inference) of the model the job
# ended on, the epochs trained, the best validation and the wall time.
#
# Usage: bench/early_stop.sh [extra worker flags...]
# Needs ../shared/data/bibtex and /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/.."
data=../shared/data/bibtex
if [ ! -f "$data/train.txt" ]; then
	echo "early_stop: $data is absent; nothing to measure" >&2
	exit 1
fi
out=bench/out/early_stop
mkdir -p "$out"
go build -o "$out/worker" ./cmd/worker
/usr/bin/python3 - "$data/train.txt" "$out" <<'PY'
import random, sys
lines = open(sys.argv[1]).read().splitlines()
n, f, l = lines[0].split()
rows = lines[1:]
random.Random(7).shuffle(rows)
for name, part in (("train.txt", rows[1000:]), ("valid.txt", rows[:1000])):
    with open(sys.argv[2] + "/" + name, "w") as w:
        w.write("%d %s %s\n" % (len(part), f, l))
        w.write("\n".join(part) + "\n")
PY
echo "load before: $(uptime)"
run() {
	local name=$1
	shift
	local start=$SECONDS
	o=$("$out/worker" -local -quiet -json -config bench/configs/xc_bibtex.yaml -sparsity 0.1 \
		-train "$out/train.txt" -test "$data/test.txt" "$@" | tail -n 1)
	echo "$o" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin); d = r["test"]["dense"]; b = r.get("best")
line = "%s: test P@1 %.4f P@3 %.4f P@5 %.4f after %d epochs" % (sys.argv[1], d["p1"], d["p3"], d["p5"], r["epochs"])
if b: line += "; best validation P@1 %.4f after %s" % (b["value"], b["when"])
if r.get("ended_on_best"): line += "; ended on it: %s" % r["ended_on_best"]
print(line + "; %s s" % sys.argv[2])' "$name" "$((SECONDS - start))"
	echo "load: $(uptime)"
}
run "no validation set (the last model)" "$@"
run "validation set, the best model kept" -valid "$out/valid.txt" "$@"
run "validation set, patience 5" -valid "$out/valid.txt" -patience 5 "$@"
echo "load after: $(uptime)"
