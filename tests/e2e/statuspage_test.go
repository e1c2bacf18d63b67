package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/tests/testutil"
)

// statusJob is a small generated job that trains until it is stopped, with
// a progress report every 300ms and an evaluation every 100 batches.
const statusJob = `
model:
  tables: [{name: emb, dim: 8, optimizer: {name: adagrad, lr: 0.05}, init: {kind: uniform, scale: 0.01}}]
  hidden: [16]
train: {batch_size: 128, epochs: 100000, progress_every: 300ms, eval_every: 100}
data: {train_samples: 20000, test_samples: 2000, fields: 8, user_fields: 3, vocab: 2000, mean_bag: 2}
`

// TestStatusPageChromium runs the README's first command, `worker -local`
// (no -http: the status page is on by default), reads the page's address
// from its output, waits until the page holds the worker's curves, then
// has headless Chromium (Debian's chromium) render it: the DOM it builds
// holds the state, the members, the worker and the SVG curves, and its
// screenshot is a PNG kept as the test's artifact (go test -artifacts
// -outputdir DIR keeps it; else it goes with the test's temporary files).
func TestStatusPageChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (Debian's chromium package; test.sh installs it as root): skipping the status page test")
	}
	bin := build(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(cfg, []byte(statusJob), 0o644); err != nil {
		t.Fatal(err)
	}
	w := start(t, "worker", filepath.Join(bin, "worker"), "-local", "-config", cfg)
	var url string
	testutil.Eventually(t, time.Minute, "the worker to print its status page's address", func() bool {
		m := regexp.MustCompile(`status page: (http://127\.0\.0\.1:[0-9]+/)`).FindStringSubmatch(w.output())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	// By progress: the page's figures hold a few training reports and an
	// evaluation's test AUC.
	testutil.Eventually(t, 2*time.Minute, "the status page to hold the worker's reports and a test AUC", func() bool {
		return statusReports(url) >= 10
	})
	ctx := testutil.Ctx(t, 2*time.Minute)
	dom := runChromium(t, ctx, chromium, dir, "--dump-dom", url)
	for _, want := range []string{`<b id="state">SERVING</b>`, "leads the cluster", "<td>ams-0</td>", "<td>ams-1</td>",
		"<td>worker-0</td>", `id="chart-throughput"><svg`, `id="chart-loss"><svg`, `id="chart-auc"><svg`,
		`data-series="worker-0"`, `data-series="worker-0 running"`, `data-series="worker-0 test"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the DOM Chromium rendered lacks %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("the DOM:\n%s", dom)
	}
	shot := filepath.Join(t.ArtifactDir(), "status-page.png")
	runChromium(t, ctx, chromium, dir, "--screenshot="+shot, "--window-size=1280,1600", url)
	checkPNG(t, shot, 1280, 1600)
	t.Logf("screenshot of %s: %s", url, shot)
}

// statusReports returns how many progress reports the page at url keeps of
// worker-0 when one of them has a test AUC, else 0.
func statusReports(url string) int {
	var s struct {
		Workers []struct {
			Name    string
			Reports []struct {
				TestAUC *float64 `json:"test_auc"`
			}
		}
	}
	if err := json.Unmarshal([]byte(fetch(url+"status.json")), &s); err != nil || len(s.Workers) != 1 {
		return 0
	}
	for _, r := range s.Workers[0].Reports {
		if r.TestAUC != nil {
			return len(s.Workers[0].Reports)
		}
	}
	return 0
}

// runChromium runs headless Chromium on url with args and returns its
// standard output. As root it needs --no-sandbox; its profile goes under
// dir.
func runChromium(t *testing.T, ctx context.Context, chromium, dir string, args ...string) string {
	t.Helper()
	args = append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + filepath.Join(dir, "chromium")}, args...)
	cmd := exec.CommandContext(ctx, chromium, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// checkPNG checks that path is a PNG image of w by h pixels that is not of
// one colour.
func checkPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot %s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() != w || b.Dy() != h {
		t.Fatalf("the screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	colours := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y && len(colours) < 3; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colours) < 3 {
		t.Fatalf("the screenshot holds %d colours: a blank page", len(colours))
	}
}

// fetch returns the body of a GET of url, "" on any failure.
func fetch(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(b)
}
