// RUN: dist-opt %s --dist-build-train-step="loss=bce optimizer=adam" \
// RUN:   --dist-test-plan="objective=cost min-throughput=20000 ps-tables=true" 2>&1 \
// RUN:   | FileCheck %s

// HeterPS's case: a recommender with an embedding table too large for a GPU
// (51 GB; sparse,
// IO-bound lookups) and dense layers (compute-bound) on a cluster with
// cheap CPUs and expensive GPUs. Under the cost objective the embedding
// goes to the CPUs and the dense layers to the GPUs. The table is priced as a
// parameter-server table (row-wise updates), as HeterPS runs it.

// CHECK: plan: objective=cost
// CHECK: layer 0 '/emb' -> stage {{[0-9]+}} on cpu-node/xeon (sparse)
// CHECK: layer 1 '/fc1' -> stage {{[0-9]+}} on gpu-node/a100
// CHECK: layer 2 '/fc2' -> stage {{[0-9]+}} on gpu-node/a100
// CHECK: predicted: step_ms=
module attributes {dist.cluster = #dist.cluster<{name = "mixed", nodes = [
    {name = "cpu-node", count = 8, devices = [{kind = "cpu", model = "xeon",
      count = 1, cores = 32, memory = 2.56e11, memory_bandwidth = 2.0e11,
      peak_flops = {f32 = 2.0e12}, price_per_hour = 0.5}],
     links = {intra = {bandwidth = 5.0e10, latency = 1.0e-6}}},
    {name = "gpu-node", count = 2, devices = [{kind = "gpu", model = "a100",
      count = 4, cores = 108, memory = 4.0e10, memory_bandwidth = 1.5e12,
      peak_flops = {f32 = 1.95e13}, price_per_hour = 3.0}],
     links = {intra = {bandwidth = 3.0e11, latency = 2.0e-6}}}],
    links = {inter = {bandwidth = 1.25e10, latency = 1.0e-5}}}>} {
  dist.param @table : tensor<200000000x64xf32>
  dist.param @w1 : tensor<1664x4096xf32>
  dist.param @w2 : tensor<4096x1xf32>
  func.func @main(%ids: tensor<512x26xi64> {dist.name = "ids"}) -> (tensor<512x1xf32> {dist.name = "p"}) {
    %t = dist.get_param @table : tensor<200000000x64xf32>
    %w1 = dist.get_param @w1 : tensor<1664x4096xf32>
    %w2 = dist.get_param @w2 : tensor<4096x1xf32>
    %e = dist.gather %t, %ids {axis = 0 : i64} : (tensor<200000000x64xf32>, tensor<512x26xi64>) -> tensor<512x26x64xf32> loc("/emb/Gather")
    %s = dist.constant dense<[512, 1664]> : tensor<2xi64> loc("/emb/Const")
    %f = dist.reshape %e, %s : (tensor<512x26x64xf32>, tensor<2xi64>) -> tensor<512x1664xf32> loc("/emb/Reshape")
    %0 = dist.matmul %f, %w1 : (tensor<512x1664xf32>, tensor<1664x4096xf32>) -> tensor<512x4096xf32> loc("/fc1/MatMul")
    %1 = dist.relu %0 : (tensor<512x4096xf32>) -> tensor<512x4096xf32> loc("/fc1/Relu")
    %2 = dist.matmul %1, %w2 : (tensor<512x4096xf32>, tensor<4096x1xf32>) -> tensor<512x1xf32> loc("/fc2/MatMul")
    %3 = dist.sigmoid %2 : (tensor<512x1xf32>) -> tensor<512x1xf32> loc("/fc2/Sigmoid")
    return %3 : tensor<512x1xf32>
  }
}
