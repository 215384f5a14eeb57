//===- train_ps.cpp - Parameter servers of compiled models ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The parameter servers a model compiled with `dist-opt --ps-tables` trains
// against: `<model> ps-server` runs one (shard k of n of every table, rows
// first read from the model's parameters), and `<model> train` finds or
// starts them (PsSession). Under a launcher the servers and workers of one
// job (`mpirun -np S <model> ps-server : -np W <model> train`) exchange
// their roles and the servers' addresses over MPI, then split the world so
// that the workers' mesh is theirs alone; everything after goes over the
// servers' ZeroMQ sockets (dist_rt/ps.h says why not over MPI).
//
//===----------------------------------------------------------------------===//

#include "train_internal.h"

#include "comm_backend.h"
#include "dist_rt/comm.h"

#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace dist_rt {
namespace driver {

namespace {

/// Words of one rank's entry in the role exchange: role, mode, staleness,
/// then the address, NUL-padded.
constexpr int64_t kExchangeWords = 40;
constexpr int64_t kRoleServer = 1, kRoleWorker = 2;

/// What the role exchange of a job found.
struct PsJob {
  /// Ranks of the world (0: run alone, no exchange).
  int32_t size = 0;
  std::vector<int64_t> roles;
  uint32_t numServers = 0, numWorkers = 0;
  /// This rank's index among the ranks of its role.
  uint32_t index = 0;
  /// The workers' --ps-mode (all equal).
  uint32_t mode = 0, staleness = 0;
};

std::string statusText(dist_rt_status_t status) {
  std::string text = dist_rt_status_message(status);
  dist_rt_status_free(status);
  return text;
}

/// The job's world, with the timeout of DIST_RT_COMM_TIMEOUT as the mesh
/// uses (the first world_init of the process sets it).
bool openWorld(dist_rt_comm_t &world, std::string &error) {
  dist_rt_world_options_t options;
  dist_rt_status_t status = worldOptionsFromEnvironment(options);
  if (!status)
    status = dist_rt_world_init(nullptr, nullptr, &options, &world);
  if (status) {
    error = statusText(status);
    return false;
  }
  return true;
}

/// Round 1: every rank's role (and the workers' mode). Sets job.size to 0
/// for a process alone.
bool exchangeRoles(int64_t role, uint32_t mode, uint32_t staleness, PsJob &job,
                   std::string &error) {
  dist_rt_comm_t world = nullptr;
  if (!openWorld(world, error))
    return false;
  int32_t size = dist_rt_comm_size(world);
  int32_t rank = dist_rt_comm_rank(world);
  if (size == 1) {
    dist_rt_comm_release(world);
    job.size = 0;
    return true;
  }
  int64_t mine[3] = {role, mode, staleness};
  std::vector<int64_t> all(static_cast<size_t>(size) * 3);
  dist_rt_status_t status =
      dist_rt_all_gather(world, mine, all.data(), 3, DIST_RT_DTYPE_INT64);
  dist_rt_comm_release(world);
  if (status) {
    error = "parameter-server role exchange: " + statusText(status);
    return false;
  }
  job.size = size;
  bool haveMode = false;
  for (int32_t r = 0; r < size; ++r) {
    int64_t theirs = all[static_cast<size_t>(r) * 3];
    job.roles.push_back(theirs);
    bool server = theirs == kRoleServer;
    if (r == rank)
      job.index = server ? job.numServers : job.numWorkers;
    (server ? job.numServers : job.numWorkers) += 1;
    if (server)
      continue;
    auto m = static_cast<uint32_t>(all[static_cast<size_t>(r) * 3 + 1]);
    auto k = static_cast<uint32_t>(all[static_cast<size_t>(r) * 3 + 2]);
    if (haveMode && (m != job.mode || k != job.staleness)) {
      error = "the workers of the job were given different --ps-mode values";
      return false;
    }
    job.mode = m;
    job.staleness = k;
    haveMode = true;
  }
  if (job.numWorkers == 0) {
    error = "the job has parameter servers but no `train` ranks";
    return false;
  }
  return true;
}

/// Round 2: the servers' addresses (a rank without one passes ""), every
/// rank's in rank order; then the world narrows to the ranks of this
/// rank's role.
bool exchangeAddresses(const PsJob &job, int64_t role,
                       const std::string &address,
                       std::vector<std::string> &addresses,
                       std::string &error) {
  size_t maxBytes = (kExchangeWords - 3) * sizeof(int64_t) - 1;
  if (address.size() > maxBytes) {
    error = "parameter server address '" + address + "' is too long";
    return false;
  }
  std::vector<int64_t> mine(kExchangeWords, 0);
  std::memcpy(mine.data() + 3, address.data(), address.size());
  std::vector<int64_t> all(static_cast<size_t>(job.size) * kExchangeWords);
  dist_rt_comm_t world = nullptr;
  if (!openWorld(world, error))
    return false;
  dist_rt_status_t status = dist_rt_all_gather(
      world, mine.data(), all.data(), kExchangeWords, DIST_RT_DTYPE_INT64);
  dist_rt_comm_release(world);
  if (!status)
    status = dist_rt::comm::narrowWorld(static_cast<int32_t>(role));
  if (status) {
    error = "parameter-server address exchange: " + statusText(status);
    return false;
  }
  addresses.clear();
  for (int32_t r = 0; r < job.size; ++r) {
    const char *text = reinterpret_cast<const char *>(
        all.data() + static_cast<size_t>(r) * kExchangeWords + 3);
    std::string a(text, strnlen(text, maxBytes));
    if (!a.empty())
      addresses.push_back(a);
  }
  return true;
}

/// The address servers of this process bind: the host DIST_RT_PS_HOST
/// names (how other machines reach this one), else loopback.
std::string bindAddress() {
  const char *host = std::getenv("DIST_RT_PS_HOST");
  return std::string("tcp://") + (host && *host ? host : "127.0.0.1") + ":0";
}

/// Reads the addresses of --ps-servers, an @FILE entry holding one or more
/// (one per line).
bool resolveServers(const std::vector<std::string> &given,
                    std::vector<std::string> &out, std::string &error) {
  for (const std::string &entry : given) {
    if (entry[0] != '@') {
      out.push_back(entry);
      continue;
    }
    std::string text;
    if (!readTextFile(entry.substr(1), text, error)) {
      error = "--ps-servers: " + error;
      return false;
    }
    size_t before = out.size();
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos)
        end = text.size();
      std::string line = text.substr(at, end - at);
      while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
        line.pop_back();
      if (!line.empty())
        out.push_back(line);
      at = end + 1;
    }
    if (out.size() == before) {
      error = "--ps-servers: " + entry.substr(1) + " holds no address";
      return false;
    }
  }
  return true;
}

} // namespace

namespace train_impl {

bool parsePsMode(const std::string &value, uint32_t &mode, uint32_t &staleness,
                 std::string &error) {
  staleness = 0;
  if (value == "sync") {
    mode = DIST_RT_PS_SYNC;
    return true;
  }
  if (value == "async") {
    mode = DIST_RT_PS_ASYNC;
    return true;
  }
  int64_t k = 0;
  if (value.rfind("ssp:", 0) == 0 &&
      parseInteger(value.substr(4), 0, 1 << 20, k)) {
    mode = DIST_RT_PS_SSP;
    staleness = static_cast<uint32_t>(k);
    return true;
  }
  error = "--ps-mode expects sync, async or ssp:K, got '" + value + "'";
  return false;
}

PsSession::~PsSession() {
  if (psClient)
    dist_rt_ps_client_release(psClient);
  if (serverThread.joinable()) {
    dist_rt_ps_server_stop(server);
    serverThread.join();
  }
  if (server)
    dist_rt_ps_server_release(server);
  dist_rt_status_free(serverStatus);
}

bool PsSession::startLocal(const dist_rt_model_desc_t &desc,
                           const TrainCommandLine &cl, uint32_t workers,
                           std::string &error) {
  // A server of this process starts empty: a resumed run's tables are
  // its checkpoint's.
  initRows.reset(new model_impl::PsInitRows());
  const std::string &from = !cl.resumeDir.empty() ? cl.resumeDir : cl.paramPath;
  if (dist_rt_status_t status =
          initRows->load(desc, from.empty() ? nullptr : from.c_str())) {
    error = statusText(status);
    return false;
  }
  initRows->useInitRows(specs);
  std::string bind = bindAddress();
  dist_rt_ps_server_options_t so;
  dist_rt_ps_server_options_initialize(&so);
  so.bind = bind.c_str();
  so.num_workers = workers;
  so.mode = cl.psMode;
  so.staleness = cl.psStaleness;
  so.model_id = modelId;
  if (dist_rt_status_t status =
          dist_rt_ps_server_create(&so, specs.data(), specs.size(), &server)) {
    error = statusText(status);
    return false;
  }
  endpoints.assign(1, dist_rt_ps_server_endpoint(server));
  serverThread =
      std::thread([this] { serverStatus = dist_rt_ps_server_run(server); });
  return true;
}

bool PsSession::prepare(const dist_rt_model_desc_t &desc,
                        const TrainCommandLine &cl, std::string &error) {
  psTables(desc, params, specs);
  modelId = psModelId(desc);
  timeout = cl.psTimeout;
  if (!cl.psServers.empty())
    return resolveServers(cl.psServers, endpoints, error);
  PsJob job;
  if (!exchangeRoles(kRoleWorker, cl.psMode, cl.psStaleness, job, error))
    return false;
  if (job.size == 0)
    return startLocal(desc, cl, 1, error);
  jobWorkers = job.numWorkers;
  jobWorker = job.index;
  // Without server ranks the first worker serves the tables.
  std::string local;
  if (job.numServers == 0 && job.index == 0) {
    if (!startLocal(desc, cl, job.numWorkers, error))
      return false;
    local = endpoints[0];
  }
  return exchangeAddresses(job, kRoleWorker, local, endpoints, error);
}

bool PsSession::connect(dist_rt_model_t model, int64_t worker, int64_t workers,
                        int64_t firstStep, std::string &error) {
  if (jobWorkers && jobWorkers != workers) {
    error = "the job has " + std::to_string(jobWorkers) +
            " `train` ranks, but the model's tables are pushed by " +
            std::to_string(workers) +
            " data-parallel workers (compile it with --mesh dp=" +
            std::to_string(jobWorkers) + ")";
    return false;
  }
  std::vector<const char *> addresses;
  for (const std::string &e : endpoints)
    addresses.push_back(e.c_str());
  dist_rt_ps_client_options_t co;
  dist_rt_ps_client_options_initialize(&co);
  co.servers = addresses.data();
  co.num_servers = addresses.size();
  co.worker = static_cast<uint32_t>(worker);
  co.num_workers = static_cast<uint32_t>(workers);
  co.model_id = modelId;
  co.timeout_seconds = timeout;
  co.first_step = firstStep;
  dist_rt_status_t status =
      dist_rt_ps_client_create(&co, specs.data(), specs.size(), &psClient);
  if (!status)
    status =
        dist_rt_model_attach_ps(model, psClient, static_cast<int32_t>(workers));
  if (status) {
    error = statusText(status);
    return false;
  }
  return true;
}

bool PsSession::finish(std::string &error) {
  if (psClient)
    if (dist_rt_status_t status = dist_rt_ps_client_finish(psClient)) {
      error = statusText(status);
      return false;
    }
  if (serverThread.joinable()) {
    serverThread.join();
    if (serverStatus) {
      error = statusText(serverStatus);
      serverStatus = nullptr;
      return false;
    }
  }
  return true;
}

} // namespace train_impl

//===----------------------------------------------------------------------===//
// The ps-server subcommand
//===----------------------------------------------------------------------===//

namespace {

std::atomic<dist_rt_ps_server_t> runningServer{nullptr};

void onSignal(int) {
  if (dist_rt_ps_server_t s = runningServer.load())
    dist_rt_ps_server_stop(s);
}

void printPsServerUsage(const char *program, const dist_rt_model_desc_t &desc) {
  std::printf(
      "usage: %s ps-server [--shard-dir DIR] [--bind ADDR] [--shard K "
      "--shards N]\n"
      "       [--workers W] [--ps-mode MODE] [--address-file FILE] [--stay]\n"
      "       [--params PATH] [--snapshot-every N] [--help]\n"
      "\n"
      "Serves shard K of N of the parameter-server tables of model '%s'\n"
      "(rows hashed over the shards by id) until its W workers have finished.\n"
      "Under mpirun beside the workers (mpirun -np N %s ps-server ... : -np W\n"
      "%s train ...) the shards, workers and mode come from the job.\n"
      "\n"
      "options:\n"
      "  --shard-dir DIR      keep a write-ahead log and snapshots in DIR "
      "(created if missing), so that a server killed and started again on it "
      "loses no acknowledged push (default: in memory only)\n"
      "  --bind ADDR          ZeroMQ address to listen on (default: "
      "tcp://127.0.0.1:0, a free port; DIST_RT_PS_HOST sets the host)\n"
      "  --shard K --shards N this server's shard and the number of servers "
      "(default: 0 and 1)\n"
      "  --workers W          workers that push (default: 1)\n"
      "  --ps-mode MODE       sync, async or ssp:K, as train's (default: "
      "sync)\n"
      "  --address-file FILE  write the address workers reach this server at "
      "to FILE (for train --ps-servers @FILE)\n"
      "  --stay               keep serving after the workers have finished "
      "(until SIGTERM or SIGINT)\n"
      "  --params PATH        the tables' first values: a parameter file or "
      "directory, as train's; a checkpoint for servers without state that "
      "a run resumed from it (train --resume) trains against (default: "
      "%s)\n"
      "  --snapshot-every N   applied pushes between two snapshots (default: "
      "1000)\n"
      "  --help               print this text and exit\n",
      program, desc.name, program, program, defaultParamsText(desc).c_str());
  std::vector<uint32_t> params;
  std::vector<dist_rt_ps_table_t> tables;
  psTables(desc, params, tables);
  std::printf("\ntables:\n");
  for (const dist_rt_ps_table_t &t : tables)
    std::printf("  %s: %" PRId64 " rows of %" PRId64 " floats\n", t.name,
                t.rows, t.dim);
}

int servePs(int argc, char **argv, const dist_rt_model_desc_t &desc) {
  std::string shardDir, bind, addressFile, paramPath;
  int64_t shard = 0, shards = 1, workers = 1, snapshotEvery = 0;
  uint32_t mode = DIST_RT_PS_SYNC, staleness = 0;
  bool stay = false, help = false, placed = false;
  auto handle = [&](const std::string &flag, const std::string &value,
                    std::string &error) {
    auto number = [&](int64_t min, int64_t &out) {
      if (parseInteger(value, min, INT32_MAX, out))
        return true;
      error = flag + " expects an integer of at least " + std::to_string(min) +
              ", got '" + value + "'";
      return false;
    };
    auto text = [&](std::string &out) {
      out = value;
      if (!value.empty())
        return true;
      error = flag + ": the value is empty";
      return false;
    };
    if (flag == "--help")
      help = true;
    else if (flag == "--stay")
      stay = true;
    else if (flag == "--shard-dir")
      return text(shardDir);
    else if (flag == "--bind")
      return text(bind);
    else if (flag == "--address-file")
      return text(addressFile);
    else if (flag == "--params")
      return text(paramPath);
    else if (flag == "--shard")
      return placed = true, number(0, shard);
    else if (flag == "--shards")
      return placed = true, number(1, shards);
    else if (flag == "--workers")
      return placed = true, number(1, workers);
    else if (flag == "--snapshot-every")
      return number(1, snapshotEvery);
    else
      return train_impl::parsePsMode(value, mode, staleness, error);
    return true;
  };
  std::string error;
  if (!parseOptions(argc, argv, 2,
                    {{"--help", false},
                     {"--stay", false},
                     {"--shard-dir", true},
                     {"--bind", true},
                     {"--address-file", true},
                     {"--params", true},
                     {"--shard", true},
                     {"--shards", true},
                     {"--workers", true},
                     {"--snapshot-every", true},
                     {"--ps-mode", true}},
                    "ps-server takes no positional arguments", handle, error))
    return fail(error);
  if (help) {
    printPsServerUsage(argc > 0 && argv[0] ? argv[0] : desc.name, desc);
    return 0;
  }
  if (!desc.ps)
    return fail(std::string("model '") + desc.name +
                "' has no tables on the parameter server (compile it with "
                "dist-opt --ps-tables)");
  if (shard >= shards)
    return fail("--shard " + std::to_string(shard) + " is not below --shards " +
                std::to_string(shards));

  PsJob job;
  if (!exchangeRoles(kRoleServer, 0, 0, job, error))
    return fail(error);
  if (job.size) {
    if (placed)
      return fail("--shard, --shards and --workers come from the job under "
                  "a launcher; do not give them");
    shard = job.index;
    shards = job.numServers;
    workers = job.numWorkers;
    mode = job.mode;
    staleness = job.staleness;
  }
  std::vector<uint32_t> params;
  std::vector<dist_rt_ps_table_t> tables;
  psTables(desc, params, tables);
  model_impl::PsInitRows init;
  if (dist_rt_status_t status =
          init.load(desc, paramPath.empty() ? nullptr : paramPath.c_str()))
    return fail(status);
  init.useInitRows(tables);
  if (bind.empty())
    bind = bindAddress();
  dist_rt_ps_server_options_t so;
  dist_rt_ps_server_options_initialize(&so);
  so.bind = bind.c_str();
  so.shard_dir = shardDir.empty() ? nullptr : shardDir.c_str();
  so.shard = static_cast<uint32_t>(shard);
  so.num_shards = static_cast<uint32_t>(shards);
  so.num_workers = static_cast<uint32_t>(workers);
  so.mode = mode;
  so.staleness = staleness;
  so.model_id = psModelId(desc);
  so.snapshot_every = static_cast<uint32_t>(snapshotEvery);
  so.stay = stay ? 1 : 0;
  dist_rt_ps_server_t server = nullptr;
  if (dist_rt_status_t status =
          dist_rt_ps_server_create(&so, tables.data(), tables.size(), &server))
    return fail(status);
  std::string endpoint = dist_rt_ps_server_endpoint(server);
  if (job.size) {
    std::vector<std::string> all;
    if (!exchangeAddresses(job, kRoleServer, endpoint, all, error)) {
      dist_rt_ps_server_release(server);
      return fail(error);
    }
  }
  if (!addressFile.empty() &&
      !writeFileAtomically(addressFile, endpoint + "\n", error)) {
    dist_rt_ps_server_release(server);
    return fail(error);
  }
  dist_rt_ps_server_stats_t stats;
  dist_rt_ps_server_stats(server, &stats);
  std::printf("%s ps-server: shard %" PRId64 " of %" PRId64 " at %s, %" PRIu64
              " pushes recovered\n",
              desc.name, shard, shards, endpoint.c_str(),
              static_cast<uint64_t>(stats.recovered_pushes));
  std::fflush(stdout);
  runningServer.store(server);
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  dist_rt_status_t status = dist_rt_ps_server_run(server);
  runningServer.store(nullptr);
  dist_rt_ps_server_stats(server, &stats);
  std::printf("%s ps-server: shard %" PRId64 " done: %" PRIu64
              " pulls, %" PRIu64 " pushes, %" PRIu64 " updates, %" PRIu64
              " rows, max step gap %" PRId64 "\n",
              desc.name, shard, static_cast<uint64_t>(stats.pulls),
              static_cast<uint64_t>(stats.pushes),
              static_cast<uint64_t>(stats.applied_updates),
              static_cast<uint64_t>(stats.rows),
              static_cast<int64_t>(stats.max_step_gap));
  std::fflush(stdout);
  dist_rt_ps_server_release(server);
  if (status)
    return fail(status);
  return 0;
}

} // namespace

int runPsServer(int argc, char **argv, const dist_rt_model_desc_t &desc) {
  int code = servePs(argc, argv, desc);
  // The workers of the job would wait for this server forever.
  if (code != 0)
    dist_rt_world_abort(code);
  // The workers' ranks finalize MPI at the end of their mesh; these ranks
  // have none.
  if (dist_rt_status_t status = dist_rt_world_finalize()) {
    if (code == 0)
      code = fail(status);
    else
      dist_rt_status_free(status);
  }
  return code;
}

} // namespace driver
} // namespace dist_rt
