//===- PsTest.cpp - Tests of the parameter server
//--------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The per-row optimizers against their formulas (PyTorch's sparse SGD,
// Adagrad and SparseAdam), the id map, initial rows that do not depend on
// the number of shards, and a server on a thread with clients: pulls of
// repeated ids, pushes that sum repeats, reads that create no rows, and the
// errors of bad ids, bad steps and bad options. Multi-process scenarios
// (several workers, SIGKILL, staleness) are in test/Runtime/ps-server.test.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/ps.h"
#include "ps_internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

using namespace dist_rt::ps;

namespace {

dist_rt_ps_table_t makeTable(const char *name, int64_t rows, int64_t dim,
                             uint32_t optimizer) {
  dist_rt_ps_table_t t;
  dist_rt_ps_table_initialize(&t);
  t.name = name;
  t.rows = rows;
  t.dim = dim;
  t.optimizer = optimizer;
  t.lr = 0.1f;
  t.init = DIST_RT_PS_INIT_UNIFORM;
  t.init_a = -0.5f;
  t.init_b = 0.5f;
  t.seed = 7;
  return t;
}

std::string takeMessage(dist_rt_status_t status) {
  if (!status)
    return "";
  std::string message = dist_rt_status_message(status);
  dist_rt_status_free(status);
  return message;
}

TEST(PsTable, OptimizersFollowTheirFormulas) {
  for (uint32_t opt : {DIST_RT_PS_SGD, DIST_RT_PS_ADAGRAD, DIST_RT_PS_ADAM}) {
    dist_rt_ps_table_t spec = makeTable("t", 10, 3, opt);
    spec.eps = opt == DIST_RT_PS_ADAGRAD ? 1e-10f : 1e-8f;
    Table table(spec);
    // Reference in double: row 4 gets gradients in steps 1 and 3, row 6
    // in step 2 only (lazy Adam leaves row 4's moments alone in step 2).
    std::vector<double> w4(3), w6(3), s4(3, 0), s6(3, 0), m4(3, 0), v4(3, 0),
        m6(3, 0), v6(3, 0);
    std::vector<float> init(3);
    table.read(4, init.data());
    for (int j = 0; j < 3; ++j)
      w4[j] = init[j];
    table.read(6, init.data());
    for (int j = 0; j < 3; ++j)
      w6[j] = init[j];
    auto update = [&](std::vector<double> &w, std::vector<double> &s,
                      std::vector<double> &m, std::vector<double> &v,
                      const float *g, int t) {
      for (int j = 0; j < 3; ++j) {
        if (opt == DIST_RT_PS_SGD) {
          w[j] -= 0.1 * g[j];
        } else if (opt == DIST_RT_PS_ADAGRAD) {
          s[j] += double(g[j]) * g[j];
          w[j] -= 0.1 * g[j] / (std::sqrt(s[j]) + 1e-10);
        } else {
          m[j] = 0.9 * m[j] + 0.1 * g[j];
          v[j] = 0.999 * v[j] + 0.001 * double(g[j]) * g[j];
          double stepSize =
              0.1 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
          w[j] -= stepSize * m[j] / (std::sqrt(v[j]) + 1e-8);
        }
      }
    };
    const float g1[3] = {0.5f, -1.0f, 2.0f}, g2[3] = {1.0f, 0.25f, -0.5f},
                g3[3] = {-0.3f, 0.7f, 0.1f};
    int64_t id4 = 4, id6 = 6;
    table.apply(&id4, 1, g1);
    update(w4, s4, m4, v4, g1, 1);
    table.apply(&id6, 1, g2);
    update(w6, s6, m6, v6, g2, 2);
    table.apply(&id4, 1, g3);
    update(w4, s4, m4, v4, g3, 3);
    std::vector<float> got(3);
    table.read(4, got.data());
    for (int j = 0; j < 3; ++j)
      EXPECT_NEAR(got[j], w4[j], 1e-6) << "optimizer " << opt << " row 4";
    table.read(6, got.data());
    for (int j = 0; j < 3; ++j)
      EXPECT_NEAR(got[j], w6[j], 1e-6) << "optimizer " << opt << " row 6";
    EXPECT_EQ(table.rows(), 2u);
    EXPECT_EQ(table.updates(), 3);
  }
}

TEST(PsTable, InitialRowsDependOnlyOnSeedAndId) {
  dist_rt_ps_table_t spec = makeTable("t", 1000, 8, DIST_RT_PS_SGD);
  Table a(spec), b(spec);
  std::vector<float> ra(8), rb(8);
  // Touch rows in different orders.
  for (int64_t id = 0; id < 50; ++id)
    a.row(id);
  for (int64_t id = 49; id >= 0; --id)
    b.row(id);
  for (int64_t id : {0, 17, 49, 999}) {
    a.read(id, ra.data());
    b.read(id, rb.data());
    EXPECT_EQ(ra, rb);
    for (float x : ra) {
      EXPECT_GE(x, -0.5f);
      EXPECT_LT(x, 0.5f);
    }
  }
  a.read(1, ra.data());
  a.read(2, rb.data());
  EXPECT_NE(ra, rb);
  spec.init = DIST_RT_PS_INIT_NORMAL;
  spec.init_a = 1.0f;
  spec.init_b = 0.1f;
  Table n(spec);
  double sum = 0;
  std::vector<float> r(8);
  for (int64_t id = 0; id < 1000; ++id) {
    n.read(id, r.data());
    for (float x : r)
      sum += x;
  }
  EXPECT_NEAR(sum / 8000, 1.0, 0.01);
}

TEST(PsIdMap, InsertsFindsAndGrows) {
  IdMap map;
  for (int64_t id = 0; id < 10000; id += 3) {
    bool inserted;
    EXPECT_EQ(map.insert(id * 7919, inserted), id / 3);
    EXPECT_TRUE(inserted);
  }
  bool inserted;
  EXPECT_EQ(map.insert(3 * 7919, inserted), 1);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(map.find(9 * 7919), 3);
  EXPECT_EQ(map.find(1), -1);
  map.clear();
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.find(0), -1);
}

TEST(PsShard, SpreadsIdsEvenly) {
  std::vector<int> count(4, 0);
  for (int64_t id = 0; id < 40000; ++id)
    ++count[dist_rt_ps_shard_of(id, 4)];
  for (int c : count)
    EXPECT_NEAR(c, 10000, 500);
  EXPECT_EQ(dist_rt_ps_shard_of(12345, 1), 0u);
}

/// A server on a thread, for one test.
class ServerThread {
public:
  ServerThread(const std::vector<dist_rt_ps_table_t> &tables,
               uint32_t workers) {
    dist_rt_ps_server_options_t options;
    dist_rt_ps_server_options_initialize(&options);
    options.num_workers = workers;
    dist_rt_status_t status = dist_rt_ps_server_create(&options, tables.data(),
                                                       tables.size(), &server);
    EXPECT_EQ(takeMessage(status), "");
    thread = std::thread([this] { runStatus = dist_rt_ps_server_run(server); });
  }
  ~ServerThread() {
    dist_rt_ps_server_stop(server);
    thread.join();
    EXPECT_EQ(takeMessage(runStatus), "");
    dist_rt_ps_server_release(server);
  }
  std::string endpoint() const { return dist_rt_ps_server_endpoint(server); }
  dist_rt_ps_server_stats_t stats() const {
    dist_rt_ps_server_stats_t s;
    dist_rt_ps_server_stats(server, &s);
    return s;
  }

private:
  dist_rt_ps_server_t server = nullptr;
  dist_rt_status_t runStatus = nullptr;
  std::thread thread;
};

dist_rt_ps_client_t connectTo(const std::string &endpoint,
                              const std::vector<dist_rt_ps_table_t> &tables,
                              double timeout = 10, int64_t firstStep = 0) {
  const char *servers[] = {endpoint.c_str()};
  dist_rt_ps_client_options_t options;
  dist_rt_ps_client_options_initialize(&options);
  options.first_step = firstStep;
  options.servers = servers;
  options.num_servers = 1;
  options.timeout_seconds = timeout;
  dist_rt_ps_client_t client = nullptr;
  EXPECT_EQ(takeMessage(dist_rt_ps_client_create(&options, tables.data(),
                                                 tables.size(), &client)),
            "");
  return client;
}

TEST(PsServer, PullsAndPushesRepeatedIds) {
  std::vector<dist_rt_ps_table_t> tables = {
      makeTable("emb", 100, 4, DIST_RT_PS_SGD)};
  ServerThread server(tables, 1);
  dist_rt_ps_client_t client = connectTo(server.endpoint(), tables);
  ASSERT_NE(client, nullptr);
  Table local(tables[0]);
  std::vector<int64_t> ids = {5, 9, 5, 99, 0, 9, 5};
  std::vector<float> rows(ids.size() * 4), want(4);
  ASSERT_EQ(takeMessage(dist_rt_ps_pull(client, 0, ids.data(), ids.size(), 0,
                                        rows.data())),
            "");
  for (size_t i = 0; i < ids.size(); ++i) {
    local.read(ids[i], want.data());
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(rows[i * 4 + j], want[j]) << "id " << ids[i];
  }
  // One row of 16 bytes: a message ZeroMQ keeps inside its own object.
  int64_t one = 42;
  ASSERT_EQ(takeMessage(dist_rt_ps_pull(client, 0, &one, 1, 0, rows.data())),
            "");
  local.read(one, want.data());
  for (int j = 0; j < 4; ++j)
    EXPECT_EQ(rows[j], want[j]);
  // Reads and pulls create no rows.
  EXPECT_EQ(server.stats().rows, 0u);
  std::vector<float> grads(ids.size() * 4);
  for (size_t i = 0; i < grads.size(); ++i)
    grads[i] = 0.1f * static_cast<float>(i % 5) - 0.2f;
  ASSERT_EQ(takeMessage(dist_rt_ps_push(client, 0, ids.data(), ids.size(),
                                        grads.data(), 0)),
            "");
  // The same update locally: repeats summed, one update.
  std::vector<int64_t> unique = {5, 9, 99, 0};
  std::vector<float> sums(16, 0.0f);
  for (size_t i = 0; i < ids.size(); ++i) {
    size_t u = std::find(unique.begin(), unique.end(), ids[i]) - unique.begin();
    for (int j = 0; j < 4; ++j)
      sums[u * 4 + j] += grads[i * 4 + j];
  }
  local.apply(unique.data(), unique.size(), sums.data());
  std::vector<float> got(4 * unique.size());
  ASSERT_EQ(takeMessage(dist_rt_ps_read(client, 0, unique.data(), unique.size(),
                                        got.data())),
            "");
  for (size_t u = 0; u < unique.size(); ++u) {
    local.read(unique[u], want.data());
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(got[u * 4 + j], want[j]) << "id " << unique[u];
  }
  dist_rt_ps_server_stats_t stats = server.stats();
  EXPECT_EQ(stats.rows, 4u);
  EXPECT_EQ(stats.pushes, 1u);
  EXPECT_EQ(stats.pulled_keys, 5u); // distinct ids only
  // Bad ids, tables and steps are refused before anything is sent.
  int64_t bad = 100;
  EXPECT_EQ(takeMessage(dist_rt_ps_pull(client, 0, &bad, 1, 1, rows.data())),
            "dist_rt_ps_pull: table 'emb': id 100 at position 0 is outside "
            "[0, 100)");
  bad = -1;
  EXPECT_NE(takeMessage(dist_rt_ps_push(client, 0, &bad, 1, grads.data(), 1))
                .find("id -1 at position 0 is outside"),
            std::string::npos);
  EXPECT_EQ(
      takeMessage(dist_rt_ps_pull(client, 3, ids.data(), 1, 1, rows.data())),
      "dist_rt_ps_pull: no table 3 (1 tables)");
  EXPECT_EQ(
      takeMessage(dist_rt_ps_push(client, 0, ids.data(), 1, grads.data(), 0)),
      "dist_rt_ps_push: table 'emb': step 0 pushed after step 0 (one "
      "push per table and step, in increasing steps)");
  EXPECT_EQ(takeMessage(dist_rt_ps_client_finish(client)), "");
  dist_rt_ps_client_release(client);
}

TEST(PsServer, PullsLargeBatchesInPieces) {
  // More distinct ids than one request carries (ps_client.cpp's pieces).
  std::vector<dist_rt_ps_table_t> tables = {
      makeTable("big", 20000, 3, DIST_RT_PS_SGD)};
  ServerThread server(tables, 1);
  dist_rt_ps_client_t client = connectTo(server.endpoint(), tables);
  ASSERT_NE(client, nullptr);
  Table local(tables[0]);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 5000; ++i)
    ids.push_back((i * 7919) % 20000);
  ids.push_back(ids[17]);
  std::vector<float> rows(ids.size() * 3), want(3);
  ASSERT_EQ(takeMessage(dist_rt_ps_pull(client, 0, ids.data(), ids.size(), 0,
                                        rows.data())),
            "");
  for (size_t i = 0; i < ids.size(); ++i) {
    local.read(ids[i], want.data());
    for (int j = 0; j < 3; ++j)
      ASSERT_EQ(rows[i * 3 + j], want[j]) << "id " << ids[i];
  }
  EXPECT_GT(server.stats().pulls, 1u);
  EXPECT_EQ(server.stats().pulled_keys, 5000u);
  EXPECT_EQ(takeMessage(dist_rt_ps_client_finish(client)), "");
  dist_rt_ps_client_release(client);
}

TEST(PsServer, PullsAndPushesTablesTogether) {
  // Two tables in one call each way give what calls per table give.
  std::vector<dist_rt_ps_table_t> tables = {
      makeTable("a", 40, 3, DIST_RT_PS_SGD),
      makeTable("b", 30, 2, DIST_RT_PS_ADAGRAD)};
  ServerThread together(tables, 1), apart(tables, 1);
  dist_rt_ps_client_t one = connectTo(together.endpoint(), tables);
  dist_rt_ps_client_t two = connectTo(apart.endpoint(), tables);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  std::vector<int64_t> idsA = {3, 7, 3, 39}, idsB = {29, 0, 0};
  const uint32_t both[] = {0, 1};
  const int64_t *ids[] = {idsA.data(), idsB.data()};
  const size_t counts[] = {idsA.size(), idsB.size()};
  std::vector<float> gradsA(4 * 3), gradsB(3 * 2);
  for (size_t i = 0; i < gradsA.size(); ++i)
    gradsA[i] = 0.01f * static_cast<float>(i) - 0.05f;
  for (size_t i = 0; i < gradsB.size(); ++i)
    gradsB[i] = 0.2f - 0.03f * static_cast<float>(i);
  const float *grads[] = {gradsA.data(), gradsB.data()};
  for (int64_t step = 0; step < 3; ++step) {
    std::vector<float> a1(4 * 3), b1(3 * 2), a2(4 * 3), b2(3 * 2);
    float *rows[] = {a1.data(), b1.data()};
    ASSERT_EQ(takeMessage(dist_rt_ps_pull_tables(one, 2, both, ids, counts,
                                                 step, rows)),
              "");
    ASSERT_EQ(takeMessage(dist_rt_ps_pull(two, 0, idsA.data(), idsA.size(),
                                          step, a2.data())),
              "");
    ASSERT_EQ(takeMessage(dist_rt_ps_pull(two, 1, idsB.data(), idsB.size(),
                                          step, b2.data())),
              "");
    EXPECT_EQ(a1, a2);
    EXPECT_EQ(b1, b2);
    ASSERT_EQ(takeMessage(dist_rt_ps_push_tables(one, 2, both, ids, counts,
                                                 grads, step)),
              "");
    ASSERT_EQ(takeMessage(dist_rt_ps_push(two, 0, idsA.data(), idsA.size(),
                                          gradsA.data(), step)),
              "");
    ASSERT_EQ(takeMessage(dist_rt_ps_push(two, 1, idsB.data(), idsB.size(),
                                          gradsB.data(), step)),
              "");
  }
  // A table twice in one push is refused before anything is sent.
  const uint32_t twice[] = {1, 1};
  const int64_t *idsTwice[] = {idsB.data(), idsB.data()};
  const size_t countsTwice[] = {idsB.size(), idsB.size()};
  const float *gradsTwice[] = {gradsB.data(), gradsB.data()};
  EXPECT_EQ(takeMessage(dist_rt_ps_push_tables(one, 2, twice, idsTwice,
                                               countsTwice, gradsTwice, 3)),
            "dist_rt_ps_push: table 'b' twice in one push");
  for (dist_rt_ps_client_t c : {one, two}) {
    EXPECT_EQ(takeMessage(dist_rt_ps_client_finish(c)), "");
    dist_rt_ps_client_release(c);
  }
}

TEST(PsServer, StateReadBackContinuesExactly) {
  // Adam's moments and count of updates read from one server and given to
  // a fresh one (a checkpoint's init_rows, init_state, init_updates): the
  // next update gives the same rows on both.
  std::vector<dist_rt_ps_table_t> tables = {
      makeTable("emb", 50, 3, DIST_RT_PS_ADAM)};
  EXPECT_EQ(dist_rt_ps_state_floats(&tables[0]), 6u);
  std::vector<int64_t> all(50);
  for (int64_t i = 0; i < 50; ++i)
    all[static_cast<size_t>(i)] = i;
  std::vector<float> rows(50 * 3), state(50 * 6), grads(4 * 3);
  std::vector<int64_t> ids = {3, 17, 3, 40};
  int64_t updates = -1;
  std::vector<float> first(4 * 3);
  {
    ServerThread server(tables, 1);
    dist_rt_ps_client_t client = connectTo(server.endpoint(), tables);
    ASSERT_NE(client, nullptr);
    for (int64_t step = 0; step < 3; ++step) {
      for (size_t i = 0; i < grads.size(); ++i)
        grads[i] = 0.05f * static_cast<float>((i + step) % 7) - 0.1f;
      ASSERT_EQ(takeMessage(dist_rt_ps_push(client, 0, ids.data(), 3 - step,
                                            grads.data(), step)),
                "");
    }
    ASSERT_EQ(takeMessage(dist_rt_ps_read(client, 0, all.data(), all.size(),
                                          rows.data())),
              "");
    ASSERT_EQ(takeMessage(dist_rt_ps_read_state(
                  client, 0, all.data(), all.size(), state.data(), &updates)),
              "");
    EXPECT_EQ(updates, 3);
    // Row 3 has moments, row 0 (never pushed) none.
    EXPECT_NE(state[3 * 6], 0.0f);
    for (int j = 0; j < 6; ++j)
      EXPECT_EQ(state[j], 0.0f);
    ASSERT_EQ(takeMessage(dist_rt_ps_push(client, 0, ids.data(), ids.size(),
                                          grads.data(), 3)),
              "");
    ASSERT_EQ(takeMessage(dist_rt_ps_read(client, 0, ids.data(), ids.size(),
                                          first.data())),
              "");
    EXPECT_EQ(takeMessage(dist_rt_ps_client_finish(client)), "");
    dist_rt_ps_client_release(client);
  }
  std::vector<dist_rt_ps_table_t> resumed = tables;
  resumed[0].init = DIST_RT_PS_INIT_ROWS;
  resumed[0].init_rows = rows.data();
  resumed[0].init_state = state.data();
  resumed[0].init_updates = updates;
  ServerThread server(resumed, 1);
  // The worker resumes at step 3: the fresh server's clock starts there.
  dist_rt_ps_client_t client = connectTo(server.endpoint(), resumed, 10, 3);
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(takeMessage(dist_rt_ps_push(client, 0, ids.data(), ids.size(),
                                        grads.data(), 3)),
            "");
  std::vector<float> second(4 * 3);
  ASSERT_EQ(takeMessage(dist_rt_ps_read(client, 0, ids.data(), ids.size(),
                                        second.data())),
            "");
  EXPECT_EQ(first, second);
  EXPECT_EQ(takeMessage(dist_rt_ps_client_finish(client)), "");
  dist_rt_ps_client_release(client);
}

TEST(PsServer, RefusesBadOptions) {
  std::vector<dist_rt_ps_table_t> tables = {
      makeTable("emb", 0, 4, DIST_RT_PS_SGD)};
  dist_rt_ps_server_options_t options;
  dist_rt_ps_server_options_initialize(&options);
  dist_rt_ps_server_t server = nullptr;
  EXPECT_EQ(takeMessage(
                dist_rt_ps_server_create(&options, tables.data(), 1, &server)),
            "parameter server: table 0 ('emb') has no name, an empty shape, "
            "or an unknown optimizer or initializer");
  tables[0].rows = 10;
  options.shard = 2;
  options.num_shards = 2;
  EXPECT_NE(
      takeMessage(dist_rt_ps_server_create(&options, tables.data(), 1, &server))
          .find("shard 2 of 2"),
      std::string::npos);
  options.shard = 0;
  options.bind = "tcp://no-such-host.invalid:1";
  EXPECT_NE(
      takeMessage(dist_rt_ps_server_create(&options, tables.data(), 1, &server))
          .find("cannot listen on tcp://no-such-host.invalid:1"),
      std::string::npos);
  EXPECT_EQ(server, nullptr);
}

} // namespace
