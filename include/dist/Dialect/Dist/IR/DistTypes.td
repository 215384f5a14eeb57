//===- DistTypes.td - dist dialect types -------------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Element types the dist dialect adds to the builtin ones.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_IR_DISTTYPES_TD
#define DIST_DIALECT_DIST_IR_DISTTYPES_TD

include "mlir/IR/AttrTypeBase.td"

class Dist_Type<string name, string typeMnemonic> : TypeDef<Dist_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def Dist_StringType : Dist_Type<"String", "string"> {
  let summary = "variable-length string element";
  let description = [{
    The element type of ONNX string tensors. String tensors can be cast to
    and from numbers and moved around (reshape, concat, gather, ...); they
    have no arithmetic.

    ```mlir
    %s = dist.cast %x {to = !dist.string} : (tensor<3xf32>) -> tensor<3x!dist.string>
    ```
  }];
}

def Dist_SequenceType : Dist_Type<"Sequence", "sequence"> {
  let summary = "ONNX sequence of tensors";
  let description = [{
    An ONNX `seq(tensor)` value: a list of tensors of one element type. Only
    value-preserving ops (`dist.identity`) accept sequences so far.

    ```mlir
    %s = dist.identity %x : (!dist.sequence<tensor<?x?xf32>>) -> !dist.sequence<tensor<?x?xf32>>
    ```
  }];
  let parameters = (ins "::mlir::TensorType":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

def Dist_OptionalType : Dist_Type<"Optional", "optional"> {
  let summary = "ONNX optional value";
  let description = [{
    An ONNX `optional(T)` value that holds a `T` or nothing. Only
    value-preserving ops (`dist.identity`) accept optionals so far.

    ```mlir
    %o = dist.identity %x : (!dist.optional<tensor<5xf32>>) -> !dist.optional<tensor<5xf32>>
    ```
  }];
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

#endif // DIST_DIALECT_DIST_IR_DISTTYPES_TD
