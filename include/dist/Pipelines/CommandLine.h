//===- CommandLine.h - dist-opt's flags -------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The flags of a compile (`dist-opt model.onnx ...`), grouped as --help
// shows them (input, target, training, planning, distribution, output),
// checked together and turned into CompileOptions. Every flag and value
// of earlier releases keeps working; a wrong one is one `error:` line.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_PIPELINES_COMMANDLINE_H
#define DIST_PIPELINES_COMMANDLINE_H

#include "dist/Pipelines/CompileOptions.h"

#include "mlir/Pass/PassManager.h"

#include <memory>

namespace mlir::dist {

/// dist-opt's compile flags. They are registered with llvm::cl while an
/// instance lives (the mlir-opt mode never sees them).
class CompileCommandLine {
public:
  CompileCommandLine();
  ~CompileCommandLine();

  /// Parses argv (exits with one error line on a malformed flag).
  void parse(int argc, char **argv);
  /// Checks the flags together and fills the options; on an error prints
  /// one `error:` line and returns std::nullopt.
  std::optional<CompileOptions> getOptions() const;
  /// Adds the `-p` pipeline (passes after the last phase), if given.
  LogicalResult addExtraPasses(OpPassManager &pm) const;
  bool hasExtraPasses() const;

  /// Prints the grouped help (--help): usage, the phases, every flag with
  /// its default. At most a couple of hundred lines.
  void printHelp(llvm::raw_ostream &os) const;

private:
  struct Flags;
  std::unique_ptr<Flags> flags;
};

/// Whether the command line names an ONNX model as its input (a compile),
/// rather than an MLIR file (the mlir-opt mode).
bool hasONNXInput(int argc, char **argv);

} // namespace mlir::dist

#endif // DIST_PIPELINES_COMMANDLINE_H
