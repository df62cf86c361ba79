"""Helpers shared by the scripts that read fsin's JSON reports: a key
found anywhere in a report, and a script's usage taken from its opening
comment."""
import sys


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
