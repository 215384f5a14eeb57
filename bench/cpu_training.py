#!/usr/bin/python3
#===- bench/cpu_training.py - dist-opt training against PyTorch eager ----===#
# SPDX-License-Identifier: Apache-2.0
#
# Training step time of dist-opt against PyTorch eager on the four models of
# the CPU inference benchmark (bench/export_bench_models.py: MLP
# 784-512-512-10 at batch 64, GPT-style LM d=256 at batch 4 x 64 tokens,
# residual CNN with BatchNorm at batch 8, DLRM with 8 embedding tables at
# batch 128), same initial weights, same batches, same optimizer (AdamW,
# lr 1e-3) and the same thread count, in one run.
#
# Each model is exported with PyTorch in training mode (BatchNorm kept),
# compiled with `dist-opt --train` (timed), trained for WARMUP + STEPS steps
# by the executable (`train --log`) and by PyTorch in a child process. Step
# time is the median over the last STEPS steps (dist-opt: batch /
# samples_per_s of each logged step; PyTorch: wall time of forward,
# backward and optimizer step). Peak memory is each process's maximum
# resident set size (GNU time, Debian package `time`). The first step's losses of both are compared
# as a sanity check. Prints one table per thread count and the geometric
# mean speedup (PyTorch ms / dist-opt ms).
#
#   /usr/bin/python3 bench/cpu_training.py [--steps 30] [--threads 1 2]
#       [--model mlp gpt resnet dlrm] [--work /tmp/dist-train-bench]
#
# Exits with 0 when every model compiled and trained, 1 otherwise.

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))

MODELS = ("mlp", "gpt", "resnet", "dlrm")
# Loss per model, by the output's meaning.
LOSS = {"mlp": "cross_entropy", "gpt": "cross_entropy",
        "resnet": "cross_entropy", "dlrm": "bce"}
SAMPLES_PER_EPOCH_BATCHES = 8


def export_and_data(name, work, batch=None):
    """Exports model `name` in training mode and writes its data; returns
    (onnx path, batch, {input: npy path}, label path). `batch` replaces
    the benchmark's batch (the exported graph fixes it); the files then go
    to <work>/<name>_b<batch>."""
    import torch
    import export_bench_models as ebm
    model, shapes, ins, outs, bench_batch, int_high = ebm.make_bench_model(
        name)
    d = os.path.join(work, name)
    if batch is not None and batch != bench_batch:
        shapes = [(batch,) + tuple(s[1:]) for s in shapes]
        d = os.path.join(work, f"{name}_b{batch}")
    else:
        batch = bench_batch
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".onnx")
    model.train()
    torch.save(model.state_dict(), os.path.join(d, "init.pt"))
    torch.onnx.export(model, ebm.example_args(shapes, ins), path,
                      opset_version=ebm.OPSET, input_names=ins,
                      output_names=outs, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    # Tracing in train mode moved the BatchNorm running statistics; the
    # initial state the PyTorch side loads is the one saved before.
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    sd = torch.load(os.path.join(d, "init.pt"))
    for init in m.graph.initializer:
        if init.name in sd:
            init.CopyFrom(numpy_helper.from_array(
                sd[init.name].numpy(), init.name))
    onnx.save(m, path)

    rng = np.random.RandomState(0)
    n = batch * SAMPLES_PER_EPOCH_BATCHES
    files = {}
    for shape, iname in zip(shapes, ins):
        full = (n,) + tuple(shape[1:])
        if iname in ("idx", "sparse"):
            arr = rng.randint(0, int_high, size=full).astype(np.int64)
        else:
            arr = rng.randn(*full).astype(np.float32)
        files[iname] = os.path.join(d, iname + ".npy")
        np.save(files[iname], arr)
    if name == "gpt":
        label = rng.randint(0, ebm.GPT_VOCAB, size=(n, ebm.GPT_SEQ))
    elif name == "mlp8":
        label = rng.randint(0, ebm.MLP8_WIDTH, size=(n,))
    elif name == "dlrm":
        label = rng.randint(0, 2, size=(n, 1)).astype(np.float32)
    else:
        label = rng.randint(0, 10, size=(n,))
    if label.dtype != np.float32:
        label = label.astype(np.int64)
    label_path = os.path.join(d, "label.npy")
    np.save(label_path, label)
    return path, batch, files, label_path


TORCH_CHILD = r"""
import os, sys, json, time, resource
# PyTorch's set_num_threads does not reach Debian's OpenBLAS (pthreads
# build, which torch's matrix products call): without this its products
# would use every core whatever the thread count asked for.
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = sys.argv[7]
# OpenMP's workers (torch's elementwise ops) would otherwise spin between
# parallel regions while OpenBLAS's threads need the same cores: at 2
# threads the GPT step took 60-110 ms spinning, 32 ms passive.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import numpy as np, torch
import torch.nn.functional as F
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import export_bench_models as ebm
name, d, batch, steps, threads = sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
torch.set_num_threads(threads)
model, shapes, ins, outs, _, _ = ebm.make_bench_model(name)
model.load_state_dict(torch.load(d + "/init.pt"))
model.train()
data = [torch.from_numpy(np.load(d + "/" + i + ".npy")) for i in ins]
label = torch.from_numpy(np.load(d + "/label.npy"))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
nb = data[0].shape[0] // batch
times, losses = [], []
for s in range(steps):
    b = s % nb
    xs = [t[b * batch:(b + 1) * batch] for t in data]
    y = label[b * batch:(b + 1) * batch]
    t0 = time.perf_counter()
    out = model(*xs)
    if name == "dlrm":
        loss = F.binary_cross_entropy(out, y)
    elif name == "gpt":
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    else:
        loss = F.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
    losses.append(loss.item())
print(json.dumps({"times": times, "losses": losses}))
"""


def max_rss_of(cmd, work):
    """Runs `cmd`; returns (exit code, stdout, stderr, peak RSS in MiB).

    GNU time measures the child: the high-water mark of a process forked
    from this one (which has PyTorch loaded) would start at this process's
    size, since execve does not reset it."""
    rss_file = os.path.join(work, "maxrss.txt")
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file] + cmd,
                       capture_output=True, text=True)
    try:
        kib = float(open(rss_file).read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        kib = float("nan")
    return p.returncode, p.stdout, p.stderr, kib / 1024.0


def main():
    ap = argparse.ArgumentParser(
        description="dist-opt training step time against PyTorch eager")
    ap.add_argument("--steps", type=int, default=30,
                    help="timed steps after %d warm-up steps" % 5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--model", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--work", default="/tmp/dist-train-bench")
    ap.add_argument("--dist-opt", default=os.path.join(REPO_ROOT, "build",
                                                       "bin", "dist-opt"))
    a = ap.parse_args()
    warmup = 5
    total = warmup + a.steps
    os.makedirs(a.work, exist_ok=True)
    ok = True
    prepared = {}
    for name in a.model:
        path, batch, files, label = export_and_data(name, a.work)
        out_dir = os.path.join(a.work, name, "out") + "/"
        t0 = time.perf_counter()
        r = subprocess.run([a.dist_opt, path, "--train", "--loss=" + LOSS[name],
                            "--optimizer=adamw", "--lr=1e-3", "-o", out_dir,
                            "--name", name], capture_output=True, text=True)
        compile_s = time.perf_counter() - t0
        if r.returncode != 0:
            print("%s: dist-opt failed: %s" % (name, r.stderr.strip()))
            ok = False
            continue
        prepared[name] = (batch, files, label, out_dir, compile_s)

    for threads in a.threads:
        rows = []
        for name, (batch, files, label, out_dir, compile_s) in prepared.items():
            log = os.path.join(a.work, name, "log-%d.jsonl" % threads)
            cmd = [out_dir + name, "train", "--batch-size", str(batch),
                   "--steps", str(total), "--threads", str(threads),
                   "--log", log, "--quiet", "--data", "label=" + label]
            for k, v in files.items():
                cmd += ["--data", "%s=%s" % (k, v)]
            rc, _, err, ours_mb = max_rss_of(cmd, a.work)
            if rc != 0:
                print("%s: train failed: %s" % (name, err.strip()))
                ok = False
                continue
            steps = [json.loads(l) for l in open(log)]
            ours_ms = float(np.median([batch / s["samples_per_s"] * 1e3
                                       for s in steps[warmup:]]))
            rc, out, err, torch_mb = max_rss_of(
                [sys.executable, "-c", TORCH_CHILD,
                 os.path.join(REPO_ROOT, "bench"),
                 os.path.join(REPO_ROOT, "scripts"), name,
                 os.path.join(a.work, name), str(batch), str(total),
                 str(threads)], a.work)
            if rc != 0:
                print("%s: PyTorch failed: %s" % (name, err.strip()[-300:]))
                ok = False
                continue
            res = json.loads(out.strip().splitlines()[-1])
            torch_ms = float(np.median(res["times"][warmup:])) * 1e3
            d0 = abs(steps[0]["loss"] - res["losses"][0]) / abs(
                res["losses"][0])
            rows.append((name, ours_ms, torch_ms, torch_ms / ours_ms,
                         ours_mb, torch_mb, d0, compile_s))
        print("\n%d thread%s: median step time over %d steps (after %d "
              "warm-up), AdamW" % (threads, "" if threads == 1 else "s",
                                   a.steps, warmup))
        print("| model | dist-opt ms | PyTorch ms | speedup | dist-opt peak "
              "MiB | PyTorch peak MiB | step-1 loss rel diff | compile s |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print("| %s | %.3f | %.3f | %.2fx | %.0f | %.0f | %.1e | %.1f |"
                  % r)
        if rows:
            g = math.exp(sum(math.log(r[3]) for r in rows) / len(rows))
            print("geometric mean speedup: %.2fx" % g)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
