//===- model_desc.cpp - Checks of compiled-model descriptors ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Checks a compiled model's descriptor (dist_rt_model_desc_t) before
// dist_rt_model_create looks at anything else: the ABI version, every
// declared parameter, input and output, the mesh and the parameter splits,
// the split of the inference batch over the dp axis, and the training step
// (parameter roles, learning-rate schedule, train inputs and the loss).
// Also refuses to run, in a process alone, a model whose parameters are
// split over ranks that do not exist.
//
//===----------------------------------------------------------------------===//

#include "model_internal.h"

#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace dist_rt {
namespace model_impl {

namespace {

/// Largest rank a descriptor may declare; keeps descriptor sizes sane.
constexpr uint32_t kMaxRank = 1024;

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

/// Checks the pipeline stages of a training step: every stage has a
/// forward, a backward (whole or as input and weight parts, as the schedule
/// runs it) and an update function, and each is well formed.
dist_rt_status_t checkPipelineDesc(const dist_rt_model_desc_t &desc) {
  const dist_rt_pipeline_desc_t &pp = *desc.train->pipeline;
  const char *model = desc.name;
  auto bad = [&](const char *what) {
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': malformed pipeline: %s", model, what);
  };
  if (pp.stages < 1 || pp.micro_batches < 1)
    return bad("no stages or no micro-batches");
  if (pp.schedule > 2)
    return bad("unknown schedule");
  if (pp.num_fns != 0 && !pp.fns)
    return bad("functions declared but the array is NULL");
  if (desc.num_params != 0 && !pp.param_stages)
    return bad("no parameter stages");
  for (uint32_t i = 0; i < desc.num_params; ++i)
    if (pp.param_stages[i] < -1 ||
        pp.param_stages[i] >= static_cast<int32_t>(pp.stages))
      return bad("a parameter's stage is out of range");
  bool split = pp.schedule == 2;
  for (uint32_t s = 0; s < pp.stages; ++s) {
    uint32_t seen = 0;
    for (uint32_t f = 0; f < pp.num_fns; ++f)
      if (pp.fns[f].stage == s && pp.fns[f].action <= DIST_RT_PIPELINE_UPDATE)
        seen |= 1u << pp.fns[f].action;
    uint32_t need = (1u << DIST_RT_PIPELINE_FORWARD) |
                    (1u << DIST_RT_PIPELINE_UPDATE) |
                    (split ? (1u << DIST_RT_PIPELINE_BACKWARD_INPUT) |
                                 (1u << DIST_RT_PIPELINE_BACKWARD_WEIGHT)
                           : (1u << DIST_RT_PIPELINE_BACKWARD));
    if ((seen & need) != need)
      return bad("a stage lacks a function its schedule runs");
  }
  for (uint32_t f = 0; f < pp.num_fns; ++f) {
    const dist_rt_pipeline_fn_t &fn = pp.fns[f];
    if (!fn.name || !fn.entry || fn.stage >= pp.stages ||
        fn.action > DIST_RT_PIPELINE_NORM)
      return bad("a function without a name or entry, or out of range");
    if (dist_rt_status_t status =
            checkTensorGroup(desc, "stage input", fn.num_inputs, fn.inputs))
      return status;
    if (dist_rt_status_t status =
            checkTensorGroup(desc, "stage output", fn.num_outputs, fn.outputs))
      return status;
  }
  return nullptr;
}

/// The index of the tensor named `name` in `group`, or -1.
int64_t findTensor(const dist_rt_tensor_desc_t *group, uint32_t count,
                   const std::string &name) {
  for (uint32_t i = 0; i < count; ++i)
    if (name == group[i].name)
      return i;
  return -1;
}

/// Checks the lookups of tables on the parameter server against the
/// inputs, outputs and parameters they name.
dist_rt_status_t checkPsDesc(const dist_rt_model_desc_t &desc) {
  const dist_rt_ps_desc_t &ps = *desc.ps;
  auto bad = [&](uint32_t k, const char *why) {
    const dist_rt_ps_lookup_t &l = ps.lookups[k];
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': parameter-server lookup '%s': %s", desc.name,
                      l.rows ? l.rows : "?", why);
  };
  if (!ps.optimizer ||
      (std::strcmp(ps.optimizer, "sgd") != 0 &&
       std::strcmp(ps.optimizer, "adagrad") != 0 &&
       std::strcmp(ps.optimizer, "adam") != 0) ||
      !(ps.lr > 0) || (ps.num_lookups && !ps.lookups))
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': invalid parameter-server optimizer",
                      desc.name);
  bool uniform = ps.init && std::strcmp(ps.init, "uniform") == 0;
  bool normal = ps.init && std::strcmp(ps.init, "normal") == 0;
  if (!ps.init || (std::strcmp(ps.init, "rows") != 0 && !uniform && !normal) ||
      (uniform && !(ps.init_a < ps.init_b)) || (normal && !(ps.init_b > 0)))
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': invalid parameter-server row initializer",
                      desc.name);
  for (uint32_t k = 0; k < ps.num_lookups; ++k) {
    const dist_rt_ps_lookup_t &l = ps.lookups[k];
    if (!l.rows || !l.ids || (l.num_cols && !l.cols) || l.num_cols == 0)
      return bad(k, "no rows, ids or columns");
    if (l.table >= desc.num_params)
      return bad(k, "its table is out of range");
    const dist_rt_tensor_desc_t &table = desc.params[l.table];
    if (table.rank != 2 || table.dtype != DIST_RT_DTYPE_FLOAT ||
        table.dims[0] < 1 || table.dims[1] < 1)
      return bad(k, "its table is not a float32 matrix");
    if (desc.train && desc.train->param_roles[l.table] != DIST_RT_PARAM_PS)
      return bad(k, "its table's role is not DIST_RT_PARAM_PS");
    for (int g = 0; g < 2; ++g) {
      if (g == 1 && !desc.train)
        break;
      const dist_rt_tensor_desc_t *group = g ? desc.train->inputs : desc.inputs;
      uint32_t count = g ? desc.train->num_inputs : desc.num_inputs;
      int64_t rowsAt = findTensor(group, count, l.rows);
      int64_t idsAt = findTensor(group, count, l.ids);
      if (rowsAt < 0 || idsAt < 0)
        return bad(k, "its rows or ids are not among the inputs");
      const dist_rt_tensor_desc_t &rows = group[rowsAt];
      const dist_rt_tensor_desc_t &ids = group[idsAt];
      if (ids.rank < 1 || (ids.dtype != DIST_RT_DTYPE_INT64 &&
                           ids.dtype != DIST_RT_DTYPE_INT32))
        return bad(k, "its ids are not an int32 or int64 batch");
      int64_t perSample = 1;
      for (uint32_t d = 1; d < ids.rank; ++d)
        perSample = ids.dims[d] < 0 ? -1 : perSample * ids.dims[d];
      for (uint32_t j = 0; j < l.num_cols; ++j)
        if (perSample < 0 || l.cols[j] < 0 || l.cols[j] >= perSample)
          return bad(k, "a column is outside a sample of its ids");
      int64_t rowsPerSample = 1;
      for (uint32_t d = 1; d + 1 < rows.rank; ++d)
        rowsPerSample = rows.dims[d] < 0 ? -1 : rowsPerSample * rows.dims[d];
      if (rows.rank < 2 || rows.dtype != DIST_RT_DTYPE_FLOAT ||
          rows.dims[rows.rank - 1] != table.dims[1] ||
          rowsPerSample != static_cast<int64_t>(l.num_cols))
        return bad(k, "its rows do not hold one row of the table per id");
    }
    if (desc.train && findTensor(desc.train->outputs, desc.train->num_outputs,
                                 std::string(l.rows) + ".grad") < 0)
      return bad(k, "the training step does not return its gradient");
  }
  return nullptr;
}

/// Checks the training step of the descriptor (parameters and inputs are
/// checked already).
dist_rt_status_t checkTrainDesc(const dist_rt_model_desc_t &desc) {
  const dist_rt_train_desc_t &train = *desc.train;
  const char *model = desc.name;
  if (!train.entry && !train.pipeline)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': the training step has no entry function",
                      model);
  if (train.pipeline)
    if (dist_rt_status_t status = checkPipelineDesc(desc))
      return status;
  if (desc.num_params != 0 && !train.param_roles)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': the training step has no parameter roles",
                      model);
  for (uint32_t i = 0; i < desc.num_params; ++i) {
    const dist_rt_tensor_desc_t &param = desc.params[i];
    uint8_t role = train.param_roles[i];
    if (role > DIST_RT_PARAM_PS)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s': parameter '%s' has an invalid role %u",
                        model, param.name, unsigned{role});
    bool looked = false;
    for (uint32_t k = 0;
         desc.ps && desc.ps->lookups && k < desc.ps->num_lookups; ++k)
      looked |= desc.ps->lookups[k].table == i;
    if (role == DIST_RT_PARAM_PS && !looked)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s': parameter '%s' is a parameter-server "
                        "table that no lookup reads",
                        model, param.name);
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

} // namespace

/// The index of the mesh axis named `name`, or -1.
int64_t meshAxisOf(const dist_rt_model_desc_t &desc, const char *name) {
  for (uint32_t a = 0;
       desc.mesh_shape && desc.mesh_axis_names && a < desc.num_mesh_axes; ++a)
    if (desc.mesh_axis_names[a] &&
        std::strcmp(desc.mesh_axis_names[a], name) == 0)
      return a;
  return -1;
}

int64_t dpAxisOf(const dist_rt_model_desc_t &desc) {
  return meshAxisOf(desc, "dp");
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
  if (desc.device != DIST_RT_DEVICE_HOST && desc.device != DIST_RT_DEVICE_CUDA)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': the descriptor's device %" PRIu32
                      " is not one this runtime knows",
                      desc.name, desc.device);
  if (desc.device == DIST_RT_DEVICE_CUDA &&
      ((desc.train && desc.train->pipeline) || desc.ps))
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s': a CUDA model has no pipeline stages or "
                      "parameter server",
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
  if (const dist_rt_elastic_desc_t *e = desc.elastic) {
    if (e->min_ranks < 1 || e->max_ranks < e->min_ranks || !e->executables)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s': the descriptor's elastic layouts "
                        "(ranks %" PRIu32 " to %" PRIu32 ") are malformed",
                        desc.name, e->min_ranks, e->max_ranks);
    for (uint32_t k = e->min_ranks; k <= e->max_ranks; ++k)
      if (!e->executables[k - e->min_ranks] ||
          !e->executables[k - e->min_ranks][0])
        return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                          "model '%s': the descriptor names no executable "
                          "for the elastic layout of %" PRIu32 " ranks",
                          desc.name, k);
  }
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
  if (desc.train)
    if (dist_rt_status_t status = checkTrainDesc(desc))
      return status;
  return desc.ps ? checkPsDesc(desc) : nullptr;
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

} // namespace model_impl
} // namespace dist_rt
