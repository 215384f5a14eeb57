//===- LowerReduction.cpp - reductions, normalisation and pooling ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reduce* ops, ArgMax/ArgMin, Softmax/LogSoftmax, LayerNormalization,
// BatchNormalization, InstanceNormalization and the pooling ops become
// tensor-level linalg.generic ops (reductions over a loop nest that spans the
// input, parallel maps for the elementwise parts), tensor.pad and linalg.fill.
//
// Floating-point accumulations of f16/bf16 data run in f32. Every result is
// built with the most static type the input allows and cast to the op's
// declared (converted) result type at the end.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "llvm/ADT/MapVector.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::codegen;

namespace {

//===----------------------------------------------------------------------===//
// Scalar helpers
//===----------------------------------------------------------------------===//

/// Type the floating-point arithmetic on `elem` data runs in (f32 for
/// f16/bf16, else `elem` itself).
Type computeType(Type elem) {
  auto f = dyn_cast<FloatType>(elem);
  if (f && f.getWidth() < 32)
    return Float32Type::get(elem.getContext());
  return elem;
}

bool isFloat(Value v) { return isa<FloatType>(v.getType()); }

Value sDiv(OpBuilder &b, Location loc, Value x, Value y, bool uns) {
  if (isFloat(x))
    return arith::DivFOp::create(b, loc, x, y);
  if (uns)
    return arith::DivUIOp::create(b, loc, x, y);
  return arith::DivSIOp::create(b, loc, x, y);
}
Value sMax(OpBuilder &b, Location loc, Value x, Value y, bool uns) {
  if (isFloat(x))
    return arith::MaximumFOp::create(b, loc, x, y);
  if (uns)
    return arith::MaxUIOp::create(b, loc, x, y);
  return arith::MaxSIOp::create(b, loc, x, y);
}
Value sMin(OpBuilder &b, Location loc, Value x, Value y, bool uns) {
  if (isFloat(x))
    return arith::MinimumFOp::create(b, loc, x, y);
  if (uns)
    return arith::MinUIOp::create(b, loc, x, y);
  return arith::MinSIOp::create(b, loc, x, y);
}

enum class CmpKind { EQ, GT, LT, GE, LE };

/// Ordered comparison (false when a float operand is NaN).
Value sCmp(OpBuilder &b, Location loc, CmpKind k, Value x, Value y, bool uns) {
  if (isFloat(x)) {
    arith::CmpFPredicate p = arith::CmpFPredicate::OEQ;
    switch (k) {
    case CmpKind::EQ:
      p = arith::CmpFPredicate::OEQ;
      break;
    case CmpKind::GT:
      p = arith::CmpFPredicate::OGT;
      break;
    case CmpKind::LT:
      p = arith::CmpFPredicate::OLT;
      break;
    case CmpKind::GE:
      p = arith::CmpFPredicate::OGE;
      break;
    case CmpKind::LE:
      p = arith::CmpFPredicate::OLE;
      break;
    }
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  arith::CmpIPredicate p = arith::CmpIPredicate::eq;
  switch (k) {
  case CmpKind::EQ:
    p = arith::CmpIPredicate::eq;
    break;
  case CmpKind::GT:
    p = uns ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt;
    break;
  case CmpKind::LT:
    p = uns ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
    break;
  case CmpKind::GE:
    p = uns ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge;
    break;
  case CmpKind::LE:
    p = uns ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle;
    break;
  }
  return arith::CmpIOp::create(b, loc, p, x, y);
}

/// Math function on a float scalar, through f32 for narrower types.
template <typename MathOp>
Value mathF(OpBuilder &b, Location loc, Value x) {
  auto ft = cast<FloatType>(x.getType());
  if (ft.getWidth() >= 32)
    return MathOp::create(b, loc, x);
  Value w = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  Value r = MathOp::create(b, loc, w);
  return arith::TruncFOp::create(b, loc, ft, r);
}

Value andI(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::AndIOp::create(b, loc, x, y);
}
Value orI(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::OrIOp::create(b, loc, x, y);
}
Value notI(OpBuilder &b, Location loc, Value x) {
  return arith::XOrIOp::create(b, loc, x,
                               scalarConst(b, loc, b.getI1Type(), 1));
}
Value isNaN(OpBuilder &b, Location loc, Value x) {
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
}

/// Converts an index value (a size or count) to a scalar of type `t`.
Value indexToScalar(OpBuilder &b, Location loc, Value idx, Type t) {
  if (std::optional<int64_t> c = getConstantIntValue(idx))
    return scalarConst(b, loc, t, (double)*c);
  if (isa<FloatType>(t)) {
    Value i = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
    return arith::SIToFPOp::create(b, loc, t, i);
  }
  return arith::IndexCastOp::create(b, loc, t, idx);
}

//===----------------------------------------------------------------------===//
// Loop nests
//===----------------------------------------------------------------------===//

/// Static shape of `sizes` (dynamic where a size is not a constant).
SmallVector<int64_t> staticShape(ArrayRef<OpFoldResult> sizes) {
  SmallVector<int64_t> shape;
  for (OpFoldResult s : sizes) {
    std::optional<int64_t> c = getConstantIntValue(s);
    shape.push_back(c ? *c : ShapedType::kDynamic);
  }
  return shape;
}

RankedTensorType tensorOf(ArrayRef<OpFoldResult> sizes, Type elem) {
  return RankedTensorType::get(staticShape(sizes), elem);
}

/// A loop nest over `sizes` whose `reduced` dims are reductions.
struct Nest {
  SmallVector<OpFoldResult> sizes;
  SmallVector<bool> reduced;

  Nest(ArrayRef<OpFoldResult> s) : sizes(s), reduced(s.size(), false) {}

  int64_t rank() const { return sizes.size(); }
  bool anyReduced() const { return llvm::is_contained(reduced, true); }
  SmallVector<OpFoldResult> keptSizes() const {
    SmallVector<OpFoldResult> r;
    for (int64_t i = 0; i < rank(); ++i)
      if (!reduced[i])
        r.push_back(sizes[i]);
    return r;
  }
  /// Sizes with the reduced dims as 1.
  SmallVector<OpFoldResult> keepDimSizes(OpBuilder &b) const {
    SmallVector<OpFoldResult> r;
    for (int64_t i = 0; i < rank(); ++i)
      r.push_back(reduced[i] ? OpFoldResult(b.getIndexAttr(1)) : sizes[i]);
    return r;
  }
  AffineMap identity(MLIRContext *ctx) const {
    return AffineMap::getMultiDimIdentityMap(rank(), ctx);
  }
  /// Reads a tensor over the kept dims.
  AffineMap keptMap(MLIRContext *ctx) const {
    SmallVector<AffineExpr> e;
    for (int64_t i = 0; i < rank(); ++i)
      if (!reduced[i])
        e.push_back(getAffineDimExpr(i, ctx));
    return AffineMap::get(rank(), 0, e, ctx);
  }
  /// Reads a tensor over the given dims.
  AffineMap dimsMap(MLIRContext *ctx, ArrayRef<int64_t> dims) const {
    SmallVector<AffineExpr> e;
    for (int64_t d : dims)
      e.push_back(getAffineDimExpr(d, ctx));
    return AffineMap::get(rank(), 0, e, ctx);
  }
  SmallVector<utils::IteratorType> iterators() const {
    SmallVector<utils::IteratorType> it;
    for (bool r : reduced)
      it.push_back(r ? utils::IteratorType::reduction
                     : utils::IteratorType::parallel);
    return it;
  }
  /// Number of iterations of the reduced dims, as an index value.
  Value reducedCount(OpBuilder &b, Location loc) const {
    int64_t st = 1;
    SmallVector<Value> dyn;
    for (int64_t i = 0; i < rank(); ++i) {
      if (!reduced[i])
        continue;
      if (std::optional<int64_t> c = getConstantIntValue(sizes[i]))
        st *= *c;
      else
        dyn.push_back(ofrToValue(b, loc, sizes[i]));
    }
    Value r = arith::ConstantIndexOp::create(b, loc, st);
    for (Value d : dyn)
      r = arith::MulIOp::create(b, loc, r, d);
    return r;
  }
};

using MultiBodyFn =
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

SmallVector<Value> buildGeneric(OpBuilder &b, Location loc,
                                ArrayRef<utils::IteratorType> iters,
                                ValueRange inputs, ArrayRef<AffineMap> inMaps,
                                ValueRange inits, ArrayRef<AffineMap> outMaps,
                                MultiBodyFn body) {
  SmallVector<AffineMap> maps(inMaps.begin(), inMaps.end());
  maps.append(outMaps.begin(), outMaps.end());
  SmallVector<Type> types;
  for (Value v : inits)
    types.push_back(v.getType());
  auto g = linalg::GenericOp::create(
      b, loc, types, inputs, inits, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> r = body(nb, nloc, args);
        linalg::YieldOp::create(nb, nloc, r);
      });
  return SmallVector<Value>(g.getResults().begin(), g.getResults().end());
}

/// Reduces over the reduced dims of `n`: one output per scalar of `inits`
/// (over the kept dims, filled with it). `body` gets the input scalars then
/// the accumulators and returns the new accumulators.
SmallVector<Value> reduceNest(OpBuilder &b, Location loc, const Nest &n,
                              ValueRange inputs, ArrayRef<AffineMap> inMaps,
                              ValueRange inits, MultiBodyFn body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> kept = n.keptSizes();
  SmallVector<Value> outs;
  SmallVector<AffineMap> outMaps;
  for (Value s : inits) {
    outs.push_back(
        filledTensor(b, loc, tensorOf(kept, s.getType()), kept, s));
    outMaps.push_back(n.keptMap(ctx));
  }
  return buildGeneric(b, loc, n.iterators(), inputs, inMaps, outs, outMaps,
                      body);
}

/// Single-result reduction.
Value reduce1(OpBuilder &b, Location loc, const Nest &n, ValueRange inputs,
              ArrayRef<AffineMap> inMaps, Value init, ScalarBodyFn body) {
  return reduceNest(b, loc, n, inputs, inMaps, ValueRange{init},
                    [&](OpBuilder &nb, Location nl, ValueRange a) {
                      return SmallVector<Value>{body(nb, nl, a)};
                    })[0];
}

/// Parallel map over `sizes` producing a tensor of `elem`; `body` gets the
/// input scalars.
Value mapNest(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
              Type elem, ValueRange inputs, ArrayRef<AffineMap> inMaps,
              ScalarBodyFn body) {
  MLIRContext *ctx = b.getContext();
  Value init = emptyTensor(b, loc, tensorOf(sizes, elem), sizes);
  SmallVector<utils::IteratorType> iters(sizes.size(),
                                         utils::IteratorType::parallel);
  return buildGeneric(
      b, loc, iters, inputs, inMaps, ValueRange{init},
      {AffineMap::getMultiDimIdentityMap(sizes.size(), ctx)},
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        return SmallVector<Value>{body(nb, nl, a.drop_back())};
      })[0];
}

/// Parallel map over the kept dims of tensors that all span them.
Value mapKept(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
              Type elem, ValueRange inputs, ScalarBodyFn body) {
  SmallVector<AffineMap> maps(
      inputs.size(),
      AffineMap::getMultiDimIdentityMap(sizes.size(), b.getContext()));
  return mapNest(b, loc, sizes, elem, inputs, maps, body);
}

/// Expands a tensor over the kept dims of `n` to the full rank with the
/// reduced dims as 1 (keepdims).
Value expandKept(OpBuilder &b, Location loc, Value v, const Nest &n) {
  if (!n.anyReduced())
    return v;
  SmallVector<OpFoldResult> sizes = n.keepDimSizes(b);
  auto type = tensorOf(sizes, elemTypeOf(v));
  SmallVector<ReassociationIndices> re;
  ReassociationIndices cur;
  bool seenKept = false;
  for (int64_t i = 0; i < n.rank(); ++i) {
    if (!n.reduced[i] && seenKept) {
      re.push_back(cur);
      cur.clear();
    }
    cur.push_back(i);
    if (!n.reduced[i])
      seenKept = true;
  }
  if (seenKept)
    re.push_back(cur);
  return tensor::ExpandShapeOp::create(b, loc, type, v, re, sizes);
}

std::optional<int64_t> normAxis(int64_t a, int64_t rank) {
  if (a < -rank || a >= rank)
    return std::nullopt;
  return a < 0 ? a + rank : a;
}

//===----------------------------------------------------------------------===//
// Reduce*
//===----------------------------------------------------------------------===//

enum class RK { Sum, Mean, Max, Min, Prod, SumSquare, L2, LogSumExp };

/// Reduces `x` (signless, original element type `orig`) over the reduced
/// dims of `n`; the result spans the kept dims.
Value buildReduce(OpBuilder &b, Location loc, RK k, Value x, Type orig,
                  const Nest &n) {
  MLIRContext *ctx = b.getContext();
  Type elem = elemTypeOf(x);
  bool fl = isa<FloatType>(elem);
  bool uns = isUnsignedInt(orig) || orig.isInteger(1);
  AffineMap id = n.identity(ctx);
  SmallVector<OpFoldResult> kept = n.keptSizes();

  if (k == RK::Max || k == RK::Min) {
    Value init = k == RK::Max ? lowestConst(b, loc, elem, uns)
                              : highestConst(b, loc, elem, uns);
    return reduce1(b, loc, n, ValueRange{x}, {id}, init,
                   [&](OpBuilder &nb, Location nl, ValueRange a) {
                     return k == RK::Max ? sMax(nb, nl, a[0], a[1], uns)
                                         : sMin(nb, nl, a[0], a[1], uns);
                   });
  }

  if (k == RK::LogSumExp) {
    // log(sum(exp(x - shift))) + shift with shift = max(x) where finite.
    Type acc = fl ? computeType(elem) : Type(b.getF64Type());
    Value minusInf = lowestConst(b, loc, acc, false);
    Value m = reduce1(b, loc, n, ValueRange{x}, {id}, minusInf,
                      [&](OpBuilder &nb, Location nl, ValueRange a) {
                        Value v = convertScalar(nb, nl, a[0], orig, acc);
                        return sMax(nb, nl, v, a[1], false);
                      });
    Value shift = mapKept(
        b, loc, kept, acc, ValueRange{m},
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value abs = math::AbsFOp::create(nb, nl, a[0]);
          Value inf = highestConst(nb, nl, acc, false);
          Value isInf = arith::CmpFOp::create(
              nb, nl, arith::CmpFPredicate::OEQ, abs, inf);
          return arith::SelectOp::create(nb, nl, isInf,
                                         scalarConst(nb, nl, acc, 0), a[0]);
        });
    Value s = reduce1(
        b, loc, n, ValueRange{x, shift}, {id, n.keptMap(ctx)},
        scalarConst(b, loc, acc, 0),
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value v = convertScalar(nb, nl, a[0], orig, acc);
          Value e = mathF<math::ExpOp>(
              nb, nl, arith::SubFOp::create(nb, nl, v, a[1]));
          return arith::AddFOp::create(nb, nl, a[2], e);
        });
    return mapKept(b, loc, kept, elem, ValueRange{s, shift},
                   [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     Value l = mathF<math::LogOp>(nb, nl, a[0]);
                     Value r = arith::AddFOp::create(nb, nl, l, a[1]);
                     return convertScalar(nb, nl, r, acc, orig);
                   });
  }

  // Sum, Mean, Prod, SumSquare, L2: accumulate in `acc`.
  Type acc = fl ? computeType(elem) : elem;
  Value init = scalarConst(b, loc, acc, k == RK::Prod ? 1 : 0);
  Value r = reduce1(b, loc, n, ValueRange{x}, {id}, init,
                    [&](OpBuilder &nb, Location nl, ValueRange a) {
                      Value v = convertScalar(nb, nl, a[0], orig, acc);
                      if (k == RK::SumSquare || k == RK::L2)
                        v = mulScalars(nb, nl, v, v);
                      if (k == RK::Prod)
                        return mulScalars(nb, nl, a[1], v);
                      return addScalars(nb, nl, a[1], v);
                    });
  switch (k) {
  case RK::Mean: {
    Value count = n.reducedCount(b, loc);
    if (!fl) {
      // Avoid a division by zero for an empty integer reduction.
      if (std::optional<int64_t> c = getConstantIntValue(count)) {
        if (*c == 0)
          count = arith::ConstantIndexOp::create(b, loc, 1);
      } else {
        count = arith::MaxUIOp::create(
            b, loc, count, arith::ConstantIndexOp::create(b, loc, 1));
      }
    }
    Value c = indexToScalar(b, loc, count, acc);
    return mapKept(b, loc, kept, elem, ValueRange{r},
                   [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     Value q = sDiv(nb, nl, a[0], c, uns);
                     return convertScalar(nb, nl, q, acc, orig);
                   });
  }
  case RK::L2:
    return mapKept(b, loc, kept, elem, ValueRange{r},
                   [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     if (fl) {
                       Value q = mathF<math::SqrtOp>(nb, nl, a[0]);
                       return convertScalar(nb, nl, q, acc, orig);
                     }
                     Type f64 = nb.getF64Type();
                     Value f = convertScalar(nb, nl, a[0], orig, f64);
                     Value q = math::SqrtOp::create(nb, nl, f);
                     return convertScalar(nb, nl, q, f64, orig);
                   });
  default:
    if (acc == elem)
      return r;
    return mapKept(b, loc, kept, elem, ValueRange{r},
                   [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     return convertScalar(nb, nl, a[0], acc, orig);
                   });
  }
}

template <typename OpTy, RK Kind>
struct ReduceLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto inTy = dyn_cast<RankedTensorType>(x.getType());
    auto resTy = this->getTypeConverter()->template convertType<RankedTensorType>(
        op.getType());
    if (!inTy || !resTy)
      return notSupported(op, "a reduction of an unranked tensor");
    Type orig = elemTypeOf(op.getInput());
    int64_t rank = inTy.getRank();

    bool keep = op.getKeepdims() != 0;
    SmallVector<int64_t> axes;
    if (op.getAxes()) {
      std::optional<SmallVector<int64_t>> c = constInts(op.getAxes());
      auto at = cast<RankedTensorType>(op.getAxes().getType());
      if (!c && at.getRank() == 1 && at.getDimSize(0) == 0)
        c = SmallVector<int64_t>(); // No axes, whatever the input holds.
      if (!c)
        return lowerRunTimeAxes(op, adaptor, x, inTy, resTy, keep, rewriter);
      axes = *c;
    }
    bool noop = axes.empty() && op.getNoopWithEmptyAxes() != 0;
    SmallVector<bool> reduced(rank, false);
    if (axes.empty() && !noop) {
      reduced.assign(rank, true);
    } else {
      for (int64_t a : axes) {
        std::optional<int64_t> ax = normAxis(a, rank);
        if (!ax || reduced[*ax])
          return notSupported(op, "an out-of-range or repeated reduction axis");
        reduced[*ax] = true;
      }
    }
    int64_t keptRank = llvm::count(reduced, false);
    if (resTy.getRank() != (keep ? rank : keptRank))
      return notSupported(op, "a reduction whose result rank does not match");

    // Reducing over no axes leaves each element as it is, after the
    // per-element part of the reduction (x*x for ReduceSumSquare, |x| for
    // ReduceL2).
    if (noop && Kind != RK::SumSquare && Kind != RK::L2) {
      rewriter.replaceOp(op, castTensor(rewriter, loc, x, resTy));
      return success();
    }
    rewriter.replaceOp(op, reduceOver(rewriter, loc, x, orig, reduced, keep,
                                      resTy));
    return success();
  }

  /// The reduction of `x` over the dims `reduced`, as `resTy`.
  static Value reduceOver(OpBuilder &b, Location loc, Value x, Type orig,
                          ArrayRef<bool> reduced, bool keep,
                          RankedTensorType resTy) {
    Nest n(sizesOf(b, loc, x));
    n.reduced.assign(reduced.begin(), reduced.end());
    Value r = buildReduce(b, loc, Kind, x, orig, n);
    if (keep)
      r = expandKept(b, loc, r, n);
    return castTensor(b, loc, r, resTy);
  }

  /// Axes fed at run time: the result type (the shape the model declares)
  /// leaves a few sets of axes that give it; each that reduces differently
  /// is computed (sets that differ in dims of extent 1 reduce alike) and
  /// the one the axes name is selected; other axes fail the run.
  LogicalResult lowerRunTimeAxes(OpTy op, typename OpTy::Adaptor adaptor,
                                 Value x, RankedTensorType inTy,
                                 RankedTensorType resTy, bool keep,
                                 ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    auto at = cast<RankedTensorType>(op.getAxes().getType());
    int64_t rank = inTy.getRank();
    if (at.getRank() != 1 || at.isDynamicDim(0))
      return notSupported(op, "a reduction with a run-time number of axes");
    auto same = [](int64_t a, int64_t b) {
      return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
    };
    SmallVector<uint64_t> valid =
        axisSubsets(rank, at.getDimSize(0), [&](uint64_t m) {
          int64_t next = 0;
          for (int64_t d = 0; d < rank; ++d) {
            bool r = m >> d & 1;
            if (keep) {
              if (!same(resTy.getDimSize(d), r ? 1 : inTy.getDimSize(d)))
                return false;
            } else if (!r) {
              if (next >= resTy.getRank() ||
                  !same(resTy.getDimSize(next++), inTy.getDimSize(d)))
                return false;
            }
          }
          return keep || next == resTy.getRank();
        });
    if (valid.empty())
      return notSupported(op, "reduction axes fed at run time, where no set "
                              "of axes gives the declared output shape (bind "
                              "them with --input-value),");
    Value mask =
        checkAxesOperand(rewriter, loc, op, 1, adaptor.getAxes(), rank, valid);
    // Sets that differ only in dims of extent 1 give the same values.
    uint64_t unit = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (inTy.getDimSize(d) == 1)
        unit |= uint64_t(1) << d;
    llvm::MapVector<uint64_t, SmallVector<uint64_t>> groups;
    for (uint64_t m : valid)
      groups[m & ~unit].push_back(m);
    Type orig = elemTypeOf(op.getInput());
    Value result;
    for (auto &[effective, members] : llvm::reverse(groups)) {
      SmallVector<bool> reduced(rank);
      for (int64_t d = 0; d < rank; ++d)
        reduced[d] = members.front() >> d & 1;
      Value r = reduceOver(rewriter, loc, x, orig, reduced, keep, resTy);
      if (!result) {
        result = r; // The last group: what is left when no other matches.
        continue;
      }
      Value chosen =
          arith::ConstantIntOp::create(rewriter, loc, rewriter.getI1Type(), 0);
      for (uint64_t m : members)
        chosen = arith::OrIOp::create(
            rewriter, loc, chosen,
            arith::CmpIOp::create(
                rewriter, loc, arith::CmpIPredicate::eq, mask,
                arith::ConstantIntOp::create(rewriter, loc,
                                             rewriter.getI64Type(),
                                             static_cast<int64_t>(m))));
      result = arith::SelectOp::create(rewriter, loc, chosen, r, result);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// ArgMax / ArgMin
//===----------------------------------------------------------------------===//

template <typename OpTy, bool IsMax>
struct ArgReduceLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    auto inTy = cast<RankedTensorType>(x.getType());
    auto resTy = this->getTypeConverter()->template convertType<RankedTensorType>(
        op.getType());
    if (!resTy)
      return notSupported(op, "an unranked result");
    int64_t rank = inTy.getRank();
    std::optional<int64_t> axis =
        normAxis(static_cast<int64_t>(op.getAxis()), rank);
    if (!axis)
      return notSupported(op, "an out-of-range axis");
    bool keep = op.getKeepdims() != 0;
    if (resTy.getRank() != (keep ? rank : rank - 1))
      return notSupported(op, "an arg reduction whose result rank does not match");
    bool last = op.getSelectLastIndex() != 0;
    Type orig = elemTypeOf(op.getInput());
    Type elem = inTy.getElementType();
    bool uns = isUnsignedInt(orig) || orig.isInteger(1);
    Type i64 = rewriter.getI64Type();

    Nest n(sizesOf(rewriter, loc, x));
    n.reduced[*axis] = true;
    Value initV = IsMax ? lowestConst(rewriter, loc, elem, uns)
                        : highestConst(rewriter, loc, elem, uns);
    // The first occurrence wins unless select_last_index; the rule does not
    // depend on the iteration order. NaN beats everything, as in numpy.
    Value initI = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getI64IntegerAttr(last ? -1
                                        : std::numeric_limits<int64_t>::max()));
    int64_t ax = *axis;
    SmallVector<Value> rs = reduceNest(
        rewriter, loc, n, ValueRange{x}, {n.identity(ctx)},
        ValueRange{initV, initI},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value v = a[0], cur = a[1], curI = a[2];
          Value pos = arith::IndexCastOp::create(
              b, l, i64, linalg::IndexOp::create(b, l, ax));
          Value tie = arith::CmpIOp::create(
              b, l, last ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt,
              pos, curI);
          Value better =
              sCmp(b, l, IsMax ? CmpKind::GT : CmpKind::LT, v, cur, uns);
          Value eq = sCmp(b, l, CmpKind::EQ, v, cur, uns);
          Value take = orI(b, l, better, andI(b, l, eq, tie));
          if (isFloat(v)) {
            Value vN = isNaN(b, l, v), cN = isNaN(b, l, cur);
            Value nanTake = andI(b, l, vN, orI(b, l, notI(b, l, cN), tie));
            take = orI(b, l, take, nanTake);
          }
          return {arith::SelectOp::create(b, l, take, v, cur),
                  arith::SelectOp::create(b, l, take, pos, curI)};
        });
    Value r = rs[1];
    if (keep)
      r = expandKept(rewriter, loc, r, n);
    rewriter.replaceOp(op, castTensor(rewriter, loc, r, resTy));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Softmax / LogSoftmax
//===----------------------------------------------------------------------===//

template <typename OpTy, bool IsLog>
struct SoftmaxLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    auto inTy = cast<RankedTensorType>(x.getType());
    auto resTy = this->getTypeConverter()->template convertType<RankedTensorType>(
        op.getType());
    if (!resTy || resTy.getRank() != inTy.getRank())
      return notSupported(op, "a softmax whose result rank does not match");
    int64_t rank = inTy.getRank();
    if (rank == 0)
      return notSupported(op, "softmax of a scalar");
    std::optional<int64_t> axis =
        normAxis(static_cast<int64_t>(op.getAxis()), rank);
    if (!axis)
      return notSupported(op, "an out-of-range axis");
    Type elem = inTy.getElementType();
    Type ct = computeType(elem);

    Nest n(sizesOf(rewriter, loc, x));
    n.reduced[*axis] = true;
    AffineMap id = n.identity(ctx), km = n.keptMap(ctx);
    Value m = reduce1(rewriter, loc, n, ValueRange{x}, {id},
                      lowestConst(rewriter, loc, ct, false),
                      [&](OpBuilder &b, Location l, ValueRange a) {
                        Value v = convertScalar(b, l, a[0], elem, ct);
                        return sMax(b, l, v, a[1], false);
                      });
    if (!IsLog && elem == ct) {
      // exp(x - max) once per element: the pass that sums the
      // exponentials also writes them (dist-register-accumulators keeps
      // the sum in a register beside that store), and the last pass
      // divides them in place. (Multiplying by the sum's reciprocal, as
      // onnxruntime does, saved 0.05 of 0.5 ms on ViT-B/16's 12 x 197 x 197
      // rows, but moved a GPT's AdamW parameters under pp=2 and
      // tp=2 four times as far from one process's, 6.5e-5 and 1.1e-4 of
      // their scale: kept as division.)
      SmallVector<OpFoldResult> kept = n.keptSizes();
      Value sumInit = filledTensor(rewriter, loc, tensorOf(kept, ct), kept,
                                   scalarConst(rewriter, loc, ct, 0));
      Value expInit =
          emptyTensor(rewriter, loc, tensorOf(n.sizes, ct), n.sizes);
      SmallVector<Value> es = buildGeneric(
          rewriter, loc, n.iterators(), ValueRange{x, m}, {id, km},
          ValueRange{expInit, sumInit}, {id, km},
          [&](OpBuilder &b, Location l, ValueRange a) {
            Value d = arith::SubFOp::create(b, l, a[0], a[1]);
            Value e = mathF<math::ExpOp>(b, l, d);
            return SmallVector<Value>{e, arith::AddFOp::create(b, l, a[3], e)};
          });
      SmallVector<utils::IteratorType> par(n.rank(),
                                           utils::IteratorType::parallel);
      Value y = buildGeneric(
          rewriter, loc, par, ValueRange{es[1]}, {km}, ValueRange{es[0]}, {id},
          [&](OpBuilder &b, Location l, ValueRange a) {
            return SmallVector<Value>{arith::DivFOp::create(b, l, a[1], a[0])};
          })[0];
      rewriter.replaceOp(op, castTensor(rewriter, loc, y, resTy));
      return success();
    }
    Value s = reduce1(rewriter, loc, n, ValueRange{x, m}, {id, km},
                      scalarConst(rewriter, loc, ct, 0),
                      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                        Value v = convertScalar(b, l, a[0], elem, ct);
                        Value d = arith::SubFOp::create(b, l, v, a[1]);
                        Value e = mathF<math::ExpOp>(b, l, d);
                        return arith::AddFOp::create(b, l, a[2], e);
                      });
    Value y = mapNest(
        rewriter, loc, n.sizes, elem, ValueRange{x, m, s}, {id, km, km},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value v = convertScalar(b, l, a[0], elem, ct);
          Value d = arith::SubFOp::create(b, l, v, a[1]);
          Value r;
          if (IsLog)
            r = arith::SubFOp::create(b, l, d, mathF<math::LogOp>(b, l, a[2]));
          else
            r = arith::DivFOp::create(b, l, mathF<math::ExpOp>(b, l, d), a[2]);
          return convertScalar(b, l, r, ct, elem);
        });
    rewriter.replaceOp(op, castTensor(rewriter, loc, y, resTy));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

/// Mean and (biased) variance of `x` over the reduced dims of `n`, computed
/// in `ct`, as tensors over the kept dims.
std::pair<Value, Value> meanAndVariance(OpBuilder &b, Location loc, Value x,
                                        Type orig, Type ct, const Nest &n) {
  MLIRContext *ctx = b.getContext();
  AffineMap id = n.identity(ctx), km = n.keptMap(ctx);
  SmallVector<OpFoldResult> kept = n.keptSizes();
  Value count = indexToScalar(b, loc, n.reducedCount(b, loc), ct);
  Value sum = reduce1(b, loc, n, ValueRange{x}, {id}, scalarConst(b, loc, ct, 0),
                      [&](OpBuilder &nb, Location l, ValueRange a) {
                        Value v = convertScalar(nb, l, a[0], orig, ct);
                        return addScalars(nb, l, a[1], v);
                      });
  Value mean = mapKept(b, loc, kept, ct, ValueRange{sum},
                       [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         return arith::DivFOp::create(nb, l, a[0], count);
                       });
  Value sq = reduce1(b, loc, n, ValueRange{x, mean}, {id, km},
                     scalarConst(b, loc, ct, 0),
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Value v = convertScalar(nb, l, a[0], orig, ct);
                       Value d = arith::SubFOp::create(nb, l, v, a[1]);
                       return addScalars(nb, l, a[2], arith::MulFOp::create(nb, l, d, d));
                     });
  Value var = mapKept(b, loc, kept, ct, ValueRange{sq},
                      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                        return arith::DivFOp::create(nb, l, a[0], count);
                      });
  return {mean, var};
}

/// scale * (x - mean) / sqrt(var + eps) + bias on scalars already in `ct`.
Value normalizeScalar(OpBuilder &b, Location loc, Value x, Value scale,
                      Value bias, Value mean, Value var, double eps) {
  Type ct = x.getType();
  Value d = arith::SubFOp::create(b, loc, x, mean);
  Value num = arith::MulFOp::create(b, loc, scale, d);
  Value ve = arith::AddFOp::create(b, loc, var, scalarConst(b, loc, ct, eps));
  Value den = math::SqrtOp::create(b, loc, ve);
  Value q = arith::DivFOp::create(b, loc, num, den);
  return arith::AddFOp::create(b, loc, q, bias);
}

struct BatchNormLowering : OpConversionPattern<dist::BatchNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::BatchNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    auto inTy = cast<RankedTensorType>(x.getType());
    int64_t rank = inTy.getRank();
    if (rank < 2)
      return notSupported(op, "batch normalisation of a tensor of rank < 2");
    SmallVector<Value> params{adaptor.getScale(), adaptor.getB(),
                              adaptor.getInputMean(), adaptor.getInputVar()};
    SmallVector<Type> porig{
        elemTypeOf(op.getScale()), elemTypeOf(op.getB()),
        elemTypeOf(op.getInputMean()), elemTypeOf(op.getInputVar())};
    for (Value p : params)
      if (cast<RankedTensorType>(p.getType()).getRank() != 1)
        return notSupported(op, "batch normalisation with non-1-D parameters");
    SmallVector<RankedTensorType> resTys;
    for (Type t : op->getResultTypes()) {
      auto rt = getTypeConverter()->convertType<RankedTensorType>(t);
      if (!rt)
        return notSupported(op, "an unranked result");
      resTys.push_back(rt);
    }
    Type elem = inTy.getElementType();
    Type ct = elem.isF64() ? elem : Type(rewriter.getF32Type());
    double eps = op.getEpsilon().convertToDouble();
    double mom = op.getMomentum().convertToDouble();
    bool training = op.getTrainingMode() != 0;

    Nest full(sizesOf(rewriter, loc, x));
    AffineMap id = full.identity(ctx), ch = full.dimsMap(ctx, {1});

    if (!training) {
      Value y = mapNest(
          rewriter, loc, full.sizes, elem,
          ValueRange{x, params[0], params[1], params[2], params[3]},
          {id, ch, ch, ch, ch},
          [&](OpBuilder &b, Location l, ValueRange a) -> Value {
            Value v = convertScalar(b, l, a[0], elem, ct);
            SmallVector<Value> p;
            for (int i = 0; i < 4; ++i)
              p.push_back(convertScalar(b, l, a[i + 1], porig[i], ct));
            Value r = normalizeScalar(b, l, v, p[0], p[1], p[2], p[3], eps);
            return convertScalar(b, l, r, ct, elem);
          });
      rewriter.replaceOp(op, {castTensor(rewriter, loc, y, resTys[0]),
                              castTensor(rewriter, loc, params[2], resTys[1]),
                              castTensor(rewriter, loc, params[3], resTys[2])});
      return success();
    }

    // Training mode: normalise with the batch statistics over every dim but
    // the channel and update the running statistics.
    Nest n = full;
    for (int64_t i = 0; i < rank; ++i)
      n.reduced[i] = i != 1;
    auto [mean, var] = meanAndVariance(rewriter, loc, x, elem, ct, n);
    Value y = mapNest(
        rewriter, loc, full.sizes, elem,
        ValueRange{x, params[0], params[1], mean, var}, {id, ch, ch, ch, ch},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value v = convertScalar(b, l, a[0], elem, ct);
          Value s = convertScalar(b, l, a[1], porig[0], ct);
          Value bi = convertScalar(b, l, a[2], porig[1], ct);
          Value r = normalizeScalar(b, l, v, s, bi, a[3], a[4], eps);
          return convertScalar(b, l, r, ct, elem);
        });
    SmallVector<OpFoldResult> kept = n.keptSizes();
    auto running = [&](Value input, Type inOrig, Value batch,
                       RankedTensorType resTy, Type resOrig) {
      Type resElem = resTy.getElementType();
      return mapKept(rewriter, loc, kept, resElem, ValueRange{input, batch},
                     [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                       Value i = convertScalar(b, l, a[0], inOrig, ct);
                       Value r = arith::AddFOp::create(
                           b, l,
                           arith::MulFOp::create(b, l, i,
                                                 scalarConst(b, l, ct, mom)),
                           arith::MulFOp::create(
                               b, l, a[1], scalarConst(b, l, ct, 1.0 - mom)));
                       return convertScalar(b, l, r, ct, resOrig);
                     });
    };
    Value rm = running(params[2], porig[2], mean, resTys[1],
                       elemTypeOf(op.getRunningMean()));
    Value rv = running(params[3], porig[3], var, resTys[2],
                       elemTypeOf(op.getRunningVar()));
    rewriter.replaceOp(op, {castTensor(rewriter, loc, y, resTys[0]),
                            castTensor(rewriter, loc, rm, resTys[1]),
                            castTensor(rewriter, loc, rv, resTys[2])});
    return success();
  }
};

struct InstanceNormLowering : OpConversionPattern<dist::InstanceNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::InstanceNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    auto inTy = cast<RankedTensorType>(x.getType());
    int64_t rank = inTy.getRank();
    if (rank < 3)
      return notSupported(op, "instance normalisation of a tensor of rank < 3");
    Value scale = adaptor.getScale(), bias = adaptor.getB();
    if (cast<RankedTensorType>(scale.getType()).getRank() != 1 ||
        cast<RankedTensorType>(bias.getType()).getRank() != 1)
      return notSupported(op, "instance normalisation with non-1-D parameters");
    auto resTy = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    if (!resTy)
      return notSupported(op, "an unranked result");
    Type elem = inTy.getElementType();
    Type sOrig = elemTypeOf(op.getScale()), bOrig = elemTypeOf(op.getB());
    Type ct = elem.isF64() ? elem : Type(rewriter.getF32Type());
    double eps = op.getEpsilon().convertToDouble();

    Nest n(sizesOf(rewriter, loc, x));
    for (int64_t i = 2; i < rank; ++i)
      n.reduced[i] = true;
    auto [mean, var] = meanAndVariance(rewriter, loc, x, elem, ct, n);
    Nest full(n.sizes);
    AffineMap id = full.identity(ctx), ch = full.dimsMap(ctx, {1}),
              nc = full.dimsMap(ctx, {0, 1});
    Value y = mapNest(
        rewriter, loc, full.sizes, elem, ValueRange{x, scale, bias, mean, var},
        {id, ch, ch, nc, nc},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value v = convertScalar(b, l, a[0], elem, ct);
          Value s = convertScalar(b, l, a[1], sOrig, ct);
          Value bi = convertScalar(b, l, a[2], bOrig, ct);
          Value r = normalizeScalar(b, l, v, s, bi, a[3], a[4], eps);
          return convertScalar(b, l, r, ct, elem);
        });
    rewriter.replaceOp(op, castTensor(rewriter, loc, y, resTy));
    return success();
  }
};

struct LayerNormLowering : OpConversionPattern<dist::LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    auto inTy = cast<RankedTensorType>(x.getType());
    int64_t rank = inTy.getRank();
    std::optional<int64_t> axis =
        normAxis(static_cast<int64_t>(op.getAxis()), rank);
    if (!axis)
      return notSupported(op, "an out-of-range axis");
    Value scale = adaptor.getScale(), bias = adaptor.getBias();
    auto scaleTy = cast<RankedTensorType>(scale.getType());
    if (scaleTy.getRank() > rank - *axis)
      return notSupported(op, "a layer normalisation scale of higher rank than "
                              "the normalised dimensions");
    RankedTensorType biasTy;
    if (bias) {
      biasTy = cast<RankedTensorType>(bias.getType());
      if (biasTy.getRank() > rank - *axis)
        return notSupported(op, "a layer normalisation bias of higher rank "
                                "than the normalised dimensions");
    }
    SmallVector<RankedTensorType> resTys;
    for (Type t : op->getResultTypes()) {
      auto rt = getTypeConverter()->convertType<RankedTensorType>(t);
      if (!rt || rt.getRank() != rank)
        return notSupported(op, "a layer normalisation result of another rank");
      resTys.push_back(rt);
    }
    Type elem = inTy.getElementType();
    Type stash = resTys[1].getElementType();
    Type ct = (elem.isF64() || stash.isF64()) ? Type(rewriter.getF64Type())
                                              : Type(rewriter.getF32Type());
    Type sOrig = elemTypeOf(op.getScale());
    Type bOrig = bias ? elemTypeOf(op.getBias()) : Type();
    double eps = op.getEpsilon().convertToDouble();

    Nest n(sizesOf(rewriter, loc, x));
    for (int64_t i = *axis; i < rank; ++i)
      n.reduced[i] = true;
    SmallVector<OpFoldResult> kept = n.keptSizes();
    auto [mean, var] = meanAndVariance(rewriter, loc, x, elem, ct, n);
    Value inv = mapKept(rewriter, loc, kept, ct, ValueRange{var},
                        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                          Value ve = arith::AddFOp::create(
                              b, l, a[0], scalarConst(b, l, ct, eps));
                          Value sd = math::SqrtOp::create(b, l, ve);
                          return arith::DivFOp::create(
                              b, l, scalarConst(b, l, ct, 1.0), sd);
                        });
    AffineMap id = n.identity(ctx), km = n.keptMap(ctx);
    SmallVector<Value> ins{x, mean, inv, scale};
    SmallVector<AffineMap> maps{id, km, km, broadcastMap(ctx, scaleTy, inTy)};
    if (bias) {
      ins.push_back(bias);
      maps.push_back(broadcastMap(ctx, biasTy, inTy));
    }
    bool hasBias = (bool)bias;
    Value y = mapNest(rewriter, loc, n.sizes, elem, ins, maps,
                      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                        Value v = convertScalar(b, l, a[0], elem, ct);
                        Value d = arith::SubFOp::create(b, l, v, a[1]);
                        Value r = arith::MulFOp::create(b, l, d, a[2]);
                        r = arith::MulFOp::create(
                            b, l, r, convertScalar(b, l, a[3], sOrig, ct));
                        if (hasBias)
                          r = arith::AddFOp::create(
                              b, l, r, convertScalar(b, l, a[4], bOrig, ct));
                        return convertScalar(b, l, r, ct, elem);
                      });
    auto stat = [&](Value v, RankedTensorType resTy) {
      Type re = resTy.getElementType();
      if (re != ct)
        v = mapKept(rewriter, loc, kept, re, ValueRange{v},
                    [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                      return convertScalar(b, l, a[0], ct, re);
                    });
      return castTensor(rewriter, loc, expandKept(rewriter, loc, v, n), resTy);
    };
    Value meanOut = stat(mean, resTys[1]);
    Value invOut = stat(inv, resTys[2]);
    rewriter.replaceOp(op,
                       {castTensor(rewriter, loc, y, resTys[0]), meanOut, invOut});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// Window geometry of a pooling op over static spatial dims.
struct PoolGeom {
  int64_t n = 0; // spatial rank
  SmallVector<int64_t> in, out, k, s, d, pb, pe, peEff;
};

FailureOr<PoolGeom> poolGeometry(Operation *op, RankedTensorType inTy,
                                 RankedTensorType outTy, StringRef autoPad,
                                 ArrayRef<int64_t> kernel,
                                 std::optional<ArrayRef<int64_t>> strides,
                                 std::optional<ArrayRef<int64_t>> dilations,
                                 std::optional<ArrayRef<int64_t>> pads,
                                 bool ceil) {
  int64_t rank = inTy.getRank();
  if (rank < 3)
    return notSupported(op, "pooling of a tensor of rank < 3");
  if (outTy.getRank() != rank)
    return notSupported(op, "a pooling result of another rank");
  PoolGeom g;
  g.n = rank - 2;
  int64_t n = g.n;
  if ((int64_t)kernel.size() != n || (strides && (int64_t)strides->size() != n) ||
      (dilations && (int64_t)dilations->size() != n) ||
      (pads && (int64_t)pads->size() != 2 * n))
    return notSupported(op, "pooling attributes of the wrong length");
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (!same && autoPad != "NOTSET" && autoPad != "VALID")
    return notSupported(op, "auto_pad '" + autoPad + "'");
  for (int64_t i = 0; i < n; ++i) {
    int64_t in = inTy.getDimSize(2 + i);
    if (ShapedType::isDynamic(in))
      return notSupported(op, "pooling over dynamic spatial dimensions");
    int64_t k = kernel[i], s = strides ? (*strides)[i] : 1,
            d = dilations ? (*dilations)[i] : 1;
    if (k < 1 || s < 1 || d < 1)
      return notSupported(op, "non-positive kernel, strides or dilations");
    int64_t pb = 0, pe = 0;
    if (autoPad == "NOTSET" && pads) {
      pb = (*pads)[i];
      pe = (*pads)[i + n];
    }
    if (pb < 0 || pe < 0)
      return notSupported(op, "negative pads");
    int64_t ek = (k - 1) * d + 1;
    int64_t o = outTy.getDimSize(2 + i);
    if (ShapedType::isDynamic(o)) {
      if (same) {
        o = (in + s - 1) / s;
      } else {
        int64_t span = in + pb + pe - ek;
        if (span < 0)
          return notSupported(op, "a pooling window larger than its input");
        o = (ceil ? (span + s - 1) / s : span / s) + 1;
        if (ceil && (o - 1) * s >= in + pb)
          --o;
      }
    }
    if (o < 1)
      return notSupported(op, "an empty pooling output");
    if (same) {
      int64_t total = std::max<int64_t>(0, (o - 1) * s + ek - in);
      if (autoPad == "SAME_UPPER") {
        pb = total / 2;
        pe = total - pb;
      } else {
        pe = total / 2;
        pb = total - pe;
      }
    }
    g.in.push_back(in);
    g.out.push_back(o);
    g.k.push_back(k);
    g.s.push_back(s);
    g.d.push_back(d);
    g.pb.push_back(pb);
    g.pe.push_back(pe);
    g.peEff.push_back(std::max(pe, (o - 1) * s + ek - in - pb));
  }
  return g;
}

/// Pads the spatial dims of `x` by the geometry's begin and effective end
/// pads with `value`.
Value padPoolInput(OpBuilder &b, Location loc, Value x, const PoolGeom &g,
                   Value value) {
  return padSpatial(b, loc, x, g.pb, g.peEff, value);
}

/// Sliding-window reduction over the padded input `xp`: the loop nest is
/// N, C, output spatial dims (parallel), then kernel dims (reduction).
SmallVector<Value> poolGeneric(OpBuilder &b, Location loc, Value xp,
                               const PoolGeom &g,
                               ArrayRef<OpFoldResult> outSizes,
                               ValueRange inits, MultiBodyFn body) {
  MLIRContext *ctx = b.getContext();
  int64_t n = g.n, loops = 2 + 2 * n;
  SmallVector<AffineExpr> inE{getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx)};
  SmallVector<AffineExpr> winE, outE{getAffineDimExpr(0, ctx),
                                     getAffineDimExpr(1, ctx)};
  for (int64_t i = 0; i < n; ++i) {
    AffineExpr o = getAffineDimExpr(2 + i, ctx), k = getAffineDimExpr(2 + n + i, ctx);
    inE.push_back(o * g.s[i] + k * g.d[i]);
    winE.push_back(k);
    outE.push_back(o);
  }
  Type elem = elemTypeOf(xp);
  Value window = tensor::EmptyOp::create(b, loc, g.k, elem);
  SmallVector<Value> outs;
  SmallVector<AffineMap> outMaps;
  for (Value s : inits) {
    outs.push_back(
        filledTensor(b, loc, tensorOf(outSizes, s.getType()), outSizes, s));
    outMaps.push_back(AffineMap::get(loops, 0, outE, ctx));
  }
  SmallVector<utils::IteratorType> iters(2 + n, utils::IteratorType::parallel);
  iters.append(n, utils::IteratorType::reduction);
  return buildGeneric(b, loc, iters, ValueRange{xp, window},
                      {AffineMap::get(loops, 0, inE, ctx),
                       AffineMap::get(loops, 0, winE, ctx)},
                      outs, outMaps, body);
}

SmallVector<OpFoldResult> poolOutSizes(OpBuilder &b, Location loc, Value x,
                                       const PoolGeom &g) {
  SmallVector<OpFoldResult> in = sizesOf(b, loc, x);
  SmallVector<OpFoldResult> out{in[0], in[1]};
  for (int64_t o : g.out)
    out.push_back(b.getIndexAttr(o));
  return out;
}

struct MaxPoolLowering : OpConversionPattern<dist::MaxPoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::MaxPoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto inTy = cast<RankedTensorType>(x.getType());
    auto resTy = getTypeConverter()->convertType<RankedTensorType>(
        op.getOutput().getType());
    auto idxTy = getTypeConverter()->convertType<RankedTensorType>(
        op.getIndices().getType());
    if (!resTy || !idxTy)
      return notSupported(op, "an unranked result");
    if (op.getStorageOrder() > 1)
      return notSupported(op, "storage_order other than 0 or 1");
    FailureOr<PoolGeom> geom = poolGeometry(
        op, inTy, resTy, op.getAutoPad(), op.getKernelShape(), op.getStrides(),
        op.getDilations(), op.getPads(), op.getCeilMode() != 0);
    if (failed(geom))
      return failure();
    const PoolGeom &g = *geom;
    Type orig = elemTypeOf(op.getInput());
    Type elem = inTy.getElementType();
    bool uns = isUnsignedInt(orig);
    Type i64 = rewriter.getI64Type();

    Value lowest = lowestConst(rewriter, loc, elem, uns);
    Value xp = padPoolInput(rewriter, loc, x, g, lowest);
    SmallVector<OpFoldResult> outSizes = poolOutSizes(rewriter, loc, x, g);

    if (op.getIndices().use_empty()) {
      Value y = poolGeneric(rewriter, loc, xp, g, outSizes, ValueRange{lowest},
                            [&](OpBuilder &b, Location l, ValueRange a) {
                              return SmallVector<Value>{
                                  sMax(b, l, a[0], a[2], uns)};
                            })[0];
      Value zeros = filledTensor(rewriter, loc, tensorOf(outSizes, i64),
                                 outSizes, scalarConst(rewriter, loc, i64, 0));
      rewriter.replaceOp(op, {castTensor(rewriter, loc, y, resTy),
                              castTensor(rewriter, loc, zeros, idxTy)});
      return success();
    }

    // With indices: keep the row-major flat input index of the maximum (the
    // smallest such index on ties, whatever the iteration order); padding
    // never wins.
    int64_t n = g.n;
    Value channels = ofrToValue(rewriter, loc, sizesOf(rewriter, loc, x)[1]);
    Value initI = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getI64IntegerAttr(std::numeric_limits<int64_t>::max()));
    SmallVector<Value> rs = poolGeneric(
        rewriter, loc, xp, g, outSizes, ValueRange{lowest, initI},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value v = a[0], cur = a[2], curI = a[3];
          auto idx = [&](int64_t dim) -> Value {
            return linalg::IndexOp::create(b, l, dim);
          };
          auto cidx = [&](int64_t c) -> Value {
            return arith::ConstantIndexOp::create(b, l, c);
          };
          Value valid;
          Value flat = arith::AddIOp::create(
              b, l, arith::MulIOp::create(b, l, idx(0), channels), idx(1));
          for (int64_t i = 0; i < n; ++i) {
            Value h = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, idx(2 + i), cidx(g.s[i])),
                arith::MulIOp::create(b, l, idx(2 + n + i), cidx(g.d[i])));
            if (g.pb[i] != 0)
              h = arith::SubIOp::create(b, l, h, cidx(g.pb[i]));
            if (g.pb[i] != 0 || g.peEff[i] != 0) {
              // Negative values compare as huge unsigned ones.
              Value ok = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                               h, cidx(g.in[i]));
              valid = valid ? andI(b, l, valid, ok) : ok;
            }
            flat = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, flat, cidx(g.in[i])), h);
          }
          Value pos = arith::IndexCastOp::create(b, l, i64, flat);
          Value better = sCmp(b, l, CmpKind::GT, v, cur, uns);
          Value eq = sCmp(b, l, CmpKind::EQ, v, cur, uns);
          Value tie = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                            pos, curI);
          Value take = orI(b, l, better, andI(b, l, eq, tie));
          if (valid)
            take = andI(b, l, valid, take);
          return {arith::SelectOp::create(b, l, take, v, cur),
                  arith::SelectOp::create(b, l, take, pos, curI)};
        });
    Value indices = rs[1];
    if (op.getStorageOrder() == 1 && n > 1) {
      // Column-major over the spatial dims.
      int64_t plane = 1;
      for (int64_t s : g.in)
        plane *= s;
      indices = mapKept(
          rewriter, loc, outSizes, i64, ValueRange{indices},
          [&](OpBuilder &b, Location l, ValueRange a) -> Value {
            auto c = [&](int64_t v) { return scalarConst(b, l, i64, v); };
            Value cP = c(plane);
            Value nc = arith::DivSIOp::create(b, l, a[0], cP);
            Value r = arith::RemSIOp::create(b, l, a[0], cP);
            SmallVector<Value> h(n);
            for (int64_t i = n - 1; i >= 0; --i) {
              h[i] = i == 0 ? r : arith::RemSIOp::create(b, l, r, c(g.in[i]));
              if (i > 0)
                r = arith::DivSIOp::create(b, l, r, c(g.in[i]));
            }
            Value col = h[n - 1];
            for (int64_t i = n - 2; i >= 0; --i)
              col = arith::AddIOp::create(
                  b, l, arith::MulIOp::create(b, l, col, c(g.in[i])), h[i]);
            return arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, nc, cP), col);
          });
    }
    rewriter.replaceOp(op, {castTensor(rewriter, loc, rs[0], resTy),
                            castTensor(rewriter, loc, indices, idxTy)});
    return success();
  }
};

struct AveragePoolLowering : OpConversionPattern<dist::AveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::AveragePoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    auto inTy = cast<RankedTensorType>(x.getType());
    auto resTy = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    if (!resTy)
      return notSupported(op, "an unranked result");
    FailureOr<PoolGeom> geom = poolGeometry(
        op, inTy, resTy, op.getAutoPad(), op.getKernelShape(), op.getStrides(),
        op.getDilations(), op.getPads(), op.getCeilMode() != 0);
    if (failed(geom))
      return failure();
    const PoolGeom &g = *geom;
    int64_t n = g.n, rank = 2 + n;
    Type elem = inTy.getElementType();
    Type ct = computeType(elem);
    bool includePad = op.getCountIncludePad() != 0;

    Value xp = padPoolInput(rewriter, loc, x, g, scalarConst(rewriter, loc, elem, 0));
    SmallVector<OpFoldResult> outSizes = poolOutSizes(rewriter, loc, x, g);
    Value sum = poolGeneric(
        rewriter, loc, xp, g, outSizes, ValueRange{scalarConst(rewriter, loc, ct, 0)},
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value v = convertScalar(b, l, a[0], elem, ct);
          return SmallVector<Value>{arith::AddFOp::create(b, l, a[2], v)};
        })[0];

    // The divisor is a product of per-dimension counts: the window positions
    // inside the input (or inside input + explicit pads with
    // count_include_pad); positions only added for ceil_mode never count.
    double uniform = 1.0;
    SmallVector<Value> divs;
    SmallVector<AffineMap> maps{AffineMap::getMultiDimIdentityMap(rank, ctx)};
    for (int64_t i = 0; i < n; ++i) {
      int64_t lo = includePad ? -g.pb[i] : 0;
      int64_t hi = includePad ? g.in[i] + g.pe[i] : g.in[i];
      SmallVector<double> counts;
      for (int64_t o = 0; o < g.out[i]; ++o) {
        int64_t c = 0;
        for (int64_t k = 0; k < g.k[i]; ++k) {
          int64_t p = o * g.s[i] + k * g.d[i] - g.pb[i];
          if (p >= lo && p < hi)
            ++c;
        }
        counts.push_back((double)c);
      }
      if (llvm::all_equal(counts)) {
        uniform *= counts.front();
        continue;
      }
      SmallVector<Attribute> attrs;
      for (double c : counts)
        attrs.push_back(FloatAttr::get(ct, c));
      auto t = RankedTensorType::get({g.out[i]}, ct);
      divs.push_back(
          arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(t, attrs)));
      maps.push_back(AffineMap::get(rank, 0, getAffineDimExpr(2 + i, ctx)));
    }
    SmallVector<Value> ins{sum};
    ins.append(divs);
    Value y = mapNest(rewriter, loc, outSizes, elem, ins, maps,
                      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                        Value den = scalarConst(b, l, ct, uniform);
                        for (Value c : a.drop_front())
                          den = arith::MulFOp::create(b, l, den, c);
                        Value q = arith::DivFOp::create(b, l, a[0], den);
                        return convertScalar(b, l, q, ct, elem);
                      });
    rewriter.replaceOp(op, castTensor(rewriter, loc, y, resTy));
    return success();
  }
};

template <typename OpTy, bool IsMax>
struct GlobalPoolLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto inTy = cast<RankedTensorType>(x.getType());
    auto resTy = this->getTypeConverter()->template convertType<RankedTensorType>(
        op.getType());
    int64_t rank = inTy.getRank();
    if (!resTy || rank < 3 || resTy.getRank() != rank)
      return notSupported(op, "global pooling of a tensor of rank < 3");
    Nest n(sizesOf(rewriter, loc, x));
    for (int64_t i = 2; i < rank; ++i)
      n.reduced[i] = true;
    Value r = buildReduce(rewriter, loc, IsMax ? RK::Max : RK::Mean, x,
                          elemTypeOf(op.getInput()), n);
    r = expandKept(rewriter, loc, r, n);
    rewriter.replaceOp(op, castTensor(rewriter, loc, r, resTy));
    return success();
  }
};

} // namespace

void mlir::dist::codegen::populateReductionLowering(TypeConverter &tc,
                                                    RewritePatternSet &p) {
  MLIRContext *ctx = p.getContext();
  p.add<ReduceLowering<dist::ReduceSumOp, RK::Sum>,
        ReduceLowering<dist::ReduceMeanOp, RK::Mean>,
        ReduceLowering<dist::ReduceMaxOp, RK::Max>,
        ReduceLowering<dist::ReduceMinOp, RK::Min>,
        ReduceLowering<dist::ReduceProdOp, RK::Prod>,
        ReduceLowering<dist::ReduceSumSquareOp, RK::SumSquare>,
        ReduceLowering<dist::ReduceL2Op, RK::L2>,
        ReduceLowering<dist::ReduceLogSumExpOp, RK::LogSumExp>,
        ArgReduceLowering<dist::ArgMaxOp, true>,
        ArgReduceLowering<dist::ArgMinOp, false>,
        SoftmaxLowering<dist::SoftmaxOp, false>,
        SoftmaxLowering<dist::LogSoftmaxOp, true>, BatchNormLowering,
        InstanceNormLowering, LayerNormLowering, MaxPoolLowering,
        AveragePoolLowering,
        GlobalPoolLowering<dist::GlobalAveragePoolOp, false>,
        GlobalPoolLowering<dist::GlobalMaxPoolOp, true>>(tc, ctx);
}
