//===- LowerShape.cpp - reshape family, transpose, concat, split, slice ---===//
// SPDX-License-Identifier: Apache-2.0
//
// Data-movement ops that only change how elements are arranged: the reshape
// family (Reshape, Flatten, Squeeze, Unsqueeze) becomes tensor
// expand/collapse, Transpose becomes linalg.transpose, Concat/Split/Slice
// become insert/extract slices (a generic for negative steps), Shape and
// Size read tensor dims.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <limits>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::codegen;

namespace {

Value numElements(OpBuilder &b, Location loc, Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  Value n = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t i = 0; i < t.getRank(); ++i)
    n = arith::MulIOp::create(b, loc, n, dimValue(b, loc, v, i));
  return n;
}

/// Result sizes of a reshape when at most one result dim is dynamic: the
/// dynamic one is the element count divided by the static ones.
std::optional<SmallVector<OpFoldResult>>
sizesByElementCount(OpBuilder &b, Location loc, Value input,
                    RankedTensorType resultType) {
  SmallVector<OpFoldResult> sizes;
  int64_t staticProduct = 1, numDynamic = 0;
  for (int64_t d : resultType.getShape()) {
    if (ShapedType::isDynamic(d))
      ++numDynamic;
    else
      staticProduct *= d;
  }
  if (numDynamic > 1)
    return std::nullopt;
  for (int64_t d : resultType.getShape()) {
    if (!ShapedType::isDynamic(d)) {
      sizes.push_back(b.getIndexAttr(d));
      continue;
    }
    Value n = numElements(b, loc, input);
    Value q = arith::DivUIOp::create(
        b, loc, n,
        arith::ConstantIndexOp::create(b, loc, std::max<int64_t>(1, staticProduct)));
    sizes.push_back(q);
  }
  return sizes;
}

template <typename OpTy>
struct ReshapeLikeLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  /// Sizes for results with several dynamic dims, op by op.
  /// `operands` are the converted operands (Reshape reads its shape).
  FailureOr<SmallVector<OpFoldResult>>
  dynamicSizes(OpTy op, ValueRange operands, Value input,
               RankedTensorType resultType, OpBuilder &b) const;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op->getResult(0).getType()));
    Value input = adaptor.getInput();
    SmallVector<OpFoldResult> sizes;
    if constexpr (std::is_same_v<OpTy, dist::SqueezeOp> ||
                  std::is_same_v<OpTy, dist::UnsqueezeOp>)
      if (op.getAxes() && !constInts(op.getAxes())) {
        FailureOr<SmallVector<OpFoldResult>> s =
            runTimeAxes(op, adaptor, input, resultType, rewriter);
        if (failed(s))
          return failure();
        rewriter.replaceOp(op,
                           reshapeTo(rewriter, loc, input, resultType, *s));
        return success();
      }
    if (auto s = sizesByElementCount(rewriter, loc, input, resultType)) {
      sizes = *s;
    } else {
      auto s2 = dynamicSizes(op, adaptor.getOperands(), input, resultType,
                             rewriter);
      if (failed(s2))
        return notSupported(op, "this reshape with several dynamic dimensions");
      sizes = *s2;
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, input, resultType, sizes));
    return success();
  }

  /// Squeeze/Unsqueeze with axes fed at run time: the data stays as it is;
  /// the axes must give the result's static extents (the shape the model
  /// declares), and give its others as the program runs.
  template <typename SqueezeLike>
  FailureOr<SmallVector<OpFoldResult>>
  runTimeAxes(SqueezeLike op, typename SqueezeLike::Adaptor adaptor,
              Value input, RankedTensorType resultType, OpBuilder &b) const {
    Location loc = op.getLoc();
    Value axes = op.getAxes();
    auto axesType = cast<RankedTensorType>(axes.getType());
    auto inType = cast<RankedTensorType>(input.getType());
    if (axesType.getRank() != 1 || axesType.isDynamicDim(0))
      return notSupported(op, "a run-time number of axes");
    constexpr bool unsqueeze = std::is_same_v<SqueezeLike, dist::UnsqueezeOp>;
    // Unsqueeze inserts the axes into the result, Squeeze removes them
    // from the input: the dims left must be the other side's, in order.
    RankedTensorType full = unsqueeze ? resultType : inType;
    RankedTensorType kept = unsqueeze ? inType : resultType;
    auto same = [](int64_t x, int64_t y) {
      return ShapedType::isDynamic(x) || ShapedType::isDynamic(y) || x == y;
    };
    SmallVector<uint64_t> valid = axisSubsets(
        full.getRank(), axesType.getDimSize(0), [&](uint64_t m) {
          int64_t next = 0;
          for (int64_t d = 0; d < full.getRank(); ++d) {
            if (m >> d & 1) {
              if (!same(full.getDimSize(d), 1))
                return false;
            } else if (next >= kept.getRank() ||
                       !same(full.getDimSize(d), kept.getDimSize(next++))) {
              return false;
            }
          }
          return next == kept.getRank();
        });
    if (valid.empty())
      return notSupported(op, "axes fed at run time, whose count cannot give "
                              "the declared output shape,");
    Value mask = checkAxesOperand(b, loc, op, 1, adaptor.getAxes(),
                                  full.getRank(), valid);
    Type i64 = b.getI64Type();
    auto cst = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, i64, v);
    };
    auto bit = [&](int64_t d) -> Value {
      return arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne,
          arith::AndIOp::create(b, loc, mask, cst(int64_t(1) << d)), cst(0));
    };
    // Axes of `full` below d that the mask names.
    auto below = [&](int64_t d) -> Value {
      return math::CtPopOp::create(
          b, loc,
          arith::AndIOp::create(b, loc, mask, cst((int64_t(1) << d) - 1)));
    };
    if (!unsqueeze) {
      // A squeezed axis of unknown extent must be 1 as the program runs.
      Value bad = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
      for (int64_t j = 0; j < inType.getRank(); ++j)
        if (inType.isDynamicDim(j))
          bad = arith::OrIOp::create(
              b, loc, bad,
              arith::AndIOp::create(
                  b, loc, bit(j),
                  arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                        dimValue(b, loc, input, j),
                                        arith::ConstantIndexOp::create(
                                            b, loc, 1))));
      reportInputErrorIf(b, loc, op, 1, bad,
                         "names an axis whose extent is not 1");
    }
    SmallVector<OpFoldResult> sizes;
    for (int64_t d = 0; d < resultType.getRank(); ++d) {
      if (!resultType.isDynamicDim(d)) {
        sizes.push_back(b.getIndexAttr(resultType.getDimSize(d)));
        continue;
      }
      Value size = arith::ConstantIndexOp::create(b, loc, 1);
      if (unsqueeze) {
        // Not an inserted axis: input dim d - (inserted axes below d).
        Value j = arith::SubIOp::create(b, loc, cst(d), below(d));
        Value pick = size;
        for (int64_t k = 0; k < inType.getRank(); ++k)
          pick = arith::SelectOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, j,
                                    cst(k)),
              dimValue(b, loc, input, k), pick);
        size = arith::SelectOp::create(b, loc, bit(d), size, pick);
      } else {
        // The input dim j that is not squeezed and has d kept dims below.
        for (int64_t j = inType.getRank() - 1; j >= 0; --j) {
          Value at = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::eq,
              arith::SubIOp::create(b, loc, cst(j), below(j)), cst(d));
          Value keptHere = arith::AndIOp::create(
              b, loc, at,
              arith::XOrIOp::create(
                  b, loc, bit(j),
                  arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
          size = arith::SelectOp::create(b, loc, keptHere,
                                         dimValue(b, loc, input, j), size);
        }
      }
      sizes.push_back(size);
    }
    return sizes;
  }
};

template <>
FailureOr<SmallVector<OpFoldResult>>
ReshapeLikeLowering<dist::ReshapeOp>::dynamicSizes(
    dist::ReshapeOp op, ValueRange operands, Value input, RankedTensorType resultType,
    OpBuilder &b) const {
  // Read the target shape at run time: 0 copies the input dim (unless
  // allowzero), -1 takes the remaining element count.
  Location loc = op.getLoc();
  Value shape = op.getShape();
  auto shapeType = cast<RankedTensorType>(shape.getType());
  if (!shapeType.hasStaticShape())
    return failure();
  auto inType = cast<RankedTensorType>(input.getType());
  int64_t rank = resultType.getRank();
  // The shape operand is i64, which the type conversion leaves unchanged.
  Value shapeV = operands[1];
  SmallVector<Value> raw;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value minusOne = arith::ConstantIndexOp::create(b, loc, -1);
  for (int64_t i = 0; i < rank; ++i) {
    if (!ShapedType::isDynamic(resultType.getDimSize(i))) {
      raw.push_back(arith::ConstantIndexOp::create(b, loc,
                                                   resultType.getDimSize(i)));
      continue;
    }
    Value idx = arith::ConstantIndexOp::create(b, loc, i);
    Value v = toIndex(b, loc, tensor::ExtractOp::create(b, loc, shapeV, idx));
    if (!op.getAllowzero() && i < inType.getRank()) {
      Value isZero =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, v, zero);
      v = arith::SelectOp::create(b, loc, isZero, dimValue(b, loc, input, i),
                                  v);
    }
    raw.push_back(v);
  }
  Value known = arith::ConstantIndexOp::create(b, loc, 1);
  for (Value v : raw) {
    Value isInfer =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, v, minusOne);
    Value f = arith::SelectOp::create(
        b, loc, isInfer, arith::ConstantIndexOp::create(b, loc, 1), v);
    known = arith::MulIOp::create(b, loc, known, f);
  }
  Value n = numElements(b, loc, input);
  Value inferred = arith::DivUIOp::create(b, loc, n, known);
  SmallVector<OpFoldResult> sizes;
  for (Value v : raw) {
    Value isInfer =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, v, minusOne);
    sizes.push_back(
        Value(arith::SelectOp::create(b, loc, isInfer, inferred, v)));
  }
  return sizes;
}

template <>
FailureOr<SmallVector<OpFoldResult>>
ReshapeLikeLowering<dist::FlattenOp>::dynamicSizes(
    dist::FlattenOp op, ValueRange, Value input, RankedTensorType resultType,
    OpBuilder &b) const {
  Location loc = op.getLoc();
  auto inType = cast<RankedTensorType>(input.getType());
  int64_t axis = op.getAxis();
  if (axis < 0)
    axis += inType.getRank();
  Value outer = arith::ConstantIndexOp::create(b, loc, 1);
  Value inner = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t i = 0; i < inType.getRank(); ++i) {
    Value d = dimValue(b, loc, input, i);
    if (i < axis)
      outer = arith::MulIOp::create(b, loc, outer, d);
    else
      inner = arith::MulIOp::create(b, loc, inner, d);
  }
  return SmallVector<OpFoldResult>{outer, inner};
}

/// Squeeze/Unsqueeze: result dims that are not size-1 come from input dims
/// that are not size-1, in order.
FailureOr<SmallVector<OpFoldResult>>
sizesByNonUnitDims(Location loc, Value input, RankedTensorType resultType,
                   OpBuilder &b) {
  auto inType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> srcDims;
  for (int64_t i = 0; i < inType.getRank(); ++i)
    if (inType.getDimSize(i) != 1)
      srcDims.push_back(i);
  SmallVector<OpFoldResult> sizes;
  size_t next = 0;
  for (int64_t d : resultType.getShape()) {
    if (d == 1) {
      sizes.push_back(b.getIndexAttr(1));
      continue;
    }
    if (next >= srcDims.size())
      return failure();
    sizes.push_back(tensor::getMixedSize(b, loc, input, srcDims[next++]));
  }
  return sizes;
}

template <>
FailureOr<SmallVector<OpFoldResult>>
ReshapeLikeLowering<dist::SqueezeOp>::dynamicSizes(
    dist::SqueezeOp op, ValueRange, Value input, RankedTensorType resultType,
    OpBuilder &b) const {
  return sizesByNonUnitDims(op.getLoc(), input, resultType, b);
}

template <>
FailureOr<SmallVector<OpFoldResult>>
ReshapeLikeLowering<dist::UnsqueezeOp>::dynamicSizes(
    dist::UnsqueezeOp op, ValueRange, Value input, RankedTensorType resultType,
    OpBuilder &b) const {
  return sizesByNonUnitDims(op.getLoc(), input, resultType, b);
}

struct TransposeLowering : OpConversionPattern<dist::TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    Dims perm = transposePermutation(op.getPerm(), inType.getRank());
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    SmallVector<OpFoldResult> inSizes = sizesOf(rewriter, loc, input);
    SmallVector<OpFoldResult> sizes;
    for (int64_t p : perm)
      sizes.push_back(inSizes[p]);
    Value init = emptyTensor(rewriter, loc, resultType, sizes);
    auto t = linalg::TransposeOp::create(rewriter, loc, input, init, perm);
    rewriter.replaceOp(op, t.getResult());
    return success();
  }
};

struct ConcatLowering : OpConversionPattern<dist::ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    int64_t rank = resultType.getRank();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (axis < 0)
      axis += rank;
    SmallVector<Value> inputs(adaptor.getInputs());
    // Sizes: the first input's, with the concatenated axis summed.
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, inputs.front());
    Value total = arith::ConstantIndexOp::create(rewriter, loc, 0);
    for (Value in : inputs)
      total = arith::AddIOp::create(rewriter, loc, total,
                                    dimValue(rewriter, loc, in, axis));
    sizes[axis] = total;
    for (int64_t i = 0; i < rank; ++i)
      if (!resultType.isDynamicDim(i))
        sizes[i] = rewriter.getIndexAttr(resultType.getDimSize(i));
    Value acc = emptyTensor(rewriter, loc, resultType, sizes);
    Value offset = arith::ConstantIndexOp::create(rewriter, loc, 0);
    for (Value in : inputs) {
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      offsets[axis] = offset;
      SmallVector<OpFoldResult> inSizes = sizesOf(rewriter, loc, in);
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      acc = tensor::InsertSliceOp::create(rewriter, loc, in, acc, offsets,
                                          inSizes, strides);
      offset = arith::AddIOp::create(rewriter, loc, offset,
                                     dimValue(rewriter, loc, in, axis));
    }
    rewriter.replaceOp(op, acc);
    return success();
  }
};

struct SplitLowering : OpConversionPattern<dist::SplitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::SplitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    int64_t rank = inType.getRank();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (axis < 0)
      axis += rank;
    SmallVector<Value> results;
    SmallVector<int64_t> partSizes;
    int64_t offset = 0;
    for (Value r : op.getOutputs())
      if (cast<RankedTensorType>(r.getType()).isDynamicDim(axis))
        return lowerRunTimeSizes(op, adaptor, axis, rewriter);
    for (Value r : op.getOutputs()) {
      auto rt = cast<RankedTensorType>(
          getTypeConverter()->convertType(r.getType()));
      partSizes.push_back(rt.getDimSize(axis));
      if (rt.getDimSize(axis) == 0) {
        // An empty part (tensor.extract_slice rejects an offset at the end
        // of the dimension, even for no elements).
        SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, input);
        sizes[axis] = rewriter.getIndexAttr(0);
        results.push_back(tensor::EmptyOp::create(rewriter, loc, sizes,
                                                  rt.getElementType()));
        continue;
      }
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      offsets[axis] = rewriter.getIndexAttr(offset);
      SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, input);
      sizes[axis] = rewriter.getIndexAttr(rt.getDimSize(axis));
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      Value s = tensor::ExtractSliceOp::create(rewriter, loc, rt, input,
                                               offsets, sizes, strides);
      results.push_back(s);
      offset += rt.getDimSize(axis);
    }
    // Sizes fed at run time must be the parts' declared sizes.
    if (Value sizes = op.getSplit(); sizes && !constInts(sizes)) {
      auto st = cast<RankedTensorType>(sizes.getType());
      if (st.getRank() != 1 || st.getDimSize(0) !=
                                   static_cast<int64_t>(partSizes.size()))
        return notSupported(op, "split sizes whose count is not the number "
                                "of outputs");
      checkOperandValues(rewriter, loc, op, 1, adaptor.getSplit(), partSizes);
    }
    rewriter.replaceOp(op, results);
    return success();
  }

  /// Parts whose extents are known only as the program runs: sizes fed at
  /// run time, or equal parts of a dimension of unknown size. Sizes that
  /// do not sum to the dimension (or are negative) fail the run; the parts
  /// are clamped so that nothing outside the input is read.
  LogicalResult lowerRunTimeSizes(dist::SplitOp op, OpAdaptor adaptor,
                                  int64_t axis,
                                  ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
    int64_t parts = op.getNumResults();
    Value dim = dimValue(rewriter, loc, input, axis);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    SmallVector<Value> sizeOf;
    if (Value sizes = adaptor.getSplit()) {
      auto st = cast<RankedTensorType>(sizes.getType());
      if (st.getRank() != 1 || st.getDimSize(0) != parts)
        return notSupported(op, "split sizes whose count is not the number "
                                "of outputs");
      for (int64_t i = 0; i < parts; ++i)
        sizeOf.push_back(toIndex(
            rewriter, loc,
            tensor::ExtractOp::create(
                rewriter, loc, sizes,
                ValueRange{arith::ConstantIndexOp::create(rewriter, loc, i)})));
      Value sum = zero;
      Value negative = arith::ConstantIntOp::create(rewriter, loc,
                                                    rewriter.getI1Type(), 0);
      for (Value s : sizeOf) {
        sum = arith::AddIOp::create(rewriter, loc, sum, s);
        negative = arith::OrIOp::create(
            rewriter, loc, negative,
            arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, s,
                                  zero));
      }
      Value bad = arith::OrIOp::create(
          rewriter, loc, negative,
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne, sum,
                                dim));
      reportInputErrorIf(rewriter, loc, op, 1, bad,
                         "holds split sizes that are negative or do not sum "
                         "to the extent of the split axis");
    } else {
      // num_outputs near-equal parts, the last one smaller.
      Value n = arith::ConstantIndexOp::create(rewriter, loc, parts);
      Value part = arith::CeilDivSIOp::create(rewriter, loc, dim, n);
      for (int64_t i = 0; i < parts; ++i)
        sizeOf.push_back(part);
    }
    SmallVector<Value> results;
    Value offset = zero;
    for (auto [i, r] : llvm::enumerate(op.getOutputs())) {
      auto rt = cast<RankedTensorType>(
          getTypeConverter()->convertType(r.getType()));
      // Within [0, dim - offset].
      Value left = arith::SubIOp::create(rewriter, loc, dim, offset);
      Value size = arith::MaxSIOp::create(
          rewriter, loc,
          arith::MinSIOp::create(rewriter, loc, sizeOf[i], left), zero);
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      offsets[axis] = offset;
      SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, input);
      sizes[axis] = size;
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      Value s = tensor::ExtractSliceOp::create(rewriter, loc, input, offsets,
                                               sizes, strides);
      results.push_back(tensor::CastOp::create(rewriter, loc, rt, s));
      offset = arith::AddIOp::create(rewriter, loc, offset, size);
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct SliceLowering : OpConversionPattern<dist::SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    int64_t rank = inType.getRank();
    auto starts = constInts(op.getStarts());
    auto ends = constInts(op.getEnds());
    int64_t count =
        cast<RankedTensorType>(adaptor.getStarts().getType()).getDimSize(0);
    if (ShapedType::isDynamic(count))
      return notSupported(op, "a slice with a run-time number of starts");
    SmallVector<int64_t> axes, steps;
    if ((op.getAxes() && !constInts(op.getAxes())) ||
        (op.getSteps() && !constInts(op.getSteps())))
      return lowerRunTimeAxes(op, adaptor, count, resultType, rewriter);
    if (op.getAxes()) {
      axes = *constInts(op.getAxes());
    } else {
      for (int64_t i = 0; i < count; ++i)
        axes.push_back(i);
    }
    if (op.getSteps()) {
      steps = *constInts(op.getSteps());
    } else {
      steps.assign(count, 1);
    }
    if (static_cast<int64_t>(axes.size()) != count ||
        static_cast<int64_t>(steps.size()) != count)
      return notSupported(op, "a slice with mismatched starts, axes and steps");
    for (int64_t &a : axes)
      if (a < 0)
        a += rank;
    // Run-time starts or ends, or a sliced dimension of unknown size: the
    // bounds are computed as the program runs.
    bool runtime = !starts || !ends;
    for (size_t i = 0; i < axes.size() && !runtime; ++i)
      if (inType.isDynamicDim(axes[i]) &&
          !((*starts)[i] == 0 && steps[i] == 1 &&
            (*ends)[i] >= std::numeric_limits<int32_t>::max()))
        runtime = true;
    if (runtime)
      return lowerAtRunTime(op, adaptor, axes, steps, resultType, rewriter);
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, input);
    SmallVector<int64_t> stepOf(rank, 1), startOf(rank, 0);
    bool negative = false;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t axis = axes[i];
      int64_t step = steps[i];
      int64_t dim = inType.getDimSize(axis);
      // The whole of a dimension of unknown size (else lowerAtRunTime).
      if (ShapedType::isDynamic(dim))
        continue;
      int64_t start = (*starts)[i], end = (*ends)[i];
      if (start < 0)
        start += dim;
      if (end < 0)
        end += dim;
      int64_t size;
      if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        size = end > start ? (end - start + step - 1) / step : 0;
      } else {
        start = std::clamp<int64_t>(start, 0, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
        size = start > end ? (start - end + (-step) - 1) / (-step) : 0;
        negative = true;
      }
      // An empty slice may start anywhere; 0 keeps extract_slice in bounds.
      offsets[axis] = rewriter.getIndexAttr(size == 0 ? 0 : start);
      sizes[axis] = rewriter.getIndexAttr(size);
      stepOf[axis] = step;
      startOf[axis] = start;
    }
    for (int64_t i = 0; i < rank; ++i)
      if (!resultType.isDynamicDim(i))
        sizes[i] = rewriter.getIndexAttr(resultType.getDimSize(i));
    if (!negative) {
      SmallVector<OpFoldResult> strides;
      for (int64_t s : stepOf)
        strides.push_back(rewriter.getIndexAttr(s));
      Value s = tensor::ExtractSliceOp::create(rewriter, loc, resultType, input,
                                               offsets, sizes, strides);
      rewriter.replaceOp(op, s);
      return success();
    }
    // Negative steps: a generic reading input[start + i * step].
    if (resultType.getNumElements() == 0 || !inType.hasStaticShape())
      return lowerAtRunTime(op, adaptor, axes, steps, resultType, rewriter);
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineExpr> exprs;
    for (int64_t i = 0; i < rank; ++i)
      exprs.push_back(getAffineDimExpr(i, ctx) * stepOf[i] + startOf[i]);
    AffineMap inMap = AffineMap::get(rank, 0, exprs, ctx);
    Value init = emptyTensor(rewriter, loc, resultType, sizes);
    auto g = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultType}, ValueRange{input},
        ValueRange{init},
        SmallVector<AffineMap>{inMap, rewriter.getMultiDimIdentityMap(rank)},
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l, args[0]);
        });
    rewriter.replaceOp(op, g.getResult(0));
    return success();
  }

private:
  /// A slice whose bounds are only known as the program runs (run-time
  /// starts or ends, a sliced dimension of unknown size), following ONNX:
  /// negative starts and ends count from the end, then they are clamped to
  /// [0, dim] (positive steps) or [0, dim - 1] and [-1, dim - 1] (negative
  /// steps). The elements are taken with a strided extract_slice from the
  /// lowest one read; axes with negative steps are then reversed by a
  /// generic that reads element size - 1 - i.
  /// Axes or steps fed at run time: every dimension may be sliced, so each
  /// gets its start, step and extent from the operands as the program runs
  /// (the last entry naming it wins), and one loop nest reads the input at
  /// start + i * step. Extents the model declares are checked.
  LogicalResult lowerRunTimeAxes(dist::SliceOp op, OpAdaptor adaptor,
                                 int64_t count, RankedTensorType resultType,
                                 ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    int64_t rank = inType.getRank();
    if (rank > 16)
      return notSupported(op, "a slice of this rank with run-time axes");
    OpBuilder &b = rewriter;
    auto idx = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    auto at = [&](Value t, int64_t i) -> Value {
      Value e = tensor::ExtractOp::create(b, loc, t, ValueRange{idx(i)});
      return arith::IndexCastOp::create(b, loc, b.getIndexType(), e);
    };
    auto select = [&](Value c, Value x, Value y) -> Value {
      return arith::SelectOp::create(b, loc, c, x, y);
    };
    auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
      return arith::CmpIOp::create(b, loc, p, x, y);
    };
    auto clamp = [&](Value v, Value lo, Value hi) -> Value {
      return arith::MinSIOp::create(b, loc,
                                    arith::MaxSIOp::create(b, loc, v, lo), hi);
    };
    using P = arith::CmpIPredicate;
    // Axis of entry i, normalized; validity is checked when fed at run time.
    SmallVector<Value> axisOf;
    if (op.getAxes()) {
      auto c = constInts(op.getAxes());
      if (!c) {
        SmallVector<uint64_t> any =
            axisSubsets(rank, count, [](uint64_t) { return true; });
        Value mask = checkAxesOperand(b, loc, op, 3, adaptor.getAxes(), rank,
                                      any);
        (void)mask;
      }
      for (int64_t i = 0; i < count; ++i) {
        Value a = c ? idx((*c)[i]) : at(adaptor.getAxes(), i);
        axisOf.push_back(select(cmp(P::slt, a, idx(0)),
                                arith::AddIOp::create(b, loc, a, idx(rank)),
                                a));
      }
    } else {
      for (int64_t i = 0; i < count; ++i)
        axisOf.push_back(idx(i));
    }
    std::optional<SmallVector<int64_t>> constSteps;
    if (op.getSteps())
      constSteps = constInts(op.getSteps());
    SmallVector<Value> startOf, stepOf;
    SmallVector<OpFoldResult> outSizes;
    for (int64_t d = 0; d < rank; ++d) {
      Value dim = dimValue(b, loc, input, d);
      Value start = idx(0), step = idx(1), size = dim;
      for (int64_t i = 0; i < count; ++i) {
        Value hit = cmp(P::eq, axisOf[i], idx(d));
        Value s = !op.getSteps() ? idx(1)
                  : constSteps  ? idx((*constSteps)[i])
                                : at(adaptor.getSteps(), i);
        s = select(cmp(P::eq, s, idx(0)), idx(1), s); // ONNX forbids 0.
        Value st = at(adaptor.getStarts(), i);
        Value en = at(adaptor.getEnds(), i);
        st = select(cmp(P::slt, st, idx(0)),
                    arith::AddIOp::create(b, loc, st, dim), st);
        en = select(cmp(P::slt, en, idx(0)),
                    arith::AddIOp::create(b, loc, en, dim), en);
        // Forward: [st, en) clamped to [0, dim]; backward: st down to en
        // clamped to [-1, dim - 1].
        Value last = arith::SubIOp::create(b, loc, dim, idx(1));
        Value forward = cmp(P::sgt, s, idx(0));
        Value stF = clamp(st, idx(0), dim), enF = clamp(en, idx(0), dim);
        Value stB = clamp(st, idx(0), last), enB = clamp(en, idx(-1), last);
        Value span = select(forward, arith::SubIOp::create(b, loc, enF, stF),
                            arith::SubIOp::create(b, loc, stB, enB));
        Value absStep =
            select(forward, s, arith::SubIOp::create(b, loc, idx(0), s));
        Value n = arith::CeilDivSIOp::create(
            b, loc, arith::MaxSIOp::create(b, loc, span, idx(0)), absStep);
        start = select(hit, select(forward, stF, stB), start);
        step = select(hit, s, step);
        size = select(hit, n, size);
      }
      startOf.push_back(start);
      stepOf.push_back(step);
      if (resultType.isDynamicDim(d)) {
        outSizes.push_back(size);
      } else {
        checkExtent(b, loc, op, 1, d, size, resultType.getDimSize(d));
        outSizes.push_back(b.getIndexAttr(resultType.getDimSize(d)));
      }
    }
    Value init = emptyTensor(b, loc, resultType, outSizes);
    auto g = linalg::GenericOp::create(
        b, loc, TypeRange{resultType}, ValueRange{}, ValueRange{init},
        SmallVector<AffineMap>{b.getMultiDimIdentityMap(rank)},
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location l, ValueRange) {
          // Clamped: past a reported extent error the loops run to the
          // declared extent, which may be more than the slice has.
          SmallVector<Value> src;
          for (int64_t d = 0; d < rank; ++d) {
            Value i = linalg::IndexOp::create(nb, l, d);
            Value at = arith::AddIOp::create(
                nb, l, startOf[d], arith::MulIOp::create(nb, l, i, stepOf[d]));
            Value last = arith::SubIOp::create(
                nb, l, dimValue(nb, l, input, d),
                arith::ConstantIndexOp::create(nb, l, 1));
            src.push_back(arith::MaxSIOp::create(
                nb, l, arith::MinSIOp::create(nb, l, at, last),
                arith::ConstantIndexOp::create(nb, l, 0)));
          }
          linalg::YieldOp::create(
              nb, l, tensor::ExtractOp::create(nb, l, input, src).getResult());
        });
    rewriter.replaceOp(op, g.getResult(0));
    return success();
  }

  LogicalResult lowerAtRunTime(dist::SliceOp op, OpAdaptor adaptor,
                               ArrayRef<int64_t> axes, ArrayRef<int64_t> steps,
                               RankedTensorType resultType,
                               ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    int64_t rank = inType.getRank();
    auto idx = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    // Element i of a 1-D integer tensor of bounds, as an index.
    auto bound = [&](Value t, int64_t i) -> Value {
      Value e = tensor::ExtractOp::create(rewriter, loc, t, ValueRange{idx(i)});
      return arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                        e);
    };
    auto select = [&](Value c, Value a, Value b) -> Value {
      return arith::SelectOp::create(rewriter, loc, c, a, b);
    };
    auto lt = [&](Value a, Value b) -> Value {
      return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, a,
                                   b);
    };
    auto clamp = [&](Value v, Value lo, Value hi) -> Value {
      Value r = arith::MaxSIOp::create(rewriter, loc, v, lo);
      return arith::MinSIOp::create(rewriter, loc, r, hi);
    };
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, input);
    SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
    SmallVector<int64_t> reversed;
    for (auto [i, axis] : llvm::enumerate(axes)) {
      int64_t step = steps[i];
      if (step == 0)
        return notSupported(op, "a slice with a zero step");
      Value dim = dimValue(rewriter, loc, input, axis);
      Value zero = idx(0);
      Value start = bound(adaptor.getStarts(), i);
      Value end = bound(adaptor.getEnds(), i);
      start = select(lt(start, zero),
                     arith::AddIOp::create(rewriter, loc, start, dim), start);
      end = select(lt(end, zero),
                   arith::AddIOp::create(rewriter, loc, end, dim), end);
      Value size, lowest;
      Value absStep = idx(step > 0 ? step : -step);
      if (step > 0) {
        start = clamp(start, zero, dim);
        end = clamp(end, zero, dim);
        Value span = arith::SubIOp::create(rewriter, loc, end, start);
        size = arith::CeilDivSIOp::create(
            rewriter, loc, arith::MaxSIOp::create(rewriter, loc, span, zero),
            absStep);
        lowest = start;
      } else {
        Value last = arith::SubIOp::create(rewriter, loc, dim, idx(1));
        start = clamp(start, zero, last);
        end = clamp(end, idx(-1), last);
        Value span = arith::SubIOp::create(rewriter, loc, start, end);
        size = arith::CeilDivSIOp::create(
            rewriter, loc, arith::MaxSIOp::create(rewriter, loc, span, zero),
            absStep);
        // start - (size - 1) * |step|, the lowest element read.
        Value back = arith::MulIOp::create(
            rewriter, loc,
            arith::MaxSIOp::create(
                rewriter, loc,
                arith::SubIOp::create(rewriter, loc, size, idx(1)), zero),
            absStep);
        lowest = arith::SubIOp::create(rewriter, loc, start, back);
        reversed.push_back(axis);
      }
      // An empty slice may start anywhere; 0 keeps extract_slice in bounds.
      Value empty = arith::CmpIOp::create(rewriter, loc,
                                          arith::CmpIPredicate::eq, size, zero);
      offsets[axis] = select(empty, zero, lowest);
      sizes[axis] = size;
      strides[axis] = rewriter.getIndexAttr(step > 0 ? step : -step);
    }
    SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(axes, d))
        shape[d] = inType.getDimSize(d);
    auto sliceType = RankedTensorType::get(shape, inType.getElementType());
    Value v = tensor::ExtractSliceOp::create(rewriter, loc, sliceType, input,
                                             offsets, sizes, strides);
    if (!reversed.empty()) {
      SmallVector<OpFoldResult> outSizes = sizesOf(rewriter, loc, v);
      Value init = emptyTensor(rewriter, loc, sliceType, outSizes);
      auto g = linalg::GenericOp::create(
          rewriter, loc, TypeRange{sliceType}, ValueRange{}, ValueRange{init},
          SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(rank)},
          SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
          [&](OpBuilder &b, Location l, ValueRange) {
            SmallVector<Value> at;
            for (int64_t d = 0; d < rank; ++d) {
              Value i = linalg::IndexOp::create(b, l, (uint64_t)d);
              if (llvm::is_contained(reversed, d)) {
                Value n = tensor::DimOp::create(b, l, v, d);
                Value last = arith::SubIOp::create(
                    b, l, n, arith::ConstantIndexOp::create(b, l, 1));
                i = arith::SubIOp::create(b, l, last, i);
              }
              at.push_back(i);
            }
            Value e = tensor::ExtractOp::create(b, l, v, at);
            linalg::YieldOp::create(b, l, e);
          });
      v = g.getResult(0);
    }
    rewriter.replaceOp(op, castTensor(rewriter, loc, v, resultType));
    return success();
  }
};

struct ShapeLowering : OpConversionPattern<dist::ShapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::ShapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
    int64_t start = op.getStart();
    int64_t end = op.getEnd() ? *op.getEnd() : rank;
    if (start < 0)
      start += rank;
    if (end < 0)
      end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    SmallVector<Value> elems;
    for (int64_t i = start; i < end; ++i)
      elems.push_back(arith::IndexCastOp::create(
          rewriter, loc, rewriter.getI64Type(), dimValue(rewriter, loc, input, i)));
    auto type = RankedTensorType::get({end - start}, rewriter.getI64Type());
    if (elems.empty()) {
      rewriter.replaceOp(op, tensor::EmptyOp::create(rewriter, loc, type,
                                                     ValueRange{}));
      return success();
    }
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, type, elems);
    return success();
  }
};

struct SizeLowering : OpConversionPattern<dist::SizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::SizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value n = numElements(rewriter, loc, adaptor.getInput());
    Value n64 =
        arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), n);
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, type,
                                                        ValueRange{n64});
    return success();
  }
};

} // namespace

void codegen::populateShapeLowering(TypeConverter &tc, RewritePatternSet &p) {
  p.add<ReshapeLikeLowering<dist::ReshapeOp>,
        ReshapeLikeLowering<dist::FlattenOp>,
        ReshapeLikeLowering<dist::SqueezeOp>,
        ReshapeLikeLowering<dist::UnsqueezeOp>, TransposeLowering,
        ConcatLowering, SplitLowering, SliceLowering, ShapeLowering,
        SizeLowering>(tc, p.getContext());
}
