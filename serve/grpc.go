package serve

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/serve/servepb"
)

// RegisterGRPC registers the server's prediction service
// (servepb.Predictor) on gs.
func (s *Server) RegisterGRPC(gs *grpc.Server) {
	servepb.RegisterPredictorServer(gs, predictor{s: s})
}

// predictor adapts Predict to the gRPC service.
type predictor struct {
	servepb.UnimplementedPredictorServer
	s *Server
}

func (p predictor) Predict(_ context.Context, req *servepb.PredictRequest) (*servepb.PredictResponse, error) {
	release := p.s.acquire(-1)
	if release == nil {
		p.s.count("grpc", "overloaded")
		return nil, status.Error(codes.ResourceExhausted, ErrOverloaded.Error())
	}
	defer release()
	resp, err := p.s.predict("grpc", &Request{User: req.User, Candidates: req.Candidates})
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
