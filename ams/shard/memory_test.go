package shard

import (
	"context"
	"errors"
	"net"
	"runtime"
	"runtime/debug"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// Memory tests of the bounds on what one client can make a shard hold
// (issue 20, item 8): a message over ams.MaxMessageBytes is refused
// unread, the buffers of a large message are returned, a pull creates at
// most ams.MaxRequestIDs rows, and sync-mode parts are kept only for the
// rounds of the window (MaxRoundsAhead). They measure the heap with
// runtime.ReadMemStats; none is timed.

// serveRaw serves s over gRPC on loopback and returns a stub for it whose
// calls may send messages of any size (the client package would refuse
// the large ones before sending).
func serveRaw(t *testing.T, s *Shard) amspb.AMSClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := NewGRPCServer(s)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), append(amspb.DialOptions(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<31-1), grpc.MaxCallRecvMsgSize(ams.MaxMessageBytes)))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return amspb.NewAMSClient(cc)
}

// newMemShard returns a shard with table emb of the given dim (SGD,
// zeros) and no rows.
func newMemShard(t *testing.T, dim int) *Shard {
	t.Helper()
	s := New(Options{ID: "mem", Stripes: 2})
	t.Cleanup(func() { s.Close() })
	spec := ams.TableSpec{Name: "emb", Dim: dim, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 0.1}, Init: ams.InitSpec{Kind: "zeros"}}
	if _, err := s.Declare(1, []ams.TableSpec{spec}, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

func tableRows(t *testing.T, s *Shard) int {
	t.Helper()
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return int(st.Tables[0].Rows)
}

func memStats() runtime.MemStats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// settledMemStats collects twice, so that what the first collection's
// cleanups released (the tables of earlier tests' shards) is gone too,
// and reads the statistics.
func settledMemStats() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	return memStats()
}

const mib = 1 << 20

// TestOversizedPushRefusedUnread sends a push one MiB over
// ams.MaxMessageBytes, malformed besides (ids and no gradients), as the
// probe did with 500 MiB: the shard's server refuses it from its length
// prefix, as ams.ErrTooLarge, having read a fraction of it (the HTTP/2
// flow-control window, 16 MiB) where it used to read, copy and decode
// it all (three times its size), and serves on.
func TestOversizedPushRefusedUnread(t *testing.T) {
	s := newMemShard(t, 8)
	stub := serveRaw(t, s)
	ctx := context.Background()
	if _, err := stub.Stats(ctx, &amspb.StatsRequest{ClusterVersion: 1}); err != nil {
		t.Fatal(err) // connected, so that the measure holds the call only
	}
	size := ams.MaxMessageBytes + mib
	req := &amspb.PushRequest{ClusterVersion: 1, Tables: []*amspb.TableGrads{{Table: "emb", Ids: make([]byte, size)}}}
	before := memStats()
	_, err := stub.Push(ctx, req)
	after := memStats()
	err = amspb.FromStatus(err)
	if !errors.Is(err, ams.ErrTooLarge) || !errors.Is(err, ams.ErrBadRequest) || status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("push of %d bytes = %v (code %v), want ams.ErrTooLarge and ams.ErrBadRequest (RESOURCE_EXHAUSTED)", size, err, status.Code(err))
	}
	t.Logf("refused: %v", err)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d MiB allocated during the call for a message of %d MiB", alloc/mib, size/mib)
	if limit := uint64(size / 4); alloc > limit {
		t.Fatalf("%d MiB allocated during the refused call, want at most %d MiB (a quarter of the message): the server read it", alloc/mib, limit/mib)
	}
	if n := tableRows(t, s); n != 0 {
		t.Fatalf("the refused push created %d rows", n)
	}
	ids := ams.IDsPayload([]uint64{7})
	if _, err := stub.Push(ctx, &amspb.PushRequest{ClusterVersion: 1, Tables: []*amspb.TableGrads{{Table: "emb", Ids: ids, Grads: make([]byte, 32)}}}); err != nil {
		t.Fatalf("a push after the refused one: %v", err)
	}
}

// TestLargePushLeavesNoBuffersBehind pushes a legit 48 MiB message over
// gRPC, with the collector off during the call, then collects once: the
// heap comes back within amspb.PoolBytes (the buffers the server's pool
// may keep) of where it was. With a sync.Pool the message's HTTP/2
// frames and its 64 MiB contiguous copy outlived that collection (the
// next one frees them, and an idle shard may go minutes without one), so
// the heap stayed 112 MiB up.
func TestLargePushLeavesNoBuffersBehind(t *testing.T) {
	const n, dim = 1 << 20, 10 // 8 MiB of ids, 40 MiB of gradients
	s := newMemShard(t, dim)
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = ams.Mix64(uint64(i))
	}
	// The rows exist before the measure: the push creates none.
	if err := s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: ids, Rows: make([]float32, n*dim)}}, true); err != nil {
		t.Fatal(err)
	}
	stub := serveRaw(t, s)
	ctx := context.Background()
	if _, err := stub.Stats(ctx, &amspb.StatsRequest{ClusterVersion: 1}); err != nil {
		t.Fatal(err)
	}
	grads := make([]float32, n*dim)
	for i := range grads {
		grads[i] = 1
	}
	req := &amspb.PushRequest{ClusterVersion: 1, Tables: []*amspb.TableGrads{{Table: "emb", Ids: ams.IDsPayload(ids), Grads: ams.FloatsPayload(grads)}}}

	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection but ours
	before := settledMemStats()
	if _, err := stub.Push(ctx, req); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	after := memStats()
	runtime.KeepAlive(req)

	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap %d MiB before the push of %d MiB, %d MiB after it and one collection (%+d MiB; in use %d -> %d MiB)",
		before.HeapAlloc/mib, (8+4*dim)*n/mib, after.HeapAlloc/mib, grew/mib, before.HeapInuse/mib, after.HeapInuse/mib)
	if limit := int64(amspb.PoolBytes + 8*mib); grew > limit {
		t.Fatalf("the heap grew %d MiB over a push and a collection, want at most %d MiB (amspb.PoolBytes and 8 MiB)", grew/mib, limit/mib)
	}
	out := make([]float32, dim)
	if err := s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: ids[:1], Rows: out}}, false); err != nil {
		t.Fatal(err)
	}
	if out[0] != -0.1 {
		t.Fatalf("row after the push = %v, want -0.1 (lr 0.1, gradient 1)", out)
	}
}

// TestPullCreatesAtMostMaxRequestIDs: a pull with create of more ids than
// ams.MaxRequestIDs, or more row values than ams.MaxRequestValues, is
// refused as ams.ErrTooLarge (a case of ams.ErrBadRequest) and creates
// nothing, in the shard's API and over gRPC, where the reply is not
// allocated either.
func TestPullCreatesAtMostMaxRequestIDs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ids    int
		dim    int
		reason string
	}{
		{"ids", ams.MaxRequestIDs + 1, 1, "ids"},
		{"values", ams.MaxRequestValues/64 + 1, 64, "row values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newMemShard(t, tc.dim)
			ids := make([]uint64, tc.ids)
			for i := range ids {
				ids[i] = uint64(i)
			}
			err := s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: ids, Rows: make([]float32, tc.ids*tc.dim)}}, true)
			if !errors.Is(err, ams.ErrTooLarge) || !errors.Is(err, ams.ErrBadRequest) {
				t.Fatalf("pull of %d ids of dim %d = %v, want ams.ErrTooLarge and ams.ErrBadRequest", tc.ids, tc.dim, err)
			}
			if n := tableRows(t, s); n != 0 {
				t.Fatalf("the refused pull created %d rows", n)
			}
			stub := serveRaw(t, s)
			req := &amspb.PullRequest{ClusterVersion: 1, Create: true, Tables: []*amspb.TableIDs{{Table: "emb", Ids: ams.IDsPayload(ids)}}}
			// The heap counters are the process's: another goroutine's
			// allocations (the race detector's, a runtime's) land in a
			// measurement too, so the smallest of three is taken.
			alloc := ^uint64(0)
			for range 3 {
				before := memStats()
				_, err = stub.Pull(context.Background(), req)
				after := memStats()
				if err = amspb.FromStatus(err); !errors.Is(err, ams.ErrTooLarge) || !errors.Is(err, ams.ErrBadRequest) {
					t.Fatalf("pull over gRPC of %d ids of dim %d = %v, want ams.ErrTooLarge and ams.ErrBadRequest", tc.ids, tc.dim, err)
				}
				alloc = min(alloc, after.TotalAlloc-before.TotalAlloc)
			}
			t.Logf("refused: %v", err)
			if n := tableRows(t, s); n != 0 {
				t.Fatalf("the refused pull created %d rows", n)
			}
			// The message (8 bytes an id) is copied four times: by the
			// client's codec, and by the server's HTTP/2 frames, its codec
			// and the protobuf decoder. Its reply (4 bytes a value, 64 MiB
			// in the values case, 8 times the copies) is not allocated.
			reply, copies := uint64(4*tc.ids*tc.dim), uint64(4*8*tc.ids)
			t.Logf("%d MiB allocated during the refused pull of %d MiB of ids (the reply: %d MiB)", alloc/mib, 8*tc.ids/mib, reply/mib)
			if limit := copies + reply/4; reply > copies && alloc > limit {
				t.Fatalf("%d MiB allocated during the refused pull, want at most %d MiB: the reply was allocated", alloc/mib, limit/mib)
			}
		})
	}
}

// TestFutureRoundsKeepBoundedMemory: one worker of two pushes its parts
// of 2,000 rounds (1,000 in each of two epochs) while the other pushes
// none, so no round is applied. The shard keeps the parts of the rounds
// of its window, 2 x MaxRoundsAhead, refuses the others with
// ams.ErrRoundAhead, and its heap grows by those rounds only (it grew by
// every part's accumulator, 2,000 of them, before).
func TestFutureRoundsKeepBoundedMemory(t *testing.T) {
	const ids, dim, iters = 1024, 8, 1000
	s := newMemShard(t, dim)
	idv := make([]uint64, ids)
	for i := range idv {
		idv[i] = uint64(i)
	}
	grads := make([]float32, ids*dim)
	before := settledMemStats()
	kept := 0
	for e := range uint32(2) {
		for i := range uint32(iters) {
			p := RoundPart{Round: Round{Epoch: e, Iter: i}, Worker: 1, Workers: 2,
				Tables: []ams.TableRequest{{Table: "emb", IDs: idv, Rows: grads}}}
			err := s.PushRound(1, p)
			switch {
			case err == nil:
				kept++
				if i >= MaxRoundsAhead {
					t.Fatalf("the part of %s was taken while the shard is at epoch 0 round 0", p.Round)
				}
			case !errors.Is(err, ams.ErrRoundAhead):
				t.Fatalf("part of %s = %v, want ams.ErrRoundAhead", p.Round, err)
			case i < MaxRoundsAhead:
				t.Fatalf("part of %s refused: %v", p.Round, err)
			}
		}
	}
	runtime.GC()
	after := memStats()
	if kept != 2*MaxRoundsAhead {
		t.Fatalf("%d parts kept, want 2 x MaxRoundsAhead = %d", kept, 2*MaxRoundsAhead)
	}
	// A kept part costs its ids, gradient sums and index map, about twice
	// its payload; 4x the payload bounds the window's rounds, and is a
	// fifteenth of what the 2,000 parts took before.
	payload := int64(ids * (8 + 4*dim))
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew %d KiB for %d parts kept of %d pushed (%d KiB of payload each)", grew>>10, kept, 2*iters, payload>>10)
	if limit := 2 * MaxRoundsAhead * 4 * payload; grew > limit {
		t.Fatalf("the heap grew %d KiB, want at most %d KiB (the window's %d rounds)", grew>>10, limit>>10, 2*MaxRoundsAhead)
	}
}
