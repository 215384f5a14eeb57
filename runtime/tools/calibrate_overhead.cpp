//===- calibrate_overhead.cpp - Fixed costs for dist-calibrate ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Times the fixed costs the cost model adds beyond a kernel's work: calling
// a small fused kernel (kernel_overhead), one GEMM call beyond its products
// and that call alone (gemm_call_overhead, gemm_call_floor), the runtime's
// bookkeeping of one parallel step (step_overhead) and waking the thread
// pool (fork_overhead). Each is the median of many batches of calls.
//
//===----------------------------------------------------------------------===//

#include "calibrate.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace calibrate {
namespace {

/// Overheads are timed in batches of kOverheadCalls calls; the median batch
/// over kOverheadBatches batches is reported.
constexpr int kOverheadCalls = 1000;
constexpr int kOverheadBatches = 201;
/// Elements of the tiny kernel timed for kernel_overhead.
constexpr int64_t kTinyKernelElems = 16;
/// Products per call in measureGemmCallOverhead's batched calls.
constexpr int64_t kOverheadBatchProducts = 64;

/// Stand-in for a fused elementwise kernel: one loop over `n` floats doing
/// one multiply each. Kept out of line (and called through a volatile
/// pointer below) so that every call is a real call, as when generated code
/// runs a fused kernel on one thread.
__attribute__((noinline)) void tinyKernel(const float *in, float *out,
                                          int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = in[i] * 0.5f;
}

void (*volatile tinyKernelPtr)(const float *, float *, int64_t) = tinyKernel;

void trivialBody(void *ctx, int64_t begin, int64_t end) {
  *static_cast<volatile int64_t *>(ctx) += end - begin;
}

} // namespace

double measureKernelOverhead() {
  alignas(64) float in[kTinyKernelElems];
  alignas(64) float out[kTinyKernelElems];
  for (int64_t i = 0; i < kTinyKernelElems; ++i)
    in[i] = float(i);
  auto kernel = tinyKernelPtr;
  std::vector<double> perCallS;
  for (int batch = 0; batch < kOverheadBatches; ++batch) {
    auto start = Clock::now();
    for (int call = 0; call < kOverheadCalls; ++call) {
      kernel(in, out, kTinyKernelElems);
      clobberMemory();
    }
    perCallS.push_back(secondsSince(start) / kOverheadCalls);
  }
  return median(std::move(perCallS));
}

double measureGemmCallOverhead(double &floorS) {
  dist_rt_set_num_threads(1);
  alignas(64) float a[kOverheadBatchProducts], b[kOverheadBatchProducts],
      c[kOverheadBatchProducts];
  for (int64_t i = 0; i < kOverheadBatchProducts; ++i) {
    a[i] = float(i);
    b[i] = 1.0f;
  }
  auto perCall = [&](int64_t batch) {
    std::vector<double> perCallS;
    for (int rep = 0; rep < kOverheadBatches; ++rep) {
      auto start = Clock::now();
      for (int call = 0; call < kOverheadCalls / 10; ++call) {
        dist_rt_gemm_set_f32(batch, 1, 1, 1, int64_t(a), 1, 1, 1, int64_t(b), 1,
                             1, int64_t(c), 1, 1, 1, 1);
        clobberMemory();
      }
      perCallS.push_back(secondsSince(start) / (kOverheadCalls / 10));
    }
    return median(std::move(perCallS));
  };
  perCall(kOverheadBatchProducts); // warm-up
  double single = perCall(1);
  floorS = single;
  double batched = perCall(kOverheadBatchProducts);
  double perProduct = batched / double(kOverheadBatchProducts);
  return std::max(0.0, (single - perProduct) * double(kOverheadBatchProducts) /
                           double(kOverheadBatchProducts - 1));
}

double measureStepOverhead(int32_t threads) {
  dist_rt_set_num_threads(threads);
  volatile int64_t sink = 0;
  std::vector<double> perStepS;
  for (int batch = 0; batch < kOverheadBatches; ++batch) {
    auto start = Clock::now();
    for (int step = 0; step < kOverheadCalls; ++step) {
      dist_rt_parallel_for(1, trivialBody, const_cast<int64_t *>(&sink));
      void *block = _mlir_memref_to_llvm_aligned_alloc(64, 64);
      clobberMemory();
      _mlir_memref_to_llvm_free(block);
    }
    perStepS.push_back(secondsSince(start) / kOverheadCalls);
  }
  return median(std::move(perStepS));
}

double measureForkOverhead(int32_t threads) {
  volatile int64_t sink = 0;
  auto perCall = [&](int32_t t) {
    dist_rt_set_num_threads(t);
    std::vector<double> perCallS;
    for (int batch = 0; batch < kOverheadBatches / 4; ++batch) {
      auto start = Clock::now();
      for (int call = 0; call < kOverheadCalls; ++call) {
        dist_rt_parallel_for(64, trivialBody, const_cast<int64_t *>(&sink));
        for (int i = 0; i < 256; ++i)
          sink = sink + i;
      }
      perCallS.push_back(secondsSince(start) / kOverheadCalls);
    }
    return median(std::move(perCallS));
  };
  double inline1 = perCall(1);
  return std::max(0.0, perCall(threads) - inline1);
}

} // namespace calibrate
