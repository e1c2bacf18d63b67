#!/usr/bin/env bash
# Where a row's RSS goes (issue 30): the embedded CTR job (`worker -local`,
# dim 18, Adagrad, Zipf 1.05, one epoch of SAMPLES generated samples) run at
# a small and a large vocabulary; the process's peak RSS (VmHWM, sampled
# every 50 ms) is read just before the final model is saved (after the
# last evaluation) and at the end, and the growth per added row of each is
# set against the row's payload (8-byte id, 18 values and 18 accumulators
# of 4 bytes, 8 bytes of statistics: 160 B) and against the tables' own
# accounted bytes (slabs and index). The difference between the two peaks
# is what the final snapshot's id lists (ams.RowSet and its sort) add.
#
# Usage: [SAMPLES=1000000] bench/table_rss.sh [small_vocab large_vocab]
#        (default 40000 2000000)
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
go build -o "$out/worker" ./cmd/worker
models=$(mktemp -d)
trap 'rm -rf "$models"' EXIT
echo "samples: ${SAMPLES:-1000000}; load before: $(cat /proc/loadavg)"
/usr/bin/python3 - "$out/worker" "$models" "${SAMPLES:-1000000}" "${1:-40000}" "${2:-2000000}" <<'PY'
import json, re, subprocess, sys, threading, time
worker, models, samples, vocabs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def run(vocab):
    p = subprocess.Popen([worker, "-local", "-json", "-dim", "18", "-epochs", "1", "-train-samples", samples,
                          "-set", "data.test_samples=20000", "-set", "data.zipf_s=1.05", "-set", "data.vocab=" + vocab,
                          "-snapshot-store", f"{models}/{vocab}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend((time.time(), l.rstrip()) for l in p.stdout))
    reader.start()
    hwm = []
    while p.poll() is None:
        try:
            s = open(f"/proc/{p.pid}/status").read()
            hwm.append((time.time(), int(re.search(r"VmHWM:\s+(\d+)", s).group(1)) * 1024))
        except (OSError, AttributeError):
            pass
        time.sleep(0.05)
    reader.join()
    if p.returncode != 0:
        sys.exit("worker failed:\n" + "\n".join(l for _, l in lines[-20:]))
    r = json.loads([l for _, l in lines if l.startswith("{")][-1])
    saved = [t for t, l in lines if "eval after epoch" in l][-1]
    return {"vocab": vocab, "rows": sum(t["rows"] for t in r["tables"]),
            "table": sum(t["memory_bytes"] for t in r["tables"]),
            "before_save": max(h for t, h in hwm if t <= saved), "peak": r["peak_rss_bytes"]}
a, b = run(vocabs[0]), run(vocabs[1])
for x in (a, b):
    print(f"vocab {x['vocab']}: {x['rows']:,} rows, tables {x['table']/1e6:,.0f} MB, peak RSS before the final save "
          f"{x['before_save']/1e6:,.0f} MB, at the end {x['peak']/1e6:,.0f} MB")
d, payload = b["rows"] - a["rows"], 160
for what, k in (("tables' own bytes", "table"), ("peak RSS before the final save", "before_save"), ("peak RSS at the end", "peak")):
    g = (b[k] - a[k]) / d
    print(f"growth per added row, {what}: {g:.1f} B = {g / payload:.2f}x the payload")
print(f"the final save adds {(b['peak'] - b['before_save']) / b['rows']:.1f} B a row at {b['rows']:,} rows")
PY
echo "load after: $(cat /proc/loadavg)"
