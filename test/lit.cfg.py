# ===- lit.cfg.py - lit configuration for dist-opt -------------------------===#
# SPDX-License-Identifier: Apache-2.0
#
# Runs .mlir, .onnxtext and .test files with dist-opt, FileCheck and the
# project's scripts. Tools come from the build and from LLVM 22.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "dist-opt"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtext", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dist_obj_root, "test")

config.environment["FILECHECK_OPTS"] = (
    "-enable-var-scope --allow-unused-prefixes=false")
# The sanitizers' settings reach the tools under a sanitizer build
# (scripts/test-sanitize.sh).
llvm_config.with_system_environment(["HOME", "TMPDIR", "ASAN_OPTIONS",
                                     "UBSAN_OPTIONS", "LSAN_OPTIONS"])
llvm_config.use_default_substitutions()

config.substitutions.append(("%python", config.python))
# The C compiler driver that links artifacts (with a sanitizer build's flags).
config.substitutions.append(("%cc", config.cc))
config.substitutions.append(("%scripts", os.path.join(config.dist_src_root,
                                                      "scripts")))
config.substitutions.append(("%onnx_node_data",
                             "/usr/share/libonnx-testdata/data/node"))
tool_dirs = [config.dist_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["dist-opt", "FileCheck", "not",
                                    "split-file", "count"], tool_dirs)
config.substitutions.append(("%dist_tools", config.dist_tools_dir))
config.substitutions.append(("%dist_opt", os.path.join(config.dist_tools_dir, "dist-opt")))

# A sanitizer build (-DDIST_SANITIZE): `asan` where AddressSanitizer is on
# (dist-opt then instruments the code it generates).
sanitizers = [s for s in config.dist_sanitize.split(",") if s]
if "address" in sanitizers:
    config.available_features.add("asan")
config.substitutions.append(("%asan_or_plain",
                             "ASAN" if "address" in sanitizers else "PLAIN"))
# How much longer measured kernel times may be than a release build's:
# plausibility bounds on measured seconds are stretched by it.
config.substitutions.append(("%timing_slack", "20" if sanitizers else "1"))

# The host's vector units as codegen's conv=auto reads them: AVX512
# (avx512f), AVX2 (avx2 and fma) or PLAIN, for tests whose output follows
# the host (%host_simd picks their FileCheck prefix).
def host_simd():
    flags = set()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if "avx512f" in flags:
        return "AVX512"
    if "avx2" in flags and "fma" in flags:
        return "AVX2"
    return "PLAIN"
config.substitutions.append(("%host_simd", host_simd()))

# Whether oneDNN (libdnnl.so.2) loads here, as dist-opt's --conv=auto
# tries: %host_conv is NHWC then (channels-last convolutions on oneDNN),
# else NCHW.
def onednn_loads():
    import ctypes
    try:
        ctypes.CDLL("libdnnl.so.2")
        return True
    except OSError:
        return False
config.substitutions.append(("%host_conv",
                             "NHWC" if onednn_loads() else "NCHW"))

# The runtime's NCCL backend was built (nccl.h found at configure time).
if config.dist_have_nccl:
    config.available_features.add("nccl")

# The CUDA toolkit dist-opt --target=cuda finds (CUDA_HOME, else
# /usr/local/cuda): tests that compile kernels to cubins need it.
cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
if all(os.path.exists(os.path.join(cuda_home, p)) for p in
       ["bin/ptxas", "bin/fatbinary",
        "nvvm/libdevice/libdevice.10.bc"]):
    config.available_features.add("cuda-toolkit")
config.substitutions.append(("%cuda_home", cuda_home))
llvm_config.with_system_environment(["CUDA_HOME"])

# A CUDA GPU that the CUDA runtime can use (`nvidia-smi -L` lists one):
# tests of GPU code that runs, against tests of the errors without one.
import shutil
import subprocess
if shutil.which("nvidia-smi"):
    try:
        if subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, timeout=30,
                          universal_newlines=True).stdout.strip():
            config.available_features.add("cuda-gpu")
    except (OSError, subprocess.SubprocessError):
        pass
