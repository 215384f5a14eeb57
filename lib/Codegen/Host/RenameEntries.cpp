//===- RenameEntries.cpp - the artifact's names for the entry functions ---===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-rename-entries: the public entry function becomes
// `dist_graph_<name>` and the training step `dist_train_<name>`, with every
// use, so that neither clashes with C's `main` nor with the symbols of
// another model linked into the same process.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Emit.h"
#include "dist/Codegen/Passes.h"

#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "dist-rename-entries"

namespace mlir::dist {
#define GEN_PASS_DEF_RENAMEENTRIESPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {
struct RenameEntriesPass
    : public dist::impl::RenameEntriesPassBase<RenameEntriesPass> {
  using Base::Base;

  /// Renames function `from` to `to` and every use of it.
  LogicalResult rename(ModuleOp module, StringRef from, const Twine &to) {
    MLIRContext *ctx = &getContext();
    StringAttr newName = StringAttr::get(ctx, to);
    if (failed(SymbolTable::replaceAllSymbolUses(StringAttr::get(ctx, from),
                                                 newName, module)))
      return module.emitError("cannot rename '") << from << "'";
    module.lookupSymbol<func::FuncOp>(from).setSymName(newName.getValue());
    return success();
  }

  void runOnOperation() override {
    if (modelName.empty())
      return;
    ModuleOp module = getOperation();
    FailureOr<std::string> entry = getEntryName(module);
    if (failed(entry) ||
        failed(rename(module, *entry, "dist_graph_" + modelName)))
      return signalPassFailure();
    std::string step = getTrainStepName(module);
    if (!step.empty() &&
        failed(rename(module, step, "dist_train_" + modelName)))
      return signalPassFailure();
  }
};
} // namespace
