#!/usr/bin/env bash
# tests/e2e's time under load (issue 51: under 10 minutes with
# `stress-ng --cpu 1` holding one of the cores): the package's tests run
# once (-count=1, -json) while stress-ng spins; prints the package's
# time, the load seen, and its ten longest tests.
#
# Usage: bench/e2e_stress.sh   Environment: STRESS (1: stress-ng --cpu 1;
# 0: no load), OUT (the -json stream's file; default a temporary one).
# Needs: stress-ng (apt-get install stress-ng), and what tests/e2e needs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$(mktemp)}
pid=
if [ "${STRESS:-1}" = 1 ]; then
	command -v stress-ng >/dev/null || { echo "needs stress-ng (apt-get install stress-ng)" >&2; exit 1; }
	stress-ng --cpu 1 --quiet &
	pid=$!
fi
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true' EXIT
go test -count=1 -run '^$' ./tests/e2e >/dev/null # the test binary built before the clock starts
start=$(date +%s)
rc=0
go test -count=1 -timeout 30m -json ./tests/e2e >"$out" || rc=$?
end=$(date +%s)
echo "tests/e2e: $((end - start)) s wall (rc $rc), stress-ng --cpu 1: ${STRESS:-1}, load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("Action") in ("pass", "fail", "skip") and e.get("Test") and "/" not in e["Test"]:
        rows.append((e.get("Elapsed", 0), e["Action"], e["Test"]))
for el, act, name in sorted(rows, reverse=True)[:10]:
    print(f"  {el:7.1f} s  {act:4}  {name}")
PY
exit $rc
