//===- TrainTest.cpp - Tests for training models and `train` ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for the training half of dist_rt/model.h: the checks of
// a training descriptor, dist_rt_model_train_step, dist_rt_model_param,
// dist_rt_lr_at and the `train` subcommand of dist_rt_main. They drive a
// hand-written training step that follows the calling convention of
// dist_rt/model.h: linear regression pred = scale * (x . w) + b with a mean
// squared error loss and SGD with momentum 0.5, where scale is frozen, w and
// b are trained and the two momentum buffers are optimizer state. The step
// records which samples it saw (x[:, 0] * 16 is the sample's index in the
// data files), so the tests can check the batch order.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/kernels.h"
#include "dist_rt/model.h"
#include "dist_rt/npy.h"

#include "RuntimeTestUtils.h"
#include "train_internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

using namespace dist_rt_test;

namespace {

//===----------------------------------------------------------------------===//
// The hand-written model
//===----------------------------------------------------------------------===//

/// A rank-0 memref descriptor.
struct ScalarMemref {
  void *allocated;
  void *aligned;
  int64_t offset;
};

float &element(const ScalarMemref *m) {
  return static_cast<float *>(m->aligned)[m->offset];
}
float &element(const MemrefDesc<1> *m, int64_t i) {
  return static_cast<float *>(m->aligned)[m->offset + i * m->strides[0]];
}
float element(const MemrefDesc<2> *m, int64_t i, int64_t j) {
  return static_cast<const float *>(
      m->aligned)[m->offset + i * m->strides[0] + j * m->strides[1]];
}

constexpr float kMomentum = 0.5f;
/// x[i, 0] = i / kIdScale, so that the step can tell which sample it saw.
constexpr float kIdScale = 16.f;

/// What the training step saw and returned in its calls.
struct StepTrace {
  int calls = 0;
  /// Sample index of every row of every call, in order.
  std::vector<int64_t> samples;
  /// Rows of every call.
  std::vector<int64_t> rows;
  /// The learning rate and step number of the last call.
  float lr = 0;
  float step = 0;
  /// Blocks returned by the last call.
  void *lossBlock = nullptr;
  void *predBlock = nullptr;
} trace;

/// The training step. args: scale, w, b, w_mom, opt/b_mom, x, label, lr,
/// step, results (loss, pred).
void linregTrainEntry(void **args) {
  auto *scale = static_cast<ScalarMemref *>(args[0]);
  auto *w = static_cast<MemrefDesc<1> *>(args[1]);
  auto *b = static_cast<MemrefDesc<1> *>(args[2]);
  auto *wMom = static_cast<MemrefDesc<1> *>(args[3]);
  auto *bMom = static_cast<MemrefDesc<1> *>(args[4]);
  auto *x = static_cast<MemrefDesc<2> *>(args[5]);
  auto *label = static_cast<MemrefDesc<1> *>(args[6]);
  float lr = element(static_cast<ScalarMemref *>(args[7]));
  int64_t rows = x->sizes[0];
  ++trace.calls;
  trace.lr = lr;
  trace.step = element(static_cast<ScalarMemref *>(args[8]));
  trace.rows.push_back(rows);

  auto *pred = static_cast<float *>(
      _mlir_memref_to_llvm_alloc(static_cast<size_t>(rows) * sizeof(float)));
  float s = element(scale);
  float loss = 0, gradW0 = 0, gradW1 = 0, gradB = 0;
  for (int64_t i = 0; i < rows; ++i) {
    float x0 = element(x, i, 0), x1 = element(x, i, 1);
    trace.samples.push_back(std::lround(x0 * kIdScale));
    pred[i] = s * (x0 * element(w, 0) + x1 * element(w, 1)) + element(b, 0);
    float residual = pred[i] - element(label, i);
    loss += residual * residual;
    float dPred = 2 * residual / static_cast<float>(rows);
    gradW0 += dPred * s * x0;
    gradW1 += dPred * s * x1;
    gradB += dPred;
  }
  loss /= static_cast<float>(rows);
  const float grads[] = {gradW0, gradW1};
  for (int64_t j = 0; j < 2; ++j) {
    element(wMom, j) = kMomentum * element(wMom, j) + grads[j];
    element(w, j) -= lr * element(wMom, j);
  }
  element(bMom, 0) = kMomentum * element(bMom, 0) + gradB;
  element(b, 0) -= lr * element(bMom, 0);

  auto *lossBlock = static_cast<float *>(_mlir_memref_to_llvm_alloc(4));
  *lossBlock = loss;
  trace.lossBlock = lossBlock;
  trace.predBlock = pred;
  OutputWriter out{static_cast<int64_t *>(args[9])};
  out.put(lossBlock, lossBlock, 0, {}, {});
  out.put(pred, pred, 0, {rows}, {1});
}

/// linregTrainEntry whose loss turns NaN at step 3.
void nanAtStep3Entry(void **args) {
  linregTrainEntry(args);
  if (trace.step == 3)
    *static_cast<float *>(trace.lossBlock) =
        std::numeric_limits<float>::quiet_NaN();
}

/// Inference: y = scale * (x . w) + b. The inference-only descriptor has
/// three parameters, the training one five (with the optimizer state).
template <int NumParams>
void linregEntry(void **args) {
  auto *scale = static_cast<ScalarMemref *>(args[0]);
  auto *w = static_cast<MemrefDesc<1> *>(args[1]);
  auto *b = static_cast<MemrefDesc<1> *>(args[2]);
  auto *x = static_cast<MemrefDesc<2> *>(args[NumParams]);
  int64_t rows = x->sizes[0];
  auto *y = static_cast<float *>(
      _mlir_memref_to_llvm_alloc(static_cast<size_t>(rows) * sizeof(float)));
  for (int64_t i = 0; i < rows; ++i)
    y[i] = element(scale) * (element(x, i, 0) * element(w, 0) +
                             element(x, i, 1) * element(w, 1)) +
           element(b, 0);
  OutputWriter out{static_cast<int64_t *>(args[NumParams + 1])};
  out.put(y, y, 0, {rows}, {1});
}

const int64_t kTwo[] = {2};
const int64_t kOne[] = {1};
const int64_t kRowsBy2[] = {-1, 2};
const int64_t kRows[] = {-1};
const int64_t kFourBy2[] = {4, 2};
const int64_t kFour[] = {4};

const dist_rt_tensor_desc_t kParams[] = {
    {"scale", DIST_RT_DTYPE_FLOAT, 0, nullptr},
    {"w", DIST_RT_DTYPE_FLOAT, 1, kTwo},
    {"b", DIST_RT_DTYPE_FLOAT, 1, kOne},
    {"w_mom", DIST_RT_DTYPE_FLOAT, 1, kTwo},
    {"opt/b_mom", DIST_RT_DTYPE_FLOAT, 1, kOne},
};
const uint8_t kRoles[] = {DIST_RT_PARAM_FROZEN, DIST_RT_PARAM_TRAINED,
                          DIST_RT_PARAM_TRAINED, DIST_RT_PARAM_STATE,
                          DIST_RT_PARAM_STATE};
const dist_rt_tensor_desc_t kInputs[] = {
    {"x", DIST_RT_DTYPE_FLOAT, 2, kRowsBy2}};
const dist_rt_tensor_desc_t kOutputs[] = {{"y", DIST_RT_DTYPE_FLOAT, 1, kRows}};
const dist_rt_tensor_desc_t kTrainInputs[] = {
    {"x", DIST_RT_DTYPE_FLOAT, 2, kRowsBy2},
    {"label", DIST_RT_DTYPE_FLOAT, 1, kRows}};
/// The same with the batch size fixed to 4.
const dist_rt_tensor_desc_t kStaticTrainInputs[] = {
    {"x", DIST_RT_DTYPE_FLOAT, 2, kFourBy2},
    {"label", DIST_RT_DTYPE_FLOAT, 1, kFour}};
const dist_rt_tensor_desc_t kTrainOutputs[] = {
    {"loss", DIST_RT_DTYPE_FLOAT, 0, nullptr},
    {"pred", DIST_RT_DTYPE_FLOAT, 1, kRows}};

constexpr double kLr = 0.1;

dist_rt_train_desc_t trainDesc(dist_rt_entry_fn_t entry = &linregTrainEntry) {
  return {kRoles, 2,   kTrainInputs,        2, kTrainOutputs,
          entry,  kLr, DIST_RT_LR_CONSTANT, 0, "sgd",
          "mse"};
}

/// The training model (five parameters) when `train` is set, else the
/// inference-only one (three parameters, no optimizer state).
dist_rt_model_desc_t modelDesc(const dist_rt_train_desc_t *train) {
  return {DIST_RT_MODEL_ABI_VERSION,
          "linreg",
          "linreg.params",
          train ? 5u : 3u,
          kParams,
          1,
          kInputs,
          1,
          kOutputs,
          train ? &linregEntry<5> : &linregEntry<3>,
          train};
}

const float kScale = 1.f;
const std::vector<float> kW = {0.5f, -0.5f};
const std::vector<float> kB = {0.25f};

std::vector<uint8_t> paramImage(float scale, const std::vector<float> &w,
                                const std::vector<float> &b) {
  return paramFileImage(
      {{"scale", DIST_RT_DTYPE_FLOAT, {}, toBytes<float>({scale})},
       {"w", DIST_RT_DTYPE_FLOAT, {2}, toBytes(w)},
       {"b", DIST_RT_DTYPE_FLOAT, {1}, toBytes(b)}});
}

std::vector<float> floats(const dist_rt_tensor_t &tensor) {
  size_t count = 1;
  for (uint32_t d = 0; d < tensor.rank; ++d)
    count *= static_cast<size_t>(tensor.dims[d]);
  const auto *data = static_cast<const float *>(tensor.data);
  return std::vector<float>(data, data + count);
}

//===----------------------------------------------------------------------===//
// Fixture
//===----------------------------------------------------------------------===//

class TrainTest : public ::testing::Test {
protected:
  void SetUp() override {
    savedThreads = dist_rt_get_num_threads();
    trace = StepTrace();
    paramPath = dir.file("linreg.params");
    ASSERT_TRUE(writeBytes(paramPath, paramImage(kScale, kW, kB)));
  }
  void TearDown() override { dist_rt_set_num_threads(savedThreads); }

  ModelPtr create(const dist_rt_model_desc_t &desc) {
    dist_rt_model_options_t options;
    dist_rt_model_options_initialize(&options);
    options.param_path = paramPath.c_str();
    options.num_threads = 1;
    dist_rt_model_t model = nullptr;
    StatusPtr status(dist_rt_model_create(&desc, &options, &model));
    EXPECT_EQ(status, nullptr) << dist_rt_status_message(status.get());
    return ModelPtr(model);
  }

  /// Creates a model expecting failure; returns the message.
  std::string createError(const dist_rt_model_desc_t &desc) {
    dist_rt_model_options_t options;
    dist_rt_model_options_initialize(&options);
    options.param_path = paramPath.c_str();
    dist_rt_model_t model = nullptr;
    StatusPtr status(dist_rt_model_create(&desc, &options, &model));
    EXPECT_EQ(model, nullptr);
    dist_rt_model_destroy(model);
    return status ? dist_rt_status_message(status.get()) : "";
  }

  std::vector<float> param(dist_rt_model_t model, size_t index) {
    dist_rt_tensor_t tensor;
    StatusPtr status(dist_rt_model_param(model, index, &tensor));
    EXPECT_EQ(status, nullptr) << dist_rt_status_message(status.get());
    return status ? std::vector<float>() : floats(tensor);
  }

  TempDir dir;
  std::string paramPath;
  int32_t savedThreads = 0;
};

/// One batch of two samples: x = [[1, 2], [3, -1]], label = [1, 0].
struct TwoSamples {
  std::vector<float> x = {1, 2, 3, -1};
  std::vector<float> label = {1, 0};
  int64_t xDims[2] = {2, 2};
  int64_t labelDims[1] = {2};
  dist_rt_tensor_t tensors[2] = {
      {DIST_RT_DTYPE_FLOAT, 2, xDims, x.data()},
      {DIST_RT_DTYPE_FLOAT, 1, labelDims, label.data()}};
};

//===----------------------------------------------------------------------===//
// Training steps
//===----------------------------------------------------------------------===//

TEST_F(TrainTest, StepReturnsTheLossAndUpdatesTheParameters) {
  dist_rt_train_desc_t train = trainDesc();
  dist_rt_model_desc_t desc = modelDesc(&train);
  ModelPtr model = create(desc);
  ASSERT_NE(model, nullptr);

  // pred = [0.5 - 1 + 0.25, 1.5 + 0.5 + 0.25] = [-0.25, 2.25]
  // residual = [-1.25, 2.25], loss = (1.5625 + 5.0625) / 2 = 3.3125
  // dPred = residual, grad w = [-1.25 + 6.75, -2.5 - 2.25] = [5.5, -4.75],
  // grad b = 1; the momentum starts at 0, so it becomes the gradient.
  TwoSamples batch;
  float loss = 0;
  StatusPtr status(
      dist_rt_model_train_step(model.get(), batch.tensors, 2, 0.1f, 1, &loss));
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  EXPECT_FLOAT_EQ(loss, 3.3125f);
  EXPECT_EQ(trace.lr, 0.1f);
  EXPECT_EQ(trace.step, 1.f);
  EXPECT_EQ(param(model.get(), 0), (std::vector<float>{1.f}));
  std::vector<float> w = param(model.get(), 1);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_FLOAT_EQ(w[0], 0.5f - 0.1f * 5.5f);
  EXPECT_FLOAT_EQ(w[1], -0.5f + 0.1f * 4.75f);
  std::vector<float> b = param(model.get(), 2);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_FLOAT_EQ(b[0], 0.25f - 0.1f);
  EXPECT_EQ(param(model.get(), 3), (std::vector<float>{5.5f, -4.75f}));
  EXPECT_EQ(param(model.get(), 4), (std::vector<float>{1.f}));

  // The loss and the other output were allocator blocks: both are freed.
  EXPECT_EQ(dist_rt_alloc_owns(trace.lossBlock), 0);
  EXPECT_EQ(dist_rt_alloc_owns(trace.predBlock), 0);

  // The second step uses the momentum: v = 0.5 * v + g.
  status.reset(
      dist_rt_model_train_step(model.get(), batch.tensors, 2, 0.05f, 2, &loss));
  ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  EXPECT_EQ(trace.step, 2.f);
  EXPECT_EQ(trace.lr, 0.05f);
  std::vector<float> wMom = param(model.get(), 3);
  EXPECT_NE(wMom[0], 5.5f);
}

TEST_F(TrainTest, ParametersAreZeroedOrCopiedIntoPrivateBuffers) {
  dist_rt_train_desc_t train = trainDesc();
  dist_rt_model_desc_t desc = modelDesc(&train);
  ModelPtr model = create(desc);
  ASSERT_NE(model, nullptr);

  // The optimizer state is not in the file: it starts at zero.
  EXPECT_EQ(param(model.get(), 3), (std::vector<float>{0.f, 0.f}));
  EXPECT_EQ(param(model.get(), 4), (std::vector<float>{0.f}));
  EXPECT_EQ(param(model.get(), 1), kW);
  EXPECT_EQ(param(model.get(), 2), kB);
  for (size_t i = 0; i < 5; ++i) {
    dist_rt_tensor_t tensor;
    StatusPtr status(dist_rt_model_param(model.get(), i, &tensor));
    ASSERT_EQ(status, nullptr);
    EXPECT_EQ(tensor.dtype, static_cast<uint32_t>(DIST_RT_DTYPE_FLOAT));
    EXPECT_EQ(tensor.rank, kParams[i].rank);
    for (uint32_t d = 0; d < tensor.rank; ++d)
      EXPECT_EQ(tensor.dims[d], kParams[i].dims[d]);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor.data) % 64, 0u) << i;
  }

  // Rewriting the file in place (same inode, same size) would show through
  // a mapping; the copies keep the values read at creation.
  ASSERT_TRUE(writeBytes(paramPath, paramImage(9.f, {9.f, 9.f}, {9.f})));
  EXPECT_EQ(param(model.get(), 0), (std::vector<float>{kScale}));
  EXPECT_EQ(param(model.get(), 1), kW);

  // A restored checkpoint writes into the live buffers.
  dist_rt_tensor_t w;
  ASSERT_EQ(dist_rt_model_param(model.get(), 1, &w), nullptr);
  static_cast<float *>(w.data)[0] = 3.f;
  EXPECT_EQ(param(model.get(), 1), (std::vector<float>{3.f, -0.5f}));
}

TEST_F(TrainTest, InferenceSeesTheTrainedValues) {
  dist_rt_train_desc_t train = trainDesc();
  dist_rt_model_desc_t desc = modelDesc(&train);
  ModelPtr model = create(desc);
  ASSERT_NE(model, nullptr);
  std::vector<float> x = {1, 1};
  int64_t xDims[] = {1, 2};
  dist_rt_tensor_t input = {DIST_RT_DTYPE_FLOAT, 2, xDims, x.data()};
  const dist_rt_tensor_t *outputs = nullptr;
  ASSERT_EQ(dist_rt_model_run(model.get(), &input, 1, &outputs), nullptr);
  EXPECT_EQ(floats(outputs[0]), (std::vector<float>{0.25f}));

  TwoSamples batch;
  float loss = 0;
  ASSERT_EQ(
      dist_rt_model_train_step(model.get(), batch.tensors, 2, 0.1f, 1, &loss),
      nullptr);
  std::vector<float> w = param(model.get(), 1), b = param(model.get(), 2);
  ASSERT_EQ(dist_rt_model_run(model.get(), &input, 1, &outputs), nullptr);
  EXPECT_EQ(floats(outputs[0]), (std::vector<float>{(w[0] + w[1]) + b[0]}));
  EXPECT_NE(floats(outputs[0])[0], 0.25f);
}

TEST_F(TrainTest, StepRejectsBadInputsAndLeavesTheParametersAlone) {
  dist_rt_train_desc_t train = trainDesc();
  dist_rt_model_desc_t desc = modelDesc(&train);
  ModelPtr model = create(desc);
  ASSERT_NE(model, nullptr);
  auto stepError = [&](const dist_rt_tensor_t *inputs, size_t count) {
    float loss = -1;
    StatusPtr status(
        dist_rt_model_train_step(model.get(), inputs, count, 0.1f, 1, &loss));
    EXPECT_NE(status, nullptr);
    EXPECT_EQ(loss, -1.f);
    return status ? std::string(dist_rt_status_message(status.get())) : "";
  };

  TwoSamples batch;
  EXPECT_EQ(stepError(batch.tensors, 1),
            "model 'linreg' takes 2 train inputs, got 1");
  dist_rt_tensor_t wrongDtype[] = {batch.tensors[0], batch.tensors[1]};
  wrongDtype[1].dtype = DIST_RT_DTYPE_INT32;
  EXPECT_EQ(stepError(wrongDtype, 2), "train input 'label': expected shape "
                                      "[?] (float32), got [2] (int32)");
  int64_t threeRows[] = {3};
  std::vector<float> threeLabels = {1, 2, 3};
  dist_rt_tensor_t mismatched[] = {
      batch.tensors[0],
      {DIST_RT_DTYPE_FLOAT, 1, threeRows, threeLabels.data()}};
  EXPECT_EQ(stepError(mismatched, 2),
            "train input 'label': batch size 3 differs from the 2 of train "
            "input 'x'");
  EXPECT_EQ(stepError(nullptr, 2), "model 'linreg': inputs is NULL");

  EXPECT_EQ(trace.calls, 0);
  EXPECT_EQ(param(model.get(), 1), kW);
  EXPECT_EQ(param(model.get(), 3), (std::vector<float>{0.f, 0.f}));

  StatusPtr noLoss(dist_rt_model_train_step(model.get(), batch.tensors, 2, 0.1f,
                                            1, nullptr));
  EXPECT_EQ(dist_rt_status_code(noLoss.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  float loss = 0;
  StatusPtr noModel(
      dist_rt_model_train_step(nullptr, batch.tensors, 2, 0.1f, 1, &loss));
  EXPECT_EQ(dist_rt_status_code(noModel.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
}

/// Class labels (int64) of a cross_entropy step are checked before the step
/// runs: each is a class in [0, label_classes) or the ignore index.
TEST_F(TrainTest, StepRejectsLabelsThatAreNotClasses) {
  static const dist_rt_tensor_desc_t classInputs[] = {
      {"x", DIST_RT_DTYPE_FLOAT, 2, kRowsBy2},
      {"label", DIST_RT_DTYPE_INT64, 1, kRows}};
  dist_rt_train_desc_t train = trainDesc();
  train.inputs = classInputs;
  train.loss = "cross_entropy";
  train.label_classes = 3;
  train.label_ignore_index = -100;
  dist_rt_model_desc_t desc = modelDesc(&train);
  ModelPtr model = create(desc);
  ASSERT_NE(model, nullptr);
  auto stepStatus = [&](dist_rt_model_t m, std::vector<int64_t> labels) {
    TwoSamples batch;
    dist_rt_tensor_t inputs[] = {
        batch.tensors[0],
        {DIST_RT_DTYPE_INT64, 1, batch.labelDims, labels.data()}};
    float loss = -1;
    StatusPtr status(dist_rt_model_train_step(m, inputs, 2, 0.1f, 1, &loss));
    return status ? std::string(dist_rt_status_message(status.get())) : "";
  };
  EXPECT_EQ(stepStatus(model.get(), {0, 3}),
            "train input 'label': element [1] is 3, not a class in [0, 3) nor "
            "the ignore index -100");
  EXPECT_EQ(stepStatus(model.get(), {-1, 2}),
            "train input 'label': element [0] is -1, not a class in [0, 3) "
            "nor the ignore index -100");
  EXPECT_EQ(trace.calls, 0);
  EXPECT_EQ(param(model.get(), 1), kW);
  // Classes and the ignore index pass the check (the stand-in step then
  // runs on whatever it reads).
  EXPECT_EQ(stepStatus(model.get(), {2, -100}), "");
  EXPECT_EQ(trace.calls, 1);
  // Without a class count nothing is checked.
  train.label_classes = 0;
  ModelPtr unchecked = create(desc);
  ASSERT_NE(unchecked, nullptr);
  EXPECT_EQ(stepStatus(unchecked.get(), {7, -5}), "");
}

TEST_F(TrainTest, InferenceOnlyModelsCannotTrainAndKeepTheMapping) {
  dist_rt_model_desc_t desc = modelDesc(nullptr);
  ModelPtr model = create(desc);
  ASSERT_NE(model, nullptr);
  TwoSamples batch;
  float loss = 0;
  StatusPtr status(
      dist_rt_model_train_step(model.get(), batch.tensors, 2, 0.1f, 1, &loss));
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(std::string(dist_rt_status_message(status.get())),
            "model 'linreg' was not compiled for training (dist-opt --train)");
  EXPECT_EQ(param(model.get(), 1), kW);

  // Without a training step the parameters are read in place from the
  // mapping: rewriting the file in place shows through.
  ASSERT_TRUE(writeBytes(paramPath, paramImage(2.f, {7.f, 8.f}, {9.f})));
  EXPECT_EQ(param(model.get(), 1), (std::vector<float>{7.f, 8.f}));
  std::vector<float> x = {1, 1};
  int64_t xDims[] = {1, 2};
  dist_rt_tensor_t input = {DIST_RT_DTYPE_FLOAT, 2, xDims, x.data()};
  const dist_rt_tensor_t *outputs = nullptr;
  ASSERT_EQ(dist_rt_model_run(model.get(), &input, 1, &outputs), nullptr);
  EXPECT_EQ(floats(outputs[0]), (std::vector<float>{2.f * 15.f + 9.f}));

  dist_rt_tensor_t tensor;
  StatusPtr outOfRange(dist_rt_model_param(model.get(), 3, &tensor));
  ASSERT_NE(outOfRange, nullptr);
  EXPECT_EQ(std::string(dist_rt_status_message(outOfRange.get())),
            "model 'linreg': parameter index 3 is out of range (it has 3)");
  EXPECT_EQ(tensor.data, nullptr);
  StatusPtr noOut(dist_rt_model_param(model.get(), 0, nullptr));
  EXPECT_EQ(dist_rt_status_code(noOut.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
  StatusPtr noModel(dist_rt_model_param(nullptr, 0, &tensor));
  EXPECT_EQ(dist_rt_status_code(noModel.get()), DIST_RT_ERROR_INVALID_ARGUMENT);
}

TEST_F(TrainTest, CreateChecksTheTrainingDescriptor) {
  dist_rt_train_desc_t train = trainDesc();
  dist_rt_model_desc_t desc = modelDesc(&train);

  train.param_roles = nullptr;
  EXPECT_EQ(createError(desc),
            "model 'linreg': the training step has no parameter roles");
  const uint8_t badRoles[] = {0, 1, 1, 2, 4};
  train = trainDesc();
  train.param_roles = badRoles;
  EXPECT_EQ(createError(desc),
            "model 'linreg': parameter 'opt/b_mom' has an invalid role 4");
  const uint8_t psRoles[] = {0, 1, 1, 2, DIST_RT_PARAM_PS};
  train.param_roles = psRoles;
  EXPECT_EQ(createError(desc),
            "model 'linreg': parameter 'opt/b_mom' is a parameter-server "
            "table that no lookup reads");
  train = trainDesc(nullptr);
  EXPECT_EQ(createError(desc),
            "model 'linreg': the training step has no entry function");
  train = trainDesc();
  train.outputs = kTrainOutputs + 1;
  train.num_outputs = 1;
  EXPECT_EQ(createError(desc), "model 'linreg': the first output of the "
                               "training step must be the loss, a float32 "
                               "scalar");
  train = trainDesc();
  train.num_outputs = 0;
  EXPECT_TRUE(contains(createError(desc), "must be the loss"));
  const dist_rt_tensor_desc_t scalarInput[] = {
      {"x", DIST_RT_DTYPE_FLOAT, 0, nullptr}};
  train = trainDesc();
  train.inputs = scalarInput;
  train.num_inputs = 1;
  EXPECT_EQ(createError(desc), "model 'linreg': train input 'x' has no "
                               "batch dimension (rank 0)");
  train = trainDesc();
  train.inputs = nullptr;
  EXPECT_EQ(createError(desc), "model 'linreg': 2 train inputs are declared "
                               "but the array is NULL");
  train = trainDesc();
  train.lr_schedule = 7;
  EXPECT_EQ(createError(desc),
            "model 'linreg': unknown learning-rate schedule 7");

  // Pipeline stages: every stage needs the functions its schedule runs.
  const int32_t stages[] = {0, 0, 1, -1, -1};
  const dist_rt_pipeline_fn_t fns[] = {{"f0", 0, DIST_RT_PIPELINE_FORWARD, 0,
                                        nullptr, 0, nullptr, &linregTrainEntry},
                                       {"b0", 0, DIST_RT_PIPELINE_BACKWARD, 0,
                                        nullptr, 0, nullptr, &linregTrainEntry},
                                       {"u0", 0, DIST_RT_PIPELINE_UPDATE, 0,
                                        nullptr, 0, nullptr, &linregTrainEntry},
                                       {"f1", 1, DIST_RT_PIPELINE_FORWARD, 0,
                                        nullptr, 0, nullptr,
                                        &linregTrainEntry}};
  dist_rt_pipeline_desc_t pipeline = {2, 2, 1, 4, fns, stages};
  train = trainDesc(nullptr);
  train.pipeline = &pipeline;
  EXPECT_EQ(createError(desc), "model 'linreg': malformed pipeline: a stage "
                               "lacks a function its schedule runs");
  pipeline.micro_batches = 0;
  EXPECT_EQ(createError(desc), "model 'linreg': malformed pipeline: no "
                               "stages or no micro-batches");
  pipeline.micro_batches = 2;
  pipeline.schedule = 9;
  EXPECT_EQ(createError(desc),
            "model 'linreg': malformed pipeline: unknown schedule");
  pipeline.schedule = 1;
  const int32_t badStages[] = {0, 0, 2, -1, -1};
  pipeline.param_stages = badStages;
  EXPECT_EQ(createError(desc), "model 'linreg': malformed pipeline: a "
                               "parameter's stage is out of range");
  // Every stage complete (a sync included), and one function of an action
  // past the last (DIST_RT_PIPELINE_SYNC).
  pipeline.param_stages = stages;
  auto fn = [](const char *name, uint32_t stage, uint32_t action) {
    return dist_rt_pipeline_fn_t{name,    stage, action,  0,
                                 nullptr, 0,     nullptr, &linregTrainEntry};
  };
  const dist_rt_pipeline_fn_t complete[] = {
      fn("f0", 0, DIST_RT_PIPELINE_FORWARD),
      fn("b0", 0, DIST_RT_PIPELINE_BACKWARD),
      fn("u0", 0, DIST_RT_PIPELINE_UPDATE),
      fn("f1", 1, DIST_RT_PIPELINE_FORWARD),
      fn("b1", 1, DIST_RT_PIPELINE_BACKWARD),
      fn("u1", 1, DIST_RT_PIPELINE_UPDATE),
      fn("s1", 1, DIST_RT_PIPELINE_SYNC),
      fn("x1", 1, DIST_RT_PIPELINE_NORM + 1)};
  pipeline.fns = complete;
  pipeline.num_fns = 8;
  EXPECT_EQ(createError(desc), "model 'linreg': malformed pipeline: a "
                               "function without a name or entry, or out of "
                               "range");

  // Optimizer state needs a static shape: the file cannot tell it.
  const int64_t dynamic[] = {-1};
  dist_rt_tensor_desc_t params[5];
  std::copy(kParams, kParams + 5, params);
  params[4].dims = dynamic;
  train = trainDesc();
  desc.params = params;
  EXPECT_EQ(createError(desc), "model 'linreg': optimizer state 'opt/b_mom' "
                               "has a dynamic shape [?]");

  // A trained parameter must be in the file, like any inference parameter.
  desc = modelDesc(&train);
  ASSERT_TRUE(writeBytes(
      paramPath,
      paramFileImage({{"scale", DIST_RT_DTYPE_FLOAT, {}, toBytes<float>({1})},
                      {"b", DIST_RT_DTYPE_FLOAT, {1}, toBytes(kB)}})));
  EXPECT_EQ(createError(desc),
            "parameter 'w' is missing from " + paramPath + " (model 'linreg')");
}

//===----------------------------------------------------------------------===//
// Learning-rate schedules
//===----------------------------------------------------------------------===//

TEST(LrScheduleTest, MatchesTheDocumentedFormulas) {
  dist_rt_train_desc_t train = trainDesc();
  train.lr = 0.5;
  EXPECT_EQ(dist_rt_lr_at(&train, 0, 10), 0.5);
  EXPECT_EQ(dist_rt_lr_at(&train, 9, 10), 0.5);
  EXPECT_EQ(dist_rt_lr_at(nullptr, 0, 10), 0.0);

  // CosineAnnealingLR(T_max = 8, eta_min = 0).
  train.lr_schedule = DIST_RT_LR_COSINE;
  EXPECT_DOUBLE_EQ(dist_rt_lr_at(&train, 0, 8), 0.5);
  EXPECT_DOUBLE_EQ(dist_rt_lr_at(&train, 2, 8),
                   0.5 * (1 + std::sqrt(0.5)) / 2); // cos(pi / 4)
  EXPECT_NEAR(dist_rt_lr_at(&train, 4, 8), 0.25, 1e-15);
  EXPECT_NEAR(dist_rt_lr_at(&train, 8, 8), 0.0, 1e-15);
  EXPECT_EQ(dist_rt_lr_at(&train, 0, 0), 0.5);

  // Warm-up over 4 steps, then linear decay to 0 at step 12.
  train.lr_schedule = DIST_RT_LR_WARMUP_LINEAR;
  train.warmup_steps = 4;
  EXPECT_EQ(dist_rt_lr_at(&train, 0, 12), 0.0);
  EXPECT_EQ(dist_rt_lr_at(&train, 1, 12), 0.125);
  EXPECT_EQ(dist_rt_lr_at(&train, 3, 12), 0.375);
  EXPECT_EQ(dist_rt_lr_at(&train, 4, 12), 0.5);
  EXPECT_EQ(dist_rt_lr_at(&train, 6, 12), 0.375);
  EXPECT_EQ(dist_rt_lr_at(&train, 10, 12), 0.125);
  EXPECT_EQ(dist_rt_lr_at(&train, 12, 12), 0.0);
  EXPECT_EQ(dist_rt_lr_at(&train, 15, 12), 0.0);
  // No warm-up: the decay starts at lr.
  train.warmup_steps = 0;
  EXPECT_EQ(dist_rt_lr_at(&train, 0, 10), 0.5);
  EXPECT_EQ(dist_rt_lr_at(&train, 5, 10), 0.25);
  // A run shorter than the warm-up never leaves it; past it the rate is 0.
  train.warmup_steps = 8;
  EXPECT_EQ(dist_rt_lr_at(&train, 2, 4), 0.125);
  EXPECT_EQ(dist_rt_lr_at(&train, 8, 4), 0.0);
  EXPECT_EQ(dist_rt_lr_at(&train, 0, 0), 0.0);
}

//===----------------------------------------------------------------------===//
// The train subcommand
//===----------------------------------------------------------------------===//

/// One line of a --log file.
struct LogLine {
  int64_t step;
  std::string loss;
  double lr;
  double samplesPerS;
  double elapsedS;
};

std::vector<LogLine> readLog(const std::string &path) {
  std::vector<uint8_t> bytes = readBytes(path);
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  std::regex pattern(R"(\{"step": (\d+), "loss": ([-+.0-9eE]+|NaN), "lr": )"
                     R"(([-+.0-9eE]+), "samples_per_s": ([-+.0-9eE]+), )"
                     R"("elapsed_s": ([-+.0-9eE]+)\})");
  std::vector<LogLine> lines;
  std::string line;
  while (std::getline(in, line)) {
    std::smatch match;
    EXPECT_TRUE(std::regex_match(line, match, pattern)) << line;
    if (!match.empty())
      lines.push_back({std::stoll(match[1]), match[2], std::stod(match[3]),
                       std::stod(match[4]), std::stod(match[5])});
  }
  return lines;
}

/// The order of `count` samples that the documentation of dist_rt_main
/// describes for one epoch with `seed`.
std::vector<int64_t> documentedShuffle(int64_t count, uint64_t seed) {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < count; ++i)
    order.push_back(i);
  std::mt19937_64 engine(seed);
  for (int64_t i = count - 1; i > 0; --i) {
    auto bound = static_cast<uint64_t>(i + 1);
    uint64_t lowest =
        (std::numeric_limits<uint64_t>::max() - bound + 1) % bound;
    uint64_t draw = engine();
    while (draw < lowest)
      draw = engine();
    std::swap(order[static_cast<size_t>(i)], order[draw % bound]);
  }
  return order;
}

class TrainMainTest : public TrainTest {
protected:
  void SetUp() override {
    TrainTest::SetUp();
    xPath = dir.file("x.npy");
    labelPath = dir.file("label.npy");
    writeData(16, xPath, labelPath);
  }

  /// Writes `count` samples of y = 2 * x0 - 3 * x1 + 0.5.
  void writeData(int64_t count, const std::string &x, const std::string &y) {
    std::vector<float> xs, ys;
    for (int64_t i = 0; i < count; ++i) {
      float x0 = static_cast<float>(i) / kIdScale;
      float x1 = static_cast<float>((i * 7) % 5) / 5.f - 0.4f;
      xs.insert(xs.end(), {x0, x1});
      ys.push_back(2 * x0 - 3 * x1 + 0.5f);
    }
    int64_t xDims[] = {count, 2};
    StatusPtr status(
        dist_rt_npy_write(x.c_str(), DIST_RT_DTYPE_FLOAT, 2, xDims, xs.data()));
    ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
    status.reset(dist_rt_npy_write(y.c_str(), DIST_RT_DTYPE_FLOAT, 1, &count,
                                   ys.data()));
    ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
  }

  /// `train` with the data and parameter files, then `args`.
  MainResult train(const std::vector<std::string> &args,
                   const dist_rt_model_desc_t &desc) {
    std::vector<std::string> all = {
        "train",    "--data", "x=" + xPath, "--data", "label=" + labelPath,
        "--params", paramPath};
    all.insert(all.end(), args.begin(), args.end());
    trace.samples.clear();
    trace.rows.clear();
    return runMain(all, desc);
  }

  /// Reads a float32 .npy file.
  std::vector<float> readFloats(const std::string &path) {
    dist_rt_npy_array_t array;
    StatusPtr status(dist_rt_npy_read(path.c_str(), &array));
    EXPECT_EQ(status, nullptr) << dist_rt_status_message(status.get());
    if (status)
      return {};
    EXPECT_EQ(array.dtype, static_cast<uint32_t>(DIST_RT_DTYPE_FLOAT));
    const auto *data = static_cast<const float *>(array.data);
    std::vector<float> values(data, data + array.nbytes / sizeof(float));
    dist_rt_npy_free(&array);
    return values;
  }

  std::string xPath;
  std::string labelPath;
};

TEST_F(TrainMainTest, LossDecreasesAndTheLogHasALinePerStep) {
  dist_rt_train_desc_t trainStep = trainDesc();
  dist_rt_model_desc_t desc = modelDesc(&trainStep);
  std::string log = dir.file("metrics.jsonl");
  MainResult result =
      train({"--batch-size", "4", "--steps", "40", "--log", log}, desc);
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err, "");

  std::vector<LogLine> lines = readLog(log);
  ASSERT_EQ(lines.size(), 40u);
  double first = 0, last = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].step, static_cast<int64_t>(i + 1));
    EXPECT_EQ(lines[i].lr, kLr);
    EXPECT_GT(lines[i].samplesPerS, 0);
    // Seconds since the run started, at each step's end.
    EXPECT_GE(lines[i].elapsedS, i ? lines[i - 1].elapsedS : 0.0);
    if (i < 4)
      first += std::stod(lines[i].loss);
    if (i >= 36)
      last += std::stod(lines[i].loss);
  }
  EXPECT_LT(last, first / 4);
  EXPECT_EQ(trace.calls, 40);
  EXPECT_EQ(trace.step, 40.f);
  EXPECT_EQ(trace.lr, static_cast<float>(kLr));
  // File order: batch b of every epoch is samples 4b .. 4b+3.
  ASSERT_EQ(trace.samples.size(), 160u);
  for (size_t i = 0; i < trace.samples.size(); ++i)
    EXPECT_EQ(trace.samples[i], static_cast<int64_t>(i % 16)) << i;

  // Not a terminal: a line every tenth of the run, then a summary.
  std::istringstream out(result.out);
  std::string line;
  std::regex progress(
      R"(step (\d+)/40 loss=[-+.0-9eE]+ lr=0\.1 samples_per_s=[.0-9]+)");
  int64_t expectedStep = 4;
  while (std::getline(out, line) && expectedStep <= 40) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, progress)) << line;
    EXPECT_EQ(std::stoll(match[1]), expectedStep);
    expectedStep += 4;
  }
  EXPECT_EQ(expectedStep, 44);
  EXPECT_TRUE(std::regex_match(
      line, std::regex(R"(trained 40 steps in [.0-9]+ s, final loss .+)")))
      << line;
  EXPECT_FALSE(std::getline(out, line));
}

TEST_F(TrainMainTest, SaveParamsWritesWhatTheStepsComputed) {
  dist_rt_train_desc_t trainStep = trainDesc();
  trainStep.lr_schedule = DIST_RT_LR_COSINE;
  dist_rt_model_desc_t desc = modelDesc(&trainStep);
  std::string saved = dir.file("saved/params");
  MainResult result = train(
      {"--batch-size", "8", "--steps", "5", "--quiet", "--save-params", saved},
      desc);
  ASSERT_EQ(result.exitCode, 0) << result.err;
  std::vector<std::string> files = listDirectory(saved);
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"b.npy", "scale.npy", "w.npy"}));

  // The same steps in-process: batches in file order, lr from the schedule.
  ModelPtr model = create(desc);
  ASSERT_NE(model, nullptr);
  std::vector<float> x = readFloats(xPath), label = readFloats(labelPath);
  for (int64_t step = 0; step < 5; ++step) {
    int64_t first = (step % 2) * 8;
    int64_t xDims[] = {8, 2}, labelDims[] = {8};
    dist_rt_tensor_t batch[] = {
        {DIST_RT_DTYPE_FLOAT, 2, xDims, x.data() + first * 2},
        {DIST_RT_DTYPE_FLOAT, 1, labelDims, label.data() + first}};
    float loss = 0;
    auto lr = static_cast<float>(dist_rt_lr_at(&trainStep, step, 5));
    ASSERT_EQ(
        dist_rt_model_train_step(model.get(), batch, 2, lr, step + 1, &loss),
        nullptr);
    EXPECT_EQ(trace.lr, lr);
  }
  EXPECT_EQ(readFloats(saved + "/scale.npy"), param(model.get(), 0));
  EXPECT_EQ(readFloats(saved + "/w.npy"), param(model.get(), 1));
  EXPECT_EQ(readFloats(saved + "/b.npy"), param(model.get(), 2));
  EXPECT_NE(readFloats(saved + "/w.npy"), kW);
}

TEST_F(TrainMainTest, ResumingFromACheckpointMatchesAStraightRun) {
  dist_rt_train_desc_t trainStep = trainDesc();
  dist_rt_model_desc_t desc = modelDesc(&trainStep);
  std::string straight = dir.file("straight");
  std::string split = dir.file("split");
  std::vector<std::string> common = {
      "--batch-size",       "4", "--shuffle", "--seed", "3",
      "--checkpoint-every", "4"};
  auto run = [&](const std::string &out, std::vector<std::string> args) {
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), {"--checkpoint-dir", out + "/ckpt", "--log",
                             out + "/log", "--save-params", out + "/params"});
    return train(args, desc);
  };

  MainResult result = run(straight, {"--steps", "20"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  std::vector<int64_t> straightSamples = trace.samples;
  result = run(split, {"--steps", "10"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  std::vector<int64_t> splitSamples = trace.samples;
  std::vector<std::string> checkpoints = listDirectory(split + "/ckpt");
  std::sort(checkpoints.begin(), checkpoints.end());
  EXPECT_EQ(checkpoints,
            (std::vector<std::string>{"durable", "latest", "step-00000008",
                                      "step-00000010"}));
  result = run(split, {"--steps", "20", "--resume", split + "/ckpt"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "trained 10 steps in"));
  splitSamples.insert(splitSamples.end(), trace.samples.begin(),
                      trace.samples.end());
  EXPECT_EQ(splitSamples, straightSamples);

  // Only the two newest checkpoints are left (all flushed), and `latest`
  // and `durable` name the last.
  for (const std::string &out : {straight, split}) {
    checkpoints = listDirectory(out + "/ckpt");
    std::sort(checkpoints.begin(), checkpoints.end());
    EXPECT_EQ(checkpoints,
              (std::vector<std::string>{"durable", "latest", "step-00000016",
                                        "step-00000020"}));
    std::vector<uint8_t> latest = readBytes(out + "/ckpt/latest");
    EXPECT_EQ(std::string(latest.begin(), latest.end()), "step-00000020\n");
    std::vector<uint8_t> durable = readBytes(out + "/ckpt/durable");
    EXPECT_EQ(std::string(durable.begin(), durable.end()), "step-00000020\n");
    std::vector<uint8_t> state =
        readBytes(out + "/ckpt/step-00000020/state.json");
    EXPECT_EQ(std::string(state.begin(), state.end()),
              "{\"step\": 20, \"total_steps\": 20, \"seed\": 3, "
              "\"batch_size\": 4, \"shuffle\": 1, \"model\": \"linreg\"}\n");
  }
  // Bitwise the same parameters and optimizer state.
  std::vector<std::string> names = {"scale.npy", "w.npy", "b.npy", "w_mom.npy",
                                    "opt_b_mom.npy"};
  std::vector<std::string> inCheckpoint =
      listDirectory(split + "/ckpt/step-00000020");
  std::sort(inCheckpoint.begin(), inCheckpoint.end());
  EXPECT_EQ(inCheckpoint,
            (std::vector<std::string>{"b.npy", "opt_b_mom.npy", "scale.npy",
                                      "state.json", "w.npy", "w_mom.npy"}));
  for (const std::string &name : names)
    EXPECT_EQ(readBytes(split + "/ckpt/step-00000020/" + name),
              readBytes(straight + "/ckpt/step-00000020/" + name))
        << name;
  for (const char *name : {"scale.npy", "w.npy", "b.npy"})
    EXPECT_EQ(readBytes(split + "/params/" + name),
              readBytes(straight + "/params/" + name))
        << name;
  EXPECT_NE(readFloats(straight + "/ckpt/step-00000020/w_mom.npy"),
            (std::vector<float>{0.f, 0.f}));

  // The resumed run appended to the log: the same 20 lines.
  std::vector<LogLine> straightLog = readLog(straight + "/log");
  std::vector<LogLine> splitLog = readLog(split + "/log");
  ASSERT_EQ(straightLog.size(), 20u);
  ASSERT_EQ(splitLog.size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(splitLog[i].step, static_cast<int64_t>(i + 1));
    EXPECT_EQ(splitLog[i].loss, straightLog[i].loss) << i;
  }

  // Resuming a finished run has nothing to do.
  result = run(split, {"--steps", "20", "--resume", split + "/ckpt"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_TRUE(trace.samples.empty());
  EXPECT_TRUE(contains(result.out, "nothing to train"));
}

// Checkpoints written in parts by the ranks of a job (two threads play the
// ranks here): rank 0 puts one into place once every other rank's note is
// in, and the files are those one process writes; a rank's failure is
// reported by rank 0, and a rank that writes nothing is given up on after
// the job's communication timeout.
/// The training model and its parameters' file names, for the tests of
/// checkpoints written in parts.
class CheckpointPartsTest : public TrainMainTest {
protected:
  void SetUp() override {
    TrainMainTest::SetUp();
    trainStep = trainDesc();
    desc = modelDesc(&trainStep);
    model = create(desc);
    ASSERT_NE(model, nullptr);
    std::string error;
    ASSERT_TRUE(dist_rt::driver::train_impl::paramFileNames(desc, names, error))
        << error;
  }
  dist_rt_train_desc_t trainStep;
  dist_rt_model_desc_t desc;
  ModelPtr model;
  std::vector<std::string> names;
  long pid = static_cast<long>(::getpid());
};

TEST_F(CheckpointPartsTest, WaitForEveryRank) {
  using namespace dist_rt::driver::train_impl;
  std::string error;
  CheckpointState state{4, 10, 1, 2, 0, desc.name};

  std::string alone = dir.file("alone");
  SnapshotPart whole;
  ASSERT_TRUE(whole.copy(model.get(), 0, 1, error)) << error;
  ASSERT_TRUE(saveCheckpointPart(alone, whole, names, state, false, 0, pid, 0,
                                 1, error))
      << error;

  std::string two = dir.file("two");
  SnapshotPart first, second;
  ASSERT_TRUE(first.copy(model.get(), 0, 2, error)) << error;
  ASSERT_TRUE(second.copy(model.get(), 1, 2, error)) << error;
  bool secondOk = false;
  std::string secondError;
  std::thread rank1([&] {
    ::usleep(100000);
    secondOk = saveCheckpointPart(two, second, names, state, false, 0, pid, 1,
                                  2, secondError);
  });
  bool firstOk =
      saveCheckpointPart(two, first, names, state, false, 0, pid, 0, 2, error);
  rank1.join();
  ASSERT_TRUE(firstOk) << error;
  ASSERT_TRUE(secondOk) << secondError;
  std::vector<std::string> files = listDirectory(two + "/step-00000004");
  std::sort(files.begin(), files.end());
  std::vector<std::string> expected = names;
  expected.push_back("state.json");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(files, expected);
  for (const std::string &name : names)
    EXPECT_EQ(readBytes(two + "/step-00000004/" + name),
              readBytes(alone + "/step-00000004/" + name))
        << name;
  // Not flushed: no `durable`.
  EXPECT_EQ(listDirectory(two).size(), 2u);

  // Rank 1 failed: rank 0 says why, and puts nothing into place.
  state.step = 6;
  std::string temp = two + "/.tmp-step-00000006-" + std::to_string(pid);
  ASSERT_EQ(::mkdir(temp.c_str(), 0755), 0);
  ASSERT_TRUE(writeBytes(temp + "/.part-failed-1",
                         {'n', 'o', ' ', 's', 'p', 'a', 'c', 'e'}));
  EXPECT_FALSE(
      saveCheckpointPart(two, first, names, state, false, 0, pid, 0, 2, error));
  EXPECT_EQ(error, "rank 1 could not write its part: no space");
  struct stat st;
  EXPECT_NE(::stat((two + "/step-00000006").c_str(), &st), 0);

  // Rank 1 writes nothing: rank 0 gives up after DIST_RT_COMM_TIMEOUT.
  state.step = 8;
  ::setenv("DIST_RT_COMM_TIMEOUT", "0.2", 1);
  bool ok =
      saveCheckpointPart(two, first, names, state, false, 0, pid, 0, 2, error);
  ::unsetenv("DIST_RT_COMM_TIMEOUT");
  EXPECT_FALSE(ok);
  EXPECT_EQ(error, "rank 1 wrote no part into " + two + "/.tmp-step-00000008-" +
                       std::to_string(pid) +
                       " within 0.2 s (DIST_RT_COMM_TIMEOUT)");
  std::vector<uint8_t> latest = readBytes(two + "/latest");
  EXPECT_EQ(std::string(latest.begin(), latest.end()), "step-00000004\n");
}

// The checkpoint that a commit would remove becomes the temporary
// directory of the next one, whose files are then overwritten in place
// (the same inodes: no file is created or removed), with the values and
// sizes a fresh directory gets.
TEST_F(CheckpointPartsTest, RecycleTheOldestDirectory) {
  using namespace dist_rt::driver::train_impl;
  std::string error;
  std::string ck = dir.file("ck");
  std::string fresh = dir.file("fresh");
  auto inode = [](const std::string &path) -> ino_t {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  };
  auto save = [&](const std::string &at, int64_t step, int64_t next) {
    CheckpointState state{step, 10, 1, 2, 0, desc.name};
    SnapshotPart part;
    return part.copy(model.get(), 0, 1, error) &&
           saveCheckpointPart(at, part, names, state, false, next, pid, 0, 1,
                              error);
  };
  auto bump = [&] {
    for (uint32_t i = 0; i < desc.num_params; ++i) {
      dist_rt_tensor_t param;
      ASSERT_EQ(dist_rt_model_param(model.get(), i, &param), nullptr);
      float *data = static_cast<float *>(param.data);
      for (size_t k = 0; k < floats(param).size(); ++k)
        data[k] += 1.5f;
    }
  };
  ASSERT_TRUE(save(ck, 2, 4)) << error;
  std::string first = ck + "/step-00000002/" + names[0];
  ino_t firstInode = inode(first);
  ASSERT_NE(firstInode, 0u);
  bump();
  ASSERT_TRUE(save(ck, 4, 6)) << error;
  // Step 2 is still kept (the one `latest` named before).
  bump();
  ASSERT_TRUE(save(ck, 6, 8)) << error;
  std::string temp = ck + "/.tmp-step-00000008-" + std::to_string(pid);
  EXPECT_EQ(inode(temp + "/" + names[0]), firstInode);
  EXPECT_NE(inode(ck + "/step-00000002"), inode(temp));
  // A recycled file longer than the tensor is cut to its size.
  {
    std::vector<uint8_t> longer = readBytes(temp + "/" + names[0]);
    longer.resize(longer.size() + 4096, 0x7f);
    ASSERT_TRUE(writeBytes(temp + "/" + names[0], longer));
  }
  firstInode = inode(temp + "/" + names[0]);
  bump();
  ASSERT_TRUE(save(ck, 8, 0)) << error;
  ASSERT_TRUE(save(fresh, 8, 0)) << error;
  EXPECT_EQ(inode(ck + "/step-00000008/" + names[0]), firstInode);
  for (const std::string &name : names)
    EXPECT_EQ(readBytes(ck + "/step-00000008/" + name),
              readBytes(fresh + "/step-00000008/" + name))
        << name;
  // The last checkpoint recycles nothing: the two newest and `latest`.
  std::vector<std::string> left = listDirectory(ck);
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"latest", "step-00000006",
                                            "step-00000008"}));
  // Another model's checkpoint is removed, not recycled (its files would
  // stay in this model's).
  ASSERT_TRUE(save(ck, 9, 0)) << error; // keeps 8 and 9
  {
    std::string other = ck + "/step-00000008/state.json";
    std::vector<uint8_t> text = readBytes(other);
    std::string json(text.begin(), text.end());
    size_t at = json.find(std::string("\"") + desc.name + "\"");
    ASSERT_NE(at, std::string::npos) << json;
    json.replace(at + 1, std::strlen(desc.name), "other");
    ASSERT_TRUE(
        writeBytes(other, std::vector<uint8_t>(json.begin(), json.end())));
  }
  ASSERT_TRUE(save(ck, 10, 11)) << error; // would recycle step 8
  EXPECT_EQ(inode(ck + "/step-00000008"), 0u);
  EXPECT_EQ(inode(ck + "/.tmp-step-00000011-" + std::to_string(pid)), 0u);
  // A directory that a rank created first is not replaced.
  std::string created = ck + "/.tmp-step-00000012-" + std::to_string(pid);
  ASSERT_EQ(::mkdir(created.c_str(), 0755), 0);
  ASSERT_TRUE(save(ck, 11, 12)) << error; // would recycle step 9
  EXPECT_TRUE(listDirectory(created).empty());
  EXPECT_EQ(inode(ck + "/step-00000009"), 0u);
}

TEST_F(TrainMainTest, ShuffleFollowsTheDocumentedOrder) {
  dist_rt_train_desc_t trainStep = trainDesc();
  dist_rt_model_desc_t desc = modelDesc(&trainStep);
  auto samples = [&](const std::vector<std::string> &args) {
    std::vector<std::string> all = {"--batch-size", "4", "--steps", "8"};
    all.insert(all.end(), args.begin(), args.end());
    MainResult result = train(all, desc);
    EXPECT_EQ(result.exitCode, 0) << result.err;
    return trace.samples;
  };

  // Two epochs of 16 samples, seeded with seed + epoch.
  std::vector<int64_t> expected = documentedShuffle(16, 7);
  std::vector<int64_t> secondEpoch = documentedShuffle(16, 8);
  expected.insert(expected.end(), secondEpoch.begin(), secondEpoch.end());
  std::vector<int64_t> seven = samples({"--shuffle", "--seed", "7"});
  EXPECT_EQ(seven, expected);
  EXPECT_EQ(samples({"--shuffle", "--seed", "7"}), seven);
  std::vector<int64_t> eight = samples({"--shuffle", "--seed=8"});
  EXPECT_NE(eight, seven);
  EXPECT_EQ(std::vector<int64_t>(eight.begin(), eight.begin() + 16),
            secondEpoch);
  // Every epoch visits every sample once.
  std::vector<int64_t> epoch(seven.begin(), seven.begin() + 16);
  std::sort(epoch.begin(), epoch.end());
  for (int64_t i = 0; i < 16; ++i)
    EXPECT_EQ(epoch[static_cast<size_t>(i)], i);
  EXPECT_NE(std::vector<int64_t>(seven.begin(), seven.begin() + 16),
            std::vector<int64_t>(seven.begin() + 16, seven.end()));
}

TEST_F(TrainMainTest, EpochsDropTheLastPartialBatch) {
  dist_rt_train_desc_t trainStep = trainDesc();
  trainStep.inputs = kStaticTrainInputs;
  dist_rt_model_desc_t desc = modelDesc(&trainStep);
  writeData(18, xPath, labelPath);
  std::string log = dir.file("log");
  // The batch size defaults to the model's 4: 18 samples give 4 batches.
  MainResult result = train({"--epochs", "2", "--log", log}, desc);
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(readLog(log).size(), 8u);
  EXPECT_EQ(trace.rows, std::vector<int64_t>(8, 4));
  for (int64_t sample : trace.samples)
    EXPECT_LT(sample, 16);
  EXPECT_TRUE(contains(result.out, "trained 8 steps in"));

  EXPECT_TRUE(failedWith(train({"--epochs", "1", "--batch-size", "8"}, desc),
                         "--batch-size 8 differs from the batch size 4 that "
                         "the model fixed for train input 'x'"));
}

TEST_F(TrainMainTest, NonFiniteLossStopsWithoutSaving) {
  dist_rt_train_desc_t trainStep = trainDesc(&nanAtStep3Entry);
  dist_rt_model_desc_t desc = modelDesc(&trainStep);
  std::string log = dir.file("log");
  std::string saved = dir.file("saved");
  std::string ckpt = dir.file("ckpt");
  MainResult result = train({"--batch-size", "4", "--steps", "10", "--log", log,
                             "--save-params", saved, "--checkpoint-dir", ckpt,
                             "--checkpoint-every", "1"},
                            desc);
  EXPECT_TRUE(failedWith(result, "the loss is NaN at step 3"));
  std::vector<LogLine> lines = readLog(log);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2].loss, "NaN");
  EXPECT_TRUE(listDirectory(saved).empty());
  std::vector<std::string> checkpoints = listDirectory(ckpt);
  std::sort(checkpoints.begin(), checkpoints.end());
  EXPECT_EQ(checkpoints,
            (std::vector<std::string>{"durable", "latest", "step-00000001",
                                      "step-00000002"}));
  std::vector<uint8_t> latest = readBytes(ckpt + "/latest");
  EXPECT_EQ(std::string(latest.begin(), latest.end()), "step-00000002\n");
}

TEST_F(TrainMainTest, CommandLineAndDataErrors) {
  dist_rt_train_desc_t trainStep = trainDesc();
  dist_rt_model_desc_t desc = modelDesc(&trainStep);
  std::vector<std::string> steps = {"--batch-size", "4", "--steps", "2"};
  auto fails = [&](std::vector<std::string> args, const std::string &expected) {
    args.insert(args.begin(), "train");
    MainResult result = runMain(args, desc);
    EXPECT_EQ(result.out, "");
    return failedWith(result, expected);
  };
  std::string x = "x=" + xPath;
  std::string label = "label=" + labelPath;
  EXPECT_TRUE(fails({"--data", x, "--steps", "2"},
                    "missing --data label=FILE.npy (train input 'label' is "
                    "float32 [?])"));
  EXPECT_TRUE(fails({"--data", x, "--data", "y=" + labelPath},
                    "unknown train input 'y' (model 'linreg' has train "
                    "inputs 'x', 'label')"));
  EXPECT_TRUE(fails({"--data", x, "--data", x},
                    "train input 'x' is given more than once"));
  EXPECT_TRUE(
      fails({"--data", x, "--data", label}, "give --steps S or --epochs E"));
  EXPECT_TRUE(
      fails({"--data", x, "--data", label, "--steps", "1", "--epochs", "1"},
            "--steps and --epochs cannot both be given"));
  EXPECT_TRUE(fails({"--data", x, "--data", label, "--steps", "0"},
                    "--steps expects a positive integer, got '0'"));
  EXPECT_TRUE(fails(
      {"--data", x, "--data", label, "--steps", "1", "--checkpoint-every", "2"},
      "--checkpoint-every needs --checkpoint-dir"));
  EXPECT_TRUE(fails(
      {"--data", x, "--data", label, "--steps", "1", "--snapshot-every", "2"},
      "--snapshot-every needs --checkpoint-dir"));
  EXPECT_TRUE(fails({"--data", x, "--shuffle=yes"},
                    "option '--shuffle' takes no value"));
  EXPECT_TRUE(fails({"--data", x, "--seed", "-1"},
                    "--seed expects a non-negative integer"));
  EXPECT_TRUE(fails({"stray"}, "unexpected argument 'stray'"));

  // Data that does not fit.
  std::string shortLabel = dir.file("short.npy");
  writeData(12, dir.file("unused.npy"), shortLabel);
  EXPECT_TRUE(failedWith(
      runMain({"train", "--data", x, "--data", "label=" + shortLabel,
               "--params", paramPath, "--batch-size", "4", "--steps", "2"},
              desc),
      xPath + " has 16 samples but " + shortLabel +
          " has 12 (every --data file needs the same number of samples)"));
  EXPECT_TRUE(failedWith(train({"--batch-size", "32", "--steps", "1"}, desc),
                         "the training data has 16 samples, fewer than the "
                         "batch size 32"));
  EXPECT_TRUE(failedWith(train({"--steps", "1"}, desc),
                         "--batch-size is required: the batch dimension of "
                         "train input 'x' is dynamic"));
  EXPECT_TRUE(failedWith(runMain({"train", "--data", "x=" + labelPath, "--data",
                                  label, "--params", paramPath, "--steps", "1"},
                                 desc),
                         "train input 'x': " + labelPath +
                             " holds [16] (float32), the model expects [?,2] "
                             "(float32)"));
  EXPECT_TRUE(failedWith(
      runMain({"train", "--data", "x=" + dir.file("none.npy"), "--data", label,
               "--params", paramPath, "--steps", "1"},
              desc),
      "train input 'x': " + dir.file("none.npy") + ": cannot open"));
  EXPECT_EQ(trace.calls, 0);
}

TEST_F(TrainMainTest, ResumeErrors) {
  dist_rt_train_desc_t trainStep = trainDesc();
  dist_rt_model_desc_t desc = modelDesc(&trainStep);
  std::string missing = dir.file("no-such-dir");
  EXPECT_TRUE(failedWith(
      train({"--batch-size", "4", "--steps", "2", "--resume", missing}, desc),
      "--resume " + missing + ": cannot open '" + missing + "/latest'"));

  std::string ckpt = dir.file("ckpt");
  ASSERT_EQ(train({"--batch-size", "4", "--steps", "2", "--seed", "5",
                   "--checkpoint-dir", ckpt, "--checkpoint-every", "2"},
                  desc)
                .exitCode,
            0);
  EXPECT_TRUE(failedWith(
      train({"--batch-size", "4", "--steps", "4", "--resume", ckpt}, desc),
      "--seed 0 differs from the seed 5 of checkpoint " + ckpt +
          "/step-00000002"));
  EXPECT_TRUE(failedWith(train({"--batch-size", "8", "--steps", "4", "--seed",
                                "5", "--resume", ckpt},
                               desc),
                         "the batch size 8 differs from the batch size 4 of "
                         "checkpoint " +
                             ckpt + "/step-00000002"));
  EXPECT_TRUE(failedWith(
      train({"--batch-size", "4", "--steps", "4", "--seed", "5", "--shuffle",
             "--resume", ckpt},
            desc),
      "checkpoint " + ckpt +
          "/step-00000002 was written without --shuffle; resume without it "
          "to keep the data order"));

  // A damaged checkpoint is named in the error.
  std::string wMom = ckpt + "/step-00000002/w_mom.npy";
  int64_t three[] = {3};
  std::vector<float> values = {1, 2, 3};
  StatusPtr status(dist_rt_npy_write(wMom.c_str(), DIST_RT_DTYPE_FLOAT, 1,
                                     three, values.data()));
  ASSERT_EQ(status, nullptr);
  EXPECT_TRUE(failedWith(train({"--batch-size", "4", "--steps", "4", "--seed",
                                "5", "--resume", ckpt},
                               desc),
                         wMom + " holds [3] (float32), parameter 'w_mom' is "
                                "[2] (float32)"));
  ASSERT_TRUE(writeBytes(ckpt + "/latest", {'n', 'o', 'p', 'e', '\n'}));
  EXPECT_TRUE(failedWith(
      train({"--batch-size", "4", "--steps", "4", "--resume", ckpt}, desc),
      ckpt + "/latest does not name a checkpoint"));
}

//===----------------------------------------------------------------------===//
// Serving trained parameters: --params DIR
//===----------------------------------------------------------------------===//

/// A fixture with a finished run: 6 steps saved with --save-params and
/// checkpointed every 3 steps.
class ParamDirTest : public TrainMainTest {
protected:
  void SetUp() override {
    TrainMainTest::SetUp();
    saved = dir.file("saved");
    ckpt = dir.file("ckpt");
    dist_rt_model_desc_t desc = modelDesc(&trainStep);
    MainResult result =
        train({"--batch-size", "4", "--steps", "6", "--save-params", saved,
               "--checkpoint-dir", ckpt, "--checkpoint-every", "3"},
              desc);
    ASSERT_EQ(result.exitCode, 0) << result.err;
  }

  /// Creates a model with parameters from `path`.
  ModelPtr createFrom(const dist_rt_model_desc_t &desc,
                      const std::string &path) {
    std::string original = paramPath;
    paramPath = path;
    ModelPtr model = create(desc);
    paramPath = original;
    return model;
  }

  /// Creates a model with parameters from `path` expecting failure;
  /// returns the message, which must be one line.
  std::string createErrorFrom(const dist_rt_model_desc_t &desc,
                              const std::string &path) {
    std::string original = paramPath;
    paramPath = path;
    std::string message = createError(desc);
    paramPath = original;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }

  /// y for the first two samples of the data under the parameters of
  /// `model`.
  std::vector<float> infer(dist_rt_model_t model) {
    std::vector<float> x = {0.f, -0.4f, 1.f / kIdScale, 1.f};
    int64_t xDims[] = {2, 2};
    dist_rt_tensor_t input = {DIST_RT_DTYPE_FLOAT, 2, xDims, x.data()};
    const dist_rt_tensor_t *outputs = nullptr;
    StatusPtr status(dist_rt_model_run(model, &input, 1, &outputs));
    EXPECT_EQ(status, nullptr) << dist_rt_status_message(status.get());
    return status ? std::vector<float>() : floats(outputs[0]);
  }

  dist_rt_train_desc_t trainStep = trainDesc();
  std::string saved;
  std::string ckpt;
};

TEST_F(ParamDirTest, ModelsReadSavedParamsAndCheckpoints) {
  dist_rt_model_desc_t inference = modelDesc(nullptr);
  ModelPtr untrained = create(inference);
  ASSERT_NE(untrained, nullptr);
  std::vector<float> before = infer(untrained.get());

  // --save-params DIR, a --checkpoint-dir (its newest checkpoint, step 6)
  // and that checkpoint's own directory hold the same parameters.
  std::vector<float> trainedW = readFloats(saved + "/w.npy");
  ASSERT_NE(trainedW, kW);
  for (const std::string &path :
       {saved, ckpt, ckpt + "/step-00000006", ckpt + "/"}) {
    SCOPED_TRACE(path);
    ModelPtr model = createFrom(inference, path);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(param(model.get(), 0), readFloats(saved + "/scale.npy"));
    EXPECT_EQ(param(model.get(), 1), trainedW);
    EXPECT_EQ(param(model.get(), 2), readFloats(saved + "/b.npy"));
    std::vector<float> after = infer(model.get());
    EXPECT_NE(after, before);
    float w0 = trainedW[0], w1 = trainedW[1];
    float b = readFloats(saved + "/b.npy")[0];
    ASSERT_EQ(after.size(), 2u);
    EXPECT_FLOAT_EQ(after[0], -0.4f * w1 + b);
    EXPECT_FLOAT_EQ(after[1], w0 / kIdScale + w1 + b);
  }
  // The older checkpoint holds other values.
  ModelPtr older = createFrom(inference, ckpt + "/step-00000003");
  ASSERT_NE(older, nullptr);
  EXPECT_NE(param(older.get(), 1), trainedW);

  // A model with a training step takes the parameters too, and leaves the
  // checkpoint's optimizer state alone: it starts at zero, as with a
  // parameter file.
  dist_rt_model_desc_t training = modelDesc(&trainStep);
  ModelPtr model = createFrom(training, ckpt);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(param(model.get(), 1), trainedW);
  EXPECT_NE(readFloats(ckpt + "/step-00000006/w_mom.npy"),
            (std::vector<float>{0.f, 0.f}));
  EXPECT_EQ(param(model.get(), 3), (std::vector<float>{0.f, 0.f}));
  EXPECT_EQ(param(model.get(), 4), (std::vector<float>{0.f}));
  EXPECT_EQ(infer(model.get()), infer(createFrom(inference, saved).get()));
}

TEST_F(ParamDirTest, InferenceCommandTakesTheDirectories) {
  dist_rt_model_desc_t desc = modelDesc(nullptr);
  auto run = [&](const std::string &params, const std::string &out) {
    MainResult result = runMain(
        {"--input", "x=" + xPath, "--params", params, "--output-dir", out},
        desc);
    EXPECT_EQ(result.exitCode, 0) << result.err;
    EXPECT_EQ(result.err, "");
    return readBytes(out + "/y.npy");
  };
  std::vector<uint8_t> fromFile = run(paramPath, dir.file("y_file"));
  std::vector<uint8_t> fromSaved = run(saved, dir.file("y_saved"));
  ASSERT_FALSE(fromSaved.empty());
  EXPECT_NE(fromSaved, fromFile);
  EXPECT_EQ(run(ckpt, dir.file("y_ckpt")), fromSaved);
  EXPECT_EQ(run(ckpt + "/step-00000006", dir.file("y_step")), fromSaved);

  // `train` starts from a directory as well.
  dist_rt_model_desc_t training = modelDesc(&trainStep);
  std::string log = dir.file("log");
  MainResult result =
      runMain({"train", "--data", "x=" + xPath, "--data", "label=" + labelPath,
               "--params", saved, "--batch-size", "4", "--steps", "1", "--log",
               log, "--quiet"},
              training);
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(readLog(log).size(), 1u);
}

TEST_F(ParamDirTest, MissingOrMismatchedParametersAreOneLineErrors) {
  dist_rt_model_desc_t desc = modelDesc(nullptr);
  auto copyOfSaved = [&](const std::string &name) {
    std::string copy = dir.file(name);
    EXPECT_EQ(::mkdir(copy.c_str(), 0777), 0);
    for (const char *file : {"scale.npy", "w.npy", "b.npy"})
      EXPECT_TRUE(writeBytes(copy + "/" + file, readBytes(saved + "/" + file)));
    return copy;
  };
  // Each error also comes out of the command as one line, exit code 1.
  auto commandFails = [&](const std::string &params,
                          const std::string &expected) {
    MainResult result = runMain({"--input", "x=" + xPath, "--params", params,
                                 "--output-dir", dir.file("never")},
                                desc);
    EXPECT_EQ(result.out, "");
    return failedWith(result, expected);
  };

  std::string noW = copyOfSaved("no_w");
  ASSERT_EQ(::unlink((noW + "/w.npy").c_str()), 0);
  std::string message = "parameter 'w' is missing from " + noW +
                        ": no file w.npy (model " + "'linreg')";
  EXPECT_EQ(createErrorFrom(desc, noW), message);
  EXPECT_TRUE(commandFails(noW, message));

  std::string wrongShape = copyOfSaved("wrong_shape");
  int64_t three[] = {3};
  std::vector<float> values = {1, 2, 3};
  StatusPtr status(dist_rt_npy_write((wrongShape + "/w.npy").c_str(),
                                     DIST_RT_DTYPE_FLOAT, 1, three,
                                     values.data()));
  ASSERT_EQ(status, nullptr);
  message = "parameter 'w' in " + wrongShape +
            "/w.npy has shape [3], the model expects [2]";
  EXPECT_EQ(createErrorFrom(desc, wrongShape), message);
  EXPECT_TRUE(commandFails(wrongShape, message));

  std::string wrongDtype = copyOfSaved("wrong_dtype");
  int64_t one[] = {1};
  double bias = 0.5;
  status.reset(dist_rt_npy_write((wrongDtype + "/b.npy").c_str(),
                                 DIST_RT_DTYPE_DOUBLE, 1, one, &bias));
  ASSERT_EQ(status, nullptr);
  EXPECT_EQ(createErrorFrom(desc, wrongDtype),
            "parameter 'b' in " + wrongDtype +
                "/b.npy has dtype float64, the model expects float32");

  std::string corrupt = copyOfSaved("corrupt");
  ASSERT_TRUE(writeBytes(corrupt + "/scale.npy", {'n', 'o', 'p', 'e'}));
  EXPECT_TRUE(contains(createErrorFrom(desc, corrupt),
                       "model 'linreg': parameter 'scale': " + corrupt +
                           "/scale.npy: "));

  // A directory that holds no parameters at all.
  std::string empty = dir.file("empty");
  ASSERT_EQ(::mkdir(empty.c_str(), 0777), 0);
  EXPECT_TRUE(commandFails(empty, "parameter 'scale' is missing from " + empty +
                                      ": no file scale.npy"));

  // A checkpoint directory whose `latest` is damaged or names a checkpoint
  // that is gone.
  ASSERT_TRUE(writeBytes(ckpt + "/latest", {'n', 'o', 'p', 'e', '\n'}));
  message = "model 'linreg': " + ckpt +
            "/latest does not name a checkpoint (step-<n>)";
  EXPECT_EQ(createErrorFrom(desc, ckpt), message);
  EXPECT_TRUE(commandFails(ckpt, message));
  std::string gone = "step-00000009\n";
  ASSERT_TRUE(writeBytes(ckpt + "/latest",
                         std::vector<uint8_t>(gone.begin(), gone.end())));
  EXPECT_EQ(createErrorFrom(desc, ckpt),
            "model 'linreg': " + ckpt +
                "/latest names the checkpoint step-00000009, but " + ckpt +
                "/step-00000009 is not a directory");
  EXPECT_EQ(trace.calls, 6);
}

TEST_F(TrainMainTest, InferenceOnlyModelsCannotTrain) {
  dist_rt_model_desc_t desc = modelDesc(nullptr);
  MainResult result = train({"--batch-size", "4", "--steps", "2"}, desc);
  EXPECT_TRUE(failedWith(
      result,
      "model 'linreg' was not compiled for training (dist-opt --train)"));
  EXPECT_EQ(trace.calls, 0);
}

TEST_F(TrainMainTest, HelpDescribesTheTrainingStep) {
  dist_rt_train_desc_t trainStep = trainDesc();
  dist_rt_model_desc_t desc = modelDesc(&trainStep);
  MainResult result = runMain({"train", "--help"}, desc);
  EXPECT_EQ(result.exitCode, 0);
  EXPECT_EQ(result.err, "");
  EXPECT_TRUE(contains(result.out, "usage: linreg train --data NAME=FILE.npy"));
  EXPECT_TRUE(contains(result.out, "optimizer sgd, loss mse"));
  EXPECT_TRUE(contains(result.out, "label: float32 [?]"));
  EXPECT_TRUE(contains(result.out, "opt/b_mom: float32 [1], optimizer state"));
  EXPECT_TRUE(contains(result.out, "scale: float32 [], frozen"));

  EXPECT_TRUE(contains(result.out, "--shuffle              visit samples in "
                                   "a new random order each epoch (default: "
                                   "file order)\n"));
  EXPECT_TRUE(contains(result.out, "or a directory as for inference (default: "
                                   "linreg.params next to the binary)\n"));

  // The inference help points at the train subcommand, and says which
  // directories of `train` --params takes.
  result = runMain({"--help"}, desc);
  EXPECT_EQ(result.exitCode, 0);
  EXPECT_TRUE(contains(result.out, "see linreg train --help"));
  EXPECT_TRUE(contains(result.out, "--params PATH      parameter file, or "
                                   "directory written by train --save-params "
                                   "or --checkpoint-dir"));
}

} // namespace
