// RUN: dist-opt %s --dist-build-train-step="loss=mse optimizer=adam" \
// RUN:   --dist-test-plan 2>&1 | FileCheck %s

// Training a 4-layer MLP whose weights, gradients and Adam moments
// (4 x 64 MiB x 4 = 1 GiB) do not fit one 512 MiB device: the planner must
// split the layers over pipeline stages or shard them (tp), never place
// everything on one device.

// CHECK: plan: objective=step-time strategy=exact
// CHECK-SAME: devices={{([2-9]|[1-9][0-9]+)$}}
// CHECK: stage 0: layers 0-{{[0-3]}} on n/g units={{([2-9]|[1-9][0-9]+)}}
// CHECK: predicted: step_ms=
module attributes {dist.cluster = #dist.cluster<{name = "small", nodes = [
    {name = "n", devices = [{kind = "gpu", model = "g", count = 8,
      memory = 5.36870912e8, memory_bandwidth = 9.0e11,
      peak_flops = {f32 = 2.0e13}, price_per_hour = 1.0}],
     links = {intra = {bandwidth = 1.0e11, latency = 2.0e-6}}}]}>} {
  dist.param @w1 : tensor<4096x4096xf32>
  dist.param @w2 : tensor<4096x4096xf32>
  dist.param @w3 : tensor<4096x4096xf32>
  dist.param @w4 : tensor<4096x4096xf32>
  func.func @main(%x: tensor<8x4096xf32> {dist.name = "x"}) -> (tensor<8x4096xf32> {dist.name = "y"}) {
    %w1 = dist.get_param @w1 : tensor<4096x4096xf32>
    %w2 = dist.get_param @w2 : tensor<4096x4096xf32>
    %w3 = dist.get_param @w3 : tensor<4096x4096xf32>
    %w4 = dist.get_param @w4 : tensor<4096x4096xf32>
    %0 = dist.matmul %x, %w1 : (tensor<8x4096xf32>, tensor<4096x4096xf32>) -> tensor<8x4096xf32> loc("/fc1/MatMul")
    %1 = dist.tanh %0 : (tensor<8x4096xf32>) -> tensor<8x4096xf32> loc("/fc1/Tanh")
    %2 = dist.matmul %1, %w2 : (tensor<8x4096xf32>, tensor<4096x4096xf32>) -> tensor<8x4096xf32> loc("/fc2/MatMul")
    %3 = dist.tanh %2 : (tensor<8x4096xf32>) -> tensor<8x4096xf32> loc("/fc2/Tanh")
    %4 = dist.matmul %3, %w3 : (tensor<8x4096xf32>, tensor<4096x4096xf32>) -> tensor<8x4096xf32> loc("/fc3/MatMul")
    %5 = dist.tanh %4 : (tensor<8x4096xf32>) -> tensor<8x4096xf32> loc("/fc3/Tanh")
    %6 = dist.matmul %5, %w4 : (tensor<8x4096xf32>, tensor<4096x4096xf32>) -> tensor<8x4096xf32> loc("/fc4/MatMul")
    return %6 : tensor<8x4096xf32>
  }
}
