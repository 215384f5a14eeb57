// RUN: dist-opt %s -p 'builtin.module(func.func(dist-map-loops-to-gpu{threads=128},canonicalize))' -split-input-file -verify-diagnostics | FileCheck %s

// A 2-D parallel loop: its dimensions collapse into one index spread over
// blocks of 128 threads, behind a bounds check.
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME:  (%[[A:.*]]: memref<3x1000xf32>, %[[B:.*]]: memref<3x1000xf32>)
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C1000:.*]] = arith.constant 1000 : index
// CHECK-DAG:     %[[N:.*]] = arith.constant 3000 : index
// CHECK-DAG:     %[[GRID:.*]] = arith.constant 24 : index
// CHECK:         gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C128]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]])
// CHECK:           %[[BASE:.*]] = arith.muli %[[BX]], %[[C128]] : index
// CHECK:           %[[I:.*]] = arith.addi %[[BASE]], %[[TX]] : index
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[I]], %[[N]] : index
// CHECK:           scf.if %[[IN]] {
// CHECK-DAG:         %[[COL:.*]] = arith.remsi %[[I]], %[[C1000]]
// CHECK-DAG:         %[[ROW:.*]] = arith.divsi %[[I]], %[[C1000]]
// CHECK:             %[[X:.*]] = memref.load %[[A]][%[[ROW]], %[[COL]]]
// CHECK:             %[[Y:.*]] = math.exp %[[X]]
// CHECK:             memref.store %[[Y]], %[[B]][%[[ROW]], %[[COL]]]
// CHECK:           gpu.terminator
// CHECK-NOT:     scf.parallel
func.func @elementwise(%a: memref<3x1000xf32>, %b: memref<3x1000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %n = arith.constant 1000 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c3, %n) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<3x1000xf32>
    %y = math.exp %x : f32
    memref.store %y, %b[%i, %j] : memref<3x1000xf32>
  }
  return
}

// -----

// A dynamic extent: no launch when the loop is empty (a grid of no blocks
// is an error).
// CHECK-LABEL: func.func @dynamic
// CHECK:         %[[N:.*]] = memref.dim
// CHECK-DAG:     %[[ANY:.*]] = arith.cmpi ugt, %[[N]], %{{.*}} : index
// CHECK-DAG:     %[[GRID:.*]] = arith.ceildivui %[[N]], %{{.*}} : index
// CHECK:         scf.if %[[ANY]] {
// CHECK:           gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[GRID]],
func.func @dynamic(%a: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf32>
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %f, %a[%i] : memref<?xf32>
  }
  return
}

// -----

// A reduction to a scalar (a loss's sum) runs in one block: each thread
// sums every 64th element from its own, gpu.all_reduce combines them and
// thread 0 adds the total to the scalar.
// CHECK-LABEL: func.func @sum
// CHECK-SAME:  (%[[A:.*]]: memref<64xf32>, %[[S:.*]]: memref<f32>)
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C64]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]])
// CHECK:           %[[PART:.*]] = scf.for %[[K:.*]] = %[[T]] to %[[C64]] step %[[C64]] iter_args
// CHECK:             memref.load %[[A]][%[[K]]]
// CHECK:           %[[ALL:.*]] = gpu.all_reduce add %[[PART]]
// CHECK:           scf.if
// CHECK:             %[[OLD:.*]] = memref.load %[[S]][]
// CHECK:             %[[NEW:.*]] = arith.addf %[[OLD]], %[[ALL]]
// CHECK:             memref.store %[[NEW]], %[[S]][]
// CHECK:           gpu.terminator
func.func @sum(%a: memref<64xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %a[%i] : memref<64xf32>
    %acc = memref.load %s[] : memref<f32>
    %y = arith.addf %acc, %x : f32
    memref.store %y, %s[] : memref<f32>
  }
  return
}

// -----

// A sum over two nested loops (no single reduction loop) runs in one
// thread.
// CHECK-LABEL: func.func @sum2d
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) threads(%{{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]])
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK-NOT:     gpu.all_reduce
func.func @sum2d(%a: memref<4x64xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      %x = memref.load %a[%i, %j] : memref<4x64xf32>
      %acc = memref.load %s[] : memref<f32>
      %y = arith.addf %acc, %x : f32
      memref.store %y, %s[] : memref<f32>
    }
  }
  return
}

// -----

// A sequential loop around two parallel ones stays on the host and
// launches them on each trip.
// CHECK-LABEL: func.func @batches
// CHECK:         scf.for
// CHECK:           gpu.launch
// CHECK:             memref.store
// CHECK:             gpu.terminator
// CHECK:           gpu.launch
func.func @batches(%a: memref<3x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 2.0 : f32
  scf.for %b = %c0 to %c3 step %c1 {
    scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
      memref.store %f, %a[%b, %i] : memref<3x64xf32>
    }
    scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
      %x = memref.load %a[%b, %i] : memref<3x64xf32>
      %y = arith.addf %x, %f : f32
      memref.store %y, %a[%b, %i] : memref<3x64xf32>
    }
  }
  return
}

// -----

// A sequential loop around one parallel loop whose trips write disjoint
// rows: one launch over both.
// CHECK-LABEL: func.func @batch_rows
// CHECK-NOT:     scf.for
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c2,
// CHECK:           memref.store
// CHECK-NOT:     scf.for
func.func @batch_rows(%a: memref<3x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 2.0 : f32
  scf.for %b = %c0 to %c3 step %c1 {
    scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
      memref.store %f, %a[%b, %i] : memref<3x64xf32>
    }
  }
  return
}

// -----

// A scatter-add (a Gather's gradient) with the runtime's index check:
// rows may repeat, so the row loop stays sequential in each thread, and
// the column loop, which indexes every access of the written buffer,
// becomes the threads. The check records the bad index in a device buffer
// [flag, index] that the host reads after the launch and reports, the
// bound and the node's name rebuilt there.
func.func private @dist_rt_index_error(i64, i64, i64)
llvm.mlir.global internal constant @name("g\00") {addr_space = 0 : i32}
// CHECK-LABEL: func.func @scatter_add
// CHECK-SAME:  (%[[IDS:.*]]: memref<8xi64>, %[[G:.*]]: memref<8x96xf32>, %[[T:.*]]: memref<10x96xf32>)
// CHECK:         %[[ERR:.*]] = memref.alloc() : memref<2xi64>
// CHECK:         memref.store %c0_i64, %[[ERR]][%c0]
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c1,
// CHECK:           scf.if
// CHECK:             scf.for %[[R:.*]] = %c0 to %c8 step %c1 {
// CHECK:               %[[ID:.*]] = memref.load %[[IDS]][%[[R]]]
// CHECK:               scf.if
// CHECK-NEXT:            memref.store %c1_i64, %[[ERR]][%c0]
// CHECK-NEXT:            memref.store %[[ID]], %[[ERR]][%c1]
// CHECK:               memref.store %{{.*}}, %[[T]]
// CHECK-NOT:         func.call
// CHECK:           gpu.terminator
// CHECK:         %[[FLAG:.*]] = memref.load %[[ERR]][%c0]
// CHECK:         %[[BAD:.*]] = arith.cmpi ne, %[[FLAG]], %c0_i64
// CHECK:         scf.if %[[BAD]] {
// CHECK:           %[[V:.*]] = memref.load %[[ERR]][%c1]
// CHECK:           %[[NAME:.*]] = llvm.ptrtoint
// CHECK:           func.call @dist_rt_index_error(%[[V]], %c10_i64, %[[NAME]])
// CHECK:         memref.dealloc %[[ERR]]
func.func @scatter_add(%ids: memref<8xi64>, %g: memref<8x96xf32>, %t: memref<10x96xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c10 = arith.constant 10 : index
  %c96 = arith.constant 96 : index
  %c10_i64 = arith.constant 10 : i64
  %name = llvm.mlir.addressof @name : !llvm.ptr
  scf.for %r = %c0 to %c8 step %c1 {
    scf.for %c = %c0 to %c96 step %c1 {
      %id = memref.load %ids[%r] : memref<8xi64>
      %x = memref.load %g[%r, %c] : memref<8x96xf32>
      %i = arith.index_cast %id : i64 to index
      %bad = arith.cmpi uge, %i, %c10 : index
      scf.if %bad {
        %p = llvm.ptrtoint %name : !llvm.ptr to i64
        func.call @dist_rt_index_error(%id, %c10_i64, %p) : (i64, i64, i64) -> ()
      }
      %lo = arith.minsi %i, %c9 : index
      %ix = arith.maxsi %lo, %c0 : index
      %old = memref.load %t[%ix, %c] : memref<10x96xf32>
      %new = arith.addf %old, %x : f32
      memref.store %new, %t[%ix, %c] : memref<10x96xf32>
    }
  }
  return
}

// -----

// A nest whose every iteration may write the same element (a sum into a
// scalar) keeps its order: one thread.
// CHECK-LABEL: func.func @dependent
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c1, %{{.*}} = %c1, %{{.*}} = %c1) threads(%{{.*}}) in (%{{.*}} = %c1,
// CHECK:           scf.for
// CHECK:             scf.for
func.func @dependent(%a: memref<4x8xf32>, %s: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c7 = arith.constant 7 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %j] : memref<4x8xf32>
      %k = arith.subi %c7, %j : index
      %acc = memref.load %s[%k] : memref<8xf32>
      %y = arith.addf %acc, %x : f32
      memref.store %y, %s[%j] : memref<8xf32>
    }
  }
  return
}

// -----

// A constant a kernel reads is copied into a device buffer before the
// launch, and that buffer freed after it.
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
// CHECK-LABEL: func.func @lookup
// CHECK:         %[[HOST:.*]] = memref.get_global @table : memref<4xf32>
// CHECK:         %[[DEV:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         memref.copy %[[HOST]], %[[DEV]]
// CHECK:         gpu.launch
// CHECK:           memref.load %[[DEV]]
// CHECK:         memref.dealloc %[[DEV]]
// CHECK-NEXT:    return
func.func @lookup(%b: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %t = memref.get_global @table : memref<4xf32>
    %x = memref.load %t[%i] : memref<4xf32>
    memref.store %x, %b[%i] : memref<4xf32>
  }
  return
}

// -----

// A loop that calls a function stays on the host, and the compile says so.
func.func private @report(index)
// CHECK-LABEL: func.func @checked
// CHECK-NOT:     gpu.launch
// CHECK:         scf.parallel
func.func @checked(%b: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 0.0 : f32
  // expected-warning @+1 {{runs on the host: its func.call has no GPU lowering}}
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    func.call @report(%i) : (index) -> ()
    memref.store %f, %b[%i] : memref<4xf32>
  }
  return
}

// -----

// A loop around calls of the runtime's device library (an outer batch of
// cuBLASLt products) stays on the host without a warning; a loop nest
// beside it still becomes a launch.
func.func private @dist_rt_cuda_gemm_f32(i64, i64)
// CHECK-LABEL: func.func @batched_products
// CHECK:         scf.for
// CHECK-NEXT:      arith.index_cast
// CHECK-NEXT:      func.call @dist_rt_cuda_gemm_f32
// CHECK:         gpu.launch
func.func @batched_products(%b: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 0.0 : f32
  scf.for %t = %c0 to %c4 step %c1 {
    %i = arith.index_cast %t : index to i64
    func.call @dist_rt_cuda_gemm_f32(%i, %i) : (i64, i64) -> ()
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %f, %b[%i] : memref<4xf32>
  }
  return
}

// -----

// A reduction per row (a softmax's sum of exponentials, with the
// exponentials stored beside it): one block per row, its threads each
// summing every 128th element from their own, combined across the block
// by gpu.all_reduce; thread 0 adds the total to the row's accumulator.
// CHECK-LABEL: func.func @row_sums
// CHECK-SAME:  (%[[X:.*]]: memref<6x1000xf32>, %[[ACC:.*]]: memref<6xf32>, %[[E:.*]]: memref<6x1000xf32>)
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG:     %[[C1000:.*]] = arith.constant 1000 : index
// CHECK:         gpu.launch blocks(%[[ROW:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C6]], {{.*}} threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C128]],
// CHECK:           %[[P:.*]] = scf.for %[[K:.*]] = %[[T]] to %[[C1000]] step %[[C128]] iter_args(%[[S:.*]] = %[[ZERO]]) -> (f32) {
// CHECK:             %[[V:.*]] = memref.load %[[X]][%[[ROW]], %[[K]]]
// CHECK:             %[[EXP:.*]] = math.exp %[[V]]
// CHECK:             %[[NEXT:.*]] = arith.addf %[[S]], %[[EXP]]
// CHECK:             memref.store %[[EXP]], %[[E]][%[[ROW]], %[[K]]]
// CHECK:             scf.yield %[[NEXT]]
// CHECK:           %[[TOTAL:.*]] = gpu.all_reduce add %[[P]] uniform
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %[[C0]]
// CHECK:           scf.if %[[FIRST]] {
// CHECK:             %[[OLD:.*]] = memref.load %[[ACC]][%[[ROW]]]
// CHECK:             %[[NEW:.*]] = arith.addf %[[OLD]], %[[TOTAL]]
// CHECK:             memref.store %[[NEW]], %[[ACC]][%[[ROW]]]
// CHECK:           gpu.terminator
func.func @row_sums(%x: memref<6x1000xf32>, %acc: memref<6xf32>, %e: memref<6x1000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c1000 = arith.constant 1000 : index
  scf.parallel (%i) = (%c0) to (%c6) step (%c1) {
    scf.for %k = %c0 to %c1000 step %c1 {
      %v = memref.load %x[%i, %k] : memref<6x1000xf32>
      %a = memref.load %acc[%i] : memref<6xf32>
      %ex = math.exp %v : f32
      %s = arith.addf %a, %ex : f32
      memref.store %ex, %e[%i, %k] : memref<6x1000xf32>
      memref.store %s, %acc[%i] : memref<6xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Rows of a maximum over a dynamic extent (a power-of-two block of
// `threads`); short rows (under 32) and a loop that reads what it stores
// keep one thread per row.
// CHECK-LABEL: func.func @row_kinds
// CHECK:         gpu.launch
// CHECK:           gpu.all_reduce maximumf
// CHECK:         gpu.launch
// CHECK-NOT:       gpu.all_reduce
// CHECK:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:         gpu.launch
// CHECK-NOT:       gpu.all_reduce
// CHECK:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:         return
func.func @row_kinds(%x: memref<4x?xf32>, %acc: memref<4xf32>, %y: memref<4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %n = memref.dim %x, %c1 : memref<4x?xf32>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %k = %c0 to %n step %c1 {
      %v = memref.load %x[%i, %k] : memref<4x?xf32>
      %a = memref.load %acc[%i] : memref<4xf32>
      %m = arith.maximumf %v, %a : f32
      memref.store %m, %acc[%i] : memref<4xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %k = %c0 to %c16 step %c1 {
      %v = memref.load %y[%i, %k] : memref<4x16xf32>
      %a = memref.load %acc[%i] : memref<4xf32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %acc[%i] : memref<4xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %k = %c1 to %n step %c1 {
      %km = arith.subi %k, %c1 : index
      %p = memref.load %x[%i, %km] : memref<4x?xf32>
      %a = memref.load %acc[%i] : memref<4xf32>
      %s = arith.addf %a, %p : f32
      memref.store %s, %acc[%i] : memref<4xf32>
      memref.store %s, %x[%i, %k] : memref<4x?xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Scratch allocated inside the body is each iteration's own: it does not
// keep the column loop sequential.
// CHECK-LABEL: func.func @scratch
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c1, %{{.*}}, %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c128,
// CHECK:           scf.for
// CHECK:             memref.alloca
func.func @scratch(%a: memref<4x96xf32>, %s: memref<96xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c96 = arith.constant 96 : index
  scf.for %c = %c0 to %c96 step %c1 {
    scf.for %r = %c0 to %c4 step %c1 {
      %t = memref.alloca() : memref<f32>
      %x = memref.load %a[%r, %c] : memref<4x96xf32>
      memref.store %x, %t[] : memref<f32>
      %y = memref.load %t[] : memref<f32>
      %acc = memref.load %s[%c] : memref<96xf32>
      %z = arith.addf %acc, %y : f32
      memref.store %z, %s[%c] : memref<96xf32>
    }
  }
  return
}
