// RUN: dist-opt %s --dist-host-codegen-pipeline="name=m" | FileCheck %s
// RUN: dist-opt %s --dist-host-codegen-pipeline | FileCheck %s --check-prefix=KEEP

// The host-codegen phase records the model's interface while the function
// still has its tensor types (the emit phase writes the descriptor from
// it), gives the entry function the artifact's name and lowers it to the
// LLVM dialect with the packed entry point the runtime calls (the entry
// itself internal, to be inlined into its C interface).
// CHECK: dist.signature = {entry_symbol = "dist_model_entry_m", inputs = [{dims = array<i64: 4>, dtype = 1 : i64, name = "x"}], outputs = [{dims = array<i64: 4>, dtype = 1 : i64, name = "y"}], params = []}
// CHECK-DAG: llvm.func internal @dist_graph_m(
// CHECK-DAG: llvm.func @dist_model_entry_m(%{{.*}}: !llvm.ptr)
// Without a name the entry keeps its own, wrapped as dist_model_entry.
// KEEP-DAG: llvm.func internal @main(
// KEEP-DAG: llvm.func @dist_model_entry(%{{.*}}: !llvm.ptr)
func.func @main(%x: tensor<4xf32> {dist.name = "x"}) -> (tensor<4xf32> {dist.name = "y"}) {
  %y = dist.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
