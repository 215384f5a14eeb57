//===- Planner.cpp - Global planner over the cost model -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The planner's search and plan evaluation: the StepTime objective (uniform
// data / tensor / pipeline degrees, micro-batches, recomputation, a stage
// partition and a device type per stage) and the Cost objective (HeterPS: a
// device type per layer, each stage sized to a throughput floor), each with
// the Exact, Exhaustive, Greedy and RL strategies; evaluatePlan, which
// recomputes every figure of a plan from its decisions; the device type list
// and the enum names. The plan reports live in PlanReport.cpp.
//
//===----------------------------------------------------------------------===//
//
// The model. Every strategy scores plans with the functions below and
// evaluatePlan uses the same ones, so a plan's figures do not depend on the
// strategy that found it.
//
// Device types: listDeviceTypes() has one type per (node, device) pair with
// node.count * device.count units. A stage runs on units of one type.
//
// Layer tensor-parallel degree: tp splits only layers with tensorParallel
// set; the others run replicated on every tp rank (full work, full
// parameters, full activations). Below tp_l is tp for the former, 1 for the
// latter, and every cost model call gets tp_l.
//
// StepTime objective (uniform degrees dp, tp, pp, m micro-batches, r =
// recompute):
//  - Every stage takes dp * tp units of its type; the stages on a type must
//    not take more units than it has; tp <= the type's unitsPerNode and
//    <= maxTensorParallel; globalBatch % (dp * m) == 0 and a micro-batch has
//    b = globalBatch / (dp * m) samples on each data-parallel rank.
//  - Stage s per micro-batch: t_s = F_s + B_s + send_s where
//      F_s = sum_l fwd_l + 2 AR_l,
//      B_s = sum_l bwd_l + 2 AR_l (+ fwd_l + 2 AR_l when r)  (training only),
//    fwd_l / bwd_l = cm.phaseTimeS(layer, phase, dev, b, tp_l, threads),
//    AR_l = all-reduce of outputBytes * b over tp_l ranks on the node's intra
//    link (0 when tp_l = 1; Megatron: two per layer and phase), send_s =
//    p2p of the stage's last outputBytes * b to stage s + 1 over the intra
//    link of the node when both device types belong to the same NodeSpec,
//    else the inter-node link (0 for the last stage; the gradient sent back
//    is not counted).
//  - Tail of stage s, once per step: training: all-reduce of
//    sum_l paramBytes / tp_l over dp ranks (inter link when dp * tp >
//    unitsPerNode, intra otherwise; 0 when dp = 1) plus
//    sum_l cm.updateTimeS(layer, dev, tp_l, threads); always plus
//    cm.stepOverheadS(dev).
//  - Step time = (m + pp - 1) * max_s t_s + max_s tail_s (1F1B; GPipe has
//    the same bubble). Throughput = globalBatch / step time.
//  - Memory per device of stage s: sum_l (paramBytes + frozenParamBytes +
//    sparseParamBytes) / tp_l, plus in training 3 * paramBytes / tp_l
//    (gradient and two Adam moments), plus activations:
//      training:  sum_l activationBytes / tp_l * b * k_s, where k_s =
//                 min(m, pp - s) micro-batches are in flight on stage s;
//      recompute: inputBytes of the first layer * b * k_s plus
//                 max_l activationBytes / tp_l * b;
//      inference: max_l (inputBytes + outputBytes + activationBytes / tp_l)
//                 * b (one layer of one micro-batch).
//    It must not exceed the device's memoryBytes.
//  - Candidate space, shared by Exact and Exhaustive: tp is a power of two
//    up to min(maxTensorParallel, largest unitsPerNode), and only 1 when no
//    layer is tensor-parallel; dp is any divisor of globalBatch with dp * tp
//    <= the units of some type; m is any divisor of globalBatch / dp; pp is
//    1 .. min(layers, stages the cluster can host); recompute is tried only
//    in training. Any contiguous partition and any device type per stage.
//  - Ties in step time (relative 1e-12) go to fewer devices, then lower cost.
//
// Cost objective (HeterPS): every layer gets a device type; maximal runs of
// one type form the stages (tp = 1, the stage's units run data parallel).
// With G = globalBatch:
//  - Per-sample time of a stage: T = sum_l (fwd_l + bwd_l) / G with the
//    phases timed at G samples on one unit, plus the boundary transfer
//    p2p(outputBytes * G, link) / G (link chosen as above; none for the
//    last stage).
//  - With n units a step of G samples takes ceil(G / n) * T + AR(n) +
//    update + stepOverheadS, AR(n) being the all-reduce of the stage's
//    paramBytes over n units (training, n > 1; inter link when n >
//    unitsPerNode) and update sum_l cm.updateTimeS(layer, dev, 1, threads)
//    (training). throughput(n) = G / that. The stage takes the smallest n
//    <= min(units, G) with throughput(n) >= minThroughput whose memory fits:
//    parameters as above (tp 1) plus activations for ceil(G / n) samples
//    (training: sum_l activationBytes; inference: the largest layer's
//    inputBytes + outputBytes + activationBytes).
//  - The stages of one type together take at most its units. Pipeline
//    throughput = min over stages; cost = sum n * pricePerHour; the search
//    minimises the cost (ties: fewer devices, then higher throughput).
//
// Strategies:
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
//  - Exact, Cost: a dynamic program over (first layer, device type) from the
//    last layer back with labels (cost, units per tracked type), dropping
//    labels a cheaper one with no more units of any tracked type beats, so
//    it is exact despite the shared capacities; types are tracked as for
//    StepTime; pruned by the cheapest cost the earlier layers could have and
//    by the Greedy plan's cost.
//  - Exhaustive: every candidate, partition and type sequence (StepTime) or
//    every types^layers assignment (Cost); refused above exhaustiveLimit.
//  - Greedy, StepTime: the best single-stage data-parallel plan on one
//    device type, dp the largest divisor of globalBatch the type has units
//    for, tp 1, any micro-batch count and recompute. Greedy, Cost: each
//    layer on the type with the lowest price * per-sample time; while the
//    plan is infeasible the layers of the offending stage move to their
//    next cheapest type; then a local search gives a whole stage or one
//    layer another type while that lowers the cost.
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
//    local search. RL, StepTime: returns the Greedy plan.
//
//===----------------------------------------------------------------------===//

#include "dist/Analysis/Planner.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <tuple>
#include <unordered_map>

using namespace mlir;
using namespace mlir::dist;

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
// Model pieces shared by the searches and evaluatePlan
//===----------------------------------------------------------------------===//

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kInf = std::numeric_limits<double>::infinity();
/// Relative difference below which two objective values tie.
constexpr double kTieRel = 1e-12;
/// Episodes per policy update of the RL strategy.
constexpr int64_t kRlBatch = 16;
/// Largest log-ratio the RL prior gives between two types of a layer.
constexpr double kRlPriorClamp = 4;
/// Initial preference of the RL policy for the previous layer's type.
constexpr double kRlStay = 2;

std::string formatNumber(double v) {
  char buf[64];
  if (std::fabs(v) >= 1000)
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  else
    std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string formatGiB(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", bytes / kGiB);
  return buf;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::vector<int64_t> divisorsOf(int64_t n) {
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

/// The request with its device types flattened.
struct Problem {
  Problem(const PlanRequest &req, const CostModel &cm)
      : req(req), cm(cm), types(listDeviceTypes(*req.cluster)),
        numLayers(static_cast<int64_t>(req.layers.size())),
        numTypes(static_cast<int64_t>(types.size())) {}

  const LayerCost &layer(int64_t l) const { return req.layers[l]; }
  const DeviceSpec &dev(int64_t k) const { return *types[k].spec; }
  bool sameNode(int64_t a, int64_t b) const {
    return types[a].nodeIndex == types[b].nodeIndex;
  }
  const LinkSpec &intraLink(int64_t k) const {
    return types[k].node->intraLink;
  }
  const LinkSpec &interLink() const { return req.cluster->interLink; }
  const LinkSpec &linkBetween(int64_t a, int64_t b) const {
    return sameNode(a, b) ? intraLink(a) : interLink();
  }
  double memoryOf(int64_t k) const { return dev(k).memoryBytes; }
  double priceOf(int64_t k) const { return dev(k).pricePerHour; }

  const PlanRequest &req;
  const CostModel &cm;
  std::vector<DeviceType> types;
  int64_t numLayers;
  int64_t numTypes;
};

int64_t layerTp(const LayerCost &layer, int64_t tp) {
  return layer.tensorParallel ? tp : 1;
}

/// Parameter bytes one device holds for a layer (with gradient and Adam
/// state in training).
double staticBytes(const LayerCost &layer, int64_t tp, bool training) {
  double shards = static_cast<double>(layerTp(layer, tp));
  double bytes =
      (layer.paramBytes + layer.frozenParamBytes + layer.sparseParamBytes) /
      shards;
  if (training)
    bytes += 3 * layer.paramBytes / shards;
  return bytes;
}

double activationPerSample(const LayerCost &layer, int64_t tp) {
  return layer.activationBytes / static_cast<double>(layerTp(layer, tp));
}

double workingPerSample(const LayerCost &layer, int64_t tp) {
  return layer.inputBytes + layer.outputBytes + activationPerSample(layer, tp);
}

double paramShardBytes(const LayerCost &layer, int64_t tp) {
  return layer.paramBytes / static_cast<double>(layerTp(layer, tp));
}

/// Memory terms of a stage, accumulated layer by layer in layer order.
struct MemAcc {
  double staticBytes = 0;
  double actSum = 0;
  double actMax = 0;
  double workMax = 0;
  double firstInput = 0;
  bool empty = true;

  void add(double staticB, double act, double work, double input) {
    if (empty)
      firstInput = input;
    empty = false;
    staticBytes += staticB;
    actSum += act;
    actMax = std::max(actMax, act);
    workMax = std::max(workMax, work);
  }
};

double stepStageMemory(const MemAcc &acc, double samples, int64_t inFlight,
                       bool training, bool recompute) {
  double flight = static_cast<double>(inFlight);
  if (!training)
    return acc.staticBytes + acc.workMax * samples;
  if (recompute)
    return acc.staticBytes + acc.firstInput * samples * flight +
           acc.actMax * samples;
  return acc.staticBytes + acc.actSum * samples * flight;
}

double costStageMemory(const MemAcc &acc, double samples, bool training) {
  if (!training)
    return acc.staticBytes + acc.workMax * samples;
  return acc.staticBytes + acc.actSum * samples;
}

//===----------------------------------------------------------------------===//
// StepTime: stage figures
//===----------------------------------------------------------------------===//

/// Times of one layer for one micro-batch on one device.
struct LayerRaw {
  double fwdS = 0;
  double bwdS = 0;
  double tpCommS = 0; ///< one all-reduce of the layer's output over tp_l
};

LayerRaw layerRaw(const Problem &p, int64_t l, int64_t k, double samples,
                  int64_t tp) {
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

double forwardPart(const LayerRaw &raw) { return raw.fwdS + 2 * raw.tpCommS; }

double backwardPart(const LayerRaw &raw, bool training, bool recompute) {
  if (!training)
    return 0;
  double t = raw.bwdS + 2 * raw.tpCommS;
  if (recompute)
    t += raw.fwdS + 2 * raw.tpCommS;
  return t;
}

double updateTime(const Problem &p, int64_t l, int64_t k, int64_t tp) {
  const LayerCost &layer = p.layer(l);
  return p.cm.updateTimeS(layer, p.dev(k), layerTp(layer, tp), p.req.threads);
}

double sendTime(const Problem &p, int64_t l, double samples,
                const LinkSpec &link) {
  return p.cm.p2pTimeS(p.layer(l).outputBytes * samples, link);
}

/// Once-per-step part of a stage.
struct StageTail {
  double allreduceS = 0;
  double updateS = 0;
  double overheadS = 0;
  double totalS = 0;
};

StageTail stepTail(const Problem &p, int64_t k, int64_t dp, int64_t tp,
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

double stepTimeOf(int64_t microBatches, int64_t pp, double maxStageS,
                  double maxTailS) {
  return static_cast<double>(microBatches + pp - 1) * maxStageS + maxTailS;
}

/// Decisions of a StepTime plan other than the stages.
struct StepCandidate {
  int64_t dp = 1;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t microBatches = 1;
  bool recompute = false;
  double lowerBoundS = 0;

  int64_t unitsPerStage() const { return dp * tp; }
};

struct StageChoice {
  int64_t first = 0;
  int64_t last = 0;
  int64_t type = 0;
};

/// Everything about one stage of a StepTime plan, per micro-batch unless
/// said otherwise.
struct StepStage {
  double forwardS = 0;  ///< F_s
  double backwardS = 0; ///< B_s
  double sendS = 0;
  double timeS = 0;    ///< t_s
  double computeS = 0; ///< compute part of t_s
  double commS = 0;    ///< collectives and send part of t_s
  StageTail tail;
  double memoryBytes = 0;
};

double microBatchSamples(const PlanRequest &req, const StepCandidate &c) {
  return static_cast<double>(req.globalBatch / (c.dp * c.microBatches));
}

StepStage evalStepStage(const Problem &p, const StepCandidate &c, int64_t stage,
                        int64_t first, int64_t last, int64_t k,
                        int64_t nextType) {
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

bool typeAllowsTp(const Problem &p, int64_t k, int64_t tp) {
  return p.types[k].units > 0 && tp <= p.types[k].unitsPerNode &&
         tp <= p.req.maxTensorParallel;
}

/// Stages of `units` units that device type `k` can host with degree tp.
int64_t stageCapacity(const Problem &p, int64_t k, int64_t tp, int64_t units) {
  if (!typeAllowsTp(p, k, tp))
    return 0;
  return p.types[k].units / units;
}

/// Scores a full StepTime decision; nullopt when a stage does not fit in
/// memory or the types' units are exceeded.
struct StepScore {
  double stepS = 0;
  double price = 0; ///< sum over stages of pricePerHour
};

std::optional<StepScore> scoreStepPlan(const Problem &p, const StepCandidate &c,
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

/// Lexicographic comparison of (step time with tolerance, devices, cost).
bool betterStep(double stepS, int64_t devices, double cost, double bestStepS,
                int64_t bestDevices, double bestCost) {
  double tol = kTieRel * std::max(std::fabs(stepS), std::fabs(bestStepS));
  if (stepS < bestStepS - tol)
    return true;
  if (stepS > bestStepS + tol)
    return false;
  if (devices != bestDevices)
    return devices < bestDevices;
  return cost < bestCost;
}

//===----------------------------------------------------------------------===//
// Cost: stage figures
//===----------------------------------------------------------------------===//

enum class LinkKind { None = 0, Intra = 1, Inter = 2 };

LinkKind linkKindBetween(const Problem &p, int64_t k, int64_t next) {
  if (next < 0)
    return LinkKind::None;
  return p.sameNode(k, next) ? LinkKind::Intra : LinkKind::Inter;
}

/// Per-sample forward + backward time of a layer on one unit, timed at
/// globalBatch samples.
double costLayerPerSample(const Problem &p, int64_t l, int64_t k) {
  const LayerCost &layer = p.layer(l);
  double g = static_cast<double>(p.req.globalBatch);
  double t = p.cm.phaseTimeS(layer, layer.fwd, p.dev(k), g, 1, p.req.threads);
  if (p.req.training)
    t += p.cm.phaseTimeS(layer, layer.bwd, p.dev(k), g, 1, p.req.threads);
  return t / g;
}

double costLayerUpdate(const Problem &p, int64_t l, int64_t k) {
  if (!p.req.training)
    return 0;
  return p.cm.updateTimeS(p.layer(l), p.dev(k), 1, p.req.threads);
}

/// Sums over a Cost stage's layers, accumulated in layer order.
struct CostSums {
  double perSampleS = 0;
  MemAcc mem;
  double paramBytes = 0;
  double updateS = 0;

  void add(const Problem &p, int64_t l, double perSample, double update) {
    const LayerCost &layer = p.layer(l);
    bool training = p.req.training;
    perSampleS += perSample;
    mem.add(staticBytes(layer, 1, training), activationPerSample(layer, 1),
            workingPerSample(layer, 1), layer.inputBytes);
    paramBytes += layer.paramBytes;
    updateS += update;
  }
};

/// Figures of a Cost stage with `units` units.
struct CostStage {
  double sendPerSampleS = 0;
  int64_t perUnitSamples = 0;
  double allreduceS = 0;
  double updateS = 0;
  double overheadS = 0;
  double stepS = 0;
  double throughput = 0;
  double memoryBytes = 0;
};

double costSendPerSample(const Problem &p, int64_t k, int64_t last,
                         LinkKind kind) {
  if (kind == LinkKind::None)
    return 0;
  double g = static_cast<double>(p.req.globalBatch);
  const LinkSpec &link =
      kind == LinkKind::Intra ? p.intraLink(k) : p.interLink();
  return sendTime(p, last, g, link) / g;
}

double costStageMemoryAt(const Problem &p, const CostSums &sums,
                         int64_t units) {
  double samples = static_cast<double>(
      ceilDiv(p.req.globalBatch, std::max<int64_t>(1, units)));
  return costStageMemory(sums.mem, samples, p.req.training);
}

CostStage costStageAt(const Problem &p, const CostSums &sums, int64_t k,
                      double sendPerSampleS, int64_t units) {
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

/// Largest useful unit count of a Cost stage on type k.
int64_t costMaxUnits(const Problem &p, int64_t k) {
  return std::min(p.types[k].units, p.req.globalBatch);
}

/// Smallest unit count that gives the stage `minThroughput` within memory,
/// or -1. `throughputAtMax` receives the stage's throughput at the largest
/// count whose memory fits (0 when none), for the RL penalty.
int64_t chooseCostUnits(const Problem &p, const CostSums &sums, int64_t k,
                        double sendPerSampleS, double minThroughput,
                        double *throughputAtMax = nullptr) {
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

/// A Cost plan: stages with their units.
struct CostStageChoice {
  int64_t first = 0;
  int64_t last = 0;
  int64_t type = 0;
  int64_t units = 0;
};

struct CostSolution {
  double cost = 0;
  int64_t devices = 0;
  double throughput = 0;
  std::vector<CostStageChoice> stages;
};

bool betterCost(double cost, int64_t devices, double throughput,
                const CostSolution &best) {
  double tol = kTieRel * std::max(std::fabs(cost), std::fabs(best.cost));
  if (cost < best.cost - tol)
    return true;
  if (cost > best.cost + tol)
    return false;
  if (devices != best.devices)
    return devices < best.devices;
  return throughput > best.throughput;
}

} // namespace

//===----------------------------------------------------------------------===//
// evaluatePlan
//===----------------------------------------------------------------------===//

namespace {

/// 1F1B (GPipe in inference) schedule of one step; stages start each
/// operation when its input is there and the stage is free.
void fillStepTimeline(Plan &plan, const std::vector<StepStage> &evals,
                      bool training) {
  int64_t pp = static_cast<int64_t>(evals.size());
  int64_t m = plan.microBatches;
  // Per stage: (is backward, micro-batch) in 1F1B order.
  std::vector<std::vector<std::pair<bool, int64_t>>> order(pp);
  for (int64_t s = 0; s < pp; ++s) {
    std::vector<std::pair<bool, int64_t>> &ops = order[s];
    if (!training) {
      for (int64_t i = 0; i < m; ++i)
        ops.push_back({false, i});
      continue;
    }
    int64_t warm = std::min(pp - s - 1, m);
    for (int64_t i = 0; i < warm; ++i)
      ops.push_back({false, i});
    for (int64_t i = 0; i < m - warm; ++i) {
      ops.push_back({false, warm + i});
      ops.push_back({true, i});
    }
    for (int64_t i = m - warm; i < m; ++i)
      ops.push_back({true, i});
  }
  std::vector<double> fwdEnd(pp * m, 0), bwdEnd(pp * m, 0), freeAt(pp, 0);
  std::vector<char> fwdDone(pp * m, 0), bwdDone(pp * m, 0);
  std::vector<size_t> next(pp, 0);
  int64_t remaining = 0;
  for (const auto &ops : order)
    remaining += static_cast<int64_t>(ops.size());
  while (remaining > 0) {
    bool progress = false;
    for (int64_t s = 0; s < pp; ++s) {
      const StepStage &ev = evals[s];
      while (next[s] < order[s].size()) {
        auto [backward, i] = order[s][next[s]];
        double ready = 0;
        if (!backward) {
          if (s > 0 && !fwdDone[(s - 1) * m + i])
            break;
          ready = s > 0 ? fwdEnd[(s - 1) * m + i] : 0;
        } else if (s + 1 < pp) {
          if (!bwdDone[(s + 1) * m + i])
            break;
          ready = bwdEnd[(s + 1) * m + i];
        } else {
          if (!fwdDone[s * m + i])
            break;
          ready = fwdEnd[s * m + i];
        }
        double start = std::max(freeAt[s], ready);
        double end;
        if (!backward) {
          end = start + ev.forwardS;
          plan.timeline.push_back({s, "fwd", i, start, end});
          if (ev.sendS > 0) {
            plan.timeline.push_back({s, "send", i, end, end + ev.sendS});
            end += ev.sendS;
          }
          fwdEnd[s * m + i] = end;
          fwdDone[s * m + i] = 1;
        } else {
          end = start + ev.backwardS;
          plan.timeline.push_back({s, "bwd", i, start, end});
          bwdEnd[s * m + i] = end;
          bwdDone[s * m + i] = 1;
        }
        freeAt[s] = end;
        ++next[s];
        --remaining;
        progress = true;
      }
    }
    assert(progress && "1F1B schedule deadlocked");
    if (!progress)
      break;
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
  fillStepTimeline(plan, evals, req.training);
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

//===----------------------------------------------------------------------===//
// StepTime search
//===----------------------------------------------------------------------===//

namespace {

bool anyTensorParallel(const Problem &p) {
  for (const LayerCost &layer : p.req.layers)
    if (layer.tensorParallel)
      return true;
  return false;
}

/// The candidate space shared by Exact and Exhaustive (see the top).
std::vector<StepCandidate> enumerateStepCandidates(const Problem &p) {
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

struct StepSolution {
  StepCandidate cand;
  double stepS = kInf;
  double price = 0;
  std::vector<StageChoice> stages;

  int64_t devices() const { return cand.pp * cand.unitsPerStage(); }
  double cost() const {
    return price * static_cast<double>(cand.unitsPerStage());
  }
  bool betterThan(const StepSolution &o) const {
    return betterStep(stepS, devices(), cost(), o.stepS, o.devices(), o.cost());
  }
};

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

std::optional<StepSolution> exactStepTime(const Problem &p, int64_t &scored) {
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

/// Why nothing fits: the layer that fits nowhere, if there is one.
std::string explainNoFit(const Problem &p) {
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

std::optional<Plan> planStepTime(const Problem &p, int64_t &scored,
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

} // namespace

//===----------------------------------------------------------------------===//
// Cost search
//===----------------------------------------------------------------------===//

namespace {

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

std::optional<Plan> planCost(const Problem &p, int64_t &scored,
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

//===----------------------------------------------------------------------===//
// makePlan
//===----------------------------------------------------------------------===//

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
