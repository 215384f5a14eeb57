// RUN: dist-opt %s --dist-contractions-to-runtime --canonicalize | FileCheck %s

// A product over batch and head whose inputs are read in [B, T, H, D]
// (the heads' transposes folded in): the runtime's GEMM runs once per batch
// index, over the 3 heads (batch stride 4 elements), each call's pointers
// advanced by the operands' batch strides in bytes (x: 8 * 12 floats = 384
// bytes; y likewise; the [B, H, T, T] result: 3 * 8 * 8 floats = 768
// bytes).
// CHECK-LABEL: func.func @heads(
// CHECK-DAG: %[[C384:.*]] = arith.constant 384 : i64
// CHECK-DAG: %[[C768:.*]] = arith.constant 768 : i64
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[IV:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK-DAG: %[[XO:.*]] = arith.muli %[[IV]], %[[C384]] : i64
// CHECK-DAG: %[[SO:.*]] = arith.muli %[[IV]], %[[C768]] : i64
// CHECK-DAG: %[[XP:.*]] = arith.addi %{{.*}}, %[[XO]] : i64
// CHECK-DAG: %[[SP:.*]] = arith.addi %{{.*}}, %[[SO]] : i64
// CHECK: call @dist_rt_gemm_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[XP]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SP]],
// CHECK-NEXT: }
#q = affine_map<(b, h, t, s, d) -> (b, t, h, d)>
#k = affine_map<(b, h, t, s, d) -> (b, s, h, d)>
#o = affine_map<(b, h, t, s, d) -> (b, h, t, s)>
func.func @heads(%x: memref<?x8x3x4xf32>, %y: memref<?x8x3x4xf32>, %s: memref<?x3x8x8xf32>) {
  linalg.generic {indexing_maps = [#q, #k, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %y : memref<?x8x3x4xf32>, memref<?x8x3x4xf32>) outs(%s : memref<?x3x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %c, %m : f32
    linalg.yield %r : f32
  }
  return
}

// A channel-last linear layer, [1, H, W, C] by a shared [C, D] weight:
// three loops only the input reads. m is the innermost of them (W, 5 rows
// of stride 16), the batch H (stride 5 * 16, so that the runtime folds it
// into one product of H * W rows) and the outer batch the image (one
// trip: no loop once canonicalized).
// CHECK-LABEL: func.func @channel_last_linear(
// CHECK-DAG: %[[H:.*]] = arith.constant 7 : i64
// CHECK-DAG: %[[W:.*]] = arith.constant 5 : i64
// CHECK-DAG: %[[D:.*]] = arith.constant 8 : i64
// CHECK-DAG: %[[C:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[HS:.*]] = arith.constant 80 : i64
// CHECK-DAG: %[[OHS:.*]] = arith.constant 40 : i64
// CHECK-NOT: scf.for
// CHECK: call @dist_rt_gemm_f32(%[[H]], %[[W]], %[[D]], %[[C]], %{{.*}}, %[[HS]], %[[C]], %{{.*}}, %{{.*}}, %[[D]], %{{.*}}, %{{.*}}, %[[OHS]], %[[D]],
// CHECK-NEXT: return
#in = affine_map<(b, h, w, d, c) -> (b, h, w, c)>
#wt = affine_map<(b, h, w, d, c) -> (c, d)>
#out = affine_map<(b, h, w, d, c) -> (b, h, w, d)>
func.func @channel_last_linear(%x: memref<1x7x5x16xf32>, %w: memref<16x8xf32>, %y: memref<1x7x5x8xf32>) {
  linalg.generic {indexing_maps = [#in, #wt, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<1x7x5x16xf32>, memref<16x8xf32>) outs(%y : memref<1x7x5x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %c, %m : f32
    linalg.yield %r : f32
  }
  return
}
