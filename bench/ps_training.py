#!/usr/bin/python3
#===- bench/ps_training.py - DLRM training with parameter-server tables ---===#
# SPDX-License-Identifier: Apache-2.0
#
"""DLRM-style training throughput with the tables on parameter servers,
against the same model with its tables in the workers and against PyTorch,
all in one run.

The model is the benchmarks' DLRM (bench/export_bench_models.py: 8 tables of
100,000 to 500 rows, dim 32, 24 MB of tables; batch 128, 13 dense
features), SGD with lr 0.05, BCE on the sigmoid output. Ids are drawn
uniformly from each table (numpy RandomState(0)), 20 batches used in turn.
Every configuration runs 2 data-parallel workers (64 samples each per
step) on this machine:

  dist-opt ps     --ps-tables=all --mesh dp=2; `mpirun -np 2 <model>
                  ps-server : -np 2 <model> train` (2 servers, 2 workers)
  dist-opt ps async+prefetch  the same with `train --ps-mode=async
                  --ps-prefetch`: each step's rows are pulled while the
                  previous step computes
  dist-opt dense  --mesh dp=2, tables in the workers: their gradients are
                  all-reduced whole (24 MB a step) and applied densely
  torch DDP       2 processes (gloo), nn.EmbeddingBag(mode="sum",
                  sparse=True) of one id per bag for the tables (sparse
                  gradients, all-reduced by DDP), torch.optim.SGD

Each worker runs with --threads (default 1). Prints samples/s per
configuration (the median over --repeats runs of steps after --warmup) and
the ratios, with the CPU's model name. On this 2-core machine the 4
processes of `ps` share 2 cores with the servers, so the figures are
relative: they say what the servers cost against moving whole tables, not
what a cluster would reach.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import export_bench_models as ebm  # noqa: E402
import torch  # noqa: E402

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl",
          "self,vader"]
LR = 0.05

TORCH_WORKER = r"""
import os, sys, json, time
os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = sys.argv[5]
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
sys.path.insert(0, sys.argv[1])
import export_bench_models as ebm
rank, work, steps, threads, warmup = (int(os.environ["RANK"]), sys.argv[2],
    int(sys.argv[3]), int(sys.argv[5]), int(sys.argv[4]))
torch.set_num_threads(threads)
dist.init_process_group("gloo")
model, shapes, ins, outs, batch, _ = ebm.make_bench_model("dlrm")
model.load_state_dict(torch.load(work + "/init.pt"))
for i, t in enumerate(model.tables):
    bag = nn.EmbeddingBag(t.num_embeddings, t.embedding_dim, mode="sum",
                          sparse=True)
    bag.weight.data.copy_(t.weight.data)
    model.tables[i] = bag
class Bagged(nn.Module):
    def __init__(self, m):
        super().__init__(); self.m = m
    def forward(self, dense, sparse):
        m = self.m
        d = m.bottom(dense)
        embs = [t(sparse[:, i:i + 1]) for i, t in enumerate(m.tables)]
        feats = torch.stack([d] + embs, dim=1)
        z = torch.bmm(feats, feats.transpose(1, 2))
        z = z.flatten(1).index_select(1, m.tri_idx)
        return m.top(torch.cat([d, z], dim=1))
net = nn.parallel.DistributedDataParallel(Bagged(model))
opt = torch.optim.SGD(net.parameters(), lr=%(lr)s)
dense = torch.from_numpy(np.load(work + "/dense.npy"))
sparse = torch.from_numpy(np.load(work + "/sparse.npy"))
label = torch.from_numpy(np.load(work + "/label.npy"))
nb = dense.shape[0] // batch
half = batch // 2
t0 = None
for s in range(warmup + steps):
    if s == warmup:
        dist.barrier(); t0 = time.perf_counter()
    b = (s %% nb) * batch + rank * half
    out = net(dense[b:b + half], sparse[b:b + half])
    loss = F.binary_cross_entropy(out, label[b:b + half])
    opt.zero_grad(); loss.backward(); opt.step()
dist.barrier()
if rank == 0:
    print(json.dumps({"seconds": time.perf_counter() - t0, "loss": loss.item()}))
""" % {"lr": LR}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def run(cmd, timeout=1800, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env=env)
    if p.returncode != 0:
        sys.exit(f"error: {' '.join(cmd[:4])}... exited {p.returncode}: "
                 f"{(p.stderr or p.stdout).strip()[-800:]}")
    return p


def prepare(work, dist_opt):
    model, shapes, ins, outs, batch, _ = ebm.make_bench_model("dlrm")
    torch.save(model.state_dict(), os.path.join(work, "init.pt"))
    onnx_path = os.path.join(work, "dlrm.onnx")
    torch.onnx.export(model, (torch.zeros(shapes[0]),
                              torch.zeros(shapes[1], dtype=torch.long)),
                      onnx_path, input_names=ins, output_names=outs,
                      opset_version=ebm.OPSET, do_constant_folding=False)
    rs = np.random.RandomState(0)
    n = batch * 20
    np.save(os.path.join(work, "dense.npy"),
            rs.randn(n, 13).astype(np.float32))
    np.save(os.path.join(work, "sparse.npy"),
            np.stack([rs.randint(0, r, n) for r in ebm.DLRM_TABLES],
                     1).astype(np.int64))
    np.save(os.path.join(work, "label.npy"),
            rs.randint(0, 2, (n, 1)).astype(np.float32))
    exes = {}
    for kind, extra in (("ps", ["--ps-tables=all"]), ("dense", [])):
        out = os.path.join(work, kind)
        run([dist_opt, onnx_path, "--train", "--loss=bce", "--optimizer=sgd",
             f"--lr={LR}", "--mesh", "dp=2", "-o", out, "--name", "dlrm"] +
            extra)
        exes[kind] = os.path.join(out, "dlrm")
    return exes, batch


def dist_rate(kind, exe, work, batch, steps, warmup, threads, mode="sync"):
    data = ["--data", f"dense={work}/dense.npy", "--data",
            f"sparse={work}/sparse.npy", "--data", f"label={work}/label.npy"]
    log = os.path.join(work, kind + ".jsonl")
    train = [exe, "train"] + data + ["--steps", str(warmup + steps), "--log",
                                     log, "--quiet", "--threads",
                                     str(threads)]
    if kind == "ps":
        cmd = MPIRUN + ["-np", "2", exe, "ps-server", ":", "-np", "2"] + \
            train + [f"--ps-mode={mode}"] + \
            (["--ps-prefetch"] if mode != "sync" else [])
    else:
        cmd = MPIRUN + ["-np", "2"] + train
    run(cmd)
    with open(log) as f:
        rates = [json.loads(line)["samples_per_s"] for line in f][warmup:]
    # samples/s of a step is batch / its time: the run's rate is the
    # harmonic mean.
    return len(rates) / sum(1.0 / r for r in rates)


def torch_rate(work, batch, steps, warmup, threads):
    script = os.path.join(work, "torch_worker.py")
    with open(script, "w") as f:
        f.write(TORCH_WORKER)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(
        29500 + os.getpid() % 1000), WORLD_SIZE="2")
    procs = [subprocess.Popen([sys.executable, script,
                               os.path.join(ROOT, "bench"), work, str(steps),
                               str(warmup), str(threads)],
                              env=dict(env, RANK=str(r)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for r in range(2)]
    outs = [p.communicate(timeout=1800) for p in procs]
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            sys.exit(f"error: the PyTorch worker exited {p.returncode}: "
                     f"{err.strip()[-800:]}")
    result = json.loads(outs[0][0].strip().splitlines()[-1])
    return steps * batch / result["seconds"]


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dist-opt",
                    default=os.path.join(ROOT, "build", "bin", "dist-opt"))
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="dist-ps-train-")
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    exes, batch = prepare(work, args.dist_opt)
    rates = {"dist-opt ps": [], "dist-opt ps async+prefetch": [],
             "dist-opt dense": [], "torch DDP": []}
    for _ in range(args.repeats):
        rates["dist-opt ps"].append(dist_rate(
            "ps", exes["ps"], work, batch, args.steps, args.warmup,
            args.threads))
        # The next step's rows pulled while a step computes.
        rates["dist-opt ps async+prefetch"].append(dist_rate(
            "ps", exes["ps"], work, batch, args.steps, args.warmup,
            args.threads, "async"))
        rates["dist-opt dense"].append(dist_rate(
            "dense", exes["dense"], work, batch, args.steps, args.warmup,
            args.threads))
        rates["torch DDP"].append(torch_rate(work, batch, args.steps,
                                             args.warmup, args.threads))
    print(f"DLRM training, batch {batch} over 2 workers, {args.steps} steps "
          f"x {args.repeats} runs, {args.threads} thread(s) per worker, "
          f"{cpu_name()}, {os.cpu_count()} cores")
    med = {k: statistics.median(v) for k, v in rates.items()}
    for k, v in rates.items():
        print(f"  {k:26s} {med[k]:10.0f} samples/s (runs: " +
              ", ".join(f"{x:.0f}" for x in v) + ")")
    print(f"  ps / dense {med['dist-opt ps'] / med['dist-opt dense']:.2f}x, "
          f"ps / torch {med['dist-opt ps'] / med['torch DDP']:.2f}x, "
          f"async+prefetch / sync "
          f"{med['dist-opt ps async+prefetch'] / med['dist-opt ps']:.2f}x")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
