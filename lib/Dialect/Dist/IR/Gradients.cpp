//===- Gradients.cpp - reverse-mode rules of the dist graph ops ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// The default implementation of GradientOpInterface::buildGradient: one rule
// per differentiable graph op, written with dist ops so that the backward
// graph is compiled like the forward one. Rules take the gradients of the
// op's results (null for a result nothing depends on) and return one
// gradient per operand (null for an operand without one: integer indices,
// shapes, conditions, or a piecewise-constant op like Floor).
//
// Broadcasting operands get their gradient summed over the broadcast axes
// (`unbroadcast`). A dimension that is dynamic in both the operand and the
// result is taken to be equal, which holds for the dynamic batch dimension
// of imported models; anything the rules cannot express with the shapes at
// hand fails with an error naming the op and the reason.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/Einsum.h"
#include "dist/Dialect/Dist/IR/GraphBuilder.h"
#include "dist/Dialect/Dist/IR/ShapeUtils.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>
#include <map>
#include <numeric>

using namespace mlir;
using namespace mlir::dist;

namespace {

using Grads = SmallVector<Value>;
using GradResult = FailureOr<Grads>;

/// `axis` in [0, rank); the op's verifier has checked its range.
int64_t normAxis(int64_t axis, int64_t rank) {
  return normalizeAxis(axis, rank).value_or(axis);
}

LogicalResult unsupported(Operation *op, const Twine &why) {
  return op->emitOpError("has no gradient rule for ") << why;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Rules of unary elementwise ops: dx from x, y and dy.
FailureOr<Value> unaryGrad(GraphBuilder &g, Operation *op, Value x, Value y,
                           Value dy) {
  auto fAttr = [&](StringRef name, double dflt) {
    if (auto a = op->getAttrOfType<FloatAttr>(name))
      return a.getValueAsDouble();
    return dflt;
  };
  auto c = [&](double v) { return g.scalarLike(x, v); };
  return TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case([&](NegOp) { return g.neg(dy); })
      .Case([&](AbsOp) { return g.mul(dy, g.one<SignOp>({x})); })
      .Case([&](ExpOp) { return g.mul(dy, y); })
      .Case([&](LogOp) { return g.div(dy, x); })
      .Case([&](SqrtOp) { return g.div(g.mulC(dy, 0.5), y); })
      .Case([&](ReciprocalOp) { return g.neg(g.mul(dy, g.mul(y, y))); })
      .Case([&](SinOp) { return g.mul(dy, g.one<CosOp>({x})); })
      .Case([&](CosOp) { return g.neg(g.mul(dy, g.one<SinOp>({x}))); })
      .Case([&](TanOp) { return g.mul(dy, g.add(c(1), g.mul(y, y))); })
      .Case([&](AsinOp) {
        return g.div(dy, g.one<SqrtOp>({g.sub(c(1), g.mul(x, x))}));
      })
      .Case([&](AcosOp) {
        return g.neg(g.div(dy, g.one<SqrtOp>({g.sub(c(1), g.mul(x, x))})));
      })
      .Case([&](AtanOp) { return g.div(dy, g.add(c(1), g.mul(x, x))); })
      .Case([&](SinhOp) { return g.mul(dy, g.one<CoshOp>({x})); })
      .Case([&](CoshOp) { return g.mul(dy, g.one<SinhOp>({x})); })
      .Case([&](AsinhOp) {
        return g.div(dy, g.one<SqrtOp>({g.add(g.mul(x, x), c(1))}));
      })
      .Case([&](AcoshOp) {
        return g.div(dy, g.one<SqrtOp>({g.sub(g.mul(x, x), c(1))}));
      })
      .Case([&](AtanhOp) { return g.div(dy, g.sub(c(1), g.mul(x, x))); })
      .Case([&](TanhOp) { return g.mul(dy, g.sub(c(1), g.mul(y, y))); })
      .Case([&](SigmoidOp) { return g.mul(dy, g.mul(y, g.sub(c(1), y))); })
      .Case([&](ReluOp) { return g.maskIn(g.greaterZero(x), dy); })
      .Case([&](LeakyReluOp) {
        return g.where(g.greaterZero(x), dy, g.mulC(dy, fAttr("alpha", 0.01)));
      })
      .Case([&](EluOp) {
        double a = fAttr("alpha", 1.0);
        return g.where(g.greaterZero(x), dy, g.mul(dy, g.add(y, c(a))));
      })
      .Case([&](SeluOp) {
        double a = fAttr("alpha", 1.67326319217681884765625);
        double gm = fAttr("gamma", 1.05070102214813232421875);
        return g.where(g.greaterZero(x), g.mulC(dy, gm),
                       g.mul(dy, g.add(y, c(a * gm))));
      })
      .Case([&](CeluOp) {
        double a = fAttr("alpha", 1.0);
        return g.where(g.greaterZero(x), dy,
                       g.mul(dy, g.exp(g.mulC(x, 1.0 / a))));
      })
      .Case([&](SoftplusOp) { return g.mul(dy, g.one<SigmoidOp>({x})); })
      .Case([&](SoftsignOp) {
        Value d = g.add(c(1), g.one<AbsOp>({x}));
        return g.div(dy, g.mul(d, d));
      })
      .Case([&](HardSigmoidOp) {
        double a = fAttr("alpha", 0.2), be = fAttr("beta", 0.5);
        Value t = g.add(g.mulC(x, a), c(be));
        Value in = g.one<AndOp>(
            {g.one<GreaterOp>({t, c(0)}), g.one<LessOp>({t, c(1)})});
        return g.maskIn(in, g.mulC(dy, a));
      })
      .Case([&](HardSwishOp) {
        // y = x * clamp(x / 6 + 1/2, 0, 1): 0 below -3, 1 above 3,
        // (2x + 3) / 6 between.
        Value mid = g.add(g.mulC(x, 1.0 / 3.0), c(0.5));
        Value inner = g.where(g.one<LessOp>({x, c(3)}), g.mul(dy, mid), dy);
        return g.maskIn(g.one<GreaterOp>({x, c(-3)}), inner);
      })
      .Case([&](ErfOp) {
        Value e = g.exp(g.neg(g.mul(x, x)));
        return g.mul(dy, g.mulC(e, 2.0 / std::sqrt(M_PI)));
      })
      .Case([&](GeluOp gelu) -> FailureOr<Value> {
        if (gelu.getApproximate() == "tanh") {
          // u = k (x + 0.044715 x^3), y = x/2 (1 + tanh u)
          double k = std::sqrt(2.0 / M_PI);
          Value x2 = g.mul(x, x);
          Value u = g.mulC(g.mul(x, g.add(c(1), g.mulC(x2, 0.044715))), k);
          Value t = g.one<TanhOp>({u});
          Value du = g.mulC(g.add(c(1), g.mulC(x2, 3 * 0.044715)), k);
          Value left = g.mulC(g.add(c(1), t), 0.5);
          Value right =
              g.mul(g.mulC(x, 0.5), g.mul(g.sub(c(1), g.mul(t, t)), du));
          return g.mul(dy, g.add(left, right));
        }
        // Phi(x) + x phi(x)
        Value cdf = g.mulC(
            g.add(c(1), g.one<ErfOp>({g.mulC(x, 1.0 / std::sqrt(2.0))})), 0.5);
        Value pdf = g.mulC(g.exp(g.mulC(g.mul(x, x), -0.5)),
                           1.0 / std::sqrt(2.0 * M_PI));
        return g.mul(dy, g.add(cdf, g.mul(x, pdf)));
      })
      .Case<FloorOp, CeilOp, RoundOp, SignOp>(
          [&](Operation *) { return Value(); })
      .Default([&](Operation *) -> FailureOr<Value> {
        return unsupported(op, "this op");
      });
}

/// Add, Sub, Mul, Div, Pow with broadcasting.
FailureOr<Grads> binaryGrad(GraphBuilder &g, Operation *op, Value dy) {
  Value a = op->getOperand(0), bb = op->getOperand(1), y = op->getResult(0);
  Value da, db;
  if (isa<AddOp>(op)) {
    da = dy;
    db = dy;
  } else if (isa<SubOp>(op)) {
    da = dy;
    db = g.neg(dy);
  } else if (isa<MulOp>(op)) {
    da = g.mul(dy, bb);
    db = g.mul(dy, a);
  } else if (isa<DivOp>(op)) {
    da = g.div(dy, bb);
    db = g.neg(g.div(g.mul(dy, y), bb));
  } else if (isa<PowOp>(op)) {
    Value bm1 = g.sub(bb, g.scalarLike(bb, 1));
    if (g.elemOf(bb) != g.elemOf(a))
      bm1 = g.castTo(bm1, g.elemOf(a));
    Value ba = g.elemOf(bb) != g.elemOf(a) ? g.castTo(bb, g.elemOf(a)) : bb;
    da = g.mul(dy, g.mul(ba, g.one<PowOp>({a, bm1})));
    if (isa<FloatType>(g.elemOf(bb))) {
      Value l = g.one<LogOp>({a});
      db = g.mul(dy, g.mul(y, l));
      if (g.elemOf(bb) != g.elemOf(a))
        db = g.castTo(db, g.elemOf(bb));
    }
  } else {
    return unsupported(op, "this op"), failure();
  }
  return Grads{g.unbroadcast(da, a), db ? g.unbroadcast(db, bb) : Value()};
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

GradResult matmulGrad(GraphBuilder &g, MatMulOp op, Value dy) {
  Value a = op.getLhs(), b = op.getRhs();
  bool a1 = g.typeOf(a).getRank() == 1, b1 = g.typeOf(b).getRank() == 1;
  Value a2 = a1 ? g.unsqueeze(a, {0}) : a;
  Value b2 = b1 ? g.unsqueeze(b, {1}) : b;
  Value dy2 = dy;
  if (b1)
    dy2 = g.unsqueeze(dy2, {g.typeOf(dy2).getRank()});
  if (a1)
    dy2 = g.unsqueeze(dy2, {g.typeOf(dy2).getRank() - 1});
  Value da = g.one<MatMulOp>({dy2, g.transposeLast2(b2)});
  Value db;
  int64_t ar = g.typeOf(a2).getRank();
  if (g.typeOf(b2).getRank() == 2 && ar > 2) {
    // A weight shared by every batch row (a Linear layer on [B, T, K]):
    // one [K, B*T] x [B*T, N] product instead of B batched products summed
    // afterwards (same FLOPs, but a long inner dimension and no [B, K, N]
    // temporary).
    int64_t k = g.typeOf(a2).getDimSize(ar - 1);
    int64_t n = g.typeOf(dy2).getDimSize(ar - 1);
    if (!ShapedType::isDynamic(k) && !ShapedType::isDynamic(n))
      db = g.one<MatMulOp>(
          {g.transposeLast2(g.reshape(a2, {-1, k})), g.reshape(dy2, {-1, n})});
  }
  if (!db)
    db = g.one<MatMulOp>({g.transposeLast2(a2), dy2});
  da = g.reshapeLike(g.unbroadcast(da, a2), a);
  db = g.reshapeLike(g.unbroadcast(db, b2), b);
  return Grads{da, db};
}

GradResult gemmGrad(GraphBuilder &g, GemmOp op, Value dy) {
  bool ta = op.getTransA() != 0, tb = op.getTransB() != 0;
  auto alpha = op->getAttr("alpha") ? op.getAlphaAttr() : FloatAttr();
  SmallVector<NamedAttribute> al;
  if (alpha)
    al.push_back(g.attr("alpha", alpha));
  auto gemm = [&](Value x, Value y, bool tx, bool ty) {
    SmallVector<NamedAttribute> attrs(al);
    attrs.push_back(g.i64("trans_a", tx));
    attrs.push_back(g.i64("trans_b", ty));
    return g.one<GemmOp>({x, y}, attrs);
  };
  Value da =
      ta ? gemm(op.getB(), dy, tb, true) : gemm(dy, op.getB(), false, !tb);
  Value db =
      tb ? gemm(dy, op.getA(), true, ta) : gemm(op.getA(), dy, !ta, false);
  Grads out{da, db};
  if (Value c = op.getC()) {
    double beta = op.getBeta().convertToDouble();
    Value dc = beta == 1.0 ? dy : g.mulC(dy, beta);
    out.push_back(g.unbroadcast(dc, c));
  }
  return out;
}

/// Whether every dimension of `t` but the first (the batch, which a model
/// exported with a dynamic batch leaves unknown) is static: the gradients of
/// convolutions and pooling read channel and spatial sizes only.
bool staticBeyondBatch(RankedTensorType t) {
  return t.getRank() > 0 &&
         llvm::none_of(t.getShape().drop_front(), ShapedType::isDynamic);
}

/// Explicit begin/end pads of a conv-like op with static spatial dims.
FailureOr<SmallVector<int64_t>>
explicitPads(Operation *op, StringRef autoPad, ArrayRef<int64_t> inDims,
             ArrayRef<int64_t> outDims, ArrayRef<int64_t> kernel,
             ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
             std::optional<ArrayRef<int64_t>> pads) {
  size_t n = kernel.size();
  if (autoPad == "NOTSET") {
    if (pads)
      return SmallVector<int64_t>(pads->begin(), pads->end());
    return SmallVector<int64_t>(2 * n, 0);
  }
  if (autoPad == "VALID")
    return SmallVector<int64_t>(2 * n, 0);
  SmallVector<int64_t> out(2 * n);
  for (size_t i = 0; i < n; ++i) {
    int64_t total = std::max<int64_t>(0, (outDims[i] - 1) * strides[i] +
                                             (kernel[i] - 1) * dilations[i] +
                                             1 - inDims[i]);
    int64_t small = total / 2, large = total - small;
    bool upper = autoPad == "SAME_UPPER";
    out[i] = upper ? small : large;
    out[i + n] = upper ? large : small;
  }
  return out;
}

/// Gradient of a convolution's weight: sum over the batch and positions of
/// x * dy. `x` is [N, C, S...], `dy` is [N, O, So...]; returns [O, C, k...].
/// A 2-D f32/f64 convolution (each group's slice of a grouped one, and a
/// transposed convolution with x and dy swapped) gets
/// dist.conv_weight_grad, which codegen runs on the
/// forward convolution's im2col columns (unit-stride copies) with one
/// product per sample of O x C*k x So. Other ranks use a convolution of x
/// (channels and batch swapped) with dy as the kernel (strides and
/// dilations swapped), cut to the kernel size; on 2-D that form's im2col
/// copies runs as short as the kernel (measured on the residual CNN's
/// training step: 27% of it in those copies at 6 GB/s).
Value convWeightGrad(GraphBuilder &g, Value x, Value dy,
                     ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                     ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads) {
  int64_t r = g.typeOf(x).getRank();
  Type elem = g.typeOf(x).getElementType();
  if (r == 4 && (elem.isF32() || elem.isF64()))
    return g.one<ConvWeightGradOp>(
        {x, dy}, {g.i64s("kernel_shape", kernel), g.i64s("strides", strides),
                  g.i64s("dilations", dilations), g.i64s("pads", pads)});
  SmallVector<int64_t> swap01(r);
  std::iota(swap01.begin(), swap01.end(), 0);
  std::swap(swap01[0], swap01[1]);
  Value xt = g.transpose(x, swap01);   // [C, N, S...]
  Value dyt = g.transpose(dy, swap01); // [O, N, So...]
  Value w = g.one<ConvOp>({xt, dyt}, {g.i64s("strides", dilations),
                                      g.i64s("dilations", strides),
                                      g.i64s("pads", pads)}); // [C, O, k'...]
  auto wt = g.typeOf(w);
  bool exact = true;
  for (size_t i = 0; i < kernel.size(); ++i)
    exact &= wt.getDimSize(2 + i) == kernel[i];
  if (!exact) {
    SmallVector<int64_t> starts(kernel.size(), 0), ends(kernel), axes;
    for (size_t i = 0; i < kernel.size(); ++i)
      axes.push_back(2 + i);
    w = g.slice(w, starts, ends, axes);
  }
  return g.transpose(w, swap01);
}

/// `x` ([N, C, S...], static beyond the batch) with s - 1 zeros between
/// neighbours along each spatial axis: [N, C, (S - 1) * s + 1 ...].
Value dilateSpatial(GraphBuilder &g, Value x, ArrayRef<int64_t> strides) {
  for (size_t i = 0; i < strides.size(); ++i) {
    int64_t s = strides[i];
    if (s == 1)
      continue;
    auto shape = llvm::to_vector(g.typeOf(x).getShape());
    // Reshape's 0 keeps a dynamic batch as it is.
    if (ShapedType::isDynamic(shape[0]))
      shape[0] = 0;
    int64_t a = 2 + i, r = shape.size();
    SmallVector<int64_t> withUnit(shape);
    withUnit.insert(withUnit.begin() + a + 1, 1);
    Value u = g.reshape(x, withUnit);
    SmallVector<int64_t> pads(2 * (r + 1), 0);
    pads[(r + 1) + a + 1] = s - 1;
    u = g.one<PadOp>({u, g.vec(pads)}, {}, {1, 1, 0, 0});
    SmallVector<int64_t> merged(shape);
    merged[a] = shape[a] * s;
    x = g.slice(g.reshape(u, merged), {0}, {(shape[a] - 1) * s + 1}, {a});
  }
  return x;
}

/// The transposed convolution of `dy` by `w` (a conv's input gradient) as a
/// plain convolution, which code generation runs as im2col + GEMM where the
/// direct transposed-convolution loops are far slower (measured: 75% of a
/// residual CNN's training step): dy dilated by the strides, padded by
/// (k - 1) * d - pad (plus the output padding at the end), convolved with
/// the kernel flipped and its channel axes swapped. Null when that form
/// does not apply (groups, a pad beyond the kernel's reach, dynamic shapes).
Value transposedConvAsConv(GraphBuilder &g, Value dy, Value w,
                           ArrayRef<int64_t> strides,
                           ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads,
                           ArrayRef<int64_t> outPad, int64_t group) {
  auto wt = g.typeOf(w);
  int64_t n = wt.getRank() - 2;
  if (group != 1 || !wt.hasStaticShape() || !staticBeyondBatch(g.typeOf(dy)))
    return Value();
  SmallVector<int64_t> cpads(2 * n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t reach = (wt.getDimSize(2 + i) - 1) * dilations[i];
    cpads[i] = reach - pads[i];
    cpads[n + i] = reach - pads[n + i] + outPad[i];
    if (cpads[i] < 0 || cpads[n + i] < 0)
      return Value();
  }
  // w [F, C, k...] -> [C, F, k...] with every spatial axis reversed.
  SmallVector<int64_t> perm{1, 0};
  for (int64_t i = 0; i < n; ++i)
    perm.push_back(2 + i);
  Value flipped = g.transpose(w, perm);
  SmallVector<int64_t> starts(n, -1), ends(n, INT64_MIN), axes, steps(n, -1);
  for (int64_t i = 0; i < n; ++i)
    axes.push_back(2 + i);
  Operation *rev = g.make<SliceOp>(
      {flipped, g.vec(starts), g.vec(ends), g.vec(axes), g.vec(steps)}, {}, 1,
      {1, 1, 1, 1, 1});
  if (!rev)
    return Value();
  return g.one<ConvOp>({dilateSpatial(g, dy, strides), rev->getResult(0)},
                       {g.i64s("dilations", dilations), g.i64s("pads", cpads)});
}

GradResult convGrad(GraphBuilder &g, ConvOp op, Value dy) {
  Value x = op.getInput(), w = op.getWeight();
  auto xt = g.typeOf(x), wt = g.typeOf(w), yt = g.typeOf(op.getOutput());
  if (!staticBeyondBatch(xt) || !wt.hasStaticShape())
    return unsupported(op, "dynamic channel or spatial sizes"), failure();
  int64_t n = xt.getRank() - 2;
  auto inDims = xt.getShape().drop_front(2);
  auto kernel = wt.getShape().drop_front(2);
  SmallVector<int64_t> strides(n, 1), dilations(n, 1);
  if (auto s = op.getStrides())
    strides.assign(s->begin(), s->end());
  if (auto d = op.getDilations())
    dilations.assign(d->begin(), d->end());
  auto pads =
      explicitPads(op, op.getAutoPad(), inDims, yt.getShape().drop_front(2),
                   kernel, strides, dilations, op.getPads());
  if (failed(pads))
    return failure();
  int64_t group = op.getGroup();
  // dx: the transposed convolution of dy with the same weight, padded on the
  // output side to x's spatial size.
  SmallVector<int64_t> outPad(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t so = yt.getDimSize(2 + i);
    int64_t natural = strides[i] * (so - 1) + (kernel[i] - 1) * dilations[i] +
                      1 - (*pads)[i] - (*pads)[i + n];
    outPad[i] = inDims[i] - natural;
    if (outPad[i] < 0)
      return unsupported(op, "this padding"), failure();
  }
  Value dx =
      transposedConvAsConv(g, dy, w, strides, dilations, *pads, outPad, group);
  if (!dx)
    dx = g.one<ConvTransposeOp>(
        {dy, w}, {g.i64s("strides", strides), g.i64s("dilations", dilations),
                  g.i64s("pads", *pads), g.i64("group", group),
                  g.i64s("output_padding", outPad)});
  // dw, per group.
  SmallVector<int64_t> beginPads(pads->begin(), pads->begin() + n);
  SmallVector<int64_t> wPads(beginPads);
  wPads.append(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    // Pad the end so every kernel tap's positions exist; the slice in
    // convWeightGrad drops the extra taps.
    wPads[n + i] = (*pads)[n + i];
  }
  Value dw;
  if (group == 1) {
    dw = convWeightGrad(g, x, dy, kernel, strides, dilations, wPads);
  } else {
    int64_t c = xt.getDimSize(1) / group, o = wt.getDimSize(0) / group;
    SmallVector<Value> parts;
    for (int64_t gi = 0; gi < group; ++gi) {
      Value xs = g.slice(x, {gi * c}, {(gi + 1) * c}, {1});
      Value ds = g.slice(dy, {gi * o}, {(gi + 1) * o}, {1});
      parts.push_back(
          convWeightGrad(g, xs, ds, kernel, strides, dilations, wPads));
    }
    dw = g.one<ConcatOp>(parts, {g.i64("axis", 0)});
  }
  Grads out{dx, dw};
  if (op.getBias()) {
    SmallVector<int64_t> axes{0};
    for (int64_t i = 0; i < n; ++i)
      axes.push_back(2 + i);
    out.push_back(g.reduceSum(dy, axes, /*keep=*/false));
  }
  return out;
}

GradResult convTransposeGrad(GraphBuilder &g, ConvTransposeOp op, Value dy) {
  Value x = op.getInput(), w = op.getWeight();
  auto xt = g.typeOf(x), wt = g.typeOf(w);
  if (!xt.hasStaticShape() || !wt.hasStaticShape() ||
      op.getAutoPad() != "NOTSET" || op.getOutputShape() || op.getGroup() != 1)
    return unsupported(op, "auto_pad, output_shape, groups or dynamic shapes"),
           failure();
  int64_t n = xt.getRank() - 2;
  SmallVector<int64_t> strides(n, 1), dilations(n, 1), pads(2 * n, 0);
  if (auto s = op.getStrides())
    strides.assign(s->begin(), s->end());
  if (auto d = op.getDilations())
    dilations.assign(d->begin(), d->end());
  if (auto p = op.getPads())
    pads.assign(p->begin(), p->end());
  // dx = conv(dy, w): the adjoint of the transposed convolution.
  Value dx = g.one<ConvOp>({dy, w}, {g.i64s("strides", strides),
                                     g.i64s("dilations", dilations),
                                     g.i64s("pads", pads)});
  if (g.typeOf(dx).getShape() != xt.getShape())
    dx = g.slice(dx, SmallVector<int64_t>(n, 0), xt.getShape().drop_front(2),
                 llvm::to_vector(llvm::seq<int64_t>(2, 2 + n)));
  // w[ci, co, k] += x[n, ci, p] * dy[n, co, p*s + k*d - pad]: the weight
  // gradient of a convolution of dy by x, with the roles swapped.
  Value dwT = convWeightGrad(g, dy, x, wt.getShape().drop_front(2), strides,
                             dilations, pads); // [Ci, Co, k]
  Grads out{dx, dwT};
  if (op.getBias()) {
    SmallVector<int64_t> axes{0};
    for (int64_t i = 0; i < n; ++i)
      axes.push_back(2 + i);
    out.push_back(g.reduceSum(dy, axes, false));
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Pooling and normalisation
//===----------------------------------------------------------------------===//

GradResult maxPoolGrad(GraphBuilder &g, MaxPoolOp op, Value dy) {
  Value x = op.getInput();
  if (op.getStorageOrder() != 0)
    return unsupported(op, "storage_order=1"), failure();
  // Indices are flat offsets into x: scatter-add dy there.
  Value flatIdx = g.reshape(op.getIndices(), {-1});
  Value flatDy = g.reshape(dy, {-1});
  Value zeros = g.reshape(g.zerosLike(x), {-1});
  Value s = g.one<ScatterElementsOp>(
      {zeros, flatIdx, flatDy},
      {g.i64("axis", 0), g.attr("reduction", g.b.getStringAttr("add"))});
  return Grads{g.reshapeLike(s, x)};
}

/// The gradient of operand k of an einsum is an einsum of dy (with the
/// output's subscripts) and the other operands back to operand k's
/// subscripts; a subscript only operand k has (summed away in the forward
/// pass) comes from a tensor of ones shaped like it. Not for operands with a
/// repeated subscript (a diagonal) or a broadcast size-1 dimension.
GradResult einsumGrad(GraphBuilder &g, EinsumOp op, Value dy) {
  SmallVector<Value> inputs(op.getInputs());
  SmallVector<int64_t> ranks;
  for (Value v : inputs)
    ranks.push_back(g.typeOf(v).getRank());
  EinsumSubscripts subs;
  std::string why;
  if (!parseEinsum(op.getEquation(), ranks, subs, why))
    return unsupported(op, "this equation"), failure();
  auto yt = g.typeOf(op.getOutput());
  std::map<char, int64_t> sizes;
  for (auto [c, d] : llvm::zip(subs.output, yt.getShape()))
    sizes[c] = d;
  for (auto [v, in] : llvm::zip(inputs, subs.inputs))
    for (auto [c, d] : llvm::zip(in, g.typeOf(v).getShape()))
      if (d != 1)
        sizes[c] = d;
  Grads out;
  for (auto [k, x] : llvm::enumerate(inputs)) {
    const std::string &sk = subs.inputs[k];
    if (!isa<FloatType>(g.elemOf(x))) {
      out.push_back(Value());
      continue;
    }
    for (auto [c, d] : llvm::zip(sk, g.typeOf(x).getShape())) {
      if (llvm::count(sk, c) > 1)
        return unsupported(op, "a repeated subscript (a diagonal)"), failure();
      if (d == 1 && sizes[c] != 1)
        return unsupported(op, "a broadcast dimension"), failure();
    }
    EinsumSubscripts gs;
    SmallVector<Value> operands{dy};
    gs.inputs.push_back(subs.output);
    for (auto [j, other] : llvm::enumerate(inputs)) {
      if (j == k)
        continue;
      gs.inputs.push_back(subs.inputs[j]);
      operands.push_back(other);
    }
    bool missing = llvm::any_of(sk, [&](char c) {
      return llvm::none_of(gs.inputs, [&](const std::string &in) {
        return in.find(c) != std::string::npos;
      });
    });
    if (missing) {
      gs.inputs.push_back(sk);
      operands.push_back(g.add(g.zerosLike(x), g.scalarLike(x, 1)));
    }
    gs.output = sk;
    out.push_back(g.one<EinsumOp>(
        operands, {g.attr("equation", StringAttr::get(g.b.getContext(),
                                                      formatEinsum(gs)))}));
  }
  return out;
}

GradResult averagePoolGrad(GraphBuilder &g, AveragePoolOp op, Value dy) {
  Value x = op.getInput();
  auto xt = g.typeOf(x), yt = g.typeOf(op.getOutput());
  if (!staticBeyondBatch(xt))
    return unsupported(op, "dynamic channel or spatial sizes"), failure();
  int64_t n = xt.getRank() - 2, ch = xt.getDimSize(1);
  auto kernel = op.getKernelShape();
  SmallVector<int64_t> strides(n, 1), dilations(n, 1);
  if (auto s = op.getStrides())
    strides.assign(s->begin(), s->end());
  if (auto d = op.getDilations())
    dilations.assign(d->begin(), d->end());
  auto pads = explicitPads(op, op.getAutoPad(), xt.getShape().drop_front(2),
                           yt.getShape().drop_front(2), kernel, strides,
                           dilations, op.getPads());
  if (failed(pads))
    return failure();
  // dy over each window's divisor, as the forward pass divides (see
  // AveragePoolLowering): a product of per-dimension counts of the window's
  // taps inside the input (inside input and explicit pads with
  // count_include_pad); taps that only ceil_mode adds past the end never
  // count. Constant: [1, 1, out...], broadcast over batch and channels.
  SmallVector<int64_t> outDims(yt.getShape().drop_front(2));
  SmallVector<SmallVector<int64_t>> counts(n);
  bool includePad = op.getCountIncludePad() != 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t in = xt.getDimSize(2 + i), pb = (*pads)[i], pe = (*pads)[i + n];
    int64_t lo = includePad ? -pb : 0, hi = includePad ? in + pe : in;
    for (int64_t o = 0; o < outDims[i]; ++o) {
      int64_t c = 0;
      for (int64_t k = 0; k < kernel[i]; ++k) {
        int64_t p = o * strides[i] + k * dilations[i] - pb;
        if (p >= lo && p < hi)
          ++c;
      }
      counts[i].push_back(std::max<int64_t>(c, 1));
    }
  }
  SmallVector<int64_t> divShape{1, 1};
  divShape.append(outDims);
  auto divType = RankedTensorType::get(divShape, xt.getElementType());
  SmallVector<Attribute> divisors;
  SmallVector<int64_t> pos(n, 0);
  for (int64_t e = 0, total = divType.getNumElements(); e < total; ++e) {
    int64_t rest = e;
    for (int64_t i = n - 1; i >= 0; --i) {
      pos[i] = rest % outDims[i];
      rest /= outDims[i];
    }
    double d = 1;
    for (int64_t i = 0; i < n; ++i)
      d *= static_cast<double>(counts[i][pos[i]]);
    divisors.push_back(FloatAttr::get(xt.getElementType(), d));
  }
  Value div = ConstantOp::create(
      g.b, g.loc, divType,
      cast<ElementsAttr>(DenseElementsAttr::get(divType, divisors)));
  Value scaled = g.div(dy, div);
  // Spread every window's share back with a depthwise transposed
  // convolution by a kernel of ones.
  SmallVector<int64_t> wShape{ch, 1};
  wShape.append(kernel.begin(), kernel.end());
  auto wt = RankedTensorType::get(wShape, xt.getElementType());
  Value w =
      ConstantOp::create(g.b, g.loc, wt,
                         cast<ElementsAttr>(DenseElementsAttr::get(
                             wt, FloatAttr::get(wt.getElementType(), 1.0))));
  SmallVector<int64_t> outPad(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t natural = strides[i] * (yt.getDimSize(2 + i) - 1) +
                      (kernel[i] - 1) * dilations[i] + 1 - (*pads)[i] -
                      (*pads)[i + n];
    outPad[i] = xt.getDimSize(2 + i) - natural;
  }
  // ceil_mode windows that run past the input's end: the transposed
  // convolution spreads them over positions beyond it, which are cut.
  bool crop = llvm::any_of(outPad, [](int64_t p) { return p < 0; });
  for (int64_t &p : outPad)
    p = std::max<int64_t>(p, 0);
  Value dx = g.one<ConvTransposeOp>(
      {scaled, w}, {g.i64s("strides", strides), g.i64s("dilations", dilations),
                    g.i64s("pads", *pads), g.i64("group", ch),
                    g.i64s("output_padding", outPad)});
  if (crop)
    dx = g.slice(dx, SmallVector<int64_t>(n, 0), xt.getShape().drop_front(2),
                 llvm::to_vector(llvm::seq<int64_t>(2, 2 + n)));
  return Grads{dx};
}

/// dx of a normalisation y = xhat * ..., xhat = (x - mean) * inv over
/// `axes`, given dxhat: inv * (dxhat - mean(dxhat) - xhat * mean(dxhat *
/// xhat)).
Value normalizeGrad(GraphBuilder &g, Value xhat, Value inv, Value dxhat,
                    ArrayRef<int64_t> axes) {
  Value m1 = g.reduceMean(dxhat, axes, true);
  Value m2 = g.reduceMean(g.mul(dxhat, xhat), axes, true);
  return g.mul(inv, g.sub(g.sub(dxhat, m1), g.mul(xhat, m2)));
}

GradResult layerNormGrad(GraphBuilder &g, LayerNormOp op, Value dy) {
  Value x = op.getInput(), scale = op.getScale();
  int64_t r = g.typeOf(x).getRank();
  int64_t axis = normAxis(op.getAxis(), r);
  SmallVector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i)
    axes.push_back(i);
  Value mean = op.getMean(), inv = op.getInvStdDev();
  if (g.elemOf(mean) != g.elemOf(x)) {
    mean = g.castTo(mean, g.elemOf(x));
    inv = g.castTo(inv, g.elemOf(x));
  }
  Value xhat = g.mul(g.sub(x, mean), inv);
  Value dxhat = g.mul(dy, scale);
  Value dx = normalizeGrad(g, xhat, inv, dxhat, axes);
  Grads out{dx, g.unbroadcast(g.mul(dy, xhat), scale)};
  if (op.getBias())
    out.push_back(g.unbroadcast(dy, op.getBias()));
  return out;
}

GradResult instanceNormGrad(GraphBuilder &g, InstanceNormOp op, Value dy) {
  Value x = op.getInput();
  int64_t r = g.typeOf(x).getRank();
  SmallVector<int64_t> axes, bshape{-1};
  for (int64_t i = 2; i < r; ++i) {
    axes.push_back(i);
    bshape.push_back(1);
  }
  auto mom = g.moments(x, axes, op.getEpsilon().convertToDouble());
  Value inv = mom.inv;
  Value xhat = g.mul(mom.centered, inv);
  Value scale = g.reshape(op.getScale(), bshape);
  Value dx = normalizeGrad(g, xhat, inv, g.mul(dy, scale), axes);
  SmallVector<int64_t> all{0};
  all.append(axes);
  return Grads{dx, g.reduceSum(g.mul(dy, xhat), all, false),
               g.reduceSum(dy, all, false)};
}

//===----------------------------------------------------------------------===//
// Reductions and softmax
//===----------------------------------------------------------------------===//

GradResult reduceGrad(GraphBuilder &g, Operation *op, Value dy) {
  Value x = op->getOperand(0), y = op->getResult(0);
  int64_t r = g.typeOf(x).getRank();
  bool keep = op->getAttrOfType<IntegerAttr>("keepdims").getInt() != 0;
  bool noop =
      op->getAttrOfType<IntegerAttr>("noop_with_empty_axes").getInt() != 0;
  SmallVector<int64_t> axes;
  if (op->getNumOperands() > 1) {
    auto c = getConstantInts(op->getOperand(1));
    if (!c)
      return unsupported(op, "axes that are not constant"), failure();
    for (int64_t a : *c)
      axes.push_back(normAxis(a, r));
  }
  if (axes.empty()) {
    if (noop) {
      Grads out{dy};
      out.append(op->getNumOperands() - 1, Value());
      return out;
    }
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  }
  llvm::sort(axes);
  Value dyk = keep ? dy : g.unsqueeze(dy, axes);
  Value yk = keep ? y : g.unsqueeze(y, axes);
  Value dyx = g.expandLike(dyk, x);
  Value dx =
      TypeSwitch<Operation *, Value>(op)
          .Case([&](ReduceSumOp) { return dyx; })
          .Case([&](ReduceMeanOp) {
            return g.div(g.mul(dyx, g.numel(y, g.elemOf(x))),
                         g.numel(x, g.elemOf(x)));
          })
          .Case([&](ReduceSumSquareOp) { return g.mul(dyx, g.mulC(x, 2)); })
          .Case([&](ReduceL2Op) {
            return g.mul(x, g.expandLike(g.div(dyk, yk), x));
          })
          .Case([&](ReduceLogSumExpOp) {
            return g.mul(dyx, g.exp(g.sub(x, g.expandLike(yk, x))));
          })
          .Case<ReduceMaxOp, ReduceMinOp>([&](Operation *) {
            Value eq = g.one<EqualOp>({x, g.expandLike(yk, x)});
            return g.maskIn(eq, dyx);
          })
          .Case([&](ReduceProdOp) {
            return g.div(g.expandLike(g.mul(dyk, yk), x), x);
          })
          .Default([&](Operation *) { return Value(); });
  if (!dx)
    return unsupported(op, "this reduction"), failure();
  Grads out{dx};
  out.append(op->getNumOperands() - 1, Value());
  return out;
}

//===----------------------------------------------------------------------===//
// Shapes and indexing
//===----------------------------------------------------------------------===//

/// Zeros shaped like result `v`, for a result without a gradient.
Value gradOrZeros(GraphBuilder &g, Value grad, Value v) {
  return grad ? grad : g.zerosLike(v);
}

GradResult concatGrad(GraphBuilder &g, ConcatOp op, Value dy) {
  int64_t r = g.typeOf(dy).getRank();
  int64_t axis = normAxis(op.getAxis(), r);
  Grads out;
  int64_t offset = 0;
  for (Value in : op.getInputs()) {
    int64_t d = g.typeOf(in).getDimSize(axis);
    if (ShapedType::isDynamic(d))
      return unsupported(op, "a dynamic size along the concat axis"), failure();
    out.push_back(g.slice(dy, {offset}, {offset + d}, {axis}));
    offset += d;
  }
  return out;
}

GradResult splitGrad(GraphBuilder &g, SplitOp op, ValueRange dys) {
  SmallVector<Value> parts;
  for (auto [d, res] : llvm::zip(dys, op.getOutputs()))
    parts.push_back(gradOrZeros(g, d, res));
  Value dx = g.one<ConcatOp>(parts, {g.i64("axis", op.getAxis())});
  Grads out{dx};
  out.append(op->getNumOperands() - 1, Value());
  return out;
}

GradResult sliceGrad(GraphBuilder &g, SliceOp op, Value dy) {
  Value x = op.getInput();
  auto xt = g.typeOf(x);
  int64_t r = xt.getRank();
  auto starts = getConstantInts(op.getStarts()),
       ends = getConstantInts(op.getEnds());
  if (!starts || !ends)
    return unsupported(op, "starts or ends that are not constant"), failure();
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (op.getAxes()) {
    auto a = getConstantInts(op.getAxes());
    if (!a)
      return unsupported(op, "axes that are not constant"), failure();
    axes = *a;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (op.getSteps()) {
    auto s = getConstantInts(op.getSteps());
    if (!s)
      return unsupported(op, "steps that are not constant"), failure();
    steps = *s;
  }
  // dx = pad(dy) with zeros before and after each sliced range; a step s
  // interleaves s - 1 zeros, done by padding a new axis and reshaping.
  SmallVector<int64_t> pads(2 * r, 0);
  Value cur = dy;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = normAxis(axes[i], r), dim = xt.getDimSize(a);
    if (ShapedType::isDynamic(dim))
      return unsupported(op, "a dynamic sliced dimension"), failure();
    int64_t s = steps[i];
    if (s == 0)
      return unsupported(op, "a zero step"), failure();
    int64_t st = (*starts)[i] < 0 ? (*starts)[i] + dim : (*starts)[i];
    // ONNX clamps a start to [0, dim] for positive steps, [0, dim - 1] for
    // negative ones.
    st = std::clamp<int64_t>(st, 0, s > 0 ? dim : dim - 1);
    int64_t cnt = g.typeOf(op.getOutput()).getDimSize(a);
    if (ShapedType::isDynamic(cnt))
      return unsupported(op, "a dynamic result dimension"), failure();
    if (s < 0) {
      // y[j] = x[st + j * s]: dy reversed along the axis is the gradient of
      // the slice from the lowest element read, st + (cnt - 1) * s, with
      // step -s.
      if (cnt > 0) {
        st += (cnt - 1) * s;
        Operation *rev = g.make<SliceOp>(
            {cur, g.vec({-1}), g.vec({std::numeric_limits<int64_t>::min()}),
             g.vec({a}), g.vec({-1})},
            {}, 1, {1, 1, 1, 1, 1});
        if (!rev)
          return failure();
        cur = rev->getResult(0);
      }
      s = -s;
    }
    int64_t span = cnt == 0 ? 0 : (cnt - 1) * s + 1;
    if (s > 1 && cnt > 0) {
      // [.., cnt, ..] -> [.., cnt, 1, ..] -> pad to s -> [.., cnt*s, ..]
      // -> cut to (cnt-1)*s+1.
      auto ct = g.typeOf(cur);
      SmallVector<int64_t> shape(ct.getShape());
      if (llvm::any_of(shape, ShapedType::isDynamic))
        return unsupported(op, "steps with dynamic dimensions"), failure();
      SmallVector<int64_t> withUnit(shape);
      withUnit.insert(withUnit.begin() + a + 1, 1);
      Value u = g.reshape(cur, withUnit);
      SmallVector<int64_t> ip(2 * (r + 1), 0);
      ip[(r + 1) + a + 1] = s - 1;
      u = g.one<PadOp>({u, g.vec(ip)}, {}, {1, 1, 0, 0});
      SmallVector<int64_t> merged(shape);
      merged[a] = cnt * s;
      u = g.reshape(u, merged);
      cur = g.slice(u, {0}, {span}, {a});
    }
    pads[a] = st;
    pads[r + a] = dim - st - span;
    if (pads[r + a] < 0)
      return unsupported(op, "this slice"), failure();
  }
  Value dx = g.one<PadOp>({cur, g.vec(pads)}, {}, {1, 1, 0, 0});
  Grads out{dx};
  out.append(op->getNumOperands() - 1, Value());
  return out;
}

/// Scatter-adds `upd` ([I..., rest...]) into zeros of `data`'s type at
/// `idx` ([I...]) along axis 0.
Value scatterAddRows(GraphBuilder &g, Value data, Value idx, Value upd) {
  auto dt = g.typeOf(data);
  int64_t dim0 = dt.getDimSize(0);
  Value i = idx;
  if (!ShapedType::isDynamic(dim0)) {
    Value zero = g.scalarLike(idx, 0);
    Value wrapped = g.add(idx, g.scalarLike(idx, static_cast<double>(dim0)));
    i = g.where(g.one<LessOp>({idx, zero}), wrapped, idx);
  }
  if (g.elemOf(i) != g.b.getI64Type())
    i = g.castTo(i, g.b.getI64Type());
  int64_t rest = dt.getRank() - 1;
  Value flatI = g.reshape(i, {-1});
  SmallVector<int64_t> updShape{-1};
  for (int64_t d : dt.getShape().drop_front())
    updShape.push_back(d);
  if (llvm::count_if(updShape, ShapedType::isDynamic) > 0)
    return Value();
  Value flatU = g.reshape(upd, updShape);
  SmallVector<int64_t> unsq;
  for (int64_t k = 0; k < rest; ++k)
    unsq.push_back(1 + k);
  Value ie = g.one<ExpandOp>({g.unsqueeze(flatI, unsq), g.shapeOf(flatU)});
  return g.one<ScatterElementsOp>(
      {g.zerosLike(data), ie, flatU},
      {g.i64("axis", 0), g.attr("reduction", g.b.getStringAttr("add"))});
}

/// Gather's gradient where scatterAddRows cannot flatten the other
/// dimensions (more than one of them dynamic, as a batch dimension and a
/// gather on a later axis, DLRM's pick of the pairwise interactions): with
/// n = D[axis] static and indices of rank 0 or 1 (m of them), the gradient
/// is dy, its index axis moved last, times the one-hot matrix M[k, j] =
/// (idx[k] == j) of [m, n], moved back. O(m * n) per row, so only for
/// modest n * m; tables (gathered on a static axis 0) take the scatter.
GradResult gatherGradByOneHot(GraphBuilder &g, GatherOp op, Value dy) {
  Value data = op.getData(), idx = op.getIndices();
  auto dt = g.typeOf(data);
  auto it = g.typeOf(idx);
  int64_t r = dt.getRank(), ir = it.getRank();
  int64_t axis = normAxis(op.getAxis(), r);
  int64_t n = dt.getDimSize(axis);
  int64_t m = ir == 0 ? 1 : it.getDimSize(0);
  constexpr int64_t kMaxOneHot = int64_t{1} << 22;
  if (ir > 1 || ShapedType::isDynamic(n) || ShapedType::isDynamic(m) ||
      n * m > kMaxOneHot || !isa<FloatType>(dt.getElementType()))
    return unsupported(op, "dynamic non-gathered dimensions"), failure();
  // dy: [D[:a], I, D[a+1:]] (I empty for a scalar index: add it).
  Value d = ir == 0 ? g.unsqueeze(dy, {axis}) : dy;
  Value i = ir == 0 ? g.unsqueeze(idx, {0}) : idx;
  if (g.elemOf(i) != g.b.getI64Type())
    i = g.castTo(i, g.b.getI64Type());
  // Negative indices count from the end.
  Value wrapped = g.add(i, g.scalarLike(i, static_cast<double>(n)));
  i = g.where(g.one<LessOp>({i, g.scalarLike(i, 0)}), wrapped, i);
  auto iotaType = RankedTensorType::get({1, n}, g.b.getI64Type());
  SmallVector<APInt> iota;
  for (int64_t j = 0; j < n; ++j)
    iota.push_back(APInt(64, j, true));
  Value columns = ConstantOp::create(
      g.b, g.loc, iotaType,
      cast<ElementsAttr>(DenseElementsAttr::get(iotaType, iota)));
  Value oneHot = g.castTo(g.one<EqualOp>({g.unsqueeze(i, {1}), columns}),
                          dt.getElementType());
  // Move the index axis last, multiply, move the result back.
  SmallVector<int64_t> perm, back(r);
  for (int64_t k = 0; k < r; ++k)
    if (k != axis)
      perm.push_back(k);
  perm.push_back(axis);
  for (int64_t k = 0; k < r; ++k)
    back[perm[k]] = k;
  Value dx = g.one<MatMulOp>({g.transpose(d, perm), oneHot});
  return Grads{g.transpose(dx, back), Value()};
}

GradResult gatherGrad(GraphBuilder &g, GatherOp op, Value dy) {
  Value data = op.getData(), idx = op.getIndices();
  auto dt = g.typeOf(data);
  int64_t r = dt.getRank(), ir = g.typeOf(idx).getRank();
  int64_t axis = normAxis(op.getAxis(), r);
  // Move the gathered axis to the front: data' = [D[a], D[:a], D[a+1:]],
  // dy' = [I..., D[:a], D[a+1:]].
  SmallVector<int64_t> dperm{axis}, dyperm;
  for (int64_t i = 0; i < r; ++i)
    if (i != axis)
      dperm.push_back(i);
  for (int64_t i = 0; i < ir; ++i)
    dyperm.push_back(axis + i);
  for (int64_t i = 0; i < axis; ++i)
    dyperm.push_back(i);
  for (int64_t i = axis + ir; i < r - 1 + ir; ++i)
    dyperm.push_back(i);
  Value dataT = g.transpose(data, dperm);
  Value dyT = g.transpose(dy, dyperm);
  Value s = scatterAddRows(g, dataT, idx, dyT);
  if (!s)
    return gatherGradByOneHot(g, op, dy);
  SmallVector<int64_t> inv(r);
  for (int64_t i = 0; i < r; ++i)
    inv[dperm[i]] = i;
  return Grads{g.transpose(s, inv), Value()};
}

GradResult tileGrad(GraphBuilder &g, TileOp op, Value dy) {
  Value x = op.getInput();
  auto xt = g.typeOf(x);
  auto reps = getConstantInts(op.getRepeats());
  if (!reps || !xt.hasStaticShape())
    return unsupported(op, "dynamic repeats or shapes"), failure();
  SmallVector<int64_t> split, axes;
  for (int64_t i = 0; i < xt.getRank(); ++i) {
    axes.push_back(2 * i);
    split.push_back((*reps)[i]);
    split.push_back(xt.getDimSize(i));
  }
  Value s = g.reduceSum(g.reshape(dy, split), axes, false);
  return Grads{s, Value()};
}

GradResult padGrad(GraphBuilder &g, PadOp op, Value dy) {
  Value x = op.getInput();
  auto xt = g.typeOf(x);
  int64_t r = xt.getRank();
  if (op.getMode() != "constant")
    return unsupported(op, "mode '" + op.getMode() + "'"), failure();
  auto pads = getConstantInts(op.getPads());
  if (!pads)
    return unsupported(op, "pads that are not constant"), failure();
  SmallVector<int64_t> axes;
  if (op.getAxes()) {
    auto a = getConstantInts(op.getAxes());
    if (!a)
      return unsupported(op, "axes that are not constant"), failure();
    for (int64_t v : *a)
      axes.push_back(normAxis(v, r));
  } else {
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  }
  int64_t n = axes.size();
  SmallVector<int64_t> starts, ends, sAxes;
  for (int64_t i = 0; i < n; ++i) {
    int64_t b0 = (*pads)[i], d = xt.getDimSize(axes[i]);
    if (b0 < 0 || (*pads)[n + i] < 0 || ShapedType::isDynamic(d))
      return unsupported(op, "negative pads or dynamic dimensions"), failure();
    starts.push_back(b0);
    ends.push_back(b0 + d);
    sAxes.push_back(axes[i]);
  }
  Value dx = g.slice(dy, starts, ends, sAxes);
  Grads out{dx, Value()};
  if (op.getConstantValue())
    out.push_back(Value());
  if (op.getAxes())
    out.push_back(Value());
  return out;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// One-hot of `labels` ([N, d...]) along axis 1 with `c` classes, in
/// `elemType`: [N, C, d...].
Value oneHot(GraphBuilder &g, Value labels, int64_t c, Type elemType) {
  int64_t r = g.typeOf(labels).getRank();
  SmallVector<int64_t> iota(c), shape{1, c};
  std::iota(iota.begin(), iota.end(), 0);
  for (int64_t i = 1; i < r; ++i)
    shape.push_back(1);
  auto it = RankedTensorType::get(shape, g.elemOf(labels));
  SmallVector<APInt> vals;
  for (int64_t v : iota)
    vals.push_back(APInt(g.elemOf(labels).getIntOrFloatBitWidth(), v, true));
  Value classes = ConstantOp::create(
      g.b, g.loc, it, cast<ElementsAttr>(DenseElementsAttr::get(it, vals)));
  Value eq = g.one<EqualOp>({g.unsqueeze(labels, {1}), classes});
  return g.castTo(eq, elemType);
}

/// Gradient of sum_i w_i * -logp[i, label_i] / denom with respect to the
/// log-probabilities `logp` ([N, C, d...]): -onehot * w / denom, where w is
/// the class weight (or 1) and 0 at ignored labels; `dLoss` scales it.
FailureOr<Value> nllGradWrtLogProb(GraphBuilder &g, Operation *op, Value logp,
                                   Value labels, Value weight,
                                   std::optional<int64_t> ignore,
                                   StringRef reduction, Value dLoss) {
  auto lt = g.typeOf(logp);
  int64_t c = lt.getDimSize(1);
  if (ShapedType::isDynamic(c))
    return unsupported(op, "a dynamic class count"), failure();
  Type et = lt.getElementType();
  Value hot = oneHot(g, labels, c, et);
  Value w; // per-sample weight, [N, d...]
  Value valid;
  if (ignore)
    valid = g.one<NotOp>({g.one<EqualOp>(
        {labels, g.scalarLike(labels, static_cast<double>(*ignore))})});
  if (weight) {
    Value safe =
        valid ? g.where(valid, labels, g.scalarLike(labels, 0)) : labels;
    w = g.one<GatherOp>({weight, safe}, {g.i64("axis", 0)});
    if (valid)
      w = g.maskIn(valid, w);
  } else if (valid) {
    w = g.castTo(valid, et);
  }
  Value per = w ? g.mul(hot, g.unsqueeze(w, {1})) : hot;
  Value scale;
  if (reduction == "mean") {
    Value denom = w ? g.one<ReduceSumOp>({w}, {g.i64("keepdims", 0)})
                    : g.numel(labels, et);
    scale = g.div(dLoss, denom);
  } else if (reduction == "sum") {
    scale = dLoss;
  } else {
    scale = g.unsqueeze(dLoss, {1});
  }
  return g.neg(g.mul(per, scale));
}

GradResult softmaxCrossEntropyGrad(GraphBuilder &g,
                                   SoftmaxCrossEntropyLossOp op,
                                   ValueRange dys) {
  Value scores = op.getScores(), logp = op.getLogProb();
  Value ds;
  Value p = g.exp(logp);
  if (Value dl = dys[0]) {
    auto dnll = nllGradWrtLogProb(g, op, logp, op.getLabels(), op.getWeights(),
                                  op.getIgnoreIndex(), op.getReduction(), dl);
    if (failed(dnll))
      return failure();
    // d/dscores of logp-weighted sums: g - p * sum(g, classes).
    Value sum = g.reduceSum(*dnll, {1}, true);
    ds = g.sub(*dnll, g.mul(p, sum));
  }
  if (Value dlp = dys[1]) {
    Value sum = g.reduceSum(dlp, {1}, true);
    Value d = g.sub(dlp, g.mul(p, sum));
    ds = ds ? g.add(ds, d) : d;
  }
  Grads out{ds, Value()};
  if (op.getWeights())
    out.push_back(Value());
  return out;
}

GradResult nllGrad(GraphBuilder &g, NegativeLogLikelihoodLossOp op, Value dy) {
  auto d =
      nllGradWrtLogProb(g, op, op.getInput(), op.getTarget(), op.getWeight(),
                        op.getIgnoreIndex(), op.getReduction(), dy);
  if (failed(d))
    return failure();
  Grads out{*d, Value()};
  if (op.getWeight())
    out.push_back(Value());
  return out;
}

} // namespace

FailureOr<SmallVector<Value>>
mlir::dist::detail::buildDefaultGradient(Operation *op, OpBuilder &builder,
                                         ValueRange resultGrads) {
  GraphBuilder g(builder, op);
  Value dy = resultGrads.empty() ? Value() : resultGrads[0];
  unsigned numOperands = op->getNumOperands();
  auto none = [&]() { return Grads(numOperands, Value()); };
  // Ops whose only differentiable result has no gradient contribute none.
  if (llvm::all_of(resultGrads, [](Value v) { return !v; }))
    return none();

  GradResult result =
      TypeSwitch<Operation *, GradResult>(op)
          .Case<AddOp, SubOp, MulOp, DivOp, PowOp>(
              [&](Operation *o) { return binaryGrad(g, o, dy); })
          .Case([&](IdentityOp) { return Grads{dy}; })
          .Case([&](MeshCopyOp c) -> GradResult {
            // Each rank holds a part of the gradient: sum them.
            return Grads{shard::AllReduceOp::create(
                             g.b, g.loc, dy.getType(), c.getGrid(),
                             c.getGridAxes(), dy, shard::ReductionKind::Sum)
                             .getResult()};
          })
          .Case([&](CastOp c) -> GradResult {
            Type from = g.elemOf(c.getInput());
            if (!isa<FloatType>(from))
              return none();
            return Grads{from == g.elemOf(dy) ? dy : g.castTo(dy, from)};
          })
          .Case([&](CastLikeOp c) -> GradResult {
            Type from = g.elemOf(c.getInput());
            if (!isa<FloatType>(from))
              return none();
            return Grads{from == g.elemOf(dy) ? dy : g.castTo(dy, from),
                         Value()};
          })
          .Case([&](ClipOp c) -> GradResult {
            Value x = c.getInput();
            Value in;
            if (Value lo = c.getMin())
              in = g.one<GreaterOrEqualOp>({x, lo});
            if (Value hi = c.getMax()) {
              Value le = g.one<LessOrEqualOp>({x, hi});
              in = in ? g.one<AndOp>({in, le}) : le;
            }
            Grads out{in ? g.maskIn(in, dy) : dy};
            out.append(numOperands - 1, Value());
            return out;
          })
          .Case([&](DropoutOp d) -> GradResult {
            Grads out(numOperands, Value());
            if (!d.getTrainingMode()) {
              out[0] = dy;
              return out;
            }
            Value ratio =
                d.getRatio() ? d.getRatio() : g.scalarLike(d.getInput(), 0.5);
            Value keep = g.sub(g.scalarLike(ratio, 1), ratio);
            out[0] = g.maskIn(d.getMask(), g.div(dy, keep));
            return out;
          })
          .Case([&](WhereOp w) -> GradResult {
            Value zero = g.scalarLike(dy, 0);
            return Grads{
                Value(),
                g.unbroadcast(g.where(w.getCondition(), dy, zero), w.getX()),
                g.unbroadcast(g.where(w.getCondition(), zero, dy), w.getY())};
          })
          .Case([&](PReluOp p) -> GradResult {
            Value x = p.getInput(), s = p.getSlope();
            Value pos = g.greaterZero(x);
            Value zero = g.scalarLike(x, 0);
            return Grads{g.where(pos, dy, g.mul(dy, s)),
                         g.unbroadcast(g.where(pos, zero, g.mul(dy, x)), s)};
          })
          .Case<SumOp, MeanOp>([&](Operation *o) -> GradResult {
            Value d = dy;
            if (isa<MeanOp>(o))
              d = g.mulC(dy, 1.0 / numOperands);
            Grads out;
            for (Value in : o->getOperands())
              out.push_back(g.unbroadcast(d, in));
            return out;
          })
          .Case<MaxOp, MinOp>([&](Operation *o) -> GradResult {
            Grads out;
            for (Value in : o->getOperands()) {
              Value eq = g.one<EqualOp>({in, o->getResult(0)});
              out.push_back(g.unbroadcast(g.maskIn(eq, dy), in));
            }
            return out;
          })
          .Case([&](MatMulOp m) { return matmulGrad(g, m, dy); })
          .Case([&](EinsumOp e) { return einsumGrad(g, e, dy); })
          .Case([&](GemmOp m) { return gemmGrad(g, m, dy); })
          .Case([&](ConvOp c) { return convGrad(g, c, dy); })
          .Case([&](ConvTransposeOp c) { return convTransposeGrad(g, c, dy); })
          .Case([&](MaxPoolOp p) { return maxPoolGrad(g, p, dy); })
          .Case([&](AveragePoolOp p) { return averagePoolGrad(g, p, dy); })
          .Case([&](GlobalAveragePoolOp p) -> GradResult {
            Value x = p.getInput();
            Value n = g.div(g.numel(x, g.elemOf(x)),
                            g.numel(p.getOutput(), g.elemOf(x)));
            return Grads{g.div(g.expandLike(dy, x), n)};
          })
          .Case([&](GlobalMaxPoolOp p) -> GradResult {
            Value x = p.getInput();
            Value eq = g.one<EqualOp>({x, g.expandLike(p.getOutput(), x)});
            return Grads{g.maskIn(eq, g.expandLike(dy, x))};
          })
          .Case([&](BatchNormOp b) -> GradResult {
            // dist-build-train-step rewrites every BatchNormalization into
            // its training form (batch statistics, as PyTorch's train()),
            // so the op itself never needs a rule.
            return unsupported(b, "batch_norm (a training step expands it "
                                  "into batch statistics first)"),
                   failure();
          })
          .Case([&](LayerNormOp l) -> GradResult {
            if (resultGrads.size() > 1 && (resultGrads[1] || resultGrads[2]))
              return unsupported(l, "the mean and inv_std_dev results"),
                     failure();
            return layerNormGrad(g, l, dy);
          })
          .Case([&](InstanceNormOp i) { return instanceNormGrad(g, i, dy); })
          .Case([&](SoftmaxOp s) -> GradResult {
            Value y = s.getOutput();
            int64_t axis = normAxis(s.getAxis(), g.typeOf(y).getRank());
            Value sum = g.reduceSum(g.mul(dy, y), {axis}, true);
            return Grads{g.mul(y, g.sub(dy, sum))};
          })
          .Case([&](LogSoftmaxOp s) -> GradResult {
            Value y = s.getOutput();
            int64_t axis = normAxis(s.getAxis(), g.typeOf(y).getRank());
            Value sum = g.reduceSum(dy, {axis}, true);
            return Grads{g.sub(dy, g.mul(g.exp(y), sum))};
          })
          .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
                ReduceProdOp, ReduceSumSquareOp, ReduceL2Op, ReduceLogSumExpOp>(
              [&](Operation *o) { return reduceGrad(g, o, dy); })
          .Case<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(
              [&](Operation *o) -> GradResult {
                Grads out{g.reshapeLike(dy, o->getOperand(0))};
                out.append(numOperands - 1, Value());
                return out;
              })
          .Case([&](TransposeOp t) -> GradResult {
            int64_t r = g.typeOf(dy).getRank();
            Dims perm = transposePermutation(t.getPerm(), r);
            SmallVector<int64_t> inv(r);
            for (int64_t i = 0; i < r; ++i)
              inv[perm[i]] = i;
            return Grads{g.transpose(dy, inv)};
          })
          .Case([&](ConcatOp c) { return concatGrad(g, c, dy); })
          .Case([&](SplitOp s) { return splitGrad(g, s, resultGrads); })
          .Case([&](SliceOp s) { return sliceGrad(g, s, dy); })
          .Case([&](GatherOp ga) { return gatherGrad(g, ga, dy); })
          .Case([&](GatherElementsOp ga) -> GradResult {
            Value s = g.one<ScatterElementsOp>(
                {g.zerosLike(ga.getData()), ga.getIndices(), dy},
                {g.i64("axis", ga.getAxis()),
                 g.attr("reduction", g.b.getStringAttr("add"))});
            return Grads{s, Value()};
          })
          .Case([&](ExpandOp e) -> GradResult {
            return Grads{g.unbroadcast(dy, e.getInput()), Value()};
          })
          .Case([&](TileOp t) { return tileGrad(g, t, dy); })
          .Case([&](PadOp p) { return padGrad(g, p, dy); })
          .Case([&](CumSumOp c) -> GradResult {
            Value d = g.one<CumSumOp>(
                {dy, c.getAxis()}, {g.i64("exclusive", c.getExclusive()),
                                    g.i64("reverse", c.getReverse() ? 0 : 1)});
            return Grads{d, Value()};
          })
          .Case([&](TriluOp t) -> GradResult {
            SmallVector<Value> operands{dy};
            if (t.getK())
              operands.push_back(t.getK());
            Value d = g.one<TriluOp>(operands, {g.i64("upper", t.getUpper())});
            Grads out{d};
            if (t.getK())
              out.push_back(Value());
            return out;
          })
          .Case([&](SoftmaxCrossEntropyLossOp l) {
            return softmaxCrossEntropyGrad(g, l, resultGrads);
          })
          .Case(
              [&](NegativeLogLikelihoodLossOp l) { return nllGrad(g, l, dy); })
          .Default([&](Operation *o) -> GradResult {
            // Elementwise unary ops.
            if (o->getNumOperands() == 1 && o->getNumResults() == 1 &&
                o->hasTrait<OpTrait::SameOperandsAndResultElementType>()) {
              auto d = unaryGrad(g, o, o->getOperand(0), o->getResult(0), dy);
              if (failed(d))
                return failure();
              return Grads{*d};
            }
            return unsupported(o, "this op"), failure();
          });
  if (failed(result) || g.hadError)
    return failure();
  if (result->size() != numOperands)
    return op->emitOpError("gradient rule returned ")
           << result->size() << " gradients for " << numOperands << " operands";
  // A rule may leave nulls where an op could not be built.
  for (auto [i, v] : llvm::enumerate(*result))
    if (v && v.getType() != op->getOperand(i).getType()) {
      auto want = cast<RankedTensorType>(op->getOperand(i).getType());
      auto got = dyn_cast<RankedTensorType>(v.getType());
      if (!got || got.getElementType() != want.getElementType() ||
          got.getRank() != want.getRank())
        return op->emitOpError("gradient of operand #")
               << i << " has type " << v.getType() << ", expected "
               << op->getOperand(i).getType();
    }
  return result;
}

//===----------------------------------------------------------------------===//
// Gradients of the shard collectives tensor parallelism inserts
//===----------------------------------------------------------------------===//

namespace {

/// Every rank computes the same gradient of the result downstream of a
/// collective that makes its result replicated (dist-partition keeps what
/// follows a `shard.all_reduce` or `shard.all_gather` replicated), so:
/// a sum all-reduce passes the gradient through, an all-gather hands each
/// rank its slice (`shard.all_slice`), and an all-slice gathers it back.
template <typename OpT>
struct ShardGradient
    : public GradientOpInterface::ExternalModel<ShardGradient<OpT>, OpT> {
  FailureOr<SmallVector<Value>> buildGradient(Operation *op, OpBuilder &b,
                                              ValueRange resultGrads) const {
    Value dy = resultGrads.empty() ? Value() : resultGrads[0];
    if (!dy)
      return SmallVector<Value>{Value()};
    Location loc = op->getLoc();
    Type inType = op->getOperand(0).getType();
    if (auto r = dyn_cast<shard::AllReduceOp>(op)) {
      if (r.getReduction() != shard::ReductionKind::Sum)
        return op->emitOpError("has no gradient rule for the reduction ")
               << shard::stringifyReductionKind(r.getReduction())
               << " (sum only)";
      return SmallVector<Value>{dy};
    }
    if (auto gat = dyn_cast<shard::AllGatherOp>(op))
      return SmallVector<Value>{
          shard::AllSliceOp::create(b, loc, inType, gat.getGridAttr(),
                                    gat.getGridAxesAttr(), dy,
                                    gat.getGatherAxisAttr())
              .getResult()};
    auto sl = cast<shard::AllSliceOp>(op);
    return SmallVector<Value>{
        shard::AllGatherOp::create(b, loc, inType, sl.getGridAttr(),
                                   sl.getGridAxesAttr(), dy,
                                   sl.getSliceAxisAttr())
            .getResult()};
  }
  bool isDifferentiableOperand(Operation *op, unsigned index) const {
    return isa<FloatType>(
        getElementTypeOrSelf(op->getOperand(index).getType()));
  }
};

} // namespace

void mlir::dist::registerShardGradients(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, shard::ShardDialect *) {
    shard::AllReduceOp::attachInterface<ShardGradient<shard::AllReduceOp>>(
        *ctx);
    shard::AllGatherOp::attachInterface<ShardGradient<shard::AllGatherOp>>(
        *ctx);
    shard::AllSliceOp::attachInterface<ShardGradient<shard::AllSliceOp>>(*ctx);
  });
}
