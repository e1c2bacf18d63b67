package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
)

func TestState(t *testing.T) {
	ctx := context.Background()
	m, shards := startShards(t, 3, 1)
	c := newClient(t, m)
	var put []client.StateEntry
	for i := range 20 {
		put = append(put, client.StateEntry{Key: fmt.Sprintf("reader/kafka://t/%02d", i), Value: []byte{byte(i), 1}})
	}
	put = append(put, client.StateEntry{Key: "other", Value: []byte("x")})
	if err := c.PutState(ctx, put); err != nil {
		t.Fatal(err)
	}
	// The entries are spread over the shards.
	used := 0
	for _, s := range shards {
		es, err := s.GetState(1, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(es) > 0 {
			used++
		}
	}
	if used < 2 {
		t.Errorf("state on %d of 3 shards, want it spread", used)
	}
	got, err := c.GetState(ctx, "reader/")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 {
		t.Fatalf("%d entries, want 20", len(got))
	}
	for i, e := range got {
		if e.Key != put[i].Key || string(e.Value) != string(put[i].Value) {
			t.Fatalf("entry %d = %q %v, want %q %v", i, e.Key, e.Value, put[i].Key, put[i].Value)
		}
	}
	// Overwrite one, delete one.
	if err := c.PutState(ctx, []client.StateEntry{{Key: put[0].Key, Value: []byte("new")}, {Key: put[1].Key}}); err != nil {
		t.Fatal(err)
	}
	got, _ = c.GetState(ctx, "reader/")
	if len(got) != 19 || string(got[0].Value) != "new" || got[1].Key != put[2].Key {
		t.Fatalf("after overwrite and delete: %d entries, first %q=%q", len(got), got[0].Key, got[0].Value)
	}
	// Refusals: bad keys and values, and an old cluster version.
	for _, e := range []client.StateEntry{{Key: "", Value: []byte("x")}, {Key: strings.Repeat("k", 2000), Value: []byte("x")},
		{Key: "big", Value: make([]byte, 2<<20)}} {
		if err := c.PutState(ctx, []client.StateEntry{e}); !errors.Is(err, ams.ErrBadRequest) {
			t.Errorf("put of key %.10q (%d bytes) = %v, want ams.ErrBadRequest", e.Key, len(e.Value), err)
		}
	}
	m2 := *m
	m2.Version = 2
	stale := newClient(t, &m2)
	if _, err := stale.GetState(ctx, ""); err == nil {
		t.Error("a request of another cluster version was served")
	}
}
