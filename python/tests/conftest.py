"""Fixtures: a model trained by the real worker binary (the generated CTR
data, a final export), and a real serve process on it."""

import subprocess

import pytest

import xps
from xps import binaries


@pytest.fixture(scope="session")
def export_store(tmp_path_factory):
    """An export store holding the final model of a short job."""
    d = tmp_path_factory.mktemp("model")
    store = d / "exports"
    args = [binaries.find("worker"), "-local", "-quiet", "-epochs", "1",
            "-set", "data.train_samples=20000", "-set", "data.test_samples=2000",
            "-set", f"export.store={store}", "-set", "export.every=-1s",
            "-set", f"snapshot.store={d / 'snapshots'}"]
    res = subprocess.run(args, cwd=d, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"worker failed:\n{res.stdout}\n{res.stderr}"
    return store


@pytest.fixture(scope="session")
def server(export_store, tmp_path_factory):
    """A serve process on export_store."""
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with xps.serve.start(export_store, log=log) as p:
        yield p
