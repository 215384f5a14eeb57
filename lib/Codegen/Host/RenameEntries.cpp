//===- RenameEntries.cpp - the artifact's names for the entry functions ---===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-rename-entries: the public entry function becomes
// `dist_graph_<name>`, the training step `dist_train_<name>` and the
// functions of its pipeline stages `dist_train_<name>_s<k>_<action>`, with
// every use, so that none clashes with C's `main` nor with the symbols of
// another model linked into the same process.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Emit.h"
#include "dist/Codegen/Passes.h"
#include "dist/Dialect/Dist/IR/Mesh.h"

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
    // The functions of pipeline stages: dist_train_<name>_s<k>_<action>.
    SmallVector<std::string> stageFuncs;
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr(kPipelineActionAttr))
        stageFuncs.push_back(f.getSymName().str());
    for (const std::string &name : stageFuncs) {
      StringRef suffix = name;
      if (!suffix.consume_front("train_step"))
        suffix = "";
      std::string to = "dist_train_" + modelName +
                       (suffix.empty() ? "_" + name : suffix.str());
      if (failed(rename(module, name, to)))
        return signalPassFailure();
    }
  }
};
} // namespace
