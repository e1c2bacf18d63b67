#!/usr/bin/env bash
# The project's test command (README: "Run the tests"; CI runs it via .ci/run):
# go vet, then every package's tests under the race detector, then the dense
# kernels once more with their pure-Go path.
# Tests that need ../shared/data skip with a message when it is absent.
set -euo pipefail
cd "$(dirname "$0")"
echo "== go vet ./..."
go vet ./...
echo "== go test -race ./..."
go test -race -timeout 15m ./...
# The dense kernels again with the pure-Go path (what other architectures
# run, and what the race detector can see: it does not see assembly).
echo "== go test -race -tags purego ./densenet ./ams"
go test -race -tags purego ./densenet ./ams
