"""xps.export.open against a real export chain written by the worker."""

import numpy as np
import pytest

import xps
from xps.export import ExportError


def test_open_reads_the_chain(export_store):
    m = xps.export.open(export_store)
    assert m.seq >= 1 and m.chain[0] == m.full and m.chain[-1] == m.seq
    assert m.samples == 20000
    assert m.config["model"]["kind"]
    ids, rows = m.tables["emb"]
    assert ids.dtype == np.uint64 and rows.dtype == np.float32
    assert len(ids) > 1000 and rows.shape == (len(ids), m.table_info["emb"]["dim"])
    assert np.all(ids[1:] > ids[:-1]), "ids not in order, or repeated"
    assert np.all(np.isfinite(rows)) and np.abs(rows).max() > 0
    assert sum(len(v) for v in m.dense.values()) > 0
    np.testing.assert_array_equal(m.lookup("emb", ids[[5, 0, 9]]), rows[[5, 0, 9]])


def test_open_refuses_what_is_not_a_model(tmp_path):
    with pytest.raises(ExportError) as e:
        xps.export.open(tmp_path)
    assert "no export" in str(e.value)
    with pytest.raises(ExportError) as e:
        xps.export.open(tmp_path / "missing")
    assert "no such file" in str(e.value)
    half = tmp_path / "half"
    (half / "exp-00000000000000000001" / "tables").mkdir(parents=True)  # being written: no manifest
    with pytest.raises(ExportError) as e:
        xps.export.open(half)
    assert "being written" in str(e.value) or "no intact" in str(e.value)


def test_a_newer_dump_format_is_refused():
    import io
    with pytest.raises(ExportError) as e:
        xps.export.read(io.BytesIO(b'{"format": "xps-export-dump", "version": 99, "arrays": []}\n'))
    assert "version 99" in str(e.value)
    with pytest.raises(ExportError) as e:
        xps.export.read(io.BytesIO(b'{"format": "xps-export-dump", "version": 1, "seq": 1, "full": 1, "chain": [1],'
                                   b' "tables": [], "dense": [{"name": "d", "len": 4}],'
                                   b' "arrays": [{"name": "dense/d", "dtype": "<f4", "shape": [4]}]}\n' + b"\0" * 10))
    assert "ended in dense/d" in str(e.value)
