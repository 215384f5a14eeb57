//===- AddEntryWrapper.cpp - packed entry point for the runtime -----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Adds `void <symbol>(void **args)`: args[0..n) point to the memref
// descriptors of the entry function's arguments (parameters, then inputs)
// and args[n] to the buffer receiving the result descriptors. It calls the
// `_mlir_ciface_` wrapper that `llvm.emit_c_interface` produced. The
// runtime (dist_rt/model.h) builds `args`.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#define DEBUG_TYPE "dist-add-entry-wrapper"

namespace mlir::dist {
#define GEN_PASS_DEF_ADDENTRYWRAPPERPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {
struct AddEntryWrapperPass
    : public dist::impl::AddEntryWrapperPassBase<AddEntryWrapperPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string cifaceName = "_mlir_ciface_" + entryName;
    auto ciface = module.lookupSymbol<LLVM::LLVMFuncOp>(cifaceName);
    auto entry = module.lookupSymbol<LLVM::LLVMFuncOp>(entryName);
    if (!entry && ifPresent)
      return;
    if (!ciface || !entry) {
      module.emitError() << "no C interface for entry function '" << entryName
                         << "'";
      return signalPassFailure();
    }
    // The C interface takes a leading result pointer when the original
    // function returns anything.
    bool hasResults =
        !isa<LLVM::LLVMVoidType>(entry.getFunctionType().getReturnType());
    unsigned numArgs = ciface.getNumArguments() - (hasResults ? 1 : 0);
    for (Type t : ciface.getFunctionType().getParams())
      if (!isa<LLVM::LLVMPointerType>(t)) {
        module.emitError() << "entry function '" << entryName
                           << "' has a non-memref argument";
        return signalPassFailure();
      }
    MLIRContext *ctx = &getContext();
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    Location loc = entry.getLoc();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    auto fnType =
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptrType});
    auto wrapper = LLVM::LLVMFuncOp::create(b, loc, symbolName, fnType);
    Block *block = wrapper.addEntryBlock(b);
    b.setInsertionPointToStart(block);
    Value args = block->getArgument(0);
    auto load = [&](unsigned i) -> Value {
      Value slot = LLVM::GEPOp::create(b, loc, ptrType, ptrType, args,
                                       ArrayRef<LLVM::GEPArg>{(int32_t)i});
      return LLVM::LoadOp::create(b, loc, ptrType, slot);
    };
    SmallVector<Value> callArgs;
    if (hasResults)
      callArgs.push_back(load(numArgs));
    for (unsigned i = 0; i < numArgs; ++i)
      callArgs.push_back(load(i));
    LLVM::CallOp::create(b, loc, ciface, callArgs);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }
};
} // namespace
