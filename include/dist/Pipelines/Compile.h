//===- Compile.h - one compile of an ONNX model -----------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The compile driver: imports the model, runs the phase pipelines up to the
// requested phase (Pipelines.h) and writes the result: the artifacts, or
// the IR after that phase. Nothing is left behind on failure: the
// parameter file is moved into place only once everything else succeeded,
// and artifacts are linked under temporary names.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_PIPELINES_COMPILE_H
#define DIST_PIPELINES_COMPILE_H

#include "dist/Pipelines/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::dist {

/// Runs the compile `options` asks for. Errors are printed as one line
/// each (Diagnostics.h). Returns the process's exit code: 0, 1 on an error,
/// 3 when code generation does not support something in the model.
/// `extraPasses`, when set, adds passes that run after the last phase (the
/// `-p` pipeline of dist-opt's IR-printing mode); it returns failure after
/// printing its error.
int runCompile(
    const CompileOptions &options, DialectRegistry &registry,
    llvm::function_ref<LogicalResult(OpPassManager &)> extraPasses = nullptr);

/// Prints what `module` holds to `os`: opset, inputs, outputs, op counts,
/// parameters (dist-opt --summary).
void printModelSummary(ModuleOp module, llvm::StringRef modelPath,
                       llvm::raw_ostream &os);

} // namespace mlir::dist

#endif // DIST_PIPELINES_COMPILE_H
