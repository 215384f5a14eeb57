//===- TensorParallel.cpp - Megatron-style splits of the forward graph ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Tensor parallelism over the mesh's tp axis, applied to the forward graph
// before the training step is built, so that the backward pass follows from
// the gradient rules of what is inserted here:
//
//  - A column-parallel region starts at a matrix product x @ W whose weight
//    W is a parameter (possibly read through a transpose): each rank keeps
//    the columns (output features) of its coordinate. The region grows
//    forward through ops that act independently along the split feature
//    (elementwise ops, bias adds, whose bias is split the same way, a split
//    of a fused query/key/value projection, reshapes into heads, transposes,
//    per-head attention products, softmax over another axis) and ends at
//    row-parallel products sharded_activation @ W2, whose rows (input
//    features) are split; their partial sums go through `shard.all_reduce`
//    (sum), after which everything is replicated again.
//  - A column-parallel product whose result (through such ops) is a result
//    of the function, such as the output layer's logits, is gathered at the
//    end (`shard.all_gather`) instead.
//  - A lookup in an embedding table that is a parameter becomes
//    vocabulary-parallel: each rank keeps a contiguous range of rows, looks
//    up the ids in its range, zeroes the rest, and the results are summed.
//  - Replicated activations entering a region go through `dist.mesh_copy`,
//    whose gradient is summed over the axis (each rank contributes a part).
//
// Layers are taken in the forms exporters write: Gemm with either
// transposition, scales and a bias of rank 0 to 2 (rewritten to MatMul and
// elementwise ops first), MatMul+Add on 2-D or 3-D inputs, dimensions left
// dynamic (a batch axis exported as dynamic: only the split dimensions
// must be static; reshape targets computed from Shape at run time keep
// their run-time entries), and a parameter read in several places, such
// as an output layer tied to the embedding table, which is split when
// every read splits it alike (partitionTensorParallel checks on a copy).
//
// A candidate that meets anything else (a layer norm over the split
// feature, a reduction, a parameter also used unsplit) is left replicated,
// so the result is always correct; what is split is counted in the stats.
//
// Why not upstream sharding-propagation + shard-partition: they need a
// ShardingInterface model for every op of the function and fail it as a
// whole otherwise (shared/ENVIRONMENT.md), and they do not know which
// parameters to split: the Megatron layout is a choice, made here.
//
//===----------------------------------------------------------------------===//

#include "dist/Transforms/Passes.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/GraphBuilder.h"
#include "dist/Dialect/Dist/IR/Mesh.h"
#include "dist/Dialect/Dist/IR/ShapeUtils.h"
#include "dist/Dialect/Dist/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Debug.h"

#include <numeric>

#define DEBUG_TYPE "dist-tensor-parallel"

namespace mlir::dist {
#define GEN_PASS_DEF_TENSORPARALLELPASS
#include "dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

LogicalResult dist::declareMesh(ModuleOp module, const MeshSpec &spec) {
  Operation *existing = module.lookupSymbol(kMeshSymbol);
  if (auto grid = dyn_cast_or_null<shard::GridOp>(existing)) {
    std::optional<MeshSpec> have = getModuleMesh(module);
    if (have && have->axes == spec.axes && have->shape == spec.shape)
      return success();
    return module.emitError("the module is partitioned for another mesh "
                            "already (partitioned twice?)");
  }
  if (existing)
    return module.emitError("the module already has a '")
           << kMeshSymbol << "' symbol";
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  auto grid =
      shard::GridOp::create(b, module.getLoc(), kMeshSymbol, spec.shape);
  grid->setAttr(kMeshAxesAttr, b.getStrArrayAttr(SmallVector<StringRef>(
                                   spec.axes.begin(), spec.axes.end())));
  return success();
}

namespace {

/// How a value or parameter is split: dimension `dim`, viewed as
/// [blocks, tp, n / (blocks * tp)] (see kParamShardAttr).
struct Shard {
  int64_t dim = -1;
  int64_t blocks = 1;
  bool operator==(const Shard &o) const {
    return dim == o.dim && blocks == o.blocks;
  }
};

/// A matrix-product weight read from a parameter, possibly transposed.
struct Weight {
  ParamOp param;
  bool transposed = false;
};

/// A ranked type; its dimensions may be dynamic (a batch of any size):
/// what a split needs static is checked where it is needed.
RankedTensorType rankedType(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

/// A rank-1 int64 constant's values.
std::optional<SmallVector<int64_t>> constInts(Value v) {
  auto c = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!c)
    return std::nullopt;
  auto values = dyn_cast<DenseIntElementsAttr>(c.getValue());
  if (!values)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const APInt &x : values.getValues<APInt>())
    out.push_back(x.getSExtValue());
  return out;
}

/// Dimensions [from, to) of `t` as (product of the static extents, number
/// of dynamic ones).
std::pair<int64_t, int64_t> dimsProduct(RankedTensorType t, int64_t from,
                                        int64_t to) {
  int64_t product = 1, dynamic = 0;
  for (int64_t d = from; d < to; ++d)
    if (t.isDynamicDim(d))
      ++dynamic;
    else
      product *= t.getDimSize(d);
  return {product, dynamic};
}

/// The entries of a reshape's target: constants, or std::nullopt for an
/// entry computed at run time (a dimension read with Shape, as exporters
/// write `x.view(B, T, H, D)` for a dynamic batch B). `pieces[i]` is the
/// operand of the target's concat that holds entry i (-1: the target is
/// one constant).
struct ReshapeTarget {
  SmallVector<std::optional<int64_t>> entries;
  SmallVector<int64_t> pieces;
  ConcatOp concat;
};

std::optional<ReshapeTarget> reshapeTarget(Value shape) {
  ReshapeTarget t;
  if (std::optional<SmallVector<int64_t>> c = constInts(shape)) {
    for (int64_t x : *c) {
      t.entries.push_back(x);
      t.pieces.push_back(-1);
    }
    return t;
  }
  t.concat = shape.getDefiningOp<ConcatOp>();
  if (!t.concat)
    return std::nullopt;
  for (auto [i, piece] : llvm::enumerate(t.concat.getInputs())) {
    auto pt = rankedType(piece);
    if (!pt || pt.getRank() != 1 || pt.isDynamicDim(0))
      return std::nullopt;
    std::optional<SmallVector<int64_t>> c = constInts(piece);
    for (int64_t k = 0; k < pt.getDimSize(0); ++k) {
      t.entries.push_back(c ? std::optional<int64_t>((*c)[k]) : std::nullopt);
      t.pieces.push_back(static_cast<int64_t>(i));
    }
  }
  return t;
}

/// The parameter behind a bias operand: read directly, or scaled by a
/// rank-0 constant that nothing else reads (Gemm's beta * C).
ParamOp paramBehind(ModuleOp module, Value v) {
  if (auto mul = v.getDefiningOp<MulOp>(); mul && v.hasOneUse()) {
    for (unsigned i = 0; i < 2; ++i) {
      auto c = mul->getOperand(1 - i).getDefiningOp<ConstantOp>();
      auto ct = c ? rankedType(c.getResult()) : RankedTensorType();
      if (ct && ct.getRank() == 0) {
        v = mul->getOperand(i);
        break;
      }
    }
  }
  auto get = v.getDefiningOp<GetParamOp>();
  return get ? module.lookupSymbol<ParamOp>(get.getNameAttr()) : ParamOp();
}

bool isElementwiseUnary(Operation *op) {
  return isa<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, ReciprocalOp, FloorOp, CeilOp,
             RoundOp, SignOp, SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp,
             SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp, TanhOp, SigmoidOp,
             ReluOp, LeakyReluOp, EluOp, SeluOp, CeluOp, SoftplusOp, SoftsignOp,
             HardSigmoidOp, HardSwishOp, ErfOp, GeluOp, NotOp, IdentityOp,
             CastOp>(op);
}

bool isElementwiseBroadcast(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, ModOp, EqualOp, LessOp,
             GreaterOp, LessOrEqualOp, GreaterOrEqualOp, AndOp, OrOp, XorOp,
             WhereOp, MaxOp, MinOp, SumOp, MeanOp>(op);
}

/// One column-parallel region, found by `analyze` and applied by `apply`.
struct Region {
  Operation *head = nullptr;
  llvm::DenseMap<Value, Shard> values;
  llvm::MapVector<Operation *, Shard> params; // ParamOp -> split
  SmallVector<Operation *> ops;               // region ops, in order
  SmallVector<Operation *> rowEnds;           // partial sums to all-reduce
  SmallVector<OpOperand *> copies;            // replicated inputs
  SmallVector<Value> gathers;                 // split values returned
  /// Shape operands to replace: (operand, new values).
  SmallVector<std::pair<OpOperand *, SmallVector<int64_t>>> shapes;
  /// Reshape targets built by a concat, one of whose constant pieces
  /// changes: (the reshape's target operand, piece, its new values).
  struct Piece {
    OpOperand *operand;
    int64_t index;
    SmallVector<int64_t> values;
  };
  SmallVector<Piece> pieces;
};

class TensorParallel {
public:
  TensorParallel(ModuleOp module, const MeshSpec &mesh,
                 const llvm::StringSet<> &excluded)
      : module(module), tp(mesh.sizeOf("tp")), excluded(excluded) {
    for (auto [i, name] : llvm::enumerate(mesh.axes))
      if (name == "tp")
        axis = static_cast<int16_t>(i);
  }

  LogicalResult run(func::FuncOp func, TensorParallelStats &stats);

  /// Parameters split so far.
  int64_t numSplit() const { return static_cast<int64_t>(claimed.size()); }
  /// Parameters split for some of their reads only (a tied weight whose
  /// other use stayed replicated): the split is wrong and must be redone
  /// without them.
  SmallVector<StringRef> partlySplit() {
    SmallVector<StringRef> out;
    for (auto [op, shard] : claimed)
      if (consumed.lookup(op) < readsOf(cast<ParamOp>(op)))
        out.push_back(cast<ParamOp>(op).getSymName());
    return out;
  }

private:
  ModuleOp module;
  int64_t tp;
  int16_t axis = 0;
  /// Parameters never to split (see partlySplit).
  const llvm::StringSet<> &excluded;
  /// Number of uses of each parameter's get_param reads (by name).
  llvm::StringMap<int64_t> reads;
  /// Parameters split already, and how.
  llvm::DenseMap<Operation *, Shard> claimed;
  /// Reads of a split parameter that the regions applied so far consume.
  llvm::DenseMap<Operation *, int64_t> consumed;

  int64_t readsOf(ParamOp p) { return reads.lookup(p.getSymName()); }
  void normalizeGemms(func::FuncOp func);
  std::optional<Weight> weightOf(Value v);
  /// A float parameter with a read not consumed by a split yet. A
  /// parameter read in several places (a tied embedding and output layer)
  /// is split when every read splits it the same way (claimable).
  bool splittable(ParamOp p) {
    return p && isa<FloatType>(getElementTypeOrSelf(p.getType())) &&
           !excluded.contains(p.getSymName()) &&
           consumed.lookup(p) < readsOf(p);
  }
  bool claimable(ParamOp p, Shard s) {
    auto it = claimed.find(p);
    return splittable(p) && (it == claimed.end() || it->second == s);
  }
  FailureOr<Region> analyze(MatMulOp head);
  LogicalResult step(Region &r, Operation *op);
  LogicalResult apply(Region &r);
  bool embedding(GatherOp gather);
  void splitParam(ParamOp p, Shard s);
  Value meshCopy(OpBuilder &b, Location loc, Value v);
  LogicalResult gatherOutputs();

  struct PendingGather {
    Value value;
    int64_t dim;
    SmallVector<int64_t> full;
  };
  SmallVector<PendingGather> pendingGathers;
};

/// Rewrites every gemm whose B is a parameter (possibly transposed) as
/// alpha * (op(A) @ op(B)) + beta * C, in the ops that regions know: a
/// matmul with a transposed weight read, scalar products and an add, so
/// that Gemm-exported layers (either transposition, any scales, a bias of
/// rank 0 to 2) split like MatMul+Add ones.
void TensorParallel::normalizeGemms(func::FuncOp func) {
  SmallVector<GemmOp> gemms;
  func.walk([&](GemmOp g) { gemms.push_back(g); });
  for (GemmOp gemm : gemms) {
    Value bIn = gemm.getB();
    if (auto tr = bIn.getDefiningOp<TransposeOp>())
      bIn = tr.getInput();
    if (!bIn.getDefiningOp<GetParamOp>())
      continue;
    OpBuilder b(gemm);
    GraphBuilder g(b, gemm);
    Value a = gemm.getTransA() ? g.transpose(gemm.getA(), {1, 0}) : gemm.getA();
    Value w = gemm.getTransB() ? g.transpose(gemm.getB(), {1, 0}) : gemm.getB();
    Value y = g.one<MatMulOp>({a, w});
    double alpha = gemm.getAlpha().convertToDouble();
    double beta = gemm.getBeta().convertToDouble();
    if (alpha != 1.0)
      y = g.mulC(y, alpha);
    if (Value c = gemm.getC(); c && beta != 0.0)
      y = g.add(y, beta == 1.0 ? c : g.mulC(c, beta));
    if (g.hadError || !y || y.getType() != gemm.getOutput().getType())
      continue; // Leaves the gemm; any ops built are dead and folded away.
    gemm.getOutput().replaceAllUsesWith(y);
    gemm.erase();
  }
}

std::optional<Weight> TensorParallel::weightOf(Value v) {
  Weight w;
  if (auto tr = v.getDefiningOp<TransposeOp>()) {
    std::optional<ArrayRef<int64_t>> perm = tr.getPerm();
    if (perm && (perm->size() != 2 || (*perm)[0] != 1))
      return std::nullopt;
    v = tr.getInput();
    w.transposed = true;
  }
  auto get = v.getDefiningOp<GetParamOp>();
  if (!get)
    return std::nullopt;
  w.param = module.lookupSymbol<ParamOp>(get.getNameAttr());
  auto t = w.param ? dyn_cast<RankedTensorType>(w.param.getType())
                   : RankedTensorType();
  if (!t || t.getRank() != 2 || !splittable(w.param))
    return std::nullopt;
  return w;
}

FailureOr<Region> TensorParallel::analyze(MatMulOp head) {
  Region r;
  r.head = head;
  std::optional<Weight> w = weightOf(head.getRhs());
  RankedTensorType out = rankedType(head.getOutput());
  RankedTensorType in = rankedType(head.getLhs());
  if (!w || !out || !in || in.getRank() < 2 || out.getRank() < 1 ||
      out.isDynamicDim(out.getRank() - 1))
    return failure();
  // A fused projection split into equal parts right after it (through a
  // bias add) is split block-wise: each rank keeps its part of each.
  int64_t blocks = 1;
  Value y = head.getOutput();
  if (y.hasOneUse())
    if (auto add = dyn_cast<AddOp>(*y.getUsers().begin()))
      y = add.getResult();
  for (Operation *user : y.getUsers())
    if (auto split = dyn_cast<SplitOp>(user)) {
      int64_t a = split.getAxis();
      if (a < 0)
        a += out.getRank();
      if (a == out.getRank() - 1)
        blocks = static_cast<int64_t>(split.getNumResults());
    }
  int64_t n = out.getShape().back();
  if (n % (tp * blocks) != 0)
    return failure();
  Shard s{out.getRank() - 1, blocks};
  Shard ws{w->transposed ? 0 : 1, blocks};
  if (!claimable(w->param, ws))
    return failure();
  r.values[head.getOutput()] = s;
  r.params[w->param] = ws;
  r.copies.push_back(&head->getOpOperand(0));
  r.ops.push_back(head);
  for (Operation *op = head->getNextNode(); op; op = op->getNextNode())
    if (failed(step(r, op)))
      return failure();
  if (r.rowEnds.empty() && r.gathers.empty())
    return failure();
  return r;
}

/// Extends region `r` over `op` (a no-op for ops reading no split value).
LogicalResult TensorParallel::step(Region &r, Operation *op) {
  SmallVector<unsigned> split;
  for (OpOperand &o : op->getOpOperands())
    if (r.values.count(o.get()))
      split.push_back(o.getOperandNumber());
  if (split.empty())
    return success();
  auto operandShard = [&](unsigned i) { return r.values[op->getOperand(i)]; };
  auto rankOf = [](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t ? t.getRank() : int64_t(-1);
  };
  // Replicated float operands of a region op get their gradient summed.
  auto copyOthers = [&]() {
    for (OpOperand &o : op->getOpOperands())
      if (!r.values.count(o.get()) &&
          isa<FloatType>(getElementTypeOrSelf(o.get().getType())) &&
          !o.get().getDefiningOp<ConstantOp>())
        r.copies.push_back(&o);
  };
  auto result = [&](Shard s) {
    for (Value v : op->getResults())
      r.values[v] = s;
    r.ops.push_back(op);
    return success();
  };

  if (isa<func::ReturnOp>(op)) {
    for (unsigned i : split)
      if (operandShard(i).blocks != 1 || !rankedType(op->getOperand(i)) ||
          dimsProduct(rankedType(op->getOperand(i)), operandShard(i).dim,
                      rankedType(op->getOperand(i)).getRank())
                  .second > 1)
        return failure(); // gatherOutputs merges one dynamic extent at most
      else
        r.gathers.push_back(op->getOperand(i));
    return success();
  }
  if (isElementwiseUnary(op))
    return result(operandShard(0));

  if (isElementwiseBroadcast(op)) {
    auto rt = rankedType(op->getResult(0));
    if (!rt)
      return failure();
    int64_t rr = rt.getRank();
    Shard s;
    for (unsigned i : split) {
      Shard o = operandShard(i);
      Shard d{o.dim + rr - rankOf(op->getOperand(i)), o.blocks};
      if (s.dim >= 0 && !(s == d))
        return failure();
      s = d;
    }
    for (OpOperand &o : op->getOpOperands()) {
      if (r.values.count(o.get()))
        continue;
      auto t = rankedType(o.get());
      if (!t)
        return failure();
      int64_t ad = s.dim - (rr - t.getRank());
      if (ad < 0 || t.getDimSize(ad) == 1)
        continue; // Broadcast along the split dimension.
      if (t.isDynamicDim(ad))
        return failure(); // Broadcast or not is known at run time only.
      // A parameter with the full extent there (a bias, or Gemm's
      // beta * C) is split alike.
      ParamOp p = paramBehind(module, o.get());
      if (!claimable(p, Shard{ad, s.blocks}) || r.params.count(p))
        return failure();
      r.params[p] = Shard{ad, s.blocks};
      r.values[o.get()] = Shard{ad, s.blocks};
    }
    copyOthers();
    return result(s);
  }

  if (auto sm = dyn_cast<SoftmaxOp>(op); sm || isa<LogSoftmaxOp>(op)) {
    int64_t a = op->getAttrOfType<IntegerAttr>("axis").getInt();
    int64_t rank = rankOf(op->getOperand(0));
    if (a < 0)
      a += rank;
    if (a == operandShard(0).dim)
      return failure();
    return result(operandShard(0));
  }

  if (auto tr = dyn_cast<TransposeOp>(op)) {
    Shard s = operandShard(0);
    int64_t rank = rankOf(tr.getInput());
    Dims perm = transposePermutation(tr.getPerm(), rank);
    for (auto [j, p] : llvm::enumerate(perm))
      if (p == s.dim)
        return result(Shard{static_cast<int64_t>(j), s.blocks});
    return failure();
  }

  if (auto sp = dyn_cast<SplitOp>(op)) {
    if (split.front() != 0)
      return failure();
    Shard s = operandShard(0);
    auto in = rankedType(sp.getInput());
    if (!in)
      return failure();
    int64_t a = sp.getAxis();
    if (a < 0)
      a += in.getRank();
    if (a != s.dim)
      return result(s);
    // Splitting the split dimension: one part per block.
    int64_t parts = sp.getNumResults();
    if (s.blocks != parts)
      return failure();
    for (Value v : sp.getOutputs())
      if (!rankedType(v) || rankedType(v).isDynamicDim(a) ||
          in.isDynamicDim(a) ||
          rankedType(v).getDimSize(a) * parts != in.getDimSize(a))
        return failure();
    if (Value sizes = sp.getSplit()) {
      std::optional<SmallVector<int64_t>> v = constInts(sizes);
      if (!v)
        return failure();
      for (int64_t &x : *v)
        x /= tp;
      r.shapes.push_back({&sp->getOpOperand(1), *v});
    }
    return result(Shard{s.dim, 1});
  }

  if (auto rs = dyn_cast<ReshapeOp>(op)) {
    if (split.front() != 0)
      return failure();
    Shard s = operandShard(0);
    auto in = rankedType(rs.getInput());
    auto outT = rankedType(rs.getResult());
    std::optional<ReshapeTarget> target = reshapeTarget(rs.getShape());
    if (!in || !outT || !target || s.blocks != 1 ||
        static_cast<int64_t>(target->entries.size()) != outT.getRank())
      return failure();
    // Dynamic extents are compared as symbols: with one dynamic dimension
    // on each side and equal static products, the two are equal.
    auto inAll = dimsProduct(in, 0, in.getRank());
    auto outAll = dimsProduct(outT, 0, outT.getRank());
    if (inAll.second != outAll.second || inAll.second > 1 ||
        inAll.first != outAll.first)
      return failure();
    // The split block of the input (everything from dim on, contiguous per
    // rank) must start an output dimension divisible by tp.
    auto prefix = dimsProduct(in, 0, s.dim);
    int64_t o = -1;
    for (int64_t d = 0; d < outT.getRank(); ++d) {
      if (dimsProduct(outT, 0, d) == prefix && outT.getDimSize(d) != 1) {
        o = d;
        break;
      }
    }
    if (o < 0 || outT.isDynamicDim(o) || outT.getDimSize(o) % tp != 0)
      return failure();
    for (auto [d, x] : llvm::enumerate(target->entries)) {
      int64_t di = static_cast<int64_t>(d);
      if (di == o && !x)
        return failure(); // the split extent, known at run time only
      if (x && *x == 0 && (di >= s.dim || di >= o))
        return failure(); // "copy from the input": ambiguous once split
      if (x && *x == -1 && di != o)
        return failure();
    }
    std::optional<int64_t> entry = target->entries[o];
    int64_t local = *entry > 0 ? *entry / tp : *entry;
    if (target->pieces[o] < 0) {
      SmallVector<int64_t> values;
      for (std::optional<int64_t> x : target->entries)
        values.push_back(*x);
      values[o] = local;
      r.shapes.push_back({&rs->getOpOperand(1), values});
    } else {
      // Entry o lives in a constant piece of the target's concat: the
      // reshape gets its own concat with that piece rewritten.
      int64_t piece = target->pieces[o];
      SmallVector<int64_t> values;
      for (auto [d, x] : llvm::enumerate(target->entries))
        if (target->pieces[d] == piece)
          values.push_back(static_cast<int64_t>(d) == o ? local : *x);
      r.pieces.push_back({&rs->getOpOperand(1), piece, values});
    }
    return result(Shard{o, 1});
  }

  if (auto mm = dyn_cast<MatMulOp>(op)) {
    auto at = rankedType(mm.getLhs()), bt = rankedType(mm.getRhs());
    auto yt = rankedType(mm.getOutput());
    if (!at || !bt || !yt || at.getRank() < 2 || bt.getRank() < 2)
      return failure();
    int64_t ra = at.getRank(), rb = bt.getRank(), ry = yt.getRank();
    bool aSplit = r.values.count(mm.getLhs());
    bool bSplit = r.values.count(mm.getRhs());
    // Row-parallel end: split features times a weight split by rows.
    if (aSplit && !bSplit && r.values[mm.getLhs()].dim == ra - 1) {
      std::optional<Weight> w = weightOf(mm.getRhs());
      Shard ws{w->transposed ? 1 : 0, 1};
      if (!w || r.values[mm.getLhs()].blocks != 1 ||
          r.params.count(w->param) || !claimable(w->param, ws))
        return failure();
      r.params[w->param] = ws;
      r.rowEnds.push_back(op);
      r.ops.push_back(op);
      return success();
    }
    // Otherwise the split must be a batch dimension of the product, or the
    // rows of A, or the columns of B.
    Shard s;
    auto place = [&](Value v, int64_t rank, bool isA) -> bool {
      Shard o = r.values[v];
      int64_t d;
      if (o.dim < rank - 2)
        d = o.dim + ry - rank;
      else if (isA && o.dim == rank - 2)
        d = ry - 2;
      else if (!isA && o.dim == rank - 1)
        d = ry - 1;
      else
        return false;
      if (s.dim >= 0 && !(s == Shard{d, o.blocks}))
        return false;
      s = Shard{d, o.blocks};
      return true;
    };
    if ((aSplit && !place(mm.getLhs(), ra, true)) ||
        (bSplit && !place(mm.getRhs(), rb, false)))
      return failure();
    // A replicated operand must broadcast along a split batch dimension.
    if (s.dim < ry - 2)
      for (auto [v, t, split2] : {std::make_tuple(mm.getLhs(), at, aSplit),
                                  std::make_tuple(mm.getRhs(), bt, bSplit)}) {
        if (split2)
          continue;
        int64_t ad = s.dim - (ry - t.getRank());
        if (ad >= 0 && t.getDimSize(ad) != 1)
          return failure();
      }
    copyOthers();
    return result(s);
  }
  return failure();
}

Value TensorParallel::meshCopy(OpBuilder &b, Location loc, Value v) {
  return MeshCopyOp::create(b, loc, v.getType(), v,
                            FlatSymbolRefAttr::get(b.getContext(), kMeshSymbol),
                            b.getDenseI16ArrayAttr({axis}))
      .getResult();
}

void TensorParallel::splitParam(ParamOp p, Shard s) {
  ++consumed[p];
  if (claimed.count(p))
    return; // Split for an earlier read (claimable checked the layout).
  claimed[p] = s;
  auto t = cast<RankedTensorType>(p.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape[s.dim] /= tp;
  auto local = RankedTensorType::get(shape, t.getElementType());
  p.setType(local);
  Builder b(p.getContext());
  p->setAttr(kParamShardAttr,
             b.getDictionaryAttr(
                 {b.getNamedAttr("axis", b.getI64IntegerAttr(axis)),
                  b.getNamedAttr("dim", b.getI64IntegerAttr(s.dim)),
                  b.getNamedAttr("blocks", b.getI64IntegerAttr(s.blocks))}));
  module.walk([&](GetParamOp get) {
    if (get.getName() == p.getSymName())
      get.getResult().setType(local);
  });
}

LogicalResult TensorParallel::apply(Region &r) {
  for (auto [p, s] : r.params)
    splitParam(cast<ParamOp>(p), s);
  for (auto &[operand, values] : r.shapes) {
    OpBuilder b(operand->getOwner());
    GraphBuilder g(b, operand->getOwner());
    operand->set(g.vec(values));
  }
  for (Region::Piece &piece : r.pieces) {
    OpBuilder b(piece.operand->getOwner());
    GraphBuilder g(b, piece.operand->getOwner());
    auto cat = piece.operand->get().getDefiningOp<ConcatOp>();
    SmallVector<Value> parts(cat.getInputs());
    parts[piece.index] = g.vec(piece.values);
    Value target = g.one<ConcatOp>(parts, {g.i64("axis", 0)});
    if (g.hadError || !target)
      return failure();
    piece.operand->set(target);
  }
  llvm::DenseMap<Value, Value> copied;
  for (OpOperand *operand : r.copies) {
    Value v = operand->get();
    Value &c = copied[v];
    if (!c) {
      OpBuilder b(operand->getOwner());
      c = meshCopy(b, operand->getOwner()->getLoc(), v);
    }
    operand->set(c);
  }
  for (Operation *end : r.rowEnds) {
    OpBuilder b(end->getBlock(), std::next(Block::iterator(end)));
    Value partial = end->getResult(0);
    auto sum = shard::AllReduceOp::create(b, end->getLoc(), partial.getType(),
                                          kMeshSymbol, ArrayRef<int16_t>{axis},
                                          partial, shard::ReductionKind::Sum);
    partial.replaceAllUsesExcept(sum.getResult(), sum);
  }
  // Split results are gathered once shapes are re-inferred (gatherOutputs).
  for (Value v : r.gathers)
    pendingGathers.push_back(
        {v, r.values[v].dim,
         SmallVector<int64_t>(cast<RankedTensorType>(v.getType()).getShape())});
  return success();
}

/// Gathers split function results along their split dimension d, as a
/// gather of the leading axis of [1, ...] followed by moving the rank axis
/// next to d and merging: [..., tp, n / tp] -> [..., n].
LogicalResult TensorParallel::gatherOutputs() {
  for (PendingGather &p : pendingGathers) {
    Value v = p.value;
    auto ret = cast<func::ReturnOp>(v.getParentBlock()->getTerminator());
    OpBuilder b(ret);
    GraphBuilder g(b, ret);
    auto t = cast<RankedTensorType>(v.getType());
    int64_t rank = t.getRank();
    Value one = g.unsqueeze(v, {0});
    if (!one)
      return failure();
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(one.getType()).getShape());
    shape[0] = tp;
    auto gathered = shard::AllGatherOp::create(
        b, ret.getLoc(), RankedTensorType::get(shape, t.getElementType()),
        kMeshSymbol, ArrayRef<int16_t>{axis}, one, APInt(64, 0));
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i) {
      if (i == p.dim)
        perm.push_back(0);
      perm.push_back(i + 1);
    }
    // The target keeps dynamic extents: 0 (copy) before the gathered
    // dimension, where the transposed value has them at the same index,
    // and -1 after it (one at most).
    SmallVector<int64_t> target(p.full);
    int64_t inferred = 0;
    for (auto [d, x] : llvm::enumerate(target)) {
      if (!ShapedType::isDynamic(x))
        continue;
      if (static_cast<int64_t>(d) < p.dim)
        x = 0;
      else if (inferred++ == 0)
        x = -1;
      else
        return emitError(v.getLoc(), "tensor parallelism cannot gather a "
                                     "result with two dynamic dimensions "
                                     "after its split one");
    }
    Value merged = g.reshape(g.transpose(gathered.getResult(), perm), target);
    if (g.hadError || !merged)
      return failure();
    for (OpOperand &o : ret->getOpOperands())
      if (o.get() == v)
        o.set(merged);
  }
  pendingGathers.clear();
  return success();
}

/// Whether `v` is computed from an argument of its function (data), not
/// from constants alone.
bool dependsOnArgument(Value v) {
  SmallVector<Value> stack{v};
  llvm::DenseSet<Value> seen;
  while (!stack.empty()) {
    Value x = stack.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (isa<BlockArgument>(x))
      return true;
    for (Value o : x.getDefiningOp()->getOperands())
      stack.push_back(o);
  }
  return false;
}

/// Makes `gather` (rows of a parameter table looked up by ids from the
/// data) vocabulary-parallel. Tables read at constant rows (a position
/// embedding) stay whole: every rank reads the same rows anyway.
bool TensorParallel::embedding(GatherOp gather) {
  if (!dependsOnArgument(gather.getIndices()))
    return false;
  auto get = gather.getData().getDefiningOp<GetParamOp>();
  ParamOp p = get ? module.lookupSymbol<ParamOp>(get.getNameAttr()) : ParamOp();
  auto t = p ? dyn_cast<RankedTensorType>(p.getType()) : RankedTensorType();
  auto ids = dyn_cast<RankedTensorType>(gather.getIndices().getType());
  if (!claimable(p, Shard{0, 1}) || !t || t.getRank() != 2 ||
      gather.getAxis() != 0 ||
      t.getDimSize(0) % tp != 0 || !ids ||
      !ids.getElementType().isSignlessInteger(64))
    return false;
  int64_t rows = t.getDimSize(0) / tp;
  splitParam(p, Shard{0, 1});
  OpBuilder b(gather);
  GraphBuilder g(b, gather);
  Value coord =
      MeshCoordOp::create(b, gather.getLoc(),
                          RankedTensorType::get({}, b.getI64Type()),
                          FlatSymbolRefAttr::get(b.getContext(), kMeshSymbol),
                          b.getI64IntegerAttr(axis))
          .getResult();
  Value ids0 = gather.getIndices();
  // ONNX allows negative ids counting from the end of the full table.
  Value full = g.scalar(b.getI64Type(), static_cast<double>(t.getDimSize(0)));
  Value zero = g.scalar(b.getI64Type(), 0);
  ids0 = g.where(g.one<LessOp>({ids0, zero}), g.add(ids0, full), ids0);
  Value local = g.sub(
      ids0, g.mul(coord, g.scalar(b.getI64Type(), static_cast<double>(rows))));
  Value mine = g.one<AndOp>(
      {g.one<GreaterOrEqualOp>({local, zero}),
       g.one<LessOp>(
           {local, g.scalar(b.getI64Type(), static_cast<double>(rows))})});
  Value safe = g.where(mine, local, zero);
  Value rowsOut = g.one<GatherOp>({gather.getData(), safe}, {g.i64("axis", 0)});
  Value kept =
      g.where(g.unsqueeze(mine, {-1}), rowsOut, g.scalarLike(rowsOut, 0.0));
  if (g.hadError || !kept)
    return false;
  auto sum = shard::AllReduceOp::create(b, gather.getLoc(), kept.getType(),
                                        kMeshSymbol, ArrayRef<int16_t>{axis},
                                        kept, shard::ReductionKind::Sum);
  gather.getOutput().replaceAllUsesWith(sum.getResult());
  gather.erase();
  return true;
}

LogicalResult TensorParallel::run(func::FuncOp func,
                                  TensorParallelStats &stats) {
  normalizeGemms(func);
  reads.clear();
  module.walk([&](GetParamOp get) {
    reads[get.getName()] += static_cast<int64_t>(
        std::distance(get->use_begin(), get->use_end()));
  });

  SmallVector<GatherOp> gathers;
  func.walk([&](GatherOp g) { gathers.push_back(g); });
  for (GatherOp g : gathers)
    if (embedding(g))
      ++stats.embeddings;

  // Candidates in program order; ops of an applied region are skipped.
  llvm::DenseSet<Operation *> used;
  SmallVector<MatMulOp> heads;
  func.walk([&](MatMulOp m) { heads.push_back(m); });
  for (MatMulOp head : heads) {
    if (used.contains(head))
      continue;
    FailureOr<Region> r = analyze(head);
    if (failed(r))
      continue;
    used.insert(r->ops.begin(), r->ops.end());
    if (failed(apply(*r)))
      return failure();
    if (r->rowEnds.empty())
      ++stats.gathered;
    else
      ++stats.columnRow;
  }
  if (failed(inferShapes(func, nullptr, /*replace=*/true)) ||
      failed(gatherOutputs()) ||
      failed(inferShapes(func, nullptr, /*replace=*/true)))
    return func.emitError("tensor parallelism produced shapes that do not "
                          "infer (see the error above)");
  if (failed(verify(func)))
    return func.emitError("'")
           << func.getSymName() << "' does not verify after tensor parallelism";
  return success();
}

} // namespace

LogicalResult dist::partitionTensorParallel(ModuleOp module,
                                            const MeshSpec &mesh,
                                            TensorParallelStats *stats) {
  int64_t tp = mesh.sizeOf("tp");
  if (tp == 1)
    return success();
  // A module that declares the mesh was split for it already.
  if (module.lookupSymbol<shard::GridOp>(kMeshSymbol))
    return declareMesh(module, mesh);
  for (auto f : module.getOps<func::FuncOp>())
    if (f->hasAttr("dist.train_step"))
      return f.emitError("tensor parallelism splits the forward function "
                         "before the training step is built: run "
                         "dist-tensor-parallel before dist-build-train-step "
                         "(the train phase does)");
  if (failed(declareMesh(module, mesh)))
    return failure();
  // A parameter read in several places is split only if every read splits
  // it alike; whether they do is known once the regions are applied. So
  // the split runs on a copy first (quietly: a partly split parameter
  // makes shapes disagree), and again without the parameters that it split
  // partly, until none is (each round excludes one at least).
  llvm::StringSet<> excluded;
  auto splitAll = [&](ModuleOp m, TensorParallelStats &stats,
                      SmallVector<std::string> &partly) -> LogicalResult {
    TensorParallel t(m, mesh, excluded);
    LogicalResult result = success();
    for (auto f : llvm::to_vector(m.getOps<func::FuncOp>())) {
      if (f.isExternal() || !f.isPublic())
        continue;
      if (failed(t.run(f, stats))) {
        result = failure();
        break;
      }
    }
    partly.clear();
    for (StringRef name : t.partlySplit())
      partly.push_back(name.str());
    stats.params = t.numSplit();
    return result;
  };
  SmallVector<std::string> partly;
  while (true) {
    OwningOpRef<ModuleOp> trial = module.clone();
    TensorParallelStats ignored;
    {
      ScopedDiagnosticHandler quiet(module.getContext(),
                                    [](Diagnostic &) { return success(); });
      (void)splitAll(*trial, ignored, partly);
    }
    if (partly.empty())
      break; // A failure then shows again below, with its message.
    for (const std::string &name : partly)
      excluded.insert(name);
  }
  TensorParallelStats local;
  if (failed(splitAll(module, local, partly)))
    return failure();
  if (local.params == 0)
    return module.emitError("--mesh tp=")
           << tp << ": nothing in the model can be split Megatron-style (no "
           << "matrix product with a parameter weight whose output features "
           << "divide by " << tp << ", and no embedding table whose rows do)";
  if (stats)
    *stats = local;
  return success();
}

//===----------------------------------------------------------------------===//
// dist-tensor-parallel
//===----------------------------------------------------------------------===//

namespace {
struct TensorParallelPass
    : public dist::impl::TensorParallelPassBase<TensorParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshSpec spec;
    if (!mesh.empty()) {
      std::string why = parseMesh(mesh, spec);
      if (!why.empty()) {
        module.emitError("dist-tensor-parallel: mesh: ") << why;
        return signalPassFailure();
      }
    } else if (MeshAttr requested = getRequestedMesh(module)) {
      spec = requested.getSpec();
    } else {
      return; // No mesh: nothing to split over.
    }
    if (spec.sizeOf("tp") == 1 ||
        module.lookupSymbol<shard::GridOp>(kMeshSymbol)) {
      if (failed(partitionTensorParallel(module, spec)))
        return signalPassFailure();
      return;
    }
    TensorParallelStats stats;
    if (failed(partitionTensorParallel(module, spec, &stats)))
      return signalPassFailure();
    numColumnRow += stats.columnRow;
    numGathered += stats.gathered;
    numEmbeddings += stats.embeddings;
    numParams += stats.params;
    LLVM_DEBUG(llvm::dbgs() << "split " << stats.params << " parameters\n");
    if (report)
      llvm::errs() << "tensor parallel over tp=" << spec.sizeOf("tp") << ": "
                   << stats.columnRow << " column/row-split region(s), "
                   << stats.gathered << " gathered output layer(s), "
                   << stats.embeddings << " vocabulary-parallel embedding(s); "
                   << stats.params << " parameter(s) split\n";
  }
};
} // namespace
