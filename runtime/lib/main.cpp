//===- main.cpp - Command-line driver of compiled models --------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_main, the body of the main function of every
// executable that dist-compile produces: parses the command line, reads the
// inputs from .npy files, runs the model, writes every output to a .npy file
// and optionally times repeated runs. `<exe> train ...` goes to the train
// subcommand (train.cpp). Every failure is reported as exactly one
// "error: ..." line on stderr and exit code 1; nothing here calls exit(), so
// the driver can be tested in-process.
//
//===----------------------------------------------------------------------===//

#include "driver.h"
#include "internal.h"

#include "dist_rt/kernels.h"
#include "dist_rt/model.h"
#include "dist_rt/npy.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace dist_rt::driver;

namespace {

/// Warm-up runs before the timed runs of --bench.
constexpr int kWarmupRuns = 3;

/// The parsed command line of an inference run.
struct CommandLine {
  /// Per declared input, the .npy file ("" until given).
  std::vector<std::string> inputFiles;
  std::string outputDir = ".";
  int32_t threads = 0;
  /// The GPU of a CUDA model (--device); -1: the runtime's default.
  int32_t device = -1;
  /// Number of timed runs; 0 when --bench is not given.
  int64_t benchRuns = 0;
  std::string paramPath;
  bool haveParamPath = false;
  bool help = false;
};

void printUsage(const char *program, const dist_rt_model_desc_t &desc) {
  std::printf(
      "usage: %s --input NAME=FILE.npy [--input ...] [--output-dir DIR]\n"
      "       [--threads N] [--device N] [--bench N] [--params PATH] "
      "[--help]\n"
      "\n"
      "Runs the compiled model '%s' on inputs read from .npy files and\n"
      "writes each output to <output-dir>/<output name>.npy ('/' in names\n"
      "becomes '_').\n"
      "\n"
      "options:\n"
      "  --input NAME=FILE  read input NAME from FILE (required, once per "
      "input)\n"
      "  --output-dir DIR   write the outputs to DIR, created if missing "
      "(default: .)\n"
      "  --threads N        number of threads (default: 0, one per core)\n"
      "%s"
      "  --bench N          also time N runs, after %d warm-up runs, and "
      "print their median and p90 latency (default: one untimed run)\n"
      "  --params PATH      parameter file, or directory written by train "
      "--save-params or --checkpoint-dir (its newest checkpoint) or one of its "
      "checkpoints (default: %s)\n"
      "  --help             print this text and exit\n",
      program, desc.name,
      desc.device == DIST_RT_DEVICE_CUDA
          ? "  --device N         the GPU to run on (default: $DIST_RT_DEVICE, "
            "else 0)\n"
          : "",
      kWarmupRuns, defaultParamsText(desc).c_str());
  if (desc.train)
    std::printf("\nThe model can also be trained: see %s train --help.\n",
                program);
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

/// Parses argv into `cl`. Returns false with `error` set on a bad command
/// line.
bool parseCommandLine(int argc, char **argv, const dist_rt_model_desc_t &desc,
                      CommandLine &cl, std::string &error) {
  cl.inputFiles.assign(desc.num_inputs, std::string());
  FileBinding inputs = {"--input", "input", desc.num_inputs, desc.inputs,
                        desc.ps};
  auto handle = [&](const std::string &flag, const std::string &value,
                    std::string &error) {
    if (flag == "--help") {
      cl.help = true;
    } else if (flag == "--input") {
      return bindFile(value, desc.name, inputs, cl.inputFiles, error);
    } else if (flag == "--output-dir") {
      if (value.empty()) {
        error = "--output-dir: the directory name is empty";
        return false;
      }
      cl.outputDir = value;
    } else if (flag == "--threads") {
      return parseThreads(value, cl.threads, error);
    } else if (flag == "--device") {
      return parseDevice(desc, value, cl.device, error);
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
    return true;
  };
  return parseOptions(argc, argv, 1,
                      {{"--help", false},
                       {"--input", true},
                       {"--output-dir", true},
                       {"--threads", true},
                       {"--device", true},
                       {"--bench", true},
                       {"--params", true}},
                      "inputs are given as --input NAME=FILE", handle, error);
}

int runMain(int argc, char **argv, const dist_rt_model_desc_t *desc) {
  // Checked here because the command line is parsed against the inputs;
  // dist_rt_model_create checks the rest.
  std::string error = checkDriverDesc(desc);
  if (!error.empty())
    return fail(error);
  // An elastic set: the executable of the job's world size runs.
  if (desc->elastic && !switchLayout(argv, *desc, error))
    return fail(error);
  if (argc > 1 && argv[1] && std::strcmp(argv[1], "train") == 0)
    return runTrain(argc, argv, *desc);
  if (argc > 1 && argv[1] && std::strcmp(argv[1], "ps-server") == 0)
    return runPsServer(argc, argv, *desc);

  CommandLine cl;
  if (!parseCommandLine(argc, argv, *desc, cl, error))
    return fail(error);
  if (cl.help) {
    printUsage(argc > 0 && argv[0] ? argv[0] : desc->name, *desc);
    return 0;
  }
  error = missingFile(
      {"--input", "input", desc->num_inputs, desc->inputs, desc->ps},
      cl.inputFiles);
  if (!error.empty())
    return fail(error);

  // Two outputs must not end up in the same file.
  std::vector<std::string> outputPaths;
  for (uint32_t o = 0; o < desc->num_outputs; ++o) {
    std::string path = tensorFilePath(cl.outputDir, desc->outputs[o].name);
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
  options.device = cl.device;
  dist_rt_model_t rawModel = nullptr;
  if (dist_rt_status_t status = dist_rt_model_create(desc, &options, &rawModel))
    return fail(status);
  ModelPtr model(rawModel);

  NpyArrays inputs;
  inputs.arrays.assign(desc->num_inputs, dist_rt_npy_array_t{});
  std::vector<dist_rt_tensor_t> tensors(desc->num_inputs);
  for (uint32_t i = 0; i < desc->num_inputs; ++i) {
    const dist_rt_tensor_desc_t &input = desc->inputs[i];
    // Rows of lookups on the parameter server: the run fills them in.
    if (isPsRows(desc->ps, input.name)) {
      tensors[i] = {input.dtype, input.rank, input.dims, nullptr};
      continue;
    }
    if (!readTensorFile("input", input, cl.inputFiles[i], inputs.arrays[i],
                        tensors[i], error))
      return fail(error);
  }

  const dist_rt_tensor_t *outputs = nullptr;
  if (dist_rt_status_t status = dist_rt_model_run(model.get(), tensors.data(),
                                                  tensors.size(), &outputs))
    return fail(status);

  // Under a mesh every rank computes the same outputs; rank 0 writes them.
  bool lead = dist_rt_mesh_world_rank() == 0;
  if (lead && desc->num_outputs != 0 &&
      !makeDirectories(cl.outputDir, "the output directory", error))
    return fail(error);
  for (uint32_t o = 0; lead && o < desc->num_outputs; ++o)
    if (dist_rt_status_t status = writeTensorFile(outputPaths[o], outputs[o]))
      return fail(status);

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
  // Microsecond kernels (the calibration probes) need more than three
  // decimals: 0.0004 ms must not print as 0.
  if (lead)
    std::printf("latency_ms_median=%.6f latency_ms_p90=%.6f\n", median, p90);
  std::fflush(stdout);
  return 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" int dist_rt_main(int argc, char **argv,
                            const dist_rt_model_desc_t *desc) {
  // With a mesh, every rank ends together: a failing rank ends the job
  // (dist_rt_mesh_finish), the others meet at a barrier and finalize MPI.
#if DIST_RT_HAS_EXCEPTIONS
  int code = 1;
  try {
    code = runMain(argc, argv, desc);
  } catch (const std::bad_alloc &) {
    code = fail(std::string("out of memory"));
  } catch (const std::exception &exception) {
    code = fail(std::string("internal error: ") + exception.what());
  } catch (...) {
    code = fail(std::string("internal error: unexpected exception"));
  }
  return dist_rt_mesh_finish(code);
#else
  return dist_rt_mesh_finish(runMain(argc, argv, desc));
#endif
}
