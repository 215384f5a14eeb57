//===- RuntimeTestUtils.h - Helpers for the runtime unit tests --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Small helpers shared by the runtime's GoogleTest files: an owning wrapper
// for statuses and models, a substring assertion, a temporary directory
// that removes itself (with the runtime's internal removeTree), a
// parameter-file writer following dist_rt/param_format.h, builders for MLIR
// memref descriptors as compiled entry functions see them, and an
// in-process runner for dist_rt_main.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_UNITTESTS_RUNTIME_RUNTIMETESTUTILS_H
#define DIST_UNITTESTS_RUNTIME_RUNTIMETESTUTILS_H

#include "dist_rt/dist_rt.h"
#include "dist_rt/model.h"

#include "driver.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace dist_rt_test {

struct StatusDeleter {
  void operator()(dist_rt_status *status) const { dist_rt_status_free(status); }
};
/// Owns a status; empty means success.
using StatusPtr = std::unique_ptr<dist_rt_status, StatusDeleter>;

struct ModelDeleter {
  void operator()(dist_rt_model *model) const { dist_rt_model_destroy(model); }
};
/// Owns a model.
using ModelPtr = std::unique_ptr<dist_rt_model, ModelDeleter>;

/// Succeeds when `haystack` contains `needle`.
inline ::testing::AssertionResult contains(const std::string &haystack,
                                           const std::string &needle) {
  if (haystack.find(needle) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << haystack << "' does not contain '" << needle << "'";
}

// The runtime's own helpers (runtime/lib/driver.h): remove a tree, list a
// directory.
using dist_rt::driver::listDirectory;
using dist_rt::driver::removeTree;

/// A fresh temporary directory, removed with its contents on destruction.
class TempDir {
public:
  TempDir() {
    std::string pattern = ::testing::TempDir();
    if (pattern.empty() || pattern.back() != '/')
      pattern += '/';
    pattern += "dist_rt_test_XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()))
      dir = buffer.data();
    EXPECT_FALSE(dir.empty()) << "mkdtemp " << pattern;
  }
  ~TempDir() {
    if (!dir.empty())
      removeTree(dir);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return dir; }
  /// Returns the path of `name` inside the directory.
  std::string file(const std::string &name) const { return dir + "/" + name; }

private:
  std::string dir;
};

/// Writes `bytes` to `path`, replacing it.
inline bool writeBytes(const std::string &path,
                       const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return out.good();
}

/// Reads the whole file at `path` ("" if it cannot be read).
inline std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in),
                              std::istreambuf_iterator<char>());
}

template <typename T>
std::vector<uint8_t> toBytes(const std::vector<T> &values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty())
    std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

//===----------------------------------------------------------------------===//
// Parameter files
//===----------------------------------------------------------------------===//

/// One parameter of a test parameter file.
struct TestParam {
  std::string name;
  uint32_t dtype;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

/// Serializes `params` following dist_rt/param_format.h (little-endian
/// host assumed).
inline std::vector<uint8_t>
paramFileImage(const std::vector<TestParam> &params) {
  std::vector<uint8_t> bytes(DIST_RT_PARAM_HEADER_SIZE, 0);
  std::memcpy(bytes.data(), DIST_RT_PARAM_MAGIC, DIST_RT_PARAM_MAGIC_SIZE);
  auto append = [&bytes](const void *data, size_t size) {
    const auto *begin = static_cast<const uint8_t *>(data);
    bytes.insert(bytes.end(), begin, begin + size);
  };
  auto put64 = [&bytes](size_t at, uint64_t value) {
    std::memcpy(bytes.data() + at, &value, 8);
  };
  std::vector<uint64_t> offsets;
  for (const TestParam &param : params) {
    bytes.resize((bytes.size() + DIST_RT_PARAM_ALIGNMENT - 1) /
                 DIST_RT_PARAM_ALIGNMENT * DIST_RT_PARAM_ALIGNMENT);
    offsets.push_back(bytes.size());
    append(param.data.data(), param.data.size());
  }
  uint64_t indexOffset = bytes.size();
  for (size_t i = 0; i < params.size(); ++i) {
    const TestParam &param = params[i];
    auto nameLen = static_cast<uint32_t>(param.name.size());
    auto rank = static_cast<uint32_t>(param.dims.size());
    uint64_t nbytes = param.data.size();
    append(&nameLen, 4);
    append(param.name.data(), param.name.size());
    append(&param.dtype, 4);
    append(&rank, 4);
    for (int64_t dim : param.dims)
      append(&dim, 8);
    append(&offsets[i], 8);
    append(&nbytes, 8);
  }
  put64(8, params.size());
  put64(16, indexOffset);
  put64(24, bytes.size());
  return bytes;
}

//===----------------------------------------------------------------------===//
// Memref descriptors
//===----------------------------------------------------------------------===//

/// Builds the words of a ranked memref descriptor.
inline std::vector<int64_t> memrefWords(const void *allocated,
                                        const void *aligned, int64_t offset,
                                        const std::vector<int64_t> &sizes,
                                        const std::vector<int64_t> &strides) {
  std::vector<int64_t> words;
  words.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(allocated)));
  words.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(aligned)));
  words.push_back(offset);
  words.insert(words.end(), sizes.begin(), sizes.end());
  words.insert(words.end(), strides.begin(), strides.end());
  return words;
}

/// A ranked memref descriptor as generated code sees it.
template <int Rank>
struct MemrefDesc {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};

/// Appends output descriptors to the result buffer of an entry function.
struct OutputWriter {
  int64_t *next;

  void put(const void *allocated, const void *aligned, int64_t offset,
           std::vector<int64_t> sizes, std::vector<int64_t> strides) {
    for (int64_t word : memrefWords(allocated, aligned, offset, sizes, strides))
      *next++ = word;
  }
};

/// MLIR's unranked memref: { rank, pointer to a ranked descriptor }.
struct UnrankedMemref {
  int64_t rank;
  void *descriptor;
};

/// Returns a pointer as the int64_t that generated code passes.
inline int64_t asInt(const void *ptr) {
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(ptr));
}

//===----------------------------------------------------------------------===//
// dist_rt_main
//===----------------------------------------------------------------------===//

/// What one dist_rt_main call did.
struct MainResult {
  int exitCode;
  std::string out;
  std::string err;
};

/// Calls dist_rt_main with argv = {desc.name, args...}, capturing stdout and
/// stderr.
inline MainResult runMain(const std::vector<std::string> &args,
                          const dist_rt_model_desc_t &desc) {
  std::vector<std::string> storage = {desc.name};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &arg : storage)
    argv.push_back(&arg[0]);
  argv.push_back(nullptr);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int exitCode =
      dist_rt_main(static_cast<int>(storage.size()), argv.data(), &desc);
  MainResult result;
  result.err = ::testing::internal::GetCapturedStderr();
  result.out = ::testing::internal::GetCapturedStdout();
  result.exitCode = exitCode;
  return result;
}

/// Succeeds when `result` is a failure (exit code 1) reported as exactly one
/// line "error: ..." on stderr that contains `expected`.
inline ::testing::AssertionResult failedWith(const MainResult &result,
                                             const std::string &expected) {
  bool oneLine = result.err.compare(0, 7, "error: ") == 0 &&
                 result.err.find('\n') == result.err.size() - 1;
  if (result.exitCode == 1 && oneLine &&
      result.err.find(expected) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "exit code " << result.exitCode << ", stderr '" << result.err
         << "' (expected one error line containing '" << expected << "')";
}

} // namespace dist_rt_test

#endif // DIST_UNITTESTS_RUNTIME_RUNTIMETESTUTILS_H
