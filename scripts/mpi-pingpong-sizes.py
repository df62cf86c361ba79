#!/usr/bin/env python3
# Each size of an `fsin-pingpong` run against its MPI-level replay
# (docs/studies/calibrating-the-mpi-layer.md): the run's trace is cut
# after each size's last round trip (or stream) on both ranks and
# replayed with the command in its report (`mpi_trace.replay`); a size's
# replayed time is rank 0's time at its cut less that at the size
# before's and the print that follows it, its live time what rank 0 printed (rtt_us or us_per_msg,
# times the rounds).
#
#   scripts/mpi-pingpong-sizes.py FSIN REPORT.json [KEY=VALUE ...]
#
# FSIN is the fsin binary; REPORT.json the report of `fsin qemu
# --guests 2 --roi command --trace-level mpi --run 'cd /root; mpirun
# --hostfile /etc/fsin/hostfile -np 2 fsin-pingpong [-s] ROUNDS 8
# BYTES...'` (round trips, or with -s streams; the first size's line,
# which pays the ranks' start and first contact, is left out);
# KEY=VALUE pairs replace or add to the replay's keys (mpi_profile=...).
# Prints a line per size (live and replayed us per round trip or
# message, and the error) and the range of the errors.
import json, re, shlex, subprocess, sys

from fsin_report import find, usage_or_exit

args = sys.argv[1:]
usage_or_exit(__file__, args, 2)
fsin, report, extra = args[0], args[1], args[2:]

live_report = json.load(open(report))
t = find(live_report, "mpi_trace")
cmd = shlex.split(t["replay"])
assert cmd[:2] == ["fsin", "run"], cmd
kv = dict(a.split("=", 1) for a in cmd[2:])
for a in extra:
    k, v = a.split("=", 1)
    kv.pop(k, None)
    kv[k] = v
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


# fsin-pingpong's lines: (bytes, rounds, us per round trip or message).
lines = []
for s in strings(live_report):
    for m in re.finditer(r"FSIN-PP (stream )?bytes=(\d+) rounds=(\d+) (?:rtt_us|us_per_msg)=([\d.]+)", s):
        lines.append((bool(m[1]), int(m[2]), int(m[3]), float(m[4])))
if not lines:
    sys.exit(f"{report}: no fsin-pingpong round trip or stream line in the report")
stream = lines[0][0]
# A round trip is a send and a receive on each rank; a stream's ROUNDS
# messages are followed by one empty answer.
per_round = (lambda r: r + 1) if stream else (lambda r: 2 * r)


def cut(dim, records, path, bursts):
    """The Dimemas trace `dim` cut after each rank's `records`-th send or
    receive, and with `bursts` the computation that follows it (rank 0's
    print of the size's line: outside its live time)."""
    text_lines = open(dim).read().splitlines()
    head = text_lines[0]
    body = [l for l in text_lines[1:] if not l.startswith("s:")]
    per = {}
    for l in body:
        if not l.startswith("d:"):
            per.setdefault(int(l.split(":")[1]), []).append(l)
    text = "".join(l + "\n" for l in body if l.startswith("d:"))
    starts = []
    for task in sorted(per):
        starts.append(len(text))
        n = 0
        for l in per[task]:
            if n == records and not (bursts and l.startswith("1:")):
                break
            text += l + "\n"
            n += l.startswith(("2:", "3:"))
    header_len = len(re.sub(r",\d{20}:", "," + "0" * 20 + ":", head)) + 1
    head = re.sub(r",\d{20}:", ",%020d:" % (header_len + len(text)), head)
    offsets = "".join("s:%d:%d\n" % (task, header_len + s) for task, s in enumerate(starts))
    open(path, "w").write(head + "\n" + text + offsets)


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


# Rank 0's records through each line's size (the first, the warm-up
# size, included).
records, ends = 0, []
for _, _, rounds, _ in lines:
    records += per_round(rounds)
    ends.append(records)
errs = []
for (_, bytes_, rounds, us), start, end in zip(lines[1:], ends, ends[1:]):
    replay_us = (rank0_s(end) - rank0_s(start, bursts=True)) / rounds * 1e6
    errs.append((replay_us - us) / us * 100)
    kind = "stream" if stream else "round trip"
    print(f"{bytes_:7d} B {kind}: live {us:9.1f} us, replay {replay_us:9.1f} us, {errs[-1]:+6.2f}%", flush=True)
print(f"{min(errs):+.2f}% .. {max(errs):+.2f}% over {len(errs)} sizes")
