//===- NpyTest.cpp - Tests for the .npy reader and writer -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for dist_rt_npy_*: round trips for every supported dtype
// and for scalar, vector and empty shapes, hand-made files in the variants
// NumPy writes (versions 1.0 to 3.0, either quote style), and one test per
// malformed-file error, each checking the status code, that the message
// names the file, and that it stays on one line. Write tests check that a
// failed write leaves no file behind.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/npy.h"

#include "RuntimeTestUtils.h"
#include "internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace dist_rt_test;

namespace {

/// Builds a .npy image with format version `major`.0, the given header
/// text (used verbatim, no padding added) and data bytes.
std::vector<uint8_t> npyImage(unsigned major, const std::string &header,
                              const std::vector<uint8_t> &data) {
  std::vector<uint8_t> bytes = {
      0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  size_t lengthSize = major == 1 ? 2 : 4;
  for (size_t i = 0; i < lengthSize; ++i)
    bytes.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

/// `count` bytes with a recognizable pattern.
std::vector<uint8_t> patternBytes(size_t count) {
  std::vector<uint8_t> bytes(count);
  for (size_t i = 0; i < count; ++i)
    bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  return bytes;
}

/// Owns an array read by dist_rt_npy_read.
struct ArrayHolder {
  dist_rt_npy_array_t array;
  ArrayHolder() { std::memset(&array, 0, sizeof(array)); }
  ~ArrayHolder() { dist_rt_npy_free(&array); }
};

class NpyTest : public ::testing::Test {
protected:
  /// Writes `bytes` to a file named `name` and returns its path.
  std::string writeFile(const std::vector<uint8_t> &bytes,
                        const std::string &name = "array.npy") {
    std::string path = dir.file(name);
    EXPECT_TRUE(writeBytes(path, bytes)) << path;
    return path;
  }

  /// Reads a file holding `bytes`, expecting success.
  void readOk(const std::vector<uint8_t> &bytes, ArrayHolder &holder) {
    std::string path = writeFile(bytes);
    StatusPtr status(dist_rt_npy_read(path.c_str(), &holder.array));
    ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  }

  /// Reads a file holding `bytes`, expecting a FORMAT error containing
  /// `expected`; also checks that the message names the file, is one line
  /// and that the output array stays zeroed.
  void expectReadError(const std::vector<uint8_t> &bytes,
                       const std::string &expected,
                       dist_rt_status_code_t code = DIST_RT_ERROR_FORMAT) {
    std::string path = writeFile(bytes);
    dist_rt_npy_array_t array;
    std::memset(&array, 0xab, sizeof(array));
    StatusPtr status(dist_rt_npy_read(path.c_str(), &array));
    ASSERT_NE(status, nullptr) << "reading should fail with: " << expected;
    std::string message = dist_rt_status_message(status.get());
    EXPECT_EQ(dist_rt_status_code(status.get()), code) << message;
    EXPECT_TRUE(contains(message, path));
    EXPECT_TRUE(contains(message, expected));
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(array.data, nullptr);
    EXPECT_EQ(array.dims, nullptr);
    EXPECT_EQ(array.rank, 0u);
  }

  TempDir dir;
};

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

struct DtypeCase {
  uint32_t dtype;
  const char *descr;
};

TEST_F(NpyTest, RoundTripsEveryDtype) {
  const DtypeCase cases[] = {
      {DIST_RT_DTYPE_FLOAT, "'<f4'"},   {DIST_RT_DTYPE_DOUBLE, "'<f8'"},
      {DIST_RT_DTYPE_FLOAT16, "'<f2'"}, {DIST_RT_DTYPE_INT8, "'|i1'"},
      {DIST_RT_DTYPE_INT16, "'<i2'"},   {DIST_RT_DTYPE_INT32, "'<i4'"},
      {DIST_RT_DTYPE_INT64, "'<i8'"},   {DIST_RT_DTYPE_UINT8, "'|u1'"},
      {DIST_RT_DTYPE_UINT16, "'<u2'"},  {DIST_RT_DTYPE_UINT32, "'<u4'"},
      {DIST_RT_DTYPE_UINT64, "'<u8'"},  {DIST_RT_DTYPE_BOOL, "'|b1'"},
  };
  const std::vector<int64_t> dims = {2, 3};
  for (const DtypeCase &c : cases) {
    SCOPED_TRACE(dist_rt_dtype_name(c.dtype));
    size_t nbytes = 6 * dist_rt_dtype_size(c.dtype);
    std::vector<uint8_t> data = patternBytes(nbytes);
    if (c.dtype == DIST_RT_DTYPE_BOOL)
      for (uint8_t &byte : data)
        byte &= 1;
    std::string path =
        dir.file(std::string(dist_rt_dtype_name(c.dtype)) + ".npy");
    StatusPtr written(
        dist_rt_npy_write(path.c_str(), c.dtype, 2, dims.data(), data.data()));
    ASSERT_EQ(written, nullptr) << dist_rt_status_message(written.get());

    // The header is what NumPy writes: version 1.0, padded to 64 bytes.
    std::vector<uint8_t> file = readBytes(path);
    ASSERT_GE(file.size(), 10u);
    EXPECT_EQ(std::memcmp(file.data(), "\x93NUMPY\x01\x00", 8), 0);
    size_t headerLength = file[8] | file[9] << 8;
    EXPECT_EQ((10 + headerLength) % 64, 0u);
    ASSERT_EQ(file.size(), 10 + headerLength + nbytes);
    std::string header(file.begin() + 10, file.begin() + 10 + headerLength);
    EXPECT_EQ(header.back(), '\n');
    EXPECT_TRUE(contains(header, std::string("{'descr': ") + c.descr +
                                     ", 'fortran_order': False, "
                                     "'shape': (2, 3), }"));

    ArrayHolder holder;
    StatusPtr read(dist_rt_npy_read(path.c_str(), &holder.array));
    ASSERT_EQ(read, nullptr) << dist_rt_status_message(read.get());
    EXPECT_EQ(holder.array.dtype, c.dtype);
    ASSERT_EQ(holder.array.rank, 2u);
    EXPECT_EQ(std::vector<int64_t>(holder.array.dims, holder.array.dims + 2),
              dims);
    ASSERT_EQ(holder.array.nbytes, nbytes);
    ASSERT_NE(holder.array.data, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(holder.array.data) % 64, 0u);
    EXPECT_EQ(std::memcmp(holder.array.data, data.data(), nbytes), 0);
  }
}

TEST_F(NpyTest, RoundTripsScalarVectorAndEmptyShapes) {
  struct ShapeCase {
    std::vector<int64_t> dims;
    const char *shapeText;
  };
  const ShapeCase cases[] = {
      {{}, "'shape': ()"},
      {{5}, "'shape': (5,)"},
      {{0, 3}, "'shape': (0, 3)"},
      {{2, 1, 3, 2}, "'shape': (2, 1, 3, 2)"},
  };
  for (const ShapeCase &c : cases) {
    SCOPED_TRACE(c.shapeText);
    size_t count = 1;
    for (int64_t dim : c.dims)
      count *= static_cast<size_t>(dim);
    std::vector<double> values(count);
    for (size_t i = 0; i < count; ++i)
      values[i] = 0.5 * static_cast<double>(i) - 3.0;
    std::string path = dir.file("shape.npy");
    StatusPtr written(dist_rt_npy_write(path.c_str(), DIST_RT_DTYPE_DOUBLE,
                                        static_cast<uint32_t>(c.dims.size()),
                                        c.dims.data(),
                                        count ? values.data() : nullptr));
    ASSERT_EQ(written, nullptr) << dist_rt_status_message(written.get());
    std::vector<uint8_t> file = readBytes(path);
    EXPECT_TRUE(contains(std::string(file.begin(), file.end()), c.shapeText));

    ArrayHolder holder;
    StatusPtr read(dist_rt_npy_read(path.c_str(), &holder.array));
    ASSERT_EQ(read, nullptr) << dist_rt_status_message(read.get());
    ASSERT_EQ(holder.array.rank, c.dims.size());
    if (c.dims.empty()) {
      EXPECT_EQ(holder.array.dims, nullptr);
    } else {
      EXPECT_EQ(std::vector<int64_t>(holder.array.dims,
                                     holder.array.dims + holder.array.rank),
                c.dims);
    }
    EXPECT_EQ(holder.array.nbytes, count * sizeof(double));
    ASSERT_NE(holder.array.data, nullptr);
    if (count) {
      EXPECT_EQ(
          std::memcmp(holder.array.data, values.data(), count * sizeof(double)),
          0);
    }
  }
}

TEST_F(NpyTest, ReadsHeaderVariants) {
  std::vector<uint8_t> data = toBytes<int32_t>({1, -2, 3, -4});
  struct Variant {
    unsigned major;
    std::string header;
  };
  const Variant variants[] = {
      {1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }\n"},
      {2, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }\n"},
      {3, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }\n"},
      {1, "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,2)}"},
      {1, "{'shape':(2 , 2,),'fortran_order':False,'descr':'<i4'}    \n"},
      {1, "  { 'descr' : '=i4' , 'fortran_order' : False , "
          "'shape' : ( 2L , 2L ) }\n"},
  };
  for (const Variant &variant : variants) {
    SCOPED_TRACE(variant.header);
    ArrayHolder holder;
    readOk(npyImage(variant.major, variant.header, data), holder);
    EXPECT_EQ(holder.array.dtype, DIST_RT_DTYPE_INT32);
    ASSERT_EQ(holder.array.rank, 2u);
    EXPECT_EQ(holder.array.dims[0], 2);
    EXPECT_EQ(holder.array.dims[1], 2);
    ASSERT_EQ(holder.array.nbytes, data.size());
    EXPECT_EQ(std::memcmp(holder.array.data, data.data(), data.size()), 0);
  }
}

TEST_F(NpyTest, ReadsBoolSpelledAsQuestionMark) {
  ArrayHolder holder;
  readOk(npyImage(1, "{'descr': '|?', 'fortran_order': False, 'shape': (3,)}",
                  {1, 0, 1}),
         holder);
  EXPECT_EQ(holder.array.dtype, DIST_RT_DTYPE_BOOL);
  EXPECT_EQ(holder.array.nbytes, 3u);
}

TEST_F(NpyTest, IgnoresBytesAfterTheData) {
  // Like NumPy, which reads only what the shape needs.
  std::vector<uint8_t> data = toBytes<float>({1.f, 2.f});
  data.push_back(0xff);
  ArrayHolder holder;
  readOk(npyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
                  data),
         holder);
  EXPECT_EQ(holder.array.nbytes, 8u);
  EXPECT_EQ(static_cast<float *>(holder.array.data)[1], 2.f);
}

TEST_F(NpyTest, FreeZeroesAndAcceptsNull) {
  ArrayHolder holder;
  readOk(npyImage(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
                  toBytes<float>({1.f})),
         holder);
  dist_rt_npy_free(&holder.array);
  EXPECT_EQ(holder.array.data, nullptr);
  EXPECT_EQ(holder.array.dims, nullptr);
  EXPECT_EQ(holder.array.nbytes, 0u);
  dist_rt_npy_free(nullptr);
}

//===----------------------------------------------------------------------===//
// Malformed files
//===----------------------------------------------------------------------===//

const char kGoodHeader[] =
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";

TEST_F(NpyTest, MissingFileIsIoError) {
  std::string path = dir.file("missing.npy");
  dist_rt_npy_array_t array;
  StatusPtr status(dist_rt_npy_read(path.c_str(), &array));
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(dist_rt_status_code(status.get()), DIST_RT_ERROR_IO);
  EXPECT_TRUE(contains(dist_rt_status_message(status.get()), path));
  EXPECT_TRUE(contains(dist_rt_status_message(status.get()), "cannot open"));
}

TEST_F(NpyTest, EmptyFile) { expectReadError({}, "file is empty"); }

TEST_F(NpyTest, BadMagic) {
  std::vector<uint8_t> bytes = npyImage(1, kGoodHeader, patternBytes(24));
  bytes[1] = 'X';
  expectReadError(bytes, "bad magic");
  expectReadError(toBytes<char>({'P', 'K', 3, 4}), "bad magic 'PK");
}

TEST_F(NpyTest, UnsupportedVersion) {
  expectReadError(npyImage(4, kGoodHeader, patternBytes(24)),
                  "unsupported .npy format version 4.0");
}

TEST_F(NpyTest, TruncatedHeaderLength) {
  std::vector<uint8_t> bytes = npyImage(2, kGoodHeader, {});
  bytes.resize(10);
  expectReadError(bytes, "truncated header");
}

TEST_F(NpyTest, TruncatedHeader) {
  std::vector<uint8_t> bytes = npyImage(1, kGoodHeader, {});
  size_t headerSize = sizeof(kGoodHeader) - 1;
  bytes.resize(10 + 20);
  expectReadError(bytes, "truncated header: expected " +
                             std::to_string(headerSize) +
                             " header bytes, the file has 20");
}

TEST_F(NpyTest, TruncatedData) {
  // (2, 3) float32 needs 24 bytes; the file has 10.
  expectReadError(npyImage(1, kGoodHeader, patternBytes(10)),
                  "truncated data: shape [2,3] (float32) needs 24 bytes of "
                  "data but the file has 10");
  expectReadError(npyImage(1, kGoodHeader, {}),
                  "needs 24 bytes of data but the file has 0");
}

TEST_F(NpyTest, ShapeLargerThanTheFile) {
  // Found by dist-npy-fuzzer: a 138-byte file declaring 7 GB of data. The
  // reader compares the shape with the file's size before it allocates.
  expectReadError(
      npyImage(1,
               "{'descr': '<u8', 'fortran_order': False, 'shape': (5, 4, "
               "44444444), }",
               patternBytes(8)),
      "truncated data: shape [5,4,44444444] (uint64) needs 7111111040 bytes "
      "of data but the file has 8");
}

TEST_F(NpyTest, FortranOrder) {
  expectReadError(
      npyImage(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
               patternBytes(24)),
      "fortran_order is True");
}

TEST_F(NpyTest, BigEndianDtype) {
  expectReadError(
      npyImage(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }",
               patternBytes(24)),
      "big-endian dtype '>f4' is not supported");
}

TEST_F(NpyTest, UnsupportedDtypes) {
  for (const char *descr : {"<c8", "<U5", "|O", "<M8[ns]", "<f16", "<i3"}) {
    SCOPED_TRACE(descr);
    expectReadError(npyImage(1,
                             std::string("{'descr': '") + descr +
                                 "', 'fortran_order': False, 'shape': (1,)}",
                             patternBytes(64)),
                    std::string("unsupported dtype '") + descr + "'");
  }
  expectReadError(npyImage(1,
                           "{'descr': [('a', '<f4')], 'fortran_order': False, "
                           "'shape': (1,)}",
                           patternBytes(4)),
                  "structured dtypes are not supported");
}

TEST_F(NpyTest, GarbageHeaders) {
  struct Garbage {
    const char *header;
    const char *expected;
  };
  const Garbage cases[] = {
      {"not a dict", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "no 'shape' key"},
      {"{'fortran_order': False, 'shape': (1,)}", "no 'descr' key"},
      {"{'descr': '<f4', 'shape': (1,)}", "no 'fortran_order' key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}",
       "expected a non-negative integer in the shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}",
       "expected '(' starting the shape tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}",
       "expected ',' or ')' in the shape tuple"},
      {"{'descr': '<f4', 'fortran_order': false, 'shape': (1,)}",
       "expected True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
       "unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
       "'shape': (1,)}",
       "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk",
       "expected the end of the header"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}",
       "expected ',' or '}' in the header dictionary"},
      {"{'descr' '<f4'}", "expected ':' after a key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)",
       "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, "
       "'shape': (99999999999999999999,)}",
       "expected a shape extent that fits in 64 bits"},
      {"", "expected '{'"},
  };
  for (const Garbage &c : cases) {
    SCOPED_TRACE(c.header);
    expectReadError(npyImage(1, c.header, patternBytes(64)),
                    std::string("malformed header: ") + c.expected);
  }
}

TEST_F(NpyTest, ShapeTooLarge) {
  expectReadError(npyImage(1,
                           "{'descr': '<f8', 'fortran_order': False, "
                           "'shape': (4294967296, 4294967296)}",
                           {}),
                  "shape [4294967296,4294967296] is too large");
}

//===----------------------------------------------------------------------===//
// Write errors
//===----------------------------------------------------------------------===//

TEST_F(NpyTest, WriteRejectsBfloat16AndLeavesNoFile) {
  std::string path = dir.file("bf16.npy");
  int64_t dims[] = {2};
  uint16_t data[] = {0x3f80, 0x4000};
  StatusPtr status(
      dist_rt_npy_write(path.c_str(), DIST_RT_DTYPE_BFLOAT16, 1, dims, data));
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(dist_rt_status_code(status.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(dist_rt_status_message(status.get()), path));
  EXPECT_TRUE(contains(dist_rt_status_message(status.get()), "bfloat16"));
  EXPECT_TRUE(listDirectory(dir.path()).empty());
}

TEST_F(NpyTest, WriteRejectsBadShapes) {
  std::string path = dir.file("bad.npy");
  float data[4] = {};
  int64_t negative[] = {2, -2};
  StatusPtr status(
      dist_rt_npy_write(path.c_str(), DIST_RT_DTYPE_FLOAT, 2, negative, data));
  ASSERT_NE(status, nullptr);
  EXPECT_TRUE(
      contains(dist_rt_status_message(status.get()), "dim 1 is negative (-2)"));
  StatusPtr noDims(
      dist_rt_npy_write(path.c_str(), DIST_RT_DTYPE_FLOAT, 2, nullptr, data));
  EXPECT_EQ(dist_rt_status_code(noDims.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  int64_t dims[] = {4};
  StatusPtr noData(
      dist_rt_npy_write(path.c_str(), DIST_RT_DTYPE_FLOAT, 1, dims, nullptr));
  EXPECT_EQ(dist_rt_status_code(noData.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(listDirectory(dir.path()).empty());
}

TEST_F(NpyTest, WriteIntoMissingDirectoryFails) {
  std::string path = dir.file("no/such/dir/out.npy");
  int64_t dims[] = {1};
  float data[] = {1.f};
  StatusPtr status(
      dist_rt_npy_write(path.c_str(), DIST_RT_DTYPE_FLOAT, 1, dims, data));
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(dist_rt_status_code(status.get()), DIST_RT_ERROR_IO);
  EXPECT_TRUE(contains(dist_rt_status_message(status.get()), path));
  EXPECT_TRUE(listDirectory(dir.path()).empty());
}

TEST_F(NpyTest, WriteOntoDirectoryFailsWithoutLeftovers) {
  std::string path = dir.file("taken.npy");
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  int64_t dims[] = {1};
  float data[] = {1.f};
  StatusPtr status(
      dist_rt_npy_write(path.c_str(), DIST_RT_DTYPE_FLOAT, 1, dims, data));
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(dist_rt_status_code(status.get()), DIST_RT_ERROR_IO);
  EXPECT_TRUE(contains(dist_rt_status_message(status.get()), path));
  EXPECT_EQ(listDirectory(dir.path()), std::vector<std::string>{"taken.npy"});
}

TEST_F(NpyTest, WriteReplacesExistingFileAtomically) {
  std::string path = dir.file("out.npy");
  ASSERT_TRUE(writeBytes(path, {'o', 'l', 'd'}));
  int64_t dims[] = {3};
  int16_t data[] = {7, 8, 9};
  // A failed write keeps the old contents.
  StatusPtr failed(
      dist_rt_npy_write(path.c_str(), DIST_RT_DTYPE_BFLOAT16, 1, dims, data));
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(readBytes(path), (std::vector<uint8_t>{'o', 'l', 'd'}));
  // A successful one replaces them and leaves no temporary file.
  StatusPtr written(
      dist_rt_npy_write(path.c_str(), DIST_RT_DTYPE_INT16, 1, dims, data));
  ASSERT_EQ(written, nullptr) << dist_rt_status_message(written.get());
  EXPECT_EQ(listDirectory(dir.path()), std::vector<std::string>{"out.npy"});
  ArrayHolder holder;
  StatusPtr read(dist_rt_npy_read(path.c_str(), &holder.array));
  ASSERT_EQ(read, nullptr) << dist_rt_status_message(read.get());
  EXPECT_EQ(holder.array.dtype, DIST_RT_DTYPE_INT16);
  EXPECT_EQ(std::memcmp(holder.array.data, data, sizeof(data)), 0);
}

// Checkpoints written in parts: writers of interleaved pieces, in any
// order and only one with the header, make the file one write would.
TEST_F(NpyTest, PiecesFromSeveralWritersMakeTheWholeFile) {
  int64_t dims[] = {4, 6};
  std::vector<float> data(24);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>(i) * 0.5f - 3.f;
  std::string whole = dir.file("whole.npy");
  StatusPtr one(dist_rt_npy_write(whole.c_str(), DIST_RT_DTYPE_FLOAT, 2, dims,
                                  data.data()));
  ASSERT_EQ(one, nullptr) << dist_rt_status_message(one.get());
  // Two writers, columns split in halves (chunks of 3 floats per row).
  std::string parts = dir.file("parts.npy");
  for (int writer : {1, 0}) {
    std::vector<dist_rt::NpyPiece> pieces;
    for (uint64_t row = 0; row < 4; ++row) {
      uint64_t offset = (row * 6 + static_cast<uint64_t>(writer) * 3) * 4;
      pieces.push_back({offset, data.data() + offset / 4, 12});
    }
    StatusPtr status(dist_rt::writeNpyPieces(parts.c_str(), DIST_RT_DTYPE_FLOAT,
                                             2, dims, writer == 0, pieces));
    ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  }
  EXPECT_EQ(readBytes(parts), readBytes(whole));
  // A piece outside the tensor is refused, naming the file.
  std::vector<dist_rt::NpyPiece> outside = {{90, data.data(), 8}};
  StatusPtr bad(dist_rt::writeNpyPieces(parts.c_str(), DIST_RT_DTYPE_FLOAT, 2,
                                        dims, false, outside));
  ASSERT_NE(bad, nullptr);
  EXPECT_TRUE(contains(dist_rt_status_message(bad.get()), parts));
  EXPECT_TRUE(contains(dist_rt_status_message(bad.get()), "outside"));
  EXPECT_EQ(readBytes(parts), readBytes(whole));
}

TEST(NpyApiTest, RejectsNullArguments) {
  dist_rt_npy_array_t array;
  StatusPtr noPath(dist_rt_npy_read(nullptr, &array));
  EXPECT_EQ(dist_rt_status_code(noPath.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  StatusPtr noOut(dist_rt_npy_read("x.npy", nullptr));
  EXPECT_EQ(dist_rt_status_code(noOut.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  StatusPtr noWritePath(
      dist_rt_npy_write(nullptr, DIST_RT_DTYPE_FLOAT, 0, nullptr, nullptr));
  EXPECT_EQ(dist_rt_status_code(noWritePath.get()),
            DIST_RT_ERROR_INVALID_ARGUMENT);
}

} // namespace
