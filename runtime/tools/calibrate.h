//===- calibrate.h - Shared parts of dist-calibrate -------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What the sources of dist-calibrate share: the timing helpers (clock,
// median, progress lines, runtime-allocated buffers, the repeated timing of
// one call), and the measurements each source provides to the main program
// (dist-calibrate.cpp, which parses the command line and writes the JSON):
// GEMM size series and shape grids (calibrate_gemm.cpp), memory bandwidth
// and the in-place update (calibrate_memory.cpp), call, step and fork
// overheads (calibrate_overhead.cpp) and the direct convolution's rates
// (calibrate_conv.cpp). Uses only the runtime's public C API.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_TOOLS_CALIBRATE_H
#define DIST_RT_TOOLS_CALIBRATE_H

#include "dist_rt/kernels.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

namespace calibrate {

//===----------------------------------------------------------------------===//
// Timing helpers
//===----------------------------------------------------------------------===//

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Median of `values` (the upper one of the middle two for an even count).
inline double median(std::vector<double> values) {
  auto middle = values.begin() + values.size() / 2;
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

/// Keeps the compiler from assuming anything about memory across this point.
inline void clobberMemory() { asm volatile("" ::: "memory"); }

/// Set by --quiet: progress() prints nothing.
inline bool quietMode = false;

/// Prints one progress line on stderr unless --quiet.
__attribute__((format(printf, 1, 2))) inline void progress(const char *format,
                                                           ...) {
  if (quietMode)
    return;
  std::va_list args;
  va_start(args, format);
  std::fputs("calibrate: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
}

/// A block from the runtime allocator (the one generated code uses),
/// aligned to 64 bytes and freed on destruction.
class RuntimeBuffer {
public:
  explicit RuntimeBuffer(size_t bytes)
      : ptr(_mlir_memref_to_llvm_aligned_alloc(64, bytes)) {}
  RuntimeBuffer(const RuntimeBuffer &) = delete;
  RuntimeBuffer &operator=(const RuntimeBuffer &) = delete;
  ~RuntimeBuffer() { _mlir_memref_to_llvm_free(ptr); }

  template <typename T>
  T *as() const {
    return static_cast<T *>(ptr);
  }
  explicit operator bool() const { return ptr != nullptr; }

private:
  void *ptr;
};

/// Fewest reps of each timed call (see secondsPerCall).
constexpr int kMinGemmReps = 3;
/// A GEMM rep runs enough calls to last about this long, so that timer
/// resolution does not matter for small sizes.
constexpr double kGemmRepTargetS = 1e-4;

/// Median seconds per call of `call`, in reps of about kGemmRepTargetS,
/// for at least `minTimeS` and kMinGemmReps reps.
template <typename Fn>
double secondsPerCall(Fn &&call, double minTimeS) {
  call(); // warm-up (a convolution packs its filters and sizes its scratch)
  auto probeStart = Clock::now();
  call();
  double probeS = std::max(secondsSince(probeStart), 1e-9);
  int64_t callsPerRep = std::clamp<int64_t>(
      int64_t(std::ceil(kGemmRepTargetS / probeS)), 1, int64_t(1) << 20);
  std::vector<double> perCall;
  auto start = Clock::now();
  while (perCall.size() < size_t(kMinGemmReps) ||
         secondsSince(start) < minTimeS) {
    auto repStart = Clock::now();
    for (int64_t i = 0; i < callsPerRep; ++i)
      call();
    perCall.push_back(secondsSince(repStart) / double(callsPerRep));
  }
  return median(std::move(perCall));
}

/// Deterministic values in [-1, 1).
template <typename T>
void fillPseudoRandom(T *data, size_t count, uint32_t seed) {
  uint32_t state = seed;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    data[i] = T(double(state >> 8) / double(1u << 23) - 1.0);
  }
}

//===----------------------------------------------------------------------===//
// GEMM (calibrate_gemm.cpp)
//===----------------------------------------------------------------------===//

/// (size, FLOP/s) pairs at one thread count.
struct GemmSeries {
  int32_t threads;
  std::vector<std::pair<int64_t, double>> flopsBySize;
};

using GemmFn = void (*)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                        int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                        int64_t, int64_t, int64_t, int64_t);

/// Operand layouts of the shape grid, as the cost model names them:
/// "nn" (A [m, k], B [k, n]), "nt" (B stored [n, k]), "tn" (A stored
/// [k, m]); everything row-major and contiguous.
const char *const kLayouts[] = {"nn", "nt", "tn"};

/// Measures one data type at every thread count and size. Returns false
/// when out of memory.
template <typename T>
bool measureGemmType(const char *dtype, GemmFn gemm,
                     const std::vector<int64_t> &sizes, int32_t threadsMax,
                     double minTimeS, std::vector<GemmSeries> &out);

/// FLOP/s of one shape of the grid.
struct ShapePoint {
  int layout;
  int64_t m, n, k;
  double flops;
};

/// FLOP/s over every combination of `dims` for m, n and k in each layout,
/// and the same for `unalignedDims`, at one thread and at `threadsMax`
/// threads: the cost model interpolates it for the shapes a model's
/// products have (thin products, transposed operands and power-of-two row
/// strides run well below square ones). Each point is measured `passes`
/// times, far apart in time, and keeps its fastest. Returns false when out
/// of memory.
template <typename T>
bool measureGemmShapes(
    const char *dtype, GemmFn gemm, const std::vector<int64_t> &dims,
    const std::vector<int64_t> &unalignedDims, int32_t threadsMax,
    double minTimeS, int passes,
    std::vector<std::pair<int32_t, std::vector<ShapePoint>>> &out);

//===----------------------------------------------------------------------===//
// Memory bandwidth (calibrate_memory.cpp)
//===----------------------------------------------------------------------===//

/// One point's figures, one per bandwidth pass.
struct PassFigures {
  double key; ///< the thread count (triad) or footprint (in-place update)
  std::vector<double> values;
};

/// Best-of-kTriadRuns triad bandwidth (bytes/s) per thread count,
/// counting 3 * array bytes per run (STREAM's convention: the
/// write-allocate read of `a` is not counted), added to `out` (one entry
/// per thread count, one value per pass). Returns false when out of
/// memory.
bool measureBandwidth(size_t arrayBytes, int32_t threadsMax,
                      std::vector<PassFigures> &out);

/// Throughput (bytes/s, counting the 7 streams of 4 bytes per element: 4
/// read, 3 written in place) of the in-place update at each footprint (all
/// four arrays together) and thread counts 1, powers of two and threadsMax
/// (those the loop probes use): the cost model's
/// rate for optimizer updates. The fresh-output loop probes that dist-opt
/// times are no stand-in: past the caches, a write to a fresh buffer reads
/// it first, and in-place streams also prefetch better (measured on the
/// 2-core EPYC at 89 MB: 68 GB/s in place, 51 GB/s of moved bytes for the
/// elementwise probe). Best of a few runs, each at least `minTimeS`, added
/// to `out` (per thread count, one entry per footprint, one value per
/// pass). Returns false when out of memory.
bool measureInPlace(
    const std::vector<size_t> &footprints, int32_t threadsMax, double minTimeS,
    std::vector<std::pair<int32_t, std::vector<PassFigures>>> &out);

//===----------------------------------------------------------------------===//
// Overheads (calibrate_overhead.cpp)
//===----------------------------------------------------------------------===//
/// kernel_overhead: seconds per call of tinyKernel over kTinyKernelElems
/// elements on the calling thread, i.e. the fixed cost of entering and
/// leaving a small kernel (call, loop setup, 16 floats of work). It does not
/// include any thread-pool dispatch (that is step_overhead). Median over
/// batches of kOverheadCalls calls.
double measureKernelOverhead();

/// gemm_call_overhead: seconds that one dist_rt_gemm_set_f32 call of a 1x1x1
/// product costs beyond each product of a batch of kOverheadBatchProducts
/// (the runtime's dispatch: stride analysis, task split), at one thread.
/// The shape grid times standalone calls, so a batch of N products costs N
/// grid products less N - 1 of this: measured here, a batch of 128 9x9x32
/// products (the DLRM-style model's interactions) ran at 94 ns per product
/// where one alone took 118 ns. Medians over batches of kOverheadCalls
/// calls; never negative.
/// `floorS` receives gemm_call_floor: the time of that call alone, the
/// least any product costs, from which the cost model extrapolates
/// products smaller than its shape grid.
double measureGemmCallOverhead(double &floorS);

/// step_overhead: seconds per dist_rt_parallel_for over n = 1 with a
/// trivial body plus one 64-byte, 64-byte-aligned allocation and free
/// through the runtime allocator. With n = 1 the loop runs inline on the
/// caller (no pool wake-up), so this is the runtime's fixed per-step
/// bookkeeping. Median over batches of kOverheadCalls steps.
double measureStepOverhead(int32_t threads);

/// fork_overhead: seconds a dist_rt_parallel_for over 64 iterations of a
/// trivial body costs at `threads` threads beyond running it inline, with a
/// little work between calls as generated code has between kernels (the
/// workers are still spinning, as in a model's step). Median over batches of
/// kOverheadCalls calls.
double measureForkOverhead(int32_t threads);

//===----------------------------------------------------------------------===//
// Direct convolution (calibrate_conv.cpp)
//===----------------------------------------------------------------------===//

/// Rates of the direct forward convolution at one thread count, in the
/// units of dist_rt/conv_plan.h, as one thread's share of the work:
/// seconds per 16 x 16 tile-tap of tiles one row of 16 positions wide
/// (`tap`) and of narrower ones (`narrowTap`: two rows of 8 or four of 4,
/// and the position-vectorised kernel's), and per tile beyond its taps
/// (`tile`: the transpose and stores).
struct ConvRates {
  int32_t threads;
  double tap, narrowTap, tile;
};

/// Times dist_rt_conv2d_f32 at each thread count on three calls of 8
/// images into 32 filters of 3 x 3 (the benchmark CNN's sizes): 4 and 32
/// channels of 18 x 18 (padded; 256 tiles of 16 x 1 positions each, 36 and
/// 288 taps), whose line gives the time per tap and per tile, then 32
/// channels of 10 x 10 (64 tiles of 8 x 2 positions), whose time less its
/// tiles' gives the narrow tiles' time per tap. Measured on this project's
/// EPYC at one thread: 2.6 ns per tap of the wide tiles, 2.85 of the
/// narrow ones, 19 ns per tile; the benchmark CNN's five convolutions then
/// came within 4% (the GEMM shape grid had priced them 12% fast). Returns
/// false when out of memory; leaves `rates` empty without AVX-512 (the
/// compiler then lowers convolutions through im2col and GEMM). Thread
/// counts from 1 to `threadsMax`, 1 first.
bool measureDirectConv(int32_t threadsMax, double minTimeS,
                       std::vector<ConvRates> &rates);

} // namespace calibrate

#endif // DIST_RT_TOOLS_CALIBRATE_H
