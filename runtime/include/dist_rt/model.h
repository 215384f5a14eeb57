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
 * and the outputs of its last run. Runs of one model must not overlap;
 * distinct models may run concurrently from different threads. The thread
 * count is process-wide (dist_rt_set_num_threads).
 *
 * This header compiles as C99 and as C++.
 *===----------------------------------------------------------------------===*/

#ifndef DIST_RT_MODEL_H
#define DIST_RT_MODEL_H

#include "dist_rt/dist_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Model descriptor (written by dist-compile)
 *===----------------------------------------------------------------------===*/

/// Version of the layout of dist_rt_model_desc_t and of the entry calling
/// convention. A descriptor with another version is rejected.
#define DIST_RT_MODEL_ABI_VERSION 1

/// Dimension value meaning "known only at run time".
#define DIST_RT_DYNAMIC_DIM (-1)

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
} dist_rt_tensor_desc_t;

/// The packed entry function; see the calling convention above.
typedef void (*dist_rt_entry_fn_t)(void **args);

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
} dist_rt_model_desc_t;

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
  /// Path of the parameter file. NULL (the default) means
  /// <directory of the binary holding the descriptor>/<desc->param_file>.
  const char *param_path;
  /// Number of threads for the whole process (dist_rt_set_num_threads);
  /// 0 (the default) means one per hardware thread. Must not be negative.
  int32_t num_threads;
} dist_rt_model_options_t;

/// Sets every field of `*options` to its default. NULL is a no-op.
DIST_RT_API void
dist_rt_model_options_initialize(dist_rt_model_options_t *options);

/// Loads the model described by `desc`: checks the descriptor and its ABI
/// version, maps the parameter file (see dist_rt_model_options_t) and checks
/// that every declared parameter is present with the declared dtype and
/// shape, and sets the process-wide thread count. `options` may be NULL for
/// the defaults. `desc` must stay valid until the model is destroyed. On
/// success stores the model in `*out_model`; on failure stores NULL there
/// and returns a one-line status naming the model, file or parameter.
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
/// "latency_ms_median=<x> latency_ms_p90=<y>" to stdout. Every error is
/// printed as one line "error: <message>" on stderr. Returns the process
/// exit code (0 on success, 1 on error) and never calls exit().
DIST_RT_API int dist_rt_main(int argc, char **argv,
                             const dist_rt_model_desc_t *desc);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DIST_RT_MODEL_H */
