"""Helpers shared by the scripts that read fsin's JSON reports: a key
found anywhere in a report, a script's usage taken from its opening
comment, an MPI-level run's replay keys, and its Dimemas trace cut."""
import json, re, shlex, sys


def find(o, key):
    """The value of `key` in report `o`, at whatever depth (the first met,
    depth first), or None."""
    if isinstance(o, dict):
        for k, v in o.items():
            if k == key:
                return v
            x = find(v, key)
            if x is not None:
                return x
    return None


def usage_or_exit(script, args, least):
    """Prints `script`'s opening comment (its usage) and exits when `args`
    has fewer than `least` words or asks for help (-h, --help): to stdout
    with status 0 when asked, else to stderr with status 2."""
    if len(args) >= least and args[0] not in ("-h", "--help"):
        return
    asked = args[:1] in (["-h"], ["--help"])
    with open(script) as own:
        lines = own.read().splitlines()[1:]
    usage = [l[2:] for l in lines[: next(i for i, l in enumerate(lines) if not l.startswith("#"))]]
    print("\n".join(usage), file=sys.stdout if asked else sys.stderr)
    sys.exit(0 if asked else 2)


def replay_keys(report, extra):
    """An MPI-level run's report (`fsin qemu --trace-level mpi`'s JSON at
    path `report`), its `mpi_trace`, and the keys of the replay command
    it gives (`fsin run KEY=VALUE ...`), each of `extra` (KEY=VALUE)
    replacing or added after them: where a key stands matters
    (`mpi_profile` drops the costs before it)."""
    live = json.load(open(report))
    t = find(live, "mpi_trace")
    cmd = shlex.split(t["replay"])
    assert cmd[:2] == ["fsin", "run"], cmd
    kv = dict(a.split("=", 1) for a in cmd[2:])
    for a in extra:
        k, v = a.split("=", 1)
        kv.pop(k, None)
        kv[k] = v
    return live, t, kv


def cut_dimemas(dim, path, keep):
    """Writes to `path` the Dimemas trace `dim` with each task's records
    cut to the first `keep(records)` of them (`records`: the task's
    lines, communicators and offsets left out), its header's offset and
    the `s:` lines made right."""
    lines = open(dim).read().splitlines()
    head = lines[0]
    body = [l for l in lines[1:] if not l.startswith("s:")]
    per = {}
    for l in body:
        if not l.startswith("d:"):
            per.setdefault(int(l.split(":")[1]), []).append(l)
    text = "".join(l + "\n" for l in body if l.startswith("d:"))
    starts = []
    for task in sorted(per):
        starts.append(len(text))
        text += "".join(l + "\n" for l in per[task][: keep(per[task])])
    # The header's offset of the first s: line, 20 digits.
    header_len = len(re.sub(r",\d{20}:", "," + "0" * 20 + ":", head)) + 1
    head = re.sub(r",\d{20}:", ",%020d:" % (header_len + len(text)), head)
    offsets = "".join("s:%d:%d\n" % (task, header_len + s) for task, s in enumerate(starts))
    open(path, "w").write(head + "\n" + text + offsets)
