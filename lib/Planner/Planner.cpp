//===- Planner.cpp - Global planner over the cost model -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// makePlan: checks the request, runs the objective's search and lets
// evaluatePlan fill in the plan's figures; the names of the objectives and
// strategies, and the device types of a cluster. The planner's other files:
//  - PlannerInternal.h: the model every strategy and evaluatePlan share,
//    PlanModel.cpp its out-of-line pieces;
//  - EvaluatePlan.cpp: a plan's figures from its decisions;
//  - StepTimeSearch.cpp and StepTimeExact.cpp: the StepTime objective;
//  - CostSearch.cpp: the Cost (HeterPS) objective.
// The plan reports live in PlanJson.cpp, PlanSummary.cpp and PlanHtml.cpp.
//
//===----------------------------------------------------------------------===//

#include "PlannerInternal.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::planner;

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

const char *mlir::dist::stringifyObjective(Objective o) {
  switch (o) {
  case Objective::StepTime:
    return "step-time";
  case Objective::Cost:
    return "cost";
  }
  return "unknown";
}

const char *mlir::dist::stringifyPlanStrategy(PlanStrategy s) {
  switch (s) {
  case PlanStrategy::Exact:
    return "exact";
  case PlanStrategy::RL:
    return "rl";
  case PlanStrategy::Greedy:
    return "greedy";
  case PlanStrategy::Exhaustive:
    return "exhaustive";
  }
  return "unknown";
}

std::optional<PlanStrategy>
mlir::dist::parsePlanStrategy(const std::string &s) {
  for (PlanStrategy strategy : {PlanStrategy::Exact, PlanStrategy::RL,
                                PlanStrategy::Greedy, PlanStrategy::Exhaustive})
    if (s == stringifyPlanStrategy(strategy))
      return strategy;
  return std::nullopt;
}

std::optional<Objective> mlir::dist::parseObjective(const std::string &s) {
  for (Objective objective : {Objective::StepTime, Objective::Cost})
    if (s == stringifyObjective(objective))
      return objective;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Device types
//===----------------------------------------------------------------------===//

std::vector<DeviceType>
mlir::dist::listDeviceTypes(const ClusterSpec &cluster) {
  std::vector<DeviceType> types;
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    const NodeSpec &node = cluster.nodes[n];
    for (size_t d = 0; d < node.devices.size(); ++d) {
      const DeviceSpec &dev = node.devices[d];
      DeviceType type;
      type.nodeIndex = static_cast<int64_t>(n);
      type.deviceIndex = static_cast<int64_t>(d);
      type.unitsPerNode = std::max<int64_t>(0, dev.count);
      type.units = std::max<int64_t>(0, node.count) * type.unitsPerNode;
      type.spec = &dev;
      type.node = &node;
      type.label = node.name + "/" + dev.model;
      types.push_back(std::move(type));
    }
  }
  return types;
}

//===----------------------------------------------------------------------===//
// makePlan
//===----------------------------------------------------------------------===//

namespace {

bool validateRequest(const PlanRequest &req, std::string &error) {
  if (!req.cluster) {
    error = "no cluster given";
    return false;
  }
  if (req.layers.empty()) {
    error = "the model has no layers";
    return false;
  }
  if (req.globalBatch < 1) {
    error = "the global batch must be at least 1";
    return false;
  }
  if (req.maxTensorParallel < 1) {
    error = "the largest tensor-parallel degree must be at least 1";
    return false;
  }
  if (req.objective == Objective::Cost && !(req.minThroughput > 0)) {
    error = "the cost objective needs a throughput floor above 0 samples/s";
    return false;
  }
  if (req.strategy == PlanStrategy::RL && req.rlEpisodes < 1) {
    error = "RL needs at least one episode";
    return false;
  }
  int64_t devices = 0;
  for (const DeviceType &type : listDeviceTypes(*req.cluster))
    devices += type.units;
  if (devices == 0) {
    error = "the cluster has no devices";
    return false;
  }
  return true;
}

} // namespace

std::optional<Plan> mlir::dist::makePlan(const PlanRequest &req,
                                         const CostModel &cm,
                                         std::string &error) {
  auto start = std::chrono::steady_clock::now();
  if (!validateRequest(req, error))
    return std::nullopt;
  Problem p(req, cm);
  int64_t scored = 0;
  error.clear();
  std::optional<Plan> plan = req.objective == Objective::StepTime
                                 ? planStepTime(p, scored, error)
                                 : planCost(p, scored, error);
  if (!plan)
    return std::nullopt;
  plan->strategy = req.strategy;
  double searchStepS = plan->stepTimeS, searchCost = plan->costPerHour;
  std::string evalError;
  if (!evaluatePlan(*plan, req, cm, evalError)) {
    assert(false && "the planner made a plan evaluatePlan rejects");
    error = "internal error: the chosen plan does not validate: " + evalError;
    return std::nullopt;
  }
  (void)searchStepS;
  (void)searchCost;
  assert((req.objective != Objective::StepTime ||
          std::fabs(plan->stepTimeS - searchStepS) <=
              1e-9 * std::max(1e-300, std::fabs(searchStepS))) &&
         "search and evaluatePlan disagree on the step time");
  assert((req.objective != Objective::Cost ||
          std::fabs(plan->costPerHour - searchCost) <=
              1e-9 * std::max(1e-300, std::fabs(searchCost))) &&
         "search and evaluatePlan disagree on the cost");
  plan->evaluated = scored;
  plan->planningTimeS =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return plan;
}
