//===- ONNXImporter.cpp - ONNX model to dist IR ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The importer's public entry points: option parsing, recognising ONNX
// files, the pending parameter file, and importONNXFile/importONNXBuffer,
// which run an `Importer` (Importer.h).
//
// The import builds a module with one `func.func @main` from an ONNX graph.
// Each node becomes dist ops in the newest-opset form (older opsets'
// attributes are materialised as constant operands; OpsetTable.cpp holds
// what the importer knows about each op, Import<Family>.cpp the op
// importers), result types come from the dialect's inference, and ops are
// folded as they are built so the shape sub-graphs exporters write collapse
// where their inputs are known (Values.cpp). Initializers are materialised
// on first use: small ones as `dist.constant`, the rest as `dist.param` whose
// bytes go to the parameter file.
//
//===----------------------------------------------------------------------===//

#include "dist/Import/ONNX/ONNXImporter.h"

#include "Importer.h"
#include "ParamWriter.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist_rt/param_format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::detail;

//===----------------------------------------------------------------------===//
// Option parsing
//===----------------------------------------------------------------------===//

std::string mlir::dist::parseInputShapeOption(StringRef text,
                                              ONNXImportOptions &opts) {
  auto [name, dims] = text.split('=');
  if (name.empty() || !text.contains('='))
    return "--input-shape '" + text.str() +
           "': expected NAME=D0,D1,... (use ? for a dynamic dimension)";
  std::vector<int64_t> shape;
  if (!dims.trim().empty()) {
    SmallVector<StringRef> parts;
    dims.split(parts, ',');
    for (StringRef p : parts) {
      p = p.trim();
      int64_t v;
      if (p == "?" || p == "-1")
        shape.push_back(ShapedType::kDynamic);
      else if (!p.getAsInteger(10, v) && v >= 0)
        shape.push_back(v);
      else
        return "--input-shape '" + text.str() + "': '" + p.str() +
               "' is not a dimension size (a non-negative integer or ?)";
    }
  }
  opts.inputShapes[name] = std::move(shape);
  return "";
}

std::string mlir::dist::parseInputValueOption(StringRef text,
                                              ONNXImportOptions &opts) {
  auto [name, file] = text.split('=');
  if (name.empty() || file.empty())
    return "--input-value '" + text.str() + "': expected NAME=FILE";
  opts.inputValues[name] = file.str();
  return "";
}

//===----------------------------------------------------------------------===//
// File detection
//===----------------------------------------------------------------------===//

bool mlir::dist::looksLikeONNXFile(StringRef path) {
  StringRef ext = llvm::sys::path::extension(path);
  if (ext == ".onnx" || ext == ".onnxtxt" || ext == ".onnxtext" || ext == ".pb")
    return true;
  if (ext == ".mlir")
    return false;
  // Another name (`model.bin`, `model`): by content. A serialized protobuf
  // is binary (ModelProto starts with the ir_version tag 0x08) and ONNX
  // text starts with its `<...>` header; MLIR is text that never does.
  // (A slice past the end would read as NULs: ask for no more than is
  // there.)
  uint64_t size = 0;
  if (llvm::sys::fs::file_size(path, size) || size == 0)
    return false;
  auto read = llvm::MemoryBuffer::getFileSlice(
      path, std::min<uint64_t>(size, 512), 0, /*IsVolatile=*/false);
  if (!read)
    return false;
  StringRef head = (*read)->getBuffer();
  StringRef text = head.ltrim();
  if (text.starts_with("<"))
    return true;
  return llvm::any_of(head, [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' &&
           c != '\v';
  });
}

//===----------------------------------------------------------------------===//
// Parameter file and import
//===----------------------------------------------------------------------===//

PendingParamFile::~PendingParamFile() {
  if (!committed)
    std::remove(tempPath.c_str());
}

std::string PendingParamFile::commit() {
  if (committed)
    return "";
  if (std::rename(tempPath.c_str(), path.c_str()) != 0)
    return path +
           ": cannot move parameter file into place: " + std::strerror(errno);
  committed = true;
  return "";
}

std::string PendingParamFile::drop(const llvm::StringSet<> &names) {
  auto buffer = llvm::MemoryBuffer::getFile(tempPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return tempPath + ": cannot read: " + buffer.getError().message();
  StringRef bytes = (*buffer)->getBuffer();
  std::string corrupt = tempPath + ": not a parameter file this import wrote";
  auto u64 = [&](size_t at, uint64_t &v) {
    if (at + 8 > bytes.size())
      return false;
    std::memcpy(&v, bytes.data() + at, 8);
    return true;
  };
  uint64_t count = 0, indexAt = 0;
  if (!bytes.starts_with(
          StringRef(DIST_RT_PARAM_MAGIC, DIST_RT_PARAM_MAGIC_SIZE)) ||
      !u64(8, count) || !u64(16, indexAt))
    return corrupt;
  struct Entry {
    StringRef name;
    uint32_t dtype;
    SmallVector<int64_t> dims;
    uint64_t offset, nbytes;
  };
  SmallVector<Entry> entries;
  size_t at = indexAt;
  bool dropsAny = false;
  for (uint64_t i = 0; i < count; ++i) {
    Entry e;
    uint32_t nameLen = 0, rank = 0;
    if (at + 4 > bytes.size())
      return corrupt;
    std::memcpy(&nameLen, bytes.data() + at, 4);
    at += 4;
    if (at + nameLen + 8 > bytes.size())
      return corrupt;
    e.name = bytes.substr(at, nameLen);
    at += nameLen;
    std::memcpy(&e.dtype, bytes.data() + at, 4);
    std::memcpy(&rank, bytes.data() + at + 4, 4);
    at += 8;
    if (rank > DIST_RT_PARAM_MAX_RANK || at + 8 * (rank + 2) > bytes.size())
      return corrupt;
    e.dims.resize(rank);
    std::memcpy(e.dims.data(), bytes.data() + at, 8 * rank);
    at += 8 * rank;
    std::memcpy(&e.offset, bytes.data() + at, 8);
    std::memcpy(&e.nbytes, bytes.data() + at + 8, 8);
    at += 16;
    if (e.offset > bytes.size() || e.nbytes > bytes.size() - e.offset)
      return corrupt;
    dropsAny |= names.contains(e.name);
    entries.push_back(std::move(e));
  }
  if (!dropsAny)
    return "";
  // Written beside the file, then moved over it.
  ParamWriter writer;
  std::string err = writer.open(tempPath);
  for (const Entry &e : entries)
    if (err.empty() && !names.contains(e.name))
      err = writer.add(e.name, e.dtype, e.dims,
                       ArrayRef<char>(bytes.data() + e.offset, e.nbytes));
  if (err.empty())
    err = writer.finish();
  if (!err.empty()) {
    writer.abort();
    return err;
  }
  buffer->reset();
  if (std::rename(writer.getTempPath().c_str(), tempPath.c_str()) != 0) {
    std::remove(writer.getTempPath().c_str());
    return tempPath + ": cannot replace: " + std::strerror(errno);
  }
  return "";
}

OwningOpRef<ModuleOp>
mlir::dist::importONNXFile(MLIRContext *context, StringRef path,
                           const ONNXImportOptions &opts,
                           std::unique_ptr<PendingParamFile> *pending) {
  context->loadDialect<DistDialect, func::FuncDialect>();
  Importer importer(context, path, opts);
  importer.setPending(pending);
  return importer.run();
}

OwningOpRef<ModuleOp>
mlir::dist::importONNXBuffer(MLIRContext *context, llvm::MemoryBufferRef buffer,
                             const ONNXImportOptions &opts) {
  context->loadDialect<DistDialect, func::FuncDialect>();
  Importer importer(context, buffer.getBufferIdentifier(), opts, buffer);
  return importer.run();
}
