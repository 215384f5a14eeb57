/*===- param_format.h - dist-opt parameter file layout -------------*- C -*-===*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Layout of the parameter file that the importer writes and the runtime
 * maps. This header only holds constants and the layout description; the
 * compiler includes it to write files, the runtime to read them, and neither
 * links the other.
 *
 * All integers are little-endian.
 *
 *   offset 0   char     magic[8]       "DISTPRM1"
 *   offset 8   uint64   count          number of parameters
 *   offset 16  uint64   index_offset   byte offset of the index
 *   offset 24  uint64   file_size      total size of the file in bytes
 *   offset 32  ...      data           each blob starts on a
 *                                      DIST_RT_PARAM_ALIGNMENT boundary
 *   index_offset: count entries, each
 *     uint32  name_len, then name_len bytes of name (no terminator)
 *     uint32  dtype     ONNX TensorProto.DataType code (1 = float, ...)
 *     uint32  rank, then rank x int64 dims
 *     uint64  data_offset  (aligned, within [32, index_offset))
 *     uint64  nbytes       (= product(dims) * element size)
 *
 * Names are unique. A reader must check every offset and size against
 * file_size and reject the file otherwise.
 *===----------------------------------------------------------------------===*/

#ifndef DIST_RT_PARAM_FORMAT_H
#define DIST_RT_PARAM_FORMAT_H

#define DIST_RT_PARAM_MAGIC "DISTPRM1"
#define DIST_RT_PARAM_MAGIC_SIZE 8
#define DIST_RT_PARAM_HEADER_SIZE 32
#define DIST_RT_PARAM_ALIGNMENT 64
#define DIST_RT_PARAM_MAX_RANK 16

/* ONNX TensorProto.DataType codes used in the dtype field. */
#define DIST_RT_DTYPE_FLOAT 1
#define DIST_RT_DTYPE_UINT8 2
#define DIST_RT_DTYPE_INT8 3
#define DIST_RT_DTYPE_UINT16 4
#define DIST_RT_DTYPE_INT16 5
#define DIST_RT_DTYPE_INT32 6
#define DIST_RT_DTYPE_INT64 7
#define DIST_RT_DTYPE_BOOL 9
#define DIST_RT_DTYPE_FLOAT16 10
#define DIST_RT_DTYPE_DOUBLE 11
#define DIST_RT_DTYPE_UINT32 12
#define DIST_RT_DTYPE_UINT64 13
#define DIST_RT_DTYPE_BFLOAT16 16

#endif /* DIST_RT_PARAM_FORMAT_H */
