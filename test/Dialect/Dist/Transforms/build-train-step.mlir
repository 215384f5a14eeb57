// RUN: dist-opt %s --split-input-file --verify-diagnostics \
// RUN:   --dist-build-train-step="loss=mse optimizer=momentum" --cse | FileCheck %s
// RUN: not dist-opt %s --split-input-file --dist-build-train-step="optimizer=lamb" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=OPTION
// OPTION: error: dist-build-train-step option optimizer: unknown optimizer 'lamb' (expected sgd, momentum, adam or adamw)
// RUN: not dist-opt %s --split-input-file --dist-build-train-step="beta2=1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BETA
// BETA: error: dist-build-train-step option beta2: must be in [0, 1)

// A dense layer with a dynamic batch: the step keeps the forward function,
// adds `label`, `lr` and `step`, computes the mean squared error, the
// gradients of both parameters (the bias gradient summed over the batch),
// and the momentum update written back with dist.set_param.

// CHECK-LABEL: dist.param @w {trainable} : tensor<4x3xf32>
// CHECK: dist.param @b {trainable} : tensor<3xf32>
// CHECK: func.func @main(
// CHECK: func.func @train_step(%[[X:.*]]: tensor<?x4xf32> {dist.name = "x"}, %[[L:.*]]: tensor<?x3xf32> {dist.name = "label"}, %[[LR:.*]]: tensor<f32> {dist.name = "lr"}, %{{.*}}: tensor<f32> {dist.name = "step"}) -> (tensor<f32> {dist.name = "loss"})
// CHECK-SAME: optimizer = "momentum"
// CHECK-SAME: dist.train_step
// CHECK: %[[Y:.*]] = dist.tanh
// CHECK: %[[D:.*]] = dist.sub %[[Y]], %[[L]]
// CHECK: %[[LOSS:.*]] = dist.reduce_mean {{.*}}keepdims = 0
// CHECK: dist.reduce_sum %{{.*}} axes
// CHECK: %[[XT:.*]] = dist.transpose %[[X]] {perm = array<i64: 1, 0>}
// CHECK: %[[GW:.*]] = dist.matmul %[[XT]], %{{.*}} : (tensor<4x?xf32>, tensor<?x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[BUF:.*]] = dist.get_param @w.momentum_buffer
// CHECK: %[[NB:.*]] = dist.add %{{.*}}, %[[GW]]
// CHECK: dist.set_param @w.momentum_buffer, %[[NB]]
// CHECK: %[[STEP:.*]] = dist.mul %[[LR]], %[[NB]]
// CHECK: dist.set_param @w, %{{.*}} : tensor<4x3xf32>
// CHECK: dist.set_param @b.momentum_buffer
// CHECK: dist.set_param @b, %{{.*}} : tensor<3xf32>
// CHECK: return %[[LOSS]] : tensor<f32>
// CHECK: dist.param @w.momentum_buffer {state} : tensor<4x3xf32>
// CHECK: dist.param @b.momentum_buffer {state} : tensor<3xf32>
module {
  dist.param @w : tensor<4x3xf32>
  dist.param @b : tensor<3xf32>
  func.func @main(%x: tensor<?x4xf32> {dist.name = "x"}) -> (tensor<?x3xf32> {dist.name = "y"}) {
    %w = dist.get_param @w : tensor<4x3xf32>
    %b = dist.get_param @b : tensor<3xf32>
    %m = dist.matmul %x, %w : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
    %a = dist.add %m, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
    %t = dist.tanh %a : (tensor<?x3xf32>) -> tensor<?x3xf32>
    return %t : tensor<?x3xf32>
  }
}

// -----

// An op on the path from a parameter to the loss without a gradient rule.
module {
  dist.param @w : tensor<4xf32>
  func.func @main(%x: tensor<4xf32>) -> tensor<2xf32> {
    %w = dist.get_param @w : tensor<4xf32>
    %a = dist.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %k = dist.constant dense<2> : tensor<1xi64>
    // expected-error @+1 {{'dist.top_k' op has no gradient rule for this op}}
    %v, %i = dist.top_k %a, %k : (tensor<4xf32>, tensor<1xi64>) -> (tensor<2xf32>, tensor<2xi64>)
    return %v : tensor<2xf32>
  }
}

// -----

// A loss that no parameter influences.
module {
  dist.param @w : tensor<4xf32>
  // expected-error @+1 {{the loss does not depend on any floating-point parameter}}
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %e = dist.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    return %e : tensor<4xf32>
  }
}

// -----

// Autodiff emits it for a 2-D convolution's weight, with the convolution's
// attributes.
// CHECK-LABEL: dist.param @w {trainable} : tensor<4x3x3x3xf32>
// CHECK: func.func @train_step(
// CHECK: %[[Y:.*]] = dist.conv %[[X:[^,]*]], %[[W:.*]] {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
// CHECK: dist.conv_weight_grad %[[X]], %{{.*}} {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>, tensor<2x4x4x4xf32>) -> tensor<4x3x3x3xf32>
module {
  dist.param @w : tensor<4x3x3x3xf32>
  func.func @main(%x: tensor<2x3x8x8xf32> {dist.name = "x"}) -> (tensor<2x4x4x4xf32> {dist.name = "y"}) {
    %w = dist.get_param @w : tensor<4x3x3x3xf32>
    %y = dist.conv %x, %w {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
    return %y : tensor<2x4x4x4xf32>
  }
}

// -----

// A gather on axis 1 of [batch, 5] with a dynamic batch (DLRM's pick of
// the pairwise interactions): the gradient is dy times the one-hot matrix
// of the indices, [3, 5], negative ones counted from the end.
// CHECK-LABEL: dist.param @w {trainable} : tensor<5xf32>
// CHECK: func.func @train_step(
// CHECK: %[[HOT:.*]] = dist.equal %{{.*}}, %{{.*}} : (tensor<3x1xi64>, tensor<1x5xi64>) -> tensor<3x5xi1>
// CHECK: %[[M:.*]] = dist.cast %[[HOT]] {{.*}} -> tensor<3x5xf32>
// CHECK: dist.matmul %{{.*}}, %[[M]] : (tensor<?x3xf32>, tensor<3x5xf32>) -> tensor<?x5xf32>
module {
  dist.param @w : tensor<5xf32>
  func.func @main(%x: tensor<?x5xf32> {dist.name = "x"}) -> (tensor<?x3xf32> {dist.name = "y"}) {
    %w = dist.get_param @w : tensor<5xf32>
    %a = dist.mul %x, %w : (tensor<?x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %i = dist.constant dense<[4, 0, -1]> : tensor<3xi64>
    %y = dist.gather %a, %i {axis = 1 : i64} : (tensor<?x5xf32>, tensor<3xi64>) -> tensor<?x3xf32>
    return %y : tensor<?x3xf32>
  }
}
