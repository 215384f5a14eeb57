//===- MapLoopsToGpu.cpp - outermost loop nests as GPU launches ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-map-loops-to-gpu: every outermost loop nest of a function on buffers
// becomes a gpu.launch. A scf.parallel's dimensions are collapsed into one
// (upstream's collapseParallelLoops) and spread over blocks of `threads`
// threads, one iteration per thread behind a bounds check: one launch
// shape for every rank and extent, where upstream's greedy mapping
// (gpu-map-parallel-loops) puts the first three dimensions on the grid's
// axes, whose y and z extents are capped at 65535, and needs constant
// extents for the threads. The loops inside (reduction scf.for, the nested
// scf.parallel of a fused row block) run sequentially in each thread,
// except a reduction per parallel iteration (a softmax's or a layer norm's
// row): there one block takes the row, its threads reduce strided parts
// of it and gpu.all_reduce (warp shuffles, shared memory) combines them;
// so does one block for a lone loop of that shape (a loss's sum into a
// scalar). Any other loop nest with no parallel dimension runs in a launch
// of one thread, so that its data stays on the device.
//
// Buffers are device memory (the CUDA target's allocations are the
// runtime's device allocator's); constants (memref.get_global) are host
// memory, so each global a kernel reads is copied into a device buffer
// before the launch and freed after it (launches are synchronous).
//
// A loop nest a kernel cannot run (it calls a function: the runtime's index
// checks, collectives) stays on the host, which reads and writes the
// device's managed memory; the compile says so with a warning naming the
// op's place. A loop around calls of the runtime's device library (an
// outer batch of cuBLASLt products) stays on the host without a warning.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"
#include "dist/Codegen/RuntimeABI.h"

#include "../Host/Lowering.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <cmath>
#include <functional>
#include <numeric>

#define DEBUG_TYPE "dist-map-loops-to-gpu"

namespace mlir::dist {
#define GEN_PASS_DEF_MAPLOOPSTOGPUPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// Whether `op` calls the runtime's device library (dist_rt_cuda_*: a
/// product with cuBLASLt), which the host calls to run work on the device.
bool callsDeviceLibrary(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  return call &&
         call.getCallee().starts_with(dist::runtime_abi::kCudaLibraryPrefix);
}

/// Why `loop`'s body cannot run in a kernel, or null when it can.
/// `library` is set when it calls the device library (callsDeviceLibrary),
/// which a kernel cannot either, but which is no reason to warn.
Operation *firstHostOnlyOp(Operation *loop, bool &library) {
  Operation *found = nullptr;
  library = false;
  loop->walk([&](Operation *op) {
    if (op == loop)
      return WalkResult::advance();
    if (callsDeviceLibrary(op)) {
      library = true;
      return WalkResult::advance();
    }
    Dialect *d = op->getDialect();
    bool deviceOp =
        isa_and_nonnull<arith::ArithDialect, math::MathDialect,
                        affine::AffineDialect, index::IndexDialect,
                        vector::VectorDialect, ub::UBDialect>(d) ||
        isa<scf::ForOp, scf::ParallelOp, scf::IfOp, scf::YieldOp, scf::ReduceOp,
            scf::ReduceReturnOp, scf::WhileOp, scf::ConditionOp,
            scf::IndexSwitchOp>(op) ||
        isa<memref::LoadOp, memref::StoreOp, memref::SubViewOp,
            memref::CollapseShapeOp, memref::ExpandShapeOp, memref::CastOp,
            memref::ReinterpretCastOp, memref::DimOp, memref::AllocaOp,
            memref::GetGlobalOp, memref::ExtractStridedMetadataOp,
            memref::ExtractAlignedPointerAsIndexOp, memref::AssumeAlignmentOp,
            memref::TransposeOp>(op);
    if (deviceOp)
      return WalkResult::advance();
    found = op;
    return WalkResult::interrupt();
  });
  return found;
}

/// Whether `v` (a view of a buffer) reaches a return of its function.
bool escapesThroughReturn(Value v) {
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value cur = work.pop_back_val();
    for (Operation *user : cur.getUsers()) {
      if (isa<func::ReturnOp>(user))
        return true;
      if (isa<ViewLikeOpInterface>(user))
        for (Value r : user->getResults())
          work.push_back(r);
    }
  }
  return false;
}

/// The trip count of `loop` when its bounds and step are constants.
std::optional<int64_t> staticTrips(scf::ForOp loop) {
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()),
                         ub = getConstantIntValue(loop.getUpperBound()),
                         step = getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0)
    return std::nullopt;
  return *ub > *lb ? (*ub - *lb + *step - 1) / *step : 0;
}

/// A reduction per parallel iteration (a row of a softmax, a layer norm):
/// the parallel loop's body is pure index arithmetic and one scf.for that
/// combines a value into one element, acc[i] = combine(acc[i], v(k)), with
/// i fixed over the loop, and whose other stores write elements indexed by
/// its induction variable (an elementwise result beside the reduction).
struct RowReduction {
  scf::ForOp loop;
  memref::LoadOp accLoad;
  memref::StoreOp accStore;
  Operation *combine = nullptr;
  gpu::AllReduceOperation kind;
  /// The combine's identity (the partial sums' start).
  double identity = 0;
};

std::optional<RowReduction> matchRowReduction(scf::ParallelOp par) {
  RowReduction r;
  for (Operation &op : par.getBody()->without_terminator()) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (r.loop)
        return std::nullopt;
      r.loop = loop;
      continue;
    }
    if (op.getNumRegions() || !isMemoryEffectFree(&op))
      return std::nullopt;
  }
  if (!r.loop || r.loop.getNumResults() != 0)
    return std::nullopt;
  // Short loops stay one per thread: a block would idle.
  if (std::optional<int64_t> trips = staticTrips(r.loop); trips && *trips < 32)
    return std::nullopt;
  Value iv = r.loop.getInductionVar();
  SmallVector<Value> stored, loaded;
  for (Operation &op : r.loop.getBody()->without_terminator()) {
    if (op.getNumRegions())
      return std::nullopt;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      loaded.push_back(load.getMemRef());
      continue;
    }
    auto store = dyn_cast<memref::StoreOp>(op);
    if (!store) {
      if (!isMemoryEffectFree(&op))
        return std::nullopt;
      continue;
    }
    if (llvm::is_contained(store.getIndices(), iv)) {
      stored.push_back(store.getMemRef());
      continue;
    }
    if (r.accStore || !llvm::all_of(store.getIndices(), [&](Value i) {
          return r.loop.isDefinedOutsideOfLoop(i);
        }))
      return std::nullopt;
    r.accStore = store;
  }
  if (!r.accStore)
    return std::nullopt;
  Operation *combine = r.accStore.getValue().getDefiningOp();
  if (!combine || combine->getBlock() != r.loop.getBody() ||
      combine->getNumOperands() != 2 ||
      !r.accStore.getValue().getType().isF32())
    return std::nullopt;
  if (isa<arith::AddFOp>(combine)) {
    r.kind = gpu::AllReduceOperation::ADD;
  } else if (isa<arith::MulFOp>(combine)) {
    r.kind = gpu::AllReduceOperation::MUL;
    r.identity = 1.0;
  } else if (isa<arith::MaximumFOp>(combine)) {
    r.kind = gpu::AllReduceOperation::MAXIMUMF;
    r.identity = -INFINITY;
  } else if (isa<arith::MinimumFOp>(combine)) {
    r.kind = gpu::AllReduceOperation::MINIMUMF;
    r.identity = INFINITY;
  } else {
    return std::nullopt;
  }
  r.combine = combine;
  // One operand is acc[i] as loaded in the loop, used by the combine only.
  for (Value operand : combine->getOperands()) {
    auto load = operand.getDefiningOp<memref::LoadOp>();
    if (load && load.getMemRef() == r.accStore.getMemRef() &&
        load.getIndices() == r.accStore.getIndices() && load->hasOneUse() &&
        load->getBlock() == r.loop.getBody())
      r.accLoad = load;
  }
  if (!r.accLoad || combine->getOperand(0) == combine->getOperand(1))
    return std::nullopt;
  // Nothing else in the loop touches the accumulator's buffer, and what
  // the loop stores per k it does not read (no k-to-k dependence).
  Value acc = dist::codegen::rootBuffer(r.accStore.getMemRef());
  int accLoads = 0;
  for (Value m : loaded) {
    Value root = dist::codegen::rootBuffer(m);
    accLoads += root == acc;
    for (Value s : stored)
      if (root == dist::codegen::rootBuffer(s))
        return std::nullopt;
  }
  for (Value s : stored)
    if (dist::codegen::rootBuffer(s) == acc)
      return std::nullopt;
  if (accLoads != 1)
    return std::nullopt;
  return r;
}

/// Whether `op` calls one of the runtime's error reporters (an index out of
/// range, mismatched dimensions): no memory the program reads, and a kernel
/// can record it for the host to report (moveErrorReportsOut).
bool callsErrorReport(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  return call && (call.getCallee() == dist::runtime_abi::kIndexError ||
                  call.getCallee() == dist::runtime_abi::kShapeError);
}

/// A perfect nest of loops without results (scf.for, or scf.parallel
/// without reductions), outermost first, each loop's body the next loop
/// alone; the bounds of the inner ones defined outside the outermost.
SmallVector<Operation *> perfectNest(Operation *outer) {
  SmallVector<Operation *> nest;
  Operation *cur = outer;
  while (cur) {
    auto loop = dyn_cast<LoopLikeOpInterface>(cur);
    if (!isa<scf::ForOp, scf::ParallelOp>(cur) || cur->getNumResults() ||
        !loop.getRegionIterArgs().empty())
      break;
    if (cur != outer)
      for (Value v : cur->getOperands())
        if (!cast<LoopLikeOpInterface>(outer).isDefinedOutsideOfLoop(v))
          return nest;
    nest.push_back(cur);
    Block &body = cur->getRegion(0).front();
    Operation *next = nullptr;
    if (body.getOperations().size() == 2 &&
        isa<scf::ForOp, scf::ParallelOp>(body.front()))
      next = &body.front();
    cur = next;
  }
  return nest;
}

/// The induction variables of `nest` (perfectNest) whose iterations touch
/// disjoint elements of every buffer the innermost body writes: each
/// access of such a buffer indexes it by the variable itself, at the same
/// position, through the same identity-layout memref. Empty when the body
/// has an op with other memory effects, or a written buffer is also
/// reached through another view; all of them when nothing is written.
SmallVector<Value> independentVariables(ArrayRef<Operation *> nest) {
  Block &body = nest.back()->getRegion(0).front();
  SmallVector<Operation *> accesses;
  bool ok = true;
  body.walk([&](Operation *op) {
    if (isa<memref::LoadOp, memref::StoreOp>(op)) {
      accesses.push_back(op);
      return WalkResult::advance();
    }
    if (callsErrorReport(op) || op->getNumRegions() || isMemoryEffectFree(op) ||
        isa<memref::AllocaOp>(op))
      return WalkResult::advance();
    ok = false;
    return WalkResult::interrupt();
  });
  if (!ok)
    return {};
  auto memrefOf = [](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      return load.getMemRef();
    return cast<memref::StoreOp>(op).getMemRef();
  };
  auto indicesOf = [](Operation *op) -> ValueRange {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      return load.getIndices();
    return cast<memref::StoreOp>(op).getIndices();
  };
  // The written buffers' roots, each reached through one memref value;
  // scratch allocated in the body is each iteration's own.
  llvm::DenseMap<Value, Value> written;
  for (Operation *op : accesses)
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      Operation *def =
          dist::codegen::rootBuffer(store.getMemRef()).getDefiningOp();
      if (def && body.getParentOp()->isAncestor(def))
        continue;
      auto type = cast<MemRefType>(store.getMemRef().getType());
      if (!type.getLayout().isIdentity())
        return {};
      written[dist::codegen::rootBuffer(store.getMemRef())] = store.getMemRef();
    }
  for (Operation *op : accesses) {
    auto it = written.find(dist::codegen::rootBuffer(memrefOf(op)));
    if (it != written.end() && it->second != memrefOf(op))
      return {};
  }
  SmallVector<Value> ivs;
  for (Operation *loop : nest)
    for (Value iv :
         cast<LoopLikeOpInterface>(loop).getLoopInductionVars().value_or(
             SmallVector<Value>{}))
      ivs.push_back(iv);
  SmallVector<Value> independent;
  for (Value iv : ivs) {
    bool disjoint = true;
    for (auto &[root, view] : written) {
      std::optional<size_t> position;
      for (Operation *op : accesses) {
        if (memrefOf(op) != view)
          continue;
        ValueRange indices = indicesOf(op);
        auto at = llvm::find(indices, iv);
        if (at == indices.end()) {
          disjoint = false;
          break;
        }
        size_t p = static_cast<size_t>(at - indices.begin());
        if (position && *position != p)
          disjoint = false;
        position = p;
      }
      if (!disjoint)
        break;
    }
    // Without writes (an index check) every iteration is independent.
    if (disjoint)
      independent.push_back(iv);
  }
  return independent;
}

/// Rewrites the perfect nest under `outer` (perfectNest) as one
/// scf.parallel over its independent variables (independentVariables,
/// outermost first) around scf.for loops over the others in their order:
/// a scatter-add (the gradient of a Gather) runs a thread per column
/// instead of one thread, a sum over leading dimensions a thread per
/// element kept. Returns the new loop, or null when nothing moves.
Operation *parallelizeNest(RewriterBase &rewriter, Operation *outer) {
  SmallVector<Operation *> nest = perfectNest(outer);
  if (nest.empty())
    return nullptr;
  // Parallel loops below the nest would run in one thread each: their
  // launches per trip keep more threads busy.
  bool innerParallel = false;
  nest.back()->getRegion(0).walk(
      [&](scf::ParallelOp) { innerParallel = true; });
  if (innerParallel)
    return nullptr;
  SmallVector<Value> independent = independentVariables(nest);
  if (independent.empty())
    return nullptr;
  struct Dim {
    Value iv, lb, ub, step;
  };
  SmallVector<Dim> par, seq;
  for (Operation *loop : nest) {
    auto add = [&](Value iv, Value lb, Value ub, Value step) {
      (llvm::is_contained(independent, iv) ? par : seq)
          .push_back({iv, lb, ub, step});
    };
    if (auto f = dyn_cast<scf::ForOp>(loop)) {
      add(f.getInductionVar(), f.getLowerBound(), f.getUpperBound(),
          f.getStep());
      continue;
    }
    auto p = cast<scf::ParallelOp>(loop);
    for (unsigned d = 0; d < p.getNumLoops(); ++d)
      add(p.getInductionVars()[d], p.getLowerBound()[d], p.getUpperBound()[d],
          p.getStep()[d]);
  }
  // Nor does a parallel loop of the nest become sequential.
  for (Dim &d : seq)
    if (isa<scf::ParallelOp>(d.iv.getParentBlock()->getParentOp()))
      return nullptr;
  // Already so: the outermost loop parallel over exactly those.
  if (auto first = dyn_cast<scf::ParallelOp>(outer);
      first &&
      llvm::equal(first.getInductionVars(),
                  llvm::map_range(par, [](const Dim &d) { return d.iv; })))
    return nullptr;
  Location loc = outer->getLoc();
  rewriter.setInsertionPoint(outer);
  SmallVector<Value> lbs, ubs, steps;
  for (const Dim &d : par) {
    lbs.push_back(d.lb);
    ubs.push_back(d.ub);
    steps.push_back(d.step);
  }
  Block &body = nest.back()->getRegion(0).front();
  auto parallel = scf::ParallelOp::create(
      rewriter, loc, lbs, ubs, steps,
      [&](OpBuilder &b, Location l, ValueRange ivs) {
        IRMapping map;
        for (auto [d, iv] : llvm::zip(par, ivs))
          map.map(d.iv, iv);
        std::function<void(OpBuilder &, size_t)> build = [&](OpBuilder &ob,
                                                             size_t i) {
          if (i == seq.size()) {
            for (Operation &op : body.without_terminator())
              ob.clone(op, map);
            return;
          }
          const Dim &d = seq[i];
          scf::ForOp::create(
              ob, l, map.lookupOrDefault(d.lb), map.lookupOrDefault(d.ub),
              map.lookupOrDefault(d.step), ValueRange{},
              [&](OpBuilder &fb, Location, Value iv, ValueRange) {
                map.map(d.iv, iv);
                build(fb, i + 1);
                scf::YieldOp::create(fb, l);
              });
        };
        build(b, 0);
      });
  rewriter.eraseOp(outer);
  return parallel;
}

/// Moves the runtime's error reports (callsErrorReport) out of the loop
/// nest `loop`, so that a kernel can run it: each call site gets a device
/// buffer [flag, its operands that vary inside the nest...], which the
/// call becomes stores into, and after the nest the host calls the
/// reporter with the recorded operands when the flag is set: each recorded
/// word is an erring iteration's (with several varying operands, maybe not
/// all the same one's), where the host loop would report its first; the
/// run fails either way. Operands defined outside the nest, or
/// llvm.ptrtoint of such a value (a node's name), are rebuilt after it, not
/// recorded. Fails, changing nothing, when an operand is not an i64.
LogicalResult moveErrorReportsOut(RewriterBase &rewriter, Operation *loop) {
  SmallVector<func::CallOp> calls;
  loop->walk([&](func::CallOp call) {
    if (callsErrorReport(call))
      calls.push_back(call);
  });
  auto loopLike = cast<LoopLikeOpInterface>(loop);
  auto outside = [&](Value v) { return loopLike.isDefinedOutsideOfLoop(v); };
  for (func::CallOp call : calls)
    for (Value v : call.getOperands())
      if (!v.getType().isInteger(64))
        return failure();
  Location loc = loop->getLoc();
  Type i64 = rewriter.getI64Type();
  for (func::CallOp call : calls) {
    // Which operands vary (recorded) and how to rebuild the others.
    SmallVector<unsigned> recorded;
    for (auto [i, v] : llvm::enumerate(call.getOperands())) {
      if (outside(v))
        continue;
      auto cast = v.getDefiningOp<LLVM::PtrToIntOp>();
      if (cast && outside(cast.getArg()))
        continue;
      recorded.push_back(static_cast<unsigned>(i));
    }
    rewriter.setInsertionPoint(loop);
    auto type =
        MemRefType::get({static_cast<int64_t>(recorded.size() + 1)}, i64);
    Value buffer = memref::AllocOp::create(rewriter, loc, type);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value clear = arith::ConstantIntOp::create(rewriter, loc, i64, 0);
    memref::StoreOp::create(rewriter, loc, clear, buffer, zero);
    // In the nest: the flag and the varying operands.
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(call);
      Value set = arith::ConstantIntOp::create(rewriter, loc, i64, 1);
      Value at0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
      memref::StoreOp::create(rewriter, loc, set, buffer, at0);
      for (auto [slot, operand] : llvm::enumerate(recorded)) {
        Value at = arith::ConstantIndexOp::create(rewriter, loc, slot + 1);
        memref::StoreOp::create(rewriter, loc, call.getOperand(operand), buffer,
                                at);
      }
    }
    // After the nest: report what was recorded.
    rewriter.setInsertionPointAfter(loop);
    Value flag = memref::LoadOp::create(rewriter, loc, buffer, zero);
    Value failed = arith::CmpIOp::create(rewriter, loc,
                                         arith::CmpIPredicate::ne, flag, clear);
    auto ifFailed = scf::IfOp::create(rewriter, loc, failed, false);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(&ifFailed.getThenRegion().front());
      SmallVector<Value> operands;
      for (auto [i, v] : llvm::enumerate(call.getOperands())) {
        auto slot = llvm::find(recorded, static_cast<unsigned>(i));
        if (slot != recorded.end()) {
          Value at = arith::ConstantIndexOp::create(
              rewriter, loc, slot - recorded.begin() + 1);
          operands.push_back(memref::LoadOp::create(rewriter, loc, buffer, at));
        } else if (outside(v)) {
          operands.push_back(v);
        } else {
          operands.push_back(rewriter.clone(*v.getDefiningOp())->getResult(0));
        }
      }
      func::CallOp::create(rewriter, loc, call.getCallee(), TypeRange{},
                           operands);
    }
    memref::DeallocOp::create(rewriter, loc, buffer);
    SmallVector<Value> operands(call.getOperands());
    rewriter.eraseOp(call);
    // The name's address, now unused in the nest (no GPU lowering).
    for (Value v : operands)
      if (Operation *def = v.getDefiningOp();
          def && def->use_empty() && isa<LLVM::PtrToIntOp>(def))
        rewriter.eraseOp(def);
  }
  return success();
}

struct MapLoopsToGpuPass
    : public dist::impl::MapLoopsToGpuPassBase<MapLoopsToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (threads <= 0 || threads > 1024) {
      func.emitError("dist-map-loops-to-gpu: threads must be in 1..1024");
      return signalPassFailure();
    }
    IRRewriter rewriter(func.getContext());
    if (failed(copyGlobalsToDevice(rewriter, func)))
      return signalPassFailure();
    // Sequential nests whose iterations write disjoint elements along some
    // variables: parallel over those first.
    SmallVector<Operation *> outermost;
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<scf::ForOp, scf::ParallelOp, scf::WhileOp>(op)) {
        outermost.push_back(op);
        return WalkResult::skip();
      }
      return WalkResult::advance();
    });
    for (Operation *op : outermost)
      parallelizeNest(rewriter, op);
    // The outermost loops, collected first: mapping rewrites the IR.
    // A sequential loop around parallel ones (a batch of products, say)
    // stays on the host and launches its parallel loops on each trip.
    SmallVector<Operation *> loops;
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<scf::ForOp, scf::WhileOp>(op)) {
        bool holdsParallel = false;
        op->walk([&](scf::ParallelOp) { holdsParallel = true; });
        if (holdsParallel)
          return WalkResult::advance();
      }
      if (isa<scf::ParallelOp, scf::ForOp, scf::WhileOp>(op)) {
        loops.push_back(op);
        return WalkResult::skip();
      }
      return WalkResult::advance();
    });
    for (Operation *loop : loops) {
      if (loop->getNumResults() != 0) {
        loop->emitWarning("runs on the host: a loop that yields values "
                          "(dist-map-loops-to-gpu)");
        continue;
      }
      bool library = false;
      // The runtime's error reports recorded on the device, reported by
      // the host after the launch.
      (void)moveErrorReportsOut(rewriter, loop);
      if (Operation *bad = firstHostOnlyOp(loop, library)) {
        loop->emitWarning() << "runs on the host: its " << bad->getName()
                            << " has no GPU lowering (dist-map-loops-to-gpu)";
        continue;
      }
      // Products on the host side of the device library, one per trip.
      if (library)
        continue;
      if (auto par = dyn_cast<scf::ParallelOp>(loop))
        mapParallel(rewriter, par);
      else if (scf::ParallelOp one = asOneRowReduction(rewriter, loop))
        mapParallel(rewriter, one);
      else
        mapSingleThread(rewriter, loop);
    }
  }

  /// Replaces each memref.get_global by a device buffer holding a copy of
  /// the global (freed at the end of its block unless returned).
  LogicalResult copyGlobalsToDevice(RewriterBase &rewriter, func::FuncOp func) {
    SmallVector<memref::GetGlobalOp> globals;
    func.walk([&](memref::GetGlobalOp g) { globals.push_back(g); });
    for (memref::GetGlobalOp g : globals) {
      auto type = g.getType();
      if (!type.hasStaticShape()) {
        g.emitError("dist-map-loops-to-gpu: a global of dynamic shape");
        return failure();
      }
      // Outside any loop: the copy is made once per call, not per trip.
      Operation *anchor = g;
      while (Operation *parent = anchor->getParentOp()) {
        if (isa<func::FuncOp>(parent))
          break;
        anchor = parent;
      }
      Operation *end = anchor->getBlock()->getTerminator();
      rewriter.setInsertionPoint(anchor);
      Location loc = g.getLoc();
      auto host = memref::GetGlobalOp::create(rewriter, loc, type, g.getName());
      auto device = memref::AllocOp::create(
          rewriter, loc,
          MemRefType::get(type.getShape(), type.getElementType()));
      memref::CopyOp::create(rewriter, loc, host, device);
      Value replacement = device;
      if (!type.getLayout().isIdentity())
        replacement = memref::CastOp::create(rewriter, loc, type, device);
      rewriter.replaceOp(g, replacement);
      if (!escapesThroughReturn(replacement)) {
        rewriter.setInsertionPoint(end);
        memref::DeallocOp::create(rewriter, loc, device);
      }
    }
    return success();
  }

  /// The index `blockIdx.x * blockDim.x + threadIdx.x` of a launch built by
  /// `buildLaunch`, whose body `fill` then fills (before the terminator).
  void buildLaunch(RewriterBase &rewriter, Location loc, Value grid,
                   Value block, function_ref<void(OpBuilder &, Value)> fill) {
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto launch =
        gpu::LaunchOp::create(rewriter, loc, grid, one, one, block, one, one);
    OpBuilder::InsertionGuard guard(rewriter);
    Block &body = launch.getBody().front();
    rewriter.setInsertionPointToStart(&body);
    Value linear = arith::AddIOp::create(
        rewriter, loc,
        arith::MulIOp::create(rewriter, loc, launch.getBlockIds().x, block),
        launch.getThreadIds().x);
    fill(rewriter, linear);
    gpu::TerminatorOp::create(rewriter, loc);
  }

  void mapParallel(RewriterBase &rewriter, scf::ParallelOp par) {
    Location loc = par.getLoc();
    unsigned rank = par.getNumLoops();
    std::vector<unsigned> all(rank);
    std::iota(all.begin(), all.end(), 0u);
    rewriter.setInsertionPoint(par);
    // One normalised dimension [0, n) step 1 (the original indices are
    // recomputed from it in the body).
    scf::ParallelOp flat = par;
    {
      Operation *before = par->getPrevNode();
      Block *block = par->getBlock();
      collapseParallelLoops(rewriter, par, {all});
      // collapseParallelLoops replaced `par`: find the new loop.
      Operation *next = before ? before->getNextNode() : &block->front();
      while (next && !isa<scf::ParallelOp>(next))
        next = next->getNextNode();
      flat = cast<scf::ParallelOp>(next);
    }
    rewriter.setInsertionPoint(flat);
    Value lb = flat.getLowerBound()[0], ub = flat.getUpperBound()[0],
          step = flat.getStep()[0];
    Value trips = arith::CeilDivUIOp::create(
        rewriter, loc, arith::SubIOp::create(rewriter, loc, ub, lb), step);
    if (std::optional<RowReduction> row = matchRowReduction(flat)) {
      mapRowReduction(rewriter, flat, trips, *row);
      return;
    }
    Value block = arith::ConstantIndexOp::create(rewriter, loc, threads);
    Value grid = arith::CeilDivUIOp::create(rewriter, loc, trips, block);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    // An empty loop launches nothing (a grid of 0 blocks is an error).
    Value any = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt,
                                      trips, zero);
    auto ifAny = scf::IfOp::create(rewriter, loc, any, /*withElse=*/false);
    rewriter.setInsertionPointToStart(&ifAny.getThenRegion().front());
    buildLaunch(rewriter, loc, grid, block, [&](OpBuilder &b, Value i) {
      Value inRange =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i, trips);
      auto guard = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
      OpBuilder inner = OpBuilder::atBlockBegin(&guard.getThenRegion().front());
      Value iv = arith::AddIOp::create(
          inner, loc, arith::MulIOp::create(inner, loc, i, step), lb);
      IRMapping map;
      map.map(flat.getInductionVars()[0], iv);
      for (Operation &op : flat.getBody()->without_terminator())
        inner.clone(op, map);
    });
    rewriter.eraseOp(flat);
  }

  /// A row reduction (matchRowReduction) of the one-dimensional `flat`
  /// loop of `trips` iterations: one block per iteration, whose threads
  /// take every blockDim-th k into a partial result, combined across the
  /// block by gpu.all_reduce (warp shuffles and shared memory, lowered by
  /// convert-gpu-to-nvvm); thread 0 then combines it into acc[i].
  void mapRowReduction(RewriterBase &rewriter, scf::ParallelOp flat,
                       Value trips, RowReduction r) {
    Location loc = flat.getLoc();
    // A power of two from 32 (a warp) up to `threads`, at least the
    // loop's trip count when that is known.
    int64_t width = threads;
    if (std::optional<int64_t> k = staticTrips(r.loop)) {
      width = 32;
      while (width < *k && width < threads)
        width *= 2;
      width = std::min<int64_t>(width, threads);
    }
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value block = arith::ConstantIndexOp::create(rewriter, loc, width);
    Value any = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt,
                                      trips, zero);
    auto ifAny = scf::IfOp::create(rewriter, loc, any, /*withElse=*/false);
    rewriter.setInsertionPointToStart(&ifAny.getThenRegion().front());
    auto launch =
        gpu::LaunchOp::create(rewriter, loc, trips, one, one, block, one, one);
    OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
    Value tid = launch.getThreadIds().x;
    IRMapping map;
    map.map(flat.getInductionVars()[0],
            arith::AddIOp::create(b, loc,
                                  arith::MulIOp::create(b, loc,
                                                        launch.getBlockIds().x,
                                                        flat.getStep()[0]),
                                  flat.getLowerBound()[0]));
    for (Operation &op : flat.getBody()->without_terminator())
      if (&op != r.loop.getOperation())
        b.clone(op, map);
    Value kStep = map.lookupOrDefault(r.loop.getStep());
    Value start = arith::AddIOp::create(
        b, loc, map.lookupOrDefault(r.loop.getLowerBound()),
        arith::MulIOp::create(b, loc, tid, kStep));
    Value stride = arith::MulIOp::create(b, loc, kStep, block);
    Type f32 = b.getF32Type();
    Value identity = arith::ConstantFloatOp::create(
        b, loc, cast<FloatType>(f32), APFloat(static_cast<float>(r.identity)));
    auto partial = scf::ForOp::create(
        b, loc, start, map.lookupOrDefault(r.loop.getUpperBound()), stride,
        ValueRange{identity},
        [&](OpBuilder &lb, Location, Value k, ValueRange iter) {
          IRMapping inner = map;
          inner.map(r.loop.getInductionVar(), k);
          inner.map(r.accLoad.getResult(), iter[0]);
          for (Operation &op : r.loop.getBody()->without_terminator())
            if (&op != r.accLoad.getOperation() &&
                &op != r.accStore.getOperation())
              lb.clone(op, inner);
          scf::YieldOp::create(lb, loc, inner.lookup(r.combine->getResult(0)));
        });
    Value total = gpu::AllReduceOp::create(
        b, loc, partial.getResult(0),
        gpu::AllReduceOperationAttr::get(b.getContext(), r.kind),
        b.getUnitAttr());
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, zero);
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    {
      OpBuilder fb = OpBuilder::atBlockBegin(&ifFirst.getThenRegion().front());
      SmallVector<Value> indices;
      for (Value i : r.accStore.getIndices())
        indices.push_back(map.lookupOrDefault(i));
      Value acc = map.lookupOrDefault(r.accStore.getMemRef());
      Value old = memref::LoadOp::create(fb, loc, acc, indices);
      IRMapping last;
      for (Value operand : r.combine->getOperands())
        last.map(operand, operand == r.accLoad.getResult() ? old : total);
      Operation *combined = fb.clone(*r.combine, last);
      memref::StoreOp::create(fb, loc, combined->getResult(0), acc, indices);
    }
    gpu::TerminatorOp::create(b, loc);
    rewriter.eraseOp(flat);
  }

  /// A reduction to one element (a loss's sum): the scf.for `loop` inside
  /// a parallel loop of one trip, when that is a row reduction
  /// (matchRowReduction), so that one block's threads share it; null
  /// (nothing changed) otherwise.
  scf::ParallelOp asOneRowReduction(RewriterBase &rewriter, Operation *loop) {
    auto forOp = dyn_cast<scf::ForOp>(loop);
    if (!forOp)
      return nullptr;
    Location loc = forOp.getLoc();
    rewriter.setInsertionPoint(forOp);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto par = scf::ParallelOp::create(
        rewriter, loc, ValueRange{zero}, ValueRange{one}, ValueRange{one},
        [&](OpBuilder &b, Location, ValueRange) { b.clone(*forOp); });
    if (!matchRowReduction(par)) {
      rewriter.eraseOp(par);
      return nullptr;
    }
    rewriter.eraseOp(forOp);
    return par;
  }

  void mapSingleThread(RewriterBase &rewriter, Operation *loop) {
    Location loc = loop->getLoc();
    rewriter.setInsertionPoint(loop);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    buildLaunch(rewriter, loc, one, one,
                [&](OpBuilder &b, Value) { b.clone(*loop); });
    rewriter.eraseOp(loop);
  }
};

} // namespace
