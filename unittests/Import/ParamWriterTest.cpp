//===- ParamWriterTest.cpp - importer writer vs runtime reader ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The importer writes parameter files and the runtime reads them; neither
// links the other, so these tests check that both sides agree on the layout,
// that a failed write leaves an existing file alone, and the parsing of the
// importer's --input-shape / --input-value options.
//
//===----------------------------------------------------------------------===//

#include "ParamWriter.h"
#include "dist/Import/ONNX/ONNXImporter.h"
#include "dist_rt/dist_rt.h"

#include "mlir/IR/BuiltinTypes.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace mlir::dist;

namespace {
std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "dist-import-test-" + name;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ParamWriter, RuntimeReadsWhatTheImporterWrites) {
  std::string path = tempPath("roundtrip.params");
  std::vector<float> weights = {1.5f, -2.0f, 3.25f, 4.0f, 5.0f, 6.0f};
  std::vector<int64_t> ids = {7, 8, 9};
  {
    ParamWriter writer;
    ASSERT_EQ(writer.open(path), "");
    ASSERT_EQ(writer.add("fc.weight", DIST_RT_DTYPE_FLOAT, {2, 3},
                         {reinterpret_cast<const char *>(weights.data()),
                          weights.size() * sizeof(float)}),
              "");
    ASSERT_EQ(writer.add("ids", DIST_RT_DTYPE_INT64, {3},
                         {reinterpret_cast<const char *>(ids.data()),
                          ids.size() * sizeof(int64_t)}),
              "");
    EXPECT_NE(writer.add("ids", DIST_RT_DTYPE_INT64, {0}, {}), "")
        << "duplicate names must be rejected";
    ASSERT_EQ(writer.commit(), "");
  }
  dist_rt_params_t params = nullptr;
  dist_rt_status_t status = dist_rt_params_open(path.c_str(), &params);
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status);
  ASSERT_EQ(dist_rt_params_count(params), 2u);
  dist_rt_param_info_t info;
  ASSERT_EQ(dist_rt_params_find(params, "fc.weight", &info), nullptr);
  EXPECT_EQ(info.dtype, static_cast<uint32_t>(DIST_RT_DTYPE_FLOAT));
  ASSERT_EQ(info.rank, 2u);
  EXPECT_EQ(info.dims[0], 2);
  EXPECT_EQ(info.dims[1], 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(info.data) % DIST_RT_PARAM_ALIGNMENT,
            0u);
  ASSERT_EQ(info.nbytes, weights.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(info.data, weights.data(), info.nbytes), 0);
  ASSERT_EQ(dist_rt_params_find(params, "ids", &info), nullptr);
  EXPECT_EQ(std::memcmp(info.data, ids.data(), info.nbytes), 0);
  dist_rt_params_release(params);
  std::remove(path.c_str());
}

TEST(ParamWriter, AbortKeepsAnExistingFile) {
  std::string path = tempPath("keep.params");
  {
    std::ofstream out(path, std::ios::binary);
    out << "previous contents";
  }
  {
    ParamWriter writer;
    ASSERT_EQ(writer.open(path), "");
    float v = 1.0f;
    ASSERT_EQ(writer.add("w", DIST_RT_DTYPE_FLOAT, {1},
                         {reinterpret_cast<const char *>(&v), sizeof(v)}),
              "");
    // Destroyed without commit(): the import failed.
  }
  EXPECT_EQ(readFile(path), "previous contents");
  std::remove(path.c_str());
}

TEST(ParamWriter, UnwritableDirectoryIsAnError) {
  ParamWriter writer;
  std::string err = writer.open("/nonexistent-dir/x.params");
  EXPECT_NE(err.find("/nonexistent-dir/x.params"), std::string::npos) << err;
}

TEST(ImportOptions, InputShapes) {
  ONNXImportOptions opts;
  EXPECT_EQ(parseInputShapeOption("x=64,784", opts), "");
  EXPECT_EQ(opts.inputShapes["x"], (std::vector<int64_t>{64, 784}));
  EXPECT_EQ(parseInputShapeOption("ids=?,16", opts), "");
  EXPECT_EQ(opts.inputShapes["ids"],
            (std::vector<int64_t>{mlir::ShapedType::kDynamic, 16}));
  EXPECT_EQ(parseInputShapeOption("scalar=", opts), "");
  EXPECT_TRUE(opts.inputShapes["scalar"].empty());
  EXPECT_NE(parseInputShapeOption("x=64,abc", opts).find("'abc'"),
            std::string::npos);
  EXPECT_NE(parseInputShapeOption("x=-5", opts), "");
  EXPECT_NE(parseInputShapeOption("noequals", opts), "");
  EXPECT_NE(parseInputShapeOption("=1,2", opts), "");
}

TEST(ImportOptions, InputValues) {
  ONNXImportOptions opts;
  EXPECT_EQ(parseInputValueOption("shape=/tmp/s.pb", opts), "");
  EXPECT_EQ(opts.inputValues["shape"], "/tmp/s.pb");
  EXPECT_NE(parseInputValueOption("shape=", opts), "");
  EXPECT_NE(parseInputValueOption("=file", opts), "");
}
} // namespace
