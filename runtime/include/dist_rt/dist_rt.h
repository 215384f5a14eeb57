/*===- dist_rt.h - dist-opt runtime C API --------------------------*- C -*-===*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Public C API of the dist-opt runtime: status objects and the read-only
 * parameter-file reader. The layout of parameter files is described in
 * dist_rt/param_format.h. Compiled models use dist_rt/model.h, .npy files
 * are read and written through dist_rt/npy.h, and the entry points that
 * generated code calls are declared in dist_rt/kernels.h. This header
 * compiles as C99 and as C++ and pulls in no MLIR or LLVM headers.
 *
 * Error handling: every fallible call returns a dist_rt_status_t. NULL means
 * success; a non-NULL status carries a code and a one-line message and is
 * owned by the caller, who must free it with dist_rt_status_free.
 *
 * Thread-safety: a dist_rt_params_t is immutable once dist_rt_params_open
 * has returned it. All functions that take one may be called concurrently
 * from any number of threads; retain and release use atomic reference
 * counting. A status object is not shared and must not be freed twice.
 *===----------------------------------------------------------------------===*/

#ifndef DIST_RT_DIST_RT_H
#define DIST_RT_DIST_RT_H

#include <stddef.h>
#include <stdint.h>

#include "dist_rt/param_format.h"

#if defined(_WIN32)
#define DIST_RT_API
#elif defined(__GNUC__)
#define DIST_RT_API __attribute__((visibility("default")))
#else
#define DIST_RT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Status
 *===----------------------------------------------------------------------===*/

/// Coarse classification of a failure.
typedef enum {
  /// Success. Never carried by a non-NULL status.
  DIST_RT_OK = 0,
  /// The operating system refused an operation (open, stat, mmap, ...).
  DIST_RT_ERROR_IO,
  /// A file does not follow the expected layout.
  DIST_RT_ERROR_FORMAT,
  /// A lookup by name found nothing.
  DIST_RT_ERROR_NOT_FOUND,
  /// The caller passed an invalid argument (NULL pointer, bad index, ...).
  DIST_RT_ERROR_INVALID_ARGUMENT,
  /// An allocation failed.
  DIST_RT_ERROR_OUT_OF_MEMORY,
  /// The runtime or the compiled code broke one of its own invariants (an
  /// unexpected C++ exception, an output of the wrong shape, ...).
  DIST_RT_ERROR_INTERNAL,
  /// Communication between ranks failed (dist_rt/comm.h): a collective timed
  /// out, a peer died, or MPI reported an error.
  DIST_RT_ERROR_COMM,
  /// The GPU a model was compiled for is missing (no driver, no device) or
  /// failed (a kernel's error).
  DIST_RT_ERROR_DEVICE
} dist_rt_status_code_t;

/// Result of a fallible call. NULL means success. A non-NULL status is owned
/// by the caller and must be released with dist_rt_status_free.
typedef struct dist_rt_status *dist_rt_status_t;

/// Returns the code of `status`, or DIST_RT_OK when `status` is NULL.
DIST_RT_API dist_rt_status_code_t dist_rt_status_code(dist_rt_status_t status);

/// Returns the one-line, NUL-terminated message of `status` (no trailing
/// newline), or "ok" when `status` is NULL. The string is owned by the
/// status and stays valid until dist_rt_status_free is called on it.
DIST_RT_API const char *dist_rt_status_message(dist_rt_status_t status);

/// Frees `status`. Passing NULL is a no-op.
DIST_RT_API void dist_rt_status_free(dist_rt_status_t status);

/*===----------------------------------------------------------------------===*
 * Data types
 *===----------------------------------------------------------------------===*/

/// Returns the size in bytes of one element of `dtype` (one of the
/// DIST_RT_DTYPE_* codes from param_format.h), or 0 if the code is unknown.
DIST_RT_API size_t dist_rt_dtype_size(uint32_t dtype);

/// Returns the name of `dtype` as used in messages ("float32", "int64",
/// "bool", ...), or "unknown" for a code the runtime does not know. The
/// string is static.
DIST_RT_API const char *dist_rt_dtype_name(uint32_t dtype);

/*===----------------------------------------------------------------------===*
 * Parameter files
 *===----------------------------------------------------------------------===*/

/// A parameter file mapped read-only into memory. Reference counted; created
/// by dist_rt_params_open with a count of one.
typedef struct dist_rt_params *dist_rt_params_t;

/// Describes one parameter. All pointers are borrowed from the
/// dist_rt_params_t they were obtained from and stay valid until its last
/// reference is released.
typedef struct dist_rt_param_info_t {
  /// NUL-terminated name. Names never contain NUL bytes.
  const char *name;
  /// Length of `name` in bytes, not counting the terminator.
  size_t name_len;
  /// Element type, one of the DIST_RT_DTYPE_* codes.
  uint32_t dtype;
  /// Number of dimensions, at most DIST_RT_PARAM_MAX_RANK. 0 for a scalar.
  uint32_t rank;
  /// `rank` non-negative extents in host byte order (NULL when rank is 0).
  const int64_t *dims;
  /// Start of the raw little-endian element data, aligned to
  /// DIST_RT_PARAM_ALIGNMENT bytes. Read-only.
  const void *data;
  /// Size of `data` in bytes: product(dims) * dist_rt_dtype_size(dtype).
  uint64_t nbytes;
} dist_rt_param_info_t;

/// Maps the parameter file at `path` read-only and validates its header and
/// every index entry (magic, sizes, offsets, alignment, dtypes, ranks, byte
/// counts, unique names). The header's file_size must equal the size of the
/// file and the index must end exactly at the end of the file; names must
/// not contain NUL bytes. On success stores a new handle with a reference
/// count of one in `*out_params`; on failure stores NULL there and returns a
/// status whose message names `path`.
///
/// The file must not be truncated or rewritten while it is mapped: the data
/// is read lazily through the mapping.
DIST_RT_API dist_rt_status_t dist_rt_params_open(const char *path,
                                                 dist_rt_params_t *out_params);

/// Adds a reference to `params`. Passing NULL is a no-op.
DIST_RT_API void dist_rt_params_retain(dist_rt_params_t params);

/// Drops a reference to `params`; the last release unmaps the file and
/// invalidates every pointer obtained from it. Passing NULL is a no-op.
DIST_RT_API void dist_rt_params_release(dist_rt_params_t params);

/// Returns the number of parameters in `params`, or 0 when it is NULL.
DIST_RT_API size_t dist_rt_params_count(dist_rt_params_t params);

/// Describes the parameter at position `index` (file order, in
/// [0, dist_rt_params_count)). On failure `*out_info` is zeroed and an
/// INVALID_ARGUMENT status is returned.
DIST_RT_API dist_rt_status_t dist_rt_params_get(dist_rt_params_t params,
                                                size_t index,
                                                dist_rt_param_info_t *out_info);

/// Describes the parameter called `name` (NUL-terminated, exact match). If
/// there is none, `*out_info` is zeroed and a NOT_FOUND status naming the
/// parameter and the file is returned. Lookup is O(log count).
DIST_RT_API dist_rt_status_t dist_rt_params_find(
    dist_rt_params_t params, const char *name, dist_rt_param_info_t *out_info);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DIST_RT_DIST_RT_H */
