//===- TestPipelineSchedule.cpp - Print a module's pipeline schedule ------===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-test-pipeline-schedule prints, for a module cut into stages by
// dist-split-stages (its `dist.pipeline` attribute), every stage's action
// list with the transfers around each action, and the schedule's simulated
// bubble and peak micro-batches held at equal unit times beside the
// analytic (p - 1) / m.
//
//===----------------------------------------------------------------------===//

#include "dist/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dist;
namespace pl = ::dist_rt::pipeline;

namespace {

struct TestPipelineSchedulePass
    : public PassWrapper<TestPipelineSchedulePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestPipelineSchedulePass)
  StringRef getArgument() const final { return "dist-test-pipeline-schedule"; }
  StringRef getDescription() const final {
    return "print each pipeline stage's action list";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto attr = module->getAttrOfType<DictionaryAttr>("dist.pipeline");
    if (!attr) {
      module.emitError("the module has no dist.pipeline (run "
                       "dist-split-stages first)");
      return signalPassFailure();
    }
    std::optional<PipelineInfo> info = readPipelineAttr(attr);
    if (!info) {
      module.emitError("malformed dist.pipeline ") << attr;
      return signalPassFailure();
    }
    std::optional<PipelineSchedule> kind = info->schedule;
    int32_t p = static_cast<int32_t>(info->stages);
    int32_t mb = static_cast<int32_t>(info->microBatches);
    llvm::raw_ostream &os = llvm::outs();
    os << "schedule " << pl::scheduleName(*kind) << ": " << p << " stages, "
       << mb << " micro-batches\n";
    for (int32_t s = 0; s < p; ++s)
      os << "stage " << s << ": "
         << pl::formatActions(pl::stageActions(*kind, s, p, mb)) << "\n";
    pl::Simulation sim =
        pl::simulate(*kind, std::vector<pl::StageTimes>(p), mb);
    os << "simulated at unit times: step " << llvm::format("%g", sim.stepS)
       << ", bubble " << llvm::format("%.3f", sim.meanBubble())
       << " (analytic (p-1)/m "
       << llvm::format("%.3f", pl::analyticBubble(p, mb)) << ")\n";
    for (int32_t s = 0; s < p; ++s)
      os << "stage " << s << " holds at most " << sim.peakFull[s]
         << " micro-batches whole, " << sim.peakInFlight[s] << " in all\n";
  }
};

} // namespace

namespace mlir::dist::test {
void registerTestPipelineSchedulePass() {
  PassRegistration<TestPipelineSchedulePass>();
}
} // namespace mlir::dist::test
