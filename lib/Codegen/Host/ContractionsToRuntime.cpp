//===- ContractionsToRuntime.cpp - BLAS calls for f32/f64 contractions ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Rewrites bufferized contraction generics (out += lhs * rhs with at most
// one batch dimension) into calls of the runtime's dist_rt_gemm_f32/f64,
// which take base pointers and element strides and call OpenBLAS. Why a
// library call and not a generated kernel: see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"
#include "dist/Codegen/RuntimeABI.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::dist {
#define GEN_PASS_DEF_CONTRACTIONSTORUNTIMEPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// Whether the body is `yield out + a * b` (in either operand order).
bool isMulAddBody(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getOperations().size() != 3)
    return false;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value acc = body.getArgument(2);
  Value other;
  if (add.getLhs() == acc)
    other = add.getRhs();
  else if (add.getRhs() == acc)
    other = add.getLhs();
  else
    return false;
  auto mul = other.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == b) ||
         (mul.getLhs() == b && mul.getRhs() == a);
}

/// Loop dim -> operand dim for the operand with `map` (-1 when absent).
/// Fails on a dim used twice or a non-dim, non-zero expression.
std::optional<SmallVector<int64_t>> loopToOperandDims(AffineMap map,
                                                      unsigned numLoops) {
  SmallVector<int64_t> where(numLoops, -1);
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      if (where[d.getPosition()] != -1)
        return std::nullopt;
      where[d.getPosition()] = i;
      continue;
    }
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0)
      return std::nullopt;
  }
  return where;
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
        op.getNumDpsInits() != 1 || !isMulAddBody(op))
      return failure();
    auto outType = cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
    Type elem = outType.getElementType();
    if (!elem.isF32() && !elem.isF64())
      return failure();
    for (OpOperand *in : op.getDpsInputOperands())
      if (cast<MemRefType>(in->get().getType()).getElementType() != elem)
        return failure();
    unsigned numLoops = op.getNumLoops();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    auto lw = loopToOperandDims(maps[0], numLoops);
    auto rw = loopToOperandDims(maps[1], numLoops);
    auto ow = loopToOperandDims(maps[2], numLoops);
    if (!lw || !rw || !ow)
      return failure();
    // Exactly one reduction loop (k); output dims are pure loop dims.
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    int64_t k = -1;
    for (unsigned i = 0; i < numLoops; ++i) {
      if (iters[i] == utils::IteratorType::reduction) {
        if (k != -1)
          return failure();
        k = i;
      }
    }
    if (k == -1 || (*ow)[k] != -1 || (*lw)[k] == -1 || (*rw)[k] == -1)
      return failure();
    SmallVector<int64_t> outLoops;
    for (AffineExpr e : maps[2].getResults()) {
      auto d = dyn_cast<AffineDimExpr>(e);
      if (!d)
        return failure();
      outLoops.push_back(d.getPosition());
    }
    if (outLoops.size() + 1 != numLoops)
      return failure();
    int64_t m = -1, n = -1, batch = -1;
    size_t r = outLoops.size();
    if (r >= 2) {
      m = outLoops[r - 2];
      n = outLoops[r - 1];
      if (r == 3)
        batch = outLoops[0];
      else if (r > 3)
        return failure();
    } else if (r == 1) {
      ((*lw)[outLoops[0]] != -1 ? m : n) = outLoops[0];
    }
    // lhs may only use batch, m, k; rhs only batch, k, n.
    for (unsigned i = 0; i < numLoops; ++i) {
      if ((*lw)[i] != -1 && (int64_t)i != batch && (int64_t)i != m &&
          (int64_t)i != k)
        return failure();
      if ((*rw)[i] != -1 && (int64_t)i != batch && (int64_t)i != n &&
          (int64_t)i != k)
        return failure();
    }
    if ((m != -1 && (*rw)[m] != -1) || (n != -1 && (*lw)[n] != -1))
      return failure();

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
    Value lhs = op.getDpsInputOperand(0)->get();
    Value rhs = op.getDpsInputOperand(1)->get();
    Value out = op.getDpsInitOperand(0)->get();
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
           {std::pair{out, *ow}, std::pair{lhs, *lw}, std::pair{rhs, *rw}})
        if (where[loop] != -1)
          return toI64(memref::DimOp::create(b, loc, val, where[loop]));
      return one;
    };
    SmallVector<Value> args{sizeOf(batch),
                            sizeOf(m),
                            sizeOf(n),
                            sizeOf(k),
                            L.ptr,
                            strideOf(L, *lw, batch),
                            strideOf(L, *lw, m),
                            strideOf(L, *lw, k),
                            R.ptr,
                            strideOf(R, *rw, k),
                            strideOf(R, *rw, n),
                            O.ptr,
                            strideOf(O, *ow, batch),
                            strideOf(O, *ow, m),
                            strideOf(O, *ow, n),
                            strideOf(R, *rw, batch)};
    StringRef name = elem.isF32() ? dist::runtime_abi::kGemmF32
                                  : dist::runtime_abi::kGemmF64;
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
    func::CallOp::create(b, loc, callee, args);
    op.erase();
    return success();
  }
};
} // namespace
