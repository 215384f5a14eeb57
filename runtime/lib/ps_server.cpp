//===- ps_server.cpp - Parameter server
//------------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// One shard of the parameter server (dist_rt/ps.h): a ZeroMQ ROUTER socket
// served by one thread, the shard's tables (ps_table.cpp), the consistency
// modes, and durability through a write-ahead log and snapshots in the
// shard directory:
//   <dir>/shard-<k>-of-<n>.log   a header, then one record per push taken
//   <dir>/shard-<k>-of-<n>.snap  rows, optimizer state and clocks up to a
//                                push sequence number
// A push is appended to the log (one write(2) of the whole record) before
// it is acknowledged; recovery loads the snapshot and replays the records
// after its sequence number through the same code that took them, so the
// recovered state equals the state before the kill. A torn last record
// (the process died inside write) was never acknowledged and is dropped.
// Snapshots are written at points where no step is half aggregated (SYNC),
// to a temporary file that is renamed over the old one; the log is then
// truncated. A lock on the log keeps two servers off one directory.
//
// Why ZeroMQ, and gRPC's measured figures: see dist_rt/ps.h. Throughput
// against a Python server and numpy: bench/ps_throughput.py.
//
//===----------------------------------------------------------------------===//

#include "driver.h"
#include "internal.h"
#include "ps_internal.h"
#include "ps_zmq.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

using namespace dist_rt;
using namespace dist_rt::ps;

namespace {

constexpr uint32_t kLogMagic = 0x474c5044;  // "DPLG"
constexpr uint32_t kSnapMagic = 0x53535044; // "DPSS"
constexpr uint32_t kRecordMagic = 0x52535044;

struct FileHeader {
  uint32_t magic;
  uint32_t version = 1;
  uint64_t modelId;
  uint64_t fingerprint;
  uint32_t shard, numShards, numWorkers, numTables;
};

struct RecordHeader {
  uint32_t magic = kRecordMagic;
  uint32_t table;
  uint32_t worker;
  uint32_t reserved = 0;
  int64_t step;
  uint64_t seq;
  uint64_t count;
};

/// A step's pushes of one table (SYNC), kept per worker until every worker
/// has pushed and then summed in worker order, so that the update does not
/// depend on the order the pushes arrived in.
struct Pending {
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<float>> grads;
  uint32_t workers = 0;
};

struct TableState {
  std::unique_ptr<Table> table;
  /// SYNC: the last step applied.
  int64_t appliedStep = -1;
  /// The last step each worker pushed.
  std::vector<int64_t> pushed;
  std::map<int64_t, Pending> pending;
};

/// A pull that waits for other workers.
struct Deferred {
  std::string identity;
  Header header;
  std::vector<int64_t> ids;
};

/// A received ZeroMQ message frame.
class Frame {
public:
  explicit Frame(const ZmqApi &z) : z(z) { z.msgInit(&msg); }
  ~Frame() { z.msgClose(&msg); }
  Frame(const Frame &) = delete;
  zmq_msg_t *get() { return &msg; }
  const char *data() { return static_cast<const char *>(z.msgData(&msg)); }
  size_t size() { return z.msgSize(&msg); }

private:
  const ZmqApi &z;
  zmq_msg_t msg;
};

std::string shardFile(const std::string &dir, uint32_t shard, uint32_t n,
                      const char *suffix) {
  return dir + "/shard-" + std::to_string(shard) + "-of-" + std::to_string(n) +
         suffix;
}

/// Whether all `size` bytes could be read.
bool readAll(int fd, void *buffer, size_t size) {
  return readFully(fd, buffer, size) == static_cast<int64_t>(size);
}

} // namespace

struct dist_rt_ps_server {
  const ZmqApi *z = nullptr;
  void *context = nullptr;
  void *socket = nullptr;
  std::string endpoint;
  std::string label; // "parameter server shard 1 of 2"
  dist_rt_ps_server_options_t options{};
  std::string shardDir;
  std::vector<dist_rt_ps_table_t> specs;
  uint64_t fingerprint = 0;
  std::vector<TableState> tables;
  std::vector<Deferred> deferred;
  std::vector<float> smallReply;
  std::vector<bool> said;
  uint32_t goodbyes = 0;
  std::atomic<bool> stopping{false};
  int logFd = -1;
  uint64_t seq = 0; // last push sequence number taken
  uint64_t sinceSnapshot = 0;
  dist_rt_ps_server_stats_t stats{};

  ~dist_rt_ps_server() {
    if (socket)
      z->close(socket);
    if (context)
      z->ctxTerm(context);
    if (logFd >= 0)
      close(logFd);
  }

  FileHeader fileHeader(uint32_t magic) const {
    FileHeader h;
    h.magic = magic;
    h.modelId = options.model_id;
    h.fingerprint = fingerprint;
    h.shard = options.shard;
    h.numShards = options.num_shards;
    h.numWorkers = options.num_workers;
    h.numTables = static_cast<uint32_t>(specs.size());
    return h;
  }

  dist_rt_status_t checkFileHeader(const FileHeader &h, uint32_t magic,
                                   const std::string &path) const {
    if (h.magic != magic || h.version != 1)
      return makeStatus(DIST_RT_ERROR_FORMAT,
                        "%s: %s is not a parameter server file", label.c_str(),
                        path.c_str());
    if (h.modelId != options.model_id || h.fingerprint != fingerprint)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "%s: %s was written for another model or other "
                        "tables; use another --shard-dir",
                        label.c_str(), path.c_str());
    if (h.shard != options.shard || h.numShards != options.num_shards ||
        h.numWorkers != options.num_workers)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "%s: %s was written for shard %u of %u with %u "
                        "workers",
                        label.c_str(), path.c_str(), h.shard, h.numShards,
                        h.numWorkers);
    return nullptr;
  }

  //===--------------------------------------------------------------------===//
  // Taking pushes
  //===--------------------------------------------------------------------===//

  /// Takes a push of `count` distinct ids (already checked) for `step`.
  /// Returns false when it is a repeat of a step already taken.
  bool take(uint32_t t, uint32_t worker, int64_t step, const int64_t *ids,
            uint64_t count, const float *grads) {
    TableState &ts = tables[t];
    if (step <= ts.pushed[worker])
      return false;
    ts.pushed[worker] = step;
    Table &table = *ts.table;
    size_t dim = static_cast<size_t>(table.dim());
    if (options.mode != DIST_RT_PS_SYNC) {
      // An empty push only moves the worker's clock.
      if (count) {
        table.apply(ids, count, grads);
        ++stats.applied_updates;
      }
      return true;
    }
    Pending &p = ts.pending[step];
    if (p.ids.empty()) {
      p.ids.resize(options.num_workers);
      p.grads.resize(options.num_workers);
    }
    p.ids[worker].assign(ids, ids + count);
    p.grads[worker].assign(grads, grads + count * dim);
    ++p.workers;
    // Apply complete steps in order.
    while (!ts.pending.empty()) {
      auto first = ts.pending.begin();
      if (first->first != ts.appliedStep + 1 ||
          first->second.workers < options.num_workers)
        break;
      IdMap index;
      std::vector<int64_t> sumIds;
      std::vector<float> sums;
      for (uint32_t w = 0; w < options.num_workers; ++w) {
        const std::vector<int64_t> &wIds = first->second.ids[w];
        const float *wGrads = first->second.grads[w].data();
        for (size_t k = 0; k < wIds.size(); ++k) {
          bool inserted;
          size_t i = static_cast<size_t>(index.insert(wIds[k], inserted));
          if (inserted) {
            sumIds.push_back(wIds[k]);
            sums.insert(sums.end(), wGrads + k * dim, wGrads + (k + 1) * dim);
            continue;
          }
          float *sum = sums.data() + i * dim;
          for (size_t j = 0; j < dim; ++j)
            sum[j] += wGrads[k * dim + j];
        }
      }
      table.apply(sumIds.data(), sumIds.size(), sums.data());
      ++stats.applied_updates;
      ts.appliedStep = first->first;
      ts.pending.erase(first);
    }
    return true;
  }

  bool clean() const {
    for (const TableState &ts : tables)
      if (!ts.pending.empty())
        return false;
    return true;
  }

  dist_rt_status_t logPush(uint32_t t, uint32_t worker, int64_t step,
                           const int64_t *ids, uint64_t count,
                           const float *grads) {
    if (logFd < 0)
      return nullptr;
    RecordHeader r;
    r.table = t;
    r.worker = worker;
    r.step = step;
    r.seq = seq;
    r.count = count;
    size_t dim = static_cast<size_t>(tables[t].table->dim());
    iovec parts[3] = {
        {&r, sizeof r},
        {const_cast<int64_t *>(ids), count * sizeof(int64_t)},
        {const_cast<float *>(grads), count * dim * sizeof(float)}};
    size_t total = parts[0].iov_len + parts[1].iov_len + parts[2].iov_len;
    ssize_t n = writev(logFd, parts, 3);
    if (n == static_cast<ssize_t>(total))
      return nullptr;
    // A short write: finish it piece by piece.
    size_t done = n > 0 ? static_cast<size_t>(n) : 0;
    for (const iovec &part : parts) {
      if (done >= part.iov_len) {
        done -= part.iov_len;
        continue;
      }
      if (!writeFully(logFd, static_cast<char *>(part.iov_base) + done,
                      part.iov_len - done)) {
        char buffer[128];
        return makeStatus(DIST_RT_ERROR_IO, "%s: cannot append to its log: %s",
                          label.c_str(),
                          describeErrno(errno, buffer, sizeof buffer));
      }
      done = 0;
    }
    return nullptr;
  }

  //===--------------------------------------------------------------------===//
  // Snapshots and recovery
  //===--------------------------------------------------------------------===//

  dist_rt_status_t writeSnapshot() {
    if (shardDir.empty())
      return nullptr;
    std::string path =
        shardFile(shardDir, options.shard, options.num_shards, ".snap");
    std::string tmp = path + ".tmp";
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    char buffer[128];
    if (fd < 0)
      return makeStatus(DIST_RT_ERROR_IO, "%s: cannot write %s: %s",
                        label.c_str(), tmp.c_str(),
                        describeErrno(errno, buffer, sizeof buffer));
    // Buffered in 4 MiB pieces: a table can be larger than memory allows
    // twice.
    std::vector<char> out;
    bool ok = true;
    auto put = [&](const void *data, size_t size) {
      const char *p = static_cast<const char *>(data);
      out.insert(out.end(), p, p + size);
      if (out.size() >= (4u << 20)) {
        ok = ok && writeFully(fd, out.data(), out.size());
        out.clear();
      }
    };
    FileHeader h = fileHeader(kSnapMagic);
    put(&h, sizeof h);
    put(&seq, sizeof seq);
    for (TableState &ts : tables) {
      int64_t updates = ts.table->updates();
      uint64_t rows = ts.table->rows();
      put(&updates, sizeof updates);
      put(&ts.appliedStep, sizeof ts.appliedStep);
      put(ts.pushed.data(), ts.pushed.size() * sizeof(int64_t));
      put(&rows, sizeof rows);
      size_t stride = ts.table->stride();
      for (size_t i = 0; i < rows; ++i) {
        int64_t id = ts.table->idAt(i);
        put(&id, sizeof id);
        put(ts.table->rowAt(i), stride * sizeof(float));
      }
    }
    ok = ok && writeFully(fd, out.data(), out.size()) && fsync(fd) == 0;
    int savedErrno = errno;
    close(fd);
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
      if (ok)
        savedErrno = errno;
      unlink(tmp.c_str());
      return makeStatus(DIST_RT_ERROR_IO, "%s: cannot write %s: %s",
                        label.c_str(), path.c_str(),
                        describeErrno(savedErrno, buffer, sizeof buffer));
    }
    // Everything logged is now in the snapshot (whose sequence number also
    // makes recovery skip these records if the truncation does not happen).
    FileHeader lh = fileHeader(kLogMagic);
    if (ftruncate(logFd, 0) != 0 || lseek(logFd, 0, SEEK_SET) != 0 ||
        !writeFully(logFd, &lh, sizeof lh))
      return makeStatus(DIST_RT_ERROR_IO, "%s: cannot truncate its log: %s",
                        label.c_str(),
                        describeErrno(errno, buffer, sizeof buffer));
    sinceSnapshot = 0;
    return nullptr;
  }

  dist_rt_status_t readSnapshot(const std::string &path, uint64_t &snapSeq) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    char buffer[128];
    if (fd < 0) {
      if (errno == ENOENT)
        return nullptr;
      return makeStatus(DIST_RT_ERROR_IO, "%s: cannot read %s: %s",
                        label.c_str(), path.c_str(),
                        describeErrno(errno, buffer, sizeof buffer));
    }
    struct Closer {
      int fd;
      ~Closer() { close(fd); }
    } closer{fd};
    FileHeader h;
    if (!readAll(fd, &h, sizeof h))
      return makeStatus(DIST_RT_ERROR_FORMAT, "%s: %s is truncated",
                        label.c_str(), path.c_str());
    if (dist_rt_status_t s = checkFileHeader(h, kSnapMagic, path))
      return s;
    bool ok = readAll(fd, &snapSeq, sizeof snapSeq);
    std::vector<float> row;
    for (TableState &ts : tables) {
      int64_t updates = 0;
      uint64_t rows = 0;
      ok = ok && readAll(fd, &updates, sizeof updates) &&
           readAll(fd, &ts.appliedStep, sizeof ts.appliedStep) &&
           readAll(fd, ts.pushed.data(), ts.pushed.size() * sizeof(int64_t)) &&
           readAll(fd, &rows, sizeof rows);
      if (!ok)
        break;
      ts.table->setUpdates(updates);
      size_t stride = ts.table->stride();
      for (uint64_t i = 0; ok && i < rows; ++i) {
        int64_t id;
        ok = readAll(fd, &id, sizeof id) && id >= 0 &&
             id < ts.table->spec().rows &&
             readAll(fd, ts.table->row(id), stride * sizeof(float));
      }
    }
    if (!ok)
      return makeStatus(DIST_RT_ERROR_FORMAT, "%s: %s is truncated or damaged",
                        label.c_str(), path.c_str());
    seq = snapSeq;
    return nullptr;
  }

  /// Replays the log after the snapshot and leaves it open for appending.
  dist_rt_status_t recover() {
    char buffer[128];
    std::string error;
    if (!driver::makeDirectories(shardDir, "the shard directory", error))
      return makeStatus(DIST_RT_ERROR_IO, "%s: %s", label.c_str(),
                        error.c_str());
    std::string logPath =
        shardFile(shardDir, options.shard, options.num_shards, ".log");
    logFd = open(logPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (logFd < 0)
      return makeStatus(DIST_RT_ERROR_IO, "%s: cannot open %s: %s",
                        label.c_str(), logPath.c_str(),
                        describeErrno(errno, buffer, sizeof buffer));
    if (flock(logFd, LOCK_EX | LOCK_NB) != 0)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "%s: %s is in use by another server", label.c_str(),
                        shardDir.c_str());
    uint64_t snapSeq = 0;
    if (dist_rt_status_t s = readSnapshot(
            shardFile(shardDir, options.shard, options.num_shards, ".snap"),
            snapSeq))
      return s;
    FileHeader h;
    off_t size = lseek(logFd, 0, SEEK_END);
    lseek(logFd, 0, SEEK_SET);
    stats.recovered_pushes = seq;
    if (size == 0) {
      FileHeader lh = fileHeader(kLogMagic);
      if (!writeFully(logFd, &lh, sizeof lh))
        return makeStatus(DIST_RT_ERROR_IO, "%s: cannot write %s: %s",
                          label.c_str(), logPath.c_str(),
                          describeErrno(errno, buffer, sizeof buffer));
      return nullptr;
    }
    if (!readAll(logFd, &h, sizeof h))
      return makeStatus(DIST_RT_ERROR_FORMAT, "%s: %s is truncated",
                        label.c_str(), logPath.c_str());
    if (dist_rt_status_t s = checkFileHeader(h, kLogMagic, logPath))
      return s;
    off_t good = sizeof h;
    std::vector<int64_t> ids;
    std::vector<float> grads;
    for (;;) {
      RecordHeader r;
      if (!readAll(logFd, &r, sizeof r))
        break;
      if (r.magic != kRecordMagic || r.table >= tables.size() ||
          r.worker >= options.num_workers)
        break;
      size_t dim = static_cast<size_t>(tables[r.table].table->dim());
      if (r.count > static_cast<uint64_t>(size))
        break;
      ids.resize(r.count);
      grads.resize(r.count * dim);
      if (!readAll(logFd, ids.data(), ids.size() * sizeof(int64_t)) ||
          !readAll(logFd, grads.data(), grads.size() * sizeof(float)))
        break;
      int64_t rows = tables[r.table].table->spec().rows;
      if (std::any_of(ids.begin(), ids.end(),
                      [&](int64_t id) { return id < 0 || id >= rows; }))
        break; // not a record this server wrote
      good = lseek(logFd, 0, SEEK_CUR);
      if (r.seq <= snapSeq)
        continue;
      seq = r.seq;
      take(r.table, r.worker, r.step, ids.data(), r.count, grads.data());
      ++sinceSnapshot;
    }
    stats.recovered_pushes = seq;
    // Drop a torn last record (never acknowledged).
    if (ftruncate(logFd, good) != 0 || lseek(logFd, good, SEEK_SET) != good)
      return makeStatus(DIST_RT_ERROR_IO, "%s: cannot truncate %s: %s",
                        label.c_str(), logPath.c_str(),
                        describeErrno(errno, buffer, sizeof buffer));
    return nullptr;
  }

  //===--------------------------------------------------------------------===//
  // Serving
  //===--------------------------------------------------------------------===//

  void sendReply(const std::string &identity, const Header &request,
                 uint32_t op, const void *payload, size_t bytes) {
    Header reply = request;
    reply.op = op;
    reply.count = bytes;
    z->send(socket, identity.data(), identity.size(), ZMQ_SNDMORE);
    z->send(socket, &reply, sizeof reply, ZMQ_SNDMORE);
    z->send(socket, payload, bytes, 0);
  }

  void sendError(const std::string &identity, const Header &request,
                 const std::string &text) {
    sendReply(identity, request, kError, text.data(), text.size());
  }

  /// The slowest worker's last push of table `t`.
  int64_t slowest(uint32_t t) const {
    const std::vector<int64_t> &pushed = tables[t].pushed;
    return *std::min_element(pushed.begin(), pushed.end());
  }

  bool ready(const Header &h) const {
    switch (options.mode) {
    case DIST_RT_PS_SYNC:
      return tables[h.table].appliedStep >= h.step - 1;
    case DIST_RT_PS_SSP:
      return slowest(h.table) >= h.step - 1 - int64_t(options.staleness);
    default:
      return true;
    }
  }

  void servePull(const std::string &identity, const Header &h,
                 const int64_t *ids) {
    Table &table = *tables[h.table].table;
    size_t dim = static_cast<size_t>(table.dim());
    size_t bytes = h.count * dim * sizeof(float);
    zmq_msg_t rows;
    z->msgInitSize(&rows, bytes);
    // Rows are gathered into the message, unless ZeroMQ keeps it (a small
    // one) at an address floats cannot be written at.
    void *data = z->msgData(&rows);
    bool aligned = reinterpret_cast<uintptr_t>(data) % alignof(float) == 0;
    if (!aligned)
      smallReply.resize(h.count * dim);
    float *out = aligned ? static_cast<float *>(data) : smallReply.data();
    for (uint64_t k = 0; k < h.count; ++k)
      table.read(ids[k], out + k * dim);
    if (!aligned)
      std::memcpy(data, smallReply.data(), bytes);
    if (h.op == kPull) {
      ++stats.pulls;
      stats.pulled_keys += h.count;
      stats.max_step_gap =
          std::max(stats.max_step_gap, h.step - 1 - slowest(h.table));
    }
    Header reply = h;
    reply.op = kReply;
    reply.count = h.count;
    z->send(socket, identity.data(), identity.size(), ZMQ_SNDMORE);
    z->send(socket, &reply, sizeof reply, ZMQ_SNDMORE);
    z->msgSend(&rows, socket, 0);
  }

  /// Answers a kReadState: the rows' optimizer state, then the table's
  /// count of applied updates.
  void serveState(const std::string &identity, const Header &h,
                  const int64_t *ids) {
    Table &table = *tables[h.table].table;
    size_t width = table.stride() - static_cast<size_t>(table.dim());
    std::vector<float> state(h.count * width);
    for (uint64_t k = 0; k < h.count; ++k)
      table.readState(ids[k], state.data() + k * width);
    int64_t updates = table.updates();
    std::string payload(state.size() * sizeof(float) + sizeof updates, '\0');
    std::memcpy(&payload[0], state.data(), state.size() * sizeof(float));
    std::memcpy(&payload[state.size() * sizeof(float)], &updates,
                sizeof updates);
    Header reply = h;
    reply.op = kReply;
    z->send(socket, identity.data(), identity.size(), ZMQ_SNDMORE);
    z->send(socket, &reply, sizeof reply, ZMQ_SNDMORE);
    z->send(socket, payload.data(), payload.size(), 0);
  }

  void serveDeferred() {
    for (size_t i = 0; i < deferred.size();) {
      if (!ready(deferred[i].header)) {
        ++i;
        continue;
      }
      Deferred d = std::move(deferred[i]);
      deferred.erase(deferred.begin() + static_cast<std::ptrdiff_t>(i));
      servePull(d.identity, d.header, d.ids.data());
    }
  }

  /// Checks the ids of a request: in the table, and on this shard.
  std::string checkIds(const Header &h, const int64_t *ids) const {
    const dist_rt_ps_table_t &spec = specs[h.table];
    for (uint64_t k = 0; k < h.count; ++k) {
      if (ids[k] < 0 || ids[k] >= spec.rows)
        return "table '" + std::string(spec.name) + "': id " +
               std::to_string(ids[k]) + " outside [0, " +
               std::to_string(spec.rows) + ")";
      if (shardOf(ids[k], options.num_shards) != options.shard)
        return "table '" + std::string(spec.name) + "': id " +
               std::to_string(ids[k]) + " belongs to shard " +
               std::to_string(shardOf(ids[k], options.num_shards)) +
               ", not to this one";
    }
    return {};
  }

  /// Handles one request; returns an error status only for failures of the
  /// server itself (its log).
  dist_rt_status_t handle(std::vector<std::unique_ptr<Frame>> &frames) {
    std::string identity(frames[0]->data(), frames[0]->size());
    Header h;
    if (frames.size() < 2 || frames[1]->size() != sizeof h)
      return nullptr; // not one of ours: nothing to answer
    std::memcpy(&h, frames[1]->data(), sizeof h);
    if (h.magic != kMagic)
      return nullptr;
    if (h.modelId != options.model_id) {
      sendError(identity, h, label + " serves another model");
      return nullptr;
    }
    if (h.worker >= options.num_workers) {
      sendError(identity, h,
                label + ": worker " + std::to_string(h.worker) +
                    " is not among its " + std::to_string(options.num_workers) +
                    " workers");
      return nullptr;
    }
    if (h.op == kHello) {
      if (h.aux != fingerprint)
        sendError(identity, h,
                  label + " serves other tables (another model "
                          "or other optimizer settings)");
      else if (h.shard != options.shard || h.numShards != options.num_shards)
        sendError(identity, h,
                  label + ", but the worker expected shard " +
                      std::to_string(h.shard) + " of " +
                      std::to_string(h.numShards));
      else if (h.numWorkers != options.num_workers)
        sendError(identity, h,
                  label + " expects " + std::to_string(options.num_workers) +
                      " workers, the worker says " +
                      std::to_string(h.numWorkers));
      else {
        // A worker resuming at step k against a server without state for
        // a table: that table's clock starts at k.
        bool moved = false;
        for (TableState &ts : tables) {
          bool fresh = ts.appliedStep == -1 &&
                       std::all_of(ts.pushed.begin(), ts.pushed.end(),
                                   [](int64_t p) { return p == -1; });
          if (!fresh || h.step <= 0)
            continue;
          ts.appliedStep = h.step - 1;
          std::fill(ts.pushed.begin(), ts.pushed.end(), h.step - 1);
          moved = true;
        }
        // The mode and bound: whether a worker may pull ahead of its
        // own pushes (dist_rt_ps_client_may_run_ahead).
        const uint32_t mode[2] = {options.mode, options.staleness};
        sendReply(identity, h, kReply, mode, sizeof mode);
        // Kept in the shard directory before any push depends on it.
        if (moved && !shardDir.empty())
          return writeSnapshot();
      }
      return nullptr;
    }
    if (h.op == kBye) {
      if (!said[h.worker]) {
        said[h.worker] = true;
        ++goodbyes;
      }
      sendReply(identity, h, kReply, nullptr, 0);
      return nullptr;
    }
    if (h.op != kPull && h.op != kPush && h.op != kRead && h.op != kReadState) {
      sendError(identity, h, label + ": unknown request");
      return nullptr;
    }
    if (h.table >= tables.size()) {
      sendError(identity, h, label + ": no table " + std::to_string(h.table));
      return nullptr;
    }
    size_t dim = static_cast<size_t>(specs[h.table].dim);
    size_t wantFrames = h.op == kPush ? 4 : 3;
    if (frames.size() != wantFrames ||
        frames[2]->size() != h.count * sizeof(int64_t) ||
        (h.op == kPush && frames[3]->size() != h.count * dim * sizeof(float))) {
      sendError(identity, h, label + ": malformed request");
      return nullptr;
    }
    // A frame's bytes need not be aligned (ZeroMQ keeps small messages
    // inside its message object): those are copied first.
    std::vector<int64_t> idCopy;
    const char *idBytes = frames[2]->data();
    const int64_t *ids = reinterpret_cast<const int64_t *>(idBytes);
    if (reinterpret_cast<uintptr_t>(idBytes) % alignof(int64_t)) {
      idCopy.resize(h.count);
      std::memcpy(idCopy.data(), idBytes, h.count * sizeof(int64_t));
      ids = idCopy.data();
    }
    std::string bad = checkIds(h, ids);
    if (!bad.empty()) {
      sendError(identity, h, label + ": " + bad);
      return nullptr;
    }
    if (h.op == kRead) {
      servePull(identity, h, ids);
      return nullptr;
    }
    if (h.op == kReadState) {
      serveState(identity, h, ids);
      return nullptr;
    }
    if (h.op == kPull) {
      if (ready(h))
        servePull(identity, h, ids);
      else
        deferred.push_back(
            {identity, h, std::vector<int64_t>(ids, ids + h.count)});
      return nullptr;
    }
    std::vector<float> gradCopy;
    const char *gradBytes = frames[3]->data();
    const float *grads = reinterpret_cast<const float *>(gradBytes);
    if (reinterpret_cast<uintptr_t>(gradBytes) % alignof(float)) {
      gradCopy.resize(h.count * dim);
      std::memcpy(gradCopy.data(), gradBytes, gradCopy.size() * sizeof(float));
      grads = gradCopy.data();
    }
    if (h.step > tables[h.table].pushed[h.worker]) {
      ++seq;
      if (dist_rt_status_t s =
              logPush(h.table, h.worker, h.step, ids, h.count, grads))
        return s;
      take(h.table, h.worker, h.step, ids, h.count, grads);
      ++stats.pushes;
      stats.pushed_keys += h.count;
      ++sinceSnapshot;
    }
    sendReply(identity, h, kReply, nullptr, 0);
    serveDeferred();
    if (sinceSnapshot >= options.snapshot_every && clean())
      return writeSnapshot();
    return nullptr;
  }

  dist_rt_status_t run() {
    zmq_pollitem_t item{socket, 0, ZMQ_POLLIN, 0};
    while (!stopping.load(std::memory_order_relaxed)) {
      if (!options.stay && goodbyes == options.num_workers)
        return nullptr;
      int n = z->poll(&item, 1, 100);
      if (n < 0) {
        if (z->errnum() == EINTR)
          continue;
        return makeStatus(DIST_RT_ERROR_COMM, "%s: %s", label.c_str(),
                          z->strerror(z->errnum()));
      }
      // Drain what has arrived.
      for (;;) {
        std::vector<std::unique_ptr<Frame>> frames;
        bool more = true;
        while (more) {
          frames.emplace_back(new Frame(*z));
          if (z->msgRecv(frames.back()->get(), socket, ZMQ_DONTWAIT) < 0) {
            frames.pop_back();
            break;
          }
          more = z->msgMore(frames.back()->get());
        }
        if (frames.empty())
          break;
        if (dist_rt_status_t s = handle(frames))
          return s;
      }
    }
    return nullptr;
  }
};

extern "C" {

DIST_RT_API void dist_rt_ps_table_initialize(dist_rt_ps_table_t *table) {
  std::memset(table, 0, sizeof *table);
  table->optimizer = DIST_RT_PS_SGD;
  table->lr = 0.01f;
  table->beta1 = 0.9f;
  table->beta2 = 0.999f;
  table->eps = 1e-8f;
  table->init = DIST_RT_PS_INIT_ZEROS;
}

DIST_RT_API size_t dist_rt_ps_state_floats(const dist_rt_ps_table_t *table) {
  return table ? dist_rt::ps::stateFloats(*table) : 0;
}

DIST_RT_API void
dist_rt_ps_server_options_initialize(dist_rt_ps_server_options_t *options) {
  std::memset(options, 0, sizeof *options);
  options->bind = "tcp://127.0.0.1:0";
  options->num_shards = 1;
  options->num_workers = 1;
  options->mode = DIST_RT_PS_SYNC;
}

DIST_RT_API uint32_t dist_rt_ps_shard_of(int64_t id, uint32_t num_shards) {
  return shardOf(id, num_shards);
}

DIST_RT_API dist_rt_status_t
dist_rt_ps_server_create(const dist_rt_ps_server_options_t *options,
                         const dist_rt_ps_table_t *tables, size_t num_tables,
                         dist_rt_ps_server_t *out_server) {
  return guardStatus("dist_rt_ps_server_create", [&]() -> dist_rt_status_t {
    if (!options || !out_server || (num_tables && !tables))
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "dist_rt_ps_server_create: null argument");
    *out_server = nullptr;
    if (options->num_shards == 0 || options->shard >= options->num_shards ||
        options->num_workers == 0 || options->mode > DIST_RT_PS_SSP)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "parameter server: shard %u of %u with %u workers "
                        "and mode %u is not a valid setting",
                        options->shard, options->num_shards,
                        options->num_workers, options->mode);
    for (size_t t = 0; t < num_tables; ++t) {
      const dist_rt_ps_table_t &spec = tables[t];
      if (!spec.name || spec.rows <= 0 || spec.dim <= 0 ||
          spec.optimizer > DIST_RT_PS_ADAM ||
          spec.init > DIST_RT_PS_INIT_ROWS ||
          (spec.init == DIST_RT_PS_INIT_ROWS && !spec.init_rows))
        return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                          "parameter server: table %zu ('%s') has no name, "
                          "an empty shape, or an unknown optimizer or "
                          "initializer",
                          t, spec.name ? spec.name : "");
    }
    std::string error;
    const ZmqApi *z = loadZmq(error);
    if (!z)
      return makeStatus(DIST_RT_ERROR_NOT_FOUND, "parameter server: %s",
                        error.c_str());
    std::unique_ptr<dist_rt_ps_server> server(new dist_rt_ps_server);
    server->z = z;
    server->options = *options;
    if (!server->options.snapshot_every)
      server->options.snapshot_every = 1000;
    server->label = "parameter server shard " + std::to_string(options->shard) +
                    " of " + std::to_string(options->num_shards);
    server->specs.assign(tables, tables + num_tables);
    server->fingerprint = tablesFingerprint(tables, num_tables);
    for (dist_rt_ps_table_t &spec : server->specs) {
      TableState ts;
      ts.table.reset(new Table(spec));
      spec.name = ts.table->name().c_str();
      ts.pushed.assign(options->num_workers, -1);
      server->tables.push_back(std::move(ts));
    }
    server->said.assign(options->num_workers, false);
    if (options->shard_dir && *options->shard_dir) {
      server->shardDir = options->shard_dir;
      if (dist_rt_status_t s = server->recover())
        return s;
    }
    server->context = z->ctxNew();
    server->socket =
        server->context ? z->socket(server->context, ZMQ_ROUTER) : nullptr;
    if (!server->socket)
      return makeStatus(DIST_RT_ERROR_COMM, "%s: cannot create a socket: %s",
                        server->label.c_str(), z->strerror(z->errnum()));
    int linger = 0;
    z->setsockopt(server->socket, ZMQ_LINGER, &linger, sizeof linger);
    int buffer = 4 << 20;
    z->setsockopt(server->socket, ZMQ_SNDBUF, &buffer, sizeof buffer);
    z->setsockopt(server->socket, ZMQ_RCVBUF, &buffer, sizeof buffer);
    const char *bind = options->bind ? options->bind : "tcp://127.0.0.1:0";
    std::string address = bind;
    // ZeroMQ spells "any free port" as '*'.
    if (address.size() > 2 && address.compare(address.size() - 2, 2, ":0") == 0)
      address.replace(address.size() - 1, 1, "*");
    if (z->bind(server->socket, address.c_str()) != 0)
      return makeStatus(DIST_RT_ERROR_COMM, "%s: cannot listen on %s: %s",
                        server->label.c_str(), bind, z->strerror(z->errnum()));
    char endpoint[256];
    size_t size = sizeof endpoint;
    if (z->getsockopt(server->socket, ZMQ_LAST_ENDPOINT, endpoint, &size) != 0)
      return makeStatus(DIST_RT_ERROR_COMM, "%s: %s", server->label.c_str(),
                        z->strerror(z->errnum()));
    server->endpoint = endpoint;
    server->label += " at " + server->endpoint;
    *out_server = server.release();
    return nullptr;
  });
}

DIST_RT_API const char *dist_rt_ps_server_endpoint(dist_rt_ps_server_t server) {
  return server ? server->endpoint.c_str() : "";
}

DIST_RT_API dist_rt_status_t dist_rt_ps_server_run(dist_rt_ps_server_t server) {
  if (!server)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_ps_server_run: null server");
  return guardStatus("dist_rt_ps_server_run", [&] { return server->run(); });
}

DIST_RT_API void dist_rt_ps_server_stop(dist_rt_ps_server_t server) {
  if (server)
    server->stopping.store(true, std::memory_order_relaxed);
}

DIST_RT_API void dist_rt_ps_server_stats(dist_rt_ps_server_t server,
                                         dist_rt_ps_server_stats_t *out_stats) {
  if (!server || !out_stats)
    return;
  *out_stats = server->stats;
  out_stats->rows = 0;
  for (const TableState &ts : server->tables)
    out_stats->rows += ts.table->rows();
}

DIST_RT_API void dist_rt_ps_server_release(dist_rt_ps_server_t server) {
  if (!server)
    return;
  if (server->logFd >= 0 && server->clean())
    dist_rt_status_free(server->writeSnapshot());
  delete server;
}

} // extern "C"
