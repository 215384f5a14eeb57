//===- ps_table.cpp - A parameter server shard's rows ---------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Rows of one table on one server with their optimizer state (see
// ps_internal.h), and the per-row optimizers. The updates follow PyTorch's
// sparse optimizers, so that a table on the servers trains as the same
// table would in one process:
//  - SGD: w -= lr * g;
//  - Adagrad (torch.optim.Adagrad on a sparse gradient): s += g*g,
//    w -= lr * g / (sqrt(s) + eps);
//  - lazy Adam (torch.optim.SparseAdam): t counts the table's updates;
//    m = b1*m + (1-b1)*g, v = b2*v + (1-b2)*g*g on the rows of the gradient
//    only, w -= lr * sqrt(1-b2^t) / (1-b1^t) * m / (sqrt(v) + eps).
//
//===----------------------------------------------------------------------===//

#include "ps_internal.h"

#include <cmath>
#include <cstring>

namespace dist_rt {
namespace ps {

size_t stateFloats(const dist_rt_ps_table_t &spec) {
  switch (spec.optimizer) {
  case DIST_RT_PS_ADAGRAD:
    return static_cast<size_t>(spec.dim);
  case DIST_RT_PS_ADAM:
    return 2 * static_cast<size_t>(spec.dim);
  default:
    return 0;
  }
}

uint64_t tablesFingerprint(const dist_rt_ps_table_t *tables, size_t count) {
  uint64_t h = mix64(count);
  auto add = [&](uint64_t v) { h = mix64(h ^ v); };
  auto addFloat = [&](float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    add(bits);
  };
  for (size_t t = 0; t < count; ++t) {
    const dist_rt_ps_table_t &spec = tables[t];
    for (const char *c = spec.name ? spec.name : ""; *c; ++c)
      add(static_cast<unsigned char>(*c));
    add(static_cast<uint64_t>(spec.rows));
    add(static_cast<uint64_t>(spec.dim));
    add(spec.optimizer);
    addFloat(spec.lr);
    addFloat(spec.beta1);
    addFloat(spec.beta2);
    addFloat(spec.eps);
    add(spec.init);
    addFloat(spec.init_a);
    addFloat(spec.init_b);
    add(spec.seed);
  }
  return h;
}

Table::Table(const dist_rt_ps_table_t &spec)
    : tableSpec(spec), tableName(spec.name ? spec.name : ""),
      rowStride(static_cast<size_t>(spec.dim) + stateFloats(spec)) {
  tableSpec.name = tableName.c_str();
  appliedUpdates = spec.init_updates;
}

void Table::initState(int64_t id, float *state) const {
  size_t n = rowStride - static_cast<size_t>(tableSpec.dim);
  if (tableSpec.init == DIST_RT_PS_INIT_ROWS && tableSpec.init_state)
    std::memcpy(state, tableSpec.init_state + static_cast<size_t>(id) * n,
                n * sizeof(float));
  else
    std::memset(state, 0, n * sizeof(float));
}

void Table::initRow(int64_t id, float *values) const {
  size_t dim = static_cast<size_t>(tableSpec.dim);
  switch (tableSpec.init) {
  case DIST_RT_PS_INIT_ROWS:
    std::memcpy(values, tableSpec.init_rows + static_cast<size_t>(id) * dim,
                dim * sizeof(float));
    return;
  case DIST_RT_PS_INIT_UNIFORM:
  case DIST_RT_PS_INIT_NORMAL: {
    // A function of (seed, id, column) only: the same row whatever the
    // number of servers or the order rows were first touched in.
    uint64_t base = mix64(tableSpec.seed ^ mix64(static_cast<uint64_t>(id)));
    for (size_t j = 0; j < dim; ++j) {
      uint64_t r = mix64(base + 2 * j);
      double u = static_cast<double>(r >> 11) * 0x1.0p-53;
      if (tableSpec.init == DIST_RT_PS_INIT_UNIFORM) {
        values[j] = static_cast<float>(
            tableSpec.init_a + (tableSpec.init_b - tableSpec.init_a) * u);
      } else {
        double u2 =
            static_cast<double>(mix64(base + 2 * j + 1) >> 11) * 0x1.0p-53;
        double z = std::sqrt(-2.0 * std::log(1.0 - u)) *
                   std::cos(6.283185307179586 * u2);
        values[j] = static_cast<float>(tableSpec.init_a + tableSpec.init_b * z);
      }
    }
    return;
  }
  default:
    std::memset(values, 0, dim * sizeof(float));
  }
}

float *Table::row(int64_t id) {
  bool inserted;
  size_t i = static_cast<size_t>(index.insert(id, inserted));
  if (!inserted)
    return rowAt(i);
  if ((i >> kChunkShift) >= chunks.size())
    chunks.emplace_back(new float[(kChunkMask + 1) * rowStride]);
  ids.push_back(id);
  float *r = rowAt(i);
  initRow(id, r);
  initState(id, r + tableSpec.dim);
  return r;
}

void Table::read(int64_t id, float *out) {
  int64_t i = index.find(id);
  if (i < 0) {
    // Reads do not create rows: the initial values are computed instead.
    initRow(id, out);
    return;
  }
  std::memcpy(out, rowAt(static_cast<size_t>(i)),
              tableSpec.dim * sizeof(float));
}

void Table::readState(int64_t id, float *out) {
  int64_t i = index.find(id);
  if (i < 0) {
    initState(id, out);
    return;
  }
  std::memcpy(out, rowAt(static_cast<size_t>(i)) + tableSpec.dim,
              (rowStride - static_cast<size_t>(tableSpec.dim)) * sizeof(float));
}

void Table::apply(const int64_t *rowIds, size_t count, const float *grads) {
  size_t dim = static_cast<size_t>(tableSpec.dim);
  float lr = tableSpec.lr, eps = tableSpec.eps;
  ++appliedUpdates;
  switch (tableSpec.optimizer) {
  case DIST_RT_PS_ADAGRAD:
    for (size_t k = 0; k < count; ++k) {
      float *w = row(rowIds[k]), *s = w + dim;
      const float *g = grads + k * dim;
      for (size_t j = 0; j < dim; ++j) {
        s[j] += g[j] * g[j];
        w[j] -= lr * g[j] / (std::sqrt(s[j]) + eps);
      }
    }
    return;
  case DIST_RT_PS_ADAM: {
    float b1 = tableSpec.beta1, b2 = tableSpec.beta2;
    double t = static_cast<double>(appliedUpdates);
    float stepSize = static_cast<float>(lr * std::sqrt(1.0 - std::pow(b2, t)) /
                                        (1.0 - std::pow(b1, t)));
    for (size_t k = 0; k < count; ++k) {
      float *w = row(rowIds[k]), *m = w + dim, *v = m + dim;
      const float *g = grads + k * dim;
      for (size_t j = 0; j < dim; ++j) {
        m[j] += (g[j] - m[j]) * (1.0f - b1);
        v[j] += (g[j] * g[j] - v[j]) * (1.0f - b2);
        w[j] -= stepSize * m[j] / (std::sqrt(v[j]) + eps);
      }
    }
    return;
  }
  default:
    for (size_t k = 0; k < count; ++k) {
      float *w = row(rowIds[k]);
      const float *g = grads + k * dim;
      for (size_t j = 0; j < dim; ++j)
        w[j] -= lr * g[j];
    }
  }
}

} // namespace ps
} // namespace dist_rt
