#!/usr/bin/env bash
# Several node hosts on one machine: network namespaces stand for hosts.
# The server runs in one namespace; each node host is another namespace
# with one aggregator client (fsin fake-node --node A-B) and a /dev/shm of its
# own, so it talks to the server over TCP and UDP on a veth link exactly
# as a separate machine would (no shared-memory barrier). With --delay-us,
# each host reaches the server through fsin-link, which adds that one-way
# delay in both directions (this kernel kind has no tc netem).
#
#   scripts/multihost.sh [--hosts H] [--per-host M] [--delay-us D]
#                        [--workload W] [--slices K] [--bin DIR] [--json]
#                        [-- fsin serve arguments and KEY=VALUE settings]
#
# Defaults: 4 hosts x 32 nodes, no added delay, the idle workload, 3000
# slices, topo=torus_H_M, binaries from target/release. Prints the
# server's report (its JSON on the last line with --json) and, on stderr,
# one line of rounds per second. Needs CAP_SYS_ADMIN and CAP_NET_ADMIN
# (root); without them it exits 77 saying so. Namespaces, links and
# processes are removed on exit, whatever happens.
set -euo pipefail

hosts=4 per_host=32 delay_us= workload=idle slices=3000 bin=target/release json=
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --per-host) per_host=$2; shift 2 ;;
    --delay-us) delay_us=$2; shift 2 ;;
    --workload) workload=$2; shift 2 ;;
    --slices) slices=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --json) json=--json; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "multihost.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for b in fsin fsin-link; do
  [ -x "$bin/$b" ] || { echo "multihost.sh: $bin/$b missing: cargo build --release" >&2; exit 2; }
done
case "$hosts$per_host" in *[!0-9]*) echo "multihost.sh: --hosts and --per-host take numbers" >&2; exit 2 ;; esac
[ "$hosts" -ge 1 ] && [ "$hosts" -le 200 ] || { echo "multihost.sh: --hosts is 1 to 200" >&2; exit 2; }
nodes=$((hosts * per_host))
[ "$nodes" -ge 2 ] || { echo "multihost.sh: at least 2 nodes" >&2; exit 2; }
bin=$(cd "$bin" && pwd)

tag=fsinmh$$
srv=$tag-srv
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for i in $(seq 1 "$hosts"); do ip netns del "$tag-h$i" 2>/dev/null || true; done
  ip netns del "$srv" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

if ! ip netns add "$srv" 2>/dev/null; then
  echo "multihost.sh: cannot create network namespaces here (needs CAP_SYS_ADMIN, e.g. root)" >&2
  trap - EXIT
  exit 77
fi
ip -n "$srv" link set lo up
ip -n "$srv" link add br0 type bridge
ip -n "$srv" addr add 10.77.0.1/16 dev br0
ip -n "$srv" link set br0 up
for i in $(seq 1 "$hosts"); do
  h=$tag-h$i
  ip netns add "$h"
  ip -n "$h" link set lo up
  ip -n "$srv" link add "h$i" type veth peer name eth0 netns "$h"
  ip -n "$srv" link set "h$i" master br0 up
  ip -n "$h" addr add "10.77.$((i / 250 + 1)).$((i % 250 + 1))/16" dev eth0
  ip -n "$h" link set eth0 up
done

port=50051 dport=50052
out=$(mktemp)
ip netns exec "$srv" "$bin/fsin" serve --listen "10.77.0.1:$port" --datagram-port "$dport" \
  --nodes "$nodes" --slices "$slices" $json "topo=torus_${hosts}_${per_host}" "$@" >"$out" &
pids+=($!)
server=$!
for _ in $(seq 100); do
  [ -n "$(ip netns exec "$srv" ss -Hltn "sport = :$port")" ] && break
  sleep 0.02
done
for i in $(seq 1 "$hosts"); do
  h=$tag-h$i
  url=http://10.77.0.1:$port
  if [ -n "$delay_us" ]; then
    ip netns exec "$h" "$bin/fsin-link" --listen "127.0.0.1:$port" --to "10.77.0.1:$port" \
      --datagram-port "$dport" --delay-us "$delay_us" &
    pids+=($!)
    url=http://127.0.0.1:$port
    for _ in $(seq 100); do
      [ -n "$(ip netns exec "$h" ss -Hltn "sport = :$port")" ] && break
      sleep 0.02
    done
  fi
  first=$(((i - 1) * per_host)) last=$((i * per_host - 1))
  ip netns exec "$h" sh -c 'mount -t tmpfs tmpfs /dev/shm && exec "$@"' sh \
    "$bin/fsin" fake-node --server "$url" --node "$first-$last" --workload "$workload" >/dev/null &
  pids+=($!)
done
status=0
wait "$server" || status=$?
cat "$out"
if [ -n "$json" ]; then
  field() { tail -n 1 "$out" | grep -o "\"$1\":[0-9.e+-]*" | head -n 1 | cut -d: -f2; }
  awk -v s="$(field slices)" -v k="$(field slices_skipped)" -v w="$(field wall_s)" \
    'BEGIN { if (w > 0) printf "%d rounds in %.2f s: %.0f rounds/s\n", s - k, w, (s - k) / w }' >&2
fi
rm -f "$out"
exit "$status"
