//===- FuseRows.cpp - row kernels for reductions and their consumers ------===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-fuse-rows: a normalisation over the trailing dimensions (LayerNorm,
// softmax, log-softmax, and the same written out op by op: ReduceMean, Sub,
// Pow, ... as older exporters write a LayerNorm) lowers to several loop
// nests over the whole tensor: the statistics' passes (a maximum, a sum,
// a sum of squares) and the pass that normalises. Each pass reads the whole
// tensor again, from L2 or memory. This pass makes them one row kernel: the
// op that consumes the statistics is tiled over blocks of rows (scf.forall),
// and its producers that work row by row (the reductions, the maps between
// them, the fills of their accumulators, elementwise ops that feed them) are
// computed per block inside the loop, so that every pass over a block reads
// it from L1. Upstream's tile-and-fuse does the slicing; this pass picks the
// consumers, the block size and which producers join.
//
// A producer whose result is also used outside the row kernel is computed
// in it all the same and the loop yields its whole result for those users
// (nothing is computed twice). Contractions never join: the runtime's GEMM
// runs them on whole matrices.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "Lowering.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "dist-fuse-rows"

namespace mlir::dist {
#define GEN_PASS_DEF_FUSEROWSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// A block of rows of about this many bytes (per tensor read row by row)
/// stays in L1 between the passes over it.
constexpr int64_t kBlockBytes = 16 * 1024;

/// Whether `map` reads exactly the first `k` loops, in order.
bool isLeadingDims(AffineMap map, unsigned k) {
  if (map.getNumResults() != k || map.getNumDims() < k)
    return false;
  for (unsigned i = 0; i < k; ++i)
    if (map.getResult(i) != getAffineDimExpr(i, map.getContext()))
      return false;
  return true;
}

/// Number of leading parallel loops of `op` that a reduction's result is
/// indexed by when `op` reads the reduction's result through `map`: the
/// reduction `r` must be [parallel x k, reduction...] with its result over
/// its first k loops, and `map` must read it as the first k of `op`'s loops
/// (k >= 1). 0 when `r` is not such a row reduction.
unsigned rowDimsOf(linalg::GenericOp r, AffineMap map) {
  if (r.getNumReductionLoops() == 0 || r.getNumDpsInits() == 0)
    return 0;
  unsigned k = r.getNumParallelLoops();
  SmallVector<utils::IteratorType> iters = r.getIteratorTypesArray();
  for (unsigned i = 0; i < iters.size(); ++i)
    if ((i < k) != (iters[i] == utils::IteratorType::parallel))
      return 0;
  if (k == 0)
    return 0;
  // Its statistics are over the kept dims; other outputs (a softmax's
  // exponentials beside their sum) may be elementwise.
  bool anyStatistic = false;
  for (OpOperand &init : r.getDpsInitsMutable()) {
    AffineMap out = r.getMatchingIndexingMap(&init);
    if (isLeadingDims(out, k))
      anyStatistic = true;
    else if (!out.isIdentity())
      return 0;
  }
  if (!anyStatistic)
    return 0;
  return isLeadingDims(map, k) ? k : 0;
}

/// Whether `op` may be computed per block of rows inside a row kernel: a
/// linalg op with tensor semantics that is not a contraction.
bool mayJoin(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics())
    return false;
  if (isa<linalg::FillOp>(op))
    return true;
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic)
    return false;
  if (generic.getNumReductionLoops() > 0 &&
      dist::codegen::isMulAddBody(generic))
    return false;
  return true;
}

/// The row consumer's number of tiled dimensions, or 0 when `op` is not a
/// row consumer: an all-parallel generic with identity outputs that reads
/// the result of a row reduction over its leading loops.
unsigned rowConsumerDims(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() ||
      op.getNumParallelLoops() != op.getNumLoops() || op.getNumLoops() < 2)
    return 0;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&init).isIdentity())
      return 0;
  unsigned dims = 0;
  // The statistic may reach the consumer through all-parallel maps over the
  // kept dims (a mean from a sum): follow single-input chains back.
  for (OpOperand *in : op.getDpsInputOperands()) {
    Value v = in->get();
    AffineMap map = op.getMatchingIndexingMap(in);
    for (int hops = 0; hops < 8; ++hops) {
      auto producer = v.getDefiningOp<linalg::GenericOp>();
      if (!producer || !producer.hasPureTensorSemantics())
        break;
      if (unsigned k = rowDimsOf(producer, map)) {
        if (k < op.getNumLoops())
          dims = dims == 0 ? k : std::min(dims, k);
        break;
      }
      // A map over the kept dims only: look at its first input.
      if (producer.getNumParallelLoops() != producer.getNumLoops() ||
          producer.getNumDpsInputs() == 0)
        break;
      OpOperand *first = producer.getDpsInputOperand(0);
      if (!producer.getMatchingIndexingMap(first).isIdentity())
        break;
      v = first->get();
    }
  }
  return dims;
}

struct FuseRowsPass : public dist::impl::FuseRowsPassBase<FuseRowsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<std::pair<linalg::GenericOp, unsigned>> consumers;
    func.walk([&](linalg::GenericOp op) {
      if (unsigned k = rowConsumerDims(op))
        consumers.push_back({op, k});
    });
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> loops;
    // Last consumers first: a consumer that joined a later one's kernel
    // (a normalisation feeding the next one's statistics) is gone by the
    // time the walk reaches it.
    llvm::DenseSet<Operation *> erased;
    for (auto &[op, k] : llvm::reverse(consumers)) {
      if (erased.contains(op))
        continue;
      if (Operation *loop = fuse(rewriter, op, k, erased))
        loops.push_back(loop);
    }
    if (loops.empty())
      return;
    // Two fused ops that read one producer each got a copy of it, computing
    // the same block into blocks of one empty tensor: give those blocks
    // tensors of their own (so the copies are alike) and merge the copies,
    // in the loops only (the fills outside were made one per user on
    // purpose, see dist-fuse-elementwise).
    RewritePatternSet patterns(&getContext());
    tensor::populateFoldTensorEmptyPatterns(patterns);
    FrozenRewritePatternSet frozen(std::move(patterns));
    DominanceInfo dom(func);
    for (Operation *loop : loops) {
      (void)applyOpPatternsGreedily(collectOps(loop), frozen);
      eliminateCommonSubExpressions(rewriter, dom, loop);
      auto forall = cast<scf::ForallOp>(loop);
      mergeTwins(rewriter, forall);
      ownBuffers(rewriter, forall);
    }
  }

  /// Reads an init of `op` that a joining producer computes (a softmax's
  /// exponentials, divided in place by their sum) as an input instead, and
  /// gives `op` a fresh init: fused through the destination, the producer
  /// would be computed a second time for its other results.
  static linalg::GenericOp detachInits(RewriterBase &rewriter,
                                       linalg::GenericOp op) {
    SmallVector<OpOperand *> moved;
    for (OpOperand &init : op.getDpsInitsMutable())
      if (mayJoin(init.get().getDefiningOp()))
        moved.push_back(&init);
    if (moved.empty())
      return op;
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    SmallVector<Value> inputs = op.getDpsInputs();
    SmallVector<AffineMap> maps;
    for (OpOperand *in : op.getDpsInputOperands())
      maps.push_back(op.getMatchingIndexingMap(in));
    SmallVector<Value> inits;
    SmallVector<AffineMap> outMaps;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      outMaps.push_back(op.getMatchingIndexingMap(&init));
      if (!llvm::is_contained(moved, &init)) {
        inits.push_back(init.get());
        continue;
      }
      inputs.push_back(init.get());
      maps.push_back(op.getMatchingIndexingMap(&init));
      auto type = cast<RankedTensorType>(init.get().getType());
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(rewriter, loc, init.get());
      inits.push_back(
          tensor::EmptyOp::create(rewriter, loc, sizes, type.getElementType()));
    }
    maps.append(outMaps);
    auto fresh =
        linalg::GenericOp::create(rewriter, loc, op.getResultTypes(), inputs,
                                  inits, maps, op.getIteratorTypesArray());
    // The body: the moved inits' block arguments become new input
    // arguments (inserted after the old inputs).
    Block *old = op.getBody();
    Block *body = rewriter.createBlock(&fresh.getRegion());
    IRMapping map;
    unsigned numIn = op.getNumDpsInputs();
    for (unsigned i = 0; i < numIn; ++i)
      map.map(old->getArgument(i),
              body->addArgument(old->getArgument(i).getType(), loc));
    for (OpOperand *init : moved) {
      BlockArgument arg = op.getMatchingBlockArgument(init);
      map.map(arg, body->addArgument(arg.getType(), loc));
    }
    for (OpOperand &init : op.getDpsInitsMutable()) {
      BlockArgument arg = op.getMatchingBlockArgument(&init);
      BlockArgument out = body->addArgument(arg.getType(), loc);
      if (!llvm::is_contained(moved, &init))
        map.map(arg, out);
    }
    rewriter.setInsertionPointToStart(body);
    for (Operation &inner : old->getOperations())
      rewriter.clone(inner, map);
    rewriter.replaceOp(op, fresh->getResults());
    return fresh;
  }

  /// Merges generics of `loop`'s body that compute the same values into
  /// inits they do not read (a producer fused once to be yielded, into the
  /// loop's output, and once more for a fused op, into a tensor of its
  /// own): the later one's users read the earlier one's results.
  static void mergeTwins(RewriterBase &rewriter, scf::ForallOp loop) {
    SmallVector<linalg::GenericOp> ops;
    for (Operation &o : loop.getBody()->without_terminator())
      if (auto g = dyn_cast<linalg::GenericOp>(o))
        ops.push_back(g);
    auto readsInit = [](linalg::GenericOp g) {
      return llvm::any_of(g.getDpsInitsMutable(), [&](OpOperand &init) {
        return g.payloadUsesValueFromOperand(&init);
      });
    };
    for (size_t i = 0; i < ops.size(); ++i) {
      linalg::GenericOp a = ops[i];
      if (!a || readsInit(a))
        continue;
      for (size_t j = i + 1; j < ops.size(); ++j) {
        linalg::GenericOp b = ops[j];
        if (!b || readsInit(b) || a.getResultTypes() != b.getResultTypes() ||
            a.getDpsInputs() != b.getDpsInputs() ||
            a.getIndexingMaps() != b.getIndexingMaps() ||
            a.getIteratorTypes() != b.getIteratorTypes() ||
            !OperationEquivalence::isRegionEquivalentTo(
                &a.getRegion(), &b.getRegion(),
                OperationEquivalence::IgnoreLocations))
          continue;
        rewriter.replaceOp(b, a->getResults());
        ops[j] = nullptr;
      }
    }
  }

  /// Gives every output of `loop` and every fill in it a tensor of its own,
  /// as dist-fuse-elementwise does for the function (CSE merges empty
  /// tensors and fills alike): one-shot bufferization would copy a shared
  /// one for all users but one.
  static void ownBuffers(RewriterBase &rewriter, scf::ForallOp loop) {
    for (OpOperand &out : loop.getOutputsMutable()) {
      auto empty = out.get().getDefiningOp<tensor::EmptyOp>();
      if (!empty || empty->hasOneUse())
        continue;
      rewriter.setInsertionPoint(loop);
      Operation *copy = rewriter.clone(*empty);
      rewriter.modifyOpInPlace(loop, [&] { out.set(copy->getResult(0)); });
    }
    SmallVector<linalg::FillOp> fills;
    loop.getBody()->walk([&](linalg::FillOp f) { fills.push_back(f); });
    for (linalg::FillOp fill : fills) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : fill->getResult(0).getUses())
        uses.push_back(&use);
      for (OpOperand *use : llvm::drop_begin(uses)) {
        rewriter.setInsertionPoint(fill);
        Operation *copy = rewriter.clone(*fill);
        rewriter.modifyOpInPlace(use->getOwner(),
                                 [&] { use->set(copy->getResult(0)); });
      }
    }
  }

  /// The ops in `loop`'s body.
  static SmallVector<Operation *> collectOps(Operation *loop) {
    SmallVector<Operation *> ops;
    loop->walk([&](Operation *o) {
      if (o != loop)
        ops.push_back(o);
    });
    return ops;
  }

  /// Tiles `op` over blocks of its first `k` loops and fuses its row-wise
  /// producers; returns the loop, or null when upstream's tiling failed.
  Operation *fuse(RewriterBase &rewriter, linalg::GenericOp op, unsigned k,
                  llvm::DenseSet<Operation *> &erased) {
    op = detachInits(rewriter, op);
    auto outTy = cast<RankedTensorType>(op.getResult(0).getType());
    // Rows of the tiled block: the trailing dims' bytes per row.
    int64_t rowBytes = outTy.getElementTypeBitWidth() / 8;
    for (int64_t d : outTy.getShape().drop_front(k))
      rowBytes = ShapedType::isDynamic(d) ? kBlockBytes : rowBytes * d;
    int64_t rows =
        std::max<int64_t>(1, kBlockBytes / std::max<int64_t>(rowBytes, 1));
    int64_t last = outTy.getDimSize(k - 1);
    if (!ShapedType::isDynamic(last))
      rows = std::min(rows, last);
    SmallVector<OpFoldResult> tiles(k, rewriter.getIndexAttr(1));
    tiles[k - 1] = rewriter.getIndexAttr(rows);
    tiles.append(op.getNumLoops() - k, rewriter.getIndexAttr(0));

    scf::SCFTilingOptions tiling;
    tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
    tiling.setTileSizes(tiles);
    scf::SCFTileAndFuseOptions options;
    options.setTilingOptions(tiling);
    llvm::SmallPtrSet<Operation *, 8> fused;
    llvm::SmallPtrSet<Operation *, 16> kernel = kernelOf(op);
    options.setFusionControlFn(
        [&](tensor::ExtractSliceOp slice, OpResult producer, bool)
            -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
          Operation *p = producer.getOwner();
          // A block that reads the whole of a producer (a statistic over
          // the rows, a scaled weight vector) would compute all of it once
          // per block: it stays outside.
          if (!mayJoin(p) || isWhole(slice))
            return std::nullopt;
          // A producer that two fused ops read is fused for each (the copies
          // compute the same block; CSE merges them). Users outside the
          // kernel get its whole result from the loop, once.
          // The loop stands where the consumer stood, so those users must
          // come after it.
          bool outside = false;
          Operation *loop = slice->getParentOfType<scf::ForallOp>();
          for (Operation *u : p->getUsers()) {
            if (kernel.contains(u) || (loop && loop->isAncestor(u)))
              continue;
            if (u->getBlock() != op->getBlock() || !op->isBeforeInBlock(u))
              return std::nullopt;
            outside = true;
          }
          scf::SCFTileAndFuseOptions::ControlFnResult r;
          r.yieldProducerReplacement = fused.insert(p).second && outside;
          return r;
        });
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTileAndFuseResult> result =
        scf::tileConsumerAndFuseProducersUsingSCF(
            rewriter, cast<TilingInterface>(op.getOperation()), options);
    if (failed(result))
      return nullptr;
    for (OpResult r : op->getResults())
      if (Value v = result->replacements.lookup(r))
        rewriter.replaceAllUsesWith(r, v);
    Operation *loop = result->loops.front();
    for (Operation *p : result->fusedProducers)
      for (OpResult r : p->getResults())
        if (Value v = result->replacements.lookup(r))
          rewriter.replaceUsesWithIf(r, v, [&](OpOperand &use) {
            Operation *owner = use.getOwner();
            return !loop->isAncestor(owner) && owner != op &&
                   !result->fusedProducers.contains(owner);
          });
    // The originals are dead now, users before producers.
    SmallVector<Operation *> dead{op};
    dead.append(result->fusedProducers.begin(), result->fusedProducers.end());
    for (bool progress = true; progress;) {
      progress = false;
      for (Operation *&d : dead)
        if (d && d->use_empty()) {
          erased.insert(d);
          rewriter.eraseOp(d);
          d = nullptr;
          progress = true;
        }
    }
    return loop;
  }

  /// The row kernel of `consumer`: it and its transitive linalg producers
  /// that may join.
  static llvm::SmallPtrSet<Operation *, 16> kernelOf(Operation *consumer) {
    llvm::SmallPtrSet<Operation *, 16> kernel{consumer};
    SmallVector<Operation *> work{consumer};
    while (!work.empty()) {
      Operation *cur = work.pop_back_val();
      for (Value v : cur->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && mayJoin(def) && kernel.insert(def).second)
          work.push_back(def);
      }
    }
    return kernel;
  }

  /// Whether `slice` takes all of its source (zero offsets, full static
  /// sizes, unit strides): a block that does not depend on the loop.
  static bool isWhole(tensor::ExtractSliceOp slice) {
    auto source = slice.getSourceType();
    if (!source.hasStaticShape())
      return false;
    for (auto [offset, size, stride, dim] :
         llvm::zip_equal(slice.getMixedOffsets(), slice.getMixedSizes(),
                         slice.getMixedStrides(), source.getShape())) {
      std::optional<int64_t> o = getConstantIntValue(offset),
                             n = getConstantIntValue(size),
                             st = getConstantIntValue(stride);
      if (!o || !n || !st || *o != 0 || *n != dim || *st != 1)
        return false;
    }
    return true;
  }
};

} // namespace
