#!/usr/bin/env bash
# Builds the xps image offline: static Go binaries (CGO_ENABLED=0: none of
# the dependencies needs cgo) copied into an image FROM scratch
# (Dockerfile.scratch), tagged xps:<git describe> and xps:dev.
#   deploy/image/build.sh [TAG]
# The programs: ams, scheduler, worker, serve, etcd (the embedded etcd, also
# as a member of a multi-member cluster), ctrgen, kafkaput, hdfsput.
# With a registry, the multi-stage ../../Dockerfile builds the same image
# inside Docker instead.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tag=${1:-$(git -C "$root" describe --always --dirty 2>/dev/null || echo dev)}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/bin" "$ctx/etc" "$ctx/dirs/tmp" "$ctx/dirs/data" "$ctx/dirs/snapshots" "$ctx/dirs/exports"
chmod 1777 "$ctx/dirs/tmp"
echo "== building static binaries" >&2
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$ctx/bin/" \
	./cmd/ams ./cmd/scheduler ./cmd/worker ./cmd/serve ./cmd/etcd ./cmd/ctrgen ./cmd/kafkaput ./cmd/hdfsput)
printf 'root:x:0:0:root:/:/sbin/nologin\nxps:x:65532:65532:xps:/tmp:/sbin/nologin\n' >"$ctx/etc/passwd"
printf 'root:x:0:\nxps:x:65532:\n' >"$ctx/etc/group"
cp "$(dirname "$0")/Dockerfile.scratch" "$ctx/Dockerfile"
echo "== docker build -t xps:$tag -t xps:dev" >&2
docker build -q -t "xps:$tag" -t xps:dev "$ctx" >&2
echo "xps:$tag"
