"""bench/fit.sh's measurement: Job.fit on a DataFrame against the same rows
from a libFFM file, alternated (see bench/fit.sh)."""

import os
import pathlib
import statistics
import sys
import threading
import time

import numpy as np
import pandas as pd

import xps

work, n, epochs, rounds = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])


def rss_kib(pid="self", key="VmRSS"):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


rng = np.random.default_rng(7)
cols = {f"i{k}": rng.integers(0, 10 ** (k + 2), n) for k in range(5)}
for k in range(3):
    cols[f"s{k}"] = pd.Categorical.from_codes(rng.integers(0, 1000, n), [f"v{k}_{j}" for j in range(1000)]).astype(object)
cols["f0"], cols["f1"] = rng.random(n), rng.random(n).astype("float32")
df = pd.DataFrame(cols)
hot = (df.i0 % 3 == 0) | (df.s0.str.endswith("7"))
df["click"] = (rng.random(n) < np.where(hot, 0.6, 0.1)).astype("int64")
fields = [c for c in df.columns if c != "click"]
print(f"{n} rows, {len(fields)} fields; the DataFrame: {df.memory_usage(deep=True).sum() / 2**20:.0f} MiB "
      f"(numeric {df.select_dtypes('number').memory_usage().sum() / 2**20:.0f} MiB); this process {rss_kib() / 1024:.0f} MiB")

path = work / "same.libffm"
t0 = time.time()
pid = os.fork()  # the text is built in a child: this process's RSS stays the DataFrame's
if pid == 0:
    parts = [df.click.astype(str)]
    for i, c in enumerate(fields):
        if c.startswith("f"):
            parts.append(f"{i}:{c}:" + df[c].map(lambda v: repr(float(np.float32(v)))))
        else:
            parts.append(f"{i}:" + df[c].astype(str) + ":1")
    path.write_text("\n".join(parts[0].str.cat(parts[1:], sep=" ")) + "\n")
    os._exit(0)
if os.waitpid(pid, 0)[1] != 0:
    sys.exit("writing the libFFM file failed")
print(f"the same rows as libFFM: {path.stat().st_size / 2**20:.0f} MiB, written in {time.time() - t0:.0f}s")


class Peak:
    """Samples this process's RSS and its children's (the worker's) peak
    RSS (VmHWM) every 20 ms until done()."""

    def __init__(self):
        self.me, self.child, self.stop = 0, 0, threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        me = str(os.getpid())
        while not self.stop.wait(0.02):
            self.me = max(self.me, rss_kib())
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1] == me:
                        self.child = max(self.child, rss_kib(pid, "VmHWM"))
                except (OSError, IndexError):
                    pass

    def done(self):
        self.stop.set()
        self.t.join()
        return self


job = xps.Job(train={"epochs": epochs, "progress_every": "1s"})
res = {"file": [], "fit": []}
mem = {"file": [], "fit": [], "py": []}
for r in range(rounds):
    for kind in ("file", "fit"):
        d = work / f"{kind}{r}"
        d.mkdir()
        base = rss_kib()
        peak = Peak()

        if kind == "file":
            out = xps.Job(job={"train": [str(path)]}, train={"epochs": epochs, "format": "libffm", "progress_every": "1s"}).run(
                progress=False, cwd=d)
        else:
            out = job.fit(df, label="click", fields=fields, progress=False, cwd=d)
        peak.done()
        res[kind].append(out.samples_per_second)
        mem[kind].append(peak.child)
        if kind == "fit":
            mem["py"].append(peak.me - base)
            stray = [str(p.relative_to(d)) for p in d.rglob("*") if p.is_file() and "xps-models" not in p.parts]
            print(f"round {r + 1}: fit wrote {stray or 'no file'} outside xps-models")
        print(f"round {r + 1} {kind}: {out.samples_per_second:,.0f} samples/s, {out.samples:,} samples, "
              f"worker peak RSS {peak.child / 1024:.0f} MiB")

f, t = statistics.median(res["fit"]), statistics.median(res["file"])
print(f"median: fit {f:,.0f} samples/s, file {t:,.0f}: fit/file {f / t:.2f} (target 0.8)")
print(f"this process's peak RSS during fit above its RSS before it: median {statistics.median(mem['py']) / 1024:.0f} MiB; "
      f"worker peak RSS fit {statistics.median(mem['fit']) / 1024:.0f} MiB, file {statistics.median(mem['file']) / 1024:.0f} MiB")
