//===- train.cpp - The train subcommand of compiled models ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements `<exe> train` (see dist_rt_main in dist_rt/model.h): reads the
// training data from .npy files, cuts it into batches (in file order or
// shuffled per epoch by a documented, library-independent algorithm), runs
// the compiled training step with the model's learning-rate schedule, logs
// per-step metrics, and saves parameters and checkpoints so that a crash
// never leaves a half-written file under its final name. A resumed run sees
// the same batches, learning rates and step numbers as an uninterrupted one.
//
//===----------------------------------------------------------------------===//

#include "driver.h"
#include "internal.h"

#include "dist_rt/kernels.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dist_rt {
namespace driver {
namespace {

using Clock = std::chrono::steady_clock;

/// The file of a checkpoint directory naming its newest checkpoint.
constexpr const char *kLatestFile = "latest";
/// The file of a checkpoint holding its step and run settings.
constexpr const char *kStateFile = "state.json";
/// Seconds between two redraws of the progress bar.
constexpr double kRedrawSeconds = 0.1;
/// Width of the progress bar in characters.
constexpr int kBarWidth = 24;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

/// The parsed command line of a training run.
struct TrainCommandLine {
  /// Per train input, the .npy file ("" until given).
  std::vector<std::string> dataFiles;
  /// 0 when not given (then the model's static batch size).
  int64_t batchSize = 0;
  /// Exactly one of steps and epochs is non-zero once parsed.
  int64_t steps = 0;
  int64_t epochs = 0;
  bool shuffle = false;
  int64_t seed = 0;
  int32_t threads = 0;
  std::string logPath;
  std::string saveParamsDir;
  std::string exportOnnxPath;
  std::string checkpointDir;
  /// 0 when not given.
  int64_t checkpointEvery = 0;
  std::string resumeDir;
  /// "" when not given (then next to the binary).
  std::string paramPath;
  bool quiet = false;
  bool help = false;
};

const char *scheduleName(uint32_t schedule) {
  switch (schedule) {
  case DIST_RT_LR_COSINE:
    return "cosine";
  case DIST_RT_LR_WARMUP_LINEAR:
    return "warmup-linear";
  default:
    return "constant";
  }
}

const char *roleName(uint8_t role) {
  switch (role) {
  case DIST_RT_PARAM_TRAINED:
    return "trained";
  case DIST_RT_PARAM_STATE:
    return "optimizer state";
  default:
    return "frozen";
  }
}

void printTrainUsage(const char *program, const dist_rt_model_desc_t &desc) {
  const dist_rt_train_desc_t &train = *desc.train;
  std::printf(
      "usage: %s train --data NAME=FILE.npy [--data ...] [--batch-size B]\n"
      "       (--steps S | --epochs E) [--shuffle] [--seed S] [--threads N]\n"
      "       [--log FILE] [--save-params DIR] [--export-onnx FILE]\n"
      "       [--checkpoint-dir DIR\n"
      "       --checkpoint-every K] [--resume DIR] [--params PATH] [--quiet]\n"
      "\n"
      "Trains the compiled model '%s' (optimizer %s, loss %s, learning rate\n"
      "%g, %s schedule, %" PRId64 " warm-up steps) on samples read from .npy\n"
      "files: one per train input, all with the same number of samples along\n"
      "the first dimension. Step i (from 0) uses batch i mod\n"
      "floor(samples / B) of epoch floor(i / floor(samples / B)); the samples\n"
      "left over at the end of an epoch are not used.\n"
      "\n"
      "options:\n"
      "  --data NAME=FILE       read train input NAME from FILE (once per\n"
      "                         train input)\n"
      "  --batch-size B         samples per step (default: the batch size the\n"
      "                         model fixed)\n"
      "  --steps S              train S steps in all (a resumed run included)\n"
      "  --epochs E             train E * floor(samples / B) steps in all\n"
      "  --shuffle              visit the samples of each epoch in a random\n"
      "                         order: std::mt19937_64 seeded with\n"
      "                         seed + epoch drives a Fisher-Yates shuffle of\n"
      "                         0..N-1 (for i from N-1 down to 1, swap i and\n"
      "                         j, where j is the first draw r >= 2^64 mod\n"
      "                         (i+1), modulo i+1); without it, batches\n"
      "                         follow file order\n"
      "  --seed S               seed of the shuffle (default 0)\n"
      "  --threads N            number of threads (default 0: all cores)\n"
      "  --log FILE             write one JSON object a step: step (from 1),\n"
      "                         loss, lr, samples_per_s (appended to when\n"
      "                         resuming)\n"
      "  --save-params DIR      after training, write every frozen and\n"
      "                         trained parameter to DIR/<name>.npy ('/'\n"
      "                         becomes '_')\n"
      "  --export-onnx FILE     after training, write the ONNX model the\n"
      "                         artifact was compiled from with the trained\n"
      "                         initializers to FILE\n"
      "  --checkpoint-dir DIR   with --checkpoint-every K: after every K\n"
      "                         steps and after the last one, save every\n"
      "                         parameter and the optimizer state in\n"
      "                         DIR/step-<n> (n zero-padded to 8 digits);\n"
      "                         DIR/latest names the newest; the two newest\n"
      "                         checkpoints are kept\n"
      "  --checkpoint-every K\n"
      "  --resume DIR           continue from the newest checkpoint in DIR\n"
      "                         (a --checkpoint-dir), or from DIR itself when\n"
      "                         it is one checkpoint (a step-<n> directory)\n"
      "  --params PATH          parameter file (default: next to the binary)\n"
      "  --quiet                no progress bar on a terminal: print a line\n"
      "                         every tenth of the run instead\n"
      "  --help                 print this text\n",
      program, desc.name, train.optimizer ? train.optimizer : "?",
      train.loss ? train.loss : "?", train.lr, scheduleName(train.lr_schedule),
      train.warmup_steps);
  std::printf("\ntrain inputs:\n");
  for (uint32_t i = 0; i < train.num_inputs; ++i) {
    const dist_rt_tensor_desc_t &input = train.inputs[i];
    std::printf("  %s: %s %s\n", input.name, dist_rt_dtype_name(input.dtype),
                formatShape(input.rank, input.dims).c_str());
  }
  std::printf("parameters:\n");
  for (uint32_t i = 0; desc.params && i < desc.num_params; ++i) {
    const dist_rt_tensor_desc_t &param = desc.params[i];
    std::printf("  %s: %s %s, %s\n", param.name ? param.name : "?",
                dist_rt_dtype_name(param.dtype),
                formatShape(param.rank, param.dims).c_str(),
                train.param_roles ? roleName(train.param_roles[i]) : "?");
  }
}

/// Parses argv[2..] (after "train") into `cl`. Returns false with `error`
/// set on a bad command line.
bool parseTrainCommandLine(int argc, char **argv,
                           const dist_rt_model_desc_t &desc,
                           TrainCommandLine &cl, std::string &error) {
  const dist_rt_train_desc_t &train = *desc.train;
  cl.dataFiles.assign(train.num_inputs, std::string());
  FileBinding data = {"--data", "train input", train.num_inputs, train.inputs};
  auto positive = [](const std::string &flag, const std::string &value,
                     int64_t &out, std::string &error) {
    if (parseInteger(value, 1, INT64_MAX, out))
      return true;
    error = flag + " expects a positive integer, got '" + value + "'";
    return false;
  };
  auto path = [](const std::string &flag, const std::string &value,
                 std::string &out, std::string &error) {
    out = value;
    if (!value.empty())
      return true;
    error = flag + ": the path is empty";
    return false;
  };
  auto handle = [&](const std::string &flag, const std::string &value,
                    std::string &error) {
    if (flag == "--help")
      cl.help = true;
    else if (flag == "--shuffle")
      cl.shuffle = true;
    else if (flag == "--quiet")
      cl.quiet = true;
    else if (flag == "--data")
      return bindFile(value, desc.name, data, cl.dataFiles, error);
    else if (flag == "--batch-size")
      return positive(flag, value, cl.batchSize, error);
    else if (flag == "--steps")
      return positive(flag, value, cl.steps, error);
    else if (flag == "--epochs")
      return positive(flag, value, cl.epochs, error);
    else if (flag == "--checkpoint-every")
      return positive(flag, value, cl.checkpointEvery, error);
    else if (flag == "--threads")
      return parseThreads(value, cl.threads, error);
    else if (flag == "--log")
      return path(flag, value, cl.logPath, error);
    else if (flag == "--save-params")
      return path(flag, value, cl.saveParamsDir, error);
    else if (flag == "--export-onnx")
      return path(flag, value, cl.exportOnnxPath, error);
    else if (flag == "--checkpoint-dir")
      return path(flag, value, cl.checkpointDir, error);
    else if (flag == "--resume")
      return path(flag, value, cl.resumeDir, error);
    else if (flag == "--params")
      return path(flag, value, cl.paramPath, error);
    else if (!parseInteger(value, 0, INT64_MAX, cl.seed)) {
      error = "--seed expects a non-negative integer, got '" + value + "'";
      return false;
    }
    return true;
  };
  if (!parseOptions(argc, argv, 2,
                    {{"--help", false},
                     {"--shuffle", false},
                     {"--quiet", false},
                     {"--data", true},
                     {"--batch-size", true},
                     {"--steps", true},
                     {"--epochs", true},
                     {"--checkpoint-every", true},
                     {"--threads", true},
                     {"--log", true},
                     {"--save-params", true},
                     {"--export-onnx", true},
                     {"--checkpoint-dir", true},
                     {"--resume", true},
                     {"--params", true},
                     {"--seed", true}},
                    "train inputs are given as --data NAME=FILE", handle,
                    error))
    return false;
  if (cl.help)
    return true;
  error = missingFile(data, cl.dataFiles);
  if (!error.empty())
    return false;
  if ((cl.steps != 0) == (cl.epochs != 0)) {
    error = cl.steps ? "--steps and --epochs cannot both be given"
                     : "the length of the run is missing: give --steps S or "
                       "--epochs E";
    return false;
  }
  if (cl.checkpointDir.empty() != (cl.checkpointEvery == 0)) {
    error = "--checkpoint-dir and --checkpoint-every go together";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

/// The training data: one array per train input, all with numSamples
/// samples along dimension 0.
struct Dataset {
  NpyArrays arrays;
  /// The arrays as tensors (bfloat16 read from uint16 files).
  std::vector<dist_rt_tensor_t> tensors;
  int64_t numSamples = 0;
  /// Bytes of one sample of each array.
  std::vector<size_t> sampleBytes;
};

/// Reads every --data file and checks it against its train input.
bool loadDataset(const dist_rt_train_desc_t &train, const TrainCommandLine &cl,
                 Dataset &data, std::string &error) {
  data.arrays.arrays.assign(train.num_inputs, dist_rt_npy_array_t{});
  data.tensors.resize(train.num_inputs);
  for (uint32_t i = 0; i < train.num_inputs; ++i) {
    const dist_rt_tensor_desc_t &declared = train.inputs[i];
    const std::string &file = cl.dataFiles[i];
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
    if (i == 0) {
      data.numSamples = samples;
    } else if (samples != data.numSamples) {
      error = cl.dataFiles[0] + " has " + std::to_string(data.numSamples) +
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

/// Picks the batch size from the command line and the model.
/// `dp` ranks share every batch: a batch dimension the model fixed is that
/// of one rank's slice.
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
  if (batchSize % dp != 0) {
    error = "--batch-size " + std::to_string(batchSize) +
            " cannot be split evenly over the " + std::to_string(dp) +
            " data-parallel ranks";
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

/// Hands out the batch of every step, or with data parallelism this rank's
/// slice of it: rows [rowOffset, rowOffset + rows) of the global batch.
/// Without shuffling, a slice is a contiguous run of samples and is used in
/// place; with shuffling, its samples are gathered into buffers allocated
/// once.
class Batcher {
public:
  Batcher(const Dataset &data, int64_t batchSize, int64_t rowOffset,
          int64_t rows, bool shuffle, uint64_t seed)
      : data(data), batchSize(batchSize), rowOffset(rowOffset), rows(rows),
        shuffle(shuffle), seed(seed) {}

  /// Allocates the buffers; false when out of memory.
  bool init() {
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

  int64_t batchesPerEpoch() const { return data.numSamples / batchSize; }

  /// Makes tensors() the batch of 0-based step `step`.
  void prepare(int64_t step) {
    int64_t epoch = step / batchesPerEpoch();
    int64_t first = (step % batchesPerEpoch()) * batchSize + rowOffset;
    for (size_t i = 0; i < batch.size() && !shuffle; ++i)
      batch[i].data = static_cast<char *>(data.tensors[i].data) +
                      static_cast<size_t>(first) * data.sampleBytes[i];
    if (!shuffle)
      return;
    if (epoch != orderEpoch) {
      shuffleSamples(seed + static_cast<uint64_t>(epoch));
      orderEpoch = epoch;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      size_t bytes = data.sampleBytes[i];
      const auto *source = static_cast<const char *>(data.tensors[i].data);
      auto *target = static_cast<char *>(batch[i].data);
      for (int64_t row = 0; row < rows; ++row)
        std::memcpy(target + static_cast<size_t>(row) * bytes,
                    source + static_cast<size_t>(order[first + row]) * bytes,
                    bytes);
    }
  }

  const std::vector<dist_rt_tensor_t> &tensors() const { return batch; }

private:
  /// Sets `order` to the Fisher-Yates shuffle of 0..N-1 for `epochSeed`.
  void shuffleSamples(uint64_t epochSeed) {
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 engine(epochSeed);
    for (size_t i = order.size(); i-- > 1;)
      std::swap(order[i], order[drawBelow(engine, i + 1)]);
  }

  const Dataset &data;
  int64_t batchSize;
  int64_t rowOffset;
  int64_t rows;
  bool shuffle;
  uint64_t seed;
  /// The sample order of epoch orderEpoch (shuffling only).
  std::vector<int64_t> order;
  int64_t orderEpoch = -1;
  /// Per input: its batch shape, its gather buffer (shuffling only) and the
  /// tensor passed to the step.
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::unique_ptr<void, FreeDeleter>> buffers;
  std::vector<dist_rt_tensor_t> batch;
};

//===----------------------------------------------------------------------===//
// Progress and metrics
//===----------------------------------------------------------------------===//

/// `value` for JSON: %.9g (enough to read a float back exactly), or NaN,
/// Infinity and -Infinity, which JSON lacks but Python's json module reads.
std::string jsonNumber(double value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return value > 0 ? "Infinity" : "-Infinity";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.9g", value);
  return buffer;
}

/// "H:MM:SS" or "M:SS".
std::string formatDuration(double seconds) {
  auto total = static_cast<int64_t>(std::max(0.0, std::round(seconds)));
  char buffer[48];
  if (total >= 3600)
    std::snprintf(buffer, sizeof(buffer), "%" PRId64 ":%02d:%02d", total / 3600,
                  static_cast<int>(total / 60 % 60),
                  static_cast<int>(total % 60));
  else
    std::snprintf(buffer, sizeof(buffer), "%d:%02d",
                  static_cast<int>(total / 60), static_cast<int>(total % 60));
  return buffer;
}

struct FileCloser {
  void operator()(FILE *file) const { std::fclose(file); }
};

/// Writes the metrics log and the progress shown on stdout: a bar redrawn
/// in place on a terminal, else a line every tenth of the run.
class Progress {
public:
  /// `print`: whether this process prints progress at all (rank 0 only).
  Progress(FILE *log, const std::string &logPath, bool bar, int64_t firstStep,
           int64_t totalSteps, int64_t batchSize, bool print)
      : log(log), logPath(logPath), bar(bar && print), print(print),
        firstStep(firstStep), totalSteps(totalSteps), batchSize(batchSize),
        lineEvery(std::max<int64_t>(1, totalSteps / 10)), start(Clock::now()) {}

  /// Records 1-based step `number`, which took `stepSeconds`.
  bool record(int64_t number, float loss, double lr, double stepSeconds,
              std::string &error) {
    auto samples = static_cast<double>(batchSize);
    if (log) {
      std::fprintf(log,
                   "{\"step\": %" PRId64 ", \"loss\": %s, \"lr\": %s, "
                   "\"samples_per_s\": %s}\n",
                   number, jsonNumber(loss).c_str(), jsonNumber(lr).c_str(),
                   jsonNumber(samples / std::max(stepSeconds, 1e-9)).c_str());
      if (std::fflush(log) != 0 || std::ferror(log)) {
        error =
            errnoMessage("cannot write the log file '" + logPath + "'", errno);
        return false;
      }
    }
    double elapsed = secondsSince(start);
    auto done = static_cast<double>(number - firstStep);
    double samplesPerS = done * samples / std::max(elapsed, 1e-9);
    if (bar) {
      if (drawn && number != totalSteps &&
          std::chrono::duration<double>(Clock::now() - lastDraw).count() <
              kRedrawSeconds)
        return true;
      int64_t filled = number * kBarWidth / std::max<int64_t>(totalSteps, 1);
      std::string cells(static_cast<size_t>(filled), '#');
      cells.resize(kBarWidth, '.');
      double eta = elapsed / done * static_cast<double>(totalSteps - number);
      std::printf("\r[%s] step %" PRId64 "/%" PRId64
                  " loss %.6g %.1f samples/s ETA %s\x1b[K",
                  cells.c_str(), number, totalSteps, loss, samplesPerS,
                  formatDuration(eta).c_str());
      std::fflush(stdout);
      drawn = true;
      lastDraw = Clock::now();
    } else if (print && (number % lineEvery == 0 || number == totalSteps)) {
      std::printf("step %" PRId64 "/%" PRId64
                  " loss=%.6g lr=%.6g samples_per_s=%.1f\n",
                  number, totalSteps, loss, lr, samplesPerS);
      std::fflush(stdout);
    }
    return true;
  }

  /// Ends the line of the progress bar, if one was drawn.
  void finish() {
    if (drawn)
      std::printf("\n");
    drawn = false;
    std::fflush(stdout);
  }

private:
  FILE *log;
  std::string logPath;
  bool bar;
  bool print;
  int64_t firstStep;
  int64_t totalSteps;
  int64_t batchSize;
  int64_t lineEvery;
  Clock::time_point start;
  Clock::time_point lastDraw;
  bool drawn = false;
};

//===----------------------------------------------------------------------===//
// Parameter files and checkpoints
//===----------------------------------------------------------------------===//

/// What state.json holds.
struct CheckpointState {
  /// Number of completed steps.
  int64_t step = 0;
  int64_t totalSteps = 0;
  int64_t seed = 0;
  int64_t batchSize = 0;
  /// 1 with --shuffle, else 0: the data order a resume must keep.
  int64_t shuffle = 0;
  std::string model;
};

/// The file name of every parameter in a save or checkpoint directory;
/// fails if two parameters would share one.
bool paramFileNames(const dist_rt_model_desc_t &desc,
                    std::vector<std::string> &names, std::string &error) {
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    names.push_back(tensorFileName(desc.params[i].name));
    for (uint32_t q = 0; q < i; ++q)
      if (names[q] == names[i]) {
        error = std::string("parameters '") + desc.params[q].name + "' and '" +
                desc.params[i].name + "' would both be saved as " + names[i];
        return false;
      }
  }
  return true;
}

} // namespace

bool WholeParams::gather(dist_rt_model_t model, bool withState,
                         std::string &error) {
  model_ = model;
  const dist_rt_model_desc_t &desc = *dist_rt_model_desc(model);
  bytes_.assign(desc.num_params, {});
  dims_.assign(desc.num_params, {});
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    if (paramShard(desc, i).axis < 0 ||
        (!withState && desc.train &&
         desc.train->param_roles[i] == DIST_RT_PARAM_STATE))
      continue;
    if (dist_rt_status_t status = gatherParam(model, i, bytes_[i])) {
      error = dist_rt_status_message(status);
      dist_rt_status_free(status);
      return false;
    }
    dims_[i] = paramFullDims(desc, i);
  }
  return true;
}

dist_rt_status_t WholeParams::get(uint32_t index, dist_rt_tensor_t &out) const {
  if (dist_rt_status_t status = dist_rt_model_param(model_, index, &out))
    return status;
  if (index < dims_.size() && !dims_[index].empty()) {
    out.dims = dims_[index].data();
    out.data = const_cast<char *>(bytes_[index].data());
  }
  return nullptr;
}

namespace {

/// Writes the parameters of `model` to `dir`, one file each: every one with
/// `withState`, else the frozen and trained ones. With `sync` each file is
/// flushed to storage.
bool writeParams(dist_rt_model_t model, const WholeParams &whole,
                 const std::vector<std::string> &names, const std::string &dir,
                 bool withState, bool sync, std::string &error) {
  const dist_rt_model_desc_t &desc = *dist_rt_model_desc(model);
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    if (!withState && desc.train->param_roles[i] == DIST_RT_PARAM_STATE)
      continue;
    dist_rt_tensor_t param;
    std::string path = dir + "/" + names[i];
    dist_rt_status_t status = whole.get(i, param);
    if (!status)
      status = writeTensorFile(path, param);
    if (status) {
      error = dist_rt_status_message(status);
      dist_rt_status_free(status);
      return false;
    }
    if (sync && !syncPath(path, error))
      return false;
  }
  return true;
}

/// Copies every parameter of `model` from its file in `dir`.
bool readParams(dist_rt_model_t model, const std::vector<std::string> &names,
                const std::string &dir, std::string &error) {
  const dist_rt_model_desc_t &desc = *dist_rt_model_desc(model);
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    dist_rt_tensor_t live;
    if (dist_rt_status_t status = dist_rt_model_param(model, i, &live)) {
      error = dist_rt_status_message(status);
      dist_rt_status_free(status);
      return false;
    }
    std::string path = dir + "/" + names[i];
    NpyArrays file;
    file.arrays.assign(1, dist_rt_npy_array_t{});
    dist_rt_tensor_t saved;
    if (!readTensorFile("parameter", desc.params[i], path, file.arrays[0],
                        saved, error))
      return false;
    // A split parameter's file holds the whole tensor (any layout can
    // resume it); this rank takes its part.
    std::vector<int64_t> whole = paramFullDims(desc, i);
    bool matches = saved.dtype == live.dtype && saved.rank == live.rank &&
                   std::equal(whole.begin(), whole.end(), saved.dims);
    if (!matches) {
      error = path + " holds " +
              describeType(saved.dtype, saved.rank, saved.dims) +
              ", parameter '" + desc.params[i].name + "' is " +
              describeType(live.dtype, live.rank, whole.data());
      return false;
    }
    if (paramShard(desc, i).axis >= 0)
      sliceParam(desc, i, saved.data, live.data);
    else
      std::memcpy(live.data, saved.data,
                  static_cast<size_t>(file.arrays[0].nbytes));
  }
  return true;
}

std::string checkpointName(int64_t step) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "step-%08" PRId64, step);
  return buffer;
}

bool isCheckpointName(const std::string &name) {
  return name.size() > 5 && name.compare(0, 5, "step-") == 0 &&
         name.find_first_not_of("0123456789", 5) == std::string::npos;
}

/// `text` as a JSON string.
std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04x",
                    static_cast<unsigned>(c));
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string stateJson(const CheckpointState &state) {
  return "{\"step\": " + std::to_string(state.step) +
         ", \"total_steps\": " + std::to_string(state.totalSteps) +
         ", \"seed\": " + std::to_string(state.seed) +
         ", \"batch_size\": " + std::to_string(state.batchSize) +
         ", \"shuffle\": " + std::to_string(state.shuffle) +
         ", \"model\": " + jsonString(state.model) + "}\n";
}

/// Reads the flat JSON object of state.json: string keys whose values are
/// strings or bare tokens (numbers, true, false, null). Other JSON is
/// rejected.
class FlatJsonReader {
public:
  explicit FlatJsonReader(const std::string &text) : text(text) {}

  struct Field {
    std::string key;
    std::string value;
    bool isString;
  };

  bool read(std::vector<Field> &fields, std::string &error) {
    skipSpace();
    if (!take('{'))
      return fail("expected '{'", error);
    skipSpace();
    bool first = true;
    while (!take('}')) {
      if (!first && !take(','))
        return fail("expected ',' or '}'", error);
      first = false;
      Field field;
      skipSpace();
      if (!readString(field.key))
        return fail("expected a string key", error);
      skipSpace();
      if (!take(':'))
        return fail("expected ':'", error);
      skipSpace();
      field.isString = pos < text.size() && text[pos] == '"';
      if (!(field.isString ? readString(field.value) : readToken(field.value)))
        return fail("expected a value", error);
      fields.push_back(field);
      skipSpace();
    }
    skipSpace();
    if (pos != text.size())
      return fail("unexpected text after the object", error);
    return true;
  }

private:
  bool fail(const char *what, std::string &error) const {
    error = std::string(what) + " at offset " + std::to_string(pos);
    return false;
  }
  void skipSpace() {
    while (pos < text.size() && std::strchr(" \t\r\n", text[pos]) &&
           text[pos] != '\0')
      ++pos;
  }
  bool take(char c) {
    if (pos >= text.size() || text[pos] != c)
      return false;
    ++pos;
    return true;
  }
  bool readToken(std::string &out) {
    size_t begin = pos;
    while (pos < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[pos])) ||
            text[pos] == '-' || text[pos] == '+' || text[pos] == '.'))
      ++pos;
    out = text.substr(begin, pos - begin);
    return !out.empty();
  }
  /// Reads a string, decoding the escapes (\uXXXX as UTF-8).
  bool readString(std::string &out) {
    if (!take('"'))
      return false;
    out.clear();
    while (pos < text.size()) {
      char c = text[pos++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= text.size())
        return false;
      char escape = text[pos++];
      const char *plain = std::strchr("\"\\/bfnrt", escape);
      if (plain && escape != '\0') {
        out += "\"\\/\b\f\n\r\t"[plain - "\"\\/bfnrt"];
        continue;
      }
      if (escape != 'u' || pos + 4 > text.size())
        return false;
      unsigned code = 0;
      for (int k = 0; k < 4; ++k) {
        char digit = text[pos++];
        if (!std::isxdigit(static_cast<unsigned char>(digit)))
          return false;
        int value =
            std::isdigit(static_cast<unsigned char>(digit))
                ? digit - '0'
                : std::tolower(static_cast<unsigned char>(digit)) - 'a' + 10;
        code = code * 16 + static_cast<unsigned>(value);
      }
      appendUtf8(out, code);
    }
    return false;
  }
  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  const std::string &text;
  size_t pos = 0;
};

/// Parses state.json.
bool parseState(const std::string &text, CheckpointState &state,
                std::string &error) {
  std::vector<FlatJsonReader::Field> fields;
  if (!FlatJsonReader(text).read(fields, error))
    return false;
  struct Integer {
    const char *key;
    int64_t min;
    int64_t *out;
  };
  for (const Integer &integer : {Integer{"step", 0, &state.step},
                                 Integer{"total_steps", 0, &state.totalSteps},
                                 Integer{"seed", 0, &state.seed},
                                 Integer{"batch_size", 1, &state.batchSize},
                                 Integer{"shuffle", 0, &state.shuffle}}) {
    auto field = std::find_if(fields.begin(), fields.end(),
                              [&](const FlatJsonReader::Field &candidate) {
                                return candidate.key == integer.key;
                              });
    if (field == fields.end() || field->isString ||
        !parseInteger(field->value, integer.min, INT64_MAX, *integer.out)) {
      error =
          std::string("\"") + integer.key +
          "\" is missing or not an integer >= " + std::to_string(integer.min);
      return false;
    }
  }
  auto model = std::find_if(
      fields.begin(), fields.end(),
      [](const FlatJsonReader::Field &field) { return field.key == "model"; });
  if (model == fields.end() || !model->isString) {
    error = "\"model\" is missing or not a string";
    return false;
  }
  state.model = model->value;
  return true;
}

/// Reads the name of the newest checkpoint in `dir` from its `latest` file.
bool readLatest(const std::string &dir, std::string &name, std::string &error) {
  std::string path = dir + "/" + kLatestFile;
  if (!readTextFile(path, name, error))
    return false;
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
    name.pop_back();
  if (!isCheckpointName(name)) {
    error = path + " does not name a checkpoint (step-<n>)";
    return false;
  }
  return true;
}

/// Finds the newest checkpoint of `dir` (named by its `latest` file), or
/// takes `dir` itself when it is one checkpoint (holds a state file, e.g.
/// DIR/step-00000020 copied elsewhere), and reads its state.
bool readCheckpointState(const std::string &dir, std::string &checkpoint,
                         CheckpointState &state, std::string &error) {
  struct stat st;
  std::string latest = dir + "/" + kLatestFile;
  if (::stat(latest.c_str(), &st) != 0 &&
      ::stat((dir + "/" + kStateFile).c_str(), &st) == 0) {
    checkpoint = dir;
  } else {
    std::string name;
    if (!readLatest(dir, name, error)) {
      error = "--resume " + dir + ": " + error;
      return false;
    }
    checkpoint = dir + "/" + name;
  }
  std::string path = checkpoint + "/" + kStateFile;
  std::string text;
  if (!readTextFile(path, text, error))
    return false;
  if (!parseState(text, state, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

/// Renames the directory `from` to `to`. An existing `to` (a checkpoint of
/// the same step left by an earlier run) is swapped out in one step where
/// the file system can, and removed.
bool moveIntoPlace(const std::string &from, const std::string &to,
                   std::string &error) {
  if (::rename(from.c_str(), to.c_str()) == 0)
    return true;
  if (errno != EEXIST && errno != ENOTEMPTY) {
    error = errnoMessage("cannot rename " + from + " to " + to, errno);
    return false;
  }
#ifdef RENAME_EXCHANGE
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(),
                  RENAME_EXCHANGE) == 0) {
    removeTree(from);
    return true;
  }
#endif
  std::string aside = from + ".old";
  if (::rename(to.c_str(), aside.c_str()) != 0) {
    error = errnoMessage("cannot move " + to + " aside", errno);
    return false;
  }
  if (::rename(from.c_str(), to.c_str()) != 0) {
    error = errnoMessage("cannot rename " + from + " to " + to, errno);
    (void)::rename(aside.c_str(), to.c_str());
    return false;
  }
  removeTree(aside);
  return true;
}

/// Saves a checkpoint of `model` in dir/step-<n>: written and flushed in a
/// temporary directory, renamed into place, then named by dir/latest.
/// Afterwards only it and the checkpoint `latest` named before remain.
bool saveCheckpoint(const std::string &dir, dist_rt_model_t model,
                    const WholeParams &whole,
                    const std::vector<std::string> &names,
                    const CheckpointState &state, std::string &error) {
  std::string name = checkpointName(state.step);
  std::string temp = dir + "/.tmp-" + name + "-" +
                     std::to_string(static_cast<long>(::getpid()));
  removeTree(temp);
  if (::mkdir(temp.c_str(), 0777) != 0) {
    error = errnoMessage("cannot create " + temp, errno);
    return false;
  }
  bool saved =
      writeParams(model, whole, names, temp, /*withState=*/true,
                  /*sync=*/true, error) &&
      writeFileAtomically(temp + "/" + kStateFile, stateJson(state), error) &&
      syncPath(temp, error) && moveIntoPlace(temp, dir + "/" + name, error) &&
      syncPath(dir, error);
  if (!saved) {
    removeTree(temp);
    return false;
  }
  std::string previous;
  std::string ignored;
  if (!readLatest(dir, previous, ignored))
    previous.clear();
  if (!writeFileAtomically(dir + "/" + kLatestFile, name + "\n", error))
    return false;
  for (const std::string &entry : listDirectory(dir))
    if (isCheckpointName(entry) && entry != name && entry != previous)
      removeTree(dir + "/" + entry);
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// The train subcommand
//===----------------------------------------------------------------------===//

int runTrain(int argc, char **argv, const dist_rt_model_desc_t &desc) {
  if (!desc.train)
    return fail(std::string("model '") + desc.name +
                "' was not compiled for training (dist-opt --train)");
  const dist_rt_train_desc_t &train = *desc.train;
  TrainCommandLine cl;
  std::string error;
  if (!parseTrainCommandLine(argc, argv, desc, cl, error))
    return fail(error);
  if (cl.help) {
    printTrainUsage(argc > 0 && argv[0] ? argv[0] : desc.name, desc);
    return 0;
  }
  std::vector<std::string> names;
  if (!paramFileNames(desc, names, error))
    return fail(error);

  dist_rt_model_options_t options;
  dist_rt_model_options_initialize(&options);
  options.param_path = cl.paramPath.empty() ? nullptr : cl.paramPath.c_str();
  options.num_threads = cl.threads;
  dist_rt_model_t rawModel = nullptr;
  if (dist_rt_status_t status =
          dist_rt_model_create(&desc, &options, &rawModel))
    return fail(status);
  ModelPtr model(rawModel);
  // Data parallelism: this rank takes its slice of every batch. Only rank 0
  // of the job logs, shows progress and writes files; the parameters are
  // the same on every rank (same start, averaged gradients).
  int64_t dp = dist_rt_mesh_axis_size("dp");
  int64_t dpRank = dist_rt_mesh_axis_coord("dp");
  bool lead = dist_rt_mesh_world_rank() == 0;
  // Split parameters (tensor parallelism, ZeRO) are gathered by every rank
  // where rank 0 saves them, so the other ranks keep these two settings.
  bool gatherAtEnd = !cl.saveParamsDir.empty() || !cl.exportOnnxPath.empty();
  int64_t gatherEvery = cl.checkpointEvery;
  if (!lead) {
    cl.quiet = true;
    cl.logPath.clear();
    cl.saveParamsDir.clear();
    cl.exportOnnxPath.clear();
    cl.checkpointDir.clear();
    cl.checkpointEvery = 0;
  }

  Dataset data;
  int64_t batchSize = 0;
  if (!loadDataset(train, cl, data, error) ||
      !chooseBatchSize(train, cl, data.numSamples, dp, batchSize, error))
    return fail(error);
  if (train.num_inputs == 0)
    data.numSamples = batchSize;
  int64_t batchesPerEpoch = data.numSamples / batchSize;
  int64_t totalSteps = cl.steps;
  if (cl.epochs &&
      __builtin_mul_overflow(cl.epochs, batchesPerEpoch, &totalSteps))
    return fail("--epochs " + std::to_string(cl.epochs) + " is too many");

  int64_t firstStep = 0;
  if (!cl.resumeDir.empty()) {
    std::string checkpoint;
    CheckpointState state;
    if (!readCheckpointState(cl.resumeDir, checkpoint, state, error))
      return fail(error);
    if (state.model != desc.name)
      return fail("checkpoint " + checkpoint + " is of model '" + state.model +
                  "', not '" + desc.name + "'");
    if (state.batchSize != batchSize)
      return fail("the batch size " + std::to_string(batchSize) +
                  " differs from the batch size " +
                  std::to_string(state.batchSize) + " of checkpoint " +
                  checkpoint);
    if (state.shuffle != (cl.shuffle ? 1 : 0))
      return fail(std::string("checkpoint ") + checkpoint + " was written " +
                  (state.shuffle ? "with" : "without") + " --shuffle; resume " +
                  (state.shuffle ? "with" : "without") +
                  " it to keep the data order");
    if (state.seed != cl.seed)
      return fail("--seed " + std::to_string(cl.seed) +
                  " differs from the seed " + std::to_string(state.seed) +
                  " of checkpoint " + checkpoint);
    if (!readParams(model.get(), names, checkpoint, error))
      return fail(error);
    firstStep = state.step;
  }

  // Catch unusable destinations before spending time on training.
  std::string onnxSource;
  if (!cl.exportOnnxPath.empty()) {
    if (!train.onnx_file) {
      return fail(std::string("--export-onnx: model '") + desc.name +
                  "' was compiled without a copy of its ONNX model");
    }
    onnxSource = train.onnx_file[0] == '/'
                     ? std::string(train.onnx_file)
                     : dist_rt::modelDirectory(&desc) + "/" + train.onnx_file;
    if (access(onnxSource.c_str(), R_OK) != 0)
      return fail(errnoMessage("--export-onnx: cannot read the model's copy '" +
                                   onnxSource + "'",
                               errno));
    size_t slash = cl.exportOnnxPath.rfind('/');
    if (slash != std::string::npos && slash > 0 &&
        !makeDirectories(cl.exportOnnxPath.substr(0, slash),
                         "the --export-onnx directory", error))
      return fail(error);
  }
  if (!cl.saveParamsDir.empty() &&
      !makeDirectories(cl.saveParamsDir, "the --save-params directory", error))
    return fail(error);
  if (!cl.checkpointDir.empty() &&
      !makeDirectories(cl.checkpointDir, "the checkpoint directory", error))
    return fail(error);
  std::unique_ptr<FILE, FileCloser> log;
  if (!cl.logPath.empty()) {
    log.reset(std::fopen(cl.logPath.c_str(), cl.resumeDir.empty() ? "w" : "a"));
    if (!log)
      return fail(
          errnoMessage("cannot open the log file '" + cl.logPath + "'", errno));
  }

  Batcher batcher(data, batchSize, dpRank * (batchSize / dp), batchSize / dp,
                  cl.shuffle, static_cast<uint64_t>(cl.seed));
  if (!batcher.init())
    return fail(std::string("out of memory allocating the batch buffers"));
  Progress progress(log.get(), cl.logPath,
                    !cl.quiet && ::isatty(::fileno(stdout)), firstStep,
                    totalSteps, batchSize, lead);
  dist_rt_mesh_get_stats(nullptr, /*reset=*/1);
  CheckpointState state = {0,         totalSteps,         cl.seed,
                           batchSize, cl.shuffle ? 1 : 0, desc.name};
  float loss = 0;
  Clock::time_point start = Clock::now();
  for (int64_t step = firstStep; step < totalSteps; ++step) {
    batcher.prepare(step);
    double lr = dist_rt_lr_at(&train, step, totalSteps);
    Clock::time_point stepStart = Clock::now();
    dist_rt_status_t status = dist_rt_model_train_step(
        model.get(), batcher.tensors().data(), batcher.tensors().size(),
        static_cast<float>(lr), step + 1, &loss);
    double stepSeconds = secondsSince(stepStart);
    bool ok =
        !status && progress.record(step + 1, loss, lr, stepSeconds, error);
    if (ok && !std::isfinite(loss)) {
      error = "the loss is " + jsonNumber(loss) + " at step " +
              std::to_string(step + 1) + "; stopping without saving";
      ok = false;
    }
    state.step = step + 1;
    if (ok && gatherEvery &&
        (state.step % gatherEvery == 0 || state.step == totalSteps)) {
      WholeParams whole;
      ok = whole.gather(model.get(), /*withState=*/true, error);
      if (ok && cl.checkpointEvery)
        ok = saveCheckpoint(cl.checkpointDir, model.get(), whole, names, state,
                            error);
    }
    if (!ok) {
      progress.finish();
      return status ? fail(status) : fail(error);
    }
  }
  progress.finish();
  double seconds = secondsSince(start);

  WholeParams whole;
  if (gatherAtEnd && !whole.gather(model.get(), /*withState=*/false, error))
    return fail(error);
  if (!cl.saveParamsDir.empty() &&
      !writeParams(model.get(), whole, names, cl.saveParamsDir,
                   /*withState=*/false, /*sync=*/false, error))
    return fail(error);
  if (!cl.exportOnnxPath.empty() &&
      !exportOnnx(model.get(), whole, onnxSource, cl.exportOnnxPath, error))
    return fail(error);
  if (!lead)
    return 0;
  if (dp > 1) {
    dist_rt_mesh_stats_t comm;
    dist_rt_mesh_get_stats(&comm, /*reset=*/0);
    double overlapped = comm.comm_seconds > comm.wait_seconds
                            ? comm.comm_seconds - comm.wait_seconds
                            : 0.0;
    std::printf("data parallel over %" PRId64 " ranks: %" PRId64
                " all-reduces (%.1f MB), %.3f s communicating, "
                "%.3f s of it overlapped with compute\n",
                dp, comm.ops, static_cast<double>(comm.bytes) / 1e6,
                comm.comm_seconds, overlapped);
  }
  if (firstStep >= totalSteps)
    std::printf("nothing to train: the checkpoint is at step %" PRId64
                " of %" PRId64 "\n",
                firstStep, totalSteps);
  else
    std::printf("trained %" PRId64 " steps in %.3f s, final loss %.6g\n",
                totalSteps - firstStep, seconds, loss);
  std::fflush(stdout);
  return 0;
}

} // namespace driver
} // namespace dist_rt
