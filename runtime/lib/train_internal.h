//===- train_internal.h - Internals of the train subcommand -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What the sources of `<exe> train` share: the parsed command line and its
// parser and help text (train_cli.cpp), the training data, the batch size
// and the batches of every step (train_data.cpp), and the parameter files
// and checkpoints that a run saves and resumes from (train_checkpoint.cpp).
// train.cpp runs the training loop and shows its progress and logs.
// Internal to the runtime library (hidden visibility); not installed.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_LIB_TRAIN_INTERNAL_H
#define DIST_RT_LIB_TRAIN_INTERNAL_H

#include "driver.h"
#include "internal.h"
#include "model_internal.h"

#include "dist_rt/ps.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace dist_rt {
namespace driver {
namespace train_impl {

//===----------------------------------------------------------------------===//
// Command line (train_cli.cpp)
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
  /// The GPU of a CUDA model (--device); -1: the runtime's default.
  int32_t device = -1;
  std::string logPath;
  /// --trace: the Chrome trace to write ("" when not given).
  std::string tracePath;
  std::string saveParamsDir;
  std::string exportOnnxPath;
  std::string checkpointDir;
  /// 0 when not given.
  int64_t checkpointEvery = 0;
  int64_t snapshotEvery = 0;
  std::string resumeDir;
  /// "" when not given (then next to the binary).
  std::string paramPath;
  bool quiet = false;
  bool help = false;
  /// Tables on the parameter server (train_ps.cpp): --ps-servers, the
  /// servers' addresses in shard order (an entry @FILE reads them from
  /// FILE; none: start them); --ps-mode (dist_rt_ps_mode_t and SSP's K);
  /// --ps-timeout in seconds.
  std::vector<std::string> psServers;
  uint32_t psMode = 0;
  uint32_t psStaleness = 0;
  double psTimeout = 60;
  /// --ps-prefetch: pull each step's rows while the previous one computes.
  bool psPrefetch = false;
  /// --worker-memory in MiB (0: no budget).
  int64_t workerMemoryMb = 0;
};

/// Prints the help text of `<program> train` for the model `desc`.
void printTrainUsage(const char *program, const dist_rt_model_desc_t &desc);

/// Parses argv[2..] (after "train") into `cl`. Returns false with `error`
/// set on a bad command line.
bool parseTrainCommandLine(int argc, char **argv,
                           const dist_rt_model_desc_t &desc,
                           TrainCommandLine &cl, std::string &error);

//===----------------------------------------------------------------------===//
// Parameter servers (train_ps.cpp)
//===----------------------------------------------------------------------===//

/// The parameter servers of a training run of a model with tables on them
/// (desc.ps). Without --ps-servers, a run alone starts a server in a
/// thread, and a job under a launcher either finds servers among its ranks
/// (`mpirun -np S <model> ps-server ... : -np W <model> train ...`), whose
/// addresses the ranks exchange over MPI before the workers' mesh is set
/// up, or has its first worker start one in a thread.
class PsSession {
public:
  PsSession() = default;
  PsSession(const PsSession &) = delete;
  PsSession &operator=(const PsSession &) = delete;
  /// Stops a server of this process that still runs.
  ~PsSession();

  /// Before the model is created: finds or starts the servers (one of
  /// this process starts with the tables of --resume's checkpoint, else of
  /// --params).
  bool prepare(const dist_rt_model_desc_t &desc, const TrainCommandLine &cl,
               std::string &error);
  /// Connects `model` as worker `worker` of `workers`, whose first step
  /// is `firstStep` (a resumed run's).
  bool connect(dist_rt_model_t model, int64_t worker, int64_t workers,
               int64_t firstStep, std::string &error);
  /// Tells the servers this worker is done and waits for a server of this
  /// process to finish.
  bool finish(std::string &error);

  dist_rt_ps_client_t client() const { return psClient; }
  /// Whether a server runs in this process.
  bool hostsServer() const { return server != nullptr; }
  /// Rows of the servers' tables, in the order of dist_rt::psTables.
  const std::vector<dist_rt_ps_table_t> &tables() const { return specs; }
  /// Parameter index of each table.
  const std::vector<uint32_t> &tableParams() const { return params; }

private:
  bool startLocal(const dist_rt_model_desc_t &desc, const TrainCommandLine &cl,
                  uint32_t workers, std::string &error);

  std::vector<uint32_t> params;
  std::vector<dist_rt_ps_table_t> specs;
  uint64_t modelId = 0;
  double timeout = 60;
  std::vector<std::string> endpoints;
  /// Workers an MPMD job has (0: not one).
  int64_t jobWorkers = 0;
  int64_t jobWorker = 0;
  std::unique_ptr<model_impl::PsInitRows> initRows;
  dist_rt_ps_server_t server = nullptr;
  std::thread serverThread;
  dist_rt_status_t serverStatus = nullptr;
  dist_rt_ps_client_t psClient = nullptr;
};

/// Parses --ps-mode's sync, async or ssp:K.
bool parsePsMode(const std::string &value, uint32_t &mode, uint32_t &staleness,
                 std::string &error);

//===----------------------------------------------------------------------===//
// Data (train_data.cpp)
//===----------------------------------------------------------------------===//

/// The training data: one array per train input, all with numSamples
/// samples along dimension 0.
struct Dataset {
  NpyArrays arrays;
  /// The arrays as tensors (bfloat16 read from uint16 files).
  std::vector<dist_rt_tensor_t> tensors;
  int64_t numSamples = 0;
  /// The first file read, for messages.
  std::string firstFile;
  /// Bytes of one sample of each array (0 for the rows of a lookup on the
  /// parameter server, which have no data).
  std::vector<size_t> sampleBytes;
};

/// Reads every --data file and checks it against its train input.
bool loadDataset(const dist_rt_train_desc_t &train, const TrainCommandLine &cl,
                 Dataset &data, std::string &error);

/// Picks the batch size from the command line and the model.
/// `dp` ranks share every batch: a batch dimension the model fixed is that
/// of one rank's slice.
bool chooseBatchSize(const dist_rt_train_desc_t &train,
                     const TrainCommandLine &cl, int64_t numSamples, int64_t dp,
                     int64_t &batchSize, std::string &error);

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
  bool init();

  int64_t batchesPerEpoch() const { return data.numSamples / batchSize; }

  /// Makes tensors() the batch of 0-based step `step`.
  void prepare(int64_t step);

  const std::vector<dist_rt_tensor_t> &tensors() const { return batch; }

private:
  /// Sets `order` to the Fisher-Yates shuffle of 0..N-1 for `epochSeed`.
  void shuffleSamples(uint64_t epochSeed);

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
// Parameter files and checkpoints (train_checkpoint.cpp)
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
                    std::vector<std::string> &names, std::string &error);

/// Writes the parameters of `model` to `dir`, one file each: every one with
/// `withState`, else the frozen and trained ones. With `sync` each file is
/// flushed to storage.
bool writeParams(dist_rt_model_t model, const WholeParams &whole,
                 const std::vector<std::string> &names, const std::string &dir,
                 bool withState, bool sync, std::string &error);

/// Copies every parameter of `model` from its file in `dir`.
bool readParams(dist_rt_model_t model, const std::vector<std::string> &names,
                const std::string &dir, std::string &error);

/// The checkpoints that --resume `dir` may continue from, in the order to
/// try them: `dir` itself when it is one checkpoint (holds a state file,
/// e.g. DIR/step-00000020 copied elsewhere); else the one its `latest` file
/// names, then its older ones, newest first (for when a crash of the
/// machine cut the files of snapshots not yet flushed).
bool checkpointsToResume(const std::string &dir,
                         std::vector<std::string> &checkpoints,
                         std::string &error);

/// Reads the state file of `checkpoint`.
bool readCheckpointState(const std::string &checkpoint, CheckpointState &state,
                         std::string &error);

/// Saves a checkpoint of `model` in dir/step-<n>: written in a temporary
/// directory, renamed into place, then named by dir/latest. With `flush`
/// it is flushed to storage before the rename (it survives a crash of the
/// machine) and named by dir/durable too; without, it survives the crash
/// of any process. Afterwards only it, the checkpoint `latest` named before
/// and the one `durable` names remain.
bool saveCheckpoint(const std::string &dir, dist_rt_model_t model,
                    const WholeParams &whole,
                    const std::vector<std::string> &names,
                    const CheckpointState &state, bool flush,
                    std::string &error);

/// What one rank writes of a snapshot, copied at the step so that training
/// goes on while it is written: its part of each split parameter (ZeRO's
/// optimizer moments, tensor-parallel weights) unless a rank of lower
/// coordinates on the other axes holds the same part, and its share of the
/// parameters that no axis splits. Every piece is written into the
/// checkpoint's file of the whole tensor at its place: no rank gathers
/// another's part, and the files are those of a gathered checkpoint (any
/// layout resumes them). Not for parameter-server tables or pipeline
/// stages (whose checkpoints gather, WholeParams).
class SnapshotPart {
public:
  /// Copies the pieces of rank `rank` of a job of `world` ranks.
  bool copy(dist_rt_model_t model, int64_t rank, int64_t world,
            std::string &error);
  /// Writes the copied values into `dir` (shared by the job's ranks).
  bool write(const std::string &dir, const std::vector<std::string> &names,
             std::string &error) const;

private:
  struct Param {
    uint32_t index;
    std::vector<char> bytes;
    /// Where `bytes` go in the whole tensor: one piece for a whole
    /// parameter, the chunks of this rank's part for a split one.
    std::vector<ParamChunk> chunks;
    /// False for a part that leaves the file's header to another rank.
    bool header;
  };
  dist_rt_model_t model_ = nullptr;
  std::vector<Param> params_;
};

/// Removes the temporary checkpoint directories in `dir` that name this
/// process's pid: left by a process of the same pid that died writing
/// them, before this one writes any.
void removeOwnTemporaries(const std::string &dir);

/// Writes this rank's part of the checkpoint of `state.step` into
/// dir/.tmp-step-<n>-<leadPid>, the temporary directory that every rank of
/// the job shares; rank 0 (`rank` 0 of `worldSize`) then waits for the
/// others' parts and puts the checkpoint into place as saveCheckpoint does.
/// A rank that fails leaves a note there, which makes rank 0 fail too.
/// With `nextStep` (the step of the job's next checkpoint, 0 if none),
/// rank 0 makes the checkpoint it would remove the temporary directory of
/// that one, whose files the ranks then overwrite in place.
bool saveCheckpointPart(const std::string &dir, const SnapshotPart &part,
                        const std::vector<std::string> &names,
                        const CheckpointState &state, bool flush,
                        int64_t nextStep, int64_t leadPid, int64_t rank,
                        int64_t worldSize, std::string &error);

} // namespace train_impl
} // namespace driver
} // namespace dist_rt

#endif // DIST_RT_LIB_TRAIN_INTERNAL_H
