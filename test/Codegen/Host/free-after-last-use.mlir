// RUN: dist-opt %s --split-input-file --dist-free-after-last-use | FileCheck %s

// Each buffer is freed right after its last reader, through views and
// loops that read it.
// CHECK-LABEL: func.func @chain(
// CHECK: %[[A:.*]] = memref.alloc() : memref<16xf32>
// CHECK: %[[B:.*]] = memref.alloc() : memref<16xf32>
// CHECK: memref.copy %[[A]], %[[B]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK: %[[C:.*]] = memref.alloc() : memref<4x4xf32>
// CHECK: scf.for
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK: memref.copy %[[C]], %arg1
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK-NEXT: return
func.func @chain(%arg0: memref<16xf32>, %arg1: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<16xf32>
  memref.copy %arg0, %a : memref<16xf32> to memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  memref.copy %a, %b : memref<16xf32> to memref<16xf32>
  %c = memref.alloc() : memref<4x4xf32>
  %v = memref.expand_shape %b [[0, 1]] output_shape [4, 4] : memref<16xf32> into memref<4x4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %v[%i, %c0] : memref<4x4xf32>
    memref.store %x, %c[%i, %c0] : memref<4x4xf32>
  }
  memref.copy %c, %arg1 : memref<4x4xf32> to memref<4x4xf32>
  memref.dealloc %a : memref<16xf32>
  memref.dealloc %b : memref<16xf32>
  memref.dealloc %c : memref<4x4xf32>
  return
}

// -----

// A runtime call that takes the buffer as an integer reads it: the
// dealloc goes after the call, not after the pointer's extraction.
// CHECK-LABEL: func.func @pointer(
// CHECK: %[[A:.*]] = memref.alloc()
// CHECK: call @consume(
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: call @other()
func.func private @consume(i64)
func.func private @other()
func.func @pointer() {
  %a = memref.alloc() : memref<64xf32>
  %p = memref.extract_aligned_pointer_as_index %a : memref<64xf32> -> index
  %i = arith.index_cast %p : index to i64
  call @other() : () -> ()
  call @consume(%i) : (i64) -> ()
  call @other() : () -> ()
  memref.dealloc %a : memref<64xf32>
  return
}

// -----

// An asynchronous reduction reads the buffer until the wait on the handle
// its start returned.
// CHECK-LABEL: func.func @handle(
// CHECK: %[[A:.*]] = memref.alloc()
// CHECK: %[[H:.*]] = call @start(
// CHECK-NEXT: call @other()
// CHECK-NEXT: call @wait(%[[H]])
// CHECK-NEXT: memref.dealloc %[[A]]
func.func private @start(i64) -> i64
func.func private @wait(i64)
func.func private @other()
func.func @handle() {
  %a = memref.alloc() : memref<64xf32>
  %p = memref.extract_aligned_pointer_as_index %a : memref<64xf32> -> index
  %i = arith.index_cast %p : index to i64
  %h = call @start(%i) : (i64) -> i64
  call @other() : () -> ()
  call @wait(%h) : (i64) -> ()
  call @other() : () -> ()
  memref.dealloc %a : memref<64xf32>
  return
}

// -----

// A pointer stored into a context that a later call receives: the buffer
// lives until that call.
// CHECK-LABEL: func.func @stored(
// CHECK: %[[A:.*]] = memref.alloc()
// CHECK: llvm.store
// CHECK-NEXT: call @other()
// CHECK-NEXT: call @run(
// CHECK-NEXT: memref.dealloc %[[A]]
func.func private @run(!llvm.ptr)
func.func private @other()
func.func @stored() {
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %ctx = llvm.alloca %c1 x i64 : (i64) -> !llvm.ptr
  %a = memref.alloc() : memref<64xf32>
  %p = memref.extract_aligned_pointer_as_index %a : memref<64xf32> -> index
  %i = arith.index_cast %p : index to i64
  llvm.store %i, %ctx : i64, !llvm.ptr
  call @other() : () -> ()
  call @run(%ctx) : (!llvm.ptr) -> ()
  call @other() : () -> ()
  memref.dealloc %a : memref<64xf32>
  return
}

// -----

// A region that yields a view of the buffer hands it to its op's result.
// CHECK-LABEL: func.func @yielded(
// CHECK: %[[A:.*]] = memref.alloc()
// CHECK: scf.if
// CHECK: memref.copy %{{.*}}, %arg1
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: call @other()
func.func private @other()
func.func @yielded(%cond: i1, %arg1: memref<8xf32>) {
  %a = memref.alloc() : memref<16xf32>
  %v = scf.if %cond -> memref<8xf32, strided<[1], offset: ?>> {
    %s = memref.subview %a[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
    %t = memref.cast %s : memref<8xf32, strided<[1]>> to memref<8xf32, strided<[1], offset: ?>>
    scf.yield %t : memref<8xf32, strided<[1], offset: ?>>
  } else {
    %s = memref.subview %a[8] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1], offset: 8>>
    %t = memref.cast %s : memref<8xf32, strided<[1], offset: 8>> to memref<8xf32, strided<[1], offset: ?>>
    scf.yield %t : memref<8xf32, strided<[1], offset: ?>>
  }
  call @other() : () -> ()
  memref.copy %v, %arg1 : memref<8xf32, strided<[1], offset: ?>> to memref<8xf32>
  call @other() : () -> ()
  memref.dealloc %a : memref<16xf32>
  return
}

// -----

// Deallocs stay where a buffer flows to another block, where an alias is
// freed too, and where the dealloc is in another block than the buffer.
// CHECK-LABEL: func.func @stays(
// CHECK: call @other()
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: cf.br
// CHECK-LABEL: func.func @two_deallocs(
// CHECK: call @other()
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: memref.dealloc
// CHECK-LABEL: func.func @other_block(
// CHECK: scf.if
// CHECK-NEXT: call @other()
// CHECK-NEXT: memref.dealloc
func.func private @other()
func.func private @use(memref<16xf32>)
func.func @stays() {
  %a = memref.alloc() : memref<16xf32>
  cf.br ^bb1(%a : memref<16xf32>)
^bb1(%b: memref<16xf32>):
  call @use(%b) : (memref<16xf32>) -> ()
  call @other() : () -> ()
  memref.dealloc %b : memref<16xf32>
  cf.br ^bb2
^bb2:
  return
}
func.func @two_deallocs() {
  %a = memref.alloc() : memref<16xf32>
  %v = memref.cast %a : memref<16xf32> to memref<?xf32>
  call @use(%a) : (memref<16xf32>) -> ()
  call @other() : () -> ()
  memref.dealloc %a : memref<16xf32>
  memref.dealloc %v : memref<?xf32>
  return
}
func.func @other_block(%cond: i1) {
  %a = memref.alloc() : memref<16xf32>
  call @use(%a) : (memref<16xf32>) -> ()
  scf.if %cond {
    func.call @other() : () -> ()
    memref.dealloc %a : memref<16xf32>
  }
  return
}
