// RUN: dist-opt %s --dist-rename-entries="name=mlp" | FileCheck %s
// RUN: dist-opt %s --dist-rename-entries | FileCheck %s --check-prefix=KEEP

// The entry function and the training step get the artifact's names, and
// so does every use of them; without a name nothing changes.
// CHECK: func.func @dist_graph_mlp(
// CHECK: func.func @dist_train_mlp(
// CHECK: call @dist_graph_mlp(
// KEEP: func.func @main(
// KEEP: func.func @train_step(
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  func.func @train_step(%x: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<f32>) -> tensor<f32> attributes {dist.train_step} {
    %c = dist.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
  func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = call @main(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
