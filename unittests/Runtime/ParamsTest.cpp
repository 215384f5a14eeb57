//===- ParamsTest.cpp - Tests for the parameter-file reader -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for dist_rt_params_* and dist_rt_status_*. Parameter files
// are written by a small writer in this file, following the layout in
// dist_rt/param_format.h, into a fresh temporary directory per test. Each
// corruption test patches one field of a valid file and checks the status
// code and that the message names the file.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/dist_rt.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

extern "C" int dist_rt_test_c_header_smoke(void);

namespace {

//===----------------------------------------------------------------------===//
// RAII wrappers
//===----------------------------------------------------------------------===//

struct StatusDeleter {
  void operator()(dist_rt_status *status) const { dist_rt_status_free(status); }
};
/// Owns a status; empty means success.
using StatusPtr = std::unique_ptr<dist_rt_status, StatusDeleter>;

struct ParamsDeleter {
  void operator()(dist_rt_params *params) const {
    dist_rt_params_release(params);
  }
};
/// Owns one reference to a parameter handle.
using ParamsPtr = std::unique_ptr<dist_rt_params, ParamsDeleter>;

/// Succeeds when `haystack` contains `needle`.
::testing::AssertionResult contains(const std::string &haystack,
                                    const std::string &needle) {
  if (haystack.find(needle) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << haystack << "' does not contain '" << needle << "'";
}

//===----------------------------------------------------------------------===//
// Test file writer
//===----------------------------------------------------------------------===//

/// One parameter to write.
struct TestParam {
  std::string name;
  uint32_t dtype;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

/// Byte offsets of the fields of one index entry in a written file.
struct EntryLayout {
  size_t nameLenAt;
  size_t dtypeAt;
  size_t rankAt;
  size_t dimsAt;
  size_t dataOffsetAt;
  size_t nbytesAt;
  uint64_t dataOffset;
};

/// A file image plus where its fields are, so tests can corrupt them.
struct ParamFileImage {
  std::vector<uint8_t> bytes;
  std::vector<EntryLayout> entries;
  static constexpr size_t countAt = 8;
  static constexpr size_t indexOffsetAt = 16;
  static constexpr size_t fileSizeAt = 24;
};

void putLE32(std::vector<uint8_t> &bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    bytes.at(at + i) = static_cast<uint8_t>(value >> (8 * i));
}

void putLE64(std::vector<uint8_t> &bytes, size_t at, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    bytes.at(at + i) = static_cast<uint8_t>(value >> (8 * i));
}

size_t appendLE32(std::vector<uint8_t> &bytes, uint32_t value) {
  size_t at = bytes.size();
  bytes.resize(at + 4);
  putLE32(bytes, at, value);
  return at;
}

size_t appendLE64(std::vector<uint8_t> &bytes, uint64_t value) {
  size_t at = bytes.size();
  bytes.resize(at + 8);
  putLE64(bytes, at, value);
  return at;
}

/// Serializes `params` following param_format.h: header, aligned blobs,
/// then the index. Does not check that the params are consistent, so tests
/// can write bad files.
ParamFileImage writeImage(const std::vector<TestParam> &params) {
  ParamFileImage image;
  std::vector<uint8_t> &bytes = image.bytes;
  bytes.assign(DIST_RT_PARAM_HEADER_SIZE, 0);
  std::memcpy(bytes.data(), DIST_RT_PARAM_MAGIC, DIST_RT_PARAM_MAGIC_SIZE);

  std::vector<uint64_t> dataOffsets;
  for (const TestParam &param : params) {
    bytes.resize((bytes.size() + DIST_RT_PARAM_ALIGNMENT - 1) /
                 DIST_RT_PARAM_ALIGNMENT * DIST_RT_PARAM_ALIGNMENT);
    dataOffsets.push_back(bytes.size());
    bytes.insert(bytes.end(), param.data.begin(), param.data.end());
  }

  uint64_t indexOffset = bytes.size();
  for (size_t i = 0; i < params.size(); ++i) {
    const TestParam &param = params[i];
    EntryLayout entry;
    entry.nameLenAt = appendLE32(bytes, param.name.size());
    bytes.insert(bytes.end(), param.name.begin(), param.name.end());
    entry.dtypeAt = appendLE32(bytes, param.dtype);
    entry.rankAt = appendLE32(bytes, param.dims.size());
    entry.dimsAt = bytes.size();
    for (int64_t dim : param.dims)
      appendLE64(bytes, static_cast<uint64_t>(dim));
    entry.dataOffsetAt = appendLE64(bytes, dataOffsets[i]);
    entry.nbytesAt = appendLE64(bytes, param.data.size());
    entry.dataOffset = dataOffsets[i];
    image.entries.push_back(entry);
  }

  putLE64(bytes, ParamFileImage::countAt, params.size());
  putLE64(bytes, ParamFileImage::indexOffsetAt, indexOffset);
  putLE64(bytes, ParamFileImage::fileSizeAt, bytes.size());
  return image;
}

template <typename T>
std::vector<uint8_t> toBytes(const std::vector<T> &values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty())
    std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// Three parameters of different dtypes and ranks, including a scalar.
std::vector<TestParam> sampleParams() {
  return {
      {"fc1.weight",
       DIST_RT_DTYPE_FLOAT,
       {2, 3},
       toBytes<float>({1.f, 2.f, 3.f, 4.f, 5.f, 6.f})},
      {"embed.ids",
       DIST_RT_DTYPE_INT64,
       {4},
       toBytes<int64_t>({10, -20, 30, -40})},
      {"scale", DIST_RT_DTYPE_DOUBLE, {}, toBytes<double>({0.125})},
  };
}

//===----------------------------------------------------------------------===//
// Fixture
//===----------------------------------------------------------------------===//

class ParamsTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir();
    if (pattern.empty() || pattern.back() != '/')
      pattern += '/';
    pattern += "dist_rt_params_XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    ASSERT_NE(mkdtemp(buffer.data()), nullptr) << "mkdtemp " << pattern;
    tempDir = buffer.data();
  }

  void TearDown() override {
    for (const std::string &file : files)
      std::remove(file.c_str());
    if (!tempDir.empty())
      rmdir(tempDir.c_str());
  }

  /// Returns a path named `name` in this test's temporary directory.
  std::string pathFor(const std::string &name) {
    std::string path = tempDir + "/" + name;
    files.push_back(path);
    return path;
  }

  /// Writes `bytes` to a fresh file and returns its path.
  std::string writeFile(const std::vector<uint8_t> &bytes,
                        const std::string &name = "model.params") {
    std::string path = pathFor(name);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(out.good()) << "cannot write " << path;
    return path;
  }

  /// Opens `path`, expecting success.
  ParamsPtr openOrFail(const std::string &path) {
    dist_rt_params_t params = nullptr;
    StatusPtr status(dist_rt_params_open(path.c_str(), &params));
    EXPECT_EQ(status, nullptr) << dist_rt_status_message(status.get());
    return ParamsPtr(params);
  }

  /// Writes `bytes`, opens the file expecting failure with `code`, and checks
  /// that the message names the file and contains `expected`. Returns the
  /// message.
  std::string expectOpenError(const std::vector<uint8_t> &bytes,
                              dist_rt_status_code_t code,
                              const std::string &expected) {
    std::string path = writeFile(bytes);
    dist_rt_params_t params = reinterpret_cast<dist_rt_params_t>(0x1);
    StatusPtr status(dist_rt_params_open(path.c_str(), &params));
    EXPECT_EQ(params, nullptr);
    EXPECT_NE(status, nullptr);
    if (!status)
      return {};
    std::string message = dist_rt_status_message(status.get());
    EXPECT_EQ(dist_rt_status_code(status.get()), code) << message;
    EXPECT_TRUE(contains(message, path));
    EXPECT_TRUE(contains(message, expected));
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }

  std::string tempDir;
  std::vector<std::string> files;
};

/// Checks `info` against the parameter it was written from.
void expectMatches(const dist_rt_param_info_t &info, const TestParam &param) {
  ASSERT_NE(info.name, nullptr);
  EXPECT_EQ(std::string(info.name), param.name);
  EXPECT_EQ(info.name_len, param.name.size());
  EXPECT_EQ(info.dtype, param.dtype);
  ASSERT_EQ(info.rank, param.dims.size());
  if (param.dims.empty()) {
    EXPECT_EQ(info.dims, nullptr);
  } else {
    ASSERT_NE(info.dims, nullptr);
    EXPECT_EQ(std::vector<int64_t>(info.dims, info.dims + info.rank),
              param.dims);
  }
  ASSERT_EQ(info.nbytes, param.data.size());
  ASSERT_NE(info.data, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(info.data) % DIST_RT_PARAM_ALIGNMENT,
            0u);
  if (!param.data.empty()) {
    EXPECT_EQ(std::memcmp(info.data, param.data.data(), param.data.size()), 0);
  }
}

//===----------------------------------------------------------------------===//
// Valid files
//===----------------------------------------------------------------------===//

TEST_F(ParamsTest, OpensValidFile) {
  std::vector<TestParam> expected = sampleParams();
  ParamsPtr params = openOrFail(writeFile(writeImage(expected).bytes));
  ASSERT_NE(params, nullptr);
  ASSERT_EQ(dist_rt_params_count(params.get()), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    dist_rt_param_info_t info;
    StatusPtr status(dist_rt_params_get(params.get(), i, &info));
    ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
    expectMatches(info, expected[i]);
  }

  // Spot-check typed access to the mapped data.
  dist_rt_param_info_t weight;
  ASSERT_EQ(dist_rt_params_get(params.get(), 0, &weight), nullptr);
  EXPECT_EQ(static_cast<const float *>(weight.data)[5], 6.f);
  dist_rt_param_info_t scale;
  ASSERT_EQ(dist_rt_params_get(params.get(), 2, &scale), nullptr);
  EXPECT_EQ(scale.rank, 0u);
  EXPECT_EQ(*static_cast<const double *>(scale.data), 0.125);
}

TEST_F(ParamsTest, FindMatchesGet) {
  std::vector<TestParam> expected = sampleParams();
  ParamsPtr params = openOrFail(writeFile(writeImage(expected).bytes));
  ASSERT_NE(params, nullptr);
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    dist_rt_param_info_t found;
    StatusPtr status(
        dist_rt_params_find(params.get(), expected[i].name.c_str(), &found));
    ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
    expectMatches(found, expected[i]);
    dist_rt_param_info_t byIndex;
    ASSERT_EQ(dist_rt_params_get(params.get(), i, &byIndex), nullptr);
    EXPECT_EQ(found.name, byIndex.name);
    EXPECT_EQ(found.data, byIndex.data);
    EXPECT_EQ(found.dims, byIndex.dims);
  }
}

TEST_F(ParamsTest, FindMissingNameIsNotFound) {
  std::string path = writeFile(writeImage(sampleParams()).bytes);
  ParamsPtr params = openOrFail(path);
  ASSERT_NE(params, nullptr);
  dist_rt_param_info_t info;
  std::memset(&info, 0xff, sizeof(info));
  StatusPtr status(dist_rt_params_find(params.get(), "fc2.weight", &info));
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(dist_rt_status_code(status.get()), DIST_RT_ERROR_NOT_FOUND);
  std::string message = dist_rt_status_message(status.get());
  EXPECT_TRUE(contains(message, path));
  EXPECT_TRUE(contains(message, "'fc2.weight'"));
  EXPECT_EQ(info.name, nullptr);
  EXPECT_EQ(info.data, nullptr);
  // A prefix of an existing name must not match.
  StatusPtr prefix(dist_rt_params_find(params.get(), "fc1", &info));
  EXPECT_EQ(dist_rt_status_code(prefix.get()), DIST_RT_ERROR_NOT_FOUND);
}

TEST_F(ParamsTest, GetOutOfRangeIsInvalidArgument) {
  std::string path = writeFile(writeImage(sampleParams()).bytes);
  ParamsPtr params = openOrFail(path);
  ASSERT_NE(params, nullptr);
  dist_rt_param_info_t info;
  StatusPtr status(dist_rt_params_get(params.get(), 3, &info));
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(dist_rt_status_code(status.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  std::string message = dist_rt_status_message(status.get());
  EXPECT_TRUE(contains(message, path));
  EXPECT_TRUE(contains(message, "index 3"));
}

TEST_F(ParamsTest, OpensFileWithoutParameters) {
  ParamsPtr params = openOrFail(writeFile(writeImage({}).bytes));
  ASSERT_NE(params, nullptr);
  EXPECT_EQ(dist_rt_params_count(params.get()), 0u);
  dist_rt_param_info_t info;
  StatusPtr status(dist_rt_params_find(params.get(), "x", &info));
  EXPECT_EQ(dist_rt_status_code(status.get()), DIST_RT_ERROR_NOT_FOUND);
}

TEST_F(ParamsTest, OpensZeroElementAndNarrowTensors) {
  std::vector<TestParam> expected = {
      {"empty", DIST_RT_DTYPE_FLOAT, {3, 0, 2}, {}},
      {"mask", DIST_RT_DTYPE_BOOL, {3}, {1, 0, 1}},
      {"half", DIST_RT_DTYPE_FLOAT16, {1, 1, 3}, {0, 60, 0, 64, 0, 66}},
  };
  ParamsPtr params = openOrFail(writeFile(writeImage(expected).bytes));
  ASSERT_NE(params, nullptr);
  ASSERT_EQ(dist_rt_params_count(params.get()), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    dist_rt_param_info_t info;
    ASSERT_EQ(dist_rt_params_get(params.get(), i, &info), nullptr);
    expectMatches(info, expected[i]);
  }
}

TEST_F(ParamsTest, RetainKeepsHandleAlive) {
  ParamsPtr params = openOrFail(writeFile(writeImage(sampleParams()).bytes));
  ASSERT_NE(params, nullptr);
  dist_rt_params_t extra = params.get();
  dist_rt_params_retain(extra);
  params.reset();
  dist_rt_param_info_t info;
  StatusPtr status(dist_rt_params_find(extra, "scale", &info));
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  EXPECT_EQ(*static_cast<const double *>(info.data), 0.125);
  dist_rt_params_release(extra);
  // NULL is accepted and ignored.
  dist_rt_params_retain(nullptr);
  dist_rt_params_release(nullptr);
}

TEST_F(ParamsTest, HandleIsSharedAcrossThreads) {
  std::vector<TestParam> expected = sampleParams();
  ParamsPtr params = openOrFail(writeFile(writeImage(expected).bytes));
  ASSERT_NE(params, nullptr);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    dist_rt_params_retain(params.get());
    threads.emplace_back([&failures, &expected, handle = params.get()] {
      for (int iteration = 0; iteration < 1000; ++iteration) {
        const TestParam &param = expected[iteration % expected.size()];
        dist_rt_param_info_t info;
        dist_rt_status_t status =
            dist_rt_params_find(handle, param.name.c_str(), &info);
        if (status || info.nbytes != param.data.size())
          ++failures;
        dist_rt_status_free(status);
      }
      dist_rt_params_release(handle);
    });
  }
  params.reset();
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
}

//===----------------------------------------------------------------------===//
// API misuse and helpers
//===----------------------------------------------------------------------===//

TEST(ParamsApiTest, RejectsNullArguments) {
  dist_rt_params_t params = nullptr;
  StatusPtr noPath(dist_rt_params_open(nullptr, &params));
  EXPECT_EQ(dist_rt_status_code(noPath.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(params, nullptr);
  StatusPtr noOut(dist_rt_params_open("model.params", nullptr));
  EXPECT_EQ(dist_rt_status_code(noOut.get()), DIST_RT_ERROR_INVALID_ARGUMENT);

  dist_rt_param_info_t info;
  StatusPtr getNull(dist_rt_params_get(nullptr, 0, &info));
  EXPECT_EQ(dist_rt_status_code(getNull.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  StatusPtr findNull(dist_rt_params_find(nullptr, "x", &info));
  EXPECT_EQ(dist_rt_status_code(findNull.get()),
            DIST_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(dist_rt_params_count(nullptr), 0u);
}

TEST_F(ParamsTest, RejectsNullNameAndOutput) {
  std::string path = writeFile(writeImage(sampleParams()).bytes);
  ParamsPtr params = openOrFail(path);
  ASSERT_NE(params, nullptr);
  dist_rt_param_info_t info;
  StatusPtr noName(dist_rt_params_find(params.get(), nullptr, &info));
  EXPECT_EQ(dist_rt_status_code(noName.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(dist_rt_status_message(noName.get()), path));
  StatusPtr noOut(dist_rt_params_find(params.get(), "scale", nullptr));
  EXPECT_EQ(dist_rt_status_code(noOut.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  StatusPtr noGetOut(dist_rt_params_get(params.get(), 0, nullptr));
  EXPECT_EQ(dist_rt_status_code(noGetOut.get()),
            DIST_RT_ERROR_INVALID_ARGUMENT);
}

TEST(StatusTest, NullStatusMeansSuccess) {
  EXPECT_EQ(dist_rt_status_code(nullptr), DIST_RT_OK);
  EXPECT_STREQ(dist_rt_status_message(nullptr), "ok");
  dist_rt_status_free(nullptr);
}

TEST(DtypeTest, ElementSizes) {
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_FLOAT), 4u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_UINT8), 1u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_INT8), 1u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_UINT16), 2u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_INT16), 2u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_INT32), 4u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_INT64), 8u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_BOOL), 1u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_FLOAT16), 2u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_DOUBLE), 8u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_UINT32), 4u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_UINT64), 8u);
  EXPECT_EQ(dist_rt_dtype_size(DIST_RT_DTYPE_BFLOAT16), 2u);
  // UNDEFINED, STRING and codes past the table are unknown.
  EXPECT_EQ(dist_rt_dtype_size(0), 0u);
  EXPECT_EQ(dist_rt_dtype_size(8), 0u);
  EXPECT_EQ(dist_rt_dtype_size(99), 0u);
}

TEST(CHeaderTest, CompilesAsC) { EXPECT_EQ(dist_rt_test_c_header_smoke(), 0); }

//===----------------------------------------------------------------------===//
// Corrupt files
//===----------------------------------------------------------------------===//

TEST_F(ParamsTest, MissingFileIsIoError) {
  std::string path = pathFor("does-not-exist.params");
  dist_rt_params_t params = nullptr;
  StatusPtr status(dist_rt_params_open(path.c_str(), &params));
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(params, nullptr);
  EXPECT_EQ(dist_rt_status_code(status.get()), DIST_RT_ERROR_IO);
  std::string message = dist_rt_status_message(status.get());
  EXPECT_TRUE(contains(message, path));
  EXPECT_TRUE(contains(message, "cannot open"));
}

TEST_F(ParamsTest, DirectoryIsIoError) {
  dist_rt_params_t params = nullptr;
  StatusPtr status(dist_rt_params_open(tempDir.c_str(), &params));
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(dist_rt_status_code(status.get()), DIST_RT_ERROR_IO);
  EXPECT_TRUE(contains(dist_rt_status_message(status.get()), tempDir));
}

TEST_F(ParamsTest, EmptyFile) {
  expectOpenError({}, DIST_RT_ERROR_FORMAT, "file is empty");
}

TEST_F(ParamsTest, TruncatedHeader) {
  std::vector<uint8_t> bytes = writeImage(sampleParams()).bytes;
  bytes.resize(20);
  expectOpenError(bytes, DIST_RT_ERROR_FORMAT,
                  "too small for the header (20 bytes, need 32)");
}

TEST_F(ParamsTest, BadMagic) {
  std::vector<uint8_t> bytes = writeImage(sampleParams()).bytes;
  std::memcpy(bytes.data(), "ONNXPRM1", 8);
  expectOpenError(bytes, DIST_RT_ERROR_FORMAT, "bad magic 'ONNXPRM1'");
}

TEST_F(ParamsTest, TruncatedFile) {
  std::vector<uint8_t> bytes = writeImage(sampleParams()).bytes;
  size_t fullSize = bytes.size();
  bytes.pop_back();
  expectOpenError(bytes, DIST_RT_ERROR_FORMAT,
                  "records a file size of " + std::to_string(fullSize));
}

TEST_F(ParamsTest, IndexOffsetBeyondFile) {
  ParamFileImage image = writeImage(sampleParams());
  putLE64(image.bytes, ParamFileImage::indexOffsetAt, image.bytes.size() + 8);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "index offset " + std::to_string(image.bytes.size() + 8) +
                      " lies outside the file");
}

TEST_F(ParamsTest, IndexOffsetInsideHeader) {
  ParamFileImage image = writeImage(sampleParams());
  putLE64(image.bytes, ParamFileImage::indexOffsetAt, 16);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "index offset 16 overlaps the header");
}

TEST_F(ParamsTest, CountTooLargeForIndex) {
  ParamFileImage image = writeImage(sampleParams());
  putLE64(image.bytes, ParamFileImage::countAt, uint64_t{1} << 60);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "declares 1152921504606846976 parameters");
}

TEST_F(ParamsTest, TruncatedIndexEntry) {
  ParamFileImage image = writeImage(sampleParams());
  putLE32(image.bytes, image.entries[2].nameLenAt, 1000);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 2: index is truncated: name needs 1000 bytes");
}

TEST_F(ParamsTest, CountSmallerThanIndex) {
  ParamFileImage image = writeImage(sampleParams());
  putLE64(image.bytes, ParamFileImage::countAt, 2);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "unexpected bytes after the last of the 2 index entries");
}

TEST_F(ParamsTest, DataOffsetOutsideFile) {
  ParamFileImage image = writeImage(sampleParams());
  uint64_t offset = 4096;
  putLE64(image.bytes, image.entries[1].dataOffsetAt, offset);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 1 ('embed.ids'): data [4096, 4128) lies outside the "
                  "file (size " +
                      std::to_string(image.bytes.size()) + ")");
}

TEST_F(ParamsTest, DataOffsetOverflows) {
  ParamFileImage image = writeImage(sampleParams());
  // offset + nbytes wraps around 2^64.
  putLE64(image.bytes, image.entries[1].dataOffsetAt, UINT64_MAX - 7);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 1 ('embed.ids'): data at offset "
                  "18446744073709551608 (32 bytes) lies outside the file");
}

TEST_F(ParamsTest, DataOverlapsIndex) {
  ParamFileImage image = writeImage(sampleParams());
  // The scalar's blob is the last one; moving it one alignment step up puts
  // it on top of the index.
  uint64_t offset = image.entries[2].dataOffset + DIST_RT_PARAM_ALIGNMENT;
  putLE64(image.bytes, image.entries[2].dataOffsetAt, offset);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 2 ('scale'): data [" + std::to_string(offset) + ", " +
                      std::to_string(offset + 8) + ") overlaps the index");
}

TEST_F(ParamsTest, DataOffsetInsideHeader) {
  ParamFileImage image = writeImage(sampleParams());
  putLE64(image.bytes, image.entries[0].dataOffsetAt, 0);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 0 ('fc1.weight'): data offset 0 overlaps the header");
}

TEST_F(ParamsTest, MisalignedDataOffset) {
  ParamFileImage image = writeImage(sampleParams());
  uint64_t offset = image.entries[0].dataOffset + 4;
  putLE64(image.bytes, image.entries[0].dataOffsetAt, offset);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 0 ('fc1.weight'): data offset " +
                      std::to_string(offset) + " is not aligned to 64 bytes");
}

TEST_F(ParamsTest, NbytesMismatchWithDims) {
  ParamFileImage image = writeImage(sampleParams());
  putLE64(image.bytes, image.entries[0].nbytesAt, 20);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 0 ('fc1.weight'): nbytes is 20 but the dims and "
                  "dtype 1 need 24");
}

TEST_F(ParamsTest, UnknownDtype) {
  ParamFileImage image = writeImage(sampleParams());
  putLE32(image.bytes, image.entries[1].dtypeAt, 99);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 1 ('embed.ids'): unknown dtype 99");
}

TEST_F(ParamsTest, RankTooLarge) {
  ParamFileImage image = writeImage(sampleParams());
  putLE32(image.bytes, image.entries[2].rankAt, DIST_RT_PARAM_MAX_RANK + 1);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 2 ('scale'): rank 17 exceeds the maximum of 16");
}

TEST_F(ParamsTest, NegativeDim) {
  ParamFileImage image = writeImage(sampleParams());
  putLE64(image.bytes, image.entries[0].dimsAt + 8, static_cast<uint64_t>(-3));
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 0 ('fc1.weight'): dim 1 is negative (-3)");
}

TEST_F(ParamsTest, DimsProductOverflows) {
  ParamFileImage image = writeImage(sampleParams());
  putLE64(image.bytes, image.entries[0].dimsAt, uint64_t{1} << 40);
  putLE64(image.bytes, image.entries[0].dimsAt + 8, uint64_t{1} << 40);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 0 ('fc1.weight'): the byte size of the dims "
                  "overflows 64 bits");
}

TEST_F(ParamsTest, ElementSizeProductOverflows) {
  // 2^62 elements still fit in 64 bits, but 2^62 floats take 2^64 bytes.
  ParamFileImage image = writeImage(
      {{"big", DIST_RT_DTYPE_FLOAT, {int64_t{1} << 31, int64_t{1} << 31}, {}}});
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 0 ('big'): the byte size of the dims overflows 64 "
                  "bits");
}

TEST_F(ParamsTest, DuplicateNames) {
  std::vector<TestParam> params = sampleParams();
  params.push_back({"embed.ids", DIST_RT_DTYPE_UINT8, {2}, {7, 8}});
  expectOpenError(writeImage(params).bytes, DIST_RT_ERROR_FORMAT,
                  "entries 1 and 3 have the same name 'embed.ids'");
}

TEST_F(ParamsTest, NameWithNulByte) {
  std::vector<TestParam> params = sampleParams();
  params[1].name = std::string("embed\0ids", 9);
  expectOpenError(writeImage(params).bytes, DIST_RT_ERROR_FORMAT,
                  "entry 1 ('embed\\x00ids'): name contains a NUL byte");
}

TEST_F(ParamsTest, NameWithControlCharactersStaysOnOneLine) {
  std::vector<TestParam> params = sampleParams();
  params[0].name = "line\nbreak";
  ParamFileImage image = writeImage(params);
  putLE32(image.bytes, image.entries[0].dtypeAt, 99);
  expectOpenError(image.bytes, DIST_RT_ERROR_FORMAT,
                  "entry 0 ('line\\x0abreak'): unknown dtype 99");
}

} // namespace
