//===- PlanSummary.cpp - The few-line plan summary for stdout -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// planSummary: the objective and strategy, the degrees, one line per stage
// (the first few of a long pipeline) with its layers, device type, memory
// and times, and the predicted step time, throughput and cost.
//
//===----------------------------------------------------------------------===//

#include "PlanReportInternal.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::plan_report;

/// Stages listed one per line in the summary; longer pipelines list the
/// first ones and say how many more there are.
static constexpr size_t kSummaryStages = 10;

std::string mlir::dist::planSummary(const Plan &plan, const PlanRequest &req) {
  std::vector<DeviceType> types = deviceTypesOf(req);
  std::string text;
  llvm::raw_string_ostream os(text);

  os << "plan: objective " << stringifyObjective(plan.objective)
     << ", strategy " << stringifyPlanStrategy(plan.strategy);
  if (req.cluster)
    os << ", cluster '" << validUtf8(req.cluster->name) << "' ("
       << plan.devicesUsed << " of " << req.cluster->totalDevices()
       << " devices used)";
  os << "\n";

  os << "degrees: dp " << plan.dp << ", tp " << plan.tp << ", pp " << plan.pp
     << "; " << plan.microBatches
     << (plan.microBatches == 1 ? " micro-batch" : " micro-batches")
     << "; recompute " << (plan.recompute ? "on" : "off") << "; global batch "
     << req.globalBatch << " (" << (req.training ? "training" : "inference")
     << ")";
  if (plan.objective == Objective::Cost)
    os << "; throughput floor " << formatFixed(req.minThroughput, 1)
       << " samples/s";
  os << "\n";

  size_t shown = plan.stages.size() <= kSummaryStages ? plan.stages.size()
                                                      : kSummaryStages - 1;
  for (size_t i = 0; i < shown; ++i) {
    const StagePlan &stage = plan.stages[i];
    os << "stage " << i << ": " << describeLayerRange(stage, req) << " on "
       << deviceLabel(types, stage.deviceType) << " x" << stage.units;
    if (stage.dp != stage.units || stage.tp != 1)
      os << " (dp " << stage.dp << ", tp " << stage.tp << ")";
    if (stage.recompute != plan.recompute)
      os << (stage.recompute ? ", recompute" : ", no recompute");
    os << "; " << formatBytes(stage.memoryBytesPerDevice) << " per device";
    double capacity = deviceMemoryBytes(types, stage.deviceType);
    if (capacity > 0)
      os << " of " << formatBytes(capacity);
    os << "; compute " << formatMs(stage.computeTimeS) << " ms, comm "
       << formatMs(stage.commTimeS) << " ms\n";
  }
  if (shown < plan.stages.size())
    os << "... " << plan.stages.size() - shown
       << " more stages (plan.json and plan.html list all)\n";

  os << "predicted: step " << formatMs(plan.stepTimeS) << " ms, "
     << formatFixed(plan.throughput, 1) << " samples/s, "
     << formatFixed(plan.costPerHour, 2) << " per hour\n";
  if (!plan.stageBubble.empty()) {
    double mean = 0;
    for (double b : plan.stageBubble)
      mean += b;
    mean /= static_cast<double>(plan.stageBubble.size());
    int64_t held = 0;
    for (int64_t h : plan.stagePeakInFlight)
      held = std::max(held, h);
    double scheduled = 0;
    for (const TimelineEvent &e : plan.timeline)
      scheduled = std::max(scheduled, e.endS);
    os << "pipeline: " << ::dist_rt::pipeline::scheduleName(req.schedule)
       << ", step " << formatMs(scheduled) << " ms as scheduled"
       << ", predicted bubble " << formatFixed(mean, 3)
       << " (idle over busy, mean of the stages; (p-1)/m "
       << formatFixed(::dist_rt::pipeline::analyticBubble(
                          static_cast<int32_t>(plan.stageBubble.size()),
                          static_cast<int32_t>(plan.microBatches)),
                      3)
       << "), at most " << held
       << " micro-batches held by a stage (action lists in plan.json)\n";
  }
  os << "planning: " << formatMs(plan.planningTimeS) << " ms, "
     << plan.evaluated << " candidate plans evaluated\n";
  return text;
}
