//===- GraphBuilder.h - building dist graphs with inferred types -*- C++
//-*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A small builder of dist ops whose result types come from the ops' own
// type inference, with helpers for the patterns gradient rules and the
// training step need: scalar and shape constants, broadcasting arithmetic,
// reductions, reshapes and summing a broadcast gradient back to its
// operand's shape. Used by the gradient rules (Gradients.cpp) and the
// train-step pass.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_IR_GRAPHBUILDER_H
#define DIST_DIALECT_DIST_IR_GRAPHBUILDER_H

#include "dist/Dialect/Dist/IR/DistDialect.h"

#include "mlir/IR/Builders.h"

#include <numeric>

namespace mlir::dist {

/// Builds dist ops at one location with inferred result types.
class GraphBuilder {
public:
  /// Builds at `b`'s insertion point with `anchor`'s location; errors are
  /// reported on `anchor`.
  GraphBuilder(OpBuilder &b, Operation *anchor)
      : b(b), op(anchor), loc(anchor->getLoc()) {}

  OpBuilder &b;
  Operation *op;
  Location loc;
  /// Set when an op could not be built (its error is already emitted).
  bool hadError = false;

  /// Creates `OpT` with `operands` and `attrs`, infers its result types and
  /// returns the op (null after emitting an error if inference fails).
  template <typename OpT>
  Operation *make(ValueRange operands, ArrayRef<NamedAttribute> attrs = {},
                  unsigned numResults = 1, ArrayRef<int32_t> segments = {}) {
    if (llvm::any_of(operands, [](Value v) { return !v; })) {
      hadError = true;
      return nullptr;
    }
    OperationState state(loc, OpT::getOperationName());
    state.addOperands(operands);
    state.addTypes(
        SmallVector<Type>(numResults, UnrankedTensorType::get(b.getF32Type())));
    Operation *created = b.create(state);
    for (const NamedAttribute &a : attrs)
      created->setAttr(a.getName(), a.getValue());
    if (!segments.empty())
      created->setAttr("operandSegmentSizes", b.getDenseI32ArrayAttr(segments));
    SmallVector<Type> types;
    auto infer = cast<InferTypeOpInterface>(created);
    if (failed(infer.inferReturnTypes(
            b.getContext(), loc, created->getOperands(),
            created->getRawDictionaryAttrs(), created->getPropertiesStorage(),
            created->getRegions(), types)) ||
        types.size() != numResults) {
      created->erase();
      hadError = true;
      op->emitOpError("could not build ") << OpT::getOperationName();
      return nullptr;
    }
    for (auto [r, t] : llvm::zip(created->getResults(), types))
      r.setType(t);
    return created;
  }
  template <typename OpT>
  Value one(ValueRange operands, ArrayRef<NamedAttribute> attrs = {},
            ArrayRef<int32_t> segments = {}) {
    Operation *o = make<OpT>(operands, attrs, 1, segments);
    return o ? o->getResult(0) : Value();
  }

  NamedAttribute attr(StringRef name, Attribute a) {
    return b.getNamedAttr(name, a);
  }
  NamedAttribute i64(StringRef name, int64_t v) {
    return attr(name, b.getI64IntegerAttr(v));
  }
  NamedAttribute i64s(StringRef name, ArrayRef<int64_t> v) {
    return attr(name, b.getDenseI64ArrayAttr(v));
  }

  /// A rank-0 constant of `elemType`.
  Value scalar(Type elemType, double v) {
    auto t = RankedTensorType::get({}, elemType);
    Attribute a;
    if (auto f = dyn_cast<FloatType>(elemType))
      a = DenseElementsAttr::get(t, FloatAttr::get(f, v));
    else
      a = DenseElementsAttr::get(
          t, IntegerAttr::get(elemType, static_cast<int64_t>(v)));
    return ConstantOp::create(b, loc, t, cast<ElementsAttr>(a));
  }
  /// A rank-0 constant of `like`'s element type.
  Value scalarLike(Value like, double v) { return scalar(elemOf(like), v); }
  /// A 1-D i64 constant.
  Value vec(ArrayRef<int64_t> v) {
    auto t =
        RankedTensorType::get({static_cast<int64_t>(v.size())}, b.getI64Type());
    return ConstantOp::create(b, loc, t,
                              cast<ElementsAttr>(DenseElementsAttr::get(t, v)));
  }

  static Type elemOf(Value v) { return getElementTypeOrSelf(v.getType()); }
  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }

  Value add(Value x, Value y) { return one<AddOp>({x, y}); }
  Value sub(Value x, Value y) { return one<SubOp>({x, y}); }
  Value mul(Value x, Value y) { return one<MulOp>({x, y}); }
  Value div(Value x, Value y) { return one<DivOp>({x, y}); }
  Value mulC(Value x, double c) { return mul(x, scalarLike(x, c)); }
  Value neg(Value x) { return one<NegOp>({x}); }
  Value exp(Value x) { return one<ExpOp>({x}); }
  Value where(Value c, Value x, Value y) { return one<WhereOp>({c, x, y}); }
  /// where(c, x, 0).
  Value maskIn(Value c, Value x) { return where(c, x, scalarLike(x, 0)); }
  Value greaterZero(Value x) { return one<GreaterOp>({x, scalarLike(x, 0)}); }
  Value castTo(Value x, Type elemType) {
    return one<CastOp>({x}, {attr("to", TypeAttr::get(elemType))});
  }

  /// The shape of `x` as a 1-D i64 tensor: a constant when static.
  Value shapeOf(Value x) {
    auto t = typeOf(x);
    if (t.hasStaticShape())
      return vec(t.getShape());
    return one<ShapeOp>({x});
  }
  Value reshapeLike(Value g, Value x) {
    if (g.getType() == x.getType())
      return g;
    return one<ReshapeOp>({g, shapeOf(x)});
  }
  Value reshape(Value g, ArrayRef<int64_t> shape) {
    return one<ReshapeOp>({g, vec(shape)});
  }
  Value expandLike(Value g, Value x) {
    if (g.getType() == x.getType())
      return g;
    return one<ExpandOp>({g, shapeOf(x)});
  }
  Value reduceSum(Value x, ArrayRef<int64_t> axes, bool keep) {
    if (axes.empty())
      return x;
    return one<ReduceSumOp>({x, vec(axes)}, {i64("keepdims", keep)});
  }
  Value reduceMean(Value x, ArrayRef<int64_t> axes, bool keep) {
    return one<ReduceMeanOp>({x, vec(axes)}, {i64("keepdims", keep)});
  }
  /// Slice of `x` with unit steps along `axes`.
  Value slice(Value x, ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
              ArrayRef<int64_t> axes) {
    Operation *o = make<SliceOp>({x, vec(starts), vec(ends), vec(axes)}, {}, 1,
                                 {1, 1, 1, 1, 0});
    return o ? o->getResult(0) : Value();
  }
  Value unsqueeze(Value x, ArrayRef<int64_t> axes) {
    if (axes.empty())
      return x;
    return one<UnsqueezeOp>({x, vec(axes)});
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    bool identity = true;
    for (auto [i, p] : llvm::enumerate(perm))
      identity &= static_cast<int64_t>(i) == p;
    if (identity)
      return x;
    return one<TransposeOp>({x}, {i64s("perm", perm)});
  }
  /// Swaps the last two dimensions.
  Value transposeLast2(Value x) {
    int64_t r = typeOf(x).getRank();
    SmallVector<int64_t> perm(r);
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[r - 1], perm[r - 2]);
    return transpose(x, perm);
  }
  /// Zeros of `x`'s type.
  Value zerosLike(Value x) {
    auto t = typeOf(x);
    if (t.hasStaticShape()) {
      Attribute zero = isa<FloatType>(t.getElementType())
                           ? Attribute(FloatAttr::get(t.getElementType(), 0))
                           : Attribute(IntegerAttr::get(t.getElementType(), 0));
      return ConstantOp::create(
          b, loc, t, cast<ElementsAttr>(DenseElementsAttr::get(t, zero)));
    }
    auto one1 = RankedTensorType::get({1}, t.getElementType());
    Attribute zero = isa<FloatType>(t.getElementType())
                         ? Attribute(FloatAttr::get(t.getElementType(), 0))
                         : Attribute(IntegerAttr::get(t.getElementType(), 0));
    return one<ConstantOfShapeOp>(
        {shapeOf(x)}, {attr("value", DenseElementsAttr::get(one1, zero))});
  }
  /// Number of elements of `x` as a rank-0 tensor of `elemType`.
  Value numel(Value x, Type elemType) {
    auto t = typeOf(x);
    if (t.hasStaticShape())
      return scalar(elemType, static_cast<double>(t.getNumElements()));
    return castTo(one<SizeOp>({x}), elemType);
  }

  /// Normalisation statistics of `x` over `axes` (kept as size-1 dims):
  /// the mean, x - mean, the biased variance and 1 / sqrt(variance + eps).
  struct Moments {
    Value mean, centered, var, inv;
  };
  Moments moments(Value x, ArrayRef<int64_t> axes, double eps) {
    Value mean = reduceMean(x, axes, true);
    Value xc = sub(x, mean);
    Value var = reduceMean(mul(xc, xc), axes, true);
    Value inv =
        one<ReciprocalOp>({one<SqrtOp>({add(var, scalarLike(x, eps))})});
    return {mean, xc, var, inv};
  }

  /// Sums `g` over the axes along which `x` was broadcast to `g`'s shape
  /// and reshapes the sum to `x`'s shape.
  Value unbroadcast(Value g, Value x) {
    if (!g || g.getType() == x.getType())
      return g;
    auto gt = typeOf(g), xt = typeOf(x);
    int64_t gr = gt.getRank(), xr = xt.getRank();
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < gr - xr; ++i)
      axes.push_back(i);
    for (int64_t j = 0; j < xr; ++j) {
      int64_t gd = gt.getDimSize(gr - xr + j), xd = xt.getDimSize(j);
      if (xd == 1 && gd != 1)
        axes.push_back(gr - xr + j);
    }
    return reshapeLike(reduceSum(g, axes, /*keep=*/true), x);
  }
};

} // namespace mlir::dist

#endif // DIST_DIALECT_DIST_IR_GRAPHBUILDER_H
