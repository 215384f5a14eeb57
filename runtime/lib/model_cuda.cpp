//===- model_cuda.cpp - Models compiled for CUDA ----------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A model compiled with dist-opt --target=cuda keeps the C API of a host
// model (host tensors in and out): its entry function's buffers are device
// memory (the runtime's device allocator, cuda.cpp), so creating the model
// opens the GPU and uploads the parameters once, and each run copies its
// inputs to the device before the call and the outputs the call returned
// back to host blocks of the runtime's allocator, which the host path
// (collectOutputs) then takes over as it takes a host model's.
//
//===----------------------------------------------------------------------===//

#include "cuda_internal.h"
#include "model_internal.h"

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <string>
#include <vector>

using dist_rt::makeStatus;

namespace dist_rt {
namespace model_impl {

namespace {

/// Bytes of the contiguous array a descriptor of `rank` describes.
uint64_t descriptorBytes(const int64_t *words, uint32_t rank, size_t elemSize) {
  uint64_t n = elemSize;
  for (uint32_t d = 0; d < rank; ++d)
    n *= static_cast<uint64_t>(words[3 + d]);
  return n;
}

char *dataOf(const int64_t *words, size_t elemSize) {
  return reinterpret_cast<char *>(static_cast<intptr_t>(words[1])) +
         words[2] * static_cast<int64_t>(elemSize);
}

void pointAt(int64_t *words, void *block) {
  auto address = static_cast<int64_t>(reinterpret_cast<intptr_t>(block));
  words[0] = address;
  words[1] = address;
  words[2] = 0;
}

} // namespace

namespace {

/// Copies the host array `words` describes (a tensor `t` of `desc`, called
/// `kind` in messages) into a new device block, which `blocks` keeps, and
/// points `words` at it.
dist_rt_status_t upload(const dist_rt_model_desc_t &desc, const char *kind,
                        const dist_rt_tensor_desc_t &t, int64_t *words,
                        std::vector<void *> &blocks) {
  size_t elemSize = dist_rt_dtype_size(t.dtype);
  uint64_t bytes = descriptorBytes(words, t.rank, elemSize);
  std::string error;
  void *block = cuda::allocate(static_cast<size_t>(bytes), error);
  if (!block)
    return makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY, "model '%s': %s '%s': %s",
                      desc.name, kind, t.name, error.c_str());
  blocks.push_back(block);
  error = cuda::copy(block, dataOf(words, elemSize), bytes);
  if (!error.empty())
    return makeStatus(DIST_RT_ERROR_DEVICE,
                      "model '%s': %s '%s': copy to %s: %s", desc.name, kind,
                      t.name, cuda::deviceName().c_str(), error.c_str());
  pointAt(words, block);
  return nullptr;
}

} // namespace

dist_rt_status_t openDevice(dist_rt_model &model,
                            const dist_rt_model_options_t &options) {
  const dist_rt_model_desc_t &desc = *model.desc;
  // A rank of a mesh takes its node-local rank's GPU, as NCCL does.
  int ordinal = options.device;
  if (ordinal < 0 && desc.num_mesh_axes)
    ordinal = cuda::kLocalRankDevice;
  std::string why = cuda::open(ordinal);
  if (!why.empty())
    return makeStatus(DIST_RT_ERROR_DEVICE,
                      "model '%s' was compiled for CUDA GPUs "
                      "(--target=cuda), but %s",
                      desc.name, why.c_str());
  model.deviceParamWords = model.paramWords;
  for (uint32_t i = 0; i < desc.num_params; ++i)
    if (dist_rt_status_t status =
            upload(desc, "parameter", desc.params[i],
                   model.deviceParamWords.data() + model.paramOffsets[i],
                   model.deviceParams))
      return status;
  model.deviceTensors = options.device_tensors != 0;
  // The inference call passes the device copies.
  for (uint32_t i = 0; i < desc.num_params; ++i)
    model.inference.args[i] =
        model.deviceParamWords.data() + model.paramOffsets[i];
  if (desc.train) {
    // The device copies become the live parameters, which every call
    // passes and dist_rt_model_param describes: managed memory, which the
    // host reads and writes between steps (checkpoints, --save-params, a
    // resume) as the host copies it replaces.
    std::copy(model.deviceParamWords.begin(), model.deviceParamWords.end(),
              model.paramWords.begin());
    model.ownedParams.clear();
    std::string error;
    model.deviceScalars =
        static_cast<float *>(cuda::allocate(sizeof(model.trainScalars), error));
    if (!model.deviceScalars)
      return makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY,
                        "model '%s': the learning rate and step: %s", desc.name,
                        error.c_str());
    EntryCall &training = model.training;
    for (uint32_t s = 0; s < 2; ++s)
      writeDescriptor(training.argWords.data() +
                          training.argOffsets[training.numInputs + s],
                      model.deviceScalars + s, 0, nullptr);
  }
  return nullptr;
}

dist_rt_status_t runTrainStepOnDevice(dist_rt_model &model, EntryCall &call,
                                      int64_t step, float *out_loss) {
  const dist_rt_model_desc_t &desc = *model.desc;
  if (dist_rt_status_t status = uploadInputs(model, call))
    return status;
  std::string error = cuda::copy(model.deviceScalars, model.trainScalars,
                                 sizeof(model.trainScalars));
  if (!error.empty())
    return makeStatus(DIST_RT_ERROR_DEVICE,
                      "model '%s': the learning rate and step: copy to %s: %s",
                      desc.name, cuda::deviceName().c_str(), error.c_str());
  std::fill(call.resultWords.begin(), call.resultWords.end(), 0);
  dist_rt::RunErrors errors;
  {
    dist_rt::RunErrorScope scope(errors);
    desc.train->entry(call.args.data());
    // A kernel's failure is only seen once the device is waited for.
    if (!errors.failed) {
      error = cuda::synchronize();
      if (!error.empty())
        dist_rt::failRun(("CUDA: a kernel failed: " + error).c_str());
    }
  }
  if (errors.failed) {
    discardOutputs(model, call);
    return generatedCodeError(desc, errors, step);
  }
  // The loss: the first output, a scalar in device memory.
  const int64_t *words = call.resultWords.data() + call.resultOffsets[0];
  float loss = 0;
  error = cuda::copy(&loss, dataOf(words, sizeof(float)), sizeof(float));
  discardOutputs(model, call);
  if (!error.empty())
    return makeStatus(DIST_RT_ERROR_DEVICE,
                      "model '%s': the loss: copy from %s: %s", desc.name,
                      cuda::deviceName().c_str(), error.c_str());
  *out_loss = loss;
  return nullptr;
}

dist_rt_status_t uploadInputs(dist_rt_model &model, EntryCall &call) {
  for (void *block : model.deviceInputs)
    cuda::release(block);
  model.deviceInputs.clear();
  for (uint32_t i = 0; i < call.numInputs; ++i)
    if (dist_rt_status_t status = upload(
            *model.desc, call.inputKind, call.inputs[i],
            call.argWords.data() + call.argOffsets[i], model.deviceInputs))
      return status;
  return nullptr;
}

namespace {

/// The device blocks the entry of `call` returned.
std::vector<void *> returnedBlocks(const EntryCall &call) {
  std::vector<void *> returned;
  for (uint32_t o = 0; o < call.numOutputs; ++o) {
    void *device = reinterpret_cast<void *>(
        static_cast<intptr_t>(call.resultWords[call.resultOffsets[o]]));
    if (cuda::owns(device))
      returned.push_back(device);
  }
  return returned;
}

/// Frees the blocks of a run: those the entry returned, once each (outputs
/// may share one; a parameter's or an input's copy returned as an output
/// is not the run's), and the inputs' copies.
void releaseRunBlocks(dist_rt_model &model, std::vector<void *> &returned) {
  std::sort(returned.begin(), returned.end());
  returned.erase(std::unique(returned.begin(), returned.end()), returned.end());
  for (void *block : returned)
    if (std::find(model.deviceParams.begin(), model.deviceParams.end(),
                  block) == model.deviceParams.end() &&
        std::find(model.deviceInputs.begin(), model.deviceInputs.end(),
                  block) == model.deviceInputs.end())
      cuda::release(block);
  for (void *block : model.deviceInputs)
    cuda::release(block);
  model.deviceInputs.clear();
}

} // namespace

void discardOutputs(dist_rt_model &model, EntryCall &call) {
  std::vector<void *> returned = returnedBlocks(call);
  releaseRunBlocks(model, returned);
}

namespace {

/// Copies each output the entry of `call` returned (device memory) into a
/// contiguous block of `allocate(bytes)` (host or device memory), points
/// its descriptor at the copy (contiguous strides) and appends the block
/// to `copies`; then frees the run's device blocks. On failure frees the
/// copies too and returns a status naming the output.
template <typename Allocate>
dist_rt_status_t copyOutputs(dist_rt_model &model, EntryCall &call,
                             Allocate allocate, const char *memory,
                             std::vector<void *> &copies) {
  const dist_rt_model_desc_t &desc = *model.desc;
  std::vector<void *> returned = returnedBlocks(call);
  dist_rt_status_t status = nullptr;
  for (uint32_t o = 0; o < call.numOutputs && !status; ++o) {
    int64_t *words = call.resultWords.data() + call.resultOffsets[o];
    uint32_t rank = call.outputs[o].rank;
    size_t elemSize = dist_rt_dtype_size(call.outputs[o].dtype);
    // Results keep the identity layout (bufferization's function
    // boundaries): contiguous from the aligned pointer plus the offset.
    bool contiguous = true;
    int64_t run = 1;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      int64_t size = words[3 + d], stride = words[3 + rank + d];
      if (size < 0)
        contiguous = false;
      if (size != 1 && stride != run)
        contiguous = false;
      run *= size;
    }
    if (!contiguous) {
      status = makeStatus(DIST_RT_ERROR_INTERNAL,
                          "model '%s': output '%s' was returned as a strided "
                          "view of device memory",
                          desc.name, call.outputs[o].name);
      break;
    }
    uint64_t bytes = descriptorBytes(words, rank, elemSize);
    char *from = dataOf(words, elemSize);
    void *copy = allocate(static_cast<size_t>(bytes));
    if (!copy && bytes) {
      status = makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY,
                          "model '%s': out of %s memory for output '%s' "
                          "(%" PRIu64 " bytes)",
                          desc.name, memory, call.outputs[o].name, bytes);
      break;
    }
    copies.push_back(copy);
    std::string error = cuda::copy(copy, from, static_cast<size_t>(bytes));
    if (!error.empty()) {
      status = makeStatus(DIST_RT_ERROR_DEVICE,
                          "model '%s': output '%s': copy from %s: %s",
                          desc.name, call.outputs[o].name,
                          cuda::deviceName().c_str(), error.c_str());
      break;
    }
    pointAt(words, copy);
    // The copy's strides: contiguous row-major.
    int64_t stride = 1;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      words[3 + rank + d] = stride;
      stride *= words[3 + d];
    }
  }
  releaseRunBlocks(model, returned);
  return status;
}

} // namespace

dist_rt_status_t downloadOutputs(dist_rt_model &model, EntryCall &call) {
  std::vector<void *> copies;
  dist_rt_status_t status = copyOutputs(
      model, call,
      [](size_t bytes) { return _mlir_memref_to_llvm_alloc(bytes); }, "host",
      copies);
  if (status)
    for (void *host : copies)
      _mlir_memref_to_llvm_free(host);
  return status;
}

dist_rt_status_t keepOutputsOnDevice(dist_rt_model &model, EntryCall &call) {
  std::vector<void *> copies;
  std::string error;
  dist_rt_status_t status = copyOutputs(
      model, call,
      [&](size_t bytes) { return cuda::allocate(bytes ? bytes : 1, error); },
      "device", copies);
  if (status) {
    for (void *block : copies)
      cuda::release(block);
    return status;
  }
  dist_rt_model::Outputs &pending = model.pending;
  pending.release();
  pending.device = true;
  pending.blocks = copies;
  size_t totalRank = 0;
  for (uint32_t o = 0; o < call.numOutputs; ++o)
    totalRank += call.outputs[o].rank;
  pending.dims.assign(totalRank, 0);
  size_t dimPos = 0;
  for (uint32_t o = 0; o < call.numOutputs; ++o) {
    const int64_t *words = call.resultWords.data() + call.resultOffsets[o];
    uint32_t rank = call.outputs[o].rank;
    int64_t *dims = pending.dims.data() + dimPos;
    dimPos += rank;
    std::copy(words + 3, words + 3 + rank, dims);
    pending.tensors.push_back(dist_rt_tensor_t{
        call.outputs[o].dtype, rank, rank ? dims : nullptr, copies[o]});
  }
  return nullptr;
}

void releaseDeviceBlocks(dist_rt_model &model) {
  if (model.deviceScalars)
    cuda::release(model.deviceScalars);
  model.deviceScalars = nullptr;
  for (void *block : model.deviceInputs)
    cuda::release(block);
  for (void *block : model.deviceParams)
    cuda::release(block);
  model.deviceInputs.clear();
  model.deviceParams.clear();
}

} // namespace model_impl
} // namespace dist_rt
