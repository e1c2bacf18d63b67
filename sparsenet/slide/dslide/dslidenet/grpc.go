package dslidenet

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	gencoding "google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/sparsenet/slide/dslide"
)

// Subtype is the gRPC content subtype of the messages.
const Subtype = "dslide"

// codec encodes the package's messages (their MarshalBinary).
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) {
	m, ok := v.(encoding.BinaryMarshaler)
	if !ok {
		return nil, fmt.Errorf("dslidenet: cannot marshal %T", v)
	}
	return m.MarshalBinary()
}

func (codec) Unmarshal(b []byte, v any) error {
	m, ok := v.(encoding.BinaryUnmarshaler)
	if !ok {
		return fmt.Errorf("dslidenet: cannot unmarshal into %T", v)
	}
	return m.UnmarshalBinary(b)
}

func (codec) Name() string { return Subtype }

var _ gencoding.Codec = codec{}

// ServerOption installs the codec of the owner service on the gRPC server
// that Register is given (it serves that service only): the codec is not
// registered globally, so that importing the package changes no other
// server's or connection's codecs.
func ServerOption() grpc.ServerOption { return grpc.ForceServerCodec(codec{}) }

const service = "xps.dslide.v1.Owner"

// ownerService is the interface the service description dispatches to.
type ownerService interface {
	forward(ctx context.Context, req *fwdReq) (*fwdRep, error)
	backward(ctx context.Context, req *backReq) (*backRep, error)
	predict(ctx context.Context, req *predReq) (*predRep, error)
}

// handler is the method handler of method: it decodes the request and
// calls call, through the server's interceptor when it has one (a TLS
// server's check of the caller's role: job/xctrain).
func handler[Req any, Rep any](method string, call func(ownerService, context.Context, *Req) (*Rep, error)) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, intercept grpc.UnaryServerInterceptor) (any, error) {
		req := new(Req)
		if err := dec(req); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		if intercept == nil {
			return call(srv.(ownerService), ctx, req)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + service + "/" + method}
		return intercept(ctx, req, info, func(ctx context.Context, req any) (any, error) {
			return call(srv.(ownerService), ctx, req.(*Req))
		})
	}
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: service,
	HandlerType: (*ownerService)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Forward", Handler: handler("Forward", ownerService.forward)},
		{MethodName: "Backward", Handler: handler("Backward", ownerService.backward)},
		{MethodName: "Predict", Handler: handler("Predict", ownerService.predict)},
	},
}

// Server serves the owner of this process's worker (Set, per attempt).
type Server struct {
	mu    sync.Mutex
	owner *dslide.Owner
}

// Register adds the owner service to s, a server made with ServerOption.
func (sv *Server) Register(s *grpc.Server) { s.RegisterService(&serviceDesc, sv) }

// Set makes o (nil: none) the owner served.
func (sv *Server) Set(o *dslide.Owner) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.owner = o
}

// current returns the owner serving requests of version, or nil when the
// request must wait for a newer one (invariant 2).
func (sv *Server) current(version uint64) *dslide.Owner {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.owner == nil || sv.owner.Version() < version {
		return nil
	}
	return sv.owner
}

func (sv *Server) forward(ctx context.Context, req *fwdReq) (*fwdRep, error) {
	o := sv.current(req.Version)
	if o == nil {
		return &fwdRep{Pending: true, Resend: true}, nil
	}
	rep, err := o.Forward(ctx, dslide.ForwardRequest(*req))
	return (*fwdRep)(&rep), toStatus(err)
}

func (sv *Server) backward(ctx context.Context, req *backReq) (*backRep, error) {
	o := sv.current(req.Version)
	if o == nil {
		return &backRep{Pending: true, Resend: true}, nil
	}
	rep, err := o.Backward(ctx, dslide.BackwardRequest(*req))
	return (*backRep)(&rep), toStatus(err)
}

func (sv *Server) predict(ctx context.Context, req *predReq) (*predRep, error) {
	o := sv.current(req.Version)
	if o == nil {
		return &predRep{Pending: true}, nil
	}
	rep, err := o.Predict(ctx, dslide.PredictRequest(*req))
	return (*predRep)(&rep), toStatus(err)
}

// toStatus maps the owner's errors to statuses the Client maps back.
func toStatus(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, dslide.ErrStale):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, dslide.ErrRound):
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// Client is a dslide.Peer for the owner served at the other end of conn.
type Client struct {
	conn *grpc.ClientConn
}

// NewClient returns a Peer over conn.
func NewClient(conn *grpc.ClientConn) *Client { return &Client{conn: conn} }

func invoke[Rep any](ctx context.Context, c *Client, method string, req any) (*Rep, error) {
	rep := new(Rep)
	if err := c.conn.Invoke(ctx, "/"+service+"/"+method, req, rep, grpc.ForceCodec(codec{})); err != nil {
		return nil, fromStatus(err)
	}
	return rep, nil
}

// fromStatus maps the owner's errors back (toStatus).
func fromStatus(err error) error {
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch s.Code() {
	case codes.FailedPrecondition:
		return fmt.Errorf("%w (%s)", dslide.ErrStale, strings.TrimPrefix(s.Message(), dslide.ErrStale.Error()+": "))
	case codes.InvalidArgument:
		return fmt.Errorf("%w (%s)", dslide.ErrRound, strings.TrimPrefix(s.Message(), dslide.ErrRound.Error()+": "))
	}
	return fmt.Errorf("dslidenet: %w", err)
}

// callSlack bounds a call past its request's Wait: the owner's compute
// and the link. A peer that does not answer in it fails the call (a link
// that swallows packets instead of refusing them).
const callSlack = 5 * time.Minute

// Forward implements dslide.Peer.
func (c *Client) Forward(ctx context.Context, req dslide.ForwardRequest) (dslide.ForwardReply, error) {
	ctx, cancel := context.WithTimeout(ctx, req.Wait+callSlack)
	defer cancel()
	rep, err := invoke[fwdRep](ctx, c, "Forward", (*fwdReq)(&req))
	if err != nil {
		return dslide.ForwardReply{}, err
	}
	return dslide.ForwardReply(*rep), nil
}

// Backward implements dslide.Peer.
func (c *Client) Backward(ctx context.Context, req dslide.BackwardRequest) (dslide.BackwardReply, error) {
	ctx, cancel := context.WithTimeout(ctx, req.Wait+callSlack)
	defer cancel()
	rep, err := invoke[backRep](ctx, c, "Backward", (*backReq)(&req))
	if err != nil {
		return dslide.BackwardReply{}, err
	}
	return dslide.BackwardReply(*rep), nil
}

// Predict implements dslide.Peer.
func (c *Client) Predict(ctx context.Context, req dslide.PredictRequest) (dslide.PredictReply, error) {
	ctx, cancel := context.WithTimeout(ctx, callSlack)
	defer cancel()
	rep, err := invoke[predRep](ctx, c, "Predict", (*predReq)(&req))
	if err != nil {
		return dslide.PredictReply{}, err
	}
	return dslide.PredictReply(*rep), nil
}
