#!/usr/bin/env bash
# Two builds of serve on one export, alternated (issue 52: a change to
# the request path measured against the build before it, the same run):
# a model trained on generated sample-group data (TRAIN samples, the
# default model), exported once; serve built at revision BEFORE (default
# HEAD~1, from a git worktree) and at the working tree; for ROUNDS
# rounds, each build in turn loads the export and serveload sends
# requests of CANDIDATES candidates at each of IN_FLIGHT in flight for
# RUN_SECONDS each. Then a table of p50, p99 and requests/s by build and
# setting, each the median of the rounds (and their spread).
#
# Usage: bench/serve_ab.sh [TRAIN]   (default 1000000 samples)
# Environment: BEFORE (HEAD~1), ROUNDS (3), CANDIDATES (150), IN_FLIGHT
# ("1 2 4 8"), RUN_SECONDS (10), SERVE_FLAGS (added to both builds').
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
before=${BEFORE:-HEAD~1}
rounds=${ROUNDS:-3}
k=${CANDIDATES:-150}
inflight=(${IN_FLIGHT:-1 2 4 8})
secs=${RUN_SECONDS:-10}
bin=$(mktemp -d)
wt="$bin/before-tree"
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; git worktree remove --force "$wt" 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin" ./cmd/worker ./cmd/serve ./cmd/serveload ./cmd/ctrgen
mv "$bin/serve" "$bin/serve-after"
git worktree add -q --detach "$wt" "$before"
(cd "$wt" && go build -o "$bin/serve-before" ./cmd/serve)
echo "before: $(git rev-parse --short "$before"), after: the working tree at $(git rev-parse --short HEAD)"
echo "== generating $n training samples (sample groups), training, exporting"
"$bin/ctrgen" -format group -train "$bin/train.grp" -test "$bin/test.grp" -train-samples "$n" -test-samples 20000 >/dev/null 2>&1
"$bin/worker" -local -quiet -set "job.train=$bin/train.grp" -set "job.test=$bin/test.grp" -set train.format=group \
	-set "export.store=$bin/exports" -set export.every=-1s >/dev/null 2>&1
out="$bin/runs.jsonl"
for r in $(seq "$rounds"); do
	for build in before after; do
		port=$((20000 + RANDOM % 20000))
		# shellcheck disable=SC2086
		"$bin/serve-$build" -store "$bin/exports" -listen "127.0.0.1:$port" -grpc "" ${SERVE_FLAGS:-} 2>"$bin/serve.log" &
		for _ in $(seq 300); do curl -sf "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
		for f in "${inflight[@]}"; do
			res=$("$bin/serveload" -url "http://127.0.0.1:$port/predict" -test "$bin/test.grp" -candidates "$k" -in-flight "$f" -duration "${secs}s")
			echo "{\"round\": $r, \"build\": \"$build\", \"run\": $res}" >>"$out"
			echo "  round $r, $build, $f in flight: $res"
		done
		kill %1 2>/dev/null || true
		wait %1 2>/dev/null || true
	done
done
python3 - "$out" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
print("| in flight | build | p50 ms | p99 ms | requests/s | (rounds: p99 / requests/s) |")
print("|---|---|---|---|---|---|")
for f in sorted({r["run"]["in_flight"] for r in runs}):
    for b in ("before", "after"):
        rs = [r["run"] for r in runs if r["build"] == b and r["run"]["in_flight"] == f]
        med = lambda k: statistics.median(x[k] for x in rs)
        spread = ", ".join(f"{x['p99_ms']:.2f} / {x['requests_per_second']:.0f}" for x in rs)
        print(f"| {f} | {b} | {med('p50_ms'):.2f} | {med('p99_ms'):.2f} | {med('requests_per_second'):.0f} | {spread} |")
PY
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
