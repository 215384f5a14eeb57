//===- StepTimeExact.cpp - The StepTime objective's exact search ----------===//
// SPDX-License-Identifier: Apache-2.0
//
// The Exact strategy of the StepTime objective: a lower bound per candidate
// (dp, tp, pp, m, r), the candidates searched in the order of that bound,
// and for each a dynamic program over (stage, first layer, device type)
// with Pareto labels, which respects the device types' capacities by
// tracking the ones a relaxed solution breaks. The model it optimises is
// described in PlannerInternal.h.
//
//===----------------------------------------------------------------------===//
//
// The strategy:
//  - Exact, StepTime: every candidate (dp, tp, pp, m, r) gets a lower bound:
//    the layers' fastest times spread over the pp stage slots the types can
//    host, each slot weighted by the largest ratio of a layer's fastest time
//    to its time on the slot's type, plus the smallest step overhead.
//    Candidates are searched in the order of that bound until it passes the
//    best step time. For one candidate, a dynamic program over (stage,
//    first layer, device type) from the last stage back keeps labels
//    (bottleneck t, largest tail, stages per tracked type) that no other
//    label of the state beats on all three; the bottleneck of a label is
//    raised to the candidate's and its prefix's lower bounds (which changes
//    no final step time and makes most labels tie), and labels that cannot
//    beat an upper bound are dropped. The upper bound is first 1.02, 1.15
//    and 1.6 times the candidate's lower bound; candidates with no plan
//    there wait until the best plan so far bounds them. Capacities are first
//    ignored; a type whose capacity the result breaks is then tracked, until
//    the result respects all of them. Optimal under the model.
//
//===----------------------------------------------------------------------===//

#include "PlannerInternal.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <tuple>
#include <unordered_map>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::planner;

namespace {

//===----------------------------------------------------------------------===//
// Tables and labels
//===----------------------------------------------------------------------===//

/// Per-layer times for one micro-batch size and tp degree.
struct StepTable {
  std::vector<double> forward;     ///< [k * L + l]
  std::vector<double> backward[2]; ///< [recompute][k * L + l]
  std::vector<double> sendInter;   ///< [l]
  std::vector<double> sendIntra;   ///< [k * L + l]
  /// Lower-bound data per recompute flag: prefix sums and maxima of the
  /// fastest time of each layer, and per type the largest ratio of a
  /// layer's fastest time to its time on the type.
  std::vector<double> prefixMin[2];
  std::vector<double> prefixMax[2];
  std::vector<double> rho[2];
};

/// Per-layer terms that depend on tp only.
struct TpTable {
  std::vector<double> staticB, act, work, input, param;
  std::vector<double> update; ///< [k * L + l]
};

/// One Pareto label of the StepTime DP: stages s..pp-1 of a partial plan.
struct StepLabel {
  double a = 0;     ///< largest t over its stages
  double b = 0;     ///< largest tail over its stages
  double price = 0; ///< sum of prices over its stages
  int32_t end = 0;  ///< last layer of its first stage
  int32_t next = -1;
  int32_t nextType = -1;
};

/// Labels of one stage index. The labels of a state (first layer, device
/// type) come in groups with equal stage counts per tracked type; each group
/// is a staircase: a rising, b falling.
struct StepLevel {
  std::vector<StepLabel> labels;
  std::vector<int32_t> groupBegin, groupEnd; ///< label ranges
  std::vector<uint16_t> groupCounts;         ///< tracked counts per group
  std::vector<int32_t> stateBegin, stateEnd; ///< group ranges per state
};

//===----------------------------------------------------------------------===//
// StepSearch: tables and the lower bound
//===----------------------------------------------------------------------===//

class StepSearch {
public:
  explicit StepSearch(const Problem &p) : p(p) {
    for (int64_t k = 0; k < p.numTypes; ++k)
      overhead.push_back(p.cm.stepOverheadS(p.dev(k)));
  }

  /// Lower bound of the candidate's step time (kInf when it cannot host pp
  /// stages).
  double lowerBound(const StepCandidate &c);

  /// Best plan of the candidate with step time <= boundS, if any, that
  /// respects the capacities of the types in `tracked` (others are ignored).
  std::optional<StepSolution> solve(const StepCandidate &c, double boundS,
                                    const std::vector<bool> &tracked);

  int64_t labelsCreated = 0;

private:
  const StepTable &table(int64_t samples, int64_t tp);
  const TpTable &tpTable(int64_t tp);
  /// fill[c]: largest sum of rho over c stage slots under the capacities.
  void slotFill(const StepCandidate &c, const StepTable &tab,
                std::vector<double> &fill);

  const Problem &p;
  std::vector<double> overhead;
  std::unordered_map<int64_t, StepTable> tables;
  std::unordered_map<int64_t, TpTable> tpTables;
  /// Turns the candidate labels of a state into its groups in `lv`.
  void commitState(StepLevel &lv, int64_t state, int64_t nc);

  std::vector<StepLevel> levels;
  /// Candidate labels of the state being built: one staircase when no
  /// capacity is tracked, else one per vector of counts.
  std::vector<StepLabel> cand;
  std::vector<std::vector<StepLabel>> buckets;
  std::vector<uint64_t> bucketKeys;
  std::vector<uint16_t> bucketCounts;
  int64_t numBuckets = 0;
  std::vector<int32_t> order;
};

const TpTable &StepSearch::tpTable(int64_t tp) {
  auto it = tpTables.find(tp);
  if (it != tpTables.end())
    return it->second;
  TpTable &t = tpTables[tp];
  int64_t numL = p.numLayers;
  bool training = p.req.training;
  for (int64_t l = 0; l < numL; ++l) {
    const LayerCost &layer = p.layer(l);
    t.staticB.push_back(staticBytes(layer, tp, training));
    t.act.push_back(activationPerSample(layer, tp));
    t.work.push_back(workingPerSample(layer, tp));
    t.input.push_back(layer.inputBytes);
    t.param.push_back(paramShardBytes(layer, tp));
  }
  t.update.assign(p.numTypes * numL, 0);
  for (int64_t k = 0; k < p.numTypes; ++k)
    if (typeAllowsTp(p, k, tp))
      for (int64_t l = 0; l < numL; ++l)
        t.update[k * numL + l] = updateTime(p, l, k, tp);
  return t;
}

const StepTable &StepSearch::table(int64_t samples, int64_t tp) {
  int64_t key = samples * 4096 + tp;
  auto it = tables.find(key);
  if (it != tables.end())
    return it->second;
  StepTable &t = tables[key];
  int64_t numL = p.numLayers, numT = p.numTypes;
  double b = static_cast<double>(samples);
  bool training = p.req.training;
  t.forward.assign(numT * numL, 0);
  t.backward[0].assign(numT * numL, 0);
  t.backward[1].assign(numT * numL, 0);
  t.sendIntra.assign(numT * numL, 0);
  for (int64_t l = 0; l < numL; ++l)
    t.sendInter.push_back(sendTime(p, l, b, p.interLink()));
  for (int64_t k = 0; k < numT; ++k) {
    if (!typeAllowsTp(p, k, tp))
      continue;
    for (int64_t l = 0; l < numL; ++l) {
      LayerRaw raw = layerRaw(p, l, k, b, tp);
      t.forward[k * numL + l] = forwardPart(raw);
      t.backward[0][k * numL + l] = backwardPart(raw, training, false);
      t.backward[1][k * numL + l] = backwardPart(raw, training, true);
      t.sendIntra[k * numL + l] = sendTime(p, l, b, p.intraLink(k));
    }
  }
  for (int rc = 0; rc < 2; ++rc) {
    std::vector<double> minT(numL, kInf);
    for (int64_t k = 0; k < numT; ++k)
      if (typeAllowsTp(p, k, tp))
        for (int64_t l = 0; l < numL; ++l)
          minT[l] = std::min(minT[l], t.forward[k * numL + l] +
                                          t.backward[rc][k * numL + l]);
    t.prefixMin[rc].assign(numL + 1, 0);
    t.prefixMax[rc].assign(numL + 1, 0);
    for (int64_t l = 0; l < numL; ++l) {
      double v = std::isfinite(minT[l]) ? minT[l] : 0;
      t.prefixMin[rc][l + 1] = t.prefixMin[rc][l] + v;
      t.prefixMax[rc][l + 1] = std::max(t.prefixMax[rc][l], v);
    }
    t.rho[rc].assign(numT, 0);
    for (int64_t k = 0; k < numT; ++k) {
      if (!typeAllowsTp(p, k, tp))
        continue;
      double r = 0;
      for (int64_t l = 0; l < numL; ++l) {
        double tk = t.forward[k * numL + l] + t.backward[rc][k * numL + l];
        if (tk > 0)
          r = std::max(r, minT[l] / tk);
      }
      t.rho[rc][k] = r;
    }
  }
  return t;
}

void StepSearch::slotFill(const StepCandidate &c, const StepTable &tab,
                          std::vector<double> &fill) {
  const std::vector<double> &rho = tab.rho[c.recompute ? 1 : 0];
  std::vector<std::pair<double, int64_t>> slots; // (rho, capacity)
  for (int64_t k = 0; k < p.numTypes; ++k) {
    int64_t cap = stageCapacity(p, k, c.tp, c.unitsPerStage());
    if (cap > 0)
      slots.push_back({rho[k], cap});
  }
  std::sort(slots.begin(), slots.end(),
            [](const auto &x, const auto &y) { return x.first > y.first; });
  fill.assign(c.pp + 1, 0);
  size_t cur = 0;
  int64_t usedOfCur = 0;
  for (int64_t n = 1; n <= c.pp; ++n) {
    while (cur < slots.size() && usedOfCur >= slots[cur].second) {
      ++cur;
      usedOfCur = 0;
    }
    if (cur == slots.size()) {
      // Not enough slots: pp stages cannot be hosted.
      for (int64_t r = n; r <= c.pp; ++r)
        fill[r] = -1;
      return;
    }
    fill[n] = fill[n - 1] + slots[cur].first;
    ++usedOfCur;
  }
}

double StepSearch::lowerBound(const StepCandidate &c) {
  int64_t samples = p.req.globalBatch / (c.dp * c.microBatches);
  const StepTable &tab = table(samples, c.tp);
  int rc = c.recompute ? 1 : 0;
  std::vector<double> fill;
  slotFill(c, tab, fill);
  if (fill[c.pp] < 0)
    return kInf;
  double work = tab.prefixMin[rc][p.numLayers];
  double a = tab.prefixMax[rc][p.numLayers];
  if (work > 0)
    a = std::max(a, fill[c.pp] > 0 ? work / fill[c.pp] : kInf);
  double minOverhead = kInf;
  for (int64_t k = 0; k < p.numTypes; ++k)
    if (stageCapacity(p, k, c.tp, c.unitsPerStage()) > 0)
      minOverhead = std::min(minOverhead, overhead[k]);
  return stepTimeOf(c.microBatches, c.pp, a, minOverhead);
}

//===----------------------------------------------------------------------===//
// StepSearch: the dynamic program
//===----------------------------------------------------------------------===//

bool countsLessEqual(const uint16_t *x, const uint16_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (x[i] > y[i])
      return false;
  return true;
}

/// Adds `lab` to a Pareto front on (a, b) kept as a staircase: a rising, b
/// falling. Exact ties keep the cheaper label.
void insertStaircase(std::vector<StepLabel> &front, const StepLabel &lab) {
  auto lo =
      std::lower_bound(front.begin(), front.end(), lab.a,
                       [](const StepLabel &x, double a) { return x.a < a; });
  // The label before lo has the smallest b of those with a smaller a.
  if (lo != front.begin() && std::prev(lo)->b <= lab.b)
    return;
  if (lo != front.end() && lo->a == lab.a && lo->b <= lab.b) {
    if (lo->b == lab.b && lab.price < lo->price)
      *lo = lab;
    return;
  }
  // Labels from lo on with b >= lab.b are dominated by lab.
  auto hi = lo;
  while (hi != front.end() && hi->b >= lab.b)
    ++hi;
  if (hi == lo) {
    front.insert(lo, lab);
    return;
  }
  *lo = lab;
  front.erase(std::next(lo), hi);
}

void StepSearch::commitState(StepLevel &lv, int64_t state, int64_t nc) {
  lv.stateBegin[state] = static_cast<int32_t>(lv.groupBegin.size());
  if (nc == 0) {
    // The candidates already form one staircase.
    if (!cand.empty()) {
      lv.groupBegin.push_back(static_cast<int32_t>(lv.labels.size()));
      lv.labels.insert(lv.labels.end(), cand.begin(), cand.end());
      lv.groupEnd.push_back(static_cast<int32_t>(lv.labels.size()));
    }
    lv.stateEnd[state] = static_cast<int32_t>(lv.groupBegin.size());
    return;
  }
  // Buckets by rising sums of counts: a group with counts <= another's (and
  // different) has a smaller sum, so it is final by the time the other is
  // filtered against it.
  order.resize(numBuckets);
  std::vector<int64_t> sums(numBuckets, 0);
  for (int64_t x = 0; x < numBuckets; ++x) {
    order[x] = static_cast<int32_t>(x);
    for (int64_t d = 0; d < nc; ++d)
      sums[x] += bucketCounts[x * nc + d];
  }
  std::sort(order.begin(), order.end(), [&](int32_t x, int32_t y) {
    if (sums[x] != sums[y])
      return sums[x] < sums[y];
    return std::lexicographical_compare(
        &bucketCounts[x * nc], &bucketCounts[x * nc] + nc,
        &bucketCounts[y * nc], &bucketCounts[y * nc] + nc);
  });
  const int32_t firstGroup = lv.stateBegin[state];
  for (int32_t x : order) {
    const uint16_t *counts = &bucketCounts[x * nc];
    int32_t begin = static_cast<int32_t>(lv.labels.size());
    for (const StepLabel &lab : buckets[x]) {
      // Groups with fewer stages per type that do as well dominate it.
      bool dominated = false;
      for (int32_t g = firstGroup;
           g < static_cast<int32_t>(lv.groupBegin.size()) && !dominated; ++g) {
        if (!countsLessEqual(lv.groupCounts.data() + g * nc, counts, nc))
          continue;
        const StepLabel *gb = lv.labels.data() + lv.groupBegin[g];
        const StepLabel *ge = lv.labels.data() + lv.groupEnd[g];
        const StepLabel *it =
            std::upper_bound(gb, ge, lab.a, [](double a, const StepLabel &y) {
              return a < y.a;
            });
        dominated = it != gb && std::prev(it)->b <= lab.b;
      }
      if (!dominated)
        lv.labels.push_back(lab);
    }
    if (static_cast<int32_t>(lv.labels.size()) > begin) {
      lv.groupBegin.push_back(begin);
      lv.groupEnd.push_back(static_cast<int32_t>(lv.labels.size()));
      lv.groupCounts.insert(lv.groupCounts.end(), counts, counts + nc);
    }
  }
  lv.stateEnd[state] = static_cast<int32_t>(lv.groupBegin.size());
}

std::optional<StepSolution>
StepSearch::solve(const StepCandidate &c, double boundS,
                  const std::vector<bool> &tracked) {
  const int64_t numL = p.numLayers, numT = p.numTypes, pp = c.pp;
  const int64_t samplesInt = p.req.globalBatch / (c.dp * c.microBatches);
  const double samples = static_cast<double>(samplesInt);
  const StepTable &tab = table(samplesInt, c.tp);
  const TpTable &tpt = tpTable(c.tp);
  const int rc = c.recompute ? 1 : 0;
  const bool training = p.req.training;
  const double mp1 = static_cast<double>(c.microBatches + pp - 1);

  std::vector<int64_t> cap(numT, 0), allowed, constrained(numT, -1);
  int64_t nc = 0;
  double minOverhead = kInf;
  for (int64_t k = 0; k < numT; ++k) {
    cap[k] = stageCapacity(p, k, c.tp, c.unitsPerStage());
    if (cap[k] == 0)
      continue;
    allowed.push_back(k);
    minOverhead = std::min(minOverhead, overhead[k]);
    if (tracked[k] && cap[k] < pp)
      constrained[k] = nc++;
  }
  if (allowed.empty())
    return std::nullopt;
  std::vector<double> fill;
  slotFill(c, tab, fill);
  if (fill[pp] < 0)
    return std::nullopt;
  // Lower bound of the bottleneck over stages 0..s-1 holding layers 0..i-1.
  const std::vector<double> &preMin = tab.prefixMin[rc];
  const std::vector<double> &preMax = tab.prefixMax[rc];
  auto prefixBound = [&](int64_t s, int64_t i) {
    if (s == 0)
      return 0.0;
    double a = preMax[i];
    if (preMin[i] > 0)
      a = std::max(a, fill[s] > 0 ? preMin[i] / fill[s] : kInf);
    return a;
  };
  // Every plan of the candidate has a bottleneck of at least this, so a
  // label's a can be raised to it (and to the prefix bound of its state)
  // without changing any final step time; labels below it then tie on a.
  double floorA = preMax[numL];
  if (preMin[numL] > 0)
    floorA = std::max(floorA, fill[pp] > 0 ? preMin[numL] / fill[pp] : kInf);
  // Types by falling rho, for the prefix bound of labels with counts.
  std::vector<int64_t> byRho = allowed;
  const std::vector<double> &rho = tab.rho[rc];
  std::sort(byRho.begin(), byRho.end(), [&](int64_t x, int64_t y) {
    return rho[x] != rho[y] ? rho[x] > rho[y] : x < y;
  });
  std::vector<uint16_t> newCounts(std::max<int64_t>(nc, 1));
  // Bound of the bottleneck over stages 0..s-1 holding layers 0..i-1 with
  // the stage slots the label's counts leave; kInf when too few are left.
  auto prefixBoundLeft = [&](int64_t s, int64_t i, const uint16_t *counts) {
    if (s == 0)
      return 0.0;
    double sum = 0;
    int64_t left = s;
    for (int64_t k : byRho) {
      int64_t avail =
          cap[k] - (constrained[k] >= 0 ? counts[constrained[k]] : 0);
      int64_t take = std::min(avail, left);
      sum += static_cast<double>(take) * rho[k];
      left -= take;
      if (left == 0)
        break;
    }
    if (left > 0)
      return kInf;
    double a = preMax[i];
    if (preMin[i] > 0)
      a = std::max(a, sum > 0 ? preMin[i] / sum : kInf);
    return a;
  };
  // Adds a label with the counts of the rest plus this stage.
  auto addCandidate = [&](StepLabel lab, const uint16_t *counts, int64_t ci,
                          int64_t s, int64_t i) {
    if (nc > 0) {
      std::copy(counts, counts + nc, newCounts.begin());
      if (ci >= 0)
        ++newCounts[ci];
      lab.a = std::max(lab.a, prefixBoundLeft(s, i, newCounts.data()));
      if (mp1 * lab.a + lab.b > boundS)
        return;
    }
    ++labelsCreated;
    if (nc == 0) {
      insertStaircase(cand, lab);
      return;
    }
    // The staircase of the label's counts.
    uint64_t key = 0;
    for (int64_t d = 0; d < nc; ++d)
      key = key * 0x100000001b3ULL + newCounts[d] + 1;
    int64_t x = 0;
    while (x < numBuckets &&
           (bucketKeys[x] != key ||
            !std::equal(newCounts.begin(), newCounts.begin() + nc,
                        &bucketCounts[x * nc])))
      ++x;
    if (x == numBuckets) {
      if (static_cast<int64_t>(buckets.size()) <= x)
        buckets.emplace_back();
      buckets[x].clear();
      bucketKeys.resize(x + 1);
      bucketKeys[x] = key;
      bucketCounts.resize((x + 1) * nc);
      std::copy(newCounts.begin(), newCounts.begin() + nc,
                &bucketCounts[x * nc]);
      ++numBuckets;
    }
    insertStaircase(buckets[x], lab);
  };

  if (static_cast<int64_t>(levels.size()) < pp)
    levels.resize(pp);
  const std::vector<uint16_t> zeros(std::max<int64_t>(nc, 1), 0);
  for (int64_t s = pp - 1; s >= 0; --s) {
    StepLevel &lv = levels[s];
    lv.labels.clear();
    lv.groupBegin.clear();
    lv.groupEnd.clear();
    lv.groupCounts.clear();
    lv.stateBegin.assign(numL * numT, 0);
    lv.stateEnd.assign(numL * numT, 0);
    const StepLevel *nextLv = s + 1 < pp ? &levels[s + 1] : nullptr;
    int64_t iMin = s, iMax = numL - (pp - s);
    if (s == 0)
      iMax = 0;
    int64_t inFlight = std::min(c.microBatches, pp - s);
    int64_t jMax = numL - 1 - (pp - 1 - s);
    for (int64_t i = iMin; i <= iMax; ++i) {
      double pre = std::max(prefixBound(s, i), floorA);
      if (mp1 * pre + minOverhead > boundS)
        continue;
      for (int64_t k : allowed) {
        cand.clear();
        numBuckets = 0;
        const double memory = p.memoryOf(k);
        const double price = p.priceOf(k);
        const int64_t ci = constrained[k];
        const int64_t row = k * numL;
        MemAcc mem;
        double fwdSum = 0, bwdSum = 0, paramSum = 0, updSum = 0;
        int64_t jMin = s == pp - 1 ? numL - 1 : i;
        for (int64_t j = i; j <= jMax; ++j) {
          fwdSum += tab.forward[row + j];
          bwdSum += tab.backward[rc][row + j];
          mem.add(tpt.staticB[j], tpt.act[j], tpt.work[j], tpt.input[j]);
          paramSum += tpt.param[j];
          updSum += tpt.update[row + j];
          if (stepStageMemory(mem, samples, inFlight, training, c.recompute) >
              memory)
            break;
          double compute = fwdSum + bwdSum;
          if (mp1 * std::max(compute, pre) + minOverhead > boundS)
            break;
          if (j < jMin)
            continue;
          double tail = stepTail(p, k, c.dp, c.tp, paramSum, updSum).totalS;
          if (!nextLv) {
            if (mp1 * std::max(compute, pre) + tail > boundS)
              continue;
            StepLabel lab;
            lab.a = std::max(compute, pre);
            lab.b = tail;
            lab.price = price;
            lab.end = static_cast<int32_t>(j);
            addCandidate(lab, zeros.data(), ci, s, i);
            continue;
          }
          for (int64_t k2 : allowed) {
            int64_t state = (j + 1) * numT + k2;
            double send =
                p.sameNode(k, k2) ? tab.sendIntra[row + j] : tab.sendInter[j];
            double a0 = compute + send;
            for (int32_t g = nextLv->stateBegin[state];
                 g < nextLv->stateEnd[state]; ++g) {
              const uint16_t *counts = nextLv->groupCounts.data() + g * nc;
              if (ci >= 0 && counts[ci] + 1 > cap[k])
                continue;
              // On a staircase, of the labels with a <= a0 only the last
              // can matter, and of those with b <= tail only the first.
              const StepLabel *gb =
                  nextLv->labels.data() + nextLv->groupBegin[g];
              const StepLabel *ge = nextLv->labels.data() + nextLv->groupEnd[g];
              const StepLabel *first = std::upper_bound(
                  gb, ge, a0,
                  [](double a, const StepLabel &y) { return a < y.a; });
              if (first != gb)
                --first;
              const StepLabel *last = std::lower_bound(
                  first, ge, tail,
                  [](const StepLabel &y, double b) { return y.b > b; });
              if (last == ge)
                --last;
              for (const StepLabel *nx = first; nx <= last; ++nx) {
                StepLabel lab;
                lab.a = std::max(std::max(a0, nx->a), pre);
                lab.b = std::max(tail, nx->b);
                if (mp1 * lab.a + lab.b > boundS)
                  continue;
                lab.price = price + nx->price;
                lab.end = static_cast<int32_t>(j);
                lab.next = static_cast<int32_t>(nx - nextLv->labels.data());
                lab.nextType = static_cast<int32_t>(k2);
                addCandidate(lab, counts, ci, s, i);
              }
            }
          }
        }
        commitState(lv, i * numT + k, nc);
      }
    }
  }

  std::optional<StepSolution> best;
  const StepLevel &first = levels[0];
  for (int64_t k : allowed) {
    for (int32_t g = first.stateBegin[k]; g < first.stateEnd[k]; ++g) {
      for (int32_t x = first.groupBegin[g]; x < first.groupEnd[g]; ++x) {
        const StepLabel &lab = first.labels[x];
        StepSolution sol;
        sol.cand = c;
        sol.stepS = stepTimeOf(c.microBatches, pp, lab.a, lab.b);
        sol.price = lab.price;
        if (sol.stepS > boundS)
          continue;
        if (best && !sol.betterThan(*best))
          continue;
        int64_t type = k, idx = x, firstLayer = 0;
        for (int64_t s = 0; s < pp; ++s) {
          const StepLabel &cur = levels[s].labels[idx];
          sol.stages.push_back({firstLayer, cur.end, type});
          firstLayer = cur.end + 1;
          type = cur.nextType;
          idx = cur.next;
        }
        best = std::move(sol);
      }
    }
  }
  return best;
}

//===----------------------------------------------------------------------===//
// The Exact strategy
//===----------------------------------------------------------------------===//

/// The best plan of a candidate within `boundS`: first ignoring the types'
/// capacities, then counting the stages of each type the relaxed plan puts
/// on too many stages, until a plan respects them all.
std::optional<StepSolution> solveWithCapacity(StepSearch &search,
                                              const Problem &p,
                                              const StepCandidate &c,
                                              double boundS) {
  std::vector<bool> tracked(p.numTypes, false);
  while (true) {
    std::optional<StepSolution> sol = search.solve(c, boundS, tracked);
    if (!sol)
      return sol;
    std::vector<int64_t> used(p.numTypes, 0);
    for (const StageChoice &st : sol->stages)
      ++used[st.type];
    bool grew = false;
    for (int64_t k = 0; k < p.numTypes; ++k) {
      if (used[k] <= stageCapacity(p, k, c.tp, c.unitsPerStage()))
        continue;
      assert(!tracked[k] && "a tracked capacity was exceeded");
      tracked[k] = true;
      grew = true;
    }
    if (!grew)
      return sol;
  }
}

} // namespace

std::optional<StepSolution> planner::exactStepTime(const Problem &p,
                                                   int64_t &scored) {
  StepSearch search(p);
  std::vector<StepCandidate> cands = enumerateStepCandidates(p);
  for (StepCandidate &c : cands)
    c.lowerBoundS = search.lowerBound(c);
  // A total order, so that the search does not depend on the sort.
  std::sort(cands.begin(), cands.end(),
            [](const StepCandidate &x, const StepCandidate &y) {
              auto key = [](const StepCandidate &c) {
                return std::make_tuple(c.lowerBoundS, c.pp * c.unitsPerStage(),
                                       c.dp, c.tp, c.pp, c.microBatches,
                                       c.recompute);
              };
              return key(x) < key(y);
            });
  std::optional<StepSolution> best;
  auto bestBound = [&] { return best ? best->stepS * (1 + kTieRel) : kInf; };
  // Solves `c` within `bound` and the best so far; true when that settles
  // the candidate (a plan found, or none within the best so far).
  auto attempt = [&](const StepCandidate &c, double bound) {
    double limit = bestBound();
    std::optional<StepSolution> sol =
        solveWithCapacity(search, p, c, std::min(bound, limit));
    if (!sol)
      return bound >= limit;
    if (!best || sol->betterThan(*best))
      best = std::move(sol);
    return true;
  };
  // Candidates in order of their lower bound, each first within a small
  // multiple of it (cheap); those with no plan there wait until a best plan
  // bounds their search.
  std::vector<const StepCandidate *> deferred;
  const double slack[] = {0.02, 0.15, 0.6};
  for (const StepCandidate &c : cands) {
    if (!std::isfinite(c.lowerBoundS) || c.lowerBoundS > bestBound())
      break;
    ++scored;
    bool settled = false;
    for (double d : slack)
      if ((settled = attempt(c, c.lowerBoundS * (1 + d))))
        break;
    if (!settled)
      deferred.push_back(&c);
  }
  for (const StepCandidate *c : deferred)
    if (c->lowerBoundS <= bestBound())
      attempt(*c, kInf);
  scored += search.labelsCreated;
  return best;
}
