#!/usr/bin/env python3
# Predicts a finished MPI-level study again with another fsin binary or
# other model keys, without its guests (docs/qemu.md, "The study against the paper"): the
# study's trace (STUDY/trace.mpi.dim) replayed on each run's network (run
# 0's replay keys, `mpi_trace.replay` in run-0/report.json, with the
# run's varied key: `slice=NET:NODE` sets fsin_cycle_relation and
# node_cycle_relation), plus run 0's time outside MPI (guest_s -
# traced_mpi_s), as `fsin qemu --vary ... --predict mpi` predicts.
#
#   scripts/mpi-repredict.py FSIN STUDY [KEY=VALUE ...]
#
# FSIN is the fsin binary; STUDY a `fsin qemu --vary KEY=... --predict
# mpi --out STUDY` directory; KEY=VALUE pairs replace or add to every
# replay's keys. Prints, per run, the full system's guest seconds and
# relative change, the study's prediction, the new one and its relative
# change, and the error in points (new relative change less the full
# system's).
import json, shlex, subprocess, sys

from fsin_report import find, usage_or_exit

args = sys.argv[1:]
usage_or_exit(__file__, args, 2)
fsin, study, extra = args[0], args[1], args[2:]



points = json.load(open(f"{study}/study.json"))["points"]
replay = find(json.load(open(f"{study}/run-0/report.json")), "mpi_trace")["replay"]
cmd = shlex.split(replay)
assert cmd[:2] == ["fsin", "run"], cmd
base_keys = dict(a.split("=", 1) for a in cmd[2:])
base_keys["tracefile"] = f"{study}/trace.mpi.dim"
untraced_s = points[0]["guest_s"] - points[0]["traced_mpi_s"]
base = None
for p in points:
    if p.get("reference"):
        continue
    keys = dict(base_keys)
    if p["key"] == "slice":
        keys["fsin_cycle_relation"], keys["node_cycle_relation"] = p["value"].split(":")
    else:
        keys[p["key"]] = p["value"]
    for a in extra:
        # Where it stands matters (mpi_profile drops the costs before it).
        k, v = a.split("=", 1)
        keys.pop(k, None)
        keys[k] = v
    out = subprocess.run(
        [fsin, "run", *(f"{k}={v}" for k, v in keys.items()), "--json"],
        capture_output=True, text=True, check=True,
    ).stdout
    predicted = find(json.loads(out.strip().splitlines()[-1]), "predicted_s") + untraced_s
    if base is None:
        base = (p["guest_s"], predicted)
    full, now = p["guest_s"] / base[0], predicted / base[1]
    print(
        f"{p['key']}={p['value']}: full system {p['guest_s']:.4f} s ({full:.3f}), "
        f"study's prediction {p['predicted_mpi_s']:.4f} s, now {predicted:.4f} s ({now:.3f}): "
        f"{100 * (now - full):+.1f} points",
        flush=True,
    )
