//===- dist-import-fuzzer.cpp - libFuzzer target for the ONNX importer ----===//
// SPDX-License-Identifier: Apache-2.0
//
// Feeds arbitrary bytes to the ONNX importer, both as a binary model and as
// ONNX text, and verifies whatever it accepts. Built only with
// -DDIST_ENABLE_FUZZER=ON and clang; run through scripts/fuzz.sh import.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Import/ONNX/ONNXImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdlib>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::dist::DistDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry);
  context.disableMultithreading();
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::dist::ONNXImportOptions opts;
  opts.paramFile =
      "/tmp/dist-import-fuzzer-" + std::to_string(::getpid()) + ".params";
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  for (const char *name : {"fuzz.onnx", "fuzz.onnxtext"}) {
    mlir::OwningOpRef<mlir::ModuleOp> module = mlir::dist::importONNXBuffer(
        &context, llvm::MemoryBufferRef(bytes, name), opts);
    // Whatever the importer accepts must be valid IR.
    if (module && mlir::failed(mlir::verify(*module)))
      std::abort();
  }
  return 0;
}
