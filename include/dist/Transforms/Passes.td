//===- Passes.td - cross-dialect passes --------------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The plan phase (the cluster, the global planner over the cost model) and
// the partition phase (tensor parallelism, the SPMD rewrite over the mesh).
//
//===----------------------------------------------------------------------===//

#ifndef DIST_TRANSFORMS_PASSES_TD
#define DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttachClusterPass : Pass<"dist-attach-cluster", "ModuleOp"> {
  let summary = "put the cluster a model is planned for on the module";
  let description = [{
    Reads the cluster file named by `cluster` (YAML or JSON, see
    include/dist/Planner/Cluster.h), or detects this machine with
    `cluster=local`, and attaches it to the module as the typed
    `dist.cluster = #dist.cluster<...>` that dist-plan plans for. A module
    that carries a cluster already keeps it unless `cluster` is given.

    Post-condition: the module has `dist.cluster`. The pass fails with the
    file's one-line error (`file:line:col: what`) on a bad cluster file.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect"];
  let options = [
    Option<"cluster", "cluster", "std::string", "\"\"",
           "local (detect this machine) or a cluster file; empty: keep the "
           "module's cluster, else detect this machine">,
  ];
}

def PsLookupsPass : Pass<"dist-ps-lookups", "ModuleOp"> {
  let summary = "turn lookups of parameter-server tables into pulled rows";
  let description = [{
    Puts the embedding tables named by `tables` on the parameter server:
    each lookup of such a table in the public functions (a `dist.gather` on
    axis 0 of the table by ids read from a function argument) becomes a new
    function argument of the lookup's type, marked `dist.ps_rows = {table,
    ids, cols}`, that the runtime fills with the rows it pulled for those ids
    (in their order, repeats included). The ids may be computed from the
    argument by ops that pick elements of each sample (a gather by constant
    indices on an axis other than the batch, reshape, flatten, squeeze,
    unsqueeze, a transpose that keeps the batch first, integer casts, as
    `sparse[:, i]` exports): `cols` lists, per sample, which elements of the
    argument (row-major, without the batch dimension) the lookup reads, in
    order. The table's `dist.param` gets `dist.ps_table =
    #dist.ps_table<rows, dim, shards>` and is no longer read by the
    functions: the servers hold it, initialised from the parameter file, or
    with `init` = `uniform:LOW,HIGH` or `normal:MEAN,STD` drawn per (table,
    id, column) when a row is first touched (the table then needs no
    values: see ONNXImportOptions::declaredParams). The module gets
    `dist.ps_optimizer = {optimizer, lr, beta1, beta2, eps, init, init_a,
    init_b}`, the update the servers apply per row and how they create rows. dist-build-train-step then returns
    the gradient of each pulled argument, which the runtime pushes.

    `tables` holds parameter names or glob patterns, `all` (every
    floating-point parameter of rank 2 that only lookups read) or `auto`
    (those of them of at least 1 MiB, the size from which the planner's cost
    model prices a table as served rows: dist/Transforms/LayerCosts.h). The
    pass fails, naming the op, when a named table is read by anything but
    such a lookup (a tied output projection, ids computed from a parameter
    or by arithmetic), and when a name matches no parameter. A no-op
    without `tables`.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    ListOption<"tables", "tables", "std::string",
               "parameters to put on the parameter server (names, glob "
               "patterns, all or auto)">,
    Option<"shards", "shards", "int64_t", "1",
           "parameter-server shards the rows are spread over">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "the servers' per-row update: sgd, adagrad or adam (lazy)">,
    Option<"lr", "lr", "double", "0.01", "the servers' learning rate">,
    Option<"beta1", "beta1", "double", "0.9", "Adam's beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam's beta2">,
    Option<"eps", "eps", "double", "-1",
           "Adam's and Adagrad's epsilon (-1: 1e-8 for adam, 1e-10 for "
           "adagrad, as in PyTorch)">,
    Option<"init", "init", "std::string", "\"rows\"",
           "how the servers create rows: rows (the parameter file's), "
           "uniform:LOW,HIGH or normal:MEAN,STD">,
  ];
  let statistics = [
    Statistic<"numTables", "num-tables", "Number of tables put on the servers">,
    Statistic<"numLookups", "num-lookups", "Number of lookups turned into pulls">,
  ];
}

def PlanPass : Pass<"dist-plan", "ModuleOp"> {
  let summary = "choose the parallel layout of a model on its cluster";
  let description = [{
    Runs the global planner (dist/Planner/Planner.h) on the module's
    training step (the function marked `dist.train_step`) or, without one,
    its public entry function, for the cluster in the module attribute
    `dist.cluster`. Layers and their costs come from the cost op interface
    (dist/Transforms/LayerCosts.h); a dynamic batch is bound to
    `global-batch` on a copy of the function first.

    With `train-pipeline` (a textual pass pipeline that builds the training
    step, such as `dist-build-train-step{loss=mse},canonicalize,cse`; the
    compile pipeline passes the same passes in C++) the plan is made for the
    step that pipeline builds from the forward graph: the pass runs it on a
    copy of the module without its mesh and plans that copy, the whole model
    at the global batch, before tensor parallelism splits the forward graph
    the step is built from.

    The decisions: searched with `strategy`, taken from `plan-file` (a
    plan.json, only re-evaluated; a plan that does not fit the cluster fails
    the pass with the reason), or, when the module carries a mesh
    (`dist.mesh`, from `dist-opt --mesh`), that mesh's data- and
    tensor-parallel degrees in one stage, so that the plan describes the
    layout that will run (under the cost objective it must reach
    `min-throughput`). With `apply-layout` a searched or read plan's
    degrees become the module's `dist.mesh`, which the train and partition
    phases then build; a plan they cannot build (pipeline stages) fails the
    pass.

    Post-conditions: the module carries the typed `dist.plan`
    (`#dist.plan<...>`: objective, degrees, stages and predicted figures);
    every op of the planned function that belongs to a layer carries
    `dist.stage = #dist.stage<i of n>` and
    `dist.placement = #dist.placement<kind, group = device type>`. With
    `report-dir` the pass writes plan.json and plan.html there; with
    `summary` it prints the plan's summary lines.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect"];
  let options = [
    Option<"objective", "objective", "::mlir::dist::Objective",
           "::mlir::dist::Objective::StepTime",
           "step-time (minimal step time) or cost (minimal money per hour "
           "at min-throughput samples/s)",
           "::mlir::dist::enumOptionValues<::mlir::dist::Objective>()">,
    Option<"minThroughput", "min-throughput", "double", "0",
           "samples per second the cost objective must reach">,
    Option<"strategy", "strategy", "::mlir::dist::PlanStrategy",
           "::mlir::dist::PlanStrategy::Exact", "the search",
           "::mlir::dist::enumOptionValues<::mlir::dist::PlanStrategy>()">,
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
    Option<"conv", "conv", "::mlir::dist::ConvKernel",
           "::mlir::dist::ConvKernel::Auto",
           "how codegen runs 2-D convolutions (its own conv option): with "
           "im2col their columns are priced on every device",
           "::mlir::dist::enumOptionValues<::mlir::dist::ConvKernel>()">,
    Option<"trainPipeline", "train-pipeline", "std::string", "\"\"",
           "plan the training step this pass pipeline builds (on a copy)">,
    Option<"applyLayout", "apply-layout", "bool", "false",
           "make the plan's data- and tensor-parallel degrees the module's "
           "mesh (dist.mesh)">,
    Option<"schedule", "schedule", "::mlir::dist::PipelineSchedule",
           "::mlir::dist::PipelineSchedule::OneFOneB",
           "the pipeline schedule a training plan's timeline follows",
           "::mlir::dist::enumOptionValues<::mlir::dist::PipelineSchedule>()">,
    Option<"microBatches", "micro-batches", "int64_t", "0",
           "micro-batches of a --mesh with pp (0: two per stage, fewer "
           "where the batch per dp rank does not split), as "
           "dist-build-train-step builds them">,
    Option<"ppSplit", "pp-split", "std::string", "\"\"",
           "stage boundaries of a --mesh with pp, as dist-split-stages' "
           "split option">,
    Option<"zero", "zero", "int64_t", "0",
           "the ZeRO stage an applied layout is built with: 1 needs data "
           "parallelism to shard the optimizer state over">,
    Option<"reportDir", "report-dir", "std::string", "\"\"",
           "write plan.json and plan.html into this directory">,
    Option<"summary", "summary", "::mlir::dist::SummaryStream",
           "::mlir::dist::SummaryStream::None",
           "where the plan's summary lines go",
           "::mlir::dist::enumOptionValues<::mlir::dist::SummaryStream>()">,
  ];
  let statistics = [
    Statistic<"numLayers", "num-layers", "Number of layers planned">,
    Statistic<"numStages", "num-stages", "Number of pipeline stages chosen">,
    Statistic<"numAnnotated", "num-annotated",
              "Number of ops given a stage and a placement">,
  ];
}

def TensorParallelPass : Pass<"dist-tensor-parallel", "ModuleOp"> {
  let summary = "split the forward graph Megatron-style over the tp axis";
  let description = [{
    Splits the public forward functions over the `tp` axis of the module's
    mesh (`dist.mesh`, or the `mesh` option): column-parallel regions closed
    by row-parallel products and `shard.all_reduce`, vocabulary-parallel
    embeddings, gathered output layers (lib/Transforms/TensorParallel.cpp
    says how). Declares the mesh as `shard.grid @mesh`. The training step is
    built after this pass, from the split graph, so that its backward pass
    follows from the gradient rules of the collectives inserted here.

    A no-op without a tp axis larger than 1, or when the module is split
    for the mesh already (it declares `shard.grid @mesh`). Fails when the
    module has a training step built from the unsplit forward graph, and
    when nothing in the model can be split.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::shard::ShardDialect"];
  let options = [
    Option<"mesh", "mesh", "std::string", "\"\"",
           "the mesh, e.g. tp=2 (default: the module's dist.mesh)">,
    Option<"report", "report", "bool", "false",
           "print what was split on stderr">,
  ];
  let statistics = [
    Statistic<"numColumnRow", "num-column-row",
              "Number of column-parallel regions closed by row splits">,
    Statistic<"numGathered", "num-gathered",
              "Number of column-parallel outputs gathered">,
    Statistic<"numEmbeddings", "num-embeddings",
              "Number of vocabulary-parallel embedding lookups">,
    Statistic<"numParams", "num-params", "Number of parameters split">,
  ];
}

def SplitStagesPass : Pass<"dist-split-stages", "ModuleOp"> {
  let summary = "cut a training step into pipeline stages: per-stage forward, backward and update functions with explicit send/recv";
  let description = [{
    Rewrites the training step (the function marked `dist.train_step`,
    built at one micro-batch's size) into the functions the ranks of a
    pipeline run, one per stage and schedule action:
    `<step>_s<k>_forward`, `_backward` (or, for a schedule that splits it,
    `_backward_input` and `_backward_weight`) and `_update`, each marked
    `dist.pipeline_action = {stage, action}`; the step goes, and the module
    gets `dist.pipeline = {stages, micro_batches, schedule, train}`.

    Stages: every layer (ops grouped by ONNX node scope, as the cost model
    groups them) goes to a stage: the planner's `dist.stage` on its forward
    ops, else the `split` option (layer counts per stage, e.g. `3,5`, or the
    names of the first layer of stages 1..p-1), else contiguous stages of
    about equal forward and backward FLOPs. Ops outside a layer follow their
    operands (forward ops go to the latest stage an operand comes from,
    backward ops to the earliest); constants, parameter reads and scalar
    arithmetic on the step's inputs are copied into every stage that uses
    them. The loss is the last stage's.

    Values crossing a cut travel by `dist.send` / `dist.recv` with one tag
    per value and pair of stages: activations from a forward to the
    forward of each later stage that reads them (so values that skip
    stages, residuals and masks, go straight to their reader), gradients
    from a backward to the backward of each earlier stage. A value a later
    action of the same stage reads (a forward's activations read by its
    backward) is returned by the earlier function and taken as an argument
    (`dist.stash`) by the later one. Parameter gradients are summed over the
    micro-batches into accumulators (`dist.param ... {state,
    dist.grad_accumulator}`, named `<stage>.grad_acc.<k>`), which the update
    divides by the number of micro-batches (the step's loss is a mean, so
    the result is the global batch's) and sets back to zero.

    With dp or tp beside pp (mesh pp x dp x tp), the step was built at one
    dp rank's micro-batch and tp's collectives are already in it: they go
    with their layer's stage; dist-partition then averages each stage's
    accumulators over its dp group in the stage's update.

    A trainable parameter read in several stages (tied embedding and output
    layer) is updated by the stage whose update its gradient reaches (the
    earliest reader): every reader sums its share of the gradient (the
    backward add of shares from different stages goes to that update) over
    the micro-batches, a later reader's update sends its mean to the
    owner's, and the owner sends the updated value to a `_sync` function of
    each other reader (after every update: `dist.recv` and
    `dist.set_param`).

    With a schedule that splits the backward (zb-h1), a backward op belongs
    to backward-input when a gradient another stage reads depends on it,
    else to backward-weight.

    With --clip-grad-norm (the square root marked `dist.grad_norm` by
    dist-build-train-step), each stage gets a `_norm` function between its
    backward and its update: it reads the accumulators (and the tied shares
    sent to it) in the update's place, returns the sum of the squares of its
    parameters' gradients (summed over tp where a parameter is split) as
    `grad_norm.partial`, and keeps the gradients for the update; the update
    takes the sum over all stages, which the runtime forms, as the argument
    `grad_norm.total` in place of the step's sum.

    Fails, naming the value or option, for: a step whose shapes are not
    static; a parameter read in two stages that neither updates; an update
    that reads another stage's value that is not a gradient summed over
    micro-batches; a split that does not give every stage a layer.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"stages", "stages", "int64_t", "0",
           "pipeline stages (default: the module's mesh axis pp, else the "
           "planner's stages)">,
    Option<"microBatches", "micro-batches", "int64_t", "0",
           "micro-batches per step (default: the planner's, else 2 per "
           "stage)">,
    Option<"schedule", "schedule", "::mlir::dist::PipelineSchedule",
           "::mlir::dist::PipelineSchedule::OneFOneB",
           "the pipeline schedule",
           "::mlir::dist::enumOptionValues<::mlir::dist::PipelineSchedule>()">,
    Option<"split", "split", "std::string", "\"\"",
           "stage boundaries: layer counts per stage (e.g. 3,5) or the names "
           "of the layers that start stages 1.. (default: balanced FLOPs)">,
  ];
  let statistics = [
    Statistic<"numTransfers", "transfers",
              "values sent between stages (per micro-batch)">,
    Statistic<"numStashed", "stashed",
              "values kept between a stage's actions">,
    Statistic<"numAccumulators", "accumulators",
              "gradient accumulators over micro-batches">,
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

    Pipeline stages (functions marked `dist.pipeline_action` by
    dist-split-stages) are built at one dp rank's micro-batch already: the
    update of each stage reads its gradient sums (the params marked
    `dist.grad_accumulator`) first and averages them over dp in fused
    buckets before the update; the runtime averages the last stage's loss.
    ZeRO with stages is refused.

    The mesh is the `mesh` option or, without it, the module's `dist.mesh`
    (which this pass replaces by the `shard.grid`); without either the pass
    leaves the module as it is (one process). A tp axis larger than 1
    needs the forward graph split by dist-tensor-parallel first (the train
    phase does that before it builds the step; the partition phase for a
    module without one).

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
           "the mesh, e.g. dp=2 or dp=2,tp=1 (axis=size, comma-separated; "
           "default: the module's dist.mesh)">,
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
