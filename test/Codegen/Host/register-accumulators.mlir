// RUN: dist-opt %s --split-input-file --dist-hoist-parallel-dims \
// RUN:   --convert-linalg-to-parallel-loops --dist-register-accumulators \
// RUN:   | FileCheck %s

// Batch-norm statistics over N, H, W of a contiguous NCHW buffer: C is
// hoisted, H and W merge into one loop of 1024, and that loop carries the
// sum in a register (iter_args), reassociable and marked for LLVM's
// vectoriser with four vectors a trip (four independent sums); the sum is
// loaded once before and stored once after it.
// CHECK-DAG: #[[$VEC:.*]] = #llvm.loop_vectorize<disable = false>
// CHECK-DAG: #[[$IL:.*]] = #llvm.loop_interleave<count = 4 : i32>
// CHECK-DAG: #[[$UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// CHECK-DAG: #[[$ANN:.*]] = #llvm.loop_annotation<vectorize = #[[$VEC]], interleave = #[[$IL]], unroll = #[[$UNROLL]]>
// CHECK-LABEL: func.func @channel_sums(
// CHECK-SAME: %[[X:.*]]: memref<8x16x32x32xf32>, %[[S:.*]]: memref<16xf32>)
// CHECK: %[[COL:.*]] = memref.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3]] : memref<8x16x32x32xf32> into memref<8x16x1024xf32>
// CHECK: scf.parallel (%[[C:.*]]) =
// CHECK-NEXT: scf.for %[[N:.*]] = %{{.*}} to %c8
// CHECK-NEXT: %[[INIT:.*]] = memref.load %[[S]][%[[C]]]
// CHECK-NEXT: %[[SUM:.*]] = scf.for %[[HW:.*]] = %{{.*}} to %c1024 {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK-NEXT: %[[V:.*]] = memref.load %[[COL]][%[[N]], %[[C]], %[[HW]]]
// CHECK-NEXT: %[[ADD:.*]] = arith.addf %[[V]], %[[ACC]] fastmath<reassoc> : f32
// CHECK-NEXT: scf.yield %[[ADD]]
// CHECK-NEXT: } {loop_annotation = #[[$ANN]]}
// CHECK-NEXT: memref.store %[[SUM]], %[[S]][%[[C]]]

#id4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#ch = affine_map<(n, c, h, w) -> (c)>
func.func @channel_sums(%x: memref<8x16x32x32xf32>, %s: memref<16xf32>) {
  linalg.generic {indexing_maps = [#id4, #ch],
                  iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : memref<8x16x32x32xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A maximum also accumulates in a register and is marked for LLVM's
// vectoriser, but not reassociated: it is associative as it is (any order
// gives the same bits).
// CHECK-LABEL: func.func @row_max(
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK: arith.maximumf %{{.*}}, %[[ACC]] : f32
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {loop_annotation = #[[$ANN]]}
// CHECK-NOT: memref.store {{.*}} : memref<64x256xf32>

#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @row_max(%x: memref<64x256xf32>, %m: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id2, #row],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x256xf32>) outs(%m : memref<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A maximum through a compare and a select (an arg-max's value) is carried
// but not marked: LLVM would only remark that it cannot vectorise it.
// CHECK-LABEL: func.func @select_max(
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK: arith.select
// CHECK-NEXT: scf.yield
// CHECK-NEXT: {{^ *}}}{{$}}

#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @select_max(%x: memref<64x256xf32>, %m: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id2, #row],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x256xf32>) outs(%m : memref<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %gt = arith.cmpf ogt, %a, %acc : f32
    %r = arith.select %gt, %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Rows 32 elements apart cannot merge with their 16 columns without a
// copy: no collapse, and the 16-trip loop still carries its sum; it is too
// short to ask for four vectors a trip.
// CHECK: #[[$SHORT:.*]] = #llvm.loop_annotation<vectorize = #{{[a-z_0-9]+}}, unroll = #{{[a-z_0-9]+}}>
// CHECK-LABEL: func.func @strided_sums(
// CHECK-NOT: memref.collapse_shape
// CHECK: scf.for {{.*}} to %c8
// CHECK: scf.for {{.*}} to %c16 {{.*}} iter_args
// CHECK: arith.addf {{.*}} fastmath<reassoc>
// CHECK: } {loop_annotation = #[[$SHORT]]}

#id3 = affine_map<(b, i, j) -> (b, i, j)>
#b = affine_map<(b, i, j) -> (b)>
func.func @strided_sums(%x: memref<4x8x16xf32, strided<[256, 32, 1]>>, %s: memref<4xf32>) {
  linalg.generic {indexing_maps = [#id3, #b],
                  iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : memref<4x8x16xf32, strided<[256, 32, 1]>>) outs(%s : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A window tap inside a compound index (o * 2 + k) is not a contiguous
// dimension: no collapse. The products stay exact; only the sum
// reassociates.
// CHECK-LABEL: func.func @window_sums(
// CHECK-NOT: memref.collapse_shape
// CHECK: scf.for {{.*}} to %c3
// CHECK: scf.for {{.*}} to %c8 {{.*}} iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK: %[[P:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: arith.addf %[[ACC]], %[[P]] fastmath<reassoc> : f32

#win = affine_map<(o, k, l) -> (o * 2 + k, l)>
#tap = affine_map<(o, k, l) -> (k, l)>
#o = affine_map<(o, k, l) -> (o)>
func.func @window_sums(%x: memref<17x8xf32>, %t: memref<3x8xf32>, %s: memref<8xf32>) {
  linalg.generic {indexing_maps = [#win, #tap, #o],
                  iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x, %t : memref<17x8xf32>, memref<3x8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %w: f32, %acc: f32):
    %p = arith.mulf %a, %w : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// An elementwise loop stores at the loop's own indices: nothing to carry.
// CHECK-LABEL: func.func @relu(
// CHECK-NOT: iter_args
// CHECK: memref.store
// CHECK-NOT: loop_annotation

#e = affine_map<(i, j) -> (i, j)>
func.func @relu(%x: memref<64x256xf32>, %y: memref<64x256xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#e, #e],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x256xf32>) outs(%y : memref<64x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %z : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// The loop also reads another view of the accumulator's buffer: the
// deferred store could be observed, so nothing changes.
// CHECK-LABEL: func.func @aliased_view(
// CHECK-NOT: iter_args
// CHECK: memref.store
func.func @aliased_view(%buf: memref<2x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %row = memref.subview %buf[1, 0] [1, 64] [1, 1] : memref<2x64xf32> to memref<64xf32, strided<[1], offset: 64>>
  scf.for %i = %c0 to %c64 step %c1 {
    %a = memref.load %buf[%c0, %c0] : memref<2x64xf32>
    %x = memref.load %row[%i] : memref<64xf32, strided<[1], offset: 64>>
    %s = arith.addf %a, %x : f32
    memref.store %s, %buf[%c0, %c0] : memref<2x64xf32>
  }
  return
}

// -----

// An accumulator used twice (an exponential moving average) is carried in a
// register but not reassociated or marked: it is no plain sum.
// CHECK-LABEL: func.func @moving_average(
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK: arith.subf %{{.*}}, %[[ACC]] : f32
// CHECK: arith.addf %[[ACC]], %{{.*}} : f32
// CHECK-NEXT: scf.yield
// CHECK-NEXT: }{{$}}
func.func @moving_average(%x: memref<64xf32>, %m: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %r = arith.constant 0.1 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    %a = memref.load %m[%c0] : memref<1xf32>
    %v = memref.load %x[%i] : memref<64xf32>
    %d = arith.subf %v, %a : f32
    %t = arith.mulf %d, %r : f32
    %s = arith.addf %a, %t : f32
    memref.store %s, %m[%c0] : memref<1xf32>
  }
  return
}

// -----

// A row sum written beside an output stored element by element (a
// softmax's exponentials): the sum is carried in a register and the loop
// marked for the vectoriser; the element stores stay in the loop.
// CHECK-LABEL: func.func @sum_beside_output(
// CHECK-SAME: %[[X:.*]]: memref<64x256xf32>, %[[E:.*]]: memref<64x256xf32>, %[[S:.*]]: memref<64xf32>)
// CHECK: scf.for %[[J:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK: %[[EXP:.*]] = math.exp
// CHECK-NEXT: %[[ADD:.*]] = arith.addf %[[ACC]], %[[EXP]] fastmath<reassoc>
// CHECK-NEXT: memref.store %[[EXP]], %[[E]][%{{.*}}, %[[J]]]
// CHECK-NEXT: scf.yield %[[ADD]]
// CHECK-NEXT: } {loop_annotation = #[[$ANN]]}
// CHECK-NEXT: memref.store %{{.*}}, %[[S]]

#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @sum_beside_output(%x: memref<64x256xf32>, %e: memref<64x256xf32>,
                             %s: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2, #row],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x256xf32>) outs(%e, %s : memref<64x256xf32>, memref<64xf32>) {
  ^bb0(%a: f32, %old: f32, %acc: f32):
    %v = math.exp %a : f32
    %r = arith.addf %acc, %v : f32
    linalg.yield %v, %r : f32, f32
  }
  return
}

// -----

// An output the loop also reads (here the accumulator's own buffer, another
// element of it) keeps every access in memory.
// CHECK-LABEL: func.func @output_read_back(
// CHECK-NOT: iter_args
// CHECK: return
func.func @output_read_back(%x: memref<64x256xf32>, %s: memref<64x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c1 to %c256 step %c1 {
      %acc = memref.load %s[%i, %c0] : memref<64x256xf32>
      %a = memref.load %x[%i, %j] : memref<64x256xf32>
      %r = arith.addf %acc, %a : f32
      memref.store %r, %s[%i, %c0] : memref<64x256xf32>
      memref.store %r, %s[%i, %j] : memref<64x256xf32>
    }
  }
  return
}
