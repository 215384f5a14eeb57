//===- cuda_measure.cpp - Measure a GPU for the cost model ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// dist_rt_gpu_measure (dist_rt/kernels.h), which `dist-calibrate --gpu`
// runs: what compiled CUDA models get from a GPU, through the runtime's own
// entry points. Square f32 products by size at each precision
// (dist_rt_cuda_gemm_set_f32[_tf32|_bf16]: cuBLASLt as the generated code
// calls it, each call waiting for the device), the device-to-device copy
// bandwidth (cuMemcpy between two buffers the products made resident on
// the device; read plus write bytes), the cost of launching an empty
// kernel and waiting for it (a PTX image the driver compiles, launched
// through the mgpu* functions generated code calls) and of a 1x1x1
// product's call. Times are host wall-clock: every call waits for the
// device, as in a compiled model.
//
//===----------------------------------------------------------------------===//

#include "cuda_internal.h"
#include "dist_rt/kernels.h"
#include "internal.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

extern "C" void *mgpuModuleLoadJIT(void *data, int optLevel);
extern "C" void *mgpuModuleGetFunction(void *module, const char *name);
extern "C" void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                                 intptr_t gridZ, intptr_t blockX,
                                 intptr_t blockY, intptr_t blockZ, int32_t smem,
                                 void *stream, void **params, void **extra,
                                 size_t paramsCount);
extern "C" void mgpuStreamSynchronize(void *stream);

using dist_rt::makeStatus;

namespace {

using Clock = std::chrono::steady_clock;
using Product = void (*)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t);

/// An empty kernel for the launch cost; PTX 7.5 for sm_75 is the oldest
/// pair CUDA 13 compiles, and the driver compiles it for the GPU at hand.
const char kEmptyKernel[] = ".version 7.5\n"
                            ".target sm_75\n"
                            ".address_size 64\n"
                            ".visible .entry dist_rt_empty()\n"
                            "{\n"
                            "  ret;\n"
                            "}\n";

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

/// Seconds per call of `body`, after two warm-up calls: repeated until at
/// least `minTime` seconds and three calls have passed.
template <typename Body>
double perCall(double minTime, Body body) {
  body();
  body();
  int64_t calls = 0;
  Clock::time_point start = Clock::now();
  double elapsed = 0;
  while (calls < 3 || elapsed < minTime) {
    body();
    ++calls;
    elapsed = seconds(start);
  }
  return elapsed / static_cast<double>(calls);
}

/// C = A * B, square of side n, row-major, on device buffers.
void square(Product product, int64_t n, void *a, void *b, void *c) {
  auto p = [](void *v) {
    return static_cast<int64_t>(reinterpret_cast<intptr_t>(v));
  };
  product(1, n, n, n, p(a), 0, n, 1, p(b), n, 1, p(c), 0, n, 1, 0);
}

} // namespace

extern "C" dist_rt_status_t dist_rt_gpu_measure(int32_t device, int32_t quick,
                                                dist_rt_gpu_figures_t *out) {
  if (!out)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_gpu_measure: out is NULL");
  std::memset(out, 0, sizeof(*out));
  std::string why = dist_rt::cuda::open(device);
  if (!why.empty())
    return makeStatus(DIST_RT_ERROR_DEVICE, "GPU %d: %s", device, why.c_str());
  std::string name = dist_rt::cuda::deviceName();
  std::snprintf(out->name, sizeof(out->name), "%s", name.c_str());

  static const int64_t kSizes[] = {128, 256, 512, 1024, 2048, 4096, 8192};
  static const int64_t kQuickSizes[] = {256, 1024, 4096};
  const int64_t *sizes = quick ? kQuickSizes : kSizes;
  int32_t count = quick ? 3 : 7;
  double minTime = quick ? 0.02 : 0.2;
  int64_t largest = sizes[count - 1];
  size_t bytes = static_cast<size_t>(largest * largest) * sizeof(float);

  dist_rt::RunErrors errors;
  dist_rt::RunErrorScope scope(errors);
  std::string error;
  void *blocks[3] = {nullptr, nullptr, nullptr};
  auto release = [&] {
    for (void *block : blocks)
      if (block)
        dist_rt::cuda::release(block);
  };
  for (void *&block : blocks) {
    block = dist_rt::cuda::allocate(bytes, error);
    if (!block) {
      release();
      return makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY, "GPU %d (%s): %s", device,
                        name.c_str(), error.c_str());
    }
  }
  // Small values (the bytes 0x3c: about 0.0115), written by the host into
  // managed memory before the device touches it.
  std::memset(blocks[0], 0x3c, bytes);
  std::memset(blocks[1], 0x3c, bytes);

  const Product products[3] = {dist_rt_cuda_gemm_set_f32,
                               dist_rt_cuda_gemm_set_f32_tf32,
                               dist_rt_cuda_gemm_set_f32_bf16};
  out->num_sizes = count;
  for (int32_t i = 0; i < count; ++i)
    out->sizes[i] = sizes[i];
  for (int p = 0; p < 3 && !errors.failed; ++p)
    for (int32_t i = 0; i < count && !errors.failed; ++i) {
      int64_t n = sizes[i];
      double t = perCall(minTime, [&] {
        square(products[p], n, blocks[0], blocks[1], blocks[2]);
      });
      out->product_flops[p][i] = 2.0 * static_cast<double>(n * n * n) / t;
    }

  // A and C are on the device now (the products read and wrote them).
  if (!errors.failed)
    out->copy_bandwidth =
        2.0 * static_cast<double>(bytes) / perCall(minTime, [&] {
          error = dist_rt::cuda::copy(blocks[2], blocks[0], bytes);
          if (!error.empty())
            dist_rt::failRun(("CUDA: copy: " + error).c_str());
        });

  if (!errors.failed) {
    void *module = mgpuModuleLoadJIT(const_cast<char *>(kEmptyKernel), 0);
    void *function = mgpuModuleGetFunction(module, "dist_rt_empty");
    if (function)
      out->launch_overhead_s = perCall(minTime, [&] {
        mgpuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr,
                         nullptr, 0);
        mgpuStreamSynchronize(nullptr);
      });
  }
  if (!errors.failed)
    out->product_call_s = perCall(minTime, [&] {
      square(dist_rt_cuda_gemm_set_f32, 1, blocks[0], blocks[1], blocks[2]);
    });
  release();
  if (errors.failed)
    return makeStatus(DIST_RT_ERROR_DEVICE, "GPU %d (%s): %s", device,
                      name.c_str(), errors.message.c_str());
  return nullptr;
}
