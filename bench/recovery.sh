#!/usr/bin/env bash
# Recovery time after kill -9 of an AMS shard (issue 6): from the kill to
# training resumed, with a model of ROWS rows. Runs TestRecoveryTime
# (tests/e2e/recovery_bench_test.go, whose doc defines every
# milestone): real processes on loopback (embedded etcd, 3 cmd/ams
# shards, cmd/scheduler with a directory snapshot store, one cmd/worker),
# the worker's table filled to ROWS rows, snapshots taken, then KILLS
# kills of a shard, each restarted at once (and every 100ms while it
# exits, as a supervisor would). Prints the test's lines, the load before
# and after, and tables: the pause a snapshot costs the worker, and the
# recovery by phase (seconds from the kill).
#
# Usage: [XPS_RECOVERY_ROWS=1000000,10000000] [XPS_RECOVERY_KILLS=3]
#        [XPS_RECOVERY_SNAPSHOTS=2] [XPS_RECOVERY_SHARDS=3]
#        [XPS_RECOVERY_TTL=2s] bench/recovery.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export XPS_RECOVERY_ROWS=${XPS_RECOVERY_ROWS:-1000000}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load before: $(uptime)"
echo "cores: $(nproc); memory: $(free -g | awk '/^Mem:/ {print $2 " GiB"}'); rows: $XPS_RECOVERY_ROWS;" \
  "kills: ${XPS_RECOVERY_KILLS:-3}; shards: ${XPS_RECOVERY_SHARDS:-3}; lease TTL: ${XPS_RECOVERY_TTL:-2s}"
go test -count=1 -run 'TestRecoveryTime$' -v -timeout 60m ./tests/e2e | tee "$out"
echo "load after: $(uptime)"
/usr/bin/python3 - "$out" <<'PY'
import json, re, statistics, sys
recs = {}
for line in open(sys.argv[1]):
    m = re.search(r"(RECOVERY\w*_JSON|RECOVERY_JSON) (\{.*\})", line)
    if m:
        recs.setdefault(m.group(1), []).append(json.loads(m.group(2)))
fill = {r["rows"]: r for r in recs.get("RECOVERY_FILL_JSON", [])}
verify = {r["rows"]: r for r in recs.get("RECOVERY_VERIFY_JSON", [])}
print("\nsnapshots (the pause a snapshot costs the worker)\n")
print("| rows | snapshot | load | rows in it | scheduler seconds | worker paused s | MB | verify alone s | one pass over all rows s |")
print("|---|---|---|---|---|---|---|---|---|")
for r in recs.get("RECOVERY_SNAPSHOT_JSON", []):
    v = verify.get(r["rows"], {})
    mb = v.get("bytes", 0) / 1e6
    print(f"| {r['rows']:,} | {r['seq']} | {r.get('load1', 0):.1f} | {r['snapshot_rows']:,} | {r['seconds']:.2f} | "
          f"{r.get('worker_pause_s', float('nan')):.2f} | {mb:.0f} | {v.get('verify_s', float('nan')):.2f} | "
          f"{v.get('scan_s', float('nan')):.2f} |")
for rows, f in fill.items():
    print(f"\nrows={rows:,}: filled in {f['fill_s']:.1f}s; table {f['table_rows']:,} rows, "
          f"{f['table_bytes']/1e6:.0f} MB; shards' RSS {f['shards_rss_bytes']/1e6:.0f} MB")
cols = [("expired_s", "lease expired"), ("degraded_s", "DEGRADED"), ("rejoined_s", "rejoined"),
        ("restoring_s", "RESTORING"), ("serving_s", "SERVING"), ("resumekey_s", "resume written"),
        ("worker_s", "worker resumes"), ("trained_s", "**trained**"), ("progress_s", "progress line")]
print("\nrecovery: seconds from kill -9 to each milestone\n")
print("| rows | kill | load | victim | restarts | " + " | ".join(c[1] for c in cols) + " | other shards lost |")
print("|---|---|---|---|---|" + "---|" * len(cols) + "---|")
runs = recs.get("RECOVERY_JSON", [])
for r in runs:
    print(f"| {r['rows']:,} | {r['kill']} | {r.get('load1', 0):.1f} | {r['victim']} | {r['restart_attempts']} | " +
          " | ".join(f"{r[c]:.2f}" for c, _ in cols) + f" | {', '.join(r.get('others_lost') or []) or '-'} |")
print("\nCPU seconds from the kill to SERVING (the restarted shard: its whole life)\n")
print("| rows | kill | scheduler | worker | restarted shard | other shards |")
print("|---|---|---|---|---|---|")
for r in runs:
    c = r.get("cpu_s", {})
    others = " / ".join(f"{v:.2f}" for k, v in sorted(c.items()) if k.startswith("ams-") and k != r["victim"])
    print(f"| {r['rows']:,} | {r['kill']} | {c.get('scheduler', 0):.2f} | {c.get('worker', 0):.2f} | "
          f"{c.get(r['victim'], 0):.2f} | {others} |")
print("\nrecovery by phase, median over kills (min-max)\n")
phases = [("detect_s", "detection (DEGRADED)"), ("slot_s", "slot filled (RESTORING)"),
          ("restore_s", "restore (to SERVING)"), ("scheduler_restore_s", "of which scheduler's restore"),
          ("resume_s", "resume (to trained)"), ("total_s", "**total**")]
print("| rows | kills | " + " | ".join(p[1] for p in phases) + " | every kill under 10 s |")
print("|---|---|" + "---|" * len(phases) + "---|")
for rows in dict.fromkeys(r["rows"] for r in runs):
    rs = [r for r in runs if r["rows"] == rows]
    def cell(k):
        xs = [r[k] for r in rs if k in r]
        return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})" if xs else "-"
    met = "yes" if max(r["total_s"] for r in rs) < 10 else "no"
    print(f"| {rows:,} | {len(rs)} | " + " | ".join(cell(k) for k, _ in phases) + f" | {met} |")
print("\ntarget (issue 6): under 10 s from the kill to training resumed with 1M rows on loopback")
PY
