//===- OpsetTable.cpp - what the ONNX importer knows about each op --------===//
// SPDX-License-Identifier: Apache-2.0
//
// The table of supported ONNX ops, grouped by op family as the importers
// (Import<Family>.cpp) and the host lowering are. Each entry says since
// which opset the op exists, which attributes later opsets turned into
// inputs, the dist op it maps to one to one (`direct`) or that it has an
// importer of its own (`own`), and the attributes copied verbatim.
//
//===----------------------------------------------------------------------===//

#include "OpsetTable.h"

using namespace mlir::dist::detail;

OpsetEntry OpsetEntry::inputsFrom(int64_t opset,
                                  std::vector<const char *> attrs) const {
  OpsetEntry e = *this;
  e.inputsSince = opset;
  e.inputAttrs = std::move(attrs);
  return e;
}

namespace {
using K = AttrSpec::Kind;

/// An op imported one to one as `dist.<mnemonic>` with `results` results.
OpsetEntry direct(int64_t since, llvm::StringRef mnemonic,
                  std::vector<AttrSpec> attrs = {}, unsigned results = 1) {
  OpsetEntry e;
  e.since = since;
  e.direct = mnemonic;
  e.directResults = results;
  e.copiedAttrs = std::move(attrs);
  return e;
}

/// An op with an importer of its own.
OpsetEntry own(int64_t since, std::vector<AttrSpec> attrs = {}) {
  OpsetEntry e;
  e.since = since;
  e.copiedAttrs = std::move(attrs);
  return e;
}

/// Resize and Upsample: their roi, scales and sizes are read as constants.
OpsetEntry ownWithConstantOperands(int64_t since) {
  OpsetEntry e = own(since);
  e.constantOperands = true;
  return e;
}

llvm::StringMap<OpsetEntry> buildTable() {
  const std::vector<AttrSpec> alphaAttrs = {{"alpha", "alpha", K::Float}};
  const std::vector<AttrSpec> axisAttrs = {{"axis", "axis", K::Int}};
  const std::vector<AttrSpec> convAttrs = {
      {"auto_pad", "auto_pad", K::String},
      {"dilations", "dilations", K::Ints},
      {"group", "group", K::Int},
      {"kernel_shape", "kernel_shape", K::Ints},
      {"pads", "pads", K::Ints},
      {"strides", "strides", K::Ints},
      {"output_padding", "output_padding", K::Ints},
      {"output_shape", "output_shape", K::Ints}};
  const std::vector<AttrSpec> poolAttrs = {
      {"auto_pad", "auto_pad", K::String},
      {"ceil_mode", "ceil_mode", K::Int},
      {"count_include_pad", "count_include_pad", K::Int},
      {"dilations", "dilations", K::Ints},
      {"kernel_shape", "kernel_shape", K::Ints},
      {"pads", "pads", K::Ints},
      {"storage_order", "storage_order", K::Int},
      {"strides", "strides", K::Ints}};
  const std::vector<AttrSpec> argAttrs = {
      {"axis", "axis", K::Int},
      {"keepdims", "keepdims", K::Int},
      {"select_last_index", "select_last_index", K::Int}};
  const std::vector<AttrSpec> lossAttrs = {
      {"ignore_index", "ignore_index", K::Int},
      {"reduction", "reduction", K::String}};

  return {
      //===------------------------------------------------------------===//
      // Elementwise (ImportElementwise.cpp)
      //===------------------------------------------------------------===//
      {"Abs", direct(1, "abs")},
      {"Neg", direct(1, "neg")},
      {"Exp", direct(1, "exp")},
      {"Log", direct(1, "log")},
      {"Sqrt", direct(1, "sqrt")},
      {"Reciprocal", direct(1, "reciprocal")},
      {"Floor", direct(1, "floor")},
      {"Ceil", direct(1, "ceil")},
      {"Round", direct(11, "round")},
      {"Sign", direct(9, "sign")},
      {"Sin", direct(7, "sin")},
      {"Cos", direct(7, "cos")},
      {"Tan", direct(7, "tan")},
      {"Asin", direct(7, "asin")},
      {"Acos", direct(7, "acos")},
      {"Atan", direct(7, "atan")},
      {"Sinh", direct(9, "sinh")},
      {"Cosh", direct(9, "cosh")},
      {"Asinh", direct(9, "asinh")},
      {"Acosh", direct(9, "acosh")},
      {"Atanh", direct(9, "atanh")},
      {"Tanh", direct(1, "tanh")},
      {"Sigmoid", direct(1, "sigmoid")},
      {"Relu", direct(1, "relu")},
      {"LeakyRelu", direct(1, "leaky_relu", alphaAttrs)},
      {"Elu", direct(1, "elu", alphaAttrs)},
      {"Selu",
       direct(1, "selu",
              {{"alpha", "alpha", K::Float}, {"gamma", "gamma", K::Float}})},
      {"Celu", direct(12, "celu", alphaAttrs)},
      {"Softplus", direct(1, "softplus")},
      {"Softsign", direct(1, "softsign")},
      {"HardSigmoid",
       direct(1, "hard_sigmoid",
              {{"alpha", "alpha", K::Float}, {"beta", "beta", K::Float}})},
      {"HardSwish", direct(14, "hard_swish")},
      {"Erf", direct(9, "erf")},
      {"Gelu", direct(20, "gelu", {{"approximate", "approximate", K::String}})},
      {"Not", direct(1, "not")},
      {"Identity", direct(1, "identity")},
      {"IsNaN", own(9)},
      {"IsInf", own(10)},
      {"Clip", own(1).inputsFrom(11, {"min", "max"})},
      {"Cast", own(1)},
      {"CastLike", direct(15, "cast_like")},
      // Its own importer rewrites the slope of opsets before 7, then maps
      // it directly.
      {"PRelu", direct(1, "prelu")},
      {"Add", direct(1, "add")},
      {"Sub", direct(1, "sub")},
      {"Mul", direct(1, "mul")},
      {"Div", direct(1, "div")},
      {"Pow", direct(1, "pow")},
      {"Mod", direct(10, "mod", {{"fmod", "fmod", K::Int}})},
      {"Max", direct(1, "max")},
      {"Min", direct(1, "min")},
      {"Sum", direct(1, "sum")},
      {"Mean", direct(1, "mean")},
      {"Equal", direct(1, "equal")},
      {"Less", direct(1, "less")},
      {"Greater", direct(1, "greater")},
      {"LessOrEqual", direct(12, "less_or_equal")},
      {"GreaterOrEqual", direct(12, "greater_or_equal")},
      {"And", direct(1, "and")},
      {"Or", direct(1, "or")},
      {"Xor", direct(1, "xor")},
      {"Where", direct(9, "where")},
      {"Dropout", own(1).inputsFrom(12, {"ratio"})},

      //===------------------------------------------------------------===//
      // Linear algebra (ImportLinearAlgebra.cpp)
      //===------------------------------------------------------------===//
      {"MatMul", direct(1, "matmul")},
      {"Gemm", direct(1, "gemm",
                      {{"alpha", "alpha", K::Float},
                       {"beta", "beta", K::Float},
                       {"transA", "trans_a", K::Int},
                       {"transB", "trans_b", K::Int}})},
      {"Conv", direct(1, "conv", convAttrs)},
      {"ConvTranspose", direct(1, "conv_transpose", convAttrs)},
      // Its own importer checks for the equation, then maps it directly.
      {"Einsum", direct(12, "einsum", {{"equation", "equation", K::String}})},

      //===------------------------------------------------------------===//
      // Reductions, normalisation and pooling (ImportReduction.cpp)
      //===------------------------------------------------------------===//
      {"ReduceSum", own(1).inputsFrom(13, {"axes"})},
      {"ReduceMean", own(1).inputsFrom(18, {"axes"})},
      {"ReduceMax", own(1).inputsFrom(18, {"axes"})},
      {"ReduceMin", own(1).inputsFrom(18, {"axes"})},
      {"ReduceProd", own(1).inputsFrom(18, {"axes"})},
      {"ReduceSumSquare", own(1).inputsFrom(18, {"axes"})},
      {"ReduceL2", own(1).inputsFrom(18, {"axes"})},
      {"ReduceLogSumExp", own(1).inputsFrom(18, {"axes"})},
      {"ArgMax", direct(1, "arg_max", argAttrs)},
      {"ArgMin", direct(1, "arg_min", argAttrs)},
      {"Softmax", own(1)},
      {"LogSoftmax", own(1)},
      {"BatchNormalization", own(1)},
      {"LayerNormalization", own(17, {{"axis", "axis", K::Int},
                                      {"epsilon", "epsilon", K::Float},
                                      {"stash_type", "stash_type", K::Int}})},
      {"InstanceNormalization",
       direct(1, "instance_norm", {{"epsilon", "epsilon", K::Float}})},
      {"MaxPool", own(1, poolAttrs)},
      {"AveragePool", own(1, poolAttrs)},
      {"GlobalAveragePool", direct(1, "global_average_pool")},
      {"GlobalMaxPool", direct(1, "global_max_pool")},

      //===------------------------------------------------------------===//
      // Shape (ImportShape.cpp)
      //===------------------------------------------------------------===//
      {"Reshape", direct(1, "reshape", {{"allowzero", "allowzero", K::Int}})},
      {"Flatten", direct(1, "flatten", axisAttrs)},
      {"Transpose", direct(1, "transpose", {{"perm", "perm", K::Ints}})},
      {"Squeeze", own(1).inputsFrom(13, {"axes"})},
      {"Unsqueeze", own(1).inputsFrom(13, {"axes"})},
      {"Concat", direct(1, "concat", axisAttrs)},
      {"Split", own(1).inputsFrom(13, {"split"})},
      {"Slice", own(1).inputsFrom(10, {"starts", "ends", "axes"})},
      {"Shape", direct(1, "shape",
                       {{"start", "start", K::Int}, {"end", "end", K::Int}})},
      {"Size", direct(1, "size")},
      {"DepthToSpace", own(1)},
      {"SpaceToDepth", own(1)},

      //===------------------------------------------------------------===//
      // Indexing and data movement (ImportIndexing.cpp)
      //===------------------------------------------------------------===//
      {"Gather", direct(1, "gather", axisAttrs)},
      {"GatherElements", direct(11, "gather_elements", axisAttrs)},
      {"ScatterElements", direct(11, "scatter_elements",
                                 {{"axis", "axis", K::Int},
                                  {"reduction", "reduction", K::String}})},
      {"ScatterND",
       direct(11, "scatter_nd", {{"reduction", "reduction", K::String}})},
      {"Expand", direct(8, "expand")},
      {"Tile", direct(1, "tile")},
      {"Pad", own(1).inputsFrom(11, {"pads", "value"})},
      {"ConstantOfShape",
       direct(9, "constant_of_shape", {{"value", "value", K::Tensor}})},
      {"Range", direct(11, "range")},
      {"TopK", own(1).inputsFrom(10, {"k"})},
      {"Trilu", direct(14, "trilu", {{"upper", "upper", K::Int}})},
      {"CumSum", direct(11, "cum_sum",
                        {{"exclusive", "exclusive", K::Int},
                         {"reverse", "reverse", K::Int}})},
      {"OneHot", direct(9, "one_hot", axisAttrs)},
      {"NegativeLogLikelihoodLoss", direct(12, "nll_loss", lossAttrs)},
      {"SoftmaxCrossEntropyLoss",
       direct(12, "softmax_cross_entropy_loss", lossAttrs, /*results=*/2)},
      {"Resize", ownWithConstantOperands(10)},
      {"Upsample", ownWithConstantOperands(7)},

      //===------------------------------------------------------------===//
      // Constants (ImportConstant.cpp)
      //===------------------------------------------------------------===//
      {"Constant", own(1)},
  };
}
} // namespace

const llvm::StringMap<OpsetEntry> &mlir::dist::detail::getOpsetTable() {
  static const llvm::StringMap<OpsetEntry> table = buildTable();
  return table;
}

const OpsetEntry *mlir::dist::detail::lookupOpsetEntry(llvm::StringRef opType) {
  const llvm::StringMap<OpsetEntry> &table = getOpsetTable();
  auto it = table.find(opType);
  return it == table.end() ? nullptr : &it->second;
}
