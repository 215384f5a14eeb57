// RUN: dist-opt %s --split-input-file --dist-fuse-elementwise | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-fuse-elementwise \
// RUN:   --eliminate-empty-tensors \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" --cse \
// RUN:   --canonicalize | FileCheck %s --check-prefix=BUF

// A large splat constant that a loop accumulates into (an embedding table's
// gradient, zero at the start) becomes a fill of its own: bufferized, a
// fill of a fresh buffer (a parallel loop later), not a copy of a global.

// CHECK-LABEL: func.func @scatter_add(
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1000x32xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<1000x32xf32>)
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[F]])

// BUF-LABEL: func.func @scatter_add(
// BUF-NOT: memref.get_global
// BUF-NOT: memref.copy
// BUF: linalg.fill
// BUF-NOT: memref.copy
// BUF: return
func.func @scatter_add(%idx: tensor<64xindex>, %g: tensor<64x32xf32>) -> tensor<1000x32xf32> {
  %zero = arith.constant dense<0.0> : tensor<1000x32xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %r = scf.for %i = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (tensor<1000x32xf32>) {
    %row = tensor.extract %idx[%i] : tensor<64xindex>
    %r2 = scf.for %j = %c0 to %c32 step %c1 iter_args(%a = %acc) -> (tensor<1000x32xf32>) {
      %old = tensor.extract %a[%row, %j] : tensor<1000x32xf32>
      %v = tensor.extract %g[%i, %j] : tensor<64x32xf32>
      %s = arith.addf %old, %v : f32
      %n = tensor.insert %s into %a[%row, %j] : tensor<1000x32xf32>
      scf.yield %n : tensor<1000x32xf32>
    }
    scf.yield %r2 : tensor<1000x32xf32>
  }
  return %r : tensor<1000x32xf32>
}

// -----

// Splat constants that are only read, or small ones, stay constants.

// CHECK-LABEL: func.func @read_only_and_small(
// CHECK-DAG: arith.constant dense<1.000000e+00> : tensor<1000x32xf32>
// CHECK-DAG: arith.constant dense<0.000000e+00> : tensor<8x8xf32>
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @read_only_and_small() -> (tensor<1000x32xf32>, tensor<8x8xf32>) {
  %one = arith.constant dense<1.0> : tensor<1000x32xf32>
  %small = arith.constant dense<0.0> : tensor<8x8xf32>
  %c0 = arith.constant 0 : index
  %f = arith.constant 2.0 : f32
  %s = tensor.insert %f into %small[%c0, %c0] : tensor<8x8xf32>
  return %one, %s : tensor<1000x32xf32>, tensor<8x8xf32>
}

// -----

// An init the op's body does not read needs no fill (it becomes an empty
// tensor, a fresh buffer without a copy once bufferized); one it
// accumulates into (a sum starting from ones) gets a fill.

// CHECK-LABEL: func.func @init_read_or_not(
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1000x32xf32>
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {{.*}} outs(%[[E]] : tensor<1000x32xf32>)
// CHECK: arith.negf
// CHECK: %[[F:.*]] = linalg.fill {{.*}} -> tensor<1000x32xf32>
// CHECK: linalg.generic {{.*}} outs(%[[F]] : tensor<1000x32xf32>)
// CHECK: arith.addf
func.func @init_read_or_not(%x: tensor<1000x32xf32>) -> (tensor<1000x32xf32>, tensor<1000x32xf32>) {
  %one = arith.constant dense<1.0> : tensor<1000x32xf32>
  %neg = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<1000x32xf32>) outs(%one : tensor<1000x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<1000x32xf32>
  %acc = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<1000x32xf32>) outs(%one : tensor<1000x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<1000x32xf32>
  return %neg, %acc : tensor<1000x32xf32>, tensor<1000x32xf32>
}
