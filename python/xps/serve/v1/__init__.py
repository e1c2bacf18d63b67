"""Generated gRPC stubs of serve's xps.serve.v1.Predictor (python/gen.sh)."""
