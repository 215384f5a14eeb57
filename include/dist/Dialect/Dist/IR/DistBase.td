//===- DistBase.td - dist dialect definition ---------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The `dist` dialect: the unified distributed graph. This file holds the
// dialect record and the type constraints shared by every op.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_IR_DISTBASE_TD
#define DIST_DIALECT_DIST_IR_DISTBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::mlir::dist";
  let summary = "The unified distributed graph of dist-opt";
  let description = [{
    Graph-level tensor operations close to ONNX semantics, normalised to the
    newest opset form (attributes that later opsets turned into inputs are
    operands here), plus the attributes that describe how the graph is spread
    over a cluster: device placement, pipeline stages, parameter-server tables
    and expert axes. Sharding reuses upstream `shard.sharding`.

    Model parameters live outside the IR text: `dist.param` declares one and
    `dist.get_param` reads it; the bytes sit in the parameter file named by the
    module attribute `dist.param_file`.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Name of the module attribute holding the parameter file path.
    static constexpr llvm::StringLiteral getParamFileAttrName() {
      return llvm::StringLiteral("dist.param_file");
    }
    /// Name of the argument/result attribute holding the ONNX value name.
    static constexpr llvm::StringLiteral getValueNameAttrName() {
      return llvm::StringLiteral("dist.name");
    }
    /// Name of the argument attribute holding the ONNX names of an input's
    /// dimensions (dim_param; "" where none): dimensions named alike must
    /// have the same size at run time.
    static constexpr llvm::StringLiteral getDimNamesAttrName() {
      return llvm::StringLiteral("dist.dim_names");
    }
    /// Name of the module attribute holding the cluster (`#dist.cluster`).
    static constexpr llvm::StringLiteral getClusterAttrName() {
      return llvm::StringLiteral("dist.cluster");
    }
    /// Name of the module attribute holding the chosen plan
    /// (`#dist.plan`).
    static constexpr llvm::StringLiteral getPlanAttrName() {
      return llvm::StringLiteral("dist.plan");
    }
    /// Name of the module attribute holding the mesh the module is to be
    /// compiled for (`#dist.mesh`), until dist-partition declares it.
    static constexpr llvm::StringLiteral getMeshAttrName() {
      return llvm::StringLiteral("dist.mesh");
    }

    /// Phase tags: a training step's loss, backward and optimizer ops carry
    /// `NameLoc(<tag>, <location of the op they come from>)`; forward ops
    /// carry none. The cost model reads them.
    static constexpr llvm::StringLiteral kPhaseBackward = "dist.bwd";
    static constexpr llvm::StringLiteral kPhaseUpdate = "dist.update";
    /// Wraps `loc` in the tag `phase`.
    static ::mlir::Location tagPhase(::mlir::Location loc,
                                     llvm::StringRef phase);
    /// The phase tag of `loc` (looking through fused locations), or "".
    static llvm::StringRef getPhase(::mlir::Location loc);
    /// The name `loc` gives its ONNX node (for an optimizer update, its
    /// parameter's), behind a phase tag and looking through fused
    /// locations in order; "" when it has none.
    static llvm::StringRef getNodeName(::mlir::Location loc);

  private:
    void registerAttributes();
    void registerTypes();

  public:
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Dist_FloatElement : AnyTypeOf<[F16, BF16, F32, F64]>;
def Dist_IntElement : AnyTypeOf<[I8, I16, I32, I64, UI8, UI16, UI32, UI64]>;
def Dist_NumericElement : AnyTypeOf<[F16, BF16, F32, F64, I8, I16, I32, I64,
                                      UI8, UI16, UI32, UI64]>;
def Dist_AnyElement : AnyTypeOf<[F16, BF16, F32, F64, I1, I8, I16, I32, I64,
                                  UI8, UI16, UI32, UI64]>;

include "dist/Dialect/Dist/IR/DistTypes.td"

def Dist_Tensor : TensorOf<[F16, BF16, F32, F64, I1, I8, I16, I32, I64, UI8,
                            UI16, UI32, UI64, Dist_StringType]>;
def Dist_NumericTensor : TensorOf<[F16, BF16, F32, F64, I8, I16, I32, I64, UI8,
                                   UI16, UI32, UI64]>;
def Dist_SignedNumericTensor : TensorOf<[F16, BF16, F32, F64, I8, I16, I32,
                                         I64]>;
def Dist_FloatTensor : TensorOf<[F16, BF16, F32, F64]>;
def Dist_BoolTensor : TensorOf<[I1]>;
def Dist_IndexTensor : TensorOf<[I32, I64]>;
def Dist_I64Tensor : TensorOf<[I64]>;
def Dist_IntOrBoolTensor : TensorOf<[I1, I8, I16, I32, I64, UI8, UI16, UI32,
                                     UI64]>;

#endif // DIST_DIALECT_DIST_IR_DISTBASE_TD
