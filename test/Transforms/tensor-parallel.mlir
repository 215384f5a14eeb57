// RUN: dist-opt %s --split-input-file --verify-diagnostics --dist-tensor-parallel | FileCheck %s
// RUN: not dist-opt %s --split-input-file --dist-tensor-parallel=mesh=ep=2 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD
// BAD: error: dist-tensor-parallel: mesh: unknown mesh axis 'ep' (expected dp: data parallel, tp: tensor parallel, pp: pipeline stages)

// The module's mesh has tp=2: the first product is split by columns (each
// rank keeps 4 of 8 output features), the second by rows, and their
// partial sums are added over tp; the mesh is declared for the
// collectives.
// CHECK: shard.grid @mesh(shape = 2) {dist.mesh_axes = ["tp"]}
// CHECK-DAG: dist.param @w1 {dist.shard = {axis = 0 : i64, blocks = 1 : i64, dim = 1 : i64}} : tensor<4x4xf32>
// CHECK-DAG: dist.param @w2 {dist.shard = {axis = 0 : i64, blocks = 1 : i64, dim = 0 : i64}} : tensor<4x3xf32>
// CHECK: %[[X:.*]] = dist.mesh_copy
// CHECK: dist.matmul %[[X]], %{{.*}} : (tensor<16x4xf32>, tensor<4x4xf32>) -> tensor<16x4xf32>
// CHECK: %[[P:.*]] = dist.matmul %{{.*}}, %{{.*}} : (tensor<16x4xf32>, tensor<4x3xf32>) -> tensor<16x3xf32>
// CHECK-NEXT: shard.all_reduce %[[P]] on @mesh grid_axes = [0]
module attributes {dist.mesh = #dist.mesh<tp = 2>} {
  dist.param @w1 : tensor<4x8xf32>
  dist.param @w2 : tensor<8x3xf32>
  func.func @main(%x: tensor<16x4xf32>) -> tensor<16x3xf32> {
    %w1 = dist.get_param @w1 : tensor<4x8xf32>
    %w2 = dist.get_param @w2 : tensor<8x3xf32>
    %h = dist.matmul %x, %w1 : (tensor<16x4xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    %r = dist.relu %h : (tensor<16x8xf32>) -> tensor<16x8xf32>
    %y = dist.matmul %r, %w2 : (tensor<16x8xf32>, tensor<8x3xf32>) -> tensor<16x3xf32>
    return %y : tensor<16x3xf32>
  }
}

// -----

// Without a tp axis there is nothing to split: the module stays as it is.
// CHECK-LABEL: module attributes {dist.mesh = #dist.mesh<dp = 2>}
// CHECK-NOT: shard.grid
// CHECK: dist.param @w : tensor<4x8xf32>
module attributes {dist.mesh = #dist.mesh<dp = 2>} {
  dist.param @w : tensor<4x8xf32>
  func.func @main(%x: tensor<16x4xf32>) -> tensor<16x8xf32> {
    %w = dist.get_param @w : tensor<4x8xf32>
    %h = dist.matmul %x, %w : (tensor<16x4xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    return %h : tensor<16x8xf32>
  }
}

// -----

// A step built from the unsplit forward graph cannot be split afterwards.
module attributes {dist.mesh = #dist.mesh<tp = 2>} {
  dist.param @w : tensor<4x8xf32>
  func.func @main(%x: tensor<16x4xf32>) -> tensor<16x8xf32> {
    %w = dist.get_param @w : tensor<4x8xf32>
    %h = dist.matmul %x, %w : (tensor<16x4xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    return %h : tensor<16x8xf32>
  }
  // expected-error @+1 {{tensor parallelism splits the forward function before the training step is built}}
  func.func @train_step(%x: tensor<16x4xf32>, %lr: tensor<f32>, %t: tensor<f32>) -> tensor<f32> attributes {dist.train_step} {
    %c = dist.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}
