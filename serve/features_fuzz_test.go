package serve

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/xdlgo/xps/reader"
)

// FuzzParseFeatures checks the predict request's feature lists against
// the trainer's reading of the same features (the Request doc: "as in the
// libFFM and sample-group training formats"): a list that both the server
// and the sample-group decoder accept gives the same fields, ids and
// values, so that a request is scored on the features its model was
// trained on; no list panics; more than the limit is errTooMany, and the
// limit is never exceeded. (The server refuses some lists the trainer
// takes, fields from 2^16 up among them, and takes some it refuses,
// tokens with ':' or '='; neither scores a feature as another.)
func FuzzParseFeatures(f *testing.F) {
	for _, s := range []string{
		"0:u42 1:ios 2:item7:0.5",
		" 3:a\t4:b:-2e-3  ",
		"0:a:b:1 1:x=y 2::1 3:a: 70000:z",
		"5:hist1 5:hist2 5:hist3 6:cand",
		"1:a:1e-50 2:b:3.402e38 3:c:0x1p-3 4:d:nan",
		"0:x\u00a01:5 2:y\v3:z",
	} {
		f.Add(s, uint8(8))
	}
	ns := []uint32{0, 1, 2, 3, 4, 6, 6} // field 5's tokens hashed in field 6's namespace
	dec, err := reader.NewDecoderWith(reader.SampleGroup, reader.DecoderOptions{Namespace: ns})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string, limit uint8) {
		fields, ids, vals, err := parseFeatures(s, ns, nil, nil, nil, int(limit))
		n := len(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' }))
		switch {
		case errors.Is(err, errTooMany) && n <= int(limit):
			t.Fatalf("%q: %d features refused as over the limit of %d: %v", s, n, limit, err)
		case err == nil && n > int(limit):
			t.Fatalf("%q: %d features taken, over the limit of %d", s, n, limit)
		case err != nil:
			return
		case len(fields) != n || len(ids) != n || len(vals) != n:
			t.Fatalf("%q: %d tokens gave %d fields, %d ids, %d values", s, n, len(fields), len(ids), len(vals))
		}
		for _, v := range vals {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%q: value %v", s, v)
			}
		}
		if strings.ContainsAny(s, "\n\r") {
			return // a line break ends a training line
		}
		var g reader.Group
		if reader.DecodeMessage(dec, []byte("group 1\n0 - 1 "+s), &g) != nil {
			return
		}
		tf, tids, tvals := g.Levels[0].Line(0)
		if !slices.Equal(tf, fields) || !slices.Equal(tids, ids) || !slices.Equal(tvals, vals) {
			t.Fatalf("%q: the server reads fields %v ids %x values %v; the trainer %v %x %v", s, fields, ids, vals, tf, tids, tvals)
		}
	})
}
