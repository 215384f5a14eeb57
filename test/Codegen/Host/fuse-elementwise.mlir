// RUN: dist-opt %s --dist-fuse-elementwise --split-input-file --mlir-print-local-scope | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-fuse-elementwise \
// RUN:   --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries \
// RUN:   function-boundary-type-conversion=identity-layout-map" --canonicalize \
// RUN:   | FileCheck %s --check-prefix=BUF

// An elementwise producer with a second user after its elementwise
// consumer (AdamW's first moment: the parameter update reads it, the
// optimizer state keeps it) is fused into the consumer, which also yields
// the producer's result: one loop, the moment computed once and stored
// once, in place (the step's parameter stores are materialize_in_destination
// into the arguments).

// CHECK-LABEL: func.func @moment_and_update(
// CHECK-NOT: linalg.generic
// CHECK: %[[F:.*]]:2 = linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: materialize_in_destination %[[F]]#{{[01]}}
// CHECK: materialize_in_destination %[[F]]#{{[01]}}

// BUF-LABEL: func.func @moment_and_update(
// BUF-NOT: memref.alloc
// BUF-NOT: memref.copy
// BUF: linalg.generic
// BUF-NOT: linalg.generic
// BUF-NOT: memref.copy
// BUF: return
func.func @moment_and_update(%p: tensor<1000x32xf32>, %g: tensor<1000x32xf32>, %m: tensor<1000x32xf32>) -> (tensor<1000x32xf32>, tensor<1000x32xf32>) {
  %b = arith.constant 0.9 : f32
  %c = arith.constant 0.1 : f32
  %lr = arith.constant 0.001 : f32
  %mn = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %g : tensor<1000x32xf32>, tensor<1000x32xf32>) outs(%m : tensor<1000x32xf32>) {
  ^bb0(%a: f32, %x: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    %t = arith.mulf %x, %c : f32
    %u = arith.addf %s, %t : f32
    linalg.yield %u : f32
  } -> tensor<1000x32xf32>
  %pn = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p, %mn : tensor<1000x32xf32>, tensor<1000x32xf32>) outs(%p : tensor<1000x32xf32>) {
  ^bb0(%a: f32, %x: f32, %o: f32):
    %s = arith.mulf %x, %lr : f32
    %u = arith.subf %a, %s : f32
    linalg.yield %u : f32
  } -> tensor<1000x32xf32>
  %pw = bufferization.materialize_in_destination %pn in %p : (tensor<1000x32xf32>, tensor<1000x32xf32>) -> tensor<1000x32xf32>
  %mw = bufferization.materialize_in_destination %mn in %m : (tensor<1000x32xf32>, tensor<1000x32xf32>) -> tensor<1000x32xf32>
  return %pw, %mw : tensor<1000x32xf32>, tensor<1000x32xf32>
}

// -----

// Another user before the consumer would read a value the fused op only
// defines later: no fusion, two loops.

// CHECK-LABEL: func.func @user_before_consumer(
// CHECK: linalg.generic
// CHECK: tensor.extract
// CHECK: linalg.generic
func.func @user_before_consumer(%p: tensor<64xf32>, %g: tensor<64xf32>) -> (tensor<64xf32>, f32) {
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<64xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%g : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %first = tensor.extract %sq[%c0] : tensor<64xf32>
  %pn = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%p, %sq : tensor<64xf32>, tensor<64xf32>) outs(%p : tensor<64xf32>) {
  ^bb0(%a: f32, %x: f32, %o: f32):
    %u = arith.subf %a, %x : f32
    linalg.yield %u : f32
  } -> tensor<64xf32>
  return %pn, %first : tensor<64xf32>, f32
}

// -----

// A consumer that broadcasts the producer's result would compute it once
// per broadcast element: no fusion.

// CHECK-LABEL: func.func @broadcast_consumer(
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel"]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
func.func @broadcast_consumer(%g: tensor<64xf32>, %x: tensor<64x8xf32>) -> (tensor<64x8xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%g : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.sqrt %a : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %sq : tensor<64x8xf32>, tensor<64xf32>) outs(%e2 : tensor<64x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %u = arith.mulf %a, %b : f32
    linalg.yield %u : f32
  } -> tensor<64x8xf32>
  return %r, %sq : tensor<64x8xf32>, tensor<64xf32>
}

// -----

// A consumer reading the shared producer in two operands (a squared
// difference whose difference is also kept): one loop, both results.

// CHECK-LABEL: func.func @squared_difference(
// CHECK-NOT: linalg.generic
// CHECK: %[[F:.*]]:2 = linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<64xf32>, tensor<64xf32>)
// CHECK: %[[D:.*]] = arith.subf
// CHECK: %[[S:.*]] = arith.mulf %[[D]], %[[D]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[F]]#{{[01]}}, %[[F]]#{{[01]}}
func.func @squared_difference(%x: tensor<64xf32>, %y: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %y : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %e2 = tensor.empty() : tensor<64xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%d, %d : tensor<64xf32>, tensor<64xf32>) outs(%e2 : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<64xf32>
  return %sq, %d : tensor<64xf32>, tensor<64xf32>
}

// -----

// A consumer reading the shared producer through two different maps (d and
// its transpose) is not fused with it: the second read would stay an
// operand of the fused op and read the fused op's own result.

// CHECK-LABEL: func.func @read_twice_transposed(
// CHECK: %[[D:.*]] = linalg.generic
// CHECK: arith.subf
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[D]], %[[D]] : tensor<16x16xf32>, tensor<16x16xf32>)
// CHECK: return
func.func @read_twice_transposed(%x: tensor<16x16xf32>, %y: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %e = tensor.empty() : tensor<16x16xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<16x16xf32>, tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  %e2 = tensor.empty() : tensor<16x16xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%d, %d : tensor<16x16xf32>, tensor<16x16xf32>) outs(%e2 : tensor<16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<16x16xf32>
  return %p, %d : tensor<16x16xf32>, tensor<16x16xf32>
}

// -----

// A bias broadcast that CSE shared between two convolutions (the init both
// accumulate into): the second gets a broadcast of its own, so no copy is
// left once bufferized. The same through a shared expand_shape (a grouped
// convolution's 5-D init): the second writer gets the broadcast and the
// reshape again. A broadcast that one op writes and another reads stays
// shared.
// CHECK-LABEL: func.func @shared_bias_init(
// CHECK-COUNT-2: linalg.generic {{.*}} ins(%arg2 : tensor<8xf32>)
// CHECK-NOT: linalg.generic
// BUF-LABEL: func.func @shared_bias_init(
// BUF-NOT: memref.copy
// BUF: return
// CHECK-LABEL: func.func @shared_through_reshape(
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<8xf32>)
// CHECK: tensor.expand_shape
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<8xf32>)
// CHECK: tensor.expand_shape
// BUF-LABEL: func.func @shared_through_reshape(
// BUF-NOT: memref.copy
// BUF: return
// CHECK-LABEL: func.func @written_and_read(
// CHECK-COUNT-1: linalg.generic {{.*}} ins(%arg1 : tensor<8xf32>)
// CHECK-NOT: ins(%arg1 : tensor<8xf32>)
#bias = affine_map<(n, c, h, w) -> (c)>
#id = affine_map<(n, c, h, w) -> (n, c, h, w)>
func.func @shared_bias_init(%x: tensor<1x3x6x6xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>, %w2: tensor<8x3x3x3xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : tensor<8xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x8x4x4xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x6x6xf32>, tensor<8x3x3x3xf32>) outs(%init : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w2 : tensor<1x3x6x6xf32>, tensor<8x3x3x3xf32>) outs(%init : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %c1, %c2 : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}

#bias5 = affine_map<(n, g, c, h, w) -> (g, c)>
#sum5 = affine_map<(n, g, c, h, w) -> (n, g, c, h, w)>
func.func @shared_through_reshape(%b: tensor<8xf32>, %x: tensor<1x8x1x4x4xf32>, %y: tensor<1x8x1x4x4xf32>) -> (tensor<1x8x1x4x4xf32>, tensor<1x8x1x4x4xf32>) {
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : tensor<8xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x8x4x4xf32>
  %v = tensor.expand_shape %init [[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 4, 4] : tensor<1x8x4x4xf32> into tensor<1x8x1x4x4xf32>
  %a1 = linalg.generic {indexing_maps = [#sum5, #sum5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x8x1x4x4xf32>) outs(%v : tensor<1x8x1x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x8x1x4x4xf32>
  %a2 = linalg.generic {indexing_maps = [#sum5, #sum5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%y : tensor<1x8x1x4x4xf32>) outs(%v : tensor<1x8x1x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x8x1x4x4xf32>
  return %a1, %a2 : tensor<1x8x1x4x4xf32>, tensor<1x8x1x4x4xf32>
}

func.func @written_and_read(%x: tensor<1x3x6x6xf32>, %b: tensor<8xf32>, %w: tensor<8x3x3x3xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : tensor<8xf32>) outs(%e : tensor<1x8x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x8x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x6x6xf32>, tensor<8x3x3x3xf32>) outs(%init : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %c, %init : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}

// -----

// A squeeze-excitation gate: the sigmoid of 32 values stays a loop of its
// own instead of being computed again at every pixel it scales; a cheap
// broadcast producer (a shift of the same 32 values) still fuses.

// CHECK-LABEL: func.func @gate_not_recomputed(
// CHECK: %[[G:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: -> tensor<1x1x1x32xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[G]], %{{.*}} : tensor<1x1x1x32xf32>, tensor<1x56x56x32xf32>)
// CHECK-NOT: math.exp
// CHECK: arith.mulf
// CHECK: -> tensor<1x56x56x32xf32>
// CHECK-LABEL: func.func @cheap_broadcast_fuses(
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<1x1x1x32xf32>, tensor<1x56x56x32xf32>)
// CHECK: arith.addf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @gate_not_recomputed(%s: tensor<1x1x1x32xf32>, %x: tensor<1x56x56x32xf32>) -> tensor<1x56x56x32xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x1x1x32xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x1x1x32xf32>) outs(%e : tensor<1x1x1x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %x1 = math.exp %n : f32
    %d = arith.addf %x1, %one : f32
    %r = arith.divf %one, %d : f32
    linalg.yield %r : f32
  } -> tensor<1x1x1x32xf32>
  %e2 = tensor.empty() : tensor<1x56x56x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %x : tensor<1x1x1x32xf32>, tensor<1x56x56x32xf32>) outs(%e2 : tensor<1x56x56x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x56x56x32xf32>
  return %y : tensor<1x56x56x32xf32>
}

func.func @cheap_broadcast_fuses(%s: tensor<1x1x1x32xf32>, %x: tensor<1x56x56x32xf32>) -> tensor<1x56x56x32xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x1x1x32xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x1x1x32xf32>) outs(%e : tensor<1x1x1x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.addf %a, %one : f32
    linalg.yield %d : f32
  } -> tensor<1x1x1x32xf32>
  %e2 = tensor.empty() : tensor<1x56x56x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %x : tensor<1x1x1x32xf32>, tensor<1x56x56x32xf32>) outs(%e2 : tensor<1x56x56x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x56x56x32xf32>
  return %y : tensor<1x56x56x32xf32>
}
