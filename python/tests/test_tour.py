"""The tour notebook (examples/python/tour.ipynb): it is its script twin,
cell for cell, and it runs headless (nbclient) and writes its plots."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import nbclient
import nbformat

from test_run import fsin_bin

ROOT = Path(__file__).resolve().parents[2]
TOUR = ROOT / "examples" / "python"
PLOTS = ("sweep.png", "trace.png", "cosim.png")
PNG = b"\x89PNG\r\n\x1a\n"


def generator():
    spec = importlib.util.spec_from_file_location("tour_notebook", ROOT / "scripts" / "tour-notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_notebook_is_its_script():
    made = generator().notebook((TOUR / "tour.py").read_text())
    committed = nbformat.read(TOUR / "tour.ipynb", as_version=4)
    assert [(c.cell_type, c.source) for c in committed.cells] == [
        (c.cell_type, c.source) for c in made.cells
    ], "examples/python/tour.ipynb differs from tour.py: run scripts/tour-notebook.py"


def test_the_notebook_runs_headless_and_writes_its_plots(tmp_path, monkeypatch):
    monkeypatch.setenv("FSIN_BIN", fsin_bin())
    monkeypatch.setenv("FSIN_TOUR_OUT", str(tmp_path))
    nb = nbformat.read(TOUR / "tour.ipynb", as_version=4)
    nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    for name in PLOTS:
        data = (tmp_path / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, name
    shown = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(shown) == len(PLOTS), "every plot is shown in the notebook too"
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "the torus saturates at" in text
