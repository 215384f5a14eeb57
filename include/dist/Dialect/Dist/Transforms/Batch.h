//===- Batch.h - the batch dimension of a function --------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Reading and splitting the batch a function is compiled for: the training
// step is built at one data-parallel rank's batch (dist-build-train-step),
// the planner binds a dynamic batch, and dist-partition splits a static one.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_TRANSFORMS_BATCH_H
#define DIST_DIALECT_DIST_TRANSFORMS_BATCH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::dist {

/// The batch `func` is compiled for: the static leading dimension of its
/// first ranked tensor argument of rank >= 1; 0 when it is dynamic or there
/// is none.
int64_t getStaticBatch(func::FuncOp func);

/// Gives `func`'s tensor arguments (rank >= 1) a leading dimension of
/// `batch` / `dp` and re-infers every shape of its body; a Reshape of a
/// value computed from the inputs to a constant target that starts with the
/// batch gets `batch` / `dp` there. Fails with an error (and a note on
/// exporting with a dynamic batch) when a shape does not follow.
LogicalResult rebatchFunction(func::FuncOp func, int64_t batch, int64_t dp);

/// Sets every dynamic leading dimension of `func`'s tensor arguments to
/// `batch` and re-infers the shapes of the body. Fails (with an error) if
/// inference fails or shapes stay dynamic.
LogicalResult bindBatch(func::FuncOp func, int64_t batch);

} // namespace mlir::dist

#endif // DIST_DIALECT_DIST_TRANSFORMS_BATCH_H
