//===- PlanModel.cpp - Stage figures of the planner's model ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The out-of-line pieces of the planner's model (PlannerInternal.h
// describes it): the times of a layer and of a stage's once-per-step tail,
// the figures of a StepTime stage and of a whole StepTime decision, the
// figures of a Cost stage and the unit count that gives it the throughput
// floor, and the message that says why no plan fits. Every strategy and
// evaluatePlan score plans with these, so a plan's figures do not depend on
// the strategy that found it.
//
//===----------------------------------------------------------------------===//

#include "PlannerInternal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::planner;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

} // namespace

std::string planner::formatNumber(double v) {
  char buf[64];
  if (std::fabs(v) >= 1000)
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  else
    std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string planner::formatGiB(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", bytes / kGiB);
  return buf;
}

std::vector<int64_t> planner::divisorsOf(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d)
      continue;
    small.push_back(d);
    if (d != n / d)
      large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

//===----------------------------------------------------------------------===//
// StepTime: stage figures
//===----------------------------------------------------------------------===//

LayerRaw planner::layerRaw(const Problem &p, int64_t l, int64_t k,
                           double samples, int64_t tp) {
  const LayerCost &layer = p.layer(l);
  int64_t ltp = layerTp(layer, tp);
  LayerRaw raw;
  raw.fwdS =
      p.cm.phaseTimeS(layer, layer.fwd, p.dev(k), samples, ltp, p.req.threads);
  if (p.req.training)
    raw.bwdS = p.cm.phaseTimeS(layer, layer.bwd, p.dev(k), samples, ltp,
                               p.req.threads);
  if (ltp > 1)
    raw.tpCommS =
        p.cm.collectiveTimeS(Collective::AllReduce, layer.outputBytes * samples,
                             ltp, p.intraLink(k));
  return raw;
}

double planner::updateTime(const Problem &p, int64_t l, int64_t k, int64_t tp) {
  const LayerCost &layer = p.layer(l);
  return p.cm.updateTimeS(layer, p.dev(k), layerTp(layer, tp), p.req.threads);
}

double planner::sendTime(const Problem &p, int64_t l, double samples,
                         const LinkSpec &link) {
  return p.cm.p2pTimeS(p.layer(l).outputBytes * samples, link);
}

StageTail planner::stepTail(const Problem &p, int64_t k, int64_t dp, int64_t tp,
                            double paramBytes, double updateS) {
  StageTail tail;
  if (p.req.training) {
    if (dp > 1) {
      const LinkSpec &link =
          dp * tp > p.types[k].unitsPerNode ? p.interLink() : p.intraLink(k);
      tail.allreduceS =
          p.cm.collectiveTimeS(Collective::AllReduce, paramBytes, dp, link);
    }
    tail.updateS = updateS;
  }
  tail.overheadS = p.cm.stepOverheadS(p.dev(k));
  tail.totalS = tail.allreduceS + tail.updateS + tail.overheadS;
  return tail;
}

StepStage planner::evalStepStage(const Problem &p, const StepCandidate &c,
                                 int64_t stage, int64_t first, int64_t last,
                                 int64_t k, int64_t nextType) {
  bool training = p.req.training;
  double samples = microBatchSamples(p.req, c);
  StepStage s;
  MemAcc mem;
  double paramBytes = 0, updateS = 0;
  for (int64_t l = first; l <= last; ++l) {
    const LayerCost &layer = p.layer(l);
    LayerRaw raw = layerRaw(p, l, k, samples, c.tp);
    s.forwardS += forwardPart(raw);
    s.backwardS += backwardPart(raw, training, c.recompute);
    double compute = raw.fwdS;
    double comm = 2 * raw.tpCommS;
    if (training) {
      compute += raw.bwdS;
      comm += 2 * raw.tpCommS;
      if (c.recompute) {
        compute += raw.fwdS;
        comm += 2 * raw.tpCommS;
      }
    }
    s.computeS += compute;
    s.commS += comm;
    mem.add(staticBytes(layer, c.tp, training),
            activationPerSample(layer, c.tp), workingPerSample(layer, c.tp),
            layer.inputBytes);
    paramBytes += paramShardBytes(layer, c.tp);
    updateS += updateTime(p, l, k, c.tp);
  }
  if (nextType >= 0)
    s.sendS = sendTime(p, last, samples, p.linkBetween(k, nextType));
  s.commS += s.sendS;
  s.timeS = s.forwardS + s.backwardS + s.sendS;
  s.tail = stepTail(p, k, c.dp, c.tp, paramBytes, updateS);
  int64_t inFlight = std::min(c.microBatches, c.pp - stage);
  s.memoryBytes =
      stepStageMemory(mem, samples, inFlight, training, c.recompute);
  return s;
}

std::optional<StepScore>
planner::scoreStepPlan(const Problem &p, const StepCandidate &c,
                       const std::vector<StageChoice> &stages) {
  std::vector<int64_t> used(p.numTypes, 0);
  for (const StageChoice &st : stages)
    if (++used[st.type] > stageCapacity(p, st.type, c.tp, c.unitsPerStage()))
      return std::nullopt;
  double maxT = 0, maxTail = 0, price = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    const StageChoice &st = stages[s];
    int64_t next = s + 1 < stages.size() ? stages[s + 1].type : -1;
    StepStage ev = evalStepStage(p, c, static_cast<int64_t>(s), st.first,
                                 st.last, st.type, next);
    if (ev.memoryBytes > p.memoryOf(st.type))
      return std::nullopt;
    maxT = std::max(maxT, ev.timeS);
    maxTail = std::max(maxTail, ev.tail.totalS);
    price += p.priceOf(st.type);
  }
  return StepScore{stepTimeOf(c.microBatches, c.pp, maxT, maxTail), price};
}

//===----------------------------------------------------------------------===//
// Cost: stage figures
//===----------------------------------------------------------------------===//

double planner::costLayerPerSample(const Problem &p, int64_t l, int64_t k) {
  const LayerCost &layer = p.layer(l);
  double g = static_cast<double>(p.req.globalBatch);
  double t = p.cm.phaseTimeS(layer, layer.fwd, p.dev(k), g, 1, p.req.threads);
  if (p.req.training)
    t += p.cm.phaseTimeS(layer, layer.bwd, p.dev(k), g, 1, p.req.threads);
  return t / g;
}

double planner::costLayerUpdate(const Problem &p, int64_t l, int64_t k) {
  if (!p.req.training)
    return 0;
  return p.cm.updateTimeS(p.layer(l), p.dev(k), 1, p.req.threads);
}

double planner::costSendPerSample(const Problem &p, int64_t k, int64_t last,
                                  LinkKind kind) {
  if (kind == LinkKind::None)
    return 0;
  double g = static_cast<double>(p.req.globalBatch);
  const LinkSpec &link =
      kind == LinkKind::Intra ? p.intraLink(k) : p.interLink();
  return sendTime(p, last, g, link) / g;
}

double planner::costStageMemoryAt(const Problem &p, const CostSums &sums,
                                  int64_t units) {
  double samples = static_cast<double>(
      ceilDiv(p.req.globalBatch, std::max<int64_t>(1, units)));
  return costStageMemory(sums.mem, samples, p.req.training);
}

CostStage planner::costStageAt(const Problem &p, const CostSums &sums,
                               int64_t k, double sendPerSampleS,
                               int64_t units) {
  CostStage s;
  int64_t g = p.req.globalBatch;
  s.sendPerSampleS = sendPerSampleS;
  s.perUnitSamples = ceilDiv(g, units);
  double perSample = sums.perSampleS + sendPerSampleS;
  if (p.req.training) {
    if (units > 1) {
      const LinkSpec &link =
          units > p.types[k].unitsPerNode ? p.interLink() : p.intraLink(k);
      s.allreduceS = p.cm.collectiveTimeS(Collective::AllReduce,
                                          sums.paramBytes, units, link);
    }
    s.updateS = sums.updateS;
  }
  s.overheadS = p.cm.stepOverheadS(p.dev(k));
  s.stepS = static_cast<double>(s.perUnitSamples) * perSample + s.allreduceS +
            s.updateS + s.overheadS;
  s.throughput = s.stepS > 0 ? static_cast<double>(g) / s.stepS : kInf;
  s.memoryBytes = costStageMemoryAt(p, sums, units);
  return s;
}

int64_t planner::chooseCostUnits(const Problem &p, const CostSums &sums,
                                 int64_t k, double sendPerSampleS,
                                 double minThroughput,
                                 double *throughputAtMax) {
  if (throughputAtMax)
    *throughputAtMax = 0;
  int64_t maxN = costMaxUnits(p, k);
  double memory = p.memoryOf(k);
  if (maxN < 1 || costStageMemoryAt(p, sums, maxN) > memory)
    return -1;
  // Memory needs fall with n: binary search the smallest n that fits.
  int64_t lo = 1, hi = maxN;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (costStageMemoryAt(p, sums, mid) <= memory)
      hi = mid;
    else
      lo = mid + 1;
  }
  int64_t nMem = lo;
  double perSample = sums.perSampleS + sendPerSampleS;
  double g = static_cast<double>(p.req.globalBatch);
  const double fixedS =
      (p.req.training ? sums.updateS : 0) + p.cm.stepOverheadS(p.dev(k));
  // Bounds below are compared with a little slack for rounding.
  const double slackFloor = minThroughput * (1 - 1e-12);
  // Without the all-reduce (>= 0) no n reaches more than this.
  double bound =
      g / (static_cast<double>(ceilDiv(p.req.globalBatch, maxN)) * perSample +
           fixedS);
  if (throughputAtMax)
    *throughputAtMax = costStageAt(p, sums, k, sendPerSampleS, maxN).throughput;
  if (bound < slackFloor)
    return -1;
  // throughput(n) <= n / perSample, so n >= minThroughput * perSample.
  double need = std::floor(minThroughput * perSample * (1 - 1e-9));
  int64_t start = nMem;
  if (need > static_cast<double>(start))
    start =
        need >= static_cast<double>(maxN) ? maxN : static_cast<int64_t>(need);
  const int64_t perNode = p.types[k].unitsPerNode;
  for (int64_t n = start; n <= maxN; ++n) {
    CostStage st = costStageAt(p, sums, k, sendPerSampleS, n);
    if (st.throughput >= minThroughput)
      return n;
    // The all-reduce does not get faster with more ranks on one link: when
    // it leaves no room for even the smallest compute term of the counts
    // that use this link, skip to the next link.
    int64_t linkEnd = n <= perNode ? std::min(maxN, perNode) : maxN;
    double best =
        g /
        (static_cast<double>(ceilDiv(p.req.globalBatch, linkEnd)) * perSample +
         st.allreduceS + fixedS);
    if (best < slackFloor)
      n = linkEnd;
  }
  return -1;
}

//===----------------------------------------------------------------------===//
// Why nothing fits
//===----------------------------------------------------------------------===//

std::string planner::explainNoFit(const Problem &p) {
  bool training = p.req.training;
  int64_t largest = -1;
  for (int64_t k = 0; k < p.numTypes; ++k)
    if (p.types[k].units > 0 &&
        (largest < 0 || p.memoryOf(k) > p.memoryOf(largest)))
      largest = k;
  if (largest < 0)
    return "no plan fits: the cluster has no devices";
  int64_t worst = -1;
  double worstNeed = 0;
  for (int64_t l = 0; l < p.numLayers; ++l) {
    const LayerCost &layer = p.layer(l);
    bool fitsSomewhere = false;
    double needOnLargest = 0;
    for (int64_t k = 0; k < p.numTypes; ++k) {
      if (p.types[k].units < 1)
        continue;
      int64_t tp = 1;
      while (tp * 2 <=
             std::min(p.req.maxTensorParallel, p.types[k].unitsPerNode))
        tp *= 2;
      if (p.req.objective == Objective::Cost)
        tp = 1;
      MemAcc mem;
      mem.add(staticBytes(layer, tp, training), activationPerSample(layer, tp),
              workingPerSample(layer, tp), layer.inputBytes);
      double need = stepStageMemory(mem, 1, 1, training, training);
      if (p.req.objective == Objective::Cost)
        need = costStageMemory(
            mem,
            static_cast<double>(ceilDiv(p.req.globalBatch, costMaxUnits(p, k))),
            training);
      if (need <= p.memoryOf(k))
        fitsSomewhere = true;
      if (k == largest)
        needOnLargest = need;
    }
    if (!fitsSomewhere && (worst < 0 || needOnLargest > worstNeed)) {
      worst = l;
      worstNeed = needOnLargest;
    }
  }
  if (worst >= 0)
    return "no plan fits: layer '" + p.layer(worst).name + "' needs " +
           formatGiB(worstNeed) + " per device, largest device has " +
           formatGiB(p.memoryOf(largest));
  return "no plan fits: no split of the " + std::to_string(p.numLayers) +
         " layers into stages and of the global batch of " +
         std::to_string(p.req.globalBatch) +
         " fits the devices' memory and counts";
}
