package seqgen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/xdlgo/xps/reader"
)

func mustNew(t testing.TB, cfg Config) *Generator {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func writeString(t testing.TB, g *Generator, n int, f reader.Format) string {
	t.Helper()
	var b bytes.Buffer
	if err := g.Write(&b, n, f, nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestConfigDefaultsAndValidate(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	want := Config{Items: 10000, Categories: 100, Dim: 16, ItemSpread: 0.5, Users: 100000, Segments: 20,
		MaxInterests: 4, MaxLen: 50, Noise: 0.1, DriftMix: 0.2, MeanCandidates: 5, InterestShare: 0.5,
		CurrentShare: 0.5, CTR: 0.25, Scale: 3, Beta: 3, Gamma: 8, UserStd: 0.5, Seed: 1, WorldSeed: 1}
	if c != want {
		t.Fatalf("defaults\n got %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.MinLen() != 10 {
		t.Errorf("MinLen %d, want 10", c.MinLen())
	}
	z := Config{Gamma: -1, Noise: -1}
	z.EnsureDefaults()
	if z.Gamma != 0 || z.Noise != 0 {
		t.Errorf("negative knobs: gamma %v noise %v, want 0", z.Gamma, z.Noise)
	}
	bad := Config{Items: 5, Categories: 3, Dim: 300, MaxInterests: 20, MaxLen: -2, Users: -1, MeanCandidates: 0.5,
		InterestShare: 2, CurrentShare: 2, CTR: 1, Scale: 200, Beta: 200, Gamma: 200, UserStd: 20, Noise: 2, DriftMix: 2}
	bad.EnsureDefaults()
	err := bad.Validate()
	for _, s := range []string{"max interests", "categories", "dim", "max len", "users", "mean candidates", "interest share",
		"current share", "ctr", "scale", "beta", "gamma", "user std", "noise", "drift mix"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Validate() = %v; want a complaint about %q", err, s)
		}
	}
	if !errors.Is(err, ErrBadConfig) {
		t.Error("Validate() does not wrap ErrBadConfig")
	}
	if _, err := New(Config{Categories: 7}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("New with 7 categories for 4 interests: %v", err)
	}
}

// TestDeterministic checks invariant 3: one stream per Config, whatever
// the calls; Seed changes the stream and not the world; Fork draws another
// stream of the same world.
func TestDeterministic(t *testing.T) {
	cfg := Config{Seed: 7, Drift: true}
	a := writeString(t, mustNew(t, cfg), 3000, reader.LibFFM)
	g := mustNew(t, cfg)
	b := writeString(t, g, 1000, reader.LibFFM) + writeString(t, g, 2000, reader.LibFFM)
	if a != b {
		t.Fatal("same Config, different samples (one Write against two)")
	}
	other := mustNew(t, Config{Seed: 8, Drift: true})
	if other.Bias() != g.Bias() {
		t.Error("the bias depends on Seed")
	}
	c := writeString(t, other, 3000, reader.LibFFM)
	if a == c {
		t.Error("different seeds, same samples")
	}
	f := g.Fork(TestStream)
	if f.Bias() != g.Bias() || f.Config().Seed == cfg.Seed || f.w != g.w {
		t.Error("Fork changed the world or kept the seed")
	}
	if writeString(t, mustNew(t, cfg).Fork(TestStream), 500, reader.LibFFM) != writeString(t, f, 500, reader.LibFFM) {
		t.Error("Fork is not deterministic")
	}
	if mustNew(t, Config{WorldSeed: 2, Drift: true}).Bias() == g.Bias() {
		t.Error("the bias does not depend on WorldSeed")
	}
}

// groupLine is a parsed line of the group format: its level and its
// tokens by field, in order.
type groupLine struct {
	level  int
	label  string
	fields map[int][]int
	order  []int // the field of each token
}

func parseGroups(t *testing.T, text string) [][]groupLine {
	t.Helper()
	var out [][]groupLine
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		toks := strings.Fields(line)
		if toks[0] == "group" {
			out = append(out, nil)
			continue
		}
		gl := groupLine{level: int(toks[0][0] - '0'), label: toks[2], fields: map[int][]int{}}
		for _, tok := range toks[3:] {
			f, v, _ := strings.Cut(tok, ":")
			fi, err1 := strconv.Atoi(f)
			vi, err2 := strconv.Atoi(v)
			if err1 != nil || err2 != nil {
				t.Fatalf("bad token %q", tok)
			}
			gl.fields[fi] = append(gl.fields[fi], vi)
			gl.order = append(gl.order, fi)
		}
		out[len(out)-1] = append(out[len(out)-1], gl)
	}
	return out
}

// TestFieldsAndAlignment checks invariants 1 and 2 and the group shape on
// the group output, with and without drift.
func TestFieldsAndAlignment(t *testing.T) {
	for _, drift := range []bool{false, true} {
		g := mustNew(t, Config{Drift: drift, Seed: 3})
		cfg := g.Config()
		groups := parseGroups(t, writeString(t, g, 5000, reader.SampleGroup))
		samples, lens := 0, map[int]bool{}
		for _, grp := range groups {
			u := grp[0]
			if u.level != 1 || u.label != "-" {
				t.Fatalf("first line of a group: %+v", u)
			}
			if !slices.IsSorted(u.order) || len(u.fields[0]) != 1 || len(u.fields[1]) != 1 || u.fields[1][0] >= cfg.Segments {
				t.Fatalf("level-1 fields out of order or not single: %v", u.order)
			}
			hist, negs := u.fields[2], u.fields[4]
			n := len(hist)
			lens[n] = true
			if n < cfg.MinLen() || n > cfg.MaxLen || len(u.fields[3]) != n || len(negs) != n || len(u.fields[5]) != n {
				t.Fatalf("sequence fields of lengths %d %d %d %d", n, len(u.fields[3]), len(negs), len(u.fields[5]))
			}
			for i := range n {
				if u.fields[3][i] != hist[i]%cfg.Categories || u.fields[5][i] != negs[i]%cfg.Categories {
					t.Fatal("categories not aligned with their items")
				}
				if slices.Contains(hist, negs[i]) {
					t.Fatalf("negative %d is in the history", negs[i])
				}
			}
			for _, c := range grp[1:] {
				if c.level != 0 || (c.label != "0" && c.label != "1") || !slices.Equal(c.order, []int{6, 7}) ||
					c.fields[7][0] != c.fields[6][0]%cfg.Categories || c.fields[6][0] >= cfg.Items {
					t.Fatalf("candidate line %+v", c)
				}
				samples++
			}
		}
		mean := float64(samples) / float64(len(groups))
		if samples != 5000 || mean < 4 || mean > 6 || len(lens) < 30 {
			t.Fatalf("%d samples in %d groups (mean %.2f), %d history lengths", samples, len(groups), mean, len(lens))
		}
	}
}

// TestGroupMatchesLibFFM reads both formats back: the same samples, labels
// and feature ids; NextGroup draws them too, with the same probabilities.
func TestGroupMatchesLibFFM(t *testing.T) {
	cfg := Config{Seed: 5, Drift: true}
	var pg, pf []float32
	var group, ffm bytes.Buffer
	g := mustNew(t, cfg)
	for _, n := range []int{700, 300} { // two calls: the second starts within a group
		if err := g.Write(&group, n, reader.SampleGroup, func(_, p float32) { pg = append(pg, p) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := mustNew(t, cfg).Write(&ffm, 1000, reader.LibFFM, func(_, p float32) { pf = append(pf, p) }); err != nil {
		t.Fatal(err)
	}
	gs, fs := readAll(t, "group", group.String()), readAll(t, "libffm", ffm.String())
	ng := mustNew(t, cfg)
	var pn []float32
	var grp reader.Group
	k := 0
	for _, rg := range gs {
		pn = ng.NextGroup(&grp, rg.NumSamples(), pn)
		uf, uid, _ := rg.Levels[1].Line(0)
		nf, nid, _ := grp.Levels[1].Line(0)
		if grp.NumSamples() != rg.NumSamples() || !slices.Equal(uf, nf) || !slices.Equal(uid, nid) {
			t.Fatalf("group at sample %d: NextGroup differs from the file", k)
		}
		for s := 0; s < rg.NumSamples(); s++ {
			f0, id0, _ := rg.Levels[0].Line(s)
			ff, fid, _ := fs[k].Levels[0].Line(0)
			_, nid0, _ := grp.Levels[0].Line(s)
			if rg.Label(s) != fs[k].Label(0) || rg.Label(s) != grp.Label(s) || !slices.Equal(id0, nid0) ||
				!slices.Equal(ff, append(slices.Clone(uf), f0...)) || !slices.Equal(fid, append(slices.Clone(uid), id0...)) {
				t.Fatalf("sample %d differs between the outputs", k)
			}
			k++
		}
	}
	if k != 1000 || len(fs) != 1000 || !slices.Equal(pg, pf) || !slices.Equal(pg, pn) {
		t.Fatalf("%d group samples, %d libffm lines; same probabilities %v %v", k, len(fs), slices.Equal(pg, pf), slices.Equal(pg, pn))
	}
}

func readAll(t *testing.T, format, text string) []*reader.Group {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := reader.ParseFormat(format)
	src, err := reader.OpenFiles([]reader.FileSplit{{Path: path}}, f, reader.StopOnBad)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := reader.ReadAll(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNextGroupCap checks that NextGroup splits a group at max samples.
func TestNextGroupCap(t *testing.T) {
	g := mustNew(t, Config{MeanCandidates: 20})
	var grp reader.Group
	for range 50 {
		g.NextGroup(&grp, 3, nil)
		if err := grp.Validate(); err != nil || grp.NumSamples() < 1 || grp.NumSamples() > 3 {
			t.Fatalf("group of %d samples (%v), max 3", grp.NumSamples(), err)
		}
	}
}

// TestWriteStreams checks invariant 4: once warm, Write allocates only its
// buffered writer, however many samples it writes.
func TestWriteStreams(t *testing.T) {
	g := mustNew(t, Config{Drift: true})
	writeString(t, g, 2000, reader.LibFFM)
	for _, f := range []reader.Format{reader.LibFFM, reader.SampleGroup} {
		allocs := testing.AllocsPerRun(3, func() {
			if err := g.Write(io.Discard, 5000, f, nil); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 4 {
			t.Errorf("%v: %.0f allocations per 5000 samples", f, allocs)
		}
	}
	if err := g.Write(io.Discard, 1, reader.LibFM, nil); !errors.Is(err, ErrFormat) {
		t.Errorf("libfm: %v, want ErrFormat", err)
	}
}
