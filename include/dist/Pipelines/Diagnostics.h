//===- Diagnostics.h - one renderer for every error -------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-opt reports a failure as one line, `error: <place>: <message>`, and
// exits non-zero: the place is the model file and the ONNX node (or value)
// an op came from, a cluster file's line and column, or nothing for a flag.
// Errors from the importer, the passes and the driver all arrive as MLIR
// diagnostics and go through this renderer; warnings print as
// `warning: ...` lines.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_PIPELINES_DIAGNOSTICS_H
#define DIST_PIPELINES_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"

#include <string>

namespace mlir::dist {

/// The place `loc` names, as errors print it: the model file, then
/// `node '<name>'` (or `value '<name>'`); "" for an unknown location.
std::string renderLocation(Location loc);

/// `text` on one line: control characters and the Unicode line separators
/// become spaces (messages may quote bytes of a model).
std::string oneLine(llvm::StringRef text);

/// Prints `error: <message>` on stderr (for checks made before there is
/// IR, such as a flag's value).
void reportError(const llvm::Twine &message);
/// Prints `warning: <message>` on stderr.
void reportWarning(const llvm::Twine &message);

/// Renders the diagnostics of `ctx` while it lives: the first error as one
/// line (later ones are consequences), every warning.
class OneLineDiagnostics {
public:
  explicit OneLineDiagnostics(MLIRContext *ctx);

  /// Whether an error was printed.
  bool printedError() const { return printed; }
  /// The exit code for the error printed: 3 when code generation does not
  /// support something in the model (the README documents it), else 1.
  int exitCode() const;

private:
  ScopedDiagnosticHandler handler;
  bool printed = false;
  std::string first;
};

} // namespace mlir::dist

#endif // DIST_PIPELINES_DIAGNOSTICS_H
