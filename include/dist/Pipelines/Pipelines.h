//===- Pipelines.h - the compile pipeline as registered phases -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// A compile is a sequence of phases (CompileOptions.h's Phase): import,
// then one pass pipeline per phase. Each phase has a builder
// `build<Phase>Pipeline(pm, options)` that adds its passes for a compile's
// options, and is registered as `dist-<phase>-pipeline` so that it runs on a
// `.mlir` file like any pass (`dist-opt in.mlir --dist-train-pipeline=...`).
// The order of the phases lives in one place: getPhases().
//
//===----------------------------------------------------------------------===//

#ifndef DIST_PIPELINES_PIPELINES_H
#define DIST_PIPELINES_PIPELINES_H

#include "dist/Pipelines/CompileOptions.h"

#include "mlir/Pass/PassManager.h"

namespace mlir::dist {

/// One phase of the compile pipeline.
struct PhaseInfo {
  Phase phase;
  /// `--compile-to` name; the registered pipeline is dist-<name>-pipeline
  /// (import has none: it reads ONNX, not IR).
  const char *name;
  /// What the phase does, in a line.
  const char *summary;
  /// The function that builds it, and its file.
  const char *builder;
  /// Whether it is registered as dist-<name>-pipeline.
  bool hasPipeline;
};

/// The phases in the order they run.
llvm::ArrayRef<PhaseInfo> getPhases();
const PhaseInfo &getPhaseInfo(Phase phase);

/// The builders. Each adds nothing when the options do not ask for the
/// phase (no --train, no planning flag, no mesh).
void buildGraphOptPipeline(OpPassManager &pm, const CompileOptions &options);
void buildPlanPipeline(OpPassManager &pm, const CompileOptions &options);
void buildTrainPipeline(OpPassManager &pm, const CompileOptions &options);
void buildPartitionPipeline(OpPassManager &pm, const CompileOptions &options);
void buildGpuCodegenPipeline(OpPassManager &pm, const CompileOptions &options);
void buildHostCodegenPipeline(OpPassManager &pm, const CompileOptions &options);
void buildEmitPipeline(OpPassManager &pm, const CompileOptions &options);

/// Adds the pipelines of the phases after `after` up to and including
/// `upTo`, in order.
void buildPhasePipelines(OpPassManager &pm, const CompileOptions &options,
                         Phase after, Phase upTo);

/// Registers every phase's pipeline as `dist-<phase>-pipeline`, with the
/// options of its flags.
void registerPhasePipelines();

/// Everything dist-opt registers: the dialects (with the external models
/// codegen and training need) and the passes (upstream's, dist's, the
/// phase pipelines).
void registerDistDialects(DialectRegistry &registry);
void registerDistPassesAndPipelines();

} // namespace mlir::dist

#endif // DIST_PIPELINES_PIPELINES_H
