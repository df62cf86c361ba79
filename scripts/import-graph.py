#!/usr/bin/env python3
"""The import graph inside every crate of the workspace: no circles.

How it is counted (docs/architecture.md, "Layers"):

- Nodes: the files of a crate's module tree (from its lib.rs or main.rs,
  following `mod NAME;`), test modules (`#[cfg(test)]` items) left out.
- Arrows: a file's `use` declarations (not its `pub use` re-exports, which
  are the crate's facade) that name a path into another file of the tree
  (`crate::`, `super::`, `self::` or a child module). A path is followed
  to the file that defines its item: through modules, and through a
  re-export to the module it re-exports from; a path re-exporting another
  crate leaves the crate and is no arrow.
- A circle: files that reach each other by arrows (a strongly connected
  set of more than one file). With none, the files form layers and every
  arrow points down them; a child that imports its parent's types is an
  arrow down to them, a parent that also imports that child's items a
  circle.

Prints, per crate target, its files, arrows and circles (each circle's
files with -v); exits 1 when a crate has a circle. `.ci/run` runs it.
Needs cargo and Python 3 only.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from rust_source import without_tests

ROOT = Path(__file__).resolve().parent.parent
ITEM = r"(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|fn|const|type|trait|static|union|macro_rules!)\s+"


def module_file(base, name):
    for c in (base / f"{name}.rs", base / name / "mod.rs"):
        if c.exists():
            return c
    return None


def tree(top):
    """The module tree from `top`: {path tuple: file}."""
    mods, stack = {(): top}, [((), top)]
    while stack:
        path, f = stack.pop()
        text = without_tests(f.read_text())
        base = f.parent if f.name in ("mod.rs", "lib.rs", "main.rs") else f.with_suffix("")
        for m in re.finditer(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text, re.M):
            child = module_file(base, m.group(1))
            if child:
                mods[path + (m.group(1),)] = child
                stack.append((path + (m.group(1),), child))
    return mods


def use_paths(decl):
    """The paths of one `use` declaration, braces expanded."""
    decl = re.sub(r"\s+", "", decl)

    def expand(prefix, body):
        parts, depth, cur = [], 0, ""
        for ch in body:
            depth += (ch == "{") - (ch == "}")
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        out = []
        for p in filter(None, parts):
            m = re.match(r"^([\w:]*?)(?:::)?\{(.*)\}$", p)
            if m:
                out += expand(prefix + [s for s in m.group(1).split("::") if s], m.group(2))
            else:
                out.append(prefix + [s for s in p.split("::") if s])
        return out

    return expand([], decl)


def crate_graph(top):
    mods = tree(top)
    texts = {p: without_tests(f.read_text()) for p, f in mods.items()}

    def defined(path, name):
        return re.search(r"^\s*" + ITEM + re.escape(name) + r"\b", texts[path], re.M)

    def re_exported(path, name):
        """Where module `path` re-exports `name` from: a module path,
        'outside' for another crate, None when it does not."""
        for m in re.finditer(r"^\s*pub(?:\([^)]*\))?\s+use\s+([^;]+);", texts[path], re.M):
            for p in use_paths(m.group(1)):
                last = p[-1] if p else ""
                alias = re.match(r"(\w+)as(\w+)$", last)
                if (alias.group(2) if alias else last) != name:
                    continue
                cur, segs = resolve_start(path, p)
                if cur is None:
                    return "outside"
                while segs and cur + (segs[0],) in mods:
                    cur, segs = cur + (segs[0],), segs[1:]
                return cur
        return None

    def resolve_start(path, segs):
        if not segs:
            return None, []
        if segs[0] == "crate":
            return (), segs[1:]
        if segs[0] in ("super", "self"):
            cur = path
            while segs and segs[0] in ("super", "self"):
                cur = cur[:-1] if segs[0] == "super" else cur
                segs = segs[1:]
            return cur, segs
        if path + (segs[0],) in mods:
            return path, segs
        return None, []

    edges = set()
    for path in mods:
        for m in re.finditer(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", texts[path], re.M):
            if m.group(1):
                continue
            for p in use_paths(m.group(2)):
                cur, segs = resolve_start(path, p)
                if cur is None:
                    continue
                while segs and cur + (segs[0],) in mods:
                    cur, segs = cur + (segs[0],), segs[1:]
                # An item re-exported from below: the file that defines it.
                for _ in range(8):
                    if not segs or segs[0] in ("*", "self") or defined(cur, segs[0]):
                        break
                    nxt = re_exported(cur, re.sub(r"as\w+$", "", segs[0]))
                    if nxt is None:
                        break
                    cur = nxt
                    if cur == "outside":
                        break
                if cur != "outside" and cur != path:
                    edges.add((path, cur))
    return mods, edges


def circles(nodes, edges):
    """Strongly connected sets of more than one node (Tarjan)."""
    adj = {}
    for a, b in edges:
        adj.setdefault(a, []).append(b)
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop()
                on.discard(w)
                c.append(w)
                if w == v:
                    break
            if len(c) > 1:
                out.append(c)

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    verbose = "-v" in sys.argv
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout
    )
    bad = 0
    for pkg in sorted(meta["packages"], key=lambda p: p["name"]):
        for target in pkg["targets"]:
            if not set(target["kind"]) & {"lib", "bin"}:
                continue
            mods, edges = crate_graph(Path(target["src_path"]))
            found = circles(list(mods), edges)
            bad += len(found)
            name = pkg["name"] if "lib" in target["kind"] else f"{pkg['name']} (bin {target['name']})"
            print(f"{name}: {len(mods)} files, {len(edges)} arrows, {len(found)} circles")
            for c in found:
                print("  circle:", " <-> ".join("/".join(p) or "crate root" for p in c))
            if verbose:
                for a, b in sorted(edges):
                    print("  ", "/".join(a) or "crate root", "->", "/".join(b) or "crate root")
    print(f"import-graph: {bad} circles" + (" (see above)" if bad else ", ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
