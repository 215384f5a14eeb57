//===- Passes.h - dist code generation passes -------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Passes and the host code generation pipeline (dist graph to LLVM dialect).
//
//===----------------------------------------------------------------------===//

#ifndef DIST_CODEGEN_PASSES_H
#define DIST_CODEGEN_PASSES_H

#include "dist/Codegen/ConvKernel.h"
#include "dist/Codegen/Precision.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::dist {

/// What dist-emit-artifacts writes.
enum class ArtifactKind {
  /// The executable, shared library, header and manifest.
  Exe,
  /// The object file.
  Obj,
  /// The optimised LLVM IR.
  LLVM,
};
template <>
struct EnumOptionTraits<ArtifactKind> {
  static llvm::ArrayRef<EnumOptionValue<ArtifactKind>> values() {
    static const EnumOptionValue<ArtifactKind> table[] = {
        {ArtifactKind::Exe, "exe",
         "executable, shared library, header and manifest"},
        {ArtifactKind::Obj, "obj", "the object file"},
        {ArtifactKind::LLVM, "llvm", "the optimised LLVM IR"}};
    return table;
  }
  static constexpr const char *noun = "artifact kind";
  static constexpr const char *passPrefix = "";
  static constexpr bool nounNamesFlag = false;
};
} // namespace mlir::dist

DIST_ENUM_OPTION_PARSER(mlir::dist::ArtifactKind)

namespace mlir::dist {

#define GEN_PASS_DECL
#include "dist/Codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dist/Codegen/Passes.h.inc"

/// Result attribute that dist-lower-to-linalg puts on the parameters a
/// function writes (its trailing results) and dist-drop-param-results
/// drops them by.
inline constexpr llvm::StringLiteral kParamUpdateAttr = "dist.param_update";

/// Options of the host code generation pipeline.
struct HostCodegenOptions {
  /// Symbol of the packed entry point the runtime calls.
  std::string entrySymbol = "dist_model_entry";
  /// Name of the function it wraps.
  std::string entryName = "main";
  /// The training step's function and packed entry point, wrapped when
  /// the module has it ("": never).
  std::string trainEntryName, trainEntrySymbol;
  /// How 2-D f32 convolutions run (the `conv` option of
  /// dist-lower-to-linalg).
  ConvKernel convKernel = ConvKernel::Auto;
};

/// dist graph (shapes inferred) -> linalg on tensors -> fused -> bufferized
/// -> BLAS calls for contractions -> loops on the runtime's thread pool ->
/// LLVM dialect with a packed entry wrapper.
void buildHostCodegenPipeline(OpPassManager &pm,
                              const HostCodegenOptions &options);

/// The front both targets share: dist graph -> linalg on tensors -> fused
/// (with `fuseRows`, a normalisation's passes over blocks of rows in one
/// loop) -> bufferized with ownership-based deallocation -> scf.parallel
/// for the scf.forall loops, padded buffers' borders filled.
void buildBufferizedLoopsPipeline(OpPassManager &pm, ConvKernel conv,
                                  bool fuseRows);

/// Loops, memrefs and arith/math of the host code -> LLVM dialect with the
/// entry wrappers; with `gpu`, kernel launches and binaries too and buffers
/// from the runtime's device allocator.
void buildLoopsToLLVMPipeline(OpPassManager &pm,
                              const HostCodegenOptions &options, bool gpu);

/// Options of the CUDA target's kernel generation.
struct GpuCodegenOptions {
  /// The architectures of the fat binary (sm_80, sm_90, ...).
  std::vector<std::string> chips = {"sm_80", "sm_90"};
  /// The CUDA toolkit (ptxas, fatbinary, libdevice).
  std::string toolkit = "/usr/local/cuda";
  /// Threads per block of a mapped loop.
  int64_t threads = 256;
  /// How the f32 products round their operands (--precision).
  Precision precision = Precision::Fp32;
};

/// The PTX ISA version feature ("+ptx80") the NVVM target of `chip`
/// (sm_80, sm_90a, ...) is compiled with.
std::string ptxFeatureFor(StringRef chip);

/// The CUDA architectures the CUDA target compiles for: those whose PTX
/// version it knows and which CUDA 13's ptxas still supports.
llvm::ArrayRef<llvm::StringLiteral> supportedCudaChips();

/// The CUDA target's device half: the shared front, loops as GPU launches,
/// kernels outlined and compiled through NVVM and ptxas into one fat
/// binary per module; the host code is left on memrefs for
/// buildLoopsToLLVMPipeline(gpu = true).
void buildGpuKernelsPipeline(OpPassManager &pm, ConvKernel conv,
                             const GpuCodegenOptions &options);

/// Registers the bufferization of `shard.all_reduce` into runtime calls
/// (lib/Codegen/Host/Collectives.cpp). Needed by the host pipeline on any
/// partitioned module.
void registerCollectiveBufferization(DialectRegistry &registry);

} // namespace mlir::dist

#endif // DIST_CODEGEN_PASSES_H
