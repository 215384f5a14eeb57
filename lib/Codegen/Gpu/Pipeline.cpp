//===- Pipeline.cpp - the CUDA target's kernel generation -----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The host target's front (dist graph -> linalg -> fused -> bufferized),
// then: the products (convolutions' im2col products too) to calls of the
// runtime's cuBLASLt products (dist-contractions-to-runtime{target=cuda}),
// every other linalg op to parallel loops, every outermost loop
// nest to a gpu.launch (dist-map-loops-to-gpu), the launches outlined into
// gpu.modules, which convert-gpu-to-nvvm lowers, ptxas compiles for each
// architecture (gpu-module-to-binary, libdevice from the toolkit linked for
// the math functions) and fatbinary merges (dist-gpu-fat-binary). The host
// code stays on memrefs for the host-codegen phase, which lowers the
// launches to the runtime's mgpu* calls.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

ArrayRef<llvm::StringLiteral> dist::supportedCudaChips() {
  // Turing to Blackwell. CUDA 13 dropped Maxwell, Pascal and Volta.
  static const llvm::StringLiteral chips[] = {
      "sm_75",  "sm_80",  "sm_86",   "sm_87",  "sm_89",  "sm_90",
      "sm_90a", "sm_100", "sm_100a", "sm_120", "sm_120a"};
  return chips;
}

std::string dist::ptxFeatureFor(StringRef chip) {
  // The oldest PTX ISA that has the architecture (ptxas of CUDA 13 rejects
  // the NVPTX default, 6.0, for sm_90: ENVIRONMENT.md; LLVM aborts on a
  // version too old for the chip).
  unsigned number = 0;
  StringRef digits = chip;
  digits.consume_front("sm_");
  digits.take_while(llvm::isDigit).getAsInteger(10, number);
  if (number >= 120)
    return "+ptx87";
  if (number >= 100)
    return "+ptx86";
  return "+ptx80";
}

void dist::buildGpuKernelsPipeline(OpPassManager &pm, ConvKernel conv,
                                   const GpuCodegenOptions &options) {
  // Without dist-fuse-rows: its row blocks hold scratch buffers a kernel
  // cannot allocate; each pass of a normalisation is a kernel instead.
  buildBufferizedLoopsPipeline(pm, conv, /*fuseRows=*/false);
  // Products (convolutions' im2col products too) through cuBLASLt.
  ContractionsToRuntimePassOptions products;
  products.target = "cuda";
  products.precision = options.precision;
  pm.addPass(createContractionsToRuntimePass(products));
  // Strided copies as loops, which become kernels; contiguous ones stay
  // copies (the runtime's device copy).
  pm.addNestedPass<func::FuncOp>(createStridedCopiesToLoopsPass());
  // Every parallel dimension of a reduction first, the innermost too: a
  // column sum (a bias gradient) is one kernel over the columns.
  HoistParallelDimsPassOptions hoist;
  hoist.innermost = true;
  pm.addNestedPass<func::FuncOp>(createHoistParallelDimsPass(hoist));
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  MapLoopsToGpuPassOptions map;
  map.threads = options.threads;
  pm.addNestedPass<func::FuncOp>(createMapLoopsToGpuPass(map));
  // The loops inside a kernel run in sequence in each thread.
  pm.addPass(createParallelForToNestedForsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createGpuKernelOutliningPass());
  for (const std::string &chip : options.chips) {
    GpuNVVMAttachTargetOptions target;
    target.chip = chip;
    target.features = ptxFeatureFor(chip);
    target.optLevel = 3;
    pm.addPass(createGpuNVVMAttachTarget(target));
  }
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = 64;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.toolkit;
  binary.compilationTarget = "bin";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  GpuFatBinaryPassOptions fat;
  fat.toolkit = options.toolkit;
  pm.addPass(createGpuFatBinaryPass(fat));
}
