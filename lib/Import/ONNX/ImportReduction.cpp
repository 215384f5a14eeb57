//===- ImportReduction.cpp - reductions, normalisation and pooling --------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reduce* (axes from an attribute before opset 13 or 18, an input after),
// Softmax and LogSoftmax (which before opset 13 work on the input flattened
// at `axis`), BatchNormalization (training mode from the outputs used
// before opset 14), LayerNormalization, MaxPool and AveragePool. ArgMax,
// ArgMin, InstanceNormalization and the global pools map one to one.
//
//===----------------------------------------------------------------------===//

#include "NodeImport.h"

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::detail;

//===----------------------------------------------------------------------===//
// Reductions and softmax
//===----------------------------------------------------------------------===//

static NodeResults importReduce(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  static const llvm::StringMap<StringRef> reduces = {
      {"ReduceSum", "reduce_sum"},   {"ReduceMean", "reduce_mean"},
      {"ReduceMax", "reduce_max"},   {"ReduceMin", "reduce_min"},
      {"ReduceProd", "reduce_prod"}, {"ReduceSumSquare", "reduce_sum_square"},
      {"ReduceL2", "reduce_l2"},     {"ReduceLogSumExp", "reduce_log_sum_exp"},
  };
  bool axesInput = n.opset >= (n.type == "ReduceSum" ? 13 : 18);
  Value axes = axesInput ? n.input(1) : n.intsOperand("axes");
  if (auto k = n.intAttr("keepdims"))
    n.addI("keepdims", *k);
  if (axesInput)
    if (auto noop = n.intAttr("noop_with_empty_axes"))
      n.addI("noop_with_empty_axes", *noop);
  SmallVector<Value> ops{n.input(0)};
  if (axes)
    ops.push_back(axes);
  return n.create(NodeImport::distName(reduces.lookup(n.type)), ops, n.attrs,
                  1);
}

static NodeResults importSoftmax(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  OpBuilder &builder = n.builder;
  StringRef op = n.type == "Softmax" ? "dist.softmax" : "dist.log_softmax";
  int64_t axis = n.intAttr("axis").value_or(n.opset >= 13 ? -1 : 1);
  auto ranked = dyn_cast<RankedTensorType>(n.input(0).getType());
  bool lastAxis = ranked && (axis == -1 || axis == ranked.getRank() - 1);
  if (n.opset >= 13 || lastAxis)
    return n.create(
        op, {n.input(0)},
        {builder.getNamedAttr(
            "axis", builder.getI64IntegerAttr(n.opset >= 13 ? axis : -1))},
        1);
  // Older opsets flatten to [prod(:axis), prod(axis:)] first.
  auto flat = n.create(
      "dist.flatten", {n.input(0)},
      {builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis))}, 1);
  if (failed(flat))
    return failure();
  auto soft = n.create(
      op, {(*flat)[0]},
      {builder.getNamedAttr("axis", builder.getI64IntegerAttr(-1))}, 1);
  if (failed(soft))
    return failure();
  auto shape = n.create("dist.shape", {n.input(0)}, {}, 1);
  if (failed(shape))
    return failure();
  return n.create("dist.reshape", {(*soft)[0], (*shape)[0]}, {}, 1);
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

static NodeResults importBatchNormalization(NodeImport &n) {
  if (failed(n.need(5)))
    return failure();
  if (auto e = n.floatAttr("epsilon"))
    n.addF("epsilon", *e);
  if (auto m = n.floatAttr("momentum"))
    n.addF("momentum", *m);
  if (n.opset < 9)
    if (auto spatial = n.intAttr("spatial"); spatial && *spatial != 1)
      return n.error() << "BatchNormalization with spatial=0 is not "
                          "supported";
  int64_t training = n.opset >= 14 ? n.intAttr("training_mode").value_or(0)
                                   : (n.node.output_size() > 1 ? 1 : 0);
  if (n.opset < 14)
    for (int i = 3; i < n.node.output_size(); ++i)
      if (!n.node.output(i).empty())
        return n.error() << "BatchNormalization output #" << i
                         << " (saved mean/variance) is not supported";
  n.addI("training_mode", training);
  return n.create("dist.batch_norm",
                  {n.input(0), n.input(1), n.input(2), n.input(3), n.input(4)},
                  n.attrs, 3);
}

static NodeResults importLayerNormalization(NodeImport &n) {
  if (failed(n.need(2)))
    return failure();
  return n.create("dist.layer_norm", n.present(), n.attrs, 3);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

static NodeResults importMaxPool(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  if (!n.intsAttr("kernel_shape"))
    return n.attrError ? failure()
                       : (n.error() << "MaxPool needs attribute 'kernel_shape'",
                          failure());
  // count_include_pad is not a MaxPool attribute.
  llvm::erase_if(n.attrs, [](NamedAttribute a) {
    return a.getName() == "count_include_pad";
  });
  return n.create("dist.max_pool", {n.input(0)}, n.attrs, 2);
}

static NodeResults importAveragePool(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  if (!n.intsAttr("kernel_shape"))
    return n.attrError
               ? failure()
               : (n.error() << "AveragePool needs attribute 'kernel_shape'",
                  failure());
  llvm::erase_if(
      n.attrs, [](NamedAttribute a) { return a.getName() == "storage_order"; });
  return n.create("dist.average_pool", {n.input(0)}, n.attrs, 1);
}

void mlir::dist::detail::populateReductionImporters(
    NodeImporterMap &importers) {
  for (StringRef op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
        "ReduceSumSquare", "ReduceL2", "ReduceLogSumExp"})
    importers[op] = importReduce;
  importers["Softmax"] = importSoftmax;
  importers["LogSoftmax"] = importSoftmax;
  importers["BatchNormalization"] = importBatchNormalization;
  importers["LayerNormalization"] = importLayerNormalization;
  importers["MaxPool"] = importMaxPool;
  importers["AveragePool"] = importAveragePool;
}
