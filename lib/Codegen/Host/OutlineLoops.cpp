//===- OutlineLoops.cpp - one function per serial loop nest ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Moves every outermost loop left in a function (after dist-parallelize-loops
// has outlined the ones that go to the thread pool) into a function of its
// own, called in its place and kept out of line (LLVM's noinline). Why:
// LLVM's O3 loop passes scale with the size of the function around each loop
// times the number of loops in it. Measured on torchvision's DenseNet-121
// (121 layers, 58 concatenations): the graph function held 472 serial loop
// nests (copies into the concatenations, zero fills of their slices), and
// `opt -O3` spent 239 s of its 251 s in IndVarSimplify on it. Upstream's
// outlineSingleBlockRegion outlines a region's body, not an op with
// results, and does not clone constants in (trip counts would become
// dynamic and LLVM would stop vectorising short loops).
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "LoopHints.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"

#include <string>

#define DEBUG_TYPE "dist-outline-loops"

namespace mlir::dist {
#define GEN_PASS_DEF_OUTLINELOOPSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// Whether `f` is a body the compiler outlined (dist-parallelize-loops,
/// this pass): those have internal linkage.
bool isOutlinedBody(func::FuncOp f) {
  auto linkage = f->getAttrOfType<LLVM::LinkageAttr>("llvm.linkage");
  return linkage && linkage.getLinkage() == LLVM::Linkage::Internal;
}

/// Whether `v` is a constant with no operands, which the outlined function
/// can recreate.
bool isClonableConstant(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         matchPattern(v, m_Constant());
}

struct OutlineLoopsPass
    : public dist::impl::OutlineLoopsPassBase<OutlineLoopsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      if (func.isExternal() || isOutlinedBody(func))
        continue;
      SmallVector<Operation *> loops;
      func.walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (isa<LoopLikeOpInterface>(op)) {
          loops.push_back(op);
          return WalkResult::skip();
        }
        return WalkResult::advance();
      });
      unsigned index = 0;
      for (Operation *loop : loops)
        outline(module, func, loop, index);
    }
  }

  void outline(ModuleOp module, func::FuncOp parent, Operation *loop,
               unsigned &index) {
    MLIRContext *ctx = &getContext();
    Location loc = loop->getLoc();
    // What the loop reads from outside: its operands and the values its
    // regions use from above.
    llvm::SetVector<Value> used(loop->getOperands().begin(),
                                loop->getOperands().end());
    getUsedValuesDefinedAbove(loop->getRegions(), used);
    SmallVector<Value> args, constants;
    for (Value v : used)
      (isClonableConstant(v) ? constants : args).push_back(v);

    std::string name =
        dist::codegen::outlinedName(module, parent, "loop", index, loc);
    OpBuilder mb(parent);
    auto type = mb.getFunctionType(ValueRange(args).getTypes(),
                                   loop->getResultTypes());
    auto body = func::FuncOp::create(mb, loc, name, type);
    body.setPrivate();
    // Internal: two models in one process stay apart. Not inlined: that
    // would undo the point.
    body->setAttr("llvm.linkage",
                  LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
    body->setAttr("passthrough",
                  ArrayAttr::get(ctx, {StringAttr::get(ctx, "noinline")}));
    Block *entry = body.addEntryBlock();
    OpBuilder bb = OpBuilder::atBlockBegin(entry);
    IRMapping map;
    for (auto [v, arg] : llvm::zip(args, entry->getArguments()))
      map.map(v, arg);
    for (Value v : constants)
      map.map(v, bb.clone(*v.getDefiningOp())->getResult(0));
    Operation *copy = bb.clone(*loop, map);
    func::ReturnOp::create(bb, loc, copy->getResults());

    OpBuilder b(loop);
    auto call = func::CallOp::create(b, loc, body, args);
    loop->replaceAllUsesWith(call.getResults());
    loop->erase();
    ++numOutlined;
  }
};

} // namespace
