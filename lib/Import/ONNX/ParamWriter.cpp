//===- ParamWriter.cpp - writes dist-opt parameter files ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Implementation of ParamWriter: data blobs first (aligned), index last, the
// header patched at the end, then an atomic rename into place.
//
//===----------------------------------------------------------------------===//

#include "ParamWriter.h"

#include "dist_rt/param_format.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

using namespace mlir::dist;

static_assert(sizeof(uint64_t) == 8, "64-bit sizes expected");

namespace {
/// Little-endian serialisation (the only byte order this project targets;
/// checked below).
template <typename T>
void appendLE(std::string &out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

std::string ioError(const std::string &path, const char *what) {
  return path + ": " + what + ": " + std::strerror(errno);
}
} // namespace

ParamWriter::~ParamWriter() { abort(); }

std::string ParamWriter::open(llvm::StringRef target) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
                "parameter files are little-endian");
  path = target.str();
  tmpPath = path + ".tmp-" + std::to_string(::getpid());
  file = std::fopen(tmpPath.c_str(), "wb");
  if (!file)
    return ioError(tmpPath, "cannot create parameter file");
  char header[DIST_RT_PARAM_HEADER_SIZE] = {};
  std::memcpy(header, DIST_RT_PARAM_MAGIC, DIST_RT_PARAM_MAGIC_SIZE);
  if (std::fwrite(header, 1, sizeof(header), file) != sizeof(header))
    return ioError(tmpPath, "cannot write parameter file");
  offset = DIST_RT_PARAM_HEADER_SIZE;
  return "";
}

std::string ParamWriter::add(llvm::StringRef name, uint32_t dtype,
                             llvm::ArrayRef<int64_t> dims,
                             llvm::ArrayRef<char> data) {
  if (!file)
    return "parameter file is not open";
  if (!names.insert(name).second)
    return "duplicate parameter name '" + name.str() + "'";
  uint64_t aligned = (offset + DIST_RT_PARAM_ALIGNMENT - 1) /
                     DIST_RT_PARAM_ALIGNMENT * DIST_RT_PARAM_ALIGNMENT;
  static const char zeros[DIST_RT_PARAM_ALIGNMENT] = {};
  if (aligned != offset &&
      std::fwrite(zeros, 1, aligned - offset, file) != aligned - offset)
    return ioError(tmpPath, "cannot write parameter file");
  if (!data.empty() &&
      std::fwrite(data.data(), 1, data.size(), file) != data.size())
    return ioError(tmpPath, "cannot write parameter file");
  entries.push_back({name.str(), dtype, dims.vec(), aligned, data.size()});
  offset = aligned + data.size();
  dataBytes += data.size();
  return "";
}

std::string ParamWriter::commit() {
  std::string err = finish();
  if (!err.empty())
    return err;
  if (std::rename(tmpPath.c_str(), path.c_str()) != 0) {
    err = ioError(path, "cannot move parameter file into place");
    std::remove(tmpPath.c_str());
    return err;
  }
  return "";
}

std::string ParamWriter::finish() {
  if (!file)
    return "parameter file is not open";
  std::string index;
  for (const Entry &e : entries) {
    appendLE<uint32_t>(index, static_cast<uint32_t>(e.name.size()));
    index += e.name;
    appendLE<uint32_t>(index, e.dtype);
    appendLE<uint32_t>(index, static_cast<uint32_t>(e.dims.size()));
    for (int64_t d : e.dims)
      appendLE<int64_t>(index, d);
    appendLE<uint64_t>(index, e.offset);
    appendLE<uint64_t>(index, e.nbytes);
  }
  uint64_t indexOffset = offset;
  uint64_t fileSize = indexOffset + index.size();
  std::string header;
  header.append(DIST_RT_PARAM_MAGIC, DIST_RT_PARAM_MAGIC_SIZE);
  appendLE<uint64_t>(header, entries.size());
  appendLE<uint64_t>(header, indexOffset);
  appendLE<uint64_t>(header, fileSize);
  bool ok =
      std::fwrite(index.data(), 1, index.size(), file) == index.size() &&
      std::fseek(file, 0, SEEK_SET) == 0 &&
      std::fwrite(header.data(), 1, header.size(), file) == header.size() &&
      std::fflush(file) == 0;
  if (!ok) {
    std::string err = ioError(tmpPath, "cannot write parameter file");
    abort();
    return err;
  }
  std::fclose(file);
  file = nullptr;
  return "";
}

void ParamWriter::abort() {
  if (!file)
    return;
  std::fclose(file);
  file = nullptr;
  std::remove(tmpPath.c_str());
}
