#!/usr/bin/env bash
# Behaviour check for refactors: runs `fsin run --json` with two binaries
# on a set of configurations covering every topology family and router,
# and reports any difference in the JSON reports (wall-clock fields left
# out; configuration keys that only one binary knows, and report keys
# that only the new one has, are listed, not counted).
#
#   scripts/compare-runs.sh OLD_FSIN NEW_FSIN [CONFIG_FILE]
#
# CONFIG_FILE has one configuration per line (KEY=VALUE words); the
# default set is below. Exit status 1 when any report differs.
set -euo pipefail
old=$1 new=$2
configs=${3:-}
default_configs() {
  cat <<'LIST'
topo=torus_8_8 cycles=3000 load=0.3
topo=torus_8_8 cycles=3000 load=0.6 vc=dally rmode=trc
topo=torus_8_8 cycles=3000 load=0.5 vc=dally rmode=adaptive nchan=3
topo=mesh_8_8 cycles=3000 load=0.3 rmode=oblivious imode=dor
topo=torus_4_4_4 cycles=3000 load=0.4 rmode=shortest
topo=ttorus_8_8 sk_xy=4 cycles=3000 load=0.3
topo=midimew_32 cycles=3000 load=0.3
topo=circulant_20_4 cycles=3000 load=0.3
topo=spinnaker_8_8 cycles=3000 load=0.3
topo=fattree_4_3 cycles=3000 load=0.4
topo=thintree_4_2_3 cycles=3000 load=0.3 routing=static
topo=slimtree_4_2_3 cycles=3000 load=0.3
topo=hypercube_6 cycles=3000 load=0.3 routing=adaptive
topo=icube_2_2_4_4 cycles=3000 load=0.3
topo=torus_8_8 faults=4 cycles=3000 load=0.3
topo=mesh_8_8 switching=wormhole cycles=3000 load=0.2
topo=torus_8_8 kernel=bu kernel_bytes=4096
topo=torus_8_8 tpattern=transpose cycles=3000 load=0.3 amode=fifo
topo=torus_8_8 load=0.2
topo=torus_8_8 shotmode=1 shotsize=10 nsamples=3
topo=torus_8_8 cycles=3000 load=0.4 global_cc=50 update_period=2
topo=torus_8_8 cycles=3000 load=0.9 timeout_upper_limit=200 extract=1 rmode=oblivious
LIST
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n $configs ]]; then cp "$configs" "$tmp/list"; else default_configs > "$tmp/list"; fi
n=0 differ=0
while read -r line; do
  [[ -z $line || $line == \#* ]] && continue
  n=$((n + 1))
  # shellcheck disable=SC2086
  "$old" run --json $line 2>/dev/null | tail -1 > "$tmp/old.json" || true
  # shellcheck disable=SC2086
  "$new" run --json $line 2>/dev/null | tail -1 > "$tmp/new.json" || true
  if ! python3 - "$tmp/old.json" "$tmp/new.json" "$line" <<'PY'
import json, sys
def load(p):
    d = json.load(open(p))
    for k in ("wall_s", "cycles_per_s"):
        d.pop(k, None)
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
only = set(a.get("config", {})) ^ set(b.get("config", {}))
for k in only:
    a.get("config", {}).pop(k, None)
    b.get("config", {}).pop(k, None)
if only:
    print(f"{sys.argv[3]}: config keys of one binary only: {sorted(only)}")
# A report may gain keys (listed, not counted); one it loses counts.
gained = sorted(set(b) - set(a))
for k in gained:
    b.pop(k)
if gained:
    print(f"{sys.argv[3]}: report keys of the new binary only: {gained}")
if a != b:
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    print(f"DIFFERS {sys.argv[3]}: {keys}")
    sys.exit(1)
PY
  then differ=$((differ + 1)); fi
done < "$tmp/list"
echo "$n configurations, $differ differ"
[[ $differ -eq 0 ]]
