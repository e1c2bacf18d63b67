package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/ams/stream"
)

// Client talks to every shard of one shard map.
type Client struct {
	m       *ams.ShardMap
	version uint64
	conns   []*grpc.ClientConn
	stubs   []amspb.AMSClient
	streams []*stream.Conn // the data plane's stream to each shard
	local   Resolver       // shards served in this process (NewLocal), or nil

	declareMu sync.Mutex // serialises Declare's copy-on-write of dims
	// dims maps table -> dim, learned from Declare: an immutable map
	// replaced by Declare, read without a lock on the pull/push path.
	dims atomic.Pointer[map[string]int]

	// calls pools the workspaces of pulls and pushes (call).
	calls sync.Pool
}

// DialOptions are the gRPC dial options for AMS traffic: messages of up
// to ams.MaxMessageBytes, large HTTP/2 flow-control windows and buffers.
func DialOptions() []grpc.DialOption {
	return append(amspb.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(ams.MaxMessageBytes), grpc.MaxCallSendMsgSize(ams.MaxMessageBytes)),
		grpc.WithInitialWindowSize(16<<20),
		grpc.WithInitialConnWindowSize(64<<20),
		grpc.WithReadBufferSize(1<<20),
		grpc.WithWriteBufferSize(1<<20),
	)
}

// New connects to the shards of m. Connections are made lazily by gRPC;
// Close releases them.
func New(m *ams.ShardMap, extra ...grpc.DialOption) (*Client, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	c := &Client{m: m, version: m.Version}
	c.dims.Store(&map[string]int{})
	c.calls.New = func() any { return newCall(c) }
	if c.version == 0 {
		c.version = ams.DefaultVersion
	}
	frames := &amspb.BufferPool{}
	for i, addr := range m.Addrs {
		cc, err := grpc.NewClient(addr, append(DialOptions(), extra...)...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("ams client: dial shard %s at %s: %w", m.Shards[i], addr, err)
		}
		c.conns = append(c.conns, cc)
		c.stubs = append(c.stubs, amspb.NewAMSClient(cc))
		c.streams = append(c.streams, stream.NewConn(cc, frames, tcpAddr(addr, extra)))
	}
	return c, nil
}

// tcpAddr returns the address of a shard's TCP stream (package
// ams/stream): its gRPC address, for a client on DialOptions alone
// (plaintext). A client given options of its own (TLS credentials, for
// one) keeps its stream on gRPC, so that nothing it sends leaves its
// credentials' protection.
func tcpAddr(addr string, extra []grpc.DialOption) string {
	if len(extra) > 0 {
		return ""
	}
	return addr
}

// Close closes every stream and connection.
func (c *Client) Close() error {
	var errs []error
	for _, st := range c.streams {
		errs = append(errs, st.Close())
	}
	for _, cc := range c.conns {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}

// ShardMap returns the map the client routes by.
func (c *Client) ShardMap() *ams.ShardMap { return c.m }

// NumShards returns the number of shards.
func (c *Client) NumShards() int { return len(c.stubs) }

// rpcError wraps the error of a call to shard s with context. A status
// from gRPC becomes an error that wraps the sentinels it names
// (amspb.FromStatus); a shard in this process fails with them already.
func (c *Client) rpcError(op string, s int, err error) error {
	return fmt.Errorf("ams client: %s shard %s: %w", op, c.m.Shards[s], amspb.FromStatus(err))
}

// eachShard runs fn for every shard index in parallel and joins the errors.
func eachShard(n int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Dense declares a dense vector split across all shards.
type Dense struct {
	Spec ams.DenseSpec
	// Init holds initial values of the whole vector (len Spec.Size); a shard
	// uses its range only when it creates the vector.
	Init []float32
}

// Declare declares tables and dense vectors on every shard (idempotent).
func (c *Client) Declare(ctx context.Context, tables []ams.TableSpec, dense []Dense) error {
	err := eachShard(len(c.stubs), func(i int) error {
		req := &amspb.DeclareRequest{ClusterVersion: c.version}
		for _, t := range tables {
			req.Tables = append(req.Tables, amspb.FromTableSpec(t))
		}
		for _, d := range dense {
			lo, hi := ams.DenseRange(d.Spec.Size, i, len(c.stubs))
			ds := &amspb.DenseSpec{Name: d.Spec.Name, Size: uint64(d.Spec.Size), Lo: uint64(lo), Hi: uint64(hi),
				Optimizer: amspb.FromOptimizerSpec(d.Spec.Optimizer), Schedule: amspb.FromLRSchedule(d.Spec.Schedule)}
			if d.Init != nil {
				ds.Init = ams.PackFloats(nil, d.Init[lo:hi])
			}
			req.Dense = append(req.Dense, ds)
		}
		if _, err := c.stubs[i].Declare(ctx, req); err != nil {
			return c.rpcError("declare on", i, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.declareMu.Lock()
	dims := maps.Clone(*c.dims.Load())
	for _, t := range tables {
		dims[t.Name] = t.Dim
	}
	c.dims.Store(&dims)
	c.declareMu.Unlock()
	return nil
}

// Table names the unique ids of one table in a pull or push and the buffer
// of their rows: len(Rows) == len(IDs)*dim, row k belonging to IDs[k].
type Table struct {
	Name string
	IDs  []uint64
	Rows []float32
}

// Vector is a whole dense vector (all shards' ranges together) in a pull,
// or its gradient in a push.
type Vector struct {
	Name   string
	Values []float32
}

// Pull fetches the rows of every table's ids into its Rows, and every dense
// vector into its Values: one merged request per shard, all shards in
// parallel. With create, missing rows are created by the tables'
// initializers (training); without it they read as zeros (evaluation).
// It routes the ids anew; PullRoute reuses a batch's route.
func (c *Client) Pull(ctx context.Context, tables []Table, dense []Vector, create bool) error {
	r, rows, err := c.routeTables(tables)
	if err != nil {
		return err
	}
	return c.PullRoute(ctx, r, rows, dense, create)
}

// PullRoute is Pull on a batch's route (nil: no tables): rows[t] receives
// the rows of the route's table t, len(rows[t]) == its ids x dim, row k
// belonging to its k-th id.
func (c *Client) PullRoute(ctx context.Context, r *Route, rows [][]float32, dense []Vector, create bool) error {
	_, err := c.pull(ctx, r, rows, dense, create, nil)
	return err
}

// routeTables routes tables anew, and returns their buffers in order.
func (c *Client) routeTables(tables []Table) (*Route, [][]float32, error) {
	r := c.NewRoute()
	bufs := make([][]float32, len(tables))
	for i, t := range tables {
		if err := r.Add(t.Name, t.IDs); err != nil {
			return nil, nil, err
		}
		bufs[i] = t.Rows
	}
	return r, bufs, nil
}

// pull is PullRoute, for sync mode with round set: it asks every shard to
// wait until the rounds before round are applied, and reports pending
// when one stopped waiting first (the values are then not all filled).
func (c *Client) pull(ctx context.Context, r *Route, rows [][]float32, dense []Vector, create bool, round *amspb.SyncRound) (pending bool, err error) {
	if err := c.check(r, rows); err != nil {
		return false, err
	}
	if r == nil {
		r = c.NewRoute()
	}
	if err := c.checkLimits(r, dense); err != nil {
		return false, fmt.Errorf("ams client: pull: %w", err)
	}
	k := c.getCall()
	defer c.putCall(k)
	k.op, k.ctx, k.r, k.bufs, k.dense, k.create, k.round = opPull, ctx, r, rows, dense, create, round
	err = k.each()
	return k.pending.Load(), err
}

// pullPart is shard s's part of k's pull: a direct call on the caller's
// buffers when the shard is in this process and offers it, else a
// message.
func (k *call) pullPart(s int) error {
	c := k.c
	d := c.direct(s)
	if ls, ok := d.(LocalShard); ok && k.round == nil {
		reqs, bufs, some := k.localRequests(s)
		if !some {
			return nil
		}
		if err := ls.PullRows(k.ctx, c.version, reqs, bufs, k.create); err != nil {
			return c.rpcError("pull from", s, err)
		}
		return nil
	}
	if d == nil && k.round == nil {
		return k.pullStream(s)
	}
	p, err := c.pullMessage(k.ctx, s, c.plane(s, d), k.r, k.bufs, k.dense, k.create, k.round)
	if p {
		k.pending.Store(true)
	}
	return err
}

// pullMessage pulls shard s's part of a pull through plane, with
// messages, and scatters the reply into rows and dense.
func (c *Client) pullMessage(ctx context.Context, s int, plane DataPlane, r *Route, rows [][]float32, dense []Vector,
	create bool, round *amspb.SyncRound) (pending bool, err error) {
	req := &amspb.PullRequest{ClusterVersion: c.version, Create: create, Sync: round}
	for ti, t := range r.tables {
		if len(r.ids[s][ti]) == 0 {
			continue
		}
		req.Tables = append(req.Tables, &amspb.TableIDs{Table: t.name, Ids: ams.IDsPayload(r.ids[s][ti])})
	}
	for _, d := range dense {
		req.Dense = append(req.Dense, d.Name)
	}
	if len(req.Tables) == 0 && len(dense) == 0 && round == nil {
		return false, nil // in sync mode, every shard is asked: the barrier waits at each
	}
	resp, release, err := pullVia(ctx, plane, req)
	if err != nil {
		return false, c.rpcError("pull from", s, err)
	}
	defer release()
	if resp.RoundPending {
		return true, nil
	}
	return false, c.scatterPull(s, r, rows, dense, (*pbPulled)(resp))
}

// pulled is a shard's reply to a pull, as a message (pbPulled) or a
// stream's frame (streamPulled): the rows of each table of the pull that
// had ids for the shard, in the route's order, and each dense vector's
// range.
type pulled interface {
	tables() int
	rows(j int) []byte
	vectors() int
	vector(j int) (lo, hi uint64, b []byte)
}

type pbPulled amspb.PullResponse

func (p *pbPulled) tables() int       { return len(p.Tables) }
func (p *pbPulled) rows(j int) []byte { return p.Tables[j].Rows }
func (p *pbPulled) vectors() int      { return len(p.Dense) }
func (p *pbPulled) vector(j int) (uint64, uint64, []byte) {
	return p.Dense[j].Lo, p.Dense[j].Hi, p.Dense[j].Values
}

type streamPulled stream.Reply

func (p *streamPulled) tables() int       { return len(p.Rows) }
func (p *streamPulled) rows(j int) []byte { return p.Rows[j] }
func (p *streamPulled) vectors() int      { return len(p.Ranges) }
func (p *streamPulled) vector(j int) (uint64, uint64, []byte) {
	return uint64(p.Ranges[j].Lo), uint64(p.Ranges[j].Hi), p.Dense[j]
}

// scatterPull copies shard s's reply to a pull of the route's tables
// (those with ids for the shard) and of dense into the caller's buffers.
func (c *Client) scatterPull(s int, r *Route, rows [][]float32, dense []Vector, resp pulled) error {
	j, want := 0, 0 // tables read from the reply, tables with ids for the shard
	for ti, t := range r.tables {
		pos := r.pos[s][ti]
		if len(pos) == 0 {
			continue
		}
		if want++; j >= resp.tables() {
			continue
		}
		b := resp.rows(j)
		j++
		if len(b) != 4*len(pos)*t.dim {
			return fmt.Errorf("ams client: pull from shard %s: table %q: %d bytes for %d ids of dim %d",
				c.m.Shards[s], t.name, len(b), len(pos), t.dim)
		}
		w := 4 * t.dim
		for k, p := range pos {
			ams.UnpackFloatsInto(rows[ti][int(p)*t.dim:int(p+1)*t.dim], b[k*w:(k+1)*w])
		}
	}
	if want != resp.tables() {
		return fmt.Errorf("ams client: pull from shard %s: %d tables in reply, want %d", c.m.Shards[s], resp.tables(), want)
	}
	if resp.vectors() != len(dense) {
		return fmt.Errorf("ams client: pull from shard %s: %d dense vectors in reply, want %d", c.m.Shards[s], resp.vectors(), len(dense))
	}
	for j, d := range dense {
		lo, hi, b := resp.vector(j)
		if err := c.putDense(s, d, lo, hi, b); err != nil {
			return err
		}
	}
	return nil
}

// putDense copies one shard's range of a dense vector into d.Values.
func (c *Client) putDense(s int, d Vector, lo64, hi64 uint64, b []byte) error {
	lo, hi := int(lo64), int(hi64)
	if lo < 0 || hi < lo || hi > len(d.Values) || len(b) != 4*(hi-lo) {
		return fmt.Errorf("ams client: pull dense %q from shard %s: range [%d,%d) with %d bytes for a vector of %d",
			d.Name, c.m.Shards[s], lo, hi, len(b), len(d.Values))
	}
	return ams.UnpackFloatsInto(d.Values[lo:hi], b)
}

// Push sends the gradients in every table's Rows for its ids and every dense
// vector's gradient (each shard gets its range): one merged request per
// shard, all shards in parallel. It returns when every shard has applied
// its part. It routes the ids anew; PushRoute reuses a batch's route.
func (c *Client) Push(ctx context.Context, tables []Table, dense []Vector) error {
	r, grads, err := c.routeTables(tables)
	if err != nil {
		return err
	}
	return c.PushRoute(ctx, r, grads, dense)
}

// PushRoute is Push on a batch's route (nil: no tables), typically the one
// its pull used: grads[t] holds the gradients of the route's table t,
// len(grads[t]) == its ids x dim, row k belonging to its k-th id.
func (c *Client) PushRoute(ctx context.Context, r *Route, grads [][]float32, dense []Vector) error {
	return c.push(ctx, ams.Origin{}, r, grads, dense, nil, nil)
}

// PushBatch is PushRoute for a worker's batch named by origin: every
// shard applies its part once and refuses a second push of the batch
// (ams.ErrDuplicatePush), and records it (Stats' Applied).
func (c *Client) PushBatch(ctx context.Context, origin ams.Origin, r *Route, grads [][]float32, dense []Vector) error {
	return c.push(ctx, origin, r, grads, dense, nil, nil)
}

// push is PushRoute, for sync mode with round set: then every shard gets
// a request (its part of the round, empty or not), and each state entry
// goes with the part of the shard that keeps its key.
func (c *Client) push(ctx context.Context, origin ams.Origin, r *Route, grads [][]float32, dense []Vector, round *amspb.SyncRound, state []StateEntry) error {
	if err := c.check(r, grads); err != nil {
		return err
	}
	if r == nil {
		r = c.NewRoute()
	}
	if err := c.checkLimits(r, dense); err != nil {
		return fmt.Errorf("ams client: push: %w", err)
	}
	k := c.getCall()
	defer c.putCall(k)
	k.op, k.ctx, k.r, k.bufs, k.dense, k.round, k.origin, k.state = opPush, ctx, r, grads, dense, round, origin, state
	return k.each()
}

// pushPart is shard s's part of k's push: a direct call on the caller's
// buffers when the shard is in this process and offers it, else a
// message.
func (k *call) pushPart(s int) error {
	c := k.c
	d := c.direct(s)
	if ls, ok := d.(LocalShard); ok && k.round == nil {
		reqs, bufs, some := k.localRequests(s)
		if !some {
			return nil
		}
		if err := ls.PushRows(k.ctx, c.version, k.origin, reqs, bufs); err != nil {
			return c.rpcError("push to", s, err)
		}
		return nil
	}
	if d == nil && k.round == nil {
		return k.pushStream(s)
	}
	req := c.pushMessage(s, k.r, k.bufs, k.dense, k.round, k.state, &k.grads[s])
	req.Origin = amspb.FromOrigin(k.origin)
	if len(req.Tables) == 0 && len(req.Dense) == 0 && k.round == nil {
		return nil
	}
	if _, err := c.plane(s, d).Push(k.ctx, req); err != nil {
		// The transport may still hold the gradients of a call that
		// failed: the next push takes a new buffer.
		k.grads[s] = nil
		return c.rpcError("push to", s, err)
	}
	return nil
}

// pushMessage returns shard s's part of a push as a message. The rows'
// gradients are gathered into *arena, grown when too small; the message
// aliases it, so it must not be reused before the push returns.
func (c *Client) pushMessage(s int, r *Route, grads [][]float32, dense []Vector, round *amspb.SyncRound, state []StateEntry,
	arena *[]byte) *amspb.PushRequest {
	req := &amspb.PushRequest{ClusterVersion: c.version, Sync: round}
	for _, e := range state {
		if c.stateShard(e.Key) == s {
			req.State = append(req.State, &amspb.StateEntry{Key: e.Key, Value: e.Value})
		}
	}
	size := 0
	for ti, t := range r.tables {
		size += len(r.ids[s][ti]) * 4 * t.dim
	}
	if cap(*arena) < size {
		*arena = make([]byte, size)
	}
	free := (*arena)[:size]
	for ti, t := range r.tables {
		ids := r.ids[s][ti]
		if len(ids) == 0 {
			continue
		}
		buf := free[: len(ids)*4*t.dim : len(ids)*4*t.dim]
		free = free[len(buf):]
		gatherGrads(buf, grads[ti], r.pos[s][ti], t.dim)
		req.Tables = append(req.Tables, &amspb.TableGrads{Table: t.name, Ids: ams.IDsPayload(ids), Grads: buf})
	}
	for _, d := range dense {
		lo, hi := ams.DenseRange(len(d.Values), s, len(c.stubs))
		req.Dense = append(req.Dense, &amspb.DenseGrad{Name: d.Name, Grad: ams.FloatsPayload(d.Values[lo:hi])})
	}
	return req
}

// gatherGrads packs the gradient rows of a shard's ids, row k at pos[k]
// in grads, into b.
func gatherGrads(b []byte, grads []float32, pos []int32, dim int) {
	w := 4 * dim
	for k, p := range pos {
		ams.PutFloats(b[k*w:(k+1)*w], grads[int(p)*dim:int(p+1)*dim])
	}
}

// PullDense fetches a whole dense vector (len(out) == its size) from the
// shards' ranges in parallel.
func (c *Client) PullDense(ctx context.Context, name string, out []float32) error {
	return c.Pull(ctx, nil, []Vector{{Name: name, Values: out}}, false)
}

// PushDense sends the gradient of a whole dense vector, each shard its range.
func (c *Client) PushDense(ctx context.Context, name string, grad []float32) error {
	return c.Push(ctx, nil, []Vector{{Name: name, Values: grad}})
}

// Stats returns every shard's stats, in shard order.
func (c *Client) Stats(ctx context.Context) ([]*amspb.StatsResponse, error) {
	out := make([]*amspb.StatsResponse, len(c.stubs))
	err := eachShard(len(c.stubs), func(s int) error {
		resp, err := c.stubs[s].Stats(ctx, &amspb.StatsRequest{ClusterVersion: c.version})
		if err != nil {
			return c.rpcError("stats from", s, err)
		}
		out[s] = resp
		return nil
	})
	return out, err
}

// Tables returns the figures of every table (rows, memory, admission,
// expiry, budget and non-finite counters: ams.TableUsage), summed over
// the shards, in name order.
func (c *Client) Tables(ctx context.Context) ([]ams.TableUsage, error) {
	tables, _, err := c.Usage(ctx)
	return tables, err
}

// Usage returns the figures of every table (as Tables does) and of every
// dense vector (ams.DenseUsage), summed over the shards, each in name
// order, from one Stats call to each shard.
func (c *Client) Usage(ctx context.Context) ([]ams.TableUsage, []ams.DenseUsage, error) {
	stats, err := c.Stats(ctx)
	if err != nil {
		return nil, nil, err
	}
	tables := map[string]*ams.TableUsage{}
	dense := map[string]*ams.DenseUsage{}
	for _, st := range stats {
		for _, t := range st.Tables {
			u := tables[t.Name]
			if u == nil {
				u = &ams.TableUsage{Name: t.Name}
				tables[t.Name] = u
			}
			u.Add(amspb.ToTableUsage(t))
		}
		for _, d := range st.Dense {
			u := dense[d.Name]
			if u == nil {
				u = &ams.DenseUsage{Name: d.Name}
				dense[d.Name] = u
			}
			u.Add(amspb.ToDenseUsage(d))
		}
	}
	return sortedValues(tables), sortedValues(dense), nil
}

// sortedValues returns the values of m in key order.
func sortedValues[T any](m map[string]*T) []T {
	out := make([]T, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, *m[name])
	}
	return out
}

// Applied returns every shard's record of worker's applied pushes (see
// PushBatch), in shard order; a shard with none gives an empty record.
func (c *Client) Applied(ctx context.Context, worker string) ([]*ams.Applied, error) {
	stats, err := c.Stats(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*ams.Applied, len(stats))
	for s, st := range stats {
		out[s] = &ams.Applied{}
		for _, a := range st.Applied {
			if a.Worker != worker {
				continue
			}
			if out[s], err = amspb.ToApplied(a); err != nil {
				return nil, fmt.Errorf("ams client: stats from shard %s: %w", c.m.Shards[s], err)
			}
		}
	}
	return out, nil
}
