"""The `fsin` command as a child process, for the calls whose work is not
in-process: `fsin.cosim` (`fsin demo` starts fake-node processes) and
`fsin.qemu` (`fsin qemu` starts QEMU guests).

One runner serves both. It starts the command with `--json`, forwards its
progress lines, turns Ctrl-C into SIGINT for the command (which then stops
as it does in a terminal: the run's report up to there, a study left
resumable), and maps the exit code to the module's exceptions: 2 to
`ConfigError`, 3 to `Deadlock`, any other failure to `RunError`.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Optional

from . import _fsin
from ._errors import ConfigError, Deadlock, RunError
from ._report import Report

# The command's exit codes (sim-server/src/main.rs, docs/contracts.md).
EXIT_BAD_INPUT = 2
EXIT_CANNOT_FINISH = 3
# Lines of the command's stderr kept for an error's message.
KEPT_LINES = 40
# Seconds between the command's progress lines when they are shown.
PROGRESS_S = 5
# Seconds the command may take to stop after SIGINT before SIGTERM, and
# after SIGTERM before SIGKILL.
STOP_GRACE_S = 60

_SLICE = re.compile(r"\bslice ([\d,]+)\b")
# A study's line as each run starts: `fsin qemu --vary: slice=200:10000 (1/5)`.
_POINT = re.compile(r"--vary: .*\((\d+)/(\d+)\)$")
_BAD_VALUE = re.compile(r"bad value `(.*?)` for key `(.*?)`")
_UNKNOWN_KEY = re.compile(r"unknown key `(.*?)`")
_KEY = re.compile(r"\bkey `(.*?)`")


def binary() -> str:
    """The `fsin` command that `cosim` and `qemu` start: `$FSIN_BIN`, else
    `bin/fsin` inside this package, else `fsin` on PATH (`cargo install
    --path sim-server`), else `target/release/fsin` of the checkout this
    module was built from (`cargo build --release -p sim-server`).

    Raises:
        RunError: none of them exists, or `$FSIN_BIN` is not a file.
    """
    given = os.environ.get("FSIN_BIN")
    if given:
        if not os.path.isfile(given):
            raise RunError(f"FSIN_BIN={given}: no such file (the `fsin` command to start)")
        return given
    beside = Path(__file__).resolve().parent / "bin" / "fsin"
    if beside.is_file():
        return str(beside)
    on_path = shutil.which("fsin")
    if on_path:
        return on_path
    built = Path(_fsin.SOURCE).parent / "target" / "release" / "fsin"
    if built.is_file():
        return str(built)
    raise RunError(
        "no `fsin` command to start: install it with `cargo install --locked --path "
        "sim-server` (onto PATH), build it with `cargo build --release -p sim-server`, "
        "or set FSIN_BIN to its path"
    )


def _error_line(lines: "collections.deque[str]") -> str:
    """The command's error message (its `fsin: error:` line), else its
    last lines of stderr."""
    for line in reversed(lines):
        if line.startswith("fsin: error: "):
            return line[len("fsin: error: ") :]
    return "\n".join(list(lines)[-10:]) or "no message on stderr"


def _config_error(message: str) -> ConfigError:
    """A `ConfigError` with the key and value the message names."""
    bad = _BAD_VALUE.search(message)
    if bad:
        return ConfigError(message, bad.group(2), bad.group(1))
    named = _UNKNOWN_KEY.search(message) or _KEY.search(message)
    return ConfigError(message, named.group(1) if named else None, None)


def _last_json(stdout: str) -> Optional[Any]:
    lines = stdout.strip().splitlines()
    if not lines:
        return None
    try:
        return json.loads(lines[-1])
    except ValueError:
        return None


class _Reader(threading.Thread):
    """Reads the command's stderr: keeps its last lines, shows them when
    asked, and turns progress lines into `progress(done, total)` calls.
    A callback that raises stops the command (SIGINT); the caller raises
    the exception again."""

    def __init__(
        self,
        child: subprocess.Popen,
        show: bool,
        progress: Optional[Callable[[int, Optional[int]], Any]],
        slices: Optional[int],
        study: bool,
    ):
        super().__init__(daemon=True)
        self.child = child
        self.show = show
        self.progress = progress
        self.slices = slices
        self.study = study
        self.lines: collections.deque[str] = collections.deque(maxlen=KEPT_LINES)
        self.failure: Optional[BaseException] = None

    def run(self) -> None:
        for raw in self.child.stderr:
            line = raw.rstrip("\n")
            self.lines.append(line)
            if self.show:
                print(line, file=sys.stderr, flush=True)
            if self.progress is not None and self.failure is None:
                try:
                    self._report(line)
                except BaseException as e:  # raised again in the caller's thread
                    self.failure = e
                    self.child.send_signal(signal.SIGINT)

    def _report(self, line: str) -> None:
        if self.study:
            # Runs finished of runs in all, as each run starts.
            point = _POINT.search(line)
            if point:
                self.progress(int(point.group(1)) - 1, int(point.group(2)))
            return
        found = _SLICE.search(line)
        if found:
            self.progress(int(found.group(1).replace(",", "")), self.slices)


def _stop(child: subprocess.Popen) -> None:
    """SIGINT, then SIGTERM and SIGKILL if the command outlives its grace."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        child.send_signal(sig)
        try:
            child.wait(STOP_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            pass
        except KeyboardInterrupt:
            continue
    child.kill()
    child.wait()


def run_command(
    args: list[str],
    *,
    show: bool = False,
    progress: Optional[Callable[[int, Optional[int]], Any]] = None,
    slices: Optional[int] = None,
    study: bool = False,
) -> Any:
    """Runs `fsin ARGS --json` and returns the JSON of its last line (after
    Ctrl-C too: the report so far).

    `show` copies the command's progress lines to sys.stderr; `progress`
    gets `(slices done, slices)` of a run, `(runs done, runs)` of a `study`,
    called from a thread of its own at each progress line (every
    PROGRESS_S seconds).

    Raises:
        ConfigError: exit 2, with the key and value its message names.
        Deadlock: exit 3, with the report.
        RunError: any other failure, with the command's error message; or
            no JSON on the last line of a command that succeeded.
    """
    command = [binary(), *args, "--json", "--progress-s", str(PROGRESS_S)]
    # A session of its own: a terminal's Ctrl-C reaches the command once,
    # from here, not also from the terminal's process group.
    child = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    reader = _Reader(child, show, progress, slices, study)
    reader.start()
    interrupted = False
    stdout = ""
    try:
        try:
            stdout = child.stdout.read()
            child.wait()
        except KeyboardInterrupt:
            interrupted = True
            _stop(child)
            stdout += child.stdout.read()
    except BaseException:
        if child.poll() is None:
            child.kill()
            child.wait()
        raise
    reader.join()
    if reader.failure is not None:
        raise reader.failure
    result = _last_json(stdout)
    code = child.returncode
    if result is not None and (code == 0 or interrupted):
        return result
    error = _error_line(reader.lines)
    if code == EXIT_BAD_INPUT:
        raise _config_error(error)
    report = Report(result) if isinstance(result, dict) and "vary" not in result else None
    if code == EXIT_CANNOT_FINISH:
        raise Deadlock(f"{args[0]}: {error}", report)
    if interrupted:
        raise KeyboardInterrupt
    raise RunError(f"fsin {args[0]}: {error} (exit code {code})", report)
