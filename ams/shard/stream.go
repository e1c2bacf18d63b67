package shard

import (
	"context"
	"errors"
	"fmt"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/stream"
)

// streamHandler serves the stream data plane (package ams/stream) with
// the shard: the checks and errors of the service's Pull and Push, on
// requests whose ids and gradients are read in place in their frames and
// pulls whose rows are gathered straight into the reply's frame.
type streamHandler struct{ s *Shard }

// StreamHandler returns s's stream data plane, the one NewGRPCServer
// registers, for a TCP stream listener of its own (stream.Mux).
func StreamHandler(s *Shard) stream.Handler { return streamHandler{s} }

var _ stream.Handler = streamHandler{}

func (h streamHandler) Pull(_ context.Context, q *stream.Request, w *stream.ReplyWriter) error {
	s := h.s
	c, ids, values, err := h.open(q)
	if err != nil {
		return err
	}
	defer s.putCall(c)
	dense := 0
	for _, d := range q.Dense {
		di, err := s.denseInfo(d.Name, -1)
		if err != nil {
			return err
		}
		c.infos = append(c.infos, di)
		c.ranges = append(c.ranges, stream.Range{Lo: di.lo, Hi: di.hi})
		dense += di.hi - di.lo
	}
	if err := ams.CheckRequestSize(ids, values, dense); err != nil {
		return fmt.Errorf("pull: %w", err)
	}
	rows, vecs := w.Begin(c.values, c.ranges)
	for i := range q.Tables {
		q.Tables[i].Rows = rows[i]
	}
	if len(q.Tables) > 0 {
		if err := s.pull(c, q.Version, q.Tables, q.Create); err != nil {
			return err
		}
	}
	for j, di := range c.infos {
		if err := s.denseTask(c, di, opDensePull, q.Version, vecs[j]); err != nil {
			return err
		}
	}
	return nil
}

// open checks q's version, takes a call (the caller puts it back) and
// looks up q's tables in it (tables).
func (h streamHandler) open(q *stream.Request) (c *call, ids, values int, err error) {
	if err := h.s.checkVersion(q.Version); err != nil {
		return nil, 0, 0, err
	}
	c = h.s.getCall()
	if ids, values, err = h.tables(c, q.Tables); err != nil {
		h.s.putCall(c)
		return nil, 0, 0, err
	}
	return c, ids, values, nil
}

// tables looks up the request's tables, leaving each one's row values
// (ids x dim) in c.values, and returns the ids and values in all.
func (h streamHandler) tables(c *call, tables []ams.TableRequest) (ids, values int, err error) {
	cat := h.s.cat.Load()
	for _, t := range tables {
		ti, ok := cat.tables[t.Table]
		if !ok {
			return 0, 0, fmt.Errorf("%w: %q", ams.ErrUnknownTable, t.Table)
		}
		n := len(t.IDs) * ti.spec.Dim
		c.values = append(c.values, n)
		ids += len(t.IDs)
		values += n
	}
	return ids, values, nil
}

func (h streamHandler) Push(ctx context.Context, q *stream.Request) error {
	s := h.s
	if err := checkWorker(ctx, "a push", q.Origin.Worker); err != nil {
		return err
	}
	c, ids, values, err := h.open(q)
	if err != nil {
		return err
	}
	defer s.putCall(c)
	dense := 0
	for _, d := range q.Dense {
		di, err := s.denseInfo(d.Name, len(d.Values))
		if err != nil {
			return errors.Join(ams.ErrBadRequest, err)
		}
		c.grads = append(c.grads, denseGrad{di, d.Values})
		dense += len(d.Values)
	}
	if err := ams.CheckRequestSize(ids, values, dense); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	return s.applyIn(c, q.Version, q.Origin, q.Tables, c.grads)
}
