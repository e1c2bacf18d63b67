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
	r := k.r
	conn, h, buf, w, err := k.streamRequest(s, stream.RequestHeader{Kind: stream.KindPull, Create: k.create})
	if buf == nil {
		return err
	}
	for ti := range r.tables {
		if ids := r.ids[s][ti]; len(ids) > 0 {
			w.Table(ids, 0)
		}
	}
	for range k.dense {
		w.Dense(0)
	}
	if err := conn.Do(k.ctx, h.ID, buf, &k.sinks[s]); err != nil {
		return k.c.rpcError("pull from", s, err)
	}
	return nil
}

// pushStream is shard s's part of k's push over its stream.
func (k *call) pushStream(s int) error {
	c, r := k.c, k.r
	conn, h, buf, w, err := k.streamRequest(s, stream.RequestHeader{Kind: stream.KindPush, Origin: k.origin})
	if buf == nil {
		return err
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

// streamRequest lays out the frame of shard s's part of k, of h's kind,
// on s's stream: the metadata of the route's tables with ids on s and of
// k's dense vectors (a push's with their dims and s's ranges), in a
// buffer of the stream's, whose payloads the caller writes with w, in
// that order. buf is nil when the shard has no part (err nil) or the
// frame could not be laid out (err set).
func (k *call) streamRequest(s int, h stream.RequestHeader) (conn *stream.Conn, _ stream.RequestHeader, buf *[]byte, w stream.RequestWriter, err error) {
	c, r := k.c, k.r
	push := h.Kind == stream.KindPush
	tm, dm := k.meta[s][:0], k.dmeta[s][:0]
	for ti, t := range r.tables {
		if n := len(r.ids[s][ti]); n > 0 {
			m := stream.TableMeta{Name: t.name, IDs: n}
			if push {
				m.Dim = t.dim
			}
			tm = append(tm, m)
		}
	}
	for _, d := range k.dense {
		m := stream.DenseMeta{Name: d.Name}
		if push {
			lo, hi := ams.DenseRange(len(d.Values), s, len(c.stubs))
			m.Values = hi - lo
		}
		dm = append(dm, m)
	}
	k.meta[s], k.dmeta[s] = tm, dm
	if len(tm) == 0 && len(dm) == 0 {
		return nil, h, nil, w, nil
	}
	conn = c.streams[s]
	h.ID, h.Version = conn.NextID(), c.version
	buf = conn.Frame(stream.RequestSize(&h, tm, dm))
	if err := w.Begin(*buf, &h, tm, dm); err != nil {
		op := "pull from"
		if push {
			op = "push to"
		}
		return nil, h, nil, w, c.rpcError(op, s, err)
	}
	return conn, h, buf, w, nil
}
