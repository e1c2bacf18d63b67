// Package servepb is the generated gRPC protocol of package serve's
// prediction service (serve.proto): Predictor.Predict, the HTTP/JSON
// API's POST /predict over gRPC.
package servepb
