package main

import (
	"context"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/reader"
)

// batch is the bilinear model's math on one batch, with its buffers
// (reused from batch to batch). The dense vector is p = [b, M], M k x k
// row-major; a row of the table is [w, f_1 .. f_k].
type batch struct {
	cl    *client.Client
	route *client.Route
	k     int
	// The batch's unique ids, their rows and gradients (len(ids) x 1+k),
	// and the dense vector and its gradient.
	slot   map[uint64]int32
	ids    []uint64
	rows   []float32
	grads  []float32
	params []float32
	dgrad  []float32
	// Per sample s: its features' slots feats[off[s]:off[s+1]], those of
	// user fields first (the first nUser[s] of them).
	feats []int32
	off   []int
	nUser []int
	// Per sample, k values each: the user vector u, the item vector v,
	// M·v and Mᵀ·u.
	u, v, mv, mtu                  []float32
	labels, logits, probs, dlogits []float32
	// first is each sample's first-order part of its logit, b + Σ w.
	first []float32
}

// init readies b for client cl (a new one after a restore: a route
// belongs to its client).
func (b *batch) init(cl *client.Client, o options) {
	if b.cl != cl {
		b.cl, b.route = cl, cl.NewRoute()
	}
	b.k = o.dim
	b.slot = make(map[uint64]int32)
	b.params = make([]float32, 1+o.dim*o.dim)
	b.dgrad = make([]float32, len(b.params))
}

// pull loads samples idx of ds into b and pulls their rows and the dense
// vector (creating missing rows when create is set).
func (b *batch) pull(ctx context.Context, ds *reader.Dataset, idx []int, userFields uint32, create bool) error {
	b.load(ds, idx, userFields)
	b.route.Reset()
	if err := b.route.Add(tableName, b.ids); err != nil {
		return err
	}
	return b.cl.PullRoute(ctx, b.route, [][]float32{b.rows}, []client.Vector{{Name: denseName, Values: b.params}}, create)
}

// load loads samples idx of ds into b: their unique ids, each sample's
// features, and buffers of their sizes.
func (b *batch) load(ds *reader.Dataset, idx []int, userFields uint32) {
	clear(b.slot)
	b.ids, b.feats, b.off, b.nUser, b.labels = b.ids[:0], b.feats[:0], append(b.off[:0], 0), b.nUser[:0], b.labels[:0]
	for _, i := range idx {
		label, fields, ids, _ := ds.Sample(i)
		b.labels = append(b.labels, label)
		nu := 0
		for pass := range 2 { // user fields, then item fields
			for j, id := range ids {
				if (fields[j] < userFields) != (pass == 0) {
					continue
				}
				s, ok := b.slot[id]
				if !ok {
					s = int32(len(b.ids))
					b.slot[id] = s
					b.ids = append(b.ids, id)
				}
				b.feats = append(b.feats, s)
				if pass == 0 {
					nu++
				}
			}
		}
		b.off = append(b.off, len(b.feats))
		b.nUser = append(b.nUser, nu)
	}
	n, w := len(idx), 1+b.k
	b.rows, b.grads = grow(b.rows, len(b.ids)*w), grow(b.grads, len(b.ids)*w)
	for _, p := range []*[]float32{&b.u, &b.v, &b.mv, &b.mtu} {
		*p = grow(*p, n*b.k)
	}
	for _, p := range []*[]float32{&b.logits, &b.probs, &b.dlogits, &b.first} {
		*p = grow(*p, n)
	}
}

// forward computes every sample's logit = b + Σ w + uᵀ·M·v, and its
// first-order part b + Σ w.
func (b *batch) forward() {
	k, w := b.k, 1+b.k
	m := b.params[1:]
	for s := range b.labels {
		u, v, mv := b.u[s*k:(s+1)*k], b.v[s*k:(s+1)*k], b.mv[s*k:(s+1)*k]
		clear(u)
		clear(v)
		logit := b.params[0]
		for j, f := range b.feats[b.off[s]:b.off[s+1]] {
			row := b.rows[int(f)*w : int(f+1)*w]
			logit += row[0]
			dst := v
			if j < b.nUser[s] {
				dst = u
			}
			for c := range k {
				dst[c] += row[1+c]
			}
		}
		for r := range k {
			mv[r] = dot(m[r*k:(r+1)*k], v)
		}
		b.first[s] = logit
		b.logits[s] = logit + dot(u, mv)
	}
}

// backward computes the gradients of the loss, given dlogits, for the
// rows and the dense vector:
//
//	db = Σ δ, dM = Σ δ·u·vᵀ, dw = δ, df = δ·M·v (user ids), δ·Mᵀ·u (item ids)
func (b *batch) backward() {
	k, w := b.k, 1+b.k
	m, dm := b.params[1:], b.dgrad[1:]
	clear(b.grads)
	clear(b.dgrad)
	for s, d := range b.dlogits {
		u, v, mv, mtu := b.u[s*k:(s+1)*k], b.v[s*k:(s+1)*k], b.mv[s*k:(s+1)*k], b.mtu[s*k:(s+1)*k]
		b.dgrad[0] += d
		clear(mtu)
		for r := range k {
			for c := range k {
				dm[r*k+c] += d * u[r] * v[c]
				mtu[c] += m[r*k+c] * u[r]
			}
		}
		for j, f := range b.feats[b.off[s]:b.off[s+1]] {
			g := b.grads[int(f)*w : int(f+1)*w]
			g[0] += d
			src := mtu
			if j < b.nUser[s] {
				src = mv
			}
			for c := range k {
				g[1+c] += d * src[c]
			}
		}
	}
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// grow returns buf with length n, reallocated when too small.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}
