package parquetsrc

import (
	"bufio"
	"context"
	"fmt"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	arrowpq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/synth/datagen"
)

// benchRows is the size of the benchmarks' files.
const benchRows = 200_000

// writeWide writes benchRows Criteo-like rows, 30 columns (a label, 13
// nullable int64, 13 nullable strings, 3 string lists; snappy, dictionary
// pages, row groups of 50,000), as Parquet with arrow-go and as libFFM
// (the same samples: each value a token of its column's field).
func writeWide(b *testing.B, dir string) (pq, ffm string) {
	fields := []arrow.Field{{Name: "label", Type: arrow.PrimitiveTypes.Int32}}
	for i := 1; i <= 13; i++ {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("i%d", i), Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	}
	for i := 1; i <= 13; i++ {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.BinaryTypes.String, Nullable: true})
	}
	for i := 1; i <= 3; i++ {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("l%d", i), Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true})
	}
	sc := arrow.NewSchema(fields, nil)
	pq, ffm = filepath.Join(dir, "wide.parquet"), filepath.Join(dir, "wide.libffm")
	f, _ := os.Create(pq)
	props := arrowpq.NewWriterProperties(arrowpq.WithCompression(compress.Codecs.Snappy), arrowpq.WithDictionaryDefault(true),
		arrowpq.WithMaxRowGroupLength(50_000))
	w := must(pqarrow.NewFileWriter(sc, f, props, pqarrow.DefaultWriterProps()))
	tf, _ := os.Create(ffm)
	tw := bufio.NewWriter(tf)
	r := rand.New(rand.NewPCG(1, 2))
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	for done := 0; done < benchRows; done += 10_000 {
		for range 10_000 {
			wideRow(r, rb, tw)
		}
		rec := rb.NewRecord()
		if err := w.Write(rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	tw.Flush()
	tf.Close()
	return pq, ffm
}

// wideRow appends one random row to rb and its libFFM line to tw.
func wideRow(r *rand.Rand, rb *array.RecordBuilder, tw *bufio.Writer) {
	lab := int32(r.IntN(2))
	rb.Field(0).(*array.Int32Builder).Append(lab)
	tw.WriteString(strconv.Itoa(int(lab)))
	for i := 1; i <= 13; i++ {
		if r.IntN(10) == 0 {
			rb.Field(i).AppendNull()
			continue
		}
		v := int64(r.ExpFloat64() * 50)
		rb.Field(i).(*array.Int64Builder).Append(v)
		fmt.Fprintf(tw, " %d:%d:1", i-1, v)
	}
	for i := 14; i <= 26; i++ {
		if r.IntN(20) == 0 {
			rb.Field(i).AppendNull()
			continue
		}
		s := fmt.Sprintf("%08x", uint32(r.ExpFloat64()*float64(1000*i)))
		rb.Field(i).(*array.StringBuilder).Append(s)
		fmt.Fprintf(tw, " %d:%s:1", i-1, s)
	}
	for i := 27; i <= 29; i++ {
		lb := rb.Field(i).(*array.ListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		for k := r.IntN(6); k > 0; k-- {
			s := "t" + strconv.Itoa(int(r.ExpFloat64()*3000))
			vb.Append(s)
			fmt.Fprintf(tw, " %d:%s:1", i-1, s)
		}
	}
	tw.WriteByte('\n')
}

func wideColumns(names ...string) reader.ColumnMap {
	m := reader.ColumnMap{Label: "label"}
	for i := 1; i <= 29; i++ {
		name := fmt.Sprintf("i%d", i)
		if i > 13 {
			name = fmt.Sprintf("c%d", i-13)
		}
		if i > 26 {
			name = fmt.Sprintf("l%d", i-26)
		}
		if len(names) > 0 && !slicesContains(names, name) {
			continue
		}
		f := uint32(i - 1)
		m.Fields = append(m.Fields, reader.ColumnField{Column: name, Field: &f})
	}
	return m
}

func slicesContains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// BenchmarkSource reads the wide file's samples with a Source (all 29
// feature columns, or 2 and the label), and the same samples from libFFM
// with reader.FileSource: samples/s of the reader alone.
func BenchmarkSource(b *testing.B) {
	pq, ffm := writeWide(b, b.TempDir())
	run := func(b *testing.B, open func() reader.Source) {
		n := 0
		cpu0 := cpuTime()
		for b.Loop() {
			src := open()
			var g reader.Group
			for {
				err := src.Next(context.Background(), &g)
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n += g.NumSamples()
			}
			src.Close()
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
		// CPU time is steadier than wall time on a shared machine.
		b.ReportMetric(float64(n)/(cpuTime()-cpu0).Seconds(), "samples/cpu-s")
	}
	b.Run("parquet/30cols", func(b *testing.B) {
		run(b, func() reader.Source {
			return must(NewSource([]reader.FileSplit{{Path: pq}}, Options{Columns: wideColumns()}))
		})
	})
	b.Run("parquet/3cols", func(b *testing.B) {
		run(b, func() reader.Source {
			return must(NewSource([]reader.FileSplit{{Path: pq}}, Options{Columns: wideColumns("c1", "l1")}))
		})
	})
	b.Run("libffm", func(b *testing.B) {
		run(b, func() reader.Source { return openLibFFM(ffm) })
	})
	// The generated CTR data (Zipf-distributed tokens, bags; ctrgen's
	// Parquet): the same samples as libFFM.
	gpq, gffm, fields := writeGenerated(b, b.TempDir())
	b.Run("parquet/generated", func(b *testing.B) {
		run(b, func() reader.Source {
			return must(NewSource([]reader.FileSplit{{Path: gpq}}, Options{Columns: TokenColumns(fields, 0, false)}))
		})
	})
	b.Run("libffm/generated", func(b *testing.B) {
		run(b, func() reader.Source { return openLibFFM(gffm) })
	})
}

func openLibFFM(path string) reader.Source {
	dec := must(reader.NewDecoder(reader.LibFFM))
	return must(reader.NewFileSource([]reader.FileSplit{{Path: path}}, reader.FileSourceOptions{Decoder: dec}))
}

// writeGenerated writes benchRows samples of the generated CTR data as
// Parquet (TokenWriter) and libFFM.
func writeGenerated(b *testing.B, dir string) (pq, ffm string, fields int) {
	var cfg datagen.Config
	cfg.EnsureDefaults()
	pq, ffm = filepath.Join(dir, "gen.parquet"), filepath.Join(dir, "gen.libffm")
	f, tf := must(os.Create(pq)), must(os.Create(ffm))
	defer f.Close()
	defer tf.Close()
	gen := must(datagen.New(cfg))
	if err := gen.Write(bufio.NewWriter(tf), benchRows, reader.LibFFM, nil); err != nil {
		b.Fatal(err)
	}
	gen = must(datagen.New(cfg))
	bw := bufio.NewWriter(f)
	tw := NewTokenWriter(bw, cfg.Fields)
	if err := gen.Tokens(benchRows, func(label, _ float32, fs [][]uint64) error { return tw.Write(label, fs) }); err != nil {
		b.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	return pq, ffm, cfg.Fields
}

// BenchmarkLibraries reads the wide file's 30 columns (or 3) with the
// low-level column readers of arrow-go and parquet-go, hashing every
// string value (parquet-go: every dictionary entry, then a lookup a
// row): the measurement behind the choice of library (doc.go).
func BenchmarkLibraries(b *testing.B) {
	pq, _ := writeWide(b, b.TempDir())
	all := make([]int, 30)
	for i := range all {
		all[i] = i
	}
	for _, cols := range [][]int{all, {0, 14, 27}} {
		b.Run(fmt.Sprintf("arrow-go/%dcols", len(cols)), func(b *testing.B) {
			for b.Loop() {
				readArrowColumns(b, pq, cols)
			}
			b.ReportMetric(float64(benchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		b.Run(fmt.Sprintf("parquet-go/%dcols", len(cols)), func(b *testing.B) {
			for b.Loop() {
				readParquetGoColumns(b, pq, cols)
			}
			b.ReportMetric(float64(benchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

var benchSeed = maphash.MakeSeed()

func readArrowColumns(b *testing.B, path string, cols []int) (sum uint64) {
	f := must(os.Open(path))
	defer f.Close()
	rdr := must(file.NewParquetReader(f))
	i64, i32 := make([]int64, 4096), make([]int32, 4096)
	ba := make([]arrowpq.ByteArray, 4096)
	def, rep := make([]int16, 4096), make([]int16, 4096)
	for g := range rdr.NumRowGroups() {
		rg := rdr.RowGroup(g)
		for _, c := range cols {
			cr := must(rg.Column(c))
			for {
				var tot int64
				var n int
				var err error
				switch r := cr.(type) {
				case *file.Int64ColumnChunkReader:
					tot, n, err = r.ReadBatch(4096, i64, def, rep)
					for _, v := range i64[:n] {
						sum += uint64(v)
					}
				case *file.Int32ColumnChunkReader:
					tot, n, err = r.ReadBatch(4096, i32, def, rep)
					for _, v := range i32[:n] {
						sum += uint64(v)
					}
				case *file.ByteArrayColumnChunkReader:
					tot, n, err = r.ReadBatch(4096, ba, def, rep)
					for _, v := range ba[:n] {
						sum += maphash.Bytes(benchSeed, v)
					}
				}
				if err != nil {
					b.Fatal(err)
				}
				if tot == 0 {
					break
				}
			}
		}
	}
	return sum
}

func readParquetGoColumns(b *testing.B, path string, cols []int) (sum uint64) {
	f := must(os.Open(path))
	defer f.Close()
	st := must(f.Stat())
	pf := must(parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true)))
	var dictH []uint64
	for _, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		for _, c := range cols {
			pages := chunks[c].Pages()
			var dict parquet.Dictionary
			for {
				p, err := pages.ReadPage()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				data := p.Data()
				if d := p.Dictionary(); d != nil {
					if d != dict {
						dd := d.Page().Data()
						dict, dictH = d, hashValues(d.Type().Kind(), &dd, dictH[:0])
					}
					for _, ix := range data.Int32() {
						sum += dictH[ix]
					}
				} else {
					for _, h := range hashValues(p.Type().Kind(), &data, nil) {
						sum += h
					}
				}
				parquet.Release(p)
			}
			pages.Close()
		}
	}
	return sum
}

func hashValues(k parquet.Kind, v *encoding.Values, out []uint64) []uint64 {
	switch k {
	case parquet.Int64:
		for _, x := range v.Int64() {
			out = append(out, uint64(x))
		}
	case parquet.Int32:
		for _, x := range v.Int32() {
			out = append(out, uint64(x))
		}
	case parquet.ByteArray:
		data, offs := v.ByteArray()
		for i := 0; i+1 < len(offs); i++ {
			out = append(out, maphash.Bytes(benchSeed, data[offs[i]:offs[i+1]]))
		}
	}
	return out
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
