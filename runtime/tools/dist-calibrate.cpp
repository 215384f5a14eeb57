//===- dist-calibrate.cpp - Measure this machine for the cost model -------===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-calibrate [--threads-max N] [--quick] [--quiet] [--json OUT]
// dist-calibrate --gpu N [--quick] [--quiet] [--json OUT]
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
// With --gpu N it measures GPU N instead (dist_rt_gpu_measure: cuBLASLt
// products by size at each precision, device copy bandwidth, the launch of
// an empty kernel and a product's call) into the same schema, the threads
// being 1: gemm.f32 and gemm.bf16 (tf32 beside them), memory_bandwidth,
// kernel_overhead (a launch and its wait), gemm_call_floor; dist-opt
// calibrate puts it on the cluster's GPU devices.
//
// dist-opt runs this program; it never links it. The program uses only the
// runtime's public C API.
//
// The measurements live in calibrate_gemm.cpp, calibrate_memory.cpp,
// calibrate_overhead.cpp and calibrate_conv.cpp, sharing calibrate.h; this
// file parses the command line, runs them in order and writes the JSON.
//
//===----------------------------------------------------------------------===//

#include "calibrate.h"

#include "dist_rt/kernels.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace calibrate;

namespace {

//===----------------------------------------------------------------------===//
// Options and settings
//===----------------------------------------------------------------------===//

constexpr const char *kUsage =
    "usage: dist-calibrate [--threads-max N] [--quick] [--bandwidth-passes N] "
    "[--quiet] [--json OUT]\n"
    "       dist-calibrate --gpu N [--quick] [--quiet] [--json OUT]\n"
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
    "  --gpu N          measure GPU N (CUDA) instead: products per size and\n"
    "                   precision, copy bandwidth, launch overhead\n"
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
  int32_t gpu = -1;     ///< --gpu N; -1: the CPU
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
                      name == "--bandwidth-passes" || name == "--gpu";
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
    } else if (name == "--gpu") {
      // A GPU number from 0: the count parser's 1.. shifted by one.
      int32_t plusOne = 0;
      bool digits = !value.empty() && value.size() <= 4 &&
                    value.find_first_not_of("0123456789") == std::string::npos;
      if (!digits ||
          !parseCount(std::to_string(std::stol(value) + 1), 1025, plusOne)) {
        reportError("invalid --gpu '" + value +
                    "' (expected a GPU number from 0 to 1024)");
        return false;
      }
      options.gpu = plusOne - 1;
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

/// Writes `json` to --json's file (atomically) or stdout; the exit code.
int writeJson(const Options &options, AtomicOutput &output,
              const std::string &json) {
  if (!options.jsonPath.empty())
    return output.commit(json) ? 0 : 1;
  if (std::fputs(json.c_str(), stdout) == EOF || std::fflush(stdout) != 0) {
    reportError(std::string("cannot write to stdout: ") + std::strerror(errno));
    return 1;
  }
  return 0;
}

/// --gpu N: measures the GPU (dist_rt_gpu_measure) and writes its figures
/// in the calibration schema, one thread.
int measureGpu(const Options &options) {
  AtomicOutput output;
  if (!options.jsonPath.empty() && !output.open(options.jsonPath))
    return 1;
  dist_rt_gpu_figures_t f;
  if (dist_rt_status_t status =
          dist_rt_gpu_measure(options.gpu, options.quick ? 1 : 0, &f)) {
    reportError(dist_rt_status_message(status));
    dist_rt_status_free(status);
    return 1;
  }
  static const char *const kPrecisions[] = {"f32", "tf32", "bf16"};
  std::string gemm;
  for (int p = 0; p < 3; ++p) {
    std::string points;
    for (int32_t i = 0; i < f.num_sizes; ++i) {
      points += std::string(i ? ", [" : "[") + std::to_string(f.sizes[i]) +
                ", " + jsonNumber(f.product_flops[p][i]) + "]";
      progress("%s product %" PRId64 "^3: %.1f TFLOP/s", kPrecisions[p],
               f.sizes[i], f.product_flops[p][i] * 1e-12);
    }
    gemm += std::string(p ? ",\n    \"" : "\"") + kPrecisions[p] +
            "\": [{\"threads\": 1, \"flops_by_size\": [" + points + "]}]";
  }
  progress("copy bandwidth: %.0f GB/s; launch and wait: %.1f us; product "
           "call: %.1f us",
           f.copy_bandwidth * 1e-9, f.launch_overhead_s * 1e6,
           f.product_call_s * 1e6);
  std::string name;
  for (const char *c = f.name; *c; ++c)
    if (*c != '"' && *c != '\\' && static_cast<unsigned char>(*c) >= 0x20)
      name += *c;
  std::string json =
      "{\n  \"version\": 1,\n  \"device\": \"gpu\",\n  "
      "\"name\": \"" +
      name + "\",\n  \"gemm\": {\n    " + gemm +
      "\n  },\n  \"memory_bandwidth\": {\"1\": " +
      jsonNumber(f.copy_bandwidth) +
      "},\n  \"kernel_overhead\": " + jsonNumber(f.launch_overhead_s) +
      ",\n  \"gemm_call_floor\": " + jsonNumber(f.product_call_s) + "\n}\n";
  return writeJson(options, output, json);
}

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
  if (options.gpu >= 0)
    return measureGpu(options);
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

  return writeJson(options, output, json);
}
