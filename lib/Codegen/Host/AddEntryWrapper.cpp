//===- AddEntryWrapper.cpp - packed entry point for the runtime -----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Adds `void <symbol>(void **args)`: args[0..n) point to the memref
// descriptors of the entry function's arguments (parameters, then inputs)
// and args[n] to the buffer receiving the result descriptors. It calls the
// `_mlir_ciface_` wrapper that `llvm.emit_c_interface` produced. The
// runtime (dist_rt/model.h) builds `args`.
//
// That C interface is then the entry's only way in: the entry function
// itself (memref descriptors expanded into scalar arguments) becomes
// internal and always inlined into it, so that its body is compiled once,
// inside the wrapper, and no call passes thousands of arguments. Measured
// on torchvision's DenseNet-121 (1,657 arguments): instruction selection
// of the wrapper's call alone took 4.0 s of a 13 s compile (the DAG
// combiner compares every outgoing argument store with every other), the
// whole module 2.0 s with the entry inlined against 6.2 s without. Public
// and not inlined, LLVM compiled a second copy of the graph inside the
// wrapper; internal, the inlined one is the only copy.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Emit.h"
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
    if (!pipeline) {
      if (failed(wrap(module, entryName, symbolName, ifPresent)))
        return signalPassFailure();
      return;
    }
    FailureOr<dist::ModelSignature> sig = dist::getRecordedSignature(module);
    if (failed(sig))
      return signalPassFailure();
    if (!sig->pipeline)
      return;
    for (const dist::PipelineFunctionSignature &fn : sig->pipeline->functions)
      if (failed(wrap(module, fn.funcName, fn.symbol, false)))
        return signalPassFailure();
  }

  /// Adds `symbolName` wrapping `entryName`'s C interface.
  LogicalResult wrap(ModuleOp module, StringRef entryName, StringRef symbolName,
                     bool ifPresent) {
    std::string cifaceName = ("_mlir_ciface_" + entryName).str();
    auto ciface = module.lookupSymbol<LLVM::LLVMFuncOp>(cifaceName);
    auto entry = module.lookupSymbol<LLVM::LLVMFuncOp>(entryName);
    if (!entry && ifPresent)
      return success();
    if (!ciface || !entry) {
      module.emitError() << "no C interface for entry function '" << entryName
                         << "'";
      return failure();
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
        return failure();
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
    inlineIntoInterface(module, entry, ciface);
    return success();
  }

  /// Makes `entry` internal and always inlined when the C interface is its
  /// only user (see the file comment); `noinline` from the lowering goes.
  static void inlineIntoInterface(ModuleOp module, LLVM::LLVMFuncOp entry,
                                  LLVM::LLVMFuncOp ciface) {
    if (entry.isExternal())
      return;
    auto uses = SymbolTable::getSymbolUses(entry, module);
    if (!uses || uses->empty())
      return;
    for (const SymbolTable::SymbolUse &use : *uses)
      if (use.getUser()->getParentOfType<LLVM::LLVMFuncOp>() != ciface)
        return;
    MLIRContext *ctx = module.getContext();
    entry.setLinkage(LLVM::Linkage::Internal);
    entry.setNoInline(false);
    entry.setAlwaysInline(true);
    if (ArrayAttr passthrough = entry.getPassthroughAttr()) {
      SmallVector<Attribute> kept;
      for (Attribute a : passthrough) {
        auto name = dyn_cast<StringAttr>(a);
        if (!name || name.getValue() != "noinline")
          kept.push_back(a);
      }
      entry.setPassthroughAttr(ArrayAttr::get(ctx, kept));
    }
  }
};
} // namespace
