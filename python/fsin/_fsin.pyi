"""Type stubs of the native module `fsin._fsin` (python/src/lib.rs).

Results cross as the JSON the `fsin` command prints; the package
(`fsin/__init__.py`) turns them into objects.
"""

from typing import Any, Callable, Optional

SOURCE: str
"""The directory of the crate this module was built from (python/ of a checkout)."""
VERSION: str
"""The crate's version, as `fsin --version` gives it."""

def run(
    settings: list[str],
    config: Optional[str] = None,
    out: Optional[str] = None,
    progress: Optional[Callable[[int, Optional[int]], Any]] = None,
) -> str:
    """One run, as `fsin run SETTINGS... --json`: the report's JSON."""

def topology(settings: list[str], config: Optional[str] = None) -> str:
    """The summary of `fsin topology SETTINGS... --json`: its JSON."""

def keys() -> str:
    """Every configuration key: a JSON list of {name, aliases, help, values, default}."""

def sweep(
    settings: list[str],
    key: str,
    values: list[str],
    config: Optional[str] = None,
    out: Optional[str] = None,
    processes: Optional[int] = None,
    progress: Optional[Callable[[int, Optional[int]], Any]] = None,
) -> tuple[str, str]:
    """A sweep, as `fsin sweep --vary KEY=VALUES --json`: (sweep.csv, sweep JSON)."""

def parse_vary(spec: str) -> tuple[str, list[str]]:
    """The key and values of a `--vary` text, as `fsin sweep` reads it."""

_Columns = tuple[list[int], list[str], list[int], list[int], list[int], list[int]]

def read_trace(path: str, format: Optional[str] = None) -> tuple[str, bool, bool, _Columns]:
    """A trace file: (name, frames, cpu_in_cycles, (task, kind, peer, tag, bytes, amount))."""

def write_trace(columns: _Columns, path: str, format: str, name: str, frames: bool) -> None:
    """Writes the columns (task, kind, peer, tag, bytes, amount) as a trace file."""

def kernel(name: str, tasks: int, bytes: int) -> tuple[str, bool, bool, _Columns]:
    """An application kernel's trace, as read_trace gives it."""
