//===- ModelTest.cpp - Tests for the model API and dist_rt_main -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for dist_rt_model_* and dist_rt_main, driven by
// hand-written entry functions that follow the calling convention of
// dist_rt/model.h. The main test model returns every kind of output the
// runtime must handle: a fresh block it can take over, an alias of the
// input, two outputs sharing one block (one of them a transposed view), a
// constant global with a bogus `allocated` pointer, an alias of a parameter,
// a strided view with an offset, and a bool tensor. dist_rt_main is called
// in-process with argv arrays; its stdout and stderr are captured.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/model.h"
#include "dist_rt/kernels.h"
#include "dist_rt/npy.h"

#include "RuntimeTestUtils.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

using namespace dist_rt_test;

namespace {

//===----------------------------------------------------------------------===//
// Hand-written compiled models
//===----------------------------------------------------------------------===//

const int64_t kCount = 42;

/// Blocks the affine entry allocated in its last call.
struct EntryBlocks {
  void *y = nullptr;
  void *shared = nullptr;
  void *strided = nullptr;
  void *mask = nullptr;
  bool inputsContiguous = false;
} lastBlocks;

/// bias: float32 [4] (parameter); x: float32 [?, 4] (input). Outputs:
///   0 y           = x + bias                       fresh, taken over
///   1 x_alias     = x                              alias of the input
///   2 yt          = transpose(2 * y)               view of a shared block
///   3 y2          = 2 * y                          the same shared block
///   4 count       = 42 (int64 scalar)              constant global
///   5 bias_out    = bias                           alias of the parameter
///   6 every_other = [11, 13]                       offset/strided view
///   7 grp/z       = x[:, 0] > 0 (bool)             fresh, taken over
void affineEntry(void **args) {
  auto *bias = static_cast<MemrefDesc<1> *>(args[0]);
  auto *x = static_cast<MemrefDesc<2> *>(args[1]);
  int64_t rows = x->sizes[0];
  lastBlocks.inputsContiguous =
      x->offset == 0 && x->strides[0] == 4 && x->strides[1] == 1 &&
      bias->offset == 0 && bias->strides[0] == 1 && x->allocated == x->aligned;
  const float *xData = static_cast<const float *>(x->aligned) + x->offset;
  const float *biasData =
      static_cast<const float *>(bias->aligned) + bias->offset;

  auto *y = static_cast<float *>(
      _mlir_memref_to_llvm_alloc(static_cast<size_t>(rows) * 4 * 4));
  auto *twice = static_cast<float *>(
      _mlir_memref_to_llvm_alloc(static_cast<size_t>(rows) * 4 * 4));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      y[i * 4 + j] = xData[i * 4 + j] + biasData[j];
      twice[i * 4 + j] = 2 * y[i * 4 + j];
    }
  auto *strided = static_cast<float *>(_mlir_memref_to_llvm_alloc(5 * 4));
  for (int i = 0; i < 5; ++i)
    strided[i] = 10.f + static_cast<float>(i);
  auto *mask = static_cast<uint8_t *>(
      _mlir_memref_to_llvm_alloc(static_cast<size_t>(rows)));
  for (int64_t i = 0; i < rows; ++i)
    mask[i] = xData[i * 4] > 0 ? 1 : 0;

  OutputWriter out{static_cast<int64_t *>(args[2])};
  out.put(y, y, 0, {rows, 4}, {4, 1});
  out.put(x->allocated, x->aligned, x->offset, {rows, 4},
          {x->strides[0], x->strides[1]});
  out.put(twice, twice, 0, {4, rows}, {1, 4});
  out.put(twice, twice, 0, {rows, 4}, {4, 1});
  out.put(reinterpret_cast<void *>(0xdeadbeef), &kCount, 0, {}, {});
  out.put(bias->allocated, bias->aligned, bias->offset, {4}, {1});
  out.put(strided, strided, 1, {2}, {2});
  out.put(mask, mask, 0, {rows}, {1});
  lastBlocks.y = y;
  lastBlocks.shared = twice;
  lastBlocks.strided = strided;
  lastBlocks.mask = mask;
}

const int64_t kVec4[] = {4};
const int64_t kRowsBy4[] = {-1, 4};
const int64_t k4ByRows[] = {4, -1};
const int64_t kVec2[] = {2};
const int64_t kRows[] = {-1};

const dist_rt_tensor_desc_t kAffineParams[] = {
    {"bias", DIST_RT_DTYPE_FLOAT, 1, kVec4}};
const dist_rt_tensor_desc_t kAffineInputs[] = {
    {"x", DIST_RT_DTYPE_FLOAT, 2, kRowsBy4}};
const dist_rt_tensor_desc_t kAffineOutputs[] = {
    {"y", DIST_RT_DTYPE_FLOAT, 2, kRowsBy4},
    {"x_alias", DIST_RT_DTYPE_FLOAT, 2, kRowsBy4},
    {"yt", DIST_RT_DTYPE_FLOAT, 2, k4ByRows},
    {"y2", DIST_RT_DTYPE_FLOAT, 2, kRowsBy4},
    {"count", DIST_RT_DTYPE_INT64, 0, nullptr},
    {"bias_out", DIST_RT_DTYPE_FLOAT, 1, kVec4},
    {"every_other", DIST_RT_DTYPE_FLOAT, 1, kVec2},
    {"grp/z", DIST_RT_DTYPE_BOOL, 1, kRows},
};

dist_rt_model_desc_t affineDesc(const char *paramFile = "affine.params") {
  return {DIST_RT_MODEL_ABI_VERSION,
          "affine",
          paramFile,
          1,
          kAffineParams,
          1,
          kAffineInputs,
          8,
          kAffineOutputs,
          &affineEntry};
}

/// A model without parameters or inputs returning a constant.
void constantEntry(void **args) {
  OutputWriter out{static_cast<int64_t *>(args[0])};
  out.put(reinterpret_cast<void *>(0xdeadbeef), &kCount, 0, {1}, {1});
}

const int64_t kVec1[] = {1};
const dist_rt_tensor_desc_t kConstantOutputs[] = {
    {"c", DIST_RT_DTYPE_INT64, 1, kVec1}};

/// Returns a fresh block whose shape contradicts the declaration.
void *lastBadBlock = nullptr;
void badShapeEntry(void **args) {
  void *block = _mlir_memref_to_llvm_alloc(12);
  lastBadBlock = block;
  OutputWriter out{static_cast<int64_t *>(args[0])};
  out.put(block, block, 0, {3}, {1});
}

/// Rows of every call of rowsEntry.
std::vector<int64_t> rowsSeen;

/// x: float32 [6, 3], compiled as one dp rank's [2, 3] (dp = 3). Outputs:
///   0 y       = 2 * x          fresh, taken over
///   1 x_alias = x              alias of the input (rows of the caller's x)
///   2 pos     = x[:, 0] > 0    bool, fresh
void rowsEntry(void **args) {
  auto *x = static_cast<MemrefDesc<2> *>(args[0]);
  int64_t rows = x->sizes[0];
  rowsSeen.push_back(rows);
  const float *xData = static_cast<const float *>(x->aligned) + x->offset;
  auto *y = static_cast<float *>(
      _mlir_memref_to_llvm_alloc(static_cast<size_t>(rows) * 3 * 4));
  auto *pos = static_cast<uint8_t *>(
      _mlir_memref_to_llvm_alloc(static_cast<size_t>(rows)));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < 3; ++j)
      y[i * 3 + j] = 2 * xData[i * 3 + j];
    pos[i] = xData[i * 3] > 0 ? 1 : 0;
  }
  OutputWriter out{static_cast<int64_t *>(args[1])};
  out.put(y, y, 0, {rows, 3}, {3, 1});
  out.put(x->allocated, x->aligned, x->offset, {rows, 3},
          {x->strides[0], x->strides[1]});
  out.put(pos, pos, 0, {rows}, {1});
}

const int64_t k6By3[] = {6, 3};
const int64_t k6[] = {6};
const dist_rt_tensor_desc_t kRowsInputs[] = {
    {"x", DIST_RT_DTYPE_FLOAT, 2, k6By3}};
const dist_rt_tensor_desc_t kRowsOutputs[] = {
    {"y", DIST_RT_DTYPE_FLOAT, 2, k6By3},
    {"x_alias", DIST_RT_DTYPE_FLOAT, 2, k6By3},
    {"pos", DIST_RT_DTYPE_BOOL, 1, k6}};
const int64_t kDp3[] = {3};
const char *const kDpAxis[] = {"dp", nullptr};
const char *const kTpAxis[] = {"tp", nullptr};

dist_rt_model_desc_t rowsDesc(const char *const *axisNames) {
  return {DIST_RT_MODEL_ABI_VERSION,
          "rows",
          nullptr,
          0,
          nullptr,
          1,
          kRowsInputs,
          3,
          kRowsOutputs,
          &rowsEntry,
          nullptr,
          1,
          kDp3,
          axisNames,
          nullptr,
          /*infer_batch_split=*/1};
}

//===----------------------------------------------------------------------===//
// Fixture
//===----------------------------------------------------------------------===//

const std::vector<float> kBias = {0.5f, -1.f, 2.f, 10.f};

/// The directory holding this test binary (where a descriptor's relative
/// param_file is looked up).
std::string selfDirectory() {
  char buffer[4096];
  ssize_t length = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (length <= 0)
    return {};
  std::string path(buffer, static_cast<size_t>(length));
  return path.substr(0, path.rfind('/'));
}

class ModelTest : public ::testing::Test {
protected:
  void SetUp() override {
    savedThreads = dist_rt_get_num_threads();
    paramPath = dir.file("affine.params");
    ASSERT_TRUE(writeBytes(
        paramPath,
        paramFileImage({{"bias", DIST_RT_DTYPE_FLOAT, {4}, toBytes(kBias)}})));
  }
  void TearDown() override { dist_rt_set_num_threads(savedThreads); }

  /// Creates a model from `desc` with `paramFile` (default: the good one),
  /// expecting success.
  ModelPtr create(const dist_rt_model_desc_t &desc,
                  const std::string &paramFile = std::string()) {
    dist_rt_model_options_t options;
    dist_rt_model_options_initialize(&options);
    std::string path = paramFile.empty() ? paramPath : paramFile;
    options.param_path = path.c_str();
    options.num_threads = 2;
    dist_rt_model_t model = nullptr;
    StatusPtr status(dist_rt_model_create(&desc, &options, &model));
    EXPECT_EQ(status, nullptr) << dist_rt_status_message(status.get());
    return ModelPtr(model);
  }

  /// Creates a model expecting failure; returns the message.
  std::string createError(const dist_rt_model_desc_t &desc,
                          const dist_rt_model_options_t *options,
                          dist_rt_status_code_t code) {
    dist_rt_model_t model = reinterpret_cast<dist_rt_model_t>(0x1);
    StatusPtr status(dist_rt_model_create(&desc, options, &model));
    EXPECT_EQ(model, nullptr);
    EXPECT_NE(status, nullptr);
    if (!status)
      return {};
    EXPECT_EQ(dist_rt_status_code(status.get()), code)
        << dist_rt_status_message(status.get());
    std::string message = dist_rt_status_message(status.get());
    EXPECT_EQ(message.find('\n'), std::string::npos);
    return message;
  }

  /// Writes a parameter file with `params` and returns its path.
  std::string writeParams(const std::vector<TestParam> &params,
                          const std::string &name) {
    std::string path = dir.file(name);
    EXPECT_TRUE(writeBytes(path, paramFileImage(params)));
    return path;
  }

  /// Runs expecting failure; returns the message.
  std::string runError(dist_rt_model_t model, const dist_rt_tensor_t *inputs,
                       size_t count) {
    const dist_rt_tensor_t *outputs =
        reinterpret_cast<const dist_rt_tensor_t *>(0x1);
    StatusPtr status(dist_rt_model_run(model, inputs, count, &outputs));
    EXPECT_EQ(outputs, nullptr);
    EXPECT_NE(status, nullptr);
    if (!status)
      return {};
    std::string message = dist_rt_status_message(status.get());
    EXPECT_EQ(message.find('\n'), std::string::npos);
    return message;
  }

  TempDir dir;
  std::string paramPath;
  int32_t savedThreads = 0;
};

std::vector<float> values(const dist_rt_tensor_t &tensor) {
  size_t count = 1;
  for (uint32_t d = 0; d < tensor.rank; ++d)
    count *= static_cast<size_t>(tensor.dims[d]);
  const auto *data = static_cast<const float *>(tensor.data);
  return std::vector<float>(data, data + count);
}

std::vector<int64_t> dimsOf(const dist_rt_tensor_t &tensor) {
  if (tensor.rank == 0)
    return {};
  return std::vector<int64_t>(tensor.dims, tensor.dims + tensor.rank);
}

bool isAligned64(const void *ptr) {
  return reinterpret_cast<uintptr_t>(ptr) % 64 == 0;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

TEST_F(ModelTest, ReturnsEveryKindOfOutputAsOwnedContiguousTensors) {
  dist_rt_model_desc_t desc = affineDesc();
  ModelPtr model = create(desc);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(dist_rt_model_desc(model.get()), &desc);
  EXPECT_EQ(dist_rt_get_num_threads(), 2);

  std::vector<float> x = {1, 2, 3, 4, -5, 6, 7, 8, 9, 10, 11, 12};
  int64_t xDims[] = {3, 4};
  dist_rt_tensor_t input = {DIST_RT_DTYPE_FLOAT, 2, xDims, x.data()};
  const dist_rt_tensor_t *outputs = nullptr;
  StatusPtr status(dist_rt_model_run(model.get(), &input, 1, &outputs));
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  ASSERT_NE(outputs, nullptr);
  EXPECT_TRUE(lastBlocks.inputsContiguous);

  std::vector<float> y(12), twice(12), twiceTransposed(12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      y[i * 4 + j] = x[i * 4 + j] + kBias[j];
      twice[i * 4 + j] = 2 * y[i * 4 + j];
      twiceTransposed[j * 3 + i] = 2 * y[i * 4 + j];
    }

  // 0: taken over.
  EXPECT_EQ(outputs[0].dtype, DIST_RT_DTYPE_FLOAT);
  EXPECT_EQ(dimsOf(outputs[0]), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values(outputs[0]), y);
  EXPECT_EQ(outputs[0].data, lastBlocks.y);
  EXPECT_EQ(dist_rt_alloc_owns(lastBlocks.y), 1);
  // 1: the input, copied.
  EXPECT_EQ(values(outputs[1]), x);
  EXPECT_NE(outputs[1].data, static_cast<void *>(x.data()));
  // 2 and 3 shared one block: both copied, the block freed.
  EXPECT_EQ(dimsOf(outputs[2]), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(values(outputs[2]), twiceTransposed);
  EXPECT_EQ(dimsOf(outputs[3]), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values(outputs[3]), twice);
  EXPECT_NE(outputs[2].data, lastBlocks.shared);
  EXPECT_NE(outputs[3].data, lastBlocks.shared);
  EXPECT_NE(outputs[2].data, outputs[3].data);
  EXPECT_EQ(dist_rt_alloc_owns(lastBlocks.shared), 0);
  // 4: the constant global behind a bogus allocated pointer.
  EXPECT_EQ(outputs[4].dtype, DIST_RT_DTYPE_INT64);
  EXPECT_EQ(outputs[4].rank, 0u);
  EXPECT_EQ(*static_cast<const int64_t *>(outputs[4].data), 42);
  EXPECT_NE(outputs[4].data, static_cast<const void *>(&kCount));
  // 5: the parameter, copied out of the mapping.
  EXPECT_EQ(values(outputs[5]), kBias);
  // 6: a strided view with an offset, copied; its block freed.
  EXPECT_EQ(values(outputs[6]), (std::vector<float>{11.f, 13.f}));
  EXPECT_EQ(dist_rt_alloc_owns(lastBlocks.strided), 0);
  // 7: bool, one byte per element, taken over.
  EXPECT_EQ(outputs[7].dtype, DIST_RT_DTYPE_BOOL);
  EXPECT_EQ(dimsOf(outputs[7]), (std::vector<int64_t>{3}));
  const auto *mask = static_cast<const uint8_t *>(outputs[7].data);
  EXPECT_EQ(std::vector<uint8_t>(mask, mask + 3),
            (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(outputs[7].data, lastBlocks.mask);

  for (uint32_t o = 0; o < desc.num_outputs; ++o) {
    EXPECT_TRUE(isAligned64(outputs[o].data)) << o;
    EXPECT_EQ(dist_rt_alloc_owns(outputs[o].data), 1) << o;
  }
}

TEST_F(ModelTest, NextRunReleasesThePreviousOutputs) {
  dist_rt_model_desc_t desc = affineDesc();
  ModelPtr model = create(desc);
  ASSERT_NE(model, nullptr);
  std::vector<float> x(8, 1.f);
  int64_t xDims[] = {2, 4};
  dist_rt_tensor_t input = {DIST_RT_DTYPE_FLOAT, 2, xDims, x.data()};
  const dist_rt_tensor_t *outputs = nullptr;
  ASSERT_EQ(dist_rt_model_run(model.get(), &input, 1, &outputs), nullptr);
  std::vector<void *> first;
  for (uint32_t o = 0; o < desc.num_outputs; ++o)
    first.push_back(outputs[o].data);

  // A different batch size through the same model.
  std::vector<float> x5(20, -2.f);
  int64_t x5Dims[] = {5, 4};
  dist_rt_tensor_t input5 = {DIST_RT_DTYPE_FLOAT, 2, x5Dims, x5.data()};
  ASSERT_EQ(dist_rt_model_run(model.get(), &input5, 1, &outputs), nullptr);
  EXPECT_EQ(dimsOf(outputs[0]), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(dimsOf(outputs[2]), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(values(outputs[1]), x5);
  for (void *block : first)
    EXPECT_EQ(dist_rt_alloc_owns(block), 0);
}

TEST_F(ModelTest, OutputsCanBeFedBackAsInputs) {
  dist_rt_model_desc_t desc = affineDesc();
  ModelPtr model = create(desc);
  ASSERT_NE(model, nullptr);
  std::vector<float> x = {1, 2, 3, 4};
  int64_t xDims[] = {1, 4};
  dist_rt_tensor_t input = {DIST_RT_DTYPE_FLOAT, 2, xDims, x.data()};
  const dist_rt_tensor_t *outputs = nullptr;
  ASSERT_EQ(dist_rt_model_run(model.get(), &input, 1, &outputs), nullptr);

  // Feed y (a block the model owns) back in. x_alias then aliases a live
  // allocator block that belongs to the previous run: it must be copied,
  // not taken over (the previous outputs are freed after this run).
  dist_rt_tensor_t fedBack = outputs[0];
  std::vector<float> y = values(fedBack);
  const dist_rt_tensor_t *next = nullptr;
  StatusPtr status(dist_rt_model_run(model.get(), &fedBack, 1, &next));
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  EXPECT_EQ(values(next[1]), y);
  EXPECT_NE(next[1].data, fedBack.data);
  EXPECT_EQ(dist_rt_alloc_owns(next[1].data), 1);
  EXPECT_EQ(dist_rt_alloc_owns(fedBack.data), 0);
  std::vector<float> expected(4);
  for (int j = 0; j < 4; ++j)
    expected[j] = y[j] + kBias[j];
  EXPECT_EQ(values(next[0]), expected);
}

TEST_F(ModelTest, ModelWithoutParametersOrInputs) {
  dist_rt_model_desc_t desc = {DIST_RT_MODEL_ABI_VERSION,
                               "constant",
                               nullptr,
                               0,
                               nullptr,
                               0,
                               nullptr,
                               1,
                               kConstantOutputs,
                               &constantEntry};
  dist_rt_model_t raw = nullptr;
  StatusPtr created(dist_rt_model_create(&desc, nullptr, &raw));
  ASSERT_EQ(created, nullptr) << dist_rt_status_message(created.get());
  ModelPtr model(raw);
  const dist_rt_tensor_t *outputs = nullptr;
  StatusPtr status(dist_rt_model_run(model.get(), nullptr, 0, &outputs));
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  EXPECT_EQ(*static_cast<const int64_t *>(outputs[0].data), 42);
}

// A model whose inference is split over dp=3, run by a process alone: the
// runtime calls the entry on each third of the batch in turn and assembles
// whole outputs, copying the rows of an output that aliases the input.
TEST_F(ModelTest, SplitBatchRunsEachDataParallelSliceAlone) {
  dist_rt_model_desc_t desc = rowsDesc(kDpAxis);
  dist_rt_model_t raw = nullptr;
  StatusPtr created(dist_rt_model_create(&desc, nullptr, &raw));
  ASSERT_EQ(created, nullptr) << dist_rt_status_message(created.get());
  ModelPtr model(raw);
  std::vector<float> x(18);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i) - 8.5f;
  dist_rt_tensor_t input = {DIST_RT_DTYPE_FLOAT, 2, k6By3, x.data()};
  rowsSeen.clear();
  const dist_rt_tensor_t *outputs = nullptr;
  StatusPtr status(dist_rt_model_run(model.get(), &input, 1, &outputs));
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  EXPECT_EQ(rowsSeen, (std::vector<int64_t>{2, 2, 2}));
  for (int o = 0; o < 3; ++o)
    EXPECT_EQ(outputs[o].dims[0], 6) << "output " << o;
  EXPECT_EQ(outputs[0].dims[1], 3);
  const auto *y = static_cast<const float *>(outputs[0].data);
  const auto *alias = static_cast<const float *>(outputs[1].data);
  const auto *pos = static_cast<const uint8_t *>(outputs[2].data);
  EXPECT_NE(outputs[1].data, static_cast<void *>(x.data()));
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], 2 * x[i]) << i;
    EXPECT_EQ(alias[i], x[i]) << i;
  }
  for (size_t r = 0; r < 6; ++r)
    EXPECT_EQ(pos[r], x[r * 3] > 0 ? 1 : 0) << r;

  // The whole batch is checked against the declared shape.
  const int64_t k4By3[] = {4, 3};
  dist_rt_tensor_t small = {DIST_RT_DTYPE_FLOAT, 2, k4By3, x.data()};
  StatusPtr wrong(dist_rt_model_run(model.get(), &small, 1, &outputs));
  ASSERT_NE(wrong, nullptr);
  EXPECT_STREQ(dist_rt_status_message(wrong.get()),
               "input 'x': expected shape [6,3] (float32), got [4,3] "
               "(float32)");
}

TEST_F(ModelTest, SplitBatchNeedsADataParallelAxis) {
  dist_rt_model_desc_t desc = rowsDesc(kTpAxis);
  dist_rt_model_t raw = nullptr;
  StatusPtr created(dist_rt_model_create(&desc, nullptr, &raw));
  ASSERT_NE(created, nullptr);
  EXPECT_STREQ(dist_rt_status_message(created.get()),
               "model 'rows' splits its inference batch over a "
               "data-parallel axis, but its mesh has no 'dp' axis");
  EXPECT_EQ(raw, nullptr);
  desc = rowsDesc(kDpAxis);
  desc.infer_batch_split = 2;
  created.reset(dist_rt_model_create(&desc, nullptr, &raw));
  ASSERT_NE(created, nullptr);
  EXPECT_STREQ(dist_rt_status_message(created.get()),
               "model 'rows': infer_batch_split must be 0 or 1, got 2");
}

TEST_F(ModelTest, FindsAnAbsoluteParamFileWithoutOptions) {
  dist_rt_model_desc_t desc = affineDesc(paramPath.c_str());
  dist_rt_model_t raw = nullptr;
  StatusPtr status(dist_rt_model_create(&desc, nullptr, &raw));
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  dist_rt_model_destroy(raw);
}

//===----------------------------------------------------------------------===//
// Run errors
//===----------------------------------------------------------------------===//

TEST_F(ModelTest, WrongInputShapeDtypeRankAndCount) {
  dist_rt_model_desc_t desc = affineDesc();
  ModelPtr model = create(desc);
  ASSERT_NE(model, nullptr);
  std::vector<float> x(20, 1.f);
  int64_t goodDims[] = {2, 4};
  dist_rt_tensor_t good = {DIST_RT_DTYPE_FLOAT, 2, goodDims, x.data()};
  const dist_rt_tensor_t *outputs = nullptr;
  ASSERT_EQ(dist_rt_model_run(model.get(), &good, 1, &outputs), nullptr);
  std::vector<float> before = values(outputs[0]);
  const dist_rt_tensor_t *kept = outputs;

  int64_t wrongDims[] = {3, 5};
  dist_rt_tensor_t wrongShape = {DIST_RT_DTYPE_FLOAT, 2, wrongDims, x.data()};
  EXPECT_EQ(runError(model.get(), &wrongShape, 1),
            "input 'x': expected shape [?,4] (float32), got [3,5] (float32)");
  dist_rt_tensor_t wrongDtype = {DIST_RT_DTYPE_INT32, 2, goodDims, x.data()};
  EXPECT_EQ(runError(model.get(), &wrongDtype, 1),
            "input 'x': expected shape [?,4] (float32), got [2,4] (int32)");
  int64_t flatDims[] = {8};
  dist_rt_tensor_t wrongRank = {DIST_RT_DTYPE_FLOAT, 1, flatDims, x.data()};
  EXPECT_EQ(runError(model.get(), &wrongRank, 1),
            "input 'x': expected shape [?,4] (float32), got [8] (float32)");
  int64_t negativeDims[] = {-1, 4};
  dist_rt_tensor_t negative = {DIST_RT_DTYPE_FLOAT, 2, negativeDims, x.data()};
  EXPECT_EQ(runError(model.get(), &negative, 1),
            "input 'x': expected shape [?,4] (float32), got [?,4] (float32)");
  dist_rt_tensor_t two[] = {good, good};
  EXPECT_EQ(runError(model.get(), two, 2),
            "model 'affine' takes 1 input, got 2");
  EXPECT_EQ(runError(model.get(), nullptr, 1),
            "model 'affine': inputs is NULL");
  dist_rt_tensor_t noData = {DIST_RT_DTYPE_FLOAT, 2, goodDims, nullptr};
  EXPECT_EQ(runError(model.get(), &noData, 1), "input 'x': data is NULL");
  dist_rt_tensor_t noDims = {DIST_RT_DTYPE_FLOAT, 2, nullptr, x.data()};
  EXPECT_EQ(runError(model.get(), &noDims, 1),
            "input 'x': dims is NULL for rank 2");

  // The outputs of the last successful run are still there.
  EXPECT_EQ(values(kept[0]), before);
}

/// Inputs a [N] and b [N, M] (dim_names "N" and "N", "M"); output c = a.
bool pairCalled = false;
void pairEntry(void **args) {
  pairCalled = true;
  auto *a = static_cast<MemrefDesc<1> *>(args[0]);
  int64_t n = a->sizes[0];
  auto *c = static_cast<float *>(
      _mlir_memref_to_llvm_alloc(static_cast<size_t>(n > 0 ? n : 1) * 4));
  for (int64_t i = 0; i < n; ++i)
    c[i] = static_cast<const float *>(a->aligned)[a->offset + i];
  OutputWriter out{static_cast<int64_t *>(args[2])};
  out.put(c, c, 0, {n}, {1});
}

TEST_F(ModelTest, DimensionsNamedAlikeMustAgree) {
  const int64_t dynamic1[] = {-1};
  const int64_t dynamic2[] = {-1, -1};
  const char *const aNames[] = {"N"};
  const char *const bNames[] = {"N", "M"};
  const dist_rt_tensor_desc_t inputsDesc[] = {
      {"a", DIST_RT_DTYPE_FLOAT, 1, dynamic1, aNames},
      {"b", DIST_RT_DTYPE_FLOAT, 2, dynamic2, bNames}};
  const dist_rt_tensor_desc_t outputsDesc[] = {
      {"c", DIST_RT_DTYPE_FLOAT, 1, dynamic1, nullptr}};
  dist_rt_model_desc_t desc = {DIST_RT_MODEL_ABI_VERSION,
                               "pair",
                               nullptr,
                               0,
                               nullptr,
                               2,
                               inputsDesc,
                               1,
                               outputsDesc,
                               &pairEntry};
  dist_rt_model_t raw = nullptr;
  ASSERT_EQ(dist_rt_model_create(&desc, nullptr, &raw), nullptr);
  ModelPtr model(raw);
  std::vector<float> data(12, 1.f);
  int64_t a3[] = {3}, b3x4[] = {3, 4}, b2x6[] = {2, 6};
  dist_rt_tensor_t good[] = {{DIST_RT_DTYPE_FLOAT, 1, a3, data.data()},
                             {DIST_RT_DTYPE_FLOAT, 2, b3x4, data.data()}};
  const dist_rt_tensor_t *outputs = nullptr;
  pairCalled = false;
  ASSERT_EQ(dist_rt_model_run(model.get(), good, 2, &outputs), nullptr);
  EXPECT_TRUE(pairCalled);
  // "M" appears once: any size. "N" differs: refused before the code runs.
  dist_rt_tensor_t bad[] = {{DIST_RT_DTYPE_FLOAT, 1, a3, data.data()},
                            {DIST_RT_DTYPE_FLOAT, 2, b2x6, data.data()}};
  pairCalled = false;
  EXPECT_EQ(runError(model.get(), bad, 2),
            "input 'b': dimension 0 ('N') is 2, but input 'a' has 'N' = 3 in "
            "dimension 0 (the model names both 'N')");
  EXPECT_FALSE(pairCalled);
}

TEST_F(ModelTest, OutputOfTheWrongShapeIsAnInternalError) {
  const int64_t four[] = {4};
  const dist_rt_tensor_desc_t outputsDesc[] = {
      {"y", DIST_RT_DTYPE_FLOAT, 1, four}};
  dist_rt_model_desc_t desc = {DIST_RT_MODEL_ABI_VERSION,
                               "bad",
                               nullptr,
                               0,
                               nullptr,
                               0,
                               nullptr,
                               1,
                               outputsDesc,
                               &badShapeEntry};
  dist_rt_model_t raw = nullptr;
  ASSERT_EQ(dist_rt_model_create(&desc, nullptr, &raw), nullptr);
  ModelPtr model(raw);
  const dist_rt_tensor_t *outputs = nullptr;
  StatusPtr status(dist_rt_model_run(model.get(), nullptr, 0, &outputs));
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(dist_rt_status_code(status.get()), DIST_RT_ERROR_INTERNAL);
  EXPECT_EQ(std::string(dist_rt_status_message(status.get())),
            "model 'bad': output 'y' was returned with shape [3], but [4] is "
            "declared");
  EXPECT_EQ(dist_rt_alloc_owns(lastBadBlock), 0);
}

//===----------------------------------------------------------------------===//
// Create errors
//===----------------------------------------------------------------------===//

TEST_F(ModelTest, MissingParamFile) {
  dist_rt_model_desc_t desc = affineDesc();
  std::string missing = dir.file("nope.params");
  dist_rt_model_options_t options;
  dist_rt_model_options_initialize(&options);
  options.param_path = missing.c_str();
  std::string message = createError(desc, &options, DIST_RT_ERROR_IO);
  EXPECT_TRUE(contains(message, "model 'affine'"));
  EXPECT_TRUE(contains(message, missing + ": cannot open"));
}

/// Like the descriptors dist-compile emits, a constant in the binary's data,
/// so that dladdr finds the binary.
const dist_rt_model_desc_t kMissingParamsDesc = {
    DIST_RT_MODEL_ABI_VERSION,
    "affine",
    "dist_rt_model_test_missing.params",
    1,
    kAffineParams,
    1,
    kAffineInputs,
    8,
    kAffineOutputs,
    &affineEntry};

TEST_F(ModelTest, DefaultParamPathIsNextToTheBinary) {
  std::string message =
      createError(kMissingParamsDesc, nullptr, DIST_RT_ERROR_IO);
  std::string expectedPath =
      selfDirectory() + "/dist_rt_model_test_missing.params";
  EXPECT_TRUE(contains(message, expectedPath + ": cannot open"));
}

TEST_F(ModelTest, ParamShapeDtypeAndPresenceAreChecked) {
  dist_rt_model_desc_t desc = affineDesc();
  dist_rt_model_options_t options;
  dist_rt_model_options_initialize(&options);

  std::string wrongShape = writeParams(
      {{"bias", DIST_RT_DTYPE_FLOAT, {5}, toBytes<float>({1, 2, 3, 4, 5})}},
      "shape.params");
  options.param_path = wrongShape.c_str();
  EXPECT_EQ(createError(desc, &options, DIST_RT_ERROR_FORMAT),
            "parameter 'bias' in " + wrongShape +
                " has shape [5], the model expects [4]");

  std::string wrongRank = writeParams(
      {{"bias", DIST_RT_DTYPE_FLOAT, {4, 1}, toBytes<float>({1, 2, 3, 4})}},
      "rank.params");
  options.param_path = wrongRank.c_str();
  EXPECT_EQ(createError(desc, &options, DIST_RT_ERROR_FORMAT),
            "parameter 'bias' in " + wrongRank +
                " has shape [4,1], the model expects [4]");

  std::string wrongDtype = writeParams(
      {{"bias", DIST_RT_DTYPE_DOUBLE, {4}, toBytes<double>({1, 2, 3, 4})}},
      "dtype.params");
  options.param_path = wrongDtype.c_str();
  EXPECT_EQ(createError(desc, &options, DIST_RT_ERROR_FORMAT),
            "parameter 'bias' in " + wrongDtype +
                " has dtype float64, the model expects float32");

  std::string missing = writeParams(
      {{"weight", DIST_RT_DTYPE_FLOAT, {4}, toBytes(kBias)}}, "other.params");
  options.param_path = missing.c_str();
  EXPECT_EQ(createError(desc, &options, DIST_RT_ERROR_NOT_FOUND),
            "parameter 'bias' is missing from " + missing +
                " (model 'affine')");

  std::string corrupt = dir.file("corrupt.params");
  ASSERT_TRUE(writeBytes(corrupt, {'n', 'o', 'p', 'e'}));
  options.param_path = corrupt.c_str();
  std::string message = createError(desc, &options, DIST_RT_ERROR_FORMAT);
  EXPECT_TRUE(contains(message, corrupt));
}

/// A directory of .npy files, as `train --save-params` writes, stands for
/// the parameter file (see dist_rt_model_options_t::param_path).
TEST_F(ModelTest, ParamDirectoryOfNpyFiles) {
  std::string paramDir = dir.file("saved");
  ASSERT_EQ(::mkdir(paramDir.c_str(), 0777), 0);
  std::vector<float> bias = {1.f, 2.f, 3.f, 4.f};
  int64_t four[] = {4};
  StatusPtr status(dist_rt_npy_write((paramDir + "/bias.npy").c_str(),
                                     DIST_RT_DTYPE_FLOAT, 1, four,
                                     bias.data()));
  ASSERT_EQ(status, nullptr);
  dist_rt_model_desc_t desc = affineDesc();
  ModelPtr model = create(desc, paramDir);
  ASSERT_NE(model, nullptr);
  dist_rt_tensor_t param;
  ASSERT_EQ(dist_rt_model_param(model.get(), 0, &param), nullptr);
  EXPECT_EQ(std::vector<float>(static_cast<const float *>(param.data),
                               static_cast<const float *>(param.data) + 4),
            bias);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(param.data) % 64, 0u);
  std::vector<float> x = {1, 1, 1, 1};
  int64_t xDims[] = {1, 4};
  dist_rt_tensor_t input = {DIST_RT_DTYPE_FLOAT, 2, xDims, x.data()};
  const dist_rt_tensor_t *outputs = nullptr;
  ASSERT_EQ(dist_rt_model_run(model.get(), &input, 1, &outputs), nullptr);
  const auto *y = static_cast<const float *>(outputs[0].data);
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{2, 3, 4, 5}));
  const auto *biasOut = static_cast<const float *>(outputs[5].data);
  EXPECT_EQ(std::vector<float>(biasOut, biasOut + 4), bias);
  model.reset();

  // bfloat16 is saved as its uint16 bit patterns (.npy has no bfloat16);
  // another dtype is an error.
  const dist_rt_tensor_desc_t bf16Params[] = {
      {"bias", DIST_RT_DTYPE_BFLOAT16, 1, kVec4}};
  desc.params = bf16Params;
  std::vector<uint16_t> bits = {0x3f80, 0x4000, 0xc040, 0x0000};
  status.reset(dist_rt_npy_write((paramDir + "/bias.npy").c_str(),
                                 DIST_RT_DTYPE_UINT16, 1, four, bits.data()));
  ASSERT_EQ(status, nullptr);
  model = create(desc, paramDir);
  ASSERT_NE(model, nullptr);
  ASSERT_EQ(dist_rt_model_param(model.get(), 0, &param), nullptr);
  EXPECT_EQ(param.dtype, static_cast<uint32_t>(DIST_RT_DTYPE_BFLOAT16));
  EXPECT_EQ(
      std::vector<uint16_t>(static_cast<const uint16_t *>(param.data),
                            static_cast<const uint16_t *>(param.data) + 4),
      bits);
  model.reset();
  status.reset(dist_rt_npy_write((paramDir + "/bias.npy").c_str(),
                                 DIST_RT_DTYPE_FLOAT, 1, four, bias.data()));
  ASSERT_EQ(status, nullptr);
  dist_rt_model_options_t options;
  dist_rt_model_options_initialize(&options);
  options.param_path = paramDir.c_str();
  EXPECT_EQ(createError(desc, &options, DIST_RT_ERROR_FORMAT),
            "parameter 'bias' in " + paramDir +
                "/bias.npy has dtype float32, the model expects bfloat16");
}

TEST_F(ModelTest, BadDescriptorsAndOptions) {
  dist_rt_model_desc_t desc = affineDesc();
  desc.abi_version = 1;
  EXPECT_EQ(createError(desc, nullptr, DIST_RT_ERROR_INVALID_ARGUMENT),
            "model 'affine' was compiled for runtime ABI version 1, this "
            "runtime supports version " +
                std::to_string(DIST_RT_MODEL_ABI_VERSION));

  // An elastic layout set without a usable executable for every size.
  desc = affineDesc();
  const char *const files[] = {"affine.dp2", nullptr};
  dist_rt_elastic_desc_t elastic = {2, 3, files};
  desc.elastic = &elastic;
  EXPECT_EQ(createError(desc, nullptr, DIST_RT_ERROR_INVALID_ARGUMENT),
            "model 'affine': the descriptor names no executable for the "
            "elastic layout of 3 ranks");
  elastic = {3, 2, files};
  EXPECT_EQ(createError(desc, nullptr, DIST_RT_ERROR_INVALID_ARGUMENT),
            "model 'affine': the descriptor's elastic layouts (ranks 3 to 2) "
            "are malformed");

  // A split parameter whose axis the mesh does not have, or whose local
  // extent the blocks do not divide.
  desc = affineDesc();
  std::vector<dist_rt_param_shard_t> shards(desc.num_params,
                                            dist_rt_param_shard_t{-1, 0, 1});
  shards[0] = dist_rt_param_shard_t{0, 0, 1};
  desc.param_shards = shards.data();
  EXPECT_TRUE(
      contains(createError(desc, nullptr, DIST_RT_ERROR_INVALID_ARGUMENT),
               "has an invalid split (axis 0, dimension 0, 1 blocks)"));
  const int64_t meshShape[] = {2};
  const char *const meshNames[] = {"tp"};
  desc.num_mesh_axes = 1;
  desc.mesh_shape = meshShape;
  desc.mesh_axis_names = meshNames;
  shards[0] = dist_rt_param_shard_t{0, 0, 1000};
  EXPECT_TRUE(
      contains(createError(desc, nullptr, DIST_RT_ERROR_INVALID_ARGUMENT),
               "has an invalid split (axis 0, dimension 0, 1000 blocks)"));

  desc = affineDesc();
  desc.entry = nullptr;
  EXPECT_TRUE(
      contains(createError(desc, nullptr, DIST_RT_ERROR_INVALID_ARGUMENT),
               "no entry function"));

  desc = affineDesc();
  desc.param_file = nullptr;
  EXPECT_TRUE(
      contains(createError(desc, nullptr, DIST_RT_ERROR_INVALID_ARGUMENT),
               "no parameter file name"));

  desc = affineDesc();
  dist_rt_model_options_t options;
  dist_rt_model_options_initialize(&options);
  EXPECT_EQ(options.param_path, nullptr);
  EXPECT_EQ(options.num_threads, 0);
  options.param_path = paramPath.c_str();
  options.num_threads = -1;
  EXPECT_TRUE(
      contains(createError(desc, &options, DIST_RT_ERROR_INVALID_ARGUMENT),
               "thread count must not be negative"));

  dist_rt_model_t model = nullptr;
  StatusPtr noDesc(dist_rt_model_create(nullptr, nullptr, &model));
  EXPECT_EQ(dist_rt_status_code(noDesc.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  StatusPtr noOut(dist_rt_model_create(&desc, nullptr, nullptr));
  EXPECT_EQ(dist_rt_status_code(noOut.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  const dist_rt_tensor_t *outputs = nullptr;
  StatusPtr noModel(dist_rt_model_run(nullptr, nullptr, 0, &outputs));
  EXPECT_EQ(dist_rt_status_code(noModel.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(dist_rt_model_desc(nullptr), nullptr);
  dist_rt_model_destroy(nullptr);
}

//===----------------------------------------------------------------------===//
// dist_rt_main
//===----------------------------------------------------------------------===//

class MainTest : public ModelTest {
protected:
  void SetUp() override {
    ModelTest::SetUp();
    inputPath = dir.file("x.npy");
    int64_t dims[] = {2, 4};
    StatusPtr status(dist_rt_npy_write(inputPath.c_str(), DIST_RT_DTYPE_FLOAT,
                                       2, dims, kInput.data()));
    ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  }

  /// Expects exit code 1, nothing on stdout and exactly one line
  /// "error: ..." on stderr that contains `expected`.
  void expectError(const std::vector<std::string> &args,
                   const std::string &expected) {
    dist_rt_model_desc_t desc = affineDesc();
    MainResult result = runMain(args, desc);
    EXPECT_EQ(result.out, "");
    EXPECT_TRUE(failedWith(result, expected));
  }

  const std::vector<float> kInput = {1, 2, 3, 4, -1, -2, -3, -4};
  std::string inputPath;
};

TEST_F(MainTest, WritesEveryOutput) {
  std::string outDir = dir.file("out/nested");
  dist_rt_model_desc_t desc = affineDesc();
  MainResult result = runMain({"--input", "x=" + inputPath, "--output-dir",
                               outDir, "--params", paramPath, "--threads", "2"},
                              desc);
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(result.out, "");
  std::vector<std::string> files = listDirectory(outDir);
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"bias_out.npy", "count.npy",
                                             "every_other.npy", "grp_z.npy",
                                             "x_alias.npy", "y.npy", "y2.npy",
                                             "yt.npy"}));

  dist_rt_npy_array_t y;
  StatusPtr status(dist_rt_npy_read((outDir + "/y.npy").c_str(), &y));
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  EXPECT_EQ(y.dtype, DIST_RT_DTYPE_FLOAT);
  ASSERT_EQ(y.rank, 2u);
  EXPECT_EQ(y.dims[0], 2);
  EXPECT_EQ(y.dims[1], 4);
  const auto *yData = static_cast<const float *>(y.data);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(yData[i], kInput[i] + kBias[i % 4]) << i;
  dist_rt_npy_free(&y);

  dist_rt_npy_array_t mask;
  status.reset(dist_rt_npy_read((outDir + "/grp_z.npy").c_str(), &mask));
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  EXPECT_EQ(mask.dtype, DIST_RT_DTYPE_BOOL);
  ASSERT_EQ(mask.nbytes, 2u);
  EXPECT_EQ(static_cast<const uint8_t *>(mask.data)[0], 1);
  EXPECT_EQ(static_cast<const uint8_t *>(mask.data)[1], 0);
  dist_rt_npy_free(&mask);

  dist_rt_npy_array_t count;
  status.reset(dist_rt_npy_read((outDir + "/count.npy").c_str(), &count));
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  EXPECT_EQ(count.rank, 0u);
  EXPECT_EQ(*static_cast<const int64_t *>(count.data), 42);
  dist_rt_npy_free(&count);
}

TEST_F(MainTest, BenchPrintsOneLatencyLine) {
  std::string outDir = dir.file("bench");
  dist_rt_model_desc_t desc = affineDesc();
  MainResult result =
      runMain({"--input=x=" + inputPath, "--output-dir=" + outDir,
               "--params=" + paramPath, "--bench=5"},
              desc);
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_TRUE(std::regex_match(
      result.out, std::regex("latency_ms_median=[0-9]+\\.[0-9]{6} "
                             "latency_ms_p90=[0-9]+\\.[0-9]{6}\n")))
      << result.out;
  EXPECT_EQ(listDirectory(outDir).size(), 8u);
}

TEST_F(MainTest, HelpDescribesTheModel) {
  dist_rt_model_desc_t desc = affineDesc();
  MainResult result = runMain({"--help"}, desc);
  EXPECT_EQ(result.exitCode, 0);
  EXPECT_EQ(result.err, "");
  EXPECT_TRUE(contains(result.out, "usage: affine --input NAME=FILE.npy"));
  EXPECT_TRUE(contains(result.out, "x: float32 [?,4]"));
  EXPECT_TRUE(contains(result.out, "grp/z: bool [?]"));
}

TEST_F(MainTest, ArgumentErrors) {
  std::string input = "x=" + inputPath;
  expectError({"--frobnicate"}, "unknown option '--frobnicate'");
  expectError({"--input", input, "--frobnicate=3"},
              "unknown option '--frobnicate'");
  expectError({"stray"}, "unexpected argument 'stray'");
  expectError({"--input"}, "option '--input' needs a value");
  expectError({"--params", paramPath, "--output-dir"},
              "option '--output-dir' needs a value");
  expectError({"--params", paramPath}, "missing --input x=FILE.npy");
  expectError({"--input", input, "--input", "x=other.npy"},
              "input 'x' is given more than once");
  expectError({"--input", "w=" + inputPath}, "unknown input 'w'");
  expectError({"--input", inputPath}, "--input expects NAME=FILE");
  expectError({"--input", "x="}, "the file name is empty");
  expectError({"--input", input, "--threads", "many"},
              "--threads expects an integer");
  expectError({"--input", input, "--threads", "-2"},
              "--threads expects an integer");
  expectError({"--input", input, "--bench", "0"},
              "--bench expects a positive integer");
  expectError({"--input", input, "--bench=1x"},
              "--bench expects a positive integer");
}

TEST_F(MainTest, InputAndParameterErrors) {
  std::string outDir = dir.file("out");
  expectError({"--input", "x=" + dir.file("missing.npy"), "--params", paramPath,
               "--output-dir", outDir},
              "input 'x': " + dir.file("missing.npy") + ": cannot open");

  std::string truncated = dir.file("truncated.npy");
  std::vector<uint8_t> bytes = readBytes(inputPath);
  bytes.resize(bytes.size() - 4);
  ASSERT_TRUE(writeBytes(truncated, bytes));
  expectError({"--input", "x=" + truncated, "--params", paramPath,
               "--output-dir", outDir},
              "truncated data");

  std::string wrongShape = dir.file("wrong.npy");
  int64_t dims[] = {1, 8};
  StatusPtr status(dist_rt_npy_write(wrongShape.c_str(), DIST_RT_DTYPE_FLOAT, 2,
                                     dims, kInput.data()));
  ASSERT_EQ(status, nullptr);
  expectError({"--input", "x=" + wrongShape, "--params", paramPath,
               "--output-dir", outDir},
              "input 'x': expected shape [?,4] (float32), got [1,8] "
              "(float32)");

  expectError({"--input", "x=" + inputPath, "--params",
               dir.file("missing.params"), "--output-dir", outDir},
              dir.file("missing.params") + ": cannot open");

  // Nothing was written by the failed runs.
  EXPECT_TRUE(listDirectory(outDir).empty());

  // The output directory cannot be created below a regular file.
  std::string blocker = dir.file("blocker");
  ASSERT_TRUE(writeBytes(blocker, {'x'}));
  expectError({"--input", "x=" + inputPath, "--params", paramPath,
               "--output-dir", blocker + "/out"},
              "cannot create the output directory");
}

} // namespace
