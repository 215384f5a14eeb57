//===- dist-calibrate.cpp - Measure this machine for the cost model -------===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-calibrate [--threads-max N] [--quick] [--quiet] [--json OUT]
//
// Measures this machine through the runtime's own entry points, so that the
// figures are what compiled models get: GEMM throughput per data type,
// thread count and size (dist_rt_gemm_set_f32/f64, C = A * B: generated
// code calls these for every product without a bias, and OpenBLAS runs
// small ones with beta = 0 through faster kernels) and for a grid of f32
// shapes in three operand layouts, streaming memory bandwidth per thread
// count (a STREAM triad run by dist_rt_parallel_for), the throughput of an
// in-place optimizer update per footprint and thread count (these two in
// passes spread over the run, keeping the median), the rates of the direct
// convolution kernels per thread count (on AVX-512), the fixed
// cost of calling a small fused kernel, of one GEMM call beyond its
// products, and of one parallel step. Prints one JSON object on stdout, or
// writes it atomically to OUT; Cluster.h describes the fields
// (DeviceCalibration). Progress goes to stderr, one line per measurement,
// unless --quiet. Every failure is one "dist-calibrate: error: ..." line on
// stderr and exit code 1.
//
// dist-opt runs this program; it never links it. The program uses only the
// runtime's public C API.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/conv_plan.h"
#include "dist_rt/kernels.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

//===----------------------------------------------------------------------===//
// Options and settings
//===----------------------------------------------------------------------===//

constexpr const char *kUsage =
    "usage: dist-calibrate [--threads-max N] [--quick] [--bandwidth-passes N] "
    "[--quiet] [--json OUT]\n"
    "\n"
    "Measures GEMM throughput, memory bandwidth and call overheads through\n"
    "the dist-opt runtime and prints them as one JSON object.\n"
    "\n"
    "  --threads-max N  measure thread counts 1..N (default: hardware "
    "threads)\n"
    "  --quick          fewer sizes and shorter runs (a few seconds)\n"
    "  --bandwidth-passes N\n"
    "                   measure memory bandwidth N times, spread over the\n"
    "                   run, keeping the median (default 3, 1 with --quick)\n"
    "  --quiet          no progress lines on stderr\n"
    "  --json OUT       write the JSON object to OUT instead of stdout\n";

/// Largest accepted --threads-max (the runtime's own limit).
constexpr int32_t kMaxThreads = 4096;
/// Largest accepted --bandwidth-passes.
constexpr int32_t kMaxBandwidthPasses = 16;

/// The parsed command line.
struct Options {
  int32_t threadsMax = 0; ///< 0: hardware threads
  bool quick = false;
  int32_t bandwidthPasses = 0; ///< 0: the settings' default
  bool quiet = false;
  std::string jsonPath; ///< "" for stdout
};

/// How long and how big the measurements are.
struct Settings {
  std::vector<int64_t> gemmSizes;
  /// Each GEMM measurement repeats until it took this long and ran at
  /// least kMinGemmReps reps.
  double gemmMinTimeS;
  /// Bytes of each of the three triad arrays.
  size_t triadArrayBytes;
  /// Values of m, n and k of the f32 shape grids: powers of two, and other
  /// sizes whose row strides do not alias in the cache (the cost model
  /// reads each product off the grid its strides belong to); and how long
  /// each measurement runs at least.
  std::vector<int64_t> shapeDims;
  std::vector<int64_t> unalignedShapeDims;
  double shapeMinTimeS;
  /// Passes over the shape grids; each point keeps its fastest pass. A
  /// virtual machine's cores are now and then taken away for seconds
  /// (measured here: the same product at 2 threads ran at 200 GFLOP/s in
  /// one run and 380 in the next), which one pass would record as the
  /// machine's speed.
  int shapePasses;
  /// Footprints (bytes of all four arrays) of the in-place update, and how
  /// long each of its measurements runs at least.
  std::vector<size_t> inPlaceFootprints;
  double inPlaceMinTimeS;
  /// How long each direct convolution measurement runs at least.
  double convMinTimeS;
  /// Passes over the triad and the in-place update, spread over the whole
  /// calibration (first, between the GEMM measurements, last); each point
  /// keeps its median pass. This machine's memory bandwidth drops for
  /// seconds to minutes at a time (measured here in three calibrations:
  /// the in-place update at 64 MiB ran at 73, 78 and 33 GB/s), and one pass
  /// inside such a spell priced every bandwidth-bound kernel twice too
  /// slow. The fastest pass would not do either: it priced the DLRM's
  /// training step, whose AdamW table updates run at the in-place rate,
  /// 10-17% fast in the machine's usual state.
  int bandwidthPasses;
};

constexpr int kMinGemmReps = 3;
/// A GEMM rep runs enough calls to last about this long, so that timer
/// resolution does not matter for small sizes.
constexpr double kGemmRepTargetS = 1e-4;
constexpr int kTriadRuns = 5;
/// Overheads are timed in batches of kOverheadCalls calls; the median batch
/// over kOverheadBatches batches is reported.
constexpr int kOverheadCalls = 1000;
constexpr int kOverheadBatches = 201;
/// Elements of the tiny kernel timed for kernel_overhead.
constexpr int64_t kTinyKernelElems = 16;

Settings settingsFor(bool quick) {
  if (quick)
    return {{64, 256, 512},
            0.04,
            size_t(16) << 20,
            {16, 128, 1024},
            {24, 200, 1000},
            0.004,
            1,
            {size_t(256) << 10, size_t(4) << 20, size_t(64) << 20},
            0.005,
            0.01,
            1};
  return {{32, 64, 128, 256, 512, 1024},
          0.15,
          size_t(32) << 20,
          {16, 64, 256, 1024},
          // Sizes below 24 were tried and left out: OpenBLAS's small
          // kernels are far from monotone there (one thread, B transposed:
          // 6x6x24 takes 172 ns, 8x8x24 175 ns, 8x8x32 86 ns, 9x9x32 110
          // ns), so interpolating from 6 priced a DLRM's 9x9x32 products
          // worse than the square-root rule below the grid does.
          {24, 100, 400, 1200},
          0.006,
          2,
          {size_t(256) << 10, size_t(4) << 20, size_t(16) << 20,
           size_t(64) << 20, size_t(256) << 20},
          0.02,
          0.05,
          3};
}

int32_t hardwareThreads() {
  unsigned count = std::thread::hardware_concurrency();
  if (count == 0)
    return 1;
  return count > unsigned(kMaxThreads) ? kMaxThreads : int32_t(count);
}

/// Prints `message` as the one error line.
void reportError(const std::string &message) {
  std::fprintf(stderr, "dist-calibrate: error: %s\n", message.c_str());
}

/// Parses a positive integer of at most `max` into `out`.
bool parseCount(const std::string &text, int32_t max, int32_t &out) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  long value = std::strtol(text.c_str(), nullptr, 10);
  if (value < 1 || value > max)
    return false;
  out = int32_t(value);
  return true;
}

/// Parses argv into `options`. Returns false after reporting an error;
/// sets `showHelp` for --help.
bool parseCommandLine(int argc, char **argv, Options &options, bool &showHelp) {
  showHelp = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string name = arg, value;
    bool hasInlineValue = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasInlineValue = true;
    }
    bool takesValue = name == "--threads-max" || name == "--json" ||
                      name == "--bandwidth-passes";
    if (!takesValue && hasInlineValue) {
      if (name == "--quick" || name == "--quiet" || name == "--help") {
        reportError("option '" + name + "' takes no value");
        return false;
      }
      reportError("unknown option '" + arg + "' (see --help)");
      return false;
    }
    if (takesValue && !hasInlineValue) {
      if (i + 1 >= argc) {
        reportError("option '" + name + "' needs a value");
        return false;
      }
      value = argv[++i];
    }
    if (name == "--threads-max") {
      if (!parseCount(value, kMaxThreads, options.threadsMax)) {
        reportError("invalid --threads-max '" + value +
                    "' (expected an integer from 1 to " +
                    std::to_string(kMaxThreads) + ")");
        return false;
      }
    } else if (name == "--bandwidth-passes") {
      if (!parseCount(value, kMaxBandwidthPasses, options.bandwidthPasses)) {
        reportError("invalid --bandwidth-passes '" + value +
                    "' (expected an integer from 1 to " +
                    std::to_string(kMaxBandwidthPasses) + ")");
        return false;
      }
    } else if (name == "--json") {
      if (value.empty()) {
        reportError("option '--json' needs a file name");
        return false;
      }
      options.jsonPath = value;
    } else if (name == "--quick") {
      options.quick = true;
    } else if (name == "--quiet") {
      options.quiet = true;
    } else if (name == "--help" || name == "-h") {
      showHelp = true;
    } else if (arg.empty() || arg[0] != '-') {
      reportError("unexpected argument '" + arg + "' (see --help)");
      return false;
    } else {
      reportError("unknown option '" + arg + "' (see --help)");
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Timing helpers
//===----------------------------------------------------------------------===//

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Median of `values` (the upper one of the middle two for an even count).
double median(std::vector<double> values) {
  auto middle = values.begin() + values.size() / 2;
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

/// Keeps the compiler from assuming anything about memory across this point.
inline void clobberMemory() { asm volatile("" ::: "memory"); }

bool quietMode = false;

/// Prints one progress line on stderr unless --quiet.
__attribute__((format(printf, 1, 2))) void progress(const char *format, ...) {
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

//===----------------------------------------------------------------------===//
// GEMM
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

/// C (m x n) += A * B in layout `layout` (an index into kLayouts), one
/// batch.
template <typename T>
void runGemm(GemmFn gemm, int64_t m, int64_t n, int64_t k, int layout,
             const T *a, const T *b, T *c) {
  bool ta = layout == 2, tb = layout == 1;
  gemm(/*batch=*/1, m, n, k, int64_t(intptr_t(a)), /*a_sb=*/0,
       /*a_sm=*/ta ? 1 : k, /*a_sk=*/ta ? m : 1, int64_t(intptr_t(b)),
       /*b_sk=*/tb ? 1 : n, /*b_sn=*/tb ? k : 1, int64_t(intptr_t(c)),
       /*c_sb=*/0, /*c_sm=*/n, /*c_sn=*/1, /*b_sb=*/0);
}

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

/// Median FLOP/s of m x n x k products in `layout` at the current thread
/// count.
template <typename T>
double measureGemm(GemmFn gemm, int64_t m, int64_t n, int64_t k, int layout,
                   const T *a, const T *b, T *c, double minTimeS) {
  // C starts finite (the set variants never read it; a GEMM that adds
  // would grow it linearly, never overflowing here).
  std::fill(c, c + m * n, T(0));
  double seconds = secondsPerCall(
      [&] { runGemm(gemm, m, n, k, layout, a, b, c); }, minTimeS);
  return 2.0 * double(m) * double(n) * double(k) / seconds;
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

/// Measures one data type at every thread count and size. Returns false
/// when out of memory.
template <typename T>
bool measureGemmType(const char *dtype, GemmFn gemm,
                     const std::vector<int64_t> &sizes, int32_t threadsMax,
                     double minTimeS, std::vector<GemmSeries> &out) {
  int64_t maxSize = *std::max_element(sizes.begin(), sizes.end());
  size_t count = size_t(maxSize) * size_t(maxSize);
  RuntimeBuffer a(count * sizeof(T)), b(count * sizeof(T)),
      c(count * sizeof(T));
  if (!a || !b || !c)
    return false;
  fillPseudoRandom(a.as<T>(), count, 1);
  fillPseudoRandom(b.as<T>(), count, 2);

  for (int32_t threads = 1; threads <= threadsMax; ++threads) {
    dist_rt_set_num_threads(threads);
    GemmSeries series{threads, {}};
    for (int64_t n : sizes) {
      double flops = measureGemm<T>(gemm, n, n, n, /*layout=*/0, a.as<T>(),
                                    b.as<T>(), c.as<T>(), minTimeS);
      progress("gemm %s %" PRId64 " threads %d: %.1f GFLOP/s", dtype, n,
               threads, flops * 1e-9);
      series.flopsBySize.emplace_back(n, flops);
    }
    out.push_back(std::move(series));
  }
  return true;
}

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
    std::vector<std::pair<int32_t, std::vector<ShapePoint>>> &out) {
  int64_t maxDim =
      std::max(*std::max_element(dims.begin(), dims.end()),
               *std::max_element(unalignedDims.begin(), unalignedDims.end()));
  size_t count = size_t(maxDim) * size_t(maxDim);
  RuntimeBuffer a(count * sizeof(T)), b(count * sizeof(T)),
      c(count * sizeof(T));
  if (!a || !b || !c)
    return false;
  fillPseudoRandom(a.as<T>(), count, 3);
  fillPseudoRandom(b.as<T>(), count, 4);
  std::vector<int32_t> threadCounts = {1};
  if (threadsMax > 1)
    threadCounts.push_back(threadsMax);
  // The points of one thread count, in the order they are measured and
  // written.
  std::vector<ShapePoint> grid;
  for (int layout = 0; layout < 3; ++layout)
    for (const std::vector<int64_t> *set : {&dims, &unalignedDims})
      for (int64_t m : *set)
        for (int64_t n : *set)
          for (int64_t k : *set)
            grid.push_back({layout, m, n, k, 0});
  out.clear();
  for (int32_t threads : threadCounts)
    out.emplace_back(threads, grid);
  size_t total = size_t(passes) * threadCounts.size() * grid.size(), done = 0;
  for (int pass = 0; pass < passes; ++pass) {
    for (auto &[threads, points] : out) {
      dist_rt_set_num_threads(threads);
      for (ShapePoint &p : points) {
        p.flops = std::max(
            p.flops, measureGemm<T>(gemm, p.m, p.n, p.k, p.layout, a.as<T>(),
                                    b.as<T>(), c.as<T>(), minTimeS));
        if (++done % (grid.size() / 3) == 0)
          progress("gemm %s shapes %s threads %d: %zu of %zu", dtype,
                   kLayouts[p.layout], threads, done, total);
      }
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Memory bandwidth
//===----------------------------------------------------------------------===//

/// The triad a[i] = b[i] + scalar * c[i].
struct TriadArgs {
  float *a;
  const float *b;
  const float *c;
  float scalar;
};

void triadChunk(void *ctx, int64_t begin, int64_t end) {
  const auto &args = *static_cast<const TriadArgs *>(ctx);
  float *__restrict a = args.a;
  const float *__restrict b = args.b;
  const float *__restrict c = args.c;
  float scalar = args.scalar;
  for (int64_t i = begin; i < end; ++i)
    a[i] = b[i] + scalar * c[i];
}

/// Fills the three arrays; run on the pool so that pages are first touched
/// by the threads that later stream them.
void triadInitChunk(void *ctx, int64_t begin, int64_t end) {
  const auto &args = *static_cast<const TriadArgs *>(ctx);
  float *b = const_cast<float *>(args.b);
  float *c = const_cast<float *>(args.c);
  for (int64_t i = begin; i < end; ++i) {
    args.a[i] = 0.0f;
    b[i] = 1.0f;
    c[i] = 2.0f;
  }
}

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
                      std::vector<PassFigures> &out) {
  RuntimeBuffer a(arrayBytes), b(arrayBytes), c(arrayBytes);
  if (!a || !b || !c)
    return false;
  auto n = int64_t(arrayBytes / sizeof(float));
  TriadArgs args{a.as<float>(), b.as<float>(), c.as<float>(), 3.0f};
  dist_rt_set_num_threads(threadsMax);
  dist_rt_parallel_for(n, triadInitChunk, &args);

  for (int32_t threads = 1; threads <= threadsMax; ++threads) {
    dist_rt_set_num_threads(threads);
    dist_rt_parallel_for(n, triadChunk, &args); // warm-up
    double bestS = 1e30;
    for (int run = 0; run < kTriadRuns; ++run) {
      auto start = Clock::now();
      dist_rt_parallel_for(n, triadChunk, &args);
      clobberMemory();
      bestS = std::min(bestS, std::max(secondsSince(start), 1e-9));
    }
    double bytesPerS = 3.0 * double(n) * sizeof(float) / bestS;
    progress("memory bandwidth threads %d: %.1f GB/s", threads,
             bytesPerS * 1e-9);
    if (out.size() < size_t(threads))
      out.push_back({double(threads), {}});
    out[threads - 1].values.push_back(bytesPerS);
  }
  return true;
}

/// The arrays of an in-place optimizer update: parameter, gradient and the
/// two Adam moments.
struct InPlaceArgs {
  float *param;
  const float *grad;
  float *m;
  float *v;
};

/// One AdamW step over [begin, end): reads four arrays and rewrites three
/// where it read them, as the fused update loop codegen emits for each
/// parameter does. Cloned for AVX-512 because generated loops use the
/// host's full vector width; a baseline x86-64 build of this loop (SSE2)
/// ran at 14 GB/s on the 2-core EPYC, arithmetic-bound, where the
/// generated DLRM table updates stream at 60-70 GB/s.
__attribute__((target_clones("avx512f", "default"))) void
inPlaceChunk(void *ctx, int64_t begin, int64_t end) {
  const auto &args = *static_cast<const InPlaceArgs *>(ctx);
  float *__restrict p = args.param;
  const float *__restrict g = args.grad;
  float *__restrict m = args.m;
  float *__restrict v = args.v;
  for (int64_t i = begin; i < end; ++i) {
    float gi = g[i];
    float mi = 0.9f * m[i] + 0.1f * gi;
    float vi = 0.999f * v[i] + 0.001f * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * 0.99999f - 1e-3f * mi / (__builtin_sqrtf(vi) + 1e-8f);
  }
}

void inPlaceInitChunk(void *ctx, int64_t begin, int64_t end) {
  const auto &args = *static_cast<const InPlaceArgs *>(ctx);
  float *g = const_cast<float *>(args.grad);
  for (int64_t i = begin; i < end; ++i) {
    args.param[i] = 1.0f;
    g[i] = 1e-3f * float(i % 1000);
    args.m[i] = 0.0f;
    args.v[i] = 0.0f;
  }
}

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
    std::vector<std::pair<int32_t, std::vector<PassFigures>>> &out) {
  if (out.empty()) {
    for (int32_t threads = 1; threads < threadsMax; threads *= 2)
      out.push_back({threads, {}});
    out.push_back({threadsMax, {}});
  }
  for (size_t f = 0; f < footprints.size(); ++f) {
    size_t footprint = footprints[f];
    size_t arrayBytes = std::max<size_t>(footprint / 4, 4096);
    RuntimeBuffer p(arrayBytes), g(arrayBytes), m(arrayBytes), v(arrayBytes);
    if (!p || !g || !m || !v)
      return false;
    auto n = int64_t(arrayBytes / sizeof(float));
    InPlaceArgs args{p.as<float>(), g.as<float>(), m.as<float>(),
                     v.as<float>()};
    dist_rt_set_num_threads(threadsMax);
    dist_rt_parallel_for(n, inPlaceInitChunk, &args);
    double bytes = 7.0 * double(n) * sizeof(float);
    for (auto &[threads, points] : out) {
      dist_rt_set_num_threads(threads);
      dist_rt_parallel_for(n, inPlaceChunk, &args); // warm-up
      double bestS = 1e30, spentS = 0;
      for (int run = 0; run < kTriadRuns || spentS < minTimeS; ++run) {
        auto start = Clock::now();
        dist_rt_parallel_for(n, inPlaceChunk, &args);
        clobberMemory();
        double s = std::max(secondsSince(start), 1e-9);
        bestS = std::min(bestS, s);
        spentS += s;
      }
      if (points.size() == f)
        points.push_back({4.0 * double(arrayBytes), {}});
      points[f].values.push_back(bytes / bestS);
      progress("in-place update %zu KiB threads %d: %.1f GB/s",
               4 * arrayBytes / 1024, threads, bytes / bestS * 1e-9);
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Overheads
//===----------------------------------------------------------------------===//

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

/// kernel_overhead: seconds per call of tinyKernel over kTinyKernelElems
/// elements on the calling thread, i.e. the fixed cost of entering and
/// leaving a small kernel (call, loop setup, 16 floats of work). It does not
/// include any thread-pool dispatch (that is step_overhead). Median over
/// batches of kOverheadCalls calls.
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

/// Products per call in measureGemmCallOverhead's batched calls.
constexpr int64_t kOverheadBatchProducts = 64;

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

void trivialBody(void *ctx, int64_t begin, int64_t end) {
  *static_cast<volatile int64_t *>(ctx) += end - begin;
}

/// step_overhead: seconds per dist_rt_parallel_for over n = 1 with a
/// trivial body plus one 64-byte, 64-byte-aligned allocation and free
/// through the runtime allocator. With n = 1 the loop runs inline on the
/// caller (no pool wake-up), so this is the runtime's fixed per-step
/// bookkeeping. Median over batches of kOverheadCalls steps.
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

/// fork_overhead: seconds a dist_rt_parallel_for over 64 iterations of a
/// trivial body costs at `threads` threads beyond running it inline, with a
/// little work between calls as generated code has between kernels (the
/// workers are still spinning, as in a model's step). Median over batches of
/// kOverheadCalls calls.
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

//===----------------------------------------------------------------------===//
// Direct convolution
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
                       std::vector<ConvRates> &rates) {
  if (!__builtin_cpu_supports("avx512f"))
    return true;
  struct Probe {
    int64_t c, h, oh;
  };
  constexpr Probe probes[3] = {{4, 18, 16}, {32, 18, 16}, {32, 10, 8}};
  constexpr int64_t n = 8, f = 32, kh = 3, kw = 3, maxC = 32, maxH = 18;
  RuntimeBuffer in(size_t(n * maxC * maxH * maxH) * sizeof(float));
  RuntimeBuffer weight(size_t(f * maxC * kh * kw) * sizeof(float));
  RuntimeBuffer bias(size_t(f) * sizeof(float));
  RuntimeBuffer out(size_t(n * f * 16 * 16) * sizeof(float));
  if (!in || !weight || !bias || !out)
    return false;
  fillPseudoRandom(in.as<float>(), size_t(n * maxC * maxH * maxH), 11);
  fillPseudoRandom(weight.as<float>(), size_t(f * maxC * kh * kw), 12);
  fillPseudoRandom(bias.as<float>(), size_t(f), 13);
  auto ptr = [](const RuntimeBuffer &b) {
    return int64_t(intptr_t(b.as<float>()));
  };
  for (int32_t t = 1; t <= threadsMax; ++t) {
    dist_rt_set_num_threads(t);
    // Per probe: one thread's share (the call's time over the imbalance of
    // its tiles, times the threads) per tile, and taps per tile.
    double perTile[3], taps[3];
    for (int i = 0; i < 3; ++i) {
      const Probe &p = probes[i];
      auto plan = dist_rt::conv_plan::forwardPlan(n, p.c, p.h, p.h, f, kh, kw,
                                                  1, 1, p.oh, p.oh, p.h);
      double s = secondsPerCall(
          [&] {
            dist_rt_conv2d_f32(n, p.c, p.h, p.h, f, kh, kw, 1, 1, 1, 1, p.oh,
                               p.oh, ptr(in), p.c * p.h * p.h, p.h * p.h, p.h,
                               ptr(weight), ptr(bias), ptr(out),
                               f * p.oh * p.oh, p.oh * p.oh, p.oh, 0);
            clobberMemory();
          },
          minTimeS);
      perTile[i] = s * t / dist_rt::conv_plan::imbalance(plan.items, t) /
                   double(plan.items);
      taps[i] = plan.tileTaps / double(plan.items);
    }
    ConvRates r{t, 0, 0, 0};
    if (rates.empty()) {
      r.tap = (perTile[1] - perTile[0]) / (taps[1] - taps[0]);
      r.tile = perTile[0] - r.tap * taps[0];
      if (r.tap <= 0 || r.tile < 0) {
        // Noise: all of the larger call's time on its taps.
        r.tap = perTile[1] / taps[1];
        r.tile = 0;
      }
      r.narrowTap = std::max(perTile[2] - r.tile, 0.5 * perTile[2]) / taps[2];
    } else {
      // More threads: one thread's rates scaled by the median of the
      // probes' slowdowns. Fitting the line again at two threads on this
      // machine gave per-tile times from 26 to 308 ns in three runs (its
      // second core comes and goes); the median slowdown is steadier.
      const ConvRates &one = rates.front();
      std::vector<double> slowdown;
      for (int i = 0; i < 3; ++i)
        slowdown.push_back(
            perTile[i] /
            ((i == 2 ? one.narrowTap : one.tap) * taps[i] + one.tile));
      double k = median(slowdown);
      r.tap = one.tap * k;
      r.narrowTap = one.narrowTap * k;
      r.tile = one.tile * k;
    }
    rates.push_back(r);
    progress("direct convolution, %d thread%s: %.2f ns per tap (%.2f on "
             "narrow tiles), %.1f ns per tile",
             t, t == 1 ? "" : "s", r.tap * 1e9, r.narrowTap * 1e9,
             r.tile * 1e9);
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

/// A finite number in JSON syntax.
std::string jsonNumber(double value) {
  if (!std::isfinite(value))
    value = 0;
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

/// The gemm list of one data type; `shapes` (per thread count) joins the
/// entry of the same thread count.
std::string
gemmJson(const std::vector<GemmSeries> &allSeries,
         const std::vector<std::pair<int32_t, std::vector<ShapePoint>>>
             &shapes = {}) {
  std::string json = "[";
  for (size_t i = 0; i < allSeries.size(); ++i) {
    const GemmSeries &series = allSeries[i];
    json += i ? ",\n      " : "\n      ";
    json += "{\"threads\": " + std::to_string(series.threads) +
            ", \"flops_by_size\": [";
    for (size_t j = 0; j < series.flopsBySize.size(); ++j) {
      if (j)
        json += ", ";
      json += "[" + std::to_string(series.flopsBySize[j].first) + ", " +
              jsonNumber(series.flopsBySize[j].second) + "]";
    }
    json += "]";
    for (const auto &[threads, points] : shapes) {
      if (threads != series.threads)
        continue;
      json += ",\n       \"shapes\": [";
      for (size_t j = 0; j < points.size(); ++j) {
        const ShapePoint &p = points[j];
        json += std::string(j ? ", " : "") + "[\"" + kLayouts[p.layout] +
                "\", " + std::to_string(p.m) + ", " + std::to_string(p.n) +
                ", " + std::to_string(p.k) + ", " + jsonNumber(p.flops) + "]";
      }
      json += "]";
    }
    json += "}";
  }
  return json + "\n    ]";
}

/// Writes all of `text` to `fd`. Returns false with errno set on failure.
bool writeAll(int fd, const std::string &text) {
  const char *data = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data += written;
    left -= size_t(written);
  }
  return true;
}

/// The temporary file that becomes OUT. Created before measuring so that an
/// unwritable OUT fails at once; removed unless committed.
class AtomicOutput {
public:
  ~AtomicOutput() {
    if (fd >= 0)
      ::close(fd);
    if (!tempPath.empty())
      ::unlink(tempPath.c_str());
  }

  /// Creates the temporary file next to `path`.
  bool open(const std::string &path) {
    finalPath = path;
    struct stat info;
    if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
      reportError("cannot write '" + path + "': it is a directory");
      return false;
    }
    std::string candidate = path + ".tmp." + std::to_string(long(::getpid()));
    fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                0666);
    if (fd < 0) {
      reportError("cannot write '" + path + "': " + std::strerror(errno));
      return false;
    }
    tempPath = candidate;
    return true;
  }

  /// Writes `text` and renames the temporary file to the final path.
  bool commit(const std::string &text) {
    if (!writeAll(fd, text) || ::close(fd) != 0) {
      int error = errno;
      fd = -1;
      reportError("cannot write '" + finalPath + "': " + std::strerror(error));
      return false;
    }
    fd = -1;
    if (::rename(tempPath.c_str(), finalPath.c_str()) != 0) {
      reportError("cannot write '" + finalPath + "': " + std::strerror(errno));
      return false;
    }
    tempPath.clear();
    return true;
  }

private:
  std::string finalPath;
  std::string tempPath;
  int fd = -1;
};

} // namespace

//===----------------------------------------------------------------------===//
// Main
//===----------------------------------------------------------------------===//

int main(int argc, char **argv) {
  Options options;
  bool showHelp = false;
  if (!parseCommandLine(argc, argv, options, showHelp))
    return 1;
  if (showHelp) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  quietMode = options.quiet;
  int32_t cores = hardwareThreads();
  int32_t threadsMax = options.threadsMax ? options.threadsMax : cores;
  Settings settings = settingsFor(options.quick);
  if (options.bandwidthPasses)
    settings.bandwidthPasses = options.bandwidthPasses;

  AtomicOutput output;
  if (!options.jsonPath.empty() && !output.open(options.jsonPath))
    return 1;

  double kernelOverheadS = measureKernelOverhead();
  progress("kernel overhead: %.1f ns", kernelOverheadS * 1e9);
  double gemmCallFloorS = 0;
  double gemmCallOverheadS = measureGemmCallOverhead(gemmCallFloorS);
  progress("gemm call: %.1f ns alone, %.1f ns of dispatch",
           gemmCallFloorS * 1e9, gemmCallOverheadS * 1e9);
  double stepOverheadS = measureStepOverhead(threadsMax);
  progress("step overhead: %.1f ns", stepOverheadS * 1e9);
  // Forks at powers of two and at threadsMax.
  std::vector<std::pair<int32_t, double>> forkOverhead;
  std::vector<int32_t> forkThreads;
  for (int32_t t = 2; t < threadsMax; t *= 2)
    forkThreads.push_back(t);
  if (threadsMax > 1)
    forkThreads.push_back(threadsMax);
  for (int32_t t : forkThreads) {
    forkOverhead.emplace_back(t, measureForkOverhead(t));
    progress("fork overhead, %d threads: %.2f us", t,
             forkOverhead.back().second * 1e6);
  }

  std::vector<PassFigures> bandwidthPasses;
  std::vector<GemmSeries> gemmF32, gemmF64;
  std::vector<std::pair<int32_t, std::vector<ShapePoint>>> shapesF32;
  std::vector<std::pair<int32_t, std::vector<PassFigures>>> inPlacePasses;
  int passes = std::max(1, settings.bandwidthPasses), pass = 0;
  auto bandwidthPass = [&] {
    ++pass;
    if (passes > 1)
      progress("memory bandwidth, pass %d of %d", pass, passes);
    return measureBandwidth(settings.triadArrayBytes, threadsMax,
                            bandwidthPasses) &&
           measureInPlace(settings.inPlaceFootprints, threadsMax,
                          settings.inPlaceMinTimeS, inPlacePasses);
  };
  // The bandwidth passes come first, between the GEMM size series and the
  // shape grids, and last, so that they span the whole calibration.
  bool measured =
      bandwidthPass() &&
      measureGemmType<float>("f32", dist_rt_gemm_set_f32, settings.gemmSizes,
                             threadsMax, settings.gemmMinTimeS, gemmF32) &&
      measureGemmType<double>("f64", dist_rt_gemm_set_f64, settings.gemmSizes,
                              threadsMax, settings.gemmMinTimeS, gemmF64);
  while (measured && passes - pass > 1)
    measured = bandwidthPass();
  measured = measured &&
             measureGemmShapes<float>(
                 "f32", dist_rt_gemm_set_f32, settings.shapeDims,
                 settings.unalignedShapeDims, threadsMax,
                 settings.shapeMinTimeS, settings.shapePasses, shapesF32) &&
             (passes == 1 || bandwidthPass());
  std::vector<ConvRates> convRates;
  measured = measured &&
             measureDirectConv(threadsMax, settings.convMinTimeS, convRates);
  if (!measured) {
    reportError("out of memory");
    return 1;
  }
  // A spread this wide means the figures depend on when they were taken.
  std::vector<std::pair<int32_t, double>> bandwidth;
  for (const PassFigures &point : bandwidthPasses) {
    auto [slowest, fastest] =
        std::minmax_element(point.values.begin(), point.values.end());
    auto threads = int32_t(point.key);
    if (*fastest > 1.25 * *slowest)
      std::fprintf(stderr,
                   "dist-calibrate: warning: memory bandwidth at %d "
                   "thread%s varied from %.1f to %.1f GB/s between passes "
                   "(the machine is busy); the median pass is kept\n",
                   threads, threads == 1 ? "" : "s", *slowest * 1e-9,
                   *fastest * 1e-9);
    bandwidth.emplace_back(threads, median(point.values));
  }
  std::vector<std::pair<int32_t, std::vector<std::pair<double, double>>>>
      inPlace;
  for (const auto &[threads, points] : inPlacePasses) {
    inPlace.push_back({threads, {}});
    for (const PassFigures &point : points)
      inPlace.back().second.emplace_back(point.key, median(point.values));
  }
  dist_rt_alloc_trim();

  std::string json =
      "{\n  \"version\": 1,\n  \"cores\": " + std::to_string(cores) +
      ",\n  \"gemm\": {\n    \"f32\": " + gemmJson(gemmF32, shapesF32) +
      ",\n    \"f64\": " + gemmJson(gemmF64) +
      "\n  },\n  \"memory_bandwidth\": {";
  for (size_t i = 0; i < bandwidth.size(); ++i)
    json += (i ? ", \"" : "\"") + std::to_string(bandwidth[i].first) +
            "\": " + jsonNumber(bandwidth[i].second);
  // The in-place rates join the loop tables dist-opt fills from its probes
  // (one thread in loop_bandwidth, more in loop_bandwidth_threads).
  auto pointsJson = [](const std::vector<std::pair<double, double>> &points) {
    std::string list = "[";
    for (size_t i = 0; i < points.size(); ++i)
      list += std::string(i ? ", [" : "[") +
              std::to_string(int64_t(points[i].first)) + ", " +
              jsonNumber(points[i].second) + "]";
    return list + "]";
  };
  json += "},\n  \"loop_bandwidth\": {";
  for (const auto &[threads, points] : inPlace)
    if (threads == 1)
      json += "\"in_place\": " + pointsJson(points);
  json += "},\n  \"loop_bandwidth_threads\": {";
  bool first = true;
  for (const auto &[threads, points] : inPlace) {
    if (threads == 1)
      continue;
    json += std::string(first ? "" : ", ") + "\"" + std::to_string(threads) +
            "\": {\"in_place\": " + pointsJson(points) + "}";
    first = false;
  }
  json += "},\n  \"fork_overhead\": {";
  for (size_t i = 0; i < forkOverhead.size(); ++i)
    json += (i ? ", \"" : "\"") + std::to_string(forkOverhead[i].first) +
            "\": " + jsonNumber(forkOverhead[i].second);
  json += "}";
  // Three thread maps (absent without AVX-512).
  const std::pair<const char *, double ConvRates::*> convFields[] = {
      {"direct_conv_tap", &ConvRates::tap},
      {"direct_conv_narrow_tap", &ConvRates::narrowTap},
      {"direct_conv_tile", &ConvRates::tile}};
  for (const auto &[key, field] : convFields) {
    if (convRates.empty())
      break;
    json += ",\n  \"" + std::string(key) + "\": {";
    for (size_t i = 0; i < convRates.size(); ++i)
      json += (i ? ", \"" : "\"") + std::to_string(convRates[i].threads) +
              "\": " + jsonNumber(convRates[i].*field);
    json += "}";
  }
  json += ",\n  \"kernel_overhead\": " + jsonNumber(kernelOverheadS) +
          ",\n  \"gemm_call_overhead\": " + jsonNumber(gemmCallOverheadS) +
          ",\n  \"gemm_call_floor\": " + jsonNumber(gemmCallFloorS) +
          ",\n  \"step_overhead\": " + jsonNumber(stepOverheadS) + "\n}\n";

  if (!options.jsonPath.empty())
    return output.commit(json) ? 0 : 1;
  if (std::fputs(json.c_str(), stdout) == EOF || std::fflush(stdout) != 0) {
    reportError(std::string("cannot write to stdout: ") + std::strerror(errno));
    return 1;
  }
  return 0;
}
