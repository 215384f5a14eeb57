//===- mesh.cpp - Mesh collectives called by generated code -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements the "Mesh collectives" part of dist_rt/kernels.h: the process's
// mesh (world plus one communicator per axis, split in axis order) and the
// start/wait reductions that partitioned models call. Started reductions go
// to one communication thread in FIFO order, so every rank issues them to
// MPI in program order while the main thread keeps computing; waits block
// only on what has not finished yet. With MPI below MPI_THREAD_SERIALIZED,
// or with DIST_RT_MESH_SYNC=1 in the environment, reductions run inside the
// start call instead (no overlap; useful to measure what overlap buys).
//
//===----------------------------------------------------------------------===//

#include "comm_backend.h"
#include "internal.h"
#include "status.h"

#include "dist_rt/comm.h"
#include "dist_rt/kernels.h"
#include "dist_rt/param_format.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double secondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// One started collective: an in-place reduction, or a gather of `count`
/// elements per rank from `data` into `recv`.
struct Job {
  int64_t handle = 0;
  bool gather = false;
  void *recv = nullptr;
  void *data = nullptr;
  int64_t count = 0;
  uint32_t dtype = 0;
  int64_t reduce = 0;
  dist_rt_comm_t comm = nullptr;
  Clock::time_point started;
  bool done = false;
  /// Set on failure (owned).
  dist_rt_status_t status = nullptr;
};

struct Mesh {
  std::mutex mutex;
  std::condition_variable changed;
  bool active = false;
  std::vector<int64_t> shape;
  std::vector<std::string> names;
  dist_rt_comm_t world = nullptr;
  /// One per axis, then (last) the world again for reductions over all
  /// axes.
  std::vector<dist_rt_comm_t> axisComms;
  int32_t worldRank = 0, worldSize = 1;
  /// Whether the mesh axes are real (the world has product(shape) ranks)
  /// or all of size 1 (the job runs alone).
  bool alone = true;

  // Communication thread and its FIFO.
  std::thread worker;
  bool stopWorker = false;
  std::deque<Job *> queue;
  /// Started, not yet waited for, by handle.
  std::vector<Job *> pending;
  int64_t nextHandle = 1;

  dist_rt_mesh_stats_t stats = {0, 0, 0.0, 0.0};
  /// This rank's rows over the mean rows of a dp rank
  /// (setDataParallelRowWeight).
  double dpRowWeight = 1.0;
};

Mesh &mesh() {
  static Mesh *m = new Mesh(); // Never destroyed: reached from atexit paths.
  return *m;
}

size_t elementSize(uint32_t dtype) {
  return dtype == DIST_RT_DTYPE_DOUBLE ? 8 : 4;
}

/// Runs `job` (blocking, under the communicator's deadline).
void runJob(Job &job) {
  if (job.gather) {
    job.status =
        dist_rt_all_gather(job.comm, job.data, job.recv, job.count, job.dtype);
    return;
  }
  dist_rt_reduce_op_t op = DIST_RT_REDUCE_SUM;
  switch (job.reduce) {
  case DIST_RT_MESH_REDUCE_MAX:
    op = DIST_RT_REDUCE_MAX;
    break;
  case DIST_RT_MESH_REDUCE_MIN:
    op = DIST_RT_REDUCE_MIN;
    break;
  case DIST_RT_MESH_REDUCE_PROD:
    op = DIST_RT_REDUCE_PROD;
    break;
  case DIST_RT_MESH_REDUCE_AVERAGE:
    // Divided (not multiplied by 1 / size) to match a framework's mean
    // exactly; the ring divides only the block each rank finishes.
    op = DIST_RT_REDUCE_AVG;
    break;
  default:
    break;
  }
  job.status = dist_rt_all_reduce(job.comm, job.data, job.data, job.count,
                                  job.dtype, op);
}

void workerLoop() {
  Mesh &m = mesh();
  std::unique_lock<std::mutex> lock(m.mutex);
  for (;;) {
    m.changed.wait(lock, [&] { return m.stopWorker || !m.queue.empty(); });
    if (m.queue.empty())
      return; // Stopping with nothing left.
    Job *job = m.queue.front();
    lock.unlock();
    runJob(*job);
    Clock::time_point end = Clock::now();
    lock.lock();
    m.queue.pop_front();
    m.stats.comm_seconds += secondsBetween(job->started, end);
    job->done = true;
    m.changed.notify_all();
  }
}

[[noreturn]] void abortJob(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::fflush(stderr);
  dist_rt_world_abort(1);
  std::abort(); // Not reached: dist_rt_world_abort ends the process.
}

std::string meshText(const std::vector<int64_t> &shape,
                     const std::vector<std::string> &names) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + names[i] + "=" + std::to_string(shape[i]);
  return s;
}

void stopWorker(Mesh &m) {
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.stopWorker = true;
  }
  m.changed.notify_all();
  if (m.worker.joinable())
    m.worker.join();
}

} // namespace

using dist_rt::makeStatus;

extern "C" dist_rt_status_t dist_rt_mesh_setup(uint32_t num_axes,
                                               const int64_t *shape,
                                               const char *const *names) {
  if (num_axes == 0 || !shape)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "mesh_setup: the mesh has no axes");
  std::vector<int64_t> meshShape(shape, shape + num_axes);
  std::vector<std::string> meshNames;
  int64_t product = 1;
  for (uint32_t a = 0; a < num_axes; ++a) {
    if (meshShape[a] < 1 || meshShape[a] > (int64_t(1) << 20))
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "mesh_setup: axis %u has size %lld", a,
                        static_cast<long long>(meshShape[a]));
    product *= meshShape[a];
    meshNames.push_back(names && names[a] ? names[a]
                                          : "axis" + std::to_string(a));
  }
  Mesh &m = mesh();
  if (m.active) {
    if (m.shape == meshShape)
      return nullptr;
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "mesh_setup: the process already runs the mesh %s, "
                      "not %s",
                      meshText(m.shape, m.names).c_str(),
                      meshText(meshShape, meshNames).c_str());
  }
  dist_rt_world_options_t options;
  if (dist_rt_status_t s = dist_rt::worldOptionsFromEnvironment(options))
    return s;
  dist_rt_comm_t world = nullptr;
  if (dist_rt_status_t s =
          dist_rt_world_init(nullptr, nullptr, &options, &world))
    return s;
  int32_t size = dist_rt_comm_size(world);
  int32_t rank = dist_rt_comm_rank(world);
  if (size != 1 && size != product) {
    dist_rt_comm_release(world);
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "rank %d: the job has %d ranks, but the model is "
                      "compiled for the mesh %s (%lld ranks; or run it as a "
                      "single process)",
                      rank, size, meshText(meshShape, meshNames).c_str(),
                      static_cast<long long>(product));
  }
  bool alone = size == 1;
  std::vector<int64_t> splitShape =
      alone ? std::vector<int64_t>(num_axes, 1) : meshShape;
  std::vector<dist_rt_comm_t> comms(num_axes, nullptr);
  if (dist_rt_status_t s = dist_rt_comm_split_mesh(
          world, splitShape.data(), static_cast<int32_t>(num_axes),
          comms.data())) {
    dist_rt_comm_release(world);
    return s;
  }
  comms.push_back(world);
  m.shape = meshShape;
  m.names = meshNames;
  m.world = world;
  m.axisComms = comms;
  m.worldRank = rank;
  m.worldSize = size;
  m.alone = alone;
  m.stopWorker = false;
  const char *sync = std::getenv("DIST_RT_MESH_SYNC");
  bool threaded = !alone && !(sync && std::strcmp(sync, "1") == 0) &&
                  dist_rt::comm::mpiAllowsSerializedThreads();
  if (threaded)
    m.worker = std::thread(workerLoop);
  m.active = true;
  // dist_rt_main ends the mesh itself; a program using a model through
  // lib<name>.so gets it ended (and MPI finalized) when it exits normally.
  static bool atExitRegistered = false;
  if (!atExitRegistered) {
    atExitRegistered = true;
    std::atexit([] {
      if (dist_rt_mesh_active())
        dist_rt_mesh_finish(0);
    });
  }
  return nullptr;
}

extern "C" int dist_rt_mesh_active(void) { return mesh().active ? 1 : 0; }

extern "C" int32_t dist_rt_mesh_world_rank(void) {
  return mesh().active ? mesh().worldRank : 0;
}

extern "C" int32_t dist_rt_mesh_world_size(void) {
  return mesh().active ? mesh().worldSize : 1;
}

extern "C" int64_t dist_rt_mesh_axis_size(const char *name) {
  Mesh &m = mesh();
  if (!m.active || m.alone || !name)
    return 1;
  for (size_t a = 0; a < m.names.size(); ++a)
    if (m.names[a] == name)
      return m.shape[a];
  return 1;
}

extern "C" int64_t dist_rt_mesh_axis_coord(const char *name) {
  Mesh &m = mesh();
  if (!m.active || m.alone || !name)
    return 0;
  for (size_t a = 0; a < m.names.size(); ++a)
    if (m.names[a] == name)
      return dist_rt_comm_rank(m.axisComms[a]);
  return 0;
}

extern "C" int64_t dist_rt_mesh_all_reduce_start(int64_t data, int64_t count,
                                                 int64_t dtype, int64_t reduce,
                                                 int64_t axis_mask) {
  Mesh &m = mesh();
  if (!m.active)
    abortJob("a collective of the model ran before its mesh was set up "
             "(dist_rt_mesh_setup)");
  if ((dtype != DIST_RT_DTYPE_FLOAT && dtype != DIST_RT_DTYPE_DOUBLE) ||
      reduce < DIST_RT_MESH_REDUCE_SUM ||
      reduce > DIST_RT_MESH_REDUCE_AVERAGE || count < 0)
    abortJob("rank " + std::to_string(m.worldRank) +
             ": all_reduce: unsupported dtype " + std::to_string(dtype) +
             " or reduction " + std::to_string(reduce));
  size_t numAxes = m.shape.size();
  int64_t all = (numAxes >= 63 ? -1 : (int64_t(1) << numAxes) - 1);
  dist_rt_comm_t comm = nullptr;
  if (axis_mask == all)
    comm = m.world;
  else
    for (size_t a = 0; a < numAxes; ++a)
      if (axis_mask == (int64_t(1) << a))
        comm = m.axisComms[a];
  if (!comm)
    abortJob("rank " + std::to_string(m.worldRank) +
             ": all_reduce over mesh axes 0x" + std::to_string(axis_mask) +
             " is not supported (one axis or all of them)");
  if (dist_rt_comm_size(comm) == 1)
    return 0; // Identity; nothing to wait for.
  // A mean over dp ranks of means over unequal numbers of rows: each
  // rank's share is weighted by its rows first.
  if (reduce == DIST_RT_MESH_REDUCE_AVERAGE && m.dpRowWeight != 1.0) {
    bool overDp = false;
    for (size_t a = 0; a < numAxes; ++a)
      if (m.names[a] == "dp")
        overDp = comm == m.axisComms[a] ||
                 (comm == m.world && m.shape[a] == m.worldSize);
    if (overDp) {
      if (dtype == DIST_RT_DTYPE_FLOAT) {
        auto *p = reinterpret_cast<float *>(static_cast<intptr_t>(data));
        auto w = static_cast<float>(m.dpRowWeight);
        for (int64_t i = 0; i < count; ++i)
          p[i] *= w;
      } else {
        auto *p = reinterpret_cast<double *>(static_cast<intptr_t>(data));
        for (int64_t i = 0; i < count; ++i)
          p[i] *= m.dpRowWeight;
      }
    }
  }

  auto *job = new Job();
  job->data = reinterpret_cast<void *>(static_cast<intptr_t>(data));
  job->count = count;
  job->dtype = static_cast<uint32_t>(dtype);
  job->reduce = reduce;
  job->comm = comm;
  job->started = Clock::now();
  std::unique_lock<std::mutex> lock(m.mutex);
  job->handle = m.nextHandle++;
  m.stats.ops += 1;
  m.stats.bytes += count * static_cast<int64_t>(elementSize(job->dtype));
  m.pending.push_back(job);
  if (m.worker.joinable()) {
    m.queue.push_back(job);
    m.changed.notify_all();
    return job->handle;
  }
  lock.unlock();
  runJob(*job);
  Clock::time_point end = Clock::now();
  lock.lock();
  double seconds = secondsBetween(job->started, end);
  m.stats.comm_seconds += seconds;
  m.stats.wait_seconds += seconds;
  job->done = true;
  return job->handle;
}

extern "C" void dist_rt_mesh_all_reduce_wait(int64_t handle) {
  if (handle == 0)
    return;
  Mesh &m = mesh();
  std::unique_lock<std::mutex> lock(m.mutex);
  Job *job = nullptr;
  for (size_t i = 0; i < m.pending.size(); ++i)
    if (m.pending[i]->handle == handle) {
      job = m.pending[i];
      m.pending.erase(m.pending.begin() + static_cast<ptrdiff_t>(i));
      break;
    }
  if (!job)
    abortJob("rank " + std::to_string(m.worldRank) +
             ": all_reduce: wait for an unknown handle " +
             std::to_string(handle));
  Clock::time_point begin = Clock::now();
  if (!job->done) {
    m.changed.wait(lock, [&] { return job->done; });
    m.stats.wait_seconds += secondsBetween(begin, Clock::now());
  }
  lock.unlock();
  if (job->status) {
    std::string message = dist_rt_status_message(job->status);
    abortJob(message);
  }
  delete job;
}

namespace {

/// Runs `job` on the communication thread after what is queued (or here
/// without one) and waits for it; takes ownership of `job`.
dist_rt_status_t runNow(Job *job) {
  Mesh &m = mesh();
  job->started = Clock::now();
  std::unique_lock<std::mutex> lock(m.mutex);
  m.stats.ops += 1;
  m.stats.bytes += job->count * static_cast<int64_t>(elementSize(job->dtype));
  if (m.worker.joinable()) {
    m.queue.push_back(job);
    m.changed.notify_all();
    Clock::time_point begin = Clock::now();
    m.changed.wait(lock, [&] { return job->done; });
    m.stats.wait_seconds += secondsBetween(begin, Clock::now());
  } else {
    lock.unlock();
    runJob(*job);
    double seconds = secondsBetween(job->started, Clock::now());
    lock.lock();
    m.stats.comm_seconds += seconds;
    m.stats.wait_seconds += seconds;
  }
  dist_rt_status_t status = job->status;
  delete job;
  return status;
}

/// The communicator of mesh axis `axis`, or null.
dist_rt_comm_t axisComm(int64_t axis) {
  Mesh &m = mesh();
  if (!m.active || axis < 0 || axis >= static_cast<int64_t>(m.shape.size()))
    return nullptr;
  return m.axisComms[static_cast<size_t>(axis)];
}

} // namespace

extern "C" int64_t dist_rt_mesh_coord(int64_t axis) {
  dist_rt_comm_t comm = axisComm(axis);
  return comm ? dist_rt_comm_rank(comm) : 0;
}

extern "C" void dist_rt_mesh_all_gather(int64_t src, int64_t dst, int64_t count,
                                        int64_t dtype, int64_t axis_mask) {
  Mesh &m = mesh();
  if (!m.active)
    abortJob("a collective of the model ran before its mesh was set up "
             "(dist_rt_mesh_setup)");
  int64_t axis = -1;
  for (size_t a = 0; a < m.shape.size() && a < 63; ++a)
    if (axis_mask == (int64_t(1) << a))
      axis = static_cast<int64_t>(a);
  if (axis < 0 || count < 0 ||
      (dtype != DIST_RT_DTYPE_FLOAT && dtype != DIST_RT_DTYPE_DOUBLE))
    abortJob("rank " + std::to_string(m.worldRank) +
             ": all_gather over mesh axes 0x" + std::to_string(axis_mask) +
             " with dtype " + std::to_string(dtype) + " is not supported");
  auto *job = new Job();
  job->gather = true;
  job->data = reinterpret_cast<void *>(static_cast<intptr_t>(src));
  job->recv = reinterpret_cast<void *>(static_cast<intptr_t>(dst));
  job->count = count;
  job->dtype = static_cast<uint32_t>(dtype);
  job->comm = axisComm(axis);
  if (dist_rt_status_t s = runNow(job)) {
    std::string message = dist_rt_status_message(s);
    dist_rt_status_free(s);
    abortJob(message);
  }
}

dist_rt_status_t dist_rt::meshGatherBytes(int64_t axis, const void *src,
                                          void *dst, int64_t bytes) {
  dist_rt_comm_t comm = axisComm(axis);
  if (!comm)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "gather over mesh axis %lld without a mesh",
                      static_cast<long long>(axis));
  if (bytes % 4 != 0)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "gather of %lld bytes: not a multiple of 4",
                      static_cast<long long>(bytes));
  auto *job = new Job();
  job->gather = true;
  job->data = const_cast<void *>(src);
  job->recv = dst;
  job->count = bytes / 4; // Moved as float32 words: the bytes are opaque.
  job->dtype = DIST_RT_DTYPE_FLOAT;
  job->comm = comm;
  return runNow(job);
}

extern "C" void dist_rt_mesh_get_stats(dist_rt_mesh_stats_t *out, int reset) {
  Mesh &m = mesh();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (out)
    *out = m.stats;
  if (reset)
    m.stats = dist_rt_mesh_stats_t{0, 0, 0.0, 0.0};
}

extern "C" int dist_rt_mesh_finish(int exit_code) {
  Mesh &m = mesh();
  if (!m.active)
    return exit_code;
  if (exit_code != 0 && m.worldSize > 1)
    dist_rt_world_abort(exit_code);
  stopWorker(m);
  if (m.worldSize > 1) {
    if (dist_rt_status_t s = dist_rt_barrier(m.world)) {
      std::string message = dist_rt_status_message(s);
      dist_rt_status_free(s);
      abortJob(message);
    }
  }
  for (size_t a = 0; a + 1 < m.axisComms.size(); ++a)
    dist_rt_comm_release(m.axisComms[a]);
  dist_rt_comm_release(m.world);
  m.axisComms.clear();
  m.world = nullptr;
  m.active = false;
  if (dist_rt_status_t s = dist_rt_world_finalize()) {
    std::fprintf(stderr, "error: %s\n", dist_rt_status_message(s));
    dist_rt_status_free(s);
    return exit_code ? exit_code : 1;
  }
  return exit_code;
}

//===----------------------------------------------------------------------===//
// Pipeline transfers
//===----------------------------------------------------------------------===//

namespace {

/// A send to another stage still in flight: the copy it reads and the
/// backend's request.
struct PendingSend {
  std::vector<char> bytes;
  void *request = nullptr;
  int64_t peer = 0, tag = 0;
};

double &recvWaitSeconds() {
  static double seconds = 0;
  return seconds;
}

std::vector<PendingSend> &pendingSends() {
  static auto *sends = new std::vector<PendingSend>(); // Never destroyed.
  return *sends;
}

/// The communicator of the pipeline axis "pp" and the rank on it of stage
/// `stage`: alone (one process running every stage), the world and 0.
dist_rt_comm_t pipelineComm(int64_t stage, int32_t &rank) {
  Mesh &m = mesh();
  rank = 0;
  if (!m.active)
    abortJob("a pipeline transfer of the model ran before its mesh was set "
             "up (dist_rt_mesh_setup)");
  if (m.alone)
    return m.world;
  for (size_t a = 0; a < m.names.size(); ++a)
    if (m.names[a] == "pp") {
      rank = static_cast<int32_t>(stage);
      return m.axisComms[a];
    }
  abortJob("rank " + std::to_string(m.worldRank) +
           ": a pipeline transfer in a model whose mesh has no axis pp");
}

/// Drops the sends that have completed; with `wait`, polls until all have
/// or the communicator's deadline passes.
dist_rt_status_t reapSends(bool wait) {
  std::vector<PendingSend> &sends = pendingSends();
  if (sends.empty())
    return nullptr;
  int32_t unused = 0;
  dist_rt_comm_t comm = pipelineComm(0, unused);
  double limit = dist_rt::commTimeoutSeconds(comm);
  Clock::time_point begin = Clock::now();
  for (;;) {
    size_t kept = 0;
    for (size_t i = 0; i < sends.size(); ++i) {
      bool done = false;
      if (dist_rt_status_t s =
              dist_rt::commTestSend(comm, sends[i].request, &done))
        return s;
      if (done)
        continue;
      // (A vector moved onto itself would free the bytes MPI still reads.)
      if (kept != i)
        sends[kept] = std::move(sends[i]);
      ++kept;
    }
    sends.resize(kept);
    if (!wait || sends.empty())
      return nullptr;
    if (limit > 0 && secondsBetween(begin, Clock::now()) > limit)
      return makeStatus(DIST_RT_ERROR_COMM,
                        "rank %d: pipeline send of tag %lld to stage %lld "
                        "timed out after %g s waiting for it to receive",
                        static_cast<int>(mesh().worldRank),
                        static_cast<long long>(sends.front().tag),
                        static_cast<long long>(sends.front().peer), limit);
    std::this_thread::yield();
  }
}

[[noreturn]] void abortWith(dist_rt_status_t s) {
  std::string message = dist_rt_status_message(s);
  dist_rt_status_free(s);
  abortJob(message);
}

} // namespace

extern "C" void dist_rt_pp_send(int64_t data, int64_t bytes, int64_t peer,
                                int64_t tag) {
  int32_t rank = 0;
  dist_rt_comm_t comm = pipelineComm(peer, rank);
  if (dist_rt_status_t s = reapSends(/*wait=*/false))
    abortWith(s);
  // Moved as 32-bit words (the communicators' smallest element), the
  // copy padded to a whole word.
  PendingSend send;
  const char *from =
      reinterpret_cast<const char *>(static_cast<intptr_t>(data));
  send.bytes.assign(from, from + bytes);
  send.bytes.resize(static_cast<size_t>((bytes + 3) / 4 * 4), 0);
  send.peer = peer;
  send.tag = tag;
  if (dist_rt_status_t s = dist_rt::commStartSend(
          comm, send.bytes.data(), (bytes + 3) / 4, DIST_RT_DTYPE_INT32, rank,
          static_cast<int32_t>(tag), &send.request))
    abortWith(s);
  if (send.request)
    pendingSends().push_back(std::move(send));
  mesh().stats.ops += 1;
  mesh().stats.bytes += bytes;
}

extern "C" void dist_rt_pp_recv(int64_t data, int64_t bytes, int64_t peer,
                                int64_t tag) {
  int32_t rank = 0;
  dist_rt_comm_t comm = pipelineComm(peer, rank);
  Clock::time_point begin = Clock::now();
  void *into = reinterpret_cast<void *>(static_cast<intptr_t>(data));
  std::vector<char> padded;
  if (bytes % 4 != 0) {
    padded.resize(static_cast<size_t>((bytes + 3) / 4 * 4));
    into = padded.data();
  }
  if (dist_rt_status_t s =
          dist_rt_recv(comm, into, (bytes + 3) / 4, DIST_RT_DTYPE_INT32, rank,
                       static_cast<int32_t>(tag)))
    abortWith(s);
  if (!padded.empty())
    std::memcpy(reinterpret_cast<void *>(static_cast<intptr_t>(data)),
                padded.data(), static_cast<size_t>(bytes));
  double waited = secondsBetween(begin, Clock::now());
  mesh().stats.wait_seconds += waited;
  recvWaitSeconds() += waited;
}

double dist_rt::pipelineRecvWaitSeconds() { return recvWaitSeconds(); }

dist_rt_status_t dist_rt::pipelineFinishSends() {
  return reapSends(/*wait=*/true);
}

dist_rt_status_t dist_rt::pipelineBroadcast(void *buf, int64_t bytes,
                                            int64_t rootStage) {
  int32_t rank = 0;
  dist_rt_comm_t comm = pipelineComm(rootStage, rank);
  if (mesh().alone)
    return nullptr;
  std::vector<char> padded(static_cast<size_t>((bytes + 3) / 4 * 4), 0);
  std::memcpy(padded.data(), buf, static_cast<size_t>(bytes));
  dist_rt_status_t status = dist_rt_broadcast(
      comm, padded.data(), (bytes + 3) / 4, DIST_RT_DTYPE_INT32, rank);
  if (!status)
    std::memcpy(buf, padded.data(), static_cast<size_t>(bytes));
  return status;
}

void dist_rt::setDataParallelRowWeight(double weight) {
  mesh().dpRowWeight = weight;
}

dist_rt_status_t
dist_rt::worldOptionsFromEnvironment(dist_rt_world_options_t &options) {
  dist_rt_world_options_initialize(&options);
  if (const char *t = std::getenv("DIST_RT_COMM_TIMEOUT")) {
    char *end = nullptr;
    double v = std::strtod(t, &end);
    if (!end || *end || !(v >= 0) || v > 1e9)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "DIST_RT_COMM_TIMEOUT='%s' is not a number of "
                        "seconds",
                        t);
    options.timeout_s = v;
  }
  return nullptr;
}
