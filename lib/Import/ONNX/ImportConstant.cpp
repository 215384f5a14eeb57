//===- ImportConstant.cpp - the ONNX Constant op --------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Constant nodes become `dist.constant`, or a parameter when their tensor is
// too large to inline (named after the node's output). The value comes from
// whichever one of the value attributes is set: a tensor, a float, an int
// or a list of either.
//
//===----------------------------------------------------------------------===//

#include "NodeImport.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::detail;

static NodeResults importConstant(NodeImport &n) {
  const onnx::NodeProto &node = n.node;
  OpBuilder &builder = n.builder;
  const onnx::AttributeProto *valueAttr = nullptr;
  for (const onnx::AttributeProto &a : node.attribute())
    valueAttr = &a;
  if (node.attribute_size() != 1 || !valueAttr)
    return n.error() << "Constant needs exactly one value attribute";
  StringRef name = valueAttr->name();
  if (name == "value") {
    if (!n.getAttr("value", onnx::AttributeProto::TENSOR))
      return failure();
    if (node.output_size() < 1 || node.output(0).empty())
      return n.error() << "Constant has no output";
    FailureOr<Value> v = n.imp.materializeTensor(
        valueAttr->t(), n.loc, "Constant value", true, node.output(0));
    if (failed(v))
      return failure();
    return SmallVector<Value>{*v};
  }
  if (name == "value_float" || name == "value_int") {
    Type elt = name == "value_float" ? Type(builder.getF32Type())
                                     : Type(builder.getI64Type());
    if ((name == "value_float" && !n.floatAttr(name)) ||
        (name == "value_int" && !n.intAttr(name)))
      return failure();
    double v = name == "value_float" ? valueAttr->f()
                                     : static_cast<double>(valueAttr->i());
    if (name == "value_int") {
      auto t = RankedTensorType::get({}, elt);
      return SmallVector<Value>{ConstantOp::create(
          builder, n.loc, t,
          DenseElementsAttr::get(t, ArrayRef<int64_t>{valueAttr->i()}))};
    }
    return SmallVector<Value>{n.constScalar(elt, v)};
  }
  if (name == "value_ints") {
    auto v = n.intsAttr(name);
    if (!v)
      return failure();
    return SmallVector<Value>{n.constI64(*v)};
  }
  if (name == "value_floats") {
    if (!n.getAttr(name, onnx::AttributeProto::FLOATS))
      return failure();
    SmallVector<float> v(valueAttr->floats().begin(),
                         valueAttr->floats().end());
    auto t = RankedTensorType::get({(int64_t)v.size()}, builder.getF32Type());
    return SmallVector<Value>{ConstantOp::create(
        builder, n.loc, t, DenseElementsAttr::get(t, ArrayRef<float>(v)))};
  }
  return n.error() << "Constant with attribute '" << name
                   << "' is not supported (string and sparse constants)";
}

void mlir::dist::detail::populateConstantImporters(NodeImporterMap &importers) {
  importers["Constant"] = importConstant;
}
