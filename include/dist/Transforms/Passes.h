//===- Passes.h - cross-dialect passes --------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The plan phase's passes (the cluster, the planner) and the partition
// phase's (tensor parallelism, the SPMD rewrite over the mesh), with the
// helpers they share.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_TRANSFORMS_PASSES_H
#define DIST_TRANSFORMS_PASSES_H

#include "dist/Codegen/ConvKernel.h"
#include "dist/Dialect/Dist/IR/Mesh.h"
#include "dist/Dialect/Dist/Transforms/Batch.h"
#include "dist/Planner/Planner.h"
#include "dist/Support/EnumOption.h"
#include "dist/Transforms/PipelineSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dist {

//===----------------------------------------------------------------------===//
// Planning choices (dist-plan's options, dist-opt's flags)
//===----------------------------------------------------------------------===//

template <>
struct EnumOptionTraits<Objective> {
  static llvm::ArrayRef<EnumOptionValue<Objective>> values() {
    static const EnumOptionValue<Objective> table[] = {
        {Objective::StepTime, "step-time", "the shortest step"},
        {Objective::Cost, "cost",
         "the least money per hour at --min-throughput"}};
    return table;
  }
  static constexpr const char *noun = "objective";
  static constexpr const char *passPrefix = "";
  static constexpr bool nounNamesFlag = false;
};
template <>
struct EnumOptionTraits<PlanStrategy> {
  static llvm::ArrayRef<EnumOptionValue<PlanStrategy>> values() {
    static const EnumOptionValue<PlanStrategy> table[] = {
        {PlanStrategy::Exact, "exact",
         "dynamic programming, optimal under the cost model"},
        {PlanStrategy::RL, "rl", "HeterPS's REINFORCE scheduler"},
        {PlanStrategy::Greedy, "greedy", "one layer at a time"},
        {PlanStrategy::Exhaustive, "exhaustive",
         "every assignment (small models)"}};
    return table;
  }
  static constexpr const char *noun = "planner";
  static constexpr const char *passPrefix = "";
  static constexpr bool nounNamesFlag = false;
};

/// Where dist-plan prints the plan's summary.
enum class SummaryStream { None, Stdout, Stderr };
template <>
struct EnumOptionTraits<SummaryStream> {
  static llvm::ArrayRef<EnumOptionValue<SummaryStream>> values() {
    static const EnumOptionValue<SummaryStream> table[] = {
        {SummaryStream::None, "none", "no summary"},
        {SummaryStream::Stdout, "stdout", "standard output"},
        {SummaryStream::Stderr, "stderr", "standard error"}};
    return table;
  }
  static constexpr const char *noun = "summary stream";
  static constexpr const char *passPrefix = "";
  static constexpr bool nounNamesFlag = false;
};
} // namespace mlir::dist

DIST_ENUM_OPTION_PARSER(mlir::dist::Objective)
DIST_ENUM_OPTION_PARSER(mlir::dist::PlanStrategy)
DIST_ENUM_OPTION_PARSER(mlir::dist::SummaryStream)

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
  /// The copy of the module whose training step was planned (dist-plan's
  /// train-pipeline); null when the module itself was planned.
  OwningOpRef<ModuleOp> probe;
  /// The plan is the module's mesh (`dist.mesh`) evaluated, not searched;
  /// `ranksPerDevice` ranks share each device of its CPU device type.
  bool meshEvaluated = false;
  MeshSpec mesh;
  int64_t ranksPerDevice = 1;
  /// Ops given a stage and a placement.
  int64_t annotated = 0;
};

/// Plans `module` as dist-plan does with `options` and, on success, records
/// the plan on the module and returns it. Errors are emitted on the module
/// (or the op at fault) and give failure. `buildTrainStep`, when set, adds
/// the passes that build the training step planned (on a copy), in place
/// of `options.trainPipeline`.
FailureOr<std::unique_ptr<ModulePlan>>
planModule(ModuleOp module, const PlanPassOptions &options,
           const std::function<void(OpPassManager &)> &buildTrainStep = {});

/// dist-plan with the training step built by `buildTrainStep` (in C++, so
/// that no choice goes through the text of a pipeline).
std::unique_ptr<Pass>
createPlanPass(const PlanPassOptions &options,
               std::function<void(OpPassManager &)> buildTrainStep);

/// Declares the mesh of `spec` in `module` (`shard.grid @mesh` with its axis
/// names) unless it is there already; fails if another symbol takes the name
/// or the declared mesh differs.
LogicalResult declareMesh(ModuleOp module, const MeshSpec &spec);

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
/// of `mesh` (see TensorParallel.cpp) and declares the mesh. A no-op when
/// tp is 1 or the module declares the mesh already (it was split). Fails
/// with an error when nothing in the model can be split.
LogicalResult partitionTensorParallel(ModuleOp module, const MeshSpec &mesh,
                                      TensorParallelStats *stats = nullptr);

/// How parameter servers create the rows of their tables (dist-opt
/// --ps-init, dist-ps-lookups' `init`): from the parameter file ("rows"),
/// or drawn per (table, id, column) from a distribution.
struct PsInit {
  std::string kind = "rows"; ///< rows, uniform or normal
  double a = 0, b = 0;       ///< uniform's bounds; normal's mean and std
};

/// Parses `text` (`rows`, `uniform:LOW,HIGH` or `normal:MEAN,STD`) into
/// `init`; returns why it is not one of them, "" on success.
std::string parsePsInit(llvm::StringRef text, PsInit &init);

} // namespace mlir::dist

#endif // DIST_TRANSFORMS_PASSES_H
