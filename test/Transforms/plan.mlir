// RUN: dist-opt %s --split-input-file --dist-test-plan 2>&1 | FileCheck %s
// RUN: dist-opt %s --split-input-file \
// RUN:   --dist-test-plan="objective=cost min-throughput=2000" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=COST

// A 4-layer MLP on one node with four identical GPUs. For step time the
// fastest plan is data parallel over all four (a 256 batch splits evenly,
// the weights are small to all-reduce); everything fits, so no pipeline and
// no recomputation. Under the cost objective one GPU already reaches the
// 2000 samples/s floor, so the cheapest plan rents one ($2/h).

// CHECK: plan: objective=step-time strategy=exact dp=4 tp=1 pp=1 micro-batches=1 recompute=0 devices=4
// CHECK: layer 0 '/fc1' -> stage 0 on n/g
// CHECK: layer 3 '/fc4' -> stage 0 on n/g
// CHECK: predicted: step_ms={{[0-9.e+-]+}} throughput={{[0-9.e+-]+}} cost_per_hour=8
// COST: plan: objective=cost strategy=exact dp=1 tp=1 pp=1 micro-batches=1 recompute=0 devices=1
// COST: stage 0: layers 0-3 on n/g units=1
// COST: predicted: step_ms={{[0-9.e+-]+}} throughput={{[0-9.e+-]+}} cost_per_hour=2
module attributes {dist.cluster = #dist.cluster<{name = "four", nodes = [
    {name = "n", devices = [{kind = "gpu", model = "g", count = 4,
      memory = 1.6e10, memory_bandwidth = 9.0e11,
      peak_flops = {f32 = 2.0e13}, price_per_hour = 2.0}],
     links = {intra = {bandwidth = 1.0e11, latency = 2.0e-6}}}]}>} {
  dist.param @w1 : tensor<1024x1024xf32>
  dist.param @w2 : tensor<1024x1024xf32>
  dist.param @w3 : tensor<1024x1024xf32>
  dist.param @w4 : tensor<1024x16xf32>
  func.func @main(%x: tensor<256x1024xf32>) -> tensor<256x16xf32> {
    %w1 = dist.get_param @w1 : tensor<1024x1024xf32>
    %w2 = dist.get_param @w2 : tensor<1024x1024xf32>
    %w3 = dist.get_param @w3 : tensor<1024x1024xf32>
    %w4 = dist.get_param @w4 : tensor<1024x16xf32>
    %0 = dist.matmul %x, %w1 : (tensor<256x1024xf32>, tensor<1024x1024xf32>) -> tensor<256x1024xf32> loc("/fc1/MatMul")
    %1 = dist.relu %0 : (tensor<256x1024xf32>) -> tensor<256x1024xf32> loc("/fc1/Relu")
    %2 = dist.matmul %1, %w2 : (tensor<256x1024xf32>, tensor<1024x1024xf32>) -> tensor<256x1024xf32> loc("/fc2/MatMul")
    %3 = dist.relu %2 : (tensor<256x1024xf32>) -> tensor<256x1024xf32> loc("/fc2/Relu")
    %4 = dist.matmul %3, %w3 : (tensor<256x1024xf32>, tensor<1024x1024xf32>) -> tensor<256x1024xf32> loc("/fc3/MatMul")
    %5 = dist.relu %4 : (tensor<256x1024xf32>) -> tensor<256x1024xf32> loc("/fc3/Relu")
    %6 = dist.matmul %5, %w4 : (tensor<256x1024xf32>, tensor<1024x16xf32>) -> tensor<256x16xf32> loc("/fc4/MatMul")
    return %6 : tensor<256x16xf32>
  }
}
