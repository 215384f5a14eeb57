// RUN: dist-opt %s --dist-drop-param-results --split-input-file | FileCheck %s

// A training step's updated parameters (results marked dist.param_update,
// which are the parameter arguments after bufferization) leave the
// signature; the loss stays.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: -> memref<f32>
// CHECK: return %{{.*}} : memref<f32>
func.func @step(%w: memref<4xf32> {dist.param = "w"}, %x: memref<4xf32>)
    -> (memref<f32>, memref<4xf32> {dist.param_update}) {
  %loss = memref.alloc() : memref<f32>
  return %loss, %w : memref<f32>, memref<4xf32>
}

// -----

// An output that is an input, or a parameter returned as an output (not an
// update), is returned as a fresh copy, dynamic extents included: the
// caller owns what comes back.
// CHECK-LABEL: func.func @identity(
// CHECK-SAME: %[[X:.*]]: memref<?x3xf32>, %[[W:.*]]: memref<2xf32>
// CHECK-SAME: -> (memref<?x3xf32>, memref<2xf32>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[N:.*]] = memref.dim %[[X]], %[[C0]]
// CHECK: %[[XC:.*]] = memref.alloc(%[[N]]) {alignment = 64 : i64} : memref<?x3xf32>
// CHECK: memref.copy %[[X]], %[[XC]]
// CHECK: %[[WC:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2xf32>
// CHECK: memref.copy %[[W]], %[[WC]]
// CHECK: return %[[XC]], %[[WC]]
func.func @identity(%x: memref<?x3xf32>, %w: memref<2xf32> {dist.param = "w"})
    -> (memref<?x3xf32>, memref<2xf32>) {
  return %x, %w : memref<?x3xf32>, memref<2xf32>
}
