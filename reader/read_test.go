package reader

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func mustRead(t *testing.T, in string, opts ReadOptions) (*Dataset, ReadStats) {
	t.Helper()
	ds, st, err := Read(strings.NewReader(in), "test", opts)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return ds, st
}

func TestReadBasic(t *testing.T) {
	in := "1 0:a:1 1:b:0.5\n\n# comment\n-1 2:c:1\r\n0\n   \n1 0:a:2" // no final newline
	ds, st := mustRead(t, in, ReadOptions{Format: LibFFM})
	if ds.Len() != 4 || st.Samples != 4 || st.Lines != 7 || st.Skipped != 0 || st.Bytes != int64(len(in)) {
		t.Fatalf("Len %d stats %+v", ds.Len(), st)
	}
	if !slices.Equal(ds.Labels, []float32{1, 0, 0, 1}) || !slices.Equal(ds.Offsets, []int64{0, 2, 3, 3, 4}) || ds.NumFields != 3 {
		t.Errorf("labels %v offsets %v numFields %d", ds.Labels, ds.Offsets, ds.NumFields)
	}
	if ds.IDs[0] != ds.IDs[3] || ds.IDs[0] != FeatureID(0, []byte("a")) || ds.Values[3] != 2 {
		t.Errorf("ids %v values %v", ds.IDs, ds.Values)
	}
}

func TestReadErrorPolicy(t *testing.T) {
	in := "1 a:1\n1 a:x\n0 b:1\nbad\n1 c:1\n"
	// StopOnBad (the default): the first bad line, with the samples before it.
	ds, st, err := Read(strings.NewReader(in), "in.libfm", ReadOptions{Format: LibFM})
	var le *LineError
	if !errors.As(err, &le) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want *LineError", err)
	}
	if le.Source != "in.libfm" || le.Line != 2 || err.Error() != `reader: in.libfm:2: malformed line: feature "a:x": value "x" is not a number` {
		t.Errorf("err = %q (%+v)", err, le)
	}
	if ds.Len() != 1 || st.Samples != 1 || st.Lines != 2 {
		t.Errorf("Len %d stats %+v", ds.Len(), st)
	}
	// SkipBad: count, keep the errors and go on.
	ds, st, err = Read(strings.NewReader(in), "in.libfm", ReadOptions{Format: LibFM, OnError: SkipBad})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 3 || st.Samples != 3 || st.Skipped != 2 || len(st.Errors) != 2 || st.Lines != 5 {
		t.Fatalf("Len %d stats %+v", ds.Len(), st)
	}
	if !strings.Contains(st.Errors[1].Error(), "in.libfm:4: ") {
		t.Errorf("second error %q", st.Errors[1])
	}
}

func TestReadKeepsFirstTenErrors(t *testing.T) {
	in := strings.Repeat("x\n", 25) + "1 a:1\n"
	ds, st := mustRead(t, in, ReadOptions{Format: LibFM, OnError: SkipBad})
	if ds.Len() != 1 || st.Skipped != 25 || len(st.Errors) != 10 {
		t.Fatalf("Len %d stats %+v", ds.Len(), st)
	}
	if le := st.Errors[9].(*LineError); le.Line != 10 {
		t.Errorf("tenth error is line %d", le.Line)
	}
}

func TestReadStride(t *testing.T) {
	var b strings.Builder
	for i := range 103 {
		switch i % 10 {
		case 3:
			b.WriteString("\n")
		case 7:
			b.WriteString("# c\n")
		default:
			b.WriteString("1 0:")
			b.WriteString(string(rune('a' + i%26)))
			b.WriteString(":1\n")
		}
	}
	in := b.String()
	all, _ := mustRead(t, in, ReadOptions{Format: LibFFM})
	for _, stride := range []int{1, 2, 3, 7} {
		got := 0
		seen := map[int]bool{}
		for idx := range stride {
			ds, st := mustRead(t, in, ReadOptions{Format: LibFFM, Stride: stride, Index: idx})
			if st.Lines != 103 {
				t.Errorf("stride %d index %d: Lines %d, want 103", stride, idx, st.Lines)
			}
			got += ds.Len()
			// Sample k of worker idx is the k-th owned non-empty line.
			k := 0
			for line := idx; line < 103; line += stride {
				if line%10 == 3 || line%10 == 7 {
					continue
				}
				if ds.IDs[k] != FeatureID(0, []byte{byte('a' + line%26)}) {
					t.Fatalf("stride %d index %d: sample %d is not line %d", stride, idx, k, line)
				}
				seen[line] = true
				k++
			}
			if k != ds.Len() {
				t.Fatalf("stride %d index %d: %d samples, want %d", stride, idx, ds.Len(), k)
			}
		}
		if got != all.Len() || len(seen) != all.Len() {
			t.Errorf("stride %d: workers read %d samples (%d distinct), want %d", stride, got, len(seen), all.Len())
		}
	}
}

func TestReadMaxSamples(t *testing.T) {
	in := "1 a:1\n\n0 b:1\n1 c:1\n"
	ds, st := mustRead(t, in, ReadOptions{Format: LibFM, MaxSamples: 2})
	if ds.Len() != 2 || st.Lines != 3 || st.Bytes != int64(len("1 a:1\n\n0 b:1\n")) {
		t.Fatalf("Len %d stats %+v", ds.Len(), st)
	}
}

func TestReadOptionsValidate(t *testing.T) {
	if _, _, err := Read(strings.NewReader(""), "x", ReadOptions{}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("no format: err = %v", err)
	}
	o := ReadOptions{Format: 9, OnError: 5, Stride: -1, Index: -1, MaxSamples: -2}
	err := o.Validate()
	for _, want := range []string{"format", "error policy", "stride", "index", "max samples"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want a complaint about %s", err, want)
		}
	}
	o = ReadOptions{Format: LibFM, Stride: 2, Index: 2}
	if err := o.Validate(); err == nil {
		t.Error("index == stride accepted")
	}
	o = ReadOptions{Format: LibFM}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil || o.Stride != 1 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
}

func TestErrorPolicyText(t *testing.T) {
	for _, p := range []ErrorPolicy{StopOnBad, SkipBad} {
		b, err := p.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var q ErrorPolicy
		if err := q.UnmarshalText(b); err != nil || q != p {
			t.Errorf("round trip of %v: %v, %v", p, q, err)
		}
	}
	if _, err := ParseErrorPolicy("ignore"); err == nil {
		t.Error("ParseErrorPolicy(ignore) succeeded")
	}
}

func TestReadLongLines(t *testing.T) {
	// A line longer than the bufio buffer but within the limit is read whole.
	var b bytes.Buffer
	b.WriteString("1")
	n := 0
	for b.Len() < 3*readBufferSize {
		b.WriteString(" 0:tok:1")
		n++
	}
	b.WriteString("\n0 1:x:1\n")
	ds, st := mustRead(t, b.String(), ReadOptions{Format: LibFFM})
	if ds.Len() != 2 || ds.Offsets[1] != int64(n) || st.Bytes != int64(b.Len()) {
		t.Fatalf("Len %d offsets %v stats %+v", ds.Len(), ds.Offsets, st)
	}

	// A line over MaxLineBytes is malformed; SkipBad goes on after it.
	if testing.Short() {
		t.Skip("skipping the 16 MiB line in -short mode")
	}
	var big bytes.Buffer
	big.WriteString("1 0:a:1\n1")
	for big.Len() < MaxLineBytes+100 {
		big.WriteString(" 0:tok:1")
	}
	big.WriteString("\n0 1:x:1") // no final newline
	ds, st, err := Read(bytes.NewReader(big.Bytes()), "big", ReadOptions{Format: LibFFM, OnError: SkipBad})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 2 || st.Skipped != 1 || st.Lines != 3 || st.Bytes != int64(big.Len()) {
		t.Fatalf("Len %d stats %+v", ds.Len(), st)
	}
	if want := "reader: big:2: malformed line: line is longer than 16777216 bytes"; st.Errors[0].Error() != want {
		t.Errorf("error %q, want %q", st.Errors[0], want)
	}
	// Exactly MaxLineBytes is accepted.
	line := make([]byte, MaxLineBytes)
	for i := range line {
		line[i] = ' '
	}
	copy(line, "1 0:a:1")
	ds, _, err = Read(bytes.NewReader(append(line, '\n')), "edge", ReadOptions{Format: LibFFM})
	if err != nil || ds.Len() != 1 {
		t.Fatalf("line of exactly MaxLineBytes: %v samples, %v", ds.Len(), err)
	}
}

func TestReadIOError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("1 a:1\n0 b"), iotest.ErrReader(boom))
	ds, _, err := Read(r, "src", ReadOptions{Format: LibFM})
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "reader: src: ") {
		t.Fatalf("err = %v", err)
	}
	if ds.Len() != 1 {
		t.Errorf("read %d samples before the error, want 1", ds.Len())
	}
	if _, _, err := ReadFile(filepath.Join(t.TempDir(), "missing"), ReadOptions{Format: LibFM}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestWriteLibFFMRoundTrip(t *testing.T) {
	d := NewDataset()
	d.Append(1, []Feature{{0, 123, 1}, {3, 1<<64 - 1, 0.1}, {0, 123, -2.5e-7}})
	d.Append(0, nil)
	d.Append(0, []Feature{{3, 123, 3}, {1, 7, 1e30}, {0, 123, 1}})
	var buf bytes.Buffer
	if err := WriteLibFFM(&buf, d); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "d.libffm")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, st, err := ReadFile(path, ReadOptions{Format: LibFFM})
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes != int64(buf.Len()) {
		t.Errorf("Bytes %d, file has %d", st.Bytes, buf.Len())
	}
	checkSameStructure(t, d, got)
}

// checkSameStructure checks that b equals a up to a consistent renaming of
// ids: one new id per (field, old id), and distinct ones for distinct pairs.
func checkSameStructure(t *testing.T, a, b *Dataset) {
	t.Helper()
	if !slices.Equal(a.Labels, b.Labels) || !slices.Equal(a.Offsets, b.Offsets) ||
		!slices.Equal(a.Fields, b.Fields) || !slices.Equal(a.Values, b.Values) || a.NumFields != b.NumFields {
		t.Fatalf("structure differs:\n%+v\n%+v", a, b)
	}
	type key struct {
		field uint32
		id    uint64
	}
	fwd := map[key]uint64{}
	back := map[uint64]key{}
	for i := range a.IDs {
		k := key{a.Fields[i], a.IDs[i]}
		if id, ok := fwd[k]; ok && id != b.IDs[i] {
			t.Fatalf("feature %d: %v renamed to both %d and %d", i, k, id, b.IDs[i])
		}
		if k2, ok := back[b.IDs[i]]; ok && k2 != k {
			t.Fatalf("feature %d: %v and %v both renamed to %d", i, k, k2, b.IDs[i])
		}
		fwd[k], back[b.IDs[i]] = b.IDs[i], k
	}
}

// frappePath is the Frappe validation split, relative to this package.
const frappePath = "../../shared/data/frappe/frappe.validation.libfm"

func TestReadFrappe(t *testing.T) {
	if _, err := os.Stat(frappePath); err != nil {
		t.Skipf("Frappe data not present (%v); it lives at <project root>/../shared/data/frappe", err)
	}
	ds, st, err := ReadFile(frappePath, ReadOptions{Format: LibFM})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 57722 || st.Lines != 57722 || st.Skipped != 0 {
		t.Fatalf("Len %d stats %+v, want 57722 samples", ds.Len(), st)
	}
	if ds.NumFields != 10 || ds.NumFeatures() != 10*57722 {
		t.Errorf("NumFields %d NumFeatures %d, want 10 per sample", ds.NumFields, ds.NumFeatures())
	}
	pos := 0
	for _, y := range ds.Labels {
		if y == 1 {
			pos++
		}
	}
	// Frappe samples two negatives per positive.
	if pos != 19063 {
		t.Errorf("%d positives, want 19063", pos)
	}
	distinct := map[uint64]bool{}
	for _, id := range ds.IDs {
		distinct[id] = true
	}
	if n := len(distinct); n < 1000 || n > 5382 {
		t.Errorf("%d distinct ids, want between 1000 and Frappe's 5382 features", n)
	}
	// Halves by stride add up to the whole.
	a, _, errA := ReadFile(frappePath, ReadOptions{Format: LibFM, Stride: 2, Index: 0})
	b, _, errB := ReadFile(frappePath, ReadOptions{Format: LibFM, Stride: 2, Index: 1})
	if errA != nil || errB != nil || a.Len()+b.Len() != ds.Len() || a.Len() != 28861 {
		t.Errorf("stride halves %d + %d (%v, %v)", a.Len(), b.Len(), errA, errB)
	}
}
