"""xps.serve.Client against a real serve process."""

import json
import shutil
import socket
import subprocess

import numpy as np
import pytest

import xps
from xps import binaries
from xps.serve import Client, ServeError, ServeTimeout

USER = "0:17 1:3 2:250 3:9 4:1 5:42 6:7 7:2 8:11 9:5"
CANDIDATES = [f"10:{i} 11:{i % 7} 12:{i * 3} 13:1" for i in range(1, 151)]


def test_predict_http_and_grpc_agree(server):
    c = server.client
    http = c.predict_http(USER, CANDIDATES)
    grpc = c.predict_grpc(USER, CANDIDATES)
    assert http.dtype == np.float32 and http.shape == (150,)
    assert np.all((http > 0) & (http < 1))
    np.testing.assert_array_equal(http, grpc)
    np.testing.assert_array_equal(c.predict(USER, CANDIDATES), grpc)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_http_client_equals_curl(server):
    body = json.dumps({"user": USER, "candidates": CANDIDATES})
    out = subprocess.run(["curl", "-sf", "-d", body, f"http://{server.client.address}/predict"],
                         capture_output=True, text=True, check=True).stdout
    want = np.asarray(json.loads(out)["scores"], dtype=np.float32)
    np.testing.assert_array_equal(server.client.predict_http(USER, CANDIDATES), want)


def test_predict_many_keeps_order(server):
    c = server.client
    reqs = [(USER, CANDIDATES[i:i + 10]) for i in range(0, 150, 10)]
    many = c.predict_many(reqs, in_flight=4)
    assert len(many) == len(reqs)
    for (u, cands), got in zip(reqs, many):
        np.testing.assert_array_equal(got, c.predict(u, cands))


def test_refused_request(server):
    c = server.client
    with pytest.raises(ServeError) as e:
        c.predict_http(USER, ["10:1 nonsense"])
    assert e.value.code == 400 and "nonsense" in e.value.message
    with pytest.raises(ServeError) as e:
        c.predict_grpc(USER, ["10:1 nonsense"])
    assert e.value.code == "INVALID_ARGUMENT" and "nonsense" in e.value.message


def test_unknown_model(server):
    c = server.client
    with pytest.raises(ServeError) as e:
        c.predict_http(USER, CANDIDATES[:2], model="nope")
    assert e.value.code == 404
    with pytest.raises(ServeError) as e:
        c.predict_grpc(USER, CANDIDATES[:2], model="nope")
    assert e.value.code == "NOT_FOUND"


def test_status(server):
    st = server.client.status(model="default")
    assert st["export"] > 0 and sum(st["rows"].values()) > 0 and st["memory"]["rss_bytes"] > 0


def test_an_address_that_does_not_answer_times_out():
    with socket.socket() as s:  # listens, never answers
        s.bind(("127.0.0.1", 0))
        s.listen()
        addr = f"127.0.0.1:{s.getsockname()[1]}"
        c = Client(addr, grpc=addr, timeout=0.5)
        for call in (c.predict_http, c.predict_grpc):
            with pytest.raises(ServeTimeout) as e:
                call(USER, CANDIDATES[:1])
            assert addr in str(e.value) and "0.5 s" in str(e.value)


def test_missing_binary_says_how_to_build(tmp_path, monkeypatch):
    monkeypatch.setenv("XPS_BIN", str(tmp_path))
    with pytest.raises(binaries.BinaryNotFound) as e:
        binaries.find("serve")
    assert "go build" in str(e.value) and str(tmp_path) in str(e.value)
    fake = tmp_path / "serve"
    fake.write_text("#!/bin/sh\necho not xps\n")
    fake.chmod(0o755)
    with pytest.raises(binaries.BinaryNotFound) as e:
        binaries.find("serve")
    assert "-version" in str(e.value)


def test_binaries_answer_version():
    line = binaries.version(binaries.find("serve"))
    assert line is not None and line.startswith("xps serve ")
