"""Scoring with a running ``serve`` process.

``Client(address)`` talks to serve's HTTP/JSON API (``-listen``) and, when
given ``grpc=``, to its gRPC Predictor (``-grpc``, xps.serve.v1): the same
requests, the same scores. A request is one user's features and its
candidates' features, each a space-separated ``FIELD:TOKEN[:VALUE]`` list
(the libFFM and sample-group token syntax)::

    c = xps.serve.Client("127.0.0.1:8500", grpc="127.0.0.1:8501")
    scores = c.predict("0:u42 1:ios", ["2:item7 3:cat1", "2:item9 3:cat4"])

``start(store)`` runs a serve process of our own (the binary found by
``xps.binaries``) and returns it with a client on it.
"""

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import binaries

__all__ = ["Client", "ServeError", "ServeTimeout", "Process", "start"]


class ServeError(RuntimeError):
    """serve refused a request: ``code`` is the HTTP status or the gRPC
    status code's name, ``message`` serve's reason."""

    def __init__(self, address, code, message):
        super().__init__(f"serve at {address}: {code}: {message}")
        self.address, self.code, self.message = address, code, message


class ServeTimeout(ServeError, TimeoutError):
    """serve did not answer within the client's timeout."""


class Client:
    """A client of one serve process.

    address: host:port of serve's HTTP listener (-listen); grpc: host:port
    of its gRPC listener (-grpc), used by default when given; model: the
    model to score with in a server of several ("": the only one);
    timeout: seconds a call may take.
    """

    def __init__(self, address, grpc=None, model="", timeout=10.0):
        self.address, self.grpc_address, self.model, self.timeout = address, grpc, model, timeout
        self._channel = self._stub = None

    # -- HTTP/JSON

    def _http(self, method, path, body=None):
        url = f"http://{self.address}{path}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.read()
        except urllib.error.HTTPError as e:
            raise ServeError(self.address, e.code, e.read().decode(errors="replace").strip()) from None
        except (TimeoutError, socket.timeout):
            raise ServeTimeout(self.address, "timeout", f"no answer within {self.timeout:g} s") from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, (TimeoutError, socket.timeout)):
                raise ServeTimeout(self.address, "timeout", f"no answer within {self.timeout:g} s") from None
            raise ServeError(self.address, "unreachable", str(e.reason)) from None

    def _query(self, model):
        model = self.model if model is None else model
        return f"?model={urllib.request.quote(model)}" if model else ""

    def predict_http(self, user, candidates, model=None):
        """Scores candidates for user over HTTP/JSON: a float32 array."""
        body = self._http("POST", "/predict" + self._query(model), {"user": user, "candidates": list(candidates)})
        return np.asarray(json.loads(body)["scores"], dtype=np.float32)

    def status(self, model=None):
        """serve's /status: the model's export, rows and memory by part
        (every model's, by name, when model is None and the client names
        none)."""
        return json.loads(self._http("GET", "/status" + self._query(model)))

    def healthy(self):
        """Whether serve answers /healthz with 200 (every model loaded)."""
        try:
            self._http("GET", "/healthz")
            return True
        except ServeError:
            return False

    # -- gRPC

    def _grpc_stub(self):
        if self._stub is None:
            import grpc

            from .v1 import serve_pb2_grpc

            self._channel = grpc.insecure_channel(self.grpc_address)
            self._stub = serve_pb2_grpc.PredictorStub(self._channel)
        return self._stub

    def _grpc_request(self, user, candidates, model):
        from .v1 import serve_pb2

        return serve_pb2.PredictRequest(user=user, candidates=list(candidates),
                                        model=self.model if model is None else model)

    def _grpc_error(self, e):
        import grpc

        if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            return ServeTimeout(self.grpc_address, "timeout", f"no answer within {self.timeout:g} s")
        return ServeError(self.grpc_address, e.code().name, e.details())

    def predict_grpc(self, user, candidates, model=None):
        """Scores candidates for user over gRPC: a float32 array."""
        import grpc

        if self.grpc_address is None:
            raise ValueError("this client has no gRPC address (Client(..., grpc='host:port'))")
        try:
            resp = self._grpc_stub().Predict(self._grpc_request(user, candidates, model), timeout=self.timeout)
        except grpc.RpcError as e:
            raise self._grpc_error(e) from None
        return np.asarray(resp.scores, dtype=np.float32)

    # -- either

    def predict(self, user, candidates, model=None):
        """Scores candidates (a list of feature strings) for user: a
        float32 array, one probability per candidate. Over gRPC when the
        client has a gRPC address, else HTTP."""
        if self.grpc_address is not None:
            return self.predict_grpc(user, candidates, model)
        return self.predict_http(user, candidates, model)

    def predict_many(self, requests, model=None, in_flight=8):
        """Scores many (user, candidates) requests, up to in_flight of them
        at a time: a list of float32 arrays in the requests' order."""
        with ThreadPoolExecutor(max_workers=in_flight) as pool:
            return list(pool.map(lambda r: self.predict(r[0], r[1], model), requests))

    def close(self):
        if self._channel is not None:
            self._channel.close()
            self._channel = self._stub = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Process:
    """A serve process of our own: ``client`` talks to it; ``stop()`` (or
    leaving a ``with`` block) ends it."""

    def __init__(self, args, http, grpc, log):
        self.log = log
        self._log = open(log, "ab")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        self.client = Client(http, grpc=grpc)

    def wait_ready(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServeError(self.client.address, "exited", f"serve exited with {self.proc.returncode}; its log: {self.log}")
            if self.client.healthy():
                return self
            time.sleep(0.1)
        self.stop()
        raise ServeTimeout(self.client.address, "timeout", f"not ready within {timeout:g} s; its log: {self.log}")

    def stop(self):
        self.client.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start(store, log="serve.log", ready_timeout=60.0, extra=()):
    """Runs serve on an export store (a directory or hdfs:// URI; a dict
    of name: store for several models) on free loopback ports, waits until
    it serves, and returns the Process."""
    http, grpc = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    args = [binaries.find("serve"), "-listen", http, "-grpc", grpc]
    stores = store.items() if isinstance(store, dict) else [(None, store)]
    for name, s in stores:
        args += ["-store", f"{name}={s}" if name else str(s)]
    return Process(args + list(extra), http, grpc, log).wait_ready(ready_timeout)
