//===- DropParamResults.cpp - drop results that are arguments -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// After bufferization a training step returns the parameters it updated in
// place, which are its own arguments; this pass removes those results.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/BitVector.h"

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
    auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (!ret)
      return;
    llvm::BitVector drop(ret.getNumOperands());
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (arg && arg.getOwner() == &func.getBody().front())
        drop.set(i);
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
