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
#include "dist/Dialect/Dist/IR/Mesh.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
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

/// Builds the training step through `buildStep` (dist-build-train-step on
/// `module`) so that dist-partition can split it over `mesh`: when the
/// mesh has dp > 1 and the forward function has a static batch B, the step
/// is built from the forward function at batch B / dp (shapes the backward
/// pass derives from the batch follow), and the forward function keeps B.
/// Otherwise just calls `buildStep`.
LogicalResult
buildTrainStepForMesh(ModuleOp module, const MeshSpec &mesh,
                      llvm::function_ref<LogicalResult()> buildStep);

/// Declares the mesh of `spec` in `module` (`shard.grid @mesh` with its axis
/// names) unless it is there already; fails if another symbol takes the name
/// or the declared mesh differs.
LogicalResult declareMesh(ModuleOp module, const MeshSpec &spec);

/// Gives `func`'s tensor arguments (rank >= 1) a leading dimension of
/// `batch` / `dp` and re-infers every shape of its body; a Reshape of a
/// value computed from the inputs to a constant target that starts with the
/// batch gets `batch` / `dp` there. Fails with an error (and a note on
/// exporting with a dynamic batch) when a shape does not follow.
LogicalResult rebatchFunction(func::FuncOp func, int64_t batch, int64_t dp);

/// Splits the batch of the inference function `entry` over `dp` ranks when
/// a dataflow analysis proves that sample i of every output depends only on
/// sample i of the inputs (BatchSplit.cpp); `dp` is the size of mesh axis
/// `dpAxis`, which no collective in `entry` may span. On success returns "",
/// marks `entry` with kInferBatchSplitAttr and, for a static batch B, rebuilds
/// it at B / dp. Otherwise returns why not and leaves `entry` unchanged.
std::string splitInferenceBatch(func::FuncOp entry, int64_t dp, int64_t dpAxis);

/// What tensor parallelism split, for remarks and tests.
struct TensorParallelStats {
  int64_t columnRow = 0;  ///< column-parallel regions closed by row splits
  int64_t gathered = 0;   ///< column-parallel outputs gathered at the end
  int64_t embeddings = 0; ///< vocabulary-parallel embedding lookups
  int64_t params = 0;     ///< parameters split
};

/// Splits the forward functions of `module` Megatron-style over the tp axis
/// of `mesh` (see TensorParallel.cpp), declares the mesh and marks the
/// module (kTensorParallelAttr). A no-op when tp is 1. Fails with an error
/// when nothing in the model can be split.
LogicalResult partitionTensorParallel(ModuleOp module, const MeshSpec &mesh,
                                      TensorParallelStats *stats = nullptr);

} // namespace mlir::dist

#endif // DIST_TRANSFORMS_PASSES_H
