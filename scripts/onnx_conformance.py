#!/usr/bin/python3
#===- scripts/onnx_conformance.py - Compile and run ONNX backend tests ---===#
# SPDX-License-Identifier: Apache-2.0
#
# Compiles the ONNX backend tests shipped by Debian's libonnx-testdata (the
# node, pytorch-converted, pytorch-operator and simple suites) to native
# executables with dist-opt, runs each executable on every test_data_set_N
# and compares its outputs with the expected ones the way ONNX's backend test
# runner does (onnx/backend/test/runner): same dtype, same shape, and
# numpy.testing.assert_allclose with rtol=1e-3 and atol=1e-7 (or the rtol and
# atol of the test's data.json) for floating-point outputs; integer and bool
# outputs must be equal.
#
# Each test is compiled with the shapes of its inputs (pass 1). If that fails
# because shapes stay unknown (a Reshape target that is a runtime value, ...),
# it is compiled again with the small and integer inputs bound as constants
# with --input-value (pass 2; --runtime-inputs turns it off, so that every
# input is fed at run time as ONNX's runner does), as
# scripts/check_onnx_node_tests.py does; its
# op list, test selection and input binding rules are imported from there. A
# bound input is no longer an input of the executable: the manifest that
# dist-opt writes (NAME.json) says what the executable takes. bfloat16 values
# travel as their uint16 bit patterns, as the ONNX 1.12 test data stores them.
#
# Results, one line per test, then a summary line:
#   PASS <name>
#   FAIL <name>: <reason>
#   UNSUPPORTED <name>: <reason>
#   total=N pass=N fail=N unsupported=N
# UNSUPPORTED means dist-opt exited with 3 (code generation does not support
# the op, type or attribute combination), or a run failed saying that inputs
# fed at run time ask for what the code does not support, or the test uses
# ops outside the importer's op list, a non-default opset domain, or
# sequence, optional, map
# or string values. A compile that crashes or times out is a FAIL.
#
# Run with Debian's interpreter, which has the onnx and numpy packages:
#
#   /usr/bin/python3 scripts/onnx_conformance.py [--suite S] [--filter REGEX]
#       [--required] [--tests-from FILE] [-j N] [--dist-opt PATH] [--list]
#       [--expect-pass FILE] [--write-pass FILE]
#
# Exits with 0 if no test failed and every --expect-pass test passed, 1
# otherwise and 2 on a usage or setup error.
#
#===----------------------------------------------------------------------===#

import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Exits with a message if the onnx module is missing.
import check_onnx_node_tests as node_tests  # noqa: E402
from script_util import one_line  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402

from onnx import numpy_helper  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIST_OPT = os.path.join(REPO_ROOT, "build", "bin", "dist-opt")
DEFAULT_DATA_ROOT = "/usr/share/libonnx-testdata/data"

SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")
# The suites the issue requires: every test made only of supported ops.
REQUIRED_SUITES = ("node", "pytorch-converted", "pytorch-operator")

# onnx/backend/test/loader: the tolerances of every test with a model.onnx;
# only a test's data.json can change them.
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7

# The executable's name inside the output directory.
EXE_NAME = "model"

# How a run reports inputs fed at run time that ask for what the generated
# code does not do (dist_rt_unsupported_error): UNSUPPORTED, as at compile
# time.
RUN_UNSUPPORTED = "is not supported by codegen"

# Element types whose values can be fed to and read from an executable as
# .npy files: the manifest's dtype strings.
NUMPY_DTYPES = {
    onnx.TensorProto.FLOAT: "float32",
    onnx.TensorProto.DOUBLE: "float64",
    onnx.TensorProto.FLOAT16: "float16",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.INT16: "int16",
    onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT64: "int64",
    onnx.TensorProto.UINT8: "uint8",
    onnx.TensorProto.UINT16: "uint16",
    onnx.TensorProto.UINT32: "uint32",
    onnx.TensorProto.UINT64: "uint64",
    onnx.TensorProto.BOOL: "bool",
    # Carried as uint16 bit patterns.
    onnx.TensorProto.BFLOAT16: "bfloat16",
}

#===----------------------------------------------------------------------===#
# Test discovery and selection
#===----------------------------------------------------------------------===#


class TestCase:
    """One backend test directory."""

    def __init__(self, suite, name, path):
        self.suite = suite
        self.name = name
        self.path = path
        self.model_path = os.path.join(path, "model.onnx")

    def data_sets(self):
        """The test_data_set_N directories, in order of N."""
        sets = glob.glob(os.path.join(self.path, "test_data_set_*"))
        return sorted((d for d in sets if os.path.isdir(d)),
                      key=lambda d: int(d.rsplit("_", 1)[1])
                      if d.rsplit("_", 1)[1].isdigit() else 0)


def discover(data_root, suites):
    """Returns the tests of `suites`, suite by suite, sorted by name. Tests
    without a model.onnx (the 'real' suite's download stubs) are skipped."""
    tests = []
    for suite in suites:
        suite_dir = os.path.join(data_root, suite)
        if not os.path.isdir(suite_dir):
            raise OSError("no test directory %s (install libonnx-testdata)" %
                          suite_dir)
        for name in sorted(os.listdir(suite_dir)):
            path = os.path.join(suite_dir, name)
            if os.path.isfile(os.path.join(path, "model.onnx")):
                tests.append(TestCase(suite, name, path))
    return tests


def is_required(test):
    """Whether the issue requires `test` to pass: a node, pytorch-converted
    or pytorch-operator test whose ops are all in the importer's op list
    (the selection of scripts/check_onnx_node_tests.py)."""
    if test.suite not in REQUIRED_SUITES:
        return False
    return node_tests.is_selected(onnx.load(test.model_path))


def read_name_list(path):
    """Reads test names, one per line; '#' starts a comment."""
    names = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


#===----------------------------------------------------------------------===#
# Static checks
#===----------------------------------------------------------------------===#


def unsupported_reason(model):
    """Why `model` cannot be compiled whatever dist-opt does, or None."""
    for o in model.opset_import:
        if o.domain not in node_tests.DEFAULT_DOMAINS:
            return "opset domain '%s'" % o.domain
    bad_ops = sorted({n.op_type for n in model.graph.node
                      if n.domain not in node_tests.DEFAULT_DOMAINS or
                      n.op_type not in (node_tests.SUPPORTED_OPS |
                                        node_tests.EXTRA_OPS)})
    if bad_ops:
        return "op%s %s not in the importer's op list" % (
            "s" if len(bad_ops) > 1 else "", ",".join(bad_ops))
    inits = {i.name for i in model.graph.initializer}
    values = [("input", vi) for vi in model.graph.input
              if vi.name not in inits]
    values += [("output", vi) for vi in model.graph.output]
    for what, vi in values:
        kind = node_tests.value_kind(vi)
        if kind != "tensor":
            return "%s '%s' has %s type" % (what, vi.name, kind)
        elem = vi.type.tensor_type.elem_type
        if elem not in NUMPY_DTYPES:
            return "%s '%s' has element type %s" % (
                what, vi.name, onnx.TensorProto.DataType.Name(elem))
    return None


#===----------------------------------------------------------------------===#
# Running processes
#===----------------------------------------------------------------------===#


def signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal %d" % signum



class ProcResult:

    def __init__(self, rc=None, stderr="", stdout="", timed_out=False,
                 os_error=None):
        self.rc = rc
        self.stderr = stderr
        self.stdout = stdout
        self.timed_out = timed_out
        self.os_error = os_error

    def first_line(self, pattern=None):
        lines = [l for l in self.stderr.splitlines() if l.strip()]
        if pattern:
            for l in lines:
                if pattern in l:
                    return l.strip()
        return lines[0].strip() if lines else "<no stderr>"

    def crash_reason(self, what, timeout):
        """The reason for a FAIL if the process did not exit normally with
        0, 1 or 3, or None."""
        if self.os_error:
            return "cannot run %s: %s" % (what, self.os_error)
        if self.timed_out:
            return "%s timed out after %gs" % (what, timeout)
        if self.rc < 0:
            return "%s crashed (%s): %s" % (what, signal_name(-self.rc),
                                            self.first_line())
        return None


def run_proc(cmd, timeout, log, verbose, label):
    if verbose:
        log.append("  %s: %s" % (label, " ".join(cmd)))
    try:
        # A session of its own, so that a timeout also ends the processes it
        # started (a linker, ...), which would otherwise hold the pipes.
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        result = ProcResult(os_error=str(e))
    else:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
            result = ProcResult(proc.returncode,
                                stderr.decode("utf-8", "replace"),
                                stdout.decode("utf-8", "replace"))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            stdout, stderr = proc.communicate()
            result = ProcResult(timed_out=True,
                                stderr=stderr.decode("utf-8", "replace"))
    if verbose:
        log.append("    exit: %s" % ("timeout" if result.timed_out else
                                     result.os_error or result.rc))
        log.extend("    " + l for l in result.stderr.splitlines()[:40])
    return result


#===----------------------------------------------------------------------===#
# Test data
#===----------------------------------------------------------------------===#


class DataSet:
    """The inputs and expected outputs of one test_data_set_N."""

    def __init__(self, path, model, fix_dir):
        self.path = path
        graph = model.graph
        inits = {i.name for i in graph.initializer}
        graph_inputs = [vi for vi in graph.input if vi.name not in inits]
        # input_K.pb belongs to the K-th graph input that is not an
        # initializer (old IR versions list the weights after the inputs).
        self.inputs = []  # [node_tests.Input]
        self.values = {}  # input name -> numpy array
        for k, vi in enumerate(graph_inputs):
            pb = os.path.join(path, "input_%d.pb" % k)
            if not os.path.exists(pb):
                continue
            tensor = node_tests.read_tensor(pb)
            self.values[vi.name] = numpy_helper.to_array(tensor)
            if (vi.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16
                    and tensor.data_type == onnx.TensorProto.UINT16):
                # ONNX 1.12 stores bfloat16 data as uint16 bit patterns;
                # --input-value needs the declared type. The bits stay.
                tensor.data_type = onnx.TensorProto.BFLOAT16
                os.makedirs(fix_dir, exist_ok=True)
                pb = os.path.join(fix_dir, "input_%d.pb" % k)
                with open(pb, "wb") as f:
                    f.write(tensor.SerializeToString())
            inp = node_tests.Input(vi.name, pb, tensor,
                                   node_tests.declared_static(vi))
            if inp.static and inp.dims != [
                    d.dim_value for d in vi.type.tensor_type.shape.dim]:
                # A few tests (castlike's `like`) declare a shape their
                # data does not have: compile for the data's.
                inp.static = False
            self.inputs.append(inp)
        extra = len(glob.glob(os.path.join(path, "input_*.pb"))) - len(
            self.inputs)
        if extra > 0:
            raise ValueError("%d input files that match no graph input" %
                             extra)
        self.outputs = []  # [(name, expected array, declared elem type)]
        for k, vi in enumerate(graph.output):
            pb = os.path.join(path, "output_%d.pb" % k)
            if os.path.exists(pb):
                self.outputs.append(
                    (vi.name, numpy_helper.to_array(node_tests.read_tensor(pb)),
                     vi.type.tensor_type.elem_type))

    def shape_key(self):
        return tuple((i.name, tuple(i.dims)) for i in self.inputs
                     if not i.static)


def tolerances(test):
    """rtol and atol as onnx/backend/test/loader picks them."""
    rtol, atol = DEFAULT_RTOL, DEFAULT_ATOL
    data_json = os.path.join(test.path, "data.json")
    if os.path.exists(data_json):
        with open(data_json) as f:
            data = json.load(f)
        rtol = data.get("rtol", rtol)
        atol = data.get("atol", atol)
    return rtol, atol


#===----------------------------------------------------------------------===#
# Compiling
#===----------------------------------------------------------------------===#


class Compiled:
    """The outcome of compiling a test. `status` is "ok", "error" (exit 1,
    may be retried with bound inputs), "unsupported" or "fail"."""

    def __init__(self, status, reason="", out_dir=None, manifest=None):
        self.status = status
        self.reason = reason
        self.out_dir = out_dir
        self.manifest = manifest

    @property
    def exe(self):
        return os.path.join(self.out_dir, EXE_NAME)


def compile_once(ctx, extra_args, label):
    ctx.builds += 1
    out_dir = os.path.join(ctx.tmp, "build%d" % ctx.builds)
    os.makedirs(out_dir)
    cmd = [ctx.args.dist_opt, ctx.test.model_path, "-o", out_dir, "--name",
           EXE_NAME] + extra_args
    if ctx.args.target:
        cmd.append("--target=" + ctx.args.target)
    if ctx.args.runtime_lib:
        cmd += ["--runtime-lib", ctx.args.runtime_lib]
    r = run_proc(cmd, ctx.args.timeout, ctx.log, ctx.args.verbose, label)
    crash = r.crash_reason("compile", ctx.args.timeout)
    if crash:
        return Compiled("fail", crash)
    if r.rc == 3:
        return Compiled("unsupported", r.first_line("not supported"))
    if r.rc == 1:
        return Compiled("error", "compile " + r.first_line())
    if r.rc != 0:
        return Compiled("fail", "compile exited with %d: %s" %
                        (r.rc, r.first_line()))
    manifest_path = os.path.join(out_dir, EXE_NAME + ".json")
    if not os.access(os.path.join(out_dir, EXE_NAME), os.X_OK):
        return Compiled("fail", "compile exited with 0 but wrote no "
                        "executable")
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
        for io in manifest["inputs"] + manifest["outputs"]:
            missing = [k for k in ("name", "dtype", "shape") if k not in io]
            if missing:
                raise ValueError("an input or output has no '%s'" %
                                 missing[0])
    except (OSError, ValueError, KeyError, TypeError) as e:
        return Compiled("fail", "bad manifest %s.json: %s" % (EXE_NAME, e))
    return Compiled("ok", out_dir=out_dir, manifest=manifest)


def compile_for(ctx, data_set):
    """Compiles the test for the shapes (and, if needed, the shape-like
    values) of `data_set`, reusing an earlier build that fits."""
    key = data_set.shape_key()
    first = ctx.cache.get(key)
    if first is None:
        shape_args = [i.shape_arg() for i in data_set.inputs if not i.static]
        first = compile_once(ctx, shape_args, "compile (shapes)")
        ctx.cache[key] = first
    if first.status in ("ok", "fail") or ctx.args.runtime_inputs:
        return first

    # Pass 2: bind the small and integer inputs, as the importer check does.
    bound = [i for i in data_set.inputs if i.is_shape_like()]
    if not bound:
        return first
    key2 = key + tuple((i.name, data_set.values[i.name].dtype.str,
                        data_set.values[i.name].tobytes()) for i in bound)
    second = ctx.cache.get(key2)
    if second is None:
        args = [i.shape_arg() for i in data_set.inputs
                if i not in bound and not i.static]
        args += [i.value_arg() for i in bound]
        second = compile_once(ctx, args, "compile (bound %s)" %
                              ",".join(i.name for i in bound))
        ctx.cache[key2] = second
    if second.status == "error":
        if first.status == "unsupported":
            return first
        return Compiled("fail", "%s; after binding %s: %s" % (
            first.reason, ",".join(i.name for i in bound), second.reason))
    return second


#===----------------------------------------------------------------------===#
# Running and comparing
#===----------------------------------------------------------------------===#


def output_file_name(name):
    return name.replace("/", "_") + ".npy"


def shape_matches(shape, manifest_shape):
    return len(shape) == len(manifest_shape) and all(
        m == -1 or m == d for d, m in zip(shape, manifest_shape))


def as_bits16(array):
    """Views a 2-byte array as uint16 (bfloat16 outputs), or None."""
    if array.dtype.itemsize != 2 or array.dtype.kind == "f":
        return None
    return array.view(np.uint16)


def compare_output(name, actual, expected, declared, rtol, atol):
    """Compares like onnx's Runner.assert_similar_outputs; returns the
    reason of a mismatch or None."""
    what = "output '%s'" % name
    if declared == onnx.TensorProto.BFLOAT16 and expected.dtype == np.uint16:
        # ONNX 1.12 stores bfloat16 test data as uint16 bit patterns and its
        # runner compares those.
        bits = as_bits16(actual)
        if bits is None:
            return "%s: dtype %s, expected bfloat16 bits" % (what,
                                                             actual.dtype)
        actual = bits
    if actual.dtype != expected.dtype:
        return "%s: dtype %s, expected %s" % (what, actual.dtype,
                                              expected.dtype)
    if actual.shape != expected.shape:
        return "%s: shape %s, expected %s" % (what, list(actual.shape),
                                              list(expected.shape))
    if expected.dtype.kind in "fc" or declared == onnx.TensorProto.BFLOAT16:
        try:
            np.testing.assert_allclose(actual, expected, rtol=rtol,
                                       atol=atol)
            return None
        except AssertionError:
            pass
        a = actual.astype(np.float64)
        e = expected.astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
            diff = np.abs(a - e)
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        finite = diff[bad & np.isfinite(diff)]
        return ("%s: %d of %d elements differ (rtol=%g atol=%g), max abs "
                "diff %s, first at %s: got %r, expected %r" % (
                    what, int(bad.sum()), bad.size, rtol, atol,
                    "%.3g" % finite.max() if finite.size else "inf/nan",
                    list(first), a[first].item(), e[first].item()))
    if np.array_equal(actual, expected):
        return None
    bad = actual != expected
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return "%s: %d of %d elements differ, first at %s: got %r, expected %r" % (
        what, int(bad.sum()), bad.size, list(first), actual[first].item(),
        expected[first].item())


def run_data_set(ctx, compiled, data_set, index):
    """Runs the executable on one data set; returns a FAIL reason or None."""
    set_name = os.path.basename(data_set.path)
    work = os.path.join(ctx.tmp, "run%d" % index)
    res_dir = os.path.join(work, "out")
    os.makedirs(res_dir)
    cmd = [compiled.exe]
    for k, inp in enumerate(compiled.manifest["inputs"]):
        name = inp["name"]
        if name not in data_set.values:
            return "%s: the executable takes input '%s', which the test " \
                "does not have" % (set_name, name)
        value = data_set.values[name]
        dtype = inp["dtype"]
        if dtype == "bfloat16" and value.dtype == np.uint16:
            pass  # bfloat16 bits
        elif value.dtype != np.dtype(dtype):
            return "%s: manifest input '%s' is %s, the test's is %s" % (
                set_name, name, dtype, value.dtype)
        if not shape_matches(value.shape, inp["shape"]):
            return "%s: manifest input '%s' has shape %s, the test's is %s" % (
                set_name, name, inp["shape"], list(value.shape))
        path = os.path.join(work, "in%d.npy" % k)
        # np.save keeps 0-d arrays 0-d (np.ascontiguousarray would not).
        np.save(path, value)
        cmd += ["--input", "%s=%s" % (name, path)]
    cmd += ["--output-dir", res_dir]
    if ctx.args.threads:
        cmd += ["--threads", str(ctx.args.threads)]
    r = run_proc(cmd, ctx.args.timeout, ctx.log, ctx.args.verbose,
                 "run " + set_name)
    crash = r.crash_reason("run", ctx.args.timeout)
    if crash:
        return "%s: %s" % (set_name, crash)
    if r.rc != 0:
        return "%s: run exited with %d: %s" % (set_name, r.rc, r.first_line())
    for name, expected, declared in data_set.outputs:
        path = os.path.join(res_dir, output_file_name(name))
        if not os.path.exists(path):
            return "%s: no %s written" % (set_name, output_file_name(name))
        try:
            actual = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            return "%s: cannot read %s: %s" % (set_name,
                                               output_file_name(name), e)
        reason = compare_output(name, actual, expected, declared, ctx.rtol,
                                ctx.atol)
        if reason:
            return "%s: %s" % (set_name, reason)
    return None


def stage_data_set(ctx, compiled, data_set, index):
    """--stage: keeps the build and the data set's inputs, expected outputs
    and tolerances under STAGE/<test>/, for scripts/gpu_check.py to run
    where the executable can run (a GPU machine)."""
    root = os.path.join(ctx.args.stage, ctx.test.name)
    build = os.path.join(root, "build%s" % os.path.basename(compiled.out_dir)
                         .replace("build", ""))
    if not os.path.isdir(build):
        # What the executable needs to run: not the shared library, the
        # header or an ONNX copy.
        shutil.copytree(compiled.out_dir, build, ignore=shutil.ignore_patterns(
            "lib*.so", "*.h", "*.onnx"))
    set_dir = os.path.join(root, "set%d" % index)
    os.makedirs(set_dir)
    inputs = []
    for k, inp in enumerate(compiled.manifest["inputs"]):
        path = "in%d.npy" % k
        np.save(os.path.join(set_dir, path), data_set.values[inp["name"]])
        inputs.append([inp["name"], path])
    outputs = []
    for k, (name, expected, declared) in enumerate(data_set.outputs):
        path = "expected%d.npy" % k
        np.save(os.path.join(set_dir, path), expected)
        outputs.append([name, output_file_name(name), path])
    with open(os.path.join(set_dir, "case.json"), "w") as f:
        json.dump({"test": ctx.test.name,
                   "exe": os.path.relpath(os.path.join(build, EXE_NAME),
                                          set_dir),
                   "inputs": inputs, "outputs": outputs,
                   "rtol": ctx.rtol, "atol": ctx.atol}, f)


class Context:
    """The state of one test while it runs."""

    def __init__(self, args, test, tmp):
        self.args = args
        self.test = test
        self.tmp = tmp
        self.log = []
        self.builds = 0
        self.cache = {}
        self.rtol, self.atol = tolerances(test)


def run_test(args, test):
    """Runs one test. Returns (status, reason, log) with status one of
    "pass", "fail" and "unsupported"."""
    try:
        model = onnx.load(test.model_path)
    except Exception as e:  # A broken test directory, not a dist-opt bug.
        return "fail", "cannot read model: %s" % one_line(str(e)), []
    reason = unsupported_reason(model)
    if reason:
        return "unsupported", reason, []

    tmp = tempfile.mkdtemp(prefix="dist-conformance-%s-" % test.name)
    ctx = Context(args, test, tmp)
    try:
        try:
            data_sets = [DataSet(d, model, os.path.join(tmp, "data%d" % k))
                         for k, d in enumerate(test.data_sets())]
        except Exception as e:
            return "fail", "cannot read test data: %s" % one_line(str(e)), []
        if not data_sets:
            return "fail", "no test_data_set_* directory", []
        for index, data_set in enumerate(data_sets):
            compiled = compile_for(ctx, data_set)
            if compiled.status == "unsupported":
                return "unsupported", compiled.reason, ctx.log
            if compiled.status != "ok":
                return "fail", compiled.reason, ctx.log
            if args.stage:
                stage_data_set(ctx, compiled, data_set, index)
                continue
            reason = run_data_set(ctx, compiled, data_set, index)
            if reason and RUN_UNSUPPORTED in reason:
                # Inputs fed at run time asked for what the code does not
                # do (training-mode dropout with a nonzero ratio), and the
                # run said so.
                return "unsupported", reason, ctx.log
            if reason:
                return "fail", reason, ctx.log
        return ("staged" if args.stage else "pass"), "", ctx.log
    finally:
        if args.keep_temp:
            ctx.log.append("  kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


#===----------------------------------------------------------------------===#
# Driver
#===----------------------------------------------------------------------===#


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Compile the ONNX backend tests with dist-opt, run them "
        "and compare their outputs with the expected ones.")
    parser.add_argument("--suite", choices=SUITES + ("all",), default="all",
                        help="test suite (default: %(default)s)")
    parser.add_argument("--required", action="store_true",
                        help="only the tests the issue requires: node, "
                        "pytorch-converted and pytorch-operator tests whose "
                        "ops are all in the importer's op list")
    parser.add_argument("--filter", metavar="REGEX",
                        help="only tests whose name matches")
    parser.add_argument("--tests-from", metavar="FILE",
                        help="only the tests named in FILE, one per line")
    parser.add_argument("-j", type=int, default=2, metavar="N", dest="jobs",
                        help="tests run in parallel (default: %(default)s)")
    parser.add_argument("--dist-opt", default=DEFAULT_DIST_OPT,
                        help="dist-opt binary (default: %(default)s)")
    parser.add_argument("--data-root", default=DEFAULT_DATA_ROOT,
                        help="directory holding the suites (default: "
                        "%(default)s)")
    parser.add_argument("--timeout", type=float, default=120,
                        metavar="SECONDS", help="time limit per compile and "
                        "per run (default: %(default)s)")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="pass --threads N to the executables")
    parser.add_argument("--runtime-inputs", action="store_true",
                        help="feed every input at run time, as ONNX's runner "
                        "does: never bind shape-like inputs as constants "
                        "(no second pass with --input-value)")
    parser.add_argument("--list", action="store_true",
                        help="only print the selected tests")
    parser.add_argument("--expect-pass", metavar="FILE",
                        help="fail if a test named in FILE does not pass")
    parser.add_argument("--write-pass", metavar="FILE",
                        help="write the names of the tests that passed")
    parser.add_argument("--target", metavar="TARGET",
                        help="pass --target=TARGET to dist-opt (cuda: the "
                        "executables run only where a GPU is; see --stage)")
    parser.add_argument("--runtime-lib", metavar="FILE",
                        help="pass --runtime-lib FILE to dist-opt (the "
                        "shared runtime: executables that share it)")
    parser.add_argument("--stage", metavar="DIR",
                        help="compile only, and keep each build with its "
                        "data sets under DIR/<test>/ for "
                        "scripts/gpu_check.py (result STAGED)")
    parser.add_argument("--verbose", action="store_true",
                        help="print the commands and their stderr")
    parser.add_argument("--keep-temp", action="store_true",
                        help="keep each test's build directory")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("-j must be at least 1")
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    return args


def select(args):
    """Returns the tests to run, or raises ValueError/OSError."""
    suites = SUITES if args.suite == "all" else (args.suite,)
    tests = discover(args.data_root, suites)
    if args.required:
        tests = [t for t in tests if is_required(t)]
    if args.tests_from:
        wanted = read_name_list(args.tests_from)
        by_name = {t.name: t for t in tests}
        missing = [n for n in wanted if n not in by_name]
        if missing:
            raise ValueError("%s names tests that are not selected: %s" % (
                args.tests_from, " ".join(missing)))
        wanted_set = set(wanted)
        tests = [t for t in tests if t.name in wanted_set]
    if args.filter:
        try:
            pattern = re.compile(args.filter)
        except re.error as e:
            raise ValueError("bad --filter: %s" % e)
        tests = [t for t in tests if pattern.search(t.name)]
    return tests


def main(argv):
    args = parse_args(argv)
    try:
        tests = select(args)
        expected_pass = (read_name_list(args.expect_pass)
                         if args.expect_pass else [])
    except (OSError, ValueError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2

    if args.list:
        for t in tests:
            print(t.name)
        print("selected %d tests" % len(tests))
        return 0

    args.dist_opt = os.path.abspath(args.dist_opt)
    if not os.access(args.dist_opt, os.X_OK):
        print("error: no dist-opt at %s (build it or pass --dist-opt)" %
              args.dist_opt, file=sys.stderr)
        return 2

    results = {}
    counts = {"pass": 0, "fail": 0, "unsupported": 0, "staged": 0}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_test, args, t) for t in tests]
        for test, future in zip(tests, futures):
            status, reason, log = future.result()
            results[test.name] = status
            counts[status] += 1
            if status in ("pass", "staged"):
                print("%s %s" % (status.upper(), test.name))
            else:
                print("%s %s: %s" % (status.upper(), test.name,
                                     one_line(reason)))
            for line in log:
                print(line)
            sys.stdout.flush()

    if args.write_pass:
        with open(args.write_pass, "w") as f:
            for t in tests:
                if results[t.name] == "pass":
                    f.write(t.name + "\n")

    missed = [(n, results.get(n, "not run")) for n in expected_pass
              if results.get(n) not in ("pass", "staged")]
    for name, status in missed:
        print("expected to pass: %s: %s" % (name, status.upper()))
    if missed:
        print("%d of %d tests in %s did not pass" % (
            len(missed), len(expected_pass), args.expect_pass))
    print("total=%d pass=%d fail=%d unsupported=%d%s" % (
        len(tests), counts["pass"], counts["fail"], counts["unsupported"],
        " staged=%d" % counts["staged"] if args.stage else ""))
    return 0 if counts["fail"] == 0 and not missed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
