"""xps.Job against the real worker binary: the config checked by the
worker, a job followed through its events, stopped with Ctrl-C and
resumed."""

import math
import threading

import pytest

import xps
from xps.job import ConfigError, JobError

SMALL = {"data": {"train_samples": 20000, "test_samples": 2000}}


def test_unknown_key_is_refused_with_the_workers_message():
    with pytest.raises(ConfigError) as e:
        xps.Job(SMALL, train={"epochz": 2})
    assert "epochz" in str(e.value) and "no such key" in str(e.value)


def test_wrong_type_is_refused_with_the_key():
    with pytest.raises(ConfigError) as e:
        xps.Job(SMALL, **{"train.batch_size": "many"})
    assert "train.batch_size" in str(e.value)


def test_config_sources_agree(tmp_path):
    f = tmp_path / "job.yaml"
    f.write_text("model:\n  kind: deepfm\ntrain:\n  epochs: 3\n")
    a = xps.Job(f)
    b = xps.Job({"model": {"kind": "deepfm"}, "train": {"epochs": 3}})
    c = xps.Job(model={"kind": "deepfm"}, **{"train.epochs": 3})
    assert a.config_yaml == b.config_yaml == c.config_yaml
    assert "kind: deepfm" in a.config_yaml


def test_run_follows_the_events(tmp_path):
    seen = []
    job = xps.Job(SMALL, train={"epochs": 2, "progress_every": "100ms"})
    r = job.run(cwd=tmp_path, progress=False, on_progress=seen.append)
    assert r.samples == 40000 and r.error == "" and not r.stopped
    assert 0.6 < r.test_auc < 1
    assert seen and seen == r.progress
    assert seen[-1].samples > 0 and seen[-1].epochs == 2
    assert r.model["job"] and (tmp_path / "xps-models").is_dir()
    curves = r.curves
    n = len(curves)
    assert n == len(seen)


def test_ctrl_c_stops_cleanly_and_the_job_resumes(tmp_path):
    job = xps.Job(data={"train_samples": 300000, "test_samples": 2000},
                  train={"epochs": 2, "progress_every": "100ms"})

    def interrupt(p):
        raise KeyboardInterrupt  # as Ctrl-C would, at the first report

    with pytest.raises(KeyboardInterrupt):
        job.run(cwd=tmp_path, progress=False, on_progress=interrupt)
    stopped = job.result
    assert stopped.stopped and stopped.model, stopped
    assert stopped.samples < 600000, "the job was not stopped early"
    r = job.run(cwd=tmp_path, progress=False, resume=stopped)
    assert r.error == "" and not r.stopped
    assert r.model["job"] == stopped.model["job"]
    assert 0.6 < r.test_auc < 1
    assert stopped.samples + r.samples == 600000, "the resumed job trained what the stopped one had not"
    once = r.summary["exactly_once"]
    assert once["checked"] and once["exact"] and once["samples"] == 600000, once


def test_cluster_of_a_running_job(tmp_path):
    exports = tmp_path / "exports"
    job = xps.Job(data={"train_samples": 300000, "test_samples": 2000},
                  train={"epochs": 20, "progress_every": "100ms"},
                  export={"store": str(exports), "every": "-1s"})
    first = threading.Event()
    run = job.start(cwd=tmp_path, progress=False, on_progress=lambda p: first.set())
    try:
        c = run.started(timeout=300)
        assert c is not None and c.etcd and c.http, c
        assert first.wait(300), "no progress report"
        kinds = sorted(m["kind"] for m in c.members)
        assert kinds == ["ams", "ams", "scheduler", "worker"], kinds
        assert c.state == "SERVING"
        snap = c.snapshot_now()
        assert snap["seq"] > 0 and not snap.get("error"), snap
        assert snap["seq"] in [s["seq"] for s in c.snapshots]
        ex = c.export_now()
        assert ex["seq"] > 0 and ex["kind"] == "full" and ex["rows"] > 0, ex
        assert [e["seq"] for e in c.exports] == [ex["seq"]]
        assert any(exports.iterdir()), "the export store is empty"
    finally:
        run.stop()
    r = run.wait()
    assert r.stopped and r.model and r.samples < 6000000


def test_cluster_without_an_answer():
    c = xps.Cluster(http="http://127.0.0.1:9/", timeout=2)
    with pytest.raises(xps.ClusterError) as e:
        c.status()
    assert "127.0.0.1:9" in str(e.value)
    with pytest.raises(xps.ClusterError):
        c.snapshot_now()  # no etcd given


def test_a_failing_job_raises_with_the_reason(tmp_path):
    job = xps.Job(SMALL, job={"train": [str(tmp_path / "missing.libffm")]})
    with pytest.raises(JobError) as e:
        job.run(cwd=tmp_path, progress=False)
    assert "missing.libffm" in str(e.value)


def test_progress_line():
    p = xps.job.Progress({"epoch": 1, "epochs": 2, "samples": 1234, "samples_per_second": 5000.0,
                          "loss": None, "auc": 0.75, "test_auc": None})
    assert math.isnan(p.loss)
    assert p.line() == "epoch 1/2, 1,234 samples, 5,000/s, auc 0.7500"
