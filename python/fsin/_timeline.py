"""`fsin.read_timeline`: a timeline written by `--timeline` (issue 59) as
tables, from either of its formats (docs/contracts.md, "Timelines").

Paraver (`.prv` with its `.pcf`): the header's end time, state records
`1:cpu:appl:task:thread:begin:end:state` (named by the `.pcf`'s STATES),
event records `2:cpu:appl:task:thread:time:type:value...` (the counters:
the `.pcf`'s EVENT_TYPE names, values in millionths) and communication
records `3:cpu:appl:task:thread:lsend:psend:cpu:appl:task:thread:lrecv:
precv:size:tag`; rows named by the `.row`'s threads. Perfetto (`.json`):
`X` events per thread, flows `s`/`f` by id, `C` counters, `M` names; its
microseconds back to ticks (one tick was written as a nanosecond).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Union

from ._errors import ConfigError

PathLike = Union[str, "os.PathLike[str]"]


def _tables(states: list, messages: list, counters: list, attrs: dict) -> Any:
    try:
        import pandas
    except ImportError:
        return {"states": states, "messages": messages, "counters": counters, **attrs}
    out = {
        "states": pandas.DataFrame(states, columns=["row", "name", "begin", "end", "state"]),
        "messages": pandas.DataFrame(
            messages, columns=["src", "dst", "sent", "received", "bytes", "tag"]
        ),
        "counters": pandas.DataFrame(counters, columns=["time", "counter", "value"]),
    }
    for df in out.values():
        df.attrs.update(attrs)
    return out


def _pcf(text: str) -> tuple[dict[int, str], dict[int, str]]:
    """The `.pcf`'s state names and event type names."""
    states: dict[int, str] = {}
    events: dict[int, str] = {}
    section = None
    for line in text.splitlines():
        word = line.strip()
        if word in ("STATES", "EVENT_TYPE", "STATES_COLOR", "DEFAULT_OPTIONS", "DEFAULT_SEMANTIC"):
            section = word
            continue
        if not word:
            if section == "STATES":
                section = None
            continue
        if section == "STATES":
            value, name = word.split(None, 1)
            states[int(value)] = name.strip()
        elif section == "EVENT_TYPE":
            _, kind, name = word.split(None, 2)
            events[int(kind)] = re.sub(r" \(millionths\)$", "", name.strip())
    return states, events


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
        state_names, event_names = _pcf(open(base + ".pcf", encoding="utf-8").read())
    except OSError as e:
        raise ConfigError(f"{path}: its .pcf cannot be read: {e}", "path", path) from e
    names = _row(base + ".row")
    states, messages, counters = [], [], []
    end = 0
    with open(path, encoding="utf-8") as f:
        header = f.readline()
        m = re.match(r"#Paraver \([^)]*\):(\d+)(?:_ns)?:", header)
        if not m:
            raise ConfigError(f"{path}:1: not a Paraver header", "path", path)
        end = int(m.group(1))
        for n, line in enumerate(f, start=2):
            try:
                fields = [int(x) for x in line.strip().split(":")]
                kind = fields[0]
                if kind == 1:
                    row = fields[3] - 1
                    name = names[row] if row < len(names) else f"task {row}"
                    states.append(
                        (row, name, fields[5], fields[6], state_names.get(fields[7], str(fields[7])))
                    )
                elif kind == 2:
                    for k in range(6, len(fields) - 1, 2):
                        counters.append(
                            (fields[5], event_names.get(fields[k], str(fields[k])), fields[k + 1] / 1e6)
                        )
                elif kind == 3:
                    messages.append(
                        (fields[3] - 1, fields[9] - 1, fields[5], fields[12], fields[13], fields[14])
                    )
            except (ValueError, IndexError) as e:
                raise ConfigError(f"{path}:{n}: not a Paraver record: {line.strip()!r}", "path", path) from e
    return _tables(states, messages, counters, {"end": end, "format": "paraver"})


def _ticks(us: float) -> int:
    return round(us * 1000)


def _read_perfetto(path: str) -> Any:
    try:
        doc = json.load(open(path, encoding="utf-8"))
        events = doc["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"{path}: not a trace-event JSON file: {e}", "path", path) from e
    names: dict[int, str] = {}
    states, counters, starts, ends = [], [], {}, []
    for e in events:
        ph = e.get("ph")
        if ph == "M" and e.get("name") == "thread_name":
            names[e["tid"] - 1] = e["args"]["name"]
        elif ph == "X":
            b = _ticks(e["ts"])
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
    end = max([e for _, _, _, e, _ in rows] + [m[3] for m in messages] + [0])
    return _tables(rows, sorted(messages), sorted(counters), {"end": end, "format": "perfetto"})


def read_timeline(path: PathLike) -> Any:
    """Read a timeline of `fsin run --timeline` or `fsin qemu --timeline`,
    Paraver (`.prv`, with its `.pcf` and `.row` beside it) or Perfetto
    (`.json`), told by its extension.

    Returns:
        A dict of three DataFrames (dicts of lists without pandas):
        `states` (row, name, begin, end, state: ticks, the state's name as
        Paraver's `.pcf` has it, e.g. "Running", "Waiting a message",
        "Blocking Send"), `messages` (src, dst, sent, received, bytes, tag:
        rows and ticks) and `counters` (time, counter, value: the
        network's accepted load in phits/node/cycle and link utilization
        per window). `attrs["end"]` is the timeline's end tick. A tick is
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
