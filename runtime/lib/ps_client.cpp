//===- ps_client.cpp - Parameter server client
//-----------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// A worker's side of the parameter server (dist_rt/ps.h): one ZeroMQ DEALER
// socket per server, ids de-duplicated and split by shard, requests to all
// servers concerned sent before any answer is awaited, and each request
// sent again (same request id) while unanswered, so that a server that
// restarts within the timeout gets it; answers to earlier sendings are
// dropped by their request id, and the server ignores a push of a step it
// has already taken.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "ps_internal.h"
#include "ps_zmq.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

using namespace dist_rt;
using namespace dist_rt::ps;

namespace {

using Clock = std::chrono::steady_clock;

/// Seconds between two sendings of an unanswered request.
constexpr double kResendSeconds = 2.0;

/// Most ids of one pull request: a larger pull goes in pieces that are all
/// in flight at once, so that the server gathers one while another travels.
/// Measured with 4,096-id pulls (about 2,900 distinct ids) on loopback,
/// 2-core AMD EPYC (bench/ps_throughput.py): one piece 5.7-7.8 M keys/s of
/// 16-float rows, pieces of 2,048 ids 9.2-10.7 M, 1,024 9.1-10.3 M, 768
/// 8.4-9.6 M; of 64-float rows one piece 3.2-3.8 M, 2,048 5.8-6.1 M, 1,024
/// 7.2-7.7 M, 768 5.8-6.5 M.
constexpr size_t kPullPiece = 1024;

struct Server {
  std::string endpoint;
  void *socket = nullptr;
};

/// One request to one server in flight.
struct Request {
  uint32_t server = 0;
  /// The request's ids are shardIds[server][first, first + header.count)
  /// of split `group` (one per table of a call).
  size_t first = 0;
  uint32_t group = 0;
  Header header;
  const void *ids = nullptr;
  size_t idBytes = 0;
  const void *rows = nullptr;
  size_t rowBytes = 0;
  bool hasRows = false;
  bool done = false;
  Clock::time_point sent;
};

} // namespace

struct dist_rt_ps_client {
  const ZmqApi *z = nullptr;
  void *context = nullptr;
  std::vector<Server> servers;
  std::vector<dist_rt_ps_table_t> specs;
  std::vector<std::string> names;
  uint32_t worker = 0, numWorkers = 1;
  /// dist_rt_ps_client_options_t::first_step, sent with the hello.
  int64_t firstStep = 0;
  /// Whether every server lets a pull run ahead of this worker's own last
  /// push (ASYNC, or SSP with a bound of 1 or more), as their hellos said.
  bool mayRunAhead = false;
  uint64_t modelId = 0, fingerprint = 0;
  double timeoutSeconds = 60;
  uint64_t nextRequest = 0;
  std::vector<int64_t> lastPushed;

  /// The ids of one table of a call split by shard: the distinct ids, each
  /// id's slot among them, per shard its ids, their slots and rows.
  struct Split {
    std::vector<int64_t> uniqueIds;
    std::vector<uint32_t> occurrence;
    std::vector<std::vector<int64_t>> shardIds;
    std::vector<std::vector<uint32_t>> shardSlots;
    std::vector<std::vector<float>> shardRows;
    std::vector<float> uniqueRows;
  };
  // Scratch reused between calls.
  IdMap unique;
  std::vector<Split> splits;
  std::vector<Request> requests;

  ~dist_rt_ps_client() {
    for (Server &s : servers)
      if (s.socket)
        z->close(s.socket);
    if (context)
      z->ctxTerm(context);
  }

  std::string describe(uint32_t s) const {
    return "parameter server " + servers[s].endpoint + " (shard " +
           std::to_string(s) + " of " + std::to_string(servers.size()) + ")";
  }

  bool sendRequest(Request &r) {
    int flags = ZMQ_DONTWAIT;
    void *socket = servers[r.server].socket;
    r.sent = Clock::now();
    if (z->send(socket, &r.header, sizeof r.header, flags | ZMQ_SNDMORE) < 0)
      return false; // not connected yet: sent again later
    int last = r.hasRows ? ZMQ_SNDMORE : 0;
    if (r.header.op == kHello || r.header.op == kBye) {
      z->send(socket, nullptr, 0, 0);
      return true;
    }
    z->send(socket, r.ids, r.idBytes, last);
    if (r.hasRows)
      z->send(socket, r.rows, r.rowBytes, 0);
    return true;
  }

  /// Sends `requests` and waits for every answer; `onReply(request, data,
  /// bytes)` sees each.
  template <typename OnReply>
  dist_rt_status_t exchange(const char *what, OnReply onReply) {
    Clock::time_point start = Clock::now();
    for (Request &r : requests) {
      r.header.requestId = ++nextRequest;
      r.header.modelId = modelId;
      r.header.worker = worker;
      sendRequest(r);
    }
    std::vector<zmq_pollitem_t> items;
    std::vector<uint32_t> itemServer;
    zmq_msg_t frames[2];
    for (;;) {
      items.clear();
      itemServer.clear();
      Clock::time_point now = Clock::now();
      double waited = std::chrono::duration<double>(now - start).count();
      size_t open = 0;
      for (Request &r : requests) {
        if (r.done)
          continue;
        ++open;
        if (std::chrono::duration<double>(now - r.sent).count() >=
            kResendSeconds)
          sendRequest(r);
        bool listed = false;
        for (uint32_t s : itemServer)
          listed |= s == r.server;
        if (!listed) {
          items.push_back({servers[r.server].socket, 0, ZMQ_POLLIN, 0});
          itemServer.push_back(r.server);
        }
      }
      if (!open)
        return nullptr;
      if (waited >= timeoutSeconds) {
        for (Request &r : requests)
          if (!r.done)
            return makeStatus(DIST_RT_ERROR_COMM,
                              "worker %u: %s did not answer a %s within %g s",
                              worker, describe(r.server).c_str(), what,
                              timeoutSeconds);
      }
      double left = std::min(timeoutSeconds - waited, kResendSeconds);
      int n = z->poll(items.data(), static_cast<int>(items.size()),
                      std::max(1L, static_cast<long>(left * 1000)));
      if (n < 0 && z->errnum() != EINTR)
        return makeStatus(DIST_RT_ERROR_COMM, "worker %u: %s", worker,
                          z->strerror(z->errnum()));
      for (size_t i = 0; n > 0 && i < items.size(); ++i) {
        if (!(items[i].revents & ZMQ_POLLIN))
          continue;
        void *socket = items[i].socket;
        for (;;) {
          z->msgInit(&frames[0]);
          if (z->msgRecv(&frames[0], socket, ZMQ_DONTWAIT) < 0) {
            z->msgClose(&frames[0]);
            break;
          }
          size_t count = 1;
          bool more = z->msgMore(&frames[0]);
          z->msgInit(&frames[1]);
          while (more) {
            // Keep the second frame; drop anything after it.
            zmq_msg_t *into = &frames[1];
            zmq_msg_t extra;
            if (count >= 2) {
              z->msgInit(&extra);
              into = &extra;
            }
            z->msgRecv(into, socket, 0);
            more = z->msgMore(into);
            if (count >= 2)
              z->msgClose(&extra);
            ++count;
          }
          Header h;
          bool ours = z->msgSize(&frames[0]) == sizeof h;
          if (ours)
            std::memcpy(&h, z->msgData(&frames[0]), sizeof h);
          dist_rt_status_t status = nullptr;
          if (ours && h.magic == kMagic) {
            for (Request &r : requests) {
              if (r.done || r.header.requestId != h.requestId)
                continue;
              r.done = true;
              const char *data =
                  static_cast<const char *>(z->msgData(&frames[1]));
              size_t bytes = z->msgSize(&frames[1]);
              if (h.op == kError)
                status = makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                                    "worker %u: %.*s", worker,
                                    static_cast<int>(bytes), data);
              else
                status = onReply(r, data, bytes);
              break;
            }
          }
          z->msgClose(&frames[0]);
          z->msgClose(&frames[1]);
          if (status)
            return status;
        }
      }
    }
  }

  dist_rt_status_t checkTable(const char *function, uint32_t table,
                              const int64_t *ids, size_t count) const {
    if (table >= specs.size())
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "%s: no table %u (%zu tables)", function, table,
                        specs.size());
    if (count && !ids)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT, "%s: null ids",
                        function);
    int64_t rows = specs[table].rows;
    for (size_t i = 0; i < count; ++i)
      if (ids[i] < 0 || ids[i] >= rows)
        return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                          "%s: table '%s': id %lld at position %zu is "
                          "outside [0, %lld)",
                          function, names[table].c_str(),
                          static_cast<long long>(ids[i]), i,
                          static_cast<long long>(rows));
    return nullptr;
  }

  /// Makes room for the splits of `n` tables (before any request points
  /// into them).
  void reserveSplits(size_t n) {
    if (splits.size() < n)
      splits.resize(n);
    for (Split &sp : splits) {
      sp.shardIds.resize(servers.size());
      sp.shardSlots.resize(servers.size());
      sp.shardRows.resize(servers.size());
    }
  }

  /// Splits the distinct `ids` by shard into `sp`.
  void split(const int64_t *ids, size_t count, Split &sp) {
    unique.clear();
    sp.uniqueIds.clear();
    sp.occurrence.resize(count);
    for (auto &v : sp.shardIds)
      v.clear();
    for (auto &v : sp.shardSlots)
      v.clear();
    uint32_t numShards = static_cast<uint32_t>(servers.size());
    for (size_t i = 0; i < count; ++i) {
      bool inserted;
      int64_t u = unique.insert(ids[i], inserted);
      sp.occurrence[i] = static_cast<uint32_t>(u);
      if (!inserted)
        continue;
      sp.uniqueIds.push_back(ids[i]);
      uint32_t s = shardOf(ids[i], numShards);
      sp.shardIds[s].push_back(ids[i]);
      sp.shardSlots[s].push_back(static_cast<uint32_t>(u));
    }
  }

  /// Appends a request `op` of `count` of shard `s`'s ids of split `group`
  /// from `first`.
  Request &addIdRequest(uint32_t s, uint32_t op, uint32_t table, int64_t step,
                        uint32_t group, size_t first, size_t count) {
    Request r;
    r.server = s;
    r.first = first;
    r.group = group;
    r.header.op = op;
    r.header.table = table;
    r.header.step = step;
    r.header.count = count;
    r.ids = splits[group].shardIds[s].data() + first;
    r.idBytes = count * sizeof(int64_t);
    requests.push_back(r);
    return requests.back();
  }

  /// Pulls or reads (kPull, kRead: dim floats per id) or reads the
  /// optimizer state (kReadState: dist_rt_ps_state_floats per id, and the
  /// largest count of applied updates into `updates`) of `n` tables at
  /// once: `ids[k]` (counts[k] of them) of table tables[k] into outs[k].
  /// Every request of the call is in flight together.
  dist_rt_status_t gather(const char *function, uint32_t op, size_t n,
                          const uint32_t *tables, const int64_t *const *ids,
                          const size_t *counts, int64_t step,
                          float *const *outs, int64_t *updates = nullptr) {
    for (size_t k = 0; k < n; ++k) {
      if (dist_rt_status_t s =
              checkTable(function, tables[k], ids[k], counts[k]))
        return s;
      if (counts[k] && !outs[k])
        return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT, "%s: null rows",
                          function);
    }
    auto dimOf = [&](uint32_t table) {
      return op == kReadState ? dist_rt::ps::stateFloats(specs[table])
                              : static_cast<size_t>(specs[table].dim);
    };
    // The state answer ends with the server's count of applied updates.
    size_t tail = op == kReadState ? sizeof(int64_t) : 0;
    if (updates)
      *updates = 0;
    reserveSplits(n);
    requests.clear();
    for (size_t k = 0; k < n; ++k) {
      Split &sp = splits[k];
      split(ids[k], counts[k], sp);
      sp.uniqueRows.resize(sp.uniqueIds.size() * dimOf(tables[k]));
      uint32_t g = static_cast<uint32_t>(k);
      for (uint32_t s = 0; s < servers.size(); ++s) {
        size_t have = sp.shardIds[s].size();
        for (size_t first = 0; first < have; first += kPullPiece)
          addIdRequest(s, op, tables[k], step, g, first,
                       std::min(kPullPiece, have - first));
        // Every server tells its count of updates.
        if (op == kReadState && have == 0)
          addIdRequest(s, op, tables[k], step, g, 0, 0);
      }
    }
    dist_rt_status_t status = exchange(
        op == kPull ? "pull" : "read",
        [&](const Request &r, const char *data,
            size_t bytes) -> dist_rt_status_t {
          Split &sp = splits[r.group];
          size_t dim = dimOf(r.header.table);
          const uint32_t *slots = sp.shardSlots[r.server].data() + r.first;
          size_t count = r.header.count;
          if (bytes != count * dim * sizeof(float) + tail)
            return makeStatus(DIST_RT_ERROR_COMM,
                              "worker %u: %s answered %zu bytes for %zu rows",
                              worker, describe(r.server).c_str(), bytes, count);
          if (tail && updates) {
            int64_t u;
            std::memcpy(&u, data + count * dim * sizeof(float), sizeof u);
            *updates = std::max(*updates, u);
          }
          for (size_t i = 0; i < count; ++i)
            std::memcpy(sp.uniqueRows.data() + slots[i] * dim,
                        data + i * dim * sizeof(float), dim * sizeof(float));
          return nullptr;
        });
    if (status)
      return status;
    for (size_t k = 0; k < n; ++k) {
      const Split &sp = splits[k];
      size_t dim = dimOf(tables[k]);
      for (size_t i = 0; i < counts[k]; ++i)
        std::memcpy(outs[k] + i * dim,
                    sp.uniqueRows.data() + sp.occurrence[i] * dim,
                    dim * sizeof(float));
    }
    return nullptr;
  }

  dist_rt_status_t gather(const char *function, uint32_t op, uint32_t table,
                          const int64_t *ids, size_t count, int64_t step,
                          float *out, int64_t *updates = nullptr) {
    return gather(function, op, 1, &table, &ids, &count, step, &out, updates);
  }

  /// Pushes the gradients grads[k] of the ids[k] (counts[k] of them) of
  /// table tables[k], k < n, for `step`, all in flight together.
  dist_rt_status_t push(size_t n, const uint32_t *tables,
                        const int64_t *const *ids, const size_t *counts,
                        const float *const *grads, int64_t step) {
    const char *function = "dist_rt_ps_push";
    for (size_t k = 0; k < n; ++k) {
      uint32_t table = tables[k];
      if (dist_rt_status_t s = checkTable(function, table, ids[k], counts[k]))
        return s;
      if (counts[k] && !grads[k])
        return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT, "%s: null gradients",
                          function);
      if (step <= lastPushed[table])
        return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                          "%s: table '%s': step %lld pushed after step %lld "
                          "(one push per table and step, in increasing "
                          "steps)",
                          function, names[table].c_str(),
                          static_cast<long long>(step),
                          static_cast<long long>(lastPushed[table]));
      for (size_t q = 0; q < k; ++q)
        if (tables[q] == table)
          return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                            "%s: table '%s' twice in one push", function,
                            names[table].c_str());
    }
    reserveSplits(n);
    requests.clear();
    for (size_t k = 0; k < n; ++k) {
      Split &sp = splits[k];
      size_t dim = static_cast<size_t>(specs[tables[k]].dim);
      split(ids[k], counts[k], sp);
      // Sum the gradients of repeated ids, then lay them out per shard.
      sp.uniqueRows.assign(sp.uniqueIds.size() * dim, 0.0f);
      for (size_t i = 0; i < counts[k]; ++i) {
        float *sum = sp.uniqueRows.data() + sp.occurrence[i] * dim;
        const float *g = grads[k] + i * dim;
        for (size_t j = 0; j < dim; ++j)
          sum[j] += g[j];
      }
      for (uint32_t s = 0; s < servers.size(); ++s) {
        // Every server hears of every step, with no ids too: SYNC and SSP
        // count steps by them (the client does not know the mode).
        std::vector<float> &rows = sp.shardRows[s];
        rows.resize(sp.shardIds[s].size() * dim);
        for (size_t i = 0; i < sp.shardSlots[s].size(); ++i)
          std::memcpy(rows.data() + i * dim,
                      sp.uniqueRows.data() + sp.shardSlots[s][i] * dim,
                      dim * sizeof(float));
        // One piece: a server takes one push per worker, table and step.
        Request &r =
            addIdRequest(s, kPush, tables[k], step, static_cast<uint32_t>(k), 0,
                         sp.shardIds[s].size());
        r.rows = rows.data();
        r.rowBytes = rows.size() * sizeof(float);
        r.hasRows = true;
      }
    }
    dist_rt_status_t status =
        exchange("push", [](const Request &, const char *, size_t) {
          return dist_rt_status_t(nullptr);
        });
    if (!status)
      for (size_t k = 0; k < n; ++k)
        lastPushed[tables[k]] = step;
    return status;
  }

  /// Sends a header-only request (hello, bye) to every server.
  dist_rt_status_t greet(uint32_t op, const char *what) {
    requests.clear();
    for (uint32_t s = 0; s < servers.size(); ++s) {
      Request r;
      r.server = s;
      r.header.op = op;
      r.header.aux = fingerprint;
      r.header.shard = s;
      r.header.numShards = static_cast<uint32_t>(servers.size());
      r.header.numWorkers = numWorkers;
      if (op == kHello)
        r.header.step = firstStep;
      requests.push_back(r);
    }
    // A hello's answer is the server's mode and bound (two uint32).
    size_t heard = 0, ahead = 0;
    dist_rt_status_t status =
        exchange(what, [&](const Request &, const char *data, size_t bytes) {
          uint32_t words[2];
          if (op == kHello && bytes == sizeof words) {
            std::memcpy(words, data, sizeof words);
            ++heard;
            ahead += words[0] == DIST_RT_PS_ASYNC ||
                     (words[0] == DIST_RT_PS_SSP && words[1] >= 1);
          }
          return dist_rt_status_t(nullptr);
        });
    if (op == kHello)
      mayRunAhead = heard == servers.size() && ahead == heard;
    return status;
  }
};

extern "C" {

DIST_RT_API void
dist_rt_ps_client_options_initialize(dist_rt_ps_client_options_t *options) {
  std::memset(options, 0, sizeof *options);
  options->num_workers = 1;
  options->timeout_seconds = 60;
}

DIST_RT_API dist_rt_status_t
dist_rt_ps_client_create(const dist_rt_ps_client_options_t *options,
                         const dist_rt_ps_table_t *tables, size_t num_tables,
                         dist_rt_ps_client_t *out_client) {
  return guardStatus("dist_rt_ps_client_create", [&]() -> dist_rt_status_t {
    if (!options || !out_client || (num_tables && !tables) ||
        (options->num_servers && !options->servers))
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "dist_rt_ps_client_create: null argument");
    *out_client = nullptr;
    if (options->num_servers == 0)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "parameter server client: no server addresses");
    if (options->num_workers == 0 || options->worker >= options->num_workers)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "parameter server client: worker %u of %u",
                        options->worker, options->num_workers);
    std::string error;
    const ZmqApi *z = loadZmq(error);
    if (!z)
      return makeStatus(DIST_RT_ERROR_NOT_FOUND, "parameter server client: %s",
                        error.c_str());
    std::unique_ptr<dist_rt_ps_client> client(new dist_rt_ps_client);
    client->z = z;
    client->worker = options->worker;
    client->numWorkers = options->num_workers;
    client->firstStep = options->first_step;
    client->modelId = options->model_id;
    client->timeoutSeconds =
        options->timeout_seconds > 0 ? options->timeout_seconds : 60;
    client->specs.assign(tables, tables + num_tables);
    for (const dist_rt_ps_table_t &spec : client->specs)
      client->names.push_back(spec.name ? spec.name : "");
    client->fingerprint = tablesFingerprint(tables, num_tables);
    client->lastPushed.assign(num_tables, -1);
    // Request ids start at random so that a restarted worker's are new.
    client->nextRequest = std::random_device{}() * 0x100000000ull;
    client->context = z->ctxNew();
    if (!client->context)
      return makeStatus(DIST_RT_ERROR_COMM, "parameter server client: %s",
                        z->strerror(z->errnum()));
    size_t n = options->num_servers;
    for (size_t s = 0; s < n; ++s) {
      Server server;
      server.endpoint = options->servers[s] ? options->servers[s] : "";
      server.socket = z->socket(client->context, ZMQ_DEALER);
      if (!server.socket)
        return makeStatus(DIST_RT_ERROR_COMM, "parameter server client: %s",
                          z->strerror(z->errnum()));
      int linger = 0, reconnect = 100, reconnectMax = 1000;
      z->setsockopt(server.socket, ZMQ_LINGER, &linger, sizeof linger);
      int buffer = 4 << 20;
      z->setsockopt(server.socket, ZMQ_SNDBUF, &buffer, sizeof buffer);
      z->setsockopt(server.socket, ZMQ_RCVBUF, &buffer, sizeof buffer);
      z->setsockopt(server.socket, ZMQ_RECONNECT_IVL, &reconnect,
                    sizeof reconnect);
      z->setsockopt(server.socket, ZMQ_RECONNECT_IVL_MAX, &reconnectMax,
                    sizeof reconnectMax);
      client->servers.push_back(server);
      if (z->connect(server.socket, server.endpoint.c_str()) != 0)
        return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                          "parameter server client: cannot connect to "
                          "'%s' (shard %zu): %s",
                          server.endpoint.c_str(), s, z->strerror(z->errnum()));
    }
    if (dist_rt_status_t s = client->greet(kHello, "hello"))
      return s;
    *out_client = client.release();
    return nullptr;
  });
}

DIST_RT_API dist_rt_status_t dist_rt_ps_pull(dist_rt_ps_client_t client,
                                             uint32_t table, const int64_t *ids,
                                             size_t count, int64_t step,
                                             float *out_rows) {
  if (!client)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_ps_pull: null client");
  return guardStatus("dist_rt_ps_pull", [&] {
    return client->gather("dist_rt_ps_pull", kPull, table, ids, count, step,
                          out_rows);
  });
}

DIST_RT_API dist_rt_status_t dist_rt_ps_read(dist_rt_ps_client_t client,
                                             uint32_t table, const int64_t *ids,
                                             size_t count, float *out_rows) {
  if (!client)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_ps_read: null client");
  return guardStatus("dist_rt_ps_read", [&] {
    return client->gather("dist_rt_ps_read", kRead, table, ids, count, 0,
                          out_rows);
  });
}

DIST_RT_API int dist_rt_ps_client_may_run_ahead(dist_rt_ps_client_t client) {
  return client && client->mayRunAhead ? 1 : 0;
}

DIST_RT_API dist_rt_status_t dist_rt_ps_read_state(
    dist_rt_ps_client_t client, uint32_t table, const int64_t *ids,
    size_t count, float *out_state, int64_t *out_updates) {
  if (!client)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_ps_read_state: null client");
  return guardStatus("dist_rt_ps_read_state", [&] {
    return client->gather("dist_rt_ps_read_state", kReadState, table, ids,
                          count, 0, out_state, out_updates);
  });
}

DIST_RT_API dist_rt_status_t dist_rt_ps_push(dist_rt_ps_client_t client,
                                             uint32_t table, const int64_t *ids,
                                             size_t count, const float *grads,
                                             int64_t step) {
  if (!client)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_ps_push: null client");
  return guardStatus("dist_rt_ps_push", [&] {
    return client->push(1, &table, &ids, &count, &grads, step);
  });
}

DIST_RT_API dist_rt_status_t dist_rt_ps_pull_tables(
    dist_rt_ps_client_t client, size_t num_tables, const uint32_t *tables,
    const int64_t *const *ids, const size_t *counts, int64_t step,
    float *const *out_rows) {
  if (!client || (num_tables && (!tables || !ids || !counts || !out_rows)))
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_ps_pull_tables: null argument");
  return guardStatus("dist_rt_ps_pull_tables", [&] {
    return client->gather("dist_rt_ps_pull", kPull, num_tables, tables, ids,
                          counts, step, out_rows);
  });
}

DIST_RT_API dist_rt_status_t dist_rt_ps_push_tables(
    dist_rt_ps_client_t client, size_t num_tables, const uint32_t *tables,
    const int64_t *const *ids, const size_t *counts, const float *const *grads,
    int64_t step) {
  if (!client || (num_tables && (!tables || !ids || !counts || !grads)))
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_ps_push_tables: null argument");
  return guardStatus("dist_rt_ps_push_tables", [&] {
    return client->push(num_tables, tables, ids, counts, grads, step);
  });
}

DIST_RT_API dist_rt_status_t
dist_rt_ps_client_finish(dist_rt_ps_client_t client) {
  if (!client)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_ps_client_finish: null client");
  return guardStatus("dist_rt_ps_client_finish",
                     [&] { return client->greet(kBye, "goodbye"); });
}

DIST_RT_API void dist_rt_ps_client_release(dist_rt_ps_client_t client) {
  delete client;
}

} // extern "C"
