//===- StepTimeSearch.cpp - The StepTime objective's strategies -----------===//
// SPDX-License-Identifier: Apache-2.0
//
// The StepTime objective (uniform data / tensor / pipeline degrees,
// micro-batches, recomputation, a stage partition and a device type per
// stage): the candidate space that Exact (StepTimeExact.cpp) and Exhaustive
// share, the Exhaustive and Greedy strategies, and planStepTime, which runs
// the requested one and turns its solution into a Plan.
//
//===----------------------------------------------------------------------===//
//
// Strategies:
//  - Exhaustive, StepTime: every candidate, partition and type sequence;
//    refused above exhaustiveLimit.
//  - Greedy, StepTime: the best single-stage data-parallel plan on one
//    device type, dp the largest divisor of globalBatch the type has units
//    for, tp 1, any micro-batch count and recompute.
//  - RL, StepTime: returns the Greedy plan.
//
//===----------------------------------------------------------------------===//

#include "PlannerInternal.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::planner;

//===----------------------------------------------------------------------===//
// Candidate space
//===----------------------------------------------------------------------===//

namespace {

bool anyTensorParallel(const Problem &p) {
  for (const LayerCost &layer : p.req.layers)
    if (layer.tensorParallel)
      return true;
  return false;
}

} // namespace

std::vector<StepCandidate> planner::enumerateStepCandidates(const Problem &p) {
  std::vector<StepCandidate> cands;
  int64_t maxPerNode = 0;
  for (const DeviceType &type : p.types)
    if (type.units > 0)
      maxPerNode = std::max(maxPerNode, type.unitsPerNode);
  int64_t maxTp = std::min(p.req.maxTensorParallel, maxPerNode);
  if (!anyTensorParallel(p))
    maxTp = std::min<int64_t>(maxTp, 1);
  std::vector<int64_t> dps = divisorsOf(p.req.globalBatch);
  for (int64_t tp = 1; tp <= maxTp; tp *= 2) {
    for (int64_t dp : dps) {
      int64_t slots = 0;
      for (int64_t k = 0; k < p.numTypes; ++k)
        slots += stageCapacity(p, k, tp, dp * tp);
      if (slots == 0)
        continue;
      int64_t maxPp = std::min(p.numLayers, slots);
      for (int64_t m : divisorsOf(p.req.globalBatch / dp)) {
        for (int64_t pp = 1; pp <= maxPp; ++pp) {
          for (int rc = 0; rc < (p.req.training ? 2 : 1); ++rc) {
            StepCandidate c;
            c.dp = dp;
            c.tp = tp;
            c.pp = pp;
            c.microBatches = m;
            c.recompute = rc != 0;
            cands.push_back(c);
          }
        }
      }
    }
  }
  return cands;
}

//===----------------------------------------------------------------------===//
// Exhaustive and Greedy
//===----------------------------------------------------------------------===//

namespace {

/// Calls `fn` with every way to cut `numLayers` layers into `pp` stages.
template <typename Fn>
void forEachPartition(int64_t numLayers, int64_t pp, Fn fn) {
  std::vector<StageChoice> stages(pp);
  std::vector<int64_t> cuts(pp + 1);
  // cuts[s] = first layer of stage s, cuts[pp] = numLayers.
  for (int64_t s = 0; s < pp; ++s)
    cuts[s] = s;
  cuts[pp] = numLayers;
  while (true) {
    for (int64_t s = 0; s < pp; ++s) {
      stages[s].first = cuts[s];
      stages[s].last = cuts[s + 1] - 1;
    }
    fn(stages);
    // Next combination of cuts[1..pp-1] in [1, numLayers-1].
    int64_t s = pp - 1;
    while (s >= 1 && cuts[s] == numLayers - (pp - s))
      --s;
    if (s < 1)
      return;
    ++cuts[s];
    for (int64_t r = s + 1; r < pp; ++r)
      cuts[r] = cuts[r - 1] + 1;
  }
}

double binomial(int64_t n, int64_t k) {
  double r = 1;
  for (int64_t i = 1; i <= k; ++i)
    r = r * static_cast<double>(n - k + i) / static_cast<double>(i);
  return r;
}

std::optional<StepSolution>
exhaustiveStepTime(const Problem &p, int64_t &scored, std::string &error) {
  std::vector<StepCandidate> cands = enumerateStepCandidates(p);
  double total = 0;
  for (const StepCandidate &c : cands) {
    int64_t types = 0;
    for (int64_t k = 0; k < p.numTypes; ++k)
      types += stageCapacity(p, k, c.tp, c.unitsPerStage()) > 0;
    total += binomial(p.numLayers - 1, c.pp - 1) *
             std::pow(static_cast<double>(types), static_cast<double>(c.pp));
  }
  if (total > static_cast<double>(p.req.exhaustiveLimit)) {
    error = "exhaustive search would score " + formatNumber(total) +
            " plans, more than the limit of " +
            std::to_string(p.req.exhaustiveLimit);
    return std::nullopt;
  }
  std::optional<StepSolution> best;
  for (const StepCandidate &c : cands) {
    std::vector<int64_t> allowed;
    for (int64_t k = 0; k < p.numTypes; ++k)
      if (stageCapacity(p, k, c.tp, c.unitsPerStage()) > 0)
        allowed.push_back(k);
    if (allowed.empty())
      continue;
    forEachPartition(p.numLayers, c.pp, [&](std::vector<StageChoice> stages) {
      std::vector<size_t> digit(c.pp, 0);
      while (true) {
        for (int64_t s = 0; s < c.pp; ++s)
          stages[s].type = allowed[digit[s]];
        ++scored;
        if (std::optional<StepScore> score = scoreStepPlan(p, c, stages)) {
          StepSolution sol;
          sol.cand = c;
          sol.stepS = score->stepS;
          sol.price = score->price;
          sol.stages = stages;
          if (!best || sol.betterThan(*best))
            best = std::move(sol);
        }
        int64_t s = 0;
        while (s < c.pp && ++digit[s] == allowed.size())
          digit[s++] = 0;
        if (s == c.pp)
          break;
      }
    });
  }
  return best;
}

std::optional<StepSolution> greedyStepTime(const Problem &p, int64_t &scored) {
  std::optional<StepSolution> best;
  std::vector<int64_t> dps = divisorsOf(p.req.globalBatch);
  for (int64_t k = 0; k < p.numTypes; ++k) {
    if (p.types[k].units < 1)
      continue;
    int64_t dp = 1;
    for (int64_t d : dps)
      if (d <= p.types[k].units)
        dp = d;
    for (int64_t m : divisorsOf(p.req.globalBatch / dp)) {
      for (int rc = 0; rc < (p.req.training ? 2 : 1); ++rc) {
        StepCandidate c;
        c.dp = dp;
        c.microBatches = m;
        c.recompute = rc != 0;
        std::vector<StageChoice> stages = {{0, p.numLayers - 1, k}};
        ++scored;
        std::optional<StepScore> score = scoreStepPlan(p, c, stages);
        if (!score)
          continue;
        StepSolution sol;
        sol.cand = c;
        sol.stepS = score->stepS;
        sol.price = score->price;
        sol.stages = stages;
        if (!best || sol.betterThan(*best))
          best = std::move(sol);
      }
    }
  }
  return best;
}

} // namespace

//===----------------------------------------------------------------------===//
// planStepTime
//===----------------------------------------------------------------------===//

std::optional<Plan> planner::planStepTime(const Problem &p, int64_t &scored,
                                          std::string &error) {
  std::optional<StepSolution> sol;
  switch (p.req.strategy) {
  case PlanStrategy::Exact:
    sol = exactStepTime(p, scored);
    break;
  case PlanStrategy::Exhaustive:
    sol = exhaustiveStepTime(p, scored, error);
    if (!error.empty())
      return std::nullopt;
    break;
  case PlanStrategy::Greedy:
  case PlanStrategy::RL:
    sol = greedyStepTime(p, scored);
    break;
  }
  if (!sol) {
    error = explainNoFit(p);
    return std::nullopt;
  }
  Plan plan;
  plan.objective = Objective::StepTime;
  plan.dp = sol->cand.dp;
  plan.tp = sol->cand.tp;
  plan.pp = sol->cand.pp;
  plan.microBatches = sol->cand.microBatches;
  plan.recompute = sol->cand.recompute;
  for (const StageChoice &st : sol->stages) {
    StagePlan sp;
    sp.firstLayer = st.first;
    sp.lastLayer = st.last;
    sp.deviceType = st.type;
    sp.dp = plan.dp;
    sp.tp = plan.tp;
    sp.units = plan.dp * plan.tp;
    sp.recompute = plan.recompute;
    plan.stages.push_back(sp);
  }
  plan.stepTimeS = sol->stepS;
  return plan;
}
