// RUN: dist-opt %s --dist-parallelize-loops --split-input-file | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-parallelize-loops \
// RUN:   --convert-scf-to-cf --expand-strided-metadata --lower-affine \
// RUN:   --convert-math-to-llvm --convert-arith-to-llvm \
// RUN:   --finalize-memref-to-llvm --convert-func-to-llvm \
// RUN:   --convert-cf-to-llvm --convert-index-to-llvm \
// RUN:   --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// An outermost scf.parallel with enough work is outlined into a function of
// (ctx, begin, end) and run through dist_rt_parallel_for. 8x16x32x32: the
// first two dimensions (128 >= 64 iterations) are linearised and split, the
// third stays a nested loop, the innermost stays whole, is kept rolled and
// is marked for vectorisation. Constants are cloned into the body; memrefs
// travel in the context as LLVM descriptors.

// CHECK-DAG: #[[$UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// CHECK-DAG: #[[$VEC:.*]] = #llvm.loop_vectorize<disable = false>
// CHECK: #[[$ANN:.*]] = #llvm.loop_annotation<vectorize = #[[$VEC]], unroll = #[[$UNROLL]]>
// CHECK-LABEL: func.func private @relu_par0(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64)
// CHECK-SAME: llvm.linkage = #llvm.linkage<internal>
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: llvm.load {{.*}} -> !llvm.struct<(ptr, ptr, i64, array<4 x i64>, array<4 x i64>)>
// CHECK: builtin.unrealized_conversion_cast {{.*}} to memref<8x16x32x32xf32>
// CHECK: %[[LO:.*]] = arith.index_cast %[[BEGIN]] : i64 to index
// CHECK: %[[HI:.*]] = arith.index_cast %[[END]] : i64 to index
// CHECK: scf.for %[[LIN:.*]] = %[[LO]] to %[[HI]]
// CHECK: arith.remui %[[LIN]], %[[C16]]
// CHECK: arith.divui %[[LIN]], %[[C16]]
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.maximumf %{{.*}}, %[[ZERO]]
// CHECK: } {loop_annotation = #[[$ANN]]}
// CHECK-NOT: scf.parallel

// CHECK-LABEL: func.func @relu(
// CHECK: %[[ALLOCA:.*]] = llvm.alloca {{.*}} x !llvm.struct<(struct<(ptr, ptr, i64, array<4 x i64>, array<4 x i64>)>, struct<(ptr, ptr, i64, array<4 x i64>, array<4 x i64>)>)>
// CHECK: builtin.unrealized_conversion_cast %arg0 : memref<8x16x32x32xf32> to !llvm.struct
// CHECK: llvm.store
// CHECK: %[[FN:.*]] = constant @relu_par0 : (!llvm.ptr, i64, i64) -> ()
// CHECK: %[[N:.*]] = arith.constant 128 : i64
// CHECK: call @dist_rt_parallel_for(%[[N]], %[[FN]], %[[ALLOCA]])
// CHECK-NOT: scf.parallel
func.func @relu(%in: memref<8x16x32x32xf32>, %out: memref<8x16x32x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%n, %c, %h, %w) = (%c0, %c0, %c0, %c0) to (%c8, %c16, %c32, %c32) step (%c1, %c1, %c1, %c1) {
    %v = memref.load %in[%n, %c, %h, %w] : memref<8x16x32x32xf32>
    %r = arith.maximumf %v, %zero : f32
    memref.store %r, %out[%n, %c, %h, %w] : memref<8x16x32x32xf32>
    scf.reduce
  }
  return
}

// After the lowering to LLVM the casts are gone and the body's address
// goes to the runtime.
// LLVM-LABEL: llvm.func internal @relu_par0(
// LLVM: llvm.br {{.*}} {loop_annotation = #
// LLVM-LABEL: llvm.func @relu(
// LLVM: %[[F:.*]] = llvm.mlir.addressof @relu_par0 : !llvm.ptr
// LLVM: llvm.call @dist_rt_parallel_for(%{{.*}}, %[[F]], %{{.*}}) : (i64, !llvm.ptr, !llvm.ptr) -> ()
// LLVM-NOT: unrealized_conversion_cast

// -----

// Too little work for a fork (4x8 elements): nested loops on the calling
// thread, the innermost with the same vectorisation hint as an outlined
// loop's (else LLVM unrolls it into scalar moves).
// CHECK-LABEL: func.func @small(
// CHECK-NOT: scf.parallel
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NOT: loop_annotation
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK: memref.load %{{.*}}[%[[I]], %[[J]]]
// CHECK: arith.negf
// CHECK: memref.store
// CHECK: } {loop_annotation = #
// CHECK-NEXT: {{^ *}$}}
// CHECK-NOT: call @dist_rt_parallel_for
// CHECK: return
func.func @small(%in: memref<4x8xf32>, %out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<4x8xf32>
    %r = arith.negf %v : f32
    memref.store %r, %out[%i, %j] : memref<4x8xf32>
    scf.reduce
  }
  return
}

// -----

// A gather of 128 rows of 32 floats: the row index is computed from the
// row's id alone, which LLVM hoists out of the loop over the row's
// elements, so it counts once per row. Counted once per element the loop
// would look like 128 * 32 * 10 = 40960 operations, above the fork
// threshold; it is about 128 * (32 * 3 + 7) = 13184 and stays on the
// calling thread, in both forms: a 2-D parallel loop and a parallel loop
// over rows around a sequential one over columns.
// CHECK-LABEL: func.func @gather_rows(
// CHECK-NOT: call @dist_rt_parallel_for
// CHECK: return
// CHECK-LABEL: func.func @gather_rows_nested(
// CHECK-NOT: call @dist_rt_parallel_for
// CHECK: return
func.func @gather_rows(%ids: memref<128xi64>, %table: memref<1000x32xf32>,
                       %out: memref<128x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c999 = arith.constant 999 : index
  %c1000 = arith.constant 1000 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c32) step (%c1, %c1) {
    %id = memref.load %ids[%i] : memref<128xi64>
    %x = arith.index_cast %id : i64 to index
    %neg = arith.cmpi slt, %x, %c0 : index
    %wrapped = arith.addi %x, %c1000 : index
    %row = arith.select %neg, %wrapped, %x : index
    %hi = arith.minsi %row, %c999 : index
    %r = arith.maxsi %hi, %c0 : index
    %v = memref.load %table[%r, %j] : memref<1000x32xf32>
    memref.store %v, %out[%i, %j] : memref<128x32xf32>
    scf.reduce
  }
  return
}
func.func @gather_rows_nested(%ids: memref<128xi64>,
                              %table: memref<1000x32xf32>,
                              %out: memref<128x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c999 = arith.constant 999 : index
  %c1000 = arith.constant 1000 : index
  scf.parallel (%i) = (%c0) to (%c128) step (%c1) {
    scf.for %j = %c0 to %c32 step %c1 {
      %id = memref.load %ids[%i] : memref<128xi64>
      %x = arith.index_cast %id : i64 to index
      %neg = arith.cmpi slt, %x, %c0 : index
      %wrapped = arith.addi %x, %c1000 : index
      %row = arith.select %neg, %wrapped, %x : index
      %hi = arith.minsi %row, %c999 : index
      %r = arith.maxsi %hi, %c0 : index
      %v = memref.load %table[%r, %j] : memref<1000x32xf32>
      memref.store %v, %out[%i, %j] : memref<128x32xf32>
    }
    scf.reduce
  }
  return
}

// -----

// The same per-element work with an index that depends on the element
// (a gather of single elements) is counted per element and forks.
// CHECK-LABEL: func.func @gather_elements(
// CHECK: call @dist_rt_parallel_for(
func.func @gather_elements(%ids: memref<128x32xi64>,
                           %table: memref<1000x32xf32>,
                           %out: memref<128x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c999 = arith.constant 999 : index
  %c1000 = arith.constant 1000 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c32) step (%c1, %c1) {
    %id = memref.load %ids[%i, %j] : memref<128x32xi64>
    %x = arith.index_cast %id : i64 to index
    %neg = arith.cmpi slt, %x, %c0 : index
    %wrapped = arith.addi %x, %c1000 : index
    %row = arith.select %neg, %wrapped, %x : index
    %hi = arith.minsi %row, %c999 : index
    %r = arith.maxsi %hi, %c0 : index
    %v = memref.load %table[%r, %j] : memref<1000x32xf32>
    memref.store %v, %out[%i, %j] : memref<128x32xf32>
    scf.reduce
  }
  return
}

// -----

// A dynamic batch: the fork is decided at run time from the trip counts,
// else the body runs inline over the whole range. Index values from above
// travel as i64.
// CHECK-LABEL: func.func private @dyn_par0(
// CHECK: llvm.load {{.*}} -> i64
// CHECK: arith.index_cast {{.*}} : i64 to index
// CHECK-LABEL: func.func @dyn(
// CHECK: %[[B:.*]] = memref.dim %arg0, %c0
// CHECK: %[[TOTAL:.*]] = arith.muli
// CHECK: %[[BIG:.*]] = arith.cmpi uge, %[[TOTAL]]
// CHECK: scf.if %[[BIG]] {
// CHECK: call @dist_rt_parallel_for(
// CHECK: } else {
// CHECK: call @dyn_par0(%{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, i64) -> ()
func.func @dyn(%in: memref<?x256xf32>, %out: memref<?x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %b = memref.dim %in, %c0 : memref<?x256xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%b, %c256) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<?x256xf32>
    %r = arith.negf %v : f32
    memref.store %r, %out[%i, %j] : memref<?x256xf32>
    scf.reduce
  }
  return
}

// -----

// Two rows of 4096: too few outer iterations for the threads, so the
// innermost dimension is cut into 8 blocks per row (n = 16).
// CHECK-LABEL: func.func private @wide_par0(
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: arith.remui %{{.*}}, %[[C8]]
// CHECK: arith.minui
// CHECK-LABEL: func.func @wide(
// CHECK: arith.constant 16 : i64
// CHECK: call @dist_rt_parallel_for(
func.func @wide(%in: memref<2x4096xf32>, %out: memref<2x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c4096) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<2x4096xf32>
    %r = math.exp %v : f32
    memref.store %r, %out[%i, %j] : memref<2x4096xf32>
    scf.reduce
  }
  return
}

// -----

// Loops inside a sequential loop, and loops with reductions, are not
// outlined (a fork per trip; a reduction's combiner).
// CHECK-LABEL: func.func @nested_and_reducing(
// CHECK-NOT: call @dist_rt_parallel_for
// CHECK: scf.for
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.reduce(
func.func @nested_and_reducing(%in: memref<64x4096xf32>, %out: memref<4096xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    scf.parallel (%j) = (%c0) to (%c4096) step (%c1) {
      %v = memref.load %in[%i, %j] : memref<64x4096xf32>
      memref.store %v, %out[%j] : memref<4096xf32>
      scf.reduce
    }
  }
  %sum = scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c4096) step (%c1, %c1) init (%zero) -> f32 {
    %v = memref.load %in[%i, %j] : memref<64x4096xf32>
    scf.reduce(%v : f32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }
  }
  return %sum : f32
}

// -----

// A body's name that is already taken is skipped (<parent>_par0 exists).
// CHECK-LABEL: func.func @taken_par0()
// CHECK-LABEL: func.func private @taken_par1(
// CHECK-LABEL: func.func @taken(
// CHECK: constant @taken_par1
// CHECK: call @dist_rt_parallel_for(
func.func @taken_par0() {
  return
}
func.func @taken(%in: memref<64x1024xf32>, %out: memref<64x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c1024) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<64x1024xf32>
    %r = arith.negf %v : f32
    memref.store %r, %out[%i, %j] : memref<64x1024xf32>
    scf.reduce
  }
  return
}

// -----

// A loop whose location names an ONNX node gives its body that name
// (characters outside [A-Za-z0-9] become single underscores); a training
// step's phase tag wrapping the node's location comes first. A fused
// location uses its first name. A node known only by its index adds
// nothing.
// CHECK-LABEL: func.func private @named_par0_layer1_bn1_BatchNormalization(
// CHECK-LABEL: func.func private @named_par1_bwd_layer1_Relu_1(
// CHECK-LABEL: func.func private @named_par2_fc_Gemm(
// CHECK-LABEL: func.func private @named_par3(
// CHECK-LABEL: func.func @named(
// CHECK: constant @named_par0_layer1_bn1_BatchNormalization
// CHECK: constant @named_par1_bwd_layer1_Relu_1
// CHECK: constant @named_par2_fc_Gemm
func.func @named(%in: memref<64x1024xf32>, %out: memref<64x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c1024) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<64x1024xf32>
    %r = arith.negf %v : f32
    memref.store %r, %out[%i, %j] : memref<64x1024xf32>
    scf.reduce
  } loc("/layer1/bn1/BatchNormalization"("model.onnx":6:0))
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c1024) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<64x1024xf32>
    %r = arith.negf %v : f32
    memref.store %r, %out[%i, %j] : memref<64x1024xf32>
    scf.reduce
  } loc("dist.bwd"("/layer1/Relu_1"("model.onnx":7:0)))
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c1024) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<64x1024xf32>
    %r = arith.negf %v : f32
    memref.store %r, %out[%i, %j] : memref<64x1024xf32>
    scf.reduce
  } loc(fused["model.onnx":9:0, "/fc/Gemm"("model.onnx":9:0), "/fc/Add"("model.onnx":10:0)])
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c1024) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<64x1024xf32>
    %r = arith.negf %v : f32
    memref.store %r, %out[%i, %j] : memref<64x1024xf32>
    scf.reduce
  } loc("12"("model.onnx":12:0))
  return
}
