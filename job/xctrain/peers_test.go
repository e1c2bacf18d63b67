package xctrain

import (
	"crypto/x509/pkix"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/sparsenet/slide/dslide"
	"github.com/xdlgo/xps/sparsenet/slide/dslide/dslidenet"
	"github.com/xdlgo/xps/tests/testutil"
	"github.com/xdlgo/xps/tests/tlstest"
)

// TestPeersTLS: a share's server with TLS answers a worker (of its own
// certificate, or of the shared one) that verifies it as the worker it
// dials, at an address its certificate does not name (127.0.0.2), and
// refuses every other caller: a certificate of another role
// (PERMISSION_DENIED), of another CA, or none; a worker of its own
// certificate refuses a server that presents another worker's.
func TestPeersTLS(t *testing.T) {
	ca, foreign := tlstest.NewCA(t, "dev"), tlstest.NewCA(t, "foreign")
	load := func(ca *tlstest.CA, cn, role string) *tlsconf.Config {
		c, err := tlsconf.Load(ca.IssueSubject(t, pkix.Name{CommonName: cn, OrganizationalUnit: []string{role}}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	w0 := load(ca, "worker-0", tlsconf.RoleWorker)
	srv, err := startPeerServer("127.0.0.2:0", "", load(ca, "worker-1", tlsconf.RoleWorker))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	// call asks worker 1's share (dialled as worker i's) for a prediction
	// of a version no attempt has started: a share that answers says
	// Pending.
	call := func(opt grpc.DialOption) error {
		conn, err := grpc.NewClient(srv.addr, opt)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx := testutil.Ctx(t, 30*time.Second)
		rep, err := dslidenet.NewClient(conn).Predict(ctx, dslide.PredictRequest{Version: 1})
		if err == nil && !rep.Pending {
			t.Fatalf("a share with no attempt answered %+v", rep)
		}
		return err
	}
	for name, tc := range map[string]*tlsconf.Config{"worker-0": w0, "the shared worker": load(ca, tlsconf.RoleWorker, tlsconf.RoleWorker)} {
		if err := call(peerDialOption(tc, 1)); err != nil {
			t.Errorf("%s's call of worker-1's share: %v", name, err)
		}
	}
	if err := call(peerDialOption(w0, 2)); err == nil {
		t.Error("worker-0 took worker-1's share for worker-2's")
	}
	if err := call(peerDialOption(foreign.Config(t, tlsconf.RoleWorker), 1)); err == nil {
		t.Error("a worker of another CA called worker-1's share")
	}
	if err := call(peerDialOption(nil, 1)); err == nil {
		t.Error("a plaintext caller called worker-1's share")
	}
	serve := load(ca, tlsconf.RoleServe, tlsconf.RoleServe)
	if err := call(peerDialOption(serve, 1)); status.Code(err) != codes.PermissionDenied {
		t.Errorf("serve's call of worker-1's share: %v, want PERMISSION_DENIED", err)
	}
}
