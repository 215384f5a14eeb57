// RUN: dist-opt %s --dist-outline-loops | FileCheck %s
// RUN: dist-opt %s --dist-outline-loops --convert-scf-to-cf \
// RUN:   --finalize-memref-to-llvm --convert-arith-to-llvm \
// RUN:   --convert-func-to-llvm --convert-cf-to-llvm \
// RUN:   --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// Every outermost loop of a function moves into a function of its own,
// called in its place: values from above become arguments, constants are
// cloned in (the trip counts stay static), loop results become results.
// CHECK-LABEL: func.func private @graph_loop0_copy(
// CHECK-SAME: %[[X:.*]]: memref<16xf32>, %[[Y:.*]]: memref<16xf32>)
// CHECK-SAME: attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: scf.for %[[I:.*]] = %[[C0]] to %[[C16]]
// The nested loop stays inside its nest.
// CHECK: scf.for
// CHECK: memref.load %[[X]][%[[I]]]
// CHECK: memref.store %{{.*}}, %[[Y]][%[[I]]]
// CHECK-LABEL: func.func private @graph_loop1(
// CHECK-SAME: %[[M:.*]]: index, %{{.*}}: memref<16xf32>) -> f32
// CHECK: %[[R:.*]] = scf.for %{{.*}} = %{{.*}} to %[[M]] {{.*}} iter_args
// CHECK: return %[[R]] : f32
// CHECK-LABEL: func.func @graph(
// CHECK-SAME: %[[A:.*]]: memref<16xf32>, %[[B:.*]]: memref<16xf32>, %[[N:.*]]: index)
// CHECK-NOT: scf.for
// CHECK: call @graph_loop0_copy(%[[A]], %[[B]]) : (memref<16xf32>, memref<16xf32>) -> ()
// CHECK-NEXT: %[[S:.*]] = call @graph_loop1(%[[N]], %[[A]]) : (index, memref<16xf32>) -> f32
// CHECK-NEXT: return %[[S]]
func.func @graph(%a: memref<16xf32>, %b: memref<16xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c2 step %c1 {
      %v = memref.load %a[%i] : memref<16xf32>
      memref.store %v, %b[%i] : memref<16xf32>
    }
  } loc("copy"("node.onnx":1:1))
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> f32 {
    %v = memref.load %a[%i] : memref<16xf32>
    %t = arith.addf %acc, %v : f32
    scf.yield %t : f32
  }
  return %s : f32
}

// A body the compiler outlined already (internal linkage) keeps its loops,
// and a function without loops is left alone.
// CHECK-LABEL: func.func private @graph_par0(
// CHECK: scf.for
// CHECK-LABEL: func.func @no_loops(
// CHECK-NEXT: return
func.func private @graph_par0(%a: memref<16xf32>) attributes {llvm.linkage = #llvm.linkage<internal>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c16 step %c1 {
    memref.store %zero, %a[%i] : memref<16xf32>
  }
  return
}

func.func @no_loops() {
  return
}

// The LLVM functions are internal and never inlined.
// LLVM: llvm.func internal @graph_loop0_copy({{.*}}) attributes {passthrough = ["noinline"]
// LLVM: llvm.func internal @graph_loop1({{.*}}) -> f32 attributes {passthrough = ["noinline"]
