"""xps: the Python side of the xps sparse parameter-server platform.

A thin layer over the real binaries and protocols, not a second
implementation: ``xps.Job`` trains with the worker binary, following its
event stream (``Job.fit`` serving a DataFrame's rows to it: ``xps.rows``); ``xps.Cluster`` shows a cluster's status and takes snapshots
and exports on request; ``xps.export.open`` reads a model export into
numpy; ``xps.serve.Client`` scores with a running ``serve`` process
over gRPC or HTTP. Dependencies come from Debian's packages
(python3-numpy, python3-grpcio, python3-protobuf); ``xps.binaries`` finds
the Go binaries (``$XPS_BIN``, ``PATH``, or a ``go build`` of the
repository this package was installed from, once).
"""

from . import binaries, cluster, export, job, rows, serve
from .cluster import Cluster, ClusterError
from .job import ConfigError, Job, JobError, Progress, Result, Run

__version__ = "0.1.0"
__all__ = ["Cluster", "ClusterError", "ConfigError", "Job", "JobError", "Progress", "Result", "Run",
           "binaries", "cluster", "export", "job", "rows", "serve"]
