"""to_torch(): an export as a torch module scores as serve does, for every
kind it builds, ids unseen in training included (their rows the table's
initializer makes)."""

import subprocess

import numpy as np
import pytest

import xps
from xps import binaries
from xps.torchmodel import feature_id, init_rows

torch = pytest.importorskip("torch", reason="Debian's python3-torch is not installed")

USER = "0:17 1:3 2:250 3:9 4:1 5:42 6:7 7:2 8:11 9:5"
# Seen tokens and some never seen in training (their rows: the initializer's).
CANDIDATES = [f"10:{i} 11:{i % 7} 12:{i * 3} 13:1 14:unseen{i}:0.5" for i in range(1, 151)]


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """An export store of a short job, by model kind."""
    made = {}

    def make(kind, quant="fp32"):
        if (kind, quant) not in made:
            d = tmp_path_factory.mktemp(kind)
            job = xps.Job(model={"kind": kind}, data={"train_samples": 20000, "test_samples": 2000},
                          export={"store": str(d / "exports"), "every": "-1s", "quant": quant})
            job.run(cwd=d, progress=False)
            made[kind, quant] = d / "exports"
        return made[kind, quant]

    return make


@pytest.mark.parametrize("kind,quant", [("mlp", "fp32"), ("lr", "fp32"), ("fm", "fp32"), ("deepfm", "fp32"),
                                        ("dcnv2", "fp32"), ("wdl", "fp32"), ("mlp", "int8"), ("deepfm", "fp16")])
def test_torch_scores_as_serve(exports, kind, quant, tmp_path):
    """fp16 and int8 rows are decoded by the dump as serve decodes them:
    the same bound holds."""
    store = exports(kind, quant)
    module = xps.export.open(store).to_torch()
    assert isinstance(module, torch.nn.Module)
    got = module.predict(USER, CANDIDATES)
    with xps.serve.start(store, log=tmp_path / "serve.log") as p:
        want = p.client.predict(USER, CANDIDATES)
    assert want.min() < want.max(), "the model scores every candidate alike: nothing to compare"
    worst = float(np.abs(got - want).max())
    assert worst <= 1e-5, f"{kind}: largest difference from serve's scores {worst}"


@pytest.fixture(scope="module")
def seq_exports(tmp_path_factory):
    """Generated behaviour sequences (ctrgen -seq: user fields 0-1, the
    history in 2-3, negatives in 4-5, the candidate in 6-7), and an export
    store of a short job, by kind (din, dien)."""
    d = tmp_path_factory.mktemp("seq")
    subprocess.run([binaries.find("ctrgen"), "-seq", "-format", "group", "-train", str(d / "train.group"),
                    "-test", str(d / "test.group"), "-train-samples", "20000", "-test-samples", "2000"],
                   check=True, capture_output=True)
    made = {}

    def make(kind):
        if kind not in made:
            store = d / kind / "exports"
            job = xps.Job(model={"kind": kind, "sequence": {"history": [2, 3], "target": [6, 7], "negatives": [4, 5]},
                                 "dense_optimizer": {"lr": 0.003}},
                          job={"train": [str(d / "train.group")], "test": [str(d / "test.group")]},
                          train={"format": "group"}, export={"store": str(store), "every": "-1s"})
            (d / kind).mkdir()
            job.run(cwd=d / kind, progress=False)
            made[kind] = store
        return made[kind]

    return d, make


def seq_request(path, k=150):
    """The user line of the test file's first group with a long history,
    and k candidate lines from its groups on (a group's lines: "group 2",
    the user's "1 - - FEATURES", the candidates' "0 0 LABEL FEATURES")."""
    groups, user, cands = [], None, []
    for line in open(path):
        tok = line.split()
        if tok[0] == "group":
            groups.append([None, []])
        elif tok[0] == "1":
            groups[-1][0] = " ".join(tok[3:])
        else:
            groups[-1][1].append(" ".join(tok[3:]))
    start = next(i for i, g in enumerate(groups) if g[0].count(" 2:") >= 10)
    user = groups[start][0]
    for g in groups[start:]:
        cands += g[1]
    return user, cands[:k]


@pytest.mark.parametrize("kind", ["din", "dien"])
def test_history_models_score_as_serve(seq_exports, kind, tmp_path):
    d, make = seq_exports
    store = make(kind)
    module = xps.export.open(store).to_torch()
    user, cands = seq_request(d / "test.group")
    got = module.predict(user, cands)
    with xps.serve.start(store, log=tmp_path / "serve.log") as p:
        want = p.client.predict(user, cands)
        short = p.client.predict("0:1 1:2 2:5 3:5", cands[:5])  # a history of one, shorter than the model's
        none = p.client.predict("0:1 1:2", cands[:5])  # no history
    assert want.min() < want.max(), "the model scores every candidate alike: nothing to compare"
    worst = float(np.abs(got - want).max())
    assert worst <= 1e-5, f"{kind}: largest difference from serve's scores {worst}"
    for u, w in (("0:1 1:2 2:5 3:5", short), ("0:1 1:2", none)):
        assert float(np.abs(module.predict(u, cands[:5]) - w).max()) <= 1e-5, u


def test_feature_id_and_init_match_go():
    # Their agreement with the Go side is test_torch_scores_as_serve's (its
    # unseen tokens score by both); here, what they must hold on their own.
    assert feature_id(3, "abc") == feature_id(3, b"abc")
    assert feature_id(3, "abc") != feature_id(4, "abc")
    rows = init_rows({"Kind": "uniform", "Scale": 0.01, "Seed": 0}, [1, 2], 4)
    assert rows.shape == (2, 4) and np.all(np.abs(rows) <= 0.01) and rows[0, 0] != rows[1, 0]
    np.testing.assert_array_equal(init_rows({"Kind": "constant", "Value": 0.5}, [7], 3), [[0.5, 0.5, 0.5]])


def test_an_undescribed_history_is_refused_clearly():
    m = xps.export.Model.__new__(xps.export.Model)
    m.header = {"network": {"kind": "din", "sequence": True, "fields": []}}
    with pytest.raises(NotImplementedError) as e:
        m.to_torch()
    assert "din" in str(e.value) and "older exportdump" in str(e.value)
