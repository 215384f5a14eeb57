// RUN: dist-opt %s --dist-train-pipeline="loss=mse" --dist-partition-pipeline \
// RUN:   | FileCheck %s
// RUN: dist-opt %S/Inputs/mlp.mlir --dist-partition-pipeline="mesh=tp=2" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TP

// The partition phase turns the module's mesh into the upstream grid every
// rank's program refers to, and averages the step's gradient over dp (a
// bucket of one gradient is reduced as it is) and its loss.
// CHECK: shard.grid @mesh(shape = 2) {dist.mesh_axes = ["dp"]}
// CHECK-NOT: dist.mesh =
// CHECK: func.func @train_step(%{{.*}}: tensor<8x4xf32>
// CHECK: shard.all_reduce {{.*}} on @mesh grid_axes = [0] reduction = {{ *}}average : tensor<4x3xf32>
// CHECK: shard.all_reduce {{.*}} reduction = {{ *}}average : tensor<f32>
module attributes {dist.mesh = #dist.mesh<dp = 2>} {
  dist.param @w : tensor<4x3xf32>
  func.func @main(%x: tensor<16x4xf32> {dist.name = "x"}) -> (tensor<16x3xf32> {dist.name = "y"}) {
    %w = dist.get_param @w : tensor<4x3xf32>
    %y = dist.matmul %x, %w : (tensor<16x4xf32>, tensor<4x3xf32>) -> tensor<16x3xf32>
    return %y : tensor<16x3xf32>
  }
}

// A mesh given as the pipeline's option: an inference module is split over
// tp (the first layer by columns, the second by rows, summed).
// TP: tensor parallel over tp=2: 1 column/row-split region(s)
// TP: shard.grid @mesh(shape = 2) {dist.mesh_axes = ["tp"]}
// TP: dist.param @w1 {dist.shard = {axis = 0 : i64, blocks = 1 : i64, dim = 1 : i64}} : tensor<4x4xf32>
// TP: shard.all_reduce
