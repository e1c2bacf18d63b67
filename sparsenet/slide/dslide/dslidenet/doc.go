// Package dslidenet carries package dslide's rounds between worker
// processes over gRPC: a Server serves one process's owner (the share of
// the layer its worker holds, replaced at each attempt) as the service
// xps.dslide.v1.Owner, and a Client is a dslide.Peer for a remote owner.
//
// The messages are not protobuf: the three calls (Forward, Backward,
// Predict) carry flat arrays of float32 inputs, Partials, Globals and dx
// rows, so they travel in a fixed little-endian layout (wire.go) under
// the gRPC content subtype "dslide" (application/grpc+dslide), with no
// per-value tags and one copy on each side. The codec is not registered
// globally: the server that serves the owner service is made with
// ServerOption (its codec for every call), and the client names it on each
// call, so importing the package changes nothing else's codecs.
//
// # Invariants
//
//  1. A message decodes to exactly what was encoded, or to an error (a
//     short, long or inconsistent buffer), never a panic (FuzzWire).
//  2. A Server without an owner, or with one of an older version than a
//     request's, answers Pending (its worker has not started that attempt
//     yet), to predictions too; an older request gets dslide.ErrStale's message back as a
//     FailedPrecondition status, which the Client maps back to ErrStale.
//  3. A Client's requests wait at most the request's Wait at the owner,
//     plus the link: a dead peer fails the call (Unavailable), and one
//     that does not answer fails it after the Wait and 5 minutes.
//
// # Files
//
//   - grpc.go: Server (ServerOption, Register, Set) and Client (Forward, Backward, Predict): the owner service over gRPC, with its codec.
//   - wire.go: the messages' fixed little-endian layout (MarshalBinary, UnmarshalBinary).
package dslidenet
