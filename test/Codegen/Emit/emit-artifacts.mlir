// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-opt %s --dist-host-codegen-pipeline="name=m" -o %t/m.mlir
// RUN: dist-opt %t/m.mlir --dist-emit-artifacts="out-dir=%t/obj name=m kind=obj" -o /dev/null
// RUN: test -s %t/obj/m.o && not test -e %t/obj/m
// RUN: dist-opt %t/m.mlir --dist-emit-artifacts="out-dir=%t/exe name=m" -o /dev/null
// RUN: test -x %t/exe/m && test -f %t/exe/libm.so && test -f %t/exe/m.h
// RUN: %python -c "import json, sys; m = json.load(open(sys.argv[1])); print(m['name'], [i['name'] for i in m['inputs']])" %t/exe/m.json \
// RUN:   | FileCheck %s
// RUN: not dist-opt %t/m.mlir --dist-emit-artifacts="out-dir=%t/bad name=m runtime-lib=%t/none.a" -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOLIB
// RUN: not test -e %t/bad/m

// The emit pass writes an object, or the executable, library, header and
// manifest from the recorded interface; without the runtime library it
// says so and writes nothing.
// CHECK: m ['x']
// NOLIB: error: the runtime library {{.*}}none.a does not exist (build the dist_rt_static target or pass --runtime-lib)
func.func @main(%x: tensor<4xf32> {dist.name = "x"}) -> (tensor<4xf32> {dist.name = "y"}) {
  %y = dist.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
