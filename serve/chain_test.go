package serve_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/serve"
	"github.com/xdlgo/xps/snapshot"
)

// exportedModel trains the tests' small model with its final model
// exported (fp32) and returns the export store's directory, the store and
// the one full export in it.
func exportedModel(t testing.TB) (string, snapshot.Store, *export.Manifest) {
	t.Helper()
	dir, _, _ := trainAndExport(t, "libffm", export.FP32)
	store, err := snapshot.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	full, _, err := export.Next(store, nil)
	if err != nil || len(full) != 1 {
		t.Fatalf("the trainer's exports: %d, %v", len(full), err)
	}
	return dir, store, full[0]
}

// writeDelta writes export seq onto base (full) in store: table "emb"'s
// row of each id of set set to val, each id of del deleted, the dense
// parameters and everything else copied from the manifest m.
func writeDelta(t testing.TB, store snapshot.Store, m *export.Manifest, seq, base uint64, set map[uint64]float32, del []uint64) {
	t.Helper()
	tab := m.Tables[0]
	keys := map[uint64]bool{}
	for id := range set {
		keys[id] = false
	}
	for _, id := range del {
		keys[id] = true
	}
	sorted := make([]uint64, 0, len(keys))
	for id := range keys {
		sorted = append(sorted, id)
	}
	slices.Sort(sorted)
	tw, err := snapshot.CreateTableFile(store, export.Dir(seq), export.TableName(tab.Name, 0), true)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]float32, tab.Dim)
	for _, id := range sorted {
		if keys[id] {
			err = tw.Delete(id)
		} else {
			for i := range row {
				row[i] = set[id]
			}
			err = tw.Add(id, export.AppendRow(nil, tab.Quant, row))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := tw.Close()
	if err != nil {
		t.Fatal(err)
	}
	files := []snapshot.FileMeta{f}
	for i := 1; i < m.Shards; i++ { // the other shards changed nothing
		tw, err := snapshot.CreateTableFile(store, export.Dir(seq), export.TableName(tab.Name, i), true)
		if err != nil {
			t.Fatal(err)
		}
		f, err := tw.Close()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	d := *m
	d.Seq, d.Kind, d.Base, d.Full, d.Checksum = seq, export.KindDelta, base, m.Full, ""
	d.Tables = []export.Table{tab}
	d.Tables[0].Files = files
	d.Dense = nil
	for _, dv := range m.Dense {
		v, err := export.ReadDense(store, m, dv.Name)
		if err != nil {
			t.Fatal(err)
		}
		df, err := snapshot.WriteFileIn(store, export.Dir(seq), export.DenseName(dv.Name, 0), export.AppendRow(nil, export.FP32, v))
		if err != nil {
			t.Fatal(err)
		}
		d.Dense = append(d.Dense, export.Dense{Name: dv.Name, Len: dv.Len, Parts: []export.DensePart{{Lo: 0, Hi: dv.Len, File: df}}})
	}
	if err := export.Commit(store, &d); err != nil {
		t.Fatal(err)
	}
}

// TestFollowsTheChain: a server applies each new delta (rows changed and
// rows deleted), every request sees one whole version while deltas are
// applied, a corrupt or unlinked delta is refused with the server staying
// on the last good version, and a restarted server rebuilds the chain.
func TestFollowsTheChain(t *testing.T) {
	dir, store, m := exportedModel(t)
	// The candidate: one feature; its id's row moves with each version.
	cand := "3:probe"
	id := reader.FeatureID(3, []byte("probe"))
	s, err := serve.New(serve.Options{Store: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[uint64]float32{} // score of cand by version
	predict := func(s *serve.Server) (uint64, float32) {
		r, err := s.Predict(&serve.Request{User: "0:u1", Candidates: []string{cand}})
		if err != nil {
			t.Error(err)
			return 0, 0
		}
		return r.Version, r.Scores[0]
	}
	v, x := predict(s)
	want[v] = x
	for seq, val := range map[uint64]float32{m.Seq + 1: 1} {
		writeDelta(t, store, m, seq, m.Seq, map[uint64]float32{id: val}, nil)
	}
	writeDelta(t, store, m, m.Seq+2, m.Seq+1, nil, []uint64{id})
	// Sequentially, on a second server: the score of each version.
	s2, err := serve.New(serve.Options{Store: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if v, x := predict(s2); v != m.Seq+2 || x != want[m.Seq] {
		t.Fatalf("a new server at export %d scores %v: the deleted row must read as its initial value, as at export %d (%v)",
			v, x, m.Seq, want[m.Seq])
	}
	mem := checkMemory(t, s, nil)
	checkWholeVersions(t, s, predict, m.Seq+2, want[m.Seq])
	checkMemory(t, s, mem)
	checkRefusals(t, s, store, dir, m, id)
	// An empty store: not ready, not an error.
	empty, err := serve.New(serve.Options{Store: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if _, err := empty.Predict(&serve.Request{Candidates: []string{cand}}); !errors.Is(err, serve.ErrNotReady) {
		t.Fatalf("an empty store: %v, want ErrNotReady", err)
	}
}

// checkMemory: s's accounting (Status.Memory) counts the served model's
// values (at least rows x dim 8 x 4 bytes) and its tables whole, and the
// deltas are applied in place: after them the tables take about what
// they took before (before: the accounting of the last check, nil at the
// first), not a second copy of the model. It returns the accounting.
func checkMemory(t *testing.T, s *serve.Server, before *serve.Memory) *serve.Memory {
	t.Helper()
	st := s.Status()
	m := st.Memory
	var rows int64
	for _, n := range st.Rows {
		rows += int64(n)
	}
	switch {
	case rows == 0 || m.Values < rows*8*4 || m.Values > rows*8*4+1<<20:
		t.Fatalf("memory %+v: values for %d rows of dim 8 and a small MLP", m, rows)
	case m.Tables < m.Values:
		t.Fatalf("memory %+v: the tables hold less than their values", m)
	case before != nil && m.Tables > before.Tables+before.Tables/10:
		t.Fatalf("memory %+v after deltas of one row, %+v before: a delta must not cost another copy of the model", m, *before)
	case m.Heap <= 0 || m.Runtime < m.Heap:
		t.Fatalf("memory %+v: the runtime's figures", m)
	case runtime.GOOS == "linux" && m.RSS <= 0:
		t.Fatalf("memory %+v: no resident set read", m)
	}
	return &m
}

// checkWholeVersions has four goroutines predict while s applies the
// deltas up to export last: every version answers one score (no request
// sees part of a delta), last's being lastScore.
func checkWholeVersions(t *testing.T, s *serve.Server, predict func(*serve.Server) (uint64, float32), last uint64, lastScore float32) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[uint64]map[float32]bool{}
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				v, x := predict(s)
				mu.Lock()
				if seen[v] == nil {
					seen[v] = map[float32]bool{}
				}
				seen[v][x] = true
				mu.Unlock()
			}
		}()
	}
	changed, err := s.Update()
	close(stop)
	wg.Wait()
	if err != nil || !changed {
		t.Fatalf("Update: %v, %v", changed, err)
	}
	if v, _ := s.Version(); v != last {
		t.Fatalf("serving export %d, want %d", v, last)
	}
	for v, xs := range seen {
		if len(xs) != 1 {
			t.Errorf("export %d answered %d different scores: a request saw part of a delta", v, len(xs))
		}
	}
	if xs := seen[last]; len(xs) == 1 && !xs[lastScore] {
		t.Errorf("export %d scored %v, want %v", last, xs, lastScore)
	}
}

// checkRefusals: a damaged delta, then a delta onto a missing link, are
// refused, s staying on export m.Seq+2; a restarted server too.
func checkRefusals(t *testing.T, s *serve.Server, store snapshot.Store, dir string, m *export.Manifest, id uint64) {
	t.Helper()
	// A damaged delta, then a delta onto a missing link: refused, the
	// server stays; a restarted server stays on the last good one too.
	writeDelta(t, store, m, m.Seq+3, m.Seq+2, map[uint64]float32{id: 2}, nil)
	f := filepath.Join(dir, export.Dir(m.Seq+3), export.TableName("emb", 0))
	b, _ := os.ReadFile(f)
	b[len(b)/2] ^= 0xff
	os.WriteFile(f, b, 0o644)
	if changed, err := s.Update(); changed || err != nil {
		t.Fatalf("Update over a damaged delta: changed %v, %v", changed, err)
	}
	os.RemoveAll(filepath.Join(dir, export.Dir(m.Seq+3)))
	writeDelta(t, store, m, m.Seq+4, m.Seq+3, map[uint64]float32{id: 2}, nil)
	if changed, _ := s.Update(); changed {
		t.Fatal("a delta onto a missing link was applied")
	}
	s3, err := serve.New(serve.Options{Store: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if v, _ := s3.Version(); v != m.Seq+2 {
		t.Fatalf("a restarted server serves export %d, want the last good %d", v, m.Seq+2)
	}
}

// BenchmarkDeltaInPlace measures what a delta of k rows costs the server
// (issue 52: memory in proportion to k, not a second copy of the model):
// each iteration writes a delta of k new rows onto the chain (not timed)
// and Update reads and applies it. Reported: the bytes allocated while
// Update runs and the growth of the tables, per row of the delta, and the
// model's tables before (the bytes a second copy would cost).
func BenchmarkDeltaInPlace(b *testing.B) {
	dir, store, m := exportedModel(b)
	s, err := serve.New(serve.Options{Store: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	seq, next := m.Seq, uint64(1)<<40 // new ids, above the trained ones' hashes' usual range
	for _, k := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("rows=%d", k), func(b *testing.B) {
			var allocated, grown int64
			model := s.Status().Memory.Tables
			for range b.N {
				b.StopTimer()
				set := make(map[uint64]float32, k)
				for range k {
					set[next] = 0.01
					next++
				}
				writeDelta(b, store, m, seq+1, seq, set, nil)
				seq++
				before := s.Status().Memory.Tables
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				b.StartTimer()
				if changed, err := s.Update(); err != nil || !changed {
					b.Fatalf("Update: %v, %v", changed, err)
				}
				b.StopTimer()
				runtime.ReadMemStats(&ms1)
				allocated += int64(ms1.TotalAlloc - ms0.TotalAlloc)
				grown += s.Status().Memory.Tables - before
				b.StartTimer()
			}
			rows := float64(b.N * k)
			b.ReportMetric(float64(allocated)/rows, "alloc-B/row")
			b.ReportMetric(float64(grown)/rows, "tables-B/row")
			b.ReportMetric(float64(model), "model-tables-B")
		})
	}
}

// TestDeltaDuringAReload: a delta written onto a new full export while
// the server loads that full export is applied by the update that loads
// it or by the next (the server ends at the delta either way, every
// request meanwhile scored by one whole version), and a delta of the
// replaced chain written after is refused, the server staying on the new
// chain.
func TestDeltaDuringAReload(t *testing.T) {
	dir, store, m := exportedModel(t)
	id := reader.FeatureID(3, []byte("probe"))
	s, err := serve.New(serve.Options{Store: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	full := copyExport(t, dir, dir, m, m.Seq+10)
	updated := make(chan error, 1)
	go func() {
		_, err := s.Update() // loads the new full export...
		updated <- err
	}()
	writeDelta(t, store, full, m.Seq+11, full.Seq, map[uint64]float32{id: 1}, nil) // ...while its delta is written
	for range 100 {
		if _, err := s.Predict(&serve.Request{User: "0:u1", Candidates: []string{probe}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	if seq, _ := s.Version(); seq != full.Seq+1 {
		if _, err := s.Update(); err != nil {
			t.Fatal(err)
		}
	}
	if seq, _ := s.Version(); seq != full.Seq+1 {
		t.Fatalf("serving export %d after the reload and one more update, want the delta written during it, %d", seq, full.Seq+1)
	}
	writeDelta(t, store, m, full.Seq+2, m.Seq, map[uint64]float32{id: 2}, nil) // onto the replaced chain
	if _, err := s.Update(); err != nil {
		t.Fatal(err)
	}
	if seq, _ := s.Version(); seq != full.Seq+1 {
		t.Fatalf("a delta of the replaced chain moved the server to export %d, want it on %d", seq, full.Seq+1)
	}
	if msg := s.Status().Error; msg != "" {
		t.Logf("status after the stray delta: %s", msg)
	}
}
