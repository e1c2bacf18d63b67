package slide

import (
	"slices"
	"testing"
)

// activeFixture returns tables over d neurons with random codes and a
// random query.
func activeFixture(t *testing.T, d, k, l, r int) (*Tables, []uint32) {
	t.Helper()
	tb, err := NewTables(d, k, l, r, 3)
	if err != nil {
		t.Fatal(err)
	}
	g := newRNG(4, 4, 4)
	codes := make([]uint32, l)
	for id := int32(0); id < int32(d); id++ {
		for i := range codes {
			codes[i] = uint32(g.IntN(1 << k))
		}
		tb.Insert(id, codes)
	}
	for i := range codes {
		codes[i] = uint32(g.IntN(1 << k))
	}
	return tb, codes
}

func bucketUnion(tb *Tables, codes []uint32) []int32 {
	var u []int32
	for l, c := range codes {
		for _, id := range tb.Bucket(l, c) {
			if !slices.Contains(u, id) {
				u = append(u, id)
			}
		}
	}
	return u
}

func TestSelectActive(t *testing.T) {
	const d = 1000
	tb, codes := activeFixture(t, d, 4, 6, 16) // ~62 per bucket -> 16 kept
	union := bucketUnion(tb, codes)
	if len(union) < 50 {
		t.Fatalf("union only %d", len(union))
	}
	tests := []struct {
		name     string
		labels   []int32
		target   int
		fill     bool
		sel      Selection
		wantSize int
	}{
		{"cut-random", []int32{5, 900}, 40, true, SelectRandom, 40},
		{"cut-bycount", []int32{5}, 30, false, SelectByCount, 30},
		{"fill", []int32{1, 2, 3}, 300, true, SelectRandom, 300},
		{"no-fill", []int32{1, 2, 3}, 300, false, SelectRandom, 3 + len(union)},
		{"dense-fill", []int32{7}, 990, true, SelectRandom, 990},
		{"all", []int32{7, 7, 8}, d, true, SelectRandom, d},
		{"labels-over-target", []int32{1, 2, 3, 4, 5}, 3, true, SelectRandom, 5},
		{"no-labels", nil, 20, true, SelectByCount, 20},
	}
	s := newSelector(d, 6)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for rep := 0; rep < 3; rep++ { // stamps must not leak between queries
				r := newRNG(1, uint64(rep), 0)
				act, nl, missed := s.selectActive(tb, query{codes: codes, labels: tc.labels, target: tc.target,
					fill: tc.fill, sel: tc.sel}, &r, nil, nil)
				uniq := slices.Compact(slices.Clone(tc.labels))
				if nl != len(uniq) || !slices.Equal(act[:nl], uniq) {
					t.Fatalf("labels first: got %v (nl %d), want %v", act[:nl], nl, uniq)
				}
				if len(act) != tc.wantSize {
					t.Fatalf("size %d, want %d", len(act), tc.wantSize)
				}
				sorted := slices.Clone(act)
				slices.Sort(sorted)
				if len(slices.Compact(sorted)) != len(act) {
					t.Fatal("duplicates in the active set")
				}
				for _, id := range act {
					if id < 0 || id >= d {
						t.Fatalf("id %d out of range", id)
					}
				}
				for _, id := range missed {
					if slices.Contains(union, id) {
						t.Fatalf("label %d reported missed but in a bucket", id)
					}
				}
				for _, id := range uniq {
					if !slices.Contains(union, id) && !slices.Contains(missed, id) {
						t.Fatalf("label %d missed but not reported", id)
					}
				}
				if !tc.fill {
					for _, id := range act[nl:] {
						if !slices.Contains(union, id) {
							t.Fatalf("no fill, but %d is not from a bucket", id)
						}
					}
				}
			}
		})
	}
}

// TestSelectByCount checks that the cut keeps the neurons found in the most
// tables.
func TestSelectByCount(t *testing.T) {
	const d = 200
	tb, _ := NewTables(d, 2, 4, d, 1)
	// Neuron i is in bucket 0 of tables 0..(i%4): i%4+1 hits.
	for id := int32(0); id < d; id++ {
		for l := 0; l <= int(id)%4; l++ {
			tb.InsertTable(l, id, 0)
		}
		for l := int(id)%4 + 1; l < 4; l++ {
			tb.InsertTable(l, id, 1)
		}
	}
	s := newSelector(d, 4)
	r := newRNG(2, 2, 2)
	act, _, _ := s.selectActive(tb, query{codes: []uint32{0, 0, 0, 0}, target: 20, sel: SelectByCount}, &r, nil, nil)
	if len(act) != 20 {
		t.Fatalf("size %d", len(act))
	}
	// 50 neurons have 4 hits (i%4 == 3), stored everywhere (R = d).
	for _, id := range act {
		if id%4 != 3 {
			t.Fatalf("kept %d with %d hits", id, id%4+1)
		}
	}
}

func TestSelectorStampWrap(t *testing.T) {
	tb, codes := activeFixture(t, 100, 3, 2, 8)
	s := newSelector(100, 2)
	s.cur = ^uint32(0) - 5
	r := newRNG(1, 1, 1)
	for i := 0; i < 10; i++ {
		act, _, _ := s.selectActive(tb, query{codes: codes, labels: []int32{3}, target: 30, fill: true, sel: SelectRandom}, &r, nil, nil)
		sorted := slices.Clone(act)
		slices.Sort(sorted)
		if len(act) != 30 || len(slices.Compact(sorted)) != 30 {
			t.Fatalf("after wrap: %d members", len(act))
		}
	}
}
