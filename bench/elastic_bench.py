#!/usr/bin/python3
#===- bench/elastic_bench.py - recovery time and snapshot overhead --------===#
# SPDX-License-Identifier: Apache-2.0
#
# Elastic training on this machine, dist-opt beside PyTorch in the same run:
# the GPT-style LM of the CPU benchmarks (bench/export_bench_models.py: 2
# layers, d=256, 4 heads, vocab 1024, 64 tokens), AdamW, global batch 12,
# 4 ranks of one thread each (oversubscribed on small machines).
#
#   dist-opt: `dist-opt --elastic=2:4 --zero 1`, run by
#             `dist-launch -np 4 -- gpt train ... --snapshot-every K`.
#   PyTorch:  DistributedDataParallel on gloo under
#             `torchrun --nproc_per_node 4 --max-restarts 3` (its elastic
#             agent), rank 0 saving model and optimizer with torch.save
#             every K steps (written to a temporary file, then renamed),
#             every rank resuming from the newest one when started.
#
# Recovery: one rank killed with SIGKILL at step KILL_AT. Measured from
# the kill: "detected", when the job's other ranks have all exited (each
# framework ends the job once it sees the loss); "first step", when a rank
# of the restarted job finishes its first step; and the steps run twice
# (last step reached before the kill - step resumed from). dist-opt
# restarts on 3 ranks, torchrun on 4 (its agent keeps the group's size).
#
# Snapshot overhead: the same 4-rank job without snapshots, at K = 10 and
# at K = 100, ms per step after the first 5 (dist-opt: from the elapsed_s
# of its --log; PyTorch: mean step time), runs alternated; each round's
# overhead, then the median over rounds (this machine's noise moves single
# runs by several percent). Also measured inside each run with snapshots,
# which the drift between runs does not move: its mean step against the
# mean of its steps 4 or more after a snapshot (a snapshot's cost lands in
# the step after it, where its write overlaps; without snapshots the same
# figure is within +-0.5% here). dist-opt also with --checkpoint-every 10,
# every checkpoint flushed to storage (PyTorch's torch.save flushes
# nothing).
#
#   /usr/bin/python3 bench/elastic_bench.py [--steps 120] [--rounds 2]
#       [--no-recovery] [--work /tmp/dist-elastic-bench]
#
# Exits with 0 when every run worked, 1 otherwise.

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))
from dp_scaling import run  # noqa: E402

MPI_ARGS = ["--mpi-arg", "--mca", "--mpi-arg", "btl", "--mpi-arg",
            "self,vader", "--mpi-arg", "--bind-to", "--mpi-arg", "none"]
BATCH = 12
RANKS = 4

TORCH_CHILD = r"""
import os, sys, json, time
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
import numpy as np, torch
import torch.nn.functional as F
import torch.distributed as dist
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import export_bench_models as ebm
d, batch, steps, every, state, ck = (sys.argv[3], int(sys.argv[4]),
    int(sys.argv[5]), int(sys.argv[6]), sys.argv[7], sys.argv[8])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
dist.init_process_group("gloo")
model, shapes, ins, outs, _, _ = ebm.make_bench_model("gpt")
model.load_state_dict(torch.load(d + "/init.pt"))
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
start = 0
path = os.path.join(ck, "ck.pt") if ck != "-" else None
if path and os.path.exists(path):
    saved = torch.load(path)
    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["opt"])
    start = saved["step"]
model = torch.nn.parallel.DistributedDataParallel(model)
idx = torch.from_numpy(np.load(d + "/idx.npy"))
label = torch.from_numpy(np.load(d + "/label.npy"))
local = batch // world
nb = idx.shape[0] // batch
rec = os.path.join(state, f"rank-{rank}")
times = []
for s in range(start, steps):
    b = s % nb
    lo = b * batch + rank * local
    x, y = idx[lo:lo + local], label[lo:lo + local]
    t0 = time.perf_counter()
    out = model(x)
    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if path and (s + 1) % every == 0 and rank == 0:
        tmp = path + ".tmp"
        torch.save({"model": model.module.state_dict(),
                    "opt": opt.state_dict(), "step": s + 1}, tmp)
        os.replace(tmp, path)
    times.append(time.perf_counter() - t0)
    with open(rec + ".tmp", "w") as f:
        f.write(f"pid={os.getpid()} step={s + 1} state=running\n")
    os.replace(rec + ".tmp", rec)
if rank == 0:
    print(json.dumps({"times": times, "start": start}))
dist.destroy_process_group()
"""


def records(state):
    out = {}
    try:
        names = os.listdir(state)
    except OSError:
        return out
    for n in names:
        if not n.startswith("rank-") or n.endswith(".tmp"):
            continue
        try:
            with open(os.path.join(state, n)) as f:
                words = f.read().split()
        except OSError:
            continue
        r = dict(w.split("=", 1) for w in words if "=" in w)
        if "pid" in r and "step" in r:
            out[int(n[5:])] = (int(r["pid"]), int(r["step"]))
    return out


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its launcher) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def recovery(cmd, state, kill_at, env=None):
    """Starts `cmd`, kills one rank at step kill_at; returns (detected s,
    first step s, steps run twice, the launcher's stderr)."""
    shutil.rmtree(state, ignore_errors=True)
    os.makedirs(state)
    err = open(state + ".err", "w")
    out = open(state + ".out", "w")
    p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
    deadline = time.time() + 600
    while time.time() < deadline:
        r = records(state)
        if len(r) == RANKS and all(s >= kill_at for _, s in r.values()):
            break
        if p.poll() is not None:
            raise RuntimeError("the job ended before the kill")
        time.sleep(0.01)
    r = records(state)
    old = {pid for pid, _ in r.values()}
    reached = max(s for _, s in r.values())
    victim = r[1][0]
    t0 = time.time()
    os.kill(victim, signal.SIGKILL)
    detected = first = None
    resumed_from = None
    while time.time() < deadline:
        now = time.time()
        if detected is None and not any(alive(q) for q in old - {victim}):
            detected = now - t0
        new = {k: v for k, v in records(state).items() if v[0] not in old}
        if new and first is None:
            if resumed_from is None:
                resumed_from = min(s for _, s in new.values())
            if any(s > resumed_from for _, s in new.values()):
                first = now - t0
        if detected is not None and first is not None:
            break
        time.sleep(0.01)
    p.wait(timeout=600)
    err.close()
    out.close()
    with open(state + ".err") as f:
        text = f.read()
    with open(state + ".out") as f:
        text += f.read()
    if p.returncode != 0:
        raise RuntimeError(f"the job exited with {p.returncode}: "
                           f"{text.strip()[-400:]}")
    m = re.search(r"resuming from step (\d+)", text)
    starts = [int(x) for x in re.findall(r'"start": (\d+)', text)]
    start = int(m.group(1)) if m else (max(starts) if starts else None)
    lost = reached - start if start is not None else None
    return detected, first, lost, text


def cpu():
    """The CPU's model name and vector extensions (/proc/cpuinfo)."""
    name, flags = "?", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and name == "?":
                name = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    ext = [e for e in ("avx512f", "avx2", "fma") if e in flags]
    return f"{name} ({', '.join(ext) or 'no AVX'}), {os.cpu_count()} cores"


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--kill-at", type=int, default=45)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--no-recovery", action="store_true",
                   help="measure the snapshot overhead only")
    p.add_argument("--work", default="/tmp/dist-elastic-bench")
    p.add_argument("--dist-opt",
                   default=os.path.join(REPO_ROOT, "build", "bin", "dist-opt"))
    args = p.parse_args()
    import cpu_training
    import numpy as np
    os.makedirs(args.work, exist_ok=True)
    launch = os.path.join(os.path.dirname(args.dist_opt), "dist-launch")
    onnx_path, _, files, label = cpu_training.export_and_data(
        "gpt", args.work, BATCH)
    d = os.path.dirname(onnx_path)
    rng = np.random.RandomState(1)
    idx = np.load(files["idx"])
    for key, path in (("idx", files["idx"]), ("label", label)):
        np.save(path, rng.randint(0, 1024, size=(BATCH * 8,) +
                                  idx.shape[1:]).astype(np.int64))
    out = os.path.join(d, "gpt_elastic")
    t = time.time()
    run([args.dist_opt, onnx_path, "--train", "--loss=cross_entropy",
         "--optimizer=adamw", "--lr=1e-3", "--elastic=2:4", "--zero", "1",
         "-o", out, "--name", "gpt"])
    print(f"GPT-style LM (d=256, 2 layers, 64 tokens), AdamW, global batch "
          f"{BATCH}, {RANKS} ranks of one thread; --elastic=2:4 --zero 1 "
          f"compiled in {time.time() - t:.1f} s; CPU: {cpu()}")
    exe = os.path.join(out, "gpt")
    data = ["--data", f"idx={files['idx']}", "--data", f"label={label}"]
    script = os.path.join(d, "elastic_child.py")
    with open(script, "w") as f:
        f.write(TORCH_CHILD)
    failed = False

    def dist_cmd(state, ck, every, steps, flag="--snapshot-every", log=None):
        cmd = [launch, "-np", str(RANKS), "--state-dir", state] + MPI_ARGS + \
            ["--", exe, "train"] + data + \
            ["--batch-size", str(BATCH), "--steps", str(steps), "--threads",
             "1", "--quiet"] + (["--log", log] if log else [])
        if ck:
            shutil.rmtree(ck, ignore_errors=True)
            cmd += ["--checkpoint-dir", ck, flag, str(every)]
        return cmd

    def torch_cmd(state, ck, every, steps, port):
        if ck != "-":
            shutil.rmtree(ck, ignore_errors=True)
            os.makedirs(ck)
        os.makedirs(state, exist_ok=True)
        # Debian's torch 1.13 under Python 3.12 cannot parse the plain
        # --redirects/--tee values (Std.from_str("0") is None there): the
        # per-rank form works.
        ranks = ",".join(f"{k}:1" for k in range(RANKS))
        return [sys.executable, "-m", "torch.distributed.run",
                "--nproc_per_node", str(RANKS), "--max_restarts", "3",
                "--monitor_interval", "1", "--master_port", str(port),
                "--redirects", ranks, "--tee", ranks, "--log_dir",
                os.path.join(args.work, "torchrun_logs"),
                script, os.path.join(REPO_ROOT, "bench"),
                os.path.join(REPO_ROOT, "scripts"), d, str(BATCH),
                str(steps), str(every), state, ck]

    env = dict(os.environ, OMP_NUM_THREADS="1")
    print("\nrecovery from a SIGKILL at step "
          f"{args.kill_at} (K = {args.every}): seconds from the kill")
    print(f"{'':>22} {'detected':>9} {'first step':>11} {'run twice':>10}")
    for r in range(0 if args.no_recovery else args.rounds):
        for name in ("dist-opt", "torchrun"):
            state = os.path.join(args.work, f"rec_{name}_{r}")
            ck = os.path.join(args.work, f"ck_{name}_{r}")
            try:
                if name == "dist-opt":
                    cmd = dist_cmd(state, ck, args.every, args.steps)
                else:
                    cmd = torch_cmd(state, ck, args.every, args.steps,
                                    29600 + r)
                det, first, lost, text = recovery(cmd, state, args.kill_at,
                                                  env)
                print(f"{name + ' round ' + str(r + 1):>22} "
                      f"{det if det is not None else float('nan'):>9.2f} "
                      f"{first if first is not None else float('nan'):>11.2f} "
                      f"{lost if lost is not None else '?':>10}", flush=True)
                if name == "dist-opt":
                    for line in text.splitlines():
                        if line.startswith("dist-launch: restart"):
                            print(f"{'':>22} {line}")
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{name:>22} error: {e}")
                failed = True

    print(f"\nsnapshot overhead, {args.steps} steps, ms per step after "
          "the first 5 (PyTorch: mean of its step times, torch.save "
          "included; dist-opt: the log's elapsed_s from step 5 to the "
          "last); dist-opt's 'flushed' column: --checkpoint-every 10 (each "
          "flushed to storage; PyTorch's torch.save flushes none); 'end': "
          "ms after the last step until the run is done (dist-opt waits "
          "for its last checkpoint, flushed, to be written)")
    print("'in run': the same runs' overhead measured inside each one, "
          "which this machine's drift between runs does not move: the mean "
          "step against the mean of the steps 4 or more after a snapshot "
          "(by then its write is done), so it counts only what a snapshot "
          "costs the steps around it")
    print(f"{'':>22} {'none':>8} {'K=10':>8} {'K=100':>8} "
          f"{'K=10 %':>7} {'K=100 %':>8} {'in run':>7} {'in run':>8} "
          f"{'flushed':>8} {'fl. %':>6} {'end':>6}")
    overheads = {"dist-opt": [], "torchrun": []}
    in_run = {"dist-opt": {10: [], 100: []}, "torchrun": {10: [], 100: []}}

    def dist_ms(text, log):
        """Steady ms per step from the log, the wait at the end, and each
        step's time (from the end of the one before: a snapshot's copy and
        the write that overlaps the next step count in it)."""
        last = {}
        with open(log) as f:
            for line in f:
                rec = json.loads(line)
                last[rec["step"]] = rec["elapsed_s"]
        n = max(last)
        m = re.search(r"trained (\d+) steps in ([0-9.]+) s", text)
        steps = {k: last[k] - last[k - 1] for k in range(6, n + 1)}
        return (1e3 * (last[n] - last[5]) / (n - 5),
                1e3 * (float(m.group(2)) - last[n]), steps)

    def within(steps, every):
        """% overhead of one run's snapshots: `steps` maps step -> seconds."""
        far = [t for k, t in steps.items() if k % every >= 4]
        return 100 * (statistics.mean(steps.values()) /
                      statistics.mean(far) - 1)

    for r in range(args.rounds):
        for name in ("dist-opt", "torchrun"):
            ms = []
            inside = {}
            end = None
            try:
                for every in (None, 10, 100, "flushed"):
                    state = os.path.join(args.work, f"ov_{name}_{r}")
                    ck = os.path.join(args.work, f"ovck_{name}_{r}")
                    log = os.path.join(args.work, f"ov_{name}_{r}.jsonl")
                    if every == "flushed" and name != "dist-opt":
                        continue
                    if every == "flushed":
                        text = run(dist_cmd(state, ck, 10, args.steps,
                                            "--checkpoint-every", log),
                                   env=env)
                        ms.append(dist_ms(text, log)[0])
                    elif name == "dist-opt":
                        text = run(dist_cmd(state, ck if every else None,
                                            every, args.steps, log=log),
                                   env=env)
                        step_ms, wait_ms, steps = dist_ms(text, log)
                        ms.append(step_ms)
                        if every:
                            inside[every] = within(steps, every)
                        if every == 10:
                            end = wait_ms
                    else:
                        shutil.rmtree(state, ignore_errors=True)
                        text = run(torch_cmd(state, ck if every else "-",
                                             every or 1, args.steps,
                                             29700 + r), env=env)
                        line = [l for l in text.splitlines()
                                if '{"times"' in l][-1]
                        times = json.loads(line[line.index("{"):])["times"]
                        # The mean: a snapshot is one step's outlier,
                        # which a median would hide.
                        ms.append(1e3 * statistics.mean(times[5:]))
                        if every:
                            inside[every] = within(
                                {k + 1: t for k, t in enumerate(times)
                                 if k >= 5}, every)
                flushed = (f" {ms[3]:>8.2f} {100 * (ms[3] / ms[0] - 1):>6.1f}"
                           f" {end:>6.0f}" if len(ms) > 3 else "")
                print(f"{name + ' round ' + str(r + 1):>22} {ms[0]:>8.2f} "
                      f"{ms[1]:>8.2f} {ms[2]:>8.2f} "
                      f"{100 * (ms[1] / ms[0] - 1):>7.1f} "
                      f"{100 * (ms[2] / ms[0] - 1):>8.1f} "
                      f"{inside[10]:>7.1f} {inside[100]:>8.1f}{flushed}",
                      flush=True)
                overheads[name].append(100 * (ms[1] / ms[0] - 1))
                for every in (10, 100):
                    in_run[name][every].append(inside[every])
            except (RuntimeError, subprocess.TimeoutExpired, AttributeError,
                    IndexError, KeyError, OSError, ValueError) as e:
                print(f"{name:>22} error: {e}")
                failed = True
    # This machine's noise moves single runs by several percent: the median
    # over rounds, with the spread.
    def spread(values):
        return (f"median {statistics.median(values):+.1f}% over "
                f"{len(values)} rounds (min {min(values):+.1f}%, max "
                f"{max(values):+.1f}%)")

    for name, values in overheads.items():
        if values:
            print(f"{name:>22} K=10 overhead between runs: {spread(values)}")
            for every in (10, 100):
                print(f"{name:>22} K={every} overhead in run: "
                      f"{spread(in_run[name][every])}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
