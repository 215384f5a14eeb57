#!/usr/bin/env python3
# Writes an MLP of LAYERS Gemm + Relu layers (nodes named /fc<i>/Gemm and
# /fc<i>/Relu, as PyTorch names them) with a fixed batch (or a dynamic one,
# BATCH "dyn"), for pipeline tests:
#   layered_mlp.py OUT.onnx [LAYERS [BATCH [WIDTH]]]
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
layers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
batch = sys.argv[3] if len(sys.argv) > 3 else "8"
batch = "N" if batch == "dyn" else int(batch)
width = int(sys.argv[4]) if len(sys.argv) > 4 else 16
rng = np.random.default_rng(0)
nodes, inits = [], []
prev = "x"
for i in range(1, layers + 1):
    w = rng.standard_normal((width, width)).astype(np.float32) / np.sqrt(width)
    b = rng.standard_normal(width).astype(np.float32) * 0.1
    inits += [numpy_helper.from_array(w, f"fc{i}.weight"),
              numpy_helper.from_array(b, f"fc{i}.bias")]
    nodes.append(helper.make_node("Gemm", [prev, f"fc{i}.weight", f"fc{i}.bias"],
                                  [f"h{i}"], name=f"/fc{i}/Gemm", transB=1))
    last = i == layers
    if not last:
        nodes.append(helper.make_node("Relu", [f"h{i}"], [f"r{i}"],
                                      name=f"/fc{i}/Relu"))
    prev = f"h{i}" if last else f"r{i}"
graph = helper.make_graph(
    nodes, "layered_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, width])],
    [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [batch, width])],
    inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, out)
