//===- Plan.cpp - The planning pass -----------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-plan: collects the layer costs of the training step (built on a copy
// of the module when the step is yet to be built), or of the entry
// function, runs the planner for the module's cluster, or evaluates the
// layout of the module's mesh, and records the result on the IR: the typed
// `#dist.plan`, each op's stage and placement, and, when asked, the plan's
// layout as the module's mesh (see Passes.td). It writes plan.json and
// plan.html and prints the summary when asked.
//
//===----------------------------------------------------------------------===//

#include "dist/Transforms/Passes.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Transforms/ClusterAttr.h"
#include "dist/Transforms/LayerCosts.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <functional>

#define DEBUG_TYPE "dist-plan"

namespace mlir::dist {
#define GEN_PASS_DEF_PLANPASS
#include "dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

namespace {

/// Element type name of the function's first float argument ("f32").
std::string dtypeOf(func::FuncOp func) {
  for (Type t : func.getArgumentTypes()) {
    Type e = getElementTypeOrSelf(t);
    if (e.isF64())
      return "f64";
    if (e.isF16())
      return "f16";
    if (e.isBF16())
      return "bf16";
    if (e.isF32())
      return "f32";
  }
  return "f32";
}

/// Runs `build`'s passes, or the textual pass pipeline `pipeline`, on a
/// copy of `module` without its mesh: the training step a later phase
/// builds, planned before it is built, for the whole model at the global
/// batch (the layout is what the plan decides or evaluates).
FailureOr<OwningOpRef<ModuleOp>>
buildProbe(ModuleOp module, StringRef pipeline,
           const std::function<void(OpPassManager &)> &build) {
  OwningOpRef<ModuleOp> probe(module.clone());
  (*probe)->removeAttr(DistDialect::getMeshAttrName());
  PassManager pm(module.getContext());
  if (build) {
    build(pm);
  } else {
    std::string error;
    llvm::raw_string_ostream errorOs(error);
    if (failed(parsePassPipeline(pipeline, pm, errorOs)))
      return module.emitError("dist-plan: train-pipeline: ") << error,
             failure();
  }
  if (failed(pm.run(*probe)))
    return failure();
  return probe;
}

/// The layout of `mesh` (its dp and tp degrees, one stage over all layers,
/// one micro-batch, no recomputation) on the first device type of
/// `cluster`. When that type is a CPU with fewer devices than the mesh has
/// ranks, the ranks share its devices as they do under mpirun: `cluster`
/// is changed so that each device counts `ranksPerDevice` times, with that
/// share of its cores, memory, bandwidth and peak, and `threads` becomes
/// the cores of one rank.
Plan meshPlan(const MeshSpec &mesh, ClusterSpec &cluster,
              const std::vector<int64_t> &layerStage, int64_t microBatches,
              int64_t &ranksPerDevice, int64_t &threads) {
  Plan plan;
  plan.dp = mesh.sizeOf("dp");
  plan.tp = mesh.sizeOf("tp");
  plan.pp = mesh.sizeOf("pp");
  plan.microBatches = microBatches;
  int64_t ranks = plan.dp * plan.tp * plan.pp;
  ranksPerDevice = 1;
  std::vector<DeviceType> types = listDeviceTypes(cluster);
  if (!types.empty() && types.front().spec->kind == DevKind::CPU &&
      types.front().units < ranks) {
    DeviceSpec &cpu = cluster.nodes[types.front().nodeIndex]
                          .devices[types.front().deviceIndex];
    ranksPerDevice = (ranks + types.front().units - 1) / types.front().units;
    double share = 1.0 / double(ranksPerDevice);
    cpu.count *= ranksPerDevice;
    cpu.cores = std::max<int64_t>(1, cpu.cores / ranksPerDevice);
    cpu.memoryBytes *= share;
    cpu.memoryBandwidthBytesPerS *= share;
    for (auto &[dtype, flops] : cpu.peakFlops)
      flops *= share;
    if (threads == 0)
      threads = cpu.cores;
  }
  // One stage per pp rank, over the layers dist-split-stages gives it.
  for (int64_t s = 0; s < plan.pp; ++s) {
    StagePlan stage;
    stage.firstLayer = -1;
    for (size_t l = 0; l < layerStage.size(); ++l)
      if (layerStage[l] == s) {
        if (stage.firstLayer < 0)
          stage.firstLayer = static_cast<int64_t>(l);
        stage.lastLayer = static_cast<int64_t>(l);
      }
    stage.deviceType = 0;
    stage.units = plan.dp * plan.tp;
    stage.dp = plan.dp;
    stage.tp = plan.tp;
    plan.stages.push_back(stage);
  }
  plan.layerStage = layerStage;
  return plan;
}

/// The typed record of `plan` for the module.
PlanAttr planToAttr(MLIRContext *ctx, const Plan &plan, const PlanRequest &req,
                    PlanSearch search) {
  std::vector<DeviceType> types = listDeviceTypes(*req.cluster);
  SmallVector<PlanStageAttr> stages;
  auto layerName = [&](int64_t i) -> StringRef {
    return i >= 0 && i < static_cast<int64_t>(req.layers.size())
               ? StringRef(req.layers[i].name)
               : StringRef();
  };
  for (const StagePlan &s : plan.stages) {
    bool known =
        s.deviceType >= 0 && s.deviceType < static_cast<int64_t>(types.size());
    DeviceKind kind = known && types[s.deviceType].spec->kind == DevKind::GPU
                          ? DeviceKind::GPU
                          : DeviceKind::CPU;
    stages.push_back(PlanStageAttr::get(
        ctx, s.firstLayer, s.lastLayer, layerName(s.firstLayer),
        layerName(s.lastLayer), known ? types[s.deviceType].label : "", kind,
        s.units, s.dp, s.tp, BoolAttr::get(ctx, s.recompute),
        APFloat(s.computeTimeS), APFloat(s.commTimeS),
        APFloat(s.memoryBytesPerDevice), APFloat(s.throughput)));
  }
  return PlanAttr::get(ctx,
                       plan.objective == Objective::Cost
                           ? PlanObjective::Cost
                           : PlanObjective::StepTime,
                       search, plan.dp, plan.tp, plan.pp, plan.microBatches,
                       BoolAttr::get(ctx, plan.recompute), req.globalBatch,
                       BoolAttr::get(ctx, req.training),
                       APFloat(plan.stepTimeS), APFloat(plan.throughput),
                       APFloat(plan.costPerHour), plan.devicesUsed, stages);
}

PlanSearch searchOf(PlanStrategy strategy) {
  switch (strategy) {
  case PlanStrategy::Exact:
    return PlanSearch::Exact;
  case PlanStrategy::RL:
    return PlanSearch::RL;
  case PlanStrategy::Greedy:
    return PlanSearch::Greedy;
  case PlanStrategy::Exhaustive:
    return PlanSearch::Exhaustive;
  }
  llvm_unreachable("every strategy is handled");
}

/// Gives the ops of `func` that belong to a planned layer their stage and
/// placement; the layers are matched by name, so that `func` may be the
/// forward function of a step that was planned on a copy. Returns how many
/// ops were annotated.
int64_t annotateOps(func::FuncOp func, const FunctionCosts &costs,
                    const ModulePlan &mp) {
  MLIRContext *ctx = func.getContext();
  const Plan &plan = mp.plan;
  llvm::StringMap<int64_t> plannedLayer;
  for (auto [i, layer] : llvm::enumerate(mp.request.layers))
    plannedLayer.try_emplace(layer.name, static_cast<int64_t>(i));
  std::vector<DeviceType> types = listDeviceTypes(mp.cluster);
  int64_t numStages = static_cast<int64_t>(plan.stages.size());
  int64_t annotated = 0;
  size_t index = 0;
  for (Operation &op : func.getBody().front()) {
    int64_t local = index < costs.opLayer.size() ? costs.opLayer[index] : -1;
    ++index;
    if (local < 0 || local >= static_cast<int64_t>(costs.layers.size()))
      continue;
    auto it = plannedLayer.find(costs.layers[local].name);
    if (it == plannedLayer.end() ||
        it->second >= static_cast<int64_t>(plan.layerStage.size()))
      continue;
    int64_t stage = plan.layerStage[it->second];
    if (stage < 0 || stage >= numStages)
      continue;
    const StagePlan &s = plan.stages[stage];
    op.setAttr("dist.stage", StageAttr::get(ctx, stage, numStages));
    DeviceKind kind = DeviceKind::CPU;
    if (s.deviceType >= 0 &&
        s.deviceType < static_cast<int64_t>(types.size()) &&
        types[s.deviceType].spec->kind == DevKind::GPU)
      kind = DeviceKind::GPU;
    op.setAttr("dist.placement", PlacementAttr::get(ctx, kind, s.deviceType));
    ++annotated;
  }
  return annotated;
}

/// The layer costs of `func` at `batch` samples (a dynamic batch is bound
/// on a copy, which `copy` keeps alive).
FailureOr<FunctionCosts> costsAt(func::FuncOp func, int64_t batch,
                                 const PlanPassOptions &options,
                                 OwningOpRef<ModuleOp> &copy) {
  func::FuncOp costFunc = func;
  if (getStaticBatch(func) == 0) {
    copy = func->getParentOfType<ModuleOp>().clone();
    costFunc = cast<func::FuncOp>(copy->lookupSymbol(func.getSymName()));
    if (failed(bindBatch(costFunc, batch)))
      return failure();
  }
  return collectLayerCosts(costFunc, options.psTables,
                           /*im2colConvs=*/options.conv == ConvKernel::Im2col);
}

struct PlanPass : public dist::impl::PlanPassBase<PlanPass> {
  using PlanPassBase::PlanPassBase;
  PlanPass(const PlanPassOptions &options,
           std::function<void(OpPassManager &)> buildTrainStep)
      : PlanPassBase(options), buildTrainStep(std::move(buildTrainStep)) {}
  /// Builds the training step on the probe (instead of train-pipeline).
  std::function<void(OpPassManager &)> buildTrainStep;

  void runOnOperation() override;
  /// Writes plan.json and plan.html into `reportDir`.
  LogicalResult writeReports(const ModulePlan &mp);
};

LogicalResult PlanPass::writeReports(const ModulePlan &mp) {
  auto write = [&](StringRef file, const std::string &text) {
    SmallString<256> path(reportDir);
    llvm::sys::path::append(path, file);
    std::string err;
    auto out = openOutputFile(path, &err);
    if (!out)
      return emitError(UnknownLoc::get(&getContext())) << err, failure();
    out->os() << text;
    out->keep();
    return success();
  };
  if (failed(write("plan.json", planToJson(mp.plan, mp.request))) ||
      failed(write("plan.html", planToHtml(mp.plan, mp.request))))
    return failure();
  return success();
}

void PlanPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  PlanPassOptions options;
  options.objective = objective;
  options.minThroughput = minThroughput;
  options.strategy = strategy;
  options.globalBatch = globalBatch;
  options.threads = threads;
  options.planFile = planFile;
  options.seed = seed;
  options.rlEpisodes = rlEpisodes;
  options.psTables = psTables;
  options.conv = conv;
  options.trainPipeline = trainPipeline;
  options.schedule = schedule;
  options.microBatches = microBatches;
  options.ppSplit = ppSplit;
  FailureOr<std::unique_ptr<ModulePlan>> result =
      planModule(module, options, buildTrainStep);
  if (failed(result))
    return signalPassFailure();
  const ModulePlan &mp = **result;
  numLayers = mp.request.layers.size();
  numStages = mp.plan.stages.size();
  numAnnotated = mp.annotated;
  LLVM_DEBUG(llvm::dbgs() << "planned " << mp.request.layers.size()
                          << " layers into " << mp.plan.stages.size()
                          << " stage(s)\n");
  // plan.json and plan.html are written whether or not the layout can be
  // built; the summary only once it can (a failure is one error line).
  if (!reportDir.empty() && failed(writeReports(mp)))
    return signalPassFailure();

  std::string layout;
  if (applyLayout && !mp.meshEvaluated) {
    const Plan &plan = mp.plan;
    if (plan.stages.size() != 1) {
      // Pipeline stages (dist-split-stages cuts the step at the stages the
      // ops were given above), all of the plan's dp and tp (evaluatePlan
      // holds every stage to them): the mesh is pp x dp x tp.
      std::vector<DeviceType> types = listDeviceTypes(mp.cluster);
      int64_t numStages = static_cast<int64_t>(plan.stages.size());
      const StagePlan &first = plan.stages.front();
      for (auto [i, st] : llvm::enumerate(plan.stages)) {
        if (st.deviceType >= 0 &&
            st.deviceType < static_cast<int64_t>(types.size()) &&
            types[st.deviceType].spec->kind == DevKind::GPU) {
          emitError(UnknownLoc::get(ctx))
              << "--plan: pipeline stage " << i
              << " of the plan is placed on a GPU, and dist-opt compiles "
                 "for CPUs only for now";
          return signalPassFailure();
        }
      }
      if (zero == 1) {
        emitError(UnknownLoc::get(ctx))
            << (first.dp == 1
                    ? "--zero 1: the plan has no data parallelism (dp 1) to "
                      "shard the optimizer state over"
                    : "--zero 1: the plan has pipeline stages, and ZeRO with "
                      "pipeline stages is not supported yet");
        return signalPassFailure();
      }
      MeshSpec mesh;
      mesh.axes.push_back("pp");
      mesh.shape.push_back(numStages);
      for (auto [axis, size] :
           {std::make_pair("dp", first.dp), std::make_pair("tp", first.tp)})
        if (size > 1) {
          mesh.axes.push_back(axis);
          mesh.shape.push_back(size);
        }
      module->setAttr(DistDialect::getMeshAttrName(), MeshAttr::get(ctx, mesh));
      // The step is built at one of the plan's micro-batches (and at the
      // global batch it planned for, when the model's is dynamic).
      Builder b(ctx);
      module->setAttr(
          kPipelinePlanAttr,
          b.getDictionaryAttr(
              {b.getNamedAttr("micro_batches",
                              b.getI64IntegerAttr(plan.microBatches)),
               b.getNamedAttr("global_batch",
                              b.getI64IntegerAttr(mp.request.globalBatch))}));
      layout = "layout: --mesh " + mesh.str() + ", " +
               std::to_string(plan.microBatches) +
               " micro-batches (run with mpirun -np " +
               std::to_string(numStages * first.dp * first.tp) + ")\n";
    } else {
      const StagePlan &stage = plan.stages.front();
      if (zero == 1 && stage.dp == 1) {
        emitError(UnknownLoc::get(ctx))
            << "--zero 1: the plan has no data parallelism (dp 1) to shard the "
               "optimizer state over";
        return signalPassFailure();
      }
      MeshSpec mesh;
      if (stage.dp > 1) {
        mesh.axes.push_back("dp");
        mesh.shape.push_back(stage.dp);
      }
      if (stage.tp > 1) {
        mesh.axes.push_back("tp");
        mesh.shape.push_back(stage.tp);
      }
      if (mesh.axes.empty()) {
        layout = "layout: one process (the plan uses one device)\n";
      } else {
        module->setAttr(DistDialect::getMeshAttrName(),
                        MeshAttr::get(ctx, mesh));
        layout = "layout: --mesh " + mesh.str() + " (run with mpirun -np " +
                 std::to_string(stage.dp * stage.tp) + ")\n";
      }
    }
  }
  if (summary == SummaryStream::None)
    return;
  std::string text = planSummary(mp.plan, mp.request);
  if (mp.meshEvaluated) {
    // The layout was given, not searched: say so on the first line.
    std::string searched =
        std::string(", strategy ") + stringifyPlanStrategy(mp.plan.strategy);
    size_t at = text.find(searched);
    if (at != std::string::npos)
      text.replace(at, searched.size(), ", layout --mesh " + mp.mesh.str());
    if (mp.ranksPerDevice > 1)
      text += "ranks: " + std::to_string(mp.ranksPerDevice) +
              " share each device, " + std::to_string(mp.request.threads) +
              (mp.request.threads == 1 ? " thread" : " threads") + " each\n";
  }
  llvm::raw_ostream &os =
      summary == SummaryStream::Stdout ? llvm::outs() : llvm::errs();
  os << text << layout;
  os.flush();
}

} // namespace

std::unique_ptr<Pass> mlir::dist::createPlanPass(
    const PlanPassOptions &options,
    std::function<void(OpPassManager &)> buildTrainStep) {
  return std::make_unique<PlanPass>(options, std::move(buildTrainStep));
}

FailureOr<std::unique_ptr<ModulePlan>> mlir::dist::planModule(
    ModuleOp module, const PlanPassOptions &options,
    const std::function<void(OpPassManager &)> &buildTrainStep) {
  MLIRContext *ctx = module.getContext();
  auto clusterAttr =
      module->getAttrOfType<ClusterAttr>(DistDialect::getClusterAttrName());
  if (!clusterAttr)
    return module.emitError("module has no '")
               << DistDialect::getClusterAttrName()
               << "' attribute (dist-opt --cluster adds it)",
           failure();
  auto result = std::make_unique<ModulePlan>();
  std::string clusterError;
  std::optional<ClusterSpec> cluster =
      clusterFromAttr(clusterAttr, clusterError);
  if (!cluster)
    return module.emitError("invalid cluster attribute: ") << clusterError,
           failure();
  result->cluster = std::move(*cluster);

  // The function planned: the module's step, or one a later phase builds
  // (train-pipeline, run on a copy), or the entry function.
  func::FuncOp target = findPlannedFunction(module);
  if (!target)
    return module.emitError("nothing to plan: no public function"), failure();
  func::FuncOp func = target;
  if ((buildTrainStep || !options.trainPipeline.empty()) &&
      !target->hasAttr("dist.train_step")) {
    FailureOr<OwningOpRef<ModuleOp>> probe =
        buildProbe(module, options.trainPipeline, buildTrainStep);
    if (failed(probe))
      return failure();
    result->probe = std::move(*probe);
    func = findPlannedFunction(*result->probe);
  }

  if (options.objective == Objective::Cost && !(options.minThroughput > 0))
    return module.emitError("the cost objective needs a positive "
                            "min-throughput (samples/s)"),
           failure();
  if (options.globalBatch < 0)
    return module.emitError("global-batch must not be negative"), failure();

  // Costs need static shapes: bind a dynamic batch on a copy.
  int64_t staticBatch = getStaticBatch(func);
  if (staticBatch > 0 && options.globalBatch > 0 &&
      options.globalBatch != staticBatch)
    return func.emitError("global batch ")
               << options.globalBatch << " differs from the batch "
               << staticBatch
               << " the model is compiled for (leave the batch dynamic to "
                  "plan another one)",
           failure();
  if (options.threads < 0)
    return module.emitError("threads must not be negative"), failure();
  int64_t batch = options.globalBatch > 0 ? options.globalBatch : staticBatch;
  if (batch <= 0)
    return func.emitError("the batch dimension is dynamic: give the global "
                          "batch (--global-batch)"),
           failure();
  OwningOpRef<ModuleOp> copy;
  FailureOr<FunctionCosts> costs = costsAt(func, batch, options, copy);
  if (failed(costs))
    return failure();
  if (costs->layers.empty())
    return func.emitError("nothing to plan: the function has no ops"),
           failure();

  PlanRequest &req = result->request;
  req.layers = costs->layers;
  req.globalBatch = batch;
  req.training = costs->training;
  req.objective = options.objective;
  req.minThroughput = options.minThroughput;
  req.strategy = options.strategy;
  req.threads = options.threads;
  req.seed = options.seed;
  req.rlEpisodes = options.rlEpisodes;
  req.schedule = options.schedule;

  AnalyticCostModel costModel(dtypeOf(func));
  std::string error;
  PlanSearch search = searchOf(options.strategy);
  MeshAttr requested = getRequestedMesh(module);
  if (!options.planFile.empty()) {
    req.cluster = &result->cluster;
    auto buffer = llvm::MemoryBuffer::getFile(options.planFile);
    if (!buffer)
      return module.emitError("cannot read plan ")
                 << options.planFile << ": " << buffer.getError().message(),
             failure();
    std::optional<Plan> plan =
        planFromJson((*buffer)->getBuffer().str(), error);
    if (!plan)
      return module.emitError("plan ") << options.planFile << ": " << error,
             failure();
    if (plan->objective != req.objective)
      return module.emitError("plan ") << options.planFile << " is a "
                                       << stringifyObjective(plan->objective)
                                       << " plan, the request asks for "
                                       << stringifyObjective(req.objective),
             failure();
    if (!evaluatePlan(*plan, req, costModel, error))
      return module.emitError("plan ")
                 << options.planFile << " does not fit: " << error,
             failure();
    if (req.objective == Objective::Cost &&
        plan->throughput < req.minThroughput)
      return module.emitError("plan ")
                 << options.planFile << " reaches " << plan->throughput
                 << " samples/s, below --min-throughput " << req.minThroughput,
             failure();
    result->plan = std::move(*plan);
    search = PlanSearch::File;
  } else if (requested) {
    // The layout is given: evaluate it, so that the plan describes what
    // will run.
    result->mesh = requested.getSpec();
    // Pipeline stages: the layers and micro-batches dist-split-stages and
    // dist-build-train-step will give them.
    int64_t pp = result->mesh.sizeOf("pp");
    int64_t dp = result->mesh.sizeOf("dp");
    std::vector<int64_t> layerStage(req.layers.size(), 0);
    int64_t micro = 1;
    if (pp > 1) {
      FailureOr<std::vector<int64_t>> stages =
          layerStages(*costs, pp, options.ppSplit, func);
      if (failed(stages))
        return failure();
      layerStage = *stages;
      micro = options.microBatches;
      if (micro == 0)
        micro = ::dist_rt::pipeline::defaultMicroBatches(
            pp, batch % dp == 0 ? batch / dp : 0);
    }
    Plan plan = meshPlan(result->mesh, result->cluster, layerStage, micro,
                         result->ranksPerDevice, req.threads);
    req.cluster = &result->cluster;
    plan.objective = req.objective;
    plan.strategy = req.strategy;
    if (!evaluatePlan(plan, req, costModel, error))
      return emitError(UnknownLoc::get(ctx))
                 << "--mesh " << result->mesh.str()
                 << ": the layout does not fit the cluster: " << error,
             failure();
    if (req.objective == Objective::Cost && plan.throughput < req.minThroughput)
      return emitError(UnknownLoc::get(ctx))
                 << "--mesh " << result->mesh.str() << ": the layout reaches "
                 << plan.throughput << " samples/s, below --min-throughput "
                 << req.minThroughput,
             failure();
    result->plan = std::move(plan);
    result->meshEvaluated = true;
    search = PlanSearch::Mesh;
  } else {
    req.cluster = &result->cluster;
    std::optional<Plan> plan = makePlan(req, costModel, error);
    if (!plan)
      return module.emitError(error), failure();
    result->plan = std::move(*plan);
  }

  // Record the plan on the module and the stage / placement of each op.
  module->setAttr(DistDialect::getPlanAttrName(),
                  planToAttr(ctx, result->plan, req, search));
  if (func == target) {
    result->annotated = annotateOps(target, *costs, *result);
  } else {
    // Planned on a copy: the forward function's ops carry the stages of
    // their layers (the step copies them with the forward graph).
    OwningOpRef<ModuleOp> targetCopy;
    ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
    FailureOr<FunctionCosts> targetCosts =
        costsAt(target, batch, options, targetCopy);
    if (succeeded(targetCosts))
      result->annotated = annotateOps(target, *targetCosts, *result);
  }
  return result;
}
