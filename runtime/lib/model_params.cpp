//===- model_params.cpp - Parameters of compiled models ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Loads the parameters of a model being created: finds its parameter file
// (next to the binary holding the descriptor unless the options name one),
// maps it and checks every declared parameter against it by name, dtype
// and shape. The options may name a directory of .npy files instead, as
// the `train` command writes them (--save-params, a checkpoint, or a
// checkpoint directory and its newest checkpoint). A model with a training
// step, a parameter that tensor parallelism splits, and a parameter read
// from a directory get private 64-byte-aligned copies (zeros for the
// optimizer state, this rank's part of a split one). Also the helpers for
// split parameters (their whole shape, this rank's part, gathering the
// whole tensor from every rank) and the description of a live parameter.
//
//===----------------------------------------------------------------------===//

#include "model_internal.h"

#include "driver.h"

#include "dist_rt/npy.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

using dist_rt::formatShape;
using dist_rt::makeStatus;

namespace {

/// Returns the path of the running executable, or "" if unknown.
std::string selfExecutable() {
  std::vector<char> buffer(4096);
  while (true) {
    ssize_t length = ::readlink("/proc/self/exe", buffer.data(), buffer.size());
    if (length < 0)
      return {};
    if (static_cast<size_t>(length) < buffer.size())
      return std::string(buffer.data(), static_cast<size_t>(length));
    if (buffer.size() >= (1u << 20))
      return {};
    buffer.resize(buffer.size() * 2);
  }
}

/// Returns the directory of the executable or shared library that contains
/// `address`, without a trailing slash ("." if it cannot be told).
std::string binaryDirectory(const void *address) {
  std::string file;
  Dl_info info;
  if (dladdr(address, &info) && info.dli_fname && info.dli_fname[0]) {
    file = info.dli_fname;
    // For the main program dladdr reports argv[0], which may be relative to
    // a search path; /proc/self/exe is exact.
    Dl_info mainInfo;
    auto programHeaders = reinterpret_cast<const void *>(getauxval(AT_PHDR));
    bool isMain = programHeaders && dladdr(programHeaders, &mainInfo) &&
                  mainInfo.dli_fbase == info.dli_fbase;
    if (isMain || file.find('/') == std::string::npos)
      file = selfExecutable();
  } else {
    file = selfExecutable();
  }
  size_t slash = file.rfind('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return file.substr(0, slash);
}

} // namespace

std::string dist_rt::modelDirectory(const dist_rt_model_desc_t *desc) {
  return binaryDirectory(desc);
}

namespace dist_rt {
namespace model_impl {

namespace {

/// Checks that parameter `param`, found in `path` with `dtype` and extents
/// `dims` (`rank` of them), has the dtype and the extents `expectDims` that
/// the model declares.
dist_rt_status_t checkParamType(const dist_rt_tensor_desc_t &param,
                                const std::string &path, uint32_t dtype,
                                uint32_t rank, const int64_t *dims,
                                const int64_t *expectDims) {
  if (dtype != param.dtype)
    return makeStatus(DIST_RT_ERROR_FORMAT,
                      "parameter '%s' in %s has dtype %s, the model "
                      "expects %s",
                      param.name, path.c_str(), dist_rt_dtype_name(dtype),
                      dist_rt_dtype_name(param.dtype));
  bool sameShape = rank == param.rank;
  for (uint32_t d = 0; sameShape && d < param.rank; ++d)
    sameShape =
        expectDims[d] == DIST_RT_DYNAMIC_DIM || expectDims[d] == dims[d];
  if (!sameShape)
    return makeStatus(DIST_RT_ERROR_FORMAT,
                      "parameter '%s' in %s has shape %s, the model "
                      "expects %s",
                      param.name, path.c_str(), formatShape(rank, dims).c_str(),
                      formatShape(param.rank, expectDims).c_str());
  return nullptr;
}

/// Looks up parameter `param` in the mapped file at `path` and checks its
/// dtype and shape.
dist_rt_status_t findParam(const dist_rt_model &model, const std::string &path,
                           const dist_rt_tensor_desc_t &param,
                           const int64_t *expectDims,
                           dist_rt_param_info_t &info) {
  const char *modelName = model.desc->name;
  if (dist_rt_status_t status =
          dist_rt_params_find(model.params, param.name, &info)) {
    dist_rt_status_free(status);
    return makeStatus(DIST_RT_ERROR_NOT_FOUND,
                      "parameter '%s' is missing from %s (model '%s')",
                      param.name, path.c_str(), modelName);
  }
  return checkParamType(param, path, info.dtype, info.rank, info.dims,
                        expectDims);
}

/// A parameter read from its .npy file in a parameter directory.
struct NpyParam {
  dist_rt_npy_array_t array = {};
  NpyParam() = default;
  NpyParam(const NpyParam &) = delete;
  NpyParam &operator=(const NpyParam &) = delete;
  ~NpyParam() { dist_rt_npy_free(&array); }
};

/// Reads parameter `param` from its file in the parameter directory `dir`
/// (<name>.npy, as `train` writes it: '/' in the name becomes '_',
/// bfloat16 is stored as its uint16 bit patterns) and checks its dtype and
/// shape.
dist_rt_status_t readDirParam(const dist_rt_model &model,
                              const std::string &dir,
                              const dist_rt_tensor_desc_t &param,
                              const int64_t *expectDims, NpyParam &out) {
  const char *modelName = model.desc->name;
  std::string file = dist_rt::driver::tensorFileName(param.name);
  std::string path = dir + "/" + file;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT)
    return makeStatus(DIST_RT_ERROR_NOT_FOUND,
                      "parameter '%s' is missing from %s: no file %s (model "
                      "'%s')",
                      param.name, dir.c_str(), file.c_str(), modelName);
  if (dist_rt_status_t status = dist_rt_npy_read(path.c_str(), &out.array)) {
    dist_rt_status_t wrapped = makeStatus(
        dist_rt_status_code(status), "model '%s': parameter '%s': %s",
        modelName, param.name, dist_rt_status_message(status));
    dist_rt_status_free(status);
    return wrapped;
  }
  if (param.dtype == DIST_RT_DTYPE_BFLOAT16 &&
      out.array.dtype == DIST_RT_DTYPE_UINT16)
    out.array.dtype = DIST_RT_DTYPE_BFLOAT16;
  return checkParamType(param, path, out.array.dtype, out.array.rank,
                        out.array.dims, expectDims);
}

/// Finds the directory holding the parameters of the directory `path`
/// (see dist_rt_model_options_t::param_path): the newest checkpoint of a
/// --checkpoint-dir, which its `latest` file names, or else `path` itself
/// (one checkpoint, or a --save-params directory).
dist_rt_status_t findParamDirectory(const dist_rt_model_desc_t &desc,
                                    const std::string &path, std::string &dir) {
  namespace driver = dist_rt::driver;
  struct stat st;
  std::string latest = path + "/" + driver::kLatestFile;
  if (::stat(latest.c_str(), &st) != 0 && errno == ENOENT) {
    dir = path;
    return nullptr;
  }
  std::string name, error;
  if (!driver::readLatest(path, name, error))
    return makeStatus(DIST_RT_ERROR_FORMAT, "model '%s': %s", desc.name,
                      error.c_str());
  dir = path + "/" + name;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return makeStatus(DIST_RT_ERROR_NOT_FOUND,
                      "model '%s': %s names the checkpoint %s, but %s is "
                      "not a directory",
                      desc.name, latest.c_str(), name.c_str(), dir.c_str());
  return nullptr;
}

/// Resolves the path of the parameters (see dist_rt_model_options_t) into
/// `path`. Maps the parameter file there, or, when `path` is a directory,
/// stores in `dir` the directory whose .npy files hold the parameters.
dist_rt_status_t openParamFile(dist_rt_model &model,
                               const dist_rt_model_options_t &options,
                               std::string &path, std::string &dir) {
  const dist_rt_model_desc_t &desc = *model.desc;
  if (options.param_path) {
    path = options.param_path;
  } else {
    if (!desc.param_file)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s' has %" PRIu32
                        " parameters but no parameter file name",
                        desc.name, desc.num_params);
    if (desc.param_file[0] == '/')
      path = desc.param_file;
    else
      path = binaryDirectory(&desc) + "/" + desc.param_file;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return findParamDirectory(desc, path, dir);
  if (dist_rt_status_t status =
          dist_rt_params_open(path.c_str(), &model.params)) {
    dist_rt_status_t wrapped =
        makeStatus(dist_rt_status_code(status), "model '%s': %s", desc.name,
                   dist_rt_status_message(status));
    dist_rt_status_free(status);
    return wrapped;
  }
  return nullptr;
}

/// Stores in `out` a private, 64-byte-aligned copy of `data`, parameter
/// `param` with extents `dims`, or zeros when `data` is NULL. The model owns
/// the copy.
dist_rt_status_t copyParam(dist_rt_model &model,
                           const dist_rt_tensor_desc_t &param, const void *data,
                           const int64_t *dims, void *&out) {
  uint64_t nbytes = 0;
  if (!byteSize(param.rank, dims, dist_rt_dtype_size(param.dtype), nbytes))
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': parameter '%s' of shape %s is too large",
                      model.desc->name, param.name,
                      formatShape(param.rank, dims).c_str());
  void *buffer = nullptr;
  // One byte at least, so that every parameter has a distinct buffer.
  if (::posix_memalign(&buffer, 64,
                       std::max<size_t>(static_cast<size_t>(nbytes), 1)) != 0)
    return makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY,
                      "model '%s': out of memory copying parameter '%s' "
                      "(%" PRIu64 " bytes)",
                      model.desc->name, param.name, nbytes);
  model.ownedParams.emplace_back(buffer);
  if (data)
    std::memcpy(buffer, data, static_cast<size_t>(nbytes));
  else
    std::memset(buffer, 0, static_cast<size_t>(nbytes));
  out = buffer;
  return nullptr;
}

} // namespace

/// Maps the parameter file (or reads the files of a parameter directory)
/// and checks every declared parameter against it; fills the parameter
/// descriptors. A model with a training step gets private copies of its
/// parameters (zeros for optimizer state, which is not in the file) and
/// lets go of the mapping. Parameters read from a directory are copied
/// too; those of an inference-only model are then read-only, and are
/// registered as constant memory as a mapped file is.
dist_rt_status_t loadParams(dist_rt_model &model,
                            const dist_rt_model_options_t &options) {
  const dist_rt_model_desc_t &desc = *model.desc;
  bool inFile = false;
  for (uint32_t i = 0; i < desc.num_params; ++i)
    inFile |= paramRole(desc, i) != DIST_RT_PARAM_STATE &&
              paramRole(desc, i) != DIST_RT_PARAM_PS;
  std::string path;
  // Set when the parameters are the .npy files of a directory.
  std::string dir;
  if (inFile)
    if (dist_rt_status_t status = openParamFile(model, options, path, dir))
      return status;

  for (uint32_t i = 0; i < desc.num_params; ++i) {
    const dist_rt_tensor_desc_t &param = desc.params[i];
    if (paramRole(desc, i) == DIST_RT_PARAM_PS) {
      // The servers hold it: its shape, no data.
      writeDescriptor(model.paramWords.data() + model.paramOffsets[i], nullptr,
                      param.rank, param.dims);
      continue;
    }
    const void *data = nullptr;
    const int64_t *dims = param.dims;
    NpyParam fromDir;
    if (paramRole(desc, i) != DIST_RT_PARAM_STATE) {
      std::vector<int64_t> full = dist_rt::paramFullDims(desc, i);
      if (!dir.empty()) {
        if (dist_rt_status_t status =
                readDirParam(model, dir, param, full.data(), fromDir))
          return status;
        data = fromDir.array.data;
        dims = fromDir.array.dims;
      } else {
        dist_rt_param_info_t info;
        if (dist_rt_status_t status =
                findParam(model, path, param, full.data(), info))
          return status;
        data = info.data;
        dims = info.dims;
      }
    }
    bool split = dist_rt::paramShard(desc, i).axis >= 0;
    if (desc.train || split || !dir.empty()) {
      void *copy = nullptr;
      // This rank's part of a split parameter (optimizer state: zeros).
      if (dist_rt_status_t status =
              copyParam(model, param, split ? nullptr : data, param.dims, copy))
        return status;
      if (split && data)
        dist_rt::sliceParam(desc, i, data, copy);
      uint64_t nbytes = 0;
      if (!desc.train && !dir.empty() &&
          byteSize(param.rank, param.dims, dist_rt_dtype_size(param.dtype),
                   nbytes)) {
        dist_rt::registerConstantMemory(copy, static_cast<size_t>(nbytes));
        model.constantParams.push_back(copy);
      }
      data = copy;
      dims = param.dims;
    }
    writeDescriptor(model.paramWords.data() + model.paramOffsets[i], data,
                    param.rank, dims);
  }
  if (desc.train) {
    // The descriptors hold the shapes; nothing points into the file now.
    dist_rt_params_release(model.params);
    model.params = nullptr;
  }
  return nullptr;
}

dist_rt_status_t PsInitRows::load(const dist_rt_model_desc_t &desc,
                                  const char *paramPath) {
  std::vector<uint32_t> params;
  std::vector<dist_rt_ps_table_t> tables;
  psTables(desc, params, tables);
  arrays.clear();
  rows.assign(params.size(), nullptr);
  state.assign(params.size(), nullptr);
  updates.assign(params.size(), 0);
  // Tables drawn from a distribution (dist-opt --ps-init) are in no
  // parameter file; a checkpoint or saved directory given has them.
  bool drawn = desc.ps && std::strcmp(desc.ps->init, "rows") != 0;
  if (drawn && !paramPath)
    return nullptr;
  holder.reset(new dist_rt_model());
  holder->desc = &desc;
  dist_rt_model_options_t options;
  dist_rt_model_options_initialize(&options);
  options.param_path = paramPath;
  std::string path, dir;
  if (dist_rt_status_t status = openParamFile(*holder, options, path, dir))
    return status;
  // A missing drawn table keeps its distribution.
  auto absent = [&](dist_rt_status_t status) {
    if (!drawn || dist_rt_status_code(status) != DIST_RT_ERROR_NOT_FOUND)
      return false;
    dist_rt_status_free(status);
    return true;
  };
  for (size_t t = 0; t < params.size(); ++t) {
    const dist_rt_tensor_desc_t &param = desc.params[params[t]];
    if (dir.empty()) {
      dist_rt_param_info_t info;
      if (dist_rt_status_t status =
              findParam(*holder, path, param, param.dims, info)) {
        if (absent(status))
          continue;
        return status;
      }
      rows[t] = static_cast<const float *>(info.data);
      continue;
    }
    NpyParam fromDir;
    if (dist_rt_status_t status =
            readDirParam(*holder, dir, param, param.dims, fromDir)) {
      if (absent(status))
        continue;
      return status;
    }
    arrays.push_back(fromDir.array);
    fromDir.array = dist_rt_npy_array_t{};
    rows[t] = static_cast<const float *>(arrays.back().data);
    // A checkpoint also holds the rows' optimizer state.
    int64_t width = static_cast<int64_t>(dist_rt_ps_state_floats(&tables[t]));
    if (width == 0)
      continue;
    std::string statePath = dir + "/" + psStateFileName(param.name);
    std::string updatesPath = dir + "/" + psUpdatesFileName(param.name);
    struct stat st;
    if (::stat(statePath.c_str(), &st) != 0)
      continue;
    dist_rt_npy_array_t s = {}, u = {};
    if (dist_rt_status_t status = dist_rt_npy_read(statePath.c_str(), &s))
      return status;
    arrays.push_back(s);
    if (s.dtype != DIST_RT_DTYPE_FLOAT || s.rank != 2 ||
        s.dims[0] != param.dims[0] || s.dims[1] != width)
      return makeStatus(DIST_RT_ERROR_FORMAT,
                        "%s: not the optimizer state of table '%s' (%" PRId64
                        " rows of %" PRId64 " floats)",
                        statePath.c_str(), param.name, param.dims[0], width);
    if (dist_rt_status_t status = dist_rt_npy_read(updatesPath.c_str(), &u))
      return status;
    arrays.push_back(u);
    if (u.dtype != DIST_RT_DTYPE_INT64 || u.nbytes != sizeof(int64_t))
      return makeStatus(DIST_RT_ERROR_FORMAT,
                        "%s: not a count of updates (one int64)",
                        updatesPath.c_str());
    state[t] = static_cast<const float *>(s.data);
    std::memcpy(&updates[t], u.data, sizeof(int64_t));
  }
  return nullptr;
}

PsInitRows::~PsInitRows() {
  for (dist_rt_npy_array_t &array : arrays)
    dist_rt_npy_free(&array);
}

/// Fills `out` from the descriptor of parameter `index`.
void describeParam(const dist_rt_model &model, size_t index,
                   dist_rt_tensor_t &out) {
  const dist_rt_tensor_desc_t &param = model.desc->params[index];
  const int64_t *words = model.paramWords.data() + model.paramOffsets[index];
  out.dtype = param.dtype;
  out.rank = param.rank;
  out.dims = param.rank ? words + 3 : nullptr;
  out.data = reinterpret_cast<void *>(static_cast<intptr_t>(words[1]));
}

} // namespace model_impl
} // namespace dist_rt

//===----------------------------------------------------------------------===//
// Split parameters
//===----------------------------------------------------------------------===//

dist_rt_param_shard_t dist_rt::paramShard(const dist_rt_model_desc_t &desc,
                                          uint32_t index) {
  if (!desc.param_shards || index >= desc.num_params)
    return dist_rt_param_shard_t{-1, 0, 1};
  return desc.param_shards[index];
}

std::vector<int64_t> dist_rt::paramFullDims(const dist_rt_model_desc_t &desc,
                                            uint32_t index) {
  const dist_rt_tensor_desc_t &param = desc.params[index];
  std::vector<int64_t> dims(param.dims, param.dims + param.rank);
  dist_rt_param_shard_t s = paramShard(desc, index);
  if (s.axis >= 0 && static_cast<uint32_t>(s.axis) < desc.num_mesh_axes &&
      s.dim >= 0 && static_cast<uint32_t>(s.dim) < param.rank)
    dims[static_cast<size_t>(s.dim)] *= desc.mesh_shape[s.axis];
  return dims;
}

namespace {
/// The geometry of a split parameter: `outer` rows of `blocks` blocks, each
/// block holding `parts` chunks of `chunkBytes` bytes (one per rank).
struct ShardGeometry {
  int64_t outer = 1, blocks = 1, parts = 1, chunkBytes = 0;
};

ShardGeometry shardGeometry(const dist_rt_model_desc_t &desc, uint32_t index) {
  const dist_rt_tensor_desc_t &param = desc.params[index];
  dist_rt_param_shard_t s = dist_rt::paramShard(desc, index);
  ShardGeometry g;
  g.parts = desc.mesh_shape[s.axis];
  g.blocks = s.blocks;
  int64_t inner = static_cast<int64_t>(dist_rt_dtype_size(param.dtype));
  for (uint32_t d = 0; d < param.rank; ++d) {
    if (static_cast<int32_t>(d) < s.dim)
      g.outer *= param.dims[d];
    else if (static_cast<int32_t>(d) > s.dim)
      inner *= param.dims[d];
  }
  g.chunkBytes = param.dims[s.dim] / s.blocks * inner;
  return g;
}
} // namespace

std::vector<dist_rt::ParamChunk>
dist_rt::paramChunks(const dist_rt_model_desc_t &desc, uint32_t index) {
  ShardGeometry g = shardGeometry(desc, index);
  int64_t coord = dist_rt_mesh_coord(paramShard(desc, index).axis);
  std::vector<ParamChunk> chunks;
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t b = 0; b < g.blocks; ++b)
      chunks.push_back({(o * g.blocks + b) * g.chunkBytes,
                        ((o * g.blocks + b) * g.parts + coord) * g.chunkBytes,
                        g.chunkBytes});
  return chunks;
}

void dist_rt::sliceParam(const dist_rt_model_desc_t &desc, uint32_t index,
                         const void *full, void *local) {
  for (const ParamChunk &c : paramChunks(desc, index))
    std::memcpy(static_cast<char *>(local) + c.localOffset,
                static_cast<const char *>(full) + c.wholeOffset,
                static_cast<size_t>(c.bytes));
}

dist_rt_status_t dist_rt::gatherParam(dist_rt_model_t model, uint32_t index,
                                      std::vector<char> &full) {
  const dist_rt_model_desc_t &desc = *model->desc;
  dist_rt_tensor_t local;
  dist_rt::model_impl::describeParam(*model, index, local);
  dist_rt_param_shard_t s = paramShard(desc, index);
  ShardGeometry g = shardGeometry(desc, index);
  int64_t localBytes = g.outer * g.blocks * g.chunkBytes;
  std::vector<char> all(static_cast<size_t>(localBytes * g.parts));
  if (dist_rt_status_t status =
          meshGatherBytes(s.axis, local.data, all.data(), localBytes))
    return status;
  full.assign(all.size(), 0);
  for (int64_t r = 0; r < g.parts; ++r)
    for (int64_t o = 0; o < g.outer; ++o)
      for (int64_t b = 0; b < g.blocks; ++b)
        std::memcpy(
            full.data() + ((o * g.blocks + b) * g.parts + r) * g.chunkBytes,
            all.data() + r * localBytes + (o * g.blocks + b) * g.chunkBytes,
            static_cast<size_t>(g.chunkBytes));
  return nullptr;
}
