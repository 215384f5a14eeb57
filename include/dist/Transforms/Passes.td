//===- Passes.td - cross-dialect passes --------------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The plan phase: the global planner over the cost model.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_TRANSFORMS_PASSES_TD
#define DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PlanPass : Pass<"dist-plan", "ModuleOp"> {
  let summary = "choose the parallel layout of a model on its cluster";
  let description = [{
    Runs the global planner (dist/Analysis/Planner.h) on the module's
    training step (the function marked `dist.train_step`) or, without one,
    its public entry function, for the cluster in the module attribute
    `dist.cluster`. Layers and their costs come from the cost op interface
    (dist/Transforms/LayerCosts.h); a dynamic batch is bound to
    `global-batch` on a copy of the function first.

    With `plan-file` the decisions come from that plan.json instead and are
    only re-evaluated; a plan that does not fit the cluster (memory, device
    counts, layer coverage) fails the pass with the reason.

    Post-conditions: the module carries `dist.plan`, a dictionary with
    plan.json's content; every op of the planned function that belongs to a
    layer carries `dist.stage = #dist.stage<i of n>` and
    `dist.placement = #dist.placement<kind, group = device type>`.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect"];
  let options = [
    Option<"objective", "objective", "std::string", "\"step-time\"",
           "step-time (minimal step time) or cost (minimal money per hour "
           "at min-throughput samples/s)">,
    Option<"minThroughput", "min-throughput", "double", "0",
           "samples per second the cost objective must reach">,
    Option<"strategy", "strategy", "std::string", "\"exact\"",
           "exact, rl, greedy or exhaustive">,
    Option<"globalBatch", "global-batch", "int64_t", "0",
           "samples per step (0: the batch the function is compiled for)">,
    Option<"threads", "threads", "int64_t", "0",
           "CPU threads per rank (0: all cores)">,
    Option<"planFile", "plan-file", "std::string", "\"\"",
           "apply this plan.json instead of searching">,
    Option<"seed", "seed", "uint64_t", "1", "seed of the rl strategy">,
    Option<"rlEpisodes", "rl-episodes", "int64_t", "400",
           "episodes of the rl strategy">,
    Option<"psTables", "ps-tables", "bool", "false",
           "price embedding tables as parameter-server tables with row-wise "
           "updates (HeterPS) instead of the dense updates codegen emits">,
  ];
  let statistics = [
    Statistic<"numLayers", "num-layers", "Number of layers planned">,
    Statistic<"numStages", "num-stages", "Number of pipeline stages chosen">,
  ];
}

#endif // DIST_TRANSFORMS_PASSES_TD
