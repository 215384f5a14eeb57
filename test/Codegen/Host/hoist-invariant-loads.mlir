// RUN: dist-opt %s --split-input-file --dist-hoist-invariant-loads | FileCheck %s

// A gather's row: the index (i64) is loaded once, before the loop that
// copies the row into an f32 buffer.
// CHECK-LABEL: func.func @gather_row(
// CHECK: %[[ID:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<4xi64>
// CHECK-NEXT: scf.for
// CHECK-NOT: memref.load {{.*}} : memref<4xi64>
// CHECK: memref.load {{.*}} : memref<10x256xf32>
// CHECK: memref.store
func.func @gather_row(%ids: memref<4xi64>, %table: memref<10x256xf32>, %out: memref<4x256xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %j = %c0 to %c256 step %c1 {
    %id = memref.load %ids[%i] : memref<4xi64>
    %row = arith.index_cast %id : i64 to index
    %v = memref.load %table[%row, %j] : memref<10x256xf32>
    memref.store %v, %out[%i, %j] : memref<4x256xf32>
  }
  return
}

// -----

// Loads stay where the loop writes the same element type, where the loop
// may run no trip, where the index changes with the loop, and where the
// loop calls a function.
// CHECK-LABEL: func.func @same_type(
// CHECK: scf.for
// CHECK-NEXT: memref.load {{.*}} : memref<4xf32>
// CHECK-LABEL: func.func @dynamic_trips(
// CHECK: scf.for
// CHECK-NEXT: memref.load {{.*}} : memref<4xi64>
// CHECK-LABEL: func.func @varying(
// CHECK: scf.for
// CHECK-NEXT: memref.load {{.*}} : memref<256xi64>
// CHECK-LABEL: func.func @call(
// CHECK: scf.for
// CHECK-NEXT: memref.load {{.*}} : memref<4xi64>
func.func @same_type(%s: memref<4xf32>, %out: memref<4x256xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %j = %c0 to %c256 step %c1 {
    %v = memref.load %s[%i] : memref<4xf32>
    memref.store %v, %out[%i, %j] : memref<4x256xf32>
  }
  return
}

func.func @dynamic_trips(%ids: memref<4xi64>, %out: memref<4x256xf32>, %i: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %j = %c0 to %n step %c1 {
    %id = memref.load %ids[%i] : memref<4xi64>
    %f = arith.sitofp %id : i64 to f32
    memref.store %f, %out[%i, %j] : memref<4x256xf32>
  }
  return
}

func.func @varying(%ids: memref<256xi64>, %out: memref<4x256xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %j = %c0 to %c256 step %c1 {
    %id = memref.load %ids[%j] : memref<256xi64>
    %f = arith.sitofp %id : i64 to f32
    memref.store %f, %out[%i, %j] : memref<4x256xf32>
  }
  return
}

func.func private @touch(memref<4xi64>)
func.func @call(%ids: memref<4xi64>, %out: memref<4x256xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %j = %c0 to %c256 step %c1 {
    %id = memref.load %ids[%i] : memref<4xi64>
    %f = arith.sitofp %id : i64 to f32
    memref.store %f, %out[%i, %j] : memref<4x256xf32>
    func.call @touch(%ids) : (memref<4xi64>) -> ()
  }
  return
}
