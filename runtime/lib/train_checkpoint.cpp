//===- train_checkpoint.cpp - Checkpoints of the train command --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The files that `<exe> train` writes and resumes from: the parameters
// (gathered whole from every rank where tensor parallelism split them,
// WholeParams) saved one .npy file each, and checkpoints: a directory per
// step holding every parameter, the optimizer state and state.json (the
// step and the run settings a resume must keep), written in a temporary
// directory and renamed into place so that a crash never leaves a
// half-written checkpoint under its final name, with `latest` naming the
// newest and only the two newest kept.
//
//===----------------------------------------------------------------------===//

#include "model_internal.h"
#include "train_internal.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dist_rt {
namespace driver {

//===----------------------------------------------------------------------===//
// Whole parameters
//===----------------------------------------------------------------------===//

bool WholeParams::gather(dist_rt_model_t model, bool withState,
                         std::string &error) {
  model_ = model;
  const dist_rt_model_desc_t &desc = *dist_rt_model_desc(model);
  // Pipeline stages: each parameter's current value is on its stage's rank.
  if (dist_rt_status_t status =
          dist_rt::model_impl::syncPipelineParams(*model)) {
    error = dist_rt_status_message(status);
    dist_rt_status_free(status);
    return false;
  }
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
  if (index < bytes_.size() && !bytes_[index].empty()) {
    out.dims = dims_[index].data();
    out.data = const_cast<char *>(bytes_[index].data());
  }
  return nullptr;
}

bool WholeParams::own(std::string &error) {
  const dist_rt_model_desc_t &desc = *dist_rt_model_desc(model_);
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    if (!bytes_[i].empty() ||
        (desc.train && desc.train->param_roles[i] == DIST_RT_PARAM_PS))
      continue;
    dist_rt_tensor_t param;
    if (dist_rt_status_t status = dist_rt_model_param(model_, i, &param)) {
      error = dist_rt_status_message(status);
      dist_rt_status_free(status);
      return false;
    }
    size_t bytes = dist_rt_dtype_size(param.dtype);
    for (uint32_t d = 0; d < param.rank; ++d)
      bytes *= static_cast<size_t>(param.dims[d]);
    try {
      bytes_[i].assign(static_cast<const char *>(param.data),
                       static_cast<const char *>(param.data) + bytes);
    } catch (const std::bad_alloc &) {
      error = "out of memory copying parameter '" +
              std::string(desc.params[i].name) + "' for a snapshot";
      return false;
    }
    dims_[i].assign(param.dims, param.dims + param.rank);
  }
  return true;
}

namespace train_impl {

//===----------------------------------------------------------------------===//
// Parameter files
//===----------------------------------------------------------------------===//

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

bool writeParams(dist_rt_model_t model, const WholeParams &whole,
                 const std::vector<std::string> &names, const std::string &dir,
                 bool withState, bool sync, std::string &error) {
  const dist_rt_model_desc_t &desc = *dist_rt_model_desc(model);
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    if (!withState && desc.train->param_roles[i] == DIST_RT_PARAM_STATE)
      continue;
    dist_rt_tensor_t param;
    std::string path = dir + "/" + names[i];
    dist_rt_status_t status = nullptr;
    if (desc.train->param_roles[i] == DIST_RT_PARAM_PS) {
      // Streamed from the servers, a piece of rows at a time.
      const dist_rt_tensor_desc_t &p = desc.params[i];
      status = writeNpyRows(path.c_str(), DIST_RT_DTYPE_FLOAT, 2, p.dims, 4096,
                            [&](int64_t first, int64_t count, void *out) {
                              return dist_rt::model_impl::psReadRows(
                                  *model, i, first, count,
                                  static_cast<float *>(out));
                            });
      // A checkpoint keeps the rows' optimizer state too (Adagrad, Adam),
      // and the tables' counts of updates (Adam's bias correction).
      int64_t width =
          static_cast<int64_t>(dist_rt::model_impl::psStateFloats(desc, i));
      if (!status && withState && width > 0) {
        const int64_t dims[2] = {p.dims[0], width};
        int64_t updates = 0;
        std::string statePath =
            dir + "/" + dist_rt::model_impl::psStateFileName(p.name);
        status = writeNpyRows(
            statePath.c_str(), DIST_RT_DTYPE_FLOAT, 2, dims, 4096,
            [&](int64_t first, int64_t count, void *out) {
              return dist_rt::model_impl::psReadState(
                  *model, i, first, count, static_cast<float *>(out), updates);
            });
        if (!status && sync && !syncPath(statePath, error))
          return false;
        const int64_t one = 1;
        dist_rt_tensor_t count{DIST_RT_DTYPE_INT64, 1, &one, &updates};
        std::string updatesPath =
            dir + "/" + dist_rt::model_impl::psUpdatesFileName(p.name);
        if (!status)
          status = writeTensorFile(updatesPath, count);
        if (!status && sync && !syncPath(updatesPath, error))
          return false;
      }
    } else {
      status = whole.get(i, param);
      if (!status)
        status = writeTensorFile(path, param);
    }
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

bool readParams(dist_rt_model_t model, const std::vector<std::string> &names,
                const std::string &dir, std::string &error) {
  const dist_rt_model_desc_t &desc = *dist_rt_model_desc(model);
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    // The servers keep the tables (in their shard directories): a resumed
    // run continues against them.
    if (desc.train->param_roles[i] == DIST_RT_PARAM_PS)
      continue;
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

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

namespace {

std::string checkpointName(int64_t step) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "step-%08" PRId64, step);
  return buffer;
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

} // namespace

bool checkpointsToResume(const std::string &dir,
                         std::vector<std::string> &checkpoints,
                         std::string &error) {
  checkpoints.clear();
  struct stat st;
  std::string latest = dir + "/" + kLatestFile;
  if (::stat(latest.c_str(), &st) != 0 &&
      ::stat((dir + "/" + kStateFile).c_str(), &st) == 0) {
    checkpoints.push_back(dir);
    return true;
  }
  std::string name;
  if (!readLatest(dir, name, error)) {
    error = "--resume " + dir + ": " + error;
    return false;
  }
  checkpoints.push_back(dir + "/" + name);
  // The names sort by step (step-%08d); older ones after the newest.
  std::vector<std::string> older;
  for (const std::string &entry : listDirectory(dir))
    if (isCheckpointName(entry) && entry != name)
      older.push_back(entry);
  std::sort(older.begin(), older.end(),
            [](const std::string &a, const std::string &b) {
              return a.size() != b.size() ? a.size() > b.size() : a > b;
            });
  for (const std::string &entry : older)
    checkpoints.push_back(dir + "/" + entry);
  return true;
}

bool readCheckpointState(const std::string &checkpoint, CheckpointState &state,
                         std::string &error) {
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

namespace {

std::string tempCheckpointDir(const std::string &dir, int64_t step, long pid) {
  return dir + "/.tmp-" + checkpointName(step) + "-" + std::to_string(pid);
}

/// Puts the checkpoint of `state.step` written in `temp` into place: writes
/// its state.json, renames it to dir/step-<n> and names it in dir/latest.
/// With `flush`, the file system is flushed before the rename (one flush
/// for every file instead of one per file, which cost 13 ms of a 25 MB
/// checkpoint's writes on this machine's virtual disk: fsync of each of 95
/// files) and the checkpoint is also named in dir/durable. Then removes all
/// but it, the checkpoint `latest` named before and the one `durable`
/// names, and the temporary directories of processes that died while
/// writing one. With `recycleAs` (the temporary directory of the next
/// checkpoint), one checkpoint that would be removed is renamed to it
/// instead, unless it exists, so that the next one overwrites its files in
/// place (see saveCheckpointPart).
bool commitCheckpoint(const std::string &dir, const std::string &temp,
                      const CheckpointState &state, bool flush,
                      const std::string &recycleAs, std::string &error) {
  std::string name = checkpointName(state.step);
  bool saved = writeFileAtomically(temp + "/" + kStateFile, stateJson(state),
                                   error, flush) &&
               (!flush || syncFileSystem(temp, error)) &&
               moveIntoPlace(temp, dir + "/" + name, error) &&
               (!flush || syncPath(dir, error));
  if (!saved) {
    removeTree(temp);
    return false;
  }
  std::string previous;
  std::string durable;
  std::string ignored;
  if (!readLatest(dir, previous, ignored))
    previous.clear();
  if (!writeFileAtomically(dir + "/" + kLatestFile, name + "\n", error, flush))
    return false;
  if (flush) {
    durable = name;
    if (!writeFileAtomically(dir + "/" + kDurableFile, name + "\n", error))
      return false;
  } else if (!readNamedCheckpoint(dir, kDurableFile, durable, ignored)) {
    durable.clear();
  }
  for (const std::string &entry : listDirectory(dir)) {
    if (isCheckpointName(entry) && entry != name && entry != previous &&
        entry != durable) {
      std::string old = dir + "/" + entry;
      bool recycled = false;
#ifdef RENAME_NOREPLACE
      // Only one of this model (another's files would stay in it), never
      // over a directory that a rank has created meanwhile.
      CheckpointState oldState;
      std::string ignoredError;
      recycled = !recycleAs.empty() &&
                 readCheckpointState(old, oldState, ignoredError) &&
                 oldState.model == state.model &&
                 ::renameat2(AT_FDCWD, old.c_str(), AT_FDCWD, recycleAs.c_str(),
                             RENAME_NOREPLACE) == 0;
#endif
      if (recycled)
        continue;
      removeTree(old);
    }
    // ".tmp-<name>-<pid>", the pid gone.
    size_t dash = entry.rfind('-');
    if (entry.rfind(".tmp-", 0) == 0 && dash != std::string::npos) {
      long pid = std::strtol(entry.c_str() + dash + 1, nullptr, 10);
      if (pid > 0 && pid != static_cast<long>(::getpid()) &&
          ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
        removeTree(dir + "/" + entry);
    }
  }
  return true;
}

/// The file by which rank `rank` tells rank 0 that its part of the
/// checkpoint in `temp` is written and flushed, or (`failed`) why not.
std::string partNote(const std::string &temp, int64_t rank, bool failed) {
  return temp + (failed ? "/.part-failed-" : "/.part-done-") +
         std::to_string(rank);
}

/// Creates `path` holding `text` (not flushed: only rank 0 reads it, while
/// the job runs).
bool writeNote(const std::string &path, const std::string &text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  bool ok = writeFully(fd, text.data(), text.size());
  return ::close(fd) == 0 && ok;
}

} // namespace

bool saveCheckpoint(const std::string &dir, dist_rt_model_t model,
                    const WholeParams &whole,
                    const std::vector<std::string> &names,
                    const CheckpointState &state, bool flush,
                    std::string &error) {
  std::string temp =
      tempCheckpointDir(dir, state.step, static_cast<long>(::getpid()));
  removeTree(temp);
  if (::mkdir(temp.c_str(), 0777) != 0) {
    error = errnoMessage("cannot create " + temp, errno);
    return false;
  }
  if (!writeParams(model, whole, names, temp, /*withState=*/true,
                   /*sync=*/false, error)) {
    removeTree(temp);
    return false;
  }
  return commitCheckpoint(dir, temp, state, flush, /*recycleAs=*/"", error);
}

//===----------------------------------------------------------------------===//
// Checkpoints written in parts
//===----------------------------------------------------------------------===//

void removeOwnTemporaries(const std::string &dir) {
  std::string suffix = "-" + std::to_string(static_cast<long>(::getpid()));
  for (const std::string &entry : listDirectory(dir))
    if (entry.rfind(".tmp-", 0) == 0 && entry.size() > suffix.size() &&
        entry.compare(entry.size() - suffix.size(), suffix.size(), suffix) == 0)
      removeTree(dir + "/" + entry);
}

bool SnapshotPart::copy(dist_rt_model_t model, int64_t rank, int64_t world,
                        std::string &error) {
  model_ = model;
  const dist_rt_model_desc_t &desc = *dist_rt_model_desc(model);
  // Every rank waits for the slowest at the next step, so the whole
  // parameters are shared out: one of 256 KiB or more in equal ranges of
  // its bytes, a smaller one whole to the rank with the fewest bytes so
  // far (the same choice on every rank).
  constexpr int64_t kRangesFrom = 256 << 10;
  std::vector<int64_t> load(static_cast<size_t>(world), 0);
  size_t kept = 0;
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    dist_rt_tensor_t param;
    if (dist_rt_status_t status = dist_rt_model_param(model, i, &param)) {
      error = dist_rt_status_message(status);
      dist_rt_status_free(status);
      return false;
    }
    int64_t elem = static_cast<int64_t>(dist_rt_dtype_size(param.dtype));
    int64_t bytes = elem;
    for (uint32_t d = 0; d < param.rank; ++d)
      bytes *= param.dims[d];
    dist_rt_param_shard_t shard = paramShard(desc, i);
    std::vector<ParamChunk> chunks;
    bool header = rank == 0;
    if (shard.axis >= 0) {
      // The ranks that differ only on other axes hold the same part.
      bool first = true;
      for (uint32_t a = 0; a < desc.num_mesh_axes; ++a)
        first &=
            static_cast<int32_t>(a) == shard.axis || dist_rt_mesh_coord(a) == 0;
      if (!first)
        continue;
      chunks = paramChunks(desc, i);
      header = dist_rt_mesh_coord(shard.axis) == 0;
    } else if (bytes >= kRangesFrom) {
      int64_t elems = bytes / elem;
      int64_t begin = rank * elems / world * elem;
      int64_t end = (rank + 1) * elems / world * elem;
      chunks.push_back({begin, begin, end - begin});
    } else {
      int64_t owner = std::min_element(load.begin(), load.end()) - load.begin();
      load[static_cast<size_t>(owner)] += bytes;
      if (owner != rank)
        continue;
      chunks.push_back({0, 0, bytes});
      header = true;
    }
    if (kept == params_.size())
      params_.emplace_back();
    Param &p = params_[kept++];
    p.index = i;
    p.chunks = std::move(chunks);
    p.header = header;
    // The buffers of the previous snapshot are reused: allocating them
    // again would fault in their pages at every snapshot.
    try {
      int64_t size = 0;
      for (ParamChunk &c : p.chunks) {
        p.bytes.resize(static_cast<size_t>(size + c.bytes));
        std::memcpy(p.bytes.data() + size,
                    static_cast<const char *>(param.data) + c.localOffset,
                    static_cast<size_t>(c.bytes));
        c.localOffset = size;
        size += c.bytes;
      }
      p.bytes.resize(static_cast<size_t>(size));
    } catch (const std::bad_alloc &) {
      error = "out of memory copying parameter '" +
              std::string(desc.params[i].name) + "' for a snapshot";
      return false;
    }
  }
  params_.resize(kept);
  return true;
}

bool SnapshotPart::write(const std::string &dir,
                         const std::vector<std::string> &names,
                         std::string &error) const {
  const dist_rt_model_desc_t &desc = *dist_rt_model_desc(model_);
  for (const Param &p : params_) {
    std::vector<NpyPiece> pieces;
    for (const ParamChunk &c : p.chunks)
      pieces.push_back({static_cast<uint64_t>(c.wholeOffset),
                        p.bytes.data() + c.localOffset,
                        static_cast<uint64_t>(c.bytes)});
    // As writeTensorFile: bfloat16 is stored as uint16.
    uint32_t dtype = desc.params[p.index].dtype;
    if (dtype == DIST_RT_DTYPE_BFLOAT16)
      dtype = DIST_RT_DTYPE_UINT16;
    std::vector<int64_t> dims = paramFullDims(desc, p.index);
    std::string path = dir + "/" + names[p.index];
    if (dist_rt_status_t status = writeNpyPieces(
            path.c_str(), dtype, static_cast<uint32_t>(dims.size()),
            dims.data(), p.header, pieces)) {
      error = dist_rt_status_message(status);
      dist_rt_status_free(status);
      return false;
    }
  }
  return true;
}

bool saveCheckpointPart(const std::string &dir, const SnapshotPart &part,
                        const std::vector<std::string> &names,
                        const CheckpointState &state, bool flush,
                        int64_t nextStep, int64_t leadPid, int64_t rank,
                        int64_t worldSize, std::string &error) {
  std::string temp = tempCheckpointDir(dir, state.step, leadPid);
  bool written =
      makeDirectories(temp, "the checkpoint's temporary directory", error) &&
      part.write(temp, names, error);
  if (rank != 0) {
    // Flushed before rank 0 counts it in.
    written = written && (!flush || syncFileSystem(temp, error));
    if (!writeNote(partNote(temp, rank, !written), written ? "" : error) &&
        written) {
      error =
          errnoMessage("cannot write " + partNote(temp, rank, false), errno);
      return false;
    }
    return written;
  }
  // Rank 0 leaves a failed checkpoint's directory to the other ranks still
  // writing into it; a later checkpoint removes it once this process ends.
  if (!written)
    return false;
  // A rank that leaves no note (stopped, or its storage hangs) gets the
  // deadline of the job's collectives, from the last note that came in.
  double timeout = 0;
  dist_rt_world_options_t options;
  if (dist_rt_status_t status = worldOptionsFromEnvironment(options))
    dist_rt_status_free(status);
  else
    timeout = options.timeout_s;
  auto last = std::chrono::steady_clock::now();
  for (int64_t r = 1; r < worldSize; ++r) {
    std::string done = partNote(temp, r, false);
    std::string failed = partNote(temp, r, true);
    while (::access(done.c_str(), F_OK) != 0) {
      if (::access(failed.c_str(), F_OK) == 0) {
        std::string why;
        readTextFile(failed, why, why);
        error =
            "rank " + std::to_string(r) + " could not write its part: " + why;
        return false;
      }
      std::chrono::duration<double> waited =
          std::chrono::steady_clock::now() - last;
      if (timeout > 0 && waited.count() > timeout) {
        char seconds[32];
        std::snprintf(seconds, sizeof(seconds), "%g", timeout);
        error = "rank " + std::to_string(r) + " wrote no part into " + temp +
                " within " + seconds + " s (DIST_RT_COMM_TIMEOUT)";
        return false;
      }
      ::usleep(2000);
    }
    last = std::chrono::steady_clock::now();
  }
  for (int64_t r = 1; r < worldSize; ++r)
    ::unlink(partNote(temp, r, false).c_str());
  // Creating a checkpoint's ~100 files and removing the oldest's cost more
  // than writing them: on ext4 each new inode skips over the recently
  // removed ones (find_inode_bit, recently_deleted), 20-30 ms of the step
  // after every snapshot of the benchmark GPT at 4 ranks on 2 cores; a
  // recycled directory's files are overwritten instead.
  std::string recycleAs =
      nextStep > 0 ? tempCheckpointDir(dir, nextStep, leadPid) : "";
  return commitCheckpoint(dir, temp, state, flush, recycleAs, error);
}

} // namespace train_impl
} // namespace driver
} // namespace dist_rt
