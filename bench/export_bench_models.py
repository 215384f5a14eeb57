#!/usr/bin/python3
#===- bench/export_bench_models.py - Models for bench/cpu_inference.sh ---===#
# SPDX-License-Identifier: Apache-2.0
#
# Exports the four models of the CPU inference benchmark to ONNX (opset 17)
# with static shapes and deterministic weights, reusing the model classes of
# scripts/export_models.py:
#
#   mlp     MLP 784-512-512-10, x[64,784]
#   gpt     2-layer GPT-style causal LM, d=256, 4 heads, vocab 1024,
#           idx[4,64] int64
#   resnet  small residual CNN, image[8,3,32,32]
#   dlrm    DLRM-style recommender with 8 embedding tables (dim 32),
#           dense[128,13], sparse[128,8] int64
#
# For each model it writes DIR/models/<model>.onnx, its inputs as
# DIR/inputs/<model>/<input>.npy (with scripts/make_model_inputs.py; ids are
# in range for every embedding table) and PyTorch's outputs on them as
# DIR/torch/<model>/<output>.npy. Prints one line per model:
#   <model> <path> batch=<B> inputs=<name:shape,...> ops=<Op,...>
#
#   /usr/bin/python3 bench/export_bench_models.py --out DIR [--model M ...]

import argparse
import os
import subprocess
import sys

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))
# Exits with a message if torch or onnx is missing.
import export_models as em  # noqa: E402
import make_model_inputs  # noqa: E402

import onnx  # noqa: E402
import torch  # noqa: E402

OPSET = 17
MODELS = ("mlp", "gpt", "resnet", "dlrm")
GPT_VOCAB = 1024
GPT_SEQ = 64
DLRM_TABLES = (100000, 50000, 20000, 10000, 5000, 2000, 1000, 500)
DLRM_DIM = 32


def make_bench_model(name):
    """Returns (module, input shapes, input names, output names, batch,
    the bound of integer inputs)."""
    torch.manual_seed(0)
    if name == "mlp":
        return (em.MLP((784, 512, 512, 10)), [(64, 784)], ["x"], ["logits"],
                64, None)
    if name == "gpt":
        model = em.GPT(vocab=GPT_VOCAB, block_size=GPT_SEQ, n_layer=2,
                       d_model=256, n_head=4)
        em.randomize_norms(model)
        return model, [(4, GPT_SEQ)], ["idx"], ["logits"], 4, GPT_VOCAB
    if name == "resnet":
        model = em.ResNet()
        em.randomize_norms(model)
        return model, [(8, 3, 32, 32)], ["image"], ["logits"], 8, None
    if name == "dlrm":
        model = em.DLRM(num_dense=13, table_sizes=DLRM_TABLES, dim=DLRM_DIM)
        return (model, [(128, 13), (128, len(DLRM_TABLES))],
                ["dense", "sparse"], ["prob"], 128, min(DLRM_TABLES))
    raise ValueError("unknown model %s" % name)


def example_args(shapes, input_names):
    """Zero tensors of the input shapes: ids for `idx` and `sparse`."""
    args = []
    for shape, name in zip(shapes, input_names):
        if name in ("idx", "sparse"):
            args.append(torch.zeros(shape, dtype=torch.long))
        else:
            args.append(torch.zeros(shape))
    return tuple(args)


def export_static(model, args, input_names, output_names, path):
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, args, path, opset_version=OPSET,
                          input_names=input_names, output_names=output_names,
                          do_constant_folding=True,
                          training=torch.onnx.TrainingMode.EVAL)


def main():
    p = argparse.ArgumentParser(
        description="Export the CPU benchmark models, their inputs and "
        "PyTorch's outputs.")
    p.add_argument("--out", required=True, help="work directory")
    p.add_argument("--model", nargs="+", choices=MODELS, default=list(MODELS))
    a = p.parse_args()

    for name in a.model:
        model, shapes, ins, outs, batch, int_high = make_bench_model(name)
        model_dir = os.path.join(a.out, "models")
        in_dir = os.path.join(a.out, "inputs", name)
        ref_dir = os.path.join(a.out, "torch", name)
        for d in (model_dir, in_dir, ref_dir):
            os.makedirs(d, exist_ok=True)
        path = os.path.join(model_dir, name + ".onnx")
        export_static(model, example_args(shapes, ins), ins, outs,
                      path)
        desc = em.check(path)  # onnx.checker and the importer's op list

        cmd = [sys.executable, os.path.join(REPO_ROOT, "scripts",
                                            "make_model_inputs.py"),
               path, "--batch", str(batch), "--out", in_dir]
        if int_high:
            cmd += ["--int-high", str(int_high)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

        graph = onnx.load(path, load_external_data=False).graph
        inits = {i.name for i in graph.initializer}
        names = [i.name for i in graph.input if i.name not in inits]
        args = [torch.from_numpy(np.load(os.path.join(
            in_dir, make_model_inputs.file_name(n) + ".npy"))) for n in names]
        with torch.no_grad():
            results = model(*args)
        if isinstance(results, torch.Tensor):
            results = (results,)
        for out, value in zip(outs, results):
            np.save(os.path.join(ref_dir, out.replace("/", "_") + ".npy"),
                    value.numpy())
        ops = desc.split(" ops=", 1)[1]
        print("%s %s batch=%d inputs=%s ops=%s" % (
            name, path, batch, ",".join("%s:%s" % (n, list(s)) for n, s in
                                        zip(ins, shapes)), ops), flush=True)


if __name__ == "__main__":
    main()
