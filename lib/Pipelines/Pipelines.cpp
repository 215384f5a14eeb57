//===- Pipelines.cpp - the compile phases and their pipelines -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The phase table (the order of a compile, in one place), the builder of
// each phase's pass pipeline from a compile's options, and their
// registration as `dist-<phase>-pipeline` with options that mirror
// dist-opt's flags. Why each pass runs where it does is said at the
// builder; the passes themselves say what they do in their .td files.
//
//===----------------------------------------------------------------------===//

#include "dist/Pipelines/Pipelines.h"

#include "dist/Codegen/Passes.h"
#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/Transforms/Passes.h"
#include "dist/Transforms/Passes.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include <dlfcn.h>

using namespace mlir;
using namespace mlir::dist;

// Measured with bench/zoo.sh's networks (AMD EPYC, Zen 5; the same
// executables alternated): with the channels-last layout and oneDNN's
// convolutions each ran 0.99x to 1.3x as fast as with the NCHW kernels at
// one and two threads (ResNet-50 1.12x and 1.30x, DenseNet-121 1.11x and
// 1.15x, ConvNeXt-T 1.20x and 1.22x, RegNetY-400MF 1.03x and 0.99x;
// EfficientNet-B0 1.14x and 0.92x before its means ran channels
// innermost, which made the channels-last build 1.08x and 1.14x faster).
// Training steps keep NCHW (their gradients' calls are the runtime's NCHW
// kernels: with channels-last a step's weight gradient became loops).
ConvKernel dist::resolveConvKernel(bool training) {
  if (training)
    return ConvKernel::Nchw;
  // RTLD_NODELETE: unloaded, oneDNN would leave what its initialisers
  // allocated behind, unreachable (LeakSanitizer reports it).
  void *dnnl = dlopen("libdnnl.so.2", RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
  if (!dnnl)
    return ConvKernel::Nchw;
  dlclose(dnnl);
  return ConvKernel::ChannelsLast;
}

//===----------------------------------------------------------------------===//
// The phases
//===----------------------------------------------------------------------===//

ArrayRef<PhaseInfo> dist::getPhases() {
  static const PhaseInfo phases[] = {
      {Phase::Import, "import",
       "reads the ONNX model into the dist graph: opsets normalised, shapes "
       "inferred and folded, initializers to the parameter file",
       "importONNXFile (lib/Import/ONNX)", false},
      {Phase::GraphOpt, "graph-opt",
       "refines the graph's shapes (the importer has folded what folds)",
       "buildGraphOptPipeline (lib/Pipelines/Pipelines.cpp)", true},
      {Phase::Plan, "plan",
       "attaches the cluster and runs the planner (or evaluates --mesh); "
       "writes plan.json and plan.html",
       "buildPlanPipeline (lib/Pipelines/Pipelines.cpp)", true},
      {Phase::Train, "train",
       "puts --ps-tables on the parameter server, splits the forward graph "
       "over tp, then builds the training step (loss, autodiff, optimizer) "
       "at one dp rank's batch",
       "buildTrainPipeline (lib/Pipelines/Pipelines.cpp)", true},
      {Phase::Partition, "partition",
       "the program every rank runs: mesh, gradient buckets over dp, ZeRO, "
       "inference batch split",
       "buildPartitionPipeline (lib/Pipelines/Pipelines.cpp)", true},
      {Phase::GpuCodegen, "gpu-codegen",
       "with --target=cuda: records the interface, lowers to linalg and "
       "loops, maps the loops to GPU launches and compiles the kernels "
       "into a fat binary of cubins (NVVM, ptxas)",
       "buildGpuCodegenPipeline (lib/Pipelines/Pipelines.cpp, "
       "lib/Codegen/Gpu/Pipeline.cpp)",
       true},
      {Phase::HostCodegen, "host-codegen",
       "records the interface, lowers to linalg, loops and runtime calls, "
       "then to the LLVM dialect (with --target=cuda: the host code left "
       "by gpu-codegen, kernel launches included)",
       "buildHostCodegenPipeline (lib/Pipelines/Pipelines.cpp, "
       "lib/Codegen/Host/Pipeline.cpp)",
       true},
      {Phase::Emit, "emit",
       "LLVM O3 for this CPU, object, executable, shared library, header and "
       "manifest",
       "buildEmitPipeline (lib/Pipelines/Pipelines.cpp)", true},
  };
  return phases;
}

const PhaseInfo &dist::getPhaseInfo(Phase phase) {
  for (const PhaseInfo &info : getPhases())
    if (info.phase == phase)
      return info;
  llvm_unreachable("every phase is in the table");
}

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

BuildTrainStepPassOptions TrainOptions::toPassOptions() const {
  BuildTrainStepPassOptions o;
  o.loss = loss;
  o.lossOutput = lossOutput;
  o.ignoreIndex = ignoreIndex;
  o.optimizer = optimizer;
  o.lr = lr;
  o.lrSchedule = lrSchedule;
  o.warmupSteps = warmupSteps;
  o.momentum = momentum;
  o.beta1 = beta1;
  o.beta2 = beta2;
  o.eps = eps;
  o.weightDecay = weightDecay;
  o.clipGradNorm = clipGradNorm;
  o.microBatches = microBatches;
  o.globalBatch = globalBatch;
  o.freeze.assign(freeze.begin(), freeze.end());
  return o;
}

/// The passes that build the training step from the forward graph; the
/// train phase runs them after splitting over tp, and the plan phase on a
/// copy it plans.
static void addTrainStepPasses(OpPassManager &pm, const TrainOptions &train) {
  pm.addPass(createBuildTrainStepPass(train.toPassOptions()));
  // The step spells out every use of every value; what folds or repeats
  // goes before the cost model or codegen sees it.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void dist::buildGraphOptPipeline(OpPassManager &pm, const CompileOptions &) {
  // The importer infers and folds every op as it reads it; IR from a file
  // or from -p passes may still have types to refine. CSE and graph-level
  // canonicalization are deliberately not run: they change which kernels
  // codegen picks (two Transposes of one tensor merged into one that a
  // Relu also reads is materialised, where each alone folded into its
  // product: test/Transforms/gemm-costs.test), and so the artifacts.
  pm.addNestedPass<func::FuncOp>(createInferShapesPass());
}

void dist::buildPlanPipeline(OpPassManager &pm, const CompileOptions &options) {
  if (!options.planning)
    return;
  const PlanningOptions &p = *options.planning;
  AttachClusterPassOptions cluster;
  cluster.cluster = p.cluster;
  pm.addPass(createAttachClusterPass(cluster));
  PlanPassOptions plan;
  plan.objective = p.objective;
  plan.minThroughput = p.minThroughput;
  plan.strategy = p.strategy;
  plan.globalBatch = p.globalBatch;
  plan.threads = p.threads;
  plan.planFile = p.planFile;
  plan.psTables = p.psTables;
  // The plan prices convolutions as codegen will run them.
  plan.conv = options.conv;
  plan.applyLayout = p.applyLayout;
  plan.schedule = options.schedule;
  plan.ppSplit = options.ppSplit;
  if (options.train)
    plan.microBatches = options.train->microBatches;
  plan.zero = options.zero;
  plan.reportDir = p.reportDir;
  plan.summary = p.summary;
  // A training compile plans the step the train phase will build: the
  // plan comes first, since its layout decides how the step is built.
  if (!options.train) {
    pm.addPass(createPlanPass(plan));
    return;
  }
  // The planner prices the whole step (a pipeline's micro-batches are its
  // own decision), at the global batch.
  TrainOptions train = *options.train;
  train.microBatches = 1;
  train.globalBatch = 0;
  pm.addPass(createPlanPass(
      plan, [train](OpPassManager &step) { addTrainStepPasses(step, train); }));
}

void dist::buildTrainPipeline(OpPassManager &pm,
                              const CompileOptions &options) {
  // Tables on the parameter server first (after the planner, which priced
  // their lookups as pulls): their lookups become the pulled rows that the
  // step's autodiff then sees as inputs. Inference compiles run it too.
  if (!options.psTables.empty()) {
    PsLookupsPassOptions ps;
    ps.tables.assign(options.psTables.begin(), options.psTables.end());
    if (options.train) {
      ps.optimizer = options.psOptimizer.empty() ? "sgd" : options.psOptimizer;
      ps.lr = options.train->lr;
      ps.beta1 = options.train->beta1;
      ps.beta2 = options.train->beta2;
      if (ps.optimizer == "adam")
        ps.eps = options.train->eps;
      if (!options.psInit.empty())
        ps.init = options.psInit;
    }
    pm.addPass(createPsLookupsPass(ps));
  }
  if (!options.train)
    return;
  // Tensor parallelism splits the forward graph first: the step's backward
  // pass then follows from the gradient rules of the collectives it put
  // there. The step is built at one dp rank's batch (dist.mesh).
  TensorParallelPassOptions tp;
  tp.report = true;
  pm.addPass(createTensorParallelPass(tp));
  addTrainStepPasses(pm, *options.train);
}

void dist::buildPartitionPipeline(OpPassManager &pm,
                                  const CompileOptions &options) {
  // A mesh given (--mesh) or to come from the plan (--plan).
  if (!options.mesh && !(options.planning && options.planning->applyLayout))
    return;
  // An inference-only module is split over tp here (a training one was in
  // the train phase, and the pass sees that).
  TensorParallelPassOptions tp;
  tp.report = true;
  pm.addPass(createTensorParallelPass(tp));
  // Pipeline stages (mesh axis pp) cut the step into per-stage programs.
  SplitStagesPassOptions stages;
  stages.schedule = options.schedule;
  stages.split = options.ppSplit;
  pm.addPass(createSplitStagesPass(stages));
  PartitionPassOptions partition;
  partition.bucketBytes = options.gradBucketBytes;
  partition.zero = options.zero;
  pm.addPass(createPartitionPass(partition));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

/// The entry points the runtime calls: named after the model with a name,
/// else the defaults; the step's is wrapped when the module has a step.
static HostCodegenOptions entryPoints(const CompileOptions &options) {
  HostCodegenOptions cg;
  cg.trainEntryName = "train_step";
  cg.trainEntrySymbol = "dist_model_train";
  if (!options.name.empty()) {
    cg.entrySymbol = "dist_model_entry_" + options.name;
    cg.entryName = "dist_graph_" + options.name;
    cg.trainEntryName = "dist_train_" + options.name;
    cg.trainEntrySymbol = "dist_model_train_" + options.name;
  }
  return cg;
}

/// Renames the entry functions and records the interface: while the
/// functions still have their tensor types (after their final names: it
/// names the pipeline stages'); the emit phase writes the descriptor from
/// it.
static void addRecordSignaturePasses(OpPassManager &pm,
                                     const CompileOptions &options,
                                     const HostCodegenOptions &cg) {
  if (!options.name.empty()) {
    RenameEntriesPassOptions rename;
    rename.modelName = options.name;
    pm.addPass(createRenameEntriesPass(rename));
  }
  RecordSignaturePassOptions record;
  record.entrySymbol = cg.entrySymbol;
  record.trainSymbol = cg.trainEntrySymbol;
  record.device = options.cuda ? "cuda" : "";
  if (options.cuda)
    record.precision = stringifyEnumOption(options.cuda->precision).str();
  pm.addPass(createRecordSignaturePass(record));
}

void dist::buildGpuCodegenPipeline(OpPassManager &pm,
                                   const CompileOptions &options) {
  if (!options.cuda)
    return;
  HostCodegenOptions cg = entryPoints(options);
  addRecordSignaturePasses(pm, options, cg);
  GpuCodegenOptions gpu;
  gpu.chips = options.cuda->chips;
  gpu.toolkit = options.cuda->toolkit;
  gpu.precision = options.cuda->precision;
  // Convolutions as im2col columns and products: loops a kernel runs (the
  // direct kernel is the CPU runtime's).
  buildGpuKernelsPipeline(pm, ConvKernel::Im2col, gpu);
}

void dist::buildHostCodegenPipeline(OpPassManager &pm,
                                    const CompileOptions &options) {
  HostCodegenOptions cg = entryPoints(options);
  if (options.cuda) {
    buildLoopsToLLVMPipeline(pm, cg, /*gpu=*/true);
    return;
  }
  cg.convKernel = options.conv;
  addRecordSignaturePasses(pm, options, cg);
  buildHostCodegenPipeline(pm, cg);
}

void dist::buildEmitPipeline(OpPassManager &pm, const CompileOptions &options) {
  EmitArtifactsPassOptions emit;
  emit.outDir = options.outDir.empty() ? "." : options.outDir;
  emit.modelName = options.name.empty() ? "model" : options.name;
  emit.kind = options.artifact;
  emit.runtimeLib = options.runtimeLib;
  emit.runtimeInclude = options.runtimeInclude;
  if (options.train && options.artifact == ArtifactKind::Exe)
    emit.onnxFile = emit.modelName + ".onnx";
  emit.elasticMin = options.elasticMin;
  emit.elasticMax = options.elasticMax;
  emit.executableFile = options.executableFile;
  pm.addPass(createEmitArtifactsPass(emit));
}

void dist::buildPhasePipelines(OpPassManager &pm, const CompileOptions &options,
                               Phase after, Phase upTo) {
  for (const PhaseInfo &info : getPhases()) {
    if (info.phase <= after || info.phase > upTo)
      continue;
    switch (info.phase) {
    case Phase::Import:
      break;
    case Phase::GraphOpt:
      buildGraphOptPipeline(pm, options);
      break;
    case Phase::Plan:
      buildPlanPipeline(pm, options);
      break;
    case Phase::Train:
      buildTrainPipeline(pm, options);
      break;
    case Phase::Partition:
      buildPartitionPipeline(pm, options);
      break;
    case Phase::GpuCodegen:
      buildGpuCodegenPipeline(pm, options);
      break;
    case Phase::HostCodegen:
      buildHostCodegenPipeline(pm, options);
      break;
    case Phase::Emit:
      buildEmitPipeline(pm, options);
      break;
    }
  }
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

namespace {
/// dist-plan-pipeline's options: the planning flags.
struct PlanPipelineOptions : public PassPipelineOptions<PlanPipelineOptions> {
  Option<std::string> cluster{
      *this, "cluster",
      llvm::cl::desc("local (detect this machine) or a cluster file "
                     "(default: the module's cluster, else this machine)")};
  Option<std::string> plan{
      *this, "plan",
      llvm::cl::desc("auto (search and apply the layout), a plan.json to "
                     "apply, or empty (search and report)")};
  Option<Objective> objective{
      *this, "objective", llvm::cl::desc("what to minimise"),
      llvm::cl::init(Objective::StepTime), enumOptionValues<Objective>()};
  Option<double> minThroughput{
      *this, "min-throughput",
      llvm::cl::desc("samples/s the cost objective must reach"),
      llvm::cl::init(0)};
  Option<PlanStrategy> planner{*this, "planner", llvm::cl::desc("the search"),
                               llvm::cl::init(PlanStrategy::Exact),
                               enumOptionValues<PlanStrategy>()};
  Option<int64_t> globalBatch{
      *this, "global-batch",
      llvm::cl::desc("samples per step (0: the model's batch)"),
      llvm::cl::init(0)};
  Option<int64_t> threads{*this, "plan-threads",
                          llvm::cl::desc("CPU threads per rank (0: all)"),
                          llvm::cl::init(0)};
  Option<bool> psTables{*this, "ps-tables",
                        llvm::cl::desc("embedding tables on parameter servers"),
                        llvm::cl::init(false)};
  Option<ConvKernel> conv{
      *this, "conv", llvm::cl::desc("how codegen runs convolutions"),
      llvm::cl::init(ConvKernel::Auto), enumOptionValues<ConvKernel>()};
  Option<int64_t> zero{*this, "zero",
                       llvm::cl::desc("ZeRO stage of an applied layout"),
                       llvm::cl::init(0)};
  Option<std::string> reportDir{
      *this, "report-dir",
      llvm::cl::desc("write plan.json and plan.html here")};
};

/// dist-train-pipeline's options: the training flags.
struct TrainPipelineOptions : public PassPipelineOptions<TrainPipelineOptions> {
  Option<LossKind> loss{*this, "loss", llvm::cl::desc("loss on the output"),
                        llvm::cl::init(LossKind::CrossEntropy),
                        enumOptionValues<LossKind>()};
  Option<std::string> lossOutput{
      *this, "loss-output",
      llvm::cl::desc("output the loss applies to (default: the first)")};
  Option<int64_t> ignoreIndex{*this, "ignore-index",
                              llvm::cl::desc("label cross_entropy ignores"),
                              llvm::cl::init(-100)};
  Option<OptimizerKind> optimizer{
      *this, "optimizer", llvm::cl::desc("torch.optim optimizer"),
      llvm::cl::init(OptimizerKind::SGD), enumOptionValues<OptimizerKind>()};
  Option<double> lr{*this, "lr", llvm::cl::desc("learning rate"),
                    llvm::cl::init(1e-3)};
  Option<LRScheduleKind> lrSchedule{*this, "lr-schedule",
                                    llvm::cl::desc("learning-rate schedule"),
                                    llvm::cl::init(LRScheduleKind::Constant),
                                    enumOptionValues<LRScheduleKind>()};
  Option<int64_t> warmupSteps{*this, "warmup-steps",
                              llvm::cl::desc("warm-up steps"),
                              llvm::cl::init(0)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("momentum"),
                          llvm::cl::init(0.9)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("Adam beta1"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("Adam beta2"),
                       llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::desc("Adam epsilon"),
                     llvm::cl::init(1e-8)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("weight decay (negative: the optimizer's default)"),
      llvm::cl::init(-1)};
  Option<double> clipGradNorm{*this, "clip-grad-norm",
                              llvm::cl::desc("global gradient norm bound"),
                              llvm::cl::init(0)};
  ListOption<std::string> freeze{*this, "freeze",
                                 llvm::cl::desc("initializers kept as they "
                                                "are (names or globs)")};
};

/// dist-partition-pipeline's options: the distribution flags.
struct PartitionPipelineOptions
    : public PassPipelineOptions<PartitionPipelineOptions> {
  Option<std::string> mesh{
      *this, "mesh",
      llvm::cl::desc("the mesh, e.g. dp=2,tp=2 (default: the module's "
                     "dist.mesh)")};
  Option<int64_t> bucketBytes{*this, "bucket-bytes",
                              llvm::cl::desc("gradient bucket size in bytes"),
                              llvm::cl::init(4 << 20)};
  Option<int64_t> zero{*this, "zero", llvm::cl::desc("ZeRO stage (0 or 1)"),
                       llvm::cl::init(0)};
};

/// dist-host-codegen-pipeline's options.
struct HostCodegenPipelineOptions
    : public PassPipelineOptions<HostCodegenPipelineOptions> {
  Option<std::string> name{
      *this, "name",
      llvm::cl::desc("the model's name: entry functions become "
                     "dist_graph_<name> / dist_train_<name> (default: keep "
                     "them, wrap the entry as dist_model_entry)")};
  Option<ConvKernel> conv{
      *this, "conv", llvm::cl::desc("how 2-D f32 convolutions run"),
      llvm::cl::init(ConvKernel::Auto), enumOptionValues<ConvKernel>()};
};

/// dist-gpu-codegen-pipeline's options: --target=cuda's.
struct GpuCodegenPipelineOptions
    : public PassPipelineOptions<GpuCodegenPipelineOptions> {
  Option<std::string> name{
      *this, "name",
      llvm::cl::desc("the model's name (as dist-host-codegen-pipeline's)")};
  ListOption<std::string> chips{
      *this, "chips",
      llvm::cl::desc("the CUDA architectures (default sm_80,sm_90)")};
  Option<std::string> toolkit{*this, "toolkit",
                              llvm::cl::desc("the CUDA toolkit"),
                              llvm::cl::init("/usr/local/cuda")};
  Option<Precision> precision{
      *this, "precision",
      llvm::cl::desc("how the f32 products round their operands"),
      llvm::cl::init(Precision::Fp32), enumOptionValues<Precision>()};
};

/// dist-emit-pipeline's options: the output flags.
struct EmitPipelineOptions : public PassPipelineOptions<EmitPipelineOptions> {
  Option<std::string> outDir{*this, "out-dir",
                             llvm::cl::desc("the artifact directory"),
                             llvm::cl::init(".")};
  Option<std::string> name{*this, "name", llvm::cl::desc("the model's name"),
                           llvm::cl::init("model")};
  Option<ArtifactKind> kind{*this, "kind", llvm::cl::desc("what to write"),
                            llvm::cl::init(ArtifactKind::Exe),
                            enumOptionValues<ArtifactKind>()};
  Option<bool> train{*this, "train",
                     llvm::cl::desc("keep <name>.onnx for train --export-onnx "
                                    "(the file must be written beside)"),
                     llvm::cl::init(false)};
  Option<std::string> runtimeLib{*this, "runtime-lib",
                                 llvm::cl::desc("the runtime library")};
  Option<std::string> runtimeInclude{*this, "runtime-include",
                                     llvm::cl::desc("the runtime's headers")};
};
} // namespace

void dist::registerPhasePipelines() {
  PassPipelineRegistration<>(
      "dist-graph-opt-pipeline", getPhaseInfo(Phase::GraphOpt).summary,
      [](OpPassManager &pm) { buildGraphOptPipeline(pm, CompileOptions()); });
  PassPipelineRegistration<PlanPipelineOptions>(
      "dist-plan-pipeline", getPhaseInfo(Phase::Plan).summary,
      [](OpPassManager &pm, const PlanPipelineOptions &o) {
        CompileOptions options;
        PlanningOptions &p = options.planning.emplace();
        p.cluster = o.cluster;
        p.applyLayout = !o.plan.empty();
        if (o.plan != "auto")
          p.planFile = o.plan;
        p.objective = o.objective;
        p.minThroughput = o.minThroughput;
        p.strategy = o.planner;
        p.globalBatch = o.globalBatch;
        p.threads = o.threads;
        p.psTables = o.psTables;
        options.conv = o.conv;
        options.zero = o.zero;
        p.reportDir = o.reportDir;
        buildPlanPipeline(pm, options);
      });
  PassPipelineRegistration<TrainPipelineOptions>(
      "dist-train-pipeline", getPhaseInfo(Phase::Train).summary,
      [](OpPassManager &pm, const TrainPipelineOptions &o) {
        CompileOptions options;
        options.train = TrainOptions::from(o);
        buildTrainPipeline(pm, options);
      });
  PassPipelineRegistration<PartitionPipelineOptions>(
      "dist-partition-pipeline", getPhaseInfo(Phase::Partition).summary,
      [](OpPassManager &pm, const PartitionPipelineOptions &o) {
        // The mesh is the module's (dist.mesh) unless given here.
        TensorParallelPassOptions tp;
        tp.mesh = o.mesh;
        tp.report = true;
        pm.addPass(createTensorParallelPass(tp));
        PartitionPassOptions partition;
        partition.mesh = o.mesh;
        partition.bucketBytes = o.bucketBytes;
        partition.zero = o.zero;
        pm.addPass(createPartitionPass(partition));
        pm.addPass(createCanonicalizerPass());
        pm.addPass(createCSEPass());
      });
  PassPipelineRegistration<GpuCodegenPipelineOptions>(
      "dist-gpu-codegen-pipeline", getPhaseInfo(Phase::GpuCodegen).summary,
      [](OpPassManager &pm, const GpuCodegenPipelineOptions &o) {
        CompileOptions options;
        options.name = o.name;
        CudaTargetOptions &cuda = options.cuda.emplace();
        cuda.chips.assign(o.chips.begin(), o.chips.end());
        if (cuda.chips.empty())
          cuda.chips = {"sm_80", "sm_90"};
        cuda.toolkit = o.toolkit;
        cuda.precision = o.precision;
        buildGpuCodegenPipeline(pm, options);
      });
  PassPipelineRegistration<HostCodegenPipelineOptions>(
      "dist-host-codegen-pipeline", getPhaseInfo(Phase::HostCodegen).summary,
      [](OpPassManager &pm, const HostCodegenPipelineOptions &o) {
        CompileOptions options;
        options.name = o.name;
        options.conv = o.conv;
        buildHostCodegenPipeline(pm, options);
      });
  PassPipelineRegistration<EmitPipelineOptions>(
      "dist-emit-pipeline", getPhaseInfo(Phase::Emit).summary,
      [](OpPassManager &pm, const EmitPipelineOptions &o) {
        CompileOptions options;
        options.outDir = o.outDir;
        options.name = o.name;
        options.artifact = o.kind;
        options.runtimeLib = o.runtimeLib;
        options.runtimeInclude = o.runtimeInclude;
        if (o.train)
          options.train.emplace();
        buildEmitPipeline(pm, options);
      });
}

void dist::registerDistDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  // Among them the ConvertToLLVM interfaces that the GPU lowering
  // (convert-gpu-to-nvvm) takes its arith, memref and math patterns from.
  registerAllExtensions(registry);
  registry.insert<DistDialect>();
  // The CUDA target serialises its kernels (NVVM) and embeds them in the
  // host module (gpu.binary, gpu.launch_func) through LLVM IR.
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  registerCollectiveBufferization(registry);
  registerShardGradients(registry);
}

void dist::registerDistPassesAndPipelines() {
  registerAllPasses();
  registerDistPasses();
  registerDistTransformsPasses();
  registerDistCodegenPasses();
  registerPhasePipelines();
}
