#!/usr/bin/python3
#===- bench/ps_big_table.py - A table larger than a worker's budget -------===#
# SPDX-License-Identifier: Apache-2.0
#
"""Trains a model whose embedding table is 4x a worker's memory budget,
with the table on a parameter server, and reports the worker's peak
memory against the budget.

The model (ONNX built with onnx.helper, the table as external data): prob
= sigmoid(table[ids] @ w + b), table of --rows x 32 float32 (default
4,194,304 rows: 512 MiB), ids int64 [256] drawn uniformly, BCE, SGD. It is
compiled twice: with --ps-tables=all, and with the table in the model. The
first trains as `mpirun -np 1 <model> ps-server : -np 1 <model> train
--worker-memory B --save-params D --export-onnx F` (B = table / 4, default
128 MiB; the table is streamed from the server into both) and prints the
worker's peak resident memory (getrusage, after the saving) beside the
budget and the table; the
second is refused by the same budget before it starts. Servers create a
row when it is first touched, from the parameter file (mapped, read only
where touched), so the server's memory follows the rows the run touches.

Third, a table too large to ship (--declared-factor times the first, default
8: 4 GiB) declared as a graph input of its shape, without values, and
compiled with --ps-tables=table --ps-init=uniform:-0.05,0.05: the servers
draw the rows the run touches. Prints the artifact's parameter file size
and the worker's peak under the same budget.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl",
          "self,vader"]
DIM = 32
BATCH = 256


def make_model(rs, table, rows):
    """prob = sigmoid(table[ids] @ w + b): `table` the table's values, or
    None to declare it as a graph input of `rows` rows without values."""
    w = (rs.rand(DIM, 1).astype(np.float32) - 0.5)
    b = np.zeros((1,), np.float32)
    inputs = [helper.make_tensor_value_info("ids", TensorProto.INT64, [BATCH])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    if table is None:
        inputs.append(helper.make_tensor_value_info("table", TensorProto.FLOAT,
                                                    [rows, DIM]))
    else:
        inits.insert(0, numpy_helper.from_array(table, "table"))
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0),
         helper.make_node("MatMul", ["emb", "w"], ["logit0"]),
         helper.make_node("Add", ["logit0", "b"], ["logit"]),
         helper.make_node("Sigmoid", ["logit"], ["prob"])],
        "big_table", inputs,
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [BATCH, 1])],
        inits)
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 17)])


def build(work, rows):
    rs = np.random.RandomState(0)
    table = (rs.rand(rows, DIM).astype(np.float32) - 0.5) * 0.1
    model = make_model(rs, table, rows)
    path = os.path.join(work, "big.onnx")
    onnx.save_model(model, path, save_as_external_data=True,
                    all_tensors_to_one_file=True, location="big.data",
                    size_threshold=1024)
    n = BATCH * 20
    np.save(os.path.join(work, "ids.npy"),
            rs.randint(0, rows, n).astype(np.int64))
    np.save(os.path.join(work, "label.npy"),
            rs.randint(0, 2, (n, 1)).astype(np.float32))
    return path, table.nbytes


def build_declared(work, rows):
    """The model of build() with its table a graph input of `rows` rows."""
    rs = np.random.RandomState(1)
    path = os.path.join(work, "declared.onnx")
    onnx.save_model(make_model(rs, None, rows), path)
    np.save(os.path.join(work, "declared_ids.npy"),
            rs.randint(0, rows, BATCH * 20).astype(np.int64))
    return path


def run(cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if check and p.returncode != 0:
        sys.exit(f"error: {' '.join(cmd[:4])}... exited {p.returncode}: "
                 f"{(p.stderr or p.stdout).strip()[-800:]}")
    return p


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dist-opt",
                    default=os.path.join(ROOT, "build", "bin", "dist-opt"))
    ap.add_argument("--rows", type=int, default=4194304)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--declared-factor", type=int, default=8)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="dist-ps-big-")
    os.makedirs(work, exist_ok=True)
    onnx_path, table_bytes = build(work, args.rows)
    budget = max(1, table_bytes // 4 // 1048576)
    common = ["--train", "--loss=bce", "--optimizer=sgd", "--lr=0.1"]
    run([args.dist_opt, onnx_path] + common +
        ["--ps-tables=all", "-o", os.path.join(work, "ps"), "--name", "big"])
    run([args.dist_opt, onnx_path] + common +
        ["-o", os.path.join(work, "dense"), "--name", "big"])
    data = ["--data", f"ids={work}/ids.npy", "--data",
            f"label={work}/label.npy"]
    exe = os.path.join(work, "ps", "big")
    p = run(MPIRUN + ["-np", "1", exe, "ps-server", ":", "-np", "1", exe,
                      "train"] + data +
            ["--steps", str(args.steps), "--quiet", "--threads", "1",
             "--worker-memory", str(budget), "--save-params",
             os.path.join(work, "saved"), "--export-onnx",
             os.path.join(work, "exported.onnx")])
    peak = re.search(r"peak memory of worker 0: ([0-9.]+) MiB", p.stdout)
    trained = re.search(r"trained .*", p.stdout)
    saved = os.path.getsize(os.path.join(work, "saved", "table.npy"))
    exported = os.path.getsize(os.path.join(work, "exported.onnx.data"))
    dense = run([os.path.join(work, "dense", "big"), "train"] + data +
                ["--steps", "1", "--worker-memory", str(budget)], check=False)
    print(f"table {table_bytes / 1048576:.0f} MiB ({args.rows} x {DIM} "
          f"floats), worker budget {budget} MiB (--worker-memory)")
    print(f"  table on 1 server: {trained.group(0) if trained else '?'}; "
          f"saved ({saved / 1048576:.0f} MiB) and exported "
          f"({exported / 1048576:.0f} MiB of external data); "
          f"worker peak {peak.group(1) if peak else '?'} MiB")
    print(f"  table in the worker: exit {dense.returncode}: "
          f"{dense.stderr.strip().splitlines()[-1] if dense.stderr else ''}")
    rows = args.rows * args.declared_factor
    declared = build_declared(work, rows)
    t0 = time.time()
    run([args.dist_opt, declared] + common +
        ["--ps-tables=table", "--ps-init=uniform:-0.05,0.05", "-o",
         os.path.join(work, "declared"), "--name", "big"])
    took = time.time() - t0
    exe = os.path.join(work, "declared", "big")
    p = run(MPIRUN + ["-np", "1", exe, "ps-server", ":", "-np", "1", exe,
                      "train", "--data", f"ids={work}/declared_ids.npy",
                      "--data", f"label={work}/label.npy",
                      "--steps", str(args.steps), "--quiet", "--threads", "1",
                      "--worker-memory", str(budget)])
    peak = re.search(r"peak memory of worker 0: ([0-9.]+) MiB", p.stdout)
    trained = re.search(r"trained .*", p.stdout)
    params = os.path.join(work, "declared", "big.params")
    print(f"  declared table of {rows * DIM * 4 / 1048576:.0f} MiB ({rows} x "
          f"{DIM}, a graph input, --ps-init): compiled in {took:.1f} s, "
          f"parameter file {os.path.getsize(params)} bytes; "
          f"{trained.group(0) if trained else '?'}; worker peak "
          f"{peak.group(1) if peak else '?'} MiB")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
