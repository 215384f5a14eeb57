//===- driver.h - Helpers of the compiled models' command line --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Declarations shared by the two subcommands of dist_rt_main: inference
// (main.cpp) and `train` (train.cpp). They cover error reporting, option
// parsing, binding NAME=FILE arguments to declared tensors, reading and
// writing .npy files for declared tensors, files and directories that must
// never be seen half-written, and the layout of checkpoint directories
// (which model_params.cpp reads too, for a --params directory). Internal to
// the runtime library; nothing here calls exit().
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_LIB_DRIVER_H
#define DIST_RT_LIB_DRIVER_H

#include "dist_rt/model.h"
#include "dist_rt/npy.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dist_rt {
namespace driver {

//===----------------------------------------------------------------------===//
// Errors and options
//===----------------------------------------------------------------------===//

/// Prints "error: <message>" on stderr and returns the exit code 1. Line
/// breaks (say, from an argument) become spaces so the error stays on one
/// line.
int fail(std::string message);

/// fail() with the message of `status`, which is freed.
int fail(dist_rt_status_t status);

/// "<what>: <description of errno value errnum>".
std::string errnoMessage(const std::string &what, int errnum);

/// Parses a decimal integer in [min, max]; the whole text must be used.
bool parseInteger(const std::string &text, int64_t min, int64_t max,
                  int64_t &out);

/// The default of --params in the help texts: the parameter file next to
/// the binary ("m.params next to the binary").
std::string defaultParamsText(const dist_rt_model_desc_t &desc);

/// Parses the value of --threads (an integer in [0, 65536]).
bool parseThreads(const std::string &value, int32_t &out, std::string &error);

/// Parses the value of --device (a GPU number in [0, 1024]) for model
/// `desc`, which must be a CUDA model.
bool parseDevice(const dist_rt_model_desc_t &desc, const std::string &value,
                 int32_t &out, std::string &error);

/// One option of a subcommand.
struct OptionSpec {
  const char *flag;
  bool takesValue;
};

/// Called with each option and its value ("" for an option without one);
/// returns false with `error` set to stop parsing.
using OptionHandler = std::function<bool(
    const std::string &flag, const std::string &value, std::string &error)>;

/// Walks argv[first, argc). Every argument must be an option of `specs`:
/// "--flag VALUE" or "--flag=VALUE" when it takes a value, "--flag" alone
/// otherwise; "-h" stands for "--help". `positionalHint` ends the message
/// for an argument that is not an option ("inputs are given as --input
/// NAME=FILE").
bool parseOptions(int argc, char **argv, int first,
                  const std::vector<OptionSpec> &specs,
                  const char *positionalHint, const OptionHandler &handle,
                  std::string &error);

//===----------------------------------------------------------------------===//
// Tensors read from and written to .npy files
//===----------------------------------------------------------------------===//

/// Declared tensors that an option binds to files: the model's inputs for
/// --input, the training step's inputs for --data.
struct FileBinding {
  /// The option, "--input".
  const char *option;
  /// What the tensors are called in messages, "input".
  const char *kind;
  uint32_t count;
  const dist_rt_tensor_desc_t *tensors;
  /// The model's tables on the parameter server, whose lookups' rows are
  /// inputs that no file gives (the runtime pulls them); may be NULL.
  const dist_rt_ps_desc_t *ps = nullptr;
};

/// Whether `name` is the rows input of a lookup of `ps` (may be NULL).
bool isPsRows(const dist_rt_ps_desc_t *ps, const char *name);

/// Handles the value "NAME=FILE" of one `binding.option`: stores FILE in
/// files[index of NAME] (`files` has binding.count entries, "" until
/// given). Declared names are matched first, so names holding '=' work.
/// Unknown names, empty files and names given twice are errors.
bool bindFile(const std::string &value, const char *modelName,
              const FileBinding &binding, std::vector<std::string> &files,
              std::string &error);

/// Returns "" when every tensor of `binding` has a file, else the error
/// naming the first one without.
std::string missingFile(const FileBinding &binding,
                        const std::vector<std::string> &files);

/// Owns arrays read from .npy files.
struct NpyArrays {
  std::vector<dist_rt_npy_array_t> arrays;
  NpyArrays() = default;
  NpyArrays(const NpyArrays &) = delete;
  NpyArrays &operator=(const NpyArrays &) = delete;
  ~NpyArrays();
};

/// Reads `path` for the declared tensor `declared` (a `kind`, "input") into
/// `array` and describes it in `tensor`. .npy has no bfloat16: a bfloat16
/// tensor is read from a uint16 file of bit patterns (the convention of
/// ONNX's test data). Only the file is checked here, not its shape.
bool readTensorFile(const char *kind, const dist_rt_tensor_desc_t &declared,
                    const std::string &path, dist_rt_npy_array_t &array,
                    dist_rt_tensor_t &tensor, std::string &error);

/// Writes `tensor` to `path` through a temporary file (see
/// dist_rt_npy_write); bfloat16 is written as its uint16 bit patterns.
dist_rt_status_t writeTensorFile(const std::string &path,
                                 const dist_rt_tensor_t &tensor);

/// The file name of tensor `name`: <name>.npy with '/' in the name
/// replaced by '_'.
std::string tensorFileName(const char *name);

/// <dir>/<tensorFileName(name)>.
std::string tensorFilePath(const std::string &dir, const char *name);

//===----------------------------------------------------------------------===//
// Files and directories
//===----------------------------------------------------------------------===//

/// Creates `path` and its missing parents, like mkdir -p. `what` names the
/// directory in messages ("the output directory").
bool makeDirectories(const std::string &path, const char *what,
                     std::string &error);

/// Removes `path` and, if it is a directory, everything below it (links
/// are removed, not followed). Returns false if anything is left.
bool removeTree(const std::string &path);

/// The names in directory `path` (without "." and ".."); empty if it
/// cannot be read.
std::vector<std::string> listDirectory(const std::string &path);

/// Flushes the file or directory `path` to stable storage.
bool syncPath(const std::string &path, std::string &error);
/// Flushes everything written to the file system that holds `path`
/// (syncfs: one flush for many files).
bool syncFileSystem(const std::string &path, std::string &error);

/// Replaces `path` with a file holding `text`: writes a temporary file in
/// the same directory, flushes it to storage, renames it onto `path` and
/// flushes the directory, so that `path` is either the old or the whole new
/// file after a crash. Without `flush`, only after a process's crash.
bool writeFileAtomically(const std::string &path, const std::string &text,
                         std::string &error, bool flush = true);

/// Reads the whole (small) text file `path`.
bool readTextFile(const std::string &path, std::string &text,
                  std::string &error);

/// Reads the whole file `path` (any bytes), failing beyond `maxBytes`.
bool readWholeFile(const std::string &path, size_t maxBytes, std::string &text,
                   std::string &error);

//===----------------------------------------------------------------------===//
// Checkpoint directories
//===----------------------------------------------------------------------===//

/// The file of a checkpoint directory naming its newest checkpoint.
constexpr const char *kLatestFile = "latest";
/// The file of a checkpoint holding its step and run settings.
constexpr const char *kStateFile = "state.json";

/// True for the name of one checkpoint in a checkpoint directory:
/// step-<completed steps>.
bool isCheckpointName(const std::string &name);

/// The file of a checkpoint directory naming its newest checkpoint that was
/// flushed to storage.
constexpr const char *kDurableFile = "durable";

/// Reads the name of the newest checkpoint in `dir` from its `latest` file.
bool readLatest(const std::string &dir, std::string &name, std::string &error);
/// Reads the checkpoint name that dir/`file` holds.
bool readNamedCheckpoint(const std::string &dir, const char *file,
                         std::string &name, std::string &error);

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

/// The whole values of a model's parameters. Parameters that tensor
/// parallelism split are gathered from every rank by `gather`, which is
/// collective over their mesh axes: every rank of the job calls it at the
/// same point. The others are the model's own buffers.
class WholeParams {
public:
  /// Tables on the parameter server are not gathered: writeParams and
  /// exportOnnx stream them from the servers.
  bool gather(dist_rt_model_t model, bool withState, std::string &error);
  /// Parameter `index` (descriptor order); `gather` must have run.
  dist_rt_status_t get(uint32_t index, dist_rt_tensor_t &out) const;
  /// Copies the parameters still read from the model's buffers (all but
  /// the gathered ones and the servers' tables), so that the values stay
  /// those of this step while training goes on (a snapshot written in the
  /// background).
  bool own(std::string &error);

private:
  dist_rt_model_t model_ = nullptr;
  std::vector<std::vector<char>> bytes_;
  std::vector<std::vector<int64_t>> dims_;
};

/// Writes the ONNX model `source` (the artifact's copy of the model it was
/// compiled from) to `dest` with every frozen and trained parameter of
/// `params` (of a training model) as its initializer's new value
/// (onnx_export.cpp).
bool exportOnnx(dist_rt_model_t model, const WholeParams &params,
                const std::string &source, const std::string &dest,
                std::string &error);

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

struct ModelDeleter {
  void operator()(dist_rt_model *model) const { dist_rt_model_destroy(model); }
};
using ModelPtr = std::unique_ptr<dist_rt_model, ModelDeleter>;

/// Checks what parsing the command line relies on before the model is
/// created (ABI version, names, arrays of the inference and training
/// signatures). Returns "" when `desc` is usable, else the error.
std::string checkDriverDesc(const dist_rt_model_desc_t *desc);

/// The `train` subcommand (argv[1] == "train"); returns the exit code.
int runTrain(int argc, char **argv, const dist_rt_model_desc_t &desc);

/// `<exe> ps-server ...`: serves the model's tables on the parameter server
/// (train_ps.cpp).
int runPsServer(int argc, char **argv, const dist_rt_model_desc_t &desc);

//===--- Elastic jobs (elastic.cpp) ---------------------------------------===//

/// The world size and this process's rank that a launcher's environment
/// gives (Open MPI, PMI, Slurm), or -1.
int64_t launcherWorldSize();
int64_t launcherWorldRank();

/// For a model of an elastic set (desc.elastic): when the job's world size
/// is another layout's, replaces this process with that layout's
/// executable (execv, same arguments). Returns true when this executable
/// is the one to run; false with `error` when no layout fits or the
/// executable cannot be started.
bool switchLayout(char **argv, const dist_rt_model_desc_t &desc,
                  std::string &error);

/// The record dist-launch reads (DIST_LAUNCH_DIR; nothing without it):
/// started with the training command, the step after each step, and the
/// final state ("done", "error" or "replan").
bool launchRecordStart(std::string &error);
void launchRecordStep(int64_t step);
void launchRecordFinish(const char *state);
/// True when dist-launch asked the job to stop at its next snapshot for a
/// new layout (the file DIST_LAUNCH_DIR/replan exists).
bool launchReplanRequested();

} // namespace driver
} // namespace dist_rt

#endif // DIST_RT_LIB_DRIVER_H
