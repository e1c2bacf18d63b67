package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/serve"
	"github.com/xdlgo/xps/serve/servepb"
	"github.com/xdlgo/xps/snapshot"
)

// copyExport copies export m of the store in directory src to the store
// in directory dst (made if missing) as export seq, a full export
// (m must be one), and returns its manifest.
func copyExport(t testing.TB, src, dst string, m *export.Manifest, seq uint64) *export.Manifest {
	t.Helper()
	from := filepath.Join(src, m.Dir())
	to := filepath.Join(dst, export.Dir(seq))
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(to, export.ManifestName)); err != nil {
		t.Fatal(err)
	}
	store, err := snapshot.OpenDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c := *m
	c.Seq, c.Full, c.Checksum = seq, seq, ""
	if err := export.Commit(store, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// probe is a candidate of one feature whose row the tests set in deltas.
const probe = "3:probe"

var probeID = reader.FeatureID(3, []byte("probe"))

// twoStores returns the tests' small model's store and a second store
// of the same model with a delta on it that moves the probe's row, so
// that the two score the probe differently; and the full export.
func twoStores(t *testing.T) (a, b string, m *export.Manifest) {
	a, _, m = exportedModel(t)
	b = filepath.Join(t.TempDir(), "b")
	copyExport(t, a, b, m, m.Seq)
	store, err := snapshot.OpenDir(b)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	writeDelta(t, store, m, m.Seq+1, m.Seq, map[uint64]float32{probeID: 0.5}, nil)
	return a, b, m
}

// predictAt posts a request of the candidates to url (a Set's
// /predict?model=...) and returns the status and the answer.
func predictAt(t *testing.T, url string, cands ...string) (int, serve.Response, string) {
	t.Helper()
	body, _ := json.Marshal(serve.Request{User: "0:u1", Candidates: cands})
	resp, err := http.Post(url, "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r serve.Response
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, r, string(b)
}

// TestSetServesModelsSideBySide: two models in one Set, each from its own
// store with its own limits, answer as their own servers alone would,
// over HTTP (?model=NAME) and gRPC (the model field); a request that
// names no model (with several and none named "default") or an unknown
// one is answered 404 / NOT_FOUND naming the models; /status and the
// metrics report each model under its name.
func TestSetServesModelsSideBySide(t *testing.T) {
	a, b, m := twoStores(t)
	alone := map[string]float32{}
	for name, dir := range map[string]string{"a": a, "b": b} {
		s, err := serve.New(serve.Options{Store: dir})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Predict(&serve.Request{User: "0:u1", Candidates: []string{probe}})
		if err != nil {
			t.Fatal(err)
		}
		alone[name] = r.Scores[0]
		s.Close()
	}
	if alone["a"] == alone["b"] {
		t.Fatalf("the two stores score the probe alike (%v): the test cannot tell them apart", alone["a"])
	}
	reg := prometheus.NewPedanticRegistry()
	set, err := serve.NewSet(serve.SetOptions{
		Models:   []serve.Model{{Name: "a", Store: a}, {Name: "b", Store: b, Limits: serve.Limits{MaxCandidates: 2}}},
		Defaults: serve.Options{Metrics: reg},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	hs := httptest.NewServer(set.Handler())
	defer hs.Close()
	for name, want := range alone {
		code, r, body := predictAt(t, hs.URL+"/predict?model="+name, probe)
		if code != 200 || r.Scores[0] != want {
			t.Fatalf("model %s: %d %s, want the score %v", name, code, body, want)
		}
	}
	if code, _, body := predictAt(t, hs.URL+"/predict?model=b", probe, probe, probe); code != 400 {
		t.Errorf("3 candidates to b (its limit 2): %d %s, want 400", code, body)
	}
	if code, _, body := predictAt(t, hs.URL+"/predict?model=a", probe, probe, probe); code != 200 {
		t.Errorf("3 candidates to a (the default limit): %d %s", code, body)
	}
	for _, url := range []string{"/predict", "/predict?model=c"} {
		if code, _, body := predictAt(t, hs.URL+url, probe); code != 404 || !strings.Contains(body, "a, b") {
			t.Errorf("%s: %d %s, want 404 naming a, b", url, code, body)
		}
	}
	c := grpcClient(t, set)
	got, err := c.Predict(context.Background(), &servepb.PredictRequest{Model: "b", User: "0:u1", Candidates: []string{probe}})
	if err != nil || got.Scores[0] != alone["b"] {
		t.Fatalf("gRPC, model b: %v, %v; want %v", got, err, alone["b"])
	}
	if _, err := c.Predict(context.Background(), &servepb.PredictRequest{Model: "c", Candidates: []string{probe}}); status.Code(err) != codes.NotFound {
		t.Errorf("gRPC, model c: %v, want NOT_FOUND", err)
	}
	checkSetStatus(t, hs.URL, m)
	if n, err := promtest.GatherAndCount(reg, "xps_serve_model_export"); n != 2 || err != nil {
		t.Errorf("%d series of xps_serve_model_export (%v), want one per model", n, err)
	}
	counted := countedByModel(t, reg)
	// a: the probe and 3 candidates over HTTP; b: the same (the 3 refused)
	// and the probe over gRPC; the 404s belong to no model.
	if counted["a"] != 2 || counted["b"] != 3 {
		t.Errorf("requests counted by model: %v, want a 2, b 3", counted)
	}
}

// countedByModel sums xps_serve_requests_total in reg by label model.
func countedByModel(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	counted := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "xps_serve_requests_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "model" {
					counted[l.GetValue()] += mt.GetCounter().GetValue()
				}
			}
		}
	}
	return counted
}

// checkSetStatus: a Set's /status names both models with their exports,
// /status?model=b b's alone, /healthz is ok.
func checkSetStatus(t *testing.T, url string, m *export.Manifest) {
	t.Helper()
	var all serve.SetStatus
	getJSON(t, url+"/status", &all)
	if len(all.Models) != 2 || all.Models["a"].Export != m.Seq || all.Models["b"].Export != m.Seq+1 {
		t.Errorf("/status: %+v, want a at export %d and b at %d", all, m.Seq, m.Seq+1)
	}
	var b serve.Status
	getJSON(t, url+"/status?model=b", &b)
	if b.Export != m.Seq+1 || b.Memory.Tables == 0 {
		t.Errorf("/status?model=b: %+v", b)
	}
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// writeModels writes a models file of the models to path.
func writeModels(t *testing.T, path string, models ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("models:\n"+strings.Join(models, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSetModelsFile: the models file's changes are applied (Reload): a
// model added is served; a model removed answers 404 at once but is
// dropped only after the requests in it end; a model whose store
// changed serves the new store; a file that cannot be used (two models
// sharing a store, an unknown key, a bad name, a negative bound) changes
// nothing and is reported in SetStatus.
func TestSetModelsFile(t *testing.T) {
	a, b, m := twoStores(t)
	file := filepath.Join(t.TempDir(), "models.yaml")
	writeModels(t, file, "  - {name: a, store: "+a+"}", "  - {name: b, store: "+b+"}")
	set, err := serve.NewSet(serve.SetOptions{File: file})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	hs := httptest.NewServer(set.Handler())
	defer hs.Close()
	held, done, err := set.Server("b") // a request in b, held
	if err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(t.TempDir(), "c")
	copyExport(t, a, c, m, m.Seq)
	writeModels(t, file, "  - {name: a, store: "+a+"}", "  - {name: c, store: "+c+"}")
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	if code, _, body := predictAt(t, hs.URL+"/predict?model=b", probe); code != 404 {
		t.Errorf("b, removed: %d %s, want 404", code, body)
	}
	if code, _, body := predictAt(t, hs.URL+"/predict?model=c", probe); code != 200 {
		t.Errorf("c, added: %d %s", code, body)
	}
	if r, err := held.Predict(&serve.Request{Candidates: []string{probe}}); err != nil || r.Version != m.Seq+1 {
		t.Errorf("the request held in b, removed: %+v, %v; want it scored by b until it ends", r, err)
	}
	done()
	for _, bad := range []struct {
		file []string
		want string
	}{
		{[]string{"  - {name: a, store: " + a + "}", "  - {name: c, store: " + a + "}"}, "share the store"},
		{[]string{"  - {name: a, store: " + a + ", max_inflight: 3}"}, "max_inflight"},
		{[]string{"  - {name: a, store: " + a + "}", "  - {name: d/x, store: " + filepath.Join(t.TempDir(), "d") + "}"}, `name "d/x"`},
		{[]string{"  - {name: a, store: " + a + ", max_bytes: -1}"}, "negative"},
	} {
		writeModels(t, file, bad.file...)
		if err := set.Reload(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("models file %q: %v, want an error naming %q", bad.file, err, bad.want)
		}
		st := set.Status()
		if !strings.Contains(st.FileError, bad.want) || len(st.Models) != 2 || st.Models["c"].Export != m.Seq {
			t.Errorf("after a refused file: %+v, want a and c served and the error", st)
		}
	}
	writeModels(t, file, "  - {name: a, store: "+b+"}", "  - {name: c, store: "+c+"}")
	if err := set.Reload(); err != nil {
		t.Fatal(err)
	}
	if code, r, body := predictAt(t, hs.URL+"/predict?model=a", probe); code != 200 || r.Version != m.Seq+1 {
		t.Errorf("a, moved to b's store: %d %s, want export %d", code, body, m.Seq+1)
	}
	if st := set.Status(); st.FileError != "" {
		t.Errorf("file error after a good file: %q", st.FileError)
	}
}

// TestMemoryLimit: Options.MaxBytes refuses a new full export that would
// pass it beside the model serving (a reload holds both) and a delta
// whose rows would; the last good version keeps serving and the error is
// in Status; a full export and a delta written onto it while it loaded
// are applied together.
func TestMemoryLimit(t *testing.T) {
	dir, _, m := exportedModel(t)
	s, err := serve.New(serve.Options{Store: dir})
	if err != nil {
		t.Fatal(err)
	}
	tables := s.Status().Memory.Tables
	s.Close()
	s, err = serve.New(serve.Options{Store: dir, MaxBytes: tables + tables/2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	copyExport(t, dir, dir, m, m.Seq+10)
	if _, err := s.Update(); !errors.Is(err, serve.ErrMemoryLimit) {
		t.Fatalf("a full export beside the model within 1.5x of it: %v, want ErrMemoryLimit", err)
	}
	if seq, _ := s.Version(); seq != m.Seq || !strings.Contains(s.Status().Error, "memory limit") {
		t.Fatalf("after the refused reload: export %d (want %d), status error %q", seq, m.Seq, s.Status().Error)
	}
	if _, err := s.Predict(&serve.Request{Candidates: []string{probe}}); err != nil {
		t.Fatal(err)
	}

	d := filepath.Join(t.TempDir(), "d")
	copyExport(t, dir, d, m, m.Seq)
	store, err := snapshot.OpenDir(d)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	limited, err := serve.New(serve.Options{Store: d, MaxBytes: tables + 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer limited.Close()
	rows := map[uint64]float32{}
	for i := range uint64(1000) {
		rows[i<<40|12345] = 0.25
	}
	writeDelta(t, store, m, m.Seq+1, m.Seq, rows, nil)
	if _, err := limited.Update(); !errors.Is(err, serve.ErrMemoryLimit) {
		t.Fatalf("a delta of 1,000 new rows 1,000 bytes below the limit: %v, want ErrMemoryLimit", err)
	}
	if seq, _ := limited.Version(); seq != m.Seq {
		t.Fatalf("after the refused delta: export %d, want %d", seq, m.Seq)
	}

	// A new full export and a delta onto it, both there when the server
	// looks (the delta was written while the full one loaded): both apply.
	e := filepath.Join(t.TempDir(), "e")
	copyExport(t, dir, e, m, m.Seq)
	es, err := serve.New(serve.Options{Store: e})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	estore, err := snapshot.OpenDir(e)
	if err != nil {
		t.Fatal(err)
	}
	defer estore.Close()
	full := copyExport(t, dir, e, m, m.Seq+5)
	writeDelta(t, estore, full, m.Seq+6, m.Seq+5, map[uint64]float32{probeID: 0.5}, nil)
	if changed, err := es.Update(); err != nil || !changed {
		t.Fatalf("a full export and its delta: %v, %v", changed, err)
	}
	if seq, _ := es.Version(); seq != m.Seq+6 || !slices.Contains([]uint64{m.Seq + 5}, es.Status().Full) {
		t.Fatalf("serving export %d of full %d, want %d of %d", seq, es.Status().Full, m.Seq+6, m.Seq+5)
	}
}

// TestStoreFlag: serve's -store values: LOC alone is the model
// "default", NAME=LOC names it; a path with '=' in a directory's name is
// a location.
func TestStoreFlag(t *testing.T) {
	var f serve.StoreFlag
	for _, v := range []string{"/exports/a", "exp-1=hdfs://nn:9000/x", "/data/k=v/exports"} {
		if err := f.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	want := []serve.Model{{Name: "default", Store: "/exports/a"}, {Name: "exp-1", Store: "hdfs://nn:9000/x"}, {Name: "default", Store: "/data/k=v/exports"}}
	if !slices.Equal(f, want) {
		t.Fatalf("%+v, want %+v", f, want)
	}
	if err := f.Set("a="); err == nil {
		t.Error(`"a=" accepted`)
	}
}

// TestReloadUnderRequests: requests scored while new full exports load
// and switch in, each replaced model's memory given back as soon as its
// requests end (unmapped: a request still reading it would fault), all
// succeed with a version served.
func TestReloadUnderRequests(t *testing.T) {
	dir, _, m := exportedModel(t)
	s, err := serve.New(serve.Options{Store: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stop := make(chan struct{})
	errs, started := make(chan error, 4), make(chan struct{}, 4)
	for range 4 {
		go func() {
			for n := 0; ; n++ {
				_, err := s.Predict(&serve.Request{User: "0:u1", Candidates: []string{probe, "1:a 2:b"}})
				if n == 0 {
					started <- struct{}{}
				}
				if err != nil {
					errs <- err
					return
				}
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
			}
		}()
	}
	for range 4 { // every goroutine scoring before the first reload
		<-started
	}
	for i := range uint64(6) {
		copyExport(t, dir, dir, m, m.Seq+10+i)
		if _, err := s.Update(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if seq, _ := s.Version(); seq != m.Seq+15 {
		t.Fatalf("serving export %d, want %d", seq, m.Seq+15)
	}
}

// TestCloseGivesBackTheModel: after Close, a request is answered
// ErrNotReady (the model's memory was given back, not read after), and
// Update does nothing.
func TestCloseGivesBackTheModel(t *testing.T) {
	dir, _, _ := exportedModel(t)
	s, err := serve.New(serve.Options{Store: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Predict(&serve.Request{Candidates: []string{probe}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Predict(&serve.Request{Candidates: []string{probe}}); !errors.Is(err, serve.ErrNotReady) {
		t.Errorf("a request after Close: %v, want ErrNotReady", err)
	}
	if changed, err := s.Update(); changed || err == nil {
		t.Errorf("Update after Close: %v, %v", changed, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestLargeRequestInBatches: a request of more candidates than a scorer
// takes at once (scored in batches) scores each candidate as a request
// of that candidate alone does.
func TestLargeRequestInBatches(t *testing.T) {
	dir, _, _ := exportedModel(t)
	s, err := serve.New(serve.Options{Store: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var cands []string
	for i := range 600 {
		cands = append(cands, fmt.Sprintf("1:a%d 2:b%d 3:c%d", i%37, i%11, i))
	}
	all, err := s.Predict(&serve.Request{User: "0:u7", Candidates: cands})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 255, 256, 257, 511, 512, 599} {
		one, err := s.Predict(&serve.Request{User: "0:u7", Candidates: cands[i : i+1]})
		if err != nil {
			t.Fatal(err)
		}
		if one.Scores[0] != all.Scores[i] {
			t.Errorf("candidate %d: %v in the request of 600, %v alone", i, all.Scores[i], one.Scores[0])
		}
	}
}
