#!/usr/bin/env bash
# Regenerates the gRPC stubs of serve's Predictor (xps/serve/v1) from
# serve/servepb/serve.proto with Debian's protoc and grpc_python_plugin
# (protobuf-compiler, protobuf-compiler-grpc). The stubs are committed:
# installing the package needs no generator.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/xps/serve/v1"
cp ../serve/servepb/serve.proto "$tmp/xps/serve/v1/serve.proto"
protoc -I "$tmp" --python_out=. --grpc_python_out=. \
	--plugin=protoc-gen-grpc_python="$(command -v grpc_python_plugin)" "$tmp/xps/serve/v1/serve.proto"
