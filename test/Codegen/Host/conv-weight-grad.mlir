// RUN: dist-opt %s --split-input-file | FileCheck %s --check-prefix=OPS
// RUN: dist-opt %s --split-input-file --dist-lower-to-linalg=conv=im2col \
// RUN:   --mlir-print-local-scope | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-lower-to-linalg=conv=im2col \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:   --dist-contractions-to-runtime --canonicalize | FileCheck %s --check-prefix=CALL

// (im2col + GEMM, the lowering without a direct convolution kernel: see
// conv-lowering-choice.mlir and direct-conv.mlir for the direct one.)
//
// The weight gradient of a 3x3, pad-1 convolution of x[8, 4, 6, 6] with
// dy[8, 16, 6, 6]: dw[f, (c, kh, kw)] = sum over n and the 36 positions of
// dy[n, f, p] * col[n, (c, kh, kw), p], with col the forward convolution's
// im2col columns (unit strides: one copy per output row). One 16 x 36 x 36
// product per sample (the columns read transposed), summed into dw: the
// runtime gets a batch of 8 with a zero output stride.

// OPS-LABEL: func.func @dw_3x3
// OPS: dist.conv_weight_grad %{{.*}}, %{{.*}} {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<8x4x6x6xf32>, tensor<8x16x6x6xf32>) -> tensor<16x4x3x3xf32>

// CHECK-LABEL: func.func @dw_3x3(
// CHECK: tensor.pad
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: outs(%{{.*}} : tensor<8x4x3x3x6x6xf32>)
// CHECK: %[[COL:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3], [4, 5]] : tensor<8x4x3x3x6x6xf32> into tensor<8x36x36xf32>
// CHECK: %[[DY:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<8x16x6x6xf32> into tensor<8x16x36xf32>
// CHECK: %[[ZERO:.*]] = linalg.fill {{.*}} -> tensor<16x36xf32>
// CHECK: %[[DW:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1, d2)>], iterator_types = ["reduction", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[DY]], %[[COL]] : tensor<8x16x36xf32>, tensor<8x36x36xf32>) outs(%[[ZERO]] : tensor<16x36xf32>)
// CHECK: tensor.expand_shape %[[DW]] {{\[}}[0], [1, 2, 3]] output_shape [16, 4, 3, 3] : tensor<16x36xf32> into tensor<16x4x3x3xf32>

// Arguments: batch, m, n, k; dy's pointer and strides (sample, m, k);
// the columns' pointer, strides (k, n); dw's pointer, strides (batch: 0,
// m, n); the columns' sample stride. dw was only filled with zeros: the
// runtime sets it (the first sample's product sets it, the others add) and
// the fill goes.
// CALL-LABEL: func.func @dw_3x3(
// CALL-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CALL-DAG: %[[C8:.*]] = arith.constant 8 : i64
// CALL-DAG: %[[C16:.*]] = arith.constant 16 : i64
// CALL-DAG: %[[C36:.*]] = arith.constant 36 : i64
// CALL-DAG: %[[C1:.*]] = arith.constant 1 : i64
// CALL-DAG: %[[C576:.*]] = arith.constant 576 : i64
// CALL-DAG: %[[C1296:.*]] = arith.constant 1296 : i64
// CALL-NOT: linalg.fill
// CALL: call @dist_rt_gemm_set_f32(%[[C8]], %[[C16]], %[[C36]], %[[C36]], %{{.*}}, %[[C576]], %[[C36]], %[[C1]], %{{.*}}, %[[C1]], %[[C36]], %{{.*}}, %[[C0]], %[[C36]], %[[C1]], %[[C1296]])
func.func @dw_3x3(%x: tensor<8x4x6x6xf32>, %dy: tensor<8x16x6x6xf32>) -> tensor<16x4x3x3xf32> {
  %0 = dist.conv_weight_grad %x, %dy {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<8x4x6x6xf32>, tensor<8x16x6x6xf32>) -> tensor<16x4x3x3xf32>
  return %0 : tensor<16x4x3x3xf32>
}

// -----

// Stride 2, dilation 2 and uneven pads (1 before, 0 after): the padded
// input is cut to the rows the taps reach, and im2col reads every second
// row and column.
// OPS-LABEL: func.func @dw_strided
// OPS: dist.conv_weight_grad {{.*}} -> tensor<3x2x3x3xf32>
// CHECK-LABEL: func.func @dw_strided(
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2 * 2, d5 * 2 + d3 * 2)>
// CHECK: iterator_types = ["reduction", "parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<1x3x4xf32>, tensor<1x18x4xf32>)
func.func @dw_strided(%x: tensor<1x2x7x7xf32>, %dy: tensor<1x3x2x2xf32>) -> tensor<3x2x3x3xf32> {
  %0 = dist.conv_weight_grad %x, %dy {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : (tensor<1x2x7x7xf32>, tensor<1x3x2x2xf32>) -> tensor<3x2x3x3xf32>
  return %0 : tensor<3x2x3x3xf32>
}
