package reader

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"
)

// benchInput builds lines shaped like the XDL data: fields x bag ids per
// line, Zipf-distributed decimal tokens, values 1 or random weights.
func benchInput(format Format, lines, fields, bag int, weighted bool) []byte {
	r := rand.New(rand.NewPCG(1, 1))
	z := rand.NewZipf(r, 1.1, 1, 99999)
	var b []byte
	for range lines {
		b = append(b, "01"[r.IntN(2)])
		for f := range fields {
			for range bag {
				b = append(b, ' ')
				if format == LibFFM {
					b = strconv.AppendInt(b, int64(f), 10)
					b = append(b, ':')
				}
				b = strconv.AppendUint(b, z.Uint64(), 10)
				if weighted {
					b = append(b, ':')
					b = strconv.AppendFloat(b, r.Float64(), 'g', 6, 32)
				} else {
					b = append(b, ":1"...)
				}
			}
		}
		b = append(b, '\n')
	}
	return b
}

func benchParseLine(b *testing.B, format Format, fields, bag int, weighted bool) {
	const lines = 4096
	in := benchInput(format, lines, fields, bag, weighted)
	split := bytes.SplitAfter(in, []byte("\n"))
	split = split[:lines]
	p := NewParser(format)
	feats := make([]Feature, 0, fields*bag)
	b.SetBytes(int64(len(in)) / lines)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		var err error
		_, feats, err = p.ParseLine(split[i%lines], feats[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func benchRead(b *testing.B, format Format, fields, bag int, weighted bool) {
	in := benchInput(format, 4096, fields, bag, weighted)
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	samples := 0
	for b.Loop() {
		ds, _, err := Read(bytes.NewReader(in), "bench", ReadOptions{Format: format})
		if err != nil {
			b.Fatal(err)
		}
		samples += ds.Len()
	}
	b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkParseLine_LibFFM_23x3_OneHot(b *testing.B) { benchParseLine(b, LibFFM, 23, 3, false) }
func BenchmarkParseLine_LibFFM_23x3_Weighted(b *testing.B) {
	benchParseLine(b, LibFFM, 23, 3, true)
}
func BenchmarkParseLine_LibFM_10x1_OneHot(b *testing.B) { benchParseLine(b, LibFM, 10, 1, false) }
func BenchmarkRead_LibFFM_23x3_OneHot(b *testing.B)     { benchRead(b, LibFFM, 23, 3, false) }

func BenchmarkFeatureID_5B(b *testing.B) {
	tok := []byte("34567")
	var s uint64
	for i := 0; b.Loop(); i++ {
		s += FeatureID(uint32(i&31), tok)
	}
	_ = s
}
