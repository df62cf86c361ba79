#!/usr/bin/env python3
# Each size of an `fsin-pingpong` run against its MPI-level replay
# (docs/studies/calibrating-the-mpi-layer.md): the run's trace is cut
# after each size's last round trip (or stream) on both ranks and
# replayed with the command in its report (`mpi_trace.replay`); a size's
# replayed time is rank 0's time at its cut less that at the start of
# its timed pass (after its warm-up pass, or in a run of one pass a size
# the size before's print), its live time what rank 0 printed (rtt_us,
# us_per_msg or us_per_round, times the rounds).
#
#   scripts/mpi-pingpong-sizes.py FSIN REPORT.json [KEY=VALUE ...]
#
# FSIN is the fsin binary; REPORT.json the report of `fsin qemu
# --guests 2 --roi command --trace-level mpi --run 'cd /root; mpirun
# --hostfile /etc/fsin/hostfile -np 2 fsin-pingpong [-w] [-s] ROUNDS 8
# BYTES...'` (round trips; with -s streams, with -x K exchanges of K;
# with -w each size after an untimed pass of its own; the first size's line,
# which pays the ranks' start and first contact, is left out);
# KEY=VALUE pairs replace or add to the replay's keys (mpi_profile=...).
# Prints a line per size (live and replayed us per round trip or
# message, and the error) and the range of the errors.
import json, re, subprocess, sys

from fsin_report import cut_dimemas, find, replay_keys, usage_or_exit

args = sys.argv[1:]
usage_or_exit(__file__, args, 2)
fsin, report, extra = args[0], args[1], args[2:]

live_report, t, kv = replay_keys(report, extra)
ratio = int(kv["node_cycle_relation"]) / int(kv["fsin_cycle_relation"])
clock = float(kv["node_clock"])


def strings(o):
    """Every string in report `o`, at whatever depth."""
    if isinstance(o, str):
        yield o
    elif isinstance(o, dict):
        for v in o.values():
            yield from strings(v)
    elif isinstance(o, list):
        for v in o:
            yield from strings(v)


# fsin-pingpong's lines: (kind, bytes, rounds, us per round trip, message
# or exchange); kind "stream", "round trip" or "exchange of K".
lines = []
line = r"FSIN-PP (stream |exchange=(\d+) )?bytes=(\d+) rounds=(\d+) (?:rtt_us|us_per_msg|us_per_round)=([\d.]+)"
for s in strings(live_report):
    for m in re.finditer(line, s):
        kind = f"exchange of {m[2]}" if m[2] else "stream" if m[1] else "round trip"
        lines.append((kind, int(m[3]), int(m[4]), float(m[5])))
if not lines:
    sys.exit(f"{report}: no fsin-pingpong round trip, stream or exchange line in the report")
kind = lines[0][0]


def per_round(rounds):
    """Rank 0's sends and receives in `rounds` rounds: a round trip is a
    send and a receive; a stream's ROUNDS messages are followed by one
    empty answer; an exchange of K posts K receives, starts K sends and
    waits for the K receives (`-x K`)."""
    if kind == "stream":
        return rounds + 1
    if kind == "round trip":
        return 2 * rounds
    return 3 * int(kind.split()[-1]) * rounds


def cut(dim, records, path, bursts):
    """The Dimemas trace `dim` cut after each rank's `records`-th send or
    receive, and with `bursts` the computation that follows it (rank 0's
    print of the size's line: outside its live time) with the records
    that describe it (`20:` events: its kernel time and frames)."""

    def keep(lines):
        n = 0
        for i, l in enumerate(lines):
            if n == records and not (bursts and l.startswith(("1:", "20:"))):
                return i
            n += l.startswith(("2:", "3:"))
        return len(lines)

    cut_dimemas(dim, path, keep)


def rank0_s(records, bursts=False):
    """Rank 0's replayed time with the trace cut after `records` sends and
    receives (and with `bursts` the computation after them), guest s."""
    path = f"/tmp/mpi-pingpong-sizes-{records}.dim"
    cut(kv["tracefile"], records, path, bursts)
    out = subprocess.run(
        [fsin, "run", *(f"{k}={v}" for k, v in {**kv, "tracefile": path}.items()), "--json"],
        capture_output=True, text=True, check=True,
    ).stdout
    return find(json.loads(out.strip().splitlines()[-1]), "task_done_cycles")[0] * ratio / clock


# Rank 0's records in the trace: `fsin-pingpong -w` runs each size twice
# and times the second pass (the first, its warm-up, comes before the
# timed one's records); without -w, once.
rank0 = sum(l.startswith(("2:0:", "3:0:")) for l in open(kv["tracefile"]))
once = sum(per_round(rounds) for _, _, rounds, _ in lines)
if rank0 not in (once, 2 * once):
    sys.exit(f"{kv['tracefile']}: rank 0 has {rank0} sends and receives, where the printed "
             f"sizes make {once} (one pass a size) or {2 * once} (two)")
passes = rank0 // once
# Rank 0's records through each line's timed pass (the first, the
# warm-up size, included), and before it (with one pass a size, the
# line before's end).
records, ends, starts = 0, [], []
for _, _, rounds, _ in lines:
    records += passes * per_round(rounds)
    starts.append(records - per_round(rounds))
    ends.append(records)
errs = []
for (_, bytes_, rounds, us), start, end in zip(lines[1:], starts[1:], ends[1:]):
    replay_us = (rank0_s(end) - rank0_s(start, bursts=True)) / rounds * 1e6
    errs.append((replay_us - us) / us * 100)
    print(f"{bytes_:7d} B {kind}: live {us:9.1f} us, replay {replay_us:9.1f} us, {errs[-1]:+6.2f}%", flush=True)
print(f"{min(errs):+.2f}% .. {max(errs):+.2f}% over {len(errs)} sizes")
