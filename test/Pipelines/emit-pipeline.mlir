// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-opt %s --dist-host-codegen-pipeline="name=m" -o %t/m.mlir
// RUN: dist-opt %t/m.mlir --dist-emit-pipeline="out-dir=%t/out name=m" -o /dev/null
// RUN: %python -c "import numpy as np, sys; np.save(sys.argv[1], np.array([-1, 2, -3, 4], np.float32))" %t/x.npy
// RUN: %t/out/m --input x=%t/x.npy --output-dir %t/res
// RUN: %python -c "import numpy as np, sys; print(np.load(sys.argv[1]).tolist())" %t/res/y.npy | FileCheck %s
// RUN: dist-opt %t/m.mlir --dist-emit-pipeline="out-dir=%t/ll name=m kind=llvm" -o /dev/null
// RUN: FileCheck %s --check-prefix=LLVM < %t/ll/m.ll
// RUN: not dist-opt %s --dist-emit-pipeline="out-dir=%t/bad name=m" -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOSIG

// The emit phase runs from a lowered .mlir file: it writes the executable
// (and library, header, manifest) from the interface recorded before
// lowering, and the executable computes the model.
// CHECK: [0.0, 2.0, 0.0, 4.0]
// LLVM: define void @dist_model_entry_m(ptr
// NOSIG: error: {{.*}}the module has no 'dist.signature' attribute (dist-record-signature adds it before lowering)
func.func @main(%x: tensor<4xf32> {dist.name = "x"}) -> (tensor<4xf32> {dist.name = "y"}) {
  %y = dist.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
