package membership_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/tests/tlstest"
)

// TestDialTLSMismatch runs a real etcd with mutual TLS next to the
// package's plaintext one: a plaintext client at the first is told that
// etcd speaks TLS and which flags to give, a TLS client at the second
// that it speaks plaintext, within DialCheckTimeout and ProbeTimeout; a
// client whose certificate etcd refuses still gets ErrUnreachable.
func TestDialTLSMismatch(t *testing.T) {
	ca, foreign := tlstest.NewCA(t, "dev"), tlstest.NewCA(t, "foreign")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	srv, err := etcdembed.Start(ctx, etcdembed.Options{Dir: t.TempDir(), UnsafeNoFsync: true, TLS: ca.Issue(t, tlsconf.RoleEtcd)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	tlsAt := srv.Endpoints()[0]
	worker := ca.Config(t, tlsconf.RoleWorker).Client()
	otherCA := foreign.Config(t, tlsconf.RoleWorker).Client()
	otherCA.RootCAs = worker.RootCAs // it trusts etcd; etcd does not trust it

	bound := membership.DialCheckTimeout + membership.ProbeTimeout + 3*time.Second
	for _, tc := range []struct {
		name      string
		endpoints []string
		opts      []membership.DialOption
		is        error
		want      string
	}{
		{"plaintext client, TLS etcd", []string{tlsAt}, nil, membership.ErrTLSMismatch,
			"etcd at " + tlsAt + " speaks TLS: give -tls-ca, -tls-cert and -tls-key"},
		{"TLS client, plaintext etcd", etcd.Endpoints(), []membership.DialOption{membership.WithTLS(worker)}, membership.ErrTLSMismatch,
			"etcd at " + etcd.Endpoints()[0] + " speaks plaintext, not TLS: drop -tls-ca, -tls-cert and -tls-key"},
		{"certificate of another CA", []string{tlsAt}, []membership.DialOption{membership.WithTLS(otherCA)}, membership.ErrUnreachable,
			"no answer from " + tlsAt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			begun := time.Now()
			cli, err := membership.Dial(ctx, tc.endpoints, nil, tc.opts...)
			if err == nil {
				cli.Close()
				t.Fatal("served")
			}
			took := time.Since(begun)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) || took > bound {
				t.Fatalf("Dial after %v: %v\nwant %v saying %q within %v", took.Round(time.Millisecond), err, tc.is, tc.want, bound)
			}
		})
	}
}
