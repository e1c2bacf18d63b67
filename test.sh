#!/usr/bin/env bash
# The project's test command (README: "Run the tests"; CI runs it via .ci/run).
# It runs every package's tests in both builds:
#   1. the default build: embedding rows in mmap'd huge-page regions outside
#      the Go heap, assembly kernels (GEMM, Adam);
#   2. -tags purego under the race detector: rows on the Go heap and the
#      pure-Go kernels, the build the detector can see into (it sees neither
#      mmap'd memory nor assembly); tests/e2e skips itself there, its
#      processes being built without the detector.
# 3. .ci/fuzz.sh: every fuzz target (func FuzzXxx) for FUZZTIME each
#    (default 10s: 37 targets, about 8 minutes on 2 busy cores, 2 of them
#    building the instrumented test binaries), from the seeds and the
#    corpora committed under testdata/fuzz; a failing input is written
#    there and named, and the step fails;
# 4. charts/test: the Helm chart linted, rendered, decoded strictly and run
#    in Docker containers from the image deploy/image/build.sh builds
#    (Helm is built once by deploy/tools.sh and cached; without Docker the
#    container test skips).
# 5. python/: the Python package installed into a fresh venv over Debian's
#    python3 packages, and its pytest suite against the real binaries
#    (built once by the package, as a user's would be); then the notebook
#    examples/notebook/tour.ipynb executed headless.
# Tests that need ../shared/data skip with a message when it is absent.
set -euo pipefail
cd "$(dirname "$0")"
# kcat (librdkafka) produces into the test Kafka broker in the interop test;
# installed when missing and we may (root, as in CI), else that test skips.
if ! command -v kcat >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	echo "== apt-get install kcat (for the Kafka interop test)"
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat) >/dev/null || echo "could not install kcat: its test will skip"
fi
# Debian's prometheus (a real server scraping a cluster: tests/e2e) and
# docker-compose (charts/test), when missing and we may install them.
for pkg in prometheus:prometheus docker-compose:docker-compose; do
	if ! command -v "${pkg%%:*}" >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "== apt-get install ${pkg#*:}"
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkg#*:}") >/dev/null ||
			echo "could not install ${pkg#*:}: its test will skip"
	fi
done
# Debian's chromium (with fonts-liberation, to draw text) renders the status
# page headless in tests/e2e and screenshots it; installed likewise.
if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	echo "== apt-get install chromium (for the status page test)"
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-liberation) >/dev/null ||
		echo "could not install chromium: its test will skip"
fi
# Debian's python3 packages the Python package (python/) and its tests
# need (torch for to_torch's parity tests; pandas, matplotlib, ipykernel
# and nbconvert for the notebook); installed when missing and we may, else
# its step fails saying so.
py_pkgs="python3-venv python3-setuptools python3-wheel python3-numpy python3-grpcio python3-protobuf python3-pytest python3-torch
	python3-pandas python3-matplotlib python3-ipykernel jupyter-nbconvert"
if ! /usr/bin/python3 -c 'import venv, setuptools, wheel, numpy, grpc, google.protobuf, pytest, torch, pandas, matplotlib, ipykernel, nbconvert' 2>/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	echo "== apt-get install $py_pkgs (for python/)"
	# shellcheck disable=SC2086
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $py_pkgs) >/dev/null ||
		echo "could not install $py_pkgs: python/'s tests will fail"
fi
echo "== go vet ./... (default and purego builds)"
go vet ./...
go vet -tags purego ./...
echo "== go test ./... (default build)"
# Test artifacts (the status page's screenshot) are kept in test-artifacts/.
mkdir -p test-artifacts
# The longest packages are named first, so that go test starts them first
# (it runs -p packages at once, in the order given) instead of last, after
# the many short ones: tests/e2e alone takes about as long as the rest.
go test -timeout 15m -artifacts -outputdir "$PWD/test-artifacts" ./tests/e2e ./job/ctrtrain ./job/xctrain ./...
echo "== go test -race -tags purego ./... (heap slabs, pure-Go kernels)"
go test -race -tags purego -timeout 15m ./job/xctrain ./job/ctrtrain ./serve ./...
echo "== .ci/fuzz.sh: every fuzz target, ${FUZZTIME:-10s} each"
.ci/fuzz.sh
echo "== charts/ (a module of its own): helm lint and template, strict decoding, the chart's pods in Docker containers"
(cd charts/test && go vet ./... && go test -count=1 -timeout 25m ./...) # -count=1: helm and docker read files the test cache cannot see
echo "== python/: the package xps in a venv over Debian's python3 packages, its pytest suite against the real binaries"
venv=$(mktemp -d)
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --no-deps --no-build-isolation ./python
XPS_CACHE="$venv/bin-cache" "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests
echo "== examples/notebook: the tour notebook executed headless (nbconvert), failing on a failed cell"
"$venv/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null # the venv's python runs its cells
(cd examples/notebook && XPS_CACHE="$venv/bin-cache" "$venv/bin/python" -m nbconvert --to notebook --execute \
	--ExecutePreprocessor.timeout=120 --output-dir "$venv/notebook" tour.ipynb)
rm -rf "$venv"
echo "== examples/ (a module of its own, on the public API only): build, vet, test, run"
(cd examples && go vet ./... && go test ./... && go run ./customsource -samples 100000 && go run ./ownmodel -train 100000 -epochs 3)
