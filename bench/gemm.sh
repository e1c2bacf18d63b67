#!/usr/bin/env bash
# float32 GEMM (issue 8): ours (densenet.Gemm, BenchmarkGemmShapes) against
# OpenBLAS through NumPy (../shared/peers/blas_gemm.py) on the same shapes
# and layouts (nn, tn, nt), at 1 and 2 threads, in the same run. Prints a
# markdown table of GFLOP/s and ours/OpenBLAS.
#
# Usage: bench/gemm.sh [benchtime]   (default 200x)
# Needs /usr/bin/python3 with python3-numpy and libopenblas0-pthread.
set -euo pipefail
cd "$(dirname "$0")/.."
bt=${1:-200x}
out=bench/out
mkdir -p "$out"
echo "load: $(cat /proc/loadavg)"
go test -run '^$' -bench '^BenchmarkGemmShapes$' -benchtime "$bt" -cpu 1,2 ./densenet > "$out/gemm_ours.txt"
: > "$out/gemm_blas.txt"
for t in 1 2; do
	OPENBLAS_NUM_THREADS=$t /usr/bin/python3 ../shared/peers/blas_gemm.py >> "$out/gemm_blas.txt"
done
echo "load: $(cat /proc/loadavg)"
/usr/bin/python3 - "$out/gemm_ours.txt" "$out/gemm_blas.txt" <<'PY'
import json, re, sys
ours, kernels = {}, []
for line in open(sys.argv[1]):
    m = re.match(r"BenchmarkGemmShapes/shape=(\S+)/layout=(\w+)/kernel=(\w+)(?:-(\d+))?\s.*?([\d.]+) GFLOP/s", line)
    if m:
        ours[(m[1], m[2], m[4] or "1", m[3])] = float(m[5])
        if m[3] not in kernels:
            kernels.append(m[3])
blas = {}
for line in open(sys.argv[2]):
    d = json.loads(line)
    blas[(f"{d['m']}x{d['k']}x{d['n']}", d["layout"], str(d["threads"]))] = d["gflops"]
head = "| shape MxKxN | layout | threads | OpenBLAS GFLOP/s |"
for kn in kernels:
    head += f" {kn} GFLOP/s | ratio |"
print(head)
print("|---" * (4 + 2 * len(kernels)) + "|")
worst = {}
for key in sorted(blas, key=lambda k: (k[2], [int(x) for x in k[0].split("x")], k[1])):
    row = f"| {key[0]} | {key[1]} | {key[2]} | {blas[key]:.1f} |"
    for kn in kernels:
        g = ours.get(key + (kn,))
        if g is None:
            row += " - | - |"
            continue
        r = g / blas[key]
        worst[kn] = min(worst.get(kn, r), r)
        row += f" {g:.1f} | {r:.2f} |"
    print(row)
for kn in kernels:
    print(f"lowest ratio, {kn}: {worst[kn]:.2f} (issue 58's target 0.90)")
PY
