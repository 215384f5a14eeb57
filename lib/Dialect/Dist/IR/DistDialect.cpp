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

//===----------------------------------------------------------------------===//
// Attributes <-> JSON
//===----------------------------------------------------------------------===//

std::optional<llvm::json::Value> mlir::dist::attrToJson(Attribute attr) {
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object obj;
    for (NamedAttribute entry : dict) {
      std::optional<llvm::json::Value> v = attrToJson(entry.getValue());
      if (!v)
        return std::nullopt;
      obj[entry.getName().getValue()] = std::move(*v);
    }
    return llvm::json::Value(std::move(obj));
  }
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array arr;
    for (Attribute a : array) {
      std::optional<llvm::json::Value> v = attrToJson(a);
      if (!v)
        return std::nullopt;
      arr.push_back(std::move(*v));
    }
    return llvm::json::Value(std::move(arr));
  }
  if (auto s = dyn_cast<StringAttr>(attr))
    return llvm::json::Value(s.getValue().str());
  if (auto b = dyn_cast<BoolAttr>(attr))
    return llvm::json::Value(b.getValue());
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return llvm::json::Value(i.getValue().getSExtValue());
  if (auto f = dyn_cast<FloatAttr>(attr))
    return llvm::json::Value(f.getValueAsDouble());
  return std::nullopt;
}

Attribute mlir::dist::jsonToAttr(MLIRContext *ctx,
                                 const llvm::json::Value &value) {
  Builder b(ctx);
  switch (value.kind()) {
  case llvm::json::Value::Object: {
    SmallVector<NamedAttribute> entries;
    for (const auto &[key, v] : *value.getAsObject()) {
      Attribute a = jsonToAttr(ctx, v);
      if (!a)
        return {};
      entries.push_back(b.getNamedAttr(key.str(), a));
    }
    return b.getDictionaryAttr(entries);
  }
  case llvm::json::Value::Array: {
    SmallVector<Attribute> items;
    for (const llvm::json::Value &v : *value.getAsArray()) {
      Attribute a = jsonToAttr(ctx, v);
      if (!a)
        return {};
      items.push_back(a);
    }
    return b.getArrayAttr(items);
  }
  case llvm::json::Value::String:
    return b.getStringAttr(*value.getAsString());
  case llvm::json::Value::Boolean:
    return b.getBoolAttr(*value.getAsBoolean());
  case llvm::json::Value::Number:
    if (std::optional<int64_t> i = value.getAsInteger())
      return b.getI64IntegerAttr(*i);
    return b.getF64FloatAttr(*value.getAsNumber());
  case llvm::json::Value::Null:
    return b.getUnitAttr();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// ClusterAttr
//===----------------------------------------------------------------------===//

static std::optional<ClusterSpec> clusterFromDict(DictionaryAttr spec,
                                                  std::string &error) {
  std::optional<llvm::json::Value> json = attrToJson(spec);
  if (!json) {
    error = "cluster holds a value that is not a dictionary, array, string, "
            "boolean or number";
    return std::nullopt;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << *json;
  return clusterFromJson(text, error);
}

LogicalResult ClusterAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  DictionaryAttr spec) {
  std::string error;
  if (!clusterFromDict(spec, error))
    return emitError() << "invalid cluster: " << error;
  return success();
}

std::optional<ClusterSpec> ClusterAttr::getCluster() const {
  std::string error;
  return clusterFromDict(getSpec(), error);
}

ClusterAttr ClusterAttr::get(MLIRContext *ctx, const ClusterSpec &cluster) {
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse(clusterToJson(cluster));
  if (!json) {
    llvm::consumeError(json.takeError());
    return {};
  }
  return get(ctx, cast<DictionaryAttr>(jsonToAttr(ctx, *json)));
}
