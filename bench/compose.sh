#!/usr/bin/env bash
# The deployed shape (issue 50): the XDL paper's model over generated data
# (bench/dataplane.sh's), trained by one worker against two shards, with
# every process a container of the xps image on a Docker network, as
# deploy/compose/compose.yaml runs them (etcd, ams-0, ams-1, scheduler,
# worker; the stream between worker and shards crosses the network's
# bridge), against the same worker running the whole cluster in its one
# container (`worker -local`). Alternated, ROUNDS rounds (default 3) at
# each batch size of BATCHES (default "256 5000"); prints samples/s, test
# AUC and the ratio compose / direct of each round.
#
# EXTRA adds worker flags to both shapes (e.g. EXTRA="-set train.prefetch_batches=3").
#
# Usage: [ROUNDS=3] [BATCHES="256 5000"] [EXTRA=...] bench/compose.sh [train_samples]
# (default 1000000). Needs Docker; builds the image (deploy/image/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ntrain=${1:-1000000}
rounds=${ROUNDS:-3}
batches=${BATCHES:-256 5000}
out=$(pwd)/bench/out
mkdir -p "$out/compose"
deploy/image/build.sh >/dev/null
go build -o "$out/compose/ctrgen" ./cmd/ctrgen
train="$out/compose/train.libffm"
test="$out/compose/test.libffm"
[ -s "$train" ] && [ "$(wc -l <"$train")" = "$ntrain" ] ||
	"$out/compose/ctrgen" -train "$train" -test "$test" -train-samples "$ntrain" -test-samples 10000 >/dev/null
chmod a+r "$train" "$test"
net=xps-bench-$$
names=()
cleanup() {
	for n in "${names[@]}"; do docker rm -f "$n" >/dev/null 2>&1 || true; done
	docker network rm "$net" >/dev/null 2>&1 || true
}
trap cleanup EXIT
docker network create "$net" >/dev/null
run() { # name args...: a detached container of the image on the network
	local n=$1
	shift
	names+=("$n-$$")
	docker run -d --name "$n-$$" --network "$net" --network-alias "$n" --read-only --tmpfs /tmp:uid=65532,gid=65532 \
		--user 65532:65532 -v "$out/compose:/data:ro" "$@" >/dev/null
}
model=(-format libffm -dim 18 -hidden 200,80 -epochs 1 -train /data/train.libffm -test /data/test.libffm -quiet -json ${EXTRA:-})
echo "cores: $(nproc); train samples: $ntrain; rounds: $rounds; load before: $(cat /proc/loadavg)"
for round in $(seq "$rounds"); do
	for b in $batches; do
		run direct --entrypoint /usr/local/bin/worker xps:dev -local "${model[@]}" -batch-size "$b"
		docker wait "direct-$$" >/dev/null
		docker logs "direct-$$" 2>/dev/null | tail -n 1 >"$out/compose/direct.json"
		run etcd --entrypoint /usr/local/bin/etcd xps:dev -addr 0.0.0.0:2379 -advertise etcd:2379 -dir /tmp/etcd
		for i in 0 1; do
			run "ams-$i" --entrypoint /usr/local/bin/ams xps:dev -etcd etcd:2379 -id "ams-$i" -listen 0.0.0.0:7000 -advertise "ams-$i:7000"
		done
		run scheduler --entrypoint /usr/local/bin/scheduler xps:dev -etcd etcd:2379 -id scheduler -shards 2 -workers 1 -train /data/train.libffm
		run worker --entrypoint /usr/local/bin/worker xps:dev -etcd etcd:2379 "${model[@]}" -batch-size "$b"
		code=$(docker wait "worker-$$")
		docker logs "worker-$$" 2>/dev/null | tail -n 1 >"$out/compose/compose.json"
		[ "$code" = 0 ] || { echo "the compose worker failed:"; docker logs "worker-$$" 2>&1 | tail -n 20; exit 1; }
		for n in "${names[@]}"; do docker rm -f "$n" >/dev/null 2>&1 || true; done
		names=()
		/usr/bin/python3 - "$b" "$round" "$out/compose" "$(cat /proc/loadavg)" <<'PY'
import json, sys
b, rnd, d, load = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
x = json.load(open(f"{d}/direct.json"))
c = json.load(open(f"{d}/compose.json"))
print(json.dumps({"batch": b, "round": rnd, "direct": x["samples_per_second"], "compose": c["samples_per_second"],
    "ratio": c["samples_per_second"] / x["samples_per_second"], "direct_auc": x["test_auc"], "compose_auc": c["test_auc"],
    "compose_fetch_wait": c["fetch_wait_seconds"] / c["seconds"], "load": load}))
PY
	done
done
