"""Co-simulations from Python: `cosim` (fake nodes, as `fsin demo`) and
`qemu` (QEMU guests, as `fsin qemu`). Both start the `fsin` command
(`fsin._command`): their nodes are processes of their own."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional, Union

from ._command import run_command
from ._errors import ConfigError
from ._report import Report
from ._settings import settings
from ._settings import value as value_text

PathLike = Union[str, "os.PathLike[str]"]
Slice = Union[str, tuple[int, int], None]
Progress = Union[bool, Callable[[int, Optional[int]], Any], None]


def _text(key: str, value: Any) -> str:
    """A value as the command line writes it (the package's `_value`,
    plus slices given as (network cycles, node cycles))."""
    if isinstance(value, tuple) and len(value) == 2:
        return f"{int(value[0])}:{int(value[1])}"
    return value_text(key, value)


def _flags(pairs: list[tuple[str, Any]]) -> list[str]:
    """Command-line options: `(flag, value)` with None left out, True as
    the bare flag, False left out."""
    out: list[str] = []
    for flag, value in pairs:
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        else:
            out += [flag, _text(flag.lstrip("-"), value)]
    return out


def _common(
    keys: dict[str, Any],
    config: Optional[PathLike],
    slice: Slice,
    mode: Optional[str],
    out: Optional[PathLike],
    node_timeout: Optional[float],
) -> list[str]:
    """The options `fsin demo` and `fsin qemu` share, and the keys."""
    return _flags(
        [
            ("--config", config),
            ("--slice", slice),
            ("--mode", mode),
            ("--out", out),
            ("--node-timeout", node_timeout),
        ]
    ) + settings(keys)


def _shown(progress: Progress) -> tuple[bool, Optional[Callable[[int, Optional[int]], Any]]]:
    if progress is None or isinstance(progress, bool):
        return bool(progress), None
    if callable(progress):
        return False, progress
    raise TypeError(f"progress must be True, False, None or a callable, not {progress!r}")


def cosim(
    workload: str = "all2all",
    nodes: Optional[int] = None,
    slice: Slice = (200, 1000),
    mode: str = "lockstep",
    *,
    trace: Optional[PathLike] = None,
    bytes: Optional[int] = None,
    messages: Optional[int] = None,
    think: Optional[int] = None,
    nodes_per_client: Optional[int] = None,
    slices: Optional[int] = None,
    warmup: bool = False,
    config: Optional[PathLike] = None,
    out: Optional[PathLike] = None,
    node_timeout: Optional[float] = None,
    progress: Progress = None,
    **keys: Any,
) -> Report:
    """Co-simulate a network with fake nodes, as `fsin demo ... --json`:
    a server and one `fake-node` process per node (or per
    `nodes_per_client` nodes) on loopback, in slice-based lock-step (the
    Simics paper's synchronisation).

    Args:
        workload: what the fake nodes do: "all2all" (every node sends one
            frame to every other), "pingpong" (node 0 and 1, `messages`
            rounds), "uniform" (`messages` frames per node to random
            nodes), "idle", or "trace" (the causal replay of `trace`, an
            FSIN `.trc`).
        nodes: nodes that attach, ids 0..nodes-1 (default: every node of
            the topology: give `topo=` to set it, e.g. topo="torus_4_4").
        slice: the slice as (network cycles, node cycles), or "200:1000":
            the node simulators and the network advance by that much
            between synchronisations (sets `fsin_cycle_relation` and
            `simics_cycle_relation`).
        mode: "lockstep" (every slice a barrier), "parallel" (the network
            a slice behind, the Simics paper's parallel mode) or "exact"
            (slices of one network cycle: the reference).
        trace: the trace file of workload="trace".
        bytes: frame size in bytes, headers included (75 to 9018;
            default 128).
        messages, think: ping-pong rounds or messages per node; node
            cycles of processing between messages.
        nodes_per_client: nodes per fake-node process (the Simics paper's
            two-level synchronisation).
        slices: stop after this many slices (default: when every node has
            finished).
        warmup: the warm-up phase of `--warmup` (frames bypass the
            network until node 0's CLEAR_STATS).
        config: a configuration file, as in `run`.
        out: a directory for `report.json`, `nodes.csv` and `links.csv`.
        node_timeout: seconds a node may take for one slice before it
            counts as stalled (default 10).
        progress: True shows the command's progress lines on stderr; a
            callable gets `progress(slices done, slices)` (None: unbounded).
        **keys: INSEE's configuration keys, as in `run` (topo="torus_4_4",
            nic_latency=20, ...).

    Returns:
        The report of `fsin demo --json`, as a `Report`: `frames_sent`,
        `frames_delivered`, `frames_dropped`, `frames_reordered` (frames
        that overtook an earlier one of their pair in the network, held
        for it with `frame_order="pair"`); `frame_latency_avg` (node
        cycles, send to delivery) and `frame_net_latency_avg` (network
        cycles); `slices`, `net_cycles`, `node_cycles`, `simulated_s`
        (node seconds), `wall_s`; `network` (the engine's report) and
        `per_node`. `end_reason` says why it ended ("interrupted by
        SIGINT" after Ctrl-C: the report then covers the slices done).

    Raises:
        ConfigError: bad input (exit 2): a key, a value, a workload, a
            trace that cannot be read.
        Deadlock: the workload can never finish (exit 3), with its report.
        RunError: a node failed or stalled (the report in `e.report`), or
            the command cannot start (no `fsin` binary, `fsin.binary()`).
    """
    if (workload == "trace") != (trace is not None):
        raise ConfigError(
            'workload="trace" needs trace=PATH, and trace=PATH needs workload="trace"',
            "workload",
            workload,
        )
    args = ["demo", "--workload", workload]
    if trace is not None:
        args.append(os.fspath(trace))
    args += _flags(
        [
            ("--nodes", nodes),
            ("--bytes", bytes),
            ("--messages", messages),
            ("--think", think),
            ("--nodes-per-client", nodes_per_client),
            ("--slices", slices),
            ("--warmup", warmup),
        ]
    )
    args += _common(keys, config, slice, mode, out, node_timeout)
    show, callback = _shown(progress)
    result = run_command(args, show=show, progress=callback, slices=slices)
    return Report(result)


def _vary_text(vary: Union[str, dict[str, Any]]) -> str:
    """`--vary KEY=V1,V2,...` from a dict of one key or the text itself."""
    if isinstance(vary, str):
        return vary
    if isinstance(vary, dict) and len(vary) == 1:
        ((key, values),) = vary.items()
        if isinstance(values, (str, tuple)) or not hasattr(values, "__iter__"):
            values = [values]
        return f"{key}={','.join(_text(key, v) for v in values)}"
    raise ConfigError(
        "vary: give one key and its values, e.g. vary={'intransit_pr': [0, 1]} or "
        f"vary={{'slice': ['200:10000', (20, 1000)]}}, not {vary!r}",
        "vary",
        repr(vary),
    )


def _study_table(result: dict[str, Any]) -> Any:
    rows = result["summary"]
    try:
        import pandas
    except ImportError:
        return rows
    df = pandas.DataFrame(rows, columns=result["columns"])
    df.attrs["study"] = result
    return df


def qemu(
    guests: int = 4,
    app: Optional[str] = "is",
    vary: Union[str, dict[str, Any], None] = None,
    out: Optional[PathLike] = None,
    *,
    app_size: Optional[int] = None,
    run: Optional[str] = None,
    pings: Optional[int] = None,
    slice: Slice = None,
    mode: Optional[str] = None,
    timing: Optional[str] = None,
    checkpoint: Optional[PathLike] = None,
    roi: Optional[str] = None,
    trace_out: Optional[PathLike] = None,
    trace_format: Optional[str] = None,
    predict: bool = False,
    repeat: Optional[int] = None,
    warmup: bool = False,
    cpus: Optional[int] = None,
    memory_mb: Optional[int] = None,
    image: Optional[PathLike] = None,
    app_timeout: Optional[float] = None,
    node_timeout: Optional[float] = None,
    config: Optional[PathLike] = None,
    progress: Progress = True,
    **keys: Any,
) -> Any:
    """Boot QEMU guests whose only network is the simulated one and run an
    application on them, as `fsin qemu ... --json` (the Simics paper's
    full-system co-simulation, with QEMU and Linux guests): the same
    binary, started as a child process.

    Needs QEMU and the guest images (`scripts/install-qemu.sh`;
    `fsin doctor` says what is missing).

    Args:
        guests: guests to boot, one per network node (the topology must
            have at least as many nodes: topo="torus_16" for 16).
        app: the MPI application run on every guest: "is" (NPB IS's
            integer sort), "cg" (NPB CG), "hpcc", "netpipe"; None with
            `run` or `pings`.
        vary: a study, `--vary`: one key and its values,
            {"intransit_pr": [0, 1]} or {"slice": ["200:10000", (20, 1000)]},
            or the command's text "slice=200:10000,20:1000". Each value
            runs once (`repeat` times with other seeds); a slice study
            also runs the exact-mode reference.
        out: a directory for the report and the guests' logs; for a study,
            `study.csv`, `study.json`, `study.svg` (the Simics paper's
            Fig. 4), `tradeoff.svg`, a directory per run, and what makes
            the study resumable: call again with the same arguments and
            finished runs are not run again.
        app_size: the application's size per guest (IS: keys per guest,
            NPB class W is 2**20 // guests, class A 2**23 // guests; CG:
            rows per guest).
        run: a shell command to run on guest 0 instead of `app`.
        pings: pings from every guest to every other.
        slice: (network cycles, node cycles) or "200:10000"; the default
            200:1000 is about Gigabit Ethernet (10 MB/s at 200:10000).
        mode: "lockstep", "parallel" or "exact".
        timing: "lockstep" (guest time follows instructions, the default)
            or "free" (guests run free, slices follow the wall clock).
        checkpoint: a directory for the booted cluster: boot once and save
            there, restore on later calls (seconds instead of minutes).
            With the region "mpi" or "marker", also the cluster at the
            region's start, which every later run restores.
        roi: where the measure begins (`--roi`): "command" (guest 0
            starts the command: Open MPI's launch is measured), "mpi"
            (every rank's MPI_Init has returned: the launch runs in
            warm-up) or "marker" (MPI_Pcontrol(1)); None: in lock-step,
            "mpi" for every `app` and a `run` that calls mpirun or
            mpiexec, else "command".
        trace_out: write the measured phase's frames as a trace (`.trc`,
            or Dimemas with trace_format="dimemas") that `fsin.run(
            tracefile=...)` replays.
        predict: in a study, replay the first value's trace on every
            value's network: the trace-driven prediction beside the
            full-system result.
        repeat: runs per value, each with other seeds (99% confidence
            intervals).
        warmup: boot in warm-up, measure from the CLEAR_STATS packet.
        cpus, memory_mb, image: each guest's vCPUs and RAM (MiB), and the
            guest image directory.
        app_timeout, node_timeout: seconds of guest time the application
            may take; wall seconds a guest may take for one slice.
        config: a configuration file, as in `run`.
        progress: True (the default) shows the command's progress lines
            on stderr; False hides them; a callable gets
            `progress(slices done, None)` for a run and `progress(runs
            done, runs)` for a study.
        **keys: INSEE's configuration keys, as in `run`.

    Returns:
        Without `vary`, the run's `Report` (the JSON of `fsin qemu
        --json`): `app` (the application's `guest_s` in guest seconds,
        `results`, `exit_code`), `ping_sent`, `ping_received`,
        `frames_delivered`, `network` (accepted load in
        phits/node/cycle), `guest_reports`, `wall_s`. With `vary`, a
        DataFrame with the columns of `study.csv`, one row per value:
        `key`, `value`, `runs`, `guest_s` and `guest_s_ci99` (guest
        seconds, mean and 99% half-width), `guest_rel`, `predicted_s`,
        `predicted_s_ci99`, `predicted_rel`, `app_wall_s`, `error_pct`
        and `speedup` (slice studies, against exact), `accepted_load`,
        `accepted_load_peak`, `link_utilization_peak`, `frames_dropped`,
        then the means of the guests' study figures (`tcp_segments`,
        `tcp_retransmissions`); `df.attrs["study"]` holds every run
        (`points`). Without pandas, the rows as a list of dicts.

    Raises:
        ConfigError: bad input (exit 2), e.g. more guests than nodes, a
            machine too small for the guests.
        RunError: a guest or the application failed (`e.report` when the
            command gave one), QEMU is missing, or no `fsin` binary.

    Ctrl-C stops the command as SIGINT does: a run returns its report so
    far; a study stops its current run and stays resumable in `out`, and
    the call returns the runs finished.
    """
    args = ["qemu", "--guests", str(guests)]
    args += _flags(
        [
            ("--app", app),
            ("--app-size", app_size),
            ("--run", run),
            ("--pings", pings),
            ("--timing", timing),
            ("--checkpoint", checkpoint),
            ("--roi", roi),
            ("--trace-out", trace_out),
            ("--trace-format", trace_format),
            ("--predict", predict),
            ("--repeat", repeat),
            ("--warmup", warmup),
            ("--cpus", cpus),
            ("--memory-mb", memory_mb),
            ("--image", image),
            ("--app-timeout", app_timeout),
            ("--vary", None if vary is None else _vary_text(vary)),
        ]
    )
    args += _common(keys, config, slice, mode, out, node_timeout)
    show, callback = _shown(progress)
    result = run_command(args, show=show, progress=callback, study=vary is not None)
    if vary is not None:
        return _study_table(result)
    return Report(result)
