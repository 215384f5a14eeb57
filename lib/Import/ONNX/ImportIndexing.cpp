//===- ImportIndexing.cpp - indexing and data-movement ONNX ops -----------===//
// SPDX-License-Identifier: Apache-2.0
//
// Pad and TopK, whose pads, fill value and K older opsets gave as
// attributes, and Resize and Upsample, imported as one gather per resized
// axis (plus weighted sums for linear and cubic modes) from scales or sizes
// known at import time. Gather, GatherElements, ScatterElements, Expand,
// Tile, ConstantOfShape, Range, Trilu, CumSum, OneHot and the losses map
// one to one.
//
//===----------------------------------------------------------------------===//

#include "NodeImport.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"

#include <cmath>
#include <vector>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::detail;

//===----------------------------------------------------------------------===//
// Pad and TopK
//===----------------------------------------------------------------------===//

static NodeResults importPad(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  std::string mode = n.stringAttr("mode").value_or("constant");
  Value pads = n.input(1), value = n.input(2), axes = n.input(3);
  if (n.opset < 11) {
    pads = n.intsOperand("pads");
    if (mode == "constant")
      value = n.constScalar(n.elt0(), n.floatAttr("value").value_or(0.0f));
  }
  if (!pads)
    return n.attrError ? failure() : (n.error() << "Pad needs pads", failure());
  n.attrs.push_back(
      n.builder.getNamedAttr("mode", n.builder.getStringAttr(mode)));
  SmallVector<Value> ops{n.input(0), pads};
  if (value)
    ops.push_back(value);
  if (axes)
    ops.push_back(axes);
  return n.create("dist.pad", ops, n.attrs, 1,
                  {1, 1, value ? 1 : 0, axes ? 1 : 0});
}

static NodeResults importTopK(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  Value k = n.input(1);
  if (n.opset < 10) {
    auto kv = n.intAttr("k");
    if (!kv)
      return n.attrError ? failure()
                         : (n.error() << "TopK needs attribute 'k'", failure());
    k = n.constI64({*kv});
  }
  if (!k)
    return n.error() << "TopK needs input K";
  for (StringRef a : {"axis", "largest", "sorted"})
    if (auto v = n.intAttr(a))
      n.addI(a, *v);
  return n.create("dist.top_k", {n.input(0), k}, n.attrs, 2);
}

//===----------------------------------------------------------------------===//
// Resize and Upsample
//===----------------------------------------------------------------------===//

namespace {
/// Resize (opset 10+) and Upsample as gathers along each resized axis.
struct ResizeSpec {
  std::string mode, coordinates, nearestMode, aspectPolicy;
  int64_t antialias = 0;
  std::optional<SmallVector<int64_t>> axes;
  std::optional<SmallVector<double>> scalesAttr;
  double cubicA = -0.75;
  double extrapolation = 0;
  bool excludeOutside = false;
};
} // namespace

static FailureOr<Value> importResize(NodeImport &n, Value x,
                                     const ResizeSpec &spec) {
  const onnx::NodeProto &node = n.node;
  StringRef type = n.type;
  Location loc = n.loc;
  OpBuilder &builder = n.builder;
  auto t = dyn_cast<RankedTensorType>(x.getType());
  if (!t)
    return n.error() << type << " needs a ranked input";
  int64_t rank = t.getRank();
  if (spec.mode != "nearest" && spec.mode != "linear" &&
      spec.mode != "bilinear" && spec.mode != "cubic")
    return n.error() << type << " mode '" << spec.mode
                     << "' is not one of nearest, linear, cubic";
  // Linear and cubic interpolate; nearest picks.
  bool linear = spec.mode != "nearest";
  static const char *const kCoordinates[] = {
      "half_pixel",        "pytorch_half_pixel",   "align_corners",
      "asymmetric",        "half_pixel_symmetric", "tf_half_pixel_for_nn",
      "tf_crop_and_resize"};
  if (!llvm::is_contained(kCoordinates, spec.coordinates))
    return n.error() << type << " coordinate_transformation_mode '"
                     << spec.coordinates << "' is not supported";
  static const char *const kNearest[] = {"round_prefer_floor",
                                         "round_prefer_ceil", "floor", "ceil"};
  if (!linear && !llvm::is_contained(kNearest, spec.nearestMode))
    return n.error() << type << " nearest_mode '" << spec.nearestMode
                     << "' is not one of round_prefer_floor, "
                        "round_prefer_ceil, floor, ceil";
  if (spec.aspectPolicy != "stretch")
    return n.error() << type << " keep_aspect_ratio_policy '"
                     << spec.aspectPolicy
                     << "' is not supported (only stretch is)";
  if (linear && !isa<FloatType>(t.getElementType()))
    return n.error() << type << " in " << spec.mode
                     << " mode needs a float input";

  // The resized axes (opset 18's `axes`, else all).
  SmallVector<int64_t> axes;
  if (spec.axes) {
    for (int64_t a : *spec.axes) {
      if (a < -rank || a >= rank)
        return n.error() << type << " axis " << a << " is out of range for a "
                         << rank << "-D input";
      a = a < 0 ? a + rank : a;
      if (llvm::is_contained(axes, a))
        return n.error() << type << " axis " << a << " is repeated";
      axes.push_back(a);
    }
  } else {
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  }
  if (axes.empty())
    return n.error() << type << " needs an input of rank 1 or more";
  // Scales or sizes: constants, one per resized axis.
  auto inputName = [&](int i) -> std::string {
    return i < node.input_size() ? node.input(i) : std::string();
  };
  bool legacyInputs = type == "Upsample" || n.opset < 11;
  std::string scalesName = inputName(legacyInputs ? 1 : 2);
  std::string sizesName = legacyInputs ? std::string() : inputName(3);
  SmallVector<double> scales, sizes, roi;
  if (spec.coordinates == "tf_crop_and_resize") {
    std::string roiName = legacyInputs ? std::string() : inputName(1);
    if (roiName.empty())
      return n.error() << type << " with tf_crop_and_resize needs 'roi'";
    FailureOr<SmallVector<double>> v =
        n.imp.constantInput(roiName, loc, type.str() + " 'roi'");
    if (failed(v))
      return failure();
    roi = *v;
    if (roi.size() != 2 * axes.size())
      return n.error() << type << " 'roi' has " << roi.size() << " values for "
                       << axes.size() << " axes (expected starts then ends)";
  }
  if (spec.scalesAttr) {
    scales = *spec.scalesAttr;
  } else if (!scalesName.empty()) {
    FailureOr<SmallVector<double>> v =
        n.imp.constantInput(scalesName, loc, type.str() + " 'scales'");
    if (failed(v))
      return failure();
    scales = *v;
  }
  // Axes whose size `sizes` takes from the input itself (PyTorch exports
  // interpolate(size=...) as Concat(Slice(Shape(x)), sizes)).
  SmallVector<bool> keepAxis;
  if (!sizesName.empty()) {
    std::optional<SmallVector<Importer::ShapeEntry>> v =
        n.imp.evalShapeVector(sizesName, 0);
    if (!v)
      return n.error() << type
                       << " 'sizes' must be a constant, or built from "
                          "constants and the input's own shape";
    if (v->size() != axes.size())
      return n.error() << type << " has " << v->size() << " sizes for "
                       << axes.size() << " axes";
    for (const Importer::ShapeEntry &e : *v) {
      keepAxis.push_back(!e.value && e.of == x &&
                         e.dim == axes[keepAxis.size()]);
      if (!e.value && !keepAxis.back())
        return n.error() << type << " 'sizes' takes dimension " << e.dim
                         << " of another tensor, unknown at compile time";
      sizes.push_back(e.value ? static_cast<double>(*e.value) : 0);
    }
  }
  // An empty scales tensor next to sizes counts as absent.
  if (!sizes.empty() && !scales.empty())
    return n.error() << type << " takes 'scales' or 'sizes', not both";
  if (sizes.empty() && scales.empty())
    return n.error() << type << " needs 'scales' or 'sizes'";
  size_t given = sizes.empty() ? scales.size() : sizes.size();
  if (given != axes.size())
    return n.error() << type << " has " << given << " "
                     << (sizes.empty() ? "scales" : "sizes") << " for "
                     << axes.size() << " axes";
  // Antialiasing only changes linear (and cubic) downsampling.
  if (linear && spec.antialias != 0) {
    for (size_t i = 0; i < given; ++i)
      if (sizes.empty() ? scales[i] < 1
                        : sizes[i] < t.getDimSize(axes[i]) ||
                              ShapedType::isDynamic(t.getDimSize(axes[i])))
        return n.error() << type
                         << " with antialias is not supported when "
                            "downsampling";
  }

  // The order the axes are resized in (the result is the same in any
  // order): the input's innermost axis first where it grows and last where
  // it shrinks, the others as given. Its gathers pick elements within rows
  // one at a time, where along outer axes whole rows move as vectors, so
  // they run on the smaller tensor: LR-ASPP's 8x bilinear upsampling of 21
  // class maps to 224 x 224 gathered 1.05M elements along the rows (16.5%
  // of an inference at one thread, AMD EPYC) where 131K do first.
  SmallVector<size_t> order;
  for (size_t i = 0; i < axes.size(); ++i)
    order.push_back(i);
  if (auto inner = llvm::find(axes, rank - 1); inner != axes.end()) {
    size_t i = static_cast<size_t>(inner - axes.begin());
    int64_t inSize = t.getDimSize(rank - 1);
    double target = sizes.empty() ? scales[i] * static_cast<double>(inSize)
                    : keepAxis[i] ? static_cast<double>(inSize)
                                  : sizes[i];
    if (!ShapedType::isDynamic(inSize) && target != inSize) {
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(i));
      order.insert(target > inSize ? order.begin() : order.end(), i);
    }
  }

  Value out = x;
  for (size_t i : order) {
    int64_t axis = axes[i];
    int64_t inSize = t.getDimSize(axis);
    double scale;
    int64_t outSize;
    if (sizes.empty()) {
      scale = scales[i];
      if (!(scale > 0) || !std::isfinite(scale))
        return n.error() << type << " scale " << scale << " for axis " << axis
                         << " is not positive";
      if (scale == 1 && roi.empty())
        continue;
      if (ShapedType::isDynamic(inSize))
        return n.error() << type << " resizes axis " << axis
                         << ", whose size is not known at compile time";
      outSize = static_cast<int64_t>(std::floor(inSize * scale));
    } else {
      if (keepAxis[i])
        continue;
      if (sizes[i] < 1 || sizes[i] != std::floor(sizes[i]))
        return n.error() << type << " size " << sizes[i] << " for axis " << axis
                         << " is not a positive integer";
      outSize = static_cast<int64_t>(sizes[i]);
      if (ShapedType::isDynamic(inSize))
        return n.error() << type << " resizes axis " << axis
                         << ", whose size is not known at compile time";
      if (outSize == inSize && roi.empty())
        continue;
      scale = static_cast<double>(outSize) / inSize;
    }
    if (outSize < 1)
      return n.error() << type << " gives axis " << axis << " of size "
                       << inSize << " an output size of " << outSize;
    // Where output index o samples the input (ONNX's reference
    // implementation, whose "output width" is scale * input size).
    double width = scale * inSize;
    auto source = [&](int64_t o) -> double {
      double d = static_cast<double>(o);
      const std::string &m = spec.coordinates;
      if (m == "asymmetric")
        return d / scale;
      if (m == "align_corners")
        return width == 1 ? 0 : d * (inSize - 1) / (width - 1);
      if (m == "pytorch_half_pixel")
        return width == 1 ? -0.5 : (d + 0.5) / scale - 0.5;
      if (m == "tf_half_pixel_for_nn")
        return (d + 0.5) / scale;
      if (m == "tf_crop_and_resize") {
        double start = roi[i], end = roi[i + axes.size()];
        return outSize > 1
                   ? start * (inSize - 1) +
                         d * (end - start) * (inSize - 1) / (outSize - 1)
                   : 0.5 * (start + end) * (inSize - 1);
      }
      if (m == "half_pixel_symmetric") {
        double adjustment = outSize / width;
        double offset = inSize / 2.0 * (1 - adjustment);
        return offset + (d + 0.5) / scale - 0.5;
      }
      return (d + 0.5) / scale - 0.5; // half_pixel
    };
    auto clampIndex = [&](int64_t v) {
      return std::clamp<int64_t>(v, 0, inSize - 1);
    };
    // Taps per output: 1 (nearest), 2 (linear) or 4 (cubic) input indices
    // (clamped: the reference pads the edges) and their weights.
    int taps = spec.mode == "cubic" ? 4 : linear ? 2 : 1;
    std::vector<SmallVector<int64_t>> index(taps,
                                            SmallVector<int64_t>(outSize));
    std::vector<SmallVector<double>> weight(taps, SmallVector<double>(outSize));
    for (int64_t o = 0; o < outSize; ++o) {
      double src = source(o);
      double base = std::floor(src);
      double r = src - base;
      auto b = static_cast<int64_t>(base);
      if (taps == 1) {
        bool up;
        if (r == 0)
          up = false;
        else if (spec.nearestMode == "round_prefer_floor")
          up = r > 0.5;
        else if (spec.nearestMode == "round_prefer_ceil")
          up = r >= 0.5;
        else
          up = spec.nearestMode == "ceil";
        index[0][o] = clampIndex(up ? b + 1 : b);
        weight[0][o] = 1;
        continue;
      }
      SmallVector<double, 4> w;
      SmallVector<int64_t, 4> at;
      if (taps == 2) {
        w = {1 - r, r};
        at = {b, b + 1};
      } else {
        double a = spec.cubicA, s1 = r + 1, s2 = 1 - r, s3 = 2 - r;
        w = {((a * s1 - 5 * a) * s1 + 8 * a) * s1 - 4 * a,
             ((a + 2) * r - (a + 3)) * r * r + 1,
             ((a + 2) * s2 - (a + 3)) * s2 * s2 + 1,
             ((a * s3 - 5 * a) * s3 + 8 * a) * s3 - 4 * a};
        at = {b - 1, b, b + 1, b + 2};
      }
      if (spec.excludeOutside) {
        double total = 0;
        for (int k = 0; k < taps; ++k) {
          if (at[k] < 0 || at[k] >= inSize)
            w[k] = 0;
          total += w[k];
        }
        for (int k = 0; k < taps && total != 0; ++k)
          w[k] /= total;
      }
      for (int k = 0; k < taps; ++k) {
        index[k][o] = clampIndex(at[k]);
        weight[k][o] = w[k];
      }
    }
    auto axisAttr =
        builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis));
    Value sum;
    for (int k = 0; k < taps; ++k) {
      auto g =
          n.create("dist.gather", {out, n.constI64(index[k])}, {axisAttr}, 1);
      if (failed(g))
        return failure();
      if (taps == 1) {
        sum = (*g)[0];
        break;
      }
      // The tap's weights along `axis`.
      SmallVector<int64_t> wShape(rank, 1);
      wShape[axis] = outSize;
      auto wType = RankedTensorType::get(wShape, t.getElementType());
      auto ft = cast<FloatType>(t.getElementType());
      SmallVector<APFloat> values;
      for (double v : weight[k]) {
        bool lost;
        APFloat f(v);
        f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        values.push_back(f);
      }
      Value wk = ConstantOp::create(builder, loc, wType,
                                    DenseElementsAttr::get(wType, values));
      auto term = n.create("dist.mul", {(*g)[0], wk}, {}, 1);
      if (failed(term))
        return failure();
      if (!sum) {
        sum = (*term)[0];
        continue;
      }
      auto added = n.create("dist.add", {sum, (*term)[0]}, {}, 1);
      if (failed(added))
        return failure();
      sum = (*added)[0];
    }
    out = sum;
    // tf_crop_and_resize: samples outside the input take
    // extrapolation_value.
    SmallVector<double> outside;
    for (int64_t o = 0; o < outSize && !roi.empty(); ++o) {
      double src = source(o);
      outside.push_back(src < 0 || src > inSize - 1 ? 1 : 0);
    }
    if (llvm::is_contained(outside, 1.0)) {
      if (!isa<FloatType>(t.getElementType()))
        return n.error() << type << " extrapolation needs a float input";
      SmallVector<int64_t> mShape(rank, 1);
      mShape[axis] = outSize;
      auto mType = RankedTensorType::get(mShape, t.getElementType());
      auto ft = cast<FloatType>(t.getElementType());
      SmallVector<APFloat> keep, fill;
      for (double v : outside) {
        bool lost;
        APFloat k(1 - v), f(v * spec.extrapolation);
        k.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        keep.push_back(k);
        fill.push_back(f);
      }
      Value keepC = ConstantOp::create(builder, loc, mType,
                                       DenseElementsAttr::get(mType, keep));
      Value fillC = ConstantOp::create(builder, loc, mType,
                                       DenseElementsAttr::get(mType, fill));
      auto kept = n.create("dist.mul", {out, keepC}, {}, 1);
      if (failed(kept))
        return failure();
      auto filled = n.create("dist.add", {(*kept)[0], fillC}, {}, 1);
      if (failed(filled))
        return failure();
      out = (*filled)[0];
    }
  }
  // A resize that changes nothing still defines a new value.
  if (out == x) {
    auto id = n.create("dist.identity", {x}, {}, 1);
    if (failed(id))
      return failure();
    out = (*id)[0];
  }
  return out;
}
static NodeResults importResizeNode(NodeImport &n) {
  if (failed(n.need(1)))
    return failure();
  ResizeSpec spec;
  // Upsample and Resize-10 map output index o to o / scale and take the
  // floor for nearest (Upsample's definition).
  bool legacy = n.type == "Upsample" || n.opset < 11;
  spec.mode = n.stringAttr("mode").value_or("nearest");
  spec.coordinates = legacy ? "asymmetric"
                            : n.stringAttr("coordinate_transformation_mode")
                                  .value_or("half_pixel");
  spec.nearestMode =
      legacy ? "floor"
             : n.stringAttr("nearest_mode").value_or("round_prefer_floor");
  spec.antialias = n.intAttr("antialias").value_or(0);
  spec.cubicA = n.floatAttr("cubic_coeff_a").value_or(-0.75f);
  spec.extrapolation = n.floatAttr("extrapolation_value").value_or(0.0f);
  spec.excludeOutside = n.intAttr("exclude_outside").value_or(0) != 0;
  spec.axes = n.intsAttr("axes");
  spec.aspectPolicy =
      n.stringAttr("keep_aspect_ratio_policy").value_or("stretch");
  if (n.type == "Upsample" && n.opset < 9)
    if (auto *a = n.getAttr("scales", onnx::AttributeProto::FLOATS))
      spec.scalesAttr =
          SmallVector<double>(a->floats().begin(), a->floats().end());
  if (n.attrError)
    return failure();
  FailureOr<Value> r = importResize(n, n.input(0), spec);
  if (failed(r))
    return failure();
  return SmallVector<Value>{*r};
}

void mlir::dist::detail::populateIndexingImporters(NodeImporterMap &importers) {
  importers["Pad"] = importPad;
  importers["TopK"] = importTopK;
  importers["Resize"] = importResizeNode;
  importers["Upsample"] = importResizeNode;
}
