//===- Collectives.cpp - mesh collectives as runtime calls ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Bufferization of `shard.all_reduce` on tensors into a start/wait pair of
// runtime calls (dist_rt/kernels.h), of the other mesh collectives, and of
// the pipeline transfers `dist.send` / `dist.recv` into dist_rt_pp_send /
// dist_rt_pp_recv calls; dist-strip-mesh (StripMesh.cpp) drops the mesh
// declarations once nothing refers to them.
//
// Why not upstream's convert-shard-to-mpi: it lowers only all_reduce, and
// with OpenMPI it links to a wrong symbol and truncates communicator
// handles (shared/ENVIRONMENT.md). Going through the runtime also gives
// deadlines, errors that name the rank, and one API for MPI and NCCL.
//
// The reduction runs in place on the operand's buffer. The start call goes
// where the op is (right after the last gradient of a bucket, see
// dist-partition); the wait goes just before the first user of the result
// in the same block, so the reduction overlaps the ops in between. Nothing
// between the two calls touches the buffer: the operand's only use is the
// all_reduce (otherwise bufferization copies it first), and the result is
// not read before the wait.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"
#include "dist/Codegen/RuntimeABI.h"
#include "dist/Dialect/Dist/IR/DistDialect.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace {

/// The runtime's code of a reduction (dist_rt_mesh_all_reduce_start).
std::optional<int64_t> reductionCode(shard::ReductionKind kind) {
  switch (kind) {
  case shard::ReductionKind::Sum:
    return dist::runtime_abi::kReduceSum;
  case shard::ReductionKind::Max:
    return dist::runtime_abi::kReduceMax;
  case shard::ReductionKind::Min:
    return dist::runtime_abi::kReduceMin;
  case shard::ReductionKind::Product:
    return dist::runtime_abi::kReduceProd;
  case shard::ReductionKind::Average:
    return dist::runtime_abi::kReduceAverage;
  default:
    return std::nullopt;
  }
}

func::FuncOp declareRuntimeFunction(ModuleOp module, Location loc,
                                    StringRef name, unsigned numArgs,
                                    bool returnsHandle) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder mb(module.getBodyRegion());
  mb.setInsertionPointToStart(module.getBody());
  Type i64 = mb.getI64Type();
  SmallVector<Type> args(numArgs, i64);
  SmallVector<Type> results;
  if (returnsHandle)
    results.push_back(i64);
  auto f =
      func::FuncOp::create(mb, loc, name, mb.getFunctionType(args, results));
  f.setPrivate();
  return f;
}

/// A contiguous (identity-layout) buffer holding `buf`'s elements.
Value contiguous(RewriterBase &rewriter, Location loc, Value buf) {
  auto type = cast<MemRefType>(buf.getType());
  if (type.getLayout().isIdentity())
    return buf;
  auto plain = MemRefType::get(type.getShape(), type.getElementType());
  SmallVector<Value> dynSizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dynSizes.push_back(memref::DimOp::create(rewriter, loc, buf, d));
  Value copy = memref::AllocOp::create(rewriter, loc, plain, dynSizes);
  memref::CopyOp::create(rewriter, loc, buf, copy);
  return copy;
}

struct AllReduceBufferization
    : public BufferizableOpInterface::ExternalModel<AllReduceBufferization,
                                                    shard::AllReduceOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto reduce = cast<shard::AllReduceOp>(op);
    auto type = dyn_cast<RankedTensorType>(reduce.getInput().getType());
    if (!type || type != reduce.getResult().getType())
      return op->emitOpError("codegen supports all_reduce on ranked tensors "
                             "with the result type of the input only");
    Type elem = type.getElementType();
    int64_t dtype = elem.isF32()   ? dist::runtime_abi::kDTypeFloat
                    : elem.isF64() ? dist::runtime_abi::kDTypeDouble
                                   : 0;
    if (!dtype)
      return op->emitOpError("codegen supports all_reduce on f32 and f64, "
                             "not ")
             << elem;
    std::optional<int64_t> kind = reductionCode(reduce.getReduction());
    if (!kind)
      return op->emitOpError("unsupported reduction ")
             << shard::stringifyReductionKind(reduce.getReduction());
    int64_t axisMask = 0;
    for (int16_t a : reduce.getGridAxes()) {
      if (a < 0 || a >= 63)
        return op->emitOpError("grid axis ") << a << " is out of range";
      axisMask |= int64_t(1) << a;
    }

    FailureOr<Value> buffer =
        getBuffer(rewriter, reduce.getInput(), options, state);
    if (failed(buffer))
      return failure();
    Location loc = op->getLoc();
    // The runtime reduces a contiguous block: a strided view is copied.
    Value buf = contiguous(rewriter, loc, *buffer);
    auto memrefType = cast<MemRefType>(buf.getType());

    Type i64 = rewriter.getI64Type();
    auto cst = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(rewriter, loc, i64, v);
    };
    Value base =
        memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buf);
    Value count = cst(1);
    for (int64_t d = 0; d < memrefType.getRank(); ++d) {
      Value extent = memrefType.isDynamicDim(d)
                         ? arith::IndexCastOp::create(
                               rewriter, loc, i64,
                               memref::DimOp::create(rewriter, loc, buf, d))
                               .getResult()
                         : cst(memrefType.getDimSize(d));
      count = arith::MulIOp::create(rewriter, loc, count, extent);
    }
    auto module = op->getParentOfType<ModuleOp>();
    func::FuncOp start = declareRuntimeFunction(
        module, loc, dist::runtime_abi::kMeshAllReduceStart, 5, true);
    func::FuncOp wait = declareRuntimeFunction(
        module, loc, dist::runtime_abi::kMeshAllReduceWait, 1, false);
    Value handle =
        func::CallOp::create(
            rewriter, loc, start,
            ValueRange{arith::IndexCastOp::create(rewriter, loc, i64, base),
                       count, cst(dtype), cst(*kind), cst(axisMask)})
            .getResult(0);

    // Wait before the first reader of the result in this block.
    Operation *firstUser = nullptr;
    for (Operation *user : reduce.getResult().getUsers()) {
      Operation *inBlock = op->getBlock()->findAncestorOpInBlock(*user);
      if (inBlock && (!firstUser || inBlock->isBeforeInBlock(firstUser)))
        firstUser = inBlock;
    }
    {
      OpBuilder::InsertionGuard guard(rewriter);
      if (firstUser)
        rewriter.setInsertionPoint(firstUser);
      func::CallOp::create(rewriter, loc, wait, ValueRange{handle});
    }
    replaceOpWithBufferizedValues(rewriter, op, buf);
    return success();
  }
};

/// The extents of `buf` from dimension 1 on that its type leaves dynamic
/// (a batch of any size): the gathered or sliced dimension 0 is static.
SmallVector<Value> trailingDynamicSizes(RewriterBase &rewriter, Location loc,
                                        Value buf) {
  auto type = cast<MemRefType>(buf.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 1; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(memref::DimOp::create(rewriter, loc, buf, d));
  return sizes;
}

/// Whether a gather or slice along axis 0 of `in` into `out` can be
/// generated: dimension 0 static on both sides, the others equal.
bool leadingAxisCollective(RankedTensorType in, RankedTensorType out) {
  if (!in || !out || in.getRank() != out.getRank() || in.getRank() == 0 ||
      in.isDynamicDim(0) || out.isDynamicDim(0))
    return false;
  for (int64_t d = 1; d < in.getRank(); ++d)
    if (in.getDimSize(d) != out.getDimSize(d))
      return false;
  return true;
}

/// The single grid axis of a collective as a runtime axis mask.
FailureOr<int64_t> singleAxisMask(Operation *op, ArrayRef<int16_t> axes) {
  if (axes.size() != 1 || axes[0] < 0 || axes[0] >= 63)
    return op->emitOpError("codegen supports this collective over one grid "
                           "axis only");
  return int64_t(1) << axes[0];
}

/// Shared by all_gather, all_slice and dist.send: read the operand, write
/// nothing in place (a new buffer, or none), alias nothing.
template <typename Concrete, typename OpT>
struct OutOfPlaceCollective
    : public BufferizableOpInterface::ExternalModel<Concrete, OpT> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
};

/// Gathers along axis 0 (dist-partition gathers through a leading unit
/// axis): the runtime concatenates the ranks' contiguous buffers.
struct AllGatherBufferization
    : public OutOfPlaceCollective<AllGatherBufferization, shard::AllGatherOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto gather = cast<shard::AllGatherOp>(op);
    auto in = dyn_cast<RankedTensorType>(gather.getInput().getType());
    auto out = dyn_cast<RankedTensorType>(gather.getResult().getType());
    if (!leadingAxisCollective(in, out) || gather.getGatherAxis() != 0)
      return op->emitOpError("codegen supports all_gather along axis 0 "
                             "only, of a static extent there");
    Type elem = in.getElementType();
    if (!elem.isF32() && !elem.isF64())
      return op->emitOpError("codegen supports all_gather of f32 and f64");
    FailureOr<int64_t> mask = singleAxisMask(op, gather.getGridAxes());
    if (failed(mask))
      return failure();
    FailureOr<Value> buffer =
        getBuffer(rewriter, gather.getInput(), options, state);
    if (failed(buffer))
      return failure();
    Location loc = op->getLoc();
    Value src = contiguous(rewriter, loc, *buffer);
    SmallVector<Value> dynSizes = trailingDynamicSizes(rewriter, loc, src);
    Value dst = memref::AllocOp::create(
        rewriter, loc, MemRefType::get(out.getShape(), elem), dynSizes);
    Type i64 = rewriter.getI64Type();
    auto cst = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(rewriter, loc, i64, v);
    };
    // Elements per rank: the static extents times the dynamic ones.
    int64_t fixed = 1;
    for (int64_t d = 0; d < in.getRank(); ++d)
      if (!in.isDynamicDim(d))
        fixed *= in.getDimSize(d);
    Value count = cst(fixed);
    for (Value size : dynSizes)
      count = arith::MulIOp::create(
          rewriter, loc, count,
          arith::IndexCastOp::create(rewriter, loc, i64, size));
    auto ptr = [&](Value m) -> Value {
      return arith::IndexCastOp::create(
          rewriter, loc, i64,
          memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, m));
    };
    func::FuncOp fn =
        declareRuntimeFunction(op->getParentOfType<ModuleOp>(), loc,
                               dist::runtime_abi::kMeshAllGather, 5, false);
    func::CallOp::create(
        rewriter, loc, fn,
        ValueRange{ptr(src), ptr(dst), count,
                   cst(elem.isF32() ? dist::runtime_abi::kDTypeFloat
                                    : dist::runtime_abi::kDTypeDouble),
                   cst(*mask)});
    replaceOpWithBufferizedValues(rewriter, op, dst);
    return success();
  }
};

/// Takes this rank's part along axis 0: a copy, no communication.
struct AllSliceBufferization
    : public OutOfPlaceCollective<AllSliceBufferization, shard::AllSliceOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto slice = cast<shard::AllSliceOp>(op);
    auto in = dyn_cast<RankedTensorType>(slice.getInput().getType());
    auto out = dyn_cast<RankedTensorType>(slice.getResult().getType());
    if (!leadingAxisCollective(in, out) || slice.getSliceAxis() != 0)
      return op->emitOpError("codegen supports all_slice along axis 0 "
                             "only, of a static extent there");
    ArrayRef<int16_t> axes = slice.getGridAxes();
    if (axes.size() != 1 || axes[0] < 0)
      return op->emitOpError("codegen supports all_slice over one grid axis "
                             "only");
    FailureOr<Value> buffer =
        getBuffer(rewriter, slice.getInput(), options, state);
    if (failed(buffer))
      return failure();
    Location loc = op->getLoc();
    Type i64 = rewriter.getI64Type();
    func::FuncOp fn =
        declareRuntimeFunction(op->getParentOfType<ModuleOp>(), loc,
                               dist::runtime_abi::kMeshCoord, 1, true);
    Value coord = func::CallOp::create(rewriter, loc, fn,
                                       ValueRange{arith::ConstantIntOp::create(
                                           rewriter, loc, i64, axes[0])})
                      .getResult(0);
    Value offset = arith::MulIOp::create(
        rewriter, loc,
        arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                   coord),
        arith::ConstantIndexOp::create(rewriter, loc, out.getDimSize(0)));
    int64_t rank = out.getRank();
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
    offsets[0] = offset;
    SmallVector<OpFoldResult> sizes, strides(rank, rewriter.getIndexAttr(1));
    SmallVector<Value> dynSizes =
        trailingDynamicSizes(rewriter, loc, *buffer);
    for (int64_t d = 0, k = 0; d < rank; ++d)
      sizes.push_back(out.isDynamicDim(d) ? OpFoldResult(dynSizes[k++])
                                          : rewriter.getIndexAttr(
                                                out.getDimSize(d)));
    Value view = memref::SubViewOp::create(rewriter, loc, *buffer, offsets,
                                           sizes, strides);
    Value dst = memref::AllocOp::create(
        rewriter, loc, MemRefType::get(out.getShape(), out.getElementType()),
        dynSizes);
    memref::CopyOp::create(rewriter, loc, view, dst);
    replaceOpWithBufferizedValues(rewriter, op, dst);
    return success();
  }
};

/// Calls the pipeline transfer `fnName` (dist_rt_pp_send or _recv) on the
/// contiguous static buffer `buf` (i1 elements take a byte each).
LogicalResult callTransfer(RewriterBase &rewriter, Operation *op,
                           StringRef fnName, Value buf, uint64_t peer,
                           uint64_t tag) {
  auto type = cast<MemRefType>(buf.getType());
  unsigned bits = type.getElementTypeBitWidth();
  if (bits != 1 && bits % 8 != 0)
    return op->emitOpError("codegen moves whole bytes between stages, not ")
           << type.getElementType();
  Location loc = op->getLoc();
  Type i64 = rewriter.getI64Type();
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(rewriter, loc, i64, v);
  };
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buf);
  func::FuncOp fn = declareRuntimeFunction(op->getParentOfType<ModuleOp>(), loc,
                                           fnName, 4, false);
  func::CallOp::create(
      rewriter, loc, fn,
      ValueRange{arith::IndexCastOp::create(rewriter, loc, i64, base),
                 cst(type.getNumElements() * std::max<int64_t>(1, bits / 8)),
                 cst(static_cast<int64_t>(peer)),
                 cst(static_cast<int64_t>(tag))});
  return success();
}

/// dist.send: a call that hands the operand's bytes (a contiguous copy of
/// a strided view) to the runtime, which copies them before it returns.
struct SendBufferization
    : public OutOfPlaceCollective<SendBufferization, dist::SendOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto send = cast<dist::SendOp>(op);
    FailureOr<Value> buffer =
        getBuffer(rewriter, send.getValue(), options, state);
    if (failed(buffer))
      return failure();
    Value buf = contiguous(rewriter, op->getLoc(), *buffer);
    if (failed(callTransfer(rewriter, op, dist::runtime_abi::kPipelineSend, buf,
                            send.getPeer(), send.getTag())))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
};

/// dist.recv: a fresh buffer the runtime fills.
struct RecvBufferization
    : public BufferizableOpInterface::ExternalModel<RecvBufferization,
                                                    dist::RecvOp> {
  bool bufferizesToAllocation(Operation *, Value) const { return true; }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &,
                          BufferizationState &) const {
    auto recv = cast<dist::RecvOp>(op);
    auto tensorType = cast<RankedTensorType>(recv.getType());
    Value buf = memref::AllocOp::create(
        rewriter, op->getLoc(),
        MemRefType::get(tensorType.getShape(), tensorType.getElementType()));
    if (failed(callTransfer(rewriter, op, dist::runtime_abi::kPipelineRecv, buf,
                            recv.getPeer(), recv.getTag())))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, buf);
    return success();
  }
};

} // namespace

void dist::registerCollectiveBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, dist::DistDialect *) {
    dist::SendOp::attachInterface<SendBufferization>(*ctx);
    dist::RecvOp::attachInterface<RecvBufferization>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, shard::ShardDialect *) {
    shard::AllReduceOp::attachInterface<AllReduceBufferization>(*ctx);
    shard::AllGatherOp::attachInterface<AllGatherBufferization>(*ctx);
    shard::AllSliceOp::attachInterface<AllSliceBufferization>(*ctx);
  });
}
