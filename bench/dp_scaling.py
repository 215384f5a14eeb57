#!/usr/bin/python3
#===- bench/dp_scaling.py - data-parallel scaling against PyTorch DDP -----===#
# SPDX-License-Identifier: Apache-2.0
#
# Data-parallel training throughput on this machine: the GPT-style LM of the
# CPU benchmarks (bench/export_bench_models.py: 2 layers, d=256, 4 heads,
# vocab 1024, 64 tokens) trained with AdamW at the same global batch by
#   - dist-opt: one process with one thread, and `--mesh dp=2` under
#     `mpirun -np 2` with one thread per rank;
#   - PyTorch: one process with one thread, and DistributedDataParallel on
#     the gloo backend with 2 processes of one thread (loopback).
# at global batches 4 (the inference benchmark's) and 16, one export each
# (the exported graph fixes the batch).
# Scaling efficiency = (2-rank samples/s) / (2 x 1-rank samples/s). Step
# times are medians over the last STEPS steps after WARMUP (dist-opt: from
# `train --log`; PyTorch: wall time of forward, backward, optimizer step).
# For dist-opt it also prints the time rank 0 spent in gradient all-reduces
# and how much of it overlapped with computation (the runtime's counters).
#
# Then inference of the same model at its exported batch (4): the dist-opt
# artifact compiled with `--mesh dp=2` runs each rank on its rows
# (lib/Transforms/BatchSplit.cpp) under `mpirun -np 2`, one thread per
# rank, against one process at one and at two threads, and onnxruntime-node
# (bench/ort_bench.js) at one and two threads; medians of `--bench` runs,
# and the split run's outputs against the one-process run's.
#
#   /usr/bin/python3 bench/dp_scaling.py [--steps 30] [--batch 4 16]
#       [--work /tmp/dist-dp-bench]
#
# Exits with 0 when every run worked, 1 otherwise.

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl",
          "self,vader"]
WARMUP = 5

TORCH_CHILD = r"""
import os, sys, json, time
# One thread per rank in PyTorch's products too: set_num_threads does not
# reach Debian's OpenBLAS (pthreads build), which would use every core.
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
import numpy as np, torch
import torch.nn.functional as F
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import export_bench_models as ebm
d, batch, steps, world = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
rank = int(os.environ.get("RANK", "0"))
torch.set_num_threads(1)
model, shapes, ins, outs, _, _ = ebm.make_bench_model("gpt")
model.load_state_dict(torch.load(d + "/init.pt"))
model.train()
if world > 1:
    import torch.distributed as dist
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(model)
idx = torch.from_numpy(np.load(d + "/idx.npy"))
label = torch.from_numpy(np.load(d + "/label.npy"))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
local = batch // world
nb = idx.shape[0] // batch
times = []
for s in range(steps):
    b = s % nb
    lo = b * batch + rank * local
    x, y = idx[lo:lo + local], label[lo:lo + local]
    t0 = time.perf_counter()
    out = model(x)
    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
if rank == 0:
    print(json.dumps({"times": times}))
if world > 1:
    dist.destroy_process_group()
"""


def run(cmd, env=None, timeout=1800):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])} ... exited with "
                           f"{p.returncode}: {p.stderr.strip()[-400:]}")
    return p.stdout


def dist_opt_run(exe, files, batch, steps, ranks, work, tag):
    log = os.path.join(work, f"{tag}.jsonl")
    cmd = [exe, "train", "--data", f"idx={files['idx']}", "--data",
           f"label={files['label']}", "--batch-size", str(batch), "--steps",
           str(steps), "--threads", "1", "--log", log, "--quiet"]
    if ranks > 1:
        cmd = MPIRUN + ["-np", str(ranks)] + cmd
    out = run(cmd)
    rows = [json.loads(l) for l in open(log)]
    step_s = statistics.median(batch / r["samples_per_s"]
                               for r in rows[WARMUP:])
    comm = re.search(r"([0-9.]+) s communicating, ([0-9.]+) s of it "
                     r"overlapped", out)
    total_s = re.search(r"trained \d+ steps in ([0-9.]+) s", out)
    return step_s, comm, float(total_s.group(1)) if total_s else None


def run_ranks(args, world, port):
    """Runs `args` as `world` PyTorch processes (RANK 0.., gloo on
    loopback, one thread each); returns rank 0's stdout."""
    if world == 1:
        return run(args)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               WORLD_SIZE=str(world), OMP_NUM_THREADS="1")
    procs = [subprocess.Popen(args, env=dict(env, RANK=str(r)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True)
             for r in range(world)]
    outs = [p.communicate(timeout=1800) for p in procs]
    for p, (o, e) in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"PyTorch rank exited with {p.returncode}: "
                               f"{e.strip()[-400:]}")
    return outs[0][0]


def torch_run(d, batch, steps, world):
    script = os.path.join(d, "ddp_child.py")
    with open(script, "w") as f:
        f.write(TORCH_CHILD)
    out = run_ranks([sys.executable, script, os.path.join(REPO_ROOT, "bench"),
                     os.path.join(REPO_ROOT, "scripts"), d, str(batch),
                     str(steps), str(world)], world, 29517)
    times = json.loads(out.strip().splitlines()[-1])["times"]
    return statistics.median(times[WARMUP:])


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--batch", type=int, nargs="+", default=[4, 16],
                   help="global batches, even (one export per batch; 4 is "
                   "the inference benchmark's)")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--work", default="/tmp/dist-dp-bench")
    p.add_argument("--infer-iters", type=int, default=200,
                   help="timed runs of each inference measurement")
    p.add_argument("--dist-opt",
                   default=os.path.join(REPO_ROOT, "build", "bin", "dist-opt"))
    args = p.parse_args()
    import cpu_training
    import numpy as np
    os.makedirs(args.work, exist_ok=True)
    flags = ["--train", "--loss=cross_entropy", "--optimizer=adamw",
             "--lr=1e-3"]
    failed = False
    print("GPT-style LM (d=256, 2 layers, 64 tokens), AdamW, one thread per "
          "rank, samples/s at the same global batch")
    print(f"{'batch':>5}  {'dist-opt 1':>10} {'dist-opt 2':>10} {'eff':>5}  "
          f"{'torch 1':>8} {'DDP 2':>8} {'eff':>5}  comm(rank 0)")
    infer_onnx = infer_files = None
    for batch in args.batch:
        try:
            # The exported graph fixes the batch: one export per batch.
            onnx_path, _, files, label = cpu_training.export_and_data(
                "gpt", args.work, batch)
            files = dict(files, label=label)
            d = os.path.dirname(onnx_path)
            # 8 distinct batches of random tokens and labels.
            rng = np.random.RandomState(1)
            idx = np.load(files["idx"])
            for key in ("idx", "label"):
                np.save(files[key], rng.randint(
                    0, 1024, size=(batch * 8,) + idx.shape[1:])
                    .astype(np.int64))
            if batch == 4:
                infer_onnx, infer_files = onnx_path, files
            exes = {}
            for tag, extra in (("one", []), ("dp2", ["--mesh", "dp=2"])):
                out = os.path.join(d, "gpt_" + tag)
                run([args.dist_opt, onnx_path] + flags + extra +
                    ["-o", out, "--name", "gpt"])
                exes[tag] = os.path.join(out, "gpt")
            s1, _, _ = dist_opt_run(exes["one"], files, batch, args.steps, 1,
                                    args.work, f"one_b{batch}")
            s2, comm, total = dist_opt_run(exes["dp2"], files, batch,
                                           args.steps, 2, args.work,
                                           f"dp2_b{batch}")
            t1 = torch_run(d, batch, args.steps, 1)
            t2 = torch_run(d, batch, args.steps, 2)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"{batch:>5}  error: {e}")
            failed = True
            continue
        d1, d2 = batch / s1, batch / s2
        p1, p2 = batch / t1, batch / t2
        commtxt = "-"
        if comm and total:
            c, o = float(comm.group(1)), float(comm.group(2))
            commtxt = (f"{c:.3f} s of {total:.3f} s training in all-reduce, "
                       f"{o:.3f} s overlapped ({100 * o / max(c, 1e-9):.0f}%)")
        print(f"{batch:>5}  {d1:>10.1f} {d2:>10.1f} {d2 / (2 * d1):>5.0%}  "
              f"{p1:>8.1f} {p2:>8.1f} {p2 / (2 * p1):>5.0%}  {commtxt}",
              flush=True)
    if infer_onnx is None:
        infer_onnx, _, infer_files, _ = cpu_training.export_and_data(
            "gpt", args.work)
    failed |= not inference(args, infer_onnx, infer_files)
    return 1 if failed else 0


def bench_latency(cmd):
    m = re.search(r"latency_ms_median=([0-9.]+)", run(cmd))
    if not m:
        raise RuntimeError(f"no latency from {' '.join(cmd[:4])}")
    return float(m.group(1))


def inference(args, onnx_path, files):
    """Inference split over 2 dp ranks against one process and onnxruntime.
    Returns False when a run failed or the outputs differ."""
    import numpy as np
    d = os.path.join(args.work, "infer")
    os.makedirs(d, exist_ok=True)
    idx = np.load(files["idx"])[:4]
    np.save(os.path.join(d, "idx.npy"), idx)
    exes = {}
    for tag, extra in (("one", []), ("dp2", ["--mesh", "dp=2"])):
        out = os.path.join(d, "gpt_" + tag)
        run([args.dist_opt, onnx_path] + extra + ["-o", out, "--name", "gpt"])
        exes[tag] = os.path.join(out, "gpt")
    inp = ["--input", "idx=" + os.path.join(d, "idx.npy"), "--bench",
           str(args.infer_iters)]
    print("\nGPT-style LM inference, batch 4 (median ms of "
          f"{args.infer_iters} runs)")
    try:
        one1 = bench_latency([exes["one"]] + inp + [
            "--threads", "1", "--output-dir", os.path.join(d, "res_one")])
        one2 = bench_latency([exes["one"]] + inp + ["--threads", "2",
                                                     "--output-dir",
                                                     os.path.join(d, "res_2t")])
        split = bench_latency(MPIRUN + ["--bind-to", "none", "-np", "2",
                                        exes["dp2"]] + inp + [
            "--threads", "1", "--output-dir", os.path.join(d, "res_dp2")])
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"error: {e}")
        return False
    a = np.load(os.path.join(d, "res_one", "logits.npy"))
    b = np.load(os.path.join(d, "res_dp2", "logits.npy"))
    diff = float(np.abs(a - b).max())
    ort = {}
    node = os.path.join(REPO_ROOT, "bench", "ort_bench.js")
    for t in (1, 2):
        try:
            ort[t] = bench_latency(["node", node, onnx_path, d,
                                    os.path.join(d, f"ort{t}"), "--threads",
                                    str(t), "--iters", str(args.infer_iters)])
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            ort[t] = None
    fmt = lambda v: f"{v:.3f}" if v is not None else "-"
    print(f"  dist-opt 1 process, 1 thread   {one1:8.3f}")
    print(f"  dist-opt 1 process, 2 threads  {one2:8.3f}")
    print(f"  dist-opt dp=2, 2 x 1 thread    {split:8.3f}  "
          f"({one1 / split:.2f}x the 1-thread process; max |diff| {diff:.1e})")
    print(f"  onnxruntime 1 thread           {fmt(ort[1]):>8}")
    print(f"  onnxruntime 2 threads          {fmt(ort[2]):>8}", flush=True)
    return diff <= 1e-5 * max(float(np.abs(a).max()), 1e-30)


if __name__ == "__main__":
    sys.exit(main())
