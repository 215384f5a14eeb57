"""Model and data for conv-dynamic-batch.test, and its comparison."""
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

d = sys.argv[1]


def losses(name):
    with open(os.path.join(d, name)) as f:
        return [json.loads(line)["loss"] for line in f]


if len(sys.argv) > 2:
    names = sorted(os.listdir(os.path.join(d, "p_st")))
    assert names == sorted(os.listdir(os.path.join(d, "p_dyn"))), names
    for name in names:
        a = np.load(os.path.join(d, "p_st", name))
        b = np.load(os.path.join(d, "p_dyn", name))
        assert np.allclose(a, b, rtol=1e-5, atol=1e-6), (name, abs(a - b).max())
    st, dyn = losses("st.jsonl"), losses("dyn.jsonl")
    assert len(st) == 3 and np.allclose(st, dyn, rtol=1e-5), (st, dyn)
    print(len(names), "parameters equal, losses equal over", len(st), "steps")
    three = losses("three.jsonl")
    assert len(three) == 4 and all(math.isfinite(l) for l in three), three
    print("batch 3:", len(three), "steps, finite losses")
    sys.exit(0)

rs = np.random.RandomState(0)


def param(name, *shape, value=None):
    if value is None:
        array = rs.randn(*shape) * 0.3
    else:
        array = np.full(shape, value)
    return numpy_helper.from_array(array.astype(np.float32), name)


params = [
    param("w1", 4, 2, 3, 3), param("b1", 4),
    param("scale", 4, value=1.0), param("bias", 4, value=0.0),
    param("mean", 4, value=0.0), param("var", 4, value=1.0),
    param("w2", 6, 4, 3, 3), param("w3", 6, 6, 1, 1),
    param("wf", 6, 5), param("bf", 5),
]
node = helper.make_node
nodes = [
    node("Conv", ["x", "w1", "b1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]),
    node("BatchNormalization", ["c1", "scale", "bias", "mean", "var"], ["n1"]),
    node("Relu", ["n1"], ["r1"]),
    node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2]),
    node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
    node("AveragePool", ["c2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
    node("Conv", ["p2", "w3"], ["c3"]),
    node("GlobalAveragePool", ["c3"], ["g"]),
    node("Flatten", ["g"], ["f"]),
    node("Gemm", ["f", "wf", "bf"], ["y"]),
]
graph = helper.make_graph(
    nodes, "cnn",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 9, 9])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], params)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(d, "cnn.onnx"))
np.save(os.path.join(d, "x.npy"), rs.randn(12, 2, 9, 9).astype(np.float32))
np.save(os.path.join(d, "label.npy"), rs.randint(0, 5, 12).astype(np.int64))
