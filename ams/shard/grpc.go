package shard

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// ServerOptions are the gRPC server options for AMS traffic: large
// messages, large HTTP/2 flow-control windows and buffers.
func ServerOptions() []grpc.ServerOption {
	return append(amspb.ServerOptions(),
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
// shard.
func NewGRPCServer(s *Shard, extra ...grpc.ServerOption) *grpc.Server {
	gs := grpc.NewServer(append(ServerOptions(), extra...)...)
	amspb.RegisterAMSServer(gs, &service{s: s})
	return gs
}

// service adapts a Shard to amspb.AMSServer.
type service struct {
	amspb.UnimplementedAMSServer
	s *Shard
}

// toStatus maps shard errors to gRPC codes.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	code := codes.Internal
	switch {
	case errors.Is(err, ErrStaleVersion), errors.Is(err, ErrConflict):
		code = codes.FailedPrecondition
	case errors.Is(err, ams.ErrUnknownTable), errors.Is(err, ErrUnknownDense):
		code = codes.NotFound
	case errors.Is(err, ErrBadRequest), errors.Is(err, ams.ErrBadSpec):
		code = codes.InvalidArgument
	case errors.Is(err, ErrClosed):
		code = codes.Unavailable
	}
	return status.Error(code, err.Error())
}

func (v *service) Declare(_ context.Context, req *amspb.DeclareRequest) (*amspb.DeclareResponse, error) {
	tables := make([]ams.TableSpec, len(req.Tables))
	for i, t := range req.Tables {
		tables[i] = amspb.ToTableSpec(t)
	}
	dense := make([]DenseDecl, len(req.Dense))
	for i, d := range req.Dense {
		dense[i] = DenseDecl{Spec: ams.DenseSpec{Name: d.Name, Size: int(d.Size), Optimizer: amspb.ToOptimizerSpec(d.Optimizer)},
			Lo: int(d.Lo), Hi: int(d.Hi)}
		if len(d.Init) > 0 {
			init, err := ams.UnpackFloats(nil, d.Init)
			if err != nil {
				return nil, toStatus(errors.Join(ErrBadRequest, err))
			}
			dense[i].Init = init
		}
	}
	created, err := v.s.Declare(req.ClusterVersion, tables, dense)
	if err != nil {
		return nil, toStatus(err)
	}
	return &amspb.DeclareResponse{Created: created}, nil
}

// decodeTables unpacks the ids (and, for pushes, gradients) of each table.
// For pulls it allocates each table's reply payload and, where the machine
// allows, lets the stripes write rows straight into it (out[i] != nil).
func (v *service) decodeTables(names []string, ids [][]byte, grads [][]byte) (reqs []TableRequest, out [][]byte, err error) {
	cat := v.s.cat.Load()
	reqs = make([]TableRequest, len(names))
	if grads == nil {
		out = make([][]byte, len(names))
	}
	for i, name := range names {
		ti, ok := cat.tables[name]
		if !ok {
			return nil, nil, fmt.Errorf("%w: %q", ams.ErrUnknownTable, name)
		}
		idv, err := ams.UnpackIDs(nil, ids[i])
		if err != nil {
			return nil, nil, errors.Join(ErrBadRequest, err)
		}
		reqs[i] = TableRequest{Table: name, IDs: idv}
		n := len(idv) * ti.spec.Dim
		if grads == nil {
			out[i] = make([]byte, 4*n)
			if view, ok := ams.FloatsView(out[i]); ok {
				reqs[i].Rows = view
			} else {
				reqs[i].Rows = make([]float32, n)
			}
			continue
		}
		if len(grads[i]) != 4*n {
			return nil, nil, fmt.Errorf("%w: table %q: %d gradient bytes for %d ids of dim %d", ErrBadRequest, name, len(grads[i]), len(idv), ti.spec.Dim)
		}
		if view, ok := ams.FloatsView(grads[i]); ok {
			reqs[i].Rows = view // the request is ours until we reply
		} else {
			reqs[i].Rows, _ = ams.UnpackFloats(nil, grads[i])
		}
	}
	return reqs, out, nil
}

func (v *service) Pull(_ context.Context, req *amspb.PullRequest) (*amspb.PullResponse, error) {
	if err := v.s.checkVersion(req.ClusterVersion); err != nil {
		return nil, toStatus(err)
	}
	names := make([]string, len(req.Tables))
	ids := make([][]byte, len(req.Tables))
	for i, t := range req.Tables {
		names[i], ids[i] = t.Table, t.Ids
	}
	reqs, out, err := v.decodeTables(names, ids, nil)
	if err != nil {
		return nil, toStatus(err)
	}
	if err := v.s.Pull(req.ClusterVersion, reqs, req.Create); err != nil {
		return nil, toStatus(err)
	}
	resp := &amspb.PullResponse{Tables: make([]*amspb.TableRows, len(reqs))}
	for i, r := range reqs {
		if view, ok := ams.FloatsView(out[i]); !ok || (len(view) > 0 && &view[0] != &r.Rows[0]) {
			ams.PutFloats(out[i], r.Rows) // rows were not written in place
		}
		resp.Tables[i] = &amspb.TableRows{Table: r.Table, Rows: out[i]}
	}
	for _, name := range req.Dense {
		lo, hi, vals, err := v.s.PullDense(req.ClusterVersion, name)
		if err != nil {
			return nil, toStatus(err)
		}
		resp.Dense = append(resp.Dense, &amspb.DenseValues{Name: name, Lo: uint64(lo), Hi: uint64(hi), Values: ams.PackFloats(nil, vals)})
	}
	return resp, nil
}

func (v *service) Push(_ context.Context, req *amspb.PushRequest) (*amspb.PushResponse, error) {
	if err := v.s.checkVersion(req.ClusterVersion); err != nil {
		return nil, toStatus(err)
	}
	names := make([]string, len(req.Tables))
	ids := make([][]byte, len(req.Tables))
	grads := make([][]byte, len(req.Tables))
	for i, t := range req.Tables {
		names[i], ids[i], grads[i] = t.Table, t.Ids, t.Grads
	}
	reqs, _, err := v.decodeTables(names, ids, grads)
	if err != nil {
		return nil, toStatus(err)
	}
	// Decode every dense gradient before applying anything, so that a bad
	// payload refuses the whole request.
	dense := make([][]float32, len(req.Dense))
	for i, d := range req.Dense {
		if dense[i], err = ams.UnpackFloats(nil, d.Grad); err != nil {
			return nil, toStatus(errors.Join(ErrBadRequest, err))
		}
	}
	if len(reqs) > 0 {
		if err := v.s.Push(req.ClusterVersion, reqs); err != nil {
			return nil, toStatus(err)
		}
	}
	for i, d := range req.Dense {
		if err := v.s.PushDense(req.ClusterVersion, d.Name, dense[i]); err != nil {
			return nil, toStatus(err)
		}
	}
	return &amspb.PushResponse{}, nil
}

func (v *service) PullDense(_ context.Context, req *amspb.PullDenseRequest) (*amspb.PullDenseResponse, error) {
	lo, hi, vals, err := v.s.PullDense(req.ClusterVersion, req.Name)
	if err != nil {
		return nil, toStatus(err)
	}
	return &amspb.PullDenseResponse{Lo: uint64(lo), Hi: uint64(hi), Values: ams.PackFloats(nil, vals)}, nil
}

func (v *service) PushDense(_ context.Context, req *amspb.PushDenseRequest) (*amspb.PushDenseResponse, error) {
	grad, err := ams.UnpackFloats(nil, req.Grad)
	if err != nil {
		return nil, toStatus(errors.Join(ErrBadRequest, err))
	}
	if err := v.s.PushDense(req.ClusterVersion, req.Name, grad); err != nil {
		return nil, toStatus(err)
	}
	return &amspb.PushDenseResponse{}, nil
}

func (v *service) Stats(_ context.Context, req *amspb.StatsRequest) (*amspb.StatsResponse, error) {
	if err := v.s.checkVersion(req.ClusterVersion); err != nil {
		return nil, toStatus(err)
	}
	st, err := v.s.Stats()
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &amspb.StatsResponse{ShardId: st.ID, ClusterVersion: st.Version, PullRequests: st.Pulls,
		PushRequests: st.Pushes, RowsPulled: st.RowsPulled, RowsPushed: st.RowsPushed}
	for _, t := range st.Tables {
		resp.Tables = append(resp.Tables, &amspb.TableStats{Name: t.Name, Rows: uint64(t.Rows), MemoryBytes: uint64(t.MemoryBytes)})
	}
	return resp, nil
}
