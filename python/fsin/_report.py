"""The report of a run: the JSON of `fsin run --json`, read as attributes."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Iterator, Optional


class Report(Mapping):
    """A run's report: every key of `fsin run --json` (of `fsin demo
    --json` from `cosim`, of `fsin qemu --json` from `qemu`), as an
    attribute and as a read-only mapping (`r.accepted_load`,
    `r["accepted_load"]`).

    The figures and their units are the command's (docs/contracts.md):
    `cycles` (network cycles of the measured phase), `accepted_load` and
    `offered_load` (phits/node/cycle), `latency_avg` (cycles from
    generation to consumption), `exec_cycles` and `predicted_s` for
    traces (cycles; guest seconds for a frame trace), `wall_s` (seconds),
    `config` (every key as `key=value` strings, enough to repeat the run).
    `interrupted` is "SIGINT" when Ctrl-C stopped the run early, else
    None: the report then covers the cycles simulated until then.
    """

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(
                f"the report has no key {name!r}; its keys: {', '.join(sorted(self._data))}"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a report is read-only; use to_dict() for a copy")

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._data))

    @property
    def interrupted(self) -> Optional[str]:
        """The signal that stopped the run early ("SIGINT" for Ctrl-C), or
        None (a co-simulation's report gives it in `end_reason`,
        "interrupted by SIGINT")."""
        given = self._data.get("interrupted")
        reason = self._data.get("end_reason")
        if given is None and isinstance(reason, str) and reason.startswith("interrupted by "):
            return reason[len("interrupted by ") :]
        return given

    def to_dict(self) -> dict[str, Any]:
        """A copy of the report: exactly the JSON of `fsin run --json`."""
        return copy.deepcopy(self._data)

    def __repr__(self) -> str:
        shown = [
            f"{k}={self._data[k]!r}"
            for k in (
                "accepted_load",
                "latency_avg",
                "cycles",
                "exec_cycles",
                "frames_delivered",
                "slices",
                "end_reason",
                "interrupted",
            )
            if self._data.get(k) is not None
        ]
        topo = self._data.get("config", {}).get("topo")
        if topo is not None:
            shown.insert(0, f"topo={topo!r}")
        return f"Report({', '.join(shown)})"
