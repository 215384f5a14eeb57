//===- Planner.h - Global planner over the cost model ----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Chooses how to run a model on a cluster: data / tensor / pipeline degrees,
// the stage partition of layers, micro-batch count, recomputation, and the
// device type of each stage, within every device's memory. Two objectives:
//  - StepTime: minimal predicted step time on the cluster.
//  - Cost (HeterPS): minimal money per hour subject to a throughput floor.
//    Each layer goes to a device type; consecutive layers of one type form a
//    stage; each stage is provisioned with enough units of its type (data
//    parallel inside the stage) to reach the throughput; the pipeline's
//    throughput is its slowest stage's.
// Four strategies: Exact (dynamic programming, optimal under the cost
// model), RL (HeterPS's REINFORCE scheduler), Greedy and Exhaustive (for
// small instances and tests). Plain C++, no IR.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_PLANNER_PLANNER_H
#define DIST_PLANNER_PLANNER_H

#include "dist/Planner/Cluster.h"
#include "dist/Planner/CostModel.h"
#include "dist_rt/pipeline_schedule.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dist {

enum class Objective { StepTime, Cost };
enum class PlanStrategy { Exact, RL, Greedy, Exhaustive };

const char *stringifyObjective(Objective o);
const char *stringifyPlanStrategy(PlanStrategy s);
std::optional<PlanStrategy> parsePlanStrategy(const std::string &s);
std::optional<Objective> parseObjective(const std::string &s);

/// A device type of the cluster: one DeviceSpec of one NodeSpec, with all
/// its copies (node.count * device.count units).
struct DeviceType {
  int64_t nodeIndex = 0;   ///< into ClusterSpec::nodes
  int64_t deviceIndex = 0; ///< into NodeSpec::devices
  int64_t units = 0;       ///< total devices of this type
  int64_t unitsPerNode = 0;
  const DeviceSpec *spec = nullptr;
  const NodeSpec *node = nullptr;
  std::string label; ///< "<node name>/<model>" for reports
};

/// Flattens the cluster into device types, in file order.
std::vector<DeviceType> listDeviceTypes(const ClusterSpec &cluster);

struct PlanRequest {
  std::vector<LayerCost> layers;
  const ClusterSpec *cluster = nullptr;
  int64_t globalBatch = 1;
  bool training = true;
  Objective objective = Objective::StepTime;
  double minThroughput = 0; ///< samples/s, Cost objective only (> 0 there)
  PlanStrategy strategy = PlanStrategy::Exact;
  int64_t threads = 0; ///< CPU threads per rank (0: all cores)
  uint64_t seed = 1;   ///< RL
  int64_t rlEpisodes = 400;
  /// Largest tensor-parallel degree considered (tp stays inside a node).
  int64_t maxTensorParallel = 8;
  /// Bound for Exhaustive (number of assignments); larger instances are
  /// refused with an error.
  int64_t exhaustiveLimit = 2000000;
  /// The pipeline schedule the timeline of a training plan with stages
  /// follows (dist-opt --schedule).
  ::dist_rt::pipeline::ScheduleKind schedule =
      ::dist_rt::pipeline::ScheduleKind::OneFOneB;
};

/// One pipeline stage.
struct StagePlan {
  int64_t firstLayer = 0; ///< inclusive
  int64_t lastLayer = 0;  ///< inclusive
  int64_t deviceType = 0; ///< index into listDeviceTypes()
  int64_t units = 0;      ///< devices given to the stage (dp * tp)
  int64_t dp = 1;
  int64_t tp = 1;
  bool recompute = false;
  double computeTimeS = 0; ///< per step, fwd + bwd + update, one unit
  double commTimeS = 0;    ///< per step: tp/dp collectives, sends
  double memoryBytesPerDevice = 0;
  double throughput = 0; ///< samples/s this stage sustains
};

/// One bar of the per-device timeline of a step (for plan.html).
struct TimelineEvent {
  int64_t stage = 0;
  std::string what; ///< "fwd", "bwd", "update", "allreduce", "send", ...
  int64_t microBatch = -1;
  double startS = 0;
  double endS = 0;
};

/// Predicted time of one layer per step on one device of its stage.
struct LayerTime {
  double fwdS = 0;
  double bwdS = 0; ///< with the forward recomputation when recompute is on
  double updateS = 0;
};

struct Plan {
  Objective objective = Objective::StepTime;
  PlanStrategy strategy = PlanStrategy::Exact;
  int64_t dp = 1, tp = 1, pp = 1; ///< StepTime: uniform degrees
  int64_t microBatches = 1;
  bool recompute = false;
  std::vector<StagePlan> stages;
  std::vector<int64_t> layerStage; ///< stage of each layer
  /// Per layer, as evaluatePlan predicts it (explains the stage times).
  std::vector<LayerTime> layerTimes;
  double stepTimeS = 0;
  double throughput = 0;  ///< samples/s
  double costPerHour = 0; ///< sum of units * price over stages
  int64_t devicesUsed = 0;
  std::vector<TimelineEvent> timeline;
  /// A training plan with stages: per stage, the schedule's action list
  /// (pipeline_schedule.h's formatActions), the predicted bubble (idle time
  /// over busy time in the step's micro-batch part) and the most
  /// micro-batches whose activations it holds at once.
  std::vector<std::string> stageActions;
  std::vector<double> stageBubble;
  std::vector<int64_t> stagePeakInFlight;
  double planningTimeS = 0; ///< wall time of the search
  int64_t evaluated = 0;    ///< candidate plans the search scored
};

/// Runs the requested strategy. Returns nullopt with a one-line `error`
/// when nothing fits (e.g. "no plan fits: layer 'h.3' needs 3.1 GiB per
/// device, largest device has 2.0 GiB") or the request is invalid.
std::optional<Plan> makePlan(const PlanRequest &req, const CostModel &cm,
                             std::string &error);

/// Recomputes every derived figure of `plan` (stage times, memory, step time,
/// throughput, cost, timeline) from its decisions (degrees, stage ranges,
/// device types, units, recompute). Returns false with `error` naming the
/// reason when the plan does not fit: memory of a device exceeded, more
/// units than the cluster has, layers not covered, batch not divisible.
bool evaluatePlan(Plan &plan, const PlanRequest &req, const CostModel &cm,
                  std::string &error);

/// plan.json (schema documented in docs/planner.md) and its reader; the
/// reader validates structure and names the offending key.
std::string planToJson(const Plan &plan, const PlanRequest &req);
std::optional<Plan> planFromJson(const std::string &json, std::string &error);
/// A few readable lines for stdout.
std::string planSummary(const Plan &plan, const PlanRequest &req);
/// A self-contained HTML page (inline SVG, no network): placement diagram
/// of layers on device types and a timeline of one step per stage.
std::string planToHtml(const Plan &plan, const PlanRequest &req);

} // namespace mlir::dist

#endif // DIST_PLANNER_PLANNER_H
