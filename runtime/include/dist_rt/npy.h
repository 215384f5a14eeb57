/*===- npy.h - NumPy .npy file reader and writer -------------------*- C -*-===*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Reads and writes single arrays in NumPy's .npy format (versions 1.0, 2.0
 * and 3.0), used by compiled models' executables for their inputs and
 * outputs. Only little-endian (or byte-order-free) numeric and bool arrays
 * in C order are supported:
 *
 *   npy   f2       f4     f8       i1   i2    i4    i8    u1    u2
 *   dtype float16  float  double   int8 int16 int32 int64 uint8 uint16
 *   npy   u4     u8     b1 (or ?)
 *   dtype uint32 uint64 bool
 *
 * bfloat16 has no .npy code and is rejected by both directions.
 *
 * Ownership and thread-safety: dist_rt_npy_read fills a caller-provided
 * dist_rt_npy_array_t whose buffers the caller releases with
 * dist_rt_npy_free. The functions keep no state and may be called from any
 * number of threads. This header compiles as C99 and as C++.
 *===----------------------------------------------------------------------===*/

#ifndef DIST_RT_NPY_H
#define DIST_RT_NPY_H

#include "dist_rt/dist_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Largest rank dist_rt_npy_read accepts (NumPy's own limit).
#define DIST_RT_NPY_MAX_RANK 64

/// An array read from a .npy file. Owns `dims` and `data`.
typedef struct dist_rt_npy_array_t {
  /// Element type, one of the DIST_RT_DTYPE_* codes.
  uint32_t dtype;
  /// Number of dimensions; 0 for a scalar.
  uint32_t rank;
  /// `rank` non-negative extents; NULL when rank is 0.
  int64_t *dims;
  /// The elements in C order, in host byte order, aligned to 64 bytes.
  /// Never NULL after a successful read, even for an empty array.
  void *data;
  /// Size of `data` in bytes: product(dims) * dist_rt_dtype_size(dtype).
  uint64_t nbytes;
} dist_rt_npy_array_t;

/// Reads the .npy file at `path` into `*out_array`. Validates the magic,
/// the version, the header dictionary (keys 'descr', 'fortran_order' and
/// 'shape', nothing else), the dtype and that the file holds at least the
/// data the shape needs (bytes after it are ignored, like NumPy does). On
/// failure `*out_array` is zeroed and the returned one-line status names
/// `path`.
DIST_RT_API dist_rt_status_t dist_rt_npy_read(const char *path,
                                              dist_rt_npy_array_t *out_array);

/// Writes `data` (product(dims) elements of `dtype` in C order, host byte
/// order; may be NULL when there are no elements) as a version 1.0 .npy
/// file (2.0 if the header needs it) at `path`. The file is written under
/// a temporary name in the same directory and renamed over `path` once
/// complete, so a failure never leaves a partial file behind. The returned
/// status names `path`.
DIST_RT_API dist_rt_status_t dist_rt_npy_write(const char *path, uint32_t dtype,
                                               uint32_t rank,
                                               const int64_t *dims,
                                               const void *data);

/// Frees the buffers of `*array` and zeroes it. NULL is a no-op.
DIST_RT_API void dist_rt_npy_free(dist_rt_npy_array_t *array);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DIST_RT_NPY_H */
