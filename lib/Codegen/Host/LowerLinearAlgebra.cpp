//===- LowerLinearAlgebra.cpp - MatMul, Gemm, Conv, ConvTranspose ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// Matrix products become contraction linalg.generic ops with a plain
// multiply-accumulate body, so that dist-contractions-to-runtime can hand
// the f32/f64 ones to BLAS after bufferization. 1-D, 2-D and 3-D f32/f64
// convolutions with one group are rewritten as im2col (an affine gather
// generic) plus such a contraction (2-D ones may run as the runtime's
// direct kernel instead); grouped and other-typed convolutions are direct
// generics over expanded group dimensions. A one-group f32/f64
// ConvTranspose is one such contraction (every tap's contribution) and one
// strided add per tap into the output (col2im); others are a direct generic
// reading the input at (o + pad - k*d) / s.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "dist/Codegen/RuntimeABI.h"
#include "dist/Dialect/Dist/IR/Einsum.h"

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::codegen;

namespace {

using IT = utils::IteratorType;

/// out += product of `inputs` over `maps`/`iters` (a contraction generic;
/// with two inputs, what dist-contractions-to-runtime hands to BLAS). Bool
/// elements combine with and/or.
Value buildContraction(OpBuilder &b, Location loc, ValueRange inputs,
                       Value init, ArrayRef<AffineMap> maps, ArrayRef<IT> iters,
                       Type origElem) {
  bool isFloat = isa<FloatType>(origElem);
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        bool isBool = a[0].getType().isInteger(1);
        Value p = a[0];
        for (Value x : a.drop_front().drop_back())
          p = isFloat  ? Value(arith::MulFOp::create(nb, l, p, x))
              : isBool ? Value(arith::AndIOp::create(nb, l, p, x))
                       : Value(arith::MulIOp::create(nb, l, p, x));
        Value acc = a.back();
        Value r = isFloat  ? Value(arith::AddFOp::create(nb, l, acc, p))
                  : isBool ? Value(arith::OrIOp::create(nb, l, acc, p))
                           : Value(arith::AddIOp::create(nb, l, acc, p));
        linalg::YieldOp::create(nb, l, r);
      });
  return g.getResult(0);
}

/// out += lhs * rhs.
Value buildContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       Value init, ArrayRef<AffineMap> maps, ArrayRef<IT> iters,
                       Type origElem) {
  return buildContraction(b, loc, ValueRange{lhs, rhs}, init, maps, iters,
                          origElem);
}

struct MatMulLowering : OpConversionPattern<dist::MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    auto lt = cast<RankedTensorType>(lhs.getType());
    auto rt = cast<RankedTensorType>(rhs.getType());
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Type elem = resultType.getElementType();
    Type origElem = elemTypeOf(op.getLhs());

    // Rank >= 5 operands with identical batch dims: fold the batch dims
    // into one so that the contraction has a single batch dimension. Rank 4
    // keeps both (the runtime's GEMM loops over the outer one), so that a
    // transpose of heads feeding the product, or applied to its result,
    // folds into its indexing maps instead of being copied (measured: the
    // GPT-style LM's head transposes were 3-4% of its steps).
    if (lt.getRank() >= 5 && lt.getRank() == rt.getRank() &&
        lt.getShape().drop_back(2) == rt.getShape().drop_back(2) &&
        llvm::count_if(lt.getShape().drop_back(2), ShapedType::isDynamic) <=
            1) {
      int64_t r = lt.getRank();
      SmallVector<ReassociationIndices> re(1);
      for (int64_t i = 0; i < r - 2; ++i)
        re[0].push_back(i);
      re.push_back({r - 2});
      re.push_back({r - 1});
      lhs = tensor::CollapseShapeOp::create(rewriter, loc, lhs, re);
      rhs = tensor::CollapseShapeOp::create(rewriter, loc, rhs, re);
      lt = cast<RankedTensorType>(lhs.getType());
      rt = cast<RankedTensorType>(rhs.getType());
      SmallVector<int64_t> shape{lt.getDimSize(0), lt.getDimSize(1),
                                 rt.getDimSize(2)};
      auto flatType = RankedTensorType::get(shape, elem);
      Value prod = contract(rewriter, loc, lhs, rhs, flatType, origElem, ctx);
      SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, adaptor.getLhs());
      sizes.back() = tensor::getMixedSize(rewriter, loc, adaptor.getRhs(), r - 1);
      Value out = tensor::ExpandShapeOp::create(rewriter, loc, resultType, prod,
                                                re, sizes);
      rewriter.replaceOp(op, out);
      return success();
    }
    rewriter.replaceOp(op, contract(rewriter, loc, lhs, rhs, resultType,
                                    origElem, ctx));
    return success();
  }

  static Value contract(OpBuilder &b, Location loc, Value lhs, Value rhs,
                        RankedTensorType resultType, Type origElem,
                        MLIRContext *ctx) {
    auto lt = cast<RankedTensorType>(lhs.getType());
    auto rt = cast<RankedTensorType>(rhs.getType());
    int64_t R = resultType.getRank();
    bool hasM = lt.getRank() >= 2, hasN = rt.getRank() >= 2;
    int64_t B = R - (hasM ? 1 : 0) - (hasN ? 1 : 0);
    int64_t numLoops = R + 1;
    int64_t mDim = B, nDim = B + (hasM ? 1 : 0), kDim = R;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    auto batchExprs = [&](RankedTensorType t, int64_t batchRank) {
      SmallVector<AffineExpr> e;
      for (int64_t i = 0; i < batchRank; ++i) {
        int64_t resDim = B - batchRank + i;
        bool bcast = t.getDimSize(i) == 1 && resultType.getDimSize(resDim) != 1;
        e.push_back(bcast ? getAffineConstantExpr(0, ctx) : d(resDim));
      }
      return e;
    };
    SmallVector<AffineExpr> le, re, oe;
    if (hasM) {
      le = batchExprs(lt, lt.getRank() - 2);
      le.push_back(d(mDim));
    }
    le.push_back(d(kDim));
    if (hasN) {
      re = batchExprs(rt, rt.getRank() - 2);
      re.push_back(d(kDim));
      re.push_back(d(nDim));
    } else {
      re.push_back(d(kDim));
    }
    for (int64_t i = 0; i < R; ++i)
      oe.push_back(d(i));
    SmallVector<AffineMap> maps{AffineMap::get(numLoops, 0, le, ctx),
                                AffineMap::get(numLoops, 0, re, ctx),
                                AffineMap::get(numLoops, 0, oe, ctx)};
    SmallVector<IT> iters(R, IT::parallel);
    iters.push_back(IT::reduction);
    // Output sizes: batch dims by broadcasting, then m and n.
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < B; ++i) {
      if (!resultType.isDynamicDim(i)) {
        sizes.push_back(b.getIndexAttr(resultType.getDimSize(i)));
        continue;
      }
      OpFoldResult s = b.getIndexAttr(1);
      int64_t lb = hasM ? lt.getRank() - 2 : 0, rb = hasN ? rt.getRank() - 2 : 0;
      int64_t li = i - (B - lb), ri = i - (B - rb);
      if (li >= 0 && lt.getDimSize(li) != 1)
        s = tensor::getMixedSize(b, loc, lhs, li);
      else if (ri >= 0 && rt.getDimSize(ri) != 1)
        s = tensor::getMixedSize(b, loc, rhs, ri);
      sizes.push_back(s);
    }
    if (hasM)
      sizes.push_back(tensor::getMixedSize(b, loc, lhs, lt.getRank() - 2));
    if (hasN)
      sizes.push_back(tensor::getMixedSize(b, loc, rhs, rt.getRank() - 1));
    Value zero = scalarConst(b, loc, resultType.getElementType(), 0);
    Value init = filledTensor(b, loc, resultType, sizes, zero);
    return buildContraction(b, loc, lhs, rhs, init, maps, iters, origElem);
  }
};

/// Einsum as one generic: a loop per distinct subscript (the output's
/// first, parallel; the others reductions), each operand read through its
/// subscripts (a repeated one reads the diagonal; a size-1 dimension under
/// '...' that broadcasts reads index 0), built by buildContraction, so
/// that dist-contractions-to-runtime hands matrix-like two-operand ones to
/// BLAS. A product with three or more batch subscripts leading the output
/// and both operands alike (MaxViT's "BGHID,BGHJD->BGHIJ") folds them into
/// one first, as MatMul does: the runtime's GEMM takes at most two batch
/// loops, and MaxViT-T's attention ran as generated loops (35% of its
/// time) before.
struct EinsumLowering : OpConversionPattern<dist::EinsumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::EinsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    SmallVector<Value> inputs(adaptor.getInputs());
    SmallVector<int64_t> ranks;
    for (Value v : inputs)
      ranks.push_back(cast<RankedTensorType>(v.getType()).getRank());
    EinsumSubscripts subs;
    std::string why;
    if (!parseEinsum(op.getEquation(), ranks, subs, why))
      return notSupported(op, "equation: " + why);
    Type origElem = elemTypeOf(op.getInputs()[0]);
    int64_t run = batchRun(inputs, subs, resultType);
    if (run < 3) {
      rewriter.replaceOp(
          op, build(rewriter, loc, inputs, subs, resultType, origElem));
      return success();
    }
    // Collapse the run in each operand and the result (one reassociation
    // group for it, one per other dimension), then expand back.
    auto collapseRun = [&](int64_t rank) {
      SmallVector<ReassociationIndices> re(1);
      for (int64_t i = 0; i < run; ++i)
        re[0].push_back(i);
      for (int64_t i = run; i < rank; ++i)
        re.push_back({i});
      return re;
    };
    EinsumSubscripts flat = subs;
    for (std::string &in : flat.inputs)
      in.erase(1, run - 1);
    flat.output.erase(1, run - 1);
    SmallVector<Value> flatInputs;
    for (Value v : inputs)
      flatInputs.push_back(tensor::CollapseShapeOp::create(
          rewriter, loc, v,
          collapseRun(cast<RankedTensorType>(v.getType()).getRank())));
    SmallVector<ReassociationIndices> outRe = collapseRun(resultType.getRank());
    auto flatType = cast<RankedTensorType>(
        tensor::CollapseShapeOp::inferCollapsedType(resultType, outRe));
    Value flatOut = build(rewriter, loc, flatInputs, flat, flatType, origElem);
    // The result's sizes: the run's from the first operand, the others
    // from the flat result.
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < run; ++i)
      sizes.push_back(tensor::getMixedSize(rewriter, loc, inputs[0], i));
    for (int64_t i = 1; i < flatType.getRank(); ++i)
      sizes.push_back(tensor::getMixedSize(rewriter, loc, flatOut, i));
    rewriter.replaceOp(op,
                       tensor::ExpandShapeOp::create(rewriter, loc, resultType,
                                                     flatOut, outRe, sizes));
    return success();
  }

  /// The number of subscripts that lead the output and both of two
  /// operands in the same order, each once in every subscript string, of
  /// the same extent everywhere (no broadcast) with at most one unknown
  /// among them, and that leave at least one more output subscript; 0
  /// when not two operands.
  static int64_t batchRun(ArrayRef<Value> inputs, const EinsumSubscripts &subs,
                          RankedTensorType resultType) {
    if (inputs.size() != 2)
      return 0;
    auto lt = cast<RankedTensorType>(inputs[0].getType());
    auto rt = cast<RankedTensorType>(inputs[1].getType());
    const std::string &l = subs.inputs[0], &r = subs.inputs[1],
                      &o = subs.output;
    int64_t run = 0, dynamic = 0;
    while (static_cast<size_t>(run) + 1 < o.size() &&
           static_cast<size_t>(run) < l.size() &&
           static_cast<size_t>(run) < r.size()) {
      char c = o[run];
      if (l[run] != c || r[run] != c || llvm::count(l, c) != 1 ||
          llvm::count(r, c) != 1 || llvm::count(o, c) != 1)
        break;
      int64_t a = lt.getDimSize(run), b = rt.getDimSize(run),
              z = resultType.getDimSize(run);
      if (a != b || a != z)
        break;
      if (ShapedType::isDynamic(a) && ++dynamic > 1)
        break;
      ++run;
    }
    return run;
  }

  static Value build(OpBuilder &rewriter, Location loc, ArrayRef<Value> inputs,
                     const EinsumSubscripts &subs, RankedTensorType resultType,
                     Type origElem) {
    MLIRContext *ctx = rewriter.getContext();
    std::string loops = subs.output;
    for (const std::string &in : subs.inputs)
      for (char c : in)
        if (loops.find(c) == std::string::npos)
          loops.push_back(c);
    auto d = [&](char c) {
      return getAffineDimExpr(static_cast<unsigned>(loops.find(c)), ctx);
    };
    // A subscript's size: a dimension of it that is not a broadcast 1.
    auto sizeOf = [&](char c) -> std::pair<Value, int64_t> {
      std::pair<Value, int64_t> found{Value(), -1};
      for (auto [v, in] : llvm::zip(inputs, subs.inputs)) {
        auto t = cast<RankedTensorType>(v.getType());
        for (auto [i, x] : llvm::enumerate(in)) {
          if (x != c)
            continue;
          if (t.getDimSize(i) != 1)
            return {v, static_cast<int64_t>(i)};
          if (!found.first)
            found = {v, static_cast<int64_t>(i)};
        }
      }
      return found;
    };
    auto knownSize = [&](char c) {
      auto [v, i] = sizeOf(c);
      return cast<RankedTensorType>(v.getType()).getDimSize(i);
    };
    SmallVector<AffineMap> maps;
    for (auto [v, in] : llvm::zip(inputs, subs.inputs)) {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<AffineExpr> e;
      for (auto [i, c] : llvm::enumerate(in)) {
        bool bcast = t.getDimSize(i) == 1 && knownSize(c) != 1;
        e.push_back(bcast ? getAffineConstantExpr(0, ctx) : d(c));
      }
      maps.push_back(AffineMap::get(loops.size(), 0, e, ctx));
    }
    SmallVector<AffineExpr> oe;
    for (char c : subs.output)
      oe.push_back(d(c));
    maps.push_back(AffineMap::get(loops.size(), 0, oe, ctx));
    SmallVector<IT> iters;
    for (size_t i = 0; i < loops.size(); ++i)
      iters.push_back(i < subs.output.size() ? IT::parallel : IT::reduction);
    SmallVector<OpFoldResult> sizes;
    for (auto [i, c] : llvm::enumerate(subs.output)) {
      if (!resultType.isDynamicDim(i)) {
        sizes.push_back(rewriter.getIndexAttr(resultType.getDimSize(i)));
        continue;
      }
      auto [v, at] = sizeOf(c);
      sizes.push_back(tensor::getMixedSize(rewriter, loc, v, at));
    }
    Value zero = scalarConst(rewriter, loc, resultType.getElementType(), 0);
    Value init = filledTensor(rewriter, loc, resultType, sizes, zero);
    return buildContraction(rewriter, loc, inputs, init, maps, iters, origElem);
  }
};

struct GemmLowering : OpConversionPattern<dist::GemmOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value a = adaptor.getA(), b = adaptor.getB();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Type elem = resultType.getElementType();
    Type origElem = elemTypeOf(op.getA());
    bool ta = op.getTransA() != 0, tb = op.getTransB() != 0;
    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    // Loops (m, n, k).
    AffineMap aMap = AffineMap::get(3, 0, ta ? ArrayRef<AffineExpr>{d(2), d(0)}
                                             : ArrayRef<AffineExpr>{d(0), d(2)},
                                    ctx);
    AffineMap bMap = AffineMap::get(3, 0, tb ? ArrayRef<AffineExpr>{d(1), d(2)}
                                             : ArrayRef<AffineExpr>{d(2), d(1)},
                                    ctx);
    AffineMap oMap = AffineMap::get(3, 0, {d(0), d(1)}, ctx);
    SmallVector<OpFoldResult> sizes{
        tensor::getMixedSize(rewriter, loc, a, ta ? 1 : 0),
        tensor::getMixedSize(rewriter, loc, b, tb ? 0 : 1)};
    Value c = adaptor.getC();
    bool biasAsInit = c && alpha == 1.0 && beta == 1.0;
    Value init;
    if (biasAsInit) {
      init = buildElementwise(rewriter, loc, resultType, sizes, ValueRange{c},
                              [](OpBuilder &, Location, ValueRange x) {
                                return x[0];
                              });
    } else {
      init = filledTensor(rewriter, loc, resultType, sizes,
                          scalarConst(rewriter, loc, elem, 0));
    }
    Value acc = buildContraction(rewriter, loc, a, b, init,
                                 {aMap, bMap, oMap},
                                 {IT::parallel, IT::parallel, IT::reduction},
                                 origElem);
    if (!biasAsInit && (alpha != 1.0 || c)) {
      SmallVector<Value> operands{acc};
      if (c)
        operands.push_back(c);
      acc = buildElementwise(
          rewriter, loc, resultType, sizes, operands,
          [&](OpBuilder &nb, Location l, ValueRange x) {
            Value r = x[0];
            Value al = scalarConst(nb, l, elem, alpha);
            r = mulScalars(nb, l, r, al);
            if (x.size() > 1) {
              Value be = scalarConst(nb, l, elem, beta);
              Value bc = mulScalars(nb, l, x[1], be);
              r = addScalars(nb, l, r, bc);
            }
            return r;
          });
    }
    rewriter.replaceOp(op, acc);
    return success();
  }
};

/// Explicit begin/end pads per spatial dim of a conv-like op, from its
/// attributes and the result's spatial sizes (auto_pad resolved).
struct ConvGeometry {
  SmallVector<int64_t> in, kernel, out, strides, dilations, padBegin, padEnd;
};

FailureOr<ConvGeometry> convGeometry(Operation *op, RankedTensorType inType,
                                     RankedTensorType wType,
                                     RankedTensorType outType,
                                     std::optional<ArrayRef<int64_t>> strides,
                                     std::optional<ArrayRef<int64_t>> dilations,
                                     std::optional<ArrayRef<int64_t>> pads,
                                     StringRef autoPad, bool transpose) {
  ConvGeometry g;
  int64_t s = inType.getRank() - 2;
  for (int64_t i = 0; i < s; ++i) {
    int64_t I = inType.getDimSize(i + 2), K = wType.getDimSize(i + 2),
            O = outType.getDimSize(i + 2);
    if (ShapedType::isDynamic(I) || ShapedType::isDynamic(K) ||
        ShapedType::isDynamic(O)) {
      (void)notSupported(op,
                         "a convolution with dynamic spatial or kernel sizes");
      return failure();
    }
    g.in.push_back(I);
    g.kernel.push_back(K);
    g.out.push_back(O);
    g.strides.push_back(strides && (int64_t)strides->size() == s ? (*strides)[i]
                                                                : 1);
    g.dilations.push_back(
        dilations && (int64_t)dilations->size() == s ? (*dilations)[i] : 1);
    int64_t pb = 0, pe = 0;
    if (pads && (int64_t)pads->size() == 2 * s) {
      pb = (*pads)[i];
      pe = (*pads)[i + s];
    }
    int64_t eff = (K - 1) * g.dilations[i] + 1;
    if (!transpose && (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")) {
      int64_t total =
          std::max<int64_t>(0, (O - 1) * g.strides[i] + eff - I);
      pb = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else if (!transpose && autoPad == "VALID") {
      pb = pe = 0;
    }
    if (!transpose) {
      // The result size may need more end padding (pooling ceil_mode); a
      // negative value crops.
      pe = (O - 1) * g.strides[i] + eff - I - pb;
    }
    g.padBegin.push_back(pb);
    g.padEnd.push_back(pe);
  }
  return g;
}

/// The initial value of a convolution's output: the per-channel `bias`
/// broadcast over (n, c, spatial...), or `zero` everywhere without one.
Value channelInit(OpBuilder &b, Location loc, RankedTensorType outType,
                  ArrayRef<OpFoldResult> sizes, Value bias, Value zero) {
  if (!bias)
    return filledTensor(b, loc, outType, sizes, zero);
  MLIRContext *ctx = b.getContext();
  int64_t rank = outType.getRank();
  Value empty = emptyTensor(b, loc, outType, sizes);
  return linalg::GenericOp::create(
             b, loc, TypeRange{outType}, ValueRange{bias}, ValueRange{empty},
             SmallVector<AffineMap>{
                 AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx),
                 b.getMultiDimIdentityMap(rank)},
             SmallVector<IT>(rank, IT::parallel),
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(nb, l, a[0]);
             })
      .getResult(0);
}

/// `value` [N, C, ...] plus the per-channel float `bias` [C], broadcast
/// over the other dims.
Value addChannelBias(OpBuilder &b, Location loc, Value value, Value bias) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rank = type.getRank();
  Value empty = emptyTensor(b, loc, type, sizesOf(b, loc, value));
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{value, bias},
             ValueRange{empty},
             SmallVector<AffineMap>{
                 b.getMultiDimIdentityMap(rank),
                 AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx),
                 b.getMultiDimIdentityMap(rank)},
             SmallVector<IT>(rank, IT::parallel),
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l, arith::AddFOp::create(nb, l, a[0], a[1]).getResult());
             })
      .getResult(0);
}

/// The im2col columns of a convolution's padded input [N, C, I_1..I_s]
/// (s = 1, 2 or 3 spatial dims): col[n, (c, k_1..k_s), (o_1..o_s)] =
/// in[n, c, o_i*s_i + k_i*d_i], as [N, C*K_1*..*K_s, O_1*..*O_s]. A
/// pointwise unit-stride convolution's input already is that matrix (a
/// reshape).
Value columns(OpBuilder &b, Location loc, Value padded,
              const ConvGeometry &geo) {
  MLIRContext *ctx = b.getContext();
  auto pt = cast<RankedTensorType>(padded.getType());
  Type elem = pt.getElementType();
  int64_t s = pt.getRank() - 2;
  int64_t C = pt.getDimSize(1), N = pt.getDimSize(0);
  int64_t taps = 1, positions = 1;
  bool pointwise = true;
  for (int64_t i = 0; i < s; ++i) {
    taps *= geo.kernel[i];
    positions *= geo.out[i];
    pointwise &= geo.kernel[i] == 1 && geo.strides[i] == 1 &&
                 pt.getDimSize(2 + i) == geo.out[i];
  }
  auto colType = RankedTensorType::get({N, C * taps, positions}, elem);
  // [N, C, K..., O...] collapses to [N, C*K..., O...].
  ReassociationIndices cK{1}, o;
  for (int64_t i = 0; i < s; ++i) {
    cK.push_back(2 + i);
    o.push_back(2 + s + i);
  }
  if (pointwise && s == 1)
    return padded;
  if (pointwise) {
    ReassociationIndices spatial;
    for (int64_t i = 0; i < s; ++i)
      spatial.push_back(2 + i);
    return tensor::CollapseShapeOp::create(
        b, loc, colType, padded,
        SmallVector<ReassociationIndices>{{0}, {1}, spatial});
  }
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  // Loops (n, c, k_1..k_s, o_1..o_s).
  int64_t loops = 2 + 2 * s;
  SmallVector<AffineExpr> inE{d(0), d(1)};
  SmallVector<int64_t> shape{N, C};
  for (int64_t i = 0; i < s; ++i) {
    inE.push_back(d(2 + s + i) * geo.strides[i] + d(2 + i) * geo.dilations[i]);
    shape.push_back(geo.kernel[i]);
  }
  for (int64_t i = 0; i < s; ++i)
    shape.push_back(geo.out[i]);
  AffineMap inMap = AffineMap::get(loops, 0, inE, ctx);
  auto fullType = RankedTensorType::get(shape, elem);
  SmallVector<Value> dyn;
  if (ShapedType::isDynamic(N))
    dyn.push_back(ofrToValue(b, loc, tensor::getMixedSize(b, loc, padded, 0)));
  Value empty = tensor::EmptyOp::create(b, loc, fullType, dyn);
  Value full =
      linalg::GenericOp::create(
          b, loc, TypeRange{fullType}, ValueRange{padded}, ValueRange{empty},
          SmallVector<AffineMap>{inMap, b.getMultiDimIdentityMap(loops)},
          SmallVector<IT>(loops, IT::parallel),
          [](OpBuilder &nb, Location l, ValueRange a) {
            linalg::YieldOp::create(nb, l, a[0]);
          })
          .getResult(0);
  return tensor::CollapseShapeOp::create(
      b, loc, colType, full, SmallVector<ReassociationIndices>{{0}, cK, o});
}

/// Whether a 2-D f32 convolution runs as the runtime's direct convolution
/// (dist_rt_conv2d_f32, see runtime/lib/conv.cpp) rather than im2col + GEMM:
/// when the target has AVX-512 (`direct`) and runtime_abi's rule takes it.
/// With `groups`, of `groupChannels` input channels each.
bool useDirectConv(bool direct, RankedTensorType paddedType,
                   const ConvGeometry &geo, int64_t groups = 1,
                   int64_t groupChannels = 0) {
  return direct && paddedType.getElementType().isF32() &&
         dist::runtime_abi::directConvApplies(
             groups == 1 ? paddedType.getDimSize(1) : groupChannels,
             paddedType.getDimSize(2), paddedType.getDimSize(3), geo.kernel[0],
             geo.kernel[1], geo.strides[0], geo.strides[1], groups);
}

/// A grouped convolution's operands with their channels split into groups:
/// the padded input [N, G*Cg, ...] as [N, G, Cg, ...], the weight
/// [G*Fg, Cg, k...] as [G, Fg, Cg, k...] and the output's init
/// [N, G*Fg, ...] as [N, G, Fg, ...].
struct GroupedOperands {
  Value input, weight, init;
};

GroupedOperands groupOperands(OpBuilder &b, Location loc, Value padded,
                              Value weight, Value init, int64_t G, int64_t Cg,
                              int64_t Fg) {
  // Dim 1 of `v` split into (G, inner), the others kept.
  auto expandCh = [&](Value v, int64_t inner) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<OpFoldResult> sizesIn = sizesOf(b, loc, v);
    SmallVector<int64_t> shape{t.getDimSize(0), G, inner};
    SmallVector<OpFoldResult> sizes{sizesIn[0], b.getIndexAttr(G),
                                    b.getIndexAttr(inner)};
    SmallVector<ReassociationIndices> re{{0}, {1, 2}};
    for (int64_t i = 2; i < t.getRank(); ++i) {
      shape.push_back(t.getDimSize(i));
      sizes.push_back(sizesIn[i]);
      re.push_back({i + 1});
    }
    auto nt = RankedTensorType::get(shape, t.getElementType());
    return tensor::ExpandShapeOp::create(b, loc, nt, v, re, sizes).getResult();
  };
  auto wt = cast<RankedTensorType>(weight.getType());
  SmallVector<int64_t> wshape{G, Fg};
  SmallVector<ReassociationIndices> wre{{0, 1}};
  for (int64_t i = 1; i < wt.getRank(); ++i) {
    wshape.push_back(wt.getDimSize(i));
    wre.push_back({i + 1});
  }
  Value w5 = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(wshape, wt.getElementType()), weight, wre);
  return {expandCh(padded, Cg), w5, expandCh(init, Fg)};
}

/// The grouped result [N, G, Fg, ...] as [N, G*Fg, ...] (`outType`).
Value ungroup(OpBuilder &b, Location loc, Value grouped,
              RankedTensorType outType) {
  SmallVector<ReassociationIndices> re{{0}, {1, 2}};
  for (int64_t i = 2; i < outType.getRank(); ++i)
    re.push_back({i + 1});
  return tensor::CollapseShapeOp::create(b, loc, outType, grouped, re);
}

struct ConvLowering : OpConversionPattern<dist::ConvOp> {
  /// Taps that read only padding, for every output position, add nothing:
  /// a dilated kernel larger than its image (DeepLabV3's atrous pyramid,
  /// dilations 12 to 36 around a 14x14 map, where two of its three 3x3
  /// branches are 1x1 in effect). Drops the kernel's leading and trailing
  /// such taps in each spatial dimension: the weight sliced, `geo`'s kernel
  /// and padding made to match (a negative begin crops the input; the
  /// output positions stay). Returns the weight to use.
  static Value dropPaddingTaps(OpBuilder &b, Location loc, Value weight,
                               ConvGeometry &geo) {
    int64_t s = static_cast<int64_t>(geo.kernel.size());
    SmallVector<int64_t> first(s), count(s);
    bool trimmed = false;
    for (int64_t i = 0; i < s; ++i) {
      int64_t K = geo.kernel[i], d = geo.dilations[i], st = geo.strides[i];
      int64_t I = geo.in[i], O = geo.out[i], pb = geo.padBegin[i];
      // Tap k reads input (o * st + k * d - pb) for o in [0, O): some of
      // it inside [0, I) when the last position reaches 0 and the first
      // stays below I.
      int64_t lo = 0, hi = K - 1;
      while (lo < K && (O - 1) * st + lo * d - pb < 0)
        ++lo;
      while (hi >= 0 && hi * d - pb > I - 1)
        --hi;
      if (lo > hi || O < 1)
        return weight; // Nothing reaches the image: leave it alone.
      first[i] = lo;
      count[i] = hi - lo + 1;
      trimmed |= count[i] != K;
    }
    if (!trimmed)
      return weight;
    SmallVector<OpFoldResult> offsets(2, b.getIndexAttr(0)), sizes, ones;
    sizes.push_back(tensor::getMixedSize(b, loc, weight, 0));
    sizes.push_back(tensor::getMixedSize(b, loc, weight, 1));
    for (int64_t i = 0; i < s; ++i) {
      offsets.push_back(b.getIndexAttr(first[i]));
      sizes.push_back(b.getIndexAttr(count[i]));
      int64_t d = geo.dilations[i];
      geo.kernel[i] = count[i];
      geo.padBegin[i] -= first[i] * d;
      geo.padEnd[i] = (geo.out[i] - 1) * geo.strides[i] + (count[i] - 1) * d +
                      1 - geo.in[i] - geo.padBegin[i];
    }
    ones.assign(s + 2, b.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(b, loc, weight, offsets, sizes, ones);
  }

  ConvLowering(TypeConverter &tc, MLIRContext *ctx, bool directConv,
               bool directDepthwise, bool channelsLast)
      : OpConversionPattern(tc, ctx), directConv(directConv),
        directDepthwise(directDepthwise), channelsLast(channelsLast) {}
  bool directConv, directDepthwise, channelsLast;
  LogicalResult
  matchAndRewrite(dist::ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput(), weight = adaptor.getWeight();
    auto inType = cast<RankedTensorType>(input.getType());
    auto wType = cast<RankedTensorType>(weight.getType());
    auto outType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Type elem = outType.getElementType();
    int64_t s = inType.getRank() - 2;
    if (s < 1)
      return notSupported(op, "a convolution without spatial dimensions");
    auto geo = convGeometry(op, inType, wType, outType, op.getStrides(),
                            op.getDilations(), op.getPads(), op.getAutoPad(),
                            /*transpose=*/false);
    if (failed(geo))
      return failure();
    int64_t G = op.getGroup();
    int64_t C = inType.getDimSize(1), F = wType.getDimSize(0);
    if (ShapedType::isDynamic(C) || ShapedType::isDynamic(F) || G <= 0 ||
        C % G || F % G)
      return notSupported(op, "a convolution with these channel counts");
    int64_t Cg = C / G, Fg = F / G;
    weight = dropPaddingTaps(rewriter, loc, weight, *geo);
    Value zero = scalarConst(rewriter, loc, elem, 0);
    // (A negative end padding leaves rows that no window reads, as a 1x1
    // layer at stride 2 on an even image does: the channels-last
    // convolution reads the whole image instead of a cropped copy.)
    if (channelsLast && (s == 2 || s == 3) && elem.isF32() &&
        llvm::all_of(geo->padBegin, [](int64_t p) { return p >= 0; })) {
      ConvGeometry cl = *geo;
      for (int64_t &p : cl.padEnd)
        p = std::max<int64_t>(p, 0);
      rewriter.replaceOp(op, channelsLastConvolution(rewriter, loc, input,
                                                     weight, adaptor.getBias(),
                                                     outType, cl, G, zero));
      return success();
    }
    Value padded = padSpatial(rewriter, loc, input, geo->padBegin,
                              geo->padEnd, zero);
    SmallVector<OpFoldResult> outSizes = sizesOf(rewriter, loc, input);
    outSizes[1] = rewriter.getIndexAttr(F);
    for (int64_t i = 0; i < s; ++i)
      outSizes[i + 2] = rewriter.getIndexAttr(geo->out[i]);

    auto biasInit = [&] {
      return channelInit(rewriter, loc, outType, outSizes, adaptor.getBias(),
                         zero);
    };

    bool blasType = elem.isF32() || elem.isF64();
    auto i64Pair = [&](ArrayRef<int64_t> v) {
      return DenseIntElementsAttr::get(
          RankedTensorType::get({2}, rewriter.getI64Type()), v);
    };
    // One input channel a group (depthwise, or a single-channel image)
    // with a kernel larger than 3x3 also runs direct where only
    // `directDepthwise` holds (AVX2: runtime/lib/conv.cpp's AVX2 rows).
    // Measured one layer at a time on an AVX2 AMD EPYC, one thread, the
    // call against generated loops: 5x5 layers of EfficientNet-B0 0.33-0.79
    // ms against 0.84-3.7, ConvNeXt-T's 7x7 on 96 x 56 x 56 1.24-1.43
    // against 11.7-12.4, but 3x3 layers 1.2-1.5x slower than the loops
    // (MobileNetV2's and ShuffleNetV2's), which stay loops there.
    bool mayDirect = directConv || (s == 2 && Cg == 1 && directDepthwise &&
                                    geo->kernel[0] * geo->kernel[1] > 9);
    // Grouped convolutions of several channels a group run on the call
    // where only `directDepthwise` holds too, whatever their image size:
    // there the runtime runs them as products by panels of positions, one
    // group after another, on the group's filters packed once
    // (runtime/lib/conv.cpp), where generated loops ran RegNetY-400MF's
    // 8-channel groups at 2 to 7 GFLOP/s (the model 39-59 ms against 24-30
    // with the call, alternating runs, one thread, AVX2 AMD EPYC).
    bool groupedCall = s == 2 && G > 1 && Cg > 1 && directDepthwise &&
                       !directConv && elem.isF32();
    bool runDirect =
        groupedCall ||
        (s == 2 &&
         useDirectConv(mayDirect, cast<RankedTensorType>(padded.getType()),
                       *geo, G, Cg));
    if (G > 1 && runDirect) {
      // Grouped and depthwise: the named grouped op, which
      // dist-contractions-to-runtime turns into dist_rt_conv2d_group_f32
      // (generated loops ran RegNetY-400MF's 8-channel groups at 2 to 7
      // GFLOP/s and MobileNetV2's depthwise layers alike).
      GroupedOperands ops =
          groupOperands(rewriter, loc, padded, weight, biasInit(), G, Cg, Fg);
      auto conv = linalg::Conv2DNgchwGfchwOp::create(
          rewriter, loc, TypeRange{ops.init.getType()},
          ValueRange{ops.input, ops.weight}, ValueRange{ops.init},
          i64Pair(geo->strides), i64Pair(geo->dilations));
      rewriter.replaceOp(op,
                         ungroup(rewriter, loc, conv.getResult(0), outType));
      return success();
    }
    if (G == 1 && runDirect) {
      // Named op: dist-contractions-to-runtime turns it into the runtime
      // call once bufferized (or it lowers to loops like any linalg op).
      auto conv = linalg::Conv2DNchwFchwOp::create(
          rewriter, loc, TypeRange{outType}, ValueRange{padded, weight},
          ValueRange{biasInit()}, i64Pair(geo->strides),
          i64Pair(geo->dilations));
      rewriter.replaceOp(op, conv.getResult(0));
      return success();
    }
    // 1-D and 3-D alike: columns and one product (the runtime's GEMM)
    // instead of a loop nest over every tap (a dilated 1-D temporal
    // network ran 10x slower than onnxruntime that way, a 3-D one 25x).
    // The product sets its output (a zero init, which the runtime's GEMM
    // does not read) and the bias comes after, as an elementwise add that
    // dist-fuse-elementwise joins with the activation that usually follows:
    // broadcasting the bias into the output first and accumulating cost
    // MobileNetV2 a pass over every 1x1 convolution's output.
    if (G == 1 && s <= 3 && blasType) {
      Value product =
          im2col(rewriter, loc, padded, weight,
                 filledTensor(rewriter, loc, outType, outSizes, zero), outType,
                 *geo, elemTypeOf(op.getInput()));
      rewriter.replaceOp(
          op, adaptor.getBias()
                  ? addChannelBias(rewriter, loc, product, adaptor.getBias())
                  : product);
      return success();
    }
    rewriter.replaceOp(op, direct(rewriter, loc, padded, weight, biasInit(),
                                  outType, *geo, G, Cg, Fg,
                                  elemTypeOf(op.getInput())));
    return success();
  }

  /// `v` with its dims permuted (a linalg.transpose into a fresh tensor).
  static Value transposed(OpBuilder &b, Location loc, Value v,
                          ArrayRef<int64_t> perm) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<OpFoldResult> sizes = sizesOf(b, loc, v), permSizes;
    SmallVector<int64_t> shape;
    for (int64_t p : perm) {
      shape.push_back(t.getDimSize(p));
      permSizes.push_back(sizes[p]);
    }
    Value init = emptyTensor(
        b, loc, RankedTensorType::get(shape, t.getElementType()), permSizes);
    return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
  }

  /// The permutation taking [N, C, spatial...] (s spatial dims) to
  /// channels-last [N, spatial..., C], or back with `back`.
  static SmallVector<int64_t> channelsLastPerm(int64_t s, bool back) {
    SmallVector<int64_t> perm{0};
    if (back)
      perm.push_back(s + 1);
    for (int64_t i = 0; i < s; ++i)
      perm.push_back(back ? 1 + i : 2 + i);
    if (!back)
      perm.push_back(1);
    return perm;
  }

  /// `x` [N, spatial..., C] with its channels split into G groups: [N,
  /// spatial..., G, C/G].
  static Value splitChannels(OpBuilder &b, Location loc, Value x, int64_t G) {
    auto t = cast<RankedTensorType>(x.getType());
    int64_t r = t.getRank();
    SmallVector<OpFoldResult> sizes = sizesOf(b, loc, x);
    SmallVector<int64_t> shape(t.getShape().drop_back());
    shape.append({G, t.getDimSize(r - 1) / G});
    sizes.back() = b.getIndexAttr(G);
    sizes.push_back(b.getIndexAttr(t.getDimSize(r - 1) / G));
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i + 1 < r; ++i)
      groups.push_back({i});
    groups.push_back({r - 1, r});
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, t.getElementType()), x, groups,
        sizes);
  }

  /// A channels-last output [N, spatial..., F] (`sizes`, static but N) from
  /// the bias broadcast along its channels (or zeros), split into G groups.
  static Value channelsLastInit(OpBuilder &b, Location loc,
                                RankedTensorType type,
                                ArrayRef<OpFoldResult> sizes, Value bias,
                                Value zero, int64_t G) {
    MLIRContext *ctx = b.getContext();
    int64_t r = type.getRank();
    Value init;
    if (bias) {
      Value empty = emptyTensor(b, loc, type, sizes);
      init = linalg::GenericOp::create(
                 b, loc, TypeRange{type}, ValueRange{bias}, ValueRange{empty},
                 SmallVector<AffineMap>{
                     AffineMap::get(r, 0, {getAffineDimExpr(r - 1, ctx)}, ctx),
                     b.getMultiDimIdentityMap(r)},
                 SmallVector<IT>(r, IT::parallel),
                 [](OpBuilder &nb, Location l, ValueRange a) {
                   linalg::YieldOp::create(nb, l, a[0]);
                 })
                 .getResult(0);
    } else {
      init = filledTensor(b, loc, type, sizes, zero);
    }
    return splitChannels(b, loc, init, G);
  }

  /// [N, spatial..., G, Fg] merged back into [N, spatial..., G*Fg].
  static Value mergeChannels(OpBuilder &b, Location loc, Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    int64_t r = t.getRank();
    SmallVector<int64_t> shape(t.getShape().drop_back(2));
    shape.push_back(t.getDimSize(r - 2) * t.getDimSize(r - 1));
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i + 2 < r; ++i)
      groups.push_back({i});
    groups.push_back({r - 2, r - 1});
    return tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get(shape, t.getElementType()), v, groups);
  }

  /// `weight` [D, rest...] with its first dim split into G groups: [G,
  /// D/G, rest...] (a convolution's filters by groups of outputs, a
  /// transposed one's by groups of inputs).
  static Value splitFirstDim(OpBuilder &b, Location loc, Value weight,
                             int64_t G) {
    auto t = cast<RankedTensorType>(weight.getType());
    SmallVector<int64_t> shape{G, t.getDimSize(0) / G};
    SmallVector<ReassociationIndices> groups{{0, 1}};
    for (int64_t i = 1; i < t.getRank(); ++i) {
      shape.push_back(t.getDimSize(i));
      groups.push_back({i + 1});
    }
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, t.getElementType()), weight,
        groups);
  }

  /// The multiply-add generic of a channels-last convolution over `loops`
  /// loops (image xg, filters wg into init through the given maps), marked
  /// `attr` with the strides and dilations, its result's groups merged.
  static Value channelsLastGeneric(OpBuilder &b, Location loc, Value xg,
                                   Value wg, Value init, int64_t loops,
                                   ArrayRef<AffineExpr> inE,
                                   ArrayRef<AffineExpr> wE,
                                   ArrayRef<AffineExpr> outE,
                                   ArrayRef<IT> iters, StringRef attr,
                                   const ConvGeometry &geo) {
    MLIRContext *ctx = b.getContext();
    auto conv = linalg::GenericOp::create(
        b, loc, TypeRange{init.getType()}, ValueRange{xg, wg}, ValueRange{init},
        SmallVector<AffineMap>{AffineMap::get(loops, 0, inE, ctx),
                               AffineMap::get(loops, 0, wE, ctx),
                               AffineMap::get(loops, 0, outE, ctx)},
        iters, [](OpBuilder &nb, Location l, ValueRange a) {
          Value m = arith::MulFOp::create(nb, l, a[0], a[1]);
          linalg::YieldOp::create(
              nb, l, ValueRange{arith::AddFOp::create(nb, l, a[2], m)});
        });
    SmallVector<int64_t> geometry(geo.strides);
    geometry.append(geo.dilations.begin(), geo.dilations.end());
    conv->setAttr(attr, b.getDenseI64ArrayAttr(geometry));
    return mergeChannels(b, loc, conv.getResult(0));
  }

  /// The 2-D or 3-D convolution of `input` [N, C, spatial...] as the
  /// channels-last generic that dist-contractions-to-runtime turns into
  /// dist_rt_conv2d_nhwc_f32 or dist_rt_conv3d_nhwc_f32, between
  /// transposes: the input transposed to [N, spatial..., C] and padded
  /// (tensor.pad; the call's padding is 0), its channels split into groups
  /// [N, spatial..., G, Cg]; the weight read as stored, [G, Fg, Cg, K...];
  /// the output [N, O..., G, Fg] from the bias broadcast along its channels
  /// (or zeros), merged and transposed back to [N, F, O...]. Loops (n,
  /// o..., g, fg, k..., cg); the generic carries kChannelsLastConvAttr with
  /// the strides and dilations.
  static Value channelsLastConvolution(OpBuilder &b, Location loc, Value input,
                                       Value weight, Value bias,
                                       RankedTensorType outType,
                                       const ConvGeometry &geo, int64_t G,
                                       Value zero) {
    MLIRContext *ctx = b.getContext();
    Type elem = outType.getElementType();
    auto wType = cast<RankedTensorType>(weight.getType());
    int64_t s = outType.getRank() - 2;
    int64_t F = wType.getDimSize(0);
    Value x = transposed(b, loc, input, channelsLastPerm(s, false));
    auto xType = cast<RankedTensorType>(x.getType());
    if (llvm::any_of(geo.padBegin, [](int64_t p) { return p > 0; }) ||
        llvm::any_of(geo.padEnd, [](int64_t p) { return p > 0; })) {
      SmallVector<int64_t> shape(xType.getShape());
      SmallVector<OpFoldResult> lo(s + 2, b.getIndexAttr(0)),
          hi(s + 2, b.getIndexAttr(0));
      for (int64_t i = 0; i < s; ++i) {
        lo[1 + i] = b.getIndexAttr(geo.padBegin[i]);
        hi[1 + i] = b.getIndexAttr(geo.padEnd[i]);
        shape[1 + i] += geo.padBegin[i] + geo.padEnd[i];
      }
      x = tensor::PadOp::create(b, loc, RankedTensorType::get(shape, elem), x,
                                lo, hi, zero);
    }
    Value xg = splitChannels(b, loc, x, G);
    Value wg = splitFirstDim(b, loc, weight, G);
    SmallVector<int64_t> outShape{outType.getDimSize(0)};
    SmallVector<OpFoldResult> outSizes{tensor::getMixedSize(b, loc, input, 0)};
    for (int64_t i = 0; i < s; ++i) {
      outShape.push_back(geo.out[i]);
      outSizes.push_back(b.getIndexAttr(geo.out[i]));
    }
    outShape.push_back(F);
    outSizes.push_back(b.getIndexAttr(F));
    Value init = channelsLastInit(b, loc, RankedTensorType::get(outShape, elem),
                                  outSizes, bias, zero, G);
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    // Loops (n, o..., g, fg, k..., cg).
    int64_t loops = 2 * s + 4, g = s + 1, fg = s + 2, k0 = s + 3,
            cg = 2 * s + 3;
    SmallVector<AffineExpr> inE{d(0)}, wE{d(g), d(fg), d(cg)}, outE{d(0)};
    for (int64_t i = 0; i < s; ++i) {
      inE.push_back(d(1 + i) * geo.strides[i] + d(k0 + i) * geo.dilations[i]);
      wE.push_back(d(k0 + i));
      outE.push_back(d(1 + i));
    }
    inE.append({d(g), d(cg)});
    outE.append({d(g), d(fg)});
    SmallVector<IT> iters(s + 3, IT::parallel);
    iters.append(s + 1, IT::reduction);
    Value out =
        channelsLastGeneric(b, loc, xg, wg, init, loops, inE, wE, outE, iters,
                            dist::codegen::kChannelsLastConvAttr, geo);
    return transposed(b, loc, out, channelsLastPerm(s, true));
  }

  /// The 2-D or 3-D transposed convolution of `input` [N, C, spatial...]
  /// (weight [C, Fg, K...], ONNX's ConvTranspose) as the channels-last
  /// generic that dist-contractions-to-runtime turns into the same calls
  /// with kConvTransposed: the input transposed to [N, I..., C] and split
  /// into groups [N, I..., G, Cg]; the weight [G, Cg, Fg, K...]; every
  /// input position adds each tap's product to output position i*s + k*d
  /// of a whole [N, Ofull..., G, Fg] output (Ofull = (I-1)*s + (K-1)*d + 1,
  /// at least padBegin + O), which starts from the bias (or zeros) and is
  /// then cropped to [padBegin, padBegin + O), merged and transposed back.
  /// Loops (n, i..., g, fg, k..., cg); all but n, g and fg reductions (two
  /// input positions may reach one output); kChannelsLastConvTransposeAttr
  /// carries the strides and dilations. Needs padBegin >= 0.
  static Value channelsLastTransposed(OpBuilder &b, Location loc, Value input,
                                      Value weight, Value bias,
                                      RankedTensorType outType,
                                      const ConvGeometry &geo, int64_t G,
                                      Value zero) {
    MLIRContext *ctx = b.getContext();
    Type elem = outType.getElementType();
    auto wType = cast<RankedTensorType>(weight.getType());
    int64_t s = outType.getRank() - 2;
    int64_t Fg = wType.getDimSize(1);
    Value xg = splitChannels(
        b, loc, transposed(b, loc, input, channelsLastPerm(s, false)), G);
    Value wg = splitFirstDim(b, loc, weight, G);
    SmallVector<int64_t> fullShape{outType.getDimSize(0)};
    SmallVector<OpFoldResult> fullSizes{tensor::getMixedSize(b, loc, input, 0)};
    bool crop = false;
    for (int64_t i = 0; i < s; ++i) {
      int64_t reach = (geo.in[i] - 1) * geo.strides[i] +
                      (geo.kernel[i] - 1) * geo.dilations[i] + 1;
      int64_t full = std::max(reach, geo.padBegin[i] + geo.out[i]);
      crop = crop || full != geo.out[i];
      fullShape.push_back(full);
      fullSizes.push_back(b.getIndexAttr(full));
    }
    fullShape.push_back(G * Fg);
    fullSizes.push_back(b.getIndexAttr(G * Fg));
    Value init =
        channelsLastInit(b, loc, RankedTensorType::get(fullShape, elem),
                         fullSizes, bias, zero, G);
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    // Loops (n, i..., g, fg, k..., cg).
    int64_t loops = 2 * s + 4, g = s + 1, fg = s + 2, k0 = s + 3,
            cg = 2 * s + 3;
    SmallVector<AffineExpr> inE{d(0)}, wE{d(g), d(cg), d(fg)}, outE{d(0)};
    for (int64_t i = 0; i < s; ++i) {
      inE.push_back(d(1 + i));
      wE.push_back(d(k0 + i));
      outE.push_back(d(1 + i) * geo.strides[i] + d(k0 + i) * geo.dilations[i]);
    }
    inE.append({d(g), d(cg)});
    outE.append({d(g), d(fg)});
    SmallVector<IT> iters(loops, IT::reduction);
    iters[0] = iters[g] = iters[fg] = IT::parallel;
    Value out =
        channelsLastGeneric(b, loc, xg, wg, init, loops, inE, wE, outE, iters,
                            dist::codegen::kChannelsLastConvTransposeAttr, geo);
    if (crop) {
      SmallVector<OpFoldResult> offsets{b.getIndexAttr(0)}, sizes{fullSizes[0]},
          unit(s + 2, b.getIndexAttr(1));
      SmallVector<int64_t> shape{outType.getDimSize(0)};
      for (int64_t i = 0; i < s; ++i) {
        offsets.push_back(b.getIndexAttr(geo.padBegin[i]));
        sizes.push_back(b.getIndexAttr(geo.out[i]));
        shape.push_back(geo.out[i]);
      }
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(G * Fg));
      shape.push_back(G * Fg);
      out = tensor::ExtractSliceOp::create(b, loc,
                                           RankedTensorType::get(shape, elem),
                                           out, offsets, sizes, unit);
    }
    return transposed(b, loc, out, channelsLastPerm(s, true));
  }

  /// col[n, c, k..., o...] = in[n, c, o*s + k*d]; out[n, f, p] +=
  /// W[f, q] * col[n, q, p], for s = 1, 2 or 3 spatial dims.
  static Value im2col(OpBuilder &b, Location loc, Value padded, Value weight,
                      Value init, RankedTensorType outType,
                      const ConvGeometry &geo, Type origElem) {
    MLIRContext *ctx = b.getContext();
    auto pt = cast<RankedTensorType>(padded.getType());
    auto wt = cast<RankedTensorType>(weight.getType());
    Type elem = pt.getElementType();
    int64_t s = pt.getRank() - 2;
    int64_t C = pt.getDimSize(1), F = wt.getDimSize(0);
    int64_t taps = 1, positions = 1;
    ReassociationIndices wCK{1}, oSpatial;
    for (int64_t i = 0; i < s; ++i) {
      taps *= geo.kernel[i];
      positions *= geo.out[i];
      wCK.push_back(2 + i);
      oSpatial.push_back(2 + i);
    }
    int64_t N = pt.getDimSize(0);
    Value col = columns(b, loc, padded, geo);
    Value w2 = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({F, C * taps}, elem), weight,
        SmallVector<ReassociationIndices>{{0}, wCK});
    auto out3Type = RankedTensorType::get({N, F, positions}, elem);
    Value init3 =
        s == 1 ? init
               : tensor::CollapseShapeOp::create(
                     b, loc, out3Type, init,
                     SmallVector<ReassociationIndices>{{0}, {1}, oSpatial});
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    // Loops (n, f, p, q).
    SmallVector<AffineMap> maps{AffineMap::get(4, 0, {d(1), d(3)}, ctx),
                                AffineMap::get(4, 0, {d(0), d(3), d(2)}, ctx),
                                AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx)};
    Value out3 = buildContraction(
        b, loc, w2, col, init3, maps,
        {IT::parallel, IT::parallel, IT::parallel, IT::reduction}, origElem);
    if (s == 1)
      return out3;
    SmallVector<OpFoldResult> sizes{tensor::getMixedSize(b, loc, padded, 0),
                                    b.getIndexAttr(F)};
    for (int64_t i = 0; i < s; ++i)
      sizes.push_back(b.getIndexAttr(geo.out[i]));
    return tensor::ExpandShapeOp::create(
        b, loc, outType, out3,
        SmallVector<ReassociationIndices>{{0}, {1}, oSpatial}, sizes);
  }

  /// Direct convolution over expanded group dims:
  /// out[n, g, f, o...] += in[n, g, c, o*s + k*d] * W[g, f, c, k...].
  static Value direct(OpBuilder &b, Location loc, Value padded, Value weight,
                      Value init, RankedTensorType outType,
                      const ConvGeometry &geo, int64_t G, int64_t Cg,
                      int64_t Fg, Type origElem) {
    MLIRContext *ctx = b.getContext();
    int64_t s = cast<RankedTensorType>(padded.getType()).getRank() - 2;
    GroupedOperands ops =
        groupOperands(b, loc, padded, weight, init, G, Cg, Fg);
    // Loops: n, g, f, o_1..o_s, c, k_1..k_s.
    int64_t numLoops = 3 + s + 1 + s;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    int64_t oBase = 3, cDim = 3 + s, kBase = 4 + s;
    SmallVector<AffineExpr> inE{d(0), d(1), d(cDim)};
    SmallVector<AffineExpr> wE{d(1), d(2), d(cDim)};
    SmallVector<AffineExpr> oE{d(0), d(1), d(2)};
    for (int64_t i = 0; i < s; ++i) {
      inE.push_back(d(oBase + i) * geo.strides[i] +
                    d(kBase + i) * geo.dilations[i]);
      wE.push_back(d(kBase + i));
      oE.push_back(d(oBase + i));
    }
    SmallVector<IT> iters(3 + s, IT::parallel);
    iters.append(1 + s, IT::reduction);
    Value r = buildContraction(b, loc, ops.input, ops.weight, ops.init,
                               {AffineMap::get(numLoops, 0, inE, ctx),
                                AffineMap::get(numLoops, 0, wE, ctx),
                                AffineMap::get(numLoops, 0, oE, ctx)},
                               iters, origElem);
    return ungroup(b, loc, r, outType);
  }
};

/// dw[f, (c, kh, kw)] = sum over n, p of dy[n, f, p] * col[n, (c, kh, kw), p]
/// with the forward convolution's im2col columns: one F x C*KH*KW x OH*OW
/// product per sample (the columns read transposed), summed into dw, which
/// dist-contractions-to-runtime runs as a GEMM batch with a zero output
/// stride.
struct ConvWeightGradLowering : OpConversionPattern<dist::ConvWeightGradOp> {
  ConvWeightGradLowering(TypeConverter &tc, MLIRContext *ctx, bool directConv)
      : OpConversionPattern(tc, ctx), directConv(directConv) {}
  bool directConv;
  LogicalResult
  matchAndRewrite(dist::ConvWeightGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput(), dy = adaptor.getOutputGrad();
    auto xType = cast<RankedTensorType>(x.getType());
    auto dyType = cast<RankedTensorType>(dy.getType());
    auto outType =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    if (xType.getRank() != 4 || !outType.hasStaticShape() ||
        llvm::any_of(dyType.getShape().drop_front(), ShapedType::isDynamic))
      return notSupported(op, "a convolution weight gradient that is not 2-D "
                              "with static channels and sizes");
    // The result plays the weight ([F, C, k...]) and dy the output.
    auto geo = convGeometry(op, xType, outType, dyType, op.getStrides(),
                            op.getDilations(), op.getPads(), "NOTSET",
                            /*transpose=*/false);
    if (failed(geo))
      return failure();
    Type elem = outType.getElementType();
    Value zero = scalarConst(rewriter, loc, elem, 0);
    Value padded =
        padSpatial(rewriter, loc, x, geo->padBegin, geo->padEnd, zero);
    int64_t F = outType.getDimSize(0), C = outType.getDimSize(1);
    if (useDirectConv(directConv, cast<RankedTensorType>(padded.getType()),
                      *geo)) {
      // dw[f, c, i, j] += dy[b, f, y, x] * xp[b, c, y*s + i*d, x*s + j*d]
      // over loops (f, c, i, j, b, y, x), which
      // dist-contractions-to-runtime turns into the runtime's direct weight
      // gradient (no columns).
      auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
      SmallVector<AffineMap> maps{
          AffineMap::get(7, 0, {d(4), d(0), d(5), d(6)}, ctx),
          AffineMap::get(7, 0,
                         {d(4), d(1),
                          d(5) * geo->strides[0] + d(2) * geo->dilations[0],
                          d(6) * geo->strides[1] + d(3) * geo->dilations[1]},
                         ctx),
          AffineMap::get(7, 0, {d(0), d(1), d(2), d(3)}, ctx)};
      Value init = filledTensor(rewriter, loc, outType, {}, zero);
      SmallVector<IT> iters(4, IT::parallel);
      iters.append(3, IT::reduction);
      rewriter.replaceOp(op,
                         buildContraction(rewriter, loc, dy, padded, init, maps,
                                          iters, elemTypeOf(op.getInput())));
      return success();
    }
    Value col = columns(rewriter, loc, padded, *geo);
    int64_t CKK = C * geo->kernel[0] * geo->kernel[1];
    int64_t P = geo->out[0] * geo->out[1];
    Value dy3 = tensor::CollapseShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({dyType.getDimSize(0), F, P}, elem), dy,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
    auto dw2Type = RankedTensorType::get({F, CKK}, elem);
    Value init = filledTensor(rewriter, loc, dw2Type, {}, zero);
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    // Loops (n, f, q, p).
    SmallVector<AffineMap> maps{AffineMap::get(4, 0, {d(0), d(1), d(3)}, ctx),
                                AffineMap::get(4, 0, {d(0), d(2), d(3)}, ctx),
                                AffineMap::get(4, 0, {d(1), d(2)}, ctx)};
    Value dw2 = buildContraction(
        rewriter, loc, dy3, col, init, maps,
        {IT::reduction, IT::parallel, IT::parallel, IT::reduction},
        elemTypeOf(op.getInput()));
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
        op, outType, dw2, SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
    return success();
  }
};

/// The input position a transposed convolution's output `o` reads through
/// tap `k` along spatial dim `i`: q = (o + pad - k*d) / s when that divides
/// and lies in [0, I). Returns q (0 where out of range) and ands its
/// validity into `valid`.
Value transposedSource(OpBuilder &b, Location l, Value o, Value k,
                       const ConvGeometry &geo, int64_t i, Value &valid) {
  Value zeroI = arith::ConstantIndexOp::create(b, l, 0);
  Value t = arith::SubIOp::create(
      b, l,
      arith::AddIOp::create(
          b, l, o, arith::ConstantIndexOp::create(b, l, geo.padBegin[i])),
      arith::MulIOp::create(
          b, l, k, arith::ConstantIndexOp::create(b, l, geo.dilations[i])));
  Value sV = arith::ConstantIndexOp::create(b, l, geo.strides[i]);
  Value nonNeg =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, t, zeroI);
  Value tc = arith::SelectOp::create(b, l, nonNeg, t, zeroI);
  Value q = arith::DivUIOp::create(b, l, tc, sV);
  Value r = arith::RemUIOp::create(b, l, tc, sV);
  Value divisible =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, r, zeroI);
  Value inRange =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, q,
                            arith::ConstantIndexOp::create(b, l, geo.in[i]));
  valid = arith::AndIOp::create(b, l, valid, nonNeg);
  valid = arith::AndIOp::create(b, l, valid, divisible);
  valid = arith::AndIOp::create(b, l, valid, inRange);
  return arith::SelectOp::create(b, l, inRange, q, zeroI);
}

struct ConvTransposeLowering : OpConversionPattern<dist::ConvTransposeOp> {
  ConvTransposeLowering(TypeConverter &tc, MLIRContext *ctx, bool channelsLast)
      : OpConversionPattern(tc, ctx), channelsLast(channelsLast) {}
  bool channelsLast;
  LogicalResult
  matchAndRewrite(dist::ConvTransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = adaptor.getInput(), weight = adaptor.getWeight();
    auto inType = cast<RankedTensorType>(input.getType());
    auto wType = cast<RankedTensorType>(weight.getType());
    auto outType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    Type elem = outType.getElementType();
    int64_t s = inType.getRank() - 2;
    auto geo = convGeometry(op, inType, wType, outType, op.getStrides(),
                            op.getDilations(), op.getPads(), op.getAutoPad(),
                            /*transpose=*/true);
    if (failed(geo))
      return failure();
    // Resolve the begin padding: with auto_pad or output_shape it follows
    // from the total padding (ONNX ConvTranspose).
    SmallVector<int64_t> outPad(s, 0);
    if (auto op_ = op.getOutputPadding(); op_ && (int64_t)op_->size() == s)
      outPad.assign(op_->begin(), op_->end());
    StringRef autoPad = op.getAutoPad();
    for (int64_t i = 0; i < s; ++i) {
      int64_t total = geo->strides[i] * (geo->in[i] - 1) + outPad[i] +
                      (geo->kernel[i] - 1) * geo->dilations[i] + 1 -
                      geo->out[i];
      // Floor division, as ONNX's reference (total may be negative when
      // output_shape asks for more than the natural size).
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      if (autoPad == "SAME_UPPER")
        geo->padBegin[i] = half;
      else if (autoPad == "SAME_LOWER" || op.getOutputShape())
        geo->padBegin[i] = total - half;
      else if (autoPad == "VALID")
        geo->padBegin[i] = 0;
    }
    int64_t G = op.getGroup();
    int64_t C = inType.getDimSize(1);
    int64_t Fg = wType.getDimSize(1);
    if (ShapedType::isDynamic(C) || ShapedType::isDynamic(Fg) || G <= 0 ||
        C % G)
      return notSupported(op, "a transposed convolution with these channels");
    int64_t Cg = C / G;
    SmallVector<OpFoldResult> outSizes = sizesOf(rewriter, loc, input);
    outSizes[1] = rewriter.getIndexAttr(G * Fg);
    for (int64_t i = 0; i < s; ++i)
      outSizes[i + 2] = rewriter.getIndexAttr(geo->out[i]);
    Value zero = scalarConst(rewriter, loc, elem, 0);
    // Channels-last on oneDNN's deconvolution (an encoder-decoder's 2x2
    // upsampling as a product and col2im loops wrote its NCHW output and
    // a transposed copy of it into the next layer's channels-last input).
    if (channelsLast && (s == 2 || s == 3) && elem.isF32() &&
        !ShapedType::isDynamic(Fg) &&
        llvm::all_of(inType.getShape().drop_front(2),
                     [](int64_t d) { return !ShapedType::isDynamic(d); }) &&
        llvm::all_of(geo->padBegin, [](int64_t p) { return p >= 0; })) {
      rewriter.replaceOp(op, ConvLowering::channelsLastTransposed(
                                 rewriter, loc, input, weight,
                                 adaptor.getBias(), outType, *geo, G, zero));
      return success();
    }
    Value init = channelInit(rewriter, loc, outType, outSizes,
                             adaptor.getBias(), zero);
    if (G == 1 && (elem.isF32() || elem.isF64()) &&
        !ShapedType::isDynamic(Fg) &&
        llvm::all_of(inType.getShape().drop_front(2),
                     [](int64_t d) { return !ShapedType::isDynamic(d); })) {
      rewriter.replaceOp(op,
                         viaProduct(rewriter, loc, input, weight, init, outType,
                                    *geo, elemTypeOf(op.getInput())));
      return success();
    }
    // Loops: n, o_c (output channel), o_1..o_s, c (within group), k_1..k_s.
    // A dummy [Cg, k...] operand gives the reduction loops their ranges.
    SmallVector<int64_t> dummyShape{Cg};
    dummyShape.append(geo->kernel.begin(), geo->kernel.end());
    Value dummy = tensor::EmptyOp::create(
        rewriter, loc, RankedTensorType::get(dummyShape, elem), ValueRange{});
    int64_t numLoops = 2 + s + 1 + s;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> dE{d(2 + s)}, oE;
    for (int64_t i = 0; i < s; ++i)
      dE.push_back(d(3 + s + i));
    for (int64_t i = 0; i < 2 + s; ++i)
      oE.push_back(d(i));
    SmallVector<IT> iters(2 + s, IT::parallel);
    iters.append(1 + s, IT::reduction);
    auto g = linalg::GenericOp::create(
        rewriter, loc, TypeRange{outType}, ValueRange{dummy}, ValueRange{init},
        SmallVector<AffineMap>{AffineMap::get(numLoops, 0, dE, ctx),
                               AffineMap::get(numLoops, 0, oE, ctx)},
        iters, [&](OpBuilder &b, Location l, ValueRange a) {
          Value n = linalg::IndexOp::create(b, l, 0);
          Value oc = linalg::IndexOp::create(b, l, 1);
          Value c = linalg::IndexOp::create(b, l, 2 + s);
          Value fgV = arith::ConstantIndexOp::create(b, l, Fg);
          Value grp = arith::DivUIOp::create(b, l, oc, fgV);
          Value f = arith::RemUIOp::create(b, l, oc, fgV);
          Value ic = arith::AddIOp::create(
              b, l,
              arith::MulIOp::create(b, l, grp,
                                    arith::ConstantIndexOp::create(b, l, Cg)),
              c);
          Value valid = arith::ConstantIntOp::create(b, l, 1, 1);
          SmallVector<Value> inIdx{n, ic}, wIdx{ic, f};
          for (int64_t i = 0; i < s; ++i) {
            Value o = linalg::IndexOp::create(b, l, 2 + i);
            Value k = linalg::IndexOp::create(b, l, 3 + s + i);
            inIdx.push_back(transposedSource(b, l, o, k, *geo, i, valid));
            wIdx.push_back(k);
          }
          Value x = tensor::ExtractOp::create(b, l, input, inIdx);
          Value w = tensor::ExtractOp::create(b, l, weight, wIdx);
          Value z = scalarConst(b, l, elem, 0);
          Value p = mulScalars(b, l, x, w);
          p = arith::SelectOp::create(b, l, valid, p, z);
          Value acc = addScalars(b, l, a[1], p);
          linalg::YieldOp::create(b, l, acc);
        });
    rewriter.replaceOp(op, g.getResult(0));
    return success();
  }

  /// One group, f32/f64: one product computes every tap's contribution,
  /// cols[n, (f, k...), i...] = sum_c W[c, (f, k...)] * in[n, c, i...] (the
  /// runtime's GEMM, the weight read transposed), then each tap adds its
  /// columns into the outputs it reaches: out[n, f, q*s + k*d - pad...] +=
  /// cols[n, f, k..., q...] where that lies inside (col2im). The loop nest over
  /// every (output, channel, tap) that the general lowering builds ran an
  /// encoder-decoder's 2x2 upsampling 20x slower than onnxruntime.
  static Value viaProduct(OpBuilder &b, Location loc, Value input, Value weight,
                          Value init, RankedTensorType outType,
                          const ConvGeometry &geo, Type origElem) {
    MLIRContext *ctx = b.getContext();
    auto inType = cast<RankedTensorType>(input.getType());
    auto wType = cast<RankedTensorType>(weight.getType());
    Type elem = inType.getElementType();
    int64_t s = inType.getRank() - 2;
    int64_t C = inType.getDimSize(1), F = wType.getDimSize(1);
    int64_t taps = 1, positions = 1;
    ReassociationIndices fk{1}, spatial;
    SmallVector<int64_t> colsShape{inType.getDimSize(0), F};
    for (int64_t i = 0; i < s; ++i) {
      taps *= geo.kernel[i];
      positions *= geo.in[i];
      fk.push_back(2 + i);
      spatial.push_back(2 + i);
      colsShape.push_back(geo.kernel[i]);
    }
    for (int64_t i = 0; i < s; ++i)
      colsShape.push_back(geo.in[i]);
    Value w2 = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({C, F * taps}, elem), weight,
        SmallVector<ReassociationIndices>{{0}, fk});
    int64_t N = inType.getDimSize(0);
    Value x3 =
        s == 1
            ? input
            : tensor::CollapseShapeOp::create(
                  b, loc, RankedTensorType::get({N, C, positions}, elem), input,
                  SmallVector<ReassociationIndices>{{0}, {1}, spatial});
    SmallVector<OpFoldResult> colsSizes{tensor::getMixedSize(b, loc, input, 0),
                                        b.getIndexAttr(F * taps),
                                        b.getIndexAttr(positions)};
    auto cols3Type = RankedTensorType::get({N, F * taps, positions}, elem);
    Value zeros = filledTensor(b, loc, cols3Type, colsSizes,
                               scalarConst(b, loc, elem, 0));
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    // Loops (n, q, p, c).
    Value cols3 = buildContraction(
        b, loc, w2, x3, zeros,
        {AffineMap::get(4, 0, {d(3), d(1)}, ctx),
         AffineMap::get(4, 0, {d(0), d(3), d(2)}, ctx),
         AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx)},
        {IT::parallel, IT::parallel, IT::parallel, IT::reduction}, origElem);
    // [N, F*K..., I...] -> [N, F, K..., I...].
    ReassociationIndices fkOut{1}, iOut;
    for (int64_t i = 0; i < s; ++i) {
      fkOut.push_back(2 + i);
      iOut.push_back(2 + s + i);
    }
    SmallVector<OpFoldResult> expSizes{tensor::getMixedSize(b, loc, input, 0),
                                       b.getIndexAttr(F)};
    for (int64_t i = 0; i < s; ++i)
      expSizes.push_back(b.getIndexAttr(geo.kernel[i]));
    for (int64_t i = 0; i < s; ++i)
      expSizes.push_back(b.getIndexAttr(geo.in[i]));
    Value cols = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(colsShape, elem), cols3,
        SmallVector<ReassociationIndices>{{0}, fkOut, iOut}, expSizes);
    // col2im, one tap at a time: tap k adds cols[n, f, k..., q...] to
    // out[n, f, q*s + k*d - pad...] for the q whose output lies inside, a
    // strided slice of the output that bufferization updates in place.
    // One loop per output and tap that divided and checked (o + pad - k*d)
    // by s took 13% of a U-Net's inference (its two 2x2 upsamplings, 3
    // times onnxruntime's ConvTranspose); these loops read and write only
    // what each tap touches.
    Value acc = init;
    SmallVector<int64_t> tap(s, 0);
    for (int64_t t = 0; t < taps; ++t) {
      for (int64_t i = s - 1, rest = t; i >= 0; --i) {
        tap[i] = rest % geo.kernel[i];
        rest /= geo.kernel[i];
      }
      SmallVector<OpFoldResult> srcOff(2 + 2 * s, b.getIndexAttr(0)),
          srcSizes{expSizes[0], b.getIndexAttr(F)},
          srcStrides(2 + 2 * s, b.getIndexAttr(1));
      SmallVector<OpFoldResult> dstOff(2 + s, b.getIndexAttr(0)),
          dstSizes{expSizes[0], b.getIndexAttr(F)}, dstStrides(2 + s);
      dstStrides[0] = dstStrides[1] = b.getIndexAttr(1);
      SmallVector<int64_t> sliceShape{inType.getDimSize(0), F};
      bool empty = false;
      for (int64_t i = 0; i < s; ++i) {
        int64_t st = geo.strides[i];
        int64_t off = tap[i] * geo.dilations[i] - geo.padBegin[i];
        // q in [q0, q1): 0 <= q < in and 0 <= q*st + off < out.
        int64_t q0 = off >= 0 ? 0 : (-off + st - 1) / st;
        int64_t last = geo.out[i] - 1 - off;
        int64_t q1 = last < 0 ? 0 : std::min<int64_t>(geo.in[i], last / st + 1);
        if (q1 <= q0) {
          empty = true;
          break;
        }
        srcSizes.push_back(b.getIndexAttr(1));
        srcOff[2 + i] = b.getIndexAttr(tap[i]);
        srcOff[2 + s + i] = b.getIndexAttr(q0);
        dstOff[2 + i] = b.getIndexAttr(q0 * st + off);
        dstStrides[2 + i] = b.getIndexAttr(st);
        sliceShape.push_back(q1 - q0);
      }
      if (empty)
        continue;
      for (int64_t i = 0; i < s; ++i) {
        srcSizes.push_back(b.getIndexAttr(sliceShape[2 + i]));
        dstSizes.push_back(b.getIndexAttr(sliceShape[2 + i]));
      }
      auto sliceType = RankedTensorType::get(sliceShape, elem);
      Value src = tensor::ExtractSliceOp::create(b, loc, sliceType, cols,
                                                 srcOff, srcSizes, srcStrides);
      Value dst = tensor::ExtractSliceOp::create(b, loc, sliceType, acc, dstOff,
                                                 dstSizes, dstStrides);
      AffineMap id = b.getMultiDimIdentityMap(2 + s);
      Value sum =
          linalg::GenericOp::create(
              b, loc, TypeRange{sliceType}, ValueRange{src}, ValueRange{dst},
              SmallVector<AffineMap>{id, id},
              SmallVector<IT>(2 + s, IT::parallel),
              [&](OpBuilder &nb, Location l, ValueRange a) {
                linalg::YieldOp::create(nb, l, addScalars(nb, l, a[1], a[0]));
              })
              .getResult(0);
      acc = tensor::InsertSliceOp::create(b, loc, sum, acc, dstOff, dstSizes,
                                          dstStrides);
    }
    return acc;
  }
};

} // namespace

void codegen::populateLinearAlgebraLowering(TypeConverter &tc,
                                            RewritePatternSet &p,
                                            bool directConv,
                                            bool directDepthwise,
                                            bool channelsLast) {
  p.add<MatMulLowering, EinsumLowering, GemmLowering>(tc, p.getContext());
  p.add<ConvTransposeLowering>(tc, p.getContext(), channelsLast);
  p.add<ConvLowering>(tc, p.getContext(), directConv, directDepthwise,
                      channelsLast);
  p.add<ConvWeightGradLowering>(tc, p.getContext(), directConv);
}
