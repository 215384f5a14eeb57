//===- ImportElementwise.cpp - elementwise ONNX ops -----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The elementwise ops that need more than the opset table's one-to-one
// mapping: Cast (an ONNX type code to an element type), Clip and Dropout
// (bounds and ratio that older opsets gave as attributes), PRelu (the
// channel-wise slope of opsets before 7), and IsNaN and IsInf, built from
// comparisons.
//
//===----------------------------------------------------------------------===//

#include "NodeImport.h"

#include <limits>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::detail;

static NodeResults importCast(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  auto to = n.intAttr("to");
  if (!to)
    return n.attrError ? failure()
                       : (n.error() << "Cast needs attribute 'to'", failure());
  Type toType = onnxElementType(n.imp.getContext(), static_cast<int32_t>(*to));
  if (!toType)
    return n.error() << "Cast to " << onnxTypeName(static_cast<int32_t>(*to))
                     << " is not supported";
  n.attrs.push_back(n.builder.getNamedAttr("to", TypeAttr::get(toType)));
  return n.create("dist.cast", {n.input(0)}, n.attrs, 1);
}

static NodeResults importClip(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  Value lo = n.input(1), hi = n.input(2);
  if (n.opset < 11) {
    if (auto v = n.floatAttr("min"))
      lo = n.constScalar(n.elt0(), *v);
    if (auto v = n.floatAttr("max"))
      hi = n.constScalar(n.elt0(), *v);
  }
  SmallVector<Value> ops{n.input(0)};
  if (lo)
    ops.push_back(lo);
  if (hi)
    ops.push_back(hi);
  return n.create("dist.clip", ops, n.attrs, 1, {1, lo ? 1 : 0, hi ? 1 : 0});
}

static NodeResults importDropout(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  Value ratio = n.input(1), training = n.input(2);
  if (n.opset < 12)
    if (auto r = n.floatAttr("ratio"))
      ratio = n.constScalar(n.builder.getF32Type(), *r);
  if (auto seed = n.intAttr("seed"))
    n.addI("seed", *seed);
  SmallVector<Value> ops{n.input(0)};
  if (ratio)
    ops.push_back(ratio);
  if (training)
    ops.push_back(training);
  return n.create("dist.dropout", ops, n.attrs, 2,
                  {1, ratio ? 1 : 0, training ? 1 : 0});
}

static NodeResults importPRelu(NodeImport &n) {
  // PRelu before opset 7: a 1-D slope of size C applies along the channel
  // dim 1.
  if (n.opset < 7 && n.in.size() == 2 && n.in[0] && n.in[1]) {
    auto x = dyn_cast<RankedTensorType>(n.in[0].getType());
    auto sl = dyn_cast<RankedTensorType>(n.in[1].getType());
    if (x && sl && sl.getRank() == 1 && x.getRank() >= 3 &&
        sl.getDimSize(0) != 1 && sl.getDimSize(0) == x.getDimSize(1)) {
      auto r = n.appendUnitDims(n.in[1], x.getRank() - 2);
      if (failed(r))
        return failure();
      n.in[1] = *r;
    }
  }
  return importDirect(n);
}

static NodeResults importIsNaN(NodeImport &n) {
  // x != x, the one value unequal to itself (the emitted code keeps NaN
  // semantics: no nnan flag).
  if (failed(n.need(1)))
    return failure();
  auto same = n.create("dist.equal", {n.input(0), n.input(0)}, {}, 1);
  if (failed(same))
    return failure();
  return n.create("dist.not", {(*same)[0]}, {}, 1);
}

static NodeResults importIsInf(NodeImport &n) {
  // x == +inf (detect_positive, default 1) or x == -inf (detect_negative,
  // default 1).
  if (failed(n.need(1)))
    return failure();
  bool pos = n.intAttr("detect_positive").value_or(1) != 0;
  bool neg = n.intAttr("detect_negative").value_or(1) != 0;
  if (n.attrError)
    return failure();
  SmallVector<Value> hits;
  for (auto [want, sign] : {std::pair(pos, 1.0), std::pair(neg, -1.0)}) {
    if (!want)
      continue;
    Value inf =
        n.constScalar(n.elt0(), sign * std::numeric_limits<double>::infinity());
    auto eq = n.create("dist.equal", {n.input(0), inf}, {}, 1);
    if (failed(eq))
      return failure();
    hits.push_back((*eq)[0]);
  }
  if (hits.empty()) {
    // Neither: all false, shaped like x.
    auto eq = n.create("dist.equal", {n.input(0), n.input(0)}, {}, 1);
    if (failed(eq))
      return failure();
    auto t = n.create("dist.not", {(*eq)[0]}, {}, 1);
    if (failed(t))
      return failure();
    return n.create("dist.and", {(*eq)[0], (*t)[0]}, {}, 1);
  }
  if (hits.size() == 1)
    return SmallVector<Value>{hits[0]};
  return n.create("dist.or", hits, {}, 1);
}

void mlir::dist::detail::populateElementwiseImporters(
    NodeImporterMap &importers) {
  importers["Cast"] = importCast;
  importers["Clip"] = importClip;
  importers["Dropout"] = importDropout;
  importers["PRelu"] = importPRelu;
  importers["IsNaN"] = importIsNaN;
  importers["IsInf"] = importIsInf;
}
