#!/usr/bin/env python3
# Self-consistency of an MPI-level trace (issue 57, docs/qemu.md): replays
# a run's trace with the command in its report (`mpi_trace.replay`) and
# compares each rank's replay time (`task_done_cycles`, network cycles,
# times node cycles per network cycle, over `node_clock`) with the live
# rank's time from MPI_Init to MPI_Finalize (`mpi_trace.rank_s`), guest s.
#
#   scripts/mpi-self-consistency.py FSIN REPORT.json [KEY=VALUE ...]
#
# FSIN is the fsin binary; REPORT.json a `fsin qemu --trace-level mpi`
# report (a study's run-0/report.json); KEY=VALUE pairs (mpi_message_ns=
# ..., nic_latency=...) replace or add to the replay's keys, to see what
# another model's constants give. Prints a line per rank and the range of
# the errors.
import json, re, shlex, subprocess, sys
fsin, report, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
def find(o, key):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == key:
                return v
            x = find(v, key)
            if x is not None:
                return x
t = find(json.load(open(report)), "mpi_trace")
cmd = shlex.split(t["replay"])
assert cmd[:2] == ["fsin", "run"], cmd
kv = dict(a.split("=", 1) for a in cmd[2:] + extra)
out = subprocess.run([fsin, "run", *(f"{k}={v}" for k, v in kv.items()), "--json"], capture_output=True, text=True, check=True).stdout
r = json.loads(out.strip().splitlines()[-1])
done = find(r, "task_done_cycles")
ratio = int(kv["node_cycle_relation"]) / int(kv["fsin_cycle_relation"])
clock = float(kv["node_clock"])
errs = []
for i, (c, live) in enumerate(zip(done, t["rank_s"])):
    s = c * ratio / clock
    errs.append((s - live) / live * 100)
    print(f"rank {i}: replay {s:.3f} s, live {live:.3f} s, {errs[-1]:+.2f}%")
print(f"{min(errs):+.2f}% .. {max(errs):+.2f}% over {len(errs)} ranks")
