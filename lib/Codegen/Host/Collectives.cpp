//===- Collectives.cpp - mesh collectives as runtime calls ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Bufferization of `shard.all_reduce` on tensors into a start/wait pair of
// runtime calls (dist_rt/kernels.h), and the pass that drops the mesh
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

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace mlir::dist {
#define GEN_PASS_DEF_STRIPMESHPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

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
    Value buf = *buffer;
    auto memrefType = cast<MemRefType>(buf.getType());
    if (!memrefType.getLayout().isIdentity()) {
      // The runtime reduces a contiguous block: copy a strided view first.
      auto contiguous = MemRefType::get(memrefType.getShape(), elem);
      SmallVector<Value> dynSizes;
      for (int64_t d = 0; d < memrefType.getRank(); ++d)
        if (memrefType.isDynamicDim(d))
          dynSizes.push_back(memref::DimOp::create(rewriter, loc, buf, d));
      Value copy = memref::AllocOp::create(rewriter, loc, contiguous, dynSizes);
      memref::CopyOp::create(rewriter, loc, buf, copy);
      buf = copy;
    }

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

struct StripMeshPass : public dist::impl::StripMeshPassBase<StripMeshPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    WalkResult r = module.walk([&](Operation *op) {
      if (isa<shard::ShardDialect>(op->getDialect()) &&
          !isa<shard::GridOp>(op)) {
        op->emitOpError("is not supported by host codegen");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    for (auto grid : llvm::make_early_inc_range(module.getOps<shard::GridOp>()))
      grid.erase();
  }
};

} // namespace

void dist::registerCollectiveBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, shard::ShardDialect *) {
    shard::AllReduceOp::attachInterface<AllReduceBufferization>(*ctx);
  });
}
