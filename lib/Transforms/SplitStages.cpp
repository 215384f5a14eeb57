//===- SplitStages.cpp - a training step cut into pipeline stages ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// The `dist-split-stages` pass: rewrites the training step into one function
// per pipeline stage and schedule action (forward, backward or
// backward-input and backward-weight, update), with dist.send / dist.recv
// for every value that crosses a cut, stashes between a stage's actions and
// gradient accumulators over micro-batches (see Passes.td for the contract).
//
// Every op of the step gets a stage and a part (forward, backward or its
// input/weight halves, update); ops that only read constants, parameters
// and the step's scalar inputs are copied into each function that uses
// them. The functions are then filled in program order, and each operand
// is looked up in the consumer's function by `Splitter::valueIn`, which
// creates the recv, stash argument or accumulator read that brings it
// there (and the matching send, stash result or accumulation where it is
// made).
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/GraphBuilder.h"
#include "dist/Dialect/Dist/IR/Mesh.h"
#include "dist/Transforms/LayerCosts.h"
#include "dist/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Debug.h"

#include <algorithm>
#include <limits>

#define DEBUG_TYPE "dist-split-stages"

namespace mlir::dist {
#define GEN_PASS_DEF_SPLITSTAGESPASS
#include "dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

/// The parts of a stage's work, in the order one micro-batch goes through
/// them (the norm, with --clip-grad-norm, and the update run once per step,
/// after every micro-batch; the sync, after every stage's update, takes the
/// new values of the parameters it shares with an earlier stage).
enum Part : int {
  kForward = 0,
  kBackward = 1,
  kWeight = 2,
  kNorm = 3,
  kUpdate = 4,
  kSync = 5
};

/// Where an op of the step goes: a stage and a part, or copied into every
/// function that reads it (`copied`).
struct Place {
  int64_t stage = -1;
  int part = kForward;
  bool copied = false;
  /// A backward op outside every layer that reads no gradient (such as a
  /// transpose of an activation for a weight gradient): it goes to the
  /// earliest stage that uses it, once those are known.
  bool pending = false;
  /// Part of --clip-grad-norm's sum of squared gradients over the whole
  /// model: rebuilt per stage in its norm function (see placeNorm).
  bool norm = false;
};

struct SplitStagesPass
    : public dist::impl::SplitStagesPassBase<SplitStagesPass> {
  using Base::Base;
  void runOnOperation() override;
};

/// Builds the stage functions of one step.
class Splitter {
public:
  Splitter(ModuleOp module, func::FuncOp step, int64_t stages, bool split,
           int64_t microBatches)
      : module(module), step(step), stages(stages), splitBackward(split),
        microBatches(microBatches), ctx(module.getContext()) {}

  /// Where each op goes; fails with an error.
  LogicalResult place(const std::vector<int64_t> &opLayer,
                      const std::vector<int64_t> &layerStage);
  /// Creates the functions; fails with an error.
  LogicalResult build();
  /// The part that first reads a gradient summed over the micro-batches:
  /// the norm with --clip-grad-norm, else the update.
  int firstAfterMicroBatches() const { return normTotal ? kNorm : kUpdate; }

  int64_t transfers = 0, stashed = 0, accumulators = 0;

private:
  /// One function being built: its block, arguments it takes, results.
  struct Group {
    func::FuncOp func;
    Block *body = nullptr;
    SmallVector<Value> results;
    SmallVector<DictionaryAttr> resultAttrs;
    SmallVector<DictionaryAttr> argAttrs;
    /// Accumulators this (update) function reads: zeroed at its end.
    SmallVector<ParamOp> zeroAtEnd;
  };

  Group &group(int64_t stage, int part);
  /// `v` (a value of the step) inside the function of (stage, part).
  FailureOr<Value> valueIn(Value v, int64_t stage, int part);
  OpBuilder atEnd(Group &g) { return OpBuilder::atBlockEnd(g.body); }
  /// `v`, defined in group (stage, from), as an argument of (stage, to).
  Value stash(Value v, int64_t stage, int from, int to, Value inFrom);
  /// Sends `inFrom` (in (from, part)) to stage `to`, received in `part`.
  Value transfer(Value inFrom, int64_t from, int64_t to, int part);
  DictionaryAttr named(StringRef name, StringRef attr = "", int64_t index = -1);
  StringRef nameOfArg(unsigned i);

  ModuleOp module;
  func::FuncOp step;
  int64_t stages;
  bool splitBackward;
  int64_t microBatches;
  MLIRContext *ctx;
  llvm::DenseMap<Operation *, Place> places;
  std::map<std::pair<int64_t, int>, Group> groups;
  llvm::DenseMap<std::tuple<Value, int64_t, int>, Value> mapped;
  int64_t nextTag = 0;
  int64_t nextAccumulator = 0;
  /// A parameter read by stage `reader` that stage `owner` updates.
  struct Tied {
    StringAttr name;
    int64_t owner, reader;
  };
  SmallVector<Tied> tied;

  /// --clip-grad-norm: the step's sum of squared gradients (the operand of
  /// the square root marked kGradNormAttr), or null. Each term of the sum
  /// is the squares of one parameter's gradient (`ops`, the reduction and
  /// what follows it, applied to `grad`), summed over the mesh axis of
  /// `allReduce` where the parameter is split (null: replicated). Each
  /// stage's norm function sums its parameters' terms and returns them as
  /// "grad_norm.partial"; the runtime sums those over the stages and hands
  /// the total to every update as "grad_norm.total", which stands for
  /// `normTotal` there.
  struct NormTerm {
    Value grad;
    SmallVector<Operation *> ops;
    Operation *allReduce = nullptr;
  };
  Value normTotal;
  SmallVector<NormTerm> normTerms;
  LogicalResult placeNorm();
  LogicalResult buildNorm();
};

StringRef Splitter::nameOfArg(unsigned i) {
  if (auto n = step.getArgAttrOfType<StringAttr>(
          i, DistDialect::getValueNameAttrName()))
    return n.getValue();
  return "";
}

DictionaryAttr Splitter::named(StringRef name, StringRef attr, int64_t index) {
  SmallVector<NamedAttribute> entries = {NamedAttribute(
      DistDialect::getValueNameAttrName(), StringAttr::get(ctx, name))};
  if (!attr.empty())
    entries.push_back(
        NamedAttribute(StringAttr::get(ctx, attr),
                       IntegerAttr::get(IntegerType::get(ctx, 64), index)));
  return DictionaryAttr::get(ctx, entries);
}

/// Whether `op`'s results feed only the optimizer update, directly or
/// through backward adds that do.
static bool feedsOnlyUpdate(Operation *op) {
  for (Operation *user : op->getUsers()) {
    if (user->hasTrait<OpTrait::IsTerminator>())
      return false;
    StringRef phase = DistDialect::getPhase(user->getLoc());
    if (phase == DistDialect::kPhaseUpdate)
      continue;
    if (phase != DistDialect::kPhaseBackward || !isa<AddOp>(user) ||
        !feedsOnlyUpdate(user))
      return false;
  }
  return !op->use_empty();
}

LogicalResult Splitter::placeNorm() {
  Block &body = step.getBody().front();
  Operation *sqrt = nullptr;
  for (Operation &op : body)
    if (op.hasAttr(kGradNormAttr))
      sqrt = &op;
  if (!sqrt)
    return success();
  if (sqrt->getNumOperands() != 1)
    return sqrt->emitError("dist-split-stages: the gradient norm's square "
                           "root takes one operand");
  normTotal = sqrt->getOperand(0);
  // The sum: adds of terms, and all-reduces over a mesh axis of sums of
  // terms; a term ends in the reduction of one gradient's squares.
  auto markNorm = [&](Operation *op) {
    Place p;
    p.part = kUpdate;
    p.copied = true;
    p.norm = true;
    places[op] = p;
  };
  std::function<LogicalResult(Value, Operation *)> walk =
      [&](Value v, Operation *allReduce) -> LogicalResult {
    Operation *def = v.getDefiningOp();
    if (!def)
      return step.emitError("dist-split-stages: the gradient norm sums a "
                            "value that no op computes");
    if (isa<AddOp>(def) && def->getNumOperands() == 2) {
      markNorm(def);
      for (Value operand : def->getOperands())
        if (failed(walk(operand, allReduce)))
          return failure();
      return success();
    }
    if (isa<shard::AllReduceOp>(def)) {
      markNorm(def);
      if (allReduce)
        return def->emitError("dist-split-stages: the gradient norm "
                              "reduces over two mesh axes");
      return walk(def->getOperand(0), def);
    }
    NormTerm term;
    term.allReduce = allReduce;
    for (Operation *op = def;;) {
      term.ops.push_back(op);
      markNorm(op);
      if (isa<ReduceSumSquareOp>(op)) {
        term.grad = op->getOperand(0);
        break;
      }
      if (op->getNumOperands() != 1 || !op->getOperand(0).getDefiningOp())
        return op->emitError("dist-split-stages: unexpected op in the sum "
                             "of the squared gradients");
      op = op->getOperand(0).getDefiningOp();
    }
    std::reverse(term.ops.begin(), term.ops.end());
    normTerms.push_back(std::move(term));
    return success();
  };
  return walk(normTotal, nullptr);
}

LogicalResult Splitter::buildNorm() {
  if (!normTotal)
    return success();
  // Each stage's terms, summed per all-reduce (one per split axis) and
  // then with the replicated parameters' terms.
  std::map<int64_t, SmallVector<const NormTerm *>> byStage;
  for (const NormTerm &t : normTerms) {
    Operation *def = t.grad.getDefiningOp();
    Place p = def ? places.lookup(def) : Place{};
    if (!def || p.copied)
      return step.emitError("dist-split-stages: a gradient in the norm "
                            "depends on no stage");
    byStage[p.stage].push_back(&t);
  }
  for (auto &[stage, terms] : byStage) {
    llvm::MapVector<Operation *, Value> sums;
    for (const NormTerm *t : terms) {
      FailureOr<Value> grad = valueIn(t->grad, stage, kNorm);
      if (failed(grad))
        return failure();
      OpBuilder b = atEnd(group(stage, kNorm));
      IRMapping map;
      map.map(t->grad, *grad);
      Operation *last = nullptr;
      for (Operation *op : t->ops)
        last = b.clone(*op, map);
      Value square = last->getResult(0);
      Value &sum = sums[t->allReduce];
      sum = sum ? AddOp::create(b, square.getLoc(), sum.getType(),
                                ValueRange{sum, square})
                      .getResult()
                : square;
    }
    OpBuilder b = atEnd(group(stage, kNorm));
    Value partial;
    for (auto &[allReduce, sum] : sums) {
      Value term = sum;
      if (allReduce) {
        IRMapping map;
        map.map(allReduce->getOperand(0), sum);
        term = b.clone(*allReduce, map)->getResult(0);
      }
      partial = partial ? AddOp::create(b, term.getLoc(), term.getType(),
                                        ValueRange{partial, term})
                              .getResult()
                        : term;
    }
    Group &g = group(stage, kNorm);
    g.results.push_back(partial);
    g.resultAttrs.push_back(named("grad_norm.partial"));
  }
  return success();
}

LogicalResult Splitter::place(const std::vector<int64_t> &opLayer,
                              const std::vector<int64_t> &layerStage) {
  Block &body = step.getBody().front();
  auto placeOf = [&](Value v) -> std::optional<Place> {
    Operation *def = v.getDefiningOp();
    if (!def)
      return std::nullopt; // an argument: every function may take it
    return places.lookup(def);
  };
  if (failed(placeNorm()))
    return failure();
  size_t index = 0;
  for (Operation &op : body) {
    int64_t layer = index < opLayer.size() ? opLayer[index] : -1;
    ++index;
    if (op.hasTrait<OpTrait::IsTerminator>() || places.lookup(&op).norm)
      continue;
    StringRef phase = DistDialect::getPhase(op.getLoc());
    int part = phase == DistDialect::kPhaseBackward ? kBackward
               : phase == DistDialect::kPhaseUpdate ? kUpdate
                                                    : kForward;
    // Copied: pure ops that read only constants, parameters, arguments and
    // other copied values, and are either parameter reads and constants or
    // outside every layer.
    bool allCopied = llvm::all_of(op.getOperands(), [&](Value v) {
      std::optional<Place> p = placeOf(v);
      return !p || p->copied;
    });
    if (isPure(&op) && allCopied &&
        (isa<ConstantOp, GetParamOp>(op) || layer < 0 || part == kUpdate)) {
      places[&op] = Place{-1, part, true};
      continue;
    }
    int64_t hi = -1;
    int64_t loBackward = std::numeric_limits<int64_t>::max();
    for (Value v : op.getOperands()) {
      std::optional<Place> p = placeOf(v);
      if (!p || p->copied || p->pending)
        continue;
      hi = std::max(hi, p->stage);
      if (p->part != kForward)
        loBackward = std::min(loBackward, p->stage);
    }
    int64_t layerS =
        layer >= 0 && layer < static_cast<int64_t>(layerStage.size())
            ? layerStage[layer]
            : -1;
    // A parameter's gradient summed over the stages that read it (tied
    // weights): each stage sums its share over the micro-batches, and the
    // update of the earliest adds the shares (see valueIn).
    if (part == kBackward && isa<AddOp>(op) &&
        loBackward != std::numeric_limits<int64_t>::max() && hi != loBackward &&
        feedsOnlyUpdate(&op))
      part = firstAfterMicroBatches();
    int64_t stage;
    if (part == kForward) {
      // Activations only flow to later stages.
      stage = std::max(layerS, hi);
      if (stage < 0)
        stage = 0;
    } else if (part == kBackward) {
      // Gradients only flow to earlier stages; an op that reads no
      // gradient (the loss) goes with the forward values it reads.
      if (loBackward != std::numeric_limits<int64_t>::max()) {
        stage = layerS >= 0 ? std::min(layerS, loBackward) : loBackward;
      } else if (layerS >= 0) {
        stage = layerS;
      } else {
        places[&op] = Place{hi >= 0 ? hi : stages - 1, part, false, true};
        continue;
      }
    } else {
      if (loBackward != std::numeric_limits<int64_t>::max())
        stage = loBackward;
      else if (hi >= 0)
        stage = hi;
      else
        stage = -1;
    }
    if (stage < 0)
      return op.emitError("dist-split-stages: cannot tell which pipeline "
                          "stage this op belongs to");
    places[&op] = Place{stage, part, false};
    LLVM_DEBUG(llvm::dbgs() << "stage " << stage << " part " << part
                            << " layer " << layer << ": " << op << "\n");
  }

  for (Operation &op : llvm::reverse(body)) {
    auto it = places.find(&op);
    if (it == places.end() || !it->second.pending)
      continue;
    int64_t stage = std::numeric_limits<int64_t>::max();
    for (Operation *user : op.getUsers())
      if (auto u = places.find(user);
          u != places.end() && !u->second.copied && !u->second.pending)
        stage = std::min(stage, u->second.stage);
    if (stage != std::numeric_limits<int64_t>::max())
      it->second.stage = stage;
    it->second.pending = false;
  }

  // Tied parameters: a trainable parameter whose reads feed two stages.
  llvm::MapVector<StringAttr, llvm::SmallSetVector<int64_t, 2>> readers;
  for (Operation &op : body) {
    Place p = places.lookup(&op);
    if (p.copied || op.hasTrait<OpTrait::IsTerminator>())
      continue;
    SmallVector<Value> work(op.getOperands());
    while (!work.empty()) {
      Value v = work.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || !places.lookup(def).copied)
        continue;
      if (auto get = dyn_cast<GetParamOp>(def)) {
        auto param = module.lookupSymbol<ParamOp>(get.getNameAttr());
        if (param && param.getTrainable())
          readers[get.getNameAttr().getAttr()].insert(p.stage);
        continue;
      }
      llvm::append_range(work, def->getOperands());
    }
  }
  // A parameter read in several stages (tied weights) is updated by one,
  // its owner (where its gradient's shares meet), which sends the new value
  // to the others' sync.
  for (auto &[name, where] : readers) {
    if (where.size() < 2)
      continue;
    int64_t owner = -1;
    for (auto set : body.getOps<SetParamOp>())
      if (set.getNameAttr().getAttr() == name)
        owner = places.lookup(set).stage;
    if (owner < 0 || !where.contains(owner))
      return step.emitError("dist-split-stages: trainable parameter '")
             << name.getValue() << "' is read in pipeline stages " << where[0]
             << " and " << where[1]
             << ", and no stage that reads it updates it (give stage "
                "boundaries with --pp-split that keep its readers in one "
                "stage)";
    for (int64_t s : where)
      if (s != owner)
        tied.push_back({name, owner, s});
  }

  // Backward-input and backward-weight: a backward op another stage's
  // gradient (or the loss) depends on is backward-input.
  if (splitBackward) {
    llvm::DenseSet<Operation *> input;
    SmallVector<Operation *> work;
    auto mark = [&](Operation *op) {
      if (op && places.lookup(op).part == kBackward &&
          !places.lookup(op).copied && input.insert(op).second)
        work.push_back(op);
    };
    for (Operation &op : body) {
      Place p = places.lookup(&op);
      if (op.hasTrait<OpTrait::IsTerminator>()) {
        for (Value v : op.getOperands())
          mark(v.getDefiningOp());
        continue;
      }
      if (p.copied || p.part != kBackward)
        continue;
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp()) {
          Place q = places.lookup(def);
          if (!q.copied && q.part == kBackward && q.stage != p.stage)
            mark(def);
        }
    }
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      int64_t s = places.lookup(op).stage;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && places.lookup(def).stage == s)
          mark(def);
    }
    for (auto &[op, p] : places)
      if (!p.copied && p.part == kBackward && !input.contains(op))
        p.part = kWeight;
  }
  return success();
}

Splitter::Group &Splitter::group(int64_t stage, int part) {
  Group &g = groups[{stage, part}];
  if (g.func)
    return g;
  static const char *names[] = {"forward", "backward", "backward_weight",
                                "norm",    "update",   "sync"};
  StringRef action = names[part];
  if (part == kBackward && splitBackward)
    action = "backward_input";
  OpBuilder b(ctx);
  b.setInsertionPoint(step);
  std::string name =
      (step.getSymName() + "_s" + Twine(stage) + "_" + action).str();
  g.func = func::FuncOp::create(b, step.getLoc(), name,
                                FunctionType::get(ctx, {}, {}));
  g.func->setAttr(
      "dist.pipeline_action",
      DictionaryAttr::get(
          ctx,
          {NamedAttribute(StringAttr::get(ctx, "stage"),
                          IntegerAttr::get(IntegerType::get(ctx, 64), stage)),
           NamedAttribute(StringAttr::get(ctx, "action"),
                          StringAttr::get(ctx, action))}));
  g.body = g.func.addEntryBlock();
  return g;
}

Value Splitter::stash(Value v, int64_t stage, int from, int to, Value inFrom) {
  Group &src = group(stage, from);
  Group &dst = group(stage, to);
  int64_t k = static_cast<int64_t>(src.results.size());
  std::string name =
      ("stash." + Twine(from) + "." + Twine(to) + "." + Twine(k)).str();
  src.results.push_back(inFrom);
  src.resultAttrs.push_back(named(name, "dist.stash", k));
  Value arg = dst.body->addArgument(v.getType(), v.getLoc());
  dst.argAttrs.push_back(named(name, "dist.stash", k));
  ++stashed;
  return arg;
}

Value Splitter::transfer(Value inFrom, int64_t from, int64_t to, int part) {
  int64_t tag = nextTag++;
  OpBuilder sb = atEnd(group(from, part));
  SendOp::create(sb, inFrom.getLoc(), inFrom, to, tag);
  OpBuilder rb = atEnd(group(to, part));
  ++transfers;
  return RecvOp::create(rb, inFrom.getLoc(), inFrom.getType(), from, tag)
      .getResult();
}

FailureOr<Value> Splitter::valueIn(Value v, int64_t stage, int part) {
  auto key = std::make_tuple(v, stage, part);
  if (Value m = mapped.lookup(key))
    return m;
  Value result;
  Operation *def = v.getDefiningOp();
  Place p = def ? places.lookup(def) : Place{-1, kForward, true};
  auto fail = [&](const Twine &why) -> FailureOr<Value> {
    return (def ? def->emitError() : step.emitError())
               << "dist-split-stages: " << why,
           failure();
  };
  if (normTotal && v == normTotal) {
    // The sum of squared gradients over every stage: an input of the
    // update, which the runtime sums from the stages' norm functions.
    if (part != kUpdate)
      return fail("the gradient norm is read outside the optimizer update");
    Group &g = group(stage, kUpdate);
    result = g.body->addArgument(v.getType(), v.getLoc());
    g.argAttrs.push_back(named("grad_norm.total"));
  } else if (!def) {
    // One of the step's inputs, taken by every function that reads it.
    Group &g = group(stage, part);
    auto arg = cast<BlockArgument>(v);
    result = g.body->addArgument(v.getType(), v.getLoc());
    g.argAttrs.push_back(named(nameOfArg(arg.getArgNumber())));
  } else if (p.copied) {
    OpBuilder b = atEnd(group(stage, part));
    IRMapping map;
    for (Value operand : def->getOperands()) {
      FailureOr<Value> in = valueIn(operand, stage, part);
      if (failed(in))
        return failure();
      map.map(operand, *in);
    }
    Operation *clone = b.clone(*def, map);
    result = clone->getResult(cast<OpResult>(v).getResultNumber());
    for (OpResult r : def->getResults())
      mapped[std::make_tuple(Value(r), stage, part)] =
          clone->getResult(r.getResultNumber());
  } else if (p.stage == stage && p.part == part) {
    return fail("a value is used before the op that defines it was placed");
  } else if (normTotal && p.stage == stage && part == kUpdate &&
             (p.part == kBackward || p.part == kWeight)) {
    // With --clip-grad-norm the norm reads the gradient's mean (averaged
    // over dp there) and keeps it for the update.
    FailureOr<Value> in = valueIn(v, stage, kNorm);
    if (failed(in))
      return failure();
    result = stash(v, stage, kNorm, kUpdate, *in);
  } else if (p.stage == stage && part == firstAfterMicroBatches()) {
    if (p.part == kForward)
      return fail("the optimizer update reads a forward value of the stage");
    // A gradient summed over micro-batches: the producer adds it to an
    // accumulator, the update reads the mean and zeroes it.
    FailureOr<Value> in = valueIn(v, stage, p.part);
    if (failed(in))
      return failure();
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !isa<FloatType>(type.getElementType()))
      return fail("a value summed over micro-batches must be a "
                  "floating-point tensor");
    OpBuilder mb(module.getBody(), module.getBody()->end());
    std::string name =
        ("s" + Twine(stage) + ".grad_acc." + Twine(nextAccumulator++)).str();
    while (module.lookupSymbol(name))
      name += "_";
    auto acc =
        ParamOp::create(mb, v.getLoc(), mb.getStringAttr(name),
                        TypeAttr::get(type), UnitAttr(), mb.getUnitAttr());
    acc->setAttr(kGradAccumulatorAttr, mb.getUnitAttr());
    ++accumulators;
    {
      OpBuilder b = atEnd(group(stage, p.part));
      GraphBuilder gb(b, step);
      gb.loc = v.getLoc();
      Value old = GetParamOp::create(b, gb.loc, type, name).getResult();
      SetParamOp::create(b, gb.loc, name, gb.add(old, *in));
      if (gb.hadError)
        return failure();
    }
    Group &u = group(stage, part);
    OpBuilder b = atEnd(u);
    GraphBuilder gb(b, step);
    gb.loc = v.getLoc();
    Value sum = GetParamOp::create(b, gb.loc, type, name).getResult();
    result = microBatches == 1
                 ? sum
                 : gb.mul(sum, gb.scalarLike(sum, 1.0 / double(microBatches)));
    if (gb.hadError)
      return failure();
    u.zeroAtEnd.push_back(acc);
  } else if (part == firstAfterMicroBatches() && p.stage > stage &&
             (p.part == kBackward || p.part == kWeight)) {
    // A later stage's share of a tied parameter's gradient: summed over
    // the micro-batches there and sent by that stage's update (or norm).
    FailureOr<Value> in = valueIn(v, p.stage, part);
    if (failed(in))
      return failure();
    result = transfer(*in, p.stage, stage, part);
  } else if (p.stage == stage) {
    if (p.part > part)
      return fail("a value flows from a later action of a stage to an "
                  "earlier one");
    FailureOr<Value> in = valueIn(v, stage, p.part);
    if (failed(in))
      return failure();
    result = stash(v, stage, p.part, part, *in);
  } else if (p.part >= kNorm || part >= kNorm) {
    return fail(Twine("the optimizer update of stage ") +
                Twine(part >= kNorm ? stage : p.stage) +
                " needs a value of stage " +
                Twine(part >= kNorm ? p.stage : stage) +
                " that is not a gradient summed over micro-batches");
  } else if (p.stage < stage && p.part == kForward) {
    // Forward to forward, straight to the stage that reads it; a later
    // action of that stage keeps it from its forward.
    FailureOr<Value> in = part == kForward ? valueIn(v, p.stage, kForward)
                                           : valueIn(v, stage, kForward);
    if (failed(in))
      return failure();
    result = part == kForward ? transfer(*in, p.stage, stage, kForward)
                              : stash(v, stage, kForward, part, *in);
  } else if (p.stage > stage && p.part != kWeight) {
    // To an earlier stage with the gradients (a forward value of the later
    // stage travels with its backward).
    if (part == kForward)
      return fail(Twine("a forward op of stage ") + Twine(stage) +
                  " reads a value of the later stage " + Twine(p.stage));
    FailureOr<Value> in = part == kBackward ? valueIn(v, p.stage, kBackward)
                                            : valueIn(v, stage, kBackward);
    if (failed(in))
      return failure();
    result = part == kBackward ? transfer(*in, p.stage, stage, kBackward)
                               : stash(v, stage, kBackward, part, *in);
  } else {
    return fail(Twine("a value of stage ") + Twine(p.stage) +
                " is read by stage " + Twine(stage) +
                " in an earlier action than the one that makes it");
  }
  mapped[key] = result;
  return result;
}

LogicalResult Splitter::build() {
  Block &body = step.getBody().front();
  Operation *ret = body.getTerminator();
  for (Operation &op : body) {
    if (&op == ret)
      break;
    Place p = places.lookup(&op);
    if (p.copied)
      continue;
    IRMapping map;
    for (Value v : op.getOperands()) {
      FailureOr<Value> in = valueIn(v, p.stage, p.part);
      if (failed(in))
        return failure();
      map.map(v, *in);
    }
    OpBuilder b = atEnd(group(p.stage, p.part));
    Operation *clone = b.clone(op, map);
    for (OpResult r : op.getResults())
      mapped[std::make_tuple(Value(r), p.stage, p.part)] =
          clone->getResult(r.getResultNumber());
  }
  if (failed(buildNorm()))
    return failure();
  // Tied parameters: the owner's update sends the new value to the sync of
  // each other stage that reads it.
  for (const Tied &t : tied) {
    Value updated;
    for (auto set : body.getOps<SetParamOp>())
      if (set.getNameAttr().getAttr() == t.name)
        updated = mapped.lookup(
            std::make_tuple(set.getValue(), t.owner, int(kUpdate)));
    if (!updated)
      return step.emitError("dist-split-stages: the update of tied "
                            "parameter '")
             << t.name.getValue() << "' is not in stage " << t.owner;
    int64_t tag = nextTag++;
    OpBuilder sb = atEnd(group(t.owner, kUpdate));
    SendOp::create(sb, updated.getLoc(), updated, t.reader, tag);
    OpBuilder rb = atEnd(group(t.reader, kSync));
    Value received =
        RecvOp::create(rb, updated.getLoc(), updated.getType(), t.owner, tag)
            .getResult();
    SetParamOp::create(rb, updated.getLoc(), t.name.getValue(), received);
    ++transfers;
  }

  // The loss: first result of the function that computes it.
  if (ret->getNumOperands() != 1)
    return step.emitError("dist-split-stages: a training step returns only "
                          "its loss");
  Value loss = ret->getOperand(0);
  Operation *lossDef = loss.getDefiningOp();
  Place lp = lossDef ? places.lookup(lossDef) : Place{};
  if (!lossDef || lp.copied)
    return step.emitError("dist-split-stages: the loss does not depend on "
                          "the model");
  FailureOr<Value> lossIn = valueIn(loss, lp.stage, lp.part);
  if (failed(lossIn))
    return failure();
  Group &lg = group(lp.stage, lp.part);
  lg.results.insert(lg.results.begin(), *lossIn);
  lg.resultAttrs.insert(lg.resultAttrs.begin(), named("loss"));

  // Every stage runs every action of its schedule, even with nothing to do.
  for (int64_t s = 0; s < stages; ++s)
    for (int part : {int(kForward), int(kBackward), int(kUpdate)})
      group(s, part);
  if (splitBackward)
    for (int64_t s = 0; s < stages; ++s)
      group(s, kWeight);

  for (auto &[key, g] : groups) {
    // In order of stage, then action.
    g.func->moveBefore(step);
    OpBuilder b = atEnd(g);
    for (ParamOp acc : g.zeroAtEnd) {
      auto type = cast<RankedTensorType>(acc.getType());
      Value zero = ConstantOp::create(
                       b, acc.getLoc(), type,
                       DenseElementsAttr::get(
                           type, b.getFloatAttr(type.getElementType(), 0.0)))
                       .getResult();
      SetParamOp::create(b, acc.getLoc(), acc.getSymName(), zero);
    }
    // set_param must stay after every read of its parameter in the
    // function: they move to the end, before the return.
    SmallVector<Operation *> sets;
    for (Operation &op : *g.body)
      if (isa<SetParamOp>(op))
        sets.push_back(&op);
    for (Operation *op : sets)
      op->moveBefore(g.body, g.body->end());
    func::ReturnOp::create(b, step.getLoc(), g.results);
    SmallVector<Type> results;
    for (Value v : g.results)
      results.push_back(v.getType());
    g.func.setFunctionType(
        FunctionType::get(ctx, g.body->getArgumentTypes(), results));
    if (!g.argAttrs.empty())
      g.func.setAllArgAttrs(g.argAttrs);
    if (!g.resultAttrs.empty())
      g.func.setAllResultAttrs(g.resultAttrs);
  }
  return success();
}

void SplitStagesPass::runOnOperation() {
  ModuleOp module = getOperation();
  func::FuncOp step;
  for (auto f : module.getOps<func::FuncOp>())
    if (f->hasAttr("dist.train_step"))
      step = f;
  // The mesh asked for (dist.mesh), or the grid dist-partition declared.
  auto axisSize = [&](StringRef axis) -> int64_t {
    if (MeshAttr requested = getRequestedMesh(module))
      return requested.getSize(axis);
    if (std::optional<MeshSpec> grid = getModuleMesh(module))
      return grid->sizeOf(axis);
    return 1;
  };
  int64_t p = stages;
  if (p == 0)
    p = axisSize("pp");
  if (p <= 1 && !step)
    return;
  if (!step) {
    module.emitError("dist-split-stages: pipeline stages need a training "
                     "step (dist-opt --train); pipelined inference is not "
                     "supported yet");
    return signalPassFailure();
  }
  for (Type t : step.getArgumentTypes())
    if (auto r = dyn_cast<RankedTensorType>(t); !r || !r.hasStaticShape()) {
      if (p <= 1)
        return;
      step.emitError("dist-split-stages: pipeline stages need static "
                     "shapes, and an input of the step has type ")
          << t << " (export the model with a fixed batch)";
      return signalPassFailure();
    }

  FailureOr<FunctionCosts> costs = collectLayerCosts(step);
  if (failed(costs))
    return signalPassFailure();
  // The planner's stages, when it placed the forward ops.
  std::vector<int64_t> layerStage(costs->layers.size(), -1);
  int64_t planned = 0;
  {
    size_t index = 0;
    for (Operation &op : step.getBody().front()) {
      int64_t layer =
          index < costs->opLayer.size() ? costs->opLayer[index] : -1;
      ++index;
      auto attr = op.getAttrOfType<StageAttr>("dist.stage");
      if (!attr || layer < 0)
        continue;
      planned = attr.getCount();
      layerStage[layer] = std::max(layerStage[layer], attr.getIndex());
    }
  }
  // A plan of one stage (the layout of a mesh without pp) is no pipeline.
  if (planned <= 1)
    planned = 0;
  if (p == 0)
    p = planned;
  if (p <= 1)
    return;
  if (planned && planned != p) {
    module.emitError("dist-split-stages: the plan has ")
        << planned << " stages, the mesh asks for " << p;
    return signalPassFailure();
  }
  int64_t numLayers = static_cast<int64_t>(costs->layers.size());
  if (numLayers < p) {
    module.emitError("dist-split-stages: ")
        << p << " pipeline stages for a model of " << numLayers
        << " layers (every stage needs one)";
    return signalPassFailure();
  }
  if (planned) {
    // Layers the plan did not reach follow the one before them.
    for (int64_t i = 0; i < numLayers; ++i)
      if (layerStage[i] < 0)
        layerStage[i] = i ? layerStage[i - 1] : 0;
  }
  if (!planned || !split.empty()) {
    auto parsed = layerStages(*costs, p, split, step);
    if (failed(parsed))
      return signalPassFailure();
    // A plan of a --mesh with pp cut where the split option says (the
    // planner shares layerStages); a searched or given plan may not.
    if (planned && *parsed != layerStage) {
      auto first = [&](const std::vector<int64_t> &stageOf) {
        std::string names;
        for (int64_t i = 1; i < numLayers; ++i)
          if (stageOf[i] != stageOf[i - 1])
            names += (names.empty() ? "" : ",") + costs->layers[i].name;
        return names;
      };
      module.emitError("dist-split-stages: the plan starts stages 1.. at "
                       "layers ")
          << first(layerStage) << ", the split option at " << first(*parsed)
          << " (give one of them)";
      return signalPassFailure();
    }
    layerStage = *parsed;
  }

  auto train = step->getAttrOfType<DictionaryAttr>("dist.train");
  int64_t built = 1;
  if (train)
    if (auto m = train.getAs<IntegerAttr>("micro_batches"))
      built = m.getInt();
  int64_t m = int64_t(microBatches) ? int64_t(microBatches) : built;
  if (m != built) {
    module.emitError("dist-split-stages: the training step was built for ")
        << built << " micro-batches, the option asks for " << m;
    return signalPassFailure();
  }

  bool splitBackward = ::dist_rt::pipeline::splitsBackward(schedule);
  Splitter splitter(module, step, p, splitBackward, m);
  if (failed(splitter.place(costs->opLayer, layerStage)) ||
      failed(splitter.build()))
    return signalPassFailure();
  numTransfers += splitter.transfers;
  numStashed += splitter.stashed;
  numAccumulators += splitter.accumulators;

  MLIRContext *ctx = &getContext();
  auto i64 = [&](int64_t v) {
    return IntegerAttr::get(IntegerType::get(ctx, 64), v);
  };
  SmallVector<NamedAttribute> entries = {
      NamedAttribute(StringAttr::get(ctx, "stages"), i64(p)),
      NamedAttribute(StringAttr::get(ctx, "micro_batches"), i64(m)),
      NamedAttribute(
          StringAttr::get(ctx, "schedule"),
          StringAttr::get(ctx, stringifyEnumOption(schedule.getValue())))};
  if (train)
    entries.push_back(NamedAttribute(StringAttr::get(ctx, "train"), train));
  SmallVector<Attribute> bounds;
  for (int64_t s = 0; s < p; ++s) {
    int64_t first = -1, last = -1;
    for (int64_t i = 0; i < numLayers; ++i)
      if (layerStage[i] == s) {
        if (first < 0)
          first = i;
        last = i;
      }
    bounds.push_back(
        StringAttr::get(ctx, first < 0 ? std::string("")
                                       : costs->layers[first].name + " .. " +
                                             costs->layers[last].name));
  }
  entries.push_back(NamedAttribute(StringAttr::get(ctx, "layers"),
                                   ArrayAttr::get(ctx, bounds)));
  module->setAttr("dist.pipeline", DictionaryAttr::get(ctx, entries));
  LLVM_DEBUG(llvm::dbgs() << "split the step into " << p << " stages, "
                          << splitter.transfers << " transfers\n");
  step.erase();
}

} // namespace
