#!/usr/bin/python3
"""The serving peer of bench/serve.sh: torch_ctr.py's network scoring the requests our server gets.

Reads the requests serveload -dump wrote (JSON lines: {"user": "...", "candidates": ["...", ...]},
features FIELD:TOKEN[:VALUE]), builds ../../../shared/peers/torch_ctr.py's CTR model (hashed
embedding bag, sum pooling per field, MLP) with its default sizes, and scores the requests one at a
time, as a serving process does, for --seconds: each candidate is the user's features plus its own
(the model has no user level). The weights are the initial ones: latency does not depend on them.
Prints one JSON line: requests/s and latency percentiles, both for the whole request (parsing and
tensor building included, as a server must) and for the model's forward alone.
"""
import argparse, json, os, sys, time, zlib

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "peers"))
from torch_ctr import CTR, to_batch  # noqa: E402


def feats(s, buckets):
    out = []
    for tok in s.split():
        bits = tok.split(":")
        field, feat = int(bits[0]), bits[1]
        val = float(bits[2]) if len(bits) > 2 else 1.0
        out.append((field, zlib.crc32(f"{field}:{feat}".encode()) % buckets, val))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", required=True)
    ap.add_argument("--buckets", type=int, default=1 << 20)
    ap.add_argument("--dim", type=int, default=18)
    ap.add_argument("--hidden", default="200,80")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=20)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    reqs = [json.loads(l) for l in open(a.requests)]
    nfields = 1 + max(int(t.split(":")[0]) for r in reqs[:50] for s in [r.get("user", "")] + r["candidates"] for t in s.split())
    model = CTR(a.buckets, a.dim, nfields, [int(h) for h in a.hidden.split(",") if h])
    model.eval()
    lat, fwd = [], []
    start = time.perf_counter()
    i = 0
    with torch.no_grad():
        while time.perf_counter() - start < a.seconds:
            r = reqs[i % len(reqs)]
            i += 1
            t0 = time.perf_counter()
            user = feats(r.get("user", ""), a.buckets)
            rows = [user + feats(c, a.buckets) for c in r["candidates"]]
            ids, offs, w = to_batch(rows, nfields)
            t1 = time.perf_counter()
            torch.sigmoid(model(ids, offs, w, len(rows))).numpy()
            t2 = time.perf_counter()
            lat.append(t2 - t0)
            fwd.append(t2 - t1)
    secs = time.perf_counter() - start
    q = lambda v, p: round(1000 * float(np.quantile(np.array(v), p)), 3)
    print(json.dumps({
        "peer": "pytorch-cpu " + torch.__version__, "threads": a.threads, "requests": len(lat),
        "candidates_per_request": len(reqs[0]["candidates"]), "seconds": round(secs, 2),
        "requests_per_second": round(len(lat) / secs, 1), "p50_ms": q(lat, 0.5), "p99_ms": q(lat, 0.99),
        "forward_p50_ms": q(fwd, 0.5), "forward_p99_ms": q(fwd, 0.99),
        "forward_requests_per_second": round(len(fwd) / sum(fwd), 1),
    }))


if __name__ == "__main__":
    main()
