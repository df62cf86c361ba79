#!/usr/bin/env python3
# Self-consistency of an MPI-level trace (docs/qemu.md): replays a run's
# trace with the command in its report (`mpi_trace.replay`) and compares
# each rank's replay time (`task_done_cycles`, network cycles, times node
# cycles per network cycle, over `node_clock`) with the live rank's time
# from MPI_Init to MPI_Finalize (`mpi_trace.rank_s`), guest s.
#
#   scripts/mpi-self-consistency.py FSIN REPORT.json [--where TIMELINE.prv
#       [--every N]] [KEY=VALUE ...]
#
# FSIN is the fsin binary; REPORT.json a `fsin qemu --trace-level mpi`
# report (a study's run-0/report.json); KEY=VALUE pairs (mpi_message_ns=
# ..., nic_latency=...) replace or add to the replay's keys, to see what
# another model's constants give. Prints a line per rank and the range of
# the errors. A rank's replayed time is counted from its start (the
# report's `start_s`: the replay starts each rank as late after the first
# as its live counterpart left MPI_Init).
#
# --where TIMELINE.prv (the same run's `--timeline`, Paraver): where along
# the run the replay goes wrong. For every N-th collective (default 10)
# and the last, the trace is cut after each rank's collective of that
# number and replayed; a line gives the live ranks' times to that
# collective's exit (the timeline's Extrae events, from each rank's
# MPI_Init exit) and the replay's difference, ms and %. Then the frames
# from the first rank's MPI_Init exit to the last one's MPI_Finalize, live
# (the timeline's communications, a broadcast once per receiver, and of
# them the TCP acknowledgements: frames of mpi_segment_header bytes, 66).
# In every case the replay's
# frames and acknowledgements are printed (its report's frames_sent and
# acks_sent, and its ARP requests), beside the live run's where the trace's header records them
# (its report's live_frames and live_acks; traces of 2026-12-04 on), and
# its TCP tail-loss probes and delayed acknowledgements (tcp_probes,
# delayed_acks) beside the live run's tcp_retransmissions.
# Each rank's line gives its CPU bursts' time in the trace and, where the
# trace records it (traces made with `--trace-level mpi` from 2026-12-06
# on: `20:T:0:90000006:NS` records), the guest kernel's part of them: the
# interrupts of the frames that came and went, which the replay charges
# again in the messages' costs, and page faults and the scheduler
# (docs/studies/calibrating-the-mpi-layer.md, "The CPU bursts hold the
# kernel's receive"), and, where the trace records them (`90000007` to
# `90000009`, traces from 2026-12-06 on), the frames its node received
# (their bytes) and sent during the bursts.
import json, os, subprocess, sys

from fsin_report import cut_dimemas, find, replay_keys, usage_or_exit

args = sys.argv[1:]
usage_or_exit(__file__, args, 2)
where, every = None, 10
for flag in ("--where", "--every"):
    if flag in args:
        i = args.index(flag)
        value = args[i + 1]
        del args[i : i + 2]
        if flag == "--where":
            where = value
        else:
            every = int(value)
fsin, report, extra = args[0], args[1], args[2:]



live_report, t, kv = replay_keys(report, extra)
ratio = int(kv["node_cycle_relation"]) / int(kv["fsin_cycle_relation"])
clock = float(kv["node_clock"])


def replay(keys):
    """The replay's report (`fsin run --json`'s last line)."""
    out = subprocess.run(
        [fsin, "run", *(f"{k}={v}" for k, v in keys.items()), "--json"],
        capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def done_s(report):
    """Each task's replayed time in a replay's report, guest s."""
    return [c * ratio / clock for c in find(report, "task_done_cycles")]


def replay_s(keys):
    """Each task's replayed time, guest s."""
    return done_s(replay(keys))


def live_frames(prv, live):
    """Frames sent from the first rank's MPI_Init exit to the last one's
    MPI_Finalize (node cycles of the timeline), and of them those of
    `ack` bytes."""
    first = min(init for init, _, _ in live)
    last = max(fin for _, _, fin in live)
    ack = int(kv.get("mpi_segment_header", 66))
    frames = acks = 0
    for line in open(prv):
        if line.startswith("3:"):
            f = line.split(":")
            if first <= int(f[5]) <= last:
                frames += 1
                acks += int(f[13]) == ack
    return frames, acks


def live_collectives(prv):
    """Per rank track (in the timeline's order), the node cycle its
    MPI_Init returned, those its collectives returned and the one it
    entered MPI_Finalize."""
    events = {}
    for line in open(prv):
        if not line.startswith("2:"):
            continue
        f = line.rstrip().split(":")
        task, thread, at = int(f[3]), int(f[4]), int(f[5])
        if thread < 2:
            continue  # thread 1 is the guest's row, the ranks are tracks
        pairs = f[6:]
        for i in range(0, len(pairs), 2):
            events.setdefault((task, thread), []).append((at, int(pairs[i]), int(pairs[i + 1])))
    ranks = []
    for key in sorted(events):
        init_exit, inside, exits, fin = None, None, [], None
        for at, kind, value in events[key]:
            if kind == 50000003 and value == 31:  # MPI_Init
                inside = "init"
            elif kind == 50000003 and value == 32:  # MPI_Finalize
                fin = at
            elif kind == 50000003 and value == 0 and inside == "init":
                init_exit, inside = at, None
            elif kind == 50000002 and value == 0:  # a collective's end
                exits.append(at)
        ranks.append((init_exit, exits, fin))
    return ranks


def cut(dim, k, path):
    """The Dimemas trace `dim` cut after each rank's k-th collective."""

    def keep(records):
        n = 0
        for i, l in enumerate(records):
            n += l.startswith("10:")
            if n == k:
                return i + 1
        return len(records)

    cut_dimemas(dim, path, keep)


start = t.get("start_s") or [0.0] * len(t["rank_s"])
if where:
    live = live_collectives(where)
    count = min(len(exits) for _, exits, _ in live)
    path = f"/tmp/mpi-self-consistency-{os.getpid()}.dim"
    for k in sorted(set(range(every, count, every)) | {count}):
        cut(kv["tracefile"], k, path)
        replayed = [r - o for r, o in zip(replay_s({**kv, "tracefile": path}), start)]
        ms = [(exits[k - 1] - init) / clock * 1e3 for init, exits, _ in live]
        d = [r * 1e3 - l for r, l in zip(replayed, ms)]
        pct = [x / l * 100 for x, l in zip(d, ms)]
        print(
            f"collective {k:5d}: live {min(ms):9.2f} .. {max(ms):9.2f} ms, "
            f"replay {min(d):+8.2f} .. {max(d):+8.2f} ms ({min(pct):+.2f}% .. {max(pct):+.2f}%)",
            flush=True,
        )
    os.remove(path)
    frames, acks = live_frames(where, live)
    print(f"frames in the timeline: live {frames} ({acks} TCP acknowledgements)", flush=True)

# Each replayed rank starts skewed as its live counterpart left MPI_Init
# (`start_s`); its own time is what follows. The replay's report gives
# its frames and, where the trace's header records them, the live run's.
whole = replay(kv)
if "acks_sent" in whole:
    live_part = ""
    if "live_frames" in whole:
        live_part = f", live {whole['live_frames']} ({whole['live_acks']})"
    # A broadcast ARP request is one frame (`frames_sent`), its copies
    # messages (`messages_sent`); reports before 2026-12-04 have no
    # frames_sent and no broadcasts.
    sent = whole.get("frames_sent", whole["messages_sent"])
    arp = f", {whole['arp_requests']} ARP requests" if whole.get("arp_requests") else ""
    print(f"frames (TCP acknowledgements): replay {sent} ({whole['acks_sent']}{arp}){live_part}")
    # TCP's timers (replays of 2026-12-04 on): the tail-loss probes beside
    # the live run's retransmissions (its report's tcp_retransmissions).
    if "tcp_probes" in whole:
        retx = find(live_report, "tcp_retransmissions")
        live_retx = f", live {retx} retransmissions" if retx is not None else ""
        print(
            f"TCP's timers: replay {whole['tcp_probes']} tail-loss probes, "
            f"{whole['delayed_acks']} delayed acknowledgements{live_retx}"
        )


# The trace's records of what came and went around each burst
# (`20:T:0:EVENT:N`): frames received, their bytes, frames sent.
AROUND = {"90000007": 0, "90000008": 1, "90000009": 2}


def bursts(dim):
    """Per rank, its CPU bursts' seconds, the guest kernel's seconds in
    them (`20:T:0:90000006:NS` records; 0 where the trace has none), and
    the frames its node received (and their bytes) and sent during them
    (`90000007`, `90000008`, `90000009`)."""
    cpu, kernel, frames = {}, {}, {}
    for line in open(dim):
        f = line.rstrip().split(":")
        if f[0] == "1" and len(f) == 4:
            cpu[int(f[1])] = cpu.get(int(f[1]), 0.0) + float(f[3])
        elif f[0] == "20" and len(f) == 5 and f[3] == "90000006":
            kernel[int(f[1])] = kernel.get(int(f[1]), 0.0) + int(f[4]) * 1e-9
        elif f[0] == "20" and len(f) == 5 and f[3] in AROUND:
            counts = frames.setdefault(int(f[1]), [0, 0, 0])
            counts[AROUND[f[3]]] += int(f[4])
    return cpu, kernel, frames


cpu, kernel, frames = bursts(kv["tracefile"])
errs = []
for i, (s, live) in enumerate(zip((r - o for r, o in zip(done_s(whole), start)), t["rank_s"])):
    errs.append((s - live) / live * 100)
    held = ""
    if kernel:
        c, k = cpu.get(i, 0.0), kernel.get(i, 0.0)
        held = f"; bursts {c:.3f} s, of them kernel {k:.3f} s ({k / max(c, 1e-12) * 100:.1f}%)"
    if frames:
        got, size, sent = frames.get(i, [0, 0, 0])
        held += f", frames in them {got} received ({size / 1e3:.0f} KB), {sent} sent"
    print(f"rank {i}: replay {s:.3f} s, live {live:.3f} s, {errs[-1]:+.2f}%{held}")
print(f"{min(errs):+.2f}% .. {max(errs):+.2f}% over {len(errs)} ranks")
