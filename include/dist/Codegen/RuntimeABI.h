//===- RuntimeABI.h - runtime symbols named by generated code ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The only place where the compiler names symbols of the runtime
// (runtime/include/dist_rt/*.h). The compiler never links the runtime; the
// artifacts it writes do.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_CODEGEN_RUNTIMEABI_H
#define DIST_CODEGEN_RUNTIMEABI_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir::dist::runtime_abi {

/// Batched strided GEMM (dist_rt/kernels.h).
inline constexpr llvm::StringLiteral kGemmF32 = "dist_rt_gemm_f32";
inline constexpr llvm::StringLiteral kGemmF64 = "dist_rt_gemm_f64";
/// The same with C = A * B (C is not read).
inline constexpr llvm::StringLiteral kGemmSetF32 = "dist_rt_gemm_set_f32";
inline constexpr llvm::StringLiteral kGemmSetF64 = "dist_rt_gemm_set_f64";
/// The same products of a CUDA model on device buffers, through cuBLASLt.
inline constexpr llvm::StringLiteral kCudaGemmF32 = "dist_rt_cuda_gemm_f32";
inline constexpr llvm::StringLiteral kCudaGemmF64 = "dist_rt_cuda_gemm_f64";
inline constexpr llvm::StringLiteral kCudaGemmSetF32 =
    "dist_rt_cuda_gemm_set_f32";
inline constexpr llvm::StringLiteral kCudaGemmSetF64 =
    "dist_rt_cuda_gemm_set_f64";
/// The f32 products with operands rounded to TF32 or bf16 (--precision).
inline constexpr llvm::StringLiteral kCudaGemmF32Tf32 =
    "dist_rt_cuda_gemm_f32_tf32";
inline constexpr llvm::StringLiteral kCudaGemmSetF32Tf32 =
    "dist_rt_cuda_gemm_set_f32_tf32";
inline constexpr llvm::StringLiteral kCudaGemmF32Bf16 =
    "dist_rt_cuda_gemm_f32_bf16";
inline constexpr llvm::StringLiteral kCudaGemmSetF32Bf16 =
    "dist_rt_cuda_gemm_set_f32_bf16";
/// The prefix of the runtime's device library calls (the above).
inline constexpr llvm::StringLiteral kCudaLibraryPrefix = "dist_rt_cuda_";
/// dist_rt_gemm_set_f32 with a bias and SiLU or HardSwish / ReLU / Clip
/// applied to C.
inline constexpr llvm::StringLiteral kGemmSetActF32 =
    "dist_rt_gemm_set_act_f32";
/// Its flags (dist_rt/kernels.h): ReLU; clip to [lo, hi]; zero the gaps
/// after an image's rows; SiLU (before the ReLU and the clip); add C's old
/// value (a residual, before the activations); HardSwish (where SiLU
/// stands).
inline constexpr int64_t kGemmRelu = 1, kGemmClip = 2, kGemmZeroGaps = 4,
                         kGemmSilu = 8, kGemmAccumulate = 16,
                         kGemmHardSwish = 32;

/// Direct 2-D f32 convolution of a padded NCHW input (dist_rt/kernels.h):
/// conv2d(n, c, h, w, f, kh, kw, sh, sw, dh, dw, oh, ow, in, in_sn, in_sc,
/// in_sh, weight, bias, out, out_sn, out_sf, out_sh, lo, hi, flags), lo and
/// hi f32, the others i64; the flags below.
inline constexpr llvm::StringLiteral kConv2dF32 = "dist_rt_conv2d_f32";
/// Its flags: accumulate into out; then SiLU or HardSwish; then ReLU; then
/// clip to [lo, hi] (ONNX's Clip, NaN kept).
inline constexpr int64_t kConvAccumulate = 1, kConvRelu = 2, kConvClip = 4,
                         kConvSilu = 8, kConvHardSwish = 16;
/// The same over groups (dist_rt/kernels.h): conv2d_group(groups, n, c, h,
/// w, f, kh, kw, sh, sw, dh, dw, oh, ow, in, in_sn, in_sg, in_sc, in_sh,
/// weight, bias, out, out_sn, out_sg, out_sf, out_sh, lo, hi, flags), c
/// and f counting one group's channels and filters.
inline constexpr llvm::StringLiteral kConv2dGroupF32 =
    "dist_rt_conv2d_group_f32";
/// A channels-last convolution on oneDNN (dist_rt/kernels.h):
/// conv2d_nhwc(groups, n, c, h, w, f, kh, kw, sh, sw, dh, dw, pt, pl, pb,
/// pr, oh, ow, in, weight, bias, out, lo, hi, flags) on dense [n, h, w,
/// groups*c] and [n, oh, ow, groups*f] images, the weight [groups*f, c, kh,
/// kw]; the flags of kConv2dF32 (NaN not kept under ReLU and Clip), and
/// kConvTransposed: the transposed convolution of ONNX's ConvTranspose, the
/// weight [groups*c, f, kh, kw], the padding what it crops.
inline constexpr llvm::StringLiteral kConv2dNhwcF32 = "dist_rt_conv2d_nhwc_f32";
inline constexpr int64_t kConvTransposed = 32;
/// The same in 3-D: conv3d_nhwc(groups, n, c, d, h, w, f, kd, kh, kw, sd,
/// sh, sw, dd, dh, dw, pf, pt, pl, pk, pb, pr, od, oh, ow, in, weight,
/// bias, out, lo, hi, flags) on [n, d, h, w, channels] images.
inline constexpr llvm::StringLiteral kConv3dNhwcF32 = "dist_rt_conv3d_nhwc_f32";
/// A pointwise channels-last convolution and the depthwise one that reads
/// its output, as one call (dist_rt/kernels.h): conv2d_nhwc_pwdw(n, c, h,
/// w, e, weight1, bias1, lo1, hi1, flags1, kh, kw, sh, sw, dh, dw, pt, pl,
/// pb, pr, oh, ow, weight2, bias2, lo2, hi2, flags2, in, out), the two
/// calls' flags without kConvAccumulate or kConvTransposed.
inline constexpr llvm::StringLiteral kConv2dNhwcPwDwF32 =
    "dist_rt_conv2d_nhwc_pwdw_f32";
/// A channels-last 2-D max pooling (dist_rt/kernels.h): maxpool2d_nhwc(n,
/// c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, in, out) on dense [n, h,
/// w, c] and [n, oh, ow, c] images, each window clipped to the image.
inline constexpr llvm::StringLiteral kMaxPool2dNhwcF32 =
    "dist_rt_maxpool2d_nhwc_f32";
/// The depth (channels x taps) up to which directConvApplies takes the
/// direct kernels whatever the image's size.
inline constexpr int64_t kMaxShallowConvDepth = 160;
/// Whether a 2-D f32 convolution or its weight gradient (one group only)
/// goes to the direct kernels above on a host with AVX-512, given its
/// groups, one group's input channels, the padded image size, kernel and
/// strides: not when it is 1x1 with unit strides and one group (a plain
/// product on the input, no columns to write). Otherwise when one group's
/// padded image is at most 256 KiB (the kernels have no cache blocking over
/// channels; measured against im2col + BLAS on the CPU benchmark's CNN, 3
/// to 32 channels on 8x8 to 32x32 images), or when im2col's columns for one
/// image would exceed 2 MiB (a core's L2 on the Xeon below), where writing
/// and re-reading them from memory costs more than the packed product on
/// them gains (one thread, Intel Xeon family 6 model 207: a U-Net's 3x3
/// layers on 128x128 images with 64 channels, 38 MB of columns, ran the
/// model 1.5x faster direct; DenseNet-121's 128 channels on 56x56, 14 MB,
/// 10% faster; with the runtime's kernels of 2026-12, ResNet-50's 64
/// channels on 56x56, 7 MB, and its 7x7 stem took the model from 1.04x to
/// 1.15x faster, six alternated runs, and DenseNet-121's 128 channels on
/// 28x28, 3.6 MB, 1.04x to 1.08x; a threshold of 1 MiB changed nothing
/// measurable). Shallow products too (a stem: one group's channels times
/// the kernel's taps at most kMaxShallowConvDepth, whatever the image): the
/// columns' few rows leave the packed tiles little to sum between their stores
/// (dist-conv-bench --layers on the Xeon below, one thread, batch 1 and 8:
/// 3 channels to 16 and 32 filters 3x3 at stride 2 on 224 x 224, the
/// MobileNets' and EfficientNets' stems, 1.6x-2.5x faster direct; 1, 3, 4,
/// 8 and 16 channels, 3x3 and 5x5, stride 1 and 2, 112 to 320 pixels a
/// side, 1.1x-2.3x; two threads 1.3x-4.3x). Grouped convolutions always: code
/// generation has no columns for them, only generic loops (RegNetX-400MF's
/// first grouped layer, 2 groups of 16 channels on 112x112 with stride 2, ran 6
/// ms of the model's 15 in such loops on the Xeon below). Code generation
/// (LowerLinearAlgebra.cpp) and the cost model (LayerCosts.cpp) both
/// follow it.
inline bool directConvApplies(int64_t channels, int64_t paddedH,
                              int64_t paddedW, int64_t kh, int64_t kw,
                              int64_t sh, int64_t sw, int64_t groups = 1) {
  if (groups > 1)
    return true;
  if (kh == 1 && kw == 1 && sh == 1 && sw == 1)
    return false;
  if (channels * paddedH * paddedW * 4 <= 256 * 1024 ||
      channels * kh * kw <= kMaxShallowConvDepth)
    return true;
  int64_t oh = paddedH >= kh ? (paddedH - kh) / sh + 1 : 0;
  int64_t ow = paddedW >= kw ? (paddedW - kw) / sw + 1 : 0;
  return channels * kh * kw * oh * ow * 4 > 2 * 1024 * 1024;
}

/// Its weight gradient: conv2d_wgrad(n, c, h, w, f, kh, kw, sh, sw, dh, dw,
/// oh, ow, in, in_sn, in_sc, in_sh, dy, dy_sn, dy_sf, dy_sh, dw, flags),
/// all i64; flag 1 accumulates into dw.
inline constexpr llvm::StringLiteral kConv2dWeightGradF32 =
    "dist_rt_conv2d_wgrad_f32";

/// Parallel loop over the runtime's thread pool (dist_rt/kernels.h):
/// parallel_for(n, void (*fn)(void *ctx, int64_t begin, int64_t end), ctx).
inline constexpr llvm::StringLiteral kParallelFor = "dist_rt_parallel_for";
/// void dist_rt_index_error(int64 index, int64 size, int64 node_name_ptr)
/// (dist_rt/kernels.h): an index input out of range.
inline constexpr llvm::StringLiteral kIndexError = "dist_rt_index_error";
/// void dist_rt_shape_error(int64 a, int64 b, int64 axis, int64 node_name_ptr)
/// (dist_rt/kernels.h): operand sizes unknown at compile time that differ.
inline constexpr llvm::StringLiteral kShapeError = "dist_rt_shape_error";
/// void dist_rt_value_error(int64 got, int64 expected, int64 element,
/// int64 input_name_ptr, int64 node_name_ptr) (dist_rt/kernels.h): an input
/// fed at run time disagrees with the shapes the model declares.
inline constexpr llvm::StringLiteral kValueError = "dist_rt_value_error";
/// void dist_rt_axes_error(int64 input_name_ptr, int64 node_name_ptr): axes
/// fed at run time that do not give the declared shape.
inline constexpr llvm::StringLiteral kAxesError = "dist_rt_axes_error";
/// void dist_rt_extent_error(int64 axis, int64 got, int64 expected,
/// int64 input_name_ptr, int64 node_name_ptr): pads or slice bounds fed at
/// run time that do not give the declared output extent.
inline constexpr llvm::StringLiteral kExtentError = "dist_rt_extent_error";
/// void dist_rt_unsupported_error(int64 what_ptr, int64 node_name_ptr):
/// inputs fed at run time ask for what the code does not do.
inline constexpr llvm::StringLiteral kUnsupportedError =
    "dist_rt_unsupported_error";
/// void dist_rt_input_error(int64 what_ptr, int64 input_name_ptr,
/// int64 node_name_ptr): an input fed at run time the op cannot take.
inline constexpr llvm::StringLiteral kInputError = "dist_rt_input_error";

/// Mesh collectives (dist_rt/kernels.h): start(ptr, count, dtype, reduce,
/// axis_mask) -> handle and wait(handle), all as i64.
inline constexpr llvm::StringLiteral kMeshAllReduceStart =
    "dist_rt_mesh_all_reduce_start";
inline constexpr llvm::StringLiteral kMeshAllReduceWait =
    "dist_rt_mesh_all_reduce_wait";
/// all_gather(src, dst, count, dtype, axis_mask): blocking, rank-major
/// concatenation of `count` elements from every rank of the axes.
inline constexpr llvm::StringLiteral kMeshAllGather = "dist_rt_mesh_all_gather";
/// coord(axis) -> this rank's coordinate along mesh axis `axis`.
inline constexpr llvm::StringLiteral kMeshCoord = "dist_rt_mesh_coord";
/// Pipeline transfers (dist_rt/kernels.h): send(ptr, bytes, peer, tag)
/// hands a copy of the bytes to stage `peer` without waiting for it;
/// recv(ptr, bytes, peer, tag) waits for the bytes stage `peer` sent with
/// that tag, for the micro-batch the runtime is running. All i64.
inline constexpr llvm::StringLiteral kPipelineSend = "dist_rt_pp_send";
inline constexpr llvm::StringLiteral kPipelineRecv = "dist_rt_pp_recv";
/// Reduction codes of dist_rt_mesh_all_reduce_start (DIST_RT_MESH_REDUCE_*).
inline constexpr int64_t kReduceSum = 0;
inline constexpr int64_t kReduceMax = 1;
inline constexpr int64_t kReduceMin = 2;
inline constexpr int64_t kReduceProd = 3;
inline constexpr int64_t kReduceAverage = 4;
/// Element type codes (DIST_RT_DTYPE_* in dist_rt/param_format.h).
inline constexpr int64_t kDTypeFloat = 1;
inline constexpr int64_t kDTypeDouble = 11;

/// Generic allocation functions the memref lowering calls
/// (finalize-memref-to-llvm with use-generic-functions).
inline constexpr llvm::StringLiteral kAlloc = "_mlir_memref_to_llvm_alloc";
inline constexpr llvm::StringLiteral kFree = "_mlir_memref_to_llvm_free";

/// Model descriptor type and entry calling convention (dist_rt/model.h).
inline constexpr unsigned kModelABIVersion = 12;
inline constexpr llvm::StringLiteral kModelDescType = "dist_rt_model_desc_t";
inline constexpr llvm::StringLiteral kTensorDescType = "dist_rt_tensor_desc_t";
inline constexpr llvm::StringLiteral kModelHeader = "dist_rt/model.h";

/// Generic model API the generated library wraps.
inline constexpr llvm::StringLiteral kModelCreate = "dist_rt_model_create";
inline constexpr llvm::StringLiteral kModelRun = "dist_rt_model_run";
inline constexpr llvm::StringLiteral kModelDestroy = "dist_rt_model_destroy";
inline constexpr llvm::StringLiteral kMain = "dist_rt_main";

} // namespace mlir::dist::runtime_abi

#endif // DIST_CODEGEN_RUNTIMEABI_H
