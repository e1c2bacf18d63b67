#!/usr/bin/env bash
# The pipeline's depth (issue 50): train.prefetch_batches, the batches
# pulled ahead of the one training, with as many pulls in flight. For each
# seed and depth, one bench/dataplane.sh round at batch 256 (direct and
# separate processes, the same flags): samples/s, the worker's wait on
# pulls, CPU, and the test AUC, whose change from depth 1 (same seed) is
# what the staler rows of a deeper pipeline cost.
#
# Usage: [DEPTHS="1 2 3 4"] [SEEDS="1 2 3"] [BATCHES=256] bench/depth.sh [train_samples]
# (default 1000000). Writes bench/out/depth.jsonl, one line per run.
set -euo pipefail
cd "$(dirname "$0")/.."
depths=${DEPTHS:-1 2 3 4}
seeds=${SEEDS:-1 2 3}
out=bench/out/depth.jsonl
: >"$out"
for seed in $seeds; do
	for d in $depths; do
		ROUNDS=1 BATCHES=${BATCHES:-256} EXTRA="-seed $seed -set train.prefetch_batches=$d" \
			bench/dataplane.sh "${1:-1000000}" | grep -v "^batch\|^  " || true
		/usr/bin/python3 - "$seed" "$d" bench/out/dataplane.jsonl >>"$out" <<'PY'
import json, sys
for l in open(sys.argv[3]):
    r = json.loads(l)
    r["seed"], r["depth"] = int(sys.argv[1]), int(sys.argv[2])
    print(json.dumps(r))
PY
	done
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
def get(shape, d, seed, k):
    v = [r[k] for r in runs if r["shape"] == shape and r["depth"] == d and r["seed"] == seed]
    return v[0] if v else float("nan")
seeds = sorted({r["seed"] for r in runs})
for shape in ("direct", "separate"):
    for d in sorted({r["depth"] for r in runs}):
        sps = [get(shape, d, s, "samples_per_second") for s in seeds]
        ratio = [get("separate", d, s, "samples_per_second") / get("direct", d, s, "samples_per_second") for s in seeds]
        auc = [get(shape, d, s, "test_auc") for s in seeds]
        dauc = [get(shape, d, s, "test_auc") - get(shape, 1, s, "test_auc") for s in seeds]
        wait = [get(shape, d, s, "fetch_wait") for s in seeds]
        cpu = [get(shape, d, s, "cpu_s_per_1m") / get("direct", d, s, "cpu_s_per_1m") for s in seeds]
        line = (f"{shape} depth {d}: {statistics.median(sps):,.0f} samples/s (median of {len(seeds)} seeds), "
                f"pull wait {statistics.median(wait):.0%}, test AUC {statistics.mean(auc):.4f} "
                f"(vs depth 1 per seed: {', '.join(f'{x:+.4f}' for x in dauc)})")
        if shape == "separate":
            line += f"; separate/direct {', '.join(f'{x:.2f}' for x in ratio)}; CPU vs direct {statistics.median(cpu):.2f}x"
        print(line)
PY
