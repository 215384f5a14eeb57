// RUN: dist-opt %s --split-input-file --dist-contractions-to-runtime | FileCheck %s

// A product into a fresh buffer filled with +0.0 and untouched since sets
// it (dist_rt_gemm_set_f32, BLAS's beta = 0) and the fill goes.
// CHECK-LABEL: func.func @fresh_zeros(
// CHECK-NOT: linalg.fill
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK-NOT: linalg.fill
// CHECK: return
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
func.func @fresh_zeros(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %o: memref<4x16xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<4x16xf32>)
  memref.copy %x, %x : memref<4x8xf32> to memref<4x8xf32>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%acc : memref<4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  memref.copy %acc, %o : memref<4x16xf32> to memref<4x16xf32>
  memref.dealloc %acc : memref<4x16xf32>
  return
}

// -----

// The product accumulates (dist_rt_gemm_f32) and the fill stays when the
// buffer starts at another value, is read in between, is not a fresh
// allocation (an argument may alias anything), or starts at -0.0.
// CHECK-LABEL: func.func @ones(
// CHECK: linalg.fill
// CHECK: call @dist_rt_gemm_f32(
// CHECK-LABEL: func.func @read_between(
// CHECK: linalg.fill
// CHECK: memref.copy
// CHECK: call @dist_rt_gemm_f32(
// CHECK-LABEL: func.func @argument(
// CHECK: linalg.fill
// CHECK: call @dist_rt_gemm_f32(
// CHECK-LABEL: func.func @negative_zero(
// CHECK: linalg.fill
// CHECK: call @dist_rt_gemm_f32(
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
func.func @ones(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %o: memref<4x16xf32>) {
  %one = arith.constant 1.000000e+00 : f32
  %acc = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%one : f32) outs(%acc : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%acc : memref<4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  memref.copy %acc, %o : memref<4x16xf32> to memref<4x16xf32>
  memref.dealloc %acc : memref<4x16xf32>
  return
}

func.func @read_between(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %o: memref<4x16xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<4x16xf32>)
  memref.copy %acc, %o : memref<4x16xf32> to memref<4x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%acc : memref<4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  memref.dealloc %acc : memref<4x16xf32>
  return
}

func.func @argument(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %acc: memref<4x16xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%zero : f32) outs(%acc : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%acc : memref<4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  return
}

func.func @negative_zero(%x: memref<4x8xf32>, %w: memref<8x16xf32>, %o: memref<4x16xf32>) {
  %zero = arith.constant -0.000000e+00 : f32
  %acc = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<4x16xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x8xf32>, memref<8x16xf32>) outs(%acc : memref<4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  memref.copy %acc, %o : memref<4x16xf32> to memref<4x16xf32>
  memref.dealloc %acc : memref<4x16xf32>
  return
}
