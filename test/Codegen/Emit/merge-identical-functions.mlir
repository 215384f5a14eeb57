// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-opt %s --dist-host-codegen-pipeline="name=m" -o %t/m.mlir
// RUN: FileCheck %s --check-prefix=MLIR < %t/m.mlir
// RUN: dist-opt %t/m.mlir --dist-emit-artifacts="out-dir=%t/ll name=m kind=llvm" -o /dev/null
// RUN: FileCheck %s --check-prefix=LLVM < %t/ll/m.ll
// RUN: dist-opt %t/m.mlir --dist-emit-artifacts="out-dir=%t/exe name=m" -o /dev/null
// RUN: %python -c "import numpy as np; np.save('%t/x.npy', np.linspace(-3, 3, 4096, dtype=np.float32).reshape(64, 64)); np.save('%t/y.npy', np.linspace(2, -1, 4096, dtype=np.float32).reshape(64, 64))"
// RUN: %t/exe/m --input x=%t/x.npy --input y=%t/y.npy --output-dir %t/out
// RUN: %python -c "import numpy as np, sys; d = sys.argv[1]; print('close', all(np.allclose(np.load(d + '/' + o + '.npy'), np.exp(np.load(d + '/../' + i + '.npy')), rtol=1e-6) for o, i in (('a', 'x'), ('b', 'y'))))" %t/out \
// RUN:   | FileCheck %s

// Two identical loop nests on different tensors are two outlined
// functions in MLIR and one in LLVM IR (LLVM's MergeFunctions before
// optimisation: the copies are neither optimised nor compiled), which
// serves both; the graph is inlined into its C interface.
// MLIR: llvm.func internal @dist_graph_m_par0(
// MLIR: llvm.func internal @dist_graph_m_par1(
// MLIR: llvm.func internal @dist_graph_m(
// MLIR-SAME: always_inline
// LLVM: define internal void @dist_graph_m_par{{[01]}}(
// LLVM-NOT: define {{.*}}@dist_graph_m_par
// LLVM-NOT: define {{.*}}@dist_graph_m(
// LLVM: define void @_mlir_ciface_dist_graph_m(
// LLVM-COUNT-2: call void @dist_rt_parallel_for(i64 {{.*}}, ptr nonnull @dist_graph_m_par{{[01]}},
// LLVM-NOT: define {{.*}}@dist_graph_m_par
// CHECK: close True
func.func @main(%x: tensor<64x64xf32> {dist.name = "x"},
                %y: tensor<64x64xf32> {dist.name = "y"})
    -> (tensor<64x64xf32> {dist.name = "a"}, tensor<64x64xf32> {dist.name = "b"}) {
  %a = dist.exp %x : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = dist.exp %y : (tensor<64x64xf32>) -> tensor<64x64xf32>
  return %a, %b : tensor<64x64xf32>, tensor<64x64xf32>
}
