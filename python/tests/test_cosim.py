"""fsin.cosim and fsin.qemu: the co-simulations, through the `fsin`
command ($FSIN_BIN, as in test_run.py).

The QEMU tests need qemu-system-x86_64 and the guest image
(scripts/install-qemu.sh). Without them they are skipped, and pytest
says so; each skip is appended to the file FSIN_SKIP_LOG names (the list
.ci/run prints at its end, as the Rust tests' skips are), and with
FSIN_NO_SKIP=1 (.ci/run) a skip is a failure.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

import fsin
from fsin import _command
from test_run import cli_json, ctrl_c_after, fsin_bin

# Wall-clock figures of a co-simulation report, the only keys that differ
# between two equal runs.
TIMING = ("wall_s", "slices_per_s", "engine_alone_s", "overhead", "cycles_per_s")


@pytest.fixture(autouse=True)
def the_tests_binary(monkeypatch):
    monkeypatch.setenv("FSIN_BIN", fsin_bin())


def untimed(d):
    if isinstance(d, dict):
        return {k: untimed(v) for k, v in d.items() if k not in TIMING}
    if isinstance(d, list):
        return [untimed(v) for v in d]
    return d


def test_all2all_delivers_every_frame_and_is_the_commands_report():
    r = fsin.cosim("all2all", nodes=16, slice=(200, 1000), topo="torus_4_4")
    # Every node sends one frame to each of the 15 others.
    assert r.frames_sent == 16 * 15
    assert r.frames_delivered == r.frames_sent
    assert r.ok and r.interrupted is None
    want = cli_json(
        "demo", ["--workload", "all2all", "--nodes", "16", "--slice", "200:1000", "topo=torus_4_4"]
    )
    assert untimed(r.to_dict()) == untimed(want)


def test_the_slice_and_mode_reach_the_command():
    r = fsin.cosim(
        "pingpong", nodes=2, slice="100:500", mode="parallel", messages=3, topo="torus_4_4"
    )
    assert (r.slice_net_cycles, r.slice_node_cycles, r.mode) == (100, 500, "parallel")
    assert r.frames_delivered == 2 * 3


def test_a_refused_combination_names_its_key():
    # Exact mode needs slices no longer than the NIC latency (lookahead).
    with pytest.raises(fsin.ConfigError) as e:
        fsin.cosim("pingpong", slice=(100, 500), mode="exact", topo="torus_4_4")
    assert e.value.key == "sync_mode"


def test_a_bad_key_raises_a_config_error_naming_key_and_value():
    with pytest.raises(fsin.ConfigError) as e:
        fsin.cosim(topo="torus_x")
    assert (e.value.key, e.value.value) == ("topo", "torus_x")
    assert "expected an integer" in str(e.value)


def test_a_trace_that_can_never_finish_raises_deadlock_with_the_report(tmp_path):
    # Task 1 waits for a message that task 0 never sends.
    trace = tmp_path / "blocked.trc"
    trace.write_text("s 0 1 7 100\nr 1 0 7 100\nr 1 0 8 100\n")
    with pytest.raises(fsin.Deadlock) as e:
        fsin.cosim("trace", trace=trace, nodes=2, topo="torus_2")
    assert e.value.report is not None
    assert e.value.report.frames_delivered >= 1


def test_keyboard_interrupt_stops_the_command_and_returns_its_report():
    # Minutes of idle nodes: the run ends only when stopped.
    with ctrl_c_after(3.0) as sent:
        r = fsin.cosim("idle", nodes=4, slices=100_000_000, topo="torus_4")
    assert sent, "the run ended before the interrupt"
    assert r.interrupted == "SIGINT"
    assert 0 < r.slices < 100_000_000
    assert time.monotonic() - sent[0] < 10


def test_an_exception_in_the_progress_callback_stops_the_command():
    def fail(done, total):
        raise RuntimeError("enough")

    started = time.monotonic()
    with pytest.raises(RuntimeError, match="enough"):
        fsin.cosim("idle", nodes=4, slices=100_000_000, topo="torus_4", progress=fail)
    assert time.monotonic() - started < 30


class _Lines:
    """A child process as the reader sees it: its stderr lines."""

    def __init__(self, lines):
        self.stderr = [line + "\n" for line in lines]

    def send_signal(self, sig):
        raise AssertionError(f"signal {sig} sent")


# Progress lines as `fsin qemu` writes them off a terminal.
RUN_LINES = [
    "fsin qemu [11 s] application: 2/2 guests up, slice 7,886, 0.87 s guest time in 11 s wall",
    "fsin qemu [21 s] application: 2/2 guests up, slice 12,061, 1.20 s guest time in 21 s wall",
]
STUDY_LINES = [
    "fsin qemu --vary: slice=200:10000 (1/5)",
    "fsin qemu (slice=200:10000, 1/5) [11 s] application: 16/16 guests up, slice 7,886, 0.87 s",
    "fsin qemu --vary: slice=2000:100000 (2/5)",
]


def progress_of(lines, study):
    seen = []
    reader = _command._Reader(_Lines(lines), False, lambda d, t: seen.append((d, t)), None, study)
    reader.run()
    return seen


def test_progress_counts_slices_of_a_run_and_runs_of_a_study():
    assert progress_of(RUN_LINES, study=False) == [(7886, None), (12061, None)]
    # A study's run lines name slices too: only the runs count.
    assert progress_of(STUDY_LINES, study=True) == [(0, 5), (1, 5)]


def test_a_missing_binary_is_named(monkeypatch):
    monkeypatch.setenv("FSIN_BIN", "/nonexistent/fsin")
    with pytest.raises(fsin.RunError, match="FSIN_BIN=/nonexistent/fsin"):
        fsin.cosim(topo="torus_4")


def skip(why: str) -> None:
    """Skips the running test, saying why: appends it to FSIN_SKIP_LOG,
    and fails instead when FSIN_NO_SKIP is set (as sim-server/tests/skip
    does for the Rust tests)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "a test").split(" ")[0]
    log = os.environ.get("FSIN_SKIP_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{test}: {why}\n")
    if os.environ.get("FSIN_NO_SKIP"):
        pytest.fail(f"FSIN_NO_SKIP is set, but {test} cannot run here: {why}")
    pytest.skip(why)


# What `fsin qemu` needs of the guest image for guests without MPI: the
# kernel, the initramfs and the lock-step plugin.
GUEST_FILES = ("vmlinuz", "initramfs.cpio.gz", "libfsin_qemu_plugin.so")


def missing_for_qemu() -> str | None:
    """What the QEMU tests lack here, or None."""
    image = Path(
        os.environ.get("FSIN_GUEST_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fsin-guest"
    )
    if shutil.which("qemu-system-x86_64") is None:
        return "no qemu-system-x86_64: run scripts/install-qemu.sh"
    lacking = [f for f in GUEST_FILES if not (image / f).is_file()]
    if lacking:
        return f"no {', '.join(lacking)} in {image}: run scripts/install-qemu.sh"
    return None


@pytest.fixture
def qemu():
    why = missing_for_qemu()
    if why:
        skip(why)


def test_two_guests_ping_each_other(qemu):
    r = fsin.qemu(2, app=None, pings=2, progress=False, topo="torus_2")
    assert r.guests == 2
    assert r.ping_sent == 2 * 2
    assert r.ping_received == r.ping_sent


def test_a_study_is_a_table_of_its_values(qemu, tmp_path):
    df = fsin.qemu(
        2,
        app=None,
        run="true",
        pings=1,
        vary={"intransit_pr": [0, 1]},
        out=tmp_path,
        progress=False,
        topo="torus_2",
    )
    assert list(df["value"]) == ["0", "1"]
    assert list(df["runs"]) == [1, 1]
    csv = (tmp_path / "study.csv").read_text().splitlines()
    assert csv[0].split(",") == list(df.columns)
    assert len(df.attrs["study"]["points"]) == 2
