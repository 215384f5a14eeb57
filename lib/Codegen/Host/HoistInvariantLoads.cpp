//===- HoistInvariantLoads.cpp - loads at fixed indices out of loops ------===//
// SPDX-License-Identifier: Apache-2.0
//
// A gather lowers to a loop over a row whose every trip loads the row's
// index again (memref.load %idx[%i] inside the loop over j). LLVM cannot
// hoist that load: it cannot prove that the loop's stores (into the f32
// result) do not alias the i64 index buffer, so the row's address changes
// on every trip as far as it knows, and the loop stays scalar (measured:
// the GPT-style LM's token embedding plus position embedding ran at
// 2.6 ns per element, 3% of its inference).
//
// This pass moves such loads out of the innermost scf.for loops: a load
// whose memref and indices are defined outside the loop, when every store
// in the loop writes a memref of another element type. The runtime and
// bufferization never view one buffer as two element types, so those
// stores cannot change what the load reads. Only loops with a static trip
// count of at least one are touched, so no load runs that would not have.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define DEBUG_TYPE "dist-hoist-invariant-loads"

namespace mlir::dist {
#define GEN_PASS_DEF_HOISTINVARIANTLOADSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// Hoists the invariant loads of the innermost loop `loop`; returns how
/// many it moved.
unsigned hoistLoads(scf::ForOp loop) {
  std::optional<APInt> trips = loop.getStaticTripCount();
  if (!trips || trips->isZero() || trips->isNegative())
    return 0;
  SmallVector<Type> written;
  SmallVector<memref::LoadOp> loads;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return 0;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      loads.push_back(load);
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      written.push_back(store.getMemRefType().getElementType());
      continue;
    }
    if (!isMemoryEffectFree(&op))
      return 0;
  }
  unsigned moved = 0;
  for (memref::LoadOp load : loads) {
    if (llvm::is_contained(written, load.getMemRefType().getElementType()) ||
        !loop.isDefinedOutsideOfLoop(load.getMemRef()) ||
        !llvm::all_of(load.getIndices(),
                      [&](Value i) { return loop.isDefinedOutsideOfLoop(i); }))
      continue;
    load->moveBefore(loop);
    ++moved;
  }
  return moved;
}

struct HoistInvariantLoadsPass
    : public dist::impl::HoistInvariantLoadsPassBase<HoistInvariantLoadsPass> {
  void runOnOperation() override {
    getOperation().walk([](scf::ForOp loop) {
      bool innermost = true;
      loop.getBody()->walk([&](LoopLikeOpInterface) { innermost = false; });
      if (innermost)
        hoistLoads(loop);
    });
  }
};

} // namespace
