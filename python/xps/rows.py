"""The row service: a DataFrame served to the worker without a file.

``Job.fit(df, label=..., fields=...)`` serves the DataFrame's columns over a
Unix socket and runs ``worker -rows SOCKET``, whose source (the Go package
reader/rowsrc, whose doc is the protocol) asks for batches of rows. Numeric
columns go out as they are held (a slice of the numpy array, no copy);
string, object and categorical columns are factorized once into int32
codes and a dictionary, whose entries the worker hashes once. Each epoch
and each resume asks for the rows again: the DataFrame must stay as it is
while the job runs.

Column types: integers and unsigned integers (as int64, uint64 or int32),
floats (float64, float32), booleans, pandas' nullable Int/Float/boolean
(with a validity byte a row), strings, objects holding strings or numbers,
and categoricals. Lists, dates and other types are refused, naming the
column.
"""

import json
import os
import socket
import tempfile
import threading

import numpy as np

__all__ = ["RowService", "as_table", "columns_map"]

_VERSION = 1


class _Column:
    """A column as the protocol sends it: values (a numpy array of a wire
    type), validity (uint8, or None), and for dict columns the dictionary
    (offsets int64, data bytes)."""

    def __init__(self, name, values, wire, valid=None, dict_offsets=None, dict_data=b""):
        self.name, self.values, self.wire, self.valid = name, values, wire, valid
        self.dict_offsets, self.dict_data = dict_offsets, dict_data

    def schema(self):
        s = {"name": self.name, "type": self.wire}
        if self.valid is not None:
            s["nullable"] = True
        if self.wire == "dict":
            s["dict_len"] = len(self.dict_offsets) - 1
            s["dict_bytes"] = len(self.dict_data)
        return s


_WIRE = {np.dtype("int64"): "int64", np.dtype("uint64"): "uint64", np.dtype("int32"): "int32",
         np.dtype("float64"): "float64", np.dtype("float32"): "float32"}


def _dictionary(codes, uniques, name):
    entries = [u if isinstance(u, bytes) else str(u).encode() for u in uniques]
    offsets = np.zeros(len(entries) + 1, dtype="<i8")
    np.cumsum([len(e) for e in entries], out=offsets[1:])
    return _Column(name, np.ascontiguousarray(codes, dtype="<i4"), "dict", dict_offsets=offsets,
                   dict_data=b"".join(entries))


def _column(name, col):
    """The wire form of one column (a pandas Series or a numpy array)."""
    try:
        import pandas as pd
    except ImportError:  # numpy arrays only
        pd = None
    if pd is not None and isinstance(col, pd.Series):
        dt = col.dtype
        if isinstance(dt, pd.CategoricalDtype):
            return _dictionary(col.cat.codes.to_numpy(), col.cat.categories, name)
        if pd.api.types.is_extension_array_dtype(dt):  # nullable Int64, Float64, boolean, string
            if pd.api.types.is_string_dtype(dt):
                codes, uniques = pd.factorize(col, use_na_sentinel=True)
                return _dictionary(codes, uniques, name)
            mask = col.isna().to_numpy()
            if pd.api.types.is_bool_dtype(dt):
                values = col.to_numpy(dtype="uint8", na_value=0)
                return _Column(name, values, "bool", valid=(~mask).astype("uint8"))
            if pd.api.types.is_integer_dtype(dt):
                wire = "uint64" if pd.api.types.is_unsigned_integer_dtype(dt) else "int64"
                return _Column(name, col.to_numpy(dtype=wire, na_value=0), wire, valid=(~mask).astype("uint8"))
            if pd.api.types.is_float_dtype(dt):
                return _Column(name, col.to_numpy(dtype="float64", na_value=np.nan), "float64")
            raise TypeError(f"column {name!r} is of type {dt}: want numbers, booleans, strings or categories")
        if dt == object:
            return _objects(name, col.to_numpy(), pd)
        col = col.to_numpy()
    arr = np.asarray(col)
    if arr.ndim != 1:
        raise TypeError(f"column {name!r} has shape {arr.shape}: want one value a row")
    if arr.dtype == bool:
        return _Column(name, arr.view("uint8"), "bool")
    if arr.dtype.kind in "iu":
        wire = "uint64" if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 else "int64"
        if arr.dtype.itemsize <= 4 and arr.dtype != np.dtype("uint32"):
            wire = "int32"
        return _Column(name, np.ascontiguousarray(arr, dtype=np.dtype(wire).newbyteorder("<")), wire)
    if arr.dtype.kind == "f":
        wire = "float32" if arr.dtype.itemsize <= 4 else "float64"  # float16 widened
        return _Column(name, np.ascontiguousarray(arr, dtype=np.dtype(wire).newbyteorder("<")), wire)
    if arr.dtype.kind in "OUS":
        return _objects(name, arr, pd)
    raise TypeError(f"column {name!r} is of type {arr.dtype}: want numbers, booleans, strings or categories")


def _objects(name, arr, pd):
    """An object (or numpy string) column: strings, or numbers as their
    text; None and NaN are nulls. Lists and other types are refused."""
    for v in arr[:1000]:
        if isinstance(v, (list, tuple, dict, set, np.ndarray)):
            raise TypeError(f"column {name!r} holds {type(v).__name__}s: a row service sends one value a row "
                            "(write lists to Parquet, or make one column each)")
    if pd is not None:
        codes, uniques = pd.factorize(arr, use_na_sentinel=True)
    else:
        uniques, codes = np.unique(arr.astype(str), return_inverse=True)
    return _dictionary(codes, uniques, name)


def as_table(data):
    """data as a table the service can send: a DataFrame or a mapping of
    columns as it is; an iterable of rows (dicts) gathered into columns
    (a DataFrame when pandas is there, else numpy arrays)."""
    if hasattr(data, "keys"):
        return data
    try:
        it = iter(data)
    except TypeError:
        raise TypeError(f"the data is a {type(data).__name__}: want a DataFrame, a dict of arrays or rows") from None
    rows = list(it)
    if rows and not isinstance(rows[0], dict):
        raise TypeError(f"a row is a {type(rows[0]).__name__}: want dicts of column -> value")
    try:
        import pandas as pd
        return pd.DataFrame.from_records(rows)
    except ImportError:
        names = list(rows[0]) if rows else []
        return {n: np.array([r.get(n) for r in rows]) for n in names}


def columns_map(label, fields):
    """train.columns: the label and the fields, each a column name or a
    dict of train.columns.fields' keys ({"column": ..., "kind": ...,
    "boundaries": ...})."""
    out = []
    for f in fields:
        entry = {"column": f} if isinstance(f, str) else dict(f)
        out.append(entry)
    return {"label": label, "fields": out}


class RowService:
    """Serves tables (name -> DataFrame or dict of arrays, only the given
    columns) on a Unix socket in a new temporary directory, from a thread,
    until close(). ``path`` is the socket's path."""

    def __init__(self, tables, columns):
        self._tables = {}
        for tname, data in tables.items():
            rows, cols = None, []
            for name in columns:
                try:
                    series = data[name]
                except (KeyError, IndexError):
                    have = ", ".join(repr(c) for c in list(data.keys() if hasattr(data, "keys") else data)[:30])
                    raise KeyError(f"table {tname!r} has no column {name!r} (it has {have})") from None
                c = _column(name, series)
                if rows is None:
                    rows = len(c.values)
                elif len(c.values) != rows:
                    raise ValueError(f"table {tname!r}: column {name!r} has {len(c.values)} rows, the others {rows}")
                cols.append(c)
            if not rows:
                raise ValueError(f"table {tname!r} has no rows: nothing to train on" if tname == "train"
                                 else f"table {tname!r} has no rows")
            self._tables[tname] = (rows, cols)
        self._dir = tempfile.mkdtemp(prefix="xps-rows-")
        self.path = os.path.join(self._dir, "rows.sock")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(16)
        self._closed = False
        self._threads = []
        self.requests = 0
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            t = threading.Thread(target=self._conn, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _conn(self, conn):
        # A worker that stops (or dies) closes its connection, at any point
        # of an exchange: the connection's thread ends quietly.
        with conn, conn.makefile("rb") as r:
            try:
                for line in r:
                    self._answer(conn, json.loads(line))
            except (OSError, ValueError):
                return

    @staticmethod
    def _send_header(conn, h):
        conn.sendall(json.dumps(h).encode() + b"\n")

    def _answer(self, conn, req):
        name = req.get("table")
        if name not in self._tables:
            self._send_header(conn, {"error": f"no table {name!r} (the service holds {', '.join(self._tables)})"})
            return
        rows, cols = self._tables[name]
        if req.get("schema"):
            self._send_header(conn, {"version": _VERSION, "table": name, "rows": rows,
                                     "columns": [c.schema() for c in cols]})
            for c in cols:
                if c.wire == "dict":
                    conn.sendall(c.dict_offsets.astype("<i8", copy=False).tobytes())
                    conn.sendall(c.dict_data)
            return
        lo, hi = req.get("rows", [0, 0])
        if not (0 <= lo <= hi <= rows):
            self._send_header(conn, {"error": f"rows [{lo}, {hi}) are not rows of the {rows} of table {name!r}"})
            return
        self.requests += 1
        self._send_header(conn, {"from": lo, "to": hi})
        for c in cols:
            conn.sendall(memoryview(np.ascontiguousarray(c.values[lo:hi])).cast("B"))
            if c.valid is not None:
                conn.sendall(memoryview(np.ascontiguousarray(c.valid[lo:hi])).cast("B"))

    def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        try:
            os.unlink(self.path)
            os.rmdir(self._dir)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
