//===- Partition.cpp - SPMD partitioning over a device mesh ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The `dist-partition` pass (see Passes.td): declares the mesh as a
// `shard.grid` and rewrites the training step for data parallelism: the
// batch is split over the dp axis and gradients are averaged in fused
// buckets placed as early as the backward pass allows; with ZeRO-1 the
// optimizer state is split by rows; an inference function that keeps
// samples apart runs on each rank's rows. Tensor parallelism
// (TensorParallel.cpp, dist-tensor-parallel) splits the forward graph
// before, and the training step is built from the split graph.
//
// Why not upstream `sharding-propagation` + `shard-partition` for data
// parallelism: they fail a whole function on any op without a
// ShardingInterface model (shared/ENVIRONMENT.md), and a batch split needs
// no propagation at all: every op is batch-parallel except the reductions
// into the loss and the parameter gradients, which this pass finds from the
// step's structure (values the optimizer update reads that depend on data).
//
//===----------------------------------------------------------------------===//

#include "dist/Transforms/Passes.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/GraphBuilder.h"
#include "dist/Dialect/Dist/IR/Mesh.h"
#include "dist/Dialect/Dist/Transforms/Passes.h"
#include "dist/Transforms/LayerCosts.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "dist-partition"

namespace mlir::dist {
#define GEN_PASS_DEF_PARTITIONPASS
#include "dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

/// Whether `op` belongs to the optimizer update (see
/// DistDialect::tagPhase; set by dist-build-train-step). Constants are not:
/// canonicalization hoists them to the top of the function, so an update
/// constant (--clip-grad-norm's bound) says nothing about where the update
/// starts.
bool isUpdateOp(Operation *op) {
  return DistDialect::getPhase(op->getLoc()) == DistDialect::kPhaseUpdate &&
         !op->hasTrait<OpTrait::ConstantLike>();
}

/// The mean of `v` over mesh axis `axis`.
Value averageOver(OpBuilder &b, Location loc, Value v, int16_t axis) {
  return shard::AllReduceOp::create(b, loc, v.getType(), kMeshSymbol,
                                    ArrayRef<int16_t>{axis}, v,
                                    shard::ReductionKind::Average)
      .getResult();
}

struct PartitionPass : public dist::impl::PartitionPassBase<PartitionPass> {
  using Base::Base;

  void runOnOperation() override;

  /// Gives the step's data inputs a leading dimension of batch / dp when
  /// the batch is static, and re-infers every shape.
  LogicalResult splitBatch(func::FuncOp step, int64_t dp);
  /// Averages the gradients and the loss over mesh axis `axis`.
  LogicalResult reduceGradients(func::FuncOp step, int16_t axis);
  /// Averages the gradient sums a pipeline stage's update reads
  /// (dist-split-stages' accumulators) over mesh axis `axis`.
  LogicalResult reduceStageGradients(func::FuncOp update, int16_t axis);
  /// Averages `grads` (in the order they are produced) over mesh axis
  /// `axis` in fused buckets, each started after its last member and
  /// unpacked before `firstUpdate`, whose uses from there on read them.
  LogicalResult reduceInBuckets(func::FuncOp f, ArrayRef<Value> grads,
                                Operation *firstUpdate, int16_t axis);
  /// ZeRO stage 1: splits the optimizer state over mesh axis `axis`.
  LogicalResult shardOptimizerState(func::FuncOp step, int16_t axis,
                                    int64_t dp);
};

LogicalResult PartitionPass::splitBatch(func::FuncOp step, int64_t dp) {
  // dist-build-train-step builds the step at one rank's batch when the
  // module asks for a dp mesh, and says for which dp.
  if (auto train = step->getAttrOfType<DictionaryAttr>("dist.train"))
    if (auto built = train.getAs<IntegerAttr>("batch_split_dp")) {
      if (built.getInt() == dp)
        return success();
      return step.emitError("the training step was built for dp=")
             << built.getInt() << ", not dp=" << dp;
    }
  int64_t batch = getStaticBatch(step);
  if (batch == 0)
    return success(); // Dynamic: the runtime passes each rank its rows.
  // Shapes the backward pass derived from the batch may be constants by
  // now; re-inference reports them.
  return rebatchFunction(step, batch, dp);
}

LogicalResult PartitionPass::reduceInBuckets(func::FuncOp step,
                                             ArrayRef<Value> order,
                                             Operation *firstUpdate,
                                             int16_t axis) {
  Block &body = step.getBody().front();
  MLIRContext *ctx = &getContext();
  llvm::DenseMap<Operation *, unsigned> position;
  unsigned pos = 0;
  for (Operation &op : body)
    position[&op] = pos++;

  // Buckets per element type, filled in production order.
  struct Bucket {
    SmallVector<Value> members;
    int64_t bytes = 0;
  };
  SmallVector<Bucket> buckets;
  llvm::DenseMap<Type, unsigned> open;
  for (Value v : order) {
    auto t = cast<RankedTensorType>(v.getType());
    int64_t bytes =
        t.getNumElements() * (t.getElementType().getIntOrFloatBitWidth() / 8);
    auto it = open.find(t.getElementType());
    if (it == open.end() || buckets[it->second].bytes >= bucketBytes) {
      buckets.emplace_back();
      it = open.insert_or_assign(t.getElementType(), buckets.size() - 1).first;
    }
    buckets[it->second].members.push_back(v);
    buckets[it->second].bytes += bytes;
  }

  OpBuilder unpackBuilder(firstUpdate);
  for (auto [i, bucket] : llvm::enumerate(buckets)) {
    Location loc = DistDialect::tagPhase(
        NameLoc::get(StringAttr::get(ctx, "grad_bucket_" + Twine(i)),
                     step.getLoc()),
        DistDialect::kPhaseBackward);
    Operation *last = bucket.members.front().getDefiningOp();
    for (Value v : bucket.members)
      if (position[v.getDefiningOp()] > position[last])
        last = v.getDefiningOp();
    // Pack and start the reduction right after the last gradient.
    OpBuilder b(last->getBlock(), std::next(Block::iterator(last)));
    GraphBuilder g(b, last);
    g.loc = loc;
    // A bucket of one gradient is reduced as it is.
    bool single = bucket.members.size() == 1;
    SmallVector<Value> flat;
    SmallVector<int64_t> sizes;
    for (Value v : bucket.members) {
      int64_t n = cast<RankedTensorType>(v.getType()).getNumElements();
      sizes.push_back(n);
      flat.push_back(single ||
                             cast<RankedTensorType>(v.getType()).getRank() == 1
                         ? v
                         : g.reshape(v, {n}));
    }
    Value packed =
        single ? flat.front() : g.one<ConcatOp>(flat, {g.i64("axis", 0)});
    if (g.hadError)
      return failure();
    Value reduced = averageOver(b, loc, packed, axis);
    // Unpack just before the update.
    GraphBuilder u(unpackBuilder, firstUpdate);
    u.loc = loc;
    int64_t offset = 0;
    for (auto [v, n] : llvm::zip(bucket.members, sizes)) {
      auto t = cast<RankedTensorType>(v.getType());
      Value part = reduced;
      if (!single) {
        part = u.slice(reduced, {offset}, {offset + n}, {0});
        if (t.getRank() != 1)
          part = u.reshape(part, t.getShape());
      }
      offset += n;
      v.replaceUsesWithIf(part, [&](OpOperand &use) {
        Operation *user = use.getOwner();
        return user->getBlock() == &body &&
               position.lookup(user) >= position[firstUpdate] &&
               position.count(user);
      });
    }
    if (u.hadError)
      return failure();
    numReduced += bucket.members.size();
  }
  numBuckets += buckets.size();

  return success();
}

LogicalResult PartitionPass::reduceStageGradients(func::FuncOp update,
                                                  int16_t axis) {
  ModuleOp module = getOperation();
  Block &body = update.getBody().front();
  // The accumulators' reads, moved to the top in their order (they read
  // state that only the update's end zeroes), are the gradients; the
  // update starts after them.
  SmallVector<Value> grads;
  Operation *last = nullptr;
  for (Operation &op : llvm::make_early_inc_range(body)) {
    auto get = dyn_cast<GetParamOp>(&op);
    auto param =
        get ? module.lookupSymbol<ParamOp>(get.getNameAttr()) : ParamOp();
    if (!param || !param->hasAttr(kGradAccumulatorAttr))
      continue;
    if (last)
      op.moveAfter(last);
    else
      op.moveBefore(&body.front());
    last = &op;
    grads.push_back(get.getResult());
  }
  // A stage without trainable parameters has nothing to average.
  if (grads.empty())
    return success();
  return reduceInBuckets(update, grads, last->getNextNode(), axis);
}

LogicalResult PartitionPass::reduceGradients(func::FuncOp step, int16_t axis) {
  Block &body = step.getBody().front();
  MLIRContext *ctx = &getContext();

  // Values that differ between ranks: everything computed from the data
  // inputs (every tensor argument but the rank-0 learning rate and step).
  llvm::DenseSet<Value> perRank;
  for (BlockArgument arg : body.getArguments())
    if (auto t = dyn_cast<RankedTensorType>(arg.getType()); t && t.getRank())
      perRank.insert(arg);
  Operation *firstUpdate = nullptr;
  for (Operation &op : body) {
    if (!firstUpdate && isUpdateOp(&op))
      firstUpdate = &op;
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return perRank.contains(v); }))
      perRank.insert(op.result_begin(), op.result_end());
  }
  if (!firstUpdate)
    return step.emitError("the training step has no optimizer update "
                          "(was it built by dist-build-train-step?)");

  // Gradients: values the update reads that are computed before it from
  // the data, in the order the backward pass produces them.
  llvm::SetVector<Value> grads;
  llvm::DenseMap<Operation *, unsigned> position;
  unsigned pos = 0;
  for (Operation &op : body)
    position[&op] = pos++;
  for (Operation *op = firstUpdate; op; op = op->getNextNode()) {
    if (isa<func::ReturnOp>(op))
      continue;
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def || !perRank.contains(v) ||
          position[def] >= position[firstUpdate])
        continue;
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t || !t.hasStaticShape() || !isa<FloatType>(t.getElementType()))
        return def->emitError("the optimizer update reads ")
               << v.getType()
               << " computed from the batch, which data parallelism cannot "
                  "average (not a static floating-point tensor)";
      grads.insert(v);
    }
  }
  SmallVector<Value> order(grads.begin(), grads.end());
  llvm::stable_sort(order, [&](Value a, Value b) {
    return position[a.getDefiningOp()] < position[b.getDefiningOp()];
  });
  if (failed(reduceInBuckets(step, order, firstUpdate, axis)))
    return failure();

  // The loss every rank returns is the mean over the global batch.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder b(ret);
  Location lossLoc = DistDialect::tagPhase(
      NameLoc::get(StringAttr::get(ctx, "loss_mean"), step.getLoc()),
      DistDialect::kPhaseUpdate);
  // The gradients of rows pulled from the parameter server stay this
  // rank's: they are its samples', which the runtime pushes.
  llvm::StringSet<> pulledGrads;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (step.getArgAttr(i, kPsRowsAttr))
      if (auto name = step.getArgAttrOfType<StringAttr>(
              i, DistDialect::getValueNameAttrName()))
        pulledGrads.insert((name.getValue() + ".grad").str());
  for (OpOperand &operand : ret->getOpOperands()) {
    auto name = step.getResultAttrOfType<StringAttr>(
        operand.getOperandNumber(), DistDialect::getValueNameAttrName());
    if (name && pulledGrads.contains(name.getValue()))
      continue;
    if (perRank.contains(operand.get()))
      operand.set(averageOver(b, lossLoc, operand.get(), axis));
  }
  return success();
}

LogicalResult PartitionPass::shardOptimizerState(func::FuncOp step,
                                                 int16_t axis, int64_t dp) {
  ModuleOp module = getOperation();
  Block &body = step.getBody().front();
  MLIRContext *ctx = &getContext();
  Operation *firstUpdate = nullptr;
  for (Operation &op : body)
    if (isUpdateOp(&op)) {
      firstUpdate = &op;
      break;
    }
  if (!firstUpdate)
    return step.emitError("the training step has no optimizer update");
  // Rows of a tensor this rank updates: leading dimension divisible by dp
  // and not split by tensor parallelism already.
  auto rowsSplit = [&](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && r.hasStaticShape() && r.getRank() >= 1 &&
           r.getDimSize(0) % dp == 0 && r.getDimSize(0) >= dp;
  };
  auto localType = [&](Type t) {
    auto r = cast<RankedTensorType>(t);
    SmallVector<int64_t> shape(r.getShape());
    shape[0] /= dp;
    return RankedTensorType::get(shape, r.getElementType());
  };
  auto shardAttr = DictionaryAttr::get(
      ctx, {NamedAttribute(StringAttr::get(ctx, "axis"),
                           IntegerAttr::get(IntegerType::get(ctx, 64), axis)),
            NamedAttribute(StringAttr::get(ctx, "dim"),
                           IntegerAttr::get(IntegerType::get(ctx, 64), 0)),
            NamedAttribute(StringAttr::get(ctx, "blocks"),
                           IntegerAttr::get(IntegerType::get(ctx, 64), 1))});
  // Optimizer state: local rows.
  llvm::StringSet<> states;
  for (ParamOp p : module.getOps<ParamOp>())
    if (p.getState() && !p->hasAttr(kParamShardAttr) &&
        rowsSplit(p.getType())) {
      p.setType(localType(p.getType()));
      p->setAttr(kParamShardAttr, shardAttr);
      states.insert(p.getSymName());
    }
  if (states.empty())
    return success(); // Nothing with state to split (plain SGD).
  llvm::DenseSet<Operation *> update;
  for (Operation *op = firstUpdate; op; op = op->getNextNode())
    update.insert(op);
  // The update's tensor inputs from before it (parameters, averaged
  // gradients) are sliced to the rows of this rank.
  llvm::DenseMap<Value, Value> sliced;
  for (Operation *op = firstUpdate; op; op = op->getNextNode()) {
    if (auto get = dyn_cast<GetParamOp>(op)) {
      if (states.contains(get.getName()))
        get.getResult().setType(localType(get.getType()));
      continue;
    }
    if (isa<func::ReturnOp, SetParamOp>(op))
      continue;
    for (OpOperand &o : op->getOpOperands()) {
      Value v = o.get();
      Operation *def = v.getDefiningOp();
      bool outside = !def || !update.contains(def);
      if (!outside || !rowsSplit(v.getType()) ||
          !isa<FloatType>(getElementTypeOrSelf(v.getType())))
        continue;
      Value &s = sliced[v];
      if (!s) {
        OpBuilder b(firstUpdate);
        s = shard::AllSliceOp::create(
                b, firstUpdate->getLoc(), localType(v.getType()),
                FlatSymbolRefAttr::get(ctx, kMeshSymbol),
                b.getDenseI16ArrayAttr({axis}), v, b.getIndexAttr(0))
                .getResult();
      }
      o.set(s);
    }
  }
  if (failed(inferShapes(step, nullptr, /*replace=*/true)))
    return step.emitError("cannot split the optimizer state over dp (see the "
                          "error above)");
  // A sum over a whole tensor of which this rank now reads its rows only
  // (--clip-grad-norm's squared gradient norms) is completed over the axis.
  llvm::DenseSet<Value> slicedValues;
  for (auto &entry : sliced)
    slicedValues.insert(entry.second);
  for (Operation *op = firstUpdate; op; op = op->getNextNode()) {
    if (!isa<ReduceSumSquareOp, ReduceSumOp>(op) ||
        !slicedValues.contains(op->getOperand(0)))
      continue;
    auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!result || result.getRank() != 0)
      return op->emitError("the optimizer update reduces a gradient over "
                           "some of its dimensions, which ZeRO's row split "
                           "cannot complete");
    OpBuilder b(op->getBlock(), std::next(Block::iterator(op)));
    auto whole = shard::AllReduceOp::create(
        b, op->getLoc(), result, FlatSymbolRefAttr::get(ctx, kMeshSymbol),
        b.getDenseI16ArrayAttr({axis}), op->getResult(0),
        shard::ReductionKindAttr::get(ctx, shard::ReductionKind::Sum));
    op->getResult(0).replaceAllUsesExcept(whole.getResult(), whole);
    op = whole;
  }
  // Updated rows of whole parameters are gathered back.
  for (auto set : llvm::to_vector(body.getOps<SetParamOp>())) {
    auto p = module.lookupSymbol<ParamOp>(set.getNameAttr());
    if (!p || set.getValue().getType() == p.getType())
      continue;
    if (states.contains(p.getSymName()))
      return set.emitError("optimizer state '")
             << p.getSymName() << "' got type " << set.getValue().getType();
    OpBuilder b(set);
    Value rows = set.getValue();
    Value whole = shard::AllGatherOp::create(
                      b, set.getLoc(), p.getType(),
                      FlatSymbolRefAttr::get(ctx, kMeshSymbol),
                      b.getDenseI16ArrayAttr({axis}), rows, b.getIndexAttr(0))
                      .getResult();
    set.getValueMutable().assign(whole);
  }
  if (failed(verify(step)))
    return step.emitError("the training step does not verify after "
                          "splitting the optimizer state");
  return success();
}

void PartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  MeshSpec spec;
  if (!mesh.empty()) {
    std::string why = parseMesh(mesh, spec);
    if (!why.empty()) {
      module.emitError("dist-partition: mesh: ") << why;
      return signalPassFailure();
    }
  } else if (MeshAttr requested = getRequestedMesh(module)) {
    spec = requested.getSpec();
  } else {
    return; // No mesh: one process runs the module as it is.
  }
  if (bucketBytes < 1) {
    module.emitError("dist-partition: bucket-bytes must be positive");
    return signalPassFailure();
  }
  // Tensor parallelism splits the forward graph (dist-tensor-parallel,
  // which declares the mesh) before anything else.
  bool declared = module.lookupSymbol<shard::GridOp>(kMeshSymbol) != nullptr;
  if (spec.sizeOf("tp") > 1 && !declared) {
    module.emitError("dist-partition: the mesh has tp=")
        << spec.sizeOf("tp")
        << ": split the forward graph with dist-tensor-parallel first";
    return signalPassFailure();
  }
  if (declared && spec.sizeOf("tp") == 1) {
    module.emitError("the module already has a '")
        << kMeshSymbol << "' symbol (partitioned twice?)";
    return signalPassFailure();
  }
  if (failed(declareMesh(module, spec)))
    return signalPassFailure();
  // The grid now records the mesh; the request is met.
  module->removeAttr(DistDialect::getMeshAttrName());

  int64_t dp = spec.sizeOf("dp");
  if (zero < 0 || zero > 1) {
    module.emitError("dist-partition: zero must be 0 or 1 (ZeRO stage 1: "
                     "optimizer state sharding), got ")
        << zero;
    return signalPassFailure();
  }
  if (zero == 1 && dp == 1) {
    module.emitError("ZeRO stage 1 shards the optimizer state over the dp "
                     "ranks: it needs a mesh with dp > 1");
    return signalPassFailure();
  }
  if (dp == 1)
    return;
  int16_t dpAxis = static_cast<int16_t>(
      llvm::find(spec.axes, std::string("dp")) - spec.axes.begin());
  // The update of each pipeline stage (dist-split-stages) averages its
  // stage's gradients over the stage's dp group.
  bool pipelined = false;
  for (auto f : module.getOps<func::FuncOp>())
    if (auto action = f->getAttrOfType<DictionaryAttr>(kPipelineActionAttr)) {
      pipelined = true;
      auto kind = action.getAs<StringAttr>("action");
      // With --clip-grad-norm the norm action reads the accumulators first
      // (and hands the averaged gradients to the update).
      if (kind && (kind.getValue() == "update" || kind.getValue() == "norm") &&
          failed(reduceStageGradients(f, dpAxis)))
        return signalPassFailure();
    }
  if (pipelined && zero >= 1) {
    module.emitError("ZeRO with pipeline stages is not supported yet "
                     "(drop --zero, or --mesh pp)");
    return signalPassFailure();
  }
  for (auto f : module.getOps<func::FuncOp>())
    if (f->hasAttr("dist.train_step"))
      if (failed(splitBatch(f, dp)) || failed(reduceGradients(f, dpAxis)) ||
          (zero >= 1 && failed(shardOptimizerState(f, dpAxis, dp))))
        return signalPassFailure();
  // Inference: each dp rank runs its rows of the batch when the function
  // keeps samples apart; otherwise every rank runs the whole batch.
  for (auto f : module.getOps<func::FuncOp>()) {
    if (!f.isPublic() || f.isExternal() || f->hasAttr("dist.train_step") ||
        f->hasAttr(kPipelineActionAttr))
      continue;
    std::string why = splitInference ? splitInferenceBatch(f, dp, dpAxis)
                                     : "dist-partition split-inference=false";
    if (!why.empty())
      f->setAttr(kInferBatchWholeAttr, StringAttr::get(&getContext(), why));
  }
}

} // namespace
