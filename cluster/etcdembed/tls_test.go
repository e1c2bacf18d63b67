package etcdembed_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/tests/testutil"
	"github.com/xdlgo/xps/tests/tlstest"
)

// dialTLS dials srv with cfg (nil: plaintext) within d.
func dialTLS(t *testing.T, srv *etcdembed.Server, cfg *tls.Config, d time.Duration) (*clientv3.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cli, err := membership.Dial(ctx, srv.Endpoints(), nil, membership.WithTLS(cfg))
	if err == nil {
		t.Cleanup(func() { cli.Close() })
	}
	return cli, err
}

// TestTLSRefusesStrangers: an etcd serving with mutual TLS serves a client
// with a certificate of its CA and refuses a plaintext client, a client
// without a certificate and one whose certificate another CA signed.
func TestTLSRefusesStrangers(t *testing.T) {
	ca, foreign := tlstest.NewCA(t, "dev"), tlstest.NewCA(t, "foreign")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Options{Dir: t.TempDir(), UnsafeNoFsync: true, TLS: ca.Issue(t, tlsconf.RoleEtcd)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	worker := ca.Config(t, tlsconf.RoleWorker).Client()
	cli, err := dialTLS(t, srv, worker, 30*time.Second)
	if err != nil {
		t.Fatalf("a worker of the CA: %v", err)
	}
	if _, err := cli.Put(ctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
	noCert := &tls.Config{RootCAs: worker.RootCAs, MinVersion: tls.VersionTLS13}
	otherCA := foreign.Config(t, tlsconf.RoleWorker).Client()
	otherCA.RootCAs = worker.RootCAs // it trusts etcd; etcd does not trust it
	for name, cfg := range map[string]*tls.Config{"plaintext": nil, "no certificate": noCert, "another CA's cert": otherCA} {
		// Refused at every attempt: the deadline only bounds the retries.
		if _, err := dialTLS(t, srv, cfg, 2*time.Second); err == nil {
			t.Errorf("%s: served", name)
		}
	}
}

// TestTLSPeers forms a two-member cluster whose members speak mutual TLS
// to each other (https peer URLs, etcd-role certificates) and to clients.
func TestTLSPeers(t *testing.T) {
	ca := tlstest.NewCA(t, "dev")
	var peers, clients [2]string
	for i := range peers {
		peers[i], clients[i] = testutil.FreeAddr(t), testutil.FreeAddr(t)
	}
	initial := fmt.Sprintf("m0=https://%s,m1=https://%s", peers[0], peers[1])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srvs := make([]*etcdembed.Server, 2)
	errs := make(chan error, 2)
	for i := range srvs {
		files := ca.Issue(t, tlsconf.RoleEtcd)
		go func() {
			var err error
			srvs[i], err = etcdembed.Start(ctx, etcdembed.Options{Dir: t.TempDir(), Name: fmt.Sprintf("m%d", i),
				ClientAddr: clients[i], PeerAddr: peers[i], InitialCluster: initial, UnsafeNoFsync: true, TLS: files})
			errs <- err
		}()
	}
	for range srvs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range srvs {
		t.Cleanup(func() { s.Close() })
	}
	worker := ca.Config(t, tlsconf.RoleWorker).Client()
	put, err := dialTLS(t, srvs[0], worker, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := put.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	get, err := dialTLS(t, srvs[1], worker, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := get.Get(ctx, "k"); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("member 1 read %v, %v; want v", resp, err)
	}
}
