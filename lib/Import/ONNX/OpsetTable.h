//===- OpsetTable.h - what the importer knows about each op -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// One entry per supported ONNX op of the default domain, holding every fact
// the importer needs about it: the opset that added it, the opset from which
// some of its attributes are inputs, the dist op it maps to one to one (if
// it does) and the attributes copied verbatim, with their kinds. The op
// importers (Import<Family>.cpp) hold what cannot be written as a fact.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_LIB_IMPORT_ONNX_OPSETTABLE_H
#define DIST_LIB_IMPORT_ONNX_OPSETTABLE_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <vector>

namespace mlir::dist::detail {

/// An attribute copied verbatim (ONNX name -> dist name) and its kind.
struct AttrSpec {
  const char *onnxName;
  const char *distName;
  enum Kind { Int, Float, String, Ints, Tensor } kind;
};

/// What the importer knows about one ONNX op.
struct OpsetEntry {
  /// First opset of the default domain defining the op.
  int64_t since = 1;
  /// The opset from which `inputAttrs` are inputs (0: none are). Before it
  /// the op takes at most one input; from it on, those attributes are
  /// errors (they would otherwise be ignored silently).
  int64_t inputsSince = 0;
  /// Attributes that opset `inputsSince` turned into inputs.
  std::vector<const char *> inputAttrs;
  /// The dist op (mnemonic) for ops that map one to one with the same
  /// operands and no attribute changes beyond copying; empty for ops with
  /// an importer of their own.
  llvm::StringRef direct;
  /// The number of results of `direct`.
  unsigned directResults = 1;
  /// Attributes copied to the dist op.
  std::vector<AttrSpec> copiedAttrs;
  /// Inputs after the first are read as constants by the op's importer and
  /// never materialised (a float initializer would become a parameter).
  bool constantOperands = false;

  /// This entry with `attrs` turned into inputs in opset `opset`.
  OpsetEntry inputsFrom(int64_t opset, std::vector<const char *> attrs) const;
};

/// The table, keyed by ONNX op type.
const llvm::StringMap<OpsetEntry> &getOpsetTable();

/// The entry of ONNX op `opType`, or null when the op is not supported.
const OpsetEntry *lookupOpsetEntry(llvm::StringRef opType);

} // namespace mlir::dist::detail

#endif // DIST_LIB_IMPORT_ONNX_OPSETTABLE_H
