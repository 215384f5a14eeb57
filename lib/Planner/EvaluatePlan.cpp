//===- EvaluatePlan.cpp - A plan's figures from its decisions -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// evaluatePlan: checks that a plan's decisions (degrees, stage ranges,
// device types, units, recompute) fit the request and the cluster, and
// recomputes every derived figure from them with the model the searches use
// (PlannerInternal.h): stage times, memory per device, step time,
// throughput, cost, per-layer times and the timeline of one step (for
// StepTime plans the pipeline schedule's, with each stage's action list,
// bubble and activations held; one bar per phase for Cost plans).
//
//===----------------------------------------------------------------------===//

#include "PlannerInternal.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::planner;

namespace pl = ::dist_rt::pipeline;

namespace {

/// Share of a stage's backward that computes input gradients (the rest:
/// weight gradients), for the schedules that split them (ZB-H1): a
/// product's backward is one product of each kind, of the forward's size.
constexpr double kBackwardInputShare = 0.5;

/// The timeline of one training step with stages, as the schedule runs it
/// (dist_rt/pipeline_schedule.h, the action lists the runtime executes):
/// every stage's forwards and backward parts at the cost model's times,
/// transfers as latency between stages; then each stage's tail. Returns
/// when each stage's micro-batch part ends.
std::vector<double> simulateTraining(Plan &plan,
                                     const std::vector<StepStage> &evals,
                                     pl::ScheduleKind kind) {
  int64_t pp = static_cast<int64_t>(evals.size());
  auto m = static_cast<int32_t>(plan.microBatches);
  std::vector<pl::StageTimes> times;
  for (const StepStage &ev : evals)
    times.push_back({ev.forwardS, ev.backwardS * kBackwardInputShare,
                     ev.backwardS * (1 - kBackwardInputShare), ev.sendS});
  pl::Simulation sim = pl::simulate(kind, times, m);
  std::vector<double> freeAt(pp, 0);
  for (const pl::TimelineEntry &e : sim.timeline) {
    const char *what = e.action.kind == pl::ActionKind::Forward    ? "fwd"
                       : e.action.kind == pl::ActionKind::Backward ? "bwd"
                       : e.action.kind == pl::ActionKind::BackwardInput
                           ? "bwd_input"
                           : "bwd_weight";
    plan.timeline.push_back(
        {e.stage, what, e.action.microBatch, e.startS, e.endS});
    freeAt[e.stage] = std::max(freeAt[e.stage], e.endS);
  }
  if (pp > 1) {
    for (int64_t s = 0; s < pp; ++s)
      plan.stageActions.push_back(pl::formatActions(pl::stageActions(
          kind, static_cast<int32_t>(s), static_cast<int32_t>(pp), m, times)));
    plan.stageBubble = sim.bubble;
    plan.stagePeakInFlight.assign(sim.peakInFlight.begin(),
                                  sim.peakInFlight.end());
  }
  return freeAt;
}

/// The timeline of one step: a training step as simulateTraining predicts
/// it, an inference step's forwards in GPipe order; then each stage's tail.
void fillStepTimeline(Plan &plan, const std::vector<StepStage> &evals,
                      bool training, pl::ScheduleKind schedule) {
  int64_t pp = static_cast<int64_t>(evals.size());
  int64_t m = plan.microBatches;
  std::vector<double> freeAt(pp, 0);
  if (training) {
    freeAt = simulateTraining(plan, evals, schedule);
  } else {
    // Each forward starts when the stage is free and its input is there
    // (sent from the stage before, the sender busy while it sends).
    std::vector<double> ready(m, 0);
    for (int64_t s = 0; s < pp; ++s) {
      const StepStage &ev = evals[s];
      for (int64_t i = 0; i < m; ++i) {
        double start = std::max(freeAt[s], ready[i]);
        double end = start + ev.forwardS;
        plan.timeline.push_back({s, "fwd", i, start, end});
        if (ev.sendS > 0) {
          plan.timeline.push_back({s, "send", i, end, end + ev.sendS});
          end += ev.sendS;
        }
        ready[i] = freeAt[s] = end;
      }
    }
  }
  for (int64_t s = 0; s < pp; ++s) {
    double t = freeAt[s];
    const StageTail &tail = evals[s].tail;
    if (tail.allreduceS > 0) {
      plan.timeline.push_back({s, "allreduce", -1, t, t + tail.allreduceS});
      t += tail.allreduceS;
    }
    if (tail.updateS > 0)
      plan.timeline.push_back({s, "update", -1, t, t + tail.updateS});
  }
}

bool checkCoverage(const Plan &plan, int64_t numLayers, std::string &error) {
  if (plan.stages.empty()) {
    error = "the plan has no stages";
    return false;
  }
  int64_t expected = 0;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StagePlan &st = plan.stages[s];
    if (st.firstLayer != expected) {
      error = "stages do not cover the layers contiguously: stage " +
              std::to_string(s) + " starts at layer " +
              std::to_string(st.firstLayer) + ", expected " +
              std::to_string(expected);
      return false;
    }
    if (st.lastLayer < st.firstLayer || st.lastLayer >= numLayers) {
      error = "stage " + std::to_string(s) + " has layers " +
              std::to_string(st.firstLayer) + " to " +
              std::to_string(st.lastLayer) + ", the model has " +
              std::to_string(numLayers) + " layers";
      return false;
    }
    expected = st.lastLayer + 1;
  }
  if (expected != numLayers) {
    error = "stages cover layers 0 to " + std::to_string(expected - 1) +
            ", the model has " + std::to_string(numLayers) + " layers";
    return false;
  }
  return true;
}

std::string memoryError(const Problem &p, int64_t stage, int64_t k,
                        double needBytes) {
  return "stage " + std::to_string(stage) + " on " + p.types[k].label +
         " needs " + formatGiB(needBytes) + " per device, has " +
         formatGiB(p.memoryOf(k));
}

bool evaluateStepPlan(Plan &plan, const Problem &p, std::string &error) {
  const PlanRequest &req = p.req;
  int64_t pp = static_cast<int64_t>(plan.stages.size());
  if (plan.dp < 1 || plan.tp < 1 || plan.microBatches < 1) {
    error = "dp, tp and micro-batches must be at least 1";
    return false;
  }
  if (plan.pp != pp) {
    error = "the plan has pp " + std::to_string(plan.pp) + " but " +
            std::to_string(pp) + " stages";
    return false;
  }
  if (plan.recompute && !req.training) {
    error = "recomputation only applies to training";
    return false;
  }
  if (plan.dp < 1 || plan.microBatches < 1 || plan.dp > req.globalBatch ||
      plan.microBatches > req.globalBatch ||
      req.globalBatch % (plan.dp * plan.microBatches) != 0) {
    error = "global batch " + std::to_string(req.globalBatch) +
            " is not divisible by dp " + std::to_string(plan.dp) + " * " +
            std::to_string(plan.microBatches) + " micro-batches";
    return false;
  }
  for (int64_t s = 0; s < pp; ++s) {
    const StagePlan &st = plan.stages[s];
    if (st.dp != plan.dp || st.tp != plan.tp || st.units != plan.dp * plan.tp) {
      error = "stage " + std::to_string(s) + " has dp " +
              std::to_string(st.dp) + ", tp " + std::to_string(st.tp) +
              " and " + std::to_string(st.units) + " units; the plan has dp " +
              std::to_string(plan.dp) + " and tp " + std::to_string(plan.tp);
      return false;
    }
    const DeviceType &type = p.types[st.deviceType];
    if (plan.tp > type.unitsPerNode) {
      error = "stage " + std::to_string(s) + " has tp " +
              std::to_string(plan.tp) + " but " + type.label + " has " +
              std::to_string(type.unitsPerNode) + " devices per node";
      return false;
    }
  }
  StepCandidate c;
  c.dp = plan.dp;
  c.tp = plan.tp;
  c.pp = pp;
  c.microBatches = plan.microBatches;
  c.recompute = plan.recompute;
  std::vector<StepStage> evals;
  double maxT = 0, maxTail = 0;
  for (int64_t s = 0; s < pp; ++s) {
    const StagePlan &st = plan.stages[s];
    int64_t next = s + 1 < pp ? plan.stages[s + 1].deviceType : -1;
    StepStage ev = evalStepStage(p, c, s, st.firstLayer, st.lastLayer,
                                 st.deviceType, next);
    if (ev.memoryBytes > p.memoryOf(st.deviceType)) {
      error = memoryError(p, s, st.deviceType, ev.memoryBytes);
      return false;
    }
    maxT = std::max(maxT, ev.timeS);
    maxTail = std::max(maxTail, ev.tail.totalS);
    evals.push_back(ev);
  }
  double g = static_cast<double>(req.globalBatch);
  double m = static_cast<double>(plan.microBatches);
  for (int64_t s = 0; s < pp; ++s) {
    StagePlan &st = plan.stages[s];
    const StepStage &ev = evals[s];
    st.recompute = plan.recompute;
    st.computeTimeS = m * ev.computeS + ev.tail.updateS;
    st.commTimeS = m * ev.commS + ev.tail.allreduceS;
    st.memoryBytesPerDevice = ev.memoryBytes;
    double stageStep = m * ev.timeS + ev.tail.totalS;
    st.throughput = stageStep > 0 ? g / stageStep : 0;
  }
  plan.stepTimeS = stepTimeOf(plan.microBatches, pp, maxT, maxTail);
  plan.throughput = plan.stepTimeS > 0 ? g / plan.stepTimeS : 0;
  fillStepTimeline(plan, evals, req.training, req.schedule);
  return true;
}

bool evaluateCostPlan(Plan &plan, const Problem &p, std::string &error) {
  int64_t pp = static_cast<int64_t>(plan.stages.size());
  if (plan.pp != pp) {
    error = "the plan has pp " + std::to_string(plan.pp) + " but " +
            std::to_string(pp) + " stages";
    return false;
  }
  std::vector<CostStage> evals;
  std::vector<double> fwdPerSample, bwdPerSample;
  double worstStep = 0;
  for (int64_t s = 0; s < pp; ++s) {
    StagePlan &st = plan.stages[s];
    if (st.units < 1 || st.tp != 1) {
      error = "stage " + std::to_string(s) +
              " must have at least one unit and tp 1 under the cost objective";
      return false;
    }
    int64_t k = st.deviceType;
    CostSums sums;
    double fwd = 0, bwd = 0;
    double g = static_cast<double>(p.req.globalBatch);
    for (int64_t l = st.firstLayer; l <= st.lastLayer; ++l) {
      sums.add(p, l, costLayerPerSample(p, l, k), costLayerUpdate(p, l, k));
      const LayerCost &layer = p.layer(l);
      fwd +=
          p.cm.phaseTimeS(layer, layer.fwd, p.dev(k), g, 1, p.req.threads) / g;
      if (p.req.training)
        bwd +=
            p.cm.phaseTimeS(layer, layer.bwd, p.dev(k), g, 1, p.req.threads) /
            g;
    }
    int64_t next = s + 1 < pp ? plan.stages[s + 1].deviceType : -1;
    double send =
        costSendPerSample(p, k, st.lastLayer, linkKindBetween(p, k, next));
    CostStage ev = costStageAt(p, sums, k, send, st.units);
    if (ev.memoryBytes > p.memoryOf(k)) {
      error = memoryError(p, s, k, ev.memoryBytes);
      return false;
    }
    st.dp = st.units;
    st.recompute = false;
    double perUnit = static_cast<double>(ev.perUnitSamples);
    st.computeTimeS = perUnit * sums.perSampleS + ev.updateS;
    st.commTimeS = perUnit * send + ev.allreduceS;
    st.memoryBytesPerDevice = ev.memoryBytes;
    st.throughput = ev.throughput;
    worstStep = std::max(worstStep, ev.stepS);
    evals.push_back(ev);
    fwdPerSample.push_back(fwd);
    bwdPerSample.push_back(bwd);
  }
  plan.stepTimeS = worstStep;
  plan.throughput =
      worstStep > 0 ? static_cast<double>(p.req.globalBatch) / worstStep : 0;
  for (int64_t s = 0; s < pp; ++s) {
    const CostStage &ev = evals[s];
    double perUnit = static_cast<double>(ev.perUnitSamples);
    double t = 0;
    auto bar = [&](const char *what, double length) {
      if (length <= 0 && std::string(what) != "fwd")
        return;
      plan.timeline.push_back({s, what, -1, t, t + length});
      t += length;
    };
    bar("fwd", perUnit * fwdPerSample[s]);
    bar("bwd", perUnit * bwdPerSample[s]);
    bar("send", perUnit * ev.sendPerSampleS);
    bar("allreduce", ev.allreduceS);
    bar("update", ev.updateS);
  }
  return true;
}

} // namespace

bool mlir::dist::evaluatePlan(Plan &plan, const PlanRequest &req,
                              const CostModel &cm, std::string &error) {
  if (!req.cluster) {
    error = "no cluster given";
    return false;
  }
  if (req.globalBatch < 1) {
    error = "the global batch must be at least 1";
    return false;
  }
  Problem p(req, cm);
  if (!checkCoverage(plan, p.numLayers, error))
    return false;
  std::vector<int64_t> used(p.numTypes, 0);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StagePlan &st = plan.stages[s];
    if (st.deviceType < 0 || st.deviceType >= p.numTypes) {
      error = "stage " + std::to_string(s) + " names device type " +
              std::to_string(st.deviceType) + ", the cluster has " +
              std::to_string(p.numTypes);
      return false;
    }
    used[st.deviceType] += st.units;
  }
  for (int64_t k = 0; k < p.numTypes; ++k) {
    if (used[k] <= p.types[k].units)
      continue;
    error = "device type " + p.types[k].label + " has " +
            std::to_string(p.types[k].units) + " devices, the plan uses " +
            std::to_string(used[k]);
    return false;
  }
  plan.timeline.clear();
  plan.layerStage.assign(p.numLayers, 0);
  for (size_t s = 0; s < plan.stages.size(); ++s)
    for (int64_t l = plan.stages[s].firstLayer; l <= plan.stages[s].lastLayer;
         ++l)
      plan.layerStage[l] = static_cast<int64_t>(s);
  bool ok = plan.objective == Objective::StepTime
                ? evaluateStepPlan(plan, p, error)
                : evaluateCostPlan(plan, p, error);
  if (!ok) {
    plan.timeline.clear();
    return false;
  }
  // Per-layer figures on one device of each stage: the samples it runs per
  // step in micro-batches of the plan's size (the cost objective runs whole
  // per-unit batches), at the stage's tensor-parallel degree.
  plan.layerTimes.assign(p.numLayers, LayerTime());
  bool stepTime = plan.objective == Objective::StepTime;
  for (const StagePlan &st : plan.stages) {
    // StepTime plans carry uniform degrees on the plan, cost plans per stage.
    int64_t dp = stepTime ? plan.dp : st.dp;
    int64_t stageTp = stepTime ? plan.tp : 1;
    bool recompute = stepTime ? plan.recompute : false;
    double perUnit = static_cast<double>(p.req.globalBatch) /
                     static_cast<double>(std::max<int64_t>(1, dp));
    double micro =
        stepTime ? static_cast<double>(std::max<int64_t>(1, plan.microBatches))
                 : 1.0;
    const DeviceSpec &dev = p.dev(st.deviceType);
    for (int64_t l = st.firstLayer; l <= st.lastLayer; ++l) {
      const LayerCost &layer = p.layer(l);
      int64_t tp = layerTp(layer, stageTp);
      LayerTime &t = plan.layerTimes[l];
      t.fwdS = micro * p.cm.phaseTimeS(layer, layer.fwd, dev, perUnit / micro,
                                       tp, p.req.threads);
      if (p.req.training) {
        t.bwdS = micro * p.cm.phaseTimeS(layer, layer.bwd, dev, perUnit / micro,
                                         tp, p.req.threads);
        if (recompute)
          t.bwdS += t.fwdS;
        t.updateS = p.cm.updateTimeS(layer, dev, tp, p.req.threads);
      }
    }
  }
  plan.costPerHour = 0;
  plan.devicesUsed = 0;
  for (const StagePlan &st : plan.stages) {
    plan.costPerHour +=
        static_cast<double>(st.units) * p.priceOf(st.deviceType);
    plan.devicesUsed += st.units;
  }
  return true;
}
