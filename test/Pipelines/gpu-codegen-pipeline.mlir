// REQUIRES: cuda-toolkit
// RUN: dist-opt %s --dist-gpu-codegen-pipeline="name=m chips=sm_90 toolkit=%cuda_home" | FileCheck %s

// The gpu-codegen phase records the interface (device cuda), lowers the
// graph to loops, launches them on the GPU and compiles the kernels into a
// fat binary; the host code stays on memrefs for host-codegen.
// CHECK: dist.signature = {device = "cuda", entry_symbol = "dist_model_entry_m"
// CHECK: func.func @dist_graph_m(
// CHECK:   gpu.launch_func @{{.*}} blocks in
// CHECK: gpu.binary @{{.*}} [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {section = ".nv_fatbin"}
// CHECK-NOT: gpu.module
func.func @main(%x: tensor<4xf32> {dist.name = "x"}) -> (tensor<4xf32> {dist.name = "y"}) {
  %y = dist.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
