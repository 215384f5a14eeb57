#!/usr/bin/python3
#===- bench/bench_util.py - Helpers of bench/cpu_inference.sh ------------===#
# SPDX-License-Identifier: Apache-2.0
#
# The numpy side of the CPU inference benchmark:
#
#   dist-args MANIFEST INPUT_DIR
#       Prints the `--input NAME=PATH` arguments, one word per line, that a
#       dist-opt executable takes according to its manifest (NAME.json),
#       with INPUT_DIR/<name>.npy as scripts/make_model_inputs.py names
#       them.
#   compare ACTUAL_DIR REFERENCE_DIR [--rtol R] [--atol A] [--scaled S]
#       Compares every REFERENCE_DIR/*.npy with the file of the same name in
#       ACTUAL_DIR and prints `max_abs=<x> max_rel=<y> max_scaled=<z>
#       ok=<0|1>` (and `note=<why>` when a file is missing or a dtype or
#       shape differs). A float output passes when |actual - reference| <=
#       atol + rtol * |reference| holds everywhere (numpy.allclose; rtol
#       1e-4, atol 1e-5 by default) or when max |actual - reference| /
#       max |reference| (max_scaled) is at most S (1e-4 by default); integer
#       and bool outputs must be equal. max_rel is the largest
#       |actual - reference| / |reference| over elements whose reference is
#       not 0.
#   report RESULTS_TSV
#       Prints one table per thread count from the rows that
#       bench/cpu_inference.sh collected, and the geometric mean of the
#       speedups (onnxruntime time / dist-opt time).
#
# Errors: one `error:` line on stderr, exit 1.

import argparse
import glob
import json
import math
import os
import re
import sys

import numpy as np

# The columns of the results file, tab-separated, one row per model and
# thread count. Empty fields are written as '-'.
COLUMNS = ("threads", "model", "dist_status", "dist_ms", "dist_p90_ms",
           "ort_status", "ort_ms", "ort_p90_ms", "max_abs", "max_rel", "ok",
           "compile_s", "ort_vs_torch")


def fail(message):
    print("error: %s" % message, file=sys.stderr)
    sys.exit(1)


def file_name(name):
    """The file name scripts/make_model_inputs.py gives an input."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"


#===----------------------------------------------------------------------===#
# dist-args
#===----------------------------------------------------------------------===#


def dist_args(a):
    try:
        with open(a.manifest) as f:
            manifest = json.load(f)
        inputs = [i["name"] for i in manifest["inputs"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail("bad manifest %s: %s" % (a.manifest, e))
    for name in inputs:
        path = os.path.join(a.input_dir, file_name(name))
        if not os.path.exists(path):
            fail("no input file %s for input '%s'" % (path, name))
        print("--input")
        print("%s=%s" % (name, path))


#===----------------------------------------------------------------------===#
# compare
#===----------------------------------------------------------------------===#


def compare(a):
    refs = sorted(glob.glob(os.path.join(a.reference_dir, "*.npy")))
    if not refs:
        fail("no .npy files in %s" % a.reference_dir)
    max_abs, max_rel, max_scaled, ok, notes = 0.0, 0.0, 0.0, True, []
    for ref_path in refs:
        name = os.path.basename(ref_path)
        path = os.path.join(a.actual_dir, name)
        if not os.path.exists(path):
            ok = False
            notes.append("no " + name)
            continue
        ref = np.load(ref_path)
        act = np.load(path)
        if act.dtype != ref.dtype or act.shape != ref.shape:
            ok = False
            notes.append("%s is %s%s, expected %s%s" % (
                name, act.dtype, list(act.shape), ref.dtype, list(ref.shape)))
            continue
        if ref.dtype.kind not in "fc":
            diff = np.abs(act.astype(np.float64) - ref.astype(np.float64))
            ok = ok and bool(np.array_equal(act, ref))
        else:
            r = ref.astype(np.float64)
            with np.errstate(invalid="ignore"):
                diff = np.abs(act.astype(np.float64) - r)
            # Within tolerance element by element, or against the output's
            # scale: a deep network's outputs near zero carry the rounding
            # of values a thousand times larger (BERT-base's hidden states:
            # 1.3e-5 between onnxruntime and PyTorch, on values up to 5).
            peak = float(np.nanmax(np.abs(r))) if r.size else 0.0
            worst = float(np.nanmax(diff)) if diff.size else 0.0
            close = bool(np.allclose(act, ref, rtol=a.rtol, atol=a.atol,
                                     equal_nan=True))
            scaled = worst / peak if peak > 0 else (0.0 if worst == 0 else
                                                    float("inf"))
            max_scaled = max(max_scaled, scaled)
            ok = ok and (close or (scaled <= a.scaled and
                                   bool(np.isnan(act).sum() ==
                                        np.isnan(ref).sum())))
            nonzero = r != 0
            if nonzero.any():
                with np.errstate(invalid="ignore"):
                    max_rel = max(max_rel, float(np.nanmax(
                        diff[nonzero] / np.abs(r[nonzero]))))
        if diff.size:
            max_abs = max(max_abs, float(np.nanmax(diff)))
    line = "max_abs=%.3g max_rel=%.3g max_scaled=%.3g ok=%d" % (
        max_abs, max_rel, max_scaled, ok)
    if notes:
        line += " note=" + ";".join(notes).replace(" ", "_")
    print(line)


#===----------------------------------------------------------------------===#
# report
#===----------------------------------------------------------------------===#


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def latency(median, p90, status):
    """A table cell: `median/p90`, or why there is no time."""
    if not median:
        return status
    p90 = number(p90)
    return "%.3f/%s" % (median, "%.3f" % p90 if p90 is not None else "-")


def report(a):
    rows = []
    with open(a.results) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) != len(COLUMNS):
                fail("%s: bad row: %r" % (a.results, line))
            rows.append(dict(zip(COLUMNS, fields)))
    if not rows:
        fail("%s has no rows" % a.results)

    headers = ("model", "dist-opt ms p50/p90", "onnxruntime ms p50/p90",
               "speedup",
               "max abs diff", "max rel diff", "check", "compile s")
    thread_counts = []
    for r in rows:
        if r["threads"] not in thread_counts:
            thread_counts.append(r["threads"])
    for t in thread_counts:
        table, speedups = [], []
        for r in (r for r in rows if r["threads"] == t):
            dist = number(r["dist_ms"]) if r["dist_status"] == "ok" else None
            ort = number(r["ort_ms"]) if r["ort_status"] == "ok" else None
            speedup = "-"
            if dist and ort:
                speedups.append(ort / dist)
                speedup = "%.2fx" % (ort / dist)
            check = "-"
            if r["ok"] in ("0", "1"):
                check = "pass" if r["ok"] == "1" else "FAIL"
            table.append((
                r["model"],
                latency(dist, r["dist_p90_ms"], r["dist_status"]),
                latency(ort, r["ort_p90_ms"], r["ort_status"]),
                speedup, r["max_abs"], r["max_rel"], check, r["compile_s"]))
        widths = [max(len(h), *(len(row[i]) for row in table))
                  for i, h in enumerate(headers)]
        print()
        print("threads=%s (latency per inference, median/p90)" % t)
        fmt = "  ".join("%%-%ds" % w if i == 0 else "%%%ds" % w
                        for i, w in enumerate(widths))
        print(fmt % headers)
        print("  ".join("-" * w for w in widths))
        for row in table:
            print(fmt % row)
        if speedups:
            geo = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
            print("geomean speedup (onnxruntime ms / dist-opt ms), threads=%s:"
                  " %.2fx over %d of %d models" % (t, geo, len(speedups),
                                                   len(table)))
        else:
            print("geomean speedup, threads=%s: - (no model ran with both)" % t)
    torch_checks = ["%s %s" % (r["model"], r["ort_vs_torch"]) for r in rows
                    if r["threads"] == thread_counts[0]]
    print()
    print("onnxruntime vs PyTorch, max abs diff: " + ", ".join(torch_checks))


def main():
    p = argparse.ArgumentParser(description="Helpers of cpu_inference.sh.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("dist-args")
    s.add_argument("manifest")
    s.add_argument("input_dir")
    s = sub.add_parser("compare")
    s.add_argument("actual_dir")
    s.add_argument("reference_dir")
    s.add_argument("--rtol", type=float, default=1e-4)
    s.add_argument("--atol", type=float, default=1e-5)
    s.add_argument("--scaled", type=float, default=1e-4)
    s = sub.add_parser("report")
    s.add_argument("results")
    a = p.parse_args()
    {"dist-args": dist_args, "compare": compare, "report": report}[
        a.command](a)


if __name__ == "__main__":
    main()
