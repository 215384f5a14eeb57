/*===- comm.h - dist-opt runtime collective communication ----------*- C -*-===*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Communicators and collectives for distributed executables: a process-wide
 * world (every rank of the job), its split into one communicator per axis
 * of a device mesh, and all-reduce, all-gather, reduce-scatter, all-to-all,
 * broadcast, point-to-point send/recv and barrier on dense buffers.
 *
 * Backends plug in behind a vtable: SELF is a 1-rank world that needs no
 * MPI at all (collectives are copies); MPI runs every collective as a
 * non-blocking MPI operation and polls it against a deadline, so a dead or
 * hung peer turns into a DIST_RT_ERROR_COMM status instead of a hang.
 *
 * Error handling: every message names the calling rank (its rank in the
 * world) and the collective, e.g. "rank 1: all_reduce timed out after 300 s
 * waiting for the other 3 ranks". After a communication failure (timeout,
 * MPI error) the communicator is unusable: operations that were started
 * may still be reading or writing the caller's buffers, so they must stay
 * allocated, and every later call on that communicator fails. The intended
 * response is to report the error and end the whole job with
 * dist_rt_world_abort.
 *
 * Ownership: communicators are reference counted; _init, _split_mesh and
 * _retain each hand the caller one reference, which it gives back with
 * dist_rt_comm_release. The world is also held by the runtime itself until
 * dist_rt_world_finalize. Buffers are borrowed for the duration of a call.
 *
 * Thread-safety: a communicator must be used by one thread at a time, and
 * with the MPI backend no two threads may communicate at the same time. MPI
 * is initialized with MPI_THREAD_SERIALIZED where the library offers it
 * (else MPI_THREAD_FUNNELED, and then all communication must come from the
 * thread that called dist_rt_world_init); the mesh collectives of generated
 * code (dist_rt/kernels.h) use a communication thread only with
 * SERIALIZED.
 * Retain is atomic and may be called from any thread; the release that drops
 * the last reference frees the MPI communicator and must come from the
 * communicating thread too. The world is process-wide: dist_rt_world_init and
 * dist_rt_world_finalize serialize with each other.
 *
 * This header compiles as C99 and as C++.
 *===----------------------------------------------------------------------===*/

#ifndef DIST_RT_COMM_H
#define DIST_RT_COMM_H

#include "dist_rt/dist_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Types
 *===----------------------------------------------------------------------===*/

/// A group of ranks that run collectives together. Opaque and reference
/// counted.
typedef struct dist_rt_comm *dist_rt_comm_t;

/// Element-wise reduction of all_reduce and reduce_scatter.
typedef enum {
  DIST_RT_REDUCE_SUM = 0,
  DIST_RT_REDUCE_MAX = 1,
  DIST_RT_REDUCE_MIN = 2,
  DIST_RT_REDUCE_PROD = 3,
  /// The sum divided by the number of ranks: x / n (floating types round
  /// once, integer types truncate toward zero); the NCCL backend uses
  /// ncclAvg, which multiplies floating-point inputs by 1/n before summing.
  DIST_RT_REDUCE_AVG = 4
} dist_rt_reduce_op_t;

/// Backends of dist_rt_world_options_t::backend.
enum {
  /// MPI when the process was started by a launcher (one of the environment
  /// variables OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_SIZE or PMI_RANK is set,
  /// or SLURM_NTASKS is greater than 1), SELF otherwise.
  DIST_RT_COMM_AUTO = 0,
  /// A world of one rank; no MPI call is made.
  DIST_RT_COMM_SELF = 1,
  /// MPI; a process started without a launcher becomes a 1-rank MPI world
  /// (singleton initialization).
  DIST_RT_COMM_MPI = 2,
  /// NCCL over CUDA GPUs, bootstrapped by MPI as DIST_RT_COMM_MPI: each rank
  /// uses GPU (node-local rank modulo the node's GPUs), and every buffer
  /// given to a collective, send or recv is CUDA device memory. NCCL has no
  /// tags (messages between two ranks arrive in order) and a rank cannot
  /// send to itself. libnccl.so.2 and the CUDA runtime are loaded when the
  /// world is created; without them, or without a GPU, dist_rt_world_init
  /// fails with a message.
  DIST_RT_COMM_NCCL = 3
};

/// Options of dist_rt_world_init. Always initialize with
/// dist_rt_world_options_initialize so that fields added later get their
/// defaults.
typedef struct dist_rt_world_options_t {
  /// Deadline of each collective, send, recv and barrier in seconds (also
  /// of the rendezvous at the start of dist_rt_comm_split_mesh); 0 means
  /// no deadline. Default 300. Must be finite and not negative. Applies to
  /// the world and to every communicator split from it.
  double timeout_s;
  /// One of DIST_RT_COMM_AUTO (default), DIST_RT_COMM_SELF,
  /// DIST_RT_COMM_MPI or DIST_RT_COMM_NCCL.
  int32_t backend;
} dist_rt_world_options_t;

/*===----------------------------------------------------------------------===*
 * World
 *===----------------------------------------------------------------------===*/

/// Sets every field of `*options` to its default. NULL is a no-op.
DIST_RT_API void
dist_rt_world_options_initialize(dist_rt_world_options_t *options);

/// Creates the process-wide world communicator, or returns it again: a
/// second call (before dist_rt_world_finalize) ignores `argc`, `argv` and
/// `options` and stores another reference to the same world. `options` may
/// be NULL for the defaults. `argc` and `argv` are passed to MPI_Init_thread
/// and may be NULL. MPI is initialized (MPI_THREAD_SERIALIZED, at least
/// MPI_THREAD_FUNNELED) only if the
/// program has not done it itself; the world then covers MPI_COMM_WORLD.
/// On success stores a reference in `*out_world`; on failure stores NULL
/// there.
DIST_RT_API dist_rt_status_t dist_rt_world_init(
    int *argc, char ***argv, const dist_rt_world_options_t *options,
    dist_rt_comm_t *out_world);

/// Drops the runtime's own reference to the world and finalizes MPI if
/// dist_rt_world_init initialized it. Idempotent, and a no-op when the
/// world was never created. With MPI this is collective: every rank must
/// call it, after all its communication. MPI cannot be initialized again
/// afterwards, so a later dist_rt_world_init with the MPI backend fails.
/// Communicators still referenced must not be used afterwards (releasing
/// them is fine).
DIST_RT_API dist_rt_status_t dist_rt_world_finalize(void);

/// Ends the whole job with exit code `code`: with MPI it calls MPI_Abort on
/// MPI_COMM_WORLD, which also kills every other rank (use it after a
/// communication failure, when the other ranks may be blocked); otherwise
/// it ends the process with _Exit(code). Flushes stdout and stderr first;
/// runs no atexit handlers or static destructors. Does not return. Call it
/// from the communicating thread (MPI_THREAD_FUNNELED).
DIST_RT_API void dist_rt_world_abort(int code);

/*===----------------------------------------------------------------------===*
 * Communicators
 *===----------------------------------------------------------------------===*/

/// Returns the rank of the calling process in `comm` (0-based), or -1 when
/// `comm` is NULL.
DIST_RT_API int32_t dist_rt_comm_rank(dist_rt_comm_t comm);

/// Returns the number of ranks of `comm`, or 0 when `comm` is NULL.
DIST_RT_API int32_t dist_rt_comm_size(dist_rt_comm_t comm);

/// Adds a reference to `comm`. NULL is a no-op.
DIST_RT_API void dist_rt_comm_retain(dist_rt_comm_t comm);

/// Drops a reference to `comm`; the last one frees it. NULL is a no-op.
DIST_RT_API void dist_rt_comm_release(dist_rt_comm_t comm);

/// Splits `world` (any communicator) into one communicator per axis of a
/// device mesh. Rank r has the row-major coordinates of r in `mesh_shape`
/// (`num_axes` extents, each at least 1, whose product must equal the size
/// of `world`). For each axis a, `out_axis_comms[a]` holds the ranks whose
/// coordinates differ from the caller's only on axis a, ordered by their
/// coordinate on that axis (so the caller's rank there is its coordinate).
/// Collective over `world`: every rank must call it with the same mesh. It
/// first waits for all ranks under the communicator's deadline, then creates
/// the communicators axis 0 first. `out_axis_comms` must have room for
/// `num_axes` handles; each holds a new reference. On failure every entry is
/// set to NULL.
DIST_RT_API dist_rt_status_t
dist_rt_comm_split_mesh(dist_rt_comm_t world, const int64_t *mesh_shape,
                        int32_t num_axes, dist_rt_comm_t *out_axis_comms);

/*===----------------------------------------------------------------------===*
 * Collectives
 *
 * Common rules: `dtype` is DIST_RT_DTYPE_FLOAT, DIST_RT_DTYPE_DOUBLE,
 * DIST_RT_DTYPE_INT32 or DIST_RT_DTYPE_INT64; counts are element counts and
 * must not be negative; a buffer may be NULL only when it holds no elements.
 * Every rank of `comm` must make the same calls in the same order with the
 * same count, dtype, op and root. The call returns when this rank's part is
 * done (its buffers may be reused), or with a DIST_RT_ERROR_COMM status
 * once the deadline has passed. Send and receive buffers must not overlap
 * (except for all_reduce in place). Counts above INT_MAX elements are split
 * into several operations by all_reduce, broadcast, send and recv, and
 * rejected by the other collectives.
 *===----------------------------------------------------------------------===*/

/// Reduces `count` elements element-wise over all ranks with `op`; every
/// rank receives the result in `recv`. `send == recv` reduces in place.
DIST_RT_API dist_rt_status_t dist_rt_all_reduce(dist_rt_comm_t comm,
                                                const void *send, void *recv,
                                                int64_t count, uint32_t dtype,
                                                dist_rt_reduce_op_t op);

/// Concatenates the `count_per_rank` elements of `send` of every rank in
/// rank order into `recv` (size * count_per_rank elements) on every rank.
DIST_RT_API dist_rt_status_t dist_rt_all_gather(dist_rt_comm_t comm,
                                                const void *send, void *recv,
                                                int64_t count_per_rank,
                                                uint32_t dtype);

/// Reduces `send` (size * count_per_rank elements) element-wise over all
/// ranks with `op` and leaves block r (elements [r * count_per_rank,
/// (r + 1) * count_per_rank)) of the result in `recv` of rank r.
DIST_RT_API dist_rt_status_t dist_rt_reduce_scatter(
    dist_rt_comm_t comm, const void *send, void *recv, int64_t count_per_rank,
    uint32_t dtype, dist_rt_reduce_op_t op);

/// Sends block p of `send` (size * count_per_rank elements) to rank p;
/// block p of `recv` (same size) receives the block that rank p sent here.
DIST_RT_API dist_rt_status_t dist_rt_all_to_all(dist_rt_comm_t comm,
                                                const void *send, void *recv,
                                                int64_t count_per_rank,
                                                uint32_t dtype);

/// Copies `count` elements of `buf` on rank `root` into `buf` on every
/// other rank.
DIST_RT_API dist_rt_status_t dist_rt_broadcast(dist_rt_comm_t comm, void *buf,
                                               int64_t count, uint32_t dtype,
                                               int32_t root);

/// Sends `count` elements to rank `peer` with `tag` (0 to 32767). Messages
/// between two ranks with the same tag arrive in order. May return before
/// the peer has received (small messages are buffered); a send to oneself
/// is buffered too.
DIST_RT_API dist_rt_status_t dist_rt_send(dist_rt_comm_t comm, const void *buf,
                                          int64_t count, uint32_t dtype,
                                          int32_t peer, int32_t tag);

/// Receives a message of exactly `count` elements of `dtype` from rank
/// `peer` with `tag` into `buf`. A message of another length is an error.
DIST_RT_API dist_rt_status_t dist_rt_recv(dist_rt_comm_t comm, void *buf,
                                          int64_t count, uint32_t dtype,
                                          int32_t peer, int32_t tag);

/// Returns once every rank of `comm` has entered the barrier.
DIST_RT_API dist_rt_status_t dist_rt_barrier(dist_rt_comm_t comm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DIST_RT_COMM_H */
