"""The Python module's speed goals, measured in one sitting:

1. A call adds no more than 5% to the engine's time: `fsin.run` on
   torus_16_16 load=0.3 cycles=20000 against `fsin run --json` with the
   same keys, alternated, each timed whole (the command's process start
   included, the call's conversion of the report included).
2. A sweep of 8 points with processes=2 takes at most 0.6x the time of
   processes=1.

    python python/bench/goals.py [--fsin target/release/fsin] [--repeat 7]

Prints the medians and ratios, and the JSON of them on the last line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

import fsin

KEYS = {"topo": "torus_16_16", "load": 0.3, "cycles": 20000}


def timed(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsin", default="target/release/fsin", help="the fsin binary")
    ap.add_argument("--repeat", type=int, default=7, help="runs of each kind")
    a = ap.parse_args()
    argv = [a.fsin, "run", "--json", "-q", *(f"{k}={v}" for k, v in KEYS.items())]
    cli, py = [], []
    for _ in range(a.repeat):
        cli.append(timed(lambda: subprocess.run(argv, check=True, capture_output=True)))
        py.append(timed(lambda: fsin.run(**KEYS)))
    points = {"load": [0.05 * (i + 1) for i in range(8)]}
    sweep_keys = {"topo": "torus_16_16", "cycles": 20000}
    one = timed(lambda: fsin.sweep(points, processes=1, **sweep_keys))
    two = timed(lambda: fsin.sweep(points, processes=2, **sweep_keys))
    out = {
        "run_cli_s": statistics.median(cli),
        "run_python_s": statistics.median(py),
        "run_ratio": statistics.median(py) / statistics.median(cli),
        "sweep_1_s": one,
        "sweep_2_s": two,
        "sweep_ratio": two / one,
    }
    print(f"fsin run (median of {a.repeat}): command {out['run_cli_s']:.3f} s, Python {out['run_python_s']:.3f} s, ratio {out['run_ratio']:.3f} (goal <= 1.05)")
    print(f"sweep of 8 points: processes=1 {one:.2f} s, processes=2 {two:.2f} s, ratio {out['sweep_ratio']:.3f} (goal <= 0.6)")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
