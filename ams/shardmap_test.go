package ams

import (
	"errors"
	"runtime"
	"testing"
)

func TestShardMapRoundTripAndRouting(t *testing.T) {
	m, err := NewShardMap(1, 64, []string{"a", "b", "c"}, []string{"h:1", "h:2", "h:3"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalShardMap(b)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, 3)
	for id := uint64(0); id < 3000; id++ {
		s := got.ShardOf("emb", id)
		if s != m.ShardOf("emb", id) {
			t.Fatalf("id %d routes to %d after a round trip, %d before", id, s, m.ShardOf("emb", id))
		}
		counts[s]++
	}
	for s, n := range counts {
		if n < 800 {
			t.Fatalf("shard %d got %d of 3000 ids: partitions are not spread", s, n)
		}
	}
	for _, bad := range []string{`{`, `{"partitions":2,"shards":["a"],"addrs":["x"],"assign":[0,1]}`, `{"partitions":0}`} {
		if _, err := UnmarshalShardMap([]byte(bad)); !errors.Is(err, ErrBadShardMap) {
			t.Errorf("UnmarshalShardMap(%s) = %v, want ErrBadShardMap", bad, err)
		}
	}
	for lo, i := 0, 0; i < 3; i++ {
		l, h := DenseRange(100, i, 3)
		if l != lo || h <= l {
			t.Fatalf("DenseRange(100, %d, 3) = [%d,%d), want to start at %d", i, l, h, lo)
		}
		lo = h
	}
}

// FuzzUnmarshalShardMap: a shard map read from etcd is validated; a map that
// passes routes every id to a shard it lists.
func FuzzUnmarshalShardMap(f *testing.F) {
	m, _ := NewShardMap(1, 8, []string{"a", "b"}, []string{"h:1", "h:2"})
	b, _ := m.Marshal()
	f.Add(b)
	f.Add([]byte(`{"partitions":1,"shards":["a"],"addrs":["x"],"assign":[0]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := UnmarshalShardMap(b)
		if err != nil {
			return
		}
		for id := uint64(0); id < 64; id++ {
			if s := m.ShardOf("t", id); s < 0 || s >= len(m.Shards) {
				t.Fatalf("id %d routes to shard %d of %d", id, s, len(m.Shards))
			}
		}
	})
}

// TestAbsurdPartitionsRefused: a map of 100,000,000 partitions (a 200 MB
// value that etcd refuses, retried forever before) is refused at once,
// before anything of its size is allocated (issue 20, item 9).
func TestAbsurdPartitionsRefused(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := NewShardMap(1, 100_000_000, []string{"a", "b"}, []string{"h:1", "h:2"})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrBadShardMap) {
		t.Fatalf("NewShardMap(100M partitions) = %v, want ErrBadShardMap", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Fatalf("refusing it allocated %d bytes", d)
	}
	if _, err := NewShardMap(1, MaxPartitions, []string{"a", "b"}, []string{"h:1", "h:2"}); err != nil {
		t.Fatalf("NewShardMap(MaxPartitions) = %v", err)
	}
}
