// RUN: dist-opt %s --split-input-file --verify-diagnostics --dist-split-stages | FileCheck %s
// RUN: dist-opt %s --split-input-file --verify-diagnostics --dist-split-stages="schedule=zb-h1" | FileCheck %s --check-prefix=ZB

// Two layers over pp=2, two micro-batches: stage 0 sends h forward and
// receives its gradient; the loss is stage 1's; parameter gradients are
// summed into accumulators that the update reads as a mean and zeroes.
// CHECK: dist.pipeline = {layers = ["/fc1 .. /fc1", "/fc2 .. /fc2"], micro_batches = 2 : i64, schedule = "1f1b", stages = 2 : i64
// CHECK-LABEL: func.func @train_step_s0_forward(
// CHECK-SAME: dist.name = "x"
// CHECK-SAME: dist.pipeline_action = {action = "forward", stage = 0 : i64}
// CHECK: %[[H:.+]] = dist.matmul
// CHECK: dist.send %[[H]] to 1 tag [[$TAGH:[0-9]+]]
// CHECK-LABEL: func.func @train_step_s0_backward(
// CHECK: dist.recv from 1 tag [[$TAGG:[0-9]+]]
// CHECK: dist.set_param @s0.grad_acc
// CHECK-LABEL: func.func @train_step_s0_update(
// CHECK: %[[ACC:.+]] = dist.get_param @s0.grad_acc
// CHECK: dist.mul %[[ACC]], %{{.+}}
// CHECK: dist.set_param @w1
// CHECK: dist.set_param @s0.grad_acc.{{[0-9]+}}, %{{.+}} : tensor<4x8xf32>
// CHECK-LABEL: func.func @train_step_s1_forward(
// CHECK: dist.recv from 0 tag [[$TAGH]]
// CHECK-LABEL: func.func @train_step_s1_backward(
// CHECK-SAME: -> (tensor<f32> {dist.name = "loss"})
// CHECK: dist.send %{{.+}} to 0 tag [[$TAGG]]
// CHECK: dist.set_param @s1.grad_acc
// CHECK-LABEL: func.func @train_step_s1_update(
// CHECK-NOT: func.func @train_step(
// CHECK: dist.param @s0.grad_acc.{{[0-9]+}} {dist.grad_accumulator, state} : tensor<4x8xf32>

// ZB-H1 splits the backward: the input gradient stage 0 needs is in
// backward_input, the weight gradient in backward_weight, which takes the
// backward-input's output gradient as a stash.
// ZB: schedule = "zb-h1"
// ZB-LABEL: func.func @train_step_s1_backward_input(
// ZB: dist.send
// ZB-LABEL: func.func @train_step_s1_backward_weight(
// ZB-SAME: dist.stash
// ZB-NOT: dist.send
// ZB: dist.set_param @s1.grad_acc
#f1 = loc("/fc1/MatMul")
#f2 = loc("/fc2/MatMul")
#b1 = loc("dist.bwd"("/fc1/MatMul"))
#b2 = loc("dist.bwd"("/fc2/MatMul"))
#u1 = loc("dist.update"("w1"))
#u2 = loc("dist.update"("w2"))
module attributes {dist.mesh = #dist.mesh<pp = 2>} {
  dist.param @w1 {trainable} : tensor<4x8xf32>
  dist.param @w2 {trainable} : tensor<8x3xf32>
  func.func @train_step(%x: tensor<2x4xf32> {dist.name = "x"}, %l: tensor<2x3xf32> {dist.name = "label"}, %lr: tensor<f32> {dist.name = "lr"}, %t: tensor<f32> {dist.name = "step"}) -> (tensor<f32> {dist.name = "loss"}) attributes {dist.train = {micro_batches = 2 : i64}, dist.train_step} {
    %w1 = dist.get_param @w1 : tensor<4x8xf32>
    %h = dist.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32> loc(#f1)
    %w2 = dist.get_param @w2 : tensor<8x3xf32>
    %y = dist.matmul %h, %w2 : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32> loc(#f2)
    %d = dist.sub %y, %l : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc(#b2)
    %ax = dist.constant dense<[0, 1]> : tensor<2xi64>
    %loss = dist.reduce_mean %d axes %ax {keepdims = 0 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32> loc(#b2)
    %ht = dist.transpose %h {perm = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32> loc(#b2)
    %g2 = dist.matmul %ht, %d : (tensor<8x2xf32>, tensor<2x3xf32>) -> tensor<8x3xf32> loc(#b2)
    %w2t = dist.transpose %w2 {perm = array<i64: 1, 0>} : (tensor<8x3xf32>) -> tensor<3x8xf32> loc(#b2)
    %dh = dist.matmul %d, %w2t : (tensor<2x3xf32>, tensor<3x8xf32>) -> tensor<2x8xf32> loc(#b2)
    %xt = dist.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32> loc(#b1)
    %g1 = dist.matmul %xt, %dh : (tensor<4x2xf32>, tensor<2x8xf32>) -> tensor<4x8xf32> loc(#b1)
    %s1 = dist.mul %lr, %g1 : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#u1)
    %n1 = dist.sub %w1, %s1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(#u1)
    dist.set_param @w1, %n1 : tensor<4x8xf32> loc(#u1)
    %s2 = dist.mul %lr, %g2 : (tensor<f32>, tensor<8x3xf32>) -> tensor<8x3xf32> loc(#u2)
    %n2 = dist.sub %w2, %s2 : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32> loc(#u2)
    dist.set_param @w2, %n2 : tensor<8x3xf32> loc(#u2)
    return %loss : tensor<f32>
  }
}

// -----

// A weight read by both stages (tied): stage 1 sums its share of the
// gradient over the micro-batches and its update sends the mean to stage
// 0's update, which adds its own share, updates the weight and sends the
// new value to stage 1's sync.
// CHECK-LABEL: func.func @train_step_s0_update(
// CHECK: %[[SHARE:.+]] = dist.recv from 1 tag [[$SHARE:[0-9]+]]
// CHECK: dist.add %{{.+}}, %[[SHARE]]
// CHECK: %[[NEW:.+]] = dist.sub
// CHECK: dist.send %[[NEW]] to 1 tag [[$NEW:[0-9]+]]
// CHECK: dist.set_param @w, %[[NEW]]
// CHECK-LABEL: func.func @train_step_s1_backward(
// CHECK: dist.set_param @s1.grad_acc
// CHECK-LABEL: func.func @train_step_s1_update(
// CHECK: dist.send %{{.+}} to 0 tag [[$SHARE]]
// CHECK-NOT: dist.set_param @w
// CHECK-LABEL: func.func @train_step_s1_sync(
// CHECK-SAME: dist.pipeline_action = {action = "sync", stage = 1 : i64}
// CHECK: %[[R:.+]] = dist.recv from 0 tag [[$NEW]]
// CHECK: dist.set_param @w, %[[R]]
#f1 = loc("/fc1/MatMul")
#f2 = loc("/fc2/MatMul")
#b1 = loc("dist.bwd"("/fc1/MatMul"))
#b2 = loc("dist.bwd"("/fc2/MatMul"))
#u = loc("dist.update"("w"))
module attributes {dist.mesh = #dist.mesh<pp = 2>} {
  dist.param @w {trainable} : tensor<4x4xf32>
  func.func @train_step(%x: tensor<2x4xf32> {dist.name = "x"}, %lr: tensor<f32> {dist.name = "lr"}, %t: tensor<f32> {dist.name = "step"}) -> (tensor<f32> {dist.name = "loss"}) attributes {dist.train = {micro_batches = 2 : i64}, dist.train_step} {
    %w = dist.get_param @w : tensor<4x4xf32>
    %h = dist.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc(#f1)
    %y = dist.matmul %h, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc(#f2)
    %ax = dist.constant dense<[0, 1]> : tensor<2xi64>
    %loss = dist.reduce_mean %y axes %ax {keepdims = 0 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32> loc(#b2)
    %dy = dist.constant dense<0.125> : tensor<2x4xf32>
    %ht = dist.transpose %h {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32> loc(#b2)
    %g2 = dist.matmul %ht, %dy : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32> loc(#b2)
    %wt = dist.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc(#b2)
    %dh = dist.matmul %dy, %wt : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc(#b2)
    %xt = dist.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32> loc(#b1)
    %g1 = dist.matmul %xt, %dh : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32> loc(#b1)
    %g = dist.add %g1, %g2 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(#b1)
    %s = dist.mul %lr, %g : (tensor<f32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(#u)
    %n = dist.sub %w, %s : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(#u)
    dist.set_param @w, %n : tensor<4x4xf32> loc(#u)
    return %loss : tensor<f32>
  }
}
