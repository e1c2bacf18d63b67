#!/usr/bin/env bash
# Snapshot write and restore throughput of one AMS shard (issue 6) against
# writing the same number of bytes sequentially to the same disk in the same
# run: `go test -bench BenchmarkSnapshot ./ams/shard` (see
# ams/shard/snapshot_bench_test.go) fills a shard with ROWS rows of dim 16
# with Adagrad state, then
#   write:    WriteSnapshot + the manifest's Commit into a DirStore,
#   restore:  Restore into a fresh shard, the files first dropped from the
#             page cache,
#   seqwrite: the snapshot's bytes to one file through a 1 MiB buffer, then
#             fsync of the file and its directory (as DirStore commits),
# each write and restore paired with a seqwrite right after it; "ratio" is
# their MB/s over the paired seqwrite's (target: at least 0.5).
# Prints the benchmark's lines, the load, and a table per row count.
#
# Usage: [XPS_SNAPSHOT_ROWS=1000000,10000000] [XPS_SNAPSHOT_DIR=/mnt/disk] bench/snapshot.sh [COUNT]
#   COUNT: runs of each sub-benchmark (default 3); XPS_SNAPSHOT_ROWS: row
#   counts (default 1000000); XPS_SNAPSHOT_DIR: where to write (default a
#   temporary directory), to choose the disk.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load before: $(uptime)"
echo "cores: $(nproc); rows: ${XPS_SNAPSHOT_ROWS:-1000000}; dir: ${XPS_SNAPSHOT_DIR:-a temporary directory}"
go test -run '^$' -bench BenchmarkSnapshot -benchtime 1x -count "$count" -timeout 60m ./ams/shard | tee "$out"
echo "load after: $(uptime)"
/usr/bin/python3 - "$out" <<'PY'
import re, statistics, sys
runs = {}  # (rows, op) -> [metrics]
for line in open(sys.argv[1]):
    m = re.match(r"BenchmarkSnapshot/rows=(\S+)/(\w+)-\d+\s+\d+\s+(.*)", line)
    if not m:
        continue
    f = m.group(3).split()
    runs.setdefault((m.group(1), m.group(2)), []).append({u: float(v) for v, u in zip(f[::2], f[1::2])})
for rows in dict.fromkeys(r for r, _ in runs):
    print(f"\nrows={rows}\n")
    # The fastest seqwrite of the run, paired or alone: the conservative
    # reference when the disk's speed swings between runs.
    best = max([r["seqMB/s"] for op in ("write", "restore") for r in runs.get((rows, op), [])] +
               [r["MB/s"] for r in runs.get((rows, "seqwrite"), [])])
    print("| operation | rows/s (runs) | MB/s (runs) | paired seqwrite MB/s | ratio to paired seqwrite | median | "
          f"ratio to the run's best seqwrite ({best:.0f} MB/s), median | CPU s/op |")
    print("|---|---|---|---|---|---|---|---|")
    for op in ("write", "restore"):
        rs = runs.get((rows, op), [])
        if not rs:
            continue
        j = lambda k, fmt: " / ".join(fmt.format(r[k]) for r in rs)
        med = statistics.median(r["ratio"] for r in rs)
        low = statistics.median(r["MB/s"] for r in rs) / best
        print(f"| {op} | {j('rows/s', '{:,.0f}')} | {j('MB/s', '{:.0f}')} | {j('seqMB/s', '{:.0f}')} | "
              f"{j('ratio', '{:.2f}')} | **{med:.2f}** | {low:.2f} | {j('cpu-s/op', '{:.2f}')} |")
    rs = runs.get((rows, "seqwrite"), [])
    if rs:
        alone = " / ".join("{:.0f}".format(r["MB/s"]) for r in rs)
        print(f"\nseqwrite alone: {alone} MB/s; {rs[0]['B/row']:.1f} bytes of snapshot per row")
PY
