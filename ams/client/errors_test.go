package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/ams/shard"
	"github.com/xdlgo/xps/ams/stream"
)

// failingShard answers every pull and push with err, as a shard's
// service does (the error itself, no status): served over gRPC with the
// shard's server options, or called in this process.
type failingShard struct {
	amspb.UnimplementedAMSServer
	err error
}

func (f *failingShard) Declare(context.Context, *amspb.DeclareRequest) (*amspb.DeclareResponse, error) {
	return &amspb.DeclareResponse{}, nil
}

func (f *failingShard) Pull(context.Context, *amspb.PullRequest) (*amspb.PullResponse, error) {
	return nil, f.err
}

func (f *failingShard) Push(context.Context, *amspb.PushRequest) (*amspb.PushResponse, error) {
	return nil, f.err
}

func (f *failingShard) PullRows(context.Context, uint64, []ams.TableRequest, []ams.DenseRequest, bool) error {
	return f.err
}

func (f *failingShard) PushRows(context.Context, uint64, []ams.TableRequest, []ams.DenseRequest) error {
	return f.err
}

// failingStream serves a failingShard's stream data plane.
type failingStream struct{ f *failingShard }

func (s failingStream) Pull(context.Context, *stream.Request, *stream.ReplyWriter) error {
	return s.f.err
}
func (s failingStream) Push(context.Context, *stream.Request) error { return s.f.err }

// messagesOnly hides a failingShard's PullRows and PushRows: the client
// calls its Pull and Push.
type messagesOnly struct{ client.DataPlane }

// serveFailing serves f over real gRPC on loopback and returns its map.
func serveFailing(t *testing.T, f *failingShard) *ams.ShardMap {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(shard.ServerOptions()...)
	amspb.RegisterAMSServer(gs, f)
	stream.Register(gs, failingStream{f}, nil)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	m, err := ams.NewShardMap(1, 8, []string{"ams-0"}, []string{lis.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestErrorTableRoundTrip makes a shard fail with every error of the
// table, wrapped, over real gRPC and through each direct path in this
// process: the client's error matches the same sentinel with errors.Is
// every time, and keeps the shard's message.
func TestErrorTableRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, e := range amspb.Errors {
		t.Run(e.Reason, func(t *testing.T) {
			f := &failingShard{err: fmt.Errorf("the shard says: %w", e.Err)}
			m := serveFailing(t, f)
			paths := map[string]client.Resolver{
				"grpc":     resolver{},
				"buffers":  resolver{m.Addrs[0]: f},
				"messages": resolver{m.Addrs[0]: messagesOnly{f}},
			}
			for name, r := range paths {
				c, err := client.NewLocal(m, r)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 2}}, nil); err != nil {
					t.Fatal(err)
				}
				rows := []client.Table{{Name: "emb", IDs: []uint64{1, 2}, Rows: make([]float32, 4)}}
				for op, err := range map[string]error{
					"pull": c.Pull(ctx, rows, nil, true),
					"push": c.Push(ctx, rows, nil),
				} {
					if !errors.Is(err, e.Err) || !strings.Contains(err.Error(), f.err.Error()) {
						t.Errorf("%s, %s: %v, want a match of %v with the shard's message", name, op, err, e.Err)
					}
				}
			}
		})
	}
}

// TestTransportErrors checks the errors gRPC reports itself, with no
// shard's reason: a shard that is not listening is ams.ErrUnavailable,
// and a call whose context ended is the context's error.
func TestTransportErrors(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	m, err := ams.NewShardMap(1, 8, []string{"ams-0"}, []string{addr})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, m)
	vec := []client.Vector{{Name: "v", Values: make([]float32, 1)}}
	if err := c.Pull(context.Background(), nil, vec, false); !errors.Is(err, ams.ErrUnavailable) {
		t.Errorf("pull from a shard that is not listening = %v, want ams.ErrUnavailable", err)
	}
	m2 := serveFailing(t, &failingShard{})
	c2 := newClient(t, m2)
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c2.Pull(cctx, nil, vec, false); !errors.Is(err, context.Canceled) {
		t.Errorf("pull with a cancelled context = %v, want context.Canceled", err)
	}
	dctx, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel()
	if err := c2.Pull(dctx, nil, vec, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("pull past its deadline = %v, want context.DeadlineExceeded", err)
	}
}
