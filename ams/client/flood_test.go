package client_test

import (
	"encoding/binary"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/ams/stream"
	"github.com/xdlgo/xps/tests/testutil"
)

// floodConns is how many hostile connections TestShardFloodOfHeaders opens.
const floodConns = 16

// TestShardFloodOfHeaders is issue 48's flood of a shard's data plane:
// floodConns connections each open the stream's own TCP protocol and
// announce a frame of nearly ams.MaxMessageBytes (176 MiB), send 1 KiB of
// it and hold the connection; four more send garbage. Meanwhile a worker
// pulls and pushes on: every call succeeds, and the shard's heap grows by
// about 4 MiB a hostile connection (ams/stream's eagerFrame), not by the
// lengths announced (2.8 GiB before the frame buffer grew with its bytes).
func TestShardFloodOfHeaders(t *testing.T) {
	ctx := testutil.Ctx(t, 2*time.Minute)
	m, _ := startShards(t, 1, 1)
	c := newClient(t, m)
	if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 8, Optimizer: ams.OptimizerSpec{Name: "adagrad", LR: 0.1}}}, nil); err != nil {
		t.Fatal(err)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	header := binary.LittleEndian.AppendUint32(stream.Magic[:], uint32(ams.MaxMessageBytes-1))
	for i := range floodConns + 4 {
		conn, err := net.Dial("tcp", m.Addrs[0])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		msg := append(append([]byte(nil), header...), make([]byte, 1024)...)
		if i >= floodConns { // garbage after the magic
			msg = append(stream.Magic[:], []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")...)
		}
		if _, err := conn.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	// The shard has taken every hostile header once it has allocated a
	// frame buffer for each (progress, not a sleep).
	testutil.Eventually(t, time.Minute, "the shard reading the hostile headers", func() bool {
		var now runtime.MemStats
		runtime.ReadMemStats(&now)
		return now.TotalAlloc-before.TotalAlloc >= floodConns*(4<<20)
	})
	ids := make([]uint64, 500)
	for i := range ids {
		ids[i] = uint64(i) * 7919
	}
	rows := make([]float32, len(ids)*8)
	for it := range 50 {
		if err := c.Pull(ctx, []client.Table{{Name: "emb", IDs: ids, Rows: rows}}, nil, true); err != nil {
			t.Fatalf("pull %d during the flood: %v", it, err)
		}
		if err := c.Push(ctx, []client.Table{{Name: "emb", IDs: ids, Rows: rows}}, nil); err != nil {
			t.Fatalf("push %d during the flood: %v", it, err)
		}
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if limit := int64(floodConns*(4<<20) + 64<<20); grown > limit {
		t.Fatalf("the shard's heap grew by %d MiB under %d hostile headers, want at most %d MiB", grown>>20, floodConns, limit>>20)
	}
	t.Logf("heap grew by %d MiB under %d hostile headers of %d MiB each", grown>>20, floodConns, ams.MaxMessageBytes>>20)
}
