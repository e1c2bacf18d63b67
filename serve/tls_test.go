package serve_test

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/serve"
	"github.com/xdlgo/xps/serve/servepb"
	"github.com/xdlgo/xps/tests/tlstest"
)

// TestGRPCTLSRefusesStrangers: serve's gRPC server with mutual TLS (as
// cmd/serve runs it with -tls-*) answers a client with a certificate of
// its CA and refuses a plaintext client, a client without a certificate
// and one whose certificate another CA signed, before the service sees
// the request. The store is empty: an answered request is the service's
// "not ready".
func TestGRPCTLSRefusesStrangers(t *testing.T) {
	ca, foreign := tlstest.NewCA(t, "dev"), tlstest.NewCA(t, "foreign")
	s, err := serve.New(serve.Options{Store: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gs := grpc.NewServer(tlsconf.ServerOptions(ca.Config(t, tlsconf.RoleServe))...)
	s.RegisterGRPC(gs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		gs.Serve(lis) //nolint:errcheck // ends with Stop
	}()
	defer func() { gs.Stop(); <-done }()
	predict := func(opt grpc.DialOption) error {
		conn, err := grpc.NewClient(lis.Addr().String(), opt)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = servepb.NewPredictorClient(conn).Predict(ctx, &servepb.PredictRequest{User: "0:u1", Candidates: []string{"1:a"}})
		return err
	}
	answered := func(err error) bool { return err != nil && strings.Contains(err.Error(), serve.ErrNotReady.Error()) }

	client := ca.Config(t, tlsconf.RoleAdmin).Client()
	if err := predict(grpc.WithTransportCredentials(credentials.NewTLS(client))); !answered(err) {
		t.Fatalf("a client of the CA: %v, want the service's answer (not ready)", err)
	}
	noCert := &tls.Config{RootCAs: client.RootCAs, MinVersion: tls.VersionTLS13}
	otherCA := foreign.Config(t, tlsconf.RoleAdmin).Client()
	otherCA.RootCAs = client.RootCAs // it trusts serve; serve does not trust it
	for name, opt := range map[string]grpc.DialOption{
		"plaintext":         grpc.WithTransportCredentials(insecure.NewCredentials()),
		"no certificate":    grpc.WithTransportCredentials(credentials.NewTLS(noCert)),
		"another CA's cert": grpc.WithTransportCredentials(credentials.NewTLS(otherCA)),
	} {
		if err := predict(opt); err == nil || answered(err) {
			t.Errorf("%s: %v, want refused before the service", name, err)
		}
	}
}
