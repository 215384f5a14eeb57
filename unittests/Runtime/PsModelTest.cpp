//===- PsModelTest.cpp - Models with tables on parameter servers -*- C++
//-*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for a model whose table is on the parameter server
// (dist_rt_ps_desc_t), through the C API: a server in a thread, a client
// attached with dist_rt_model_attach_ps, training steps that pull the rows
// of the ids picked from an input and push their gradients, inference that
// reads them, and the checks of the descriptor's lookups and of the ids. The
// hand-written step follows dist_rt/model.h's calling convention:
// loss = mean over samples of rows[i] . w, where rows[i] is row ids[i][1]
// of the table; the rows' gradient is w / N and w's is the mean row, with
// SGD on w in the step and SGD on the table's rows on the server.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/kernels.h"
#include "dist_rt/model.h"
#include "dist_rt/ps.h"

#include "RuntimeTestUtils.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace dist_rt_test;

namespace {

constexpr int64_t kTableRows = 6, kDim = 2;
const int64_t kTableDims[] = {kTableRows, kDim};
const int64_t kWDims[] = {kDim};
const int64_t kIdsDims[] = {-1, 3};
const int64_t kRowsDims[] = {-1, kDim};
const int64_t kCols[] = {1};

const dist_rt_tensor_desc_t kParams[] = {
    {"table", DIST_RT_DTYPE_FLOAT, 2, kTableDims},
    {"w", DIST_RT_DTYPE_FLOAT, 1, kWDims},
};
const dist_rt_tensor_desc_t kInputs[] = {
    {"ids", DIST_RT_DTYPE_INT64, 2, kIdsDims},
    {"table.rows", DIST_RT_DTYPE_FLOAT, 2, kRowsDims},
};
const dist_rt_tensor_desc_t kOutputs[] = {
    {"y", DIST_RT_DTYPE_FLOAT, 1, kIdsDims}};
const dist_rt_tensor_desc_t kTrainOutputs[] = {
    {"loss", DIST_RT_DTYPE_FLOAT, 0, nullptr},
    {"table.rows.grad", DIST_RT_DTYPE_FLOAT, 2, kRowsDims},
};
const uint8_t kRoles[] = {DIST_RT_PARAM_PS, DIST_RT_PARAM_TRAINED};
const dist_rt_ps_lookup_t kLookups[] = {{"table.rows", "ids", 0, 1, kCols}};
const dist_rt_ps_desc_t kPs = {1,     kLookups, "sgd",  0.5, 0.9,
                               0.999, 1e-8,     "rows", 0,   0};
constexpr float kLr = 0.25f;

/// A rank-0 memref descriptor.
struct ScalarDesc {
  void *allocated;
  void *aligned;
  int64_t offset;
};

/// y[i] = rows[i] . w
void inferEntry(void **args) {
  auto *w = static_cast<MemrefDesc<1> *>(args[1]);
  auto *rows = static_cast<MemrefDesc<2> *>(args[3]);
  int64_t n = rows->sizes[0];
  auto *y = static_cast<float *>(
      _mlir_memref_to_llvm_alloc(static_cast<size_t>(n) * sizeof(float)));
  const auto *r = static_cast<const float *>(rows->aligned) + rows->offset;
  const auto *wv = static_cast<const float *>(w->aligned) + w->offset;
  for (int64_t i = 0; i < n; ++i)
    y[i] = r[i * kDim] * wv[0] + r[i * kDim + 1] * wv[1];
  OutputWriter out{static_cast<int64_t *>(args[4])};
  out.put(y, y, 0, {n}, {1});
}

void trainEntry(void **args) {
  auto *w = static_cast<MemrefDesc<1> *>(args[1]);
  auto *rows = static_cast<MemrefDesc<2> *>(args[3]);
  auto *lrDesc = static_cast<ScalarDesc *>(args[4]);
  float lr = static_cast<const float *>(lrDesc->aligned)[lrDesc->offset];
  int64_t n = rows->sizes[0];
  const auto *r = static_cast<const float *>(rows->aligned) + rows->offset;
  auto *wv = static_cast<float *>(w->aligned) + w->offset;
  auto *loss = static_cast<float *>(_mlir_memref_to_llvm_alloc(sizeof(float)));
  auto *grad = static_cast<float *>(_mlir_memref_to_llvm_alloc(
      static_cast<size_t>(n * kDim) * sizeof(float)));
  float sum = 0, mean[kDim] = {0, 0};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < kDim; ++j) {
      sum += r[i * kDim + j] * wv[j];
      mean[j] += r[i * kDim + j] / static_cast<float>(n);
      grad[i * kDim + j] = wv[j] / static_cast<float>(n);
    }
  *loss = sum / static_cast<float>(n);
  for (int64_t j = 0; j < kDim; ++j)
    wv[j] -= lr * mean[j];
  OutputWriter out{static_cast<int64_t *>(args[6])};
  out.put(loss, loss, 0, {}, {});
  out.put(grad, grad, 0, {n, kDim}, {kDim, 1});
}

const dist_rt_train_desc_t kTrain = {kRoles,
                                     2,
                                     kInputs,
                                     2,
                                     kTrainOutputs,
                                     trainEntry,
                                     kLr,
                                     DIST_RT_LR_CONSTANT,
                                     0,
                                     "sgd",
                                     "model",
                                     nullptr,
                                     0,
                                     -100,
                                     nullptr};

dist_rt_model_desc_t modelDesc(const dist_rt_train_desc_t *train,
                               const dist_rt_ps_desc_t *ps) {
  dist_rt_model_desc_t d;
  std::memset(&d, 0, sizeof(d));
  d.abi_version = DIST_RT_MODEL_ABI_VERSION;
  d.name = "emb";
  d.param_file = "emb.params";
  d.num_params = 2;
  d.params = kParams;
  d.num_inputs = 2;
  d.inputs = kInputs;
  d.num_outputs = 1;
  d.outputs = kOutputs;
  d.entry = inferEntry;
  d.train = train;
  d.ps = ps;
  return d;
}

struct StatusDeleter {
  void operator()(dist_rt_status *s) const { dist_rt_status_free(s); }
};
using Status = std::unique_ptr<dist_rt_status, StatusDeleter>;

/// A server of the test's table (initial rows `rows`, SGD with lr 0.5) in
/// a thread, in `mode`, and a client connected to it.
class Serving {
public:
  Serving(const std::vector<float> &rows, uint32_t mode) {
    dist_rt_ps_table_initialize(&spec);
    spec.name = "table";
    spec.rows = kTableRows;
    spec.dim = kDim;
    spec.lr = 0.5f;
    spec.init = DIST_RT_PS_INIT_ROWS;
    spec.init_rows = rows.data();
    dist_rt_ps_server_options_t so;
    dist_rt_ps_server_options_initialize(&so);
    so.mode = mode;
    EXPECT_EQ(Status(dist_rt_ps_server_create(&so, &spec, 1, &server)),
              nullptr);
    if (!server)
      return;
    thread = std::thread([this] { served = dist_rt_ps_server_run(server); });
    const char *endpoint = dist_rt_ps_server_endpoint(server);
    dist_rt_ps_client_options_t co;
    dist_rt_ps_client_options_initialize(&co);
    co.servers = &endpoint;
    co.num_servers = 1;
    EXPECT_EQ(Status(dist_rt_ps_client_create(&co, &spec, 1, &client)),
              nullptr);
  }
  ~Serving() {
    if (client)
      EXPECT_EQ(Status(dist_rt_ps_client_finish(client)), nullptr);
    else if (server)
      dist_rt_ps_server_stop(server);
    if (thread.joinable())
      thread.join();
    EXPECT_EQ(Status(served), nullptr);
    dist_rt_ps_client_release(client);
    dist_rt_ps_server_release(server);
  }

  dist_rt_ps_table_t spec;
  dist_rt_ps_server_t server = nullptr;
  dist_rt_ps_client_t client = nullptr;
  dist_rt_status_t served = nullptr;
  std::thread thread;
};

class PsModelTest : public ::testing::Test {
protected:
  void SetUp() override {
    for (int64_t i = 0; i < kTableRows * kDim; ++i)
      table.push_back(0.1f * static_cast<float>(i));
    paramPath = dir.file("emb.params");
    ASSERT_TRUE(writeBytes(
        paramPath,
        paramFileImage(
            {{"table", DIST_RT_DTYPE_FLOAT, {kTableRows, kDim}, toBytes(table)},
             {"w", DIST_RT_DTYPE_FLOAT, {kDim}, toBytes(w)}})));
  }

  std::string createError(const dist_rt_model_desc_t &desc) {
    dist_rt_model_options_t options;
    dist_rt_model_options_initialize(&options);
    options.param_path = paramPath.c_str();
    dist_rt_model_t model = nullptr;
    Status status(dist_rt_model_create(&desc, &options, &model));
    EXPECT_EQ(model, nullptr);
    dist_rt_model_destroy(model);
    return status ? dist_rt_status_message(status.get()) : "";
  }

  /// The training model of the test, from the parameter file.
  dist_rt_model_t createModel(const dist_rt_model_desc_t &desc) {
    dist_rt_model_options_t options;
    dist_rt_model_options_initialize(&options);
    options.param_path = paramPath.c_str();
    dist_rt_model_t model = nullptr;
    EXPECT_EQ(Status(dist_rt_model_create(&desc, &options, &model)), nullptr);
    return model;
  }

  TempDir dir;
  std::string paramPath;
  std::vector<float> table, w = {1.0f, -2.0f};
};

TEST_F(PsModelTest, StepsPullAndPushTheRowsOfPickedIds) {
  Serving serving(table, DIST_RT_PS_SYNC);
  dist_rt_ps_client_t client = serving.client;
  ASSERT_NE(client, nullptr);
  dist_rt_model_desc_t desc = modelDesc(&kTrain, &kPs);
  dist_rt_model_t model = createModel(desc);
  ASSERT_NE(model, nullptr);
  // Training without a client fails, naming the table.
  std::vector<int64_t> ids = {9, 2, 9, 9, -1, 9, 9, 2, 9};
  const int64_t idsDims[] = {3, 3};
  const int64_t rowsDims[] = {3, kDim};
  dist_rt_tensor_t inputs[] = {{DIST_RT_DTYPE_INT64, 2, idsDims, ids.data()},
                               {DIST_RT_DTYPE_FLOAT, 2, rowsDims, nullptr}};
  float loss = 0;
  Status noClient(dist_rt_model_train_step(model, inputs, 2, kLr, 1, &loss));
  ASSERT_NE(noClient, nullptr);
  EXPECT_NE(std::string(dist_rt_status_message(noClient.get()))
                .find("keeps table 'table' on the parameter server"),
            std::string::npos);
  ASSERT_EQ(Status(dist_rt_model_attach_ps(model, client, 1)), nullptr);

  // Ids of column 1: 2, -1 (row 5) and 2. Step 1 sees the file's rows.
  ASSERT_EQ(Status(dist_rt_model_train_step(model, inputs, 2, kLr, 1, &loss)),
            nullptr);
  auto row = [&](int64_t r, int64_t j) { return table[r * kDim + j]; };
  float expect = 0;
  for (int64_t r : {2, 5, 2})
    expect += (row(r, 0) * w[0] + row(r, 1) * w[1]) / 3;
  EXPECT_FLOAT_EQ(loss, expect);
  // The server applied the summed gradient: row 2 twice, row 5 once.
  float got[2 * kDim];
  int64_t readIds[] = {2, 5};
  ASSERT_EQ(Status(dist_rt_ps_read(client, 0, readIds, 2, got)), nullptr);
  for (int64_t j = 0; j < kDim; ++j) {
    EXPECT_FLOAT_EQ(got[j], row(2, j) - 0.5f * 2 * w[j] / 3);
    EXPECT_FLOAT_EQ(got[kDim + j], row(5, j) - 0.5f * w[j] / 3);
  }

  // Inference reads the servers' rows through the client.
  const dist_rt_tensor_t *outputs = nullptr;
  ASSERT_EQ(Status(dist_rt_model_run(model, inputs, 2, &outputs)), nullptr);
  dist_rt_tensor_t wNow;
  ASSERT_EQ(Status(dist_rt_model_param(model, 1, &wNow)), nullptr);
  const float *wv = static_cast<const float *>(wNow.data);
  EXPECT_FLOAT_EQ(static_cast<const float *>(outputs[0].data)[1],
                  got[kDim] * wv[0] + got[kDim + 1] * wv[1]);

  // An id outside the table fails before the step, naming it.
  ids[4] = 6;
  Status outside(dist_rt_model_train_step(model, inputs, 2, kLr, 2, &loss));
  ASSERT_NE(outside, nullptr);
  EXPECT_STREQ(dist_rt_status_message(outside.get()),
               "train input 'ids': id 6 (sample 1, element 1) is outside "
               "table 'table' of 6 rows");

  dist_rt_model_destroy(model);
}

TEST_F(PsModelTest, PrefetchedRowsMissOnlyTheOwnLastPush) {
  // Two steps on the same ids, the second's declared before the first
  // (dist_rt_model_ps_prefetch). Under ASYNC the second step's rows were
  // pulled while the first computed: the file's rows, with the first
  // step's update of w. Under SYNC nothing is prefetched: the second step
  // sees the pushed rows. Ids that differ from the declared ones are
  // pulled again.
  auto row = [&](int64_t r, int64_t j) { return table[r * kDim + j]; };
  std::vector<float> w1(kDim), pushed(kTableRows * kDim);
  pushed = table;
  for (int64_t j = 0; j < kDim; ++j) {
    float mean = (2 * row(2, j) + row(5, j)) / 3;
    w1[j] = w[j] - kLr * mean;
    pushed[2 * kDim + j] -= 0.5f * 2 * w[j] / 3;
    pushed[5 * kDim + j] -= 0.5f * w[j] / 3;
  }
  auto lossOf = [&](const std::vector<float> &t, std::vector<int64_t> rows) {
    float l = 0;
    for (int64_t r : rows)
      l += (t[r * kDim] * w1[0] + t[r * kDim + 1] * w1[1]) / 3;
    return l;
  };
  for (uint32_t mode : {DIST_RT_PS_ASYNC, DIST_RT_PS_SYNC}) {
    for (bool sameIds : {true, false}) {
      Serving serving(table, mode);
      dist_rt_ps_client_t client = serving.client;
      ASSERT_NE(client, nullptr);
      EXPECT_EQ(dist_rt_ps_client_may_run_ahead(client),
                mode == DIST_RT_PS_ASYNC ? 1 : 0);
      dist_rt_model_desc_t desc = modelDesc(&kTrain, &kPs);
      dist_rt_model_t model = createModel(desc);
      ASSERT_NE(model, nullptr);
      ASSERT_EQ(Status(dist_rt_model_attach_ps(model, client, 1)), nullptr);
      std::vector<int64_t> ids = {9, 2, 9, 9, -1, 9, 9, 2, 9};
      // Declared for step 2: the same ids, or row 3 in place of row 5.
      std::vector<int64_t> declared = ids;
      if (!sameIds)
        declared[4] = 3;
      const int64_t idsDims[] = {3, 3};
      const int64_t rowsDims[] = {3, kDim};
      dist_rt_tensor_t inputs[] = {
          {DIST_RT_DTYPE_INT64, 2, idsDims, ids.data()},
          {DIST_RT_DTYPE_FLOAT, 2, rowsDims, nullptr}};
      dist_rt_tensor_t next[] = {
          {DIST_RT_DTYPE_INT64, 2, idsDims, declared.data()},
          {DIST_RT_DTYPE_FLOAT, 2, rowsDims, nullptr}};
      float loss = 0;
      ASSERT_EQ(Status(dist_rt_model_ps_prefetch(model, next, 2)), nullptr);
      ASSERT_EQ(
          Status(dist_rt_model_train_step(model, inputs, 2, kLr, 1, &loss)),
          nullptr);
      ASSERT_EQ(
          Status(dist_rt_model_train_step(model, inputs, 2, kLr, 2, &loss)),
          nullptr);
      bool stale = mode == DIST_RT_PS_ASYNC && sameIds;
      EXPECT_FLOAT_EQ(loss, lossOf(stale ? table : pushed, {2, 5, 2}))
          << "mode " << mode << ", same ids " << sameIds;
      dist_rt_model_destroy(model);
    }
  }
}

TEST_F(PsModelTest, CreateChecksTheLookups) {
  dist_rt_model_desc_t desc = modelDesc(&kTrain, &kPs);
  dist_rt_ps_lookup_t lookup = kLookups[0];
  dist_rt_ps_desc_t ps = kPs;
  ps.lookups = &lookup;
  desc.ps = &ps;
  lookup.ids = "nope";
  EXPECT_EQ(createError(desc), "model 'emb': parameter-server lookup "
                               "'table.rows': its rows or ids are not among "
                               "the inputs");
  lookup = kLookups[0];
  const int64_t far[] = {3};
  lookup.cols = far;
  EXPECT_EQ(createError(desc), "model 'emb': parameter-server lookup "
                               "'table.rows': a column is outside a sample "
                               "of its ids");
  // (Inference only: a training descriptor names the table by its role.)
  lookup = kLookups[0];
  lookup.table = 1;
  dist_rt_model_desc_t inference = modelDesc(nullptr, &ps);
  EXPECT_EQ(createError(inference), "model 'emb': parameter-server lookup "
                                    "'table.rows': its table is not a "
                                    "float32 matrix");
  lookup = kLookups[0];
  ps.optimizer = "rmsprop";
  EXPECT_EQ(createError(desc),
            "model 'emb': invalid parameter-server optimizer");
  // Rows drawn from a distribution need one that exists, with sane bounds.
  ps = kPs;
  ps.init = "zeros";
  EXPECT_EQ(createError(desc),
            "model 'emb': invalid parameter-server row initializer");
  ps.init = "uniform";
  ps.init_a = 0.1;
  ps.init_b = -0.1;
  EXPECT_EQ(createError(desc),
            "model 'emb': invalid parameter-server row initializer");
  ps.init = "normal";
  ps.init_a = 0;
  ps.init_b = 0;
  EXPECT_EQ(createError(desc),
            "model 'emb': invalid parameter-server row initializer");
}

} // namespace
