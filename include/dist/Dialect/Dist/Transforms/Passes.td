//===- Passes.td - dist dialect passes ---------------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Passes over the dist graph.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define DIST_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def InferShapesPass : Pass<"dist-infer-shapes", "func::FuncOp"> {
  let summary = "refine result types of dist ops from their operands";
  let description = [{
    Walks a function in order, re-runs every dist op's type inference and
    replaces a result type by the inferred one when the inferred type is more
    static (a known rank or a known dimension where the old type had none).
    Finally the function's result types are updated to the types of the
    returned values.

    Pre-condition: the function verifies. Post-condition: every dist op's
    result types are the most static its operands allow; the function's
    signature follows. The pass fails if inference of an op fails, naming it.
  }];
  let dependentDialects = ["::mlir::dist::DistDialect"];
  let statistics = [
    Statistic<"numRefined", "num-refined", "Number of result types refined">,
  ];
}

#endif // DIST_DIALECT_DIST_TRANSFORMS_PASSES_TD
