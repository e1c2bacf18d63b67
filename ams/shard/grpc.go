package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/ams/stream"
	"github.com/xdlgo/xps/snapshot"
)

// ServerOptions are the gRPC server options NewGRPCServer uses (see
// serverOptions), with a pool of their own: for a server of another
// amspb.AMSServer.
func ServerOptions() []grpc.ServerOption { return serverOptions(&amspb.BufferPool{}) }

// serverOptions are the gRPC server options for AMS traffic: the codec
// and buffer pool p (amspb.ServerOptions), messages of up to
// ams.MaxMessageBytes (a larger one is refused from its length prefix,
// unread), large HTTP/2 flow-control windows and buffers.
func serverOptions(p *amspb.BufferPool) []grpc.ServerOption {
	return append(amspb.ServerOptions(p),
		grpc.WaitForHandlers(true), // Stop joins the handlers before the shard closes
		grpc.MaxRecvMsgSize(ams.MaxMessageBytes),
		grpc.MaxSendMsgSize(ams.MaxMessageBytes),
		grpc.InitialWindowSize(16<<20),
		grpc.InitialConnWindowSize(64<<20),
		grpc.ReadBufferSize(1<<20),
		grpc.WriteBufferSize(1<<20),
	)
}

// NewGRPCServer returns a gRPC server with the shard's service registered.
// The caller owns it: Serve it on a listener and Stop it before closing the
// shard. Pull replies are written into buffers of the server's pool, which
// gRPC gives back once they are sent (amspb.RegisterPooledServer).
func NewGRPCServer(s *Shard, extra ...grpc.ServerOption) *grpc.Server {
	p := &amspb.BufferPool{}
	gs := grpc.NewServer(append(serverOptions(p), extra...)...)
	amspb.RegisterPooledServer(gs, &service{s: s}, p)
	stream.Register(gs, streamHandler{s}, p)
	return gs
}

// NewService returns the shard's AMS service, the one NewGRPCServer
// registers. Its methods fail with the shard's own errors (sentinels of
// package ams), which the server answers as statuses of the error table
// (amspb.ToStatus, installed by ServerOptions). A client in the same
// process may call its Pull and Push directly (client.NewLocal): they
// read the request's payloads in place during the call and reply with
// fresh buffers.
func NewService(s *Shard) amspb.AMSServer { return &service{s: s} }

// service adapts a Shard to amspb.AMSServer.
type service struct {
	amspb.UnimplementedAMSServer
	s *Shard
}

func (v *service) Declare(_ context.Context, req *amspb.DeclareRequest) (*amspb.DeclareResponse, error) {
	tables := make([]ams.TableSpec, len(req.Tables))
	for i, t := range req.Tables {
		tables[i] = amspb.ToTableSpec(t)
	}
	dense := make([]DenseDecl, len(req.Dense))
	for i, d := range req.Dense {
		if d.Hi < d.Lo || d.Size > 1<<40 {
			return nil, fmt.Errorf("%w: dense %q range [%d,%d) of %d", ams.ErrBadRequest, d.Name, d.Lo, d.Hi, d.Size)
		}
		dense[i] = DenseDecl{Spec: ams.DenseSpec{Name: d.Name, Size: int(d.Size), Optimizer: amspb.ToOptimizerSpec(d.Optimizer),
			Schedule: amspb.ToLRSchedule(d.Schedule)},
			Lo: int(d.Lo), Hi: int(d.Hi)}
		if len(d.Init) > 0 {
			init, err := ams.UnpackFloats(nil, d.Init)
			if err != nil {
				return nil, errors.Join(ams.ErrBadRequest, err)
			}
			dense[i].Init = init
		}
	}
	created, err := v.s.Declare(req.ClusterVersion, tables, dense)
	if err != nil {
		return nil, err
	}
	return &amspb.DeclareResponse{Created: created}, nil
}

// decodePull unpacks the ids of each table of a pull and takes each
// table's reply payload from p (allocated when p is nil); where the
// machine allows (inPlace), the stripes write rows straight into it. A
// pull beyond the request limits (its ids, their rows, and dense dense
// values: ams.CheckRequestSize) is refused before anything is taken.
// Every byte of a payload is written before the reply is sent: a pool's
// buffers are not cleared.
func (v *service) decodePull(tables []*amspb.TableIDs, dense int, p *amspb.BufferPool) (reqs []ams.TableRequest, out []*[]byte, inPlace bool, err error) {
	cat := v.s.cat.Load()
	ids, values := 0, 0
	for _, t := range tables {
		ti, ok := cat.tables[t.Table]
		if !ok {
			return nil, nil, false, fmt.Errorf("%w: %q", ams.ErrUnknownTable, t.Table)
		}
		ids += len(t.Ids) / 8
		values += len(t.Ids) / 8 * ti.spec.Dim
	}
	if err := ams.CheckRequestSize(ids, values, dense); err != nil {
		return nil, nil, false, fmt.Errorf("pull: %w", err)
	}
	reqs = make([]ams.TableRequest, len(tables))
	out = make([]*[]byte, len(tables))
	inPlace = true
	for i, t := range tables {
		idv, err := requestIDs(t.Ids)
		if err != nil {
			(&amspb.PooledReply{Rows: out, Pool: p}).Release()
			return nil, nil, false, errors.Join(ams.ErrBadRequest, err)
		}
		n := len(idv) * cat.tables[t.Table].spec.Dim
		if p != nil {
			out[i] = p.Get(4 * n)
		} else {
			b := make([]byte, 4*n)
			out[i] = &b
		}
		view, ok := ams.FloatsView(*out[i])
		if !ok {
			view, inPlace = make([]float32, n), false
		}
		reqs[i] = ams.TableRequest{Table: t.Table, IDs: idv, Rows: view}
	}
	return reqs, out, inPlace, nil
}

// requestIDs returns a request's packed ids, read in place where the
// machine allows, as the gradients are (decodePush): over gRPC the
// request's bytes are the message's own (protobuf's unmarshal copies them
// out of gRPC's buffers) and nothing reuses them; a caller in the same
// process keeps its payloads until the call returns.
func requestIDs(b []byte) ([]uint64, error) {
	if ids, ok := ams.IDsView(b); ok {
		return ids, nil
	}
	return ams.UnpackIDs(nil, b)
}

// decodePush unpacks the ids and gradients of each table of a push, after
// checking the push (with dense dense values) against the request limits
// (ams.CheckRequestSize).
func (v *service) decodePush(tables []*amspb.TableGrads, dense int) ([]ams.TableRequest, error) {
	cat := v.s.cat.Load()
	reqs := make([]ams.TableRequest, len(tables))
	ids, values := 0, 0
	for _, t := range tables {
		ti, ok := cat.tables[t.Table]
		if !ok {
			return nil, fmt.Errorf("%w: %q", ams.ErrUnknownTable, t.Table)
		}
		ids += len(t.Ids) / 8
		values += len(t.Ids) / 8 * ti.spec.Dim
	}
	if err := ams.CheckRequestSize(ids, values, dense); err != nil {
		return nil, fmt.Errorf("push: %w", err)
	}
	for i, t := range tables {
		ti := cat.tables[t.Table]
		idv, err := requestIDs(t.Ids)
		if err != nil {
			return nil, errors.Join(ams.ErrBadRequest, err)
		}
		if len(t.Grads) != 4*len(idv)*ti.spec.Dim {
			return nil, fmt.Errorf("%w: table %q: %d gradient bytes for %d ids of dim %d", ams.ErrBadRequest, t.Table, len(t.Grads), len(idv), ti.spec.Dim)
		}
		reqs[i] = ams.TableRequest{Table: t.Table, IDs: idv}
		if view, ok := ams.FloatsView(t.Grads); ok {
			reqs[i].Rows = view // the request is ours until we reply
		} else {
			reqs[i].Rows, _ = ams.UnpackFloats(nil, t.Grads)
		}
	}
	return reqs, nil
}

// roundWait bounds a sync-mode pull's wait for the earlier rounds: the
// worker checks for a pause before it asks again.
const roundWait = 200 * time.Millisecond

func (v *service) Pull(ctx context.Context, req *amspb.PullRequest) (*amspb.PullResponse, error) {
	r, err := v.pull(ctx, req, nil)
	if err != nil {
		return nil, err
	}
	return &r.Resp, nil
}

// PullPooled is Pull with the rows of the reply in buffers of p, which the
// reply owns (amspb.PooledReply).
func (v *service) PullPooled(ctx context.Context, req *amspb.PullRequest, p *amspb.BufferPool) (*amspb.PooledReply, error) {
	return v.pull(ctx, req, p)
}

// pull answers a pull, its rows in buffers of p (allocated when p is nil).
func (v *service) pull(ctx context.Context, req *amspb.PullRequest, p *amspb.BufferPool) (*amspb.PooledReply, error) {
	if err := v.s.checkVersion(req.ClusterVersion); err != nil {
		return nil, err
	}
	if r := req.Sync; r != nil {
		pending, err := v.s.WaitRound(ctx, req.ClusterVersion, Round{Epoch: r.Epoch, Iter: r.Iter}, roundWait)
		if err != nil {
			return nil, err
		}
		if pending {
			return &amspb.PooledReply{Resp: amspb.PullResponse{RoundPending: true}}, nil
		}
	}
	denseValues := 0
	for _, name := range req.Dense {
		di, err := v.s.denseInfo(name, -1)
		if err != nil {
			return nil, err
		}
		denseValues += di.hi - di.lo
	}
	reqs, out, inPlace, err := v.decodePull(req.Tables, denseValues, p)
	if err != nil {
		return nil, err
	}
	reply := &amspb.PooledReply{Resp: amspb.PullResponse{Tables: make([]*amspb.TableRows, len(reqs))}, Rows: out, Pool: p}
	if err := v.pullInto(req, reqs, out, inPlace, &reply.Resp); err != nil {
		reply.Release()
		return nil, err
	}
	return reply, nil
}

// pullInto pulls reqs, whose rows are out's (inPlace) or copied into them,
// and the dense vectors req names, into resp.
func (v *service) pullInto(req *amspb.PullRequest, reqs []ams.TableRequest, out []*[]byte, inPlace bool, resp *amspb.PullResponse) error {
	if err := v.s.Pull(req.ClusterVersion, reqs, req.Create); err != nil {
		return err
	}
	for i, r := range reqs {
		if !inPlace {
			ams.PutFloats(*out[i], r.Rows)
		}
		resp.Tables[i] = &amspb.TableRows{Table: r.Table, Rows: *out[i]}
	}
	for _, name := range req.Dense {
		lo, hi, vals, err := v.s.PullDense(req.ClusterVersion, name)
		if err != nil {
			return err
		}
		resp.Dense = append(resp.Dense, &amspb.DenseValues{Name: name, Lo: uint64(lo), Hi: uint64(hi), Values: ams.FloatsPayload(vals)})
	}
	return nil
}

func (v *service) Push(ctx context.Context, req *amspb.PushRequest) (*amspb.PushResponse, error) {
	if err := v.s.checkVersion(req.ClusterVersion); err != nil {
		return nil, err
	}
	origin := amspb.ToOrigin(req.Origin)
	if err := checkWorker(ctx, "a push", origin.Worker); err != nil {
		return nil, err
	}
	for _, e := range req.State {
		if err := checkStateKey(ctx, e.Key); err != nil {
			return nil, err
		}
	}
	denseValues := 0
	for _, d := range req.Dense {
		denseValues += len(d.Grad) / 4
	}
	reqs, err := v.decodePush(req.Tables, denseValues)
	if err != nil {
		return nil, err
	}
	// Check every dense gradient before applying anything, so that a bad
	// payload refuses the whole request. The gradients are read in place
	// where the machine allows: the request is ours until we reply, and a
	// sync-mode round sums them into its own buffers.
	dense := make([]denseGrad, len(req.Dense))
	for i, d := range req.Dense {
		grad, ok := ams.FloatsView(d.Grad)
		if !ok {
			grad, err = ams.UnpackFloats(nil, d.Grad)
		}
		if err == nil {
			dense[i].di, err = v.s.denseInfo(d.Name, len(grad))
		}
		if err != nil {
			return nil, errors.Join(ams.ErrBadRequest, err)
		}
		dense[i].grad = grad
	}
	if r := req.Sync; r != nil {
		p := RoundPart{Round: Round{Epoch: r.Epoch, Iter: r.Iter}, Worker: int(r.Worker), Workers: int(r.Workers), Done: r.Done, Tables: reqs}
		for i, d := range req.Dense {
			p.Dense = append(p.Dense, DenseGrad{Name: d.Name, Grad: dense[i].grad})
		}
		for _, e := range req.State {
			p.State = append(p.State, StateEntry{Key: e.Key, Value: e.Value})
		}
		return &amspb.PushResponse{}, v.s.PushRound(req.ClusterVersion, p)
	}
	if err := v.s.apply(req.ClusterVersion, origin, reqs, dense); err != nil {
		return nil, err
	}
	return &amspb.PushResponse{}, nil
}

func (v *service) PullDense(_ context.Context, req *amspb.PullDenseRequest) (*amspb.PullDenseResponse, error) {
	lo, hi, vals, err := v.s.PullDense(req.ClusterVersion, req.Name)
	if err != nil {
		return nil, err
	}
	return &amspb.PullDenseResponse{Lo: uint64(lo), Hi: uint64(hi), Values: ams.FloatsPayload(vals)}, nil
}

func (v *service) PushDense(_ context.Context, req *amspb.PushDenseRequest) (*amspb.PushDenseResponse, error) {
	grad, err := ams.UnpackFloats(nil, req.Grad)
	if err != nil {
		return nil, errors.Join(ams.ErrBadRequest, err)
	}
	if err := v.s.PushDense(req.ClusterVersion, req.Name, grad); err != nil {
		return nil, err
	}
	return &amspb.PushDenseResponse{}, nil
}

func (v *service) Stats(_ context.Context, req *amspb.StatsRequest) (*amspb.StatsResponse, error) {
	if err := v.s.checkVersion(req.ClusterVersion); err != nil {
		return nil, err
	}
	st, err := v.s.Stats()
	if err != nil {
		return nil, err
	}
	resp := &amspb.StatsResponse{ShardId: st.ID, ClusterVersion: st.Version, PullRequests: st.Pulls,
		PushRequests: st.Pushes, RowsPulled: st.RowsPulled, RowsPushed: st.RowsPushed}
	for _, t := range st.Tables {
		resp.Tables = append(resp.Tables, amspb.FromTableUsage(t))
	}
	for _, w := range slices.Sorted(maps.Keys(st.Applied)) {
		resp.Applied = append(resp.Applied, amspb.FromApplied(w, st.Applied[w]))
	}
	for _, d := range st.Dense {
		resp.Dense = append(resp.Dense, amspb.FromDenseUsage(d))
	}
	return resp, nil
}

func (v *service) PutState(ctx context.Context, req *amspb.PutStateRequest) (*amspb.PutStateResponse, error) {
	entries := make([]StateEntry, len(req.Entries))
	for i, e := range req.Entries {
		if err := checkStateKey(ctx, e.Key); err != nil {
			return nil, err
		}
		entries[i] = StateEntry{Key: e.Key, Value: e.Value}
	}
	if err := v.s.PutState(req.ClusterVersion, entries); err != nil {
		return nil, err
	}
	return &amspb.PutStateResponse{}, nil
}

func (v *service) GetState(_ context.Context, req *amspb.GetStateRequest) (*amspb.GetStateResponse, error) {
	entries, err := v.s.GetState(req.ClusterVersion, req.Prefix)
	if err != nil {
		return nil, err
	}
	resp := &amspb.GetStateResponse{Entries: make([]*amspb.StateEntry, len(entries))}
	for i, e := range entries {
		resp.Entries[i] = &amspb.StateEntry{Key: e.Key, Value: e.Value}
	}
	return resp, nil
}

func (v *service) WriteSnapshot(_ context.Context, req *amspb.WriteSnapshotRequest) (*amspb.WriteSnapshotResponse, error) {
	loc, err := v.s.checkStore(req.Store)
	if err != nil {
		return nil, err
	}
	if err := v.s.checkVersion(req.ClusterVersion); err != nil {
		return nil, err
	}
	store, err := openStore(loc)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	part, err := v.s.WriteSnapshot(store, req.Seq, int(req.Index))
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(part)
	if err != nil {
		return nil, err
	}
	return &amspb.WriteSnapshotResponse{Part: b}, nil
}

func (v *service) WriteExport(_ context.Context, req *amspb.WriteExportRequest) (*amspb.WriteExportResponse, error) {
	loc, err := v.s.checkStore(req.Store)
	if err != nil {
		return nil, err
	}
	if err := v.s.checkVersion(req.ClusterVersion); err != nil {
		return nil, err
	}
	store, err := openStore(loc)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	part, err := v.s.WriteExport(store, ExportOptions{Seq: req.Seq, Base: req.Base, Index: int(req.Index), Quant: req.Quant})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(part)
	if err != nil {
		return nil, err
	}
	return &amspb.WriteExportResponse{Part: b}, nil
}

func (v *service) Load(_ context.Context, req *amspb.LoadRequest) (*amspb.LoadResponse, error) {
	if req.Table != "" {
		values := make([]float32, len(req.Values)/4)
		if len(req.Values)%4 != 0 || ams.UnpackFloatsInto(values, req.Values) != nil {
			return nil, fmt.Errorf("%w: load: %d value bytes", ams.ErrBadRequest, len(req.Values))
		}
		if err := v.s.LoadRows(req.ClusterVersion, req.Table, req.Ids, values, req.Deletes); err != nil {
			return nil, err
		}
	}
	if req.Dense != "" {
		values := make([]float32, len(req.DenseValues)/4)
		if len(req.DenseValues)%4 != 0 || ams.UnpackFloatsInto(values, req.DenseValues) != nil {
			return nil, fmt.Errorf("%w: load: %d dense value bytes", ams.ErrBadRequest, len(req.DenseValues))
		}
		if err := v.s.SetDense(req.ClusterVersion, req.Dense, values); err != nil {
			return nil, err
		}
	}
	return &amspb.LoadResponse{}, nil
}

func (v *service) Restore(_ context.Context, req *amspb.RestoreRequest) (*amspb.RestoreResponse, error) {
	m, err := ams.UnmarshalShardMap(req.ShardMap)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ams.ErrBadRequest, err)
	}
	i, n := int(req.Index), len(m.Shards)
	if i >= n {
		return nil, fmt.Errorf("%w: shard index %d of a map of %d shards", ams.ErrBadRequest, i, n)
	}
	if req.Seq == 0 { // a restore of nothing, from no store: a new cluster's birth
		if err := v.s.Begin(req.ClusterVersion, m.Partitions); err != nil {
			return nil, err
		}
		return &amspb.RestoreResponse{}, nil
	}
	// A location the shard may not use changes nothing: not even the
	// version.
	loc, err := v.s.checkStore(req.Store)
	if err != nil {
		return nil, err
	}
	// One restore at a time: a late retry of an abandoned attempt must not
	// mix its rows into a newer one's (it waits, then finds its version
	// stale).
	v.s.restoreMu.Lock()
	defer v.s.restoreMu.Unlock()
	// A restore starts a version: from here on, requests of older ones are
	// refused, so nothing from before the restore leaks into it.
	if err := v.s.advanceVersion(req.ClusterVersion); err != nil {
		return nil, err
	}
	store, err := openStore(loc)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	man, err := snapshot.ReadManifest(store, req.Seq)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ams.ErrRestore, err)
	}
	err = v.s.Restore(store, man, Ownership{Index: i, Shards: n, Partitions: m.Partitions, SameLayout: sameLayout(m, man),
		Row:       func(table string, id uint64) bool { return m.ShardOf(table, id) == i },
		State:     func(key string) bool { return ams.StateShard(key, n) == i },
		Partition: func(p uint32) bool { return int(p) < len(m.Assign) && int(m.Assign[p]) == i }})
	if err != nil {
		return nil, err
	}
	st, err := v.s.Stats()
	if err != nil {
		return nil, err
	}
	var rows uint64
	for _, t := range st.Tables {
		rows += uint64(t.Rows)
	}
	return &amspb.RestoreResponse{Rows: rows}, nil
}

// sameLayout reports whether snapshot man was written by shards laid out
// as m: as many, with the same partition assignment (shard index k wrote
// the file of slot k).
func sameLayout(m *ams.ShardMap, man *snapshot.Manifest) bool {
	if len(man.ShardMap) == 0 || man.Shards != len(m.Shards) {
		return false
	}
	old, err := ams.UnmarshalShardMap(man.ShardMap)
	return err == nil && old.Partitions == m.Partitions && slices.Equal(old.Assign, m.Assign)
}
