// RUN: dist-opt %s --dist-graph-opt-pipeline | FileCheck %s

// The graph-opt phase refines what the graph's types leave open: here a
// function written with a dynamic result type whose shape its operands
// determine (the importer does this as it reads a model; IR from a file or
// from passes may need it). The two products stay two: merging them would
// change the kernels codegen picks.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: -> tensor<2x4xf32>
// CHECK: dist.matmul {{.*}} -> tensor<2x4xf32>
// CHECK: dist.matmul {{.*}} -> tensor<2x4xf32>
// CHECK: dist.add {{.*}} -> tensor<2x4xf32>
func.func @main(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<?x4xf32> {
  %a = dist.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %b = dist.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %s = dist.add %a, %b : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %s : tensor<?x4xf32>
}
