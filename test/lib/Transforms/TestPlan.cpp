//===- TestPlan.cpp - Passes printing planner decisions ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-test-plan runs the planner like dist-plan and prints its decisions
// (degrees, stages, the stage and device type of every layer, predicted
// figures) to stdout. dist-test-layer-costs prints the cost records of
// every layer and the predicted single-process step time on the first
// device type of the module's cluster.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Planner/CostModel.h"
#include "dist/Planner/Planner.h"
#include "dist/Transforms/ClusterAttr.h"
#include "dist/Transforms/LayerCosts.h"
#include "dist/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dist;

namespace {

struct TestPlanPass
    : public PassWrapper<TestPlanPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestPlanPass)
  TestPlanPass() = default;
  TestPlanPass(const TestPlanPass &other) : PassWrapper(other) {}
  StringRef getArgument() const final { return "dist-test-plan"; }
  StringRef getDescription() const final {
    return "print the planner's decisions";
  }
  Option<Objective> objective{*this, "objective",
                              llvm::cl::init(Objective::StepTime),
                              enumOptionValues<Objective>()};
  Option<double> minThroughput{*this, "min-throughput", llvm::cl::init(0)};
  Option<PlanStrategy> strategy{*this, "strategy",
                                llvm::cl::init(PlanStrategy::Exact),
                                enumOptionValues<PlanStrategy>()};
  Option<int64_t> globalBatch{*this, "global-batch", llvm::cl::init(0)};
  Option<int64_t> threads{*this, "threads", llvm::cl::init(0)};
  Option<std::string> planFile{*this, "plan-file", llvm::cl::init("")};
  Option<bool> psTables{*this, "ps-tables", llvm::cl::init(false)};

  void runOnOperation() override {
    PlanPassOptions o;
    o.objective = objective;
    o.minThroughput = minThroughput;
    o.strategy = strategy;
    o.globalBatch = globalBatch;
    o.threads = threads;
    o.planFile = planFile;
    o.psTables = psTables;
    auto result = planModule(getOperation(), o);
    if (failed(result))
      return signalPassFailure();
    const Plan &p = (*result)->plan;
    const PlanRequest &req = (*result)->request;
    std::vector<DeviceType> types = listDeviceTypes((*result)->cluster);
    raw_ostream &os = llvm::outs();
    os << "plan: objective=" << stringifyObjective(p.objective)
       << " strategy=" << stringifyPlanStrategy(p.strategy) << " dp=" << p.dp
       << " tp=" << p.tp << " pp=" << p.pp
       << " micro-batches=" << p.microBatches
       << " recompute=" << (p.recompute ? 1 : 0) << " devices=" << p.devicesUsed
       << "\n";
    for (size_t s = 0; s < p.stages.size(); ++s) {
      const StagePlan &st = p.stages[s];
      os << "stage " << s << ": layers " << st.firstLayer << "-" << st.lastLayer
         << " on " << types[st.deviceType].label << " units=" << st.units
         << " dp=" << st.dp << " tp=" << st.tp
         << " recompute=" << (st.recompute ? 1 : 0) << "\n";
    }
    for (size_t l = 0; l < req.layers.size(); ++l) {
      int64_t s = p.layerStage[l];
      os << "layer " << l << " '" << req.layers[l].name << "' -> stage " << s
         << " on " << types[p.stages[s].deviceType].label
         << (req.layers[l].sparse ? " (sparse)" : "") << "\n";
    }
    os << "predicted: step_ms=" << llvm::format("%.4g", p.stepTimeS * 1e3)
       << " throughput=" << llvm::format("%.4g", p.throughput)
       << " cost_per_hour=" << llvm::format("%.4g", p.costPerHour) << "\n";
  }
};

struct TestLayerCostsPass
    : public PassWrapper<TestLayerCostsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestLayerCostsPass)
  TestLayerCostsPass() = default;
  TestLayerCostsPass(const TestLayerCostsPass &other) : PassWrapper(other) {}
  StringRef getArgument() const final { return "dist-test-layer-costs"; }
  StringRef getDescription() const final {
    return "print the layer costs of the planned function";
  }
  Option<int64_t> threads{*this, "threads", llvm::cl::init(1)};
  Option<bool> perLayer{*this, "per-layer", llvm::cl::init(false),
                        llvm::cl::desc("also print each layer's predicted "
                                       "GEMM and loop time per phase")};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp func = findPlannedFunction(module);
    if (!func) {
      module.emitError("no function");
      return signalPassFailure();
    }
    FailureOr<FunctionCosts> costs = collectLayerCosts(func);
    if (failed(costs))
      return signalPassFailure();
    raw_ostream &os = llvm::outs();
    os << "function " << func.getSymName() << " batch=" << costs->batch
       << " training=" << (costs->training ? 1 : 0)
       << " layers=" << costs->layers.size() << "\n";
    for (const LayerCost &l : costs->layers) {
      os << "layer '" << l.name << "' ops=" << l.numOps
         << " fwd_gemm_flops=" << llvm::format("%.6g", l.fwd.gemmFlops)
         << " fwd_other_flops=" << llvm::format("%.6g", l.fwd.otherFlops)
         << " fwd_bytes=" << llvm::format("%.6g", l.fwd.bytes)
         << " fwd_kernels=" << l.fwd.kernels
         << " bwd_gemm_flops=" << llvm::format("%.6g", l.bwd.gemmFlops)
         << " bwd_bytes=" << llvm::format("%.6g", l.bwd.bytes)
         << " update_bytes=" << llvm::format("%.6g", l.update.bytes)
         << " params=" << llvm::format("%.6g", l.paramBytes)
         << " sparse_params=" << llvm::format("%.6g", l.sparseParamBytes)
         << " activations=" << llvm::format("%.6g", l.activationBytes)
         << " in=" << llvm::format("%.6g", l.inputBytes)
         << " out=" << llvm::format("%.6g", l.outputBytes)
         << (l.sparse ? " sparse" : "")
         << (l.tensorParallel ? " tensor-parallel" : "");
      // Products per phase: layout, count x m x n x k at one sample, and
      // which of them grows with the samples.
      for (auto [tag, w] : {std::pair("fwd", &l.fwd), std::pair("bwd", &l.bwd)})
        for (const GemmWork &g : w->gemms)
          os << " " << tag << "_gemm=" << stringifyGemmLayout(g.layout) << ":"
             << llvm::format("%g", g.count) << "x" << llvm::format("%g", g.m)
             << "x" << llvm::format("%g", g.n) << "x" << llvm::format("%g", g.k)
             << "@" << g.batchDim;
      os << " fwd_kernels_forked=" << l.fwd.parallelKernels;
      // Work that only convolutions run as im2col + GEMM add.
      os << " fwd_im2col_bytes=" << llvm::format("%.6g", l.fwd.im2colOnly.bytes)
         << " fwd_im2col_kernels=" << l.fwd.im2colOnly.kernels << "\n";
    }
    auto attr =
        module->getAttrOfType<ClusterAttr>(DistDialect::getClusterAttrName());
    if (!attr)
      return;
    std::string error;
    std::optional<ClusterSpec> cluster = clusterFromAttr(attr, error);
    if (!cluster || cluster->nodes.empty() || cluster->nodes[0].devices.empty())
      return;
    AnalyticCostModel cm;
    const DeviceSpec &dev = cluster->nodes[0].devices[0];
    double t = predictStepTimeS(costs->layers, dev, costs->batch, threads,
                                costs->training, cm);
    // The same split by kernel class: library GEMMs, generated loops, and
    // the optimizer update.
    double gemmS = 0, loopS = 0, updateS = 0;
    for (const LayerCost &l : costs->layers) {
      for (const PhaseWork *w : {&l.fwd, &l.bwd}) {
        if (w == &l.bwd && !costs->training)
          continue;
        PhaseWork gemmOnly = *w, loopsOnly = *w;
        gemmOnly.bytes = gemmOnly.otherFlops = 0;
        gemmOnly.fillBytes = gemmOnly.fillLogFootprintWeighted = 0;
        gemmOnly.kernels = gemmOnly.parallelKernels = 0;
        for (int c = 0; c < kNumKernelClasses; ++c)
          gemmOnly.classBytes[c] = gemmOnly.classLogFootprintWeighted[c] = 0;
        loopsOnly.gemmFlops = loopsOnly.gemmLogSizeWeighted = 0;
        loopsOnly.gemmCalls = 0;
        loopsOnly.gemms.clear();
        double g = cm.phaseTimeS(l, gemmOnly, dev, costs->batch, 1, threads);
        double lo = cm.phaseTimeS(l, loopsOnly, dev, costs->batch, 1, threads);
        gemmS += g;
        loopS += lo;
        if (perLayer)
          os << "predicted layer '" << l.name << "' "
             << (w == &l.fwd ? "fwd" : "bwd") << ": gemm "
             << llvm::format("%.4g", g * 1e3) << " ms, loops "
             << llvm::format("%.4g", lo * 1e3) << " ms\n";
      }
      if (costs->training)
        updateS += cm.updateTimeS(l, dev, 1, threads);
    }
    os << "predicted single-process step: " << llvm::format("%.4g", t * 1e3)
       << " ms (gemm " << llvm::format("%.4g", gemmS * 1e3) << " ms, loops "
       << llvm::format("%.4g", loopS * 1e3) << " ms, update "
       << llvm::format("%.4g", updateS * 1e3) << " ms)\n";
  }
};

} // namespace

namespace mlir::dist::test {
void registerTestPlanPasses() {
  PassRegistration<TestPlanPass>();
  PassRegistration<TestLayerCostsPass>();
}
} // namespace mlir::dist::test
