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


def Dist_ClusterAttr : Dist_Attr<"Cluster", "cluster"> {
  let summary = "the unified cluster object a module is planned for";
  let description = [{
    The cluster of nodes, devices and links the planner and the cost model
    work on, as a dictionary with the keys of a cluster file (see
    `include/dist/Analysis/Cluster.h`). dist-opt attaches it to the module as
    `dist.cluster`, built from `--cluster=FILE` or detected from the local
    machine. The verifier checks it the way a cluster file is checked.

    ```mlir
    module attributes {dist.cluster = #dist.cluster<{name = "pair",
        nodes = [{name = "n", devices = [
          {kind = "cpu", count = 2, memory = 1.0e9,
           memory_bandwidth = 1.0e10, peak_flops = {f32 = 1.0e11} }
        ] }
      ] }>} {}
    ```
  }];
  let parameters = (ins "::mlir::DictionaryAttr":$spec);
  let assemblyFormat = "`<` $spec `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The cluster as the C++ model; fails only if the attribute was built
    /// without verification.
    std::optional<::mlir::dist::ClusterSpec> getCluster() const;
    /// Builds the attribute from the C++ model.
    static ClusterAttr get(::mlir::MLIRContext *ctx,
                           const ::mlir::dist::ClusterSpec &cluster);
  }];
}

#endif // DIST_DIALECT_DIST_IR_DISTATTRS_TD
