package movielens

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// synthRating is one line of a synthetic u.data.
type synthRating struct {
	user, item, rating int
	ts                 int64
}

// writeSynthetic writes a MovieLens-shaped directory: users 1..users,
// items 1..items (item k has genre flags k%19 and, for even k, (k+5)%19;
// the last item has none) and the ratings.
func writeSynthetic(t *testing.T, users, items int, ratings []synthRating) string {
	t.Helper()
	dir := t.TempDir()
	var u, it, data strings.Builder
	for i := 1; i <= users; i++ {
		fmt.Fprintf(&u, "%d|%d|%s|job%d|%05d\n", i, 20+i, []string{"M", "F"}[i%2], i%3, 10000+i)
	}
	for k := 1; k <= items; k++ {
		flags := make([]string, 19)
		for g := range flags {
			flags[g] = "0"
		}
		if k < items {
			flags[k%19] = "1"
			if k%2 == 0 {
				flags[(k+5)%19] = "1"
			}
		}
		fmt.Fprintf(&it, "%d|Movie %d (1995)|01-Jan-1995||http://x|%s\n", k, k, strings.Join(flags, "|"))
	}
	for _, r := range ratings {
		fmt.Fprintf(&data, "%d\t%d\t%d\t%d\n", r.user, r.item, r.rating, r.ts)
	}
	for name, s := range map[string]string{"u.user": u.String(), "u.item": it.String(), "u.data": data.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustSequences(t *testing.T, dir string, opt SeqOptions) (*Dataset, *Sequences) {
	t.Helper()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Sequences(RatingsFile, opt)
	if err != nil {
		t.Fatal(err)
	}
	return d, s
}

func write(t *testing.T, s *Sequences, p Part) (group, ffm string, c Counts) {
	t.Helper()
	var g, f bytes.Buffer
	c, err := s.Write(p, &g, &f)
	if err != nil {
		t.Fatal(err)
	}
	return g.String(), f.String(), c
}

// TestSequencesGolden checks the exact output of one user: ties ordered by
// item id, same-second ratings sharing one history (and one group), the
// history capped at 2 and the test part's history reaching into train.
// Item 6 is the only unrated one, so every negative is 6 (main genre 0).
func TestSequencesGolden(t *testing.T) {
	dir := writeSynthetic(t, 1, 6, []synthRating{
		{1, 3, 4, 100}, {1, 2, 2, 100}, {1, 5, 5, 90}, {1, 1, 3, 200}, {1, 4, 4, 300},
	})
	_, s := mustSequences(t, dir, SeqOptions{History: 2})
	if s.Cutoff() != 300 || s.Ratings(Train) != 4 || s.Ratings(Test) != 1 {
		t.Fatalf("cutoff %d, %d train and %d test ratings; want 300, 4, 1", s.Cutoff(), s.Ratings(Train), s.Ratings(Test))
	}
	user := "0:1 1:21 2:F 3:job1 4:10001"
	train, _, c := write(t, s, Train)
	want := "group 2\n1 - - " + user + "\n0 0 1 5:5 6:5 7:5\n" +
		"group 2\n1 - - " + user + " 8:5 9:5 10:6 11:0\n0 0 0 5:2 6:2 6:7 7:2\n0 0 1 5:3 6:3 7:3\n" +
		"group 2\n1 - - " + user + " 8:2 8:3 9:2 9:3 10:6 10:6 11:0 11:0\n0 0 0 5:1 6:1 7:1\n"
	if train != want {
		t.Fatalf("train\n%s\nwant\n%s", train, want)
	}
	if c != (Counts{Samples: 4, Groups: 3, Positives: 2, EmptyHistory: 1, HistoryItems: 0 + 1 + 1 + 2}) {
		t.Fatalf("train counts %+v", c)
	}
	test, ffm, _ := write(t, s, Test)
	want = "group 2\n1 - - " + user + " 8:3 8:1 9:3 9:1 10:6 10:6 11:0 11:0\n0 0 1 5:4 6:4 6:9 7:4\n"
	if test != want {
		t.Fatalf("test\n%s\nwant\n%s", test, want)
	}
	wantFFM := "1 0:1:1 1:21:1 2:F:1 3:job1:1 4:10001:1 8:3:1 8:1:1 9:3:1 9:1:1 10:6:1 10:6:1 11:0:1 11:0:1 5:4:1 6:4:1 6:9:1 7:4:1\n"
	if ffm != wantFFM {
		t.Fatalf("test libffm\n%s\nwant\n%s", ffm, wantFFM)
	}
}

// randomRatings draws each user's ratings of distinct items, with
// timestamps in a small range so that many share their second.
func randomRatings(users, items int, seed uint64) []synthRating {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []synthRating
	for u := 1; u <= users; u++ {
		n := 1 + r.IntN(items-2)
		for _, k := range r.Perm(items)[:n] {
			out = append(out, synthRating{u, k + 1, 1 + r.IntN(5), int64(1000 + r.IntN(40))})
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// parsedSample is a libFFM line of the output, its tokens by field.
type parsedSample struct {
	label  string
	fields map[int][]string
}

func parseFFM(t *testing.T, text string) []parsedSample {
	t.Helper()
	var out []parsedSample
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		toks := strings.Fields(line)
		s := parsedSample{label: toks[0], fields: map[int][]string{}}
		for _, tok := range toks[1:] {
			parts := strings.Split(tok, ":")
			f, err := strconv.Atoi(parts[0])
			if err != nil || len(parts) != 3 || parts[2] != "1" {
				t.Fatalf("bad feature %q in %q", tok, line)
			}
			s.fields[f] = append(s.fields[f], parts[1])
		}
		out = append(out, s)
	}
	return out
}

// TestSequencesAgainstReference checks every sample of random data against
// a naive recomputation: order, history, genres, negatives, labels and the
// time split.
func TestSequencesAgainstReference(t *testing.T) {
	const users, items, history = 6, 30, 4
	ratings := randomRatings(users, items, 3)
	dir := writeSynthetic(t, users, items, ratings)
	d, s := mustSequences(t, dir, SeqOptions{History: history})
	rated := map[[2]string]synthRating{}
	for _, r := range ratings {
		rated[[2]string{strconv.Itoa(r.user), strconv.Itoa(r.item)}] = r
	}
	// The naive order: all ratings by (user, ts, item).
	want := slices.Clone(ratings)
	slices.SortFunc(want, func(a, b synthRating) int {
		return cmpInt64(int64(a.user)*1e9+a.ts, int64(b.user)*1e9+b.ts)*2 + cmpInt64(int64(a.item), int64(b.item))
	})
	var got []parsedSample
	for _, p := range []Part{Train, Test} {
		_, ffm, c := write(t, s, p)
		ps := parseFFM(t, ffm)
		if c.Samples != len(ps) || c.Samples != s.Ratings(p) {
			t.Fatalf("%v: %d samples counted, %d written, %d ratings", p, c.Samples, len(ps), s.Ratings(p))
		}
		for _, x := range ps {
			r := rated[[2]string{x.fields[0][0], x.fields[5][0]}]
			if (p == Test) != (r.ts >= s.Cutoff()) {
				t.Fatalf("rating %+v in %v, cutoff %d", r, p, s.Cutoff())
			}
		}
		got = append(got, ps...)
	}
	if len(got) != len(ratings) {
		t.Fatalf("%d samples, %d ratings", len(got), len(ratings))
	}
	// Train ratings precede test ratings within a user, so the two parts
	// are the naive order once each user's samples are put back together.
	slices.SortStableFunc(got, func(a, b parsedSample) int {
		ua, _ := strconv.Atoi(a.fields[0][0])
		ub, _ := strconv.Atoi(b.fields[0][0])
		return ua - ub
	})
	for i, r := range want {
		checkSample(t, d, r, got[i], naiveHistory(ratings, r, history), rated)
	}
}

// naiveHistory returns the items of the user's last n ratings strictly
// before r's second, oldest first.
func naiveHistory(all []synthRating, r synthRating, n int) []string {
	var before []synthRating
	for _, x := range all {
		if x.user == r.user && x.ts < r.ts {
			before = append(before, x)
		}
	}
	slices.SortFunc(before, func(a, b synthRating) int { return cmpInt64(a.ts*1e6+int64(a.item), b.ts*1e6+int64(b.item)) })
	var out []string
	for _, x := range before[max(0, len(before)-n):] {
		out = append(out, strconv.Itoa(x.item))
	}
	return out
}

func checkSample(t *testing.T, d *Dataset, r synthRating, x parsedSample, hist []string, rated map[[2]string]synthRating) {
	t.Helper()
	user, item := strconv.Itoa(r.user), strconv.Itoa(r.item)
	label := map[bool]string{true: "1", false: "0"}[r.rating >= 4]
	if x.fields[0][0] != user || x.fields[5][0] != item || x.label != label {
		t.Fatalf("sample user %s item %s label %s; want %+v", x.fields[0][0], x.fields[5][0], x.label, r)
	}
	if !slices.Equal(x.fields[FieldHistItems], hist) {
		t.Fatalf("rating %+v: history %v, want %v", r, x.fields[FieldHistItems], hist)
	}
	negs := x.fields[FieldNegItems]
	if len(negs) != len(hist) || len(x.fields[FieldHistGenres]) != len(hist) || len(x.fields[FieldNegGenres]) != len(hist) {
		t.Fatalf("rating %+v: sequence fields not aligned: %v", r, x.fields)
	}
	main := func(id string) string { return d.items[id].main }
	for i := range hist {
		if _, ok := rated[[2]string{user, negs[i]}]; ok {
			t.Fatalf("user %s: negative %s was rated", user, negs[i])
		}
		if x.fields[FieldHistGenres][i] != main(hist[i]) || x.fields[FieldNegGenres][i] != main(negs[i]) {
			t.Fatalf("rating %+v: genres do not match their movies", r)
		}
	}
	if x.fields[FieldMainGenre][0] != main(item) || !slices.Equal(x.fields[6], d.items[item].genres) {
		t.Fatalf("rating %+v: item genres %v %v", r, x.fields[6], x.fields[FieldMainGenre])
	}
}

// TestSequencesNegativesStable checks that a movie keeps its negative in
// every history, and that another Seed draws other negatives.
func TestSequencesNegativesStable(t *testing.T) {
	dir := writeSynthetic(t, 3, 40, randomRatings(3, 40, 5))
	negs := func(seed uint64) map[[2]string]string {
		_, s := mustSequences(t, dir, SeqOptions{History: 50, Seed: seed})
		m := map[[2]string]string{}
		for _, p := range []Part{Train, Test} {
			_, ffm, _ := write(t, s, p)
			for _, x := range parseFFM(t, ffm) {
				for i, h := range x.fields[FieldHistItems] {
					k := [2]string{x.fields[0][0], h}
					if n, ok := m[k]; ok && n != x.fields[FieldNegItems][i] {
						t.Fatalf("movie %v has negatives %s and %s", k, n, x.fields[FieldNegItems][i])
					}
					m[k] = x.fields[FieldNegItems][i]
				}
			}
		}
		return m
	}
	a, b := negs(1), negs(2)
	same := 0
	for k, n := range a {
		if b[k] == n {
			same++
		}
	}
	if len(a) < 20 || same > len(a)/2 {
		t.Fatalf("%d of %d negatives unchanged by another seed", same, len(a))
	}
}

// TestSequencesGroupMatchesLibFFM reads both outputs of random data back.
func TestSequencesGroupMatchesLibFFM(t *testing.T) {
	dir := writeSynthetic(t, 5, 25, randomRatings(5, 25, 9))
	_, s := mustSequences(t, dir, SeqOptions{History: 3})
	for _, p := range []Part{Train, Test} {
		group, ffm, c := write(t, s, p)
		checkSameIDs(t, group, ffm, c)
	}
}

// checkSameIDs reads both outputs and checks that they hold the same
// samples: labels and feature ids (user line, then item line).
func checkSameIDs(t *testing.T, group, ffm string, c Counts) {
	t.Helper()
	gs := readAll(t, "group", group)
	fs := readAll(t, "libffm", ffm)
	if len(gs) != c.Groups || len(fs) != c.Samples {
		t.Fatalf("%d groups and %d libffm lines read back; counts %+v", len(gs), len(fs), c)
	}
	k := 0
	for _, g := range gs {
		uf, uid, _ := g.Levels[1].Line(0)
		for s := 0; s < g.NumSamples(); s++ {
			f0, id0, _ := g.Levels[0].Line(s)
			ff, fid, _ := fs[k].Levels[0].Line(0)
			if g.Label(s) != fs[k].Label(0) || !slices.Equal(ff, append(slices.Clone(uf), f0...)) ||
				!slices.Equal(fid, append(slices.Clone(uid), id0...)) {
				t.Fatalf("sample %d differs between the two outputs", k)
			}
			k++
		}
	}
}

func TestSequencesErrors(t *testing.T) {
	dir := writeSynthetic(t, 1, 3, []synthRating{{1, 1, 4, 10}, {1, 2, 4, 11}, {1, 3, 4, 12}})
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Sequences(RatingsFile, SeqOptions{History: -1}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("history -1: %v", err)
	}
	if _, err := d.Sequences(RatingsFile, SeqOptions{}); err == nil || !strings.Contains(err.Error(), "rated every movie") {
		t.Errorf("a user who rated every movie: %v", err)
	}
	if _, err := d.Sequences("missing", SeqOptions{}); err == nil {
		t.Error("a missing ratings file: no error")
	}
}

// TestSequencesRealData converts MovieLens-100K with the recommended
// history and prints the counts of the split. It reads the test part back
// (the train part's 100 MB of libFFM would take seconds more).
func TestSequencesRealData(t *testing.T) {
	if _, err := os.Stat(filepath.Join(dataDir, RatingsFile)); err != nil {
		t.Skipf("MovieLens-100K is absent (%v): ../shared/data/ml-100k is needed for this test", err)
	}
	_, s := mustSequences(t, dataDir, SeqOptions{History: DefaultHistory})
	total := 0
	for _, p := range []Part{Train, Test} {
		group, ffm, c := write(t, s, p)
		t.Logf("%v: %d samples (%d positive) in %d groups, %d without history, mean history %.1f; cutoff %d",
			p, c.Samples, c.Positives, c.Groups, c.EmptyHistory, float64(c.HistoryItems)/float64(c.Samples), s.Cutoff())
		if c.Samples != s.Ratings(p) {
			t.Fatalf("%v: %d samples written, %d ratings", p, c.Samples, s.Ratings(p))
		}
		if p == Test {
			checkSameIDs(t, group, ffm, c)
		}
		total += c.Samples
	}
	if total != 100000 || s.Ratings(Test) < 20000 || s.Ratings(Test) > 20100 {
		t.Fatalf("%d ratings, %d test; want 100000 and the latest 20%%", total, s.Ratings(Test))
	}
}
