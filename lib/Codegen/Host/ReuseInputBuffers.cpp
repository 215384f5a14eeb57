//===- ReuseInputBuffers.cpp - Elementwise results over their inputs -----===//
// SPDX-License-Identifier: Apache-2.0
//
// An elementwise generic of two or more inputs (a residual connection's
// Add) gets, in place of its fresh init, its earliest-made input of the
// result's type, so that one-shot bufferization writes the result over
// that input's buffer when nothing reads the input afterwards, and into a
// fresh buffer otherwise (the body does not read the init, so there is
// nothing to copy either way). A fresh init is one tensor.empty that CSE
// shares among every op of its shape, which bufferization places in
// place or not by the order of those ops: on MobileNetV2 with
// --conv=nhwc half of the residual Adds went to a third buffer, where the
// channels-last call that makes the other operand cannot accumulate onto
// the residual (dist-contractions-to-runtime). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "Lowering.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#define DEBUG_TYPE "dist-reuse-input-buffers"

namespace mlir::dist {
#define GEN_PASS_DEF_REUSEINPUTBUFFERSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// The input of the elementwise generic `g` whose buffer its result can
/// take (see the file comment), or null: `g` all parallel on tensors with
/// one init, a tensor.empty its body does not read, through an identity
/// map; the result not inserted into a larger tensor (empty-tensor
/// elimination writes it there directly); the input of the result's type
/// through an identity map, made by an op of `g`'s block that is not a
/// constant, the earliest of at least two such tensor inputs.
Value reusableInput(linalg::GenericOp g) {
  if (!g.hasPureTensorSemantics() || g.getNumDpsInits() != 1 ||
      g.getNumReductionLoops() != 0 || g.getNumDpsInputs() < 2)
    return {};
  OpOperand *init = g.getDpsInitOperand(0);
  if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
      g.payloadUsesValueFromOperand(init) ||
      !g.getMatchingIndexingMap(init).isIdentity())
    return {};
  for (Operation *user : g->getResult(0).getUsers())
    if (isa<tensor::InsertSliceOp, tensor::PadOp>(user))
      return {};
  Type type = init->get().getType();
  Value chosen;
  Operation *earliest = nullptr;
  int candidates = 0;
  for (OpOperand *in : g.getDpsInputOperands()) {
    Value v = in->get();
    if (v.getType() != type || !g.getMatchingIndexingMap(in).isIdentity())
      continue;
    ++candidates;
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != g->getBlock() ||
        def->hasTrait<OpTrait::ConstantLike>() || isa<tensor::EmptyOp>(def))
      continue;
    if (!earliest || def->isBeforeInBlock(earliest)) {
      earliest = def;
      chosen = v;
    }
  }
  return candidates >= 2 ? chosen : Value();
}

struct ReuseInputBuffersPass
    : public dist::impl::ReuseInputBuffersPassBase<ReuseInputBuffersPass> {
  using Base::Base;
  void runOnOperation() override {
    if (convsOnly && !dist::codegen::hasChannelsLastConv(getOperation()))
      return;
    getOperation().walk([](linalg::GenericOp g) {
      if (Value input = reusableInput(g))
        g.getDpsInitOperand(0)->set(input);
    });
  }
};
} // namespace
