//===- ps_internal.h - Parameter server internals ---------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What the parameter server's client (ps_client.cpp) and server
// (ps_server.cpp) share: the layout of their ZeroMQ messages, the hash that
// shards rows, and a shard's table of rows with their optimizer (ps_table.cpp).
// Internal to the runtime; tests reach it by linking the static library.
//
// Messages. A request from a worker's DEALER socket is the frames
//   [PsHeader] [ids: count int64] [rows: count x dim float32]
// (ids for pull, push and read; rows for push only), and the server's
// ROUTER socket answers with
//   [PsHeader with op = kReply or kError] [rows, or the error text]
// carrying the request's id, which the client matches (late answers to a
// request that was sent again are dropped). ZeroMQ does the framing, the
// queueing and the reconnection; these structs only name the frames.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_LIB_PS_INTERNAL_H
#define DIST_RT_LIB_PS_INTERNAL_H

#include "dist_rt/ps.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dist_rt {
namespace ps {

constexpr uint32_t kMagic = 0x31535044; // "DPS1"

enum Op : uint32_t {
  kHello = 1,
  kPull = 2,
  kPush = 3,
  kRead = 4,
  kBye = 5,
  /// Reads rows' optimizer state; the answer ends with the table's count
  /// of applied updates (int64).
  kReadState = 6,
  kReply = 100,
  kError = 101,
};

struct Header {
  uint32_t magic = kMagic;
  uint32_t op = 0;
  uint64_t requestId = 0;
  uint64_t modelId = 0;
  /// Hello: the fingerprint of the worker's tables (tablesFingerprint).
  uint64_t aux = 0;
  uint32_t table = 0;
  uint32_t worker = 0;
  int64_t step = 0;
  uint64_t count = 0;
  /// Hello: the shard the worker expects, the number of shards and of
  /// workers.
  uint32_t shard = 0, numShards = 0, numWorkers = 0, reserved = 0;
};

/// A 64-bit mix (SplitMix64's finaliser).
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint32_t shardOf(int64_t id, uint32_t numShards) {
  return numShards <= 1 ? 0
                        : static_cast<uint32_t>(
                              mix64(static_cast<uint64_t>(id)) % numShards);
}

/// What workers and servers must agree on about the tables: names, shapes,
/// optimizers and their settings.
uint64_t tablesFingerprint(const dist_rt_ps_table_t *tables, size_t count);

/// Floats of state each row keeps beside its `dim` values.
size_t stateFloats(const dist_rt_ps_table_t &spec);

/// A map from int64 ids (>= 0) to dense indices: open addressing with
/// linear probing, at most half full. Written for the server's rows and the
/// client's de-duplication, where std::unordered_map's node per entry cost
/// 3x the time (measured on 4,096-id batches).
class IdMap {
public:
  IdMap() { rehash(16); }
  /// The index of `id`, or -1.
  int64_t find(int64_t id) const {
    size_t mask = keys.size() - 1;
    for (size_t i = mix64(static_cast<uint64_t>(id)) & mask;;
         i = (i + 1) & mask) {
      if (keys[i] == id)
        return values[i];
      if (keys[i] < 0)
        return -1;
    }
  }
  /// The index of `id`, inserting it with index size() when absent;
  /// `inserted` tells which.
  int64_t insert(int64_t id, bool &inserted) {
    if (2 * (used + 1) > keys.size())
      rehash(keys.size() * 2);
    size_t mask = keys.size() - 1;
    for (size_t i = mix64(static_cast<uint64_t>(id)) & mask;;
         i = (i + 1) & mask) {
      if (keys[i] == id) {
        inserted = false;
        return values[i];
      }
      if (keys[i] < 0) {
        keys[i] = id;
        values[i] = static_cast<int64_t>(used);
        inserted = true;
        return static_cast<int64_t>(used++);
      }
    }
  }
  size_t size() const { return used; }
  /// Forgets every id, keeping the capacity.
  void clear() {
    std::fill(keys.begin(), keys.end(), -1);
    used = 0;
  }

private:
  void rehash(size_t capacity) {
    std::vector<int64_t> oldKeys = std::move(keys),
                         oldValues = std::move(values);
    keys.assign(capacity, -1);
    values.assign(capacity, 0);
    size_t mask = capacity - 1;
    for (size_t j = 0; j < oldKeys.size(); ++j) {
      if (oldKeys[j] < 0)
        continue;
      size_t i = mix64(static_cast<uint64_t>(oldKeys[j])) & mask;
      while (keys[i] >= 0)
        i = (i + 1) & mask;
      keys[i] = oldKeys[j];
      values[i] = oldValues[j];
    }
  }
  std::vector<int64_t> keys, values;
  size_t used = 0;
};

/// One table's rows on one server: values and optimizer state, created on
/// first touch from the table's initializer.
class Table {
public:
  explicit Table(const dist_rt_ps_table_t &spec);

  const dist_rt_ps_table_t &spec() const { return tableSpec; }
  const std::string &name() const { return tableName; }
  int64_t dim() const { return tableSpec.dim; }
  /// Floats per stored row (values then state).
  size_t stride() const { return rowStride; }
  size_t rows() const { return index.size(); }
  /// Updates applied so far (Adam's bias correction counts them).
  int64_t updates() const { return appliedUpdates; }
  void setUpdates(int64_t n) { appliedUpdates = n; }

  /// The stored row of `id` (values then state), created when absent.
  float *row(int64_t id);
  /// Copies the values of `id` into `out` (dim floats).
  void read(int64_t id, float *out);
  /// Copies the optimizer state of `id` into `out` (stride - dim floats).
  void readState(int64_t id, float *out);
  /// Applies one optimizer update with the gradients `grads` (count x dim)
  /// of the distinct rows `ids`.
  void apply(const int64_t *ids, size_t count, const float *grads);
  /// The stored rows in insertion order: id and stride floats.
  int64_t idAt(size_t i) const { return ids[i]; }
  float *rowAt(size_t i) {
    return chunks[i >> kChunkShift].get() + (i & kChunkMask) * rowStride;
  }

private:
  static constexpr size_t kChunkShift = 14;
  static constexpr size_t kChunkMask = (size_t(1) << kChunkShift) - 1;
  void initRow(int64_t id, float *values) const;
  void initState(int64_t id, float *state) const;

  dist_rt_ps_table_t tableSpec;
  std::string tableName;
  size_t rowStride;
  IdMap index;
  std::vector<int64_t> ids;
  /// Rows in chunks of 2^14 so that growing never moves a row.
  std::vector<std::unique_ptr<float[]>> chunks;
  int64_t appliedUpdates = 0;
};

} // namespace ps
} // namespace dist_rt

#endif // DIST_RT_LIB_PS_INTERNAL_H
