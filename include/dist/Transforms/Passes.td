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
    Option<"conv", "conv", "std::string", "\"auto\"",
           "how codegen runs 2-D convolutions (auto|direct|im2col, as its "
           "own conv option): with im2col their columns are priced on "
           "every device">,
  ];
  let statistics = [
    Statistic<"numLayers", "num-layers", "Number of layers planned">,
    Statistic<"numStages", "num-stages", "Number of pipeline stages chosen">,
  ];
}

def PartitionPass : Pass<"dist-partition", "ModuleOp"> {
  let summary = "split a model over a device mesh (SPMD, one program for all ranks)";
  let description = [{
    Declares the device mesh as `shard.grid @mesh(shape = ...)` with the
    axis names in `dist.mesh_axes` (e.g. `["dp", "tp"]`) and rewrites the
    module into the program every rank runs.

    Data parallelism (axis `dp` of size n > 1) applies to the training step
    (the function marked `dist.train_step`): each rank takes 1/n of every
    batch, so a static batch B becomes B/n in the step's signature and in
    every shape that depends on it (an op with the batch baked into a
    constant, e.g. a Reshape to [B, ...], fails with a hint to export the
    model with a dynamic batch axis). The parameter gradients are averaged
    over the axis in fused buckets: gradients are grouped in the order the
    backward pass produces them into buckets of about `bucket-bytes`, each
    bucket is packed (flattened and concatenated) right after its last
    gradient is computed and reduced with one
    `shard.all_reduce ... reduction = <average>`, and unpacked just before
    the optimizer update, so the reduction of early buckets can overlap the
    rest of the backward pass. The returned loss is averaged too. Values
    averaged are exactly those the update reads that depend on the step's
    data inputs. Inference functions keep the whole batch (every dp rank
    computes it).

    Tensor parallelism (axis `tp` of size m > 1) splits the forward graph
    Megatron-style (column-parallel regions closed by row-parallel products
    and `shard.all_reduce`, vocabulary-parallel embeddings, gathered output
    layers; see lib/Transforms/TensorParallel.cpp). dist-opt does that
    before it builds the training step, so that the backward pass follows;
    this pass does it for a module without a step and rejects a step built
    from an unsplit forward function.

    With `zero=1` (ZeRO stage 1) the optimizer state of every trainable
    parameter whose leading dimension divides by dp is split over the dp
    axis by rows (`dist.shard`): each rank runs the update on its rows
    (`shard.all_slice` of the parameter and its averaged gradient) and the
    updated rows are gathered back (`shard.all_gather`).

    Inference (the public function that is not a step) under dp > 1: when
    a dataflow analysis proves that sample i of every output depends only
    on sample i of the inputs (lib/Transforms/BatchSplit.cpp), the function
    is marked `dist.infer_batch_split = dp` and a static batch B becomes
    B / dp in it; the runtime runs each dp rank on its rows and gathers the
    outputs. Otherwise (or with `split-inference=false`) it is marked
    `dist.infer_batch_whole = "<why>"` and every rank runs the whole batch.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::shard::ShardDialect"];
  let options = [
    Option<"mesh", "mesh", "std::string", "\"\"",
           "the mesh, e.g. dp=2 or dp=2,tp=1 (axis=size, comma-separated)">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "4194304",
           "target size of a gradient bucket in bytes">,
    Option<"zero", "zero", "int64_t", "0",
           "ZeRO stage: 1 shards the optimizer state over the dp ranks (each "
           "updates its rows of every parameter and the rows are gathered); "
           "0: every rank keeps all of it">,
    Option<"splitInference", "split-inference", "bool", "true",
           "split the inference batch over the dp ranks where the model "
           "keeps samples apart">,
  ];
  let statistics = [
    Statistic<"numBuckets", "num-buckets", "Number of gradient buckets">,
    Statistic<"numReduced", "num-reduced", "Number of values all-reduced">,
  ];
}

#endif // DIST_TRANSFORMS_PASSES_TD
