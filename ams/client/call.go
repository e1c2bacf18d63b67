package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/ams/stream"
)

// callOp is what a call does on every shard.
type callOp uint8

const (
	opPull callOp = iota + 1
	opPush
)

// call is one pull or push on every shard: its arguments, the shards'
// parts running in parallel (each), their errors, and the request lists
// of direct calls. Calls are pooled (Client.calls), each with one
// goroutine body per shard made once, so that a pull or push on the
// direct path allocates nothing once the lists have grown. A call is used
// by one pull or push at a time; its fields other than errs, pending and
// grads are read-only while each runs (part s writes only errs[s] and
// grads[s]). A push's gathered gradients stay in grads for the next push
// on the same call, so that the gRPC path does not allocate and clear a
// buffer of a batch's gradients every time.
type call struct {
	c  *Client
	op callOp

	ctx    context.Context
	r      *Route
	bufs   [][]float32
	dense  []Vector
	create bool
	round  *amspb.SyncRound
	origin ams.Origin
	state  []StateEntry

	pending atomic.Bool          // a shard's round is pending (pull)
	reqs    [][]ams.TableRequest // by shard: the direct call's tables
	vecs    [][]ams.DenseRequest // by shard: the direct call's vectors
	errs    []error              // by shard
	wg      sync.WaitGroup
	runs    []func()             // by shard: part s on a goroutine of its own
	grads   [][]byte             // by shard: the gathered gradients of its last push, kept for the next
	meta    [][]stream.TableMeta // by shard: a stream request's tables
	dmeta   [][]stream.DenseMeta // by shard: a stream request's dense vectors
	sinks   []pullSink           // by shard: where its stream's reply to a pull goes
}

func newCall(c *Client) *call {
	n := len(c.stubs)
	k := &call{c: c, reqs: make([][]ams.TableRequest, n), vecs: make([][]ams.DenseRequest, n),
		errs: make([]error, n), runs: make([]func(), n), grads: make([][]byte, n),
		meta: make([][]stream.TableMeta, n), dmeta: make([][]stream.DenseMeta, n), sinks: make([]pullSink, n)}
	for s := range n {
		k.sinks[s] = pullSink{k, s}
		k.runs[s] = func() {
			defer k.wg.Done()
			k.errs[s] = k.part(s)
		}
	}
	return k
}

func (c *Client) getCall() *call { return c.calls.Get().(*call) }

// putCall returns k to the pool, holding none of the call's arguments.
func (c *Client) putCall(k *call) {
	for s := range k.reqs {
		clear(k.reqs[s])
		clear(k.vecs[s])
		clear(k.meta[s])
		clear(k.dmeta[s])
	}
	clear(k.errs)
	k.op, k.ctx, k.r, k.bufs, k.dense, k.create, k.round, k.origin, k.state = 0, nil, nil, nil, nil, false, nil, ams.Origin{}, nil
	k.pending.Store(false)
	c.calls.Put(k)
}

// each runs every shard's part in parallel (shard 0's on the caller's
// goroutine) and joins their errors, in shard order.
func (k *call) each() error {
	for s := 1; s < len(k.runs); s++ {
		k.wg.Add(1)
		go k.runs[s]()
	}
	if len(k.runs) > 0 {
		k.errs[0] = k.part(0)
	}
	k.wg.Wait()
	return errors.Join(k.errs...)
}

// part runs shard s's part of the call.
func (k *call) part(s int) error {
	if k.op == opPull {
		return k.pullPart(s)
	}
	return k.pushPart(s)
}
