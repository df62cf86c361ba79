"""What the project's scripts read of a Rust file (scripts/import-graph.py,
scripts/architecture-check.py, scripts/sizes.py): its code without its
tests. Python 3 only."""


def without_tests(text, keep_lines=False):
    """`text` without its `#[cfg(test)]` items (a block or `mod x;`); with
    `keep_lines`, their lines left blank so that the others keep their
    numbers."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "#[cfg(test)]":
            j = i + 1
            if j < len(lines) and lines[j].rstrip().endswith(";"):
                out.extend([""] * (j + 1 - i) if keep_lines else [])
                i = j + 1
                continue
            depth, started = 0, False
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                started = started or "{" in lines[j]
                if started and depth <= 0:
                    break
                j += 1
            out.extend([""] * (j + 1 - i) if keep_lines else [])
            i = j + 1
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)
