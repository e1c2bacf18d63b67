#!/usr/bin/env bash
# Frappe quality: train on frappe.validation.libfm, test on frappe.test.libfm,
# ours over 3 seeds (two AMS shards + one worker, in one process) and the
# PyTorch CPU reference (dim 16, MLP 200-80, 5 epochs, 65536 buckets) over
# the same 3 seeds, in the same run. Prints a table and the mean AUCs.
#
# Usage: bench/frappe_auc.sh [extra worker flags...]
# Needs ../shared/data/frappe and /usr/bin/python3 with python3-torch,
# python3-numpy and libopenblas0-pthread.
set -euo pipefail
cd "$(dirname "$0")/.."
data=../shared/data/frappe
if [ ! -f "$data/frappe.validation.libfm" ]; then
	echo "frappe_auc: $data is absent; nothing to measure" >&2
	exit 1
fi
out=bench/out
mkdir -p "$out"
go build -o "$out/worker" ./cmd/worker
ours_flags=(-format libfm -dim 16 -hidden 200,80 -epochs 5 "$@")
echo "load: $(cat /proc/loadavg)"
rows=()
for seed in 1 2 3; do
	o=$("$out/worker" -local -quiet -json -train "$data/frappe.validation.libfm" -test "$data/frappe.test.libfm" \
		-seed "$seed" "${ours_flags[@]}" | tail -n 1)
	p=$(OPENBLAS_NUM_THREADS=$(nproc) /usr/bin/python3 ../shared/peers/torch_ctr.py --format libfm \
		--train "$data/frappe.validation.libfm" --test "$data/frappe.test.libfm" \
		--dim 16 --hidden 200,80 --epochs 5 --buckets 65536 --threads "$(nproc)" --seed "$seed" | tail -n 1)
	rows+=("$seed|$o|$p")
done
echo "load: $(cat /proc/loadavg)"
echo "ours flags: ${ours_flags[*]}"
/usr/bin/python3 - "${rows[@]}" <<'PY'
import json, sys
print("| seed | ours AUC | ours logloss | ours samples/s | PyTorch AUC | PyTorch logloss | PyTorch samples/s |")
print("|---|---|---|---|---|---|---|")
oa, pa = [], []
for r in sys.argv[1:]:
    seed, o, p = r.split("|", 2)
    o, p = json.loads(o), json.loads(p)
    oa.append(o["test_auc"]); pa.append(p["test_auc"])
    print(f"| {seed} | {o['test_auc']:.4f} | {o['test_logloss']:.4f} | {o['samples_per_second']:.0f} | "
          f"{p['test_auc']:.4f} | {p['test_logloss']:.4f} | {p['samples_per_second']:.0f} |")
mo, mp = sum(oa) / len(oa), sum(pa) / len(pa)
print(f"| mean | {mo:.4f} | | | {mp:.4f} | | |")
print(f"mean AUC ours {mo:.4f} pytorch {mp:.4f} difference {mo - mp:+.4f}")
PY
