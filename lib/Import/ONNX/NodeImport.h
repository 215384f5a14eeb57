//===- NodeImport.h - one ONNX node and the op importers --------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What an op importer sees of the node it imports: its location, its inputs
// (rewritten for older opsets' broadcasting), typed attribute readers and
// the attributes already copied by the opset table, plus helpers that build
// ops at the node. Importer::importNode (ImportNode.cpp) prepares a
// NodeImport and dispatches on the op type to the importer registered for
// it; each Import<Family>.cpp registers its importers with a
// populate<Family>Importers function. Ops without an importer of their own
// that map one to one to a dist op go through importDirect.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_LIB_IMPORT_ONNX_NODEIMPORT_H
#define DIST_LIB_IMPORT_ONNX_NODEIMPORT_H

#include "Importer.h"
#include "OpsetTable.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>

namespace mlir::dist::detail {

/// One node being imported.
struct NodeImport {
  NodeImport(Importer &imp, const onnx::NodeProto &node, Location loc,
             const OpsetEntry &entry)
      : imp(imp), node(node), loc(loc), type(node.op_type()), entry(entry),
        opset(imp.getOpset()), builder(imp.getBuilder()) {}

  Importer &imp;
  const onnx::NodeProto &node;
  /// Where diagnostics and created ops are located.
  Location loc;
  /// The ONNX op type.
  StringRef type;
  /// The op's entry in the opset table.
  const OpsetEntry &entry;
  /// The model's version of the default opset.
  int64_t opset;
  OpBuilder &builder;

  /// The node's attributes by name.
  llvm::StringMap<const onnx::AttributeProto *> attrMap;
  /// Set once an attribute of the wrong kind was reported.
  bool attrError = false;
  /// The inputs; null marks an absent optional input (and, for ops with
  /// constant operands, an input read as a constant).
  SmallVector<Value> in;
  /// The dist attributes: those copied by the opset table, then whatever
  /// the op's importer adds.
  SmallVector<NamedAttribute> attrs;

  /// Input `i`, or null when it is absent.
  Value input(size_t i) const { return i < in.size() ? in[i] : Value(); }
  /// The inputs that are given.
  SmallVector<Value> present() const;
  /// The element type of input #0 (null when it is absent).
  Type elt0() const {
    return input(0) ? getElementTypeOrSelf(input(0).getType()) : Type();
  }
  /// Fails (with an error) unless the first `n` inputs are given.
  LogicalResult need(size_t n);

  // Attributes, with kind checks: a present attribute of another kind is
  // reported once (setting `attrError`) and reads as absent.
  const onnx::AttributeProto *getAttr(StringRef name, int kind);
  std::optional<int64_t> intAttr(StringRef name);
  std::optional<float> floatAttr(StringRef name);
  std::optional<SmallVector<int64_t>> intsAttr(StringRef name);
  std::optional<std::string> stringAttr(StringRef name);
  /// Attribute `name` (a list of ints, older opsets) as a constant operand;
  /// null when it is absent.
  Value intsOperand(StringRef name);

  /// Adds a dist attribute.
  void addI(StringRef name, int64_t v);
  void addF(StringRef name, float v);

  // Building at the node's location.
  InFlightDiagnostic error() { return imp.error(loc); }
  FailureOr<SmallVector<Value>> create(StringRef opName,
                                       ArrayRef<Value> operands,
                                       ArrayRef<NamedAttribute> opAttrs,
                                       unsigned numResults,
                                       ArrayRef<int32_t> segments = {}) {
    return imp.create(opName, loc, operands, opAttrs, numResults, segments);
  }
  Value constI64(ArrayRef<int64_t> values, bool scalar = false) {
    return imp.constI64(values, loc, scalar);
  }
  Value constScalar(Type elt, double value) {
    return imp.constScalar(elt, value, loc);
  }
  /// Appends `count` size-1 dims to `v`.
  FailureOr<Value> appendUnitDims(Value v, int64_t count);

  /// The dist op name of `mnemonic`.
  static std::string distName(StringRef mnemonic) {
    return ("dist." + mnemonic).str();
  }
};

/// The results of an imported node, one per ONNX output (an output past the
/// results is unsupported); failure once an error has been reported.
using NodeResults = FailureOr<SmallVector<Value>>;

/// Imports one node (the node's op type selects it).
using NodeImporter = NodeResults (*)(NodeImport &node);

/// Op importers by ONNX op type.
using NodeImporterMap = llvm::StringMap<NodeImporter>;

/// Imports an op the opset table maps one to one (`OpsetEntry::direct`):
/// the given inputs become the operands, the copied attributes the
/// attributes.
NodeResults importDirect(NodeImport &node);

// Op importers, one populate function per family.
void populateConstantImporters(NodeImporterMap &importers);
void populateElementwiseImporters(NodeImporterMap &importers);
void populateLinearAlgebraImporters(NodeImporterMap &importers);
void populateReductionImporters(NodeImporterMap &importers);
void populateShapeImporters(NodeImporterMap &importers);
void populateIndexingImporters(NodeImporterMap &importers);

} // namespace mlir::dist::detail

#endif // DIST_LIB_IMPORT_ONNX_NODEIMPORT_H
