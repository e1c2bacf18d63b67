#!/usr/bin/env bash
# The AMS pull path against raw TCP between two processes (issue 8): a
# `pullbench -serve` process holds one AMS shard (gRPC, a table of ROWS
# resident rows of dim 16) and a raw TCP responder; a `pullbench` client
# process pulls 50,000 random rows (3.2 MB of rows, 400 KB of ids) per
# request, one in flight and four in flight on its one connection, and asks
# the TCP responder for the same sizes on one connection, pipelined alike.
# Prints JSON lines and the ams/tcp ratios.
# Usage: bench/pull_tcp.sh [ROWS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1048576}
secs=${2:-5}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$out"' EXIT
go build -o "$out" ./cmd/pullbench
"$out/pullbench" -serve -rows "$rows" >"$out/serve.log" &
for _ in $(seq 100); do grep -q "^pullbench: ams" "$out/serve.log" 2>/dev/null && break; sleep 0.1; done
read -r _ _ ams _ tcp <"$out/serve.log"
echo "load before: $(cut -d" " -f1-3 /proc/loadavg)"
"$out/pullbench" -ams "$ams" -tcp "$tcp" -rows "$rows" -seconds "$secs" -inflight 1,4
echo "load after: $(cut -d" " -f1-3 /proc/loadavg)"
