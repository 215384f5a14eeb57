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
// This file runs the training loop and shows its progress and per-step log;
// the command line lives in train_cli.cpp, the data and batches in
// train_data.cpp, and parameter files and checkpoints in
// train_checkpoint.cpp, sharing train_internal.h.
//
//===----------------------------------------------------------------------===//

#include "model_internal.h"
#include "train_internal.h"

#include "dist_rt/kernels.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace dist_rt {
namespace driver {

using namespace train_impl;

namespace {

using Clock = std::chrono::steady_clock;

/// Seconds between two redraws of the progress bar.
constexpr double kRedrawSeconds = 0.1;
/// Width of the progress bar in characters.
constexpr int kBarWidth = 24;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

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

/// Writes `events` as a Chrome trace (chrome://tracing, Perfetto): one
/// process per rank, steps on thread 0 and pipeline actions on thread 1.
bool writeTrace(std::unique_ptr<FILE, FileCloser> f, const std::string &path,
                const std::vector<dist_rt::model_impl::TraceEvent> &events,
                std::string &error) {
  int rank = dist_rt_mesh_world_rank();
  std::fprintf(f.get(), "{\"traceEvents\": [\n");
  for (size_t i = 0; i < events.size(); ++i) {
    const dist_rt::model_impl::TraceEvent &e = events[i];
    bool step = e.stage < 0;
    std::fprintf(
        f.get(),
        "{\"name\": \"%s%s\", \"ph\": \"X\", \"pid\": %d, "
        "\"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": "
        "{\"step\": %" PRId64 ", \"stage\": %d, "
        "\"micro_batch\": %d, \"wait_us\": %.3f, \"held_bytes\": %" PRId64
        "}}%s\n",
        e.name,
        step || e.microBatch < 0 ? "" : std::to_string(e.microBatch).c_str(),
        rank, step ? 0 : 1, e.startUs, e.durUs, e.step, e.stage, e.microBatch,
        e.waitUs, e.heldBytes, i + 1 < events.size() ? "," : "");
  }
  std::fprintf(f.get(), "]}\n");
  if (std::fflush(f.get()) != 0 || std::ferror(f.get())) {
    error = errnoMessage("--trace: cannot write '" + path + "'", errno);
    return false;
  }
  return true;
}

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
    double elapsed = secondsSince(start);
    if (log) {
      std::fprintf(log,
                   "{\"step\": %" PRId64 ", \"loss\": %s, \"lr\": %s, "
                   "\"samples_per_s\": %s, \"elapsed_s\": %s}\n",
                   number, jsonNumber(loss).c_str(), jsonNumber(lr).c_str(),
                   jsonNumber(samples / std::max(stepSeconds, 1e-9)).c_str(),
                   jsonNumber(elapsed).c_str());
      if (std::fflush(log) != 0 || std::ferror(log)) {
        error =
            errnoMessage("cannot write the log file '" + logPath + "'", errno);
        return false;
      }
    }
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

} // namespace

//===----------------------------------------------------------------------===//
// The train subcommand
//===----------------------------------------------------------------------===//

namespace {
int trainCommand(int argc, char **argv, const dist_rt_model_desc_t &desc,
                 bool &replan);
} // namespace

int runTrain(int argc, char **argv, const dist_rt_model_desc_t &desc) {
  std::string error;
  if (!launchRecordStart(error))
    return fail(error);
  bool replan = false;
  int code = trainCommand(argc, argv, desc, replan);
  launchRecordFinish(code != 0 ? "error" : replan ? "replan" : "done");
  // The ps-server ranks of the job would wait for this worker forever.
  if (code != 0 && desc.ps)
    dist_rt_world_abort(code);
  // A model without a mesh has no mesh to end MPI with; the exchange with
  // the job's servers may have started it.
  if (code == 0 && desc.ps && !dist_rt_mesh_active())
    if (dist_rt_status_t status = dist_rt_world_finalize())
      code = fail(status);
  return code;
}

namespace {

/// Writes checkpoints on a thread of its own while training goes on: the
/// step copies the values into memory (SnapshotPart::copy or
/// WholeParams::own), one write is in flight at a time, and a failed write
/// is reported at the next snapshot or at the end. A crash during a write
/// leaves the previous checkpoint (a checkpoint is written in a temporary
/// directory and renamed into place).
class SnapshotWriter {
public:
  ~SnapshotWriter() {
    if (thread_.joinable())
      thread_.join();
  }
  /// Waits for the write in flight; false with its error.
  bool wait(std::string &error) {
    if (thread_.joinable())
      thread_.join();
    if (failed_.empty())
      return true;
    error = failed_;
    failed_.clear();
    return false;
  }
  /// Whether a write is in flight (or done and not waited for).
  bool busy() const { return thread_.joinable(); }
  /// Runs `write` (the checkpoint of `step`) on the thread.
  void start(int64_t step, std::function<bool(std::string &)> write) {
    thread_ = std::thread([this, step, write = std::move(write)] {
      std::string error;
      if (!write(error))
        failed_ =
            "the checkpoint of step " + std::to_string(step) + ": " + error;
    });
  }

private:
  std::thread thread_;
  std::string failed_;
};

/// The step of the checkpoint that follows the one of `step` (every
/// `snapshotEvery` and every `checkpointEvery` steps, and the last), 0 if
/// none does.
int64_t nextCheckpointStep(int64_t step, int64_t snapshotEvery,
                           int64_t checkpointEvery, int64_t totalSteps) {
  if (step >= totalSteps)
    return 0;
  int64_t next = totalSteps;
  for (int64_t every : {snapshotEvery, checkpointEvery})
    if (every > 0)
      next = std::min(next, (step / every + 1) * every);
  return next;
}

/// Sets `value` on every rank of the job to rank 0's.
dist_rt_status_t agreeWithRankZero(int32_t &value) {
  if (dist_rt_mesh_world_size() <= 1)
    return nullptr;
  dist_rt_comm_t world = nullptr;
  dist_rt_status_t status =
      dist_rt_world_init(nullptr, nullptr, nullptr, &world);
  if (!status)
    status = dist_rt_broadcast(world, &value, 1, DIST_RT_DTYPE_INT32, 0);
  dist_rt_comm_release(world);
  return status;
}

int trainCommand(int argc, char **argv, const dist_rt_model_desc_t &desc,
                 bool &replan) {
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

  // Tables on the parameter server: found or started before the model, so
  // that a job's servers and workers split the world before the workers'
  // mesh is set up. Declared before the model, which borrows its client.
  PsSession ps;
  if (desc.ps && !ps.prepare(desc, cl, error))
    return fail(error);
  dist_rt_model_options_t options;
  dist_rt_model_options_initialize(&options);
  options.param_path = cl.paramPath.empty() ? nullptr : cl.paramPath.c_str();
  options.num_threads = cl.threads;
  options.device = cl.device;
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
  // --worker-memory: what this worker holds of the parameters (its part
  // of split ones; tables on the servers never).
  if (cl.workerMemoryMb) {
    double held = 0;
    for (uint32_t i = 0; i < desc.num_params; ++i) {
      if (train.param_roles[i] == DIST_RT_PARAM_PS)
        continue;
      const dist_rt_tensor_desc_t &p = desc.params[i];
      double n = static_cast<double>(dist_rt_dtype_size(p.dtype));
      for (uint32_t d = 0; d < p.rank; ++d)
        n *= static_cast<double>(p.dims[d]);
      held += n;
    }
    if (held > static_cast<double>(cl.workerMemoryMb) * 1048576.0) {
      char text[64];
      std::snprintf(text, sizeof text, "%.1f", held / 1048576.0);
      return fail(std::string("this worker would hold ") + text +
                  " MiB of parameters and optimizer state, more than "
                  "--worker-memory " +
                  std::to_string(cl.workerMemoryMb) +
                  " MiB: put the largest embedding tables on the parameter "
                  "server (dist-opt --ps-tables)");
    }
  }
  // --trace: every rank writes its own timeline.
  std::vector<dist_rt::model_impl::TraceEvent> trace;
  std::string tracePath = cl.tracePath;
  if (!tracePath.empty()) {
    if (dist_rt_mesh_world_size() > 1) {
      size_t dot = tracePath.rfind('.');
      size_t slash = tracePath.rfind('/');
      std::string rank = ".rank" + std::to_string(dist_rt_mesh_world_rank());
      if (dot == std::string::npos ||
          (slash != std::string::npos && dot < slash))
        tracePath += rank;
      else
        tracePath.insert(dot, rank);
    }
    model->trace = &trace;
    model->traceEpoch = std::chrono::steady_clock::now();
  }
  // Opened now, so that an unusable path fails before the training.
  std::unique_ptr<FILE, FileCloser> traceFile;
  if (!tracePath.empty()) {
    traceFile.reset(std::fopen(tracePath.c_str(), "w"));
    if (!traceFile)
      return fail(
          errnoMessage("--trace: cannot write '" + tracePath + "'", errno));
  }
  // Split parameters (tensor parallelism, ZeRO) are gathered by every rank
  // where rank 0 saves them, and every rank takes part in checkpoints, so
  // the other ranks keep these settings.
  bool gatherAtEnd = !cl.saveParamsDir.empty() || !cl.exportOnnxPath.empty();
  int64_t checkpointEvery = cl.checkpointEvery;
  int64_t snapshotEvery = cl.snapshotEvery;
  // Returns once every worker's pushes to the servers are in: workers are
  // the dp ranks, and a push returns when its servers have taken it.
  auto pushesIn = [&]() -> dist_rt_status_t {
    if (!desc.ps || dp <= 1)
      return nullptr;
    dist_rt_comm_t world = nullptr;
    dist_rt_status_t status =
        dist_rt_world_init(nullptr, nullptr, nullptr, &world);
    if (!status)
      status = dist_rt_barrier(world);
    dist_rt_comm_release(world);
    return status;
  };
  // Checkpoints of models without servers or pipeline stages are written by
  // every rank, each its part (SnapshotPart), into rank 0's temporary
  // directory; the others gather everything to rank 0 (WholeParams).
  bool byParts = !desc.ps && !train.pipeline;
  std::string partsDir = cl.checkpointDir;
  int32_t leadPid = static_cast<int32_t>(::getpid());
  if ((checkpointEvery || snapshotEvery) && byParts) {
    // Before any rank writes into one (the broadcast orders them).
    if (lead)
      removeOwnTemporaries(cl.checkpointDir);
    if (dist_rt_status_t status = agreeWithRankZero(leadPid))
      return fail(status);
  }
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
    std::vector<std::string> checkpoints;
    if (!checkpointsToResume(cl.resumeDir, checkpoints, error))
      return fail(error);
    // The servers' tables go on from the newest checkpoint (always flushed:
    // their files are whole).
    if (desc.ps)
      checkpoints.resize(1);
    std::string newestError;
    std::string skipped;
    for (size_t k = 0; k < checkpoints.size(); ++k) {
      const std::string &checkpoint = checkpoints[k];
      CheckpointState state;
      // A checkpoint whose files cannot be read (a snapshot that a crash of
      // the machine cut before it was flushed) gives way to an older one;
      // one of another run is an error.
      bool read = readCheckpointState(checkpoint, state, error);
      if (read && state.model != desc.name)
        return fail("checkpoint " + checkpoint + " is of model '" +
                    state.model + "', not '" + desc.name + "'");
      if (read && state.batchSize != batchSize)
        return fail("the batch size " + std::to_string(batchSize) +
                    " differs from the batch size " +
                    std::to_string(state.batchSize) + " of checkpoint " +
                    checkpoint);
      if (read && state.shuffle != (cl.shuffle ? 1 : 0))
        return fail(std::string("checkpoint ") + checkpoint + " was written " +
                    (state.shuffle ? "with" : "without") +
                    " --shuffle; resume " +
                    (state.shuffle ? "with" : "without") +
                    " it to keep the data order");
      if (read && state.seed != cl.seed)
        return fail("--seed " + std::to_string(cl.seed) +
                    " differs from the seed " + std::to_string(state.seed) +
                    " of checkpoint " + checkpoint);
      if (read && readParams(model.get(), names, checkpoint, error)) {
        firstStep = state.step;
        if (lead)
          std::fputs(skipped.c_str(), stderr);
        break;
      }
      if (k == 0)
        newestError = error;
      // Said once one loads; where none does, the newest's error is.
      if (k + 1 == checkpoints.size())
        return fail(newestError);
      skipped += "warning: cannot resume from " + checkpoint + " (" + error +
                 "); trying " + checkpoints[k + 1] + "\n";
    }
  }
  if (desc.ps && !ps.connect(model.get(), dpRank, dp, firstStep, error))
    return fail(error);

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
    // Appended to on a resumed run, and on any run dist-launch restarted
    // (one that failed before its first snapshot starts over).
    bool append = !cl.resumeDir.empty() || std::getenv("DIST_LAUNCH_RESTART");
    log.reset(std::fopen(cl.logPath.c_str(), append ? "a" : "w"));
    if (!log)
      return fail(
          errnoMessage("cannot open the log file '" + cl.logPath + "'", errno));
  }

  // Two batches in turn where the next step's table rows are pulled while
  // a step computes (dist_rt_model_ps_prefetch; the servers' ASYNC and
  // SSP:K >= 1 modes): the next batch must be ready before the step.
  bool prefetch = desc.ps && cl.psPrefetch;
  if (prefetch && !dist_rt_ps_client_may_run_ahead(ps.client()))
    return fail("--ps-prefetch: the parameter servers run in sync or ssp:0 "
                "mode, where a step's pull waits for the previous step's "
                "push");
  // This rank's rows of each global batch: [r * B / dp, (r + 1) * B / dp),
  // unequal when dp does not divide B.
  int64_t rowBegin = dpRank * batchSize / dp;
  int64_t rowEnd = (dpRank + 1) * batchSize / dp;
  double rowWeight = static_cast<double>(rowEnd - rowBegin) *
                     static_cast<double>(dp) / static_cast<double>(batchSize);
  dist_rt::setDataParallelRowWeight(rowWeight);
  // The rows' gradients pushed to the servers too (summed there over the
  // workers, each already divided by their number).
  model->ps.gradScale *= static_cast<float>(rowWeight);
  std::vector<std::unique_ptr<Batcher>> batchers;
  for (int i = 0; i < (prefetch ? 2 : 1); ++i) {
    batchers.emplace_back(new Batcher(data, batchSize, rowBegin,
                                      rowEnd - rowBegin, cl.shuffle,
                                      static_cast<uint64_t>(cl.seed)));
    if (!batchers.back()->init())
      return fail(std::string("out of memory allocating the batch buffers"));
  }
  if (firstStep < totalSteps)
    batchers[firstStep % batchers.size()]->prepare(firstStep);
  Progress progress(log.get(), cl.logPath,
                    !cl.quiet && ::isatty(::fileno(stdout)), firstStep,
                    totalSteps, batchSize, lead);
  dist_rt_mesh_get_stats(nullptr, /*reset=*/1);
  CheckpointState state = {0,         totalSteps,         cl.seed,
                           batchSize, cl.shuffle ? 1 : 0, desc.name};
  float loss = 0;
  SnapshotWriter snapshots;
  // Reused by every snapshot (its buffers), one write being in flight.
  auto part = std::make_shared<SnapshotPart>();
  Clock::time_point start = Clock::now();
  for (int64_t step = firstStep; step < totalSteps; ++step) {
    const Batcher &batcher = *batchers[step % batchers.size()];
    dist_rt_status_t status = nullptr;
    if (prefetch && step + 1 < totalSteps) {
      Batcher &next = *batchers[(step + 1) % batchers.size()];
      next.prepare(step + 1);
      status = dist_rt_model_ps_prefetch(model.get(), next.tensors().data(),
                                         next.tensors().size());
    }
    double lr = dist_rt_lr_at(&train, step, totalSteps);
    Clock::time_point stepStart = Clock::now();
    if (!status)
      status = dist_rt_model_train_step(
          model.get(), batcher.tensors().data(), batcher.tensors().size(),
          static_cast<float>(lr), step + 1, &loss);
    double stepSeconds = secondsSince(stepStart);
    if (!prefetch && step + 1 < totalSteps)
      batchers[0]->prepare(step + 1);
    if (model->trace) {
      dist_rt::model_impl::TraceEvent e;
      e.name = "step";
      e.step = step + 1;
      e.startUs = std::chrono::duration<double, std::micro>(stepStart -
                                                            model->traceEpoch)
                      .count();
      e.durUs = stepSeconds * 1e6;
      e.heldBytes = model->pipelineHeldBytes;
      trace.push_back(e);
    }
    // The snapshot before this step is in place before the step counts (in
    // --log, and for dist-launch): a job that dies later runs at most
    // --snapshot-every steps again. The write had a step's time.
    bool ok = !status && (!lead || !snapshots.busy() || snapshots.wait(error));
    ok = ok && progress.record(step + 1, loss, lr, stepSeconds, error);
    if (ok && !std::isfinite(loss)) {
      error = "the loss is " + jsonNumber(loss) + " at step " +
              std::to_string(step + 1) + "; stopping without saving";
      ok = false;
    }
    state.step = step + 1;
    // Checkpoints (and the last) are flushed to storage, snapshots not:
    // these survive any process's death, not the machine's.
    bool flush = state.step == totalSteps ||
                 (checkpointEvery && state.step % checkpointEvery == 0);
    if (ok && (checkpointEvery || snapshotEvery) &&
        (flush || (snapshotEvery && state.step % snapshotEvery == 0))) {
      if (byParts) {
        // Each rank copies its part now; the parts are written while the
        // next steps run.
        int64_t rank = dist_rt_mesh_world_rank();
        int64_t world = dist_rt_mesh_world_size();
        ok = snapshots.wait(error) &&
             part->copy(model.get(), rank, world, error);
        int64_t next = nextCheckpointStep(state.step, snapshotEvery,
                                          checkpointEvery, totalSteps);
        if (ok)
          snapshots.start(state.step, [&partsDir, &names, part, state, flush,
                                       next, leadPid, rank,
                                       world](std::string &e) {
            return saveCheckpointPart(partsDir, *part, names, state, flush,
                                      next, leadPid, rank, world, e);
          });
      } else {
        // A checkpoint holds every worker's push of this step, not only
        // this worker's (the servers answer reads at once).
        if (dist_rt_status_t s = pushesIn())
          return fail(s);
        auto whole = std::make_shared<WholeParams>();
        ok = whole->gather(model.get(), /*withState=*/true, error);
        // Tables on the servers are streamed at once (and flushed: the
        // servers keep theirs); pipeline stages' parameters are copied now
        // and written while the next steps run.
        if (ok && lead && desc.ps)
          ok = saveCheckpoint(cl.checkpointDir, model.get(), *whole, names,
                              state, /*flush=*/true, error);
        else if (ok && lead) {
          ok = snapshots.wait(error) && whole->own(error);
          if (ok)
            snapshots.start(state.step, [&cl, &model, &names, whole, state,
                                         flush](std::string &e) {
              return saveCheckpoint(cl.checkpointDir, model.get(), *whole,
                                    names, state, flush, e);
            });
        }
      }
      // dist-launch may ask for a new layout (ranks came back): the job
      // stops at this snapshot, every rank alike (rank 0 decides).
      if (ok && state.step < totalSteps && std::getenv("DIST_LAUNCH_DIR")) {
        int32_t stop = lead && launchReplanRequested() ? 1 : 0;
        if (dist_rt_status_t s = agreeWithRankZero(stop))
          return fail(s);
        if (stop) {
          progress.finish();
          if (!snapshots.wait(error))
            return fail(error);
          if (lead)
            std::printf("stopped after step %" PRId64
                        " for a new layout (dist-launch)\n",
                        state.step);
          replan = true;
          return 0;
        }
      }
    }
    launchRecordStep(state.step);
    if (!ok) {
      progress.finish();
      return status ? fail(status) : fail(error);
    }
  }
  progress.finish();
  // The last snapshot is on disk before the run counts as done.
  if (!snapshots.wait(error))
    return fail(error);
  double seconds = secondsSince(start);
  // Every worker's last push is in before the tables are read.
  if (dist_rt_status_t status = pushesIn())
    return fail(status);

  if (traceFile && !writeTrace(std::move(traceFile), tracePath, trace, error))
    return fail(error);
  WholeParams whole;
  // Tables on the servers are streamed by writeParams and exportOnnx.
  if (gatherAtEnd && !whole.gather(model.get(), /*withState=*/false, error))
    return fail(error);
  if (!cl.saveParamsDir.empty() &&
      !writeParams(model.get(), whole, names, cl.saveParamsDir,
                   /*withState=*/false, /*sync=*/false, error))
    return fail(error);
  if (!cl.exportOnnxPath.empty() &&
      !exportOnnx(model.get(), whole, onnxSource, cl.exportOnnxPath, error))
    return fail(error);
  // Once this worker's tables are saved: the servers end when every worker
  // has finished.
  if (desc.ps && !ps.finish(error))
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
  if (cl.workerMemoryMb) {
    struct rusage usage;
    ::getrusage(RUSAGE_SELF, &usage);
    // ru_maxrss is in KiB on Linux; a server thread of this process counts.
    double peak = static_cast<double>(usage.ru_maxrss) / 1024.0;
    std::printf("peak memory of worker 0: %.1f MiB (--worker-memory %" PRId64
                " MiB%s)\n",
                peak, cl.workerMemoryMb,
                ps.hostsServer() ? ", with a parameter server in this process"
                                 : "");
  }
  std::fflush(stdout);
  return 0;
}

} // namespace

} // namespace driver
} // namespace dist_rt
