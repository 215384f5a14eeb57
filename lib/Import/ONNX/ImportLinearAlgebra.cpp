//===- ImportLinearAlgebra.cpp - matrix products and convolutions ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// MatMul, Gemm, Conv and ConvTranspose map one to one (their attributes are
// in the opset table). Einsum does too, once its equation is known to be
// there: the dist op cannot do without it.
//
//===----------------------------------------------------------------------===//

#include "NodeImport.h"

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::detail;

static NodeResults importEinsum(NodeImport &n) {
  if (!n.attrMap.count("equation"))
    return n.error() << "Einsum needs attribute 'equation'";
  return importDirect(n);
}

void mlir::dist::detail::populateLinearAlgebraImporters(
    NodeImporterMap &importers) {
  importers["Einsum"] = importEinsum;
}
