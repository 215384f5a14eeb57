//===- PlannerTest.cpp - Planner search and plan evaluation ---------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Tests of the planner over a simple linear cost model defined here (time =
// FLOPs over peak + bytes over bandwidth, tp divides the work, ring
// alpha-beta collectives), so that they do not depend on AnalyticCostModel:
// Exact against Exhaustive on random small instances for both objectives,
// memory-bound and capacity-bound cases, the HeterPS CPU/GPU split, errors
// of makePlan and evaluatePlan, RL and Greedy. The planning times of two
// large instances are printed, not asserted.
//
//===----------------------------------------------------------------------===//

#include "dist/Planner/Planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace mlir::dist;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// Linear cost model: work over peak plus traffic over bandwidth, split tp
/// ways; ring all-reduce and alpha-beta sends.
class SimpleCostModel : public CostModel {
public:
  double phaseTimeS(const LayerCost &layer, const PhaseWork &phase,
                    const DeviceSpec &dev, double samples, int64_t tp,
                    int64_t threads) const override {
    (void)layer;
    (void)threads;
    double flops = phase.gemmFlops + phase.otherFlops;
    return samples *
           (flops / dev.peakFlopsFor("f32") +
            phase.bytes / dev.memoryBandwidthBytesPerS) /
           static_cast<double>(tp);
  }
  double updateTimeS(const LayerCost &layer, const DeviceSpec &dev,
                     int64_t shards, int64_t threads) const override {
    (void)threads;
    return 4 * layer.paramBytes / static_cast<double>(shards) /
           dev.memoryBandwidthBytesPerS;
  }
  double collectiveTimeS(Collective kind, double bytes, int64_t ranks,
                         const LinkSpec &link, Topology topo) const override {
    (void)kind;
    (void)topo;
    if (ranks <= 1)
      return 0;
    double n = static_cast<double>(ranks);
    return 2 * (n - 1) *
           (link.latencyS + bytes / (n * link.bandwidthBytesPerS));
  }
  double p2pTimeS(double bytes, const LinkSpec &link) const override {
    return link.latencyS + bytes / link.bandwidthBytesPerS;
  }
  double stepOverheadS(const DeviceSpec &dev) const override {
    (void)dev;
    return 1e-4;
  }
};

DeviceSpec makeDevice(DevKind kind, const std::string &model, int64_t count,
                      double memoryGiB, double tflops, double bandwidthGBs,
                      double price) {
  DeviceSpec dev;
  dev.kind = kind;
  dev.model = model;
  dev.count = count;
  dev.cores = kind == DevKind::CPU ? 32 : 132;
  dev.memoryBytes = memoryGiB * kGiB;
  dev.peakFlops["f32"] = tflops * 1e12;
  dev.memoryBandwidthBytesPerS = bandwidthGBs * 1e9;
  dev.pricePerHour = price;
  return dev;
}

NodeSpec makeNode(const std::string &name, int64_t count,
                  std::vector<DeviceSpec> devices, double intraGBs = 300) {
  NodeSpec node;
  node.name = name;
  node.count = count;
  node.devices = std::move(devices);
  node.intraLink.bandwidthBytesPerS = intraGBs * 1e9;
  node.intraLink.latencyS = 5e-6;
  return node;
}

ClusterSpec makeCluster(std::vector<NodeSpec> nodes, double interGBs = 25) {
  ClusterSpec cluster;
  cluster.name = "test";
  cluster.nodes = std::move(nodes);
  cluster.interLink.bandwidthBytesPerS = interGBs * 1e9;
  cluster.interLink.latencyS = 2e-5;
  cluster.source = "test";
  return cluster;
}

/// A transformer block (hidden h, sequence s), f32, tensor-parallel.
LayerCost transformerLayer(int index, double h, double s) {
  LayerCost layer;
  layer.name = "/h." + std::to_string(index);
  layer.numOps = 20;
  layer.fwd.gemmFlops = 24 * s * h * h;
  layer.fwd.otherFlops = 20 * s * h;
  layer.fwd.bytes = 40 * s * h;
  layer.bwd.gemmFlops = 2 * layer.fwd.gemmFlops;
  layer.bwd.otherFlops = 2 * layer.fwd.otherFlops;
  layer.bwd.bytes = 2 * layer.fwd.bytes;
  layer.paramBytes = 12 * h * h * 4;
  layer.activationBytes = 34 * s * h * 2;
  layer.inputBytes = s * h * 4;
  layer.outputBytes = s * h * 4;
  layer.tensorParallel = true;
  return layer;
}

/// An embedding lookup on a big table: little arithmetic, many bytes.
LayerCost embeddingLayer(int index, double tableGiB) {
  LayerCost layer;
  layer.name = "/emb." + std::to_string(index);
  layer.numOps = 3;
  layer.fwd.otherFlops = 2e4;
  layer.fwd.bytes = 2e7;
  layer.bwd.otherFlops = 4e4;
  layer.bwd.bytes = 4e7;
  layer.sparseParamBytes = tableGiB * kGiB;
  layer.sparseRowBytesPerSample = 26 * 128 * 4;
  layer.activationBytes = 26 * 128 * 4;
  layer.inputBytes = 26 * 8;
  layer.outputBytes = 26 * 128 * 4;
  layer.sparse = true;
  return layer;
}

/// A dense layer of an MLP tower.
LayerCost denseLayer(int index, double width) {
  LayerCost layer;
  layer.name = "/mlp." + std::to_string(index);
  layer.numOps = 3;
  layer.fwd.gemmFlops = 2 * width * width * 64;
  layer.fwd.otherFlops = width * 64;
  layer.fwd.bytes = 8 * width * 64;
  layer.bwd.gemmFlops = 2 * layer.fwd.gemmFlops;
  layer.bwd.otherFlops = layer.fwd.otherFlops;
  layer.bwd.bytes = 2 * layer.fwd.bytes;
  layer.paramBytes = width * width * 4;
  layer.activationBytes = 64 * width * 8;
  layer.inputBytes = 64 * width * 4;
  layer.outputBytes = 64 * width * 4;
  layer.tensorParallel = true;
  return layer;
}

bool relClose(double a, double b, double rel = 1e-9) {
  return std::fabs(a - b) <=
         rel * std::max({std::fabs(a), std::fabs(b), 1e-300});
}

/// Checks what every plan makePlan returns must satisfy: evaluatePlan
/// accepts it and gives the same figures, capacities hold, the timeline
/// stays within the step.
void checkPlan(const Plan &plan, const PlanRequest &req, const CostModel &cm) {
  Plan copy = plan;
  std::string error;
  ASSERT_TRUE(evaluatePlan(copy, req, cm, error)) << error;
  EXPECT_DOUBLE_EQ(copy.stepTimeS, plan.stepTimeS);
  EXPECT_DOUBLE_EQ(copy.throughput, plan.throughput);
  EXPECT_DOUBLE_EQ(copy.costPerHour, plan.costPerHour);
  EXPECT_EQ(copy.devicesUsed, plan.devicesUsed);
  EXPECT_EQ(copy.timeline.size(), plan.timeline.size());
  std::vector<DeviceType> types = listDeviceTypes(*req.cluster);
  std::vector<int64_t> used(types.size(), 0);
  for (const StagePlan &st : plan.stages)
    used[st.deviceType] += st.units;
  for (size_t k = 0; k < types.size(); ++k)
    EXPECT_LE(used[k], types[k].units) << types[k].label;
  for (const StagePlan &st : plan.stages)
    EXPECT_LE(st.memoryBytesPerDevice, types[st.deviceType].spec->memoryBytes);
  ASSERT_EQ(plan.layerStage.size(), req.layers.size());
  for (const TimelineEvent &ev : plan.timeline) {
    EXPECT_LE(ev.startS, ev.endS);
    EXPECT_LE(ev.endS, plan.stepTimeS * (1 + 1e-9)) << ev.what;
  }
  if (plan.objective == Objective::Cost) {
    EXPECT_GE(plan.throughput, req.minThroughput);
  }
}

//===----------------------------------------------------------------------===//
// Random small instances
//===----------------------------------------------------------------------===//

double uniform(std::mt19937_64 &rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

int64_t pick(std::mt19937_64 &rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

ClusterSpec randomCluster(std::mt19937_64 &rng, int64_t maxPerNode) {
  std::vector<NodeSpec> nodes;
  int64_t numNodes = pick(rng, 1, 2);
  int64_t typeIndex = 0;
  for (int64_t n = 0; n < numNodes; ++n) {
    std::vector<DeviceSpec> devices;
    int64_t numDevices = pick(rng, 1, numNodes == 1 ? 3 : 2);
    for (int64_t d = 0; d < numDevices; ++d) {
      bool gpu = pick(rng, 0, 1) == 1;
      devices.push_back(makeDevice(
          gpu ? DevKind::GPU : DevKind::CPU, "d" + std::to_string(typeIndex++),
          pick(rng, 1, maxPerNode), uniform(rng, 0.5, 4),
          gpu ? uniform(rng, 20, 100) : uniform(rng, 1, 5),
          gpu ? uniform(rng, 500, 2000) : uniform(rng, 50, 200),
          gpu ? uniform(rng, 1, 4) : uniform(rng, 0.1, 0.5)));
    }
    nodes.push_back(makeNode("n" + std::to_string(n), pick(rng, 1, 2),
                             std::move(devices), uniform(rng, 50, 300)));
  }
  return makeCluster(std::move(nodes), uniform(rng, 5, 50));
}

std::vector<LayerCost> randomLayers(std::mt19937_64 &rng, int64_t count) {
  std::vector<LayerCost> layers;
  for (int64_t l = 0; l < count; ++l) {
    LayerCost layer;
    layer.name = "/l." + std::to_string(l);
    layer.fwd.gemmFlops = uniform(rng, 1e8, 5e10);
    layer.fwd.otherFlops = uniform(rng, 1e6, 1e8);
    layer.fwd.bytes = uniform(rng, 1e6, 5e8);
    layer.bwd.gemmFlops = 2 * layer.fwd.gemmFlops;
    layer.bwd.otherFlops = 2 * layer.fwd.otherFlops;
    layer.bwd.bytes = 2 * layer.fwd.bytes;
    layer.paramBytes = uniform(rng, 1e6, 2e8);
    layer.frozenParamBytes = uniform(rng, 0, 1e6);
    if (pick(rng, 0, 4) == 0)
      layer.sparseParamBytes = uniform(rng, 1e8, 1e9);
    layer.activationBytes = uniform(rng, 1e6, 3e8);
    layer.inputBytes = uniform(rng, 1e5, 5e7);
    layer.outputBytes = uniform(rng, 1e5, 5e7);
    layer.tensorParallel = pick(rng, 0, 1) == 1;
    layers.push_back(layer);
  }
  return layers;
}

TEST(Planner, ExactEqualsExhaustiveStepTime) {
  SimpleCostModel cm;
  std::mt19937_64 rng(7);
  int compared = 0, bothInfeasible = 0;
  for (int trial = 0; trial < 200; ++trial) {
    ClusterSpec cluster = randomCluster(rng, 4);
    PlanRequest req;
    req.cluster = &cluster;
    req.layers = randomLayers(rng, pick(rng, 2, 5));
    const int64_t batches[] = {1, 2, 4, 6, 8};
    req.globalBatch = batches[pick(rng, 0, 4)];
    req.training = pick(rng, 0, 3) != 0;
    req.maxTensorParallel = pick(rng, 1, 4);
    req.exhaustiveLimit = 50000000;
    req.strategy = PlanStrategy::Exact;
    std::string exactError, exhaustiveError;
    std::optional<Plan> exact = makePlan(req, cm, exactError);
    req.strategy = PlanStrategy::Exhaustive;
    std::optional<Plan> exhaustive = makePlan(req, cm, exhaustiveError);
    ASSERT_EQ(exact.has_value(), exhaustive.has_value())
        << "trial " << trial << ": " << exactError << " / " << exhaustiveError;
    if (!exact) {
      EXPECT_EQ(exactError, exhaustiveError);
      ++bothInfeasible;
      continue;
    }
    EXPECT_TRUE(relClose(exact->stepTimeS, exhaustive->stepTimeS))
        << "trial " << trial << ": exact " << exact->stepTimeS << " exhaustive "
        << exhaustive->stepTimeS;
    checkPlan(*exact, req, cm);
    checkPlan(*exhaustive, req, cm);
    ++compared;
  }
  EXPECT_GE(compared, 20);
  std::printf("step time: %d instances compared, %d infeasible for both\n",
              compared, bothInfeasible);
}

TEST(Planner, ExactEqualsExhaustiveCost) {
  SimpleCostModel cm;
  std::mt19937_64 rng(11);
  int compared = 0, bothInfeasible = 0;
  for (int trial = 0; trial < 600 && compared < 60; ++trial) {
    ClusterSpec cluster = randomCluster(rng, 6);
    PlanRequest req;
    req.cluster = &cluster;
    req.objective = Objective::Cost;
    req.layers = randomLayers(rng, pick(rng, 2, 6));
    const int64_t batches[] = {4, 8, 16, 32};
    req.globalBatch = batches[pick(rng, 0, 3)];
    req.training = pick(rng, 0, 3) != 0;
    req.exhaustiveLimit = 1000000;
    // A floor near what one fast unit reaches on the whole model.
    double perSample = 0;
    for (const LayerCost &layer : req.layers)
      perSample += (layer.fwd.gemmFlops + layer.bwd.gemmFlops) / 60e12;
    req.minThroughput = uniform(rng, 0.3, 6) / perSample;
    req.strategy = PlanStrategy::Exact;
    std::string exactError, exhaustiveError;
    std::optional<Plan> exact = makePlan(req, cm, exactError);
    req.strategy = PlanStrategy::Exhaustive;
    std::optional<Plan> exhaustive = makePlan(req, cm, exhaustiveError);
    ASSERT_EQ(exact.has_value(), exhaustive.has_value())
        << "trial " << trial << ": " << exactError << " / " << exhaustiveError;
    if (!exact) {
      EXPECT_EQ(exactError, exhaustiveError);
      ++bothInfeasible;
      continue;
    }
    EXPECT_TRUE(relClose(exact->costPerHour, exhaustive->costPerHour))
        << "trial " << trial << ": exact " << exact->costPerHour
        << " exhaustive " << exhaustive->costPerHour;
    checkPlan(*exact, req, cm);
    checkPlan(*exhaustive, req, cm);
    ++compared;
  }
  EXPECT_GE(compared, 20);
  std::printf("cost: %d instances compared, %d infeasible for both\n", compared,
              bothInfeasible);
}

//===----------------------------------------------------------------------===//
// Memory, capacity, placement
//===----------------------------------------------------------------------===//

TEST(Planner, ParametersTooBigForOneDeviceForcePipelining) {
  SimpleCostModel cm;
  ClusterSpec cluster = makeCluster({makeNode(
      "gpu", 1, {makeDevice(DevKind::GPU, "G24", 4, 24, 100, 1500, 2)})});
  PlanRequest req;
  req.cluster = &cluster;
  req.globalBatch = 16;
  for (int l = 0; l < 8; ++l) {
    LayerCost layer = transformerLayer(l, 1024, 128);
    layer.tensorParallel = false;
    layer.paramBytes = 1 * kGiB; // 4 GiB with gradient and Adam state
    req.layers.push_back(layer);
  }
  std::string error;
  std::optional<Plan> plan = makePlan(req, cm, error);
  ASSERT_TRUE(plan) << error;
  EXPECT_GE(plan->pp, 2);
  checkPlan(*plan, req, cm);
}

TEST(Planner, ActivationsTooBigForOneDeviceForceRecompute) {
  SimpleCostModel cm;
  ClusterSpec cluster = makeCluster({makeNode(
      "gpu", 1, {makeDevice(DevKind::GPU, "G16", 1, 16, 100, 1500, 2)})});
  PlanRequest req;
  req.cluster = &cluster;
  req.globalBatch = 4;
  for (int l = 0; l < 6; ++l) {
    LayerCost layer = transformerLayer(l, 1024, 128);
    layer.activationBytes = 4 * kGiB; // one sample of all layers: 24 GiB
    req.layers.push_back(layer);
  }
  std::string error;
  std::optional<Plan> plan = makePlan(req, cm, error);
  ASSERT_TRUE(plan) << error;
  EXPECT_TRUE(plan->recompute);
  EXPECT_EQ(plan->devicesUsed, 1);
  checkPlan(*plan, req, cm);

  // Without training nothing is kept and the batch fits in one go.
  req.training = false;
  plan = makePlan(req, cm, error);
  ASSERT_TRUE(plan) << error;
  EXPECT_FALSE(plan->recompute);
  checkPlan(*plan, req, cm);
}

TEST(Planner, LayerThatFitsNowhere) {
  SimpleCostModel cm;
  ClusterSpec cluster = makeCluster({makeNode(
      "gpu", 2, {makeDevice(DevKind::GPU, "G2", 1, 2, 100, 1500, 2)})});
  PlanRequest req;
  req.cluster = &cluster;
  req.globalBatch = 2;
  req.layers.push_back(transformerLayer(0, 256, 16));
  LayerCost big = transformerLayer(3, 256, 16);
  big.name = "h.3";
  big.tensorParallel = false;
  big.paramBytes = 0.775 * kGiB;
  req.layers.push_back(big);
  std::string error;
  EXPECT_FALSE(makePlan(req, cm, error));
  EXPECT_EQ(error, "no plan fits: layer 'h.3' needs 3.1 GiB per device, "
                   "largest device has 2.0 GiB");
}

TEST(Planner, StepTimeRespectsCapacities) {
  SimpleCostModel cm;
  // A few fast devices and many slow ones.
  ClusterSpec cluster = makeCluster(
      {makeNode("fast", 1,
                {makeDevice(DevKind::GPU, "F", 2, 16, 400, 3000, 8)}),
       makeNode("slow", 2,
                {makeDevice(DevKind::GPU, "S", 4, 16, 50, 900, 1)})});
  PlanRequest req;
  req.cluster = &cluster;
  req.globalBatch = 32;
  for (int l = 0; l < 12; ++l)
    req.layers.push_back(transformerLayer(l, 2048, 256));
  std::string error;
  std::optional<Plan> plan = makePlan(req, cm, error);
  ASSERT_TRUE(plan) << error;
  checkPlan(*plan, req, cm);
  EXPECT_GT(plan->devicesUsed, 2);
}

TEST(Planner, CostRespectsCapacities) {
  SimpleCostModel cm;
  // The cheap type is the best per layer but has only two units.
  ClusterSpec cluster = makeCluster(
      {makeNode("mixed", 2,
                {makeDevice(DevKind::GPU, "C", 1, 40, 100, 1500, 1),
                 makeDevice(DevKind::GPU, "D", 8, 40, 150, 2000, 3)})});
  PlanRequest req;
  req.cluster = &cluster;
  req.objective = Objective::Cost;
  req.globalBatch = 1024;
  for (int l = 0; l < 6; ++l)
    req.layers.push_back(denseLayer(l, 4096));
  double perSampleCheap = 0;
  for (const LayerCost &layer : req.layers)
    perSampleCheap += (layer.fwd.gemmFlops + layer.bwd.gemmFlops) / 100e12;
  // About 1.5 cheap units per layer: the cheap type cannot take them all.
  req.minThroughput = 1.5 * 6 / perSampleCheap;
  std::string error;
  std::optional<Plan> plan = makePlan(req, cm, error);
  ASSERT_TRUE(plan) << error;
  checkPlan(*plan, req, cm);
  auto unitsOf = [](const Plan &plan, int64_t type) {
    int64_t units = 0;
    for (const StagePlan &st : plan.stages)
      if (st.deviceType == type)
        units += st.units;
    return units;
  };
  EXPECT_LE(unitsOf(*plan, 0), 2);
  EXPECT_GT(unitsOf(*plan, 0), 0);
  EXPECT_GT(unitsOf(*plan, 1), 0);

  req.strategy = PlanStrategy::Exhaustive;
  std::optional<Plan> exhaustive = makePlan(req, cm, error);
  ASSERT_TRUE(exhaustive) << error;
  EXPECT_TRUE(relClose(plan->costPerHour, exhaustive->costPerHour));

  // With more cheap units the plan takes more of them: the capacity bound.
  cluster.nodes[0].devices[0].count = 8;
  req.strategy = PlanStrategy::Exact;
  std::optional<Plan> roomy = makePlan(req, cm, error);
  ASSERT_TRUE(roomy) << error;
  EXPECT_GT(unitsOf(*roomy, 0), 2);
  EXPECT_LT(roomy->costPerHour, plan->costPerHour);
}

/// Recommendation model: sparse embeddings, then a dense tower.
PlanRequest recommendationRequest(const ClusterSpec &cluster,
                                  int64_t numDense) {
  PlanRequest req;
  req.cluster = &cluster;
  req.objective = Objective::Cost;
  req.globalBatch = 512;
  req.minThroughput = 20000;
  for (int l = 0; l < 2; ++l)
    req.layers.push_back(embeddingLayer(l, 100));
  for (int l = 0; l < numDense; ++l)
    req.layers.push_back(transformerLayer(l, 1024, 128));
  return req;
}

ClusterSpec cpuGpuCluster() {
  return makeCluster(
      {makeNode("cpu", 32,
                {makeDevice(DevKind::CPU, "Xeon", 1, 512, 2, 200, 0.2)}),
       makeNode("gpu", 2,
                {makeDevice(DevKind::GPU, "H100", 8, 80, 400, 2000, 4)}, 450)},
      12.5);
}

TEST(Planner, CostPutsEmbeddingsOnCpuAndDenseLayersOnGpu) {
  SimpleCostModel cm;
  ClusterSpec cluster = cpuGpuCluster();
  PlanRequest req = recommendationRequest(cluster, 4);
  std::string error;
  std::optional<Plan> plan = makePlan(req, cm, error);
  ASSERT_TRUE(plan) << error;
  checkPlan(*plan, req, cm);
  std::vector<DeviceType> types = listDeviceTypes(cluster);
  for (size_t l = 0; l < req.layers.size(); ++l) {
    const StagePlan &st = plan->stages[plan->layerStage[l]];
    DevKind kind = types[st.deviceType].spec->kind;
    EXPECT_EQ(kind, req.layers[l].sparse ? DevKind::CPU : DevKind::GPU)
        << req.layers[l].name;
  }
  EXPECT_EQ(plan->pp, 2);

  // Without the memory constraint the CPU still wins on price for the
  // IO-bound lookups.
  PlanRequest small = req;
  for (LayerCost &layer : small.layers)
    if (layer.sparse)
      layer.sparseParamBytes = 1 * kGiB;
  plan = makePlan(small, cm, error);
  ASSERT_TRUE(plan) << error;
  for (size_t l = 0; l < small.layers.size(); ++l) {
    const StagePlan &st = plan->stages[plan->layerStage[l]];
    EXPECT_EQ(types[st.deviceType].spec->kind,
              small.layers[l].sparse ? DevKind::CPU : DevKind::GPU);
  }
}

TEST(Planner, UnreachableThroughputIsAnError) {
  SimpleCostModel cm;
  ClusterSpec cluster = cpuGpuCluster();
  PlanRequest req = recommendationRequest(cluster, 4);
  req.minThroughput = 1e9;
  std::string error;
  EXPECT_FALSE(makePlan(req, cm, error));
  EXPECT_EQ(error.rfind("no plan reaches 1000000000 samples/s: best is ", 0),
            0u)
      << error;
  EXPECT_NE(error.find(" samples/s", 40), std::string::npos) << error;

  // The reported best is reachable, and a bit more is not.
  double best = std::stod(error.substr(error.find("best is ") + 8));
  ASSERT_GT(best, 0);
  req.minThroughput = best * 0.999;
  EXPECT_TRUE(makePlan(req, cm, error)) << error;
  req.minThroughput = best * 1.01;
  EXPECT_FALSE(makePlan(req, cm, error));
}

//===----------------------------------------------------------------------===//
// evaluatePlan
//===----------------------------------------------------------------------===//

TEST(Planner, EvaluateRejectsTooManyUnits) {
  SimpleCostModel cm;
  ClusterSpec cluster = makeCluster({makeNode(
      "gpu-node", 2, {makeDevice(DevKind::GPU, "H100", 8, 80, 400, 2000, 4)})});
  PlanRequest req;
  req.cluster = &cluster;
  req.globalBatch = 64;
  for (int l = 0; l < 4; ++l)
    req.layers.push_back(transformerLayer(l, 1024, 128));
  std::string error;
  std::optional<Plan> plan = makePlan(req, cm, error);
  ASSERT_TRUE(plan) << error;
  Plan bad = *plan;
  bad.dp = 32;
  bad.tp = 1;
  bad.microBatches = 1;
  for (StagePlan &st : bad.stages) {
    st.dp = 32;
    st.tp = 1;
    st.units = 32;
  }
  EXPECT_FALSE(evaluatePlan(bad, req, cm, error));
  EXPECT_EQ(error, "device type gpu-node/H100 has 16 devices, the plan uses " +
                       std::to_string(32 * bad.pp));

  bad = *plan;
  bad.stages.back().lastLayer -= 1;
  EXPECT_FALSE(evaluatePlan(bad, req, cm, error));
  EXPECT_NE(error.find("layers"), std::string::npos) << error;

  bad = *plan;
  bad.microBatches = 3;
  EXPECT_FALSE(evaluatePlan(bad, req, cm, error));
  EXPECT_NE(error.find("not divisible"), std::string::npos) << error;
}

TEST(Planner, EvaluateRejectsMemoryOverflow) {
  SimpleCostModel cm;
  ClusterSpec cluster = makeCluster({makeNode(
      "gpu-node", 1, {makeDevice(DevKind::GPU, "H100", 2, 80, 400, 2000, 4)})});
  PlanRequest req;
  req.cluster = &cluster;
  req.globalBatch = 8;
  for (int l = 0; l < 2; ++l) {
    LayerCost layer = transformerLayer(l, 1024, 128);
    layer.tensorParallel = false;
    layer.activationBytes = 3 * kGiB;
    req.layers.push_back(layer);
  }
  Plan plan;
  plan.pp = 2;
  plan.microBatches = 1;
  for (int s = 0; s < 2; ++s) {
    StagePlan st;
    st.firstLayer = st.lastLayer = s;
    st.units = 1;
    plan.stages.push_back(st);
  }
  std::string error;
  // Stage 0 keeps one micro-batch of 8 samples: 24 GiB plus parameters.
  EXPECT_TRUE(evaluatePlan(plan, req, cm, error)) << error;
  req.layers[1].activationBytes = 11 * kGiB;
  EXPECT_FALSE(evaluatePlan(plan, req, cm, error));
  double need = (4 * req.layers[1].paramBytes + req.layers[1].frozenParamBytes +
                 8 * 11 * kGiB) /
                kGiB;
  char expected[128];
  std::snprintf(expected, sizeof(expected),
                "stage 1 on gpu-node/H100 needs %.1f GiB per device, has "
                "80.0 GiB",
                need);
  EXPECT_EQ(error, expected);
}

/// One GPU node of 4 devices and 4 transformer layers at a global batch
/// of 8, for the two-stage plans below.
PlanRequest fourLayerRequest(const ClusterSpec &cluster) {
  PlanRequest req;
  req.cluster = &cluster;
  req.globalBatch = 8;
  for (int l = 0; l < 4; ++l) {
    LayerCost layer = transformerLayer(l, 512, 64);
    layer.tensorParallel = false;
    req.layers.push_back(layer);
  }
  return req;
}

/// Two stages of two layers on one device each, 4 micro-batches.
Plan twoStagePlan() {
  Plan plan;
  plan.pp = 2;
  plan.microBatches = 4;
  for (int s = 0; s < 2; ++s) {
    StagePlan st;
    st.firstLayer = 2 * s;
    st.lastLayer = 2 * s + 1;
    st.units = 1;
    plan.stages.push_back(st);
  }
  return plan;
}

TEST(Planner, EvaluateComputesFiguresAndTimeline) {
  SimpleCostModel cm;
  ClusterSpec cluster = makeCluster({makeNode(
      "gpu", 1, {makeDevice(DevKind::GPU, "G", 4, 80, 100, 1000, 2)})});
  PlanRequest req = fourLayerRequest(cluster);
  Plan plan = twoStagePlan();
  std::string error;
  ASSERT_TRUE(evaluatePlan(plan, req, cm, error)) << error;
  // Hand computation of the step.
  const DeviceSpec &dev = cluster.nodes[0].devices[0];
  double b = 2;
  double layerS = 0;
  for (const PhaseWork *ph : {&req.layers[0].fwd, &req.layers[0].bwd})
    layerS += cm.phaseTimeS(req.layers[0], *ph, dev, b, 1, 0);
  double send =
      cm.p2pTimeS(req.layers[1].outputBytes * b, cluster.nodes[0].intraLink);
  double t0 = 2 * layerS + send;
  double tail = 2 * cm.updateTimeS(req.layers[0], dev, 1, 0) + 1e-4;
  EXPECT_TRUE(relClose(plan.stepTimeS, (4 + 2 - 1) * t0 + tail, 1e-12));
  EXPECT_TRUE(relClose(plan.throughput, 8 / plan.stepTimeS, 1e-12));
  EXPECT_DOUBLE_EQ(plan.costPerHour, 4);
  EXPECT_EQ(plan.devicesUsed, 2);
  EXPECT_EQ(plan.layerStage, (std::vector<int64_t>{0, 0, 1, 1}));
  int fwd = 0, bwd = 0, update = 0;
  for (const TimelineEvent &ev : plan.timeline) {
    fwd += ev.what == "fwd";
    bwd += ev.what == "bwd";
    update += ev.what == "update";
    EXPECT_LE(ev.endS, plan.stepTimeS * (1 + 1e-12));
  }
  EXPECT_EQ(fwd, 8);
  EXPECT_EQ(bwd, 8);
  EXPECT_EQ(update, 2);
  // Per-layer figures: 4 micro-batches of 2 samples, and the update.
  ASSERT_EQ(plan.layerTimes.size(), 4u);
  for (int l = 0; l < 4; ++l) {
    const LayerCost &layer = req.layers[l];
    EXPECT_TRUE(relClose(plan.layerTimes[l].fwdS,
                         4 * cm.phaseTimeS(layer, layer.fwd, dev, b, 1, 0),
                         1e-12));
    EXPECT_TRUE(relClose(plan.layerTimes[l].bwdS,
                         4 * cm.phaseTimeS(layer, layer.bwd, dev, b, 1, 0),
                         1e-12));
    EXPECT_TRUE(relClose(plan.layerTimes[l].updateS,
                         cm.updateTimeS(layer, dev, 1, 0), 1e-12));
  }
  // They add up to each stage's compute time.
  for (const StagePlan &st : plan.stages) {
    double sum = 0;
    for (int64_t l = st.firstLayer; l <= st.lastLayer; ++l)
      sum += plan.layerTimes[l].fwdS + plan.layerTimes[l].bwdS +
             plan.layerTimes[l].updateS;
    EXPECT_TRUE(relClose(sum, st.computeTimeS, 1e-9))
        << sum << " vs " << st.computeTimeS;
  }
  // With recomputation the backward includes the forward again.
  Plan again = plan;
  again.recompute = true;
  ASSERT_TRUE(evaluatePlan(again, req, cm, error)) << error;
  EXPECT_TRUE(relClose(again.layerTimes[0].bwdS,
                       plan.layerTimes[0].bwdS + plan.layerTimes[0].fwdS,
                       1e-12));
}

/// The timeline of a training plan with stages follows the schedule asked
/// for, as the runtime runs it: per-stage action lists, bubbles as the
/// schedule's simulation gives them (equal stages: (p-1)/m for 1F1B), and
/// ZB-H1's weight gradients filling 1F1B's bubble.
TEST(Planner, EvaluateFollowsThePipelineSchedule) {
  SimpleCostModel cm;
  ClusterSpec cluster = makeCluster({makeNode(
      "gpu", 1, {makeDevice(DevKind::GPU, "G", 4, 80, 100, 1000, 2)})});
  PlanRequest req = fourLayerRequest(cluster);
  auto evaluate = [&](::dist_rt::pipeline::ScheduleKind kind) {
    Plan plan = twoStagePlan();
    req.schedule = kind;
    std::string error;
    EXPECT_TRUE(evaluatePlan(plan, req, cm, error)) << error;
    return plan;
  };
  using ::dist_rt::pipeline::ScheduleKind;
  Plan oneF = evaluate(ScheduleKind::OneFOneB);
  Plan zb = evaluate(ScheduleKind::ZBH1);
  ASSERT_EQ(oneF.stageActions.size(), 2u);
  EXPECT_EQ(oneF.stageActions[1].substr(0, 20), "recv-act:0 F0 B0 sen");
  ASSERT_EQ(zb.stageBubble.size(), 2u);
  ASSERT_EQ(oneF.stageBubble.size(), 2u);
  EXPECT_EQ(oneF.stagePeakInFlight, (std::vector<int64_t>{2, 1}));
  double meanOneF = (oneF.stageBubble[0] + oneF.stageBubble[1]) / 2;
  double meanZb = (zb.stageBubble[0] + zb.stageBubble[1]) / 2;
  EXPECT_LT(meanZb, meanOneF);
  int input = 0, weight = 0;
  for (const TimelineEvent &ev : zb.timeline) {
    input += ev.what == "bwd_input";
    weight += ev.what == "bwd_weight";
    EXPECT_LE(ev.endS, zb.stepTimeS * (1 + 1e-12));
  }
  EXPECT_EQ(input, 8);
  EXPECT_EQ(weight, 8);
}

//===----------------------------------------------------------------------===//
// Strategies
//===----------------------------------------------------------------------===//

PlanRequest mixedRequest(const ClusterSpec &cluster) {
  PlanRequest req;
  req.cluster = &cluster;
  req.objective = Objective::Cost;
  req.globalBatch = 256;
  req.minThroughput = 10000;
  for (int l = 0; l < 16; ++l) {
    if (l < 4) {
      LayerCost layer = embeddingLayer(l, 8);
      layer.fwd.bytes = 5e6;
      layer.bwd.bytes = 1e7;
      req.layers.push_back(layer);
    } else {
      req.layers.push_back(denseLayer(l, 1024 + 256 * (l % 4)));
    }
  }
  return req;
}

ClusterSpec threeKindCluster() {
  return makeCluster(
      {makeNode("cpu", 8,
                {makeDevice(DevKind::CPU, "Xeon", 1, 256, 2, 200, 0.2)}),
       makeNode("gpu", 2,
                {makeDevice(DevKind::GPU, "A100", 4, 40, 150, 1500, 2),
                 makeDevice(DevKind::GPU, "H100", 4, 80, 400, 3000, 4)},
                300)},
      12.5);
}

TEST(Planner, RLComesWithinFivePercentOfExact) {
  SimpleCostModel cm;
  ClusterSpec cluster = threeKindCluster();
  PlanRequest req = mixedRequest(cluster);
  std::string error;
  std::optional<Plan> exact = makePlan(req, cm, error);
  ASSERT_TRUE(exact) << error;
  req.strategy = PlanStrategy::RL;
  req.seed = 1;
  std::optional<Plan> rl = makePlan(req, cm, error);
  ASSERT_TRUE(rl) << error;
  checkPlan(*rl, req, cm);
  EXPECT_LE(rl->costPerHour, exact->costPerHour * 1.05)
      << "exact " << exact->costPerHour << " rl " << rl->costPerHour;
  EXPECT_EQ(rl->strategy, PlanStrategy::RL);
  EXPECT_EQ(rl->evaluated >= req.rlEpisodes, true);

  // Same seed, same plan.
  std::optional<Plan> again = makePlan(req, cm, error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(again->costPerHour, rl->costPerHour);
  EXPECT_EQ(again->layerStage, rl->layerStage);
}

TEST(Planner, GreedyIsFeasible) {
  SimpleCostModel cm;
  ClusterSpec cluster = threeKindCluster();
  PlanRequest req = mixedRequest(cluster);
  req.strategy = PlanStrategy::Greedy;
  std::string error;
  std::optional<Plan> greedy = makePlan(req, cm, error);
  ASSERT_TRUE(greedy) << error;
  checkPlan(*greedy, req, cm);
  req.strategy = PlanStrategy::Exact;
  std::optional<Plan> exact = makePlan(req, cm, error);
  ASSERT_TRUE(exact) << error;
  EXPECT_LE(exact->costPerHour, greedy->costPerHour * (1 + 1e-9));

  // Step time: one data-parallel stage.
  PlanRequest stepReq;
  stepReq.cluster = &cluster;
  stepReq.globalBatch = 64;
  for (int l = 0; l < 8; ++l)
    stepReq.layers.push_back(transformerLayer(l, 1024, 128));
  stepReq.strategy = PlanStrategy::Greedy;
  greedy = makePlan(stepReq, cm, error);
  ASSERT_TRUE(greedy) << error;
  checkPlan(*greedy, stepReq, cm);
  EXPECT_EQ(greedy->pp, 1);
  EXPECT_EQ(greedy->tp, 1);
  stepReq.strategy = PlanStrategy::Exact;
  exact = makePlan(stepReq, cm, error);
  ASSERT_TRUE(exact) << error;
  EXPECT_LE(exact->stepTimeS, greedy->stepTimeS * (1 + 1e-9));
}

TEST(Planner, ExhaustiveRefusesLargeInstances) {
  SimpleCostModel cm;
  ClusterSpec cluster = threeKindCluster();
  PlanRequest req = mixedRequest(cluster);
  req.strategy = PlanStrategy::Exhaustive;
  req.exhaustiveLimit = 1000;
  std::string error;
  EXPECT_FALSE(makePlan(req, cm, error));
  EXPECT_EQ(error, "exhaustive search would score 43046721 plans, more than "
                   "the limit of 1000");
}

TEST(Planner, RequestErrors) {
  SimpleCostModel cm;
  ClusterSpec cluster = threeKindCluster();
  PlanRequest req;
  std::string error;
  EXPECT_FALSE(makePlan(req, cm, error));
  EXPECT_EQ(error, "no cluster given");
  req.cluster = &cluster;
  EXPECT_FALSE(makePlan(req, cm, error));
  EXPECT_EQ(error, "the model has no layers");
  req.layers.push_back(transformerLayer(0, 64, 8));
  req.objective = Objective::Cost;
  EXPECT_FALSE(makePlan(req, cm, error));
  EXPECT_EQ(error,
            "the cost objective needs a throughput floor above 0 samples/s");
}

TEST(Planner, Names) {
  EXPECT_STREQ(stringifyObjective(Objective::StepTime), "step-time");
  EXPECT_STREQ(stringifyObjective(Objective::Cost), "cost");
  for (PlanStrategy s : {PlanStrategy::Exact, PlanStrategy::RL,
                         PlanStrategy::Greedy, PlanStrategy::Exhaustive})
    EXPECT_EQ(parsePlanStrategy(stringifyPlanStrategy(s)), s);
  for (Objective o : {Objective::StepTime, Objective::Cost})
    EXPECT_EQ(parseObjective(stringifyObjective(o)), o);
  EXPECT_FALSE(parsePlanStrategy("fast"));
  EXPECT_FALSE(parseObjective("speed"));
}

TEST(Planner, DeviceTypes) {
  ClusterSpec cluster = threeKindCluster();
  std::vector<DeviceType> types = listDeviceTypes(cluster);
  ASSERT_EQ(types.size(), 3u);
  EXPECT_EQ(types[0].label, "cpu/Xeon");
  EXPECT_EQ(types[0].units, 8);
  EXPECT_EQ(types[0].unitsPerNode, 1);
  EXPECT_EQ(types[2].label, "gpu/H100");
  EXPECT_EQ(types[2].units, 8);
  EXPECT_EQ(types[2].unitsPerNode, 4);
  EXPECT_EQ(types[2].nodeIndex, 1);
  EXPECT_EQ(types[2].deviceIndex, 1);
  EXPECT_EQ(types[2].spec, &cluster.nodes[1].devices[1]);
}

//===----------------------------------------------------------------------===//
// Planning time (printed, not asserted)
//===----------------------------------------------------------------------===//

TEST(Planner, PlanningTimeOfLargeInstances) {
  SimpleCostModel cm;
  {
    // 96 transformer layers on 1024 devices of three kinds.
    ClusterSpec cluster = makeCluster(
        {makeNode("h100", 64,
                  {makeDevice(DevKind::GPU, "H100", 8, 80, 400, 3000, 4)}, 450),
         makeNode("a100", 32,
                  {makeDevice(DevKind::GPU, "A100", 8, 40, 150, 1500, 2)}, 300),
         makeNode("v100", 32,
                  {makeDevice(DevKind::GPU, "V100", 8, 32, 60, 900, 1)}, 150)},
        50);
    PlanRequest req;
    req.cluster = &cluster;
    req.globalBatch = 1024;
    for (int l = 0; l < 96; ++l)
      req.layers.push_back(transformerLayer(l, 12288, 2048));
    std::string error;
    std::optional<Plan> plan = makePlan(req, cm, error);
    ASSERT_TRUE(plan) << error;
    checkPlan(*plan, req, cm);
    std::printf("96 layers, 1024 devices, 3 types: %.3f s (dp %lld tp %lld pp "
                "%lld m %lld recompute %d, %lld devices, step %.3f s, %lld "
                "scored)\n",
                plan->planningTimeS, static_cast<long long>(plan->dp),
                static_cast<long long>(plan->tp),
                static_cast<long long>(plan->pp),
                static_cast<long long>(plan->microBatches), plan->recompute,
                static_cast<long long>(plan->devicesUsed), plan->stepTimeS,
                static_cast<long long>(plan->evaluated));
  }
  {
    // 64 layers on 16 devices of three kinds.
    ClusterSpec cluster = makeCluster(
        {makeNode("gpu", 1,
                  {makeDevice(DevKind::GPU, "H100", 8, 80, 400, 3000, 4),
                   makeDevice(DevKind::GPU, "A100", 4, 40, 150, 1500, 2)},
                  300),
         makeNode("cpu", 4,
                  {makeDevice(DevKind::CPU, "Xeon", 1, 256, 3, 200, 0.5)})},
        25);
    PlanRequest req;
    req.cluster = &cluster;
    req.globalBatch = 256;
    for (int l = 0; l < 64; ++l)
      req.layers.push_back(transformerLayer(l, 2048, 512));
    std::string error;
    std::optional<Plan> plan = makePlan(req, cm, error);
    ASSERT_TRUE(plan) << error;
    checkPlan(*plan, req, cm);
    std::printf("64 layers, 16 devices, 3 types: %.3f s (dp %lld tp %lld pp "
                "%lld m %lld recompute %d, %lld devices, step %.3f s, %lld "
                "scored)\n",
                plan->planningTimeS, static_cast<long long>(plan->dp),
                static_cast<long long>(plan->tp),
                static_cast<long long>(plan->pp),
                static_cast<long long>(plan->microBatches), plan->recompute,
                static_cast<long long>(plan->devicesUsed), plan->stepTimeS,
                static_cast<long long>(plan->evaluated));
  }
}

TEST(Planner, PlanFileErrorsQuoteValuesOnOneLine) {
  // A value with control characters (found by dist-plan-fuzzer: a strategy
  // "ex\nt") is quoted with escapes, so the error stays one line.
  std::string error;
  std::optional<Plan> plan =
      planFromJson("{\"version\": 1, \"objective\": \"cost\", \"strategy\": "
                   "\"ex\\nt\\u0001\"}",
                   error);
  EXPECT_FALSE(plan);
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_NE(error.find("strategy: expected"), std::string::npos) << error;
  EXPECT_NE(error.find("got \"ex\\nt\\x01\""), std::string::npos) << error;
}

} // namespace
