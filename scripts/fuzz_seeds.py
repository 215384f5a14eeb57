#!/usr/bin/env python3
# ===- scripts/fuzz_seeds.py - seed corpora for the fuzzers ---------------===#
# SPDX-License-Identifier: Apache-2.0
#
# Writes a seed corpus per fuzzer of scripts/fuzz.sh under OUT/<name>/:
#   npy         arrays of every dtype, rank and header version NumPy writes
#   params      parameter files in the layout of dist_rt/param_format.h
#   checkpoint  checkpoint directories packed as dist-checkpoint-fuzzer reads
#               them (16-bit length + latest, 16-bit length + state.json,
#               then the parameter's .npy)
#   cluster     every cluster file of the lit suite (split-file sections of
#               test/**/*.test, test/**/Inputs/*.yaml) and JSON forms
#   plan        plan.json files that dist-opt writes (when DIST_OPT names a
#               built dist-opt) and variants of them
#   import      the importer's textual test models and PyTorch exports
#
#   scripts/fuzz_seeds.py OUT [NAME...]
import io
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(out, name, data):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def npy_bytes(array, version=None):
    buffer = io.BytesIO()
    if version is None:
        np.save(buffer, array, allow_pickle=False)
    else:
        np.lib.format.write_array(buffer, array, version=version,
                                  allow_pickle=False)
    return buffer.getvalue()


def npy_seeds(out):
    rng = np.random.default_rng(1)
    dtypes = ["<f2", "<f4", "<f8", "i1", "<i2", "<i4", "<i8", "u1", "<u2",
              "<u4", "<u8", "?"]
    for dtype in dtypes:
        for shape in [(), (0,), (3,), (2, 3), (2, 1, 2)]:
            a = (rng.random(shape) * 10).astype(dtype)
            name = f"{dtype.strip('<')}-{'x'.join(map(str, shape)) or 'scalar'}"
            write(out, name + ".npy", npy_bytes(a))
    a = np.arange(6, dtype="<f4").reshape(2, 3)
    write(out, "v2.npy", npy_bytes(a, (2, 0)))
    write(out, "v3.npy", npy_bytes(a, (3, 0)))
    write(out, "fortran.npy", npy_bytes(np.asfortranarray(a)))
    write(out, "big-endian.npy", npy_bytes(a.astype(">f4")))
    write(out, "rank8.npy", npy_bytes(np.zeros((1,) * 8, dtype="<i4")))


def params_file(entries):
    """A parameter file (dist_rt/param_format.h) holding `entries`:
    (name, dtype code, dims, raw bytes)."""
    align = 64
    data = b""
    offsets = []
    for _, _, _, raw in entries:
        pad = (-(32 + len(data))) % align
        data += b"\0" * pad
        offsets.append(32 + len(data))
        data += raw
    index_offset = 32 + len(data)
    index = b""
    for (name, dtype, dims, raw), offset in zip(entries, offsets):
        encoded = name.encode()
        index += struct.pack("<I", len(encoded)) + encoded
        index += struct.pack("<II", dtype, len(dims))
        index += b"".join(struct.pack("<q", d) for d in dims)
        index += struct.pack("<QQ", offset, len(raw))
    size = index_offset + len(index)
    header = b"DISTPRM1" + struct.pack("<QQQ", len(entries), index_offset,
                                       size)
    return header + data + index


def params_seeds(out):
    f32 = np.arange(12, dtype="<f4")
    write(out, "empty.params", params_file([]))
    write(out, "one.params", params_file([("w", 1, [3, 4], f32.tobytes())]))
    write(out, "mixed.params", params_file([
        ("fc1.weight", 1, [2, 3], f32[:6].tobytes()),
        ("fc1.bias", 1, [3], f32[:3].tobytes()),
        ("steps", 7, [], np.int64(5).tobytes()),
        ("mask", 9, [4], bytes([1, 0, 1, 1])),
        ("half", 10, [2], np.ones(2, "<f2").tobytes()),
        ("empty", 1, [0, 5], b""),
    ]))


def checkpoint_input(latest, state, npy):
    latest, state = latest.encode(), state.encode()
    return (struct.pack("<H", len(latest)) + latest +
            struct.pack("<H", len(state)) + state + npy)


def checkpoint_seeds(out):
    state = {"step": 1, "total_steps": 10, "seed": 7, "batch_size": 4,
             "shuffle": 1, "model": "mlp"}
    w = np.arange(6, dtype="<f4").reshape(2, 3)
    text = json.dumps(state)
    write(out, "good", checkpoint_input("step-00000001\n", text, npy_bytes(w)))
    write(out, "escapes", checkpoint_input(
        "step-00000001", json.dumps(dict(state, model="m\u00e9\"\\\n")),
        npy_bytes(w)))
    write(out, "wrong-shape", checkpoint_input(
        "step-00000001\n", text, npy_bytes(np.zeros(3, "<f4"))))
    write(out, "wrong-dtype", checkpoint_input(
        "step-00000001\n", text, npy_bytes(w.astype("<f8"))))
    write(out, "other-step", checkpoint_input("step-00000002\n", text,
                                              npy_bytes(w)))
    write(out, "no-latest", b"")


SECTION = re.compile(r"^(?:#|//)--- (\S+)$")


def split_file_sections(path):
    """The split-file sections of a test file: {name: text}."""
    sections, name, lines = {}, None, []
    with open(path, errors="replace") as f:
        for line in f:
            match = SECTION.match(line.rstrip("\n"))
            if match:
                if name:
                    sections[name] = "".join(lines)
                name, lines = match.group(1), []
            elif name:
                lines.append(line)
    if name:
        sections[name] = "".join(lines)
    return sections


def test_files(suffixes):
    """(name, text) of every test input with one of `suffixes`, from
    split-file sections and Inputs directories."""
    for base, _, files in os.walk(os.path.join(ROOT, "test")):
        for file in sorted(files):
            path = os.path.join(base, file)
            if file.endswith(".test"):
                for name, text in split_file_sections(path).items():
                    if name.endswith(suffixes):
                        yield f"{file}-{name}", text
            elif file.endswith(suffixes) and "Inputs" in base:
                with open(path, errors="replace") as f:
                    yield file, f.read()


def yaml_to_json(text):
    """The JSON form of a simple cluster file (via PyYAML when present)."""
    try:
        import yaml
    except ImportError:
        return None
    try:
        return json.dumps(yaml.safe_load(text))
    except Exception:
        return None


def cluster_seeds(out):
    for name, text in test_files((".yaml", ".yml", ".json")):
        if "nodes" not in text:
            continue
        write(out, name, text)
        converted = yaml_to_json(text)
        if converted:
            write(out, name + ".as.json", converted)


def plan_seeds(out):
    dist_opt = os.environ.get("DIST_OPT", "")
    sections = split_file_sections(
        os.path.join(ROOT, "test/Transforms/plan-cli.test"))
    for name, text in test_files((".json",)):
        if '"version"' in text:
            write(out, name, text)
    if not dist_opt or not os.access(dist_opt, os.X_OK):
        print("fuzz_seeds.py: DIST_OPT is not a dist-opt binary; plan seeds "
              "come from the tests only", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("m.onnxtext", "pair.yaml"):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(sections[name])
        runs = {"infer": [], "train": ["--train", "--loss=mse"],
                "mesh": ["--train", "--loss=mse", "--mesh", "dp=2"],
                "cost": ["--objective=cost", "--min-throughput=1"]}
        for tag, extra in runs.items():
            out_dir = os.path.join(tmp, tag)
            subprocess.run([dist_opt, os.path.join(tmp, "m.onnxtext"),
                            "--emit=plan", "--cluster=" +
                            os.path.join(tmp, "pair.yaml"), "-o", out_dir] +
                           extra, check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(out_dir, "plan.json")) as f:
                plan = json.load(f)
            write(out, f"{tag}.json", json.dumps(plan, indent=1))
            # Two stages: the layers cut after the first.
            if len(plan["stages"]) == 1 and plan["layers"]:
                stage = plan["stages"][0]
                first = dict(stage, last_layer=0)
                second = dict(stage, first_layer=1)
                staged = dict(plan, stages=[first, second])
                staged["degrees"] = dict(plan["degrees"], pp=2)
                write(out, f"{tag}-2stages.json", json.dumps(staged))


def import_seeds(out):
    for base in ("test/Import/ONNX", "test/Transforms/Inputs"):
        directory = os.path.join(ROOT, base)
        for file in sorted(os.listdir(directory)):
            if file.endswith(".onnxtext"):
                with open(os.path.join(directory, file), "rb") as f:
                    write(out, file, f.read())
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts",
                                                 "export_models.py"),
                    "--out", out, "--opset", "13", "17", "--model", "mlp",
                    "dlrm", "resnet"], check=True, stdout=subprocess.DEVNULL)


SEEDERS = {"npy": npy_seeds, "params": params_seeds,
           "checkpoint": checkpoint_seeds, "cluster": cluster_seeds,
           "plan": plan_seeds, "import": import_seeds}


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: fuzz_seeds.py OUT [" + "|".join(SEEDERS) + "...]")
    out = sys.argv[1]
    names = sys.argv[2:] or list(SEEDERS)
    for name in names:
        if name not in SEEDERS:
            sys.exit(f"fuzz_seeds.py: unknown fuzzer '{name}' (expected "
                     f"{', '.join(SEEDERS)})")
        SEEDERS[name](os.path.join(out, name))


if __name__ == "__main__":
    main()
