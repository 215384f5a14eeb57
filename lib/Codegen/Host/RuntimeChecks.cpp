//===- RuntimeChecks.cpp - run-time checks of shape-defining inputs -------===//
// SPDX-License-Identifier: Apache-2.0
//
// ONNX runners feed every input at run time, also those whose values fix an
// output's shape (Split's sizes, OneHot's depth, the axes of a reduction,
// Squeeze, Unsqueeze or CumSum, Pad's pads, Slice's axes and steps). Where
// the model declares that output's shape, the op takes it (the importer
// refines the result type) and the generated code checks the values
// against it with these helpers, so that a disagreeing input fails the run
// with a message naming the node and the input instead of reading or
// writing outside a tensor. The runtime functions they call are in
// runtime/lib/threads.cpp (dist_rt_value_error and its siblings).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "dist/Codegen/RuntimeABI.h"

#include "llvm/ADT/bit.h"

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::codegen;

std::string codegen::operandName(Operation *op, unsigned i) {
  Value v = op->getOperand(i);
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      if (auto name = func.getArgAttrOfType<StringAttr>(
              arg.getArgNumber(), DistDialect::getValueNameAttrName()))
        return name.str();
    return "?";
  }
  StringRef node = DistDialect::getNodeName(v.getDefiningOp()->getLoc());
  return node.empty() ? "?" : ("output of node '" + node + "'").str();
}

/// Element `k` of the rank-0 or rank-1 tensor `value` as an i64.
static Value elementAsI64(OpBuilder &b, Location loc, Operation *op,
                          unsigned i, Value value, int64_t k) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<Value> index;
  if (type.getRank() == 1)
    index.push_back(arith::ConstantIndexOp::create(b, loc, k));
  Value x = tensor::ExtractOp::create(b, loc, value, index);
  return convertScalar(b, loc, x, elemTypeOf(op->getOperand(i)),
                       b.getI64Type());
}

void codegen::checkOperandValues(OpBuilder &b, Location loc, Operation *op,
                                 unsigned i, Value value,
                                 ArrayRef<int64_t> expected) {
  ModuleOp module = op->getParentOfType<ModuleOp>();
  Type i64 = b.getI64Type();
  std::string input = operandName(op, i);
  for (auto [k, want] : llvm::enumerate(expected)) {
    Value got = elementAsI64(b, loc, op, i, value, static_cast<int64_t>(k));
    Value wantV = arith::ConstantIntOp::create(b, loc, i64, want);
    Value differ =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, got, wantV);
    scf::IfOp::create(b, loc, differ, [&](OpBuilder &tb, Location tl) {
      func::FuncOp callee = runtimeCallee(
          module, runtime_abi::kValueError,
          tb.getFunctionType({i64, i64, i64, i64, i64}, {}));
      func::CallOp::create(
          tb, tl, callee,
          ValueRange{got, wantV,
                     arith::ConstantIntOp::create(tb, tl, i64,
                                                  static_cast<int64_t>(k)),
                     stringAddress(tb, tl, module, input),
                     nodeNameAddress(tb, tl, module)});
      scf::YieldOp::create(tb, tl);
    });
  }
}

Value codegen::checkAxesOperand(OpBuilder &b, Location loc, Operation *op,
                                unsigned i, Value axes, int64_t rank,
                                ArrayRef<uint64_t> valid) {
  ModuleOp module = op->getParentOfType<ModuleOp>();
  Type i64 = b.getI64Type();
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, v);
  };
  auto type = cast<RankedTensorType>(axes.getType());
  int64_t count = type.getRank() == 0 ? 1 : type.getDimSize(0);
  Value mask = cst(0);
  Value bad = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  Value zero = cst(0), r = cst(rank), one = cst(1);
  for (int64_t k = 0; k < count; ++k) {
    Value a = elementAsI64(b, loc, op, i, axes, k);
    Value negative =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a, zero);
    a = arith::SelectOp::create(b, loc, negative,
                                arith::AddIOp::create(b, loc, a, r), a);
    Value inRange = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, a, zero),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a, r));
    Value safe = arith::SelectOp::create(b, loc, inRange, a, zero);
    Value bit = arith::SelectOp::create(
        b, loc, inRange, arith::ShLIOp::create(b, loc, one, safe), zero);
    Value repeated = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, loc, mask, bit), zero);
    Value outside = arith::XOrIOp::create(
        b, loc, inRange,
        arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
    bad = arith::OrIOp::create(
        b, loc, bad, arith::OrIOp::create(b, loc, outside, repeated));
    mask = arith::OrIOp::create(b, loc, mask, bit);
  }
  Value known = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  for (uint64_t m : valid)
    known = arith::OrIOp::create(
        b, loc, known,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, mask,
                              cst(static_cast<int64_t>(m))));
  bad = arith::OrIOp::create(
      b, loc, bad,
      arith::XOrIOp::create(
          b, loc, known,
          arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
  std::string input = operandName(op, i);
  scf::IfOp::create(b, loc, bad, [&](OpBuilder &tb, Location tl) {
    func::FuncOp callee =
        runtimeCallee(module, runtime_abi::kAxesError,
                      tb.getFunctionType({i64, i64}, {}));
    func::CallOp::create(tb, tl, callee,
                         ValueRange{stringAddress(tb, tl, module, input),
                                    nodeNameAddress(tb, tl, module)});
    scf::YieldOp::create(tb, tl);
  });
  return mask;
}

void codegen::checkExtent(OpBuilder &b, Location loc, Operation *op,
                          unsigned i, int64_t axis, Value got,
                          int64_t expected) {
  ModuleOp module = op->getParentOfType<ModuleOp>();
  Type i64 = b.getI64Type();
  Value got64 = arith::IndexCastOp::create(b, loc, i64, got);
  Value want = arith::ConstantIntOp::create(b, loc, i64, expected);
  Value differ =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, got64, want);
  std::string input = operandName(op, i);
  scf::IfOp::create(b, loc, differ, [&](OpBuilder &tb, Location tl) {
    func::FuncOp callee =
        runtimeCallee(module, runtime_abi::kExtentError,
                      tb.getFunctionType({i64, i64, i64, i64, i64}, {}));
    func::CallOp::create(
        tb, tl, callee,
        ValueRange{arith::ConstantIntOp::create(tb, tl, i64, axis), got64,
                   want, stringAddress(tb, tl, module, input),
                   nodeNameAddress(tb, tl, module)});
    scf::YieldOp::create(tb, tl);
  });
}

void codegen::reportUnsupportedIf(OpBuilder &b, Location loc, Operation *op,
                                  Value bad, StringRef what) {
  ModuleOp module = op->getParentOfType<ModuleOp>();
  Type i64 = b.getI64Type();
  scf::IfOp::create(b, loc, bad, [&](OpBuilder &tb, Location tl) {
    func::FuncOp callee = runtimeCallee(module, runtime_abi::kUnsupportedError,
                                        tb.getFunctionType({i64, i64}, {}));
    func::CallOp::create(tb, tl, callee,
                         ValueRange{stringAddress(tb, tl, module, what),
                                    nodeNameAddress(tb, tl, module)});
    scf::YieldOp::create(tb, tl);
  });
}

void codegen::reportInputErrorIf(OpBuilder &b, Location loc, Operation *op,
                                 unsigned i, Value bad, StringRef what) {
  ModuleOp module = op->getParentOfType<ModuleOp>();
  Type i64 = b.getI64Type();
  std::string input = operandName(op, i);
  scf::IfOp::create(b, loc, bad, [&](OpBuilder &tb, Location tl) {
    func::FuncOp callee = runtimeCallee(module, runtime_abi::kInputError,
                                        tb.getFunctionType({i64, i64, i64}, {}));
    func::CallOp::create(tb, tl, callee,
                         ValueRange{stringAddress(tb, tl, module, what),
                                    stringAddress(tb, tl, module, input),
                                    nodeNameAddress(tb, tl, module)});
    scf::YieldOp::create(tb, tl);
  });
}

SmallVector<uint64_t> codegen::axisSubsets(int64_t rank, int64_t count,
                                           function_ref<bool(uint64_t)> gives) {
  SmallVector<uint64_t> out;
  if (rank > 16 || count < 0 || count > rank)
    return out;
  for (uint64_t m = 0; m < (uint64_t(1) << rank); ++m)
    if (llvm::popcount(m) == count && gives(m))
      out.push_back(m);
  return out;
}
