#!/usr/bin/env bash
# gen.sh regenerates the Go protobuf types in ../hdfspb from the .proto files
# in ./xpshdfstest.
#
# The .proto files are copies of the Hadoop protocol definitions shipped with
# github.com/colinmarc/hdfs/v2 (internal/protocol/hadoop_common and
# internal/protocol/hadoop_hdfs), with three mechanical edits so that our
# registrations never clash with the client's in one binary:
#
#   1. the proto packages hadoop.common / hadoop.hdfs become
#      xps.hdfstest.common / xps.hdfstest.hdfs (type references too);
#   2. the files live under xpshdfstest/ and import each other by that path,
#      so the registered file names differ ("xpshdfstest/hdfs.proto", not
#      "hdfs.proto");
#   3. go_package points at github.com/xdlgo/xps/tests/hdfstest/hdfspb.
#
# None of this changes the wire format: protobuf encodes field numbers and
# types, never package or file names.
#
# Usage (from this directory):
#
#   ./gen.sh          # run protoc on the committed .proto copies
#   ./gen.sh --sync   # first re-derive the copies from the module cache
#
# Requires protoc (3.x) and protoc-gen-go (go install
# google.golang.org/protobuf/cmd/protoc-gen-go) on PATH.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:$(go env GOPATH)/bin"

COMMON="RpcHeader ProtobufRpcEngine IpcConnectionContext Security HAServiceProtocol"
HDFS="ClientNamenodeProtocol hdfs acl xattr encryption inotify erasurecoding datatransfer"

if [[ "${1:-}" == "--sync" ]]; then
	src="$(go env GOMODCACHE)/github.com/colinmarc/hdfs/v2@v2.4.0/internal/protocol"
	derive() { # derive <upstream file> <proto package>
		sed -e "s|^package hadoop\.[a-z]*;|package $2;|" \
			-e 's|\([^.a-zA-Z]\)hadoop\.common\.|\1xps.hdfstest.common.|g' \
			-e 's|\([^.a-zA-Z]\)hadoop\.hdfs\.|\1xps.hdfstest.hdfs.|g' \
			-e 's|^import "\(.*\)\.proto";|import "xpshdfstest/\1.proto";|' \
			-e 's|^option go_package = .*|option go_package = "github.com/xdlgo/xps/tests/hdfstest/hdfspb";|' \
			"$1" >"xpshdfstest/$(basename "$1")"
	}
	for f in $COMMON; do derive "$src/hadoop_common/$f.proto" xps.hdfstest.common; done
	for f in $HDFS; do derive "$src/hadoop_hdfs/$f.proto" xps.hdfstest.hdfs; done
	chmod 0644 xpshdfstest/*.proto
fi

rm -f ../hdfspb/*.pb.go
protoc -I . \
	--go_out=../hdfspb --go_opt=paths=source_relative \
	$(for f in $COMMON $HDFS; do echo "xpshdfstest/$f.proto"; done)
# paths=source_relative writes ../hdfspb/xpshdfstest/*.pb.go; flatten it.
mv ../hdfspb/xpshdfstest/*.pb.go ../hdfspb/
rmdir ../hdfspb/xpshdfstest
