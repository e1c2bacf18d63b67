package reader

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// newTestPack returns an empty Pack whose arrays have chunks of 1<<shift
// elements (0: the default sizes). With small chunks most encodings
// straddle two or more, and so do their varints, IDs and floats.
func newTestPack(shift uint8) *Pack {
	p := &Pack{}
	p.data.shift, p.starts.shift = shift, shift
	return p
}

// packForm is what a Pack must keep of g: all of it, with floats as bits
// (so that -0 and NaN count) and nil and empty slices alike.
func packForm(g *Group) any {
	c := g.Clone()
	for k := range c.Levels {
		if len(c.Levels[k].Parent) == 0 {
			c.Levels[k].Parent = nil // the top level's nil Parent is Validate's to check
		}
	}
	return struct {
		Body      any
		Pos, Next Position
		Line      int64
	}{float32Bits(c), c.Pos, c.Next, c.Line}
}

// checkPack reads the groups of p back in the given order into one reused
// Group and checks them against want.
func checkPack(t *testing.T, p *Pack, want []*Group, order []int) {
	t.Helper()
	samples := int64(0)
	for _, g := range want {
		samples += int64(g.NumSamples())
	}
	if p.Len() != len(want) || p.Samples() != samples {
		t.Fatalf("Len, Samples = %d, %d; want %d, %d", p.Len(), p.Samples(), len(want), samples)
	}
	var dst Group
	for _, i := range order {
		p.Group(i, &dst)
		if err := dst.Validate(); err != nil {
			t.Fatalf("group %d read back: %v", i, err)
		}
		if !reflect.DeepEqual(packForm(&dst), packForm(want[i])) {
			t.Fatalf("group %d:\n got %+v\nwant %+v", i, &dst, want[i])
		}
		if n := p.NumSamples(i); n != want[i].NumSamples() {
			t.Fatalf("NumSamples(%d) = %d, want %d", i, n, want[i].NumSamples())
		}
	}
}

// inOrder returns the indices 0..n-1 in order and in reverse order.
func inOrder(n int) (forward, reversed []int) {
	for i := range n {
		forward, reversed = append(forward, i), append(reversed, n-1-i)
	}
	return forward, reversed
}

// packFormatGroups returns groups of every format the package decodes,
// positioned as a FileSource positions them, and a few unusual ones.
func packFormatGroups(t *testing.T) []*Group {
	var groups []*Group
	add := func(f Format, text string) {
		gs, errs := decodeText(t, f, text)
		if len(errs) > 0 || len(gs) == 0 {
			t.Fatalf("%v: %d groups, errors %v", f, len(gs), errs)
		}
		groups = append(groups, gs...)
	}
	add(LibFFM, "1 0:a:1 1:b:1 2:c:1\n0 3:a:2\t0:b:1\n0 1048575:x:-1e-3 65536:y:1 65535:z:1\n1\n")
	add(LibFM, "1 266:1 1244:0.5\n-1 a:2\n+1\n")
	add(XML, "3 10 5\n1,4 0:1 9:0.5\n 3:1\n2\n0,1,2,3,4 007:1\n")
	add(Criteo, criteoLine("1", []string{"0", "1", "", "-5"}, []string{"68fd1e64", "", "a b"})+"\n"+
		criteoLine("0", nil, nil))
	for _, tc := range goodGroupsCases() {
		add(SampleGroup, tc.text)
	}
	negZero, nan := float32(math.Copysign(0, -1)), float32(math.NaN())
	groups = append(groups, buildGroup(1, wantLine{labels: []float32{negZero},
		sparse: []wantFeat{{1, "a", negZero}, {2, "b", nan}, {70000, "c", 1}, {1 << 31, "d", 1}}}),
		buildGroup(1), buildGroup(3))
	files := []string{"data/part-0.libffm", "data/part-1.group", ""}
	off := int64(0)
	for i, g := range groups {
		g.Pos = Position{File: files[i/6%len(files)], Offset: off}
		off += int64(20 + i*i*i)
		g.Next, g.Line = Position{File: g.Pos.File, Offset: off}, int64(i+1)
	}
	// Resumed inside a group at the end of a file; a group read from
	// offset 2^63-1; a source that knows no lines.
	for _, g := range groups {
		if len(g.Levels) == 3 && g.NumSamples() > 0 {
			g.Pos.Index, g.Next = g.NumSamples(), Position{File: "data/part-2.group", Index: 3}
			break
		}
	}
	groups[0].Pos.Offset, groups[0].Pos.Index = math.MaxInt64, 1
	groups[1].Line = 0
	return groups
}

func TestPackFormats(t *testing.T) {
	groups := packFormatGroups(t)
	forward, reversed := inOrder(len(groups))
	for _, shift := range []uint8{0, 1, 3, 6} {
		p := newTestPack(shift)
		for _, g := range groups {
			p.Append(g)
		}
		checkPack(t, p, groups, forward)
		checkPack(t, p, groups, reversed)
	}
}

// randomPackGroup returns randomGroup(r) with random positions.
func randomPackGroup(r *rand.Rand) *Group {
	files := []string{"", "a.libffm", "hdfs://nn/data/part-00001", "kafka://t/3"}
	g := randomGroup(r)
	pos := func() Position {
		p := Position{File: files[r.IntN(len(files))], Offset: int64(r.Uint64() >> r.IntN(64))}
		if r.IntN(4) == 0 {
			p.Offset = -p.Offset
		}
		if r.IntN(4) == 0 {
			p.Index = r.IntN(g.NumSamples() + 1)
		}
		return p
	}
	g.Pos, g.Next = pos(), pos()
	if r.IntN(2) == 0 {
		g.Next.File = g.Pos.File
	}
	if r.IntN(4) != 0 {
		g.Line = int64(r.Uint64()>>r.IntN(64)) - 100
	}
	return g
}

func TestPackRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var groups []*Group
	for range 1000 {
		groups = append(groups, randomPackGroup(r))
	}
	for _, shift := range []uint8{0, 2, 5, 9} {
		p := newTestPack(shift)
		for _, g := range groups {
			p.Append(g)
		}
		checkPack(t, p, groups, r.Perm(len(groups)))
	}
}

func TestPackReset(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var old, fresh []*Group
	for range 300 {
		old = append(old, randomPackGroup(r))
	}
	for range 200 {
		g := randomPackGroup(r)
		g.Pos.File, g.Next.File = "new-"+g.Pos.File, "new-"+g.Next.File
		fresh = append(fresh, g)
	}
	for _, shift := range []uint8{0, 4} {
		p := newTestPack(shift)
		for _, g := range old {
			p.Append(g)
		}
		full := p.Bytes()
		p.Reset()
		if p.Len() != 0 || p.Samples() != 0 {
			t.Fatalf("after Reset: Len %d, Samples %d", p.Len(), p.Samples())
		}
		for _, g := range fresh {
			p.Append(g)
		}
		forward, _ := inOrder(len(fresh))
		checkPack(t, p, fresh, forward)
		p.Reset()
		for _, g := range old {
			p.Append(g)
		}
		if p.Bytes() != full {
			t.Errorf("refilled with the same groups: %d bytes, %d the first time", p.Bytes(), full)
		}
		forward, _ = inOrder(len(old))
		checkPack(t, p, old, forward)
	}
}

func TestPackAppendInvalid(t *testing.T) {
	g := buildGroup(1, wantLine{labels: []float32{1}, sparse: []wantFeat{unitFeat(0, "a")}})
	g.Levels[0].Offsets[1] = 2
	defer func() {
		if v := recover(); v == nil || !strings.Contains(v.(string), "reader: Pack.Append: reader: bad sample group") {
			t.Errorf("Append of an invalid group: panic %v", v)
		}
	}()
	var p Pack
	p.Append(g)
}

// packLines calls fn with n libFFM samples of benchInput (fields features
// of value 1 each), decoded into one reused Group positioned as a
// FileSource positions it.
func packLines(tb testing.TB, n, fields int, fn func(g *Group)) {
	tb.Helper()
	in := benchInput(LibFFM, n, fields, 1, false)
	d := mustDecoder(tb, LibFFM)
	var g Group
	off := int64(0)
	for i, line := range bytes.SplitAfter(in, []byte("\n"))[:n] {
		if err := d.Decode(bytes.TrimSuffix(line, []byte("\n")), &g); err != nil {
			tb.Fatal(err)
		}
		g.Pos = Position{File: "data/train-00001.libffm", Offset: off}
		off += int64(len(line))
		g.Next, g.Line = Position{File: g.Pos.File, Offset: off}, int64(i+1)
		fn(&g)
	}
}

// TestPackBytesPerSample compares the memory of 20000 libFFM samples of 23
// one-hot features in a Pack and as one cloned *Group each.
func TestPackBytesPerSample(t *testing.T) {
	const n, fields = 20000, 23
	const payload = fields*8 + 4 + 4 // the IDs, a float32 label and an int32 offset
	var p Pack
	packLines(t, n, fields, p.Append)
	pack := float64(p.Bytes()) / n

	clones := make([]*Group, 0, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	packLines(t, n, fields, func(g *Group) { clones = append(clones, g.Clone()) })
	runtime.GC()
	runtime.ReadMemStats(&after)
	cloned := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	runtime.KeepAlive(clones)

	t.Logf("bytes per sample: Pack %.1f (%.2fx the payload of %d), []*Group %.1f", pack, pack/payload, payload, cloned)
	if pack > 1.5*payload {
		t.Errorf("Pack holds %.1f bytes per sample, more than 1.5 x %d", pack, payload)
	}
	if pack > cloned/2 {
		t.Errorf("Pack holds %.1f bytes per sample, []*Group %.1f: want it twice smaller at least", pack, cloned)
	}
}

// packNoAllocGroups returns groups of one shape each: libFFM samples, and
// copies of the three-level group of goodGroupsCases.
func packNoAllocGroups(t *testing.T) [][]*Group {
	var ffm []*Group
	packLines(t, 100, 23, func(g *Group) { ffm = append(ffm, g.Clone()) })
	three, errs := decodeText(t, SampleGroup, strings.Repeat(goodGroupsCases()[1].text, 20))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return [][]*Group{ffm, three}
}

// TestPackNoAllocs checks that refilling a Pack after Reset allocates
// nothing, nor does reading its groups into a Group that has grown.
func TestPackNoAllocs(t *testing.T) {
	for _, groups := range packNoAllocGroups(t) {
		var p Pack
		var dst Group
		fill := func() {
			p.Reset()
			for _, g := range groups {
				p.Append(g)
			}
		}
		read := func() {
			for i := range p.Len() {
				p.Group(i, &dst)
			}
		}
		fill()
		read()
		if allocs := testing.AllocsPerRun(20, fill); allocs != 0 {
			t.Errorf("%d groups of %d levels: %v allocations to refill the Pack, want 0", len(groups), len(groups[0].Levels), allocs)
		}
		if allocs := testing.AllocsPerRun(20, read); allocs != 0 {
			t.Errorf("%d groups of %d levels: %v allocations to read them, want 0", len(groups), len(groups[0].Levels), allocs)
		}
	}
}

// benchPack appends groups to a Pack (emptied each time it holds all of
// them), or reads them back, one group per op; bytes/sample is the Pack's
// holding all of them.
func benchPack(b *testing.B, groups []*Group, read bool) {
	var p Pack
	var dst Group
	for _, g := range groups {
		p.Append(g)
	}
	perSample := float64(p.Bytes()) / float64(p.Samples())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		j := i % len(groups)
		if read {
			p.Group(j, &dst)
			continue
		}
		if j == 0 {
			p.Reset()
		}
		p.Append(groups[j])
	}
	b.ReportMetric(perSample, "bytes/sample")
}

// packBenchFFM returns 4096 libFFM groups of 23 one-hot features.
func packBenchFFM(b *testing.B) []*Group {
	var groups []*Group
	packLines(b, 4096, 23, func(g *Group) { groups = append(groups, g.Clone()) })
	return groups
}

// packBenchRandom returns 4096 groups of randomPackGroup.
func packBenchRandom() []*Group {
	r := rand.New(rand.NewPCG(9, 10))
	groups := make([]*Group, 4096)
	for i := range groups {
		groups[i] = randomPackGroup(r)
	}
	return groups
}

func BenchmarkPackAppendGroup(b *testing.B)        { benchPack(b, packBenchFFM(b), false) }
func BenchmarkPackGroup(b *testing.B)              { benchPack(b, packBenchFFM(b), true) }
func BenchmarkPackAppendGroup_Random(b *testing.B) { benchPack(b, packBenchRandom(), false) }
func BenchmarkPackGroup_Random(b *testing.B)       { benchPack(b, packBenchRandom(), true) }

// BenchmarkPackGroupShuffled reads a Pack of 1M libFFM samples (about 230
// MB, far beyond the caches) in a random order, as a WindowSource does,
// without and with the prefetch hints WindowSource.Next gives ahead of
// each read.
func BenchmarkPackGroupShuffled(b *testing.B) {
	groups := packBenchFFM(b)
	var p Pack
	for range 256 {
		for _, g := range groups {
			p.Append(g)
		}
	}
	order := rand.New(rand.NewPCG(3, 4)).Perm(p.Len())
	for _, hint := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefetch=%v", hint), func(b *testing.B) {
			var dst Group
			for i := 0; b.Loop(); i++ {
				k := i % len(order)
				if hint {
					if j := k + PrefetchStartAhead; j < len(order) {
						p.PrefetchStart(order[j])
					}
					if j := k + PrefetchAhead; j < len(order) {
						p.Prefetch(order[j])
					}
				}
				p.Group(order[k], &dst)
			}
		})
	}
}
