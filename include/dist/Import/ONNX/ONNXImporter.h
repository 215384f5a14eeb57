//===- ONNXImporter.h - ONNX model to dist IR ----------------------*- C++
//-*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Entry point of the ONNX importer: reads a binary or textual ONNX model,
// normalises every node to the dist dialect's newest-opset form, resolves
// shapes through the dialect's own inference and folding, and writes the
// initializers to a parameter file outside the IR.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_IMPORT_ONNX_ONNXIMPORTER_H
#define DIST_IMPORT_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir::dist {

/// Options of one import.
struct ONNXImportOptions {
  /// Where the parameter file is written. Empty: no file is written and the
  /// import fails if the model has parameters.
  std::string paramFile;
  /// Fixed shapes for graph inputs (kDynamic for a dimension left open).
  llvm::StringMap<std::vector<int64_t>> inputShapes;
  /// Graph inputs bound to constant values read from files (serialized
  /// TensorProto `.pb` files).
  llvm::StringMap<std::string> inputValues;
  /// Tensors with more elements than this go to the parameter file instead
  /// of becoming `dist.constant`; floating-point initializers with more than
  /// one element always do.
  int64_t maxInlineElements = 4096;
  /// Floating-point initializers of one element become parameters too (a
  /// training import: the bias of a Linear layer with one output, a learnt
  /// scale, must be trainable, not a constant).
  bool floatScalarsAsParams = false;
  /// Initializers and graph inputs that become parameters without values:
  /// tables whose rows parameter servers create (dist-opt --ps-init).
  /// Nothing of theirs is read or written to the parameter file, so a
  /// model can declare a table too large to ship as a graph input of that
  /// shape (static, or fixed by inputShapes).
  llvm::StringSet<> declaredParams;
  /// When set, receives the model as parsed (binary protobuf, also for the
  /// text format) after a successful import: training artifacts keep it to
  /// export the trained model.
  std::string *serializedModel = nullptr;
};

/// Parses `--input-shape` text `NAME=D0,D1,...` (`?` or -1 for a dynamic
/// dimension, nothing after `=` for a scalar) into `opts`. Returns an error
/// message on malformed text.
std::string parseInputShapeOption(llvm::StringRef text,
                                  ONNXImportOptions &opts);

/// Parses `--input-value` text `NAME=FILE` into `opts`.
std::string parseInputValueOption(llvm::StringRef text,
                                  ONNXImportOptions &opts);

/// Whether `path` names an ONNX model (by extension or by content).
bool looksLikeONNXFile(llvm::StringRef path);

/// A complete parameter file still at a temporary path. The caller moves it
/// into place with commit() once everything else succeeded; destroying it
/// uncommitted removes the temporary file.
class PendingParamFile {
public:
  PendingParamFile(std::string tempPath, std::string path)
      : tempPath(std::move(tempPath)), path(std::move(path)) {}
  PendingParamFile(const PendingParamFile &) = delete;
  PendingParamFile &operator=(const PendingParamFile &) = delete;
  ~PendingParamFile();
  /// Renames the file into place; returns an error message, empty on success.
  std::string commit();
  /// Rewrites the file without the parameters named in `names` (tables
  /// whose rows parameter servers create); returns an error message, empty
  /// on success. Nothing changes when none of them is in the file.
  std::string drop(const llvm::StringSet<> &names);
  const std::string &getPath() const { return path; }

private:
  std::string tempPath, path;
  bool committed = false;
};

/// Imports the model at `path`. Errors are emitted as diagnostics located at
/// the file, node or initializer; returns null on failure, and then no
/// parameter file is left behind (an existing one is kept unchanged). With
/// `pending`, a written parameter file is handed to the caller uncommitted
/// (null when the model has no parameters); otherwise it is moved into place.
OwningOpRef<ModuleOp>
importONNXFile(MLIRContext *context, llvm::StringRef path,
               const ONNXImportOptions &options,
               std::unique_ptr<PendingParamFile> *pending = nullptr);

/// Imports a model held in memory; the buffer's identifier names it in
/// diagnostics and locates external data.
OwningOpRef<ModuleOp> importONNXBuffer(MLIRContext *context,
                                       llvm::MemoryBufferRef buffer,
                                       const ONNXImportOptions &options);

} // namespace mlir::dist

#endif // DIST_IMPORT_ONNX_ONNXIMPORTER_H
