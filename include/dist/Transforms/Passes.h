//===- Passes.h - cross-dialect passes --------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The plan phase's passes and the helpers dist-opt uses to run the planner
// and write its reports.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_TRANSFORMS_PASSES_H
#define DIST_TRANSFORMS_PASSES_H

#include "dist/Analysis/Planner.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::dist {

#define GEN_PASS_DECL
#include "dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dist/Transforms/Passes.h.inc"

/// What planning a module produced: the request (layers, cluster) and the
/// plan, kept for writing plan.json / plan.html and the summary.
struct ModulePlan {
  ClusterSpec cluster;
  PlanRequest request;
  Plan plan;
};

/// Plans `module` as dist-plan does with `options` and, on success, records
/// the plan on the module and returns it. Errors are emitted on the module
/// (or the op at fault) and give failure.
FailureOr<std::unique_ptr<ModulePlan>>
planModule(ModuleOp module, const PlanPassOptions &options);

} // namespace mlir::dist

#endif // DIST_TRANSFORMS_PASSES_H
