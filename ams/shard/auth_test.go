package shard_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/ams/shard"
	"github.com/xdlgo/xps/ams/stream"
	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/tests/tlstest"
)

// tlsShard serves a shard with mutual TLS (the AMS role's certificate of
// ca) on loopback and returns its shard map and store root. The shard is
// blank unless begin: then it serves version 1.
func tlsShard(t *testing.T, ca *tlstest.CA, begin bool) (*ams.ShardMap, string) {
	t.Helper()
	store := t.TempDir()
	s := shard.New(shard.Options{ID: "ams-0", Stripes: 2, Blank: true, Stores: []string{store}})
	if begin {
		if err := s.Begin(1, 16); err != nil {
			t.Fatal(err)
		}
	}
	gs := shard.NewGRPCServer(s, shard.TLSServerOptions(ca.Config(t, tlsconf.RoleAMS))...)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		gs.Serve(lis) //nolint:errcheck // ends with Stop
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-done
		s.Close()
	})
	m, err := ams.NewShardMap(1, 16, []string{"ams-0"}, []string{lis.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	return m, store
}

// dial returns a client of m with the given transport credentials.
func dial(t *testing.T, m *ams.ShardMap, opt grpc.DialOption) *client.Client {
	t.Helper()
	cl, err := client.New(m, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func withTLS(c *tls.Config) grpc.DialOption {
	return grpc.WithTransportCredentials(credentials.NewTLS(c))
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestTLSRefusesStrangers: a shard serving with mutual TLS refuses a
// plaintext client, a client without a certificate and one whose
// certificate another CA signed, at the handshake (UNAVAILABLE, nothing
// served); a client of the CA is served.
func TestTLSRefusesStrangers(t *testing.T) {
	ca, foreign := tlstest.NewCA(t, "dev"), tlstest.NewCA(t, "foreign")
	m, _ := tlsShard(t, ca, true)
	worker := ca.Config(t, tlsconf.RoleWorker).Client()
	noCert := &tls.Config{RootCAs: worker.RootCAs, MinVersion: tls.VersionTLS13}
	otherCA := foreign.Config(t, tlsconf.RoleWorker).Client()
	otherCA.RootCAs = worker.RootCAs // it trusts the shard; the shard does not trust it
	for name, opt := range map[string]grpc.DialOption{
		"plaintext":         grpc.WithTransportCredentials(insecure.NewCredentials()),
		"no certificate":    withTLS(noCert),
		"another CA's cert": withTLS(otherCA),
	} {
		_, err := dial(t, m, opt).Stats(ctx(t))
		if !errors.Is(err, ams.ErrUnavailable) {
			t.Errorf("%s: Stats = %v, want refused at the connection (ams.ErrUnavailable)", name, err)
		}
	}
	if _, err := dial(t, m, withTLS(worker)).Stats(ctx(t)); err != nil {
		t.Fatalf("a worker of the CA: Stats = %v", err)
	}
}

// TestTLSRoles: with TLS on, the admin RPCs are the scheduler's: a
// worker's Restore (which would move the shard to another version) is
// refused with PERMISSION_DENIED naming the role and the RPC, and changes
// nothing; the scheduler's succeeds; the scheduler may not push, the
// worker may; serve's certificate may call nothing.
func TestTLSRoles(t *testing.T) {
	ca := tlstest.NewCA(t, "dev")
	m, store := tlsShard(t, ca, false)
	worker := dial(t, m, withTLS(ca.Config(t, tlsconf.RoleWorker).Client()))
	sched := dial(t, m, withTLS(ca.Config(t, tlsconf.RoleScheduler).Client()))
	serve := dial(t, m, withTLS(ca.Config(t, tlsconf.RoleServe).Client()))

	if _, err := worker.Restore(ctx(t), store, 0); !errors.Is(err, ams.ErrRoleNotAllowed) {
		t.Fatalf("worker's Restore = %v, want ams.ErrRoleNotAllowed", err)
	}
	// On the wire: PERMISSION_DENIED, naming the role and the RPC.
	cc, err := grpc.NewClient(m.Addrs[0], withTLS(ca.Config(t, tlsconf.RoleWorker).Client()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	_, err = amspb.NewAMSClient(cc).Restore(ctx(t), &amspb.RestoreRequest{Store: store})
	if st := status.Convert(err); st.Code() != codes.PermissionDenied ||
		!strings.Contains(st.Message(), `role "worker"`) || !strings.Contains(st.Message(), "Restore") {
		t.Fatalf("worker's raw Restore = %v, want PERMISSION_DENIED naming the role and the RPC", err)
	}
	if _, err := serve.Stats(ctx(t)); !errors.Is(err, ams.ErrRoleNotAllowed) {
		t.Fatalf("serve's Stats = %v, want ams.ErrRoleNotAllowed", err)
	}
	// The worker's refused Restore began nothing: a push fails as on a
	// blank shard, not as refused.
	spec := ams.TableSpec{Name: "emb", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}, Init: ams.InitSpec{Kind: "zeros"}}
	if err := worker.Declare(ctx(t), []ams.TableSpec{spec}, nil); err == nil || errors.Is(err, ams.ErrRoleNotAllowed) {
		t.Fatalf("worker's Declare on a blank shard = %v, want the shard's refusal (no version begun)", err)
	}
	if _, err := sched.Restore(ctx(t), store, 0); err != nil {
		t.Fatalf("scheduler's Restore = %v", err)
	}
	if err := worker.Declare(ctx(t), []ams.TableSpec{spec}, nil); err != nil {
		t.Fatalf("worker's Declare = %v", err)
	}
	if err := sched.Declare(ctx(t), []ams.TableSpec{spec}, nil); !errors.Is(err, ams.ErrRoleNotAllowed) {
		t.Fatalf("scheduler's Declare = %v, want ams.ErrRoleNotAllowed", err)
	}
	scc, err := grpc.NewClient(m.Addrs[0], withTLS(ca.Config(t, tlsconf.RoleScheduler).Client()))
	if err != nil {
		t.Fatal(err)
	}
	defer scc.Close()
	if _, err := amspb.NewAMSClient(scc).Push(ctx(t), &amspb.PushRequest{ClusterVersion: 1}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("scheduler's Push = %v, want PERMISSION_DENIED", err)
	}
	tables := []client.Table{{Name: "emb", IDs: []uint64{7}, Rows: []float32{1, 2}}}
	if err := worker.Push(ctx(t), tables, nil); err != nil {
		t.Fatalf("worker's Push = %v", err)
	}
	// The data plane's stream (a gRPC stream under TLS) is the workers'.
	dcc, err := grpc.NewClient(m.Addrs[0], append(amspb.DialOptions(), withTLS(ca.Config(t, tlsconf.RoleScheduler).Client()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer dcc.Close()
	st, err := dcc.NewStream(ctx(t), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, stream.FullMethod)
	if err == nil {
		hello := stream.Hello()
		st.SendMsg(&amspb.Raw{Buf: &hello})
		err = st.RecvMsg(&amspb.Raw{})
	}
	if status.Code(err) != codes.PermissionDenied || !errors.Is(amspb.FromStatus(err), ams.ErrRoleNotAllowed) {
		t.Fatalf("scheduler's data plane stream = %v, want PERMISSION_DENIED", err)
	}
	if _, err := sched.Stats(ctx(t)); err != nil {
		t.Fatalf("scheduler's Stats = %v", err)
	}
}

// TestTLSWorkerIdentity: a worker whose certificate names it (OU worker,
// CN worker-1) pushes and stores its checkpoint only as itself, on the
// data plane's stream, on the unary Push and on PutState; a push or a
// checkpoint under another worker's name is refused with
// PERMISSION_DENIED naming both. The shared worker certificate (CN
// worker) is not bound to a name (issue 48, one identity per worker).
func TestTLSWorkerIdentity(t *testing.T) {
	ca := tlstest.NewCA(t, "dev")
	m, _ := tlsShard(t, ca, true)
	shared := dial(t, m, withTLS(ca.Config(t, tlsconf.RoleWorker).Client()))
	files := ca.IssueSubject(t, pkix.Name{CommonName: "worker-1", OrganizationalUnit: []string{tlsconf.RoleWorker}})
	c1, err := tlsconf.Load(files)
	if err != nil {
		t.Fatal(err)
	}
	w1 := dial(t, m, withTLS(c1.Client()))
	spec := ams.TableSpec{Name: "emb", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}, Init: ams.InitSpec{Kind: "zeros"}}
	for _, cl := range []*client.Client{w1, shared} {
		if err := cl.Declare(ctx(t), []ams.TableSpec{spec}, nil); err != nil {
			t.Fatalf("Declare = %v", err)
		}
	}
	push := func(cl *client.Client, worker string, batch uint64) error {
		r := cl.NewRoute()
		if err := r.Add("emb", []uint64{7}); err != nil {
			t.Fatal(err)
		}
		return cl.PushBatch(ctx(t), ams.Origin{Worker: worker, Batch: batch, Samples: 1}, r, [][]float32{{1, 2}}, nil)
	}
	if err := push(w1, "worker-1", 1); err != nil {
		t.Fatalf("worker-1's own push = %v", err)
	}
	err = push(w1, "worker-0", 1)
	if !errors.Is(err, ams.ErrRoleNotAllowed) || !strings.Contains(err.Error(), "worker-0") || !strings.Contains(err.Error(), "worker-1") {
		t.Fatalf("worker-1's push as worker-0 (stream) = %v, want ams.ErrRoleNotAllowed naming both", err)
	}
	cc, err := grpc.NewClient(m.Addrs[0], withTLS(c1.Client()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	_, err = amspb.NewAMSClient(cc).Push(ctx(t), &amspb.PushRequest{ClusterVersion: 1, Origin: amspb.FromOrigin(ams.Origin{Worker: "worker-0", Batch: 2, Samples: 1})})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("worker-1's unary push as worker-0 = %v, want PERMISSION_DENIED", err)
	}
	value := []byte(`{"iter":2}`)
	if err := w1.PutState(ctx(t), []client.StateEntry{{Key: ams.CheckpointKey("worker-1"), Value: value}}); err != nil {
		t.Fatalf("worker-1's own checkpoint = %v", err)
	}
	if err := w1.PutState(ctx(t), []client.StateEntry{{Key: ams.CheckpointKey("worker-0"), Value: value}}); !errors.Is(err, ams.ErrRoleNotAllowed) {
		t.Fatalf("worker-1's checkpoint of worker-0 = %v, want ams.ErrRoleNotAllowed", err)
	}
	if err := w1.PutState(ctx(t), []client.StateEntry{{Key: ams.StateJobShape, Value: value}}); err != nil {
		t.Fatalf("worker-1's job entry = %v (any worker may write the job's entries)", err)
	}
	// The shared identity names no worker: it is not held to one.
	if err := push(shared, "worker-0", 3); err != nil {
		t.Fatalf("the shared worker certificate's push as worker-0 = %v", err)
	}
	if err := shared.PutState(ctx(t), []client.StateEntry{{Key: ams.CheckpointKey("worker-0"), Value: value}}); err != nil {
		t.Fatalf("the shared worker certificate's checkpoint of worker-0 = %v", err)
	}
}
