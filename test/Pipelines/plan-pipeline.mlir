// RUN: dist-opt %S/Inputs/mlp.mlir --dist-plan-pipeline="cluster=%S/Inputs/two-cpus.yaml" \
// RUN:   2>%t.summary | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.summary
// RUN: dist-opt %S/Inputs/mlp.mlir --dist-plan-pipeline="cluster=%S/Inputs/two-cpus.yaml plan=auto" \
// RUN:   2>/dev/null | FileCheck %s --check-prefix=APPLY
// RUN: dist-opt %s --dist-plan-pipeline="cluster=%S/Inputs/two-cpus.yaml" \
// RUN:   2>&1 | FileCheck %s --check-prefix=MESH
// RUN: not dist-opt %S/Inputs/mlp.mlir --dist-plan-pipeline="cluster=%t.missing.yaml" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOFILE

// The plan phase attaches the cluster (two slow CPUs on a fast link) and
// records the planner's typed decision: the batch split over both, every
// layer's ops placed on stage 0.
// CHECK: dist.cluster = #dist.cluster<
// CHECK-SAME: dist.plan = #dist.plan<objective = step_time, search = exact, dp = 2, tp = 1, pp = 1
// CHECK-SAME: stages = [#dist.plan_stage<first_layer = 0, last_layer = 1, first_name = "/fc1", last_name = "/fc2", device_type = "n/slow", device_kind = cpu, units = 2, dp = 2, tp = 1
// CHECK: dist.matmul {{.*}} {dist.placement = #dist.placement<cpu, group = 0>, dist.stage = #dist.stage<0 of 1>}
// SUMMARY: plan: objective step-time, strategy exact, cluster 'two' (2 of 2 devices used)
// SUMMARY: degrees: dp 2, tp 1, pp 1

// plan=auto applies the layout: the module asks the later phases for it.
// APPLY: dist.mesh = #dist.mesh<dp = 2>

// A module that asks for a mesh already: its layout is evaluated, not
// searched, so the plan says what will run.
// MESH: plan: objective step-time, layout --mesh tp=2, cluster 'two' (2 of 2 devices used)
// MESH: degrees: dp 1, tp 2, pp 1
// MESH: dist.plan = #dist.plan<objective = step_time, search = mesh, dp = 1, tp = 2
module attributes {dist.mesh = #dist.mesh<tp = 2>} {
  dist.param @w1 : tensor<4x8xf32>
  dist.param @w2 : tensor<8x3xf32>
  func.func @main(%x: tensor<16x4xf32> {dist.name = "x"}) -> (tensor<16x3xf32> {dist.name = "y"}) {
    %w1 = dist.get_param @w1 : tensor<4x8xf32> loc("/fc1/MatMul")
    %w2 = dist.get_param @w2 : tensor<8x3xf32> loc("/fc2/MatMul")
    %h = dist.matmul %x, %w1 : (tensor<16x4xf32>, tensor<4x8xf32>) -> tensor<16x8xf32> loc("/fc1/MatMul")
    %r = dist.relu %h : (tensor<16x8xf32>) -> tensor<16x8xf32> loc("/fc1/Relu")
    %y = dist.matmul %r, %w2 : (tensor<16x8xf32>, tensor<8x3xf32>) -> tensor<16x3xf32> loc("/fc2/MatMul")
    return %y : tensor<16x3xf32>
  }
}

// NOFILE: error: {{.*}}missing.yaml: cannot open file
