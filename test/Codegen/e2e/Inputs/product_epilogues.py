"""The model, runs and check of product-epilogues.test.

  product_epilogues.py model DIR [dynamic]  writes DIR/pe.onnx and its input
                                            (dynamic: a batch dimension the
                                            model leaves open, 2 images)
  product_epilogues.py run DIR EXE OUT T    runs EXE on it at T threads
  product_epilogues.py check DIR RUN...     prints OK RUN or FAIL RUN: why
"""
import os
import subprocess
import sys

import numpy as np

rng = np.random.RandomState(0)
W = {
    "w1": rng.uniform(-0.5, 0.5, (96, 32, 1, 1)),
    "b1": rng.uniform(-1, 1, (96,)),
    "w2": rng.uniform(-0.5, 0.5, (96, 1, 3, 3)),
    "b2": rng.uniform(-1, 1, (96,)),
    "w3": rng.uniform(-0.2, 0.2, (32, 96, 1, 1)),
    "b3": rng.uniform(-1, 1, (32,)),
    "w4": rng.uniform(-0.2, 0.2, (64, 32, 1, 1)),
    "b4": rng.uniform(-1, 1, (64,)),
    "m": rng.uniform(-0.2, 0.2, (32, 48)),
    "bm": rng.uniform(-1, 1, (48,)),
    "w5": rng.uniform(-0.3, 0.3, (40, 32, 1, 1)),
    "b5": rng.uniform(-1, 1, (40,)),
    "w6": rng.uniform(-0.5, 0.5, (40, 1, 3, 3)),
    "b6": rng.uniform(-1, 1, (40,)),
    "w7": rng.uniform(-0.3, 0.3, (32, 32, 1, 1)),
    "b7": rng.uniform(-1, 1, (32,)),
    "w8": rng.uniform(-0.3, 0.3, (32, 32, 1, 1)),
    "b8": rng.uniform(-1, 1, (32,)),
    "w9": rng.uniform(-0.3, 0.3, (16, 32, 1, 1)),
    "b9": rng.uniform(-1, 1, (16,)),
    "w10": rng.uniform(-1, 1, (40, 32, 1, 1)),
    "b10": rng.uniform(-1, 1, (40,)),
    "w11": rng.uniform(-1, 1, (40, 1, 3, 3)),
    "b11": rng.uniform(-1, 1, (40,)),
}
X_SHAPE = (1, 32, 48, 48)


def conv(x, w, b, groups=1, pad=0):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    fg = f // groups
    oh, ow = h - kh + 1, wd - kw + 1
    out = np.zeros((n, f, oh, ow))
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                out[:, g * fg:(g + 1) * fg] += np.einsum(
                    "fc,nchw->nfhw", w[g * fg:(g + 1) * fg, :, i, j],
                    xs[:, :, i:i + oh, j:j + ow])
    return out + b[None, :, None, None]


def reference(x):
    a1 = np.clip(conv(x, W["w1"], W["b1"]), 0.0, 6.0)
    a2 = np.maximum(conv(a1, W["w2"], W["b2"], groups=96, pad=1), 0.0)
    p = conv(a2, W["w3"], W["b3"])
    r = np.maximum(conv(p, W["w4"], W["b4"]), 0.0)
    # The MatMul: positions as rows, p's channels as columns.
    rows = p.reshape(32, -1).T
    mm = np.maximum(rows @ W["m"] + W["bm"], 0.0)
    # SiLU (Sigmoid, then Mul by its input) after a 1x1 and a depthwise one.
    silu = lambda v: v / (1.0 + np.exp(-v))
    s1 = silu(conv(p, W["w5"], W["b5"]))
    s = silu(conv(s1, W["w6"], W["b6"], groups=40, pad=1))
    # A residual: ReLU(conv(p) + t), t read by another product before and
    # dead after the Add.
    t = np.maximum(conv(p, W["w7"], W["b7"]), 0.0)
    u = conv(t, W["w9"], W["b9"])
    res = np.maximum(conv(p, W["w8"], W["b8"]) + t, 0.0)
    # HardSwish after a 1x1 convolution (ONNX's HardSwish) and after a
    # depthwise one (HardSigmoid of alpha 1/6, beta 1/2, then Mul by its
    # input: older exports).
    hard_swish = lambda v: v * np.clip(v / 6.0 + 0.5, 0.0, 1.0)
    hs1 = hard_swish(conv(p, W["w10"], W["b10"]))
    hs = hard_swish(conv(hs1, W["w11"], W["b11"], groups=40, pad=1))
    return {"p": p, "r": r, "mm": mm, "s": s, "u": u, "res": res, "hs": hs}


if sys.argv[1] == "model":
    import onnx
    from onnx import helper as h
    from onnx import numpy_helper

    d = sys.argv[2]
    dynamic = sys.argv[3:] == ["dynamic"]
    x_shape = (2,) + X_SHAPE[1:] if dynamic else X_SHAPE
    n = "n" if dynamic else 1
    inits = [numpy_helper.from_array(v.astype(np.float32), k)
             for k, v in W.items()]
    inits.append(numpy_helper.from_array(np.array([32, -1], np.int64),
                                         "shape"))
    nodes = [
        # Clip's bounds as Constant nodes, as PyTorch exports ReLU6.
        h.make_node("Constant", [], ["lo"], value_float=0.0),
        h.make_node("Constant", [], ["hi"], value_float=6.0),
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"]),
        h.make_node("Clip", ["c1", "lo", "hi"], ["a1"]),
        h.make_node("Conv", ["a1", "w2", "b2"], ["c2"], group=96,
                    pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c2"], ["a2"]),
        h.make_node("Conv", ["a2", "w3", "b3"], ["p"]),
        h.make_node("Conv", ["p", "w4", "b4"], ["c4"]),
        h.make_node("Relu", ["c4"], ["r"]),
        h.make_node("Reshape", ["p", "shape"], ["pr"]),
        h.make_node("Transpose", ["pr"], ["pt"], perm=[1, 0]),
        h.make_node("MatMul", ["pt", "m"], ["mp"]),
        h.make_node("Add", ["mp", "bm"], ["ma"]),
        h.make_node("Relu", ["ma"], ["mm"]),
        h.make_node("Conv", ["p", "w5", "b5"], ["c5"]),
        h.make_node("Sigmoid", ["c5"], ["g5"]),
        h.make_node("Mul", ["c5", "g5"], ["s1"]),
        h.make_node("Conv", ["s1", "w6", "b6"], ["c6"], group=40,
                    pads=[1, 1, 1, 1]),
        h.make_node("Sigmoid", ["c6"], ["g6"]),
        h.make_node("Mul", ["g6", "c6"], ["s"]),
        h.make_node("Conv", ["p", "w7", "b7"], ["c7"]),
        h.make_node("Relu", ["c7"], ["t"]),
        h.make_node("Conv", ["t", "w9", "b9"], ["u"]),
        h.make_node("Conv", ["p", "w8", "b8"], ["c8"]),
        h.make_node("Add", ["c8", "t"], ["a8"]),
        h.make_node("Relu", ["a8"], ["res"]),
        h.make_node("Conv", ["p", "w10", "b10"], ["c10"]),
        h.make_node("HardSwish", ["c10"], ["hs1"]),
        h.make_node("Conv", ["hs1", "w11", "b11"], ["c11"], group=40,
                    pads=[1, 1, 1, 1]),
        h.make_node("HardSigmoid", ["c11"], ["g11"], alpha=1.0 / 6.0,
                    beta=0.5),
        h.make_node("Mul", ["c11", "g11"], ["hs"]),
    ]
    f = onnx.TensorProto.FLOAT
    g = h.make_graph(
        nodes, "pe",
        [h.make_tensor_value_info("x", f, [n] + list(X_SHAPE[1:]))],
        [h.make_tensor_value_info("p", f, [n, 32, 48, 48]),
         h.make_tensor_value_info("r", f, [n, 64, 48, 48]),
         h.make_tensor_value_info("mm", f,
                                  ["m" if dynamic else 48 * 48, 48]),
         h.make_tensor_value_info("s", f, [n, 40, 48, 48]),
         h.make_tensor_value_info("u", f, [n, 16, 48, 48]),
         h.make_tensor_value_info("res", f, [n, 32, 48, 48]),
         h.make_tensor_value_info("hs", f, [n, 40, 48, 48])], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]),
              os.path.join(d, "pe.onnx"))
    np.save(os.path.join(d, "x.npy"),
            rng.uniform(-2, 2, x_shape).astype(np.float32))
    sys.exit(0)

if sys.argv[1] == "run":
    d, exe, out, threads = sys.argv[2:6]
    sys.exit(subprocess.run(
        [exe, "--input", "x=" + os.path.join(d, "x.npy"), "--output-dir",
         os.path.join(d, out), "--threads", threads],
        stdout=subprocess.DEVNULL).returncode)

d = sys.argv[2]
want = reference(np.load(os.path.join(d, "x.npy")).astype(np.float64))
for run in sys.argv[3:]:
    bad = []
    for name, ref in want.items():
        got = np.load(os.path.join(d, run, name + ".npy"))
        if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-4,
                                                     atol=1e-4):
            err = np.abs(got - ref).max() if got.shape == ref.shape else None
            bad.append("%s (shape %s, max error %s)" % (name, got.shape, err))
        elif name in ("r", "mm", "res") and np.signbit(got[got == 0]).any():
            bad.append("%s has -0 after ReLU" % name)
    print("OK " + run if not bad else "FAIL %s: %s" % (run, ", ".join(bad)))
