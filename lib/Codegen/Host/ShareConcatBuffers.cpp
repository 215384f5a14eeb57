//===- ShareConcatBuffers.cpp - Growing concatenations in one buffer ------===//
// SPDX-License-Identifier: Apache-2.0
//
// A dense block (DenseNet) concatenates every layer's output with all the
// features before it: each layer's Concat is a fresh tensor whose chain of
// insert_slice ops copies every earlier piece again, so the copies grow
// with the square of the block's depth (DenseNet-121 channels-last: 593
// copy loops, 8-9% of a one-thread inference and most of its 8 s compile,
// AMD EPYC). Where the pieces of one concatenation are the first pieces of
// a longer one, in the same order and places, this pass builds the longest
// once, inserting each piece as soon as it exists, and reads each shorter
// concatenation as the slice of it that holds its pieces. One-shot
// bufferization then writes every piece once, in place, into one buffer:
// the readers of a shorter concatenation come before the next piece is
// inserted (the next layer's input is the concatenation so far). See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "dist-share-concat-buffers"

namespace mlir::dist {
#define GEN_PASS_DEF_SHARECONCATBUFFERSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// A concatenation as lowered: insert_slice ops, each into the last's
/// result, from a tensor.empty, of static offsets that are 0 but along
/// `dim`, where the pieces lie one after another from 0 to the end, unit
/// strides, each piece whole.
struct Chain {
  tensor::EmptyOp empty;
  SmallVector<tensor::InsertSliceOp> inserts;
  int64_t dim = -1;
  /// Each piece's offset along `dim`.
  SmallVector<int64_t> offsets;
  Value result() { return inserts.back().getResult(); }
  Value piece(size_t i) { return inserts[i].getSource(); }
};

/// The chain that ends at `last` (its result not inserted into another
/// of the same type), or nothing.
std::optional<Chain> chainEndingAt(tensor::InsertSliceOp last) {
  Chain c;
  auto type = last.getDestType();
  int64_t rank = type.getRank();
  for (tensor::InsertSliceOp op = last; op;) {
    if (op.getDestType() != type || op->getBlock() != last->getBlock() ||
        !op.hasUnitStride() || op.getSourceType().getRank() != rank ||
        llvm::any_of(op.getStaticOffsets(), ShapedType::isDynamic))
      return std::nullopt;
    // Inner links are used only by the next link.
    if (op != last && !op->hasOneUse())
      return std::nullopt;
    c.inserts.push_back(op);
    Value dest = op.getDest();
    if (auto empty = dest.getDefiningOp<tensor::EmptyOp>()) {
      c.empty = empty;
      break;
    }
    op = dest.getDefiningOp<tensor::InsertSliceOp>();
    if (!op)
      return std::nullopt;
  }
  std::reverse(c.inserts.begin(), c.inserts.end());
  if (c.inserts.size() < 2)
    return std::nullopt;
  // One dim where the offsets differ; the pieces whole along the others
  // (the piece's type its slice's: dynamic sizes only where the result's
  // are) and one after another along it, covering it.
  int64_t end = 0;
  for (tensor::InsertSliceOp op : c.inserts) {
    ArrayRef<int64_t> offsets = op.getStaticOffsets();
    auto src = op.getSourceType();
    for (int64_t d = 0; d < rank; ++d) {
      if (offsets[d] == 0 && src.getDimSize(d) == type.getDimSize(d))
        continue;
      if (c.dim >= 0 && c.dim != d)
        return std::nullopt;
      c.dim = d;
    }
  }
  if (c.dim < 0 || type.isDynamicDim(c.dim))
    return std::nullopt;
  for (tensor::InsertSliceOp op : c.inserts) {
    int64_t offset = op.getStaticOffsets()[c.dim];
    int64_t size = op.getSourceType().getDimSize(c.dim);
    if (offset != end || ShapedType::isDynamic(size))
      return std::nullopt;
    c.offsets.push_back(offset);
    end += size;
  }
  if (end != type.getDimSize(c.dim))
    return std::nullopt;
  return c;
}

/// Whether `shorter`'s pieces are the first of `longer`'s, in the same
/// places.
bool isPrefix(Chain &shorter, Chain &longer) {
  if (shorter.dim != longer.dim ||
      shorter.inserts.size() >= longer.inserts.size())
    return false;
  for (size_t i = 0; i < shorter.inserts.size(); ++i)
    if (shorter.piece(i) != longer.piece(i) ||
        shorter.offsets[i] != longer.offsets[i])
      return false;
  return true;
}

struct ShareConcatBuffersPass
    : dist::impl::ShareConcatBuffersPassBase<ShareConcatBuffersPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Every chain, by its last insert.
    SmallVector<Chain> chains;
    func.walk([&](tensor::InsertSliceOp op) {
      for (Operation *user : op->getUsers())
        if (auto next = dyn_cast<tensor::InsertSliceOp>(user))
          if (next.getDest() == op.getResult())
            return;
      if (std::optional<Chain> c = chainEndingAt(op))
        chains.push_back(std::move(*c));
    });
    // Longest first: each chain that extends no other's pieces collects
    // the chains whose pieces are its first ones.
    llvm::stable_sort(chains, [](const Chain &a, const Chain &b) {
      return a.inserts.size() > b.inserts.size();
    });
    SmallVector<bool> taken(chains.size(), false);
    DominanceInfo dom(func);
    IRRewriter rewriter(&getContext());
    for (size_t l = 0; l < chains.size(); ++l) {
      if (taken[l])
        continue;
      SmallVector<size_t> prefixes;
      for (size_t s = l + 1; s < chains.size(); ++s)
        if (!taken[s] && isPrefix(chains[s], chains[l]))
          prefixes.push_back(s);
      if (prefixes.empty())
        continue;
      if (succeeded(share(rewriter, dom, chains[l], chains, prefixes))) {
        taken[l] = true;
        for (size_t s : prefixes)
          taken[s] = true;
      }
    }
  }

  /// Builds `longest` once, its i-th insert right after piece i exists,
  /// and replaces each prefix chain's result with the slice of it that
  /// holds its pieces. Fails (changing nothing) where the longest chain's
  /// empty tensor cannot be made before its first piece is inserted.
  LogicalResult share(IRRewriter &rewriter, DominanceInfo &dom, Chain &longest,
                      MutableArrayRef<Chain> chains,
                      ArrayRef<size_t> prefixes) {
    // The new chain starts where the earliest prefix chain's first insert
    // was (all its pieces exist by then), its empty tensor's sizes
    // defined before that.
    Operation *start = longest.inserts.front();
    for (size_t s : prefixes)
      if (chains[s].inserts.front()->isBeforeInBlock(start))
        start = chains[s].inserts.front();
    for (Value size : longest.empty.getDynamicSizes())
      if (!dom.properlyDominates(size, start))
        return failure();
    rewriter.setInsertionPoint(start);
    Value acc =
        tensor::EmptyOp::create(rewriter, longest.empty.getLoc(),
                                longest.empty.getType().getShape(),
                                longest.empty.getType().getElementType(),
                                longest.empty.getDynamicSizes())
            .getResult();
    Operation *last = acc.getDefiningOp();
    SmallVector<Value> links;
    for (tensor::InsertSliceOp op : longest.inserts) {
      // After the piece and the chain so far.
      Operation *after = last;
      if (Operation *def = op.getSource().getDefiningOp())
        if (def->getBlock() == last->getBlock() && last->isBeforeInBlock(def))
          after = def;
      rewriter.setInsertionPointAfter(after);
      auto link = tensor::InsertSliceOp::create(
          rewriter, op.getLoc(), op.getSource(), acc, op.getMixedOffsets(),
          op.getMixedSizes(), op.getMixedStrides());
      acc = link.getResult();
      last = link;
      links.push_back(acc);
    }
    // Each prefix chain reads the slice of the link after its last piece.
    for (size_t s : prefixes) {
      Chain &c = chains[s];
      Value link = links[c.inserts.size() - 1];
      rewriter.setInsertionPointAfterValue(link);
      auto type = cast<RankedTensorType>(c.result().getType());
      SmallVector<OpFoldResult> offsets(type.getRank(),
                                        rewriter.getIndexAttr(0)),
          strides(type.getRank(), rewriter.getIndexAttr(1));
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(rewriter, c.result().getLoc(), link);
      sizes[c.dim] = rewriter.getIndexAttr(type.getDimSize(c.dim));
      Value part = tensor::ExtractSliceOp::create(
          rewriter, c.result().getLoc(), type, link, offsets, sizes, strides);
      rewriter.replaceAllUsesWith(c.result(), part);
    }
    rewriter.replaceAllUsesWith(longest.result(), links.back());
    // The old chains, last link first.
    auto erase = [&](Chain &c) {
      for (tensor::InsertSliceOp op : llvm::reverse(c.inserts))
        if (op->use_empty())
          rewriter.eraseOp(op);
      if (c.empty->use_empty())
        rewriter.eraseOp(c.empty);
    };
    erase(longest);
    for (size_t s : prefixes)
      erase(chains[s]);
    return success();
  }
};

} // namespace
