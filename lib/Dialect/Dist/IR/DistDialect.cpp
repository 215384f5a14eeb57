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
