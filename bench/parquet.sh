#!/usr/bin/env bash
# Parquet against libFFM (issue 53), on the same samples, in one run:
#
#  1. the reader alone (reader/parquetsrc's BenchmarkSource: 200,000
#     Criteo-like rows of 30 columns written by arrow-go, read by
#     parquetsrc.Source, and the same samples as libFFM read by
#     reader.FileSource), COUNT rounds alternated: samples/s and
#     samples per CPU second (steadier on a shared machine); 3 of the 30
#     columns against all 30; and the two libraries' column readers
#     (BenchmarkLibraries, the choice in parquetsrc/doc.go);
#  2. training end to end: ctrgen's data (TRAIN samples) as libFFM and as
#     Parquet (one row a sample, not grouped, as libFFM), `worker -local`
#     at its defaults on each, alternated, ROUNDS times: samples/s;
#  3. memory: the peak resident set (VmHWM, /usr/bin/time) of those jobs.
#     With BIG=1 the data is about 2 GiB of Parquet (20M samples) as the
#     issue asks; the default is TRAIN samples.
#
# Usage: bench/parquet.sh [TRAIN] [ROUNDS] [COUNT]
#        (defaults 2000000 samples, 3 rounds, 5 benchmark counts; BIG=1)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000000}
rounds=${2:-3}
count=${3:-5}
if [ "${BIG:-0}" = 1 ]; then n=20000000; fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

echo "== 1. the reader alone (go test -bench, $count rounds)"
go test -run '^$' -bench 'BenchmarkSource|BenchmarkLibraries' -benchtime 3x -count "$count" ./reader/parquetsrc |
	tee "$bin/bench.txt" | grep -E '^Benchmark'
/usr/bin/python3 - "$bin/bench.txt" <<'EOF'
import re, statistics, sys
m = {}
for line in open(sys.argv[1]):
    f = line.split()
    if not f or not f[0].startswith("Benchmark"):
        continue
    name = re.sub(r"-\d+$", "", f[0])
    for v, unit in zip(f[2::2], f[3::2]):
        m.setdefault((name, unit), []).append(float(v))
med = lambda k: statistics.median(m[k])
s, c = "samples/s", "samples/cpu-s"
p30, p3, ffm = "BenchmarkSource/parquet/30cols", "BenchmarkSource/parquet/3cols", "BenchmarkSource/libffm"
print(f"reader alone, medians: parquet {med((p30, s)):.0f} samples/s ({med((p30, c)):.0f}/cpu-s), "
      f"libFFM {med((ffm, s)):.0f} ({med((ffm, c)):.0f}/cpu-s)")
print(f"  parquet / libFFM: {med((p30, s)) / med((ffm, s)):.2f} (wall), {med((p30, c)) / med((ffm, c)):.2f} (CPU)")
print(f"  3 of 30 columns / all 30: {med((p3, s)) / med((p30, s)):.2f} (wall), {med((p3, c)) / med((p30, c)):.2f} (CPU)")
for k in ("30cols", "3cols"):
    a, p = med((f"BenchmarkLibraries/arrow-go/{k}", "rows/s")), med((f"BenchmarkLibraries/parquet-go/{k}", "rows/s"))
    print(f"  libraries, {k}: parquet-go {p:.0f} rows/s, arrow-go {a:.0f}: {p / a:.2f}x")
EOF

echo "== 2. training end to end, $n samples, $rounds rounds alternated"
go build -o "$bin" ./cmd/worker ./cmd/ctrgen
"$bin/ctrgen" -train "$bin/train.libffm" -test "$bin/test.libffm" -train-samples "$n" -test-samples 20000 2>/dev/null
"$bin/ctrgen" -format parquet -train "$bin/train.parquet" -test "$bin/test.parquet" -columns "$bin/job.yaml" \
	-train-samples "$n" -test-samples 20000 2>/dev/null
sed -i 's/, user: true//' "$bin/job.yaml" # a sample a row, as libFFM
echo "files: libFFM $(du -m "$bin/train.libffm" | cut -f1) MiB, Parquet $(du -m "$bin/train.parquet" | cut -f1) MiB"
run() { # name worker-args...
	local name=$1
	shift
	/usr/bin/time -f "%M" -o "$bin/rss" "$bin/worker" -local "$@" >"$bin/out" 2>&1
	local rate auc
	rate=$(grep -oE 'in [0-9.]+s: [0-9]+ samples/s' "$bin/out" | grep -oE '[0-9]+ samples/s' | cut -d' ' -f1)
	auc=$(grep -oE 'test AUC [0-9.]+' "$bin/out" | tail -1 | cut -d' ' -f3)
	echo "$name: $rate samples/s, test AUC $auc, peak RSS $(($(cat "$bin/rss") / 1024)) MiB, load $(cut -d' ' -f1 /proc/loadavg)"
}
for r in $(seq "$rounds"); do
	run "round $r libffm " -train "$bin/train.libffm" -test "$bin/test.libffm"
	run "round $r parquet" -config "$bin/job.yaml"
done
