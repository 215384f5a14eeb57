//===- GpuFatBinary.cpp - one CUDA fat binary per gpu.binary --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-gpu-fat-binary: gpu-module-to-binary makes one object per target of
// a gpu.module, and the host lowering (#gpu.select_object) embeds only one
// of them. A CUDA target for several architectures (sm_80 and sm_90 by
// default) needs every cubin in the artifact and the driver to pick the
// one for its GPU: that is a fat binary, which cuModuleLoadData takes as it
// takes a cubin. The toolkit's `fatbinary` makes it (its format is the
// toolkit's, not documented for others to write); this pass runs it on the
// cubins written to temporary files and keeps its output as the binary's
// only object.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Passes.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "dist-gpu-fat-binary"

namespace mlir::dist {
#define GEN_PASS_DEF_GPUFATBINARYPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;

namespace {

/// Temporary files removed when it goes out of scope.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const std::string &p : paths)
      llvm::sys::fs::remove(p);
  }
  /// A new temporary file named like `prefix`-XXXX.`suffix`, or "" with
  /// `err` set.
  std::string make(StringRef prefix, StringRef suffix, std::string &err) {
    SmallString<128> path;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile(prefix, suffix, path)) {
      err = "cannot create a temporary file: " + ec.message();
      return "";
    }
    paths.push_back(path.str().str());
    return paths.back();
  }
};

struct GpuFatBinaryPass
    : public dist::impl::GpuFatBinaryPassBase<GpuFatBinaryPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto binary : getOperation().getOps<gpu::BinaryOp>())
      if (failed(merge(binary)))
        return signalPassFailure();
  }

  LogicalResult merge(gpu::BinaryOp binary) {
    SmallString<128> tool(toolkit);
    llvm::sys::path::append(tool, "bin", "fatbinary");
    if (!llvm::sys::fs::can_execute(tool))
      return binary.emitError() << "the CUDA toolkit has no " << tool
                                << " (set CUDA_HOME to the toolkit)";
    TempFiles files;
    std::string err;
    std::vector<std::string> args = {tool.str().str(), "--64"};
    std::string fatbin = files.make("dist-gpu", "fatbin", err);
    if (fatbin.empty())
      return binary.emitError() << err;
    args.push_back("--create=" + fatbin);
    NVVM::NVVMTargetAttr first;
    for (Attribute a : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(a);
      auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
      if (!target || object.getFormat() != gpu::CompilationTarget::Binary)
        return binary.emitError()
               << "dist-gpu-fat-binary takes cubins of NVVM targets, not "
               << object;
      StringRef chip = target.getChip();
      if (!chip.consume_front("sm_"))
        return binary.emitError()
               << "unknown CUDA architecture " << target.getChip();
      if (!first)
        first = target;
      std::string cubin = files.make("dist-gpu", "cubin", err);
      if (cubin.empty())
        return binary.emitError() << err;
      {
        std::error_code ec;
        llvm::raw_fd_ostream os(cubin, ec);
        os << object.getObject().getValue();
        if (ec || os.has_error())
          return binary.emitError() << "cannot write " << cubin;
      }
      // The chip's letters (sm_90a) stay: fatbinary takes "sm=90a".
      args.push_back(("--image3=kind=elf,sm=" + chip + ",file=" + cubin).str());
    }
    if (!first)
      return success();
    std::vector<StringRef> argRefs(args.begin(), args.end());
    std::string message;
    int rc = llvm::sys::ExecuteAndWait(tool, argRefs, std::nullopt, {}, 0, 0,
                                       &message);
    if (rc != 0)
      return binary.emitError() << "fatbinary failed (exit " << rc << ")"
                                << (message.empty() ? "" : ": ") << message;
    auto bytes = llvm::MemoryBuffer::getFile(fatbin, /*IsText=*/false);
    if (!bytes)
      return binary.emitError() << "cannot read " << fatbin;
    // In the section where the toolkit's tools look for fat binaries in a
    // host binary (cuobjdump lists the artifact's cubins).
    Builder b(&getContext());
    auto properties = b.getDictionaryAttr(
        b.getNamedAttr(gpu::elfSectionName, b.getStringAttr(".nv_fatbin")));
    auto object = gpu::ObjectAttr::get(
        &getContext(), first, gpu::CompilationTarget::Fatbin,
        b.getStringAttr((*bytes)->getBuffer()), properties, nullptr);
    binary.setObjectsAttr(ArrayAttr::get(&getContext(), {object}));
    return success();
  }
};

} // namespace
