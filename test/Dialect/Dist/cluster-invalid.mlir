// RUN: not dist-opt %s --split-input-file 2>&1 | FileCheck %s

// A cluster's figures are checked as numbers: a link needs a positive
// bandwidth.
// CHECK: error: link bandwidth must be positive
module attributes {dist.cluster = #dist.cluster<name = "c", nodes = [#dist.node<name = "n", count = 1, devices = [#dist.device<kind = cpu, model = "x", count = 1, cores = 1, memory = 1.0e+09, memory_bandwidth = 1.0e+10, peak_flops = {f32 = 1.0e+11 : f64}, price_per_hour = 0.0, isa = "">], intra = #dist.link<bandwidth = 0.0, latency = 1.0e-06>>], inter = #dist.link<bandwidth = 1.25e+09, latency = 5.0e-05>>} {
}

// -----

// CHECK: error: device peak for unknown data type 'f8'
module attributes {dist.cluster = #dist.cluster<name = "c", nodes = [#dist.node<name = "n", count = 1, devices = [#dist.device<kind = cpu, model = "x", count = 1, cores = 1, memory = 1.0e+09, memory_bandwidth = 1.0e+10, peak_flops = {f8 = 1.0e+11 : f64}, price_per_hour = 0.0, isa = "">], intra = #dist.link<bandwidth = 1.0e+10, latency = 1.0e-06>>], inter = #dist.link<bandwidth = 1.25e+09, latency = 5.0e-05>>} {
}

// -----

// The dictionary form is checked key by key.
// CHECK: error: cluster: unknown key 'memory_bandwith' in device 0 of node 'n'
module attributes {dist.cluster = #dist.cluster<{name = "pair", nodes = [{name = "n", devices = [{kind = "cpu", memory = 1.0e9, memory_bandwith = 1.0e10, memory_bandwidth = 1.0e10, peak_flops = {f32 = 1.0e11}}]}]}>} {
}

// -----

// CHECK: error: cluster: device 0 of node 'n' is missing field 'memory'
module attributes {dist.cluster = #dist.cluster<{name = "pair", nodes = [{name = "n", devices = [{kind = "cpu", memory_bandwidth = 1.0e10, peak_flops = {f32 = 1.0e11}}]}]}>} {
}
