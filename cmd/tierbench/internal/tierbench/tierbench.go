package tierbench

import (
	"bufio"
	"context"

	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/shard"
)

// Options configure Run. Zero fields take their defaults.
type Options struct {
	// Rows is how many rows the table grows to. The default value is 10M.
	Rows int64
	// Dim is the row width. The default value is 16.
	Dim int
	// Batch is the unique ids of a batch. The default value is 4096.
	Batch int
	// NewFraction is the share of a batch's ids never seen before. The
	// default value is 0.5.
	NewFraction float64
	// ZipfS is the exponent of the law the other ids are drawn from. The
	// default value is 1.1.
	ZipfS float64
	// Budget is the DRAM budget in rows (0: none); with TierDir, the
	// table is tiered, its cold rows under TierDir.
	Budget  int64
	TierDir string
	// Stripes is the shard's stripe owners. The default value is 2.
	Stripes int
	// Every is the rows between CSV rows. The default value is Rows/50.
	Every int64
	// Seed selects the batches.
	Seed uint64
}

func (o *Options) ensureDefaults() {
	if o.Rows <= 0 {
		o.Rows = 10_000_000
	}
	if o.Dim <= 0 {
		o.Dim = 16
	}
	if o.Batch <= 0 {
		o.Batch = 4096
	}
	if o.NewFraction <= 0 || o.NewFraction > 1 {
		o.NewFraction = 0.5
	}
	if o.ZipfS <= 1 {
		o.ZipfS = 1.1
	}
	if o.Stripes <= 0 {
		o.Stripes = 2
	}
	if o.Every <= 0 {
		o.Every = max(o.Rows/50, 1)
	}
}

// Header is the CSV's first line.
const Header = "rows,dram_rows,cold_rows,rss_bytes,disk_bytes,ids_per_second,hit_ratio,disk_reads_per_batch,seconds"

// Run grows the table, writing the CSV to w, until it holds o.Rows rows or
// ctx ends.
func Run(ctx context.Context, o Options, w io.Writer) error {
	o.ensureDefaults()
	spec := ams.TableSpec{Name: "emb", Dim: o.Dim, Budget: ams.Budget{Rows: o.Budget}}
	sopts := shard.Options{ID: "ams-0", Stripes: o.Stripes}
	if o.TierDir != "" {
		spec.Storage = ams.StorageTiered
		sopts.TierDirs = []string{o.TierDir}
	}
	s := shard.New(sopts)
	defer s.Close()
	if _, err := s.Declare(ams.DefaultVersion, []ams.TableSpec{spec}, nil); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	fmt.Fprintln(bw, Header)
	r := &runner{o: o, s: s, rng: rand.New(rand.NewPCG(o.Seed, 25)), start: time.Now()}
	r.ids, r.buf = make([]uint64, 0, o.Batch), make([]float32, o.Batch*o.Dim)
	r.seen = make(map[uint64]struct{}, o.Batch)
	nextReport := o.Every
	for r.created < o.Rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.step(); err != nil {
			return err
		}
		if r.created >= nextReport || r.created >= o.Rows {
			if err := r.report(bw); err != nil {
				return err
			}
			bw.Flush()
			nextReport += o.Every
		}
	}
	return nil
}

type runner struct {
	o       Options
	s       *shard.Shard
	rng     *rand.Rand
	zipf    *rand.Zipf
	zipfMax int64
	created int64
	batches int64
	ids     []uint64
	buf     []float32
	seen    map[uint64]struct{}
	start   time.Time
	// since the last report
	lastT       time.Time
	lastPulled  int64
	lastBatches int64
	lastTier    ams.TierUsage
}

// draw fills r.ids with the next batch (invariant 1).
func (r *runner) draw() {
	o := r.o
	r.ids = r.ids[:0]
	clear(r.seen)
	fresh := int(math.Round(float64(o.Batch) * o.NewFraction))
	if r.created == 0 {
		fresh = o.Batch
	}
	for range fresh {
		r.add(uint64(r.created))
		r.created++
	}
	if r.zipfMax < r.created/2 || r.zipf == nil { // re-span the law as the table grows
		r.zipfMax = r.created
		r.zipf = rand.NewZipf(r.rng, o.ZipfS, 1, uint64(r.zipfMax-1))
	}
	for tries := 0; len(r.ids) < o.Batch && tries < 4*o.Batch; tries++ {
		r.add(r.zipf.Uint64())
	}
}

func (r *runner) add(rank uint64) {
	id := ams.Mix64(rank)
	if _, dup := r.seen[id]; !dup {
		r.seen[id] = struct{}{}
		r.ids = append(r.ids, id)
	}
}

func (r *runner) step() error {
	r.draw()
	buf := r.buf[:len(r.ids)*r.o.Dim]
	req := []ams.TableRequest{{Table: "emb", IDs: r.ids, Rows: buf}}
	if err := r.s.Pull(ams.DefaultVersion, req, true); err != nil {
		return err
	}
	for i := range buf {
		buf[i] = float32(r.rng.NormFloat64()) * 0.01
	}
	if err := r.s.Push(ams.DefaultVersion, req); err != nil {
		return err
	}
	r.batches++
	return nil
}

func (r *runner) report(w io.Writer) error {
	st, err := r.s.Stats()
	if err != nil {
		return err
	}
	t := st.Tables[0]
	now := time.Now()
	if r.lastT.IsZero() {
		r.lastT = r.start
	}
	pulled := int64(st.RowsPulled)
	dt := now.Sub(r.lastT).Seconds()
	db := r.batches - r.lastBatches
	lookups := t.Tier.Lookups - r.lastTier.Lookups
	hit := 1.0
	if lookups > 0 {
		hit = 1 - float64(t.Tier.Misses-r.lastTier.Misses)/float64(lookups)
	}
	reads := 0.0
	if db > 0 {
		reads = float64(t.Tier.DiskReads-r.lastTier.DiskReads) / float64(db)
	}
	var disk uint64
	for _, d := range st.Tiers {
		disk += d.DiskBytes
	}
	_, err = fmt.Fprintf(w, "%d,%d,%d,%d,%d,%.0f,%.4f,%.1f,%.1f\n", r.created, t.Rows, t.Tier.ColdRows, rss(), disk,
		float64(pulled-r.lastPulled)/dt, hit, reads, now.Sub(r.start).Seconds())
	r.lastT, r.lastPulled, r.lastBatches, r.lastTier = now, pulled, r.batches, t.Tier
	return err
}

// rss is the process's VmRSS in bytes (0 where /proc has none).
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
