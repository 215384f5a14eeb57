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

#include <cstdint>
#include <cstring>
#include <string>

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
  const int64_t shape[] = {2};
  const char *axes[] = {"dp"};
  d.num_mesh_axes = 1;
  d.mesh_shape = shape;
  d.mesh_axis_names = axes;
  dist_rt_model_t model = nullptr;
  std::string text = statusText(dist_rt_model_create(&d, nullptr, &model));
  EXPECT_EQ(text, "model 'gpu_model': a CUDA model runs inference in one "
                  "process only (no training step, mesh or parameter server)");
  d = cudaDesc();
  d.device = 7;
  text = statusText(dist_rt_model_create(&d, nullptr, &model));
  EXPECT_EQ(text, "model 'gpu_model': the descriptor's device 7 is not one "
                  "this runtime knows");
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

} // namespace
