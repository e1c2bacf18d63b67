#!/usr/bin/env bash
# Freshness of serving and the cost of exports (issue 23): a streaming job
# (`worker -local -kafka -streaming`, libFFM, the default model) trains from
# a kafkad broker while its scheduler exports every EXPORT_EVERY (deltas,
# a full export every 100), and `serve` follows the export store (polling
# every 200ms). Background traffic goes on at BG_RATE samples/s (kafkaput).
# `serveload -brokers` then runs TRIALS trials: each writes a burst of BURST
# samples into the topic, half positive with a new feature (the probe), half
# negative with another (the control), and times how long until the
# probe's score in serve's answers has gained 0.02 on the control's. The summary gives p50/p99 (target: under 10 s),
# and from the scheduler's "export written" log lines the rows and bytes of
# each delta and the training pause of each export.
#
# Usage: bench/freshness.sh
# Environment: WARM (200000 samples put first), BG_RATE (5000), BURST (2000),
#   TRIALS (20), EXPORT_EVERY (2s)
set -euo pipefail
cd "$(dirname "$0")/.."
warm=${WARM:-200000}
bg=${BG_RATE:-5000}
burst=${BURST:-2000}
trials=${TRIALS:-20}
every=${EXPORT_EVERY:-2s}
bin=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin" ./cmd/worker ./cmd/serve ./cmd/serveload ./cmd/ctrgen ./cmd/kafkad ./cmd/kafkaput
echo "== generating data"
"$bin/ctrgen" -train "$bin/train.libffm" -train-samples $((warm + 2000000)) 2>&1 | sed -e 's/^/  /'
head -n "$warm" "$bin/train.libffm" >"$bin/warm.libffm"
tail -n +"$((warm + 1))" "$bin/train.libffm" >"$bin/bg.libffm"
port=$((20000 + RANDOM % 20000))
"$bin/kafkad" -port "$port" -topics ctr:4 >"$bin/kafkad.log" &
for _ in $(seq 50); do grep -q serving "$bin/kafkad.log" && break; sleep 0.2; done
b=127.0.0.1:$port
"$bin/kafkaput" -brokers "$b" -topic ctr "$bin/warm.libffm" | sed -e 's/^/  /'
echo "== streaming job, exports every $every; serve following them"
"$bin/worker" -local -kafka "$b" -topic ctr -streaming true -log-level info \
  -set "export.store=$bin/exports" -set "export.every=$every" >"$bin/worker.out" 2>"$bin/worker.log" &
for _ in $(seq 600); do [ -e "$bin/exports" ] && ls "$bin/exports" | grep -q exp- && break; sleep 0.1; done
sport=$((20000 + RANDOM % 20000))
"$bin/serve" -store "$bin/exports" -listen "127.0.0.1:$sport" -poll 200ms 2>"$bin/serve.log" &
for _ in $(seq 600); do curl -sf "127.0.0.1:$sport/healthz" >/dev/null && break; sleep 0.1; done
"$bin/kafkaput" -brokers "$b" -topic ctr -rate "$bg" "$bin/bg.libffm" >/dev/null 2>&1 &
sleep 5
echo "== $trials trials of $burst probe samples"
res=$("$bin/serveload" -url "http://127.0.0.1:$sport/predict" -brokers "$b" -topic ctr -burst "$burst" -trials "$trials")
echo "  $res"
python3 - "$res" "$bin/worker.log" <<'PY'
import json, re, statistics, sys
r = json.loads(sys.argv[1])
print(f"freshness: p50 {r['p50_s']:.2f} s, p99 {r['p99_s']:.2f} s, max {r['max_s']:.2f} s over {r['trials'] - r['missed']} of {r['trials']} trials "
      f"(target p99 < 10 s: {'met' if r['missed'] == 0 and r['p99_s'] < 10 else 'NOT met'})")
rows = []
for line in open(sys.argv[2], errors="replace"):
    if "export written" not in line or "kind=delta" not in line:
        continue
    kv = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
    rows.append((int(kv["rows"]), int(kv["bytes"]), float(kv["pause_seconds"]), float(kv["seconds"])))
if rows:
    rs, bs, ps, ss = zip(*rows)
    print(f"deltas: {len(rows)}; rows per delta median {statistics.median(rs):.0f}, bytes per delta median {statistics.median(bs):.0f} "
          f"({statistics.median(b / max(r, 1) for r, b, _, _ in rows):.1f} bytes per row touched); "
          f"pause per export median {1000 * statistics.median(ps):.0f} ms, max {1000 * max(ps):.0f} ms; "
          f"write median {1000 * statistics.median(ss):.0f} ms")
PY
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
