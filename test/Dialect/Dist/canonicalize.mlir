// RUN: dist-opt %s -split-input-file -canonicalize | FileCheck %s

// Folding of the shape arithmetic exporters write, of constants, and removal
// of no-op ops. Values that depend on a dynamic dimension stay unfolded.

//===----------------------------------------------------------------------===//
// Shape queries
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @shape_of_static
// CHECK-NEXT: %[[SHAPE:.+]] = dist.constant dense<[2, 3, 4]> : tensor<3xi64>
// CHECK-NEXT: return %[[SHAPE]]
func.func @shape_of_static(%x: tensor<2x3x4xf32>) -> tensor<3xi64> {
  %0 = dist.shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// A slice of the shape that avoids the dynamic dimension folds.
// CHECK-LABEL: func.func @shape_slice_of_dynamic
// CHECK-DAG: %[[TAIL:.+]] = dist.constant dense<[3, 4]> : tensor<2xi64>
// CHECK-DAG: %[[MID:.+]] = dist.constant dense<3> : tensor<1xi64>
// CHECK-NOT: dist.shape
// CHECK: return %[[TAIL]], %[[MID]]
func.func @shape_slice_of_dynamic(%x: tensor<?x3x4xf32>) -> (tensor<2xi64>, tensor<1xi64>) {
  %0 = dist.shape %x {start = 1 : i64} : (tensor<?x3x4xf32>) -> tensor<2xi64>
  %1 = dist.shape %x {start = -2 : i64, end = -1 : i64} : (tensor<?x3x4xf32>) -> tensor<1xi64>
  return %0, %1 : tensor<2xi64>, tensor<1xi64>
}

// -----

// CHECK-LABEL: func.func @shape_of_dynamic_not_folded
// CHECK-SAME: (%[[X:.+]]: tensor<?x3xf32>)
// CHECK-NOT: dist.constant
// CHECK: %[[SHAPE:.+]] = dist.shape %[[X]] : (tensor<?x3xf32>) -> tensor<2xi64>
// CHECK: %[[SIZE:.+]] = dist.size %[[X]] : (tensor<?x3xf32>) -> tensor<i64>
// CHECK: return %[[SHAPE]], %[[SIZE]]
func.func @shape_of_dynamic_not_folded(%x: tensor<?x3xf32>) -> (tensor<2xi64>, tensor<i64>) {
  %0 = dist.shape %x : (tensor<?x3xf32>) -> tensor<2xi64>
  %1 = dist.size %x : (tensor<?x3xf32>) -> tensor<i64>
  return %0, %1 : tensor<2xi64>, tensor<i64>
}

// -----

// CHECK-LABEL: func.func @size_of_static
// CHECK-NEXT: %[[SIZE:.+]] = dist.constant dense<24> : tensor<i64>
// CHECK-NEXT: return %[[SIZE]]
func.func @size_of_static(%x: tensor<2x3x4xf32>) -> tensor<i64> {
  %0 = dist.size %x : (tensor<2x3x4xf32>) -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

//===----------------------------------------------------------------------===//
// The chain torch writes for x.view(x.size(0), -1)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @torch_view_static
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[SHAPE:.+]] = dist.constant dense<[2, -1]> : tensor<2xi64>
// CHECK-NEXT: %[[R:.+]] = dist.reshape %[[X]], %[[SHAPE]] : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
// CHECK-NEXT: return %[[R]]
func.func @torch_view_static(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %s = dist.shape %x : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %i0 = dist.constant dense<0> : tensor<i64>
  %d0 = dist.gather %s, %i0 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %ax = dist.constant dense<0> : tensor<1xi64>
  %u = dist.unsqueeze %d0, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %m1 = dist.constant dense<-1> : tensor<1xi64>
  %c = dist.concat %u, %m1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = dist.reshape %x, %c : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  return %r : tensor<2x12xf32>
}

// -----

// With a dynamic batch the chain stays; type inference still knows the
// static part of the result.
// CHECK-LABEL: func.func @torch_view_dynamic
// CHECK-SAME: (%[[X:.+]]: tensor<?x3x4xf32>)
// CHECK: %[[S:.+]] = dist.shape %[[X]]
// CHECK: %[[D0:.+]] = dist.gather %[[S]]
// CHECK: %[[U:.+]] = dist.unsqueeze %[[D0]]
// CHECK: %[[C:.+]] = dist.concat %[[U]]
// CHECK: dist.reshape %[[X]], %[[C]] : (tensor<?x3x4xf32>, tensor<2xi64>) -> tensor<?x12xf32>
func.func @torch_view_dynamic(%x: tensor<?x3x4xf32>) -> tensor<?x12xf32> {
  %s = dist.shape %x : (tensor<?x3x4xf32>) -> tensor<3xi64>
  %i0 = dist.constant dense<0> : tensor<i64>
  %d0 = dist.gather %s, %i0 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %ax = dist.constant dense<0> : tensor<1xi64>
  %u = dist.unsqueeze %d0, %ax : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %m1 = dist.constant dense<-1> : tensor<1xi64>
  %c = dist.concat %u, %m1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = dist.reshape %x, %c : (tensor<?x3x4xf32>, tensor<2xi64>) -> tensor<?x12xf32>
  return %r : tensor<?x12xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Data movement on constants
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @gather_of_constant
// CHECK-DAG: %[[ROWS:.+]] = dist.constant dense<{{\[}}[5, 6], [1, 2]]> : tensor<2x2xi64>
// CHECK-DAG: %[[COL:.+]] = dist.constant dense<[2, 4, 6]> : tensor<3xi64>
// CHECK-DAG: %[[LAST:.+]] = dist.constant dense<30> : tensor<i64>
// CHECK-NOT: dist.gather
// CHECK: return %[[ROWS]], %[[COL]], %[[LAST]]
func.func @gather_of_constant() -> (tensor<2x2xi64>, tensor<3xi64>, tensor<i64>) {
  %m = dist.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi64>
  %idx = dist.constant dense<[-1, 0]> : tensor<2xi64>
  %0 = dist.gather %m, %idx {axis = 0 : i64} : (tensor<3x2xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  %one = dist.constant dense<1> : tensor<i32>
  %1 = dist.gather %m, %one {axis = 1 : i64} : (tensor<3x2xi64>, tensor<i32>) -> tensor<3xi64>
  %v = dist.constant dense<[10, 20, 30]> : tensor<3xi64>
  %last = dist.constant dense<-1> : tensor<i64>
  %2 = dist.gather %v, %last : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  return %0, %1, %2 : tensor<2x2xi64>, tensor<3xi64>, tensor<i64>
}

// -----

// Matrix indices on an inner axis: one row of results per row of data.
// CHECK-LABEL: func.func @gather_matrix_indices
// CHECK-NEXT: %[[G:.+]] = dist.constant dense<{{\[}}{{\[}}[3, 1], [3, 2]], {{\[}}[6, 4], [6, 5]]]> : tensor<2x2x2xi64>
// CHECK-NEXT: return %[[G]]
func.func @gather_matrix_indices() -> tensor<2x2x2xi64> {
  %m = dist.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %i = dist.constant dense<[[2, 0], [-1, 1]]> : tensor<2x2xi64>
  %0 = dist.gather %m, %i {axis = 1 : i64} : (tensor<2x3xi64>, tensor<2x2xi64>) -> tensor<2x2x2xi64>
  return %0 : tensor<2x2x2xi64>
}

// -----

// CHECK-LABEL: func.func @concat_of_constants
// CHECK-DAG: %[[FLAT:.+]] = dist.constant dense<[1, 784, -1]> : tensor<3xi64>
// CHECK-DAG: %[[COLS:.+]] = dist.constant dense<{{\[}}[1, 2, 5], [3, 4, 6]]> : tensor<2x3xi64>
// CHECK-NOT: dist.concat
// CHECK: return %[[FLAT]], %[[COLS]]
func.func @concat_of_constants() -> (tensor<3xi64>, tensor<2x3xi64>) {
  %a = dist.constant dense<[1, 784]> : tensor<2xi64>
  %b = dist.constant dense<-1> : tensor<1xi64>
  %0 = dist.concat %a, %b {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %m = dist.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %c = dist.constant dense<[[5], [6]]> : tensor<2x1xi64>
  %1 = dist.concat %m, %c {axis = -1 : i64} : (tensor<2x2xi64>, tensor<2x1xi64>) -> tensor<2x3xi64>
  return %0, %1 : tensor<3xi64>, tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func.func @reshape_like_of_constants
// CHECK-DAG: %[[UNSQ:.+]] = dist.constant dense<{{\[}}[7, 8]]> : tensor<1x2xi64>
// CHECK-DAG: %[[SQ:.+]] = dist.constant dense<[7, 8]> : tensor<2xi64>
// CHECK-DAG: %[[RESHAPED:.+]] = dist.constant dense<{{\[}}[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
// CHECK-DAG: %[[FLAT:.+]] = dist.constant dense<{{\[}}[1, 2, 3, 4, 5, 6]]> : tensor<1x6xi64>
// CHECK-DAG: %[[ALL:.+]] = dist.constant dense<[7, 8, 9]> : tensor<3xi64>
// CHECK-NOT: dist.unsqueeze
// CHECK-NOT: dist.squeeze
// CHECK-NOT: dist.reshape
// CHECK-NOT: dist.flatten
// CHECK: return %[[UNSQ]], %[[SQ]], %[[RESHAPED]], %[[FLAT]], %[[ALL]]
func.func @reshape_like_of_constants() -> (tensor<1x2xi64>, tensor<2xi64>, tensor<2x3xi64>, tensor<1x6xi64>, tensor<3xi64>) {
  %v = dist.constant dense<[7, 8]> : tensor<2xi64>
  %ax = dist.constant dense<0> : tensor<1xi64>
  %0 = dist.unsqueeze %v, %ax : (tensor<2xi64>, tensor<1xi64>) -> tensor<1x2xi64>
  %m = dist.constant dense<[[7, 8]]> : tensor<1x2xi64>
  %1 = dist.squeeze %m axes %ax : (tensor<1x2xi64>, tensor<1xi64>) -> tensor<2xi64>
  %flat = dist.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi64>
  %shape = dist.constant dense<[2, -1]> : tensor<2xi64>
  %2 = dist.reshape %flat, %shape : (tensor<6xi64>, tensor<2xi64>) -> tensor<2x3xi64>
  %3 = dist.flatten %2 {axis = 0 : i64} : (tensor<2x3xi64>) -> tensor<1x6xi64>
  // Without axes every size-1 dimension goes.
  %c = dist.constant dense<[[[7], [8], [9]]]> : tensor<1x3x1xi64>
  %4 = dist.squeeze %c : (tensor<1x3x1xi64>) -> tensor<3xi64>
  return %0, %1, %2, %3, %4 : tensor<1x2xi64>, tensor<2xi64>, tensor<2x3xi64>, tensor<1x6xi64>, tensor<3xi64>
}

// -----

// CHECK-LABEL: func.func @transpose_of_constant
// CHECK-DAG: %[[T:.+]] = dist.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>
// CHECK-DAG: %[[P:.+]] = dist.constant dense<{{\[}}{{\[}}[1.000000e+00, 3.000000e+00]], {{\[}}[2.000000e+00, 4.000000e+00]]]> : tensor<2x1x2xf32>
// CHECK-DAG: %[[SPLAT:.+]] = dist.constant dense<5> : tensor<4x3xi32>
// CHECK-NOT: dist.transpose
// CHECK: return %[[T]], %[[P]], %[[SPLAT]]
func.func @transpose_of_constant() -> (tensor<3x2xi32>, tensor<2x1x2xf32>, tensor<4x3xi32>) {
  %m = dist.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %0 = dist.transpose %m : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %c = dist.constant dense<[[[1.0, 2.0]], [[3.0, 4.0]]]> : tensor<2x1x2xf32>
  %1 = dist.transpose %c {perm = array<i64: 2, 1, 0>} : (tensor<2x1x2xf32>) -> tensor<2x1x2xf32>
  %s = dist.constant dense<5> : tensor<3x4xi32>
  %2 = dist.transpose %s {perm = array<i64: 1, 0>} : (tensor<3x4xi32>) -> tensor<4x3xi32>
  return %0, %1, %2 : tensor<3x2xi32>, tensor<2x1x2xf32>, tensor<4x3xi32>
}

// -----

// CHECK-LABEL: func.func @slice_of_constant
// CHECK-DAG: %[[MID:.+]] = dist.constant dense<[2, 3, 4]> : tensor<3xi64>
// CHECK-DAG: %[[CLAMPED:.+]] = dist.constant dense<[7, 8, 9]> : tensor<3xi64>
// CHECK-DAG: %[[REV:.+]] = dist.constant dense<[9, 6, 3, 0]> : tensor<4xi64>
// CHECK-DAG: %[[REVALL:.+]] = dist.constant dense<[9, 8, 7, 6, 5, 4, 3, 2, 1, 0]> : tensor<10xi64>
// CHECK-DAG: %[[COLS:.+]] = dist.constant dense<{{\[}}[2, 0], [5, 3]]> : tensor<2x2xi64>
// CHECK-NOT: dist.slice
// CHECK: return %[[MID]], %[[CLAMPED]], %[[REV]], %[[REVALL]], %[[COLS]]
func.func @slice_of_constant() -> (tensor<3xi64>, tensor<3xi64>, tensor<4xi64>, tensor<10xi64>, tensor<2x2xi64>) {
  %d = dist.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]> : tensor<10xi64>
  %s2 = dist.constant dense<2> : tensor<1xi64>
  %e5 = dist.constant dense<5> : tensor<1xi64>
  %0 = dist.slice %d, %s2, %e5 : (tensor<10xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  // The end is clamped to the dimension (torch writes INT64_MAX).
  %sm3 = dist.constant dense<-3> : tensor<1xi64>
  %big = dist.constant dense<9223372036854775807> : tensor<1xi64>
  %1 = dist.slice %d, %sm3, %big : (tensor<10xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  // Negative step from the last element; the end is clamped below the start.
  %ax = dist.constant dense<0> : tensor<1xi64>
  %sm1 = dist.constant dense<-1> : tensor<1xi64>
  %em100 = dist.constant dense<-100> : tensor<1xi64>
  %step3 = dist.constant dense<-3> : tensor<1xi64>
  %2 = dist.slice %d, %sm1, %em100 axes %ax steps %step3 : (tensor<10xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  // The idiom for reversing a dimension, with an out-of-range start.
  %small = dist.constant dense<-9223372036854775808> : tensor<1xi64>
  %step1 = dist.constant dense<-1> : tensor<1xi64>
  %3 = dist.slice %d, %big, %small axes %ax steps %step1 : (tensor<10xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<10xi64>
  // A 2-D slice along the last axis, with i32 bounds.
  %m = dist.constant dense<[[0, 1, 2], [3, 4, 5]]> : tensor<2x3xi64>
  %ms = dist.constant dense<2> : tensor<1xi32>
  %me = dist.constant dense<-5> : tensor<1xi32>
  %max = dist.constant dense<-1> : tensor<1xi32>
  %mstep = dist.constant dense<-2> : tensor<1xi32>
  %4 = dist.slice %m, %ms, %me axes %max steps %mstep : (tensor<2x3xi64>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<2x2xi64>
  return %0, %1, %2, %3, %4 : tensor<3xi64>, tensor<3xi64>, tensor<4xi64>, tensor<10xi64>, tensor<2x2xi64>
}

// -----

//===----------------------------------------------------------------------===//
// Casts
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @cast_constants
// CHECK-DAG: %[[I2F:.+]] = dist.constant dense<[-3.000000e+00, 0.000000e+00, 2.550000e+02]> : tensor<3xf32>
// CHECK-DAG: %[[U2F:.+]] = dist.constant dense<[2.550000e+02, 1.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[F2I:.+]] = dist.constant dense<[-2, 2, 0, -3]> : tensor<4xi32>
// CHECK-DAG: %[[I2B:.+]] = dist.constant dense<[true, false, true]> : tensor<3xi1>
// CHECK-DAG: %[[F2B:.+]] = dist.constant dense<[false, true, true]> : tensor<3xi1>
// CHECK-DAG: %[[B2I:.+]] = dist.constant dense<[1, 0]> : tensor<2xi64>
// CHECK-DAG: %[[NARROW:.+]] = dist.constant dense<[-1, 44]> : tensor<2xi8>
// CHECK-DAG: %[[HALF:.+]] = dist.constant dense<[1.000000e+00, 6.550400e+04]> : tensor<2xf16>
// CHECK-NOT: dist.cast
// CHECK: return %[[I2F]], %[[U2F]], %[[F2I]], %[[I2B]], %[[F2B]], %[[B2I]], %[[NARROW]], %[[HALF]]
func.func @cast_constants() -> (tensor<3xf32>, tensor<2xf32>, tensor<4xi32>, tensor<3xi1>, tensor<3xi1>, tensor<2xi64>, tensor<2xi8>, tensor<2xf16>) {
  %i = dist.constant dense<[-3, 0, 255]> : tensor<3xi64>
  %0 = dist.cast %i {to = f32} : (tensor<3xi64>) -> tensor<3xf32>
  %u = dist.constant dense<[255, 1]> : tensor<2xui8>
  %1 = dist.cast %u {to = f32} : (tensor<2xui8>) -> tensor<2xf32>
  // Float to integer truncates toward zero.
  %f = dist.constant dense<[-2.7, 2.7, -0.5, -3.0]> : tensor<4xf32>
  %2 = dist.cast %f {to = i32} : (tensor<4xf32>) -> tensor<4xi32>
  // Anything to bool is x != 0.
  %3 = dist.cast %i {to = i1} : (tensor<3xi64>) -> tensor<3xi1>
  %g = dist.constant dense<[0.0, 0.5, -2.0]> : tensor<3xf32>
  %4 = dist.cast %g {to = i1} : (tensor<3xf32>) -> tensor<3xi1>
  %b = dist.constant dense<[true, false]> : tensor<2xi1>
  %5 = dist.cast %b {to = i64} : (tensor<2xi1>) -> tensor<2xi64>
  // Narrowing integers wraps: 255 -> -1, 300 -> 44.
  %w = dist.constant dense<[255, 300]> : tensor<2xi32>
  %6 = dist.cast %w {to = i8} : (tensor<2xi32>) -> tensor<2xi8>
  %d = dist.constant dense<[1.0, 65504.0]> : tensor<2xf64>
  %7 = dist.cast %d {to = f16} : (tensor<2xf64>) -> tensor<2xf16>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<3xf32>, tensor<2xf32>, tensor<4xi32>, tensor<3xi1>, tensor<3xi1>, tensor<2xi64>, tensor<2xi8>, tensor<2xf16>
}

// -----

// A NaN or an out-of-range value has no integer: the cast stays.
// CHECK-LABEL: func.func @cast_not_folded
// CHECK: dist.cast %{{.+}} {to = i32} : (tensor<2xf32>) -> tensor<2xi32>
// CHECK: dist.cast %{{.+}} {to = i8} : (tensor<1xf32>) -> tensor<1xi8>
func.func @cast_not_folded() -> (tensor<2xi32>, tensor<1xi8>) {
  %f = dist.constant dense<[1.0, 0x7FC00000]> : tensor<2xf32>
  %0 = dist.cast %f {to = i32} : (tensor<2xf32>) -> tensor<2xi32>
  %g = dist.constant dense<300.0> : tensor<1xf32>
  %1 = dist.cast %g {to = i8} : (tensor<1xf32>) -> tensor<1xi8>
  return %0, %1 : tensor<2xi32>, tensor<1xi8>
}

// -----

// CHECK-LABEL: func.func @noop_cast
// CHECK-SAME: (%[[X:.+]]: tensor<?x4xf32>)
// CHECK-NOT: dist.cast
// CHECK: return %[[X]]
func.func @noop_cast(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = dist.cast %x {to = f32} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @cast_like_to_cast
// CHECK-SAME: (%[[X:.+]]: tensor<?x4xf32>, %[[T:.+]]: tensor<1xf16>)
// CHECK-NEXT: %[[C:.+]] = dist.cast %[[X]] {to = f16} : (tensor<?x4xf32>) -> tensor<?x4xf16>
// CHECK-NEXT: return %[[C]]
func.func @cast_like_to_cast(%x: tensor<?x4xf32>, %t: tensor<1xf16>) -> tensor<?x4xf16> {
  %0 = dist.cast_like %x, %t : (tensor<?x4xf32>, tensor<1xf16>) -> tensor<?x4xf16>
  return %0 : tensor<?x4xf16>
}

// -----

// cast_like to the input's own element type becomes a no-op cast, which folds.
// CHECK-LABEL: func.func @cast_like_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<3xi64>, %[[T:.+]]: tensor<i64>)
// CHECK-NOT: dist.cast
// CHECK: return %[[X]]
func.func @cast_like_same_type(%x: tensor<3xi64>, %t: tensor<i64>) -> tensor<3xi64> {
  %0 = dist.cast_like %x, %t : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// CHECK-LABEL: func.func @cast_like_of_constant
// CHECK-NEXT: %[[C:.+]] = dist.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @cast_like_of_constant(%t: tensor<f32>) -> tensor<2xf32> {
  %i = dist.constant dense<[1, 2]> : tensor<2xi64>
  %0 = dist.cast_like %i, %t : (tensor<2xi64>, tensor<f32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @arith_int
// CHECK-DAG: %[[ADD:.+]] = dist.constant dense<[9, -5, -11]> : tensor<3xi64>
// CHECK-DAG: %[[SUB:.+]] = dist.constant dense<[5, -9, -3]> : tensor<3xi64>
// CHECK-DAG: %[[MUL:.+]] = dist.constant dense<[14, -14, 28]> : tensor<3xi64>
// CHECK-DAG: %[[SCALAR:.+]] = dist.constant dense<[9, -5, -5]> : tensor<3xi64>
// CHECK-DAG: %[[BCAST:.+]] = dist.constant dense<{{\[}}[11, 12], [21, 22]]> : tensor<2x2xi64>
// CHECK-NOT: dist.add
// CHECK-NOT: dist.sub
// CHECK-NOT: dist.mul
// CHECK: return %[[ADD]], %[[SUB]], %[[MUL]], %[[SCALAR]], %[[BCAST]]
func.func @arith_int() -> (tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<2x2xi64>) {
  %a = dist.constant dense<[7, -7, -7]> : tensor<3xi64>
  %b = dist.constant dense<[2, 2, -4]> : tensor<3xi64>
  %0 = dist.add %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %1 = dist.sub %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %2 = dist.mul %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %two = dist.constant dense<2> : tensor<i64>
  %3 = dist.add %a, %two : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %col = dist.constant dense<[[10], [20]]> : tensor<2x1xi64>
  %row = dist.constant dense<[1, 2]> : tensor<2xi64>
  %4 = dist.add %col, %row : (tensor<2x1xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  return %0, %1, %2, %3, %4 : tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<2x2xi64>
}

// -----

// CHECK-LABEL: func.func @arith_float
// CHECK-DAG: %[[ADD:.+]] = dist.constant dense<[1.750000e+00, -5.000000e-01]> : tensor<2xf32>
// CHECK-DAG: %[[SUB:.+]] = dist.constant dense<[1.250000e+00, -3.500000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[MUL:.+]] = dist.constant dense<[3.750000e-01, -3.000000e+00]> : tensor<2xf32>
// CHECK-NOT: dist.add
// CHECK-NOT: dist.sub
// CHECK-NOT: dist.mul
// CHECK: return %[[ADD]], %[[SUB]], %[[MUL]]
func.func @arith_float() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %a = dist.constant dense<[1.5, -2.0]> : tensor<2xf32>
  %b = dist.constant dense<[0.25, 1.5]> : tensor<2xf32>
  %0 = dist.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = dist.sub %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = dist.mul %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// Integer division truncates toward zero; float division by zero is infinite.
// CHECK-LABEL: func.func @div
// CHECK-DAG: %[[Q:.+]] = dist.constant dense<[3, -3, -3, 1, 0]> : tensor<5xi32>
// CHECK-DAG: %[[UQ:.+]] = dist.constant dense<[125, 3]> : tensor<2xui8>
// CHECK-DAG: %[[FQ:.+]] = dist.constant dense<[-3.500000e+00, 0x7F800000]> : tensor<2xf32>
// CHECK-NOT: dist.div
// CHECK: return %[[Q]], %[[UQ]], %[[FQ]]
func.func @div() -> (tensor<5xi32>, tensor<2xui8>, tensor<2xf32>) {
  %a = dist.constant dense<[7, -7, 7, -7, 3]> : tensor<5xi32>
  %b = dist.constant dense<[2, 2, -2, -4, 4]> : tensor<5xi32>
  %0 = dist.div %a, %b : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  %u = dist.constant dense<[250, 9]> : tensor<2xui8>
  %v = dist.constant dense<[2, 3]> : tensor<2xui8>
  %1 = dist.div %u, %v : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  %f = dist.constant dense<[7.0, 1.0]> : tensor<2xf32>
  %g = dist.constant dense<[-2.0, 0.0]> : tensor<2xf32>
  %2 = dist.div %f, %g : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0, %1, %2 : tensor<5xi32>, tensor<2xui8>, tensor<2xf32>
}

// -----

// Integer division by zero has no value: the division stays.
// CHECK-LABEL: func.func @div_by_zero_not_folded
// CHECK: %[[Q:.+]] = dist.div %{{.+}}, %{{.+}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
// CHECK: %[[M:.+]] = dist.mod %{{.+}}, %{{.+}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
// CHECK: return %[[Q]], %[[M]]
func.func @div_by_zero_not_folded() -> (tensor<2xi64>, tensor<2xi64>) {
  %a = dist.constant dense<[4, 5]> : tensor<2xi64>
  %b = dist.constant dense<[2, 0]> : tensor<2xi64>
  %0 = dist.div %a, %b : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %1 = dist.mod %a, %b : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %0, %1 : tensor<2xi64>, tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @mod
// CHECK-DAG: %[[MOD:.+]] = dist.constant dense<[1, 2, -2, -1, 0]> : tensor<5xi64>
// CHECK-DAG: %[[FMOD:.+]] = dist.constant dense<[1, -1, 1, -1, 0]> : tensor<5xi64>
// CHECK-DAG: %[[FFMOD:.+]] = dist.constant dense<[1.500000e+00, -1.500000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[UMOD:.+]] = dist.constant dense<[1, 4]> : tensor<2xui8>
// CHECK-NOT: dist.mod
// CHECK: return %[[MOD]], %[[FMOD]], %[[FFMOD]], %[[UMOD]]
func.func @mod() -> (tensor<5xi64>, tensor<5xi64>, tensor<2xf32>, tensor<2xui8>) {
  %a = dist.constant dense<[7, -7, 7, -7, 6]> : tensor<5xi64>
  %b = dist.constant dense<[3, 3, -3, -3, 3]> : tensor<5xi64>
  // Without fmod the result has the divisor's sign.
  %0 = dist.mod %a, %b : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  // With fmod it has the dividend's sign.
  %1 = dist.mod %a, %b {fmod = 1 : i64} : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %f = dist.constant dense<[7.5, -7.5]> : tensor<2xf32>
  %g = dist.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %2 = dist.mod %f, %g {fmod = 1 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %u = dist.constant dense<[250, 9]> : tensor<2xui8>
  %v = dist.constant dense<[3, 5]> : tensor<2xui8>
  %3 = dist.mod %u, %v : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  return %0, %1, %2, %3 : tensor<5xi64>, tensor<5xi64>, tensor<2xf32>, tensor<2xui8>
}

// -----

// CHECK-LABEL: func.func @pow
// CHECK-DAG: %[[P:.+]] = dist.constant dense<[8.000000e+00, 2.500000e-01, 3.000000e+00]> : tensor<3xf32>
// CHECK-DAG: %[[PI:.+]] = dist.constant dense<[1.000000e+00, 9.000000e+00]> : tensor<2xf32>
// CHECK-NOT: dist.pow
// CHECK: return %[[P]], %[[PI]]
func.func @pow() -> (tensor<3xf32>, tensor<2xf32>) {
  %b = dist.constant dense<[2.0, 2.0, 9.0]> : tensor<3xf32>
  %e = dist.constant dense<[3.0, -2.0, 0.5]> : tensor<3xf32>
  %0 = dist.pow %b, %e : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %c = dist.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %two = dist.constant dense<2> : tensor<i64>
  %1 = dist.pow %c, %two : (tensor<2xf32>, tensor<i64>) -> tensor<2xf32>
  return %0, %1 : tensor<3xf32>, tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @neg_abs
// CHECK-DAG: %[[NEG:.+]] = dist.constant dense<[-3, 0, 4]> : tensor<3xi32>
// CHECK-DAG: %[[ABS:.+]] = dist.constant dense<[3, 0, 4]> : tensor<3xi32>
// CHECK-DAG: %[[FNEG:.+]] = dist.constant dense<[-1.500000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[FABS:.+]] = dist.constant dense<[1.500000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[UABS:.+]] = dist.constant dense<[200, 1]> : tensor<2xui8>
// CHECK-NOT: dist.neg
// CHECK-NOT: dist.abs
// CHECK: return %[[NEG]], %[[ABS]], %[[FNEG]], %[[FABS]], %[[UABS]]
func.func @neg_abs() -> (tensor<3xi32>, tensor<3xi32>, tensor<2xf32>, tensor<2xf32>, tensor<2xui8>) {
  %i = dist.constant dense<[3, 0, -4]> : tensor<3xi32>
  %0 = dist.neg %i : (tensor<3xi32>) -> tensor<3xi32>
  %1 = dist.abs %i : (tensor<3xi32>) -> tensor<3xi32>
  %f = dist.constant dense<[1.5, -2.0]> : tensor<2xf32>
  %2 = dist.neg %f : (tensor<2xf32>) -> tensor<2xf32>
  %3 = dist.abs %f : (tensor<2xf32>) -> tensor<2xf32>
  %u = dist.constant dense<[200, 1]> : tensor<2xui8>
  %4 = dist.abs %u : (tensor<2xui8>) -> tensor<2xui8>
  return %0, %1, %2, %3, %4 : tensor<3xi32>, tensor<3xi32>, tensor<2xf32>, tensor<2xf32>, tensor<2xui8>
}

// -----

//===----------------------------------------------------------------------===//
// Comparisons and logic
//===----------------------------------------------------------------------===//

// Every comparison with NaN is false.
// CHECK-LABEL: func.func @compare
// CHECK-DAG: %[[EQ:.+]] = dist.constant dense<[false, true, false, false]> : tensor<4xi1>
// CHECK-DAG: %[[LT:.+]] = dist.constant dense<[true, false, false, false]> : tensor<4xi1>
// CHECK-DAG: %[[GT:.+]] = dist.constant dense<[false, false, false, true]> : tensor<4xi1>
// CHECK-DAG: %[[LE:.+]] = dist.constant dense<[true, true, false, false]> : tensor<4xi1>
// CHECK-DAG: %[[GE:.+]] = dist.constant dense<[false, true, false, true]> : tensor<4xi1>
// CHECK-DAG: %[[ILT:.+]] = dist.constant dense<[true, false]> : tensor<2xi1>
// CHECK-DAG: %[[ULT:.+]] = dist.constant dense<[false, true]> : tensor<2xi1>
// CHECK-NOT: dist.equal
// CHECK-NOT: dist.less
// CHECK-NOT: dist.greater
// CHECK: return %[[EQ]], %[[LT]], %[[GT]], %[[LE]], %[[GE]], %[[ILT]], %[[ULT]]
func.func @compare() -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<2xi1>, tensor<2xi1>) {
  %a = dist.constant dense<[1.0, 2.0, 0x7FC00000, 3.0]> : tensor<4xf32>
  %b = dist.constant dense<[2.0, 2.0, 0x7FC00000, 2.0]> : tensor<4xf32>
  %0 = dist.equal %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = dist.less %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %2 = dist.greater %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %3 = dist.less_or_equal %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %4 = dist.greater_or_equal %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  // Signed and unsigned integers compare by their own order.
  %i = dist.constant dense<[-1, 5]> : tensor<2xi8>
  %j = dist.constant dense<[1, 3]> : tensor<2xi8>
  %5 = dist.less %i, %j : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi1>
  %u = dist.constant dense<[255, 1]> : tensor<2xui8>
  %v = dist.constant dense<[1, 3]> : tensor<2xui8>
  %6 = dist.less %u, %v : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xi1>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<2xi1>, tensor<2xi1>
}

// -----

// CHECK-LABEL: func.func @logic
// CHECK-DAG: %[[AND:.+]] = dist.constant dense<[true, false, false, false]> : tensor<4xi1>
// CHECK-DAG: %[[OR:.+]] = dist.constant dense<[true, true, true, false]> : tensor<4xi1>
// CHECK-DAG: %[[XOR:.+]] = dist.constant dense<[false, true, true, false]> : tensor<4xi1>
// CHECK-DAG: %[[EQB:.+]] = dist.constant dense<[true, false, false, true]> : tensor<4xi1>
// CHECK-NOT: dist.and
// CHECK-NOT: dist.or
// CHECK-NOT: dist.xor
// CHECK: return %[[AND]], %[[OR]], %[[XOR]], %[[EQB]]
func.func @logic() -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %p = dist.constant dense<[true, true, false, false]> : tensor<4xi1>
  %q = dist.constant dense<[true, false, true, false]> : tensor<4xi1>
  %0 = dist.and %p, %q : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %1 = dist.or %p, %q : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %2 = dist.xor %p, %q : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %3 = dist.equal %p, %q : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0, %1, %2, %3 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

//===----------------------------------------------------------------------===//
// Variadic ops and where
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @variadic
// CHECK-DAG: %[[MAX:.+]] = dist.constant dense<[3, 5, 4]> : tensor<3xi64>
// CHECK-DAG: %[[MIN:.+]] = dist.constant dense<[-1, 1, 0]> : tensor<3xi64>
// CHECK-DAG: %[[SUM:.+]] = dist.constant dense<[3, 7, 5]> : tensor<3xi64>
// CHECK-DAG: %[[FMAX:.+]] = dist.constant dense<[2.500000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK-NOT: dist.max
// CHECK-NOT: dist.min
// CHECK-NOT: dist.sum
// CHECK: return %[[MAX]], %[[MIN]], %[[SUM]], %[[FMAX]]
func.func @variadic() -> (tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<2xf32>) {
  %a = dist.constant dense<[3, 1, 0]> : tensor<3xi64>
  %b = dist.constant dense<[-1, 5, 4]> : tensor<3xi64>
  %c = dist.constant dense<1> : tensor<1xi64>
  %0 = dist.max %a, %b, %c : (tensor<3xi64>, tensor<3xi64>, tensor<1xi64>) -> tensor<3xi64>
  %1 = dist.min %a, %b, %c : (tensor<3xi64>, tensor<3xi64>, tensor<1xi64>) -> tensor<3xi64>
  %2 = dist.sum %a, %b, %c : (tensor<3xi64>, tensor<3xi64>, tensor<1xi64>) -> tensor<3xi64>
  %f = dist.constant dense<[2.5, -1.0]> : tensor<2xf32>
  %g = dist.constant dense<1.0> : tensor<f32>
  %3 = dist.max %f, %g : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  return %0, %1, %2, %3 : tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<2xf32>
}

// -----

// Max and min propagate NaN whatever the operand order.
// CHECK-LABEL: func.func @max_min_nan
// CHECK-DAG: %[[NAN:.+]] = dist.constant dense<0x7FC00000> : tensor<2xf32>
// CHECK-NOT: dist.max
// CHECK-NOT: dist.min
// CHECK: return %[[NAN]], %[[NAN]]
func.func @max_min_nan() -> (tensor<2xf32>, tensor<2xf32>) {
  %a = dist.constant dense<[0x7FC00000, 1.0]> : tensor<2xf32>
  %b = dist.constant dense<[1.0, 0x7FC00000]> : tensor<2xf32>
  %0 = dist.max %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = dist.min %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}

// -----

// A single operand of the result's type is returned as is.
// CHECK-LABEL: func.func @variadic_single
// CHECK-SAME: (%[[X:.+]]: tensor<?x3xf32>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]]
func.func @variadic_single(%x: tensor<?x3xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>) {
  %0 = dist.max %x : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %1 = dist.min %x : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %2 = dist.sum %x : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %3 = dist.mean %x : (tensor<?x3xf32>) -> tensor<?x3xf32>
  return %0, %1, %2, %3 : tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>
}

// -----

// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<2x3xf32>)
// CHECK-DAG: %[[SEL:.+]] = dist.constant dense<{{\[}}[1, 10, 1], [1, 10, 1]]> : tensor<2x3xi64>
// CHECK-NOT: dist.where
// CHECK: return %[[X]], %[[Y]], %[[SEL]]
func.func @where(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi64>) {
  %t = dist.constant dense<true> : tensor<i1>
  %f = dist.constant dense<false> : tensor<1xi1>
  %0 = dist.where %t, %x, %y : (tensor<i1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = dist.where %f, %x, %y : (tensor<1xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = dist.constant dense<[true, false, true]> : tensor<3xi1>
  %one = dist.constant dense<1> : tensor<i64>
  %ten = dist.constant dense<10> : tensor<2x1xi64>
  %2 = dist.where %c, %one, %ten : (tensor<3xi1>, tensor<i64>, tensor<2x1xi64>) -> tensor<2x3xi64>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi64>
}

// -----

// A constant condition whose chosen branch needs broadcasting stays a where.
// CHECK-LABEL: func.func @where_broadcast_not_folded
// CHECK-SAME: (%[[X:.+]]: tensor<3xf32>, %[[Y:.+]]: tensor<2x3xf32>)
// CHECK: %[[W:.+]] = dist.where %{{.+}}, %[[X]], %[[Y]]
// CHECK: return %[[W]]
func.func @where_broadcast_not_folded(%x: tensor<3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %t = dist.constant dense<true> : tensor<i1>
  %0 = dist.where %t, %x, %y : (tensor<i1>, tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @range
// CHECK-DAG: %[[R:.+]] = dist.constant dense<[10, 7, 4, 1]> : tensor<4xi64>
// CHECK-DAG: %[[F:.+]] = dist.constant dense<[0.000000e+00, 2.500000e-01, 5.000000e-01, 7.500000e-01]> : tensor<4xf32>
// CHECK-DAG: %[[EMPTY:.+]] = dist.constant dense<> : tensor<0xi32>
// CHECK-NOT: dist.range
// CHECK: return %[[R]], %[[F]], %[[EMPTY]]
func.func @range() -> (tensor<4xi64>, tensor<4xf32>, tensor<0xi32>) {
  %s = dist.constant dense<10> : tensor<i64>
  %l = dist.constant dense<0> : tensor<i64>
  %d = dist.constant dense<-3> : tensor<i64>
  %0 = dist.range %s, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  %fs = dist.constant dense<0.0> : tensor<f32>
  %fl = dist.constant dense<1.0> : tensor<f32>
  %fd = dist.constant dense<0.25> : tensor<f32>
  %1 = dist.range %fs, %fl, %fd : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  %is = dist.constant dense<5> : tensor<i32>
  %il = dist.constant dense<1> : tensor<i32>
  %id = dist.constant dense<1> : tensor<i32>
  %2 = dist.range %is, %il, %id : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<0xi32>
  return %0, %1, %2 : tensor<4xi64>, tensor<4xf32>, tensor<0xi32>
}

// -----

// CHECK-LABEL: func.func @constant_of_shape
// CHECK-DAG: %[[ZEROS:.+]] = dist.constant dense<0.000000e+00> : tensor<2x3xf32>
// CHECK-DAG: %[[SEVENS:.+]] = dist.constant dense<7> : tensor<4xi64>
// CHECK-DAG: %[[SCALAR:.+]] = dist.constant dense<true> : tensor<i1>
// CHECK-NOT: dist.constant_of_shape
// CHECK: return %[[ZEROS]], %[[SEVENS]], %[[SCALAR]]
func.func @constant_of_shape() -> (tensor<2x3xf32>, tensor<4xi64>, tensor<i1>) {
  %s = dist.constant dense<[2, 3]> : tensor<2xi64>
  %0 = dist.constant_of_shape %s : (tensor<2xi64>) -> tensor<2x3xf32>
  %n = dist.constant dense<4> : tensor<1xi64>
  %1 = dist.constant_of_shape %n {value = dense<7> : tensor<1xi64>} : (tensor<1xi64>) -> tensor<4xi64>
  %e = dist.constant dense<> : tensor<0xi64>
  %2 = dist.constant_of_shape %e {value = dense<true> : tensor<1xi1>} : (tensor<0xi64>) -> tensor<i1>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<4xi64>, tensor<i1>
}

// -----

// The shape of the result of constant_of_shape may depend on a dynamic dim.
// CHECK-LABEL: func.func @zeros_like_dynamic
// CHECK-SAME: (%[[X:.+]]: tensor<?x3xf32>)
// CHECK: %[[S:.+]] = dist.shape %[[X]]
// CHECK: %[[Z:.+]] = dist.constant_of_shape %[[S]] : (tensor<2xi64>) -> tensor<?x3xf32>
// CHECK: return %[[Z]]
func.func @zeros_like_dynamic(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %s = dist.shape %x : (tensor<?x3xf32>) -> tensor<2xi64>
  %0 = dist.constant_of_shape %s : (tensor<2xi64>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// No-op removal
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @noops
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>, %[[D:.+]]: tensor<?x3xf32>)
// CHECK-NOT: dist.
// CHECK: return %[[X]], %[[X]], %[[X]], %[[D]], %[[X]], %[[X]]
func.func @noops(%x: tensor<2x3xf32>, %d: tensor<?x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<?x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = dist.identity %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = dist.constant dense<[2, 3]> : tensor<2xi64>
  %1 = dist.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %2 = dist.transpose %x {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = dist.identity %d : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %4 = dist.concat %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = dist.cast %x {to = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<?x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// A reshape of a dynamic tensor to its own type cannot be removed: the new
// shape may differ at run time.
// CHECK-LABEL: func.func @dynamic_reshape_kept
// CHECK-SAME: (%[[X:.+]]: tensor<?x?xf32>, %[[S:.+]]: tensor<2xi64>)
// CHECK: %[[R:.+]] = dist.reshape %[[X]], %[[S]] : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
// CHECK: %[[T:.+]] = dist.transpose %[[R]] : (tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK: return %[[T]]
func.func @dynamic_reshape_kept(%x: tensor<?x?xf32>, %s: tensor<2xi64>) -> tensor<?x?xf32> {
  %0 = dist.reshape %x, %s : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %1 = dist.transpose %0 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}
