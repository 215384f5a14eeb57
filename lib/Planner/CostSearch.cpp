//===- CostSearch.cpp - The Cost (HeterPS) objective's strategies ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// The Cost objective (HeterPS: a device type per layer, each stage sized to
// a throughput floor, minimal money per hour): the exact dynamic program
// over (first layer, device type) with capacity tracking, the Exhaustive,
// Greedy (with local search) and RL (HeterPS's REINFORCE scheduler)
// strategies, the bisection that finds the best reachable throughput for
// the error message, and planCost, which runs the requested strategy and
// turns its solution into a Plan. The model is described in
// PlannerInternal.h.
//
//===----------------------------------------------------------------------===//
//
// Strategies:
//  - Exact, Cost: a dynamic program over (first layer, device type) from the
//    last layer back with labels (cost, units per tracked type), dropping
//    labels a cheaper one with no more units of any tracked type beats, so
//    it is exact despite the shared capacities; types are tracked as for
//    StepTime; pruned by the cheapest cost the earlier layers could have and
//    by the Greedy plan's cost.
//  - Exhaustive, Cost: every types^layers assignment; refused above
//    exhaustiveLimit.
//  - Greedy, Cost: each layer on the type with the lowest price * per-sample
//    time; while the plan is infeasible the layers of the offending stage
//    move to their next cheapest type; then a local search gives a whole
//    stage or one layer another type while that lowers the cost.
//  - RL, Cost (HeterPS): a policy that places the layers in order, with
//    softmax logits per layer and type, a term shared by the layers of one
//    kind (sparse or dense) and a shared bonus for keeping the previous
//    layer's type; the per-layer logits start from a price * time prior.
//    REINFORCE with a moving-average baseline, learning rate 0.1, updates
//    every 16 episodes, rlEpisodes episodes, std::mt19937_64 seeded with
//    req.seed; reward: minus the cost over a cost scale, or for infeasible
//    assignments a penalty below every feasible reward seen that grows with
//    the throughput shortfall and capacity excess. The best feasible
//    assignment seen (Greedy's plan counts as seen) goes through Greedy's
//    local search.
//
//===----------------------------------------------------------------------===//

#include "PlannerInternal.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <random>
#include <tuple>
#include <unordered_map>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::planner;

namespace {

/// Episodes per policy update of the RL strategy.
constexpr int64_t kRlBatch = 16;
/// Largest log-ratio the RL prior gives between two types of a layer.
constexpr double kRlPriorClamp = 4;
/// Initial preference of the RL policy for the previous layer's type.
constexpr double kRlStay = 2;

//===----------------------------------------------------------------------===//
// The dynamic program and assignment scoring
//===----------------------------------------------------------------------===//

/// A label of the Cost DP: the stages from some layer to the end.
struct CostLabel {
  double cost = 0;
  double throughput = kInf;
  int64_t devices = 0;
  int32_t end = 0; ///< last layer of its first stage
  int32_t next = -1;
  int32_t nextType = -1;
};

class CostSearch {
public:
  CostSearch(const Problem &p, double minThroughput)
      : p(p), minThroughput(minThroughput) {
    int64_t numL = p.numLayers, numT = p.numTypes;
    perSample.assign(numT * numL, 0);
    update.assign(numT * numL, 0);
    for (int64_t k = 0; k < numT; ++k) {
      if (!usable(k))
        continue;
      usableTypes.push_back(k);
      for (int64_t l = 0; l < numL; ++l) {
        perSample[k * numL + l] = costLayerPerSample(p, l, k);
        update[k * numL + l] = costLayerUpdate(p, l, k);
      }
    }
    // Cheapest cost any plan can give the layers before i.
    prefixCost.assign(numL + 1, 0);
    for (int64_t l = 0; l < numL; ++l) {
      double best = usableTypes.empty() ? 0 : kInf;
      for (int64_t k : usableTypes)
        best = std::min(best,
                        p.priceOf(k) * minThroughput * perSample[k * numL + l]);
      prefixCost[l + 1] = prefixCost[l] + best;
    }
  }

  bool usable(int64_t k) const { return p.types[k].units > 0; }
  const std::vector<int64_t> &types() const { return usableTypes; }
  double layerPerSample(int64_t l, int64_t k) const {
    return perSample[k * p.numLayers + l];
  }
  /// Lower bound of the cost of any plan.
  double costLowerBound() const { return prefixCost[p.numLayers]; }

  /// The cheapest plan with cost <= costBound that respects the capacities
  /// of the types in `tracked` (the others are ignored).
  /// With `feasibility`, any plan within the capacities will do (costBound
  /// must be infinite): labels are compared on their units only.
  std::optional<CostSolution> solve(double costBound,
                                    const std::vector<bool> &tracked,
                                    bool feasibility = false);

  /// Scores an assignment of a type to every layer (stages are its runs).
  /// Returns nullopt when infeasible and sets `shortfall` (> 0): the sum of
  /// the stages' missing throughput fractions and the types' excess units
  /// fractions.
  std::optional<CostSolution> evaluate(const std::vector<int64_t> &assign,
                                       bool cached, double *shortfall);

  int64_t scored = 0;

private:
  void addLayer(CostSums &sums, int64_t l, int64_t k) const {
    sums.add(p, l, perSample[k * p.numLayers + l], update[k * p.numLayers + l]);
  }

  const Problem &p;
  double minThroughput;
  std::vector<int64_t> usableTypes;
  std::vector<double> perSample, update, prefixCost;
  struct CachedStage {
    int64_t units;
    double throughput;
    double throughputAtMax;
  };
  std::unordered_map<uint64_t, CachedStage> stageCache;
};

std::optional<CostSolution> CostSearch::solve(double costBound,
                                              const std::vector<bool> &tracked,
                                              bool feasibility) {
  assert((!feasibility || std::isinf(costBound)) &&
         "a feasibility search has no cost bound");
  const int64_t numL = p.numLayers, numT = p.numTypes;
  std::vector<int64_t> slot(numT, -1);
  int64_t nc = 0;
  for (int64_t k = 0; k < numT; ++k)
    if (tracked[k])
      slot[k] = nc++;
  // Labels of each state, cheapest first, with their tracked unit counts.
  std::vector<CostLabel> labels;
  std::vector<int64_t> counts;
  std::vector<int32_t> begin(numL * numT, 0), end(numL * numT, 0);
  std::vector<CostLabel> cand;
  std::vector<int64_t> candCounts, order;
  auto addCandidate = [&](const CostLabel &lab, const int64_t *nextCounts,
                          int64_t k, int64_t n) {
    cand.push_back(lab);
    for (int64_t d = 0; d < nc; ++d)
      candCounts.push_back(nextCounts ? nextCounts[d] : 0);
    if (slot[k] >= 0)
      candCounts[candCounts.size() - nc + slot[k]] += n;
  };
  // Keeps the labels that no label before them in (units,) cost order with
  // no more units per tracked type dominates.
  std::vector<int64_t> unitSum;
  auto commit = [&](int64_t state) {
    begin[state] = static_cast<int32_t>(labels.size());
    order.resize(cand.size());
    unitSum.assign(cand.size(), 0);
    for (size_t x = 0; x < cand.size(); ++x) {
      order[x] = static_cast<int64_t>(x);
      if (feasibility)
        for (int64_t d = 0; d < nc; ++d)
          unitSum[x] += candCounts[x * nc + d];
    }
    std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
      const CostLabel &lx = cand[x], &ly = cand[y];
      return std::make_tuple(unitSum[x], lx.cost, lx.devices, -lx.throughput,
                             x) < std::make_tuple(unitSum[y], ly.cost,
                                                  ly.devices, -ly.throughput,
                                                  y);
    });
    for (int64_t x : order) {
      const int64_t *cc = candCounts.data() + x * nc;
      bool dominated = false;
      for (int32_t e = begin[state];
           e < static_cast<int32_t>(labels.size()) && !dominated; ++e) {
        const int64_t *ec = counts.data() + e * nc;
        dominated = true;
        for (int64_t d = 0; d < nc && dominated; ++d)
          dominated = ec[d] <= cc[d];
      }
      if (dominated)
        continue;
      labels.push_back(cand[x]);
      counts.insert(counts.end(), cc, cc + nc);
    }
    end[state] = static_cast<int32_t>(labels.size());
  };
  for (int64_t i = numL - 1; i >= 0; --i) {
    for (int64_t k : usableTypes) {
      cand.clear();
      candCounts.clear();
      const int64_t maxN = costMaxUnits(p, k);
      const double price = p.priceOf(k);
      const int64_t sk = slot[k];
      CostSums sums;
      for (int64_t j = i; j < numL; ++j) {
        addLayer(sums, j, k);
        if (minThroughput * sums.perSampleS >
            static_cast<double>(maxN) * (1 + 1e-9))
          break;
        if (costStageMemoryAt(p, sums, maxN) > p.memoryOf(k))
          break;
        // Units and throughput of the stage per link kind, on demand.
        int64_t unitsBy[3] = {-2, -2, -2};
        double thrBy[3] = {0, 0, 0};
        auto stageFor = [&](LinkKind kind) {
          int idx = static_cast<int>(kind);
          if (unitsBy[idx] == -2) {
            double send = costSendPerSample(p, k, j, kind);
            ++scored;
            unitsBy[idx] = chooseCostUnits(p, sums, k, send, minThroughput);
            if (unitsBy[idx] > 0)
              thrBy[idx] =
                  costStageAt(p, sums, k, send, unitsBy[idx]).throughput;
          }
          return idx;
        };
        if (j == numL - 1) {
          int idx = stageFor(LinkKind::None);
          int64_t n = unitsBy[idx];
          if (n < 0)
            continue;
          CostLabel lab;
          lab.cost = static_cast<double>(n) * price;
          if (lab.cost + prefixCost[i] > costBound)
            continue;
          lab.throughput = thrBy[idx];
          lab.devices = n;
          lab.end = static_cast<int32_t>(j);
          addCandidate(lab, nullptr, k, n);
          continue;
        }
        for (int64_t k2 : usableTypes) {
          if (k2 == k)
            continue;
          int64_t state = (j + 1) * numT + k2;
          if (begin[state] == end[state])
            continue;
          int idx = stageFor(linkKindBetween(p, k, k2));
          int64_t n = unitsBy[idx];
          if (n < 0)
            continue;
          double stageCost = static_cast<double>(n) * price;
          for (int32_t x = begin[state]; x < end[state]; ++x) {
            const CostLabel &nx = labels[x];
            const int64_t *nxc = counts.data() + x * nc;
            CostLabel lab;
            lab.cost = stageCost + nx.cost;
            // Labels come cheapest first.
            if (lab.cost + prefixCost[i] > costBound)
              break;
            if (sk >= 0 && nxc[sk] + n > p.types[k].units)
              continue;
            lab.throughput = std::min(thrBy[idx], nx.throughput);
            lab.devices = n + nx.devices;
            lab.end = static_cast<int32_t>(j);
            lab.next = x;
            lab.nextType = static_cast<int32_t>(k2);
            addCandidate(lab, nxc, k, n);
          }
        }
      }
      commit(i * numT + k);
    }
  }
  std::optional<CostSolution> best;
  int32_t bestLabel = -1;
  int64_t bestType = -1;
  for (int64_t k : usableTypes) {
    for (int32_t x = begin[k]; x < end[k]; ++x) {
      const CostLabel &lab = labels[x];
      if (best && !betterCost(lab.cost, lab.devices, lab.throughput, *best))
        continue;
      best = CostSolution{lab.cost, lab.devices, lab.throughput, {}};
      bestLabel = x;
      bestType = k;
    }
  }
  if (!best)
    return std::nullopt;
  int64_t first = 0, type = bestType;
  for (int32_t x = bestLabel; x >= 0;) {
    const CostLabel &lab = labels[x];
    const CostLabel *nx = lab.next >= 0 ? &labels[lab.next] : nullptr;
    int64_t units = lab.devices - (nx ? nx->devices : 0);
    best->stages.push_back({first, lab.end, type, units});
    first = lab.end + 1;
    type = lab.nextType;
    x = lab.next;
  }
  return best;
}

std::optional<CostSolution>
CostSearch::evaluate(const std::vector<int64_t> &assign, bool cached,
                     double *shortfall) {
  const int64_t numL = p.numLayers;
  ++scored;
  CostSolution sol;
  sol.throughput = kInf;
  double missing = 0;
  std::vector<int64_t> used(p.numTypes, 0);
  for (int64_t i = 0; i < numL;) {
    int64_t k = assign[i], j = i;
    while (j + 1 < numL && assign[j + 1] == k)
      ++j;
    int64_t next = j + 1 < numL ? assign[j + 1] : -1;
    LinkKind kind = linkKindBetween(p, k, next);
    CachedStage st;
    uint64_t key =
        ((static_cast<uint64_t>(i) * numL + j) * p.numTypes + k) * 3 +
        static_cast<uint64_t>(kind);
    auto it = cached ? stageCache.find(key) : stageCache.end();
    if (it != stageCache.end()) {
      st = it->second;
    } else {
      CostSums sums;
      if (cached) {
        for (int64_t l = i; l <= j; ++l)
          addLayer(sums, l, k);
      } else {
        for (int64_t l = i; l <= j; ++l)
          sums.add(p, l, costLayerPerSample(p, l, k), costLayerUpdate(p, l, k));
      }
      double send = costSendPerSample(p, k, j, kind);
      st.units =
          chooseCostUnits(p, sums, k, send, minThroughput, &st.throughputAtMax);
      st.throughput =
          st.units > 0 ? costStageAt(p, sums, k, send, st.units).throughput : 0;
      if (cached)
        stageCache.emplace(key, st);
    }
    if (st.units < 0) {
      missing += 1 - std::min(1.0, st.throughputAtMax / minThroughput);
      used[k] += costMaxUnits(p, k);
    } else {
      used[k] += st.units;
      sol.stages.push_back({i, j, k, st.units});
      sol.cost += static_cast<double>(st.units) * p.priceOf(k);
      sol.devices += st.units;
      sol.throughput = std::min(sol.throughput, st.throughput);
    }
    i = j + 1;
  }
  for (int64_t k = 0; k < p.numTypes; ++k)
    if (used[k] > p.types[k].units)
      missing += static_cast<double>(used[k] - p.types[k].units) /
                 static_cast<double>(std::max<int64_t>(1, p.types[k].units));
  if (shortfall)
    *shortfall = missing;
  if (missing > 0)
    return std::nullopt;
  return sol;
}

//===----------------------------------------------------------------------===//
// Exhaustive
//===----------------------------------------------------------------------===//

std::optional<CostSolution> exhaustiveCost(CostSearch &search, const Problem &p,
                                           std::string &error) {
  const std::vector<int64_t> &types = search.types();
  double total = std::pow(static_cast<double>(types.size()),
                          static_cast<double>(p.numLayers));
  if (total > static_cast<double>(p.req.exhaustiveLimit)) {
    error = "exhaustive search would score " + formatNumber(total) +
            " plans, more than the limit of " +
            std::to_string(p.req.exhaustiveLimit);
    return std::nullopt;
  }
  std::optional<CostSolution> best;
  if (types.empty())
    return best;
  std::vector<size_t> digit(p.numLayers, 0);
  std::vector<int64_t> assign(p.numLayers);
  while (true) {
    for (int64_t l = 0; l < p.numLayers; ++l)
      assign[l] = types[digit[l]];
    std::optional<CostSolution> sol = search.evaluate(assign, false, nullptr);
    if (sol &&
        (!best || betterCost(sol->cost, sol->devices, sol->throughput, *best)))
      best = std::move(sol);
    int64_t l = 0;
    while (l < p.numLayers && ++digit[l] == types.size())
      digit[l++] = 0;
    if (l == p.numLayers)
      break;
  }
  return best;
}

//===----------------------------------------------------------------------===//
// Greedy
//===----------------------------------------------------------------------===//

/// Local search: gives a whole stage, or one layer, another type while that
/// makes the plan better (first improvement).
CostSolution improveLocally(CostSearch &search, const Problem &p,
                            CostSolution sol) {
  const int64_t numL = p.numLayers;
  std::vector<int64_t> assign(numL);
  for (const CostStageChoice &st : sol.stages)
    for (int64_t l = st.first; l <= st.last; ++l)
      assign[l] = st.type;
  auto tryMove = [&](int64_t first, int64_t last, int64_t type) {
    std::vector<int64_t> trial = assign;
    std::fill(trial.begin() + first, trial.begin() + last + 1, type);
    std::optional<CostSolution> other = search.evaluate(trial, true, nullptr);
    if (!other ||
        !betterCost(other->cost, other->devices, other->throughput, sol))
      return false;
    assign = std::move(trial);
    sol = std::move(*other);
    return true;
  };
  bool improved = true;
  while (improved) {
    improved = false;
    for (size_t s = 0; s < sol.stages.size() && !improved; ++s) {
      CostStageChoice st = sol.stages[s];
      for (int64_t type : search.types())
        if (type != st.type && tryMove(st.first, st.last, type)) {
          improved = true;
          break;
        }
    }
    for (int64_t l = 0; l < numL && !improved; ++l)
      for (int64_t type : search.types())
        if (type != assign[l] && tryMove(l, l, type)) {
          improved = true;
          break;
        }
  }
  return sol;
}

std::optional<CostSolution> greedyCost(CostSearch &search, const Problem &p,
                                       double minThroughput) {
  const std::vector<int64_t> &types = search.types();
  if (types.empty())
    return std::nullopt;
  int64_t numL = p.numLayers;
  // Types of each layer, cheapest contribution first.
  std::vector<std::vector<int64_t>> pref(numL, types);
  for (int64_t l = 0; l < numL; ++l)
    std::sort(pref[l].begin(), pref[l].end(), [&](int64_t x, int64_t y) {
      double cx = p.priceOf(x) * search.layerPerSample(l, x);
      double cy = p.priceOf(y) * search.layerPerSample(l, y);
      return cx != cy ? cx < cy : x < y;
    });
  std::vector<size_t> level(numL, 0);
  std::vector<int64_t> assign(numL);
  for (int64_t l = 0; l < numL; ++l)
    assign[l] = pref[l][0];
  std::optional<CostSolution> sol;
  int64_t limit = numL * static_cast<int64_t>(types.size()) + 1;
  for (int64_t iter = 0; iter < limit; ++iter) {
    sol = search.evaluate(assign, true, nullptr);
    if (sol)
      break;
    // Find the offending stage: the first one without a unit count, else
    // the biggest stage on an over-used type.
    int64_t offFirst = -1, offLast = -1, bigUnits = -1;
    std::vector<int64_t> used(p.numTypes, 0);
    std::vector<std::array<int64_t, 3>> runs; // first, last, units
    for (int64_t i = 0; i < numL;) {
      int64_t k = assign[i], j = i;
      while (j + 1 < numL && assign[j + 1] == k)
        ++j;
      CostSums sums;
      for (int64_t l = i; l <= j; ++l)
        sums.add(p, l, costLayerPerSample(p, l, k), costLayerUpdate(p, l, k));
      int64_t next = j + 1 < numL ? assign[j + 1] : -1;
      double send = costSendPerSample(p, k, j, linkKindBetween(p, k, next));
      int64_t n = chooseCostUnits(p, sums, k, send, minThroughput);
      if (n < 0 && offFirst < 0) {
        offFirst = i;
        offLast = j;
      }
      used[k] += std::max<int64_t>(n, 0);
      runs.push_back({i, j, n});
      i = j + 1;
    }
    if (offFirst < 0) {
      for (const auto &run : runs) {
        int64_t k = assign[run[0]];
        if (used[k] > p.types[k].units && run[2] > bigUnits) {
          bigUnits = run[2];
          offFirst = run[0];
          offLast = run[1];
        }
      }
    }
    if (offFirst < 0)
      break;
    bool moved = false;
    for (int64_t l = offFirst; l <= offLast; ++l) {
      if (level[l] + 1 >= pref[l].size())
        continue;
      assign[l] = pref[l][++level[l]];
      moved = true;
    }
    if (!moved)
      break;
  }
  if (!sol)
    return std::nullopt;
  return improveLocally(search, p, *sol);
}

//===----------------------------------------------------------------------===//
// RL
//===----------------------------------------------------------------------===//

/// HeterPS's REINFORCE scheduler. Layers are placed in order; the logit of
/// type a for layer l after type b for layer l - 1 is
///   theta[l][a] + phi[f(l)][a] + kappa * [a == b],
/// where f(l) tells sparse layers from dense ones (the shared term carries
/// what one layer learns to its kind) and kappa, shared by all layers, is
/// how much the policy likes to extend the current stage. theta starts at a
/// prior (minus the log of each type's price * time for the layer over the
/// layer's cheapest), phi at 0, kappa at kRlStay. The policy is updated after
/// every batch of kRlBatch episodes with the advantages over a moving-average
/// baseline scaled by the batch's spread. The best feasible assignment seen
/// is finally improved by local search.
std::optional<CostSolution> rlCost(CostSearch &search, const Problem &p,
                                   const std::optional<CostSolution> &ref) {
  const std::vector<int64_t> &types = search.types();
  if (types.empty())
    return std::nullopt;
  const int64_t numL = p.numLayers;
  const int64_t numA = static_cast<int64_t>(types.size());
  const int64_t batch = kRlBatch;
  const double lr = 0.1;
  std::vector<double> theta(numL * numA, 0), phi(2 * numA, 0);
  double kappa = kRlStay;
  for (int64_t l = 0; l < numL; ++l) {
    double cheapest = kInf;
    for (int64_t a = 0; a < numA; ++a)
      cheapest = std::min(cheapest, p.priceOf(types[a]) *
                                        search.layerPerSample(l, types[a]));
    for (int64_t a = 0; a < numA; ++a) {
      double c = p.priceOf(types[a]) * search.layerPerSample(l, types[a]);
      if (cheapest > 0 && std::isfinite(c))
        theta[l * numA + a] = -std::min(kRlPriorClamp, std::log(c / cheapest));
    }
  }
  auto kindOf = [&](int64_t l) { return p.layer(l).sparse ? 1 : 0; };
  std::vector<double> gradTheta(numL * numA), gradPhi(2 * numA);
  // Per episode of a batch: actions and the distributions they came from.
  std::vector<std::vector<int64_t>> actions(batch, std::vector<int64_t>(numL));
  std::vector<std::vector<double>> probs(batch,
                                         std::vector<double>(numL * numA));
  std::vector<double> rewards(batch);
  std::vector<int64_t> assign(numL);
  std::mt19937_64 rng(p.req.seed);
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  double norm = search.costLowerBound();
  if (ref)
    norm = std::max(norm, ref->cost);
  if (!(norm > 0))
    norm = 1;
  // Infeasible assignments score below every feasible one seen so far.
  double penalty = 2;
  double baseline = 0;
  bool haveBaseline = false;
  // The reference plan (Greedy's) counts as seen.
  std::optional<CostSolution> best = ref;
  for (int64_t ep = 0; ep < p.req.rlEpisodes;) {
    int64_t n = std::min(batch, p.req.rlEpisodes - ep);
    for (int64_t e = 0; e < n; ++e, ++ep) {
      for (int64_t l = 0; l < numL; ++l) {
        const double *shared = &phi[kindOf(l) * numA];
        double *pr = &probs[e][l * numA];
        int64_t prev = l > 0 ? actions[e][l - 1] : -1;
        double mx = -kInf, sum = 0;
        for (int64_t a = 0; a < numA; ++a) {
          pr[a] = theta[l * numA + a] + shared[a] + (a == prev ? kappa : 0);
          mx = std::max(mx, pr[a]);
        }
        for (int64_t a = 0; a < numA; ++a)
          sum += pr[a] = std::exp(pr[a] - mx);
        for (int64_t a = 0; a < numA; ++a)
          pr[a] /= sum;
        double u = uniform();
        int64_t a = 0;
        while (a + 1 < numA && u >= pr[a])
          u -= pr[a++];
        actions[e][l] = a;
        assign[l] = types[a];
      }
      double shortfall = 0;
      std::optional<CostSolution> sol =
          search.evaluate(assign, true, &shortfall);
      if (sol) {
        rewards[e] = -sol->cost / norm;
        penalty = std::max(penalty, 2 * sol->cost / norm);
        if (!best ||
            betterCost(sol->cost, sol->devices, sol->throughput, *best))
          best = std::move(sol);
      } else {
        rewards[e] = -penalty * (1 + shortfall);
      }
    }
    double mean = 0, var = 0;
    for (int64_t e = 0; e < n; ++e)
      mean += rewards[e] / static_cast<double>(n);
    for (int64_t e = 0; e < n; ++e)
      var += (rewards[e] - mean) * (rewards[e] - mean) / static_cast<double>(n);
    if (!haveBaseline)
      baseline = mean;
    haveBaseline = true;
    // REINFORCE: the gradient of log pi(a_l) with respect to the logits is
    // onehot(a_l) - pi_l; theta, phi and kappa get it through their terms.
    double scale = 1 / std::sqrt(std::max(var, 1e-12));
    std::fill(gradTheta.begin(), gradTheta.end(), 0);
    std::fill(gradPhi.begin(), gradPhi.end(), 0);
    double gradKappa = 0;
    for (int64_t e = 0; e < n; ++e) {
      double adv = (rewards[e] - baseline) * scale / static_cast<double>(n);
      for (int64_t l = 0; l < numL; ++l) {
        double *gp = &gradPhi[kindOf(l) * numA];
        const double *pr = &probs[e][l * numA];
        int64_t prev = l > 0 ? actions[e][l - 1] : -1;
        for (int64_t a = 0; a < numA; ++a) {
          double g = adv * ((a == actions[e][l] ? 1 : 0) - pr[a]);
          gradTheta[l * numA + a] += g;
          gp[a] += g;
          if (a == prev)
            gradKappa += g;
        }
      }
    }
    for (size_t i = 0; i < theta.size(); ++i)
      theta[i] += lr * gradTheta[i];
    for (size_t i = 0; i < phi.size(); ++i)
      phi[i] += lr * gradPhi[i];
    kappa += lr * gradKappa;
    baseline = 0.8 * baseline + 0.2 * mean;
  }
  if (!best)
    return best;
  return improveLocally(search, p, *best);
}

//===----------------------------------------------------------------------===//
// Exact
//===----------------------------------------------------------------------===//

/// Exact cheapest plan (or with `feasibility` any plan): first ignoring the
/// types' capacities, then counting the units of each type a relaxed plan
/// uses too many of, until a plan respects them all.
std::optional<CostSolution> exactCost(CostSearch &search, const Problem &p,
                                      double costBound,
                                      bool feasibility = false) {
  std::vector<bool> tracked(p.numTypes, false);
  while (true) {
    std::optional<CostSolution> sol =
        search.solve(costBound, tracked, feasibility);
    if (!sol)
      return sol;
    std::vector<int64_t> used(p.numTypes, 0);
    for (const CostStageChoice &st : sol->stages)
      used[st.type] += st.units;
    bool grew = false;
    for (int64_t k = 0; k < p.numTypes; ++k) {
      if (used[k] <= p.types[k].units)
        continue;
      assert(!tracked[k] && "a tracked capacity was exceeded");
      tracked[k] = true;
      grew = true;
    }
    if (!grew)
      return sol;
  }
}

//===----------------------------------------------------------------------===//
// planCost
//===----------------------------------------------------------------------===//

/// Largest throughput floor any plan reaches, to a relative 1e-4, by
/// bisection on feasibility (`above` is known to be out of reach).
double bestReachableThroughput(const Problem &p, double above) {
  // The throughput of some plan that reaches `th`, or 0 when none does.
  auto reach = [&](double th) {
    CostSearch search(p, th);
    std::optional<CostSolution> sol =
        exactCost(search, p, kInf, /*feasibility=*/true);
    return sol ? std::max(th, sol->throughput) : 0.0;
  };
  double hi = above;
  double lo = reach(above * 1e-12);
  if (lo == 0)
    return 0;
  while (lo < hi && hi > lo * (1 + 1e-4)) {
    double mid = std::sqrt(lo * hi);
    double got = reach(mid);
    if (got > 0)
      lo = std::min(got, hi);
    else
      hi = mid;
  }
  return lo;
}

} // namespace

std::optional<Plan> planner::planCost(const Problem &p, int64_t &scored,
                                      std::string &error) {
  double minThroughput = p.req.minThroughput;
  CostSearch search(p, minThroughput);
  std::optional<CostSolution> sol;
  switch (p.req.strategy) {
  case PlanStrategy::Exact: {
    std::optional<CostSolution> greedy = greedyCost(search, p, minThroughput);
    double bound = greedy ? greedy->cost * (1 + 1e-9) : kInf;
    sol = exactCost(search, p, bound);
    if (!sol)
      sol = greedy;
    break;
  }
  case PlanStrategy::Exhaustive:
    sol = exhaustiveCost(search, p, error);
    if (!error.empty())
      return std::nullopt;
    break;
  case PlanStrategy::Greedy:
    sol = greedyCost(search, p, minThroughput);
    break;
  case PlanStrategy::RL: {
    std::optional<CostSolution> greedy = greedyCost(search, p, minThroughput);
    sol = rlCost(search, p, greedy);
    break;
  }
  }
  scored += search.scored;
  if (!sol) {
    std::string memory = explainNoFit(p);
    if (memory.find("layer '") != std::string::npos) {
      error = memory;
      return std::nullopt;
    }
    double best = bestReachableThroughput(p, minThroughput);
    if (best >= minThroughput)
      error = std::string("the ") + stringifyPlanStrategy(p.req.strategy) +
              " strategy found no plan that reaches " +
              formatNumber(minThroughput) +
              " samples/s; the exact strategy finds one";
    else
      error = "no plan reaches " + formatNumber(minThroughput) +
              " samples/s: best is " + formatNumber(best) + " samples/s";
    return std::nullopt;
  }
  Plan plan;
  plan.objective = Objective::Cost;
  plan.pp = static_cast<int64_t>(sol->stages.size());
  for (const CostStageChoice &st : sol->stages) {
    StagePlan sp;
    sp.firstLayer = st.first;
    sp.lastLayer = st.last;
    sp.deviceType = st.type;
    sp.units = st.units;
    sp.dp = st.units;
    sp.tp = 1;
    plan.stages.push_back(sp);
  }
  plan.costPerHour = sol->cost;
  return plan;
}
