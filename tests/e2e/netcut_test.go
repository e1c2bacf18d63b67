package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/xdlgo/xps/tests/testutil"
)

// netns is a network namespace joined to the host by a veth pair: a
// process run in it (Cmd) reaches the host, and the host it, only through
// the pair, so setting the host's end down cuts it off for real (its
// packets are dropped, its TCP connections hang: no reset), as a network
// partition does, while the process lives on. It needs root and ip(8);
// newNetns returns nil, and why, without them.
type netns struct {
	name             string // of the namespace
	hostIf           string // the host's end of the pair
	hostIP, insideIP string
}

// newNetns creates a namespace and its veth pair, removed when the test
// ends, or returns nil and why it cannot.
func newNetns(t *testing.T) (*netns, string) {
	if os.Geteuid() != 0 {
		return nil, "not root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, "no ip(8)"
	}
	pid := os.Getpid()
	n := &netns{name: fmt.Sprintf("xps-cut-%d", pid), hostIf: fmt.Sprintf("xpc%da", pid%1000000),
		hostIP: fmt.Sprintf("10.213.%d.1", pid%250), insideIP: fmt.Sprintf("10.213.%d.2", pid%250)}
	inside := fmt.Sprintf("xpc%db", pid%1000000)
	steps := [][]string{
		{"netns", "add", n.name},
		{"link", "add", n.hostIf, "type", "veth", "peer", "name", inside},
		{"link", "set", inside, "netns", n.name},
		{"addr", "add", n.hostIP + "/30", "dev", n.hostIf},
		{"link", "set", n.hostIf, "up"},
		{"netns", "exec", n.name, "ip", "addr", "add", n.insideIP + "/30", "dev", inside},
		{"netns", "exec", n.name, "ip", "link", "set", inside, "up"},
		{"netns", "exec", n.name, "ip", "link", "set", "lo", "up"},
	}
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", n.hostIf).Run()
		exec.Command("ip", "netns", "del", n.name).Run()
	})
	for _, args := range steps {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return nil, fmt.Sprintf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return n, ""
}

// Cmd returns the command line that runs bin with args in the namespace.
func (n *netns) Cmd(bin string, args ...string) []string {
	return append([]string{"ip", "netns", "exec", n.name, bin}, args...)
}

// InsideAddr returns an address inside the namespace with a port free on
// the host (ports are per namespace: a free one is likely free there too).
func (n *netns) InsideAddr(t *testing.T) string {
	_, port, err := net.SplitHostPort(testutil.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(n.insideIP, port)
}

// HostAddr returns an address on the host's end of the pair, with a free
// port: one that processes on the host and in the namespace both reach.
func (n *netns) HostAddr(t *testing.T) string {
	l, err := net.Listen("tcp", net.JoinHostPort(n.hostIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Cut sets the host's end of the pair down (cut is true) or up again.
func (n *netns) Cut(t *testing.T, cut bool) {
	state := "up"
	if cut {
		state = "down"
	}
	if out, err := exec.Command("ip", "link", "set", n.hostIf, state).CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s %s: %v: %s", n.hostIf, state, err, out)
	}
}
