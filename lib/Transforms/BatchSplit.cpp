//===- BatchSplit.cpp - Split an inference batch over data parallelism ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Under a mesh with a dp axis, each dp rank can run the inference function on
// its own rows of the batch (the runtime gathers the rows of every output)
// when sample i of every output depends only on sample i of the inputs. This
// file proves that with a forward dataflow analysis over the function and,
// for a static batch, rebuilds the function at batch / dp.
//
// Each value is
//   - uniform: the same on every rank, independent of the data (parameters,
//     constants, anything computed from them only);
//   - batched along axis a: dimension a is the batch, and slice i along a
//     is computed from sample i of the inputs alone;
//   - a shape of the batch: a small integer tensor computed from the shape
//     of a batched value (Shape, Size and arithmetic on them), which may
//     only serve as the target of a Reshape or Expand whose types prove
//     that the batch keeps its rows.
// Every op has a rule; an op without one, or one that reduces, normalises,
// concatenates or indexes across the batch axis, keeps the batch whole, and
// the reason is recorded. The analysis is conservative: a model it cannot
// prove batch-parallel still runs correctly, with every rank computing the
// whole batch (as before this pass existed).
//
// Why not upstream sharding propagation: `sharding-propagation` fails on
// ops without a ShardingInterface model (shared/ENVIRONMENT.md), and what
// is needed is a yes/no proof for one axis, not a sharding per op.
//
//===----------------------------------------------------------------------===//

#include "dist/Transforms/Passes.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/ShapeUtils.h"
#include "dist/Transforms/LayerCosts.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dist;

namespace {

struct BatchState {
  enum Kind { Uniform, Batched, ShapeOfBatch } kind = Uniform;
  /// The batch axis of a Batched value.
  int64_t axis = -1;
  /// ShapeOfBatch, elements of the (0-D or 1-D) value in order: bit i of
  /// `exact` says element i is the batch size itself, bit i of `depends`
  /// that it is computed from it (exact included). Elements past 63, and
  /// anything arithmetic made, count as depending.
  uint64_t exact = 0, depends = ~uint64_t{0};

  static BatchState uniform() { return {}; }
  static BatchState batched(int64_t axis) { return {Batched, axis}; }
  static BatchState shapeOfBatch(uint64_t exact = 0,
                                 uint64_t depends = ~uint64_t{0}) {
    if (depends == 0)
      return uniform();
    return {ShapeOfBatch, -1, exact & depends, depends};
  }
  /// Whether this is a shape whose element `i` is exactly the batch size
  /// and no other element depends on it.
  bool isBatchAt(int64_t i) const {
    return kind == ShapeOfBatch && i >= 0 && i < 64 &&
           exact == (uint64_t{1} << i) && depends == exact;
  }
};

class BatchAnalysis {
public:
  /// `batch`: the static batch, or 0 when it is dynamic; `dp`: the ranks it
  /// is split over, the `dpAxis`-th axis of the mesh.
  BatchAnalysis(func::FuncOp func, int64_t batch, int64_t dp, int64_t dpAxis)
      : func(func), batch(batch), dp(dp), dpAxis(dpAxis) {}

  /// Empty when every output is batched along axis 0 by ops that keep the
  /// samples apart; otherwise why not.
  std::string run();

private:
  func::FuncOp func;
  int64_t batch, dp, dpAxis;
  llvm::DenseMap<Value, BatchState> states;

  BatchState get(Value v) const {
    auto it = states.find(v);
    return it == states.end() ? BatchState::uniform() : it->second;
  }
  static int64_t rankOf(Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t ? t.getRank() : -1;
  }
  static int64_t dimOf(Value v, int64_t d) {
    return cast<RankedTensorType>(v.getType()).getDimSize(d);
  }
  bool isBatchDim(int64_t d) const {
    return batch > 0 ? d == batch : ShapedType::isDynamic(d);
  }

  /// Marks `v` batched along `axis` after checking that its type carries
  /// the batch there.
  std::string setBatched(Operation *op, Value v, int64_t axis);
  std::string visit(Operation *op);
  /// Numpy broadcasting of the tensor operands `ins` into result `out`.
  std::string broadcast(Operation *op, ValueRange ins, Value out);
  /// Every result of `op` batched along `axis` (after checks).
  std::string allBatched(Operation *op, int64_t axis);
  /// Only operand `data` of `op` may be batched; the others must be
  /// uniform. Returns its axis, or -1 with `why` set.
  int64_t onlyBatched(Operation *op, Value data, std::string &why);
  /// The result of shape arithmetic `op` on shapes of the batch: which
  /// elements a constant Gather or Slice picks, how a Concat lines them up;
  /// anything else depends on the batch throughout.
  BatchState shapeArithmetic(Operation *op);
  /// A reduction of operand 0 of `op` over the normalised `axes`.
  std::string reduce(Operation *op, llvm::ArrayRef<int64_t> axes,
                     bool keepDims);
};

std::string describe(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "'" << op->getName() << "'";
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    os << " (node '" << loc.getName().getValue() << "')";
  return s;
}

std::string BatchAnalysis::setBatched(Operation *op, Value v, int64_t axis) {
  int64_t rank = rankOf(v);
  if (axis < 0 || axis >= rank || !isBatchDim(dimOf(v, axis)))
    return describe(op) + " does not keep the batch as one dimension";
  states[v] = BatchState::batched(axis);
  return "";
}

std::string BatchAnalysis::allBatched(Operation *op, int64_t axis) {
  for (Value r : op->getResults())
    if (std::string why = setBatched(op, r, axis); !why.empty())
      return why;
  return "";
}

int64_t BatchAnalysis::onlyBatched(Operation *op, Value data,
                                   std::string &why) {
  for (Value v : op->getOperands())
    if (v != data && get(v).kind != BatchState::Uniform) {
      why = describe(op) + " takes data-dependent operands other than its "
                           "input";
      return -1;
    }
  BatchState s = get(data);
  if (s.kind != BatchState::Batched) {
    why = describe(op) + " takes a shape of the batch as data";
    return -1;
  }
  return s.axis;
}

std::string BatchAnalysis::broadcast(Operation *op, ValueRange ins, Value out) {
  int64_t outRank = rankOf(out);
  if (outRank < 0)
    return describe(op) + " has an unranked result";
  int64_t axis = -1;
  for (Value v : ins) {
    BatchState s = get(v);
    if (s.kind != BatchState::Batched)
      continue;
    int64_t a = s.axis + outRank - rankOf(v);
    if (axis >= 0 && a != axis)
      return describe(op) + " combines batches along different axes";
    axis = a;
  }
  // A uniform operand must broadcast along the batch axis: a full-size one
  // would need its own rows on each rank.
  for (Value v : ins) {
    if (get(v).kind != BatchState::Uniform)
      continue;
    int64_t a = axis - (outRank - rankOf(v));
    if (a >= 0 && dimOf(v, a) != 1)
      return describe(op) + " combines the batch with a batch-sized constant";
  }
  return setBatched(op, out, axis);
}

std::string BatchAnalysis::reduce(Operation *op, llvm::ArrayRef<int64_t> axes,
                                  bool keepDims) {
  int64_t a = get(op->getOperand(0)).axis;
  int64_t shift = 0;
  for (int64_t r : axes) {
    if (r == a)
      return describe(op) + " reduces over the batch";
    shift += r < a;
  }
  return allBatched(op, keepDims ? a : a - shift);
}

/// Normalised constant axes of operand `v` (of an op on a rank-`rank`
/// input), or nullopt when not constant or out of range.
std::optional<Dims> constantAxes(Value v, int64_t rank) {
  std::optional<Dims> axes = getConstantInts(v);
  if (!axes)
    return std::nullopt;
  for (int64_t &a : *axes) {
    std::optional<int64_t> n = normalizeAxis(a, rank);
    if (!n)
      return std::nullopt;
    a = *n;
  }
  return axes;
}

/// Bit `i` of `mask` (elements past 63 count as set).
bool bitAt(uint64_t mask, int64_t i) { return i >= 64 || (mask >> i) & 1; }

/// The elements of a 1-D `v` of static length; -1 when unknown.
int64_t lengthOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() > 1 || !t.hasStaticShape())
    return -1;
  return t.getRank() == 0 ? 1 : t.getDimSize(0);
}

bool isShapeArithmetic(Operation *op) {
  return isa<CastOp, IdentityOp, GatherOp, SliceOp, ConcatOp, UnsqueezeOp,
             SqueezeOp, ReshapeOp, AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp>(
      op);
}

BatchState BatchAnalysis::shapeArithmetic(Operation *op) {
  BatchState all = BatchState::shapeOfBatch();
  // Element i of the result is element picked[i] of operand 0.
  auto pick = [&](ArrayRef<int64_t> picked) {
    BatchState in = get(op->getOperand(0));
    uint64_t exact = 0, depends = 0;
    for (auto [i, p] : llvm::enumerate(picked)) {
      if (i >= 64)
        return all;
      exact |= uint64_t{bitAt(in.exact, p)} << i;
      depends |= uint64_t{bitAt(in.depends, p)} << i;
    }
    return BatchState::shapeOfBatch(exact, depends);
  };
  int64_t length = lengthOf(op->getOperand(0));
  if (auto g = dyn_cast<GatherOp>(op)) {
    std::optional<Dims> idx = getConstantInts(g.getIndices());
    if (g.getAxis() != 0 || length < 0 ||
        get(g.getIndices()).kind != BatchState::Uniform || !idx)
      return all;
    for (int64_t &i : *idx) {
      i = i < 0 ? i + length : i;
      if (i < 0 || i >= length)
        return all;
    }
    return pick(*idx);
  }
  if (auto sl = dyn_cast<SliceOp>(op)) {
    std::optional<Dims> starts = getConstantInts(sl.getStarts());
    std::optional<Dims> ends = getConstantInts(sl.getEnds());
    std::optional<Dims> steps =
        sl.getSteps() ? getConstantInts(sl.getSteps()) : Dims{1};
    if (length < 0 || !starts || !ends || !steps || starts->size() != 1 ||
        ends->size() != 1 || steps->size() != 1 || (*steps)[0] != 1 ||
        (sl.getAxes() && getConstantInts(sl.getAxes()) != Dims{0}))
      return all;
    auto clamp = [&](int64_t v) {
      v = v < 0 ? v + length : v;
      return std::clamp<int64_t>(v, 0, length);
    };
    Dims picked;
    for (int64_t i = clamp((*starts)[0]); i < clamp((*ends)[0]); ++i)
      picked.push_back(i);
    return pick(picked);
  }
  if (auto c = dyn_cast<ConcatOp>(op)) {
    uint64_t exact = 0, depends = 0;
    int64_t at = 0;
    for (Value v : c.getInputs()) {
      int64_t n = lengthOf(v);
      if (n < 0 || at + n > 64)
        return all;
      BatchState s = get(v);
      if (s.kind == BatchState::ShapeOfBatch) {
        uint64_t keep = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
        exact |= (s.exact & keep) << at;
        depends |= (s.depends & keep) << at;
      }
      at += n;
    }
    return BatchState::shapeOfBatch(exact, depends);
  }
  // Same elements in the same order.
  if (isa<UnsqueezeOp, SqueezeOp, CastOp, IdentityOp, ReshapeOp>(op) &&
      get(op->getOperand(0)).kind == BatchState::ShapeOfBatch &&
      lengthOf(op->getOperand(0)) >= 0 &&
      lengthOf(op->getOperand(0)) == lengthOf(op->getResult(0)))
    return get(op->getOperand(0));
  return all;
}

std::string BatchAnalysis::visit(Operation *op) {
  bool anyBatched = false, anyShape = false;
  for (Value v : op->getOperands()) {
    BatchState::Kind k = get(v).kind;
    anyBatched |= k == BatchState::Batched;
    anyShape |= k == BatchState::ShapeOfBatch;
  }
  if (!anyBatched && !anyShape)
    return ""; // Uniform in, uniform out.
  // Shapes of the batch: arithmetic on them stays one; a Reshape or Expand
  // may take one as its target (checked by their rules below).
  if (anyShape) {
    bool target = isa<ReshapeOp, ExpandOp>(op) &&
                  get(op->getOperand(0)).kind != BatchState::ShapeOfBatch &&
                  get(op->getOperand(1)).kind == BatchState::ShapeOfBatch;
    if (!target) {
      if (anyBatched || !isShapeArithmetic(op))
        return describe(op) + " uses the batch size as data";
      BatchState r = shapeArithmetic(op);
      for (Value v : op->getResults())
        states[v] = r;
      return "";
    }
    if (!anyBatched)
      return describe(op) + " builds a batch-sized tensor from constants";
  }

  std::string why;
  auto unary = [&](Value in) -> std::string {
    int64_t a = onlyBatched(op, in, why);
    return a < 0 ? why : allBatched(op, a);
  };
  // Ops on [N, C, ...] whose other operands are uniform (weights).
  auto samplesFirst = [&](Value in, ValueRange results) -> std::string {
    int64_t a = onlyBatched(op, in, why);
    if (a < 0)
      return why;
    if (a != 0)
      return describe(op) + " takes the batch in another dimension than N";
    for (Value r : results)
      if (std::string bad = setBatched(op, r, 0); !bad.empty())
        return bad;
    return "";
  };
  auto rankIn = [&] { return rankOf(op->getOperand(0)); };
  auto axisIn = [&] { return get(op->getOperand(0)).axis; };
  // Ops working along one axis of a batched input (unknown when null):
  // samples stay apart unless that axis is the batch.
  auto alongOneAxis = [&](Value in, std::optional<int64_t> along,
                          StringRef acrossBatch) -> std::string {
    int64_t a = onlyBatched(op, in, why);
    if (a < 0)
      return why;
    if (!along || *along == a)
      return describe(op) + " " + acrossBatch.str();
    return allBatched(op, a);
  };

  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case<AbsOp, NegOp, ExpOp, LogOp, SqrtOp, ReciprocalOp, FloorOp, CeilOp,
            RoundOp, SignOp, SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp,
            SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp, TanhOp, SigmoidOp,
            ReluOp, LeakyReluOp, EluOp, SeluOp, CeluOp, SoftplusOp, SoftsignOp,
            HardSigmoidOp, HardSwishOp, ErfOp, GeluOp, NotOp, IdentityOp,
            MeshCopyOp, CastOp>(
          [&](Operation *) { return unary(op->getOperand(0)); })
      .Case<CastLikeOp>([&](CastLikeOp c) {
        if (get(c.getInput()).kind != BatchState::Batched)
          return describe(op) + " takes its batch from the target only";
        return allBatched(op, get(c.getInput()).axis);
      })
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, ModOp, EqualOp, LessOp,
            GreaterOp, LessOrEqualOp, GreaterOrEqualOp, AndOp, OrOp, XorOp,
            MaxOp, MinOp, SumOp, MeanOp, WhereOp, PReluOp, ClipOp>(
          [&](Operation *) {
            return broadcast(op, op->getOperands(), op->getResult(0));
          })
      .Case<DropoutOp>([&](DropoutOp d) {
        if (Value mode = d.getTrainingMode()) {
          std::optional<Dims> v = getConstantInts(mode);
          if (!v || v->size() != 1 || (*v)[0] != 0)
            return describe(op) + " may run in training mode";
        }
        return unary(d.getInput());
      })
      .Case<MatMulOp>([&](MatMulOp m) -> std::string {
        Value lhs = m.getLhs(), rhs = m.getRhs();
        int64_t lr = rankOf(lhs), rr = rankOf(rhs), outRank = rankOf(m);
        BatchState ls = get(lhs), rs = get(rhs);
        if (lr < 2 || rr < 2)
          return describe(op) + " has a vector operand";
        // Batched operands along the broadcast (leading) dimensions.
        auto lead = [&](BatchState s, int64_t rank) {
          return s.kind == BatchState::Batched && s.axis < rank - 2;
        };
        if (lead(ls, lr) || lead(rs, rr)) {
          if ((ls.kind == BatchState::Batched && !lead(ls, lr)) ||
              (rs.kind == BatchState::Batched && !lead(rs, rr)))
            return describe(op) + " multiplies the batch into itself";
          // The leading dimensions broadcast like an elementwise op's; the
          // batch axis is one of them, so the matrix dimensions are not
          // involved.
          return broadcast(op, m->getOperands(), m.getResult());
        }
        // Rows of the left operand, or columns of the right one, against
        // a uniform other side.
        if (ls.kind == BatchState::Batched && rs.kind == BatchState::Uniform &&
            ls.axis == lr - 2 && rr <= 2)
          return setBatched(op, m.getResult(), outRank - 2);
        if (rs.kind == BatchState::Batched && ls.kind == BatchState::Uniform &&
            rs.axis == rr - 1 && lr <= 2)
          return setBatched(op, m.getResult(), outRank - 1);
        return describe(op) + " contracts over the batch";
      })
      .Case<GemmOp>([&](GemmOp g) -> std::string {
        BatchState a = get(g.getA());
        if (a.kind != BatchState::Batched ||
            get(g.getB()).kind != BatchState::Uniform ||
            a.axis != (g.getTransA() ? 1 : 0))
          return describe(op) + " contracts over the batch";
        if (Value c = g.getC()) {
          BatchState cs = get(c);
          int64_t cr = rankOf(c);
          if (cs.kind == BatchState::Batched ? cs.axis + 2 - cr != 0
                                             : cr == 2 && dimOf(c, 0) != 1)
            return describe(op) + " adds a bias that is not per sample";
        }
        return setBatched(op, g.getResult(), 0);
      })
      .Case<ConvOp, ConvTransposeOp, AveragePoolOp, GlobalAveragePoolOp,
            GlobalMaxPoolOp, InstanceNormOp>([&](Operation *) -> std::string {
        return samplesFirst(op->getOperand(0), op->getResults());
      })
      .Case<MaxPoolOp>([&](MaxPoolOp p) -> std::string {
        // The indices count elements of the whole input, batch included.
        if (!p.getIndices().use_empty())
          return describe(op) + " returns indices into the whole batch";
        return samplesFirst(p.getInput(), p.getOutput());
      })
      .Case<BatchNormOp>([&](BatchNormOp bn) -> std::string {
        if (bn.getTrainingMode() != 0)
          return describe(op) + " normalises over the batch (training mode)";
        // In inference mode the running statistics pass through unchanged.
        return samplesFirst(bn.getInput(), bn.getOutput());
      })
      .Case<LayerNormOp>([&](LayerNormOp ln) -> std::string {
        int64_t a = onlyBatched(op, ln.getInput(), why);
        if (a < 0)
          return why;
        std::optional<int64_t> axis = normalizeAxis(ln.getAxis(), rankIn());
        if (!axis || *axis <= a)
          return describe(op) + " normalises over the batch";
        return allBatched(op, a);
      })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](Operation *) -> std::string {
        auto axisAttr = op->getAttrOfType<IntegerAttr>("axis");
        return alongOneAxis(
            op->getOperand(0),
            normalizeAxis(axisAttr ? axisAttr.getInt() : -1, rankIn()),
            "normalises over the batch");
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
            ReduceSumSquareOp, ReduceL2Op, ReduceLogSumExpOp>(
          [&](Operation *) -> std::string {
            if (onlyBatched(op, op->getOperand(0), why) < 0)
              return why;
            bool keep = op->getAttrOfType<IntegerAttr>("keepdims").getInt();
            bool noop =
                op->getAttrOfType<IntegerAttr>("noop_with_empty_axes").getInt();
            if (op->getNumOperands() < 2)
              return noop ? allBatched(op, axisIn())
                          : describe(op) + " reduces over every axis";
            std::optional<Dims> axes =
                constantAxes(op->getOperand(1), rankIn());
            if (!axes)
              return describe(op) + " reduces over axes known at run time";
            if (axes->empty())
              return noop ? allBatched(op, axisIn())
                          : describe(op) + " reduces over every axis";
            return reduce(op, *axes, keep);
          })
      .Case<ArgMaxOp, ArgMinOp>([&](Operation *) -> std::string {
        if (onlyBatched(op, op->getOperand(0), why) < 0)
          return why;
        std::optional<int64_t> axis = normalizeAxis(
            op->getAttrOfType<IntegerAttr>("axis").getInt(), rankIn());
        if (!axis)
          return describe(op) + " has an invalid axis";
        return reduce(op, {*axis},
                      op->getAttrOfType<IntegerAttr>("keepdims").getInt());
      })
      .Case<TopKOp>([&](TopKOp t) -> std::string {
        return alongOneAxis(t.getInput(), normalizeAxis(t.getAxis(), rankIn()),
                            "ranks across the batch");
      })
      .Case<CumSumOp>([&](CumSumOp c) -> std::string {
        std::optional<Dims> axes = constantAxes(c.getAxis(), rankIn());
        std::optional<int64_t> along;
        if (axes && axes->size() == 1)
          along = (*axes)[0];
        return alongOneAxis(c.getInput(), along,
                            "accumulates across the batch");
      })
      .Case<TriluOp>([&](TriluOp t) -> std::string {
        int64_t a = onlyBatched(op, t.getInput(), why);
        if (a < 0)
          return why;
        if (a >= rankIn() - 2)
          return describe(op) + " masks the batch as a matrix dimension";
        return allBatched(op, a);
      })
      .Case<ReshapeOp>([&](ReshapeOp r) -> std::string {
        // Row i stays row i when the batch leads both shapes and the rest
        // of each shape is static with the same element count.
        if (get(r.getInput()).kind != BatchState::Batched || axisIn() != 0)
          return describe(op) + " moves the batch";
        if (get(r.getShape()).kind == BatchState::Batched)
          return describe(op) + " takes its shape from the data";
        auto in = cast<RankedTensorType>(r.getInput().getType());
        auto out = dyn_cast<RankedTensorType>(r.getType());
        if (!out || out.getRank() == 0)
          return describe(op) + " moves the batch";
        // Or the target's first element is the batch size itself and no
        // other element depends on it: the element count then makes the
        // rest of each row the same.
        if (get(r.getShape()).isBatchAt(0) && r.getAllowzero() == 0)
          return setBatched(op, r.getResult(), 0);
        int64_t inRest = 1, outRest = 1;
        for (int64_t d : in.getShape().drop_front())
          inRest = ShapedType::isDynamic(d) ? -1 : inRest * d;
        for (int64_t d : out.getShape().drop_front())
          outRest = ShapedType::isDynamic(d) ? -1 : outRest * d;
        if (inRest < 0 || outRest < 0 || inRest != outRest)
          return describe(op) + " may move the batch (its other dimensions "
                                "are not all static and equal in size)";
        return setBatched(op, r.getResult(), 0);
      })
      .Case<FlattenOp>([&](FlattenOp f) -> std::string {
        // [N, d1, ..., dk] -> [N * d1 * ... * d(axis-1), ...]: rows stay
        // samples only when the dimensions folded into N are all 1.
        // ONNX's Flatten axis is in [-r, r].
        int64_t axis = f.getAxis() < 0 ? f.getAxis() + rankIn() : f.getAxis();
        if (axisIn() != 0 || axis <= 0 || axis > rankIn())
          return describe(op) + " moves the batch";
        for (int64_t d = 1; d < axis; ++d)
          if (dimOf(f.getInput(), d) != 1)
            return describe(op) + " folds other dimensions into the batch";
        return allBatched(op, 0);
      })
      .Case<TransposeOp>([&](TransposeOp t) -> std::string {
        int64_t rank = rankIn(), a = axisIn();
        Dims perm = transposePermutation(t.getPerm(), rank);
        for (auto [i, p] : llvm::enumerate(perm))
          if (p == a)
            return allBatched(op, static_cast<int64_t>(i));
        return describe(op) + " drops the batch";
      })
      .Case<SqueezeOp>([&](SqueezeOp s) -> std::string {
        int64_t rank = rankIn();
        Dims axes;
        if (Value v = s.getAxes()) {
          if (get(v).kind != BatchState::Uniform)
            return describe(op) + " squeezes axes known at run time";
          std::optional<Dims> c = constantAxes(v, rank);
          if (!c)
            return describe(op) + " squeezes axes known at run time";
          axes = *c;
        } else {
          // Every dimension of size 1 at run time: known only for static
          // shapes, and the batch must not shrink to 1 row per rank.
          auto in = cast<RankedTensorType>(s.getInput().getType());
          if (!in.hasStaticShape() || batch / dp == 1)
            return describe(op) + " squeezes dimensions known at run time";
          for (int64_t d = 0; d < rank; ++d)
            if (dimOf(s.getInput(), d) == 1)
              axes.push_back(d);
        }
        return reduce(op, axes, /*keepDims=*/false);
      })
      .Case<UnsqueezeOp>([&](UnsqueezeOp u) -> std::string {
        if (get(u.getAxes()).kind != BatchState::Uniform)
          return describe(op) + " inserts axes known at run time";
        int64_t outRank = rankOf(u.getResult());
        std::optional<Dims> axes = constantAxes(u.getAxes(), outRank);
        if (!axes)
          return describe(op) + " inserts axes known at run time";
        // The batch moves past every inserted axis at or before its new
        // position.
        int64_t a = axisIn();
        llvm::sort(*axes);
        for (int64_t x : *axes)
          if (x <= a)
            ++a;
        return allBatched(op, a);
      })
      .Case<ConcatOp>([&](ConcatOp c) -> std::string {
        int64_t axis = -1;
        for (Value v : c.getInputs()) {
          BatchState s = get(v);
          if (s.kind != BatchState::Batched)
            return describe(op) + " joins the batch with constants";
          if (axis >= 0 && s.axis != axis)
            return describe(op) + " joins batches along different axes";
          axis = s.axis;
        }
        std::optional<int64_t> along = normalizeAxis(c.getAxis(), rankIn());
        if (!along || *along == axis)
          return describe(op) + " concatenates along the batch";
        return allBatched(op, axis);
      })
      .Case<SplitOp>([&](SplitOp s) -> std::string {
        return alongOneAxis(s.getInput(), normalizeAxis(s.getAxis(), rankIn()),
                            "splits the batch");
      })
      .Case<SliceOp>([&](SliceOp s) -> std::string {
        int64_t a = onlyBatched(op, s.getInput(), why);
        if (a < 0)
          return why;
        int64_t rank = rankIn();
        std::optional<Dims> starts = getConstantInts(s.getStarts());
        std::optional<Dims> ends = getConstantInts(s.getEnds());
        std::optional<Dims> axes;
        if (Value v = s.getAxes())
          axes = constantAxes(v, rank);
        else if (starts) {
          axes.emplace();
          for (int64_t i = 0; i < static_cast<int64_t>(starts->size()); ++i)
            axes->push_back(i);
        }
        std::optional<Dims> steps;
        if (Value v = s.getSteps())
          steps = getConstantInts(v);
        if (!starts || !ends || !axes || starts->size() != axes->size() ||
            ends->size() != axes->size() ||
            (s.getSteps() && (!steps || steps->size() != axes->size())))
          return describe(op) + " slices with bounds known at run time";
        for (size_t i = 0; i < axes->size(); ++i) {
          if ((*axes)[i] != a)
            continue;
          // Only the whole batch: from 0 to at least its end, step 1.
          int64_t end = (*ends)[i];
          bool whole = (*starts)[i] == 0 && (!steps || (*steps)[i] == 1) &&
                       (batch > 0 ? end >= batch
                                  : end >= std::numeric_limits<int32_t>::max());
          if (!whole)
            return describe(op) + " slices the batch";
        }
        return allBatched(op, a);
      })
      .Case<GatherOp>([&](GatherOp g) -> std::string {
        BatchState ds = get(g.getData()), is = get(g.getIndices());
        std::optional<int64_t> axis =
            normalizeAxis(g.getAxis(), rankOf(g.getData()));
        if (!axis)
          return describe(op) + " has an invalid axis";
        if (ds.kind == BatchState::Uniform && is.kind == BatchState::Batched)
          return allBatched(op, *axis + is.axis);
        if (ds.kind == BatchState::Batched && is.kind == BatchState::Uniform) {
          if (ds.axis == *axis)
            return describe(op) + " picks samples of the batch";
          int64_t shift = ds.axis < *axis ? 0 : rankOf(g.getIndices()) - 1;
          return allBatched(op, ds.axis + shift);
        }
        return describe(op) + " indexes the batch with batched indices";
      })
      .Case<GatherElementsOp>([&](GatherElementsOp g) -> std::string {
        BatchState ds = get(g.getData()), is = get(g.getIndices());
        std::optional<int64_t> axis = normalizeAxis(g.getAxis(), rankIn());
        if (ds.kind != BatchState::Batched || is.kind != BatchState::Batched ||
            ds.axis != is.axis || !axis || *axis == ds.axis)
          return describe(op) + " indexes across the batch";
        return allBatched(op, ds.axis);
      })
      .Case<PadOp>([&](PadOp p) -> std::string {
        int64_t a = onlyBatched(op, p.getInput(), why);
        if (a < 0)
          return why;
        int64_t rank = rankIn();
        std::optional<Dims> pads = getConstantInts(p.getPads());
        std::optional<Dims> axes;
        if (Value v = p.getAxes())
          axes = constantAxes(v, rank);
        else {
          axes.emplace();
          for (int64_t i = 0; i < rank; ++i)
            axes->push_back(i);
        }
        if (!pads || !axes || pads->size() != 2 * axes->size())
          return describe(op) + " pads by amounts known at run time";
        for (size_t i = 0; i < axes->size(); ++i)
          if ((*axes)[i] == a && ((*pads)[i] != 0 || (*pads)[i + axes->size()]))
            return describe(op) + " pads the batch";
        return allBatched(op, a);
      })
      .Case<TileOp>([&](TileOp t) -> std::string {
        int64_t a = onlyBatched(op, t.getInput(), why);
        if (a < 0)
          return why;
        std::optional<Dims> repeats = getConstantInts(t.getRepeats());
        if (!repeats || a >= static_cast<int64_t>(repeats->size()) ||
            (*repeats)[a] != 1)
          return describe(op) + " repeats the batch";
        return allBatched(op, a);
      })
      .Case<ExpandOp>([&](ExpandOp e) -> std::string {
        if (get(e.getInput()).kind != BatchState::Batched)
          return describe(op) + " builds a batch-sized tensor";
        auto out = dyn_cast<RankedTensorType>(e.getType());
        BatchState::Kind target = get(e.getShape()).kind;
        if (!out || target == BatchState::Batched)
          return describe(op) + " expands to a shape known at run time";
        // The batch axis must keep its size (no broadcast of one sample):
        // a constant target says 1 there (a static batch in it would not
        // follow the split), and a target computed from the batch size
        // must not give another dimension a size that depends on it.
        int64_t a = axisIn() + out.getRank() - rankIn();
        if (target == BatchState::Uniform) {
          std::optional<Dims> dims = getConstantInts(e.getShape());
          int64_t at =
              dims ? a - (out.getRank() - static_cast<int64_t>(dims->size()))
                   : -1;
          if (!dims || (at >= 0 && (*dims)[at] != 1))
            return describe(op) + " expands to a constant batch size";
        }
        if (target == BatchState::ShapeOfBatch) {
          // The target's element at the batch axis must be the batch size,
          // and no other element may depend on it (or the other dimensions
          // must be static).
          BatchState shape = get(e.getShape());
          int64_t length = lengthOf(e.getShape());
          int64_t at = a - (out.getRank() - length);
          if (length < 0 || at < 0 || !bitAt(shape.exact, at))
            return describe(op) + " may not keep the batch size";
          if (!shape.isBatchAt(at))
            for (int64_t d = 0; d < out.getRank(); ++d)
              if (d != a && ShapedType::isDynamic(out.getDimSize(d)))
                return describe(op) + " may size another dimension by the "
                                      "batch";
        }
        return setBatched(op, e.getResult(), a);
      })
      .Case<OneHotOp>([&](OneHotOp o) -> std::string {
        int64_t a = onlyBatched(op, o.getIndices(), why);
        if (a < 0)
          return why;
        std::optional<int64_t> axis =
            normalizeAxis(o.getAxis(), rankOf(o.getResult()));
        if (!axis)
          return describe(op) + " has an invalid axis";
        return allBatched(op, a < *axis ? a : a + 1);
      })
      .Case<ShapeOp>([&](ShapeOp s) -> std::string {
        int64_t rank = rankIn(), a = axisIn();
        auto clamp = [&](int64_t v) {
          if (v < 0)
            v += rank;
          return std::clamp<int64_t>(v, 0, rank);
        };
        int64_t start = clamp(s.getStart());
        int64_t end = s.getEnd() ? clamp(*s.getEnd()) : rank;
        // Element a - start is the batch size; the other dimensions of a
        // batched value are the same on every rank.
        states[s.getResult()] =
            start <= a && a < end
                ? BatchState::shapeOfBatch(uint64_t{1} << (a - start),
                                           uint64_t{1} << (a - start))
                : BatchState::uniform();
        return "";
      })
      .Case<SizeOp>([&](SizeOp s) -> std::string {
        states[s.getResult()] = BatchState::shapeOfBatch();
        return "";
      })
      .Case<shard::AllReduceOp>([&](shard::AllReduceOp r) -> std::string {
        if (llvm::is_contained(r.getGridAxes(), dpAxis))
          return describe(op) + " combines the dp ranks";
        return allBatched(op, get(r.getInput()).axis);
      })
      .Case<shard::AllGatherOp>([&](shard::AllGatherOp g) -> std::string {
        if (llvm::is_contained(g.getGridAxes(), dpAxis))
          return describe(op) + " combines the dp ranks";
        int64_t a = get(g.getInput()).axis;
        if (static_cast<int64_t>(g.getGatherAxis().getSExtValue()) == a)
          return describe(op) + " gathers along the batch";
        return allBatched(op, a);
      })
      .Case<shard::AllSliceOp>([&](shard::AllSliceOp s) -> std::string {
        if (llvm::is_contained(s.getGridAxes(), dpAxis))
          return describe(op) + " combines the dp ranks";
        int64_t a = get(s.getInput()).axis;
        if (static_cast<int64_t>(s.getSliceAxis().getSExtValue()) == a)
          return describe(op) + " slices the batch";
        return allBatched(op, a);
      })
      .Default([&](Operation *) {
        return describe(op) +
               " is not known to keep the samples of a batch apart";
      });
}

std::string BatchAnalysis::run() {
  Block &body = func.getBody().front();
  if (body.getNumArguments() == 0)
    return "the model has no inputs";
  for (BlockArgument arg : body.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || t.getRank() == 0 || !isBatchDim(t.getDimSize(0)))
      return "input #" + std::to_string(arg.getArgNumber()) +
             " has no leading batch dimension";
    states[arg] = BatchState::batched(0);
  }
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions() != 0)
      return describe(&op) + " has regions";
    if (std::string why = visit(&op); !why.empty())
      return why;
  }
  for (auto [i, v] : llvm::enumerate(body.getTerminator()->getOperands())) {
    BatchState s = get(v);
    if (s.kind != BatchState::Batched || s.axis != 0)
      return "output #" + std::to_string(i) +
             " is not batched along its leading dimension";
  }
  return "";
}

} // namespace

std::string dist::splitInferenceBatch(func::FuncOp entry, int64_t dp,
                                      int64_t dpAxis) {
  int64_t batch = getStaticBatch(entry);
  std::string why = BatchAnalysis(entry, batch, dp, dpAxis).run();
  if (!why.empty())
    return why;
  if (batch > 0) {
    if (batch % dp != 0)
      return "the batch of " + std::to_string(batch) +
             " does not divide by dp=" + std::to_string(dp);
    // Rebuild the function at batch / dp on a copy: a shape the analysis
    // cannot see (a constant target with the batch baked in) fails shape
    // inference there, and the function stays as it was. The copy sits
    // in the module so that collectives find their grid.
    OpBuilder b(entry);
    b.setInsertionPointAfter(entry);
    auto copy = cast<func::FuncOp>(b.clone(*entry));
    copy.setSymName((entry.getSymName() + "__batch_split").str());
    copy.setPrivate();
    auto erase = llvm::make_scope_exit([&] { copy.erase(); });
    std::string diag;
    {
      ScopedDiagnosticHandler quiet(entry.getContext(), [&](Diagnostic &d) {
        if (diag.empty())
          diag = d.str();
        return success();
      });
      if (failed(rebatchFunction(copy, batch, dp)))
        return "the function does not re-infer at the batch of " +
               std::to_string(batch / dp) + ": " + diag;
    }
    // Every input and output now has batch / dp rows.
    for (Type t : llvm::concat<const Type>(copy.getArgumentTypes(),
                                           copy.getResultTypes())) {
      auto ranked = dyn_cast<RankedTensorType>(t);
      if (!ranked || ranked.getRank() == 0 ||
          ranked.getDimSize(0) != batch / dp)
        return "after the split, an input or output does not have " +
               std::to_string(batch / dp) + " rows";
    }
    entry.getBody().takeBody(copy.getBody());
    entry.setFunctionType(copy.getFunctionType());
  }
  entry->setAttr(
      kInferBatchSplitAttr,
      IntegerAttr::get(IntegerType::get(entry.getContext(), 64), dp));
  return "";
}
