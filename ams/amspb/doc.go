// Package amspb holds the generated protobuf and gRPC code of the AMS shard
// protocol (ams.proto). The generated files are committed so that builds
// need no code generator; the regeneration command is in ams.proto.
package amspb
