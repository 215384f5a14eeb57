//===- dist-ps.cpp - Run and exercise parameter servers -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-ps server --tables NAME:ROWS:DIM[,...] [table options] [--listen ADDR]
//                [--shard K --shards N] [--workers W] [--mode sync|async|ssp:K]
//                [--shard-dir DIR] [--snapshot-every N] [--endpoint-file F]
//                [--stay]
// dist-ps work   --servers ADDR[,ADDR...] --tables ... [table options]
//                [--worker I --workers W] [--steps S] [--batch B]
//                [--repeat FRACTION] [--sleep-ms MS] [--timeout S]
//                [--dump FILE]
// dist-ps local  --tables ... [table options] [--workers W] [--steps S]
//                [--batch B] [--repeat FRACTION] --dump FILE
// dist-ps bench  --servers ADDR[,...] --tables NAME:ROWS:DIM [--batch B]
//                [--repeat FRACTION] [--seconds S]
// table options: [--optimizer sgd|adagrad|adam] [--lr X] [--eps X]
//                [--init zeros|uniform:A,B|normal:M,S] [--seed N]
//                [--model-id N]
//
// `server` runs one shard of a parameter server (dist_rt/ps.h) until every
// worker has said goodbye (or forever with --stay; SIGINT or SIGTERM stop
// it), printing its counters on exit. `work` runs worker I of a synthetic
// training workload: each step pulls a batch of ids (drawn from the step,
// the worker and --seed, with the given fraction of repeats), computes
// gradients that depend on the pulled rows, and pushes them; `local` runs
// the same workload for all W workers in one process, with the SYNC update
// (the sum of every worker's gradients, one update per step). --dump writes
// every row of every table (pulled back from the servers for `work` as of
// the step after the last, which SYNC serves once every worker's last step
// is applied) as raw float32, so that a distributed run and `local` can be
// compared byte for byte. `bench` measures pull and push throughput
// (keys per second) against running servers.
//
// Errors are one "dist-ps: error: ..." line and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/ps.h"
#include "ps_internal.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "dist-ps: error: %s\n", message.c_str());
  std::exit(1);
}

void check(dist_rt_status_t status) {
  if (!status)
    return;
  std::string message = dist_rt_status_message(status);
  dist_rt_status_free(status);
  fail(message);
}

std::vector<std::string> splitList(const std::string &text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos)
      return parts;
    start = end + 1;
  }
}

double parseNumber(const std::string &flag, const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end)
    fail(flag + " expects a number, got '" + text + "'");
  return v;
}

struct Options {
  std::string command;
  std::vector<dist_rt_ps_table_t> tables;
  std::vector<std::string> names;
  std::string listen = "tcp://127.0.0.1:0", shardDir, endpointFile, dump;
  std::vector<std::string> servers;
  uint32_t shard = 0, shards = 1, workers = 1, worker = 0;
  uint32_t mode = DIST_RT_PS_SYNC, staleness = 0, snapshotEvery = 0;
  bool stay = false;
  uint64_t modelId = 1;
  int64_t steps = 10, batch = 256, sleepMs = 0;
  double repeat = 0.3, seconds = 3, timeout = 60;
};

Options parse(int argc, char **argv) {
  if (argc < 2)
    fail("usage: dist-ps server|work|local|bench [options] (see the source)");
  Options o;
  o.command = argv[1];
  std::string tables, optimizer = "sgd", init = "uniform:-0.05,0.05";
  double lr = 0.01, eps = -1;
  uint64_t seed = 1;
  for (int i = 2; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--stay") {
      o.stay = true;
      continue;
    }
    if (i + 1 >= argc)
      fail(flag + " expects a value");
    std::string v = argv[++i];
    if (flag == "--tables")
      tables = v;
    else if (flag == "--optimizer")
      optimizer = v;
    else if (flag == "--lr")
      lr = parseNumber(flag, v);
    else if (flag == "--eps")
      eps = parseNumber(flag, v);
    else if (flag == "--init")
      init = v;
    else if (flag == "--seed")
      seed = static_cast<uint64_t>(parseNumber(flag, v));
    else if (flag == "--model-id")
      o.modelId = static_cast<uint64_t>(parseNumber(flag, v));
    else if (flag == "--listen")
      o.listen = v;
    else if (flag == "--shard")
      o.shard = static_cast<uint32_t>(parseNumber(flag, v));
    else if (flag == "--shards")
      o.shards = static_cast<uint32_t>(parseNumber(flag, v));
    else if (flag == "--workers")
      o.workers = static_cast<uint32_t>(parseNumber(flag, v));
    else if (flag == "--worker")
      o.worker = static_cast<uint32_t>(parseNumber(flag, v));
    else if (flag == "--shard-dir")
      o.shardDir = v;
    else if (flag == "--snapshot-every")
      o.snapshotEvery = static_cast<uint32_t>(parseNumber(flag, v));
    else if (flag == "--endpoint-file")
      o.endpointFile = v;
    else if (flag == "--servers")
      o.servers = splitList(v, ',');
    else if (flag == "--steps")
      o.steps = static_cast<int64_t>(parseNumber(flag, v));
    else if (flag == "--batch")
      o.batch = static_cast<int64_t>(parseNumber(flag, v));
    else if (flag == "--repeat")
      o.repeat = parseNumber(flag, v);
    else if (flag == "--sleep-ms")
      o.sleepMs = static_cast<int64_t>(parseNumber(flag, v));
    else if (flag == "--seconds")
      o.seconds = parseNumber(flag, v);
    else if (flag == "--timeout")
      o.timeout = parseNumber(flag, v);
    else if (flag == "--dump")
      o.dump = v;
    else if (flag == "--mode") {
      if (v == "sync")
        o.mode = DIST_RT_PS_SYNC;
      else if (v == "async")
        o.mode = DIST_RT_PS_ASYNC;
      else if (v.rfind("ssp:", 0) == 0) {
        o.mode = DIST_RT_PS_SSP;
        o.staleness = static_cast<uint32_t>(parseNumber(flag, v.substr(4)));
      } else
        fail("--mode expects sync, async or ssp:K, got '" + v + "'");
    } else
      fail("unknown option " + flag);
  }
  if (tables.empty())
    fail("--tables NAME:ROWS:DIM[,...] is required");
  uint32_t opt = optimizer == "sgd"       ? DIST_RT_PS_SGD
                 : optimizer == "adagrad" ? DIST_RT_PS_ADAGRAD
                 : optimizer == "adam"    ? DIST_RT_PS_ADAM
                                          : 99;
  if (opt == 99)
    fail("--optimizer expects sgd, adagrad or adam, got '" + optimizer + "'");
  dist_rt_ps_table_t base;
  dist_rt_ps_table_initialize(&base);
  base.optimizer = opt;
  base.lr = static_cast<float>(lr);
  base.eps = eps >= 0 ? static_cast<float>(eps)
                      : (opt == DIST_RT_PS_ADAGRAD ? 1e-10f : 1e-8f);
  base.seed = seed;
  if (init == "zeros") {
    base.init = DIST_RT_PS_INIT_ZEROS;
  } else {
    size_t colon = init.find(':');
    std::vector<std::string> ab = colon == std::string::npos
                                      ? std::vector<std::string>{}
                                      : splitList(init.substr(colon + 1), ',');
    std::string kind = init.substr(0, colon);
    if ((kind != "uniform" && kind != "normal") || ab.size() != 2)
      fail("--init expects zeros, uniform:A,B or normal:MEAN,STD, got '" +
           init + "'");
    base.init =
        kind == "uniform" ? DIST_RT_PS_INIT_UNIFORM : DIST_RT_PS_INIT_NORMAL;
    base.init_a = static_cast<float>(parseNumber("--init", ab[0]));
    base.init_b = static_cast<float>(parseNumber("--init", ab[1]));
  }
  for (const std::string &t : splitList(tables, ',')) {
    std::vector<std::string> f = splitList(t, ':');
    if (f.size() != 3 || f[0].empty())
      fail("--tables expects NAME:ROWS:DIM, got '" + t + "'");
    o.names.push_back(f[0]);
    dist_rt_ps_table_t spec = base;
    spec.rows = static_cast<int64_t>(parseNumber("--tables", f[1]));
    spec.dim = static_cast<int64_t>(parseNumber("--tables", f[2]));
    o.tables.push_back(spec);
  }
  for (size_t t = 0; t < o.tables.size(); ++t)
    o.tables[t].name = o.names[t].c_str();
  return o;
}

dist_rt_ps_server_t runningServer = nullptr;

void onSignal(int) {
  if (runningServer)
    dist_rt_ps_server_stop(runningServer);
}

int runServer(const Options &o) {
  dist_rt_ps_server_options_t so;
  dist_rt_ps_server_options_initialize(&so);
  so.bind = o.listen.c_str();
  so.shard_dir = o.shardDir.empty() ? nullptr : o.shardDir.c_str();
  so.shard = o.shard;
  so.num_shards = o.shards;
  so.num_workers = o.workers;
  so.mode = o.mode;
  so.staleness = o.staleness;
  so.model_id = o.modelId;
  so.snapshot_every = o.snapshotEvery;
  so.stay = o.stay;
  dist_rt_ps_server_t server;
  check(
      dist_rt_ps_server_create(&so, o.tables.data(), o.tables.size(), &server));
  const char *endpoint = dist_rt_ps_server_endpoint(server);
  if (!o.endpointFile.empty()) {
    // Written to a temporary name and renamed: readers never see half.
    std::string tmp = o.endpointFile + ".tmp";
    FILE *f = std::fopen(tmp.c_str(), "w");
    if (!f || std::fprintf(f, "%s\n", endpoint) < 0 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), o.endpointFile.c_str()) != 0)
      fail("cannot write " + o.endpointFile);
  }
  dist_rt_ps_server_stats_t stats;
  dist_rt_ps_server_stats(server, &stats);
  std::printf("dist-ps server: shard %u of %u at %s, %llu pushes recovered\n",
              o.shard, o.shards, endpoint,
              static_cast<unsigned long long>(stats.recovered_pushes));
  std::fflush(stdout);
  runningServer = server;
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  dist_rt_status_t status = dist_rt_ps_server_run(server);
  dist_rt_ps_server_stats(server, &stats);
  std::printf("dist-ps server: shard %u done: %llu pulls, %llu pushes, "
              "%llu updates, %llu rows, max step gap %lld\n",
              o.shard, static_cast<unsigned long long>(stats.pulls),
              static_cast<unsigned long long>(stats.pushes),
              static_cast<unsigned long long>(stats.applied_updates),
              static_cast<unsigned long long>(stats.rows),
              static_cast<long long>(stats.max_step_gap));
  runningServer = nullptr;
  dist_rt_ps_server_release(server);
  check(status);
  return 0;
}

/// The ids of a batch: a function of (seed, worker, step, table) only;
/// about `repeat` of them repeat an earlier id of the batch.
std::vector<int64_t> batchIds(const Options &o, size_t table, uint32_t worker,
                              int64_t step, int64_t batch) {
  using dist_rt::ps::mix64;
  std::vector<int64_t> ids(static_cast<size_t>(batch));
  uint64_t base = mix64(o.tables[table].seed * 1000003u + table) ^
                  mix64(worker * 7919u + static_cast<uint64_t>(step) * 104729u);
  for (size_t i = 0; i < ids.size(); ++i) {
    uint64_t r = mix64(base + i);
    double u = static_cast<double>(r >> 11) * 0x1.0p-53;
    if (i > 0 && u < o.repeat)
      ids[i] = ids[mix64(r) % i];
    else
      ids[i] = static_cast<int64_t>(
          mix64(r ^ 0x5555) % static_cast<uint64_t>(o.tables[table].rows));
  }
  return ids;
}

/// Gradients of the pulled rows: the rows themselves scaled, plus a term
/// from the position, so that the update depends on what was pulled.
std::vector<float> batchGrads(const std::vector<float> &rows, int64_t dim,
                              uint32_t worker) {
  std::vector<float> grads(rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    grads[i] = 0.5f * rows[i] +
               0.01f * static_cast<float>((i / dim + worker) % 7) - 0.03f;
  return grads;
}

void writeDump(const std::string &path, const std::vector<float> &all) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f ||
      std::fwrite(all.data(), sizeof(float), all.size(), f) != all.size() ||
      std::fclose(f) != 0)
    fail("cannot write " + path);
}

dist_rt_ps_client_t connect(const Options &o, uint32_t worker) {
  if (o.servers.empty())
    fail("--servers ADDR[,ADDR...] is required");
  std::vector<const char *> addresses;
  for (const std::string &s : o.servers)
    addresses.push_back(s.c_str());
  dist_rt_ps_client_options_t co;
  dist_rt_ps_client_options_initialize(&co);
  co.servers = addresses.data();
  co.num_servers = addresses.size();
  co.worker = worker;
  co.num_workers = o.workers;
  co.model_id = o.modelId;
  co.timeout_seconds = o.timeout;
  dist_rt_ps_client_t client;
  check(
      dist_rt_ps_client_create(&co, o.tables.data(), o.tables.size(), &client));
  return client;
}

int runWork(const Options &o) {
  dist_rt_ps_client_t client = connect(o, o.worker);
  for (int64_t step = 0; step < o.steps; ++step) {
    for (size_t t = 0; t < o.tables.size(); ++t) {
      int64_t dim = o.tables[t].dim;
      std::vector<int64_t> ids = batchIds(o, t, o.worker, step, o.batch);
      std::vector<float> rows(ids.size() * dim);
      check(dist_rt_ps_pull(client, static_cast<uint32_t>(t), ids.data(),
                            ids.size(), step, rows.data()));
      std::vector<float> grads = batchGrads(rows, dim, o.worker);
      check(dist_rt_ps_push(client, static_cast<uint32_t>(t), ids.data(),
                            ids.size(), grads.data(), step));
    }
    if (o.sleepMs)
      std::this_thread::sleep_for(std::chrono::milliseconds(o.sleepMs));
  }
  if (!o.dump.empty()) {
    std::vector<float> all;
    for (size_t t = 0; t < o.tables.size(); ++t) {
      std::vector<int64_t> ids(static_cast<size_t>(o.tables[t].rows));
      for (size_t i = 0; i < ids.size(); ++i)
        ids[i] = static_cast<int64_t>(i);
      size_t at = all.size();
      all.resize(at + ids.size() * o.tables[t].dim);
      // A pull as of the step after the last: in SYNC it waits until every
      // worker's last step is applied (a read would not wait).
      check(dist_rt_ps_pull(client, static_cast<uint32_t>(t), ids.data(),
                            ids.size(), o.steps, all.data() + at));
    }
    writeDump(o.dump, all);
  }
  check(dist_rt_ps_client_finish(client));
  dist_rt_ps_client_release(client);
  std::printf("dist-ps work: worker %u of %u finished %lld steps\n", o.worker,
              o.workers, static_cast<long long>(o.steps));
  return 0;
}

int runLocal(const Options &o) {
  if (o.dump.empty())
    fail("local needs --dump FILE");
  std::vector<std::unique_ptr<dist_rt::ps::Table>> tables;
  for (const dist_rt_ps_table_t &spec : o.tables)
    tables.emplace_back(new dist_rt::ps::Table(spec));
  for (int64_t step = 0; step < o.steps; ++step) {
    for (size_t t = 0; t < tables.size(); ++t) {
      dist_rt::ps::Table &table = *tables[t];
      size_t dim = static_cast<size_t>(table.dim());
      // Every worker's pull sees the rows before this step's update; the
      // update sums the workers' per-id sums in worker order, as a SYNC
      // server does.
      dist_rt::ps::IdMap index;
      std::vector<int64_t> sumIds;
      std::vector<float> sums;
      for (uint32_t w = 0; w < o.workers; ++w) {
        std::vector<int64_t> ids = batchIds(o, t, w, step, o.batch);
        std::vector<float> rows(ids.size() * dim);
        for (size_t i = 0; i < ids.size(); ++i)
          table.read(ids[i], rows.data() + i * dim);
        std::vector<float> grads = batchGrads(rows, table.dim(), w);
        dist_rt::ps::IdMap mine;
        std::vector<int64_t> myIds;
        std::vector<float> mySums;
        for (size_t i = 0; i < ids.size(); ++i) {
          bool inserted;
          size_t u = static_cast<size_t>(mine.insert(ids[i], inserted));
          if (inserted) {
            myIds.push_back(ids[i]);
            mySums.insert(mySums.end(), grads.begin() + i * dim,
                          grads.begin() + (i + 1) * dim);
          } else {
            for (size_t j = 0; j < dim; ++j)
              mySums[u * dim + j] += grads[i * dim + j];
          }
        }
        for (size_t k = 0; k < myIds.size(); ++k) {
          bool inserted;
          size_t u = static_cast<size_t>(index.insert(myIds[k], inserted));
          if (inserted) {
            sumIds.push_back(myIds[k]);
            sums.insert(sums.end(), mySums.begin() + k * dim,
                        mySums.begin() + (k + 1) * dim);
          } else {
            for (size_t j = 0; j < dim; ++j)
              sums[u * dim + j] += mySums[k * dim + j];
          }
        }
      }
      table.apply(sumIds.data(), sumIds.size(), sums.data());
    }
  }
  std::vector<float> all;
  for (auto &table : tables) {
    size_t at = all.size();
    size_t rows = static_cast<size_t>(table->spec().rows);
    all.resize(at + rows * table->dim());
    for (size_t i = 0; i < rows; ++i)
      table->read(static_cast<int64_t>(i), all.data() + at + i * table->dim());
  }
  writeDump(o.dump, all);
  return 0;
}

int runBench(const Options &o) {
  dist_rt_ps_client_t client = connect(o, 0);
  int64_t dim = o.tables[0].dim;
  // A pool of batches, so that the id generation is not timed.
  std::vector<std::vector<int64_t>> pool;
  for (int64_t b = 0; b < 16; ++b)
    pool.push_back(batchIds(o, 0, 0, b, o.batch));
  std::vector<float> rows(static_cast<size_t>(o.batch * dim));
  std::vector<float> grads(rows.size(), 1e-6f);
  using Clock = std::chrono::steady_clock;
  // Pushes first: they create the rows the pulls then read (a pull of a
  // row never written computes its initial values instead).
  for (int pass = 0; pass < 2; ++pass) {
    const char *what = pass == 1 ? "pull" : "push";
    int64_t keys = 0, step = 0;
    Clock::time_point start = Clock::now();
    double elapsed = 0;
    while (elapsed < o.seconds) {
      const std::vector<int64_t> &ids = pool[step % pool.size()];
      if (pass == 1)
        check(
            dist_rt_ps_pull(client, 0, ids.data(), ids.size(), 0, rows.data()));
      else
        check(dist_rt_ps_push(client, 0, ids.data(), ids.size(), grads.data(),
                              step));
      keys += static_cast<int64_t>(ids.size());
      ++step;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    }
    std::printf("dist-ps bench: %s %.3g keys/s (dim %lld, batch %lld, "
                "%lld requests)\n",
                what, keys / elapsed, static_cast<long long>(dim),
                static_cast<long long>(o.batch), static_cast<long long>(step));
  }
  check(dist_rt_ps_client_finish(client));
  dist_rt_ps_client_release(client);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o = parse(argc, argv);
  if (o.command == "server")
    return runServer(o);
  if (o.command == "work")
    return runWork(o);
  if (o.command == "local")
    return runLocal(o);
  if (o.command == "bench")
    return runBench(o);
  fail("unknown command '" + o.command + "' (server, work, local or bench)");
}
