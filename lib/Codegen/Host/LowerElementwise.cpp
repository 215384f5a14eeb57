//===- LowerElementwise.cpp - elementwise dist ops to linalg.generic ------===//
// SPDX-License-Identifier: Apache-2.0
//
// Unary, binary and variadic elementwise ops, comparisons, logic, casts,
// Where, Clip, PRelu and inference-mode Dropout become broadcasting
// linalg.generic ops whose bodies use arith and math.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "dist/Codegen/RuntimeABI.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::codegen;

namespace {

/// What a scalar body needs to know about the original (unconverted) types.
struct ElemInfo {
  Type orig;   // original element type of the first operand
  Type result; // original element type of the result
  bool isFloat() const { return isa<FloatType>(orig); }
  bool isUnsigned() const { return isUnsignedInt(orig) || orig.isInteger(1); }
};

Value cst(OpBuilder &b, Location loc, Value like, double v) {
  return scalarConst(b, loc, like.getType(), v);
}

Value fmax(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MaximumFOp::create(b, loc, x, y);
}
Value fmin(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MinimumFOp::create(b, loc, x, y);
}

Value maxOf(OpBuilder &b, Location loc, const ElemInfo &e, Value x, Value y) {
  if (e.isFloat())
    return fmax(b, loc, x, y);
  if (e.isUnsigned())
    return arith::MaxUIOp::create(b, loc, x, y);
  return arith::MaxSIOp::create(b, loc, x, y);
}
Value minOf(OpBuilder &b, Location loc, const ElemInfo &e, Value x, Value y) {
  if (e.isFloat())
    return fmin(b, loc, x, y);
  if (e.isUnsigned())
    return arith::MinUIOp::create(b, loc, x, y);
  return arith::MinSIOp::create(b, loc, x, y);
}

Value cmp(OpBuilder &b, Location loc, const ElemInfo &e, StringRef kind,
          Value x, Value y) {
  if (e.isFloat()) {
    auto p = llvm::StringSwitch<arith::CmpFPredicate>(kind)
                 .Case("eq", arith::CmpFPredicate::OEQ)
                 .Case("lt", arith::CmpFPredicate::OLT)
                 .Case("le", arith::CmpFPredicate::OLE)
                 .Case("gt", arith::CmpFPredicate::OGT)
                 .Case("ge", arith::CmpFPredicate::OGE)
                 .Default(arith::CmpFPredicate::UNE);
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  bool u = e.isUnsigned();
  auto p = llvm::StringSwitch<arith::CmpIPredicate>(kind)
               .Case("eq", arith::CmpIPredicate::eq)
               .Case("lt", u ? arith::CmpIPredicate::ult
                             : arith::CmpIPredicate::slt)
               .Case("le", u ? arith::CmpIPredicate::ule
                             : arith::CmpIPredicate::sle)
               .Case("gt", u ? arith::CmpIPredicate::ugt
                             : arith::CmpIPredicate::sgt)
               .Case("ge", u ? arith::CmpIPredicate::uge
                             : arith::CmpIPredicate::sge)
               .Default(arith::CmpIPredicate::ne);
  return arith::CmpIOp::create(b, loc, p, x, y);
}

Value add(OpBuilder &b, Location loc, const ElemInfo &, Value x, Value y) {
  return addScalars(b, loc, x, y);
}
Value sub(OpBuilder &b, Location loc, const ElemInfo &, Value x, Value y) {
  return subScalars(b, loc, x, y);
}
Value mul(OpBuilder &b, Location loc, const ElemInfo &, Value x, Value y) {
  return mulScalars(b, loc, x, y);
}
Value div(OpBuilder &b, Location loc, const ElemInfo &e, Value x, Value y) {
  if (e.isFloat())
    return arith::DivFOp::create(b, loc, x, y);
  if (e.isUnsigned())
    return arith::DivUIOp::create(b, loc, x, y);
  return arith::DivSIOp::create(b, loc, x, y);
}

/// Computation in f32 for f16/bf16 math functions that LLVM only has
/// for f32/f64.
template <typename MathOp>
Value mathUnary(OpBuilder &b, Location loc, Value x) {
  auto ft = cast<FloatType>(x.getType());
  if (ft.getWidth() >= 32)
    return MathOp::create(b, loc, x);
  Value w = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  Value r = MathOp::create(b, loc, w);
  return arith::TruncFOp::create(b, loc, ft, r);
}

Value expF(OpBuilder &b, Location loc, Value x) {
  return mathUnary<math::ExpOp>(b, loc, x);
}

Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = cst(b, loc, x, 1.0);
  Value negX = arith::NegFOp::create(b, loc, x);
  Value d = arith::AddFOp::create(b, loc, one, expF(b, loc, negX));
  return arith::DivFOp::create(b, loc, one, d);
}

//===----------------------------------------------------------------------===//
// Scalar semantics per op
//===----------------------------------------------------------------------===//

#define UNARY_F(OP, EXPR)                                                      \
  Value scalarOf(dist::OP op, OpBuilder &b, Location loc, ValueRange a,        \
                 const ElemInfo &e) {                                          \
    Value x = a[0];                                                            \
    (void)op;                                                                  \
    (void)e;                                                                   \
    return EXPR;                                                               \
  }

UNARY_F(ExpOp, expF(b, loc, x))
UNARY_F(LogOp, mathUnary<math::LogOp>(b, loc, x))
UNARY_F(SqrtOp, mathUnary<math::SqrtOp>(b, loc, x))
UNARY_F(FloorOp, math::FloorOp::create(b, loc, x))
UNARY_F(CeilOp, math::CeilOp::create(b, loc, x))
UNARY_F(RoundOp, math::RoundEvenOp::create(b, loc, x))
UNARY_F(SinOp, mathUnary<math::SinOp>(b, loc, x))
UNARY_F(CosOp, mathUnary<math::CosOp>(b, loc, x))
UNARY_F(TanOp, mathUnary<math::TanOp>(b, loc, x))
UNARY_F(AsinOp, mathUnary<math::AsinOp>(b, loc, x))
UNARY_F(AcosOp, mathUnary<math::AcosOp>(b, loc, x))
UNARY_F(AtanOp, mathUnary<math::AtanOp>(b, loc, x))
UNARY_F(SinhOp, mathUnary<math::SinhOp>(b, loc, x))
UNARY_F(CoshOp, mathUnary<math::CoshOp>(b, loc, x))
UNARY_F(AsinhOp, mathUnary<math::AsinhOp>(b, loc, x))
UNARY_F(AcoshOp, mathUnary<math::AcoshOp>(b, loc, x))
UNARY_F(AtanhOp, mathUnary<math::AtanhOp>(b, loc, x))
UNARY_F(TanhOp, mathUnary<math::TanhOp>(b, loc, x))
UNARY_F(SigmoidOp, sigmoid(b, loc, x))
UNARY_F(ReciprocalOp, arith::DivFOp::create(b, loc, cst(b, loc, x, 1.0), x))
UNARY_F(NotOp, arith::XOrIOp::create(b, loc, x, cst(b, loc, x, 1)))
UNARY_F(SoftsignOp,
        arith::DivFOp::create(
            b, loc, x,
            arith::AddFOp::create(b, loc, cst(b, loc, x, 1.0),
                                  math::AbsFOp::create(b, loc, x))))
#undef UNARY_F

Value scalarOf(dist::AbsOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  if (e.isFloat())
    return math::AbsFOp::create(b, loc, a[0]);
  if (e.isUnsigned())
    return a[0];
  return math::AbsIOp::create(b, loc, a[0]);
}

Value scalarOf(dist::NegOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  if (e.isFloat())
    return arith::NegFOp::create(b, loc, a[0]);
  return arith::SubIOp::create(b, loc, cst(b, loc, a[0], 0), a[0]);
}

Value scalarOf(dist::SignOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  Value x = a[0];
  Value zero = cst(b, loc, x, 0), one = cst(b, loc, x, 1);
  Value pos = cmp(b, loc, e, "gt", x, zero);
  if (e.isUnsigned())
    return arith::SelectOp::create(b, loc, pos, one, zero);
  Value neg = cmp(b, loc, e, "lt", x, zero);
  Value minusOne = cst(b, loc, x, -1);
  Value r = arith::SelectOp::create(b, loc, neg, minusOne, zero);
  r = arith::SelectOp::create(b, loc, pos, one, r);
  if (e.isFloat()) {
    // NaN stays NaN.
    Value isNan =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
    r = arith::SelectOp::create(b, loc, isNan, x, r);
  }
  return r;
}

Value scalarOf(dist::ErfOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  if (e.isFloat())
    return mathUnary<math::ErfOp>(b, loc, a[0]);
  // Integer Erf: compute in f64 and convert back.
  Value f = convertScalar(b, loc, a[0], e.orig, b.getF64Type());
  Value r = math::ErfOp::create(b, loc, f);
  return convertScalar(b, loc, r, b.getF64Type(), e.orig);
}

Value scalarOf(dist::ReluOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  return maxOf(b, loc, e, a[0], cst(b, loc, a[0], 0));
}

Value scalarOf(dist::LeakyReluOp op, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  Value x = a[0];
  Value neg = cmp(b, loc, e, "lt", x, cst(b, loc, x, 0));
  Value scaled = arith::MulFOp::create(
      b, loc, x, cst(b, loc, x, op.getAlpha().convertToDouble()));
  return arith::SelectOp::create(b, loc, neg, scaled, x);
}

Value scalarOf(dist::EluOp op, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  Value x = a[0];
  Value neg = cmp(b, loc, e, "lt", x, cst(b, loc, x, 0));
  Value em1 =
      arith::SubFOp::create(b, loc, expF(b, loc, x), cst(b, loc, x, 1.0));
  Value scaled = arith::MulFOp::create(
      b, loc, em1, cst(b, loc, x, op.getAlpha().convertToDouble()));
  return arith::SelectOp::create(b, loc, neg, scaled, x);
}

Value scalarOf(dist::SeluOp op, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  Value x = a[0];
  double alpha = op.getAlpha().convertToDouble();
  double gamma = op.getGamma().convertToDouble();
  Value le = cmp(b, loc, e, "le", x, cst(b, loc, x, 0));
  Value negPart = arith::MulFOp::create(
      b, loc,
      arith::SubFOp::create(b, loc, expF(b, loc, x), cst(b, loc, x, 1.0)),
      cst(b, loc, x, alpha * gamma));
  Value posPart = arith::MulFOp::create(b, loc, x, cst(b, loc, x, gamma));
  return arith::SelectOp::create(b, loc, le, negPart, posPart);
}

Value scalarOf(dist::CeluOp op, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &) {
  Value x = a[0];
  double alpha = op.getAlpha().convertToDouble();
  Value zero = cst(b, loc, x, 0);
  Value scaled =
      arith::DivFOp::create(b, loc, x, cst(b, loc, x, alpha));
  Value em1 =
      arith::SubFOp::create(b, loc, expF(b, loc, scaled), cst(b, loc, x, 1.0));
  Value neg = fmin(b, loc, zero,
                   arith::MulFOp::create(b, loc, em1, cst(b, loc, x, alpha)));
  return arith::AddFOp::create(b, loc, fmax(b, loc, zero, x), neg);
}

Value scalarOf(dist::SoftplusOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &) {
  // log(1 + exp(x)) computed as max(x, 0) + log1p(exp(-|x|)).
  Value x = a[0];
  Value absX = math::AbsFOp::create(b, loc, x);
  Value t = expF(b, loc, arith::NegFOp::create(b, loc, absX));
  Value l = mathUnary<math::Log1pOp>(b, loc, t);
  return arith::AddFOp::create(b, loc, fmax(b, loc, x, cst(b, loc, x, 0)), l);
}

Value scalarOf(dist::HardSigmoidOp op, OpBuilder &b, Location loc,
               ValueRange a, const ElemInfo &) {
  Value x = a[0];
  Value y = arith::AddFOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, x,
                            cst(b, loc, x, op.getAlpha().convertToDouble())),
      cst(b, loc, x, op.getBeta().convertToDouble()));
  return fmax(b, loc, cst(b, loc, x, 0),
              fmin(b, loc, cst(b, loc, x, 1), y));
}

Value scalarOf(dist::HardSwishOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &) {
  Value x = a[0];
  Value y = arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, x, cst(b, loc, x, 1.0 / 6.0)),
      cst(b, loc, x, 0.5));
  Value hs =
      fmax(b, loc, cst(b, loc, x, 0), fmin(b, loc, cst(b, loc, x, 1), y));
  return arith::MulFOp::create(b, loc, x, hs);
}

Value scalarOf(dist::GeluOp op, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &) {
  Value x = a[0];
  Value half = cst(b, loc, x, 0.5), one = cst(b, loc, x, 1.0);
  Value inner;
  if (op.getApproximate() == "tanh") {
    Value x3 = arith::MulFOp::create(b, loc, x,
                                     arith::MulFOp::create(b, loc, x, x));
    Value s = arith::AddFOp::create(
        b, loc, x, arith::MulFOp::create(b, loc, x3, cst(b, loc, x, 0.044715)));
    s = arith::MulFOp::create(b, loc, s,
                              cst(b, loc, x, std::sqrt(2.0 / M_PI)));
    inner = mathUnary<math::TanhOp>(b, loc, s);
  } else {
    Value s = arith::MulFOp::create(b, loc, x, cst(b, loc, x, M_SQRT1_2));
    inner = mathUnary<math::ErfOp>(b, loc, s);
  }
  Value t = arith::AddFOp::create(b, loc, one, inner);
  return arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, half, x),
                               t);
}

#define BINARY(OP, FN)                                                         \
  Value scalarOf(dist::OP, OpBuilder &b, Location loc, ValueRange a,           \
                 const ElemInfo &e) {                                          \
    return FN(b, loc, e, a[0], a[1]);                                          \
  }
BINARY(AddOp, add)
BINARY(SubOp, sub)
BINARY(MulOp, mul)
BINARY(DivOp, div)
#undef BINARY

#define COMPARE(OP, KIND)                                                      \
  Value scalarOf(dist::OP, OpBuilder &b, Location loc, ValueRange a,           \
                 const ElemInfo &e) {                                          \
    return cmp(b, loc, e, KIND, a[0], a[1]);                                   \
  }
COMPARE(EqualOp, "eq")
COMPARE(LessOp, "lt")
COMPARE(GreaterOp, "gt")
COMPARE(LessOrEqualOp, "le")
COMPARE(GreaterOrEqualOp, "ge")
#undef COMPARE

Value scalarOf(dist::AndOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &) {
  return arith::AndIOp::create(b, loc, a[0], a[1]);
}
Value scalarOf(dist::OrOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &) {
  return arith::OrIOp::create(b, loc, a[0], a[1]);
}
Value scalarOf(dist::XorOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &) {
  return arith::XOrIOp::create(b, loc, a[0], a[1]);
}

Value scalarOf(dist::PowOp op, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  Type expType = elemTypeOf(op.getRhs());
  Value x = a[0], y = a[1];
  if (e.isFloat()) {
    Value yf = convertScalar(b, loc, y, expType, e.orig);
    auto ft = cast<FloatType>(x.getType());
    if (ft.getWidth() < 32) {
      Value xw = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
      Value yw = arith::ExtFOp::create(b, loc, b.getF32Type(), yf);
      return arith::TruncFOp::create(
          b, loc, ft, math::PowFOp::create(b, loc, xw, yw));
    }
    return math::PowFOp::create(b, loc, x, yf);
  }
  // Integer base: with an integer exponent use exponentiation by squaring,
  // with a float exponent compute in f64 and truncate.
  if (isa<FloatType>(expType)) {
    Value xf = convertScalar(b, loc, x, e.orig, b.getF64Type());
    Value yf = convertScalar(b, loc, y, expType, b.getF64Type());
    Value r = math::PowFOp::create(b, loc, xf, yf);
    return convertScalar(b, loc, r, b.getF64Type(), e.orig);
  }
  Value yi = convertScalar(b, loc, y, expType, e.orig);
  return math::IPowIOp::create(b, loc, x, yi);
}

Value scalarOf(dist::ModOp op, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  Value x = a[0], y = a[1];
  if (e.isUnsigned())
    return arith::RemUIOp::create(b, loc, x, y);
  Value r = e.isFloat() ? Value(arith::RemFOp::create(b, loc, x, y))
                        : Value(arith::RemSIOp::create(b, loc, x, y));
  if (op.getFmod())
    return r;
  // Python semantics: a non-zero remainder takes the divisor's sign.
  Value zero = cst(b, loc, x, 0);
  Value differ = arith::XOrIOp::create(b, loc, cmp(b, loc, e, "lt", r, zero),
                                       cmp(b, loc, e, "lt", y, zero));
  Value fix =
      arith::AndIOp::create(b, loc, differ, cmp(b, loc, e, "ne", r, zero));
  return arith::SelectOp::create(b, loc, fix, add(b, loc, e, r, y), r);
}

/// Folds the variadic operands with a binary function.
template <typename Fn>
Value foldOperands(OpBuilder &b, Location loc, const ElemInfo &e, ValueRange a,
                   Fn fn) {
  Value r = a[0];
  for (Value v : a.drop_front())
    r = fn(b, loc, e, r, v);
  return r;
}

Value scalarOf(dist::MaxOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  return foldOperands(b, loc, e, a, maxOf);
}
Value scalarOf(dist::MinOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  return foldOperands(b, loc, e, a, minOf);
}
Value scalarOf(dist::SumOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  return foldOperands(b, loc, e, a, add);
}
Value scalarOf(dist::MeanOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  Value r = foldOperands(b, loc, e, a, add);
  return div(b, loc, e, r, cst(b, loc, r, (double)a.size()));
}

Value scalarOf(dist::WhereOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &) {
  return arith::SelectOp::create(b, loc, a[0], a[1], a[2]);
}

Value scalarOf(dist::PReluOp, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  Value x = a[0];
  Value neg = cmp(b, loc, e, "lt", x, cst(b, loc, x, 0));
  return arith::SelectOp::create(b, loc, neg, mul(b, loc, e, x, a[1]), x);
}

Value scalarOf(dist::CastOp op, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  return convertScalar(b, loc, a[0], e.orig, e.result);
}
Value scalarOf(dist::CastLikeOp op, OpBuilder &b, Location loc, ValueRange a,
               const ElemInfo &e) {
  return convertScalar(b, loc, a[0], e.orig, e.result);
}

/// Elementwise op whose tensor operands all take part (CastLike's target
/// only gives the type).
template <typename OpTy>
struct ElementwiseLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op->getResult(0).getType()));
    ElemInfo info{elemTypeOf(op->getOperand(0)),
                  elemTypeOf(op->getResult(0))};
    if (isa<dist::WhereOp>(op.getOperation()))
      info.orig = elemTypeOf(op->getOperand(1));
    SmallVector<Value> operands(adaptor.getOperands());
    if (isa<dist::CastLikeOp>(op.getOperation()))
      operands.resize(1);
    Value r = buildElementwise(
        rewriter, op.getLoc(), resultType, operands,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return scalarOf(op, b, loc, args, info);
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Ops whose result is their input: Identity, and mesh_copy (only the
/// training step builder cares about it, for its gradient).
template <typename OpT>
struct ForwardInputLowering : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
};

/// A call to the runtime's dist_rt_mesh_coord(axis) into a rank-0 tensor.
struct MeshCoordLowering : OpConversionPattern<dist::MeshCoordOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::MeshCoordOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto module = op->getParentOfType<ModuleOp>();
    Location loc = op.getLoc();
    Type i64 = rewriter.getI64Type();
    StringRef name = runtime_abi::kMeshCoord;
    auto callee = module.lookupSymbol<func::FuncOp>(name);
    if (!callee) {
      OpBuilder mb(module.getBodyRegion());
      mb.setInsertionPointToStart(module.getBody());
      callee =
          func::FuncOp::create(mb, loc, name, mb.getFunctionType({i64}, {i64}));
      callee.setPrivate();
    }
    Value axis =
        arith::ConstantIntOp::create(rewriter, loc, i64, op.getGridAxis());
    Value coord = func::CallOp::create(rewriter, loc, callee, ValueRange{axis})
                      .getResult(0);
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(
        op, RankedTensorType::get({}, i64), ValueRange{coord});
    return success();
  }
};

struct ClipLowering : OpConversionPattern<dist::ClipOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::ClipOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    ElemInfo e{elemTypeOf(op.getInput()), elemTypeOf(op.getInput())};
    SmallVector<Value> operands{adaptor.getInput()};
    bool hasMin = (bool)adaptor.getMin(), hasMax = (bool)adaptor.getMax();
    if (hasMin)
      operands.push_back(adaptor.getMin());
    if (hasMax)
      operands.push_back(adaptor.getMax());
    Value r = buildElementwise(
        rewriter, op.getLoc(), resultType,
        broadcastSizes(rewriter, op.getLoc(), resultType,
                       ValueRange{adaptor.getInput()}),
        operands, [&](OpBuilder &b, Location loc, ValueRange a) {
          Value x = a[0];
          unsigned i = 1;
          if (hasMin) {
            Value lo = a[i++];
            Value below = cmp(b, loc, e, "lt", x, lo);
            x = arith::SelectOp::create(b, loc, below, lo, x);
          }
          if (hasMax) {
            Value hi = a[i++];
            Value above = cmp(b, loc, e, "gt", x, hi);
            x = arith::SelectOp::create(b, loc, above, hi, x);
          }
          return x;
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct DropoutLowering : OpConversionPattern<dist::DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (op.getTrainingMode()) {
      auto training = constInts(op.getTrainingMode());
      std::optional<SmallVector<double>> ratio;
      if (op.getRatio())
        ratio = getConstantDoubles(op.getRatio());
      bool inference = training && !training->empty() && (*training)[0] == 0;
      bool zeroRatio = ratio && !ratio->empty() && (*ratio)[0] == 0.0;
      bool trainingOn = training && !training->empty() && (*training)[0] != 0;
      // Without a ratio operand the ratio is 0.5.
      bool ratioNonzero = !op.getRatio() || (ratio && !ratio->empty() &&
                                             (*ratio)[0] != 0.0);
      if (trainingOn && ratioNonzero)
        return notSupported(op, "dropout in training mode");
      if (!inference && !zeroRatio) {
        // Fed at run time: the code passes its input through, which is
        // right unless the run asks for training mode with a nonzero
        // ratio (random dropout), which then fails.
        auto first = [&](Value t) -> Value {
          auto type = cast<RankedTensorType>(t.getType());
          SmallVector<Value> zeros(
              type.getRank(), arith::ConstantIndexOp::create(rewriter, loc, 0));
          return tensor::ExtractOp::create(rewriter, loc, t, zeros);
        };
        Type i1 = rewriter.getI1Type();
        Value on = trainingOn ? Value(arith::ConstantIntOp::create(
                                    rewriter, loc, i1, 1))
                              : convertScalar(rewriter, loc,
                                              first(adaptor.getTrainingMode()),
                                              elemTypeOf(op.getTrainingMode()),
                                              i1);
        Value nonzero =
            ratioNonzero
                ? Value(arith::ConstantIntOp::create(rewriter, loc, i1, 1))
                : convertScalar(rewriter, loc, first(adaptor.getRatio()),
                                elemTypeOf(op.getRatio()), i1);
        reportUnsupportedIf(
            rewriter, loc, op,
            arith::AndIOp::create(rewriter, loc, on, nonzero),
            "dropout in training mode with a nonzero ratio (the inputs fed "
            "at run time ask for it)");
      }
    }
    auto maskType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getMask().getType()));
    Value one = scalarConst(rewriter, loc, rewriter.getI1Type(), 1);
    Value mask = filledTensor(rewriter, loc, maskType,
                              sizesOf(rewriter, loc, adaptor.getInput()), one);
    rewriter.replaceOp(op, {adaptor.getInput(), mask});
    return success();
  }
};

} // namespace

void codegen::populateElementwiseLowering(TypeConverter &tc,
                                          RewritePatternSet &p) {
  MLIRContext *ctx = p.getContext();
  p.add<ElementwiseLowering<dist::AbsOp>, ElementwiseLowering<dist::NegOp>,
        ElementwiseLowering<dist::ExpOp>, ElementwiseLowering<dist::LogOp>,
        ElementwiseLowering<dist::SqrtOp>,
        ElementwiseLowering<dist::ReciprocalOp>,
        ElementwiseLowering<dist::FloorOp>, ElementwiseLowering<dist::CeilOp>,
        ElementwiseLowering<dist::RoundOp>, ElementwiseLowering<dist::SignOp>,
        ElementwiseLowering<dist::SinOp>, ElementwiseLowering<dist::CosOp>,
        ElementwiseLowering<dist::TanOp>, ElementwiseLowering<dist::AsinOp>,
        ElementwiseLowering<dist::AcosOp>, ElementwiseLowering<dist::AtanOp>,
        ElementwiseLowering<dist::SinhOp>, ElementwiseLowering<dist::CoshOp>,
        ElementwiseLowering<dist::AsinhOp>, ElementwiseLowering<dist::AcoshOp>,
        ElementwiseLowering<dist::AtanhOp>, ElementwiseLowering<dist::TanhOp>,
        ElementwiseLowering<dist::SigmoidOp>, ElementwiseLowering<dist::ReluOp>,
        ElementwiseLowering<dist::LeakyReluOp>,
        ElementwiseLowering<dist::EluOp>, ElementwiseLowering<dist::SeluOp>,
        ElementwiseLowering<dist::CeluOp>,
        ElementwiseLowering<dist::SoftplusOp>,
        ElementwiseLowering<dist::SoftsignOp>,
        ElementwiseLowering<dist::HardSigmoidOp>,
        ElementwiseLowering<dist::HardSwishOp>,
        ElementwiseLowering<dist::ErfOp>, ElementwiseLowering<dist::GeluOp>,
        ElementwiseLowering<dist::NotOp>, ElementwiseLowering<dist::CastOp>,
        ElementwiseLowering<dist::CastLikeOp>, ElementwiseLowering<dist::AddOp>,
        ElementwiseLowering<dist::SubOp>, ElementwiseLowering<dist::MulOp>,
        ElementwiseLowering<dist::DivOp>, ElementwiseLowering<dist::PowOp>,
        ElementwiseLowering<dist::ModOp>, ElementwiseLowering<dist::EqualOp>,
        ElementwiseLowering<dist::LessOp>, ElementwiseLowering<dist::GreaterOp>,
        ElementwiseLowering<dist::LessOrEqualOp>,
        ElementwiseLowering<dist::GreaterOrEqualOp>,
        ElementwiseLowering<dist::AndOp>, ElementwiseLowering<dist::OrOp>,
        ElementwiseLowering<dist::XorOp>, ElementwiseLowering<dist::MaxOp>,
        ElementwiseLowering<dist::MinOp>, ElementwiseLowering<dist::SumOp>,
        ElementwiseLowering<dist::MeanOp>, ElementwiseLowering<dist::WhereOp>,
        ElementwiseLowering<dist::PReluOp>,
        ForwardInputLowering<dist::IdentityOp>,
        ForwardInputLowering<dist::MeshCopyOp>, MeshCoordLowering, ClipLowering,
        DropoutLowering>(tc, ctx);
}
