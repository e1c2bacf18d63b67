package kafkasrc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/kafkasrc"
	"github.com/xdlgo/xps/tests/kafkatest"
)

// BenchmarkRead reads the same libFFM samples (CTR-shaped: 23 fields, about
// 330 bytes a line) from a topic of 4 partitions on the in-process broker
// over loopback, and from a local file (page-cached), decoding every
// sample into groups in both. MB/s is of the sample bytes.
func BenchmarkRead(b *testing.B) {
	const n = 100000
	rng := rand.New(rand.NewPCG(1, 2))
	var lines []string
	var total int64
	for range n {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%d", rng.IntN(2))
		for f := range 23 {
			fmt.Fprintf(&sb, " %d:%d:1", f, rng.IntN(1000000))
		}
		lines = append(lines, sb.String())
		total += int64(sb.Len())
	}
	path := filepath.Join(b.TempDir(), "train.libffm")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	count := func(b *testing.B, src reader.Source) {
		var g reader.Group
		got := 0
		for {
			err := src.Next(context.Background(), &g)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			got += g.NumSamples()
		}
		src.Close()
		if got != n {
			b.Fatalf("read %d samples, want %d", got, n)
		}
	}
	b.Run("file", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			src, err := reader.OpenFiles([]reader.FileSplit{{Path: path}}, reader.LibFFM, reader.StopOnBad)
			if err != nil {
				b.Fatal(err)
			}
			count(b, src)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	})
	b.Run("kafka", func(b *testing.B) {
		br, err := kafkatest.Start(kafkatest.Options{Topics: map[string]int{"bench": 4}})
		if err != nil {
			b.Fatal(err)
		}
		defer br.Close()
		if _, err := kafkasrc.ProduceFiles(context.Background(), []string{path},
			kafkasrc.ProduceOptions{Brokers: br.Addrs(), Topic: "bench", Format: reader.LibFFM}); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(total)
		b.ResetTimer()
		for b.Loop() {
			src, err := kafkasrc.Open(context.Background(), kafkasrc.Options{Brokers: br.Addrs(), Topic: "bench", Format: reader.LibFFM})
			if err != nil {
				b.Fatal(err)
			}
			count(b, src)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	})
}
