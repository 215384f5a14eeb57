// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(dist-hoist-parallel-dims,cse))' | FileCheck %s

// An in-place update of a [32, 32, 3, 3] convolution weight: the innermost
// loop (3) is shorter than a vector, so all four dimensions merge into one
// loop of 9216 that LLVM vectorises; the buffer read and written in place
// is one collapse_shape after CSE.
// CHECK-LABEL: func.func @update_conv_weight
// CHECK-SAME: (%[[P:.*]]: memref<32x32x3x3xf32>, %[[G:.*]]: memref<32x32x3x3xf32>, %[[LR:.*]]: memref<f32>)
// CHECK-DAG: %[[PF:.*]] = memref.collapse_shape %[[P]] {{\[}}[0, 1, 2, 3]] : memref<32x32x3x3xf32> into memref<9216xf32>
// CHECK-DAG: %[[GF:.*]] = memref.collapse_shape %[[G]] {{\[}}[0, 1, 2, 3]]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel"]
// CHECK-SAME: ins(%[[PF]], %[[GF]], %[[LR]] : memref<9216xf32>, memref<9216xf32>, memref<f32>)
// CHECK-SAME: outs(%[[PF]] : memref<9216xf32>)
// CHECK-NOT: memref.collapse_shape
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#s4 = affine_map<(d0, d1, d2, d3) -> ()>
func.func @update_conv_weight(%p: memref<32x32x3x3xf32>, %g: memref<32x32x3x3xf32>, %lr: memref<f32>) {
  linalg.generic {indexing_maps = [#id4, #id4, #s4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p, %g, %lr : memref<32x32x3x3xf32>, memref<32x32x3x3xf32>, memref<f32>) outs(%p : memref<32x32x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %r: f32, %o: f32):
    %m = arith.mulf %b, %r : f32
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A per-channel operand ([C] broadcast over [N, C, H, W]) keeps C apart:
// only H and W, which every operand lays out contiguously, merge.
// CHECK-LABEL: func.func @channel_scale
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : memref<8x32x4x4xf32> into memref<8x32x16xf32>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
#x4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c4 = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @channel_scale(%x: memref<8x32x4x4xf32>, %s: memref<32xf32>, %y: memref<8x32x4x4xf32>) {
  linalg.generic {indexing_maps = [#x4, #c4, #x4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s : memref<8x32x4x4xf32>, memref<32xf32>) outs(%y : memref<8x32x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// An innermost loop of four vectors or more is left as it is.
// CHECK-LABEL: func.func @long_rows
// CHECK-NOT: memref.collapse_shape
// CHECK: iterator_types = ["parallel", "parallel"]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @long_rows(%x: memref<64x64xf32>, %y: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x64xf32>) outs(%y : memref<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A transposed operand breaks the contiguous sequence: nothing merges.
// CHECK-LABEL: func.func @transposed
// CHECK-NOT: memref.collapse_shape
// CHECK: iterator_types = ["parallel", "parallel"]
#t2 = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @transposed(%x: memref<3x64xf32>, %y: memref<64x3xf32>) {
  linalg.generic {indexing_maps = [#t2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<3x64xf32>) outs(%y : memref<64x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

// A strided view that cannot collapse without a copy stays as it is.
// CHECK-LABEL: func.func @strided
// CHECK-NOT: memref.collapse_shape
// CHECK: iterator_types = ["parallel", "parallel"]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @strided(%x: memref<64x3xf32, strided<[4, 1]>>, %y: memref<64x3xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x3xf32, strided<[4, 1]>>) outs(%y : memref<64x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

// Rows of 28 (a vector and a remainder of 12, a CNN's 28 x 28 images)
// merge with everything around them into one loop.
// CHECK-LABEL: func.func @rows_of_28
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0, 1, 2, 3]] : memref<2x4x28x28xf32> into memref<6272xf32>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel"]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @rows_of_28(%x: memref<2x4x28x28xf32>, %y: memref<2x4x28x28xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<2x4x28x28xf32>) outs(%y : memref<2x4x28x28xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Squeeze-excitation's scale on 14 x 14 images: the [1, C, 1, 1] operand,
// read at 0 in its unit dims, is read through a view without them, and H
// and W merge into one loop of 196.
// CHECK-LABEL: func.func @unit_channel_scale
// CHECK: %[[S:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : memref<1x8x1x1xf32> into memref<1x8xf32>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: ins(%[[S]], %{{.*}} : memref<1x8xf32>, memref<1x8x196xf32>)
// CHECK-SAME: outs(%{{.*}} : memref<1x8x196xf32>)
#scale = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @unit_channel_scale(%s: memref<1x8x1x1xf32>, %x: memref<1x8x14x14xf32>, %y: memref<1x8x14x14xf32>) {
  linalg.generic {indexing_maps = [#scale, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %x : memref<1x8x1x1xf32>, memref<1x8x14x14xf32>) outs(%y : memref<1x8x14x14xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// An operand read at element 1 of a dim broadcasts no unit dim: nothing
// merges.
// CHECK-LABEL: func.func @second_element
// CHECK-NOT: memref.collapse_shape
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : memref<1x8x2x1xf32>, memref<1x8x14x14xf32>)
#second = affine_map<(d0, d1, d2, d3) -> (d0, d1, 1, 0)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @second_element(%s: memref<1x8x2x1xf32>, %x: memref<1x8x14x14xf32>, %y: memref<1x8x14x14xf32>) {
  linalg.generic {indexing_maps = [#second, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %x : memref<1x8x2x1xf32>, memref<1x8x14x14xf32>) outs(%y : memref<1x8x14x14xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  }
  return
}
