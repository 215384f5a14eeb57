//===- DistDialect.cpp - dist dialect registration -----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Registers the dist dialect's ops and attributes, materialises folded
// constants and verifies the distribution attributes.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace mlir::dist;

#include "dist/Dialect/Dist/IR/DistDialect.cpp.inc"
#include "dist/Dialect/Dist/IR/DistEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dist/Dialect/Dist/IR/DistAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dist/Dialect/Dist/IR/DistTypes.cpp.inc"

void DistDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dist/Dialect/Dist/IR/DistOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
}

void DistDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dist/Dialect/Dist/IR/DistTypes.cpp.inc"
      >();
}

void DistDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dist/Dialect/Dist/IR/DistAttrs.cpp.inc"
      >();
}

Operation *DistDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

//===----------------------------------------------------------------------===//
// Attribute verifiers
//===----------------------------------------------------------------------===//

LogicalResult
PlacementAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      DeviceKind kind, int64_t group) {
  if (group < -1)
    return emitError() << "placement group must be -1 (any) or >= 0, got "
                       << group;
  return success();
}

LogicalResult StageAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t index, int64_t count) {
  if (count < 1)
    return emitError() << "stage count must be positive, got " << count;
  if (index < 0 || index >= count)
    return emitError() << "stage index " << index << " is out of range [0, "
                       << count << ")";
  return success();
}

LogicalResult PSTableAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t rows, int64_t dim, int64_t shards) {
  if (rows < 1 || dim < 1 || shards < 1)
    return emitError() << "parameter-server table needs positive rows, dim "
                          "and shards, got "
                       << rows << ", " << dim << ", " << shards;
  if (shards > rows)
    return emitError() << "parameter-server table has more shards (" << shards
                       << ") than rows (" << rows << ")";
  return success();
}

LogicalResult
ExpertAxisAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t dim, int64_t experts, StringRef meshAxis) {
  if (dim < 0)
    return emitError() << "expert dimension must be non-negative, got " << dim;
  if (experts < 1)
    return emitError() << "expert count must be positive, got " << experts;
  if (meshAxis.empty())
    return emitError() << "expert axis needs a mesh axis name";
  return success();
}

FailureOr<llvm::APFloat> mlir::dist::parseF64(AsmParser &parser) {
  double value = 0;
  if (parser.parseFloat(value))
    return failure();
  return llvm::APFloat(value);
}

void mlir::dist::printF64(AsmPrinter &printer, const llvm::APFloat &value) {
  double v = value.convertToDouble();
  if (!std::isfinite(v)) {
    printer.printFloat(value);
    return;
  }
  // The fewest significant digits that read back as the same double.
  char text[64];
  for (int digits : {6, 9, 12, 15, 17}) {
    snprintf(text, sizeof(text), "%.*g", digits, v);
    if (strtod(text, nullptr) == v)
      break;
  }
  // MLIR's float literals need a point: 1e+18 is written 1.0e+18.
  StringRef s(text);
  if (s.contains('.')) {
    printer << s;
    return;
  }
  auto [mantissa, exponent] = s.split('e');
  printer << mantissa << ".0";
  if (!exponent.empty())
    printer << "e" << exponent;
}

/// Whether every float of `values` is a number >= 0.
static bool nonNegative(std::initializer_list<llvm::APFloat> values) {
  for (const llvm::APFloat &v : values)
    if (!(v.convertToDouble() >= 0))
      return false;
  return true;
}

LogicalResult PlanStageAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t firstLayer,
    int64_t lastLayer, StringRef, StringRef, StringRef, DeviceKind,
    int64_t units, int64_t dp, int64_t tp, BoolAttr, llvm::APFloat computeS,
    llvm::APFloat commS, llvm::APFloat memoryBytes, llvm::APFloat throughput) {
  if (firstLayer < 0 || lastLayer < firstLayer)
    return emitError() << "plan stage has layers " << firstLayer << ".."
                       << lastLayer;
  if (dp < 1 || tp < 1 || units < dp * tp)
    return emitError() << "plan stage has " << units << " units for dp " << dp
                       << " x tp " << tp;
  if (!nonNegative({computeS, commS, memoryBytes, throughput}))
    return emitError() << "plan stage has a negative time, size or rate";
  return success();
}

LogicalResult PlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               PlanObjective, PlanSearch, int64_t dp,
                               int64_t tp, int64_t pp, int64_t microBatches,
                               BoolAttr, int64_t globalBatch, BoolAttr,
                               llvm::APFloat stepS, llvm::APFloat throughput,
                               llvm::APFloat costPerHour, int64_t devicesUsed,
                               ArrayRef<PlanStageAttr> stages) {
  if (dp < 1 || tp < 1 || pp < 1 || microBatches < 1 || globalBatch < 1 ||
      devicesUsed < 0)
    return emitError() << "plan degrees, micro-batches, batch and devices "
                          "must be positive";
  if (stages.empty())
    return emitError() << "plan has no stages";
  for (size_t i = 1; i < stages.size(); ++i)
    if (stages[i].getFirstLayer() != stages[i - 1].getLastLayer() + 1)
      return emitError() << "plan stage " << i << " does not start where "
                         << "stage " << i - 1 << " ends";
  if (!nonNegative({stepS, throughput, costPerHour}))
    return emitError() << "plan has a negative time, rate or cost";
  return success();
}

//===----------------------------------------------------------------------===//
// #dist.mesh
//===----------------------------------------------------------------------===//

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<StringAttr> axes,
                               ArrayRef<int64_t> shape) {
  if (axes.size() != shape.size())
    return emitError() << "mesh has " << axes.size() << " axis names and "
                       << shape.size() << " sizes";
  if (axes.empty())
    return emitError() << "the mesh is empty";
  std::vector<std::string> before;
  int64_t total = 1;
  for (auto [name, size] : llvm::zip(axes, shape)) {
    std::string why = checkMeshAxis(before, name.getValue(), size, total);
    if (!why.empty())
      return emitError() << why;
    before.push_back(name.str());
  }
  return success();
}

Attribute MeshAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr> axes;
  SmallVector<int64_t> shape;
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    int64_t size = 0;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    axes.push_back(StringAttr::get(parser.getContext(), name));
    shape.push_back(size);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::LessGreater,
                                     parseAxis))
    return {};
  return parser.getChecked<MeshAttr>(parser.getContext(), axes, shape);
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << "<";
  llvm::interleaveComma(
      llvm::zip(getAxes(), getShape()), printer, [&](auto axis) {
        printer << std::get<0>(axis).getValue() << " = " << std::get<1>(axis);
      });
  printer << ">";
}

MeshSpec MeshAttr::getSpec() const {
  MeshSpec spec;
  for (auto [name, size] : llvm::zip(getAxes(), getShape())) {
    spec.axes.push_back(name.str());
    spec.shape.push_back(size);
  }
  return spec;
}

int64_t MeshAttr::getSize(StringRef name) const {
  for (auto [axis, size] : llvm::zip(getAxes(), getShape()))
    if (axis.getValue() == name)
      return size;
  return 1;
}

int64_t MeshAttr::getNumRanks() const {
  int64_t n = 1;
  for (int64_t size : getShape())
    n *= size;
  return n;
}

MeshAttr MeshAttr::get(MLIRContext *ctx, const MeshSpec &spec) {
  SmallVector<StringAttr> axes;
  for (const std::string &a : spec.axes)
    axes.push_back(StringAttr::get(ctx, a));
  return get(ctx, axes, spec.shape);
}

//===----------------------------------------------------------------------===//
// Phase tags
//===----------------------------------------------------------------------===//

Location DistDialect::tagPhase(Location loc, StringRef phase) {
  return NameLoc::get(StringAttr::get(loc.getContext(), phase), loc);
}

StringRef DistDialect::getPhase(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    StringRef n = name.getName().getValue();
    if (n == kPhaseBackward || n == kPhaseUpdate)
      return n;
    return "";
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location l : fused.getLocations())
      if (StringRef p = getPhase(l); !p.empty())
        return p;
  }
  return "";
}

StringRef DistDialect::getNodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    StringRef n = name.getName().getValue();
    if (n == kPhaseBackward || n == kPhaseUpdate)
      return getNodeName(name.getChildLoc());
    return n;
  }
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (StringRef n = getNodeName(l); !n.empty())
        return n;
  return "";
}
