"""fsin.run, fsin.topology and fsin.keys against the `fsin` command.

The command is the reference: a report from Python must be the JSON of
`fsin run --json` for the same keys, key for key. The binary is
$FSIN_BIN, else target/release/fsin or target/debug/fsin of this
repository, else `fsin` on PATH; without one the tests fail (they never
pass by skipping).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import fsin

ROOT = Path(__file__).resolve().parents[2]
# Wall-clock figures: the only keys that differ between two equal runs.
TIMING = ("wall_s", "cycles_per_s")


def fsin_bin() -> str:
    given = os.environ.get("FSIN_BIN")
    if given:
        return given
    for build in ("release", "debug"):
        p = ROOT / "target" / build / "fsin"
        if p.exists():
            return str(p)
    found = shutil.which("fsin")
    if found is None:
        pytest.fail("no fsin binary: run `cargo build --release -p sim-server` or set FSIN_BIN")
    return found


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [fsin_bin(), *args], capture_output=True, text=True, timeout=300, check=False
    )


def cli_json(command: str, settings: list[str]) -> dict:
    quiet = ["-q"] if command in ("run", "sweep") else []
    p = cli(command, "--json", *quiet, *settings)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def compare_configs() -> list[list[str]]:
    """The configurations of scripts/compare-runs.sh: every topology
    family, router and workload kind."""
    text = (ROOT / "scripts" / "compare-runs.sh").read_text()
    block = re.search(r"<<'LIST'\n(.*?)\nLIST\n", text, re.S)
    assert block, "scripts/compare-runs.sh has no LIST block"
    return [line.split() for line in block.group(1).splitlines() if line.strip()]


def kwargs(settings: list[str]) -> dict[str, str]:
    return dict(s.split("=", 1) for s in settings)


@contextlib.contextmanager
def ctrl_c_after(seconds: float):
    """Ctrl-C (SIGINT to this process) after `seconds`, inside the block;
    yields the list that gets the monotonic time it was sent."""
    sent: list[float] = []

    def interrupt():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    # Python's own Ctrl-C handler, also where the test runner inherited
    # SIGINT ignored (a shell's background job): Python then installs none.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(seconds, interrupt)
    timer.start()
    try:
        yield sent
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


def untimed(d: dict) -> dict:
    return {k: v for k, v in d.items() if k not in TIMING}


def test_the_compare_list_is_the_one_of_the_issue():
    assert len(compare_configs()) == 22


@pytest.mark.parametrize("settings", compare_configs(), ids=" ".join)
def test_run_gives_the_commands_report(settings):
    want = cli_json("run", settings)
    got = fsin.run(**kwargs(settings))
    assert isinstance(got, fsin.Report)
    assert untimed(got.to_dict()) == untimed(want)
    # Attributes and mapping read the same JSON.
    assert got.cycles == want["cycles"] == got["cycles"]
    assert got.interrupted is None


def test_a_configuration_file_and_keys_combine_as_on_the_command_line(tmp_path):
    conf = tmp_path / "net.conf"
    conf.write_text("# a small torus\ntopo=torus_4_4\nload=0.9\n")
    want = cli_json("run", ["--config", str(conf), "load=0.2", "cycles=2000"])
    got = fsin.run(conf, load=0.2, cycles=2000)
    assert untimed(got.to_dict()) == untimed(want)
    assert got.config["load"] == "0.2"


def test_booleans_and_numbers_are_written_as_the_command_line_takes_them():
    a = fsin.run(topo="torus_4_4", cycles=2000, load=0.25, extract=True)
    b = fsin.run(topo="torus_4_4", cycles="2000", load="0.25", extract="1")
    assert untimed(a.to_dict()) == untimed(b.to_dict())


def test_an_unknown_key_raises_a_config_error_naming_it():
    with pytest.raises(fsin.ConfigError) as e:
        fsin.run(topo="torus_4_4", lod=0.3)
    assert isinstance(e.value, ValueError)
    assert e.value.key == "lod"
    assert "lod" in str(e.value) and "load" in str(e.value), str(e.value)
    # Keyword arguments are not a command line.
    assert not str(e.value).startswith("command line"), str(e.value)


def test_a_bad_value_raises_a_config_error_naming_key_value_and_range():
    with pytest.raises(fsin.ConfigError) as e:
        fsin.run(topo="torus_4_4", vc="bubbles")
    assert (e.value.key, e.value.value) == ("vc", "bubbles")
    # The valid values, as `fsin help config` gives them.
    assert "dally" in str(e.value), str(e.value)
    with pytest.raises(fsin.ConfigError) as e:
        fsin.run(topo="torus_4_4", load=-1)
    assert (e.value.key, e.value.value) == ("load", "-1")


def test_a_value_of_no_command_line_form_is_refused_before_running():
    with pytest.raises(fsin.ConfigError) as e:
        fsin.run(topo=["torus", 4, 4])
    assert e.value.key == "topo"


def test_a_network_deadlock_raises_with_the_report_and_its_cycle_of_channels():
    # One VC, dimension order, no bubble, wormhole: the rings close a cycle
    # of channels (sim-server/tests/wormhole.rs).
    settings = dict(
        topo="torus_8_8",
        nchan=1,
        rmode="oblivious",
        bsize=0,
        switching="wormhole",
        tql=1,
        load=1.0,
        cycles=100000,
    )
    with pytest.raises(fsin.Deadlock) as e:
        fsin.run(**settings)
    dl = e.value.report.network_deadlock
    assert dl["cycle"] < 100000
    assert len(dl["cycle_of_channels"]) >= 2
    # The command exits 3 on the same run, with the same report.
    p = cli("run", "--json", "-q", *(f"{k}={v}" for k, v in settings.items()))
    assert p.returncode == 3, p.stderr
    want = json.loads(p.stdout.strip().splitlines()[-1])
    assert untimed(e.value.report.to_dict()) == untimed(want)


def test_keyboard_interrupt_returns_the_partial_report_within_a_second():
    # A run of minutes: 10 million cycles of a loaded 32x32 torus.
    with ctrl_c_after(1.0) as sent:
        r = fsin.run(topo="torus_32_32", load=0.3, cycles=10_000_000)
    returned = time.monotonic()
    assert sent, "the run ended before the interrupt"
    assert r.interrupted == "SIGINT"
    assert returned - sent[0] < 1.0
    assert 0 < r.total_cycles < 10_000_000


def test_progress_is_called_with_cycles_and_the_end():
    seen = []
    fsin.run(topo="torus_16_16", load=0.3, cycles=200_000, progress=lambda c, e: seen.append((c, e)))
    assert seen, "no progress call"
    assert all(0 <= c <= e for c, e in seen if e is not None)
    assert [c for c, _ in seen] == sorted(c for c, _ in seen)


def test_an_exception_in_the_progress_callback_stops_the_run_and_is_raised():
    def fail(cycle, end):
        raise RuntimeError("enough")

    started = time.monotonic()
    with pytest.raises(RuntimeError, match="enough"):
        fsin.run(topo="torus_32_32", load=0.3, cycles=10_000_000, progress=fail)
    assert time.monotonic() - started < 10


def test_out_writes_the_commands_files(tmp_path):
    r = fsin.run(topo="torus_4_4", cycles=2000, load=0.2, out=tmp_path)
    written = json.loads((tmp_path / "report.json").read_text())
    assert untimed(written) == untimed(r.to_dict())


def test_plevel_without_out_is_refused():
    with pytest.raises(fsin.ConfigError) as e:
        fsin.run(topo="torus_4_4", cycles=2000, plevel=2)
    assert e.value.key == "plevel"


def test_topology_gives_the_commands_summary():
    for settings in (["topo=torus_8_8"], ["topo=fattree_4_3"], ["topo=torus_6_6", "faults=3"]):
        assert fsin.topology(**kwargs(settings)) == cli_json("topology", settings)
    t = fsin.topology(topo="torus_8_8")
    # An 8x8 torus: 64 nodes, diameter 4 + 4 hops.
    assert (t["nodes"], t["diameter"]) == (64, 8)


def test_keys_list_every_key_of_help_config():
    table = fsin.keys()
    names = {k["name"] for k in table}
    assert {"topo", "load", "vc", "rseed", "tracefile"} <= names
    help_text = cli("help", "config").stdout
    for k in table:
        assert re.search(rf"^{re.escape(k['name'])}\b", help_text, re.M), k["name"]
        assert k["values"] and k["help"]
    topo = next(k for k in table if k["name"] == "topo")
    assert topo["default"] == "torus_8_8"
    # Each key in the group `fsin help config` lists it under.
    for k in table:
        assert f"== {k['group']} ==" in help_text, k
    assert topo["group"] == "Network"


def test_numbers_from_numpy_are_taken():
    import numpy as np  # pandas' own dependency, a test extra

    a = fsin.run(topo="torus_4_4", cycles=np.int64(2000), load=np.float64(0.25))
    b = fsin.run(topo="torus_4_4", cycles=2000, load=0.25)
    assert untimed(a.to_dict()) == untimed(b.to_dict())


def test_a_file_topology_has_its_bisection(tmp_path):
    # A ring of 4 routers, a node each: the bisection cuts 2 links, and
    # uniform traffic is bounded by 4 * 2 / 4 = 2 phits/node/cycle.
    ring = tmp_path / "ring.edges"
    ring.write_text("0 1\n1 2\n2 3\n3 0\n")
    t = fsin.topology(topo=f"file:{ring}")
    assert t["bisection_links"] == 2
    assert t["throughput_bound"] == 2.0
