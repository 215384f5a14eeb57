//===- Precision.h - the precision of a CUDA model's products ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// How the matrix products of a model compiled for CUDA round their
// operands (dist-opt's `--precision`, dist-contractions-to-runtime's
// `precision` option): every one accumulates in f32 and keeps f32 inputs
// and outputs, so weights, optimizer state and every other op stay f32 (a
// bf16 training step keeps f32 master weights by construction).
// Header-only, like ConvKernel.h.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_CODEGEN_PRECISION_H
#define DIST_CODEGEN_PRECISION_H

#include "dist/Support/EnumOption.h"

namespace mlir::dist {

/// The operands' rounding inside the products (cuBLASLt's compute type).
enum class Precision {
  /// f32 throughout (CUBLAS_COMPUTE_32F), as PyTorch's default.
  Fp32,
  /// Operands rounded to TF32 on tensor cores
  /// (CUBLAS_COMPUTE_32F_FAST_TF32), as torch's allow_tf32.
  Tf32,
  /// Operands rounded to bf16 on tensor cores
  /// (CUBLAS_COMPUTE_32F_FAST_16BF).
  Bf16,
};

template <>
struct EnumOptionTraits<Precision> {
  static llvm::ArrayRef<EnumOptionValue<Precision>> values() {
    static const EnumOptionValue<Precision> table[] = {
        {Precision::Fp32, "fp32", "f32 products (the default)"},
        {Precision::Tf32, "tf32",
         "products on TF32-rounded operands, f32 accumulation"},
        {Precision::Bf16, "bf16",
         "products on bf16-rounded operands, f32 accumulation; weights and "
         "everything else f32"}};
    return table;
  }
  static constexpr const char *noun = "precision";
  static constexpr const char *passPrefix = "";
  static constexpr bool nounNamesFlag = false;
};

} // namespace mlir::dist

DIST_ENUM_OPTION_PARSER(mlir::dist::Precision)

#endif // DIST_CODEGEN_PRECISION_H
