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
// Upstream's interchangeGenericOp does the permutation.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::dist {
#define GEN_PASS_DEF_HOISTPARALLELDIMSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// The loop order with the parallel dimensions (except the innermost one)
/// first; empty when it is already so or there is no reduction.
SmallVector<unsigned> hoistedOrder(linalg::GenericOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned loops = iterators.size();
  if (loops < 3 ||
      !llvm::is_contained(iterators, utils::IteratorType::reduction))
    return {};
  SmallVector<unsigned> order;
  for (unsigned d = 0; d + 1 < loops; ++d)
    if (iterators[d] == utils::IteratorType::parallel)
      order.push_back(d);
  for (unsigned d = 0; d + 1 < loops; ++d)
    if (iterators[d] != utils::IteratorType::parallel)
      order.push_back(d);
  order.push_back(loops - 1);
  for (unsigned d = 0; d < loops; ++d)
    if (order[d] != d)
      return order;
  return {};
}

struct HoistParallelDimsPass
    : public dist::impl::HoistParallelDimsPassBase<HoistParallelDimsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, SmallVector<unsigned>>> work;
    getOperation().walk([&](linalg::GenericOp op) {
      if (SmallVector<unsigned> order = hoistedOrder(op); !order.empty())
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
  }
};

} // namespace
