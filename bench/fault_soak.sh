#!/usr/bin/env bash
# The fault suite's soak (issue 51): runs the fault tests RUNS times each
# with a fresh random seed, optionally on a busy machine (STRESS=1: Debian's
# stress-ng holding one core at 100% for the whole soak, installed when
# missing and we may), and writes a table of seeds and results: one row per
# run with the test, its seed (XPS_FAULT_SEED=SEED replays its plan), pass or
# FAIL, its time, and the faults it made, to OUT (default
# bench/results/fault_soak-DATE.md) and stdout. A failing run's whole log is
# kept beside the table (OUT without .md, then -SEED.log).
#
#   RUNS=30 STRESS=1 bench/fault_soak.sh                    # the issue's target: 30 of 30
#   TESTS='TestFaultInjection$' RUNS=5 bench/fault_soak.sh    # one test
#   SEED=1795633954493361547 RUNS=20 TESTS='TestFaultInjectionKafka$' bench/fault_soak.sh   # replay one seed
#
# The commands and the test binary are built once (XPS_E2E_BIN); a run is
# about 2-3 minutes on 2 cores: 30 runs of both tests take about 2.5 hours.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
TESTS=${TESTS:-'TestFaultInjection$ TestFaultInjectionKafka$'}
STRESS=${STRESS:-0}
OUT=${OUT:-bench/results/fault_soak-$(date +%Y%m%d-%H%M).md}
mkdir -p "$(dirname "$OUT")"
logs=${OUT%.md}
stress_pid=
if [ "$STRESS" = 1 ]; then
	if ! command -v stress-ng >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng) >/dev/null
	fi
	command -v stress-ng >/dev/null || { echo "STRESS=1 needs stress-ng (apt-get install stress-ng)" >&2; exit 1; }
	stress-ng --cpu 1 --timeout 0 --quiet &
	stress_pid=$!
	trap 'kill $stress_pid 2>/dev/null || true' EXIT
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"; [ -z "$stress_pid" ] || kill $stress_pid 2>/dev/null || true' EXIT
go build -o "$bin/" ./cmd/...
go test -c -o "$bin/e2e.test" ./tests/e2e
export XPS_E2E_BIN=$bin
{
	echo "# Fault soak, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, stress-ng --cpu 1: $([ "$STRESS" = 1 ] && echo on || echo off)"
	echo
	echo "| test | seed | result | seconds | faults | note |"
	echo "| --- | --- | --- | --- | --- | --- |"
} | tee "$OUT"
pass=0 fail=0
for i in $(seq 1 "$RUNS"); do
	for t in $TESTS; do
		seed=${SEED:-$((RANDOM << 45 | RANDOM << 30 | RANDOM << 15 | RANDOM))}
		log=$(mktemp)
		began=$(date +%s)
		if (cd tests/e2e && XPS_FAULT_SEED=$seed "$bin/e2e.test" -test.run "$t" -test.v -test.timeout 30m) >"$log" 2>&1; then
			res=pass pass=$((pass + 1))
		else
			res=FAIL fail=$((fail + 1))
			cp "$log" "$logs-$seed.log"
		fi
		secs=$(($(date +%s) - began))
		faults=$(grep -o 'with [0-9]* of [0-9]* kills' "$log" | head -1 | awk '{print $2}' || true)
		note=$(grep -o 'lives: \[[^]]*\]' "$log" | tail -1 || true)
		if [ "$res" = FAIL ]; then
			note="log: $logs-$seed.log; $(grep -m1 -E -- '--- FAIL|panic:|timed out' "$log" | cut -c1-80 || true)"
		fi
		echo "| ${t%\$} | $seed | $res | $secs | ${faults:-?} | $note |" | tee -a "$OUT"
		rm -f "$log"
	done
done
echo | tee -a "$OUT"
echo "$pass passed, $fail failed" | tee -a "$OUT"
[ "$fail" = 0 ]
