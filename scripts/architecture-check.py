#!/usr/bin/env python3
"""Checks the claims of docs/architecture.md that the code can contradict.

- "Layers": every workspace crate has a row, and every crate of ours it
  depends on (Cargo.toml's [dependencies]) is named in its row's last cell;
  a row that says "none" has none.
- "The traits at the bottom": where a row names the implementors as
  types, every type that implements the trait is named there.
- The error table: every public error type of a library crate (a `pub`
  enum or struct that derives `thiserror::Error`) is named in its crate's
  row, and every type named there is defined in the crate.
- "No public function of a library returns `Result<_, String>`" and
  "`anyhow` appears only in binaries".
- The sizes it states: each file of `qemu-adapter/src/qemu/` under the
  limit it gives, the line counts it names, and how many files `git grep
  -il hypercube` lists outside tests.

Prints each contradiction and exits 1 when there is one; `.ci/run` runs
it. Needs cargo and Python 3 only.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

from rust_source import without_tests

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# Crates whose job is a binary (anyhow and messages of their own allowed).
BINARIES = {"sim-server", "fsin-guest-bench", "fsin-tests"}


def short(name: str) -> str:
    """A crate as the table's last column names it: `fsin-model` is model."""
    return name if name == "fsin" else name.removeprefix("fsin-")


def workspace():
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    ours = {p["name"] for p in meta["packages"]}
    crates = {}
    for p in meta["packages"]:
        deps = {
            d["name"]
            for d in p["dependencies"]
            if d["name"] in ours and d["kind"] is None
        }
        all_deps = {d["name"]: d["kind"] for d in p["dependencies"]}
        crates[p["name"]] = {
            "deps": deps,
            "all": all_deps,
            "dir": Path(p["manifest_path"]).parent,
            "lib": any("lib" in t["kind"] or "cdylib" in t["kind"] for t in p["targets"]),
        }
    return crates


def rows(text: str, head: str):
    """The rows of the first table after the line starting with `head`."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(head))
    out = []
    in_table = False
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            in_table = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set(cells[0]) <= set("-: "):
                out.append(cells)
        elif in_table:
            break
    return out


def code_files(dir: Path):
    for f in sorted((dir / "src").rglob("*.rs")):
        if f.name == "tests.rs" or "/bin/" in str(f) or f.name == "main.rs":
            continue
        yield f


def size_claims(doc: str):
    """The sizes and counts the text states: `src/qemu/`'s files under N
    lines with the named files' counts, and the files `git grep -il
    hypercube` lists outside tests."""
    wrong = []
    flat = " ".join(doc.split())
    m = re.search(r"`src/qemu/` is a folder by job, each file under (\d+) lines \(([^)]*)\)", flat)
    if not m:
        wrong.append("sizes: the `src/qemu/` size claim is gone (update this check)")
    else:
        limit, named = int(m.group(1)), m.group(2)
        qemu = ROOT / "qemu-adapter" / "src" / "qemu"
        for f in sorted(qemu.glob("*.rs")):
            n = len(f.read_text().splitlines())
            if n >= limit:
                wrong.append(f"sizes: {f.relative_to(ROOT)} has {n} lines, not under {limit}")
        for name, n in re.findall(r"`(\w+\.rs)` (\d+)", named):
            have = len((qemu / name).read_text().splitlines()) if (qemu / name).exists() else None
            if have != int(n):
                wrong.append(f"sizes: `{name}` has {have} lines, the text says {n}")
    m = re.search(r"`git grep -il hypercube -- '\*\.rs'` outside tests lists (\d+) today", flat)
    if m:
        listed = subprocess.run(
            ["git", "grep", "-il", "hypercube", "--", "*.rs"],
            cwd=ROOT, capture_output=True, text=True,
        ).stdout.split()
        outside = [f for f in listed if "/tests/" not in f and not f.endswith("tests.rs")]
        if len(outside) != int(m.group(1)):
            wrong.append(f"sizes: `git grep -il hypercube` lists {len(outside)} files outside tests, the text says {m.group(1)}")
    else:
        wrong.append("sizes: the hypercube count claim is gone (update this check)")
    return wrong


def main() -> int:
    crates = workspace()
    doc = DOC.read_text()
    wrong = []

    layer_rows = rows(doc, "| crate (dir) |")
    named = {}
    for cells in layer_rows:
        for name in re.findall(r"`([a-z0-9-]+)` \(`", cells[0]) or re.findall(
            r"`([a-z0-9-]+)`", cells[0]
        ):
            named[name] = cells[-1]
        if cells[0] == "`sim-server`":
            named["sim-server"] = cells[-1]
    for name, c in sorted(crates.items()):
        if name not in named:
            wrong.append(f"Layers: no row names the crate `{name}`")
            continue
        cell = named[name]
        if cell.startswith("all of the above"):
            continue
        words = set(re.findall(r"[a-z0-9-]+", cell))
        if cell.startswith("none") and c["deps"]:
            wrong.append(f"Layers: `{name}` says none, depends on {sorted(c['deps'])}")
        for d in sorted(c["deps"]):
            if short(d) not in words and d not in words:
                wrong.append(f"Layers: `{name}` depends on `{d}`, which its row does not name")

    # The traits at the bottom: where a row names its implementors as
    # types, every `impl TRAIT for TYPE` of the workspace names one of them.
    impls = {}
    impl_re = re.compile(
        r"\bimpl(?:<[^{]*?>)?\s+(?:[\w:]+::)?(\w+)(?:<[^{]*?>)?\s+for\s+(?:[\w:]+::)?(\w+)"
    )
    for c in crates.values():
        for f in code_files(c["dir"]):
            for trait, ty in impl_re.findall(without_tests(f.read_text())):
                impls.setdefault(trait, set()).add(ty)
    for cells in rows(doc, "| trait | crate, file | implemented by |"):
        named_types = set(re.findall(r"`([A-Z][A-Za-z]*)`", cells[2]))
        if not named_types:
            continue
        for trait in re.findall(r"`(\w+)`", cells[0]):
            if trait not in impls:
                wrong.append(f"traits: no `impl {trait} for` in the code")
            for ty in sorted(impls.get(trait, set()) - named_types):
                wrong.append(f"traits: `{ty}` implements `{trait}`, which its row does not name")

    error_rows = rows(doc, "| crate | error enums |")
    listed = {}
    for cells in error_rows:
        crate = cells[0].strip("`")
        listed[crate] = set(re.findall(r"`([A-Z][A-Za-z]*)`", cells[1]))
    derive = re.compile(
        r"#\[derive\([^\]]*\bError\b[^\]]*\)\]\s*(?:#\[[^\]]*\]\s*)*pub (?:enum|struct) (\w+)"
    )
    for name, c in sorted(crates.items()):
        if name in BINARIES:
            continue
        found = set()
        for f in code_files(c["dir"]):
            found |= set(derive.findall(without_tests(f.read_text())))
        types = set()
        for f in code_files(c["dir"]):
            types |= set(re.findall(r"\b(?:enum|struct) (\w+)", without_tests(f.read_text())))
        for e in sorted(listed.get(name, set()) - types):
            wrong.append(f"errors: `{name}`'s row names `{e}`, which the crate does not define")
        if not found:
            continue
        have = listed.get(name)
        if have is None:
            wrong.append(f"errors: `{name}` has {sorted(found)} and no row")
            continue
        for e in sorted(found - have):
            wrong.append(f"errors: `{name}`'s `{e}` is not in its row")

    string_result = re.compile(
        r"\bpub (?:async |const )?fn [^;{]*->\s*Result<[^;{]*,\s*String>"
    )
    for name, c in sorted(crates.items()):
        if name in BINARIES:
            continue
        for f in code_files(c["dir"]):
            for m in string_result.finditer(without_tests(f.read_text())):
                line = f.read_text()[: m.start()].count("\n") + 1
                wrong.append(f"Result<_, String>: {f.relative_to(ROOT)}:{line}")
        if c["all"].get("anyhow", "absent") is None and c["lib"]:
            wrong.append(f"anyhow: the library `{name}` depends on it")

    wrong += size_claims(doc)

    for w in wrong:
        print(w)
    print(
        f"architecture-check: {len(crates)} crates, "
        f"{'ok' if not wrong else str(len(wrong)) + ' contradictions'}"
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
