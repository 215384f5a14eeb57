//===- Plan.cpp - The planning pass -----------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-plan: collects the layer costs of the training step (or the entry
// function), runs the planner for the module's cluster and records the
// result on the IR (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "dist/Transforms/Passes.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Transforms/LayerCosts.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/MemoryBuffer.h"

namespace mlir::dist {
#define GEN_PASS_DEF_PLANPASS
#include "dist/Transforms/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

#define DEBUG_TYPE "dist-plan"

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

struct PlanPass : public dist::impl::PlanPassBase<PlanPass> {
  using PlanPassBase::PlanPassBase;

  void runOnOperation() override {
    PlanPassOptions opts;
    opts.objective = objective;
    opts.minThroughput = minThroughput;
    opts.strategy = strategy;
    opts.globalBatch = globalBatch;
    opts.threads = threads;
    opts.planFile = planFile;
    opts.seed = seed;
    opts.rlEpisodes = rlEpisodes;
    opts.psTables = psTables;
    opts.conv = conv;
    FailureOr<std::unique_ptr<ModulePlan>> result =
        planModule(getOperation(), opts);
    if (failed(result))
      return signalPassFailure();
    numLayers = (*result)->request.layers.size();
    numStages = (*result)->plan.stages.size();
    markAllAnalysesPreserved();
  }
};

} // namespace

FailureOr<std::unique_ptr<ModulePlan>>
mlir::dist::planModule(ModuleOp module, const PlanPassOptions &options) {
  MLIRContext *ctx = module.getContext();
  auto clusterAttr =
      module->getAttrOfType<ClusterAttr>(DistDialect::getClusterAttrName());
  if (!clusterAttr)
    return module.emitError("module has no '")
               << DistDialect::getClusterAttrName()
               << "' attribute (dist-opt --cluster adds it)",
           failure();
  auto result = std::make_unique<ModulePlan>();
  std::optional<ClusterSpec> cluster = clusterAttr.getCluster();
  if (!cluster)
    return module.emitError("invalid cluster attribute"), failure();
  result->cluster = std::move(*cluster);

  func::FuncOp func = findPlannedFunction(module);
  if (!func)
    return module.emitError("nothing to plan: no public function"), failure();

  std::optional<Objective> objective = parseObjective(options.objective);
  if (!objective)
    return module.emitError("unknown objective '")
               << options.objective << "' (expected step-time or cost)",
           failure();
  std::optional<PlanStrategy> strategy = parsePlanStrategy(options.strategy);
  if (!strategy)
    return module.emitError("unknown planner '")
               << options.strategy
               << "' (expected exact, rl, greedy or exhaustive)",
           failure();
  if (*objective == Objective::Cost && !(options.minThroughput > 0))
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
  func::FuncOp costFunc = func;
  if (staticBatch == 0) {
    copy = module.clone();
    costFunc = cast<func::FuncOp>(copy->lookupSymbol(func.getSymName()));
    if (failed(bindBatch(costFunc, batch)))
      return failure();
  }
  if (options.conv != "auto" && options.conv != "direct" &&
      options.conv != "im2col")
    return module.emitError("unknown conv kernel '")
               << options.conv << "' (expected auto, direct or im2col)",
           failure();
  FailureOr<FunctionCosts> costs = collectLayerCosts(
      costFunc, options.psTables, /*im2colConvs=*/options.conv == "im2col");
  if (failed(costs))
    return failure();
  if (costs->layers.empty())
    return func.emitError("nothing to plan: the function has no ops"),
           failure();

  PlanRequest &req = result->request;
  req.layers = costs->layers;
  req.cluster = &result->cluster;
  req.globalBatch = batch;
  req.training = costs->training;
  req.objective = *objective;
  req.minThroughput = options.minThroughput;
  req.strategy = *strategy;
  req.threads = options.threads;
  req.seed = options.seed;
  req.rlEpisodes = options.rlEpisodes;

  AnalyticCostModel costModel(dtypeOf(func));
  std::string error;
  if (!options.planFile.empty()) {
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
  } else {
    std::optional<Plan> plan = makePlan(req, costModel, error);
    if (!plan)
      return module.emitError(error), failure();
    result->plan = std::move(*plan);
  }

  // Record the plan on the module and the stage / placement of each op.
  const Plan &plan = result->plan;
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse(planToJson(plan, req));
  if (!json)
    return module.emitError("internal error: plan.json does not parse: ")
               << llvm::toString(json.takeError()),
           failure();
  // The timeline is for plan.html; the IR keeps the decisions and figures.
  if (llvm::json::Object *obj = json->getAsObject())
    obj->erase("timeline");
  module->setAttr(DistDialect::getPlanAttrName(), jsonToAttr(ctx, *json));
  std::vector<DeviceType> types = listDeviceTypes(result->cluster);
  int64_t numStages = static_cast<int64_t>(plan.stages.size());
  size_t index = 0;
  for (Operation &op : func.getBody().front()) {
    int64_t layer = index < costs->opLayer.size() ? costs->opLayer[index] : -1;
    ++index;
    if (layer < 0 || layer >= static_cast<int64_t>(plan.layerStage.size()))
      continue;
    int64_t stage = plan.layerStage[layer];
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
  }
  return result;
}
