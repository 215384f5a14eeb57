//===- model.cpp - Loading and running compiled models ----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_model_* and dist_rt_lr_at: checks a compiled model's
// descriptor, maps its parameter file and checks it against the declared
// parameters (copying them into private writable buffers for a model with a
// training step), builds the memref descriptors that the packed entry
// functions take, turns the output descriptors the inference entry returns
// into runtime-owned contiguous tensors, and runs training steps. The output
// rules (which buffers can be taken over, which must be copied and which
// must be freed) are described in dist_rt/model.h.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "dist_rt/kernels.h"
#include "dist_rt/model.h"

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <sys/auxv.h>
#include <unistd.h>

using dist_rt::describeType;
using dist_rt::formatShape;
using dist_rt::makeStatus;

namespace {

/// Largest rank a descriptor may declare; keeps descriptor sizes sane.
constexpr uint32_t kMaxRank = 1024;

constexpr double kPi = 3.14159265358979323846;

/// Number of 64-bit words of a ranked memref descriptor.
size_t descriptorWords(uint32_t rank) { return 3 + 2 * size_t{rank}; }

/// Writes a descriptor for a contiguous row-major array at `data`.
void writeDescriptor(int64_t *words, const void *data, uint32_t rank,
                     const int64_t *dims) {
  auto address = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
  words[0] = address;
  words[1] = address;
  words[2] = 0;
  int64_t stride = 1;
  for (uint32_t d = rank; d-- > 0;) {
    words[3 + d] = dims[d];
    words[3 + rank + d] = stride;
    stride *= dims[d];
  }
}

/// Product of `dims` times `elemSize`; false on overflow.
bool byteSize(uint32_t rank, const int64_t *dims, size_t elemSize,
              uint64_t &out) {
  uint64_t count = 1;
  bool overflow = false;
  for (uint32_t d = 0; d < rank; ++d)
    overflow |=
        __builtin_mul_overflow(count, static_cast<uint64_t>(dims[d]), &count);
  overflow |= __builtin_mul_overflow(count, uint64_t{elemSize}, &out);
  return !overflow && out <= SIZE_MAX;
}

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

/// Checks one declared tensor of the descriptor.
dist_rt_status_t checkTensorDesc(const dist_rt_model_desc_t &desc,
                                 const char *kind, uint32_t index,
                                 const dist_rt_tensor_desc_t &tensor) {
  const char *model = desc.name;
  if (!tensor.name)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': %s %" PRIu32 " has no name", model, kind,
                      index);
  if (dist_rt_dtype_size(tensor.dtype) == 0)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': %s '%s' has unknown dtype %" PRIu32, model,
                      kind, tensor.name, tensor.dtype);
  if (tensor.rank > kMaxRank)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': %s '%s' has rank %" PRIu32
                      " (at most %" PRIu32 " is supported)",
                      model, kind, tensor.name, tensor.rank, kMaxRank);
  if (tensor.rank != 0 && !tensor.dims)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': %s '%s' has rank %" PRIu32 " but no dims",
                      model, kind, tensor.name, tensor.rank);
  for (uint32_t d = 0; d < tensor.rank; ++d)
    if (tensor.dims[d] < DIST_RT_DYNAMIC_DIM)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s': %s '%s' has an invalid dim %" PRId64,
                        model, kind, tensor.name, tensor.dims[d]);
  return nullptr;
}

/// Checks `count` declared tensors of one kind ("input", ...).
dist_rt_status_t checkTensorGroup(const dist_rt_model_desc_t &desc,
                                  const char *kind, uint32_t count,
                                  const dist_rt_tensor_desc_t *tensors) {
  if (count != 0 && !tensors)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': %" PRIu32 " %ss are declared but the "
                      "array is NULL",
                      desc.name, count, kind);
  for (uint32_t i = 0; i < count; ++i)
    if (dist_rt_status_t status = checkTensorDesc(desc, kind, i, tensors[i]))
      return status;
  return nullptr;
}

/// Checks the training step of the descriptor (parameters and inputs are
/// checked already).
dist_rt_status_t checkTrainDesc(const dist_rt_model_desc_t &desc) {
  const dist_rt_train_desc_t &train = *desc.train;
  const char *model = desc.name;
  if (!train.entry)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': the training step has no entry function",
                      model);
  if (desc.num_params != 0 && !train.param_roles)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': the training step has no parameter roles",
                      model);
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    const dist_rt_tensor_desc_t &param = desc.params[i];
    uint8_t role = train.param_roles[i];
    if (role > DIST_RT_PARAM_STATE)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s': parameter '%s' has an invalid role %u",
                        model, param.name, unsigned{role});
    // Optimizer state is not in the parameter file, so nothing else could
    // tell its shape.
    for (uint32_t d = 0; role == DIST_RT_PARAM_STATE && d < param.rank; ++d)
      if (param.dims[d] == DIST_RT_DYNAMIC_DIM)
        return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                          "model '%s': optimizer state '%s' has a dynamic "
                          "shape %s",
                          model, param.name,
                          formatShape(param.rank, param.dims).c_str());
  }
  if (train.lr_schedule > DIST_RT_LR_WARMUP_LINEAR)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': unknown learning-rate schedule %" PRIu32,
                      model, train.lr_schedule);
  if (train.warmup_steps < 0 || !std::isfinite(train.lr))
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': invalid learning rate %g or warm-up "
                      "steps %" PRId64,
                      model, train.lr, train.warmup_steps);
  if (dist_rt_status_t status =
          checkTensorGroup(desc, "train input", train.num_inputs, train.inputs))
    return status;
  if (dist_rt_status_t status = checkTensorGroup(
          desc, "train output", train.num_outputs, train.outputs))
    return status;
  for (uint32_t i = 0; i < train.num_inputs; ++i)
    if (train.inputs[i].rank == 0)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s': train input '%s' has no batch "
                        "dimension (rank 0)",
                        model, train.inputs[i].name);
  if (train.num_outputs == 0 || train.outputs[0].dtype != DIST_RT_DTYPE_FLOAT ||
      train.outputs[0].rank != 0)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': the first output of the training step "
                      "must be the loss, a float32 scalar",
                      model);
  return nullptr;
}

/// Checks the descriptor before anything else looks at it.
/// The index of the mesh axis named "dp", or -1.
int64_t dpAxisOf(const dist_rt_model_desc_t &desc) {
  for (uint32_t a = 0;
       desc.mesh_shape && desc.mesh_axis_names && a < desc.num_mesh_axes; ++a)
    if (desc.mesh_axis_names[a] &&
        std::strcmp(desc.mesh_axis_names[a], "dp") == 0)
      return a;
  return -1;
}

dist_rt_status_t checkDesc(const dist_rt_model_desc_t &desc) {
  if (desc.abi_version != DIST_RT_MODEL_ABI_VERSION)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s' was compiled for runtime ABI version %" PRIu32
                      ", this runtime supports version %d",
                      desc.name ? desc.name : "?", desc.abi_version,
                      DIST_RT_MODEL_ABI_VERSION);
  if (!desc.name)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_create: the descriptor has no name");
  if (!desc.entry)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': the descriptor has no entry function",
                      desc.name);
  if (dist_rt_status_t status =
          checkTensorGroup(desc, "parameter", desc.num_params, desc.params))
    return status;
  if (dist_rt_status_t status =
          checkTensorGroup(desc, "input", desc.num_inputs, desc.inputs))
    return status;
  if (dist_rt_status_t status =
          checkTensorGroup(desc, "output", desc.num_outputs, desc.outputs))
    return status;
  if (desc.num_mesh_axes && !desc.mesh_shape)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': the descriptor has %" PRIu32
                      " mesh axes but no mesh shape",
                      desc.name, desc.num_mesh_axes);
  for (uint32_t i = 0; desc.param_shards && i < desc.num_params; ++i) {
    const dist_rt_param_shard_t &s = desc.param_shards[i];
    const dist_rt_tensor_desc_t &p = desc.params[i];
    if (s.axis < 0)
      continue;
    if (static_cast<uint32_t>(s.axis) >= desc.num_mesh_axes || s.dim < 0 ||
        static_cast<uint32_t>(s.dim) >= p.rank || s.blocks < 1 ||
        p.dims[s.dim] < 0 || p.dims[s.dim] % s.blocks != 0)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s': parameter '%s' has an invalid split "
                        "(axis %d, dimension %d, %d blocks)",
                        desc.name, p.name, s.axis, s.dim, s.blocks);
  }
  if (desc.infer_batch_split > 1)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': infer_batch_split must be 0 or 1, got "
                      "%" PRIu32,
                      desc.name, desc.infer_batch_split);
  if (desc.infer_batch_split) {
    if (dpAxisOf(desc) < 0)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s' splits its inference batch over a "
                        "data-parallel axis, but its mesh has no 'dp' axis",
                        desc.name);
    int64_t dp = desc.mesh_shape[dpAxisOf(desc)];
    if (desc.num_inputs == 0)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s' splits its inference batch but has no "
                        "inputs",
                        desc.name);
    for (uint32_t g = 0; g < 2; ++g) {
      uint32_t count = g ? desc.num_outputs : desc.num_inputs;
      const dist_rt_tensor_desc_t *group = g ? desc.outputs : desc.inputs;
      for (uint32_t i = 0; i < count; ++i)
        if (group[i].rank == 0 || (group[i].dims[0] != DIST_RT_DYNAMIC_DIM &&
                                   group[i].dims[0] % dp != 0))
          return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                            "model '%s': %s '%s' has no batch dimension that "
                            "splits over dp=%lld",
                            desc.name, g ? "output" : "input", group[i].name,
                            static_cast<long long>(dp));
    }
  }
  return desc.train ? checkTrainDesc(desc) : nullptr;
}

/// One output descriptor as returned by the entry function.
struct ReturnedOutput {
  char *allocated;
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;
  /// `allocated` is a live allocator block that the entry function created
  /// (not an input's buffer), so the runtime must free or keep it.
  bool fresh;
};

/// The signature and argument buffers of one entry function: inference, or
/// the training step. The parameter descriptors are shared by both and live
/// in the model.
struct EntryCall {
  /// What the inputs are called in messages: "input" or "train input".
  const char *inputKind = "input";
  uint32_t numInputs = 0;
  const dist_rt_tensor_desc_t *inputs = nullptr;
  uint32_t numOutputs = 0;
  const dist_rt_tensor_desc_t *outputs = nullptr;
  /// Descriptors of the inputs, then of any scalar arguments, back to back.
  std::vector<int64_t> argWords;
  /// Start of each input's (then scalar's) descriptor in argWords.
  std::vector<size_t> argOffsets;
  /// Buffer the entry function writes the output descriptors into.
  std::vector<int64_t> resultWords;
  /// Start of each output's descriptor in resultWords.
  std::vector<size_t> resultOffsets;
  /// The pointer array passed to the entry function: parameters, inputs,
  /// scalars, then resultWords.
  std::vector<void *> args;
  /// A dimension that must have the size of an earlier one the model names
  /// alike (dist_rt_tensor_desc_t::dim_names): input, dim, earlier input,
  /// earlier dim. Found once, when the call is laid out.
  struct SameDim {
    uint32_t input, dim, firstInput, firstDim;
  };
  std::vector<SameDim> sameDims;
};

} // namespace

std::string dist_rt::modelDirectory(const dist_rt_model_desc_t *desc) {
  return binaryDirectory(desc);
}

/// A loaded model. See dist_rt/model.h.
struct dist_rt_model {
  const dist_rt_model_desc_t *desc = nullptr;
  /// The mapped parameter file; NULL for a model with a training step once
  /// its parameters are copied.
  dist_rt_params_t params = nullptr;
  /// Descriptors of the parameters, back to back; they point into the
  /// mapping, or into ownedParams for a model with a training step.
  std::vector<int64_t> paramWords;
  /// Start of each parameter's descriptor in paramWords.
  std::vector<size_t> paramOffsets;
  /// Private, writable, 64-byte-aligned copies of every parameter (training
  /// models only). Not allocator blocks, so an output aliasing one is never
  /// taken for a fresh block.
  std::vector<std::unique_ptr<void, dist_rt::FreeDeleter>> ownedParams;

  EntryCall inference;
  EntryCall training;

  /// Inference split over the dp axis (desc->infer_batch_split): then
  /// `inference` takes the rows of one dp rank (its descriptors are
  /// sliceInputs / sliceOutputs) and wholeInference, never called, checks
  /// the whole inputs against the declared signature.
  EntryCall wholeInference;
  int64_t dpAxis = -1;
  /// The dp size the model was compiled for.
  int64_t splitDp = 1;
  std::vector<dist_rt_tensor_desc_t> sliceInputs, sliceOutputs;
  std::vector<int64_t> sliceDims;
  /// Scratch of a split run: the tensors of one slice and their dims, and
  /// the bytes exchanged by the gather.
  std::vector<dist_rt_tensor_t> sliceTensors;
  std::vector<int64_t> sliceTensorDims;
  std::vector<char> gatherSend, gatherRecv;
  /// The learning rate and step number of the training step in progress,
  /// behind the two rank-0 descriptors of training.argWords.
  float trainScalars[2] = {0, 0};

  /// The outputs of one run: tensors, their dims (back to back) and the
  /// allocator blocks they own.
  struct Outputs {
    std::vector<dist_rt_tensor_t> tensors;
    std::vector<int64_t> dims;
    std::vector<void *> blocks;

    void release() {
      for (void *block : blocks)
        _mlir_memref_to_llvm_free(block);
      blocks.clear();
      tensors.clear();
    }
  };
  /// Returned by the last successful run.
  Outputs current;
  /// Being built by the run in progress; kept to reuse its capacity.
  Outputs pending;
  /// The whole outputs a split run assembles from its slices.
  Outputs assembled;
  /// Scratch for one call: allocator blocks returned by the entry function.
  std::vector<void *> returnedBlocks;
  /// Scratch for one call: the output descriptors as returned.
  std::vector<ReturnedOutput> returned;
  /// Scratch for one run: contiguous strides of an output.
  std::vector<int64_t> contiguousStrides;

  ~dist_rt_model() {
    current.release();
    pending.release();
    assembled.release();
    dist_rt_params_release(params);
  }
};

namespace {

/// Returns the role of parameter `index`; every parameter of an
/// inference-only model is read from the file like a frozen one.
uint8_t paramRole(const dist_rt_model_desc_t &desc, uint32_t index) {
  return desc.train ? desc.train->param_roles[index]
                    : uint8_t{DIST_RT_PARAM_FROZEN};
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
  if (info.dtype != param.dtype)
    return makeStatus(DIST_RT_ERROR_FORMAT,
                      "parameter '%s' in %s has dtype %s, the model "
                      "expects %s",
                      param.name, path.c_str(), dist_rt_dtype_name(info.dtype),
                      dist_rt_dtype_name(param.dtype));
  bool sameShape = info.rank == param.rank;
  for (uint32_t d = 0; sameShape && d < param.rank; ++d)
    sameShape =
        expectDims[d] == DIST_RT_DYNAMIC_DIM || expectDims[d] == info.dims[d];
  if (!sameShape)
    return makeStatus(DIST_RT_ERROR_FORMAT,
                      "parameter '%s' in %s has shape %s, the model "
                      "expects %s",
                      param.name, path.c_str(),
                      formatShape(info.rank, info.dims).c_str(),
                      formatShape(param.rank, expectDims).c_str());
  return nullptr;
}

/// Resolves the path of the parameter file (see dist_rt_model_options_t)
/// into `path` and maps the file.
dist_rt_status_t openParamFile(dist_rt_model &model,
                               const dist_rt_model_options_t &options,
                               std::string &path) {
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

/// Maps the parameter file and checks every declared parameter against it;
/// fills the parameter descriptors. A model with a training step gets
/// private copies of its parameters (zeros for optimizer state, which is
/// not in the file) and lets go of the mapping.
dist_rt_status_t loadParams(dist_rt_model &model,
                            const dist_rt_model_options_t &options) {
  const dist_rt_model_desc_t &desc = *model.desc;
  bool inFile = false;
  for (uint32_t i = 0; i < desc.num_params; ++i)
    inFile |= paramRole(desc, i) != DIST_RT_PARAM_STATE;
  std::string path;
  if (inFile)
    if (dist_rt_status_t status = openParamFile(model, options, path))
      return status;

  for (uint32_t i = 0; i < desc.num_params; ++i) {
    const dist_rt_tensor_desc_t &param = desc.params[i];
    const void *data = nullptr;
    const int64_t *dims = param.dims;
    if (paramRole(desc, i) != DIST_RT_PARAM_STATE) {
      dist_rt_param_info_t info;
      std::vector<int64_t> full = dist_rt::paramFullDims(desc, i);
      if (dist_rt_status_t status =
              findParam(model, path, param, full.data(), info))
        return status;
      data = info.data;
      dims = info.dims;
    }
    bool split = dist_rt::paramShard(desc, i).axis >= 0;
    if (desc.train || split) {
      void *copy = nullptr;
      // This rank's part of a split parameter (optimizer state: zeros).
      if (dist_rt_status_t status =
              copyParam(model, param, split ? nullptr : data, param.dims, copy))
        return status;
      if (split && data)
        dist_rt::sliceParam(desc, i, data, copy);
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

/// Lays out the buffers of `call`, whose signature is set, for its inputs
/// followed by `numScalars` rank-0 arguments.
void layOutCall(dist_rt_model &model, EntryCall &call, size_t numScalars) {
  size_t words = 0;
  for (uint32_t i = 0; i < call.numInputs; ++i) {
    call.argOffsets.push_back(words);
    words += descriptorWords(call.inputs[i].rank);
  }
  for (size_t s = 0; s < numScalars; ++s) {
    call.argOffsets.push_back(words);
    words += descriptorWords(0);
  }
  call.argWords.assign(words, 0);
  words = 0;
  for (uint32_t o = 0; o < call.numOutputs; ++o) {
    call.resultOffsets.push_back(words);
    words += descriptorWords(call.outputs[o].rank);
  }
  // One spare word so that an entry without outputs still gets a valid
  // pointer.
  call.resultWords.assign(words + 1, 0);
  for (size_t offset : model.paramOffsets)
    call.args.push_back(model.paramWords.data() + offset);
  for (size_t offset : call.argOffsets)
    call.args.push_back(call.argWords.data() + offset);
  call.args.push_back(call.resultWords.data());
  // Each named dimension after the first of its name.
  std::map<std::string, std::pair<uint32_t, uint32_t>> first;
  for (uint32_t i = 0; i < call.numInputs; ++i) {
    const char *const *names = call.inputs[i].dim_names;
    for (uint32_t d = 0; names && d < call.inputs[i].rank; ++d) {
      if (!names[d])
        continue;
      auto [it, fresh] = first.insert({names[d], {i, d}});
      if (!fresh)
        call.sameDims.push_back({i, d, it->second.first, it->second.second});
    }
  }
}

/// Fails when the job runs alone (one rank) and a parameter the run needs
/// is split over a mesh axis of more than one rank: its other parts live
/// on ranks that do not exist. Inference needs every parameter but the
/// optimizer state; training needs all of them.
dist_rt_status_t checkSplitsRunAlone(const dist_rt_model_desc_t &desc,
                                     bool training) {
  if (dist_rt_mesh_world_size() != 1)
    return nullptr;
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    dist_rt_param_shard_t s = dist_rt::paramShard(desc, i);
    if (s.axis < 0 || desc.mesh_shape[s.axis] == 1 ||
        (!training && paramRole(desc, i) == DIST_RT_PARAM_STATE))
      continue;
    int64_t ranks = 1;
    std::string mesh;
    for (uint32_t a = 0; a < desc.num_mesh_axes; ++a) {
      ranks *= desc.mesh_shape[a];
      const char *name =
          desc.mesh_axis_names ? desc.mesh_axis_names[a] : nullptr;
      mesh += (a ? "," : "") +
              std::string(name ? name : "axis" + std::to_string(a)) + "=" +
              std::to_string(desc.mesh_shape[a]);
    }
    const char *axis = desc.mesh_axis_names && desc.mesh_axis_names[s.axis]
                           ? desc.mesh_axis_names[s.axis]
                           : "?";
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s' is compiled for the mesh %s and splits "
                      "parameter '%s' over the %lld ranks of its %s axis: "
                      "run it with %lld ranks (e.g. mpirun -np %lld); a "
                      "process alone cannot hold the other ranks' parts",
                      desc.name, mesh.c_str(), desc.params[i].name,
                      static_cast<long long>(desc.mesh_shape[s.axis]), axis,
                      static_cast<long long>(ranks),
                      static_cast<long long>(ranks));
  }
  return nullptr;
}

dist_rt_status_t createModel(const dist_rt_model_desc_t *desc,
                             const dist_rt_model_options_t *userOptions,
                             dist_rt_model_t *out_model) {
  if (dist_rt_status_t status = checkDesc(*desc))
    return status;
  dist_rt_model_options_t options;
  dist_rt_model_options_initialize(&options);
  if (userOptions)
    options = *userOptions;
  if (options.num_threads < 0)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': the thread count must not be negative "
                      "(got %" PRId32 ")",
                      desc->name, options.num_threads);
  if (desc->num_mesh_axes)
    if (dist_rt_status_t status = dist_rt_mesh_setup(
            desc->num_mesh_axes, desc->mesh_shape, desc->mesh_axis_names))
      return status;
  // Split parameters have parts on the other ranks of their axis: a
  // process alone cannot run the model (optimizer state: cannot train it).
  if (dist_rt_status_t status = checkSplitsRunAlone(*desc, /*training=*/false))
    return status;

  std::unique_ptr<dist_rt_model> model(new dist_rt_model());
  model->desc = desc;
  size_t words = 0;
  for (uint32_t i = 0; i < desc->num_params; ++i) {
    model->paramOffsets.push_back(words);
    words += descriptorWords(desc->params[i].rank);
  }
  model->paramWords.assign(words, 0);

  EntryCall &inference = model->inference;
  inference.numInputs = desc->num_inputs;
  inference.inputs = desc->inputs;
  inference.numOutputs = desc->num_outputs;
  inference.outputs = desc->outputs;
  if (desc->infer_batch_split) {
    EntryCall &whole = model->wholeInference;
    whole = inference;
    layOutCall(*model, whole, 0);
    // The entry takes one dp rank's rows: a static batch B is B / dp.
    model->dpAxis = dpAxisOf(*desc);
    model->splitDp = desc->mesh_shape[model->dpAxis];
    size_t dims = 0;
    for (uint32_t i = 0; i < desc->num_inputs; ++i)
      dims += desc->inputs[i].rank;
    for (uint32_t o = 0; o < desc->num_outputs; ++o)
      dims += desc->outputs[o].rank;
    model->sliceDims.reserve(dims);
    auto slice = [&](const dist_rt_tensor_desc_t &t) {
      const int64_t *start = model->sliceDims.data() + model->sliceDims.size();
      for (uint32_t d = 0; d < t.rank; ++d)
        model->sliceDims.push_back(d == 0 && t.dims[0] != DIST_RT_DYNAMIC_DIM
                                       ? t.dims[0] / model->splitDp
                                       : t.dims[d]);
      dist_rt_tensor_desc_t r = t;
      r.dims = start;
      return r;
    };
    for (uint32_t i = 0; i < desc->num_inputs; ++i)
      model->sliceInputs.push_back(slice(desc->inputs[i]));
    for (uint32_t o = 0; o < desc->num_outputs; ++o)
      model->sliceOutputs.push_back(slice(desc->outputs[o]));
    inference.inputs = model->sliceInputs.data();
    inference.outputs = model->sliceOutputs.data();
  }
  layOutCall(*model, inference, 0);
  uint32_t maxOutputs = desc->num_outputs;
  if (const dist_rt_train_desc_t *train = desc->train) {
    EntryCall &training = model->training;
    training.inputKind = "train input";
    training.numInputs = train->num_inputs;
    training.inputs = train->inputs;
    training.numOutputs = train->num_outputs;
    training.outputs = train->outputs;
    layOutCall(*model, training, 2);
    for (uint32_t s = 0; s < 2; ++s)
      writeDescriptor(training.argWords.data() +
                          training.argOffsets[train->num_inputs + s],
                      &model->trainScalars[s], 0, nullptr);
    maxOutputs = std::max(maxOutputs, train->num_outputs);
  }

  size_t outputDims = 0;
  for (uint32_t o = 0; o < desc->num_outputs; ++o)
    outputDims += desc->outputs[o].rank;
  for (dist_rt_model::Outputs *outputs : {&model->current, &model->pending}) {
    outputs->tensors.reserve(desc->num_outputs);
    outputs->dims.reserve(outputDims);
    outputs->blocks.reserve(desc->num_outputs);
  }
  model->returnedBlocks.reserve(maxOutputs);
  model->returned.reserve(maxOutputs);

  if (dist_rt_status_t status = loadParams(*model, options))
    return status;
  dist_rt_set_num_threads(options.num_threads);
  *out_model = model.release();
  return nullptr;
}

/// Fails when two dimensions that the model names alike (ONNX dim_param,
/// dist_rt_tensor_desc_t::dim_names) have different sizes in `inputs`
/// (already checked against their descriptors): the generated code takes
/// them to be equal, and would read past the smaller input.
dist_rt_status_t checkNamedDims(const EntryCall &call,
                                const dist_rt_tensor_t *inputs) {
  for (const EntryCall::SameDim &s : call.sameDims) {
    int64_t size = inputs[s.input].dims[s.dim];
    int64_t want = inputs[s.firstInput].dims[s.firstDim];
    if (size == want)
      continue;
    const char *raw = call.inputs[s.input].dim_names[s.dim];
    char name[128];
    dist_rt::escapeForMessage(raw, std::strlen(raw), name, sizeof(name));
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s '%s': dimension %" PRIu32 " ('%s') is %" PRId64
                      ", but %s '%s' has '%s' = %" PRId64
                      " in dimension %" PRIu32 " (the model names both '%s')",
                      call.inputKind, call.inputs[s.input].name, s.dim, name,
                      size, call.inputKind, call.inputs[s.firstInput].name,
                      name, want, s.firstDim, name);
  }
  return nullptr;
}

/// Checks the inputs of a call and writes their descriptors.
dist_rt_status_t bindInputs(const dist_rt_model &model, EntryCall &call,
                            const dist_rt_tensor_t *inputs, size_t numInputs) {
  const char *modelName = model.desc->name;
  const char *kind = call.inputKind;
  if (numInputs != call.numInputs)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s' takes %" PRIu32 " %s%s, got %zu", modelName,
                      call.numInputs, kind, call.numInputs == 1 ? "" : "s",
                      numInputs);
  if (numInputs != 0 && !inputs)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': inputs is NULL", modelName);
  for (uint32_t i = 0; i < call.numInputs; ++i) {
    const dist_rt_tensor_desc_t &expected = call.inputs[i];
    const dist_rt_tensor_t &given = inputs[i];
    if (given.rank != 0 && !given.dims)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "%s '%s': dims is NULL for rank %" PRIu32, kind,
                        expected.name, given.rank);
    bool matches = given.dtype == expected.dtype && given.rank == expected.rank;
    for (uint32_t d = 0; d < given.rank; ++d) {
      if (given.dims[d] < 0)
        matches = false;
      else if (matches && expected.dims[d] != DIST_RT_DYNAMIC_DIM &&
               expected.dims[d] != given.dims[d])
        matches = false;
    }
    if (!matches)
      return makeStatus(
          DIST_RT_ERROR_INVALID_ARGUMENT, "%s '%s': expected shape %s, got %s",
          kind, expected.name,
          describeType(expected.dtype, expected.rank, expected.dims).c_str(),
          describeType(given.dtype, given.rank, given.dims).c_str());
    uint64_t nbytes = 0;
    if (!byteSize(given.rank, given.dims, dist_rt_dtype_size(given.dtype),
                  nbytes))
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "%s '%s': shape %s is too large", kind, expected.name,
                        formatShape(given.rank, given.dims).c_str());
    if (nbytes != 0 && !given.data)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT, "%s '%s': data is NULL",
                        kind, expected.name);
    writeDescriptor(call.argWords.data() + call.argOffsets[i], given.data,
                    given.rank, given.dims);
  }
  return checkNamedDims(call, inputs);
}

ReturnedOutput readOutput(const EntryCall &call, uint32_t index,
                          const dist_rt_tensor_t *inputs) {
  const int64_t *words = call.resultWords.data() + call.resultOffsets[index];
  uint32_t rank = call.outputs[index].rank;
  ReturnedOutput out;
  out.allocated = reinterpret_cast<char *>(static_cast<intptr_t>(words[0]));
  out.aligned = reinterpret_cast<char *>(static_cast<intptr_t>(words[1]));
  out.offset = words[2];
  out.sizes = words + 3;
  out.strides = words + 3 + rank;
  out.fresh = dist_rt_alloc_owns(out.allocated) != 0;
  // An input may itself be an allocator block (say, an earlier output fed
  // back in); an output aliasing it belongs to the caller, not to us.
  for (uint32_t i = 0; out.fresh && i < call.numInputs; ++i)
    if (inputs[i].data == out.allocated)
      out.fresh = false;
  return out;
}

/// Frees every distinct block in `blocks` that is not in `keep`, and clears
/// `blocks`.
void freeBlocks(std::vector<void *> &blocks, const std::vector<void *> &keep) {
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  for (void *block : blocks)
    if (std::find(keep.begin(), keep.end(), block) == keep.end())
      _mlir_memref_to_llvm_free(block);
  blocks.clear();
}

/// Reads the output descriptors that the entry function of `call` returned
/// into model.returned, the fresh blocks among them into
/// model.returnedBlocks, and checks them against the declared shapes. On
/// failure every fresh block is freed.
dist_rt_status_t receiveOutputs(dist_rt_model &model, const EntryCall &call,
                                const dist_rt_tensor_t *inputs) {
  std::vector<ReturnedOutput> &returned = model.returned;
  std::vector<void *> &fresh = model.returnedBlocks;
  returned.clear();
  fresh.clear();
  for (uint32_t o = 0; o < call.numOutputs; ++o) {
    returned.push_back(readOutput(call, o, inputs));
    if (returned.back().fresh)
      fresh.push_back(returned.back().allocated);
  }

  // The compiled code must return what it declared.
  for (uint32_t o = 0; o < call.numOutputs; ++o) {
    const dist_rt_tensor_desc_t &declared = call.outputs[o];
    const ReturnedOutput &output = returned[o];
    bool matches = true;
    for (uint32_t d = 0; d < declared.rank; ++d)
      matches &=
          output.sizes[d] >= 0 && (declared.dims[d] == DIST_RT_DYNAMIC_DIM ||
                                   declared.dims[d] == output.sizes[d]);
    uint64_t nbytes = 0;
    if (!matches || !byteSize(declared.rank, output.sizes,
                              dist_rt_dtype_size(declared.dtype), nbytes)) {
      freeBlocks(fresh, {});
      return makeStatus(DIST_RT_ERROR_INTERNAL,
                        "model '%s': output '%s' was returned with shape %s, "
                        "but %s is declared",
                        model.desc->name, declared.name,
                        formatShape(declared.rank, output.sizes).c_str(),
                        formatShape(declared.rank, declared.dims).c_str());
    }
  }
  return nullptr;
}

/// Frees everything a failed collectOutputs holds: the blocks the entry
/// function returned and the copies made so far, each once.
void abandonOutputs(dist_rt_model &model) {
  std::vector<void *> &all = model.returnedBlocks;
  all.insert(all.end(), model.pending.blocks.begin(),
             model.pending.blocks.end());
  model.pending.blocks.clear();
  model.pending.tensors.clear();
  freeBlocks(all, {});
}

/// Turns the output descriptors the inference entry returned into
/// contiguous runtime-owned tensors in model.pending. Takes over a returned
/// block when it is fresh, not shared with another output and contiguous;
/// copies everything else and frees the fresh blocks it did not take over.
dist_rt_status_t collectOutputs(dist_rt_model &model,
                                const dist_rt_tensor_t *inputs) {
  const EntryCall &call = model.inference;
  if (dist_rt_status_t status = receiveOutputs(model, call, inputs))
    return status;
  const std::vector<ReturnedOutput> &returned = model.returned;
  size_t totalRank = 0;
  for (uint32_t o = 0; o < call.numOutputs; ++o)
    totalRank += call.outputs[o].rank;

  dist_rt_model::Outputs &pending = model.pending;
  pending.release();
  pending.dims.assign(totalRank, 0);
  size_t dimPos = 0;
  for (uint32_t o = 0; o < call.numOutputs; ++o) {
    const dist_rt_tensor_desc_t &declared = call.outputs[o];
    const ReturnedOutput &output = returned[o];
    uint32_t rank = declared.rank;
    size_t elemSize = dist_rt_dtype_size(declared.dtype);
    int64_t *dims = pending.dims.data() + dimPos;
    dimPos += rank;
    std::copy(output.sizes, output.sizes + rank, dims);
    uint64_t nbytes = 0;
    byteSize(rank, dims, elemSize, nbytes);
    char *source =
        output.aligned + output.offset * static_cast<int64_t>(elemSize);

    bool shared = false;
    for (uint32_t q = 0; output.fresh && q < call.numOutputs; ++q)
      shared |= q != o && returned[q].fresh &&
                returned[q].allocated == output.allocated;
    void *data;
    if (output.fresh && !shared &&
        dist_rt::isContiguous(rank, output.sizes, output.strides)) {
      data = source;
      pending.blocks.push_back(output.allocated);
    } else {
      data = _mlir_memref_to_llvm_alloc(static_cast<size_t>(nbytes));
      if (!data) {
        abandonOutputs(model);
        return makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY,
                          "model '%s': out of memory copying output '%s' "
                          "(%" PRIu64 " bytes)",
                          model.desc->name, declared.name, nbytes);
      }
      pending.blocks.push_back(data);
      std::vector<int64_t> &strides = model.contiguousStrides;
      strides.resize(rank);
      int64_t stride = 1;
      for (uint32_t d = rank; d-- > 0;) {
        strides[d] = stride;
        stride *= dims[d];
      }
      dist_rt::copyStrided(elemSize, rank, dims, source, output.strides,
                           static_cast<char *>(data), strides.data());
    }
    pending.tensors.push_back(
        dist_rt_tensor_t{declared.dtype, rank, rank ? dims : nullptr, data});
  }
  freeBlocks(model.returnedBlocks, pending.blocks);
  return nullptr;
}

/// Bytes of one row (everything after dimension 0) of a tensor.
uint64_t rowBytes(uint32_t dtype, uint32_t rank, const int64_t *dims) {
  uint64_t bytes = dist_rt_dtype_size(dtype);
  for (uint32_t d = 1; d < rank; ++d)
    bytes *= static_cast<uint64_t>(dims[d]);
  return bytes;
}

/// The status of a run whose generated code reported an error (an index
/// out of range): the data given to the model is invalid. A training step
/// (`step` > 0) is named, its batch being the culprit.
dist_rt_status_t generatedCodeError(const dist_rt_model_desc_t &desc,
                                    dist_rt::RunErrors &errors,
                                    int64_t step = 0) {
  std::lock_guard<std::mutex> lock(errors.mutex);
  if (step > 0)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': step %" PRId64 ": %s", desc.name, step,
                      errors.message.c_str());
  return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT, "model '%s': %s", desc.name,
                    errors.message.c_str());
}

/// Runs the inference entry on rows [lo, hi) of `inputs` and copies the
/// rows of every output into model.assembled at row lo, allocating the
/// whole outputs ([batch, ...]) on the first slice.
dist_rt_status_t runSlice(dist_rt_model &model, const dist_rt_tensor_t *inputs,
                          int64_t batch, int64_t lo, int64_t hi, bool first) {
  EntryCall &call = model.inference;
  const dist_rt_model_desc_t &desc = *model.desc;
  std::vector<dist_rt_tensor_t> &sliced = model.sliceTensors;
  std::vector<int64_t> &dims = model.sliceTensorDims;
  sliced.assign(inputs, inputs + call.numInputs);
  dims.clear();
  for (uint32_t i = 0; i < call.numInputs; ++i)
    dims.insert(dims.end(), inputs[i].dims, inputs[i].dims + inputs[i].rank);
  size_t pos = 0;
  for (uint32_t i = 0; i < call.numInputs; ++i) {
    dist_rt_tensor_t &t = sliced[i];
    dims[pos] = hi - lo;
    t.dims = dims.data() + pos;
    pos += t.rank;
    if (t.data)
      t.data = static_cast<char *>(t.data) +
               static_cast<uint64_t>(lo) * rowBytes(t.dtype, t.rank, t.dims);
  }
  if (dist_rt_status_t status =
          bindInputs(model, call, sliced.data(), sliced.size()))
    return status;
  std::fill(call.resultWords.begin(), call.resultWords.end(), 0);
  dist_rt::RunErrors errors;
  {
    dist_rt::RunErrorScope scope(errors);
    desc.entry(call.args.data());
  }
  if (dist_rt_status_t status = collectOutputs(model, sliced.data()))
    return status;
  if (errors.failed) {
    model.pending.release();
    return generatedCodeError(desc, errors);
  }

  dist_rt_model::Outputs &pending = model.pending;
  dist_rt_model::Outputs &whole = model.assembled;
  if (first) {
    whole.release();
    whole.dims.clear();
    for (const dist_rt_tensor_t &t : pending.tensors)
      whole.dims.insert(whole.dims.end(), t.dims, t.dims + t.rank);
    size_t at = 0;
    for (const dist_rt_tensor_t &t : pending.tensors) {
      whole.dims[at] = batch;
      uint64_t nbytes = 0;
      byteSize(t.rank, whole.dims.data() + at, dist_rt_dtype_size(t.dtype),
               nbytes);
      void *data = _mlir_memref_to_llvm_alloc(static_cast<size_t>(nbytes));
      if (!data && nbytes) {
        pending.release();
        return makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY,
                          "model '%s': out of memory for the outputs of the "
                          "whole batch (%" PRIu64 " bytes)",
                          desc.name, nbytes);
      }
      if (data)
        whole.blocks.push_back(data);
      whole.tensors.push_back(
          dist_rt_tensor_t{t.dtype, t.rank, whole.dims.data() + at, data});
      at += t.rank;
    }
  }
  for (uint32_t o = 0; o < call.numOutputs; ++o) {
    const dist_rt_tensor_t &part = pending.tensors[o];
    const dist_rt_tensor_t &into = whole.tensors[o];
    bool same = part.dims[0] == hi - lo;
    for (uint32_t d = 1; d < part.rank; ++d)
      same &= part.dims[d] == into.dims[d];
    if (!same) {
      std::string got = formatShape(part.rank, part.dims);
      pending.release();
      return makeStatus(DIST_RT_ERROR_INTERNAL,
                        "model '%s': output '%s' of rows [%lld, %lld) was "
                        "returned with shape %s, which does not fit the "
                        "rows of a batch of %lld",
                        desc.name, call.outputs[o].name,
                        static_cast<long long>(lo), static_cast<long long>(hi),
                        got.c_str(), static_cast<long long>(batch));
    }
    uint64_t row = rowBytes(part.dtype, part.rank, part.dims);
    if (row && hi > lo)
      std::memcpy(static_cast<char *>(into.data) +
                      static_cast<uint64_t>(lo) * row,
                  part.data, static_cast<size_t>(row * (hi - lo)));
  }
  pending.release();
  return nullptr;
}

/// Gathers the rows every dp rank computed into model.assembled on every
/// rank. Rank r of `ranks` holds rows [batch * r / ranks, batch * (r + 1) /
/// ranks); each rank's part travels padded to the largest part (rounded up
/// to 4 bytes, the unit of the mesh gather).
dist_rt_status_t gatherSlices(dist_rt_model &model, int64_t batch,
                              int64_t ranks, int64_t coord) {
  auto lo = [&](int64_t r) { return batch * r / ranks; };
  int64_t maxRows = (batch + ranks - 1) / ranks;
  for (dist_rt_tensor_t &t : model.assembled.tensors) {
    uint64_t row = rowBytes(t.dtype, t.rank, t.dims);
    uint64_t slot = (row * static_cast<uint64_t>(maxRows) + 3) / 4 * 4;
    if (slot == 0)
      continue;
    model.gatherSend.assign(static_cast<size_t>(slot), 0);
    model.gatherRecv.resize(static_cast<size_t>(slot * ranks));
    char *data = static_cast<char *>(t.data);
    std::memcpy(model.gatherSend.data(),
                data + static_cast<uint64_t>(lo(coord)) * row,
                static_cast<size_t>(row * (lo(coord + 1) - lo(coord))));
    if (dist_rt_status_t status = dist_rt::meshGatherBytes(
            model.dpAxis, model.gatherSend.data(), model.gatherRecv.data(),
            static_cast<int64_t>(slot)))
      return status;
    for (int64_t r = 0; r < ranks; ++r)
      std::memcpy(data + static_cast<uint64_t>(lo(r)) * row,
                  model.gatherRecv.data() + static_cast<uint64_t>(r) * slot,
                  static_cast<size_t>(row * (lo(r + 1) - lo(r))));
  }
  return nullptr;
}

/// Inference split over the dp axis (desc->infer_batch_split): each dp
/// rank runs its rows and the rows are gathered; alone, the process runs
/// the slices of a static batch one after another. A dynamic batch runs
/// whole (as without a split) alone, when the inputs disagree on it (they
/// may broadcast) or when it has fewer rows than there are ranks.
dist_rt_status_t runSplitModel(dist_rt_model &model,
                               const dist_rt_tensor_t *inputs, size_t numInputs,
                               const dist_rt_tensor_t **out_outputs,
                               bool &ranWhole) {
  ranWhole = false;
  const dist_rt_model_desc_t &desc = *model.desc;
  if (dist_rt_status_t status =
          bindInputs(model, model.wholeInference, inputs, numInputs))
    return status;
  int64_t batch = inputs[0].dims[0];
  bool sameBatch = true;
  for (size_t i = 1; i < numInputs; ++i)
    sameBatch &= inputs[i].dims[0] == batch;
  bool staticBatch = desc.inputs[0].dims[0] != DIST_RT_DYNAMIC_DIM;
  int64_t ranks = dist_rt_mesh_axis_size("dp");
  int64_t coord = dist_rt_mesh_axis_coord("dp");
  if (!staticBatch && (ranks == 1 || !sameBatch || batch < ranks)) {
    ranWhole = true;
    return nullptr;
  }
  int64_t slices = staticBatch ? model.splitDp : ranks;
  bool first = true;
  for (int64_t c = 0; c < slices; ++c) {
    if (ranks > 1 && c != coord)
      continue;
    if (dist_rt_status_t status =
            runSlice(model, inputs, batch, batch * c / slices,
                     batch * (c + 1) / slices, first)) {
      model.assembled.release();
      return status;
    }
    first = false;
  }
  if (ranks > 1)
    if (dist_rt_status_t status = gatherSlices(model, batch, ranks, coord)) {
      model.assembled.release();
      return status;
    }
  std::swap(model.current, model.assembled);
  model.assembled.release();
  *out_outputs = model.current.tensors.data();
  return nullptr;
}

dist_rt_status_t runModel(dist_rt_model &model, const dist_rt_tensor_t *inputs,
                          size_t numInputs,
                          const dist_rt_tensor_t **out_outputs) {
  if (model.desc->infer_batch_split) {
    bool ranWhole = false;
    dist_rt_status_t status =
        runSplitModel(model, inputs, numInputs, out_outputs, ranWhole);
    if (status || !ranWhole)
      return status;
  }
  EntryCall &call = model.inference;
  if (dist_rt_status_t status = bindInputs(model, call, inputs, numInputs))
    return status;
  std::fill(call.resultWords.begin(), call.resultWords.end(), 0);
  dist_rt::RunErrors errors;
  {
    dist_rt::RunErrorScope scope(errors);
    model.desc->entry(call.args.data());
  }
  if (dist_rt_status_t status = collectOutputs(model, inputs))
    return status;
  if (errors.failed) {
    model.pending.release();
    return generatedCodeError(*model.desc, errors);
  }
  // The previous outputs may have been this run's inputs, so they are only
  // released now.
  std::swap(model.current, model.pending);
  model.pending.release();
  *out_outputs = model.current.tensors.data();
  return nullptr;
}

/// Fails when an element of the class-index input "label" of a
/// cross_entropy step is neither a class nor the ignore index (see
/// dist_rt_train_desc_t::label_classes), naming the first such element.
dist_rt_status_t checkLabels(const dist_rt_model_desc_t &desc,
                             const EntryCall &call,
                             const dist_rt_tensor_t *inputs) {
  for (uint32_t i = 0; i < call.numInputs; ++i) {
    if (std::strcmp(call.inputs[i].name, "label") != 0)
      continue;
    const dist_rt_tensor_t &t = inputs[i];
    int64_t bad = dist_rt::firstBadLabel(*desc.train, t);
    if (bad < 0)
      continue;
    // The element's index, row-major.
    std::string where;
    int64_t rest = bad;
    for (uint32_t d = t.rank; d-- > 0;) {
      int64_t extent = std::max<int64_t>(t.dims[d], 1);
      where.insert(0, (d ? ", " : "") + std::to_string(rest % extent));
      rest /= extent;
    }
    return makeStatus(
        DIST_RT_ERROR_INVALID_ARGUMENT,
        "train input 'label': element [%s] is %" PRId64
        ", not a class in [0, %" PRId64 ") nor the ignore index %" PRId64,
        where.c_str(), static_cast<const int64_t *>(t.data)[bad],
        desc.train->label_classes, desc.train->label_ignore_index);
  }
  return nullptr;
}

dist_rt_status_t trainStep(dist_rt_model &model, const dist_rt_tensor_t *inputs,
                           size_t numInputs, float lr, int64_t step,
                           float *out_loss) {
  const dist_rt_model_desc_t &desc = *model.desc;
  if (!desc.train)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s' was not compiled for training "
                      "(dist-opt --train)",
                      desc.name);
  EntryCall &call = model.training;
  if (dist_rt_status_t status = bindInputs(model, call, inputs, numInputs))
    return status;
  for (uint32_t i = 1; i < call.numInputs; ++i)
    if (inputs[i].dims[0] != inputs[0].dims[0])
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "train input '%s': batch size %" PRId64
                        " differs from the %" PRId64 " of train input '%s'",
                        call.inputs[i].name, inputs[i].dims[0],
                        inputs[0].dims[0], call.inputs[0].name);
  if (dist_rt_status_t status = checkLabels(desc, call, inputs))
    return status;
  model.trainScalars[0] = lr;
  model.trainScalars[1] = static_cast<float>(step);
  std::fill(call.resultWords.begin(), call.resultWords.end(), 0);
  dist_rt::RunErrors errors;
  {
    dist_rt::RunErrorScope scope(errors);
    desc.train->entry(call.args.data());
  }
  if (dist_rt_status_t status = receiveOutputs(model, call, inputs))
    return status;
  if (errors.failed) {
    freeBlocks(model.returnedBlocks, {});
    return generatedCodeError(desc, errors, step);
  }
  const ReturnedOutput &loss = model.returned[0];
  float value;
  std::memcpy(&value, loss.aligned + loss.offset * int64_t{sizeof(float)},
              sizeof(float));
  // Nothing but the loss is handed out: every fresh block goes back.
  freeBlocks(model.returnedBlocks, {});
  *out_loss = value;
  return nullptr;
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

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" void
dist_rt_model_options_initialize(dist_rt_model_options_t *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof(*options));
  options->param_path = nullptr;
  options->num_threads = 0;
}

extern "C" dist_rt_status_t
dist_rt_model_create(const dist_rt_model_desc_t *desc,
                     const dist_rt_model_options_t *options,
                     dist_rt_model_t *out_model) {
  if (!out_model)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_create: out_model is NULL");
  *out_model = nullptr;
  if (!desc)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_create: desc is NULL");
  return dist_rt::guardStatus("dist_rt_model_create", [&] {
    return createModel(desc, options, out_model);
  });
}

extern "C" dist_rt_status_t
dist_rt_model_run(dist_rt_model_t model, const dist_rt_tensor_t *inputs,
                  size_t num_inputs, const dist_rt_tensor_t **out_outputs) {
  if (!out_outputs)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_run: out_outputs is NULL");
  *out_outputs = nullptr;
  if (!model)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_run: model is NULL");
  return dist_rt::guardStatus("dist_rt_model_run", [&] {
    return runModel(*model, inputs, num_inputs, out_outputs);
  });
}

extern "C" void dist_rt_model_destroy(dist_rt_model_t model) { delete model; }

extern "C" const dist_rt_model_desc_t *
dist_rt_model_desc(dist_rt_model_t model) {
  return model ? model->desc : nullptr;
}

extern "C" dist_rt_status_t
dist_rt_model_train_step(dist_rt_model_t model, const dist_rt_tensor_t *inputs,
                         size_t num_inputs, float lr, int64_t step,
                         float *out_loss) {
  if (!out_loss)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_train_step: out_loss is NULL");
  if (!model)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_train_step: model is NULL");
  if (dist_rt_status_t status =
          checkSplitsRunAlone(*model->desc, /*training=*/true))
    return status;
  return dist_rt::guardStatus("dist_rt_model_train_step", [&] {
    return trainStep(*model, inputs, num_inputs, lr, step, out_loss);
  });
}

int64_t dist_rt::firstBadLabel(const dist_rt_train_desc_t &train,
                               const dist_rt_tensor_t &labels) {
  if (train.label_classes <= 0 || labels.dtype != DIST_RT_DTYPE_INT64)
    return -1;
  int64_t count = 1;
  for (uint32_t d = 0; d < labels.rank; ++d)
    count *= labels.dims[d];
  const auto *values = static_cast<const int64_t *>(labels.data);
  for (int64_t e = 0; e < count; ++e) {
    int64_t v = values[e];
    if ((v < 0 || v >= train.label_classes) && v != train.label_ignore_index)
      return e;
  }
  return -1;
}

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

void dist_rt::sliceParam(const dist_rt_model_desc_t &desc, uint32_t index,
                         const void *full, void *local) {
  dist_rt_param_shard_t s = paramShard(desc, index);
  ShardGeometry g = shardGeometry(desc, index);
  int64_t coord = dist_rt_mesh_coord(s.axis);
  const char *src = static_cast<const char *>(full);
  char *dst = static_cast<char *>(local);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t b = 0; b < g.blocks; ++b)
      std::memcpy(dst + (o * g.blocks + b) * g.chunkBytes,
                  src + ((o * g.blocks + b) * g.parts + coord) * g.chunkBytes,
                  static_cast<size_t>(g.chunkBytes));
}

dist_rt_status_t dist_rt::gatherParam(dist_rt_model_t model, uint32_t index,
                                      std::vector<char> &full) {
  const dist_rt_model_desc_t &desc = *model->desc;
  dist_rt_tensor_t local;
  describeParam(*model, index, local);
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

extern "C" dist_rt_status_t dist_rt_model_param(dist_rt_model_t model,
                                                size_t index,
                                                dist_rt_tensor_t *out) {
  if (!out)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_param: out is NULL");
  std::memset(out, 0, sizeof(*out));
  if (!model)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_param: model is NULL");
  if (index >= model->desc->num_params)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': parameter index %zu is out of range (it "
                      "has %" PRIu32 ")",
                      model->desc->name, index, model->desc->num_params);
  describeParam(*model, index, *out);
  return nullptr;
}

extern "C" double dist_rt_lr_at(const dist_rt_train_desc_t *train, int64_t step,
                                int64_t total_steps) {
  if (!train)
    return 0;
  double lr = train->lr;
  auto at = static_cast<double>(std::max<int64_t>(step, 0));
  auto total = static_cast<double>(total_steps);
  switch (train->lr_schedule) {
  case DIST_RT_LR_COSINE:
    // CosineAnnealingLR needs T_max > 0; a run without steps keeps lr.
    if (total_steps <= 0)
      return lr;
    return lr * (1 + std::cos(kPi * at / total)) / 2;
  case DIST_RT_LR_WARMUP_LINEAR: {
    // As transformers' get_linear_schedule_with_warmup, whose max(1, ...)
    // guards W == 0 and T <= W.
    int64_t warmup = std::max<int64_t>(train->warmup_steps, 0);
    if (at < static_cast<double>(warmup))
      return lr * at / static_cast<double>(warmup);
    double decay = total - static_cast<double>(warmup);
    return lr * std::max(0.0, (total - at) / std::max(1.0, decay));
  }
  default:
    return lr;
  }
}
