//===- ImportShape.cpp - reshape family, split and slice ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Squeeze, Unsqueeze, Split and Slice, whose axes, sizes and bounds older
// opsets gave as attributes (they become constant operands here), and
// DepthToSpace and SpaceToDepth, built as reshape, transpose, reshape.
// Reshape, Flatten, Transpose, Concat, Shape and Size map one to one.
//
//===----------------------------------------------------------------------===//

#include "NodeImport.h"

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::detail;

static NodeResults importSqueeze(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  Value axes = n.opset >= 13 ? n.input(1) : n.intsOperand("axes");
  if (n.type == "Unsqueeze" && !axes)
    return n.attrError ? failure()
                       : (n.error() << "Unsqueeze needs axes", failure());
  SmallVector<Value> ops{n.input(0)};
  if (axes)
    ops.push_back(axes);
  return n.create(n.type == "Squeeze" ? "dist.squeeze" : "dist.unsqueeze", ops,
                  n.attrs, 1);
}

static NodeResults importSplit(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  Value split = n.opset >= 13 ? n.input(1) : n.intsOperand("split");
  int64_t count = n.node.output_size();
  if (auto num = n.intAttr("num_outputs"); num && *num != count)
    return n.error() << "Split has num_outputs = " << *num << " but " << count
                     << " outputs";
  n.addI("axis", n.intAttr("axis").value_or(0));
  n.addI("num_outputs", count);
  SmallVector<Value> ops{n.input(0)};
  if (split)
    ops.push_back(split);
  return n.create("dist.split", ops, n.attrs, count);
}

static NodeResults importSlice(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  Value starts = n.input(1), ends = n.input(2), axes = n.input(3),
        steps = n.input(4);
  if (n.opset < 10) {
    starts = n.intsOperand("starts");
    ends = n.intsOperand("ends");
    axes = n.intsOperand("axes");
    steps = Value();
  }
  if (!starts || !ends)
    return n.attrError
               ? failure()
               : (n.error() << "Slice needs starts and ends", failure());
  SmallVector<Value> ops{n.input(0), starts, ends};
  if (axes)
    ops.push_back(axes);
  if (steps)
    ops.push_back(steps);
  return n.create("dist.slice", ops, n.attrs, 1,
                  {1, 1, 1, axes ? 1 : 0, steps ? 1 : 0});
}

static NodeResults importDepthToSpace(NodeImport &n) {
  // Reshape, transpose, reshape (ONNX's definitions); the batch may be
  // dynamic (a 0 in a shape copies it), the other dims must be known.
  if (failed(n.need(1)))
    return failure();
  StringRef type = n.type;
  auto t = dyn_cast<RankedTensorType>(n.input(0).getType());
  std::optional<int64_t> bs = n.intAttr("blocksize");
  std::string mode = n.stringAttr("mode").value_or("DCR");
  if (n.attrError)
    return failure();
  if (!bs || *bs < 1)
    return n.error() << type << " needs a positive 'blocksize'";
  if (!t || t.getRank() != 4 ||
      llvm::any_of(t.getShape().drop_front(), ShapedType::isDynamic))
    return n.error() << type
                     << " needs a 4-D input whose channels, height and "
                        "width are known";
  if (mode != "DCR" && mode != "CRD")
    return n.error() << "DepthToSpace mode '" << mode << "' is not DCR or CRD";
  int64_t b = *bs, c = t.getDimSize(1), h = t.getDimSize(2),
          w = t.getDimSize(3);
  SmallVector<int64_t> split, perm, merged;
  if (type == "DepthToSpace") {
    if (c % (b * b) != 0)
      return n.error() << "DepthToSpace: " << c
                       << " channels are not a multiple of blocksize^2 = "
                       << b * b;
    if (mode == "DCR") {
      split = {0, b, b, c / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else {
      split = {0, c / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    }
    merged = {0, c / (b * b), h * b, w * b};
  } else {
    if (h % b != 0 || w % b != 0)
      return n.error() << "SpaceToDepth: height " << h << " and width " << w
                       << " are not multiples of blocksize " << b;
    split = {0, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    merged = {0, c * b * b, h / b, w / b};
  }
  auto r1 = n.create("dist.reshape", {n.input(0), n.constI64(split)}, {}, 1);
  if (failed(r1))
    return failure();
  auto tr = n.create(
      "dist.transpose", {(*r1)[0]},
      {n.builder.getNamedAttr("perm", n.builder.getDenseI64ArrayAttr(perm))},
      1);
  if (failed(tr))
    return failure();
  return n.create("dist.reshape", {(*tr)[0], n.constI64(merged)}, {}, 1);
}

void mlir::dist::detail::populateShapeImporters(NodeImporterMap &importers) {
  importers["Squeeze"] = importSqueeze;
  importers["Unsqueeze"] = importSqueeze;
  importers["Split"] = importSplit;
  importers["Slice"] = importSlice;
  importers["DepthToSpace"] = importDepthToSpace;
  importers["SpaceToDepth"] = importDepthToSpace;
}
