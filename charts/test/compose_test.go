package charttest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCompose starts deploy/compose/compose.yaml from the project's image:
// both workers finish with an exact exactly-once record, and serve, which
// follows the exports, answers a prediction.
func TestCompose(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the compose cluster takes minutes")
	}
	if _, err := Docker(context.Background(), "info", "--format", "{{.ServerVersion}}"); err != nil {
		t.Skipf("Docker Engine not available, the compose test cannot run: %v", err)
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skip("docker-compose not installed (Debian's docker-compose package); the compose test cannot run")
	}
	image := buildImage(t)
	project := fmt.Sprintf("xpscompose%d", os.Getpid())
	serve := freePort(t)
	env := append(os.Environ(), "XPS_IMAGE="+image, "XPS_SAMPLES=100000",
		"XPS_STATUS_PORT="+freePort(t), "XPS_SERVE_PORT="+serve)
	compose := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "docker-compose", append([]string{"-p", project, "-f",
			filepath.Join(Root(), "deploy", "compose", "compose.yaml")}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := compose(context.Background(), "logs", "--no-color", "--tail", "40")
			t.Logf("compose logs:\n%s", out)
		}
		compose(context.Background(), "down", "-v") //nolint:errcheck // best effort
	})
	if out, err := compose(ctx, "up", "-d"); err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}
	for _, w := range []string{"worker-0", "worker-1"} {
		s := waitExited(t, ctx, project+"_"+w+"_1")
		if !s.ExactlyOnce.Exact || s.ExactlyOnce.Samples == 0 {
			t.Errorf("%s: exactly-once record %+v; want exact", w, s.ExactlyOnce)
		}
	}
	body := `{"user": "1:u42 2:iphone", "candidates": ["3:item7", "3:item9"]}`
	for {
		out, err := exec.CommandContext(ctx, "curl", "-sf", "-d", body, "http://127.0.0.1:"+serve+"/predict").Output()
		if err == nil && strings.Contains(string(out), `"scores"`) {
			t.Logf("serve: %s", out)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("serve never answered a prediction: %v %s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitExited waits until a worker's container has exited 0 (a restart
// after exit 1 may come: Docker's on-failure policy) and returns the JSON
// summary on the last line of its stdout.
func waitExited(t *testing.T, ctx context.Context, container string) summary {
	for {
		out, err := Docker(ctx, "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", container)
		if err == nil && out == "exited 0" {
			break
		}
		if ctx.Err() != nil || strings.HasPrefix(out, "exited") && out != "exited 1" {
			t.Fatalf("%s: %s %v", container, out, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	stdout, err := exec.CommandContext(ctx, "docker", "logs", container).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	var s summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("%s: last line is not a JSON summary: %v", container, err)
	}
	return s
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}
