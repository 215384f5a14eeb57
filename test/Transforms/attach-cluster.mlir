// RUN: dist-opt %s --dist-attach-cluster="cluster=%S/../Pipelines/Inputs/two-cpus.yaml" | FileCheck %s
// RUN: dist-opt %s --dist-attach-cluster=cluster=local | FileCheck %s --check-prefix=LOCAL
// RUN: not dist-opt %s --dist-attach-cluster="cluster=%s.missing" 2>&1 | FileCheck %s --check-prefix=NOFILE

// The cluster file becomes the module's typed cluster object (the defaults
// of a cluster file filled in: one node, no price, the inter-node link);
// local detects this machine (one node named local, its CPU).
// CHECK: dist.cluster = #dist.cluster<name = "two", nodes = [#dist.node<name = "n", count = 1, devices = [#dist.device<kind = cpu, model = "slow", count = 2, cores = 1, memory = 1073741824.0, memory_bandwidth = 1.0e+07, peak_flops = {f32 = 1.000000e+06 : f64}, price_per_hour = 0.0, isa = "">], intra = #dist.link<bandwidth = 1.0e+11, latency = 1.0e-08>>], inter = #dist.link<bandwidth = 1.25e+09, latency = 5.0e-05>>
// LOCAL: dist.cluster = #dist.cluster<name = "local", nodes = [#dist.node<name = "local", count = 1, devices = [#dist.device<kind = cpu
// NOFILE: error: {{.*}}missing: cannot open file
module {
}
