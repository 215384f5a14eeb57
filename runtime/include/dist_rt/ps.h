/*===- ps.h - dist-opt runtime parameter server ---------------------*- C
 * -*-===* SPDX-License-Identifier: Apache-2.0
 *
 * A parameter server for sparse embedding tables: servers hold the rows of
 * tables (each row with its optimizer state), sharded over the servers by a
 * hash of the row id; workers pull the rows their batch looks up and push
 * the gradients of those rows, which the server applies with a per-row
 * optimizer (SGD, Adagrad or lazy Adam).
 *
 * Transport: ZeroMQ (Debian's libzmq5, loaded with dlopen on first use, so
 * programs that use no parameter server never need it). Servers must
 * outlive a worker that dies and be restartable themselves, which rules out
 * MPI under Open MPI 4.1 (one dead process ends the job). ZeroMQ's
 * ROUTER/DEALER sockets give message framing, queueing and reconnection to
 * a restarted server; each request is a multipart message whose frames are
 * sent without serialisation (ids and rows as raw arrays). gRPC was
 * measured slower: the round trip of one pull of 4,096 ids (32 KiB asked,
 * 185 KB answered) on loopback took 1,400-1,650 us over gRPC 1.51 and
 * 180 us over ZeroMQ 4.3, both from Python on a 2-core AMD EPYC
 * (bench/ps_transport.py).
 *
 * Consistency modes (dist_rt_ps_mode_t), per table:
 *  - SYNC: a server applies the pushes of step s once every worker has
 *    pushed step s, as one update with the sum of their gradients, and a pull
 *    for step s waits until step s-1 has been applied. Results equal one
 *    process that computes the same summed gradient.
 *  - ASYNC: every push is applied when it arrives; pulls never wait.
 *  - SSP (bounded staleness K): every push is applied when it arrives; a
 *    pull for step s waits until every worker has pushed step s-K-1, so no
 *    worker runs more than K steps ahead of the slowest.
 * In SYNC and SSP every worker pushes every step of every table, an empty
 * push (no ids) included: it is the worker's clock.
 *
 * Durability: a server with a shard directory appends every push to a
 * write-ahead log before acknowledging it and writes snapshots of its rows
 * from time to time; a server killed (even with SIGKILL) and started again
 * on the same directory recovers every acknowledged push. The log is
 * written with write(2) but not fsync'ed: it survives the death of the
 * process, not of the machine.
 *
 * Lazy Adam: a row's first and second moments change only in the steps that
 * push a gradient for it; the bias correction uses the table's count of
 * applied updates (as torch.optim.SparseAdam does).
 *
 * Errors: every call returns a status; messages name the server's address
 * and the table, e.g. "parameter server tcp://127.0.0.1:5555 (shard 1 of
 * 2) did not answer within 30 s". Requests are retried on the same address
 * until the timeout, so a server that restarts within it is waited for.
 *
 * Ownership: _create hands the caller the object, _release frees it.
 * Thread-safety: a client must be used by one thread at a time; a server
 * runs its loop on the thread that calls dist_rt_ps_server_run, and
 * dist_rt_ps_server_stop may be called from any thread.
 *
 * This header compiles as C99 and as C++.
 *===----------------------------------------------------------------------===*/

#ifndef DIST_RT_PS_H
#define DIST_RT_PS_H

#include "dist_rt/dist_rt.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The optimizer a server applies to the rows of a table.
typedef enum {
  DIST_RT_PS_SGD = 0,
  /// state += g*g; w -= lr * g / (sqrt(state) + eps).
  DIST_RT_PS_ADAGRAD = 1,
  /// Lazy Adam (see the header's comment).
  DIST_RT_PS_ADAM = 2
} dist_rt_ps_optimizer_t;

/// How rows that were never written get their first values.
typedef enum {
  DIST_RT_PS_INIT_ZEROS = 0,
  /// Uniform in [init_a, init_b), a function of (seed, id, column) only, so
  /// the same for any number of servers.
  DIST_RT_PS_INIT_UNIFORM = 1,
  /// Normal with mean init_a and standard deviation init_b, as above.
  DIST_RT_PS_INIT_NORMAL = 2,
  /// Row id of init_rows (rows x dim floats, borrowed for the server's
  /// lifetime).
  DIST_RT_PS_INIT_ROWS = 3
} dist_rt_ps_init_t;

/// Consistency modes (see the header's comment).
typedef enum {
  DIST_RT_PS_SYNC = 0,
  DIST_RT_PS_ASYNC = 1,
  DIST_RT_PS_SSP = 2
} dist_rt_ps_mode_t;

/// One table. Servers and workers must declare the same tables in the same
/// order (checked when a worker connects).
typedef struct dist_rt_ps_table_t {
  const char *name;
  /// Ids are in [0, rows).
  int64_t rows;
  /// Floats per row.
  int64_t dim;
  uint32_t optimizer; /* dist_rt_ps_optimizer_t */
  float lr;
  float beta1, beta2; /* Adam */
  float eps;          /* Adagrad and Adam */
  uint32_t init;      /* dist_rt_ps_init_t */
  float init_a, init_b;
  uint64_t seed;
  const float *init_rows;
  /// With init_rows: the optimizer state of those rows (rows x
  /// dist_rt_ps_state_floats floats, borrowed for the server's lifetime),
  /// as dist_rt_ps_read_state gave it; NULL: zeros.
  const float *init_state;
  /// The table's count of applied updates to start from (lazy Adam's bias
  /// correction), as dist_rt_ps_read_state gave it.
  int64_t init_updates;
} dist_rt_ps_table_t;

/// Floats of optimizer state per row of `table`: 0 for SGD, dim for
/// Adagrad (the sum of squares), 2 x dim for Adam (the two moments).
DIST_RT_API size_t dist_rt_ps_state_floats(const dist_rt_ps_table_t *table);

/// Fills `table` with defaults: SGD with lr 0.01, Adam's betas 0.9 and
/// 0.999, eps 1e-8 (1e-10 for Adagrad is set by the caller), zeros.
DIST_RT_API void dist_rt_ps_table_initialize(dist_rt_ps_table_t *table);

typedef struct dist_rt_ps_server *dist_rt_ps_server_t;

typedef struct dist_rt_ps_server_options_t {
  /// ZeroMQ endpoint to bind, e.g. "tcp://0.0.0.0:5555"; port 0 (the
  /// default "tcp://127.0.0.1:0") picks a free one (see _endpoint).
  const char *bind;
  /// Directory of the write-ahead log and snapshots (created if missing);
  /// NULL keeps everything in memory.
  const char *shard_dir;
  /// This server's shard and the number of shards.
  uint32_t shard, num_shards;
  /// Workers that push to this server.
  uint32_t num_workers;
  uint32_t mode; /* dist_rt_ps_mode_t */
  /// K of SSP.
  uint32_t staleness;
  /// Fingerprint of the model; workers and shard directories with another
  /// one are refused.
  uint64_t model_id;
  /// Applied pushes between two snapshots (0: 1000).
  uint32_t snapshot_every;
  /// Non-zero: keep serving after every worker has said goodbye (a
  /// long-lived server); zero: dist_rt_ps_server_run returns then.
  int32_t stay;
} dist_rt_ps_server_options_t;

DIST_RT_API void
dist_rt_ps_server_options_initialize(dist_rt_ps_server_options_t *options);

/// Binds the server's socket and recovers its state from the shard
/// directory (snapshot, then log). Serves nothing until _run.
DIST_RT_API dist_rt_status_t
dist_rt_ps_server_create(const dist_rt_ps_server_options_t *options,
                         const dist_rt_ps_table_t *tables, size_t num_tables,
                         dist_rt_ps_server_t *out_server);

/// The bound endpoint with its actual port ("tcp://127.0.0.1:40123").
/// Valid until the server is released.
DIST_RT_API const char *dist_rt_ps_server_endpoint(dist_rt_ps_server_t server);

/// Serves requests until every worker has said goodbye (unless `stay`) or
/// _stop is called.
DIST_RT_API dist_rt_status_t dist_rt_ps_server_run(dist_rt_ps_server_t server);

/// Makes _run return soon; callable from any thread and from a signal
/// handler.
DIST_RT_API void dist_rt_ps_server_stop(dist_rt_ps_server_t server);

/// Counters of a server, for tests and logs.
typedef struct dist_rt_ps_server_stats_t {
  uint64_t pulls, pushes, pulled_keys, pushed_keys, applied_updates;
  /// Rows held, over all tables.
  uint64_t rows;
  /// Pushes that the state recovered from the shard directory holds (from
  /// its snapshot and its log) when the server started.
  uint64_t recovered_pushes;
  /// The largest gap, in steps, between a worker's pull that was served and
  /// the slowest worker's last push of that table (SSP: at most K+1).
  int64_t max_step_gap;
} dist_rt_ps_server_stats_t;

DIST_RT_API void dist_rt_ps_server_stats(dist_rt_ps_server_t server,
                                         dist_rt_ps_server_stats_t *out_stats);

/// Writes a snapshot now (if the server has a shard directory) and frees
/// the server. Not while _run runs.
DIST_RT_API void dist_rt_ps_server_release(dist_rt_ps_server_t server);

typedef struct dist_rt_ps_client *dist_rt_ps_client_t;

typedef struct dist_rt_ps_client_options_t {
  /// Endpoints of the servers, in shard order.
  const char *const *servers;
  size_t num_servers;
  /// This worker's index and the number of workers.
  uint32_t worker, num_workers;
  uint64_t model_id;
  /// Seconds a request may wait for its server (0: 60). A pull that waits
  /// for slower workers (SYNC, SSP) waits at most this long too.
  double timeout_seconds;
  /// The first step this worker pulls and pushes (0 unless it resumes from
  /// a checkpoint). A server that has taken no push of a table yet starts
  /// that table's clock there, as if steps 0 .. first_step - 1 had been
  /// applied (its rows are then the checkpoint's, e.g. read with
  /// DIST_RT_PS_INIT_ROWS); a server with state keeps its clock, and
  /// pushes of steps it has applied are ignored.
  int64_t first_step;
} dist_rt_ps_client_options_t;

DIST_RT_API void
dist_rt_ps_client_options_initialize(dist_rt_ps_client_options_t *options);

/// Connects to every server and checks that it serves these tables for the
/// same model.
DIST_RT_API dist_rt_status_t
dist_rt_ps_client_create(const dist_rt_ps_client_options_t *options,
                         const dist_rt_ps_table_t *tables, size_t num_tables,
                         dist_rt_ps_client_t *out_client);

/// Gathers the rows of `ids` (count ids, repeats allowed) of table `table`
/// into `out_rows` (count x dim floats), as of step `step` (see the modes).
DIST_RT_API dist_rt_status_t dist_rt_ps_pull(dist_rt_ps_client_t client,
                                             uint32_t table, const int64_t *ids,
                                             size_t count, int64_t step,
                                             float *out_rows);

/// Pushes the gradients `grads` (count x dim floats) of the rows `ids`
/// (repeats are summed) of table `table` for step `step`, and returns once
/// every server concerned has logged them.
DIST_RT_API dist_rt_status_t dist_rt_ps_push(dist_rt_ps_client_t client,
                                             uint32_t table, const int64_t *ids,
                                             size_t count, const float *grads,
                                             int64_t step);

/// dist_rt_ps_pull of `num_tables` distinct tables at once (`ids[k]`, of
/// `counts[k]` ids, of table `tables[k]` into `out_rows[k]`): every
/// request of every table is in flight together, one round trip where
/// the tables one after another take one each.
DIST_RT_API dist_rt_status_t dist_rt_ps_pull_tables(
    dist_rt_ps_client_t client, size_t num_tables, const uint32_t *tables,
    const int64_t *const *ids, const size_t *counts, int64_t step,
    float *const *out_rows);

/// dist_rt_ps_push of `num_tables` distinct tables at once, as
/// dist_rt_ps_pull_tables.
DIST_RT_API dist_rt_status_t dist_rt_ps_push_tables(
    dist_rt_ps_client_t client, size_t num_tables, const uint32_t *tables,
    const int64_t *const *ids, const size_t *counts, const float *const *grads,
    int64_t step);

/// Reads `count` rows of table `table` from the servers without any
/// waiting or accounting (for saving parameters and for tests).
DIST_RT_API dist_rt_status_t dist_rt_ps_read(dist_rt_ps_client_t client,
                                             uint32_t table, const int64_t *ids,
                                             size_t count, float *out_rows);

/// Reads the optimizer state of `count` rows of table `table` (count x
/// dist_rt_ps_state_floats floats; zeros, or init_state, for rows never
/// written) and, when `out_updates` is not NULL, the table's count of
/// applied updates (the largest over the servers): what a checkpoint
/// keeps so that Adagrad and Adam resume exactly (init_state,
/// init_updates).
DIST_RT_API dist_rt_status_t dist_rt_ps_read_state(
    dist_rt_ps_client_t client, uint32_t table, const int64_t *ids,
    size_t count, float *out_state, int64_t *out_updates);

/// 1 when every server lets this worker pull rows for a step before its own
/// push of the previous step has been applied (ASYNC, or SSP with a bound
/// of 1 or more, as the servers said when the client connected); 0 under
/// SYNC or SSP:0, where such a pull waits for that push.
DIST_RT_API int dist_rt_ps_client_may_run_ahead(dist_rt_ps_client_t client);

/// Tells every server that this worker has finished.
DIST_RT_API dist_rt_status_t
dist_rt_ps_client_finish(dist_rt_ps_client_t client);

DIST_RT_API void dist_rt_ps_client_release(dist_rt_ps_client_t client);

/// The shard (server index) that holds row `id` among `num_shards`.
DIST_RT_API uint32_t dist_rt_ps_shard_of(int64_t id, uint32_t num_shards);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DIST_RT_PS_H */
