//===- ShapeUtils.h - shape helpers shared by inference and folds -*- C++
//-*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Helpers for reading constant operands and partially known shape values
// (the Shape/Gather/Concat chains exporters write), shared by type inference
// and folders.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_LIB_DIALECT_DIST_IR_SHAPEUTILS_H
#define DIST_LIB_DIALECT_DIST_IR_SHAPEUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

#include <optional>

namespace mlir::dist {

using Dims = llvm::SmallVector<int64_t>;
inline constexpr int64_t kDynamic = ShapedType::kDynamic;

/// One element of a 1-D integer tensor used as a shape: a known value, or an
/// unknown value that is known to equal dimension `idx` of tensor `src`.
struct DimValue {
  int64_t value = kDynamic;
  Value src;
  int64_t idx = -1;
  bool isKnown() const { return value != kDynamic; }
  bool isSymbol() const { return !isKnown() && src; }
  bool sameSymbol(const DimValue &o) const {
    return isSymbol() && o.isSymbol() && src == o.src && idx == o.idx;
  }
};

/// Integer contents of `v` if it is produced by a constant (any int width).
std::optional<Dims> getConstantInts(Value v);

/// Floating-point contents of `v` if it is produced by a constant.
std::optional<llvm::SmallVector<double>> getConstantDoubles(Value v);

/// Elements of the 0-D or 1-D integer tensor `v`, as far as they are known.
/// Fails (nullopt) only when even the number of elements is unknown.
std::optional<llvm::SmallVector<DimValue>> traceShapeValue(Value v);

/// Normalises `axis` into [0, rank); fails when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// The permutation of a Transpose: its `perm` attribute, or the reversed
/// dimensions of a rank-`rank` input when it has none (ONNX's default).
Dims transposePermutation(std::optional<llvm::ArrayRef<int64_t>> perm,
                          int64_t rank);

} // namespace mlir::dist

#endif // DIST_LIB_DIALECT_DIST_IR_SHAPEUTILS_H
