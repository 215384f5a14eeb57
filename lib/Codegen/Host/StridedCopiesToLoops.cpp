//===- StridedCopiesToLoops.cpp - strided buffer copies as linalg.copy ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Bufferization copies values into and out of strided views with
// memref.copy: the interior of a padded buffer (tensor.pad), a slice
// inserted into a larger tensor. Those calls reach the runtime's
// memrefCopy, which walks the view row by row with one memcpy call per
// row, on one thread (measured on the residual CNN's training step: 7% of
// it in copyStrided and those memcpy calls, rows of 16 to 32 floats). This
// pass rewrites every memref.copy with a non-identity layout on either side
// into linalg.copy, which convert-linalg-to-parallel-loops turns into a
// loop nest that runs on the runtime's threads with a vectorised innermost
// row. Copies between identity-layout buffers stay single memcpy calls, and
// so do copies between views that are contiguous (static shapes, row-major
// strides, any offset: a batch-1 concatenation's channel slice), which the
// memref lowering makes one llvm.memcpy: a loop nest for each was a kernel
// of its own to compile (DenseNet-121: 135 of its 347 functions were
// concatenation copies). Copies whose rows (trailing dimensions contiguous
// on both sides, which the runtime's memrefCopy merges) are 4 KiB or longer
// also stay memcpy calls, one per row: a batch's concatenation slices.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "dist-strided-copies-to-loops"

namespace mlir::dist {
#define GEN_PASS_DEF_STRIDEDCOPIESTOLOOPSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

bool isStridedView(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  return m && m.getRank() > 0 && !m.getLayout().isIdentity();
}

/// Whether the lowering of memref.copy copies `t` as one block (see
/// MemRefCopyOpLowering upstream): contiguous row-major with a static shape.
bool isContiguousView(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  return m && m.hasStaticShape() && m.getNumElements() > 0 &&
         memref::isStaticShapeAndContiguousRowMajor(m);
}

/// Copies whose contiguous rows are at least this many bytes stay memcpy
/// calls, one per row: the runtime merges trailing dimensions contiguous on
/// both sides into one row. DenseNet-121 at batch 8 concatenates every
/// layer's [8, Cs, H, W] into slices of [8, C, H, W] (rows of Cs*H*W
/// floats, 6 KiB and more): as loop nests they were 553 of its 694
/// functions and its compile took 105 s against 5 s at batch 1.
constexpr int64_t kMemcpyRowBytes = 4096;

/// Bytes of the longest trailing run of `t` whose elements are contiguous
/// in memory (static strides and sizes), or 0 when unknown.
int64_t contiguousRowBytes(MemRefType t) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!t.hasStaticShape() || failed(t.getStridesAndOffset(strides, offset)) ||
      t.getRank() == 0)
    return 0;
  int64_t run = 1;
  for (int64_t d = t.getRank() - 1; d >= 0; --d) {
    if (strides[d] != run && t.getDimSize(d) != 1)
      break;
    run *= t.getDimSize(d);
  }
  return run * (t.getElementTypeBitWidth() / 8);
}

/// Whether the runtime's row-by-row memcpy walk copies `from` into `to` as
/// fast as a loop nest: both sides' rows are long and the same length (the
/// shapes are equal, so equal run lengths mean the same rows).
bool longRows(Type from, Type to) {
  auto f = dyn_cast<MemRefType>(from), t = dyn_cast<MemRefType>(to);
  if (!f || !t)
    return false;
  int64_t rf = contiguousRowBytes(f), rt = contiguousRowBytes(t);
  return rf >= kMemcpyRowBytes && rt >= kMemcpyRowBytes;
}

struct StridedCopiesToLoopsPass
    : public dist::impl::StridedCopiesToLoopsPassBase<
          StridedCopiesToLoopsPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      Type from = copy.getSource().getType(), to = copy.getTarget().getType();
      if ((isStridedView(from) || isStridedView(to)) &&
          !(isContiguousView(from) && isContiguousView(to)) &&
          !longRows(from, to))
        copies.push_back(copy);
    });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }
  }
};

} // namespace
