// RUN: dist-opt %s --split-input-file --dist-lower-to-linalg=conv=direct | FileCheck %s --check-prefix=DIRECT
// RUN: dist-opt %s --split-input-file --dist-lower-to-linalg=conv=im2col | FileCheck %s --check-prefix=IM2COL
// RUN: dist-opt %s --split-input-file --dist-lower-to-linalg=conv=auto | FileCheck %s --check-prefix=AUTO-%host_simd
// RUN: dist-opt %s --split-input-file --dist-lower-to-linalg=conv=nhwc | FileCheck %s --check-prefix=NHWC
// RUN: not dist-opt %s --split-input-file --dist-lower-to-linalg=conv=fft 2>&1 | FileCheck %s --check-prefix=BAD

// With conv=direct a 2-D f32 convolution becomes linalg.conv_2d_nchw_fchw on
// the padded input, its strides and dilations kept, into the bias
// broadcast; a 1x1 unit-stride one stays a plain product (no columns to
// write) and f64 stays im2col + GEMM. With conv=im2col none is direct.

// DIRECT-LABEL: func.func @main(
// DIRECT: tensor.pad
// DIRECT: linalg.conv_2d_nchw_fchw {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<[1, 2]> : tensor<2xi64>} ins(%{{.*}}, %{{.*}} : tensor<2x3x12x11xf32>, tensor<8x3x3x3xf32>) outs(%{{.*}} : tensor<2x8x8x5xf32>)
// DIRECT-NOT: linalg.conv_2d_nchw_fchw
// DIRECT: return
// IM2COL-NOT: linalg.conv_2d_nchw_fchw
// BAD: error: unknown conv kernel 'fft' (expected auto, nchw, direct, im2col or nhwc)
func.func @main(%x: tensor<2x3x10x10xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>,
                %w1: tensor<8x3x1x1xf32>, %xd: tensor<2x3x10x10xf64>, %wd: tensor<8x3x3x3xf64>)
    -> (tensor<2x8x8x5xf32>, tensor<2x8x10x10xf32>, tensor<2x8x8x8xf64>) {
  %0 = dist.conv %x, %w bias %b {dilations = array<i64: 2, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 2>} : (tensor<2x3x10x10xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<2x8x8x5xf32>
  %1 = dist.conv %x, %w1 {kernel_shape = array<i64: 1, 1>} : (tensor<2x3x10x10xf32>, tensor<8x3x1x1xf32>) -> tensor<2x8x10x10xf32>
  %2 = dist.conv %xd, %wd {kernel_shape = array<i64: 3, 3>} : (tensor<2x3x10x10xf64>, tensor<8x3x3x3xf64>) -> tensor<2x8x8x8xf64>
  return %0, %1, %2 : tensor<2x8x8x5xf32>, tensor<2x8x10x10xf32>, tensor<2x8x8x8xf64>
}

// -----

// A weight gradient with conv=direct: one generic over (f, c, i, j, b, y, x)
// reading dy and the padded input at (y*s + i*d, x*s + j*d), into a zero
// fill; no im2col columns. With conv=im2col the columns come back.
// DIRECT-LABEL: func.func @weight_grad(
// DIRECT: tensor.pad
// DIRECT: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x8x5x5xf32>, tensor<2x3x11x11xf32>) outs(%{{.*}} : tensor<8x3x3x3xf32>)
// DIRECT-NOT: tensor.collapse_shape
// DIRECT: return
// IM2COL-LABEL: func.func @weight_grad(
// IM2COL: tensor.collapse_shape
func.func @weight_grad(%x: tensor<2x3x10x10xf32>, %dy: tensor<2x8x5x5xf32>) -> tensor<8x3x3x3xf32> {
  %0 = dist.conv_weight_grad %x, %dy {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x10x10xf32>, tensor<2x8x5x5xf32>) -> tensor<8x3x3x3xf32>
  return %0 : tensor<8x3x3x3xf32>
}

// -----

// A dilated 1-D convolution and a strided 3-D one become im2col columns
// (a gather generic over (n, c, k..., o...)) and one product over
// [F, C*K...] x [C*K..., O...], whichever kernel is asked for: no loop nest
// over every tap (dist-contractions-to-runtime hands the product to the
// runtime's GEMM).

// DIRECT-LABEL: func.func @conv_1d_3d(
// DIRECT: linalg.generic
// DIRECT-SAME: ins(%{{.*}} : tensor<1x16x108xf32>) outs(%{{.*}} : tensor<1x16x3x100xf32>)
// DIRECT: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3]] : tensor<1x16x3x100xf32> into tensor<1x48x100xf32>
// DIRECT: linalg.generic
// DIRECT-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// DIRECT-SAME: ins(%{{.*}}, %{{.*}} : tensor<32x48xf32>, tensor<1x48x100xf32>) outs(%{{.*}} : tensor<1x32x100xf32>)
// DIRECT: linalg.generic
// DIRECT-SAME: ins(%{{.*}} : tensor<2x4x9x9x9xf32>) outs(%{{.*}} : tensor<2x4x3x3x3x4x4x4xf32>)
// DIRECT: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3, 4], [5, 6, 7]] : tensor<2x4x3x3x3x4x4x4xf32> into tensor<2x108x64xf32>
// DIRECT: linalg.generic
// DIRECT-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// DIRECT-SAME: ins(%{{.*}}, %{{.*}} : tensor<8x108xf32>, tensor<2x108x64xf32>) outs(%{{.*}} : tensor<2x8x64xf32>)
// DIRECT: tensor.expand_shape
// DIRECT-NOT: linalg.conv
// DIRECT: return

// With conv=nhwc the 1-D one stays so and the 3-D one becomes the
// channels-last generic (loops n, od, oh, ow, g, fg, kd, kh, kw, cg) on
// the input transposed to [N, D, H, W, C], its strides and dilations in
// dist.channels_last_conv, transposed back to NCDHW after.
// NHWC-DAG: #[[$IN3:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d0, d1 * 2 + d6, d2 * 2 + d7, d3 * 2 + d8, d4, d9)>
// NHWC-DAG: #[[$W3:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d4, d5, d9, d6, d7, d8)>
// NHWC-DAG: #[[$OUT3:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d0, d1, d2, d3, d4, d5)>
// NHWC-LABEL: func.func @conv_1d_3d(
// NHWC: tensor<1x16x3x100xf32>
// NHWC: linalg.transpose ins(%{{.*}} : tensor<2x4x9x9x9xf32>) outs(%{{.*}} : tensor<2x9x9x9x4xf32>) permutation = [0, 2, 3, 4, 1]
// NHWC: linalg.generic {indexing_maps = [#[[$IN3]], #[[$W3]], #[[$OUT3]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]}
// NHWC-SAME: ins(%{{.*}}, %{{.*}} : tensor<2x9x9x9x1x4xf32>, tensor<1x8x4x3x3x3xf32>) outs(%{{.*}} : tensor<2x4x4x4x1x8xf32>)
// NHWC-SAME: dist.channels_last_conv = array<i64: 2, 2, 2, 1, 1, 1>
// NHWC: linalg.transpose ins(%{{.*}} : tensor<2x4x4x4x8xf32>) outs(%{{.*}} : tensor<2x8x4x4x4xf32>) permutation = [0, 4, 1, 2, 3]
// NHWC: return
func.func @conv_1d_3d(%x: tensor<1x16x100xf32>, %w: tensor<32x16x3xf32>,
                      %v: tensor<2x4x9x9x9xf32>, %u: tensor<8x4x3x3x3xf32>)
    -> (tensor<1x32x100xf32>, tensor<2x8x4x4x4xf32>) {
  %0 = dist.conv %x, %w {dilations = array<i64: 4>, kernel_shape = array<i64: 3>, pads = array<i64: 8, 0>} : (tensor<1x16x100xf32>, tensor<32x16x3xf32>) -> tensor<1x32x100xf32>
  %1 = dist.conv %v, %u {kernel_shape = array<i64: 3, 3, 3>, strides = array<i64: 2, 2, 2>} : (tensor<2x4x9x9x9xf32>, tensor<8x4x3x3x3xf32>) -> tensor<2x8x4x4x4xf32>
  return %0, %1 : tensor<1x32x100xf32>, tensor<2x8x4x4x4xf32>
}

// -----

// A transposed convolution (one group, f32) is one product, every tap's
// contribution cols[n, (f, k...), i...] = W^T in (the weight [C, F, 2, 2]
// read as [C, F*4], transposed), then col2im one tap at a time: tap (kh, kw)
// adds its columns into the strided slice of the bias broadcast it reaches
// (rows kh*d - pad + 2q), no loop over the input channels or over every
// (output, tap) pair. With pads the slices are clipped to the output: tap
// (0, 0) of a 3x3 kernel, stride 2, pads 1 and output_padding 1 on a 5x5
// input reaches outputs 1, 3, 5, 7 from inputs 1 to 4.

// DIRECT-LABEL: func.func @conv_transpose(
// DIRECT: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : tensor<16x8x2x2xf32> into tensor<16x32xf32>
// DIRECT: linalg.generic
// DIRECT-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// DIRECT-SAME: ins(%{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<1x16x25xf32>) outs(%{{.*}} : tensor<1x32x25xf32>)
// DIRECT: %[[COLS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2, 3], [4, 5]]
// DIRECT-SAME: into tensor<1x8x2x2x5x5xf32>
// DIRECT: tensor.extract_slice %[[COLS]][0, 0, 0, 0, 0, 0] [1, 8, 1, 1, 5, 5] [1, 1, 1, 1, 1, 1] : tensor<1x8x2x2x5x5xf32> to tensor<1x8x5x5xf32>
// DIRECT: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [1, 8, 5, 5] [1, 1, 2, 2] : tensor<1x8x10x10xf32> to tensor<1x8x5x5xf32>
// DIRECT: linalg.generic
// DIRECT-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// DIRECT: arith.addf
// DIRECT: tensor.insert_slice %{{.*}}[0, 0, 0, 0] [1, 8, 5, 5] [1, 1, 2, 2]
// DIRECT: tensor.extract_slice %[[COLS]][0, 0, 0, 1, 0, 0]
// DIRECT: tensor.insert_slice %{{.*}}[0, 0, 0, 1] [1, 8, 5, 5] [1, 1, 2, 2]
// DIRECT: tensor.extract_slice %[[COLS]][0, 0, 1, 0, 0, 0]
// DIRECT: tensor.insert_slice %{{.*}}[0, 0, 1, 0] [1, 8, 5, 5] [1, 1, 2, 2]
// DIRECT: tensor.extract_slice %[[COLS]][0, 0, 1, 1, 0, 0]
// DIRECT: %[[LAST:.*]] = tensor.insert_slice %{{.*}}[0, 0, 1, 1] [1, 8, 5, 5] [1, 1, 2, 2]
// DIRECT-NOT: tensor.extract
// DIRECT: return %[[LAST]]
// With conv=nhwc a transposed convolution becomes the channels-last
// generic over (n, i, j, g, fg, kh, kw, cg) that adds each input
// position's product to output (i*2 + kh, j*2 + kw) of the bias broadcast
// (only n, g and fg parallel), marked dist.channels_last_conv_transpose;
// with pads and output_padding into a whole 11x11 output that is then
// cropped to rows and columns [1, 11).
// NHWC-DAG: #[[$TIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d7)>
// NHWC-DAG: #[[$TW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d3, d7, d4, d5, d6)>
// NHWC-DAG: #[[$TOUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1 * 2 + d5, d2 * 2 + d6, d3, d4)>
// NHWC-LABEL: func.func @conv_transpose(
// NHWC: linalg.transpose ins(%{{.*}} : tensor<1x16x5x5xf32>) outs(%{{.*}} : tensor<1x5x5x16xf32>) permutation = [0, 2, 3, 1]
// NHWC: %[[BIAS:.*]] = linalg.generic
// NHWC-SAME: ins(%{{.*}} : tensor<8xf32>) outs(%{{.*}} : tensor<1x10x10x8xf32>)
// NHWC: %[[INIT:.*]] = tensor.expand_shape %[[BIAS]]
// NHWC: linalg.generic {indexing_maps = [#[[$TIN]], #[[$TW]], #[[$TOUT]]], iterator_types = ["parallel", "reduction", "reduction", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// NHWC-SAME: ins(%{{.*}}, %{{.*}} : tensor<1x5x5x1x16xf32>, tensor<1x16x8x2x2xf32>) outs(%[[INIT]] : tensor<1x10x10x1x8xf32>)
// NHWC-SAME: dist.channels_last_conv_transpose = array<i64: 2, 2, 1, 1>
// NHWC-NOT: tensor.extract_slice
// NHWC: linalg.transpose ins(%{{.*}} : tensor<1x10x10x8xf32>) outs(%{{.*}} : tensor<1x8x10x10xf32>) permutation = [0, 3, 1, 2]
// NHWC-LABEL: func.func @conv_transpose_padded(
// NHWC: linalg.fill
// NHWC-SAME: tensor<1x11x11x8xf32>
// NHWC: linalg.generic
// NHWC-SAME: outs(%{{.*}} : tensor<1x11x11x1x8xf32>)
// NHWC-SAME: dist.channels_last_conv_transpose = array<i64: 2, 2, 1, 1>
// NHWC: tensor.extract_slice %{{.*}}[0, 1, 1, 0] [1, 10, 10, 8] [1, 1, 1, 1] : tensor<1x11x11x8xf32> to tensor<1x10x10x8xf32>
// NHWC: linalg.transpose
// NHWC: return
func.func @conv_transpose(%x: tensor<1x16x5x5xf32>, %w: tensor<16x8x2x2xf32>, %b: tensor<8xf32>) -> tensor<1x8x10x10xf32> {
  %0 = dist.conv_transpose %x, %w bias %b {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x5x5xf32>, tensor<16x8x2x2xf32>, tensor<8xf32>) -> tensor<1x8x10x10xf32>
  return %0 : tensor<1x8x10x10xf32>
}

// DIRECT-LABEL: func.func @conv_transpose_padded(
// DIRECT: %[[COLS:.*]] = tensor.expand_shape {{.*}} into tensor<1x8x3x3x5x5xf32>
// DIRECT: tensor.extract_slice %[[COLS]][0, 0, 0, 0, 1, 1] [1, 8, 1, 1, 4, 4] [1, 1, 1, 1, 1, 1] : tensor<1x8x3x3x5x5xf32> to tensor<1x8x4x4xf32>
// DIRECT: tensor.extract_slice %{{.*}}[0, 0, 1, 1] [1, 8, 4, 4] [1, 1, 2, 2] : tensor<1x8x10x10xf32> to tensor<1x8x4x4xf32>
// DIRECT: tensor.extract_slice %[[COLS]][0, 0, 0, 1, 1, 0] [1, 8, 1, 1, 4, 5] [1, 1, 1, 1, 1, 1] : tensor<1x8x3x3x5x5xf32> to tensor<1x8x4x5xf32>
// DIRECT: tensor.extract_slice %{{.*}}[0, 0, 1, 0] [1, 8, 4, 5] [1, 1, 2, 2] : tensor<1x8x10x10xf32> to tensor<1x8x4x5xf32>
// DIRECT: tensor.extract_slice %[[COLS]][0, 0, 2, 2, 0, 0] [1, 8, 1, 1, 5, 5] [1, 1, 1, 1, 1, 1] : tensor<1x8x3x3x5x5xf32> to tensor<1x8x5x5xf32>
// DIRECT: tensor.extract_slice %{{.*}}[0, 0, 1, 1] [1, 8, 5, 5] [1, 1, 2, 2] : tensor<1x8x10x10xf32> to tensor<1x8x5x5xf32>
// DIRECT: return
func.func @conv_transpose_padded(%x: tensor<1x16x5x5xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x8x10x10xf32> {
  %0 = dist.conv_transpose %x, %w {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>} : (tensor<1x16x5x5xf32>, tensor<16x8x3x3xf32>) -> tensor<1x8x10x10xf32>
  return %0 : tensor<1x8x10x10xf32>
}

// -----

// Grouped and depthwise 2-D f32 convolutions with conv=direct become
// linalg.conv_2d_ngchw_gfchw on the padded input, its channels split into
// groups (input [N, G, C/G, ...], weight [G, F/G, C/G, ...], the bias
// broadcast [N, G, F/G, ...]), the result collapsed back; a grouped 1x1 one
// too (each group's product is small). f64 and conv=im2col keep the loop
// nest over groups.

// DIRECT-LABEL: func.func @grouped(
// DIRECT: tensor.pad
// DIRECT-DAG: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2], [3], [4]] output_shape [4, 4, 2, 3, 3] : tensor<16x2x3x3xf32> into tensor<4x4x2x3x3xf32>
// DIRECT-DAG: tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] output_shape [2, 4, 2, 10, 10] : tensor<2x8x10x10xf32> into tensor<2x4x2x10x10xf32>
// DIRECT-DAG: tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] output_shape [2, 4, 4, 8, 8] : tensor<2x16x8x8xf32> into tensor<2x4x4x8x8xf32>
// DIRECT: linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%{{.*}}, %{{.*}} : tensor<2x4x2x10x10xf32>, tensor<4x4x2x3x3xf32>) outs(%{{.*}} : tensor<2x4x4x8x8xf32>)
// DIRECT: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] : tensor<2x4x4x8x8xf32> into tensor<2x16x8x8xf32>
// DIRECT: linalg.conv_2d_ngchw_gfchw {dilations = dense<2> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%{{.*}}, %{{.*}} : tensor<2x8x1x13x13xf32>, tensor<8x1x1x3x3xf32>) outs(%{{.*}} : tensor<2x8x1x5x5xf32>)
// DIRECT: linalg.conv_2d_ngchw_gfchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x2x4x8x8xf32>, tensor<2x4x4x1x1xf32>) outs(%{{.*}} : tensor<2x2x4x8x8xf32>)
// DIRECT-NOT: linalg.conv_2d_ngchw_gfchw
// DIRECT: return
// IM2COL-LABEL: func.func @grouped(
// IM2COL-NOT: linalg.conv_2d_ngchw_gfchw
// IM2COL: return
func.func @grouped(%x: tensor<2x8x8x8xf32>, %w: tensor<16x2x3x3xf32>, %b: tensor<16xf32>,
                   %wd: tensor<8x1x3x3xf32>, %w1: tensor<8x4x1x1xf32>,
                   %xd: tensor<2x8x8x8xf64>, %wdd: tensor<8x1x3x3xf64>)
    -> (tensor<2x16x8x8xf32>, tensor<2x8x5x5xf32>, tensor<2x8x8x8xf32>, tensor<2x8x6x6xf64>) {
  %0 = dist.conv %x, %w bias %b {group = 4 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x8x8x8xf32>, tensor<16x2x3x3xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32>
  %1 = dist.conv %x, %wd {group = 8 : i64, dilations = array<i64: 2, 2>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>} : (tensor<2x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x5x5xf32>
  %2 = dist.conv %x, %w1 {group = 2 : i64, kernel_shape = array<i64: 1, 1>} : (tensor<2x8x8x8xf32>, tensor<8x4x1x1xf32>) -> tensor<2x8x8x8xf32>
  %3 = dist.conv %xd, %wdd {group = 8 : i64, kernel_shape = array<i64: 3, 3>} : (tensor<2x8x8x8xf64>, tensor<8x1x3x3xf64>) -> tensor<2x8x6x6xf64>
  return %0, %1, %2, %3 : tensor<2x16x8x8xf32>, tensor<2x8x5x5xf32>, tensor<2x8x8x8xf32>, tensor<2x8x6x6xf64>
}

// -----

// conv=auto follows the host (%host_simd in lit.cfg.py): with AVX-512 a
// one-group and both depthwise convolutions run direct, and every grouped
// one (RegNetX-400MF's 2 groups of 16 channels on 112x112 with stride 2
// among them: code generation has no columns for groups, only loops);
// with AVX2 and FMA the depthwise one larger than 3x3 (the runtime's AVX2
// rows; 3x3 ones run faster as generated loops there) and the grouped
// ones, however large (the runtime runs them as products on packed
// filters), the one-group one as im2col and a product; without either,
// none.

// A stem (3 channels, 3x3 at stride 2 on 224 x 224: 27 taps deep) runs
// direct on AVX-512 although its padded image passes 256 KiB and its
// columns stay under 2 MiB; 64 channels on 34 x 34 padded (576 deep, 590
// KiB of columns) stay im2col.
// AUTO-AVX512-LABEL: func.func @auto_choice(
// AUTO-AVX512: linalg.conv_2d_nchw_fchw {{.*}} outs(%{{.*}} : tensor<2x16x8x8xf32>)
// AUTO-AVX512: linalg.conv_2d_ngchw_gfchw {{.*}} tensor<8x1x1x3x3xf32>
// AUTO-AVX512: linalg.conv_2d_ngchw_gfchw {{.*}} tensor<8x1x1x5x5xf32>
// AUTO-AVX512: linalg.conv_2d_ngchw_gfchw {{.*}} tensor<2x8x4x3x3xf32>
// AUTO-AVX512: linalg.conv_2d_ngchw_gfchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x8x122x122xf32>, tensor<2x8x8x3x3xf32>)
// AUTO-AVX512: linalg.conv_2d_ngchw_gfchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x16x113x113xf32>, tensor<2x16x16x3x3xf32>)
// AUTO-AVX512: linalg.conv_2d_nchw_fchw {{.*}} outs(%{{.*}} : tensor<1x16x112x112xf32>)
// AUTO-AVX512-NOT: linalg.conv_2d_n
// AUTO-AVX512: return
// AUTO-AVX2-LABEL: func.func @auto_choice(
// AUTO-AVX2-NOT: linalg.conv_2d_n
// AUTO-AVX2: linalg.conv_2d_ngchw_gfchw {{.*}} tensor<8x1x1x5x5xf32>
// AUTO-AVX2: linalg.conv_2d_ngchw_gfchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x2x4x10x10xf32>, tensor<2x8x4x3x3xf32>)
// AUTO-AVX2: linalg.conv_2d_ngchw_gfchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x8x122x122xf32>, tensor<2x8x8x3x3xf32>)
// AUTO-AVX2: linalg.conv_2d_ngchw_gfchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x16x113x113xf32>, tensor<2x16x16x3x3xf32>)
// AUTO-AVX2-NOT: linalg.conv_2d_n
// AUTO-AVX2: return
// AUTO-PLAIN-LABEL: func.func @auto_choice(
// AUTO-PLAIN-NOT: linalg.conv_2d_n
// AUTO-PLAIN: return
func.func @auto_choice(%x: tensor<2x8x8x8xf32>, %w: tensor<16x8x3x3xf32>,
                       %wd: tensor<8x1x3x3xf32>, %w5: tensor<8x1x5x5xf32>,
                       %wg: tensor<16x4x3x3xf32>, %xl: tensor<1x16x120x120xf32>,
                       %wl: tensor<16x8x3x3xf32>, %xm: tensor<1x32x112x112xf32>,
                       %wm: tensor<32x16x3x3xf32>, %xs: tensor<1x3x224x224xf32>,
                       %ws: tensor<16x3x3x3xf32>, %xk: tensor<1x64x32x32xf32>,
                       %wk: tensor<64x64x3x3xf32>)
    -> (tensor<2x16x8x8xf32>, tensor<2x8x8x8xf32>, tensor<2x8x8x8xf32>,
        tensor<2x16x8x8xf32>, tensor<1x16x120x120xf32>, tensor<1x32x56x56xf32>,
        tensor<1x16x112x112xf32>, tensor<1x64x16x16xf32>) {
  %0 = dist.conv %x, %w {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x8x8xf32>
  %1 = dist.conv %x, %wd {group = 8 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x8x8xf32>
  %2 = dist.conv %x, %w5 {group = 8 : i64, kernel_shape = array<i64: 5, 5>, pads = array<i64: 2, 2, 2, 2>} : (tensor<2x8x8x8xf32>, tensor<8x1x5x5xf32>) -> tensor<2x8x8x8xf32>
  %3 = dist.conv %x, %wg {group = 2 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x8x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<2x16x8x8xf32>
  %4 = dist.conv %xl, %wl {group = 2 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x120x120xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x120x120xf32>
  %5 = dist.conv %xm, %wm {group = 2 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x32x112x112xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x56x56xf32>
  %6 = dist.conv %xs, %ws {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x224x224xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x112x112xf32>
  %7 = dist.conv %xk, %wk {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x64x32x32xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x16x16xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x16x8x8xf32>, tensor<2x8x8x8xf32>, tensor<2x8x8x8xf32>,
                                  tensor<2x16x8x8xf32>, tensor<1x16x120x120xf32>, tensor<1x32x56x56xf32>,
                                  tensor<1x16x112x112xf32>, tensor<1x64x16x16xf32>
}

// -----

// A convolution run as a product (here 1x1: no columns) starts from zeros,
// which the runtime's GEMM sets without reading, and adds its bias after,
// elementwise, where dist-fuse-elementwise can join it with an activation;
// no bias broadcast into the output first.

// DIRECT-LABEL: func.func @product_then_bias(
// DIRECT: linalg.fill
// DIRECT: linalg.generic
// DIRECT-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// DIRECT: linalg.generic
// DIRECT-SAME: ins(%{{.*}}, %{{.*}} : tensor<2x8x10x10xf32>, tensor<8xf32>)
// DIRECT: arith.addf
// DIRECT: return
// IM2COL-LABEL: func.func @product_then_bias(
// IM2COL: linalg.fill
// IM2COL: linalg.generic
// IM2COL-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// IM2COL: linalg.generic
// IM2COL-SAME: ins(%{{.*}}, %{{.*}} : tensor<2x8x10x10xf32>, tensor<8xf32>)
// IM2COL: arith.addf
// IM2COL: return
func.func @product_then_bias(%x: tensor<2x3x10x10xf32>, %w: tensor<8x3x1x1xf32>, %b: tensor<8xf32>) -> tensor<2x8x10x10xf32> {
  %0 = dist.conv %x, %w bias %b {kernel_shape = array<i64: 1, 1>} : (tensor<2x3x10x10xf32>, tensor<8x3x1x1xf32>, tensor<8xf32>) -> tensor<2x8x10x10xf32>
  return %0 : tensor<2x8x10x10xf32>
}

// -----

// Images past 256 KiB padded: direct when im2col's columns for one image
// would pass 2 MiB (64 channels on 128x128: 36 MiB; on 56x56: 7 MiB), im2col
// when not (64 channels on 56x56 with stride 2: 1.8 MiB).

// DIRECT-LABEL: func.func @large_images(
// DIRECT: linalg.conv_2d_nchw_fchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x64x130x130xf32>, tensor<64x64x3x3xf32>)
// DIRECT: linalg.conv_2d_nchw_fchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x64x58x58xf32>, tensor<64x64x3x3xf32>)
// DIRECT-NOT: linalg.conv_2d_nchw_fchw
// DIRECT: return
func.func @large_images(%x: tensor<1x64x128x128xf32>, %y: tensor<1x64x56x56xf32>, %w: tensor<64x64x3x3xf32>)
    -> (tensor<1x64x128x128xf32>, tensor<1x64x56x56xf32>, tensor<1x64x28x28xf32>) {
  %0 = dist.conv %x, %w {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x128x128xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x128x128xf32>
  %1 = dist.conv %y, %w {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x56x56xf32>
  %2 = dist.conv %y, %w {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x28x28xf32>
  return %0, %1, %2 : tensor<1x64x128x128xf32>, tensor<1x64x56x56xf32>, tensor<1x64x28x28xf32>
}
