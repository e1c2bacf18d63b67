#!/usr/bin/env bash
# HDFS read throughput (issue 5): the same 100,000 CTR-shaped libFFM lines
# (33 MB) read from a local file (page-cached) and from HDFS over loopback,
# the namenode and datanode being cmd/hdfsd in its own process (128 MiB
# blocks, as Hadoop's default). Runs reader/hdfssrc's BenchmarkRead COUNT
# times (default 3) and prints each figure with the HDFS/file ratio.
# Usage: bench/hdfs_read.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$out"' EXIT
go build -o "$out" ./cmd/hdfsd
go test -c -o "$out/hdfssrc.test" ./reader/hdfssrc
port=$((20000 + RANDOM % 20000))
"$out/hdfsd" -addr "127.0.0.1:$port" -block-size $((128 << 20)) >"$out/hdfsd.log" &
sleep 1
echo "load before: $(cut -d" " -f1-3 /proc/loadavg)"
XPS_HDFS_NAMENODE="127.0.0.1:$port" "$out/hdfssrc.test" -test.run '^$' -test.bench Read -test.count "$count" \
	| tee "$out/bench.txt" | grep Benchmark
python3 - "$out/bench.txt" <<'PY'
import re, sys, statistics
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r'BenchmarkRead/(\S+?)-\d+\s+\d+\s+\d+ ns/op\s+([\d.]+) MB/s(?:\s+([\d.]+) samples/s)?', line)
    if m:
        runs.setdefault(m.group(1), []).append((float(m.group(2)), float(m.group(3) or 0)))
med = {k: (statistics.median(a for a, _ in v), statistics.median(s for _, s in v)) for k, v in runs.items()}
for k, (mb, s) in med.items():
    print(f"{k:24s} {mb:8.1f} MB/s" + (f" {s:10.0f} samples/s" if s else ""))
print(f"decode: hdfs / file = {med['hdfs'][0] / med['file'][0]:.2f}x")
print(f"bytes: hdfs (verified) / file = {med['hdfs-bytes'][0] / med['file-bytes'][0]:.3f}x; "
      f"verified / unverified = {med['hdfs-bytes'][0] / med['hdfs-bytes-unverified'][0]:.2f}x")
PY
echo "load after: $(cut -d" " -f1-3 /proc/loadavg)"
