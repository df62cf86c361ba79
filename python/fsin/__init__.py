"""fsin-rs from Python.

fsin-rs is a cycle-level interconnection-network simulator with the
semantics of INSEE's FSIN (the INSEE paper), and a co-simulation server for
full-system node simulators (the Simics paper). This module runs its
network in-process, with the keys and the reports of the `fsin` command:

    >>> import fsin
    >>> r = fsin.run(topo="torus_16_16", load=0.3, cycles=20000)
    >>> r.accepted_load, r.latency_avg      # phits/node/cycle, cycles

- `run(**keys)`: one run, as `fsin run KEY=VALUE... --json`; a `Report`.
- `sweep(vary={"load": [0.1, 0.2]}, **keys)`: `fsin sweep`'s points in
  parallel; a pandas DataFrame with the columns of `sweep.csv`.
- `topology(**keys)`: the summary of `fsin topology`.
- `kernel(name, tasks=N)`, `read_trace(path)`, `write_trace(df, path)`:
  traces as DataFrames of events (task, kind, peer, tag, bytes, amount).
- `read_timeline(path)`: a timeline of `fsin run --timeline` or `fsin
  qemu --timeline` (Paraver or Perfetto) as DataFrames of states,
  messages and counters.
- `keys()`: every configuration key with its default, valid values and
  help, as `fsin help config` lists them.
- `cosim(workload, nodes, slice, mode, **keys)`: fake nodes in lock-step
  with the network, as `fsin demo`; `qemu(guests, app, vary, out,
  **keys)`: QEMU guests, as `fsin qemu`, a study as a DataFrame. These two
  start the `fsin` command (`binary()`): their nodes are processes.

Errors are exceptions with the command's meaning: `ConfigError` (bad
input, exit 2; a `ValueError` naming the key and value), `Deadlock` (the
run can never finish, exit 3; the report attached), `RunError` (exit 1)
and `InternalError` (a bug of fsin-rs). The engine runs with the GIL
released; Ctrl-C stops a run and returns its partial report, marked
`interrupted`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Callable, Optional, Union

from . import _fsin
from ._errors import ConfigError, Deadlock, FsinError, InternalError, RunError
from ._report import Report
from ._settings import settings as _settings
from ._settings import value as _value
from ._command import binary
from ._cosim import cosim, qemu
from ._timeline import read_timeline

__version__: str = _fsin.VERSION

__all__ = [
    "ConfigError",
    "Deadlock",
    "FsinError",
    "InternalError",
    "Report",
    "RunError",
    "binary",
    "cosim",
    "keys",
    "kernel",
    "qemu",
    "read_timeline",
    "read_trace",
    "run",
    "sweep",
    "topology",
    "write_trace",
]

PathLike = Union[str, "os.PathLike[str]"]
Progress = Union[bool, Callable[[int, Optional[int]], Any], None]


def _path(p: Optional[PathLike]) -> Optional[str]:
    return None if p is None else os.fspath(p)


class _Line:
    """progress=True without tqdm: a line on stderr at most every second."""

    def __init__(self, what: str):
        self.what = what
        self.last = 0.0

    def __call__(self, cycle: int, end: Optional[int]) -> None:
        now = time.monotonic()
        if now - self.last < 1.0:
            return
        self.last = now
        share = f" ({100 * cycle / end:.0f}%)" if end else ""
        print(f"{self.what}: cycle {cycle:,}{share}", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


class _Bar:
    """progress=True with tqdm: a bar of network cycles."""

    def __init__(self, tqdm: Any, what: str):
        self.bar = tqdm(desc=what, unit=" cycles", unit_scale=True)

    def __call__(self, cycle: int, end: Optional[int]) -> None:
        if end is not None and self.bar.total != end:
            self.bar.total = end
        self.bar.n = min(cycle, end) if end is not None else cycle
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def _progress(progress: Progress, what: str) -> tuple[Any, Callable[[], None]]:
    """The callback for `progress`, and what closes it."""
    if progress is None or progress is False:
        return None, lambda: None
    if progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            shown: Any = _Line(what)
        else:
            shown = _Bar(tqdm, what)
        return shown, shown.close
    if callable(progress):
        return progress, lambda: None
    raise TypeError(f"progress must be True, False, None or a callable, not {progress!r}")


def run(
    config: Optional[PathLike] = None,
    *,
    out: Optional[PathLike] = None,
    progress: Progress = None,
    **keys: Any,
) -> Report:
    """Simulate a network and return its statistics, as `fsin run --json`.

    Args:
        config: a configuration file (`fsin run --config FILE`): INSEE-style
            `key=value` lines with `#` comments, or TOML (`*.toml`).
        out: a directory for `report.json` and `batches.csv`, and for the
            detailed outputs that `plevel` asks for (`fsin run --out DIR`).
        progress: `True` for a progress bar (tqdm when it is installed, a
            line on stderr every second when not), or a callable
            `progress(cycle, end)` called at most every 50 ms from this
            thread: `cycle` network cycles simulated so far, `end` the
            cycle the run ends at when known, else None.
        **keys: INSEE's configuration keys, which override the file, e.g.
            `topo="torus_16_16"` (a 16x16 torus), `load=0.3` (offered load
            in phits/node/cycle), `vc="bubble"` (bubble flow control),
            `cycles=20000` (a measured phase of that many cycles instead of
            INSEE's convergence), `rseed=7`, `tracefile="app.trc"` (replay
            a trace, the traces paper), `kernel="all2all"`. `fsin.keys()`
            lists every key with its default and valid values; the defaults
            are INSEE's but for topo=torus_8_8 and plength=16_4 (the seed
            papers' configuration). Booleans are given as 1/0.

    Returns:
        The `Report`: every key of `fsin run --json` as an attribute
        (`accepted_load` in phits/node/cycle, `latency_avg` in cycles,
        `cycles`, `exec_cycles` and `predicted_s` for traces...);
        `report.to_dict()` is exactly that JSON. Same keys and `rseed`:
        the same report, but for `wall_s` and `cycles_per_s`.

    Raises:
        ConfigError: bad input (the command's exit 2): an unknown key, a
            value out of range (the message gives the valid values), a
            trace that cannot be read, a network bigger than the memory.
        Deadlock: the network deadlocked or the trace can never finish
            (exit 3); `e.report` holds the report, with the cycle of waiting
            channels (`network_deadlock`) or the blocked tasks.
        RunError: `out` cannot be written.
        InternalError: a bug of fsin-rs.

    The engine runs on a thread of its own with the GIL released. Ctrl-C
    (KeyboardInterrupt) stops it where it is, as SIGINT stops `fsin run`:
    the call returns the report of the cycles simulated so far, with
    `report.interrupted == "SIGINT"`.
    """
    callback, close = _progress(progress, "fsin.run")
    try:
        text = _fsin.run(_settings(keys), _path(config), _path(out), callback)
    finally:
        close()
    return Report(json.loads(text))


def _vary(vary: Union[str, dict[str, Any]]) -> tuple[str, list[str]]:
    """The varied key and its values, as settings' text."""
    if isinstance(vary, str):
        return _fsin.parse_vary(vary)
    if isinstance(vary, dict) and len(vary) == 1:
        ((key, values),) = vary.items()
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            values = [values]
        return key, [_value(key, v) for v in values]
    raise ConfigError(
        f"vary: give one key and its values, e.g. vary={{'load': [0.1, 0.2]}} or "
        f"vary='load=0.05:0.6:0.05', not {vary!r}",
        "vary",
        repr(vary),
    )


def _number(text: str) -> Any:
    """A CSV cell as int, float or bool where it is one."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)


def sweep(
    vary: Union[str, dict[str, Any]],
    config: Optional[PathLike] = None,
    *,
    series: Union[None, str, dict[str, Any], list] = None,
    out: Optional[PathLike] = None,
    processes: Optional[int] = None,
    progress: Progress = None,
    **keys: Any,
) -> Any:
    """Run one configuration at every value of one key, as `fsin sweep
    --vary ... --json`, the points in parallel.

    Args:
        vary: the key and its values: `{"load": [0.1, 0.2, 0.3]}`, or the
            command's text, `"load=0.05:0.6:0.05"` (START:END:STEP,
            inclusive) or `"topo=torus_8_8,torus_16_16"`.
        config: a configuration file, as in `run`.
        series: the designs compared, a curve each, as `fsin sweep
            --series`: `{"topo": ["torus_8_8", "mesh_8_8"]}` (a series per
            value; several keys multiply), a text `"topo=torus_8_8,mesh_8_8"`
            or `"topo=file:df.anynet routing=duato"` (one series with those
            settings), or a list of such texts and dicts (value lists
            multiply, settings are alternatives). All series come back in
            one DataFrame, with a `series` column (the series' settings)
            and a column per key the series set.
        out: a directory for the command's files: `sweep.csv`,
            `sweep.json` and the plots (for `load`, `latency.svg`, latency
            against accepted load, and `throughput.svg`, accepted against
            offered load with the bisection bound; else `sweep.svg`).
        processes: threads running points at once (default: one per
            core). Every point keeps its own seed: the results do not
            depend on it.
        progress: as in `run`, counting points: `progress(done, points)`.
        **keys: the configuration keys of every point, as in `run`.

    Returns:
        With pandas installed, a DataFrame with the columns of
        `sweep.csv`, one row per value in order: the varied key, then
        `offered`, `injected` and `accepted` (phits/node/cycle),
        `latency_avg` and `latency_max` (cycles), `inj_latency_avg`
        (cycles), `avg_distance` (hops), `converged` ("true", "false",
        or "null" when not checked), and `exec_cycles`
        for traces and kernels, then a column for every other figure of
        the runs' reports (`packets_delivered`, `occupancy`, ...; wall-clock
        figures only in the JSON);
        `df.attrs["sweep"]` holds the full JSON
        (every point's report). Without pandas, the same rows as a list of
        dicts.

    Raises:
        ConfigError: a bad key or value in any point (every point is
            checked before any runs).
        RunError, InternalError: as in `run`.

    Ctrl-C stops every point where it is; each reports what it simulated
    (`interrupted` in `df.attrs["sweep"]`).
    """
    key, values = _vary(vary)
    specs = _series(series)
    callback, close = _progress(progress, "fsin.sweep")
    try:
        csv_text, json_text = _fsin.sweep(
            _settings(keys), key, values, specs, _path(config), _path(out), processes, callback
        )
    finally:
        close()
    full = json.loads(json_text)
    try:
        import pandas
    except ImportError:
        import csv
        import io

        rows = csv.DictReader(io.StringIO(csv_text))
        return [{k: _number(v) for k, v in row.items()} for row in rows]
    import io

    df = pandas.read_csv(io.StringIO(csv_text))
    df.attrs["sweep"] = full
    return df


def _series(series: Any) -> list:
    """`sweep`'s `series` as the command's `--series` texts."""
    if series is None:
        return []
    if isinstance(series, (str, dict)):
        series = [series]
    specs = []
    for s in series:
        if isinstance(s, str):
            specs.append(s)
        elif isinstance(s, dict):
            for k, v in s.items():
                vs = v if isinstance(v, (list, tuple)) else [v]
                specs.append(f"{k}=" + ",".join(_value(k, x) for x in vs))
        else:
            raise ConfigError(
                f"series: expected a text, a dict or a list of them, not {s!r}",
                "series",
                repr(s),
            )
    return specs


_TRACE_COLUMNS = ("task", "kind", "peer", "tag", "bytes", "amount")


def _trace_table(parts: tuple) -> Any:
    """A trace from the native module as a DataFrame (a dict of columns
    without pandas), its name and kind in `attrs`."""
    name, frames, cpu_in_cycles, columns = parts
    data = dict(zip(_TRACE_COLUMNS, columns))
    attrs = {"name": name, "frames": frames, "cpu_in_cycles": cpu_in_cycles}
    try:
        import pandas
    except ImportError:
        return {**data, "attrs": attrs}
    df = pandas.DataFrame(data, columns=list(_TRACE_COLUMNS))
    df.attrs.update(attrs)
    return df


def kernel(name: str, *, tasks: int = 64, bytes: int = 40960) -> Any:
    """The trace of an application kernel, as `fsin kernel NAME --tasks N
    --bytes B` writes it (the traces paper's kernels: `all2all`, `w2`,
    `w3` wavefronts, `m2`, `m3` meshes, `bu` butterfly, `bt` binary-tree
    reduction, `wf`; `fsin help config`, key `kernel`).

    Returns:
        A DataFrame of events, one row each, every task's events in its
        order, tasks one after another: `task`, `kind` ("s" send, "r"
        receive, "c" computation), `peer` (the destination of a send, the
        source of a receive, the task itself for a computation), `tag`,
        `bytes` (message size), `amount` (computation units,
        `trace_cpu_units`; 0 for messages). `df.attrs` holds `name`,
        `frames` and `cpu_in_cycles`. Without pandas, a dict of those
        columns (lists) and `attrs`.

    Raises:
        ConfigError: an unknown kernel, a task count it cannot take (the
            message says which it can), bytes over 4 GiB.
    """
    return _trace_table(_fsin.kernel(name, tasks, bytes))


def read_trace(path: PathLike, format: Optional[str] = None) -> Any:
    """Read a trace file: FSIN `.trc`, Dimemas or alog, told by its first
    characters as INSEE tells them (`format`, if given, must be the one
    found: "trc", "dimemas" or "alog").

    Returns:
        The events as `kernel` returns them. `df.attrs["name"]` is the
        name its writer gave it (a `.trc`'s last `# ` comment, a Dimemas
        header's name), else the file's path; `df.attrs["frames"]` is true
        for a frame trace of `fsin qemu --trace-out` (computations in node
        cycles); `df.attrs["cpu_in_cycles"]` for Dimemas (computations in
        network cycles).

    Raises:
        ConfigError: the file cannot be read, or a line is malformed (the
            message names the file, the line and the field).
    """
    return _trace_table(_fsin.read_trace(os.fspath(path), format))


def write_trace(
    events: Any,
    path: PathLike,
    format: str = "trc",
    *,
    name: Optional[str] = None,
    frames: Optional[bool] = None,
) -> None:
    """Write a trace: `events` as `read_trace` and `kernel` return them (a
    DataFrame or a dict of the columns `task`, `kind`, `peer`, `tag`,
    `bytes`, `amount`), every task's events in their order, to `path` as
    `format` ("trc", "dimemas" or "alog"; alog keeps no computation).
    `name` and `frames` default to the table's `attrs`. A file that fsin
    wrote reads back and writes again byte for byte.

    Raises:
        ConfigError: an unknown format, a row out of range (the message
            names the row: a task over 2^24, a send to itself, a message
            over 4 GiB, an unknown kind).
        RunError: the file cannot be written.
    """
    attrs = getattr(events, "attrs", None)
    if attrs is None and isinstance(events, dict):
        attrs = events.get("attrs", {})
    attrs = attrs or {}
    columns = tuple(
        (events[c].tolist() if hasattr(events[c], "tolist") else list(events[c]))
        for c in _TRACE_COLUMNS
    )
    _fsin.write_trace(
        columns,
        os.fspath(path),
        format,
        name if name is not None else str(attrs.get("name", os.fspath(path))),
        bool(frames if frames is not None else attrs.get("frames", False)),
    )


def topology(config: Optional[PathLike] = None, **keys: Any) -> dict[str, Any]:
    """The summary of a network, as `fsin topology --json`: `topology`
    (its name), `nodes`, `switches`, `ports` (link ports per switch),
    `links` and `router_links` (between switches), `diameter` and
    `avg_distance` (hops), `bisection_links` with `bisection_method` (the
    family's closed form; for `topo="file:..."` exact or METIS's
    estimate), `theta`, and `throughput_bound` (phits/node/cycle under
    uniform traffic); None where the family has no closed form.

    Takes the keys of `run` (`topo="fattree_4_3"`, `faults=3`...).

    Raises:
        ConfigError: bad input, as in `run`; also a set of faults that
            disconnects the network (key `faults`).
    """
    return json.loads(_fsin.topology(_settings(keys), _path(config)))


def keys() -> list[dict[str, Any]]:
    """Every configuration key, as `fsin help config` lists them: dicts
    with `name` (INSEE's name), `aliases`, `group` (its heading in `fsin
    help config`), `help` (what it sets, with units), `values` (the valid values) and `default` (in the syntax that
    `run` accepts)."""
    return json.loads(_fsin.keys())
