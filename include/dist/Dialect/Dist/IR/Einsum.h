//===- Einsum.h - Subscripts of an einsum equation --------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Parses the equation of ONNX's Einsum (numpy's subscripts: letters, an
// optional `...` per operand, an optional `->` output) for operands of known
// ranks into one subscript character per dimension. Shared by the op's type
// inference, its gradient and its lowering.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_IR_EINSUM_H
#define DIST_DIALECT_DIST_IR_EINSUM_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir::dist {

/// An einsum equation with `...` expanded: one character per dimension of
/// each operand and of the result. The dimensions an ellipsis stands for are
/// named by digits ('0' for the outermost of the widest ellipsis), aligned
/// to the right as numpy broadcasts them.
struct EinsumSubscripts {
  llvm::SmallVector<std::string> inputs;
  std::string output;
};

/// Parses `equation` for operands of ranks `ranks`. On failure returns
/// false and says why in `error`. Without `->` the output is the ellipsis
/// dimensions followed by the letters used exactly once, in alphabetical
/// order (numpy's implicit mode).
bool parseEinsum(llvm::StringRef equation, llvm::ArrayRef<int64_t> ranks,
                 EinsumSubscripts &out, std::string &error);

/// The equation that `subscripts` spell, ellipsis dimensions included as
/// their digits (accepted back by parseEinsum only through
/// EinsumSubscripts; used to build gradient einsums).
std::string formatEinsum(const EinsumSubscripts &subscripts);

} // namespace mlir::dist

#endif // DIST_DIALECT_DIST_IR_EINSUM_H
