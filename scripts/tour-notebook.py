#!/usr/bin/env python3
"""Writes examples/python/tour.ipynb from its plain-script twin,
examples/python/tour.py, the source of both: `# %%` starts a code cell,
`# %% [markdown]` a markdown cell (its lines' leading `# ` removed).

    python3 scripts/tour-notebook.py        # needs nbformat (pip)

python/tests/test_tour.py fails when the two differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "python" / "tour.py"
NOTEBOOK = ROOT / "examples" / "python" / "tour.ipynb"


def cells(text: str) -> list[tuple[str, str]]:
    """The script's cells as (kind, source): kind "code" or "markdown"."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            out.append(("markdown" if "[markdown]" in line else "code", []))
        elif not out:
            raise ValueError(f"{SCRIPT}: text before the first `# %%` cell")
        elif out[-1][0] == "markdown":
            out[-1][1].append(line[2:] if line.startswith("# ") else line.lstrip("#"))
        else:
            out[-1][1].append(line)
    return [(kind, "\n".join(lines).strip("\n")) for kind, lines in out]


def notebook(text: str):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    new = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    nb.cells = [new[kind](source) for kind, source in cells(text)]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"  # stable: the file changes only with the script
    return nb


def main() -> int:
    import nbformat

    nb = notebook(SCRIPT.read_text())
    nbformat.write(nb, NOTEBOOK)
    print(f"wrote {NOTEBOOK.relative_to(ROOT)}: {len(nb.cells)} cells", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
