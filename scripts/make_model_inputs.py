#!/usr/bin/python3
#===- scripts/make_model_inputs.py - Random inputs for an ONNX model -----===#
# SPDX-License-Identifier: Apache-2.0
#
# Writes deterministic random inputs for the graph inputs of an ONNX model, one
# DIR/<input name>.npy per input (characters outside [A-Za-z0-9._-] become
# '_'), for end-to-end tests. Dynamic dimensions (dim_param or unknown) take
# the --batch value; static ones keep their size. Floating-point inputs are
# drawn from a standard normal distribution. Integer inputs are taken as ids
# and drawn uniformly from [0, --int-high), 100 by default, which is in range
# for every embedding table of the models that scripts/export_models.py writes
# (GPT vocabulary 128, DLRM tables 1000, 500 and 200). Bool inputs are fair
# coin flips. The same model, batch and --seed always give the same files.
#
# Usage: /usr/bin/python3 scripts/make_model_inputs.py MODEL.onnx --batch B \
#            --out DIR [--seed S] [--int-high N]
# Prints one line per file: <path> <dtype> <shape>.

import argparse
import os
import re
import sys
import zlib

import numpy as np

try:
    import onnx
    from onnx import TensorProto
except ImportError as e:
    sys.exit(f"make_model_inputs.py: {e}; run it with /usr/bin/python3")

FLOAT_TYPES = {
    TensorProto.FLOAT: np.float32,
    TensorProto.DOUBLE: np.float64,
    TensorProto.FLOAT16: np.float16,
}
INT_TYPES = {
    TensorProto.INT64: np.int64,
    TensorProto.INT32: np.int32,
    TensorProto.INT16: np.int16,
    TensorProto.INT8: np.int8,
    TensorProto.UINT8: np.uint8,
}


def graph_inputs(model):
    """The graph inputs that are not initializers (older IRs list both)."""
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def file_name(name):
    """`name` with every character outside [A-Za-z0-9._-] replaced by '_'."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def make_input(vi, batch, rng, int_high):
    if not vi.type.HasField("tensor_type"):
        sys.exit(f"make_model_inputs.py: input '{vi.name}' is not a tensor")
    tt = vi.type.tensor_type
    shape = tuple(d.dim_value if d.HasField("dim_value") else batch
                  for d in tt.shape.dim)
    if tt.elem_type in FLOAT_TYPES:
        return rng.standard_normal(shape).astype(FLOAT_TYPES[tt.elem_type])
    if tt.elem_type in INT_TYPES:
        return rng.integers(0, int_high, size=shape,
                            dtype=INT_TYPES[tt.elem_type])
    if tt.elem_type == TensorProto.BOOL:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    sys.exit(f"make_model_inputs.py: input '{vi.name}' has unsupported "
             f"element type {TensorProto.DataType.Name(tt.elem_type)}")


def main():
    p = argparse.ArgumentParser(
        description="Write deterministic random .npy inputs for an ONNX "
        "model, one file per graph input.")
    p.add_argument("model", help="the .onnx file")
    p.add_argument("--batch", type=int, required=True,
                   help="size of every dynamic dimension")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--int-high", type=int, default=100,
                   help="integer inputs are drawn from [0, INT_HIGH)")
    a = p.parse_args()
    if a.batch < 1:
        p.error("--batch must be positive")

    # Weights are not needed: only the graph inputs' types are read.
    model = onnx.load(a.model, load_external_data=False)
    os.makedirs(a.out, exist_ok=True)
    for vi in graph_inputs(model):
        # One stream per input, keyed by its name, so that the values of an
        # input do not depend on which other inputs the model has.
        rng = np.random.default_rng([a.seed, zlib.crc32(vi.name.encode())])
        arr = make_input(vi, a.batch, rng, a.int_high)
        path = os.path.join(a.out, file_name(vi.name) + ".npy")
        np.save(path, arr)
        print(f"{path} {arr.dtype} {list(arr.shape)}")


if __name__ == "__main__":
    main()
