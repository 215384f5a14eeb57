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

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

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

/// A device mesh: axis names (e.g. "dp", "tp") and their sizes, in order.
struct MeshSpec {
  std::vector<std::string> axes;
  std::vector<int64_t> shape;
  /// Number of ranks (the product of the sizes).
  int64_t numRanks() const;
  /// The size of axis `name`, 1 when the mesh has no such axis.
  int64_t sizeOf(llvm::StringRef name) const;
  /// "dp=2,tp=1".
  std::string str() const;
};

/// Parses "dp=2,tp=2" (axis=size, comma-separated; axis names are
/// identifiers, each at most once; sizes positive). Returns "" on success,
/// else what is wrong (one line).
std::string parseMesh(llvm::StringRef text, MeshSpec &out);

/// The axis names dist-partition accepts: dp (data parallel) and tp
/// (tensor parallel).
bool isKnownMeshAxis(llvm::StringRef name);

/// Builds the training step through `buildStep` (dist-build-train-step on
/// `module`) so that dist-partition can split it over `mesh`: when the
/// mesh has dp > 1 and the forward function has a static batch B, the step
/// is built from the forward function at batch B / dp (shapes the backward
/// pass derives from the batch follow), and the forward function keeps B.
/// Otherwise just calls `buildStep`.
LogicalResult
buildTrainStepForMesh(ModuleOp module, const MeshSpec &mesh,
                      llvm::function_ref<LogicalResult()> buildStep);

/// The mesh `module` was partitioned for (its `shard.grid @mesh` with
/// `dist.mesh_axes`), or std::nullopt when it has none.
std::optional<MeshSpec> getModuleMesh(ModuleOp module);

} // namespace mlir::dist

#endif // DIST_TRANSFORMS_PASSES_H
