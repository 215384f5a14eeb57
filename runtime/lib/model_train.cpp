//===- model_train.cpp - Training steps of compiled models ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Runs one training step of a model compiled with `dist-opt --train`: checks
// its inputs (one batch size, class labels in range), passes the learning
// rate and step number, calls the compiled step, which updates the
// parameters and optimizer state in place, and returns the loss. Also the
// learning-rate schedules (dist_rt_lr_at) and the label check shared with
// the `train` command.
//
//===----------------------------------------------------------------------===//

#include "model_internal.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

constexpr double kPi = 3.14159265358979323846;

} // namespace

namespace dist_rt {
namespace model_impl {

namespace {

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

} // namespace

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
  // Tables on the parameter server: the rows of this step's ids.
  if (desc.ps)
    if (dist_rt_status_t status =
            psFillRows(model, /*training=*/true, step - 1, inputs, numInputs))
      return status;
  // The next step's rows may be on their way (dist_rt_model_ps_prefetch):
  // they have arrived before this step returns.
  struct JoinPrefetch {
    dist_rt_model &model;
    ~JoinPrefetch() { psJoinPrefetch(model); }
  } joinPrefetch{model};
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
  if (desc.train->pipeline)
    return pipelineStep(model, inputs, numInputs, lr, step, out_loss);
  model.trainScalars[0] = lr;
  model.trainScalars[1] = static_cast<float>(step);
  if (desc.device == DIST_RT_DEVICE_CUDA)
    return runTrainStepOnDevice(model, call, step, out_loss);
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
  // The rows' gradients go to the servers, once the client is free.
  psJoinPrefetch(model);
  dist_rt_status_t pushed = desc.ps ? psPushGrads(model, step - 1) : nullptr;
  // Nothing but the loss is handed out: every fresh block goes back.
  freeBlocks(model.returnedBlocks, {});
  if (pushed)
    return pushed;
  *out_loss = value;
  return nullptr;
}

} // namespace model_impl
} // namespace dist_rt

//===----------------------------------------------------------------------===//
// Labels and learning-rate schedules
//===----------------------------------------------------------------------===//

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
