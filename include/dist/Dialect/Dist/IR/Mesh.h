//===- Mesh.h - the device mesh of a module ---------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The device mesh in its three forms: the text users write (`--mesh
// dp=2,tp=2`, parsed here once), the typed module attribute
// `dist.mesh = #dist.mesh<dp = 2, tp = 2>` that says what a module is to be
// compiled for (the train and partition phases read it), and the upstream
// `shard.grid @mesh(shape = ...)` with the axis names in its
// `dist.mesh_axes` attribute (e.g. ["dp", "tp"]) that a partitioned module
// declares and its collectives and codegen refer to.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_IR_MESH_H
#define DIST_DIALECT_DIST_IR_MESH_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::dist {

/// Symbol of the mesh's shard.grid and the attribute naming its axes.
inline constexpr llvm::StringLiteral kMeshSymbol = "mesh";
inline constexpr llvm::StringLiteral kMeshAxesAttr = "dist.mesh_axes";
/// Attribute of a `dist.param` that tensor parallelism split: a dictionary
/// {axis = mesh axis index, dim = split dimension, blocks = b}. The declared
/// type is the local one; the full tensor's dimension `dim` is that
/// dimension times the axis size, viewed as [b, axis size, local / b]: the
/// rank at coordinate r along the axis holds chunk r of each of the b blocks
/// (b = 3 for a fused query/key/value projection, else 1).
inline constexpr llvm::StringLiteral kParamShardAttr = "dist.shard";
/// Attribute of the inference function that runs on a dp rank's rows of
/// the batch (i64 dp): every input and output is batched along dimension 0;
/// a static batch B appears as B / dp in the function's types.
inline constexpr llvm::StringLiteral kInferBatchSplitAttr =
    "dist.infer_batch_split";
/// Attribute of an inference function under a dp mesh whose batch stays
/// whole on every rank: a string saying why it cannot be split.
inline constexpr llvm::StringLiteral kInferBatchWholeAttr =
    "dist.infer_batch_whole";
/// On a module whose plan (--plan) has pipeline stages: {micro_batches,
/// global_batch} for dist-build-train-step.
inline constexpr llvm::StringLiteral kPipelinePlanAttr = "dist.pipeline_plan";
/// On a function of a pipeline stage (dist-split-stages): {stage, action}.
inline constexpr llvm::StringLiteral kPipelineActionAttr =
    "dist.pipeline_action";
/// On a dist.param that sums a stage's gradient over micro-batches
/// (dist-split-stages): the update reads it, and dist-partition averages it
/// over the dp ranks there.
inline constexpr llvm::StringLiteral kGradAccumulatorAttr =
    "dist.grad_accumulator";
/// On the square root of --clip-grad-norm's sum of squared gradients
/// (dist-build-train-step): dist-split-stages sums the squares per stage
/// and the stages' sums between them.
inline constexpr llvm::StringLiteral kGradNormAttr = "dist.grad_norm";
/// On a `dist.param` whose rows the parameter server holds (dist-ps-lookups):
/// a #dist.ps_table<rows, dim, shards>.
inline constexpr llvm::StringLiteral kPsTableAttr = "dist.ps_table";
/// On a function argument that takes the rows a lookup of a parameter-server
/// table pulled (dist-ps-lookups): {table = parameter name, ids = name of the
/// input the ids come from, cols = the elements of each of its samples the
/// lookup reads, row-major without the batch dimension}; the argument is
/// the lookup's result, rows in the order of the ids.
/// dist-build-train-step returns its gradient.
inline constexpr llvm::StringLiteral kPsRowsAttr = "dist.ps_rows";
/// On the module (dist-ps-lookups): the servers' per-row update, {optimizer
/// = "sgd"|"adagrad"|"adam", lr, beta1, beta2, eps}.
inline constexpr llvm::StringLiteral kPsOptimizerAttr = "dist.ps_optimizer";

/// A device mesh: axis names (e.g. "dp", "tp") and their sizes, in order.
struct MeshSpec {
  std::vector<std::string> axes;
  std::vector<int64_t> shape;
  /// The size of axis `name`, 1 when the mesh has no such axis.
  int64_t sizeOf(llvm::StringRef name) const;
  /// "dp=2,tp=2", as `--mesh` takes it.
  std::string str() const;
};

class MeshAttr;

/// The axis names the compiler knows: dp (data parallel) and tp (tensor
/// parallel).
bool isKnownMeshAxis(llvm::StringRef name);

/// Most ranks a mesh may have.
inline constexpr int64_t kMaxMeshRanks = int64_t(1) << 20;

/// What is wrong with axis `name` of size `size` following the axes
/// `before` (`total`: the ranks of those, updated), or "".
std::string checkMeshAxis(llvm::ArrayRef<std::string> before,
                          llvm::StringRef name, int64_t size, int64_t &total);

/// Parses "dp=2,tp=2" (axis=size, comma-separated; known axis names, each
/// at most once; sizes from 1 to 2^20, at most 2^20 ranks in all). Returns
/// "" on success, else what is wrong (one line).
std::string parseMesh(llvm::StringRef text, MeshSpec &out);

/// The mesh `module` was partitioned for (its `shard.grid @mesh`), or
/// std::nullopt when it has none.
std::optional<MeshSpec> getModuleMesh(ModuleOp module);

/// The mesh `module` is to be compiled for (`dist.mesh`), or null.
MeshAttr getRequestedMesh(ModuleOp module);

} // namespace mlir::dist

#endif // DIST_DIALECT_DIST_IR_MESH_H
