#!/usr/bin/env python3
# Where a replay of an MPI-level trace spends its time against the live
# run, call by call: replays the trace of a `fsin qemu --trace-level mpi
# --timeline LIVE.prv` run with the command in its report (as
# scripts/mpi-self-consistency.py does) and a timeline of its own, and
# prints per rank, per MPI function, how many calls and how long in all,
# live and replayed, and the time outside the calls (the CPU bursts; for
# the replay, their kernel receives too), ms of guest time.
#
#   scripts/mpi-call-times.py FSIN REPORT.json LIVE.prv [KEY=VALUE ...]
#
# FSIN is the fsin binary; REPORT.json the run's report; LIVE.prv its
# Paraver timeline (`--timeline LIVE.prv`; node cycles, the ranks'
# calls on the guests' tracks); KEY=VALUE pairs replace or add to the
# replay's keys. Only the live calls from each rank's MPI_Init return to
# its MPI_Finalize count. The trace names every completion call
# MPI_Wait, so the live ones (MPI_Wait, MPI_Waitall, MPI_Test, ...) are
# counted as `completion` on both sides; MPI_Irecv costs the replay
# nothing and is not drawn there (docs/contracts.md, "Timelines").
import json, os, subprocess, sys, tempfile

from fsin_report import find, replay_keys, usage_or_exit

args = sys.argv[1:]
usage_or_exit(__file__, args, 3)
fsin, report, live_prv, extra = args[0], args[1], args[2], args[3:]
_, _, kv = replay_keys(report, extra)
ratio = int(kv["node_cycle_relation"]) / int(kv["fsin_cycle_relation"])
clock = float(kv["node_clock"])
COMPLETION = {"MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome",
              "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome"}


def names(pcf):
    """(event type, value) -> function name, from a Paraver .pcf."""
    out, types, mode = {}, [], None
    for line in open(pcf):
        f = line.split()
        if line.startswith("EVENT_TYPE"):
            types, mode = [], "types"
        elif line.startswith("VALUES"):
            mode = "values"
        elif not f:
            mode = None
        elif mode == "types" and len(f) >= 2:
            types.append(int(f[1]))
        elif mode == "values" and f[0].isdigit():
            for t in types:
                out[(t, int(f[0]))] = f[1]
    return out


def calls(prv, tick_s):
    """Per track (in the file's order), its calls: (function, from s, to s)."""
    named = names(prv[:-4] + ".pcf")
    open_at, out = {}, {}
    for line in open(prv):
        if not line.startswith("2:"):
            continue
        f = line.rstrip().split(":")
        key, at = (int(f[3]), int(f[4])), int(f[5]) * tick_s
        if key[1] < 2:
            continue  # the first thread is the guest's or task's own row
        for i in range(6, len(f) - 1, 2):
            kind, value = int(f[i]), int(f[i + 1])
            if not 50000001 <= kind <= 50000003:
                continue
            if value:
                open_at[key] = (named.get((kind, value), f"{kind}:{value}"), at)
            elif key in open_at:
                name, start = open_at.pop(key)
                out.setdefault(key, []).append((name, start, at))
    return [out[k] for k in sorted(out)]


def totals(rank_calls, span=None):
    """Per function (completion calls as one): (count, ms); and the span,
    s: `span` (from, to) where given, else from MPI_Init's return to
    MPI_Finalize's entry."""
    if span is None:
        span = (next(e for n, _, e in rank_calls if n == "MPI_Init"),
                next(s for n, s, _ in rank_calls if n == "MPI_Finalize"))
    per = {}
    for name, s, e in rank_calls:
        if name in ("MPI_Init", "MPI_Finalize") or s < span[0] or e > span[1]:
            continue
        name = "completion" if name in COMPLETION else name
        n, t = per.get(name, (0, 0.0))
        per[name] = (n + 1, t + (e - s) * 1e3)
    return per, span[1] - span[0]


live_report, t, _ = replay_keys(report, [])
starts = t.get("start_s") or [0.0] * len(t["rank_s"])
live = calls(live_prv, 1 / clock)
with tempfile.TemporaryDirectory() as d:
    prv = os.path.join(d, "replay.prv")
    out = subprocess.run(
        [fsin, "run", *(f"{k}={v}" for k, v in kv.items()), "--timeline", prv, "--json"],
        capture_output=True, text=True, check=True,
    ).stdout
    done = find(json.loads(out.strip().splitlines()[-1]), "task_done_cycles")
    replayed = calls(prv, ratio / clock)
for r, (lc, rc) in enumerate(zip(live, replayed)):
    (lp, lspan) = totals(lc)
    (rp, rspan) = totals(rc, (starts[r], done[r] * ratio / clock))
    print(f"rank {r}: live {lspan * 1e3:.2f} ms, replay {rspan * 1e3:.2f} ms")
    inside = [0.0, 0.0]
    for name in sorted(set(lp) | set(rp), key=lambda n: -lp.get(n, (0, 0))[1]):
        (ln, lt), (rn, rt) = lp.get(name, (0, 0.0)), rp.get(name, (0, 0.0))
        inside[0] += lt
        inside[1] += rt
        print(f"  {name:16} live {ln:6d} calls {lt:9.2f} ms   replay {rn:6d} calls {rt:9.2f} ms   {rt - lt:+9.2f}")
    ob, rb = lspan * 1e3 - inside[0], rspan * 1e3 - inside[1]
    print(f"  {'outside calls':16} live {ob:22.2f} ms   replay {rb:22.2f} ms   {rb - ob:+9.2f}")
