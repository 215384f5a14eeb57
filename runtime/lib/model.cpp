//===- model.cpp - Loading and running compiled models ----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_model_*: creates a model (checks its descriptor, sets
// up its mesh, lays out the calls of its entry functions and loads its
// parameters) and forwards runs, training steps and parameter queries to
// the sources that implement them, turning C++ exceptions into statuses at
// the C API boundary. The parts live in model_desc.cpp (descriptor checks),
// model_params.cpp (parameter loading), model_call.cpp (calls and
// inference runs) and model_train.cpp (training steps and learning-rate
// schedules), sharing model_internal.h. The output rules (which buffers can
// be taken over, which must be copied and which must be freed) are
// described in dist_rt/model.h.
//
//===----------------------------------------------------------------------===//

#include "model_internal.h"

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

using dist_rt::makeStatus;
using namespace dist_rt::model_impl;

namespace {

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
  if (options.device_tensors && desc->device != DIST_RT_DEVICE_CUDA)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': device tensors (options.device_tensors) "
                      "need a model compiled with --target=cuda",
                      desc->name);
  // A CUDA model's collectives move device buffers: NCCL's world.
  if (desc->num_mesh_axes && desc->device == DIST_RT_DEVICE_CUDA)
    dist_rt::preferNcclWorld();
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
    if (train->pipeline) {
      if (dist_rt_status_t status = setUpPipeline(*model))
        return status;
      for (uint32_t f = 0; f < train->pipeline->num_fns; ++f)
        maxOutputs = std::max(maxOutputs, train->pipeline->fns[f].num_outputs);
    }
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
  if (desc->device == DIST_RT_DEVICE_CUDA)
    if (dist_rt_status_t status = openDevice(*model, options))
      return status;
  if (dist_rt_status_t status = setUpPs(*model))
    return status;
  dist_rt_set_num_threads(options.num_threads);
  *out_model = model.release();
  return nullptr;
}

} // namespace

dist_rt_model::~dist_rt_model() {
  current.release();
  pending.release();
  assembled.release();
  dist_rt_params_release(params);
  for (const void *copy : constantParams)
    dist_rt::unregisterConstantMemory(copy);
  releaseDeviceBlocks(*this);
}

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
  options->device = -1;
  options->device_tensors = 0;
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
