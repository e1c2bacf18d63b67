package xctrain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/sparsenet/slide"
	"github.com/xdlgo/xps/sparsenet/slide/dslide"
	"github.com/xdlgo/xps/sparsenet/slide/dslide/dslidenet"
)

// A SLIDE job of W > 1 workers splits the layer into W shares, one per
// worker (package sparsenet/slide/dslide's rounds): each worker serves its
// share on model.output.peer_listen for the job's life (peerServer), and
// at each attempt publishes its address in etcd with the attempt's version
// (controlplane.PutOwnerAddr), waits for every worker's, and trains with a
// shared output: its own share called directly, the others over gRPC
// (package dslidenet).

// Peers is this worker's place among the job's workers: the server its
// share is served by, its index, the number of workers, the attempt's
// cluster version, every worker's address by index, and the worker's
// identity its connections to the others speak mutual TLS with (nil:
// plaintext).
type Peers struct {
	Server  *dslidenet.Server
	Index   int
	Workers int
	Version uint64
	Addrs   []string
	TLS     *tlsconf.Config
}

// maxPeerMessage bounds a round's or a prediction's message.
const maxPeerMessage = 1 << 30

// peerServer is the gRPC server of this worker's share, for the job.
type peerServer struct {
	srv  *dslidenet.Server
	grpc *grpc.Server
	addr string // advertised
	// version is the cluster version of the last attempt that built a
	// share (0: none yet).
	version uint64
}

// startPeerServer listens on listen and serves the share (none until an
// attempt sets one); advertise, or the listener's address, is what the
// other workers dial. With tc (the worker's identity) it speaks mutual TLS
// and serves workers only (peerServerOptions).
func startPeerServer(listen, advertise string, tc *tlsconf.Config) (*peerServer, error) {
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("xctrain: model.output.peer_listen %q: %w", listen, err)
	}
	addr, err := advertised(lis.Addr().(*net.TCPAddr), advertise)
	if err != nil {
		lis.Close()
		return nil, err
	}
	opts := append([]grpc.ServerOption{dslidenet.ServerOption(), grpc.MaxRecvMsgSize(maxPeerMessage), grpc.MaxSendMsgSize(maxPeerMessage),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true})},
		peerServerOptions(tc)...)
	p := &peerServer{srv: &dslidenet.Server{}, addr: addr, grpc: grpc.NewServer(opts...)}
	p.srv.Register(p.grpc)
	go p.grpc.Serve(lis)
	return p, nil
}

// peerServerOptions are the TLS options of a share's server with tc:
// mutual TLS (tc's server configuration), and a call refused with
// PERMISSION_DENIED unless the caller's verified certificate is of the
// worker role. A nil tc returns none (plaintext).
func peerServerOptions(tc *tlsconf.Config) []grpc.ServerOption {
	if tc == nil {
		return nil
	}
	return append(tlsconf.ServerOptions(tc), grpc.ChainUnaryInterceptor(
		func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			state, ok := tlsconf.CallerState(ctx)
			if !ok {
				return nil, status.Errorf(codes.PermissionDenied, "%s: the caller did not authenticate with TLS", info.FullMethod)
			}
			if role, err := tlsconf.PeerRole(state); err != nil || role != tlsconf.RoleWorker {
				return nil, status.Errorf(codes.PermissionDenied, "%s: only workers call a worker's share (role %q, %v)", info.FullMethod, role, err)
			}
			return h(ctx, req)
		}))
}

// peerDialOption is the transport of a connection to worker i's share:
// with tc, mutual TLS that verifies the share's server as a worker's
// (tlsconf.PeerClient), as worker i's own when this worker has a
// certificate of its own (its name in tc.Worker); else plaintext.
func peerDialOption(tc *tlsconf.Config, i int) grpc.DialOption {
	if tc == nil {
		return grpc.WithTransportCredentials(insecure.NewCredentials())
	}
	want := ""
	if tc.Worker != "" {
		want = membership.WorkerName(i)
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(tc.PeerClient(want)))
}

// advertised is the address to publish for a listener on a.
func advertised(a *net.TCPAddr, advertise string) (string, error) {
	if advertise != "" {
		return advertise, nil
	}
	if !a.IP.IsUnspecified() {
		return a.String(), nil
	}
	// No host to listen on: the address this machine reaches others from
	// (no packet is sent: a UDP "connection" only picks the route).
	c, err := net.Dial("udp", "192.0.2.1:9")
	if err != nil {
		return "", fmt.Errorf("xctrain: model.output.peer_listen %s names no host and this machine has no route out: set model.output.peer_advertise", a)
	}
	defer c.Close()
	return net.JoinHostPort(c.LocalAddr().(*net.UDPAddr).IP.String(), fmt.Sprint(a.Port)), nil
}

func (p *peerServer) close() {
	if p != nil {
		p.grpc.Stop()
	}
}

// joinPeers publishes this worker's address for env's attempt and waits
// for every worker's.
func (p *peerServer) joinPeers(ctx context.Context, env *job.Env) (*Peers, error) {
	reg, err := env.Registration.Live(ctx)
	if err != nil {
		return nil, err
	}
	if err := env.Conn.PutOwnerAddr(ctx, reg, env.Index, controlplane.OwnerAddr{Addr: p.addr, Version: env.Version}); err != nil {
		return nil, err
	}
	addrs, err := env.Conn.WaitOwnerAddrs(ctx, env.Workers(), env.Version)
	if err != nil {
		return nil, err
	}
	return &Peers{Server: p.srv, Index: env.Index, Workers: env.Workers(), Version: env.Version, Addrs: addrs, TLS: env.TLS}, nil
}

// shared is this worker's share of a layer split between the job's
// workers, with the others' reached over gRPC.
type shared struct {
	owner *dslide.Owner
	w     *dslide.Worker
	srv   *dslidenet.Server
	conns []*grpc.ClientConn
}

// newShared builds this worker's share of sc's layer for p's attempt,
// its connections to the other shares with p.TLS;
// serve makes p.Server serve it, once it holds what it resumes from.
// dense makes its rounds exchange logits (dense model parallelism)
// instead of D-SLIDE's sums.
func newShared(sc slide.Config, p *Peers, dense bool) (*shared, slide.Params, error) {
	part, err := dslide.Even(sc.Dim, p.Workers)
	if err != nil {
		return nil, slide.Params{}, err
	}
	o, err := dslide.NewOwner(sc, part, p.Index, p.Workers, p.Version)
	if err != nil {
		return nil, slide.Params{}, err
	}
	s := &shared{owner: o, srv: p.Server, w: &dslide.Worker{Part: part, Index: p.Index, Version: p.Version, Peers: make([]dslide.Peer, p.Workers), Dense: dense}}
	for i, addr := range p.Addrs {
		if i == p.Index {
			s.w.Peers[i] = o
			continue
		}
		conn, err := grpc.NewClient(addr, peerDialOption(p.TLS, i),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxPeerMessage), grpc.MaxCallSendMsgSize(maxPeerMessage)),
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}))
		if err != nil {
			s.Close()
			return nil, slide.Params{}, fmt.Errorf("xctrain: worker %d's share at %s: %w", i, addr, err)
		}
		s.conns = append(s.conns, conn)
		s.w.Peers[i] = dslidenet.NewClient(conn)
	}
	return s, o.Layer().Params(), nil
}

// serve makes the share reachable by the other workers. Before, their
// requests of this attempt are answered Pending: a share still loading
// from a snapshot (Load) must not serve a prediction.
func (s *shared) serve() { s.srv.Set(s.owner) }

func (s *shared) TrainBatch(ctx context.Context, x []float32, n int, labels [][]int32, dx []float32, pause uint64) (float64, uint64, error) {
	loss, info, err := s.w.TrainBatch(ctx, x, n, labels, dx, pause)
	return loss, info.Pause, err
}

// Maintain does nothing: every owner keeps its tables after each round.
func (s *shared) Maintain() {}

func (s *shared) Rehash(ctx context.Context) error {
	return s.w.Predict(ctx, nil, 0, 1, true, true, nil)
}

func (s *shared) Predict(ctx context.Context, x []float32, n, k int, sparse bool, out []int32) error {
	return s.w.Predict(ctx, x, n, k, sparse, false, out)
}

// TuneInference does not run: the other shares are in other workers.
func (s *shared) TuneInference(context.Context, []float32, int, [][]int32, slide.InferTuneOptions) (slide.InferTune, bool, error) {
	return slide.InferTune{}, false, nil
}

// Candidates is nil: the other shares' candidates are in other workers.
func (s *shared) Candidates([]float32, []int32) []int32 { return nil }
func (s *shared) Save(w io.Writer) error                { return s.owner.Layer().Save(w) }
func (s *shared) Load(r io.Reader) error                { return s.owner.Layer().Load(r) }
func (s *shared) HasTables() bool                       { return s.owner.Layer().Tables() != nil }
func (s *shared) ParamBytes() int64                     { return s.owner.Layer().ParamBytes() }
func (s *shared) TablesBytes() int64                    { return s.owner.Layer().TablesBytes() }
func (s *shared) Stats() dslide.Stats                   { return s.w.Stats() }
func (s *shared) Partition() dslide.Partition           { return s.w.Part }

// Close stops serving the share and closes it and the connections.
func (s *shared) Close() error {
	s.srv.Set(nil)
	errs := []error{s.owner.Close()}
	for _, c := range s.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
