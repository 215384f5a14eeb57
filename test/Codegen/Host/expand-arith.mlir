// RUN: dist-opt %s --dist-expand-arith | FileCheck %s

// Integer divisions rounding up or down become plain arithmetic; float
// maxima and minima stay as they are (convert-arith-to-llvm makes them
// LLVM's intrinsics, which the loop vectoriser reduces in vector lanes).
// CHECK-LABEL: func.func @ops(
// CHECK-NOT: arith.ceildivsi
// CHECK-NOT: arith.floordivsi
// CHECK-NOT: arith.ceildivui
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.minimumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.maxnumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.minnumf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: arith.cmpf
// CHECK-NOT: arith.select {{.*}} : f32
func.func @ops(%a: i64, %b: i64, %x: f32, %y: f32)
    -> (i64, i64, i64, f32, f32, f32, f32) {
  %0 = arith.ceildivsi %a, %b : i64
  %1 = arith.floordivsi %a, %b : i64
  %2 = arith.ceildivui %a, %b : i64
  %3 = arith.maximumf %x, %y : f32
  %4 = arith.minimumf %x, %y : f32
  %5 = arith.maxnumf %x, %y : f32
  %6 = arith.minnumf %x, %y : f32
  return %0, %1, %2, %3, %4, %5, %6 : i64, i64, i64, f32, f32, f32, f32
}
