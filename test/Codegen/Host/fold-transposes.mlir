// RUN: dist-opt %s --dist-fuse-elementwise --split-input-file --mlir-print-local-scope | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-fuse-elementwise \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:   --dist-contractions-to-runtime | FileCheck %s --check-prefix=CALL

// A transpose feeding a product is folded into the product's indexing map:
// no transposed copy, the GEMM reads x with swapped strides.

// CHECK-LABEL: func.func @lhs_transposed(
// CHECK-SAME: %[[X:.*]]: tensor<256x1024xf32>, %[[Y:.*]]: tensor<256x64xf32>
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
// CHECK-SAME: ins(%[[X]], %[[Y]] :

// m = 1024, n = 64, k = 256; lhs strides (m: 1, k: 1024).
// CALL-LABEL: func.func @lhs_transposed(
// CALL-NOT: linalg.generic
// CALL: call @dist_rt_gemm_{{(set_)?}}f32
// CALL-NOT: linalg.generic
func.func @lhs_transposed(%x: tensor<256x1024xf32>, %y: tensor<256x64xf32>) -> tensor<1024x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x256xf32>
  %xt = linalg.transpose ins(%x : tensor<256x1024xf32>) outs(%e : tensor<1024x256xf32>) permutation = [1, 0]
  %e1 = tensor.empty() : tensor<1024x64xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e1 : tensor<1024x64xf32>) -> tensor<1024x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xt, %y : tensor<1024x256xf32>, tensor<256x64xf32>) outs(%f : tensor<1024x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1024x64xf32>
  return %r : tensor<1024x64xf32>
}

// -----

// A transposed product (its only user is the transpose) is written
// transposed by the product itself.

// CHECK-LABEL: func.func @result_transposed(
// CHECK-NOT: linalg.transpose
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<64x32xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d1, d0)>]
// CHECK-SAME: outs(%[[F]] : tensor<64x32xf32>)
// CHECK-NOT: linalg.transpose

// CALL-LABEL: func.func @result_transposed(
// CALL: call @dist_rt_gemm_{{(set_)?}}f32
// CALL-NOT: linalg.generic
func.func @result_transposed(%x: tensor<32x16xf32>, %y: tensor<16x64xf32>) -> tensor<64x32xf32> {
  %cst = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %y : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f : tensor<32x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<32x64xf32>
  %e = tensor.empty() : tensor<64x32xf32>
  %t = linalg.transpose ins(%r : tensor<32x64xf32>) outs(%e : tensor<64x32xf32>) permutation = [1, 0]
  return %t : tensor<64x32xf32>
}

// -----

// Batched: the last two dims of the rhs swap (attention's K^T), the batch
// stays in front.

// CHECK-LABEL: func.func @batched_rhs_transposed(
// CHECK-NOT: linalg.transpose
// CHECK: affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>

// CALL-LABEL: func.func @batched_rhs_transposed(
// CALL: call @dist_rt_gemm_{{(set_)?}}f32
// CALL-NOT: linalg.generic
func.func @batched_rhs_transposed(%q: tensor<8x64x16xf32>, %k: tensor<8x64x16xf32>) -> tensor<8x64x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16x64xf32>
  %kt = linalg.transpose ins(%k : tensor<8x64x16xf32>) outs(%e : tensor<8x16x64xf32>) permutation = [0, 2, 1]
  %e1 = tensor.empty() : tensor<8x64x64xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e1 : tensor<8x64x64xf32>) -> tensor<8x64x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %kt : tensor<8x64x16xf32>, tensor<8x16x64xf32>) outs(%f : tensor<8x64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x64x64xf32>
  return %r : tensor<8x64x64xf32>
}

// -----

// An input's batch may sit anywhere (it is a stride), but an output whose
// batch would no longer come first is left to the transpose: the runtime's
// GEMM could not run the product. An integer product never goes to BLAS.

// CHECK-LABEL: func.func @batch_moved(
// CHECK-SAME: %[[X:[^:]*]]: tensor<8x4x16xf32>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, d3)>
// CHECK-SAME: ins(%[[X]],
// CHECK: linalg.transpose
// CHECK-SAME: permutation = [2, 0, 1]

// CALL-LABEL: func.func @batch_moved(
// CALL: call @dist_rt_gemm_{{(set_)?}}f32
// CALL: linalg.transpose
func.func @batch_moved(%x: tensor<8x4x16xf32>, %y: tensor<4x16x32xf32>) -> tensor<32x4x8xf32> {
  %cst = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x8x32xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e1 : tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %xt = tensor.empty() : tensor<4x8x16xf32>
  %xtt = linalg.transpose ins(%x : tensor<8x4x16xf32>) outs(%xt : tensor<4x8x16xf32>) permutation = [1, 0, 2]
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%xtt, %y : tensor<4x8x16xf32>, tensor<4x16x32xf32>) outs(%f : tensor<4x8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8x32xf32>
  %e = tensor.empty() : tensor<32x4x8xf32>
  %t = linalg.transpose ins(%r : tensor<4x8x32xf32>) outs(%e : tensor<32x4x8xf32>) permutation = [2, 0, 1]
  return %t : tensor<32x4x8xf32>
}

// CHECK-LABEL: func.func @integer_product(
// CHECK: linalg.transpose

// CALL-LABEL: func.func @integer_product(
// CALL-NOT: call @dist_rt_gemm
// CALL: linalg.generic
func.func @integer_product(%x: tensor<16x8xi32>, %y: tensor<16x4xi32>) -> tensor<8x4xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<8x16xi32>
  %xt = linalg.transpose ins(%x : tensor<16x8xi32>) outs(%e : tensor<8x16xi32>) permutation = [1, 0]
  %e1 = tensor.empty() : tensor<8x4xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e1 : tensor<8x4xi32>) -> tensor<8x4xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xt, %y : tensor<8x16xi32>, tensor<16x4xi32>) outs(%f : tensor<8x4xi32>) {
  ^bb0(%a: i32, %b: i32, %acc: i32):
    %m = arith.muli %a, %b : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  } -> tensor<8x4xi32>
  return %r : tensor<8x4xi32>
}
