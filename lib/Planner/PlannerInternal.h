//===- PlannerInternal.h - The planner's shared model -----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Internal to lib/Planner: the pieces of the planner's model that the
// searches (StepTimeExact.cpp, StepTimeSearch.cpp, CostSearch.cpp),
// evaluatePlan (EvaluatePlan.cpp) and makePlan (Planner.cpp) share: the
// request with its device types flattened (Problem), memory and time of a
// stage under each objective, the comparisons that break ties, and the
// entry points of the two objectives' searches. Small pieces the searches
// call in their inner loops are defined here; the others live in
// PlanModel.cpp.
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
//===----------------------------------------------------------------------===//

#ifndef DIST_LIB_ANALYSIS_PLANNERINTERNAL_H
#define DIST_LIB_ANALYSIS_PLANNERINTERNAL_H

#include "dist/Planner/Planner.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dist::planner {

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Relative difference below which two objective values tie.
constexpr double kTieRel = 1e-12;

/// `v` with 4 significant digits, or without decimals from 1000 on.
std::string formatNumber(double v);

/// "<x.y> GiB".
std::string formatGiB(double bytes);

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The divisors of `n`, rising.
std::vector<int64_t> divisorsOf(int64_t n);

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

inline int64_t layerTp(const LayerCost &layer, int64_t tp) {
  return layer.tensorParallel ? tp : 1;
}

/// Parameter bytes one device holds for a layer (with gradient and Adam
/// state in training).
inline double staticBytes(const LayerCost &layer, int64_t tp, bool training) {
  double shards = static_cast<double>(layerTp(layer, tp));
  double bytes =
      (layer.paramBytes + layer.frozenParamBytes + layer.sparseParamBytes) /
      shards;
  if (training)
    bytes += 3 * layer.paramBytes / shards;
  return bytes;
}

inline double activationPerSample(const LayerCost &layer, int64_t tp) {
  return layer.activationBytes / static_cast<double>(layerTp(layer, tp));
}

inline double workingPerSample(const LayerCost &layer, int64_t tp) {
  return layer.inputBytes + layer.outputBytes + activationPerSample(layer, tp);
}

inline double paramShardBytes(const LayerCost &layer, int64_t tp) {
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

inline double stepStageMemory(const MemAcc &acc, double samples,
                              int64_t inFlight, bool training, bool recompute) {
  double flight = static_cast<double>(inFlight);
  if (!training)
    return acc.staticBytes + acc.workMax * samples;
  if (recompute)
    return acc.staticBytes + acc.firstInput * samples * flight +
           acc.actMax * samples;
  return acc.staticBytes + acc.actSum * samples * flight;
}

inline double costStageMemory(const MemAcc &acc, double samples,
                              bool training) {
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

/// LayerRaw of layer `l` on device type `k` for `samples` samples at
/// tensor-parallel degree `tp`.
LayerRaw layerRaw(const Problem &p, int64_t l, int64_t k, double samples,
                  int64_t tp);

inline double forwardPart(const LayerRaw &raw) {
  return raw.fwdS + 2 * raw.tpCommS;
}

inline double backwardPart(const LayerRaw &raw, bool training, bool recompute) {
  if (!training)
    return 0;
  double t = raw.bwdS + 2 * raw.tpCommS;
  if (recompute)
    t += raw.fwdS + 2 * raw.tpCommS;
  return t;
}

/// Optimizer update time of layer `l` on device type `k` at degree `tp`.
double updateTime(const Problem &p, int64_t l, int64_t k, int64_t tp);

/// Time to send the output of layer `l` for `samples` samples over `link`.
double sendTime(const Problem &p, int64_t l, double samples,
                const LinkSpec &link);

/// Once-per-step part of a stage.
struct StageTail {
  double allreduceS = 0;
  double updateS = 0;
  double overheadS = 0;
  double totalS = 0;
};

/// The tail of a stage on device type `k` whose parameter shards have
/// `paramBytes` bytes and take `updateS` to update.
StageTail stepTail(const Problem &p, int64_t k, int64_t dp, int64_t tp,
                   double paramBytes, double updateS);

inline double stepTimeOf(int64_t microBatches, int64_t pp, double maxStageS,
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

inline double microBatchSamples(const PlanRequest &req,
                                const StepCandidate &c) {
  return static_cast<double>(req.globalBatch / (c.dp * c.microBatches));
}

/// Stage `stage` of candidate `c`: layers `first`..`last` on device type
/// `k`, sending to device type `nextType` (-1: the last stage).
StepStage evalStepStage(const Problem &p, const StepCandidate &c, int64_t stage,
                        int64_t first, int64_t last, int64_t k,
                        int64_t nextType);

inline bool typeAllowsTp(const Problem &p, int64_t k, int64_t tp) {
  return p.types[k].units > 0 && tp <= p.types[k].unitsPerNode &&
         tp <= p.req.maxTensorParallel;
}

/// Stages of `units` units that device type `k` can host with degree tp.
inline int64_t stageCapacity(const Problem &p, int64_t k, int64_t tp,
                             int64_t units) {
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
                                       const std::vector<StageChoice> &stages);

/// Lexicographic comparison of (step time with tolerance, devices, cost).
inline bool betterStep(double stepS, int64_t devices, double cost,
                       double bestStepS, int64_t bestDevices, double bestCost) {
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

inline LinkKind linkKindBetween(const Problem &p, int64_t k, int64_t next) {
  if (next < 0)
    return LinkKind::None;
  return p.sameNode(k, next) ? LinkKind::Intra : LinkKind::Inter;
}

/// Per-sample forward + backward time of a layer on one unit, timed at
/// globalBatch samples.
double costLayerPerSample(const Problem &p, int64_t l, int64_t k);

/// Update time of layer `l` on one unit of type `k` (0 in inference).
double costLayerUpdate(const Problem &p, int64_t l, int64_t k);

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

/// Per-sample time of sending the output of layer `last` over the link of
/// `kind` (0 for LinkKind::None).
double costSendPerSample(const Problem &p, int64_t k, int64_t last,
                         LinkKind kind);

/// Memory per device of a Cost stage with `units` units.
double costStageMemoryAt(const Problem &p, const CostSums &sums, int64_t units);

/// Figures of a Cost stage on type `k` with `units` units.
CostStage costStageAt(const Problem &p, const CostSums &sums, int64_t k,
                      double sendPerSampleS, int64_t units);

/// Largest useful unit count of a Cost stage on type k.
inline int64_t costMaxUnits(const Problem &p, int64_t k) {
  return std::min(p.types[k].units, p.req.globalBatch);
}

/// Smallest unit count that gives the stage `minThroughput` within memory,
/// or -1. `throughputAtMax` receives the stage's throughput at the largest
/// count whose memory fits (0 when none), for the RL penalty.
int64_t chooseCostUnits(const Problem &p, const CostSums &sums, int64_t k,
                        double sendPerSampleS, double minThroughput,
                        double *throughputAtMax = nullptr);

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

inline bool betterCost(double cost, int64_t devices, double throughput,
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

//===----------------------------------------------------------------------===//
// StepTime search
//===----------------------------------------------------------------------===//

/// A StepTime plan a search found: its decisions other than the stages,
/// its step time and the stages with their device types.
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

/// The candidate space shared by Exact and Exhaustive (see the top).
std::vector<StepCandidate> enumerateStepCandidates(const Problem &p);

/// The Exact strategy (StepTimeExact.cpp); `scored` grows by the
/// candidates it searched and the labels its dynamic program made.
std::optional<StepSolution> exactStepTime(const Problem &p, int64_t &scored);

/// Runs the requested strategy of the StepTime objective and returns its
/// plan's decisions (evaluatePlan fills in the figures); `scored` grows by
/// the candidate plans it scored.
std::optional<Plan> planStepTime(const Problem &p, int64_t &scored,
                                 std::string &error);

//===----------------------------------------------------------------------===//
// Cost search
//===----------------------------------------------------------------------===//

/// Runs the requested strategy of the Cost objective and returns its plan's
/// decisions (evaluatePlan fills in the figures); `scored` grows by the
/// candidate stages it scored.
std::optional<Plan> planCost(const Problem &p, int64_t &scored,
                             std::string &error);

//===----------------------------------------------------------------------===//
// Why nothing fits
//===----------------------------------------------------------------------===//

/// Why nothing fits: the layer that fits nowhere, if there is one.
std::string explainNoFit(const Problem &p);

} // namespace mlir::dist::planner

#endif // DIST_LIB_ANALYSIS_PLANNERINTERNAL_H
