//===- main.cpp - Command-line driver of compiled models --------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_main, the body of the main function of every
// executable that dist-compile produces: parses the command line, reads the
// inputs from .npy files, runs the model, writes every output to a .npy file
// and optionally times repeated runs. Every failure is reported as exactly
// one "error: ..." line on stderr and exit code 1; nothing here calls exit(),
// so the driver can be tested in-process.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "dist_rt/model.h"
#include "dist_rt/npy.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/types.h>

namespace {

/// Warm-up runs before the timed runs of --bench.
constexpr int kWarmupRuns = 3;

/// Prints "error: <message>" on stderr and returns the exit code 1. Line
/// breaks (say, from an argument) become spaces so the error stays on one
/// line.
int fail(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  std::replace(message.begin(), message.end(), '\r', ' ');
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::fflush(stderr);
  return 1;
}

/// fail() with the message of `status`, which is freed.
int fail(dist_rt_status_t status) {
  int code = fail(std::string(dist_rt_status_message(status)));
  dist_rt_status_free(status);
  return code;
}

/// The parsed command line.
struct CommandLine {
  /// Per declared input, the .npy file ("" until given).
  std::vector<std::string> inputFiles;
  std::string outputDir = ".";
  int32_t threads = 0;
  /// Number of timed runs; 0 when --bench is not given.
  int64_t benchRuns = 0;
  std::string paramPath;
  bool haveParamPath = false;
  bool help = false;
};

void printUsage(const char *program, const dist_rt_model_desc_t &desc) {
  std::printf(
      "usage: %s --input NAME=FILE.npy [--input ...] [--output-dir DIR]\n"
      "       [--threads N] [--bench N] [--params PATH] [--help]\n"
      "\n"
      "Runs the compiled model '%s' on inputs read from .npy files and\n"
      "writes each output to <output-dir>/<output name>.npy ('/' in names\n"
      "becomes '_').\n"
      "\n"
      "options:\n"
      "  --input NAME=FILE  read input NAME from FILE (once per input)\n"
      "  --output-dir DIR   where to write the outputs (default: ., created\n"
      "                     if missing)\n"
      "  --threads N        number of threads (default 0: all cores)\n"
      "  --bench N          after the first run, time N runs (after %d\n"
      "                     warm-up runs) and print\n"
      "                     latency_ms_median=<x> latency_ms_p90=<y>\n"
      "  --params PATH      parameter file (default: next to the binary)\n"
      "  --help             print this text\n",
      program, desc.name, kWarmupRuns);
  std::printf("\ninputs:\n");
  for (uint32_t i = 0; i < desc.num_inputs; ++i) {
    const dist_rt_tensor_desc_t &input = desc.inputs[i];
    std::printf("  %s: %s %s\n", input.name, dist_rt_dtype_name(input.dtype),
                dist_rt::formatShape(input.rank, input.dims).c_str());
  }
  std::printf("outputs:\n");
  for (uint32_t i = 0; i < desc.num_outputs; ++i) {
    const dist_rt_tensor_desc_t &output = desc.outputs[i];
    std::printf("  %s: %s %s\n", output.name, dist_rt_dtype_name(output.dtype),
                dist_rt::formatShape(output.rank, output.dims).c_str());
  }
}

/// Parses a decimal integer in [min, max]; the whole text must be used.
bool parseInteger(const std::string &text, int64_t min, int64_t max,
                  int64_t &out) {
  if (text.empty() || text[0] == ' ' || text[0] == '\t')
    return false;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value < min || value > max)
    return false;
  out = value;
  return true;
}

/// Handles the value of one --input option.
bool parseInputOption(const std::string &value,
                      const dist_rt_model_desc_t &desc, CommandLine &cl,
                      std::string &error) {
  // Match declared names first so that names containing '=' work.
  int64_t match = -1;
  size_t matchLength = 0;
  for (uint32_t i = 0; i < desc.num_inputs; ++i) {
    size_t length = std::strlen(desc.inputs[i].name);
    if (value.size() > length && value[length] == '=' &&
        value.compare(0, length, desc.inputs[i].name) == 0 &&
        (match < 0 || length > matchLength)) {
      match = i;
      matchLength = length;
    }
  }
  if (match < 0) {
    size_t equals = value.find('=');
    if (equals == std::string::npos) {
      error = "--input expects NAME=FILE, got '" + value + "'";
      return false;
    }
    std::string known;
    for (uint32_t i = 0; i < desc.num_inputs; ++i)
      known += std::string(i ? ", " : "") + "'" + desc.inputs[i].name + "'";
    error = "unknown input '" + value.substr(0, equals) + "' (model '" +
            desc.name + "' has " +
            (desc.num_inputs ? "inputs " + known : std::string("no inputs")) +
            ")";
    return false;
  }
  const char *name = desc.inputs[match].name;
  std::string file = value.substr(matchLength + 1);
  if (file.empty()) {
    error = std::string("--input ") + name + "=: the file name is empty";
    return false;
  }
  if (!cl.inputFiles[match].empty()) {
    error = std::string("input '") + name + "' is given more than once";
    return false;
  }
  cl.inputFiles[match] = file;
  return true;
}

/// Parses argv into `cl`. Returns false with `error` set on a bad command
/// line.
bool parseCommandLine(int argc, char **argv, const dist_rt_model_desc_t &desc,
                      CommandLine &cl, std::string &error) {
  cl.inputFiles.assign(desc.num_inputs, std::string());
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i] ? argv[i] : "";
    if (arg == "--help" || arg == "-h") {
      cl.help = true;
      continue;
    }
    if (arg.compare(0, 2, "--") != 0) {
      error = "unexpected argument '" + arg +
              "' (inputs are given as --input NAME=FILE; see --help)";
      return false;
    }
    std::string flag = arg;
    std::string value;
    bool inlineValue = false;
    size_t equals = arg.find('=');
    if (equals != std::string::npos) {
      flag = arg.substr(0, equals);
      value = arg.substr(equals + 1);
      inlineValue = true;
    }
    bool known = flag == "--input" || flag == "--output-dir" ||
                 flag == "--threads" || flag == "--bench" || flag == "--params";
    if (!known) {
      error = "unknown option '" + flag + "' (see --help)";
      return false;
    }
    if (!inlineValue) {
      if (i + 1 >= argc || !argv[i + 1]) {
        error = "option '" + flag + "' needs a value";
        return false;
      }
      value = argv[++i];
    }

    if (flag == "--input") {
      if (!parseInputOption(value, desc, cl, error))
        return false;
    } else if (flag == "--output-dir") {
      if (value.empty()) {
        error = "--output-dir: the directory name is empty";
        return false;
      }
      cl.outputDir = value;
    } else if (flag == "--threads") {
      int64_t threads = 0;
      if (!parseInteger(value, 0, 65536, threads)) {
        error =
            "--threads expects an integer in [0, 65536], got '" + value + "'";
        return false;
      }
      cl.threads = static_cast<int32_t>(threads);
    } else if (flag == "--bench") {
      if (!parseInteger(value, 1, INT32_MAX, cl.benchRuns)) {
        error = "--bench expects a positive integer, got '" + value + "'";
        return false;
      }
    } else {
      if (value.empty()) {
        error = "--params: the path is empty";
        return false;
      }
      cl.paramPath = value;
      cl.haveParamPath = true;
    }
  }
  return true;
}

/// Creates `path` and its missing parents, like mkdir -p.
bool makeDirectories(const std::string &path, std::string &error) {
  for (size_t end = 1; end <= path.size(); ++end) {
    if (end != path.size() && path[end] != '/')
      continue;
    std::string prefix = path.substr(0, end);
    struct stat st;
    if (::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      continue;
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      char errorText[128];
      error = "cannot create the output directory '" + path + "': " +
              dist_rt::describeErrno(errno, errorText, sizeof(errorText));
      return false;
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = "the output directory '" + path + "' is not a directory";
    return false;
  }
  return true;
}

/// The file an output is written to.
std::string outputPath(const std::string &dir, const char *name) {
  std::string file = name;
  std::replace(file.begin(), file.end(), '/', '_');
  return dir + "/" + file + ".npy";
}

struct ModelDeleter {
  void operator()(dist_rt_model *model) const { dist_rt_model_destroy(model); }
};

/// Owns the arrays read from the input files.
struct InputArrays {
  std::vector<dist_rt_npy_array_t> arrays;
  ~InputArrays() {
    for (dist_rt_npy_array_t &array : arrays)
      dist_rt_npy_free(&array);
  }
};

int runMain(int argc, char **argv, const dist_rt_model_desc_t *desc) {
  if (!desc)
    return fail(std::string("dist_rt_main: the model descriptor is NULL"));
  // Checked here because the command line is parsed against the inputs;
  // dist_rt_model_create checks the rest.
  if (desc->abi_version != DIST_RT_MODEL_ABI_VERSION || !desc->name ||
      (desc->num_inputs && !desc->inputs) ||
      (desc->num_outputs && !desc->outputs)) {
    dist_rt_model_t model = nullptr;
    dist_rt_status_t status = dist_rt_model_create(desc, nullptr, &model);
    dist_rt_model_destroy(model);
    if (status)
      return fail(status);
    return fail(std::string("dist_rt_main: invalid model descriptor"));
  }
  for (uint32_t i = 0; i < desc->num_inputs; ++i)
    if (!desc->inputs[i].name)
      return fail("model '" + std::string(desc->name) + "': input " +
                  std::to_string(i) + " has no name");
  for (uint32_t i = 0; i < desc->num_outputs; ++i)
    if (!desc->outputs[i].name)
      return fail("model '" + std::string(desc->name) + "': output " +
                  std::to_string(i) + " has no name");

  CommandLine cl;
  std::string error;
  if (!parseCommandLine(argc, argv, *desc, cl, error))
    return fail(error);
  if (cl.help) {
    printUsage(argc > 0 && argv[0] ? argv[0] : desc->name, *desc);
    return 0;
  }
  for (uint32_t i = 0; i < desc->num_inputs; ++i)
    if (cl.inputFiles[i].empty())
      return fail(
          std::string("missing --input ") + desc->inputs[i].name +
          "=FILE.npy (input '" + desc->inputs[i].name + "' is " +
          dist_rt_dtype_name(desc->inputs[i].dtype) + " " +
          dist_rt::formatShape(desc->inputs[i].rank, desc->inputs[i].dims) +
          ")");

  // Two outputs must not end up in the same file.
  std::vector<std::string> outputPaths;
  for (uint32_t o = 0; o < desc->num_outputs; ++o) {
    std::string path = outputPath(cl.outputDir, desc->outputs[o].name);
    for (uint32_t q = 0; q < o; ++q)
      if (outputPaths[q] == path)
        return fail(std::string("outputs '") + desc->outputs[q].name +
                    "' and '" + desc->outputs[o].name +
                    "' would both be written to " + path);
    outputPaths.push_back(path);
  }

  dist_rt_model_options_t options;
  dist_rt_model_options_initialize(&options);
  options.param_path = cl.haveParamPath ? cl.paramPath.c_str() : nullptr;
  options.num_threads = cl.threads;
  dist_rt_model_t rawModel = nullptr;
  if (dist_rt_status_t status = dist_rt_model_create(desc, &options, &rawModel))
    return fail(status);
  std::unique_ptr<dist_rt_model, ModelDeleter> model(rawModel);

  InputArrays inputs;
  inputs.arrays.assign(desc->num_inputs, dist_rt_npy_array_t{});
  std::vector<dist_rt_tensor_t> tensors(desc->num_inputs);
  for (uint32_t i = 0; i < desc->num_inputs; ++i) {
    dist_rt_npy_array_t &array = inputs.arrays[i];
    if (dist_rt_status_t status =
            dist_rt_npy_read(cl.inputFiles[i].c_str(), &array)) {
      std::string message = std::string("input '") + desc->inputs[i].name +
                            "': " + dist_rt_status_message(status);
      dist_rt_status_free(status);
      return fail(message);
    }
    // .npy has no bfloat16: bfloat16 inputs are read from uint16 files
    // holding the bit patterns (the convention ONNX's test data uses).
    uint32_t dtype = array.dtype;
    if (desc->inputs[i].dtype == DIST_RT_DTYPE_BFLOAT16 &&
        dtype == DIST_RT_DTYPE_UINT16)
      dtype = DIST_RT_DTYPE_BFLOAT16;
    tensors[i] = {dtype, array.rank, array.dims, array.data};
  }

  const dist_rt_tensor_t *outputs = nullptr;
  if (dist_rt_status_t status = dist_rt_model_run(model.get(), tensors.data(),
                                                  tensors.size(), &outputs))
    return fail(status);

  if (desc->num_outputs != 0 && !makeDirectories(cl.outputDir, error))
    return fail(error);
  for (uint32_t o = 0; o < desc->num_outputs; ++o) {
    const dist_rt_tensor_t &output = outputs[o];
    // bfloat16 outputs are written as their uint16 bit patterns.
    uint32_t dtype = output.dtype == DIST_RT_DTYPE_BFLOAT16
                         ? DIST_RT_DTYPE_UINT16
                         : output.dtype;
    if (dist_rt_status_t status =
            dist_rt_npy_write(outputPaths[o].c_str(), dtype, output.rank,
                              output.dims, output.data))
      return fail(status);
  }

  if (cl.benchRuns == 0)
    return 0;
  for (int i = 0; i < kWarmupRuns; ++i)
    if (dist_rt_status_t status = dist_rt_model_run(model.get(), tensors.data(),
                                                    tensors.size(), &outputs))
      return fail(status);
  std::vector<double> latenciesMs;
  latenciesMs.reserve(static_cast<size_t>(cl.benchRuns));
  for (int64_t i = 0; i < cl.benchRuns; ++i) {
    auto start = std::chrono::steady_clock::now();
    dist_rt_status_t status = dist_rt_model_run(model.get(), tensors.data(),
                                                tensors.size(), &outputs);
    auto stop = std::chrono::steady_clock::now();
    if (status)
      return fail(status);
    latenciesMs.push_back(
        std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(latenciesMs.begin(), latenciesMs.end());
  size_t count = latenciesMs.size();
  double median =
      count % 2 ? latenciesMs[count / 2]
                : (latenciesMs[count / 2 - 1] + latenciesMs[count / 2]) / 2;
  // Nearest-rank percentile.
  auto p90Rank =
      static_cast<size_t>(std::ceil(0.9 * static_cast<double>(count)));
  double p90 = latenciesMs[std::max<size_t>(p90Rank, 1) - 1];
  std::printf("latency_ms_median=%.3f latency_ms_p90=%.3f\n", median, p90);
  std::fflush(stdout);
  return 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" int dist_rt_main(int argc, char **argv,
                            const dist_rt_model_desc_t *desc) {
#if DIST_RT_HAS_EXCEPTIONS
  try {
    return runMain(argc, argv, desc);
  } catch (const std::bad_alloc &) {
    return fail(std::string("out of memory"));
  } catch (const std::exception &exception) {
    return fail(std::string("internal error: ") + exception.what());
  } catch (...) {
    return fail(std::string("internal error: unexpected exception"));
  }
#else
  return runMain(argc, argv, desc);
#endif
}
