// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-opt %s --dist-host-codegen-pipeline="name=m" -o %t/m.mlir
// RUN: dist-opt %t/m.mlir --dist-emit-artifacts="out-dir=%t/ll name=m kind=llvm" -o /dev/null
// RUN: FileCheck %s --check-prefix=LLVM < %t/ll/m.ll
// RUN: FileCheck %s --check-prefix=NOSCATTER < %t/ll/m.ll
// RUN: dist-opt %t/m.mlir --dist-emit-artifacts="out-dir=%t/exe name=m" -o /dev/null
// RUN: %python -c "import numpy as np; np.save('%t/x.npy', np.linspace(-2, 2, 384 * 14 * 14, dtype=np.float32).reshape(1, 384, 14, 14))"
// RUN: %t/exe/m --input x=%t/x.npy --output-dir %t/out
// RUN: %python -c "import numpy as np, sys; d = sys.argv[1]; x = np.load(d + '/x.npy'); y = np.load(d + '/out/y.npy'); print('close', np.allclose(y, np.exp(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))), rtol=1e-6))" %t \
// RUN:   | FileCheck %s

// The zeros of a padded tensor's border columns (one element a row) are
// stored one by one, not as AVX-512 scatters, which were slower on this
// project's CPUs (the functions ask LLVM for prefer-no-scatter on every
// host; on hosts without AVX-512 there is no scatter to avoid).
// LLVM: define internal {{.*}}void @dist_graph_m_loop0(
// LLVM: "target-features"="{{[^"]*}}+prefer-no-scatter
// NOSCATTER-NOT: masked.scatter
// CHECK: close True
func.func @main(%x: tensor<1x384x14x14xf32> {dist.name = "x"})
    -> (tensor<1x384x16x16xf32> {dist.name = "y"}) {
  %p = dist.constant dense<[0, 0, 1, 1, 0, 0, 1, 1]> : tensor<8xi64>
  %0 = dist.pad %x, %p {mode = "constant"} : (tensor<1x384x14x14xf32>, tensor<8xi64>) -> tensor<1x384x16x16xf32>
  %1 = dist.exp %0 : (tensor<1x384x16x16xf32>) -> tensor<1x384x16x16xf32>
  return %1 : tensor<1x384x16x16xf32>
}
