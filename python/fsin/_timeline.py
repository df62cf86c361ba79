"""`fsin.read_timeline`: a timeline written by `--timeline` as
tables, from either of its formats (docs/contracts.md, "Timelines").

Paraver (`.prv` with its `.pcf`): the header's end time, state records
`1:cpu:appl:task:thread:begin:end:state` (named by the `.pcf`'s STATES),
event records `2:cpu:appl:task:thread:time:type:value...` (the counters:
the `.pcf`'s EVENT_TYPE names, values in millionths; MPI calls: Extrae's
types 50000001-50000003, the function's value at its entry and 0 at its
exit) and communication records `3:cpu:appl:task:thread:lsend:psend:cpu:
appl:task:thread:lrecv:precv:size:tag`; rows are the threads, in the
header's order (each task's threads: a row, then its tracks), named by
the `.row`. Perfetto (`.json`): `X` events per thread (category `mpi`: an
MPI call, its state in its args), flows `s`/`f` by id, `C` counters, `M`
names; its microseconds back to ticks (one tick was written as a
nanosecond).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Union

from ._errors import ConfigError

PathLike = Union[str, "os.PathLike[str]"]


# Extrae's MPI event types (fsin-timeline's `mpi.rs`).
_MPI_TYPES = (50000001, 50000002, 50000003)


def _tables(states: list, messages: list, counters: list, calls: list, attrs: dict) -> Any:
    try:
        import pandas
    except ImportError:
        return {"states": states, "messages": messages, "counters": counters, "calls": calls, **attrs}
    out = {
        "states": pandas.DataFrame(states, columns=["row", "name", "begin", "end", "state"]),
        "messages": pandas.DataFrame(
            messages, columns=["src", "dst", "sent", "received", "bytes", "tag"]
        ),
        "counters": pandas.DataFrame(counters, columns=["time", "counter", "value"]),
        "calls": pandas.DataFrame(calls, columns=["row", "name", "begin", "end", "call"]),
    }
    for df in out.values():
        df.attrs.update(attrs)
    return out


def _pcf(text: str) -> tuple[dict[int, str], dict[int, str], dict[tuple[int, int], str]]:
    """The `.pcf`'s state names, event type names and event values' names."""
    states: dict[int, str] = {}
    events: dict[int, str] = {}
    values: dict[tuple[int, int], str] = {}
    section = None
    kinds: list[int] = []
    for line in text.splitlines():
        word = line.strip()
        if word in ("STATES", "EVENT_TYPE", "VALUES", "STATES_COLOR", "DEFAULT_OPTIONS", "DEFAULT_SEMANTIC"):
            if word == "EVENT_TYPE":
                kinds = []
            section = word
            continue
        if not word:
            if section in ("STATES", "VALUES"):
                section = None
            continue
        if section == "STATES":
            value, name = word.split(None, 1)
            states[int(value)] = name.strip()
        elif section == "EVENT_TYPE":
            _, kind, name = word.split(None, 2)
            kinds.append(int(kind))
            events[int(kind)] = re.sub(r" \(millionths\)$", "", name.strip())
        elif section == "VALUES":
            value, name = word.split(None, 1)
            for kind in kinds:
                values[(kind, int(value))] = name.strip()
    return states, events, values


def _threads(header: str) -> list[int]:
    """Per task of the header's application, its first row: rows are the
    threads, task after task."""
    m = re.search(r":\d+\(([\d:,]*)\)\s*$", header)
    firsts, at = [], 0
    for task in (m.group(1).split(",") if m and m.group(1) else []):
        firsts.append(at)
        at += int(task.split(":")[0])
    return firsts


def _row(path: str) -> list[str]:
    try:
        text = open(path, encoding="utf-8").read()
    except OSError:
        return []
    threads = text.split("LEVEL THREAD SIZE", 1)
    if len(threads) < 2:
        return []
    lines = threads[1].splitlines()
    return [line for line in lines[1 : 1 + int(lines[0])]]


def _read_paraver(path: str) -> Any:
    base = os.path.splitext(path)[0]
    try:
        state_names, event_names, value_names = _pcf(open(base + ".pcf", encoding="utf-8").read())
    except OSError as e:
        raise ConfigError(f"{path}: its .pcf cannot be read: {e}", "path", path) from e
    names = _row(base + ".row")
    states, messages, counters, calls = [], [], [], []
    inside: dict[int, tuple[int, str]] = {}
    end = 0
    with open(path, encoding="utf-8") as f:
        header = f.readline()
        m = re.match(r"#Paraver \([^)]*\):(\d+)(?:_ns)?:", header)
        if not m:
            raise ConfigError(f"{path}:1: not a Paraver header", "path", path)
        end = int(m.group(1))
        firsts = _threads(header)

        def row(task: int, thread: int) -> int:
            return (firsts[task - 1] if task - 1 < len(firsts) else task - 1) + thread - 1

        def named(r: int) -> str:
            return names[r] if r < len(names) else f"task {r}"

        for n, line in enumerate(f, start=2):
            try:
                fields = [int(x) for x in line.strip().split(":")]
                kind = fields[0]
                if kind == 1:
                    r = row(fields[3], fields[4])
                    states.append(
                        (r, named(r), fields[5], fields[6], state_names.get(fields[7], str(fields[7])))
                    )
                elif kind == 2:
                    r = row(fields[3], fields[4])
                    for k in range(6, len(fields) - 1, 2):
                        etype, value = fields[k], fields[k + 1]
                        if etype not in _MPI_TYPES:
                            counters.append((fields[5], event_names.get(etype, str(etype)), value / 1e6))
                        elif value:
                            inside[r] = (fields[5], value_names.get((etype, value), str(value)))
                        elif r in inside:
                            begin, call = inside.pop(r)
                            calls.append((r, named(r), begin, fields[5], call))
                elif kind == 3:
                    src, dst = row(fields[3], fields[4]), row(fields[9], fields[10])
                    messages.append((src, dst, fields[5], fields[12], fields[13], fields[14]))
            except (ValueError, IndexError) as e:
                raise ConfigError(f"{path}:{n}: not a Paraver record: {line.strip()!r}", "path", path) from e
    return _tables(states, messages, counters, calls, {"end": end, "format": "paraver"})


def _ticks(us: float) -> int:
    return round(us * 1000)


def _read_perfetto(path: str) -> Any:
    try:
        doc = json.load(open(path, encoding="utf-8"))
        events = doc["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"{path}: not a trace-event JSON file: {e}", "path", path) from e
    names: dict[int, str] = {}
    states, counters, calls, starts, ends = [], [], [], {}, []
    for e in events:
        ph = e.get("ph")
        if ph == "M" and e.get("name") == "thread_name":
            names[e["tid"] - 1] = e["args"]["name"]
        elif ph == "X":
            b = _ticks(e["ts"])
            if e.get("cat") == "mpi":
                calls.append((e["tid"] - 1, b, b + _ticks(e["dur"]), e["name"]))
                if e["dur"] > 0:
                    states.append((e["tid"] - 1, b, b + _ticks(e["dur"]), e["args"]["state"]))
            else:
                states.append((e["tid"] - 1, b, b + _ticks(e["dur"]), e["name"]))
        elif ph == "s":
            starts[e["id"]] = e
        elif ph == "f":
            ends.append(e)
        elif ph == "C":
            counters.append((_ticks(e["ts"]), e["name"], e["args"]["value"]))
    messages = []
    for f in ends:
        s = starts[f["id"]]
        messages.append(
            (s["tid"] - 1, f["tid"] - 1, _ticks(s["ts"]), _ticks(f["ts"]), s["args"]["bytes"], s["args"]["tag"])
        )
    rows = [(r, names.get(r, f"task {r}"), b, e, st) for r, b, e, st in sorted(states)]
    called = [(r, names.get(r, f"task {r}"), b, e, c) for r, b, e, c in sorted(calls)]
    end = max([e for _, _, _, e, _ in rows] + [m[3] for m in messages] + [0])
    return _tables(rows, sorted(messages), sorted(counters), called, {"end": end, "format": "perfetto"})


def read_timeline(path: PathLike) -> Any:
    """Read a timeline of `fsin run --timeline` or `fsin qemu --timeline`,
    Paraver (`.prv`, with its `.pcf` and `.row` beside it) or Perfetto
    (`.json`), told by its extension.

    Returns:
        A dict of four DataFrames (dicts of lists without pandas):
        `states` (row, name, begin, end, state: ticks, the state's name as
        Paraver's `.pcf` has it, e.g. "Running", "Waiting a message",
        "Blocking Send"), `messages` (src, dst, sent, received, bytes, tag:
        rows and ticks) and `counters` (time, counter, value: the
        network's accepted load in phits/node/cycle and link utilization
        per window), and `calls` (row, name, begin, end, call: the MPI
        calls of `fsin qemu --trace-level mpi`'s ranks, each on its
        track's row "rank R", e.g. "MPI_Allreduce"; their states are in
        `states`). `attrs["end"]` is the timeline's end tick. A tick is
        a network cycle for `fsin run`, a node cycle for `fsin qemu`, a
        wall-clock nanosecond for a co-simulation (`fsin serve`, `fsin
        demo`; rows "node N", states "Running" and "Synchronization").

    Raises:
        ConfigError: not a timeline (the message names the file and line).
    """
    p = os.fspath(path)
    if p.endswith(".prv"):
        return _read_paraver(p)
    if p.endswith(".json"):
        return _read_perfetto(p)
    raise ConfigError(f"{p}: a timeline is .prv (Paraver) or .json (Perfetto)", "path", p)
