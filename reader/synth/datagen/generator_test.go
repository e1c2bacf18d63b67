package datagen

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/xdlgo/xps/model/metrics"
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

func sameDataset(a, b *reader.Dataset) bool {
	return slices.Equal(a.Labels, b.Labels) && slices.Equal(a.Offsets, b.Offsets) &&
		slices.Equal(a.Fields, b.Fields) && slices.Equal(a.IDs, b.IDs) &&
		slices.Equal(a.Values, b.Values) && a.NumFields == b.NumFields
}

func TestConfigDefaultsAndValidate(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	want := Config{Fields: 23, UserFields: 10, MeanBag: 3, Vocab: 100000, ZipfS: 1.1, SamplesPerUser: 20,
		Users: 100000, Seed: 1, WorldSeed: 1, CTR: 0.2, LogitStd: 1.5, RankScale: 10, InteractionShare: 0.15}
	if c != want {
		t.Fatalf("defaults\n got %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Config{Fields: 1, UserFields: 5, MeanBag: 0.5, Vocab: -1, ZipfS: 1, SamplesPerUser: 0.5, Users: -3,
		CTR: 1, LogitStd: -1, RankScale: -1, InteractionShare: 1, DriftLifetime: -1}
	err := bad.Validate()
	for _, s := range []string{"fields 1", "user fields", "mean bag", "vocab", "zipf", "samples per user", "users",
		"ctr", "logit std", "rank scale", "interaction share", "drift lifetime"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Validate() = %v; want a complaint about %q", err, s)
		}
	}
	if !errors.Is(err, ErrBadConfig) {
		t.Errorf("Validate() does not wrap ErrBadConfig")
	}
	if _, err := New(Config{UserFields: 23}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("New with UserFields == Fields: %v", err)
	}
}

func TestDeterministic(t *testing.T) {
	cfg := Config{Seed: 7}
	a, b := reader.NewDataset(), reader.NewDataset()
	pa := mustNew(t, cfg).Generate(a, 3000)
	g := mustNew(t, cfg)
	// Successive calls continue one stream.
	pb := append(g.Generate(b, 1000), g.Generate(b, 2000)...)
	if !sameDataset(a, b) || !slices.Equal(pa, pb) {
		t.Fatal("same seed, different samples")
	}
	c := reader.NewDataset()
	mustNew(t, Config{Seed: 8}).Generate(c, 3000)
	if slices.Equal(a.IDs[:1000], c.IDs[:1000]) {
		t.Error("different seeds, same samples")
	}
}

func TestWorldSeedFixesTeacher(t *testing.T) {
	g1 := mustNew(t, Config{Seed: 1})
	g2 := mustNew(t, Config{Seed: 2})
	g3 := mustNew(t, Config{Seed: 1, WorldSeed: 2})
	if g1.Bias() != g2.Bias() || g1.t.first != g2.t.first || g1.t.inter != g2.t.inter {
		t.Error("the teacher depends on Seed")
	}
	if g1.Bias() == g3.Bias() {
		t.Error("the teacher does not depend on WorldSeed")
	}
	// A user's profile is a function of the user and the world.
	for u := range uint64(20) {
		g1.loadUser(u)
		g2.loadUser(u)
		if !slices.Equal(g1.user, g2.user) || g1.userFirst != g2.userFirst {
			t.Fatalf("user %d has different profiles under different Seeds", u)
		}
		g3.loadUser(u)
		if slices.Equal(g1.user, g3.user) {
			t.Fatalf("user %d has the same profile in two worlds", u)
		}
	}
}

func TestWriteLibFFMReadsBackToGenerate(t *testing.T) {
	cfg := Config{Seed: 3}
	want := reader.NewDataset()
	wantProbs := mustNew(t, cfg).Generate(want, 2000)
	var buf bytes.Buffer
	probs, err := mustNew(t, cfg).WriteLibFFM(&buf, 2000)
	if err != nil {
		t.Fatal(err)
	}
	got, st, err := reader.Read(&buf, "gen", reader.ReadOptions{Format: reader.LibFFM})
	if err != nil {
		t.Fatal(err)
	}
	if st.Samples != 2000 || !sameDataset(got, want) || !slices.Equal(probs, wantProbs) {
		t.Fatalf("read back %d samples; same dataset %v, same probs %v", st.Samples, sameDataset(got, want), slices.Equal(probs, wantProbs))
	}
}

func TestShape(t *testing.T) {
	g := mustNew(t, Config{Seed: 5})
	cfg := g.Config()
	ds := reader.NewDataset()
	const n = 20000
	runs, itemRepeats := 1, 0
	for i := range n {
		g.Generate(ds, 1)
		if i == 0 {
			continue
		}
		prevUser, prevItem := splitFields(ds, i-1, cfg.UserFields)
		user, item := splitFields(ds, i, cfg.UserFields)
		if !slices.Equal(prevUser, user) {
			runs++
		}
		if slices.Equal(prevItem, item) {
			itemRepeats++
		}
	}
	// Runs have mean length SamplesPerUser (geometric: sd of the mean ~0.6 here).
	if mean := float64(n) / float64(runs); mean < 17 || mean > 23 {
		t.Errorf("mean run length %.1f, want about %v", mean, cfg.SamplesPerUser)
	}
	if itemRepeats > 0 {
		t.Errorf("%d consecutive samples repeat all item fields", itemRepeats)
	}
	if ds.NumFields != cfg.Fields {
		t.Errorf("NumFields %d", ds.NumFields)
	}
	perField := float64(ds.NumFeatures()) / n / float64(cfg.Fields)
	if perField < 2.8 || perField > 3.1 {
		t.Errorf("%.2f ids per field, want about MeanBag = 3", perField)
	}
	for i := range ds.Len() {
		_, fields, ids, values := ds.Sample(i)
		if !slices.IsSorted(fields) {
			t.Fatalf("sample %d: fields out of order: %v", i, fields)
		}
		for k := range ids {
			if values[k] != 1 {
				t.Fatalf("sample %d: value %v", i, values[k])
			}
			for k2 := k + 1; k2 < len(ids) && fields[k2] == fields[k]; k2++ {
				if ids[k2] == ids[k] {
					t.Fatalf("sample %d: id %d twice in field %d", i, ids[k], fields[k])
				}
			}
		}
	}
}

func TestTinyVocab(t *testing.T) {
	// Bags cannot be filled from a vocabulary of 1 or 2; the generator must still
	// terminate with valid, duplicate-free bags.
	for vocab := 1; vocab <= 2; vocab++ {
		g := mustNew(t, Config{Fields: 3, UserFields: 1, Vocab: vocab, MeanBag: 8, SamplesPerUser: 1, Users: 1})
		ds := reader.NewDataset()
		probs := g.Generate(ds, 200)
		for i := range ds.Len() {
			if !(probs[i] > 0 && probs[i] < 1) {
				t.Fatalf("vocab %d: sample %d has probability %v", vocab, i, probs[i])
			}
			_, fields, _, _ := ds.Sample(i)
			if len(fields) < 3 || len(fields) > 3*vocab {
				t.Fatalf("vocab %d: sample %d has %d features, want 1 to %d per field", vocab, i, len(fields), vocab)
			}
		}
	}
}

// splitFields returns the ids of sample i's user fields and item fields.
func splitFields(ds *reader.Dataset, i, userFields int) (user, item []uint64) {
	_, fields, ids, _ := ds.Sample(i)
	k := 0
	for k < len(fields) && int(fields[k]) < userFields {
		k++
	}
	return ids[:k], ids[k:]
}

func TestRunsShareUserFieldsExactly(t *testing.T) {
	g := mustNew(t, Config{Seed: 9, SamplesPerUser: 5})
	ds := reader.NewDataset()
	for i := range 3000 {
		sameRun := g.remaining > 0 // the next sample continues the run
		g.Generate(ds, 1)
		if i > 0 && sameRun {
			a, _ := splitFields(ds, i-1, 10)
			b, _ := splitFields(ds, i, 10)
			if !slices.Equal(a, b) {
				t.Fatalf("sample %d: user fields changed within a run", i)
			}
		}
	}
}

// TestBayesAUCAndCTR checks the defaults: base CTR near 0.2 and a Bayes AUC
// (the AUC of the teacher's own probabilities) in the documented range.
func TestBayesAUCAndCTR(t *testing.T) {
	g := mustNew(t, Config{})
	ds := reader.NewDataset()
	probs := g.Generate(ds, 40000)
	var ctr, meanP float64
	for i, y := range ds.Labels {
		ctr += float64(y)
		meanP += float64(probs[i])
	}
	ctr /= float64(ds.Len())
	meanP /= float64(ds.Len())
	auc := metrics.AUC(ds.Labels, probs)
	ll := metrics.LogLoss(ds.Labels, probs)
	t.Logf("CTR %.4f (mean p %.4f), Bayes AUC %.4f, Bayes log loss %.4f, bias %.3f", ctr, meanP, auc, ll, g.Bias())
	if ctr < 0.17 || ctr > 0.23 || meanP < 0.17 || meanP > 0.23 {
		t.Errorf("CTR %.4f, mean probability %.4f; want about 0.2", ctr, meanP)
	}
	if auc < 0.78 || auc > 0.85 {
		t.Errorf("Bayes AUC %.4f, want in [0.78, 0.85]", auc)
	}
	// The CTR knob works elsewhere too.
	g = mustNew(t, Config{CTR: 0.05, LogitStd: 1})
	ds = reader.NewDataset()
	probs = g.Generate(ds, 20000)
	var sum float64
	for _, p := range probs {
		sum += float64(p)
	}
	if m := sum / 20000; m < 0.04 || m > 0.06 {
		t.Errorf("CTR 0.05: mean probability %.4f", m)
	}
}

func BenchmarkGenerate(b *testing.B) {
	g := mustNew(b, Config{})
	ds := reader.NewDataset()
	for b.Loop() {
		if ds.Len() >= 100000 {
			ds = reader.NewDataset()
		}
		g.Generate(ds, 1)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
