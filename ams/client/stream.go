package client

import (
	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/stream"
)

// The data plane to a shard in another process is its stream (package
// ams/stream): a pull or push is one frame on the long-lived stream to
// the shard, built in a pooled buffer straight from the route and the
// batch's buffers, and a pull's reply is scattered into the batch's
// buffers by the stream's receiving goroutine while the call waits.
// Sync-mode rounds, whose pulls wait at the shard, stay on gRPC calls.

// pullSink delivers shard s's reply to k's pull.
type pullSink struct {
	k *call
	s int
}

func (p *pullSink) Deliver(r *stream.Reply) error {
	k := p.k
	return k.c.scatterPull(p.s, k.r, k.bufs, k.dense, (*streamPulled)(r))
}

// pullStream is shard s's part of k's pull over its stream.
func (k *call) pullStream(s int) error {
	c, r := k.c, k.r
	tm, dm := k.meta[s][:0], k.dmeta[s][:0]
	for ti, t := range r.tables {
		if n := len(r.ids[s][ti]); n > 0 {
			tm = append(tm, stream.TableMeta{Name: t.name, IDs: n})
		}
	}
	for _, d := range k.dense {
		dm = append(dm, stream.DenseMeta{Name: d.Name})
	}
	k.meta[s], k.dmeta[s] = tm, dm
	if len(tm) == 0 && len(dm) == 0 {
		return nil
	}
	conn := c.streams[s]
	h := stream.RequestHeader{Kind: stream.KindPull, ID: conn.NextID(), Version: c.version, Create: k.create}
	buf := conn.Frame(stream.RequestSize(&h, tm, dm))
	var w stream.RequestWriter
	if err := w.Begin(*buf, &h, tm, dm); err != nil {
		return c.rpcError("pull from", s, err)
	}
	for ti := range r.tables {
		if ids := r.ids[s][ti]; len(ids) > 0 {
			w.Table(ids, 0)
		}
	}
	for range dm {
		w.Dense(0)
	}
	if err := conn.Do(k.ctx, h.ID, buf, &k.sinks[s]); err != nil {
		return c.rpcError("pull from", s, err)
	}
	return nil
}

// pushStream is shard s's part of k's push over its stream.
func (k *call) pushStream(s int) error {
	c, r := k.c, k.r
	tm, dm := k.meta[s][:0], k.dmeta[s][:0]
	for ti, t := range r.tables {
		if n := len(r.ids[s][ti]); n > 0 {
			tm = append(tm, stream.TableMeta{Name: t.name, IDs: n, Dim: t.dim})
		}
	}
	for _, d := range k.dense {
		lo, hi := ams.DenseRange(len(d.Values), s, len(c.stubs))
		dm = append(dm, stream.DenseMeta{Name: d.Name, Values: hi - lo})
	}
	k.meta[s], k.dmeta[s] = tm, dm
	if len(tm) == 0 && len(dm) == 0 {
		return nil
	}
	conn := c.streams[s]
	h := stream.RequestHeader{Kind: stream.KindPush, ID: conn.NextID(), Version: c.version, Origin: k.origin}
	buf := conn.Frame(stream.RequestSize(&h, tm, dm))
	var w stream.RequestWriter
	if err := w.Begin(*buf, &h, tm, dm); err != nil {
		return c.rpcError("push to", s, err)
	}
	for ti, t := range r.tables {
		if ids := r.ids[s][ti]; len(ids) > 0 {
			gatherGrads(w.Table(ids, t.dim), k.bufs[ti], r.pos[s][ti], t.dim)
		}
	}
	for _, d := range k.dense {
		lo, hi := ams.DenseRange(len(d.Values), s, len(c.stubs))
		ams.PutFloats(w.Dense(hi-lo), d.Values[lo:hi])
	}
	if err := conn.Do(k.ctx, h.ID, buf, nil); err != nil {
		return c.rpcError("push to", s, err)
	}
	return nil
}
