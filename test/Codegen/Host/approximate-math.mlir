// RUN: dist-opt %s --dist-approximate-math | FileCheck %s

// erf, exp and tanh of f32 become upstream's polynomials, which LLVM
// vectorises in the generated loops; log stays libm's (vectorised already,
// and the polynomial is 5% off on subnormals).
// CHECK-LABEL: func.func @unary(
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK: math.log
// CHECK: return
func.func @unary(%x: f32) -> (f32, f32, f32, f32) {
  %e = math.erf %x : f32
  %x2 = math.exp %x : f32
  %t = math.tanh %x : f32
  %l = math.log %x : f32
  return %e, %x2, %t, %l : f32, f32, f32, f32
}
