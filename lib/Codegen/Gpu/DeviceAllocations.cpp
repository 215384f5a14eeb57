//===- DeviceAllocations.cpp - host buffers from the device allocator ----===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-device-allocations: the CUDA target's host code allocates, frees and
// copies its buffers with the functions finalize-memref-to-llvm calls
// (generic allocation functions and memrefCopy); this pass points those
// calls at the runtime's device allocator (runtime/lib/cuda.cpp), whose
// blocks are CUDA managed memory: kernels read and write them, and so can
// the host code left on the host. Renaming after the lowering keeps the
// upstream lowering whole (it has no option for other function names).
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "dist-device-allocations"

namespace mlir::dist {
#define GEN_PASS_DEF_DEVICEALLOCATIONSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {
struct DeviceAllocationsPass
    : public dist::impl::DeviceAllocationsPassBase<DeviceAllocationsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    static const std::pair<StringRef, StringRef> renames[] = {
        {"_mlir_memref_to_llvm_alloc", "dist_rt_device_alloc"},
        {"_mlir_memref_to_llvm_aligned_alloc", "dist_rt_device_aligned_alloc"},
        {"_mlir_memref_to_llvm_free", "dist_rt_device_free"},
        {"memrefCopy", "dist_rt_device_memref_copy"}};
    SymbolTable symbols(module);
    for (auto [from, to] : renames) {
      auto fn = symbols.lookup<LLVM::LLVMFuncOp>(from);
      if (!fn)
        continue;
      if (!fn.isExternal() || symbols.lookup(to)) {
        fn.emitError() << "dist-device-allocations: cannot rename " << from
                       << " to " << to;
        return signalPassFailure();
      }
      if (failed(symbols.rename(fn, StringAttr::get(&getContext(), to))))
        return signalPassFailure();
    }
  }
};
} // namespace
