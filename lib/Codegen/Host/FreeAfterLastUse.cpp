//===- FreeAfterLastUse.cpp - deallocs right after a buffer's last use ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Ownership-based deallocation puts every dealloc at the end of the block
// that owns the buffer: a model's graph function kept all of its
// intermediate buffers until it returned (MobileNetV2: 64 buffers, 40.5
// MB), so every inference wrote each layer's output into memory that the
// previous inference had last touched a whole model earlier, out of the
// caches (the 16 -> 96 expansion at 112 x 112 took 483 us in the model,
// 136 us on a buffer in cache). Freed after their last use, the runtime's
// allocator (runtime/lib/alloc.cpp) hands the same memory to later layers
// while it is still in cache (MobileNetV2's activations then fit in 10.0
// MB of its arena).
//
// Upstream's optimize-allocation-liveness moves deallocs after the last
// user of a buffer's views, but a runtime call takes the buffer as an
// integer (memref.extract_aligned_pointer_as_index, index_cast, the call),
// and the all-reduce's wait takes only the handle its start returned, so
// that pass would free buffers that calls still read. Here a use is any op
// reached from the buffer through results, through memory a reached value
// is stored into, and through the results of a region op whose region
// yields a reached value; the dealloc moves after the last such op of its
// block. It runs after the passes that read the deallocs at the end of the
// block (dist-contractions-to-runtime, dist-fuse-product-epilogues).
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#define DEBUG_TYPE "dist-free-after-last-use"

namespace mlir::dist {
#define GEN_PASS_DEF_FREEAFTERLASTUSEPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// Where a value that `user` reads as `operand` is written to memory: the
/// buffer or pointer it is stored into, or null when `user` stores nothing
/// of it.
Value storedInto(Operation *user, OpOperand &operand) {
  if (auto store = dyn_cast<memref::StoreOp>(user))
    return &operand == &store.getValueMutable() ? store.getMemRef() : Value();
  if (auto store = dyn_cast<LLVM::StoreOp>(user))
    return &operand == &store.getValueMutable() ? store.getAddr() : Value();
  if (auto store = dyn_cast<vector::StoreOp>(user))
    return &operand == &store.getValueToStoreMutable() ? store.getBase()
                                                       : Value();
  return Value();
}

/// Whether `user` loads elements of a memref: its results are data, not
/// the buffer's address.
bool loadsContents(Operation *user) {
  return isa<memref::LoadOp, vector::LoadOp, vector::TransferReadOp>(user);
}

/// The last op of `dealloc`'s block that uses the buffer `alloc` makes, or
/// null when the dealloc must stay where it is.
Operation *lastUse(memref::AllocOp alloc, memref::DeallocOp dealloc) {
  Block *block = alloc->getBlock();
  Operation *last = alloc;
  // Values derived from the buffer's address, and memory holding one of
  // them (whose loads give the address back).
  SmallVector<std::pair<Value, bool>> work{{alloc.getResult(), false}};
  DenseSet<Value> seen{alloc.getResult()};
  auto reach = [&](Value v, bool holder) {
    if (seen.insert(v).second)
      work.push_back({v, holder});
  };
  while (!work.empty()) {
    auto [value, holder] = work.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (user == dealloc.getOperation())
        continue;
      if (isa<memref::DeallocOp>(user))
        return nullptr;
      Operation *top = block->findAncestorOpInBlock(*user);
      if (!top || (user->hasTrait<OpTrait::IsTerminator>() && top == user))
        return nullptr;
      if (last->isBeforeInBlock(top))
        last = top;
      if (holder || !loadsContents(user))
        for (Value result : user->getResults())
          reach(result, false);
      if (Value target = storedInto(user, use))
        reach(target, true);
      // A region that yields the value hands it to its op's results.
      if (user->hasTrait<OpTrait::IsTerminator>())
        if (Operation *parent = user->getParentOp())
          for (Value result : parent->getResults())
            reach(result, false);
    }
  }
  return last;
}

struct FreeAfterLastUsePass
    : public dist::impl::FreeAfterLastUsePassBase<FreeAfterLastUsePass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation().walk(
        [&](memref::DeallocOp dealloc) { deallocs.push_back(dealloc); });
    for (memref::DeallocOp dealloc : deallocs) {
      auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>();
      if (!alloc || alloc->getBlock() != dealloc->getBlock())
        continue;
      Operation *last = lastUse(alloc, dealloc);
      if (!last || !last->isBeforeInBlock(dealloc) ||
          last->getNextNode() == dealloc.getOperation())
        continue;
      dealloc->moveAfter(last);
      ++numMoved;
    }
  }
};

} // namespace
