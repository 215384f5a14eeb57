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
  // The files are flushed together (syncfs) before the rename: one flush
  // instead of one per file, which cost 13 ms of a 25 MB checkpoint's
  // writes on this machine's virtual disk (fsync of each of 95 files).
  bool saved =
      writeParams(model, whole, names, temp, /*withState=*/true,
                  /*sync=*/false, error) &&
      writeFileAtomically(temp + "/" + kStateFile, stateJson(state), error) &&
      syncFileSystem(temp, error) &&
      moveIntoPlace(temp, dir + "/" + name, error) && syncPath(dir, error);
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
  for (const std::string &entry : listDirectory(dir)) {
    if (isCheckpointName(entry) && entry != name && entry != previous)
      removeTree(dir + "/" + entry);
    // Half-written checkpoints of processes that died while writing them
    // (".tmp-<name>-<pid>", the pid gone).
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

} // namespace train_impl
} // namespace driver
} // namespace dist_rt
