package parquetsrc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/xdlgo/xps/reader"
)

// groupText writes rows in the sample-group format, in the groups the
// source forms: runs of one user (cut at multiples of MaxGroupRows) when
// grouped, else a group a row.
func groupText(rows []trow, grouped, withDense bool) string {
	var b strings.Builder
	for i := 0; i < len(rows); {
		j := i + 1
		parent := "-"
		if grouped {
			for j < len(rows) && rows[j].user == rows[i].user && j%MaxGroupRows != 0 {
				j++
			}
			fmt.Fprintf(&b, "group 2\n1 - - %s\n", strings.Join(features(rows[i], true, true, withDense), " "))
			parent = "0"
		} else {
			b.WriteString("group 1\n")
		}
		for k := i; k < j; k++ {
			fmt.Fprintf(&b, "0 %s %d %s\n", parent, rows[k].label, strings.Join(features(rows[k], grouped, false, withDense), " "))
		}
		i = j
	}
	return b.String()
}

// libffmText writes rows in libFFM.
func libffmText(rows []trow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%d %s\n", r.label, strings.Join(features(r, false, false, false), " "))
	}
	return b.String()
}

// readText reads text of format f with the reader package.
func readText(t testing.TB, dir, text string, f reader.Format) []*reader.Group {
	t.Helper()
	path := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	dec, err := reader.NewDecoder(f)
	if err != nil {
		t.Fatal(err)
	}
	src, err := reader.NewFileSource([]reader.FileSplit{{Path: path}}, reader.FileSourceOptions{Decoder: dec})
	if err != nil {
		t.Fatal(err)
	}
	return drain(t, src)
}

// drain reads every group of src (closing it).
func drain(t testing.TB, src reader.Source) []*reader.Group {
	t.Helper()
	defer src.Close()
	var out []*reader.Group
	for {
		var g reader.Group
		err := src.Next(context.Background(), &g)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		out = append(out, &g)
	}
}

func openSource(t testing.TB, splits []reader.FileSplit, o Options) *Source {
	t.Helper()
	src, err := NewSource(splits, o)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// sameSamples reports the first difference between two groups' levels
// and labels (positions aside), or "".
func sameSamples(a, b *reader.Group) string {
	if len(a.Levels) != len(b.Levels) {
		return fmt.Sprintf("%d levels against %d", len(a.Levels), len(b.Levels))
	}
	if !slices.Equal(a.Labels, b.Labels) || !slices.Equal(a.LabelOffsets, b.LabelOffsets) {
		return fmt.Sprintf("labels %v against %v", a.Labels, b.Labels)
	}
	for k := range a.Levels {
		x, y := &a.Levels[k], &b.Levels[k]
		switch {
		case !slices.Equal(x.Parent, y.Parent):
			return fmt.Sprintf("level %d: parents %v against %v", k, x.Parent, y.Parent)
		case !slices.Equal(x.Offsets, y.Offsets) || !slices.Equal(x.Fields, y.Fields):
			return fmt.Sprintf("level %d: fields %v %v against %v %v", k, x.Offsets, x.Fields, y.Offsets, y.Fields)
		case !slices.Equal(x.IDs, y.IDs):
			return fmt.Sprintf("level %d: ids differ (fields %v)", k, x.Fields)
		case !slices.Equal(x.Values, y.Values):
			return fmt.Sprintf("level %d: values %v against %v", k, x.Values, y.Values)
		case !slices.Equal(x.DenseOffsets, y.DenseOffsets) || !slices.Equal(x.DenseFields, y.DenseFields) ||
			!slices.Equal(x.DenseEnds, y.DenseEnds) || !slices.Equal(x.DenseValues, y.DenseValues):
			return fmt.Sprintf("level %d: dense %v %v against %v %v", k, x.DenseFields, x.DenseValues, y.DenseFields, y.DenseValues)
		}
	}
	return ""
}

func compareGroups(t *testing.T, got, want []*reader.Group) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d groups from Parquet, %d from the text", len(got), len(want))
	}
	for i := range got {
		if d := sameSamples(got[i], want[i]); d != "" {
			t.Fatalf("group %d (Parquet %v): %s", i, got[i].Pos, d)
		}
	}
}

// writers are the ways the test files are written: both codecs, plain
// and dictionary pages, both list encodings, pages v1 and v2, small
// pages and row groups.
var writers = []wopts{
	{codec: compress.Codecs.Snappy, dict: true},
	{codec: compress.Codecs.Zstd, dict: false},
	{codec: compress.Codecs.Snappy, dict: true, twoLevel: true},
	{codec: compress.Codecs.Zstd, dict: true, v2: true, pageSize: 512, rowGroup: 700},
	{codec: compress.Codecs.Uncompressed, dict: false, twoLevel: true, pageSize: 300, rowGroup: 333},
}

// TestSameSamplesAsText: every writer's file gives the samples, bit for
// bit, of the same rows in the sample-group format (grouped by user or a
// row a group, with dense features) and in libFFM.
func TestSameSamplesAsText(t *testing.T) {
	for _, o := range writers {
		t.Run(o.String(), func(t *testing.T) {
			dir := t.TempDir()
			rows := genRows(2500, 1, !o.twoLevel)
			path := filepath.Join(dir, "part-0.parquet")
			writeArrow(t, path, rows, o)
			for _, grouped := range []bool{false, true} {
				got := drain(t, openSource(t, []reader.FileSplit{{Path: path}}, Options{Columns: testColumns(grouped, true)}))
				compareGroups(t, got, readText(t, dir, groupText(rows, grouped, true), reader.SampleGroup))
			}
			got := drain(t, openSource(t, []reader.FileSplit{{Path: path}}, Options{Columns: testColumns(false, false)}))
			compareGroups(t, got, readText(t, dir, libffmText(rows), reader.LibFFM))
		})
	}
}

// TestNamespace: a field hashed in another's namespace gives the ids the
// text decoder gives with the same namespaces.
func TestNamespace(t *testing.T) {
	dir := t.TempDir()
	rows := genRows(300, 2, true)
	path := filepath.Join(dir, "p.parquet")
	writeArrow(t, path, rows, writers[0])
	ns := []uint32{1, 1} // item's tokens in tags' namespace
	got := drain(t, openSource(t, []reader.FileSplit{{Path: path}}, Options{Columns: testColumns(false, false), Namespace: ns}))
	text := filepath.Join(dir, "t.libffm")
	if err := os.WriteFile(text, []byte(libffmText(rows)), 0o644); err != nil {
		t.Fatal(err)
	}
	dec, err := reader.NewDecoderWith(reader.LibFFM, reader.DecoderOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	src, err := reader.NewFileSource([]reader.FileSplit{{Path: text}}, reader.FileSourceOptions{Decoder: dec})
	if err != nil {
		t.Fatal(err)
	}
	compareGroups(t, got, drain(t, src))
}

// key names a sample by its group's position and index.
func keysOf(gs []*reader.Group) map[string]int {
	m := map[string]int{}
	for _, g := range gs {
		for i := g.Pos.Index; i < g.NumSamples(); i++ {
			m[fmt.Sprintf("%v#%d", reader.Position{File: g.Pos.File, Offset: g.Pos.Offset}, i)]++
		}
	}
	return m
}

// TestSplitsTileTheFile: byte ranges that tile a file, read in order or
// shuffled, by one source or many, give every sample once, grouped or
// not, and rows of large row groups are cut between ranges.
func TestSplitsTileTheFile(t *testing.T) {
	dir := t.TempDir()
	rows := genRows(3000, 3, true)
	path := filepath.Join(dir, "p.parquet")
	writeArrow(t, path, rows, wopts{codec: compress.Codecs.Snappy, dict: true, rowGroup: 1200})
	st, _ := os.Stat(path)
	for _, grouped := range []bool{false, true} {
		cols := testColumns(grouped, true)
		whole := keysOf(drain(t, openSource(t, []reader.FileSplit{{Path: path}}, Options{Columns: cols})))
		for _, cuts := range []int{2, 7, 40} {
			var splits []reader.FileSplit
			step := st.Size()/int64(cuts) + 1
			for lo := int64(0); lo < st.Size(); lo += step {
				splits = append(splits, reader.FileSplit{Path: path, Start: lo, End: min(lo+step, st.Size())})
			}
			// One source per split, and one source over them all shuffled.
			got := map[string]int{}
			for _, sp := range splits {
				for k, n := range keysOf(drain(t, openSource(t, []reader.FileSplit{sp}, Options{Columns: cols}))) {
					got[k] += n
				}
			}
			shuffled := slices.Clone(splits)
			slices.Reverse(shuffled)
			all := keysOf(drain(t, openSource(t, shuffled, Options{Columns: cols, AnyOrder: true})))
			for name, m := range map[string]map[string]int{"one source each": got, "shuffled": all} {
				if len(m) != len(whole) {
					t.Fatalf("grouped %v, %d cuts, %s: %d samples, want %d", grouped, cuts, name, len(m), len(whole))
				}
				for k, n := range m {
					if n != 1 || whole[k] != 1 {
						t.Fatalf("grouped %v, %d cuts, %s: sample %s read %d times", grouped, cuts, name, k, n)
					}
				}
			}
		}
	}
}

// TestResume: reopened at any group's Pos (with any number of its
// samples consumed) or at Position() between groups, a source gives
// exactly the rest.
func TestResume(t *testing.T) {
	dir := t.TempDir()
	rows := genRows(900, 4, true)
	path := filepath.Join(dir, "p.parquet")
	writeArrow(t, path, rows, wopts{codec: compress.Codecs.Snappy, dict: true, rowGroup: 250, pageSize: 400})
	st, _ := os.Stat(path)
	splits := []reader.FileSplit{{Path: path, End: st.Size() / 3}, {Path: path, Start: st.Size() / 3}}
	for _, grouped := range []bool{false, true} {
		o := Options{Columns: testColumns(grouped, false)}
		src := openSource(t, splits, o)
		var all []*reader.Group
		var after []reader.Position
		for {
			var g reader.Group
			if err := src.Next(context.Background(), &g); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			all = append(all, g.Clone())
			after = append(after, src.Position())
			if src.Position() != g.Next {
				t.Fatalf("Position() %v after a group whose Next is %v", src.Position(), g.Next)
			}
		}
		src.Close()
		want := keysOf(all)
		for i := 0; i < len(all); i += 7 {
			g := all[i]
			for _, idx := range []int{0, g.NumSamples() / 2} {
				o.Start = reader.Position{File: g.Pos.File, Offset: g.Pos.Offset, Index: idx}
				rest := keysOf(drain(t, openSource(t, splits, o)))
				o.Start = after[i]
				if i == 0 {
					checkRest(t, rest, want, all[:0], idx, g)
				} else {
					checkRest(t, rest, want, all[:i], idx, g)
				}
				tail := keysOf(drain(t, openSource(t, splits, o)))
				checkRest(t, tail, want, all[:i+1], 0, nil)
			}
		}
	}
}

// checkRest checks that rest holds the samples of want less those of
// before and the first idx of g.
func checkRest(t *testing.T, rest, want map[string]int, before []*reader.Group, idx int, g *reader.Group) {
	t.Helper()
	exp := maps(want)
	for k := range keysOf(before) {
		delete(exp, k)
	}
	if g != nil {
		for i := 0; i < idx; i++ {
			delete(exp, fmt.Sprintf("%v#%d", reader.Position{File: g.Pos.File, Offset: g.Pos.Offset}, i))
		}
	}
	if len(rest) != len(exp) {
		t.Fatalf("resumed: %d samples, want %d", len(rest), len(exp))
	}
	for k := range rest {
		if exp[k] != 1 {
			t.Fatalf("resumed: sample %s not expected", k)
		}
	}
}

func maps(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// TestNullLabel: a null label is a malformed row: under stop an error
// naming the file, row group and row; under skip counted and left out.
func TestNullLabel(t *testing.T) {
	dir := t.TempDir()
	rows := genRows(100, 5, true)
	rows[37].nullLab = true
	rows[80].nullLab = true
	path := filepath.Join(dir, "p.parquet")
	writeArrow(t, path, rows, wopts{codec: compress.Codecs.Snappy, nullLabel: true, rowGroup: 50})
	src := openSource(t, []reader.FileSplit{{Path: path}}, Options{Columns: testColumns(false, false)})
	var err error
	n := 0
	for err == nil {
		var g reader.Group
		err = src.Next(context.Background(), &g)
		n++
	}
	var re *RowError
	if !errors.As(err, &re) || !errors.Is(err, reader.ErrMalformed) || re.Row != 37 || re.RowGroup != 0 ||
		!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "label") {
		t.Fatalf("got %v after %d groups, want a malformed row 37 of row group 0", err, n)
	}
	if err2 := src.Next(context.Background(), new(reader.Group)); err2 != err {
		t.Fatalf("the error is not sticky: %v then %v", err, err2)
	}
	src = openSource(t, []reader.FileSplit{{Path: path}}, Options{Columns: testColumns(false, false), OnError: reader.SkipBad})
	got := drain(t, src)
	if len(got) != 98 || src.Stats().Skipped != 2 || len(src.Stats().Errors) != 2 {
		t.Fatalf("skip: %d groups, %d skipped, want 98 and 2", len(got), src.Stats().Skipped)
	}
}

// TestRefusesBadMaps: a map that does not fit the file is refused before
// reading, every problem listed.
func TestRefusesBadMaps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.parquet")
	writeArrow(t, path, genRows(10, 6, true), writers[0])
	m := reader.ColumnMap{Label: "item", Fields: []reader.ColumnField{
		{Column: "nope"},
		{Column: "price", Kind: "token"},
		{Column: "tags", Kind: "value"},
		{Column: "age", Weights: "flag"},
	}}
	err := Check(nil, []string{path}, m, nil)
	for _, want := range []string{`label column "item"`, `"nope"`, `no such column`, "not a token", "kind value takes", `weights column "flag"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v; want it to say %q", err, want)
		}
	}
	if !errors.Is(err, ErrSchema) {
		t.Errorf("Check: %v does not wrap ErrSchema", err)
	}
	if _, err := NewSource([]reader.FileSplit{{Path: path}}, Options{Columns: m}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("NewSource: %v; want the map refused", err)
	}
}

// TestSchemaChange: part files whose mapped columns differ are refused,
// both named.
func TestSchemaChange(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "part-0.parquet"), filepath.Join(dir, "part-1.parquet")
	writeArrow(t, a, genRows(10, 7, true), writers[0])
	writeArrow(t, b, genRows(10, 8, false), wopts{codec: compress.Codecs.Snappy, signed: true})
	cols := testColumns(false, false)
	err := Check(nil, []string{a, b}, cols, nil)
	if err == nil || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) || !errors.Is(err, ErrSchema) {
		t.Fatalf("Check: %v; want the schema change named with both files", err)
	}
	src := openSource(t, []reader.FileSplit{{Path: a}, {Path: b}}, Options{Columns: cols})
	defer src.Close()
	for err == nil || err != io.EOF {
		err = src.Next(context.Background(), new(reader.Group))
		if err != nil && err != io.EOF {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), b) || !errors.Is(err, ErrSchema) {
		t.Fatalf("Next: %v; want the schema change", err)
	}
}

// TestZeroRowGroups: a file of no row groups gives no samples and no
// error.
func TestZeroRowGroups(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.parquet")
	writeArrow(t, path, nil, writers[0])
	src := openSource(t, []reader.FileSplit{{Path: path}}, Options{Columns: testColumns(true, true)})
	if got := drain(t, src); len(got) != 0 {
		t.Fatalf("%d groups from an empty file", len(got))
	}
}

// TestCorrupt: a corrupt footer, and a corrupt page, give errors naming
// the file (and the row group and column).
func TestCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.parquet")
	writeArrow(t, path, genRows(2000, 9, true), wopts{codec: compress.Codecs.Snappy, rowGroup: 1000})
	data, _ := os.ReadFile(path)
	footer := slices.Clone(data)
	footer[len(footer)-12] ^= 0xff
	footer[len(footer)-20] ^= 0xff
	fpath := filepath.Join(dir, "footer.parquet")
	os.WriteFile(fpath, footer, 0o644)
	if err := Check(nil, []string{fpath}, testColumns(false, false), nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fpath) {
		t.Errorf("a corrupt footer: %v", err)
	}
	// Garble the second row group's pages: the first row group reads, then
	// an error names row group 1.
	f, err := openFile(reader.LocalFS{}, path, ptr(testColumns(false, false)), nil)
	if err != nil {
		t.Fatal(err)
	}
	rg := f.pf.Metadata().RowGroups[1]
	f.close()
	pages := slices.Clone(data)
	for _, c := range rg.Columns {
		off := c.MetaData.DataPageOffset
		for i := off + 2; i < off+c.MetaData.TotalCompressedSize && i < int64(len(pages)); i += 3 {
			pages[i] ^= 0x5a
		}
	}
	ppath := filepath.Join(dir, "pages.parquet")
	os.WriteFile(ppath, pages, 0o644)
	src := openSource(t, []reader.FileSplit{{Path: ppath}}, Options{Columns: testColumns(false, false), OnError: reader.SkipBad})
	defer src.Close()
	n := 0
	for {
		err = src.Next(context.Background(), new(reader.Group))
		if err != nil {
			break
		}
		n++
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), ppath) || !strings.Contains(err.Error(), "row group 1") || n != 1000 {
		t.Fatalf("a corrupt page: %v after %d groups; want ErrCorrupt naming row group 1 after 1000", err, n)
	}
	if p := src.Position(); p.Offset != 1000 {
		t.Fatalf("position %v after the error, want row 1000 (nothing past it was trained)", p)
	}
}

func ptr[T any](v T) *T { return &v }
