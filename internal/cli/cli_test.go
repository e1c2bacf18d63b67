package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func readyz(t *testing.T, p *Proc) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + p.Ops.Addr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReadyUntilSignal: the process is ready while it runs; the moment
// its signal context ends (SIGTERM), readiness goes false, while the
// endpoint still answers and the process finishes its work.
func TestReadyUntilSignal(t *testing.T) {
	p := Proc{Level: "info", Format: "json", HTTP: "127.0.0.1:0"}
	var logs strings.Builder
	if err := p.Start(&logs, "worker", "worker-0"); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if code, _ := readyz(t, &p); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before ReadyUntil = %d, want 503", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.ReadyUntil(ctx)
	if code, _ := readyz(t, &p); code != http.StatusOK {
		t.Fatalf("/readyz while running = %d, want 200", code)
	}
	cancel() // the signal
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := readyz(t, &p)
		if code == http.StatusServiceUnavailable && strings.Contains(body, "stopping") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after the signal = %d %q, want 503 stopping", code, body)
		}
		time.Sleep(time.Millisecond)
	}
	var version uint64 = 7
	p.SetVersion(func() uint64 { return version })
	p.Log.Info("restored")
	if !strings.Contains(logs.String(), `"version":7`) {
		t.Errorf("after SetVersion, log lines %q lack the version", logs.String())
	}
	p.Log.Info("restore done", "version", 8)
	if strings.Count(logs.String(), `"version"`) != 2 || !strings.Contains(logs.String(), `"version":8`) {
		t.Errorf("a line naming its version got a second one: %q", logs.String())
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(logs.String(), "\n", 2)[0]), &line); err != nil {
		t.Fatalf("-log-format json wrote %q: %v", logs.String(), err)
	}
	if line["proc"] != "worker" || line["id"] != "worker-0" || line["pid"] == nil {
		t.Errorf("log line %v: want proc, id and pid on every line", line)
	}
}

func TestBadLogFlags(t *testing.T) {
	for _, p := range []Proc{{Level: "loud", Format: "text"}, {Level: "info", Format: "xml"}} {
		if err := p.Start(io.Discard, "x", ""); err == nil {
			t.Errorf("Start with -log-level %q -log-format %q: no error", p.Level, p.Format)
		}
	}
}

func TestFatalLine(t *testing.T) {
	for _, tc := range []struct{ prog, err, want string }{
		{"worker", "worker: no data: x", "worker: no data: x"},
		{"worker", "job: lost", "worker: job: lost"},
		{"ams", "amsnode: worker: x", "ams: amsnode: worker: x"},
	} {
		if got := FatalLine(tc.prog, errors.New(tc.err)); got != tc.want {
			t.Errorf("FatalLine(%q, %q) = %q, want %q", tc.prog, tc.err, got, tc.want)
		}
	}
}

// TestProfiles: -cpuprofile and -memprofile write their profiles when
// stopped, and the memory profile counts every allocation.
func TestProfiles(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	dir := t.TempDir()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var p Profiles
	p.Bind(fs)
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	if err := fs.Parse([]string{"-cpuprofile", cpu, "-memprofile", mem}); err != nil {
		t.Fatal(err)
	}
	stop, err := p.Start()
	if err != nil {
		t.Fatal(err)
	}
	if runtime.MemProfileRate != 1 {
		t.Fatalf("MemProfileRate %d with -memprofile, want 1", runtime.MemProfileRate)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{cpu, mem} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v (size %v)", f, err, st)
		}
	}
}

// TestSetGCPercent: -gc-percent sets the collector's target, unless GOGC
// is set.
func TestSetGCPercent(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	t.Setenv("GOGC", "")
	SetGCPercent(37)
	if got := debug.SetGCPercent(100); got != 37 {
		t.Fatalf("GC percent %d after SetGCPercent(37) without GOGC, want 37", got)
	}
	t.Setenv("GOGC", "100")
	SetGCPercent(37)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent %d after SetGCPercent(37) with GOGC set, want GOGC's 100", got)
	}
}
