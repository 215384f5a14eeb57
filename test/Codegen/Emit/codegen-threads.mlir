// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-opt %s --dist-host-codegen-pipeline="name=m" -o %t/m.mlir
// RUN: env DIST_OPT_CODEGEN_THREADS=1 dist-opt %t/m.mlir --dist-emit-artifacts="out-dir=%t/one name=m" -o /dev/null
// RUN: env DIST_OPT_CODEGEN_THREADS=3 dist-opt %t/m.mlir --dist-emit-artifacts="out-dir=%t/three name=m" -o /dev/null 2>&1 \
// RUN:   | count 0
// RUN: env DIST_OPT_CODEGEN_THREADS=3 dist-opt %t/m.mlir --dist-emit-artifacts="out-dir=%t/obj name=m kind=obj" -o /dev/null 2>&1 \
// RUN:   | count 0
// RUN: %python -c "import numpy as np; np.save('%t/x.npy', np.linspace(-3, 3, 4096, dtype=np.float32).reshape(64, 64))"
// RUN: %t/one/m --input x=%t/x.npy --output-dir %t/out1
// RUN: %t/three/m --input x=%t/x.npy --output-dir %t/out3
// RUN: %python -c "import numpy as np, sys; a, b = (np.load(sys.argv[i] + '/y.npy') for i in (1, 2)); print('equal', a.shape, bool((a == b).all()))" %t/out1 %t/out3 \
// RUN:   | FileCheck %s
// RUN: nm %t/obj/m.o | FileCheck %s --check-prefix=SYMS

// Code generated in three partitions on three threads (their objects
// combined into one, without the warning that code generation fell back
// on one thread) computes what one partition computes, bit for bit; the
// three objects' constant pools are all there.
// CHECK: equal (64, 64) True
// The partitions' outlined loop bodies are local symbols again in the
// combined object (two models' objects link into one program); the model's
// entry points stay global.
// SYMS: r .LCPI0_0
// SYMS-NEXT: r .LCPI0_0
// SYMS-NOT: {{ [TDB] .*_par[0-9]}}
// SYMS: T _mlir_ciface_dist_graph_m
// SYMS: t dist_graph_m_par0
// SYMS-NOT: {{ [TDB] .*_par[0-9]}}
func.func @main(%x: tensor<64x64xf32> {dist.name = "x"}) -> (tensor<64x64xf32> {dist.name = "y"}) {
  %r = dist.relu %x : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %e = dist.exp %x : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = dist.add %r, %e : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %y = dist.matmul %s, %x : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}
