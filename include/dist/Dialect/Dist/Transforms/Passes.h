//===- Passes.h - dist dialect passes --------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Declarations of the passes over the dist graph and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_TRANSFORMS_PASSES_H
#define DIST_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "dist/Support/EnumOption.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dist {
class DistDialect;

//===----------------------------------------------------------------------===//
// Training choices (dist-build-train-step's options, dist-opt's flags)
//===----------------------------------------------------------------------===//

/// The loss on the model's output, as PyTorch computes it (mean reduction).
enum class LossKind { MSE, CrossEntropy, BCE, Model };
/// torch.optim's single-tensor optimizers.
enum class OptimizerKind { SGD, Momentum, Adam, AdamW };
/// How the learning rate moves over the steps.
enum class LRScheduleKind { Constant, Cosine, WarmupLinear };

template <>
struct EnumOptionTraits<LossKind> {
  static llvm::ArrayRef<EnumOptionValue<LossKind>> values() {
    static const EnumOptionValue<LossKind> table[] = {
        {LossKind::MSE, "mse", "mean squared error against a float label"},
        {LossKind::CrossEntropy, "cross_entropy",
         "softmax cross entropy of logits against class indices"},
        {LossKind::BCE, "bce", "binary cross entropy of probabilities"},
        {LossKind::Model, "model", "the output is the loss"}};
    return table;
  }
  static constexpr const char *noun = "loss";
  static constexpr const char *passPrefix = "dist-build-train-step option ";
  static constexpr bool nounNamesFlag = false;
};
template <>
struct EnumOptionTraits<OptimizerKind> {
  static llvm::ArrayRef<EnumOptionValue<OptimizerKind>> values() {
    static const EnumOptionValue<OptimizerKind> table[] = {
        {OptimizerKind::SGD, "sgd", "plain gradient descent"},
        {OptimizerKind::Momentum, "momentum", "SGD with momentum"},
        {OptimizerKind::Adam, "adam", "Adam"},
        {OptimizerKind::AdamW, "adamw", "Adam with decoupled weight decay"}};
    return table;
  }
  static constexpr const char *noun = "optimizer";
  static constexpr const char *passPrefix = "dist-build-train-step option ";
  static constexpr bool nounNamesFlag = false;
};
template <>
struct EnumOptionTraits<LRScheduleKind> {
  static llvm::ArrayRef<EnumOptionValue<LRScheduleKind>> values() {
    static const EnumOptionValue<LRScheduleKind> table[] = {
        {LRScheduleKind::Constant, "constant", "the same rate every step"},
        {LRScheduleKind::Cosine, "cosine",
         "cosine decay to 0 at the last step"},
        {LRScheduleKind::WarmupLinear, "warmup-linear",
         "linear warm-up, then linear decay to 0"}};
    return table;
  }
  static constexpr const char *noun = "schedule";
  static constexpr const char *passPrefix = "dist-build-train-step option ";
  static constexpr bool nounNamesFlag = false;
};
} // namespace mlir::dist

DIST_ENUM_OPTION_PARSER(mlir::dist::LossKind)
DIST_ENUM_OPTION_PARSER(mlir::dist::OptimizerKind)
DIST_ENUM_OPTION_PARSER(mlir::dist::LRScheduleKind)

namespace mlir::dist {

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
