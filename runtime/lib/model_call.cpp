//===- model_call.cpp - Calls of compiled entry functions -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Marshals the calls of a compiled model's packed entry functions (the
// calling convention of dist_rt/model.h): lays out the memref descriptors
// of parameters, inputs and results, checks the inputs of a call against
// the declared signature (named dimensions included), reads back the output
// descriptors and turns them into runtime-owned contiguous tensors (taking
// over the blocks it can, copying the rest, freeing every block once), and
// runs inference: whole, or split over the data-parallel axis, its slices
// run one after another alone or one per dp rank and gathered.
//
//===----------------------------------------------------------------------===//

#include "cuda_internal.h"
#include "model_internal.h"
#include "profile.h"

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace dist_rt {
namespace model_impl {

//===----------------------------------------------------------------------===//
// Memref descriptors
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

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

namespace {

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

} // namespace

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

//===----------------------------------------------------------------------===//
// Outputs
//===----------------------------------------------------------------------===//

namespace {

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

} // namespace

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

namespace {

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

} // namespace

/// The status of a run whose generated code reported an error (an index
/// out of range): the data given to the model is invalid. A training step
/// (`step` > 0) is named, its batch being the culprit.
dist_rt_status_t generatedCodeError(const dist_rt_model_desc_t &desc,
                                    dist_rt::RunErrors &errors, int64_t step) {
  std::lock_guard<std::mutex> lock(errors.mutex);
  if (step > 0)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': step %" PRId64 ": %s", desc.name, step,
                      errors.message.c_str());
  return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT, "model '%s': %s", desc.name,
                    errors.message.c_str());
}

//===----------------------------------------------------------------------===//
// Inference runs
//===----------------------------------------------------------------------===//

namespace {

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

} // namespace

dist_rt_status_t runModel(dist_rt_model &model, const dist_rt_tensor_t *inputs,
                          size_t numInputs,
                          const dist_rt_tensor_t **out_outputs) {
  // Tables on the parameter server: the rows of the inputs' ids.
  if (model.desc->ps)
    if (dist_rt_status_t status =
            psFillRows(model, /*training=*/false, 0, inputs, numInputs))
      return status;
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
  bool onDevice = model.desc->device == DIST_RT_DEVICE_CUDA;
  if (onDevice)
    if (dist_rt_status_t status = uploadInputs(model, call))
      return status;
  std::fill(call.resultWords.begin(), call.resultWords.end(), 0);
  dist_rt::RunErrors errors;
  {
    dist_rt::RunErrorScope scope(errors);
    dist_rt::ProfileScope prof("model run", /*run=*/true);
    model.desc->entry(call.args.data());
  }
  if (onDevice) {
    // A kernel's failure is only seen once the device is waited for.
    if (!errors.failed) {
      dist_rt::RunErrorScope scope(errors);
      std::string error = dist_rt::cuda::synchronize();
      if (!error.empty())
        dist_rt::failRun(("CUDA: a kernel failed: " + error).c_str());
    }
    // Nothing of a failed run is copied back (a kernel's fault leaves the
    // device unusable for copies too).
    if (errors.failed) {
      discardOutputs(model, call);
      return generatedCodeError(*model.desc, errors);
    }
    if (model.deviceTensors) {
      if (dist_rt_status_t status = keepOutputsOnDevice(model, call))
        return status;
    } else if (dist_rt_status_t status = downloadOutputs(model, call)) {
      return status;
    }
  }
  if (!model.deviceTensors)
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

} // namespace model_impl
} // namespace dist_rt
