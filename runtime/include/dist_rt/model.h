/*===- model.h - dist-opt compiled-model ABI and API ---------------*- C -*-===*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The contract between a model compiled by dist-compile and the runtime.
 *
 * dist-compile emits, per model, an object file with a packed entry function
 * and a small generated C file that defines a dist_rt_model_desc_t naming the
 * parameters, inputs and outputs. Both are linked with the static runtime
 * (libdist_rt.a) into an executable whose main calls dist_rt_main, or into a
 * shared library lib<name>.so whose <name>_create/run/destroy forward to the
 * dist_rt_model_* functions below.
 *
 * Calling convention of dist_rt_model_desc_t::entry(args): `args` holds
 * num_params + num_inputs + 1 pointers. args[i], for i < num_params +
 * num_inputs, points to an MLIR ranked memref descriptor made of 64-bit
 * words
 *
 *   { void *allocated; void *aligned; int64_t offset;
 *     int64_t sizes[rank]; int64_t strides[rank]; }
 *
 * (3 + 2 * rank words), parameters first in descriptor order, then inputs.
 * The runtime passes contiguous row-major strides and offset 0; inputs and
 * parameters are read-only for the generated code. The last pointer points
 * to a buffer that receives all output descriptors back to back (the sum
 * over outputs of 3 + 2 * rank words, no padding). Elements of bool tensors
 * are 1 byte.
 *
 * A returned output may own a fresh block from the runtime allocator
 * (dist_rt/kernels.h), or alias an input, a parameter, a constant global
 * (its `allocated` field may then be a bogus value such as 0xdeadbeef) or
 * another output, and may be a strided view. dist_rt_model_run copies every
 * output it cannot take over into a runtime-owned contiguous buffer and
 * frees each distinct allocator block exactly once.
 *
 * Ownership and thread-safety: a dist_rt_model_t owns its mapped parameters
 * (or, for a model with a training step, its private copies of them) and
 * the outputs of its last run. Runs and training steps of one model must
 * not overlap; distinct models may run concurrently from different threads.
 * The thread count is process-wide (dist_rt_set_num_threads).
 *
 * This header compiles as C99 and as C++.
 *===----------------------------------------------------------------------===*/

#ifndef DIST_RT_MODEL_H
#define DIST_RT_MODEL_H

#include "dist_rt/dist_rt.h"
#include "dist_rt/ps.h"

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Model descriptor (written by dist-compile)
 *===----------------------------------------------------------------------===*/

/// Version of the layout of dist_rt_model_desc_t and of the entry calling
/// convention. A descriptor with another version is rejected.
#define DIST_RT_MODEL_ABI_VERSION 12

/// Dimension value meaning "known only at run time".
#define DIST_RT_DYNAMIC_DIM (-1)

/// The layouts of an elastic artifact (dist-opt --elastic=MIN:MAX): one
/// data-parallel executable per world size from min_ranks to max_ranks, all
/// beside each other and sharing the parameter file. An executable started
/// by a launcher with another world size in that range replaces itself
/// (execv) with the one compiled for it before anything else runs.
typedef struct dist_rt_elastic_desc_t {
  uint32_t min_ranks, max_ranks;
  /// max_ranks - min_ranks + 1 file names, relative to the directory of the
  /// binary that holds this descriptor: the executable for min_ranks + i.
  const char *const *executables;
} dist_rt_elastic_desc_t;

/// Static description of one parameter, input or output.
typedef struct dist_rt_tensor_desc_t {
  /// NUL-terminated name (the ONNX value name).
  const char *name;
  /// Element type, one of the DIST_RT_DTYPE_* codes.
  uint32_t dtype;
  /// Number of dimensions; 0 for a scalar.
  uint32_t rank;
  /// `rank` extents; DIST_RT_DYNAMIC_DIM (-1) for a dimension that is known
  /// only at run time. May be NULL when rank is 0.
  const int64_t *dims;
  /// For inputs: `rank` names of the dynamic dimensions as the ONNX model
  /// gives them (dim_param; NULL where it gives none), or NULL for no name
  /// at all. Dimensions named alike, in one input or across inputs, must
  /// have the same size in a call (the generated code relies on it).
  const char *const *dim_names;
} dist_rt_tensor_desc_t;

/// How tensor parallelism split a parameter across the ranks of one mesh
/// axis. The parameter's descriptor gives the local extents; the full
/// tensor (what the parameter file, --save-params and checkpoints hold) has
/// dimension `dim` times the axis size, viewed as [blocks, axis size,
/// local / blocks]: the rank at coordinate r along the axis holds chunk r of
/// each block (blocks is 3 for a fused query/key/value projection).
typedef struct dist_rt_param_shard_t {
  /// Mesh axis index, or -1 for a replicated parameter.
  int32_t axis;
  int32_t dim;
  int32_t blocks;
} dist_rt_param_shard_t;

/// The packed entry function; see the calling convention above.
typedef void (*dist_rt_entry_fn_t)(void **args);

/// Role of a parameter of a training artifact (dist_rt_train_desc_t).
enum {
  /// Read from the parameter file and never changed by a train step (or
  /// changed without a gradient, like BatchNormalization's running
  /// statistics). Saved by --save-params and checkpoints.
  DIST_RT_PARAM_FROZEN = 0,
  /// Read from the parameter file and updated by the optimizer. Saved by
  /// --save-params and checkpoints.
  DIST_RT_PARAM_TRAINED = 1,
  /// Optimizer state (momentum buffer, Adam moments): not in the parameter
  /// file, starts as zeros, saved only in checkpoints.
  DIST_RT_PARAM_STATE = 2,
  /// A table on the parameter server (dist-opt --ps-tables): the servers
  /// hold and update it (they read it from the parameter file); a worker
  /// never loads it, and the step's entry gets a descriptor of its shape
  /// with no data, which it does not read.
  DIST_RT_PARAM_PS = 3,
};

/// Learning-rate schedules; `step` below is the 0-based step index and T
/// the total number of steps of the run.
enum {
  /// lr
  DIST_RT_LR_CONSTANT = 0,
  /// PyTorch's CosineAnnealingLR(T_max=T, eta_min=0):
  /// lr * (1 + cos(pi * step / T)) / 2
  DIST_RT_LR_COSINE = 1,
  /// Linear warm-up then linear decay to 0 (the "linear schedule with
  /// warmup" of transformers): lr * step / W while step < W, else
  /// lr * max(0, (T - step) / (T - W)).
  DIST_RT_LR_WARMUP_LINEAR = 2,
};

/// What a function of a pipeline stage runs for one micro-batch (the update
/// runs once per step, and then, where a stage has one, the sync: it takes
/// the new values of the parameters it shares with an earlier stage, tied
/// weights, from that stage's update). The first four are
/// dist_rt/pipeline_schedule.h's compute actions. With --clip-grad-norm, the
/// norm runs once per step before the update: it returns the sum of the
/// squares of the stage's averaged gradients ("grad_norm.partial", f32
/// scalar), and the update takes the sum over the stages
/// ("grad_norm.total").
enum {
  DIST_RT_PIPELINE_FORWARD = 0,
  DIST_RT_PIPELINE_BACKWARD = 1,
  DIST_RT_PIPELINE_BACKWARD_INPUT = 2,
  DIST_RT_PIPELINE_BACKWARD_WEIGHT = 3,
  DIST_RT_PIPELINE_UPDATE = 4,
  DIST_RT_PIPELINE_SYNC = 5,
  DIST_RT_PIPELINE_NORM = 6,
};

/// One function of a pipeline stage (dist-opt --mesh pp=N): called like a
/// training step (all parameter descriptors, then the inputs, then the
/// output buffer), with inputs and outputs named by role: a data input of
/// the step (sliced to one micro-batch), "lr" and "step" (rank-0 float32),
/// "loss" (the micro-batch's loss), or "stash.<from>.<to>.<k>": a value the
/// stage's action <from> returns for its later action <to> of the same
/// micro-batch (the runtime keeps it in between). Transfers between stages
/// happen inside, through dist_rt_pp_send / dist_rt_pp_recv.
typedef struct dist_rt_pipeline_fn_t {
  const char *name;
  uint32_t stage;
  /// DIST_RT_PIPELINE_*.
  uint32_t action;
  uint32_t num_inputs;
  const dist_rt_tensor_desc_t *inputs;
  uint32_t num_outputs;
  const dist_rt_tensor_desc_t *outputs;
  dist_rt_entry_fn_t entry;
} dist_rt_pipeline_fn_t;

/// A training step cut into pipeline stages: rank r of the mesh axis "pp"
/// runs stage r's functions in the order of the schedule
/// (dist_rt/pipeline_schedule.h's ScheduleKind) over `micro_batches` equal
/// slices of its batch, then its update.
typedef struct dist_rt_pipeline_desc_t {
  uint32_t stages;
  uint32_t micro_batches;
  uint32_t schedule;
  uint32_t num_fns;
  const dist_rt_pipeline_fn_t *fns;
  /// Per parameter of the model descriptor: the stage that updates it (the
  /// ranks of other stages hold a stale copy until checkpoints and saves
  /// fetch it), or -1.
  const int32_t *param_stages;
} dist_rt_pipeline_desc_t;

/// The training step of a model compiled with `dist-opt --train`.
///
/// Calling convention of `entry(args)`: args holds num_params (of the model
/// descriptor) + num_inputs + 3 pointers: the parameter descriptors (all of
/// them, roles included, in descriptor order), the input descriptors, then
/// two rank-0 float32 memref descriptors { allocated, aligned, offset }
/// holding the learning rate of this step and the 1-based step number (as a
/// float), then the buffer receiving the output descriptors as for
/// inference. Unlike inference, the step reads and writes the parameter
/// buffers in place (parameters and optimizer state), so they must be
/// writable and must not be shared with a concurrent run.
typedef struct dist_rt_train_desc_t {
  /// One DIST_RT_PARAM_* role per parameter of the model descriptor.
  const uint8_t *param_roles;
  /// Inputs of a step: the model inputs the loss depends on, then the label
  /// (named "label") unless the loss is the model's own output. Each has a
  /// leading batch dimension (dynamic, or static when the model fixed it).
  uint32_t num_inputs;
  const dist_rt_tensor_desc_t *inputs;
  /// Outputs of a step; the first is "loss", a float32 scalar.
  uint32_t num_outputs;
  const dist_rt_tensor_desc_t *outputs;
  /// The compiled step (NULL for a pipelined step, see `pipeline`).
  dist_rt_entry_fn_t entry;
  /// Base learning rate, schedule (DIST_RT_LR_*) and warm-up steps.
  double lr;
  uint32_t lr_schedule;
  int64_t warmup_steps;
  /// Names of the optimizer and loss, for logs ("adamw", "cross_entropy").
  const char *optimizer;
  const char *loss;
  /// The original ONNX model (binary protobuf), relative to the directory of
  /// the binary holding the descriptor unless absolute, for `train
  /// --export-onnx`; NULL when the artifact has none.
  const char *onnx_file;
  /// With the cross_entropy loss, the number of classes C (> 0): every
  /// element of the int64 input "label" must be a class in [0, C) or
  /// label_ignore_index, else a train step fails naming the element (as
  /// PyTorch's cross_entropy does; the generated step would read outside
  /// the logits). 0 when labels are not class indices.
  int64_t label_classes;
  int64_t label_ignore_index;
  /// Pipeline stages (dist-opt --mesh pp=N): then `entry` is NULL and the
  /// step runs these functions; else NULL.
  const dist_rt_pipeline_desc_t *pipeline;
} dist_rt_train_desc_t;

/// A lookup of a table on the parameter server (dist-opt --ps-tables). The
/// input named `rows` (of the inference entry and of the training step)
/// takes the rows of the table pulled for the ids of each sample: elements
/// `cols` (row-major, without the leading batch dimension) of the integer
/// input named `ids`, in that order, so that `rows` is [batch, ...,
/// dim] with num_cols rows per sample. Negative ids count from the end of
/// the table, as ONNX Gather's do. The training step returns the rows'
/// gradient as the output named "<rows>.grad", which the runtime pushes.
typedef struct dist_rt_ps_lookup_t {
  const char *rows;
  const char *ids;
  /// Index of the table's parameter (role DIST_RT_PARAM_PS in a training
  /// artifact): its rows and dim.
  uint32_t table;
  uint32_t num_cols;
  const int64_t *cols;
} dist_rt_ps_lookup_t;

/// The tables on the parameter server and the update the servers apply to
/// their rows (dist_rt/ps.h's optimizers: "sgd", "adagrad", "adam").
typedef struct dist_rt_ps_desc_t {
  uint32_t num_lookups;
  const dist_rt_ps_lookup_t *lookups;
  const char *optimizer;
  double lr, beta1, beta2, eps;
  /// How the servers create a row first touched: "rows" (the table's values
  /// in the parameter file), "uniform" in [init_a, init_b) or "normal" of
  /// mean init_a and standard deviation init_b, drawn per (table, id,
  /// column) and so the same for any number of servers (the tables are
  /// then not in the parameter file).
  const char *init;
  double init_a, init_b;
} dist_rt_ps_desc_t;

/// Everything the runtime needs to know about a compiled model. Defined as
/// a constant by the generated glue; the runtime only reads it and keeps a
/// pointer to it for the lifetime of the model.
typedef struct dist_rt_model_desc_t {
  /// Must be DIST_RT_MODEL_ABI_VERSION.
  uint32_t abi_version;
  /// NUL-terminated model name, used in messages.
  const char *name;
  /// Name of the parameter file, relative to the directory of the binary
  /// that holds this descriptor (an absolute path is used as is). NULL when
  /// num_params is 0.
  const char *param_file;
  /// Parameters, all with static shapes, looked up by name in the file.
  uint32_t num_params;
  const dist_rt_tensor_desc_t *params;
  /// Inputs, in the order dist_rt_model_run takes them.
  uint32_t num_inputs;
  const dist_rt_tensor_desc_t *inputs;
  /// Outputs, in the order dist_rt_model_run returns them.
  uint32_t num_outputs;
  const dist_rt_tensor_desc_t *outputs;
  /// The compiled code.
  dist_rt_entry_fn_t entry;
  /// The training step, or NULL for an inference-only model. With a
  /// training step the runtime keeps all parameters in private writable
  /// buffers (copied from the file, optimizer state zeroed) shared by
  /// inference and training runs.
  const dist_rt_train_desc_t *train;
  /// The device mesh the model was partitioned for (dist-opt --mesh): axis
  /// extents and names ("dp", "tp"), row-major over the ranks of the job.
  /// 0 axes (NULL arrays) for a model that was not partitioned. With a
  /// mesh, dist_rt_model_create sets it up (dist_rt_mesh_setup): the job
  /// must have product(mesh_shape) ranks, or 1. A data-parallel (dp) mesh
  /// splits every batch of a training step: the step's inputs get rows
  /// [r * B / dp, (r + 1) * B / dp) of the global batch B on dp rank r.
  uint32_t num_mesh_axes;
  const int64_t *mesh_shape;
  const char *const *mesh_axis_names;
  /// One entry per parameter, or NULL when no parameter is split (see
  /// dist_rt_param_shard_t). The runtime loads each rank's part of a split
  /// parameter from the full one in the parameter file.
  const dist_rt_param_shard_t *param_shards;
  /// 1 when the inference entry computes one data-parallel rank's rows of
  /// the batch (dist-opt --mesh with dp > 1 on a model whose outputs keep
  /// the samples apart): every input and output has the batch as dimension
  /// 0, `inputs` and `outputs` above describe the whole batch B, and a
  /// static B is compiled as B / dp rows. dist_rt_model_run then runs dp
  /// rank r on rows [r * B / dp, (r + 1) * B / dp) and gathers the rows of
  /// every output over the dp axis, so that every rank returns the whole
  /// outputs; a process alone runs the dp slices of a static batch one
  /// after another (a dynamic batch in one call). Under a launcher such a
  /// run is collective: every rank of the job must call dist_rt_model_run
  /// with the same inputs. 0: the entry takes the whole batch on every
  /// rank.
  uint32_t infer_batch_split;
  /// The tables on the parameter server, or NULL. A training run pulls the
  /// rows of every lookup from the servers before each step and pushes
  /// their gradients after it (dist_rt/ps.h); inference (dist_rt_model_run)
  /// gathers them from the table's parameter, which an inference-only
  /// artifact loads like any other.
  const dist_rt_ps_desc_t *ps;
  /// The layout set this executable belongs to (dist-opt --elastic), or
  /// NULL.
  const dist_rt_elastic_desc_t *elastic;
  /// Where the compiled code runs: DIST_RT_DEVICE_HOST, or
  /// DIST_RT_DEVICE_CUDA (dist-opt --target=cuda): its kernels are in the
  /// binary and its buffers are the runtime's device memory, so
  /// dist_rt_model_create opens the GPU (dist_rt_model_options_t::device)
  /// and uploads the parameters, and every run copies its inputs to the
  /// GPU and its outputs back.
  uint32_t device;
} dist_rt_model_desc_t;

/// Values of dist_rt_model_desc_t::device.
#define DIST_RT_DEVICE_HOST 0u
#define DIST_RT_DEVICE_CUDA 1u

/*===----------------------------------------------------------------------===*
 * Model API
 *===----------------------------------------------------------------------===*/

/// A loaded model: its descriptor, its mapped parameters and the outputs of
/// its last run.
typedef struct dist_rt_model *dist_rt_model_t;

/// A dense, contiguous, row-major tensor passed to or returned by a run.
typedef struct dist_rt_tensor_t {
  /// Element type, one of the DIST_RT_DTYPE_* codes.
  uint32_t dtype;
  /// Number of dimensions; 0 for a scalar.
  uint32_t rank;
  /// `rank` non-negative extents. May be NULL when rank is 0.
  const int64_t *dims;
  /// product(dims) * dist_rt_dtype_size(dtype) bytes. May be NULL only when
  /// the tensor has no elements.
  void *data;
} dist_rt_tensor_t;

/// Options of dist_rt_model_create. Always initialize with
/// dist_rt_model_options_initialize so that fields added later get their
/// defaults.
typedef struct dist_rt_model_options_t {
  /// Path of the parameter file, or of a directory that a compiled model's
  /// `train` command wrote: a --save-params directory, one checkpoint
  /// (DIR/step-<n>), or a --checkpoint-dir, whose newest checkpoint (the
  /// one its `latest` file names) is used. In a directory each parameter is
  /// read from <name>.npy ('/' in the name becomes '_'; bfloat16 as uint16
  /// bit patterns) and must have the dtype and shape the model declares;
  /// other files there (optimizer state, state.json) are not read, so the
  /// optimizer state starts at zero as with a parameter file. NULL (the
  /// default) means <directory of the binary holding the
  /// descriptor>/<desc->param_file>.
  const char *param_path;
  /// Number of threads for the whole process (dist_rt_set_num_threads);
  /// 0 (the default) means one per hardware thread. Must not be negative.
  int32_t num_threads;
  /// The GPU a CUDA model runs on (its CUDA device ordinal); -1 (the
  /// default) means the DIST_RT_DEVICE environment variable, else 0.
  /// Ignored by host models.
  int32_t device;
  /// Nonzero: a CUDA model's tensors stay on the GPU. The inputs' data may
  /// then be device memory (cudaMalloc'd, managed; host memory works too,
  /// the driver's unified addressing telling them apart), copied on the
  /// device, and the outputs' data are device memory (CUDA managed memory,
  /// which the host can also read once the run returned), owned by the
  /// model as host outputs are. 0 (the default): host tensors in and out.
  /// A host model refuses it.
  uint32_t device_tensors;
} dist_rt_model_options_t;

/// Sets every field of `*options` to its default. NULL is a no-op.
DIST_RT_API void
dist_rt_model_options_initialize(dist_rt_model_options_t *options);

/// Loads the model described by `desc`: checks the descriptor and its ABI
/// version, maps the parameter file (or reads the parameter directory, see
/// dist_rt_model_options_t) and checks that every declared parameter is
/// present with the declared dtype and shape, and sets the process-wide
/// thread count. With a training step
/// (desc->train) it also checks that descriptor, copies the frozen and
/// trained parameters into private 64-byte-aligned buffers, gives the
/// optimizer state (which the file does not hold) zero-filled ones, and
/// unmaps the file; inference then reads those buffers too, so it sees the
/// trained values. Without one the parameters are used in place, without a
/// copy (those of a parameter directory are copied into read-only buffers). `options` may be NULL for the defaults. `desc` must stay valid until
/// the model is destroyed. On success stores the model in `*out_model`; on
/// failure stores NULL there and returns a one-line status naming the model,
/// file or parameter.
DIST_RT_API dist_rt_status_t dist_rt_model_create(
    const dist_rt_model_desc_t *desc, const dist_rt_model_options_t *options,
    dist_rt_model_t *out_model);

/// Runs the model once. `inputs` holds `num_inputs` tensors in descriptor
/// order (it may be NULL when the model has no inputs); each must match the
/// declared dtype, rank and static dims. The input data is only read and
/// may be freed or reused once the call returns; it may be the output of an
/// earlier run of this or another model.
///
/// On success stores in `*out_outputs` an array of desc->num_outputs
/// contiguous tensors owned by the model; they stay valid until the next
/// run or destroy of `model`. On failure `*out_outputs` is set to NULL,
/// the outputs of the previous run stay valid, and a one-line status
/// naming the input at fault is returned. Not thread-safe for one model.
DIST_RT_API dist_rt_status_t
dist_rt_model_run(dist_rt_model_t model, const dist_rt_tensor_t *inputs,
                  size_t num_inputs, const dist_rt_tensor_t **out_outputs);

/// Frees the model, its outputs and its reference to the parameters.
/// NULL is a no-op.
DIST_RT_API void dist_rt_model_destroy(dist_rt_model_t model);

/// Returns the descriptor `model` was created from, or NULL for NULL.
DIST_RT_API const dist_rt_model_desc_t *
dist_rt_model_desc(dist_rt_model_t model);

/*===----------------------------------------------------------------------===*
 * Training (models compiled with --train)
 *===----------------------------------------------------------------------===*/

/// Runs one training step on one batch: `inputs` holds
/// desc->train->num_inputs tensors in that order, all with the same leading
/// (batch) extent; `lr` is the learning rate of this step and `step` its
/// 1-based number (Adam's bias correction uses it). Updates the parameters
/// and optimizer state in place and stores the loss in `*out_loss`. Fails
/// with a one-line status for a model without a training step or an input
/// that does not match; the parameters are then unchanged.
DIST_RT_API dist_rt_status_t dist_rt_model_train_step(
    dist_rt_model_t model, const dist_rt_tensor_t *inputs, size_t num_inputs,
    float lr, int64_t step, float *out_loss);

/// Describes parameter `index` (descriptor order) of `model` in `*out`: its
/// live buffer, which a train step updates, valid until the model is
/// destroyed. The data may be written to (to restore a checkpoint) only for
/// a model with a training step and never during a run; for a model without
/// one it points into the read-only mapping of the parameter file (or into
/// the read-only copies of a parameter directory's files). A CUDA model
/// with a training step keeps its parameters in CUDA managed memory, which
/// the host reads and writes between steps. Fails for an index out of
/// range.
DIST_RT_API dist_rt_status_t dist_rt_model_param(dist_rt_model_t model,
                                                 size_t index,
                                                 dist_rt_tensor_t *out);

/// Attaches the parameter-server client through which a model with tables
/// on the servers (desc->ps) pulls the rows of its lookups before each
/// training step (as of step number `step` - 1, 0-based, see dist_rt/ps.h's
/// modes) and pushes their gradients after it, and through which
/// dist_rt_model_run reads rows. `client` is borrowed: it must outlive the
/// model's steps (NULL detaches it). The client must declare the model's
/// tables in the order of their first lookup. The step's gradients are of
/// the mean loss of this worker's batch; they are pushed scaled by
/// 1 / `num_workers`, so that the servers' sum over the workers is the
/// gradient of the mean over all their samples. For a training step the
/// entries of `inputs` that are lookups' rows are not read (pass tensors
/// with NULL data): the runtime fills them.
DIST_RT_API dist_rt_status_t dist_rt_model_attach_ps(dist_rt_model_t model,
                                                     dist_rt_ps_client_t client,
                                                     int32_t num_workers);

/// Declares the inputs of the next training step (their ids are copied),
/// so that the next dist_rt_model_train_step pulls their rows while it
/// computes (as of its step number, 0-based, + 1) and the step after uses
/// them when its ids are these. Only the servers' ASYNC and SSP modes with
/// a bound K >= 1 let a step's rows miss the worker's own previous push:
/// under SYNC (or SSP with K = 0), where that pull would wait for this very
/// step's push, or without an attached client, this does nothing
/// (dist_rt_ps_client_may_run_ahead).
DIST_RT_API dist_rt_status_t dist_rt_model_ps_prefetch(
    dist_rt_model_t model, const dist_rt_tensor_t *next_inputs,
    size_t num_inputs);

/// The learning rate of 0-based step `step` of a run of `total_steps`
/// steps under the schedule of `train` (see DIST_RT_LR_*).
DIST_RT_API double dist_rt_lr_at(const dist_rt_train_desc_t *train,
                                 int64_t step, int64_t total_steps);

/*===----------------------------------------------------------------------===*
 * Command-line driver
 *===----------------------------------------------------------------------===*/

/// The main function of a compiled model's executable:
///
///   <exe> --input NAME=FILE.npy [--input ...] [--output-dir DIR]
///         [--threads N] [--bench N] [--params PATH] [--help]
///
/// Reads every input from a .npy file, runs the model once and writes each
/// output to <output-dir>/<output name>.npy ('/' in names becomes '_'; the
/// directory is created if missing). With --bench N it then does 3 warm-up
/// runs and N timed runs and prints one line
/// "latency_ms_median=<x> latency_ms_p90=<y>" to stdout. --params PATH names
/// the parameter file or directory (dist_rt_model_options_t::param_path):
/// a model serves with the parameters `train` saved (--save-params) or
/// checkpointed (--checkpoint-dir, or one of its checkpoints).
///
///   <exe> train --data NAME=FILE.npy [--data ...] [--batch-size B]
///         (--steps S | --epochs E) [--shuffle] [--seed S] [--threads N]
///         [--log FILE] [--save-params DIR]
///         [--checkpoint-dir DIR --checkpoint-every K] [--resume DIR]
///         [--params PATH] [--quiet] [--help]
///
/// trains a model compiled with --train. Each train input is read from its
/// own .npy file; all hold the same number N of samples along dimension 0.
/// B defaults to the batch size the model fixed, if it did. An epoch has
/// floor(N / B) batches (the rest is dropped) and --epochs E means
/// E * floor(N / B) steps. Step i (from 0) uses batch i mod floor(N / B) of
/// epoch floor(i / floor(N / B)), learning rate dist_rt_lr_at(train, i, S)
/// and step number i + 1. Without --shuffle batch b is samples
/// [b * B, (b + 1) * B) in file order; with it the samples of epoch e are
/// visited in the order of a Fisher-Yates shuffle of 0..N-1 (for i from
/// N - 1 down to 1, swap positions i and j) driven by std::mt19937_64
/// seeded with seed + e, where j is the first draw r >= 2^64 mod (i + 1)
/// taken modulo i + 1, so every platform gets the same order.
///
/// --log writes one JSON object a line and step, flushed at once:
/// {"step": <from 1>, "loss": <x>, "lr": <y>, "samples_per_s": <z>}
/// (numbers with %.9g; NaN and Infinity spelled as Python's json module
/// reads them); a resumed run appends. On a terminal a progress bar is
/// redrawn in place unless --quiet is given; otherwise a line
/// "step <i>/<S> loss=<x> lr=<y> samples_per_s=<z>" is printed every
/// max(1, S / 10) steps and after the last. The run ends with
/// "trained <n> steps in <t> s, final loss <x>". A loss that is NaN or
/// infinite is logged, then reported as an error naming the step, and
/// nothing more is saved.
///
/// --save-params DIR writes every frozen and trained parameter after
/// training as DIR/<name>.npy. --checkpoint-dir D --checkpoint-every K saves,
/// after every K steps and after the last step, every parameter (optimizer
/// state included) and state.json {"step", "total_steps", "seed",
/// "batch_size", "model"} in D/step-<%08d completed steps>: written and
/// flushed in a temporary directory, renamed into place, then named by
/// D/latest (replaced atomically); only it and the checkpoint named before
/// are kept. --resume D loads the checkpoint that D/latest names and goes
/// on from its step with the same batches as an uninterrupted run; its
/// batch size and seed must be those of the command line.
///
/// Every error is printed as one line "error: <message>" on stderr, and no
/// file is ever left half-written under its final name. Returns the
/// process exit code (0 on success, 1 on error) and never calls exit().
DIST_RT_API int dist_rt_main(int argc, char **argv,
                             const dist_rt_model_desc_t *desc);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DIST_RT_MODEL_H */
