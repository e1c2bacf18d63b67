package shard

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/ams/stream"
	"github.com/xdlgo/xps/cluster/tlsconf"
)

// Roles lists, for each RPC of the AMS service, the roles (package
// tlsconf: the OU of the caller's verified certificate) that may call it
// when the server speaks TLS (TLSServerOptions). An RPC not listed is
// refused to everyone. It follows what each caller calls:
//
//   - workers declare their tables, pull and push rows and dense values,
//     store and read their positions and checkpoints (PutState,
//     GetState), read Stats (the tables' usage, the records of applied
//     pushes) and load a warm start (Load);
//   - the scheduler writes snapshots and exports, restores (the one call
//     that moves a shard to another cluster version), and reads the
//     workers' positions (GetState) and Stats;
//   - an admin may call everything.
//
// The AMS shards, serve and etcd call no RPC of a shard.
var Roles = map[string][]string{
	amspb.AMS_Declare_FullMethodName:       {tlsconf.RoleWorker, tlsconf.RoleAdmin},
	amspb.AMS_Pull_FullMethodName:          {tlsconf.RoleWorker, tlsconf.RoleAdmin},
	amspb.AMS_Push_FullMethodName:          {tlsconf.RoleWorker, tlsconf.RoleAdmin},
	stream.FullMethod:                      {tlsconf.RoleWorker, tlsconf.RoleAdmin},
	amspb.AMS_PullDense_FullMethodName:     {tlsconf.RoleWorker, tlsconf.RoleAdmin},
	amspb.AMS_PushDense_FullMethodName:     {tlsconf.RoleWorker, tlsconf.RoleAdmin},
	amspb.AMS_Load_FullMethodName:          {tlsconf.RoleWorker, tlsconf.RoleAdmin},
	amspb.AMS_PutState_FullMethodName:      {tlsconf.RoleWorker, tlsconf.RoleAdmin},
	amspb.AMS_GetState_FullMethodName:      {tlsconf.RoleWorker, tlsconf.RoleScheduler, tlsconf.RoleAdmin},
	amspb.AMS_Stats_FullMethodName:         {tlsconf.RoleWorker, tlsconf.RoleScheduler, tlsconf.RoleAdmin},
	amspb.AMS_WriteSnapshot_FullMethodName: {tlsconf.RoleScheduler, tlsconf.RoleAdmin},
	amspb.AMS_Restore_FullMethodName:       {tlsconf.RoleScheduler, tlsconf.RoleAdmin},
	amspb.AMS_WriteExport_FullMethodName:   {tlsconf.RoleScheduler, tlsconf.RoleAdmin},
}

// TLSServerOptions are the options of a shard's gRPC server with mutual
// TLS (c's server configuration) and the role of every call checked
// against Roles: a call of another role is refused with
// ams.ErrRoleNotAllowed (gRPC PERMISSION_DENIED) before the shard sees
// it. A nil c returns none: plaintext, every call allowed.
func TLSServerOptions(c *tlsconf.Config) []grpc.ServerOption {
	if c == nil {
		return nil
	}
	return append(tlsconf.ServerOptions(c),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			worker, err := authorize(ctx, info.FullMethod)
			if err != nil {
				return nil, err
			}
			return h(withWorker(ctx, worker), req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			worker, err := authorize(ss.Context(), info.FullMethod)
			if err != nil {
				return amspb.ToStatus(err)
			}
			if worker != "" {
				ss = workerStream{ss, withWorker(ss.Context(), worker)}
			}
			return h(srv, ss)
		}))
}

// workerStream is a server stream whose context names its worker.
type workerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w workerStream) Context() context.Context { return w.ctx }

// workerKey is the context key of the caller's worker name (PeerWorker).
type workerKey struct{}

// withWorker returns ctx naming the calling worker, if any.
func withWorker(ctx context.Context, worker string) context.Context {
	if worker == "" {
		return ctx
	}
	return context.WithValue(ctx, workerKey{}, worker)
}

// checkWorker refuses a push or a state write under another worker's
// name: when the caller's certificate names a worker (PeerWorker), a
// push's origin and a checkpoint's key must be that worker's. A caller
// of the shared worker identity, or of another role, is not checked here
// (Roles is).
func checkWorker(ctx context.Context, what, worker string) error {
	caller, _ := ctx.Value(workerKey{}).(string)
	if caller == "" || worker == "" || worker == caller {
		return nil
	}
	return fmt.Errorf("%w: %s of %s under the certificate of %s: a worker's certificate covers its own pushes and checkpoint only", ams.ErrRoleNotAllowed, what, worker, caller)
}

// checkStateKey is checkWorker for a state entry's key: a worker's
// checkpoint (ams.CheckpointWorker) must be the caller's.
func checkStateKey(ctx context.Context, key string) error {
	if w, ok := ams.CheckpointWorker(key); ok {
		return checkWorker(ctx, "the checkpoint", w)
	}
	return nil
}

// authorize returns nil if the caller's role may call method, and the
// worker the caller's certificate names (tlsconf.PeerWorker), if any.
func authorize(ctx context.Context, method string) (worker string, err error) {
	state, ok := tlsconf.CallerState(ctx)
	if !ok {
		return "", fmt.Errorf("%w: %s: the caller did not authenticate with TLS", ams.ErrRoleNotAllowed, method)
	}
	role, err := tlsconf.PeerRole(state)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ams.ErrRoleNotAllowed, method, err)
	}
	if !slices.Contains(Roles[method], role) {
		return "", fmt.Errorf("%w: role %q may not call %s (allowed: %v)", ams.ErrRoleNotAllowed, role, method, Roles[method])
	}
	return tlsconf.PeerWorker(state), nil
}
