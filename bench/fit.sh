#!/usr/bin/env bash
# Job.fit against the same data from a file (issue 54): a DataFrame of
# ROWS rows (5 integer, 3 string and 2 float columns, a label), and the
# same rows written as a libFFM file; the same job (EPOCHS epochs, the
# default model) trains on each, alternated ROUNDS times:
#   - samples/s of fit (the row service) over samples/s of the file
#     (target: at least 0.8);
#   - the Python process's peak RSS during fit above its RSS with the
#     DataFrame built (the service's own memory: codes, dictionaries,
#     buffers), and the worker's peak RSS (VmHWM) in either run;
#   - that fit wrote no file: the files under the job's directory other
#     than the models' (xps-models) are listed (none expected).
#
# Usage: bench/fit.sh   Environment: ROWS (1000000), EPOCHS (2), ROUNDS (3).
# Needs: python3-numpy, python3-pandas, python3-venv (apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin" ./cmd/worker
/usr/bin/python3 -m venv --system-site-packages "$bin/venv"
"$bin/venv/bin/pip" install -q --no-deps --no-build-isolation ./python
XPS_BIN=$bin "$bin/venv/bin/python" bench/fit_bench.py "$bin" "${ROWS:-1000000}" "${EPOCHS:-2}" "${ROUNDS:-3}"
