//===- CompileOptions.h - what one compile of a model asks for -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Every choice of a compile, typed: the input and how it is imported, the
// target, training, planning, distribution and output. dist-opt's flags
// fill it (CommandLine.h), and each phase's pipeline builder
// (Pipelines.h) reads the fields it needs. Closed sets are enums with one
// table of names each (dist/Support/EnumOption.h).
//
//===----------------------------------------------------------------------===//

#ifndef DIST_PIPELINES_COMPILEOPTIONS_H
#define DIST_PIPELINES_COMPILEOPTIONS_H

#include "dist/Codegen/ConvKernel.h"
#include "dist/Codegen/Passes.h"
#include "dist/Dialect/Dist/IR/Mesh.h"
#include "dist/Dialect/Dist/Transforms/Passes.h"
#include "dist/Planner/Planner.h"
#include "dist/Support/EnumOption.h"
#include "dist/Transforms/Passes.h"

#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::dist {

/// The compile phases, in the order they run (Pipelines.cpp's table says
/// what each does and which function builds it).
enum class Phase {
  Import,
  GraphOpt,
  Plan,
  Train,
  Partition,
  GpuCodegen,
  HostCodegen,
  Emit,
};

template <>
struct EnumOptionTraits<Phase> {
  static llvm::ArrayRef<EnumOptionValue<Phase>> values() {
    static const EnumOptionValue<Phase> table[] = {
        {Phase::Import, "import", "ONNX to the dist graph"},
        {Phase::GraphOpt, "graph-opt", "the graph's shapes refined"},
        {Phase::Plan, "plan", "the cluster and the planner's layout"},
        {Phase::Train, "train", "the training step (autodiff, optimizer)"},
        {Phase::Partition, "partition", "the program every rank runs"},
        {Phase::GpuCodegen, "gpu-codegen",
         "GPU kernels in a fat binary (--target=cuda)"},
        {Phase::HostCodegen, "host-codegen", "lowered to the LLVM dialect"},
        {Phase::Emit, "emit", "object, executable, library, manifest"}};
    return table;
  }
  static constexpr const char *noun = "phase";
  static constexpr const char *passPrefix = "";
  static constexpr bool nounNamesFlag = false;
};

/// dist-build-train-step's choices (with the same defaults).
struct TrainOptions {
  LossKind loss = LossKind::CrossEntropy;
  std::string lossOutput;
  int64_t ignoreIndex = -100;
  OptimizerKind optimizer = OptimizerKind::SGD;
  double lr = 1e-3;
  LRScheduleKind lrSchedule = LRScheduleKind::Constant;
  int64_t warmupSteps = 0;
  double momentum = 0.9, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  /// Negative: the optimizer's PyTorch default (0.01 for adamw, else 0).
  double weightDecay = -1;
  double clipGradNorm = 0;
  std::vector<std::string> freeze;
  /// Micro-batches of a pipelined step (--micro-batches; 1 without stages).
  int64_t microBatches = 1;
  /// The global batch of a pipelined step when the model's is dynamic
  /// (--global-batch; 0: the model's).
  int64_t globalBatch = 0;

  /// The pass options these choices make.
  BuildTrainStepPassOptions toPassOptions() const;

  /// The choices of anything that names them alike: dist-opt's flags,
  /// dist-train-pipeline's options.
  template <typename Source>
  static TrainOptions from(const Source &s) {
    TrainOptions t;
    t.loss = s.loss;
    t.lossOutput = s.lossOutput;
    t.ignoreIndex = s.ignoreIndex;
    t.optimizer = s.optimizer;
    t.lr = s.lr;
    t.lrSchedule = s.lrSchedule;
    t.warmupSteps = s.warmupSteps;
    t.momentum = s.momentum;
    t.beta1 = s.beta1;
    t.beta2 = s.beta2;
    t.eps = s.eps;
    t.weightDecay = s.weightDecay;
    t.clipGradNorm = s.clipGradNorm;
    t.freeze.assign(s.freeze.begin(), s.freeze.end());
    return t;
  }
};

/// The planner's choices.
struct PlanningOptions {
  /// "local" (detect this machine) or a cluster file; "": keep the
  /// module's cluster (else detect this machine).
  std::string cluster = "local";
  /// The plan's layout is compiled (dist-opt --plan): searched, or read
  /// from `planFile`.
  bool applyLayout = false;
  std::string planFile;
  Objective objective = Objective::StepTime;
  double minThroughput = 0;
  PlanStrategy strategy = PlanStrategy::Exact;
  /// Samples per step (0: the model's batch) and CPU threads per rank (0:
  /// all cores).
  int64_t globalBatch = 0, threads = 0;
  bool psTables = false;
  /// Where plan.json and plan.html go ("": nowhere) and the summary lines.
  std::string reportDir;
  SummaryStream summary = SummaryStream::Stderr;
};

/// The CUDA target (--target=cuda[:sm_XX,...]).
struct CudaTargetOptions {
  /// The architectures the fat binary holds, e.g. {"sm_80", "sm_90"}.
  std::vector<std::string> chips;
  /// The CUDA toolkit found (CUDA_HOME, else /usr/local/cuda).
  std::string toolkit;
  /// How the f32 products round their operands (--precision).
  Precision precision = Precision::Fp32;
};

/// One compile of one model.
struct CompileOptions {
  //===--- Input ----------------------------------------------------------===//
  std::string inputFile;
  /// --input-shape / --input-value, parsed.
  llvm::StringMap<std::vector<int64_t>> inputShapes;
  llvm::StringMap<std::string> inputValues;
  int64_t maxInlineElements = 4096;

  //===--- Output ---------------------------------------------------------===//
  /// Where the output goes: a directory for artifacts (`outDir` set), or a
  /// file ("-": stdout) for the IR printed after `compileTo`.
  std::string outDir;
  std::string outputFile = "-";
  /// The artifacts' name and C API prefix (a C identifier).
  std::string name;
  /// The last phase to run; the IR after it is the output unless it is
  /// emit.
  Phase compileTo = Phase::Emit;
  /// What the emit phase writes.
  ArtifactKind artifact = ArtifactKind::Exe;
  /// The parameter file when printing IR (default: next to the output).
  std::string paramsFile;
  /// Print a summary of the imported model to stderr.
  bool summary = false;
  /// `--emit=plan`: stop after the plan without writing the IR.
  bool planOnly = false;

  //===--- Target ---------------------------------------------------------===//
  ConvKernel conv = ConvKernel::Auto;
  std::string runtimeLib, runtimeInclude;
  /// Set for --target=cuda: the model runs on a GPU.
  std::optional<CudaTargetOptions> cuda;

  //===--- Training -------------------------------------------------------===//
  std::optional<TrainOptions> train;

  //===--- Planning -------------------------------------------------------===//
  /// Set when any planning flag was given.
  std::optional<PlanningOptions> planning;

  //===--- Distribution ---------------------------------------------------===//
  /// --mesh, parsed once.
  std::optional<MeshSpec> mesh;
  /// Pipeline stages (mesh axis pp): --schedule and --pp-split.
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  std::string ppSplit;
  int64_t gradBucketBytes = 4 << 20;
  /// Embedding tables on the parameter server (--ps-tables): names, glob
  /// patterns, "all" or "auto" (dist-ps-lookups' `tables`); empty: none.
  std::vector<std::string> psTables;
  /// The servers' per-row update (--ps-optimizer): sgd, adagrad or adam;
  /// "": the training step's optimizer.
  std::string psOptimizer;
  /// How the servers create the tables' rows (--ps-init, parsePsInit's
  /// text); "" or "rows": from the model's values.
  std::string psInit;
  /// ZeRO stage (0 or 1).
  int64_t zero = 0;
  /// --elastic=MIN:MAX: one data-parallel layout per world size (0: none).
  int64_t elasticMin = 0, elasticMax = 0;
  /// Set by runCompile for each layout of an elastic set but the largest:
  /// only the executable is written, under this name (elasticExecutable).
  std::string executableFile;

  /// Whether the compile writes artifacts into a directory.
  bool toDirectory() const { return !outDir.empty(); }
};

/// dist-opt's --conv=auto on this host: ChannelsLast for inference where
/// oneDNN (libdnnl.so.2, which the runtime's channels-last convolution
/// loads) loads here, else Nchw (a training step, or no oneDNN).
ConvKernel resolveConvKernel(bool training);

} // namespace mlir::dist

DIST_ENUM_OPTION_PARSER(mlir::dist::Phase)

#endif // DIST_PIPELINES_COMPILEOPTIONS_H
