//===- DropParamResults.cpp - drop results that are arguments -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// After bufferization a training step returns the parameters it updated in
// place, which are its own arguments; this pass removes those results. An
// output that is an argument (an ONNX Identity of an input, a graph output
// that is an initializer) is returned as a copy instead: the caller owns
// what a function returns.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/BitVector.h"

#define DEBUG_TYPE "dist-drop-param-results"

namespace mlir::dist {
#define GEN_PASS_DEF_DROPPARAMRESULTSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {
struct DropParamResultsPass
    : public dist::impl::DropParamResultsPassBase<DropParamResultsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
    if (!ret)
      return;
    llvm::BitVector drop(ret.getNumOperands());
    OpBuilder b(ret);
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg || arg.getOwner() != &body)
        continue;
      if (func.getResultAttr(i, dist::kParamUpdateAttr)) {
        drop.set(i);
        continue;
      }
      // An output that is an argument: a fresh copy.
      auto type = dyn_cast<MemRefType>(v.getType());
      if (!type) {
        func.emitError("result ")
            << i << " returns argument " << arg.getArgNumber()
            << " that is not a memref";
        return signalPassFailure();
      }
      SmallVector<Value> dynamicSizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          dynamicSizes.push_back(
              memref::DimOp::create(b, ret.getLoc(), v, d).getResult());
      auto copy = memref::AllocOp::create(
          b, ret.getLoc(),
          MemRefType::get(type.getShape(), type.getElementType()), dynamicSizes,
          b.getI64IntegerAttr(64));
      memref::CopyOp::create(b, ret.getLoc(), v, copy);
      ret->setOperand(i, copy);
    }
    if (drop.none())
      return;
    if (failed(func.eraseResults(drop)))
      return signalPassFailure();
    SmallVector<Value> kept;
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      if (!drop.test(i))
        kept.push_back(v);
    ret->setOperands(kept);
  }
};
} // namespace
