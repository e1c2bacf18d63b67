#!/usr/bin/python3
"""Reference peer: DIN and DIEN, the behaviour-sequence CTR models, in CPU PyTorch on libFFM files.

This is what a user would run instead of our platform. It trains one model (--model) and prints one
JSON line: model, training throughput (samples/s; file reading and batching are not timed), test AUC
and logloss. With --serve-bench it also gives the inference latency of single requests. Flags,
optimizers, AUC and output follow ../shared/peers/torch_zoo.py.

Papers:
  DIN   G. Zhou, X. Zhu, C. Song et al., "Deep Interest Network for Click-Through Rate Prediction",
        KDD 2018 (arXiv:1706.06978).
  DIEN  G. Zhou, N. Mou, Y. Fan et al., "Deep Interest Evolution Network for Click-Through Rate
        Prediction", AAAI 2019 (arXiv:1809.03672).

Install: apt-get install -y python3-torch python3-numpy libopenblas0-pthread
         (Debian's CPU PyTorch; use /usr/bin/python3)

Input: libFFM, "label field:token[:value] ..." (label 0/1 or -1/+1; a missing value is 1). A sequence
field is the same field repeated, in order, oldest first. Flags name the roles of the fields:
  --history H1,H2,..   the behaviour sequence fields, aligned per position (e.g. items, categories)
  --target  T1,T2,..   the candidate's fields, one per history field in the same order
  --negatives N1,N2,.. DIEN's sampled negative history, aligned with --history (optional)
  --max-len L          keep the last L positions of a longer history (negatives: the same positions)
Every other field is an ordinary bag field: its tokens' embeddings, weighted by their values, are
sum-pooled into one field vector (as torch_zoo.py). The target fields are bag fields too. The
negative fields are not features: only DIEN's auxiliary loss reads them. The values of history and
negative tokens are ignored.

Vocabularies: a field's namespace is its target's for history and negative fields, else the field
itself, so a history field and its target look up the SAME rows (one table per pair, as in the papers).
By default (--buckets 0) each (namespace, token) gets its own row from a dictionary built while
reading the train and then the test file, with no collisions (a token seen only in the test file keeps
its initial row, as a parameter server creates a row on first look-up). With --buckets B each
namespace hashes its tokens (crc32 of the token) into its own B rows instead. All namespaces are slices
of one table; row 0 is the padding row, always masked out.

Models. dim = --dim per field; e_t = concat of the history fields' embeddings at position t, width
D = dim * len(--history); q = concat of the target fields' embeddings (width D); bags = concat of all
bag fields' pooled vectors (targets included); len = the history's length; MLP = --hidden (default
200,80) layers with ReLU, then a linear to one logit; loss BCE with logits.
  mlp   the baseline: MLP(bags, sum_t e_t), i.e. the history fields sum-pooled like any bag field.
  din   DIN: a local activation unit g(k, q) = Linear(4D,80) PReLU Linear(80,40) PReLU Linear(40,1) on
        [k, q, k - q, k * q] (PReLU per channel, init 0.25). w_t = g(e_t, q), raw weights (no
        softmax, as the paper), 0 beyond len; MLP(bags, sum_t w_t e_t).
  dien  DIEN: interest extractor nn.GRU(D, D) over e_1..e_T (right-padded; the GRU is causal, so the
        states before len are exact and the later ones are masked) giving h_t. Auxiliary loss (paper
        eq. 4): over the steps t < len - 1 of the batch, mean of
        -log s(<h_t, e_{t+1}>) - log(1 - s(<h_t, e^_{t+1}>)), e^ the negative history's embeddings
        (a step counts only if its negative exists); weight --aux-weight (default 1.0); no negatives,
        no auxiliary loss. Attention a_t = softmax over t < len of g(h_t, q) (g as din's, its own
        weights). Interest evolution: AUGRU, PyTorch's GRU gates with the update scaled by a_t:
          r = s(W_ir x + b_ir + W_hr h + b_hr)      z = s(W_iz x + b_iz + W_hz h + b_hz)
          n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
          h'_t = h'_{t-1} + a_t (1 - z) * (n - h'_{t-1}),  h'_{-1} = 0,  x = h_t
        (a_t = 1 is nn.GRU exactly; a_t = 0 beyond len keeps the state, so the final state is the one
        at len - 1, and 0 for an empty history). MLP(bags, h'_final, sum_t e_t), the sum-pooled history
        as in the official DIEN code; loss BCE + aux_weight * aux.
Embeddings start uniform in +-0.01 and are trained with sparse Adagrad (--sparse-lr, PyTorch's
accumulator start 0 and eps); every other parameter (MLPs, attention, PReLU, GRU, AUGRU) with Adam
(--dense-lr); PyTorch's default initialisation for those.

Timings. Training: each epoch's batches (a random permutation, --batch rows, each batch's padded
history cut to its longest) are built into tensors first; samples/s is the rows trained over the
wall time of the loop of forward, backward and the two optimizer steps. --serve-bench: requests of
one user and --serve-candidates (100) candidates with a history of --serve-history (50) positions.
Users are the test rows with the longest histories (cycled over); a history shorter than
--serve-history is lengthened by repeating its own sequence (most recent item kept last), a longer
one keeps its last positions. Each request's candidates are the --serve-candidate-fields (default the
target fields) of random test rows; its other bag fields are the user row's. Requests are built into
tensors beforehand; one request = one forward (eval mode, torch.no_grad()) of a batch of 100 rows
sharing the history, then sigmoid and .numpy(); 20 warm-up requests, then --serve-requests (1000)
timed one by one: p50_ms, p99_ms.

Threads: --threads is torch.set_num_threads (PyTorch's OpenMP pool); Debian's PyTorch does its GEMMs
in OpenBLAS's own pthread pool, sized by OPENBLAS_NUM_THREADS. The two pools spin-wait on the same
cores: on a 2-core machine OPENBLAS_NUM_THREADS=2 with --threads 2 ran these models 2-4x slower
than OPENBLAS_NUM_THREADS=2 with --threads 1, the fastest setting (the GEMMs in parallel, the many
small element-wise ops of the recurrent loops serial). The JSON line records both.

Output (one JSON line): peer, model, threads, openblas_threads, batch, epochs, dim, max_len, vocab,
embedding_rows, train_samples, train_seconds, samples_per_second, test_auc, test_logloss, and with
--serve-bench serve_requests, serve_candidates, serve_history, serve_history_real_mean, p50_ms, p99_ms.

Examples:
  OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/torch_seq.py --model dien --train train.libffm \\
      --test test.libffm --history 2,3 --negatives 4,5 --target 6,7 --threads 2 --serve-bench
  (MovieLens conversion: --history 8,9 --negatives 10,11 --target 5,7)
  /usr/bin/python3 bench/torch_seq.py --selftest
  /usr/bin/python3 bench/torch_seq.py --write-synthetic DIR --synthetic-samples 20000
"""
import argparse, json, math, os, random, tempfile, time, zlib
from array import array

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MODELS = ["mlp", "din", "dien"]


def field_list(s):
    return [int(x) for x in s.split(",") if x.strip()] if s else []


class Schema:
    """The roles of the fields: history, negatives, target, the rest bags."""

    def __init__(self, history, target, negatives):
        if len(target) != len(history):
            raise SystemExit("--target must name one field per --history field")
        if negatives and len(negatives) != len(history):
            raise SystemExit("--negatives must name one field per --history field")
        if len(set(history + target + negatives)) != len(history + target + negatives):
            raise SystemExit("a field has two roles among --history, --target, --negatives")
        self.history, self.target, self.negatives = history, target, negatives
        self.info = {}  # field number -> (kind 0 bag / 1 history / 2 negative, position, namespace)
        for i, f in enumerate(history):
            self.info[f] = (1, i, target[i])
        for i, f in enumerate(negatives):
            self.info[f] = (2, i, target[i])

    def of(self, field):
        return self.info.get(field, (0, 0, field))


class Vocab:
    """(namespace, token) -> row of the one embedding table; row 0 is padding."""

    def __init__(self, buckets):
        self.buckets, self.slots, self.ids, self.rows = buckets, {}, {}, 1

    def lookup(self, ns, tok):
        if self.buckets:
            slot = self.slots.get(ns)
            if slot is None:
                slot = self.slots[ns] = len(self.slots)
            return 1 + slot * self.buckets + zlib.crc32(tok.encode()) % self.buckets
        key = (ns, tok)
        r = self.ids.get(key)
        if r is None:
            r = self.ids[key] = self.rows
            self.rows += 1
        return r

    def size(self):
        return 1 + len(self.slots) * self.buckets if self.buckets else self.rows


def to_dense(flat, lens, width):
    """Rows laid out [field][position] (lens[r] positions each) -> int32 [N, max(1, max len), width]."""
    n = len(lens)
    out = np.zeros((n, max(1, int(lens.max()) if n else 1), width), dtype=np.int32)
    cnt = lens.astype(np.int64) * width
    if cnt.sum():
        base = np.cumsum(cnt) - cnt
        rows = np.repeat(np.arange(n), cnt)
        within = np.arange(cnt.sum()) - np.repeat(base, cnt)
        ln = np.repeat(lens.astype(np.int64), cnt)
        out[rows, within % ln, within // ln] = flat
    return out


class SeqData:
    """A parsed file: bag fields in CSR form (row r owns entries ptr[r]:ptr[r+1]), the history and
    negatives as padded int32 [N, L, H] rows of the table with their lengths."""

    def __init__(self, path, schema, vocab, max_len):
        H = len(schema.history)
        labels, ptr, bfield, bid, bval = array("f"), array("q", [0]), array("i"), array("q"), array("f")
        hflat, hlen, nflat, nlen = array("q"), array("i"), array("q"), array("i")
        cache = {}
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if not parts:
                    continue
                labels.append(1.0 if float(parts[0]) > 0 else 0.0)
                hs = [[] for _ in range(H)]
                ng = [[] for _ in range(H)]
                for tok in parts[1:]:
                    bits = tok.split(":")
                    info = cache.get(bits[0])
                    if info is None:
                        fld = int(bits[0])
                        info = cache[bits[0]] = schema.of(fld) + (fld,)
                    kind, i, ns, fld = info
                    rid = vocab.lookup(ns, bits[1])
                    if kind == 0:
                        bfield.append(fld)
                        bid.append(rid)
                        bval.append(float(bits[2]) if len(bits) > 2 else 1.0)
                    elif kind == 1:
                        hs[i].append(rid)
                    else:
                        ng[i].append(rid)
                ptr.append(len(bid))
                if H:
                    n = min(len(x) for x in hs)  # positions all history fields have
                    L = min(n, max_len)
                    for x in hs:  # the last L positions
                        hflat.extend(x[len(x) - L:])
                    hlen.append(L)
                    if schema.negatives:  # the negatives of the same positions
                        start = n - L
                        m = max(0, min(min(len(x) for x in ng) - start, L))
                        for x in ng:
                            hx = x[start:start + m]
                            nflat.extend(hx)
                            nflat.extend([0] * (L - m))
                        nlen.append(m)
        self.y = np.frombuffer(labels, dtype=np.float32)
        self.ptr = np.frombuffer(ptr, dtype=np.int64)
        self.bfield = np.frombuffer(bfield, dtype=np.int32)
        self.bid = np.frombuffer(bid, dtype=np.int64)
        self.bval = np.frombuffer(bval, dtype=np.float32)
        N = len(self.y)
        self.H = H
        self.hlen = np.frombuffer(hlen, dtype=np.int32) if H else np.zeros(N, dtype=np.int32)
        flat = np.frombuffer(hflat, dtype=np.int64)
        self.hist = to_dense(flat, self.hlen, H) if H else np.zeros((N, 1, 0), dtype=np.int32)
        self.neg = self.nlen = None
        if H and schema.negatives:
            self.nlen = np.frombuffer(nlen, dtype=np.int32)
            self.neg = to_dense(np.frombuffer(nflat, dtype=np.int64), self.hlen, H)
        self.bidx = None

    def __len__(self):
        return len(self.y)

    def index_bags(self, bag_index):
        """Set each bag entry's position among the bag fields (bag_index: field -> position)."""
        lut = np.full(max(bag_index) + 1, -1, dtype=np.int64)
        for f, i in bag_index.items():
            lut[f] = i
        self.bidx = lut[self.bfield]

    def bags(self, idx, nbag):
        """EmbeddingBag inputs with one bag per (sample, bag field), as torch_zoo.py builds them."""
        starts, lens = self.ptr[idx], self.ptr[idx + 1] - self.ptr[idx]
        within = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
        pos = np.repeat(starts, lens) + within
        key = np.repeat(np.arange(len(idx)), lens) * nbag + self.bidx[pos]
        order = np.argsort(key, kind="stable")  # group by (sample, field), keep file order inside
        counts = np.bincount(key, minlength=len(idx) * nbag)
        offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
        return (torch.from_numpy(self.bid[pos][order]), torch.from_numpy(offsets),
                torch.from_numpy(self.bval[pos][order]))

    def batch(self, idx, nbag, with_neg=True):
        T = max(1, int(self.hlen[idx].max()))
        b = {"bags": self.bags(idx, nbag), "n": len(idx),
             "hist": torch.from_numpy(self.hist[idx, :T].astype(np.int64)),
             "hlen": torch.from_numpy(self.hlen[idx].astype(np.int64))}
        if with_neg and self.neg is not None:
            b["neg"] = torch.from_numpy(self.neg[idx, :T].astype(np.int64))
            b["nlen"] = torch.from_numpy(self.nlen[idx].astype(np.int64))
        return b


def mlp_layers(width, hidden):
    layers = []
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


class LocalActivation(nn.Module):
    """DIN's local activation unit: [k, q, k - q, k * q] -> 80 PReLU -> 40 PReLU -> 1, per position."""

    def __init__(self, D):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4 * D, 80), nn.PReLU(80), nn.Linear(80, 40), nn.PReLU(40),
                                 nn.Linear(40, 1))

    def forward(self, k, q):  # k [n, T, D], q [n, D] -> [n, T]
        n, T, D = k.shape
        q = q.unsqueeze(1).expand_as(k)
        x = torch.cat([k, q, k - q, k * q], dim=2).view(n * T, 4 * D)  # PReLU's channels: dim 1
        return self.net(x).view(n, T)


class AUGRU(nn.Module):
    """GRU with attentional update gate (DIEN), PyTorch's gate layout (r, z, n) and initialisation."""

    def __init__(self, D):
        super().__init__()
        self.D = D
        self.weight_ih = nn.Parameter(torch.empty(3 * D, D))
        self.weight_hh = nn.Parameter(torch.empty(3 * D, D))
        self.bias_ih = nn.Parameter(torch.empty(3 * D))
        self.bias_hh = nn.Parameter(torch.empty(3 * D))
        bound = 1.0 / math.sqrt(D)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x, a):  # x [n, T, D], a [n, T] -> final state [n, D]
        # unbind, not gi[:, t]: the backward of one unbind is one stack, that of T slices T zero-filled
        # copies of gi
        gis = F.linear(x, self.weight_ih, self.bias_ih).unbind(1)
        ats = a.unsqueeze(2).unbind(1)
        h = x.new_zeros(x.shape[0], self.D)
        for gi, at in zip(gis, ats):
            gh = F.linear(h, self.weight_hh, self.bias_hh)
            i_r, i_z, i_n = gi.chunk(3, 1)
            h_r, h_z, h_n = gh.chunk(3, 1)
            r = torch.sigmoid(i_r + h_r)
            z = torch.sigmoid(i_z + h_z)
            n = torch.tanh(i_n + r * h_n)
            h = h + at * (1 - z) * (n - h)
        return h


class SeqCTR(nn.Module):
    def __init__(self, kind, rows, dim, nbag, target_pos, H, hidden):
        super().__init__()
        self.kind, self.dim, self.nbag, self.H = kind, dim, nbag, H
        self.target_pos = target_pos  # positions of the target fields among the bag fields
        D = dim * H
        self.emb = nn.Parameter(torch.empty(rows, dim))
        nn.init.uniform_(self.emb, -0.01, 0.01)
        self.att = self.gru = self.augru = None
        if kind in ("din", "dien"):
            self.att = LocalActivation(D)
        if kind == "dien":
            self.gru = nn.GRU(D, D, batch_first=True)
            self.augru = AUGRU(D)
        self.mlp = mlp_layers(nbag * dim + (2 * D if kind == "dien" else D), hidden)

    def sparse_params(self):
        return [self.emb]

    def dense_params(self):
        return [p for name, p in self.named_parameters() if name != "emb"]

    def forward(self, b):
        """Returns the logits [n] and DIEN's auxiliary loss (None for the others or without negatives)."""
        n = b["n"]
        ids, offs, w = b["bags"]
        bags = F.embedding_bag(ids, self.emb, offs, mode="sum", sparse=True, per_sample_weights=w)
        bags = bags.view(n, self.nbag, self.dim)
        hist = b["hist"]
        T = hist.shape[1]
        e = F.embedding(hist, self.emb, sparse=True).view(n, T, self.H * self.dim)
        valid = torch.arange(T).unsqueeze(0) < b["hlen"].unsqueeze(1)  # [n, T]
        mask = valid.unsqueeze(2).to(e.dtype)
        parts = [bags.reshape(n, self.nbag * self.dim)]
        aux = None
        if self.kind == "mlp":
            parts.append((e * mask).sum(1))
        else:
            q = bags[:, self.target_pos].reshape(n, self.H * self.dim)
            if self.kind == "din":
                wts = self.att(e, q) * valid.to(e.dtype)
                parts.append((wts.unsqueeze(2) * e).sum(1))
            else:
                h, _ = self.gru(e)
                h = h * mask
                if "neg" in b and T > 1:
                    eneg = F.embedding(b["neg"][:, 1:], self.emb, sparse=True).view(n, T - 1, -1)
                    nxt = torch.arange(1, T).unsqueeze(0)
                    ok = ((nxt < b["hlen"].unsqueeze(1)) & (nxt < b["nlen"].unsqueeze(1))).to(e.dtype)
                    hs = h[:, :-1]
                    ll = F.logsigmoid((hs * e[:, 1:]).sum(2)) + F.logsigmoid(-(hs * eneg).sum(2))
                    aux = -(ll * ok).sum() / ok.sum().clamp(min=1.0)
                s = self.att(h, q).masked_fill(~valid, -1e30)
                a = torch.softmax(s, dim=1) * valid.to(e.dtype)  # an empty history: all 0
                parts += [self.augru(h, a), (e * mask).sum(1)]
        return self.mlp(torch.cat(parts, dim=1)).squeeze(1), aux


def auc(y, p):
    order = np.argsort(p, kind="mergesort")
    ranks = np.empty(len(p))
    ranks[order] = np.arange(1, len(p) + 1)
    # average ranks over ties
    sp = p[order]
    i = 0
    while i < len(sp):
        j = i
        while j + 1 < len(sp) and sp[j + 1] == sp[i]:
            j += 1
        if j > i:
            ranks[order[i:j + 1]] = (i + j + 2) / 2.0
        i = j + 1
    pos = y > 0.5
    npos, nneg = pos.sum(), (~pos).sum()
    if npos == 0 or nneg == 0:
        return float("nan")
    return float((ranks[pos].sum() - npos * (npos + 1) / 2) / (npos * nneg))


def serve_requests(te, nbag, bag_index, cand_fields, S, ncand, count, rng):
    """Pre-built requests: (batch, real history length) for `count` requests, as the docstring says."""
    order = np.argsort(-te.hlen, kind="stable")
    order = order[te.hlen[order] > 0]
    if len(order) == 0:
        raise SystemExit("--serve-bench: no test row has a history")
    users = order[:min(len(order), count)]
    cand_pos = {bag_index[f] for f in cand_fields if f in bag_index}
    out = []
    for k in range(count):
        u = users[k % len(users)]
        L = int(te.hlen[u])
        seq = te.hist[u, :L]
        if L < S:  # repeat the real sequence, the most recent item last
            seq = np.tile(seq, (-(-S // L), 1))
        seq = seq[len(seq) - S:]
        cands = rng.integers(0, len(te), ncand)
        ids, offs, vals = [], [], []
        ue = range(te.ptr[u], te.ptr[u + 1])
        for c in cands:
            ce = range(te.ptr[c], te.ptr[c + 1])
            for j in range(nbag):
                offs.append(len(ids))
                src = ce if j in cand_pos else ue
                for p in src:
                    if te.bidx[p] == j:
                        ids.append(te.bid[p])
                        vals.append(te.bval[p])
        b = {"bags": (torch.tensor(ids, dtype=torch.int64), torch.tensor(offs, dtype=torch.int64),
                      torch.tensor(vals, dtype=torch.float32)),
             "n": ncand,
             "hist": torch.from_numpy(seq.astype(np.int64)).unsqueeze(0).repeat(ncand, 1, 1),
             "hlen": torch.full((ncand,), S, dtype=torch.int64)}
        out.append((b, min(L, S)))
    return out


def run(a):
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    history, target, negatives = field_list(a.history), field_list(a.target), field_list(a.negatives)
    if a.model in ("din", "dien") and not history:
        raise SystemExit(f"--model {a.model} needs --history and --target")
    schema = Schema(history, target, negatives)
    vocab = Vocab(a.buckets)
    tr = SeqData(a.train, schema, vocab, a.max_len)
    te = SeqData(a.test, schema, vocab, a.max_len)
    bag_fields = sorted(set(tr.bfield.tolist()) | set(te.bfield.tolist()) | set(target))
    bag_index = {f: i for i, f in enumerate(bag_fields)}
    tr.index_bags(bag_index)
    te.index_bags(bag_index)
    nbag = len(bag_fields)
    hidden = [int(h) for h in a.hidden.split(",") if h]
    model = SeqCTR(a.model, vocab.size(), a.dim, nbag, [bag_index[f] for f in target], len(history), hidden)
    eopt = torch.optim.Adagrad(model.sparse_params(), lr=a.sparse_lr)
    dopt = torch.optim.Adam(model.dense_params(), lr=a.dense_lr)
    use_neg = a.model == "dien" and a.aux_weight != 0

    # Pre-build each epoch's batches so that the timing covers training only, as torch_zoo.py does.
    train_time, seen, left = 0.0, 0, a.max_batches if a.max_batches > 0 else float("inf")
    last_loss = float("nan")
    for _ in range(a.epochs):
        if left <= 0:
            break
        perm = rng.permutation(len(tr))
        batches = []
        for s in range(0, len(perm), a.batch):
            if len(batches) >= left:
                break
            idx = perm[s:s + a.batch]
            batches.append((tr.batch(idx, nbag, use_neg), torch.from_numpy(tr.y[idx])))
        left -= len(batches)
        model.train()
        t0 = time.perf_counter()
        for b, y in batches:
            eopt.zero_grad()
            dopt.zero_grad()
            logit, aux = model(b)
            loss = F.binary_cross_entropy_with_logits(logit, y)
            if aux is not None:
                loss = loss + a.aux_weight * aux
            loss.backward()
            eopt.step()
            dopt.step()
            seen += b["n"]
        train_time += time.perf_counter() - t0
        last_loss = float(loss) if batches else last_loss

    model.eval()
    preds = []
    with torch.no_grad():
        for s in range(0, len(te), 1024):
            idx = np.arange(s, min(s + 1024, len(te)))
            preds.append(torch.sigmoid(model(te.batch(idx, nbag, False))[0]).numpy())
    p = np.concatenate(preds).astype(np.float64) if preds else np.zeros(0)
    yte = te.y.astype(np.float64)
    eps = 1e-7
    logloss = float(-np.mean(yte * np.log(p + eps) + (1 - yte) * np.log(1 - p + eps)))
    res = {
        "peer": "pytorch-cpu " + torch.__version__, "model": a.model, "threads": a.threads,
        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "batch": a.batch, "epochs": a.epochs, "dim": a.dim, "max_len": a.max_len,
        "vocab": f"hash{a.buckets}" if a.buckets else "dict", "embedding_rows": vocab.size(),
        "train_samples": seen, "train_seconds": round(train_time, 3),
        "samples_per_second": round(seen / train_time, 1) if train_time > 0 else None,
        "test_auc": round(auc(yte, p), 5), "test_logloss": round(logloss, 5),
    }
    if a.serve_bench:
        cand_fields = field_list(a.serve_candidate_fields) or target
        reqs = serve_requests(te, nbag, bag_index, cand_fields, a.serve_history, a.serve_candidates,
                              20 + a.serve_requests, rng)
        lat = []
        with torch.no_grad():
            for k, (b, _) in enumerate(reqs):
                t0 = time.perf_counter()
                torch.sigmoid(model(b)[0]).numpy()
                if k >= 20:
                    lat.append(time.perf_counter() - t0)
        q = lambda v, pr: round(1000 * float(np.quantile(np.array(v), pr)), 3)
        res.update({"serve_requests": len(lat), "serve_candidates": a.serve_candidates,
                    "serve_history": a.serve_history,
                    "serve_history_real_mean": round(float(np.mean([r[1] for r in reqs[20:]])), 2),
                    "p50_ms": q(lat, 0.5), "p99_ms": q(lat, 0.99)})
    res["_last_loss"] = last_loss
    return res


def write_synthetic(directory, n_train, n_test, seed=1, max_hist=50):
    """A synthetic file pair with the generator's field numbering: 0 user, 1 segment, 2/3 history
    items/categories, 4/5 negative items/categories, 6/7 candidate item/category. Users favour a few
    categories, drifting towards their latest ones; a click is likelier when the candidate's category
    is among the recent history's. Returns the (train, test) paths."""
    r = random.Random(seed)
    n_users, n_items, n_cats = 2000, 20000, 200
    item_cat = [r.randrange(n_cats) for _ in range(n_items)]
    by_cat = [[] for _ in range(n_cats)]
    for i, c in enumerate(item_cat):
        by_cat[c].append(i)
    by_cat = [b or [r.randrange(n_items)] for b in by_cat]
    prefs = [r.sample(range(n_cats), 4) for _ in range(n_users)]

    def line():
        u = r.randrange(n_users)
        L = r.randint(0, max_hist)
        hist = []
        for t in range(L):
            if r.random() < 0.8:  # later positions favour the user's later preferences
                k = min(3, int(4 * (t + r.random() * L) / (2 * max(L, 1))))
                c = prefs[u][k]
            else:
                c = r.randrange(n_cats)
            hist.append(r.choice(by_cat[c]))
        negs = [r.randrange(n_items) for _ in range(L)]
        recent = [item_cat[i] for i in hist[-10:]]
        if recent and r.random() < 0.5:
            cand = r.choice(by_cat[r.choice(recent)])
        else:
            cand = r.randrange(n_items)
        cc = item_cat[cand]
        score = -1.5 + 3.0 * sum(c == cc for c in recent) / max(len(recent), 1)
        score += 0.7 if cand in hist else 0
        score += 0.3 * ((u % 7) - 3) / 3
        y = 1 if r.random() < 1 / (1 + math.exp(-score)) else 0
        toks = [f"0:u{u}:1", f"1:s{u % 8}:1"]
        toks += [f"2:i{i}:1" for i in hist] + [f"3:c{item_cat[i]}:1" for i in hist]
        toks += [f"4:i{i}:1" for i in negs] + [f"5:c{item_cat[i]}:1" for i in negs]
        toks += [f"6:i{cand}:1", f"7:c{cc}:1"]
        return f"{y} " + " ".join(toks) + "\n"

    os.makedirs(directory, exist_ok=True)
    paths = os.path.join(directory, "seq_train.libffm"), os.path.join(directory, "seq_test.libffm")
    for path, n in zip(paths, (n_train, n_test)):
        with open(path, "w") as f:
            for _ in range(n):
                f.write(line())
    return paths


def selftest(a):
    """Checks of the pieces, then each model for a few batches on a tiny synthetic file."""
    torch.manual_seed(0)
    # AUGRU with a_t = 1 is nn.GRU; with a_t = 0 after the length, its final state is the state at len-1.
    D = 6
    gru, augru = nn.GRU(D, D, batch_first=True), AUGRU(D)
    with torch.no_grad():
        for nm in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(augru, nm).copy_(getattr(gru, nm + "_l0"))
        x = torch.randn(3, 7, D)
        out, _ = gru(x)
        assert torch.allclose(augru(x, torch.ones(3, 7)), out[:, -1], atol=1e-6), "AUGRU(a=1) != GRU"
        a4 = torch.rand(3, 7)
        a4[:, 4:] = 0
        assert torch.allclose(augru(x, a4), augru(x[:, :4], a4[:, :4]), atol=1e-6), "AUGRU padding"
        assert augru(x, torch.zeros(3, 7)).abs().max() == 0, "AUGRU empty history"
    # AUC with ties
    assert abs(auc(np.array([0, 1, 0, 1.]), np.array([.1, .4, .4, .8])) - 0.875) < 1e-12
    print("selftest: AUGRU = GRU at a=1, padding and empty-history invariance, AUC: ok")

    # Each model: a row's logit does not depend on the batch's padding; DIEN's auxiliary loss is eq. 4
    # summed by loops over the valid steps.
    rows, dim, H, T = 50, 4, 2, 6
    hl = torch.tensor([6, 3, 1, 0])
    nl = torch.tensor([6, 2, 1, 0])
    hist = torch.randint(1, rows, (4, T, H)) * (torch.arange(T).view(1, T, 1) < hl.view(4, 1, 1))
    neg = torch.randint(1, rows, (4, T, H)) * (torch.arange(T).view(1, T, 1) < nl.view(4, 1, 1))
    bags = (torch.randint(1, rows, (12,)), torch.arange(0, 12, 1), torch.ones(12))  # 4 rows x 3 fields
    for kind in MODELS:
        m = SeqCTR(kind, rows, dim, 3, [1, 2], H, [8])
        with torch.no_grad():
            m.emb.uniform_(-0.5, 0.5)
        b = {"bags": bags, "n": 4, "hist": hist, "hlen": hl, "neg": neg, "nlen": nl}
        logit, aux = m(b)
        for r in range(4):
            Tr = max(1, int(hl[r]))
            one = {"bags": (bags[0][3 * r:3 * r + 3], torch.arange(3), torch.ones(3)), "n": 1,
                   "hist": hist[r:r + 1, :Tr], "hlen": hl[r:r + 1]}
            assert torch.allclose(m(one)[0], logit[r:r + 1], atol=1e-5), (kind, r, "padding changes a logit")
        if kind == "dien":
            with torch.no_grad():
                e = F.embedding(hist, m.emb).view(4, T, H * dim)
                h, _ = m.gru(e)
                en = F.embedding(neg, m.emb).view(4, T, H * dim)
                terms = [-F.logsigmoid(h[r, t] @ e[r, t + 1]) - F.logsigmoid(-(h[r, t] @ en[r, t + 1]))
                         for r in range(4) for t in range(T - 1) if t < hl[r] - 1 and t + 1 < nl[r]]
                assert torch.allclose(aux, sum(terms) / len(terms), atol=1e-5), "auxiliary loss"
    print("selftest: logits independent of padding (mlp, din, dien), DIEN auxiliary loss: ok")

    with tempfile.TemporaryDirectory() as d:
        trp, tep = write_synthetic(d, 1200, 400, seed=3, max_hist=12)
        # vocabularies: history and target tokens share rows; negatives too
        for buckets in (0, 1000):
            schema = Schema([2, 3], [6, 7], [4, 5])
            v = Vocab(buckets)
            ds = SeqData(trp, schema, v, 8)
            tok = open(trp).readline().split()
            h = [t.split(":")[1] for t in tok[1:] if t.startswith("2:")]
            if h:
                assert ds.hist[0, 0, 0] == v.lookup(6, h[-min(len(h), 8)]), "history/target rows differ"
            assert v.lookup(6, "i1") != v.lookup(7, "i1"), "namespaces collide"
            assert (ds.hlen <= 8).all() and (ds.nlen <= ds.hlen).all()
        print("selftest: shared history/target rows (dict and hashed), max-len cut: ok")
        for m in MODELS:
            args = a.__class__(**vars(a))
            args.model, args.train, args.test = m, trp, tep
            args.history, args.target, args.negatives = "2,3", "6,7", "4,5"
            args.max_len, args.batch, args.max_batches, args.epochs = 10, 64, 4, 1
            args.serve_bench, args.serve_requests, args.serve_history = True, 10, 10
            res = run(args)
            loss = res.pop("_last_loss")
            assert math.isfinite(loss) and math.isfinite(res["test_logloss"]), res
            assert res["train_samples"] == 256 and res["serve_requests"] == 10, res
            print(json.dumps(res))
    print("selftest: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train")
    ap.add_argument("--test")
    ap.add_argument("--model", choices=MODELS, default="din")
    ap.add_argument("--history", default="", help="history sequence fields, e.g. 2,3")
    ap.add_argument("--target", default="", help="candidate fields, one per history field, e.g. 6,7")
    ap.add_argument("--negatives", default="", help="DIEN's negative history fields, e.g. 4,5")
    ap.add_argument("--max-len", type=int, default=50, help="keep the last max-len history positions")
    ap.add_argument("--buckets", type=int, default=0,
                    help="0: a dictionary row per (namespace, token); B: hash each namespace into B rows")
    ap.add_argument("--dim", type=int, default=18)
    ap.add_argument("--hidden", default="200,80")
    ap.add_argument("--aux-weight", type=float, default=1.0, help="dien auxiliary loss weight")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--max-batches", type=int, default=0, help="stop training after N batches (0: no limit)")
    ap.add_argument("--sparse-lr", "--emb-lr", type=float, default=0.05,
                    help="Adagrad learning rate, embeddings")
    ap.add_argument("--dense-lr", "--lr", type=float, default=0.001, help="Adam learning rate, the rest")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--serve-bench", action="store_true", help="also time single requests")
    ap.add_argument("--serve-requests", type=int, default=1000)
    ap.add_argument("--serve-candidates", type=int, default=100)
    ap.add_argument("--serve-history", type=int, default=50)
    ap.add_argument("--serve-candidate-fields", default="",
                    help="bag fields taken from the candidate rows (default: the --target fields)")
    ap.add_argument("--selftest", action="store_true", help="quick checks on a tiny synthetic file")
    ap.add_argument("--write-synthetic", metavar="DIR", help="write DIR/seq_{train,test}.libffm and exit")
    ap.add_argument("--synthetic-samples", type=int, default=20000, help="train rows (test: a fifth)")
    a = ap.parse_args()
    if a.selftest:
        selftest(a)
        return
    if a.write_synthetic:
        n = a.synthetic_samples
        for p in write_synthetic(a.write_synthetic, n, max(1, n // 5), a.seed + 1):
            print(p)
        return
    if not a.train or not a.test:
        ap.error("--train and --test are required")
    res = run(a)
    res.pop("_last_loss")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
