package shard

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/snapshot"
)

// Snapshot throughput of one shard against the disk (issue 6):
//
//	go test -run '^$' -bench BenchmarkSnapshot -benchtime 1x -count 3 ./ams/shard
//	XPS_SNAPSHOT_ROWS=1000000,10000000 XPS_SNAPSHOT_DIR=/mnt/disk go test ...
//
// One shard (GOMAXPROCS stripes) holds a table of rows of dim 16 with
// Adagrad state (136 bytes a row encoded). Sub-benchmarks, per row count:
//
//   - write: WriteSnapshot and the manifest's Commit into a DirStore.
//   - restore: Restore of that snapshot into a fresh shard, its files first
//     dropped from the page cache (posix_fadvise DONTNEED), so the rows come
//     from the disk.
//   - seqwrite: the snapshot's byte count written to one file in the same
//     directory through a 1 MiB buffer, then fsynced with its directory, as
//     DirStore commits a file.
//
// write and restore each pair every timed iteration with an untimed
// seqwrite of the same bytes right after it, and report rows/s, MB/s, the
// paired seqwrites' MB/s (seqMB/s), "ratio": their MB/s over the paired
// seqwrites' (the target is at least 0.5), so the ratio is taken
// in the same run at nearly the same moment, and the CPU seconds the
// process used per operation (cpu-s/op). MB are 10^6 bytes of the
// snapshot's files (table files, dense files, manifest).

const (
	snapBenchDim   = 16
	snapBenchBatch = 1 << 16
)

var snapBenchSpec = ams.TableSpec{Name: "emb", Dim: snapBenchDim,
	Optimizer: ams.OptimizerSpec{Name: ams.OptAdagrad, LR: 0.05},
	Init:      ams.InitSpec{Kind: ams.InitUniform, Scale: 0.1, Seed: 1}}

// snapBenchRows returns the row counts to measure: XPS_SNAPSHOT_ROWS
// (comma-separated) or 1M.
func snapBenchRows(b *testing.B) []int {
	env := os.Getenv("XPS_SNAPSHOT_ROWS")
	if env == "" {
		return []int{1_000_000}
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("XPS_SNAPSHOT_ROWS=%q: want row counts separated by commas", env)
		}
		out = append(out, n)
	}
	return out
}

// snapBenchDir returns a fresh directory for the snapshots: under
// XPS_SNAPSHOT_DIR when set (to choose the disk), else b.TempDir().
func snapBenchDir(b *testing.B) string {
	root := os.Getenv("XPS_SNAPSHOT_DIR")
	if root == "" {
		return b.TempDir()
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp(root, "xps-snapbench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func rowsName(n int) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("rows=%dM", n/1_000_000)
	case n%1_000 == 0:
		return fmt.Sprintf("rows=%dk", n/1_000)
	}
	return fmt.Sprintf("rows=%d", n)
}

func BenchmarkSnapshot(b *testing.B) {
	for _, n := range snapBenchRows(b) {
		b.Run(rowsName(n), func(b *testing.B) { benchSnapshot(b, n) })
	}
}

// snapFixture is one filled shard, its store and its latest snapshot.
type snapFixture struct {
	dir   string
	store *snapshot.DirStore
	src   *Shard
	rows  int
	seq   uint64
	m     *snapshot.Manifest // the latest snapshot written
	bytes int64              // its files' bytes
}

func benchSnapshot(b *testing.B, rows int) {
	f := &snapFixture{dir: snapBenchDir(b), rows: rows}
	var err error
	if f.store, err = snapshot.OpenDir(filepath.Join(f.dir, "store")); err != nil {
		b.Fatal(err)
	}
	f.src = New(Options{ID: "ams-0"})
	defer f.src.Close()
	start := time.Now()
	fillSnapBenchShard(b, f.src, rows)
	b.Logf("filled %d rows in %v (%d stripes)", rows, time.Since(start).Round(time.Millisecond), len(f.src.stripes))
	f.write(b) // the snapshot restore reads, and its size for seqwrite
	f.inspect(b)
	// The process's first write of that many bytes to a new file runs at a
	// fraction of the later ones' speed on our VMs (the page cache grows
	// into memory the guest has not used yet), so it is not a measure.
	f.seqwrite(b)

	b.Run("write", func(b *testing.B) {
		var snap, seq, cpu time.Duration
		for range b.N {
			b.StopTimer()
			f.prune(b)
			b.StartTimer()
			t0, c0 := time.Now(), cpuTime(b)
			f.write(b)
			snap += time.Since(t0)
			cpu += cpuTime(b) - c0
			b.StopTimer()
			f.inspect(b)
			seq += f.seqwrite(b)
			b.StartTimer()
		}
		f.report(b, snap, seq, cpu)
	})
	b.Run("restore", func(b *testing.B) {
		var snap, seq, cpu time.Duration
		for range b.N {
			b.StopTimer()
			f.dropCache(b)
			dst := New(Options{ID: "ams-0"})
			b.StartTimer()
			t0, c0 := time.Now(), cpuTime(b)
			err := dst.Restore(f.store, f.m, Ownership{Index: 0, Shards: 1,
				Row: func(string, uint64) bool { return true }, State: func(string) bool { return true }})
			snap += time.Since(t0)
			cpu += cpuTime(b) - c0
			b.StopTimer()
			if err != nil {
				dst.Close()
				b.Fatal(err)
			}
			st, err := dst.Stats()
			dst.Close()
			if err != nil {
				b.Fatal(err)
			}
			if got := int(st.Tables[0].Rows); got != rows {
				b.Fatalf("restored %d rows, want %d", got, rows)
			}
			seq += f.seqwrite(b)
			b.StartTimer()
		}
		f.report(b, snap, seq, cpu)
	})
	b.Run("seqwrite", func(b *testing.B) {
		var seq time.Duration
		for range b.N {
			seq += f.seqwrite(b)
		}
		b.ReportMetric(float64(f.bytes)*float64(b.N)/seq.Seconds()/1e6, "MB/s")
		b.ReportMetric(float64(f.bytes)/float64(f.rows), "B/row")
	})
}

// fillSnapBenchShard declares the table and pushes rows random ids with
// random gradients, so that every row carries Adagrad state.
func fillSnapBenchShard(b *testing.B, s *Shard, rows int) {
	if _, err := s.Declare(1, []ams.TableSpec{snapBenchSpec}, nil); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(rows), 6))
	ids := make([]uint64, 0, snapBenchBatch)
	grads := make([]float32, snapBenchBatch*snapBenchDim)
	for i := range grads {
		grads[i] = float32(rng.NormFloat64())
	}
	seen := make(map[uint64]struct{}, rows)
	for done := 0; done < rows; {
		ids = ids[:0]
		for len(ids) < min(snapBenchBatch, rows-done) {
			id := rng.Uint64()
			if _, dup := seen[id]; !dup {
				seen[id] = struct{}{}
				ids = append(ids, id)
			}
		}
		if err := s.Push(1, []ams.TableRequest{{Table: "emb", IDs: ids, Rows: grads[:len(ids)*snapBenchDim]}}); err != nil {
			b.Fatal(err)
		}
		done += len(ids)
	}
}

// write writes the next snapshot and commits its manifest.
func (f *snapFixture) write(b *testing.B) {
	f.seq++
	m := &snapshot.Manifest{Seq: f.seq, Version: 1, Shards: 1}
	part, err := f.src.WriteSnapshot(f.store, f.seq, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Add(part); err != nil {
		b.Fatal(err)
	}
	if err := snapshot.Commit(f.store, m); err != nil {
		b.Fatal(err)
	}
	f.m = m
}

// inspect counts the latest snapshot's bytes and checks its rows.
func (f *snapFixture) inspect(b *testing.B) {
	var rows int64
	f.bytes = 0
	err := filepath.WalkDir(filepath.Join(f.store.String(), f.m.Dir()), func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			f.bytes += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, fm := range f.m.Tables[0].Files {
		rows += fm.Rows
	}
	if rows != int64(f.rows) {
		b.Fatalf("snapshot holds %d rows, want %d", rows, f.rows)
	}
}

// prune removes every snapshot but the latest, to bound the disk used.
func (f *snapFixture) prune(b *testing.B) {
	if _, err := snapshot.Prune(f.store, 1); err != nil {
		b.Fatal(err)
	}
}

// dropCache evicts the latest snapshot's files from the page cache (they
// were fsynced, so their pages are clean and DONTNEED drops them).
func (f *snapFixture) dropCache(b *testing.B) {
	err := filepath.WalkDir(filepath.Join(f.store.String(), f.m.Dir()), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fd, err := os.Open(p)
		if err != nil {
			return err
		}
		defer fd.Close()
		return unix.Fadvise(int(fd.Fd()), 0, 0, unix.FADV_DONTNEED)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// seqwrite writes f.bytes bytes to one new file in the snapshot's
// directory through a 1 MiB buffer, fsyncs it and the directory (as
// DirStore's Commit does), removes it and returns the time taken.
func (f *snapFixture) seqwrite(b *testing.B) time.Duration {
	buf := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i+8 <= len(buf); i += 8 { // incompressible, as float rows are
		v := rng.Uint64()
		for k := range 8 {
			buf[i+k] = byte(v >> (8 * k))
		}
	}
	p := filepath.Join(f.dir, "seqwrite")
	t0 := time.Now()
	fd, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(fd, len(buf))
	for left := f.bytes; left > 0; {
		n := min(left, int64(len(buf)))
		if _, err := w.Write(buf[:n]); err != nil {
			b.Fatal(err)
		}
		left -= n
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := fd.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := fd.Close(); err != nil {
		b.Fatal(err)
	}
	d, err := os.Open(f.dir)
	if err != nil {
		b.Fatal(err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		b.Fatal(err)
	}
	dt := time.Since(t0)
	if err := os.Remove(p); err != nil {
		b.Fatal(err)
	}
	return dt
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report reports rows/s and MB/s of snap (the timed snapshot operations),
// the ratio of its MB/s to that of seq (the paired seqwrites), and the CPU
// seconds the process used per operation (cpu: on 2 cores, a snapshot
// that needs more than twice its seqwrite's time in CPU cannot reach half
// its speed).
func (f *snapFixture) report(b *testing.B, snap, seq, cpu time.Duration) {
	n := float64(b.N)
	b.ReportMetric(cpu.Seconds()/n, "cpu-s/op")
	b.ReportMetric(float64(f.rows)*n/snap.Seconds(), "rows/s")
	b.ReportMetric(float64(f.bytes)*n/snap.Seconds()/1e6, "MB/s")
	b.ReportMetric(float64(f.bytes)*n/seq.Seconds()/1e6, "seqMB/s")
	b.ReportMetric(seq.Seconds()/snap.Seconds(), "ratio")
}

// TestSortIDs checks the radix sort of writeTable against slices.Sort, on
// random ids, small ids (the high-byte passes skipped), duplicates and
// short lists.
func TestSortIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{0, 1, 5, 1023, 1024, 5000, 100_000} {
		for _, gen := range []func() uint64{
			rng.Uint64,
			func() uint64 { return rng.Uint64N(1 << 20) },
			func() uint64 { return rng.Uint64N(4) << 40 },
		} {
			ids := make([]uint64, n)
			for i := range ids {
				ids[i] = gen()
			}
			want := slices.Clone(ids)
			slices.Sort(want)
			sortIDs(ids)
			if !slices.Equal(ids, want) {
				t.Fatalf("sortIDs of %d ids differs from slices.Sort", n)
			}
		}
	}
}
