// RUN: dist-opt %s --split-input-file --dist-contractions-to-runtime --dist-fuse-product-epilogues | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-contractions-to-runtime --cse --dist-fuse-product-epilogues | FileCheck %s --check-prefix=CSE

// A product into a fresh buffer, then a loop writing a fresh O as
// Clip(T + bias) with the bias per row of the product: one call writes O
// (flags 2 = Clip, bounds 0 and 6, no image columns) and T goes.
// CHECK-LABEL: func.func @bias_rows_clip(
// CHECK-SAME: %[[W:[^:]*]]: memref<16x8xf32>, %[[X:[^:]*]]: memref<8x32xf32>, %[[B:[^:]*]]: memref<16xf32>)
// CHECK: %[[O:.*]] = memref.alloc() : memref<16x32xf32>
// CHECK-NOT: memref.alloc
// CHECK: memref.extract_aligned_pointer_as_index %[[O]]
// CHECK: memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: %[[FLAGS:.*]] = arith.constant 2 : i64
// CHECK: %[[LO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[HI:.*]] = arith.constant 6.000000e+00 : f32
// CHECK: %[[LEN:.*]] = arith.constant 0 : i64
// CHECK: call @dist_rt_gemm_set_act_f32({{.*}}, %[[FLAGS]], %[[LO]], %[[HI]], %[[LEN]], %{{.*}})
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.dealloc
// CHECK: return %[[O]]
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @bias_rows_clip(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %six = arith.constant 6.000000e+00 : f32
  %o = memref.alloc() : memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.cmpf olt, %0, %zero : f32
    %2 = arith.select %1, %zero, %0 : f32
    %3 = arith.cmpf ogt, %2, %six : f32
    %4 = arith.select %3, %six, %2 : f32
    linalg.yield %4 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

// -----

// A bias per column and ReLU as maximumf with +0.0: flags 1, the bias's
// stride as the column step (the row step 0).
// CHECK-LABEL: func.func @bias_cols_relu(
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[BSTRIDES:.*]] = memref.extract_strided_metadata %arg2
// CHECK: %[[BSJ:.*]] = arith.index_cast %[[BSTRIDES]] : index to i64
// CHECK: %[[FLAGS:.*]] = arith.constant 1 : i64
// CHECK: call @dist_rt_gemm_set_act_f32({{.*}}, %c0_i64{{(_[0-9]+)?}}, %[[BSJ]], %[[FLAGS]],
// CHECK-NOT: linalg.generic
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#col = affine_map<(i, j) -> (j)>
func.func @bias_cols_relu(%x: memref<16x8xf32>, %w: memref<8x32xf32>, %bias: memref<32xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<16x32xf32>
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<32xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %bb, %v : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

// -----

// SiLU after the bias (EfficientNet's Sigmoid and Mul, as LowerElementwise
// writes them: v * (1 / (exp(-v) + 1))), then Clip: flags 8 | 2. T filled
// again after the loop and returned: the call writes O, T stays (with its
// fill) and so does the return. Left alone: the Mul by another value than
// v (a gate, not SiLU) and a sigmoid of 2 / (..), which the runtime does
// not compute.
// CHECK-LABEL: func.func @bias_rows_silu(
// CHECK: %[[FLAGS:.*]] = arith.constant 10 : i64
// CHECK: call @dist_rt_gemm_set_act_f32({{.*}}, %[[FLAGS]],
// CHECK-NOT: linalg.generic
// CHECK-NOT: math.exp
// CHECK-LABEL: func.func @returned_after_refill(
// CHECK: call @dist_rt_gemm_set_act_f32(
// CHECK-NOT: linalg.generic
// CHECK: linalg.fill
// CHECK: return %{{.*}}, %{{.*}} : memref<16x32xf32>, memref<16x32xf32>
// CHECK-LABEL: func.func @gate_not_silu(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK-LABEL: func.func @two_over_not_silu(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @bias_rows_silu(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %six = arith.constant 6.000000e+00 : f32
  %o = memref.alloc() : memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.negf %0 : f32
    %2 = math.exp %1 : f32
    %3 = arith.addf %2, %one : f32
    %4 = arith.divf %one, %3 : f32
    %5 = arith.mulf %0, %4 : f32
    %6 = arith.cmpf ogt, %5, %six : f32
    %7 = arith.select %6, %six, %5 : f32
    linalg.yield %7 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @returned_after_refill(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> (memref<16x32xf32>, memref<16x32xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %o = memref.alloc() : memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  return %o, %t : memref<16x32xf32>, memref<16x32xf32>
}

func.func @gate_not_silu(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>, %g: memref<16x32xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %o = memref.alloc() : memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias, %g : memref<16x32xf32>, memref<16xf32>, memref<16x32xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %gv: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.negf %0 : f32
    %2 = math.exp %1 : f32
    %3 = arith.addf %2, %one : f32
    %4 = arith.divf %one, %3 : f32
    %5 = arith.mulf %gv, %4 : f32
    linalg.yield %5 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @two_over_not_silu(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %two = arith.constant 2.000000e+00 : f32
  %o = memref.alloc() : memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.negf %0 : f32
    %2 = math.exp %1 : f32
    %3 = arith.addf %2, %one : f32
    %4 = arith.divf %two, %3 : f32
    %5 = arith.mulf %0, %4 : f32
    linalg.yield %5 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

// -----

// The loop writes the interior of a padded buffer allocated after the
// product, whose border is filled in between (a 1x1 convolution feeding a
// padded 3x3 one): the buffer and its interior view move before the call,
// which writes the 4 x 4 image of each row 6 apart (rows of 4 positions,
// 6 apart), and the border fills stay.
// CHECK-LABEL: func.func @padded_interior(
// CHECK: %[[P:.*]] = memref.alloc() : memref<8x6x6xf32>
// CHECK: %[[IN:.*]] = memref.subview %[[P]][0, 1, 1] [8, 4, 4] [1, 1, 1]
// CHECK: %[[LEN:.*]] = arith.constant 4 : i64
// CHECK: %[[STRIDE:.*]] = arith.constant 6 : i64
// CHECK: call @dist_rt_gemm_set_act_f32({{.*}}, %[[LEN]], %[[STRIDE]])
// CHECK: linalg.fill
// CHECK: linalg.fill
// CHECK-NOT: linalg.generic
// CHECK: return %[[P]]
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id3 = affine_map<(c, y, x) -> (c, y, x)>
#ch = affine_map<(c, y, x) -> (c)>
func.func @padded_interior(%w: memref<8x3xf32>, %x: memref<3x16xf32>, %bias: memref<8xf32>) -> memref<8x6x6xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<8x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<8x3xf32>, memref<3x16xf32>) outs(%t : memref<8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %v = memref.expand_shape %t [[0], [1, 2]] output_shape [8, 4, 4] : memref<8x16xf32> into memref<8x4x4xf32>
  %p = memref.alloc() : memref<8x6x6xf32>
  %top = memref.subview %p[0, 0, 0] [8, 1, 6] [1, 1, 1] : memref<8x6x6xf32> to memref<8x1x6xf32, strided<[36, 6, 1]>>
  linalg.fill ins(%zero : f32) outs(%top : memref<8x1x6xf32, strided<[36, 6, 1]>>)
  %left = memref.subview %p[0, 1, 0] [8, 4, 1] [1, 1, 1] : memref<8x6x6xf32> to memref<8x4x1xf32, strided<[36, 6, 1], offset: 6>>
  linalg.fill ins(%zero : f32) outs(%left : memref<8x4x1xf32, strided<[36, 6, 1], offset: 6>>)
  %in = memref.subview %p[0, 1, 1] [8, 4, 4] [1, 1, 1] : memref<8x6x6xf32> to memref<8x4x4xf32, strided<[36, 6, 1], offset: 7>>
  linalg.generic {indexing_maps = [#id3, #ch, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v, %bias : memref<8x4x4xf32>, memref<8xf32>) outs(%in : memref<8x4x4xf32, strided<[36, 6, 1], offset: 7>>) {
  ^bb0(%e: f32, %bb: f32, %out: f32):
    %0 = arith.addf %e, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<8x16xf32>
  return %p : memref<8x6x6xf32>
}

// -----

// With +0 fills of both border columns beside the interior's rows and a
// border row below it, the call zeroes the gap after each row as it writes
// it (flags 1 | 4: ReLU, zero gaps): the right column's fill goes, the
// left one keeps the first row only, the rows' fills stay. Without a row
// below (the gap after the last row would leave the plane) the fills stay.
// CHECK-LABEL: func.func @padded_interior_gaps(
// CHECK: %[[P:.*]] = memref.alloc() : memref<8x6x6xf32>
// CHECK: %[[FLAGS:.*]] = arith.constant 5 : i64
// CHECK: call @dist_rt_gemm_set_act_f32({{.*}}, %[[FLAGS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : memref<8x1x6xf32
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : memref<8x1x6xf32
// CHECK: %[[FIRST:.*]] = memref.subview %[[P]][0, 1, 0] [8, 1, 1] [1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[FIRST]]
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.generic
// CHECK: return %[[P]]
// CHECK-LABEL: func.func @no_row_below(
// CHECK-NOT: arith.constant 5 : i64
// CHECK: call @dist_rt_gemm_set_act_f32(
// CHECK-COUNT-3: linalg.fill
// CHECK-NOT: linalg.generic
#pa = affine_map<(i, j, k) -> (i, k)>
#pb = affine_map<(i, j, k) -> (k, j)>
#pc = affine_map<(i, j, k) -> (i, j)>
#pid3 = affine_map<(c, y, x) -> (c, y, x)>
#pch = affine_map<(c, y, x) -> (c)>
func.func @padded_interior_gaps(%w: memref<8x3xf32>, %x: memref<3x16xf32>, %bias: memref<8xf32>) -> memref<8x6x6xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<8x16xf32>)
  linalg.generic {indexing_maps = [#pa, #pb, #pc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<8x3xf32>, memref<3x16xf32>) outs(%t : memref<8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %v = memref.expand_shape %t [[0], [1, 2]] output_shape [8, 4, 4] : memref<8x16xf32> into memref<8x4x4xf32>
  %p = memref.alloc() : memref<8x6x6xf32>
  %top = memref.subview %p[0, 0, 0] [8, 1, 6] [1, 1, 1] : memref<8x6x6xf32> to memref<8x1x6xf32, strided<[36, 6, 1]>>
  linalg.fill ins(%zero : f32) outs(%top : memref<8x1x6xf32, strided<[36, 6, 1]>>)
  %bottom = memref.subview %p[0, 5, 0] [8, 1, 6] [1, 1, 1] : memref<8x6x6xf32> to memref<8x1x6xf32, strided<[36, 6, 1], offset: 30>>
  linalg.fill ins(%zero : f32) outs(%bottom : memref<8x1x6xf32, strided<[36, 6, 1], offset: 30>>)
  %left = memref.subview %p[0, 1, 0] [8, 4, 1] [1, 1, 1] : memref<8x6x6xf32> to memref<8x4x1xf32, strided<[36, 6, 1], offset: 6>>
  linalg.fill ins(%zero : f32) outs(%left : memref<8x4x1xf32, strided<[36, 6, 1], offset: 6>>)
  %right = memref.subview %p[0, 1, 5] [8, 4, 1] [1, 1, 1] : memref<8x6x6xf32> to memref<8x4x1xf32, strided<[36, 6, 1], offset: 11>>
  linalg.fill ins(%zero : f32) outs(%right : memref<8x4x1xf32, strided<[36, 6, 1], offset: 11>>)
  %in = memref.subview %p[0, 1, 1] [8, 4, 4] [1, 1, 1] : memref<8x6x6xf32> to memref<8x4x4xf32, strided<[36, 6, 1], offset: 7>>
  linalg.generic {indexing_maps = [#pid3, #pch, #pid3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v, %bias : memref<8x4x4xf32>, memref<8xf32>) outs(%in : memref<8x4x4xf32, strided<[36, 6, 1], offset: 7>>) {
  ^bb0(%e: f32, %bb: f32, %out: f32):
    %0 = arith.addf %e, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<8x16xf32>
  return %p : memref<8x6x6xf32>
}

func.func @no_row_below(%w: memref<8x3xf32>, %x: memref<3x16xf32>, %bias: memref<8xf32>) -> memref<8x5x6xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<8x16xf32>)
  linalg.generic {indexing_maps = [#pa, #pb, #pc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<8x3xf32>, memref<3x16xf32>) outs(%t : memref<8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %v = memref.expand_shape %t [[0], [1, 2]] output_shape [8, 4, 4] : memref<8x16xf32> into memref<8x4x4xf32>
  %p = memref.alloc() : memref<8x5x6xf32>
  %top = memref.subview %p[0, 0, 0] [8, 1, 6] [1, 1, 1] : memref<8x5x6xf32> to memref<8x1x6xf32, strided<[30, 6, 1]>>
  linalg.fill ins(%zero : f32) outs(%top : memref<8x1x6xf32, strided<[30, 6, 1]>>)
  %left = memref.subview %p[0, 1, 0] [8, 4, 1] [1, 1, 1] : memref<8x5x6xf32> to memref<8x4x1xf32, strided<[30, 6, 1], offset: 6>>
  linalg.fill ins(%zero : f32) outs(%left : memref<8x4x1xf32, strided<[30, 6, 1], offset: 6>>)
  %right = memref.subview %p[0, 1, 5] [8, 4, 1] [1, 1, 1] : memref<8x5x6xf32> to memref<8x4x1xf32, strided<[30, 6, 1], offset: 11>>
  linalg.fill ins(%zero : f32) outs(%right : memref<8x4x1xf32, strided<[30, 6, 1], offset: 11>>)
  %in = memref.subview %p[0, 1, 1] [8, 4, 4] [1, 1, 1] : memref<8x5x6xf32> to memref<8x4x4xf32, strided<[30, 6, 1], offset: 7>>
  linalg.generic {indexing_maps = [#pid3, #pch, #pid3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v, %bias : memref<8x4x4xf32>, memref<8xf32>) outs(%in : memref<8x4x4xf32, strided<[30, 6, 1], offset: 7>>) {
  ^bb0(%e: f32, %bb: f32, %out: f32):
    %0 = arith.addf %e, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<8x16xf32>
  return %p : memref<8x5x6xf32>
}

// -----

// Left alone: a fill between the call and the loop that overlaps O; T read
// by another op too; a body with an op the runtime does not apply; a
// write to other memory between the call and the loop; a bias (a view)
// made after the call.
// CHECK-LABEL: func.func @fill_overlaps(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
// CHECK-LABEL: func.func @second_reader(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
// CHECK-LABEL: func.func @other_body(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
// CHECK-LABEL: func.func @write_between(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: memref.copy
// CHECK: linalg.generic
// CHECK-LABEL: func.func @bias_view_after_call(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: memref.collapse_shape
// CHECK: linalg.generic
// CHECK-NOT: call @dist_rt_gemm_set_act_f32
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#id3 = affine_map<(c, y, x) -> (c, y, x)>
#ch = affine_map<(c, y, x) -> (c)>
func.func @fill_overlaps(%w: memref<8x3xf32>, %x: memref<3x16xf32>, %bias: memref<8xf32>) -> memref<8x6x6xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<8x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<8x3xf32>, memref<3x16xf32>) outs(%t : memref<8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %v = memref.expand_shape %t [[0], [1, 2]] output_shape [8, 4, 4] : memref<8x16xf32> into memref<8x4x4xf32>
  %p = memref.alloc() : memref<8x6x6xf32>
  %top = memref.subview %p[0, 0, 0] [8, 2, 6] [1, 1, 1] : memref<8x6x6xf32> to memref<8x2x6xf32, strided<[36, 6, 1]>>
  linalg.fill ins(%zero : f32) outs(%top : memref<8x2x6xf32, strided<[36, 6, 1]>>)
  %in = memref.subview %p[0, 1, 1] [8, 4, 4] [1, 1, 1] : memref<8x6x6xf32> to memref<8x4x4xf32, strided<[36, 6, 1], offset: 7>>
  linalg.generic {indexing_maps = [#id3, #ch, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v, %bias : memref<8x4x4xf32>, memref<8xf32>) outs(%in : memref<8x4x4xf32, strided<[36, 6, 1], offset: 7>>) {
  ^bb0(%e: f32, %bb: f32, %out: f32):
    %0 = arith.addf %e, %bb : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %t : memref<8x16xf32>
  return %p : memref<8x6x6xf32>
}

func.func @second_reader(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>, %keep: memref<16x32xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<16x32xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    linalg.yield %0 : f32
  }
  memref.copy %t, %keep : memref<16x32xf32> to memref<16x32xf32>
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @other_body(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<16x32xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.mulf %0, %0 : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @write_between(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>, %src: memref<16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<16x32xf32>
  memref.copy %src, %bias : memref<16xf32> to memref<16xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @bias_view_after_call(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %b2: memref<16x1xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<16x32xf32>
  %bias = memref.collapse_shape %b2 [[0, 1]] : memref<16x1xf32> into memref<16xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

// -----

// The product's buffer used again after the loop: when the next op there
// overwrites it without reading (bufferization reusing a dead buffer), the
// loop folds and the buffer stays for that op; when the next op reads it,
// nothing changes.
// CHECK-LABEL: func.func @reused_after(
// CHECK: %[[T:.*]] = memref.alloc() : memref<16x32xf32>
// CHECK: call @dist_rt_gemm_set_act_f32(
// CHECK-NOT: linalg.generic
// CHECK: linalg.fill {{.*}} outs(%[[T]]
// CHECK: memref.dealloc %[[T]]
// CHECK-LABEL: func.func @read_after(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
// CHECK: linalg.generic
// A view of all of the buffer that dist-contractions-to-runtime marked as
// the output of a call that overwrites it (a grouped convolution writing
// its activation's buffer) counts as overwriting; an unmarked view does
// not.
// CHECK-LABEL: func.func @reused_by_call(
// CHECK: call @dist_rt_gemm_set_act_f32(
// CHECK-NOT: linalg.generic
// CHECK: memref.expand_shape
// CHECK-LABEL: func.func @viewed_after(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
// The next op to use the buffer is a direct convolution's call that
// writes all of it (its output [n, f, oh, ow] the buffer's shape, at its
// start, with its strides) without accumulating: that overwrites too; one
// that accumulates reads it.
// CHECK-LABEL: func.func @reused_by_conv(
// CHECK: call @dist_rt_gemm_set_act_f32(
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_conv2d_f32(
// CHECK-LABEL: func.func @accumulated_by_conv(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
// CHECK: call @dist_rt_conv2d_f32(
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @reused_after(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>, %keep: memref<16x32xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<16x32xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  linalg.fill ins(%one : f32) outs(%t : memref<16x32xf32>)
  memref.copy %t, %keep : memref<16x32xf32> to memref<16x32xf32>
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @read_after(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<16x32xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<16x32xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %out: f32):
    %0 = arith.addf %v, %out : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @reused_by_call(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>, %src: memref<16x2x16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<16x32xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    linalg.yield %0 : f32
  }
  %g = memref.expand_shape %t [[0], [1, 2]] output_shape [16, 2, 16] {dist.call_overwrites} : memref<16x32xf32> into memref<16x2x16xf32>
  memref.copy %src, %g : memref<16x2x16xf32> to memref<16x2x16xf32>
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @viewed_after(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>, %src: memref<16x2x16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<16x32xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    linalg.yield %0 : f32
  }
  %g = memref.expand_shape %t [[0], [1, 2]] output_shape [16, 2, 16] : memref<16x32xf32> into memref<16x2x16xf32>
  memref.copy %src, %g : memref<16x2x16xf32> to memref<16x2x16xf32>
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func private @dist_rt_conv2d_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)

#id4 = affine_map<(n, c, y, x) -> (n, c, y, x)>
#ch4 = affine_map<(n, c, y, x) -> (c)>
func.func @reused_by_conv(%w: memref<8x3xf32>, %x: memref<3x16xf32>, %bias: memref<8xf32>, %wc: memref<8x8x1x1xf32>) -> memref<1x8x4x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<1x8x4x4xf32>
  %tc = memref.collapse_shape %t [[0, 1], [2, 3]] : memref<1x8x4x4xf32> into memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%tc : memref<8x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<8x3xf32>, memref<3x16xf32>) outs(%tc : memref<8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<1x8x4x4xf32>
  linalg.generic {indexing_maps = [#id4, #ch4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t, %bias : memref<1x8x4x4xf32>, memref<8xf32>) outs(%o : memref<1x8x4x4xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  %c4 = arith.constant 4 : index
  %i0 = arith.constant 0 : i64
  %i1 = arith.constant 1 : i64
  %i4 = arith.constant 4 : i64
  %i8 = arith.constant 8 : i64
  %i16 = arith.constant 16 : i64
  %i128 = arith.constant 128 : i64
  %flags = arith.constant 0 : i64
  %lo = arith.constant 0.000000e+00 : f32
  %op = memref.extract_aligned_pointer_as_index %o : memref<1x8x4x4xf32> -> index
  %opi = arith.index_cast %op : index to i64
  %wp = memref.extract_aligned_pointer_as_index %wc : memref<8x8x1x1xf32> -> index
  %wpi = arith.index_cast %wp : index to i64
  %base, %off, %sizes:4, %strides:4 = memref.extract_strided_metadata %t : memref<1x8x4x4xf32> -> memref<f32>, index, index, index, index, index, index, index, index, index
  %tp = memref.extract_aligned_pointer_as_index %t : memref<1x8x4x4xf32> -> index
  %off4 = arith.muli %off, %c4 : index
  %tpa = arith.addi %tp, %off4 : index
  %tpi = arith.index_cast %tpa : index to i64
  %sn = arith.index_cast %strides#0 : index to i64
  %sf = arith.index_cast %strides#1 : index to i64
  %sh = arith.index_cast %strides#2 : index to i64
  call @dist_rt_conv2d_f32(%i1, %i8, %i4, %i4, %i8, %i1, %i1, %i1, %i1, %i1, %i1, %i4, %i4, %opi, %i128, %i16, %i4, %wpi, %i0, %tpi, %sn, %sf, %sh, %lo, %lo, %flags) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %o : memref<1x8x4x4xf32>
  return %t : memref<1x8x4x4xf32>
}

func.func @accumulated_by_conv(%w: memref<8x3xf32>, %x: memref<3x16xf32>, %bias: memref<8xf32>, %wc: memref<8x8x1x1xf32>) -> memref<1x8x4x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<1x8x4x4xf32>
  %tc = memref.collapse_shape %t [[0, 1], [2, 3]] : memref<1x8x4x4xf32> into memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%tc : memref<8x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<8x3xf32>, memref<3x16xf32>) outs(%tc : memref<8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc() : memref<1x8x4x4xf32>
  linalg.generic {indexing_maps = [#id4, #ch4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t, %bias : memref<1x8x4x4xf32>, memref<8xf32>) outs(%o : memref<1x8x4x4xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  %c4 = arith.constant 4 : index
  %i0 = arith.constant 0 : i64
  %i1 = arith.constant 1 : i64
  %i4 = arith.constant 4 : i64
  %i8 = arith.constant 8 : i64
  %i16 = arith.constant 16 : i64
  %i128 = arith.constant 128 : i64
  %flags = arith.constant 1 : i64
  %lo = arith.constant 0.000000e+00 : f32
  %op = memref.extract_aligned_pointer_as_index %o : memref<1x8x4x4xf32> -> index
  %opi = arith.index_cast %op : index to i64
  %wp = memref.extract_aligned_pointer_as_index %wc : memref<8x8x1x1xf32> -> index
  %wpi = arith.index_cast %wp : index to i64
  %base, %off, %sizes:4, %strides:4 = memref.extract_strided_metadata %t : memref<1x8x4x4xf32> -> memref<f32>, index, index, index, index, index, index, index, index, index
  %tp = memref.extract_aligned_pointer_as_index %t : memref<1x8x4x4xf32> -> index
  %off4 = arith.muli %off, %c4 : index
  %tpa = arith.addi %tp, %off4 : index
  %tpi = arith.index_cast %tpa : index to i64
  %sn = arith.index_cast %strides#0 : index to i64
  %sf = arith.index_cast %strides#1 : index to i64
  %sh = arith.index_cast %strides#2 : index to i64
  call @dist_rt_conv2d_f32(%i1, %i8, %i4, %i4, %i8, %i1, %i1, %i1, %i1, %i1, %i1, %i4, %i4, %opi, %i128, %i16, %i4, %wpi, %i0, %tpi, %sn, %sf, %sh, %lo, %lo, %flags) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %o : memref<1x8x4x4xf32>
  return %t : memref<1x8x4x4xf32>
}

// -----

// Two products into one buffer T (bufferization reusing it for the
// second), each epilogue reading T through the one expand_shape view that
// CSE made of two (ResNet-50's 1x1 and 3x3 products): after the first loop
// the next use of T is the second product's call, which writes all of T
// without reading it, so both loops fold and T goes. A third loop reading
// the view between them keeps the first product as it was; the second
// still folds (what used T before its call is dead once the call writes
// it all) and T stays for the uses before. With the calls' pointers to T
// shared (CSE), the same.
// CHECK-LABEL: func.func @two_products_one_view(
// CHECK-NOT: memref.alloc() : memref<16x32xf32>
// CHECK: call @dist_rt_gemm_set_act_f32(
// CHECK: call @dist_rt_gemm_set_act_f32(
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @view_read_between_products(
// CHECK: %[[T:.*]] = memref.alloc() : memref<16x32xf32>
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: call @dist_rt_gemm_set_act_f32(
// CHECK-NOT: linalg.generic
// CHECK: memref.dealloc %[[T]]
// CSE-LABEL: func.func @two_products_one_view(
// CSE: call @dist_rt_gemm_set_act_f32(
// CSE: call @dist_rt_gemm_set_act_f32(
// CSE-NOT: linalg.generic
// CSE: return
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id3 = affine_map<(i, j, k) -> (i, j, k)>
#row3 = affine_map<(i, j, k) -> (i)>
func.func @two_products_one_view(%w: memref<16x8xf32>, %w2: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> (memref<16x2x16xf32>, memref<16x2x16xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %v = memref.expand_shape %t [[0], [1, 2]] output_shape [16, 2, 16] : memref<16x32xf32> into memref<16x2x16xf32>
  %o1 = memref.alloc() : memref<16x2x16xf32>
  linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v, %bias : memref<16x2x16xf32>, memref<16xf32>) outs(%o1 : memref<16x2x16xf32>) {
  ^bb0(%in: f32, %bb: f32, %out: f32):
    %0 = arith.addf %in, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w2, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o2 = memref.alloc() : memref<16x2x16xf32>
  linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v, %bias : memref<16x2x16xf32>, memref<16xf32>) outs(%o2 : memref<16x2x16xf32>) {
  ^bb0(%in: f32, %bb: f32, %out: f32):
    %0 = arith.addf %in, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o1, %o2 : memref<16x2x16xf32>, memref<16x2x16xf32>
}

func.func @view_read_between_products(%w: memref<16x8xf32>, %w2: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>, %o3: memref<16x2x16xf32>) -> (memref<16x2x16xf32>, memref<16x2x16xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %v = memref.expand_shape %t [[0], [1, 2]] output_shape [16, 2, 16] : memref<16x32xf32> into memref<16x2x16xf32>
  %o1 = memref.alloc() : memref<16x2x16xf32>
  linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v, %bias : memref<16x2x16xf32>, memref<16xf32>) outs(%o1 : memref<16x2x16xf32>) {
  ^bb0(%in: f32, %bb: f32, %out: f32):
    %0 = arith.addf %in, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : memref<16x2x16xf32>) outs(%o3 : memref<16x2x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w2, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o2 = memref.alloc() : memref<16x2x16xf32>
  linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v, %bias : memref<16x2x16xf32>, memref<16xf32>) outs(%o2 : memref<16x2x16xf32>) {
  ^bb0(%in: f32, %bb: f32, %out: f32):
    %0 = arith.addf %in, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o1, %o2 : memref<16x2x16xf32>, memref<16x2x16xf32>
}

// -----

// A residual: the loop reads O, which it overwrites in place (bufferization
// wrote the Add over its dead operand, ResNet's identity), after or before
// the bias: the call accumulates onto O (flags 16, with ReLU 17) and T
// goes. Left alone: O (through a view made before the call) read between
// the call and the loop, where the call would already have overwritten
// it; the product reading O itself.
// CHECK-LABEL: func.func @residual_relu(
// CHECK-SAME: %[[R:[^:]*]]: memref<16x32xf32>)
// CHECK: %[[O:.*]] = memref.alloc() : memref<16x32xf32>
// CHECK-NOT: memref.alloc
// CHECK: memref.copy %[[R]], %[[O]]
// CHECK: memref.extract_aligned_pointer_as_index %[[O]]
// CHECK: %[[FLAGS:.*]] = arith.constant 17 : i64
// CHECK: call @dist_rt_gemm_set_act_f32({{.*}}, %[[FLAGS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: linalg.generic
// CHECK: return %[[O]]
// CHECK-LABEL: func.func @residual_first(
// CHECK: %[[FLAGS:.*]] = arith.constant 16 : i64
// CHECK: call @dist_rt_gemm_set_act_f32({{.*}}, %[[FLAGS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @residual_read_between(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: memref.load
// CHECK: linalg.generic
// CHECK-LABEL: func.func @residual_is_operand(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
// CHECK-NOT: call @dist_rt_gemm_set_act_f32
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @residual_relu(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>, %r: memref<16x32xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %o = memref.alloc() : memref<16x32xf32>
  memref.copy %r, %o : memref<16x32xf32> to memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %s: f32):
    %m = arith.mulf %p, %q : f32
    %n = arith.addf %s, %m : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias, %o : memref<16x32xf32>, memref<16xf32>, memref<16x32xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %res: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.addf %0, %res : f32
    %2 = arith.maximumf %1, %zero : f32
    linalg.yield %2 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @residual_first(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>, %r: memref<16x32xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %o = memref.alloc() : memref<16x32xf32>
  memref.copy %r, %o : memref<16x32xf32> to memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %s: f32):
    %m = arith.mulf %p, %q : f32
    %n = arith.addf %s, %m : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %o, %bias : memref<16x32xf32>, memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %res: f32, %bb: f32, %out: f32):
    %0 = arith.addf %res, %v : f32
    %1 = arith.addf %0, %bb : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @residual_read_between(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>, %r: memref<16x32xf32>) -> (memref<16x32xf32>, f32) {
  %zero = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %o = memref.alloc() : memref<16x32xf32>
  memref.copy %r, %o : memref<16x32xf32> to memref<16x32xf32>
  %flat = memref.collapse_shape %o [[0, 1]] : memref<16x32xf32> into memref<512xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %s: f32):
    %m = arith.mulf %p, %q : f32
    %n = arith.addf %s, %m : f32
    linalg.yield %n : f32
  }
  %first = memref.load %flat[%c0] : memref<512xf32>
  linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias, %o : memref<16x32xf32>, memref<16xf32>, memref<16x32xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %res: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.addf %0, %res : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o, %first : memref<16x32xf32>, f32
}

func.func @residual_is_operand(%w: memref<16x8xf32>, %bias: memref<16xf32>, %r: memref<16x32xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %o = memref.alloc() : memref<16x32xf32>
  memref.copy %r, %o : memref<16x32xf32> to memref<16x32xf32>
  %x = memref.subview %o[0, 0] [8, 32] [1, 1] : memref<16x32xf32> to memref<8x32xf32, strided<[32, 1]>>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32, strided<[32, 1]>>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %s: f32):
    %m = arith.mulf %p, %q : f32
    %n = arith.addf %s, %m : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias, %o : memref<16x32xf32>, memref<16xf32>, memref<16x32xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %res: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.addf %0, %res : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

// -----

// HardSwish after the bias (MobileNetV3's, as LowerElementwise writes
// it: v * max(0, min(1, v * (1/6) + 1/2))), then ReLU: flags 32 | 1, one
// call writes O. The same with the clamp's bounds the other way round
// (maximumf first), then Clip's upper bound: also folded (flags 32 | 2).
// Left alone: a scale of 1/5 (a
// HardSigmoid the runtime does not compute) and an offset of 1/2 with the
// clamp's upper bound 2.
// CHECK-LABEL: func.func @bias_rows_hard_swish(
// CHECK: %[[FLAGS:.*]] = arith.constant 33 : i64
// CHECK: call @dist_rt_gemm_set_act_f32({{.*}}, %[[FLAGS]],
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @hard_swish_max_first(
// CHECK: %[[FLAGS2:.*]] = arith.constant 34 : i64
// CHECK: call @dist_rt_gemm_set_act_f32({{.*}}, %[[FLAGS2]],
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @fifth_not_hard_swish(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
// CHECK-LABEL: func.func @upper_two_not_hard_swish(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @bias_rows_hard_swish(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %sixth = arith.constant 0.166666672 : f32
  %o = memref.alloc() : memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.mulf %0, %sixth : f32
    %2 = arith.addf %1, %half : f32
    %3 = arith.minimumf %one, %2 : f32
    %4 = arith.maximumf %zero, %3 : f32
    %5 = arith.mulf %0, %4 : f32
    %6 = arith.maximumf %5, %zero : f32
    linalg.yield %6 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @hard_swish_max_first(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %six = arith.constant 6.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %sixth = arith.constant 0.166666672 : f32
  %o = memref.alloc() : memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %bb, %v : f32
    %1 = arith.mulf %sixth, %0 : f32
    %2 = arith.addf %half, %1 : f32
    %3 = arith.maximumf %2, %zero : f32
    %4 = arith.minimumf %3, %one : f32
    %5 = arith.mulf %4, %0 : f32
    %6 = arith.cmpf ogt, %5, %six : f32
    %7 = arith.select %6, %six, %5 : f32
    linalg.yield %7 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @fifth_not_hard_swish(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %fifth = arith.constant 2.000000e-01 : f32
  %o = memref.alloc() : memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.mulf %0, %fifth : f32
    %2 = arith.addf %1, %half : f32
    %3 = arith.minimumf %one, %2 : f32
    %4 = arith.maximumf %zero, %3 : f32
    %5 = arith.mulf %0, %4 : f32
    linalg.yield %5 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

func.func @upper_two_not_hard_swish(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %two = arith.constant 2.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %sixth = arith.constant 0.166666672 : f32
  %o = memref.alloc() : memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.mulf %0, %sixth : f32
    %2 = arith.addf %1, %half : f32
    %3 = arith.minimumf %two, %2 : f32
    %4 = arith.maximumf %zero, %3 : f32
    %5 = arith.mulf %0, %4 : f32
    linalg.yield %5 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

// -----

// HardSwish's clamp yielded without the Mul by its input (and a Mul of v
// by itself left unused): no HardSwish, the loop stays.
// CHECK-LABEL: func.func @clamp_yielded_not_hard_swish(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @clamp_yielded_not_hard_swish(%w: memref<16x8xf32>, %x: memref<8x32xf32>, %bias: memref<16xf32>) -> memref<16x32xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %sixth = arith.constant 0.166666672 : f32
  %o = memref.alloc() : memref<16x32xf32>
  %t = memref.alloc() : memref<16x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<16x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<16x8xf32>, memref<8x32xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<16x32xf32>, memref<16xf32>) outs(%o : memref<16x32xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.mulf %0, %sixth : f32
    %2 = arith.addf %1, %half : f32
    %3 = arith.minimumf %one, %2 : f32
    %4 = arith.mulf %0, %0 : f32
    linalg.yield %3 : f32
  }
  memref.dealloc %t : memref<16x32xf32>
  return %o : memref<16x32xf32>
}

// -----

// A dynamic batch (a model exported with one): T, O and the padded buffer
// are allocations of %n images. The loop folds as at a static batch (flags
// 1 | 4, the right column's fill gone, the left one's first row kept over
// all %n images), the call's batch read from what T's allocation was given
// (T goes). A following op that writes all of T again counts as
// overwriting it: a product whose batch is the memref.dim of T (T's
// allocation given another value), a direct convolution's call whose batch
// is the memref.dim of T. A call whose batch is another size (%m) does
// not: the loop stays. A view of T whose only reader is the memref.dim of
// its batch (dist-contractions-to-runtime leaves one when a convolution's
// call takes a fresh output in place of T) does not read T: the size it
// was given replaces the read, and T goes.
// CHECK-LABEL: func.func @dynamic_batch_padded(
// CHECK-SAME: %[[N:[^:]*]]: index)
// CHECK-NOT: memref.alloc(%[[N]]) {{.*}} : memref<?x8x16xf32>
// CHECK: %[[P:.*]] = memref.alloc(%[[N]]) : memref<?x8x6x6xf32>
// CHECK: %[[BATCH:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: %[[FLAGS:.*]] = arith.constant 5 : i64
// CHECK: call @dist_rt_gemm_set_act_f32(%[[BATCH]], {{.*}}, %[[FLAGS]],
// CHECK: %[[FIRST:.*]] = memref.subview %[[P]][0, 0, 1, 0] [%[[N]], 8, 1, 1] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[FIRST]]
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.generic
// CHECK: return %[[P]]
// CHECK-LABEL: func.func @dynamic_batch_view_sizes(
// CHECK-SAME: %[[N:[^:]*]]: index)
// CHECK: call @dist_rt_gemm_set_act_f32(
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.expand_shape
// CHECK-NOT: memref.dim
// CHECK: return %{{.*}}, %[[N]] : memref<?x8x16xf32>, index
// CHECK-LABEL: func.func @dynamic_batch_reused(
// CHECK: call @dist_rt_gemm_set_act_f32(
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK-LABEL: func.func @dynamic_batch_reused_by_conv(
// CHECK: call @dist_rt_gemm_set_act_f32(
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_conv2d_f32(
// CHECK-LABEL: func.func @dynamic_batch_conv_of_other_size(
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK: linalg.generic
// CHECK: call @dist_rt_conv2d_f32(
#da = affine_map<(b, i, j, k) -> (i, k)>
#db = affine_map<(b, i, j, k) -> (b, k, j)>
#dc = affine_map<(b, i, j, k) -> (b, i, j)>
#did3 = affine_map<(b, c, p) -> (b, c, p)>
#dch3 = affine_map<(b, c, p) -> (c)>
#did4 = affine_map<(b, c, y, x) -> (b, c, y, x)>
#dch4 = affine_map<(b, c, y, x) -> (c)>
func.func @dynamic_batch_padded(%w: memref<8x3xf32>, %x: memref<?x3x16xf32>, %bias: memref<8xf32>, %n: index) -> memref<?x8x6x6xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc(%n) : memref<?x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<?x8x16xf32>)
  linalg.generic {indexing_maps = [#da, #db, #dc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<8x3xf32>, memref<?x3x16xf32>) outs(%t : memref<?x8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %v = memref.expand_shape %t [[0], [1], [2, 3]] output_shape [%n, 8, 4, 4] : memref<?x8x16xf32> into memref<?x8x4x4xf32>
  %p = memref.alloc(%n) : memref<?x8x6x6xf32>
  %top = memref.subview %p[0, 0, 0, 0] [%n, 8, 1, 6] [1, 1, 1, 1] : memref<?x8x6x6xf32> to memref<?x8x1x6xf32, strided<[288, 36, 6, 1]>>
  linalg.fill ins(%zero : f32) outs(%top : memref<?x8x1x6xf32, strided<[288, 36, 6, 1]>>)
  %bottom = memref.subview %p[0, 0, 5, 0] [%n, 8, 1, 6] [1, 1, 1, 1] : memref<?x8x6x6xf32> to memref<?x8x1x6xf32, strided<[288, 36, 6, 1], offset: 30>>
  linalg.fill ins(%zero : f32) outs(%bottom : memref<?x8x1x6xf32, strided<[288, 36, 6, 1], offset: 30>>)
  %left = memref.subview %p[0, 0, 1, 0] [%n, 8, 4, 1] [1, 1, 1, 1] : memref<?x8x6x6xf32> to memref<?x8x4x1xf32, strided<[288, 36, 6, 1], offset: 6>>
  linalg.fill ins(%zero : f32) outs(%left : memref<?x8x4x1xf32, strided<[288, 36, 6, 1], offset: 6>>)
  %right = memref.subview %p[0, 0, 1, 5] [%n, 8, 4, 1] [1, 1, 1, 1] : memref<?x8x6x6xf32> to memref<?x8x4x1xf32, strided<[288, 36, 6, 1], offset: 11>>
  linalg.fill ins(%zero : f32) outs(%right : memref<?x8x4x1xf32, strided<[288, 36, 6, 1], offset: 11>>)
  %in = memref.subview %p[0, 0, 1, 1] [%n, 8, 4, 4] [1, 1, 1, 1] : memref<?x8x6x6xf32> to memref<?x8x4x4xf32, strided<[288, 36, 6, 1], offset: 7>>
  linalg.generic {indexing_maps = [#did4, #dch4, #did4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v, %bias : memref<?x8x4x4xf32>, memref<8xf32>) outs(%in : memref<?x8x4x4xf32, strided<[288, 36, 6, 1], offset: 7>>) {
  ^bb0(%e: f32, %bb: f32, %out: f32):
    %0 = arith.addf %e, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %t : memref<?x8x16xf32>
  return %p : memref<?x8x6x6xf32>
}

func.func @dynamic_batch_view_sizes(%w: memref<8x3xf32>, %x: memref<?x3x16xf32>, %bias: memref<8xf32>, %n: index) -> (memref<?x8x16xf32>, index) {
  %zero = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %t = memref.alloc(%n) : memref<?x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<?x8x16xf32>)
  linalg.generic {indexing_maps = [#da, #db, #dc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<8x3xf32>, memref<?x3x16xf32>) outs(%t : memref<?x8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc(%n) : memref<?x8x16xf32>
  linalg.generic {indexing_maps = [#did3, #dch3, #did3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%t, %bias : memref<?x8x16xf32>, memref<8xf32>) outs(%o : memref<?x8x16xf32>) {
  ^bb0(%e: f32, %bb: f32, %out: f32):
    %0 = arith.addf %e, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  %tv = memref.expand_shape %t [[0], [1, 2], [3]] output_shape [%n, 8, 1, 16] : memref<?x8x16xf32> into memref<?x8x1x16xf32>
  %nv = memref.dim %tv, %c0 : memref<?x8x1x16xf32>
  memref.dealloc %t : memref<?x8x16xf32>
  return %o, %nv : memref<?x8x16xf32>, index
}

func.func @dynamic_batch_reused(%w: memref<8x3xf32>, %x: memref<?x3x16xf32>, %bias: memref<8xf32>, %w2: memref<8x3xf32>, %x2: memref<?x3x16xf32>) -> (memref<?x8x16xf32>, memref<?x8x16xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x3x16xf32>
  %t = memref.alloc(%n) : memref<?x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<?x8x16xf32>)
  linalg.generic {indexing_maps = [#da, #db, #dc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<8x3xf32>, memref<?x3x16xf32>) outs(%t : memref<?x8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc(%n) : memref<?x8x16xf32>
  linalg.generic {indexing_maps = [#did3, #dch3, #did3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%t, %bias : memref<?x8x16xf32>, memref<8xf32>) outs(%o : memref<?x8x16xf32>) {
  ^bb0(%e: f32, %bb: f32, %out: f32):
    %0 = arith.addf %e, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  linalg.fill ins(%zero : f32) outs(%t : memref<?x8x16xf32>)
  linalg.generic {indexing_maps = [#da, #db, #dc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w2, %x2 : memref<8x3xf32>, memref<?x3x16xf32>) outs(%t : memref<?x8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  return %o, %t : memref<?x8x16xf32>, memref<?x8x16xf32>
}

func.func private @dist_rt_conv2d_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)

func.func @dynamic_batch_reused_by_conv(%w: memref<8x3xf32>, %x: memref<?x3x16xf32>, %bias: memref<8xf32>, %wc: memref<8x8x1x1xf32>, %n: index, %m: index) -> memref<?x8x4x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc(%n) : memref<?x8x4x4xf32>
  %tc = memref.collapse_shape %t [[0], [1], [2, 3]] : memref<?x8x4x4xf32> into memref<?x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%tc : memref<?x8x16xf32>)
  linalg.generic {indexing_maps = [#da, #db, #dc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<8x3xf32>, memref<?x3x16xf32>) outs(%tc : memref<?x8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %mul = arith.mulf %p, %q : f32
    %s = arith.addf %r, %mul : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc(%n) : memref<?x8x4x4xf32>
  linalg.generic {indexing_maps = [#did4, #dch4, #did4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t, %bias : memref<?x8x4x4xf32>, memref<8xf32>) outs(%o : memref<?x8x4x4xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %i0 = arith.constant 0 : i64
  %i1 = arith.constant 1 : i64
  %i4 = arith.constant 4 : i64
  %i8 = arith.constant 8 : i64
  %i16 = arith.constant 16 : i64
  %i128 = arith.constant 128 : i64
  %flags = arith.constant 0 : i64
  %lo = arith.constant 0.000000e+00 : f32
  %nb = memref.dim %t, %c0 : memref<?x8x4x4xf32>
  %batch = arith.index_cast %nb : index to i64
  %op = memref.extract_aligned_pointer_as_index %o : memref<?x8x4x4xf32> -> index
  %opi = arith.index_cast %op : index to i64
  %wp = memref.extract_aligned_pointer_as_index %wc : memref<8x8x1x1xf32> -> index
  %wpi = arith.index_cast %wp : index to i64
  %base, %off, %sizes:4, %strides:4 = memref.extract_strided_metadata %t : memref<?x8x4x4xf32> -> memref<f32>, index, index, index, index, index, index, index, index, index
  %tp = memref.extract_aligned_pointer_as_index %t : memref<?x8x4x4xf32> -> index
  %off4 = arith.muli %off, %c4 : index
  %tpa = arith.addi %tp, %off4 : index
  %tpi = arith.index_cast %tpa : index to i64
  %sn = arith.index_cast %strides#0 : index to i64
  %sf = arith.index_cast %strides#1 : index to i64
  %sh = arith.index_cast %strides#2 : index to i64
  call @dist_rt_conv2d_f32(%batch, %i8, %i4, %i4, %i8, %i1, %i1, %i1, %i1, %i1, %i1, %i4, %i4, %opi, %i128, %i16, %i4, %wpi, %i0, %tpi, %sn, %sf, %sh, %lo, %lo, %flags) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %o : memref<?x8x4x4xf32>
  return %t : memref<?x8x4x4xf32>
}

func.func @dynamic_batch_conv_of_other_size(%w: memref<8x3xf32>, %x: memref<?x3x16xf32>, %bias: memref<8xf32>, %wc: memref<8x8x1x1xf32>, %n: index, %m: index) -> memref<?x8x4x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %t = memref.alloc(%n) : memref<?x8x4x4xf32>
  %tc = memref.collapse_shape %t [[0], [1], [2, 3]] : memref<?x8x4x4xf32> into memref<?x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%tc : memref<?x8x16xf32>)
  linalg.generic {indexing_maps = [#da, #db, #dc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<8x3xf32>, memref<?x3x16xf32>) outs(%tc : memref<?x8x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %mul = arith.mulf %p, %q : f32
    %s = arith.addf %r, %mul : f32
    linalg.yield %s : f32
  }
  %o = memref.alloc(%n) : memref<?x8x4x4xf32>
  linalg.generic {indexing_maps = [#did4, #dch4, #did4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t, %bias : memref<?x8x4x4xf32>, memref<8xf32>) outs(%o : memref<?x8x4x4xf32>) {
  ^bb0(%v: f32, %bb: f32, %out: f32):
    %0 = arith.addf %v, %bb : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  }
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %i0 = arith.constant 0 : i64
  %i1 = arith.constant 1 : i64
  %i4 = arith.constant 4 : i64
  %i8 = arith.constant 8 : i64
  %i16 = arith.constant 16 : i64
  %i128 = arith.constant 128 : i64
  %flags = arith.constant 0 : i64
  %lo = arith.constant 0.000000e+00 : f32
  %batch = arith.index_cast %m : index to i64
  %op = memref.extract_aligned_pointer_as_index %o : memref<?x8x4x4xf32> -> index
  %opi = arith.index_cast %op : index to i64
  %wp = memref.extract_aligned_pointer_as_index %wc : memref<8x8x1x1xf32> -> index
  %wpi = arith.index_cast %wp : index to i64
  %base, %off, %sizes:4, %strides:4 = memref.extract_strided_metadata %t : memref<?x8x4x4xf32> -> memref<f32>, index, index, index, index, index, index, index, index, index
  %tp = memref.extract_aligned_pointer_as_index %t : memref<?x8x4x4xf32> -> index
  %off4 = arith.muli %off, %c4 : index
  %tpa = arith.addi %tp, %off4 : index
  %tpi = arith.index_cast %tpa : index to i64
  %sn = arith.index_cast %strides#0 : index to i64
  %sf = arith.index_cast %strides#1 : index to i64
  %sh = arith.index_cast %strides#2 : index to i64
  call @dist_rt_conv2d_f32(%batch, %i8, %i4, %i4, %i8, %i1, %i1, %i1, %i1, %i1, %i1, %i4, %i4, %opi, %i128, %i16, %i4, %wpi, %i0, %tpi, %sn, %sf, %sh, %lo, %lo, %flags) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %o : memref<?x8x4x4xf32>
  return %t : memref<?x8x4x4xf32>
}
