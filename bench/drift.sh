#!/usr/bin/env bash
# Months of streaming in minutes (issue 22): a drifting stream (ctrgen
# -drift-lifetime: every id is drawn for DRIFT_LIFETIME samples, then its
# Zipf rank gets a new id) put into a kafkad broker (topic ctr, 4
# partitions, sample-group format), trained on twice by `worker -local
# -streaming` (embedded etcd, 2 AMS shards, scheduler):
#   run "nofilters": the default model;
#   run "filters":   -config bench/configs/drift_filters.yaml, the same model
#                    with admission (count, n 2), expiry (ttl 1M samples) and
#                    a memory budget per shard (2M rows).
# The whole stream is in the broker before a run starts, so a run's rate is
# its training rate. While a run trains, the worker's RSS (VmRSS of
# /proc/PID/status) and its last progress line are sampled every
# SAMPLE_EVERY seconds into $outdir/drift_RUN.csv:
#   samples,rows,rss_bytes,auc,window_auc,seconds
# (samples: "samples N" of the progress line; rows: "rows N", empty while
# the worker prints none; auc: the run's progressive AUC, "running auc X";
# window_auc: the AUC since the previous line, "auc X"; seconds: since the
# run started). A run is stopped (SIGINT) once it has trained SAMPLES
# samples, or has printed no progress line for IDLE seconds (it has caught
# up with the stream), or has printed none in its first STALL seconds.
# Then cmd/plot draws rows, RSS and progressive AUC over samples into SVG,
# and a summary compares the runs: final rows, final and peak RSS,
# progressive AUC and samples/s (the worker's JSON summary), and the ratios
# that issue 22 sets targets for: rows with/without (at most 0.30), AUC
# with minus without (at least -0.002), rate with/without (at least 0.90).
#
# Usage: bench/drift.sh [SAMPLES] [SVG]
#   SAMPLES   samples in the stream (default 20000000; 300000 for a smoke run)
#   SVG       the figure (default bench/out/drift.svg); the CSVs, the
#             workers' logs and JSON summaries go to the same directory
# Environment: DRIFT_LIFETIME (default 1000000), SAMPLE_EVERY (2),
#   IDLE (10), STALL (120), FILTERS_CONFIG (bench/configs/drift_filters.yaml),
#   PUT_RATE (4000 messages/s into the broker, one user run each),
#   KAFKAD_GOGC (10: the broker's GOGC).
# Memory: the broker holds the whole stream (about 430 bytes per sample:
# 8.6 GB for 20M), and the run without filters some GB of rows.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20000000}
svg=${2:-bench/out/drift.svg}
life=${DRIFT_LIFETIME:-1000000}
every=${SAMPLE_EVERY:-2}
stall=${STALL:-120}
idle=${IDLE:-10}
rate=${PUT_RATE:-4000}
filters=${FILTERS_CONFIG:-bench/configs/drift_filters.yaml}
outdir=$(dirname "$svg")
mkdir -p "$outdir"
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin" ./cmd/kafkad ./cmd/kafkaput ./cmd/worker ./cmd/ctrgen ./cmd/plot

echo "== generating $n drifting samples (ids live $life samples)"
"$bin/ctrgen" -format group -drift-lifetime "$life" -train "$bin/train.grp" -train-samples "$n" 2>&1 | sed -e 's/^/  /'
port=$((20000 + RANDOM % 20000))
# The broker keeps the stream in its Go heap; with the default GOGC (100) the
# garbage of serving fetches let it grow to twice the stream (19.8 GB for
# 8.6 GB) and the machine ran out of memory; GOGC=10 keeps it near the
# stream's size.
GOGC=${KAFKAD_GOGC:-10} "$bin/kafkad" -port "$port" -topics ctr:4 >"$bin/kafkad.log" &
kpid=$!
for _ in $(seq 50); do grep -q serving "$bin/kafkad.log" && break; sleep 0.2; done
b=127.0.0.1:$port
# kafkaput writes min(1000, rate/20) messages (user runs of 20 samples on
# average, 8.6 KB) a write: unthrottled, a partition's share of a write
# passes the broker's 1 MB batch limit; at 4000 runs/s it is about 430 KB.
echo "== putting them into the broker (topic ctr, 4 partitions, $rate user runs/s)"
"$bin/kafkaput" -brokers "$b" -topic ctr -format group -rate "$rate" "$bin/train.grp" 2>"$bin/kafkaput.log" | sed -e 's/^/  /' ||
	{ tail -c 600 "$bin/kafkaput.log"; exit 1; }
rm -f "$bin/train.grp"

# field LINE REGEX: the first group of REGEX (sed -E) in LINE, or nothing.
field() { sed -nE "s/.*$2.*/\1/p" <<<"$1"; }

# sample RUN PID CSV: one CSV row from the worker's RSS and last progress
# line (samples 0 before the first line); sets $line to that line.
sample() {
	local rss
	line=$(tail -n 20 "$outdir/drift_$1.log" | grep -a "samples/s" | tail -n 1 || true)
	rss=$(awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$2/status" 2>/dev/null || true)
	[ -n "$rss" ] || return 0
	local samples
	samples=$(field "$line" ' samples ([0-9]+) ')
	echo "${samples:-0},$(field "$line" ' rows[ =:]([0-9]+)'),$rss,$(field "$line" 'running auc ([0-9.]+)'),$(field "$line" 'loss [0-9.]+ auc ([0-9.]+)')",$SECONDS >>"$3"
}

# run NAME WORKER-ARGS...: trains on the stream, sampling into drift_NAME.csv,
# and stops the worker once it has trained the whole stream: its progress
# line shows SAMPLES samples, or no new progress line came for IDLE seconds
# (the worker prints none while it waits for messages, and the broker holds
# the whole stream); or when no progress line came for STALL seconds.
run() {
	local name=$1 csv="$outdir/drift_$1.csv" prev="" changed=0 samples pid rc=0 line=""
	shift
	echo "samples,rows,rss_bytes,auc,window_auc,seconds" >"$csv"
	echo "== run $name: worker -local -kafka -streaming $*"
	SECONDS=0
	"$bin/worker" -local -kafka "$b" -topic ctr -streaming true -format group -json "$@" \
		>"$outdir/drift_$name.out" 2>"$outdir/drift_$name.log" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep "$every"
		sample "$name" "$pid" "$csv"
		samples=$(field "$line" ' samples ([0-9]+) ')
		[ "$line" != "$prev" ] && prev=$line changed=$SECONDS
		if [ -n "$samples" ] && [ "$samples" -ge "$n" ]; then
			echo "  run $name: $samples samples trained"
		elif [ -n "$samples" ] && [ $((SECONDS - changed)) -ge "$idle" ]; then
			echo "  run $name: no progress line for ${idle}s after $samples samples: the stream is trained"
		elif [ -z "$samples" ] && [ "$SECONDS" -ge "$stall" ]; then
			echo "  run $name: no progress line in ${stall}s: stopping it"
		else
			continue
		fi
		kill -INT "$pid"
		break
	done
	wait "$pid" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "  run $name FAILED (exit status $rc); its log, $outdir/drift_$name.log, begins:"
		head -n 5 "$outdir/drift_$name.log" | sed -e 's/^/    /'
		return 1
	fi
	tail -n 2 "$outdir/drift_$name.log" | sed -e 's/^/  /'
}

run nofilters || true
run filters -config "$filters" || echo "  (the filter keys of $filters parse once the filters change has landed)"
kill "$kpid" 2>/dev/null || true

si() { numfmt --to=si "$1" 2>/dev/null || echo "$1"; }
"$bin/plot" -o "$svg" -title "drifting stream: $(si "$n") samples, ids live $(si "$life") samples" -y rows,rss_bytes,auc \
	"no filters=$outdir/drift_nofilters.csv" "filters=$outdir/drift_filters.csv" || echo "plot: no figure"
[ -s "$svg" ] && echo "== figure: $svg"
python3 - "$outdir" <<'EOF'
# The summary: per run, the last CSV row with each figure, the peak RSS, the
# worker's JSON summary (samples, samples/s of training time, progressive
# AUC), and the wall rate between the first and last CSV rows whose sample
# count moved; then the ratios of issue 22.
import csv, json, sys
out = sys.argv[1]
def load(name):
    r = {"name": name}
    try:
        rows = list(csv.DictReader(open(f"{out}/drift_{name}.csv")))
    except OSError as e:
        rows, r["error"] = [], str(e)
    last = lambda k: next((float(x[k]) for x in reversed(rows) if x[k]), None)
    r.update(rows=last("rows"), rss=last("rss_bytes"),
             peak=max((float(x["rss_bytes"]) for x in rows), default=None))
    moved = [x for i, x in enumerate(rows) if x["samples"] and (i == 0 or x["samples"] != rows[i - 1]["samples"])]
    if len(moved) > 1 and float(moved[-1]["seconds"]) > float(moved[0]["seconds"]):
        r["wall"] = (float(moved[-1]["samples"]) - float(moved[0]["samples"])) / (float(moved[-1]["seconds"]) - float(moved[0]["seconds"]))
    try:
        js = json.loads(open(f"{out}/drift_{name}.out").read().strip().splitlines()[-1])
        r.update(samples=js["samples"], rate=js["samples_per_second"], auc=js["progressive"]["auc"])
    except (OSError, IndexError, ValueError, KeyError, TypeError):
        log = open(f"{out}/drift_{name}.log", errors="replace").read().strip().splitlines() or ["(empty log)"]
        r["error"] = "FAILED: " + " | ".join(l.strip() for l in log[:3])[:300]
    return r
fmt = lambda v, f: ("-" if v is None else f.format(v)).rjust(9)
gib = lambda v: ("-" if v is None else f"{v / 2**30:.2f} GiB").rjust(10)
runs = [load("nofilters"), load("filters")]
print(f"{'run':10} {'samples':>10} {'rows':>11} {'RSS':>10} {'peak RSS':>10} {'prog. AUC':>9} {'samples/s':>9} {'wall s/s':>9}")
for r in runs:
    if "error" in r:
        print(f"{r['name']:10} {r['error']}")
        continue
    print(f"{r['name']:10} {fmt(r.get('samples'), '{:>10}'):>10} {fmt(r.get('rows'), '{:.0f}'):>11} {gib(r.get('rss'))} "
          f"{gib(r.get('peak'))} {fmt(r.get('auc'), '{:.4f}')} {fmt(r.get('rate'), '{:.0f}')} {fmt(r.get('wall'), '{:.0f}')}")
a, b = runs
div = lambda x, y: x / y
def ratio(k, f, op, target, ok):
    if a.get(k) is None or b.get(k) is None or (op is div and not a[k]):
        return "- (a run has no figure)"
    v = op(b[k], a[k])
    return f"{v:{f}} (target {target}: {'met' if ok(v) else 'NOT met'})"
print("rows with/without filters:", ratio("rows", ".3f", div, "<= 0.30", lambda v: v <= 0.30))
print("AUC with - without:       ", ratio("auc", "+.4f", lambda x, y: x - y, ">= -0.002", lambda v: v >= -0.002))
print("rate with/without:        ", ratio("rate", ".3f", div, ">= 0.90", lambda v: v >= 0.90), "(training time)")
print("wall rate with/without:   ", ratio("wall", ".3f", div, ">= 0.90", lambda v: v >= 0.90))
EOF
echo "load: $(cut -d" " -f1-3 /proc/loadavg)"
