#!/usr/bin/env bash
# Runs N QEMU Linux guests (default 4) through a simulated network: every
# guest pings every other guest, and the last stdout line is one JSON object
# (guests, mode, ping_sent, ping_received, rtt_avg_us, slices, wall_s, the
# network statistics and each guest's results).
#
#   examples/qemu/run.sh [--guests N] [--mode lockstep|free] [fsin qemu options] [KEY=VALUE...]
#
# e.g. examples/qemu/run.sh --guests 4 --pings 10 topo=torus_2_2 --slice 200:1000
#
# Builds the guest image first if it is not cached (scripts/install-qemu.sh,
# which also installs QEMU and builds the lock-step plugin), then fsin.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
guests=4
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --guests) guests=$2; shift 2 ;;
        --mode) args+=(--timing "$2"); shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
image=$("$repo/scripts/install-qemu.sh")
# (install-qemu.sh has built the plugin.)
cargo build --release -q --manifest-path "$repo/Cargo.toml" -p sim-server
FSIN_GUEST_DIR="$image" exec "$repo/target/release/fsin" qemu --guests "$guests" --json "${args[@]}"
