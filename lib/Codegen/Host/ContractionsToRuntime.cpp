//===- ContractionsToRuntime.cpp - BLAS calls for f32/f64 contractions ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Rewrites bufferized contraction generics (out += lhs * rhs with at most
// one batch dimension) into calls of the runtime's dist_rt_gemm_f32/f64,
// which take base pointers and element strides and call OpenBLAS. Why a
// library call and not a generated kernel: see Passes.td.
//
// A contraction whose output buffer was filled with +0.0 and not touched
// since calls dist_rt_gemm_set_f32/f64 (out = lhs * rhs, BLAS's beta = 0)
// and the fill goes: the product writes every element of its output, so
// the fill only cost a pass over the buffer and the GEMM a read of it
// (measured: memset was 2% of the GPT-style LM's training step, most of it
// these fills).
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"
#include "dist/Codegen/RuntimeABI.h"

#include "Lowering.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::dist {
#define GEN_PASS_DEF_CONTRACTIONSTORUNTIMEPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// The linalg.fill of +0.0 into `out` that only `op` observes: the last
/// use of `out` before op (in op's block, nested uses counted at their
/// ancestor there), with no view of `out` made before op (a view could be
/// read in between). `out` must be a fresh allocation, so that nothing else
/// aliases it. Null otherwise.
linalg::FillOp zeroFillConsumedBy(linalg::GenericOp op, Value out) {
  if (!out.getDefiningOp<memref::AllocOp>())
    return {};
  Block *block = op->getBlock();
  Operation *last = nullptr;
  for (Operation *user : out.getUsers()) {
    Operation *at = block->findAncestorOpInBlock(*user);
    if (!at)
      return {};
    if (at == op || !at->isBeforeInBlock(op))
      continue;
    if (isa<ViewLikeOpInterface>(user))
      return {};
    if (!last || last->isBeforeInBlock(at))
      last = at;
  }
  auto fill = dyn_cast_or_null<linalg::FillOp>(last);
  if (!fill || fill.getOutputs().front() != out)
    return {};
  auto cst = fill.getInputs().front().getDefiningOp<arith::ConstantOp>();
  auto value = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
  if (!value || !value.getValue().isPosZero())
    return {};
  return fill;
}

struct ContractionsToRuntimePass
    : public dist::impl::ContractionsToRuntimePassBase<
          ContractionsToRuntimePass> {
  // A module pass: the rewrite declares the runtime functions at module
  // level, which a function pass running in parallel must not do.
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk(
        [&](linalg::GenericOp op) { candidates.push_back(op); });
    for (linalg::GenericOp op : candidates)
      if (succeeded(rewrite(op)))
        ++numCalls;
  }

  LogicalResult rewrite(linalg::GenericOp op) {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1 || !dist::codegen::isMulAddBody(op))
      return failure();
    auto outType = cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
    Type elem = outType.getElementType();
    if (!elem.isF32() && !elem.isF64())
      return failure();
    for (OpOperand *in : op.getDpsInputOperands())
      if (cast<MemRefType>(in->get().getType()).getElementType() != elem)
        return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    std::optional<dist::codegen::GemmLoops> loops =
        dist::codegen::classifyGemmLoops(maps, op.getIteratorTypesArray());
    if (!loops)
      return failure();
    int64_t batch = loops->batch, m = loops->m, n = loops->n, k = loops->k;
    const SmallVector<int64_t> &lw = loops->lhsDims, &rw = loops->rhsDims,
                               &ow = loops->outDims;

    // Before any op below adds uses of the output.
    Value lhs = op.getDpsInputOperand(0)->get();
    Value rhs = op.getDpsInputOperand(1)->get();
    Value out = op.getDpsInitOperand(0)->get();
    linalg::FillOp fill = out != lhs && out != rhs ? zeroFillConsumedBy(op, out)
                                                   : linalg::FillOp();

    OpBuilder b(op);
    Location loc = op.getLoc();
    Type i64 = b.getI64Type();
    int64_t elemBytes = elem.getIntOrFloatBitWidth() / 8;
    Value zero = arith::ConstantIntOp::create(b, loc, i64, 0);
    Value one = arith::ConstantIntOp::create(b, loc, i64, 1);
    auto toI64 = [&](Value v) -> Value {
      return arith::IndexCastOp::create(b, loc, i64, v);
    };
    struct Desc {
      Value ptr;
      SmallVector<Value> strides;
      Value buf;
    };
    auto describe = [&](Value memref) {
      Desc d;
      auto md = memref::ExtractStridedMetadataOp::create(b, loc, memref);
      Value base =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
      Value off = arith::MulIOp::create(
          b, loc, md.getOffset(),
          arith::ConstantIndexOp::create(b, loc, elemBytes));
      d.ptr = toI64(arith::AddIOp::create(b, loc, base, off));
      for (Value s : md.getStrides())
        d.strides.push_back(toI64(s));
      d.buf = memref;
      return d;
    };
    Desc L = describe(lhs), R = describe(rhs), O = describe(out);
    auto strideOf = [&](const Desc &d, ArrayRef<int64_t> where,
                        int64_t loop) -> Value {
      if (loop == -1 || where[loop] == -1)
        return zero;
      return d.strides[where[loop]];
    };
    auto sizeOf = [&](int64_t loop) -> Value {
      if (loop == -1)
        return one;
      for (auto [val, where] :
           {std::pair{out, ow}, std::pair{lhs, lw}, std::pair{rhs, rw}})
        if (where[loop] != -1)
          return toI64(memref::DimOp::create(b, loc, val, where[loop]));
      return one;
    };
    SmallVector<Value> args{sizeOf(batch),
                            sizeOf(m),
                            sizeOf(n),
                            sizeOf(k),
                            L.ptr,
                            strideOf(L, lw, batch),
                            strideOf(L, lw, m),
                            strideOf(L, lw, k),
                            R.ptr,
                            strideOf(R, rw, k),
                            strideOf(R, rw, n),
                            O.ptr,
                            strideOf(O, ow, batch),
                            strideOf(O, ow, m),
                            strideOf(O, ow, n),
                            strideOf(R, rw, batch)};
    StringRef name = fill ? (elem.isF32() ? dist::runtime_abi::kGemmSetF32
                                          : dist::runtime_abi::kGemmSetF64)
                          : (elem.isF32() ? dist::runtime_abi::kGemmF32
                                          : dist::runtime_abi::kGemmF64);
    auto module = op->getParentOfType<ModuleOp>();
    auto callee = module.lookupSymbol<func::FuncOp>(name);
    if (!callee) {
      OpBuilder mb(module.getBodyRegion());
      mb.setInsertionPointToStart(module.getBody());
      SmallVector<Type> types(args.size(), i64);
      callee =
          func::FuncOp::create(mb, loc, name, mb.getFunctionType(types, {}));
      callee.setPrivate();
    }
    if (loops->outerBatch == -1) {
      func::CallOp::create(b, loc, callee, args);
    } else {
      // One call per index of the outer batch, each operand's pointer
      // advanced by its stride along it (0 when it does not use it).
      int64_t outer = loops->outerBatch;
      Value trips =
          arith::IndexCastOp::create(b, loc, b.getIndexType(), sizeOf(outer));
      Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
      Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
      Value bytes = arith::ConstantIntOp::create(b, loc, i64, elemBytes);
      auto loop = scf::ForOp::create(b, loc, c0, trips, c1);
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      Value iv =
          arith::IndexCastOp::create(lb, loc, i64, loop.getInductionVar());
      auto advance = [&](Value ptr, const Desc &d, ArrayRef<int64_t> where) {
        Value step =
            arith::MulIOp::create(lb, loc, strideOf(d, where, outer), bytes);
        return arith::AddIOp::create(lb, loc, ptr,
                                     arith::MulIOp::create(lb, loc, iv, step));
      };
      SmallVector<Value> inner = args;
      inner[4] = advance(L.ptr, L, lw);
      inner[8] = advance(R.ptr, R, rw);
      inner[11] = advance(O.ptr, O, ow);
      func::CallOp::create(lb, loc, callee, inner);
    }
    op.erase();
    if (fill)
      fill.erase();
    return success();
  }
};
} // namespace
