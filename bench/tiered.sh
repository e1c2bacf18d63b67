#!/usr/bin/env bash
# Tables larger than memory (issue 25): a tiered table (storage: tiered,
# its cold rows in one Pebble DB per shard) against the same table in
# memory.
#
#   bench/tiered.sh zipf [SAMPLES]
#     The CTR job (`worker -local`: 2 AMS shards and 1 worker in one
#     process; generated data: 23 fields, Zipf exponent 1.1, dim 16,
#     Adagrad, batch 256) trained twice on the same data in the same run:
#     the table in memory, then tiered with a DRAM budget of a tenth of the
#     rows the first run ended with (the table is 10x the budget). Prints
#     both runs' samples/s and their ratio, the tiered run's DRAM hit
#     ratio, disk reads per batch (ids read from disk, and batched reads,
#     per worker batch, over both shards) and rows moved, each run's peak
#     RSS (/usr/bin/time) and the tiered run's RSS beyond its budget's
#     rows. SAMPLES defaults to 1000000.
#
#   bench/tiered.sh scale [ROWS] [BUDGET]
#     cmd/tierbench grows one table (dim 16, Adagrad) on an in-process
#     shard of 2 stripes to ROWS rows (default 200000000) with a DRAM
#     budget of BUDGET rows (default 20000000), training it a batch at a
#     time (4096 unique ids, three quarters of them new, the rest Zipf 1.1
#     over the ids so far), and writes bench/out/tiered_scale.csv (rows,
#     RSS, disk bytes, ids/s, hit ratio, disk reads per batch as it grows)
#     and bench/out/tiered_scale.svg (cmd/plot). The cold tier goes to
#     TIER_DIR (default bench/out/tier, removed after): about 180 bytes of
#     disk per row.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
mode=${1:-zipf}

# job NAME ARGS...: one worker -local run; its JSON summary goes to
# $out/tiered_NAME.json, its peak RSS (KiB) to $out/tiered_NAME.rss.
job() {
	local name=$1
	shift
	/usr/bin/time -f "%M" -o "$out/tiered_$name.rss" "$out/worker" -local -quiet -json -dim 16 -epochs 1 \
		-train-samples "$samples" -set data.test_samples=20000 "$@" | tail -n 1 >"$out/tiered_$name.json"
}

case "$mode" in
zipf)
	samples=${2:-1000000}
	go build -o "$out/worker" ./cmd/worker
	echo "load: $(cat /proc/loadavg)"
	job memory
	rows=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tables"][0]["rows"])' "$out/tiered_memory.json")
	budget=$((rows / 10 / 2)) # a tenth of the rows, per shard (2 shards)
	echo "in memory: $rows rows; tiered: budget $budget rows per shard"
	job tiered -set 'model.tables[0].storage=tiered' -set "model.tables[0].budget.rows=$budget"
	echo "load: $(cat /proc/loadavg)"
	/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
m, t = (json.load(open(f"{out}/tiered_{n}.json")) for n in ("memory", "tiered"))
rm, rt = (int(open(f"{out}/tiered_{n}.rss").read().split()[-1]) * 1024 for n in ("memory", "tiered"))
tab, u = t["tables"][0], t["tables"][0]["tier"]
b = t["batches"]
hit = 1 - u["misses"] / u["lookups"] if u["lookups"] else 1
print(f"memory: {m['samples_per_second']:.0f} samples/s, AUC {m['test_auc']:.4f}, peak RSS {rm/2**20:.0f} MiB, {m['tables'][0]['rows']} rows")
print(f"tiered: {t['samples_per_second']:.0f} samples/s, AUC {t['test_auc']:.4f}, peak RSS {rt/2**20:.0f} MiB, "
      f"{tab['rows']} rows in DRAM ({tab['row_bytes']/2**20:.1f} MiB), {u['cold_rows']} on disk ({u['cold_bytes']/2**20:.0f} MiB encoded)")
print(f"tiered: DRAM hit ratio {hit:.3f}; per batch {u['disk_reads']/b:.0f} ids read from disk in {u['disk_batches']/b:.1f} batched reads, "
      f"{u['promoted']/b:.0f} promoted, {u['demoted']/b:.0f} demoted")
print(f"tiered RSS beyond its DRAM rows: {(rt - tab['row_bytes'])/2**20:.0f} MiB (in memory, beyond its rows: {(rm - m['tables'][0]['row_bytes'])/2**20:.0f} MiB)")
print(f"ratio tiered/memory samples/s {t['samples_per_second']/m['samples_per_second']:.3f}")
PY
	;;
scale)
	rows=${2:-200000000}
	budget=${3:-20000000}
	tier=${TIER_DIR:-$out/tier}
	rm -rf "$tier"
	mkdir -p "$tier"
	go build -o "$out/tierbench" ./cmd/tierbench
	go build -o "$out/plot" ./cmd/plot
	echo "load: $(cat /proc/loadavg)"
	echo "free disk under $tier: $(df -h --output=avail "$tier" | tail -n 1)"
	"$out/tierbench" -rows "$rows" -budget "$budget" -tier-dir "$tier" -new 0.75 | tee "$out/tiered_scale.csv"
	echo "load: $(cat /proc/loadavg)"
	rm -rf "$tier"
	"$out/plot" -o "$out/tiered_scale.svg" -x rows -y ids_per_second:number,rss_bytes,disk_bytes,hit_ratio \
		-title "A tiered table grown to $rows rows (dim 16, DRAM budget $budget rows)" "tiered=$out/tiered_scale.csv"
	echo "wrote $out/tiered_scale.svg"
	;;
*)
	echo "usage: bench/tiered.sh zipf [SAMPLES] | scale [ROWS] [BUDGET]" >&2
	exit 2
	;;
esac
