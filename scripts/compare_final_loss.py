#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares the final loss of training runs.

Reads the summary line `trained N steps in T s, final loss L` that a
compiled model's `train` command prints from each file given and says
whether every L is within --rtol (default 1e-5, relative) of the first.
Exits non-zero when a file has no such line or a loss differs.

  compare_final_loss.py [--rtol R] RUN.txt RUN.txt...
"""

import argparse
import re
import sys

LINE = re.compile(r"^trained (\d+) steps in \S+ s, final loss (\S+)$")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("runs", nargs="+")
    args = p.parse_args(argv)
    steps, losses = [], []
    for path in args.runs:
        with open(path) as f:
            found = [LINE.match(l.strip()) for l in f]
        found = [m for m in found if m]
        if not found:
            print(f"{path}: no 'trained N steps ..., final loss L' line")
            return 1
        steps.append(found[-1].group(1))
        losses.append(float(found[-1].group(2)))
    ref = losses[0]
    worst = max(abs(x - ref) / max(abs(ref), 1e-30) for x in losses)
    if worst > args.rtol:
        print(f"final losses differ: {losses} (relative {worst:.3g})")
        return 1
    print(f"final losses agree within {args.rtol:g}: {len(losses)} runs, "
          f"trained {' '.join(sorted(steps, key=int))} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
