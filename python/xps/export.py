"""Models in Python: ``xps.export.open(store)`` reads a model export chain
into numpy.

::

    m = xps.export.open("/tmp/exports")
    m.seq, m.chain, m.samples, m.config          # the chain's last export, the job's config
    ids, rows = m.tables["emb"]                   # uint64 ids in order, float32 rows (n, dim)
    m.dense["mlp"]                                # a dense vector, float32
    m.lookup("emb", ids[:3])                      # rows by id (the table's init for an unknown id)

It reads what serve would load from the store (the newest intact full
export and the deltas after it, deletions applied, fp16/int8 rows decoded
as serve decodes them), through the Go command ``exportdump``, whose
output (the dump format: one line of JSON, then the arrays' little-endian
bytes; package export/dump) is read straight into numpy arrays: no file
is written. An empty store, a half-written or damaged chain, or a dump of
a newer format raises ExportError, and nothing is half-loaded.
"""

import json
import subprocess

import numpy as np

from . import binaries

__all__ = ["ExportError", "Model", "open", "read"]

_FORMAT, _VERSION = "xps-export-dump", 1


class ExportError(RuntimeError):
    """The export store could not be read as a model."""


class Model:
    """An export chain in memory: ``tables`` (name -> (ids, rows)),
    ``dense`` (name -> vector), ``config`` (the job's config as a dict),
    ``shape`` (the network's input shape), ``seq``, ``full``, ``chain``,
    ``samples``, ``job``, ``store``, and ``header`` (the dump's whole
    header)."""

    def __init__(self, header, arrays):
        self.header = header
        self.store = header.get("store")
        self.seq, self.full, self.chain = header["seq"], header["full"], header["chain"]
        self.samples, self.job = header.get("samples"), header.get("job")
        self.config = header.get("config") or {}
        self.shape = header.get("shape") or {}
        self.tables = {t["name"]: (arrays[f"tables/{t['name']}/ids"], arrays[f"tables/{t['name']}/values"])
                       for t in header["tables"]}
        self.dense = {d["name"]: arrays[f"dense/{d['name']}"] for d in header["dense"]}
        self.table_info = {t["name"]: t for t in header["tables"]}

    def lookup(self, table, ids):
        """The rows of ``ids`` (an array of uint64) in ``table``, shape (len,
        dim); an id the model holds no row of gets the table's initial value
        when its init is zeros or a constant, NaN when it is random (drawn
        per id by the Go side)."""
        have, rows = self.tables[table]
        ids = np.asarray(ids, dtype=np.uint64)
        pos = np.searchsorted(have, ids)
        pos = np.minimum(pos, max(len(have) - 1, 0))
        found = (have[pos] == ids) if len(have) else np.zeros(len(ids), bool)
        out = np.empty((len(ids), rows.shape[1]), np.float32)
        out[found] = rows[pos[found]]
        out[~found] = self._init_value(table)
        return out

    def _init_value(self, table):
        init = self.table_info[table].get("init") or {}
        kind = init.get("Kind", "")
        if kind == "zeros":
            return 0.0
        if kind == "constant":
            return init.get("Value", 0.0)
        return np.nan  # a random init (normal, uniform) drawn by id: serve's, not reproduced here

    def to_torch(self):
        """The model as a torch.nn.Module that scores as serve does
        (xps.torchmodel: mlp, lr, fm, deepfm, dcnv2, wdl); its
        ``predict(user, candidates)`` takes serve's request strings."""
        from .torchmodel import CTRModule
        return CTRModule(self)

    @property
    def nbytes(self):
        """The bytes of the model's arrays."""
        return sum(i.nbytes + r.nbytes for i, r in self.tables.values()) + sum(d.nbytes for d in self.dense.values())

    def __repr__(self):
        tabs = ", ".join(f"{n}: {r.shape[0]} x {r.shape[1]}" for n, (_, r) in self.tables.items())
        return f"Model(export {self.seq} of chain {self.chain}, {self.samples} samples, tables {{{tabs}}})"


def _read_exact(f, view, what):
    got = 0
    while got < len(view):
        n = f.readinto(view[got:])
        if not n:
            raise ExportError(f"the dump ended in {what}: {got} of {len(view)} bytes")
        got += n


def read(f):
    """Reads a dump (the dump format) from binary stream f into a Model."""
    line = f.readline()
    if not line:
        raise ExportError("an empty dump")
    try:
        header = json.loads(line)
    except ValueError as e:
        raise ExportError(f"the dump's header is not JSON: {e}") from None
    if header.get("format") != _FORMAT:
        raise ExportError(f"not an export dump (format {header.get('format')!r})")
    if header.get("version", 0) > _VERSION:
        raise ExportError(f"a dump of format version {header['version']}: this package reads version {_VERSION} "
                          "and older; upgrade the Python package")
    arrays = {}
    for a in header["arrays"]:
        arr = np.empty(a["shape"], dtype=np.dtype(a["dtype"]))
        _read_exact(f, memoryview(arr.reshape(-1).view(np.uint8)), a["name"])
        arrays[a["name"]] = arr
    if f.read(1):
        raise ExportError("bytes after the dump's arrays")
    return Model(header, arrays)


def open(store):  # noqa: A001: the module's verb, as in io.open
    """Reads the model of export store ``store`` (a directory or
    hdfs://HOST:PORT/PATH) into numpy (see the module's doc)."""
    proc = subprocess.Popen([binaries.find("exportdump"), "-store", str(store)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        try:
            m = read(proc.stdout)
        except ExportError as e:
            proc.kill()
            proc.wait()
            err = proc.stderr.read().decode(errors="replace").strip()
            raise ExportError(err.removeprefix("exportdump: ") or str(e)) from None
        proc.wait()
        if proc.returncode != 0:
            raise ExportError(proc.stderr.read().decode(errors="replace").strip().removeprefix("exportdump: "))
        return m
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
