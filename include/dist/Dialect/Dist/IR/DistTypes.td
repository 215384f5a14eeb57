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

#endif // DIST_DIALECT_DIST_IR_DISTTYPES_TD
