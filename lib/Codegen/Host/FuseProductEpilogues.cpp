//===- FuseProductEpilogues.cpp - bias and activation into product calls --===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-contractions-to-runtime turns a convolution's 1x1 or im2col product
// into a call of dist_rt_gemm_set_f32 writing a fresh buffer T, and the
// bias and activation that follow stay a loop reading T and writing the
// layer's output O. This pass folds that loop into the call: the call
// becomes dist_rt_gemm_set_act_f32 writing O directly, with the bias per
// row or per column of the product and ReLU / Clip, and T goes (or stays
// for a later op that overwrites it). O may be the interior of the padded
// input of the next convolution (MobileNetV2's expansions feeding its
// depthwise layers): the call then writes its rows as an image's. T may
// be a buffer that bufferization reused: used before the call (dead once
// the call writes it all) and after the loop (by an op that overwrites it
// first, such as the next product's call), its views and pointers shared
// by several ops (CSE). Where the host has the packed kernels (AVX2 or
// AVX-512) the runtime applies the epilogue as they store their tiles
// (the filters are A, the bias is per row); elsewhere in one pass over O
// after the product. Measured on MobileNetV2 (Zen 3): its
// bias-and-Clip loops were 8% of a one-thread inference; with 16 of its 30
// products folded, the same build's inference took 0.95x (one and two
// threads, medians of 5 alternated runs, outputs bit-identical). With
// reused buffers and shared views: MobileNetV2 25 of 35 folded,
// ResNet-50 26 of 46 (8 before).
//
// The loop may add O's own old value as well (a residual connection's Add
// written over its dead operand, ResNet's identity): the call then
// accumulates onto O (DIST_RT_GEMM_ACCUMULATE).
// ResNet-50's 12 identity blocks fold that way: at one thread its
// inference took 0.87x to 1.0x of the time (nine alternated runs, median
// 0.98x), at two no difference above the noise (Intel Xeon, family 6
// model 207). T may also be overwritten next by a direct convolution's
// call (dist_rt_conv2d_f32 writing all of it, ResNet-50's 3x3 layers on
// 56 x 56 and 28 x 28): 30 of its 38 products' loops fold.
//
// A batch left open by the export (sizes known only when the program
// runs) folds alike: sizes are compared as the values the allocations and
// views were given (Extent; the pipeline resolves every batch to the
// input's dimension first), and the call reads its batch from T's
// allocation. MobileNetV2, EfficientNet-B0 and ResNet-50 exported with a
// dynamic batch axis fold as many loops as their static exports (none
// before), outputs bit-identical to them.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"
#include "dist/Codegen/RuntimeABI.h"

#include "Lowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#define DEBUG_TYPE "dist-fuse-product-epilogues"

namespace mlir::dist {
#define GEN_PASS_DEF_FUSEPRODUCTEPILOGUESPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using mlir::dist::codegen::addressEnds;
using mlir::dist::codegen::pointerSource;

namespace {

/// Operands of dist_rt_gemm_set_f32 (see dist_rt/kernels.h).
enum GemmOperand {
  kAPtr = 4,
  kBPtr = 8,
  kCPtr = 11,
  kCSb = 12,
  kCSm = 13,
  kCSn = 14,
  kGemmArgs = 16
};

/// Operands of dist_rt_conv2d_f32 (see dist_rt/kernels.h).
enum ConvOperand {
  kConvIn = 13,
  kConvWeight = 17,
  kConvBias = 18,
  kConvOut = 19,
  kConvOutSn = 20,
  kConvOutSf = 21,
  kConvOutSh = 22,
  kConvFlags = 25,
  kConvArgs = 26
};

/// The buffer under the views whose pointer `v` is (pointerSource); null
/// if `v` is not such a pointer.
Value rootOf(Value v) {
  Value source = pointerSource(v);
  return source ? dist::codegen::rootBuffer(source) : Value();
}

/// The dimension of `buffer` whose stride `v` is (an index_cast of a
/// stride result of its extract_strided_metadata), or -1.
int64_t strideDim(Value v, Value buffer) {
  auto cast = v.getDefiningOp<arith::IndexCastOp>();
  auto result = cast ? dyn_cast<OpResult>(cast.getIn()) : OpResult();
  auto md = result
                ? dyn_cast<memref::ExtractStridedMetadataOp>(result.getOwner())
                : nullptr;
  if (!md || md.getSource() != buffer)
    return -1;
  auto rank = static_cast<int64_t>(md.getStrides().size());
  int64_t index = static_cast<int64_t>(result.getResultNumber()) - 2 - rank;
  return index >= 0 && index < rank ? index : -1;
}

/// Whether every use of `op`'s results ends, through index arithmetic,
/// in `call`.
bool onlyFeeds(Operation *op, Operation *call) {
  return llvm::all_of(addressEnds(op),
                      [&](Operation *end) { return end == call; });
}

/// The epilogue of an elementwise loop: out = act(product [+ bias]).
struct Epilogue {
  bool relu = false, clip = false, silu = false, hardSwish = false;
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

std::optional<float> constantF32(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : nullptr;
  if (!f || !f.getType().isF32())
    return std::nullopt;
  return static_cast<float>(f.getValueAsDouble());
}

/// Reads `g`'s body: the product's block argument `product`, then adds
/// of `bias` and of `residual` (each when not null, in either order), then
/// in this order any of SiLU (siluOf:
/// EfficientNet's Sigmoid and Mul) or HardSwish (hardSwishOf), ReLU (maximumf
/// with +0.0), a lower bound (cmpf olt + select, or maximumf with another
/// finite constant) and an upper bound (cmpf ogt + select, or minimumf with
/// a finite non-zero constant): exactly the runtime's epilogue, NaN and
/// signed zeros included. Nothing else.
std::optional<Epilogue> readBody(linalg::GenericOp g, BlockArgument product,
                                 BlockArgument bias, BlockArgument residual) {
  Block &body = g.getRegion().front();
  Epilogue e;
  Value v = product;
  bool biasAdded = !bias, residualAdded = !residual;
  auto added = [&] { return biasAdded && residualAdded; };
  int stage = 0; // 1: ReLU seen, 2: lower bound, 3: upper bound.
  auto operandOtherThan = [&](Operation *op, Value x) -> Value {
    if (op->getNumOperands() != 2)
      return {};
    if (op->getOperand(0) == x)
      return op->getOperand(1);
    if (op->getOperand(1) == x)
      return op->getOperand(0);
    return {};
  };
  // Whether the ops of one step are all that read `x`, the value so far.
  auto readOnlyBy = [](Value x, std::initializer_list<Operation *> ops) {
    for (Operation *user : x.getUsers())
      if (!llvm::is_contained(ops, user))
        return false;
    return true;
  };
  // The ops of a SiLU or HardSwish already read (they need not follow one
  // another).
  llvm::SmallPtrSet<Operation *, 8> gate;
  for (auto it = body.begin(); it != body.end(); ++it) {
    Operation &op = *it;
    if (auto yield = dyn_cast<linalg::YieldOp>(op)) {
      if (yield.getNumOperands() != 1 || yield.getOperand(0) != v || !added() ||
          (!bias && !residual && stage == 0 && !e.silu && !e.hardSwish) ||
          !readOnlyBy(v, {yield}))
        return std::nullopt;
      return e;
    }
    if (isa<arith::ConstantOp>(op) || gate.contains(&op))
      continue;
    if (added() && gate.empty() && stage == 0 &&
        isa<arith::NegFOp, arith::MulFOp>(op)) {
      SmallVector<Operation *> chain;
      bool silu = isa<arith::NegFOp>(op);
      arith::MulFOp mul = silu ? dist::codegen::siluOf(v, &chain)
                               : dist::codegen::hardSwishOf(v, &chain);
      if (!mul)
        return std::nullopt;
      gate.insert(chain.begin(), chain.end());
      (silu ? e.silu : e.hardSwish) = true;
      v = mul.getResult();
      continue;
    }
    if (!isa<arith::CmpFOp>(op) && !readOnlyBy(v, {&op}))
      return std::nullopt;
    if (auto add = dyn_cast<arith::AddFOp>(op)) {
      Value other = operandOtherThan(add, v);
      if (!biasAdded && other == bias)
        biasAdded = true;
      else if (!residualAdded && other == residual)
        residualAdded = true;
      else
        return std::nullopt;
      v = add.getResult();
      continue;
    }
    if (!added())
      return std::nullopt;
    if (isa<arith::MaximumFOp, arith::MinimumFOp>(op)) {
      std::optional<float> c = constantF32(operandOtherThan(&op, v));
      if (!c || !std::isfinite(*c))
        return std::nullopt;
      if (isa<arith::MaximumFOp>(op)) {
        bool zero = *c == 0.0f && !std::signbit(*c);
        if (zero && stage < 1) {
          e.relu = true;
          stage = 1;
        } else if (!zero && *c != 0.0f && stage < 2) {
          e.clip = true;
          e.lo = *c;
          stage = 2;
        } else {
          return std::nullopt;
        }
      } else {
        if (*c == 0.0f || stage >= 3)
          return std::nullopt;
        e.clip = true;
        e.hi = *c;
        stage = 3;
      }
      v = op.getResult(0);
      continue;
    }
    if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
      auto next = std::next(it);
      auto select =
          next != body.end() ? dyn_cast<arith::SelectOp>(*next) : nullptr;
      std::optional<float> c =
          cmp.getLhs() == v ? constantF32(cmp.getRhs()) : std::nullopt;
      if (!select || !c || select.getCondition() != cmp.getResult() ||
          select.getFalseValue() != v ||
          constantF32(select.getTrueValue()) != c ||
          !readOnlyBy(v, {cmp, select}) ||
          !readOnlyBy(cmp.getResult(), {select}))
        return std::nullopt;
      if (cmp.getPredicate() == arith::CmpFPredicate::OLT && stage < 2) {
        e.lo = *c;
        stage = 2;
      } else if (cmp.getPredicate() == arith::CmpFPredicate::OGT && stage < 3) {
        e.hi = *c;
        stage = 3;
      } else {
        return std::nullopt;
      }
      e.clip = true;
      v = select.getResult();
      ++it;
      continue;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

/// An identity-layout f32 allocation made by memref.alloc (its sizes
/// static or not: a model exported with a dynamic batch).
memref::AllocOp plainAlloc(Value v) {
  auto alloc = v.getDefiningOp<memref::AllocOp>();
  auto type = alloc ? alloc.getType() : MemRefType();
  if (!alloc || !type.getLayout().isIdentity() ||
      !type.getElementType().isF32())
    return nullptr;
  return alloc;
}

/// A number of elements: a constant factor times a product of sizes
/// known only when the program runs (a dynamic batch), each the SSA value
/// an allocation or view was given, so that sizes spelled through
/// different views and memref.dim ops compare.
struct Extent {
  int64_t factor = 1;
  SmallVector<Value> values; // Sorted.

  Extent &operator*=(const Extent &other) {
    factor *= other.factor;
    values.append(other.values.begin(), other.values.end());
    llvm::sort(values, [](Value x, Value y) {
      return x.getAsOpaquePointer() < y.getAsOpaquePointer();
    });
    return *this;
  }
  bool operator==(const Extent &other) const {
    return factor == other.factor && values == other.values;
  }
  bool operator!=(const Extent &other) const { return !(*this == other); }
};

std::optional<Extent> extentOf(Value memref, int64_t d);

/// The extent an index value is: a constant, a dimension of a memref
/// traced to the size it was given, or the value itself.
Extent extentOfIndex(Value v) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return Extent{*c, {}};
  if (auto dim = v.getDefiningOp<memref::DimOp>())
    if (std::optional<int64_t> index = dim.getConstantIndex())
      if (std::optional<Extent> e = extentOf(dim.getSource(), *index))
        return *e;
  return Extent{1, {v}};
}

/// `memref`'s size along `d` as an extent: static, or the size operand of
/// the allocation or view that made it (collapsed dimensions multiplied).
std::optional<Extent> extentOf(Value memref, int64_t d) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type || d < 0 || d >= type.getRank())
    return std::nullopt;
  if (!type.isDynamicDim(d))
    return Extent{type.getDimSize(d), {}};
  Operation *def = memref.getDefiningOp();
  auto given = [](OpFoldResult size) {
    return extentOfIndex(cast<Value>(size));
  };
  if (auto alloc = dyn_cast_or_null<memref::AllocOp>(def))
    return given(alloc.getMixedSizes()[d]);
  if (auto view = dyn_cast_or_null<memref::ExpandShapeOp>(def))
    return given(view.getMixedOutputShape()[d]);
  if (auto view = dyn_cast_or_null<memref::SubViewOp>(def);
      view && view.getSourceType().getRank() == type.getRank())
    return given(view.getMixedSizes()[d]);
  if (auto view = dyn_cast_or_null<memref::CollapseShapeOp>(def)) {
    Extent e;
    // (A copy: the range-for would bind to the temporary's element.)
    SmallVector<ReassociationIndices> groups = view.getReassociationIndices();
    for (int64_t s : groups[d]) {
      std::optional<Extent> part = extentOf(view.getSrc(), s);
      if (!part)
        return std::nullopt;
      e *= *part;
    }
    return e;
  }
  return std::nullopt;
}

/// Whether `view` (a view of a buffer) is read by nothing but memref.dim
/// ops whose sizes are known without it (static, or the sizes an
/// allocation or view was given: extentOf), directly or through further
/// views.
bool onlySizes(Operation *view) {
  return llvm::all_of(view->getUsers(), [](Operation *user) {
    if (auto dim = dyn_cast<memref::DimOp>(user)) {
      std::optional<int64_t> index = dim.getConstantIndex();
      return index && extentOf(dim.getSource(), *index);
    }
    return isa<ViewLikeOpInterface>(user) && onlySizes(user);
  });
}

/// `e` as an index computed at `b`'s point.
Value materialize(OpBuilder &b, Location loc, const Extent &e) {
  Value v;
  for (Value x : e.values)
    v = v ? arith::MulIOp::create(b, loc, v, x).getResult() : x;
  if (!v || e.factor != 1) {
    Value c = arith::ConstantIndexOp::create(b, loc, e.factor);
    v = v ? arith::MulIOp::create(b, loc, v, c).getResult() : c;
  }
  return v;
}

/// Replaces the memref.dim ops that read `view` (onlySizes), directly or
/// through further views, by the sizes they read.
void replaceSizes(Operation *view) {
  for (Operation *user : llvm::make_early_inc_range(view->getUsers())) {
    auto dim = dyn_cast<memref::DimOp>(user);
    if (!dim) {
      replaceSizes(user);
      continue;
    }
    OpBuilder b(dim);
    dim.replaceAllUsesWith(materialize(
        b, dim.getLoc(), *extentOf(dim.getSource(), *dim.getConstantIndex())));
    dim.erase();
  }
}

/// Whether an op strictly between `from` and `to` in their block uses
/// `v` (nested uses counted at their ancestor).
bool usedBetween(Value v, Operation *from, Operation *to) {
  Block *block = from->getBlock();
  for (Operation *user : v.getUsers()) {
    Operation *at = block->findAncestorOpInBlock(*user);
    if (at && from->isBeforeInBlock(at) && at->isBeforeInBlock(to))
      return true;
  }
  return false;
}

/// Whether an op strictly between `from` and `to` uses `v` or a view of
/// it (views followed through ViewLikeOpInterface wherever they stand).
bool usedBetweenThroughViews(Value v, Operation *from, Operation *to) {
  Block *block = from->getBlock();
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value x = work.pop_back_val();
    for (Operation *user : x.getUsers()) {
      Operation *at = block->findAncestorOpInBlock(*user);
      if (at && from->isBeforeInBlock(at) && at->isBeforeInBlock(to))
        return true;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == x)
          work.append(user->getResults().begin(), user->getResults().end());
    }
  }
  return false;
}

/// The static value of a call operand: an i64 constant, or the index_cast
/// of a constant dimension of a static memref.
std::optional<int64_t> staticOperand(Value v) {
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
      return i.getInt();
  auto cast = v.getDefiningOp<arith::IndexCastOp>();
  auto dim = cast ? cast.getIn().getDefiningOp<memref::DimOp>() : nullptr;
  std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
  auto type = dim ? dyn_cast<MemRefType>(dim.getSource().getType()) : nullptr;
  if (!index || !type || type.isDynamicDim(*index))
    return std::nullopt;
  return type.getDimSize(*index);
}

/// A size operand of a call as an extent: an i64 constant or the
/// index_cast of an index.
std::optional<Extent> operandExtent(Value v) {
  if (std::optional<int64_t> c = staticOperand(v))
    return Extent{*c, {}};
  auto cast = v.getDefiningOp<arith::IndexCastOp>();
  if (!cast)
    return std::nullopt;
  return extentOfIndex(cast.getIn());
}

/// Whether `first`, the first op after an epilogue loop to use T (a plain
/// allocation) again, is or starts the operands of a runtime call that
/// writes all of T without reading it, every op of `later` before that
/// call computing only its operands (bufferization reused T for the next
/// product or convolution: ResNet-50's 1x1 product and the 3x3 one after
/// it). The calls: dist_rt_gemm_set_f32 whose C is all of T, and
/// dist_rt_conv2d_f32 without accumulating whose output is all of T,
/// rows, filters and images contiguous.
bool callOverwrites(Operation *first, Value t, ArrayRef<Operation *> later) {
  func::CallOp target = dyn_cast<func::CallOp>(first);
  if (!target)
    for (Operation *end : addressEnds(first)) {
      auto c = dyn_cast<func::CallOp>(end);
      if (!c || (target && target != c))
        return false;
      target = c;
    }
  if (!target || target->getBlock() != first->getBlock())
    return false;
  auto sizeOf = [&](ArrayRef<unsigned> operands) -> std::optional<Extent> {
    Extent elements;
    for (unsigned i : operands) {
      std::optional<Extent> size = operandExtent(target.getOperand(i));
      if (!size)
        return std::nullopt;
      elements *= *size;
    }
    return elements;
  };
  auto type = cast<MemRefType>(t.getType());
  Extent all;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    std::optional<Extent> size = extentOf(t, d);
    if (!size)
      return false;
    all *= *size;
  }
  if (target.getCallee() == dist::runtime_abi::kGemmSetF32 &&
      target.getNumOperands() == kGemmArgs) {
    if (rootOf(target.getOperand(kCPtr)) != t ||
        rootOf(target.getOperand(kAPtr)) == t ||
        rootOf(target.getOperand(kBPtr)) == t)
      return false;
    // C is batch x m x n elements at T's start: all of T.
    if (sizeOf({0, 1, 2}) != all)
      return false;
  } else if (target.getCallee() == dist::runtime_abi::kConv2dF32 &&
             target.getNumOperands() == kConvArgs) {
    // The output at T's start (T itself, [n, f, oh, ow]), its strides
    // T's: all of T, written.
    std::optional<int64_t> flags = staticOperand(target.getOperand(kConvFlags));
    auto sizeIs = [&](unsigned operand, int64_t d) {
      std::optional<Extent> size = operandExtent(target.getOperand(operand));
      return size && size == extentOf(t, d);
    };
    if (pointerSource(target.getOperand(kConvOut)) != t ||
        type.getRank() != 4 || !flags ||
        (*flags & dist::runtime_abi::kConvAccumulate) ||
        rootOf(target.getOperand(kConvIn)) == t ||
        rootOf(target.getOperand(kConvWeight)) == t ||
        rootOf(target.getOperand(kConvBias)) == t || !sizeIs(0, 0) ||
        !sizeIs(4, 1) || !sizeIs(11, 2) || !sizeIs(12, 3) ||
        strideDim(target.getOperand(kConvOutSn), t) != 0 ||
        strideDim(target.getOperand(kConvOutSf), t) != 1 ||
        strideDim(target.getOperand(kConvOutSh), t) != 2)
      return false;
  } else {
    return false;
  }
  Block *block = first->getBlock();
  for (Operation *op : later) {
    Operation *at = block->findAncestorOpInBlock(*op);
    if (at && at->isBeforeInBlock(target) && !onlyFeeds(at, target))
      return false;
  }
  return true;
}

struct FuseProductEpiloguesPass
    : public dist::impl::FuseProductEpiloguesPassBase<
          FuseProductEpiloguesPass> {
  // A module pass: the rewrite declares the runtime function at module
  // level, which a function pass running in parallel must not do.
  void runOnOperation() override {
    SmallVector<func::CallOp> calls;
    getOperation().walk([&](func::CallOp call) {
      if (call.getCallee() == dist::runtime_abi::kGemmSetF32 &&
          call.getNumOperands() == kGemmArgs)
        calls.push_back(call);
    });
    for (func::CallOp call : calls)
      if (succeeded(fuse(call)))
        ++numFused;
  }

  LogicalResult fuse(func::CallOp call) {
    Block *block = call->getBlock();
    // The call writes P, a fresh buffer T or a collapse_shape view of it;
    // P's batch, rows and columns.
    Value p = pointerSource(call.getOperand(kCPtr));
    auto pView = p ? p.getDefiningOp<memref::CollapseShapeOp>() : nullptr;
    Value t = pView ? pView.getSrc() : p;
    memref::AllocOp tAlloc = t ? plainAlloc(t) : nullptr;
    if (!tAlloc || tAlloc->getBlock() != block ||
        (pView && (pView->getBlock() != block ||
                   !pView.getResultType().getLayout().isIdentity())))
      return failure();
    auto tType = cast<MemRefType>(p.getType());
    int64_t rowsDim = strideDim(call.getOperand(kCSm), p);
    int64_t colsDim = strideDim(call.getOperand(kCSn), p);
    int64_t batchDim =
        tType.getRank() == 3 ? strideDim(call.getOperand(kCSb), p) : -1;
    if (rowsDim < 0 || colsDim < 0 || rowsDim == colsDim ||
        (tType.getRank() == 3 &&
         (batchDim < 0 || batchDim == rowsDim || batchDim == colsDim)) ||
        tType.getRank() < 2 || tType.getRank() > 3)
      return failure();
    // The first op after the call that reads T (directly or through one
    // expand_shape view) must be the epilogue loop; T's other uses are the
    // call's pointer, strides and sizes, that view, its dealloc, and ops
    // after the loop the first of which overwrites T without reading it.
    linalg::GenericOp loop;
    memref::ExpandShapeOp view;
    memref::DeallocOp dealloc;
    auto feedsCall = [&](Operation *op) {
      return isa<memref::ExtractStridedMetadataOp,
                 memref::ExtractAlignedPointerAsIndexOp, memref::DimOp>(op) &&
             onlyFeeds(op, call);
    };
    // Ops that use T's buffer again after the loop (bufferization reuses a
    // dead buffer as a later op's output).
    SmallVector<Operation *> later;
    // Uses of T before the call: an earlier life of a buffer that
    // bufferization reused (the call writes all of it, so what they wrote
    // or read is dead by then); T then stays.
    bool usedBefore = false;
    auto isBefore = [&](Operation *op) {
      Operation *at = block->findAncestorOpInBlock(*op);
      return at && at->isBeforeInBlock(call);
    };
    // A pointer, stride or size of T (or of a view of it) that may also
    // feed other calls (CSE shares them): each op it ends in, through
    // index arithmetic, is a use of T where that op is.
    auto addressUses = [&](Operation *op) {
      for (Operation *end : addressEnds(op)) {
        if (end == call)
          continue;
        if (isBefore(end))
          usedBefore = true;
        else
          later.push_back(end);
      }
    };
    // Whether `op` and, for a view, everything that uses it come before
    // the call.
    std::function<bool(Operation *)> allBefore = [&](Operation *op) {
      return isBefore(op) && (!isa<ViewLikeOpInterface>(op) ||
                              llvm::all_of(op->getUsers(), allBefore));
    };
    auto isAddress = [](Operation *op) {
      return isa<memref::ExtractStridedMetadataOp,
                 memref::ExtractAlignedPointerAsIndexOp, memref::DimOp>(op);
    };
    // Views of T read only for their sizes.
    SmallVector<Operation *> sizeViews;
    for (Operation *user : t.getUsers()) {
      // A view that nothing but sizes known without it read (left by
      // dist-contractions-to-runtime when a convolution's call took a
      // fresh output in place of T, its batch a dynamic one) does not use
      // T: those sizes replace the reads.
      if (isa<ViewLikeOpInterface>(user) && onlySizes(user)) {
        sizeViews.push_back(user);
        continue;
      }
      // Collapsed views of T (P among them): what they give the call, and
      // (a view shared with other ops' calls) earlier or later uses.
      if (auto c = dyn_cast<memref::CollapseShapeOp>(user)) {
        for (Operation *u : c->getUsers()) {
          if (feedsCall(u))
            continue;
          if (isAddress(u))
            addressUses(u);
          else if (isBefore(u))
            usedBefore = true;
          else
            later.push_back(u);
        }
        continue;
      }
      if (auto d = dyn_cast<memref::DeallocOp>(user)) {
        dealloc = d;
        continue;
      }
      if (feedsCall(user))
        continue;
      if (isAddress(user)) {
        addressUses(user);
        continue;
      }
      // What reads T: the user, or the users of an expand_shape view of T
      // (one view that CSE made of identical ones may serve the epilogues
      // of several products into T, ResNet-50's 1x1 and 3x3 ones); a view
      // marked as a call's output is itself the use that overwrites T.
      SmallVector<Operation *> readers{user};
      memref::ExpandShapeOp e = dyn_cast<memref::ExpandShapeOp>(user);
      if (e && !pView && e->getBlock() == block && !e->use_empty() &&
          !e->hasAttr(dist::codegen::kCallOverwritesAttr))
        readers.assign(e->getUsers().begin(), e->getUsers().end());
      else
        e = nullptr;
      for (Operation *reader : readers) {
        if (allBefore(reader)) {
          usedBefore = true;
          continue;
        }
        Operation *at = block->findAncestorOpInBlock(*reader);
        if (!at || !call->isBeforeInBlock(at))
          return failure();
        auto g = dyn_cast<linalg::GenericOp>(reader);
        if (g && g == at && (!loop || g->isBeforeInBlock(loop))) {
          if (loop)
            later.push_back(loop);
          loop = g;
          view = e;
        } else {
          later.push_back(reader);
        }
      }
    }
    if (!loop || loop->getBlock() != block ||
        (view && view->getBlock() != block))
      return failure();
    // After the loop T's old values are dead: the first op to use the
    // buffer again must overwrite it without reading.
    Operation *next = nullptr;
    for (Operation *op : later) {
      Operation *at = block->findAncestorOpInBlock(*op);
      if (!at || !loop->isBeforeInBlock(at))
        return failure();
      if (!next || at->isBeforeInBlock(next))
        next = at;
    }
    if (next && !dist::codegen::overwritesWithoutReading(next, t) &&
        !callOverwrites(next, t, later))
      return failure();
    Value product = view ? view.getResult() : t;
    auto productType = cast<MemRefType>(product.getType());
    // The loop: all parallel, O = act(product [+ bias]) with the product
    // and O read and written element for element.
    if (loop.getNumDpsInits() != 1 ||
        loop.getNumParallelLoops() != loop.getNumLoops() ||
        loop.getNumDpsInputs() < 1 || loop.getNumDpsInputs() > 3)
      return failure();
    Value out = loop.getDpsInitOperand(0)->get();
    auto outType = cast<MemRefType>(out.getType());
    Block &body = loop.getRegion().front();
    if (outType.getShape() != productType.getShape() ||
        !outType.getElementType().isF32() ||
        !loop.getMatchingIndexingMap(loop.getDpsInitOperand(0)).isIdentity() ||
        !body.getArgument(loop.getNumDpsInputs()).use_empty())
      return failure();
    // O: a fresh allocation, or a unit-step subview of one at static
    // offsets (the interior of the padded input of a following
    // convolution; its sizes static but for a dynamic batch's).
    memref::SubViewOp oView = out.getDefiningOp<memref::SubViewOp>();
    memref::AllocOp oAlloc = plainAlloc(oView ? oView.getSource() : out);
    if (!oAlloc || oAlloc->getBlock() != block ||
        (oView && (oView->getBlock() != block || !oView.getOffsets().empty() ||
                   oView.getSourceType().getRank() != outType.getRank() ||
                   !oView.getStrides().empty() ||
                   llvm::any_of(oView.getStaticStrides(),
                                [](int64_t s) { return s != 1; }))))
      return failure();
    SmallVector<int64_t> oStrides;
    int64_t oOffset = 0;
    if (failed(outType.getStridesAndOffset(oStrides, oOffset)) ||
        ShapedType::isDynamic(oOffset) ||
        llvm::any_of(oStrides, ShapedType::isDynamic))
      return failure();
    // A residual: O itself read element for element (bufferization wrote
    // the Add's result over its dead operand, ResNet's identity), which
    // the call then accumulates onto (DIST_RT_GEMM_ACCUMULATE). O must be
    // a whole allocation that neither the product reads nor any op between
    // the call and the loop uses, through views too: the call now writes
    // it where it stands.
    OpOperand *productOperand = nullptr, *biasOperand = nullptr,
              *residualOperand = nullptr;
    for (OpOperand *in : loop.getDpsInputOperands()) {
      bool identity = loop.getMatchingIndexingMap(in).isIdentity();
      if (in->get() == product && !productOperand && identity)
        productOperand = in;
      else if (in->get() == out && !residualOperand && identity)
        residualOperand = in;
      else if (in->get() != product && in->get() != out && !biasOperand)
        biasOperand = in;
      else
        return failure();
    }
    if (!productOperand)
      return failure();
    if (residualOperand) {
      if (oView || rootOf(call.getOperand(kAPtr)) == out ||
          rootOf(call.getOperand(kBPtr)) == out ||
          usedBetweenThroughViews(out, call, loop))
        return failure();
    }
    // The bias: one iteration dimension picks its element; its other
    // dimensions have one element.
    int64_t biasLoopDim = -1, biasResult = -1;
    if (biasOperand) {
      auto bType = dyn_cast<MemRefType>(biasOperand->get().getType());
      AffineMap map = loop.getMatchingIndexingMap(biasOperand);
      if (!bType || !bType.getElementType().isF32())
        return failure();
      for (auto [i, expr] : llvm::enumerate(map.getResults())) {
        if (auto d = dyn_cast<AffineDimExpr>(expr)) {
          if (biasLoopDim >= 0)
            return failure();
          biasLoopDim = d.getPosition();
          biasResult = static_cast<int64_t>(i);
        } else if (auto c = dyn_cast<AffineConstantExpr>(expr)) {
          if (c.getValue() != 0 || bType.getDimSize(i) != 1)
            return failure();
        } else {
          return failure();
        }
      }
      // The call reads the bias: it must exist there.
      Operation *def = biasOperand->get().getDefiningOp();
      if (biasLoopDim < 0 ||
          (def && def->getBlock() == block && !def->isBeforeInBlock(call)))
        return failure();
    }
    auto argOf = [&](OpOperand *operand) {
      return operand ? body.getArgument(operand->getOperandNumber())
                     : BlockArgument();
    };
    std::optional<Epilogue> e =
        readBody(loop, argOf(productOperand), argOf(biasOperand),
                 argOf(residualOperand));
    if (!e)
      return failure();

    // The dimensions of O (and of the product's view) each of T's covers.
    auto group = [&](int64_t d) -> SmallVector<int64_t> {
      if (!view && !pView)
        return {d};
      ReassociationIndices g = view ? view.getReassociationIndices()[d]
                                    : pView.getReassociationIndices()[d];
      return SmallVector<int64_t>(g.begin(), g.end());
    };
    auto nonUnit = [&](int64_t d) {
      SmallVector<int64_t> dims;
      for (int64_t o : group(d))
        if (outType.getDimSize(o) != 1)
          dims.push_back(o);
      return dims;
    };
    // T's batch and rows: one dimension of O each; its columns one, or two
    // (an image's rows and positions, the positions at unit stride).
    auto strideOf = [&](int64_t d, int64_t &stride) {
      SmallVector<int64_t> dims = nonUnit(d);
      if (dims.size() > 1)
        return false;
      stride = oStrides[dims.empty() ? group(d).back() : dims.front()];
      return true;
    };
    int64_t cSb = 0, cSm = 0, cSn = 0, rowLen = 0, rowStride = 0;
    if (!strideOf(rowsDim, cSm) || (batchDim >= 0 && !strideOf(batchDim, cSb)))
      return failure();
    SmallVector<int64_t> colDims = nonUnit(colsDim);
    if (colDims.size() <= 1) {
      if (!strideOf(colsDim, cSn))
        return failure();
    } else if (colDims.size() == 2 && oStrides[colDims[1]] == 1) {
      cSn = 1;
      rowLen = outType.getDimSize(colDims[1]);
      if (ShapedType::isDynamic(rowLen))
        return failure();
      rowStride = oStrides[colDims[0]];
      if (rowStride == rowLen)
        rowLen = rowStride = 0; // Contiguous after all.
    } else {
      return failure();
    }
    // The dimension of T the bias runs along.
    int64_t biasDim = -1;
    if (biasOperand) {
      for (int64_t d = 0; d < tType.getRank(); ++d)
        if (llvm::is_contained(group(d), biasLoopDim)) {
          for (int64_t o : group(d))
            if (o != biasLoopDim && outType.getDimSize(o) != 1)
              return failure();
          biasDim = d;
        }
      if (biasDim != rowsDim && biasDim != colsDim)
        return failure();
    }
    // The call now reads the bias and writes O where the loop did later.
    // Between them may stand only ops that write no memory, O's own
    // allocation and view (moved before the call), and fills of the rest
    // of O's allocation (a padded buffer's border, dist-fill-borders),
    // disjoint from O (apart along a dimension of static size).
    SmallVector<int64_t> oLo(outType.getRank(), 0), oHi(outType.getShape());
    if (oView)
      for (int64_t d = 0; d < outType.getRank(); ++d) {
        oLo[d] = oView.getStaticOffsets()[d];
        if (!outType.isDynamicDim(d))
          oHi[d] = oLo[d] + outType.getDimSize(d);
      }
    SmallVector<linalg::FillOp> borderFills;
    for (Operation *op = call->getNextNode(); op != loop;
         op = op->getNextNode()) {
      if (op == oAlloc || op == oView)
        continue;
      if (auto fill = dyn_cast<linalg::FillOp>(op)) {
        auto slab = fill.getOutputs()[0].getDefiningOp<memref::SubViewOp>();
        if (slab && slab.getSource() == oAlloc.getResult() && oView &&
            slab.getOffsets().empty() &&
            slab.getSourceType().getRank() == outType.getRank()) {
          bool apart = false;
          for (int64_t d = 0; d < outType.getRank(); ++d) {
            int64_t lo = slab.getStaticOffsets()[d];
            int64_t size = slab.getStaticSizes()[d];
            if (ShapedType::isDynamic(size) || ShapedType::isDynamic(oHi[d]))
              continue;
            apart |= lo + size <= oLo[d] || oHi[d] <= lo;
          }
          if (apart) {
            borderFills.push_back(fill);
            continue;
          }
        }
        return failure();
      }
      if (op->getNumRegions() > 0 || mightHaveEffect<MemoryEffects::Write>(op))
        return failure();
    }
    if (usedBetween(out, call, loop))
      return failure();
    // O's allocation and view move before the call: their dynamic sizes
    // must be known there.
    SmallVector<Value> oSizes(oAlloc.getDynamicSizes());
    if (oView)
      llvm::append_range(oSizes, oView.getSizes());
    for (Value size : oSizes) {
      Operation *def = size.getDefiningOp();
      if (def && def->getBlock() == block && !def->isBeforeInBlock(call))
        return failure();
    }
    // O's rows inside a padded buffer whose border columns beside them are
    // fills of +0 (dist-fill-borders): the call zeroes the gap after each
    // row as it writes it (DIST_RT_GEMM_ZERO_GAPS: the right border and the
    // next row's left one), so the right fill goes and the left one keeps
    // only O's first row. Those fills stored one element to a line, after
    // the product had left the lines (4% of MobileNetV2's time). The gap
    // after O's last row must lie in a row of the buffer (a border below).
    linalg::FillOp leftFill, rightFill;
    bool zeroGaps = false;
    if (rowLen > 0 && colDims.size() == 2) {
      int64_t rank = outType.getRank(), dRow = colDims[0], dCol = colDims[1];
      ArrayRef<int64_t> whole = oAlloc.getType().getShape();
      int64_t left = oLo[dCol], right = whole[dCol] - oHi[dCol];
      // Whether `fill` stores +0 to the columns [from, from + width) beside
      // all of O's rows.
      auto besideRows = [&](linalg::FillOp fill, int64_t from, int64_t width) {
        auto slab = fill.getOutputs()[0].getDefiningOp<memref::SubViewOp>();
        auto zero = constantF32(fill.getInputs()[0]);
        if (!zero || *zero != 0.0f || std::signbit(*zero))
          return false;
        // (Border fills are O's allocation's: O is a view of it.)
        for (int64_t d = 0; d < rank; ++d) {
          int64_t off = slab.getStaticOffsets()[d];
          int64_t size = slab.getStaticSizes()[d];
          if (slab.getStaticStrides()[d] != 1 ||
              (d == dCol ? off != from || size != width
                         : off != oLo[d] || !isEqualConstantIntOrValue(
                                                slab.getMixedSizes()[d],
                                                oView.getMixedSizes()[d])))
            return false;
        }
        return true;
      };
      for (linalg::FillOp fill : borderFills) {
        if (left > 0 && !leftFill && besideRows(fill, 0, left))
          leftFill = fill;
        else if (right > 0 && !rightFill && besideRows(fill, oHi[dCol], right))
          rightFill = fill;
      }
      zeroGaps = dCol == rank - 1 && dRow == rank - 2 &&
                 !ShapedType::isDynamic(whole[dRow]) &&
                 !ShapedType::isDynamic(oHi[dRow]) &&
                 rowStride == whole[dCol] && whole[dRow] > oHi[dRow] &&
                 (left == 0 || leftFill) && (right == 0 || rightFill);
    }

    // Rewrite.
    for (Operation *v : sizeViews)
      replaceSizes(v);
    if (call->isBeforeInBlock(oAlloc))
      oAlloc->moveBefore(call);
    if (oView && call->isBeforeInBlock(oView))
      oView->moveBefore(call);
    OpBuilder b(call);
    Location loc = call.getLoc();
    auto i64 = [&](Value index) -> Value {
      return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
    };
    auto constant = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
    };
    // The byte address of `memref`'s first element.
    auto pointer = [&](Value memref) {
      auto md = memref::ExtractStridedMetadataOp::create(b, loc, memref);
      Value base =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
      Value off = arith::MulIOp::create(
          b, loc, md.getOffset(), arith::ConstantIndexOp::create(b, loc, 4));
      return std::make_pair(i64(arith::AddIOp::create(b, loc, base, off)), md);
    };
    // P's size along `d` from what T's allocation was given: T goes.
    auto sizeOfP = [&](int64_t d) -> Value {
      SmallVector<OpFoldResult> given = tAlloc.getMixedSizes();
      Extent e;
      for (int64_t s : pView ? pView.getReassociationIndices()[d]
                             : ReassociationIndices{d}) {
        std::optional<int64_t> c = getConstantIntValue(given[s]);
        e *= c ? Extent{*c, {}} : Extent{1, {cast<Value>(given[s])}};
      }
      return e.values.empty() ? constant(e.factor)
                              : i64(materialize(b, loc, e));
    };
    SmallVector<Value> args;
    for (Value operand : call.getOperands()) {
      auto cast = operand.getDefiningOp<arith::IndexCastOp>();
      auto dim = cast ? cast.getIn().getDefiningOp<memref::DimOp>() : nullptr;
      std::optional<int64_t> index =
          dim ? dim.getConstantIndex() : std::nullopt;
      if (dim && dim.getSource() == p && index)
        operand = sizeOfP(*index);
      args.push_back(operand);
    }
    args[kCPtr] = pointer(out).first;
    if (batchDim >= 0)
      args[kCSb] = constant(cSb);
    args[kCSm] = constant(cSm);
    args[kCSn] = constant(cSn);
    Value zero = constant(0);
    Value biasPtr = zero, biasSi = zero, biasSj = zero;
    if (biasOperand) {
      auto [ptr, md] = pointer(biasOperand->get());
      biasPtr = ptr;
      Value stride = i64(md.getStrides()[biasResult]);
      (biasDim == rowsDim ? biasSi : biasSj) = stride;
    }
    args.append(
        {biasPtr, biasSi, biasSj,
         constant((e->relu ? dist::runtime_abi::kGemmRelu : 0) |
                  (e->clip ? dist::runtime_abi::kGemmClip : 0) |
                  (zeroGaps ? dist::runtime_abi::kGemmZeroGaps : 0) |
                  (e->silu ? dist::runtime_abi::kGemmSilu : 0) |
                  (e->hardSwish ? dist::runtime_abi::kGemmHardSwish : 0) |
                  (residualOperand ? dist::runtime_abi::kGemmAccumulate : 0)),
         arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(e->lo)),
         arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(e->hi)),
         constant(rowLen), constant(rowStride)});
    func::FuncOp callee = dist::codegen::runtimeCallee(
        call->getParentOfType<ModuleOp>(), dist::runtime_abi::kGemmSetActF32,
        b.getFunctionType(TypeRange(ValueRange(args)), {}));
    func::CallOp::create(b, loc, callee, args);
    if (zeroGaps) {
      auto dropFill = [](linalg::FillOp fill) {
        auto slab = fill.getOutputs()[0].getDefiningOp<memref::SubViewOp>();
        fill.erase();
        if (slab && slab->use_empty())
          slab.erase();
      };
      if (rightFill)
        dropFill(rightFill);
      if (leftFill) {
        // The left border of O's first row only.
        auto slab = leftFill.getOutputs()[0].getDefiningOp<memref::SubViewOp>();
        OpBuilder fb(leftFill);
        SmallVector<OpFoldResult> sizes = slab.getMixedSizes();
        sizes[colDims[0]] = fb.getIndexAttr(1);
        auto first = memref::SubViewOp::create(
            fb, leftFill.getLoc(), slab.getSource(), slab.getMixedOffsets(),
            sizes, slab.getMixedStrides());
        linalg::FillOp::create(fb, leftFill.getLoc(), leftFill.getInputs()[0],
                               first.getResult());
        dropFill(leftFill);
      }
    }
    loop.erase();
    if (view && view->use_empty())
      view.erase();
    if (dealloc && later.empty() && !usedBefore)
      dealloc.erase();
    call.erase();
    // What computed T's pointer, strides and sizes for the old call, now
    // unused: latest first.
    llvm::SetVector<Operation *> slice;
    SmallVector<Operation *> work(t.getUsers().begin(), t.getUsers().end());
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (op->getBlock() == block && slice.insert(op))
        work.append(op->getUsers().begin(), op->getUsers().end());
    }
    SmallVector<Operation *> ops(slice.begin(), slice.end());
    llvm::sort(
        ops, [](Operation *x, Operation *y) { return y->isBeforeInBlock(x); });
    // (Not a terminator: func.return is free of effects too, and returns T
    // where T became the function's result after the call.)
    for (Operation *op : ops)
      if (op->use_empty() && isMemoryEffectFree(op) &&
          !op->hasTrait<OpTrait::IsTerminator>())
        op->erase();
    if (later.empty() && !usedBefore) {
      if (!t.use_empty())
        return tAlloc->emitError("dist-fuse-product-epilogues: the product's "
                                 "buffer is still used after the rewrite");
      tAlloc.erase();
    }
    return success();
  }
};

} // namespace
