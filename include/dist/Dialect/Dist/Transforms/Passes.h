//===- Passes.h - dist dialect passes ----------------------------*- C++
//-*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Declarations of the passes over the dist graph and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_TRANSFORMS_PASSES_H
#define DIST_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dist {
class DistDialect;

#define GEN_PASS_DECL
#include "dist/Dialect/Dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dist/Dialect/Dist/Transforms/Passes.h.inc"

/// Checks the options of dist-build-train-step. Returns "" when they are
/// valid; otherwise sets `option` to the offending option's name (as in
/// the pass options and dist-opt's flags, e.g. "lr-schedule") and returns
/// what is wrong with it.
std::string checkTrainStepOptions(const BuildTrainStepPassOptions &options,
                                  std::string &option);

/// Refines the result types of the dist ops in `op`'s regions in place.
/// Returns failure (after emitting an error) if inference of an op fails.
/// With `replace`, every inferred type that differs from the current one
/// (same rank) replaces it, so a function whose argument shapes changed
/// (a batch split over ranks) gets consistent types throughout.
LogicalResult inferShapes(Operation *root, int64_t *numRefined = nullptr,
                          bool replace = false);
} // namespace mlir::dist

#endif // DIST_DIALECT_DIST_TRANSFORMS_PASSES_H
