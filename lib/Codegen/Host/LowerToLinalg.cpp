//===- LowerToLinalg.cpp - dist graph to linalg/tensor/arith --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The dist-lower-to-linalg pass and the helpers shared by the op-family
// lowering files.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Interfaces/ViewLikeInterface.h"

#include "dist/Codegen/RuntimeABI.h"

#include "llvm/TargetParser/Host.h"

#include "dist/Codegen/Passes.h"
#include "dist/Dialect/Dist/IR/DistDialect.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <limits>

#define DEBUG_TYPE "dist-lower-to-linalg"

namespace mlir::dist {
#define GEN_PASS_DEF_LOWERTOLINALGPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::codegen;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

DistTypeConverter::DistTypeConverter() {
  addConversion([](Type t) { return t; });
  addConversion([](IntegerType t) -> Type { return toSignless(t); });
  addConversion([](RankedTensorType t) -> Type { return toSignless(t); });
}

Type codegen::elemTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

bool codegen::isUnsignedInt(Type t) {
  auto i = dyn_cast<IntegerType>(t);
  return i && i.isUnsigned();
}

Type codegen::toSignless(Type t) {
  if (auto i = dyn_cast<IntegerType>(t); i && !i.isSignless())
    return IntegerType::get(t.getContext(), i.getWidth());
  return t;
}

RankedTensorType codegen::toSignless(RankedTensorType t) {
  return RankedTensorType::get(t.getShape(), toSignless(t.getElementType()));
}

LogicalResult codegen::notSupported(Operation *op, const Twine &what) {
  op->emitError() << what << " is not supported by codegen";
  return failure();
}

SmallVector<OpFoldResult> codegen::sizesOf(OpBuilder &b, Location loc,
                                           Value v) {
  return tensor::getMixedSizes(b, loc, v);
}

bool codegen::overwritesWithoutReading(Operation *op, Value v) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.getOutputs().front() == v;
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return copy.getTarget() == v && copy.getSource() != v;
  if (auto view = dyn_cast<memref::ExpandShapeOp>(op))
    return view.getSrc() == v && view->hasAttr(kCallOverwritesAttr);
  // A model's input image transposed into a padded buffer's interior.
  if (auto t = dyn_cast<linalg::TransposeOp>(op))
    return t.getInit() == v && t.getInput() != v;
  auto g = dyn_cast<linalg::GenericOp>(op);
  if (!g || g.getNumDpsInits() != 1 || g.getDpsInitOperand(0)->get() != v ||
      g.getNumParallelLoops() != g.getNumLoops() ||
      !g.getIndexingMapsArray().back().isIdentity())
    return false;
  for (OpOperand *in : g.getDpsInputOperands())
    if (in->get() == v)
      return false;
  return g.getRegion().front().getArguments().back().use_empty();
}

Value codegen::rootBuffer(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

Value codegen::pointerSource(Value v) {
  auto cast = v.getDefiningOp<arith::IndexCastOp>();
  if (!cast)
    return {};
  if (auto p =
          cast.getIn().getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>())
    return p.getSource();
  auto add = cast.getIn().getDefiningOp<arith::AddIOp>();
  if (!add)
    return {};
  for (Value side : {add.getLhs(), add.getRhs()})
    if (auto p = side.getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>())
      return p.getSource();
  return {};
}

SmallVector<Operation *> codegen::addressEnds(Operation *op) {
  SmallVector<Operation *> ends, work{op};
  while (!work.empty()) {
    Operation *at = work.pop_back_val();
    for (Operation *user : at->getUsers()) {
      if (isa<arith::IndexCastOp, arith::AddIOp, arith::MulIOp>(user))
        work.push_back(user);
      else
        ends.push_back(user);
    }
  }
  return ends;
}

func::FuncOp codegen::runtimeFunction(Operation *op, StringRef name,
                                      ValueRange args) {
  auto module = op->getParentOfType<ModuleOp>();
  if (auto callee = module.lookupSymbol<func::FuncOp>(name))
    return callee;
  OpBuilder mb(module.getBodyRegion());
  mb.setInsertionPointToStart(module.getBody());
  auto callee = func::FuncOp::create(mb, op->getLoc(), name,
                                     mb.getFunctionType(TypeRange(args), {}));
  callee.setPrivate();
  return callee;
}

arith::MulFOp codegen::siluOf(Value v, SmallVectorImpl<Operation *> *chain) {
  auto one = [](Value c) {
    auto cst = c.getDefiningOp<arith::ConstantOp>();
    auto f = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
    return f && f.getValueAsDouble() == 1.0;
  };
  auto onlyUser = [](Value x) -> Operation * {
    return x.hasOneUse() ? *x.getUsers().begin() : nullptr;
  };
  arith::NegFOp neg;
  arith::MulFOp mul;
  for (Operation *user : v.getUsers()) {
    if (auto n = dyn_cast<arith::NegFOp>(user); n && !neg)
      neg = n;
    else if (auto m = dyn_cast<arith::MulFOp>(user); m && !mul)
      mul = m;
    else
      return {};
  }
  if (!neg || !mul)
    return {};
  auto exp = dyn_cast_or_null<math::ExpOp>(onlyUser(neg.getResult()));
  auto add = exp ? dyn_cast_or_null<arith::AddFOp>(onlyUser(exp.getResult()))
                 : arith::AddFOp();
  if (!add ||
      !one(add.getLhs() == exp.getResult() ? add.getRhs() : add.getLhs()))
    return {};
  auto div = dyn_cast_or_null<arith::DivFOp>(onlyUser(add.getResult()));
  if (!div || div.getRhs() != add.getResult() || !one(div.getLhs()) ||
      onlyUser(div.getResult()) != mul.getOperation())
    return {};
  Value other = mul.getLhs() == v ? mul.getRhs() : mul.getLhs();
  if (other != div.getResult())
    return {};
  if (chain)
    chain->append({neg, exp, add, div, mul});
  return mul;
}

arith::MulFOp codegen::hardSwishOf(Value v,
                                   SmallVectorImpl<Operation *> *chain) {
  auto isF32 = [](Value c, float want) {
    auto cst = c ? c.getDefiningOp<arith::ConstantOp>() : arith::ConstantOp();
    auto f = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
    if (!f || !f.getType().isF32())
      return false;
    float got = static_cast<float>(f.getValueAsDouble());
    return got == want && std::signbit(got) == std::signbit(want);
  };
  auto onlyUser = [](Value x) -> Operation * {
    return x.hasOneUse() ? *x.getUsers().begin() : nullptr;
  };
  // The operand of the binary `op` other than `x` (null when `x` is not
  // one of them).
  auto other = [](Operation *op, Value x) -> Value {
    if (op->getOperand(0) == x)
      return op->getOperand(1);
    return op->getOperand(1) == x ? op->getOperand(0) : Value();
  };
  arith::MulFOp scale, gate;
  for (Operation *user : v.getUsers()) {
    auto m = dyn_cast<arith::MulFOp>(user);
    if (!m)
      return {};
    if (!scale && isF32(other(m, v), 1.0f / 6.0f))
      scale = m;
    else if (!gate)
      gate = m;
    else
      return {};
  }
  if (!scale || !gate || scale == gate)
    return {};
  auto add = dyn_cast_or_null<arith::AddFOp>(onlyUser(scale.getResult()));
  if (!add || !isF32(other(add, scale.getResult()), 0.5f))
    return {};
  // The clamp to [0, 1]: minimumf with 1 and maximumf with +0, either first.
  Operation *first = onlyUser(add.getResult());
  Operation *second = first && first->getNumResults() == 1
                          ? onlyUser(first->getResult(0))
                          : nullptr;
  if (!second || second->getNumResults() != 1 ||
      onlyUser(second->getResult(0)) != gate.getOperation() ||
      other(gate, v) != second->getResult(0))
    return {};
  auto bound = [&](Operation *op, Value in) {
    if (isa<arith::MinimumFOp>(op))
      return isF32(other(op, in), 1.0f) ? 1 : 0;
    if (isa<arith::MaximumFOp>(op))
      return isF32(other(op, in), 0.0f) ? 2 : 0;
    return 0;
  };
  int b1 = bound(first, add.getResult()),
      b2 = bound(second, first->getResult(0));
  if (!b1 || !b2 || b1 == b2)
    return {};
  if (chain)
    chain->append({scale, add, first, second, gate});
  return gate;
}

bool codegen::isMulAddBody(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      body.getOperations().size() != 3)
    return false;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value acc = body.getArgument(2);
  Value other;
  if (add.getLhs() == acc)
    other = add.getRhs();
  else if (add.getRhs() == acc)
    other = add.getLhs();
  else
    return false;
  auto mul = other.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == b) ||
         (mul.getLhs() == b && mul.getRhs() == a);
}

/// Loop dim -> operand dim for the operand with `map` (-1 when absent).
/// Fails on a dim used twice or a non-dim, non-zero expression.
static std::optional<SmallVector<int64_t>> loopToOperandDims(AffineMap map) {
  SmallVector<int64_t> where(map.getNumDims(), -1);
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      if (where[d.getPosition()] != -1)
        return std::nullopt;
      where[d.getPosition()] = i;
      continue;
    }
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0)
      return std::nullopt;
  }
  return where;
}

std::optional<codegen::GemmLoops>
codegen::classifyGemmLoops(ArrayRef<AffineMap> maps,
                           ArrayRef<utils::IteratorType> iters) {
  if (maps.size() != 3)
    return std::nullopt;
  auto lw = loopToOperandDims(maps[0]);
  auto rw = loopToOperandDims(maps[1]);
  auto ow = loopToOperandDims(maps[2]);
  if (!lw || !rw || !ow)
    return std::nullopt;
  GemmLoops g;
  size_t numLoops = iters.size();
  // One reduction loop (k), or two: k and a batch of products summed into
  // one output (a convolution's weight gradient, summed over the samples),
  // the one outer to k in both inputs. Output dims are pure loop dims.
  SmallVector<int64_t, 2> reductions;
  for (size_t i = 0; i < numLoops; ++i)
    if (iters[i] == utils::IteratorType::reduction)
      reductions.push_back(i);
  if (reductions.empty() || reductions.size() > 2)
    return std::nullopt;
  int64_t summed = -1;
  g.k = reductions.back();
  if (reductions.size() == 2) {
    int64_t a = reductions[0], b = reductions[1];
    if ((*lw)[a] == -1 || (*lw)[b] == -1 || (*rw)[a] == -1 || (*rw)[b] == -1 ||
        (*ow)[a] != -1)
      return std::nullopt;
    if ((*lw)[b] < (*lw)[a] && (*rw)[b] < (*rw)[a])
      std::swap(a, b);
    else if (!((*lw)[a] < (*lw)[b] && (*rw)[a] < (*rw)[b]))
      return std::nullopt;
    summed = a;
    g.k = b;
  }
  if ((*ow)[g.k] != -1 || (*lw)[g.k] == -1 || (*rw)[g.k] == -1)
    return std::nullopt;
  SmallVector<int64_t> outLoops;
  for (AffineExpr e : maps[2].getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d)
      return std::nullopt;
    outLoops.push_back(d.getPosition());
  }
  if (outLoops.size() + reductions.size() != numLoops)
    return std::nullopt;
  size_t r = outLoops.size();
  // A summed batch takes the batch slot: the output is one matrix.
  if (summed != -1 && r != 2)
    return std::nullopt;
  if (r == 4) {
    // Two batch loops and m, n in any order of the output (a product over
    // heads whose result is written transposed): m is a loop only lhs
    // reads, n one only rhs reads, the last such in the output; of the
    // other two, the first in the output is the outer batch. The last: a
    // channel-last linear layer, [1, H, W, C] by a [C, D] weight, has three
    // loops only lhs reads; with m = W and the batch H, the runtime folds
    // the batch into one product of H * W rows (with m = the first, of
    // extent 1, it ran H products of W rows: ConvNeXt-T's 294 small calls).
    if (summed != -1)
      return std::nullopt;
    SmallVector<int64_t, 2> lhsOnly, rhsOnly, batches;
    for (int64_t l : outLoops) {
      bool inL = (*lw)[l] != -1, inR = (*rw)[l] != -1;
      if (inL && !inR)
        lhsOnly.push_back(l);
      else if (inR && !inL)
        rhsOnly.push_back(l);
    }
    if (lhsOnly.empty() || rhsOnly.empty())
      return std::nullopt;
    g.m = lhsOnly.back();
    g.n = rhsOnly.back();
    for (int64_t l : outLoops)
      if (l != g.m && l != g.n)
        batches.push_back(l);
    if (batches.size() != 2)
      return std::nullopt;
    g.outerBatch = batches[0];
    g.batch = batches[1];
  } else if (r >= 2) {
    if (r > 3)
      return std::nullopt;
    g.batch = r == 3 ? outLoops[0] : summed;
    g.m = outLoops[r - 2];
    g.n = outLoops[r - 1];
    // A transposed output: lhs indexes the last dim.
    if ((*lw)[g.m] == -1 && (*lw)[g.n] != -1)
      std::swap(g.m, g.n);
  } else if (r == 1) {
    ((*lw)[outLoops[0]] != -1 ? g.m : g.n) = outLoops[0];
  }
  // lhs may only use batch, m, k; rhs only batch, k, n.
  for (size_t i = 0; i < numLoops; ++i) {
    int64_t l = static_cast<int64_t>(i);
    bool batch = l == g.batch || l == g.outerBatch;
    if ((*lw)[i] != -1 && !batch && l != g.m && l != g.k)
      return std::nullopt;
    if ((*rw)[i] != -1 && !batch && l != g.n && l != g.k)
      return std::nullopt;
  }
  if ((g.m != -1 && (*rw)[g.m] != -1) || (g.n != -1 && (*lw)[g.n] != -1))
    return std::nullopt;
  g.lhsDims = std::move(*lw);
  g.rhsDims = std::move(*rw);
  g.outDims = std::move(*ow);
  return g;
}

Value codegen::ofrToValue(OpBuilder &b, Location loc, OpFoldResult ofr) {
  return getValueOrCreateConstantIndexOp(b, loc, ofr);
}

Value codegen::dimValue(OpBuilder &b, Location loc, Value v, int64_t i) {
  return ofrToValue(b, loc, tensor::getMixedSize(b, loc, v, i));
}

Value codegen::castTensor(OpBuilder &b, Location loc, Value v, Type t) {
  if (v.getType() == t)
    return v;
  return tensor::CastOp::create(b, loc, t, v);
}

Value codegen::addScalars(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::AddFOp::create(b, loc, x, y);
  return arith::AddIOp::create(b, loc, x, y);
}

Value codegen::subScalars(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::SubFOp::create(b, loc, x, y);
  return arith::SubIOp::create(b, loc, x, y);
}

Value codegen::mulScalars(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::MulFOp::create(b, loc, x, y);
  return arith::MulIOp::create(b, loc, x, y);
}

Value codegen::padSpatial(OpBuilder &b, Location loc, Value v,
                          ArrayRef<int64_t> begin, ArrayRef<int64_t> end,
                          Value pad) {
  auto t = cast<RankedTensorType>(v.getType());
  int64_t rank = t.getRank();
  bool anyNeg = false, anyPos = false;
  for (int64_t i = 0; i < (int64_t)begin.size(); ++i) {
    anyNeg |= begin[i] < 0 || end[i] < 0;
    anyPos |= begin[i] > 0 || end[i] > 0;
  }
  if (anyNeg) {
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = sizesOf(b, loc, v);
    for (size_t i = 0; i < begin.size(); ++i) {
      int64_t cb = std::max<int64_t>(0, -begin[i]);
      int64_t ce = std::max<int64_t>(0, -end[i]);
      offsets[i + 2] = b.getIndexAttr(cb);
      sizes[i + 2] = b.getIndexAttr(t.getDimSize(i + 2) - cb - ce);
    }
    v = tensor::ExtractSliceOp::create(
        b, loc, v, offsets, sizes,
        SmallVector<OpFoldResult>(rank, b.getIndexAttr(1)));
  }
  if (!anyPos)
    return v;
  SmallVector<OpFoldResult> lo(rank, b.getIndexAttr(0)),
      hi(rank, b.getIndexAttr(0));
  auto vt = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(vt.getShape());
  for (size_t i = 0; i < begin.size(); ++i) {
    int64_t pb = std::max<int64_t>(0, begin[i]),
            pe = std::max<int64_t>(0, end[i]);
    lo[i + 2] = b.getIndexAttr(pb);
    hi[i + 2] = b.getIndexAttr(pe);
    shape[i + 2] += pb + pe;
  }
  auto padded = RankedTensorType::get(shape, vt.getElementType());
  return tensor::PadOp::create(b, loc, padded, v, lo, hi, pad);
}

Value codegen::emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                           ArrayRef<OpFoldResult> sizes) {
  SmallVector<Value> dyn;
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    if (ShapedType::isDynamic(d))
      dyn.push_back(ofrToValue(b, loc, sizes[i]));
  return tensor::EmptyOp::create(b, loc, type, dyn);
}

Value codegen::filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                            ArrayRef<OpFoldResult> sizes, Value scalar) {
  Value empty = emptyTensor(b, loc, type, sizes);
  return linalg::FillOp::create(b, loc, scalar, empty).getResult(0);
}

Value codegen::scalarConst(OpBuilder &b, Location loc, Type t, double value) {
  if (auto f = dyn_cast<FloatType>(t))
    return arith::ConstantOp::create(b, loc, FloatAttr::get(f, value));
  if (isa<IndexType>(t))
    return arith::ConstantIndexOp::create(b, loc, (int64_t)value);
  auto i = cast<IntegerType>(t);
  if (i.getWidth() == 1)
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i, value != 0));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(i, APInt(i.getWidth(), (int64_t)value, true)));
}

Value codegen::lowestConst(OpBuilder &b, Location loc, Type t,
                           bool isUnsigned) {
  if (auto f = dyn_cast<FloatType>(t))
    return arith::ConstantOp::create(
        b, loc,
        FloatAttr::get(f, APFloat::getInf(f.getFloatSemantics(), true)));
  auto i = cast<IntegerType>(t);
  APInt v = isUnsigned || i.getWidth() == 1
                ? APInt::getMinValue(i.getWidth())
                : APInt::getSignedMinValue(i.getWidth());
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i, v));
}

Value codegen::highestConst(OpBuilder &b, Location loc, Type t,
                            bool isUnsigned) {
  if (auto f = dyn_cast<FloatType>(t))
    return arith::ConstantOp::create(
        b, loc,
        FloatAttr::get(f, APFloat::getInf(f.getFloatSemantics(), false)));
  auto i = cast<IntegerType>(t);
  APInt v = isUnsigned || i.getWidth() == 1
                ? APInt::getMaxValue(i.getWidth())
                : APInt::getSignedMaxValue(i.getWidth());
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i, v));
}

Value codegen::convertScalar(OpBuilder &b, Location loc, Value v, Type from,
                             Type to) {
  Type dst = toSignless(to);
  if (toSignless(from) == dst)
    return v;
  bool fromUnsigned = isUnsignedInt(from) || from.isInteger(1);
  bool toUnsigned = isUnsignedInt(to);
  if (auto dstInt = dyn_cast<IntegerType>(dst);
      dstInt && dstInt.getWidth() == 1) {
    // Cast to bool: non-zero is true.
    if (isa<FloatType>(v.getType()))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                   scalarConst(b, loc, v.getType(), 0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                 scalarConst(b, loc, v.getType(), 0));
  }
  if (auto srcF = dyn_cast<FloatType>(v.getType())) {
    if (auto dstF = dyn_cast<FloatType>(dst)) {
      if (dstF.getWidth() > srcF.getWidth())
        return arith::ExtFOp::create(b, loc, dst, v);
      if (dstF.getWidth() < srcF.getWidth())
        return arith::TruncFOp::create(b, loc, dst, v);
      // Same width, different format (f16 <-> bf16): go through f32.
      Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
      return arith::TruncFOp::create(b, loc, dst, wide);
    }
    if (toUnsigned)
      return arith::FPToUIOp::create(b, loc, dst, v);
    return arith::FPToSIOp::create(b, loc, dst, v);
  }
  auto srcI = cast<IntegerType>(v.getType());
  if (isa<FloatType>(dst)) {
    if (fromUnsigned)
      return arith::UIToFPOp::create(b, loc, dst, v);
    return arith::SIToFPOp::create(b, loc, dst, v);
  }
  auto dstI = cast<IntegerType>(dst);
  if (dstI.getWidth() > srcI.getWidth()) {
    if (fromUnsigned)
      return arith::ExtUIOp::create(b, loc, dst, v);
    return arith::ExtSIOp::create(b, loc, dst, v);
  }
  if (dstI.getWidth() < srcI.getWidth())
    return arith::TruncIOp::create(b, loc, dst, v);
  return v;
}

Value codegen::toIndex(OpBuilder &b, Location loc, Value v) {
  if (isa<IndexType>(v.getType()))
    return v;
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

SmallVector<OpFoldResult> codegen::broadcastSizes(OpBuilder &b, Location loc,
                                                  RankedTensorType resultType,
                                                  ValueRange operands) {
  int64_t rank = resultType.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = resultType.getDimSize(i);
    if (!ShapedType::isDynamic(d)) {
      sizes.push_back(b.getIndexAttr(d));
      continue;
    }
    // The sizes of the operands whose aligned dim is not a static 1.
    SmallVector<OpFoldResult> candidates;
    llvm::SmallPtrSet<void *, 4> seen;
    for (Value v : operands) {
      auto t = cast<RankedTensorType>(v.getType());
      int64_t j = i - (rank - t.getRank());
      if (j < 0 || t.getDimSize(j) == 1 ||
          !seen.insert(v.getAsOpaquePointer()).second)
        continue;
      candidates.push_back(tensor::getMixedSize(b, loc, v, j));
    }
    if (candidates.empty()) {
      sizes.push_back(b.getIndexAttr(1));
      continue;
    }
    OpFoldResult size = candidates.front();
    if (candidates.size() == 1) {
      sizes.push_back(size);
      continue;
    }
    Value first = ofrToValue(b, loc, size);
    for (OpFoldResult other : ArrayRef(candidates).drop_front()) {
      Value o = ofrToValue(b, loc, other);
      if (o == first)
        continue;
      // Two sizes unknown at compile time: the same at run time (numpy's
      // broadcasting of a size that turns out 1 is not supported here).
      // The loops run to the smaller, and a difference fails the run.
      ModuleOp module =
          b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
      Value differ =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, first, o);
      scf::IfOp::create(b, loc, differ, [&](OpBuilder &tb, Location tl) {
        Type i64 = tb.getI64Type();
        func::FuncOp callee =
            runtimeCallee(module, runtime_abi::kShapeError,
                          tb.getFunctionType({i64, i64, i64, i64}, {}));
        Value axis = arith::ConstantIntOp::create(tb, tl, i64, i);
        func::CallOp::create(
            tb, tl, callee,
            ValueRange{arith::IndexCastOp::create(tb, tl, i64, first),
                       arith::IndexCastOp::create(tb, tl, i64, o), axis,
                       nodeNameAddress(tb, tl, module)});
        scf::YieldOp::create(tb, tl);
      });
      first = arith::MinSIOp::create(b, loc, first, o);
      size = first;
    }
    sizes.push_back(size);
  }
  return sizes;
}

Value codegen::nodeNameAddress(OpBuilder &b, Location loc, ModuleOp module) {
  StringRef name = dist::DistDialect::getNodeName(loc);
  return stringAddress(b, loc, module, name.empty() ? "?" : name);
}

Value codegen::stringAddress(OpBuilder &b, Location loc, ModuleOp module,
                             StringRef str) {
  static constexpr llvm::StringLiteral kGlobalPrefix = "__dist_node_name_";
  std::string text = str.str();
  text.push_back('\0');
  MLIRContext *ctx = module.getContext();
  LLVM::GlobalOp global;
  unsigned count = 0;
  for (auto g : module.getOps<LLVM::GlobalOp>()) {
    if (!g.getSymName().starts_with(kGlobalPrefix))
      continue;
    ++count;
    if (auto value = dyn_cast_or_null<StringAttr>(g.getValueOrNull());
        value && value.getValue() == text) {
      global = g;
      break;
    }
  }
  if (!global) {
    std::string sym;
    do {
      sym = (kGlobalPrefix + Twine(count++)).str();
    } while (module.lookupSymbol(sym));
    OpBuilder mb(module.getBodyRegion());
    mb.setInsertionPointToStart(module.getBody());
    auto type = LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8),
                                         static_cast<unsigned>(text.size()));
    global = LLVM::GlobalOp::create(mb, loc, type, /*isConstant=*/true,
                                    LLVM::Linkage::Internal, sym,
                                    mb.getStringAttr(text));
  }
  Value addr = LLVM::AddressOfOp::create(b, loc, global);
  return LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), addr);
}

func::FuncOp codegen::runtimeCallee(ModuleOp module, StringRef name,
                                    FunctionType type) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder mb(module.getBodyRegion());
  mb.setInsertionPointToStart(module.getBody());
  auto f = func::FuncOp::create(mb, module.getLoc(), name, type);
  f.setPrivate();
  return f;
}

AffineMap codegen::broadcastMap(MLIRContext *ctx, RankedTensorType operandType,
                                RankedTensorType resultType) {
  int64_t rank = resultType.getRank();
  int64_t offset = rank - operandType.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t j = 0; j < operandType.getRank(); ++j) {
    bool bcast = operandType.getDimSize(j) == 1 &&
                 resultType.getDimSize(j + offset) != 1;
    exprs.push_back(bcast ? getAffineConstantExpr(0, ctx)
                          : getAffineDimExpr(j + offset, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

Value codegen::buildElementwise(OpBuilder &b, Location loc,
                                RankedTensorType resultType,
                                ArrayRef<OpFoldResult> sizes,
                                ValueRange operands, ScalarBodyFn body) {
  MLIRContext *ctx = b.getContext();
  Value init = emptyTensor(b, loc, resultType, sizes);
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(
        broadcastMap(ctx, cast<RankedTensorType>(v.getType()), resultType));
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  SmallVector<utils::IteratorType> iters(resultType.getRank(),
                                         utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, operands, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

Value codegen::buildElementwise(OpBuilder &b, Location loc,
                                RankedTensorType resultType,
                                ValueRange operands, ScalarBodyFn body) {
  auto sizes = broadcastSizes(b, loc, resultType, operands);
  return buildElementwise(b, loc, resultType, sizes, operands, body);
}

/// The reassociation that collapses `big` into `small` when each has one
/// dimension of unknown size (a dynamic batch) and the static dimensions
/// before it, and those after it, have equal products on both sides: the
/// unknown dimensions are then equal (a reshape keeps the element count)
/// and form a group of their own, the static parts collapse as static
/// shapes do. ShuffleNet's channel shuffle exported with a dynamic batch
/// ([n, 116, 28, 28] to [n, 2, 58, 28, 28] and back) stays a view so, where
/// tensor.reshape copied it and hid the product's buffer from the fusions.
static std::optional<SmallVector<ReassociationIndices>>
collapseAroundDynamic(ArrayRef<int64_t> big, ArrayRef<int64_t> small) {
  auto onlyDynamic = [](ArrayRef<int64_t> shape) -> std::optional<int64_t> {
    if (llvm::count_if(shape, ShapedType::isDynamic) != 1)
      return std::nullopt;
    return llvm::find_if(shape, ShapedType::isDynamic) - shape.begin();
  };
  std::optional<int64_t> i = onlyDynamic(big), j = onlyDynamic(small);
  if (!i || !j)
    return std::nullopt;
  SmallVector<ReassociationIndices> groups;
  // The groups that collapse `from` (starting at dim `offset` of big) into
  // `to`.
  auto part = [&](ArrayRef<int64_t> from, ArrayRef<int64_t> to,
                  int64_t offset) {
    if (from.empty() && to.empty())
      return true;
    auto product = [](ArrayRef<int64_t> dims) {
      int64_t n = 1;
      for (int64_t d : dims)
        n *= d;
      return n;
    };
    // (A zero-sized static part would leave the unknown sizes free.)
    if (to.empty() || product(from) != product(to) || product(from) == 0)
      return false;
    std::optional<SmallVector<ReassociationIndices>> re =
        getReassociationIndicesForCollapse(from, to);
    if (!re)
      return false;
    for (ReassociationIndices &g : *re) {
      for (int64_t &d : g)
        d += offset;
      groups.push_back(g);
    }
    return true;
  };
  if (!part(big.take_front(*i), small.take_front(*j), 0))
    return std::nullopt;
  groups.push_back({*i});
  if (!part(big.drop_front(*i + 1), small.drop_front(*j + 1), *i + 1))
    return std::nullopt;
  return groups;
}

Value codegen::reshapeTo(OpBuilder &b, Location loc, Value v,
                         RankedTensorType resultType,
                         ArrayRef<OpFoldResult> sizes) {
  auto srcType = cast<RankedTensorType>(v.getType());
  if (srcType == resultType)
    return v;
  if (srcType.getShape() == resultType.getShape())
    return tensor::CastOp::create(b, loc, resultType, v);
  auto srcStatic = srcType.hasStaticShape() && resultType.hasStaticShape();
  if (srcStatic) {
    if (srcType.getRank() > resultType.getRank()) {
      if (auto re = getReassociationIndicesForCollapse(srcType.getShape(),
                                                       resultType.getShape()))
        return tensor::CollapseShapeOp::create(b, loc, resultType, v, *re);
    } else if (srcType.getRank() < resultType.getRank()) {
      if (auto re = getReassociationIndicesForCollapse(resultType.getShape(),
                                                       srcType.getShape()))
        return tensor::ExpandShapeOp::create(b, loc, resultType, v, *re);
    }
  }
  if (!srcStatic) {
    if (srcType.getRank() > resultType.getRank()) {
      if (auto re =
              collapseAroundDynamic(srcType.getShape(), resultType.getShape()))
        return tensor::CollapseShapeOp::create(b, loc, resultType, v, *re);
    } else if (srcType.getRank() < resultType.getRank()) {
      if (auto re =
              collapseAroundDynamic(resultType.getShape(), srcType.getShape()))
        return tensor::ExpandShapeOp::create(b, loc, resultType, v, *re,
                                             SmallVector<OpFoldResult>(sizes));
    }
  }
  // Dynamic result dims with no static reassociation: a tensor.reshape with
  // the sizes computed at run time.
  if (!resultType.hasStaticShape() && resultType.getRank() > 0) {
    SmallVector<Value> dims;
    for (OpFoldResult s : sizes)
      dims.push_back(ofrToValue(b, loc, s));
    auto shapeType =
        RankedTensorType::get({resultType.getRank()}, b.getIndexType());
    Value shape = tensor::FromElementsOp::create(b, loc, shapeType, dims);
    return tensor::ReshapeOp::create(b, loc, resultType, v, shape);
  }
  Value flat = v;
  if (srcType.getRank() != 1) {
    SmallVector<ReassociationIndices> all(1);
    for (int64_t i = 0; i < srcType.getRank(); ++i)
      all[0].push_back(i);
    if (srcType.getRank() == 0)
      all.clear();
    int64_t n = srcType.hasStaticShape() ? srcType.getNumElements()
                                         : ShapedType::kDynamic;
    auto flatType = RankedTensorType::get({n}, srcType.getElementType());
    if (srcType.getRank() == 0) {
      flat = tensor::ExpandShapeOp::create(b, loc, flatType, v,
                                           ArrayRef<ReassociationIndices>{});
    } else {
      flat = tensor::CollapseShapeOp::create(b, loc, flatType, v, all);
    }
  }
  if (resultType.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, resultType, flat,
                                           ArrayRef<ReassociationIndices>{});
  if (resultType.getRank() == 1) {
    if (flat.getType() == resultType)
      return flat;
    return tensor::CastOp::create(b, loc, resultType, flat);
  }
  if (!resultType.hasStaticShape() &&
      cast<RankedTensorType>(flat.getType()).hasStaticShape())
    flat = tensor::CastOp::create(
        b, loc,
        RankedTensorType::get({ShapedType::kDynamic},
                              resultType.getElementType()),
        flat);
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < resultType.getRank(); ++i)
    all[0].push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, resultType, flat, all,
                                       SmallVector<OpFoldResult>(sizes));
}

std::optional<SmallVector<int64_t>> codegen::constInts(Value v) {
  if (auto c = dist::getConstantInts(v))
    return SmallVector<int64_t>(c->begin(), c->end());
  DenseIntElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    SmallVector<int64_t> r;
    for (const APInt &x : attr.getValues<APInt>())
      r.push_back(x.getBitWidth() == 1 ? x.getZExtValue() : x.getSExtValue());
    return r;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

namespace {
struct ConstantLowering : OpConversionPattern<dist::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!dense)
      return notSupported(op, "a constant that is not a dense literal");
    if (isa<dist::StringType>(type.getElementType()))
      return notSupported(op, "a string constant");
    auto newType = toSignless(type);
    if (newType != type)
      dense = dense.bitcast(newType.getElementType());
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, newType, dense);
    return success();
  }
};

/// Turns every dist.param into a leading argument of each function (all
/// params, in module order) and replaces dist.get_param by that argument.
/// A function that writes parameters (dist.set_param, the training step)
/// gets writable parameter arguments: every write becomes a
/// bufferization.materialize_in_destination into the argument whose result
/// the function returns, so that one-shot bufferization updates the
/// argument's buffer in place and drop-equivalent-buffer-results removes the
/// extra results again.
LogicalResult paramsToArguments(ModuleOp module) {
  SmallVector<dist::ParamOp> params(module.getOps<dist::ParamOp>());
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    bool writes = false;
    func.walk([&](dist::SetParamOp) { writes = true; });
    llvm::StringMap<unsigned> index;
    SmallVector<unsigned> argIdx;
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    SmallVector<Location> locs;
    for (auto [i, p] : llvm::enumerate(params)) {
      index[p.getSymName()] = i;
      argIdx.push_back(0);
      types.push_back(p.getType());
      NamedAttrList a;
      a.append("dist.param", p.getSymNameAttr());
      a.append(bufferization::BufferizationDialect::kWritableAttrName,
               BoolAttr::get(module.getContext(), writes));
      attrs.push_back(a.getDictionary(module.getContext()));
      locs.push_back(p.getLoc());
    }
    if (failed(func.insertArguments(argIdx, types, attrs, locs)))
      return failure();
    bool ok = true;
    func.walk([&](dist::GetParamOp get) {
      auto it = index.find(get.getName());
      if (it == index.end()) {
        get.emitError() << "unknown parameter @" << get.getName();
        ok = false;
        return;
      }
      Value arg = func.getArgument(it->second);
      if (arg.getType() != get.getType()) {
        get.emitError() << "parameter @" << get.getName() << " is declared as "
                        << arg.getType() << " but read as " << get.getType();
        ok = false;
        return;
      }
      get.replaceAllUsesWith(arg);
      get.erase();
    });
    if (!ok)
      return failure();
    SmallVector<dist::SetParamOp> sets;
    func.walk([&](dist::SetParamOp set) { sets.push_back(set); });
    if (!sets.empty()) {
      if (!func.getBody().hasOneBlock()) {
        func.emitError("dist.set_param in a function with several blocks");
        return failure();
      }
      Operation *ret = func.getBody().front().getTerminator();
      SmallVector<Value> written;
      llvm::StringSet<> seen;
      for (auto set : sets) {
        auto it = index.find(set.getName());
        if (it == index.end() || !seen.insert(set.getName()).second) {
          set.emitError() << (it == index.end() ? "unknown parameter @"
                                                : "second write of parameter @")
                          << set.getName();
          return failure();
        }
        // All writes go last, after every read of the old values.
        OpBuilder b(ret);
        Value arg = func.getArgument(it->second);
        auto m = bufferization::MaterializeInDestinationOp::create(
            b, set.getLoc(), set.getValue(), arg);
        written.push_back(m.getResult());
        set.erase();
      }
      SmallVector<Value> results(ret->getOperands());
      results.append(written);
      OpBuilder b(ret);
      func::ReturnOp::create(b, ret->getLoc(), results);
      ret->erase();
      SmallVector<Type> resultTypes(func.getResultTypes());
      for (Value w : written)
        resultTypes.push_back(w.getType());
      func.setFunctionType(FunctionType::get(
          module.getContext(), func.getArgumentTypes(), resultTypes));
      // The written parameters are marked, so that dist-drop-param-results
      // tells them from outputs that are arguments.
      SmallVector<Attribute> all;
      if (ArrayAttr resAttrs = func.getResAttrsAttr())
        all.assign(resAttrs.begin(), resAttrs.end());
      all.resize(resultTypes.size() - written.size(),
                 DictionaryAttr::get(module.getContext()));
      NamedAttrList update;
      update.append(dist::kParamUpdateAttr, UnitAttr::get(module.getContext()));
      all.resize(resultTypes.size(), update.getDictionary(module.getContext()));
      func.setResAttrsAttr(ArrayAttr::get(module.getContext(), all));
    }
    // Inputs are read-only too.
    for (unsigned i = params.size(); i < func.getNumArguments(); ++i)
      func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                      BoolAttr::get(module.getContext(), false));
  }
  for (auto p : params)
    p.erase();
  return success();
}

struct LowerToLinalgPass
    : public dist::impl::LowerToLinalgPassBase<LowerToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (failed(paramsToArguments(module)))
      return signalPassFailure();

    // Ops of types codegen cannot represent fail early with a clear error.
    WalkResult check = module.walk([&](Operation *op) {
      for (Type t :
           llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes())) {
        if (isa<dist::SequenceType, dist::OptionalType>(t))
          return notSupported(op, "a sequence or optional value"),
                 WalkResult::interrupt();
        auto shaped = dyn_cast<ShapedType>(t);
        if (shaped && isa<dist::StringType>(shaped.getElementType()))
          return notSupported(op, "a string tensor"), WalkResult::interrupt();
        if (shaped && !shaped.hasRank())
          return notSupported(op, "an unranked tensor"),
                 WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (check.wasInterrupted())
      return signalPassFailure();

    int64_t count = 0;
    module.walk([&](Operation *op) {
      if (isa<dist::DistDialect>(op->getDialect()))
        ++count;
    });

    DistTypeConverter converter;
    RewritePatternSet patterns(ctx);
    patterns.add<ConstantLowering>(converter, ctx);
    populateElementwiseLowering(converter, patterns);
    bool directConv = convKernel == ConvKernel::Direct;
    bool directDepthwise = directConv;
    bool channelsLast = convKernel == ConvKernel::ChannelsLast;
    if (convKernel == ConvKernel::Auto || convKernel == ConvKernel::Nchw ||
        channelsLast) {
      llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
      directConv = host.lookup("avx512f");
      // Depthwise kernels larger than 3x3 (see ConvLowering).
      directDepthwise =
          directConv || (host.lookup("avx2") && host.lookup("fma"));
    }
    populateLinearAlgebraLowering(converter, patterns, directConv,
                                  directDepthwise, channelsLast);
    populateShapeLowering(converter, patterns);
    populateReductionLowering(converter, patterns);
    populateIndexingLowering(converter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);

    ConversionTarget target(*ctx);
    target.addLegalOp<ModuleOp>();
    target.addIllegalDialect<dist::DistDialect>();
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, bufferization::BufferizationDialect,
                           shard::ShardDialect>();
    // The node names of index checks (LowerIndexing.cpp).
    target.addLegalOp<LLVM::GlobalOp, LLVM::AddressOfOp, LLVM::PtrToIntOp>();
    // Pipeline transfers bufferize into runtime calls (Collectives.cpp).
    target.addLegalOp<dist::SendOp, dist::RecvOp>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp f) {
      return converter.isSignatureLegal(f.getFunctionType()) &&
             converter.isLegal(&f.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });

    // An op without any lowering pattern gets a clear error up front.
    bool missing = false;
    module.walk([&](Operation *op) {
      if (!missing && isa<dist::DistDialect>(op->getDialect()) &&
          !isa<dist::SendOp, dist::RecvOp>(op)) {
        bool has = false;
        for (const auto &pat : patterns.getNativePatterns())
          if (pat->getRootKind() == op->getName()) {
            has = true;
            break;
          }
        if (!has) {
          notSupported(op, "operation '" + op->getName().getStringRef() + "'");
          missing = true;
        }
      }
    });
    if (missing)
      return signalPassFailure();

    if (failed(applyFullConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    numLowered = count;
    // Public functions get a C interface: the runtime calls them through
    // it. Kept out of that wrapper (noinline): a public function inlined
    // there is compiled twice. The entries the runtime calls are made
    // internal and inlined into their wrapper by dist-add-entry-wrapper.
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal()) {
        func->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
        func->setAttr("passthrough",
                      ArrayAttr::get(ctx, {StringAttr::get(ctx, "noinline")}));
      }
  }
};
} // namespace
