//===- LayerCosts.cpp - Layer costs of a dist function ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// See LayerCosts.h. Kernel and traffic counts model what codegen emits:
// view ops (reshape family) are free; an elementwise op whose operand comes
// from a single-use non-contraction producer is fused into it (no kernel of
// its own, the intermediate never reaches memory); contractions are runtime
// GEMM calls whose inputs are read by the library, plus an im2col kernel for
// convolutions and an initialisation kernel for a bias.
//
//===----------------------------------------------------------------------===//

#include "dist/Transforms/LayerCosts.h"

#include "dist/Codegen/RuntimeABI.h"
#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/Transforms/Passes.h"
#include "dist_rt/conv_plan.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::dist;

namespace {

int64_t bytesOf(Type t) {
  auto shaped = dyn_cast<ShapedType>(t);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  Type e = shaped.getElementType();
  if (!e.isIntOrFloat())
    return 0;
  return shaped.getNumElements() *
         static_cast<int64_t>((e.getIntOrFloatBitWidth() + 7) / 8);
}

bool isFloatTensor(Value v) {
  return isa<FloatType>(getElementTypeOrSelf(v.getType()));
}

/// Ops codegen turns into views or nothing.
bool isFree(Operation *op) {
  return isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp, ShapeOp,
             SizeOp, ConstantOp, GetParamOp, SetParamOp>(op) ||
         op->hasTrait<OpTrait::IsTerminator>() ||
         !isa<DistDialect>(op->getDialect());
}

/// Whether `op` swaps the last two dimensions and nothing else (a transpose
/// codegen folds into the strides of a product that reads it).
bool swapsLastTwo(TransposeOp op) {
  auto type = dyn_cast<ShapedType>(op.getInput().getType());
  if (!type || !type.hasRank() || type.getRank() < 2)
    return false;
  int64_t rank = type.getRank();
  SmallVector<int64_t> perm;
  if (std::optional<ArrayRef<int64_t>> p = op.getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank)
    return false;
  for (int64_t i = 0; i < rank - 2; ++i)
    if (perm[i] != i)
      return false;
  return perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
}

/// Whether `v` is a ranked tensor of rank `rank`.
bool hasRank(Value v, int64_t rank) {
  auto type = dyn_cast<ShapedType>(v.getType());
  return type && type.hasRank() && type.getRank() == rank;
}

/// Whether `op` is a MatMul of rank-4 operands and result, which codegen
/// keeps as a product with two batch dimensions (LowerLinearAlgebra.cpp).
bool isRank4MatMul(Operation *op) {
  auto mm = dyn_cast<MatMulOp>(op);
  return mm && hasRank(mm.getLhs(), 4) && hasRank(mm.getRhs(), 4) &&
         hasRank(mm.getResult(), 4);
}

/// A transpose that codegen folds into the strides of the products it
/// reads or feeds (FuseElementwise.cpp), so no copy is written: one that
/// swaps the last two dimensions for products only, any rank-4 one for
/// rank-4 MatMuls only (attention's heads), and one of a rank-4 MatMul's
/// result that is its only reader.
bool foldsIntoProducts(Operation *op) {
  auto t = dyn_cast<TransposeOp>(op);
  if (!t || t->use_empty())
    return false;
  if (hasRank(t.getInput(), 4)) {
    if (llvm::all_of(t->getUsers(), isRank4MatMul))
      return true;
    Operation *producer = t.getInput().getDefiningOp();
    if (producer && isRank4MatMul(producer) && producer->hasOneUse())
      return true;
  }
  return swapsLastTwo(t) && llvm::all_of(t->getUsers(), [](Operation *u) {
           return isa<MatMulOp, GemmOp>(u);
         });
}

/// Scalar operations from which a generated loop nest forks onto the
/// runtime's pool (ParallelizeLoops' default min-work).
constexpr double kForkMinWork = 32768;

/// Counts one generated kernel moving `bytes` and computing `flops` (whole
/// step): it forks when its elements plus arithmetic reach kForkMinWork.
template <typename Work>
void countKernel(Work &work, double bytes, double flops) {
  work.kernels += 1;
  if (bytes / 4 + flops >= kForkMinWork)
    work.parallelKernels += 1;
}

/// Whether the matrix rows of `op`'s result run along its input's
/// contiguous (last) dimension, so that a product reading it sees a
/// transposed operand: perm[rank - 2] == rank - 1 (a swap of the last two
/// dimensions does; a swap of heads and rows, [0, 2, 1, 3], does not).
bool readsContiguousAsRows(TransposeOp op) {
  auto type = dyn_cast<ShapedType>(op.getInput().getType());
  if (!type || !type.hasRank() || type.getRank() < 2)
    return false;
  int64_t rank = type.getRank();
  if (std::optional<ArrayRef<int64_t>> p = op.getPerm())
    return static_cast<int64_t>(p->size()) == rank &&
           (*p)[rank - 2] == rank - 1;
  return true; // the default reverses every dimension
}

/// Operand layout of a product as the runtime's GEMM sees it. With
/// `constantWeights` (an inference step, whose parameters are the read-only
/// mapping of the parameter file), a transposed B that is a parameter runs
/// untransposed: the runtime keeps an untransposed copy (blas.cpp).
GemmLayout layoutOf(Operation *op,
                    const llvm::DenseMap<Value, ParamOp> &paramOf,
                    bool constantWeights) {
  // dy times the im2col columns read transposed (LowerLinearAlgebra.cpp).
  if (isa<ConvWeightGradOp>(op))
    return GemmLayout::NT;
  bool ta = false, tb = false;
  if (auto g = dyn_cast<GemmOp>(op)) {
    ta = g.getTransA() != 0;
    tb = g.getTransB() != 0;
  } else if (auto mm = dyn_cast<MatMulOp>(op)) {
    auto t = mm.getLhs().getDefiningOp<TransposeOp>();
    ta = t && foldsIntoProducts(t) && readsContiguousAsRows(t);
    t = mm.getRhs().getDefiningOp<TransposeOp>();
    tb = t && foldsIntoProducts(t) && readsContiguousAsRows(t);
  }
  if (tb && constantWeights) {
    Value b = op->getOperand(1);
    if (auto t = b.getDefiningOp<TransposeOp>(); t && isa<MatMulOp>(op))
      b = t.getInput();
    if (paramOf.count(b))
      tb = false;
  }
  if (ta)
    return GemmLayout::TN;
  return tb ? GemmLayout::NT : GemmLayout::NN;
}

/// Whether a forward dist.conv reads the same input with the same kernel
/// and window as `grad`: the two im2col column matrices (and padded copies)
/// are then the same ops, which CSE merges after lowering, so the gradient
/// builds none of its own.
bool sharesForwardColumns(ConvWeightGradOp grad) {
  auto orDefault = [](std::optional<ArrayRef<int64_t>> a, size_t n, int64_t v) {
    return a ? SmallVector<int64_t>(a->begin(), a->end())
             : SmallVector<int64_t>(n, v);
  };
  ArrayRef<int64_t> kernel = grad.getKernelShape();
  size_t n = kernel.size();
  for (Operation *user : grad.getInput().getUsers()) {
    auto conv = dyn_cast<ConvOp>(user);
    if (!conv || conv.getInput() != grad.getInput() || conv.getGroup() != 1 ||
        conv.getAutoPad() != "NOTSET")
      continue;
    auto w = cast<ShapedType>(conv.getWeight().getType());
    if (w.getShape().drop_front(2) != kernel)
      continue;
    if (orDefault(conv.getStrides(), n, 1) ==
            orDefault(grad.getStrides(), n, 1) &&
        orDefault(conv.getDilations(), n, 1) ==
            orDefault(grad.getDilations(), n, 1) &&
        orDefault(conv.getPads(), 2 * n, 0) ==
            orDefault(grad.getPads(), 2 * n, 0))
      return true;
  }
  return false;
}

/// Ops that fuse into a producer's loop nest when they read its result.
bool isFusibleConsumer(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  auto out = dyn_cast<ShapedType>(op->getResult(0).getType());
  if (!out)
    return false;
  // Elementwise: an operand of the same shape as the result.
  return llvm::any_of(op->getOperands(),
                      [&](Value v) {
                        return v.getType() == out ||
                               (isa<ShapedType>(v.getType()) &&
                                cast<ShapedType>(v.getType()).getShape() ==
                                    out.getShape());
                      }) &&
         !isa<TransposeOp, ConcatOp, SliceOp, GatherOp, PadOp, TileOp, ExpandOp,
              SoftmaxOp, LogSoftmaxOp, LayerNormOp, CumSumOp, MatMulOp, GemmOp,
              ConvOp, ConvWeightGradOp, ConvTransposeOp>(op);
}

/// The elementwise op that codegen fuses an elementwise `op` with several
/// users into (dist-fuse-elementwise's shared-producer fusion): its first
/// user in the block, parameter stores aside (they become the step's
/// results, at its end), when that user is elementwise over the same shape.
/// The fused op still stores `op`'s result for the other users. Null when
/// there is none.
Operation *firstElementwiseUser(Operation *op) {
  if (op->getNumResults() != 1 || op->getResult(0).hasOneUse() ||
      !isFusibleConsumer(op))
    return nullptr;
  Value r = op->getResult(0);
  Operation *first = nullptr;
  for (Operation *user : r.getUsers()) {
    if (isa<SetParamOp>(user))
      continue;
    if (user->getBlock() != op->getBlock())
      return nullptr;
    if (!first || user->isBeforeInBlock(first))
      first = user;
  }
  if (!first || !isFusibleConsumer(first) ||
      cast<ShapedType>(first->getResult(0).getType()).getShape() !=
          cast<ShapedType>(r.getType()).getShape())
    return nullptr;
  return first;
}

/// The layer scope of a location: the innermost node name without its last
/// path component ("/h.0/attn/MatMul" -> "/h.0/attn"), or "".
std::string scopeOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    StringRef n = name.getName().getValue();
    if (n == DistDialect::kPhaseBackward || n == DistDialect::kPhaseUpdate)
      return scopeOf(name.getChildLoc());
    size_t slash = n.rfind('/');
    if (slash != StringRef::npos && slash > 0)
      return n.substr(0, slash).str();
    return n.str();
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location l : fused.getLocations()) {
      std::string s = scopeOf(l);
      if (!s.empty())
        return s;
    }
  }
  return "";
}

/// The raw innermost name (for update ops: the parameter's name).
std::string nameOf(Location loc) { return DistDialect::getNodeName(loc).str(); }

/// Elements of the shortest run that `op` copies contiguously from one
/// buffer to another (a row of a gather, one input's part of a row of a
/// concatenation, one output's of a split), or 0 when `op` is not such a
/// copy or a shape is not static.
int64_t contiguousRun(Operation *op) {
  // Product of `type`'s dimensions from `axis` on (the run of a copy along
  // `axis`), or 0.
  auto tail = [](Type type, int64_t axis) -> int64_t {
    auto shaped = dyn_cast<ShapedType>(type);
    if (!shaped || !shaped.hasStaticShape())
      return 0;
    ArrayRef<int64_t> shape = shaped.getShape();
    if (axis < 0)
      axis += static_cast<int64_t>(shape.size());
    if (axis < 0 || axis > static_cast<int64_t>(shape.size()))
      return 0;
    int64_t run = 1;
    for (int64_t d : shape.drop_front(axis))
      run *= d;
    return run;
  };
  auto shortest = [&](auto types, int64_t axis) -> int64_t {
    int64_t run = 0;
    for (Type t : types) {
      int64_t r = tail(t, axis);
      if (r == 0)
        return 0;
      run = run == 0 ? r : std::min(run, r);
    }
    return run;
  };
  if (auto concat = dyn_cast<ConcatOp>(op))
    return shortest(concat.getInputs().getTypes(), concat.getAxis());
  if (auto split = dyn_cast<SplitOp>(op))
    return shortest(split.getOutputs().getTypes(), split.getAxis());
  if (auto gather = dyn_cast<GatherOp>(op)) {
    auto data = dyn_cast<ShapedType>(gather.getData().getType());
    if (!data || !data.hasRank())
      return 0;
    int64_t axis = gather.getAxis();
    if (axis < 0)
      axis += data.getRank();
    return tail(data, axis + 1);
  }
  return 0;
}

/// Bytes of a contiguous run from which a copy streams like an elementwise
/// kernel (one vector of the widest ISA here): measured on the DLRM-style
/// model's inference at one thread, its eight 128-byte-row embedding
/// gathers and the concatenation of their 128-byte rows ran at 90-120
/// GB/s, the elementwise probe's rate, where the movement probe (a 32x32
/// transpose and a pad) runs at 40 and priced them 3 times too slow.
constexpr int64_t kStreamingRunBytes = 64;

/// The loop class codegen's kernel for `op` falls in.
KernelClass kernelClassOf(Operation *op) {
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
          ReduceSumSquareOp, ReduceL2Op, ReduceLogSumExpOp, SoftmaxOp,
          LogSoftmaxOp, LayerNormOp, InstanceNormOp, BatchNormOp,
          GlobalAveragePoolOp, GlobalMaxPoolOp, ArgMaxOp, ArgMinOp, CumSumOp,
          TopKOp, SoftmaxCrossEntropyLossOp, NegativeLogLikelihoodLossOp>(op))
    return KernelClass::Reduction;
  if (isa<TransposeOp, ConcatOp, SplitOp, SliceOp, GatherOp, GatherElementsOp,
          ScatterElementsOp, ScatterNDOp, ExpandOp, TileOp, PadOp, OneHotOp>(
          op)) {
    int64_t elemBytes = 4;
    if (auto shaped = dyn_cast<ShapedType>(op->getResult(0).getType()))
      if (shaped.getElementType().isIntOrFloat())
        elemBytes = std::max<int64_t>(
            1, shaped.getElementType().getIntOrFloatBitWidth() / 8);
    return contiguousRun(op) * elemBytes >= kStreamingRunBytes
               ? KernelClass::Elementwise
               : KernelClass::Movement;
  }
  // A pooling whose windows do not overlap (strides at least the kernel,
  // no dilation) reads each input element once, row after row: a
  // streaming kernel (measured on the residual CNN's 2x2 stride-2 MaxPool
  // at one thread: 91 GB/s, near the elementwise probe's rate at its size,
  // where the window probe, a 3x3 stride-1 MaxPool doing 9 comparisons per
  // output, runs at 22 GB/s and priced it 4 times too slow).
  auto disjoint = [](ArrayRef<int64_t> kernel,
                     std::optional<ArrayRef<int64_t>> strides,
                     std::optional<ArrayRef<int64_t>> dilations) {
    for (size_t i = 0; i < kernel.size(); ++i) {
      int64_t s = strides && i < strides->size() ? (*strides)[i] : 1;
      int64_t d = dilations && i < dilations->size() ? (*dilations)[i] : 1;
      if (d != 1 || s < kernel[i])
        return false;
    }
    return true;
  };
  if (auto pool = dyn_cast<MaxPoolOp>(op))
    return disjoint(pool.getKernelShape(), pool.getStrides(),
                    pool.getDilations())
               ? KernelClass::Elementwise
               : KernelClass::Window;
  if (auto pool = dyn_cast<AveragePoolOp>(op))
    return disjoint(pool.getKernelShape(), pool.getStrides(),
                    pool.getDilations())
               ? KernelClass::Elementwise
               : KernelClass::Window;
  if (isa<ConvOp, ConvWeightGradOp, ConvTransposeOp>(op))
    return KernelClass::Window;
  return KernelClass::Elementwise;
}

/// Adds `bytes` moved by a generated kernel of class `c` that touches
/// `footprint` bytes in all (`bytes` when it is the whole kernel).
template <typename Work>
void addLoopBytes(Work &work, KernelClass c, double bytes,
                  double footprint = 0) {
  if (bytes <= 0)
    return;
  int i = static_cast<int>(c);
  work.bytes += bytes;
  work.classBytes[i] += bytes;
  work.classLogFootprintWeighted[i] +=
      bytes * std::log(std::max(1.0, footprint > 0 ? footprint : bytes));
}

/// A constant fill of `bytes` (one memset on the calling thread).
void addFillBytes(PhaseWork &work, double bytes) {
  if (bytes <= 0)
    return;
  work.bytes += bytes;
  work.fillBytes += bytes;
  work.fillLogFootprintWeighted += bytes * std::log(std::max(1.0, bytes));
}

/// Whether codegen may run a 2-D f32 convolution of `input` with a `kernel`
/// as the runtime's direct kernel on a host with AVX-512
/// (runtime_abi::directConvApplies, as LowerLinearAlgebra.cpp asks it),
/// for the convolution (with `groups`) and its weight gradient (one group)
/// alike.
bool mayRunDirect(Value input, ArrayRef<int64_t> kernel,
                  std::optional<ArrayRef<int64_t>> strides,
                  std::optional<ArrayRef<int64_t>> pads, bool samePad,
                  int64_t groups = 1) {
  auto in = dyn_cast<ShapedType>(input.getType());
  if (!in || !in.hasStaticShape() || in.getRank() != 4 ||
      !in.getElementType().isF32() || kernel.size() != 2)
    return false;
  int64_t sh = strides && strides->size() == 2 ? (*strides)[0] : 1;
  int64_t sw = strides && strides->size() == 2 ? (*strides)[1] : 1;
  int64_t h = in.getDimSize(2), w = in.getDimSize(3);
  if (pads && pads->size() == 4) {
    h += (*pads)[0] + (*pads)[2];
    w += (*pads)[1] + (*pads)[3];
  } else if (samePad) {
    h += kernel[0] - 1;
    w += kernel[1] - 1;
  }
  if (groups <= 0 || in.getDimSize(1) % groups)
    return false;
  return runtime_abi::directConvApplies(in.getDimSize(1) / groups, h, w,
                                        kernel[0], kernel[1], sh, sw, groups);
}

bool mayRunDirect(ConvOp conv, bool im2colConvs) {
  auto w = dyn_cast<ShapedType>(conv.getWeight().getType());
  return !im2colConvs && w && w.hasStaticShape() &&
         mayRunDirect(conv.getInput(), w.getShape().drop_front(2),
                      conv.getStrides(), conv.getPads(),
                      conv.getAutoPad().starts_with("SAME"), conv.getGroup());
}

bool mayRunDirect(ConvWeightGradOp grad, bool im2colConvs) {
  return !im2colConvs && mayRunDirect(grad.getInput(), grad.getKernelShape(),
                                      grad.getStrides(), grad.getPads(), false);
}

/// Fills `product`'s direct-kernel work (tile-taps and tiles times
/// `scale`, see GemmWork) for a convolution mayRunDirect accepted, as the
/// runtime counts it (dist_rt/conv_plan.h): the input padded as codegen
/// pads it, its row pitch the padded width.
void describeDirect(ConvOp conv, double scale, GemmWork &product) {
  auto in = cast<ShapedType>(conv.getInput().getType());
  auto w = cast<ShapedType>(conv.getWeight().getType());
  auto out = cast<ShapedType>(conv.getResult().getType());
  int64_t kh = w.getDimSize(2), kw = w.getDimSize(3);
  int64_t h = in.getDimSize(2), wd = in.getDimSize(3);
  if (auto pads = conv.getPads(); pads && pads->size() == 4) {
    h += (*pads)[0] + (*pads)[2];
    wd += (*pads)[1] + (*pads)[3];
  } else if (conv.getAutoPad().starts_with("SAME")) {
    h += kh - 1;
    wd += kw - 1;
  }
  auto strides = conv.getStrides();
  int64_t sh = strides && strides->size() == 2 ? (*strides)[0] : 1;
  int64_t sw = strides && strides->size() == 2 ? (*strides)[1] : 1;
  int64_t groups = conv.getGroup();
  dist_rt::conv_plan::ForwardPlan plan = dist_rt::conv_plan::forwardPlan(
      in.getDimSize(0), in.getDimSize(1) / groups, h, wd,
      w.getDimSize(0) / groups, kh, kw, sh, sw, out.getDimSize(2),
      out.getDimSize(3), wd, /*force=*/0, groups);
  product.directTileTaps = plan.tileTaps * scale;
  product.directItems = static_cast<double>(plan.items) * scale;
  product.directNarrow = !plan.filters || plan.p < 16;
}

/// Whether `op` is a ReLU that the direct convolution producing its
/// operand applies itself (dist-contractions-to-runtime fuses a ReLU that
/// is the convolution's next use), when nothing fuses into the ReLU.
bool reluOfDirectConv(Operation *op, bool im2colConvs) {
  if (!isa<ReluOp>(op))
    return false;
  // Only one group's convolution applies it (a grouped one's output view
  // splits the channels).
  auto conv = op->getOperand(0).getDefiningOp<ConvOp>();
  return conv && conv.getGroup() == 1 && mayRunDirect(conv, im2colConvs) &&
         conv->getResult(0).hasOneUse() &&
         !llvm::any_of(op->getResult(0).getUsers(), isFusibleConsumer);
}

/// Whether `v` is a splat constant (a scatter's zero destination).
bool isSplatConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  return dense && dense.isSplat();
}

} // namespace

func::FuncOp mlir::dist::findPlannedFunction(ModuleOp module) {
  func::FuncOp entry;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.isDeclaration())
      continue;
    if (f->hasAttr("dist.train_step"))
      return f;
    if (!entry && f.isPublic())
      entry = f;
  }
  return entry;
}

FailureOr<FunctionCosts> mlir::dist::collectLayerCosts(func::FuncOp func,
                                                       bool psTables,
                                                       bool im2colConvs) {
  FunctionCosts out;
  out.training = func->hasAttr("dist.train_step");
  out.batch = getStaticBatch(func);
  if (out.batch <= 0)
    out.batch = 1;
  double samples = static_cast<double>(out.batch);
  auto module = func->getParentOfType<ModuleOp>();
  Block &body = func.getBody().front();

  // Parameters read through get_param.
  llvm::DenseMap<Value, ParamOp> paramOf;
  // Layer of each forward value's producer (-1: argument or parameter).
  llvm::DenseMap<Value, int64_t> producerLayer;
  llvm::StringMap<int64_t> lastLayerOfScope;
  llvm::StringMap<int64_t> layerOfParam;
  std::vector<std::string> scopes;
  // Values whose producer absorbs their consumer (fused, never stored).
  llvm::DenseSet<Value> fusedValues;
  // Values with several users that are stored once and also fused into
  // their first elementwise consumer, which then does not read them.
  llvm::DenseMap<Value, Operation *> fusedInto;
  // A chain of fused ops is one kernel, which loads each value once; its
  // ops' loop bytes are priced at the whole chain's footprint, so they are
  // added when the chain ends.
  enum PendingPhase { kForward, kBackward, kUpdate };
  struct PendingBytes {
    int64_t layer;
    PendingPhase phase;
    KernelClass kernelClass;
    /// Bytes per sample (forward, backward) or per step (update).
    double bytes;
    /// Samples the bytes count for: the batch, or 1 for the update.
    double samples;
  };
  struct Chain {
    /// Values the chain's kernel loads, with the bytes charged for each
    /// per step (a gather's table: only the rows it selects).
    llvm::DenseMap<Value, double> read;
    SmallVector<PendingBytes> pending;
    size_t mergedInto = SIZE_MAX;
  };
  std::vector<Chain> chains;
  llvm::DenseMap<Value, size_t> chainOf;
  auto findChain = [&](size_t c) {
    while (chains[c].mergedInto != SIZE_MAX)
      c = chains[c].mergedInto;
    return c;
  };
  // Update kernels, priced once the whole step is seen (below).
  SmallVector<PendingBytes> updateBytes;
  auto flushChain = [&](size_t c) {
    Chain &ch = chains[c];
    double footprint[2] = {0, 0};
    for (const PendingBytes &p : ch.pending)
      if (p.phase != kUpdate)
        footprint[p.phase] += p.bytes;
    for (const PendingBytes &p : ch.pending) {
      if (p.phase == kUpdate) {
        updateBytes.push_back(p);
        continue;
      }
      LayerCost &l = out.layers[p.layer];
      addLoopBytes(p.phase == kForward ? l.fwd : l.bwd, p.kernelClass, p.bytes,
                   footprint[p.phase]);
    }
    ch.pending.clear();
  };
  llvm::DenseSet<StringRef> countedParams;
  // Types of the sparse embedding tables.
  llvm::DenseSet<Type> sparseTableTypes;
  // Per (layer, phase 0/1/2): sum of GEMM flops times their batch scaling.
  std::map<std::pair<int64_t, int>, double> gemmScalingWeighted;
  // (value, consuming layer) pairs already counted as a boundary.
  llvm::DenseSet<std::pair<Value, int64_t>> boundaryCounted;

  auto newLayer = [&](const std::string &scope) {
    LayerCost l;
    l.name =
        scope.empty() ? "layer" + std::to_string(out.layers.size()) : scope;
    out.layers.push_back(l);
    scopes.push_back(scope);
    lastLayerOfScope[scope] = static_cast<int64_t>(out.layers.size()) - 1;
    return static_cast<int64_t>(out.layers.size()) - 1;
  };

  for (Operation &op : body) {
    if (auto get = dyn_cast<GetParamOp>(op)) {
      if (auto p = module.lookupSymbol<ParamOp>(get.getNameAttr()))
        paramOf[get.getResult()] = p;
      out.opLayer.push_back(-1);
      continue;
    }
    if ((isFree(&op) || foldsIntoProducts(&op)) &&
        !isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp>(op)) {
      out.opLayer.push_back(-1);
      continue;
    }
    StringRef phase = DistDialect::getPhase(op.getLoc());
    std::string scope = scopeOf(op.getLoc());
    int64_t layer = -1;
    if (phase.empty()) {
      if (out.layers.empty() || (!scope.empty() && scopes.back() != scope))
        layer = newLayer(scope);
      else
        layer = static_cast<int64_t>(out.layers.size()) - 1;
    } else if (phase == DistDialect::kPhaseUpdate) {
      auto it = layerOfParam.find(nameOf(op.getLoc()));
      if (it != layerOfParam.end())
        layer = it->second;
    }
    if (layer < 0) {
      auto it = lastLayerOfScope.find(scope);
      layer = it != lastLayerOfScope.end()
                  ? it->second
                  : (out.layers.empty()
                         ? newLayer(scope)
                         : static_cast<int64_t>(out.layers.size()) - 1);
    }
    out.opLayer.push_back(layer);
    LayerCost &L = out.layers[layer];
    PhaseWork &work = phase.empty()                          ? L.fwd
                      : phase == DistDialect::kPhaseBackward ? L.bwd
                                                             : L.update;
    bool perSample = phase != DistDialect::kPhaseUpdate;
    double scale = perSample ? 1.0 / samples : 1.0;

    // Parameters this op reads.
    for (Value v : op.getOperands()) {
      auto it = paramOf.find(v);
      if (it == paramOf.end())
        continue;
      ParamOp p = it->second;
      if (p.getState())
        continue;
      StringRef name = p.getSymName();
      if (phase.empty() && !layerOfParam.count(name))
        layerOfParam[name] = layer;
      if (!phase.empty() || !countedParams.insert(name).second)
        continue;
      double bytes = static_cast<double>(bytesOf(p.getType()));
      bool trained = p.getTrainable() || !out.training;
      if (isa<GatherOp>(op) && v == op.getOperand(0) &&
          bytes >= kSparseTableBytes) {
        L.sparse = true;
        if (psTables) {
          L.sparseParamBytes += bytes;
          sparseTableTypes.insert(p.getType());
        } else {
          L.paramBytes += bytes;
        }
        L.sparseRowBytesPerSample +=
            static_cast<double>(bytesOf(op.getResult(0).getType())) / samples;
      } else if (trained && isFloatTensor(v)) {
        L.paramBytes += bytes;
      } else {
        L.frozenParamBytes += bytes;
      }
    }
    if (isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp>(op)) {
      // Views: the value is the operand's, fusion state carries over.
      if (op.getNumOperands() && fusedValues.contains(op.getOperand(0))) {
        fusedValues.insert(op.getResult(0));
        if (auto it = chainOf.find(op.getOperand(0)); it != chainOf.end())
          chainOf[op.getResult(0)] = it->second;
      }
      if (phase.empty())
        for (Value r : op.getResults())
          producerLayer[r] = layer;
      continue;
    }
    if (phase.empty())
      ++L.numOps;

    // Gradients and updates of sparse tables: the parameter server applies
    // them to the touched rows only (HeterPS), so they cost the rows'
    // traffic, not the dense table-sized ops the training step spells out.
    if (!phase.empty() && llvm::any_of(op.getResultTypes(), [&](Type t) {
          return sparseTableTypes.contains(t);
        })) {
      double rows = L.sparseRowBytesPerSample;
      if (phase == DistDialect::kPhaseBackward) {
        work.bytes += 2 * rows;
      } else {
        work.bytes += 2 * rows * samples;
      }
      countKernel(work, 2 * rows * samples, 0);
      continue;
    }

    auto cost = dyn_cast<CostOpInterface>(op);
    if (!cost)
      return op.emitError("has no cost model"), failure();
    FailureOr<int64_t> flops = cost.getFlopCount();
    if (failed(flops))
      return op.emitError("cost unknown: shapes must be static (bind the "
                          "batch with --global-batch or --input-shape)"),
             failure();
    FailureOr<SmallVector<int64_t, 4>> gemm = cost.getContractionShape();
    // Results nothing reads are not computed (a MaxPool's unused indices);
    // the first one counts regardless.
    int64_t resultBytes = 0;
    for (OpResult r : op.getResults())
      if (r.getResultNumber() == 0 || !r.use_empty())
        resultBytes += bytesOf(r.getType());
    if (succeeded(gemm)) {
      const SmallVector<int64_t, 4> &s = *gemm;
      double f = 2.0 * s[0] * s[1] * s[2] * s[3];
      // The product's size for ONE sample: the dimension that carries the
      // batch is divided by it (and scales back with the samples at
      // prediction time); a batch in s0 (one product per image or head)
      // leaves the size alone.
      double m = s[1], n = s[2], k = s[3];
      double batchScaling = 0;
      int64_t b = out.batch;
      GemmWork product;
      product.count = s[0];
      product.layout = layoutOf(&op, paramOf, !out.training);
      product.summed = isa<ConvWeightGradOp>(op);
      if (b > 1 && !(s[0] >= b && s[0] % b == 0)) {
        int dim = 1;
        for (double *d : {&m, &n, &k}) {
          if (*d >= b && static_cast<int64_t>(*d) % b == 0) {
            *d /= b;
            batchScaling = 1;
            product.batchDim = dim;
            break;
          }
          ++dim;
        }
      }
      product.m = m;
      product.n = n;
      product.k = k;
      // Per sample: the batch is in count (or nowhere: the work is taken to
      // grow with the samples as a whole).
      if (product.batchDim == 0)
        product.count *= scale;
      work.gemms.push_back(product);
      double size = std::cbrt(m * n * k);
      work.gemmFlops += f * scale;
      work.gemmLogSizeWeighted += f * scale * std::log(std::max(1.0, size));
      gemmScalingWeighted[{layer, phase.empty() ? 0
                                  : phase == DistDialect::kPhaseBackward
                                      ? 1
                                      : 2}] += f * scale * batchScaling;
      work.gemmCalls += 1;
      work.otherFlops += static_cast<double>(*flops - f) * scale;
      auto conv = dyn_cast<ConvOp>(op);
      auto weightGrad = dyn_cast<ConvWeightGradOp>(op);
      if (conv || weightGrad) {
        // As codegen lowers it (LowerLinearAlgebra.cpp): a padded copy of
        // the input when there is padding, then im2col writing the column
        // matrix (read back by the GEMM), except for a 1x1 unit-stride
        // convolution, whose input already is the column matrix. A weight
        // gradient builds the same columns from the forward input.
        auto all = [](std::optional<ArrayRef<int64_t>> a, int64_t v) {
          return !a || llvm::all_of(*a, [&](int64_t x) { return x == v; });
        };
        bool unitStride =
            all(conv ? conv.getStrides() : weightGrad.getStrides(), 1);
        bool padded = conv ? !all(conv.getPads(), 0) ||
                                 conv.getAutoPad().starts_with("SAME")
                           : !all(weightGrad.getPads(), 0);
        // The kernel's extent is the weight's (kernel_shape is optional).
        ArrayRef<int64_t> kernel =
            conv ? cast<ShapedType>(conv.getWeight().getType())
                       .getShape()
                       .drop_front(2)
                 : weightGrad.getKernelShape();
        bool pointwise = unitStride && !padded &&
                         llvm::all_of(kernel, [](int64_t d) { return d == 1; });
        // A weight gradient reusing the forward convolution's columns.
        bool shared = weightGrad && sharesForwardColumns(weightGrad);
        // Where the convolution may run direct, the columns are only
        // im2col's (see PhaseWork::im2colOnly).
        bool direct = conv ? mayRunDirect(conv, im2colConvs)
                           : mayRunDirect(weightGrad, im2colConvs);
        if (conv && direct)
          describeDirect(conv, scale, work.gemms.back());
        double inBytes =
            static_cast<double>(bytesOf(op.getOperand(0).getType()));
        double col =
            static_cast<double>(s[0]) * s[2] * s[3] *
            (inBytes /
             std::max<int64_t>(1, cast<ShapedType>(op.getOperand(0).getType())
                                      .getNumElements()));
        if (padded && !shared) {
          addLoopBytes(work, KernelClass::Elementwise, 2 * inBytes * scale);
          countKernel(work, 2 * inBytes, 0);
        }
        if (!pointwise && !shared) {
          // im2col copies runs of one output row (OW elements): with unit
          // strides a streaming copy like an elementwise kernel (measured
          // on the residual CNN's inference at one thread: about 75 GB/s,
          // the elementwise probe's figure), a gather with larger strides.
          // Runs shorter than a vector (the convolution that computes a
          // 1-D or 3-D weight gradient, whose output is the kernel's size)
          // fall to scalar code: 6 GB/s on the CNN's training step when its
          // 2-D weight gradients ran that way, below the windowed probe.
          Value spatialOut =
              conv ? Value(op.getResult(0)) : Value(weightGrad.getOutputGrad());
          int64_t outW =
              cast<ShapedType>(spatialOut.getType()).getShape().back();
          KernelClass c = outW < 8     ? KernelClass::Window
                          : unitStride ? KernelClass::Elementwise
                                       : KernelClass::Movement;
          if (direct) {
            addLoopBytes(work.im2colOnly, c, 2 * col * scale);
            countKernel(work.im2colOnly, 2 * col, 0);
          } else {
            addLoopBytes(work, c, 2 * col * scale);
            countKernel(work, 2 * col, 0);
          }
        }
      }
      // The GEMM sets the output (dist-contractions-to-runtime drops the
      // zero fill), then the bias is added (a kernel, which
      // dist-fuse-elementwise joins with an activation after it when there
      // is one). A direct convolution adds the bias itself.
      if (op.getNumOperands() > 2) {
        auto conv = dyn_cast<ConvOp>(op);
        double bytes = static_cast<double>(resultBytes);
        if (conv && mayRunDirect(conv, im2colConvs)) {
          addLoopBytes(work.im2colOnly, KernelClass::Elementwise,
                       bytes * scale);
          countKernel(work.im2colOnly, bytes, 0);
        } else {
          addLoopBytes(work, KernelClass::Elementwise, bytes * scale);
          countKernel(work, bytes, 0);
        }
      }
    } else if (reluOfDirectConv(&op, im2colConvs)) {
      // Its own kernel (reading the convolution's output, writing its
      // result) only where the convolution runs as im2col + GEMM.
      double bytes = static_cast<double>(resultBytes) * 2;
      work.otherFlops += static_cast<double>(*flops) * scale;
      addLoopBytes(work.im2colOnly, KernelClass::Elementwise, bytes * scale);
      countKernel(work.im2colOnly, bytes, static_cast<double>(*flops));
    } else {
      work.otherFlops += static_cast<double>(*flops) * scale;
      if (detail::isTranscendental(&op))
        work.mathFlops += static_cast<double>(*flops) * scale;
      bool fused = false;
      int64_t traffic = 0;
      // A scatter into a constant (the gradient of a gather: rows added
      // into a zero table) fills its result, then reads and writes only the
      // rows it updates.
      bool scatterIntoFill =
          isa<ScatterElementsOp>(op) && isSplatConstant(op.getOperand(0));
      if (scatterIntoFill) {
        addFillBytes(work, static_cast<double>(resultBytes) * scale);
        resultBytes = bytesOf(op.getOperands().back().getType());
      }
      // The chain this op joins: its fused operands' (merged), or a new one.
      size_t chain = SIZE_MAX;
      for (Value v : op.getOperands()) {
        if (!fusedValues.contains(v) && fusedInto.lookup(v) != &op)
          continue;
        auto it = chainOf.find(v);
        if (it == chainOf.end())
          continue;
        size_t c = findChain(it->second);
        if (chain == SIZE_MAX) {
          chain = c;
        } else if (c != chain) {
          Chain &from = chains[c], &to = chains[chain];
          // A value both chains read is loaded once by the merged kernel:
          // the smaller of the two charges comes off `from`'s bytes.
          double twice = 0;
          for (auto [shared, charged] : from.read) {
            auto it = to.read.find(shared);
            if (it == to.read.end())
              continue;
            twice += std::min(charged, it->second);
            it->second = std::max(charged, it->second);
          }
          for (PendingBytes &p : from.pending) {
            double cut = std::min(p.bytes, twice / p.samples);
            p.bytes -= cut;
            twice -= cut * p.samples;
          }
          for (auto [shared, charged] : from.read)
            to.read.try_emplace(shared, charged);
          to.pending.append(from.pending.begin(), from.pending.end());
          from.pending.clear();
          from.mergedInto = chain;
        }
      }
      if (chain == SIZE_MAX) {
        chain = chains.size();
        chains.emplace_back();
      }
      for (Value v : op.getOperands()) {
        if (scatterIntoFill && v == op.getOperand(0))
          continue;
        if (fusedValues.contains(v) || fusedInto.lookup(v) == &op) {
          fused = true;
          continue;
        }
        // The kernel loads each value once.
        if (chains[chain].read.contains(v))
          continue;
        // A gather reads only the rows it selects.
        int64_t read =
            isa<GatherOp, GatherElementsOp>(op) && v == op.getOperand(0)
                ? resultBytes
                : bytesOf(v.getType());
        chains[chain].read[v] = static_cast<double>(read);
        traffic += read;
      }
      // A single-use result read by a fusible consumer stays in registers.
      bool resultFused = op.getNumResults() == 1 &&
                         op.getResult(0).hasOneUse() &&
                         isFusibleConsumer(*op.getResult(0).getUsers().begin());
      bool chainGoesOn = resultFused;
      if (resultFused) {
        fusedValues.insert(op.getResult(0));
      } else {
        traffic += resultBytes;
        if (Operation *user = firstElementwiseUser(&op)) {
          fusedInto[op.getResult(0)] = user;
          chainGoesOn = true;
        }
      }
      PendingPhase pendingPhase = phase.empty() ? kForward
                                  : phase == DistDialect::kPhaseBackward
                                      ? kBackward
                                      : kUpdate;
      chains[chain].pending.push_back({layer, pendingPhase, kernelClassOf(&op),
                                       static_cast<double>(traffic) * scale,
                                       1.0 / scale});
      if (chainGoesOn)
        chainOf[op.getResult(0)] = chain;
      else
        flushChain(chain);
      if (!(fused && isFusibleConsumer(&op)))
        countKernel(work, static_cast<double>(traffic),
                    static_cast<double>(*flops));
    }

    if (phase.empty()) {
      for (Value r : op.getResults()) {
        producerLayer[r] = layer;
        if (!isFloatTensor(r))
          continue;
        double bytes = static_cast<double>(bytesOf(r.getType())) / samples;
        bool keptForBackward =
            !out.training || llvm::any_of(r.getUsers(), [](Operation *u) {
              return !DistDialect::getPhase(u->getLoc()).empty();
            });
        if (keptForBackward && !fusedValues.contains(r))
          L.activationBytes += bytes;
      }
      for (Value v : op.getOperands()) {
        if (paramOf.count(v) || !isa<ShapedType>(v.getType()))
          continue;
        auto it = producerLayer.find(v);
        int64_t from = it == producerLayer.end() ? -1 : it->second;
        if (from == layer || !boundaryCounted.insert({v, layer}).second)
          continue;
        double bytes = static_cast<double>(bytesOf(v.getType())) / samples;
        L.inputBytes += bytes;
        if (from >= 0)
          out.layers[from].outputBytes += bytes;
      }
    }
    if (isa<MatMulOp, GemmOp>(op) &&
        llvm::any_of(op.getOperands(), [&](Value v) {
          auto it = paramOf.find(v);
          return it != paramOf.end() &&
                 cast<ShapedType>(v.getType()).getRank() == 2;
        }))
      L.tensorParallel = true;
  }
  // Chains whose last consumer is not an op priced here (a product).
  for (size_t c = 0; c < chains.size(); ++c)
    if (chains[c].mergedInto == SIZE_MAX)
      flushChain(c);
  // The update touches each parameter and its state once per step, so its
  // kernels find them where the rest of the step left them: their working
  // set is everything the update streams, not one kernel's share (measured
  // on the DLRM-style model's AdamW step at one thread: its tables' updates
  // of 18 to 90 MB each all run at 41-46 GB/s, DRAM's rate, where their
  // own footprints would price the smaller ones at the caches' rate).
  double updateFootprint = 0;
  for (const PendingBytes &p : updateBytes)
    updateFootprint += p.bytes;
  for (const PendingBytes &p : updateBytes)
    addLoopBytes(out.layers[p.layer].update, p.kernelClass, p.bytes,
                 updateFootprint);
  // Codegen fuses each parameter's update into one loop that rewrites the
  // parameter and its state where it read them.
  for (LayerCost &l : out.layers)
    l.update.inPlace = true;
  for (auto &[key, weighted] : gemmScalingWeighted) {
    LayerCost &l = out.layers[key.first];
    PhaseWork &w = key.second == 0 ? l.fwd : key.second == 1 ? l.bwd : l.update;
    if (w.gemmFlops > 0)
      w.gemmBatchScaling = weighted / w.gemmFlops;
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Pipeline stages of the layers
//===----------------------------------------------------------------------===//

namespace {

/// Splits contiguous layers with the given weights into `stages` runs that
/// minimise the heaviest run (each run gets at least one layer). Returns
/// each layer's stage.
std::vector<int64_t> balancedSplit(const std::vector<double> &weight,
                                   int64_t stages) {
  size_t n = weight.size();
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + weight[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the heaviest run when the first i layers form k runs.
  std::vector<std::vector<double>> best(stages + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> cut(stages + 1,
                                       std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t k = 1; k <= stages; ++k)
    for (size_t i = k; i <= n; ++i)
      for (size_t j = k - 1; j < i; ++j) {
        double v = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (v < best[k][i]) {
          best[k][i] = v;
          cut[k][i] = j;
        }
      }
  std::vector<int64_t> stageOf(n, 0);
  size_t end = n;
  for (int64_t k = stages; k >= 1; --k) {
    size_t begin = cut[k][end];
    for (size_t i = begin; i < end; ++i)
      stageOf[i] = k - 1;
    end = begin;
  }
  return stageOf;
}

/// The stage of each layer from `split`: counts ("3,5") or the names of the
/// layers that start stages 1.. ("/h.2,/h.4").
FailureOr<std::vector<int64_t>> parseSplit(StringRef split,
                                           const FunctionCosts &costs,
                                           int64_t stages, Operation *at) {
  SmallVector<StringRef> items;
  split.split(items, ',');
  size_t n = costs.layers.size();
  std::vector<int64_t> stageOf(n, 0);
  bool counts = llvm::all_of(items, [](StringRef s) {
    int64_t v;
    return !s.trim().getAsInteger(10, v);
  });
  auto fail = [&](const Twine &why) {
    return at->emitError("dist-split-stages option split: ") << why, failure();
  };
  if (counts) {
    if (static_cast<int64_t>(items.size()) != stages)
      return fail(Twine(items.size()) + " layer counts for " + Twine(stages) +
                  " stages");
    size_t at = 0;
    for (auto [s, item] : llvm::enumerate(items)) {
      int64_t c = 0;
      (void)item.trim().getAsInteger(10, c);
      if (c < 1)
        return fail("stage " + Twine(s) + " gets " + Twine(c) +
                    " layers (every stage needs one)");
      for (int64_t i = 0; i < c && at < n; ++i)
        stageOf[at++] = static_cast<int64_t>(s);
    }
    if (at != n || [&] {
          int64_t total = 0;
          for (StringRef item : items) {
            int64_t c = 0;
            (void)item.trim().getAsInteger(10, c);
            total += c;
          }
          return total != static_cast<int64_t>(n);
        }())
      return fail("the counts do not add up to the model's " + Twine(n) +
                  " layers");
    return stageOf;
  }
  if (static_cast<int64_t>(items.size()) != stages - 1)
    return fail(Twine(items.size()) + " layer names for " + Twine(stages) +
                " stages (give the first layer of stages 1 to " +
                Twine(stages - 1) + ")");
  int64_t current = 0;
  size_t nextItem = 0;
  for (size_t i = 0; i < n; ++i) {
    if (nextItem < items.size() &&
        costs.layers[i].name == items[nextItem].trim()) {
      ++current;
      ++nextItem;
    }
    stageOf[i] = current;
  }
  if (nextItem != items.size()) {
    std::string names;
    for (size_t i = 0; i < n && i < 12; ++i)
      names += (i ? ", " : "") + costs.layers[i].name;
    return fail("no layer named '" + items[nextItem].trim() +
                "' after the earlier boundaries (layers: " + names +
                (n > 12 ? ", ..." : "") + ")");
  }
  if (stageOf.empty() || stageOf.front() != 0)
    return fail("stage 0 gets no layer");
  return stageOf;
}

} // namespace

FailureOr<std::vector<int64_t>>
mlir::dist::layerStages(const FunctionCosts &costs, int64_t stages,
                        StringRef split, Operation *at) {
  if (!split.empty())
    return parseSplit(split, costs, stages, at);
  std::vector<double> weight;
  for (const LayerCost &l : costs.layers)
    weight.push_back(l.fwd.gemmFlops + l.fwd.otherFlops + l.bwd.gemmFlops +
                     l.bwd.otherFlops + 1);
  return balancedSplit(weight, stages);
}
