# The conventional multi-stage build of the xps image, for machines that can
# pull base images from a registry. Offline (no registry), use
# deploy/image/build.sh: the same binaries, FROM scratch.
#   docker build -t xps:dev .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/bin/ \
	./cmd/ams ./cmd/scheduler ./cmd/worker ./cmd/serve ./cmd/etcd ./cmd/ctrgen ./cmd/kafkaput ./cmd/hdfsput && \
	mkdir -p /out/etc && \
	printf 'root:x:0:0:root:/:/sbin/nologin\nxps:x:65532:65532:xps:/tmp:/sbin/nologin\n' >/out/etc/passwd && \
	printf 'root:x:0:\nxps:x:65532:\n' >/out/etc/group && \
	mkdir -p /out/dirs/tmp /out/dirs/data /out/dirs/snapshots /out/dirs/exports && chmod 1777 /out/dirs/tmp

FROM scratch
COPY --from=build /out/bin/ /usr/local/bin/
COPY --from=build /out/etc/ /etc/
COPY --from=build --chown=65532:65532 /out/dirs/ /
ENV PATH=/usr/local/bin
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/worker"]
