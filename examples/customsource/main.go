// Command customsource trains a CTR model in one process from a sample
// source written here, using only the exported API of xps: an embedded
// cluster (package cluster), a config built from the same structs as the
// YAML file (package config), the job's options (package job) and
// xps.Train.
//
// The source plays a tiny shop: each user has a favourite category,
// declared in their profile as an interest, and clicks items of it far
// more often than others. The model sees the user, their declared
// interest, the item and the item's category, and must learn that a
// match of interest and category makes a click. The
// program exits non-zero when the test AUC stays below -min-auc, so CI
// can run it as a check.
//
//	cd examples && go run ./customsource
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"

	"github.com/xdlgo/xps"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
)

func main() {
	train := flag.Int("samples", 200_000, "training samples per epoch")
	minAUC := flag.Float64("min-auc", 0.65, "fail when the test AUC is below this")
	flag.Parse()
	if err := run(*train, *minAUC); err != nil {
		fmt.Fprintln(os.Stderr, "customsource:", err)
		os.Exit(1)
	}
}

func run(samples int, minAUC float64) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := cluster.Start(ctx, cluster.Options{Shards: 2})
	if err != nil {
		return err
	}
	defer c.Close()

	cfg := config.Default()
	cfg.Train.Epochs = 2
	cfg.Model.Hidden = []int{32, 16}
	opts := job.Options{
		Config: cfg, Etcd: c.Etcd(), Prefix: c.Prefix(), Local: c, Progress: os.Stderr,
		Source: func(epoch int, at reader.Position) (reader.Source, error) {
			return newShop(1, uint64(epoch), samples, at), nil
		},
		TestSource: func() (reader.Source, error) { return newShop(2, 0, 20_000, reader.Position{}), nil },
	}
	res, err := xps.Train(ctx, opts)
	if err != nil {
		return err
	}
	res.WriteSummary(os.Stdout)
	if auc := float64(res.CTR.TestAUC); !(auc >= minAUC) { // an undefined AUC (NaN) fails too
		return fmt.Errorf("test AUC %.4f is below %.4f: the model learned too little from the shop", auc, minAUC)
	}
	return nil
}

// The shop's shape.
const (
	users      = 2000
	items      = 5000
	categories = 5
	streamName = "shop"
)

// Feature fields of a sample.
var fields = []uint32{0, 1, 2, 3} // user, interest, item, category

// shop is a reader.Source of generated impressions. Sample i of a stream
// is a pure function of (stream seed, epoch, i), so a source reopened at a
// position yields exactly the samples after it: the job's exactly-once
// resume after a restore needs nothing more.
type shop struct {
	seed, epoch uint64
	next, n     int
	stats       reader.SourceStats
}

func newShop(seed, epoch uint64, n int, at reader.Position) *shop {
	s := &shop{seed: seed, epoch: epoch, n: n}
	if at.File == streamName {
		s.next = int(min(max(at.Offset, 0), int64(n)))
	}
	return s
}

// favourite is user u's favourite category.
func favourite(u uint64) uint64 { return (u * 7919) % categories }

// clickProb is the chance that user clicks item: some users click more
// than others, some items draw more clicks, and an item of the user's
// favourite category is clicked far more often.
func clickProb(user, item uint64) float64 {
	p := 0.02 * float64(1+user%5) * float64(1+item%3)
	if item%categories == favourite(user) {
		p *= 3
	}
	return min(p, 1)
}

// Next fills g with one impression: a flat group of one sample.
func (s *shop) Next(ctx context.Context, g *reader.Group) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.next >= s.n {
		return io.EOF
	}
	rng := rand.New(rand.NewPCG(s.seed<<32|s.epoch, uint64(s.next)))
	user, item := rng.Uint64N(users), rng.Uint64N(items)
	cat := item % categories
	p := clickProb(user, item)
	label := float32(0)
	if rng.Float64() < p {
		label = 1
	}
	g.Reset(1)
	// IDs are hashed feature values: the field in the high bits keeps a
	// user and an item of the same number apart.
	g.AddLine(0, 0, fields, []uint64{user, 1<<40 | favourite(user), 2<<40 | item, 3<<40 | cat}, []float32{1, 1, 1, 1})
	g.AddLabels(label)
	g.Pos = reader.Position{File: streamName, Offset: int64(s.next)}
	g.Next = reader.Position{File: streamName, Offset: int64(s.next + 1)}
	s.next++
	s.stats.Groups++
	s.stats.Samples++
	return nil
}

func (s *shop) Position() reader.Position {
	return reader.Position{File: streamName, Offset: int64(s.next)}
}
func (s *shop) Stats() reader.SourceStats { return s.stats }
func (s *shop) Close() error              { return nil }
