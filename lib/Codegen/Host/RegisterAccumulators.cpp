//===- RegisterAccumulators.cpp - reductions accumulate in registers ------===//
// SPDX-License-Identifier: Apache-2.0
//
// convert-linalg-to-parallel-loops lowers a reduction over the innermost
// dimension (a batch norm's statistics over W, a softmax's or layer norm's
// row sums) to a loop that loads the accumulator from memory, adds and
// stores it back on every trip. LLVM cannot keep such an accumulator in a
// register (it cannot prove that the loop's other loads do not alias it), so
// it cannot vectorise the loop either: it unrolls it and gathers across the
// loops around it instead (measured: a residual CNN's batch-norm statistics
// over 8x16x32x32 at 2 elements per ns; its batch-norm loops took 19% of its
// training step).
//
// This pass rewrites every innermost scf.for whose only memory accesses are
// loads and stores, and which loads and stores one memref at the same
// loop-invariant indices, into a loop that carries the value as an
// iter_arg: one load before the loop, one store after it (a loop that runs
// no trip stores back the value it loaded). Stores at indices that move
// with the loop (an output written beside the sum) may stay, when nothing
// in the loop reads their buffer and it is none of the accumulators'. The
// loops come from bufferized linalg ops, whose outputs never alias the
// inputs they read at other indices (one-shot bufferization copies on such
// a conflict); as a guard, a loop that reads another view of the
// accumulator's buffer (traced through view-like ops to the allocation or
// argument) is left alone.
//
// An `arith.addf` or `arith.mulf` that combines the carried value becomes
// `reassoc`, and the loop gets LLVM's vectorize hint (with four vectors a
// trip from 128 trips on, or when the count is unknown): LLVM then sums
// in vector lanes and adds them at the end. A float maximum or minimum
// gets the hint as it is (any order gives the same bits); it reaches LLVM
// as an intrinsic (dist-expand-arith), which LLVM reduces in lanes too.
// Floating-point sums therefore associate differently from a sequential
// loop (as PyTorch's and
// onnxruntime's vectorised reductions do); the order is fixed by the loop
// bounds alone, so results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "Lowering.h"

#include "LoopHints.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "dist-register-accumulators"

namespace mlir::dist {
#define GEN_PASS_DEF_REGISTERACCUMULATORSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// Vectors per trip of a reduction loop. Left to itself LLVM kept
/// softmax's row maxima and sums at one vector a trip, each trip waiting
/// on the last one's add or maximum (the sum's add took 7% of a softmax
/// over 12 x 197 x 197 on an AVX-512 Xeon); four independent accumulators
/// took that softmax from 0.48-0.49 to 0.41-0.43 ms at one thread.
constexpr unsigned kReductionInterleave = 4;
/// Shorter loops (static trip counts) are left to LLVM's own choice: four
/// vectors of 8 or 16 would leave them to the remainder loops.
constexpr int64_t kMinInterleavedTrips = 128;

/// A value carried from trip to trip through memory.
struct Accumulator {
  memref::LoadOp load;
  memref::StoreOp store;
};

bool sameIndices(ValueRange a, ValueRange b) {
  return a.size() == b.size() && llvm::equal(a, b);
}

/// The accumulators of the innermost loop `loop`; empty when its body has
/// anything but pure ops, loads and stores, or a memref it stores to is
/// accessed in any other way.
SmallVector<Accumulator> findAccumulators(scf::ForOp loop) {
  Block *body = loop.getBody();
  SmallVector<memref::LoadOp> loads;
  SmallVector<memref::StoreOp> stores;
  for (Operation &op : body->without_terminator()) {
    if (op.getNumRegions() != 0)
      return {};
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      loads.push_back(load);
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      stores.push_back(store);
      continue;
    }
    if (!isMemoryEffectFree(&op))
      return {};
  }
  SmallVector<Accumulator> found;
  SmallVector<memref::StoreOp> streaming;
  for (memref::StoreOp store : stores) {
    Value mem = store.getMemRef();
    if (!loop.isDefinedOutsideOfLoop(mem))
      return {};
    // A store at indices that move with the loop writes an output element
    // by element (a softmax's exponentials beside their sum); checked
    // below against the accumulators.
    if (!llvm::all_of(store.getIndices(), [&](Value i) {
          return loop.isDefinedOutsideOfLoop(i);
        })) {
      streaming.push_back(store);
      continue;
    }
    memref::LoadOp match;
    for (memref::LoadOp load : loads) {
      if (load.getMemRef() != mem)
        continue;
      if (match || !sameIndices(load.getIndices(), store.getIndices()) ||
          !load->isBeforeInBlock(store))
        return {};
      match = load;
    }
    if (!match || llvm::count_if(stores, [&](memref::StoreOp s) {
                    return s.getMemRef() == mem;
                  }) != 1)
      return {};
    // Another view of the same buffer could read the deferred value.
    Value root = dist::codegen::rootBuffer(mem);
    if (llvm::any_of(loads, [&](memref::LoadOp l) {
          return l.getMemRef() != mem &&
                 dist::codegen::rootBuffer(l.getMemRef()) == root;
        }))
      return {};
    found.push_back({match, store});
  }
  // Streaming stores stay in the loop: their buffers must be apart from
  // every accumulator's, and nothing in the loop may read them.
  for (memref::StoreOp store : streaming) {
    Value root = dist::codegen::rootBuffer(store.getMemRef());
    if (llvm::any_of(found,
                     [&](Accumulator &a) {
                       return dist::codegen::rootBuffer(a.store.getMemRef()) ==
                              root;
                     }) ||
        llvm::any_of(loads, [&](memref::LoadOp l) {
          return dist::codegen::rootBuffer(l.getMemRef()) == root;
        }))
      return {};
  }
  return found;
}

/// Whether `stored` combines `carried` with another value in a reduction
/// LLVM's vectoriser recognises: a sum or product, which this makes
/// `reassoc`, or a float maximum or minimum, left as it is.
bool prepareVectorReduction(Value stored, Value carried) {
  // Only a plain `acc op x`: LLVM recognises no reduction in which the
  // accumulator has other uses (acc + (x - acc) * r).
  Operation *def = stored.getDefiningOp();
  if (!def || !llvm::is_contained(def->getOperands(), carried) ||
      !carried.hasOneUse())
    return false;
  // A maximum or minimum is associative and commutative as it is (NaN
  // propagates, -0 orders below +0): any order gives the same bits, and
  // LLVM vectorises it with the hint alone.
  if (isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
          arith::MinNumFOp>(def))
    return true;
  if (!isa<arith::AddFOp, arith::MulFOp>(def))
    return false;
  auto fm = cast<arith::ArithFastMathInterface>(def);
  arith::FastMathFlags flags = fm.getFastMathFlagsAttr().getValue();
  def->setAttr(fm.getFastMathAttrName(),
               arith::FastMathFlagsAttr::get(
                   def->getContext(), flags | arith::FastMathFlags::reassoc));
  return true;
}

LogicalResult promote(RewriterBase &rewriter, scf::ForOp loop,
                      MutableArrayRef<Accumulator> accs) {
  rewriter.setInsertionPoint(loop);
  SmallVector<Value> inits;
  for (Accumulator &a : accs)
    inits.push_back(memref::LoadOp::create(
        rewriter, a.load.getLoc(), a.load.getMemRef(), a.load.getIndices()));
  SmallVector<Value> stored;
  for (Accumulator &a : accs)
    stored.push_back(a.store.getValueToStore());
  auto grown = loop.replaceWithAdditionalYields(
      rewriter, inits, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) { return stored; });
  if (failed(grown))
    return failure();
  auto newLoop = cast<scf::ForOp>(grown->getOperation());
  unsigned first = newLoop.getNumRegionIterArgs() - accs.size();
  rewriter.setInsertionPointAfter(newLoop);
  // Other accumulations (a max through a select, an arg-max's index) stay
  // scalar: LLVM would only remark (on stderr) that it cannot vectorise
  // them.
  bool vectorizable = true;
  for (auto [i, a] : llvm::enumerate(accs)) {
    BlockArgument carried = newLoop.getRegionIterArgs()[first + i];
    vectorizable &=
        prepareVectorReduction(a.store.getValueToStore(), a.load.getResult());
    rewriter.replaceAllUsesWith(a.load.getResult(), carried);
    memref::StoreOp::create(rewriter, a.store.getLoc(),
                            newLoop.getResult(first + i), a.store.getMemRef(),
                            a.store.getIndices());
    rewriter.eraseOp(a.store);
    rewriter.eraseOp(a.load);
  }
  std::optional<APInt> trips = newLoop.getStaticTripCount();
  if (vectorizable &&
      (!trips || trips->getSExtValue() >= dist::codegen::kMinVectorTrips))
    dist::codegen::requestVectorization(
        newLoop, !trips || trips->getSExtValue() >= kMinInterleavedTrips
                     ? kReductionInterleave
                     : 0);
  return success();
}

struct RegisterAccumulatorsPass
    : public dist::impl::RegisterAccumulatorsPassBase<
          RegisterAccumulatorsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<scf::ForOp, SmallVector<Accumulator>>> work;
    getOperation().walk([&](scf::ForOp loop) {
      bool innermost = true;
      loop.getBody()->walk([&](LoopLikeOpInterface) { innermost = false; });
      if (!innermost)
        return;
      if (SmallVector<Accumulator> accs = findAccumulators(loop); !accs.empty())
        work.push_back({loop, std::move(accs)});
    });
    IRRewriter rewriter(&getContext());
    for (auto &[loop, accs] : work) {
      if (failed(promote(rewriter, loop, accs))) {
        loop.emitError("cannot carry this loop's accumulator in a register");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
