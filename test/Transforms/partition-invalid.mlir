// RUN: dist-opt %s --split-input-file --verify-diagnostics --dist-partition="mesh=dp=4"
// RUN: not dist-opt %s --split-input-file --dist-partition="mesh=dp=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD
// BAD: error: dist-partition: mesh: the size of axis 'dp' must be an integer from 1 to 1048576, got '0'
// RUN: not dist-opt %s --split-input-file --dist-partition="mesh=pp=2,dp=2 zero=1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ZERO
// ZERO: error: ZeRO with pipeline stages is not supported yet (drop --zero, or --mesh pp)

// A step built at one rank's batch for dp=2 cannot be partitioned for
// dp=4: the batch it was built for says so.
module {
  dist.param @w {trainable} : tensor<4x3xf32>
  func.func @main(%x: tensor<16x4xf32> {dist.name = "x"}) -> (tensor<16x3xf32> {dist.name = "y"}) {
    %w = dist.get_param @w : tensor<4x3xf32>
    %y = dist.matmul %x, %w : (tensor<16x4xf32>, tensor<4x3xf32>) -> tensor<16x3xf32>
    return %y : tensor<16x3xf32>
  }
  // expected-error @+1 {{the training step was built for dp=2, not dp=4}}
  func.func @train_step(%x: tensor<8x4xf32> {dist.name = "x"}, %lr: tensor<f32> {dist.name = "lr"}, %t: tensor<f32> {dist.name = "step"}) -> (tensor<f32> {dist.name = "loss"}) attributes {dist.train = {batch_split_dp = 2 : i64}, dist.train_step} {
    %c = dist.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// A static batch that does not split evenly over the ranks.
module {
  dist.param @w {trainable} : tensor<4x3xf32>
  // expected-error @+1 {{the batch of 6 samples the model is compiled for cannot be split evenly over dp=4 ranks}}
  func.func @train_step(%x: tensor<6x4xf32> {dist.name = "x"}, %lr: tensor<f32> {dist.name = "lr"}, %t: tensor<f32> {dist.name = "step"}) -> (tensor<f32> {dist.name = "loss"}) attributes {dist.train_step} {
    %c = dist.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

// -----

// ZeRO does not compose with pipeline stages yet (the ZERO run above).
module {
  func.func @s0_update() attributes {dist.pipeline_action = {action = "update", stage = 0 : i64}} {
    return
  }
}
