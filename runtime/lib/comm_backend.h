//===- comm_backend.h - Backend interface of the communicators --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The vtable behind dist_rt_comm_t (dist_rt/comm.h): CommBackend is what a
// communication library implements, the front end in comm.cpp checks the
// arguments, adds the calling rank to messages, buffers messages a rank
// sends to itself, and marks a communicator unusable after a failure. The
// SELF backend lives in comm.cpp, the MPI backend in comm_mpi.cpp. Internal
// to the runtime library; not installed.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_LIB_COMM_BACKEND_H
#define DIST_RT_LIB_COMM_BACKEND_H

#include "status.h"

#include "dist_rt/comm.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

namespace dist_rt {
namespace comm {

/// When a blocking operation must give up. Built from the communicator's
/// timeout; a timeout of 0 never expires.
class Deadline {
public:
  /// Timeouts above this (about 31 years) never expire; converting them to
  /// the clock's integer nanoseconds would overflow.
  static constexpr double kNeverSeconds = 1e9;

  explicit Deadline(double timeoutSeconds)
      : timeoutSeconds(timeoutSeconds),
        end(std::chrono::steady_clock::now() +
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                std::chrono::duration<double>(
                    timeoutSeconds > 0 && timeoutSeconds < kNeverSeconds
                        ? timeoutSeconds
                        : 0))) {}

  /// True once the deadline has passed.
  bool expired() const {
    return timeoutSeconds > 0 && timeoutSeconds < kNeverSeconds &&
           std::chrono::steady_clock::now() >= end;
  }

  /// The timeout it was built from, for messages.
  double seconds() const { return timeoutSeconds; }

private:
  double timeoutSeconds;
  std::chrono::steady_clock::time_point end;
};

/// How a backend waits between two polls of an operation in flight: it
/// yields for about a millisecond (sleeping early inflates the latency of
/// medium-sized collectives, which calibration measures), then sleeps 200
/// us a time so that oversubscribed ranks leave the cores to the ranks that
/// have work (shorter sleeps, 20 us, measured no faster on the dp=2 GPT
/// step: 30.3-34.1 ms against 32.4-34.0 ms).
class PollBackoff {
public:
  void pause() {
    if (++polls < 4096)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }

private:
  unsigned polls = 0;
};

/// One communication library's view of a group of ranks.
///
/// Every operation is blocking for the caller and gets arguments the front
/// end already checked: a supported dtype and op, non-negative counts whose
/// byte sizes fit in size_t, non-overlapping buffers (send == recv only for
/// allReduce), a root or peer in range and a tag in [0, 32767]. `op` names
/// the C API call ("all_reduce", ...) for messages. On failure a backend
/// returns a status whose message starts with `op` and does not name the
/// calling rank (the front end adds it). DIST_RT_ERROR_COMM means the
/// communicator may have operations in flight and is unusable from then on;
/// other codes leave it usable. Backends are used by one thread at a time.
class CommBackend {
public:
  virtual ~CommBackend() = default;

  /// The rank of this process and the number of ranks.
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;
  /// Whether buffers are device (GPU) memory, which the front end must not
  /// touch (messages to oneself are then refused).
  virtual bool deviceMemory() const { return false; }
  /// The same group of ranks over host memory, for the front end's own
  /// small exchanges (this backend unless deviceMemory()).
  virtual CommBackend *hostBackend() { return this; }

  virtual dist_rt_status_t allReduce(const char *op, const void *send,
                                     void *recv, int64_t count, uint32_t dtype,
                                     dist_rt_reduce_op_t reduce,
                                     const Deadline &deadline) = 0;
  virtual dist_rt_status_t allGather(const char *op, const void *send,
                                     void *recv, int64_t countPerRank,
                                     uint32_t dtype,
                                     const Deadline &deadline) = 0;
  virtual dist_rt_status_t reduceScatter(const char *op, const void *send,
                                         void *recv, int64_t countPerRank,
                                         uint32_t dtype,
                                         dist_rt_reduce_op_t reduce,
                                         const Deadline &deadline) = 0;
  virtual dist_rt_status_t allToAll(const char *op, const void *send,
                                    void *recv, int64_t countPerRank,
                                    uint32_t dtype,
                                    const Deadline &deadline) = 0;
  virtual dist_rt_status_t broadcast(const char *op, void *buf, int64_t count,
                                     uint32_t dtype, int32_t root,
                                     const Deadline &deadline) = 0;
  /// Point-to-point with another rank (never the caller itself: the front
  /// end buffers those messages).
  virtual dist_rt_status_t send(const char *op, const void *buf, int64_t count,
                                uint32_t dtype, int32_t peer, int32_t tag,
                                const Deadline &deadline) = 0;
  virtual dist_rt_status_t recv(const char *op, void *buf, int64_t count,
                                uint32_t dtype, int32_t peer, int32_t tag,
                                const Deadline &deadline) = 0;
  /// Starts sending to another rank and returns without waiting for the
  /// receiver: `*out_request` is then polled with testSend until the buffer
  /// may be reused (null: the send is complete already). Pipeline stages
  /// send this way, since two stages that each send before they receive
  /// would otherwise wait for each other. The default sends and waits.
  virtual dist_rt_status_t startSend(const char *op, const void *buf,
                                     int64_t count, uint32_t dtype,
                                     int32_t peer, int32_t tag,
                                     const Deadline &deadline,
                                     void **out_request) {
    *out_request = nullptr;
    return send(op, buf, count, dtype, peer, tag, deadline);
  }
  /// Sets `*out_done` once the send of `request` has completed (and frees
  /// the request then).
  virtual dist_rt_status_t testSend(const char *op, void *request,
                                    bool *out_done) {
    *out_done = true;
    return nullptr;
  }
  virtual dist_rt_status_t barrier(const char *op,
                                   const Deadline &deadline) = 0;

  /// Collective: creates the backend of the ranks that passed the same
  /// `color`, ordered by `key` (ties by rank). Blocking, without deadline.
  virtual dist_rt_status_t split(const char *op, int32_t color, int32_t key,
                                 std::unique_ptr<CommBackend> *out) = 0;
};

/// The SELF backend: a group of one rank whose collectives are copies.
std::unique_ptr<CommBackend> createSelfBackend();

//===----------------------------------------------------------------------===//
// MPI (comm_mpi.cpp)
//===----------------------------------------------------------------------===//

/// Initializes MPI if nobody did (MPI_Init_thread, MPI_THREAD_FUNNELED) and
/// returns a backend over a duplicate of MPI_COMM_WORLD with
/// MPI_ERRORS_RETURN. Fails if MPI was finalized.
dist_rt_status_t createMpiWorldBackend(int *argc, char ***argv,
                                       std::unique_ptr<CommBackend> *out);

//===----------------------------------------------------------------------===//
// NCCL (comm_nccl.cpp)
//===----------------------------------------------------------------------===//

/// Loads NCCL and the CUDA runtime, picks this rank's GPU, initializes MPI
/// as createMpiWorldBackend does and creates an NCCL communicator over the
/// world. Fails with a message when the libraries, a GPU or the build's
/// NCCL support are missing.
dist_rt_status_t createNcclWorldBackend(int *argc, char ***argv,
                                        std::unique_ptr<CommBackend> *out);

/// Finalizes MPI if createMpiWorldBackend initialized it and it is not
/// finalized yet. Refuses (DIST_RT_ERROR_COMM) after a communication
/// failure, since MPI_Finalize could wait forever on operations in flight.
dist_rt_status_t finalizeMpi();

/// Whether MPI runs with MPI_THREAD_SERIALIZED or better, so that
/// communication may move to another thread as long as calls never overlap.
bool mpiAllowsSerializedThreads();

/// Splits the world (collective over all its ranks) by `color` and makes
/// this rank's part the world that dist_rt_world_init returns from then on:
/// the ranks of one role of a job that runs several programs (parameter
/// servers beside workers), whose mesh is then the workers' alone.
/// Handles given out for the old world stay valid.
dist_rt_status_t narrowWorld(int32_t color);

/// Calls MPI_Abort(MPI_COMM_WORLD, code) if MPI is initialized and not
/// finalized; returns otherwise.
void abortMpi(int code);

} // namespace comm
} // namespace dist_rt

#endif // DIST_RT_LIB_COMM_BACKEND_H
