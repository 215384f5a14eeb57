// RUN: dist-opt %s --split-input-file --verify-diagnostics --dist-partition | FileCheck %s

// dp=2 over a step built at one rank's batch (8 of the forward's 16): the
// mesh becomes the grid, the gradient (a bucket of one, reduced as it is) and the loss are
// averaged over it, and the inference function, which keeps samples apart,
// runs on each rank's rows.
// CHECK: shard.grid @mesh(shape = 2) {dist.mesh_axes = ["dp"]}
// CHECK-NOT: dist.mesh =
// CHECK-LABEL: func.func @main(
// CHECK-SAME: tensor<8x4xf32>
// CHECK-SAME: dist.infer_batch_split = 2
// CHECK-LABEL: func.func @train_step(
// CHECK: shard.all_reduce {{.*}} on @mesh grid_axes = [0] reduction = {{ *}}average : tensor<4x3xf32>
// CHECK: shard.all_reduce {{.*}} reduction = {{ *}}average : tensor<f32>
module attributes {dist.mesh = #dist.mesh<dp = 2>} {
  dist.param @w {trainable} : tensor<4x3xf32>
  func.func @main(%x: tensor<16x4xf32> {dist.name = "x"}) -> (tensor<16x3xf32> {dist.name = "y"}) {
    %w = dist.get_param @w : tensor<4x3xf32>
    %y = dist.matmul %x, %w : (tensor<16x4xf32>, tensor<4x3xf32>) -> tensor<16x3xf32>
    return %y : tensor<16x3xf32>
  }
  func.func @train_step(%x: tensor<8x4xf32> {dist.name = "x"}, %l: tensor<8x3xf32> {dist.name = "label"}, %lr: tensor<f32> {dist.name = "lr"}, %t: tensor<f32> {dist.name = "step"}) -> (tensor<f32> {dist.name = "loss"}) attributes {dist.train = {batch_split_dp = 2 : i64}, dist.train_step} {
    %w = dist.get_param @w : tensor<4x3xf32>
    %y = dist.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %d = dist.sub %y, %l : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32> loc(#bwd)
    %xt = dist.transpose %x {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32> loc(#bwd)
    %g = dist.matmul %xt, %d : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc(#bwd)
    %ax = dist.constant dense<[0, 1]> : tensor<2xi64>
    %loss = dist.reduce_mean %d axes %ax {keepdims = 0 : i64} : (tensor<8x3xf32>, tensor<2xi64>) -> tensor<f32> loc(#bwd)
    %s = dist.mul %lr, %g : (tensor<f32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc(#upd)
    %n = dist.sub %w, %s : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc(#upd)
    dist.set_param @w, %n : tensor<4x3xf32> loc(#upd)
    return %loss : tensor<f32>
  }
}
#bwd = loc("dist.bwd"("/fc"))
#upd = loc("dist.update"("w"))

// -----

// Pipeline stages over dp (dist-split-stages' functions): each stage's
// update averages the gradient sums of its accumulators over its dp group,
// fused into one bucket before the update reads them; the sums are read
// first, wherever the update read them. Forward and backward functions
// are left alone (no inference split either).
// CHECK-LABEL: func.func @s0_backward(
// CHECK-NOT: shard.all_reduce
// CHECK-NOT: dist.infer_batch_whole
// CHECK-LABEL: func.func @s0_update(
// CHECK: %[[A:.+]] = dist.get_param @acc.a
// CHECK: %[[B:.+]] = dist.get_param @acc.b
// CHECK: %[[FLAT:.+]] = dist.reshape %[[B]]
// CHECK: %[[CAT:.+]] = dist.concat %[[A]], %[[FLAT]]
// CHECK: %[[SUM:.+]] = shard.all_reduce %[[CAT]] on @mesh grid_axes = [1] reduction = average : tensor<12xf32>
// CHECK: dist.slice %[[SUM]]
// CHECK: dist.set_param @w
// CHECK: dist.set_param @v
module attributes {dist.mesh = #dist.mesh<pp = 2, dp = 2>} {
  dist.param @w {trainable} : tensor<4xf32>
  dist.param @v {trainable} : tensor<2x4xf32>
  dist.param @acc.a {dist.grad_accumulator, state} : tensor<4xf32>
  dist.param @acc.b {dist.grad_accumulator, state} : tensor<2x4xf32>
  func.func @s0_backward(%x: tensor<4xf32> {dist.name = "x"}) attributes {dist.pipeline_action = {action = "backward", stage = 0 : i64}} {
    %a = dist.get_param @acc.a : tensor<4xf32>
    %s = dist.add %a, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    dist.set_param @acc.a, %s : tensor<4xf32>
    return
  }
  func.func @s0_update(%lr: tensor<f32> {dist.name = "lr"}) attributes {dist.pipeline_action = {action = "update", stage = 0 : i64}} {
    %a = dist.get_param @acc.a : tensor<4xf32>
    %w = dist.get_param @w : tensor<4xf32>
    %sa = dist.mul %lr, %a : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
    %nw = dist.sub %w, %sa : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    dist.set_param @w, %nw : tensor<4xf32>
    %b = dist.get_param @acc.b : tensor<2x4xf32>
    %v = dist.get_param @v : tensor<2x4xf32>
    %sb = dist.mul %lr, %b : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %nv = dist.sub %v, %sb : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.set_param @v, %nv : tensor<2x4xf32>
    return
  }
}

// -----

// Without a mesh one process runs the module as it is.
// CHECK-LABEL: func.func @alone(
// CHECK-NOT: shard
func.func @alone(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// tp needs the forward graph split first (dist-tensor-parallel).
// expected-error @+1 {{dist-partition: the mesh has tp=2: split the forward graph with dist-tensor-parallel first}}
module attributes {dist.mesh = #dist.mesh<tp = 2>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
