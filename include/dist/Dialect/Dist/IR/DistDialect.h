//===- DistDialect.h - dist dialect declarations ---------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Declares the dist dialect, its attributes, interfaces and ops. Include this
// header to use anything from the dialect.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_IR_DISTDIALECT_H
#define DIST_DIALECT_DIST_IR_DISTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/APFloat.h"

#include "dist/Dialect/Dist/IR/Mesh.h"

namespace mlir {
class AsmParser;
class AsmPrinter;
} // namespace mlir

namespace mlir::dist {
/// Parses a 64-bit float attribute parameter (`#dist.plan`'s times and
/// rates).
FailureOr<llvm::APFloat> parseF64(AsmParser &parser);
/// Prints one in the shortest decimal form that reads back the same.
void printF64(AsmPrinter &printer, const llvm::APFloat &value);

/// Parses an attribute parameter printed in full (`#dist.link<...>`).
template <typename T>
FailureOr<T> parseNestedAttr(AsmParser &parser);
/// Parses a list of them, `[...]`.
template <typename T>
FailureOr<llvm::SmallVector<T>> parseNestedAttrArray(AsmParser &parser);

namespace detail {
/// Default cost: one operation per result element.
FailureOr<int64_t> defaultFlopCount(Operation *op);
/// Whether `op` is a transcendental function (exp, erf, tanh, ...), whose
/// FLOPs in defaultFlopCount stand for a polynomial approximation's
/// arithmetic time rather than plain multiplies and adds.
bool isTranscendental(Operation *op);
/// Default traffic: bytes of every operand and result.
FailureOr<int64_t> defaultBytesAccessed(Operation *op);
/// Matrix-product shape {batch, m, n, k} of contraction ops (matmul, gemm,
/// and convolutions as the im2col GEMM codegen runs); failure otherwise.
FailureOr<llvm::SmallVector<int64_t, 4>> defaultContractionShape(Operation *op);
/// The gradient rules of the graph ops (Gradients.cpp): operand gradients
/// from result gradients, built with `builder` at its insertion point.
FailureOr<llvm::SmallVector<Value>>
buildDefaultGradient(Operation *op, OpBuilder &builder, ValueRange resultGrads);
} // namespace detail

/// Whether inferred result types `l` and declared types `r` agree: same
/// element types, and shapes that agree wherever both are known.
bool areCompatibleInferredTypes(TypeRange l, TypeRange r);

/// Attaches GradientOpInterface to the `shard` collectives tensor
/// parallelism puts in a forward graph (all_reduce with sum, all_gather,
/// all_slice), so the training step builder differentiates through them.
void registerShardGradients(DialectRegistry &registry);
} // namespace mlir::dist

#include "dist/Dialect/Dist/IR/DistDialect.h.inc"
#include "dist/Dialect/Dist/IR/DistEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dist/Dialect/Dist/IR/DistAttrs.h.inc"

#include "mlir/IR/OpImplementation.h"

template <typename T>
mlir::FailureOr<T> mlir::dist::parseNestedAttr(AsmParser &parser) {
  T attr;
  if (parser.parseAttribute(attr))
    return failure();
  return attr;
}

template <typename T>
mlir::FailureOr<llvm::SmallVector<T>>
mlir::dist::parseNestedAttrArray(AsmParser &parser) {
  llvm::SmallVector<T> items;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&]() -> ParseResult {
                                       T item;
                                       if (parser.parseAttribute(item))
                                         return failure();
                                       items.push_back(item);
                                       return success();
                                     }))
    return failure();
  return items;
}

#define GET_TYPEDEF_CLASSES
#include "dist/Dialect/Dist/IR/DistTypes.h.inc"

#include "dist/Dialect/Dist/IR/DistInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dist/Dialect/Dist/IR/DistOps.h.inc"

#endif // DIST_DIALECT_DIST_IR_DISTDIALECT_H
