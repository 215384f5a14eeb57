// RUN: dist-opt %s --split-input-file --verify-diagnostics --dist-record-signature | FileCheck %s

// The interface is read from the dist module before lowering: parameters in
// declaration order (a split one with its mesh axis, dimension and blocks),
// the entry's inputs with their dimension names, its outputs, the mesh, and
// the training step's inputs, parameter roles and optimizer.
// CHECK: dist.signature = {
// CHECK-SAME: inputs = [{dim_names = ["batch", ""], dims = array<i64: -1, 4>, dtype = 1 : i64, name = "x"}]
// CHECK-SAME: mesh_axes = ["dp"], mesh_shape = array<i64: 2>
// CHECK-SAME: outputs = [{dims = array<i64: -1, 3>, dtype = 1 : i64, name = "y"}]
// CHECK-SAME: params = [{dims = array<i64: 4, 3>, dtype = 1 : i64, name = "w"}, {dims = array<i64: 4, 3>, dtype = 1 : i64, name = "w.momentum_buffer"}]
// CHECK-SAME: train = {ignore_index = -100 : i64
// CHECK-SAME: loss = "mse"
// CHECK-SAME: optimizer = "momentum"
// CHECK-SAME: param_roles = array<i64: 1, 2>
module {
  shard.grid @mesh(shape = 2) {dist.mesh_axes = ["dp"]}
  dist.param @w {trainable} : tensor<4x3xf32>
  func.func @main(%x: tensor<?x4xf32> {dist.name = "x", dist.dim_names = ["batch", ""]}) -> (tensor<?x3xf32> {dist.name = "y"}) {
    %w = dist.get_param @w : tensor<4x3xf32>
    %y = dist.matmul %x, %w : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
    return %y : tensor<?x3xf32>
  }
  func.func @train_step(%x: tensor<?x4xf32> {dist.name = "x"}, %l: tensor<?x3xf32> {dist.name = "label"}, %lr: tensor<f32>, %t: tensor<f32>) -> (tensor<f32> {dist.name = "loss"}) attributes {dist.train = {ignore_index = -100 : i64, label_classes = 0 : i64, loss = "mse", lr = 1.000000e-03 : f64, lr_schedule = "constant", optimizer = "momentum", warmup_steps = 0 : i64}, dist.train_step} {
    %c = dist.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
  dist.param @w.momentum_buffer {state} : tensor<4x3xf32>
}

// -----

// An element type without an ONNX code cannot cross the C API.
module {
  // expected-error @+1 {{'x' has element type 'index', which is not supported by codegen}}
  func.func @main(%x: tensor<4xindex> {dist.name = "x"}) -> tensor<4xindex> {
    return %x : tensor<4xindex>
  }
}
