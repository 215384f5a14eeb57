//===- train_data.cpp - Training data of the train subcommand ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Reads the training data of `<exe> train` from .npy files (one per train
// input, checked against its declaration, class labels included), picks
// the batch size, and hands out the batch of every step: in file order, or
// shuffled per epoch by a documented, library-independent algorithm (a
// Fisher-Yates shuffle driven by std::mt19937_64), and with data
// parallelism only this rank's slice of it.
//
//===----------------------------------------------------------------------===//

#include "train_internal.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace dist_rt {
namespace driver {
namespace train_impl {

bool loadDataset(const dist_rt_train_desc_t &train, const TrainCommandLine &cl,
                 Dataset &data, std::string &error) {
  data.arrays.arrays.assign(train.num_inputs, dist_rt_npy_array_t{});
  data.tensors.resize(train.num_inputs);
  bool first = true;
  for (uint32_t i = 0; i < train.num_inputs; ++i) {
    const dist_rt_tensor_desc_t &declared = train.inputs[i];
    const std::string &file = cl.dataFiles[i];
    if (file.empty()) {
      // The rows of a lookup on the parameter server: no data, the step
      // pulls them.
      data.tensors[i] = {declared.dtype, declared.rank, declared.dims, nullptr};
      data.sampleBytes.push_back(0);
      continue;
    }
    dist_rt_npy_array_t &array = data.arrays.arrays[i];
    dist_rt_tensor_t &tensor = data.tensors[i];
    if (!readTensorFile("train input", declared, file, array, tensor, error))
      return false;
    // The batch dimension of the file counts samples; the others must fit.
    bool matches =
        tensor.dtype == declared.dtype && tensor.rank == declared.rank;
    for (uint32_t d = 1; matches && d < declared.rank; ++d)
      matches = declared.dims[d] == DIST_RT_DYNAMIC_DIM ||
                declared.dims[d] == tensor.dims[d];
    if (!matches) {
      error = std::string("train input '") + declared.name + "': " + file +
              " holds " + describeType(tensor.dtype, tensor.rank, tensor.dims) +
              ", the model expects " +
              describeType(declared.dtype, declared.rank, declared.dims) +
              " (samples along the first dimension)";
      return false;
    }
    int64_t samples = tensor.dims[0];
    if (first) {
      data.numSamples = samples;
      data.firstFile = file;
      first = false;
    } else if (samples != data.numSamples) {
      error = data.firstFile + " has " + std::to_string(data.numSamples) +
              " samples but " + file + " has " + std::to_string(samples) +
              " (every --data file needs the same number of samples)";
      return false;
    }
    data.sampleBytes.push_back(
        samples ? static_cast<size_t>(array.nbytes / samples) : 0);
    // Class labels out of range fail here, naming the sample, rather than
    // at the step that first draws it.
    if (std::strcmp(declared.name, "label") == 0) {
      int64_t bad = dist_rt::firstBadLabel(train, tensor);
      if (bad >= 0) {
        int64_t perSample = 1;
        for (uint32_t d = 1; d < tensor.rank; ++d)
          perSample *= tensor.dims[d];
        error = "train input 'label': " + file + ": sample " +
                std::to_string(bad / std::max<int64_t>(perSample, 1)) +
                " holds " +
                std::to_string(static_cast<const int64_t *>(tensor.data)[bad]) +
                ", not a class in [0, " + std::to_string(train.label_classes) +
                ") nor the ignore index " +
                std::to_string(train.label_ignore_index);
        return false;
      }
    }
  }
  return true;
}

bool chooseBatchSize(const dist_rt_train_desc_t &train,
                     const TrainCommandLine &cl, int64_t numSamples, int64_t dp,
                     int64_t &batchSize, std::string &error) {
  // A step without inputs (a loss made of parameters alone) reads no data;
  // a "batch" is then just one step.
  if (train.num_inputs == 0) {
    batchSize = cl.batchSize ? cl.batchSize : 1;
    return true;
  }
  const dist_rt_tensor_desc_t &first = train.inputs[0];
  batchSize = cl.batchSize;
  if (batchSize == 0) {
    if (first.dims[0] == DIST_RT_DYNAMIC_DIM) {
      error = std::string("--batch-size is required: the batch dimension of "
                          "train input '") +
              first.name + "' is dynamic";
      return false;
    }
    batchSize = first.dims[0] * dp;
  }
  // A batch dynamic in every train input splits unevenly (the runtime
  // weights each rank's means by its rows); a fixed one, or pipeline
  // stages' micro-batches, must split evenly.
  bool dynamic = !train.pipeline;
  for (uint32_t i = 0; i < train.num_inputs; ++i)
    dynamic = dynamic && train.inputs[i].dims[0] == DIST_RT_DYNAMIC_DIM;
  if (batchSize % dp != 0 && !dynamic) {
    error = "--batch-size " + std::to_string(batchSize) +
            " cannot be split evenly over the " + std::to_string(dp) +
            " data-parallel ranks";
    return false;
  }
  if (batchSize < dp) {
    error = "--batch-size " + std::to_string(batchSize) +
            " leaves some of the " + std::to_string(dp) +
            " data-parallel ranks without a sample";
    return false;
  }
  for (uint32_t i = 0; i < train.num_inputs; ++i) {
    int64_t fixed = train.inputs[i].dims[0];
    if (fixed != DIST_RT_DYNAMIC_DIM && fixed * dp != batchSize) {
      error = "--batch-size " + std::to_string(batchSize) +
              " differs from the batch size " + std::to_string(fixed * dp) +
              " that the model fixed for train input '" + train.inputs[i].name +
              "'" +
              (dp > 1 ? " (" + std::to_string(fixed) + " per rank on " +
                            std::to_string(dp) + " data-parallel ranks)"
                      : std::string());
      return false;
    }
  }
  if (batchSize < 1) {
    error = std::string("train input '") + first.name +
            "' has a batch dimension of 0";
    return false;
  }
  if (numSamples < batchSize) {
    error = "the training data has " + std::to_string(numSamples) +
            " samples, fewer than the batch size " + std::to_string(batchSize);
    return false;
  }
  return true;
}

namespace {

/// A uniform integer in [0, bound), bound >= 1: the first draw r of
/// `engine` with r >= 2^64 mod bound, taken modulo bound (the draws kept
/// cover every residue equally often). std::uniform_int_distribution is
/// not used because each standard library picks its own algorithm.
uint64_t drawBelow(std::mt19937_64 &engine, uint64_t bound) {
  uint64_t threshold = (0 - bound) % bound;
  while (true) {
    uint64_t draw = engine();
    if (draw >= threshold)
      return draw % bound;
  }
}

} // namespace

bool Batcher::init() {
  size_t count = data.tensors.size();
  dims.resize(count);
  batch.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const dist_rt_tensor_t &tensor = data.tensors[i];
    dims[i].assign(tensor.dims, tensor.dims + tensor.rank);
    dims[i][0] = rows;
    batch[i] = {tensor.dtype, tensor.rank, dims[i].data(), nullptr};
    if (!shuffle)
      continue;
    void *buffer = nullptr;
    size_t bytes = data.sampleBytes[i] * static_cast<size_t>(rows);
    if (::posix_memalign(&buffer, 64, std::max<size_t>(bytes, 1)) != 0)
      return false;
    buffers.emplace_back(buffer);
    batch[i].data = buffer;
  }
  if (shuffle)
    order.resize(static_cast<size_t>(data.numSamples));
  return true;
}

void Batcher::prepare(int64_t step) {
  int64_t epoch = step / batchesPerEpoch();
  int64_t first = (step % batchesPerEpoch()) * batchSize + rowOffset;
  for (size_t i = 0; i < batch.size() && !shuffle; ++i)
    batch[i].data = data.tensors[i].data
                        ? static_cast<char *>(data.tensors[i].data) +
                              static_cast<size_t>(first) * data.sampleBytes[i]
                        : nullptr;
  if (!shuffle)
    return;
  if (epoch != orderEpoch) {
    shuffleSamples(seed + static_cast<uint64_t>(epoch));
    orderEpoch = epoch;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    size_t bytes = data.sampleBytes[i];
    if (bytes == 0)
      continue;
    const auto *source = static_cast<const char *>(data.tensors[i].data);
    auto *target = static_cast<char *>(batch[i].data);
    for (int64_t row = 0; row < rows; ++row)
      std::memcpy(target + static_cast<size_t>(row) * bytes,
                  source + static_cast<size_t>(order[first + row]) * bytes,
                  bytes);
  }
}

void Batcher::shuffleSamples(uint64_t epochSeed) {
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 engine(epochSeed);
  for (size_t i = order.size(); i-- > 1;)
    std::swap(order[i], order[drawBelow(engine, i + 1)]);
}

} // namespace train_impl
} // namespace driver
} // namespace dist_rt
