#===- scripts/script_util.py - Helpers shared by the check scripts -------===#
# SPDX-License-Identifier: Apache-2.0
#
# Small helpers that the check scripts (scripts/onnx_conformance.py,
# grad_check.py, train_check.py, ps_check.py, elastic_check.py) share (they
# import this module from their own directory).

import argparse


def one_line(text, limit=300):
    """`text` on one line (runs of whitespace become one space), cut to
    `limit` characters with a trailing "..."."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def positive_int(s):
    """argparse type: an integer > 0."""
    v = int(s)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, "
                                          f"got '{s}'")
    return v


class Checks:
    """Counts checks and prints one `NAME: DETAIL PASS|FAIL` line each."""

    def __init__(self):
        self.passed = self.failed = 0

    def report(self, name, ok, detail):
        print(f"{name}: {detail} {'PASS' if ok else 'FAIL'}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
