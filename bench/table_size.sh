#!/usr/bin/env bash
# Speed against table size (issue 30): the embedded CTR job (`worker
# -local`: 2 AMS shards and 1 worker in one process; generated data, 23
# fields, Zipf exponent 1.05, dim 18, Adagrad, batch 256, one epoch of
# SAMPLES samples) run once per vocabulary, only the vocabulary varied, so
# that the table ends with more rows each time. Per run: rows, samples/s,
# unique ids pulled per second, the worker's wait on pulls, peak RSS and
# RSS per row (the whole process's, and the growth over the smallest run
# per added row) against the row's payload (8-byte id, dim values and dim
# Adagrad accumulators of 4 bytes, 8 bytes of statistics), and the
# tables' own accounted bytes per row (slabs and index). Peak RSS includes
# transients, such as an index's old and new arrays while it doubles. Writes
# bench/out/table_size.csv and the curve bench/out/table_size.svg
# (cmd/plot), and prints the largest run's rates as a fraction of the
# smallest's (the issue's target: ids pulled per second at 50M rows at
# least 0.85 of the rate at 1M rows; RSS per row at most 1.2x the payload).
#
# Usage: [SAMPLES=4000000] bench/table_size.sh [vocab...]
#        (default vocabularies 40000 400000 2000000 8000000)
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
samples=${SAMPLES:-4000000}
vocabs=("$@")
[ ${#vocabs[@]} -gt 0 ] || vocabs=(40000 400000 2000000 8000000)
go build -o "$out/worker" ./cmd/worker
go build -o "$out/plot" ./cmd/plot
models=$(mktemp -d)
trap 'rm -rf "$models"' EXIT
csv="$out/table_size.csv"
echo "vocab,rows,samples_per_s,ids_per_s,pull_wait_s,train_s,peak_rss,rss_per_row,table_bytes_per_row" >"$csv"
echo "samples: $samples; load before: $(cat /proc/loadavg)"
for v in "${vocabs[@]}"; do
	"$out/worker" -local -quiet -json -dim 18 -epochs 1 -train-samples "$samples" -set data.test_samples=20000 \
		-set data.zipf_s=1.05 -set "data.vocab=$v" -snapshot-store "$models/$v" | tail -n 1 |
		/usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin); v = sys.argv[1]
rows = sum(t["rows"] for t in r["tables"])
ids = r["unique_ids_per_batch"] * r["batches"] / r["seconds"]
sps, wait, secs, rss = r["samples_per_second"], r["fetch_wait_seconds"], r["seconds"], r["peak_rss_bytes"]
tab = sum(t["memory_bytes"] for t in r["tables"])
print("%s,%d,%.0f,%.0f,%.2f,%.2f,%d,%.1f,%.1f" % (v, rows, sps, ids, wait, secs, rss, rss / rows, tab / rows))' "$v" >>"$csv"
	tail -n 1 "$csv"
	echo "load: $(cat /proc/loadavg)"
	rm -rf "${models:?}/$v"
done
"$out/plot" -x rows -y samples_per_s:number,ids_per_s:number,pull_wait_s:number,rss_per_row:number \
	-title "CTR job against table rows (dim 18, Adagrad, Zipf 1.05, $samples samples)" -o "$out/table_size.svg" "$csv"
/usr/bin/python3 - "$csv" <<'PY'
import csv, sys
rs = list(csv.DictReader(open(sys.argv[1])))
a, b = rs[0], rs[-1]
payload = 8 + 2 * 4 * 18 + 8
ra, rb = int(a["rows"]), int(b["rows"])
grow = (int(b["peak_rss"]) - int(a["peak_rss"])) / max(rb - ra, 1)
print(f"{ra:,} -> {rb:,} rows: samples/s {float(b['samples_per_s']) / float(a['samples_per_s']):.2f}x, "
      f"ids pulled/s {float(b['ids_per_s']) / float(a['ids_per_s']):.2f}x (target >= 0.85); "
      f"pull wait {a['pull_wait_s']} -> {b['pull_wait_s']} s of {a['train_s']} -> {b['train_s']} s")
print(f"RSS per row at {rb:,} rows: {float(b['rss_per_row']):.0f} B, {float(b['rss_per_row']) / payload:.2f}x the {payload}-byte payload; "
      f"growth per added row {grow:.0f} B, {grow / payload:.2f}x (target <= 1.2x); "
      f"the tables' own bytes per row {float(b['table_bytes_per_row']):.0f} B, {float(b['table_bytes_per_row']) / payload:.2f}x")
PY
echo "load after: $(cat /proc/loadavg); curve: $out/table_size.svg"
