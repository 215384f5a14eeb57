//===- CudaTest.cpp - The runtime's CUDA layer without a GPU ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What a CUDA model does where the machine has no GPU driver (the case on
// CI): creating it fails with one DIST_RT_ERROR_DEVICE status naming the
// model and the reason, the descriptor checks refuse what a CUDA model
// cannot do, and the device allocator that generated code calls fails the
// run going on with its reason while still handing out memory the host
// code can use, so that the run ends with that error and not a fault.
// Skipped where a GPU driver loads (those paths need the GPU: gpu_check.sh).
//
//===----------------------------------------------------------------------===//

#include "cuda_internal.h"
#include "dist_rt/kernels.h"
#include "dist_rt/model.h"
#include "internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <dlfcn.h>

namespace {

/// Whether the CUDA driver loads here (then these tests do not apply).
bool haveDriver() {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h)
    dlclose(h);
  return h != nullptr;
}

void noEntry(void **) {}

const int64_t kDims[] = {2};
const dist_rt_tensor_desc_t kInputs[] = {{"x", DIST_RT_DTYPE_FLOAT, 1, kDims}};

dist_rt_model_desc_t cudaDesc() {
  dist_rt_model_desc_t d;
  std::memset(&d, 0, sizeof(d));
  d.abi_version = DIST_RT_MODEL_ABI_VERSION;
  d.name = "gpu_model";
  d.num_inputs = 1;
  d.inputs = kInputs;
  d.num_outputs = 1;
  d.outputs = kInputs;
  d.entry = &noEntry;
  d.device = DIST_RT_DEVICE_CUDA;
  return d;
}

std::string statusText(dist_rt_status_t s) {
  std::string text = s ? dist_rt_status_message(s) : "";
  dist_rt_status_free(s);
  return text;
}

TEST(CudaTest, CreatingAModelWithoutADriverSaysSo) {
  if (haveDriver())
    GTEST_SKIP() << "a CUDA driver loads here";
  dist_rt_model_desc_t d = cudaDesc();
  dist_rt_model_t model = nullptr;
  dist_rt_status_t s = dist_rt_model_create(&d, nullptr, &model);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(dist_rt_status_code(s), DIST_RT_ERROR_DEVICE);
  EXPECT_EQ(model, nullptr);
  std::string text = statusText(s);
  EXPECT_EQ(text.rfind("model 'gpu_model' was compiled for CUDA GPUs "
                       "(--target=cuda), but no CUDA driver on this machine "
                       "(libcuda.so.1",
                       0),
            0u)
      << text;
}

TEST(CudaTest, DescriptorChecksRefuseWhatACudaModelCannotDo) {
  dist_rt_model_desc_t d = cudaDesc();
  const dist_rt_ps_desc_t ps = {};
  d.ps = &ps;
  dist_rt_model_t model = nullptr;
  std::string text = statusText(dist_rt_model_create(&d, nullptr, &model));
  EXPECT_EQ(text, "model 'gpu_model': a CUDA model has no pipeline stages or "
                  "parameter server");
  d = cudaDesc();
  d.device = 7;
  text = statusText(dist_rt_model_create(&d, nullptr, &model));
  EXPECT_EQ(text, "model 'gpu_model': the descriptor's device 7 is not one "
                  "this runtime knows");
}

TEST(CudaTest, DeviceTensorsNeedACudaModel) {
  dist_rt_model_desc_t d = cudaDesc();
  d.device = DIST_RT_DEVICE_HOST;
  dist_rt_model_options_t options;
  dist_rt_model_options_initialize(&options);
  EXPECT_EQ(options.device_tensors, 0u);
  options.device_tensors = 1;
  dist_rt_model_t model = reinterpret_cast<dist_rt_model_t>(&d);
  std::string text = statusText(dist_rt_model_create(&d, &options, &model));
  EXPECT_EQ(text, "model 'gpu_model': device tensors (options.device_tensors) "
                  "need a model compiled with --target=cuda");
  EXPECT_EQ(model, nullptr);
}

TEST(CudaTest, DeviceAllocationWithoutAGpuFailsTheRunNotTheProcess) {
  if (haveDriver())
    GTEST_SKIP() << "a CUDA driver loads here";
  dist_rt::RunErrors errors;
  void *block = nullptr;
  {
    dist_rt::RunErrorScope scope(errors);
    block = dist_rt_device_alloc(1000);
    ASSERT_NE(block, nullptr);
    // The host code writes it before the run returns its error.
    std::memset(block, 7, 1000);
    EXPECT_TRUE(dist_rt::cuda::owns(block));
    EXPECT_TRUE(dist_rt::runFailed());
    // A second failure does not replace the first message.
    void *second = dist_rt_device_alloc(10);
    dist_rt_device_free(second);
  }
  EXPECT_TRUE(errors.failed.load());
  EXPECT_EQ(errors.message, "no GPU is open");
  dist_rt_device_free(block);
  EXPECT_FALSE(dist_rt::cuda::owns(block));
  // Nothing is open: no device name, copies refused.
  EXPECT_EQ(dist_rt::cuda::deviceName(), "");
  char a = 1, b = 2;
  EXPECT_NE(dist_rt::cuda::copy(&a, &b, 1), "");
}

/// Evaluates `p` as cuBLAS defines a column-major product (D = op(A)
/// op(B) + C, stored matrices at (r, c) -> r + c * ld), checking the
/// shapes and leading dimensions cuBLAS requires.
void runPlan(const dist_rt::cuda::LtProblem &p, const double *a,
             const double *b, double *c) {
  using dist_rt::cuda::LtOperand;
  auto checkOperand = [](const LtOperand &o, int64_t rows, int64_t cols) {
    EXPECT_EQ(o.rows, o.transpose ? cols : rows);
    EXPECT_EQ(o.cols, o.transpose ? rows : cols);
    EXPECT_GE(o.ld, std::max<int64_t>(o.rows, 1));
  };
  checkOperand(p.a, p.m, p.k);
  checkOperand(p.b, p.k, p.n);
  checkOperand(p.c, p.m, p.n);
  EXPECT_FALSE(p.c.transpose);
  auto op = [](const LtOperand &o, const double *base, int64_t t, int64_t r,
               int64_t col) {
    const double *m = base + t * o.batchStride;
    return o.transpose ? m[col + r * o.ld] : m[r + col * o.ld];
  };
  for (int64_t t = 0; t < p.batch; ++t)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < p.k; ++l)
          sum += op(p.a, a, t, i, l) * op(p.b, b, t, l, j);
        c[t * p.c.batchStride + i + j * p.c.ld] += sum;
      }
}

/// An operand layout: element (t, r, c) of a batch of r x c matrices at
/// t * sb + r * sr + c * sc, `size` elements in all.
struct Layout {
  int64_t sb, sr, sc, size;
};

/// Row-major (kind bit 0 clear) or column-major, padded (bit 1), shared by
/// the batch (bit 2: batch stride 0).
Layout layoutOf(int kind, int64_t batch, int64_t rows, int64_t cols) {
  bool colMajor = kind & 1;
  int64_t pad = (kind & 2) ? 3 : 0;
  bool shared = kind & 4;
  int64_t sr = colMajor ? 1 : cols + pad;
  int64_t sc = colMajor ? rows + pad : 1;
  int64_t matrix = colMajor ? (rows + pad) * cols : rows * (cols + pad);
  return {shared ? 0 : matrix, sr, sc, (shared ? 1 : batch) * matrix};
}

TEST(CudaTest, ProductPlansComputeWhatTheGemmCallDefines) {
  // Every combination of operand layouts (row- or column-major, padded,
  // shared over the batch) and degenerate extents: the column-major
  // problem cuBLASLt is given computes C_t += A_t * B_t.
  const int64_t shapes[][4] = {{1, 3, 4, 5}, {2, 3, 4, 5}, {3, 1, 4, 2},
                               {2, 4, 1, 3}, {2, 3, 4, 1}, {1, 1, 1, 1}};
  int checked = 0;
  for (const auto &shape : shapes) {
    int64_t batch = shape[0], m = shape[1], n = shape[2], k = shape[3];
    for (int ka = 0; ka < 8; ++ka)
      for (int kb = 0; kb < 8; ++kb)
        for (int kc = 0; kc < 4; ++kc) {
          Layout la = layoutOf(ka, batch, m, k), lb = layoutOf(kb, batch, k, n);
          Layout lc = layoutOf(kc, batch, m, n);
          std::vector<double> a(la.size), b(lb.size), c(lc.size);
          for (size_t i = 0; i < a.size(); ++i)
            a[i] = double((i * 7) % 11) - 5;
          for (size_t i = 0; i < b.size(); ++i)
            b[i] = double((i * 5) % 13) - 6;
          for (size_t i = 0; i < c.size(); ++i)
            c[i] = double(i % 3);
          std::vector<double> want = c;
          for (int64_t t = 0; t < batch; ++t)
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double sum = 0;
                for (int64_t l = 0; l < k; ++l)
                  sum += a[t * la.sb + i * la.sr + l * la.sc] *
                         b[t * lb.sb + l * lb.sr + j * lb.sc];
                want[t * lc.sb + i * lc.sr + j * lc.sc] += sum;
              }
          dist_rt::cuda::GemmShape s{batch, m,     n,     k,     la.sb,
                                     la.sr, la.sc, lb.sb, lb.sr, lb.sc,
                                     lc.sb, lc.sr, lc.sc};
          std::optional<dist_rt::cuda::LtProblem> p =
              dist_rt::cuda::planProduct(s);
          ASSERT_TRUE(p) << "batch " << batch << " m " << m << " n " << n
                         << " k " << k << " layouts " << ka << kb << kc;
          EXPECT_EQ(p->batch, batch);
          runPlan(*p, p->swapped ? b.data() : a.data(),
                  p->swapped ? a.data() : b.data(), c.data());
          EXPECT_EQ(c, want) << "layouts " << ka << kb << kc << " m " << m
                             << " n " << n << " k " << k;
          ++checked;
        }
  }
  EXPECT_EQ(checked, 6 * 8 * 8 * 4);
}

TEST(CudaTest, ProductPlansRefuseOperandsWithoutAUnitStride) {
  // A [3, 4] with strides (8, 2) (every other column of a wider matrix):
  // packed first. So are negative strides.
  dist_rt::cuda::GemmShape s{1, 3, 5, 4, 0, 8, 2, 0, 5, 1, 0, 5, 1};
  EXPECT_FALSE(dist_rt::cuda::planProduct(s));
  s.aSk = 1;
  EXPECT_TRUE(dist_rt::cuda::planProduct(s));
  s.bSk = -5;
  EXPECT_FALSE(dist_rt::cuda::planProduct(s));
  // A C whose rows overlap (leading dimension under its width).
  dist_rt::cuda::GemmShape overlap{1, 3, 5, 4, 0, 4, 1, 0, 5, 1, 0, 2, 1};
  EXPECT_FALSE(dist_rt::cuda::planProduct(overlap));
}

TEST(CudaTest, ProductWithoutAGpuFailsTheRunNotTheProcess) {
  if (haveDriver())
    GTEST_SKIP() << "a CUDA driver loads here";
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, c[4] = {};
  dist_rt::RunErrors errors;
  {
    dist_rt::RunErrorScope scope(errors);
    dist_rt_cuda_gemm_set_f32(1, 2, 2, 3, reinterpret_cast<int64_t>(a), 0, 3, 1,
                              reinterpret_cast<int64_t>(b), 2, 1,
                              reinterpret_cast<int64_t>(c), 0, 2, 1, 0);
  }
  EXPECT_TRUE(errors.failed.load());
  // Without cublasLt.h at build time the runtime says that instead.
  EXPECT_TRUE(errors.message == "no GPU is open" ||
              errors.message.rfind("CUDA: this runtime was built without", 0) ==
                  0)
      << errors.message;
  for (float v : c)
    EXPECT_EQ(v, 0.0f);
}

} // namespace
