//===- dist-opt.cpp - dist-opt driver -------------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `dist-opt model.onnx [flags]` compiles an ONNX model through the phase
// pipelines (lib/Pipelines); `dist-opt file.mlir --some-pass` runs passes
// like mlir-opt; `dist-opt calibrate` measures this machine. `--help` shows
// dist-opt's own flags and the phases, `--help-mlir` every pass, pipeline
// and MLIR flag.
//
//===----------------------------------------------------------------------===//

#include "dist/Pipelines/Calibrate.h"
#include "dist/Pipelines/CommandLine.h"
#include "dist/Pipelines/Compile.h"
#include "dist/Pipelines/Diagnostics.h"
#include "dist/Pipelines/Pipelines.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"

#include <vector>

namespace mlir::dist::test {
void registerTestPlanPasses();
void registerTestPipelineSchedulePass();
} // namespace mlir::dist::test

using namespace mlir;

namespace {
bool isHelpFlag(llvm::StringRef arg) {
  return arg == "--help" || arg == "-help" || arg == "-h" ||
         arg == "--help-hidden" || arg == "-help-hidden";
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  DialectRegistry registry;
  dist::registerDistDialects(registry);
  dist::registerDistPassesAndPipelines();
  dist::test::registerTestPlanPasses();
  dist::test::registerTestPipelineSchedulePass();

  if (argc >= 2 && llvm::StringRef(argv[1]) == "calibrate")
    return dist::calibrateMain(argc - 1, argv + 1, registry);

  // --help-mlir: upstream's full list (passes, pipelines, MLIR's flags).
  std::vector<char *> args(argv, argv + argc);
  bool helpMlir = false, help = false;
  for (char *&arg : args) {
    if (llvm::StringRef(arg) == "--help-mlir" ||
        llvm::StringRef(arg) == "-help-mlir") {
      helpMlir = true;
      arg = const_cast<char *>("--help");
    } else if (isHelpFlag(arg)) {
      help = true;
    }
  }
  if (helpMlir)
    return asMainReturnCode(MlirOptMain(
        static_cast<int>(args.size()), args.data(),
        "dist-opt: the dist dialect's passes and pipelines\n", registry));
  if (help) {
    dist::CompileCommandLine commandLine;
    commandLine.printHelp(llvm::outs());
    return 0;
  }

  if (dist::hasONNXInput(argc, argv)) {
    dist::CompileCommandLine commandLine;
    commandLine.parse(argc, argv);
    std::optional<dist::CompileOptions> options = commandLine.getOptions();
    if (!options)
      return 1;
    if (commandLine.hasExtraPasses() &&
        options->compileTo == dist::Phase::Emit) {
      dist::reportError("-p runs passes on the IR a compile writes: give "
                        "--compile-to (or leave out -o DIR)");
      return 1;
    }
    return dist::runCompile(*options, registry, [&](OpPassManager &pm) {
      return commandLine.addExtraPasses(pm);
    });
  }
  return asMainReturnCode(MlirOptMain(
      argc, argv, "dist-opt: the dist dialect's optimizer driver\n", registry));
}
