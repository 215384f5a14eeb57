// RUN: dist-opt %s --split-input-file --dist-sink-transposes | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-sink-transposes=convs-only=true | FileCheck %s --check-prefix=ONLY

// dist-sink-transposes moves the transposes around channels-last
// convolutions down through elementwise generics and constant pads until
// they cancel, and lets a pooling window read and write channels-last.

// A ReLU on a channels-last image transposed to NCHW, then transposed back
// for the next layer: the ReLU runs channels-last and no transpose is left.
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// With convs-only (as dist-opt runs it), a function without a
// channels-last convolution keeps its transposes.
// ONLY-LABEL: func.func @relu_between_layers
// ONLY: linalg.transpose
// ONLY: arith.maximumf
// ONLY: linalg.transpose
// CHECK-LABEL: func.func @relu_between_layers
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x4x8xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[X]] : tensor<1x4x4x8xf32>)
// CHECK: arith.maximumf
// CHECK-NOT: linalg.transpose
// CHECK: return %[[R]] : tensor<1x4x4x8xf32>
func.func @relu_between_layers(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %cst = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %t0 = linalg.transpose ins(%x : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<1x8x4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t0 : tensor<1x8x4x4xf32>) outs(%e1 : tensor<1x8x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %cst : f32
    linalg.yield %m : f32
  } -> tensor<1x8x4x4xf32>
  %e2 = tensor.empty() : tensor<1x4x4x8xf32>
  %t1 = linalg.transpose ins(%r : tensor<1x8x4x4xf32>) outs(%e2 : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  return %t1 : tensor<1x4x4x8xf32>
}

// -----

// A residual add of two channels-last images with a per-channel bias
// broadcast: the add runs channels-last, the bias read along the last dim;
// the NCHW result the function returns is transposed once at the end.
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-DAG: #[[$LAST:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// ONLY-LABEL: func.func @residual_add
// CHECK-LABEL: func.func @residual_add
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x5x8xf32>, %[[B:.*]]: tensor<2x3x5x8xf32>, %[[C:.*]]: tensor<8xf32>)
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#{{[a-z0-9]+}}, #{{[a-z0-9]+}}, #[[$LAST]], #{{[a-z0-9]+}}]
// CHECK-SAME: ins(%[[A]], %[[B]], %[[C]] : tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>, tensor<8xf32>)
// CHECK: } -> tensor<2x3x5x8xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[S]] : tensor<2x3x5x8xf32>) {{.*}} permutation = [0, 3, 1, 2]
// CHECK-NOT: linalg.transpose
// CHECK: return %[[T]] : tensor<2x8x3x5xf32>
func.func @residual_add(%a: tensor<2x3x5x8xf32>, %b: tensor<2x3x5x8xf32>, %c: tensor<8xf32>) -> tensor<2x8x3x5xf32> {
  %e0 = tensor.empty() : tensor<2x8x3x5xf32>
  %ta = linalg.transpose ins(%a : tensor<2x3x5x8xf32>) outs(%e0 : tensor<2x8x3x5xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<2x8x3x5xf32>
  %tb = linalg.transpose ins(%b : tensor<2x3x5x8xf32>) outs(%e1 : tensor<2x8x3x5xf32>) permutation = [0, 3, 1, 2]
  %e2 = tensor.empty() : tensor<2x8x3x5xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ta, %tb, %c : tensor<2x8x3x5xf32>, tensor<2x8x3x5xf32>, tensor<8xf32>) outs(%e2 : tensor<2x8x3x5xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %out: f32):
    %0 = arith.addf %x, %y : f32
    %1 = arith.addf %0, %z : f32
    linalg.yield %1 : f32
  } -> tensor<2x8x3x5xf32>
  return %s : tensor<2x8x3x5xf32>
}

// -----

// A max pooling window (padded by -inf) on a channels-last image whose
// result the next layer transposes to channels-last again: the pad moves
// before the transpose, the window reads the channels-last image through
// its map and writes its result channels-last, its loops in the output's
// order; no transpose is left.
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#k = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#o = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d4, d2 * 2 + d5, d3)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @max_pool
// CHECK-SAME: (%[[X:.*]]: tensor<1x6x6x4xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: %[[P:.*]] = tensor.pad %[[X]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK-NOT: linalg.transpose
// CHECK: %[[F:.*]] = linalg.fill {{.*}} -> tensor<1x3x3x4xf32>
// CHECK: %[[M:.*]] = linalg.generic {indexing_maps = [#[[$WIN]], #{{[a-z0-9]+}}, #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME: ins(%[[P]], %{{.*}} : tensor<1x8x8x4xf32>, tensor<3x3xf32>) outs(%[[F]] : tensor<1x3x3x4xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return %[[M]] : tensor<1x3x3x4xf32>
func.func @max_pool(%x: tensor<1x6x6x4xf32>) -> tensor<1x3x3x4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x4x6x6xf32>
  %t0 = linalg.transpose ins(%x : tensor<1x6x6x4xf32>) outs(%e0 : tensor<1x4x6x6xf32>) permutation = [0, 3, 1, 2]
  %p = tensor.pad %t0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %ninf : f32
  } : tensor<1x4x6x6xf32> to tensor<1x4x8x8xf32>
  %k = tensor.empty() : tensor<3x3xf32>
  %e1 = tensor.empty() : tensor<1x4x3x3xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %m = linalg.generic {indexing_maps = [#in, #k, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%p, %k : tensor<1x4x8x8xf32>, tensor<3x3xf32>) outs(%f : tensor<1x4x3x3xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x3x3xf32>
  %e2 = tensor.empty() : tensor<1x3x3x4xf32>
  %t1 = linalg.transpose ins(%m : tensor<1x4x3x3xf32>) outs(%e2 : tensor<1x3x3x4xf32>) permutation = [0, 2, 3, 1]
  return %t1 : tensor<1x3x3x4xf32>
}

// -----

// A global average pool of a channels-last image reads it through its map
// instead of a transposed copy, its channels' loop innermost (contiguous
// reads, vectorised): loops (n, h, w, c).
#in = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#o = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
// CHECK-DAG: #[[$READ:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$SUM:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
// CHECK-LABEL: func.func @global_pool
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x5x16xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[$READ]], #[[$SUM]]], iterator_types = ["parallel", "reduction", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[X]] : tensor<2x5x5x16xf32>)
func.func @global_pool(%x: tensor<2x5x5x16xf32>) -> tensor<2x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<2x16x5x5xf32>
  %t0 = linalg.transpose ins(%x : tensor<2x5x5x16xf32>) outs(%e0 : tensor<2x16x5x5xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<2x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x16xf32>) -> tensor<2x16xf32>
  %s = linalg.generic {indexing_maps = [#in, #o], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%t0 : tensor<2x16x5x5xf32>) outs(%f : tensor<2x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<2x16xf32>
  return %s : tensor<2x16xf32>
}

// -----

// Two transposes that do not cancel become one; a dynamic batch keeps its
// size.
// CHECK-LABEL: func.func @two_transposes
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x4x5xf32>)
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[X]] : tensor<?x3x4x5xf32>) {{.*}} permutation = [0, 3, 2, 1]
// CHECK-NOT: linalg.transpose
// CHECK: return %[[T]] : tensor<?x5x4x3xf32>
func.func @two_transposes(%x: tensor<?x3x4x5xf32>) -> tensor<?x5x4x3xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x3x4x5xf32>
  %e0 = tensor.empty(%n) : tensor<?x4x5x3xf32>
  %t0 = linalg.transpose ins(%x : tensor<?x3x4x5xf32>) outs(%e0 : tensor<?x4x5x3xf32>) permutation = [0, 2, 3, 1]
  %e1 = tensor.empty(%n) : tensor<?x5x4x3xf32>
  %t1 = linalg.transpose ins(%t0 : tensor<?x4x5x3xf32>) outs(%e1 : tensor<?x5x4x3xf32>) permutation = [0, 2, 1, 3]
  return %t1 : tensor<?x5x4x3xf32>
}

// -----

// A concatenation along the channels (a dense block's) of two
// channels-last images runs channels-last, along the last dim, and is
// transposed once.
// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<1x4x4x8xf32>, %[[B:.*]]: tensor<1x4x4x2xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x4x4x10xf32>
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[A]] into %[[E]][0, 0, 0, 0] [1, 4, 4, 8] [1, 1, 1, 1]
// CHECK: %[[I1:.*]] = tensor.insert_slice %[[B]] into %[[I0]][0, 0, 0, 8] [1, 4, 4, 2] [1, 1, 1, 1]
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[I1]] : tensor<1x4x4x10xf32>) {{.*}} permutation = [0, 3, 1, 2]
// CHECK: return %[[T]] : tensor<1x10x4x4xf32>
func.func @concat(%a: tensor<1x4x4x8xf32>, %b: tensor<1x4x4x2xf32>) -> tensor<1x10x4x4xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<1x2x4x4xf32>
  %tb = linalg.transpose ins(%b : tensor<1x4x4x2xf32>) outs(%e1 : tensor<1x2x4x4xf32>) permutation = [0, 3, 1, 2]
  %e = tensor.empty() : tensor<1x10x4x4xf32>
  %c0 = tensor.insert_slice %ta into %e[0, 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : tensor<1x8x4x4xf32> into tensor<1x10x4x4xf32>
  %c1 = tensor.insert_slice %tb into %c0[0, 8, 0, 0] [1, 2, 4, 4] [1, 1, 1, 1] : tensor<1x2x4x4xf32> into tensor<1x10x4x4xf32>
  return %c1 : tensor<1x10x4x4xf32>
}

// -----

// A part that is not a transpose (an upsampled NCHW image beside a skip
// connection) is transposed into the channels-last order on its own.
// CHECK-LABEL: func.func @concat_mixed
// CHECK-SAME: (%[[A:.*]]: tensor<1x4x4x8xf32>, %[[B:.*]]: tensor<1x2x4x4xf32>)
// CHECK: %[[I0:.*]] = tensor.insert_slice %[[A]] into %{{.*}}[0, 0, 0, 0] [1, 4, 4, 8] [1, 1, 1, 1]
// CHECK: %[[TB:.*]] = linalg.transpose ins(%[[B]] : tensor<1x2x4x4xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK: %[[I1:.*]] = tensor.insert_slice %[[TB]] into %[[I0]][0, 0, 0, 8] [1, 4, 4, 2] [1, 1, 1, 1] :
// CHECK: linalg.transpose ins(%[[I1]] : tensor<1x4x4x10xf32>) {{.*}} permutation = [0, 3, 1, 2]
func.func @concat_mixed(%a: tensor<1x4x4x8xf32>, %b: tensor<1x2x4x4xf32>) -> tensor<1x10x4x4xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e = tensor.empty() : tensor<1x10x4x4xf32>
  %c0 = tensor.insert_slice %ta into %e[0, 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : tensor<1x8x4x4xf32> into tensor<1x10x4x4xf32>
  %c1 = tensor.insert_slice %b into %c0[0, 8, 0, 0] [1, 2, 4, 4] [1, 1, 1, 1] : tensor<1x2x4x4xf32> into tensor<1x10x4x4xf32>
  return %c1 : tensor<1x10x4x4xf32>
}

// -----

// ShuffleNet's channel shuffle and split between channels-last layers:
// NCHW, split the channels into 2 groups, swap the group dims, merge them,
// take two halves, each transposed back for its layer. The split and merge
// run on the channels-last image, the shuffle as a permutation of each
// pixel's channels ([0, 1, 2, 4, 3]); the halves slice the last dim, and
// no other transpose is left.
// CHECK-LABEL: func.func @channel_shuffle
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x4x8xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: %[[E:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 4, 4, 2, 4] : tensor<1x4x4x8xf32> into tensor<1x4x4x2x4xf32>
// CHECK: %[[S:.*]] = linalg.transpose ins(%[[E]] : tensor<1x4x4x2x4xf32>) {{.*}} permutation = [0, 1, 2, 4, 3]
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[S]] {{\[\[}}0], [1], [2], [3, 4]] : tensor<1x4x4x4x2xf32> into tensor<1x4x4x8xf32>
// CHECK-DAG: %[[A:.*]] = tensor.extract_slice %[[C]][0, 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1]
// CHECK-DAG: %[[B:.*]] = tensor.extract_slice %[[C]][0, 0, 0, 4] [1, 4, 4, 4] [1, 1, 1, 1]
// CHECK-NOT: linalg.transpose
// CHECK: return %[[A]], %[[B]] : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
func.func @channel_shuffle(%x: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %t0 = linalg.transpose ins(%x : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %g = tensor.expand_shape %t0 [[0], [1, 2], [3], [4]] output_shape [1, 2, 4, 4, 4] : tensor<1x8x4x4xf32> into tensor<1x2x4x4x4xf32>
  %e1 = tensor.empty() : tensor<1x4x2x4x4xf32>
  %sw = linalg.transpose ins(%g : tensor<1x2x4x4x4xf32>) outs(%e1 : tensor<1x4x2x4x4xf32>) permutation = [0, 2, 1, 3, 4]
  %m = tensor.collapse_shape %sw [[0], [1, 2], [3], [4]] : tensor<1x4x2x4x4xf32> into tensor<1x8x4x4xf32>
  %h0 = tensor.extract_slice %m[0, 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : tensor<1x8x4x4xf32> to tensor<1x4x4x4xf32>
  %h1 = tensor.extract_slice %m[0, 4, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : tensor<1x8x4x4xf32> to tensor<1x4x4x4xf32>
  %e2 = tensor.empty() : tensor<1x4x4x4xf32>
  %a = linalg.transpose ins(%h0 : tensor<1x4x4x4xf32>) outs(%e2 : tensor<1x4x4x4xf32>) permutation = [0, 2, 3, 1]
  %e3 = tensor.empty() : tensor<1x4x4x4xf32>
  %b = linalg.transpose ins(%h1 : tensor<1x4x4x4xf32>) outs(%e3 : tensor<1x4x4x4xf32>) permutation = [0, 2, 3, 1]
  return %a, %b : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
}

// -----

// Kept: a flatten of the NCHW image (its merge needs the transposed
// order) and the split of a channels-last convolution's input into its
// groups (the convolution reads its image as stored).
#cl_in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d5, d2 + d6, d3, d7)>
#cl_w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d7, d5, d6)>
#cl_out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @kept
// CHECK: %[[T:.*]] = linalg.transpose ins(%{{.*}} : tensor<1x4x4x8xf32>) {{.*}} permutation = [0, 3, 1, 2]
// CHECK: tensor.collapse_shape %[[T]] {{\[\[}}0], [1, 2, 3]] : tensor<1x8x4x4xf32> into tensor<1x128xf32>
// CHECK: %[[U:.*]] = linalg.transpose ins(%{{.*}} : tensor<1x8x4x4xf32>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK: %[[G:.*]] = tensor.expand_shape %[[U]] {{\[\[}}0], [1], [2], [3, 4]]
// CHECK: linalg.generic {{.*}} ins(%[[G]], %{{.*}} : tensor<1x4x4x1x8xf32>, tensor<1x8x8x1x1xf32>)
func.func @kept(%x: tensor<1x4x4x8xf32>, %y: tensor<1x8x4x4xf32>, %w: tensor<1x8x8x1x1xf32>) -> (tensor<1x128xf32>, tensor<1x4x4x1x8xf32>) {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %t0 = linalg.transpose ins(%x : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %flat = tensor.collapse_shape %t0 [[0], [1, 2, 3]] : tensor<1x8x4x4xf32> into tensor<1x128xf32>
  %e1 = tensor.empty() : tensor<1x4x4x8xf32>
  %t1 = linalg.transpose ins(%y : tensor<1x8x4x4xf32>) outs(%e1 : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  %g = tensor.expand_shape %t1 [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : tensor<1x4x4x8xf32> into tensor<1x4x4x1x8xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<1x4x4x1x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x4x4x1x8xf32>) -> tensor<1x4x4x1x8xf32>
  %c = linalg.generic {indexing_maps = [#cl_in, #cl_w, #cl_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%g, %w : tensor<1x4x4x1x8xf32>, tensor<1x8x8x1x1xf32>) outs(%f : tensor<1x4x4x1x8xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x1x8xf32>
  return %flat, %c : tensor<1x128xf32>, tensor<1x4x4x1x8xf32>
}

// -----

// A max pooling whose result one layer reads transposed and another
// through a zero pad, transposed (ShuffleNet's, before its two branches):
// it writes the channels-last result, and the pad pads that.
#pin = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#pk = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#po = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @pool_then_pad
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: } -> tensor<1x3x3x4xf32>
// CHECK-NOT: linalg.transpose
// CHECK: %[[P:.*]] = tensor.pad %[[M]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: } : tensor<1x3x3x4xf32> to tensor<1x5x5x4xf32>
// CHECK-NOT: linalg.transpose
// CHECK: return %[[M]], %[[P]] : tensor<1x3x3x4xf32>, tensor<1x5x5x4xf32>
func.func @pool_then_pad(%x: tensor<1x6x6x4xf32>) -> (tensor<1x3x3x4xf32>, tensor<1x5x5x4xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x4x6x6xf32>
  %t0 = linalg.transpose ins(%x : tensor<1x6x6x4xf32>) outs(%e0 : tensor<1x4x6x6xf32>) permutation = [0, 3, 1, 2]
  %p = tensor.pad %t0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %ninf : f32
  } : tensor<1x4x6x6xf32> to tensor<1x4x8x8xf32>
  %k = tensor.empty() : tensor<3x3xf32>
  %e1 = tensor.empty() : tensor<1x4x3x3xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %m = linalg.generic {indexing_maps = [#pin, #pk, #po], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%p, %k : tensor<1x4x8x8xf32>, tensor<3x3xf32>) outs(%f : tensor<1x4x3x3xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x3x3xf32>
  %e2 = tensor.empty() : tensor<1x3x3x4xf32>
  %t1 = linalg.transpose ins(%m : tensor<1x4x3x3xf32>) outs(%e2 : tensor<1x3x3x4xf32>) permutation = [0, 2, 3, 1]
  %zp = tensor.pad %m low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x4x3x3xf32> to tensor<1x4x5x5xf32>
  %e3 = tensor.empty() : tensor<1x5x5x4xf32>
  %t2 = linalg.transpose ins(%zp : tensor<1x4x5x5xf32>) outs(%e3 : tensor<1x5x5x4xf32>) permutation = [0, 2, 3, 1]
  return %t1, %t2 : tensor<1x3x3x4xf32>, tensor<1x5x5x4xf32>
}

// -----

// A max pooling whose result one layer reads transposed and a second
// pooling reads through a -inf pad (GoogLeNet's inception branch after its
// stride-2 pooling), that second pooling's result read transposed: both
// windows read and write channels-last, the pad pads channels-last, and no
// transpose is left.
#pin = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#qin = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
#pk = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#po = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$QWIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 + d4, d2 + d5, d3)>
// CHECK-LABEL: func.func @pool_then_padded_pool
// CHECK-NOT: linalg.transpose
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: } -> tensor<1x3x3x4xf32>
// CHECK-NOT: linalg.transpose
// CHECK: %[[P:.*]] = tensor.pad %[[M]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: } : tensor<1x3x3x4xf32> to tensor<1x5x5x4xf32>
// CHECK-NOT: linalg.transpose
// CHECK: %[[Q:.*]] = linalg.generic {indexing_maps = [#[[$QWIN]], {{.*}} ins(%[[P]],
// CHECK: } -> tensor<1x3x3x4xf32>
// CHECK-NOT: linalg.transpose
// CHECK: return %[[M]], %[[Q]] : tensor<1x3x3x4xf32>, tensor<1x3x3x4xf32>
func.func @pool_then_padded_pool(%x: tensor<1x6x6x4xf32>) -> (tensor<1x3x3x4xf32>, tensor<1x3x3x4xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<1x4x6x6xf32>
  %t0 = linalg.transpose ins(%x : tensor<1x6x6x4xf32>) outs(%e0 : tensor<1x4x6x6xf32>) permutation = [0, 3, 1, 2]
  %p = tensor.pad %t0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %ninf : f32
  } : tensor<1x4x6x6xf32> to tensor<1x4x8x8xf32>
  %k = tensor.empty() : tensor<3x3xf32>
  %e1 = tensor.empty() : tensor<1x4x3x3xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %m = linalg.generic {indexing_maps = [#pin, #pk, #po], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%p, %k : tensor<1x4x8x8xf32>, tensor<3x3xf32>) outs(%f : tensor<1x4x3x3xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x3x3xf32>
  %e2 = tensor.empty() : tensor<1x3x3x4xf32>
  %t1 = linalg.transpose ins(%m : tensor<1x4x3x3xf32>) outs(%e2 : tensor<1x3x3x4xf32>) permutation = [0, 2, 3, 1]
  %mp = tensor.pad %m low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %ninf : f32
  } : tensor<1x4x3x3xf32> to tensor<1x4x5x5xf32>
  %q = linalg.generic {indexing_maps = [#qin, #pk, #po], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%mp, %k : tensor<1x4x5x5xf32>, tensor<3x3xf32>) outs(%f : tensor<1x4x3x3xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x3x3xf32>
  %t2 = linalg.transpose ins(%q : tensor<1x4x3x3xf32>) outs(%e2 : tensor<1x3x3x4xf32>) permutation = [0, 2, 3, 1]
  return %t1, %t2 : tensor<1x3x3x4xf32>, tensor<1x3x3x4xf32>
}

// -----

// A max pooling on a channels-last image whose result one user transposes
// to channels-last and an elementwise one (a normalisation's scale) reads
// as NCHW: the window writes channels-last and the elementwise user reads
// it transposed back, a transpose that then sinks through it to the
// output, where it is left.
#pin = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#pk = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#po = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
#pid = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$PWIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d4, d2 * 2 + d5, d3)>
// CHECK-DAG: #[[$POUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @pool_with_elementwise_user
// CHECK: %[[M:.*]] = linalg.generic {indexing_maps = [#[[$PWIN]], #{{[a-z0-9]+}}, #[[$POUT]]]
// CHECK-SAME: outs(%{{.*}} : tensor<1x2x2x4xf32>)
// CHECK: %[[S:.*]] = linalg.generic
// CHECK-SAME: ins(%[[M]] : tensor<1x2x2x4xf32>)
// CHECK: arith.mulf
// CHECK: %[[BACK:.*]] = linalg.transpose ins(%[[S]] : tensor<1x2x2x4xf32>) outs(%{{.*}} : tensor<1x4x2x2xf32>) permutation = [0, 3, 1, 2]
// CHECK-NOT: linalg.transpose
// CHECK: return %[[M]], %[[BACK]]
func.func @pool_with_elementwise_user(%x: tensor<1x4x4x4xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x4x2x2xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %two = arith.constant 2.0 : f32
  %e0 = tensor.empty() : tensor<1x4x4x4xf32>
  %t0 = linalg.transpose ins(%x : tensor<1x4x4x4xf32>) outs(%e0 : tensor<1x4x4x4xf32>) permutation = [0, 3, 1, 2]
  %k = tensor.empty() : tensor<2x2xf32>
  %e1 = tensor.empty() : tensor<1x4x2x2xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %m = linalg.generic {indexing_maps = [#pin, #pk, #po], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%t0, %k : tensor<1x4x4x4xf32>, tensor<2x2xf32>) outs(%f : tensor<1x4x2x2xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x2x2xf32>
  %e2 = tensor.empty() : tensor<1x2x2x4xf32>
  %t1 = linalg.transpose ins(%m : tensor<1x4x2x2xf32>) outs(%e2 : tensor<1x2x2x4xf32>) permutation = [0, 2, 3, 1]
  %e3 = tensor.empty() : tensor<1x4x2x2xf32>
  %s = linalg.generic {indexing_maps = [#pid, #pid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%m : tensor<1x4x2x2xf32>) outs(%e3 : tensor<1x4x2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %two : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x2x2xf32>
  return %t1, %s : tensor<1x2x2x4xf32>, tensor<1x4x2x2xf32>
}

// -----

// An average pooling's sum on a channels-last image read only by its
// division (elementwise) writes channels-last too, in the order it reads
// the image; the division reads it transposed back, which sinks through
// it. A window on an NCHW image keeps its layout.
#ain = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#ak = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#ao = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
#aid = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$AWIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d4, d2 * 2 + d5, d3)>
// CHECK-LABEL: func.func @average_pool
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[$AWIN]],
// CHECK-SAME: outs(%{{.*}} : tensor<1x2x2x4xf32>)
// CHECK: %[[DIV:.*]] = linalg.generic
// CHECK-SAME: ins(%[[SUM]] : tensor<1x2x2x4xf32>)
// CHECK: %[[BACK:.*]] = linalg.transpose ins(%[[DIV]] : tensor<1x2x2x4xf32>) outs(%{{.*}} : tensor<1x4x2x2xf32>) permutation = [0, 3, 1, 2]
// CHECK: return %[[BACK]]
// CHECK-LABEL: func.func @average_pool_nchw
// CHECK-NOT: linalg.transpose
// CHECK: outs(%{{.*}} : tensor<1x4x2x2xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @average_pool(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %four = arith.constant 4.0 : f32
  %e0 = tensor.empty() : tensor<1x4x4x4xf32>
  %t0 = linalg.transpose ins(%x : tensor<1x4x4x4xf32>) outs(%e0 : tensor<1x4x4x4xf32>) permutation = [0, 3, 1, 2]
  %k = tensor.empty() : tensor<2x2xf32>
  %e1 = tensor.empty() : tensor<1x4x2x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %m = linalg.generic {indexing_maps = [#ain, #ak, #ao], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%t0, %k : tensor<1x4x4x4xf32>, tensor<2x2xf32>) outs(%f : tensor<1x4x2x2xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x2x2xf32>
  %e2 = tensor.empty() : tensor<1x4x2x2xf32>
  %d = linalg.generic {indexing_maps = [#aid, #aid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%m : tensor<1x4x2x2xf32>) outs(%e2 : tensor<1x4x2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %in, %four : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x2x2xf32>
  return %d : tensor<1x4x2x2xf32>
}
func.func @average_pool_nchw(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %four = arith.constant 4.0 : f32
  %k = tensor.empty() : tensor<2x2xf32>
  %e1 = tensor.empty() : tensor<1x4x2x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %m = linalg.generic {indexing_maps = [#ain, #ak, #ao], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %k : tensor<1x4x4x4xf32>, tensor<2x2xf32>) outs(%f : tensor<1x4x2x2xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x2x2xf32>
  %e2 = tensor.empty() : tensor<1x4x2x2xf32>
  %d = linalg.generic {indexing_maps = [#aid, #aid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%m : tensor<1x4x2x2xf32>) outs(%e2 : tensor<1x4x2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %in, %four : f32
    linalg.yield %0 : f32
  } -> tensor<1x4x2x2xf32>
  return %d : tensor<1x4x2x2xf32>
}

// -----

// A model's input image transposed to channels-last and padded for a
// stem: nothing above the transpose to cancel, so the pad stays the
// convolution's own (the runtime call pads it without a copy) instead of
// padding the NCHW image before the transpose. The same transposed input
// padded for an elementwise generic still moves its pad up (and the
// transpose down past the generic).
// CHECK-LABEL: func.func @stem_keeps_its_pad
// CHECK: %[[T:.*]] = linalg.transpose ins(%{{.*}} : tensor<1x3x8x8xf32>) outs(%{{.*}} : tensor<1x8x8x3xf32>) permutation = [0, 2, 3, 1]
// CHECK: %[[P:.*]] = tensor.pad %[[T]] low[0, 1, 1, 0] high[0, 0, 0, 0]
// CHECK: tensor.expand_shape %[[P]]
// CHECK: dist.channels_last_conv
// CHECK-LABEL: func.func @input_pad_for_elementwise
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 0, 0]
// CHECK: arith.negf
// CHECK: linalg.transpose ins(%{{.*}} : tensor<1x3x9x9xf32>)
#cin = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 * 2 + d5, d2 * 2 + d6, d3, d7)>
#cw = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d7, d5, d6)>
#cout = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @stem_keeps_its_pad(%x: tensor<1x3x8x8xf32>, %w: tensor<1x4x3x3x3xf32>) -> tensor<1x4x4x1x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x3xf32>
  %t = linalg.transpose ins(%x : tensor<1x3x8x8xf32>) outs(%e : tensor<1x8x8x3xf32>) permutation = [0, 2, 3, 1]
  %p = tensor.pad %t low[0, 1, 1, 0] high[0, 0, 0, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x3xf32> to tensor<1x9x9x3xf32>
  %v = tensor.expand_shape %p [[0], [1], [2], [3, 4]] output_shape [1, 9, 9, 1, 3] : tensor<1x9x9x3xf32> into tensor<1x9x9x1x3xf32>
  %o = tensor.empty() : tensor<1x4x4x1x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<1x4x4x1x4xf32>) -> tensor<1x4x4x1x4xf32>
  %c = linalg.generic {indexing_maps = [#cin, #cw, #cout], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%v, %w : tensor<1x9x9x1x3xf32>, tensor<1x4x3x3x3xf32>) outs(%f : tensor<1x4x4x1x4xf32>) attrs = {dist.channels_last_conv = array<i64: 2, 2, 1, 1>} {
  ^bb0(%in: f32, %win: f32, %out: f32):
    %m = arith.mulf %in, %win : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x1x4xf32>
  return %c : tensor<1x4x4x1x4xf32>
}
func.func @input_pad_for_elementwise(%x: tensor<1x3x8x8xf32>) -> tensor<1x9x9x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x3xf32>
  %t = linalg.transpose ins(%x : tensor<1x3x8x8xf32>) outs(%e : tensor<1x8x8x3xf32>) permutation = [0, 2, 3, 1]
  %p = tensor.pad %t low[0, 1, 1, 0] high[0, 0, 0, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x3xf32> to tensor<1x9x9x3xf32>
  %e2 = tensor.empty() : tensor<1x9x9x3xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p : tensor<1x9x9x3xf32>) outs(%e2 : tensor<1x9x9x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<1x9x9x3xf32>
  return %n : tensor<1x9x9x3xf32>
}
