//===- LayerCosts.h - Layer costs of a dist function ------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Groups the ops of an inference or training-step function into layers and
// sums what the cost op interface reports for each: per-sample forward and
// backward work, the optimizer update, parameters, activations kept for
// backward, boundary activations, and whether the layer is a sparse
// embedding lookup or a tensor-parallel candidate. The planner and the cost
// model consume the result (dist/Planner/CostModel.h).
//
// A layer is a maximal run of forward ops whose ONNX node names share the
// same scope (the name up to its last '/', e.g. "/h.0/attn" for
// "/h.0/attn/MatMul"; a name without '/' is its own scope, so models with
// flat node names get one layer per op); ops without a name location join
// the layer before them. Backward and
// update ops (tagged by dist-build-train-step, see
// DistDialect::getPhase) are charged to the layer of the forward op they
// come from, update ops to the layer that reads the parameter.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_TRANSFORMS_LAYERCOSTS_H
#define DIST_TRANSFORMS_LAYERCOSTS_H

#include "dist/Dialect/Dist/Transforms/Batch.h"
#include "dist/Planner/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <vector>

namespace mlir::dist {

struct FunctionCosts {
  std::vector<LayerCost> layers;
  /// Batch (samples) the function's shapes are for.
  int64_t batch = 1;
  /// Layer index of every op of the body, in order (-1 for ops that cost
  /// nothing: constants, parameter reads, the terminator).
  std::vector<int64_t> opLayer;
  bool training = false;
};

/// The size from which an embedding table counts as sparse: priced as
/// served rows with --ps-tables, and put on the servers by
/// `--ps-tables=auto` (dist-ps-lookups).
inline constexpr int64_t kSparseTableBytes = 1 << 20;

/// Collects the layer costs of `func`, whose shapes must be static (bind a
/// dynamic batch first with bindBatch). Emits an error naming the op and
/// fails when an op's cost is unknown.
///
/// Embedding tables of at least kSparseTableBytes read by a gather make
/// their layer `sparse`. With `psTables` (dist-opt --ps-tables) they are
/// priced as parameter-server tables (HeterPS): held once, their gradients
/// and optimizer updates touch only the looked-up rows. Without it (the
/// default) they are ordinary dense parameters whose gradient and update
/// ops cost what the training step spells out.
///
/// With `im2colConvs` (codegen's `conv=im2col`) no convolution is taken to
/// run as the runtime's direct kernel: their im2col columns, bias
/// broadcasts and ReLU kernels are priced on every device.
FailureOr<FunctionCosts> collectLayerCosts(func::FuncOp func,
                                           bool psTables = false,
                                           bool im2colConvs = false);

/// The pipeline stage of each layer of `costs` (dist-split-stages and the
/// planner's evaluation of a --mesh with pp): from `split`, the layer
/// counts per stage ("3,5") or the names of the layers that start stages
/// 1.. ("/h.2,/h.4"), else `stages` contiguous runs that minimise the
/// heaviest run's forward and backward FLOPs. Fails with an error on `at`.
FailureOr<std::vector<int64_t>> layerStages(const FunctionCosts &costs,
                                            int64_t stages, StringRef split,
                                            Operation *at);

/// The function the planner works on: the training step (marked
/// `dist.train_step`), else the first public function with a body; null
/// when there is none.
func::FuncOp findPlannedFunction(ModuleOp module);

} // namespace mlir::dist

#endif // DIST_TRANSFORMS_LAYERCOSTS_H
