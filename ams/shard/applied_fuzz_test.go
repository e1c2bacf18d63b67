package shard

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/xdlgo/xps/ams"
)

// FuzzRestoredApplied reads arbitrary bytes as two shards' records of
// applied pushes in a snapshot's state, as a restore takes them onto the
// same layout and onto another: no input panics; a refusal wraps
// ams.ErrRestore; and every record taken holds Applied's invariants
// (ranges sorted, non-empty, neither overlapping nor touching), on which
// the duplicate check of every later push (Applied.Has, Add) relies.
func FuzzRestoredApplied(f *testing.F) {
	rec := func(m map[string]*ams.Applied) []byte {
		b, err := json.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(rec(map[string]*ams.Applied{"worker-0": {Ranges: []ams.BatchRange{{Lo: 0, Hi: 4}, {Lo: 6, Hi: 9}}, Samples: 70, Digest: 5}}),
		rec(map[string]*ams.Applied{"worker-0": {Ranges: []ams.BatchRange{{Lo: 0, Hi: 9}}, Samples: 90}, "worker-1": nil}))
	f.Add([]byte(`{"w":{"ranges":[{"lo":5,"hi":2},{"lo":1,"hi":3}],"samples":-1}}`), []byte(`{"w":{"ranges":[{"lo":3,"hi":3}]}}`))
	f.Add([]byte(`{"w":{"ranges":[{"lo":0,"hi":2},{"lo":2,"hi":3}]}}`), []byte(`null`))
	f.Add([]byte(`[]`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, part0, part1 []byte) {
		readers := map[string]json.RawMessage{ams.AppliedKey(0): part0, ams.AppliedKey(1): part1, "reader/w/checkpoint": part1}
		for _, own := range []Ownership{{SameLayout: true, Index: 0}, {SameLayout: true, Index: 1}, {Index: 0}} {
			recs, err := restoredApplied(readers, own)
			if err != nil {
				if !errors.Is(err, ams.ErrRestore) {
					t.Fatalf("restoredApplied(%q, %q) = %v, not ErrRestore", part0, part1, err)
				}
				continue
			}
			for w, a := range recs {
				for i, r := range a.Ranges {
					if r.Lo >= r.Hi || i > 0 && a.Ranges[i-1].Hi >= r.Lo {
						t.Fatalf("restoredApplied(%q, %q), %+v: worker %s's record %v breaks Applied's invariants", part0, part1, own, w, a)
					}
				}
			}
		}
	})
}
