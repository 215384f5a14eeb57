//===- ConvKernel.h - how 2-D f32 convolutions run -------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The choice between channels-last images on oneDNN, the runtime's direct
// convolution and im2col plus a product, shared by code generation
// (dist-lower-to-linalg's `conv` option), the planner (which prices
// convolutions as codegen runs them) and dist-opt's `--conv` flag.
// Header-only: the plan phase reads it without linking code generation.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_CODEGEN_CONVKERNEL_H
#define DIST_CODEGEN_CONVKERNEL_H

#include "dist/Support/EnumOption.h"

namespace mlir::dist {

/// How 2-D f32 convolutions of one group run.
enum class ConvKernel {
  /// dist-opt's default: ChannelsLast for inference where oneDNN loads on
  /// the compiling host (resolveConvKernel), else as Nchw. In a pass or
  /// pipeline option, as Nchw.
  Auto,
  /// NCHW images: direct when the host has AVX-512, else im2col (and
  /// depthwise ones larger than 3x3 direct when it has AVX2 and FMA).
  Nchw,
  /// The runtime's direct convolution (AVX-512 register tiles).
  Direct,
  /// im2col columns and a matrix product.
  Im2col,
  /// 2-D f32 convolutions on channels-last images, run by oneDNN through
  /// the runtime (dist_rt_conv2d_nhwc_f32); the others as with Auto.
  ChannelsLast,
};

template <>
struct EnumOptionTraits<ConvKernel> {
  static llvm::ArrayRef<EnumOptionValue<ConvKernel>> values() {
    static const EnumOptionValue<ConvKernel> table[] = {
        {ConvKernel::Auto, "auto",
         "nhwc for inference where oneDNN loads here, else nchw"},
        {ConvKernel::Nchw, "nchw",
         "direct when this CPU has AVX-512 (depthwise over 3x3: AVX2), "
         "else im2col"},
        {ConvKernel::Direct, "direct", "the runtime's direct convolution"},
        {ConvKernel::Im2col, "im2col", "im2col columns and a matrix product"},
        {ConvKernel::ChannelsLast, "nhwc",
         "channels-last images and oneDNN's convolutions"}};
    return table;
  }
  static constexpr const char *noun = "conv kernel";
  static constexpr const char *passPrefix = "";
  static constexpr bool nounNamesFlag = true;
};

} // namespace mlir::dist

DIST_ENUM_OPTION_PARSER(mlir::dist::ConvKernel)

#endif // DIST_CODEGEN_CONVKERNEL_H
