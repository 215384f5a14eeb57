//===- Batch.cpp - the batch dimension of a function ----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reads the batch a function is compiled for and rebuilds a function at one
// data-parallel rank's share of a static batch (see Batch.h).
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/Transforms/Batch.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::dist;

int64_t dist::getStaticBatch(func::FuncOp func) {
  for (Type t : func.getArgumentTypes()) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    if (!ranked || ranked.getRank() == 0)
      continue;
    return ShapedType::isDynamic(ranked.getDimSize(0)) ? 0
                                                       : ranked.getDimSize(0);
  }
  return 0;
}

LogicalResult dist::rebatchFunction(func::FuncOp func, int64_t batch,
                                    int64_t dp) {
  if (batch % dp != 0)
    return func.emitError("the batch of ")
           << batch << " samples the model is compiled for cannot be split "
           << "evenly over dp=" << dp
           << " ranks (export the model with a dynamic batch axis, or pick a "
              "batch divisible by "
           << dp << ")";
  Block &body = func.getBody().front();
  SmallVector<Type> types;
  for (BlockArgument arg : body.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (t && t.getRank() > 0) {
      if (t.getDimSize(0) != batch)
        return func.emitError("input #")
               << arg.getArgNumber() << " of '" << func.getSymName()
               << "' has type " << t
               << ", whose leading dimension is not the batch " << batch;
      SmallVector<int64_t> shape(t.getShape());
      shape[0] = batch / dp;
      arg.setType(
          RankedTensorType::get(shape, t.getElementType(), t.getEncoding()));
    }
    types.push_back(arg.getType());
  }
  func.setFunctionType(
      FunctionType::get(func.getContext(), types, func.getResultTypes()));
  // A static export bakes the batch into Reshape targets ([B, T, H, D]):
  // a reshape of a batch-major value computed from the inputs that keeps
  // the batch in front gets B / dp there instead.
  llvm::DenseSet<Value> fromInputs(body.args_begin(), body.args_end());
  for (Operation &op : body) {
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return fromInputs.contains(v); }))
      fromInputs.insert(op.result_begin(), op.result_end());
    auto reshape = dyn_cast<ReshapeOp>(op);
    if (!reshape || !fromInputs.contains(reshape.getInput()))
      continue;
    auto in = dyn_cast<RankedTensorType>(reshape.getInput().getType());
    auto out = dyn_cast<RankedTensorType>(reshape.getType());
    auto shapeConst = reshape.getShape().getDefiningOp<ConstantOp>();
    if (!in || !out || !shapeConst || in.getRank() == 0 || out.getRank() == 0 ||
        (in.getDimSize(0) != batch && in.getDimSize(0) != batch / dp) ||
        out.getDimSize(0) != batch)
      continue;
    auto values = dyn_cast<DenseIntElementsAttr>(shapeConst.getValue());
    if (!values || values.getNumElements() == 0)
      continue;
    SmallVector<int64_t> target;
    for (const APInt &v : values.getValues<APInt>())
      target.push_back(v.getSExtValue());
    if (target[0] != batch)
      continue;
    target[0] = batch / dp;
    OpBuilder b(reshape);
    auto t = cast<RankedTensorType>(values.getType());
    Value c = ConstantOp::create(
        b, shapeConst.getLoc(), t,
        cast<ElementsAttr>(DenseIntElementsAttr::get(t, target)));
    reshape.getShapeMutable().assign(c);
  }
  auto hint = [&](InFlightDiagnostic &&d) {
    d.attachNote(func.getLoc())
        << "splitting the batch of " << batch << " over dp=" << dp
        << " needs every shape that depends on the batch to follow it; "
        << "export the model with a dynamic batch axis";
    return failure();
  };
  if (failed(inferShapes(func, nullptr, /*replace=*/true)))
    return hint(func.emitError("cannot split the batch of '")
                << func.getSymName() << "' (see the error above)");
  if (failed(verify(func)))
    return hint(func.emitError("'")
                << func.getSymName()
                << "' does not verify after splitting its batch");
  return success();
}

LogicalResult mlir::dist::bindBatch(func::FuncOp func, int64_t batch) {
  Block &body = func.getBody().front();
  SmallVector<Type> types;
  for (BlockArgument arg : body.getArguments()) {
    Type t = arg.getType();
    if (auto ranked = dyn_cast<RankedTensorType>(t);
        ranked && ranked.getRank() > 0 &&
        ShapedType::isDynamic(ranked.getDimSize(0))) {
      SmallVector<int64_t> shape(ranked.getShape());
      shape[0] = batch;
      t = RankedTensorType::get(shape, ranked.getElementType(),
                                ranked.getEncoding());
      arg.setType(t);
    }
    types.push_back(t);
  }
  func.setFunctionType(
      FunctionType::get(func.getContext(), types, func.getResultTypes()));
  if (failed(inferShapes(func)))
    return failure();
  WalkResult r = func.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      if (auto s = dyn_cast<ShapedType>(t); s && !s.hasStaticShape()) {
        op->emitError("shape ")
            << t << " stays dynamic with the batch bound to " << batch
            << "; fix it with --input-shape";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}
