#!/usr/bin/python3
#===- bench/cost_model.py - Predicted against measured step time ----------===#
# SPDX-License-Identifier: Apache-2.0
#
# Checks the cost model on this machine: for every model of the CPU
# benchmark (bench/export_bench_models.py: MLP at batch 64, GPT-style LM at
# batch 4 x 64 tokens, residual CNN at batch 8, DLRM at batch 128), for
# inference and for training (AdamW), and for each thread count, compiles
# the model once, then runs --repeats rounds, each between two calibrations
# of the machine (`dist-opt calibrate`; one before the first round and one
# after each). From each calibration it reads each row's predicted
# single-process step time from plan.json (`--emit=plan --cluster
# local-N.yaml --plan-threads T`); each round runs each row's executable
# once (inference: `--bench N`, median latency; training: `train --log`,
# median step time after warm-up). A round's prediction is the geometric
# mean of its two calibrations' predictions, and a row's error is the
# median over the rounds of (predicted - measured) / measured; predicted
# and measured are printed as their medians over the rounds, with each
# round's error. The machine's speed in each calibration is printed too.
# With --cluster FILE, every round predicts from FILE.
# The target is an error within 15% for every row.
#
#   /usr/bin/python3 bench/cost_model.py [--threads 1 2] [--model ...]
#       [--iterations 50] [--min-seconds 0.5] [--repeats 5]
#       [--work /tmp/dist-cost-bench]
#
# Exits with 0 when every row ran (whatever the error), 1 otherwise.

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

import cpu_training  # noqa: E402  (training export and data)

MODELS = ("mlp", "gpt", "resnet", "dlrm")
TARGET = 0.15


def export_inference(name, work):
    """Exports `name` in eval mode; returns (onnx path, batch, {input: npy})."""
    import export_bench_models as ebm
    model, shapes, ins, outs, batch, int_high = ebm.make_bench_model(name)
    d = os.path.join(work, name + "-infer")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".onnx")
    ebm.export_static(model, ebm.example_args(shapes, ins), ins, outs, path)
    rng = np.random.RandomState(0)
    files = {}
    for shape, iname in zip(shapes, ins):
        if iname in ("idx", "sparse"):
            arr = rng.randint(0, int_high, size=shape).astype(np.int64)
        else:
            arr = rng.randn(*shape).astype(np.float32)
        files[iname] = os.path.join(d, iname + ".npy")
        np.save(files[iname], arr)
    return path, batch, files


def compile_model(dist_opt, path, out_dir, name, threads, train, emit=None,
                  cluster=None):
    """Compiles (or with emit="plan", only plans) the model; returns
    (predicted step time in ms from plan.json, error text)."""
    cmd = [dist_opt, path, "-o", out_dir, "--name", name, "--plan-threads",
           str(threads)]
    if cluster:
        cmd += ["--cluster", cluster]
    if emit:
        cmd += ["--emit=" + emit]
    if train:
        cmd += ["--train", "--loss=" + cpu_training.LOSS[name],
                "--optimizer=adamw", "--lr=1e-3"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    with open(os.path.join(out_dir, "plan.json")) as f:
        plan = json.load(f)
    return plan["predicted"]["step_time_ms"], ""


def measure_inference(exe, files, threads, iterations):
    cmd = [exe, "--threads", str(threads), "--bench", str(iterations),
           "--output-dir", os.path.join(os.path.dirname(exe), "results")]
    for k, v in files.items():
        cmd += ["--input", "%s=%s" % (k, v)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    for tok in r.stdout.split():
        if tok.startswith("latency_ms_median="):
            return float(tok.split("=", 1)[1]), ""
    return None, "no latency in: " + r.stdout.strip()


def measure_training(exe, batch, files, label, threads, steps, work):
    warmup = 5
    log = os.path.join(work, "cost-log.jsonl")
    cmd = [exe, "train", "--batch-size", str(batch), "--steps",
           str(warmup + steps), "--threads", str(threads), "--log", log,
           "--quiet", "--data", "label=" + label]
    for k, v in files.items():
        cmd += ["--data", "%s=%s" % (k, v)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    rows = [json.loads(line) for line in open(log)]
    return float(np.median([batch / s["samples_per_s"] * 1e3
                            for s in rows[warmup:]])), ""


def calibrate(dist_opt, path):
    """Runs `dist-opt calibrate -o path`; returns (seconds, error text)."""
    t0 = time.perf_counter()
    r = subprocess.run([dist_opt, "calibrate", "-o", path, "--quiet"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return time.perf_counter() - t0, ""


def main():
    ap = argparse.ArgumentParser(
        description="cost model: predicted against measured step time")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--model", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--iterations", type=int, default=50,
                    help="least timed iterations (steps) per run")
    ap.add_argument("--min-seconds", type=float, default=0.5,
                    help="each run lasts about this long at the predicted "
                    "step time (more iterations than --iterations when "
                    "steps are short), so that the median is the steady "
                    "state: a model with large embedding tables pages its "
                    "rows in over many runs")
    ap.add_argument("--repeats", type=int, default=5,
                    help="rounds: each runs every row once between two "
                    "calibrations and predicts it from both; a row's error "
                    "is the median of its rounds' errors (this machine is "
                    "shared: its speed moves by 15-35%% for minutes at a "
                    "time)")
    ap.add_argument("--work", default="/tmp/dist-cost-bench")
    ap.add_argument("--cluster", help="use this cluster file in every round "
                    "instead of calibrating before each")
    ap.add_argument("--dist-opt", default=os.path.join(REPO_ROOT, "build",
                                                       "bin", "dist-opt"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if a.cluster and not os.path.isfile(a.cluster):
        print("cost_model.py: --cluster %s: no such file" % a.cluster)
        return 1

    # Executables are compiled once: codegen does not read the cluster file
    # (only the plan does), so one binary serves every round's prediction.
    ok = True
    pending = []
    for name in a.model:
        ipath, ibatch, ifiles = export_inference(name, a.work)
        tpath, tbatch, tfiles, label = cpu_training.export_and_data(name,
                                                                    a.work)
        for threads in a.threads:
            for mode in ("inference", "training"):
                train = mode == "training"
                path = tpath if train else ipath
                out_dir = os.path.join(a.work, "%s-%s-%d" % (name, mode,
                                                             threads)) + "/"
                pred, err = compile_model(a.dist_opt, path, out_dir, name,
                                          threads, train, cluster=a.cluster)
                if pred is None:
                    print("%s %s: compile failed: %s" % (name, mode, err))
                    ok = False
                    continue
                exe = out_dir + name
                if train:
                    run = (lambda it, exe=exe, threads=threads, tb=tbatch,
                           tf=tfiles, lb=label: measure_training(
                               exe, tb, tf, lb, threads, it, a.work))
                else:
                    run = (lambda it, exe=exe, threads=threads, f=ifiles:
                           measure_inference(exe, f, threads, it))
                pending.append(dict(name=name, mode=mode, threads=threads,
                                    path=path, train=train, run=run,
                                    cal_preds=[], preds=[], meas=[]))

    # The runs of each round are bracketed by two calibrations (the one
    # before the first round, then one after each round), and the round's
    # prediction of a row is the geometric mean of the two calibrations'
    # predictions. This machine's memory bandwidth and second core come and
    # go for minutes at a time (15-35% of its speed): a calibration taken
    # minutes before a measurement describes another machine, so each
    # round's prediction is paired with the runs between its calibrations,
    # and a row's error is the median of its rounds' errors. With --cluster,
    # every round uses that one file. The machine's speed in each
    # calibration (GEMM, triad and in-place update rates at each thread
    # count) is printed against the fastest any calibration saw, so that a
    # round the machine changed in shows.
    fastest = {}

    def speed_figures(path):
        """The rates the speed report compares, read from a cluster file
        `dist-opt calibrate` wrote; {} when it has none of them."""
        import yaml
        with open(path) as f:
            doc = yaml.safe_load(f)
        fig = {}
        try:
            cal = doc["nodes"][0]["devices"][0]["calibration"]
        except (KeyError, IndexError, TypeError):
            return fig
        for series in cal.get("gemm", {}).get("f32", []):
            sizes = dict((int(s), v) for s, v in series["flops_by_size"])
            if series["threads"] in a.threads and 256 in sizes:
                fig["gemm%d" % series["threads"]] = sizes[256]
        for t in a.threads:
            if t in cal.get("memory_bandwidth", {}):
                fig["triad%d" % t] = cal["memory_bandwidth"][t]
            table = (cal.get("loop_bandwidth", {}) if t == 1 else
                     cal.get("loop_bandwidth_threads", {}).get(t, {}))
            if "in_place" in table:
                fig["in_place%d" % t] = table["in_place"][-1][1]
        for k, v in fig.items():
            fastest[k] = max(fastest.get(k, 0.0), v)
        return fig

    def speed(fig):
        """Geometric mean of fig's figures over the fastest ones."""
        if not fig:
            return float("nan")
        return math.exp(sum(math.log(v / fastest[k]) for k, v in fig.items())
                        / len(fig))

    failed = set()

    def fail(i, what, err):
        """Drops row i from the rest of the measurement."""
        row = pending[i]
        print("%s %s: %s failed: %s" % (row["name"], row["mode"], what, err))
        failed.add(i)

    def predict(cal_index, cluster):
        """Appends each live row's prediction from `cluster`."""
        for i, row in enumerate(pending):
            if i in failed:
                continue
            plan_dir = os.path.join(a.work, "plan-%s-%s-%d-c%d" % (
                row["name"], row["mode"], row["threads"], cal_index)) + "/"
            pred, err = compile_model(a.dist_opt, row["path"], plan_dir,
                                      row["name"], row["threads"],
                                      row["train"], emit="plan",
                                      cluster=cluster)
            if pred is None:
                fail(i, "plan", err)
                continue
            row["cal_preds"].append(pred)

    def calibration(cal_index):
        """Calibrates (unless --cluster) and predicts every row from it;
        returns the speed figures of the calibration, None on failure."""
        cluster = a.cluster
        if not cluster:
            cluster = os.path.join(a.work, "local-%d.yaml" % cal_index)
            secs, err = calibrate(a.dist_opt, cluster)
            if secs is None:
                print("calibration %d: failed: %s" % (cal_index, err))
                return None
            print("calibration %d: %.1f s: %s" % (cal_index, secs, cluster))
        predict(cal_index, cluster)
        return speed_figures(cluster) if not a.cluster else {}

    rounds = max(1, a.repeats)
    speeds = [calibration(0)]
    if speeds[0] is None:
        return 1
    for rnd in range(rounds):
        for i, row in enumerate(pending):
            if i in failed:
                continue
            # Each run lasts about --min-seconds at the first prediction.
            pred = row["cal_preds"][0]
            iterations = int(min(max(a.iterations,
                                     a.min_seconds / (pred * 1e-3)),
                                 2000 if row["train"] else 20000))
            meas, err = row["run"](iterations)
            if meas is None:
                fail(i, "run", err)
                continue
            row["meas"].append(meas)
        fig = calibration(rnd + 1)
        if fig is None:
            # The rounds bracketed so far are still reported.
            ok = False
            for row in pending:
                del row["meas"][len(row["cal_preds"]) - 1:]
            break
        speeds.append(fig)
    for row in pending:
        cp = row["cal_preds"]
        row["preds"] = [math.sqrt(cp[r] * cp[r + 1])
                        for r in range(len(cp) - 1)]
    if not a.cluster and len(speeds) > 1:
        print("\nmachine speed in each calibration (geometric mean of its "
              "GEMM, triad and in-place rates over the fastest seen): " +
              " ".join("%.2f" % speed(f) for f in speeds))

    ok = ok and not failed

    rows = []
    for i, row in enumerate(pending):
        if i in failed:
            continue
        errors = [(p - m) / m for p, m in zip(row["preds"], row["meas"])]
        rows.append((row["name"], row["mode"], row["threads"],
                     float(np.median(row["preds"])),
                     float(np.median(row["meas"])),
                     float(np.median(errors)), errors))

    print("\n%-8s %-10s %7s %13s %12s %8s  %s" % (
        "model", "mode", "threads", "predicted ms", "measured ms", "error",
        "each round's error"))
    within = 0
    for name, mode, threads, pred, meas, e, errors in rows:
        within += abs(e) <= TARGET
        print("%-8s %-10s %7d %13.3f %12.3f %+7.1f%%  %s" % (
            name, mode, threads, pred, meas, 100 * e,
            " ".join("%+.1f%%" % (100 * x) for x in errors)))
    if rows:
        worst = max(abs(r[5]) for r in rows)
        print("\n%d of %d within %.0f%%; worst %.1f%%; mean |error| %.1f%%" % (
            within, len(rows), 100 * TARGET, 100 * worst,
            100 * sum(abs(r[5]) for r in rows) / len(rows)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
