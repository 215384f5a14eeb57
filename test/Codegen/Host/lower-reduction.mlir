// RUN: dist-opt %s --dist-lower-to-linalg | FileCheck %s

// Reductions, arg reductions, softmax, normalisation and pooling become
// linalg.generic reductions and parallel maps.

// CHECK-LABEL: func.func @reduce_sum_axis1
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK-NOT: tensor.expand_shape
// CHECK: return %{{.*}} : tensor<?xf32>
func.func @reduce_sum_axis1(%x: tensor<?x10xf32>) -> tensor<?xf32> {
  %axes = dist.constant dense<[1]> : tensor<1xi64>
  %0 = dist.reduce_sum %x axes %axes {keepdims = 0 : i64} : (tensor<?x10xf32>, tensor<1xi64>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// Mean with keepdims: sum, divide by the count, expand the reduced dim.
// CHECK-LABEL: func.func @reduce_mean_keepdims
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel"]
// CHECK: arith.divf
// CHECK: tensor.expand_shape
// CHECK-SAME: into tensor<?x1xf32>
func.func @reduce_mean_keepdims(%x: tensor<?x10xf32>) -> tensor<?x1xf32> {
  %axes = dist.constant dense<[-1]> : tensor<1xi64>
  %0 = dist.reduce_mean %x axes %axes : (tensor<?x10xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  return %0 : tensor<?x1xf32>
}

// Without axes every dimension is reduced; unsigned max uses maxui.
// CHECK-LABEL: func.func @reduce_max_all_unsigned
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "reduction"]
// CHECK: arith.maxui
// CHECK: return %{{.*}} : tensor<i8>
func.func @reduce_max_all_unsigned(%x: tensor<3x4xui8>) -> tensor<ui8> {
  %0 = dist.reduce_max %x {keepdims = 0 : i64} : (tensor<3x4xui8>) -> tensor<ui8>
  return %0 : tensor<ui8>
}

// Empty axes with noop_with_empty_axes: the input itself.
// CHECK-LABEL: func.func @reduce_sum_noop
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @reduce_sum_noop(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %axes = dist.constant dense<> : tensor<0xi64>
  %0 = dist.reduce_sum %x axes %axes {noop_with_empty_axes = 1 : i64} : (tensor<3x4xf32>, tensor<0xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @arg_max
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<?xf32>, tensor<?xi64>)
// CHECK: linalg.index 1
// CHECK: arith.select
// CHECK: arith.select
// CHECK: return %{{.*}} : tensor<?xi64>
func.func @arg_max(%x: tensor<?x10xf32>) -> tensor<?xi64> {
  %0 = dist.arg_max %x {axis = 1 : i64, keepdims = 0 : i64} : (tensor<?x10xf32>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// Softmax: max, then e = exp(x - max) written while it is summed, then
// e / sum in place of e: one exponential per element.
// CHECK-LABEL: func.func @softmax
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: %[[ES:.*]]:2 = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: %[[E:.*]] = math.exp
// CHECK: %[[S:.*]] = arith.addf %{{.*}}, %[[E]]
// CHECK: linalg.yield %[[E]], %[[S]]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK-SAME: ins(%[[ES]]#1 : tensor<?xf32>) outs(%[[ES]]#0 : tensor<?x10xf32>)
// CHECK-NOT: math.exp
// CHECK: arith.divf %out, %in
// CHECK-NOT: math.exp
// CHECK: return
func.func @softmax(%x: tensor<?x10xf32>) -> tensor<?x10xf32> {
  %0 = dist.softmax %x {axis = -1 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
  return %0 : tensor<?x10xf32>
}

// CHECK-LABEL: func.func @log_softmax_f16
// CHECK: arith.extf
// CHECK: math.log
// CHECK: arith.truncf
func.func @log_softmax_f16(%x: tensor<4x10xf16>) -> tensor<4x10xf16> {
  %0 = dist.log_softmax %x {axis = 1 : i64} : (tensor<4x10xf16>) -> tensor<4x10xf16>
  return %0 : tensor<4x10xf16>
}

// Layer normalisation over the last dim; mean and inv_std_dev keep it as 1.
// CHECK-LABEL: func.func @layer_norm
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: math.sqrt
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: tensor.expand_shape
// CHECK-SAME: into tensor<?x8x1xf32>
func.func @layer_norm(%x: tensor<?x8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>)
    -> (tensor<?x8x64xf32>, tensor<?x8x1xf32>, tensor<?x8x1xf32>) {
  %0:3 = dist.layer_norm %x, %g bias %b {axis = -1 : i64} : (tensor<?x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<?x8x64xf32>, tensor<?x8x1xf32>, tensor<?x8x1xf32>)
  return %0#0, %0#1, %0#2 : tensor<?x8x64xf32>, tensor<?x8x1xf32>, tensor<?x8x1xf32>
}

// Inference batch normalisation is a single parallel map.
// CHECK-LABEL: func.func @batch_norm
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK: math.sqrt
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @batch_norm(%x: tensor<?x16x8x8xf32>, %c: tensor<16xf32>) -> tensor<?x16x8x8xf32> {
  %0:3 = dist.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
  return %0#0 : tensor<?x16x8x8xf32>
}

// Max pooling without used indices: a window reduction; indices are zeros.
// CHECK-LABEL: func.func @max_pool
// CHECK-NOT: tensor.pad
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.maximumf
// CHECK: linalg.fill
// CHECK: return %{{.*}} : tensor<1x3x16x16xf32>
func.func @max_pool(%x: tensor<1x3x32x32xf32>) -> tensor<1x3x16x16xf32> {
  %0, %1 = dist.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x32x32xf32>) -> (tensor<1x3x16x16xf32>, tensor<1x3x16x16xi64>)
  return %0 : tensor<1x3x16x16xf32>
}

// With used indices the window reduction has two results.
// CHECK-LABEL: func.func @max_pool_indices
// CHECK: tensor.pad
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<1x1x5x5xf32>, tensor<1x1x5x5xi64>)
// CHECK: linalg.index
// CHECK: arith.select
func.func @max_pool_indices(%x: tensor<1x1x5x5xf32>) -> (tensor<1x1x5x5xf32>, tensor<1x1x5x5xi64>) {
  %0, %1 = dist.max_pool %x {kernel_shape = array<i64: 5, 5>, pads = array<i64: 2, 2, 2, 2>} : (tensor<1x1x5x5xf32>) -> (tensor<1x1x5x5xf32>, tensor<1x1x5x5xi64>)
  return %0, %1 : tensor<1x1x5x5xf32>, tensor<1x1x5x5xi64>
}

// Average pooling with padding: zero padding, a sum window, then division
// by per-dimension counts of the input positions in each window.
// CHECK-LABEL: func.func @average_pool_pads
// CHECK: tensor.pad
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.addf
// CHECK: arith.constant dense<
// CHECK: linalg.generic
// CHECK: arith.divf
func.func @average_pool_pads(%x: tensor<?x3x8x8xf32>) -> tensor<?x3x8x8xf32> {
  %0 = dist.average_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<?x3x8x8xf32>) -> tensor<?x3x8x8xf32>
  return %0 : tensor<?x3x8x8xf32>
}

// CHECK-LABEL: func.func @global_average_pool
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.divf
// CHECK: tensor.expand_shape
// CHECK-SAME: into tensor<?x64x1x1xf32>
func.func @global_average_pool(%x: tensor<?x64x7x7xf32>) -> tensor<?x64x1x1xf32> {
  %0 = dist.global_average_pool %x : (tensor<?x64x7x7xf32>) -> tensor<?x64x1x1xf32>
  return %0 : tensor<?x64x1x1xf32>
}
