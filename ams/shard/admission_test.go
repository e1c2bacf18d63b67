package shard

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/filters"
	"github.com/xdlgo/xps/snapshot"
)

var countSpec = func() ams.TableSpec {
	s := snapSpec
	s.Admission = filters.Spec{Kind: filters.KindCount, N: 3}
	return s
}()

func randomIDs(n int, seed uint64) []uint64 {
	rng := rand.New(rand.NewPCG(seed, 2))
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = rng.Uint64()
	}
	return ids
}

// rows returns the rows of table emb on c and its counters.
func (c *testCluster) rows(t *testing.T) (int, ams.Counters) {
	t.Helper()
	n, cnt := 0, ams.Counters{}
	for _, s := range c.shards {
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		n += int(st.Tables[0].Rows)
		cnt = cnt.Add(st.Tables[0].Counters)
	}
	return n, cnt
}

// snapshotTo writes c's snapshot seq to store and returns its manifest.
func (c *testCluster) snapshotTo(t *testing.T, store snapshot.Store, seq uint64) *snapshot.Manifest {
	t.Helper()
	m := &snapshot.Manifest{Seq: seq, Version: 1, Shards: len(c.shards)}
	for i, s := range c.shards {
		part, err := s.WriteSnapshot(store, seq, i)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add(part); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.CheckComplete(nil, ""); err != nil {
		t.Fatal(err)
	}
	if err := snapshot.Commit(store, m); err != nil {
		t.Fatal(err)
	}
	got, err := snapshot.ReadManifest(store, seq)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestAdmissionStateRestoresOntoOtherShardCounts: a count-3 filter's
// sightings are part of the model. IDs sighted twice before a snapshot
// of 2 shards are admitted at their third sighting after a restore onto
// 3 and onto 1 shards (their partitions' states moved to the stripes of
// their new shards), IDs sighted once are not, and a cluster that lost
// the states would admit none of them.
func TestAdmissionStateRestoresOntoOtherShardCounts(t *testing.T) {
	store, err := snapshot.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := newTestClusterOf(t, 2, countSpec)
	twice, once := randomIDs(3000, 1), randomIDs(3000, 2)
	src.do(t, twice, nil, false)
	src.do(t, twice, nil, false)
	src.do(t, once, nil, false)
	early, cnt := src.rows(t)
	if early > len(twice)/50 || cnt.FilteredPulls != uint64(3*len(twice)-early) {
		t.Fatalf("before the snapshot: %d rows (false positives), counters %+v", early, cnt)
	}
	m := src.snapshotTo(t, store, 3)
	if len(m.Tables[0].Admission) != 2 {
		t.Fatalf("manifest holds %d admission files, want one per shard", len(m.Tables[0].Admission))
	}
	for _, n := range []int{3, 1} {
		t.Run(fmt.Sprintf("onto-%d", n), func(t *testing.T) {
			dst := newTestClusterOf(t, n, countSpec)
			for i, s := range dst.shards {
				if err := s.Restore(store, m, dst.ownership(i)); err != nil {
					t.Fatal(err)
				}
			}
			if got, _ := dst.rows(t); got != early {
				t.Fatalf("restored %d rows, want %d", got, early)
			}
			dst.do(t, twice, nil, false) // third sighting: every one admitted
			got, _ := dst.rows(t)
			if got != len(twice)+admittedOf(t, dst, once) || got < len(twice) {
				t.Fatalf("after a third sighting %d rows, want the %d sighted twice (+ early ones)", got, len(twice))
			}
			dst.do(t, once, nil, false) // second sighting of once
			if extra := admittedOf(t, dst, once); extra > len(once)/50 {
				t.Fatalf("%d of the ids sighted twice were admitted", extra)
			}
		})
	}
	// Without the states, a third sighting is a first: nothing is admitted.
	fresh := newTestClusterOf(t, 1, countSpec)
	fresh.do(t, twice, nil, false)
	if got, _ := fresh.rows(t); got > len(twice)/50 {
		t.Fatalf("a cluster without the states admitted %d ids at their first sighting", got)
	}
}

// admittedOf counts the ids of ids that have a row on c (a pull without
// create reads zeros for the others).
func admittedOf(t *testing.T, c *testCluster, ids []uint64) int {
	t.Helper()
	n := 0
	for _, s := range c.shards {
		if err := s.onStripes(func(_ int, st *stripe) error {
			for _, id := range ids {
				if _, ok := st.tables[0].Get(id); ok {
					n++
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// TestAdmissionRefusedAtDeclare: a bad policy is refused when the table
// is declared, with every problem listed.
func TestAdmissionRefusedAtDeclare(t *testing.T) {
	s := New(Options{Stripes: 2})
	defer s.Close()
	spec := ams.TableSpec{Name: "emb", Dim: 4, Admission: filters.Spec{Kind: filters.KindCount, N: 100, FalsePositiveRate: 2, Generations: 99}}
	_, err := s.Declare(1, []ams.TableSpec{spec}, nil)
	if !errors.Is(err, ams.ErrBadSpec) || !errors.Is(err, filters.ErrBadPolicy) {
		t.Fatalf("declare: %v", err)
	}
	if n := strings.Count(err.Error(), "bad admission policy"); n < 3 {
		t.Fatalf("declare listed %d problems, want 3: %v", n, err)
	}
}
