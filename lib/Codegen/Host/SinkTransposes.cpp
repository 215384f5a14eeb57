//===- SinkTransposes.cpp - Move transposes down until they cancel --------===//
// SPDX-License-Identifier: Apache-2.0
//
// Channels-last convolutions (--conv=nhwc) come wrapped in transposes to
// and from NCHW; this pass moves the transposes down through elementwise
// generics and constant pads so that a convolution's output transpose
// meets the next convolution's input transpose and both go. See
// Passes.td. (Upstream's data-layout propagation moves linalg.pack and
// unpack, not plain transposes, and only through generics whose other
// operands it packs too.)
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "Lowering.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "dist-sink-transposes"

namespace mlir::dist {
#define GEN_PASS_DEF_SINKTRANSPOSESPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// transpose(x, perm) as a linalg.transpose into a fresh tensor.
Value transposeOf(PatternRewriter &b, Location loc, Value x,
                  ArrayRef<int64_t> perm) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<OpFoldResult> sizes = dist::codegen::sizesOf(b, loc, x), out;
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    shape.push_back(t.getDimSize(p));
    out.push_back(sizes[p]);
  }
  Value init = dist::codegen::emptyTensor(
      b, loc, RankedTensorType::get(shape, t.getElementType()), out);
  return linalg::TransposeOp::create(b, loc, x, init, perm).getResult()[0];
}

/// transpose(transpose(x, p1), p2) = transpose(x, p1[p2[i]]), or x.
struct FoldTransposes : OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto first = op.getInput().getDefiningOp<linalg::TransposeOp>();
    if (!first || !op.hasPureTensorSemantics() ||
        !first.hasPureTensorSemantics())
      return failure();
    ArrayRef<int64_t> p1 = first.getPermutation(), p2 = op.getPermutation();
    SmallVector<int64_t> perm;
    bool identity = true;
    for (auto [i, p] : llvm::enumerate(p2)) {
      perm.push_back(p1[p]);
      identity &= perm.back() == static_cast<int64_t>(i);
    }
    Value x = first.getInput();
    if (identity && x.getType() == op.getResult()[0].getType()) {
      rewriter.replaceOp(op, x);
      return success();
    }
    rewriter.replaceOp(op, transposeOf(rewriter, op.getLoc(), x, perm));
    return success();
  }
};

/// Whether every use of `v` is a channels-last convolution's, directly or
/// through a reshape of it (the convolution's view of its channels by
/// groups).
bool onlyConvolutionsRead(Value v) {
  for (Operation *user : v.getUsers()) {
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user)) {
      if (!onlyConvolutionsRead(user->getResult(0)))
        return false;
    } else if (!dist::codegen::isChannelsLastConv(user)) {
      return false;
    }
  }
  return true;
}

/// pad(transpose(x, p), c) = transpose(pad'(x, c), p), the pad amounts
/// permuted (static amounts, a constant padding value). Not where x is an
/// argument of the function (a model's input image: no transpose above it
/// to cancel) and only convolutions read the pad: there the pad stays the
/// convolution's own, which the runtime call does without a padded copy
/// (a stem's image otherwise was padded, then transposed, both copies).
struct SinkThroughPad : OpRewritePattern<tensor::PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::PadOp op,
                                PatternRewriter &rewriter) const override {
    auto t = op.getSource().getDefiningOp<linalg::TransposeOp>();
    Value pad = op.getConstantPaddingValue();
    if (!t || !pad || !t.hasPureTensorSemantics() || !op.getLow().empty() ||
        !op.getHigh().empty())
      return failure();
    if (isa<BlockArgument>(t.getInput()) &&
        onlyConvolutionsRead(op.getResult()))
      return failure();
    ArrayRef<int64_t> perm = t.getPermutation();
    ArrayRef<int64_t> low = op.getStaticLow(), high = op.getStaticHigh();
    int64_t rank = static_cast<int64_t>(perm.size());
    Value x = t.getInput();
    auto xType = cast<RankedTensorType>(x.getType());
    SmallVector<OpFoldResult> lo(rank), hi(rank);
    SmallVector<int64_t> shape(xType.getShape());
    for (int64_t i = 0; i < rank; ++i) {
      lo[perm[i]] = rewriter.getIndexAttr(low[i]);
      hi[perm[i]] = rewriter.getIndexAttr(high[i]);
      if (!ShapedType::isDynamic(shape[perm[i]]))
        shape[perm[i]] += low[i] + high[i];
      else if (low[i] != 0 || high[i] != 0)
        return failure();
    }
    Location loc = op.getLoc();
    Value padded = tensor::PadOp::create(
        rewriter, loc, RankedTensorType::get(shape, xType.getElementType()), x,
        lo, hi, pad);
    rewriter.replaceOp(op, transposeOf(rewriter, loc, padded, perm));
    return success();
  }
};

/// The inverse of the permutation `perm`: inverse[perm[i]] = i.
SmallVector<int64_t> inversePerm(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  return inverse;
}

/// `v`'s entries in the order `order` names: out[i] = v[order[i]] (a
/// slice's offsets, sizes or strides on the transposed or untransposed
/// value).
SmallVector<OpFoldResult> gathered(ArrayRef<OpFoldResult> v,
                                   ArrayRef<int64_t> order) {
  SmallVector<OpFoldResult> out;
  for (int64_t i : order)
    out.push_back(v[i]);
  return out;
}

/// Whether `perm` is the identity permutation.
bool isIdentityPerm(ArrayRef<int64_t> perm) {
  for (auto [i, p] : llvm::enumerate(perm))
    if (p != static_cast<int64_t>(i))
      return false;
  return true;
}

/// transpose(x, perm), or x when perm is the identity.
Value transposeOrSelf(PatternRewriter &b, Location loc, Value x,
                      ArrayRef<int64_t> perm) {
  return isIdentityPerm(perm) ? x : transposeOf(b, loc, x, perm);
}

/// expand_shape(transpose(x, p)) = transpose(expand_shape'(x), p'): dim
/// p[i] of x splits as dim i of the transpose does, and p' keeps each
/// split's dims together, in the transpose's order (ShuffleNet's channel
/// shuffle splits the channels into groups). The transpose used once, the
/// split not a channels-last convolution's view of its channels by groups
/// (the convolution reads its image as stored).
struct SinkThroughExpand : OpRewritePattern<tensor::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    auto t = op.getSrc().getDefiningOp<linalg::TransposeOp>();
    if (!t || !t.hasPureTensorSemantics() || !t->hasOneUse())
      return failure();
    for (Operation *user : op->getUsers())
      if (dist::codegen::isChannelsLastConv(user))
        return failure();
    ArrayRef<int64_t> p = t.getPermutation();
    SmallVector<ReassociationIndices> groups = op.getReassociationIndices();
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    RankedTensorType type = op.getResultType();
    int64_t rank = static_cast<int64_t>(p.size());
    SmallVector<int64_t> inverse = inversePerm(p), start(rank),
                         perm(type.getRank());
    // x's dims in order, each split into its transposed dim's group.
    SmallVector<ReassociationIndices> xGroups;
    SmallVector<OpFoldResult> xSizes;
    SmallVector<int64_t> xShape;
    for (int64_t d = 0, next = 0; d < rank; ++d) {
      start[d] = next;
      ReassociationIndices g;
      for (int64_t r : groups[inverse[d]]) {
        g.push_back(next++);
        xSizes.push_back(sizes[r]);
        xShape.push_back(type.getDimSize(r));
      }
      xGroups.push_back(g);
    }
    // Result dim r, the k-th of group i, is dim start[p[i]] + k of x's.
    for (int64_t i = 0; i < rank; ++i)
      for (auto [k, r] : llvm::enumerate(groups[i]))
        perm[r] = start[p[i]] + static_cast<int64_t>(k);
    Location loc = op.getLoc();
    Value expanded = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(xShape, type.getElementType()),
        t.getInput(), xGroups, xSizes);
    rewriter.replaceOp(op, transposeOrSelf(rewriter, loc, expanded, perm));
    return success();
  }
};

/// collapse_shape(transpose(x, p)) = transpose(collapse_shape'(transpose(x,
/// q)), p'): q orders x's dims so that each merged group's dims are
/// together, in the transpose's order (the identity when they already
/// are), groups in the order of their first dim in x; the merge happens in
/// that order and p' orders the merged dims as the transpose did. A
/// channel shuffle on channels-last images is then an inner permutation
/// of each pixel's channels (q), and p' moves on down. Nothing changes
/// when q is p (the merge needs the transposed order: a flatten). The
/// transpose used once.
struct SinkThroughCollapse : OpRewritePattern<tensor::CollapseShapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::CollapseShapeOp op,
                                PatternRewriter &rewriter) const override {
    auto t = op.getSrc().getDefiningOp<linalg::TransposeOp>();
    if (!t || !t.hasPureTensorSemantics() || !t->hasOneUse())
      return failure();
    ArrayRef<int64_t> p = t.getPermutation();
    SmallVector<ReassociationIndices> groups = op.getReassociationIndices();
    int64_t rank = static_cast<int64_t>(p.size());
    int64_t merged = static_cast<int64_t>(groups.size());
    SmallVector<int64_t> groupOf(rank);
    for (auto [gi, g] : llvm::enumerate(groups))
      for (int64_t i : g)
        groupOf[p[i]] = static_cast<int64_t>(gi);
    SmallVector<int64_t> q, order, perm(merged);
    SmallVector<bool> placed(merged, false);
    SmallVector<ReassociationIndices> xGroups;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t gi = groupOf[d];
      if (placed[gi])
        continue;
      placed[gi] = true;
      perm[gi] = static_cast<int64_t>(order.size());
      order.push_back(gi);
      ReassociationIndices g;
      for (int64_t i : groups[gi]) {
        g.push_back(static_cast<int64_t>(q.size()));
        q.push_back(p[i]);
      }
      xGroups.push_back(g);
    }
    if (ArrayRef<int64_t>(q) == p)
      return failure();
    Location loc = op.getLoc();
    Value inner = transposeOrSelf(rewriter, loc, t.getInput(), q);
    Value collapsed =
        tensor::CollapseShapeOp::create(rewriter, loc, inner, xGroups);
    rewriter.replaceOp(op, transposeOrSelf(rewriter, loc, collapsed, perm));
    return success();
  }
};

/// extract_slice(transpose(x, p)) = transpose(extract_slice'(x), p), the
/// offsets, sizes and strides permuted, for a transpose that only such
/// slices read (ShuffleNet's channel split): each slice of it becomes a
/// transpose of a slice of x.
struct SinkThroughSlices : OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::TransposeOp t,
                                PatternRewriter &rewriter) const override {
    if (!t.hasPureTensorSemantics() || t->use_empty())
      return failure();
    SmallVector<tensor::ExtractSliceOp> slices;
    for (Operation *user : t->getUsers()) {
      auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
      if (!slice ||
          slice.getSourceType().getRank() != slice.getResultType().getRank())
        return failure();
      slices.push_back(slice);
    }
    ArrayRef<int64_t> p = t.getPermutation();
    SmallVector<int64_t> inverse = inversePerm(p);
    for (tensor::ExtractSliceOp slice : slices) {
      rewriter.setInsertionPoint(slice);
      Value part = tensor::ExtractSliceOp::create(
          rewriter, slice.getLoc(), t.getInput(),
          gathered(slice.getMixedOffsets(), inverse),
          gathered(slice.getMixedSizes(), inverse),
          gathered(slice.getMixedStrides(), inverse));
      rewriter.replaceOp(slice, transposeOf(rewriter, slice.getLoc(), part, p));
    }
    return success();
  }
};

/// Marks the last link of a concatenation that SinkThroughConcat made.
constexpr llvm::StringLiteral kMovedAttr = "dist.sunk_concat";

/// A concatenation (LowerShape's chain of tensor.insert_slice into a
/// tensor.empty, each link used once) of transpose(x_i, p) runs on the
/// x_i: the same chain in their order, its offsets and sizes permuted,
/// then transposed by p. Parts that are not such transposes (a
/// ConvTranspose's upsampled image beside a skip connection) are
/// transposed into that order on their own, when at least one part is.
struct SinkThroughConcat : OpRewritePattern<tensor::InsertSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::InsertSliceOp last,
                                PatternRewriter &rewriter) const override {
    // The whole chain, from its last link (whose result no link inserts
    // into) back to the empty tensor.
    // A chain this pattern made stays (its transposed parts would move
    // back the other way).
    if (last->hasAttr(kMovedAttr))
      return failure();
    for (Operation *user : last.getResult().getUsers())
      if (auto next = dyn_cast<tensor::InsertSliceOp>(user))
        if (next.getDest() == last.getResult())
          return failure();
    SmallVector<tensor::InsertSliceOp> chain;
    Value at = last.getResult();
    while (auto link = at.getDefiningOp<tensor::InsertSliceOp>()) {
      if (link != last && !link->hasOneUse())
        return failure();
      chain.push_back(link);
      at = link.getDest();
    }
    auto empty = at.getDefiningOp<tensor::EmptyOp>();
    if (!empty || chain.size() < 2)
      return failure();
    std::reverse(chain.begin(), chain.end());
    SmallVector<int64_t> perm;
    for (tensor::InsertSliceOp link : chain) {
      if (link.getSourceType().getRank() != link.getDestType().getRank() ||
          !llvm::all_of(link.getStaticStrides(),
                        [](int64_t st) { return st == 1; }))
        return failure();
      auto t = link.getSource().getDefiningOp<linalg::TransposeOp>();
      if (!t || !t.hasPureTensorSemantics())
        continue;
      if (perm.empty())
        perm.assign(t.getPermutation().begin(), t.getPermutation().end());
      else if (ArrayRef<int64_t>(perm) != t.getPermutation())
        return failure();
    }
    if (perm.empty())
      return failure();
    // In x's order: dim m of the new chain is dim inverse[m] of the old.
    Location loc = last.getLoc();
    auto oldType = cast<RankedTensorType>(last.getResult().getType());
    int64_t rank = oldType.getRank();
    SmallVector<int64_t> inverse = inversePerm(perm);
    auto permuted = [&](ArrayRef<OpFoldResult> v) {
      return gathered(v, inverse);
    };
    SmallVector<int64_t> shape;
    for (int64_t m = 0; m < rank; ++m)
      shape.push_back(oldType.getDimSize(inverse[m]));
    auto newType = RankedTensorType::get(shape, oldType.getElementType());
    Value acc = dist::codegen::emptyTensor(
        rewriter, loc, newType,
        permuted(tensor::getMixedSizes(rewriter, loc, empty.getResult())));
    for (tensor::InsertSliceOp link : chain) {
      auto t = link.getSource().getDefiningOp<linalg::TransposeOp>();
      Value part =
          t && t.getPermutation() == ArrayRef<int64_t>(perm)
              ? t.getInput()
              : transposeOf(rewriter, link.getLoc(), link.getSource(), inverse);
      acc = tensor::InsertSliceOp::create(
          rewriter, link.getLoc(), part, acc, permuted(link.getMixedOffsets()),
          permuted(link.getMixedSizes()), link.getMixedStrides());
    }
    acc.getDefiningOp()->setAttr(kMovedAttr, rewriter.getUnitAttr());
    rewriter.replaceOp(last, transposeOf(rewriter, loc, acc, perm));
    return success();
  }
};

/// The transpose that defines operand `o` of `g` when `o` is read through
/// an identity map over all of g's loops.
linalg::TransposeOp fullTranspose(linalg::GenericOp g, OpOperand &o) {
  auto t = o.get().getDefiningOp<linalg::TransposeOp>();
  AffineMap map = g.getMatchingIndexingMap(&o);
  if (!t || !t.hasPureTensorSemantics() || !map.isIdentity() ||
      map.getNumDims() != g.getNumLoops())
    return {};
  return t;
}

/// An elementwise generic on transpose(x, p) runs in x's order, its result
/// transposed by p (see Passes.td).
struct SinkThroughElementwise : OpRewritePattern<linalg::GenericOp> {
  SinkThroughElementwise(MLIRContext *ctx)
      : OpRewritePattern(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(linalg::GenericOp g,
                                PatternRewriter &rewriter) const override {
    if (!g.hasPureTensorSemantics() || g.getNumDpsInits() != 1 ||
        g.getNumReductionLoops() != 0 || g.getNumResults() != 1)
      return failure();
    OpOperand *init = g.getDpsInitOperand(0);
    if (!g.getMatchingIndexingMap(init).isIdentity() ||
        g.payloadUsesValueFromOperand(init))
      return failure();
    // The permutation: the first operand's transpose; other transposed
    // operands must be the same (the rest are read through their maps).
    SmallVector<int64_t> perm;
    Value shapeOf;
    for (OpOperand *o : g.getDpsInputOperands()) {
      linalg::TransposeOp t = fullTranspose(g, *o);
      if (!t)
        continue;
      if (perm.empty()) {
        perm.assign(t.getPermutation().begin(), t.getPermutation().end());
        shapeOf = t.getInput();
      } else if (ArrayRef<int64_t>(perm) != t.getPermutation()) {
        return failure();
      }
    }
    if (perm.empty())
      return failure();
    MLIRContext *ctx = g.getContext();
    int64_t rank = static_cast<int64_t>(perm.size());
    // New loops j in x's order; old loop i_k = j_{perm[k]}.
    AffineMap P = AffineMap::getPermutationMap(perm, ctx);
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    for (OpOperand *o : g.getDpsInputOperands()) {
      linalg::TransposeOp t = fullTranspose(g, *o);
      if (t && t.getPermutation() == ArrayRef<int64_t>(perm)) {
        inputs.push_back(t.getInput());
        maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
        continue;
      }
      inputs.push_back(o->get());
      maps.push_back(g.getMatchingIndexingMap(o).compose(P));
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
    Location loc = g.getLoc();
    auto resultType = cast<RankedTensorType>(g.getResult(0).getType());
    auto xType = cast<RankedTensorType>(shapeOf.getType());
    auto newType =
        RankedTensorType::get(xType.getShape(), resultType.getElementType());
    Value empty = dist::codegen::emptyTensor(
        rewriter, loc, newType, dist::codegen::sizesOf(rewriter, loc, shapeOf));
    auto moved = linalg::GenericOp::create(rewriter, loc, TypeRange{newType},
                                           inputs, ValueRange{empty}, maps,
                                           g.getIteratorTypesArray());
    rewriter.inlineRegionBefore(g.getRegion(), moved.getRegion(),
                                moved.getRegion().begin());
    rewriter.replaceOp(g, transposeOf(rewriter, loc, moved.getResult(0), perm));
    return success();
  }
};

/// Whether SinkThroughElementwise takes `g` (all parallel, an identity
/// output map): then no other pattern may.
bool sinksThrough(linalg::GenericOp g) {
  return g.getNumDpsInits() == 1 && g.getNumReductionLoops() == 0 &&
         g.getNumResults() == 1 &&
         g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity() &&
         !g.payloadUsesValueFromOperand(g.getDpsInitOperand(0));
}

/// Any other generic (a pooling window, a reduction), and an elementwise
/// one through a map other than the identity, reads transpose(x, p) as x
/// through its indexing map composed with p's inverse, instead of a
/// transposed copy.
struct AbsorbIntoGeneric : OpRewritePattern<linalg::GenericOp> {
  AbsorbIntoGeneric(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/1) {}
  LogicalResult matchAndRewrite(linalg::GenericOp g,
                                PatternRewriter &rewriter) const override {
    // A channels-last convolution's call reads its input as stored.
    if (!g.hasPureTensorSemantics() || dist::codegen::isChannelsLastConv(g))
      return failure();
    MLIRContext *ctx = g.getContext();
    bool elementwise = sinksThrough(g);
    for (OpOperand *o : g.getDpsInputOperands()) {
      auto t = o->get().getDefiningOp<linalg::TransposeOp>();
      // An elementwise generic's transposed operands read through an
      // identity map are SinkThroughElementwise's; those read through
      // another map (after it moved the generic) are read as stored.
      if (!t || !t.hasPureTensorSemantics() ||
          (elementwise && g.getMatchingIndexingMap(o).isIdentity()))
        continue;
      // x[m] = t[i] where m = perm[i]: x's dim m is t's dim inverse[m].
      AffineMap Q = inversePermutation(
          AffineMap::getPermutationMap(t.getPermutation(), ctx));
      SmallVector<AffineMap> maps = g.getIndexingMapsArray();
      unsigned index = o->getOperandNumber();
      maps[index] = Q.compose(maps[index]);
      rewriter.modifyOpInPlace(g, [&] {
        o->set(t.getInput());
        g.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
      });
      // A reduction reading the channels-last image (a global pooling, a
      // squeeze-excitation's mean) runs the loop of its contiguous dim
      // innermost when that loop is parallel, where LLVM vectorises it
      // (dist-hoist-parallel-dims keeps the innermost loop there):
      // EfficientNet-B0's means read 1.2M floats at C floats' stride
      // otherwise, 9% of an inference at one thread (EPYC). Not a pooling
      // window (a map of sums): its taps stay innermost, where the maximum
      // or sum stays in a register.
      auto last = dyn_cast<AffineDimExpr>(maps[index].getResults().back());
      unsigned loops = g.getNumLoops();
      if (!elementwise && g.getNumReductionLoops() > 0 && last &&
          maps[index].isProjectedPermutation() &&
          last.getPosition() + 1 != loops &&
          g.getIteratorTypesArray()[last.getPosition()] ==
              utils::IteratorType::parallel) {
        SmallVector<unsigned> order;
        for (unsigned i = 0; i < loops; ++i)
          if (i != last.getPosition())
            order.push_back(i);
        order.push_back(last.getPosition());
        (void)linalg::interchangeGenericOp(rewriter, g, order);
      }
      return success();
    }
    return failure();
  }
};

/// The loops of the innermost dim that `g` reads of its first input (one,
/// or those of a sum: a pooling window's position).
SmallVector<unsigned> innermostReadLoops(linalg::GenericOp g) {
  SmallVector<unsigned> loops;
  if (g.getNumDpsInputs() == 0)
    return loops;
  AffineMap in = g.getMatchingIndexingMap(g.getDpsInputOperand(0));
  if (in.getNumResults() == 0)
    return loops;
  in.getResults().back().walk([&](AffineExpr e) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      loops.push_back(d.getPosition());
  });
  return loops;
}

/// Whether `out` (a projected permutation) writes `g`'s result along the
/// loop of the innermost dim that g reads of its first input.
bool innermostRead(linalg::GenericOp g, AffineMap out) {
  if (out.getNumResults() == 0)
    return false;
  auto last = dyn_cast<AffineDimExpr>(out.getResults().back());
  return last && llvm::is_contained(innermostReadLoops(g), last.getPosition());
}

/// The permutation p of `out`'s dims (a projected permutation) that writes
/// them in the order `g` reads them of its first input (p[i]: the result
/// dim written i-th), or none when that is the order already or some dim
/// is not read there.
SmallVector<int64_t> readOrder(linalg::GenericOp g, AffineMap out) {
  if (g.getNumDpsInputs() == 0)
    return {};
  AffineMap in = g.getMatchingIndexingMap(g.getDpsInputOperand(0));
  SmallVector<int64_t> perm;
  for (AffineExpr e : in.getResults())
    for (auto [i, o] : llvm::enumerate(out.getResults())) {
      auto d = cast<AffineDimExpr>(o);
      if (e.isFunctionOfDim(d.getPosition()) &&
          !llvm::is_contained(perm, static_cast<int64_t>(i)))
        perm.push_back(static_cast<int64_t>(i));
    }
  if (perm.size() != out.getNumResults() || isIdentityPerm(perm))
    return {};
  return perm;
}

/// Whether `op` is a generic on tensors that reads `v` as an input only
/// (a pooling window reading a padded image).
bool readsOnly(Operation *op, Value v) {
  auto g = dyn_cast<linalg::GenericOp>(op);
  return g && g.hasPureTensorSemantics() &&
         !llvm::is_contained(g.getDpsInits(), v);
}

/// A generic that is not elementwise (a pooling window) whose only users
/// transpose its one result by p writes the transposed result itself (its
/// output map composed with p, a fill init filled again in that order),
/// its loops reordered so that the output's dims come first in their order
/// (a channels-last pooling reads and writes channels innermost).
struct WriteTransposed : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp g,
                                PatternRewriter &rewriter) const override {
    if (!g.hasPureTensorSemantics() || g.getNumResults() != 1 ||
        g.getNumDpsInits() != 1 || sinksThrough(g) ||
        g.getResult(0).use_empty() ||
        (g.getNumDpsInputs() == 2 && dist::codegen::isMulAddBody(g)))
      return failure(); // (Products: dist-fuse-elementwise's.)
    // Its users: transposes by one permutation, and constant pads (static
    // amounts) and slices (of its rank) that only such transposes read
    // (ShuffleNet's max pooling before a padded depthwise layer and a
    // channel split), which pad or slice the transposed result. Sizes read
    // from them (a dynamic batch) are read from the transposed values.
    SmallVector<int64_t> perm;
    auto samePerm = [&](Operation *op, Value of) {
      if (auto dim = dyn_cast<tensor::DimOp>(op))
        return dim.getSource() == of && dim.getConstantIndex().has_value();
      auto t = dyn_cast<linalg::TransposeOp>(op);
      if (!t || t.getInput() != of)
        return false;
      if (perm.empty())
        perm.assign(t.getPermutation().begin(), t.getPermutation().end());
      return ArrayRef<int64_t>(perm) == t.getPermutation();
    };
    SmallVector<tensor::PadOp> pads;
    SmallVector<tensor::ExtractSliceOp> slices;
    // Elementwise users read the result transposed back, a transpose that
    // then sinks through them (DenseNet's max pooling after its stem feeds
    // its first layer's normalisation as well as every concatenation of
    // the block).
    SmallVector<Operation *> elementwise;
    for (Operation *user : g.getResult(0).getUsers()) {
      if (samePerm(user, g.getResult(0)))
        continue;
      if (auto e = dyn_cast<linalg::GenericOp>(user);
          e && e.hasPureTensorSemantics() && sinksThrough(e) &&
          !llvm::is_contained(e.getDpsInits(), g.getResult(0))) {
        elementwise.push_back(user);
        continue;
      }
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user)) {
        if (slice.getSourceType().getRank() !=
                slice.getResultType().getRank() ||
            slice->use_empty() ||
            !llvm::all_of(slice->getUsers(), [&](Operation *sliceUser) {
              return samePerm(sliceUser, slice.getResult());
            }))
          return failure();
        slices.push_back(slice);
        continue;
      }
      auto pad = dyn_cast<tensor::PadOp>(user);
      if (!pad || pad.getSource() != g.getResult(0) ||
          !pad.getConstantPaddingValue() || !pad.getLow().empty() ||
          !pad.getHigh().empty() || pad->use_empty() ||
          !llvm::all_of(pad->getUsers(), [&](Operation *padUser) {
            return samePerm(padUser, pad.getResult()) ||
                   readsOnly(padUser, pad.getResult());
          }))
        return failure();
      pads.push_back(pad);
    }
    OpOperand *init = g.getDpsInitOperand(0);
    AffineMap outMap = g.getMatchingIndexingMap(init);
    if (!outMap.isProjectedPermutation())
      return failure();
    // With elementwise users alone, the order in which the generic reads
    // its image (a pooling window on a channels-last image writing NCHW:
    // DenseNet's transitions, whose average's division reads it).
    if (perm.empty() && !elementwise.empty() && pads.empty() && slices.empty())
      perm = readOrder(g, outMap);
    // Never to an order that writes across the image's innermost dim where
    // the generic now writes along it (no ping-pong with the rule above).
    if (perm.empty() ||
        (innermostRead(g, outMap) &&
         !innermostRead(g, AffineMap::getPermutationMap(perm, g.getContext())
                               .compose(outMap))))
      return failure();
    // The users of `old` read `moved` (old transposed by perm): its
    // transposes `moved` itself, its size k moved's size i, perm[i] = k.
    auto replaceUsers = [&](Value old, Value moved) {
      for (Operation *user : llvm::make_early_inc_range(old.getUsers())) {
        auto dim = dyn_cast<tensor::DimOp>(user);
        if (!dim) {
          rewriter.replaceOp(user, moved);
          continue;
        }
        int64_t k = *dim.getConstantIndex();
        int64_t i = llvm::find(perm, k) - perm.begin();
        rewriter.setInsertionPoint(dim);
        rewriter.replaceOp(
            dim, tensor::DimOp::create(rewriter, dim.getLoc(), moved, i));
      }
    };
    // The init, filled (or left empty) in the transposed order.
    Location loc = g.getLoc();
    Value fillValue;
    if (auto fill = init->get().getDefiningOp<linalg::FillOp>()) {
      if (!fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
        return failure();
      fillValue = fill.getInputs()[0];
    } else if (!init->get().getDefiningOp<tensor::EmptyOp>()) {
      return failure();
    }
    AffineMap newOut =
        AffineMap::getPermutationMap(perm, g.getContext()).compose(outMap);
    auto oldType = cast<RankedTensorType>(g.getResult(0).getType());
    // (The init's sizes: those of the result, read before the generic.)
    SmallVector<OpFoldResult> sizes = dist::codegen::sizesOf(rewriter, loc,
                                                             init->get()),
                              newSizes;
    SmallVector<int64_t> shape;
    for (int64_t p : perm) {
      shape.push_back(oldType.getDimSize(p));
      newSizes.push_back(sizes[p]);
    }
    auto newType = RankedTensorType::get(shape, oldType.getElementType());
    Value newInit =
        fillValue
            ? dist::codegen::filledTensor(rewriter, loc, newType, newSizes,
                                          fillValue)
            : dist::codegen::emptyTensor(rewriter, loc, newType, newSizes);
    SmallVector<AffineMap> maps = g.getIndexingMapsArray();
    maps.back() = newOut;
    SmallVector<Value> inputs(g.getDpsInputs());
    auto moved = linalg::GenericOp::create(rewriter, loc, TypeRange{newType},
                                           inputs, ValueRange{newInit}, maps,
                                           g.getIteratorTypesArray());
    rewriter.inlineRegionBefore(g.getRegion(), moved.getRegion(),
                                moved.getRegion().begin());
    // Loops in the output's order, then the others as they were.
    SmallVector<unsigned> order;
    for (AffineExpr e : newOut.getResults())
      order.push_back(cast<AffineDimExpr>(e).getPosition());
    for (unsigned i = 0; i < moved.getNumLoops(); ++i)
      if (!llvm::is_contained(order, i))
        order.push_back(i);
    FailureOr<linalg::GenericOp> interchanged =
        linalg::interchangeGenericOp(rewriter, moved, order);
    Value result = succeeded(interchanged) ? interchanged->getResult(0)
                                           : moved.getResult(0);
    // Each pad pads the transposed result, its dim i by the old dim
    // perm[i]'s amounts, and replaces the transposes of its result; other
    // generics that read it (GoogLeNet's max pooling branch, reading the
    // previous pooling's result padded) read the padded result transposed
    // back, which they then take in as stored (AbsorbIntoGeneric).
    for (tensor::PadOp pad : pads) {
      rewriter.setInsertionPoint(pad);
      ArrayRef<int64_t> low = pad.getStaticLow(), high = pad.getStaticHigh();
      auto padType = pad.getResultType();
      SmallVector<OpFoldResult> lo, hi;
      SmallVector<int64_t> padShape;
      for (int64_t p : perm) {
        lo.push_back(rewriter.getIndexAttr(low[p]));
        hi.push_back(rewriter.getIndexAttr(high[p]));
        padShape.push_back(padType.getDimSize(p));
      }
      Value padded = tensor::PadOp::create(
          rewriter, pad.getLoc(),
          RankedTensorType::get(padShape, padType.getElementType()), result, lo,
          hi, pad.getConstantPaddingValue());
      SmallVector<Operation *> readers;
      for (Operation *padUser : pad->getUsers())
        if (!samePerm(padUser, pad.getResult()))
          readers.push_back(padUser);
      if (!readers.empty()) {
        Value back =
            transposeOf(rewriter, pad.getLoc(), padded, inversePerm(perm));
        for (Operation *reader : readers)
          rewriter.modifyOpInPlace(reader, [&] {
            for (OpOperand &o : reader->getOpOperands())
              if (o.get() == pad.getResult())
                o.set(back);
          });
      }
      replaceUsers(pad.getResult(), padded);
      rewriter.eraseOp(pad);
    }
    // Each slice likewise, its offsets, sizes and strides permuted.
    for (tensor::ExtractSliceOp slice : slices) {
      rewriter.setInsertionPoint(slice);
      Value part = tensor::ExtractSliceOp::create(
          rewriter, slice.getLoc(), result,
          gathered(slice.getMixedOffsets(), perm),
          gathered(slice.getMixedSizes(), perm),
          gathered(slice.getMixedStrides(), perm));
      replaceUsers(slice.getResult(), part);
      rewriter.eraseOp(slice);
    }
    if (!elementwise.empty()) {
      rewriter.setInsertionPointAfterValue(result);
      Value back = transposeOf(rewriter, loc, result, inversePerm(perm));
      for (Operation *user : elementwise)
        rewriter.modifyOpInPlace(user, [&] {
          for (OpOperand &o : user->getOpOperands())
            if (o.get() == g.getResult(0))
              o.set(back);
        });
    }
    replaceUsers(g.getResult(0), result);
    rewriter.eraseOp(g);
    return success();
  }
};

struct SinkTransposesPass
    : dist::impl::SinkTransposesPassBase<SinkTransposesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (convsOnly && !dist::codegen::hasChannelsLastConv(getOperation()))
      return;
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldTransposes, SinkThroughPad, SinkThroughExpand,
                 SinkThroughCollapse, SinkThroughSlices, SinkThroughConcat,
                 SinkThroughElementwise, AbsorbIntoGeneric, WriteTransposed>(
        &getContext());
    GreedyRewriteConfig config;
    config.setMaxIterations(64);
    // Where rewriting stops short (the iteration limit) the graph is as
    // correct as before, with some transposes left.
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);
    getOperation().walk(
        [](tensor::InsertSliceOp op) { op->removeAttr(kMovedAttr); });
  }
};

} // namespace
