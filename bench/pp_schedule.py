#!/usr/bin/python3
#===- bench/pp_schedule.py - pipeline schedules measured and predicted ----===#
# SPDX-License-Identifier: Apache-2.0
#
# Pipeline-parallel training on this machine, AdamW, of two models
# (bench/export_bench_models.py): the GPT-style LM of the CPU benchmarks
# (2 layers, d=256, 4 heads, vocab 1024, 64 tokens) at a global batch of
# 32, and an MLP of 8 Linear layers (1536 -> 1024 x 8) at 256, whose two
# halves cost alike (the GPT's stages do not: its first stage, embeddings
# and a block, computes almost no input gradient):
#
# 1. For p = 2 ranks (one thread each, `mpirun -np 2`) and m = 4, 8, 16
#    micro-batches, each schedule (gpipe, 1f1b, zb-h1): the measured bubble
#    ((step time - busy time) / busy time per rank, busy time being the
#    stage functions' time less their waits for another stage's data, from
#    `train --trace`; mean over the ranks, median over the steps) beside the
#    schedule's simulation with the measured per-stage action times
#    (bench/pp_simulate.cpp, the code the runtime runs the schedule by) and
#    the analytic (p - 1) / m; the slowest stage's bubble ((step time -
#    update - the busiest rank's busy time) / that busy time: the idle a
#    faster stage spends waiting for a slower one is load imbalance, the
#    same under every schedule, and is left out), measured and simulated;
#    and the cost model's prediction (the plan report of
#    `dist-opt --cluster local`: the same schedule at the calibrated model's
#    stage times); the measured step time beside the simulated one and the
#    cost model's; the most bytes a rank kept between its actions
#    (activations held for the backward) beside the micro-batches the
#    simulation holds. 1f1b and zb-h1 run --repeat times (default 3), one
#    after the other, and zb-h1's bubbles over 1f1b's are printed per
#    repeat with their median: one run's ratio moves with the machine.
# 2. For p = 4 and 8 (more ranks than this machine has cores): predicted
#    only, from the simulation at equal stage times.
# 3. Throughput (the GPT): dist-opt pp=2 (its best schedule) against one
#    dist-opt process of one thread, and PyTorch (Debian's 1.13 has no
#    torch.distributed.pipelining): one process, and a hand-written GPipe
#    over two gloo processes of one thread (stage 0: embeddings and the
#    first block; stage 1: the second block and the head), same m.
#
#   /usr/bin/python3 bench/pp_schedule.py [--models gpt mlp8] [--steps 20]
#       [--micro-batches 4 8 16] [--repeat 3] [--work /tmp/dist-pp-bench]
#
# Figures depend on this 2-core machine's mood: read the spread of the
# repeats. Exits with 0 when every run worked, 1 otherwise.

import argparse
import json
import os
import statistics
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))

from dp_scaling import MPIRUN, run, run_ranks, torch_run as one_torch  # noqa: E402

# The runtime places ZB-H1's weight gradients by the times of steps 2-4
# from the fifth step on (model_pipeline.cpp).
WARMUP = 4
BATCH = 32  # the GPT's; the MLP's is its benchmark batch
SCHEDULES = ("gpipe", "1f1b", "zb-h1")

TORCH_GPIPE = r"""
import os, sys, json, time
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
import numpy as np, torch
import torch.nn.functional as F
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import export_bench_models as ebm
d, batch, steps, m, world = (sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                             int(sys.argv[6]), int(sys.argv[7]))
rank = int(os.environ.get("RANK", "0"))
torch.set_num_threads(1)
model = ebm.make_bench_model("gpt")[0]
model.load_state_dict(torch.load(d + "/init.pt"))
model.train()
idx = torch.from_numpy(np.load(d + "/idx.npy"))
label = torch.from_numpy(np.load(d + "/label.npy"))
nb = idx.shape[0] // batch
times = []
import torch.distributed as dist
dist.init_process_group("gloo", rank=rank, world_size=2)
if rank == 0:
    mods = [model.wte, model.wpe, model.blocks[0]]
else:
    mods = [model.blocks[1], model.ln_f, model.lm_head]
params = [p for mod in mods for p in mod.parameters()]
opt = torch.optim.AdamW(params, lr=1e-3)
mb = batch // m
T = idx.shape[1]
d_model = model.wte.weight.shape[1]
for s in range(steps):
    b = s % nb
    x, y = idx[b * batch:(b + 1) * batch], label[b * batch:(b + 1) * batch]
    t0 = time.perf_counter()
    opt.zero_grad()
    outs, ins = [], []
    for i in range(m):  # GPipe: every forward, then every backward
        if rank == 0:
            xi = x[i * mb:(i + 1) * mb]
            h = model.wte(xi) + model.wpe(torch.arange(T))
            h = model.blocks[0](h)
            dist.send(h.detach(), 1)
            outs.append(h)
        else:
            h = torch.empty(mb, T, d_model)
            dist.recv(h, 0)
            h.requires_grad_()
            out = model.lm_head(model.ln_f(model.blocks[1](h)))
            yi = y[i * mb:(i + 1) * mb]
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]),
                                   yi.reshape(-1)) / m
            outs.append(loss)
            ins.append(h)
    for i in range(m):
        if rank == 1:
            outs[i].backward()
            dist.send(ins[i].grad, 0)
        else:
            g = torch.empty(mb, T, d_model)
            dist.recv(g, 1)
            outs[i].backward(g)
    opt.step()
    times.append(time.perf_counter() - t0)
dist.destroy_process_group()
if rank == 0:
    print(json.dumps({"times": times}))
"""


def train(exe, files, batch, steps, ranks, work, tag):
    """Runs `steps` steps; returns the rows of the log and, with several
    ranks, each rank's trace events."""
    log = os.path.join(work, f"{tag}.jsonl")
    trace = os.path.join(work, f"{tag}.trace.json")
    cmd = [exe, "train"]
    for name, path in sorted(files.items()):
        cmd += ["--data", f"{name}={path}"]
    cmd += ["--batch-size", str(batch), "--steps", str(steps), "--threads",
            "1", "--log", log, "--quiet"]
    if ranks > 1:
        cmd = MPIRUN + ["-np", str(ranks)] + cmd + ["--trace", trace]
    run(cmd)
    rows = [json.loads(line) for line in open(log)]
    traces = []
    for r in range(ranks if ranks > 1 else 0):
        path = trace.replace(".json", f".rank{r}.json")
        traces.append(json.load(open(path))["traceEvents"])
    return rows, traces


def analyse(traces, schedule, m, simulate):
    """Measured and simulated figures of one pipelined run."""
    steps = sorted({e["args"]["step"] for e in traces[0]
                    if e["name"] == "step"})[WARMUP:]
    step_s, bubbles, slowest, held, tails = [], [], [], [], []
    for s in steps:
        dur = max(e["dur"] for t in traces for e in t
                  if e["name"] == "step" and e["args"]["step"] == s) / 1e6
        step_s.append(dur)
        per_rank, busies = [], []
        tail = 0.0
        for t in traces:
            # The update after the last backward is the step's tail, outside
            # the schedule's bubble.
            update = sum(e["dur"] for e in t
                         if e["args"]["step"] == s and e["name"] == "U") / 1e6
            busy = sum(e["dur"] - e["args"]["wait_us"] for e in t
                       if e["args"]["step"] == s and e["name"] != "step" and
                       e["name"] != "U") / 1e6
            per_rank.append((dur - update - busy) / busy)
            busies.append(busy)
            tail = max(tail, update)
        tails.append(tail)
        bubbles.append(statistics.mean(per_rank))
        slowest.append((dur - tail - max(busies)) / max(busies))
    for t in traces:
        held.append(max(e["args"]["held_bytes"] for e in t
                        if e["name"] == "step"))
    # Per-stage action times (per micro-batch), for the simulation.
    times = []
    for t in traces:
        def mean_of(kind):
            v = [(e["dur"] - e["args"]["wait_us"]) / 1e6 for e in t
                 if e["name"].startswith(kind) and e["name"] != "step" and
                 e["args"]["step"] in steps]
            return statistics.mean(v) if v else 0.0
        f = mean_of("F")
        if schedule == "zb-h1":
            i, w = mean_of("I"), mean_of("W")
        else:
            i, w = mean_of("B"), 0.0
        times.append(f"{f:.9f},{i:.9f},{w:.9f}")
    sim = json.loads(run([simulate, schedule, str(m)] + times))
    # The simulated step with the measured update after it.
    sim["step_s"] += statistics.median(tails)
    return {"step_s": statistics.median(step_s),
            "bubble": statistics.median(bubbles),
            "slowest": statistics.median(slowest), "held_bytes": held,
            "sim": sim}


def cost_model_prediction(out):
    """The plan report's pipeline (dist-opt --cluster local): the mean
    predicted bubble of the stages and the step as the schedule runs it,
    from the calibrated cost model's stage times."""
    plan = json.load(open(os.path.join(out, "plan.json")))
    bubbles = [s["bubble"] for s in plan["pipeline"]["stages"]]
    step_ms = max(e["end_ms"] for e in plan["timeline"])
    return {"bubble": sum(bubbles) / len(bubbles), "step_s": step_ms / 1e3}


def torch_run(d, steps, m, world=2):
    """PyTorch GPipe over `world` (2) gloo processes; the step's median."""
    script = os.path.join(d, "gpipe_child.py")
    with open(script, "w") as f:
        f.write(TORCH_GPIPE)
    out = run_ranks([sys.executable, script, os.path.join(REPO_ROOT, "bench"),
                     os.path.join(REPO_ROOT, "scripts"), d, str(BATCH),
                     str(steps), str(m), str(world)], world, 29519)
    times = json.loads(out.strip().splitlines()[-1])["times"]
    return statistics.median(times[WARMUP:])


def prepare(name, work):
    """Exports `name` for training; returns (onnx path, batch, {input or
    label: npy path})."""
    import cpu_training
    import numpy as np
    batch = BATCH if name == "gpt" else None
    onnx_path, batch, files, label = cpu_training.export_and_data(
        name, work, batch)
    files = dict(files, label=label)
    if name == "gpt":
        rng = np.random.RandomState(1)
        idx = np.load(files["idx"])
        for key in ("idx", "label"):
            np.save(files[key], rng.randint(0, 1024, size=(batch * 4,) +
                                            idx.shape[1:]).astype(np.int64))
    return onnx_path, batch, files


def median_and_range(values):
    return (f"{statistics.median(values):.2f} "
            f"({min(values):.2f}-{max(values):.2f})")


def bubbles(name, args, simulate, failed):
    """Part 1 for model `name`; returns {m: (best schedule, step s)} and
    the compile function."""
    onnx_path, batch, files = prepare(name, args.work)
    d = os.path.dirname(onnx_path)
    flags = ["--train", "--loss=cross_entropy", "--optimizer=adamw",
             "--lr=1e-3"]

    def compile_(tag, extra):
        out = os.path.join(d, f"{name}_{tag}")
        if args.pp_split and "pp=2" in extra:
            extra = extra + ["--pp-split", args.pp_split]
        run([args.dist_opt, onnx_path] + flags + extra +
            ["-o", out, "--name", name])
        return os.path.join(out, name)

    title = {"gpt": "GPT-style LM (d=256, 2 layers, 64 tokens)",
             "mlp8": "MLP of 8 Linear layers (1536 -> 1024 x 8)"}[name]
    print(f"{title}, AdamW, global batch {batch}, p=2 ranks of one thread")
    print(f"{'m':>3} {'schedule':>8}  {'bubble':>7} {'sim':>6} {'model':>6} "
          f"{'(p-1)/m':>7}  {'slowest':>7} {'sim':>6}  {'step ms':>8} "
          f"{'sim ms':>7} {'err':>5} {'model ms':>8}  "
          f"{'held MB (rank 0, 1)':>19} {'sim mb held':>11}")
    runs = {}
    best = {}
    for m in args.micro_batches:
        exes = {}
        for r in range(args.repeat):
            for sched in SCHEDULES:
                if sched == "gpipe" and r:
                    continue
                tag = f"pp2_{sched}_m{m}"
                try:
                    if sched not in exes:
                        exes[sched] = compile_(
                            tag, ["--mesh", "pp=2", "--schedule", sched,
                                  "--micro-batches", str(m),
                                  "--cluster", "local"])
                    exe = exes[sched]
                    model = cost_model_prediction(os.path.dirname(exe))
                    _, traces = train(exe, files, batch, args.steps, 2,
                                      args.work, f"{name}_{tag}")
                    a = analyse(traces, sched, m, simulate)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print(f"{m:>3} {sched:>8}  error: {e}")
                    failed.append(f"{name} {tag}")
                    continue
                sim = a["sim"]
                err = abs(sim["step_s"] - a["step_s"]) / a["step_s"]
                held = ", ".join(f"{b / 1e6:.2f}" for b in a["held_bytes"])
                print(f"{m:>3} {sched:>8}  {a['bubble']:>7.3f} "
                      f"{sim['mean_bubble']:>6.3f} {model['bubble']:>6.3f} "
                      f"{sim['analytic']:>7.3f}  {a['slowest']:>7.3f} "
                      f"{sim['slowest_bubble']:>6.3f}  "
                      f"{a['step_s'] * 1e3:>8.1f} {sim['step_s'] * 1e3:>7.1f} "
                      f"{err:>5.0%} {model['step_s'] * 1e3:>8.1f}  "
                      f"{held:>19} {str(sim['held_whole']):>11}",
                      flush=True)
                if m not in best or a["step_s"] < best[m][1]:
                    best[m] = (sched, a["step_s"])
                runs.setdefault((m, sched), []).append(a)

    print(f"\n{name}: zb-h1's bubble over 1f1b's, measured, per repeat "
          f"(target: at most 0.5); median (range)")
    print(f"{'m':>3}  {'mean of the stages':<34} {'slowest stage':<34}")
    for m in args.micro_batches:
        pairs = [(zb, ob) for zb, ob in zip(runs.get((m, "zb-h1"), []),
                                             runs.get((m, "1f1b"), []))
                 if ob["bubble"] > 0 and ob["slowest"] > 0]
        if not pairs:
            continue
        mean = [zb["bubble"] / ob["bubble"] for zb, ob in pairs]
        slow = [zb["slowest"] / ob["slowest"] for zb, ob in pairs]
        print(f"{m:>3}  " +
              f"{' '.join(f'{v:.2f}' for v in mean):<18} "
              f"{median_and_range(mean):<15} " +
              f"{' '.join(f'{v:.2f}' for v in slow):<18} "
              f"{median_and_range(slow)}")
    print()
    return best, compile_, batch, files, d


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--models", nargs="+", default=["gpt", "mlp8"],
                   choices=["gpt", "mlp8"])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--micro-batches", type=int, nargs="+", default=[4, 8, 16])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", default="/tmp/dist-pp-bench")
    p.add_argument("--pp-split", default="",
                   help="dist-opt's --pp-split for the pipelined runs (the "
                   "stage boundary by hand; default: the planner's)")
    p.add_argument("--dist-opt",
                   default=os.path.join(REPO_ROOT, "build", "bin", "dist-opt"))
    args = p.parse_args()
    if args.steps <= WARMUP:
        p.error(f"--steps must be more than the {WARMUP} warm-up steps")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    simulate = os.path.join(os.path.dirname(args.dist_opt), "dist-pp-simulate")
    os.makedirs(args.work, exist_ok=True)
    failed = []
    results = {}
    for name in args.models:
        results[name] = bubbles(name, args, simulate, failed)

    print("predicted only (equal stage times, F = I = W = 1): bubble")
    print(f"{'p':>3} {'m':>3}  " + "  ".join(f"{s:>7}" for s in SCHEDULES))
    for pp in (4, 8):
        for m in args.micro_batches:
            row = []
            for sched in SCHEDULES:
                sim = json.loads(run([simulate, sched, str(m)] +
                                     ["1,1,1"] * pp))
                row.append(f"{sim['mean_bubble']:>7.3f}")
            print(f"{pp:>3} {m:>3}  " + "  ".join(row))

    if "gpt" not in results:
        return 1 if failed else 0
    best, compile_, batch, files, d = results["gpt"]
    print("\nthroughput of the GPT, samples/s (one thread per process)")
    try:
        one = compile_("one", [])
        rows, _ = train(one, files, batch, args.steps, 1, args.work, "one")
        one_s = statistics.median(batch / r["samples_per_s"]
                                  for r in rows[WARMUP:])
        torch_one = one_torch(d, batch, args.steps, 1)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"error: {e}")
        return 1
    print(f"{'m':>3}  {'dist-opt 1':>10} {'dist-opt pp=2':>13} {'x':>5}  "
          f"{'torch 1':>8} {'torch GPipe 2':>13} {'x':>5}")
    for m in args.micro_batches:
        if m not in best:
            continue
        try:
            tg = torch_run(d, args.steps, m, 2)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"{m:>3}  error: {e}")
            failed.append(f"torch GPipe m={m}")
            continue
        sched, s = best[m]
        print(f"{m:>3}  {batch / one_s:>10.1f} {batch / s:>13.1f} "
              f"{one_s / s:>5.2f}  {batch / torch_one:>8.1f} "
              f"{batch / tg:>13.1f} {torch_one / tg:>5.2f}  "
              f"(dist-opt: {sched})", flush=True)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
