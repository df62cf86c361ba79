"""fsin.sweep against `fsin sweep`'s sweep.csv."""

from __future__ import annotations

import csv
import sys

import pandas as pd
import pytest

import fsin
from test_run import cli

SETTINGS = ["topo=torus_4_4", "cycles=3000"]


def command_csv(tmp_path, vary: str) -> pd.DataFrame:
    p = cli("sweep", "-q", "--vary", vary, "--out", str(tmp_path), *SETTINGS)
    assert p.returncode == 0, p.stderr
    return pd.read_csv(tmp_path / "sweep.csv")


def test_sweep_gives_the_rows_of_the_commands_csv(tmp_path):
    want = command_csv(tmp_path / "cli", "load=0.1:0.5:0.2")
    got = fsin.sweep({"load": [0.1, 0.3, 0.5]}, topo="torus_4_4", cycles=3000)
    pd.testing.assert_frame_equal(got, want)
    # The command's own text and its range give the same points.
    same = fsin.sweep("load=0.1:0.5:0.2", topo="torus_4_4", cycles=3000)
    pd.testing.assert_frame_equal(same, want)
    # Three points, each with its full report.
    reports = [p["report"] for p in got.attrs["sweep"]["points"]]
    assert [r["config"]["load"] for r in reports] == ["0.1", "0.3", "0.5"]
    # Accepted load follows offered load below saturation (a 4x4 torus
    # saturates far above 0.1 phits/node/cycle).
    assert abs(got["accepted"][0] - 0.1) < 0.02


def test_the_thread_count_does_not_change_the_results():
    one = fsin.sweep({"load": [0.2, 0.4, 0.6, 0.8]}, topo="torus_4_4", cycles=3000, processes=1)
    two = fsin.sweep({"load": [0.2, 0.4, 0.6, 0.8]}, topo="torus_4_4", cycles=3000, processes=2)
    pd.testing.assert_frame_equal(one, two)


def test_out_writes_the_commands_files(tmp_path):
    fsin.sweep({"load": [0.1, 0.2]}, topo="torus_4_4", cycles=2000, out=tmp_path)
    for name in ("sweep.csv", "sweep.json", "latency.svg", "throughput.svg"):
        assert (tmp_path / name).stat().st_size > 0, name
    rows = list(csv.DictReader(open(tmp_path / "sweep.csv")))
    assert [r["load"] for r in rows] == ["0.1", "0.2"]


def test_without_pandas_the_rows_are_dicts(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    rows = fsin.sweep({"load": [0.1, 0.2]}, topo="torus_4_4", cycles=2000)
    assert isinstance(rows, list) and [r["load"] for r in rows] == [0.1, 0.2]
    assert all(isinstance(r["accepted"], float) for r in rows)


def test_a_bad_value_in_any_point_is_refused_before_any_runs():
    with pytest.raises(fsin.ConfigError) as e:
        fsin.sweep({"vc": ["bubble", "bubbles"]}, topo="torus_4_4", cycles=2000)
    assert (e.value.key, e.value.value) == ("vc", "bubbles")
    with pytest.raises(fsin.ConfigError) as e:
        fsin.sweep("load=0.5:0.1:0.1", topo="torus_4_4")
    assert e.value.key == "vary"
    with pytest.raises(fsin.ConfigError) as e:
        fsin.sweep({"load": [0.1]}, processes=0)
    assert e.value.key == "processes"


def test_series_come_back_in_one_frame_with_the_commands_columns(tmp_path):
    p = cli(
        "sweep", "-q", "--vary", "load=0.1,0.3", "--series", "topo=torus_4_4,mesh_4_4",
        "--out", str(tmp_path), "cycles=3000",
    )
    assert p.returncode == 0, p.stderr
    want = pd.read_csv(tmp_path / "sweep.csv")
    got = fsin.sweep({"load": [0.1, 0.3]}, series={"topo": ["torus_4_4", "mesh_4_4"]}, cycles=3000)
    pd.testing.assert_frame_equal(got, want)
    assert list(got["topo"]) == ["torus_4_4", "torus_4_4", "mesh_4_4", "mesh_4_4"]
    assert list(got["series"]) == ["topo=torus_4_4"] * 2 + ["topo=mesh_4_4"] * 2
    # Bounds of their own: 8/k for the torus, 4/k for the mesh (k = 4).
    bounds = [s["bisection_bound"] for s in got.attrs["sweep"]["series"]]
    assert bounds == [2.0, 1.0]
    with pytest.raises(fsin.ConfigError) as e:
        fsin.sweep({"load": [0.1]}, series="load=0.2,0.3")
    assert e.value.key == "series"
