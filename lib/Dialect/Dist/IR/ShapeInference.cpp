//===- ShapeInference.cpp - result type inference of dist ops ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `inferReturnTypes` for every dist graph op. Inference is also the op's
// shape verifier: a failure here is reported as a verifier error on the op.
// Unknown dimensions stay dynamic; values that decide shapes (axes, pads,
// Reshape's shape, ...) are looked through when they are constants or
// partially known shape values.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/Einsum.h"
#include "dist/Dialect/Dist/IR/ShapeUtils.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

std::optional<int64_t> mlir::dist::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

Dims mlir::dist::transposePermutation(std::optional<ArrayRef<int64_t>> perm,
                                      int64_t rank) {
  if (perm)
    return Dims(perm->begin(), perm->end());
  Dims reversed;
  for (int64_t i = rank - 1; i >= 0; --i)
    reversed.push_back(i);
  return reversed;
}

std::optional<Dims> mlir::dist::getConstantInts(Value v) {
  DenseIntElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  Dims out;
  out.reserve(attr.getNumElements());
  bool isUnsigned = attr.getElementType().isUnsignedInteger();
  for (const APInt &value : attr.getValues<APInt>())
    out.push_back(isUnsigned || value.getBitWidth() == 1
                      ? static_cast<int64_t>(value.getZExtValue())
                      : value.getSExtValue());
  return out;
}

std::optional<SmallVector<double>> mlir::dist::getConstantDoubles(Value v) {
  DenseElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  SmallVector<double> out;
  if (isa<FloatType>(attr.getElementType())) {
    for (const APFloat &value : attr.getValues<APFloat>())
      out.push_back(value.convertToDouble());
    return out;
  }
  if (std::optional<Dims> ints = getConstantInts(v)) {
    for (int64_t i : *ints)
      out.push_back(static_cast<double>(i));
    return out;
  }
  return std::nullopt;
}

/// Number of elements of a 0-D or 1-D tensor type when static.
static std::optional<int64_t> vectorLength(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || ranked.getRank() > 1)
    return std::nullopt;
  if (ranked.getRank() == 0)
    return 1;
  if (ranked.isDynamicDim(0))
    return std::nullopt;
  return ranked.getDimSize(0);
}

static std::optional<SmallVector<DimValue>> traceShapeValueImpl(Value v,
                                                                int depth);

static std::optional<SmallVector<DimValue>> unknownOfLength(Value v) {
  std::optional<int64_t> len = vectorLength(v.getType());
  if (!len)
    return std::nullopt;
  return SmallVector<DimValue>(*len);
}

/// Elementwise integer arithmetic on traced values (with 1-element
/// broadcasting); symbols survive only through the identity cases.
template <typename Fn>
static std::optional<SmallVector<DimValue>> traceBinary(Value lhs, Value rhs,
                                                        int depth, Fn fn) {
  auto a = traceShapeValueImpl(lhs, depth + 1);
  auto b = traceShapeValueImpl(rhs, depth + 1);
  if (!a || !b)
    return std::nullopt;
  size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1))
    return std::nullopt;
  SmallVector<DimValue> out(n);
  for (size_t i = 0; i < n; ++i) {
    const DimValue &x = (*a)[a->size() == 1 ? 0 : i];
    const DimValue &y = (*b)[b->size() == 1 ? 0 : i];
    if (x.isKnown() && y.isKnown()) {
      std::optional<int64_t> r = fn(x.value, y.value);
      if (r)
        out[i].value = *r;
    }
  }
  return out;
}

static std::optional<SmallVector<DimValue>> traceShapeValueImpl(Value v,
                                                                int depth) {
  if (!v || depth > 32)
    return std::nullopt;
  if (std::optional<Dims> ints = getConstantInts(v)) {
    if (!vectorLength(v.getType()))
      return std::nullopt;
    SmallVector<DimValue> out(ints->size());
    for (auto [dst, value] : llvm::zip(out, *ints))
      dst.value = value;
    return out;
  }
  Operation *def = v.getDefiningOp();
  if (!def)
    return unknownOfLength(v);

  if (auto shape = dyn_cast<ShapeOp>(def)) {
    auto in = dyn_cast<RankedTensorType>(shape.getInput().getType());
    if (!in)
      return unknownOfLength(v);
    int64_t rank = in.getRank();
    auto clampIdx = [&](int64_t i) {
      if (i < 0)
        i += rank;
      return std::clamp<int64_t>(i, 0, rank);
    };
    int64_t start = clampIdx(static_cast<int64_t>(shape.getStart()));
    int64_t end =
        shape.getEnd() ? clampIdx(static_cast<int64_t>(*shape.getEnd())) : rank;
    SmallVector<DimValue> out;
    for (int64_t i = start; i < end; ++i) {
      DimValue d;
      if (!in.isDynamicDim(i))
        d.value = in.getDimSize(i);
      else {
        d.src = shape.getInput();
        d.idx = i;
      }
      out.push_back(d);
    }
    return out;
  }
  if (auto concat = dyn_cast<ConcatOp>(def)) {
    SmallVector<DimValue> out;
    for (Value in : concat.getInputs()) {
      auto part = traceShapeValueImpl(in, depth + 1);
      if (!part)
        return unknownOfLength(v);
      out.append(part->begin(), part->end());
    }
    return out;
  }
  if (isa<UnsqueezeOp, SqueezeOp, IdentityOp, ReshapeOp, FlattenOp>(def)) {
    // Reshaping a 0-D/1-D vector keeps its elements in order.
    if (!vectorLength(v.getType()))
      return std::nullopt;
    auto in = traceShapeValueImpl(def->getOperand(0), depth + 1);
    if (in && in->size() == *vectorLength(v.getType()))
      return in;
    return unknownOfLength(v);
  }
  if (auto cast = dyn_cast<CastOp>(def)) {
    if (isa<IntegerType>(getElementTypeOrSelf(cast.getInput().getType())))
      if (auto in = traceShapeValueImpl(cast.getInput(), depth + 1))
        return in;
    return unknownOfLength(v);
  }
  if (auto gather = dyn_cast<GatherOp>(def)) {
    auto data = traceShapeValueImpl(gather.getData(), depth + 1);
    std::optional<Dims> idx = getConstantInts(gather.getIndices());
    if (data && idx && vectorLength(gather.getData().getType()) &&
        vectorLength(v.getType())) {
      SmallVector<DimValue> out;
      auto n = static_cast<int64_t>(data->size());
      for (int64_t i : *idx) {
        if (i < -n || i >= n)
          return unknownOfLength(v);
        out.push_back((*data)[i < 0 ? i + n : i]);
      }
      return out;
    }
    return unknownOfLength(v);
  }
  if (auto slice = dyn_cast<SliceOp>(def)) {
    auto data = traceShapeValueImpl(slice.getInput(), depth + 1);
    std::optional<Dims> starts = getConstantInts(slice.getStarts());
    std::optional<Dims> ends = getConstantInts(slice.getEnds());
    std::optional<Dims> steps =
        slice.getSteps() ? getConstantInts(slice.getSteps()) : Dims{1};
    if (!data || !starts || !ends || !steps || starts->size() != 1 ||
        ends->size() != 1 || steps->size() != 1 || (*steps)[0] == 0)
      return unknownOfLength(v);
    auto n = static_cast<int64_t>(data->size());
    int64_t s = (*starts)[0], e = (*ends)[0], step = (*steps)[0];
    if (s < 0)
      s += n;
    if (e < 0)
      e += n;
    SmallVector<DimValue> out;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      for (int64_t i = s; i < e; i += step)
        out.push_back((*data)[i]);
    } else {
      s = std::clamp<int64_t>(s, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      for (int64_t i = s; i > e; i += step)
        out.push_back((*data)[i]);
    }
    return out;
  }
  if (auto add = dyn_cast<AddOp>(def))
    return traceBinary(
        add.getLhs(), add.getRhs(), depth,
        [](int64_t a, int64_t b) -> std::optional<int64_t> { return a + b; });
  if (auto sub = dyn_cast<SubOp>(def))
    return traceBinary(
        sub.getLhs(), sub.getRhs(), depth,
        [](int64_t a, int64_t b) -> std::optional<int64_t> { return a - b; });
  if (auto mul = dyn_cast<MulOp>(def))
    return traceBinary(
        mul.getLhs(), mul.getRhs(), depth,
        [](int64_t a, int64_t b) -> std::optional<int64_t> { return a * b; });
  if (auto div = dyn_cast<DivOp>(def))
    return traceBinary(div.getLhs(), div.getRhs(), depth,
                       [](int64_t a, int64_t b) -> std::optional<int64_t> {
                         if (b == 0)
                           return std::nullopt;
                         return a / b;
                       });
  return unknownOfLength(v);
}

std::optional<SmallVector<DimValue>> mlir::dist::traceShapeValue(Value v) {
  return traceShapeValueImpl(v, 0);
}

namespace {
/// A tensor shape during inference: `std::nullopt` is an unknown rank.
using Shape = std::optional<Dims>;

Shape shapeOf(Value v) {
  if (!v)
    return std::nullopt;
  if (auto ranked = dyn_cast<RankedTensorType>(v.getType()))
    return Dims(ranked.getShape());
  return std::nullopt;
}

Type makeTensor(const Shape &shape, Type elt) {
  if (!shape)
    return UnrankedTensorType::get(elt);
  return RankedTensorType::get(*shape, elt);
}

Type eltOf(Value v) { return getElementTypeOrSelf(v.getType()); }

std::string dimsToString(ArrayRef<int64_t> dims) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(dims, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

std::string shapeToString(const Shape &s) {
  return s ? dimsToString(*s) : std::string("[*]");
}

LogicalResult fail(std::optional<Location> loc, const Twine &msg) {
  return emitOptionalError(loc, msg);
}

/// What the op's definition requires of its attributes (present, of their
/// declared kinds), checked before inference reads them: ops are inferred
/// from whatever an importer hands over, and a missing required attribute
/// would be read as null (found by scripts/fuzz.sh import).
template <typename AdaptorT>
LogicalResult verifyAttrs(AdaptorT &adaptor, std::optional<Location> loc) {
  return loc ? adaptor.verify(*loc) : success();
}

int64_t mulDims(int64_t a, int64_t b) {
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
    return kDynamic;
  return a * b;
}

int64_t addDims(int64_t a, int64_t b) {
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
    return kDynamic;
  return a + b;
}

/// Numpy multidirectional broadcasting of two shapes.
LogicalResult broadcastShapes(std::optional<Location> loc, const Shape &a,
                              const Shape &b, Shape &out) {
  if (!a || !b) {
    out = std::nullopt;
    return success();
  }
  size_t rank = std::max(a->size(), b->size());
  Dims result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a->size() ? 1 : (*a)[i - (rank - a->size())];
    int64_t db = i < rank - b->size() ? 1 : (*b)[i - (rank - b->size())];
    if (da == 1)
      result[i] = db;
    else if (db == 1)
      result[i] = da;
    else if (ShapedType::isDynamic(da))
      result[i] = db;
    else if (ShapedType::isDynamic(db) || da == db)
      result[i] = da;
    else
      return fail(loc, "operand shapes " + dimsToString(*a) + " and " +
                           dimsToString(*b) + " are not broadcastable");
  }
  out = std::move(result);
  return success();
}

/// Whether `from` broadcasts to `to` unidirectionally.
LogicalResult checkUnidirectional(std::optional<Location> loc,
                                  const Shape &from, const Shape &to,
                                  StringRef what) {
  if (!from || !to)
    return success();
  if (from->size() > to->size())
    return fail(loc, what + " shape " + dimsToString(*from) +
                         " has more dimensions than " + dimsToString(*to));
  size_t off = to->size() - from->size();
  for (size_t i = 0; i < from->size(); ++i) {
    int64_t f = (*from)[i], t = (*to)[off + i];
    if (f == 1 || ShapedType::isDynamic(f) || ShapedType::isDynamic(t) ||
        f == t)
      continue;
    return fail(loc, what + " shape " + dimsToString(*from) +
                         " does not broadcast to " + dimsToString(*to));
  }
  return success();
}

bool compatibleDims(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Inference for a unary op whose result is its operand's type.
LogicalResult sameAsOperand(Value v, SmallVectorImpl<Type> &types) {
  types.push_back(v.getType());
  return success();
}

/// Resolves the spatial sizes of a windowed op (conv, pooling).
struct WindowParams {
  StringRef autoPad;
  ArrayRef<int64_t> kernel;
  std::optional<ArrayRef<int64_t>> strides, dilations, pads;
  bool ceilMode = false;
};

LogicalResult checkAttrLen(std::optional<Location> loc,
                           std::optional<ArrayRef<int64_t>> attr, size_t n,
                           StringRef name) {
  if (attr && attr->size() != n)
    return fail(loc, "'" + name + "' has " + Twine(attr->size()) +
                         " values, expected " + Twine(n));
  return success();
}

LogicalResult inferWindow(std::optional<Location> loc, ArrayRef<int64_t> input,
                          const WindowParams &p, Dims &out) {
  size_t n = input.size();
  if (p.kernel.size() != n)
    return fail(loc, "kernel has " + Twine(p.kernel.size()) +
                         " spatial dimensions, input has " + Twine(n));
  if (failed(checkAttrLen(loc, p.strides, n, "strides")) ||
      failed(checkAttrLen(loc, p.dilations, n, "dilations")) ||
      failed(checkAttrLen(loc, p.pads, 2 * n, "pads")))
    return failure();
  if (p.autoPad != "NOTSET" && p.autoPad != "VALID" &&
      p.autoPad != "SAME_UPPER" && p.autoPad != "SAME_LOWER")
    return fail(loc, "unknown auto_pad '" + p.autoPad + "'");
  for (size_t i = 0; i < n; ++i) {
    int64_t k = p.kernel[i];
    int64_t s = p.strides ? (*p.strides)[i] : 1;
    int64_t d = p.dilations ? (*p.dilations)[i] : 1;
    int64_t pb = p.pads ? (*p.pads)[i] : 0;
    int64_t pe = p.pads ? (*p.pads)[i + n] : 0;
    if (k < 1 || s < 1 || d < 1)
      return fail(loc, "kernel, strides and dilations must be positive");
    if (pb < 0 || pe < 0)
      return fail(loc, "pads must be non-negative");
    int64_t in = input[i];
    if (ShapedType::isDynamic(in)) {
      out.push_back(kDynamic);
      continue;
    }
    int64_t ek = (k - 1) * d + 1;
    int64_t o;
    if (p.autoPad == "SAME_UPPER" || p.autoPad == "SAME_LOWER") {
      o = (in + s - 1) / s;
    } else {
      if (p.autoPad == "VALID")
        pb = pe = 0;
      int64_t span = in + pb + pe - ek;
      if (span < 0)
        return fail(loc, "window of size " + Twine(ek) +
                             " is larger than the " + "padded input size " +
                             Twine(in + pb + pe) + " in spatial dimension " +
                             Twine(i));
      o = (p.ceilMode ? (span + s - 1) / s : span / s) + 1;
      // The last window must start inside the input or the begin padding.
      if (p.ceilMode && (o - 1) * s >= in + pb)
        --o;
    }
    out.push_back(o);
  }
  return success();
}
} // namespace

/// Defines OP::inferReturnTypes as a call to a shared helper; `CALL` may use
/// `ctx`, `loc`, `adaptor` and `types`.
#define DIST_INFER_VIA(OP, CALL)                                               \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,          \
      SmallVectorImpl<Type> &types) {                                          \
    if (failed(verifyAttrs(adaptor, loc)))                                     \
      return failure();                                                        \
    (void)ctx;                                                                 \
    (void)loc;                                                                 \
    return CALL;                                                               \
  }

//===----------------------------------------------------------------------===//
// Constants and parameters
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  types.push_back(cast<TypedAttr>(adaptor.getValue()).getType());
  return success();
}

LogicalResult ConstantOfShapeOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (auto r = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
      r && r.getRank() != 1)
    return fail(loc,
                "'input' must be a 1-D tensor, got rank " + Twine(r.getRank()));
  Type elt = Float32Type::get(ctx);
  if (auto value = adaptor.getValueAttr()) {
    if (value.getNumElements() != 1)
      return fail(loc, "'value' must hold exactly one element, got " +
                           Twine(value.getNumElements()));
    elt = value.getElementType();
  }
  auto traced = traceShapeValue(adaptor.getInput());
  if (!traced) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  Dims dims;
  for (const DimValue &d : *traced) {
    if (d.isKnown() && d.value < 0)
      return fail(loc, "shape has a negative dimension " + Twine(d.value));
    dims.push_back(d.value);
  }
  types.push_back(RankedTensorType::get(dims, elt));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

#define DIST_SAME_AS_INPUT(OP)                                                 \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &types) {                                          \
    if (failed(verifyAttrs(adaptor, loc)))                                     \
      return failure();                                                        \
    return sameAsOperand(adaptor.getInput(), types);                           \
  }
DIST_SAME_AS_INPUT(AbsOp)
DIST_SAME_AS_INPUT(NegOp)
DIST_SAME_AS_INPUT(ExpOp)
DIST_SAME_AS_INPUT(LogOp)
DIST_SAME_AS_INPUT(SqrtOp)
DIST_SAME_AS_INPUT(ReciprocalOp)
DIST_SAME_AS_INPUT(FloorOp)
DIST_SAME_AS_INPUT(CeilOp)
DIST_SAME_AS_INPUT(RoundOp)
DIST_SAME_AS_INPUT(SignOp)
DIST_SAME_AS_INPUT(SinOp)
DIST_SAME_AS_INPUT(CosOp)
DIST_SAME_AS_INPUT(TanOp)
DIST_SAME_AS_INPUT(AsinOp)
DIST_SAME_AS_INPUT(AcosOp)
DIST_SAME_AS_INPUT(AtanOp)
DIST_SAME_AS_INPUT(SinhOp)
DIST_SAME_AS_INPUT(CoshOp)
DIST_SAME_AS_INPUT(AsinhOp)
DIST_SAME_AS_INPUT(AcoshOp)
DIST_SAME_AS_INPUT(AtanhOp)
DIST_SAME_AS_INPUT(TanhOp)
DIST_SAME_AS_INPUT(SigmoidOp)
DIST_SAME_AS_INPUT(ReluOp)
DIST_SAME_AS_INPUT(LeakyReluOp)
DIST_SAME_AS_INPUT(EluOp)
DIST_SAME_AS_INPUT(SeluOp)
DIST_SAME_AS_INPUT(CeluOp)
DIST_SAME_AS_INPUT(SoftplusOp)
DIST_SAME_AS_INPUT(SoftsignOp)
DIST_SAME_AS_INPUT(HardSigmoidOp)
DIST_SAME_AS_INPUT(HardSwishOp)
DIST_SAME_AS_INPUT(ErfOp)
DIST_SAME_AS_INPUT(NotOp)
DIST_SAME_AS_INPUT(IdentityOp)
DIST_SAME_AS_INPUT(MeshCopyOp)
#undef DIST_SAME_AS_INPUT

LogicalResult MeshCoordOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  types.push_back(RankedTensorType::get({}, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult GeluOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (adaptor.getApproximate() != "none" && adaptor.getApproximate() != "tanh")
    return fail(loc, "'approximate' must be \"none\" or \"tanh\", got \"" +
                         adaptor.getApproximate() + "\"");
  return sameAsOperand(adaptor.getInput(), types);
}

static LogicalResult checkScalarBound(std::optional<Location> loc, Value bound,
                                      Value input, StringRef name) {
  if (!bound)
    return success();
  if (eltOf(bound) != eltOf(input))
    return fail(loc, "'" + name + "' element type differs from the input's");
  if (auto ranked = dyn_cast<RankedTensorType>(bound.getType()))
    if (ranked.hasStaticShape() && ranked.getNumElements() != 1)
      return fail(loc, "'" + name + "' must be a scalar");
  return success();
}

LogicalResult ClipOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (failed(
          checkScalarBound(loc, adaptor.getMin(), adaptor.getInput(), "min")) ||
      failed(
          checkScalarBound(loc, adaptor.getMax(), adaptor.getInput(), "max")))
    return failure();
  return sameAsOperand(adaptor.getInput(), types);
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type to = adaptor.getTo();
  if (!to ||
      !(isa<FloatType>(to) || isa<IntegerType>(to) || isa<StringType>(to)))
    return fail(loc, "cast target must be an integer, float or string type");
  types.push_back(makeTensor(shapeOf(adaptor.getInput()), to));
  return success();
}

LogicalResult CastLikeOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  types.push_back(
      makeTensor(shapeOf(adaptor.getInput()), eltOf(adaptor.getTarget())));
  return success();
}

template <typename AdaptorT>
static LogicalResult inferBinary(std::optional<Location> loc, AdaptorT adaptor,
                                 Type resultElt, SmallVectorImpl<Type> &types) {
  Shape out;
  if (failed(broadcastShapes(loc, shapeOf(adaptor.getLhs()),
                             shapeOf(adaptor.getRhs()), out)))
    return failure();
  types.push_back(makeTensor(out, resultElt));
  return success();
}

#define DIST_BINARY(OP, ELT)                                                   \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,          \
      SmallVectorImpl<Type> &types) {                                          \
    if (failed(verifyAttrs(adaptor, loc)))                                     \
      return failure();                                                        \
    (void)ctx;                                                                 \
    return inferBinary(loc, adaptor, ELT, types);                              \
  }
DIST_BINARY(AddOp, eltOf(adaptor.getLhs()))
DIST_BINARY(SubOp, eltOf(adaptor.getLhs()))
DIST_BINARY(MulOp, eltOf(adaptor.getLhs()))
DIST_BINARY(DivOp, eltOf(adaptor.getLhs()))
DIST_BINARY(PowOp, eltOf(adaptor.getLhs()))
DIST_BINARY(EqualOp, IntegerType::get(ctx, 1))
DIST_BINARY(LessOp, IntegerType::get(ctx, 1))
DIST_BINARY(GreaterOp, IntegerType::get(ctx, 1))
DIST_BINARY(LessOrEqualOp, IntegerType::get(ctx, 1))
DIST_BINARY(GreaterOrEqualOp, IntegerType::get(ctx, 1))
DIST_BINARY(AndOp, IntegerType::get(ctx, 1))
DIST_BINARY(OrOp, IntegerType::get(ctx, 1))
DIST_BINARY(XorOp, IntegerType::get(ctx, 1))
#undef DIST_BINARY

LogicalResult ModOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (isa<FloatType>(eltOf(adaptor.getLhs())) && adaptor.getFmod() != 1)
    return fail(loc, "'fmod' must be 1 for floating-point operands");
  return inferBinary(loc, adaptor, eltOf(adaptor.getLhs()), types);
}

template <typename AdaptorT>
static LogicalResult inferSoftmax(std::optional<Location> loc, AdaptorT adaptor,
                                  SmallVectorImpl<Type> &types) {
  if (Shape x = shapeOf(adaptor.getInput())) {
    auto axis = static_cast<int64_t>(adaptor.getAxis());
    if (!normalizeAxis(axis, static_cast<int64_t>(x->size())))
      return fail(loc, "'axis' " + Twine(axis) + " is out of range for rank " +
                           Twine(x->size()));
  }
  return sameAsOperand(adaptor.getInput(), types);
}

DIST_INFER_VIA(SoftmaxOp, inferSoftmax(loc, adaptor, types))

DIST_INFER_VIA(LogSoftmaxOp, inferSoftmax(loc, adaptor, types))

LogicalResult TriluOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (Shape x = shapeOf(adaptor.getInput()); x && x->size() < 2)
    return fail(loc, "input must have at least 2 dimensions, got shape " +
                         dimsToString(*x));
  return sameAsOperand(adaptor.getInput(), types);
}

LogicalResult InstanceNormOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Shape x = shapeOf(adaptor.getInput());
  if (x && x->size() < 3)
    return fail(loc,
                "input must be N x C x D1 ..., got shape " + dimsToString(*x));
  int64_t c = x ? (*x)[1] : kDynamic;
  for (auto [v, name] :
       {std::pair{adaptor.getScale(), "scale"}, {adaptor.getB(), "B"}}) {
    Shape s = shapeOf(v);
    if (s && (s->size() != 1 || !compatibleDims((*s)[0], c)))
      return fail(loc, "'" + Twine(name) + "' must be 1-D of size " +
                           (ShapedType::isDynamic(c) ? std::string("C")
                                                     : std::to_string(c)) +
                           ", got shape " + dimsToString(*s));
  }
  return sameAsOperand(adaptor.getInput(), types);
}

template <typename AdaptorT>
static LogicalResult inferVariadic(std::optional<Location> loc,
                                   AdaptorT adaptor,
                                   SmallVectorImpl<Type> &types) {
  if (adaptor.getInputs().empty())
    return fail(loc, "needs at least one operand");
  Shape out = shapeOf(adaptor.getInputs().front());
  for (Value v : adaptor.getInputs().drop_front())
    if (failed(broadcastShapes(loc, out, shapeOf(v), out)))
      return failure();
  types.push_back(makeTensor(out, eltOf(adaptor.getInputs().front())));
  return success();
}

DIST_INFER_VIA(MaxOp, inferVariadic(loc, adaptor, types))
DIST_INFER_VIA(MinOp, inferVariadic(loc, adaptor, types))
DIST_INFER_VIA(SumOp, inferVariadic(loc, adaptor, types))
DIST_INFER_VIA(MeanOp, inferVariadic(loc, adaptor, types))

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (eltOf(adaptor.getX()) != eltOf(adaptor.getY()))
    return fail(loc, "'x' and 'y' must have the same element type");
  Shape out;
  if (failed(broadcastShapes(loc, shapeOf(adaptor.getCondition()),
                             shapeOf(adaptor.getX()), out)) ||
      failed(broadcastShapes(loc, out, shapeOf(adaptor.getY()), out)))
    return failure();
  types.push_back(makeTensor(out, eltOf(adaptor.getX())));
  return success();
}

LogicalResult PReluOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (failed(checkUnidirectional(loc, shapeOf(adaptor.getSlope()),
                                 shapeOf(adaptor.getInput()), "slope")))
    return failure();
  return sameAsOperand(adaptor.getInput(), types);
}

//===----------------------------------------------------------------------===//
// Linear algebra, convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Shape a = shapeOf(adaptor.getLhs()), b = shapeOf(adaptor.getRhs());
  Type elt = eltOf(adaptor.getLhs());
  if (!a || !b) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  if (a->empty() || b->empty())
    return fail(loc, "operands must have at least one dimension");
  Dims ap = *a, bp = *b;
  bool aVec = ap.size() == 1, bVec = bp.size() == 1;
  if (aVec)
    ap.insert(ap.begin(), 1);
  if (bVec)
    bp.push_back(1);
  int64_t k1 = ap.back(), k2 = bp[bp.size() - 2];
  if (!compatibleDims(k1, k2))
    return fail(loc, "contraction dimensions differ: " + dimsToString(*a) +
                         " x " + dimsToString(*b));
  Shape batch;
  if (failed(broadcastShapes(loc, Dims(ArrayRef(ap).drop_back(2)),
                             Dims(ArrayRef(bp).drop_back(2)), batch)))
    return failure();
  Dims out = *batch;
  if (!aVec)
    out.push_back(ap[ap.size() - 2]);
  if (!bVec)
    out.push_back(bp.back());
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult EinsumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (adaptor.getInputs().empty())
    return fail(loc, "needs at least one operand");
  // Type inference runs before the verifier sees the required attribute.
  if (!adaptor.getEquationAttr())
    return fail(loc, "needs an 'equation' attribute");
  Type elt = eltOf(adaptor.getInputs()[0]);
  SmallVector<Dims> shapes;
  SmallVector<int64_t> ranks;
  for (Value v : adaptor.getInputs()) {
    if (eltOf(v) != elt)
      return fail(loc, "operands must have the same element type");
    Shape s = shapeOf(v);
    if (!s) {
      types.push_back(UnrankedTensorType::get(elt));
      return success();
    }
    shapes.push_back(*s);
    ranks.push_back(static_cast<int64_t>(s->size()));
  }
  EinsumSubscripts subs;
  std::string why;
  if (!parseEinsum(adaptor.getEquation(), ranks, subs, why))
    return fail(loc, why);
  // A subscript's size: the non-1 size its dimensions agree on (1 only
  // broadcasts under '...'), dynamic when none is known.
  std::map<char, int64_t> size;
  for (auto [in, shape] : llvm::zip(subs.inputs, shapes))
    for (auto [c, d] : llvm::zip(in, shape)) {
      auto [it, fresh] = size.insert({c, d});
      if (fresh || d == it->second || d == kDynamic)
        continue;
      bool broadcastable = llvm::isDigit(c);
      if (broadcastable && d == 1)
        continue;
      if (broadcastable && it->second == 1) {
        it->second = d;
        continue;
      }
      if (it->second == kDynamic) {
        it->second = d;
        continue;
      }
      return fail(loc, std::string("subscript '") + c + "' has sizes " +
                           std::to_string(it->second) + " and " +
                           std::to_string(d));
    }
  Dims out;
  for (char c : subs.output)
    out.push_back(size[c]);
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Shape a = shapeOf(adaptor.getA()), b = shapeOf(adaptor.getB());
  Type elt = eltOf(adaptor.getA());
  if (eltOf(adaptor.getB()) != elt ||
      (adaptor.getC() && eltOf(adaptor.getC()) != elt))
    return fail(loc, "operands must have the same element type");
  int64_t m = kDynamic, n = kDynamic;
  int64_t ka = kDynamic, kb = kDynamic;
  if (a) {
    if (a->size() != 2)
      return fail(loc, "'A' must be a matrix, got shape " + dimsToString(*a));
    bool t = adaptor.getTransA() != 0;
    m = (*a)[t ? 1 : 0];
    ka = (*a)[t ? 0 : 1];
  }
  if (b) {
    if (b->size() != 2)
      return fail(loc, "'B' must be a matrix, got shape " + dimsToString(*b));
    bool t = adaptor.getTransB() != 0;
    kb = (*b)[t ? 1 : 0];
    n = (*b)[t ? 0 : 1];
  }
  if (!compatibleDims(ka, kb))
    return fail(loc, "contraction dimensions differ: " + Twine(ka) + " vs " +
                         Twine(kb));
  Dims out{m, n};
  if (failed(checkUnidirectional(loc, shapeOf(adaptor.getC()), out, "'C'")))
    return failure();
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

/// Shared inference of Conv and ConvTranspose: checks channels, bias and
/// kernel, then `spatialFn(spatial input sizes, window, out)` appends the
/// spatial output sizes.
template <typename AdaptorT, typename SpatialFn>
static LogicalResult
inferConvLike(std::optional<Location> loc, AdaptorT adaptor, bool transposed,
              SmallVectorImpl<Type> &types, SpatialFn spatialFn) {
  Shape x = shapeOf(adaptor.getInput()), w = shapeOf(adaptor.getWeight());
  Type elt = eltOf(adaptor.getInput());
  if (eltOf(adaptor.getWeight()) != elt)
    return fail(loc, "input and weight element types differ");
  int64_t group = adaptor.getGroup();
  if (group < 1)
    return fail(loc, "'group' must be positive, got " + Twine(group));
  if (x && x->size() < 3)
    return fail(loc,
                "input must be N x C x D1 ..., got shape " + dimsToString(*x));
  if (w && w->size() < 3)
    return fail(loc, "weight must have at least 3 dimensions, got shape " +
                         dimsToString(*w));
  if (x && w && x->size() != w->size())
    return fail(loc, "input rank " + Twine(x->size()) +
                         " differs from weight rank " + Twine(w->size()));
  if (!x) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  size_t n = x->size() - 2;
  // Channels.
  int64_t c = (*x)[1];
  int64_t outChannels = kDynamic;
  if (w) {
    int64_t wc = transposed ? (*w)[0] : (*w)[1];
    int64_t expectC = transposed ? wc : mulDims(wc, group);
    if (!compatibleDims(c, expectC))
      return fail(loc, "input has " + Twine(c) + " channels, weight expects " +
                           Twine(expectC) + " (group " + Twine(group) + ")");
    outChannels = transposed ? mulDims((*w)[1], group) : (*w)[0];
    if (!transposed && !ShapedType::isDynamic(outChannels) &&
        outChannels % group != 0)
      return fail(loc, "output channels " + Twine(outChannels) +
                           " not divisible by group " + Twine(group));
  }
  if (Shape bias = shapeOf(adaptor.getBias())) {
    if (bias->size() != 1 || !compatibleDims((*bias)[0], outChannels))
      return fail(loc, "bias must be 1-D of size " + Twine(outChannels) +
                           ", got shape " + dimsToString(*bias));
  }
  // Kernel shape: attribute, else weight's spatial dims.
  Dims kernel;
  if (auto ks = adaptor.getKernelShape())
    kernel.assign(ks->begin(), ks->end());
  else if (w)
    kernel.assign(w->begin() + 2, w->end());
  Dims out{(*x)[0], outChannels};
  if (kernel.empty() || llvm::any_of(kernel, ShapedType::isDynamic)) {
    out.append(n, kDynamic);
    types.push_back(RankedTensorType::get(out, elt));
    return success();
  }
  if (kernel.size() != n)
    return fail(loc, "kernel has " + Twine(kernel.size()) +
                         " spatial dimensions, input has " + Twine(n));
  if (w)
    for (size_t i = 0; i < n; ++i)
      if (!compatibleDims((*w)[i + 2], kernel[i]))
        return fail(loc, "'kernel_shape' disagrees with the weight's shape " +
                             dimsToString(*w));
  WindowParams p{adaptor.getAutoPad(), kernel,
                 adaptor.getStrides(), adaptor.getDilations(),
                 adaptor.getPads(),    false};
  if (failed(spatialFn(ArrayRef(*x).drop_front(2), p, out)))
    return failure();
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  return inferConvLike(
      loc, adaptor, /*transposed=*/false, types,
      [&](ArrayRef<int64_t> spatial, const WindowParams &p, Dims &out) {
        return inferWindow(loc, spatial, p, out);
      });
}

LogicalResult ConvWeightGradOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Shape x = shapeOf(adaptor.getInput()), dy = shapeOf(adaptor.getOutputGrad());
  Type elt = eltOf(adaptor.getInput());
  if (eltOf(adaptor.getOutputGrad()) != elt)
    return fail(loc, "input and output gradient element types differ");
  ArrayRef<int64_t> kernel = adaptor.getKernelShape();
  size_t n = kernel.size();
  if (n == 0)
    return fail(loc, "'kernel_shape' is empty");
  for (auto [name, v] :
       {std::pair{"input", x}, std::pair{"output gradient", dy}})
    if (v && v->size() != n + 2)
      return fail(loc, Twine(name) + " must be N x C x " + Twine(n) +
                           " spatial dims, got shape " + dimsToString(*v));
  if (x && dy && !compatibleDims((*x)[0], (*dy)[0]))
    return fail(loc, "input batch " + Twine((*x)[0]) +
                         " differs from the output gradient's " +
                         Twine((*dy)[0]));
  if (failed(checkAttrLen(loc, adaptor.getStrides(), n, "strides")) ||
      failed(checkAttrLen(loc, adaptor.getDilations(), n, "dilations")) ||
      failed(checkAttrLen(loc, adaptor.getPads(), 2 * n, "pads")))
    return failure();
  Dims out{dy ? (*dy)[1] : kDynamic, x ? (*x)[1] : kDynamic};
  out.append(kernel.begin(), kernel.end());
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult ConvTransposeOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  auto spatialFn = [&](ArrayRef<int64_t> spatial, const WindowParams &p,
                       Dims &out) -> LogicalResult {
    size_t n = spatial.size();
    auto outPad = adaptor.getOutputPadding();
    if (failed(checkAttrLen(loc, p.strides, n, "strides")) ||
        failed(checkAttrLen(loc, p.dilations, n, "dilations")) ||
        failed(checkAttrLen(loc, p.pads, 2 * n, "pads")) ||
        failed(checkAttrLen(loc, outPad, n, "output_padding")))
      return failure();
    if (auto os = adaptor.getOutputShape()) {
      if (os->size() != n && os->size() != n + 2)
        return fail(loc, "'output_shape' has " + Twine(os->size()) +
                             " values, expected " + Twine(n));
      out.append(os->end() - n, os->end());
      return success();
    }
    for (size_t i = 0; i < n; ++i) {
      int64_t s = p.strides ? (*p.strides)[i] : 1;
      int64_t d = p.dilations ? (*p.dilations)[i] : 1;
      int64_t pb = p.pads ? (*p.pads)[i] : 0;
      int64_t pe = p.pads ? (*p.pads)[i + n] : 0;
      int64_t op = outPad ? (*outPad)[i] : 0;
      if (s < 1 || d < 1)
        return fail(loc, "strides and dilations must be positive");
      if (ShapedType::isDynamic(spatial[i])) {
        out.push_back(kDynamic);
        continue;
      }
      int64_t size;
      if (p.autoPad == "SAME_UPPER" || p.autoPad == "SAME_LOWER") {
        size = spatial[i] * s;
      } else {
        if (p.autoPad == "VALID")
          pb = pe = 0;
        size = s * (spatial[i] - 1) + op + (p.kernel[i] - 1) * d + 1 - pb - pe;
      }
      if (size < 1)
        return fail(loc, "output size " + Twine(size) +
                             " in spatial dimension " + Twine(i) +
                             " is not positive");
      out.push_back(size);
    }
    return success();
  };
  return inferConvLike(loc, adaptor, /*transposed=*/true, types, spatialFn);
}

template <typename AdaptorT>
static LogicalResult inferPool(std::optional<Location> loc, AdaptorT adaptor,
                               Dims &out, Type &elt) {
  Shape x = shapeOf(adaptor.getInput());
  elt = eltOf(adaptor.getInput());
  ArrayRef<int64_t> kernel = adaptor.getKernelShape();
  if (!x) {
    return success();
  }
  if (x->size() < 3)
    return fail(loc,
                "input must be N x C x D1 ..., got shape " + dimsToString(*x));
  if (adaptor.getCeilMode() != 0 && adaptor.getCeilMode() != 1)
    return fail(loc, "'ceil_mode' must be 0 or 1");
  out = {(*x)[0], (*x)[1]};
  WindowParams p{adaptor.getAutoPad(), kernel,
                 adaptor.getStrides(), adaptor.getDilations(),
                 adaptor.getPads(),    adaptor.getCeilMode() == 1};
  return inferWindow(loc, ArrayRef(*x).drop_front(2), p, out);
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Dims out;
  Type elt;
  if (failed(inferPool(loc, adaptor, out, elt)))
    return failure();
  Shape shape = out.empty() ? Shape() : Shape(out);
  types.push_back(makeTensor(shape, elt));
  types.push_back(makeTensor(shape, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Dims out;
  Type elt;
  if (failed(inferPool(loc, adaptor, out, elt)))
    return failure();
  types.push_back(makeTensor(out.empty() ? Shape() : Shape(out), elt));
  return success();
}

template <typename AdaptorT>
static LogicalResult inferGlobalPool(std::optional<Location> loc,
                                     AdaptorT adaptor,
                                     SmallVectorImpl<Type> &types) {
  Shape x = shapeOf(adaptor.getInput());
  if (x) {
    if (x->size() < 3)
      return fail(loc, "input must be N x C x D1 ..., got shape " +
                           dimsToString(*x));
    std::fill(x->begin() + 2, x->end(), 1);
  }
  types.push_back(makeTensor(x, eltOf(adaptor.getInput())));
  return success();
}

DIST_INFER_VIA(GlobalAveragePoolOp, inferGlobalPool(loc, adaptor, types))

DIST_INFER_VIA(GlobalMaxPoolOp, inferGlobalPool(loc, adaptor, types))

//===----------------------------------------------------------------------===//
// Normalisation, dropout
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Shape x = shapeOf(adaptor.getInput());
  if (x && x->size() < 2)
    return fail(loc,
                "input must be N x C x ..., got shape " + dimsToString(*x));
  int64_t c = x ? (*x)[1] : kDynamic;
  for (auto [v, name] : {std::pair{adaptor.getScale(), "scale"},
                         {adaptor.getB(), "B"},
                         {adaptor.getInputMean(), "input_mean"},
                         {adaptor.getInputVar(), "input_var"}}) {
    Shape s = shapeOf(v);
    if (s && (s->size() != 1 || !compatibleDims((*s)[0], c)))
      return fail(loc, "'" + Twine(name) + "' must be 1-D of size " +
                           (ShapedType::isDynamic(c) ? std::string("C")
                                                     : std::to_string(c)) +
                           ", got shape " + dimsToString(*s));
  }
  types.push_back(adaptor.getInput().getType());
  types.push_back(adaptor.getInputMean().getType());
  types.push_back(adaptor.getInputVar().getType());
  return success();
}

/// ONNX TensorProto data type code to an MLIR float type for stash_type.
static Type stashType(MLIRContext *ctx, int64_t code, Type fallback) {
  switch (code) {
  case 1:
    return Float32Type::get(ctx);
  case 10:
    return Float16Type::get(ctx);
  case 11:
    return Float64Type::get(ctx);
  case 16:
    return BFloat16Type::get(ctx);
  default:
    return fallback;
  }
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Shape x = shapeOf(adaptor.getInput());
  Type stash = stashType(ctx, adaptor.getStashType(), Type());
  if (!stash)
    return fail(loc, "unsupported 'stash_type' " +
                         Twine(static_cast<int64_t>(adaptor.getStashType())));
  Shape stats = x;
  if (x) {
    auto axis = normalizeAxis(static_cast<int64_t>(adaptor.getAxis()),
                              static_cast<int64_t>(x->size()));
    if (!axis)
      return fail(loc, "'axis' " +
                           Twine(static_cast<int64_t>(adaptor.getAxis())) +
                           " is out of range for rank " + Twine(x->size()));
    Dims normalized(x->begin() + *axis, x->end());
    for (auto [v, name] :
         {std::pair{adaptor.getScale(), "scale"}, {adaptor.getBias(), "bias"}})
      if (failed(checkUnidirectional(loc, shapeOf(v), normalized,
                                     "'" + std::string(name) + "'")))
        return failure();
    std::fill(stats->begin() + *axis, stats->end(), 1);
  }
  types.push_back(adaptor.getInput().getType());
  types.push_back(makeTensor(stats, stash));
  types.push_back(makeTensor(stats, stash));
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (failed(checkScalarBound(loc, adaptor.getRatio(), adaptor.getRatio(),
                              "ratio")))
    return failure();
  if (std::optional<SmallVector<double>> r =
          getConstantDoubles(adaptor.getRatio()))
    if (!r->empty() && ((*r)[0] < 0.0 || (*r)[0] >= 1.0))
      return fail(loc,
                  "'ratio' must be in [0, 1), got " + std::to_string((*r)[0]));
  types.push_back(adaptor.getInput().getType());
  types.push_back(
      makeTensor(shapeOf(adaptor.getInput()), IntegerType::get(ctx, 1)));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

template <typename AdaptorT>
static LogicalResult inferReduce(std::optional<Location> loc, AdaptorT adaptor,
                                 SmallVectorImpl<Type> &types) {
  Type elt = eltOf(adaptor.getInput());
  Shape x = shapeOf(adaptor.getInput());
  bool keep = adaptor.getKeepdims() != 0;
  std::optional<Dims> axes = Dims{};
  if (Value axesValue = adaptor.getAxes())
    axes = getConstantInts(axesValue);
  if (!x) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  auto rank = static_cast<int64_t>(x->size());
  if (!axes) {
    // Axes known only at run time.
    if (keep) {
      types.push_back(RankedTensorType::get(Dims(rank, kDynamic), elt));
      return success();
    }
    std::optional<int64_t> len = vectorLength(adaptor.getAxes().getType());
    if (len && *len > 0 && *len <= rank)
      types.push_back(RankedTensorType::get(Dims(rank - *len, kDynamic), elt));
    else
      types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  if (axes->empty()) {
    if (adaptor.getNoopWithEmptyAxes() != 0) {
      types.push_back(adaptor.getInput().getType());
      return success();
    }
    for (int64_t i = 0; i < rank; ++i)
      axes->push_back(i);
  }
  SmallVector<bool> reduced(rank, false);
  for (int64_t a : *axes) {
    auto axis = normalizeAxis(a, rank);
    if (!axis)
      return fail(loc, "axis " + Twine(a) + " is out of range for rank " +
                           Twine(rank));
    if (reduced[*axis])
      return fail(loc, "axis " + Twine(a) + " is repeated");
    reduced[*axis] = true;
  }
  Dims out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back((*x)[i]);
    else if (keep)
      out.push_back(1);
  }
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

DIST_INFER_VIA(ReduceSumOp, inferReduce(loc, adaptor, types))
DIST_INFER_VIA(ReduceMeanOp, inferReduce(loc, adaptor, types))
DIST_INFER_VIA(ReduceMaxOp, inferReduce(loc, adaptor, types))
DIST_INFER_VIA(ReduceMinOp, inferReduce(loc, adaptor, types))
DIST_INFER_VIA(ReduceProdOp, inferReduce(loc, adaptor, types))
DIST_INFER_VIA(ReduceSumSquareOp, inferReduce(loc, adaptor, types))
DIST_INFER_VIA(ReduceL2Op, inferReduce(loc, adaptor, types))
DIST_INFER_VIA(ReduceLogSumExpOp, inferReduce(loc, adaptor, types))

template <typename AdaptorT>
static LogicalResult
inferArgReduce(MLIRContext *ctx, std::optional<Location> loc, AdaptorT adaptor,
               SmallVectorImpl<Type> &types) {
  Type i64 = IntegerType::get(ctx, 64);
  Shape x = shapeOf(adaptor.getInput());
  if (!x) {
    types.push_back(UnrankedTensorType::get(i64));
    return success();
  }
  auto axisAttr = static_cast<int64_t>(adaptor.getAxis());
  auto axis = normalizeAxis(axisAttr, static_cast<int64_t>(x->size()));
  if (!axis)
    return fail(loc, "'axis' " + Twine(axisAttr) +
                         " is out of range for rank " + Twine(x->size()));
  Dims out = *x;
  if (adaptor.getKeepdims() != 0)
    out[*axis] = 1;
  else
    out.erase(out.begin() + *axis);
  types.push_back(RankedTensorType::get(out, i64));
  return success();
}

DIST_INFER_VIA(ArgMaxOp, inferArgReduce(ctx, loc, adaptor, types))

DIST_INFER_VIA(ArgMinOp, inferArgReduce(ctx, loc, adaptor, types))

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

/// Shape-like operands (Reshape's shape, Expand's shape, ...) are 1-D.
static LogicalResult checkVector(std::optional<Location> loc, Value v,
                                 StringRef name) {
  if (auto r = dyn_cast<RankedTensorType>(v.getType()); r && r.getRank() != 1)
    return fail(loc, "'" + name + "' must be a 1-D tensor, got rank " +
                         Twine(r.getRank()));
  return success();
}

/// The symbols `s` is equal to, found by following the dimension back
/// through reshapes (an entry of the shape traced to a symbol, or a 0 that
/// copies the input's) and transposes, `s` first. A channel shuffle or a
/// split into attention heads reshapes, transposes and reshapes back, the
/// batch of each shape read from the tensor before the first reshape
/// (Gather of Shape, as PyTorch exports a dynamic batch): its symbol and
/// that of the data of the last reshape are the same dimension.
static SmallVector<DimValue> symbolChain(DimValue s) {
  SmallVector<DimValue> chain;
  for (int depth = 0; s.isSymbol() && depth < 16; ++depth) {
    chain.push_back(s);
    Operation *def = s.src.getDefiningOp();
    DimValue next;
    auto transpose = dyn_cast_or_null<TransposeOp>(def);
    auto type = transpose ? dyn_cast<RankedTensorType>(transpose.getType())
                          : RankedTensorType();
    if (type) {
      int64_t rank = type.getRank();
      std::optional<ArrayRef<int64_t>> perm = transpose.getPerm();
      if (s.idx < rank &&
          (!perm || static_cast<int64_t>(perm->size()) == rank)) {
        next.src = transpose.getInput();
        next.idx = perm ? (*perm)[s.idx] : rank - 1 - s.idx;
      }
    } else if (auto r = dyn_cast_or_null<ReshapeOp>(def)) {
      std::optional<SmallVector<DimValue>> traced =
          traceShapeValue(r.getShape());
      if (traced && s.idx < static_cast<int64_t>(traced->size())) {
        const DimValue &d = (*traced)[s.idx];
        if (d.isSymbol()) {
          next = d;
        } else if (d.isKnown() && d.value == 0 && r.getAllowzero() == 0) {
          next.src = r.getInput();
          next.idx = s.idx;
        }
      }
    }
    s = next;
  }
  return chain;
}

/// Whether symbols `a` and `b` are the same dimension (symbolChain).
static bool sameDimension(const DimValue &a, const DimValue &b) {
  if (a.sameSymbol(b))
    return true;
  SmallVector<DimValue> chainB = symbolChain(b);
  for (const DimValue &x : symbolChain(a))
    for (const DimValue &y : chainB)
      if (x.sameSymbol(y))
        return true;
  return false;
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (failed(checkVector(loc, adaptor.getShape(), "shape")))
    return failure();
  Type elt = eltOf(adaptor.getInput());
  Value input = adaptor.getInput();
  Shape x = shapeOf(input);
  auto traced = traceShapeValue(adaptor.getShape());
  if (!traced) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  bool allowZero = adaptor.getAllowzero() != 0;
  Dims out;
  SmallVector<DimValue> outSyms;
  int64_t inferIdx = -1;
  for (auto [i, d] : llvm::enumerate(*traced)) {
    DimValue r = d;
    if (d.isKnown() && d.value == -1) {
      if (inferIdx >= 0)
        return fail(loc, "shape has more than one -1 entry");
      inferIdx = static_cast<int64_t>(i);
    } else if (d.isKnown() && d.value == 0 && !allowZero) {
      if (x) {
        if (i >= x->size())
          return fail(loc, "shape entry " + Twine(i) +
                               " copies a dimension the input (rank " +
                               Twine(x->size()) + ") does not have");
        r = DimValue();
        if (ShapedType::isDynamic((*x)[i])) {
          r.src = input;
          r.idx = static_cast<int64_t>(i);
        } else {
          r.value = (*x)[i];
        }
      } else {
        r = DimValue();
      }
    } else if (d.isKnown() && d.value < -1) {
      return fail(loc, "shape has invalid entry " + Twine(d.value));
    }
    outSyms.push_back(r);
    out.push_back(r.value);
  }
  Dims requested = out; // For messages: keeps the -1.
  if (inferIdx >= 0)
    out[inferIdx] = kDynamic;
  if (x) {
    // Input elements as a static product and a list of symbolic factors.
    int64_t inStatic = 1;
    SmallVector<DimValue> inSyms;
    bool inUnknown = false;
    for (auto [i, d] : llvm::enumerate(*x)) {
      if (ShapedType::isDynamic(d)) {
        DimValue s;
        s.src = input;
        s.idx = static_cast<int64_t>(i);
        inSyms.push_back(s);
      } else {
        inStatic *= d;
      }
    }
    int64_t outStatic = 1;
    bool outUnknown = false;
    SmallVector<DimValue> outFactors;
    for (auto [i, d] : llvm::enumerate(outSyms)) {
      if (static_cast<int64_t>(i) == inferIdx)
        continue;
      if (d.isKnown())
        outStatic *= d.value;
      else if (d.isSymbol())
        outFactors.push_back(d);
      else
        outUnknown = true;
    }
    // Cancel symbolic factors present on both sides.
    for (auto it = outFactors.begin(); it != outFactors.end();) {
      auto match = llvm::find_if(
          inSyms, [&](const DimValue &s) { return sameDimension(s, *it); });
      if (match != inSyms.end()) {
        inSyms.erase(match);
        it = outFactors.erase(it);
      } else {
        ++it;
      }
    }
    bool exact =
        inSyms.empty() && outFactors.empty() && !outUnknown && !inUnknown;
    if (inferIdx >= 0) {
      if (exact) {
        if (outStatic == 0 || inStatic % outStatic != 0)
          return fail(loc, "cannot reshape " + shapeToString(x) + " into " +
                               dimsToString(requested));
        out[inferIdx] = inStatic / outStatic;
      }
    } else if (exact && inStatic != outStatic) {
      return fail(loc, "cannot reshape " + shapeToString(x) + " (" +
                           Twine(inStatic) + " elements) into " +
                           dimsToString(out) + " (" + Twine(outStatic) +
                           " elements)");
    }
  }
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getInput());
  Shape x = shapeOf(adaptor.getInput());
  if (!x) {
    types.push_back(RankedTensorType::get({kDynamic, kDynamic}, elt));
    return success();
  }
  auto rank = static_cast<int64_t>(x->size());
  auto axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis < -rank || axis > rank)
    return fail(loc, "'axis' " + Twine(axis) + " is out of range for rank " +
                         Twine(rank));
  if (axis < 0)
    axis += rank;
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? rows : cols) = mulDims(i < axis ? rows : cols, (*x)[i]);
  types.push_back(RankedTensorType::get({rows, cols}, elt));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getInput());
  Shape x = shapeOf(adaptor.getInput());
  if (!x) {
    if (auto perm = adaptor.getPerm())
      types.push_back(RankedTensorType::get(Dims(perm->size(), kDynamic), elt));
    else
      types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  size_t rank = x->size();
  Dims perm = transposePermutation(adaptor.getPerm(), rank);
  if (perm.size() != rank)
    return fail(loc, "'perm' has " + Twine(perm.size()) +
                         " entries for an input of rank " + Twine(rank));
  SmallVector<bool> seen(rank, false);
  Dims out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      return fail(loc,
                  "'perm' " + dimsToString(perm) + " is not a permutation");
    seen[p] = true;
    out.push_back((*x)[p]);
  }
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getInput());
  Shape x = shapeOf(adaptor.getInput());
  std::optional<Dims> axes;
  if (adaptor.getAxes())
    axes = getConstantInts(adaptor.getAxes());
  if (!x) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  auto rank = static_cast<int64_t>(x->size());
  if (!adaptor.getAxes()) {
    if (llvm::any_of(*x, ShapedType::isDynamic)) {
      types.push_back(UnrankedTensorType::get(elt));
      return success();
    }
    Dims out;
    for (int64_t d : *x)
      if (d != 1)
        out.push_back(d);
    types.push_back(RankedTensorType::get(out, elt));
    return success();
  }
  if (!axes) {
    std::optional<int64_t> len = vectorLength(adaptor.getAxes().getType());
    if (len && *len <= rank)
      types.push_back(RankedTensorType::get(Dims(rank - *len, kDynamic), elt));
    else
      types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  SmallVector<bool> drop(rank, false);
  for (int64_t a : *axes) {
    auto axis = normalizeAxis(a, rank);
    if (!axis)
      return fail(loc, "axis " + Twine(a) + " is out of range for rank " +
                           Twine(rank));
    if (drop[*axis])
      return fail(loc, "axis " + Twine(a) + " is repeated");
    if (!ShapedType::isDynamic((*x)[*axis]) && (*x)[*axis] != 1)
      return fail(loc, "cannot squeeze dimension " + Twine(*axis) +
                           " of size " + Twine((*x)[*axis]));
    drop[*axis] = true;
  }
  Dims out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i])
      out.push_back((*x)[i]);
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getInput());
  Shape x = shapeOf(adaptor.getInput());
  std::optional<Dims> axes = getConstantInts(adaptor.getAxes());
  std::optional<int64_t> len = vectorLength(adaptor.getAxes().getType());
  if (!x || (!axes && !len)) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  auto outRank = static_cast<int64_t>(x->size()) +
                 (axes ? static_cast<int64_t>(axes->size()) : *len);
  if (!axes) {
    types.push_back(RankedTensorType::get(Dims(outRank, kDynamic), elt));
    return success();
  }
  SmallVector<bool> inserted(outRank, false);
  for (int64_t a : *axes) {
    auto axis = normalizeAxis(a, outRank);
    if (!axis)
      return fail(loc, "axis " + Twine(a) +
                           " is out of range for result rank " +
                           Twine(outRank));
    if (inserted[*axis])
      return fail(loc, "axis " + Twine(a) + " is repeated");
    inserted[*axis] = true;
  }
  Dims out;
  size_t next = 0;
  for (int64_t i = 0; i < outRank; ++i)
    out.push_back(inserted[i] ? 1 : (*x)[next++]);
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (adaptor.getInputs().empty())
    return fail(loc, "needs at least one operand");
  Type elt = eltOf(adaptor.getInputs().front());
  Shape result;
  int64_t axisAttr = static_cast<int64_t>(adaptor.getAxis());
  int64_t axis = -1;
  for (Value v : adaptor.getInputs()) {
    Shape s = shapeOf(v);
    if (!s)
      continue;
    auto rank = static_cast<int64_t>(s->size());
    if (!result) {
      auto a = normalizeAxis(axisAttr, rank);
      if (!a)
        return fail(loc, "'axis' " + Twine(axisAttr) +
                             " is out of range for rank " + Twine(rank));
      axis = *a;
      result = *s;
      continue;
    }
    if (s->size() != result->size())
      return fail(loc, "operands have different ranks " +
                           dimsToString(*result) + " and " + dimsToString(*s));
    for (int64_t i = 0; i < rank; ++i) {
      if (i == axis)
        continue;
      if (!compatibleDims((*result)[i], (*s)[i]))
        return fail(loc, "operand shapes " + dimsToString(*result) + " and " +
                             dimsToString(*s) + " differ outside axis " +
                             Twine(axis));
      if (ShapedType::isDynamic((*result)[i]))
        (*result)[i] = (*s)[i];
    }
  }
  if (!result) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  int64_t total = 0;
  for (Value v : adaptor.getInputs()) {
    Shape s = shapeOf(v);
    total = s ? addDims(total, (*s)[axis]) : kDynamic;
  }
  (*result)[axis] = total;
  types.push_back(RankedTensorType::get(*result, elt));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getInput());
  auto n = static_cast<int64_t>(adaptor.getNumOutputs());
  if (n < 1)
    return fail(loc, "'num_outputs' must be positive, got " + Twine(n));
  Shape x = shapeOf(adaptor.getInput());
  if (!x) {
    types.append(n, UnrankedTensorType::get(elt));
    return success();
  }
  auto axisAttr = static_cast<int64_t>(adaptor.getAxis());
  auto axis = normalizeAxis(axisAttr, static_cast<int64_t>(x->size()));
  if (!axis)
    return fail(loc, "'axis' " + Twine(axisAttr) +
                         " is out of range for rank " + Twine(x->size()));
  int64_t dim = (*x)[*axis];
  Dims sizes;
  if (Value split = adaptor.getSplit()) {
    std::optional<Dims> s = getConstantInts(split);
    if (s) {
      if (static_cast<int64_t>(s->size()) != n)
        return fail(loc, "'split' has " + Twine(s->size()) + " sizes for " +
                             Twine(n) + " outputs");
      int64_t sum = 0;
      for (int64_t v : *s) {
        if (v < 0)
          return fail(loc, "'split' has a negative size " + Twine(v));
        sum += v;
      }
      if (!ShapedType::isDynamic(dim) && sum != dim)
        return fail(loc, "'split' sizes add up to " + Twine(sum) +
                             ", dimension " + Twine(*axis) + " has size " +
                             Twine(dim));
      sizes = *s;
    } else {
      // Sizes known only at run time; but sizes are not negative, so an
      // empty dimension splits into empty parts.
      sizes.assign(n, dim == 0 ? 0 : kDynamic);
    }
  } else if (ShapedType::isDynamic(dim)) {
    sizes.assign(n, kDynamic);
  } else {
    int64_t chunk = (dim + n - 1) / n;
    if (chunk * (n - 1) >= dim && n > 1)
      return fail(loc, "cannot split dimension of size " + Twine(dim) +
                           " into " + Twine(n) + " non-empty parts");
    sizes.assign(n, chunk);
    sizes.back() = dim - chunk * (n - 1);
  }
  for (int64_t s : sizes) {
    Dims out = *x;
    out[*axis] = s;
    types.push_back(RankedTensorType::get(out, elt));
  }
  return success();
}

/// Number of elements of `dim`[start:end:step] with ONNX Slice clamping.
static int64_t sliceLength(int64_t dim, int64_t start, int64_t end,
                           int64_t step) {
  if (start < 0)
    start = start < -dim ? 0 : start + dim;
  if (end < 0)
    end = end < -dim ? -1 : end + dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  return start > end ? (start - end + (-step) - 1) / (-step) : 0;
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getInput());
  Shape x = shapeOf(adaptor.getInput());
  if (!x) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  auto rank = static_cast<int64_t>(x->size());
  std::optional<Dims> starts = getConstantInts(adaptor.getStarts());
  std::optional<Dims> ends = getConstantInts(adaptor.getEnds());
  std::optional<Dims> axes;
  if (adaptor.getAxes())
    axes = getConstantInts(adaptor.getAxes());
  std::optional<Dims> steps;
  if (adaptor.getSteps())
    steps = getConstantInts(adaptor.getSteps());
  std::optional<int64_t> count =
      starts ? std::optional<int64_t>(starts->size())
             : vectorLength(adaptor.getStarts().getType());
  if (!adaptor.getAxes() && count) {
    axes = Dims();
    for (int64_t i = 0; i < *count; ++i)
      axes->push_back(i);
  }
  Dims out = *x;
  if (!axes) {
    // Unknown axes: any dimension may change.
    types.push_back(RankedTensorType::get(Dims(rank, kDynamic), elt));
    return success();
  }
  SmallVector<bool> seen(rank, false);
  Dims normAxes;
  for (int64_t a : *axes) {
    auto axis = normalizeAxis(a, rank);
    if (!axis)
      return fail(loc, "axis " + Twine(a) + " is out of range for rank " +
                           Twine(rank));
    if (seen[*axis])
      return fail(loc, "axis " + Twine(a) + " is repeated");
    seen[*axis] = true;
    normAxes.push_back(*axis);
  }
  size_t n = normAxes.size();
  if ((starts && starts->size() != n) || (ends && ends->size() != n) ||
      (steps && steps->size() != n))
    return fail(loc, "starts, ends, axes and steps must have the same length");
  bool stepsKnown = !adaptor.getSteps() || steps;
  for (size_t i = 0; i < n; ++i) {
    int64_t step = steps ? (*steps)[i] : 1;
    if (stepsKnown && step == 0)
      return fail(loc, "slice step must not be zero");
    int64_t dim = (*x)[normAxes[i]];
    if (!starts || !ends || !stepsKnown || ShapedType::isDynamic(dim)) {
      out[normAxes[i]] = kDynamic;
      continue;
    }
    out[normAxes[i]] = sliceLength(dim, (*starts)[i], (*ends)[i], step);
  }
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getData());
  Shape data = shapeOf(adaptor.getData());
  Shape indices = shapeOf(adaptor.getIndices());
  if (!data || !indices) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  auto axisAttr = static_cast<int64_t>(adaptor.getAxis());
  auto axis = normalizeAxis(axisAttr, static_cast<int64_t>(data->size()));
  if (!axis)
    return fail(loc, "'axis' " + Twine(axisAttr) +
                         " is out of range for rank " + Twine(data->size()));
  int64_t dim = (*data)[*axis];
  if (!ShapedType::isDynamic(dim))
    if (std::optional<Dims> idx = getConstantInts(adaptor.getIndices()))
      for (int64_t i : *idx)
        if (i < -dim || i >= dim)
          return fail(loc, "index " + Twine(i) + " is out of range for axis " +
                               Twine(*axis) + " of size " + Twine(dim));
  Dims out(data->begin(), data->begin() + *axis);
  out.append(indices->begin(), indices->end());
  out.append(data->begin() + *axis + 1, data->end());
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

template <typename AdaptorT>
static LogicalResult checkElementsAxis(std::optional<Location> loc,
                                       AdaptorT adaptor) {
  Shape data = shapeOf(adaptor.getData());
  Shape indices = shapeOf(adaptor.getIndices());
  if (data && indices && data->size() != indices->size())
    return fail(loc, "data and indices must have the same rank, got " +
                         dimsToString(*data) + " and " +
                         dimsToString(*indices));
  if (data && !normalizeAxis(static_cast<int64_t>(adaptor.getAxis()),
                             static_cast<int64_t>(data->size())))
    return fail(loc, "'axis' " +
                         Twine(static_cast<int64_t>(adaptor.getAxis())) +
                         " is out of range for rank " + Twine(data->size()));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (failed(checkElementsAxis(loc, adaptor)))
    return failure();
  types.push_back(
      makeTensor(shapeOf(adaptor.getIndices()), eltOf(adaptor.getData())));
  return success();
}

LogicalResult
ScatterElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (failed(checkElementsAxis(loc, adaptor)))
    return failure();
  if (eltOf(adaptor.getUpdates()) != eltOf(adaptor.getData()))
    return fail(loc, "updates and data must have the same element type");
  Shape idx = shapeOf(adaptor.getIndices()),
        upd = shapeOf(adaptor.getUpdates());
  if (idx && upd &&
      (idx->size() != upd->size() ||
       !llvm::all_of(llvm::zip(*idx, *upd), [](auto p) {
         return compatibleDims(std::get<0>(p), std::get<1>(p));
       })))
    return fail(loc, "updates shape " + dimsToString(*upd) +
                         " differs from indices shape " + dimsToString(*idx));
  StringRef red = adaptor.getReduction();
  if (red != "none" && red != "add" && red != "mul" && red != "max" &&
      red != "min")
    return fail(loc, "unknown reduction '" + red + "'");
  types.push_back(adaptor.getData().getType());
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (eltOf(adaptor.getUpdates()) != eltOf(adaptor.getData()))
    return fail(loc, "updates and data must have the same element type");
  Shape data = shapeOf(adaptor.getData()), idx = shapeOf(adaptor.getIndices()),
        upd = shapeOf(adaptor.getUpdates());
  if (idx && idx->empty())
    return fail(loc, "indices must have rank 1 or more");
  // The tuples' length k, when known: at most data's rank, and updates'
  // shape indices.shape[:-1] + data.shape[k:].
  if (idx && data && !ShapedType::isDynamic(idx->back())) {
    int64_t k = idx->back(), r = static_cast<int64_t>(data->size());
    if (k < 1 || k > r)
      return fail(loc, "index tuples of length " + std::to_string(k) +
                           " into data of rank " + std::to_string(r) +
                           " (1 to " + std::to_string(r) + " allowed)");
    Dims want(idx->begin(), idx->end() - 1);
    want.append(data->begin() + k, data->end());
    if (upd && (upd->size() != want.size() ||
                !llvm::all_of(llvm::zip(*upd, want), [](auto p) {
                  return compatibleDims(std::get<0>(p), std::get<1>(p));
                })))
      return fail(loc, "updates shape " + dimsToString(*upd) +
                           " differs from indices.shape[:-1] + "
                           "data.shape[k:] = " +
                           dimsToString(want));
  }
  StringRef red = adaptor.getReduction();
  if (red != "none" && red != "add" && red != "mul" && red != "max" &&
      red != "min")
    return fail(loc, "unknown reduction '" + red + "'");
  types.push_back(adaptor.getData().getType());
  return success();
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  if (failed(checkVector(loc, adaptor.getShape(), "shape")))
    return failure();
  Type elt = eltOf(adaptor.getInput());
  auto traced = traceShapeValue(adaptor.getShape());
  if (!traced) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  Dims target;
  for (const DimValue &d : *traced)
    target.push_back(d.value);
  Shape out;
  if (failed(broadcastShapes(loc, shapeOf(adaptor.getInput()), target, out)))
    return failure();
  // An unknown target entry may still be 1 against a static input dim > 1,
  // which broadcasting resolved to the input's size: that is correct.
  types.push_back(makeTensor(out, elt));
  return success();
}

LogicalResult TileOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getInput());
  Shape x = shapeOf(adaptor.getInput());
  if (!x) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  std::optional<int64_t> len = vectorLength(adaptor.getRepeats().getType());
  if (len && *len != static_cast<int64_t>(x->size()))
    return fail(loc, "'repeats' has " + Twine(*len) +
                         " entries for an input of rank " + Twine(x->size()));
  auto traced = traceShapeValue(adaptor.getRepeats());
  Dims out = *x;
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t r = traced && i < traced->size() ? (*traced)[i].value : kDynamic;
    if (!ShapedType::isDynamic(r) && r < 0)
      return fail(loc, "'repeats' has a negative entry " + Twine(r));
    out[i] = mulDims(out[i], r);
  }
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getInput());
  Shape x = shapeOf(adaptor.getInput());
  StringRef mode = adaptor.getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return fail(loc, "unknown pad mode '" + mode + "'");
  if (Value v = adaptor.getConstantValue())
    if (eltOf(v) != elt)
      return fail(loc, "constant value element type differs from the input's");
  if (!x) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  auto rank = static_cast<int64_t>(x->size());
  Dims axes;
  if (adaptor.getAxes()) {
    std::optional<Dims> a = getConstantInts(adaptor.getAxes());
    if (!a) {
      types.push_back(RankedTensorType::get(Dims(rank, kDynamic), elt));
      return success();
    }
    for (int64_t ax : *a) {
      auto n = normalizeAxis(ax, rank);
      if (!n)
        return fail(loc, "axis " + Twine(ax) + " is out of range for rank " +
                             Twine(rank));
      axes.push_back(*n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  std::optional<int64_t> len = vectorLength(adaptor.getPads().getType());
  if (len && *len != 2 * static_cast<int64_t>(axes.size()))
    return fail(loc, "'pads' has " + Twine(*len) + " entries, expected " +
                         Twine(2 * axes.size()));
  std::optional<Dims> pads = getConstantInts(adaptor.getPads());
  Dims out = *x;
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (!pads) {
      out[axis] = kDynamic;
      continue;
    }
    int64_t total = (*pads)[i] + (*pads)[i + axes.size()];
    out[axis] = addDims(out[axis], total);
    if (!ShapedType::isDynamic(out[axis]) && out[axis] < 0)
      return fail(loc, "padding makes dimension " + Twine(axis) + " negative");
  }
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *ctx,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type i64 = IntegerType::get(ctx, 64);
  Shape x = shapeOf(adaptor.getInput());
  if (!x) {
    types.push_back(RankedTensorType::get({kDynamic}, i64));
    return success();
  }
  auto rank = static_cast<int64_t>(x->size());
  auto clampIdx = [&](int64_t i) {
    if (i < 0)
      i += rank;
    return std::clamp<int64_t>(i, 0, rank);
  };
  int64_t start = clampIdx(static_cast<int64_t>(adaptor.getStart()));
  int64_t end = adaptor.getEnd()
                    ? clampIdx(static_cast<int64_t>(*adaptor.getEnd()))
                    : rank;
  types.push_back(
      RankedTensorType::get({std::max<int64_t>(end - start, 0)}, i64));
  return success();
}

LogicalResult SizeOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  types.push_back(RankedTensorType::get({}, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult RangeOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getStart());
  for (Value v : {adaptor.getStart(), adaptor.getLimit(), adaptor.getDelta()}) {
    if (eltOf(v) != elt)
      return fail(loc,
                  "start, limit and delta must have the same element type");
    if (auto r = dyn_cast<RankedTensorType>(v.getType()))
      if (r.hasStaticShape() && r.getNumElements() != 1)
        return fail(loc, "start, limit and delta must be scalars");
  }
  auto s = getConstantDoubles(adaptor.getStart());
  auto l = getConstantDoubles(adaptor.getLimit());
  auto d = getConstantDoubles(adaptor.getDelta());
  int64_t n = kDynamic;
  if (d && !d->empty() && (*d)[0] == 0.0)
    return fail(loc, "'delta' must not be zero");
  if (s && l && d && !s->empty() && !l->empty() && !d->empty()) {
    if (isa<IntegerType>(elt)) {
      auto si = static_cast<int64_t>((*s)[0]),
           li = static_cast<int64_t>((*l)[0]),
           di = static_cast<int64_t>((*d)[0]);
      n = static_cast<int64_t>(
          std::ceil(static_cast<double>(li - si) / static_cast<double>(di)));
    } else {
      n = static_cast<int64_t>(std::ceil(((*l)[0] - (*s)[0]) / (*d)[0]));
    }
    n = std::max<int64_t>(n, 0);
  }
  types.push_back(RankedTensorType::get({n}, elt));
  return success();
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getInput());
  Type i64 = IntegerType::get(ctx, 64);
  Shape x = shapeOf(adaptor.getInput());
  if (!x) {
    types.push_back(UnrankedTensorType::get(elt));
    types.push_back(UnrankedTensorType::get(i64));
    return success();
  }
  auto axisAttr = static_cast<int64_t>(adaptor.getAxis());
  auto axis = normalizeAxis(axisAttr, static_cast<int64_t>(x->size()));
  if (!axis)
    return fail(loc, "'axis' " + Twine(axisAttr) +
                         " is out of range for rank " + Twine(x->size()));
  Dims out = *x;
  int64_t k = kDynamic;
  if (std::optional<Dims> kv = getConstantInts(adaptor.getK())) {
    if (kv->size() != 1)
      return fail(loc, "'k' must hold one value");
    k = (*kv)[0];
    if (k < 0)
      return fail(loc, "'k' must be non-negative, got " + Twine(k));
    if (!ShapedType::isDynamic(out[*axis]) && k > out[*axis])
      return fail(loc, "'k' " + Twine(k) + " exceeds the axis size " +
                           Twine(out[*axis]));
  }
  out[*axis] = k;
  types.push_back(RankedTensorType::get(out, elt));
  types.push_back(RankedTensorType::get(out, i64));
  return success();
}

LogicalResult CumSumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Shape x = shapeOf(adaptor.getInput());
  if (std::optional<Dims> axis = getConstantInts(adaptor.getAxis())) {
    if (axis->size() != 1)
      return fail(loc, "'axis' must be a scalar");
    if (x && !normalizeAxis((*axis)[0], static_cast<int64_t>(x->size())))
      return fail(loc, "'axis' " + Twine((*axis)[0]) +
                           " is out of range for rank " + Twine(x->size()));
  }
  return sameAsOperand(adaptor.getInput(), types);
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type elt = eltOf(adaptor.getValues());
  if (auto v = dyn_cast<RankedTensorType>(adaptor.getValues().getType()))
    if (v.hasStaticShape() && v.getNumElements() != 2)
      return fail(loc, "'values' must hold exactly two elements");
  Shape x = shapeOf(adaptor.getIndices());
  if (!x) {
    types.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  int64_t depth = kDynamic;
  if (auto d = getConstantDoubles(adaptor.getDepth())) {
    if (d->size() != 1)
      return fail(loc, "'depth' must be a scalar");
    depth = static_cast<int64_t>((*d)[0]);
    if (depth < 1)
      return fail(loc, "'depth' must be positive, got " + Twine(depth));
  }
  auto outRank = static_cast<int64_t>(x->size()) + 1;
  auto axisAttr = static_cast<int64_t>(adaptor.getAxis());
  auto axis = normalizeAxis(axisAttr, outRank);
  if (!axis)
    return fail(loc, "'axis' " + Twine(axisAttr) +
                         " is out of range for rank " + Twine(outRank));
  Dims out = *x;
  out.insert(out.begin() + *axis, depth);
  types.push_back(RankedTensorType::get(out, elt));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

static LogicalResult inferLoss(std::optional<Location> loc, Value scores,
                               Value labels, Value weights, StringRef reduction,
                               Type &out) {
  Type elt = eltOf(scores);
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return fail(loc, "unknown reduction '" + reduction + "'");
  Shape s = shapeOf(scores), l = shapeOf(labels);
  if (s && s->size() < 2)
    return fail(loc,
                "scores must be N x C x ..., got shape " + dimsToString(*s));
  if (s && l) {
    if (l->size() + 1 != s->size())
      return fail(loc, "labels shape " + dimsToString(*l) +
                           " does not match scores shape " + dimsToString(*s));
    for (size_t i = 0; i < l->size(); ++i) {
      int64_t sd = (*s)[i == 0 ? 0 : i + 1];
      if (!compatibleDims((*l)[i], sd))
        return fail(loc, "labels shape " + dimsToString(*l) +
                             " does not match scores shape " +
                             dimsToString(*s));
    }
  }
  if (Shape w = shapeOf(weights))
    if (w->size() != 1 || (s && !compatibleDims((*w)[0], (*s)[1])))
      return fail(loc, "weights must be 1-D of size C");
  if (reduction != "none") {
    out = RankedTensorType::get({}, elt);
    return success();
  }
  out = makeTensor(l, elt);
  return success();
}

LogicalResult SoftmaxCrossEntropyLossOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type out;
  if (failed(inferLoss(loc, adaptor.getScores(), adaptor.getLabels(),
                       adaptor.getWeights(), adaptor.getReduction(), out)))
    return failure();
  types.push_back(out);
  types.push_back(adaptor.getScores().getType());
  return success();
}

LogicalResult NegativeLogLikelihoodLossOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(verifyAttrs(adaptor, loc)))
    return failure();
  Type out;
  if (failed(inferLoss(loc, adaptor.getInput(), adaptor.getTarget(),
                       adaptor.getWeight(), adaptor.getReduction(), out)))
    return failure();
  types.push_back(out);
  return success();
}
