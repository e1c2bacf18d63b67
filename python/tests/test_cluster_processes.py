"""Job.run and Job.fit joining a running cluster of separate processes
(etcd, the scheduler, two AMS shards: the README's "Running the processes
separately"), and xps.Cluster on it."""

import json
import socket
import subprocess

import pytest

import xps
from xps import binaries
from test_rows import frame


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cluster(tmp_path):
    """A cluster of separate processes; yields its etcd address and the
    scheduler's status page."""
    etcd, http = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    procs = []

    def start(name, *args):
        log = open(tmp_path / f"{name}.log", "w")
        procs.append((subprocess.Popen([binaries.find(name.split("-")[0]), *args], stdout=log, stderr=log), log))

    try:
        start("etcd", "-addr", etcd, "-dir", str(tmp_path / "etcd"))
        start("scheduler", "-etcd", etcd, "-shards", "2", "-workers", "1", "-http", http,
              "-snapshot-store", str(tmp_path / "snapshots"))
        start("ams-0", "-etcd", etcd, "-id", "ams-0", "-store", str(tmp_path / "snapshots"))
        start("ams-1", "-etcd", etcd, "-id", "ams-1", "-store", str(tmp_path / "snapshots"))
        yield etcd, http
    finally:
        for p, log in reversed(procs):  # the shards and the scheduler, then etcd
            p.terminate()
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            log.close()


def test_run_and_fit_join_a_running_cluster(cluster, tmp_path):
    etcd, http = cluster
    r = xps.Job(data={"train_samples": 20000, "test_samples": 2000}).run(etcd=etcd, cwd=tmp_path, progress=False)
    assert r.samples == 20000 and r.error == "" and 0.6 < r.test_auc < 1
    once = r.summary["exactly_once"]
    assert once["checked"] and once["exact"], once
    c = xps.Cluster(etcd=etcd, http=f"http://{http}/")
    assert c.state == "SERVING", c.status()
    assert sum("ams-" in json.dumps(m) for m in c.members) == 2, c.members
    snap = c.snapshot_now()
    assert snap.get("seq", 0) >= 1 and any(s.get("seq") == snap["seq"] for s in c.snapshots), (snap, c.snapshots)


def test_fit_joins_a_running_cluster(cluster, tmp_path):
    etcd, _ = cluster
    df = frame(20000)
    r = xps.Job().fit(df, label="click", fields=["user", "item", "price"], etcd=etcd, cwd=tmp_path, progress=False)
    assert r.samples == 20000 and r.error == ""
    once = r.summary["exactly_once"]
    assert once["checked"] and once["exact"] and once["samples"] == 20000, once
