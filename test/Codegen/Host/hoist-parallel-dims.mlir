// RUN: dist-opt %s --split-input-file --dist-lower-to-linalg \
// RUN:   --dist-hoist-parallel-dims | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-lower-to-linalg \
// RUN:   --dist-hoist-parallel-dims --one-shot-bufferize \
// RUN:   --convert-linalg-to-parallel-loops | FileCheck %s --check-prefix=LOOPS
// With innermost (the CUDA target) the innermost parallel dimension moves
// in front too.
// RUN: dist-opt %s --split-input-file --dist-lower-to-linalg \
// RUN:   --dist-hoist-parallel-dims=innermost=true | FileCheck %s --check-prefix=GPU

// Batch-norm statistics of an NCHW tensor, summed over N, H and W: C moves
// in front of N, so the outermost loop is parallel (on the runtime's pool).
// CHECK-LABEL: func.func @channel_sums
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "reduction", "reduction"]
// CHECK-SAME: ins(%{{.*}} : tensor<8x16x32x32xf32>)
// LOOPS-LABEL: func.func @channel_sums
// LOOPS:      memref.store %cst
// LOOPS:      scf.parallel (%[[C:.*]]) = (%{{.*}}) to (%c16)
// LOOPS-NEXT:   scf.for %[[N:.*]] = %{{.*}} to %c8
// LOOPS-NEXT:     scf.for %[[H:.*]] = %{{.*}} to %c32
// LOOPS-NEXT:       scf.for %[[W:.*]] = %{{.*}} to %c32
// LOOPS:              memref.load %{{.*}}[%[[N]], %[[C]], %[[H]], %[[W]]]
func.func @channel_sums(%x: tensor<8x16x32x32xf32>) -> tensor<16xf32> {
  %axes = dist.constant dense<[0, 2, 3]> : tensor<3xi64>
  %0 = dist.reduce_sum %x axes %axes {keepdims = 0 : i64} : (tensor<8x16x32x32xf32>, tensor<3xi64>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// A bias gradient sums rows: its parallel dimension is the innermost,
// contiguous one and stays there.
// CHECK-LABEL: func.func @row_sums
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "parallel"]
// GPU-LABEL: func.func @row_sums
// GPU: linalg.generic
// GPU-SAME: iterator_types = ["parallel", "reduction"]
func.func @row_sums(%x: tensor<64x512xf32>) -> tensor<512xf32> {
  %axes = dist.constant dense<[0]> : tensor<1xi64>
  %0 = dist.reduce_sum %x axes %axes {keepdims = 0 : i64} : (tensor<64x512xf32>, tensor<1xi64>) -> tensor<512xf32>
  return %0 : tensor<512xf32>
}

// -----

// Sums over the middle dimension of [B, T, D]: D is innermost and stays;
// B already leads.
// CHECK-LABEL: func.func @middle_sums
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "parallel"]
// GPU-LABEL: func.func @middle_sums
// GPU: linalg.generic
// GPU-SAME: iterator_types = ["parallel", "parallel", "reduction"]
func.func @middle_sums(%x: tensor<4x64x256xf32>) -> tensor<4x256xf32> {
  %axes = dist.constant dense<[1]> : tensor<1xi64>
  %0 = dist.reduce_sum %x axes %axes {keepdims = 0 : i64} : (tensor<4x64x256xf32>, tensor<1xi64>) -> tensor<4x256xf32>
  return %0 : tensor<4x256xf32>
}

// -----

// Sums over the leading two of [T, B, D] with a parallel one between:
// [reduction, parallel, reduction, parallel] becomes B first, then the
// reductions in their order, D last.
// CHECK-LABEL: func.func @interleaved
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "reduction", "parallel"]
func.func @interleaved(%x: tensor<3x4x5x6xf32>) -> tensor<4x6xf32> {
  %axes = dist.constant dense<[0, 2]> : tensor<2xi64>
  %0 = dist.reduce_sum %x axes %axes {keepdims = 0 : i64} : (tensor<3x4x5x6xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}
