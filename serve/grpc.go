package serve

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/serve/servepb"
)

// RegisterGRPC registers the server's prediction service
// (servepb.Predictor) on gs. A request that names a model is answered
// NOT_FOUND: a Server serves one unnamed model (Set serves named ones).
func (s *Server) RegisterGRPC(gs *grpc.Server) {
	servepb.RegisterPredictorServer(gs, predictor{find: func(name string) (*Server, func(), error) {
		if name != "" {
			return nil, nil, fmt.Errorf("%w: %q: this server serves one unnamed model", ErrUnknownModel, name)
		}
		return s, func() {}, nil
	}})
}

// RegisterGRPC registers the Set's prediction service (servepb.Predictor)
// on gs: a request's model field names its model.
func (s *Set) RegisterGRPC(gs *grpc.Server) {
	servepb.RegisterPredictorServer(gs, predictor{find: s.enter})
}

// predictor adapts Predict to the gRPC service: find returns the server
// of the model a request names and the func to call when done with it.
type predictor struct {
	servepb.UnimplementedPredictorServer
	find func(model string) (*Server, func(), error)
}

func (p predictor) Predict(_ context.Context, req *servepb.PredictRequest) (*servepb.PredictResponse, error) {
	s, done, err := p.find(req.Model)
	if err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	defer done()
	release := s.acquire(-1)
	if release == nil {
		s.count("grpc", "overloaded")
		return nil, status.Error(codes.ResourceExhausted, ErrOverloaded.Error())
	}
	defer release()
	resp, err := s.predict("grpc", &Request{User: req.User, Candidates: req.Candidates})
	switch {
	case errors.Is(err, ErrNotReady):
		return nil, status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, ErrBadRequest):
		return nil, status.Error(codes.InvalidArgument, err.Error())
	case err != nil:
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &servepb.PredictResponse{Version: resp.Version, Scores: resp.Scores}, nil
}
