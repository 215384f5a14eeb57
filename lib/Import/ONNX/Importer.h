//===- Importer.h - state of one ONNX import --------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The `Importer` class behind importONNXFile/importONNXBuffer: the model
// being read, the values its names stand for, and the graph- and value-level
// steps (loading, opset checks, tensors and initializers, constant and shape
// evaluation, op construction with inference and folding). Its methods are
// defined in ImportGraph.cpp (model and graph), Values.cpp (tensors, values
// and op construction) and ImportNode.cpp (one node); the op importers
// (Import<Family>.cpp) use the public part through NodeImport.h.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_LIB_IMPORT_ONNX_IMPORTER_H
#define DIST_LIB_IMPORT_ONNX_IMPORTER_H

#include "ParamWriter.h"
#include "dist/Import/ONNX/ONNXImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include "onnx/onnx_pb.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir::dist::detail {

/// The MLIR element type of ONNX tensor type `code` (null if unsupported).
Type onnxElementType(MLIRContext *ctx, int32_t code);

/// The name of ONNX tensor type `code`, for diagnostics.
std::string onnxTypeName(int32_t code);

/// A tensor's bytes, either borrowed from the model or owned.
struct TensorData {
  std::string owned;
  std::unique_ptr<llvm::MemoryBuffer> mapped;
  const char *data = nullptr;
  size_t size = 0;
  ArrayRef<char> bytes() const { return {data, size}; }
};

/// Imports one model into a module with one `func.func @main`.
class Importer {
public:
  Importer(MLIRContext *ctx, StringRef path, const ONNXImportOptions &opts,
           std::optional<llvm::MemoryBufferRef> buffer = std::nullopt)
      : ctx(ctx), builder(ctx), path(path.str()), opts(opts),
        fileLoc(FileLineColLoc::get(ctx, path, 0, 0)), buffer(buffer) {}

  OwningOpRef<ModuleOp> run();
  void setPending(std::unique_ptr<PendingParamFile> *p) { pending = p; }

  //===--------------------------------------------------------------------===//
  // Used by the op importers
  //===--------------------------------------------------------------------===//

  MLIRContext *getContext() const { return ctx; }
  OpBuilder &getBuilder() { return builder; }
  /// The model's version of the default ONNX opset.
  int64_t getOpset() const { return opset; }

  // Errors.
  InFlightDiagnostic error(Location loc) { return emitError(loc); }
  InFlightDiagnostic error() { return emitError(fileLoc); }

  // Tensors.
  FailureOr<Value> materializeTensor(const onnx::TensorProto &t, Location loc,
                                     StringRef what, bool mayInline,
                                     StringRef paramName = {});
  /// Declares parameter `name` of `type` (before the function) and reads
  /// it (in the body).
  Value declareParam(StringRef name, RankedTensorType type, Location loc);
  FailureOr<DenseElementsAttr> tensorAttr(const onnx::TensorProto &t,
                                          Location loc, StringRef what);
  /// The values of node input `name` when it is a constant (an initializer
  /// or a Constant node's output), as doubles; failure (with an error
  /// naming `what`) otherwise.
  FailureOr<SmallVector<double>> constantInput(StringRef name, Location loc,
                                               StringRef what);
  /// One element of a 1-D integer tensor evaluated at import time: a
  /// known value, or dimension `dim` of `of` (unknown until run time).
  struct ShapeEntry {
    std::optional<int64_t> value;
    Value of;
    int64_t dim = -1;
  };
  /// Evaluates the 1-D integer tensor `name` through constants, Shape,
  /// Slice, Concat, Gather, Cast, Squeeze, Unsqueeze and Identity nodes;
  /// nullopt when it depends on anything else. Emits no diagnostics.
  std::optional<SmallVector<ShapeEntry>> evalShapeVector(StringRef name,
                                                         int depth);

  // Op construction.
  Value constI64(ArrayRef<int64_t> values, Location loc, bool scalar = false);
  Value constScalar(Type elt, double value, Location loc);
  /// Creates `opName` with inferred result types, verifies it and folds it;
  /// failure (diagnosed at `loc`) when inference or verification fails, or
  /// when there are fewer operands than the op takes (minOperands).
  FailureOr<SmallVector<Value>> create(StringRef opName, Location loc,
                                       ArrayRef<Value> operands,
                                       ArrayRef<NamedAttribute> attrs,
                                       unsigned numResults,
                                       ArrayRef<int32_t> segments = {});

  /// The fewest operands the dist op `opName` takes (from its ODS operand
  /// count traits: NOperands, AtLeastNOperands, ...).
  unsigned minOperands(StringRef opName);

private:
  // Model-level steps.
  LogicalResult load();
  LogicalResult checkOpsets();
  LogicalResult importGraph(ModuleOp module);
  LogicalResult importNode(const onnx::NodeProto &node, int64_t index);

  // Tensors.
  LogicalResult readTensorData(const onnx::TensorProto &t, Location loc,
                               StringRef what, TensorData &out);
  FailureOr<RankedTensorType> tensorType(const onnx::TensorProto &t,
                                         Location loc, StringRef what);
  FailureOr<Value> lookup(StringRef name, Location loc);
  /// The value of initializer or Constant-node output `name`, or null (an
  /// unreadable initializer also reports why, as `what`, at `loc`).
  DenseElementsAttr constantAttrOf(StringRef name, Location loc,
                                   StringRef what);

  MLIRContext *ctx;
  OpBuilder builder;
  std::string path;
  const ONNXImportOptions &opts;
  Location fileLoc;
  std::optional<llvm::MemoryBufferRef> buffer;
  std::unique_ptr<PendingParamFile> *pending = nullptr;
  onnx::ModelProto model;
  int64_t opset = 0;
  ParamWriter params;
  llvm::StringMap<Value> values;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  llvm::StringMap<onnx::TensorProto> boundInputs;
  Block *body = nullptr;
  ModuleOp moduleOp;
  func::FuncOp funcOp;
  int64_t nodeCount = 0;
};

} // namespace mlir::dist::detail

#endif // DIST_LIB_IMPORT_ONNX_IMPORTER_H
