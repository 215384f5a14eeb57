//===- LoopHints.h - LLVM loop hints on scf.for loops ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The vectorisation hint that dist-parallelize-loops puts on the innermost
// loop of an outlined nest and dist-register-accumulators on a reduction
// loop, and the names of outlined loop nests.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_LIB_CODEGEN_HOST_LOOPHINTS_H
#define DIST_LIB_CODEGEN_HOST_LOOPHINTS_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::dist::codegen {

/// Loops with fewer static trips are left to LLVM's unroller.
constexpr int64_t kMinVectorTrips = 4;

/// Asks LLVM to vectorise `loop` (it skips loops under 16 trips otherwise)
/// and not to unroll it first: left alone, LLVM fully unrolls a short loop
/// and vectorises the loop around it with gathers and scatters.
/// "loop_annotation" becomes the llvm.br's property of that name
/// (scf-to-cf copies LLVM-dialect attributes to the loop's back edge).
/// A non-zero `interleave` asks for that many vectors per trip (a
/// reduction's accumulators then form as many independent chains).
inline void requestVectorization(scf::ForOp loop, unsigned interleave = 0) {
  MLIRContext *ctx = loop.getContext();
  auto vectorize = LLVM::LoopVectorizeAttr::get(
      ctx, /*disable=*/BoolAttr::get(ctx, false), {}, {}, {}, {}, {}, {});
  auto unroll = LLVM::LoopUnrollAttr::get(
      ctx, /*disable=*/BoolAttr::get(ctx, true), {}, {}, {}, {}, {}, {});
  LLVM::LoopInterleaveAttr interleaveAttr;
  if (interleave)
    interleaveAttr = LLVM::LoopInterleaveAttr::get(
        ctx, IntegerAttr::get(IntegerType::get(ctx, 32), interleave));
  loop->setAttr("loop_annotation",
                LLVM::LoopAnnotationAttr::get(
                    ctx, {}, vectorize, interleaveAttr, unroll, {}, {}, {}, {},
                    {}, {}, {}, {}, {}, {}, {}));
}

/// "_" and the name of the ONNX node of `loc` (DistDialect::getNodeName),
/// behind the phase of a training step's backward and update ops
/// ("bwd_layer1_Relu"), with every character outside [A-Za-z0-9] turned
/// into single underscores; empty when `loc` has no name or one without a
/// letter. Outlined loop nests are named <function>_par<N> or
/// <function>_loop<N> followed by it, so that a profile of a compiled model
/// says which node each loop belongs to (ParallelizeLoops.cpp).
std::string nodeNameSuffix(Location loc);

/// A symbol name not yet taken in `module` for a nest outlined from
/// `parent`: <parent>_<kind><N><nodeNameSuffix(loc)>, N counting up from
/// `index` (left past the name chosen; the passes may run on a module they
/// have seen before).
std::string outlinedName(ModuleOp module, func::FuncOp parent, StringRef kind,
                         unsigned &index, Location loc);

} // namespace mlir::dist::codegen

#endif // DIST_LIB_CODEGEN_HOST_LOOPHINTS_H
