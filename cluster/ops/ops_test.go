package ops_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/xdlgo/xps/cluster/ops"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEndpoints(t *testing.T) {
	s, err := ops.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := "http://" + s.Addr()
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz = %d, want 200", code)
	}
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "starting") {
		t.Errorf("/readyz before SetReady = %d %q, want 503 naming the reason", code, body)
	}
	s.SetReady()
	if code, _ := get(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz after SetReady = %d, want 200", code)
	}
	s.SetNotReady("stopping")
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "stopping") {
		t.Errorf("/readyz after SetNotReady = %d %q", code, body)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ops.Namespace, Name: "test_total", Help: "a test counter"})
	s.Registry.MustRegister(c)
	c.Add(3)
	_, body := get(t, base+"/metrics")
	for _, want := range []string{"xps_test_total 3", "go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestCloseIdempotent(t *testing.T) {
	s, err := ops.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	if _, err := http.Get("http://" + s.Addr() + "/healthz"); err == nil {
		t.Error("served after Close")
	}
}

func TestBadAddress(t *testing.T) {
	if _, err := ops.Start("no-such-host-xps:1", nil); err == nil || !strings.Contains(err.Error(), "no-such-host-xps:1") {
		t.Errorf("Start on a bad address: %v, want an error naming it", err)
	}
}
