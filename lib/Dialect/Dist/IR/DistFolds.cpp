//===- DistFolds.cpp - folders of dist ops --------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Folders that evaluate shape arithmetic and data movement on constants
// (the Shape/Gather/Unsqueeze/Concat/Reshape chains exporters write), plus
// the trivial identities (no-op casts, reshapes and transposes). Evaluation
// is limited to small tensors so folding never blows up the IR; splats of any
// size fold.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/ShapeUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/APSInt.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dist;

/// Largest number of result elements a folder computes one by one.
static constexpr int64_t kMaxFoldElements = 4096;

namespace {
RankedTensorType staticResultType(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape())
    return nullptr;
  return ranked;
}

DenseElementsAttr asDense(Attribute attr) {
  return dyn_cast_or_null<DenseElementsAttr>(attr);
}

bool smallEnough(RankedTensorType type) {
  return type.getNumElements() <= kMaxFoldElements;
}

Dims stridesOf(ArrayRef<int64_t> shape) {
  Dims strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Linear index into an operand of shape `shape` for the result multi-index
/// `idx` under numpy broadcasting.
int64_t broadcastIndex(ArrayRef<int64_t> idx, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> strides) {
  int64_t linear = 0;
  size_t off = idx.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1)
      linear += idx[off + i] * strides[i];
  return linear;
}

void unravel(int64_t linear, ArrayRef<int64_t> shape, Dims &idx) {
  idx.assign(shape.size(), 0);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    idx[i] = shape[i] ? linear % shape[i] : 0;
    linear = shape[i] ? linear / shape[i] : 0;
  }
}

/// Evaluates `fn` elementwise over broadcast constant operands. `fn` maps
/// the operands' element attributes to the result element (null: give up).
template <typename Fn>
Attribute foldElementwise(RankedTensorType resultType,
                          ArrayRef<DenseElementsAttr> operands, Fn fn) {
  if (!resultType || llvm::any_of(operands, [](auto a) { return !a; }))
    return {};
  SmallVector<Attribute> args(operands.size());
  if (llvm::all_of(operands, [](auto a) { return a.isSplat(); })) {
    for (auto [i, a] : llvm::enumerate(operands))
      args[i] = a.template getSplatValue<Attribute>();
    Attribute r = fn(args);
    if (!r)
      return {};
    return DenseElementsAttr::get(resultType, r);
  }
  if (!smallEnough(resultType))
    return {};
  SmallVector<SmallVector<Attribute>> values;
  SmallVector<Dims> shapes, strides;
  for (DenseElementsAttr a : operands) {
    values.push_back(llvm::to_vector(a.getValues<Attribute>()));
    auto shape = Dims(a.getType().getShape());
    strides.push_back(stridesOf(shape));
    shapes.push_back(std::move(shape));
  }
  SmallVector<Attribute> result;
  result.reserve(resultType.getNumElements());
  Dims idx;
  for (int64_t i = 0, e = resultType.getNumElements(); i < e; ++i) {
    unravel(i, resultType.getShape(), idx);
    for (size_t k = 0; k < operands.size(); ++k) {
      if (shapes[k].size() > idx.size())
        return {};
      args[k] = values[k][broadcastIndex(idx, shapes[k], strides[k])];
    }
    Attribute r = fn(args);
    if (!r)
      return {};
    result.push_back(r);
  }
  return DenseElementsAttr::get(resultType, result);
}

/// Integer or float arithmetic on two element attributes of one type.
template <typename IntFn, typename FloatFn>
Attribute arith(Type resultElt, Attribute a, Attribute b, IntFn intFn,
                FloatFn floatFn) {
  if (auto ia = dyn_cast<IntegerAttr>(a)) {
    auto ib = dyn_cast<IntegerAttr>(b);
    if (!ib)
      return {};
    bool isUnsigned = ia.getType().isUnsignedInteger();
    std::optional<APInt> r = intFn(ia.getValue(), ib.getValue(), isUnsigned);
    if (!r)
      return {};
    return IntegerAttr::get(resultElt, *r);
  }
  if (auto fa = dyn_cast<FloatAttr>(a)) {
    auto fb = dyn_cast<FloatAttr>(b);
    if (!fb)
      return {};
    std::optional<APFloat> r = floatFn(fa.getValue(), fb.getValue());
    if (!r)
      return {};
    return FloatAttr::get(resultElt, *r);
  }
  return {};
}

/// Compares two element attributes; returns the i1 result.
template <typename Pred>
Attribute compare(MLIRContext *ctx, Attribute a, Attribute b, Pred pred) {
  int cmp;
  if (auto ia = dyn_cast<IntegerAttr>(a)) {
    auto ib = dyn_cast<IntegerAttr>(b);
    if (!ib)
      return {};
    bool isUnsigned =
        ia.getType().isUnsignedInteger() || ia.getType().isInteger(1);
    const APInt &x = ia.getValue(), &y = ib.getValue();
    cmp = x == y ? 0 : ((isUnsigned ? x.ult(y) : x.slt(y)) ? -1 : 1);
  } else if (auto fa = dyn_cast<FloatAttr>(a)) {
    auto fb = dyn_cast<FloatAttr>(b);
    if (!fb)
      return {};
    APFloat::cmpResult r = fa.getValue().compare(fb.getValue());
    if (r == APFloat::cmpUnordered)
      return IntegerAttr::get(IntegerType::get(ctx, 1), pred(2) ? 1 : 0);
    cmp = r == APFloat::cmpEqual ? 0 : (r == APFloat::cmpLessThan ? -1 : 1);
  } else {
    return {};
  }
  return IntegerAttr::get(IntegerType::get(ctx, 1), pred(cmp) ? 1 : 0);
}

Type resultElt(Operation *op) {
  return getElementTypeOrSelf(op->getResult(0).getType());
}

/// Folds a binary op over constant operands with `fn(a, b)`.
template <typename Fn>
OpFoldResult foldBinary(Operation *op, Attribute lhs, Attribute rhs, Fn fn) {
  return foldElementwise(staticResultType(op->getResult(0).getType()),
                         {asDense(lhs), asDense(rhs)},
                         [&](ArrayRef<Attribute> a) { return fn(a[0], a[1]); });
}
} // namespace

/// Folds a small integer vector whose elements are all known through
/// traceShapeValue, e.g. Gather(Shape(x), 1) when only x's dimension 0 is
/// dynamic.
static Attribute foldKnownShapeValue(Value result) {
  RankedTensorType type = staticResultType(result.getType());
  if (!type || type.getRank() > 1 || type.getNumElements() > 64 ||
      !type.getElementType().isSignlessInteger(64))
    return {};
  std::optional<SmallVector<DimValue>> traced = traceShapeValue(result);
  if (!traced || static_cast<int64_t>(traced->size()) != type.getNumElements())
    return {};
  Dims values;
  for (const DimValue &d : *traced) {
    if (!d.isKnown())
      return {};
    values.push_back(d.value);
  }
  return DenseElementsAttr::get(type, ArrayRef<int64_t>(values));
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor) {
  RankedTensorType type = staticResultType(getType());
  if (!type)
    return {};
  if (ElementsAttr value = getValueAttr()) {
    auto dense = dyn_cast<DenseElementsAttr>(value);
    if (!dense)
      return {};
    return DenseElementsAttr::get(type, *dense.getValues<Attribute>().begin());
  }
  return DenseElementsAttr::get(type,
                                FloatAttr::get(type.getElementType(), 0.0));
}

OpFoldResult IdentityOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Casts
//===----------------------------------------------------------------------===//

static Attribute castElement(Attribute value, Type to) {
  if (auto i = dyn_cast<IntegerAttr>(value)) {
    bool srcUnsigned =
        i.getType().isUnsignedInteger() || i.getType().isInteger(1);
    const APInt &v = i.getValue();
    if (auto it = dyn_cast<IntegerType>(to)) {
      if (it.getWidth() == 1)
        return IntegerAttr::get(to, v.isZero() ? 0 : 1);
      return IntegerAttr::get(to, srcUnsigned ? v.zextOrTrunc(it.getWidth())
                                              : v.sextOrTrunc(it.getWidth()));
    }
    if (auto ft = dyn_cast<FloatType>(to)) {
      APFloat f(ft.getFloatSemantics());
      f.convertFromAPInt(v, !srcUnsigned, APFloat::rmNearestTiesToEven);
      return FloatAttr::get(to, f);
    }
    return {};
  }
  if (auto f = dyn_cast<FloatAttr>(value)) {
    APFloat v = f.getValue();
    if (auto it = dyn_cast<IntegerType>(to)) {
      if (it.getWidth() == 1)
        return IntegerAttr::get(to, v.isZero() ? 0 : 1);
      if (v.isNaN() || v.isInfinity())
        return {};
      APSInt result(it.getWidth(), it.isUnsignedInteger());
      bool exact;
      if (v.convertToInteger(result, APFloat::rmTowardZero, &exact) &
          APFloat::opInvalidOp)
        return {};
      return IntegerAttr::get(to, result);
    }
    if (auto ft = dyn_cast<FloatType>(to)) {
      bool lost;
      v.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      return FloatAttr::get(to, v);
    }
  }
  return {};
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (Attribute known = foldKnownShapeValue(getResult()))
    return known;
  if (getInput().getType() == getType())
    return getInput();
  Type to = getTo();
  return foldElementwise(
      staticResultType(getType()), {asDense(adaptor.getInput())},
      [&](ArrayRef<Attribute> a) { return castElement(a[0], to); });
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic and comparisons
//===----------------------------------------------------------------------===//

/// `a + b`, `a - b`, `a * b` on element attributes (integers wrap).
static Attribute addElements(Type elt, Attribute a, Attribute b) {
  return arith(
      elt, a, b,
      [](const APInt &x, const APInt &y, bool) -> std::optional<APInt> {
        return x + y;
      },
      [](APFloat x, const APFloat &y) -> std::optional<APFloat> {
        x.add(y, APFloat::rmNearestTiesToEven);
        return x;
      });
}

static Attribute subElements(Type elt, Attribute a, Attribute b) {
  return arith(
      elt, a, b,
      [](const APInt &x, const APInt &y, bool) -> std::optional<APInt> {
        return x - y;
      },
      [](APFloat x, const APFloat &y) -> std::optional<APFloat> {
        x.subtract(y, APFloat::rmNearestTiesToEven);
        return x;
      });
}

static Attribute mulElements(Type elt, Attribute a, Attribute b) {
  return arith(
      elt, a, b,
      [](const APInt &x, const APInt &y, bool) -> std::optional<APInt> {
        return x * y;
      },
      [](APFloat x, const APFloat &y) -> std::optional<APFloat> {
        x.multiply(y, APFloat::rmNearestTiesToEven);
        return x;
      });
}

/// Folds a binary op whose element function is `fn(elt, a, b)`.
static OpFoldResult foldArith(Operation *op, Attribute lhs, Attribute rhs,
                              Attribute (*fn)(Type, Attribute, Attribute)) {
  if (Attribute known = foldKnownShapeValue(op->getResult(0)))
    return known;
  Type elt = resultElt(op);
  return foldBinary(op, lhs, rhs,
                    [&](Attribute a, Attribute b) { return fn(elt, a, b); });
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldArith(*this, adaptor.getLhs(), adaptor.getRhs(), addElements);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldArith(*this, adaptor.getLhs(), adaptor.getRhs(), subElements);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldArith(*this, adaptor.getLhs(), adaptor.getRhs(), mulElements);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (Attribute known = foldKnownShapeValue(getResult()))
    return known;
  Type elt = resultElt(*this);
  return foldBinary(
      *this, adaptor.getLhs(), adaptor.getRhs(), [&](Attribute a, Attribute b) {
        return arith(
            elt, a, b,
            [](const APInt &x, const APInt &y,
               bool isUnsigned) -> std::optional<APInt> {
              if (y.isZero() ||
                  (!isUnsigned && x.isMinSignedValue() && y.isAllOnes()))
                return std::nullopt;
              return isUnsigned ? x.udiv(y) : x.sdiv(y);
            },
            [](APFloat x, const APFloat &y) -> std::optional<APFloat> {
              x.divide(y, APFloat::rmNearestTiesToEven);
              return x;
            });
      });
}

OpFoldResult ModOp::fold(FoldAdaptor adaptor) {
  Type elt = resultElt(*this);
  bool fmod = getFmod() != 0;
  return foldBinary(
      *this, adaptor.getLhs(), adaptor.getRhs(), [&](Attribute a, Attribute b) {
        return arith(
            elt, a, b,
            [&](const APInt &x, const APInt &y,
                bool isUnsigned) -> std::optional<APInt> {
              if (y.isZero())
                return std::nullopt;
              if (isUnsigned)
                return x.urem(y);
              if (!fmod && x.isMinSignedValue() && y.isAllOnes())
                return APInt(x.getBitWidth(), 0);
              APInt r = x.srem(y);
              // Without fmod the result takes the divisor's sign.
              if (!fmod && !r.isZero() && (r.isNegative() != y.isNegative()))
                r += y;
              return r;
            },
            [&](APFloat x, const APFloat &y) -> std::optional<APFloat> {
              if (!fmod)
                return std::nullopt; // ONNX requires fmod=1 for floats.
              x.mod(y);
              return x;
            });
      });
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  Type elt = resultElt(*this);
  if (!isa<FloatType>(elt))
    return {};
  return foldBinary(*this, adaptor.getLhs(), adaptor.getRhs(),
                    [&](Attribute a, Attribute b) -> Attribute {
                      auto fa = dyn_cast<FloatAttr>(a);
                      if (!fa)
                        return {};
                      double e;
                      if (auto fb = dyn_cast<FloatAttr>(b))
                        e = fb.getValueAsDouble();
                      else if (auto ib = dyn_cast<IntegerAttr>(b))
                        e = static_cast<double>(ib.getValue().getSExtValue());
                      else
                        return {};
                      return FloatAttr::get(elt,
                                            std::pow(fa.getValueAsDouble(), e));
                    });
}

#define DIST_FOLD_COMPARE(OP, PRED)                                            \
  OpFoldResult OP::fold(FoldAdaptor adaptor) {                                 \
    MLIRContext *ctx = getContext();                                           \
    return foldBinary(*this, adaptor.getLhs(), adaptor.getRhs(),               \
                      [&](Attribute a, Attribute b) {                          \
                        return compare(ctx, a, b, [](int c) { return PRED; }); \
                      });                                                      \
  }
// c == 2 marks an unordered (NaN) comparison: false for every predicate.
DIST_FOLD_COMPARE(EqualOp, c == 0)
DIST_FOLD_COMPARE(LessOp, c == -1)
DIST_FOLD_COMPARE(GreaterOp, c == 1)
DIST_FOLD_COMPARE(LessOrEqualOp, c == -1 || c == 0)
DIST_FOLD_COMPARE(GreaterOrEqualOp, c == 1 || c == 0)
#undef DIST_FOLD_COMPARE

#define DIST_FOLD_LOGIC(OP, EXPR)                                              \
  OpFoldResult OP::fold(FoldAdaptor adaptor) {                                 \
    Type i1 = IntegerType::get(getContext(), 1);                               \
    return foldBinary(*this, adaptor.getLhs(), adaptor.getRhs(),               \
                      [&](Attribute a, Attribute b) -> Attribute {             \
                        auto x = dyn_cast<IntegerAttr>(a);                     \
                        auto y = dyn_cast<IntegerAttr>(b);                     \
                        if (!x || !y)                                          \
                          return {};                                           \
                        bool p = !x.getValue().isZero();                       \
                        bool q = !y.getValue().isZero();                       \
                        return IntegerAttr::get(i1, (EXPR) ? 1 : 0);           \
                      });                                                      \
  }
DIST_FOLD_LOGIC(AndOp, p &&q)
DIST_FOLD_LOGIC(OrOp, p || q)
DIST_FOLD_LOGIC(XorOp, p != q)
#undef DIST_FOLD_LOGIC

/// Folds a variadic op by combining its operands pairwise with `fn`.
template <typename Fn>
static OpFoldResult foldVariadic(Operation *op, ArrayRef<Attribute> operands,
                                 Fn fn) {
  if (op->getNumOperands() == 1 &&
      op->getOperand(0).getType() == op->getResult(0).getType())
    return op->getOperand(0);
  SmallVector<DenseElementsAttr> dense;
  for (Attribute a : operands)
    dense.push_back(asDense(a));
  return foldElementwise(staticResultType(op->getResult(0).getType()), dense,
                         [&](ArrayRef<Attribute> args) -> Attribute {
                           Attribute acc = args[0];
                           for (Attribute a : args.drop_front()) {
                             acc = fn(acc, a);
                             if (!acc)
                               return {};
                           }
                           return acc;
                         });
}

/// NaN wins in Max/Min (IEEE maximum/minimum semantics, as ONNX specifies).
static Attribute nanOperand(Attribute a, Attribute b) {
  for (Attribute x : {a, b})
    if (auto f = dyn_cast<FloatAttr>(x); f && f.getValue().isNaN())
      return x;
  return {};
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  MLIRContext *ctx = getContext();
  return foldVariadic(*this, adaptor.getInputs(),
                      [&](Attribute a, Attribute b) {
                        if (Attribute nan = nanOperand(a, b))
                          return nan;
                        auto lt = dyn_cast_or_null<IntegerAttr>(
                            compare(ctx, a, b, [](int c) { return c == -1; }));
                        if (!lt)
                          return Attribute();
                        return lt.getValue().isZero() ? a : b;
                      });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  MLIRContext *ctx = getContext();
  return foldVariadic(*this, adaptor.getInputs(),
                      [&](Attribute a, Attribute b) {
                        if (Attribute nan = nanOperand(a, b))
                          return nan;
                        auto gt = dyn_cast_or_null<IntegerAttr>(
                            compare(ctx, a, b, [](int c) { return c == 1; }));
                        if (!gt)
                          return Attribute();
                        return gt.getValue().isZero() ? a : b;
                      });
}

OpFoldResult SumOp::fold(FoldAdaptor adaptor) {
  Type elt = resultElt(*this);
  return foldVariadic(
      *this, adaptor.getInputs(),
      [&](Attribute a, Attribute b) { return addElements(elt, a, b); });
}

OpFoldResult MeanOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  if (auto cond = asDense(adaptor.getCondition()); cond && cond.isSplat()) {
    Value chosen = cond.getSplatValue<bool>() ? getX() : getY();
    if (chosen.getType() == getType())
      return chosen;
  }
  return foldElementwise(staticResultType(getType()),
                         {asDense(adaptor.getCondition()),
                          asDense(adaptor.getX()), asDense(adaptor.getY())},
                         [](ArrayRef<Attribute> a) -> Attribute {
                           auto c = dyn_cast<IntegerAttr>(a[0]);
                           if (!c)
                             return {};
                           return c.getValue().isZero() ? a[2] : a[1];
                         });
}

//===----------------------------------------------------------------------===//
// Shape queries
//===----------------------------------------------------------------------===//

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto in = dyn_cast<RankedTensorType>(getInput().getType());
  RankedTensorType type = staticResultType(getType());
  if (!in || !type)
    return {};
  auto rank = in.getRank();
  auto clampIdx = [&](int64_t i) {
    if (i < 0)
      i += rank;
    return std::clamp<int64_t>(i, 0, rank);
  };
  int64_t start = clampIdx(static_cast<int64_t>(getStart()));
  int64_t end = getEnd() ? clampIdx(static_cast<int64_t>(*getEnd())) : rank;
  Dims dims;
  for (int64_t i = start; i < end; ++i) {
    if (in.isDynamicDim(i))
      return {};
    dims.push_back(in.getDimSize(i));
  }
  if (static_cast<int64_t>(dims.size()) != type.getNumElements())
    return {};
  return DenseElementsAttr::get(type, ArrayRef(dims));
}

OpFoldResult SizeOp::fold(FoldAdaptor) {
  auto in = dyn_cast<RankedTensorType>(getInput().getType());
  RankedTensorType type = staticResultType(getType());
  if (!in || !in.hasStaticShape() || !type)
    return {};
  return DenseElementsAttr::get(type, ArrayRef<int64_t>{in.getNumElements()});
}

OpFoldResult RangeOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = staticResultType(getType());
  auto start = asDense(adaptor.getStart());
  auto delta = asDense(adaptor.getDelta());
  if (!type || !start || !delta || !smallEnough(type))
    return {};
  Type elt = type.getElementType();
  Attribute value = *start.getValues<Attribute>().begin();
  Attribute step = *delta.getValues<Attribute>().begin();
  SmallVector<Attribute> values;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    values.push_back(value);
    value = addElements(elt, value, step);
    if (!value)
      return {};
  }
  return DenseElementsAttr::get(type, values);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Folds a pure reshape: same value, new static type.
static OpFoldResult foldReshapeLike(Operation *op, Attribute input) {
  Value in = op->getOperand(0);
  Type type = op->getResult(0).getType();
  RankedTensorType result = staticResultType(type);
  if (in.getType() == type && result)
    return in;
  if (auto dense = asDense(input);
      dense && result && dense.getNumElements() == result.getNumElements())
    return dense.reshape(result);
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (Attribute known = foldKnownShapeValue(getResult()))
    return known;
  return foldReshapeLike(*this, adaptor.getInput());
}
OpFoldResult FlattenOp::fold(FoldAdaptor adaptor) {
  return foldReshapeLike(*this, adaptor.getInput());
}
OpFoldResult SqueezeOp::fold(FoldAdaptor adaptor) {
  if (Attribute known = foldKnownShapeValue(getResult()))
    return known;
  return foldReshapeLike(*this, adaptor.getInput());
}
OpFoldResult UnsqueezeOp::fold(FoldAdaptor adaptor) {
  if (Attribute known = foldKnownShapeValue(getResult()))
    return known;
  return foldReshapeLike(*this, adaptor.getInput());
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  auto in = dyn_cast<RankedTensorType>(getInput().getType());
  RankedTensorType type = staticResultType(getType());
  if (!in || !type)
    return {};
  Dims perm = transposePermutation(getPerm(), in.getRank());
  bool identity = llvm::all_of(llvm::enumerate(perm), [](auto it) {
    return static_cast<int64_t>(it.index()) == it.value();
  });
  if (identity && in == type)
    return getInput();
  auto dense = asDense(adaptor.getInput());
  if (!dense)
    return {};
  if (dense.isSplat())
    return dense.resizeSplat(type);
  if (!smallEnough(type))
    return {};
  auto values = llvm::to_vector(dense.getValues<Attribute>());
  Dims inStrides = stridesOf(in.getShape());
  SmallVector<Attribute> out;
  Dims idx;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    unravel(i, type.getShape(), idx);
    int64_t src = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      src += idx[d] * inStrides[perm[d]];
    out.push_back(values[src]);
  }
  return DenseElementsAttr::get(type, out);
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (Attribute known = foldKnownShapeValue(getResult()))
    return known;
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  RankedTensorType type = staticResultType(getType());
  if (!type || !smallEnough(type))
    return {};
  auto axis = normalizeAxis(static_cast<int64_t>(getAxis()), type.getRank());
  if (!axis)
    return {};
  // outer x (chunk of each input) layout.
  int64_t outer = 1;
  for (int64_t i = 0; i < *axis; ++i)
    outer *= type.getDimSize(i);
  SmallVector<SmallVector<Attribute>> values;
  SmallVector<int64_t> chunks;
  for (auto [attr, value] : llvm::zip(adaptor.getInputs(), getInputs())) {
    auto dense = asDense(attr);
    if (!dense)
      return {};
    values.push_back(llvm::to_vector(dense.getValues<Attribute>()));
    chunks.push_back(
        outer ? dense.getNumElements() / std::max<int64_t>(outer, 1) : 0);
  }
  SmallVector<Attribute> out;
  out.reserve(type.getNumElements());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < values.size(); ++k)
      out.append(values[k].begin() + o * chunks[k],
                 values[k].begin() + (o + 1) * chunks[k]);
  if (static_cast<int64_t>(out.size()) != type.getNumElements())
    return {};
  return DenseElementsAttr::get(type, out);
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (Attribute known = foldKnownShapeValue(getResult()))
    return known;
  auto in = dyn_cast<RankedTensorType>(getInput().getType());
  RankedTensorType type = staticResultType(getType());
  if (!in || !type || !in.hasStaticShape())
    return {};
  auto dense = asDense(adaptor.getInput());
  std::optional<Dims> starts = getConstantInts(getStarts());
  std::optional<Dims> ends = getConstantInts(getEnds());
  if (!dense || !starts || !ends || !smallEnough(type))
    return {};
  int64_t rank = in.getRank();
  Dims axes, steps(starts->size(), 1);
  if (getAxes()) {
    std::optional<Dims> a = getConstantInts(getAxes());
    if (!a)
      return {};
    axes = *a;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  }
  if (getSteps()) {
    std::optional<Dims> s = getConstantInts(getSteps());
    if (!s)
      return {};
    steps = *s;
  }
  Dims begin(rank, 0), step(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = normalizeAxis(axes[i], rank);
    if (!axis || steps[i] == 0)
      return {};
    int64_t dim = in.getDimSize(*axis);
    int64_t s = (*starts)[i];
    if (s < 0)
      s = s < -dim ? 0 : s + dim;
    s = steps[i] > 0 ? std::clamp<int64_t>(s, 0, dim)
                     : std::clamp<int64_t>(s, 0, dim - 1);
    begin[*axis] = s;
    step[*axis] = steps[i];
  }
  auto values = llvm::to_vector(dense.getValues<Attribute>());
  Dims inStrides = stridesOf(in.getShape());
  SmallVector<Attribute> out;
  Dims idx;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    unravel(i, type.getShape(), idx);
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src += (begin[d] + idx[d] * step[d]) * inStrides[d];
    out.push_back(values[src]);
  }
  return DenseElementsAttr::get(type, out);
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  if (Attribute known = foldKnownShapeValue(getResult()))
    return known;
  auto dataType = dyn_cast<RankedTensorType>(getData().getType());
  RankedTensorType type = staticResultType(getType());
  auto data = asDense(adaptor.getData());
  std::optional<Dims> indices = getConstantInts(getIndices());
  if (!dataType || !type || !data || !indices || !smallEnough(type) ||
      !dataType.hasStaticShape())
    return {};
  auto axis =
      normalizeAxis(static_cast<int64_t>(getAxis()), dataType.getRank());
  if (!axis)
    return {};
  int64_t outer = 1, inner = 1, dim = dataType.getDimSize(*axis);
  for (int64_t i = 0; i < *axis; ++i)
    outer *= dataType.getDimSize(i);
  for (int64_t i = *axis + 1; i < dataType.getRank(); ++i)
    inner *= dataType.getDimSize(i);
  auto values = llvm::to_vector(data.getValues<Attribute>());
  SmallVector<Attribute> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : *indices) {
      if (index < -dim || index >= dim)
        return {};
      if (index < 0)
        index += dim;
      auto first = values.begin() + (o * dim + index) * inner;
      out.append(first, first + inner);
    }
  if (static_cast<int64_t>(out.size()) != type.getNumElements())
    return {};
  return DenseElementsAttr::get(type, out);
}

//===----------------------------------------------------------------------===//
// Unary arithmetic
//===----------------------------------------------------------------------===//

/// Folds a unary op elementwise over a constant operand.
template <typename IntFn, typename FloatFn>
static OpFoldResult foldUnary(Operation *op, Attribute input, IntFn intFn,
                              FloatFn floatFn) {
  Type elt = resultElt(op);
  return foldElementwise(staticResultType(op->getResult(0).getType()),
                         {asDense(input)},
                         [&](ArrayRef<Attribute> a) -> Attribute {
                           if (auto i = dyn_cast<IntegerAttr>(a[0]))
                             return IntegerAttr::get(elt, intFn(i.getValue()));
                           if (auto f = dyn_cast<FloatAttr>(a[0]))
                             return FloatAttr::get(elt, floatFn(f.getValue()));
                           return {};
                         });
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  return foldUnary(
      *this, adaptor.getInput(), [](const APInt &v) { return -v; },
      [](APFloat v) {
        v.changeSign();
        return v;
      });
}

OpFoldResult AbsOp::fold(FoldAdaptor adaptor) {
  bool isUnsigned = getElementTypeOrSelf(getType()).isUnsignedInteger();
  return foldUnary(
      *this, adaptor.getInput(),
      [&](const APInt &v) { return isUnsigned ? v : v.abs(); },
      [](APFloat v) {
        v.clearSign();
        return v;
      });
}
