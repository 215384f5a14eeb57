//===- model_pipeline.cpp - Training steps cut into pipeline stages -*- C++
//-*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Runs one training step of a model compiled with `dist-opt --mesh pp=N`
// (dist_rt_pipeline_desc_t): the rank of stage s on the mesh axis "pp" runs
// s's functions in the order of the schedule's action list
// (dist_rt/pipeline_schedule.h, the same list the compiler prints), over
// equal micro-batches of its batch, then its update. Activations and
// gradients cross between stages inside the functions (dist_rt_pp_send /
// dist_rt_pp_recv); what a stage's later action needs from its earlier one
// (the "stash.*" outputs and inputs) is kept here, per micro-batch, from
// the call that returns it to the call that takes it.
//
// A process that is the only rank of its job runs every stage itself:
// every micro-batch's forwards in stage order, then the backwards in
// reverse stage order, then the updates (last stage first) and the syncs,
// with the transfers going through memory; the result is the same as on N
// ranks. With dp and tp beside pp, each rank runs its stage over its dp
// rank's share of the batch, and the last stage's dp ranks average the
// loss.
//
//===----------------------------------------------------------------------===//

#include "model_internal.h"

#include "dist_rt/pipeline_schedule.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace dist_rt {
namespace model_impl {

namespace {

namespace pl = ::dist_rt::pipeline;

/// The function of the calls that runs `action` on `stage`, or -1.
int findCall(const dist_rt_model &model, uint32_t stage, uint32_t action) {
  for (size_t i = 0; i < model.pipelineFns.size(); ++i)
    if (model.pipelineFns[i]->stage == stage &&
        model.pipelineFns[i]->action == action)
      return static_cast<int>(i);
  return -1;
}

/// A value kept from one action of a stage to a later one, by stage,
/// name and micro-batch.
using StashKey = std::tuple<uint32_t, std::string, int32_t>;

/// Returns a block to the runtime's caching allocator.
struct AllocatorFree {
  void operator()(void *block) const { _mlir_memref_to_llvm_free(block); }
};

/// A kept value: the allocator block it lives in (the one the function
/// returned it in, taken over, or a copy) and where its elements start.
struct Buffer {
  std::unique_ptr<void, AllocatorFree> block;
  char *data = nullptr;
  std::vector<int64_t> dims;
  int64_t bytes = 0;
};

/// One step's state: its inputs, scalars, the values kept in between and
/// the loss of the micro-batches run here.
struct StepState {
  const dist_rt_tensor_t *inputs = nullptr;
  size_t numInputs = 0;
  int64_t microBatch = 0; ///< samples per micro-batch
  float lr = 0, stepNumber = 0;
  std::map<StashKey, Buffer> stash;
  double lossSum = 0;
  int32_t losses = 0;
  /// --clip-grad-norm: the sum of squared gradients of the stages whose
  /// norm ran here, and of all stages (the updates' "grad_norm.total").
  double normPartial = 0;
  float normTotal = 0;
  /// Bytes in `stash` now and at most during the step.
  int64_t heldBytes = 0, peakHeldBytes = 0;
  /// Whether this step's action times are kept for ZB-H1's lists.
  bool timed = false;
};

/// The steps whose action times ZB-H1's lists are placed by: the second to
/// the fourth this process runs (the first pays for first touches).
constexpr int64_t kFirstTimedStep = 1, kLastTimedStep = 3;

bool startsWith(const char *s, const char *prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

/// Runs function `index` of the calls on micro-batch `mb` (-1: the update).
dist_rt_status_t runAction(dist_rt_model &model, StepState &st, int index,
                           int32_t mb, int64_t step) {
  const dist_rt_model_desc_t &desc = *model.desc;
  const dist_rt_train_desc_t &train = *desc.train;
  const dist_rt_pipeline_fn_t &fn = *model.pipelineFns[index];
  EntryCall &call = model.pipelineCalls[index];
  // The action's time for --trace: from binding its inputs to keeping its
  // outputs, the waits for other stages' data counted apart.
  auto begin = std::chrono::steady_clock::now();
  double waited = dist_rt::pipelineRecvWaitSeconds();
  std::vector<dist_rt_tensor_t> args(fn.num_inputs);
  std::vector<std::vector<int64_t>> dims(fn.num_inputs);
  std::vector<StashKey> consumed;
  for (uint32_t i = 0; i < fn.num_inputs; ++i) {
    const dist_rt_tensor_desc_t &in = fn.inputs[i];
    dist_rt_tensor_t &t = args[i];
    t.dtype = in.dtype;
    t.rank = in.rank;
    if (std::strcmp(in.name, "lr") == 0 || std::strcmp(in.name, "step") == 0) {
      t.dims = nullptr;
      t.data = in.name[0] == 'l' ? &st.lr : &st.stepNumber;
      continue;
    }
    if (std::strcmp(in.name, "grad_norm.total") == 0) {
      t.dims = nullptr;
      t.data = &st.normTotal;
      continue;
    }
    if (startsWith(in.name, "stash.")) {
      StashKey key{fn.stage, in.name, mb};
      auto it = st.stash.find(key);
      if (it == st.stash.end())
        return makeStatus(DIST_RT_ERROR_INTERNAL,
                          "model '%s': stage %" PRIu32 " function '%s' needs "
                          "'%s' of micro-batch %" PRId32
                          ", which no earlier action returned",
                          desc.name, fn.stage, fn.name, in.name, mb);
      t.dims = it->second.dims.data();
      t.data = it->second.data;
      consumed.push_back(key);
      continue;
    }
    // A data input of the step: this micro-batch's rows.
    uint32_t d = 0;
    while (d < train.num_inputs && std::strcmp(train.inputs[d].name, in.name))
      ++d;
    if (d == train.num_inputs || d >= st.numInputs)
      return makeStatus(DIST_RT_ERROR_INTERNAL,
                        "model '%s': stage function '%s' takes '%s', which "
                        "is not an input of the training step",
                        desc.name, fn.name, in.name);
    const dist_rt_tensor_t &whole = st.inputs[d];
    dims[i].assign(whole.dims, whole.dims + whole.rank);
    dims[i][0] = st.microBatch;
    uint64_t rowBytes = dist_rt_dtype_size(whole.dtype);
    for (uint32_t r = 1; r < whole.rank; ++r)
      rowBytes *= static_cast<uint64_t>(whole.dims[r]);
    t.dtype = whole.dtype;
    t.rank = whole.rank;
    t.dims = dims[i].data();
    t.data = static_cast<char *>(whole.data) +
             rowBytes * static_cast<uint64_t>(st.microBatch) *
                 static_cast<uint64_t>(mb < 0 ? 0 : mb);
  }
  if (dist_rt_status_t status =
          bindInputs(model, call, args.data(), args.size()))
    return status;
  std::fill(call.resultWords.begin(), call.resultWords.end(), 0);
  dist_rt::RunErrors errors;
  {
    dist_rt::RunErrorScope scope(errors);
    fn.entry(call.args.data());
  }
  if (dist_rt_status_t status = receiveOutputs(model, call, args.data()))
    return status;
  // Values kept for a later action stay in the block the function returned
  // them in when it is the function's own, contiguous and not another
  // output's too; the rest are copied into blocks of the caching allocator.
  // (Copying every one into fresh memory cost ZB-H1, whose backward-input
  // keeps the layers' inputs and output gradients for the backward-weight,
  // a copy and the page faults of new memory for each.)
  std::vector<void *> takenOver;
  for (uint32_t o = 0; o < fn.num_outputs; ++o) {
    const dist_rt_tensor_desc_t &out = fn.outputs[o];
    const ReturnedOutput &r = model.returned[o];
    size_t elem = dist_rt_dtype_size(out.dtype);
    char *source = r.aligned + r.offset * static_cast<int64_t>(elem);
    if (std::strcmp(out.name, "loss") == 0) {
      float value = 0;
      std::memcpy(&value, source, sizeof(float));
      st.lossSum += value;
      ++st.losses;
      continue;
    }
    if (std::strcmp(out.name, "grad_norm.partial") == 0) {
      float value = 0;
      std::memcpy(&value, source, sizeof(float));
      st.normPartial += value;
      continue;
    }
    Buffer b;
    b.dims.assign(r.sizes, r.sizes + out.rank);
    uint64_t bytes = 0;
    byteSize(out.rank, b.dims.data(), elem, bytes);
    bool shared = false;
    for (uint32_t q = 0; r.fresh && q < fn.num_outputs; ++q)
      shared |= q != o && model.returned[q].fresh &&
                model.returned[q].allocated == r.allocated;
    shared |= std::find(takenOver.begin(), takenOver.end(), r.allocated) !=
              takenOver.end();
    if (r.fresh && !shared &&
        dist_rt::isContiguous(out.rank, r.sizes, r.strides)) {
      b.block.reset(r.allocated);
      b.data = source;
      takenOver.push_back(r.allocated);
    } else {
      b.block.reset(_mlir_memref_to_llvm_alloc(static_cast<size_t>(bytes)));
      if (!b.block) {
        freeBlocks(model.returnedBlocks, takenOver);
        return makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY,
                          "model '%s': out of memory keeping '%s' (%" PRIu64
                          " bytes) between pipeline actions",
                          desc.name, out.name, bytes);
      }
      b.data = static_cast<char *>(b.block.get());
      std::vector<int64_t> strides(out.rank);
      int64_t stride = 1;
      for (uint32_t d = out.rank; d-- > 0;) {
        strides[d] = stride;
        stride *= b.dims[d];
      }
      dist_rt::copyStrided(elem, out.rank, b.dims.data(), source, r.strides,
                           b.data, strides.data());
    }
    b.bytes = static_cast<int64_t>(bytes);
    st.heldBytes += b.bytes;
    st.peakHeldBytes = std::max(st.peakHeldBytes, st.heldBytes);
    st.stash[StashKey{fn.stage, out.name, mb}] = std::move(b);
  }
  freeBlocks(model.returnedBlocks, takenOver);
  for (const StashKey &key : consumed) {
    auto it = st.stash.find(key);
    st.heldBytes -= it->second.bytes;
    st.stash.erase(it);
  }
  auto end = std::chrono::steady_clock::now();
  double durS = std::chrono::duration<double>(end - begin).count();
  double waitS = dist_rt::pipelineRecvWaitSeconds() - waited;
  if (st.timed && fn.action <= DIST_RT_PIPELINE_BACKWARD_WEIGHT)
    model.pipelineActionSamples[fn.action].push_back(
        std::max(0.0, durS - waitS));
  if (model.trace) {
    static const char *names[] = {"F", "B", "I", "W", "U", "S", "N"};
    TraceEvent e;
    e.name = fn.action <= DIST_RT_PIPELINE_NORM ? names[fn.action] : "?";
    e.stage = static_cast<int32_t>(fn.stage);
    e.microBatch = mb;
    e.step = step;
    e.startUs =
        std::chrono::duration<double, std::micro>(begin - model.traceEpoch)
            .count();
    e.durUs = durS * 1e6;
    e.waitUs = waitS * 1e6;
    model.trace->push_back(e);
  }
  if (errors.failed)
    return generatedCodeError(desc, errors, step);
  return nullptr;
}

uint32_t actionCode(pl::ActionKind kind) {
  switch (kind) {
  case pl::ActionKind::Forward:
    return DIST_RT_PIPELINE_FORWARD;
  case pl::ActionKind::Backward:
    return DIST_RT_PIPELINE_BACKWARD;
  case pl::ActionKind::BackwardInput:
    return DIST_RT_PIPELINE_BACKWARD_INPUT;
  default:
    return DIST_RT_PIPELINE_BACKWARD_WEIGHT;
  }
}

/// The compute actions of this rank's stage in order, by the stages'
/// `times` (empty: unit times; they matter to ZB-H1 only).
void setOrder(dist_rt_model &model, pl::ScheduleKind kind, int32_t stages,
              int32_t m, const std::vector<pl::StageTimes> &times) {
  model.pipelineOrder.clear();
  for (const pl::Action &a :
       pl::computeActions(kind, model.pipelineStage, stages, m, times))
    model.pipelineOrder.push_back({actionCode(a.kind), a.microBatch});
}

/// Places ZB-H1's weight gradients by the timed steps' actions: every rank
/// puts its stage's median forward, backward-input and backward-weight
/// seconds (medians: one action slowed by a neighbour process must not
/// move the lists) in its stage's slots and the world keeps the largest of
/// each, so that every rank derives the same action lists from the same
/// times (and a stage counts as fast as its slowest dp or tp rank).
void orderByMeasuredTimes(dist_rt_model &model, pl::ScheduleKind kind,
                          int32_t stages, int32_t m) {
  std::vector<double> seconds(3 * static_cast<size_t>(stages), 0.0);
  const uint32_t codes[3] = {DIST_RT_PIPELINE_FORWARD,
                             DIST_RT_PIPELINE_BACKWARD_INPUT,
                             DIST_RT_PIPELINE_BACKWARD_WEIGHT};
  for (int k = 0; k < 3; ++k) {
    std::vector<double> &v = model.pipelineActionSamples[codes[k]];
    if (v.empty())
      continue;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    seconds[3 * model.pipelineStage + k] = v[v.size() / 2];
  }
  for (std::vector<double> &v : model.pipelineActionSamples)
    v = {};
  const dist_rt_model_desc_t &desc = *model.desc;
  int64_t world = (int64_t(1) << desc.num_mesh_axes) - 1;
  dist_rt_mesh_all_reduce_wait(dist_rt_mesh_all_reduce_start(
      static_cast<int64_t>(reinterpret_cast<intptr_t>(seconds.data())),
      static_cast<int64_t>(seconds.size()), DIST_RT_DTYPE_DOUBLE,
      DIST_RT_MESH_REDUCE_MAX, world));
  std::vector<pl::StageTimes> times(stages);
  for (int32_t s = 0; s < stages; ++s) {
    times[s].forwardS = seconds[3 * s];
    times[s].backwardInputS = seconds[3 * s + 1];
    times[s].backwardWeightS = seconds[3 * s + 2];
  }
  setOrder(model, kind, stages, m, times);
}

/// Whether the stages clip their gradients by the whole model's norm
/// (--clip-grad-norm): some stage has a norm function.
bool clipsGradients(const dist_rt_pipeline_desc_t &pp) {
  for (uint32_t f = 0; f < pp.num_fns; ++f)
    if (pp.fns[f].action == DIST_RT_PIPELINE_NORM)
      return true;
  return false;
}

} // namespace

dist_rt_status_t setUpPipeline(dist_rt_model &model) {
  const dist_rt_model_desc_t &desc = *model.desc;
  const dist_rt_pipeline_desc_t &pp = *desc.train->pipeline;
  // The ranks the mesh asks for: stages times the dp and tp ranks of each.
  int64_t ranks = 1;
  for (uint32_t a = 0; desc.mesh_shape && a < desc.num_mesh_axes; ++a)
    ranks *= desc.mesh_shape[a];
  int64_t axis = dist_rt_mesh_axis_size("pp");
  if (axis == static_cast<int64_t>(pp.stages) &&
      dist_rt_mesh_world_size() == ranks) {
    model.pipelineStage = static_cast<int32_t>(dist_rt_mesh_axis_coord("pp"));
  } else if (dist_rt_mesh_world_size() == 1 &&
             ranks == static_cast<int64_t>(pp.stages)) {
    model.pipelineStage = -1; // Alone: every stage here.
  } else if (ranks == static_cast<int64_t>(pp.stages)) {
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s' has %" PRIu32 " pipeline stages; run it "
                      "with mpirun -np %" PRIu32 " (one rank per stage) or "
                      "as one process, not on %" PRId32 " ranks",
                      desc.name, pp.stages, pp.stages,
                      dist_rt_mesh_world_size());
  } else {
    // Each stage's step was built at its dp rank's share of the batch.
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s' has %" PRIu32 " pipeline stages of %" PRId64
                      " ranks each; run it with mpirun -np %" PRId64
                      ", not on %" PRId32 " rank%s",
                      desc.name, pp.stages, ranks / pp.stages, ranks,
                      dist_rt_mesh_world_size(),
                      dist_rt_mesh_world_size() == 1 ? "" : "s");
  }
  model.pipelineOrder.clear();
  model.pipelineFns.clear();
  for (uint32_t f = 0; f < pp.num_fns; ++f)
    if (model.pipelineStage < 0 ||
        pp.fns[f].stage == static_cast<uint32_t>(model.pipelineStage))
      model.pipelineFns.push_back(&pp.fns[f]);
  model.pipelineCalls.clear();
  model.pipelineCalls.resize(model.pipelineFns.size());
  for (size_t i = 0; i < model.pipelineFns.size(); ++i) {
    const dist_rt_pipeline_fn_t &fn = *model.pipelineFns[i];
    EntryCall &call = model.pipelineCalls[i];
    call.inputKind = "stage input";
    call.numInputs = fn.num_inputs;
    call.inputs = fn.inputs;
    call.numOutputs = fn.num_outputs;
    call.outputs = fn.outputs;
    layOutCall(model, call, 0);
  }
  return nullptr;
}

dist_rt_status_t pipelineStep(dist_rt_model &model,
                              const dist_rt_tensor_t *inputs, size_t numInputs,
                              float lr, int64_t step, float *out_loss) {
  const dist_rt_model_desc_t &desc = *model.desc;
  const dist_rt_pipeline_desc_t &pp = *desc.train->pipeline;
  auto p = static_cast<int32_t>(pp.stages);
  auto m = static_cast<int32_t>(pp.micro_batches);
  StepState st;
  st.inputs = inputs;
  st.numInputs = numInputs;
  st.lr = lr;
  st.stepNumber = static_cast<float>(step);
  int64_t batch = numInputs ? inputs[0].dims[0] : m;
  if (batch % m != 0)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': a batch of %" PRId64
                      " samples cannot be split into the %" PRId32
                      " micro-batches the pipeline was compiled for",
                      desc.name, batch, m);
  st.microBatch = batch / m;
  auto kind = static_cast<pl::ScheduleKind>(pp.schedule);
  auto run = [&](uint32_t stage, uint32_t action,
                 int32_t mb) -> dist_rt_status_t {
    int index = findCall(model, stage, action);
    if (index < 0)
      return makeStatus(DIST_RT_ERROR_INTERNAL,
                        "model '%s': stage %" PRIu32 " has no function for "
                        "pipeline action %" PRIu32,
                        desc.name, stage, action);
    return runAction(model, st, index, mb, step);
  };
  if (model.pipelineStage < 0) {
    // Alone: forwards in stage order, backwards in reverse, then updates
    // and syncs.
    bool split = pl::splitsBackward(kind);
    for (int32_t i = 0; i < m; ++i)
      for (int32_t s = 0; s < p; ++s)
        if (dist_rt_status_t status = run(s, DIST_RT_PIPELINE_FORWARD, i))
          return status;
    for (int32_t i = 0; i < m; ++i)
      for (int32_t s = p; s-- > 0;) {
        if (dist_rt_status_t status =
                run(s,
                    split ? DIST_RT_PIPELINE_BACKWARD_INPUT
                          : DIST_RT_PIPELINE_BACKWARD,
                    i))
          return status;
        if (split)
          if (dist_rt_status_t status =
                  run(s, DIST_RT_PIPELINE_BACKWARD_WEIGHT, i))
            return status;
      }
    // Later stages first: a stage sends its share of a tied parameter's
    // gradient to the norm or update of the earlier stage that owns it,
    // which sends the new value to the later one's sync.
    for (int32_t s = p; s-- > 0;)
      if (findCall(model, s, DIST_RT_PIPELINE_NORM) >= 0)
        if (dist_rt_status_t status = run(s, DIST_RT_PIPELINE_NORM, -1))
          return status;
    st.normTotal = static_cast<float>(st.normPartial);
    for (int32_t s = p; s-- > 0;)
      if (dist_rt_status_t status = run(s, DIST_RT_PIPELINE_UPDATE, -1))
        return status;
    for (int32_t s = 0; s < p; ++s)
      if (findCall(model, s, DIST_RT_PIPELINE_SYNC) >= 0)
        if (dist_rt_status_t status = run(s, DIST_RT_PIPELINE_SYNC, -1))
          return status;
  } else {
    uint32_t stage = static_cast<uint32_t>(model.pipelineStage);
    // ZB-H1 fills the bubbles with weight gradients by the times the
    // actions take: unit times for the first four steps, then the medians
    // measured in the second to the fourth. Stages are rarely alike: the
    // GPT-style LM's first stage (embeddings and a block) has almost no
    // input gradient to compute (its input is token ids) and long weight
    // gradients, so by the unit-time lists it waited for the next stage's
    // gradient with a weight gradient ready to run. Every rank derives the
    // same lists from the same times, and lists from one simulation cannot
    // deadlock whatever the real times (pipeline::replay).
    if (model.pipelineOrder.empty())
      setOrder(model, kind, p, m, {});
    st.timed = pl::splitsBackward(kind) &&
               model.pipelineSteps >= kFirstTimedStep &&
               model.pipelineSteps <= kLastTimedStep;
    for (const auto &[code, mb] : model.pipelineOrder)
      if (dist_rt_status_t status = run(stage, code, mb))
        return status;
    if (clipsGradients(pp)) {
      // The stages' sums of squared gradients, summed over the pipeline
      // (a stage without parameters adds nothing): every update scales by
      // the norm of the whole model's gradient. In double, so that every
      // stage rounds the same sum to the same float.
      if (findCall(model, stage, DIST_RT_PIPELINE_NORM) >= 0)
        if (dist_rt_status_t status = run(stage, DIST_RT_PIPELINE_NORM, -1))
          return status;
      double total = st.normPartial;
      int64_t ppAxis = meshAxisOf(desc, "pp");
      if (ppAxis >= 0)
        dist_rt_mesh_all_reduce_wait(dist_rt_mesh_all_reduce_start(
            static_cast<int64_t>(reinterpret_cast<intptr_t>(&total)), 1,
            DIST_RT_DTYPE_DOUBLE, DIST_RT_MESH_REDUCE_SUM,
            int64_t(1) << ppAxis));
      st.normTotal = static_cast<float>(total);
    }
    if (dist_rt_status_t status = run(stage, DIST_RT_PIPELINE_UPDATE, -1))
      return status;
    if (findCall(model, stage, DIST_RT_PIPELINE_SYNC) >= 0)
      if (dist_rt_status_t status = run(stage, DIST_RT_PIPELINE_SYNC, -1))
        return status;
    if (dist_rt_status_t status = dist_rt::pipelineFinishSends())
      return status;
    if (st.timed && model.pipelineSteps == kLastTimedStep)
      orderByMeasuredTimes(model, kind, p, m);
  }
  ++model.pipelineSteps;
  if (!st.stash.empty())
    return makeStatus(DIST_RT_ERROR_INTERNAL,
                      "model '%s': %zu values kept between pipeline actions "
                      "were never used",
                      desc.name, st.stash.size());
  model.pipelineHeldBytes = st.peakHeldBytes;
  // The mean over micro-batches (the last stage's), on every rank.
  float loss = st.losses ? static_cast<float>(st.lossSum / st.losses) : 0.0f;
  // Over data parallelism, the mean of the last stage's dp ranks.
  int64_t dpAxis = dpAxisOf(desc);
  if (model.pipelineStage == p - 1 && dpAxis >= 0 &&
      dist_rt_mesh_axis_size("dp") > 1)
    dist_rt_mesh_all_reduce_wait(dist_rt_mesh_all_reduce_start(
        static_cast<int64_t>(reinterpret_cast<intptr_t>(&loss)), 1,
        DIST_RT_DTYPE_FLOAT, DIST_RT_MESH_REDUCE_AVERAGE,
        int64_t(1) << dpAxis));
  if (model.pipelineStage >= 0)
    if (dist_rt_status_t status =
            dist_rt::pipelineBroadcast(&loss, sizeof(loss), p - 1))
      return status;
  *out_loss = loss;
  return nullptr;
}

dist_rt_status_t syncPipelineParams(dist_rt_model &model) {
  const dist_rt_model_desc_t &desc = *model.desc;
  if (!desc.train || !desc.train->pipeline || model.pipelineStage < 0)
    return nullptr;
  const dist_rt_pipeline_desc_t &pp = *desc.train->pipeline;
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    if (pp.param_stages[i] < 0)
      continue;
    dist_rt_tensor_t t;
    describeParam(model, i, t);
    uint64_t bytes = 0;
    byteSize(t.rank, t.dims, dist_rt_dtype_size(t.dtype), bytes);
    if (dist_rt_status_t status = dist_rt::pipelineBroadcast(
            t.data, static_cast<int64_t>(bytes), pp.param_stages[i]))
      return status;
  }
  return nullptr;
}

} // namespace model_impl
} // namespace dist_rt
