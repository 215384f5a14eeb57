//===- ParamWriter.h - writes dist-opt parameter files -------------*- C++
//-*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Streams parameters into a parameter file (layout in dist_rt/param_format.h)
// through a temporary file that replaces the target only on `commit()`, so a
// failed import never destroys an existing file.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_LIB_IMPORT_ONNX_PARAMWRITER_H
#define DIST_LIB_IMPORT_ONNX_PARAMWRITER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace mlir::dist {

class ParamWriter {
public:
  ParamWriter() = default;
  ParamWriter(const ParamWriter &) = delete;
  ParamWriter &operator=(const ParamWriter &) = delete;
  ~ParamWriter();

  /// Starts writing `path` (through `path` + ".tmp-<pid>"). Returns an error
  /// message, empty on success.
  std::string open(llvm::StringRef path);
  bool isOpen() const { return file != nullptr; }
  const std::string &getPath() const { return path; }

  /// Appends one parameter whose bytes are `data`.
  std::string add(llvm::StringRef name, uint32_t dtype,
                  llvm::ArrayRef<int64_t> dims, llvm::ArrayRef<char> data);

  /// Writes the index and moves the file into place.
  std::string commit();
  /// Writes the index and closes the file, leaving it at getTempPath() for
  /// the caller to move into place.
  std::string finish();
  const std::string &getTempPath() const { return tmpPath; }
  /// Drops the temporary file.
  void abort();

  size_t getCount() const { return entries.size(); }
  uint64_t getDataBytes() const { return dataBytes; }

private:
  struct Entry {
    std::string name;
    uint32_t dtype;
    std::vector<int64_t> dims;
    uint64_t offset, nbytes;
  };
  std::string path, tmpPath;
  std::FILE *file = nullptr;
  uint64_t offset = 0, dataBytes = 0;
  std::vector<Entry> entries;
  llvm::StringSet<> names;
};

} // namespace mlir::dist

#endif // DIST_LIB_IMPORT_ONNX_PARAMWRITER_H
