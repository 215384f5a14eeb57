//===- FuseElementwise.cpp - restricted elementwise fusion ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Upstream elementwise fusion, allowed only into all-parallel consumers and
// only for single-use producers, so contractions keep their
// multiply-accumulate bodies (dist-contractions-to-runtime recognises them)
// and no work is duplicated.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::dist {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {
struct FuseElementwisePass
    : public dist::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
      if (!producer || !consumer || !producer->hasOneUse())
        return false;
      return consumer.getNumLoops() == consumer.getNumParallelLoops();
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

struct ApproximateMathPass
    : public dist::impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populatePolynomialApproximateErfPattern(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
