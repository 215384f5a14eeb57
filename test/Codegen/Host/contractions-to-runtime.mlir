// RUN: dist-opt %s --split-input-file --dist-contractions-to-runtime | FileCheck %s
// RUN: dist-opt %s --split-input-file -p 'builtin.module(dist-contractions-to-runtime{target=cuda})' | FileCheck %s --check-prefix=CUDA
// RUN: dist-opt %s --split-input-file -p 'builtin.module(dist-contractions-to-runtime{target=cuda precision=tf32})' | FileCheck %s --check-prefix=TF32
// RUN: dist-opt %s --split-input-file -p 'builtin.module(dist-contractions-to-runtime{target=cuda precision=bf16})' | FileCheck %s --check-prefix=BF16
// RUN: not dist-opt %s --split-input-file -p 'builtin.module(dist-contractions-to-runtime{target=tpu})' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: dist-contractions-to-runtime: unknown target 'tpu' (host or cuda)

// A product into a fresh buffer filled with +0.0 and untouched since sets
// it (dist_rt_gemm_set_f32, BLAS's beta = 0) and the fill goes.
// CHECK-LABEL: func.func @fresh_zeros(
// CHECK-NOT: linalg.fill
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK-NOT: linalg.fill
// CHECK: return
// For the CUDA target (target=cuda), the same call of the device library.
// CUDA-LABEL: func.func @fresh_zeros(
// CUDA-NOT: linalg.fill
// CUDA: call @dist_rt_cuda_gemm_set_f32(
// CUDA-NOT: linalg.fill
// CUDA: return
// With --precision, the f32 products' callee rounds their operands.
// TF32-LABEL: func.func @fresh_zeros(
// TF32: call @dist_rt_cuda_gemm_set_f32_tf32(
// BF16-LABEL: func.func @fresh_zeros(
// BF16: call @dist_rt_cuda_gemm_set_f32_bf16(
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
// CUDA-LABEL: func.func @ones(
// CUDA: linalg.fill
// CUDA: call @dist_rt_cuda_gemm_f32(
// BF16-LABEL: func.func @ones(
// BF16: call @dist_rt_cuda_gemm_f32_bf16(
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

// -----

// Through a reshape view of a fresh buffer (a 1x1 convolution's product
// into its NCHW output collapsed to [N, F, H*W]): the view and the buffer
// count as one, so a zero fill of either, untouched since, goes and the
// product sets the buffer. A read of the buffer in between keeps the fill.
// CHECK-LABEL: func.func @fill_through_view(
// CHECK-NOT: linalg.fill
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK-LABEL: func.func @fill_of_whole(
// CHECK-NOT: linalg.fill
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK-LABEL: func.func @view_read_between(
// CHECK: linalg.fill
// CHECK: memref.copy
// CHECK: call @dist_rt_gemm_f32(
#va = affine_map<(n, f, p, c) -> (f, c)>
#vb = affine_map<(n, f, p, c) -> (n, c, p)>
#vc = affine_map<(n, f, p, c) -> (n, f, p)>
func.func @fill_through_view(%x: memref<1x8x16xf32>, %w: memref<4x8xf32>, %o: memref<1x4x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x4x4x4xf32>
  %v = memref.collapse_shape %acc [[0], [1], [2, 3]] : memref<1x4x4x4xf32> into memref<1x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%v : memref<1x4x16xf32>)
  linalg.generic {indexing_maps = [#va, #vb, #vc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<4x8xf32>, memref<1x8x16xf32>) outs(%v : memref<1x4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  memref.copy %acc, %o : memref<1x4x4x4xf32> to memref<1x4x4x4xf32>
  memref.dealloc %acc : memref<1x4x4x4xf32>
  return
}
func.func @fill_of_whole(%x: memref<1x8x16xf32>, %w: memref<4x8xf32>, %o: memref<1x4x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x4x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x4x4x4xf32>)
  %v = memref.collapse_shape %acc [[0], [1], [2, 3]] : memref<1x4x4x4xf32> into memref<1x4x16xf32>
  linalg.generic {indexing_maps = [#va, #vb, #vc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<4x8xf32>, memref<1x8x16xf32>) outs(%v : memref<1x4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  memref.copy %acc, %o : memref<1x4x4x4xf32> to memref<1x4x4x4xf32>
  memref.dealloc %acc : memref<1x4x4x4xf32>
  return
}
func.func @view_read_between(%x: memref<1x8x16xf32>, %w: memref<4x8xf32>, %o: memref<1x4x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x4x4x4xf32>
  %v = memref.collapse_shape %acc [[0], [1], [2, 3]] : memref<1x4x4x4xf32> into memref<1x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%v : memref<1x4x16xf32>)
  memref.copy %acc, %o : memref<1x4x4x4xf32> to memref<1x4x4x4xf32>
  linalg.generic {indexing_maps = [#va, #vb, #vc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<4x8xf32>, memref<1x8x16xf32>) outs(%v : memref<1x4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  memref.dealloc %acc : memref<1x4x4x4xf32>
  return
}

// -----

// Another reshape view of the buffer, made earlier and read before the
// fill (one view CSE made of identical ones, read by an earlier product's
// epilogue, bufferization reusing the buffer): its uses count where they
// are, so the fill still goes; read between the fill and the product, it
// keeps the fill.
// CHECK-LABEL: func.func @view_read_before_fill(
// CHECK: memref.copy
// CHECK-NOT: linalg.fill
// CHECK: call @dist_rt_gemm_set_f32(
// CHECK-LABEL: func.func @view_read_after_fill(
// CHECK: linalg.fill
// CHECK: memref.copy
// CHECK: call @dist_rt_gemm_f32(
#ra = affine_map<(n, f, p, c) -> (f, c)>
#rb = affine_map<(n, f, p, c) -> (n, c, p)>
#rc = affine_map<(n, f, p, c) -> (n, f, p)>
func.func @view_read_before_fill(%x: memref<1x8x16xf32>, %w: memref<4x8xf32>, %o: memref<1x4x4x4xf32>, %o2: memref<1x4x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x4x16xf32>
  %e = memref.expand_shape %acc [[0], [1], [2, 3]] output_shape [1, 4, 4, 4] : memref<1x4x16xf32> into memref<1x4x4x4xf32>
  memref.copy %e, %o2 : memref<1x4x4x4xf32> to memref<1x4x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x4x16xf32>)
  linalg.generic {indexing_maps = [#ra, #rb, #rc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<4x8xf32>, memref<1x8x16xf32>) outs(%acc : memref<1x4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  memref.copy %e, %o : memref<1x4x4x4xf32> to memref<1x4x4x4xf32>
  memref.dealloc %acc : memref<1x4x16xf32>
  return
}
func.func @view_read_after_fill(%x: memref<1x8x16xf32>, %w: memref<4x8xf32>, %o: memref<1x4x4x4xf32>, %o2: memref<1x4x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x4x16xf32>
  %e = memref.expand_shape %acc [[0], [1], [2, 3]] output_shape [1, 4, 4, 4] : memref<1x4x16xf32> into memref<1x4x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x4x16xf32>)
  memref.copy %e, %o2 : memref<1x4x4x4xf32> to memref<1x4x4x4xf32>
  linalg.generic {indexing_maps = [#ra, #rb, #rc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w, %x : memref<4x8xf32>, memref<1x8x16xf32>) outs(%acc : memref<1x4x16xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %r, %m : f32
    linalg.yield %s : f32
  }
  memref.copy %e, %o : memref<1x4x4x4xf32> to memref<1x4x4x4xf32>
  memref.dealloc %acc : memref<1x4x16xf32>
  return
}

// -----

// For the CUDA target only products become calls: a convolution stays a
// linalg op (im2col before this pass makes it a product; a direct one is a
// kernel) and f64 products call the f64 form.
// CHECK-LABEL: func.func @conv_and_f64(
// CHECK: call @dist_rt_conv2d_f32(
// CHECK: call @dist_rt_gemm_f64(
// CUDA-LABEL: func.func @conv_and_f64(
// CUDA-NOT: dist_rt_conv2d
// CUDA: linalg.conv_2d_nchw_fchw
// CUDA: call @dist_rt_cuda_gemm_f64(
// f64 products keep f64 (no rounding).
// BF16-LABEL: func.func @conv_and_f64(
// BF16: call @dist_rt_cuda_gemm_f64(
#a = affine_map<(i, j, k) -> (i, k)>
#b = affine_map<(i, j, k) -> (k, j)>
#c = affine_map<(i, j, k) -> (i, j)>
func.func @conv_and_f64(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %o: memref<1x4x6x6xf32>,
                        %p: memref<2x3xf64>, %q: memref<3x5xf64>, %r: memref<2x5xf64>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>) outs(%o : memref<1x4x6x6xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %q : memref<2x3xf64>, memref<3x5xf64>) outs(%r : memref<2x5xf64>) {
  ^bb0(%u: f64, %v: f64, %t: f64):
    %m = arith.mulf %u, %v : f64
    %s = arith.addf %t, %m : f64
    linalg.yield %s : f64
  }
  return
}
