#!/usr/bin/env python3
"""Sizes of the workspace's Rust code outside tests: no file over 800
lines, no function over 100 (docs/architecture.md, "Sizes").

How it is counted:

- Files: every `.rs` file of the workspace but `target/`, the crates'
  `tests/` and `benches/` folders and files named `tests.rs`; a file's
  lines are those outside its `#[cfg(test)]` items
  (`rust_source.without_tests`).
- Functions: every `fn` item with a body in those lines, from the line
  that opens it to the line of its closing brace, both counted. Braces
  inside string and character literals and comments do not count.

Prints each file or function over its limit; exits 1 when there is one.
Needs Python 3 only. `.ci/run` runs it.
"""

import re
import sys
from pathlib import Path

from rust_source import without_tests

ROOT = Path(__file__).resolve().parent.parent
MAX_FILE = 800
MAX_FN = 100
SKIP_DIRS = {"target", "tests", "benches", ".git"}
FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")


def code_lines(text):
    """`text`'s lines with literals and comments blanked (their braces
    gone), lines kept in place."""
    i, n = 0, len(text)
    buf = []
    depth_comment = 0
    while i < n:
        c = text[i]
        if depth_comment:
            if text.startswith("*/", i):
                depth_comment -= 1
                i += 2
            elif text.startswith("/*", i):
                depth_comment += 1
                i += 2
            else:
                buf.append("\n" if c == "\n" else " ")
                i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            depth_comment = 1
            i += 2
            continue
        raw = re.match(r'b?r(#*)"', text[i:i + 12])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + raw.group(1)
            j = text.find(end, i + raw.end())
            j = n if j < 0 else j + len(end)
            buf.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            buf.append("".join("\n" if ch == "\n" else " " for ch in text[i:j + 1]))
            i = j + 1
            continue
        if c == "'":
            m = re.match(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", text[i:i + 12])
            if m:
                buf.append(" " * m.end())
                i += m.end()
                continue
        buf.append(c)
        i += 1
    out = "".join(buf).split("\n")
    return out


def long_functions(lines):
    found = []
    for k, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, opened = 0, False
        for j in range(k, len(lines)):
            if not opened and ";" in lines[j] and "{" not in lines[j]:
                break
            depth += lines[j].count("{") - lines[j].count("}")
            opened = opened or "{" in lines[j]
            if opened and depth <= 0:
                if j - k + 1 > MAX_FN:
                    found.append((m.group(1), k + 1, j - k + 1))
                break
    return found


def main():
    bad = files = 0
    for path in sorted(ROOT.rglob("*.rs")):
        rel = path.relative_to(ROOT)
        if set(rel.parts[:-1]) & SKIP_DIRS or path.name == "tests.rs":
            continue
        files += 1
        code = "\n".join(code_lines(path.read_text()))
        size = len(without_tests(code).split("\n"))
        if size > MAX_FILE:
            print(f"{rel}: {size} lines outside tests (at most {MAX_FILE})")
            bad += 1
        # Test items blanked, not removed: the functions keep their lines.
        lines = without_tests(code, keep_lines=True).split("\n")
        for name, at, length in long_functions(lines):
            print(f"{rel}:{at}: fn {name} is {length} lines (at most {MAX_FN})")
            bad += 1
    print(f"sizes: {files} files, " + (f"{bad} over their limits" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
