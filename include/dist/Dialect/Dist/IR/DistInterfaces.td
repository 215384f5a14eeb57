//===- DistInterfaces.td - dist op interfaces --------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Interfaces every graph op of the dist dialect implements: a cost query for
// the planner and a gradient builder for training. The planner and autodiff
// passes only talk to ops through these interfaces.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_IR_DISTINTERFACES_TD
#define DIST_DIALECT_DIST_IR_DISTINTERFACES_TD

include "mlir/IR/OpBase.td"

def Dist_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::dist";
  let description = [{
    Static cost of one execution of the op, used by the cost model and the
    planner. Quantities are counted for the op's result types as they stand;
    a dynamic dimension makes the answer `failure()` unless the caller binds
    it first. The defaults (lib/Dialect/Dist/IR/Costs.cpp) count 2·M·N·K per
    product for contractions, a per-element cost for the rest (more for
    transcendental functions and normalisations), and the bytes of all
    operands and results.
  }];
  let methods = [
    InterfaceMethod<"Number of floating-point (or integer) operations.",
      "::mlir::FailureOr<int64_t>", "getFlopCount", (ins), [{}], [{
        return ::mlir::dist::detail::defaultFlopCount($_op);
      }]>,
    InterfaceMethod<"Bytes read from operands plus bytes written to results.",
      "::mlir::FailureOr<int64_t>", "getBytesAccessed", (ins), [{}], [{
        return ::mlir::dist::detail::defaultBytesAccessed($_op);
      }]>,
    InterfaceMethod<[{Shape {batch, m, n, k} of the matrix product the op
      runs as (matmul, gemm, convolutions through im2col), or failure for an
      op that is not a contraction.}],
      "::mlir::FailureOr<::llvm::SmallVector<int64_t, 4>>",
      "getContractionShape", (ins), [{}], [{
        return ::mlir::dist::detail::defaultContractionShape($_op);
      }]>,
  ];
}

def Dist_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::dist";
  let description = [{
    Reverse-mode differentiation of one op. Given the gradients flowing into
    the op's results (null where a result has no gradient), builds the ops
    computing the gradients of the op's operands and returns them (null where
    an operand is not differentiable, for example an index or a shape).
    The default dispatches to the rules of lib/Dialect/Dist/IR/Gradients.cpp
    and reports an op without one as "has no gradient rule for ...".
  }];
  let methods = [
    InterfaceMethod<"Builds operand gradients from result gradients.",
      "::mlir::FailureOr<::llvm::SmallVector<::mlir::Value>>", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$resultGrads),
      [{}], [{
        return ::mlir::dist::detail::buildDefaultGradient($_op, builder,
                                                          resultGrads);
      }]>,
    InterfaceMethod<"Whether operand `index` can carry a gradient.",
      "bool", "isDifferentiableOperand", (ins "unsigned":$index), [{}], [{
        return ::llvm::isa<::mlir::FloatType>(::mlir::getElementTypeOrSelf(
            $_op->getOperand(index).getType()));
      }]>,
  ];
}

#endif // DIST_DIALECT_DIST_IR_DISTINTERFACES_TD
