#!/usr/bin/python3
#===- scripts/check_onnx_node_tests.py - Import ONNX node tests ---------===#
# SPDX-License-Identifier: Apache-2.0
#
# Imports the ONNX backend node tests shipped by Debian's libonnx-testdata
# with `dist-opt --summary` and checks that the imported output types equal
# the shapes and element types of the expected outputs. Only tests whose ops
# are all in SUPPORTED_OPS and whose opset imports are only the default domain
# are selected. Each test is imported with the shapes of its inputs (pass 1);
# if that leaves only unknown dims, it is imported again with the small and
# integer inputs bound as constants (pass 2).
#
# Run with Debian's interpreter, which has the onnx and numpy packages:
#
#   /usr/bin/python3 scripts/check_onnx_node_tests.py [-j N] [--filter REGEX]
#   /usr/bin/python3 scripts/check_onnx_node_tests.py --list
#
# Exits with 0 if every selected test passed, 1 if some failed and 2 on a
# usage or setup error.
#
#===----------------------------------------------------------------------===#

import argparse
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

try:
    import onnx
except ImportError:
    sys.exit("error: the onnx module is missing; run this script with "
             "/usr/bin/python3 (Debian's python3-onnx)")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIST_OPT = os.path.join(REPO_ROOT, "build", "bin", "dist-opt")
DEFAULT_DATA = "/usr/share/libonnx-testdata/data/node"

#===----------------------------------------------------------------------===#
# Selection
#===----------------------------------------------------------------------===#

SUPPORTED_OPS = frozenset("""
    Abs Neg Exp Log Sqrt Reciprocal Floor Ceil Round Sign Sin Cos Tanh Sigmoid
    Relu LeakyRelu Elu Selu Celu Softplus Softsign HardSigmoid HardSwish Erf
    Gelu Not Identity Clip Cast CastLike PRelu Add Sub Mul Div Pow Mod Max Min
    Sum Mean Equal Less Greater LessOrEqual GreaterOrEqual And Or Xor Where
    MatMul Gemm Conv ConvTranspose MaxPool AveragePool GlobalAveragePool
    GlobalMaxPool BatchNormalization LayerNormalization InstanceNormalization
    Dropout Softmax LogSoftmax ReduceSum ReduceMean ReduceMax ReduceMin
    ReduceProd ReduceSumSquare ReduceL2 ReduceLogSumExp ArgMax ArgMin Reshape
    Flatten Transpose Squeeze Unsqueeze Concat Split Slice Gather
    GatherElements ScatterElements Expand Tile Pad Shape Size ConstantOfShape
    Constant Range TopK Trilu CumSum OneHot SoftmaxCrossEntropyLoss
    NegativeLogLikelihoodLoss
""".split())

# Ops beyond the list that the importer also handles: their tests
# run in the conformance runner (scripts/onnx_conformance.py) but are not
# part of the required selection above.
EXTRA_OPS = frozenset("""
    Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh IsNaN IsInf DepthToSpace
    SpaceToDepth Einsum Resize Upsample ScatterND
""".split())

DEFAULT_DOMAINS = frozenset(["", "ai.onnx"])

# ONNX TensorProto data types and the MLIR element types they import as.
# Types not listed here (STRING, complex, float8, ...) cannot match.
ELEMENT_TYPES = {
    onnx.TensorProto.FLOAT: "f32",
    onnx.TensorProto.UINT8: "ui8",
    onnx.TensorProto.INT8: "i8",
    onnx.TensorProto.UINT16: "ui16",
    onnx.TensorProto.INT16: "i16",
    onnx.TensorProto.INT32: "i32",
    onnx.TensorProto.INT64: "i64",
    onnx.TensorProto.BOOL: "i1",
    onnx.TensorProto.FLOAT16: "f16",
    onnx.TensorProto.DOUBLE: "f64",
    onnx.TensorProto.UINT32: "ui32",
    onnx.TensorProto.UINT64: "ui64",
    onnx.TensorProto.BFLOAT16: "bf16",
    onnx.TensorProto.STRING: "!dist.string",
}

INTEGER_TYPES = frozenset([
    onnx.TensorProto.UINT8, onnx.TensorProto.INT8, onnx.TensorProto.UINT16,
    onnx.TensorProto.INT16, onnx.TensorProto.INT32, onnx.TensorProto.INT64,
    onnx.TensorProto.UINT32, onnx.TensorProto.UINT64
])

# Pass 2 binds inputs with at most this many elements (or of integer type).
MAX_BOUND_ELEMENTS = 16


def is_selected(model):
    """Returns true if every op of `model` is supported and it imports only
    the default opset domain."""
    if any(o.domain not in DEFAULT_DOMAINS for o in model.opset_import):
        return False
    return all(n.op_type in SUPPORTED_OPS and n.domain in DEFAULT_DOMAINS
               for n in model.graph.node)


def select_tests(data_dir):
    """Returns (selected test names, number of node tests) for `data_dir`."""
    names = sorted(d for d in os.listdir(data_dir)
                   if os.path.isfile(os.path.join(data_dir, d, "model.onnx")))
    selected = [n for n in names
                if is_selected(onnx.load(os.path.join(data_dir, n,
                                                      "model.onnx")))]
    return selected, len(names)


#===----------------------------------------------------------------------===#
# Types
#===----------------------------------------------------------------------===#


def tensor_type_str(dims, elem):
    """Formats an MLIR ranked tensor type; `dims` of None means unranked."""
    if dims is None:
        return "tensor<*x%s>" % elem
    return "tensor<" + "".join("%sx" % d for d in dims) + elem + ">"


def parse_tensor_type(text):
    """Parses `tensor<2x?x3xf32>` into (dims, elem); dims is a list of ints
    and None (for `?`), or None for an unranked tensor. Returns None if
    `text` is not a tensor type."""
    m = re.fullmatch(r"tensor<([^,>]*)(,.*)?>", text.strip())
    if not m:
        return None
    body = m.group(1)
    # The element type may itself contain an `x` (`!dist.string`).
    if body.endswith("!dist.string"):
        parts = body[:-len("!dist.string")].split("x")
        parts[-1] = "!dist.string"
    else:
        parts = body.split("x")
    elem = parts[-1]
    if not elem:
        return None
    if parts[:-1] == ["*"]:
        return None, elem
    dims = []
    for p in parts[:-1]:
        if p == "?":
            dims.append(None)
        elif p.isdigit():
            dims.append(int(p))
        else:
            return None
    return dims, elem


class Expected:
    """The expected type of one graph output."""

    def __init__(self, name, dims, elem, exact=None):
        self.name = name
        self.dims = dims  # list of ints
        self.elem = elem  # MLIR element type, or None if not importable
        # The exact MLIR type, for sequence/optional outputs.
        self.exact = exact

    def __str__(self):
        if self.exact is not None:
            return self.exact
        return tensor_type_str(self.dims, self.elem or "?unsupported")


def compare(expected, got_text):
    """Compares an output's imported type with the expected one. Returns
    ("ok" | "dynamic" | "mismatch", reason)."""
    if expected.exact is not None:
        if got_text.strip() == expected.exact:
            return "ok", ""
        return "mismatch", "output '%s': got %s, expected %s" % (
            expected.name, got_text, expected.exact)
    got = parse_tensor_type(got_text)
    what = "output '%s': got %s, expected %s" % (expected.name, got_text,
                                                expected)
    if got is None:
        return "mismatch", "%s (not a tensor type)" % what
    dims, elem = got
    if expected.elem is None or elem != expected.elem:
        return "mismatch", "%s (element type)" % what
    if dims is None:
        return "dynamic", what
    if len(dims) != len(expected.dims):
        return "mismatch", "%s (rank)" % what
    if any(g is not None and g != e for g, e in zip(dims, expected.dims)):
        return "mismatch", "%s (static dim)" % what
    if any(g is None for g in dims):
        return "dynamic", what
    return "ok", ""


#===----------------------------------------------------------------------===#
# Test cases
#===----------------------------------------------------------------------===#


def read_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return tensor


class Input:
    """A graph input matched with its test data file."""

    def __init__(self, name, path, tensor, static):
        self.name = name
        self.path = path
        # The model already fixes this input's shape: no --input-shape.
        self.static = static
        self.dims = list(tensor.dims)
        self.data_type = tensor.data_type

    def num_elements(self):
        n = 1
        for d in self.dims:
            n *= d
        return n

    def shape_arg(self):
        return "--input-shape=%s=%s" % (self.name, ",".join(
            str(d) for d in self.dims))

    def value_arg(self):
        return "--input-value=%s=%s" % (self.name, self.path)

    def is_shape_like(self):
        return (self.num_elements() <= MAX_BOUND_ELEMENTS or
                self.data_type in INTEGER_TYPES)


def declared_mlir_type(type_proto):
    """MLIR spelling of a declared ONNX type (tensor, sequence, optional),
    or None for kinds dist-opt does not represent."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        tt = type_proto.tensor_type
        elem = ELEMENT_TYPES.get(tt.elem_type)
        if elem is None:
            return None
        if not tt.HasField("shape"):
            return "tensor<*x%s>" % elem
        dims = ["%d" % d.dim_value if d.HasField("dim_value") else "?"
                for d in tt.shape.dim]
        return "tensor<%s>" % "x".join(dims + [elem])
    if kind == "sequence_type":
        inner = declared_mlir_type(type_proto.sequence_type.elem_type)
        return None if inner is None else "!dist.sequence<%s>" % inner
    if kind == "optional_type":
        inner = declared_mlir_type(type_proto.optional_type.elem_type)
        return None if inner is None else "!dist.optional<%s>" % inner
    return None


def declared_static(value_info):
    """Whether a graph input's declared shape is fully known."""
    tt = value_info.type.tensor_type
    if not tt.HasField("shape"):
        return False
    return all(d.HasField("dim_value") for d in tt.shape.dim)


def value_kind(value_info):
    """Returns "tensor", "sequence", "optional", "map", ... for a graph
    input or output."""
    kind = value_info.type.WhichOneof("value") or "untyped"
    return kind[:-len("_type")] if kind.endswith("_type") else kind


def load_case(data_dir, name):
    """Returns (model path, inputs, expected outputs, notes). `notes` lists
    why the test cannot pass whatever dist-opt does (e.g. sequence inputs)."""
    test_dir = os.path.join(data_dir, name)
    model_path = os.path.join(test_dir, "model.onnx")
    set_dir = os.path.join(test_dir, "test_data_set_0")
    model = onnx.load(model_path)
    graph = model.graph
    notes = []

    initializers = {i.name for i in graph.initializer}
    graph_inputs = [i for i in graph.input if i.name not in initializers]
    input_files = sorted(glob.glob(os.path.join(set_dir, "input_*.pb")))
    if len(input_files) > len(graph_inputs):
        notes.append("%d input files for %d graph inputs" %
                     (len(input_files), len(graph_inputs)))
    inputs = []
    for i, vi in enumerate(graph_inputs):
        kind = value_kind(vi)
        if kind != "tensor":
            # Sequence/optional inputs keep their declared type.
            continue
        path = os.path.join(set_dir, "input_%d.pb" % i)
        if not os.path.exists(path):
            # An omitted trailing input: leave its shape to the importer.
            continue
        inputs.append(Input(vi.name, path, read_tensor(path),
                            declared_static(vi)))

    expected = []
    for i, vi in enumerate(graph.output):
        kind = value_kind(vi)
        if kind != "tensor":
            # The test data of sequence/optional outputs is not a
            # TensorProto: compare with the model's declared type instead.
            exact = declared_mlir_type(vi.type)
            if exact is None:
                notes.append("output '%s' has %s type, not tensor" %
                             (vi.name, kind))
                continue
            expected.append(Expected(vi.name, None, None, exact=exact))
            continue
        path = os.path.join(set_dir, "output_%d.pb" % i)
        if not os.path.exists(path):
            notes.append("no expected data for output '%s'" % vi.name)
            continue
        tensor = read_tensor(path)
        data_type = tensor.data_type
        # ONNX 1.12's test data stores bfloat16 outputs as uint16 bits; the
        # model's declared output type says what the value really is.
        declared = vi.type.tensor_type.elem_type
        if (data_type == onnx.TensorProto.UINT16 and
                declared == onnx.TensorProto.BFLOAT16):
            data_type = declared
        elem = ELEMENT_TYPES.get(data_type)
        if elem is None:
            notes.append("output '%s' has unsupported data type %s" %
                         (vi.name,
                          onnx.TensorProto.DataType.Name(tensor.data_type)))
        expected.append(Expected(vi.name, list(tensor.dims), elem))
    return model_path, inputs, expected, notes


#===----------------------------------------------------------------------===#
# Running dist-opt
#===----------------------------------------------------------------------===#


class ImportResult:

    def __init__(self, ok, reason="", crash=False, outputs=None, stderr=""):
        self.ok = ok
        self.reason = reason
        self.crash = crash
        self.outputs = outputs or []  # [(name, type text)] in printed order
        self.stderr = stderr


SUMMARY_OUTPUT_RE = re.compile(r"summary: output (.*): (\S+)$")


def run_import(dist_opt, model_path, extra_args, timeout):
    """Runs one import and classifies its result."""
    with tempfile.TemporaryDirectory(prefix="dist-onnx-node-") as tmp:
        out_path = os.path.join(tmp, "out.mlir")
        cmd = [dist_opt, model_path, "--summary",
               "--params-file=" + os.path.join(tmp, "params.bin"),
               "-o", out_path] + extra_args
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired:
            return ImportResult(False, "timeout after %gs" % timeout)
        except OSError as e:
            return ImportResult(False, "cannot run %s: %s" % (dist_opt, e))
        have_output = os.path.exists(out_path)

    stderr = proc.stderr.decode("utf-8", "replace")
    lines = stderr.splitlines()
    first = lines[0] if lines else "<no stderr>"
    rc = proc.returncode
    if rc < 0:
        return ImportResult(False, "crash (signal %d): %s" % (-rc, first),
                            crash=True, stderr=stderr)
    if rc != 0:
        if rc == 1 and len(lines) == 1 and lines[0].startswith("error: "):
            return ImportResult(False, "import " + lines[0], stderr=stderr)
        return ImportResult(
            False, "crash (exit code %d, %d stderr lines): %s" %
            (rc, len(lines), first), crash=True, stderr=stderr)

    if not have_output:
        return ImportResult(False, "exit code 0 but no output file",
                            stderr=stderr)
    outputs = []
    for line in lines:
        m = SUMMARY_OUTPUT_RE.match(line)
        if m:
            outputs.append((m.group(1), m.group(2)))
    if not any(l.startswith("summary: model ") for l in lines):
        return ImportResult(False, "no 'summary: model' line in stderr",
                            stderr=stderr)
    return ImportResult(True, outputs=outputs, stderr=stderr)


def check_outputs(result, expected):
    """Compares the summary outputs with the expected ones. Returns
    ("ok" | "dynamic" | "mismatch", reason)."""
    if len(result.outputs) != len(expected):
        return "mismatch", "summary lists %d outputs, expected %d" % (len(
            result.outputs), len(expected))
    verdict, reasons = "ok", []
    for exp, (name, type_text) in zip(expected, result.outputs):
        if name != exp.name:
            return "mismatch", "summary output '%s' where '%s' expected" % (
                name, exp.name)
        kind, reason = compare(exp, type_text)
        if kind == "mismatch":
            return kind, reason
        if kind == "dynamic":
            verdict = "dynamic"
            reasons.append(reason)
    return verdict, "; ".join(reasons)


def run_test(args, name):
    """Runs one test. Returns (status, reason, log) with status one of
    "pass", "bound" and "fail"."""
    log = []
    try:
        model_path, inputs, expected, notes = load_case(args.data, name)
    except Exception as e:  # A broken test directory, not a dist-opt bug.
        return "fail", "cannot read test data: %s" % e, log

    def attempt(label, extra_args):
        result = run_import(args.dist_opt, model_path, extra_args,
                            args.timeout)
        if args.verbose:
            log.append("  %s: %s %s" % (label, os.path.basename(
                args.dist_opt), " ".join(extra_args)))
            log.extend("    " + l for l in result.stderr.splitlines())
        return result

    shape_args = [i.shape_arg() for i in inputs if not i.static]
    first = attempt("pass 1", shape_args)
    if not first.ok:
        return "fail", first.reason, log
    if notes:
        # The import worked but the test cannot be checked.
        return "fail", "; ".join(notes), log
    verdict, reason = check_outputs(first, expected)
    if verdict == "ok":
        return "pass", "", log
    if verdict == "mismatch":
        return "fail", reason, log

    bound = [i for i in inputs if i.is_shape_like()]
    if not bound:
        return "fail", "unknown dims and no shape input to bind: " + reason, log
    # A bound input leaves the signature, so it only gets --input-value.
    second_args = [i.shape_arg() for i in inputs
                   if i not in bound and not i.static]
    second_args += [i.value_arg() for i in bound]
    second = attempt("pass 2", second_args)
    if not second.ok:
        return "fail", "after binding shape inputs: " + second.reason, log
    verdict, reason = check_outputs(second, expected)
    if verdict == "ok":
        return "bound", "", log
    return "fail", "after binding %s: %s" % (",".join(i.name for i in bound),
                                             reason), log


#===----------------------------------------------------------------------===#
# Driver
#===----------------------------------------------------------------------===#


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Import the ONNX backend node tests with dist-opt and "
        "check the imported output types.")
    parser.add_argument("--dist-opt", default=DEFAULT_DIST_OPT,
                        help="dist-opt binary (default: %(default)s)")
    parser.add_argument("--data", default=DEFAULT_DATA,
                        help="node test directory (default: %(default)s)")
    parser.add_argument("--filter", metavar="REGEX",
                        help="only run selected tests whose name matches")
    parser.add_argument("-j", type=int, default=2, metavar="N", dest="jobs",
                        help="parallel imports (default: %(default)s)")
    parser.add_argument("--verbose", action="store_true",
                        help="print the dist-opt arguments and stderr")
    parser.add_argument("--keep-going", action=argparse.BooleanOptionalAction,
                        default=True,
                        help="run every test after a failure (default: on)")
    parser.add_argument("--timeout", type=float, default=60, metavar="SECONDS",
                        help="time limit per import (default: %(default)s)")
    parser.add_argument("--list", action="store_true",
                        help="only print the selected tests")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("-j must be at least 1")
    return args


def main(argv):
    args = parse_args(argv)
    if not os.path.isdir(args.data):
        print("error: no node test directory %s (install libonnx-testdata)" %
              args.data, file=sys.stderr)
        return 2
    selected, total = select_tests(args.data)
    tests = selected
    if args.filter:
        try:
            pattern = re.compile(args.filter)
        except re.error as e:
            print("error: bad --filter: %s" % e, file=sys.stderr)
            return 2
        tests = [t for t in selected if pattern.search(t)]

    if args.list:
        for t in tests:
            print(t)
        print("selected %d of %d node tests" % (len(selected), total))
        if args.filter:
            print("--filter kept %d" % len(tests))
        return 0

    args.dist_opt = os.path.abspath(args.dist_opt)
    if not os.access(args.dist_opt, os.X_OK):
        print("error: no dist-opt at %s (build it or pass --dist-opt)" %
              args.dist_opt, file=sys.stderr)
        return 2

    counts = {"pass": 0, "bound": 0, "fail": 0}
    crashes = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_test, args, t) for t in tests]
        stopped = False
        for name, future in zip(tests, futures):
            if stopped:
                future.cancel()
                continue
            status, reason, log = future.result()
            counts[status] += 1
            if status == "pass":
                print("PASS %s" % name)
            elif status == "bound":
                print("PASS(bound) %s" % name)
            else:
                print("FAIL %s: %s" % (name, reason))
                crashes += reason.startswith("crash")
            for line in log:
                print(line)
            sys.stdout.flush()
            if status == "fail" and not args.keep_going:
                stopped = True
                for f in futures:
                    f.cancel()

    print()
    print("selected %d of %d node tests" % (len(selected), total))
    if args.filter:
        print("--filter kept %d" % len(tests))
    ran = sum(counts.values())
    if ran != len(tests):
        print("stopped after the first failure: %d not run" %
              (len(tests) - ran))
    print("passed with shapes only: %d" % counts["pass"])
    print("passed after binding shape inputs: %d" % counts["bound"])
    print("failed: %d" % counts["fail"])
    if crashes:
        print("of which crashes: %d" % crashes)
    print("%d passed, %d failed" % (counts["pass"] + counts["bound"],
                                    counts["fail"]))
    return 0 if counts["fail"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
