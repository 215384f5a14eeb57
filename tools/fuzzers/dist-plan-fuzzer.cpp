//===- dist-plan-fuzzer.cpp - libFuzzer target for plan files -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Feeds arbitrary bytes to the plan reader behind `dist-opt --plan=FILE` and
// does what the compiler does next with an accepted plan: evaluate it on a
// model's layers and a cluster (here a fixed three-layer model on a
// two-node cluster). Every rejection must be one error line; a plan that
// fits, written back as plan.json, must read again.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "dist/Planner/Cluster.h"
#include "dist/Planner/CostModel.h"
#include "dist/Planner/Planner.h"

using namespace dist_fuzz;
using namespace mlir::dist;

namespace {
const char *kCluster = R"(name: pair
nodes:
  - name: a
    devices:
      - {kind: cpu, model: x, count: 2, memory: 4GiB, memory_bandwidth: 20GB/s, peak_flops: {f32: 50G}}
    links:
      intra: {bandwidth: 20GB/s, latency: 1us}
  - name: b
    devices:
      - {kind: cpu, model: y, count: 2, memory: 2GiB, memory_bandwidth: 10GB/s, peak_flops: {f32: 20G}}
links:
  inter: {bandwidth: 1.25GB/s, latency: 50us}
)";

PlanRequest makeRequest(const ClusterSpec &cluster) {
  PlanRequest req;
  req.cluster = &cluster;
  req.globalBatch = 16;
  for (int i = 0; i < 3; ++i) {
    LayerCost layer;
    layer.name = "/layer" + std::to_string(i);
    layer.numOps = 3;
    layer.fwd.gemmFlops = 1e6 * (i + 1);
    layer.fwd.bytes = 1e4;
    layer.bwd.gemmFlops = 2e6 * (i + 1);
    layer.paramBytes = 4e4;
    layer.activationBytes = layer.inputBytes = layer.outputBytes = 1e3;
    layer.tensorParallel = i != 1;
    req.layers.push_back(layer);
  }
  return req;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::string clusterError;
  static const std::optional<ClusterSpec> cluster =
      parseCluster(kCluster, "pair.yaml", clusterError);
  if (!cluster)
    finding("the fixed cluster does not parse", clusterError);
  static const PlanRequest req = makeRequest(*cluster);
  static const AnalyticCostModel costModel;

  std::string text(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<Plan> plan = planFromJson(text, error);
  if (!plan) {
    checkOneLine(error);
    return 0;
  }
  PlanRequest request = req;
  request.objective = plan->objective;
  if (!evaluatePlan(*plan, request, costModel, error)) {
    checkOneLine(error);
    return 0;
  }
  std::string written = planToJson(*plan, request);
  if (!planFromJson(written, error))
    finding("the written plan does not read", error + "\n" + written);
  return 0;
}
