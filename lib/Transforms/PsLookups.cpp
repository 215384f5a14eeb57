//===- PsLookups.cpp - lookups of parameter-server tables as pulled rows --===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-ps-lookups: a table on the parameter server is never whole in a
// worker. Each of its lookups (gather on axis 0 by ids from a model input)
// becomes an argument that the runtime fills with the rows it pulled for
// the ids, so that the forward and backward passes see exactly what the
// lookup gave; dist-build-train-step returns that argument's gradient (the
// per-lookup row gradients, which the runtime pushes: the server sums
// repeated ids).
//
//===----------------------------------------------------------------------===//

#include "dist/Transforms/Passes.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/Mesh.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/GlobPattern.h"

#define DEBUG_TYPE "dist-ps-lookups"

namespace mlir::dist {
#define GEN_PASS_DEF_PSLOOKUPSPASS
#include "dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

StringRef argName(func::FuncOp f, unsigned i) {
  if (DictionaryAttr d = f.getArgAttrDict(i))
    if (auto n = d.getAs<StringAttr>(DistDialect::getValueNameAttrName()))
      return n.getValue();
  return "";
}

struct PsLookupsPass : public dist::impl::PsLookupsPassBase<PsLookupsPass> {
  using Base::Base;

  /// Why `use` (of a read of `table`) is not a lookup the servers can
  /// serve, or "" when it is.
  static std::string notALookup(OpOperand &use) {
    auto gather = dyn_cast<GatherOp>(use.getOwner());
    if (!gather)
      return "it is read by '" +
             use.getOwner()->getName().getStringRef().str() +
             "' (only lookups, gathers on axis 0 by ids, can read a table on "
             "the parameter server; a tied output projection cannot)";
    if (use.getOperandNumber() != 0 || gather.getAxis() != 0)
      return "it is gathered on axis " + std::to_string(gather.getAxis()) +
             " (lookups gather rows, axis 0)";
    auto ids = dyn_cast<BlockArgument>(gather.getIndices());
    if (!ids || !isa<func::FuncOp>(ids.getOwner()->getParentOp()))
      return "the ids of its lookup are computed inside the model (the "
             "parameter server takes ids read from a model input)";
    return "";
  }

  /// The parameters `tables` selects: candidates are float parameters of
  /// rank 2 that functions read.
  FailureOr<llvm::SetVector<ParamOp>> select(ModuleOp module) {
    llvm::SetVector<ParamOp> chosen;
    auto candidate = [](ParamOp p) {
      auto t = dyn_cast<RankedTensorType>(p.getType());
      return t && t.getRank() == 2 && t.hasStaticShape() &&
             isa<FloatType>(t.getElementType()) && !p.getState();
    };
    for (const std::string &name : tables) {
      if (name == "all") {
        // Every table that only lookups read (one walk over the module:
        // per parameter, whether every read is a lookup).
        llvm::StringMap<bool> onlyLookups;
        module.walk([&](GetParamOp get) {
          bool &only =
              onlyLookups.try_emplace(get.getName(), true).first->second;
          for (OpOperand &use : get->getUses())
            only = only && notALookup(use).empty();
        });
        for (ParamOp p : module.getOps<ParamOp>()) {
          auto it = onlyLookups.find(p.getSymName());
          if (candidate(p) && it != onlyLookups.end() && it->second)
            chosen.insert(p);
        }
        continue;
      }
      bool isGlob = StringRef(name).find_first_of("*?[") != StringRef::npos;
      bool matched = false;
      if (!isGlob) {
        if (auto p = module.lookupSymbol<ParamOp>(name)) {
          if (!candidate(p)) {
            module.emitError("--ps-tables '")
                << name << "': the initializer has type " << p.getType()
                << ", not a floating-point table of rank 2";
            return failure();
          }
          chosen.insert(p);
          matched = true;
        }
      } else {
        auto glob = llvm::GlobPattern::create(name);
        if (!glob) {
          module.emitError("--ps-tables '")
              << name << "': " << llvm::toString(glob.takeError());
          return failure();
        }
        for (ParamOp p : module.getOps<ParamOp>())
          if (candidate(p) && glob->match(p.getSymName())) {
            chosen.insert(p);
            matched = true;
          }
      }
      if (!matched) {
        module.emitError("--ps-tables '")
            << name << "': "
            << (isGlob ? "no table's name matches the pattern"
                       : "the model has no initializer of that name");
        return failure();
      }
    }
    return chosen;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (tables.empty())
      return;
    if (shards < 1) {
      module.emitError("dist-ps-lookups: shards must be at least 1");
      return signalPassFailure();
    }
    FailureOr<llvm::SetVector<ParamOp>> chosen = select(module);
    if (failed(chosen))
      return signalPassFailure();
    if (chosen->empty()) {
      module.emitError("--ps-tables=all: no initializer is a table that only "
                       "lookups by model inputs read");
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    llvm::DenseSet<StringRef> names;
    for (ParamOp p : *chosen)
      names.insert(p.getSymName());
    // Check every read first, so that a failure leaves the module alone.
    bool ok = true;
    module.walk([&](GetParamOp get) {
      if (!names.contains(get.getName()))
        return;
      for (OpOperand &use : get->getUses()) {
        std::string why = notALookup(use);
        if (why.empty())
          continue;
        use.getOwner()->emitError("cannot put table '")
            << get.getName() << "' on the parameter server: " << why;
        ok = false;
      }
    });
    if (!ok)
      return signalPassFailure();
    for (auto f : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (f.isExternal())
        continue;
      llvm::MapVector<StringRef, unsigned> perTable;
      SmallVector<GatherOp> lookups;
      f.walk([&](GatherOp gather) {
        auto get = gather.getData().getDefiningOp<GetParamOp>();
        if (get && names.contains(get.getName()))
          lookups.push_back(gather);
      });
      for (GatherOp gather : lookups) {
        auto get = gather.getData().getDefiningOp<GetParamOp>();
        StringRef table = get.getName();
        unsigned k = perTable[table]++;
        std::string name = (table + ".rows").str();
        if (k)
          name += "." + std::to_string(k);
        unsigned ids = cast<BlockArgument>(gather.getIndices()).getArgNumber();
        NamedAttribute attrs[] = {
            NamedAttribute(
                StringAttr::get(ctx, DistDialect::getValueNameAttrName()),
                StringAttr::get(ctx, name)),
            NamedAttribute(
                StringAttr::get(ctx, kPsRowsAttr),
                DictionaryAttr::get(
                    ctx, {NamedAttribute(StringAttr::get(ctx, "ids"),
                                         StringAttr::get(ctx, argName(f, ids))),
                          NamedAttribute(StringAttr::get(ctx, "table"),
                                         StringAttr::get(ctx, table))}))};
        unsigned at = f.getNumArguments();
        if (failed(f.insertArgument(at, gather.getType(),
                                    DictionaryAttr::get(ctx, attrs),
                                    gather.getLoc()))) {
          gather.emitError("cannot add the pulled rows' argument");
          return signalPassFailure();
        }
        gather.replaceAllUsesWith(f.getArgument(at));
        gather.erase();
        if (get->use_empty())
          get.erase();
        ++numLookups;
      }
    }
    for (ParamOp p : *chosen) {
      auto t = cast<RankedTensorType>(p.getType());
      p->setAttr(kPsTableAttr, PSTableAttr::get(ctx, t.getDimSize(0),
                                                t.getDimSize(1), shards));
      ++numTables;
    }
  }
};

} // namespace
