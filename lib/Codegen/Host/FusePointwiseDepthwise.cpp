//===- FusePointwiseDepthwise.cpp - One call for a 1x1 then depthwise ----===//
// SPDX-License-Identifier: Apache-2.0
//
// An inverted residual block (MobileNetV2, EfficientNet, MnasNet) widens
// the image with a 1x1 convolution, typically six times, and a depthwise
// convolution reads the wide image once. As two dist_rt_conv2d_nhwc_f32
// calls the wide image goes to memory and back: EfficientNet-B0's 16 -> 96
// layer on 8 images of 112 x 112 writes 38.5 MB that its stride-2 3x3
// depthwise layer then reads. This pass makes such a pair one
// dist_rt_conv2d_nhwc_pwdw_f32 call, which the runtime runs in bands of
// output rows that keep their part of the wide image in the cache
// (runtime/lib/conv_nhwc.cpp, pwdwBands): that pair ran in 8.0-8.1 ms
// against 11.9-12.2 as two calls (AMD EPYC, family 26, one thread). The
// wide buffer is then dead and the canonicalizer after this pass drops it.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"
#include "dist/Codegen/RuntimeABI.h"

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <optional>

#define DEBUG_TYPE "dist-fuse-pointwise-depthwise"

namespace mlir::dist {
#define GEN_PASS_DEF_FUSEPOINTWISEDEPTHWISEPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using mlir::dist::codegen::addressEnds;
using mlir::dist::codegen::pointerSource;
using mlir::dist::codegen::runtimeFunction;
namespace abi = mlir::dist::runtime_abi;

namespace {

/// Operands of dist_rt_conv2d_nhwc_f32 (see dist_rt/kernels.h).
enum NhwcOperand {
  kGroups = 0,
  kN = 1,
  kC = 2,
  kH = 3,
  kW = 4,
  kF = 5,
  kKh = 6,
  kKw = 7,
  kSh = 8,
  kSw = 9,
  kDh = 10,
  kDw = 11,
  kPt = 12,
  kPl = 13,
  kPb = 14,
  kPr = 15,
  kOh = 16,
  kOw = 17,
  kIn = 18,
  kWeight = 19,
  kBias = 20,
  kOut = 21,
  kLo = 22,
  kHi = 23,
  kFlags = 24,
  kNhwcArgs = 25
};

/// The value of an i64 or index constant.
std::optional<int64_t> constantI64(Value v) {
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
      return i.getInt();
  return std::nullopt;
}

/// The allocation whose whole (a view of identity layout of it, made by
/// reshapes only) pointer `v` is; null otherwise.
memref::AllocOp wholeAllocation(Value v) {
  Value view = pointerSource(v);
  if (!view)
    return nullptr;
  for (;;) {
    auto type = dyn_cast<MemRefType>(view.getType());
    if (!type || !type.getLayout().isIdentity())
      return nullptr;
    if (auto alloc = view.getDefiningOp<memref::AllocOp>())
      return alloc;
    Operation *op = view.getDefiningOp();
    if (!isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(op))
      return nullptr;
    view = op->getOperand(0);
  }
}

/// The first dimension of `view` as the first dimension of the allocation
/// under it: reshapes that keep dimension 0 apart (their first group is
/// [0]) down to it; null otherwise.
Value firstDimRoot(Value view) {
  for (;;) {
    if (view.getDefiningOp<memref::AllocOp>())
      return view;
    // Owned: the ops return their groups by value.
    SmallVector<ReassociationIndices> groups;
    Value source;
    if (auto e = view.getDefiningOp<memref::ExpandShapeOp>()) {
      groups = e.getReassociationIndices();
      source = e.getSrc();
    } else if (auto c = view.getDefiningOp<memref::CollapseShapeOp>()) {
      groups = c.getReassociationIndices();
      source = c.getSrc();
    } else {
      return {};
    }
    if (groups.empty() || groups.front().size() != 1)
      return {};
    view = source;
  }
}

/// A size operand as what it is computed from: a constant, or the value
/// that index_casts and dimension 0 of reshaped allocations (their
/// dynamic size) lead to.
struct Size {
  std::optional<int64_t> constant;
  Value value;
  bool operator==(const Size &o) const {
    return constant ? o.constant == constant : !o.constant && value == o.value;
  }
};

Size sizeOf(Value v) {
  for (;;) {
    if (std::optional<int64_t> c = constantI64(v))
      return {c, {}};
    if (auto cast = v.getDefiningOp<arith::IndexCastOp>()) {
      v = cast.getIn();
      continue;
    }
    auto dim = v.getDefiningOp<memref::DimOp>();
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    Value root = index && *index == 0 ? firstDimRoot(dim.getSource()) : Value();
    auto alloc = root ? root.getDefiningOp<memref::AllocOp>() : nullptr;
    if (!alloc)
      return {std::nullopt, v};
    MemRefType type = alloc.getType();
    if (!type.isDynamicDim(0))
      return {type.getDimSize(0), {}};
    v = alloc.getDynamicSizes().front();
  }
}

/// Whether two size operands are the same number (sizeOf).
bool sameSize(Value a, Value b) { return sizeOf(a) == sizeOf(b); }

bool isNhwcCall(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  return call && call.getCallee() == abi::kConv2dNhwcF32 &&
         call.getNumOperands() == kNhwcArgs;
}

/// Whether every constant of `call` at `operands` equals `value`.
bool allEqual(func::CallOp call, ArrayRef<int> operands, int64_t value) {
  return llvm::all_of(operands, [&](int i) {
    std::optional<int64_t> c = constantI64(call.getOperand(i));
    return c && *c == value;
  });
}

/// Flags without an accumulation or a transposition.
bool plainFlags(func::CallOp call) {
  std::optional<int64_t> flags = constantI64(call.getOperand(kFlags));
  return flags && !(*flags & (abi::kConvAccumulate | abi::kConvTransposed));
}

/// Whether the value `pw` writes into `mid` is read by `dw` alone: every op
/// that uses `mid` (through its views) is a view, a dealloc, a size query
/// or an address computation that ends in calls only, and no op after `pw`
/// but `dw` is such a call; `dw` and `pw` in one block.
bool onlyDepthwiseReads(memref::AllocOp mid, func::CallOp pw, func::CallOp dw) {
  Block *block = pw->getBlock();
  if (dw->getBlock() != block || mid->getBlock() != block)
    return false;
  SmallVector<Value> work{mid.getResult()};
  while (!work.empty()) {
    Value x = work.pop_back_val();
    for (Operation *user : x.getUsers()) {
      if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(user)) {
        work.push_back(user->getResult(0));
        continue;
      }
      if (isa<memref::DeallocOp, memref::DimOp>(user))
        continue;
      if (!isa<memref::ExtractStridedMetadataOp,
               memref::ExtractAlignedPointerAsIndexOp>(user))
        return false;
      for (Operation *end : addressEnds(user)) {
        if (!isa<func::CallOp>(end))
          return false;
        Operation *at = block->findAncestorOpInBlock(*end);
        if (!at)
          return false;
        if (at != dw && pw->isBeforeInBlock(at))
          return false;
      }
    }
  }
  return true;
}

/// Whether no op strictly between `from` and `to` uses the buffer under
/// pointer operand `ptr` (its views, or an address of it that a call there
/// takes), so that the buffer holds at `to` what it held at `from`. A null
/// pointer (the constant 0: no bias) is untouched; a pointer of another
/// origin is not known to be.
bool untouchedBetween(Value ptr, Operation *from, Operation *to) {
  if (std::optional<int64_t> c = constantI64(ptr))
    return *c == 0;
  Value source = pointerSource(ptr);
  if (!source)
    return false;
  Block *block = from->getBlock();
  auto between = [&](Operation *op) {
    Operation *at = block->findAncestorOpInBlock(*op);
    return !at || (from->isBeforeInBlock(at) && at->isBeforeInBlock(to));
  };
  SmallVector<Value> work{dist::codegen::rootBuffer(source)};
  while (!work.empty()) {
    Value x = work.pop_back_val();
    for (Operation *user : x.getUsers()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == x) {
          work.append(user->getResults().begin(), user->getResults().end());
          continue;
        }
      }
      if (isa<memref::DimOp>(user))
        continue;
      if (isa<memref::ExtractStridedMetadataOp,
              memref::ExtractAlignedPointerAsIndexOp>(user)) {
        if (llvm::any_of(addressEnds(user), between))
          return false;
        continue;
      }
      if (between(user))
        return false;
    }
  }
  return true;
}

/// The pointwise call whose output the depthwise call `dw` reads, with
/// which it fuses; null where they do not.
func::CallOp pointwiseFor(func::CallOp dw) {
  if (!allEqual(dw, {kC, kF}, 1) || !plainFlags(dw))
    return nullptr;
  memref::AllocOp mid = wholeAllocation(dw.getOperand(kIn));
  if (!mid)
    return nullptr;
  // The last call before `dw` that writes `mid`.
  func::CallOp pw;
  for (Operation *op = dw->getPrevNode(); op && !pw; op = op->getPrevNode())
    if (isNhwcCall(op) && wholeAllocation(op->getOperand(kOut)) == mid)
      pw = cast<func::CallOp>(op);
  if (!pw || !plainFlags(pw) ||
      !allEqual(pw, {kGroups, kKh, kKw, kSh, kSw}, 1) ||
      !allEqual(pw, {kPt, kPl, kPb, kPr}, 0))
    return nullptr;
  std::optional<int64_t> e = constantI64(pw.getOperand(kF));
  std::optional<int64_t> groups = constantI64(dw.getOperand(kGroups));
  if (!e || !groups || *e != *groups ||
      !sameSize(pw.getOperand(kN), dw.getOperand(kN)) ||
      !sameSize(pw.getOperand(kOh), dw.getOperand(kH)) ||
      !sameSize(pw.getOperand(kOw), dw.getOperand(kW)) ||
      !sameSize(pw.getOperand(kH), pw.getOperand(kOh)) ||
      !sameSize(pw.getOperand(kW), pw.getOperand(kOw)))
    return nullptr;
  // The fused call writes the depthwise output while it still reads the
  // pointwise input: they must be apart.
  memref::AllocOp out = wholeAllocation(dw.getOperand(kOut));
  Value in = pointerSource(pw.getOperand(kIn));
  if (!out || !in || dist::codegen::rootBuffer(in) == out.getResult() ||
      out == mid)
    return nullptr;
  if (!onlyDepthwiseReads(mid, pw, dw))
    return nullptr;
  // The fused call stands where `dw` stood: what `pw` read must still be
  // there (bufferization may reuse a dead input's buffer in between).
  for (int i : {kIn, kWeight, kBias})
    if (!untouchedBetween(pw.getOperand(i), pw, dw))
      return nullptr;
  return pw;
}

/// Erases the ops that computed `operands` and have no use left, then
/// `mid` where only its deallocs use it.
void eraseDeadBuffer(memref::AllocOp mid, ArrayRef<Value> operands) {
  SmallVector<Operation *> work;
  for (Value v : operands)
    if (Operation *op = v.getDefiningOp())
      work.push_back(op);
  SmallPtrSet<Operation *, 16> erased;
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (erased.contains(op) || !op->use_empty() || !isMemoryEffectFree(op) ||
        op == mid)
      continue;
    erased.insert(op);
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        work.push_back(def);
    op->erase();
  }
  if (llvm::all_of(mid->getUsers(),
                   [](Operation *u) { return isa<memref::DeallocOp>(u); })) {
    for (Operation *u : llvm::make_early_inc_range(mid->getUsers()))
      u->erase();
    mid.erase();
  }
}

struct FusePointwiseDepthwisePass
    : public dist::impl::FusePointwiseDepthwisePassBase<
          FusePointwiseDepthwisePass> {
  void runOnOperation() override {
    SmallVector<std::pair<func::CallOp, func::CallOp>> pairs;
    // A call in one pair only (a one-channel 1x1 call could be a pair's
    // depthwise half and the next pair's pointwise one).
    DenseSet<Operation *> taken;
    getOperation().walk([&](func::CallOp dw) {
      if (isNhwcCall(dw) && !taken.contains(dw))
        if (func::CallOp pw = pointwiseFor(dw))
          if (!taken.contains(pw)) {
            pairs.push_back({pw, dw});
            taken.insert(pw);
            taken.insert(dw);
          }
    });
    for (auto [pw, dw] : pairs) {
      auto a = [&](int i) { return pw.getOperand(i); };
      auto b = [&](int i) { return dw.getOperand(i); };
      SmallVector<Value> args{
          a(kN),    a(kC),  a(kH),     a(kW),     a(kF),      a(kWeight),
          a(kBias), a(kLo), a(kHi),    a(kFlags), b(kKh),     b(kKw),
          b(kSh),   b(kSw), b(kDh),    b(kDw),    b(kPt),     b(kPl),
          b(kPb),   b(kPr), b(kOh),    b(kOw),    b(kWeight), b(kBias),
          b(kLo),   b(kHi), b(kFlags), a(kIn),    b(kOut)};
      OpBuilder builder(dw);
      // The batch from what it is computed from, not from a view of the
      // wide buffer (which would keep that buffer alive for its size).
      Size n = sizeOf(a(kN));
      Type i64 = builder.getI64Type();
      if (!constantI64(a(kN))) {
        if (n.constant)
          args[0] = arith::ConstantIntOp::create(builder, dw.getLoc(), i64,
                                                 *n.constant);
        else if (n.value.getType().isIndex())
          args[0] =
              arith::IndexCastOp::create(builder, dw.getLoc(), i64, n.value);
        else if (n.value.getType() == i64)
          args[0] = n.value;
      }
      func::FuncOp callee = runtimeFunction(dw, abi::kConv2dNhwcPwDwF32, args);
      func::CallOp::create(builder, dw.getLoc(), callee, args);
      memref::AllocOp mid = wholeAllocation(dw.getOperand(kIn));
      SmallVector<Value> operands(pw.getOperands());
      llvm::append_range(operands, dw.getOperands());
      dw.erase();
      pw.erase();
      eraseDeadBuffer(mid, operands);
      ++numFused;
    }
  }
};

} // namespace
