// RUN: dist-opt %s --split-input-file --verify-diagnostics --dist-strip-mesh | FileCheck %s

// After bufferization the collectives are runtime calls: the mesh
// declaration goes.
// CHECK-LABEL: module
// CHECK-NOT: shard.grid
// CHECK: func.func @f
module {
  shard.grid @mesh(shape = 2) {dist.mesh_axes = ["dp"]}
  func.func @f(%x: memref<4xf32>) -> memref<4xf32> {
    return %x : memref<4xf32>
  }
}

// -----

// A shard op left over is one host codegen does not lower.
module {
  shard.grid @mesh(shape = 2) {dist.mesh_axes = ["dp"]}
  func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{is not supported by host codegen}}
    %y = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
