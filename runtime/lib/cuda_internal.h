//===- cuda_internal.h - The runtime's CUDA layer ---------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What the rest of the runtime uses of cuda.cpp: the GPU a CUDA model
// (dist-opt --target=cuda) runs on, its device memory and copies. The
// entry points generated code calls (mgpu*, dist_rt_device_*) are C
// functions defined there too.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_CUDA_INTERNAL_H
#define DIST_RT_CUDA_INTERNAL_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace dist_rt {
namespace cuda {

/// open()'s ordinal for the GPU of this process's node-local rank modulo
/// the node's GPUs (the one the NCCL backend takes), unless DIST_RT_DEVICE
/// names one.
constexpr int kLocalRankDevice = -2;

/// Opens CUDA device `ordinal` (-1: the DIST_RT_DEVICE environment
/// variable, else 0; kLocalRankDevice) for this process: loads the driver
/// (libcuda.so.1) with dlopen, makes the device's primary context current and
/// creates the stream the kernels run on. Returns "" on success (also when that
/// device is already open) or why it cannot, in a phrase: no driver, no GPU, no
/// such device, another device already open.
std::string open(int ordinal);

/// "<name> (device N)" of the open device, or "" when none is.
std::string deviceName();

/// A block of `bytes` of device memory (CUDA managed memory, which host
/// code can also read and write), from the caching allocator; NULL with
/// `error` set when the device is out of memory or not open.
void *allocate(size_t bytes, std::string &error);

/// Gives a block of allocate() back (NULL is a no-op).
void release(void *block);

/// Whether `p` is the start of a live block of allocate().
bool owns(const void *p);

/// Copies `bytes` from `src` to `dst` (host or device memory, either way)
/// and waits for the copy. Returns "" or the driver's error.
std::string copy(void *dst, const void *src, size_t bytes);

/// Waits for every kernel launched so far. Returns "" or the driver's
/// error (an illegal address in a kernel, say).
std::string synchronize();

/// The open device's stream (a CUstream) with the device's context made
/// current on the calling thread, or null when no device is open.
void *currentStream();

/// A product as dist_rt_gemm_f32 takes it (kernels.h), strides in
/// elements: C_t[i, j] (+)= sum_p A_t[i, p] * B_t[p, j].
struct GemmShape {
  int64_t batch, m, n, k;
  int64_t aSb, aSm, aSk;
  int64_t bSb, bSk, bSn;
  int64_t cSb, cSm, cSn;
};

/// One operand of a column-major product as cuBLAS takes it: the stored
/// matrix is `rows` x `cols` with leading dimension `ld`; the product uses
/// its transpose when `transpose` is set.
struct LtOperand {
  bool transpose = false;
  int64_t rows = 0, cols = 0, ld = 0, batchStride = 0;
};

/// D (m x n, column-major, leading dimension c.ld) = op(A) * op(B) over
/// `batch` matrices. `swapped`: the problem computes C^T = B^T * A^T, so
/// its A is the caller's B and its B the caller's A.
struct LtProblem {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  LtOperand a, b, c;
  bool swapped = false;
};

/// The cuBLAS form of `s`, or nullopt when an operand has no unit stride
/// (or a negative one, or a leading dimension smaller than its rows): such
/// operands are packed first. Strides along a dimension of extent 1 do not
/// matter.
std::optional<LtProblem> planProduct(const GemmShape &s);

} // namespace cuda
} // namespace dist_rt

#endif // DIST_RT_CUDA_INTERNAL_H
