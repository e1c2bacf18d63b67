#!/usr/bin/env bash
# D-SLIDE across worker processes over shaped links (issue 29): the SLIDE
# layer split into one share per worker, each worker in its own network
# namespace, against one worker and against dense model parallelism
# (model.output.exchange dense: every share's logits of every sample) over
# the same links.
#
# Links: the script makes a bridge (10.77.0.1/24) in the root namespace and
# one namespace per worker joined to it by a veth pair; tc tbf shapes both
# ends of every veth to LINK (default 1gbit). This kernel has no netem qdisc
# (tc's delay), so the DELAY (default 10ms) each way between workers comes
# from cmd/netdelay, a relay in the root namespace that every worker's
# share is reached through (model.output.peer_advertise). etcd, the
# scheduler and the 2 AMS shards run in the root namespace on 10.77.0.1
# (their traffic is shaped, not delayed). Everything the script creates it
# removes on exit. Needs root (ip netns, tc).
#
# Data: cmd/xcgen's Amazon-670K shape, XC_SAMPLES training samples
# (default 20000) and 1000 test, bench/configs/xc_670k.yaml (batch 128: a
# round's batch, dealt out between the workers), XC_EPOCHS epochs (default
# 2); and ../shared/data/bibtex when present (bench/configs/xc_bibtex.yaml,
# sparsity 0.2, SEEDS). Per run: worker 0's test P@1 (sparse and dense
# inference), samples/s (all workers together), the wall time, each
# worker's peak RSS and its share of the layer in MB, and the bytes a batch
# moves between shares (as counted from the messages' layout).
#
#   wire    the bytes the relay actually carried per training round
#           between the workers' shares (netdelay -report), 2 and 4
#           workers, sparse and dense exchanges, 2000 samples of the 670K
#           shape, no evaluation or progressive scoring (their traffic is
#           not training's).
#
# Usage: sudo [DATA="670k bibtex wire"] [WORKERS="1 2 4"] [EXCHANGES="sparse dense"]
#        [LINK=1gbit] [DELAY=10ms] bench/dslide_net.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out/dslide_net
mkdir -p "$out"
go build -o "$out/" ./cmd/worker ./cmd/ams ./cmd/scheduler ./cmd/etcd ./cmd/xcgen ./cmd/netdelay
bin=$(cd "$out" && pwd)
link=${LINK:-1gbit}
delay=${DELAY:-10ms}
host=10.77.0.1
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for i in 0 1 2 3; do
		ip netns del "xpsw$i" 2>/dev/null || true
		ip link del "xpsv$i" 2>/dev/null || true
	done
	ip link del xpsbr 2>/dev/null || true
}
trap cleanup EXIT

# The links.
cleanup
ip link add xpsbr type bridge
ip addr add $host/24 dev xpsbr
ip link set xpsbr up
for i in 0 1 2 3; do
	ip netns add "xpsw$i"
	ip link add "xpsv$i" type veth peer name "xpsp$i"
	ip link set "xpsp$i" netns "xpsw$i"
	ip link set "xpsv$i" master xpsbr up
	ip netns exec "xpsw$i" ip addr add "10.77.0.$((10 + i))/24" dev "xpsp$i"
	ip netns exec "xpsw$i" ip link set "xpsp$i" up
	ip netns exec "xpsw$i" ip link set lo up
	tc qdisc add dev "xpsv$i" root tbf rate "$link" burst 256kb latency 100ms
	ip netns exec "xpsw$i" tc qdisc add dev "xpsp$i" root tbf rate "$link" burst 256kb latency 100ms
done
relays=()
for i in 0 1 2 3; do relays+=("$host:$((7300 + i))=10.77.0.$((10 + i)):7200"); done
"$bin/netdelay" -delay "$delay" -report 200ms "${relays[@]}" > "$out/netdelay.log" 2>&1 &
pids+=($!)
"$bin/etcd" -addr $host:2379 > "$out/etcd.log" 2>&1 &
pids+=($!)
echo "links: $link each veth end (tbf), $delay each way between workers (netdelay); load $(cat /proc/loadavg)" >&2

# job NAME CONFIG TRAIN TEST W EXCHANGE SEED [FLAGS]: one cluster, W
# worker processes; prints the table row.
job() {
	local name=$1 cfg=$2 train=$3 test=$4 W=$5 ex=$6 seed=$7
	shift 7
	local cl="b$RANDOM" tag="$name-$W-$ex-$seed" snaps
	local common=(-etcd $host:2379 -cluster "$cl")
	local procs=()
	"$bin/scheduler" "${common[@]}" -shards 2 -workers "$W" > "$out/$tag.scheduler.log" 2>&1 &
	procs+=($!)
	for s in 0 1; do
		"$bin/ams" "${common[@]}" -id "ams-$s" -listen "$host:0" > "$out/$tag.ams-$s.log" 2>&1 &
		procs+=($!)
	done
	local wpids=()
	for ((i = 0; i < W; i++)); do
		ip netns exec "xpsw$i" "$bin/worker" "${common[@]}" -config "$cfg" -train "$train" ${test:+-test "$test"} -json \
			-workers "$W" -worker-index "$i" -set model.seed="$seed" -set model.output.exchange="$ex" \
			-set model.output.peer_listen="10.77.0.$((10 + i)):7200" -set model.output.peer_advertise="$host:$((7300 + i))" \
			"$@" > "$out/$tag.worker-$i.log" 2>&1 &
		wpids+=($!)
	done
	local ok=1
	for p in "${wpids[@]}"; do wait "$p" || ok=0; done
	for p in "${procs[@]}"; do kill "$p" 2>/dev/null || true; done
	wait "${procs[@]}" 2>/dev/null || true
	if [ $ok = 0 ]; then
		echo "$tag: a worker failed; see $out/$tag.worker-*.log" >&2
		return 0
	fi
	/usr/bin/python3 - "$out" "$tag" "$name" "$W" "$ex" "$seed" <<'PY'
import json, sys
out, tag, name, W, ex, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
rs = []
for i in range(W):
    lines = open(f"{out}/{tag}.worker-{i}.log").read().strip().splitlines()
    rs.append(json.loads(lines[-1]))
r0 = rs[0]; e = r0.get("test") or {}
s, d = e.get("sparse") or {}, e.get("dense") or {}
samples = sum(r["samples"] for r in rs)
wall = max(r["seconds"] for r in rs)
rss = " / ".join("%.0f" % (r.get("peak_rss_bytes", 0) / 1e6) for r in rs)
layer = " / ".join("%.0f" % (r["layer_bytes"] / 1e6) for r in rs)
wire = "%.3f / %.1f" % (r0["step_bytes"] / 1e6, r0["dense_step_bytes"] / 1e6) if r0.get("step_bytes") else "-"
imb = "%.2f" % max(r.get("owner_imbalance", 1) for r in rs) if W > 1 else "-"
print(f"| {name} | {W} | {ex if W > 1 else '-'} | {seed} | {s.get('p1', float('nan')):.4f} | {d.get('p1', float('nan')):.4f} | "
      f"{samples / wall:.0f} | {wall:.1f} | {rss} | {layer} | {imb} | {wire} |")
PY
}

# relayed: the bytes the relay has carried so far.
relayed() {
	sleep 0.5
	grep -o '[0-9]* bytes relayed' "$out/netdelay.log" | tail -n 1 | cut -d' ' -f1
}

echo "| data | workers | exchange | seed | P@1 sparse inf. | P@1 dense inf. | samples/s (all workers) | train s | peak RSS MB per worker | layer MB per worker | busiest share / mean | MB per batch and worker: D-SLIDE / dense MP |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for set in ${DATA:-670k bibtex wire}; do
	echo "load before $set: $(cat /proc/loadavg)" >&2
	case $set in
	670k)
		d=$(pwd)/bench/out/xc670k
		n=${XC_SAMPLES:-20000}
		mkdir -p "$d"
		[ -f "$d/train-$n.txt" ] || "$bin/xcgen" -quiet -out "$d/train-$n.txt" -samples "$n" -test-out "$d/test.txt" -test-samples 1000
		for W in ${WORKERS:-1 2 4}; do
			for ex in ${EXCHANGES:-sparse dense}; do
				[ "$W" = 1 ] && [ "$ex" = dense ] && continue
				eps=${XC_EPOCHS:-2}
				[ "$ex" = dense ] && eps=1 # the same model; its speed is what it is measured for
				job 670k "$(pwd)/bench/configs/xc_670k.yaml" "$d/train-$n.txt" "$d/test.txt" "$W" "$ex" 1 -epochs "$eps"
			done
		done
		;;
	wire)
		d=$(pwd)/bench/out/xc670k
		[ -f "$d/train-2000.txt" ] || "$bin/xcgen" -quiet -out "$d/train-2000.txt" -samples 2000
		wire=()
		for W in 2 4; do
			for ex in sparse dense; do
				b0=$(relayed)
				job wire "$(pwd)/bench/configs/xc_670k.yaml" "$d/train-2000.txt" "" "$W" "$ex" 1 -epochs 1 \
					-set model.output.progressive_every=0 > /dev/null
				b1=$(relayed)
				# rounds: 2000 samples in batches of 128: 16 (the last of 80)
				wire+=("| 670k | $W | $ex | $(((b1 - b0) / 16)) bytes ($(/usr/bin/python3 -c "print('%.3f' % (($b1 - $b0) / 16 / $W / 1e6))") MB per worker) |")
			done
		done
		echo
		echo "| data | workers | exchange | bytes relayed between workers per round (per worker) |"
		echo "|---|---|---|---|"
		printf '%s\n' "${wire[@]}"
		;;
	bibtex)
		d=$(cd .. && pwd)/shared/data/bibtex
		if [ ! -f "$d/train.txt" ]; then
			echo "bibtex: $d absent; skipped" >&2
			continue
		fi
		for W in ${WORKERS:-1 2 4}; do
			for s in ${SEEDS:-1 2}; do
				job bibtex "$(pwd)/bench/configs/xc_bibtex.yaml" "$d/train.txt" "$d/test.txt" "$W" sparse "$s" -sparsity 0.2
			done
		done
		;;
	esac
	echo "load after $set: $(cat /proc/loadavg)" >&2
done
