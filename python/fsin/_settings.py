"""Keyword arguments as the command line's `key=value` settings."""

from __future__ import annotations

import numbers
import os
from typing import Any

from ._errors import ConfigError


def value(key: str, given: Any) -> str:
    """A keyword argument's value in the syntax of `key=value` settings.

    Raises:
        ConfigError: a value of another type (a list, None...)."""
    if isinstance(given, bool):
        return "1" if given else "0"
    if isinstance(given, str):
        return given
    # numpy's and pandas' numbers too (a DataFrame's cells).
    if isinstance(given, numbers.Integral):
        return str(int(given))
    if isinstance(given, numbers.Real):
        return str(float(given))
    if isinstance(given, os.PathLike):
        return os.fspath(given)
    raise ConfigError(
        f"bad value {given!r} for key `{key}`: give a str, int, float, bool or path "
        "(as on the command line, e.g. topo=\"torus_16_16\", load=0.3)",
        key,
        repr(given),
    )


def settings(keys: dict[str, Any]) -> list[str]:
    """`keys` as `key=value` strings, in their order (`fsin run`'s
    arguments)."""
    return [f"{k}={value(k, v)}" for k, v in keys.items()]
