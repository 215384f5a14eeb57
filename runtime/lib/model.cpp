//===- model.cpp - Loading and running compiled models ----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_model_*: checks a compiled model's descriptor, maps its
// parameter file and checks it against the declared parameters, builds the
// memref descriptors that the packed entry function takes, and turns the
// output descriptors it returns into runtime-owned contiguous tensors. The
// output rules (which buffers can be taken over, which must be copied and
// which must be freed) are described in dist_rt/model.h.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "dist_rt/kernels.h"
#include "dist_rt/model.h"

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <sys/auxv.h>
#include <unistd.h>

using dist_rt::formatShape;
using dist_rt::makeStatus;

namespace {

/// Largest rank a descriptor may declare; keeps descriptor sizes sane.
constexpr uint32_t kMaxRank = 1024;

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

/// Shape and dtype for messages: "[?,784] (float32)".
std::string describeType(uint32_t dtype, uint32_t rank, const int64_t *dims) {
  return formatShape(rank, dims) + " (" + dist_rt_dtype_name(dtype) + ")";
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

/// Checks the descriptor before anything else looks at it.
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
  struct Group {
    const char *kind;
    uint32_t count;
    const dist_rt_tensor_desc_t *tensors;
  };
  for (const Group &group : {Group{"parameter", desc.num_params, desc.params},
                             Group{"input", desc.num_inputs, desc.inputs},
                             Group{"output", desc.num_outputs, desc.outputs}}) {
    if (group.count != 0 && !group.tensors)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s': %" PRIu32 " %ss are declared but the "
                        "array is NULL",
                        desc.name, group.count, group.kind);
    for (uint32_t i = 0; i < group.count; ++i)
      if (dist_rt_status_t status =
              checkTensorDesc(desc, group.kind, i, group.tensors[i]))
        return status;
  }
  return nullptr;
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

} // namespace

/// A loaded model. See dist_rt/model.h.
struct dist_rt_model {
  const dist_rt_model_desc_t *desc = nullptr;
  dist_rt_params_t params = nullptr;

  /// Descriptors of the parameters, then the inputs, back to back.
  std::vector<int64_t> argWords;
  /// Start of each argument's descriptor in argWords.
  std::vector<size_t> argOffsets;
  /// Buffer the entry function writes the output descriptors into.
  std::vector<int64_t> resultWords;
  /// Start of each output's descriptor in resultWords.
  std::vector<size_t> resultOffsets;
  /// The pointer array passed to the entry function.
  std::vector<void *> args;

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
  /// Scratch for one run: allocator blocks returned by the entry function.
  std::vector<void *> returnedBlocks;
  /// Scratch for one run: the output descriptors as returned.
  std::vector<ReturnedOutput> returned;
  /// Scratch for one run: contiguous strides of an output.
  std::vector<int64_t> contiguousStrides;

  ~dist_rt_model() {
    current.release();
    pending.release();
    dist_rt_params_release(params);
  }
};

namespace {

/// Maps the parameter file and checks every declared parameter against it;
/// fills the parameter descriptors.
dist_rt_status_t loadParams(dist_rt_model &model,
                            const dist_rt_model_options_t &options) {
  const dist_rt_model_desc_t &desc = *model.desc;
  if (desc.num_params == 0)
    return nullptr;
  std::string path;
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

  for (uint32_t i = 0; i < desc.num_params; ++i) {
    const dist_rt_tensor_desc_t &param = desc.params[i];
    dist_rt_param_info_t info;
    if (dist_rt_status_t status =
            dist_rt_params_find(model.params, param.name, &info)) {
      dist_rt_status_free(status);
      return makeStatus(DIST_RT_ERROR_NOT_FOUND,
                        "parameter '%s' is missing from %s (model '%s')",
                        param.name, path.c_str(), desc.name);
    }
    if (info.dtype != param.dtype)
      return makeStatus(DIST_RT_ERROR_FORMAT,
                        "parameter '%s' in %s has dtype %s, the model "
                        "expects %s",
                        param.name, path.c_str(),
                        dist_rt_dtype_name(info.dtype),
                        dist_rt_dtype_name(param.dtype));
    bool sameShape = info.rank == param.rank;
    for (uint32_t d = 0; sameShape && d < param.rank; ++d)
      sameShape =
          param.dims[d] == DIST_RT_DYNAMIC_DIM || param.dims[d] == info.dims[d];
    if (!sameShape)
      return makeStatus(DIST_RT_ERROR_FORMAT,
                        "parameter '%s' in %s has shape %s, the model "
                        "expects %s",
                        param.name, path.c_str(),
                        formatShape(info.rank, info.dims).c_str(),
                        formatShape(param.rank, param.dims).c_str());
    writeDescriptor(model.argWords.data() + model.argOffsets[i], info.data,
                    info.rank, info.dims);
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

  std::unique_ptr<dist_rt_model> model(new dist_rt_model());
  model->desc = desc;
  size_t numArgs = size_t{desc->num_params} + desc->num_inputs;
  size_t words = 0;
  for (size_t i = 0; i < numArgs; ++i) {
    const dist_rt_tensor_desc_t &tensor =
        i < desc->num_params ? desc->params[i]
                             : desc->inputs[i - desc->num_params];
    model->argOffsets.push_back(words);
    words += descriptorWords(tensor.rank);
  }
  model->argWords.assign(words, 0);
  words = 0;
  size_t outputDims = 0;
  for (uint32_t i = 0; i < desc->num_outputs; ++i) {
    model->resultOffsets.push_back(words);
    words += descriptorWords(desc->outputs[i].rank);
    outputDims += desc->outputs[i].rank;
  }
  // One spare word so that a model without outputs still gets a valid
  // pointer.
  model->resultWords.assign(words + 1, 0);
  for (size_t i = 0; i < numArgs; ++i)
    model->args.push_back(model->argWords.data() + model->argOffsets[i]);
  model->args.push_back(model->resultWords.data());
  for (dist_rt_model::Outputs *outputs : {&model->current, &model->pending}) {
    outputs->tensors.reserve(desc->num_outputs);
    outputs->dims.reserve(outputDims);
    outputs->blocks.reserve(desc->num_outputs);
  }
  model->returnedBlocks.reserve(desc->num_outputs);
  model->returned.reserve(desc->num_outputs);

  if (dist_rt_status_t status = loadParams(*model, options))
    return status;
  dist_rt_set_num_threads(options.num_threads);
  *out_model = model.release();
  return nullptr;
}

/// Checks the inputs of a run and writes their descriptors.
dist_rt_status_t bindInputs(dist_rt_model &model,
                            const dist_rt_tensor_t *inputs, size_t numInputs) {
  const dist_rt_model_desc_t &desc = *model.desc;
  if (numInputs != desc.num_inputs)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s' takes %" PRIu32 " input%s, got %zu",
                      desc.name, desc.num_inputs,
                      desc.num_inputs == 1 ? "" : "s", numInputs);
  if (numInputs != 0 && !inputs)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': inputs is NULL", desc.name);
  for (uint32_t i = 0; i < desc.num_inputs; ++i) {
    const dist_rt_tensor_desc_t &expected = desc.inputs[i];
    const dist_rt_tensor_t &given = inputs[i];
    if (given.rank != 0 && !given.dims)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "input '%s': dims is NULL for rank %" PRIu32,
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
          DIST_RT_ERROR_INVALID_ARGUMENT,
          "input '%s': expected shape %s, got %s", expected.name,
          describeType(expected.dtype, expected.rank, expected.dims).c_str(),
          describeType(given.dtype, given.rank, given.dims).c_str());
    uint64_t nbytes = 0;
    if (!byteSize(given.rank, given.dims, dist_rt_dtype_size(given.dtype),
                  nbytes))
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "input '%s': shape %s is too large", expected.name,
                        formatShape(given.rank, given.dims).c_str());
    if (nbytes != 0 && !given.data)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "input '%s': data is NULL", expected.name);
    writeDescriptor(model.argWords.data() +
                        model.argOffsets[desc.num_params + i],
                    given.data, given.rank, given.dims);
  }
  return nullptr;
}

ReturnedOutput readOutput(const dist_rt_model &model, uint32_t index,
                          const dist_rt_tensor_t *inputs) {
  const int64_t *words = model.resultWords.data() + model.resultOffsets[index];
  uint32_t rank = model.desc->outputs[index].rank;
  ReturnedOutput out;
  out.allocated = reinterpret_cast<char *>(static_cast<intptr_t>(words[0]));
  out.aligned = reinterpret_cast<char *>(static_cast<intptr_t>(words[1]));
  out.offset = words[2];
  out.sizes = words + 3;
  out.strides = words + 3 + rank;
  out.fresh = dist_rt_alloc_owns(out.allocated) != 0;
  // An input may itself be an allocator block (say, an earlier output fed
  // back in); an output aliasing it belongs to the caller, not to us.
  for (uint32_t i = 0; out.fresh && i < model.desc->num_inputs; ++i)
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

/// Turns the output descriptors the entry function returned into
/// contiguous runtime-owned tensors in model.pending. Takes over a returned
/// block when it is fresh, not shared with another output and contiguous;
/// copies everything else and frees the fresh blocks it did not take over.
dist_rt_status_t collectOutputs(dist_rt_model &model,
                                const dist_rt_tensor_t *inputs) {
  const dist_rt_model_desc_t &desc = *model.desc;
  std::vector<ReturnedOutput> &returned = model.returned;
  std::vector<void *> &fresh = model.returnedBlocks;
  returned.clear();
  fresh.clear();
  size_t totalRank = 0;
  for (uint32_t o = 0; o < desc.num_outputs; ++o) {
    returned.push_back(readOutput(model, o, inputs));
    if (returned.back().fresh)
      fresh.push_back(returned.back().allocated);
    totalRank += desc.outputs[o].rank;
  }

  // The compiled code must return what it declared.
  for (uint32_t o = 0; o < desc.num_outputs; ++o) {
    const dist_rt_tensor_desc_t &declared = desc.outputs[o];
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
                        desc.name, declared.name,
                        formatShape(declared.rank, output.sizes).c_str(),
                        formatShape(declared.rank, declared.dims).c_str());
    }
  }

  dist_rt_model::Outputs &pending = model.pending;
  pending.release();
  pending.dims.assign(totalRank, 0);
  size_t dimPos = 0;
  for (uint32_t o = 0; o < desc.num_outputs; ++o) {
    const dist_rt_tensor_desc_t &declared = desc.outputs[o];
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
    for (uint32_t q = 0; output.fresh && q < desc.num_outputs; ++q)
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
                          desc.name, declared.name, nbytes);
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
  freeBlocks(fresh, pending.blocks);
  return nullptr;
}

dist_rt_status_t runModel(dist_rt_model &model, const dist_rt_tensor_t *inputs,
                          size_t numInputs,
                          const dist_rt_tensor_t **out_outputs) {
  if (dist_rt_status_t status = bindInputs(model, inputs, numInputs))
    return status;
  std::fill(model.resultWords.begin(), model.resultWords.end(), 0);
  model.desc->entry(model.args.data());
  if (dist_rt_status_t status = collectOutputs(model, inputs))
    return status;
  // The previous outputs may have been this run's inputs, so they are only
  // released now.
  std::swap(model.current, model.pending);
  model.pending.release();
  *out_outputs = model.current.tensors.data();
  return nullptr;
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
