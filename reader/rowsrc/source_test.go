package rowsrc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/rowsrc"
)

var bounds = []float64{18, 30, 50}

// mixed is a table of every column type, 50 rows, with the column map
// that reads it and each row as a libFFM line (without the dense field).
func mixed() (table, reader.ColumnMap, []string) {
	const n = 50
	tags := []string{"red", "green", "blue", "ünïcode", "x-y"}
	t := table{rows: n, cols: []col{
		{Column: rowsrc.Column{Name: "clicked", Type: rowsrc.TypeInt64}},
		{Column: rowsrc.Column{Name: "item", Type: rowsrc.TypeInt64}},
		{Column: rowsrc.Column{Name: "tag", Type: rowsrc.TypeDict}, strs: tags},
		{Column: rowsrc.Column{Name: "price", Type: rowsrc.TypeFloat64}},
		{Column: rowsrc.Column{Name: "age", Type: rowsrc.TypeFloat32}},
		{Column: rowsrc.Column{Name: "flag", Type: rowsrc.TypeBool}},
		{Column: rowsrc.Column{Name: "big", Type: rowsrc.TypeUint64}},
		{Column: rowsrc.Column{Name: "day", Type: rowsrc.TypeInt32}},
		{Column: rowsrc.Column{Name: "score", Type: rowsrc.TypeFloat64}},
	}}
	lines := make([]string, n)
	for i := range n {
		item, tag, price, age := int64(i*7919-100), i%len(tags), float64(i)*0.37+0.1, float64(i%60)
		flag, big, day, score := int64(i%2), int64(-1-i), int64(i%7), float64(i)/8
		for c, v := range []int64{int64(i % 3 % 2), item, int64(tag), 0, 0, flag, big, day, 0} {
			t.cols[c].ints = append(t.cols[c].ints, v)
		}
		for c, v := range map[int]float64{3: price, 4: age, 8: score} {
			t.cols[c].floats = slices.Grow(t.cols[c].floats, n)[:n]
			t.cols[c].floats[i] = v
		}
		bucket := 0
		for _, b := range bounds {
			if age >= b {
				bucket++
			}
		}
		lines[i] = fmt.Sprintf("%d 0:%d:1 1:%s:1 2:price:%s 3:%d:1 4:%t:1 5:%d:1 6:%d:1", i%3%2, item, tags[tag],
			strconv.FormatFloat(float64(float32(price)), 'g', -1, 32), bucket, flag == 1, uint64(big), day)
	}
	m := reader.ColumnMap{Label: "clicked", Fields: []reader.ColumnField{
		{Column: "item"}, {Column: "tag"}, {Column: "price"}, {Column: "age", Kind: reader.KindBucket, Boundaries: bounds},
		{Column: "flag"}, {Column: "big"}, {Column: "day"}, {Column: "score", Kind: reader.KindDense},
	}}
	return t, m, lines
}

// readAll reads src to its end.
func readAll(t *testing.T, src reader.Source) []*reader.Group {
	t.Helper()
	groups, err := reader.ReadAll(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return groups
}

func open(t *testing.T, s *server, o rowsrc.Options) *rowsrc.Source {
	t.Helper()
	o.Addr = s.path
	if o.Table == "" {
		o.Table = "train"
	}
	src, err := rowsrc.NewSource(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// TestSameSamplesAsText: every column type gives the features its
// libFFM line gives, bit for bit, across batches; the dense field gives
// its value; positions are rows.
func TestSameSamplesAsText(t *testing.T) {
	tab, m, lines := mixed()
	s := newServer(t, map[string]table{"train": tab})
	src := open(t, s, rowsrc.Options{Columns: m, Batch: 7})
	got := readAll(t, src)

	path := filepath.Join(t.TempDir(), "same.libffm")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dec, _ := reader.NewDecoder(reader.LibFFM)
	fsrc, err := reader.NewFileSource([]reader.FileSplit{{Path: path}}, reader.FileSourceOptions{Decoder: dec})
	if err != nil {
		t.Fatal(err)
	}
	defer fsrc.Close()
	want := readAll(t, fsrc)
	if len(got) != len(want) || len(got) != tab.rows {
		t.Fatalf("%d rows from the service, %d lines, want %d", len(got), len(want), tab.rows)
	}
	for i := range got {
		g, w := &got[i].Levels[0], &want[i].Levels[0]
		if !slices.Equal(g.Fields, w.Fields) || !slices.Equal(g.IDs, w.IDs) || !slices.Equal(g.Values, w.Values) ||
			!slices.Equal(got[i].Labels, want[i].Labels) {
			t.Fatalf("row %d: fields %v ids %v values %v labels %v\nline %q: fields %v ids %v values %v labels %v", i,
				g.Fields, g.IDs, g.Values, got[i].Labels, lines[i], w.Fields, w.IDs, w.Values, want[i].Labels)
		}
		if !slices.Equal(g.DenseFields, []uint32{7}) || !slices.Equal(g.DenseValues, []float32{float32(i) / 8}) {
			t.Fatalf("row %d: dense fields %v values %v", i, g.DenseFields, g.DenseValues)
		}
		if p, n := got[i].Pos, got[i].Next; p != (reader.Position{File: "rows:train", Offset: int64(i)}) || n != (reader.Position{File: "rows:train", Offset: int64(i + 1)}) {
			t.Fatalf("row %d at %v, next %v", i, p, n)
		}
	}
	if st := src.Stats(); st.Samples != int64(tab.rows) || st.Bytes == 0 {
		t.Fatalf("stats %+v", st)
	}
	if s.requests != 8 { // 50 rows in batches of 7
		t.Fatalf("%d requests, want 8", s.requests)
	}
	if p := src.Position(); p.Offset != int64(tab.rows) {
		t.Fatalf("position after the last row %v", p)
	}
}

// TestNullsAndMalformedRows: a null gives no feature; a null label or an
// infinite float32 stops the source at the row (its position kept), or
// is counted and left out under SkipBad.
func TestNullsAndMalformedRows(t *testing.T) {
	nan := math.NaN()
	tab := table{rows: 6, cols: []col{
		{Column: rowsrc.Column{Name: "y", Type: rowsrc.TypeFloat64}, floats: []float64{1, 0, nan, 1, 0, 1}},
		{Column: rowsrc.Column{Name: "n", Type: rowsrc.TypeInt64, Nullable: true}, ints: []int64{1, 2, 3, 4, 5, 6}, nulls: map[int]bool{1: true}},
		{Column: rowsrc.Column{Name: "s", Type: rowsrc.TypeDict}, strs: []string{"a"}, ints: []int64{0, -1, 0, 0, 0, 0}},
		{Column: rowsrc.Column{Name: "v", Type: rowsrc.TypeFloat64}, floats: []float64{nan, 2, 3, 4, 1e39, 6}},
	}}
	m := reader.ColumnMap{Label: "y", Fields: []reader.ColumnField{{Column: "n"}, {Column: "s"}, {Column: "v"}}}
	s := newServer(t, map[string]table{"train": tab})

	src := open(t, s, rowsrc.Options{Columns: m})
	var g reader.Group
	for i, want := range []int{2, 1} { // row 0: v NaN; row 1: n null, s null
		if err := src.Next(context.Background(), &g); err != nil || len(g.Levels[0].IDs) != want {
			t.Fatalf("row %d: %v, %d features, want %d", i, err, len(g.Levels[0].IDs), want)
		}
	}
	err := src.Next(context.Background(), &g)
	var re *rowsrc.RowError
	if !errors.As(err, &re) || re.Row != 2 || !errors.Is(err, reader.ErrMalformed) || !strings.Contains(err.Error(), "null label") {
		t.Fatalf("a null label: %v", err)
	}
	if p := src.Position(); p.Offset != 2 {
		t.Fatalf("stopped at %v, want row 2", p)
	}

	skip := open(t, s, rowsrc.Options{Columns: m, OnError: reader.SkipBad})
	got := readAll(t, skip)
	if len(got) != 4 || skip.Stats().Skipped != 2 || got[3].Pos.Offset != 5 {
		t.Fatalf("under skip: %d rows, %d skipped, last at %v", len(got), skip.Stats().Skipped, got[len(got)-1].Pos)
	}
	if errs := skip.Stats().Errors; len(errs) != 2 || !strings.Contains(errs[1].Error(), "row 4") || !strings.Contains(errs[1].Error(), "finite float32") {
		t.Fatalf("skipped: %v", errs)
	}
}

// TestPartsAndResume: parts divide the rows; a source resumes at a row
// of its part, and refuses a position outside it.
func TestPartsAndResume(t *testing.T) {
	tab, m, _ := mixed()
	s := newServer(t, map[string]table{"train": tab})
	var all []int64
	for part := range 3 {
		for _, g := range readAll(t, open(t, s, rowsrc.Options{Columns: m, Part: part, Parts: 3, Batch: 4})) {
			all = append(all, g.Pos.Offset)
		}
	}
	want := make([]int64, tab.rows)
	for i := range want {
		want[i] = int64(i)
	}
	if !slices.Equal(all, want) {
		t.Fatalf("three parts read rows %v", all)
	}
	src := open(t, s, rowsrc.Options{Columns: m, Part: 1, Parts: 3})
	var g reader.Group
	for range 5 {
		if err := src.Next(context.Background(), &g); err != nil {
			t.Fatal(err)
		}
	}
	at := src.Position()
	rest := readAll(t, open(t, s, rowsrc.Options{Columns: m, Part: 1, Parts: 3, Start: at}))
	if at.Offset != 21 || len(rest) != 12 || rest[0].Pos.Offset != 21 { // part 1 of 3 of 50 rows: [16, 33)
		t.Fatalf("resumed at %v: %d rows from %v", at, len(rest), rest[0].Pos)
	}
	for _, at := range []reader.Position{{File: "rows:train", Offset: 40}, {File: "rows:test", Offset: 20}, {File: "rows:train", Offset: 20, Index: 1}} {
		_, err := rowsrc.NewSource(rowsrc.Options{Addr: s.path, Table: "train", Columns: m, Part: 1, Parts: 3, Start: at})
		if !errors.Is(err, reader.ErrBadPosition) {
			t.Fatalf("resuming part 1 at %v: %v", at, err)
		}
	}
}

// TestSchemaProblems: a map that does not fit the table is refused with
// every problem named.
func TestSchemaProblems(t *testing.T) {
	tab, _, _ := mixed()
	s := newServer(t, map[string]table{"train": tab})
	m := reader.ColumnMap{Label: "tag", Fields: []reader.ColumnField{
		{Column: "nope"}, {Column: "price", Kind: reader.KindToken}, {Column: "item", User: true},
		{Column: "big", Weights: "day"}, {Column: "flag"},
	}}
	_, err := rowsrc.NewSource(rowsrc.Options{Addr: s.path, Table: "train", Columns: m})
	if !errors.Is(err, rowsrc.ErrSchema) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{`label column "tag" holds strings`, `no column "nope" in table "train" (its columns: "clicked", "item"`,
		"float64 column is not a token", "user-level fields", "weights pair with list columns"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	m = reader.ColumnMap{Label: "clicked", Fields: []reader.ColumnField{{Column: "tag", Kind: reader.KindValue}}}
	if _, err := rowsrc.NewSource(rowsrc.Options{Addr: s.path, Table: "train", Columns: m}); err == nil || !strings.Contains(err.Error(), "kind value takes numbers, not strings") {
		t.Fatalf("a string column as a value: %v", err)
	}
	if _, err := rowsrc.NewSource(rowsrc.Options{Addr: s.path, Table: "valid", Columns: m}); err == nil || !strings.Contains(err.Error(), `refused table "valid": no table valid`) {
		t.Fatalf("an unknown table: %v", err)
	}
	_, err = rowsrc.NewSource(rowsrc.Options{Table: "train", Part: 2, Parts: 2})
	for _, want := range []string{"no service address", "part 2 of 2", "no label column"} {
		if !errors.Is(err, reader.ErrBadOptions) || !strings.Contains(err.Error(), want) {
			t.Errorf("bad options: %v, want %q", err, want)
		}
	}
}

// TestProtocolErrors: what the protocol does not allow is refused with
// the service named, never a panic or a hang.
func TestProtocolErrors(t *testing.T) {
	tab, m, _ := mixed()
	for _, c := range []struct {
		name   string
		schema func(map[string]any)
		batch  func(map[string]any)
		want   string
	}{
		{"version", func(s map[string]any) { s["version"] = 2 }, nil, "speaks version 2"},
		{"type", func(s map[string]any) { s["columns"].([]any)[1].(map[string]any)["type"] = "int128" }, nil, `unknown type "int128"`},
		{"dict size", func(s map[string]any) { s["columns"].([]any)[2].(map[string]any)["dict_bytes"] = 3 }, nil, "dictionary offset"},
		{"huge dict", func(s map[string]any) { s["columns"].([]any)[2].(map[string]any)["dict_len"] = 1 << 40 }, nil, "a dictionary of 1099511627776 entries"},
		{"rows", nil, func(h map[string]any) { h["to"] = h["to"].(int64) + 1 }, "got a header for"},
		{"refused", nil, func(h map[string]any) { h["error"] = "the frame was freed" }, "refused rows [0, 50)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, map[string]table{"train": tab})
			s.schema, s.batch = c.schema, c.batch
			src, err := rowsrc.NewSource(rowsrc.Options{Addr: s.path, Table: "train", Columns: m})
			if err == nil {
				defer src.Close()
				var g reader.Group
				err = src.Next(context.Background(), &g)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), s.path) {
				t.Fatalf("got %v, want %q naming the service", err, c.want)
			}
		})
	}
}

// TestServiceGone: a service that closes the connection mid-answer, or
// never answers, ends the source with an error naming it.
func TestServiceGone(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		answer string // what the service writes before it closes ("": it never answers)
		want   string
	}{
		{"closed", `{"version":1,"table":"train","rows":5,"columns":[{"name":"y","type":"int64"},{"name":"x","type":"int64"}]}` + "\n" +
			`{"from":0,"to":5}` + "\n" + "abc", "closed the connection mid-answer"},
		{"silent", "", "did not answer within"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".sock")
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			done := make(chan struct{})
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				if c.answer != "" { // each header after its request
					br := bufio.NewReader(conn)
					for _, a := range strings.SplitAfterN(c.answer, "\n", 2) {
						if _, err := br.ReadString('\n'); err != nil {
							return
						}
						io.WriteString(conn, a)
					}
					return
				}
				<-done
			}()
			defer close(done)
			m := reader.ColumnMap{Label: "y", Fields: []reader.ColumnField{{Column: "x"}}}
			src, err := rowsrc.NewSource(rowsrc.Options{Addr: path, Table: "train", Columns: m, Timeout: 200 * time.Millisecond})
			if err == nil {
				defer src.Close()
				var g reader.Group
				err = src.Next(context.Background(), &g)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
