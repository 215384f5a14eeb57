// RUN: dist-opt %S/Inputs/mlp.mlir --dist-train-pipeline="loss=mse optimizer=adam" \
// RUN:   | FileCheck %s
// RUN: dist-opt %s --dist-train-pipeline="loss=mse" | FileCheck %s --check-prefix=DP
// RUN: not dist-opt %S/Inputs/mlp.mlir --dist-train-pipeline="loss=hinge" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// The train phase builds the step beside the forward function: Adam's
// moments are state parameters, the step returns the loss.
// CHECK: dist.param @w1 {trainable} : tensor<4x8xf32>
// CHECK: func.func @main(%{{.*}}: tensor<16x4xf32>
// CHECK: func.func @train_step(%{{.*}}: tensor<16x4xf32> {dist.name = "x"}, %{{.*}}: tensor<16x3xf32> {dist.name = "label"}
// CHECK-SAME: -> (tensor<f32> {dist.name = "loss"})
// CHECK-SAME: optimizer = "adam"
// CHECK-DAG: dist.param @w1.exp_avg {state} : tensor<4x8xf32>
// CHECK-DAG: dist.param @w2.exp_avg_sq {state} : tensor<8x3xf32>

// With the module's mesh asking for dp=2, the step is built at one rank's
// batch (8 of 16) while the forward function keeps the whole batch.
// DP: func.func @main(%{{.*}}: tensor<16x4xf32>
// DP: func.func @train_step(%{{.*}}: tensor<8x4xf32> {dist.name = "x"}, %{{.*}}: tensor<8x3xf32> {dist.name = "label"}
module attributes {dist.mesh = #dist.mesh<dp = 2>} {
  dist.param @w : tensor<4x3xf32>
  func.func @main(%x: tensor<16x4xf32> {dist.name = "x"}) -> (tensor<16x3xf32> {dist.name = "y"}) {
    %w = dist.get_param @w : tensor<4x3xf32>
    %y = dist.matmul %x, %w : (tensor<16x4xf32>, tensor<4x3xf32>) -> tensor<16x3xf32>
    return %y : tensor<16x3xf32>
  }
}

// The pipeline's options are the training flags, checked the same way.
// BAD: error: dist-build-train-step option loss: unknown loss 'hinge' (expected mse, cross_entropy, bce or model)
