"""Operating a cluster: ``xps.Cluster``, what its status page shows, and
snapshots and exports on request.

::

    c = xps.Cluster(etcd="127.0.0.1:2379", http="http://127.0.0.1:9090/")
    c.state, c.members, c.snapshots, c.exports
    c.snapshot_now()   # the scheduler takes a snapshot; its result as a dict
    c.export_now()     # the scheduler exports the model (export.store)

The figures come from the status page's JSON (GET status.json of the
scheduler's, or of ``worker -local``'s, operations endpoint: ``http``);
snapshot_now and export_now ask the cluster's running scheduler through
etcd with the scheduler binary (``scheduler -etcd E -cluster NAME
-snapshot-now``), as an operator would. A running Job's Run has one:
``job.start().started()``.
"""

import json
import subprocess
import urllib.error
import urllib.request

from . import binaries

__all__ = ["Cluster", "ClusterError"]


class ClusterError(RuntimeError):
    """The cluster could not be reached or refused a request."""


class Cluster:
    """A running cluster: ``etcd`` its endpoints ("host:port,..."), ``http``
    its status page's URL, ``name`` its name (the binaries' -cluster)."""

    def __init__(self, etcd=None, http=None, name="default", timeout=30):
        if etcd is None and http is None:
            raise ClusterError("give the cluster's etcd endpoints, its status page's URL, or both")
        self.etcd = etcd
        self.http = http if http is None or http.endswith("/") else http + "/"
        self.name = name
        self.timeout = timeout

    def status(self):
        """The status page's figures (its status.json) as a dict."""
        if self.http is None:
            raise ClusterError("this Cluster has no status page URL (http=)")
        url = self.http + "status.json"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as r:
                return json.load(r)
        except (urllib.error.URLError, OSError) as e:
            raise ClusterError(f"{url}: {e}") from None

    @property
    def state(self):
        """The cluster's state (SERVING, PAUSED, RESTORING, ...)."""
        return self.status()["state"]

    @property
    def members(self):
        """The members (shards, schedulers, workers), each a dict."""
        return self.status().get("members") or []

    @property
    def snapshots(self):
        """The snapshots taken, oldest first, each a dict."""
        return self.status().get("snapshots") or []

    @property
    def exports(self):
        """The model exports made, oldest first, each a dict."""
        return self.status().get("exports") or []

    def snapshot_now(self):
        """Has the running scheduler take a snapshot now; waits for it and
        returns its result (seq, rows, ...)."""
        return self._now("-snapshot-now")

    def export_now(self):
        """Has the running scheduler export the model now (the job's
        export.store); waits for it and returns its result."""
        return self._now("-export-now")

    def _now(self, flag):
        if self.etcd is None:
            raise ClusterError("this Cluster has no etcd endpoints (etcd=)")
        args = [binaries.find("scheduler"), "-etcd", self.etcd, "-cluster", self.name, "-log-level", "warn", flag]
        try:
            res = subprocess.run(args, capture_output=True, text=True, timeout=max(self.timeout, 120))
        except subprocess.TimeoutExpired:
            raise ClusterError(f"scheduler {flag}: no answer from the cluster at {self.etcd}") from None
        if res.returncode != 0:
            raise ClusterError(f"scheduler {flag}: {res.stderr.strip()}")
        for line in reversed(res.stdout.splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        raise ClusterError(f"scheduler {flag} printed no result: {res.stdout.strip()}")

    def __repr__(self):
        return f"Cluster(etcd={self.etcd!r}, http={self.http!r}, name={self.name!r})"
