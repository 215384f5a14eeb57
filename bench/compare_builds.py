#!/usr/bin/python3
#===- bench/compare_builds.py - Two dist-opt builds on the benchmark models -===#
# SPDX-License-Identifier: Apache-2.0
#
# Compiles the four benchmark models (bench/cpu_training.py's MLP, GPT-style
# LM, residual CNN and DLRM, exported in training mode with their data) with
# two dist-opt builds, for inference and for training (AdamW), and checks
# that the artifacts behave identically: inference outputs equal bit for
# bit on the same inputs, and training losses and trained parameters equal
# bit for bit after the same steps. It also times every compile (the
# fastest of --repeats, alternating the builds) and prints both times and
# their ratio: a redesign of the compiler's middle must change neither.
#
# Usage: /usr/bin/python3 bench/compare_builds.py --before OLD/bin/dist-opt \
#            [--after build/bin/dist-opt] [--work DIR] [--repeats 3] [--steps 8]
# Exit status 1 when any output differs. One thread everywhere.
#
#===----------------------------------------------------------------------===#
import argparse
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import cpu_training  # noqa: E402  (export_and_data, LOSS)


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, **kw)
    if r.returncode != 0:
        sys.exit("compare_builds: %s failed (%d): %s" %
                 (" ".join(cmd), r.returncode, r.stderr.strip()[-2000:]))
    return r


def compile_timed(dist_opt, args, out_dir):
    t0 = time.perf_counter()
    run([dist_opt] + args + ["-o", out_dir, "--name", "m"])
    return time.perf_counter() - t0


def same_files(a_dir, b_dir, names):
    for n in names:
        a = np.load(os.path.join(a_dir, n))
        b = np.load(os.path.join(b_dir, n))
        if a.dtype != b.dtype or a.shape != b.shape or \
                a.tobytes() != b.tobytes():
            return False, n
    return True, ""


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--before", required=True, help="the old dist-opt")
    p.add_argument("--after", default=os.path.join(HERE, "..", "build", "bin",
                                                   "dist-opt"))
    p.add_argument("--work", default="/tmp/dist-compare")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--models", nargs="*", default=list(cpu_training.MODELS))
    a = p.parse_args()
    builds = {"before": os.path.abspath(a.before),
              "after": os.path.abspath(a.after)}
    os.makedirs(a.work, exist_ok=True)
    rows, failures = [], 0
    for name in a.models:
        path, batch, files, label = cpu_training.export_and_data(name, a.work)
        base = os.path.join(a.work, name)
        # One batch of inputs for inference.
        inputs = []
        for iname, f in files.items():
            one = os.path.join(base, iname + ".b1.npy")
            np.save(one, np.load(f)[:batch])
            inputs += ["--input", "%s=%s" % (iname, one)]
        modes = {
            "inference": [path],
            "training": [path, "--train", "--loss=" + cpu_training.LOSS[name],
                         "--optimizer=adamw", "--lr=1e-3"],
        }
        for mode, args in modes.items():
            times = {k: [] for k in builds}
            for rep in range(a.repeats):
                for which, exe in builds.items():
                    out = os.path.join(base, "%s-%s" % (mode, which))
                    times[which].append(compile_timed(exe, args, out))
            dirs = {w: os.path.join(base, "%s-%s" % (mode, w)) for w in builds}
            if mode == "inference":
                for w, d in dirs.items():
                    run([os.path.join(d, "m")] + inputs +
                        ["--threads", "1", "--output-dir",
                         os.path.join(d, "out")])
                outs = sorted(os.listdir(os.path.join(dirs["before"], "out")))
                same, what = same_files(os.path.join(dirs["before"], "out"),
                                        os.path.join(dirs["after"], "out"),
                                        outs)
            else:
                logs = {}
                for w, d in dirs.items():
                    log = os.path.join(d, "log.jsonl")
                    data = ["--data", "label=" + label]
                    for iname, f in files.items():
                        data += ["--data", "%s=%s" % (iname, f)]
                    run([os.path.join(d, "m"), "train"] + data +
                        ["--batch-size", str(batch), "--steps", str(a.steps),
                         "--threads", "1", "--quiet", "--log", log,
                         "--save-params", os.path.join(d, "params")])
                    with open(log) as fh:
                        logs[w] = [line.split('"loss":')[1].split(",")[0]
                                   for line in fh if '"loss"' in line]
                params = sorted(os.listdir(os.path.join(dirs["before"],
                                                        "params")))
                same = logs["before"] == logs["after"]
                what = "" if same else "losses"
                if same:
                    same, what = same_files(
                        os.path.join(dirs["before"], "params"),
                        os.path.join(dirs["after"], "params"), params)
            failures += 0 if same else 1
            tb, ta = min(times["before"]), min(times["after"])
            rows.append((name, mode, tb, ta, ta / tb,
                         "identical" if same else "DIFFERENT (%s)" % what))
    print("| model | artifact | compile s, before | compile s, after | "
          "after / before | outputs |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %.2f | %.2f | %.2f | %s |" % r)
    print("%d of %d artifacts identical" % (len(rows) - failures, len(rows)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
