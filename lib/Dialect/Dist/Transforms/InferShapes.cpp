//===- InferShapes.cpp - refine dist result types in place ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The `dist-infer-shapes` pass: re-runs type inference of every dist op in
// program order and refines result types that became more static, then
// updates the enclosing function's signature.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/TypeUtilities.h"

#define DEBUG_TYPE "dist-infer-shapes"

namespace mlir::dist {
#define GEN_PASS_DEF_INFERSHAPESPASS
#include "dist/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

/// Whether `refined` carries strictly more shape information than `old`.
static bool isMoreStatic(Type refined, Type old) {
  auto r = dyn_cast<TensorType>(refined);
  auto o = dyn_cast<TensorType>(old);
  if (!r || !o || r == o || r.getElementType() != o.getElementType())
    return false;
  if (!r.hasRank())
    return false;
  if (!o.hasRank())
    return true;
  if (r.getRank() != o.getRank())
    return false;
  bool gained = false;
  for (auto [a, b] : llvm::zip(r.getShape(), o.getShape())) {
    if (ShapedType::isDynamic(a) && !ShapedType::isDynamic(b))
      return false;
    if (!ShapedType::isDynamic(a) && ShapedType::isDynamic(b))
      gained = true;
  }
  return gained;
}

/// Whether `inferred` may replace `old` in replace mode: both ranked tensors
/// of the same rank and element type that differ.
static bool isReplacement(Type inferred, Type old) {
  auto r = dyn_cast<RankedTensorType>(inferred);
  auto o = dyn_cast<RankedTensorType>(old);
  return r && o && r != o && r.getRank() == o.getRank() &&
         r.getElementType() == o.getElementType();
}

/// The result type of the shard collectives dist-partition puts in a graph
/// (they have no type inference upstream): an all_reduce keeps its
/// operand's type, an all_gather multiplies the gathered dimension by the
/// size of the grid axes and an all_slice divides it. Null for other ops.
static Type inferCollectiveType(Operation *op) {
  auto in = op->getNumOperands() == 1
                ? dyn_cast<RankedTensorType>(op->getOperand(0).getType())
                : RankedTensorType();
  if (!in)
    return {};
  if (isa<shard::AllReduceOp>(op))
    return in;
  auto scaled = [&](FlatSymbolRefAttr gridName, ArrayRef<int16_t> axes,
                    int64_t axis, bool gather) -> Type {
    auto grid =
        SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridName);
    if (!grid || axis < 0 || axis >= in.getRank())
      return {};
    int64_t n = 1;
    for (int16_t a : axes)
      if (a >= 0 && a < grid.getRank())
        n *= grid.getShape()[a];
    SmallVector<int64_t> shape(in.getShape());
    if (!ShapedType::isDynamic(shape[axis])) {
      if (!gather && shape[axis] % n != 0)
        return {};
      shape[axis] = gather ? shape[axis] * n : shape[axis] / n;
    }
    return RankedTensorType::get(shape, in.getElementType(), in.getEncoding());
  };
  if (auto g = dyn_cast<shard::AllGatherOp>(op))
    return scaled(g.getGridAttr(), g.getGridAxes(),
                  g.getGatherAxis().getSExtValue(), true);
  if (auto s = dyn_cast<shard::AllSliceOp>(op))
    return scaled(s.getGridAttr(), s.getGridAxes(),
                  s.getSliceAxis().getSExtValue(), false);
  return {};
}

LogicalResult mlir::dist::inferShapes(Operation *root, int64_t *numRefined,
                                      bool replace) {
  WalkResult result = root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    SmallVector<Type> types;
    if (!isa<DistDialect>(op->getDialect())) {
      Type t = inferCollectiveType(op);
      if (!t)
        return WalkResult::advance();
      types.push_back(t);
    } else if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
      if (failed(infer.inferReturnTypes(
              op->getContext(), op->getLoc(), op->getOperands(),
              op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
              op->getRegions(), types)))
        return WalkResult::interrupt();
    } else {
      return WalkResult::advance();
    }
    if (types.size() != op->getNumResults()) {
      op->emitOpError("inferred ") << types.size() << " result types for "
                                   << op->getNumResults() << " results";
      return WalkResult::interrupt();
    }
    for (auto [res, type] : llvm::zip(op->getResults(), types)) {
      if (isMoreStatic(type, res.getType()) ||
          (replace && isReplacement(type, res.getType()))) {
        res.setType(type);
        if (numRefined)
          ++*numRefined;
      }
    }
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  // Keep function signatures in line with what they return.
  root->walk([](func::FuncOp func) {
    if (func.isExternal())
      return;
    Operation *terminator = func.getBody().back().getTerminator();
    auto ret = dyn_cast<func::ReturnOp>(terminator);
    if (!ret)
      return;
    auto type = func.getFunctionType();
    SmallVector<Type> results(ret.getOperandTypes());
    if (results != SmallVector<Type>(type.getResults()))
      func.setFunctionType(
          FunctionType::get(func.getContext(), type.getInputs(), results));
  });
  return success();
}

namespace {
struct InferShapesPass
    : public mlir::dist::impl::InferShapesPassBase<InferShapesPass> {
  void runOnOperation() override {
    int64_t refined = 0;
    if (failed(inferShapes(getOperation(), &refined)))
      return signalPassFailure();
    numRefined += refined;
  }
};
} // namespace
