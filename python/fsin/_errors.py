"""The exceptions of `fsin`, with the meaning of the command's exit codes."""

from __future__ import annotations

import json
from typing import Optional

from ._report import Report


class FsinError(Exception):
    """Base class of every error that fsin raises."""


class ConfigError(FsinError, ValueError):
    """Bad input, the command's exit 2: an unknown key, a value out of its
    range, settings that cannot be combined, a trace or configuration file
    that cannot be read, or a network that does not fit in memory. The
    message names what is wrong and its valid values; `key` and `value`
    are the key and the value at fault, where known (else None)."""

    def __init__(self, message: str, key: Optional[str] = None, value: Optional[str] = None):
        super().__init__(message)
        self.key = key
        self.value = value


class Deadlock(FsinError):
    """The run can never finish, the command's exit 3: the network
    deadlocked (`report.network_deadlock` gives the cycle of waiting
    channels), or every unfinished task of a trace waits for a message that
    is not in the network (`report.blocked`). `report` is the run's report
    up to that point (None when the workload was refused before it ran)."""

    def __init__(self, message: str, report: "Optional[str | Report]" = None):
        super().__init__(message)
        if isinstance(report, str):
            report = Report(json.loads(report))
        self.report = report


class RunError(FsinError, RuntimeError):
    """A failure while running, the command's exit 1 (e.g. an output
    directory that cannot be written, a guest or fake node that failed).
    `report` is the run's report when the command gave one (a
    co-simulation whose node faulted), else None."""

    def __init__(self, message: str, report: "Optional[Report]" = None):
        super().__init__(message)
        self.report = report


class InternalError(FsinError):
    """A bug of fsin-rs (a panic in the library), with its message: please
    report it with the call that raised it."""
