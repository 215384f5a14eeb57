#!/usr/bin/python3
#===- make_model.py - Binary ONNX models for the importer tests ----------===#
# SPDX-License-Identifier: Apache-2.0
#
# Writes the binary models (and broken files) that the importer tests need,
# so that no binary file is committed. Every output is deterministic.
#
#   make_model.py named OUT.onnx
#       y = Relu(MatMul(x[N,4], w[4,3]) + b[3]) with named nodes 'fc/matmul',
#       'fc/add' and 'act/relu'.
#   make_model.py bad-named OUT.onnx
#       Like `named`, but the node 'fc/matmul' multiplies by w[5,3].
#   make_model.py truncate IN OUT
#       The first half of IN's bytes.
#   make_model.py random OUT SEED SIZE
#       SIZE bytes from Python's Mersenne Twister seeded with SEED.
#   make_model.py no-graph OUT.onnx
#       A ModelProto with an opset import and no graph.
#   make_model.py external OUT.onnx DATA
#       `named` with every initializer in the external file DATA (a name
#       relative to OUT's directory).
#   make_model.py external-location OUT.onnx LOCATION
#       `external` with the tensors' location fields rewritten to LOCATION
#       (the data file itself is written as usual next to OUT).
#
# Run with /usr/bin/python3 (Debian's python3-onnx).
#
#===----------------------------------------------------------------------===#

import os
import random
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def named_model(w_rows=4):
    w = np.arange(w_rows * 3, dtype=np.float32).reshape(w_rows, 3) / 8
    b = np.array([0.5, -0.25, 1.0], dtype=np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="fc/matmul"),
        helper.make_node("Add", ["h", "b"], ["hb"], name="fc/add"),
        helper.make_node("Relu", ["hb"], ["y"], name="act/relu"),
    ]
    graph = helper.make_graph(
        nodes, "named",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, producer_name="make_model.py",
                             opset_imports=[helper.make_opsetid("", 13)])


def save_external(model, out, data):
    path = os.path.join(os.path.dirname(os.path.abspath(out)), data)
    # onnx appends to an existing data file.
    if os.path.exists(path):
        os.remove(path)
    onnx.save_model(model, out, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=data,
                    size_threshold=0)


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "named":
        onnx.save_model(named_model(), args[0])
    elif cmd == "bad-named":
        onnx.save_model(named_model(w_rows=5), args[0])
    elif cmd == "truncate":
        with open(args[0], "rb") as f:
            data = f.read()
        with open(args[1], "wb") as f:
            f.write(data[:len(data) // 2])
    elif cmd == "random":
        rng = random.Random(int(args[1]))
        with open(args[0], "wb") as f:
            f.write(bytes(rng.getrandbits(8) for _ in range(int(args[2]))))
    elif cmd == "no-graph":
        model = onnx.ModelProto()
        model.ir_version = 8
        model.opset_import.append(helper.make_opsetid("", 13))
        onnx.save_model(model, args[0])
    elif cmd == "external":
        save_external(named_model(), args[0], args[1])
    elif cmd == "external-location":
        save_external(named_model(), args[0], "weights.bin")
        model = onnx.load(args[0], load_external_data=False)
        for t in model.graph.initializer:
            for entry in t.external_data:
                if entry.key == "location":
                    entry.value = args[1]
        # Not onnx.save_model: it would try to write the external data.
        with open(args[0], "wb") as f:
            f.write(model.SerializeToString())
    else:
        sys.exit("make_model.py: unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
