#!/usr/bin/python3
#===- scripts/grad_check.py - Check dist-opt's gradients per op ------------===#
# SPDX-License-Identifier: Apache-2.0
#
"""Checks the gradient rules of `dist-opt --train` against finite differences.

Each case is a tiny float64 ONNX model (opset 17) around one op: the op's
differentiable operands are initializers (so that `--train` trains them),
its other operands are Constant nodes, and the scalar graph output is

    loss = sum_i ReduceSum(Y_i * W_i)

over the op's outputs Y_i, with W_i fixed random initializers (they are
trained too; their gradients are ignored). The case is compiled with

    dist-opt train.onnx --train --loss=model --optimizer=sgd --lr=1

and run for one step (`train --steps 1 --batch-size 1 --save-params DIR`);
with SGD and lr=1 the gradient of each operand p is p - saved(p). The same
graph with the operands as graph inputs (named like the initializers) is
compiled for inference, and for 2 random unit directions v over all the
operands the directional derivative

    (f(p + eps v) - f(p - eps v)) / (2 eps),  eps = 1e-6

is compared with <grad, v>: |fd - grad.v| <= atol + rtol * max(|fd|,
|grad.v|), with rtol 1e-6 and atol 1e-8. Each saved operand must have the
initializer's shape and element type, and the step's logged loss must be
f(p) to 1e-5. When a direction fails, one direction per operand says which
operands' gradients are off.

Inputs stay away from the points where an op is not differentiable (0 for
Relu and Abs, the bounds of Clip, ties of ReduceMax, MaxPool, Max and Min)
by far more than eps.

The graphs have no inputs, so the train step reads no data. --dummy-input
gives each graph an input d (float64 [1]) that adds 0 * ReduceSum(d) to the
loss, and feeds it zeros, for a runtime that needs a data set.

Results, one line per case, then a summary:
  <case>: PASS|FAIL|UNSUPPORTED <detail>
  N passed, N failed, N unsupported
UNSUPPORTED: dist-opt exited with 3 (code generation does not support the
op) or said that an op "has no gradient rule"; with --require-all these are
failures.

Run with Debian's interpreter, which has onnx and numpy:
  /usr/bin/python3 scripts/grad_check.py [-k SUBSTR] [-j N] [--work DIR]

Exit status: 0 if no case failed, 1 if any did, 2 on a usage or setup error.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import zlib

from script_util import one_line, positive_int

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    sys.exit(f"grad_check.py: error: {e}; run it with /usr/bin/python3 "
             "(Debian's python3-onnx and python3-numpy)")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIST_OPT = os.path.join(REPO_ROOT, "build", "bin", "dist-opt")

OPSET = 17
IR_VERSION = 8
EXE_NAME = "model"
# What dist-opt says about an op without a backward rule.
NO_GRADIENT_RULE = "has no gradient rule"

#===----------------------------------------------------------------------===#
# Random operands
#===----------------------------------------------------------------------===#


class Gen:
    """float64 operands from a RandomState seeded by the case's name, so a
    case's values do not depend on the other cases."""

    def __init__(self, name):
        self.rs = np.random.RandomState(zlib.crc32(name.encode()))

    def normal(self, *shape):
        return self.rs.standard_normal(shape)

    def uniform(self, lo, hi, *shape):
        return self.rs.uniform(lo, hi, shape)

    def pos(self, *shape):
        """In [0.5, 2]: for Log, Sqrt and Pow's base."""
        return self.uniform(0.5, 2.0, *shape)

    def away(self, *shape, margin=0.1):
        """At least `margin` away from 0, either sign."""
        sign = np.where(self.rs.random_sample(shape) < 0.5, -1.0, 1.0)
        return sign * (margin + np.abs(self.normal(*shape)))

    def distinct(self, *shape):
        """Values at least 0.06 apart: no ties for max-like ops."""
        n = int(np.prod(shape))
        v = (self.rs.permutation(n) - n / 2.0) * 0.1
        return (v + self.uniform(-0.02, 0.02, n)).reshape(shape)

    def avoid(self, x, points, margin=0.05):
        """Moves the elements of `x` within `margin` of `points` away."""
        x = x.copy()
        for p in points:
            near = np.abs(x - p) < margin
            x[near] = p + np.where(x[near] >= p, 2.0, -2.0) * margin
        return x


def i64(*values):
    return np.array(values, dtype=np.int64)


def f64(*values):
    return np.array(values, dtype=np.float64)


#===----------------------------------------------------------------------===#
# Cases
#===----------------------------------------------------------------------===#


class Case:
    """One op under test. `nodes` compute the outputs `outputs` from the
    `params` (differentiable operands, becoming initializers or inputs) and
    `consts` (Constant nodes)."""

    def __init__(self, name, nodes, params, consts=None, outputs=("Y0",),
                 shapes=None):
        self.name = name
        self.nodes = nodes
        self.params = params
        self.consts = consts or {}
        self.outputs = list(outputs)
        # The outputs' shapes where ONNX's shape inference leaves them open
        # (Einsum in onnx 1.12).
        self.shapes = shapes


CASE_BUILDERS = []  # (name, function(Gen) -> Case arguments)


def case(name, build):
    CASE_BUILDERS.append((name, build))


def op(op_type, inputs, params, consts=None, n_out=1, shapes=None, **attrs):
    """The arguments of a one-node Case: `inputs` names params, consts or
    "" (an optional operand left out)."""
    outputs = [f"Y{i}" for i in range(n_out)]
    node = helper.make_node(op_type, list(inputs), outputs, **attrs)
    return dict(nodes=[node], params=params, consts=consts,
                outputs=outputs, shapes=shapes)


def einsum(equation, **params):
    """An Einsum case over `params` (in keyword order), its output shape by
    numpy."""
    y = np.einsum(equation, *params.values())
    return op("Einsum", list(params), params, shapes=[y.shape],
              equation=equation)


def unary(op_type, x, **attrs):
    return op(op_type, ["X"], {"X": x}, **attrs)


def binary(op_type, a, b, **attrs):
    return op(op_type, ["A", "B"], {"A": a, "B": b}, **attrs)


def variadic(op_type, values):
    names = [chr(ord("A") + i) for i in range(len(values))]
    return op(op_type, names, dict(zip(names, values)))


def split3(values, *shapes):
    """Cuts one flat array into arrays of `shapes`."""
    out, at = [], 0
    for s in shapes:
        n = int(np.prod(s))
        out.append(values.reshape(-1)[at:at + n].reshape(s))
        at += n
    return out


# Elementwise binary ops, with broadcasting.
case("Add", lambda g: binary("Add", g.normal(3, 4), g.normal(3, 4)))
case("Add_broadcast", lambda g: binary("Add", g.normal(2, 3, 4),
                                       g.normal(4)))
case("Add_broadcast_both", lambda g: binary("Add", g.normal(3, 1),
                                            g.normal(1, 4)))
case("Sub", lambda g: binary("Sub", g.normal(3, 4), g.normal(3, 4)))
case("Sub_broadcast", lambda g: binary("Sub", g.normal(2, 3, 4),
                                       g.normal(3, 1)))
case("Mul", lambda g: binary("Mul", g.normal(3, 4), g.normal(3, 4)))
case("Mul_broadcast", lambda g: binary("Mul", g.normal(2, 3, 4),
                                       g.normal(3, 1)))
case("Div", lambda g: binary("Div", g.normal(3, 4),
                             g.away(3, 4, margin=0.5)))
case("Div_broadcast", lambda g: binary("Div", g.normal(2, 3, 4),
                                       g.away(4, margin=0.5)))
case("Pow", lambda g: op("Pow", ["X", "E"], {"X": g.pos(3, 4)},
                         {"E": f64(2.5).reshape(())}))
case("Pow_broadcast", lambda g: op("Pow", ["X", "E"], {"X": g.pos(2, 3, 4)},
                                   {"E": f64(0.5, 1.5, 2.0, 3.0)}))

# Elementwise unary ops.
case("Neg", lambda g: unary("Neg", g.normal(3, 4)))
case("Abs", lambda g: unary("Abs", g.away(3, 4)))
case("Relu", lambda g: unary("Relu", g.away(3, 4)))
case("LeakyRelu", lambda g: unary("LeakyRelu", g.away(3, 4), alpha=0.1))
case("Elu", lambda g: unary("Elu", g.away(3, 4)))
case("Elu_alpha", lambda g: unary("Elu", g.away(3, 4), alpha=0.5))
case("Sigmoid", lambda g: unary("Sigmoid", g.normal(3, 4)))
case("Tanh", lambda g: unary("Tanh", g.normal(3, 4)))
case("Exp", lambda g: unary("Exp", g.normal(3, 4)))
case("Log", lambda g: unary("Log", g.pos(3, 4)))
case("Sqrt", lambda g: unary("Sqrt", g.pos(3, 4)))
case("Reciprocal", lambda g: unary("Reciprocal", g.away(3, 4, margin=0.5)))
case("Erf", lambda g: unary("Erf", g.normal(3, 4)))
case("Tan", lambda g: unary("Tan", g.uniform(-1.2, 1.2, 3, 4)))
case("Asin", lambda g: unary("Asin", g.uniform(-0.8, 0.8, 3, 4)))
case("Acos", lambda g: unary("Acos", g.uniform(-0.8, 0.8, 3, 4)))
case("Atan", lambda g: unary("Atan", g.normal(3, 4)))
case("Sinh", lambda g: unary("Sinh", g.normal(3, 4)))
case("Cosh", lambda g: unary("Cosh", g.normal(3, 4)))
case("Asinh", lambda g: unary("Asinh", g.normal(3, 4)))
case("Acosh", lambda g: unary("Acosh", g.uniform(1.2, 3, 3, 4)))
case("Atanh", lambda g: unary("Atanh", g.uniform(-0.8, 0.8, 3, 4)))
case("DepthToSpace_crd", lambda g: unary(
    "DepthToSpace", g.normal(2, 8, 2, 3), blocksize=2, mode="CRD"))
case("SpaceToDepth", lambda g: unary(
    "SpaceToDepth", g.normal(1, 2, 4, 6), blocksize=2))
case("Softplus", lambda g: unary("Softplus", g.normal(3, 4)))
case("Identity", lambda g: unary("Identity", g.normal(3, 4)))
# Without training_mode, Dropout is the identity (output 0 only).
case("Dropout", lambda g: op("Dropout", ["X", "R"], {"X": g.normal(3, 4)},
                             {"R": f64(0.5).reshape(())}))
case("Clip", lambda g: op(
    "Clip", ["X", "LO", "HI"], {"X": g.avoid(g.normal(3, 4), [-0.5, 0.5])},
    {"LO": f64(-0.5).reshape(()), "HI": f64(0.5).reshape(())}))
case("Clip_min_only", lambda g: op(
    "Clip", ["X", "LO"], {"X": g.avoid(g.normal(3, 4), [-0.2])},
    {"LO": f64(-0.2).reshape(())}))
case("Where", lambda g: op(
    "Where", ["C", "X", "Y"], {"X": g.normal(3, 4), "Y": g.normal(3, 4)},
    {"C": g.normal(3, 4) > 0}))
case("Where_broadcast", lambda g: op(
    "Where", ["C", "X", "Y"], {"X": g.normal(3, 1), "Y": g.normal(3, 4)},
    {"C": np.array([[True, False, False, True]])}))
case("PRelu", lambda g: binary("PRelu", g.away(3, 4),
                               g.uniform(0.1, 0.5, 4)))
case("PRelu_scalar_slope", lambda g: binary("PRelu", g.away(2, 3, 4),
                                            g.uniform(0.1, 0.5, 1)))

# Variadic ops, with broadcasting.
case("Sum", lambda g: variadic("Sum", [g.normal(3, 4), g.normal(3, 4),
                                       g.normal(4)]))
case("Mean", lambda g: variadic("Mean", [g.normal(3, 4), g.normal(3, 4),
                                         g.normal(4)]))
case("Max", lambda g: variadic("Max", split3(g.distinct(28), (3, 4), (3, 4),
                                             (4,))))
case("Min", lambda g: variadic("Min", split3(g.distinct(28), (3, 4), (3, 4),
                                             (4,))))

# Matrix products.
case("MatMul", lambda g: binary("MatMul", g.normal(3, 4), g.normal(4, 5)))
case("MatMul_batched", lambda g: binary("MatMul", g.normal(2, 3, 4),
                                        g.normal(4, 5)))
case("MatMul_broadcast", lambda g: binary("MatMul", g.normal(2, 1, 3, 4),
                                          g.normal(3, 4, 5)))
case("Einsum_attention", lambda g: einsum(
    "bhid,bhjd->bhij", A=g.normal(2, 2, 3, 4), B=g.normal(2, 2, 5, 4)))
case("Einsum_three_operands", lambda g: einsum(
    "ij,jk,kl->il", A=g.normal(2, 3), B=g.normal(3, 4), C=g.normal(4, 2)))
case("Einsum_sum_and_implicit", lambda g: einsum(
    "ij,j", A=g.normal(3, 4), B=g.normal(4)))
case("Einsum_ellipsis", lambda g: einsum(
    "...ij,...jk->...ki", A=g.normal(2, 3, 4), B=g.normal(2, 4, 3)))
case("Einsum_summed_away", lambda g: einsum("ijk->k", A=g.normal(3, 4, 2)))
case("MatMul_vector_lhs", lambda g: binary("MatMul", g.normal(4),
                                           g.normal(4, 5)))
case("MatMul_vector_rhs", lambda g: binary("MatMul", g.normal(2, 3, 4),
                                           g.normal(4)))
case("Gemm", lambda g: op("Gemm", ["A", "B", "C"],
                          {"A": g.normal(3, 4), "B": g.normal(4, 5),
                           "C": g.normal(5)}))
case("Gemm_trans_alpha_beta", lambda g: op(
    "Gemm", ["A", "B", "C"],
    {"A": g.normal(4, 3), "B": g.normal(5, 4), "C": g.normal(5)},
    transA=1, transB=1, alpha=0.5, beta=2.0))
case("Gemm_C_matrix", lambda g: op(
    "Gemm", ["A", "B", "C"],
    {"A": g.normal(3, 4), "B": g.normal(5, 4), "C": g.normal(3, 5)},
    transB=1))
case("Gemm_no_C", lambda g: op("Gemm", ["A", "B"],
                               {"A": g.normal(3, 4), "B": g.normal(4, 5)}))

# Shape ops.
case("Reshape", lambda g: op("Reshape", ["X", "S"], {"X": g.normal(2, 3, 4)},
                             {"S": i64(4, -1)}))
case("Reshape_copy_dim", lambda g: op(
    "Reshape", ["X", "S"], {"X": g.normal(2, 3, 4)}, {"S": i64(0, -1)}))
case("Flatten", lambda g: unary("Flatten", g.normal(2, 3, 4, 5)))
case("Flatten_axis2", lambda g: unary("Flatten", g.normal(2, 3, 4, 5),
                                      axis=2))
case("Transpose", lambda g: unary("Transpose", g.normal(2, 3, 4),
                                  perm=[2, 0, 1]))
case("Transpose_default", lambda g: unary("Transpose", g.normal(2, 3, 4)))
case("Squeeze", lambda g: op("Squeeze", ["X", "AX"],
                             {"X": g.normal(3, 1, 4, 1)}, {"AX": i64(1, 3)}))
case("Squeeze_negative_axis", lambda g: op(
    "Squeeze", ["X", "AX"], {"X": g.normal(3, 4, 1)}, {"AX": i64(-1)}))
case("Unsqueeze", lambda g: op("Unsqueeze", ["X", "AX"],
                               {"X": g.normal(3, 4)}, {"AX": i64(0, 2)}))
case("Concat", lambda g: op(
    "Concat", ["A", "B", "C"],
    {"A": g.normal(2, 3), "B": g.normal(2, 4), "C": g.normal(2, 1)},
    axis=1))
case("Split", lambda g: op("Split", ["X", "S"], {"X": g.normal(6, 4)},
                           {"S": i64(2, 4)}, n_out=2, axis=0))
case("Split_equal", lambda g: op("Split", ["X"], {"X": g.normal(3, 6)},
                                 n_out=3, axis=1))
case("Slice", lambda g: op(
    "Slice", ["X", "ST", "EN", "AX", "SP"], {"X": g.normal(6, 8)},
    {"ST": i64(1, 0), "EN": i64(5, 8), "AX": i64(0, 1), "SP": i64(2, 3)}))
case("Slice_negative_step", lambda g: op(
    "Slice", ["X", "ST", "EN", "AX", "SP"], {"X": g.normal(6, 8)},
    {"ST": i64(-1), "EN": i64(-100), "AX": i64(1), "SP": i64(-2)}))
case("Slice_negative_two_axes", lambda g: op(
    "Slice", ["X", "ST", "EN", "AX", "SP"], {"X": g.normal(7, 6)},
    {"ST": i64(5, -2), "EN": i64(0, -9223372036854775807), "AX": i64(0, 1),
     "SP": i64(-3, -1)}))
case("Slice_no_axes", lambda g: op(
    "Slice", ["X", "ST", "EN"], {"X": g.normal(4, 5)},
    {"ST": i64(1, 1), "EN": i64(3, 4)}))
case("Gather_axis0", lambda g: op(
    "Gather", ["E", "I"], {"E": g.normal(10, 4)},
    {"I": np.array([[1, 3, 1], [9, 3, 3]], dtype=np.int64)}))
case("Gather_axis1", lambda g: op(
    "Gather", ["X", "I"], {"X": g.normal(3, 5)}, {"I": i64(0, 4, 4, 2)},
    axis=1))
case("Gather_negative_indices", lambda g: op(
    "Gather", ["X", "I"], {"X": g.normal(5, 3)}, {"I": i64(-1, 0, -1)}))
case("Expand", lambda g: op("Expand", ["X", "S"], {"X": g.normal(3, 1)},
                            {"S": i64(2, 3, 4)}))
case("Expand_rank", lambda g: op("Expand", ["X", "S"], {"X": g.normal(4)},
                                 {"S": i64(3, 4)}))
case("Tile", lambda g: op("Tile", ["X", "R"], {"X": g.normal(2, 3)},
                          {"R": i64(2, 3)}))
case("Pad", lambda g: op("Pad", ["X", "P", "V"], {"X": g.normal(2, 3)},
                         {"P": i64(1, 0, 2, 1), "V": f64(0.5).reshape(())},
                         mode="constant"))
case("Resize_linear", lambda g: op(
    "Resize", ["X", "", "S"], {"X": g.normal(1, 2, 3, 4)},
    {"S": f64(1, 1, 2, 0.5).astype(np.float32)}, mode="linear"))
case("Resize_cubic_align_corners", lambda g: op(
    "Resize", ["X", "", "", "Z"], {"X": g.normal(1, 1, 4, 3)},
    {"Z": i64(1, 1, 3, 5)}, mode="cubic",
    coordinate_transformation_mode="align_corners"))
case("Resize_nearest", lambda g: op(
    "Resize", ["X", "", "S"], {"X": g.normal(2, 3, 2)},
    {"S": f64(1, 2, 1.5).astype(np.float32)}, mode="nearest",
    coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
case("CumSum", lambda g: op("CumSum", ["X", "AX"], {"X": g.normal(3, 4)},
                            {"AX": i64(1).reshape(())}))
case("CumSum_exclusive_reverse", lambda g: op(
    "CumSum", ["X", "AX"], {"X": g.normal(3, 4)}, {"AX": i64(0).reshape(())},
    exclusive=1, reverse=1))

# Reductions (opset 17: ReduceSum takes axes as an input, the others as an
# attribute).
case("ReduceSum", lambda g: op("ReduceSum", ["X", "AX"],
                               {"X": g.normal(2, 3, 4)}, {"AX": i64(1)},
                               keepdims=1))
case("ReduceSum_keepdims0", lambda g: op(
    "ReduceSum", ["X", "AX"], {"X": g.normal(2, 3, 4)}, {"AX": i64(0, 2)},
    keepdims=0))
case("ReduceSum_all", lambda g: unary("ReduceSum", g.normal(2, 3, 4)))
case("ReduceMean", lambda g: unary("ReduceMean", g.normal(2, 3, 4),
                                   axes=[-1], keepdims=0))
case("ReduceMean_all", lambda g: unary("ReduceMean", g.normal(2, 3, 4)))
case("ReduceMax", lambda g: unary("ReduceMax", g.distinct(3, 4), axes=[1]))
case("ReduceMax_all", lambda g: unary("ReduceMax", g.distinct(2, 3, 4),
                                      keepdims=0))
case("ReduceSumSquare", lambda g: unary("ReduceSumSquare",
                                        g.normal(2, 3, 4), axes=[1],
                                        keepdims=0))
case("ReduceL2", lambda g: unary("ReduceL2", g.normal(2, 3, 4), axes=[2]))
case("ReduceLogSumExp", lambda g: unary("ReduceLogSumExp", g.normal(3, 4),
                                        axes=[1], keepdims=0))
case("Softmax", lambda g: unary("Softmax", g.normal(3, 5)))
case("Softmax_axis1", lambda g: unary("Softmax", g.normal(2, 3, 4), axis=1))
case("LogSoftmax", lambda g: unary("LogSoftmax", g.normal(3, 5)))
case("LogSoftmax_axis0", lambda g: unary("LogSoftmax", g.normal(3, 5),
                                         axis=0))

# Normalizations.
case("LayerNormalization", lambda g: op(
    "LayerNormalization", ["X", "S", "B"],
    {"X": g.normal(2, 3, 4), "S": g.uniform(0.5, 1.5, 4), "B": g.normal(4)},
    axis=-1, epsilon=1e-5))
case("LayerNormalization_axis1", lambda g: op(
    "LayerNormalization", ["X", "S", "B"],
    {"X": g.normal(2, 3, 4), "S": g.uniform(0.5, 1.5, 3, 4),
     "B": g.normal(3, 4)}, axis=1, epsilon=1e-5))


def batch_norm_training(g):
    """training_mode=1 needs the running-statistics outputs (as in
    torch.onnx.export's graphs); only Y feeds the loss."""
    args = op("BatchNormalization", ["X", "S", "B", "M", "V"],
              {"X": g.normal(2, 3, 4, 4), "S": g.uniform(0.5, 1.5, 3),
               "B": g.normal(3)},
              {"M": g.uniform(-0.1, 0.1, 3), "V": g.uniform(0.5, 1.5, 3)},
              n_out=3, epsilon=1e-5, momentum=0.9, training_mode=1)
    args["outputs"] = ["Y0"]
    return args


case("BatchNormalization", batch_norm_training)
case("InstanceNormalization", lambda g: op(
    "InstanceNormalization", ["X", "S", "B"],
    {"X": g.normal(2, 3, 4, 4), "S": g.uniform(0.5, 1.5, 3),
     "B": g.normal(3)}, epsilon=1e-5))

# Convolutions and pooling.
case("Conv", lambda g: op(
    "Conv", ["X", "W"], {"X": g.normal(2, 2, 5, 5), "W": g.normal(3, 2, 3, 3)},
    pads=[1, 1, 1, 1]))
case("Conv_stride_pad_dilation_bias", lambda g: op(
    "Conv", ["X", "W", "B"],
    {"X": g.normal(1, 2, 7, 7), "W": g.normal(3, 2, 3, 3), "B": g.normal(3)},
    strides=[2, 2], pads=[1, 0, 1, 2], dilations=[2, 1]))
case("Conv_group", lambda g: op(
    "Conv", ["X", "W"], {"X": g.normal(2, 4, 5, 5), "W": g.normal(6, 2, 3, 3)},
    group=2, pads=[1, 0, 0, 1]))
case("ConvTranspose", lambda g: op(
    "ConvTranspose", ["X", "W", "B"],
    {"X": g.normal(1, 2, 3, 3), "W": g.normal(2, 3, 3, 3), "B": g.normal(3)},
    strides=[2, 2], pads=[1, 1, 1, 1]))
case("ConvTranspose_output_padding", lambda g: op(
    "ConvTranspose", ["X", "W"],
    {"X": g.normal(1, 2, 3, 3), "W": g.normal(2, 3, 3, 3)},
    strides=[2, 2], output_padding=[1, 1]))
case("MaxPool", lambda g: unary("MaxPool", g.distinct(1, 2, 4, 4),
                                kernel_shape=[2, 2], strides=[2, 2]))
case("MaxPool_overlap_pad", lambda g: unary(
    "MaxPool", g.distinct(1, 1, 5, 5), kernel_shape=[3, 3], strides=[2, 2],
    pads=[1, 1, 1, 1]))
case("AveragePool_pad_exclude", lambda g: unary(
    "AveragePool", g.normal(1, 2, 5, 5), kernel_shape=[3, 3],
    strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=0))
case("AveragePool_pad_include", lambda g: unary(
    "AveragePool", g.normal(1, 2, 5, 5), kernel_shape=[3, 3],
    strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1))
case("AveragePool_ceil_include", lambda g: unary(
    "AveragePool", g.normal(1, 2, 5, 5), kernel_shape=[2, 2],
    strides=[2, 2], ceil_mode=1, count_include_pad=1))
case("AveragePool_ceil_pad_exclude", lambda g: unary(
    "AveragePool", g.normal(1, 2, 6, 7), kernel_shape=[3, 2],
    strides=[2, 3], pads=[1, 0, 1, 1], ceil_mode=1, count_include_pad=0))
case("GlobalAveragePool", lambda g: unary("GlobalAveragePool",
                                          g.normal(2, 3, 4, 4)))

# Losses (scalar outputs).
case("SoftmaxCrossEntropyLoss", lambda g: op(
    "SoftmaxCrossEntropyLoss", ["X", "L"], {"X": g.normal(4, 5)},
    {"L": i64(0, 3, 1, 4)}, reduction="mean"))
case("SoftmaxCrossEntropyLoss_ignore_index", lambda g: op(
    "SoftmaxCrossEntropyLoss", ["X", "L"], {"X": g.normal(4, 5)},
    {"L": i64(2, -100, 0, -100)}, reduction="mean", ignore_index=-100))
case("SoftmaxCrossEntropyLoss_3d", lambda g: op(
    "SoftmaxCrossEntropyLoss", ["X", "L"], {"X": g.normal(2, 5, 3)},
    {"L": np.array([[0, 4, 2], [1, 1, 3]], dtype=np.int64)},
    reduction="mean"))
case("NegativeLogLikelihoodLoss", lambda g: op(
    "NegativeLogLikelihoodLoss", ["X", "T"], {"X": g.normal(4, 5)},
    {"T": i64(0, 3, 1, 4)}, reduction="mean"))
case("NegativeLogLikelihoodLoss_weight_ignore_index", lambda g: op(
    "NegativeLogLikelihoodLoss", ["X", "T", "WT"], {"X": g.normal(4, 5)},
    {"T": i64(1, 3, 2, 1), "WT": g.uniform(0.5, 2.0, 5)},
    reduction="mean", ignore_index=1))


def make_case(name, build):
    return Case(name, **build(Gen(name)))


def all_cases():
    return [make_case(n, b) for n, b in CASE_BUILDERS]


#===----------------------------------------------------------------------===#
# Models
#===----------------------------------------------------------------------===#


def value_info(name, array):
    # onnx 1.12 (Debian 12) has no helper.np_dtype_to_tensor_dtype.
    return helper.make_tensor_value_info(
        name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[array.dtype], array.shape)


def const_nodes(case):
    return [helper.make_node("Constant", [], [name],
                             value=numpy_helper.from_array(value, name))
            for name, value in case.consts.items()]


def make_model(graph):
    return helper.make_model(graph, ir_version=IR_VERSION,
                             opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="grad_check.py")


def output_shapes(case):
    """The static shapes of the op's outputs, by ONNX shape inference."""
    if case.shapes is not None:
        return [tuple(s) for s in case.shapes]
    graph = helper.make_graph(
        const_nodes(case) + case.nodes, case.name + "_probe",
        [value_info(n, v) for n, v in case.params.items()],
        [helper.make_tensor_value_info(o, TensorProto.DOUBLE, None)
         for o in case.outputs])
    model = onnx.shape_inference.infer_shapes(make_model(graph),
                                              strict_mode=True,
                                              data_prop=True)
    shapes = []
    for out in model.graph.output:
        t = out.type.tensor_type
        if t.elem_type != TensorProto.DOUBLE or not t.HasField("shape"):
            raise ValueError(f"output '{out.name}' has no inferred double "
                             "type and shape")
        dims = []
        for d in t.shape.dim:
            if not d.HasField("dim_value"):
                raise ValueError(f"output '{out.name}' has a dynamic shape")
            dims.append(d.dim_value)
        shapes.append(tuple(dims))
    return shapes


def build_models(case, dummy):
    """Returns (train model, inference model, {W name: value})."""
    gen = Gen(case.name + "/W")
    weights = {}
    loss_nodes = []
    terms = []
    for i, (out, shape) in enumerate(zip(case.outputs, output_shapes(case))):
        w = f"W{i}"
        weights[w] = gen.normal(*shape)
        loss_nodes.append(helper.make_node("Mul", [out, w], [f"prod{i}"]))
        if shape:
            loss_nodes.append(helper.make_node("ReduceSum", [f"prod{i}"],
                                               [f"term{i}"], keepdims=0))
            terms.append(f"term{i}")
        else:
            terms.append(f"prod{i}")
    if dummy:
        loss_nodes += [
            helper.make_node("ReduceSum", ["d"], ["d_sum"], keepdims=0),
            helper.make_node("Constant", [], ["zero"],
                             value=numpy_helper.from_array(
                                 f64(0.0).reshape(()), "zero")),
            helper.make_node("Mul", ["d_sum", "zero"], ["d_term"])]
        terms.append("d_term")
    acc = terms[0]
    for i, t in enumerate(terms[1:]):
        loss_nodes.append(helper.make_node("Add", [acc, t], [f"acc{i}"]))
        acc = f"acc{i}"
    loss_nodes.append(helper.make_node("Identity", [acc], ["loss"]))

    nodes = const_nodes(case) + case.nodes + loss_nodes
    loss = helper.make_tensor_value_info("loss", TensorProto.DOUBLE, [])
    dummy_in = ([helper.make_tensor_value_info("d", TensorProto.DOUBLE, [1])]
                if dummy else [])
    w_inits = [numpy_helper.from_array(v, n) for n, v in weights.items()]
    train = make_model(helper.make_graph(
        nodes, case.name, dummy_in, [loss],
        [numpy_helper.from_array(v, n) for n, v in case.params.items()] +
        w_inits))
    infer = make_model(helper.make_graph(
        nodes, case.name,
        [value_info(n, v) for n, v in case.params.items()] + dummy_in,
        [loss], w_inits))
    for m in (train, infer):
        onnx.checker.check_model(m, full_check=True)
    return train, infer, weights


#===----------------------------------------------------------------------===#
# Processes
#===----------------------------------------------------------------------===#



class Proc:

    def __init__(self, rc, stderr):
        self.rc = rc
        self.stderr = stderr

    def line(self, pattern=None):
        """The first stderr line holding `pattern` (or `error:`), else the
        last line (a Python traceback's exception)."""
        lines = [l.strip() for l in self.stderr.splitlines() if l.strip()]
        for p in ([pattern] if pattern else []) + ["error:"]:
            for l in lines:
                if p in l:
                    return one_line(l)
        return one_line(lines[-1]) if lines else "<no stderr>"


class CaseError(Exception):
    """Ends a case; `status` is FAIL or UNSUPPORTED."""

    def __init__(self, status, detail):
        super().__init__(detail)
        self.status = status
        self.detail = detail


def run(cmd, what, args, log):
    """Runs `cmd`; returns a Proc, or raises CaseError(FAIL) if it could
    not run, timed out or died from a signal."""
    log.append("$ " + " ".join(cmd))
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        raise CaseError("FAIL", f"cannot run {what}: {e}")
    try:
        _, err = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise CaseError("FAIL", f"{what} timed out after {args.timeout:g}s")
    err = err.decode("utf-8", "replace")
    log.append(f"  exit {proc.returncode}")
    log.extend("  " + l for l in err.splitlines()[:20])
    p = Proc(proc.returncode, err)
    if p.rc < 0:
        try:
            sig = signal.Signals(-p.rc).name
        except ValueError:
            sig = f"signal {-p.rc}"
        raise CaseError("FAIL", f"{what} crashed ({sig}): {p.line()}")
    return p


def compile_model(model_path, out_dir, extra, what, args, log):
    p = run([args.dist_opt, model_path] + extra +
            ["-o", out_dir, "--name", EXE_NAME], what, args, log)
    if p.rc == 3 or (p.rc != 0 and NO_GRADIENT_RULE in p.stderr):
        raise CaseError("UNSUPPORTED",
                        f"{what}: {p.line(NO_GRADIENT_RULE)}")
    if p.rc != 0:
        raise CaseError("FAIL", f"{what} exited with {p.rc}: {p.line()}")
    exe = os.path.join(out_dir, EXE_NAME)
    if not os.access(exe, os.X_OK):
        raise CaseError("FAIL", f"{what} exited with 0 but wrote no "
                        "executable")
    return exe


class Evaluator:
    """f(params) with the inference executable."""

    def __init__(self, exe, case_dir, dummy_path, args, log):
        self.exe = exe
        self.dir = os.path.join(case_dir, "points")
        self.dummy_path = dummy_path
        self.args = args
        self.log = log
        self.count = 0

    def __call__(self, values):
        self.count += 1
        point = os.path.join(self.dir, str(self.count))
        out_dir = os.path.join(point, "out")
        os.makedirs(point)
        cmd = [self.exe]
        for name, value in values.items():
            path = os.path.join(point, name + ".npy")
            np.save(path, value)
            cmd += ["--input", f"{name}={path}"]
        if self.dummy_path:
            cmd += ["--input", f"d={self.dummy_path}"]
        cmd += ["--output-dir", out_dir, "--threads", str(self.args.threads)]
        p = run(cmd, "the inference executable", self.args, self.log)
        if p.rc != 0:
            raise CaseError("FAIL", f"the inference executable exited with "
                            f"{p.rc}: {p.line()}")
        path = os.path.join(out_dir, "loss.npy")
        try:
            loss = np.load(path)
        except (OSError, ValueError) as e:
            raise CaseError("FAIL", f"cannot read {path}: {e}")
        if loss.size != 1:
            raise CaseError("FAIL", f"loss.npy has shape {list(loss.shape)}"
                            ", expected a scalar")
        return float(loss.reshape(()))


#===----------------------------------------------------------------------===#
# One case
#===----------------------------------------------------------------------===#


def read_logged_loss(path):
    try:
        with open(path) as f:
            lines = [l for l in f.read().splitlines() if l.strip()]
        if len(lines) != 1:
            raise ValueError(f"{len(lines)} records, expected 1")
        rec = json.loads(lines[0])
        if rec.get("step") != 1:
            raise ValueError(f"step {rec.get('step')!r}, expected 1")
        return float(rec["loss"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CaseError("FAIL", f"training log {path}: {one_line(str(e))}")


def directional(evaluate, params, grads, v, eps):
    """(finite difference, <grad, v>) along direction `v`."""
    plus = {n: params[n] + eps * v[n] for n in params}
    minus = {n: params[n] - eps * v[n] for n in params}
    fd = (evaluate(plus) - evaluate(minus)) / (2 * eps)
    an = float(sum(np.sum(grads[n] * v[n]) for n in params))
    return fd, an


def tolerance(fd, an, args):
    return args.atol + args.rtol * max(abs(fd), abs(an))


def within(fd, an, args):
    return abs(fd - an) <= tolerance(fd, an, args)


def unit_direction(rs, params, only=None):
    v = {n: (rs.standard_normal(p.shape) if only in (None, n)
             else np.zeros(p.shape)) for n, p in params.items()}
    norm = np.sqrt(sum(np.sum(x * x) for x in v.values()))
    return {n: x / norm for n, x in v.items()}


def check_case(case, args):
    """Returns (status, detail, log lines)."""
    log = []
    case_dir = os.path.join(args.work, case.name)
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(case_dir)
    try:
        train, infer, _ = build_models(case, args.dummy_input)
        train_path = os.path.join(case_dir, "train.onnx")
        infer_path = os.path.join(case_dir, "infer.onnx")
        onnx.save_model(train, train_path)
        onnx.save_model(infer, infer_path)
        dummy_path = None
        if args.dummy_input:
            dummy_path = os.path.join(case_dir, "d.npy")
            np.save(dummy_path, np.zeros(1, dtype=np.float64))

        # Gradients: one SGD step with lr = 1.
        train_exe = compile_model(
            train_path, os.path.join(case_dir, "train"),
            ["--train", "--loss=model", "--optimizer=sgd", "--lr=1"],
            "dist-opt --train", args, log)
        saved = os.path.join(case_dir, "saved")
        train_log = os.path.join(case_dir, "train.jsonl")
        cmd = [train_exe, "train", "--steps", "1", "--batch-size", "1",
               "--save-params", saved, "--log", train_log,
               "--threads", str(args.threads), "--quiet"]
        if dummy_path:
            cmd += ["--data", f"d={dummy_path}"]
        p = run(cmd, "the train command", args, log)
        if p.rc != 0:
            raise CaseError("FAIL", f"the train command exited with {p.rc}: "
                            f"{p.line()}")
        grads = {}
        for name, value in case.params.items():
            path = os.path.join(saved, name + ".npy")
            try:
                new = np.load(path)
            except (OSError, ValueError) as e:
                raise CaseError("FAIL", f"cannot read the saved parameter "
                                f"{path}: {one_line(str(e))}")
            if new.shape != value.shape or new.dtype != value.dtype:
                raise CaseError(
                    "FAIL", f"saved '{name}' is {new.dtype} "
                    f"{list(new.shape)}, expected {value.dtype} "
                    f"{list(value.shape)}")
            grads[name] = value - new

        # Finite differences with the inference build.
        infer_exe = compile_model(infer_path, os.path.join(case_dir, "infer"),
                                  [], "dist-opt (inference)", args, log)
        evaluate = Evaluator(infer_exe, case_dir, dummy_path, args, log)
        f0 = evaluate(case.params)
        logged = read_logged_loss(train_log)
        if abs(logged - f0) > 1e-5 * max(1.0, abs(f0)):
            raise CaseError("FAIL", f"the train step's loss {logged!r} is "
                            f"not the inference loss {f0!r}")
        rs = np.random.RandomState(zlib.crc32(("dir/" + case.name).encode()))
        worst = 0.0  # The largest error as a fraction of its tolerance.
        bad = []
        for k in range(args.directions):
            v = unit_direction(rs, case.params)
            fd, an = directional(evaluate, case.params, grads, v, args.eps)
            worst = max(worst, abs(fd - an) / tolerance(fd, an, args))
            if not within(fd, an, args):
                bad.append(f"direction {k}: finite difference {fd:.10g}, "
                           f"gradient {an:.10g}")
        if bad:
            # Say which operands' gradients are off.
            culprits = []
            for name in case.params:
                v = unit_direction(rs, case.params, only=name)
                fd, an = directional(evaluate, case.params, grads, v,
                                     args.eps)
                if not within(fd, an, args):
                    culprits.append(f"d/d{name}: finite difference {fd:.10g}"
                                    f", gradient {an:.10g}")
            raise CaseError("FAIL", "; ".join(bad) + " [" + (
                "; ".join(culprits) if culprits else
                "no single operand is off") + "]")
        result = ("PASS", f"params={','.join(case.params)} "
                  f"directions={args.directions} max_err/tol={worst:.2g}")
    except CaseError as e:
        status = e.status
        if status == "UNSUPPORTED" and args.require_all:
            status = "FAIL"
        result = (status, e.detail)
    except Exception as e:  # A bug in a case: report it, go on.
        result = ("FAIL", f"{type(e).__name__}: {one_line(str(e))}")
    if not args.keep:
        # The finite-difference points always go; the builds of a passing
        # case too (the models stay).
        doomed = ["points"]
        if result[0] == "PASS":
            doomed += ["train", "infer", "saved"]
        for d in doomed:
            shutil.rmtree(os.path.join(case_dir, d), ignore_errors=True)
    return result + (log,)


#===----------------------------------------------------------------------===#
# Driver
#===----------------------------------------------------------------------===#



def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="grad_check.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dist-opt", default=DEFAULT_DIST_OPT, metavar="PATH",
                   help="the dist-opt binary (default: %(default)s)")
    p.add_argument("--work", metavar="DIR",
                   help="work in DIR/<case>, keeping the models, and the "
                   "builds of failed cases (default: a temporary directory, "
                   "removed at the end)")
    p.add_argument("-k", dest="select", action="append", metavar="SUBSTR",
                   help="only the cases whose name contains SUBSTR "
                   "(repeatable: any of them)")
    p.add_argument("--skip", action="append", default=[], metavar="NAME",
                   help="leave out the case NAME (repeatable); a skipped "
                   "case is not counted")
    p.add_argument("-j", dest="jobs", type=positive_int, default=2,
                   help="cases run in parallel (default: %(default)s)")
    p.add_argument("--require-all", action="store_true",
                   help="count UNSUPPORTED cases as failures")
    p.add_argument("--list", action="store_true",
                   help="print the selected cases' names and exit")
    p.add_argument("--build-only", action="store_true",
                   help="build and check the selected cases' models (no "
                   "dist-opt) and exit")
    p.add_argument("--directions", type=positive_int, default=2,
                   help="random directions per case (default: %(default)s)")
    p.add_argument("--eps", type=float, default=1e-6,
                   help="finite-difference step (default: %(default)s)")
    p.add_argument("--rtol", type=float, default=1e-6,
                   help="relative tolerance (default: %(default)s)")
    p.add_argument("--atol", type=float, default=1e-8,
                   help="absolute tolerance (default: %(default)s)")
    p.add_argument("--dummy-input", action="store_true",
                   help="give each graph a data input d that the loss "
                   "ignores, for a runtime that needs --data")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="threads of each executable (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=300,
                   help="seconds allowed for each process "
                   "(default: %(default)s)")
    p.add_argument("--keep", action="store_true",
                   help="keep every build and finite-difference point in "
                   "--work")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the commands of failed cases")
    args = p.parse_args(argv)
    if args.eps <= 0 or args.rtol < 0 or args.atol < 0:
        p.error("--eps must be positive, --rtol and --atol not negative")
    return args


def main(argv=None):
    args = parse_args(argv)
    names = [n for n, _ in CASE_BUILDERS]
    unknown = [n for n in args.skip if n not in names]
    if unknown:
        print("grad_check.py: error: --skip: no case named " +
              ", ".join(unknown), file=sys.stderr)
        return 2
    names = [n for n in names if n not in args.skip]
    if args.select:
        names = [n for n in names if any(s in n for s in args.select)]
        if not names:
            print("grad_check.py: error: no case name contains " +
                  " or ".join(repr(s) for s in args.select),
                  file=sys.stderr)
            return 2
    if args.list:
        print("\n".join(names))
        return 0
    builders = dict(CASE_BUILDERS)
    cases = [make_case(n, builders[n]) for n in names]
    if args.build_only:
        failed = 0
        for c in cases:
            try:
                build_models(c, args.dummy_input)
                print(f"{c.name}: OK")
            except Exception as e:
                failed += 1
                print(f"{c.name}: FAIL {type(e).__name__}: "
                      f"{one_line(str(e))}")
        print(f"{len(cases) - failed} built, {failed} failed")
        return 1 if failed else 0
    if not os.access(args.dist_opt, os.X_OK):
        print(f"grad_check.py: error: no dist-opt executable at "
              f"{args.dist_opt} (build it or pass --dist-opt)",
              file=sys.stderr)
        return 2
    args.dist_opt = os.path.abspath(args.dist_opt)

    tmp = None
    if args.work:
        args.work = os.path.abspath(args.work)
        os.makedirs(args.work, exist_ok=True)
    else:
        tmp = tempfile.mkdtemp(prefix="grad_check.")
        args.work = tmp
    counts = {"PASS": 0, "FAIL": 0, "UNSUPPORTED": 0}
    try:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for c, (status, detail, log) in zip(
                    cases, pool.map(lambda c: check_case(c, args), cases)):
                counts[status] += 1
                print(f"{c.name}: {status} {detail}", flush=True)
                if args.verbose and status != "PASS":
                    for line in log:
                        print("    " + line)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, "
          f"{counts['UNSUPPORTED']} unsupported")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
