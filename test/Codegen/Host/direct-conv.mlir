// RUN: dist-opt %s --split-input-file --dist-contractions-to-runtime | FileCheck %s

// dist-contractions-to-runtime turns bufferized f32 linalg.conv_2d_nchw_fchw
// into dist_rt_conv2d_f32 calls (flags: 1 accumulate, 2 ReLU, 4 clip, 8
// SiLU). Its
// 26 arguments: n, c, h, w, f, kh, kw, sh, sw, dh, dw, oh, ow, in, 3 input
// strides, weight, bias, out, 3 output strides, the clip's bounds (f32),
// flags.

// A fresh output initialised with a per-filter bias broadcast: the call
// writes it with the bias and the broadcast goes; the in-place ReLU after
// it goes into the call too (flags 2).
// CHECK-LABEL: func.func @bias_and_relu(
// CHECK-NOT: linalg.generic
// CHECK: memref.extract_aligned_pointer_as_index %arg2
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c2_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK: return
#bias = affine_map<(n, f, h, w) -> (f)>
#id = affine_map<(n, f, h, w) -> (n, f, h, w)>
func.func @bias_and_relu(%x: memref<2x3x9x9xf32>, %w: memref<16x3x3x3xf32>, %b: memref<16xf32>, %o: memref<2x16x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<2x16x4x4xf32>
  linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : memref<16xf32>) outs(%acc : memref<2x16x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<2x3x9x9xf32>, memref<16x3x3x3xf32>) outs(%acc : memref<2x16x4x4xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<2x16x4x4xf32>) outs(%acc : memref<2x16x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %acc, %o : memref<2x16x4x4xf32> to memref<2x16x4x4xf32>
  memref.dealloc %acc : memref<2x16x4x4xf32>
  return
}

// -----

// HardSwish in place after the convolution (v * max(0, min(1, v * (1/6) +
// 1/2)), as LowerElementwise writes ONNX's HardSwish), then ReLU: flags
// 16 | 2, the loop goes.
// CHECK-LABEL: func.func @bias_and_hard_swish(
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c18_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK: return
#bias = affine_map<(n, f, h, w) -> (f)>
#id = affine_map<(n, f, h, w) -> (n, f, h, w)>
func.func @bias_and_hard_swish(%x: memref<2x3x9x9xf32>, %w: memref<16x3x3x3xf32>, %b: memref<16xf32>, %o: memref<2x16x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %sixth = arith.constant 0.166666672 : f32
  %acc = memref.alloc() : memref<2x16x4x4xf32>
  linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : memref<16xf32>) outs(%acc : memref<2x16x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<2x3x9x9xf32>, memref<16x3x3x3xf32>) outs(%acc : memref<2x16x4x4xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<2x16x4x4xf32>) outs(%acc : memref<2x16x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %sixth : f32
    %a = arith.addf %s, %half : f32
    %lo = arith.minimumf %one, %a : f32
    %g = arith.maximumf %zero, %lo : f32
    %h = arith.mulf %in, %g : f32
    %r = arith.maximumf %h, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %acc, %o : memref<2x16x4x4xf32> to memref<2x16x4x4xf32>
  memref.dealloc %acc : memref<2x16x4x4xf32>
  return
}

// -----

// SiLU in place after the convolution (v * (1 / (exp(-v) + 1)), as
// LowerElementwise writes ONNX's Sigmoid and Mul): flags 8, the loop goes.
// CHECK-LABEL: func.func @bias_and_silu(
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c8_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK-NOT: math.exp
// CHECK: return
#bias = affine_map<(n, f, h, w) -> (f)>
#id = affine_map<(n, f, h, w) -> (n, f, h, w)>
func.func @bias_and_silu(%x: memref<2x3x9x9xf32>, %w: memref<16x3x3x3xf32>, %b: memref<16xf32>, %o: memref<2x16x4x4xf32>) {
  %one = arith.constant 1.000000e+00 : f32
  %acc = memref.alloc() : memref<2x16x4x4xf32>
  linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : memref<16xf32>) outs(%acc : memref<2x16x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<2x3x9x9xf32>, memref<16x3x3x3xf32>) outs(%acc : memref<2x16x4x4xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<2x16x4x4xf32>) outs(%acc : memref<2x16x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %s = arith.divf %one, %d : f32
    %r = arith.mulf %s, %in : f32
    linalg.yield %r : f32
  }
  memref.copy %acc, %o : memref<2x16x4x4xf32> to memref<2x16x4x4xf32>
  memref.dealloc %acc : memref<2x16x4x4xf32>
  return
}

// -----

// A fresh output filled with +0.0: the call writes it (no bias, flags 0)
// and the fill goes. An output given by the caller (it may hold anything)
// is accumulated into (flags 1), and so is one filled with 1.0.
// CHECK-LABEL: func.func @zero_fill(
// CHECK-NOT: linalg.fill
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c0_i64, {{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK-LABEL: func.func @argument_output(
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c1_i64{{[_0-9]*}}) :
// CHECK-LABEL: func.func @ones_fill(
// CHECK: linalg.fill
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c1_i64{{[_0-9]*}}) :
func.func @zero_fill(%x: memref<1x4x6x6xf32>, %w: memref<8x4x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32>, memref<8x4x3x3xf32>) outs(%acc : memref<1x8x4x4xf32>)
  memref.copy %acc, %o : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return
}
func.func @argument_output(%x: memref<1x4x6x6xf32>, %w: memref<8x4x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32>, memref<8x4x3x3xf32>) outs(%o : memref<1x8x4x4xf32>)
  return
}
func.func @ones_fill(%x: memref<1x4x6x6xf32>, %w: memref<8x4x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  %one = arith.constant 1.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%one : f32) outs(%acc : memref<1x8x4x4xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32>, memref<8x4x3x3xf32>) outs(%acc : memref<1x8x4x4xf32>)
  memref.copy %acc, %o : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return
}

// -----

// A ReLU from the output into the interior of the next layer's padded
// buffer: the call writes the interior itself (ReLU applied), after the
// padding's fill, and the ReLU goes.
// CHECK-LABEL: func.func @relu_into_padding(
// CHECK: linalg.fill
// CHECK: %[[SUB:.*]] = memref.subview
// CHECK-NOT: linalg.generic
// CHECK: memref.extract_strided_metadata %[[SUB]]
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c2_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK: return
#id = affine_map<(n, f, h, w) -> (n, f, h, w)>
func.func @relu_into_padding(%x: memref<1x4x6x6xf32>, %w: memref<8x4x3x3xf32>, %o: memref<1x8x6x6xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32>, memref<8x4x3x3xf32>) outs(%acc : memref<1x8x4x4xf32>)
  %pad = memref.alloc() : memref<1x8x6x6xf32>
  linalg.fill ins(%zero : f32) outs(%pad : memref<1x8x6x6xf32>)
  %in = memref.subview %pad[0, 0, 1, 1] [1, 8, 4, 4] [1, 1, 1, 1] : memref<1x8x6x6xf32> to memref<1x8x4x4xf32, strided<[288, 36, 6, 1], offset: 7>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%in : memref<1x8x4x4xf32, strided<[288, 36, 6, 1], offset: 7>>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %acc : memref<1x8x4x4xf32>
  memref.copy %pad, %o : memref<1x8x6x6xf32> to memref<1x8x6x6xf32>
  return
}

// -----

// The ReLU into another buffer stays when the output is read after it,
// when the call accumulates (it reads the output), and when the ReLU
// writes the convolution's own input.
// CHECK-LABEL: func.func @output_read_later(
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK: linalg.generic
// CHECK-LABEL: func.func @accumulating(
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c1_i64{{[_0-9]*}}) :
// CHECK: linalg.generic
// CHECK-LABEL: func.func @relu_into_input(
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK: linalg.generic
#id = affine_map<(n, f, h, w) -> (n, f, h, w)>
func.func @output_read_later(%x: memref<1x4x6x6xf32>, %w: memref<8x4x3x3xf32>, %o: memref<1x8x4x4xf32>, %o2: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32>, memref<8x4x3x3xf32>) outs(%acc : memref<1x8x4x4xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%o : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %acc, %o2 : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return
}
func.func @accumulating(%x: memref<1x4x6x6xf32>, %w: memref<8x4x3x3xf32>, %acc: memref<1x8x4x4xf32>, %o: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32>, memref<8x4x3x3xf32>) outs(%acc : memref<1x8x4x4xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%o : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  return
}
func.func @relu_into_input(%w: memref<8x8x3x3xf32>, %o: memref<1x8x6x6xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %x = memref.alloc() : memref<1x8x6x6xf32>
  linalg.fill ins(%zero : f32) outs(%x : memref<1x8x6x6xf32>)
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x6x6xf32>, memref<8x8x3x3xf32>) outs(%acc : memref<1x8x4x4xf32>)
  %in = memref.subview %x[0, 0, 1, 1] [1, 8, 4, 4] [1, 1, 1, 1] : memref<1x8x6x6xf32> to memref<1x8x4x4xf32, strided<[288, 36, 6, 1], offset: 7>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%in : memref<1x8x4x4xf32, strided<[288, 36, 6, 1], offset: 7>>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %x, %o : memref<1x8x6x6xf32> to memref<1x8x6x6xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  memref.dealloc %x : memref<1x8x6x6xf32>
  return
}

// -----

// ONNX's Clip (LowerElementwise's selects on constant bounds) in place after
// the convolution goes into the call (flags 4, bounds 0 and 6: ReLU6), and
// so does a ReLU then a Clip with only an upper bound (flags 6, the lower
// bound -inf). A Clip whose bound is not a constant, or whose compare is
// not ordered, stays.
// CHECK-LABEL: func.func @relu6(
// CHECK-NOT: linalg.generic
// CHECK: %[[LO:cst_[0-9]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[HI:.*]] = arith.constant 6.000000e+00 : f32
// CHECK-NEXT: %[[FLAGS:.*]] = arith.constant 4 : i64
// CHECK-NEXT: call @dist_rt_conv2d_f32({{.*}}, %[[LO]], %[[HI]], %[[FLAGS]]) : ({{.*}}, f32, f32, i64) -> ()
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @relu_then_upper(
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[UP:.*]] = arith.constant 2.500000e+00 : f32
// CHECK-NEXT: %[[FLAGS:.*]] = arith.constant 6 : i64
// CHECK-NEXT: call @dist_rt_conv2d_f32({{.*}}, %[[NINF]], %[[UP]], %[[FLAGS]]) :
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @bound_not_constant(
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK: linalg.generic
// CHECK-LABEL: func.func @unordered_compare(
// CHECK: call @dist_rt_conv2d_f32({{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK: linalg.generic
#id = affine_map<(n, f, h, w) -> (n, f, h, w)>
func.func @relu6(%x: memref<1x4x6x6xf32>, %w: memref<8x4x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %six = arith.constant 6.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32>, memref<8x4x3x3xf32>) outs(%acc : memref<1x8x4x4xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%acc : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %lt = arith.cmpf olt, %a, %zero : f32
    %l = arith.select %lt, %zero, %a : f32
    %gt = arith.cmpf ogt, %l, %six : f32
    %r = arith.select %gt, %six, %l : f32
    linalg.yield %r : f32
  }
  memref.copy %acc, %o : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return
}
func.func @relu_then_upper(%x: memref<1x4x6x6xf32>, %w: memref<8x4x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32>, memref<8x4x3x3xf32>) outs(%acc : memref<1x8x4x4xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%acc : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %up = arith.constant 2.500000e+00 : f32
    %m = arith.maximumf %a, %zero : f32
    %gt = arith.cmpf ogt, %m, %up : f32
    %r = arith.select %gt, %up, %m : f32
    linalg.yield %r : f32
  }
  memref.copy %acc, %o : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return
}
func.func @bound_not_constant(%x: memref<1x4x6x6xf32>, %w: memref<8x4x3x3xf32>, %o: memref<1x8x4x4xf32>, %hi: f32) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32>, memref<8x4x3x3xf32>) outs(%acc : memref<1x8x4x4xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%acc : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %gt = arith.cmpf ogt, %a, %hi : f32
    %r = arith.select %gt, %hi, %a : f32
    linalg.yield %r : f32
  }
  memref.copy %acc, %o : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return
}
func.func @unordered_compare(%x: memref<1x4x6x6xf32>, %w: memref<8x4x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32>, memref<8x4x3x3xf32>) outs(%acc : memref<1x8x4x4xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%acc : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %lt = arith.cmpf ult, %a, %zero : f32
    %r = arith.select %lt, %zero, %a : f32
    linalg.yield %r : f32
  }
  memref.copy %acc, %o : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return
}

// -----

// Layouts the call does not take stay for the loop lowering: an input whose
// columns are not contiguous, and f64.
// CHECK-LABEL: func.func @strided_columns(
// CHECK-NOT: call
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-LABEL: func.func @f64(
// CHECK-NOT: call
// CHECK: linalg.conv_2d_nchw_fchw
func.func @strided_columns(%x: memref<1x4x6x6xf32, strided<[288, 72, 12, 2]>>, %w: memref<8x4x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf32, strided<[288, 72, 12, 2]>>, memref<8x4x3x3xf32>) outs(%o : memref<1x8x4x4xf32>)
  return
}
func.func @f64(%x: memref<1x4x6x6xf64>, %w: memref<8x4x3x3xf64>, %o: memref<1x8x4x4xf64>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x4x6x6xf64>, memref<8x4x3x3xf64>) outs(%o : memref<1x8x4x4xf64>)
  return
}

// -----

// The direct weight gradient (a generic over (f, c, i, j, b, y, x), strides
// 2 and dilations 1 here) into a fresh zero-filled buffer becomes a
// dist_rt_conv2d_wgrad_f32 call that sets it (flags 0) and the fill goes;
// into a caller's buffer it accumulates (flags 1). Its 23 arguments: n, c,
// h, w, f, kh, kw, sh, sw, dh, dw, oh, ow, x and 3 strides, dy and 3
// strides, dw, flags.
// CHECK-LABEL: func.func @weight_grad(
// CHECK-NOT: linalg.fill
// CHECK: call @dist_rt_conv2d_wgrad_f32({{.*}}, %c2_i64{{[_0-9]*}}, %c2_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, {{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @weight_grad_accumulating(
// CHECK: call @dist_rt_conv2d_wgrad_f32({{.*}}, %c1_i64{{[_0-9]*}}) :
// A row expression that is not linear stays a generic.
// CHECK-LABEL: func.func @not_a_weight_grad(
// CHECK-NOT: call
// CHECK: linalg.generic
#dy = affine_map<(f, c, i, j, b, y, x) -> (b, f, y, x)>
#x = affine_map<(f, c, i, j, b, y, x) -> (b, c, y * 2 + i, x * 2 + j)>
#xmod = affine_map<(f, c, i, j, b, y, x) -> (b, c, (y * 2 + i) mod 11, x * 2 + j)>
#dw = affine_map<(f, c, i, j, b, y, x) -> (f, c, i, j)>
func.func @weight_grad(%xp: memref<2x3x11x11xf32>, %dy: memref<2x8x5x5xf32>, %o: memref<8x3x3x3xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<8x3x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<8x3x3x3xf32>)
  linalg.generic {indexing_maps = [#dy, #x, #dw], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%dy, %xp : memref<2x8x5x5xf32>, memref<2x3x11x11xf32>) outs(%acc : memref<8x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  memref.copy %acc, %o : memref<8x3x3x3xf32> to memref<8x3x3x3xf32>
  memref.dealloc %acc : memref<8x3x3x3xf32>
  return
}
func.func @weight_grad_accumulating(%xp: memref<2x3x11x11xf32>, %dy: memref<2x8x5x5xf32>, %o: memref<8x3x3x3xf32>) {
  linalg.generic {indexing_maps = [#dy, #x, #dw], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%dy, %xp : memref<2x8x5x5xf32>, memref<2x3x11x11xf32>) outs(%o : memref<8x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  return
}
func.func @not_a_weight_grad(%xp: memref<2x3x11x11xf32>, %dy: memref<2x8x5x5xf32>, %o: memref<8x3x3x3xf32>) {
  linalg.generic {indexing_maps = [#dy, #xmod, #dw], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%dy, %xp : memref<2x8x5x5xf32>, memref<2x3x11x11xf32>) outs(%o : memref<8x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A grouped f32 linalg.conv_2d_ngchw_gfchw becomes dist_rt_conv2d_group_f32
// (29 arguments: groups, n, c, h, w, f per group, kh, kw, sh, sw, dh, dw,
// oh, ow, in, 4 input strides, weight, bias, out, 4 output strides, the
// clip's bounds, flags). It writes through the view that splits a fresh NCHW buffer's
// channels: the bias broadcast into that buffer goes (bias passed, flags
// 0), and so does a zero fill; a view read before the op, or a view of an
// argument, keeps the init and accumulates (flags 1). f64 stays.
// CHECK-LABEL: func.func @grouped_bias(
// CHECK-NOT: linalg.generic
// CHECK: memref.extract_aligned_pointer_as_index %arg2
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c1_i64, %c1_i64_{{[0-9]+}}, %c1_i64_{{[0-9]+}}, %c1_i64_{{[0-9]+}}, {{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
// CHECK: return
// CHECK-LABEL: func.func @grouped_zero_fill(
// CHECK-NOT: linalg.fill
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK-LABEL: func.func @grouped_view_read_before(
// CHECK: linalg.fill
// CHECK: memref.load
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c1_i64{{[_0-9]*}}) :
// CHECK-LABEL: func.func @grouped_argument_output(
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c1_i64{{[_0-9]*}}) :
// CHECK-LABEL: func.func @grouped_f64(
// CHECK: linalg.conv_2d_ngchw_gfchw
// CHECK-NOT: call
#gbias = affine_map<(n, f, h, w) -> (f)>
#gid = affine_map<(n, f, h, w) -> (n, f, h, w)>
func.func @grouped_bias(%x: memref<2x4x2x10x10xf32>, %w: memref<4x3x2x3x3xf32>, %b: memref<12xf32>, %o: memref<2x12x8x8xf32>) {
  %acc = memref.alloc() : memref<2x12x8x8xf32>
  linalg.generic {indexing_maps = [#gbias, #gid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : memref<12xf32>) outs(%acc : memref<2x12x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %g = memref.expand_shape %acc [[0], [1, 2], [3], [4]] output_shape [2, 4, 3, 8, 8] : memref<2x12x8x8xf32> into memref<2x4x3x8x8xf32>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<2x4x2x10x10xf32>, memref<4x3x2x3x3xf32>) outs(%g : memref<2x4x3x8x8xf32>)
  %c = memref.collapse_shape %g [[0], [1, 2], [3], [4]] : memref<2x4x3x8x8xf32> into memref<2x12x8x8xf32>
  memref.copy %c, %o : memref<2x12x8x8xf32> to memref<2x12x8x8xf32>
  memref.dealloc %acc : memref<2x12x8x8xf32>
  return
}
func.func @grouped_zero_fill(%x: memref<1x8x1x9x9xf32>, %w: memref<8x1x1x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  %g = memref.expand_shape %acc [[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 4, 4] : memref<1x8x4x4xf32> into memref<1x8x1x4x4xf32>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x1x9x9xf32>, memref<8x1x1x3x3xf32>) outs(%g : memref<1x8x1x4x4xf32>)
  memref.copy %acc, %o : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return
}
func.func @grouped_view_read_before(%x: memref<1x8x1x9x9xf32>, %w: memref<8x1x1x3x3xf32>, %o: memref<1x8x4x4xf32>) -> f32 {
  %zero = arith.constant 0.000000e+00 : f32
  %i = arith.constant 0 : index
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  %g = memref.expand_shape %acc [[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 4, 4] : memref<1x8x4x4xf32> into memref<1x8x1x4x4xf32>
  %v = memref.load %g[%i, %i, %i, %i, %i] : memref<1x8x1x4x4xf32>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x1x9x9xf32>, memref<8x1x1x3x3xf32>) outs(%g : memref<1x8x1x4x4xf32>)
  memref.copy %acc, %o : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return %v : f32
}
func.func @grouped_argument_output(%x: memref<1x8x1x9x9xf32>, %w: memref<8x1x1x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  %g = memref.expand_shape %o [[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 4, 4] : memref<1x8x4x4xf32> into memref<1x8x1x4x4xf32>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x1x9x9xf32>, memref<8x1x1x3x3xf32>) outs(%g : memref<1x8x1x4x4xf32>)
  return
}
func.func @grouped_f64(%x: memref<1x8x1x9x9xf64>, %w: memref<8x1x1x3x3xf64>, %o: memref<1x8x1x4x4xf64>) {
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x1x9x9xf64>, memref<8x1x1x3x3xf64>) outs(%o : memref<1x8x1x4x4xf64>)
  return
}

// -----

// An activation in place on the grouped convolution's whole NCHW buffer,
// read through the view that merges the groups again, goes into the call
// (ReLU6 of a depthwise layer: flags 4). One that writes another buffer
// goes in too, the call writing that buffer split by groups at the
// activation's place (ReLU: flags 2), unless the convolution's buffer is
// read after it or the call would read it (no init to take over); one
// after another read of the buffer stays.
// CHECK-LABEL: func.func @grouped_relu6(
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c4_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @grouped_relu_elsewhere(
// CHECK-SAME: %{{.*}}: memref<1x8x1x9x9xf32>, %{{.*}}: memref<8x1x1x3x3xf32>, %[[O:.*]]: memref<1x8x4x4xf32>)
// CHECK: %[[OG:.*]] = memref.expand_shape %[[O]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 4, 4]
// CHECK: memref.extract_aligned_pointer_as_index %[[OG]]
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c2_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @grouped_relu_elsewhere_dynamic(
// CHECK-SAME: %[[O:[a-z0-9]+]]: memref<?x8x4x4xf32>
// CHECK: memref.expand_shape %[[O]] {{\[}}[0], [1, 2], [3], [4]] output_shape [%{{.*}}, 8, 1, 4, 4] {dist.call_overwrites}
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c2_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @grouped_relu_elsewhere_read_after(
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK: linalg.generic
// CHECK-LABEL: func.func @grouped_relu_elsewhere_accumulating(
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c1_i64{{[_0-9]*}}) :
// CHECK: linalg.generic
// CHECK-LABEL: func.func @grouped_read_between(
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK: memref.load
// CHECK: linalg.generic
#gid = affine_map<(n, f, h, w) -> (n, f, h, w)>
func.func @grouped_relu6(%x: memref<1x8x1x9x9xf32>, %w: memref<8x1x1x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %six = arith.constant 6.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  %g = memref.expand_shape %acc [[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 4, 4] : memref<1x8x4x4xf32> into memref<1x8x1x4x4xf32>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x1x9x9xf32>, memref<8x1x1x3x3xf32>) outs(%g : memref<1x8x1x4x4xf32>)
  %c = memref.collapse_shape %g [[0], [1, 2], [3], [4]] : memref<1x8x1x4x4xf32> into memref<1x8x4x4xf32>
  linalg.generic {indexing_maps = [#gid, #gid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : memref<1x8x4x4xf32>) outs(%c : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %lt = arith.cmpf olt, %a, %zero : f32
    %l = arith.select %lt, %zero, %a : f32
    %gt = arith.cmpf ogt, %l, %six : f32
    %r = arith.select %gt, %six, %l : f32
    linalg.yield %r : f32
  }
  memref.copy %acc, %o : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return
}
func.func @grouped_relu_elsewhere(%x: memref<1x8x1x9x9xf32>, %w: memref<8x1x1x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  %g = memref.expand_shape %acc [[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 4, 4] : memref<1x8x4x4xf32> into memref<1x8x1x4x4xf32>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x1x9x9xf32>, memref<8x1x1x3x3xf32>) outs(%g : memref<1x8x1x4x4xf32>)
  linalg.generic {indexing_maps = [#gid, #gid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%o : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return
}
func.func @grouped_relu_elsewhere_dynamic(%x: memref<?x8x1x9x9xf32>, %w: memref<8x1x1x3x3xf32>, %o: memref<?x8x4x4xf32>, %n: index) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc(%n) : memref<?x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<?x8x4x4xf32>)
  %g = memref.expand_shape %acc [[0], [1, 2], [3], [4]] output_shape [%n, 8, 1, 4, 4] : memref<?x8x4x4xf32> into memref<?x8x1x4x4xf32>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<?x8x1x9x9xf32>, memref<8x1x1x3x3xf32>) outs(%g : memref<?x8x1x4x4xf32>)
  linalg.generic {indexing_maps = [#gid, #gid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<?x8x4x4xf32>) outs(%o : memref<?x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %acc : memref<?x8x4x4xf32>
  return
}
func.func @grouped_relu_elsewhere_read_after(%x: memref<1x8x1x9x9xf32>, %w: memref<8x1x1x3x3xf32>, %o: memref<1x8x4x4xf32>, %o2: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  %g = memref.expand_shape %acc [[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 4, 4] : memref<1x8x4x4xf32> into memref<1x8x1x4x4xf32>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x1x9x9xf32>, memref<8x1x1x3x3xf32>) outs(%g : memref<1x8x1x4x4xf32>)
  linalg.generic {indexing_maps = [#gid, #gid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%o : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %acc, %o2 : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return
}
func.func @grouped_relu_elsewhere_accumulating(%x: memref<1x8x1x9x9xf32>, %w: memref<8x1x1x3x3xf32>, %acc: memref<1x8x4x4xf32>, %o: memref<1x8x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %g = memref.expand_shape %acc [[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 4, 4] : memref<1x8x4x4xf32> into memref<1x8x1x4x4xf32>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x1x9x9xf32>, memref<8x1x1x3x3xf32>) outs(%g : memref<1x8x1x4x4xf32>)
  linalg.generic {indexing_maps = [#gid, #gid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%o : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  return
}
func.func @grouped_read_between(%x: memref<1x8x1x9x9xf32>, %w: memref<8x1x1x3x3xf32>, %o: memref<1x8x4x4xf32>) -> f32 {
  %zero = arith.constant 0.000000e+00 : f32
  %i = arith.constant 0 : index
  %acc = memref.alloc() : memref<1x8x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<1x8x4x4xf32>)
  %g = memref.expand_shape %acc [[0], [1, 2], [3], [4]] output_shape [1, 8, 1, 4, 4] : memref<1x8x4x4xf32> into memref<1x8x1x4x4xf32>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x1x9x9xf32>, memref<8x1x1x3x3xf32>) outs(%g : memref<1x8x1x4x4xf32>)
  %v = memref.load %acc[%i, %i, %i, %i] : memref<1x8x4x4xf32>
  linalg.generic {indexing_maps = [#gid, #gid], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc : memref<1x8x4x4xf32>) outs(%acc : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %acc, %o : memref<1x8x4x4xf32> to memref<1x8x4x4xf32>
  memref.dealloc %acc : memref<1x8x4x4xf32>
  return %v : f32
}

// -----

// A grouped convolution that writes all of its output, a view splitting
// the channels of a whole allocation (bufferization reusing a dead
// buffer, a dynamic batch here), writes it through a view made at the
// call and marked dist.call_overwrites, for dist-fuse-product-epilogues.
// Not when the call accumulates onto the buffer (no fill to take over).
// CHECK-LABEL: func.func @grouped_overwrites_view(
// CHECK-SAME: %[[N:[a-z0-9]+]]: index)
// CHECK: %[[ACC:.*]] = memref.alloc(%[[N]]) : memref<?x8x4x4xf32>
// CHECK-NOT: linalg.fill
// CHECK: %[[W:.*]] = memref.expand_shape %[[ACC]] {{\[}}[0], [1, 2], [3], [4]] output_shape [%[[N]], 8, 1, 4, 4] {dist.call_overwrites}
// CHECK: memref.extract_aligned_pointer_as_index %[[W]]
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK-LABEL: func.func @grouped_accumulates_view(
// CHECK-NOT: dist.call_overwrites
// CHECK: call @dist_rt_conv2d_group_f32({{.*}}, %c1_i64{{[_0-9]*}}) :
func.func @grouped_overwrites_view(%x: memref<?x8x1x9x9xf32>, %w: memref<8x1x1x3x3xf32>, %n: index) -> memref<?x8x4x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc(%n) : memref<?x8x4x4xf32>
  %g = memref.expand_shape %acc [[0], [1, 2], [3], [4]] output_shape [%n, 8, 1, 4, 4] : memref<?x8x4x4xf32> into memref<?x8x1x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%g : memref<?x8x1x4x4xf32>)
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<?x8x1x9x9xf32>, memref<8x1x1x3x3xf32>) outs(%g : memref<?x8x1x4x4xf32>)
  return %acc : memref<?x8x4x4xf32>
}
func.func @grouped_accumulates_view(%x: memref<?x8x1x9x9xf32>, %w: memref<8x1x1x3x3xf32>, %n: index) -> memref<?x8x4x4xf32> {
  %acc = memref.alloc(%n) : memref<?x8x4x4xf32>
  %g = memref.expand_shape %acc [[0], [1, 2], [3], [4]] output_shape [%n, 8, 1, 4, 4] : memref<?x8x4x4xf32> into memref<?x8x1x4x4xf32>
  linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : memref<?x8x1x9x9xf32>, memref<8x1x1x3x3xf32>) outs(%g : memref<?x8x1x4x4xf32>)
  return %acc : memref<?x8x4x4xf32>
}

// -----

// The channels-last convolution generic of --conv=nhwc (marked
// dist.channels_last_conv: strides, dilations) becomes a call of
// dist_rt_conv2d_nhwc_f32 with its padding 0 (the input is the padded
// image); the bias broadcast along the last dim and the ReLU that reads
// the whole output in place go into the call (flags 2), their loops go.
// An input inside a larger buffer (a padded buffer's interior) goes to the
// call as a dense copy, freed after it.
#cl_in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 * 2 + d5, d2 * 2 + d6, d3, d7)>
#cl_w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d7, d5, d6)>
#cl_out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
#cl_bias = affine_map<(d0, d1, d2, d3) -> (d3)>
#cl_id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @channels_last(
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_conv2d_nhwc_f32(
// CHECK-SAME: %c2_i64{{[_0-9]*}}) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @channels_last_strided_input(
// CHECK: %[[COPY:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x9x9x1x8xf32>
// CHECK: memref.copy %{{.*}}, %[[COPY]] : memref<1x9x9x1x8xf32, strided<{{.*}}>> to memref<1x9x9x1x8xf32>
// CHECK: call @dist_rt_conv2d_nhwc_f32(
// CHECK: memref.dealloc %[[COPY]]
func.func @channels_last(%x: memref<1x9x9x8xf32>, %w: memref<16x8x3x3xf32>, %b: memref<16xf32>) -> memref<1x4x4x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %out = memref.alloc() : memref<1x4x4x16xf32>
  linalg.generic {indexing_maps = [#cl_bias, #cl_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%b : memref<16xf32>) outs(%out : memref<1x4x4x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %x5 = memref.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 9, 9, 1, 8] : memref<1x9x9x8xf32> into memref<1x9x9x1x8xf32>
  %w5 = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 16, 8, 3, 3] : memref<16x8x3x3xf32> into memref<1x16x8x3x3xf32>
  %o5 = memref.expand_shape %out [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 16] : memref<1x4x4x16xf32> into memref<1x4x4x1x16xf32>
  linalg.generic {indexing_maps = [#cl_in, #cl_w, #cl_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x5, %w5 : memref<1x9x9x1x8xf32>, memref<1x16x8x3x3xf32>) outs(%o5 : memref<1x4x4x1x16xf32>) attrs = {dist.channels_last_conv = array<i64: 2, 2, 1, 1>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#cl_id, #cl_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%out : memref<1x4x4x16xf32>) outs(%out : memref<1x4x4x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  return %out : memref<1x4x4x16xf32>
}
func.func @channels_last_strided_input(%padded: memref<1x11x11x8xf32>, %w: memref<16x8x3x3xf32>) -> memref<1x4x4x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %out = memref.alloc() : memref<1x4x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x4x4x16xf32>)
  %x = memref.subview %padded[0, 1, 1, 0] [1, 9, 9, 8] [1, 1, 1, 1] : memref<1x11x11x8xf32> to memref<1x9x9x8xf32, strided<[968, 88, 8, 1], offset: 96>>
  %x5 = memref.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 9, 9, 1, 8] : memref<1x9x9x8xf32, strided<[968, 88, 8, 1], offset: 96>> into memref<1x9x9x1x8xf32, strided<[968, 88, 8, 8, 1], offset: 96>>
  %w5 = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 16, 8, 3, 3] : memref<16x8x3x3xf32> into memref<1x16x8x3x3xf32>
  %o5 = memref.expand_shape %out [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 16] : memref<1x4x4x16xf32> into memref<1x4x4x1x16xf32>
  linalg.generic {indexing_maps = [#cl_in, #cl_w, #cl_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x5, %w5 : memref<1x9x9x1x8xf32, strided<[968, 88, 8, 8, 1], offset: 96>>, memref<1x16x8x3x3xf32>) outs(%o5 : memref<1x4x4x1x16xf32>) attrs = {dist.channels_last_conv = array<i64: 2, 2, 1, 1>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  return %out : memref<1x4x4x16xf32>
}

// -----

// A padded input whose interior the previous layer's ReLU writes (and
// whose borders dist-fill-borders fills with +0.0): the ReLU writes a
// dense image instead, which the call reads with the borders as its
// padding (1, 1, 1, 1); the padded buffer, its fills and views go.
#cp_in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d5, d2 + d6, d3, d7)>
#cp_w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d7, d5, d6)>
#cp_out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
#cp_id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @channels_last_own_padding(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<?x4x4x8xf32>
// CHECK-NOT: memref.subview
// CHECK-NOT: linalg.fill
// CHECK: %[[IMG:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x4x4x8xf32>
// CHECK: linalg.generic {{.*}} ins(%[[X]] : memref<?x4x4x8xf32>) outs(%[[IMG]] : memref<?x4x4x8xf32>)
// CHECK: arith.maximumf
// Strides, dilations, then the four paddings: eight ones.
// CHECK: call @dist_rt_conv2d_nhwc_f32(%{{[0-9]+}}, %{{[0-9]+}}, %c8_i64, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %{{[0-9]+}}, %{{[0-9]+}}, %
// CHECK: memref.dealloc %[[IMG]]
// CHECK-NOT: memref.subview
// CHECK-NOT: linalg.fill
func.func @channels_last_own_padding(%x: memref<?x4x4x8xf32>, %w: memref<16x8x3x3xf32>, %n: index) -> memref<?x4x4x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %p = memref.alloc(%n) {alignment = 64 : i64} : memref<?x6x6x8xf32>
  %top = memref.subview %p[0, 0, 0, 0] [%n, 1, 6, 8] [1, 1, 1, 1] : memref<?x6x6x8xf32> to memref<?x1x6x8xf32, strided<[288, 48, 8, 1]>>
  linalg.fill ins(%zero : f32) outs(%top : memref<?x1x6x8xf32, strided<[288, 48, 8, 1]>>)
  %bottom = memref.subview %p[0, 5, 0, 0] [%n, 1, 6, 8] [1, 1, 1, 1] : memref<?x6x6x8xf32> to memref<?x1x6x8xf32, strided<[288, 48, 8, 1], offset: 240>>
  linalg.fill ins(%zero : f32) outs(%bottom : memref<?x1x6x8xf32, strided<[288, 48, 8, 1], offset: 240>>)
  %left = memref.subview %p[0, 1, 0, 0] [%n, 4, 1, 8] [1, 1, 1, 1] : memref<?x6x6x8xf32> to memref<?x4x1x8xf32, strided<[288, 48, 8, 1], offset: 48>>
  linalg.fill ins(%zero : f32) outs(%left : memref<?x4x1x8xf32, strided<[288, 48, 8, 1], offset: 48>>)
  %right = memref.subview %p[0, 1, 5, 0] [%n, 4, 1, 8] [1, 1, 1, 1] : memref<?x6x6x8xf32> to memref<?x4x1x8xf32, strided<[288, 48, 8, 1], offset: 88>>
  linalg.fill ins(%zero : f32) outs(%right : memref<?x4x1x8xf32, strided<[288, 48, 8, 1], offset: 88>>)
  %inner = memref.subview %p[0, 1, 1, 0] [%n, 4, 4, 8] [1, 1, 1, 1] : memref<?x6x6x8xf32> to memref<?x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
  linalg.generic {indexing_maps = [#cp_id, #cp_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<?x4x4x8xf32>) outs(%inner : memref<?x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  %out = memref.alloc(%n) : memref<?x4x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<?x4x4x16xf32>)
  %x5 = memref.expand_shape %p [[0], [1], [2], [3, 4]] output_shape [%n, 6, 6, 1, 8] : memref<?x6x6x8xf32> into memref<?x6x6x1x8xf32>
  %w5 = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 16, 8, 3, 3] : memref<16x8x3x3xf32> into memref<1x16x8x3x3xf32>
  %o5 = memref.expand_shape %out [[0], [1], [2], [3, 4]] output_shape [%n, 4, 4, 1, 16] : memref<?x4x4x16xf32> into memref<?x4x4x1x16xf32>
  linalg.generic {indexing_maps = [#cp_in, #cp_w, #cp_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x5, %w5 : memref<?x6x6x1x8xf32>, memref<1x16x8x3x3xf32>) outs(%o5 : memref<?x4x4x1x16xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  memref.dealloc %p : memref<?x6x6x8xf32>
  return %out : memref<?x4x4x16xf32>
}

// -----

// A stem: the model's NCHW image transposed into the interior of a buffer
// padded at the top and left only (dist-fill-borders' two low slabs): the
// transpose writes a dense channels-last image, which the call pads (1, 1,
// 0, 0).
#cs_in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 * 2 + d5, d2 * 2 + d6, d3, d7)>
#cs_w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d7, d5, d6)>
#cs_out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @channels_last_transposed_stem(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<1x3x8x8xf32>
// CHECK-NOT: memref.subview
// CHECK-NOT: linalg.fill
// CHECK: %[[IMG:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x8x8x3xf32>
// CHECK: linalg.transpose ins(%[[X]] : memref<1x3x8x8xf32>) outs(%[[IMG]] : memref<1x8x8x3xf32>)
// Strides 2, dilations 1, then the paddings 1, 1, 0, 0.
// CHECK: call @dist_rt_conv2d_nhwc_f32(%{{[0-9]+}}, %{{[0-9]+}}, %c3_i64, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c2_i64{{[_0-9]*}}, %c2_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %
// CHECK: memref.dealloc %[[IMG]]
// CHECK-NOT: linalg.fill
func.func @channels_last_transposed_stem(%x: memref<1x3x8x8xf32>, %w: memref<4x3x3x3xf32>) -> memref<1x4x4x4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %p = memref.alloc() {alignment = 64 : i64} : memref<1x9x9x3xf32>
  %top = memref.subview %p[0, 0, 0, 0] [1, 1, 9, 3] [1, 1, 1, 1] : memref<1x9x9x3xf32> to memref<1x1x9x3xf32, strided<[243, 27, 3, 1]>>
  linalg.fill ins(%zero : f32) outs(%top : memref<1x1x9x3xf32, strided<[243, 27, 3, 1]>>)
  %left = memref.subview %p[0, 1, 0, 0] [1, 8, 1, 3] [1, 1, 1, 1] : memref<1x9x9x3xf32> to memref<1x8x1x3xf32, strided<[243, 27, 3, 1], offset: 27>>
  linalg.fill ins(%zero : f32) outs(%left : memref<1x8x1x3xf32, strided<[243, 27, 3, 1], offset: 27>>)
  %inner = memref.subview %p[0, 1, 1, 0] [1, 8, 8, 3] [1, 1, 1, 1] : memref<1x9x9x3xf32> to memref<1x8x8x3xf32, strided<[243, 27, 3, 1], offset: 30>>
  linalg.transpose ins(%x : memref<1x3x8x8xf32>) outs(%inner : memref<1x8x8x3xf32, strided<[243, 27, 3, 1], offset: 30>>) permutation = [0, 2, 3, 1]
  %out = memref.alloc() : memref<1x4x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x4x4x4xf32>)
  %x5 = memref.expand_shape %p [[0], [1], [2], [3, 4]] output_shape [1, 9, 9, 1, 3] : memref<1x9x9x3xf32> into memref<1x9x9x1x3xf32>
  %w5 = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 4, 3, 3, 3] : memref<4x3x3x3xf32> into memref<1x4x3x3x3xf32>
  %o5 = memref.expand_shape %out [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 4] : memref<1x4x4x4xf32> into memref<1x4x4x1x4xf32>
  linalg.generic {indexing_maps = [#cs_in, #cs_w, #cs_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x5, %w5 : memref<1x9x9x1x3xf32>, memref<1x4x3x3x3xf32>) outs(%o5 : memref<1x4x4x1x4xf32>) attrs = {dist.channels_last_conv = array<i64: 2, 2, 1, 1>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  memref.dealloc %p : memref<1x9x9x3xf32>
  return %out : memref<1x4x4x4xf32>
}

// -----

// A channels-last layer whose ReLU6 writes the next layer's padded input
// (MobileNetV2's 1x1 expansion before each depthwise layer): the next
// layer's call pads a dense image that the ReLU6 writes, and then the
// first call applies the ReLU6 (flags 4, bounds 0 and 6) and writes that
// image itself, at the ReLU6's place; no loop is left.
#ca_in1 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d5, d2 + d6, d3, d7)>
#ca_w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d7, d5, d6)>
#ca_out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
#ca_id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @channels_last_activation_into_padding(
// CHECK-NOT: linalg.generic
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[IMG:[a-z0-9_]+]] {{.*}} {dist.call_overwrites} : memref<1x4x4x8xf32> into
// CHECK-NOT: linalg.generic
// CHECK: memref.extract_aligned_pointer_as_index %[[VIEW]] :
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_conv2d_nhwc_f32({{.*}}, %c4_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK: memref.extract_aligned_pointer_as_index %[[IMG]] :
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: linalg.generic
func.func @channels_last_activation_into_padding(%x: memref<1x4x4x8xf32>, %w1: memref<8x8x1x1xf32>, %w2: memref<16x8x3x3xf32>) -> memref<1x4x4x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %six = arith.constant 6.000000e+00 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<1x4x4x8xf32>)
  %x5 = memref.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  %w15 = memref.expand_shape %w1 [[0, 1], [2], [3], [4]] output_shape [1, 8, 8, 1, 1] : memref<8x8x1x1xf32> into memref<1x8x8x1x1xf32>
  %a5 = memref.expand_shape %a [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  linalg.generic {indexing_maps = [#ca_in1, #ca_w, #ca_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x5, %w15 : memref<1x4x4x1x8xf32>, memref<1x8x8x1x1xf32>) outs(%a5 : memref<1x4x4x1x8xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%i: f32, %c: f32, %o: f32):
    %m = arith.mulf %i, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  %p = memref.alloc() {alignment = 64 : i64} : memref<1x6x6x8xf32>
  %top = memref.subview %p[0, 0, 0, 0] [1, 1, 6, 8] [1, 1, 1, 1] : memref<1x6x6x8xf32> to memref<1x1x6x8xf32, strided<[288, 48, 8, 1]>>
  linalg.fill ins(%zero : f32) outs(%top : memref<1x1x6x8xf32, strided<[288, 48, 8, 1]>>)
  %bottom = memref.subview %p[0, 5, 0, 0] [1, 1, 6, 8] [1, 1, 1, 1] : memref<1x6x6x8xf32> to memref<1x1x6x8xf32, strided<[288, 48, 8, 1], offset: 240>>
  linalg.fill ins(%zero : f32) outs(%bottom : memref<1x1x6x8xf32, strided<[288, 48, 8, 1], offset: 240>>)
  %left = memref.subview %p[0, 1, 0, 0] [1, 4, 1, 8] [1, 1, 1, 1] : memref<1x6x6x8xf32> to memref<1x4x1x8xf32, strided<[288, 48, 8, 1], offset: 48>>
  linalg.fill ins(%zero : f32) outs(%left : memref<1x4x1x8xf32, strided<[288, 48, 8, 1], offset: 48>>)
  %right = memref.subview %p[0, 1, 5, 0] [1, 4, 1, 8] [1, 1, 1, 1] : memref<1x6x6x8xf32> to memref<1x4x1x8xf32, strided<[288, 48, 8, 1], offset: 88>>
  linalg.fill ins(%zero : f32) outs(%right : memref<1x4x1x8xf32, strided<[288, 48, 8, 1], offset: 88>>)
  %inner = memref.subview %p[0, 1, 1, 0] [1, 4, 4, 8] [1, 1, 1, 1] : memref<1x6x6x8xf32> to memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
  linalg.generic {indexing_maps = [#ca_id, #ca_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<1x4x4x8xf32>) outs(%inner : memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>) {
  ^bb0(%in: f32, %o: f32):
    %lt = arith.cmpf olt, %in, %zero : f32
    %lo = arith.select %lt, %zero, %in : f32
    %gt = arith.cmpf ogt, %lo, %six : f32
    %hi = arith.select %gt, %six, %lo : f32
    linalg.yield %hi : f32
  }
  memref.dealloc %a : memref<1x4x4x8xf32>
  %out = memref.alloc() : memref<1x4x4x16xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x4x4x16xf32>)
  %p5 = memref.expand_shape %p [[0], [1], [2], [3, 4]] output_shape [1, 6, 6, 1, 8] : memref<1x6x6x8xf32> into memref<1x6x6x1x8xf32>
  %w25 = memref.expand_shape %w2 [[0, 1], [2], [3], [4]] output_shape [1, 16, 8, 3, 3] : memref<16x8x3x3xf32> into memref<1x16x8x3x3xf32>
  %o5 = memref.expand_shape %out [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 16] : memref<1x4x4x16xf32> into memref<1x4x4x1x16xf32>
  linalg.generic {indexing_maps = [#ca_in1, #ca_w, #ca_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%p5, %w25 : memref<1x6x6x1x8xf32>, memref<1x16x8x3x3xf32>) outs(%o5 : memref<1x4x4x1x16xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%i: f32, %c: f32, %o: f32):
    %m = arith.mulf %i, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  memref.dealloc %p : memref<1x6x6x8xf32>
  return %out : memref<1x4x4x16xf32>
}

// -----

// A channels-last max pooling (LowerReduction's window generic, made
// channels-last by dist-sink-transposes) of a buffer bordered with -inf,
// whose interior a ReLU of a convolution's output writes (ResNet-50's
// stem): the pooling becomes a call of dist_rt_maxpool2d_nhwc_f32 on a
// dense image with the borders as its padding (3x3 window, strides 2,
// dilations 1, padding 1 before), the ReLU writes that image and then
// goes into the convolution's call (flags 2); the padded buffer, its
// fills and the output's fill of -inf go; no loop is left.
#mp_in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d5, d2 + d6, d3, d7)>
#mp_w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d7, d5, d6)>
#mp_out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
#mp_id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#mp_pin = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d4, d2 * 2 + d5, d3)>
#mp_win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#mp_pout = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @channels_last_relu_then_max_pool(
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill
// CHECK: memref.expand_shape %[[IMG:[a-z0-9_]+]] {{.*}} {dist.call_overwrites} : memref<1x4x4x8xf32> into
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_conv2d_nhwc_f32({{.*}}, %c2_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK: memref.extract_aligned_pointer_as_index %[[IMG]] :
// Batch, channels, image, kernel, strides, dilations, padding before,
// output.
// CHECK: call @dist_rt_maxpool2d_nhwc_f32(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c3_i64{{[_0-9]*}}, %c3_i64{{[_0-9]*}}, %c2_i64{{[_0-9]*}}, %c2_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}})
// CHECK: memref.dealloc %[[IMG]]
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill
// CHECK-NOT: memref.subview
func.func @channels_last_relu_then_max_pool(%x: memref<1x4x4x8xf32>, %w: memref<8x8x1x1xf32>) -> memref<1x2x2x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<1x4x4x8xf32>)
  %x5 = memref.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  %w5 = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 8, 8, 1, 1] : memref<8x8x1x1xf32> into memref<1x8x8x1x1xf32>
  %a5 = memref.expand_shape %a [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  linalg.generic {indexing_maps = [#mp_in, #mp_w, #mp_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x5, %w5 : memref<1x4x4x1x8xf32>, memref<1x8x8x1x1xf32>) outs(%a5 : memref<1x4x4x1x8xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%i: f32, %c: f32, %o: f32):
    %m = arith.mulf %i, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  %p = memref.alloc() {alignment = 64 : i64} : memref<1x6x6x8xf32>
  %top = memref.subview %p[0, 0, 0, 0] [1, 1, 6, 8] [1, 1, 1, 1] : memref<1x6x6x8xf32> to memref<1x1x6x8xf32, strided<[288, 48, 8, 1]>>
  linalg.fill ins(%ninf : f32) outs(%top : memref<1x1x6x8xf32, strided<[288, 48, 8, 1]>>)
  %bottom = memref.subview %p[0, 5, 0, 0] [1, 1, 6, 8] [1, 1, 1, 1] : memref<1x6x6x8xf32> to memref<1x1x6x8xf32, strided<[288, 48, 8, 1], offset: 240>>
  linalg.fill ins(%ninf : f32) outs(%bottom : memref<1x1x6x8xf32, strided<[288, 48, 8, 1], offset: 240>>)
  %left = memref.subview %p[0, 1, 0, 0] [1, 4, 1, 8] [1, 1, 1, 1] : memref<1x6x6x8xf32> to memref<1x4x1x8xf32, strided<[288, 48, 8, 1], offset: 48>>
  linalg.fill ins(%ninf : f32) outs(%left : memref<1x4x1x8xf32, strided<[288, 48, 8, 1], offset: 48>>)
  %right = memref.subview %p[0, 1, 5, 0] [1, 4, 1, 8] [1, 1, 1, 1] : memref<1x6x6x8xf32> to memref<1x4x1x8xf32, strided<[288, 48, 8, 1], offset: 88>>
  linalg.fill ins(%ninf : f32) outs(%right : memref<1x4x1x8xf32, strided<[288, 48, 8, 1], offset: 88>>)
  %inner = memref.subview %p[0, 1, 1, 0] [1, 4, 4, 8] [1, 1, 1, 1] : memref<1x6x6x8xf32> to memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
  linalg.generic {indexing_maps = [#mp_id, #mp_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<1x4x4x8xf32>) outs(%inner : memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %a : memref<1x4x4x8xf32>
  %win = memref.alloc() {alignment = 64 : i64} : memref<3x3xf32>
  %out = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x8xf32>
  linalg.fill ins(%ninf : f32) outs(%out : memref<1x2x2x8xf32>)
  linalg.generic {indexing_maps = [#mp_pin, #mp_win, #mp_pout], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%p, %win : memref<1x6x6x8xf32>, memref<3x3xf32>) outs(%out : memref<1x2x2x8xf32>) {
  ^bb0(%in: f32, %k: f32, %o: f32):
    %r = arith.maximumf %in, %o : f32
    linalg.yield %r : f32
  }
  memref.dealloc %p : memref<1x6x6x8xf32>
  return %out : memref<1x2x2x8xf32>
}

// -----

// A channels-last max pooling without padding reads its input as it is
// (padding 0; a 2x2 window at strides 2, dilations 1). One whose output
// starts from +0.0 (not ONNX's MaxPool: the loop stays), one whose body
// takes the minimum, and one in NCHW order (the window along the last two
// dims) keep their loops.
#mq_pin = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d4, d2 * 2 + d5, d3)>
#mq_nchw = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#mq_win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#mq_pout = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @max_pool_unpadded(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<2x4x6x8xf32>
// CHECK-NOT: linalg.fill
// CHECK: memref.extract_aligned_pointer_as_index %[[X]] :
// CHECK: call @dist_rt_maxpool2d_nhwc_f32(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c2_i64{{[_0-9]*}}, %c2_i64{{[_0-9]*}}, %c2_i64{{[_0-9]*}}, %c2_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}})
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @max_pool_zero_init(
// CHECK-NOT: call
// CHECK: linalg.generic
// CHECK-LABEL: func.func @min_pool(
// CHECK-NOT: call
// CHECK: linalg.generic
// CHECK-LABEL: func.func @max_pool_nchw(
// CHECK-NOT: call
// CHECK: linalg.generic
func.func @max_pool_unpadded(%x: memref<2x4x6x8xf32>) -> memref<2x2x3x8xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %win = memref.alloc() : memref<2x2xf32>
  %out = memref.alloc() : memref<2x2x3x8xf32>
  linalg.fill ins(%ninf : f32) outs(%out : memref<2x2x3x8xf32>)
  linalg.generic {indexing_maps = [#mq_pin, #mq_win, #mq_pout], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %win : memref<2x4x6x8xf32>, memref<2x2xf32>) outs(%out : memref<2x2x3x8xf32>) {
  ^bb0(%in: f32, %k: f32, %o: f32):
    %r = arith.maximumf %o, %in : f32
    linalg.yield %r : f32
  }
  return %out : memref<2x2x3x8xf32>
}
func.func @max_pool_zero_init(%x: memref<2x4x6x8xf32>) -> memref<2x2x3x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %win = memref.alloc() : memref<2x2xf32>
  %out = memref.alloc() : memref<2x2x3x8xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<2x2x3x8xf32>)
  linalg.generic {indexing_maps = [#mq_pin, #mq_win, #mq_pout], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %win : memref<2x4x6x8xf32>, memref<2x2xf32>) outs(%out : memref<2x2x3x8xf32>) {
  ^bb0(%in: f32, %k: f32, %o: f32):
    %r = arith.maximumf %in, %o : f32
    linalg.yield %r : f32
  }
  return %out : memref<2x2x3x8xf32>
}
func.func @min_pool(%x: memref<2x4x6x8xf32>) -> memref<2x2x3x8xf32> {
  %inf = arith.constant 0x7F800000 : f32
  %win = memref.alloc() : memref<2x2xf32>
  %out = memref.alloc() : memref<2x2x3x8xf32>
  linalg.fill ins(%inf : f32) outs(%out : memref<2x2x3x8xf32>)
  linalg.generic {indexing_maps = [#mq_pin, #mq_win, #mq_pout], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %win : memref<2x4x6x8xf32>, memref<2x2xf32>) outs(%out : memref<2x2x3x8xf32>) {
  ^bb0(%in: f32, %k: f32, %o: f32):
    %r = arith.minimumf %in, %o : f32
    linalg.yield %r : f32
  }
  return %out : memref<2x2x3x8xf32>
}
func.func @max_pool_nchw(%x: memref<2x8x4x6xf32>) -> memref<2x8x2x3xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %win = memref.alloc() : memref<2x2xf32>
  %out = memref.alloc() : memref<2x8x2x3xf32>
  linalg.fill ins(%ninf : f32) outs(%out : memref<2x8x2x3xf32>)
  linalg.generic {indexing_maps = [#mq_nchw, #mq_win, #mq_pout], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %win : memref<2x8x4x6xf32>, memref<2x2xf32>) outs(%out : memref<2x8x2x3xf32>) {
  ^bb0(%in: f32, %k: f32, %o: f32):
    %r = arith.maximumf %in, %o : f32
    linalg.yield %r : f32
  }
  return %out : memref<2x8x2x3xf32>
}

// -----

// The output's buffer is written whole (here a fill) after the ReLU6 and
// before a view of it made earlier is read again (MobileNetV2's expansion
// output, whose buffer the depthwise layer's ReLU6 reuses before the
// projection reads it): its contents are dead after the ReLU6, which goes
// into the call (flags 4), writing the ReLU6's buffer. When the view is
// read before the buffer is written, the ReLU6 stays.
#cw_in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d5, d2 + d6, d3, d7)>
#cw_w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d7, d5, d6)>
#cw_out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
#cw_id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @channels_last_buffer_rewritten(
// CHECK-SAME: %[[IMG:[a-z0-9]+]]: memref<1x4x4x8xf32>
// CHECK-NOT: linalg.generic
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[IMG]] {{.*}} {dist.call_overwrites}
// CHECK: memref.extract_aligned_pointer_as_index %[[VIEW]] :
// CHECK: call @dist_rt_conv2d_nhwc_f32({{.*}}, %c4_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK: linalg.fill
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @channels_last_buffer_read_first(
// CHECK: call @dist_rt_conv2d_nhwc_f32({{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK: linalg.generic
// CHECK: arith.cmpf olt
// CHECK: call @dist_rt_conv2d_nhwc_f32(
// CHECK: linalg.fill
func.func @channels_last_buffer_rewritten(%img: memref<1x4x4x8xf32>, %x: memref<1x4x4x8xf32>, %w: memref<8x8x1x1xf32>, %out: memref<1x4x4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %six = arith.constant 6.000000e+00 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<1x4x4x8xf32>)
  %x5 = memref.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  %w5 = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 8, 8, 1, 1] : memref<8x8x1x1xf32> into memref<1x8x8x1x1xf32>
  %a5 = memref.expand_shape %a [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  linalg.generic {indexing_maps = [#cw_in, #cw_w, #cw_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x5, %w5 : memref<1x4x4x1x8xf32>, memref<1x8x8x1x1xf32>) outs(%a5 : memref<1x4x4x1x8xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%i: f32, %c: f32, %o: f32):
    %m = arith.mulf %i, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#cw_id, #cw_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<1x4x4x8xf32>) outs(%img : memref<1x4x4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %lt = arith.cmpf olt, %in, %zero : f32
    %lo = arith.select %lt, %zero, %in : f32
    %gt = arith.cmpf ogt, %lo, %six : f32
    %hi = arith.select %gt, %six, %lo : f32
    linalg.yield %hi : f32
  }
  linalg.fill ins(%one : f32) outs(%a : memref<1x4x4x8xf32>)
  %out5 = memref.expand_shape %out [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x4x4x8xf32>)
  linalg.generic {indexing_maps = [#cw_in, #cw_w, #cw_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%a5, %w5 : memref<1x4x4x1x8xf32>, memref<1x8x8x1x1xf32>) outs(%out5 : memref<1x4x4x1x8xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%i: f32, %c: f32, %o: f32):
    %m = arith.mulf %i, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  memref.dealloc %a : memref<1x4x4x8xf32>
  return
}
func.func @channels_last_buffer_read_first(%img: memref<1x4x4x8xf32>, %x: memref<1x4x4x8xf32>, %w: memref<8x8x1x1xf32>, %out: memref<1x4x4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %six = arith.constant 6.000000e+00 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<1x4x4x8xf32>)
  %x5 = memref.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  %w5 = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 8, 8, 1, 1] : memref<8x8x1x1xf32> into memref<1x8x8x1x1xf32>
  %a5 = memref.expand_shape %a [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  linalg.generic {indexing_maps = [#cw_in, #cw_w, #cw_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x5, %w5 : memref<1x4x4x1x8xf32>, memref<1x8x8x1x1xf32>) outs(%a5 : memref<1x4x4x1x8xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%i: f32, %c: f32, %o: f32):
    %m = arith.mulf %i, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#cw_id, #cw_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<1x4x4x8xf32>) outs(%img : memref<1x4x4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %lt = arith.cmpf olt, %in, %zero : f32
    %lo = arith.select %lt, %zero, %in : f32
    %gt = arith.cmpf ogt, %lo, %six : f32
    %hi = arith.select %gt, %six, %lo : f32
    linalg.yield %hi : f32
  }
  %out5 = memref.expand_shape %out [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x4x4x8xf32>)
  linalg.generic {indexing_maps = [#cw_in, #cw_w, #cw_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%a5, %w5 : memref<1x4x4x1x8xf32>, memref<1x8x8x1x1xf32>) outs(%out5 : memref<1x4x4x1x8xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%i: f32, %c: f32, %o: f32):
    %m = arith.mulf %i, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%one : f32) outs(%a : memref<1x4x4x8xf32>)
  memref.dealloc %a : memref<1x4x4x8xf32>
  return
}

// -----

// A residual connection's Add (and ReLU) written over its other operand
// after a channels-last layer (ResNet's identity blocks, MobileNetV2's
// inverted residuals): the call goes at the Add's place and accumulates
// onto that operand with its bias and ReLU (flags 1 | 2), not marked as
// overwriting it; the Add's loop goes. An Add into a third buffer stays.
#cr_in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 + d5, d2 + d6, d3, d7)>
#cr_w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d7, d5, d6)>
#cr_out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
#cr_bias = affine_map<(d0, d1, d2, d3) -> (d3)>
#cr_id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @channels_last_residual(
// CHECK-SAME: %[[R:[a-z0-9]+]]: memref<1x4x4x8xf32>
// CHECK-NOT: linalg.generic
// CHECK: %[[VIEW:.*]] = memref.expand_shape %[[R]] {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref
// CHECK: memref.extract_aligned_pointer_as_index %[[VIEW]] :
// CHECK: call @dist_rt_conv2d_nhwc_f32({{.*}}, %c3_i64{{[_0-9]*}}) :
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @channels_last_residual_elsewhere(
// CHECK: call @dist_rt_conv2d_nhwc_f32({{.*}}, %c0_i64{{[_0-9]*}}) :
// CHECK: linalg.generic
// CHECK: arith.addf
func.func @channels_last_residual(%r: memref<1x4x4x8xf32>, %x: memref<1x4x4x8xf32>, %w: memref<8x8x1x1xf32>, %b: memref<8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  linalg.generic {indexing_maps = [#cr_bias, #cr_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%b : memref<8xf32>) outs(%a : memref<1x4x4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %x5 = memref.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  %w5 = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 8, 8, 1, 1] : memref<8x8x1x1xf32> into memref<1x8x8x1x1xf32>
  %a5 = memref.expand_shape %a [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  linalg.generic {indexing_maps = [#cr_in, #cr_w, #cr_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x5, %w5 : memref<1x4x4x1x8xf32>, memref<1x8x8x1x1xf32>) outs(%a5 : memref<1x4x4x1x8xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%i: f32, %c: f32, %o: f32):
    %m = arith.mulf %i, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#cr_id, #cr_id, #cr_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r, %a : memref<1x4x4x8xf32>, memref<1x4x4x8xf32>) outs(%r : memref<1x4x4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %o: f32):
    %s = arith.addf %in, %in2 : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  }
  memref.dealloc %a : memref<1x4x4x8xf32>
  return
}
func.func @channels_last_residual_elsewhere(%r: memref<1x4x4x8xf32>, %x: memref<1x4x4x8xf32>, %w: memref<8x8x1x1xf32>, %b: memref<8xf32>, %y: memref<1x4x4x8xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  linalg.generic {indexing_maps = [#cr_bias, #cr_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%b : memref<8xf32>) outs(%a : memref<1x4x4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %x5 = memref.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  %w5 = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 8, 8, 1, 1] : memref<8x8x1x1xf32> into memref<1x8x8x1x1xf32>
  %a5 = memref.expand_shape %a [[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 1, 8] : memref<1x4x4x8xf32> into memref<1x4x4x1x8xf32>
  linalg.generic {indexing_maps = [#cr_in, #cr_w, #cr_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x5, %w5 : memref<1x4x4x1x8xf32>, memref<1x8x8x1x1xf32>) outs(%a5 : memref<1x4x4x1x8xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%i: f32, %c: f32, %o: f32):
    %m = arith.mulf %i, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#cr_id, #cr_id, #cr_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a, %r : memref<1x4x4x8xf32>, memref<1x4x4x8xf32>) outs(%y : memref<1x4x4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %o: f32):
    %s = arith.addf %in, %in2 : f32
    linalg.yield %s : f32
  }
  memref.dealloc %a : memref<1x4x4x8xf32>
  return
}

// -----

// A generic marked as a channels-last convolution whose input map is not
// the lowering's (its image read through a transpose's map) stays a loop.
#cm_in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d7, d1 + d5, d2 + d6, d3)>
#cm_w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d4, d7, d5, d6)>
#cm_out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @channels_last_other_maps(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_f32
// CHECK: linalg.generic
// CHECK-NOT: call @dist_rt_conv2d_nhwc_f32
// CHECK: return
func.func @channels_last_other_maps(%x: memref<1x8x4x4x1xf32>, %w: memref<1x8x8x1x1xf32>, %out: memref<1x4x4x1x8xf32>) {
  linalg.generic {indexing_maps = [#cm_in, #cm_w, #cm_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : memref<1x8x4x4x1xf32>, memref<1x8x8x1x1xf32>) outs(%out : memref<1x4x4x1x8xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1>} {
  ^bb0(%i: f32, %c: f32, %o: f32):
    %m = arith.mulf %i, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A 3-D channels-last convolution (dist.channels_last_conv with three
// strides and three dilations, loops n, od, oh, ow, g, fg, kd, kh, kw, cg)
// becomes a call of dist_rt_conv3d_nhwc_f32 whose padding is that of the
// zero-bordered buffer its input's writer wrote (depth 1 and 1, rows 1 and
// 1, columns 2 and 0): the writer writes a dense image instead and the
// bordered buffer goes. Its zero init goes too (the call overwrites).
#c3_in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d0, d1 + d6, d2 + d7, d3 + d8, d4, d9)>
#c3_w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d4, d5, d9, d6, d7, d8)>
#c3_out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d0, d1, d2, d3, d4, d5)>
#c3_id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @channels_last_3d(
// CHECK: %[[IMAGE:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x4x5x6x8xf32>
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[IMAGE]] : memref<1x4x5x6x8xf32>)
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill
// CHECK: call @dist_rt_conv3d_nhwc_f32(%{{[0-9]+}}, %{{[0-9]+}}, %c8_i64{{[_0-9]*}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c2_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c0_i64{{[_0-9]*}}, %{{[0-9]+}}, %cst{{[_0-9]*}}, %cst{{[_0-9]*}}, %c0_i64{{[_0-9]*}}) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
// CHECK: memref.dealloc %[[IMAGE]]
func.func @channels_last_3d(%x: memref<1x4x5x6x8xf32>, %w: memref<16x8x3x3x3xf32>) -> memref<1x4x5x6x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %p = memref.alloc() : memref<1x6x7x8x8xf32>
  %border = memref.subview %p[0, 0, 0, 0, 0] [1, 1, 7, 8, 8] [1, 1, 1, 1, 1] : memref<1x6x7x8x8xf32> to memref<1x1x7x8x8xf32, strided<[2688, 448, 64, 8, 1]>>
  linalg.fill ins(%zero : f32) outs(%border : memref<1x1x7x8x8xf32, strided<[2688, 448, 64, 8, 1]>>)
  %interior = memref.subview %p[0, 1, 1, 2, 0] [1, 4, 5, 6, 8] [1, 1, 1, 1, 1] : memref<1x6x7x8x8xf32> to memref<1x4x5x6x8xf32, strided<[2688, 448, 64, 8, 1], offset: 528>>
  linalg.generic {indexing_maps = [#c3_id, #c3_id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x4x5x6x8xf32>) outs(%interior : memref<1x4x5x6x8xf32, strided<[2688, 448, 64, 8, 1], offset: 528>>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  %out = memref.alloc() : memref<1x4x5x6x16xf32>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x4x5x6x16xf32>)
  %x6 = memref.expand_shape %p [[0], [1], [2], [3], [4, 5]] output_shape [1, 6, 7, 8, 1, 8] : memref<1x6x7x8x8xf32> into memref<1x6x7x8x1x8xf32>
  %w6 = memref.expand_shape %w [[0, 1], [2], [3], [4], [5]] output_shape [1, 16, 8, 3, 3, 3] : memref<16x8x3x3x3xf32> into memref<1x16x8x3x3x3xf32>
  %o6 = memref.expand_shape %out [[0], [1], [2], [3], [4, 5]] output_shape [1, 4, 5, 6, 1, 16] : memref<1x4x5x6x16xf32> into memref<1x4x5x6x1x16xf32>
  linalg.generic {indexing_maps = [#c3_in, #c3_w, #c3_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x6, %w6 : memref<1x6x7x8x1x8xf32>, memref<1x16x8x3x3x3xf32>) outs(%o6 : memref<1x4x5x6x1x16xf32>) attrs = {dist.channels_last_conv = array<i64: 1, 1, 1, 1, 1, 1>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  memref.dealloc %p : memref<1x6x7x8x8xf32>
  return %out : memref<1x4x5x6x16xf32>
}

// -----

// A transposed channels-last convolution (dist.channels_last_conv_transpose:
// each input position's product added to output (i*2 + kh, j*2 + kw))
// becomes a call of dist_rt_conv2d_nhwc_f32 with flag 32 (transposed; c =
// 16 input and f = 8 output channels a group, the 5x5 input, the 10x10
// output, no padding), the bias broadcast into it; the ReLU after it adds
// flag 2. One whose maps differ from the lowering's stays a loop nest.
#ct_in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d7)>
#ct_w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d7, d4, d5, d6)>
#ct_out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 * 2 + d5, d2 * 2 + d6, d3, d4)>
#ct_bad = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 * 2 + d5, d2 + d6, d3, d4)>
#ct_bias = affine_map<(d0, d1, d2, d3) -> (d3)>
#ct_id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @channels_last_transposed(
// CHECK-NOT: linalg.generic
// CHECK: call @dist_rt_conv2d_nhwc_f32(%{{[0-9]+}}, %{{[0-9]+}}, %c16_i64{{[_0-9]*}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c2_i64{{[_0-9]*}}, %c2_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %cst{{[_0-9]*}}, %cst{{[_0-9]*}}, %c34_i64)
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @channels_last_transposed_other_maps(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_f32
// CHECK: linalg.generic
// CHECK-SAME: dist.channels_last_conv_transpose
func.func @channels_last_transposed(%x: memref<1x5x5x16xf32>, %w: memref<16x8x2x2xf32>, %b: memref<8xf32>) -> memref<1x10x10x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %out = memref.alloc() : memref<1x10x10x8xf32>
  linalg.generic {indexing_maps = [#ct_bias, #ct_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%b : memref<8xf32>) outs(%out : memref<1x10x10x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %x5 = memref.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 5, 5, 1, 16] : memref<1x5x5x16xf32> into memref<1x5x5x1x16xf32>
  %w5 = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 16, 8, 2, 2] : memref<16x8x2x2xf32> into memref<1x16x8x2x2xf32>
  %o5 = memref.expand_shape %out [[0], [1], [2], [3, 4]] output_shape [1, 10, 10, 1, 8] : memref<1x10x10x8xf32> into memref<1x10x10x1x8xf32>
  linalg.generic {indexing_maps = [#ct_in, #ct_w, #ct_out], iterator_types = ["parallel", "reduction", "reduction", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x5, %w5 : memref<1x5x5x1x16xf32>, memref<1x16x8x2x2xf32>) outs(%o5 : memref<1x10x10x1x8xf32>) attrs = {dist.channels_last_conv_transpose = array<i64: 2, 2, 1, 1>} {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#ct_id, #ct_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%out : memref<1x10x10x8xf32>) outs(%out : memref<1x10x10x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  return %out : memref<1x10x10x8xf32>
}
func.func @channels_last_transposed_other_maps(%x: memref<1x5x5x1x16xf32>, %w: memref<1x16x8x2x2xf32>, %o: memref<1x10x6x1x8xf32>) {
  linalg.generic {indexing_maps = [#ct_in, #ct_w, #ct_bad], iterator_types = ["parallel", "reduction", "reduction", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : memref<1x5x5x1x16xf32>, memref<1x16x8x2x2xf32>) outs(%o : memref<1x10x6x1x8xf32>) attrs = {dist.channels_last_conv_transpose = array<i64: 2, 2, 1, 1>} {
  ^bb0(%a: f32, %c: f32, %o2: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %o2, %m : f32
    linalg.yield %s : f32
  }
  return
}
