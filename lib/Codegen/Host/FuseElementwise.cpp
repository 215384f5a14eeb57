//===- FuseElementwise.cpp - restricted elementwise fusion ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Upstream elementwise fusion, allowed only into all-parallel consumers, so
// contractions keep their multiply-accumulate bodies
// (dist-contractions-to-runtime recognises them), and only for single-use
// producers, so no work is duplicated; a producer with other users fuses
// into its first consumer when the fused op can yield its result for them
// (FuseSharedProducer). A transpose that feeds a contraction is folded
// into the contraction's indexing map instead: the runtime's GEMM takes
// strided operands (a transposed one becomes BLAS's Trans flag), so the
// transposed copy is never written. Measured on the GPT-style LM's training
// step: the weight-gradient products read X^T, whose materialisation took
// 12% of the step at one thread (column-wise gathers over 4 KiB rows).
// Likewise a product whose only user transposes it writes the transposed
// result directly (C^T = B^T A^T in the runtime).
//
// A producer whose body has math functions or a division does not fuse
// into a consumer that broadcasts it: the fused loop would compute it once
// per element of the consumer. EfficientNet-B0's squeeze-excitation gates
// (a sigmoid of 8 to 1152 values scaling a whole image) ran their sigmoid
// at every pixel: 821 us of its loops an inference at one thread, 457 us
// with the gates computed once.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "Lowering.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "dist-fuse-elementwise"

namespace mlir::dist {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {
/// Splat constants with fewer elements stay constants (their copy costs
/// less than anything a loop would save).
constexpr int64_t kMinSplatFillElements = 4096;

/// Whether `op` copies or broadcasts its one input into a tensor.empty:
/// all parallel, its body yielding the input's element.
bool isFreshBroadcast(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      !op.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
    return false;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  return body.getOperations().size() == 1 && yield.getNumOperands() == 1 &&
         yield.getOperand(0) == body.getArgument(0);
}

/// Whether bufferization copies `use`'s value into a buffer that is then
/// written: an scf.for's initial iteration value, a destination-style op's
/// init that its body reads (an init it does not read gets a fresh buffer
/// without a copy), or the destination of a tensor insert.
bool isWrittenInPlace(OpOperand &use) {
  Operation *owner = use.getOwner();
  if (auto loop = dyn_cast<scf::ForOp>(owner))
    return use.getOperandNumber() >= loop.getNumControlOperands();
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(owner))
    return linalgOp.isDpsInit(&use) &&
           linalgOp.payloadUsesValueFromOperand(&use);
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(owner))
    return dps.isDpsInit(&use);
  if (auto insert = dyn_cast<tensor::InsertOp>(owner))
    return &use == &insert.getDestMutable();
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(owner))
    return &use == &insert.getDestMutable();
  return false;
}

/// Whether `op` is a product the runtime's GEMM runs (f32/f64 mul-add).
bool isBlasContraction(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumReductionLoops() == 0 ||
      !dist::codegen::isMulAddBody(op))
    return false;
  Type elem = getElementTypeOrSelf(op.getResult(0).getType());
  return elem.isF32() || elem.isF64();
}

/// Whether `producer`, which has users besides `consumer`, can be fused
/// into it without computing anything twice: the consumer reads the
/// producer's results through this one operand only (a second one would
/// stay an operand of the fused op, reading the fused op's own result), and
/// through a permutation of its loops (each element once, no broadcast),
/// and every other user comes after the consumer in its block, where the
/// fused op's results are defined. Two reads through the same map are
/// merged into one operand by upstream's deduplication first.
bool fusesWithoutRecomputation(linalg::GenericOp producer,
                               linalg::GenericOp consumer, OpOperand *fused) {
  if (producer.getNumLoops() != producer.getNumParallelLoops() ||
      consumer.getNumLoops() != consumer.getNumParallelLoops() ||
      !consumer.getMatchingIndexingMap(fused).isPermutation() ||
      !linalg::areElementwiseOpsFusable(fused))
    return false;
  if (llvm::count_if(consumer->getOpOperands(), [&](OpOperand &operand) {
        return operand.get().getDefiningOp() == producer.getOperation();
      }) != 1)
    return false;
  Operation *user = consumer.getOperation();
  for (Operation *other : producer->getUsers())
    if (other != user && (other->getBlock() != user->getBlock() ||
                          !user->isBeforeInBlock(other)))
      return false;
  return true;
}

/// Fuses an elementwise producer with several users into an elementwise
/// consumer, the fused op also yielding the producer's results for the
/// other users (upstream's fusion pattern keeps the producer for them and
/// so computes it twice, which the single-use restriction above avoids).
/// AdamW's moments are such producers: the parameter update reads them and
/// the optimizer state keeps them, so the update becomes one loop over
/// parameter, gradient and both moments instead of three. Measured on the
/// DLRM-style model's AdamW step at one thread, whose update streams 24 MB
/// of embedding tables: see the commit that added this.
struct FuseSharedProducer : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    if (!consumer.hasPureTensorSemantics())
      return failure();
    for (OpOperand *fused : consumer.getDpsInputOperands()) {
      auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
      if (!producer || producer->hasOneUse() ||
          !producer.hasPureTensorSemantics() ||
          !fusesWithoutRecomputation(producer, consumer, fused))
        continue;
      // The fused op yields every producer result another op reads
      // (linalg::getPreservedProducerResults).
      FailureOr<linalg::ElementwiseOpFusionResult> result =
          linalg::fuseElementwiseOps(rewriter, fused);
      if (failed(result))
        continue;
      // The fused op yields the consumer's results and the producer's that
      // other ops read; those come after it.
      for (Operation *op : {consumer.getOperation(), producer.getOperation()})
        for (Value old : op->getResults())
          if (auto it = result->replacements.find(old);
              it != result->replacements.end())
            rewriter.replaceUsesWithIf(old, it->second, [&](OpOperand &use) {
              return use.getOwner() != consumer.getOperation();
            });
      rewriter.eraseOp(consumer);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }
};

/// contraction(transpose(x), y) -> contraction(x, y) with the transpose's
/// permutation composed into x's indexing map, when the runtime's GEMM
/// still runs the result.
struct FoldTransposeIntoContraction : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!isBlasContraction(op))
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    SmallVector<Value> inputs = op.getDpsInputs();
    bool changed = false;
    for (auto [i, in] : llvm::enumerate(inputs)) {
      auto transpose = in.getDefiningOp<linalg::TransposeOp>();
      if (!transpose)
        continue;
      // transposed[j] = x[k] with k[perm[i]] = j[i].
      ArrayRef<int64_t> perm = transpose.getPermutation();
      AffineMap map = maps[i];
      SmallVector<AffineExpr> results(perm.size());
      for (auto [j, p] : llvm::enumerate(perm))
        results[p] = map.getResult(j);
      maps[i] = AffineMap::get(map.getNumDims(), map.getNumSymbols(), results,
                               op.getContext());
      in = transpose.getInput();
      changed = true;
    }
    if (!changed ||
        !dist::codegen::classifyGemmLoops(maps, op.getIteratorTypesArray()))
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getInputsMutable().assign(inputs);
      op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    });
    return success();
  }
};

/// transpose(contraction(x, y)) -> contraction(x, y) writing the transposed
/// result directly (its output map permuted), when the transpose is the
/// product's only user and the product starts from a fill.
struct FoldContractionIntoTranspose : OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    auto op = transpose.getInput().getDefiningOp<linalg::GenericOp>();
    if (!op || !isBlasContraction(op) || !op->hasOneUse())
      return failure();
    auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
    if (!fill || !transpose.getInit().getDefiningOp<tensor::EmptyOp>())
      return failure();
    // transposed[j] = product[k] with k[perm[i]] = j[i]: the new output's
    // dim i is the old output's dim perm[i].
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    AffineMap out = maps.back();
    SmallVector<AffineExpr> results;
    for (int64_t p : transpose.getPermutation())
      results.push_back(out.getResult(p));
    maps.back() = AffineMap::get(out.getNumDims(), out.getNumSymbols(), results,
                                 op.getContext());
    if (!dist::codegen::classifyGemmLoops(maps, op.getIteratorTypesArray()))
      return failure();
    Location loc = op.getLoc();
    Value init =
        linalg::FillOp::create(rewriter, fill.getLoc(), fill.getInputs()[0],
                               transpose.getInit())
            .getResult(0);
    auto product = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, op.getDpsInputs(),
        ValueRange{init}, maps, op.getIteratorTypesArray());
    rewriter.inlineRegionBefore(op.getRegion(), product.getRegion(),
                                product.getRegion().begin());
    rewriter.replaceOp(transpose, product.getResult(0));
    rewriter.eraseOp(op);
    return success();
  }
};

/// Whether `op`'s body has math functions or a division: work to do once
/// per element of its own result.
bool hasCostlyMath(Operation *op) {
  return op
      ->walk([](Operation *inner) {
        return isa<math::MathDialect>(inner->getDialect()) ||
                       isa<arith::DivFOp>(inner)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether `consumer` reads `operand` through a map that leaves out one of
/// its loops of an extent other than 1 (each element is read many times).
bool readsBroadcast(linalg::LinalgOp consumer, OpOperand *operand) {
  AffineMap map = consumer.getMatchingIndexingMap(operand);
  llvm::SmallBitVector used(map.getNumDims());
  for (AffineExpr result : map.getResults())
    result.walk([&](AffineExpr e) {
      if (auto dim = dyn_cast<AffineDimExpr>(e))
        used.set(dim.getPosition());
    });
  SmallVector<int64_t> ranges = consumer.getStaticLoopRanges();
  for (unsigned d = 0; d < map.getNumDims(); ++d)
    if (!used[d] && ranges[d] != 1)
      return true;
  return false;
}

struct FuseElementwisePass
    : public dist::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
      if (!producer || !consumer || !producer->hasOneUse())
        return false;
      if (readsBroadcast(consumer, fused) && hasCostlyMath(producer))
        return false;
      return consumer.getNumLoops() == consumer.getNumParallelLoops();
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    patterns.add<FoldTransposeIntoContraction, FoldContractionIntoTranspose,
                 FuseSharedProducer>(&getContext());
    linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();

    // A splat constant that an op writes into (the zero start of an
    // embedding table's gradient, accumulated row by row in an scf.for)
    // bufferizes to a copy of a global: a serial memset on the calling
    // thread (measured: 11% of the DLRM-style model's training step at one
    // and at two threads, 24 MB of tables). A fill of its own per writer is
    // a loop that dist-parallelize-loops spreads over the pool.
    getOperation().walk([](arith::ConstantOp cst) {
      auto type = dyn_cast<RankedTensorType>(cst.getType());
      auto splat = dyn_cast<SplatElementsAttr>(cst.getValue());
      if (!type || !splat || !type.hasStaticShape() ||
          type.getNumElements() < kMinSplatFillElements)
        return;
      SmallVector<OpOperand *> written;
      for (OpOperand &use : cst->getUses())
        if (isWrittenInPlace(use))
          written.push_back(&use);
      for (OpOperand *use : written) {
        OpBuilder b(use->getOwner());
        Location loc = cst.getLoc();
        Value empty = tensor::EmptyOp::create(b, loc, type.getShape(),
                                              type.getElementType());
        Value scalar =
            arith::ConstantOp::create(b, loc, splat.getSplatValue<TypedAttr>());
        use->set(linalg::FillOp::create(b, loc, scalar, empty).getResult(0));
      }
    });

    // A fill read by several ops (the zero start of every product of one
    // shape, merged by CSE) is copied for all but one of them once
    // bufferized: each use gets a fill of its own instead, which writes
    // the buffer once rather than reading the shared one and writing.
    getOperation().walk([](linalg::FillOp fill) {
      if (!fill.hasPureTensorSemantics())
        return;
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : fill.getResult(0).getUses())
        uses.push_back(&use);
      for (OpOperand *use : llvm::drop_begin(uses)) {
        OpBuilder b(use->getOwner());
        IRMapping map;
        Value init = fill.getOutputs()[0];
        if (Operation *empty = init.getDefiningOp<tensor::EmptyOp>())
          map.map(init, b.clone(*empty)->getResult(0));
        use->set(b.clone(*fill, map)->getResult(0));
      }
    });

    // Likewise a broadcast into a fresh tensor (a convolution's bias spread
    // over its output, the init its window sums accumulate into) that CSE
    // merged between layers of one shape and one bias: exported untrained
    // weights make every bias zero and the importer keeps one such
    // constant, so every convolution of a width shared one broadcast and
    // all but one copied it (ResNet-18: 11 copies of [1, 64, 56, 56] and
    // alike), which also kept their activation in a loop of its own. Where
    // several ops write into it, each gets a broadcast of its own (the
    // first keeps the original unless something else reads it).
    SmallVector<linalg::GenericOp> broadcasts;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isFreshBroadcast(op))
        broadcasts.push_back(op);
    });
    for (linalg::GenericOp op : broadcasts) {
      // The uses that write into it, each with the reshapes it is reached
      // through (a grouped convolution's init is a 5-D view, which CSE
      // may share too); whether anything else reads it.
      SmallVector<std::pair<OpOperand *, SmallVector<Operation *>>> written;
      bool read = false;
      std::function<void(Value, SmallVector<Operation *> &)> visit =
          [&](Value v, SmallVector<Operation *> &path) {
            for (OpOperand &use : v.getUses()) {
              Operation *owner = use.getOwner();
              if (isWrittenInPlace(use)) {
                written.push_back({&use, path});
              } else if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
                             owner)) {
                path.push_back(owner);
                visit(owner->getResult(0), path);
                path.pop_back();
              } else {
                read = true;
              }
            }
          };
      SmallVector<Operation *> path;
      visit(op->getResult(0), path);
      // One writer: bufferization writes in place unless a reader follows.
      if (written.size() < 2)
        continue;
      for (auto &[use, reshapes] : ArrayRef(written).drop_front(read ? 0 : 1)) {
        OpBuilder b(use->getOwner());
        IRMapping map;
        Value init = op.getDpsInits()[0];
        map.map(init, b.clone(*init.getDefiningOp())->getResult(0));
        Operation *last = b.clone(*op, map);
        for (Operation *reshape : reshapes) {
          map.map(reshape->getOperand(0), last->getResult(0));
          last = b.clone(*reshape, map);
        }
        use->set(last->getResult(0));
      }
    }

    // A constant pad becomes a fill of the padded tensor and an insert of
    // the operand into it; empty-tensor elimination then lets the operand's
    // producer write straight into the padded buffer instead of a buffer of
    // its own that is copied (the convolutions of a CNN).
    RewritePatternSet padPatterns(&getContext());
    linalg::populateDecomposePadPatterns(padPatterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(padPatterns))))
      return signalPassFailure();
  }
};

} // namespace
