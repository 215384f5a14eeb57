//===- Pipeline.cpp - host code generation pipeline -----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// dist graph -> linalg on tensors -> restricted elementwise fusion ->
// one-shot bufferization (mesh collectives become runtime calls) ->
// ownership-based deallocation -> BLAS calls for contractions -> parallel
// loops, the outermost of which run on the runtime's thread pool -> LLVM
// dialect with the runtime's entry wrapper. Vectorisation of the loops is
// left to LLVM's loop vectoriser (O3 with the host CPU's features), which
// handles the contiguous elementwise and reduction loops these lowerings
// produce; the innermost loops of the pool's bodies carry hints for it.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void dist::buildBufferizedLoopsPipeline(OpPassManager &pm, ConvKernel conv,
                                        bool fuseRows) {
  LowerToLinalgPassOptions lowerOpts;
  lowerOpts.convKernel = conv;
  pm.addPass(createLowerToLinalgPass(lowerOpts));
  // Sizes known only when the program runs (a dynamic batch) become the
  // dimension of the input they come from, so that CSE makes one size of
  // them: the lowerings read each op's from its own operand (tensor.dim of
  // every intermediate, arith.minsi of a broadcast's two), and
  // bufferization reuses a dead buffer (a residual Add written over its
  // operand) and dist-fuse-product-epilogues folds a loop only between
  // buffers of sizes it can tell equal. Left as they are where rewriting
  // stops short (the iteration limit is no error).
  memref::ResolveRankedShapeTypeResultDimsPassOptions dimOpts;
  dimOpts.errorOnPatternIterationLimit = false;
  pm.addPass(memref::createResolveRankedShapeTypeResultDimsPass(dimOpts));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Channels-last convolutions: their transposes cancel between layers.
  if (conv == ConvKernel::ChannelsLast) {
    // Where the module has channels-last convolutions (not a
    // transformer's: --conv=auto picks nhwc without looking).
    SinkTransposesPassOptions sinkOpts;
    sinkOpts.convsOnly = true;
    pm.addNestedPass<func::FuncOp>(createSinkTransposesPass(sinkOpts));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  // A dense block's growing concatenations in one buffer (after CSE: their
  // pieces, the same values, made once).
  pm.addNestedPass<func::FuncOp>(createShareConcatBuffersPass());
  // After CSE: the fills that this pass makes of padded tensors must stay
  // one per pad (two merged fills would be copied, see FuseElementwise).
  pm.addNestedPass<func::FuncOp>(createFuseElementwisePass());
  pm.addPass(createCanonicalizerPass());
  // Channels-last: a residual Add written over its residual's buffer,
  // where the call making the other operand accumulates.
  if (conv == ConvKernel::ChannelsLast) {
    ReuseInputBuffersPassOptions reuseOpts;
    reuseOpts.convsOnly = true;
    pm.addNestedPass<func::FuncOp>(createReuseInputBuffersPass(reuseOpts));
  }
  // A normalisation's passes over blocks of rows in one loop (scf.forall,
  // a parallel loop once bufferized).
  if (fuseRows) {
    pm.addNestedPass<func::FuncOp>(createFuseRowsPass());
    pm.addPass(createCanonicalizerPass());
  }

  // Parameter updates of a training step (materialize_in_destination into
  // the parameter argument) are computed straight into the parameter's
  // buffer instead of a temporary that is then copied.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufOpts;
  bufOpts.bufferizeFunctionBoundaries = true;
  bufOpts.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufOpts));
  pm.addPass(createStripMeshPass());
  // The updated parameters a training step returns are its arguments.
  pm.addNestedPass<func::FuncOp>(createDropParamResultsPass());
  // Identical subviews merged, so that the copy of a value inserted in
  // place into a padded buffer (source and target the same view) folds.
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  bufferization::BufferDeallocationPipelineOptions deallocOpts;
  bufferization::buildBufferDeallocationPipeline(pm, deallocOpts);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createForallToParallelLoopPass());
  // Before the runtime calls replace the ops that write padded interiors.
  pm.addNestedPass<func::FuncOp>(createFillBordersPass());
}

void dist::buildHostCodegenPipeline(OpPassManager &pm,
                                    const HostCodegenOptions &options) {
  buildBufferizedLoopsPipeline(pm, options.convKernel, /*fuseRows=*/true);
  pm.addPass(createContractionsToRuntimePass());
  pm.addPass(createFuseProductEpiloguesPass());
  // The sizes that the calls read from the buffers they made dead fold to
  // constants, so those buffers go.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFusePointwiseDepthwisePass());
  // Each buffer freed after its last use (deallocation put them all at the
  // end of the function), so that the caching allocator hands later layers
  // blocks still in cache.
  pm.addNestedPass<func::FuncOp>(createFreeAfterLastUsePass());

  // Parallel dimensions become scf.parallel, whose outermost loops run on
  // the runtime's thread pool: those of reductions go first.
  pm.addNestedPass<func::FuncOp>(createStridedCopiesToLoopsPass());
  pm.addNestedPass<func::FuncOp>(createHoistParallelDimsPass());
  // Merged loops view each buffer through a collapse_shape per operand: an
  // in-place update reads and writes one buffer through two of them, which
  // LLVM's vectoriser takes for two buffers that may overlap (its run-time
  // check fails and the scalar loop runs) until CSE makes them one.
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createRegisterAccumulatorsPass());
  pm.addNestedPass<func::FuncOp>(createApproximateMathPass());
  pm.addPass(createParallelizeLoopsPass());
  pm.addNestedPass<func::FuncOp>(createHoistInvariantLoadsPass());
  // The loops left on the calling thread get a function each, so that
  // LLVM's time stays linear in the model (OutlineLoops.cpp).
  pm.addPass(createOutlineLoopsPass());
  buildLoopsToLLVMPipeline(pm, options, /*gpu=*/false);
}

void dist::buildLoopsToLLVMPipeline(OpPassManager &pm,
                                    const HostCodegenOptions &options,
                                    bool gpu) {
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertMathToFuncs());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createExpandArithPass());
  pm.addPass(createArithToLLVMConversionPass());
  FinalizeMemRefToLLVMConversionPassOptions memOpts;
  memOpts.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memOpts));
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  // Kernel launches and the embedded fat binary: calls of the mgpu*
  // functions the runtime defines (runtime/lib/cuda.cpp).
  if (gpu)
    pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  if (gpu)
    pm.addPass(createDeviceAllocationsPass());
  AddEntryWrapperPassOptions wrapOpts;
  wrapOpts.symbolName = options.entrySymbol;
  wrapOpts.entryName = options.entryName;
  pm.addPass(createAddEntryWrapperPass(wrapOpts));
  if (!options.trainEntryName.empty()) {
    AddEntryWrapperPassOptions trainOpts;
    trainOpts.symbolName = options.trainEntrySymbol;
    trainOpts.entryName = options.trainEntryName;
    trainOpts.ifPresent = true;
    pm.addPass(createAddEntryWrapperPass(trainOpts));
  }
  AddEntryWrapperPassOptions stageOpts;
  stageOpts.pipeline = true;
  pm.addPass(createAddEntryWrapperPass(stageOpts));
}
