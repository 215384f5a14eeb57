#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks data-parallel training and inference against one process.

For each model (train_check.py's MLP and GPT-style LM, exported with a
static batch, and its export variants: a dynamic batch axis, Gemm with
scales and either transposition, a tied output layer) and optimizer, compiles the model twice with dist-opt --train:
once as is and once with each --mesh layout (dp=2, tp=2, dp=2,tp=2, ...).
It then trains the plain artifact in one process and the partitioned one
under `mpirun -np <ranks of the mesh>` on the same data
for the same steps, with the same global batch, and compares:
  - every step's loss (relative error <= --rtol, default 1e-5);
  - the final parameters written by --save-params (|a - b| <= rtol * max|a|
    per tensor);
  - the inference outputs of the partitioned artifact under mpirun against
    the plain artifact's (same rule).
With --clip-grad-norm both artifacts clip the global gradient norm, which
must be the norm of the averaged gradient, summed over tensor-parallel
shards and ZeRO's row splits. Prints one line per check and `N passed, M failed`; exits
non-zero when a check fails.
"""

import argparse
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_check  # noqa: E402
from train_check import StepError, run  # noqa: E402

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl",
          "self,vader", "--bind-to", "none"]


def max_rel(a, b):
    """max |a - b| / max |a|; inf where either holds NaN (a NaN would
    otherwise compare false and drop out of the maxima below)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if not a.size:
        return 0.0
    if np.isnan(a).any() or np.isnan(b).any():
        return float("inf")
    scale = max(float(np.abs(a).max()), 1e-30)
    return float(np.abs(a - b).max()) / scale


def mesh_ranks(mesh):
    n = 1
    for part in mesh.split(","):
        n *= int(part.split("=")[1])
    return n


def check(model_name, optimizer, mesh, args, work):
    ranks = mesh_ranks(mesh)
    spec = train_check.make_spec(model_name)
    hp = train_check.hyperparameters(optimizer, args)
    d = os.path.join(work, f"{model_name}_{optimizer}_{mesh.replace(',', '_').replace('=', '')}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    x_path = os.path.join(d, spec.input_name + ".npy")
    y_path = os.path.join(d, "label.npy")
    np.save(x_path, spec.x)
    np.save(y_path, spec.y)
    onnx_path = os.path.join(d, "model.onnx")
    train_check.export_onnx(spec, onnx_path)
    flags = train_check.compile_args(optimizer, hp, args)
    one = os.path.join(d, "one")
    dp = os.path.join(d, "dp")
    run([args.dist_opt, onnx_path] + flags + ["-o", one, "--name", "model"],
        args.timeout, "dist-opt --train", args.verbose)
    # Pipeline stages build the step at one micro-batch: a dynamic batch
    # is bound to the global batch the runs use.
    if "pp=" in mesh and spec.dynamic_batch:
        flags = flags + ["--global-batch", str(spec.batch)]
    run([args.dist_opt, onnx_path] + flags +
        args.compile_flag + ["--mesh", mesh, "--grad-bucket-mb",
         str(args.bucket_mb), "-o", dp, "--name", "model"],
        args.timeout, f"dist-opt --train --mesh {mesh}", args.verbose)

    def train(exe_dir, tag, launcher):
        log = os.path.join(d, f"{tag}.jsonl")
        save = os.path.join(d, f"{tag}_params")
        run(launcher + [os.path.join(exe_dir, "model"), "train",
                        "--data", f"{spec.input_name}={x_path}",
                        "--data", f"label={y_path}",
                        "--batch-size", str(spec.batch),
                        "--steps", str(args.steps), "--log", log,
                        "--save-params", save, "--threads", "1", "--quiet"],
            args.timeout, f"train ({tag})", args.verbose)
        losses, _ = train_check.read_log(log, args.steps)
        return losses, save

    ref_losses, ref_save = train(one, "one", [])
    got_losses, got_save = train(dp, "dp", MPIRUN + ["-np", str(ranks)])
    loss_err = max(max_rel([a], [b]) for a, b in zip(ref_losses, got_losses))
    param_err = 0.0
    names = sorted(os.listdir(ref_save))
    if not names or sorted(os.listdir(got_save)) != names:
        raise StepError("the two runs saved different parameter files")
    worst_param = "none"
    for n in names:
        err = max_rel(np.load(os.path.join(ref_save, n)),
                      np.load(os.path.join(got_save, n)))
        if err > param_err:
            param_err, worst_param = err, f"{n} {err:.3g}"

    # Inference: the partitioned artifact under mpirun against one process.
    # A model with a dynamic batch axis runs another batch size than the
    # one it trained with: an odd one, which dp splits unevenly.
    sample = os.path.join(d, "sample.npy")
    np.save(sample, spec.x[:spec.batch // 2 + 1 if spec.dynamic_batch
                           else spec.batch])
    out_one = os.path.join(d, "out_one")
    out_dp = os.path.join(d, "out_dp")
    run([os.path.join(one, "model"), "--input",
         f"{spec.input_name}={sample}", "--output-dir", out_one,
         "--threads", "1"], args.timeout, "inference (one)", args.verbose)
    run(MPIRUN + ["-np", str(ranks), os.path.join(dp, "model"),
                  "--input", f"{spec.input_name}={sample}", "--output-dir",
                  out_dp, "--threads", "1"],
        args.timeout, "inference (dp)", args.verbose)
    infer_err = 0.0
    for n in sorted(os.listdir(out_one)):
        infer_err = max(infer_err, max_rel(np.load(os.path.join(out_one, n)),
                                           np.load(os.path.join(out_dp, n))))
    param_rtol = loss_rtol = args.rtol
    if optimizer in ("adam", "adamw") and args.adam_param_rtol is not None:
        param_rtol = args.adam_param_rtol
    if optimizer in ("adam", "adamw") and args.adam_loss_rtol is not None:
        loss_rtol = args.adam_loss_rtol
    ok = (loss_err <= loss_rtol and param_err <= param_rtol and
          infer_err <= args.rtol)
    line = (f"{model_name} {optimizer} {mesh}: steps={args.steps} "
            f"max_loss_rel_err={loss_err:.3g} "
            f"max_param_rel_err={param_err:.3g} "
            f"max_infer_rel_err={infer_err:.3g} {'PASS' if ok else 'FAIL'}")
    print(line, flush=True)
    if not ok:
        # Also on stderr: a test pipes stdout into FileCheck, whose report
        # shows only where it stopped matching, not this line.
        print(f"{line} (worst parameter: {worst_param}; work dir {d})",
              file=sys.stderr, flush=True)
    return ok


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dist-opt", default=train_check.DEFAULT_DIST_OPT)
    p.add_argument("--work", required=True, metavar="DIR")
    p.add_argument("--model", nargs="+",
                   choices=(train_check.MODELS + train_check.EXPORT_VARIANTS +
                            train_check.DEEP_VARIANTS),
                   default=["mlp", "gpt"])
    p.add_argument("--optimizer", nargs="+", choices=train_check.OPTIMIZERS,
                   default=["sgd", "adamw"])
    p.add_argument("--mesh", nargs="+", default=["dp=2"],
                   help="layouts to check (--mesh of dist-opt), e.g. dp=2 "
                        "tp=2 dp=2,tp=2")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--compile-flag", action="append", default=[],
                   help="extra dist-opt flag for the partitioned artifact "
                        "(e.g. --compile-flag=--zero=1)")
    p.add_argument("--adam-param-rtol", type=float, default=None,
                   help="bound on the final parameters with Adam/AdamW "
                        "(default: --rtol); Adam divides each gradient by "
                        "its running RMS, so rounding differences in tiny "
                        "gradients become visible in the parameters")
    p.add_argument("--adam-loss-rtol", type=float, default=None,
                   help="bound on the losses with Adam/AdamW (default: "
                        "--rtol): the parameters' larger differences (see "
                        "--adam-param-rtol) reach the later steps' losses")
    p.add_argument("--bucket-mb", type=float, default=0.05,
                   help="gradient bucket size (small: several buckets)")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--clip-grad-norm", type=float, metavar="MAX_NORM",
                   help="both artifacts clip the global gradient norm")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    # The hyperparameters train_check.py uses by default.
    defaults = train_check.parse_args([])
    for k in ("lr", "weight_decay", "lr_schedule", "warmup_steps"):
        setattr(args, k, getattr(defaults, k))
    os.makedirs(args.work, exist_ok=True)
    passed = failed = 0
    for mesh in args.mesh:
        for m in args.model:
            for o in args.optimizer:
                try:
                    ok = check(m, o, mesh, args, args.work)
                except StepError as e:
                    print(f"{m} {o} {mesh}: error: {e} FAIL", flush=True)
                    print(f"{m} {o} {mesh}: error: {e}", file=sys.stderr,
                          flush=True)
                    ok = False
                passed += ok
                failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
