//===- EmitArtifacts.cpp - the emit phase's pass --------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-emit-artifacts: the last step of a compile as a pass, so that the
// emit phase runs from a lowered `.mlir` file like every other phase. It
// reads the signature recorded before lowering and writes the LLVM IR, the
// object or the deployable artifacts (Emit.cpp does the work).
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Emit.h"
#include "dist/Codegen/Passes.h"

#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstdlib>

#define DEBUG_TYPE "dist-emit-artifacts"

namespace mlir::dist {
#define GEN_PASS_DEF_EMITARTIFACTSPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

std::string dist::defaultRuntimeLib() {
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  SmallString<256> p(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(p, "lib", "libdist_rt.a");
  return p.str().str();
}

std::string dist::defaultRuntimeInclude() { return DIST_RUNTIME_INCLUDE_DIR; }

std::string dist::defaultLinkDriver() {
  const char *cc = std::getenv("CC");
  return cc && *cc ? cc : DIST_ARTIFACT_CC;
}

namespace {
struct EmitArtifactsPass
    : public dist::impl::EmitArtifactsPassBase<EmitArtifactsPass> {
  using Base::Base;

  void runOnOperation() override;
  /// Translation to LLVM IR registers on the context: declared here, not
  /// while the pass runs.
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
  }
  /// `<out-dir>/<file>`.
  std::string outPath(const Twine &file) const {
    SmallString<256> p(outDir);
    llvm::sys::path::append(p, file);
    return p.str().str();
  }
};

void EmitArtifactsPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<ModelSignature> sig = getRecordedSignature(module);
  if (failed(sig))
    return signalPassFailure();
  if (auto ec = llvm::sys::fs::create_directories(outDir)) {
    module.emitError("cannot create ") << outDir << ": " << ec.message();
    return signalPassFailure();
  }
  if (kind == ArtifactKind::LLVM) {
    std::string ir;
    if (failed(emitLLVMIR(module, modelName, ir)))
      return signalPassFailure();
    std::string err;
    auto out = openOutputFile(outPath(modelName + ".ll"), &err);
    if (!out) {
      module.emitError(err);
      return signalPassFailure();
    }
    out->os() << ir;
    out->keep();
    return;
  }
  if (kind == ArtifactKind::Obj) {
    if (failed(emitObjectFile(module, modelName, outPath(modelName + ".o"))))
      return signalPassFailure();
    return;
  }
  SmallString<128> obj;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("dist-opt-" + modelName, "o", fd,
                                         obj)) {
    module.emitError("cannot create a temporary file");
    return signalPassFailure();
  }
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  llvm::scope_exit removeObj([&] { llvm::sys::fs::remove(obj); });
  if (failed(emitObjectFile(module, modelName, obj)))
    return signalPassFailure();
  EmitOptions opts;
  opts.name = modelName;
  opts.outDir = outDir;
  opts.paramFileName = sig->params.empty() ? "" : modelName + ".params";
  opts.runtimeLib = runtimeLib.empty() ? defaultRuntimeLib() : runtimeLib;
  opts.runtimeInclude =
      runtimeInclude.empty() ? defaultRuntimeInclude() : runtimeInclude;
  opts.cc = defaultLinkDriver();
  // The symbols the wrappers were given when the module was lowered.
  opts.entrySymbol = sig->entrySymbol;
  if (sig->train)
    opts.trainEntrySymbol = sig->trainSymbol;
  opts.onnxFileName = onnxFile;
  opts.elasticMin = elasticMin;
  opts.elasticMax = elasticMax;
  opts.executableFile = executableFile;
  if (!llvm::sys::fs::exists(opts.runtimeLib)) {
    emitError(UnknownLoc::get(&getContext()))
        << "the runtime library " << opts.runtimeLib
        << " does not exist (build the dist_rt_static target or pass "
           "--runtime-lib)";
    return signalPassFailure();
  }
  if (failed(linkArtifacts(module, *sig, opts, obj)))
    return signalPassFailure();
}
} // namespace
