//===- DistOps.td - dist dialect graph ops -----------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Graph-level tensor ops of the dist dialect. Semantics follow ONNX at the
// newest opset: where a later opset turned an attribute into an input (axes,
// pads, split sizes, clip bounds, ...), the op takes an operand and the
// importer materialises older attributes as `dist.constant`. Every op infers
// its result types; the declared types must be compatible with the inferred
// ones (a dynamic dimension is compatible with any size), so `dist-infer-shapes`
// can refine types in place.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_IR_DISTOPS_TD
#define DIST_DIALECT_DIST_IR_DISTOPS_TD

include "dist/Dialect/Dist/IR/DistBase.td"
include "dist/Dialect/Dist/IR/DistAttrs.td"
include "dist/Dialect/Dist/IR/DistInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Result type inference through the op adaptor, with dist's own notion of
/// compatibility (declared types may be less or more static than inferred).
def Dist_InferType : TraitList<[
  DeclareOpInterfaceMethods<InferTypeOpInterface>,
  NativeOpTrait<"InferTypeOpAdaptor", [], [{
    static ::llvm::LogicalResult inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes);
    static bool isCompatibleReturnTypes(::mlir::TypeRange l, ::mlir::TypeRange r);
  }], [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, ::mlir::ValueRange operands,
        ::mlir::DictionaryAttr attributes, ::mlir::OpaqueProperties properties,
        ::mlir::RegionRange regions,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
      $cppClass::Adaptor adaptor(operands, attributes, properties, regions);
      return $cppClass::inferReturnTypes(context, location, adaptor,
                                         inferredReturnTypes);
    }
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange l,
                                            ::mlir::TypeRange r) {
      return ::mlir::dist::areCompatibleInferredTypes(l, r);
    }
  }]>
]>;

/// Base class of dist ops.
class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

/// Base class of graph ops: inferred types, cost and gradient interfaces, and
/// the uniform `operands attr-dict : functional-type` syntax.
class Dist_GraphOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits, [Dist_InferType,
        DeclareOpInterfaceMethods<Dist_CostOpInterface>,
        DeclareOpInterfaceMethods<Dist_GradientOpInterface>])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

def Dist_ParamOp : Dist_Op<"param", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "declares a model parameter stored in the parameter file";
  let description = [{
    Declares a named parameter (an ONNX initializer) whose bytes live in the
    parameter file of the module (`dist.param_file`), not in the IR. The
    `trainable` unit attribute marks parameters the training pipeline updates;
    `state` marks optimizer state a training step adds (momentum buffers,
    Adam moments), which is not in the parameter file and starts as zeros.

    ```mlir
    module attributes {dist.param_file = "mlp.params"} {
      dist.param @fc1.weight {trainable} : tensor<128x784xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<AnyRankedTensor>:$type,
                       UnitAttr:$trainable, UnitAttr:$state);
  let assemblyFormat = "$sym_name attr-dict `:` $type";
  let hasVerifier = 1;
}

def Dist_GetParamOp : Dist_Op<"get_param", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a model parameter";
  let description = [{
    Yields the current value of the parameter declared by `dist.param`.

    ```mlir
    %w = dist.get_param @fc1.weight : tensor<128x784xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Dist_SetParamOp : Dist_Op<"set_param", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemWrite]>]> {
  let summary = "writes a new value of a model parameter";
  let description = [{
    Replaces the value of the parameter declared by `dist.param` once the
    function returns: `dist.get_param` in the same function keeps yielding
    the value the parameter had on entry. A training step writes updated
    weights, optimizer state and running statistics this way; at most one
    `dist.set_param` per parameter per function.

    ```mlir
    dist.set_param @fc1.weight, %w2 : tensor<128x784xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name, AnyRankedTensor:$value);
  let assemblyFormat = "$name `,` $value attr-dict `:` type($value)";
}

def Dist_SendOp : Dist_Op<"send", [MemoryEffects<[MemWrite]>]> {
  let summary = "sends a tensor to another pipeline stage";
  let description = [{
    Inside a pipeline stage's function (`dist-split-stages`): hands `value`
    to stage `peer` for the micro-batch the function runs on. `tag` names
    the transfer: the stage `peer` receives it with the `dist.recv` of the
    same tag, in the function of its schedule action that needs it (an
    activation in a forward, a gradient in a backward). The send does not
    wait for the receiver.

    ```mlir
    dist.send %h to 1 tag 0 : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$value, I64Attr:$peer,
                       I64Attr:$tag);
  let assemblyFormat =
      "$value `to` $peer `tag` $tag attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Dist_RecvOp : Dist_Op<"recv", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "receives a tensor from another pipeline stage";
  let description = [{
    Inside a pipeline stage's function: the tensor stage `peer` sent with
    the `dist.send` of the same `tag`, for the micro-batch the function runs
    on. Waits until it is there.

    ```mlir
    %h = dist.recv from 0 tag 0 : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$tag);
  let results = (outs AnyStaticShapeTensor:$output);
  let assemblyFormat = "`from` $peer `tag` $tag attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Dist_ConstantOp : Dist_Op<"constant", [ConstantLike, Pure,
    Dist_InferType]> {
  let summary = "constant tensor";
  let description = [{
    A constant tensor (ONNX `Constant` with any of its value attributes, small
    initializers and values the importer folded).

    ```mlir
    %c = dist.constant dense<[1, 784]> : tensor<2xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Dist_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Dist_ConstantOfShapeOp : Dist_GraphOp<"constant_of_shape", [Pure]> {
  let summary = "tensor of a given shape filled with one value";
  let description = [{
    ONNX `ConstantOfShape`: the result has the shape given by the 1-D `input`
    and every element equal to the one-element `value` (default 0.0f).

    ```mlir
    %z = dist.constant_of_shape %s {value = dense<0> : tensor<1xi64>}
        : (tensor<2xi64>) -> tensor<4x5xi64>
    ```
  }];
  let arguments = (ins Dist_I64Tensor:$input, OptionalAttr<ElementsAttr>:$value);
  let results = (outs Dist_Tensor:$output);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

class Dist_UnaryOp<string mnemonic, Type operandType, string onnxName,
                   dag attrs = (ins), list<Trait> traits = []>
    : Dist_GraphOp<mnemonic, !listconcat([Pure, SameOperandsAndResultElementType],
                                         traits)> {
  let summary = "elementwise " # onnxName;
  let description = [{
    ONNX `}] # onnxName # [{` applied to every element; the result has the
    operand's shape and element type.

    ```mlir
    %y = dist.}] # mnemonic # [{ %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
    ```
  }];
  let arguments = !con((ins operandType:$input), attrs);
  let results = (outs operandType:$output);
}

def Dist_AbsOp : Dist_UnaryOp<"abs", Dist_NumericTensor, "Abs"> {
  let hasFolder = 1;
}
def Dist_NegOp : Dist_UnaryOp<"neg", Dist_SignedNumericTensor, "Neg"> {
  let hasFolder = 1;
}
def Dist_ExpOp : Dist_UnaryOp<"exp", Dist_FloatTensor, "Exp">;
def Dist_LogOp : Dist_UnaryOp<"log", Dist_FloatTensor, "Log">;
def Dist_SqrtOp : Dist_UnaryOp<"sqrt", Dist_FloatTensor, "Sqrt">;
def Dist_ReciprocalOp : Dist_UnaryOp<"reciprocal", Dist_FloatTensor, "Reciprocal">;
def Dist_FloorOp : Dist_UnaryOp<"floor", Dist_FloatTensor, "Floor">;
def Dist_CeilOp : Dist_UnaryOp<"ceil", Dist_FloatTensor, "Ceil">;
def Dist_RoundOp : Dist_UnaryOp<"round", Dist_FloatTensor, "Round (half to even)">;
def Dist_SignOp : Dist_UnaryOp<"sign", Dist_NumericTensor, "Sign">;
def Dist_SinOp : Dist_UnaryOp<"sin", Dist_FloatTensor, "Sin">;
def Dist_CosOp : Dist_UnaryOp<"cos", Dist_FloatTensor, "Cos">;
def Dist_TanOp : Dist_UnaryOp<"tan", Dist_FloatTensor, "Tan">;
def Dist_AsinOp : Dist_UnaryOp<"asin", Dist_FloatTensor, "Asin">;
def Dist_AcosOp : Dist_UnaryOp<"acos", Dist_FloatTensor, "Acos">;
def Dist_AtanOp : Dist_UnaryOp<"atan", Dist_FloatTensor, "Atan">;
def Dist_SinhOp : Dist_UnaryOp<"sinh", Dist_FloatTensor, "Sinh">;
def Dist_CoshOp : Dist_UnaryOp<"cosh", Dist_FloatTensor, "Cosh">;
def Dist_AsinhOp : Dist_UnaryOp<"asinh", Dist_FloatTensor, "Asinh">;
def Dist_AcoshOp : Dist_UnaryOp<"acosh", Dist_FloatTensor, "Acosh">;
def Dist_AtanhOp : Dist_UnaryOp<"atanh", Dist_FloatTensor, "Atanh">;
def Dist_TanhOp : Dist_UnaryOp<"tanh", Dist_FloatTensor, "Tanh">;
def Dist_SigmoidOp : Dist_UnaryOp<"sigmoid", Dist_FloatTensor, "Sigmoid">;
def Dist_ReluOp : Dist_UnaryOp<"relu", Dist_SignedNumericTensor, "Relu">;
def Dist_LeakyReluOp : Dist_UnaryOp<"leaky_relu", Dist_FloatTensor, "LeakyRelu",
    (ins DefaultValuedAttr<F32Attr, "0.01f">:$alpha)>;
def Dist_EluOp : Dist_UnaryOp<"elu", Dist_FloatTensor, "Elu",
    (ins DefaultValuedAttr<F32Attr, "1.0f">:$alpha)>;
def Dist_SeluOp : Dist_UnaryOp<"selu", Dist_FloatTensor, "Selu",
    (ins DefaultValuedAttr<F32Attr, "1.67326319217681884765625f">:$alpha,
         DefaultValuedAttr<F32Attr, "1.05070102214813232421875f">:$gamma)>;
def Dist_CeluOp : Dist_UnaryOp<"celu", Dist_FloatTensor, "Celu",
    (ins DefaultValuedAttr<F32Attr, "1.0f">:$alpha)>;
def Dist_SoftplusOp : Dist_UnaryOp<"softplus", Dist_FloatTensor, "Softplus">;
def Dist_SoftsignOp : Dist_UnaryOp<"softsign", Dist_FloatTensor, "Softsign">;
def Dist_HardSigmoidOp : Dist_UnaryOp<"hard_sigmoid", Dist_FloatTensor, "HardSigmoid",
    (ins DefaultValuedAttr<F32Attr, "0.2f">:$alpha,
         DefaultValuedAttr<F32Attr, "0.5f">:$beta)>;
def Dist_HardSwishOp : Dist_UnaryOp<"hard_swish", Dist_FloatTensor, "HardSwish">;
def Dist_ErfOp : Dist_UnaryOp<"erf", Dist_NumericTensor, "Erf">;
def Dist_GeluOp : Dist_UnaryOp<"gelu", Dist_FloatTensor, "Gelu",
    (ins DefaultValuedAttr<StrAttr, "\"none\"">:$approximate)>;
def Dist_NotOp : Dist_UnaryOp<"not", Dist_BoolTensor, "Not">;
def Dist_IdentityOp : Dist_GraphOp<"identity", [Pure]> {
  let summary = "identity";
  let description = [{
    ONNX `Identity`: the result is the operand (a tensor, a sequence or an
    optional value). Folds away.

    ```mlir
    %y = dist.identity %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Dist_Tensor, Dist_SequenceType,
                                  Dist_OptionalType]>:$input);
  let results = (outs AnyTypeOf<[Dist_Tensor, Dist_SequenceType,
                                 Dist_OptionalType]>:$output);
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Mesh (tensor parallelism)
//===----------------------------------------------------------------------===//

def Dist_MeshCopyOp : Dist_GraphOp<"mesh_copy", [Pure]> {
  let summary = "identity whose gradient is summed over mesh axes";
  let description = [{
    The conjugate of `shard.all_reduce` in Megatron-style tensor parallelism
    (Megatron-LM's "copy to the tensor-parallel region"): the result is the
    operand on every rank, and the gradient of the operand is the gradient
    of the result summed over the `grid_axes` of `grid`. dist-partition puts
    it where a replicated activation enters a sharded region, whose ranks
    each contribute a part of that activation's gradient. Codegen lowers it
    to nothing; it exists for the training step builder.

    ```mlir
    %y = dist.mesh_copy %x {grid = @mesh, grid_axes = array<i16: 1>}
        : (tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$input, FlatSymbolRefAttr:$grid,
                       DenseI16ArrayAttr:$grid_axes);
  let results = (outs Dist_FloatTensor:$output);
}

def Dist_MeshCoordOp : Dist_GraphOp<"mesh_coord", [Pure]> {
  let summary = "this rank's coordinate along one mesh axis";
  let description = [{
    A rank-0 int64 tensor holding the coordinate of the running process
    along axis `grid_axis` of `grid` (0 when the program runs alone). A
    vocabulary-parallel embedding uses it to find the rows it holds.

    ```mlir
    %r = dist.mesh_coord {grid = @mesh, grid_axis = 1 : i64}
        : () -> tensor<i64>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$grid, I64Attr:$grid_axis);
  let results = (outs 0DTensorOf<[I64]>:$output);
}

def Dist_ClipOp : Dist_GraphOp<"clip", [Pure, AttrSizedOperandSegments]> {
  let summary = "elementwise clamp to [min, max]";
  let description = [{
    ONNX `Clip` (opset 11 form): optional scalar bounds `min` and `max`; a
    missing bound does not clamp.

    ```mlir
    %y = dist.clip %x min %lo max %hi
        : (tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Dist_NumericTensor:$input,
                       Optional<Dist_NumericTensor>:$min,
                       Optional<Dist_NumericTensor>:$max);
  let results = (outs Dist_NumericTensor:$output);
  let assemblyFormat = [{
    $input (`min` $min^)? (`max` $max^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Dist_CastOp : Dist_GraphOp<"cast", [Pure]> {
  let summary = "element type conversion";
  let description = [{
    ONNX `Cast` (and `CastLike`, whose target comes from a tensor): converts
    every element to `to`. Float to integer truncates toward zero; anything
    to bool is `x != 0`.

    ```mlir
    %y = dist.cast %x {to = i64} : (tensor<3xf32>) -> tensor<3xi64>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, TypeAttr:$to);
  let results = (outs Dist_Tensor:$output);
  let hasFolder = 1;
}

def Dist_CastLikeOp : Dist_GraphOp<"cast_like", [Pure]> {
  let summary = "element type conversion to the type of another tensor";
  let description = [{
    ONNX `CastLike`: converts `input` to the element type of `target`.
    Canonicalises to `dist.cast`.

    ```mlir
    %y = dist.cast_like %x, %t : (tensor<3xf32>, tensor<1xf16>) -> tensor<3xf16>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, Dist_Tensor:$target);
  let results = (outs Dist_Tensor:$output);
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary and variadic ops (multidirectional broadcasting)
//===----------------------------------------------------------------------===//

class Dist_BinaryOp<string mnemonic, Type operandType, Type resultType,
                    string onnxName, dag attrs = (ins), list<Trait> traits = []>
    : Dist_GraphOp<mnemonic, !listconcat([Pure], traits)> {
  let summary = "elementwise " # onnxName # " with broadcasting";
  let description = [{
    ONNX `}] # onnxName # [{` with numpy-style multidirectional broadcasting:
    the result shape is the broadcast of the operand shapes.

    ```mlir
    %z = dist.}] # mnemonic # [{ %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
    ```
  }];
  let arguments = !con((ins operandType:$lhs, operandType:$rhs), attrs);
  let results = (outs resultType:$output);
  let hasFolder = 1;
}

def Dist_AddOp : Dist_BinaryOp<"add", Dist_NumericTensor, Dist_NumericTensor, "Add",
    (ins), [SameOperandsAndResultElementType, Commutative]>;
def Dist_SubOp : Dist_BinaryOp<"sub", Dist_NumericTensor, Dist_NumericTensor, "Sub",
    (ins), [SameOperandsAndResultElementType]>;
def Dist_MulOp : Dist_BinaryOp<"mul", Dist_NumericTensor, Dist_NumericTensor, "Mul",
    (ins), [SameOperandsAndResultElementType, Commutative]>;
def Dist_DivOp : Dist_BinaryOp<"div", Dist_NumericTensor, Dist_NumericTensor, "Div",
    (ins), [SameOperandsAndResultElementType]>;
def Dist_PowOp : Dist_BinaryOp<"pow", Dist_NumericTensor, Dist_NumericTensor,
    "Pow (the result has the base's element type)">;
def Dist_ModOp : Dist_BinaryOp<"mod", Dist_NumericTensor, Dist_NumericTensor, "Mod",
    (ins DefaultValuedAttr<I64Attr, "0">:$fmod), [SameOperandsAndResultElementType]>;
def Dist_EqualOp : Dist_BinaryOp<"equal", Dist_Tensor, Dist_BoolTensor, "Equal",
    (ins), [SameOperandsElementType, Commutative]>;
def Dist_LessOp : Dist_BinaryOp<"less", Dist_NumericTensor, Dist_BoolTensor, "Less",
    (ins), [SameOperandsElementType]>;
def Dist_GreaterOp : Dist_BinaryOp<"greater", Dist_NumericTensor, Dist_BoolTensor,
    "Greater", (ins), [SameOperandsElementType]>;
def Dist_LessOrEqualOp : Dist_BinaryOp<"less_or_equal", Dist_NumericTensor,
    Dist_BoolTensor, "LessOrEqual", (ins), [SameOperandsElementType]>;
def Dist_GreaterOrEqualOp : Dist_BinaryOp<"greater_or_equal", Dist_NumericTensor,
    Dist_BoolTensor, "GreaterOrEqual", (ins), [SameOperandsElementType]>;
def Dist_AndOp : Dist_BinaryOp<"and", Dist_BoolTensor, Dist_BoolTensor, "And",
    (ins), [Commutative]>;
def Dist_OrOp : Dist_BinaryOp<"or", Dist_BoolTensor, Dist_BoolTensor, "Or",
    (ins), [Commutative]>;
def Dist_XorOp : Dist_BinaryOp<"xor", Dist_BoolTensor, Dist_BoolTensor, "Xor",
    (ins), [Commutative]>;

class Dist_VariadicOp<string mnemonic, string onnxName>
    : Dist_GraphOp<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = "elementwise " # onnxName # " of one or more tensors";
  let description = [{
    ONNX `}] # onnxName # [{`: elementwise over any number of operands with
    multidirectional broadcasting.

    ```mlir
    %z = dist.}] # mnemonic # [{ %a, %b, %c
        : (tensor<3xf32>, tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
    ```
  }];
  let arguments = (ins Variadic<Dist_NumericTensor>:$inputs);
  let results = (outs Dist_NumericTensor:$output);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Dist_MaxOp : Dist_VariadicOp<"max", "Max">;
def Dist_MinOp : Dist_VariadicOp<"min", "Min">;
def Dist_SumOp : Dist_VariadicOp<"sum", "Sum">;
def Dist_MeanOp : Dist_VariadicOp<"mean", "Mean">;

def Dist_WhereOp : Dist_GraphOp<"where", [Pure]> {
  let summary = "elementwise select with broadcasting";
  let description = [{
    ONNX `Where`: `condition ? x : y` with three-way broadcasting.

    ```mlir
    %r = dist.where %c, %x, %y
        : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Dist_BoolTensor:$condition, Dist_Tensor:$x, Dist_Tensor:$y);
  let results = (outs Dist_Tensor:$output);
  let hasFolder = 1;
}

def Dist_PReluOp : Dist_GraphOp<"prelu", [Pure, SameOperandsAndResultElementType]> {
  let summary = "parametric ReLU";
  let description = [{
    ONNX `PRelu`: `x < 0 ? slope * x : x`, `slope` broadcast to `x`
    (unidirectional broadcasting).

    ```mlir
    %y = dist.prelu %x, %s : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Dist_SignedNumericTensor:$input, Dist_SignedNumericTensor:$slope);
  let results = (outs Dist_SignedNumericTensor:$output);
}

//===----------------------------------------------------------------------===//
// Linear algebra, convolution and pooling
//===----------------------------------------------------------------------===//

def Dist_MatMulOp : Dist_GraphOp<"matmul", [Pure, SameOperandsAndResultElementType]> {
  let summary = "matrix product with numpy semantics";
  let description = [{
    ONNX `MatMul`: 1-D operands are promoted to matrices and the promoted
    dimension removed from the result; leading (batch) dimensions broadcast.

    ```mlir
    %y = dist.matmul %x, %w : (tensor<?x784xf32>, tensor<784x128xf32>) -> tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Dist_NumericTensor:$lhs, Dist_NumericTensor:$rhs);
  let results = (outs Dist_NumericTensor:$output);
}

def Dist_EinsumOp : Dist_GraphOp<"einsum", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Einstein summation";
  let description = [{
    ONNX `Einsum`: the product of the operands over every combination of
    subscripts, summed over those not in the output (numpy's subscripts,
    with `...` and the implicit output; a subscript repeated in one operand
    takes its diagonal). Size-1 dimensions under `...` broadcast.

    ```mlir
    %y = dist.einsum %a, %b {equation = "bij,bjk->bik"}
        : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    ```
  }];
  let arguments = (ins Variadic<Dist_NumericTensor>:$inputs, StrAttr:$equation);
  let results = (outs Dist_NumericTensor:$output);
}

def Dist_GemmOp : Dist_GraphOp<"gemm", [Pure]> {
  let summary = "general matrix multiply";
  let description = [{
    ONNX `Gemm`: `alpha * op(A) * op(B) + beta * C` where `op` transposes when
    `trans_a`/`trans_b` is set and `C` broadcasts to the M x N result.

    ```mlir
    %y = dist.gemm %a, %b bias %c {trans_b = 1 : i64}
        : (tensor<?x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Dist_NumericTensor:$a, Dist_NumericTensor:$b,
                       Optional<Dist_NumericTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0f">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0f">:$beta,
                       DefaultValuedAttr<I64Attr, "0">:$trans_a,
                       DefaultValuedAttr<I64Attr, "0">:$trans_b);
  let results = (outs Dist_NumericTensor:$output);
  let assemblyFormat = [{
    $a `,` $b (`bias` $c^)? attr-dict `:` functional-type(operands, results)
  }];
}

class Dist_ConvLikeOp<string mnemonic, dag extraAttrs>
    : Dist_GraphOp<mnemonic, [Pure]> {
  let arguments = !con((ins Dist_FloatTensor:$input, Dist_FloatTensor:$weight,
                            Optional<Dist_FloatTensor>:$bias,
                            DefaultValuedAttr<StrAttr, "\"NOTSET\"">:$auto_pad,
                            OptionalAttr<DenseI64ArrayAttr>:$dilations,
                            DefaultValuedAttr<I64Attr, "1">:$group,
                            OptionalAttr<DenseI64ArrayAttr>:$kernel_shape,
                            OptionalAttr<DenseI64ArrayAttr>:$pads,
                            OptionalAttr<DenseI64ArrayAttr>:$strides),
                       extraAttrs);
  let results = (outs Dist_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Dist_ConvOp : Dist_ConvLikeOp<"conv", (ins)> {
  let summary = "N-d convolution";
  let description = [{
    ONNX `Conv` over `N x C x D1 x ... x Dn` input with `M x C/group x k1 x
    ... x kn` weight; padding explicit (`pads`) or automatic (`auto_pad`).

    ```mlir
    %y = dist.conv %x, %w bias %b {pads = array<i64: 1, 1, 1, 1>}
        : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x32x32xf32>
    ```
  }];
}

def Dist_ConvTransposeOp : Dist_ConvLikeOp<"conv_transpose",
    (ins OptionalAttr<DenseI64ArrayAttr>:$output_padding,
         OptionalAttr<DenseI64ArrayAttr>:$output_shape)> {
  let summary = "N-d transposed convolution";
  let description = [{
    ONNX `ConvTranspose` with weight `C x M/group x k1 x ... x kn`; the output
    size comes from `output_shape` when given, else from strides, pads,
    dilations and `output_padding`.

    ```mlir
    %y = dist.conv_transpose %x, %w {strides = array<i64: 2, 2>}
        : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x7x7xf32>
    ```
  }];
}

def Dist_ConvWeightGradOp : Dist_GraphOp<"conv_weight_grad", [Pure]> {
  let summary = "gradient of a convolution's weight";
  let description = [{
    The weight gradient of a group-1 `dist.conv` with input `x`
    (`N x C x D1 x ... x Dn`) and output gradient `dy` (`N x F x O1 x ... x
    On`): `dw[f, c, k...] = sum over n, o... of dy[n, f, o...] *
    x[n, c, o * stride + k * dilation - pad_begin]`, zero outside `x`. The
    result is `F x C x kernel_shape...`. Autodiff emits it for 2-D f32/f64
    convolutions (per group for a grouped one; for a transposed
    convolution with the roles of x and dy swapped); codegen runs it as
    the forward convolution's im2col and one product per sample summed
    into the result.

    ```mlir
    %dw = dist.conv_weight_grad %x, %dy {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>}
        : (tensor<8x16x16x16xf32>, tensor<8x32x16x16xf32>) -> tensor<32x16x3x3xf32>
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$input, Dist_FloatTensor:$output_grad,
                       DenseI64ArrayAttr:$kernel_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs Dist_FloatTensor:$output);
}

def Dist_MaxPoolOp : Dist_GraphOp<"max_pool", [Pure]> {
  let summary = "N-d max pooling";
  let description = [{
    ONNX `MaxPool`. The second result holds the flattened indices of the
    selected elements (row-major unless `storage_order` is 1).

    ```mlir
    %y, %i = dist.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
        : (tensor<1x3x32x32xf32>) -> (tensor<1x3x16x16xf32>, tensor<1x3x16x16xi64>)
    ```
  }];
  let arguments = (ins Dist_NumericTensor:$input,
                       DefaultValuedAttr<StrAttr, "\"NOTSET\"">:$auto_pad,
                       DefaultValuedAttr<I64Attr, "0">:$ceil_mode,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       DenseI64ArrayAttr:$kernel_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       DefaultValuedAttr<I64Attr, "0">:$storage_order,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs Dist_NumericTensor:$output, Dist_I64Tensor:$indices);
}

def Dist_AveragePoolOp : Dist_GraphOp<"average_pool", [Pure]> {
  let summary = "N-d average pooling";
  let description = [{
    ONNX `AveragePool`; padded elements count in the divisor only when
    `count_include_pad` is 1.

    ```mlir
    %y = dist.average_pool %x {kernel_shape = array<i64: 3, 3>}
        : (tensor<1x3x32x32xf32>) -> tensor<1x3x30x30xf32>
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$input,
                       DefaultValuedAttr<StrAttr, "\"NOTSET\"">:$auto_pad,
                       DefaultValuedAttr<I64Attr, "0">:$ceil_mode,
                       DefaultValuedAttr<I64Attr, "0">:$count_include_pad,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       DenseI64ArrayAttr:$kernel_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs Dist_FloatTensor:$output);
}

class Dist_GlobalPoolOp<string mnemonic, string onnxName>
    : Dist_GraphOp<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = "global " # onnxName;
  let description = [{
    ONNX `Global}] # onnxName # [{`: pools every spatial dimension to size 1.

    ```mlir
    %y = dist.}] # mnemonic # [{ %x : (tensor<?x64x7x7xf32>) -> tensor<?x64x1x1xf32>
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$input);
  let results = (outs Dist_FloatTensor:$output);
}
def Dist_GlobalAveragePoolOp : Dist_GlobalPoolOp<"global_average_pool", "AveragePool">;
def Dist_GlobalMaxPoolOp : Dist_GlobalPoolOp<"global_max_pool", "MaxPool">;

//===----------------------------------------------------------------------===//
// Normalisation, dropout, softmax
//===----------------------------------------------------------------------===//

def Dist_BatchNormOp : Dist_GraphOp<"batch_norm", [Pure]> {
  let summary = "batch normalisation";
  let description = [{
    ONNX `BatchNormalization` (opset 15 form). In inference mode the extra
    results equal `input_mean` and `input_var`; with `training_mode` they are
    the updated running statistics.

    ```mlir
    %y, %rm, %rv = dist.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32}
        : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>,
           tensor<16xf32>) -> (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$input, Dist_FloatTensor:$scale,
                       Dist_FloatTensor:$b, Dist_FloatTensor:$input_mean,
                       Dist_FloatTensor:$input_var,
                       DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.9f">:$momentum,
                       DefaultValuedAttr<I64Attr, "0">:$training_mode);
  let results = (outs Dist_FloatTensor:$output, Dist_FloatTensor:$running_mean,
                      Dist_FloatTensor:$running_var);
}

def Dist_LayerNormOp : Dist_GraphOp<"layer_norm", [Pure]> {
  let summary = "layer normalisation";
  let description = [{
    ONNX `LayerNormalization`: normalises over dimensions `axis..rank-1`.
    The extra results are the mean and inverse standard deviation, with the
    normalised dimensions kept as size 1 (element type `stash_type`).

    ```mlir
    %y, %mean, %inv = dist.layer_norm %x, %g bias %b {axis = -1 : i64}
        : (tensor<?x8x64xf32>, tensor<64xf32>, tensor<64xf32>)
        -> (tensor<?x8x64xf32>, tensor<?x8x1xf32>, tensor<?x8x1xf32>)
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$input, Dist_FloatTensor:$scale,
                       Optional<Dist_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon,
                       DefaultValuedAttr<I64Attr, "1">:$stash_type);
  let results = (outs Dist_FloatTensor:$output, Dist_FloatTensor:$mean,
                      Dist_FloatTensor:$inv_std_dev);
  let assemblyFormat = [{
    $input `,` $scale (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Dist_InstanceNormOp : Dist_GraphOp<"instance_norm", [Pure]> {
  let summary = "instance normalisation";
  let description = [{
    ONNX `InstanceNormalization`: per sample and channel over the spatial
    dimensions, then `scale` and `b` per channel.

    ```mlir
    %y = dist.instance_norm %x, %s, %b
        : (tensor<2x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x8x8xf32>
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$input, Dist_FloatTensor:$scale,
                       Dist_FloatTensor:$b,
                       DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon);
  let results = (outs Dist_FloatTensor:$output);
}

def Dist_DropoutOp : Dist_GraphOp<"dropout", [AttrSizedOperandSegments]> {
  let summary = "dropout";
  let description = [{
    ONNX `Dropout` (opset 13 form): with `training_mode` true, zeroes elements
    with probability `ratio` (default 0.5) and scales the rest by
    `1/(1-ratio)`; otherwise the identity with an all-true mask.

    ```mlir
    %y, %mask = dist.dropout %x : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$input,
                       Optional<Dist_FloatTensor>:$ratio,
                       Optional<Dist_BoolTensor>:$training_mode,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs Dist_FloatTensor:$output, Dist_BoolTensor:$mask);
  let assemblyFormat = [{
    $input (`ratio` $ratio^)? (`training` $training_mode^)? attr-dict `:` functional-type(operands, results)
  }];
}

class Dist_SoftmaxLikeOp<string mnemonic, string onnxName>
    : Dist_GraphOp<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = onnxName # " along one axis";
  let description = [{
    ONNX `}] # onnxName # [{` (opset 13 semantics: along the single axis
    `axis`). The importer rewrites older opsets' flatten-to-2-D semantics.

    ```mlir
    %y = dist.}] # mnemonic # [{ %x {axis = -1 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Dist_FloatTensor:$output);
}
def Dist_SoftmaxOp : Dist_SoftmaxLikeOp<"softmax", "Softmax">;
def Dist_LogSoftmaxOp : Dist_SoftmaxLikeOp<"log_softmax", "LogSoftmax">;

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Dist_ReduceOp<string mnemonic, string onnxName, Type tensorType>
    : Dist_GraphOp<mnemonic, [Pure]> {
  let summary = onnxName # " reduction";
  let description = [{
    ONNX `}] # onnxName # [{` (opset 18 form): reduces over the axes in the
    optional 1-D `axes` operand; without axes (or with empty axes) it reduces
    every dimension unless `noop_with_empty_axes` is 1.

    ```mlir
    %axes = dist.constant dense<[1]> : tensor<1xi64>
    %y = dist.}] # mnemonic # [{ %x axes %axes {keepdims = 0 : i64}
        : (tensor<?x10xf32>, tensor<1xi64>) -> tensor<?xf32>
    ```
  }];
  let arguments = (ins tensorType:$input, Optional<Dist_I64Tensor>:$axes,
                       DefaultValuedAttr<I64Attr, "1">:$keepdims,
                       DefaultValuedAttr<I64Attr, "0">:$noop_with_empty_axes);
  let results = (outs tensorType:$output);
  let assemblyFormat = [{
    $input (`axes` $axes^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Dist_ReduceSumOp : Dist_ReduceOp<"reduce_sum", "ReduceSum", Dist_NumericTensor>;
def Dist_ReduceMeanOp : Dist_ReduceOp<"reduce_mean", "ReduceMean", Dist_NumericTensor>;
def Dist_ReduceMaxOp : Dist_ReduceOp<"reduce_max", "ReduceMax", Dist_Tensor>;
def Dist_ReduceMinOp : Dist_ReduceOp<"reduce_min", "ReduceMin", Dist_Tensor>;
def Dist_ReduceProdOp : Dist_ReduceOp<"reduce_prod", "ReduceProd", Dist_NumericTensor>;
def Dist_ReduceSumSquareOp : Dist_ReduceOp<"reduce_sum_square", "ReduceSumSquare",
                                           Dist_NumericTensor>;
def Dist_ReduceL2Op : Dist_ReduceOp<"reduce_l2", "ReduceL2", Dist_NumericTensor>;
def Dist_ReduceLogSumExpOp : Dist_ReduceOp<"reduce_log_sum_exp", "ReduceLogSumExp",
                                           Dist_NumericTensor>;

class Dist_ArgReduceOp<string mnemonic, string onnxName>
    : Dist_GraphOp<mnemonic, [Pure]> {
  let summary = onnxName # " index along one axis";
  let description = [{
    ONNX `}] # onnxName # [{`: the int64 index of the extreme element along
    `axis` (the last occurrence when `select_last_index` is 1).

    ```mlir
    %i = dist.}] # mnemonic # [{ %x {axis = 1 : i64, keepdims = 0 : i64}
        : (tensor<?x10xf32>) -> tensor<?xi64>
    ```
  }];
  let arguments = (ins Dist_NumericTensor:$input,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedAttr<I64Attr, "1">:$keepdims,
                       DefaultValuedAttr<I64Attr, "0">:$select_last_index);
  let results = (outs Dist_I64Tensor:$output);
}
def Dist_ArgMaxOp : Dist_ArgReduceOp<"arg_max", "ArgMax">;
def Dist_ArgMinOp : Dist_ArgReduceOp<"arg_min", "ArgMin">;

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def Dist_ReshapeOp : Dist_GraphOp<"reshape", [Pure]> {
  let summary = "reshape to a shape given by a tensor";
  let description = [{
    ONNX `Reshape`: one `-1` entry is inferred; a `0` copies the input's
    dimension unless `allowzero` is 1.

    ```mlir
    %y = dist.reshape %x, %s : (tensor<?x4x4xf32>, tensor<2xi64>) -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, Dist_I64Tensor:$shape,
                       DefaultValuedAttr<I64Attr, "0">:$allowzero);
  let results = (outs Dist_Tensor:$output);
  let hasFolder = 1;
}

def Dist_FlattenOp : Dist_GraphOp<"flatten", [Pure, SameOperandsAndResultElementType]> {
  let summary = "flatten to a matrix";
  let description = [{
    ONNX `Flatten`: dimensions before `axis` form the rows, the rest the
    columns.

    ```mlir
    %y = dist.flatten %x {axis = 1 : i64} : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs Dist_Tensor:$output);
  let hasFolder = 1;
}

def Dist_TransposeOp : Dist_GraphOp<"transpose", [Pure, SameOperandsAndResultElementType]> {
  let summary = "permute dimensions";
  let description = [{
    ONNX `Transpose`; without `perm` the dimensions are reversed.

    ```mlir
    %y = dist.transpose %x {perm = array<i64: 0, 2, 1>}
        : (tensor<?x4x8xf32>) -> tensor<?x8x4xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, OptionalAttr<DenseI64ArrayAttr>:$perm);
  let results = (outs Dist_Tensor:$output);
  let hasFolder = 1;
}

def Dist_SqueezeOp : Dist_GraphOp<"squeeze", [Pure]> {
  let summary = "remove size-1 dimensions";
  let description = [{
    ONNX `Squeeze` (opset 13 form): removes the dimensions listed in `axes`,
    or every size-1 dimension without `axes`.

    ```mlir
    %y = dist.squeeze %x axes %a : (tensor<1x3x1xf32>, tensor<1xi64>) -> tensor<3x1xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, Optional<Dist_I64Tensor>:$axes);
  let results = (outs Dist_Tensor:$output);
  let assemblyFormat = [{
    $input (`axes` $axes^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Dist_UnsqueezeOp : Dist_GraphOp<"unsqueeze", [Pure]> {
  let summary = "insert size-1 dimensions";
  let description = [{
    ONNX `Unsqueeze` (opset 13 form): inserts size-1 dimensions at `axes`
    (positions in the result).

    ```mlir
    %y = dist.unsqueeze %x, %a : (tensor<3xf32>, tensor<1xi64>) -> tensor<1x3xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, Dist_I64Tensor:$axes);
  let results = (outs Dist_Tensor:$output);
  let hasFolder = 1;
}

def Dist_ConcatOp : Dist_GraphOp<"concat", [Pure, SameOperandsAndResultElementType]> {
  let summary = "concatenate along an axis";
  let description = [{
    ONNX `Concat`.

    ```mlir
    %y = dist.concat %a, %b {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
    ```
  }];
  let arguments = (ins Variadic<Dist_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Dist_Tensor:$output);
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Dist_SplitOp : Dist_GraphOp<"split", [Pure]> {
  let summary = "split along an axis";
  let description = [{
    ONNX `Split` (opset 18 form): sizes from the optional `split` operand, or
    `num_outputs` near-equal parts (the last one smaller).

    ```mlir
    %a, %b = dist.split %x {axis = 1 : i64, num_outputs = 2 : i64}
        : (tensor<?x6xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>)
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, Optional<Dist_I64Tensor>:$split,
                       DefaultValuedAttr<I64Attr, "0">:$axis, I64Attr:$num_outputs);
  let results = (outs Variadic<Dist_Tensor>:$outputs);
  let assemblyFormat = [{
    $input (`sizes` $split^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Dist_SliceOp : Dist_GraphOp<"slice", [Pure,
                                          AttrSizedOperandSegments]> {
  let summary = "strided slice";
  let description = [{
    ONNX `Slice` (opset 13 form): `starts`, `ends`, optional `axes` and
    `steps`, all 1-D integer tensors; out-of-range bounds are clamped.

    ```mlir
    %y = dist.slice %x, %s, %e axes %a
        : (tensor<?x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x5xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, Dist_IndexTensor:$starts,
                       Dist_IndexTensor:$ends, Optional<Dist_IndexTensor>:$axes,
                       Optional<Dist_IndexTensor>:$steps);
  let results = (outs Dist_Tensor:$output);
  let assemblyFormat = [{
    $input `,` $starts `,` $ends (`axes` $axes^)? (`steps` $steps^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Dist_GatherOp : Dist_GraphOp<"gather", [Pure]> {
  let summary = "gather slices along an axis";
  let description = [{
    ONNX `Gather`: the result shape is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`; negative indices count from the end. An embedding
    lookup is a gather on axis 0 of a parameter.

    ```mlir
    %e = dist.gather %table, %ids {axis = 0 : i64}
        : (tensor<1000x64xf32>, tensor<?x8xi64>) -> tensor<?x8x64xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$data, Dist_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Dist_Tensor:$output);
  let hasFolder = 1;
}

def Dist_GatherElementsOp : Dist_GraphOp<"gather_elements", [Pure]> {
  let summary = "gather elements along an axis";
  let description = [{
    ONNX `GatherElements`: the result has the shape of `indices`.

    ```mlir
    %y = dist.gather_elements %x, %i {axis = 1 : i64}
        : (tensor<3x3xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$data, Dist_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Dist_Tensor:$output);
}

def Dist_ScatterElementsOp : Dist_GraphOp<"scatter_elements", [Pure]> {
  let summary = "scatter elements along an axis";
  let description = [{
    ONNX `ScatterElements`: a copy of `data` with `updates` written (or
    combined with `reduction` = add, mul, max, min) at `indices` along `axis`.

    ```mlir
    %y = dist.scatter_elements %d, %i, %u {axis = 1 : i64}
        : (tensor<3x3xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x3xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$data, Dist_IndexTensor:$indices,
                       Dist_Tensor:$updates,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs Dist_Tensor:$output);
}

def Dist_ScatterNDOp : Dist_GraphOp<"scatter_nd", [Pure]> {
  let summary = "scatter slices at index tuples";
  let description = [{
    ONNX `ScatterND`: a copy of `data` with `updates` written (or combined
    with `reduction` = add, mul, max, min) at the index tuples of
    `indices`. With `indices` of shape [..., k], each tuple picks a slice
    of `data` over its last rank - k dimensions; `updates` has the shape
    indices.shape[:-1] + data.shape[k:]. Tuples are applied in order.

    ```mlir
    %y = dist.scatter_nd %d, %i, %u
        : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$data, Dist_IndexTensor:$indices,
                       Dist_Tensor:$updates,
                       DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs Dist_Tensor:$output);
}

def Dist_ExpandOp : Dist_GraphOp<"expand", [Pure]> {
  let summary = "broadcast to a shape";
  let description = [{
    ONNX `Expand`: broadcasts `input` with the 1-D `shape` (multidirectional).

    ```mlir
    %y = dist.expand %x, %s : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, Dist_I64Tensor:$shape);
  let results = (outs Dist_Tensor:$output);
}

def Dist_TileOp : Dist_GraphOp<"tile", [Pure]> {
  let summary = "repeat a tensor";
  let description = [{
    ONNX `Tile`: dimension `i` is repeated `repeats[i]` times.

    ```mlir
    %y = dist.tile %x, %r : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, Dist_I64Tensor:$repeats);
  let results = (outs Dist_Tensor:$output);
}

def Dist_PadOp : Dist_GraphOp<"pad", [Pure, AttrSizedOperandSegments]> {
  let summary = "pad a tensor";
  let description = [{
    ONNX `Pad` (opset 18 form): `pads` holds begin values for each padded axis
    then end values; `mode` is constant, reflect, edge or wrap.

    ```mlir
    %y = dist.pad %x, %p value %v {mode = "constant"}
        : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, Dist_I64Tensor:$pads,
                       Optional<Dist_Tensor>:$constant_value,
                       Optional<Dist_IndexTensor>:$axes,
                       DefaultValuedAttr<StrAttr, "\"constant\"">:$mode);
  let results = (outs Dist_Tensor:$output);
  let assemblyFormat = [{
    $input `,` $pads (`value` $constant_value^)? (`axes` $axes^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Dist_ShapeOp : Dist_GraphOp<"shape", [Pure]> {
  let summary = "shape of a tensor";
  let description = [{
    ONNX `Shape` (opset 15 form, with optional `start`/`end` slicing). Folds
    to a constant when the sliced dimensions are static.

    ```mlir
    %s = dist.shape %x : (tensor<?x784xf32>) -> tensor<2xi64>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input,
                       DefaultValuedAttr<I64Attr, "0">:$start,
                       OptionalAttr<I64Attr>:$end);
  let results = (outs Dist_I64Tensor:$output);
  let hasFolder = 1;
}

def Dist_SizeOp : Dist_GraphOp<"size", [Pure]> {
  let summary = "number of elements";
  let description = [{
    ONNX `Size`: a scalar int64.

    ```mlir
    %n = dist.size %x : (tensor<3x4xf32>) -> tensor<i64>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input);
  let results = (outs Dist_I64Tensor:$output);
  let hasFolder = 1;
}

def Dist_RangeOp : Dist_GraphOp<"range", [Pure]> {
  let summary = "arithmetic sequence";
  let description = [{
    ONNX `Range`: `max(ceil((limit - start) / delta), 0)` elements
    `start + i * delta`; the three operands are scalars.

    ```mlir
    %r = dist.range %s, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
    ```
  }];
  let arguments = (ins Dist_NumericTensor:$start, Dist_NumericTensor:$limit,
                       Dist_NumericTensor:$delta);
  let results = (outs Dist_NumericTensor:$output);
  let hasFolder = 1;
}

def Dist_TopKOp : Dist_GraphOp<"top_k", [Pure]> {
  let summary = "k largest or smallest elements along an axis";
  let description = [{
    ONNX `TopK` (opset 11 form): `k` is a one-element int64 tensor.

    ```mlir
    %v, %i = dist.top_k %x, %k {axis = -1 : i64}
        : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
    ```
  }];
  let arguments = (ins Dist_NumericTensor:$input, Dist_I64Tensor:$k,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<I64Attr, "1">:$largest,
                       DefaultValuedAttr<I64Attr, "1">:$sorted);
  let results = (outs Dist_NumericTensor:$values, Dist_I64Tensor:$indices);
}

def Dist_TriluOp : Dist_GraphOp<"trilu", [Pure]> {
  let summary = "upper or lower triangle of matrices";
  let description = [{
    ONNX `Trilu`: keeps the upper (`upper` = 1) or lower triangle of the last
    two dimensions, offset by the optional scalar `k`.

    ```mlir
    %y = dist.trilu %x {upper = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, Optional<Dist_I64Tensor>:$k,
                       DefaultValuedAttr<I64Attr, "1">:$upper);
  let results = (outs Dist_Tensor:$output);
  let assemblyFormat = [{
    $input (`k` $k^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Dist_CumSumOp : Dist_GraphOp<"cum_sum", [Pure]> {
  let summary = "cumulative sum along an axis";
  let description = [{
    ONNX `CumSum`: `axis` is a scalar int tensor; `exclusive` and `reverse`
    as in ONNX.

    ```mlir
    %y = dist.cum_sum %x, %a : (tensor<5xf32>, tensor<i64>) -> tensor<5xf32>
    ```
  }];
  let arguments = (ins Dist_NumericTensor:$input, Dist_IndexTensor:$axis,
                       DefaultValuedAttr<I64Attr, "0">:$exclusive,
                       DefaultValuedAttr<I64Attr, "0">:$reverse);
  let results = (outs Dist_NumericTensor:$output);
}

def Dist_OneHotOp : Dist_GraphOp<"one_hot", [Pure]> {
  let summary = "one-hot encoding";
  let description = [{
    ONNX `OneHot`: inserts a dimension of size `depth` at `axis`; `values`
    holds the off and on values.

    ```mlir
    %y = dist.one_hot %i, %d, %v {axis = -1 : i64}
        : (tensor<3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<3x10xf32>
    ```
  }];
  let arguments = (ins Dist_NumericTensor:$indices, Dist_NumericTensor:$depth,
                       Dist_Tensor:$values, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Dist_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Dist_SoftmaxCrossEntropyLossOp : Dist_GraphOp<"softmax_cross_entropy_loss", [Pure]> {
  let summary = "softmax cross-entropy loss";
  let description = [{
    ONNX `SoftmaxCrossEntropyLoss`: `scores` is `N x C x D1...`, `labels`
    `N x D1...`; `reduction` is none, sum or mean. The second result is the
    log-probabilities (shape of `scores`).

    ```mlir
    %l, %lp = dist.softmax_cross_entropy_loss %s, %y {reduction = "mean"}
        : (tensor<?x10xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x10xf32>)
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$scores, Dist_IndexTensor:$labels,
                       Optional<Dist_FloatTensor>:$weights,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction);
  let results = (outs Dist_FloatTensor:$output, Dist_FloatTensor:$log_prob);
  let assemblyFormat = [{
    $scores `,` $labels (`weights` $weights^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Dist_NegativeLogLikelihoodLossOp : Dist_GraphOp<"nll_loss", [Pure]> {
  let summary = "negative log-likelihood loss";
  let description = [{
    ONNX `NegativeLogLikelihoodLoss`: `input` is `N x C x D1...` holding
    log-probabilities, `target` `N x D1...`; `reduction` none, sum or mean.

    ```mlir
    %l = dist.nll_loss %x, %t {reduction = "sum"}
        : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Dist_FloatTensor:$input, Dist_IndexTensor:$target,
                       Optional<Dist_FloatTensor>:$weight,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction);
  let results = (outs Dist_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $target (`weight` $weight^)? attr-dict `:` functional-type(operands, results)
  }];
}

#endif // DIST_DIALECT_DIST_IR_DISTOPS_TD
