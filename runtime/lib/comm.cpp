//===- comm.cpp - Communicators and collectives: front end ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt/comm.h on top of the CommBackend vtable
// (comm_backend.h): the process-wide world, mesh splits, and the checks
// every collective makes before a backend sees it (NULL buffers, counts,
// dtypes, reductions, roots, peers, tags, overlapping buffers). Messages
// name the calling rank and the call. Messages a rank sends to itself are
// buffered here, whatever the backend. Also holds the SELF backend: a
// 1-rank group whose collectives are copies and which needs no MPI.
//
//===----------------------------------------------------------------------===//

#include "comm_backend.h"
#include "internal.h"

#include <atomic>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using dist_rt::makeStatus;
using dist_rt::comm::CommBackend;
using dist_rt::comm::Deadline;

/// A communicator: a backend plus what the front end keeps per group.
struct dist_rt_comm {
  std::atomic<int64_t> refs{1};
  std::unique_ptr<CommBackend> backend;
  /// Rank of this process in the world, used in every message.
  int32_t worldRank = 0;
  /// Deadline of each operation in seconds (0: none).
  double timeoutSeconds = 0;
  /// The message of the first communication failure; non-empty means that
  /// the communicator is unusable.
  std::string failure;

  /// A message this rank sent to itself.
  struct Message {
    uint32_t dtype;
    int64_t count;
    std::vector<char> bytes;
  };
  /// Messages sent to itself, by tag, oldest first.
  std::map<int32_t, std::deque<Message>> selfMessages;
};

namespace {

/// Largest tag of dist_rt_send and dist_rt_recv (the smallest MPI_TAG_UB
/// that MPI guarantees).
constexpr int32_t kMaxTag = 32767;

/// Most axes dist_rt_comm_split_mesh accepts.
constexpr int32_t kMaxMeshAxes = 64;

//===----------------------------------------------------------------------===//
// SELF backend
//===----------------------------------------------------------------------===//

/// One rank: every collective leaves the caller's own data in place.
class SelfBackend final : public CommBackend {
public:
  int32_t rank() const override { return 0; }
  int32_t size() const override { return 1; }

  dist_rt_status_t allReduce(const char *, const void *send, void *recv,
                             int64_t count, uint32_t dtype, dist_rt_reduce_op_t,
                             const Deadline &) override {
    copy(send, recv, count, dtype);
    return nullptr;
  }
  dist_rt_status_t allGather(const char *, const void *send, void *recv,
                             int64_t countPerRank, uint32_t dtype,
                             const Deadline &) override {
    copy(send, recv, countPerRank, dtype);
    return nullptr;
  }
  dist_rt_status_t reduceScatter(const char *, const void *send, void *recv,
                                 int64_t countPerRank, uint32_t dtype,
                                 dist_rt_reduce_op_t,
                                 const Deadline &) override {
    copy(send, recv, countPerRank, dtype);
    return nullptr;
  }
  dist_rt_status_t allToAll(const char *, const void *send, void *recv,
                            int64_t countPerRank, uint32_t dtype,
                            const Deadline &) override {
    copy(send, recv, countPerRank, dtype);
    return nullptr;
  }
  dist_rt_status_t broadcast(const char *, void *, int64_t, uint32_t, int32_t,
                             const Deadline &) override {
    return nullptr;
  }
  dist_rt_status_t send(const char *op, const void *, int64_t, uint32_t,
                        int32_t, int32_t, const Deadline &) override {
    return makeStatus(DIST_RT_ERROR_INTERNAL,
                      "%s: the 1-rank backend has no other rank", op);
  }
  dist_rt_status_t recv(const char *op, void *, int64_t, uint32_t, int32_t,
                        int32_t, const Deadline &) override {
    return makeStatus(DIST_RT_ERROR_INTERNAL,
                      "%s: the 1-rank backend has no other rank", op);
  }
  dist_rt_status_t barrier(const char *, const Deadline &) override {
    return nullptr;
  }
  dist_rt_status_t split(const char *, int32_t, int32_t,
                         std::unique_ptr<CommBackend> *out) override {
    out->reset(new SelfBackend());
    return nullptr;
  }

private:
  static void copy(const void *send, void *recv, int64_t count,
                   uint32_t dtype) {
    size_t bytes = static_cast<size_t>(count) * dist_rt_dtype_size(dtype);
    if (bytes != 0 && send != recv)
      std::memmove(recv, send, bytes);
  }
};

//===----------------------------------------------------------------------===//
// The world
//===----------------------------------------------------------------------===//

/// Guards `theWorld`.
std::mutex worldMutex;
/// The world, holding the runtime's own reference; NULL before
/// dist_rt_world_init and after dist_rt_world_finalize.
dist_rt_comm_t theWorld = nullptr;

/// Set by dist_rt::preferNcclWorld.
std::atomic<bool> ncclWorldPreferred{false};

/// True when an environment variable says that a launcher started us.
bool launchedByLauncher() {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(name))
      return true;
  if (const char *tasks = std::getenv("SLURM_NTASKS"))
    return std::strtol(tasks, nullptr, 10) > 1;
  return false;
}

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

/// vsnprintf into a std::string.
std::string vformat(const char *format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (length < 0)
    return "error message could not be formatted";
  std::string text(static_cast<size_t>(length) + 1, '\0');
  std::vsnprintf(&text[0], text.size(), format, args);
  text.resize(static_cast<size_t>(length));
  return text;
}

/// Builds "rank R: OP: <format>" with `code`.
dist_rt_status_t callError(dist_rt_comm_t comm, const char *op,
                           dist_rt_status_code_t code, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

dist_rt_status_t callError(dist_rt_comm_t comm, const char *op,
                           dist_rt_status_code_t code, const char *format,
                           ...) {
  va_list args;
  va_start(args, format);
  std::string detail = vformat(format, args);
  va_end(args);
  return makeStatus(code, "rank %" PRId32 ": %s: %s", comm->worldRank, op,
                    detail.c_str());
}

/// Turns a backend status (whose message starts with the call's name) into
/// one that names the calling rank too, and marks `comm` unusable after a
/// communication failure. NULL stays NULL.
dist_rt_status_t fromBackend(dist_rt_comm_t comm, dist_rt_status_t status) {
  if (!status)
    return nullptr;
  dist_rt_status_code_t code = dist_rt_status_code(status);
  std::string message = dist_rt_status_message(status);
  dist_rt_status_free(status);
  if (code == DIST_RT_ERROR_COMM && comm->failure.empty())
    comm->failure = message;
  return makeStatus(code, "rank %" PRId32 ": %s", comm->worldRank,
                    message.c_str());
}

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

/// Fails when `comm` is NULL.
dist_rt_status_t checkComm(dist_rt_comm_t comm, const char *op) {
  if (!comm)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT, "%s: comm is NULL", op);
  return nullptr;
}

/// Fails when an earlier communication failure made `comm` unusable.
dist_rt_status_t checkUsable(dist_rt_comm_t comm, const char *op) {
  if (comm->failure.empty())
    return nullptr;
  return callError(comm, op, DIST_RT_ERROR_COMM,
                   "the communicator is unusable after an earlier failure "
                   "(%s)",
                   comm->failure.c_str());
}

/// Checks a count and a dtype and stores the size of one element.
dist_rt_status_t checkCountAndType(dist_rt_comm_t comm, const char *op,
                                   const char *countName, int64_t count,
                                   uint32_t dtype, size_t *outElementSize) {
  if (count < 0)
    return callError(comm, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                     "%s must not be negative (got %" PRId64 ")", countName,
                     count);
  switch (dtype) {
  case DIST_RT_DTYPE_FLOAT:
  case DIST_RT_DTYPE_DOUBLE:
  case DIST_RT_DTYPE_INT32:
  case DIST_RT_DTYPE_INT64:
    break;
  default:
    return callError(comm, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                     "unsupported dtype %s (code %" PRIu32
                     "); expected float32, float64, int32 or int64",
                     dist_rt_dtype_name(dtype), dtype);
  }
  *outElementSize = dist_rt_dtype_size(dtype);
  return nullptr;
}

/// Checks a reduction.
dist_rt_status_t checkReduceOp(dist_rt_comm_t comm, const char *op,
                               dist_rt_reduce_op_t reduce) {
  switch (reduce) {
  case DIST_RT_REDUCE_SUM:
  case DIST_RT_REDUCE_MAX:
  case DIST_RT_REDUCE_MIN:
  case DIST_RT_REDUCE_PROD:
  case DIST_RT_REDUCE_AVG:
    return nullptr;
  }
  return callError(comm, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                   "unknown reduction %d (expected DIST_RT_REDUCE_SUM, MAX, "
                   "MIN, PROD or AVG)",
                   static_cast<int>(reduce));
}

/// Computes the size in bytes of `blocks` blocks of `count` elements of
/// `elementSize` bytes, and checks that `buffer` (called `name`) is not
/// NULL unless that size is 0.
dist_rt_status_t checkBuffer(dist_rt_comm_t comm, const char *op,
                             const char *name, const void *buffer,
                             int64_t count, int64_t blocks, size_t elementSize,
                             size_t *outBytes) {
  uint64_t limit = static_cast<uint64_t>(SIZE_MAX) / elementSize /
                   static_cast<uint64_t>(blocks);
  if (static_cast<uint64_t>(count) > limit)
    return callError(comm, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                     "%s: %" PRId64 " x %" PRId64
                     " elements do not fit in memory",
                     name, blocks, count);
  *outBytes =
      static_cast<size_t>(count) * static_cast<size_t>(blocks) * elementSize;
  if (!buffer && *outBytes != 0)
    return callError(comm, op, DIST_RT_ERROR_INVALID_ARGUMENT, "%s is NULL",
                     name);
  return nullptr;
}

/// Fails when the byte ranges of `send` and `recv` overlap.
dist_rt_status_t checkDisjoint(dist_rt_comm_t comm, const char *op,
                               const void *send, size_t sendBytes,
                               const void *recv, size_t recvBytes) {
  if (sendBytes == 0 || recvBytes == 0)
    return nullptr;
  uintptr_t s = reinterpret_cast<uintptr_t>(send);
  uintptr_t r = reinterpret_cast<uintptr_t>(recv);
  if (s < r + recvBytes && r < s + sendBytes)
    return callError(comm, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                     "send and recv overlap");
  return nullptr;
}

/// Checks a root or peer rank.
dist_rt_status_t checkRank(dist_rt_comm_t comm, const char *op,
                           const char *name, int32_t rank) {
  int32_t size = comm->backend->size();
  if (rank < 0 || rank >= size)
    return callError(comm, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                     "%s %" PRId32 " is out of range (the communicator has "
                     "%" PRId32 " rank%s)",
                     name, rank, size, size == 1 ? "" : "s");
  return nullptr;
}

/// Checks a tag.
dist_rt_status_t checkTag(dist_rt_comm_t comm, const char *op, int32_t tag) {
  if (tag < 0 || tag > kMaxTag)
    return callError(comm, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                     "tag %" PRId32 " is out of range (expected 0 to %" PRId32
                     ")",
                     tag, kMaxTag);
  return nullptr;
}

/// Evaluates a check and returns its status if it failed.
#define DIST_RT_CHECK(expr)                                                    \
  do {                                                                         \
    if (dist_rt_status_t checkStatus_ = (expr))                                \
      return checkStatus_;                                                     \
  } while (false)

/// Common part of all_gather, reduce_scatter and all_to_all: send holds
/// `sendBlocks` blocks of `count` elements, recv `recvBlocks`.
dist_rt_status_t checkBlockCall(dist_rt_comm_t comm, const char *op,
                                const void *send, void *recv, int64_t count,
                                uint32_t dtype, int64_t sendBlocks,
                                int64_t recvBlocks) {
  size_t elementSize = 0, sendBytes = 0, recvBytes = 0;
  DIST_RT_CHECK(checkCountAndType(comm, op, "count_per_rank", count, dtype,
                                  &elementSize));
  DIST_RT_CHECK(checkBuffer(comm, op, "send", send, count, sendBlocks,
                            elementSize, &sendBytes));
  DIST_RT_CHECK(checkBuffer(comm, op, "recv", recv, count, recvBlocks,
                            elementSize, &recvBytes));
  DIST_RT_CHECK(checkDisjoint(comm, op, send, sendBytes, recv, recvBytes));
  return checkUsable(comm, op);
}

} // namespace

std::unique_ptr<CommBackend> dist_rt::comm::createSelfBackend() {
  return std::unique_ptr<CommBackend>(new SelfBackend());
}

//===----------------------------------------------------------------------===//
// C API: world
//===----------------------------------------------------------------------===//

extern "C" void
dist_rt_world_options_initialize(dist_rt_world_options_t *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof(*options));
  options->timeout_s = 300;
  options->backend = DIST_RT_COMM_AUTO;
}

extern "C" dist_rt_status_t
dist_rt_world_init(int *argc, char ***argv,
                   const dist_rt_world_options_t *userOptions,
                   dist_rt_comm_t *out_world) {
  if (!out_world)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "world_init: out_world is NULL");
  *out_world = nullptr;
  return dist_rt::guardStatus("world_init", [&]() -> dist_rt_status_t {
    dist_rt_world_options_t options;
    dist_rt_world_options_initialize(&options);
    if (userOptions)
      options = *userOptions;
    if (!std::isfinite(options.timeout_s) || options.timeout_s < 0)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "world_init: timeout_s must be a finite number of "
                        "seconds, at least 0 (got %g)",
                        options.timeout_s);
    if (options.backend != DIST_RT_COMM_AUTO &&
        options.backend != DIST_RT_COMM_SELF &&
        options.backend != DIST_RT_COMM_MPI &&
        options.backend != DIST_RT_COMM_NCCL)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "world_init: unknown backend %" PRId32
                        " (expected DIST_RT_COMM_AUTO, SELF, MPI or NCCL)",
                        options.backend);

    std::lock_guard<std::mutex> lock(worldMutex);
    if (theWorld) {
      dist_rt_comm_retain(theWorld);
      *out_world = theWorld;
      return nullptr;
    }
    int32_t kind = options.backend;
    if (kind == DIST_RT_COMM_AUTO)
      kind = !launchedByLauncher() ? DIST_RT_COMM_SELF
             : ncclWorldPreferred  ? DIST_RT_COMM_NCCL
                                   : DIST_RT_COMM_MPI;
    std::unique_ptr<CommBackend> backend;
    if (kind == DIST_RT_COMM_MPI) {
      if (dist_rt_status_t status =
              dist_rt::comm::createMpiWorldBackend(argc, argv, &backend))
        return status;
    } else if (kind == DIST_RT_COMM_NCCL) {
      if (dist_rt_status_t status =
              dist_rt::comm::createNcclWorldBackend(argc, argv, &backend))
        return status;
    } else {
      backend = dist_rt::comm::createSelfBackend();
    }
    std::unique_ptr<dist_rt_comm> world(new dist_rt_comm());
    world->worldRank = backend->rank();
    world->timeoutSeconds = options.timeout_s;
    world->backend = std::move(backend);
    // One reference for the runtime, one for the caller.
    world->refs.store(2);
    theWorld = world.release();
    *out_world = theWorld;
    return nullptr;
  });
}

dist_rt_status_t dist_rt::comm::narrowWorld(int32_t color) {
  return dist_rt::guardStatus("world_split", [&]() -> dist_rt_status_t {
    std::lock_guard<std::mutex> lock(worldMutex);
    if (!theWorld)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "world_split: the world is not initialized");
    std::unique_ptr<CommBackend> backend;
    if (dist_rt_status_t status = theWorld->backend->split(
            "world_split", color, theWorld->backend->rank(), &backend))
      return status;
    std::unique_ptr<dist_rt_comm> part(new dist_rt_comm());
    part->worldRank = theWorld->worldRank;
    part->timeoutSeconds = theWorld->timeoutSeconds;
    part->backend = std::move(backend);
    dist_rt_comm_release(theWorld);
    theWorld = part.release();
    return nullptr;
  });
}

extern "C" dist_rt_status_t dist_rt_world_finalize(void) {
  return dist_rt::guardStatus("world_finalize", []() -> dist_rt_status_t {
    std::lock_guard<std::mutex> lock(worldMutex);
    if (theWorld) {
      dist_rt_comm_release(theWorld);
      theWorld = nullptr;
    }
    return dist_rt::comm::finalizeMpi();
  });
}

extern "C" void dist_rt_world_abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  dist_rt::comm::abortMpi(code);
  // Like MPI_Abort: no atexit handlers or static destructors, which could
  // wait for threads that are stuck.
  std::_Exit(code);
}

//===----------------------------------------------------------------------===//
// C API: communicators
//===----------------------------------------------------------------------===//

extern "C" int32_t dist_rt_comm_rank(dist_rt_comm_t comm) {
  return comm ? comm->backend->rank() : -1;
}

extern "C" int32_t dist_rt_comm_size(dist_rt_comm_t comm) {
  return comm ? comm->backend->size() : 0;
}

extern "C" void dist_rt_comm_retain(dist_rt_comm_t comm) {
  if (comm)
    comm->refs.fetch_add(1, std::memory_order_relaxed);
}

extern "C" void dist_rt_comm_release(dist_rt_comm_t comm) {
  if (comm && comm->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete comm;
}

extern "C" dist_rt_status_t
dist_rt_comm_split_mesh(dist_rt_comm_t world, const int64_t *mesh_shape,
                        int32_t num_axes, dist_rt_comm_t *out_axis_comms) {
  const char *op = "split_mesh";
  if (out_axis_comms && num_axes >= 1 && num_axes <= kMaxMeshAxes)
    for (int32_t a = 0; a < num_axes; ++a)
      out_axis_comms[a] = nullptr;
  DIST_RT_CHECK(checkComm(world, op));
  if (!out_axis_comms)
    return callError(world, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                     "out_axis_comms is NULL");
  if (num_axes < 1 || num_axes > kMaxMeshAxes)
    return callError(world, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                     "num_axes must be from 1 to %" PRId32 " (got %" PRId32 ")",
                     kMaxMeshAxes, num_axes);
  for (int32_t a = 0; a < num_axes; ++a)
    out_axis_comms[a] = nullptr;
  if (!mesh_shape)
    return callError(world, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                     "mesh_shape is NULL");

  return dist_rt::guardStatus(op, [&]() -> dist_rt_status_t {
    std::string meshText;
    int64_t product = 1;
    bool overflow = false;
    for (int32_t a = 0; a < num_axes; ++a) {
      if (mesh_shape[a] < 1)
        return callError(world, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                         "mesh_shape[%" PRId32 "] must be at least 1 (got "
                         "%" PRId64 ")",
                         a, mesh_shape[a]);
      if (a != 0)
        meshText += 'x';
      meshText += std::to_string(mesh_shape[a]);
      if (product > INT64_MAX / mesh_shape[a])
        overflow = true;
      else
        product *= mesh_shape[a];
    }
    // Every rank must ask for the same mesh, or the communicator splits
    // below (which have no deadline) would not match up: compare the
    // shapes first, under the deadline (this is also the rendezvous that
    // catches a missing rank).
    DIST_RT_CHECK(checkUsable(world, op));
    {
      int64_t shape[1 + kMaxMeshAxes] = {num_axes};
      for (int32_t a = 0; a < num_axes; ++a)
        shape[1 + a] = mesh_shape[a];
      int64_t lo[1 + kMaxMeshAxes], hi[1 + kMaxMeshAxes];
      DIST_RT_CHECK(fromBackend(
          world, world->backend->hostBackend()->allReduce(
                     op, shape, lo, 1 + kMaxMeshAxes, DIST_RT_DTYPE_INT64,
                     DIST_RT_REDUCE_MIN, Deadline(world->timeoutSeconds))));
      DIST_RT_CHECK(fromBackend(
          world, world->backend->hostBackend()->allReduce(
                     op, shape, hi, 1 + kMaxMeshAxes, DIST_RT_DTYPE_INT64,
                     DIST_RT_REDUCE_MAX, Deadline(world->timeoutSeconds))));
      for (int32_t i = 0; i < 1 + kMaxMeshAxes; ++i)
        if (lo[i] != hi[i])
          return callError(world, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                           "the ranks ask for different meshes (this rank: "
                           "%s)",
                           meshText.c_str());
    }
    int32_t size = world->backend->size();
    bool isWorld = false;
    {
      std::lock_guard<std::mutex> lock(worldMutex);
      isWorld = world == theWorld;
    }
    const char *what = isWorld ? "the world" : "the communicator";
    if (overflow)
      return callError(world, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                       "mesh %s needs more than %" PRId64
                       " ranks, %s has %" PRId32,
                       meshText.c_str(), INT64_MAX, what, size);
    if (product != size)
      return callError(world, op, DIST_RT_ERROR_INVALID_ARGUMENT,
                       "mesh %s needs %" PRId64 " rank%s, %s has %" PRId32,
                       meshText.c_str(), product, product == 1 ? "" : "s", what,
                       size);

    std::vector<dist_rt_comm_t> created;
    auto fail = [&](dist_rt_status_t status) {
      for (dist_rt_comm_t comm : created)
        dist_rt_comm_release(comm);
      for (int32_t a = 0; a < num_axes; ++a)
        out_axis_comms[a] = nullptr;
      return status;
    };
    int32_t rank = world->backend->rank();
    int64_t stride = product;
    for (int32_t a = 0; a < num_axes; ++a) {
      stride /= mesh_shape[a];
      int64_t coordinate = (rank / stride) % mesh_shape[a];
      // The ranks that agree on every other coordinate share a color.
      int32_t color = static_cast<int32_t>(rank - coordinate * stride);
      std::unique_ptr<CommBackend> backend;
      if (dist_rt_status_t status = world->backend->split(
              op, color, static_cast<int32_t>(coordinate), &backend))
        return fail(fromBackend(world, status));
      if (backend->size() != mesh_shape[a] || backend->rank() != coordinate)
        return fail(callError(
            world, op, DIST_RT_ERROR_INTERNAL,
            "axis %" PRId32 " communicator has rank %" PRId32 " of %" PRId32
            ", expected %" PRId64 " of %" PRId64,
            a, backend->rank(), backend->size(), coordinate, mesh_shape[a]));
      std::unique_ptr<dist_rt_comm> comm(new dist_rt_comm());
      comm->worldRank = world->worldRank;
      comm->timeoutSeconds = world->timeoutSeconds;
      comm->backend = std::move(backend);
      created.push_back(comm.release());
    }
    for (int32_t a = 0; a < num_axes; ++a)
      out_axis_comms[a] = created[static_cast<size_t>(a)];
    return static_cast<dist_rt_status_t>(nullptr);
  });
}

//===----------------------------------------------------------------------===//
// C API: collectives
//===----------------------------------------------------------------------===//

extern "C" dist_rt_status_t dist_rt_all_reduce(dist_rt_comm_t comm,
                                               const void *send, void *recv,
                                               int64_t count, uint32_t dtype,
                                               dist_rt_reduce_op_t op) {
  const char *name = "all_reduce";
  DIST_RT_CHECK(checkComm(comm, name));
  size_t elementSize = 0, sendBytes = 0, recvBytes = 0;
  DIST_RT_CHECK(
      checkCountAndType(comm, name, "count", count, dtype, &elementSize));
  DIST_RT_CHECK(checkReduceOp(comm, name, op));
  DIST_RT_CHECK(
      checkBuffer(comm, name, "send", send, count, 1, elementSize, &sendBytes));
  DIST_RT_CHECK(
      checkBuffer(comm, name, "recv", recv, count, 1, elementSize, &recvBytes));
  if (send != recv)
    DIST_RT_CHECK(checkDisjoint(comm, name, send, sendBytes, recv, recvBytes));
  DIST_RT_CHECK(checkUsable(comm, name));
  return dist_rt::guardStatus(name, [&]() {
    return fromBackend(
        comm, comm->backend->allReduce(name, send, recv, count, dtype, op,
                                       Deadline(comm->timeoutSeconds)));
  });
}

extern "C" dist_rt_status_t dist_rt_all_gather(dist_rt_comm_t comm,
                                               const void *send, void *recv,
                                               int64_t count_per_rank,
                                               uint32_t dtype) {
  const char *name = "all_gather";
  DIST_RT_CHECK(checkComm(comm, name));
  DIST_RT_CHECK(checkBlockCall(comm, name, send, recv, count_per_rank, dtype, 1,
                               comm->backend->size()));
  return dist_rt::guardStatus(name, [&]() {
    return fromBackend(
        comm, comm->backend->allGather(name, send, recv, count_per_rank, dtype,
                                       Deadline(comm->timeoutSeconds)));
  });
}

extern "C" dist_rt_status_t dist_rt_reduce_scatter(dist_rt_comm_t comm,
                                                   const void *send, void *recv,
                                                   int64_t count_per_rank,
                                                   uint32_t dtype,
                                                   dist_rt_reduce_op_t op) {
  const char *name = "reduce_scatter";
  DIST_RT_CHECK(checkComm(comm, name));
  DIST_RT_CHECK(checkReduceOp(comm, name, op));
  DIST_RT_CHECK(checkBlockCall(comm, name, send, recv, count_per_rank, dtype,
                               comm->backend->size(), 1));
  return dist_rt::guardStatus(name, [&]() {
    return fromBackend(comm, comm->backend->reduceScatter(
                                 name, send, recv, count_per_rank, dtype, op,
                                 Deadline(comm->timeoutSeconds)));
  });
}

extern "C" dist_rt_status_t dist_rt_all_to_all(dist_rt_comm_t comm,
                                               const void *send, void *recv,
                                               int64_t count_per_rank,
                                               uint32_t dtype) {
  const char *name = "all_to_all";
  DIST_RT_CHECK(checkComm(comm, name));
  int64_t size = comm->backend->size();
  DIST_RT_CHECK(checkBlockCall(comm, name, send, recv, count_per_rank, dtype,
                               size, size));
  return dist_rt::guardStatus(name, [&]() {
    return fromBackend(
        comm, comm->backend->allToAll(name, send, recv, count_per_rank, dtype,
                                      Deadline(comm->timeoutSeconds)));
  });
}

extern "C" dist_rt_status_t dist_rt_broadcast(dist_rt_comm_t comm, void *buf,
                                              int64_t count, uint32_t dtype,
                                              int32_t root) {
  const char *name = "broadcast";
  DIST_RT_CHECK(checkComm(comm, name));
  size_t elementSize = 0, bytes = 0;
  DIST_RT_CHECK(
      checkCountAndType(comm, name, "count", count, dtype, &elementSize));
  DIST_RT_CHECK(
      checkBuffer(comm, name, "buf", buf, count, 1, elementSize, &bytes));
  DIST_RT_CHECK(checkRank(comm, name, "root", root));
  DIST_RT_CHECK(checkUsable(comm, name));
  return dist_rt::guardStatus(name, [&]() {
    return fromBackend(
        comm, comm->backend->broadcast(name, buf, count, dtype, root,
                                       Deadline(comm->timeoutSeconds)));
  });
}

namespace {
/// Argument checks shared by send and recv; `*bytes` gets the buffer size.
dist_rt_status_t checkPointToPoint(dist_rt_comm_t comm, const char *name,
                                   const void *buf, int64_t count,
                                   uint32_t dtype, int32_t peer, int32_t tag,
                                   size_t *bytes) {
  DIST_RT_CHECK(checkComm(comm, name));
  size_t elementSize = 0;
  DIST_RT_CHECK(
      checkCountAndType(comm, name, "count", count, dtype, &elementSize));
  DIST_RT_CHECK(
      checkBuffer(comm, name, "buf", buf, count, 1, elementSize, bytes));
  DIST_RT_CHECK(checkRank(comm, name, "peer", peer));
  DIST_RT_CHECK(checkTag(comm, name, tag));
  if (peer == comm->backend->rank() && comm->backend->deviceMemory())
    return callError(comm, name, DIST_RT_ERROR_INVALID_ARGUMENT,
                     "peer %" PRId32 " is this rank, and the NCCL backend "
                     "cannot send a message to itself",
                     peer);
  return checkUsable(comm, name);
}
} // namespace

namespace {
/// dist_rt_send (`out_request` null: waits until the message is received)
/// and commStartSend (returns a request to poll). A message to itself is
/// kept by the communicator.
dist_rt_status_t sendMessage(dist_rt_comm_t comm, const void *buf,
                             int64_t count, uint32_t dtype, int32_t peer,
                             int32_t tag, void **out_request) {
  const char *name = "send";
  if (out_request)
    *out_request = nullptr;
  size_t bytes = 0;
  DIST_RT_CHECK(
      checkPointToPoint(comm, name, buf, count, dtype, peer, tag, &bytes));
  return dist_rt::guardStatus(name, [&]() -> dist_rt_status_t {
    if (peer == comm->backend->rank()) {
      dist_rt_comm::Message message;
      message.dtype = dtype;
      message.count = count;
      const char *bytesIn = static_cast<const char *>(buf);
      message.bytes.assign(bytesIn, bytesIn + bytes);
      comm->selfMessages[tag].push_back(std::move(message));
      return nullptr;
    }
    Deadline deadline(comm->timeoutSeconds);
    return fromBackend(
        comm, out_request
                  ? comm->backend->startSend(name, buf, count, dtype, peer, tag,
                                             deadline, out_request)
                  : comm->backend->send(name, buf, count, dtype, peer, tag,
                                        deadline));
  });
}
} // namespace

extern "C" dist_rt_status_t dist_rt_send(dist_rt_comm_t comm, const void *buf,
                                         int64_t count, uint32_t dtype,
                                         int32_t peer, int32_t tag) {
  return sendMessage(comm, buf, count, dtype, peer, tag, nullptr);
}

dist_rt_status_t dist_rt::commStartSend(dist_rt_comm_t comm, const void *buf,
                                        int64_t count, uint32_t dtype,
                                        int32_t peer, int32_t tag,
                                        void **out_request) {
  return sendMessage(comm, buf, count, dtype, peer, tag, out_request);
}

dist_rt_status_t dist_rt::commTestSend(dist_rt_comm_t comm, void *request,
                                       bool *out_done) {
  *out_done = true;
  if (!request)
    return nullptr;
  return fromBackend(comm, comm->backend->testSend("send", request, out_done));
}

double dist_rt::commTimeoutSeconds(dist_rt_comm_t comm) {
  return comm->timeoutSeconds;
}

extern "C" dist_rt_status_t dist_rt_recv(dist_rt_comm_t comm, void *buf,
                                         int64_t count, uint32_t dtype,
                                         int32_t peer, int32_t tag) {
  const char *name = "recv";
  size_t bytes = 0;
  DIST_RT_CHECK(
      checkPointToPoint(comm, name, buf, count, dtype, peer, tag, &bytes));
  return dist_rt::guardStatus(name, [&]() -> dist_rt_status_t {
    if (peer == comm->backend->rank()) {
      // Only this thread uses the communicator, so a message to itself
      // that is not there yet never comes.
      auto found = comm->selfMessages.find(tag);
      if (found == comm->selfMessages.end() || found->second.empty())
        return callError(comm, name, DIST_RT_ERROR_INVALID_ARGUMENT,
                         "no message from rank %" PRId32
                         " (itself) with tag %" PRId32 " was sent",
                         peer, tag);
      dist_rt_comm::Message message = std::move(found->second.front());
      found->second.pop_front();
      if (found->second.empty())
        comm->selfMessages.erase(found);
      if (message.dtype != dtype || message.count != count)
        return callError(comm, name, DIST_RT_ERROR_INVALID_ARGUMENT,
                         "expected %" PRId64 " %s elements from rank %" PRId32
                         " with tag %" PRId32 ", got %" PRId64 " %s elements",
                         count, dist_rt_dtype_name(dtype), peer, tag,
                         message.count, dist_rt_dtype_name(message.dtype));
      if (bytes != 0)
        std::memcpy(buf, message.bytes.data(), bytes);
      return nullptr;
    }
    return fromBackend(comm,
                       comm->backend->recv(name, buf, count, dtype, peer, tag,
                                           Deadline(comm->timeoutSeconds)));
  });
}

extern "C" dist_rt_status_t dist_rt_barrier(dist_rt_comm_t comm) {
  const char *name = "barrier";
  DIST_RT_CHECK(checkComm(comm, name));
  DIST_RT_CHECK(checkUsable(comm, name));
  return dist_rt::guardStatus(name, [&]() {
    return fromBackend(
        comm, comm->backend->barrier(name, Deadline(comm->timeoutSeconds)));
  });
}

int dist_rt::launcherLocalRank(int fallback) {
  for (const char *name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char *value = std::getenv(name))
      return std::atoi(value);
  return fallback;
}

void dist_rt::preferNcclWorld() { ncclWorldPreferred = true; }
