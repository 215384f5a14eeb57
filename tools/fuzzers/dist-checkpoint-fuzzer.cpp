//===- dist-checkpoint-fuzzer.cpp - libFuzzer target for checkpoints ------===//
// SPDX-License-Identifier: Apache-2.0
//
// A checkpoint directory is what `train --resume DIR` reads: DIR/latest
// naming DIR/step-<n>/, whose state.json holds the step and run settings
// and whose <param>.npy files the parameters. Each input is cut into the
// three files (a 16-bit little-endian length before `latest` and before
// state.json, the rest is the parameter file; a file the input is too short
// for is absent) and read as a resume reads them. Every rejection must be
// one error line; an accepted parameter must hold the bytes it claims.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "train_internal.h"

#include <cerrno>
#include <string>
#include <vector>

#include <sys/stat.h>

using namespace dist_fuzz;
using namespace dist_rt::driver;

namespace {
/// Takes a length-prefixed part of the input; false when it is too short.
bool takePart(const uint8_t *&data, size_t &size, std::string &part) {
  if (size < 2)
    return false;
  size_t length = data[0] | (size_t(data[1]) << 8);
  data += 2;
  size -= 2;
  length = std::min(length, size);
  part.assign(reinterpret_cast<const char *>(data), length);
  data += length;
  size -= length;
  return true;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static TempDir root;
  const std::string &dir = root.path();
  static const std::string step = dir + "/step-00000001";
  if (::mkdir(step.c_str(), 0777) != 0 && errno != EEXIST)
    finding("mkdir", step);
  std::string latest, state;
  bool hasLatest = takePart(data, size, latest);
  bool hasState = hasLatest && takePart(data, size, state);
  ::unlink((dir + "/latest").c_str());
  ::unlink((step + "/state.json").c_str());
  ::unlink((step + "/w.npy").c_str());
  if (hasLatest)
    writeFile(dir + "/latest", latest.data(), latest.size());
  if (hasState)
    writeFile(step + "/state.json", state.data(), state.size());
  if (hasState)
    writeFile(step + "/w.npy", data, size);

  // The first checkpoint a resume tries (older ones are read alike).
  std::vector<std::string> checkpoints;
  std::string error;
  train_impl::CheckpointState parsed;
  if (!train_impl::checkpointsToResume(dir, checkpoints, error) ||
      !train_impl::readCheckpointState(checkpoints.at(0), parsed, error)) {
    checkOneLine(error);
    return 0;
  }
  const std::string &checkpoint = checkpoints[0];
  if (parsed.step < 0 || parsed.totalSteps < 0 || parsed.batchSize < 1)
    finding("accepted state out of range", state);

  // The parameter as resuming a model with one f32 [2, 3] parameter "w"
  // reads it.
  static const int64_t dims[] = {2, 3};
  dist_rt_tensor_desc_t declared{};
  declared.name = "w";
  declared.dtype = DIST_RT_DTYPE_FLOAT;
  declared.rank = 2;
  declared.dims = dims;
  NpyArrays file;
  file.arrays.assign(1, dist_rt_npy_array_t{});
  dist_rt_tensor_t tensor{};
  if (!readTensorFile("parameter", declared, checkpoint + "/w.npy",
                      file.arrays[0], tensor, error)) {
    checkOneLine(error);
    return 0;
  }
  touch(tensor.data, file.arrays[0].nbytes);
  return 0;
}
