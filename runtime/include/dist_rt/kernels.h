/*===- kernels.h - Entry points called by generated code -----------*- C -*-===*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Functions that code compiled by dist-compile calls directly, plus the
 * controls that go with them:
 *
 *  - the memory allocator that MLIR's memref lowering calls
 *    (_mlir_memref_to_llvm_alloc/_aligned_alloc/_free) and MLIR's
 *    memrefCopy. Their names and signatures are fixed by MLIR and therefore
 *    do not carry the dist_rt_ prefix;
 *  - strided, batched matrix multiplication backed by OpenBLAS, which is
 *    loaded with dlopen on first use (a slow built-in loop is used, with a
 *    one-line warning on stderr, when it cannot be loaded);
 *  - the process-wide thread count and a persistent thread pool.
 *
 * Pointers that generated code passes as integers are intptr_t values
 * widened to int64_t. The exact signatures below are part of the ABI that
 * include/dist/Codegen/RuntimeABI.h describes to the compiler.
 *
 * Thread-safety: every function here may be called from any thread. The
 * allocator serializes its bookkeeping with a lock. Concurrent gemm calls
 * must not write the same C matrix.
 *
 * This header compiles as C99 and as C++.
 *===----------------------------------------------------------------------===*/

#ifndef DIST_RT_KERNELS_H
#define DIST_RT_KERNELS_H

#include "dist_rt/dist_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Memory
 *===----------------------------------------------------------------------===*/

/// Returns a block of at least `size` bytes aligned to at least 64 bytes, or
/// NULL when the system is out of memory. Freed blocks are cached per size
/// class (multiples of 64 bytes up to 4 KiB, then four classes per power of
/// two), so repeated runs of a model do no system allocation once warm.
/// `size` 0 yields a distinct, valid block.
DIST_RT_API void *_mlir_memref_to_llvm_alloc(size_t size);

/// Like _mlir_memref_to_llvm_alloc, but aligned to `alignment` bytes when
/// that is larger than 64. A non-power-of-two alignment is rounded up to the
/// next power of two.
DIST_RT_API void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                     size_t size);

/// Returns a block obtained from the two functions above to the cache.
/// NULL, pointers the allocator did not hand out and blocks that are
/// already free are ignored.
DIST_RT_API void _mlir_memref_to_llvm_free(void *ptr);

/// Returns 1 if `ptr` is the start of a block handed out by the allocator
/// and not yet freed, 0 otherwise.
DIST_RT_API int dist_rt_alloc_owns(const void *ptr);

/// Releases every cached (free) block to the system. Live blocks are not
/// affected.
DIST_RT_API void dist_rt_alloc_trim(void);

/// MLIR's memref copy: `src` and `dst` point to unranked memref descriptors
/// { int64_t rank; void *descriptor; } whose `descriptor` is a ranked memref
/// descriptor (see dist_rt/model.h) of the same rank and sizes. Copies every
/// element of `elem_size` bytes honouring offsets and strides; contiguous
/// operands are copied with a single memcpy.
DIST_RT_API void memrefCopy(int64_t elem_size, void *src, void *dst);

/*===----------------------------------------------------------------------===*
 * The CUDA target (dist-opt --target=cuda; runtime/lib/cuda.cpp)
 *===----------------------------------------------------------------------===*/

/// The host code of a CUDA model allocates, frees and copies its buffers
/// with these (dist-device-allocations): blocks of device (CUDA managed)
/// memory from a caching allocator, copies that run on the GPU when both
/// views are contiguous. An allocation the GPU cannot hold fails the run
/// going on and is served from host memory, so the host code ends the run
/// without faulting.
DIST_RT_API void *dist_rt_device_alloc(size_t size);
DIST_RT_API void *dist_rt_device_aligned_alloc(size_t alignment, size_t size);
DIST_RT_API void dist_rt_device_free(void *ptr);
DIST_RT_API void dist_rt_device_memref_copy(int64_t elem_size, void *src,
                                            void *dst);

/// The functions MLIR's GPU lowering (gpu-to-llvm) calls to load kernel
/// images and launch kernels, with MLIR's signatures. A module load only
/// records the image (a global constructor calls it, before any GPU is
/// open); it is loaded on its first launch. Every kernel of a model runs on
/// the open device's one stream; errors fail the run going on.
DIST_RT_API void *mgpuModuleLoad(void *data, size_t size);
DIST_RT_API void *mgpuModuleLoadJIT(void *data, int opt_level);
DIST_RT_API void mgpuModuleUnload(void *module);
DIST_RT_API void *mgpuModuleGetFunction(void *module, const char *name);
DIST_RT_API void mgpuLaunchKernel(void *function, intptr_t grid_x,
                                  intptr_t grid_y, intptr_t grid_z,
                                  intptr_t block_x, intptr_t block_y,
                                  intptr_t block_z, int32_t shared_bytes,
                                  void *stream, void **params, void **extra,
                                  size_t num_params);
DIST_RT_API void *mgpuStreamCreate(void);
DIST_RT_API void mgpuStreamDestroy(void *stream);
DIST_RT_API void mgpuStreamSynchronize(void *stream);
DIST_RT_API void mgpuStreamWaitEvent(void *stream, void *event);
DIST_RT_API void *mgpuEventCreate(void);
DIST_RT_API void mgpuEventDestroy(void *event);
DIST_RT_API void mgpuEventSynchronize(void *event);
DIST_RT_API void mgpuEventRecord(void *event, void *stream);
DIST_RT_API void mgpuSetDefaultDevice(int32_t device);

/*===----------------------------------------------------------------------===*
 * Matrix multiplication
 *===----------------------------------------------------------------------===*/

/// For every batch index t in [0, batch):
///   C_t[i, j] += sum over p in [0, k) of A_t[i, p] * B_t[p, j]
/// with i in [0, m) and j in [0, n), where (strides in elements)
///   A_t[i, p] = ((float *)a_ptr)[t * a_sb + i * a_sm + p * a_sk]
///   B_t[p, j] = ((float *)b_ptr)[t * b_sb + p * b_sk + j * b_sn]
///   C_t[i, j] = ((float *)c_ptr)[t * c_sb + i * c_sm + j * c_sn]
/// A batch stride may be 0 (the matrix is shared by all batches). Note that
/// b_sb comes last. Operands with a unit stride in one dimension go to BLAS
/// directly; others are packed into temporary copies.
DIST_RT_API void dist_rt_gemm_f32(int64_t batch, int64_t m, int64_t n,
                                  int64_t k, int64_t a_ptr, int64_t a_sb,
                                  int64_t a_sm, int64_t a_sk, int64_t b_ptr,
                                  int64_t b_sk, int64_t b_sn, int64_t c_ptr,
                                  int64_t c_sb, int64_t c_sm, int64_t c_sn,
                                  int64_t b_sb);

/// dist_rt_gemm_f32 for double elements.
DIST_RT_API void dist_rt_gemm_f64(int64_t batch, int64_t m, int64_t n,
                                  int64_t k, int64_t a_ptr, int64_t a_sb,
                                  int64_t a_sm, int64_t a_sk, int64_t b_ptr,
                                  int64_t b_sk, int64_t b_sn, int64_t c_ptr,
                                  int64_t c_sb, int64_t c_sm, int64_t c_sn,
                                  int64_t b_sb);

/// dist_rt_gemm_f32 and dist_rt_gemm_f64 with C_t = A_t * B_t instead of
/// C_t += A_t * B_t: C is only written (BLAS's beta = 0), so a caller need
/// not clear it first. With k = 0, C is set to zeros. Batches whose C
/// matrices overlap sum their products: the first sets C, the others add.
DIST_RT_API void dist_rt_gemm_set_f32(int64_t batch, int64_t m, int64_t n,
                                      int64_t k, int64_t a_ptr, int64_t a_sb,
                                      int64_t a_sm, int64_t a_sk, int64_t b_ptr,
                                      int64_t b_sk, int64_t b_sn, int64_t c_ptr,
                                      int64_t c_sb, int64_t c_sm, int64_t c_sn,
                                      int64_t b_sb);
DIST_RT_API void dist_rt_gemm_set_f64(int64_t batch, int64_t m, int64_t n,
                                      int64_t k, int64_t a_ptr, int64_t a_sb,
                                      int64_t a_sm, int64_t a_sk, int64_t b_ptr,
                                      int64_t b_sk, int64_t b_sn, int64_t c_ptr,
                                      int64_t c_sb, int64_t c_sm, int64_t c_sn,
                                      int64_t b_sb);

/// dist_rt_gemm_f32, dist_rt_gemm_f64 and their _set_ forms for a CUDA
/// model (dist-opt --target=cuda): the pointers are the device's memory
/// (the runtime's device allocator), the product runs with cuBLASLt on the
/// device's stream and has finished when the call returns. Errors (no
/// GPU, cuBLASLt missing or refusing the product) fail the run going on.
DIST_RT_API void
dist_rt_cuda_gemm_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                      int64_t a_ptr, int64_t a_sb, int64_t a_sm, int64_t a_sk,
                      int64_t b_ptr, int64_t b_sk, int64_t b_sn, int64_t c_ptr,
                      int64_t c_sb, int64_t c_sm, int64_t c_sn, int64_t b_sb);
DIST_RT_API void
dist_rt_cuda_gemm_f64(int64_t batch, int64_t m, int64_t n, int64_t k,
                      int64_t a_ptr, int64_t a_sb, int64_t a_sm, int64_t a_sk,
                      int64_t b_ptr, int64_t b_sk, int64_t b_sn, int64_t c_ptr,
                      int64_t c_sb, int64_t c_sm, int64_t c_sn, int64_t b_sb);
DIST_RT_API void dist_rt_cuda_gemm_set_f32(
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_ptr, int64_t a_sb,
    int64_t a_sm, int64_t a_sk, int64_t b_ptr, int64_t b_sk, int64_t b_sn,
    int64_t c_ptr, int64_t c_sb, int64_t c_sm, int64_t c_sn, int64_t b_sb);
DIST_RT_API void dist_rt_cuda_gemm_set_f64(
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_ptr, int64_t a_sb,
    int64_t a_sm, int64_t a_sk, int64_t b_ptr, int64_t b_sk, int64_t b_sn,
    int64_t c_ptr, int64_t c_sb, int64_t c_sm, int64_t c_sn, int64_t b_sb);
/// The f32 products of a model compiled with --precision=tf32 / bf16: the
/// same, with the operands rounded to TF32 / bf16 on the tensor cores
/// (cuBLASLt's CUBLAS_COMPUTE_32F_FAST_TF32 / _FAST_16BF), accumulation,
/// inputs and outputs f32.
DIST_RT_API void dist_rt_cuda_gemm_f32_tf32(
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_ptr, int64_t a_sb,
    int64_t a_sm, int64_t a_sk, int64_t b_ptr, int64_t b_sk, int64_t b_sn,
    int64_t c_ptr, int64_t c_sb, int64_t c_sm, int64_t c_sn, int64_t b_sb);
DIST_RT_API void dist_rt_cuda_gemm_set_f32_tf32(
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_ptr, int64_t a_sb,
    int64_t a_sm, int64_t a_sk, int64_t b_ptr, int64_t b_sk, int64_t b_sn,
    int64_t c_ptr, int64_t c_sb, int64_t c_sm, int64_t c_sn, int64_t b_sb);
DIST_RT_API void dist_rt_cuda_gemm_f32_bf16(
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_ptr, int64_t a_sb,
    int64_t a_sm, int64_t a_sk, int64_t b_ptr, int64_t b_sk, int64_t b_sn,
    int64_t c_ptr, int64_t c_sb, int64_t c_sm, int64_t c_sn, int64_t b_sb);
DIST_RT_API void dist_rt_cuda_gemm_set_f32_bf16(
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_ptr, int64_t a_sb,
    int64_t a_sm, int64_t a_sk, int64_t b_ptr, int64_t b_sk, int64_t b_sn,
    int64_t c_ptr, int64_t c_sb, int64_t c_sm, int64_t c_sn, int64_t b_sb);

/// What dist_rt_gpu_measure measured on a GPU (dist-calibrate --gpu).
typedef struct dist_rt_gpu_figures {
  /// The device's name, NUL-terminated.
  char name[256];
  /// The sides of the square products measured (sizes[0..num_sizes)).
  int32_t num_sizes;
  int64_t sizes[8];
  /// FLOP/s of C = A * B of each size through dist_rt_cuda_gemm_set_f32,
  /// _f32_tf32 and _f32_bf16 (rows 0, 1, 2), each call waiting for the
  /// device as compiled code's do.
  double product_flops[3][8];
  /// Device-to-device copy, bytes read plus written per second.
  double copy_bandwidth;
  /// Seconds to launch an empty kernel and wait for it.
  double launch_overhead_s;
  /// Seconds of a 1x1x1 product's call.
  double product_call_s;
} dist_rt_gpu_figures_t;

/// Opens GPU `device` (-1: $DIST_RT_DEVICE, else 0) and measures it into
/// `*out` (`quick`: three sizes and short runs). Fails with one status
/// line naming the GPU when there is none, no driver, or a call fails.
DIST_RT_API dist_rt_status_t dist_rt_gpu_measure(int32_t device, int32_t quick,
                                                 dist_rt_gpu_figures_t *out);

/// Flags of dist_rt_gemm_set_act_f32.
#define DIST_RT_GEMM_RELU 1
#define DIST_RT_GEMM_CLIP 2
#define DIST_RT_GEMM_ZERO_GAPS 4
#define DIST_RT_GEMM_SILU 8
#define DIST_RT_GEMM_ACCUMULATE 16
#define DIST_RT_GEMM_HARDSWISH 32

/// dist_rt_gemm_set_f32 (C_t = A_t * B_t), then every element of C
/// through an epilogue: v = C_t[i, j] + bias[i * bias_si + j * bias_sj]
/// (no bias when bias_ptr is 0), with C's old value at [i, j] added too when
/// `flags` has DIST_RT_GEMM_ACCUMULATE (a residual connection's Add, the
/// sum's order unspecified: the product may accumulate onto it), then v = v *
/// (1 / (1 + exp(-v))) (SiLU: ONNX's Sigmoid and the Mul by its input; NaN
/// kept) when `flags` has DIST_RT_GEMM_SILU, or v = v * max(0, min(1, v * (1/6)
/// + 1/2)) (ONNX's HardSwish) when it has DIST_RT_GEMM_HARDSWISH (not both),
/// then v = (v <= 0 ? 0 : v) when it
/// has DIST_RT_GEMM_RELU, then v clamped to [lo, hi] with ordered compares
/// (v < lo ? lo : v, then v > hi ? hi : v; NaN stays) when it has
/// DIST_RT_GEMM_CLIP. With c_row_len > 0, C's columns are the positions
/// of an image whose rows of c_row_len positions lie c_row_stride apart
/// (a convolution's output written inside a padded buffer): C_t[i, j] at
/// c_ptr + t * c_sb + i * c_sm + (j / c_row_len) * c_row_stride +
/// (j % c_row_len) * c_sn. The C matrices of the batch must not overlap.
/// With DIST_RT_GEMM_ZERO_GAPS as well, the c_row_stride - c_row_len
/// elements after each of C_t's image rows, its last row's too, are set
/// to +0 (a padded buffer's right border and the next row's left one, so
/// that they need no loop of their own). Where the product runs on a packed
/// constant A (a convolution's filters) and the bias is per row, the epilogue
/// is applied as the tiles are stored.
DIST_RT_API void dist_rt_gemm_set_act_f32(
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_ptr, int64_t a_sb,
    int64_t a_sm, int64_t a_sk, int64_t b_ptr, int64_t b_sk, int64_t b_sn,
    int64_t c_ptr, int64_t c_sb, int64_t c_sm, int64_t c_sn, int64_t b_sb,
    int64_t bias_ptr, int64_t bias_si, int64_t bias_sj, int64_t flags, float lo,
    float hi, int64_t c_row_len, int64_t c_row_stride);

/*===----------------------------------------------------------------------===*
 * Convolution
 *===----------------------------------------------------------------------===*/

/// Flags of dist_rt_conv2d_f32.
#define DIST_RT_CONV_ACCUMULATE 1
#define DIST_RT_CONV_RELU 2
#define DIST_RT_CONV_CLIP 4
#define DIST_RT_CONV_SILU 8
#define DIST_RT_CONV_HARDSWISH 16
/// dist_rt_conv2d_nhwc_f32 and dist_rt_conv3d_nhwc_f32 only: the transposed
/// convolution (see there).
#define DIST_RT_CONV_TRANSPOSED 32

/// A 2-D f32 convolution of an input that is already padded: for every
/// image b in [0, n), filter o in [0, f) and output position (y, x) in
/// [0, oh) x [0, ow),
///   out[b, o, y, x] = sum over ci, i, j of w[o, ci, i, j] *
///                     in[b, ci, y*sh + i*dh, x*sw + j*dw]
/// plus bias[o] when `bias_ptr` is not 0, plus the old out[b, o, y, x] when
/// `flags` has DIST_RT_CONV_ACCUMULATE, then v * (1 / (1 + exp(-v))) when
/// it has DIST_RT_CONV_SILU, or v * max(0, min(1, v * (1/6) + 1/2)) (ONNX's
/// HardSwish) when it has DIST_RT_CONV_HARDSWISH (not both), then max(., 0)
/// (NaN kept) when it
/// has DIST_RT_CONV_RELU, then, when it has DIST_RT_CONV_CLIP, values below
/// `lo` become `lo` and then values above `hi` become `hi` (NaN kept: ONNX's
/// Clip; `lo` and `hi` are not read otherwise). Element strides (columns
/// have stride 1):
///   in[b, ci, r, x] = ((float *)in_ptr)[b*in_sn + ci*in_sc + r*in_sh + x]
///   out[b, o, y, x] = ((float *)out_ptr)[b*out_sn + o*out_sf + y*out_sh + x]
/// and `w` is a contiguous [f, c, kh, kw] array. Input rows must not
/// overlap (in_sh >= w: the kernel may read past a row's end into the
/// next one); `out` must not overlap `in` or `w`; every window must lie
/// inside the input ((oh - 1)*sh + (kh - 1)*dh < h, likewise for the
/// columns). Runs on the thread pool: with AVX-512 as a register-tiled
/// direct convolution, otherwise as a plain loop.
DIST_RT_API void dist_rt_conv2d_f32(
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t f, int64_t kh,
    int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t oh,
    int64_t ow, int64_t in_ptr, int64_t in_sn, int64_t in_sc, int64_t in_sh,
    int64_t w_ptr, int64_t bias_ptr, int64_t out_ptr, int64_t out_sn,
    int64_t out_sf, int64_t out_sh, float lo, float hi, int64_t flags);

/// dist_rt_conv2d_f32 over `groups` groups of c channels and f filters
/// each (a grouped or depthwise convolution): for every image b, group g,
/// filter o in [0, f) of the group and output position (y, x),
///   out[b, g, o, y, x] = sum over ci in [0, c), i, j of
///       w[g, o, ci, i, j] * in[b, g, ci, y*sh + i*dh, x*sw + j*dw]
/// plus bias[g * f + o] when `bias_ptr` is not 0, with the flags and
/// conditions of dist_rt_conv2d_f32, `w` a contiguous [groups, f, c, kh,
/// kw] array and group strides `in_sg` and `out_sg`:
///   in[b, g, ci, r, x] = in_ptr[b*in_sn + g*in_sg + ci*in_sc + r*in_sh + x]
///   out[b, g, o, y, x] = out_ptr[b*out_sn + g*out_sg + o*out_sf + y*out_sh
///                                + x]
/// With AVX-512 it runs the position-vectorised tiles of one filter (a
/// depthwise convolution) or blocks of 4 or 8 filters of a group.
DIST_RT_API void dist_rt_conv2d_group_f32(
    int64_t groups, int64_t n, int64_t c, int64_t h, int64_t w, int64_t f,
    int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
    int64_t oh, int64_t ow, int64_t in_ptr, int64_t in_sn, int64_t in_sg,
    int64_t in_sc, int64_t in_sh, int64_t w_ptr, int64_t bias_ptr,
    int64_t out_ptr, int64_t out_sn, int64_t out_sg, int64_t out_sf,
    int64_t out_sh, float lo, float hi, int64_t flags);

/// A 2-D f32 convolution of dense channels-last images over `groups`
/// groups of c channels and f filters each, padded by oneDNN's rule (taps
/// outside the image read 0): for every image b, group g, filter o of the
/// group and output position (y, x) in [0, oh) x [0, ow),
///   out[b, y, x, g*f + o] = sum over ci in [0, c), i, j of
///       w[g*f + o, ci, i, j] * in[b, y*sh + i*dh - pt, x*sw + j*dw - pl,
///                                 g*c + ci]
/// plus bias[g*f + o] when `bias_ptr` is not 0, then the epilogue of
/// dist_rt_conv2d_f32's `flags` (the old output added, SiLU or HardSwish,
/// ReLU, Clip to [lo, hi]). `in` is a contiguous [n, h, w, groups*c] array,
/// `out` a contiguous [n, oh, ow, groups*f] one that overlaps no other, `w`
/// a contiguous [groups*f, c, kh, kw] one (ONNX's filter layout); pb and pr
/// are the bottom and right padding, oh and ow must follow from the rest.
///
/// With DIST_RT_CONV_TRANSPOSED in `flags`, the transposed convolution
/// (ONNX's ConvTranspose; c input and f output channels a group): for every
/// image b, output position (y, x) and output channel g*f + o,
///   out[b, y, x, g*f + o] = sum over ci, i, j, and input positions (r, q)
///       with r*sh + i*dh - pt = y and q*sw + j*dw - pl = x, of
///       w[g*c + ci, o, i, j] * in[b, r, q, g*c + ci]
/// plus the bias and the epilogue as above; `w` is then a contiguous
/// [groups*c, f, kh, kw] array (ONNX's layout), the padding crops the
/// output, and oh = (h - 1)*sh + (kh - 1)*dh + 1 - pt - pb, likewise ow.
/// One of a single group whose kernel is its stride (an upsampling, no
/// dilation or padding) runs as one product and a copy instead (NaN kept
/// under ReLU and Clip there). Runs on oneDNN (conv_nhwc.cpp), its filters
/// reordered once when they lie in memory registered as constant; a plain loop
/// without it.
DIST_RT_API void dist_rt_conv2d_nhwc_f32(
    int64_t groups, int64_t n, int64_t c, int64_t h, int64_t w, int64_t f,
    int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
    int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t oh, int64_t ow,
    int64_t in_ptr, int64_t w_ptr, int64_t bias_ptr, int64_t out_ptr, float lo,
    float hi, int64_t flags);

/// dist_rt_conv2d_nhwc_f32 in 3-D: images [n, d, h, w, channels], filters
/// [groups*f, c, kd, kh, kw] ([groups*c, f, kd, kh, kw] transposed), depth
/// stride sd, dilation dd and padding pf (front) and pk (back) besides the
/// others; the same flags.
DIST_RT_API void dist_rt_conv3d_nhwc_f32(
    int64_t groups, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w,
    int64_t f, int64_t kd, int64_t kh, int64_t kw, int64_t sd, int64_t sh,
    int64_t sw, int64_t dd, int64_t dh, int64_t dw, int64_t pf, int64_t pt,
    int64_t pl, int64_t pk, int64_t pb, int64_t pr, int64_t od, int64_t oh,
    int64_t ow, int64_t in_ptr, int64_t w_ptr, int64_t bias_ptr,
    int64_t out_ptr, float lo, float hi, int64_t flags);

/// A pointwise convolution and the depthwise one that reads its output,
/// as one call: with `mid` the [n, h, w, e] image
///   dist_rt_conv2d_nhwc_f32(1, n, c, h, w, e, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
///                           h, w, in_ptr, w1_ptr, b1_ptr, mid, lo1, hi1,
///                           flags1);
///   dist_rt_conv2d_nhwc_f32(e, n, 1, h, w, 1, kh, kw, sh, sw, dh, dw, pt,
///                           pl, pb, pr, oh, ow, mid, w2_ptr, b2_ptr,
///                           out_ptr, lo2, hi2, flags2);
/// without `mid` in memory: where it is larger than the cache, bands of
/// output rows run both halves in turn, the band's rows of `mid` kept in
/// the cache. Neither flags may hold DIST_RT_CONV_ACCUMULATE or
/// DIST_RT_CONV_TRANSPOSED (they are ignored); `out` must not overlap
/// `in`.
DIST_RT_API void dist_rt_conv2d_nhwc_pwdw_f32(
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t e, int64_t w1_ptr,
    int64_t b1_ptr, float lo1, float hi1, int64_t flags1, int64_t kh,
    int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
    int64_t pl, int64_t pb, int64_t pr, int64_t oh, int64_t ow, int64_t w2_ptr,
    int64_t b2_ptr, float lo2, float hi2, int64_t flags2, int64_t in_ptr,
    int64_t out_ptr);

/// ONNX's 2-D MaxPool on a dense channels-last image `in` [n, h, w, c]
/// into `out` [n, oh, ow, c]: out[b, y, x, ch] is the maximum of
/// in[b, y*sh - pt + i*dh, x*sw - pl + j*dw, ch] over the taps i < kh,
/// j < kw that lie in the image (the padding, before and after, never
/// wins; a window of padding alone gives -inf), as arith.maximumf takes it:
/// NaN if any tap is NaN, +0 above -0 (pool_nhwc.cpp).
DIST_RT_API void dist_rt_maxpool2d_nhwc_f32(int64_t n, int64_t c, int64_t h,
                                            int64_t w, int64_t kh, int64_t kw,
                                            int64_t sh, int64_t sw, int64_t dh,
                                            int64_t dw, int64_t pt, int64_t pl,
                                            int64_t oh, int64_t ow,
                                            int64_t in_ptr, int64_t out_ptr);

/// The weight gradient of dist_rt_conv2d_f32 (same geometry): for every
/// filter o, channel ci and kernel position (i, j),
///   dw[o, ci, i, j] = sum over b, y, x of dy[b, o, y, x] *
///                     in[b, ci, y*sh + i*dh, x*sw + j*dw]
/// plus the old dw[o, ci, i, j] when `flags` has DIST_RT_CONV_ACCUMULATE.
///   in[b, ci, r, x] = ((float *)in_ptr)[b*in_sn + ci*in_sc + r*in_sh + x]
///   dy[b, o, y, x]  = ((float *)dy_ptr)[b*dy_sn + o*dy_sf + y*dy_sh + x]
/// and `dw` is a contiguous [f, c, kh, kw] array that must not overlap the
/// others. n = 0 (or no output position) sets dw to zeros (or leaves it,
/// accumulating). Runs on the thread pool: with AVX-512 as register tiles of
/// 16 filters by up to 24 kernel taps summed over every position,
/// otherwise as a plain loop.
DIST_RT_API void dist_rt_conv2d_wgrad_f32(
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t f, int64_t kh,
    int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t oh,
    int64_t ow, int64_t in_ptr, int64_t in_sn, int64_t in_sc, int64_t in_sh,
    int64_t dy_ptr, int64_t dy_sn, int64_t dy_sf, int64_t dy_sh, int64_t dw_ptr,
    int64_t flags);

/*===----------------------------------------------------------------------===*
 * Threads
 *===----------------------------------------------------------------------===*/

/// Sets the process-wide number of threads used by dist_rt_parallel_for,
/// which also spreads the matrix products (OpenBLAS itself runs one thread
/// per call). `n` <= 0 means one thread per hardware thread.
DIST_RT_API void dist_rt_set_num_threads(int32_t n);

/// Returns the current thread count (at least 1). Until
/// dist_rt_set_num_threads is called it is the number of hardware threads.
DIST_RT_API int32_t dist_rt_get_num_threads(void);

/// Called by generated code when an index input of Gather, GatherElements
/// or ScatterElements lies outside [-size, size): `index` is the value,
/// `size` the extent of the indexed axis, `node` the address of the ONNX
/// node's NUL-terminated name (an int64 like every pointer the generated
/// code passes). The run that is going on (dist_rt_model_run,
/// dist_rt_model_train_step), on any of its threads, then fails with a
/// message naming the node and the first such index; the generated code
/// goes on with a clamped index so that nothing outside the tensor is read
/// or written. Called outside a run, it prints the message to stderr.
DIST_RT_API void dist_rt_index_error(int64_t index, int64_t size, int64_t node);

/// Called by generated code when two operands of a broadcasting op have
/// different sizes `a` and `b` on output axis `axis` where neither size was
/// known at compile time (the code only broadcasts sizes known to be 1):
/// the run that is going on fails with a message naming the node (`node`
/// as for dist_rt_index_error); the generated code goes on over the smaller
/// size, so nothing outside an operand is read. Called outside a run, it
/// prints the message to stderr.
DIST_RT_API void dist_rt_shape_error(int64_t a, int64_t b, int64_t axis,
                                     int64_t node);

/// Called by generated code when an input fed at run time holds a value
/// that disagrees with the shapes the model declares (an op took its output
/// shape from the declaration, see the importer): element `element` of the
/// input named by the NUL-terminated string at address `input` holds `got`
/// where the declared shapes need `expected`. The run fails with a message
/// naming the node (`node` as for dist_rt_index_error) and the input; the
/// generated code goes on with the declared value. Called outside a run, it
/// prints the message to stderr.
DIST_RT_API void dist_rt_value_error(int64_t got, int64_t expected,
                                     int64_t element, int64_t input,
                                     int64_t node);

/// As dist_rt_value_error for an input holding axes (of a reduction, a
/// Squeeze or Unsqueeze, a CumSum): at run time they repeat an axis, lie
/// outside the rank, or do not give the output shape the model declares.
DIST_RT_API void dist_rt_axes_error(int64_t input, int64_t node);

/// As dist_rt_value_error where inputs fed at run time (pads, slice
/// bounds) give output axis `axis` the extent `got` but the output shape
/// the model declares has `expected` there.
DIST_RT_API void dist_rt_extent_error(int64_t axis, int64_t got,
                                      int64_t expected, int64_t input,
                                      int64_t node);

/// Called by generated code when inputs fed at run time ask for what the
/// code was not generated to do (dropout in training mode with a nonzero
/// ratio): the run fails with "node '<node>': <what> is not supported by
/// codegen", `what` the address of a NUL-terminated text.
DIST_RT_API void dist_rt_unsupported_error(int64_t what, int64_t node);

/// Called by generated code when an input fed at run time holds values the
/// op cannot take (split sizes that do not sum to the axis): the run fails
/// with "node '<node>': input '<input>' <what>" (both texts NUL-terminated
/// strings' addresses).
DIST_RT_API void dist_rt_input_error(int64_t what, int64_t input,
                                     int64_t node);

/// Body of a parallel loop: processes the indices [begin, end).
typedef void (*dist_rt_parallel_fn_t)(void *ctx, int64_t begin, int64_t end);

/// Splits [0, n) into at most dist_rt_get_num_threads() contiguous chunks
/// and calls `fn(ctx, begin, end)` once per chunk, the calling thread taking
/// part, on a persistent pool of worker threads; returns when every chunk is
/// done. Calls made from inside a chunk, or while the pool is busy with
/// another caller's loop, run serially as one chunk on the calling thread.
/// `n` <= 0 does nothing.
DIST_RT_API void dist_rt_parallel_for(int64_t n, dist_rt_parallel_fn_t fn,
                                      void *ctx);

/*===----------------------------------------------------------------------===*
 * Mesh collectives
 *
 * A model partitioned by dist-opt --mesh runs one SPMD program on every
 * rank of a device mesh. dist_rt_mesh_setup creates the world (MPI under a
 * launcher such as mpirun, else one rank) and one communicator per mesh
 * axis; generated code then reduces buffers over mesh axes through
 * dist_rt_mesh_all_reduce_start / _wait. Started reductions run in order
 * on a communication thread (when MPI offers MPI_THREAD_SERIALIZED, else
 * inside the start call), so the code between start and wait overlaps
 * with them. A failed reduction (dead or hung rank: the world's deadline,
 * DIST_RT_COMM_TIMEOUT seconds, default 300) prints one line naming the
 * rank and ends the whole job (dist_rt_world_abort(1)).
 *===----------------------------------------------------------------------===*/

/// Reductions of dist_rt_mesh_all_reduce_start.
enum {
  DIST_RT_MESH_REDUCE_SUM = 0,
  DIST_RT_MESH_REDUCE_MAX = 1,
  DIST_RT_MESH_REDUCE_MIN = 2,
  DIST_RT_MESH_REDUCE_PROD = 3,
  /// Sum divided by the number of ranks reduced over.
  DIST_RT_MESH_REDUCE_AVERAGE = 4
};

/// Sets up the mesh of `num_axes` axes with extents `shape` and names
/// `names` (may be NULL) for the process. The world must have
/// product(shape) ranks, or 1 rank, which then runs the whole mesh alone
/// (every axis has size 1: reductions are identities and the data-parallel
/// batch is not split). Calling it again with the same mesh is a no-op;
/// another mesh is an error. Collective over the world. A mesh still
/// active when the program exits normally is ended then, as by
/// dist_rt_mesh_finish(0).
DIST_RT_API dist_rt_status_t dist_rt_mesh_setup(uint32_t num_axes,
                                                const int64_t *shape,
                                                const char *const *names);

/// Whether dist_rt_mesh_setup succeeded (and dist_rt_mesh_finish did not
/// run yet).
DIST_RT_API int dist_rt_mesh_active(void);

/// The caller's rank in the world and the world's size (0 and 1 without a
/// mesh).
DIST_RT_API int32_t dist_rt_mesh_world_rank(void);
DIST_RT_API int32_t dist_rt_mesh_world_size(void);

/// The size of mesh axis `name` as this run sees it (1 when the mesh has
/// no such axis, or when the job runs alone) and the caller's coordinate on
/// it (0 then).
DIST_RT_API int64_t dist_rt_mesh_axis_size(const char *name);
DIST_RT_API int64_t dist_rt_mesh_axis_coord(const char *name);
/// The coordinate of this rank along mesh axis `axis` (by index; 0 without
/// a mesh or when the job runs alone).
DIST_RT_API int64_t dist_rt_mesh_coord(int64_t axis);

/// Concatenates `count` elements (DIST_RT_DTYPE_FLOAT or _DOUBLE) of the
/// buffer at address `src` from every rank along the single mesh axis set
/// in `axis_mask`, in coordinate order, into the buffer at `dst`. Blocking;
/// runs after the reductions already started. A failure ends the job with
/// an error naming the rank.
DIST_RT_API void dist_rt_mesh_all_gather(int64_t src, int64_t dst,
                                         int64_t count, int64_t dtype,
                                         int64_t axis_mask);

/// Pipeline transfers of a model cut into stages (mesh axis "pp"): hands
/// `bytes` bytes at `data` (an intptr_t as int64) to stage `peer` under
/// `tag`, and returns without waiting for it (the runtime keeps a copy
/// until it is received); and receives into `data` the bytes stage `peer`
/// sent under `tag`, waiting for them. Messages of one tag between two
/// stages arrive in the order they were sent (one per micro-batch). When
/// one process runs every stage, they go through memory. A failure or a
/// peer that does not answer before the deadline ends the job with an
/// error naming the rank.
DIST_RT_API void dist_rt_pp_send(int64_t data, int64_t bytes, int64_t peer,
                                 int64_t tag);
DIST_RT_API void dist_rt_pp_recv(int64_t data, int64_t bytes, int64_t peer,
                                 int64_t tag);

/// Starts reducing `count` elements at `data` (an intptr_t as int64; dtype
/// DIST_RT_DTYPE_FLOAT or DIST_RT_DTYPE_DOUBLE) in place over the mesh axes
/// whose bits are set in `axis_mask` (bit a: axis a; all bits of the mesh:
/// the world) with DIST_RT_MESH_REDUCE_* `reduce`. Returns a handle for
/// dist_rt_mesh_all_reduce_wait; the buffer must not be touched until then.
/// Every rank must start the same reductions in the same order.
DIST_RT_API int64_t dist_rt_mesh_all_reduce_start(int64_t data, int64_t count,
                                                  int64_t dtype, int64_t reduce,
                                                  int64_t axis_mask);

/// Returns once the reduction of `handle` is complete.
DIST_RT_API void dist_rt_mesh_all_reduce_wait(int64_t handle);

/// Time and volume of the mesh reductions since the last reset.
typedef struct dist_rt_mesh_stats_t {
  /// Reductions completed and bytes reduced (per rank, before reduction).
  int64_t ops;
  int64_t bytes;
  /// Seconds the reductions took from start to completion, summed.
  double comm_seconds;
  /// Seconds callers spent blocked in dist_rt_mesh_all_reduce_wait: the
  /// part of comm_seconds that did not overlap with computation.
  double wait_seconds;
} dist_rt_mesh_stats_t;

/// Copies the statistics into `*out` (zeros without a mesh); with `reset`
/// also sets them back to zero. NULL `out` only resets.
DIST_RT_API void dist_rt_mesh_get_stats(dist_rt_mesh_stats_t *out, int reset);

/// Ends the mesh at the end of a program with exit code `exit_code`: with
/// 0, waits for every rank to finish (a collective under the deadline) and
/// finalizes MPI; otherwise, with more than one rank, ends the whole job at
/// once (dist_rt_world_abort) so that no rank waits for this one. Returns
/// the exit code to use. A no-op returning `exit_code` without a mesh.
DIST_RT_API int dist_rt_mesh_finish(int exit_code);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DIST_RT_KERNELS_H */
