//===- FillBorders.cpp - fill only a padded buffer's border ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// A zero pad (tensor.pad, or the fill + insert_slice that
// dist-fuse-elementwise makes of it) bufferizes to a linalg.fill of the
// whole padded buffer followed by the op that writes the interior: the
// operand's producer writing in place, a copy or a transpose (a model's
// input image made channels-last). The fill writes the
// interior once for nothing: MobileNetV2's depthwise convolutions pad 17
// buffers of 0.5 to 5 MB per image, and memset was 7.6% of its inference
// (one thread, Intel Xeon family 6 model 207). This pass rewrites such a
// fill into fills of the slabs around the interior, one low and one high
// slab per padded dimension (for NCHW images: the top and bottom rows,
// then the left and right columns of the rows between). A dimension whose
// size is known only when the program runs (a dynamic batch) must lie
// whole in the interior.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "Lowering.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "dist-fill-borders"

namespace mlir::dist {
#define GEN_PASS_DEF_FILLBORDERSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// The ancestor of `user` in `block`, or null.
Operation *inBlock(Block *block, Operation *user) {
  return block->findAncestorOpInBlock(*user);
}

/// The interior subview whose overwrite makes `fill`'s interior dead, and
/// that overwriting op, when the fill's buffer is a fresh allocation
/// used by nothing else between the fill and that op (and viewed by nothing
/// made before the fill).
struct Interior {
  memref::SubViewOp view;
  Operation *writer = nullptr;
};

std::optional<Interior> findInterior(linalg::FillOp fill) {
  Value buf = fill.getOutputs().front();
  auto alloc = buf.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return std::nullopt;
  Block *block = fill->getBlock();
  // The next use of the buffer after the fill must be a static unit-stride
  // subview, and its first use the overwrite.
  Operation *next = nullptr;
  for (Operation *user : buf.getUsers()) {
    Operation *at = inBlock(block, user);
    if (!at)
      return std::nullopt;
    // A view made before the fill could be read after it.
    if (at->isBeforeInBlock(fill) && isa<ViewLikeOpInterface>(user))
      return std::nullopt;
    if (at == fill.getOperation() || at->isBeforeInBlock(fill))
      continue;
    if (!next || at->isBeforeInBlock(next))
      next = at;
  }
  // Static offsets and sizes in the buffer's rank (a rank-reducing view's
  // type drops unit dims), or all of a dimension of dynamic size.
  auto view = dyn_cast_or_null<memref::SubViewOp>(next);
  if (!view || !view.hasUnitStride() ||
      llvm::any_of(view.getStaticOffsets(), ShapedType::isDynamic))
    return std::nullopt;
  SmallVector<OpFoldResult> whole = alloc.getMixedSizes();
  for (auto [d, size] : llvm::enumerate(view.getMixedSizes())) {
    bool dynamic = !getConstantIntValue(whole[d]);
    if (dynamic ? view.getStaticOffsets()[d] != 0 ||
                      !isEqualConstantIntOrValue(size, whole[d])
                : !getConstantIntValue(size))
      return std::nullopt;
  }
  Operation *writer = nullptr;
  for (Operation *user : view->getUsers()) {
    Operation *at = inBlock(block, user);
    if (!at)
      return std::nullopt;
    if (!writer || at->isBeforeInBlock(writer))
      writer = at;
  }
  if (!writer ||
      !dist::codegen::overwritesWithoutReading(writer, view.getResult()))
    return std::nullopt;
  // No other use of the buffer between the fill and the writer.
  for (Operation *user : buf.getUsers()) {
    Operation *at = inBlock(block, user);
    if (at == fill.getOperation() || at == view.getOperation() ||
        at->isBeforeInBlock(fill) || writer->isBeforeInBlock(at))
      continue;
    if (at != writer)
      return std::nullopt;
  }
  return Interior{view, writer};
}

struct FillBordersPass
    : public dist::impl::FillBordersPassBase<FillBordersPass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp f) {
      if (f.hasPureBufferSemantics())
        fills.push_back(f);
    });
    for (linalg::FillOp fill : fills) {
      std::optional<Interior> in = findInterior(fill);
      if (!in)
        continue;
      rewrite(fill, in->view);
    }
  }

  /// Replaces `fill` by fills of the slabs of its buffer around `view`:
  /// for each dim d, the elements below and above the interior along d
  /// whose dims before d lie inside the interior (dims after d: all).
  static void rewrite(linalg::FillOp fill, memref::SubViewOp view) {
    OpBuilder b(fill);
    Location loc = fill.getLoc();
    Value buf = fill.getOutputs().front();
    Value value = fill.getInputs().front();
    SmallVector<OpFoldResult> shape =
        buf.getDefiningOp<memref::AllocOp>().getMixedSizes();
    SmallVector<OpFoldResult> sizes = view.getMixedSizes();
    ArrayRef<int64_t> offsets = view.getStaticOffsets();
    int64_t rank = static_cast<int64_t>(shape.size());
    auto slab = [&](int64_t d, int64_t begin, int64_t extent) {
      if (extent <= 0)
        return;
      SmallVector<OpFoldResult> off, size, stride(rank, b.getIndexAttr(1));
      for (int64_t i = 0; i < rank; ++i) {
        off.push_back(b.getIndexAttr(i < d ? offsets[i] : i == d ? begin : 0));
        size.push_back(i < d    ? sizes[i]
                       : i == d ? OpFoldResult(b.getIndexAttr(extent))
                                : shape[i]);
      }
      Value part = memref::SubViewOp::create(b, loc, buf, off, size, stride);
      linalg::FillOp::create(b, loc, value, part);
    };
    // (A dimension of dynamic size lies whole in the interior: no slab.)
    for (int64_t d = 0; d < rank; ++d) {
      std::optional<int64_t> size = getConstantIntValue(sizes[d]);
      std::optional<int64_t> all = getConstantIntValue(shape[d]);
      if (!size || !all)
        continue;
      slab(d, 0, offsets[d]);
      slab(d, offsets[d] + *size, *all - offsets[d] - *size);
    }
    fill.erase();
  }
};

} // namespace
