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
// RUN: env CC=%t/no-such-cc DIST_OPT_CODEGEN_THREADS=2 dist-opt %t/m.mlir --dist-emit-artifacts="out-dir=%t/fallback name=m kind=obj" -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FALLBACK
// RUN: nm %t/fallback/m.o | FileCheck %s --check-prefix=LOCAL
// RUN: env DIST_OPT_CODEGEN_THREADS=many dist-opt %S/../../Transforms/Inputs/mlp.onnxtext --emit=obj -o %t/bad 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADENV
// RUN: test -s %t/bad/mlp.o
// RUN: env CC=%t/no-such-cc DIST_OPT_CODEGEN_THREADS=2 dist-opt %S/../../Transforms/Inputs/mlp.onnxtext --emit=obj -o %t/fb2 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ONELINE
// RUN: test -s %t/fb2/mlp.o

// Code optimised and generated in three partitions on three threads (their
// objects combined into one, without the warning that code generation fell
// back on one thread) computes what one partition computes, bit for bit.
// CHECK: equal (64, 64) True
// The partitions' outlined loop bodies are local symbols again in the
// combined object (two models' objects link into one program); the model's
// entry points stay global, and the graph itself is inlined into its C
// interface (dist-add-entry-wrapper).
// SYMS-NOT: {{ [TDB] .*_par[0-9]}}
// SYMS: T _mlir_ciface_dist_graph_m
// SYMS-NOT: {{ dist_graph_m$}}
// SYMS: t dist_graph_m_par0
// SYMS-NOT: {{ [TDB] .*_par[0-9]}}
func.func @main(%x: tensor<64x64xf32> {dist.name = "x"}) -> (tensor<64x64xf32> {dist.name = "y"}) {
  %r = dist.relu %x : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %e = dist.exp %x : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = dist.add %r, %e : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %y = dist.matmul %s, %x : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}

// Without a linker to combine the partitions' objects the compile says so
// in one line and generates the module on one thread: its object is
// complete and its outlined bodies still local.
// FALLBACK: warning: code generation on 2 threads failed (cc -r or objcopy missing?); generating on one
// FALLBACK-NOT: error
// LOCAL: t dist_graph_m_par0
// LOCAL: T dist_model_entry_m
// From the command line each is one line naming the model; a value that
// is not a thread count is reported and ignored.
// ONELINE: warning: {{.*}}mlp.onnxtext: code generation on 2 threads failed (cc -r or objcopy missing?); generating on one
// ONELINE-EMPTY:
// BADENV: warning: {{.*}}mlp.onnxtext: DIST_OPT_CODEGEN_THREADS='many' is not a number from 1 to 64; ignored
// BADENV-EMPTY:
