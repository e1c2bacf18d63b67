#!/usr/bin/env bash
# Where the in-process training job's CPU goes (issue 58): `worker -local`
# (two embedded shards, one worker) on generated data with -cpuprofile,
# and every profile sample put in one bucket by the functions on its
# stack, first match wins:
#
#   GEMM               densenet's Gemm (kernels, packing), wherever called
#   step, rest         the rest of Trainer.step: pooling and its backward,
#                      element-wise layers, loss, dense optimizer, routing
#   shard pull         the stripe owners' gathers (ams Table.pull)
#   shard push         the stripe owners' Adagrad scatters (Table.push)
#   shard, rest        the rest of the stripe owners' work (splits, expiry)
#   read               the read stage: the files, parsing, the shuffle window
#   build              the batch stage: dedup, compress.Builder
#   pull stage         the pull stage's own work (the client's routes, copies)
#   runtime            the collector, the scheduler, the allocator not
#                      under any of the above
#   other              the rest (etcd, the scheduler, evaluation)
#
# Prints one table per (kind, batch): CPU µs per trained sample per bucket,
# its share, and the run's samples/s.
#
# Usage: [KINDS="mlp deepfm"] [BATCHES="256 1024"] bench/step_profile.sh [train_samples]
# (default 500000; data from bench/dataplane.sh's generator, the same files)
set -euo pipefail
cd "$(dirname "$0")/.."
ntrain=${1:-500000}
out=bench/out
mkdir -p "$out/new" "$out/profiles"
for c in worker ctrgen; do go build -o "$out/new/$c" "./cmd/$c"; done
train="$out/dp_train.libffm"
test="$out/dp_test.libffm"
[ -s "$train" ] && [ "$(wc -l <"$train")" = "$ntrain" ] ||
	"$out/new/ctrgen" -train "$train" -test "$test" -train-samples "$ntrain" -test-samples 10000 >/dev/null
echo "cores: $(nproc); $(grep -m1 'model name' /proc/cpuinfo); load: $(cat /proc/loadavg)"
for kind in ${KINDS:-mlp deepfm}; do
	for b in ${BATCHES:-256 1024}; do
		prof="$out/profiles/step-$kind-$b.prof"
		"$out/new/worker" -local -quiet -json -train "$train" -test "$test" -format libffm -dim 18 \
			-hidden 200,80 -epochs 1 -set model.kind="$kind" -batch-size "$b" -cpuprofile "$prof" |
			tail -n 1 >"$out/profiles/step-$kind-$b.json"
		go tool pprof -traces "$out/new/worker" "$prof" 2>/dev/null >"$out/profiles/step-$kind-$b.traces"
		/usr/bin/python3 - "$kind" "$b" "$out/profiles/step-$kind-$b.traces" "$out/profiles/step-$kind-$b.json" <<'PY'
import json, re, sys
kind, batch, traces, summary = sys.argv[1:5]
r = json.load(open(summary))
buckets = [
    ("GEMM", r"densenet\.gemmWith"),
    ("step, rest", r"ctrtrain\.\(\*Trainer\)\.step"),
    ("shard pull", r"ams\.\(\*Table\)\.pull\b"),
    ("shard push", r"ams\.\(\*Table\)\.push\b"),
    ("shard, rest", r"shard\.\(\*stripe\)\.run"),
    ("read", r"ctrtrain\.\(\*pipeline\)\.read"),
    ("build", r"ctrtrain\.\(\*pipeline\)\.batch"),
    ("pull stage", r"ctrtrain\.\(\*pipeline\)\.(pull|dispatch|puller)"),
    ("runtime", r"^runtime\.|^internal/runtime"),
]
total, got = 0.0, {name: 0.0 for name, _ in buckets}
got["other"] = 0.0
unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}

def flush(value, stack):
    global total
    if value is None:
        return
    total += value
    for name, pat in buckets:
        if any(re.search(pat, f) for f in stack):
            got[name] += value
            return
    got["other"] += value

value, stack = None, []
for line in open(traces):
    if line.startswith("-----------+"):
        flush(value, stack)
        value, stack = None, []
        continue
    m = re.match(r"\s+([\d.]+)(ns|us|ms|s)\s+(\S+)", line)
    if m and value is None:
        value, stack = float(m[1]) * unit[m[2]], [m[3]]
    elif value is not None and line.strip():
        stack.append(line.split()[0])
flush(value, stack)
n = r["samples"]
print(f"\n{kind}, batch {batch}: {r['samples_per_second']:,.0f} samples/s, test AUC {r['test_auc']:.4f}, "
      f"{total / n * 1e6:.1f} CPU-µs per sample in the profile ({total:.2f} s)")
print("| part | µs per sample | share |")
print("|---|---|---|")
for name in [b[0] for b in buckets] + ["other"]:
    print(f"| {name} | {got[name] / n * 1e6:.2f} | {got[name] / total:.0%} |")
PY
	done
done
