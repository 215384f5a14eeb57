//===- ContractionsToRuntime.cpp - BLAS calls for f32/f64 contractions ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Rewrites bufferized contraction generics (out += lhs * rhs with at most
// one batch dimension) into calls of the runtime's dist_rt_gemm_f32/f64,
// which take base pointers and element strides and call OpenBLAS. Why a
// library call and not a generated kernel: see Passes.td.
//
// A contraction whose output buffer was filled with +0.0 and not touched
// since calls dist_rt_gemm_set_f32/f64 (out = lhs * rhs, BLAS's beta = 0)
// and the fill goes: the product writes every element of its output, so
// the fill only cost a pass over the buffer and the GEMM a read of it
// (measured: memset was 2% of the GPT-style LM's training step, most of it
// these fills).
//
// With target=cuda (the CUDA target's kernel phase) only the products are
// rewritten, into calls of dist_rt_cuda_gemm_* (cuBLASLt on the device's
// buffers, same arguments).
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"
#include "dist/Codegen/RuntimeABI.h"

#include "Lowering.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "dist-contractions-to-runtime"

namespace mlir::dist {
#define GEN_PASS_DEF_CONTRACTIONSTORUNTIMEPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using mlir::dist::codegen::runtimeFunction;

namespace {

/// The buffer `out` covers whole: `out` itself, or the source of a reshape
/// view (memref.expand_shape or collapse_shape: the same elements) made in
/// `op`'s block, returned in `view`.
Value wholeBuffer(Operation *op, Value out, Operation *&view) {
  view = nullptr;
  Operation *def = out.getDefiningOp();
  if (!def || !isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(def) ||
      def->getBlock() != op->getBlock())
    return out;
  view = def;
  return cast<ViewLikeOpInterface>(def).getViewSource();
}

/// The op that last wrote `out` before `op`, when only `op` observes what
/// it wrote: the last use of `out` before op (in op's block, nested uses
/// counted at their ancestor there). `out` must be a fresh allocation, so
/// that nothing else aliases it, or a reshape view of one (wholeBuffer),
/// whose uses and the allocation's then count alike; so do the uses of
/// other reshape views of the allocation made in the block (one view that
/// CSE made of two identical ones: ResNet-50's 1x1 and 3x3 products into
/// one reused buffer, each read through it by its epilogue). Any other
/// view made before op could be read in between: null then, and
/// otherwise.
Operation *lastUseBefore(Operation *op, Value out) {
  Operation *view;
  Value whole = wholeBuffer(op, out, view);
  if (!whole.getDefiningOp<memref::AllocOp>())
    return {};
  Block *block = op->getBlock();
  Operation *last = nullptr;
  SmallVector<Value, 4> values{whole};
  if (view)
    values.push_back(out);
  for (size_t i = 0; i < values.size(); ++i) {
    Value v = values[i];
    for (Operation *user : v.getUsers()) {
      if (user == view)
        continue;
      Operation *at = block->findAncestorOpInBlock(*user);
      if (!at)
        return {};
      if (at == op || !at->isBeforeInBlock(op))
        continue;
      if (v == whole && user->getBlock() == block &&
          isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(user)) {
        values.push_back(user->getResult(0));
        continue;
      }
      // The metadata that an earlier runtime call of this pass took the
      // buffer's pointer from (its base buffer unused) is no view: it
      // counts as a use where it is, like the call it feeds.
      auto md = dyn_cast<memref::ExtractStridedMetadataOp>(user);
      if (isa<ViewLikeOpInterface>(user) &&
          !(md && md.getBaseBuffer().use_empty()))
        return {};
      if (!last || last->isBeforeInBlock(at))
        last = at;
    }
  }
  return last;
}

/// The linalg.fill of +0.0 into `out` (or into the whole buffer it views,
/// see wholeBuffer) that only `op` observes (see lastUseBefore). Null
/// otherwise.
linalg::FillOp zeroFillConsumedBy(Operation *op, Value out) {
  Operation *view;
  Value whole = wholeBuffer(op, out, view);
  auto fill = dyn_cast_or_null<linalg::FillOp>(lastUseBefore(op, out));
  if (!fill ||
      (fill.getOutputs().front() != whole && fill.getOutputs().front() != out))
    return {};
  auto cst = fill.getInputs().front().getDefiningOp<arith::ConstantOp>();
  auto value = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
  if (!value || !value.getValue().isPosZero())
    return {};
  return fill;
}

/// The first op after `op` in its block that uses `v` (nested uses count
/// at their ancestor in the block), or null.
Operation *nextUseAfter(Operation *op, Value v) {
  Block *block = op->getBlock();
  Operation *next = nullptr;
  for (Operation *user : v.getUsers()) {
    Operation *at = block->findAncestorOpInBlock(*user);
    if (!at || at == op || at->isBeforeInBlock(op))
      continue;
    if (!next || at->isBeforeInBlock(next))
      next = at;
  }
  return next;
}

/// The activation a direct convolution call applies as it stores its
/// outputs (dist_rt/kernels.h): DIST_RT_CONV_RELU, then DIST_RT_CONV_CLIP
/// with its bounds.
struct ConvActivation {
  int64_t flags = 0;
  double lo = -INFINITY, hi = INFINITY;
  /// Whether the output's old value (a residual) is added first
  /// (DIST_RT_CONV_ACCUMULATE).
  bool residual = false;
};

/// The f32 value of `v` when an arith.constant defines it (in a body or
/// captured from outside).
std::optional<double> f32Constant(Value v) {
  auto cst = v.getDefiningOp<arith::ConstantOp>();
  auto value = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
  if (!value || !value.getType().isF32())
    return std::nullopt;
  return value.getValueAsDouble();
}

/// The activation `g` computes when it is elementwise on `in` alone
/// (identity maps, one output) and its body is, in this order and each at
/// most once: a SiLU (siluOf: EfficientNet's Sigmoid and Mul) or a
/// HardSwish (hardSwishOf: MobileNetV3's); a ReLU,
/// maximumf(x, +0.0); ONNX Clip's lower bound,
/// select(x < lo, lo, x); its upper bound, select(x > hi, hi, x) (ordered
/// compares, constant bounds: LowerElementwise's Clip). Null otherwise.
/// With `residual`, `g` reads it as well and writes it in place, and its
/// body first adds the two (a residual connection's Add, the activation
/// after it optional).
std::optional<ConvActivation> activationOf(linalg::GenericOp g, Value in,
                                           Value residual = {}) {
  unsigned inputs = residual ? 2 : 1;
  if (g.getNumDpsInputs() != inputs || g.getNumDpsInits() != 1 ||
      g.getNumParallelLoops() != g.getNumLoops() ||
      !llvm::all_of(g.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return std::nullopt;
  unsigned at = g.getDpsInputOperand(0)->get() == in ? 0 : 1;
  if (at >= inputs || g.getDpsInputOperand(at)->get() != in ||
      (residual &&
       (g.getDpsInputOperand(1 - at)->get() != residual ||
        g.getDpsInitOperand(0)->get() != residual || in == residual)))
    return std::nullopt;
  Block &body = g.getRegion().front();
  ConvActivation act;
  Value x = body.getArgument(at);
  Operation *residualAdd = nullptr;
  if (residual) {
    // The Add first (after any constants), of the two inputs' values.
    auto first = llvm::find_if(body.without_terminator(), [](Operation &op) {
      return !isa<arith::ConstantOp>(op);
    });
    auto add = first == body.without_terminator().end()
                   ? arith::AddFOp()
                   : dyn_cast<arith::AddFOp>(*first);
    Value r = body.getArgument(1 - at);
    if (!add ||
        !((add.getLhs() == x && add.getRhs() == r) ||
          (add.getLhs() == r && add.getRhs() == x)) ||
        !body.getArgument(inputs).use_empty())
      return std::nullopt;
    act.residual = true;
    residualAdd = add;
    x = add.getResult();
  }
  // 0: nothing yet, 1: after the ReLU, 2: after lo, 3: after hi.
  int stage = 0;
  // The ops of the SiLU or HardSwish, once read.
  llvm::SmallPtrSet<Operation *, 8> gate;
  for (auto it = body.begin(); &*it != body.getTerminator(); ++it) {
    Operation *op = &*it;
    if (isa<arith::ConstantOp>(op) || gate.contains(op) || op == residualAdd)
      continue;
    if (isa<arith::NegFOp, arith::MulFOp>(op) && stage == 0 && gate.empty()) {
      SmallVector<Operation *> chain;
      bool silu = isa<arith::NegFOp>(op);
      arith::MulFOp mul = silu ? dist::codegen::siluOf(x, &chain)
                               : dist::codegen::hardSwishOf(x, &chain);
      if (!mul)
        return std::nullopt;
      gate.insert(chain.begin(), chain.end());
      act.flags |= silu ? dist::runtime_abi::kConvSilu
                        : dist::runtime_abi::kConvHardSwish;
      x = mul.getResult();
      continue;
    }
    if (auto max = dyn_cast<arith::MaximumFOp>(op)) {
      Value other = max.getLhs() == x   ? max.getRhs()
                    : max.getRhs() == x ? max.getLhs()
                                        : Value();
      std::optional<double> zero = other ? f32Constant(other) : std::nullopt;
      if (stage != 0 || !zero || *zero != 0.0 || std::signbit(*zero))
        return std::nullopt;
      act.flags |= dist::runtime_abi::kConvRelu;
      stage = 1;
      x = max.getResult();
      continue;
    }
    auto cmp = dyn_cast<arith::CmpFOp>(op);
    auto next = std::next(it);
    auto sel = cmp && &*next != body.getTerminator()
                   ? dyn_cast<arith::SelectOp>(&*next)
                   : arith::SelectOp();
    if (!cmp || !sel || cmp.getLhs() != x || sel.getCondition() != cmp ||
        sel.getFalseValue() != x || sel.getTrueValue() != cmp.getRhs() ||
        !cmp->hasOneUse())
      return std::nullopt;
    std::optional<double> bound = f32Constant(cmp.getRhs());
    if (!bound || std::isnan(*bound))
      return std::nullopt;
    if (cmp.getPredicate() == arith::CmpFPredicate::OLT && stage < 2) {
      act.lo = *bound;
      stage = 2;
    } else if (cmp.getPredicate() == arith::CmpFPredicate::OGT && stage < 3) {
      act.hi = *bound;
      stage = 3;
    } else {
      return std::nullopt;
    }
    act.flags |= dist::runtime_abi::kConvClip;
    x = sel.getResult();
    ++it;
  }
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if ((!act.flags && !act.residual) || yield.getOperand(0) != x)
    return std::nullopt;
  return act;
}

/// How a convolution `conv` finds its output `out` (NCHW, or a reshape
/// view of the NCHW buffer, see wholeBuffer) when the runtime call can
/// take the initialisation over: a zero fill or a broadcast of a
/// per-filter bias (the lowering's init) that only `conv` observes (see
/// lastUseBefore). `op` is that init (null when the call must accumulate
/// into what is there), `bias` the bias buffer if any.
struct ConvInit {
  Operation *op = nullptr;
  Value bias;
  bool overwrite = false;
};

ConvInit convInit(Operation *conv, Value out, bool channelsLast = false) {
  ConvInit ci;
  if (linalg::FillOp fill = zeroFillConsumedBy(conv, out)) {
    ci.op = fill;
    ci.overwrite = true;
    return ci;
  }
  Operation *view;
  Value whole = wholeBuffer(conv, out, view);
  auto g = dyn_cast_or_null<linalg::GenericOp>(lastUseBefore(conv, out));
  if (!g)
    return ci;
  MLIRContext *ctx = conv->getContext();
  // The channels: dim 1 of NCHW, the last of channels-last.
  int64_t rank = cast<MemRefType>(whole.getType()).getRank();
  AffineMap channel = AffineMap::get(
      rank, 0, {getAffineDimExpr(channelsLast ? rank - 1 : 1, ctx)}, ctx);
  Block &body = g.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 ||
      g.getDpsInitOperand(0)->get() != whole ||
      g.getNumParallelLoops() != rank || g.getNumLoops() != rank ||
      g.getIndexingMapsArray()[0] != channel ||
      !g.getIndexingMapsArray()[1].isIdentity() ||
      body.getOperations().size() != 1 ||
      yield.getOperand(0) != body.getArgument(0))
    return ci;
  Value b = g.getDpsInputOperand(0)->get();
  auto bt = cast<MemRefType>(b.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!bt.getElementType().isF32() ||
      failed(bt.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return ci;
  ci.op = g;
  ci.bias = b;
  ci.overwrite = true;
  return ci;
}

/// Builds the i64 arguments of a runtime call at `b`'s insertion point.
struct CallArgs {
  OpBuilder &b;
  Location loc;

  Value i64(Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  }
  Value constant(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
  }
  Value dim(Value memref, int64_t i) {
    return i64(memref::DimOp::create(b, loc, memref, i));
  }
  /// The byte address of `memref`'s first element (offset included) for
  /// elements of `elemBytes` bytes; appends its element strides.
  Value pointer(Value memref, int64_t elemBytes, SmallVector<Value> &strides) {
    auto md = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    Value off = arith::MulIOp::create(
        b, loc, md.getOffset(),
        arith::ConstantIndexOp::create(b, loc, elemBytes));
    for (Value st : md.getStrides())
      strides.push_back(i64(st));
    return i64(arith::AddIOp::create(b, loc, base, off));
  }
};

struct ContractionsToRuntimePass
    : public dist::impl::ContractionsToRuntimePassBase<
          ContractionsToRuntimePass> {
  using Base::Base;

  /// Whether the products go to the device library (target=cuda).
  bool cuda = false;
  /// The candidate generics a rewrite erased (never visited again).
  DenseSet<Operation *> erased;

  /// Erases `op`, remembered in `erased`.
  void eraseOp(Operation *op) {
    erased.insert(op);
    op->erase();
  }

  // A module pass: the rewrite declares the runtime functions at module
  // level, which a function pass running in parallel must not do.
  void runOnOperation() override {
    if (target != "host" && target != "cuda") {
      getOperation().emitError()
          << "dist-contractions-to-runtime: unknown target '" << target
          << "' (host or cuda)";
      return signalPassFailure();
    }
    cuda = target == "cuda";
    SmallVector<linalg::GenericOp> candidates;
    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    SmallVector<linalg::Conv2DNgchwGfchwOp> groupedConvs;
    getOperation().walk([&](Operation *op) {
      if (auto g = dyn_cast<linalg::GenericOp>(op))
        candidates.push_back(g);
      else if (auto c = dyn_cast<linalg::Conv2DNchwFchwOp>(op))
        convs.push_back(c);
      else if (auto gc = dyn_cast<linalg::Conv2DNgchwGfchwOp>(op))
        groupedConvs.push_back(gc);
    });
    // Channels-last convolutions last to first: a layer's padded input
    // becomes a dense image (takePadding) before the previous layer's call
    // looks for its activation, which then writes that image and goes into
    // the call (MobileNetV2's ReLU6 before each depthwise layer: 12% of a
    // one-thread inference as loops of their own, EPYC). A rewrite erases
    // generics further on (activations) and before (inits): `erased`.
    // Max poolings first: a padded input becomes a dense image that the
    // layer before (the stem's ReLU after its convolution) then writes.
    if (!cuda)
      for (linalg::GenericOp op : candidates)
        if (!erased.contains(op) && succeeded(rewriteChannelsLastMaxPool(op)))
          ++numCalls;
    if (!cuda)
      for (linalg::GenericOp op : llvm::reverse(candidates))
        if (!erased.contains(op) && succeeded(rewriteChannelsLastConv(op)))
          ++numCalls;
    for (linalg::GenericOp op : candidates)
      if (!erased.contains(op) &&
          ((!cuda && succeeded(rewriteWeightGrad(op))) ||
           succeeded(rewrite(op))))
        ++numCalls;
    if (cuda)
      return;
    for (linalg::Conv2DNchwFchwOp op : convs)
      if (succeeded(rewriteConv(op)))
        ++numCalls;
    for (linalg::Conv2DNgchwGfchwOp op : groupedConvs)
      if (succeeded(rewriteGroupedConv(op)))
        ++numCalls;
  }

  /// Whether `in` and `out` have unit column strides and `wt` is
  /// contiguous, all f32, as the direct convolution calls need.
  static bool directOperands(Value in, Value wt, Value out) {
    for (Value v : {in, wt, out})
      if (!cast<MemRefType>(v.getType()).getElementType().isF32())
        return false;
    for (Value v : {in, out}) {
      SmallVector<int64_t> strides;
      int64_t offset;
      if (failed(cast<MemRefType>(v.getType())
                     .getStridesAndOffset(strides, offset)) ||
          strides.back() != 1)
        return false;
    }
    return cast<MemRefType>(wt.getType()).getLayout().isIdentity() &&
           out != in && out != wt;
  }

  /// The arguments of dist_rt_conv2d_f32 (in [N, C, H, W], wt [F, C, KH,
  /// KW], out [N, F, OH, OW]) or, `grouped`, of dist_rt_conv2d_group_f32
  /// (a group dim after N, first in wt), with out's pointer and strides
  /// taken from `dst` (out's shape; the buffer the call writes).
  static SmallVector<Value>
  convArgs(CallArgs &call, Value in, Value wt, Value out, Value dst, Value bias,
           ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
           const ConvActivation &act, bool accumulate, bool grouped) {
    SmallVector<Value> inS, wS, outS, biasS;
    Value inPtr = call.pointer(in, 4, inS), wPtr = call.pointer(wt, 4, wS),
          outPtr = call.pointer(dst, 4, outS);
    Value biasPtr = bias ? call.pointer(bias, 4, biasS) : call.constant(0);
    int64_t g = grouped ? 1 : 0;
    auto dim = [&](Value v, int64_t i) { return call.dim(v, i); };
    SmallVector<Value> args;
    if (grouped)
      args.push_back(dim(out, 1));
    args.append({dim(out, 0), dim(in, 1 + g), dim(in, 2 + g), dim(in, 3 + g),
                 dim(out, 1 + g), dim(wt, 2 + g), dim(wt, 3 + g)});
    for (int64_t v : {strides[0], strides[1], dilations[0], dilations[1]})
      args.push_back(call.constant(v));
    args.append({dim(out, 2 + g), dim(out, 3 + g), inPtr});
    // Every stride but the columns' (unit, checked by directOperands).
    args.append(inS.begin(), inS.end() - 1);
    args.append({wPtr, biasPtr, outPtr});
    args.append(outS.begin(), outS.end() - 1);
    // The clip's bounds (f32), then the flags.
    for (double bound : {act.lo, act.hi})
      args.push_back(
          arith::ConstantFloatOp::create(call.b, call.loc, call.b.getF32Type(),
                                         APFloat(static_cast<float>(bound))));
    args.push_back(call.constant(
        act.flags | (accumulate ? dist::runtime_abi::kConvAccumulate : 0)));
    return args;
  }

  /// The elementwise generic that next reads the grouped convolution
  /// `op`'s output `out` (a view splitting the channels of a whole NCHW
  /// buffer), reading the whole buffer or a view that merges `out`'s
  /// groups again (the same elements, the same layout: `read`), and writing
  /// it back in place (`inPlace`) or another buffer; null when some other
  /// op uses them first. With `allowResidual`, the generic may read a
  /// second buffer that it writes in place (`residual`: a residual
  /// connection's Add written over its other operand).
  static linalg::GenericOp activationAfterGrouped(Operation *op, Value out,
                                                  bool &inPlace, Value &read,
                                                  Value &residual,
                                                  bool allowResidual) {
    Operation *view;
    Value whole = wholeBuffer(op, out, view);
    if (!view)
      return {};
    SmallVector<Value, 2> aliases{whole};
    for (Operation *user : out.getUsers())
      if (auto merged = dyn_cast<memref::CollapseShapeOp>(user))
        if (merged->getBlock() == op->getBlock() &&
            merged.getType() == whole.getType())
          aliases.push_back(merged.getResult());
    auto touches = [&](Operation *other) {
      bool found = false;
      other->walk([&](Operation *nested) {
        for (Value v : nested->getOperands())
          if ((v == out && !isa<memref::CollapseShapeOp>(nested)) ||
              llvm::is_contained(aliases, v))
            found = true;
      });
      return found;
    };
    for (Operation *other = op->getNextNode(); other;
         other = other->getNextNode()) {
      if (!touches(other))
        continue;
      auto g = dyn_cast<linalg::GenericOp>(other);
      if (!g || g.getNumDpsInits() != 1)
        return {};
      Value init = g.getDpsInitOperand(0)->get();
      read = residual = Value();
      if (g.getNumDpsInputs() == 1 &&
          llvm::is_contained(aliases, g.getDpsInputOperand(0)->get())) {
        read = g.getDpsInputOperand(0)->get();
      } else if (g.getNumDpsInputs() == 2 && allowResidual) {
        for (unsigned i : {0u, 1u}) {
          Value a = g.getDpsInputOperand(i)->get(),
                b = g.getDpsInputOperand(1 - i)->get();
          if (llvm::is_contained(aliases, a) && b == init &&
              !llvm::is_contained(aliases, b) &&
              dist::codegen::rootBuffer(b) != dist::codegen::rootBuffer(a)) {
            read = a;
            residual = b;
          }
        }
      }
      if (!read)
        return {};
      inPlace = llvm::is_contained(aliases, init);
      return g;
    }
    return {};
  }

  /// Whether each of `values` is dead after `act`: next used by a dealloc
  /// or an op that overwrites it without reading, or not at all; or its
  /// buffer's contents are (wholeBufferDeadAfter).
  static bool deadAfter(Operation *act, ArrayRef<Value> values) {
    for (Value v : values)
      if (Operation *after = nextUseAfter(act, v))
        if (!isa<memref::DeallocOp>(after) &&
            !dist::codegen::overwritesWithoutReading(after, v) &&
            !wholeBufferDeadAfter(act, v))
          return false;
    return true;
  }

  /// Whether the contents of the allocation under `v` are dead after `act`:
  /// the first op after it that uses the allocation through any of its
  /// views (making a view or reading a size is no use) deallocates it or
  /// writes all of it without reading (overwritesWithoutReading, through
  /// the allocation or a reshape of it). A view made before `act` may still
  /// be read after that write (MobileNetV2's expansion output, whose buffer
  /// the depthwise layer's ReLU6 reuses before the projection reads it).
  static bool wholeBufferDeadAfter(Operation *act, Value v) {
    Value root = dist::codegen::rootBuffer(v);
    if (!root.getDefiningOp<memref::AllocOp>())
      return false;
    Block *block = act->getBlock();
    Operation *first = nullptr;
    Value firstAlias;
    SmallVector<std::pair<Value, bool>> aliases{{root, true}};
    for (size_t i = 0; i < aliases.size(); ++i) {
      auto [alias, whole] = aliases[i];
      for (OpOperand &use : alias.getUses()) {
        Operation *user = use.getOwner();
        bool marked = isa<memref::ExpandShapeOp>(user) &&
                      user->hasAttr(dist::codegen::kCallOverwritesAttr);
        if (auto view = dyn_cast<ViewLikeOpInterface>(user);
            view && !marked && view.getViewSource() == alias) {
          aliases.push_back(
              {user->getResult(0),
               whole &&
                   isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(user)});
          continue;
        }
        if (isa<memref::DimOp>(user))
          continue;
        Operation *at = block->findAncestorOpInBlock(*user);
        if (!at || at == act || at->isBeforeInBlock(act))
          continue;
        if (!first || at->isBeforeInBlock(first)) {
          first = at;
          firstAlias = whole && at == user ? alias : Value();
        } else if (at == first) {
          firstAlias = Value(); // Used twice: it may read another view.
        }
      }
    }
    return !first ||
           (firstAlias &&
            (isa<memref::DeallocOp>(first) ||
             dist::codegen::overwritesWithoutReading(first, firstAlias)));
  }

  /// Whether a convolution call at the place of the activation `act` after
  /// `op` can still read `operands` (null ones skipped) and write `target`:
  /// `target` is f32 with unit column strides, in another buffer than the
  /// operands, and nothing between the two could write them (only ops
  /// without memory effects, views, allocations and fills of other
  /// buffers).
  static bool canWriteAtActivation(Operation *op, Operation *act, Value target,
                                   ArrayRef<Value> operands) {
    auto type = cast<MemRefType>(target.getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (!type.getElementType().isF32() ||
        failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return false;
    SmallVector<Value> operandRoots;
    for (Value v : operands)
      if (v)
        operandRoots.push_back(dist::codegen::rootBuffer(v));
    if (llvm::is_contained(operandRoots, dist::codegen::rootBuffer(target)))
      return false;
    for (Operation *between = op->getNextNode(); between != act;
         between = between->getNextNode()) {
      if (isa<memref::AllocOp, memref::SubViewOp>(between) ||
          isMemoryEffectFree(between))
        continue;
      auto fill = dyn_cast<linalg::FillOp>(between);
      if (fill && !llvm::is_contained(
                      operandRoots,
                      dist::codegen::rootBuffer(fill.getOutputs().front())))
        continue;
      return false;
    }
    return true;
  }

  /// The NCHW buffer that the activation `act` after the grouped
  /// convolution `op` writes, when the call can write it instead of `out`
  /// (fuseActivation's conditions, for the whole buffer `out` splits:
  /// the call does not read it, it is dead after `act`, the destination is
  /// another buffer with unit column strides whose split by groups is a
  /// view, and nothing between the two could write the operands); null
  /// otherwise.
  Value groupedDestination(Operation *op, Value in, Value wt,
                           const ConvInit &ci, Value out, linalg::GenericOp act,
                           Value read) {
    Operation *view;
    Value whole = wholeBuffer(op, out, view);
    auto split = dyn_cast_or_null<memref::ExpandShapeOp>(view);
    Value target = act.getDpsInitOperand(0)->get();
    auto type = cast<MemRefType>(target.getType());
    if (!ci.overwrite || !split ||
        type.getShape() != split.getSrcType().getShape() ||
        !deadAfter(act, {whole, read, out}) ||
        !canWriteAtActivation(op, act, target, {in, wt, whole, ci.bias}) ||
        failed(memref::ExpandShapeOp::computeExpandedType(
            type, split.getResultType().getShape(),
            split.getReassociationIndices())))
      return {};
    return target;
  }

  /// The activation that the call of a convolution `op` whose output
  /// `out` splits a whole buffer's channels takes over (`act`, with its op
  /// `next`, which goes once the call is made; none when it stays), where
  /// the call goes and the view of the buffer it writes (rewriteGroupedConv's
  /// rule; `denseTarget`: the activation's buffer only when dense, as
  /// dist_rt_conv2d_nhwc_f32 needs): at the convolution's place (its
  /// operands are read when they were, and nothing reads the buffer before
  /// the activation did), or at the activation's when the call writes its
  /// buffer. The view is marked kCallOverwritesAttr when the call writes
  /// all of it without reading. With `allowResidual` (a call that can
  /// accumulate with its bias and activation), the activation may be a
  /// residual connection's Add written over its other operand, which the
  /// call then accumulates onto (act->residual).
  std::pair<Operation *, Value>
  groupedCallPlace(Operation *op, Value in, Value wt, Value out,
                   const ConvInit &ci, bool denseTarget, bool allowResidual,
                   linalg::GenericOp &next,
                   std::optional<ConvActivation> &act) {
    bool inPlace = false;
    Value read, residual;
    next =
        activationAfterGrouped(op, out, inPlace, read, residual, allowResidual);
    act.reset();
    if (next)
      act = activationOf(next, read, residual);
    Operation *at = op;
    Value dst = out;
    if (act && !inPlace) {
      Value target = groupedDestination(op, in, wt, ci, out, next, read);
      if (target && (!denseTarget || denseF32(target))) {
        dst = target;
        at = next;
      } else {
        act.reset();
      }
    }
    OpBuilder b(at);
    Location loc = op->getLoc();
    if (at != op) {
      Operation *view;
      wholeBuffer(op, out, view);
      auto split = cast<memref::ExpandShapeOp>(view);
      auto type = memref::ExpandShapeOp::computeExpandedType(
          cast<MemRefType>(dst.getType()), split.getResultType().getShape(),
          split.getReassociationIndices());
      auto whole = memref::ExpandShapeOp::create(
          b, loc, *type, dst, split.getReassociationIndices());
      // For FuseProductEpilogues (a 1x1 product's buffer reused here): the
      // call writes all of it without reading (overwritesWithoutReading),
      // unless it adds a residual there.
      if (!act->residual)
        whole->setAttr(dist::codegen::kCallOverwritesAttr, b.getUnitAttr());
      return {at, whole};
    }
    if (ci.overwrite) {
      // The call writes all of `out` without reading it. Where `out` splits
      // a whole allocation that bufferization reused (a 1x1 product's,
      // dead once its epilogue loop read it: ShuffleNetV2's branches with
      // a dynamic batch), the call writes a view of it made here and
      // marked so, as above.
      auto split = out.getDefiningOp<memref::ExpandShapeOp>();
      if (split && split.getSrc().getDefiningOp<memref::AllocOp>()) {
        auto whole = memref::ExpandShapeOp::create(
            b, loc, split.getResultType(), split.getSrc(),
            split.getReassociationIndices(), split.getMixedOutputShape());
        whole->setAttr(dist::codegen::kCallOverwritesAttr, b.getUnitAttr());
        return {at, whole};
      }
    }
    return {at, dst};
  }

  /// A bufferized f32 linalg.conv_2d_ngchw_gfchw (a grouped or depthwise
  /// convolution, see LowerLinearAlgebra.cpp) becomes a call of
  /// dist_rt_conv2d_group_f32, under rewriteConv's conditions on the
  /// operands. Its output is a memref.expand_shape splitting the channels
  /// of an NCHW buffer; when that buffer is fresh and its init (a zero fill
  /// or a bias broadcast) only this op observes, the call writes it
  /// instead, as rewriteConv does. An activation that next reads the whole
  /// NCHW buffer goes into the call too: when it writes it in place, the
  /// call applies it; when it writes another NCHW buffer (MobileNetV2's
  /// ReLU6 after each depthwise layer, into the next product's input:
  /// 8% of a one-thread inference as loops of their own, Xeon), the call
  /// writes that one, at the activation's place, under fuseActivation's
  /// conditions.
  LogicalResult rewriteGroupedConv(linalg::Conv2DNgchwGfchwOp op) {
    if (!op.hasPureBufferSemantics())
      return failure();
    Value in = op.getDpsInputOperand(0)->get();
    Value wt = op.getDpsInputOperand(1)->get();
    Value out = op.getDpsInitOperand(0)->get();
    if (!directOperands(in, wt, out))
      return failure();

    ConvInit ci = convInit(op, out);
    linalg::GenericOp next;
    std::optional<ConvActivation> act;
    auto [at, dst] =
        groupedCallPlace(op, in, wt, out, ci, /*denseTarget=*/false,
                         /*allowResidual=*/false, next, act);
    OpBuilder b(at);
    CallArgs call{b, op.getLoc()};
    SmallVector<int64_t> strides(op.getStrides().getValues<int64_t>());
    SmallVector<int64_t> dilations(op.getDilations().getValues<int64_t>());
    SmallVector<Value> args = convArgs(
        call, in, wt, out, dst, ci.bias, strides, dilations,
        act.value_or(ConvActivation()), !ci.overwrite, /*grouped=*/true);
    func::FuncOp callee =
        runtimeFunction(op, dist::runtime_abi::kConv2dGroupF32, args);
    func::CallOp::create(b, call.loc, callee, args);
    op.erase();
    if (ci.op && ci.overwrite)
      ci.op->erase();
    if (act)
      next.erase();
    return success();
  }

  /// Whether `v` is a dense row-major f32 array (its strides those of its
  /// shape), as dist_rt_conv2d_nhwc_f32 needs (oneDNN runs strided images
  /// on its reference loops).
  static bool denseF32(Value v) {
    auto t = cast<MemRefType>(v.getType());
    if (!t.getElementType().isF32())
      return false;
    if (t.getLayout().isIdentity())
      return true;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(t.getStridesAndOffset(strides, offset)))
      return false;
    int64_t expect = 1;
    for (int64_t i = t.getRank() - 1; i >= 0; --i) {
      if (strides[i] != expect)
        return false;
      if (i > 0 && ShapedType::isDynamic(t.getDimSize(i)))
        return false;
      expect *= i > 0 ? t.getDimSize(i) : 1;
    }
    return true;
  }

  /// An image that dist_rt_conv2d_nhwc_f32 (or 3-D) pads itself
  /// (takePadding): the padding before and after each spatial dim.
  struct OwnPadding {
    Value image;
    SmallVector<int64_t> lo, hi;
    /// The ops of the padded buffer that go once the call is made.
    SmallVector<Operation *> dead;
  };

  /// Where the channels-last convolution `conv` reads `in`, a view
  /// splitting the channels of a fresh buffer P [N, Hp, Wp, C] (or where a
  /// channels-last pooling reads P itself) that nothing but fills of
  /// `border` (+0.0: a convolution's padding, dist-fill-borders'; -inf: a
  /// max pooling's) and one op writing its interior without reading it (an
  /// elementwise linalg op: the previous layer's activation, a transpose;
  /// or a copy) touches, that op writes a dense buffer of the interior's
  /// shape instead, made here, and the call reads it with P's borders as
  /// its padding: oneDNN pads by itself, and an image inside a padded
  /// buffer would be strided (see denseF32). Returns nothing (and changes
  /// nothing) when `in` is not such a buffer.
  std::optional<OwnPadding> takePadding(linalg::GenericOp conv, Value in,
                                        double border = 0.0) {
    auto split = in.getDefiningOp<memref::ExpandShapeOp>();
    auto alloc = split ? split.getSrc().getDefiningOp<memref::AllocOp>()
                       : in.getDefiningOp<memref::AllocOp>();
    if (!alloc || (split && !split->hasOneUse()) ||
        alloc->getBlock() != conv->getBlock() ||
        !alloc.getType().getLayout().isIdentity() ||
        alloc.getType().getRank() < 3)
      return std::nullopt;
    OwnPadding own;
    memref::SubViewOp interior;
    Operation *writer = nullptr;
    SmallVector<Operation *> deallocs;
    for (Operation *user : alloc->getUsers()) {
      if (split ? user == split : user == conv)
        continue;
      if (isa<memref::DeallocOp>(user)) {
        deallocs.push_back(user);
        continue;
      }
      auto view = dyn_cast<memref::SubViewOp>(user);
      if (!view || view->getBlock() != conv->getBlock() ||
          !view->isBeforeInBlock(conv))
        return std::nullopt;
      bool zeroFills = !view->use_empty();
      for (Operation *viewUser : view->getUsers()) {
        auto fill = dyn_cast<linalg::FillOp>(viewUser);
        std::optional<double> value =
            fill ? f32Constant(fill.getInputs()[0]) : std::nullopt;
        zeroFills = zeroFills && value && *value == border &&
                    std::signbit(*value) == std::signbit(border) &&
                    fill.getOutputs()[0] == view.getResult();
      }
      if (zeroFills) {
        for (Operation *fill : view->getUsers())
          own.dead.push_back(fill);
        own.dead.push_back(view);
        continue;
      }
      if (interior || !view->hasOneUse())
        return std::nullopt;
      Operation *w = *view->getUsers().begin();
      if (auto g = dyn_cast<linalg::LinalgOp>(w)) {
        if (g.getNumDpsInits() != 1 ||
            g.getDpsInitOperand(0)->get() != view.getResult() ||
            g.getNumReductionLoops() != 0 ||
            !g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity() ||
            g.payloadUsesValueFromOperand(g.getDpsInitOperand(0)) ||
            llvm::is_contained(g.getDpsInputs(), view.getResult()))
          return std::nullopt;
      } else if (auto copy = dyn_cast<memref::CopyOp>(w)) {
        if (copy.getTarget() != view.getResult() ||
            copy.getSource() == view.getResult())
          return std::nullopt;
      } else {
        return std::nullopt;
      }
      if (w->getBlock() != conv->getBlock() || !w->isBeforeInBlock(conv))
        return std::nullopt;
      interior = view;
      writer = w;
    }
    if (!interior)
      return std::nullopt;
    // The interior: all images and channels, [lo, lo + I) along each
    // spatial dim (rows and columns, and depth in 3-D), unit strides.
    MemRefType pType = alloc.getType();
    auto iType = cast<MemRefType>(interior.getType());
    ArrayRef<int64_t> offsets = interior.getStaticOffsets();
    ArrayRef<int64_t> sizes = interior.getStaticSizes();
    int64_t last = pType.getRank() - 1;
    if (llvm::any_of(interior.getStaticStrides(),
                     [](int64_t st) { return st != 1; }) ||
        llvm::any_of(offsets, ShapedType::isDynamic) || offsets[0] != 0 ||
        offsets[last] != 0 || sizes[last] != pType.getDimSize(last) ||
        llvm::any_of(sizes.slice(1, last - 1), ShapedType::isDynamic) ||
        llvm::any_of(pType.getShape().drop_front(), ShapedType::isDynamic) ||
        ShapedType::isDynamic(sizes[0]) != pType.isDynamicDim(0) ||
        (!pType.isDynamicDim(0) && sizes[0] != pType.getDimSize(0)))
      return std::nullopt;
    for (int64_t i = 1; i < last; ++i) {
      own.lo.push_back(offsets[i]);
      own.hi.push_back(pType.getDimSize(i) - sizes[i] - offsets[i]);
    }
    // The dense image, where P was made; the writer writes it.
    OpBuilder b(alloc);
    auto denseType = MemRefType::get(iType.getShape(), pType.getElementType());
    Value image = memref::AllocOp::create(b, alloc.getLoc(), denseType,
                                          alloc.getDynamicSizes(),
                                          b.getI64IntegerAttr(64));
    if (auto g = dyn_cast<linalg::LinalgOp>(writer))
      g.getDpsInitOperand(0)->set(image);
    else
      cast<memref::CopyOp>(writer).getTargetMutable().assign(image);
    for (Operation *d : deallocs) {
      OpBuilder at(d);
      memref::DeallocOp::create(at, d->getLoc(), image);
      own.dead.push_back(d);
    }
    own.dead.push_back(interior);
    if (split)
      own.dead.push_back(split);
    own.dead.push_back(alloc);
    own.image = image;
    return own;
  }

  /// The channels-last convolution generics of LowerLinearAlgebra.cpp, 2-D
  /// or 3-D (kChannelsLastConvAttr: input [N, spatial..., G, Cg] already
  /// padded, weight [G, Fg, Cg, K...], output [N, O..., G, Fg]; or
  /// kChannelsLastConvTransposeAttr: input [N, I..., G, Cg], weight [G, Cg,
  /// Fg, K...], output the whole [N, Ofull..., G, Fg]; each a view of a
  /// dense array) become a call of dist_rt_conv2d_nhwc_f32 or
  /// dist_rt_conv3d_nhwc_f32 with no padding of its own (kConvTransposed
  /// for the second). Its output init (a zero fill or the bias broadcast
  /// along the channels) and an activation that next reads the whole
  /// output go into the call as for rewriteGroupedConv, the activation's
  /// buffer only when dense.
  LogicalResult rewriteChannelsLastConv(linalg::GenericOp op) {
    bool transposed =
        op->hasAttr(dist::codegen::kChannelsLastConvTransposeAttr);
    auto geometry = op->getAttrOfType<DenseI64ArrayAttr>(
        transposed ? dist::codegen::kChannelsLastConvTransposeAttr
                   : dist::codegen::kChannelsLastConvAttr);
    int64_t s = geometry ? geometry.size() / 2 : 0;
    if (!geometry || (s != 2 && s != 3) || geometry.size() != 2 * s ||
        !op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1 || op.getNumLoops() != 2 * s + 4 ||
        !dist::codegen::isMulAddBody(op))
      return failure();
    Value in = op.getDpsInputOperand(0)->get();
    Value wt = op.getDpsInputOperand(1)->get();
    Value out = op.getDpsInitOperand(0)->get();
    for (Value v : {in, wt, out})
      if (cast<MemRefType>(v.getType()).getRank() != s + 3 ||
          !cast<MemRefType>(v.getType()).getElementType().isF32())
        return failure();
    // The lowering's maps over the loops (n, spatial..., g, fg, k..., cg):
    // the images, groups and channels of the input (its positions read
    // through the strides, or those of the output written so), the
    // weight's [G, Fg, Cg, K...] or [G, Cg, Fg, K...].
    ArrayRef<int64_t> g = geometry.asArrayRef();
    MLIRContext *ctx = op.getContext();
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    int64_t loops = 2 * s + 4, gl = s + 1, fg = s + 2, k0 = s + 3,
            cg = 2 * s + 3;
    SmallVector<AffineExpr> inE{d(0)}, outE{d(0)}, wE{d(gl)};
    wE.append(transposed ? SmallVector<AffineExpr>{d(cg), d(fg)}
                         : SmallVector<AffineExpr>{d(fg), d(cg)});
    for (int64_t i = 0; i < s; ++i) {
      AffineExpr strided = d(1 + i) * g[i] + d(k0 + i) * g[s + i];
      inE.push_back(transposed ? d(1 + i) : strided);
      outE.push_back(transposed ? strided : d(1 + i));
      wE.push_back(d(k0 + i));
    }
    inE.append({d(gl), d(cg)});
    outE.append({d(gl), d(fg)});
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    if (maps[0] != AffineMap::get(loops, 0, inE, ctx) ||
        maps[1] != AffineMap::get(loops, 0, wE, ctx) ||
        maps[2] != AffineMap::get(loops, 0, outE, ctx))
      return failure();
    if (out == in || out == wt || !denseF32(out))
      return failure();

    ConvInit ci = convInit(op, out, /*channelsLast=*/true);
    linalg::GenericOp next;
    std::optional<ConvActivation> act;
    auto [at, dst] = groupedCallPlace(op, in, wt, out, ci, /*denseTarget=*/true,
                                      /*allowResidual=*/true, next, act);
    OpBuilder b(at);
    CallArgs call{b, op.getLoc()};
    // The padded input's interior as a dense image that the call pads,
    // where it can (takePadding); otherwise an image or filter inside a
    // larger buffer goes to the call as a dense copy.
    std::optional<OwnPadding> own;
    if (!transposed)
      own = takePadding(op, in);
    SmallVector<Value> copies;
    auto dense = [&](Value v) -> Value {
      if (denseF32(v))
        return v;
      auto t = cast<MemRefType>(v.getType());
      SmallVector<Value> dynamic;
      for (int64_t i = 0; i < t.getRank(); ++i)
        if (t.isDynamicDim(i))
          dynamic.push_back(memref::DimOp::create(b, call.loc, v, i));
      Value copy = memref::AllocOp::create(
          b, call.loc, MemRefType::get(t.getShape(), t.getElementType()),
          dynamic, b.getI64IntegerAttr(64));
      memref::CopyOp::create(b, call.loc, v, copy);
      copies.push_back(copy);
      return copy;
    };
    if (!own)
      in = dense(in);
    wt = dense(wt);
    SmallVector<Value> ignored;
    Value image = own ? own->image : in;
    Value inPtr = call.pointer(image, 4, ignored),
          wPtr = call.pointer(wt, 4, ignored),
          outPtr = call.pointer(dst, 4, ignored);
    Value biasPtr =
        ci.bias ? call.pointer(ci.bias, 4, ignored) : call.constant(0);
    auto dim = [&](Value v, int64_t i) { return call.dim(v, i); };
    auto padding = [&](int64_t i, bool after) {
      return call.constant(own ? (after ? own->hi : own->lo)[i] : 0);
    };
    // (No new use of `in` where its buffer goes: its channels a group are
    // static.)
    auto inType = cast<MemRefType>(in.getType());
    SmallVector<Value> args{dim(out, s + 1), dim(out, 0),
                            inType.isDynamicDim(s + 2)
                                ? dim(in, s + 2)
                                : call.constant(inType.getDimSize(s + 2))};
    for (int64_t i = 0; i < s; ++i)
      args.push_back(dim(image, 1 + i));
    args.push_back(dim(out, s + 2));
    for (int64_t i = 0; i < s; ++i)
      args.push_back(dim(wt, 3 + i));
    for (int64_t v : g)
      args.push_back(call.constant(v));
    for (bool after : {false, true})
      for (int64_t i = 0; i < s; ++i)
        args.push_back(padding(i, after));
    for (int64_t i = 0; i < s; ++i)
      args.push_back(dim(out, 1 + i));
    args.append({inPtr, wPtr, biasPtr, outPtr});
    ConvActivation a = act.value_or(ConvActivation());
    for (double bound : {a.lo, a.hi})
      args.push_back(arith::ConstantFloatOp::create(
          b, call.loc, b.getF32Type(), APFloat(static_cast<float>(bound))));
    args.push_back(call.constant(
        a.flags |
        (ci.overwrite && !a.residual ? 0 : dist::runtime_abi::kConvAccumulate) |
        (transposed ? dist::runtime_abi::kConvTransposed : 0)));
    func::FuncOp callee =
        runtimeFunction(op,
                        s == 3 ? dist::runtime_abi::kConv3dNhwcF32
                               : dist::runtime_abi::kConv2dNhwcF32,
                        args);
    func::CallOp::create(b, call.loc, callee, args);
    for (Value copy : copies)
      memref::DeallocOp::create(b, call.loc, copy);
    eraseOp(op);
    if (own)
      for (Operation *dead : own->dead)
        eraseOp(dead);
    if (ci.op && ci.overwrite)
      eraseOp(ci.op);
    if (act)
      eraseOp(next);
    return success();
  }

  /// A channels-last 2-D max pooling generic (LowerReduction's, turned
  /// channels-last by dist-sink-transposes: loops (n, y, x, c, i, j), the
  /// input read at [n, y*sh + i*dh, x*sw + j*dw, c], the window [i, j],
  /// the output [n, y, x, c] filled with -inf just before, the body
  /// arith.maximumf of the input and the output) becomes a call of
  /// dist_rt_maxpool2d_nhwc_f32 on f32 images. When the input is a buffer
  /// bordered with -inf (the padding), its interior becomes a dense image
  /// (takePadding) whose writer, the previous layer's ReLU as a rule, a
  /// convolution's call then takes in; the call clips each window to it.
  LogicalResult rewriteChannelsLastMaxPool(linalg::GenericOp op) {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1 || op.getNumLoops() != 6 ||
        op.getNumReductionLoops() != 2)
      return failure();
    Value in = op.getDpsInputOperand(0)->get();
    Value out = op.getDpsInitOperand(0)->get();
    auto inType = cast<MemRefType>(in.getType());
    auto outType = cast<MemRefType>(out.getType());
    if (inType.getRank() != 4 || outType.getRank() != 4 ||
        !inType.getElementType().isF32() || !denseF32(out) || in == out)
      return failure();
    // The body: yield maximumf(input, output).
    Block &body = op.getRegion().front();
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    auto max = yield.getNumOperands() == 1
                   ? yield.getOperand(0).getDefiningOp<arith::MaximumFOp>()
                   : arith::MaximumFOp();
    if (!max || body.getOperations().size() != 2)
      return failure();
    Value a0 = body.getArgument(0), a2 = body.getArgument(2);
    if (!((max.getLhs() == a0 && max.getRhs() == a2) ||
          (max.getLhs() == a2 && max.getRhs() == a0)))
      return failure();
    // The maps, their strides and dilations read off the input's: the
    // coefficients of y and i along the rows, of x and j along the columns.
    MLIRContext *ctx = op.getContext();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    auto coefficient = [&](AffineExpr e, unsigned dim) -> int64_t {
      SmallVector<AffineExpr> at;
      for (unsigned i = 0; i < 6; ++i)
        at.push_back(getAffineConstantExpr(i == dim ? 1 : 0, ctx));
      auto c = dyn_cast<AffineConstantExpr>(e.replaceDims(at));
      return c ? c.getValue() : 0;
    };
    AffineMap inMap = maps[0];
    if (inMap.getNumResults() != 4)
      return failure();
    int64_t sh = coefficient(inMap.getResult(1), 1),
            dh = coefficient(inMap.getResult(1), 4),
            sw = coefficient(inMap.getResult(2), 2),
            dw = coefficient(inMap.getResult(2), 5);
    if (sh < 1 || dh < 1 || sw < 1 || dw < 1)
      return failure();
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    if (inMap != AffineMap::get(
                     6, 0,
                     {d(0), d(1) * sh + d(4) * dh, d(2) * sw + d(5) * dw, d(3)},
                     ctx) ||
        maps[1] != AffineMap::get(6, 0, {d(4), d(5)}, ctx) ||
        maps[2] != AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx))
      return failure();
    auto window = cast<MemRefType>(op.getDpsInputOperand(1)->get().getType());
    if (!window.hasStaticShape())
      return failure();
    int64_t kh = window.getDimSize(0), kw = window.getDimSize(1);
    // The output's init: a fill of -inf that only this op observes.
    auto init = dyn_cast_or_null<linalg::FillOp>(lastUseBefore(op, out));
    std::optional<double> lowest =
        init ? f32Constant(init.getInputs()[0]) : std::nullopt;
    if (!init || init.getOutputs()[0] != out || !lowest ||
        !std::isinf(*lowest) || *lowest > 0)
      return failure();
    // The image: the padded buffer's interior, or the input itself when
    // dense (no padding).
    std::optional<OwnPadding> own = takePadding(op, in, -INFINITY);
    if (!own && !denseF32(in))
      return failure();
    Value image = own ? own->image : in;

    OpBuilder b(op);
    CallArgs call{b, op.getLoc()};
    SmallVector<Value> ignored;
    Value inPtr = call.pointer(image, 4, ignored),
          outPtr = call.pointer(out, 4, ignored);
    auto pad = [&](int64_t i) { return call.constant(own ? own->lo[i] : 0); };
    SmallVector<Value> args{call.dim(out, 0),
                            call.dim(out, 3),
                            call.dim(image, 1),
                            call.dim(image, 2),
                            call.constant(kh),
                            call.constant(kw),
                            call.constant(sh),
                            call.constant(sw),
                            call.constant(dh),
                            call.constant(dw),
                            pad(0),
                            pad(1),
                            call.dim(out, 1),
                            call.dim(out, 2),
                            inPtr,
                            outPtr};
    func::FuncOp callee =
        runtimeFunction(op, dist::runtime_abi::kMaxPool2dNhwcF32, args);
    func::CallOp::create(b, call.loc, callee, args);
    eraseOp(op);
    eraseOp(init);
    if (own)
      for (Operation *dead : own->dead)
        eraseOp(dead);
    return success();
  }

  /// A bufferized f32 linalg.conv_2d_nchw_fchw becomes a call of
  /// dist_rt_conv2d_f32, which needs unit column strides on the input and
  /// output and a contiguous weight (other layouts stay for the loop
  /// lowering). When the output buffer is fresh and was last written by a
  /// fill of +0.0 or by a broadcast of a per-filter bias (the lowering's
  /// init), the call writes it instead (the bias passed along) and that op
  /// goes; otherwise the call accumulates into it. An activation (ReLU,
  /// Clip) that next reads the output goes into the call too (see
  /// fuseActivation).
  LogicalResult rewriteConv(linalg::Conv2DNchwFchwOp op) {
    if (!op.hasPureBufferSemantics())
      return failure();
    Value in = op.getDpsInputOperand(0)->get();
    Value wt = op.getDpsInputOperand(1)->get();
    Value out = op.getDpsInitOperand(0)->get();
    // Unit column strides (checked statically), a contiguous weight.
    if (!directOperands(in, wt, out))
      return failure();

    // The op that initialised the output, if the call can take it over.
    ConvInit ci = convInit(op, out);
    Operation *init = ci.op;
    Value bias = ci.bias;
    bool overwrite = ci.overwrite;

    // The activation the call applies, and where the call goes and writes:
    // at the activation's place when it writes another buffer (see
    // fuseActivation), else at the convolution's (nothing reads the output
    // in between, and the operands are read when they were).
    Operation *at = op;
    Value dst = out;
    ConvActivation act;
    linalg::GenericOp actOp =
        fuseActivation(op, in, wt, bias, out, overwrite, dst, act);
    if (actOp && dst != out)
      at = actOp;

    OpBuilder b(at);
    CallArgs call{b, op.getLoc()};
    SmallVector<int64_t> strides(op.getStrides().getValues<int64_t>());
    SmallVector<int64_t> dilations(op.getDilations().getValues<int64_t>());
    SmallVector<Value> args =
        convArgs(call, in, wt, out, dst, bias, strides, dilations, act,
                 !overwrite, /*grouped=*/false);
    func::FuncOp callee =
        runtimeFunction(op, dist::runtime_abi::kConv2dF32, args);
    func::CallOp::create(b, call.loc, callee, args);
    op.erase();
    if (init)
      init->erase();
    if (actOp)
      actOp.erase();
    return success();
  }

  /// The direct weight gradient that LowerLinearAlgebra.cpp emits for a 2-D
  /// f32 convolution, a generic over (f, c, i, j, b, y, x) computing
  /// dw[f, c, i, j] += dy[b, f, y, x] * x[b, c, y*sh + i*dh, x*sw + j*dw],
  /// becomes a call of dist_rt_conv2d_wgrad_f32 (dy and x with unit column
  /// strides, dw contiguous), which sets dw when its last writer was a fill
  /// of +0.0 (the fill goes) and accumulates otherwise.
  LogicalResult rewriteWeightGrad(linalg::GenericOp op) {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1 || op.getNumLoops() != 7 ||
        !dist::codegen::isMulAddBody(op))
      return failure();
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    for (int64_t i = 0; i < 7; ++i)
      if ((iters[i] == utils::IteratorType::parallel) != (i < 4))
        return failure();
    MLIRContext *ctx = op.getContext();
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    if (maps[0] != AffineMap::get(7, 0, {d(4), d(0), d(5), d(6)}, ctx) ||
        maps[2] != AffineMap::get(7, 0, {d(0), d(1), d(2), d(3)}, ctx) ||
        maps[1].getNumResults() != 4 || maps[1].getResult(0) != d(4) ||
        maps[1].getResult(1) != d(1))
      return failure();
    // The coefficients of the input's row and column expressions: only
    // (y, i) and (x, j) respectively, as strides and dilations.
    auto coefficients =
        [&](AffineExpr e, int64_t pos,
            int64_t tap) -> std::optional<std::pair<int64_t, int64_t>> {
      // Linear: sums and products by constants only.
      bool linear = e.isPureAffine();
      e.walk([&](AffineExpr sub) {
        if (sub.getKind() == AffineExprKind::Mod ||
            sub.getKind() == AffineExprKind::FloorDiv ||
            sub.getKind() == AffineExprKind::CeilDiv)
          linear = false;
      });
      if (!linear)
        return std::nullopt;
      int64_t found[7];
      for (int64_t k = 0; k < 7; ++k) {
        SmallVector<AffineExpr> unit;
        for (int64_t m = 0; m < 7; ++m)
          unit.push_back(getAffineConstantExpr(m == k ? 1 : 0, ctx));
        auto c = dyn_cast<AffineConstantExpr>(
            simplifyAffineExpr(e.replaceDims(unit), 0, 0));
        if (!c)
          return std::nullopt;
        found[k] = c.getValue();
      }
      SmallVector<AffineExpr> zeros(7, getAffineConstantExpr(0, ctx));
      auto c0 = dyn_cast<AffineConstantExpr>(
          simplifyAffineExpr(e.replaceDims(zeros), 0, 0));
      if (!c0 || c0.getValue() != 0)
        return std::nullopt;
      for (int64_t k = 0; k < 7; ++k)
        if (k != pos && k != tap && found[k] != 0)
          return std::nullopt;
      // Linear in both (no products or divisions): f(1,1) = a + b.
      if (found[pos] <= 0 || found[tap] <= 0)
        return std::nullopt;
      return std::pair{found[pos], found[tap]};
    };
    auto rows = coefficients(maps[1].getResult(2), 5, 2);
    auto cols = coefficients(maps[1].getResult(3), 6, 3);
    if (!rows || !cols)
      return failure();
    Value dy = op.getDpsInputOperand(0)->get();
    Value x = op.getDpsInputOperand(1)->get();
    Value dw = op.getDpsInitOperand(0)->get();
    auto dwType = cast<MemRefType>(dw.getType());
    if (!dwType.getElementType().isF32() || !dwType.getLayout().isIdentity() ||
        dw == dy || dw == x)
      return failure();
    for (Value v : {dy, x}) {
      auto t = cast<MemRefType>(v.getType());
      SmallVector<int64_t> strides;
      int64_t offset;
      if (!t.getElementType().isF32() ||
          failed(t.getStridesAndOffset(strides, offset)) || strides.back() != 1)
        return failure();
    }
    linalg::FillOp fill = zeroFillConsumedBy(op, dw);

    OpBuilder b(op);
    Location loc = op.getLoc();
    CallArgs call{b, loc};
    auto dim = [&](Value v, int64_t i) { return call.dim(v, i); };
    auto cst = [&](int64_t v) { return call.constant(v); };
    SmallVector<Value> xS, dyS, dwS;
    Value xPtr = call.pointer(x, 4, xS), dyPtr = call.pointer(dy, 4, dyS),
          dwPtr = call.pointer(dw, 4, dwS);
    SmallVector<Value> args{dim(dy, 0),
                            dim(x, 1),
                            dim(x, 2),
                            dim(x, 3),
                            dim(dw, 0),
                            dim(dw, 2),
                            dim(dw, 3),
                            cst(rows->first),
                            cst(cols->first),
                            cst(rows->second),
                            cst(cols->second),
                            dim(dy, 2),
                            dim(dy, 3),
                            xPtr,
                            xS[0],
                            xS[1],
                            xS[2],
                            dyPtr,
                            dyS[0],
                            dyS[1],
                            dyS[2],
                            dwPtr,
                            cst(fill ? 0 : 1)}; // DIST_RT_CONV_ACCUMULATE
    func::FuncOp callee =
        runtimeFunction(op, dist::runtime_abi::kConv2dWeightGradF32, args);
    func::CallOp::create(b, loc, callee, args);
    op.erase();
    if (fill)
      fill.erase();
    return success();
  }

  /// The activation generic (activationOf: ReLU, Clip) that the
  /// convolution `op` can apply itself, or null; `act` says what it
  /// computes. It must be the next use of the output `out` and read it.
  /// When it writes `out` in place, the call just applies it. When it writes
  /// another buffer `dst` (the interior of the next layer's padded input,
  /// say), the call writes `dst` instead, at the ReLU's place; that needs
  /// a call that does not read `out` (`overwrite`), `out` dead after the
  /// activation (next used by a dealloc or an op that overwrites it
  /// without reading, or not at all), `dst` in another buffer than the
  /// call's operands, unit column strides on `dst`, and nothing between the
  /// two that could write the operands (only ops without memory effects,
  /// views, allocations and fills of other buffers).
  linalg::GenericOp fuseActivation(linalg::Conv2DNchwFchwOp op, Value in,
                                   Value wt, Value bias, Value out,
                                   bool overwrite, Value &dst,
                                   ConvActivation &act) {
    auto relu = dyn_cast_or_null<linalg::GenericOp>(nextUseAfter(op, out));
    std::optional<ConvActivation> found =
        relu ? activationOf(relu, out) : std::nullopt;
    if (!found)
      return {};
    Value target = relu.getDpsInitOperand(0)->get();
    if (target == out) {
      dst = out;
      act = *found;
      return relu;
    }
    if (!overwrite)
      return {};
    if (!deadAfter(relu, {out}) ||
        !canWriteAtActivation(op, relu, target, {in, wt, out, bias}))
      return {};
    dst = target;
    act = *found;
    return relu;
  }

  LogicalResult rewrite(linalg::GenericOp op) {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1 || !dist::codegen::isMulAddBody(op))
      return failure();
    auto outType = cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
    Type elem = outType.getElementType();
    if (!elem.isF32() && !elem.isF64())
      return failure();
    for (OpOperand *in : op.getDpsInputOperands())
      if (cast<MemRefType>(in->get().getType()).getElementType() != elem)
        return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    std::optional<dist::codegen::GemmLoops> loops =
        dist::codegen::classifyGemmLoops(maps, op.getIteratorTypesArray());
    if (!loops)
      return failure();
    int64_t batch = loops->batch, m = loops->m, n = loops->n, k = loops->k;
    const SmallVector<int64_t> &lw = loops->lhsDims, &rw = loops->rhsDims,
                               &ow = loops->outDims;

    // Before any op below adds uses of the output.
    Value lhs = op.getDpsInputOperand(0)->get();
    Value rhs = op.getDpsInputOperand(1)->get();
    Value out = op.getDpsInitOperand(0)->get();
    linalg::FillOp fill = out != lhs && out != rhs ? zeroFillConsumedBy(op, out)
                                                   : linalg::FillOp();

    OpBuilder b(op);
    Location loc = op.getLoc();
    Type i64 = b.getI64Type();
    int64_t elemBytes = elem.getIntOrFloatBitWidth() / 8;
    CallArgs call{b, loc};
    Value zero = call.constant(0);
    Value one = call.constant(1);
    struct Desc {
      Value ptr;
      SmallVector<Value> strides;
    };
    auto describe = [&](Value memref) {
      Desc d;
      d.ptr = call.pointer(memref, elemBytes, d.strides);
      return d;
    };
    Desc L = describe(lhs), R = describe(rhs), O = describe(out);
    auto strideOf = [&](const Desc &d, ArrayRef<int64_t> where,
                        int64_t loop) -> Value {
      if (loop == -1 || where[loop] == -1)
        return zero;
      return d.strides[where[loop]];
    };
    auto sizeOf = [&](int64_t loop) -> Value {
      if (loop == -1)
        return one;
      for (auto [val, where] :
           {std::pair{out, ow}, std::pair{lhs, lw}, std::pair{rhs, rw}})
        if (where[loop] != -1)
          return call.dim(val, where[loop]);
      return one;
    };
    SmallVector<Value> args{sizeOf(batch),
                            sizeOf(m),
                            sizeOf(n),
                            sizeOf(k),
                            L.ptr,
                            strideOf(L, lw, batch),
                            strideOf(L, lw, m),
                            strideOf(L, lw, k),
                            R.ptr,
                            strideOf(R, rw, k),
                            strideOf(R, rw, n),
                            O.ptr,
                            strideOf(O, ow, batch),
                            strideOf(O, ow, m),
                            strideOf(O, ow, n),
                            strideOf(R, rw, batch)};
    namespace abi = dist::runtime_abi;
    StringRef name =
        cuda ? (fill ? (elem.isF32() ? abi::kCudaGemmSetF32
                                     : abi::kCudaGemmSetF64)
                     : (elem.isF32() ? abi::kCudaGemmF32 : abi::kCudaGemmF64))
             : (fill ? (elem.isF32() ? abi::kGemmSetF32 : abi::kGemmSetF64)
                     : (elem.isF32() ? abi::kGemmF32 : abi::kGemmF64));
    // Operands rounded on tensor cores (--precision): f32 products only.
    if (cuda && elem.isF32() && precision == dist::Precision::Tf32)
      name = fill ? abi::kCudaGemmSetF32Tf32 : abi::kCudaGemmF32Tf32;
    if (cuda && elem.isF32() && precision == dist::Precision::Bf16)
      name = fill ? abi::kCudaGemmSetF32Bf16 : abi::kCudaGemmF32Bf16;
    func::FuncOp callee = runtimeFunction(op, name, args);
    if (loops->outerBatch == -1) {
      func::CallOp::create(b, loc, callee, args);
    } else {
      // One call per index of the outer batch, each operand's pointer
      // advanced by its stride along it (0 when it does not use it).
      int64_t outer = loops->outerBatch;
      Value trips =
          arith::IndexCastOp::create(b, loc, b.getIndexType(), sizeOf(outer));
      Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
      Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
      Value bytes = arith::ConstantIntOp::create(b, loc, i64, elemBytes);
      auto loop = scf::ForOp::create(b, loc, c0, trips, c1);
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      Value iv =
          arith::IndexCastOp::create(lb, loc, i64, loop.getInductionVar());
      auto advance = [&](Value ptr, const Desc &d, ArrayRef<int64_t> where) {
        Value step =
            arith::MulIOp::create(lb, loc, strideOf(d, where, outer), bytes);
        return arith::AddIOp::create(lb, loc, ptr,
                                     arith::MulIOp::create(lb, loc, iv, step));
      };
      SmallVector<Value> inner = args;
      inner[4] = advance(L.ptr, L, lw);
      inner[8] = advance(R.ptr, R, rw);
      inner[11] = advance(O.ptr, O, ow);
      func::CallOp::create(lb, loc, callee, inner);
    }
    op.erase();
    if (fill)
      fill.erase();
    return success();
  }
};
} // namespace
