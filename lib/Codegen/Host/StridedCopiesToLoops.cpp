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
// row. Copies between identity-layout buffers stay single memcpy calls.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
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

struct StridedCopiesToLoopsPass
    : public dist::impl::StridedCopiesToLoopsPassBase<
          StridedCopiesToLoopsPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      if (isStridedView(copy.getSource().getType()) ||
          isStridedView(copy.getTarget().getType()))
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
