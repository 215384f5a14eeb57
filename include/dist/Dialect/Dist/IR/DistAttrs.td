//===- DistAttrs.td - dist dialect attributes --------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Distribution attributes the dist dialect adds to upstream's sharding:
// device-kind placement, pipeline stages, parameter-server tables and expert
// axes. The planner attaches them to graph ops as discardable attributes
// (`dist.placement`, `dist.stage`, `dist.ps_table`, `dist.expert_axis`).
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_IR_DISTATTRS_TD
#define DIST_DIALECT_DIST_IR_DISTATTRS_TD

include "dist/Dialect/Dist/IR/DistBase.td"
include "mlir/IR/EnumAttr.td"

def Dist_DeviceKind : I32EnumAttr<"DeviceKind", "kind of compute device", [
    I32EnumAttrCase<"CPU", 0, "cpu">,
    I32EnumAttrCase<"GPU", 1, "gpu">,
  ]> {
  let cppNamespace = "::mlir::dist";
  let genSpecializedAttr = 0;
}
def Dist_DeviceKindAttr : EnumAttr<Dist_Dialect, Dist_DeviceKind, "device_kind">;

class Dist_Attr<string name, string attrMnemonic> : AttrDef<Dist_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def Dist_PlacementAttr : Dist_Attr<"Placement", "placement"> {
  let summary = "device kind and device group an op runs on";
  let description = [{
    Where an op runs: the kind of device and, optionally, the index of the
    device group of that kind in the cluster (`-1`: any group the partitioner
    chooses).

    ```mlir
    #dist.placement<gpu, group = 0>
    ```
  }];
  let parameters = (ins "DeviceKind":$kind, DefaultValuedParameter<"int64_t", "-1">:$group);
  let assemblyFormat = "`<` $kind (`,` `group` `=` $group^)? `>`";
  let genVerifyDecl = 1;
}

def Dist_StageAttr : Dist_Attr<"Stage", "stage"> {
  let summary = "pipeline stage an op belongs to";
  let description = [{
    Index of the pipeline stage (0-based) out of `count` stages.

    ```mlir
    #dist.stage<1 of 4>
    ```
  }];
  let parameters = (ins "int64_t":$index, "int64_t":$count);
  let assemblyFormat = "`<` $index `of` $count `>`";
  let genVerifyDecl = 1;
}

def Dist_PSTableAttr : Dist_Attr<"PSTable", "ps_table"> {
  let summary = "embedding table served by the parameter server";
  let description = [{
    Marks a parameter as a sparse embedding table held by the parameter
    server: its number of rows, the embedding width and the number of server
    shards the rows are spread over.

    ```mlir
    #dist.ps_table<rows = 1000000, dim = 64, shards = 4>
    ```
  }];
  let parameters = (ins "int64_t":$rows, "int64_t":$dim, "int64_t":$shards);
  let assemblyFormat = "`<` `rows` `=` $rows `,` `dim` `=` $dim `,` `shards` `=` $shards `>`";
  let genVerifyDecl = 1;
}

def Dist_ExpertAxisAttr : Dist_Attr<"ExpertAxis", "expert_axis"> {
  let summary = "mixture-of-experts axis of a tensor";
  let description = [{
    Says that dimension `dim` of a tensor enumerates `experts` experts, which
    the partitioner may spread over the mesh axis named `mesh_axis`.

    ```mlir
    #dist.expert_axis<dim = 0, experts = 8, mesh_axis = "ep">
    ```
  }];
  let parameters = (ins "int64_t":$dim, "int64_t":$experts,
                        StringRefParameter<>:$mesh_axis);
  let assemblyFormat = "`<` `dim` `=` $dim `,` `experts` `=` $experts `,` `mesh_axis` `=` $mesh_axis `>`";
  let genVerifyDecl = 1;
}


def Dist_MeshAttr : Dist_Attr<"Mesh", "mesh"> {
  let summary = "the device mesh a module is compiled for";
  let description = [{
    The named axes of the device mesh and their sizes, in order: `dp` (data
    parallel) and `tp` (tensor parallel). `dist-opt --mesh dp=2,tp=2` puts
    it on the module as `dist.mesh`, and so does `dist-plan` when it applies
    the plan's layout; the train and partition phases read it from there:
    `dist-tensor-parallel` splits the forward graph over `tp`,
    `dist-build-train-step` builds the step at one `dp` rank's batch, and
    `dist-partition` declares it as the upstream `shard.grid @mesh` (axis
    names in `dist.mesh_axes`) that the collectives refer to, replacing
    `dist.mesh`.

    ```mlir
    module attributes {dist.mesh = #dist.mesh<dp = 2, tp = 2>} {}
    ```
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::StringAttr">:$axes,
                        ArrayRefParameter<"int64_t">:$shape);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The mesh as the C++ description (dist/Dialect/Dist/IR/Mesh.h).
    ::mlir::dist::MeshSpec getSpec() const;
    /// The size of axis `name`; 1 when the mesh has no such axis.
    int64_t getSize(::llvm::StringRef name) const;
    /// Number of ranks (the product of the sizes).
    int64_t getNumRanks() const;
    /// Builds the attribute of `spec` (which parseMesh checked).
    static MeshAttr get(::mlir::MLIRContext *ctx,
                        const ::mlir::dist::MeshSpec &spec);
  }];
}

//===----------------------------------------------------------------------===//
// The plan
//===----------------------------------------------------------------------===//

def Dist_PlanObjective : I32EnumAttr<"PlanObjective",
    "what the planner minimised", [
    I32EnumAttrCase<"StepTime", 0, "step_time">,
    I32EnumAttrCase<"Cost", 1, "cost">,
  ]> {
  let cppNamespace = "::mlir::dist";
  let genSpecializedAttr = 0;
}

def Dist_PlanSearch : I32EnumAttr<"PlanSearch",
    "how the planner's decisions were made", [
    I32EnumAttrCase<"Exact", 0, "exact">,
    I32EnumAttrCase<"RL", 1, "rl">,
    I32EnumAttrCase<"Greedy", 2, "greedy">,
    I32EnumAttrCase<"Exhaustive", 3, "exhaustive">,
    I32EnumAttrCase<"File", 4, "file">,
    I32EnumAttrCase<"Mesh", 5, "mesh">,
  ]> {
  let cppNamespace = "::mlir::dist";
  let genSpecializedAttr = 0;
}

/// A dist (or builtin) attribute inside another, printed in full
/// (`#dist.link<...>`, `array<f64: ...>`) so that nested records read alone.
class Dist_NestedAttrParameter<string cpp> : AttrParameter<cpp, ""> {
  let printer = "$_printer.printAttribute($_self)";
  let parser = "::mlir::dist::parseNestedAttr<" # cpp # ">($_parser)";
}
class Dist_OptionalNestedAttrParameter<string cpp> : OptionalParameter<cpp> {
  let printer = "$_printer.printAttribute($_self)";
  let parser = "::mlir::dist::parseNestedAttr<" # cpp # ">($_parser)";
}
/// A list of them: `[#dist.node<...>, #dist.node<...>]`.
class Dist_NestedAttrArrayParameter<string cpp> : ArrayRefParameter<cpp> {
  let printer = [{
    $_printer << '[';
    ::llvm::interleaveComma($_self, $_printer,
                            [&](auto item) { $_printer.printAttribute(item); });
    $_printer << ']';
  }];
  let parser = "::mlir::dist::parseNestedAttrArray<" # cpp # ">($_parser)";
}

/// A 64-bit float printed so that it parses back to the same value.
def Dist_F64Parameter : AttrParameter<"::llvm::APFloat", "a 64-bit float"> {
  let printer = "::mlir::dist::printF64($_printer, $_self)";
  let parser = "::mlir::dist::parseF64($_parser)";
}

def Dist_PlanStageAttr : Dist_Attr<"PlanStage", "plan_stage"> {
  let summary = "one pipeline stage of a plan";
  let description = [{
    The layers of one pipeline stage (first and last, by index and name),
    the device type they run on, the devices given to the stage (`units` =
    `dp` x `tp`), whether activations are recomputed, and the planner's
    predictions for one step on one device: compute and communication time
    in seconds, memory in bytes, and the samples per second the stage
    sustains.

    ```mlir
    #dist.plan_stage<first_layer = 0, last_layer = 3, first_name = "/fc1",
      last_name = "/fc4", device_type = "n/g", device_kind = gpu, units = 4,
      dp = 4, tp = 1, recompute = false, compute_s = 1.0e-03,
      comm_s = 2.0e-04, memory_bytes = 1.0e+08, throughput = 2.0e+05>
    ```
  }];
  let parameters = (ins "int64_t":$first_layer, "int64_t":$last_layer,
                        StringRefParameter<>:$first_name,
                        StringRefParameter<>:$last_name,
                        StringRefParameter<>:$device_type,
                        "DeviceKind":$device_kind, "int64_t":$units,
                        "int64_t":$dp, "int64_t":$tp,
                        "::mlir::BoolAttr":$recompute,
                        Dist_F64Parameter:$compute_s,
                        Dist_F64Parameter:$comm_s,
                        Dist_F64Parameter:$memory_bytes,
                        Dist_F64Parameter:$throughput);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Dist_PlanAttr : Dist_Attr<"Plan", "plan"> {
  let summary = "the parallel layout the planner chose for a module";
  let description = [{
    What `dist-plan` decided for the module's cluster and predicted for it:
    the objective and how the decisions were made (a `search` strategy, a
    plan `file` re-evaluated, or the module's `mesh` evaluated), the data,
    tensor and pipeline degrees, micro-batches and recomputation, the global
    batch planned for (and whether a training step or inference), the step
    time in seconds, samples per second, money per hour, the devices used,
    and the stages in order. plan.json holds the same and more (the layers'
    times, the timeline).

    ```mlir
    module attributes {dist.plan = #dist.plan<objective = step_time,
      search = exact, dp = 4, tp = 1, pp = 1, micro_batches = 1,
      recompute = false, global_batch = 256, training = true,
      step_s = 1.2e-03, throughput = 2.1e+05, cost_per_hour = 8.0e+00,
      devices_used = 4, stages = [#dist.plan_stage<...>]>} {}
    ```
  }];
  let parameters = (ins "PlanObjective":$objective, "PlanSearch":$search,
                        "int64_t":$dp, "int64_t":$tp, "int64_t":$pp,
                        "int64_t":$micro_batches,
                        "::mlir::BoolAttr":$recompute,
                        "int64_t":$global_batch,
                        "::mlir::BoolAttr":$training,
                        Dist_F64Parameter:$step_s,
                        Dist_F64Parameter:$throughput,
                        Dist_F64Parameter:$cost_per_hour,
                        "int64_t":$devices_used,
                        Dist_NestedAttrArrayParameter<"PlanStageAttr">:$stages);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// The unified cluster object
//===----------------------------------------------------------------------===//

def Dist_LinkAttr : Dist_Attr<"Link", "link"> {
  let summary = "a link between devices or nodes (alpha-beta model)";
  let description = [{
    Bandwidth in bytes per second and latency in seconds of a link: inside
    a node (NVLink, shared memory) or between nodes (the network).

    ```mlir
    #dist.link<bandwidth = 1.0e+11, latency = 2.0e-06>
    ```
  }];
  let parameters = (ins Dist_F64Parameter:$bandwidth,
                        Dist_F64Parameter:$latency);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Dist_ThreadRatesAttr : Dist_Attr<"ThreadRates", "thread_rates"> {
  let summary = "a measured figure per thread count";
  let description = [{
    One measured value (a rate or a time, in SI units) for each thread
    count in `threads` (ascending, each at least 1).

    ```mlir
    #dist.thread_rates<threads = array<i64: 1, 2>, values = array<f64: 3.0e+10, 5.5e+10>>
    ```
  }];
  let parameters = (ins Dist_NestedAttrParameter<"::mlir::DenseI64ArrayAttr">:$threads,
                        Dist_NestedAttrParameter<"::mlir::DenseF64ArrayAttr">:$values);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Dist_LoopRatesAttr : Dist_Attr<"LoopRates", "loop_rates"> {
  let summary = "throughput of generated loops of one kernel class";
  let description = [{
    Bytes per second of generated loops of one kernel class
    (`elementwise`, `reduction`, `movement`, `window`, `in_place`) at
    `threads` threads, by working-set size in bytes (ascending).

    ```mlir
    #dist.loop_rates<kernel_class = "elementwise", threads = 1,
      footprints = array<f64: 2.6e+05>, rates = array<f64: 4.0e+10>>
    ```
  }];
  let parameters = (ins StringRefParameter<>:$kernel_class, "int64_t":$threads,
                        Dist_NestedAttrParameter<"::mlir::DenseF64ArrayAttr">:$footprints,
                        Dist_NestedAttrParameter<"::mlir::DenseF64ArrayAttr">:$rates);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Dist_GemmRatesAttr : Dist_Attr<"GemmRates", "gemm_rates"> {
  let summary = "matrix-product throughput of one data type and thread count";
  let description = [{
    FLOP/s of the runtime's matrix products for `dtype` at `threads`
    threads: at square sizes (`sizes`, the geometric mean of M, N and K,
    ascending, with `flops`), and over a grid of shapes when measured: one
    point per entry of `layouts` (0 nn, 1 nt, 2 tn), `m`, `n`, `k` and
    `shape_flops`.

    ```mlir
    #dist.gemm_rates<dtype = "f32", threads = 1, sizes = array<f64: 256.0>,
      flops = array<f64: 1.2e+11>, layouts = array<i32>, m = array<f64>,
      n = array<f64>, k = array<f64>, shape_flops = array<f64>>
    ```
  }];
  let parameters = (ins StringRefParameter<>:$dtype, "int64_t":$threads,
                        Dist_NestedAttrParameter<"::mlir::DenseF64ArrayAttr">:$sizes,
                        Dist_NestedAttrParameter<"::mlir::DenseF64ArrayAttr">:$flops,
                        Dist_NestedAttrParameter<"::mlir::DenseI32ArrayAttr">:$layouts,
                        Dist_NestedAttrParameter<"::mlir::DenseF64ArrayAttr">:$m,
                        Dist_NestedAttrParameter<"::mlir::DenseF64ArrayAttr">:$n,
                        Dist_NestedAttrParameter<"::mlir::DenseF64ArrayAttr">:$k,
                        Dist_NestedAttrParameter<"::mlir::DenseF64ArrayAttr">:$shape_flops);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Dist_CalibrationAttr : Dist_Attr<"Calibration", "calibration"> {
  let summary = "what `dist-opt calibrate` measured on a device type";
  let description = [{
    The calibrated tables of a device: matrix-product throughput per data
    type and thread count, streaming bandwidth, fixed costs (a generated
    kernel, a product call and its floor, a model step, a fork onto the
    thread pool), generated loops per kernel class, the rate of
    transcendental functions, and the runtime's direct convolution per tap
    and tile (see DeviceCalibration in dist/Planner/Cluster.h for what
    each means). Seconds, bytes per second, FLOP/s.
  }];
  let parameters = (ins Dist_NestedAttrArrayParameter<"GemmRatesAttr">:$gemm,
                        Dist_NestedAttrParameter<"ThreadRatesAttr">:$memory_bandwidth,
                        Dist_F64Parameter:$kernel_overhead,
                        Dist_F64Parameter:$gemm_call_overhead,
                        Dist_F64Parameter:$gemm_call_floor,
                        Dist_F64Parameter:$step_overhead,
                        Dist_NestedAttrParameter<"ThreadRatesAttr">:$fork_overhead,
                        Dist_NestedAttrArrayParameter<"LoopRatesAttr">:$loops,
                        Dist_NestedAttrParameter<"ThreadRatesAttr">:$loop_flops,
                        Dist_NestedAttrParameter<"ThreadRatesAttr">:$direct_conv_tap,
                        Dist_NestedAttrParameter<"ThreadRatesAttr">:$direct_conv_narrow_tap,
                        Dist_NestedAttrParameter<"ThreadRatesAttr">:$direct_conv_tile);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Dist_DeviceAttr : Dist_Attr<"Device", "device"> {
  let summary = "one kind of device in a node";
  let description = [{
    `count` identical devices: their kind, model, cores (CPU hardware
    threads, GPU SMs), memory in bytes, memory bandwidth in bytes per
    second, peak FLOP/s per data type, price per device-hour, vector ISA,
    and what calibration measured (optional).

    ```mlir
    #dist.device<kind = gpu, model = "H100", count = 8, cores = 132,
      memory = 8.0e+10, memory_bandwidth = 3.3e+12,
      peak_flops = {f32 = 6.7e+13 : f64}, price_per_hour = 2.0, isa = "">
    ```
  }];
  let parameters = (ins "DeviceKind":$kind, StringRefParameter<>:$model,
                        "int64_t":$count, "int64_t":$cores,
                        Dist_F64Parameter:$memory,
                        Dist_F64Parameter:$memory_bandwidth,
                        "::mlir::DictionaryAttr":$peak_flops,
                        Dist_F64Parameter:$price_per_hour,
                        StringRefParameter<>:$isa,
                        Dist_OptionalNestedAttrParameter<"CalibrationAttr">:$calibration);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Dist_NodeAttr : Dist_Attr<"Node", "node"> {
  let summary = "one kind of node of a cluster";
  let description = [{
    `count` identical nodes named `name`, their devices and the link
    between devices inside one node.

    ```mlir
    #dist.node<name = "n", count = 2, devices = [#dist.device<...>],
      intra = #dist.link<bandwidth = 2.0e+10, latency = 1.0e-06>>
    ```
  }];
  let parameters = (ins StringRefParameter<>:$name, "int64_t":$count,
                        Dist_NestedAttrArrayParameter<"DeviceAttr">:$devices,
                        Dist_NestedAttrParameter<"LinkAttr">:$intra);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Dist_ClusterAttr : Dist_Attr<"Cluster", "cluster"> {
  let summary = "the unified cluster object a module is planned for";
  let description = [{
    The cluster the planner and the cost model work on: its nodes (each with
    devices and an intra-node link) and the link between nodes, with every
    figure typed (`#dist.node`, `#dist.device`, `#dist.link`,
    `#dist.calibration`), so that verifying it checks numbers, not text.
    `dist-attach-cluster` builds it from a cluster file or this machine;
    lib/Transforms/ClusterAttr.cpp converts it to the planner's C++ model.

    ```mlir
    module attributes {dist.cluster = #dist.cluster<name = "pair",
        nodes = [#dist.node<...>],
        inter = #dist.link<bandwidth = 1.25e+09, latency = 5.0e-05>>} {}
    ```

    The dictionary form with a cluster file's keys, as earlier releases
    printed it, is still read:

    ```mlir
    #dist.cluster<{name = "pair", nodes = [{name = "n", devices = [
        {kind = "cpu", count = 2, memory = 1.0e9, memory_bandwidth = 1.0e10,
         peak_flops = {f32 = 1.0e11} } ] } ] }>
    ```
  }];
  let parameters = (ins StringRefParameter<>:$name,
                        Dist_NestedAttrArrayParameter<"NodeAttr">:$nodes,
                        Dist_NestedAttrParameter<"LinkAttr">:$inter);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // DIST_DIALECT_DIST_IR_DISTATTRS_TD
