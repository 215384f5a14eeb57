//===- Costs.cpp - Defaults of the cost op interface ------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What one execution of a graph op costs: FLOPs, bytes moved, and the shape
// of the matrix product for contractions. Counts follow how codegen runs
// the op (lib/Codegen/Host): matmul and gemm are one (batched) GEMM; 2-D
// f32/f64 convolutions with one group are im2col plus a GEMM per image;
// other convolutions are direct loops, counted as elementwise work with
// their full multiply-add count.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dist;

namespace {

FailureOr<int64_t> staticNumElements(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return failure();
  return shaped.getNumElements();
}

FailureOr<int64_t> staticBytes(Type type) {
  FailureOr<int64_t> n = staticNumElements(type);
  if (failed(n))
    return failure();
  Type elt = getElementTypeOrSelf(type);
  if (!elt.isIntOrFloat())
    return failure(); // Strings have no fixed size.
  unsigned bits = elt.getIntOrFloatBitWidth();
  return *n * static_cast<int64_t>((bits + 7) / 8);
}

FailureOr<int64_t> resultElements(Operation *op) {
  int64_t total = 0;
  for (Type t : op->getResultTypes()) {
    FailureOr<int64_t> n = staticNumElements(t);
    if (failed(n))
      return failure();
    total += *n;
  }
  return total;
}

FailureOr<int64_t> operandElements(Operation *op, unsigned i) {
  if (i >= op->getNumOperands())
    return failure();
  return staticNumElements(op->getOperand(i).getType());
}

RankedTensorType rankedStatic(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() ? t : RankedTensorType();
}

/// FLOPs per output element of the direct (non-GEMM) convolution loops:
/// 2 * C/group * prod(kernel).
FailureOr<int64_t> convMacsPerOutput(Operation *op, Value weight,
                                     bool transpose, int64_t group) {
  RankedTensorType w = rankedStatic(weight);
  if (!w || w.getRank() < 3)
    return failure();
  int64_t kernel = 1;
  for (int64_t i = 2; i < w.getRank(); ++i)
    kernel *= w.getDimSize(i);
  // Conv weight: F x C/g x k...; ConvTranspose weight: C x F/g x k...: each
  // output element gathers C/g inputs either way.
  int64_t perGroupIn = transpose ? w.getDimSize(0) / std::max<int64_t>(1, group)
                                 : w.getDimSize(1);
  (void)op;
  return 2 * perGroupIn * kernel;
}

/// Relative cost of one result element of elementwise-like ops, in FLOPs:
/// transcendental functions are polynomial approximations. Erf counts 12;
/// exp, tanh, sigmoid and log count in proportion to their arithmetic time
/// as codegen emits them (measured over 64 x 1024 f32 at one thread on the
/// 2-core EPYC, less the 0.04 ns an element a ReLU takes: erf 0.18 ns, exp
/// 0.10, tanh 0.08, sigmoid 0.13, log 0.28 through libm's vector log); GELU
/// is erf and four multiplies and adds. The others keep erf's count.
/// The calibration's loop_flops gives the rate of these FLOPs
/// (isTranscendental; the cost model prices other FLOPs at half the
/// vector peak).
int64_t elementCost(Operation *op) {
  return TypeSwitch<Operation *, int64_t>(op)
      .Case<ExpOp>([](auto) { return 7; })
      .Case<TanhOp>([](auto) { return 5; })
      .Case<SigmoidOp>([](auto) { return 9; })
      .Case<LogOp>([](auto) { return 19; })
      .Case<GeluOp>([](auto) { return 16; })
      .Case<ErfOp, SoftplusOp, EluOp, SeluOp, CeluOp, SinOp, CosOp, TanOp,
            AsinOp, AcosOp, AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp,
            PowOp>([](auto) { return 12; })
      .Case<DivOp, SqrtOp, ReciprocalOp, SoftsignOp>([](auto) { return 4; })
      .Case<HardSigmoidOp, HardSwishOp, LeakyReluOp, ClipOp, PReluOp>(
          [](auto) { return 2; })
      .Default([](Operation *) { return 1; });
}

} // namespace

bool mlir::dist::detail::isTranscendental(Operation *op) {
  return isa<ExpOp, TanhOp, SigmoidOp, LogOp, GeluOp, ErfOp, SoftplusOp, EluOp,
             SeluOp, CeluOp, SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp,
             SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp, PowOp>(op);
}

FailureOr<SmallVector<int64_t, 4>>
mlir::dist::detail::defaultContractionShape(Operation *op) {
  return TypeSwitch<Operation *, FailureOr<SmallVector<int64_t, 4>>>(op)
      .Case([](MatMulOp mm) -> FailureOr<SmallVector<int64_t, 4>> {
        RankedTensorType a = rankedStatic(mm.getLhs());
        RankedTensorType b = rankedStatic(mm.getRhs());
        RankedTensorType y = rankedStatic(mm.getOutput());
        if (!a || !b || !y)
          return failure();
        int64_t k = a.getDimSize(a.getRank() - 1);
        int64_t m = a.getRank() >= 2 ? a.getDimSize(a.getRank() - 2) : 1;
        int64_t n = b.getRank() >= 2 ? b.getDimSize(b.getRank() - 1) : 1;
        int64_t outElems = y.getNumElements();
        int64_t batch =
            std::max<int64_t>(1, outElems / std::max<int64_t>(1, m * n));
        // A 2-D weight shared by every batch is one long GEMM in codegen.
        if (b.getRank() == 2 && a.getRank() > 2) {
          m *= batch;
          batch = 1;
        }
        return SmallVector<int64_t, 4>{batch, m, n, k};
      })
      .Case([](GemmOp g) -> FailureOr<SmallVector<int64_t, 4>> {
        RankedTensorType a = rankedStatic(g.getA());
        RankedTensorType y = rankedStatic(g.getOutput());
        if (!a || !y || a.getRank() != 2 || y.getRank() != 2)
          return failure();
        int64_t k = g.getTransA() ? a.getDimSize(0) : a.getDimSize(1);
        return SmallVector<int64_t, 4>{1, y.getDimSize(0), y.getDimSize(1), k};
      })
      .Case([](ConvOp c) -> FailureOr<SmallVector<int64_t, 4>> {
        RankedTensorType x = rankedStatic(c.getInput());
        RankedTensorType w = rankedStatic(c.getWeight());
        RankedTensorType y = rankedStatic(c.getOutput());
        Type elem = getElementTypeOrSelf(c.getInput().getType());
        if (!x || !w || !y || c.getGroup() != 1 || w.getRank() != 4 ||
            !(elem.isF32() || elem.isF64()))
          return failure();
        int64_t k = w.getDimSize(1) * w.getDimSize(2) * w.getDimSize(3);
        return SmallVector<int64_t, 4>{y.getDimSize(0), w.getDimSize(0),
                                       y.getDimSize(2) * y.getDimSize(3), k};
      })
      .Case([](ConvWeightGradOp c) -> FailureOr<SmallVector<int64_t, 4>> {
        // One product per sample, summed: dy[n] (F x P) times the sample's
        // im2col columns (C*k x P) transposed.
        RankedTensorType x = rankedStatic(c.getInput());
        RankedTensorType dy = rankedStatic(c.getOutputGrad());
        RankedTensorType dw = rankedStatic(c.getOutput());
        if (!x || !dy || !dw)
          return failure();
        int64_t q = 1, p = 1;
        for (int64_t d : dw.getShape().drop_front())
          q *= d;
        for (int64_t d : dy.getShape().drop_front(2))
          p *= d;
        return SmallVector<int64_t, 4>{dy.getDimSize(0), dy.getDimSize(1), q,
                                       p};
      })
      .Default([](Operation *) { return failure(); });
}

FailureOr<int64_t> mlir::dist::detail::defaultFlopCount(Operation *op) {
  FailureOr<SmallVector<int64_t, 4>> shape = defaultContractionShape(op);
  if (succeeded(shape)) {
    const SmallVector<int64_t, 4> &s = *shape;
    FailureOr<int64_t> out = resultElements(op);
    if (failed(out))
      return failure();
    // Bias / beta * C epilogue: one add per output element. Counted in
    // double: huge products must fail, not wrap.
    double total =
        2.0 * s[0] * s[1] * s[2] * s[3] + (op->getNumOperands() > 2 ? *out : 0);
    if (total > 9.0e18)
      return failure();
    return static_cast<int64_t>(total);
  }
  FailureOr<int64_t> out = resultElements(op);
  if (failed(out))
    return failure();
  return TypeSwitch<Operation *, FailureOr<int64_t>>(op)
      .Case([&](ConvOp c) -> FailureOr<int64_t> {
        FailureOr<int64_t> macs =
            convMacsPerOutput(op, c.getWeight(), false, c.getGroup());
        if (failed(macs))
          return failure();
        return *out * *macs;
      })
      .Case([&](ConvTransposeOp c) -> FailureOr<int64_t> {
        // Every input element scatters into F/g * prod(kernel) outputs.
        RankedTensorType w = rankedStatic(c.getWeight());
        FailureOr<int64_t> in = operandElements(op, 0);
        if (!w || failed(in))
          return failure();
        int64_t perIn = 2;
        for (int64_t i = 1; i < w.getRank(); ++i)
          perIn *= w.getDimSize(i);
        return *in * perIn;
      })
      .Case<MaxPoolOp, AveragePoolOp>([&](auto pool) -> FailureOr<int64_t> {
        int64_t kernel = 1;
        for (int64_t k : pool.getKernelShape())
          kernel *= k;
        return *out * kernel;
      })
      .Case<GlobalAveragePoolOp, GlobalMaxPoolOp, ReduceSumOp, ReduceMeanOp,
            ReduceMaxOp, ReduceMinOp, ReduceProdOp, ReduceSumSquareOp,
            ReduceL2Op, ReduceLogSumExpOp, ArgMaxOp, ArgMinOp, CumSumOp>(
          [&](Operation *) -> FailureOr<int64_t> {
            FailureOr<int64_t> in = operandElements(op, 0);
            if (failed(in))
              return failure();
            return 2 * *in;
          })
      .Case<SoftmaxOp, LogSoftmaxOp>(
          [&](Operation *) -> FailureOr<int64_t> { return 16 * *out; })
      .Case<LayerNormOp, InstanceNormOp, BatchNormOp>(
          [&](Operation *) -> FailureOr<int64_t> {
            FailureOr<int64_t> in = operandElements(op, 0);
            if (failed(in))
              return failure();
            return 8 * *in;
          })
      .Case<SoftmaxCrossEntropyLossOp, NegativeLogLikelihoodLossOp>(
          [&](Operation *) -> FailureOr<int64_t> {
            FailureOr<int64_t> in = operandElements(op, 0);
            if (failed(in))
              return failure();
            return 16 * *in;
          })
      .Case<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp, ShapeOp,
            SizeOp, ConstantOfShapeOp, TransposeOp, ConcatOp, SplitOp, SliceOp,
            GatherOp, GatherElementsOp, ExpandOp, TileOp, PadOp, CastOp,
            CastLikeOp, MeshCopyOp, MeshCoordOp>(
          [&](Operation *) -> FailureOr<int64_t> { return 0; })
      .Default([&](Operation *) -> FailureOr<int64_t> {
        return *out * elementCost(op);
      });
}

FailureOr<int64_t> mlir::dist::detail::defaultBytesAccessed(Operation *op) {
  int64_t total = 0;
  for (Type t : llvm::concat<Type>(llvm::to_vector(op->getOperandTypes()),
                                   llvm::to_vector(op->getResultTypes()))) {
    FailureOr<int64_t> n = staticBytes(t);
    if (failed(n))
      return failure();
    total += *n;
  }
  return total;
}
