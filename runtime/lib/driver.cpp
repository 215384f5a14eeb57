//===- driver.cpp - Helpers of the model command line -----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements the helpers that dist_rt_main's inference and train
// subcommands share (see driver.h): one-line errors, option parsing,
// NAME=FILE bindings, tensor files, and the file-system operations that
// keep results and checkpoints whole across crashes (temporary files
// flushed and renamed into place), and finding the newest checkpoint of a
// checkpoint directory.
//
//===----------------------------------------------------------------------===//

#include "driver.h"

#include "dist_rt/kernels.h"

#include "internal.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace dist_rt {
namespace driver {

namespace {

/// Largest text file readTextFile accepts.
constexpr size_t kMaxTextFileBytes = 1 << 20;

/// The directory part of `path` ("." when it has none).
std::string parentDirectory(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// True when the names of `count` tensors at `tensors` can be listed.
bool namesUsable(uint32_t count, const dist_rt_tensor_desc_t *tensors) {
  if (count != 0 && !tensors)
    return false;
  for (uint32_t i = 0; i < count; ++i)
    if (!tensors[i].name)
      return false;
  return true;
}

} // namespace

//===----------------------------------------------------------------------===//
// Errors and options
//===----------------------------------------------------------------------===//

std::string errnoMessage(const std::string &what, int errnum) {
  char errorText[128];
  return what + ": " + describeErrno(errnum, errorText, sizeof(errorText));
}

int fail(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  std::replace(message.begin(), message.end(), '\r', ' ');
  // In a job of several ranks every message names the rank it comes from.
  if (dist_rt_mesh_world_size() > 1 && message.rfind("rank ", 0) != 0)
    message =
        "rank " + std::to_string(dist_rt_mesh_world_rank()) + ": " + message;
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::fflush(stderr);
  return 1;
}

int fail(dist_rt_status_t status) {
  int code = fail(std::string(dist_rt_status_message(status)));
  dist_rt_status_free(status);
  return code;
}

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

std::string defaultParamsText(const dist_rt_model_desc_t &desc) {
  if (!desc.param_file)
    return "none: the model has no parameters";
  if (desc.param_file[0] == '/')
    return desc.param_file;
  return std::string(desc.param_file) + " next to the binary";
}

bool parseThreads(const std::string &value, int32_t &out, std::string &error) {
  int64_t threads = 0;
  if (!parseInteger(value, 0, 65536, threads)) {
    error = "--threads expects an integer in [0, 65536], got '" + value + "'";
    return false;
  }
  out = static_cast<int32_t>(threads);
  return true;
}

bool parseDevice(const dist_rt_model_desc_t &desc, const std::string &value,
                 int32_t &out, std::string &error) {
  int64_t device = 0;
  if (desc.device != DIST_RT_DEVICE_CUDA) {
    error = "--device: model '" + std::string(desc.name) +
            "' runs on the host (compile it with --target=cuda for a GPU)";
    return false;
  }
  if (!parseInteger(value, 0, 1024, device)) {
    error = "--device expects a GPU number in [0, 1024], got '" + value + "'";
    return false;
  }
  out = static_cast<int32_t>(device);
  return true;
}

bool parseOptions(int argc, char **argv, int first,
                  const std::vector<OptionSpec> &specs,
                  const char *positionalHint, const OptionHandler &handle,
                  std::string &error) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i] ? argv[i] : "";
    if (arg == "-h")
      arg = "--help";
    if (arg.compare(0, 2, "--") != 0) {
      error = "unexpected argument '" + arg + "' (" + positionalHint +
              "; see --help)";
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
    auto spec = std::find_if(
        specs.begin(), specs.end(),
        [&](const OptionSpec &candidate) { return flag == candidate.flag; });
    if (spec == specs.end()) {
      error = "unknown option '" + flag + "' (see --help)";
      return false;
    }
    if (!spec->takesValue && inlineValue) {
      error = "option '" + flag + "' takes no value";
      return false;
    }
    if (spec->takesValue && !inlineValue) {
      if (i + 1 >= argc || !argv[i + 1]) {
        error = "option '" + flag + "' needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (!handle(flag, value, error))
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Tensors read from and written to .npy files
//===----------------------------------------------------------------------===//

bool isPsRows(const dist_rt_ps_desc_t *ps, const char *name) {
  for (uint32_t k = 0; ps && k < ps->num_lookups; ++k)
    if (std::strcmp(ps->lookups[k].rows, name) == 0)
      return true;
  return false;
}

bool bindFile(const std::string &value, const char *modelName,
              const FileBinding &binding, std::vector<std::string> &files,
              std::string &error) {
  // Match declared names first so that names containing '=' work.
  int64_t match = -1;
  size_t matchLength = 0;
  for (uint32_t i = 0; i < binding.count; ++i) {
    size_t length = std::strlen(binding.tensors[i].name);
    if (value.size() > length && value[length] == '=' &&
        value.compare(0, length, binding.tensors[i].name) == 0 &&
        (match < 0 || length > matchLength)) {
      match = i;
      matchLength = length;
    }
  }
  std::string kind = binding.kind;
  if (match < 0) {
    size_t equals = value.find('=');
    if (equals == std::string::npos) {
      error = std::string(binding.option) + " expects NAME=FILE, got '" +
              value + "'";
      return false;
    }
    std::string known;
    for (uint32_t i = 0; i < binding.count; ++i)
      known += std::string(i ? ", " : "") + "'" + binding.tensors[i].name + "'";
    error = "unknown " + kind + " '" + value.substr(0, equals) + "' (model '" +
            modelName + "' has " +
            (binding.count ? kind + "s " + known : "no " + kind + "s") + ")";
    return false;
  }
  const char *name = binding.tensors[match].name;
  if (isPsRows(binding.ps, name)) {
    error = kind + " '" + name +
            "' takes rows pulled from the parameter server; it has no file";
    return false;
  }
  std::string file = value.substr(matchLength + 1);
  if (file.empty()) {
    error =
        std::string(binding.option) + " " + name + "=: the file name is empty";
    return false;
  }
  if (!files[match].empty()) {
    error = kind + " '" + name + "' is given more than once";
    return false;
  }
  files[match] = file;
  return true;
}

std::string missingFile(const FileBinding &binding,
                        const std::vector<std::string> &files) {
  for (uint32_t i = 0; i < binding.count; ++i) {
    const dist_rt_tensor_desc_t &tensor = binding.tensors[i];
    if (files[i].empty() && !isPsRows(binding.ps, tensor.name))
      return std::string("missing ") + binding.option + " " + tensor.name +
             "=FILE.npy (" + binding.kind + " '" + tensor.name + "' is " +
             dist_rt_dtype_name(tensor.dtype) + " " +
             formatShape(tensor.rank, tensor.dims) + ")";
  }
  return std::string();
}

NpyArrays::~NpyArrays() {
  for (dist_rt_npy_array_t &array : arrays)
    dist_rt_npy_free(&array);
}

bool readTensorFile(const char *kind, const dist_rt_tensor_desc_t &declared,
                    const std::string &path, dist_rt_npy_array_t &array,
                    dist_rt_tensor_t &tensor, std::string &error) {
  if (dist_rt_status_t status = dist_rt_npy_read(path.c_str(), &array)) {
    error = std::string(kind) + " '" + declared.name +
            "': " + dist_rt_status_message(status);
    dist_rt_status_free(status);
    return false;
  }
  uint32_t dtype = array.dtype;
  if (declared.dtype == DIST_RT_DTYPE_BFLOAT16 && dtype == DIST_RT_DTYPE_UINT16)
    dtype = DIST_RT_DTYPE_BFLOAT16;
  tensor = {dtype, array.rank, array.dims, array.data};
  return true;
}

dist_rt_status_t writeTensorFile(const std::string &path,
                                 const dist_rt_tensor_t &tensor) {
  uint32_t dtype = tensor.dtype == DIST_RT_DTYPE_BFLOAT16 ? DIST_RT_DTYPE_UINT16
                                                          : tensor.dtype;
  return dist_rt_npy_write(path.c_str(), dtype, tensor.rank, tensor.dims,
                           tensor.data);
}

std::string tensorFileName(const char *name) {
  std::string file = name;
  std::replace(file.begin(), file.end(), '/', '_');
  return file + ".npy";
}

std::string tensorFilePath(const std::string &dir, const char *name) {
  return dir + "/" + tensorFileName(name);
}

//===----------------------------------------------------------------------===//
// Files and directories
//===----------------------------------------------------------------------===//

bool makeDirectories(const std::string &path, const char *what,
                     std::string &error) {
  for (size_t end = 1; end <= path.size(); ++end) {
    if (end != path.size() && path[end] != '/')
      continue;
    std::string prefix = path.substr(0, end);
    struct stat st;
    if (::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      continue;
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      error = errnoMessage(
          std::string("cannot create ") + what + " '" + path + "'", errno);
      return false;
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = std::string(what) + " '" + path + "' is not a directory";
    return false;
  }
  return true;
}

std::vector<std::string> listDirectory(const std::string &path) {
  std::vector<std::string> names;
  if (DIR *dir = ::opendir(path.c_str())) {
    while (dirent *entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    ::closedir(dir);
  }
  return names;
}

bool removeTree(const std::string &path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return errno == ENOENT;
  if (!S_ISDIR(st.st_mode))
    return ::unlink(path.c_str()) == 0;
  for (const std::string &child : listDirectory(path))
    removeTree(path + "/" + child);
  return ::rmdir(path.c_str()) == 0;
}

namespace {
/// fsync of `path` (or syncfs of its file system) with the error in words.
bool flushPath(const std::string &path, bool fileSystem, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = errnoMessage("cannot open '" + path + "' to flush it", errno);
    return false;
  }
  bool ok = (fileSystem ? ::syncfs(fd) : ::fsync(fd)) == 0;
  int errnum = errno;
  ::close(fd);
  // Some file systems cannot flush directories; that is no reason to fail.
  if (!ok && (fileSystem || (errnum != EINVAL && errnum != EROFS))) {
    error = errnoMessage(fileSystem
                             ? "cannot flush the file system of '" + path + "'"
                             : "cannot flush '" + path + "'",
                         errnum);
    return false;
  }
  return true;
}
} // namespace

bool syncPath(const std::string &path, std::string &error) {
  return flushPath(path, /*fileSystem=*/false, error);
}

bool syncFileSystem(const std::string &path, std::string &error) {
  return flushPath(path, /*fileSystem=*/true, error);
}

bool writeFileAtomically(const std::string &path, const std::string &text,
                         std::string &error, bool flush) {
  std::string tempPath = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(&tempPath[0]);
  if (fd < 0) {
    error = errnoMessage(
        "cannot create a temporary file next to '" + path + "'", errno);
    return false;
  }
  (void)::fchmod(fd, 0644);
  bool ok =
      writeFully(fd, text.data(), text.size()) && (!flush || ::fsync(fd) == 0);
  int errnum = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    errnum = errno;
  }
  if (ok && ::rename(tempPath.c_str(), path.c_str()) != 0) {
    ok = false;
    errnum = errno;
  }
  if (!ok) {
    ::unlink(tempPath.c_str());
    error = errnoMessage("cannot write '" + path + "'", errnum);
    return false;
  }
  return !flush || syncPath(parentDirectory(path), error);
}

bool readTextFile(const std::string &path, std::string &text,
                  std::string &error) {
  return readWholeFile(path, kMaxTextFileBytes, text, error);
}

bool readWholeFile(const std::string &path, size_t maxBytes, std::string &text,
                   std::string &error) {
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) {
    error = errnoMessage("cannot open '" + path + "'", errno);
    return false;
  }
  text.clear();
  char buffer[4096];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof(buffer), file)) > 0 &&
         text.size() <= maxBytes)
    text.append(buffer, got);
  bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) {
    error = "cannot read '" + path + "'";
    return false;
  }
  if (text.size() > maxBytes) {
    error = "'" + path + "' is too large";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Checkpoint directories
//===----------------------------------------------------------------------===//

bool isCheckpointName(const std::string &name) {
  return name.size() > 5 && name.compare(0, 5, "step-") == 0 &&
         name.find_first_not_of("0123456789", 5) == std::string::npos;
}

bool readLatest(const std::string &dir, std::string &name, std::string &error) {
  return readNamedCheckpoint(dir, kLatestFile, name, error);
}

bool readNamedCheckpoint(const std::string &dir, const char *file,
                         std::string &name, std::string &error) {
  std::string path = dir + "/" + file;
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

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

std::string checkDriverDesc(const dist_rt_model_desc_t *desc) {
  if (!desc)
    return "dist_rt_main: the model descriptor is NULL";
  // The version comes first: an older descriptor has no `train` field.
  bool usable = desc->abi_version == DIST_RT_MODEL_ABI_VERSION && desc->name &&
                namesUsable(desc->num_inputs, desc->inputs) &&
                namesUsable(desc->num_outputs, desc->outputs);
  if (usable && desc->elastic) {
    const dist_rt_elastic_desc_t &e = *desc->elastic;
    usable = e.min_ranks >= 1 && e.max_ranks >= e.min_ranks && e.executables;
    for (uint32_t k = 0; usable && k <= e.max_ranks - e.min_ranks; ++k)
      usable = e.executables[k] && e.executables[k][0];
  }
  if (usable && desc->train)
    usable = namesUsable(desc->train->num_inputs, desc->train->inputs) &&
             namesUsable(desc->train->num_outputs, desc->train->outputs);
  if (usable)
    return std::string();
  // dist_rt_model_create checks all of it and says what is wrong.
  dist_rt_model_t model = nullptr;
  dist_rt_status_t status = dist_rt_model_create(desc, nullptr, &model);
  dist_rt_model_destroy(model);
  std::string message = status ? dist_rt_status_message(status)
                               : "dist_rt_main: invalid model descriptor";
  dist_rt_status_free(status);
  return message;
}

} // namespace driver
} // namespace dist_rt
