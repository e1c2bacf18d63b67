package tlsconf_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/xdlgo/xps/cluster/tlsconf"
)

// TestDevCertsScript runs deploy/tls/gen-dev-certs.sh (openssl) and
// checks that every role's files load with their role, and that a worker
// reaches a shard by a chart name (a wildcard SAN) and by an extra name.
func TestDevCertsScript(t *testing.T) {
	for _, tool := range []string{"bash", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing (Debian: apt-get install %s; .ci/run installs it)", tool, tool)
		}
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "..", "deploy", "tls", "gen-dev-certs.sh"), out, "xps.example.com")
	cmd.Env = append(os.Environ(), "WORKERS=2")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-dev-certs.sh: %v\n%s", err, b)
	}
	configs := map[string]*tlsconf.Config{}
	for _, role := range tlsconf.Roles {
		d := filepath.Join(out, role)
		c, err := tlsconf.Load(tlsconf.Files{CA: filepath.Join(d, "ca.crt"), Cert: filepath.Join(d, "tls.crt"), Key: filepath.Join(d, "tls.key")})
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		if c.Role != role {
			t.Fatalf("the %s certificate names the role %q", role, c.Role)
		}
		configs[role] = c
	}
	// WORKERS=2: worker-0 and worker-1, of the worker role, each its own
	// name to a shard.
	for _, name := range []string{"worker-0", "worker-1"} {
		d := filepath.Join(out, name)
		c, err := tlsconf.Load(tlsconf.Files{CA: filepath.Join(d, "ca.crt"), Cert: filepath.Join(d, "tls.crt"), Key: filepath.Join(d, "tls.key")})
		if err != nil || c.Role != tlsconf.RoleWorker {
			t.Fatalf("%s: role %v, %v; want worker", name, c, err)
		}
		cli := c.Client()
		cli.ServerName = "ams-0.ams"
		cs, serr, cerr := handshake(t, configs[tlsconf.RoleAMS].Server(), cli)
		if serr != nil || cerr != nil || tlsconf.PeerWorker(cs) != name {
			t.Fatalf("%s to ams: the shard sees worker %q (server %v, client %v)", name, tlsconf.PeerWorker(cs), serr, cerr)
		}
	}
	shared := configs[tlsconf.RoleWorker].Client()
	shared.ServerName = "ams-0.ams"
	if cs, serr, cerr := handshake(t, configs[tlsconf.RoleAMS].Server(), shared); serr != nil || cerr != nil || tlsconf.PeerWorker(cs) != "" {
		t.Fatalf("the shared worker certificate names worker %q (server %v, client %v), want none", tlsconf.PeerWorker(cs), serr, cerr)
	}
	for _, name := range []string{"ams-1.ams", "ams-0.ams.default.svc.cluster.local", "etcd-2.etcd", "xps.example.com", "127.0.0.1"} {
		cli := configs[tlsconf.RoleWorker].Client()
		cli.ServerName = name
		cs, serr, cerr := handshake(t, configs[tlsconf.RoleAMS].Server(), cli)
		if serr != nil || cerr != nil {
			t.Fatalf("worker to ams as %s: server %v, client %v", name, serr, cerr)
		}
		if role, err := tlsconf.PeerRole(cs); err != nil || role != tlsconf.RoleWorker {
			t.Fatalf("the shard sees %q, %v; want worker", role, err)
		}
	}
}
