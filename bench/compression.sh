#!/usr/bin/env bash
# Throughput against compression ratio, as in the XDL paper's Figure 6
# (issue 3). Generated data with 23 fields, 20 of them at user level, and an
# average user repetition of 1, 5, 20 and 57 consecutive samples, the same
# number of samples each, written in the sample-group format (one group per
# user run) and streamed from the file in order (train.shuffle: false), one
# process: embedded etcd, two AMS shards, the scheduler, one worker.
#
# For each ratio it prints samples/s, bytes read per sample, the measured
# compression (samples per level-1 node), the speed-up over ratio 1, and the
# bound from floating-point work: the per-sample flops of the flat model
# divided by those left when the user-level work (pooling the 20 user
# fields and their 360 columns of the first layer, forward and backward) is
# done once per user node. Then the pipeline against the same stages run one
# after another (train.pipeline: false) at ratios 1 and 20.
#
# Usage: [SHARDS=2] bench/compression.sh [samples]   (default 300000; SHARDS: AMS shards of the embedded cluster)
# Writes bench/out/compression.json.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-300000}
out=bench/out/compression
mkdir -p "$out"
go build -o "$out/worker" ./cmd/worker
go build -o "$out/ctrgen" ./cmd/ctrgen
for r in 1 5 20 57; do
	cat > "$out/r$r.yaml" <<YAML
data: {fields: 23, user_fields: 20, samples_per_user: $r, train_samples: $n, test_samples: 20000}
train: {shuffle: false, format: group}
YAML
	if [ ! -f "$out/r$r.train" ]; then
		"$out/ctrgen" -config "$out/r$r.yaml" -format group -train "$out/r$r.train" -test "$out/r$r.test" 2>/dev/null
	fi
done
echo "load: $(cat /proc/loadavg)"
rows=()
run() { # name ratio extra-yaml
	local cfg="$out/run.yaml"
	if [ "$3" = SEQ ]; then
		sed 's/shuffle: false/shuffle: false, pipeline: false/' "$out/r$2.yaml" > "$cfg"
	else
		cp "$out/r$2.yaml" "$cfg"
	fi
	local o
	o=$("$out/worker" -local -shards "${SHARDS:-2}" -quiet -json -config "$cfg" -train "$out/r$2.train" -test "$out/r$2.test" | tail -n 1)
	rows+=("$1|$2|$o")
}
for r in 1 5 20 57; do run compressed "$r" ""; done
for r in 1 20; do run sequential "$r" "SEQ"; done
echo "load: $(cat /proc/loadavg)"
/usr/bin/python3 - "$out" "${rows[@]}" <<'PY'
import json, sys
outdir, rows = sys.argv[1], sys.argv[2:]
# Per-sample flops of the model (23 fields x 18 dims = 414 inputs, MLP
# 414-200-80-1, 3 ids per field): forward + both backward products = 6 flops
# per weight; pooling and scattering = 4 flops per id per dim.
F, U, d, bag, h = 23, 20, 18, 3, [200, 80, 1]
ins = F * d
mlp_rest = sum(6 * a * b for a, b in zip(h[:-1], h[1:]))
user = 6 * U * d * h[0] + 4 * U * bag * d
sample = 6 * (F - U) * d * h[0] + mlp_rest + 4 * (F - U) * bag * d
flat = user + sample
res = {}
for r in rows:
    name, ratio, o = r.split("|", 2)
    res.setdefault(name, {})[int(ratio)] = json.loads(o)
base = res["compressed"][1]["samples_per_second"]
print("| user repetition | samples per user node | bytes read per sample | samples/s | speed-up | flop bound | share of bound | test AUC |")
print("|---|---|---|---|---|---|---|---|")
table = []
for ratio, o in sorted(res["compressed"].items()):
    nodes = o["nodes_per_level"]
    comp = nodes[0] / nodes[1]
    bound = flat / (sample + user / comp)
    sp = o["samples_per_second"] / base
    bps = o["bytes_read"] / o["samples"]
    table.append(dict(repetition=ratio, compression=comp, bytes_per_sample=bps, samples_per_second=o["samples_per_second"],
                      speedup=sp, bound=bound, share_of_bound=sp / bound, test_auc=o["test_auc"]))
    print(f"| {ratio} | {comp:.1f} | {bps:.0f} | {o['samples_per_second']:.0f} | {sp:.2f}x | {bound:.2f}x | {sp/bound:.0%} | {o['test_auc']:.4f} |")
print()
print("| user repetition | pipelined samples/s | sequential samples/s | pipeline gain |")
print("|---|---|---|---|")
pipe = []
for ratio, o in sorted(res.get("sequential", {}).items()):
    p = res["compressed"][ratio]["samples_per_second"]
    s = o["samples_per_second"]
    pipe.append(dict(repetition=ratio, pipelined=p, sequential=s, gain=p / s))
    print(f"| {ratio} | {p:.0f} | {s:.0f} | {p/s:.2f}x |")
json.dump(dict(compression=table, pipeline=pipe), open(f"{outdir}/../compression.json", "w"), indent=1)
PY
