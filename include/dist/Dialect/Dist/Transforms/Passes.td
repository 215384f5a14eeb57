//===- Passes.td - dist dialect passes ---------------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Passes over the dist graph.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define DIST_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def InferShapesPass : Pass<"dist-infer-shapes", "func::FuncOp"> {
  let summary = "refine result types of dist ops from their operands";
  let description = [{
    Walks a function in order, re-runs every dist op's type inference and
    replaces a result type by the inferred one when the inferred type is more
    static (a known rank or a known dimension where the old type had none).
    Finally the function's result types are updated to the types of the
    returned values.

    Pre-condition: the function verifies. Post-condition: every dist op's
    result types are the most static its operands allow; the function's
    signature follows. The pass fails if inference of an op fails, naming it.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect"];
  let statistics = [
    Statistic<"numRefined", "num-refined", "Number of result types refined">,
  ];
}

def BuildTrainStepPass : Pass<"dist-build-train-step", "ModuleOp"> {
  let summary = "add a training step: loss, reverse-mode gradients, optimizer";
  let description = [{
    Clones the module's public entry function into a public `train_step`
    function (marked `dist.train_step`) that:
    - applies the loss to the chosen output against a new `label` argument
      (`mse`, `cross_entropy` over logits [N, C] or [N, T, C] with class
      indices, `bce` on probabilities, each reduced by the mean as PyTorch
      does), or takes the scalar output itself (`model`);
    - runs BatchNormalization with batch statistics and updates its running
      statistics as PyTorch's train() mode does;
    - differentiates the loss with respect to every floating-point parameter
      it depends on, through each op's GradientOpInterface, accumulating
      the gradients of values used more than once;
    - optionally clips the global gradient norm, then updates parameters and
      optimizer state (new `dist.param`s marked `state`) with `dist.set_param`
      following torch.optim's SGD, SGD with momentum, Adam and AdamW;
    - takes the learning rate and the 1-based step number as two trailing
      f32 scalar arguments and returns the loss as an f32 scalar;
    - differentiates with respect to the arguments holding rows pulled from
      the parameter server (`dist.ps_rows`, see dist-ps-lookups) too, and
      returns their gradients after the loss as `<argument>.grad` (the
      servers apply them: no update here, and no --clip-grad-norm); the
      inputs holding their ids stay among the step's inputs.
    With a mesh on the module (`dist.mesh`) whose dp axis is larger than 1
    and a forward function with a static batch B, the step is built at one
    rank's batch B / dp (the forward function keeps B for inference).
    Parameters that receive a gradient are marked `trainable`; those named by
    `freeze` (PyTorch's buffers, layers a user fine-tunes around) are
    constants to the gradient and stay frozen. The original
    entry function is kept for inference. The pass fails, naming the op, when
    an op on the path from a parameter to the loss has no gradient rule.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"loss", "loss", "::mlir::dist::LossKind",
           "::mlir::dist::LossKind::CrossEntropy",
           "loss on the output", "::mlir::dist::enumOptionValues<::mlir::dist::LossKind>()">,
    Option<"lossOutput", "loss-output", "std::string", "\"\"",
           "name of the output the loss applies to (default: the first)">,
    Option<"ignoreIndex", "ignore-index", "int64_t", "-100",
           "class index cross_entropy ignores">,
    Option<"optimizer", "optimizer", "::mlir::dist::OptimizerKind",
           "::mlir::dist::OptimizerKind::SGD", "the optimizer (torch.optim)",
           "::mlir::dist::enumOptionValues<::mlir::dist::OptimizerKind>()">,
    Option<"lr", "lr", "double", "1e-3", "base learning rate (recorded for the runtime)">,
    Option<"lrSchedule", "lr-schedule", "::mlir::dist::LRScheduleKind",
           "::mlir::dist::LRScheduleKind::Constant", "learning-rate schedule",
           "::mlir::dist::enumOptionValues<::mlir::dist::LRScheduleKind>()">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0",
           "warm-up steps of the warmup-linear schedule">,
    Option<"momentum", "momentum", "double", "0.9", "momentum of the momentum optimizer">,
    Option<"beta1", "beta1", "double", "0.9", "Adam's beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam's beta2">,
    Option<"eps", "eps", "double", "1e-8", "Adam's epsilon">,
    Option<"weightDecay", "weight-decay", "double", "-1",
           "weight decay (negative: the optimizer's PyTorch default, 0.01 for adamw, else 0)">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0",
           "clip the global gradient norm to this value (0: off)">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "micro-batches per step of a pipeline (dist-split-stages): a "
           "static batch B is built at B / (dp * micro-batches); 0: two per "
           "stage (mesh axis pp), fewer where B / dp does not split">,
    Option<"globalBatch", "global-batch", "int64_t", "0",
           "the global batch a pipelined step is built for when the model's "
           "batch is dynamic (0: the model's)">,
    ListOption<"freeze", "freeze", "std::string",
               "initializers (names or glob patterns) kept as they are: no "
               "gradient, no update">,
  ];
  let statistics = [
    Statistic<"numTrainable", "num-trainable", "Number of parameters trained">,
    Statistic<"numStateParams", "num-state",
              "Number of optimizer-state parameters declared">,
  ];
}

#endif // DIST_DIALECT_DIST_TRANSFORMS_PASSES_TD
