#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the CUDA artifacts of a bundle (scripts/gpu_bundle.sh) on a GPU and
prints what they measure beside PyTorch on the same GPU. Builds nothing:
needs numpy, and torch for the PyTorch figures.

    gpu_check.py BUNDLE [--skip-conformance] [--runs N]

1. The lit conformance subset: every staged data set (onnx_conformance.py
   --stage) runs its executable and compares each output with the expected
   one (ONNX's backend rule: allclose with the test's rtol/atol; integers
   and bools equal). One line per test, PASS or FAIL with the reason.
2. The benchmark models: outputs against PyTorch's (float32, TF32 off;
   max |difference| and whether it is within 1e-4, relative to the output's
   largest magnitude), latency at the benchmark batch (--bench, median)
   beside PyTorch eager's on the same GPU (CUDA-synchronised median).
3. A product: the GEMM artifact's latency beside torch.mm's, and GFLOP/s;
   then through its C API with device tensors (no host copies).
4. Training (issue 38): 30 AdamW steps of the MLP and the GPT-style LM
   (`train --log`) against PyTorch on the same GPU from the same initial
   weights and batches: fp32 losses within 1e-4 of PyTorch's (TF32 off),
   step time against PyTorch eager's (median of the steps after the
   first 5); the bf16 artifact (--precision=bf16) beside PyTorch under
   autocast(bfloat16): both curves' largest distance from the fp32 one.
5. `dist-calibrate --gpu 0 --quick` on the card: products per precision,
   copy bandwidth, launch overhead.

Ends with `N passed, N failed` over the checks (figures that miss their
target are reported, not failed: the closing note says which).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, timeout=600):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def first_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[0] if lines else ""


def bench_median_ms(stdout):
    """The median latency an executable's --bench prints, in ms."""
    for word in stdout.split():
        if word.startswith("latency_ms_median="):
            return float(word.split("=", 1)[1])
    return None


def compare(actual, expected, rtol, atol):
    if actual.shape != expected.shape:
        return "shape %s, expected %s" % (list(actual.shape),
                                          list(expected.shape))
    if expected.dtype.kind in "fc":
        try:
            np.testing.assert_allclose(actual.astype(np.float64),
                                       expected.astype(np.float64),
                                       rtol=rtol, atol=atol)
        except AssertionError:
            diff = np.max(np.abs(actual.astype(np.float64) -
                                 expected.astype(np.float64)))
            return "max |difference| %.3g (rtol %g, atol %g)" % (diff, rtol,
                                                                 atol)
        return None
    if not np.array_equal(actual, expected):
        return "values differ"
    return None


def conformance(bundle, tally):
    root = os.path.join(bundle, "conformance")
    if not os.path.isdir(root):
        print("conformance: no staged tests in %s" % root)
        return
    for test in sorted(os.listdir(root)):
        reason = None
        sets = sorted(d for d in os.listdir(os.path.join(root, test))
                      if d.startswith("set"))
        for s in sets:
            set_dir = os.path.join(root, test, s)
            case = json.load(open(os.path.join(set_dir, "case.json")))
            with tempfile.TemporaryDirectory() as out:
                cmd = [os.path.normpath(os.path.join(set_dir, case["exe"]))]
                for name, path in case["inputs"]:
                    cmd += ["--input", "%s=%s" % (name,
                                                  os.path.join(set_dir, path))]
                cmd += ["--output-dir", out]
                rc, _, err = run(cmd, timeout=120)
                if rc != 0:
                    reason = "%s: exit %d: %s" % (s, rc, first_line(err))
                    break
                for name, file_name, expected in case["outputs"]:
                    got = np.load(os.path.join(out, file_name))
                    want = np.load(os.path.join(set_dir, expected))
                    why = compare(got, want, case["rtol"], case["atol"])
                    if why:
                        reason = "%s: output %s: %s" % (s, name, why)
                        break
            if reason:
                break
        tally[reason is None] += 1
        print("%s %s%s" % ("PASS" if reason is None else "FAIL", test,
                           ": " + reason if reason else ""))
        sys.stdout.flush()


def torch_model(name):
    """The benchmark model as bench/export_bench_models.py builds it (same
    seed, same weights), without needing the onnx package."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        import onnx  # noqa: F401
    except ImportError:
        sys.modules["onnx"] = types.ModuleType("onnx")
    import export_bench_models as ebm
    return ebm.make_bench_model(name)


def torch_latency_ms(fn, runs):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def models(bundle, runs, tally):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    print("GPU: %s" % torch.cuda.get_device_name(0))
    root = os.path.join(bundle, "models")
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        spec = json.load(open(os.path.join(d, "bundle.json")))
        exe = os.path.join(d, "out", name)
        cmd = [exe]
        for inp in spec["inputs"]:
            cmd += ["--input", "%s=%s" % (inp, os.path.join(d, "inputs",
                                                            inp + ".npy"))]
        with tempfile.TemporaryDirectory() as out:
            rc, stdout, err = run(cmd + ["--output-dir", out, "--bench",
                                         str(runs)])
            if rc != 0:
                tally[False] += 1
                print("FAIL %s: exit %d: %s" % (name, rc, first_line(err)))
                continue
            ours_ms = bench_median_ms(stdout)
            outputs = {o: np.load(os.path.join(out, o + ".npy"))
                       for o in spec["outputs"]}
        module, _, ins, outs, _, _ = torch_model(name)
        module = module.to(device).eval()
        args = [torch.from_numpy(np.load(os.path.join(
            d, "inputs", i + ".npy"))).to(device) for i in spec["inputs"]]
        with torch.no_grad():
            results = module(*args)
            if isinstance(results, torch.Tensor):
                results = (results,)
            theirs_ms = torch_latency_ms(lambda: module(*args), runs)
        ok = True
        for o, value in zip(spec["outputs"], results):
            want = value.float().cpu().numpy()
            got = outputs[o]
            scale = max(1.0, float(np.max(np.abs(want))))
            diff = float(np.max(np.abs(got.astype(np.float64) - want))) \
                if got.shape == want.shape else float("inf")
            ref = np.load(os.path.join(d, "torch", o + ".npy"))
            ref_diff = float(np.max(np.abs(ref.astype(np.float64) - want)))
            within = diff <= 1e-4 * scale
            ok &= within
            print("%s %s: max |ours - torch(GPU)| %.3g (%s 1e-4 x %.3g); "
                  "torch(GPU) vs torch(CPU, exported) %.3g" % (
                      name, o, diff, "within" if within else "NOT within",
                      scale, ref_diff))
        print("%s latency at batch %d: dist-opt %s ms, PyTorch eager %.3f ms "
              "(%s)" % (name, spec["batch"],
                        "%.3f" % ours_ms if ours_ms else "?", theirs_ms,
                        "x%.2f" % (theirs_ms / ours_ms) if ours_ms else "?"))
        tally[ok] += 1
        sys.stdout.flush()


def gemm(bundle, runs, tally):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    d = os.path.join(bundle, "gemm")
    spec = json.load(open(os.path.join(d, "bundle.json")))
    m, k, n = spec["m"], spec["k"], spec["n"]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    with tempfile.TemporaryDirectory() as out:
        np.save(os.path.join(out, "a.npy"), a)
        np.save(os.path.join(out, "b.npy"), b)
        rc, stdout, err = run([os.path.join(d, "out", "gemm"), "--input",
                               "a=" + os.path.join(out, "a.npy"), "--input",
                               "b=" + os.path.join(out, "b.npy"),
                               "--output-dir", out, "--bench", str(runs)])
        if rc != 0:
            tally[False] += 1
            print("FAIL gemm: exit %d: %s" % (rc, first_line(err)))
            return
        ours_ms = bench_median_ms(stdout)
        c = np.load(os.path.join(out, "c.npy"))
    ta = torch.from_numpy(a).cuda()
    tb = torch.from_numpy(b).cuda()
    want = torch.mm(ta, tb).cpu().numpy()
    theirs_ms = torch_latency_ms(lambda: torch.mm(ta, tb), runs)
    diff = float(np.max(np.abs(c - want)))
    flop = 2.0 * m * n * k
    print("gemm %dx%dx%d: max |ours - torch.mm| %.3g; dist-opt %s ms "
          "(%s GFLOP/s), torch.mm %.3f ms (%.0f GFLOP/s)" % (
              m, k, n, diff, "%.3f" % ours_ms if ours_ms else "?",
              "%.0f" % (flop / ours_ms / 1e6) if ours_ms else "?", theirs_ms,
              flop / theirs_ms / 1e6))
    tally[diff <= 1e-3 * max(1.0, float(np.max(np.abs(want))))] += 1


def gemm_device_tensors(bundle, runs, tally):
    """The GEMM through its C API with device tensors (libgemm.so's
    gemm_model_create_cuda with device_tensors = 1): the input a torch CUDA
    tensor, the output read from the model's managed memory; latency
    without the host copies the executable's --bench includes."""
    import ctypes
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    d = os.path.join(bundle, "gemm")
    spec = json.load(open(os.path.join(d, "bundle.json")))
    m, k, n = spec["m"], spec["k"], spec["n"]

    class Tensor(ctypes.Structure):
        _fields_ = [("dtype", ctypes.c_uint32), ("rank", ctypes.c_uint32),
                    ("dims", ctypes.POINTER(ctypes.c_int64)),
                    ("data", ctypes.c_void_p)]

    lib = ctypes.CDLL(os.path.join(d, "out", "libgemm.so"))
    lib.gemm_model_create_cuda.restype = ctypes.c_void_p
    lib.gemm_model_create_cuda.argtypes = [
        ctypes.c_char_p, ctypes.c_int32, ctypes.c_uint32,
        ctypes.POINTER(ctypes.c_void_p)]
    lib.gemm_model_run.restype = ctypes.c_void_p
    lib.gemm_model_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor),
                                   ctypes.c_size_t,
                                   ctypes.POINTER(ctypes.POINTER(Tensor))]
    lib.gemm_status_message.restype = ctypes.c_char_p
    lib.gemm_status_message.argtypes = [ctypes.c_void_p]
    lib.gemm_model_destroy.argtypes = [ctypes.c_void_p]
    model = ctypes.c_void_p()
    status = lib.gemm_model_create_cuda(None, 0, 1, ctypes.byref(model))
    if status:
        tally[False] += 1
        print("FAIL gemm (device tensors): %s" %
              lib.gemm_status_message(status).decode())
        return
    ta = torch.randn(m, k, device="cuda", dtype=torch.float32)
    tb = torch.randn(k, n, device="cuda", dtype=torch.float32)
    a_dims = (ctypes.c_int64 * 2)(m, k)
    b_dims = (ctypes.c_int64 * 2)(k, n)
    inputs = (Tensor * 2)(Tensor(1, 2, a_dims, ta.data_ptr()),
                          Tensor(1, 2, b_dims, tb.data_ptr()))
    out = ctypes.POINTER(Tensor)()

    def step():
        st = lib.gemm_model_run(model, inputs, 2, ctypes.byref(out))
        if st:
            raise RuntimeError(lib.gemm_status_message(st).decode())

    try:
        step()
        c = out[0]
        got = np.ctypeslib.as_array(
            ctypes.cast(c.data, ctypes.POINTER(ctypes.c_float)),
            shape=(c.dims[0], c.dims[1])).copy()
        want = torch.mm(ta, tb).cpu().numpy()
        diff = float(np.max(np.abs(got - want))) if got.shape == want.shape \
            else float("inf")
        ours_ms = torch_latency_ms(step, runs)
    except RuntimeError as e:
        tally[False] += 1
        print("FAIL gemm (device tensors): %s" % e)
        lib.gemm_model_destroy(model)
        return
    theirs_ms = torch_latency_ms(lambda: torch.mm(ta, tb), runs)
    lib.gemm_model_destroy(model)
    print("gemm %dx%dx%d, device tensors: max |ours - torch.mm| %.3g; "
          "dist-opt %.3f ms, torch.mm %.3f ms (x%.2f; target within 5%%)" % (
              m, k, n, diff, ours_ms, theirs_ms, theirs_ms / ours_ms))
    tally[diff <= 1e-3 * max(1.0, float(np.max(np.abs(want))))] += 1


TRAIN_STEPS = 30


def torch_training(name, d, spec, steps, autocast):
    """Losses and per-step seconds of PyTorch training `name` on the GPU as
    the compiled step does: AdamW(lr 1e-3), cross entropy, batches in file
    order from the bundle's data, from the benchmark model's weights (the
    initializers the artifact was compiled with)."""
    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    module, _, ins, _, _, _ = torch_model(name)
    module = module.cuda().train()
    data = [torch.from_numpy(np.load(os.path.join(d, i + ".npy"))).cuda()
            for i in ins]
    label = torch.from_numpy(np.load(os.path.join(d, "label.npy"))).cuda()
    batch = spec["batch"]
    opt = torch.optim.AdamW(module.parameters(), lr=1e-3)
    nb = data[0].shape[0] // batch
    losses, times = [], []
    for s in range(steps):
        b = s % nb
        xs = [t[b * batch:(b + 1) * batch] for t in data]
        y = label[b * batch:(b + 1) * batch]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            out = module(*xs)
            out = out.float()
            if out.dim() == 3:
                loss = F.cross_entropy(out.reshape(-1, out.shape[-1]),
                                       y.reshape(-1))
            else:
                loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        times.append(time.perf_counter() - t0)
    return losses, times


def ours_training(name, d, spec, out_dir, steps):
    """Losses and per-step seconds of the compiled training step."""
    exe = os.path.join(d, out_dir, name)
    with tempfile.TemporaryDirectory() as work:
        log = os.path.join(work, "log.jsonl")
        cmd = [exe, "train", "--batch-size", str(spec["batch"]), "--steps",
               str(steps), "--log", log, "--quiet", "--params",
               os.path.normpath(os.path.join(d, spec["params"]))]
        for i in spec["inputs"]:
            cmd += ["--data", "%s=%s" % (i, os.path.join(d, i + ".npy"))]
        cmd += ["--data", "label=%s" % os.path.join(d, "label.npy")]
        rc, _, err = run(cmd)
        if rc != 0:
            return None, None, "exit %d: %s" % (rc, first_line(err))
        rows = [json.loads(l) for l in open(log) if l.strip()]
    losses = [r["loss"] for r in rows]
    times = [spec["batch"] / r["samples_per_s"] for r in rows
             if r.get("samples_per_s")]
    return losses, times, None


def training(bundle, tally):
    root = os.path.join(bundle, "train")
    if not os.path.isdir(root):
        print("training: nothing in %s" % root)
        return
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        spec = json.load(open(os.path.join(d, "bundle.json")))
        ours, ours_t, why = ours_training(name, d, spec, "out", TRAIN_STEPS)
        if why:
            tally[False] += 1
            print("FAIL train %s (fp32): %s" % (name, why))
            continue
        theirs, theirs_t = torch_training(name, d, spec, TRAIN_STEPS, False)
        diff = max(abs(a - b) / max(1.0, abs(b))
                   for a, b in zip(ours, theirs))
        ok = len(ours) == TRAIN_STEPS and diff <= 1e-4
        tally[ok] += 1
        med = lambda t: statistics.median(t[5:] or t) * 1000
        print("train %s fp32: %d steps, losses %.5f -> %.5f (PyTorch %.5f -> "
              "%.5f), largest relative difference %.2g (%s 1e-4); step "
              "dist-opt %.3f ms, PyTorch eager %.3f ms (x%.2f)" % (
                  name, len(ours), ours[0], ours[-1], theirs[0], theirs[-1],
                  diff, "within" if diff <= 1e-4 else "NOT within",
                  med(ours_t), med(theirs_t), med(theirs_t) / med(ours_t)))
        bf, bf_t, why = ours_training(name, d, spec, "out_bf16", TRAIN_STEPS)
        if why:
            tally[False] += 1
            print("FAIL train %s (bf16): %s" % (name, why))
            continue
        ac, ac_t = torch_training(name, d, spec, TRAIN_STEPS, True)
        gap = lambda a: max(abs(x - y) / max(1.0, abs(y))
                            for x, y in zip(a, theirs))
        tally[len(bf) == TRAIN_STEPS and all(map(math.isfinite, bf))] += 1
        print("train %s bf16: losses %.5f -> %.5f, autocast %.5f -> %.5f; "
              "largest relative distance from fp32 PyTorch: dist-opt %.3g, "
              "autocast %.3g; step dist-opt %.3f ms, autocast %.3f ms" % (
                  name, bf[0], bf[-1], ac[0], ac[-1], gap(bf), gap(ac),
                  med(bf_t), med(ac_t)))
        sys.stdout.flush()


def calibrate(bundle, tally):
    exe = os.path.join(bundle, "calibrate", "dist-calibrate")
    if not os.path.exists(exe):
        print("calibrate: no dist-calibrate in the bundle")
        return
    rc, out, err = run([exe, "--gpu", "0", "--quick"])
    print(err.strip())
    tally[rc == 0] += 1
    if rc == 0:
        print("dist-calibrate --gpu 0 --quick: %s" % " ".join(out.split()))


def find_cublaslt():
    """Points the runtime at a cuBLASLt (the products call it; 500 MiB, not
    in the bundle) when the loader has none: the toolkit's, else the copy
    PyTorch's wheels carry (DIST_RT_CUBLASLT). Returns what it uses."""
    if os.environ.get("DIST_RT_CUBLASLT"):
        return os.environ["DIST_RT_CUBLASLT"]
    import ctypes
    for name in ("libcublasLt.so.13", "libcublasLt.so.12"):
        try:
            ctypes.CDLL(name)
            return "%s (the loader's)" % name
        except OSError:
            pass
    import glob
    import site
    dirs = [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64")]
    dirs += [os.path.join(d, "nvidia") for d in site.getsitepackages() + [site.getusersitepackages()]]
    found = []
    for d in dirs:
        found += glob.glob(os.path.join(d, "**", "libcublasLt.so.1[23]"), recursive=True)
    if not found:
        return "none found: the products will fail"
    os.environ["DIST_RT_CUBLASLT"] = sorted(found)[-1]
    return os.environ["DIST_RT_CUBLASLT"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("bundle")
    p.add_argument("--skip-conformance", action="store_true")
    p.add_argument("--runs", type=int, default=20)
    a = p.parse_args()
    tally = {True: 0, False: 0}
    print("cuBLASLt: %s" % find_cublaslt())
    if not a.skip_conformance:
        conformance(a.bundle, tally)
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("torch sees no GPU")
    except ImportError as e:
        print("models and gemm skipped: %s" % e)
    else:
        models(a.bundle, a.runs, tally)
        gemm(a.bundle, a.runs, tally)
        gemm_device_tensors(a.bundle, a.runs, tally)
        training(a.bundle, tally)
    calibrate(a.bundle, tally)
    print("%d passed, %d failed" % (tally[True], tally[False]))
    return 0 if tally[False] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
