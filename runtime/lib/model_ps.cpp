//===- model_ps.cpp - Tables of compiled models on parameter servers -----===//
// SPDX-License-Identifier: Apache-2.0
//
// A model compiled with `dist-opt --ps-tables` reads its embedding tables
// through lookups (dist_rt_ps_lookup_t): inputs that take the rows of the
// ids of each sample. Before a training step the runtime gathers the ids of
// every lookup, checks them against their table, pulls their rows from the
// servers (one pull per table, the ids of all its lookups together) and
// passes them as those inputs; after it, it pushes the rows' gradients
// (one push per table and step, which is also the worker's clock in SYNC
// and SSP modes). Inference reads the rows the same way, or gathers them
// from the table's parameter when no client is attached.
//
//===----------------------------------------------------------------------===//

#include "driver.h"
#include "model_internal.h"

#include <cinttypes>
#include <cstring>
#include <string>

namespace dist_rt {
namespace model_impl {

namespace {

int32_t indexOf(const dist_rt_tensor_desc_t *group, uint32_t count,
                const std::string &name) {
  for (uint32_t i = 0; i < count; ++i)
    if (name == group[i].name)
      return static_cast<int32_t>(i);
  return -1;
}

/// Copies a returned float output of `count` elements, any strides, to
/// `dst` in row-major order.
void copyReturned(const ReturnedOutput &o, uint32_t rank, float *dst,
                  size_t count) {
  const auto *base = reinterpret_cast<const float *>(o.aligned) + o.offset;
  if (rank == 0) {
    if (count)
      dst[0] = base[0];
    return;
  }
  std::vector<int64_t> index(rank, 0);
  for (size_t e = 0; e < count; ++e) {
    int64_t at = 0;
    for (uint32_t d = 0; d < rank; ++d)
      at += index[d] * o.strides[d];
    dst[e] = base[at];
    for (uint32_t d = rank; d-- > 0;) {
      if (++index[d] < o.sizes[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace

dist_rt_status_t setUpPs(dist_rt_model &model) {
  const dist_rt_model_desc_t &desc = *model.desc;
  if (!desc.ps)
    return nullptr;
  dist_rt_model::PsState &st = model.ps;
  std::vector<dist_rt_ps_table_t> tables;
  psTables(desc, st.tableParams, tables);
  st.lookups.resize(desc.ps->num_lookups);
  for (uint32_t k = 0; k < desc.ps->num_lookups; ++k) {
    const dist_rt_ps_lookup_t &l = desc.ps->lookups[k];
    dist_rt_model::PsState::Lookup &s = st.lookups[k];
    for (size_t t = 0; t < st.tableParams.size(); ++t)
      if (st.tableParams[t] == l.table)
        s.table = static_cast<uint32_t>(t);
    s.inferRows = indexOf(desc.inputs, desc.num_inputs, l.rows);
    s.inferIds = indexOf(desc.inputs, desc.num_inputs, l.ids);
    if (const dist_rt_train_desc_t *train = desc.train) {
      s.trainRows = indexOf(train->inputs, train->num_inputs, l.rows);
      s.trainIds = indexOf(train->inputs, train->num_inputs, l.ids);
      s.trainGrad = indexOf(train->outputs, train->num_outputs,
                            std::string(l.rows) + ".grad");
    }
  }
  for (dist_rt_model::PsState::Batch *b : {&st.batch, &st.next}) {
    b->ids.resize(st.tableParams.size());
    b->rows.resize(st.tableParams.size());
    b->offset.assign(desc.ps->num_lookups, 0);
    b->count.assign(desc.ps->num_lookups, 0);
  }
  st.grads.resize(st.tableParams.size());
  return nullptr;
}

dist_rt_status_t collectIds(const dist_rt_model &model, bool training,
                            const dist_rt_tensor_t *inputs, size_t numInputs,
                            dist_rt_model::PsState::Batch &b, bool &usable) {
  const dist_rt_model_desc_t &desc = *model.desc;
  const dist_rt_model::PsState &st = model.ps;
  const dist_rt_tensor_desc_t *group =
      training ? desc.train->inputs : desc.inputs;
  uint32_t groupSize = training ? desc.train->num_inputs : desc.num_inputs;
  usable = numInputs == groupSize && inputs;
  if (!usable)
    return nullptr;
  const char *kind = training ? "train input" : "input";
  for (std::vector<int64_t> &ids : b.ids)
    ids.clear();
  for (uint32_t k = 0; k < desc.ps->num_lookups; ++k) {
    const dist_rt_ps_lookup_t &l = desc.ps->lookups[k];
    const dist_rt_model::PsState::Lookup &s = st.lookups[k];
    int32_t idsAt = training ? s.trainIds : s.inferIds;
    int32_t rowsAt = training ? s.trainRows : s.inferRows;
    if (idsAt < 0 || rowsAt < 0)
      continue;
    const dist_rt_tensor_t &t = inputs[idsAt];
    const dist_rt_tensor_desc_t &declared = group[idsAt];
    usable = t.dtype == declared.dtype && t.rank == declared.rank &&
             t.rank > 0 && t.dims && t.dims[0] >= 0 &&
             (t.data || t.dims[0] == 0);
    int64_t perSample = 1;
    for (uint32_t d = 1; usable && d < t.rank; ++d) {
      usable = t.dims[d] == declared.dims[d];
      perSample *= t.dims[d];
    }
    if (!usable)
      return nullptr;
    const dist_rt_tensor_desc_t &table = desc.params[l.table];
    int64_t tableRows = table.dims[0];
    std::vector<int64_t> &ids = b.ids[s.table];
    b.offset[k] = ids.size();
    b.count[k] = static_cast<size_t>(t.dims[0]) * l.num_cols;
    ids.reserve(ids.size() + b.count[k]);
    for (int64_t i = 0; i < t.dims[0]; ++i)
      for (uint32_t j = 0; j < l.num_cols; ++j) {
        int64_t at = i * perSample + l.cols[j];
        int64_t id = t.dtype == DIST_RT_DTYPE_INT64
                         ? static_cast<const int64_t *>(t.data)[at]
                         : static_cast<const int32_t *>(t.data)[at];
        // Negative ids count from the end, as ONNX Gather's.
        int64_t row = id < 0 ? id + tableRows : id;
        if (row < 0 || row >= tableRows)
          return makeStatus(
              DIST_RT_ERROR_INVALID_ARGUMENT,
              "%s '%s': id %" PRId64 " (sample %" PRId64 ", element %" PRId64
              ") is outside table '%s' of %" PRId64 " rows",
              kind, l.ids, id, i, at - i * perSample, table.name, tableRows);
        ids.push_back(row);
      }
  }
  return nullptr;
}

namespace {

/// Pulls (training, as of 0-based `step`) or reads the rows of `b`'s ids.
dist_rt_status_t pullRows(dist_rt_model &model, bool training, int64_t step,
                          dist_rt_model::PsState::Batch &b) {
  const dist_rt_model_desc_t &desc = *model.desc;
  dist_rt_model::PsState &st = model.ps;
  size_t numTables = st.tableParams.size();
  if (training && st.client) {
    // Every table's pull in flight together.
    std::vector<uint32_t> tables(numTables);
    std::vector<const int64_t *> ids(numTables);
    std::vector<size_t> counts(numTables);
    std::vector<float *> rows(numTables);
    for (size_t t = 0; t < numTables; ++t) {
      int64_t dim = desc.params[st.tableParams[t]].dims[1];
      b.rows[t].resize(b.ids[t].size() * static_cast<size_t>(dim));
      tables[t] = static_cast<uint32_t>(t);
      ids[t] = b.ids[t].data();
      counts[t] = b.ids[t].size();
      rows[t] = b.rows[t].data();
    }
    return dist_rt_ps_pull_tables(st.client, numTables, tables.data(),
                                  ids.data(), counts.data(), step, rows.data());
  }
  for (size_t t = 0; t < numTables; ++t) {
    const dist_rt_tensor_desc_t &table = desc.params[st.tableParams[t]];
    int64_t dim = table.dims[1];
    std::vector<int64_t> &ids = b.ids[t];
    std::vector<float> &rows = b.rows[t];
    rows.resize(ids.size() * static_cast<size_t>(dim));
    if (st.client) {
      dist_rt_status_t status =
          training ? dist_rt_ps_pull(st.client, static_cast<uint32_t>(t),
                                     ids.data(), ids.size(), step, rows.data())
                   : dist_rt_ps_read(st.client, static_cast<uint32_t>(t),
                                     ids.data(), ids.size(), rows.data());
      if (status)
        return status;
      continue;
    }
    dist_rt_tensor_t param;
    describeParam(model, st.tableParams[t], param);
    if (training || !param.data)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s' keeps table '%s' on the parameter "
                        "server: run it with `%s train` (which starts or "
                        "reaches the servers) or attach a client "
                        "(dist_rt_model_attach_ps)",
                        desc.name, table.name, desc.name);
    const auto *data = static_cast<const float *>(param.data);
    for (size_t i = 0; i < ids.size(); ++i)
      std::memcpy(rows.data() + i * static_cast<size_t>(dim),
                  data + ids[i] * dim,
                  static_cast<size_t>(dim) * sizeof(float));
  }
  return nullptr;
}

} // namespace

dist_rt_status_t psFillRows(dist_rt_model &model, bool training, int64_t step,
                            const dist_rt_tensor_t *&inputs, size_t numInputs) {
  const dist_rt_model_desc_t &desc = *model.desc;
  dist_rt_model::PsState &st = model.ps;
  bool usable = true;
  if (dist_rt_status_t status =
          collectIds(model, training, inputs, numInputs, st.batch, usable))
    return status;
  if (!usable)
    return nullptr;
  // Rows pulled while the previous step computed, for these very ids.
  if (training && st.nextStep == step && st.next.ids == st.batch.ids) {
    std::swap(st.batch.rows, st.next.rows);
  } else if (dist_rt_status_t status =
                 pullRows(model, training, step, st.batch)) {
    return status;
  }
  if (training)
    st.nextStep = -1;
  const dist_rt_tensor_desc_t *group =
      training ? desc.train->inputs : desc.inputs;
  st.inputs.assign(inputs, inputs + numInputs);
  size_t numDims = 0;
  for (const dist_rt_model::PsState::Lookup &s : st.lookups) {
    int32_t rowsAt = training ? s.trainRows : s.inferRows;
    numDims += rowsAt < 0 ? 0 : group[rowsAt].rank;
  }
  st.dims.clear();
  st.dims.reserve(numDims);
  for (uint32_t k = 0; k < desc.ps->num_lookups; ++k) {
    dist_rt_model::PsState::Lookup &s = st.lookups[k];
    int32_t idsAt = training ? s.trainIds : s.inferIds;
    int32_t rowsAt = training ? s.trainRows : s.inferRows;
    if (idsAt < 0 || rowsAt < 0)
      continue;
    const dist_rt_tensor_desc_t &r = group[rowsAt];
    size_t first = st.dims.size();
    st.dims.push_back(inputs[idsAt].dims[0]);
    st.dims.insert(st.dims.end(), r.dims + 1, r.dims + r.rank);
    int64_t dim = desc.params[st.tableParams[s.table]].dims[1];
    st.inputs[rowsAt] = dist_rt_tensor_t{
        DIST_RT_DTYPE_FLOAT, r.rank, st.dims.data() + first,
        st.batch.rows[s.table].data() + st.batch.offset[k] * size_t(dim)};
  }
  inputs = st.inputs.data();
  // The next step's rows travel while this one computes; psJoinPrefetch
  // waits for them before the push.
  if (training && st.nextIds && st.client) {
    st.nextIds = false;
    st.nextStep = step + 1;
    st.prefetcher = std::thread([&model, step] {
      dist_rt_model::PsState &ps = model.ps;
      ps.prefetchStatus = pullRows(model, true, step + 1, ps.next);
    });
  }
  return nullptr;
}

void psJoinPrefetch(dist_rt_model &model) {
  dist_rt_model::PsState &st = model.ps;
  if (!st.prefetcher.joinable())
    return;
  st.prefetcher.join();
  // A failed pull is made again, and reported, by the next step.
  if (st.prefetchStatus) {
    dist_rt_status_free(st.prefetchStatus);
    st.prefetchStatus = nullptr;
    st.nextStep = -1;
  }
}

dist_rt_status_t psPushGrads(dist_rt_model &model, int64_t step) {
  const dist_rt_model_desc_t &desc = *model.desc;
  dist_rt_model::PsState &st = model.ps;
  for (size_t t = 0; t < st.tableParams.size(); ++t)
    st.grads[t].assign(
        st.batch.ids[t].size() *
            static_cast<size_t>(desc.params[st.tableParams[t]].dims[1]),
        0.0f);
  for (uint32_t k = 0; k < desc.ps->num_lookups; ++k) {
    const dist_rt_model::PsState::Lookup &s = st.lookups[k];
    if (s.trainGrad < 0 || s.trainRows < 0)
      continue;
    int64_t dim = desc.params[st.tableParams[s.table]].dims[1];
    float *dst = st.grads[s.table].data() +
                 st.batch.offset[k] * static_cast<size_t>(dim);
    size_t count = st.batch.count[k] * static_cast<size_t>(dim);
    copyReturned(model.returned[static_cast<size_t>(s.trainGrad)],
                 desc.train->outputs[s.trainGrad].rank, dst, count);
    if (st.gradScale != 1)
      for (size_t i = 0; i < count; ++i)
        dst[i] *= st.gradScale;
  }
  // Every table's push in flight together.
  size_t numTables = st.tableParams.size();
  std::vector<uint32_t> tables(numTables);
  std::vector<const int64_t *> ids(numTables);
  std::vector<size_t> counts(numTables);
  std::vector<const float *> grads(numTables);
  for (size_t t = 0; t < numTables; ++t) {
    tables[t] = static_cast<uint32_t>(t);
    ids[t] = st.batch.ids[t].data();
    counts[t] = st.batch.ids[t].size();
    grads[t] = st.grads[t].data();
  }
  return dist_rt_ps_push_tables(st.client, numTables, tables.data(), ids.data(),
                                counts.data(), grads.data(), step);
}

namespace {

/// Reads rows [first, first + count) of the table of parameter `param`
/// with `read(client, table, ids, count)`.
template <typename Read>
dist_rt_status_t readTableRows(dist_rt_model &model, uint32_t param,
                               int64_t first, int64_t count, Read read) {
  dist_rt_model::PsState &st = model.ps;
  for (size_t t = 0; t < st.tableParams.size(); ++t) {
    if (st.tableParams[t] != param)
      continue;
    if (!st.client)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "model '%s': table '%s' is on the parameter server, "
                        "and no client is attached to read it",
                        model.desc->name, model.desc->params[param].name);
    std::vector<int64_t> ids(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      ids[static_cast<size_t>(i)] = first + i;
    return read(st.client, static_cast<uint32_t>(t), ids.data(), ids.size());
  }
  return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                    "model '%s': parameter '%s' is not a table on the "
                    "parameter server",
                    model.desc->name, model.desc->params[param].name);
}

} // namespace

dist_rt_status_t psReadRows(dist_rt_model &model, uint32_t param, int64_t first,
                            int64_t count, float *out) {
  return readTableRows(
      model, param, first, count,
      [&](dist_rt_ps_client_t c, uint32_t t, const int64_t *ids, size_t n) {
        return dist_rt_ps_read(c, t, ids, n, out);
      });
}

dist_rt_status_t psReadState(dist_rt_model &model, uint32_t param,
                             int64_t first, int64_t count, float *out,
                             int64_t &updates) {
  return readTableRows(
      model, param, first, count,
      [&](dist_rt_ps_client_t c, uint32_t t, const int64_t *ids, size_t n) {
        return dist_rt_ps_read_state(c, t, ids, n, out, &updates);
      });
}

size_t psStateFloats(const dist_rt_model_desc_t &desc, uint32_t param) {
  std::vector<uint32_t> params;
  std::vector<dist_rt_ps_table_t> tables;
  psTables(desc, params, tables);
  for (size_t t = 0; t < params.size(); ++t)
    if (params[t] == param)
      return dist_rt_ps_state_floats(&tables[t]);
  return 0;
}

std::string psStateFileName(const char *name) {
  return dist_rt::driver::tensorFileName(
      (std::string(name) + ".ps_state").c_str());
}

std::string psUpdatesFileName(const char *name) {
  return dist_rt::driver::tensorFileName(
      (std::string(name) + ".ps_updates").c_str());
}

} // namespace model_impl
} // namespace dist_rt

//===----------------------------------------------------------------------===//
// The servers' view of a model
//===----------------------------------------------------------------------===//

namespace {

constexpr uint64_t kFnvBasis = 1469598103934665603ull;

/// FNV-1a of `n` bytes, continuing from `h`.
uint64_t fnv1a(const void *data, size_t n, uint64_t h = kFnvBasis) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<const unsigned char *>(data)[i];
    h *= 1099511628211ull;
  }
  return h;
}

} // namespace

void dist_rt::psTables(const dist_rt_model_desc_t &desc,
                       std::vector<uint32_t> &params,
                       std::vector<dist_rt_ps_table_t> &tables) {
  params.clear();
  tables.clear();
  if (!desc.ps)
    return;
  const dist_rt_ps_desc_t &ps = *desc.ps;
  uint32_t optimizer =
      std::strcmp(ps.optimizer, "adagrad") == 0 ? DIST_RT_PS_ADAGRAD
      : std::strcmp(ps.optimizer, "adam") == 0  ? DIST_RT_PS_ADAM
                                                : DIST_RT_PS_SGD;
  for (uint32_t k = 0; k < ps.num_lookups; ++k) {
    uint32_t p = ps.lookups[k].table;
    bool seen = false;
    for (uint32_t q : params)
      seen |= q == p;
    if (seen)
      continue;
    params.push_back(p);
    dist_rt_ps_table_t t;
    dist_rt_ps_table_initialize(&t);
    t.name = desc.params[p].name;
    t.rows = desc.params[p].dims[0];
    t.dim = desc.params[p].dims[1];
    t.optimizer = optimizer;
    t.lr = static_cast<float>(ps.lr);
    t.beta1 = static_cast<float>(ps.beta1);
    t.beta2 = static_cast<float>(ps.beta2);
    t.eps = static_cast<float>(ps.eps);
    // The servers take the first rows from the model's parameters (see
    // PsInitRows) or draw them, differently for each table.
    if (std::strcmp(ps.init, "rows") == 0) {
      t.init = DIST_RT_PS_INIT_ROWS;
    } else {
      t.init = std::strcmp(ps.init, "uniform") == 0 ? DIST_RT_PS_INIT_UNIFORM
                                                    : DIST_RT_PS_INIT_NORMAL;
      t.init_a = static_cast<float>(ps.init_a);
      t.init_b = static_cast<float>(ps.init_b);
      t.seed = fnv1a(t.name, std::strlen(t.name));
    }
    tables.push_back(t);
  }
}

void dist_rt::model_impl::PsInitRows::useInitRows(
    std::vector<dist_rt_ps_table_t> &tables) const {
  for (size_t t = 0; t < tables.size() && t < rows.size(); ++t)
    if (rows[t]) {
      tables[t].init = DIST_RT_PS_INIT_ROWS;
      tables[t].init_rows = rows[t];
      tables[t].init_state = t < state.size() ? state[t] : nullptr;
      tables[t].init_updates = t < updates.size() ? updates[t] : 0;
    }
}

uint64_t dist_rt::psModelId(const dist_rt_model_desc_t &desc) {
  // FNV-1a over the name and the tables' names and shapes.
  uint64_t h = kFnvBasis;
  auto mix = [&](const void *data, size_t n) { h = fnv1a(data, n, h); };
  mix(desc.name, std::strlen(desc.name));
  std::vector<uint32_t> params;
  std::vector<dist_rt_ps_table_t> tables;
  psTables(desc, params, tables);
  for (const dist_rt_ps_table_t &t : tables) {
    mix(t.name, std::strlen(t.name) + 1);
    mix(&t.rows, sizeof(t.rows));
    mix(&t.dim, sizeof(t.dim));
  }
  return h;
}

using dist_rt::makeStatus;

extern "C" dist_rt_status_t
dist_rt_model_ps_prefetch(dist_rt_model_t model,
                          const dist_rt_tensor_t *next_inputs,
                          size_t num_inputs) {
  if (!model)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_ps_prefetch: model is NULL");
  const dist_rt_model_desc_t &desc = *model->desc;
  if (!desc.ps || !desc.train)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s' has no training step with tables on the "
                      "parameter server",
                      desc.name);
  dist_rt_model::PsState &st = model->ps;
  // Under SYNC (and SSP:0) the pull would wait for this step's own push.
  if (!dist_rt_ps_client_may_run_ahead(st.client))
    return nullptr;
  bool usable = true;
  if (dist_rt_status_t status = dist_rt::model_impl::collectIds(
          *model, /*training=*/true, next_inputs, num_inputs, st.next, usable))
    return status;
  if (!usable)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_ps_prefetch: model '%s': the inputs "
                      "are not those of its training step",
                      desc.name);
  st.nextIds = true;
  return nullptr;
}

extern "C" dist_rt_status_t dist_rt_model_attach_ps(dist_rt_model_t model,
                                                    dist_rt_ps_client_t client,
                                                    int32_t num_workers) {
  if (!model)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_attach_ps: model is NULL");
  if (!model->desc->ps)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "model '%s' has no tables on the parameter server "
                      "(dist-opt --ps-tables)",
                      model->desc->name);
  if (num_workers < 1)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_model_attach_ps: num_workers must be at least "
                      "1, got %d",
                      num_workers);
  model->ps.client = client;
  model->ps.gradScale = 1.0f / static_cast<float>(num_workers);
  return nullptr;
}
