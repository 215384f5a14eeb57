//===- DistOps.cpp - dist dialect op definitions --------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Op verifiers that are not type inference (parameters, variadic ops),
// canonicalisation patterns, the cost-interface defaults and the notion of
// compatible inferred types. Type inference lives in ShapeInference.cpp and
// folders in DistFolds.cpp.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/Mesh.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// Type compatibility
//===----------------------------------------------------------------------===//

bool mlir::dist::areCompatibleInferredTypes(TypeRange l, TypeRange r) {
  if (l.size() != r.size())
    return false;
  for (auto [a, b] : llvm::zip(l, r)) {
    if (a == b)
      continue;
    auto ta = dyn_cast<TensorType>(a);
    auto tb = dyn_cast<TensorType>(b);
    if (!ta || !tb || ta.getElementType() != tb.getElementType())
      return false;
    if (failed(verifyCompatibleShape(ta, tb)))
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  auto type = cast<RankedTensorType>(getType());
  if (!type.hasStaticShape())
    return emitOpError("parameter '")
           << getSymName() << "' must have a static shape, got " << type;
  return success();
}

LogicalResult GetParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param =
      symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, getNameAttr());
  if (!param)
    return emitOpError("refers to unknown parameter ") << getNameAttr();
  if (param.getType() != getResult().getType())
    return emitOpError("result type ")
           << getResult().getType() << " does not match parameter "
           << getNameAttr() << " of type " << param.getType();
  return success();
}

LogicalResult SetParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param =
      symbolTable.lookupNearestSymbolFrom<ParamOp>(*this, getNameAttr());
  if (!param)
    return emitOpError("refers to unknown parameter ") << getNameAttr();
  if (param.getType() != getValue().getType())
    return emitOpError("value type ")
           << getValue().getType() << " does not match parameter "
           << getNameAttr() << " of type " << param.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Verifiers beyond type inference
//===----------------------------------------------------------------------===//

template <typename OpTy>
static LogicalResult verifyVariadic(OpTy op) {
  if (op.getInputs().empty())
    return op.emitOpError("needs at least one operand");
  return success();
}

/// The stage of the pipeline function around `op` (dist.pipeline_action),
/// or -1 outside one.
static int64_t enclosingStage(Operation *op) {
  auto func = op->getParentOfType<FunctionOpInterface>();
  if (!func)
    return -1;
  auto action = func->getAttrOfType<DictionaryAttr>(kPipelineActionAttr);
  if (!action)
    return -1;
  auto stage = action.getAs<IntegerAttr>("stage");
  return stage ? stage.getInt() : -1;
}

template <typename OpT>
static LogicalResult verifyTransfer(OpT op) {
  // I64Attr's accessors return the bits as uint64_t.
  auto peer = static_cast<int64_t>(op.getPeer());
  auto tag = static_cast<int64_t>(op.getTag());
  if (peer < 0)
    return op.emitOpError("peer stage must not be negative, got ") << peer;
  if (tag < 0)
    return op.emitOpError("tag must not be negative, got ") << tag;
  if (peer == enclosingStage(op))
    return op.emitOpError("peer stage ")
           << peer << " is the stage of the enclosing function";
  return success();
}

LogicalResult SendOp::verify() { return verifyTransfer(*this); }
LogicalResult RecvOp::verify() { return verifyTransfer(*this); }

LogicalResult MaxOp::verify() { return verifyVariadic(*this); }
LogicalResult MinOp::verify() { return verifyVariadic(*this); }
LogicalResult SumOp::verify() { return verifyVariadic(*this); }
LogicalResult MeanOp::verify() { return verifyVariadic(*this); }
LogicalResult ConcatOp::verify() { return verifyVariadic(*this); }

//===----------------------------------------------------------------------===//
// Canonicalisation patterns
//===----------------------------------------------------------------------===//

namespace {
/// cast_like(x, t) -> cast(x) {to = elt(t)}.
struct CastLikeToCast : OpRewritePattern<CastLikeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastLikeOp op,
                                PatternRewriter &rewriter) const override {
    Type to = getElementTypeOrSelf(op.getTarget().getType());
    rewriter.replaceOpWithNewOp<CastOp>(op, op.getType(), op.getInput(),
                                        TypeAttr::get(to));
    return success();
  }
};
} // namespace

void CastLikeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                             MLIRContext *context) {
  results.add<CastLikeToCast>(context);
}

#define GET_OP_CLASSES
#include "dist/Dialect/Dist/IR/DistOps.cpp.inc"

#include "dist/Dialect/Dist/IR/DistInterfaces.cpp.inc"
