//===- planner_bench.cpp - The planner's strategies compared ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Compares the four search strategies (exact, rl, greedy, exhaustive) on
// the objective they reach and their planning time, under the analytic cost
// model, on synthetic but realistically sized instances:
//  - HeterPS (cost objective): a recommender of 2 embedding layers and 10
//    dense layers on CPUs plus two GPU kinds, and a 64-layer one;
//  - step time: 8 transformer layers on 8 GPUs of two kinds (small enough
//    for exhaustive), 64 layers on 16 devices of 3 kinds, and 96 layers on
//    1024 devices of 3 kinds (targets: under 100 ms and under 1 s).
// Prints one row per instance and strategy: the objective (step ms, or cost
// per hour at the throughput floor), the gap to exact, and the planning
// time. `dist-planner-bench` takes no arguments.
//
//===----------------------------------------------------------------------===//

#include "dist/Planner/CostModel.h"
#include "dist/Planner/Planner.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace mlir::dist;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

DeviceSpec device(DevKind kind, const char *model, int64_t count,
                  double memGiB, double tflops, double bwGBs, double price) {
  DeviceSpec d;
  d.kind = kind;
  d.model = model;
  d.count = count;
  d.cores = kind == DevKind::CPU ? 32 : 108;
  d.memoryBytes = memGiB * kGiB;
  d.peakFlops["f32"] = tflops * 1e12;
  d.memoryBandwidthBytesPerS = bwGBs * 1e9;
  d.pricePerHour = price;
  return d;
}

NodeSpec node(const char *name, int64_t count, std::vector<DeviceSpec> devs,
              double intraGBs) {
  NodeSpec n;
  n.name = name;
  n.count = count;
  n.devices = std::move(devs);
  n.intraLink = {intraGBs * 1e9, 2e-6};
  return n;
}

ClusterSpec cluster(const char *name, std::vector<NodeSpec> nodes,
                    double interGBs) {
  ClusterSpec c;
  c.name = name;
  c.nodes = std::move(nodes);
  c.interLink = {interGBs * 1e9, 1e-5};
  c.source = "bench";
  return c;
}

/// A transformer block at width d and sequence s, per sample.
LayerCost transformer(int i, double d, double s) {
  LayerCost l;
  l.name = "/h." + std::to_string(i);
  l.numOps = 20;
  l.fwd.gemmFlops = 24 * s * d * d + 4 * s * s * d;
  l.fwd.gemmLogSizeWeighted = l.fwd.gemmFlops * std::log(std::cbrt(s * d * d));
  l.fwd.gemmCalls = 6;
  l.fwd.otherFlops = 30 * s * d;
  l.fwd.bytes = 40 * s * d;
  l.fwd.kernels = 12;
  l.bwd = l.fwd;
  l.bwd.gemmFlops *= 2;
  l.bwd.gemmLogSizeWeighted *= 2;
  l.bwd.gemmCalls *= 2;
  l.paramBytes = 12 * d * d * 4;
  l.activationBytes = 34 * s * d;
  l.inputBytes = l.outputBytes = 4 * s * d;
  l.tensorParallel = true;
  return l;
}

/// An embedding lookup of 26 ids into a table of `rows` x 64.
LayerCost embedding(int i, double rows) {
  LayerCost l;
  l.name = "/emb." + std::to_string(i);
  l.numOps = 2;
  l.fwd.bytes = 26 * 64 * 4 * 2;
  l.fwd.kernels = 1;
  l.bwd.bytes = 26 * 64 * 4 * 4;
  l.bwd.kernels = 2;
  l.sparseParamBytes = rows * 64 * 4;
  l.sparseRowBytesPerSample = 26 * 64 * 4;
  l.outputBytes = 26 * 64 * 4;
  l.sparse = true;
  return l;
}

/// A dense layer width -> width, per sample.
LayerCost dense(int i, double width) {
  LayerCost l;
  l.name = "/fc." + std::to_string(i);
  l.numOps = 2;
  l.fwd.gemmFlops = 2 * width * width;
  l.fwd.gemmLogSizeWeighted = l.fwd.gemmFlops * std::log(width);
  l.fwd.gemmCalls = 1;
  l.fwd.otherFlops = width;
  l.fwd.bytes = 8 * width;
  l.fwd.kernels = 1;
  l.bwd = l.fwd;
  l.bwd.gemmFlops *= 2;
  l.bwd.gemmLogSizeWeighted *= 2;
  l.paramBytes = width * width * 4;
  l.activationBytes = 8 * width;
  l.inputBytes = l.outputBytes = 4 * width;
  l.tensorParallel = true;
  return l;
}

struct Instance {
  std::string name;
  ClusterSpec cluster;
  PlanRequest req;
};

void run(Instance &inst, const CostModel &cm) {
  inst.req.cluster = &inst.cluster;
  double exact = NAN;
  for (PlanStrategy s : {PlanStrategy::Exact, PlanStrategy::Exhaustive,
                         PlanStrategy::Greedy, PlanStrategy::RL}) {
    PlanRequest req = inst.req;
    req.strategy = s;
    std::string error;
    std::optional<Plan> plan = makePlan(req, cm, error);
    if (!plan) {
      std::printf("%-34s %-10s %-14s %s\n", inst.name.c_str(),
                  stringifyPlanStrategy(s), "-", error.c_str());
      continue;
    }
    bool cost = req.objective == Objective::Cost;
    double value = cost ? plan->costPerHour : plan->stepTimeS * 1e3;
    if (s == PlanStrategy::Exact)
      exact = value;
    std::printf("%-34s %-10s %14.4g %8s %12.3f %10lld   %s\n",
                inst.name.c_str(), stringifyPlanStrategy(s), value,
                std::isnan(exact)
                    ? "-"
                    : (std::to_string(static_cast<int>(
                           std::lround(100 * (value / exact - 1)))) +
                       "%")
                          .c_str(),
                plan->planningTimeS * 1e3,
                static_cast<long long>(plan->evaluated),
                cost ? ("cost/h, " + std::to_string(plan->stages.size()) +
                        " stages, " + std::to_string(plan->devicesUsed) +
                        " devices")
                           .c_str()
                     : ("step ms, dp " + std::to_string(plan->dp) + " tp " +
                        std::to_string(plan->tp) + " pp " +
                        std::to_string(plan->pp) + " m " +
                        std::to_string(plan->microBatches))
                           .c_str());
  }
}

} // namespace

int main() {
  AnalyticCostModel cm;
  std::printf("%-34s %-10s %14s %8s %12s %10s   %s\n", "instance", "planner",
              "objective", "vs exact", "planning ms", "scored", "unit");
  std::vector<Instance> instances;
  ClusterSpec hetero = cluster(
      "cpu+2gpu",
      {node("cpu", 16, {device(DevKind::CPU, "Xeon", 1, 256, 2, 200, 0.5)}, 50),
       node("a100", 2, {device(DevKind::GPU, "A100", 8, 40, 19.5, 1500, 3)},
            300),
       node("t4", 4, {device(DevKind::GPU, "T4", 4, 16, 8, 300, 0.8)}, 32)},
      12.5);
  {
    Instance inst{"heterps 12 layers (2 sparse)", hetero, {}};
    for (int i = 0; i < 2; ++i)
      inst.req.layers.push_back(embedding(i, 2e8));
    for (int i = 0; i < 10; ++i)
      inst.req.layers.push_back(dense(i, 2048));
    inst.req.globalBatch = 2048;
    inst.req.objective = Objective::Cost;
    inst.req.minThroughput = 50000;
    instances.push_back(inst);
  }
  {
    Instance inst{"heterps 64 layers (8 sparse)", hetero, {}};
    for (int i = 0; i < 8; ++i)
      inst.req.layers.push_back(embedding(i, 5e7));
    for (int i = 0; i < 56; ++i)
      inst.req.layers.push_back(dense(i, 2048));
    inst.req.globalBatch = 2048;
    inst.req.objective = Objective::Cost;
    inst.req.minThroughput = 20000;
    instances.push_back(inst);
  }
  {
    Instance inst{
        "step 8 layers, 8 GPUs / 2 kinds",
        cluster("small",
                {node("g", 1,
                      {device(DevKind::GPU, "A100", 4, 40, 19.5, 1500, 3),
                       device(DevKind::GPU, "T4", 4, 16, 8, 300, 0.8)},
                      300)},
                12.5),
        {}};
    for (int i = 0; i < 8; ++i)
      inst.req.layers.push_back(transformer(i, 1024, 512));
    inst.req.globalBatch = 32;
    instances.push_back(inst);
  }
  {
    Instance inst{
        "step 64 layers, 16 devices / 3 kinds",
        cluster("sixteen",
                {node("gpu", 1,
                      {device(DevKind::GPU, "H100", 8, 80, 60, 3000, 4),
                       device(DevKind::GPU, "A100", 4, 40, 19.5, 1500, 3)},
                      450),
                 node("cpu", 4,
                      {device(DevKind::CPU, "Xeon", 1, 256, 2, 200, 0.5)},
                      50)},
                25),
        {}};
    for (int i = 0; i < 64; ++i)
      inst.req.layers.push_back(transformer(i, 2048, 512));
    inst.req.globalBatch = 256;
    instances.push_back(inst);
  }
  {
    Instance inst{
        "step 96 layers, 1024 devices / 3",
        cluster("thousand",
                {node("h100", 64,
                      {device(DevKind::GPU, "H100", 8, 80, 60, 3000, 4)}, 450),
                 node("a100", 32,
                      {device(DevKind::GPU, "A100", 8, 40, 19.5, 1500, 3)},
                      300),
                 node("v100", 32,
                      {device(DevKind::GPU, "V100", 8, 32, 15, 900, 1)}, 150)},
                50),
        {}};
    for (int i = 0; i < 96; ++i)
      inst.req.layers.push_back(transformer(i, 12288, 2048));
    inst.req.globalBatch = 1024;
    instances.push_back(inst);
  }
  for (Instance &inst : instances)
    run(inst, cm);
  return 0;
}
