"""Job.fit: a DataFrame served to the real worker over the row service."""

import numpy as np
import pandas as pd
import pytest

import xps
from xps import rows
from xps.torchmodel import feature_id


def frame(n, seed=1):
    """n rows whose clicks follow the user and the item (AUC well above 0.5
    for a model that learns them), of every kind of column."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "user": rng.integers(0, 400, n),
        "item": [f"item{i}" for i in rng.integers(0, 300, n)],
        "cat": pd.Categorical(rng.choice(["a", "b", None], n)),
        "age": pd.array(np.where(rng.random(n) < 0.1, None, rng.integers(18, 80, n)), dtype="Int64"),
        "price": rng.random(n).astype("float32"),
        "member": rng.random(n) < 0.5,
    })
    hot = (df.user % 5 == 0) | df.item.str.endswith("7")
    df["click"] = (rng.random(n) < np.where(hot, 0.85, 0.1)).astype("int8")
    return df


def test_fit_trains_from_a_dataframe(tmp_path):
    df = frame(20000)
    store = tmp_path / "exports"
    job = xps.Job(train={"epochs": 2}, export={"store": str(store), "every": "-1s"})
    r = job.fit(df, label="click", test=frame(2000, seed=2), progress=False, cwd=tmp_path)
    assert r.samples == 40000 and r.error == ""
    assert r.test_auc > 0.75, r.test_auc
    once = r.summary["exactly_once"]
    assert once["checked"] and once["exact"] and once["samples"] == 40000, once
    # Tokens hashed as libFFM's: field i's column values, and a float
    # column's name as its value feature's token.
    ids, _ = xps.export.open(store).tables["emb"]
    have = set(ids.tolist())
    for field, token in [(0, str(df.user[0])), (1, df.item[0]), (2, "a"), (3, str(df.age.dropna().iloc[0])),
                         (4, "price"), (5, "true")]:
        assert feature_id(field, token) in have, (field, token)


def test_fit_stops_and_resumes(tmp_path):
    df = frame(100000)
    job = xps.Job(train={"epochs": 2, "progress_every": "100ms"})

    def interrupt(p):
        raise KeyboardInterrupt  # as Ctrl-C would, at the first report

    with pytest.raises(KeyboardInterrupt):
        job.fit(df, label="click", fields=["user", "item"], cwd=tmp_path, progress=False, on_progress=interrupt)
    stopped = job.result
    assert stopped.stopped and stopped.model and stopped.samples < 200000, stopped
    r = job.fit(df, label="click", fields=["user", "item"], cwd=tmp_path, progress=False, resume=stopped)
    assert r.error == "" and not r.stopped
    assert stopped.samples + r.samples == 200000, "the resumed job trained what the stopped one had not"
    once = r.summary["exactly_once"]
    assert once["checked"] and once["exact"] and once["samples"] == 200000, once


def test_fit_fields_and_kinds(tmp_path):
    df = frame(5000)
    job = xps.Job(train={"epochs": 1})
    r = job.fit(df, label="click", fields=["item", {"column": "price", "kind": "bucket", "boundaries": [0.25, 0.5]}],
                progress=False, cwd=tmp_path)
    assert r.samples == 5000


@pytest.mark.parametrize("bad, want", [
    (lambda df: df.drop(columns=["item"]), "no column 'item'"),
    (lambda df: df.assign(item=[["a", "b"]] * len(df)), "holds lists"),
    (lambda df: df.assign(item=pd.Timestamp("2026-01-01")), "datetime64"),
    (lambda df: df.iloc[:0], "has no rows"),
])
def test_fit_refuses_columns_it_cannot_send(bad, want):
    with pytest.raises(xps.ConfigError, match=want):
        xps.Job().fit(bad(frame(100)), label="click", fields=["user", "item"])


def test_fit_refuses_what_the_worker_refuses():
    with pytest.raises(xps.JobError, match="kind value takes numbers, not strings"):
        xps.Job().fit(frame(100), label="click", fields=[{"column": "item", "kind": "value"}], progress=False)


def test_service_sends_arrays_as_they_are():
    df = frame(10)
    c = rows._column("user", df.user)
    assert c.wire == "int64" and np.shares_memory(c.values, df.user.to_numpy())
    assert rows._column("price", df.price).wire == "float32"
    assert rows._column("member", df.member).wire == "bool"
    assert rows._column("click", df.click).wire == "int32"
    cat = rows._column("cat", df.cat)
    assert cat.wire == "dict" and cat.values.dtype == np.dtype("<i4") and (cat.values >= -1).all()
    age = rows._column("age", df.age)
    assert age.wire == "int64" and age.valid is not None and age.valid.sum() == df.age.notna().sum()


def test_fit_from_rows(tmp_path):
    df = frame(3000)
    r = xps.Job().fit(iter(df.to_dict("records")), label="click", fields=["user", "item"], progress=False, cwd=tmp_path)
    assert r.samples == 3000
    with pytest.raises(xps.ConfigError, match="a row is a tuple"):
        xps.Job().fit([(1, 2)], label="click")
