//===- comm_mpi.cpp - MPI backend of the communicators ----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The MPI implementation of CommBackend (comm_backend.h). Every operation is
// started as a non-blocking MPI call (MPI_Iallreduce, MPI_Iallgather,
// MPI_Ireduce_scatter_block, MPI_Ialltoall, MPI_Ibcast, MPI_Isend/Irecv,
// MPI_Ibarrier) and polled with MPI_Test, yielding and then sleeping briefly
// between polls, until it completes or the deadline passes. Communicators
// use MPI_ERRORS_RETURN so MPI errors become statuses. A timeout or an MPI
// error leaves the operation in flight: the backend is then marked failed,
// never frees its MPI communicator, and finalizeMpi refuses to call
// MPI_Finalize (which could wait forever).
//
// MPI counts are ints: all_reduce, broadcast, send and recv split larger
// counts into several operations; the block collectives reject them.
//
//===----------------------------------------------------------------------===//

#include "comm_backend.h"

// The runtime links only MPI's C library (MPI::MPI_C): keep mpi.h from
// pulling in the deprecated C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <string>
#include <thread>

using dist_rt::makeStatus;
using dist_rt::comm::CommBackend;
using dist_rt::comm::Deadline;

/// Most elements one MPI call moves (per rank for the block collectives).
/// Tests may compile with a smaller value to exercise the splitting.
#ifndef DIST_RT_COMM_MAX_CHUNK
#define DIST_RT_COMM_MAX_CHUNK INT_MAX
#endif

namespace {

constexpr int64_t kMaxChunk = DIST_RT_COMM_MAX_CHUNK;

/// True when createMpiWorldBackend called MPI_Init_thread.
std::atomic<bool> initializedHere{false};
std::atomic<bool> serializedThreads{false};
/// True once any operation timed out or failed in MPI.
std::atomic<bool> communicationFailed{false};

/// True between MPI_Init and MPI_Finalize (whoever called them).
bool mpiRunning() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

/// MPI's description of an error code.
std::string mpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS || length <= 0)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

MPI_Datatype mpiType(uint32_t dtype) {
  switch (dtype) {
  case DIST_RT_DTYPE_FLOAT:
    return MPI_FLOAT;
  case DIST_RT_DTYPE_DOUBLE:
    return MPI_DOUBLE;
  case DIST_RT_DTYPE_INT32:
    return MPI_INT32_T;
  default:
    return MPI_INT64_T;
  }
}

MPI_Op mpiOp(dist_rt_reduce_op_t reduce) {
  switch (reduce) {
  case DIST_RT_REDUCE_MAX:
    return MPI_MAX;
  case DIST_RT_REDUCE_MIN:
    return MPI_MIN;
  case DIST_RT_REDUCE_PROD:
    return MPI_PROD;
  default:
    return MPI_SUM;
  }
}

/// "the other rank" or "the other N ranks".
std::string otherRanks(int32_t size) {
  if (size == 2)
    return "the other rank";
  return "the other " + std::to_string(size - 1) + " ranks";
}

/// A group of ranks over one MPI communicator, which it owns.
class MpiBackend final : public CommBackend {
public:
  explicit MpiBackend(MPI_Comm comm) : comm(comm) {
    int value = 0;
    MPI_Comm_rank(comm, &value);
    myRank = value;
    MPI_Comm_size(comm, &value);
    numRanks = value;
  }

  ~MpiBackend() override {
    // After a failure operations may still be in flight on the
    // communicator; leave it to the end of the process.
    if (!failed && mpiRunning())
      MPI_Comm_free(&comm);
  }

  int32_t rank() const override { return myRank; }
  int32_t size() const override { return numRanks; }

  dist_rt_status_t allReduce(const char *op, const void *send, void *recv,
                             int64_t count, uint32_t dtype,
                             dist_rt_reduce_op_t reduce,
                             const Deadline &deadline) override {
    size_t elementSize = dist_rt_dtype_size(dtype);
    bool inPlace = send == recv;
    return forChunks(count, [&](int64_t offset, int n) -> dist_rt_status_t {
      const void *chunkSend =
          inPlace ? MPI_IN_PLACE
                  : static_cast<const char *>(send) + offset * elementSize;
      void *chunkRecv = static_cast<char *>(recv) + offset * elementSize;
      return startAndWait(
          op, deadline, otherRanks(numRanks), [&](MPI_Request *request) {
            return MPI_Iallreduce(chunkSend, chunkRecv, n, mpiType(dtype),
                                  mpiOp(reduce), comm, request);
          });
    });
  }

  dist_rt_status_t allGather(const char *op, const void *send, void *recv,
                             int64_t countPerRank, uint32_t dtype,
                             const Deadline &deadline) override {
    if (dist_rt_status_t status = checkBlockCount(op, countPerRank))
      return status;
    int n = static_cast<int>(countPerRank);
    return startAndWait(
        op, deadline, otherRanks(numRanks), [&](MPI_Request *request) {
          return MPI_Iallgather(send, n, mpiType(dtype), recv, n,
                                mpiType(dtype), comm, request);
        });
  }

  dist_rt_status_t reduceScatter(const char *op, const void *send, void *recv,
                                 int64_t countPerRank, uint32_t dtype,
                                 dist_rt_reduce_op_t reduce,
                                 const Deadline &deadline) override {
    if (dist_rt_status_t status = checkBlockCount(op, countPerRank))
      return status;
    return startAndWait(op, deadline, otherRanks(numRanks),
                        [&](MPI_Request *request) {
                          return MPI_Ireduce_scatter_block(
                              send, recv, static_cast<int>(countPerRank),
                              mpiType(dtype), mpiOp(reduce), comm, request);
                        });
  }

  dist_rt_status_t allToAll(const char *op, const void *send, void *recv,
                            int64_t countPerRank, uint32_t dtype,
                            const Deadline &deadline) override {
    if (dist_rt_status_t status = checkBlockCount(op, countPerRank))
      return status;
    int n = static_cast<int>(countPerRank);
    return startAndWait(op, deadline, otherRanks(numRanks),
                        [&](MPI_Request *request) {
                          return MPI_Ialltoall(send, n, mpiType(dtype), recv, n,
                                               mpiType(dtype), comm, request);
                        });
  }

  dist_rt_status_t broadcast(const char *op, void *buf, int64_t count,
                             uint32_t dtype, int32_t root,
                             const Deadline &deadline) override {
    size_t elementSize = dist_rt_dtype_size(dtype);
    std::string waitingFor = myRank == root
                                 ? otherRanks(numRanks)
                                 : "the root, rank " + std::to_string(root);
    return forChunks(count, [&](int64_t offset, int n) -> dist_rt_status_t {
      return startAndWait(op, deadline, waitingFor, [&](MPI_Request *request) {
        return MPI_Ibcast(static_cast<char *>(buf) + offset * elementSize, n,
                          mpiType(dtype), root, comm, request);
      });
    });
  }

  dist_rt_status_t send(const char *op, const void *buf, int64_t count,
                        uint32_t dtype, int32_t peer, int32_t tag,
                        const Deadline &deadline) override {
    size_t elementSize = dist_rt_dtype_size(dtype);
    std::string waitingFor = "rank " + std::to_string(peer) +
                             " to receive tag " + std::to_string(tag);
    return forChunks(count, [&](int64_t offset, int n) -> dist_rt_status_t {
      return startAndWait(op, deadline, waitingFor, [&](MPI_Request *request) {
        return MPI_Isend(static_cast<const char *>(buf) + offset * elementSize,
                         n, mpiType(dtype), peer, tag, comm, request);
      });
    });
  }

  dist_rt_status_t recv(const char *op, void *buf, int64_t count,
                        uint32_t dtype, int32_t peer, int32_t tag,
                        const Deadline &deadline) override {
    size_t elementSize = dist_rt_dtype_size(dtype);
    std::string waitingFor =
        "rank " + std::to_string(peer) + " to send tag " + std::to_string(tag);
    return forChunks(count, [&](int64_t offset, int n) -> dist_rt_status_t {
      MPI_Request request;
      int rc = MPI_Irecv(static_cast<char *>(buf) + offset * elementSize, n,
                         mpiType(dtype), peer, tag, comm, &request);
      if (rc != MPI_SUCCESS)
        return mpiError(op, rc);
      MPI_Status status;
      bool truncated = false;
      if (dist_rt_status_t failure =
              wait(op, &request, deadline, waitingFor, &status, &truncated))
        return failure;
      int received = 0;
      if (!truncated &&
          MPI_Get_count(&status, mpiType(dtype), &received) == MPI_SUCCESS &&
          received == n)
        return nullptr;
      std::string got = truncated || received == MPI_UNDEFINED
                            ? std::string("a longer message")
                            : "a message of " +
                                  std::to_string(offset + received) +
                                  " elements";
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "%s: expected %" PRId64 " %s elements from rank "
                        "%" PRId32 " with tag %" PRId32 ", got %s",
                        op, count, dist_rt_dtype_name(dtype), peer, tag,
                        got.c_str());
    });
  }

  dist_rt_status_t barrier(const char *op, const Deadline &deadline) override {
    return startAndWait(
        op, deadline, otherRanks(numRanks),
        [&](MPI_Request *request) { return MPI_Ibarrier(comm, request); });
  }

  dist_rt_status_t split(const char *op, int32_t color, int32_t key,
                         std::unique_ptr<CommBackend> *out) override {
    MPI_Comm newComm = MPI_COMM_NULL;
    int rc = MPI_Comm_split(comm, color, key, &newComm);
    if (rc != MPI_SUCCESS)
      return mpiError(op, rc);
    rc = MPI_Comm_set_errhandler(newComm, MPI_ERRORS_RETURN);
    if (rc != MPI_SUCCESS) {
      MPI_Comm_free(&newComm);
      return mpiError(op, rc);
    }
    out->reset(new MpiBackend(newComm));
    return nullptr;
  }

private:
  /// Marks the backend failed and reports MPI error `code`.
  dist_rt_status_t mpiError(const char *op, int code) {
    failed = true;
    communicationFailed.store(true);
    return makeStatus(DIST_RT_ERROR_COMM, "%s failed: %s", op,
                      mpiErrorText(code).c_str());
  }

  /// Rejects a per-rank count that an MPI int cannot hold.
  static dist_rt_status_t checkBlockCount(const char *op, int64_t count) {
    if (count <= kMaxChunk)
      return nullptr;
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: %" PRId64 " elements per rank exceed the MPI "
                      "limit of %" PRId64 " per call",
                      op, count, kMaxChunk);
  }

  /// Calls `body(offset, n)` for consecutive chunks of at most kMaxChunk
  /// elements covering [0, count), at least once (with n = 0 for an empty
  /// buffer), and stops at the first failure.
  template <typename Body>
  static dist_rt_status_t forChunks(int64_t count, Body &&body) {
    int64_t offset = 0;
    do {
      int64_t n = count - offset < kMaxChunk ? count - offset : kMaxChunk;
      if (dist_rt_status_t status = body(offset, static_cast<int>(n)))
        return status;
      offset += n;
    } while (offset < count);
    return nullptr;
  }

  /// Starts a nonblocking call (`start` fills the request and returns the
  /// MPI code) and waits for it as `wait` does.
  template <typename Start>
  dist_rt_status_t startAndWait(const char *op, const Deadline &deadline,
                                const std::string &waitingFor, Start start) {
    MPI_Request request;
    int rc = start(&request);
    if (rc != MPI_SUCCESS)
      return mpiError(op, rc);
    return wait(op, &request, deadline, waitingFor);
  }

  /// Polls `request` until it completes or `deadline` passes. A receive's
  /// status is stored in `*status`; a truncated receive sets `*truncated`
  /// and is not a communication failure.
  dist_rt_status_t wait(const char *op, MPI_Request *request,
                        const Deadline &deadline, const std::string &waitingFor,
                        MPI_Status *status = nullptr,
                        bool *truncated = nullptr) {
    unsigned polls = 0;
    for (;;) {
      int done = 0;
      int rc = MPI_Test(request, &done, status ? status : MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        int errorClass = 0;
        if (truncated && MPI_Error_class(rc, &errorClass) == MPI_SUCCESS &&
            errorClass == MPI_ERR_TRUNCATE) {
          *truncated = true;
          return nullptr;
        }
        return mpiError(op, rc);
      }
      if (done)
        return nullptr;
      if (deadline.expired()) {
        failed = true;
        communicationFailed.store(true);
        return makeStatus(DIST_RT_ERROR_COMM,
                          "%s timed out after %g s waiting for %s", op,
                          deadline.seconds(), waitingFor.c_str());
      }
      // Spin briefly for low latency, then sleep so that oversubscribed
      // ranks leave the cores to the ranks that have work.
      // (About a millisecond of yields first: sleeping early inflates the
      // latency of medium-sized collectives, which calibration measures.
      // Shorter sleeps after that, 20 us, measured no faster on the dp=2
      // GPT step: 30.3-34.1 ms against 32.4-34.0 ms.)
      ++polls;
      if (polls < 4096)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  MPI_Comm comm;
  int32_t myRank = 0;
  int32_t numRanks = 1;
  /// Set after a timeout or an MPI error.
  bool failed = false;
};

} // namespace

dist_rt_status_t
dist_rt::comm::createMpiWorldBackend(int *argc, char ***argv,
                                     std::unique_ptr<CommBackend> *out) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return makeStatus(DIST_RT_ERROR_COMM,
                      "world_init: MPI was already finalized and cannot be "
                      "initialized again");
  if (!initialized) {
    int provided = 0;
    // SERIALIZED when the library has it: the mesh collectives of
    // generated code (mesh.cpp) run on a communication thread.
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS)
      return makeStatus(DIST_RT_ERROR_COMM,
                        "world_init: MPI_Init_thread failed: %s",
                        mpiErrorText(rc).c_str());
    if (provided < MPI_THREAD_FUNNELED) {
      MPI_Finalize();
      return makeStatus(DIST_RT_ERROR_COMM,
                        "world_init: this MPI library gives thread support "
                        "level %d, the runtime needs MPI_THREAD_FUNNELED",
                        provided);
    }
    initializedHere.store(true);
    serializedThreads.store(provided >= MPI_THREAD_SERIALIZED);
    // Only when MPI is ours: the program's own handler is left alone.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  MPI_Comm world = MPI_COMM_NULL;
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &world);
  if (rc != MPI_SUCCESS)
    return makeStatus(DIST_RT_ERROR_COMM, "world_init: MPI_Comm_dup failed: %s",
                      mpiErrorText(rc).c_str());
  rc = MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  if (rc != MPI_SUCCESS) {
    MPI_Comm_free(&world);
    return makeStatus(DIST_RT_ERROR_COMM,
                      "world_init: MPI_Comm_set_errhandler failed: %s",
                      mpiErrorText(rc).c_str());
  }
  out->reset(new MpiBackend(world));
  return nullptr;
}

bool dist_rt::comm::mpiAllowsSerializedThreads() {
  if (initializedHere.load())
    return serializedThreads.load();
  int provided = 0;
  return mpiRunning() && MPI_Query_thread(&provided) == MPI_SUCCESS &&
         provided >= MPI_THREAD_SERIALIZED;
}

dist_rt_status_t dist_rt::comm::finalizeMpi() {
  if (!initializedHere.load() || !mpiRunning())
    return nullptr;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (communicationFailed.load())
    return makeStatus(DIST_RT_ERROR_COMM,
                      "rank %d: world_finalize: MPI is not finalized after a "
                      "communication failure (it could wait forever); end "
                      "the job with dist_rt_world_abort",
                      rank);
  int rc = MPI_Finalize();
  if (rc != MPI_SUCCESS)
    return makeStatus(DIST_RT_ERROR_COMM,
                      "rank %d: world_finalize: MPI_Finalize failed: %s", rank,
                      mpiErrorText(rc).c_str());
  return nullptr;
}

void dist_rt::comm::abortMpi(int code) {
  if (mpiRunning())
    MPI_Abort(MPI_COMM_WORLD, code);
}
