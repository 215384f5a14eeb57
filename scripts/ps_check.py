#!/usr/bin/python3
#===- scripts/ps_check.py - Check training with parameter-server tables ---===#
# SPDX-License-Identifier: Apache-2.0
#
"""Trains a DLRM-style model with its tables on parameter servers and checks
the results against one process and against PyTorch.

The model is export_models.DLRM with 8 embedding tables (dim 16) of 300 to
40 rows, a bottom MLP over 13 dense features and a top MLP over their
pairwise interactions ending in a sigmoid; static batch 16, BCE loss on the
probability (dist-opt --loss=bce, PyTorch F.binary_cross_entropy). The data
(numpy RandomState(7)) has 5 batches, used in order; sparse ids repeat
within a batch and some are negative (ONNX Gather counts them from the end).
Every table goes to the servers (dist-opt --ps-tables=all).

Checks (each prints one PASS/FAIL line with its figures):
  equal <opt>   sync mode, 2 workers x 2 servers started by one launcher
                command (mpirun -np 2 <model> ps-server --shard-dir D : -np 2
                <model> train ...), against one process (its server in a
                thread): per-step losses and final tables within --tol.
  torch <opt>   the one-process run's per-step losses and final tables
                against PyTorch from the same initial state: dense
                parameters with torch.optim.SGD (dist-opt --optimizer=sgd),
                tables with SGD, Adagrad(eps=1e-10) or SparseAdam (lazy
                Adam, the servers' formula) on nn.Embedding(sparse=True)
                (dist-opt --ps-optimizer).
  modes         async (also with --ps-prefetch: each step's rows pulled
                while the previous step computes) and ssp:2 over
                --mode-steps steps (2 x 2): the mean loss of the last 10
                steps within 5% of sync's; ssp:2's
                servers report a largest step gap of at most 3 (K + 1).
  resume <opt>  a checkpoint of 2 workers x 2 servers at step 10 of 20,
                resumed by one process (its server starts from the
                checkpoint's tables, their Adagrad or Adam state and counts
                of updates) and, for SGD, by 2 workers x 1 server (ps-server
                --params <checkpoint>): losses and tables as the
                uninterrupted run's.
  kill          two long-lived servers (ps-server --shard-dir, fixed ports),
                2 workers with --ps-servers; server 1 is killed with SIGKILL
                mid-run and started again on its directory: the run
                finishes and its tables equal a run without the kill.
  init          tables the servers draw (--ps-init=uniform:-0.05,0.05):
                two of them graph inputs of the model (no values shipped),
                the others initializers chosen by a pattern; the parameter
                file holds none of them; 2 workers x 2 servers equal one
                process; rows no id reached equal in both runs, lie within
                the bounds with the uniform's spread, and differ between
                tables; a checkpoint resumed alone ends where the
                uninterrupted run does; --export-onnx streams every table
                into external data and turns the declared ones into
                initializers; one-line errors for a graph-input
                table without --ps-init, --ps-init without --ps-tables and
                bounds the wrong way round.
  errors        --ps-prefetch under sync, an id outside its table, an unreachable server (error
                naming it within --ps-timeout), a shard directory of another
                model, --data for pulled rows: one-line errors, exit 1.
Ends with `N passed, N failed`.
"""

import argparse
import copy
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402
from script_util import Checks  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

TABLES = (300, 250, 200, 150, 100, 80, 60, 40)
DIM = 16
BATCH = 16
BATCHES = 5
LR = {"sgd": 0.05, "adagrad": 0.05, "adam": 0.01}
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl",
          "self,vader"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_data(rs):
    n = BATCH * BATCHES
    dense = rs.randn(n, 13).astype(np.float32)
    # Few distinct ids per table so that a batch repeats some; a quarter
    # negative.
    cols = []
    for rows in TABLES:
        ids = rs.randint(0, min(rows, 24), size=n)
        neg = rs.rand(n) < 0.25
        ids = np.where(neg, ids - rows, ids)
        cols.append(ids)
    sparse = np.stack(cols, 1).astype(np.int64)
    label = rs.randint(0, 2, size=(n, 1)).astype(np.float32)
    return dense, sparse, label


def build(work):
    torch.manual_seed(0)
    module = export_models.DLRM(num_dense=13, table_sizes=TABLES, dim=DIM)
    onnx_path = os.path.join(work, "dlrm.onnx")
    m = copy.deepcopy(module)
    torch.onnx.export(m, (torch.zeros(BATCH, 13),
                          torch.zeros(BATCH, len(TABLES), dtype=torch.long)),
                      onnx_path, input_names=["dense", "sparse"],
                      output_names=["prob"], opset_version=17,
                      do_constant_folding=False)
    dense, sparse, label = make_data(np.random.RandomState(7))
    files = {}
    for name, arr in (("dense", dense), ("sparse", sparse),
                      ("label", label)):
        files[name] = os.path.join(work, name + ".npy")
        np.save(files[name], arr)
    return module, onnx_path, (dense, sparse, label), files


def run(cmd, timeout=600, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}... exited {p.returncode}: "
                           f"{(p.stderr or p.stdout).strip()[-600:]}")
    return p


def compile_model(args, onnx_path, out, optimizer, extra=()):
    run([args.dist_opt, onnx_path, "--train", "--loss=bce",
         "--optimizer=sgd", f"--lr={LR[optimizer]}",
         "--ps-tables=all", f"--ps-optimizer={optimizer}", "-o", out,
         "--name", "dlrm"] + list(extra))
    return os.path.join(out, "dlrm")


def data_args(files):
    return ["--data", f"dense={files['dense']}", "--data",
            f"sparse={files['sparse']}", "--data", f"label={files['label']}"]


def read_losses(log):
    with open(log) as f:
        return [json.loads(line)["loss"] for line in f]


def read_tables(d):
    return {os.path.basename(p)[:-4]: np.load(p)
            for p in glob.glob(os.path.join(d, "tables.*.npy"))}


def max_table_diff(a, b):
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


def torch_train(module, data, optimizer, steps):
    """PyTorch reference: sparse embeddings for the tables."""
    m = copy.deepcopy(module)
    for i, t in enumerate(m.tables):
        e = nn.Embedding(t.num_embeddings, t.embedding_dim, sparse=True)
        e.weight.data.copy_(t.weight.data)
        m.tables[i] = e
    dense_params = [p for n, p in m.named_parameters()
                    if not n.startswith("tables.")]
    table_params = [t.weight for t in m.tables]
    lr = LR[optimizer]
    if optimizer == "sgd":
        opts = [torch.optim.SGD(dense_params + table_params, lr=lr)]
    elif optimizer == "adagrad":
        opts = [torch.optim.SGD(dense_params, lr=lr),
                torch.optim.Adagrad(table_params, lr=lr, eps=1e-10)]
    else:
        opts = [torch.optim.SGD(dense_params, lr=lr),
                torch.optim.SparseAdam(table_params, lr=lr)]
    dense, sparse, label = (torch.from_numpy(a) for a in data)
    # ONNX Gather counts negative ids from the end; nn.Embedding does not.
    rows = torch.tensor(TABLES)
    sparse = torch.where(sparse < 0, sparse + rows, sparse)
    losses = []
    for s in range(steps):
        b = s % BATCHES
        sl = slice(b * BATCH, (b + 1) * BATCH)
        out = m(dense[sl], sparse[sl])
        loss = F.binary_cross_entropy(out, label[sl])
        for o in opts:
            o.zero_grad()
        loss.backward()
        for o in opts:
            o.step()
        losses.append(loss.item())
    tables = {f"tables.{i}.weight": t.weight.detach().numpy()
              for i, t in enumerate(m.tables)}
    return losses, tables


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mpmd_train(exe, files, d, steps, mode, extra=()):
    """2 servers and 2 workers started by one launcher command."""
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    log = os.path.join(d, "log.jsonl")
    p = run(MPIRUN + ["-np", "2", exe, "ps-server", "--shard-dir",
                      os.path.join(d, "shards"), ":", "-np", "2", exe,
                      "train"] + data_args(files) +
            ["--steps", str(steps), "--log", log, "--save-params",
             os.path.join(d, "params"), "--quiet", "--threads", "1",
             f"--ps-mode={mode}"] + list(extra))
    return p, read_losses(log), read_tables(os.path.join(d, "params"))


def alone_train(exe, files, d, steps):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    log = os.path.join(d, "log.jsonl")
    run([exe, "train"] + data_args(files) +
        ["--steps", str(steps), "--log", log, "--save-params",
         os.path.join(d, "params"), "--quiet", "--threads", "1"])
    return read_losses(log), read_tables(os.path.join(d, "params"))


def check_equal(args, checks, module, onnx_path, data, files, optimizer):
    work = os.path.join(args.work, optimizer)
    exe1 = compile_model(args, onnx_path, os.path.join(work, "one"),
                         optimizer)
    exe2 = compile_model(args, onnx_path, os.path.join(work, "dp2"),
                         optimizer, ["--mesh", "dp=2"])
    l1, t1 = alone_train(exe1, files, os.path.join(work, "run1"), args.steps)
    _, l2, t2 = mpmd_train(exe2, files, os.path.join(work, "run2"),
                           args.steps, "sync")
    dl = max(abs(a - b) for a, b in zip(l1, l2))
    dt = max_table_diff(t1, t2)
    checks.report(f"equal {optimizer}", len(l2) == args.steps and
                  dl <= args.tol and dt <= args.tol,
                  f"2 workers x 2 servers vs one process over {args.steps} "
                  f"steps: losses {dl:.3g}, tables {dt:.3g}")
    ref_l, ref_t = torch_train(module, data, optimizer, args.steps)
    rl = max(abs(a - b) / max(abs(b), 1e-3) for a, b in zip(l1, ref_l))
    rt = max_table_diff(t1, ref_t)
    checks.report(f"torch {optimizer}", rl <= args.tol and rt <= args.tol,
                  f"one process vs PyTorch: losses (relative) {rl:.3g}, "
                  f"tables {rt:.3g}")
    return exe2


def check_modes(args, checks, exe2, files):
    work = os.path.join(args.work, "modes")
    tails = {}
    gap = None
    runs = (("sync", "sync", []), ("async", "async", []),
            ("async prefetch", "async", ["--ps-prefetch"]),
            ("ssp:2", "ssp:2", []))
    for name, mode, extra in runs:
        p, losses, _ = mpmd_train(exe2, files,
                                  os.path.join(work, name.replace(":", "")
                                               .replace(" ", "-")),
                                  args.mode_steps, mode, extra)
        tails[name] = float(np.mean(losses[-10:]))
        if mode == "ssp:2":
            gaps = [int(line.rsplit(" ", 1)[1]) for line in
                    p.stdout.splitlines() if "max step gap" in line]
            gap = max(gaps) if gaps else None
    for mode in ("async", "async prefetch", "ssp:2"):
        rel = abs(tails[mode] - tails["sync"]) / tails["sync"]
        checks.report(f"modes {mode}", rel <= 0.05,
                      f"mean loss of the last 10 of {args.mode_steps} steps "
                      f"{tails[mode]:.5f} vs sync {tails['sync']:.5f} "
                      f"({100 * rel:.2f}%)")
    checks.report("modes ssp:2 bound", gap is not None and gap <= 3,
                  f"largest step gap the servers served: {gap} (bound 3)")


def start_server(exe, shard, port, shard_dir, addr_file):
    if os.path.exists(addr_file):
        os.remove(addr_file)
    p = subprocess.Popen([exe, "ps-server", "--shard", str(shard), "--shards",
                          "2", "--workers", "2", "--shard-dir", shard_dir,
                          "--bind", f"tcp://127.0.0.1:{port}",
                          "--address-file", addr_file, "--snapshot-every",
                          "50"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not os.path.exists(addr_file):
        if p.poll() is not None or time.time() > deadline:
            raise RuntimeError("ps-server did not start: " +
                               p.stderr.read().strip())
        time.sleep(0.02)
    return p


def external_run(exe, files, d, steps, kill_at=None):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    ports = [free_port(), free_port()]
    addrs = [os.path.join(d, f"server{k}.addr") for k in range(2)]
    servers = [start_server(exe, k, ports[k], os.path.join(d, "shards"),
                            addrs[k]) for k in range(2)]
    log = os.path.join(d, "log.jsonl")
    worker = subprocess.Popen(
        MPIRUN + ["-np", "2", exe, "train"] + data_args(files) +
        ["--steps", str(steps), "--log", log, "--save-params",
         os.path.join(d, "params"), "--quiet", "--threads", "1",
         "--ps-servers", f"@{addrs[0]},@{addrs[1]}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = False
    if kill_at is not None:
        while worker.poll() is None:
            done = 0
            if os.path.exists(log):
                with open(log) as f:
                    done = sum(1 for _ in f)
            if done >= kill_at:
                servers[1].send_signal(signal.SIGKILL)
                servers[1].wait()
                killed = True
                time.sleep(0.3)
                servers[1] = start_server(exe, 1, ports[1],
                                          os.path.join(d, "shards"), addrs[1])
                break
            time.sleep(0.005)
    out, err = worker.communicate(timeout=600)
    codes = [s.wait(timeout=60) for s in servers]
    recovered = [line for s in servers for line in s.stdout.read().splitlines()
                 if "recovered" in line]
    if worker.returncode != 0 or any(codes):
        raise RuntimeError(f"workers exited {worker.returncode}, servers "
                           f"{codes}: {err.strip()[-600:]}")
    return killed, recovered, read_tables(os.path.join(d, "params"))


def check_kill(args, checks, exe2, files):
    work = os.path.join(args.work, "kill")
    _, _, ref = external_run(exe2, files, os.path.join(work, "plain"),
                             args.kill_steps)
    killed, recovered, got = external_run(exe2, files,
                                          os.path.join(work, "killed"),
                                          args.kill_steps,
                                          kill_at=args.kill_steps // 3)
    d = max_table_diff(ref, got)
    checks.report("kill", killed and d == 0.0,
                  f"server 1 killed at step {args.kill_steps // 3} of "
                  f"{args.kill_steps} and restarted ({recovered[-1] if recovered else '?'}):"
                  f" tables vs the run without the kill {d:.3g}")


def check_resume(args, checks, exe1, exe2, files, optimizer="sgd"):
    """A checkpoint of 2 workers x 2 servers resumed by one process (its
    server reads the checkpoint's tables, with their optimizer state and
    counts of updates) and, for SGD, by 2 workers x 1 server (ps-server
    --params of the checkpoint): both end where the uninterrupted run
    does."""
    work = os.path.join(args.work, "resume", optimizer)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    steps = 20
    ck = os.path.join(work, "ck")
    log = os.path.join(work, "full.jsonl")
    run(MPIRUN + ["-np", "2", exe2, "ps-server", ":", "-np", "2", exe2,
                  "train"] + data_args(files) +
        ["--steps", str(steps), "--checkpoint-dir", ck, "--checkpoint-every",
         str(steps // 2), "--log", log, "--save-params",
         os.path.join(work, "full"), "--quiet", "--threads", "1"])
    full = read_tables(os.path.join(work, "full"))
    full_losses = read_losses(log)
    half = os.path.join(ck, "step-%08d" % (steps // 2))
    one_log = os.path.join(work, "one.jsonl")
    run([exe1, "train"] + data_args(files) +
        ["--steps", str(steps), "--resume", half, "--log", one_log,
         "--save-params", os.path.join(work, "one"), "--quiet", "--threads",
         "1"])
    one = read_tables(os.path.join(work, "one"))
    dl = max(abs(a - b) for a, b in zip(read_losses(one_log),
                                        full_losses[steps // 2:]))
    checks.report(f"resume {optimizer} one process", dl <= args.tol and
                  max_table_diff(one, full) <= args.tol,
                  f"step {steps // 2} of 2 workers x 2 servers resumed alone:"
                  f" losses {dl:.3g}, tables {max_table_diff(one, full):.3g}")
    if optimizer == "adam":
        # A checkpoint whose optimizer state does not fit its table.
        bad = os.path.join(work, "bad-state")
        shutil.copytree(half, bad)
        np.save(os.path.join(bad, "tables.0.weight.ps_state.npy"),
                np.zeros((3, 2), np.float32))
        expect_error(checks, "checkpoint state of another shape",
                     [exe1, "train"] + data_args(files) +
                     ["--steps", str(steps), "--resume", bad],
                     "tables.0.weight.ps_state.npy: not the optimizer state "
                     "of table 'tables.0.weight'")
    if optimizer != "sgd":
        return
    run(MPIRUN + ["-np", "1", exe2, "ps-server", "--params", half, ":",
                  "-np", "2", exe2, "train"] + data_args(files) +
        ["--steps", str(steps), "--resume", half, "--save-params",
         os.path.join(work, "two"), "--quiet", "--threads", "1"])
    two = read_tables(os.path.join(work, "two"))
    checks.report("resume sgd 1 server", max_table_diff(two, full) <= args.tol,
                  f"resumed with 2 workers x 1 server: tables "
                  f"{max_table_diff(two, full):.3g}")


INIT = (-0.05, 0.05)
DECLARED = ("tables.0.weight", "tables.1.weight")


def declared_model(work, onnx_path):
    """The model with DECLARED as graph inputs of their shape, without
    values, as a model whose tables are too large to ship declares them."""
    import onnx
    from onnx import TensorProto, helper
    m = onnx.load(onnx_path)
    g = m.graph
    kept = [t for t in g.initializer if t.name not in DECLARED]
    for t in g.initializer:
        if t.name in DECLARED:
            g.input.append(helper.make_tensor_value_info(
                t.name, TensorProto.FLOAT, list(t.dims)))
    del g.initializer[:]
    g.initializer.extend(kept)
    path = os.path.join(work, "declared.onnx")
    onnx.save(m, path)
    return path


def check_init(args, checks, files, sparse, onnx_path):
    work = os.path.join(args.work, "init")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model = declared_model(work, onnx_path)
    init = f"--ps-init=uniform:{INIT[0]},{INIT[1]}"
    tables = "--ps-tables=" + ",".join(DECLARED) + ",tables.[2-7].weight"

    def build(out, extra=()):
        run([args.dist_opt, model, "--train", "--loss=bce", "--optimizer=sgd",
             f"--lr={LR['sgd']}", tables, init, "-o", out, "--name", "dlrm"] +
            list(extra))
        return os.path.join(out, "dlrm")

    exe1 = build(os.path.join(work, "one"))
    exe2 = build(os.path.join(work, "dp2"), ["--mesh", "dp=2"])
    with open(os.path.join(work, "one", "dlrm.params"), "rb") as f:
        in_file = b"tables." in f.read()
    manifest = json.load(open(os.path.join(work, "one", "dlrm.json")))
    checks.report("init parameter file", not in_file and
                  len(manifest["ps"]["tables"]) == len(TABLES) and
                  manifest["ps"]["init"]["distribution"] == "uniform",
                  f"tables in dlrm.params: {in_file}; manifest: "
                  f"{len(manifest['ps']['tables'])} tables, init "
                  f"{manifest['ps']['init']}")
    steps = 10
    l1, t1 = alone_train(exe1, files, os.path.join(work, "run1"), steps)
    ck = os.path.join(work, "ck")
    _, l2, t2 = mpmd_train(exe2, files, os.path.join(work, "run2"), steps,
                           "sync", ["--checkpoint-dir", ck,
                                    "--checkpoint-every", str(steps // 2)])
    dl = max(abs(a - b) for a, b in zip(l1, l2))
    dt = max_table_diff(t1, t2)
    checks.report("init equal", len(l2) == steps and dl <= args.tol and
                  dt <= args.tol,
                  f"2 workers x 2 servers vs one process over {steps} steps:"
                  f" losses {dl:.3g}, tables {dt:.3g}")
    # Rows that no id reached still hold what the servers drew.
    untouched, same, free = [], True, []
    for i, rows in enumerate(TABLES):
        ids = sparse[:, i].astype(np.int64)
        used = np.zeros(rows, bool)
        used[np.where(ids < 0, ids + rows, ids)] = True
        a = t1[f"tables.{i}.weight"][~used]
        same &= bool(np.array_equal(a, t2[f"tables.{i}.weight"][~used]))
        untouched.append(a)
        free.append(set(np.flatnonzero(~used).tolist()))
    values = np.concatenate([a.ravel() for a in untouched])
    spread = float(values.std()) / ((INIT[1] - INIT[0]) / 12 ** 0.5)
    inside = bool(values.min() >= INIT[0] and values.max() < INIT[1])
    # The same id of two tables of the same dim draws different rows.
    row = min(free[6] & free[7])
    differ = not np.array_equal(t1["tables.6.weight"][row],
                                t1["tables.7.weight"][row])
    checks.report("init distribution", same and inside and differ and
                  abs(spread - 1) < 0.1,
                  f"{values.size} untouched values: equal in both runs "
                  f"{same}, within {INIT} {inside}, std / uniform's "
                  f"{spread:.3f}, tables differ {differ}")
    log = os.path.join(work, "resumed.jsonl")
    run([exe1, "train"] + data_args(files) +
        ["--steps", str(steps), "--resume",
         os.path.join(ck, "step-%08d" % (steps // 2)), "--log", log,
         "--save-params", os.path.join(work, "resumed"), "--export-onnx",
         os.path.join(work, "resumed.onnx"), "--quiet", "--threads", "1"])
    dl = max(abs(a - b) for a, b in zip(read_losses(log), l2[steps // 2:]))
    tr = read_tables(os.path.join(work, "resumed"))
    dt = max_table_diff(tr, t2)
    checks.report("init resume", dl <= args.tol and dt <= args.tol,
                  f"step {steps // 2} of 2 workers x 2 servers resumed alone:"
                  f" losses {dl:.3g}, tables {dt:.3g}")
    import onnx
    from onnx import TensorProto, numpy_helper
    path = os.path.join(work, "resumed.onnx")
    bare = onnx.load(path, load_external_data=False)
    external = sorted(t.name for t in bare.graph.initializer
                      if t.data_location == TensorProto.EXTERNAL)
    data_bytes = os.path.getsize(path + ".data")
    exported = onnx.load(path)
    inputs = [i.name for i in exported.graph.input]
    inits = {t.name: numpy_helper.to_array(t)
             for t in exported.graph.initializer}
    de = max(float(np.abs(inits[k] - tr[k]).max()) if k in inits else
             float("inf") for k in tr)
    checks.report("init export", inputs == ["dense", "sparse"] and de == 0 and
                  external == sorted(tr) and
                  data_bytes == sum(a.nbytes for a in tr.values()),
                  f"exported inputs {inputs}; {len(external)} tables streamed "
                  f"into {data_bytes} bytes of external data; largest "
                  f"difference {de:.3g}")
    expect_error(checks, "graph-input table without --ps-init",
                 [args.dist_opt, model, "--train", "--loss=bce", tables,
                  "-o", os.path.join(work, "bad")],
                 "'tables.0.weight': it is a graph input; a table without "
                 "values needs --ps-init")
    expect_error(checks, "--ps-init without --ps-tables",
                 [args.dist_opt, onnx_path, "--train", "--loss=bce", init,
                  "-o", os.path.join(work, "bad")],
                 "--ps-init needs --ps-tables")
    expect_error(checks, "--ps-init bounds",
                 [args.dist_opt, onnx_path, "--train", "--loss=bce",
                  "--ps-tables=all", "--ps-init=uniform:0.05,-0.05", "-o",
                  os.path.join(work, "bad")],
                 "LOW must be below HIGH")


def expect_error(checks, name, cmd, needle, timeout=120, within=None):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    took = time.time() - t0
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    ok = (p.returncode != 0 and any(needle in l for l in lines) and
          (within is None or took <= within))
    shown = next((l for l in lines if needle in l), lines[0] if lines else "")
    checks.report(f"errors {name}", ok,
                  f"exit {p.returncode} in {took:.1f}s: {shown.strip()}")


def check_errors(args, checks, exe1, exe2, files, onnx_path):
    work = os.path.join(args.work, "errors")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    bad = np.load(files["sparse"]).copy()
    bad[3, 2] = 200  # table 2 has 200 rows
    bad_path = os.path.join(work, "sparse_bad.npy")
    np.save(bad_path, bad)
    # The exchange of roles and addresses under a launcher keeps the job's
    # deadline for collectives: a server rank reads it too (given to the
    # server alone, it fails there).
    expect_error(checks, "DIST_RT_COMM_TIMEOUT of the role exchange",
                 MPIRUN + ["-np", "1", "env", "DIST_RT_COMM_TIMEOUT=soon",
                           exe2, "ps-server", ":", "-np", "2", exe2,
                           "train"] + data_args(files) + ["--steps", "2"],
                 "DIST_RT_COMM_TIMEOUT='soon' is not a number of seconds")
    expect_error(checks, "--ps-prefetch under sync",
                 [exe1, "train"] + data_args(files) +
                 ["--steps", "2", "--ps-prefetch"],
                 "--ps-prefetch needs --ps-mode async or ssp:K with K >= 1")
    expect_error(checks, "id outside its table",
                 [exe1, "train", "--data", f"dense={files['dense']}",
                  "--data", f"sparse={bad_path}", "--data",
                  f"label={files['label']}", "--steps", "2"],
                 "id 200 (sample 3, element 2) is outside table "
                 "'tables.2.weight' of 200 rows")
    port = free_port()
    expect_error(checks, "server unreachable",
                 [exe1, "train"] + data_args(files) +
                 ["--steps", "2", "--ps-servers", f"tcp://127.0.0.1:{port}",
                  "--ps-timeout", "2"],
                 f"tcp://127.0.0.1:{port}", within=20)
    # A shard directory of another model: the adam and sgd variants differ.
    other = os.path.join(args.work, "adam", "run2", "shards")
    if os.path.isdir(other):
        expect_error(checks, "shard directory of another model",
                     [exe2, "ps-server", "--shard", "0", "--shards", "2",
                      "--workers", "2", "--shard-dir", other],
                     "shard-0-of-2")
    expect_error(checks, "--data for pulled rows",
                 [exe1, "train"] + data_args(files) +
                 ["--data", f"tables.0.weight.rows={files['dense']}",
                  "--steps", "2"],
                 "takes rows pulled from the parameter server")


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dist-opt", default=os.path.join(ROOT, "build", "bin",
                                                      "dist-opt"))
    p.add_argument("--work", default="/tmp/dist-ps-check")
    p.add_argument("--optimizer", nargs="+", default=["sgd", "adagrad", "adam"],
                   choices=["sgd", "adagrad", "adam"])
    p.add_argument("--check", nargs="+",
                   default=["equal", "resume", "modes", "kill", "init",
                            "errors"],
                   choices=["equal", "resume", "modes", "kill", "init",
                            "errors"])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--mode-steps", type=int, default=300)
    p.add_argument("--kill-steps", type=int, default=1500)
    p.add_argument("--tol", type=float, default=1e-5)
    args = p.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(1)
    module, onnx_path, data, files = build(args.work)
    checks = Checks()
    exe = {}
    for opt in args.optimizer:
        try:
            exe[opt] = check_equal(args, checks, module, onnx_path, data,
                                   files, opt) if "equal" in args.check else \
                compile_model(args, onnx_path,
                              os.path.join(args.work, opt, "dp2"), opt,
                              ["--mesh", "dp=2"])
        except Exception as e:  # report and go on
            checks.report(f"equal {opt}", False, f"error: {e}")
    sgd2 = exe.get("sgd") or compile_model(
        args, onnx_path, os.path.join(args.work, "sgd", "dp2"), "sgd",
        ["--mesh", "dp=2"])
    if "resume" in args.check:
        for opt in args.optimizer:
            try:
                exe1 = compile_model(args, onnx_path,
                                     os.path.join(args.work, opt, "one"), opt)
                exe2 = exe.get(opt) or compile_model(
                    args, onnx_path, os.path.join(args.work, opt, "dp2"), opt,
                    ["--mesh", "dp=2"])
                check_resume(args, checks, exe1, exe2, files, opt)
            except Exception as e:
                checks.report(f"resume {opt}", False, f"error: {e}")
    for name, fn in (("modes", check_modes), ("kill", check_kill)):
        if name in args.check:
            try:
                fn(args, checks, sgd2, files)
            except Exception as e:
                checks.report(name, False, f"error: {e}")
    if "init" in args.check:
        try:
            check_init(args, checks, files, data[1], onnx_path)
        except Exception as e:
            checks.report("init", False, f"error: {e}")
    if "errors" in args.check:
        exe1 = compile_model(args, onnx_path,
                             os.path.join(args.work, "sgd", "one"), "sgd")
        check_errors(args, checks, exe1, sgd2, files, onnx_path)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
