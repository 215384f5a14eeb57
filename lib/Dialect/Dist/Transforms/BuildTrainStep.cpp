//===- BuildTrainStep.cpp - loss, autodiff and optimizer update -----------===//
// SPDX-License-Identifier: Apache-2.0
//
// The `dist-build-train-step` pass: turns the inference graph of a module
// into an additional `train_step` function (forward, loss, reverse-mode
// gradients through GradientOpInterface, optimizer update written back with
// dist.set_param). Losses and optimizers follow PyTorch's definitions
// (torch.nn.*Loss with mean reduction, torch.optim's single-tensor SGD,
// Adam and AdamW) so that a compiled run reproduces a PyTorch run.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/GraphBuilder.h"
#include "dist/Dialect/Dist/IR/Mesh.h"
#include "dist/Dialect/Dist/Transforms/Passes.h"

#include "dist/Dialect/Dist/Transforms/Batch.h"
#include "dist_rt/pipeline_schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>

#define DEBUG_TYPE "dist-build-train-step"

namespace mlir::dist {
#define GEN_PASS_DEF_BUILDTRAINSTEPPASS
#include "dist/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

StringRef valueName(func::FuncOp f, unsigned i, bool result) {
  DictionaryAttr d = result ? f.getResultAttrDict(i) : f.getArgAttrDict(i);
  if (d)
    if (auto n = d.getAs<StringAttr>(DistDialect::getValueNameAttrName()))
      return n.getValue();
  return "";
}

/// Argument or result attributes giving the value the name `name`.
DictionaryAttr namedValue(MLIRContext *ctx, StringRef name) {
  return DictionaryAttr::get(
      ctx,
      {NamedAttribute(StringAttr::get(ctx, DistDialect::getValueNameAttrName()),
                      StringAttr::get(ctx, name))});
}

struct BuildTrainStepPass
    : public dist::impl::BuildTrainStepPassBase<BuildTrainStepPass> {
  using Base::Base;

  void runOnOperation() override;
  /// Adds the training step built from the forward function `entry`.
  LogicalResult buildStep(ModuleOp module, func::FuncOp entry);

  /// The loss value (a scalar of the output's float type) built from the
  /// forward result `y`; adds the `label` argument when one is needed.
  FailureOr<Value> buildLoss(func::FuncOp step, GraphBuilder &g, Value y);
  /// Classes of the cross_entropy loss's logits (their last dimension),
  /// which the runtime checks labels against; 0 for other losses or a
  /// dynamic class count.
  int64_t labelClasses = 0;
  /// Replaces every BatchNormalization by its training form.
  LogicalResult expandBatchNorms(func::FuncOp step);
  /// Reverse sweep: the gradient of `loss` with respect to every active
  /// value (a float value that depends on a parameter), in `grads`.
  LogicalResult differentiate(func::FuncOp step, Value loss,
                              llvm::DenseMap<Value, Value> &grads);
  /// Optimizer update of parameter `param` (read as `value`) with gradient
  /// `grad`; `lr` and `t` are scalars of the parameter's element type.
  void update(ModuleOp module, GraphBuilder &g, ParamOp param, Value value,
              Value grad, Value lr, Value t);
  /// Names of the parameters `freeze` names or matches.
  llvm::StringSet<> frozen;
  /// Fills `frozen` from the `freeze` option; fails on a name or pattern
  /// that matches no parameter.
  LogicalResult resolveFrozen(ModuleOp module);
  /// Declares a zero-initialised optimizer-state parameter next to `param`.
  ParamOp addState(ModuleOp module, ParamOp param, StringRef suffix);

  double effectiveWeightDecay() const {
    if (weightDecay >= 0)
      return weightDecay;
    return optimizer == OptimizerKind::AdamW ? 0.01 : 0.0;
  }
};

/// A scalar of element type `t` read from a rank-0 f32 argument.
Value asElem(GraphBuilder &g, Value f32Scalar, Type t) {
  return t == g.elemOf(f32Scalar) ? f32Scalar : g.castTo(f32Scalar, t);
}

FailureOr<Value> BuildTrainStepPass::buildLoss(func::FuncOp step,
                                               GraphBuilder &g, Value y) {
  auto yt = g.typeOf(y);
  MLIRContext *ctx = &getContext();
  auto addLabel = [&](Type t) {
    unsigned idx = step.getNumArguments();
    (void)step.insertArgument(idx, t, namedValue(ctx, "label"), step.getLoc());
    return step.getArgument(idx);
  };
  if (loss == LossKind::Model) {
    if (yt.getNumElements() != 1 || !yt.hasStaticShape())
      return step.emitError("--loss=model needs a scalar output, but the "
                            "output has type ")
             << yt;
    return yt.getRank() == 0 ? y : g.reshape(y, {});
  }
  auto all = [&](Value v) {
    SmallVector<int64_t> axes(g.typeOf(v).getRank());
    std::iota(axes.begin(), axes.end(), 0);
    return axes;
  };
  if (loss == LossKind::MSE) {
    Value label = addLabel(yt);
    Value d = g.sub(y, label);
    Value sq = g.mul(d, d);
    if (yt.getRank() == 0)
      return sq;
    return g.reduceMean(sq, all(sq), false);
  }
  if (loss == LossKind::BCE) {
    // torch.nn.BCELoss: -(t log p + (1 - t) log(1 - p)), logs clamped at
    // -100, mean over all elements. A saturated sigmoid gives p = 0 or
    // 1 - p = 0: there log takes the -100 through `where`, and the log of
    // max(p, smallest normal) that `where` drops is finite, so its gradient
    // is 0 (as PyTorch's) instead of 0 * (1 / 0) = NaN.
    Value label = addLabel(yt);
    Value floor = g.scalarLike(y, -100);
    Value one = g.scalarLike(y, 1);
    Type elem = yt.getElementType();
    double tiny = elem.isF16() ? 6.103515625e-05 : 1.1754943508222875e-38;
    auto clampedLog = [&](Value p) {
      Value safe = g.one<MaxOp>({p, g.scalarLike(p, tiny)});
      Value lg = g.one<MaxOp>({g.one<LogOp>({safe}), floor});
      return g.where(g.greaterZero(p), lg, floor);
    };
    Value lp = clampedLog(y);
    Value lq = clampedLog(g.sub(one, y));
    Value l = g.neg(g.add(g.mul(label, lp), g.mul(g.sub(one, label), lq)));
    if (yt.getRank() == 0)
      return l;
    return g.reduceMean(l, all(l), false);
  }
  if (loss == LossKind::CrossEntropy) {
    int64_t r = yt.getRank();
    if (r < 2)
      return step.emitError("--loss=cross_entropy needs logits of shape "
                            "[N, C] or [N, T, C], got ")
             << yt;
    SmallVector<int64_t> labelShape(yt.getShape().drop_back());
    if (!ShapedType::isDynamic(yt.getShape().back()))
      labelClasses = yt.getShape().back();
    Value label =
        addLabel(RankedTensorType::get(labelShape, IntegerType::get(ctx, 64)));
    // ONNX wants the classes on axis 1: [N, T, C] -> [N, C, T].
    Value scores = y;
    if (r > 2) {
      SmallVector<int64_t> perm{0, r - 1};
      for (int64_t i = 1; i < r - 1; ++i)
        perm.push_back(i);
      scores = g.transpose(y, perm);
    }
    // The mean over the labels that are not ignored, as PyTorch's, except
    // that a batch where every label is ignored (padding at a sequence's
    // tail) has loss 0 and no gradient, where PyTorch's 0/0 would be NaN and
    // stop the run: the sum divided by max(count, 1).
    Operation *ce = g.make<SoftmaxCrossEntropyLossOp>(
        {scores, label},
        {g.i64("ignore_index", ignoreIndex),
         g.attr("reduction", StringAttr::get(ctx, "sum"))},
        2);
    if (!ce)
      return failure();
    Value kept = g.one<NotOp>({g.one<EqualOp>(
        {label, g.scalarLike(label, static_cast<double>(ignoreIndex))})});
    Value count =
        g.reduceSum(g.castTo(kept, yt.getElementType()), all(label), false);
    count = g.one<MaxOp>({count, g.scalarLike(count, 1)});
    return g.div(ce->getResult(0), count);
  }
  llvm_unreachable("every loss is handled above");
}

LogicalResult BuildTrainStepPass::expandBatchNorms(func::FuncOp step) {
  ModuleOp module = getOperation();
  SmallVector<BatchNormOp> bns;
  step.walk([&](BatchNormOp bn) { bns.push_back(bn); });
  for (BatchNormOp bn : bns) {
    OpBuilder b(bn);
    GraphBuilder g(b, bn);
    Value x = bn.getInput();
    auto xt = g.typeOf(x);
    int64_t r = xt.getRank();
    SmallVector<int64_t> axes{0}, bshape{-1};
    for (int64_t i = 2; i < r; ++i) {
      axes.push_back(i);
      bshape.push_back(1);
    }
    // Batch statistics (biased variance normalises, as PyTorch does).
    auto mom = g.moments(x, axes, bn.getEpsilon().convertToDouble());
    Value mean = mom.mean, xc = mom.centered, var = mom.var, inv = mom.inv;
    Value yv = g.add(g.mul(g.mul(xc, inv), g.reshape(bn.getScale(), bshape)),
                     g.reshape(bn.getB(), bshape));
    // Running statistics: ONNX momentum m keeps m of the old value
    // (PyTorch's momentum is 1 - m); the variance is the unbiased one.
    double m = bn.getMomentum().convertToDouble();
    Value n = g.div(g.numel(x, xt.getElementType()),
                    g.numel(mean, xt.getElementType()));
    Value unbiased = g.div(g.mul(var, n), g.sub(n, g.scalarLike(x, 1)));
    auto stat = [&](Value running, Value batch) {
      Value flat = g.reshapeLike(batch, running);
      return g.add(g.mulC(running, m), g.mulC(flat, 1.0 - m));
    };
    Value newMean = stat(bn.getInputMean(), mean);
    Value newVar = stat(bn.getInputVar(), unbiased);
    if (g.hadError)
      return failure();
    for (auto [running, value] : {std::pair{bn.getInputMean(), newMean},
                                  std::pair{bn.getInputVar(), newVar}}) {
      auto get = running.getDefiningOp<GetParamOp>();
      if (!get)
        continue;
      if (!module.lookupSymbol<ParamOp>(get.getNameAttr()))
        continue;
      OpBuilder end(step.getBody().front().getTerminator());
      SetParamOp::create(end, bn.getLoc(), get.getNameAttr(), value);
    }
    bn.getOutput().replaceAllUsesWith(yv);
    bn.getRunningMean().replaceAllUsesWith(newMean);
    bn.getRunningVar().replaceAllUsesWith(newVar);
    bn.erase();
  }
  return success();
}

LogicalResult
BuildTrainStepPass::differentiate(func::FuncOp step, Value loss,
                                  llvm::DenseMap<Value, Value> &grads) {
  Block &body = step.getBody().front();
  // Active values: floating-point values that depend on a parameter that
  // is not frozen.
  llvm::DenseSet<Value> active;
  // Rows pulled from the parameter server (dist-ps-lookups) are trained
  // like parameters: their gradient is returned for the runtime to push.
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (step.getArgAttr(i, kPsRowsAttr) &&
        isa<FloatType>(getElementTypeOrSelf(step.getArgument(i).getType())))
      active.insert(step.getArgument(i));
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator()) {
    forward.push_back(&op);
    bool fromParam = false;
    if (auto get = dyn_cast<GetParamOp>(op))
      fromParam = isa<FloatType>(getElementTypeOrSelf(get.getType())) &&
                  !frozen.contains(get.getName());
    for (Value v : op.getOperands())
      fromParam |= active.contains(v);
    if (!fromParam)
      continue;
    for (Value r : op.getResults())
      if (isa<FloatType>(getElementTypeOrSelf(r.getType())))
        active.insert(r);
  }
  if (!active.contains(loss))
    return step.emitError(frozen.empty()
                              ? "the loss does not depend on any "
                                "floating-point parameter: nothing to train"
                              : "the loss depends on no floating-point "
                                "parameter that --freeze leaves trainable: "
                                "nothing to train");
  OpBuilder b(body.getTerminator());
  GraphBuilder g(b, step);
  grads[loss] = g.scalarLike(loss, 1.0);
  for (Operation *op : llvm::reverse(forward)) {
    if (isa<GetParamOp, ConstantOp, SetParamOp>(op))
      continue;
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      Value gr = grads.lookup(r);
      resultGrads.push_back(gr);
      any |= static_cast<bool>(gr);
    }
    if (!any)
      continue;
    bool needsOperand = llvm::any_of(
        op->getOperands(), [&](Value v) { return active.contains(v); });
    if (!needsOperand)
      continue;
    auto iface = dyn_cast<GradientOpInterface>(op);
    if (!iface)
      return op->emitOpError("has no gradient rule");
    b.setInsertionPoint(body.getTerminator());
    auto operandGrads = iface.buildGradient(b, resultGrads);
    if (failed(operandGrads))
      return failure();
    for (auto [v, gr] : llvm::zip(op->getOperands(), *operandGrads)) {
      if (!gr || !active.contains(v))
        continue;
      Value &slot = grads[v];
      slot = slot ? g.add(slot, gr) : gr;
    }
  }
  return failure(g.hadError);
}

LogicalResult BuildTrainStepPass::resolveFrozen(ModuleOp module) {
  for (const std::string &name : freeze) {
    bool matched = false;
    bool isGlob = StringRef(name).find_first_of("*?[") != StringRef::npos;
    if (!isGlob) {
      auto p = module.lookupSymbol<ParamOp>(name);
      matched = p && !p.getState();
      if (matched)
        frozen.insert(name);
    } else {
      auto glob = llvm::GlobPattern::create(name);
      if (!glob) {
        module.emitError("--freeze '")
            << name << "': " << llvm::toString(glob.takeError());
        return failure();
      }
      for (auto p : module.getOps<ParamOp>())
        if (!p.getState() && glob->match(p.getSymName())) {
          frozen.insert(p.getSymName());
          matched = true;
        }
    }
    if (!matched) {
      module.emitError("--freeze '")
          << name << "': "
          << (isGlob ? "no initializer's name matches the pattern"
                     : "the model has no initializer of that name");
      return failure();
    }
  }
  return success();
}

ParamOp BuildTrainStepPass::addState(ModuleOp module, ParamOp param,
                                     StringRef suffix) {
  std::string name = (param.getSymName() + "." + suffix).str();
  for (int i = 1; module.lookupSymbol(name); ++i)
    name = (param.getSymName() + "." + suffix + "." + Twine(i)).str();
  OpBuilder b(module.getBody(), module.getBody()->end());
  ++numStateParams;
  auto state =
      ParamOp::create(b, param.getLoc(), b.getStringAttr(name),
                      param.getTypeAttr(), UnitAttr(), b.getUnitAttr());
  // Optimizer state is split like its parameter (tensor parallelism).
  if (Attribute shard = param->getAttr(kParamShardAttr))
    state->setAttr(kParamShardAttr, shard);
  return state;
}

void BuildTrainStepPass::update(ModuleOp module, GraphBuilder &g, ParamOp param,
                                Value p, Value grad, Value lr, Value t) {
  OpBuilder &b = g.b;
  Location loc = g.loc;
  double wd = effectiveWeightDecay();
  auto read = [&](ParamOp s) {
    return GetParamOp::create(b, loc, s.getType(), s.getSymName());
  };
  auto write = [&](ParamOp s, Value v) {
    if (v.getType() != s.getType())
      v = g.reshape(v, cast<RankedTensorType>(s.getType()).getShape());
    SetParamOp::create(b, loc, s.getSymName(), v);
  };
  Value d = grad;
  if (optimizer != OptimizerKind::AdamW && wd != 0)
    d = g.add(d, g.mulC(p, wd));
  if (optimizer == OptimizerKind::SGD) {
    write(param, g.sub(p, g.mul(lr, d)));
    return;
  }
  if (optimizer == OptimizerKind::Momentum) {
    ParamOp bufP = addState(module, param, "momentum_buffer");
    Value buf = g.add(g.mulC(read(bufP), momentum), d);
    write(bufP, buf);
    write(param, g.sub(p, g.mul(lr, buf)));
    return;
  }
  // Adam / AdamW (torch.optim single-tensor form).
  Value pw = p;
  if (optimizer == OptimizerKind::AdamW && wd != 0)
    pw = g.mul(p, g.sub(g.scalarLike(p, 1), g.mulC(lr, wd)));
  ParamOp mP = addState(module, param, "exp_avg");
  ParamOp vP = addState(module, param, "exp_avg_sq");
  Value m = read(mP), v = read(vP);
  // exp_avg.lerp_(grad, 1 - beta1) (torch 2; torch 1.13's mul_().add_() is
  // the same value up to rounding)
  Value m2 = g.add(m, g.mulC(g.sub(d, m), 1.0 - beta1));
  // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
  Value v2 = g.add(g.mulC(v, beta2), g.mulC(g.mul(d, d), 1.0 - beta2));
  Value one = g.scalarLike(p, 1);
  Value bc1 = g.sub(one, g.one<PowOp>({g.scalarLike(p, beta1), t}));
  Value bc2 = g.sub(one, g.one<PowOp>({g.scalarLike(p, beta2), t}));
  Value stepSize = g.div(lr, bc1);
  Value denom = g.add(g.div(g.one<SqrtOp>({v2}), g.one<SqrtOp>({bc2})),
                      g.scalarLike(p, eps));
  write(mP, m2);
  write(vP, v2);
  write(param, g.sub(pw, g.mul(stepSize, g.div(m2, denom))));
}

void BuildTrainStepPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  BuildTrainStepPassOptions opts{
      loss,       lossOutput,  ignoreIndex, optimizer, lr,
      lrSchedule, warmupSteps, momentum,    beta1,     beta2,
      eps,        weightDecay, clipGradNorm};
  std::string option;
  std::string why = checkTrainStepOptions(opts, option);
  if (!why.empty()) {
    module.emitError("dist-build-train-step option ") << option << ": " << why;
    return signalPassFailure();
  }

  if (failed(resolveFrozen(module)))
    return signalPassFailure();

  func::FuncOp entry;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (!f.isPublic() || f.isExternal() || f->hasAttr("dist.train_step"))
      continue;
    if (entry) {
      module.emitError("more than one public function: cannot tell which "
                       "one to train");
      return signalPassFailure();
    }
    entry = f;
  }
  if (!entry) {
    module.emitError("the module has no public function to train");
    return signalPassFailure();
  }
  if (module.lookupSymbol("train_step")) {
    module.emitError("the module already has a 'train_step' symbol");
    return signalPassFailure();
  }

  // The mesh the module is compiled for (dist.mesh): with dp > 1 and a
  // static batch B, the step is built from the forward function at one
  // rank's batch B / dp (shapes the backward pass derives from the batch
  // follow), and the forward function (inference) keeps B.
  // A pipeline (dist-split-stages) runs the step once per micro-batch: it
  // is built at B / (dp * micro-batches).
  int64_t dp = 1, pp = 1;
  if (MeshAttr mesh = getRequestedMesh(module)) {
    dp = mesh.getSize("dp");
    pp = mesh.getSize("pp");
  }
  // A plan with pipeline stages (dist-plan) chose the micro-batches.
  int64_t micro = microBatches, global = globalBatch;
  if (auto planned = module->getAttrOfType<DictionaryAttr>(kPipelinePlanAttr)) {
    if (auto m = planned.getAs<IntegerAttr>("micro_batches"); m && micro <= 1)
      micro = m.getInt();
    if (auto g = planned.getAs<IntegerAttr>("global_batch"); g && global == 0)
      global = g.getInt();
  }
  // 0: the default, two per stage, fewer where the batch does not split.
  bool byDefault = micro == 0;
  if (byDefault)
    micro = ::dist_rt::pipeline::defaultMicroBatches(pp, 0);
  if (micro < 1) {
    module.emitError("dist-build-train-step option micro-batches: must not "
                     "be negative, got ")
        << micro;
    return signalPassFailure();
  }
  int64_t batch = dp * micro > 1 ? getStaticBatch(entry) : 0;
  bool bind = false;
  if (batch == 0 && micro > 1) {
    if (global <= 0) {
      entry.emitError("pipeline micro-batches need a static batch, and the "
                      "model's batch is dynamic (give the global batch with "
                      "--global-batch, or export the model with a fixed "
                      "batch)");
      return signalPassFailure();
    }
    batch = global;
    bind = true;
  }
  if (byDefault && batch % dp == 0)
    micro = ::dist_rt::pipeline::defaultMicroBatches(pp, batch / dp);
  int64_t parts = dp * micro;
  if (micro > 1 && batch % parts != 0) {
    entry.emitError("the batch of ")
        << batch << " samples cannot be split into " << micro
        << " micro-batches" << (dp > 1 ? " on each of " : "")
        << (dp > 1 ? std::to_string(dp) + " dp ranks" : std::string())
        << " (pick --micro-batches dividing " << batch / dp << ")";
    return signalPassFailure();
  }
  if (batch == 0) {
    if (failed(buildStep(module, entry)))
      return signalPassFailure();
    return;
  }
  OwningOpRef<func::FuncOp> saved(entry.clone());
  if ((bind && failed(bindBatch(entry, batch))) ||
      failed(rebatchFunction(entry, batch, parts)) ||
      failed(buildStep(module, entry)))
    return signalPassFailure();
  entry.getBody().takeBody(saved->getBody());
  entry.setFunctionType(saved->getFunctionType());
  // The step says which dp it was built for; dist-partition checks it.
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  NamedAttrList train(step->getAttrOfType<DictionaryAttr>("dist.train"));
  train.set("batch_split_dp",
            IntegerAttr::get(IntegerType::get(&getContext(), 64), dp));
  if (micro > 1)
    train.set("micro_batches",
              IntegerAttr::get(IntegerType::get(&getContext(), 64), micro));
  step->setAttr("dist.train", train.getDictionary(&getContext()));
}

LogicalResult BuildTrainStepPass::buildStep(ModuleOp module,
                                            func::FuncOp entry) {
  MLIRContext *ctx = &getContext();
  // Which output the loss reads.
  unsigned outIdx = 0;
  unsigned numResults = entry.getNumResults();
  if (numResults == 0) {
    entry.emitError("the model has no output to compute a loss from");
    return failure();
  }
  if (!lossOutput.empty()) {
    bool found = false;
    for (unsigned i = 0; i < numResults && !found; ++i)
      if (valueName(entry, i, true) == lossOutput) {
        outIdx = i;
        found = true;
      }
    if (!found) {
      std::string names;
      for (unsigned i = 0; i < numResults; ++i)
        names += (i ? ", " : "") + valueName(entry, i, true).str();
      entry.emitError("no output named '")
          << lossOutput << "' (outputs: " << names << ")";
      return failure();
    }
  }

  // The step starts as a copy of the forward function.
  OpBuilder mb(module.getBody(), std::next(Block::iterator(entry)));
  auto step = cast<func::FuncOp>(mb.clone(*entry));
  step.setSymName("train_step");
  step->setAttr("dist.train_step", UnitAttr::get(ctx));
  Block &body = step.getBody().front();
  Operation *ret = body.getTerminator();
  Value y = ret->getOperand(outIdx);
  if (!isa<FloatType>(getElementTypeOrSelf(y.getType()))) {
    step.erase();
    entry.emitError("the loss output '")
        << valueName(entry, outIdx, true) << "' has type " << y.getType()
        << ", not a floating-point tensor";
    return failure();
  }
  if (failed(expandBatchNorms(step)))
    return failure();
  y = ret->getOperand(outIdx);

  // Ops after `lastForward` are the loss and the backward pass, ops after
  // `lastBackward` (set below) the update; their locations get a phase tag
  // (see DistDialect::getPhaseLocName) for the cost model.
  Operation *lastForward = ret->getPrevNode();
  OpBuilder b(ret);
  GraphBuilder g(b, step);
  auto lossVal = buildLoss(step, g, y);
  if (failed(lossVal) || g.hadError)
    return failure();
  Value lossV = *lossVal;

  llvm::DenseMap<Value, Value> grads;
  if (failed(differentiate(step, lossV, grads)))
    return failure();

  // Learning rate and step number: trailing f32 scalars.
  auto f32Scalar = RankedTensorType::get({}, Float32Type::get(ctx));
  unsigned lrIdx = step.getNumArguments();
  (void)step.insertArgument(lrIdx, f32Scalar, namedValue(ctx, "lr"),
                            step.getLoc());
  (void)step.insertArgument(lrIdx + 1, f32Scalar, namedValue(ctx, "step"),
                            step.getLoc());
  Value lrArg = step.getArgument(lrIdx), tArg = step.getArgument(lrIdx + 1);

  // Parameter gradients, one per parameter (a parameter read twice has one
  // gradient per read).
  llvm::MapVector<ParamOp, Value> paramGrads;
  llvm::MapVector<ParamOp, Value> paramValue;
  for (Operation &op : body.without_terminator()) {
    auto get = dyn_cast<GetParamOp>(op);
    if (!get)
      continue;
    Value gr = grads.lookup(get.getResult());
    if (!gr)
      continue;
    auto p = module.lookupSymbol<ParamOp>(get.getNameAttr());
    if (!p || p.getState())
      continue;
    if (gr.getType() != get.getType())
      gr = g.reshape(gr, cast<RankedTensorType>(get.getType()).getShape());
    Value &slot = paramGrads[p];
    slot = slot ? g.add(slot, gr) : gr;
    paramValue.insert({p, get.getResult()});
  }
  // Gradients of the rows pulled from the parameter server, returned after
  // the loss as "<argument>.grad" (the servers apply them, so no clipping or
  // update here).
  SmallVector<std::pair<Value, std::string>> pulledGrads;
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    if (!step.getArgAttr(i, kPsRowsAttr))
      continue;
    if (Value gr = grads.lookup(step.getArgument(i)))
      pulledGrads.push_back({gr, (valueName(step, i, false) + ".grad").str()});
  }
  if (clipGradNorm > 0 && !pulledGrads.empty()) {
    step.emitError("--clip-grad-norm with tables on the parameter server "
                   "(--ps-tables) is not supported: the servers update the "
                   "tables' rows without the global norm");
    return failure();
  }
  if (paramGrads.empty() && pulledGrads.empty()) {
    step.emitError("no parameter receives a gradient from the loss");
    return failure();
  }

  b.setInsertionPoint(ret);
  Operation *lastBackward = ret->getPrevNode();
  if (clipGradNorm > 0) {
    // torch.nn.utils.clip_grad_norm_: coef = min(max / (norm + 1e-6), 1).
    // A parameter split by tensor parallelism holds part of its gradient on
    // each rank of its mesh axis: those squares are summed over the axis
    // (replicated parameters' gradients are the same on every rank).
    Value total;
    llvm::MapVector<int64_t, Value> splitTotals;
    for (auto &[p, gr] : paramGrads) {
      Value s = g.one<ReduceSumSquareOp>({gr}, {g.i64("keepdims", 0)});
      if (g.elemOf(s) != Float32Type::get(ctx))
        s = g.castTo(s, Float32Type::get(ctx));
      Value *slot = &total;
      if (auto shard = p->getAttrOfType<DictionaryAttr>(kParamShardAttr))
        if (auto axis = shard.getAs<IntegerAttr>("axis"))
          slot = &splitTotals[axis.getInt()];
      *slot = *slot ? g.add(*slot, s) : s;
    }
    for (auto &[axis, partial] : splitTotals) {
      Value sum = shard::AllReduceOp::create(
                      b, g.loc, partial.getType(), kMeshSymbol,
                      ArrayRef<int16_t>{static_cast<int16_t>(axis)}, partial,
                      shard::ReductionKind::Sum)
                      .getResult();
      total = total ? g.add(total, sum) : sum;
    }
    Value norm = g.one<SqrtOp>({total});
    if (Operation *sqrt = norm.getDefiningOp())
      sqrt->setAttr(kGradNormAttr, UnitAttr::get(ctx));
    Value coef = g.div(g.scalarLike(norm, clipGradNorm),
                       g.add(norm, g.scalarLike(norm, 1e-6)));
    coef = g.one<MinOp>({coef, g.scalarLike(norm, 1.0)});
    for (auto &[p, gr] : paramGrads)
      gr = g.mul(gr, asElem(g, coef, g.elemOf(gr)));
  }
  for (auto &[p, gr] : paramGrads) {
    Type et = g.elemOf(gr);
    p.setTrainable(true);
    // Update ops carry the parameter's location, so the cost model charges
    // them to the layer that reads the parameter.
    g.loc = DistDialect::tagPhase(NameLoc::get(p.getSymNameAttr(), p.getLoc()),
                                  DistDialect::kPhaseUpdate);
    update(module, g, p, paramValue[p], gr, asElem(g, lrArg, et),
           asElem(g, tArg, et));
  }
  numTrainable += paramGrads.size();
  if (g.hadError)
    return failure();
  {
    bool backward = true;
    Operation *first = lastForward ? lastForward->getNextNode() : &body.front();
    for (Operation *op = first; op && op != ret; op = op->getNextNode()) {
      if (op == (lastBackward ? lastBackward->getNextNode() : first))
        backward = false;
      if (DistDialect::getPhase(op->getLoc()).empty())
        op->setLoc(DistDialect::tagPhase(op->getLoc(),
                                         backward ? DistDialect::kPhaseBackward
                                                  : DistDialect::kPhaseUpdate));
    }
  }

  // Return the loss as f32; set_params must stay after every read, so the
  // new return goes last.
  Value lossOut = lossV;
  if (g.elemOf(lossOut) != Float32Type::get(ctx))
    lossOut = g.castTo(lossOut, Float32Type::get(ctx));
  SmallVector<Value> results = {lossOut};
  SmallVector<Type> resultTypes = {f32Scalar};
  SmallVector<Attribute> resultAttrs = {namedValue(ctx, "loss")};
  for (auto &[gr, name] : pulledGrads) {
    results.push_back(gr);
    resultTypes.push_back(gr.getType());
    resultAttrs.push_back(namedValue(ctx, name));
  }
  func::ReturnOp::create(b, ret->getLoc(), results);
  ret->erase();
  SmallVector<Type> argTypes(step.getArgumentTypes());
  step.setFunctionType(FunctionType::get(ctx, argTypes, resultTypes));
  step.setResAttrsAttr(ArrayAttr::get(ctx, resultAttrs));

  // Inputs the step does not read are dropped (the label stays).
  // Forward ops the loss does not need go away first.
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (&op != body.getTerminator() && !isa<SetParamOp>(op) && isPure(&op) &&
          op.use_empty()) {
        op.erase();
        changed = true;
      }
  }
  // The ids of lookups on the parameter server stay: the runtime pulls by
  // them before the step.
  llvm::StringSet<> pullIds;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (auto rows = step.getArgAttrOfType<DictionaryAttr>(i, kPsRowsAttr))
      if (auto ids = rows.getAs<StringAttr>("ids"))
        pullIds.insert(ids.getValue());
  llvm::BitVector unused(step.getNumArguments());
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    if (!step.getArgument(i).use_empty() || i >= lrIdx)
      continue;
    if (valueName(step, i, false) == "label" ||
        pullIds.contains(valueName(step, i, false)))
      continue;
    unused.set(i);
  }
  if (failed(step.eraseArguments(unused)))
    return failure();

  step->setAttr(
      "dist.train",
      DictionaryAttr::get(
          ctx,
          {NamedAttribute(
               StringAttr::get(ctx, "optimizer"),
               StringAttr::get(ctx, stringifyEnumOption(optimizer.getValue()))),
           NamedAttribute(
               StringAttr::get(ctx, "loss"),
               StringAttr::get(ctx, stringifyEnumOption(loss.getValue()))),
           NamedAttribute(StringAttr::get(ctx, "lr"),
                          FloatAttr::get(Float64Type::get(ctx), lr)),
           NamedAttribute(StringAttr::get(ctx, "lr_schedule"),
                          StringAttr::get(
                              ctx, stringifyEnumOption(lrSchedule.getValue()))),
           NamedAttribute(
               StringAttr::get(ctx, "warmup_steps"),
               IntegerAttr::get(IntegerType::get(ctx, 64), warmupSteps)),
           NamedAttribute(
               StringAttr::get(ctx, "label_classes"),
               IntegerAttr::get(IntegerType::get(ctx, 64), labelClasses)),
           NamedAttribute(
               StringAttr::get(ctx, "ignore_index"),
               IntegerAttr::get(IntegerType::get(ctx, 64), ignoreIndex))}));
  return success();
}

} // namespace

std::string dist::checkTrainStepOptions(const BuildTrainStepPassOptions &o,
                                        std::string &option) {
  auto bad = [&](StringRef name, const Twine &why) {
    option = name.str();
    return why.str();
  };
  if (!(o.lr > 0) || !std::isfinite(o.lr))
    return bad("lr", "must be a positive number");
  if (!(o.momentum >= 0 && o.momentum < 1))
    return bad("momentum", "must be in [0, 1)");
  if (!(o.beta1 >= 0 && o.beta1 < 1))
    return bad("beta1", "must be in [0, 1)");
  if (!(o.beta2 >= 0 && o.beta2 < 1))
    return bad("beta2", "must be in [0, 1)");
  if (!(o.eps > 0))
    return bad("eps", "must be positive");
  // Negative weight decay means "the optimizer's default"; NaN is refused.
  if (std::isnan(o.weightDecay))
    return bad("weight-decay", "must not be negative");
  if (o.warmupSteps < 0)
    return bad("warmup-steps", "must not be negative");
  if (!(o.clipGradNorm >= 0))
    return bad("clip-grad-norm", "must not be negative");
  return "";
}
