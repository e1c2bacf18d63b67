"""An exported CTR model as a ``torch.nn.Module`` (``Model.to_torch()``).

The module is built from the export alone: its tables' rows, its dense
vector and the network's description the dump carries (the Go type
ctr.Spec: each field's table, level and columns, the pooling, the wide
part, the MLP's sizes, the FM term, the cross layers, where each weight
lies in the dense vector). It scores as serve does: a feature FIELD:TOKEN
hashes to the same id (``feature_id``), an id the model holds no row of
gets the row the table's initializer gives it in Go (zeros, a constant, or
the uniform or normal draw keyed by the id), a field's bag is pooled by
sum (or mean) of value x row, and the logit is

    mlp, lr, wdl:  MLP(d) (+ wide)
    fm, deepfm:    MLP(d) + FM(d) (+ wide)
    dcnv2:         MLP(Cross(d))

with d the pooled fields' columns but the wide part's, and wide the sum of
the wide part's dim-1 weights. Kinds with a behaviour history (din, dien)
take the MLP's input from the history part the dump describes (ctr.SeqSpec:
DIN's attention pooling, DIEN's GRU, attention and AUGRU, as PyTorch's
nn.GRU cell); dense fields are not built here (NotImplementedError says
so).

torch is optional for the package: ``to_torch()`` raises ImportError
naming Debian's python3-torch when it is absent.
"""

import numpy as np

__all__ = ["CTRModule", "feature_id", "init_rows", "parse_features"]

_M64 = (1 << 64) - 1
_FNV_OFFSET, _FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
_INIT_SALT, _GOLDEN = 0x2545F4914F6CDD1D, 0x9E3779B97F4A7C15


def _mix64(x):
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def feature_id(field, token):
    """The id of token (str or bytes) in field's namespace, as the Go side
    hashes it (reader.FeatureID: FNV-1a over the field's 4 bytes and the
    token, then a 64-bit mix)."""
    h = _FNV_OFFSET
    for b in int(field).to_bytes(4, "little"):
        h = ((h ^ b) * _FNV_PRIME) & _M64
    for b in token.encode() if isinstance(token, str) else token:
        h = ((h ^ b) * _FNV_PRIME) & _M64
    return _mix64(h)


def _mix64_np(x):
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def init_rows(init, ids, dim):
    """The rows the Go side's table initializer (ams.InitSpec, as the
    export's header gives it) makes for ids: shape (len(ids), dim)."""
    ids = np.asarray(ids, dtype=np.uint64)
    kind = init.get("Kind", "normal")
    if kind == "zeros":
        return np.zeros((len(ids), dim), np.float32)
    if kind == "constant":
        return np.full((len(ids), dim), init.get("Value", 0.0), np.float32)
    seed = np.uint64(_mix64((int(init.get("Seed", 0)) ^ _INIT_SALT) & _M64))
    base = _mix64_np(seed ^ ids)[:, None]
    cols = np.arange(dim + 1, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        h = _mix64_np(base + (cols + np.uint64(1)) * np.uint64(_GOLDEN))  # hash of word c: c = 0 .. dim
    scale = np.float32(init.get("Scale", 0.01))
    if kind == "uniform":
        u = (h[:, :dim] >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -23)
        return (scale * (u - np.float32(1))).astype(np.float32)
    if kind == "normal":
        out = np.empty((len(ids), dim), np.float32)
        for c in range(0, dim, 2):
            u1 = ((h[:, c] >> np.uint64(11)) + np.uint64(1)).astype(np.float64) * 2.0 ** -53
            u2 = (h[:, c + 1] >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
            r = float(scale) * np.sqrt(-2 * np.log(u1))
            out[:, c] = (r * np.cos(2 * np.pi * u2)).astype(np.float32)
            if c + 1 < dim:
                out[:, c + 1] = (r * np.sin(2 * np.pi * u2)).astype(np.float32)
        return out
    raise ValueError(f"table initializer of kind {kind!r}")


def parse_features(s):
    """The features of a request's string, as serve parses them: a list of
    (field, token, value) for each blank-separated FIELD:TOKEN[:VALUE]."""
    out = []
    for tok in s.replace("\t", " ").split(" "):
        if not tok:
            continue
        field, sep, rest = tok.partition(":")
        if not sep or not field.isdigit():
            raise ValueError(f"feature {tok!r}: want FIELD:TOKEN[:VALUE]")
        value = 1.0
        i = rest.rfind(":")
        if i >= 0:
            value, rest = float(rest[i + 1:]), rest[:i]
        if not rest:
            raise ValueError(f"feature {tok!r}: empty token")
        out.append((int(field), rest, value))
    return out


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("to_torch needs torch: install Debian's python3-torch "
                          "(the venv sees it with --system-site-packages)") from None
    return torch


def CTRModule(model):  # noqa: N802: a class made once torch is imported
    """The torch module of ``model`` (an xps.export.Model); see the module's
    doc."""
    torch = _torch()
    spec = model.header.get("network") or {}
    if not spec:
        raise NotImplementedError("the export's dump has no network description (an older exportdump)")
    seq = spec.get("seq")
    if spec.get("sequence") and not seq:
        raise NotImplementedError(f"model.kind {spec['kind']}: the dump does not describe the behaviour history "
                                  "(an older exportdump)")
    if seq and (spec.get("wide") or spec.get("fm_dim") or spec.get("cross_layers")):
        raise NotImplementedError("a behaviour history with a wide part, an FM term or cross layers is not built in torch")
    if any(f.get("dense_width") for f in spec["fields"]):
        raise NotImplementedError("dense fields are not built in torch yet")

    class _Module(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.spec = spec
            self.kind = spec["kind"]
            self._ids = {}
            for name, (ids, rows) in model.tables.items():
                self._ids[name] = ids
                self.register_buffer("table_" + name, torch.from_numpy(np.ascontiguousarray(rows)))
            self._init = {name: t.get("init") or {} for name, t in model.table_info.items()}
            flat = model.dense["mlp"]
            self.params = torch.nn.ParameterDict()
            for p in spec["params"]:
                n = int(np.prod(p["shape"]))
                v = flat[p["offset"]:p["offset"] + n].reshape(p["shape"])
                self.params[p["name"].replace(".", "_")] = torch.nn.Parameter(torch.from_numpy(v.copy()))
            self.layers = len(spec["mlp"]) - 1
            cols = np.ones(spec["width"], bool)
            for f in spec["fields"]:
                if f["mirror_of"] >= 0:
                    cols[f["col"]:f["col"] + f["width"]] = False
            self.register_buffer("deep_cols", torch.from_numpy(np.flatnonzero(cols)))
            self.register_buffer("wide_cols", torch.from_numpy(np.flatnonzero(~cols)))
            self.by_field = {f["field"]: f for f in spec["fields"] if f["mirror_of"] < 0}
            self.mirrors = {f["mirror_of"]: f for f in spec["fields"] if f["mirror_of"] >= 0}

        def rows(self, table, ids):
            """The rows of ids (uint64) in table, initial rows for unknown ids."""
            have = self._ids[table]
            tab = getattr(self, "table_" + table)
            pos = np.searchsorted(have, ids)
            found = pos < len(have)
            found[found] = have[pos[found]] == ids[found]
            out = torch.empty((len(ids), tab.shape[1]), dtype=torch.float32)
            if found.any():
                out[torch.from_numpy(found)] = tab[torch.from_numpy(pos[found])]
            if (~found).any():
                out[torch.from_numpy(~found)] = torch.from_numpy(init_rows(self._init[table], ids[~found], tab.shape[1]))
            return out

        def pool(self, samples):
            """The input rows x (n, width) of samples, each a list of
            (field, id, value)."""
            n = len(samples)
            x = torch.zeros((n, self.spec["width"]), dtype=torch.float32)
            bags = {}  # field -> (sample indexes, ids, values)
            for s, feats in enumerate(samples):
                for field, fid, value in feats:
                    if field not in self.by_field:
                        raise ValueError(f"field {field} is not one of the model's {len(self.by_field)}")
                    b = bags.setdefault(field, ([], [], []))
                    b[0].append(s)
                    b[1].append(fid)
                    b[2].append(value)
            for field, (idx, ids, vals) in bags.items():
                if self.by_field[field].get("seq_len"):
                    self._positions(x, self.by_field[field], idx, ids, vals)
                    continue
                for f in (self.by_field[field], self.mirrors.get(field)):
                    if f is None:
                        continue
                    r = self.rows(f["table"], np.asarray(ids, dtype=np.uint64))
                    r = r * torch.tensor(vals, dtype=torch.float32)[:, None]
                    pooled = torch.zeros((n, f["width"]), dtype=torch.float32).index_add_(0, torch.tensor(idx), r)
                    if self.spec["pooling"] == "mean":
                        cnt = torch.zeros(n).index_add_(0, torch.tensor(idx), torch.ones(len(idx)))
                        pooled = pooled / cnt.clamp(min=1)[:, None]
                    x[:, f["col"]:f["col"] + f["width"]] = pooled
            return x

        def _positions(self, x, f, idx, ids, vals):
            """Sequence field f's features (sample indexes idx, in order)
            into x: of a sample's list the last seq_len, value x row in
            position j's columns, then the kept length."""
            L = f["seq_len"]
            dim = (f["width"] - 1) // L
            r = self.rows(f["table"], np.asarray(ids, dtype=np.uint64)) * torch.tensor(vals, dtype=torch.float32)[:, None]
            by = {}
            for i, s in enumerate(idx):
                by.setdefault(s, []).append(i)
            for s, rows in by.items():
                kept = rows[-L:]
                for j, i in enumerate(kept):
                    x[s, f["col"] + j * dim:f["col"] + (j + 1) * dim] = r[i]
                x[s, f["col"] + L * dim] = len(kept)

        def _lau(self, k, q):
            """DIN's local activation unit: the score of each key of k (n,
            T, D) against its sample's query q (n, D), shape (n, T)."""
            p, layers = self.params, len(self.spec["seq"]["attention"])
            q = q[:, None, :].expand_as(k)
            a = torch.cat([k, q, k - q, k * q], dim=2)
            for i in range(layers):
                a = a @ p[f"att_{i}_weight"].T + p[f"att_{i}_bias"]
                a = torch.where(a > 0, a, p[f"att_{i}_prelu"] * a)
            return (a @ p[f"att_{layers}_weight"].T + p[f"att_{layers}_bias"])[..., 0]

        def _gru(self, name, x, lens, att=None):
            """nn.GRU's cell over x (n, T, D), the first lens steps of each
            sample; with att (n, T) the AUGRU. The states (n, T, D)."""
            p = self.params
            wih, whh, bih, bhh = (p[f"{name}_{w}"] for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            n, T, H = x.shape[0], x.shape[1], whh.shape[1]
            gi = x @ wih.T + bih
            h, out = torch.zeros((n, H), dtype=x.dtype), []
            for t in range(T):
                gh = h @ whh.T + bhh
                r = torch.sigmoid(gi[:, t, :H] + gh[:, :H])
                z = torch.sigmoid(gi[:, t, H:2 * H] + gh[:, H:2 * H])
                c = torch.tanh(gi[:, t, 2 * H:] + r * gh[:, 2 * H:])
                u = 1 - z if att is None else att[:, t:t + 1] * (1 - z)
                h = torch.where((t < lens)[:, None], h + u * (c - h), h)
                out.append(h)
            return torch.stack(out, 1)

        def _history(self, x):
            """The MLP's input of a din or dien model (see ctr.SeqSpec)."""
            sq = self.spec["seq"]
            L, n = sq["max_len"], len(x)
            keys = torch.cat([x[:, f["col"]:f["col"] + L * f["dim"]].reshape(n, L, f["dim"]) for f in sq["history"]], 2)
            q = torch.cat([x[:, f["col"]:f["col"] + f["dim"]] for f in sq["target"]], 1)
            lens = x[:, sq["len_col"]].long()
            valid = torch.arange(L)[None, :] < lens[:, None]
            total = None
            if sq["kind"] == "din":
                w = torch.where(valid, self._lau(keys, q), torch.zeros(()))
                v = (w[:, :, None] * keys).sum(1)
            else:
                hs = self._gru("gru", keys, lens)
                a = torch.softmax(self._lau(hs, q).masked_fill(~valid, float("-inf")), dim=1)
                a = torch.nan_to_num(a, nan=0.0)  # an empty history
                ho = self._gru("augru", hs, lens, att=a)
                v = ho[torch.arange(n), (lens - 1).clamp(min=0)] * (lens > 0)[:, None]
                total = (keys * valid[:, :, None]).sum(1)
            parts = {"v": lambda r: v, "sum": lambda r: total, "x": lambda r: x[:, r["lo"]:r["hi"]]}
            return torch.cat([parts[r["of"]](r) for r in sq["inputs"]], 1)

        def forward(self, x):
            """The logits of input rows x (n, width), as pool() makes them."""
            p = self.params
            d = x[:, self.deep_cols] if not self.spec.get("seq") else self._history(x)
            h = d
            for i in range(self.spec.get("cross_layers", 0)):
                h = d * (h @ p[f"cross_{i}_weight"].T + p[f"cross_{i}_bias"]) + h
            for i in range(self.layers):
                h = h @ p[f"mlp_{i}_weight"].T + p[f"mlp_{i}_bias"]
                if i < self.layers - 1:
                    h = torch.relu(h)
            logit = h[:, 0]
            k = self.spec.get("fm_dim", 0)
            if k:
                v = d.reshape(len(d), -1, k)
                logit = logit + 0.5 * (v.sum(1).square() - v.square().sum(1)).sum(1)
            if self.spec["wide"]:
                logit = logit + x[:, self.wide_cols].sum(1)
            return logit

        def predict(self, user, candidates):
            """serve's scores of a request: the user's features and each
            candidate's (FIELD:TOKEN[:VALUE] strings), as numpy float32."""
            ns = (self.spec.get("seq") or {}).get("namespace") or []
            fid = lambda f, t: feature_id(ns[f] if f < len(ns) else f, t)  # noqa: E731
            uf = [(f, fid(f, t), v) for f, t, v in parse_features(user or "")]
            samples = [uf + [(f, fid(f, t), v) for f, t, v in parse_features(c)] for c in candidates]
            with torch.no_grad():
                return torch.sigmoid(self.forward(self.pool(samples))).numpy()

    return _Module()
