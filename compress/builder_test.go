package compress

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/sparsenet"
)

// layout2: item field 0 and a dense field 4 at level 0; user fields 1, 2
// (another table) and a dense field 3 at level 1.
func layout2(t testing.TB) *sparsenet.Layout {
	return mustLayout(t, []sparsenet.FieldSpec{{Table: 0}, {Table: 0, Level: 1}, {Table: 1, Level: 1},
		{Table: -1, Level: 1, DenseWidth: 2}, {Table: -1, DenseWidth: 1}}, []int{4, 3}, sparsenet.Sum)
}

// layout3 is layout2 with field 2 moved to level 2.
func layout3(t testing.TB) *sparsenet.Layout {
	return mustLayout(t, []sparsenet.FieldSpec{{Table: 0}, {Table: 0, Level: 1}, {Table: 1, Level: 2},
		{Table: -1, Level: 1, DenseWidth: 2}, {Table: -1, DenseWidth: 1}}, []int{4, 3}, sparsenet.Sum)
}

// builderScenario is a stream of groups batched bs samples at a time
// under layout2 or layout3, and the batches it must give, described.
type builderScenario struct {
	name   string
	levels int // of the layout
	bs     int
	groups func(t *testing.T) []*reader.Group
	want   []string
}

func TestBuilderScenarios(t *testing.T) {
	for _, tc := range append(sharingScenarios(), hintAndResumeScenarios()...) {
		t.Run(tc.name, func(t *testing.T) { checkScenario(t, tc) })
	}
}

func checkScenario(t *testing.T, tc builderScenario) {
	l := layout2(t)
	if tc.levels == 3 {
		l = layout3(t)
	}
	var got []string
	for _, bt := range build(t, l, tc.bs, tc.groups(t)...) {
		checkBatch(t, bt)
		got = append(got, describe(bt))
	}
	if !slices.Equal(got, tc.want) {
		t.Fatalf("batches\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tc.want, "\n     "))
	}
}

// sharingScenarios: which samples share upper nodes, within a group and
// across groups, and where batches split a tree.
func sharingScenarios() []builderScenario {
	return []builderScenario{{
		name: "tree split at batch boundaries", levels: 2, bs: 2,
		groups: func(t *testing.T) []*reader.Group {
			return []*reader.Group{grp(t, 0, []string{"^0 0:1", "^0 0:2", "^0 0:3", "^0 0:4", "^0 0:5"}, []string{"1:7 2:8 3=1,2"})}
		},
		want: []string{
			"n=2 nodes=[2 1] parent=[[0 0]] feats=4 groups=1 end=f@0#2 labels=[0 1]",
			"n=2 nodes=[2 1] parent=[[0 0]] feats=4 groups=1 end=f@0#4 labels=[2 3]",
			"n=1 nodes=[1 1] parent=[[0]] feats=3 groups=1 end=f@1#0 labels=[4]",
		},
	}, {
		name: "users across groups", levels: 2, bs: 4,
		groups: func(t *testing.T) []*reader.Group {
			return []*reader.Group{
				grp(t, 0, []string{"^0 0:1", "^0 0:2", "^1 0:3"}, []string{"1:1", "1:2"}),
				grp(t, 1, []string{"^0 0:4", "^0 0:5"}, []string{"1:2"}), // the same user as the last of group 0
			}
		},
		want: []string{
			"n=4 nodes=[4 2] parent=[[0 0 1 1]] feats=6 groups=2 end=f@1#1 labels=[0 1 2 1000]",
			"n=1 nodes=[1 1] parent=[[0]] feats=2 groups=1 end=f@2#0 labels=[1001]",
		},
	}, {
		name: "node identity is content", levels: 2, bs: 10,
		groups: func(t *testing.T) []*reader.Group {
			return []*reader.Group{grp(t, 0,
				[]string{"^0 0:1", "^1 0:2", "^2 0:3", "^3 0:4", "^4 0:5", "^0 0:6"},
				[]string{"1:1", "1:1", "1:1 3=1,2", "1:1 3=1,3", "1:1*0.5"})}
		},
		// lines 0 and 1 are identical; dense vectors, values and going back
		// to line 0 after another user make new nodes.
		want: []string{"n=6 nodes=[6 5] parent=[[0 0 1 2 3 4]] feats=11 groups=1 end=f@1#0 labels=[0 1 2 3 4 5]"},
	}, {
		name: "flat samples with repeated user features", levels: 2, bs: 10,
		groups: func(t *testing.T) []*reader.Group {
			return []*reader.Group{
				grp(t, 0, []string{"0:1 1:7 2:8"}),
				grp(t, 1, []string{"0:2 1:7 2:8"}),
				grp(t, 2, []string{"0:3 1:7 4=1 2:8"}), // a level-0 dense field between them
				grp(t, 3, []string{"0:4 1:9 2:8"}),
				grp(t, 4, []string{"0:5 2:8 1:7"}), // another order: other features
			}
		},
		want: []string{"n=5 nodes=[5 3] parent=[[0 0 0 1 2]] feats=11 groups=5 end=f@5#0 labels=[0 1000 2000 3000 4000]"},
	}, {
		name: "three levels split", levels: 3, bs: 3,
		groups: func(t *testing.T) []*reader.Group {
			return []*reader.Group{grp(t, 0,
				[]string{"^0 0:1", "^0 0:2", "^1 0:3", "^2 0:4", "^2 0:5"},
				[]string{"^0 1:1", "^0 1:2", "^1 1:3"},
				[]string{"2:1", "2:2"})}
		},
		want: []string{
			"n=3 nodes=[3 2 1] parent=[[0 0 1] [0 0]] feats=6 groups=1 end=f@0#3 labels=[0 1 2]",
			"n=2 nodes=[2 1 1] parent=[[0 0] [0]] feats=4 groups=1 end=f@1#0 labels=[3 4]",
		},
	}}
}

// hintAndResumeScenarios: line levels are hints, groups resumed inside or
// consumed already, samples with no upper features.
func hintAndResumeScenarios() []builderScenario {
	return []builderScenario{{
		name: "line levels are hints: 3-level data, 2-level layout", levels: 2, bs: 10,
		groups: func(t *testing.T) []*reader.Group {
			return []*reader.Group{grp(t, 0,
				[]string{"^0 0:1", "^0 0:2", "^1 0:3"},
				[]string{"^0 0:9", "^0 0:8"}, // ad lines of level-0 fields: pooled into every sample
				[]string{"1:5"})}
		},
		want: []string{"n=3 nodes=[3 1] parent=[[0 0 0]] feats=7 groups=1 end=f@1#0 labels=[0 1 2]"},
	}, {
		name: "user line holding a sample field", levels: 2, bs: 10,
		groups: func(t *testing.T) []*reader.Group {
			return []*reader.Group{grp(t, 0, []string{"^0 0:1", "^0 0:2"}, []string{"1:1 0:9"})}
		},
		want: []string{"n=2 nodes=[2 1] parent=[[0 0]] feats=5 groups=1 end=f@1#0 labels=[0 1]"},
	}, {
		name: "resume inside a group", levels: 2, bs: 10,
		groups: func(t *testing.T) []*reader.Group {
			g := grp(t, 0, []string{"^0 0:1", "^0 0:2", "^1 0:3", "^1 0:4", "^1 0:5"}, []string{"1:1", "1:2"})
			g.Pos.Index = 2
			return []*reader.Group{g}
		},
		want: []string{"n=3 nodes=[3 1] parent=[[0 0 0]] feats=4 groups=1 end=f@1#0 labels=[2 3 4]"},
	}, {
		name: "no upper features", levels: 2, bs: 3,
		groups: func(t *testing.T) []*reader.Group {
			return []*reader.Group{grp(t, 0, []string{"0:1"}), grp(t, 1, []string{"0:2"}), grp(t, 2, []string{"0:3"}), grp(t, 3, []string{"0:4"})}
		},
		want: []string{
			"n=3 nodes=[3 1] parent=[[0 0 0]] feats=3 groups=3 end=f@3#0 labels=[0 1000 2000]",
			"n=1 nodes=[1 1] parent=[[0]] feats=1 groups=1 end=f@4#0 labels=[3000]",
		},
	}, {
		name: "group consumed already", levels: 2, bs: 3,
		groups: func(t *testing.T) []*reader.Group {
			g := grp(t, 0, []string{"0:1"})
			g.Pos.Index = 1
			return []*reader.Group{g, grp(t, 1, []string{"0:2"})}
		},
		want: []string{"n=1 nodes=[1 1] parent=[[0]] feats=1 groups=1 end=f@2#0 labels=[1000]"},
	}}
}

// checkBatch checks the structural invariants of the package doc.
func checkBatch(t testing.TB, bt *Batch) {
	t.Helper()
	sp := bt.Sparse
	if bt.N != sp.N || bt.N != sp.Nodes(0) || len(bt.Labels) != bt.N || len(bt.LabelOffsets) != bt.N+1 ||
		int(bt.LabelOffsets[bt.N]) != len(bt.AllLabels) {
		t.Fatalf("batch sizes disagree: N %d sparse %d labels %d offsets %d", bt.N, sp.N, len(bt.Labels), len(bt.LabelOffsets))
	}
	for s := 0; s < bt.N; s++ {
		want := float32(0)
		if lo, hi := bt.LabelOffsets[s], bt.LabelOffsets[s+1]; lo < hi {
			want = bt.AllLabels[lo]
		}
		if bt.Labels[s] != want {
			t.Fatalf("sample %d: label %v, want %v", s, bt.Labels[s], want)
		}
	}
	for k, p := range bt.Parent {
		if len(p) != sp.Nodes(k) {
			t.Fatalf("level %d: %d parents for %d nodes", k, len(p), sp.Nodes(k))
		}
		for i, x := range p {
			if x < 0 || int(x) >= sp.Nodes(k+1) || (i > 0 && x < p[i-1]) {
				t.Fatalf("level %d: parents %v out of order or range (%d nodes above)", k, p, sp.Nodes(k+1))
			}
		}
		if len(p) > 0 && int(p[len(p)-1]) != sp.Nodes(k+1)-1 {
			t.Fatalf("level %d: a level-%d node without children: parents %v", k, k+1, p)
		}
	}
}

func TestBuilderMultiLabel(t *testing.T) {
	bts := build(t, layout2(t), 10, grp(t, 0, []string{"0:1 @1,0", "0:2 @", "0:3 @0.5,1,1"}))
	bt := bts[0]
	if !slices.Equal(bt.Labels, []float32{1, 0, 0.5}) || !slices.Equal(bt.LabelOffsets, []int32{0, 2, 2, 5}) ||
		!slices.Equal(bt.AllLabels, []float32{1, 0, 0.5, 1, 1}) {
		t.Fatalf("labels %v offsets %v all %v", bt.Labels, bt.LabelOffsets, bt.AllLabels)
	}
}

func TestBuilderResumeFromEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	l := layout2(t)
	for it := 0; it < 30; it++ {
		var groups []*reader.Group
		for off := int64(0); off < int64(2+rng.IntN(6)); off++ {
			users := []string{"1:1", "1:2 3=1,2", "1:3"}[:1+rng.IntN(3)]
			var samples []string
			for s := 0; s < 1+rng.IntN(6); s++ {
				samples = append(samples, fmt.Sprintf("^%d 0:%d", rng.IntN(len(users)), s))
			}
			groups = append(groups, grp(t, off, samples, users))
		}
		bs := 1 + rng.IntN(5)
		labelsOf := func(bts []*Batch) []float32 {
			var out []float32
			for _, bt := range bts {
				out = append(out, bt.Labels...)
			}
			return out
		}
		all := build(t, l, bs, groups...)
		want := labelsOf(all)
		for i, bt := range all {
			checkBatch(t, bt)
			if i < len(all)-1 && bt.N != bs {
				t.Fatalf("batch %d of %d has %d samples, want %d", i, len(all), bt.N, bs)
			}
			// A source resumed at End: groups from End.Offset on, the first
			// one starting at End.Index.
			var rest []*reader.Group
			for _, g := range groups {
				if g.Pos.Offset >= bt.End.Offset {
					c := g.Clone()
					if c.Pos.Offset == bt.End.Offset {
						c.Pos.Index = bt.End.Index
					}
					rest = append(rest, c)
				}
			}
			done := 0
			for _, prev := range all[:i+1] {
				done += prev.N
			}
			if got := labelsOf(build(t, l, bs, rest...)); !slices.Equal(got, want[done:]) {
				t.Fatalf("case %d: resuming at %v after batch %d gives %v, want %v", it, bt.End, i, got, want[done:])
			}
		}
	}
}

func TestBuilderErrors(t *testing.T) {
	l := layout2(t)
	for _, tc := range []struct {
		name  string
		group func(t *testing.T) *reader.Group
		want  error
	}{
		{"unknown field", func(t *testing.T) *reader.Group { return grp(t, 7, []string{"^0 0:1", "^0 5:1"}, []string{"1:1"}) }, sparsenet.ErrUnknownField},
		{"unknown field on the user line", func(t *testing.T) *reader.Group { return grp(t, 7, []string{"^0 0:1"}, []string{"9:1"}) }, sparsenet.ErrUnknownField},
		{"dense field given an id", func(t *testing.T) *reader.Group { return grp(t, 7, []string{"0:1 4:1"}) }, sparsenet.ErrUnknownField},
		{"sparse field given a vector", func(t *testing.T) *reader.Group { return grp(t, 7, []string{"0:1 0=1"}) }, sparsenet.ErrUnknownField},
		{"unknown dense field", func(t *testing.T) *reader.Group { return grp(t, 7, []string{"0:1 8=1"}) }, sparsenet.ErrUnknownField},
		{"dense width", func(t *testing.T) *reader.Group { return grp(t, 7, []string{"^0 0:1"}, []string{"1:1 3=1,2,3"}) }, sparsenet.ErrDenseWidth},
		{"bad parent", func(t *testing.T) *reader.Group {
			g := grp(t, 7, []string{"^0 0:1"}, []string{"1:1"})
			g.Levels[0].Parent[0] = 3
			return g
		}, reader.ErrBadGroup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBuilder(Options{BatchSize: 2, Layout: l})
			if err != nil {
				t.Fatal(err)
			}
			good := grp(t, 0, []string{"^0 0:1", "^0 0:2", "^0 0:3"}, []string{"1:1"})
			if err := b.Add(good); err != nil {
				t.Fatal(err)
			}
			before := b.Stats()
			bad := tc.group(t)
			err = b.Add(bad)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), bad.Pos.String()) {
				t.Fatalf("Add = %v, want %v naming %v", err, tc.want, bad.Pos)
			}
			if after := b.Stats(); !reflect.DeepEqual(after, before) {
				t.Fatalf("a refused group changed the stats: %+v -> %+v", before, after)
			}
			// The stream goes on as if the bad group never came.
			if err := b.Add(grp(t, 8, []string{"^0 0:4"}, []string{"1:1"})); err != nil {
				t.Fatal(err)
			}
			b.Flush()
			var got []string
			for bt := b.Take(); bt != nil; bt = b.Take() {
				checkBatch(t, bt)
				got = append(got, describe(bt))
			}
			want := []string{
				"n=2 nodes=[2 1] parent=[[0 0]] feats=3 groups=1 end=f@0#2 labels=[0 1]",
				"n=2 nodes=[2 1] parent=[[0 0]] feats=3 groups=2 end=f@9#0 labels=[2 8000]",
			}
			if !slices.Equal(got, want) {
				t.Fatalf("batches\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	err := (&Options{}).Validate()
	if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "batch size") || !strings.Contains(err.Error(), "layout") {
		t.Fatalf("Validate of zero options = %v, want both problems", err)
	}
	if _, err := NewBuilder(Options{BatchSize: 1}); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("NewBuilder without layout = %v", err)
	}
}

func TestBuilderStats(t *testing.T) {
	b, err := NewBuilder(Options{BatchSize: 4, Layout: layout2(t)})
	if err != nil {
		t.Fatal(err)
	}
	// 6 samples of one user, then 2 of another: batches [4 | 2 + 2].
	for _, g := range []*reader.Group{
		grp(t, 0, []string{"^0 0:1", "^0 0:2", "^0 0:3", "^0 0:4", "^0 0:5", "^0 0:6"}, []string{"1:1"}),
		grp(t, 1, []string{"^0 0:1", "^0 0:2"}, []string{"1:2"}),
	} {
		if err := b.Add(g); err != nil {
			t.Fatal(err)
		}
	}
	b.Flush()
	s := b.Stats()
	if s.Samples != 8 || s.Groups != 2 || s.Batches != 2 || !slices.Equal(s.Nodes, []int64{8, 3}) || !slices.Equal(s.Cols, []int{4 + 1, 4 + 3 + 2}) {
		t.Fatalf("stats %+v", s)
	}
	if r := s.Ratio(1); r != 8.0/3 {
		t.Fatalf("Ratio(1) = %v", r)
	}
	if r, want := s.InputRatio(), 8.0*14/(8*5+3*9); r != want {
		t.Fatalf("InputRatio = %v, want %v", r, want)
	}
}

// TestBuilderRecycleNoAlloc checks that Add, Take and Recycle allocate
// nothing once the recycled batches have grown.
func TestBuilderRecycleNoAlloc(t *testing.T) {
	l := layout2(t)
	b, err := NewBuilder(Options{BatchSize: 16, Layout: l})
	if err != nil {
		t.Fatal(err)
	}
	groups := []*reader.Group{
		grp(t, 0, []string{"^0 0:1", "^0 0:2 4=1", "^1 0:3", "^1 0:4 @1,0"}, []string{"1:1 2:3", "1:2 3=1,2"}),
		grp(t, 1, []string{"0:1 1:1", "0:2 1:1 4=0.5", "0:3 1:2"}), // flat: content path
		grp(t, 2, []string{"^0 0:5", "^1 0:6", "^2 0:7"}, []string{"^0 1:1", "^0 1:2", "^1 1:1"}, []string{"2:4", "2:5"}),
	}
	round := func() {
		for i := 0; i < 7; i++ {
			for _, g := range groups {
				if err := b.Add(g); err != nil {
					t.Fatal(err)
				}
				for bt := b.Take(); bt != nil; bt = b.Take() {
					b.Recycle(bt)
				}
			}
		}
	}
	for i := 0; i < 5; i++ {
		round()
	}
	if a := testing.AllocsPerRun(20, round); a != 0 {
		t.Fatalf("a round allocates %v times", a)
	}
}

// grp builds the group at offset off of file "f" (Next: offset off+1) from
// its lines, level 0 first. A line is a list of tokens: "^P" (the parent
// line, ignored on the top level), "F:ID" or "F:ID*V" (a sparse feature, V
// defaults to 1), "F=V,V" (a dense feature) and, on level 0, "@L,L" (the
// sample's labels; "@" for none). A sample without "@" has the one label
// 1000*off + its index.
func grp(t testing.TB, off int64, levels ...[]string) *reader.Group {
	t.Helper()
	g := &reader.Group{}
	g.Reset(len(levels))
	for k, lines := range levels {
		for i, line := range lines {
			var parent int32
			var fields []uint32
			var ids []uint64
			var values []float32
			type dense struct {
				f uint32
				v []float32
			}
			var dn []dense
			labels := []float32{float32(1000*off) + float32(i)}
			for _, tok := range strings.Fields(line) {
				switch {
				case tok[0] == '^':
					parent = int32(atoi(t, tok[1:]))
				case tok[0] == '@':
					labels = floats(t, tok[1:])
				case strings.Contains(tok, "="):
					f, v, _ := strings.Cut(tok, "=")
					dn = append(dn, dense{uint32(atoi(t, f)), floats(t, v)})
				default:
					f, rest, ok := strings.Cut(tok, ":")
					if !ok {
						t.Fatalf("bad token %q", tok)
					}
					id, v, hasV := strings.Cut(rest, "*")
					val := float32(1)
					if hasV {
						val = floats(t, v)[0]
					}
					fields, ids, values = append(fields, uint32(atoi(t, f))), append(ids, uint64(atoi(t, id))), append(values, val)
				}
			}
			g.AddLine(k, parent, fields, ids, values)
			for _, d := range dn {
				g.AddDense(k, d.f, d.v)
			}
			if k == 0 {
				g.AddLabels(labels...)
			}
		}
	}
	g.Pos = reader.Position{File: "f", Offset: off}
	g.Next = reader.Position{File: "f", Offset: off + 1}
	if err := g.Validate(); err != nil {
		t.Fatalf("test group %d: %v", off, err)
	}
	return g
}

func atoi(t testing.TB, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func floats(t testing.TB, s string) []float32 {
	var out []float32
	if s == "" {
		return out
	}
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(p, 32)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, float32(v))
	}
	return out
}

// describe prints a batch's shape.
func describe(bt *Batch) string {
	nodes := make([]int, len(bt.Parent)+1)
	for k := range nodes {
		nodes[k] = bt.Sparse.Nodes(k)
	}
	return fmt.Sprintf("n=%d nodes=%v parent=%v feats=%d groups=%d end=%v labels=%v", bt.N, nodes, bt.Parent,
		bt.Sparse.Features(), bt.Groups, bt.End, bt.AllLabels)
}

// build adds groups with batch size bs, flushes and returns every batch.
func build(t testing.TB, l *sparsenet.Layout, bs int, groups ...*reader.Group) []*Batch {
	t.Helper()
	b, err := NewBuilder(Options{BatchSize: bs, Layout: l})
	if err != nil {
		t.Fatal(err)
	}
	var out []*Batch
	var reused reader.Group // the caller refills one group, as a Source does
	for _, g := range groups {
		refill(&reused, g)
		if err := b.Add(&reused); err != nil {
			t.Fatal(err)
		}
		poison(&reused)
		for bt := b.Take(); bt != nil; bt = b.Take() {
			out = append(out, bt)
		}
	}
	b.Flush()
	for bt := b.Take(); bt != nil; bt = b.Take() {
		out = append(out, bt)
	}
	return out
}

func mustLayout(t testing.TB, specs []sparsenet.FieldSpec, dims []int, p sparsenet.Pooling) *sparsenet.Layout {
	t.Helper()
	l, err := sparsenet.NewLayoutFields(specs, dims, p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// refill makes dst a copy of src in dst's buffers.
func refill(dst, src *reader.Group) {
	dst.Reset(len(src.Levels))
	for k := range src.Levels {
		lv := &src.Levels[k]
		for i := 0; i < lv.Len(); i++ {
			var p int32
			if lv.Parent != nil {
				p = lv.Parent[i]
			}
			fs, ids, vs := lv.Line(i)
			dst.AddLine(k, p, fs, ids, vs)
			lv.Dense(i, func(f uint32, v []float32) { dst.AddDense(k, f, v) })
		}
	}
	for i := 0; i < src.NumSamples(); i++ {
		dst.AddLabels(src.SampleLabels(i)...)
	}
	dst.Pos, dst.Next = src.Pos, src.Next
}

// poison overwrites the features of g, as a caller reusing it would.
func poison(g *reader.Group) {
	for k := range g.Levels {
		lv := &g.Levels[k]
		for i := range lv.IDs {
			lv.IDs[i] = 0xdead
		}
		for i := range lv.Values {
			lv.Values[i] = -7
		}
		for i := range lv.DenseValues {
			lv.DenseValues[i] = -7
		}
	}
}

// TestBatchEnds interleaves groups of several streams (as a source over the
// partitions of a topic does) and checks each batch's Ends against the
// per-stream position after the stream's last sample in the batch.
func TestBatchEnds(t *testing.T) {
	l := layout2(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for it := 0; it < 40; it++ {
		var groups []*reader.Group
		next := map[string]int64{}
		for range 3 + rng.IntN(8) {
			file := []string{"p0", "p1", "p2"}[rng.IntN(3)]
			off := next[file]
			next[file]++
			var samples []string
			for s := 0; s < 1+rng.IntN(4); s++ {
				samples = append(samples, fmt.Sprintf("^0 0:%d", s))
			}
			g := grp(t, off, samples, []string{"1:1"})
			g.Pos.File, g.Next.File = file, file
			if rng.IntN(4) == 0 && len(samples) > 1 { // a resume inside the group
				g.Pos.Index = 1
			}
			groups = append(groups, g)
		}
		// the expected end after each sample, in stream order
		var after []reader.Position
		for _, g := range groups {
			for j := g.Pos.Index; j < g.NumSamples(); j++ {
				after = append(after, endAfter(g, j))
			}
		}
		bs := 1 + rng.IntN(5)
		done := 0
		for i, bt := range build(t, l, bs, groups...) {
			var want []reader.Position
			for _, p := range after[done : done+bt.N] {
				k := slices.IndexFunc(want, func(q reader.Position) bool { return q.File == p.File })
				if k < 0 {
					want = append(want, p)
				} else {
					want[k] = p
				}
			}
			done += bt.N
			if !slices.Equal(bt.Ends, want) || bt.End != after[done-1] {
				t.Fatalf("case %d batch %d: ends %v end %v, want %v and %v", it, i, bt.Ends, bt.End, want, after[done-1])
			}
		}
	}
}
