//===- PsLookups.cpp - lookups of parameter-server tables as pulled rows --===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-ps-lookups: a table on the parameter server is never whole in a
// worker. Each of its lookups (gather on axis 0 by ids from a model input,
// or picked from one, as `sparse[:, i]`) becomes an argument that the
// runtime fills with the rows it pulled for the ids, so that the forward
// and backward passes see exactly what the lookup gave;
// dist-build-train-step returns that argument's gradient (the per-lookup
// row gradients, which the runtime pushes: the server sums repeated ids).
//
//===----------------------------------------------------------------------===//

#include "dist/Transforms/Passes.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/Mesh.h"
#include "dist/Transforms/LayerCosts.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>

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

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// What ids a lookup reads, per sample: elements `cols` (row-major, without
/// the batch dimension) of function argument `arg`, viewed as `shape`.
struct Picked {
  BlockArgument arg;
  SmallVector<int64_t> shape;
  SmallVector<int64_t> cols;
};

/// The elements of a function argument that `v` holds per sample, when
/// every op from the argument to `v` keeps the batch first and only picks
/// elements; else fails with `why`.
FailureOr<Picked> pickedFrom(Value v, std::string &why) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  auto perSample =
      [&](RankedTensorType t) -> std::optional<SmallVector<int64_t>> {
    if (!t || t.getRank() < 1 ||
        llvm::any_of(t.getShape().drop_front(), ShapedType::isDynamic))
      return std::nullopt;
    return SmallVector<int64_t>(t.getShape().drop_front());
  };
  auto shape = perSample(type);
  if (!shape) {
    std::string typeName;
    llvm::raw_string_ostream(typeName) << v.getType();
    why = "the ids have type " + typeName +
          " (a lookup the parameter server serves takes a batch of ids: "
          "rank 1 or more, static but for the batch)";
    return failure();
  }
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (!isa<func::FuncOp>(arg.getOwner()->getParentOp())) {
      why = "the ids are a block argument of a nested region";
      return failure();
    }
    Picked p{arg, *shape, {}};
    p.cols.resize(product(*shape));
    for (auto [i, c] : llvm::enumerate(p.cols))
      c = static_cast<int64_t>(i);
    return p;
  }
  Operation *op = v.getDefiningOp();
  auto notPicked = [&]() -> FailureOr<Picked> {
    why = "the ids are computed by '" + op->getName().getStringRef().str() +
          "' (the parameter server takes ids that a model input holds, or "
          "that are picked from one by constant gathers, reshapes, squeezes, "
          "transposes that keep the batch first, and integer casts)";
    return failure();
  };
  if (isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp, CastOp>(
          op)) {
    auto src = pickedFrom(op->getOperand(0), why);
    if (failed(src))
      return failure();
    auto srcType = cast<RankedTensorType>(op->getOperand(0).getType());
    int64_t b0 = srcType.getDimSize(0), b1 = type.getDimSize(0);
    bool batchKept = ShapedType::isDynamic(b0) == ShapedType::isDynamic(b1) &&
                     (ShapedType::isDynamic(b0) || b0 == b1);
    bool ints = isa<IntegerType>(srcType.getElementType()) &&
                isa<IntegerType>(type.getElementType());
    if (!batchKept || !ints || product(*shape) != product(src->shape))
      return notPicked();
    src->shape = *shape;
    return src;
  }
  if (auto gather = dyn_cast<GatherOp>(op)) {
    auto src = pickedFrom(gather.getData(), why);
    if (failed(src))
      return failure();
    int64_t rank = static_cast<int64_t>(src->shape.size()) + 1;
    auto axis = static_cast<int64_t>(gather.getAxis());
    axis = axis < 0 ? axis + rank : axis;
    DenseIntElementsAttr idx;
    if (axis < 1 || axis >= rank ||
        !matchPattern(gather.getIndices(), m_Constant(&idx)))
      return notPicked();
    int64_t k = axis - 1, n = src->shape[k];
    int64_t outer = product(ArrayRef(src->shape).take_front(k));
    int64_t inner = product(ArrayRef(src->shape).drop_front(k + 1));
    SmallVector<int64_t> cols;
    for (int64_t o = 0; o < outer; ++o)
      for (const APInt &a : idx) {
        int64_t i = a.getSExtValue();
        if (i < -n || i >= n)
          return notPicked();
        i = i < 0 ? i + n : i;
        for (int64_t j = 0; j < inner; ++j)
          cols.push_back(src->cols[(o * n + i) * inner + j]);
      }
    src->cols = std::move(cols);
    src->shape = *shape;
    return src;
  }
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    auto src = pickedFrom(transpose.getInput(), why);
    if (failed(src))
      return failure();
    std::optional<ArrayRef<int64_t>> perm = transpose.getPerm();
    if (!perm || perm->empty() || (*perm)[0] != 0)
      return notPicked();
    // Output element (m'_1..) is source element m with m[perm[j]] = m'[j].
    size_t r = src->shape.size();
    SmallVector<int64_t> strides(r, 1);
    for (size_t d = r; d-- > 1;)
      strides[d - 1] = strides[d] * src->shape[d];
    SmallVector<int64_t> cols(src->cols.size()), index(r, 0);
    for (int64_t &c : cols) {
      int64_t at = 0;
      for (size_t j = 0; j < r; ++j)
        at += index[j] * strides[(*perm)[j + 1] - 1];
      c = src->cols[at];
      for (size_t j = r; j-- > 0;) {
        if (++index[j] < (*shape)[j])
          break;
        index[j] = 0;
      }
    }
    src->cols = std::move(cols);
    src->shape = *shape;
    return src;
  }
  return notPicked();
}

/// Whether a function argument (a graph input) named `name` could be a
/// table: floating point, rank 2.
bool isTableArgument(ModuleOp module, StringRef name) {
  for (auto f : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (argName(f, i) == name) {
        auto t = dyn_cast<RankedTensorType>(f.getArgument(i).getType());
        return t && t.getRank() == 2 && isa<FloatType>(t.getElementType());
      }
  return false;
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
    std::string why;
    if (failed(pickedFrom(gather.getIndices(), why)))
      return why;
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
      if (name == "all" || name == "auto") {
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
          if (candidate(p) && it != onlyLookups.end() && it->second &&
              (name == "all" ||
               product(cast<RankedTensorType>(p.getType()).getShape()) *
                       cast<RankedTensorType>(p.getType())
                           .getElementTypeBitWidth() /
                       8 >=
                   kSparseTableBytes))
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
        if (!isGlob && isTableArgument(module, name)) {
          module.emitError("--ps-tables '")
              << name
              << "': it is a graph input; a table without values needs "
                 "--ps-init (the servers then create its rows)";
          return failure();
        }
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
      // `auto` may find no table worth serving; `all` was asked for some.
      if (llvm::is_contained(tables, "auto"))
        return;
      module.emitError("--ps-tables=all: no initializer is a table that only "
                       "lookups by model inputs read");
      return signalPassFailure();
    }
    if (optimizer != "sgd" && optimizer != "adagrad" && optimizer != "adam") {
      module.emitError("--ps-optimizer '")
          << optimizer << "': the servers apply sgd, adagrad or adam";
      return signalPassFailure();
    }
    PsInit rowsInit;
    if (std::string why = parsePsInit(init, rowsInit); !why.empty()) {
      module.emitError("--ps-init: ") << why;
      return signalPassFailure();
    }
    if (!(lr > 0)) {
      module.emitError("the parameter server's learning rate must be "
                       "positive, not ")
          << lr;
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
        std::string why;
        FailureOr<Picked> ids = pickedFrom(gather.getIndices(), why);
        assert(succeeded(ids) && "every lookup was checked");
        NamedAttribute attrs[] = {
            NamedAttribute(
                StringAttr::get(ctx, DistDialect::getValueNameAttrName()),
                StringAttr::get(ctx, name)),
            NamedAttribute(
                StringAttr::get(ctx, kPsRowsAttr),
                DictionaryAttr::get(
                    ctx,
                    {NamedAttribute(
                         StringAttr::get(ctx, "ids"),
                         StringAttr::get(ctx,
                                         argName(f, ids->arg.getArgNumber()))),
                     NamedAttribute(StringAttr::get(ctx, "cols"),
                                    DenseI64ArrayAttr::get(ctx, ids->cols)),
                     NamedAttribute(StringAttr::get(ctx, "table"),
                                    StringAttr::get(ctx, table))}))};
        unsigned at = f.getNumArguments();
        if (failed(f.insertArgument(at, gather.getType(),
                                    DictionaryAttr::get(ctx, attrs),
                                    gather.getLoc()))) {
          gather.emitError("cannot add the pulled rows' argument");
          return signalPassFailure();
        }
        Value idsValue = gather.getIndices();
        gather.replaceAllUsesWith(f.getArgument(at));
        gather.erase();
        if (get->use_empty())
          get.erase();
        // What computed the ids, now read by nothing.
        for (Operation *op = idsValue.getDefiningOp();
             op && op->use_empty() && isPure(op);) {
          Operation *next = op->getNumOperands()
                                ? op->getOperand(0).getDefiningOp()
                                : nullptr;
          SmallVector<Operation *> constants;
          for (Value v : op->getOperands())
            if (Operation *c = v.getDefiningOp(); c && c != next)
              constants.push_back(c);
          op->erase();
          for (Operation *c : constants)
            if (c->use_empty() && isPure(c))
              c->erase();
          next = next && next->use_empty() ? next : nullptr;
          op = next;
        }
        ++numLookups;
      }
    }
    double e = eps >= 0 ? eps : optimizer == "adam" ? 1e-8 : 1e-10;
    Builder b(ctx);
    module->setAttr(kPsOptimizerAttr,
                    b.getDictionaryAttr({
                        b.getNamedAttr("optimizer", b.getStringAttr(optimizer)),
                        b.getNamedAttr("lr", b.getF64FloatAttr(lr)),
                        b.getNamedAttr("beta1", b.getF64FloatAttr(beta1)),
                        b.getNamedAttr("beta2", b.getF64FloatAttr(beta2)),
                        b.getNamedAttr("eps", b.getF64FloatAttr(e)),
                        b.getNamedAttr("init", b.getStringAttr(rowsInit.kind)),
                        b.getNamedAttr("init_a", b.getF64FloatAttr(rowsInit.a)),
                        b.getNamedAttr("init_b", b.getF64FloatAttr(rowsInit.b)),
                    }));
    for (ParamOp p : *chosen) {
      auto t = cast<RankedTensorType>(p.getType());
      p->setAttr(kPsTableAttr, PSTableAttr::get(ctx, t.getDimSize(0),
                                                t.getDimSize(1), shards));
      ++numTables;
    }
  }
};

} // namespace

std::string mlir::dist::parsePsInit(StringRef text, PsInit &init) {
  init = PsInit();
  if (text == "rows")
    return "";
  auto [kind, rest] = text.split(':');
  auto [first, second] = rest.split(',');
  double a = 0, b = 0;
  bool numbers = !first.trim().getAsDouble(a) &&
                 !second.trim().getAsDouble(b) && std::isfinite(a) &&
                 std::isfinite(b);
  if ((kind != "uniform" && kind != "normal") || !numbers)
    return "'" + text.str() +
           "' is not rows, uniform:LOW,HIGH or normal:MEAN,STD";
  if (kind == "uniform" && !(a < b))
    return "'" + text.str() + "': LOW must be below HIGH";
  if (kind == "normal" && !(b > 0))
    return "'" + text.str() + "': STD must be positive";
  init.kind = kind.str();
  init.a = a;
  init.b = b;
  return "";
}
