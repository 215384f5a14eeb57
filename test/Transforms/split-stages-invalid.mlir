// RUN: dist-opt %s --split-input-file --verify-diagnostics --dist-split-stages
// RUN: not dist-opt %s --split-input-file --dist-split-stages="split=2,1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SPLIT
// SPLIT: error: dist-split-stages: the plan starts stages 1.. at layers /fc2, the split option at /fc3 (give one of them)

// A weight read by both stages (tied embedding and output layer) that
// neither updates.
#f1 = loc("/fc1/MatMul")
#f2 = loc("/fc2/MatMul")
module attributes {dist.mesh = #dist.mesh<pp = 2>} {
  dist.param @w {trainable} : tensor<4x4xf32>
  // expected-error @+1 {{dist-split-stages: trainable parameter 'w' is read in pipeline stages 0 and 1, and no stage that reads it updates it}}
  func.func @train_step(%x: tensor<2x4xf32> {dist.name = "x"}, %l: tensor<2x4xf32> {dist.name = "label"}, %lr: tensor<f32> {dist.name = "lr"}, %t: tensor<f32> {dist.name = "step"}) -> (tensor<f32> {dist.name = "loss"}) attributes {dist.train_step} {
    %w = dist.get_param @w : tensor<4x4xf32>
    %h = dist.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc(#f1)
    %y = dist.matmul %h, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc(#f2)
    %ax = dist.constant dense<[0, 1]> : tensor<2xi64>
    %loss = dist.reduce_mean %y axes %ax {keepdims = 0 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32> loc(#f2)
    return %loss : tensor<f32>
  }
}

// -----

// A dynamic batch.
#f1 = loc("/fc1/MatMul")
module attributes {dist.mesh = #dist.mesh<pp = 2>} {
  dist.param @w {trainable} : tensor<4x4xf32>
  // expected-error @+1 {{dist-split-stages: pipeline stages need static shapes, and an input of the step has type 'tensor<?x4xf32>' (export the model with a fixed batch)}}
  func.func @train_step(%x: tensor<?x4xf32> {dist.name = "x"}, %lr: tensor<f32> {dist.name = "lr"}, %t: tensor<f32> {dist.name = "step"}) -> (tensor<f32> {dist.name = "loss"}) attributes {dist.train_step} {
    %w = dist.get_param @w : tensor<4x4xf32>
    %h = dist.matmul %x, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32> loc(#f1)
    %ax = dist.constant dense<[0, 1]> : tensor<2xi64>
    %loss = dist.reduce_mean %h axes %ax {keepdims = 0 : i64} : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<f32> loc(#f1)
    return %loss : tensor<f32>
  }
}

// -----

// More stages than layers.
#f1 = loc("/fc1/MatMul")
// expected-error @+1 {{dist-split-stages: 3 pipeline stages for a model of 1 layers (every stage needs one)}}
module attributes {dist.mesh = #dist.mesh<pp = 3>} {
  dist.param @w {trainable} : tensor<4x4xf32>
  func.func @train_step(%x: tensor<2x4xf32> {dist.name = "x"}, %lr: tensor<f32> {dist.name = "lr"}, %t: tensor<f32> {dist.name = "step"}) -> (tensor<f32> {dist.name = "loss"}) attributes {dist.train_step} {
    %w = dist.get_param @w : tensor<4x4xf32>
    %h = dist.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc(#f1)
    %ax = dist.constant dense<[0, 1]> : tensor<2xi64>
    %loss = dist.reduce_mean %h axes %ax {keepdims = 0 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32> loc(#f1)
    return %loss : tensor<f32>
  }
}

// -----

// Inference only.
// expected-error @+1 {{dist-split-stages: pipeline stages need a training step (dist-opt --train); pipelined inference is not supported yet}}
module attributes {dist.mesh = #dist.mesh<pp = 2>} {
  func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    return %x : tensor<2x4xf32>
  }
}

// -----

// The plan cuts before /fc2 (dist.stage on the forward ops); the SPLIT run
// above cuts before /fc3. Without the option it compiles (the first run).
#f1 = loc("/fc1/MatMul")
#f2 = loc("/fc2/MatMul")
#f3 = loc("/fc3/MatMul")
module attributes {dist.mesh = #dist.mesh<pp = 2>} {
  dist.param @w {trainable} : tensor<4x4xf32>
  func.func @train_step(%x: tensor<2x4xf32> {dist.name = "x"}) -> (tensor<f32> {dist.name = "loss"}) attributes {dist.train_step} {
    %w = dist.get_param @w : tensor<4x4xf32>
    %h = dist.matmul %x, %w {dist.stage = #dist.stage<0 of 2>} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc(#f1)
    %r = dist.relu %h {dist.stage = #dist.stage<1 of 2>} : (tensor<2x4xf32>) -> tensor<2x4xf32> loc(#f2)
    %y = dist.relu %r {dist.stage = #dist.stage<1 of 2>} : (tensor<2x4xf32>) -> tensor<2x4xf32> loc(#f3)
    %ax = dist.constant dense<[0, 1]> : tensor<2xi64>
    %loss = dist.reduce_mean %y axes %ax {keepdims = 0 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32> loc(#f3)
    return %loss : tensor<f32>
  }
}
