//===- HoistParallelDims.cpp - parallel dimensions of reductions first ----===//
// SPDX-License-Identifier: Apache-2.0
//
// A reduction over leading and trailing dimensions, such as a batch
// normalisation's statistics over N, H and W of an NCHW tensor, lowers with
// the loop order of its operand: [N (reduction), C (parallel), H, W]. Only an
// outermost parallel loop runs on the runtime's pool (ParallelizeLoops.cpp),
// so such a loop nest runs on one thread, and with C innermost to N it would
// be cut into small parallel loops per N. This pass moves the parallel
// dimensions of every linalg.generic with a reduction in front of its
// reduction dimensions, keeping their relative order, but never moves the
// innermost dimension: it is the contiguous one the loop vectoriser works
// on (a bias gradient, [N (reduction), C (parallel)], stays as it is).
// Except with `innermost` (the CUDA target): a GPU thread runs one parallel
// iteration, so there the bias gradient becomes one kernel over C, whose
// warps read rows of N coalesced, not a launch per row.
// Upstream's interchangeGenericOp does the permutation.
//
// Then the trailing reduction dimensions that every operand lays out
// contiguously (H and W of those statistics) are merged into one
// (upstream's collapseOpIterationDims), so that the innermost loop is long:
// dist-register-accumulators vectorises it, and every trip of the loop
// around it pays for a horizontal add of the vector lanes (measured on the
// residual CNN's training step: 5-8% faster with H and W merged). Likewise
// the trailing dimensions of an elementwise loop nest whose innermost loop
// is shorter than a vector (an optimizer update of a [F, C, 3, 3]
// convolution weight), which LLVM could not vectorise otherwise, operands
// broadcast from [1, C, 1, 1] (squeeze-excitation's scale) read through a
// view without their unit dims for that.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "dist-hoist-parallel-dims"

namespace mlir::dist {
#define GEN_PASS_DEF_HOISTPARALLELDIMSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// The loop order with the parallel dimensions first (except the innermost
/// one unless `innermost`); empty when it is already so or there is no
/// reduction.
SmallVector<unsigned> hoistedOrder(linalg::GenericOp op, bool innermost) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned loops = iterators.size();
  unsigned moved = innermost ? loops : loops - 1;
  if (moved < 2 ||
      !llvm::is_contained(iterators, utils::IteratorType::reduction))
    return {};
  SmallVector<unsigned> order;
  for (unsigned d = 0; d < moved; ++d)
    if (iterators[d] == utils::IteratorType::parallel)
      order.push_back(d);
  for (unsigned d = 0; d < moved; ++d)
    if (iterators[d] != utils::IteratorType::parallel)
      order.push_back(d);
  if (!innermost)
    order.push_back(loops - 1);
  for (unsigned d = 0; d < loops; ++d)
    if (order[d] != d)
      return order;
  return {};
}

/// The longest run of trailing loops of `op` of iterator type `kind` (at
/// least two) that every operand indexes as one contiguous sequence and
/// that every memref operand can collapse without a copy; empty when there
/// is none.
ReassociationIndices collapsibleTrailing(linalg::GenericOp op,
                                         utils::IteratorType kind) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t loops = iterators.size();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  // Upstream's collapsing handles plain dims only (it casts every result to
  // a dim): no window taps (o * s + k), no broadcast constants.
  if (!llvm::all_of(maps,
                    [](AffineMap map) { return map.isProjectedPermutation(); }))
    return {};
  for (int64_t first = 0; first + 1 < loops; ++first) {
    if (!llvm::all_of(ArrayRef(iterators).drop_front(first),
                      [&](auto it) { return it == kind; }))
      continue;
    ReassociationIndices group =
        llvm::to_vector(llvm::seq<int64_t>(first, loops));
    if (!linalg::areDimSequencesPreserved(maps, {group}))
      continue;
    bool ok = true;
    for (OpOperand &operand : op->getOpOperands()) {
      auto type = dyn_cast<MemRefType>(operand.get().getType());
      AffineMap map = op.getMatchingIndexingMap(&operand);
      if (!type)
        continue;
      // The operand's dims: the folded loops' in one group (the sequence is
      // preserved, so they are adjacent and in order), the others alone.
      SmallVector<ReassociationIndices> dims;
      for (auto [i, e] : llvm::enumerate(map.getResults())) {
        auto d = dyn_cast<AffineDimExpr>(e);
        bool inner = d && d.getPosition() > static_cast<unsigned>(first);
        if (inner && !dims.empty())
          dims.back().push_back(i);
        else
          dims.push_back({static_cast<int64_t>(i)});
      }
      if (dims.size() != map.getNumResults() &&
          !memref::CollapseShapeOp::isGuaranteedCollapsible(type, dims))
        ok = false;
    }
    if (ok)
      return group;
  }
  return {};
}

/// Vector lanes of the narrowest element (f32) on AVX-512: an innermost loop
/// shorter than this leaves LLVM nothing to vectorise along it. On the host
/// (not `innermost`) loops shorter than four vectors merge too: one of 16
/// to 63 leaves a remainder of up to 15 scalar trips per row to one or a
/// few vector trips (a CNN's 28 x 28 and 56 x 56 images); merged with the
/// rows around it the loop is long.
constexpr int64_t kShortInnerLoop = 16, kShortHostInnerLoop = 64;

/// For an elementwise `op` (every loop parallel) whose innermost loop is
/// shorter than a vector, the trailing loops to merge into one; empty when
/// there are none. Measured on the residual CNN's AdamW step: the update of
/// a [32, 32, 3, 3] convolution weight ran as 1024 scalar trips of 9
/// unrolled elements (sqrt and two divisions each, 25 us, 1.7% of the
/// step); merged, it is one vectorised loop of 9216.
ReassociationIndices collapsibleShortElementwise(linalg::GenericOp op,
                                                 int64_t shortLoop) {
  if (op.getNumReductionLoops() != 0 || op.getNumLoops() < 2)
    return {};
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamic(ranges.back()) || ranges.back() >= shortLoop)
    return {};
  return collapsibleTrailing(op, utils::IteratorType::parallel);
}

/// `op` with each operand that reads only element 0 of some dims of
/// extent 1 (a per-channel scale [1, C, 1, 1] broadcast over [N, C, H, W]:
/// squeeze-excitation's Mul) read through a memref.collapse_shape without
/// those dims, so that every map is a projected permutation, which
/// collapseOpIterationDims needs; `op` itself when no operand does so or
/// one cannot be collapsed. Measured on MobileNetV3-Large: its
/// squeeze-excitation loops on 14 x 14 and 7 x 7 ran two lanes a trip.
linalg::GenericOp withoutUnitBroadcasts(linalg::GenericOp op,
                                        RewriterBase &rewriter) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<std::pair<unsigned, SmallVector<ReassociationIndices>>> views;
  for (OpOperand *operand : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(operand);
    auto type = dyn_cast<MemRefType>(operand->get().getType());
    if (!type || map.isProjectedPermutation())
      continue;
    // Each dim read at 0 joins the group of a kept one (the one before, or
    // the next when none is before); none kept: a rank-0 view.
    SmallVector<ReassociationIndices> groups;
    SmallVector<AffineExpr> kept;
    bool groupKeeps = false;
    for (auto [i, e] : llvm::enumerate(map.getResults())) {
      auto constant = dyn_cast<AffineConstantExpr>(e);
      if (constant && (constant.getValue() != 0 || type.getDimSize(i) != 1))
        return op;
      if (!constant && !isa<AffineDimExpr>(e))
        return op;
      if (groups.empty() || (!constant && groupKeeps)) {
        groups.push_back({});
        groupKeeps = false;
      }
      groups.back().push_back(static_cast<int64_t>(i));
      if (!constant) {
        groupKeeps = true;
        kept.push_back(e);
      }
    }
    if (kept.empty())
      groups.clear();
    if (!memref::CollapseShapeOp::isGuaranteedCollapsible(type, groups))
      return op;
    unsigned index = operand->getOperandNumber();
    maps[index] = AffineMap::get(map.getNumDims(), 0, kept, op.getContext());
    views.push_back({index, std::move(groups)});
  }
  if (views.empty())
    return op;
  SmallVector<Value> operands(op->getOperands());
  for (auto &[index, groups] : views)
    operands[index] = memref::CollapseShapeOp::create(rewriter, op.getLoc(),
                                                      operands[index], groups);
  int64_t numInputs = op.getNumDpsInputs();
  auto rewritten =
      linalg::GenericOp::create(rewriter, op.getLoc(), TypeRange(),
                                ArrayRef(operands).take_front(numInputs),
                                ArrayRef(operands).drop_front(numInputs), maps,
                                op.getIteratorTypesArray());
  rewritten->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.inlineRegionBefore(op.getRegion(), rewritten.getRegion(),
                              rewritten.getRegion().begin());
  rewriter.eraseOp(op);
  return rewritten;
}

struct HoistParallelDimsPass
    : public dist::impl::HoistParallelDimsPassBase<HoistParallelDimsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, SmallVector<unsigned>>> work;
    getOperation().walk([&](linalg::GenericOp op) {
      if (SmallVector<unsigned> order = hoistedOrder(op, innermost);
          !order.empty())
        work.push_back({op, std::move(order)});
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, order] : work) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::interchangeGenericOp(rewriter, op, order))) {
        op.emitError("cannot reorder the loops of this reduction");
        return signalPassFailure();
      }
    }
    const int64_t shortLoop = innermost ? kShortInnerLoop : kShortHostInnerLoop;
    SmallVector<std::pair<linalg::GenericOp, ReassociationIndices>> merges;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!op.hasPureBufferSemantics())
        return;
      ReassociationIndices group =
          collapsibleTrailing(op, utils::IteratorType::reduction);
      if (group.empty())
        group = collapsibleShortElementwise(op, shortLoop);
      if (!group.empty())
        merges.push_back({op, std::move(group)});
    });
    // Elementwise loops too short to vectorise that broadcast [1, C, 1, 1]
    // operands: those read without their unit dims first.
    SmallVector<linalg::GenericOp> broadcasts;
    getOperation().walk([&](linalg::GenericOp op) {
      if (innermost || !op.hasPureBufferSemantics() ||
          op.getNumReductionLoops() != 0 || op.getNumLoops() < 2 ||
          op.getNumDpsInits() != 1)
        return;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (!ShapedType::isDynamic(ranges.back()) && ranges.back() < shortLoop &&
          !llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
            return map.isProjectedPermutation();
          }))
        broadcasts.push_back(op);
    });
    for (linalg::GenericOp op : broadcasts) {
      rewriter.setInsertionPoint(op);
      linalg::GenericOp rewritten = withoutUnitBroadcasts(op, rewriter);
      if (rewritten == op)
        continue;
      if (ReassociationIndices group =
              collapsibleShortElementwise(rewritten, shortLoop);
          !group.empty())
        merges.push_back({rewritten, std::move(group)});
    }
    // Merging is an optimisation: an op it fails on keeps its loops.
    for (auto &[op, group] : merges) {
      rewriter.setInsertionPoint(op);
      if (succeeded(linalg::collapseOpIterationDims(
              cast<linalg::LinalgOp>(op.getOperation()), {group}, rewriter)))
        rewriter.eraseOp(op);
    }
  }
};

} // namespace
