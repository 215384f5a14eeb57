#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cuda_bench_models.py WORK DIST_OPT SCRIPTS: exports the benchmark models
in training mode (bench/cpu_training.py's export_and_data), compiles each
training step with --target=cuda:sm_90 (fp32; the MLP and the GPT also
bf16) and prints, per compile, "<model> <precision>: sm_90 cubins" when
the executable holds sm_90 cubins and nothing else, the compile's
warnings and errors as they came otherwise, "FAIL ..." on a failed
compile."""
import os
import subprocess
import sys

work, dist_opt, scripts = sys.argv[1], sys.argv[2], sys.argv[3]
bench = os.path.join(os.path.dirname(os.path.abspath(scripts)), "bench")
sys.path.insert(0, bench)
sys.path.insert(0, scripts)
import cpu_training  # noqa: E402

for name in ("dlrm", "gpt", "mlp", "resnet"):
    path, _, _, _ = cpu_training.export_and_data(name, work)
    for precision in ("fp32", "bf16") if name in ("mlp", "gpt") else ("fp32",):
        out = os.path.join(work, "%s-%s" % (name, precision))
        p = subprocess.run(
            [dist_opt, path, "--train", "--loss=" + cpu_training.LOSS[name],
             "--optimizer=adamw", "--target=cuda:sm_90",
             "--precision=" + precision, "-o", out],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            universal_newlines=True)
        sys.stdout.write(p.stdout)
        if p.returncode != 0:
            print("FAIL %s %s: exit %d" % (name, precision, p.returncode))
            continue
        images = subprocess.run(
            [sys.executable, os.path.join(scripts, "cuda_images.py"),
             os.path.join(out, name)],
            stdout=subprocess.PIPE, universal_newlines=True).stdout.split("\n")
        archs = {line.split()[0] for line in images if line.strip()}
        if archs == {"sm_90"}:
            print("%s %s: sm_90 cubins" % (name, precision))
        else:
            print("FAIL %s %s: images %s" % (name, precision, sorted(archs)))
        sys.stdout.flush()
