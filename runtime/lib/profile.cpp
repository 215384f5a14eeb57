//===- profile.cpp - Where a model's run spends its time ------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The table behind DIST_RT_PROFILE (profile.h): one entry per kind and
// shape of runtime call, plus the model runs' total, kept under a mutex
// (calls are timed on the thread that makes them; kernels' own threads
// are inside their caller's time).
//
//===----------------------------------------------------------------------===//

#include "profile.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace {

/// The later calls' times an entry keeps for its median: all of them up to
/// this many, then a uniform sample of them (reservoir sampling), so that a
/// long training run's table stays small.
constexpr size_t kSamples = 4096;

struct Entry {
  int64_t calls = 0;
  double seconds = 0;
  double flops = 0;
  /// The first call's time (loading libraries, packing weights): the mean
  /// and rate are of the later calls.
  double firstSeconds = 0;
  /// The later calls' times (kSamples at most). Their median is the typical
  /// call's: one shape's entry holds several layers, each of whose first
  /// call (its filters packed) lands among the later calls of the entry
  /// and pulls the mean up (ResNet-50's 2048 -> 512 layers: a mean of 6.7
  /// ms a call against a median of 4.7, oneDNN's own time 4.7).
  std::vector<float> later;
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  void addLater(double s) {
    int64_t seen = calls - 1; // later calls so far, this one included
    if (later.size() < kSamples) {
      later.push_back(float(s));
      return;
    }
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t slot = (seed >> 11) % uint64_t(seen);
    if (slot < kSamples)
      later[size_t(slot)] = float(s);
  }
  /// The median of the later calls' times (the first call's without any).
  double median() const {
    if (later.empty())
      return firstSeconds;
    std::vector<float> v = later;
    auto mid = v.begin() + std::ptrdiff_t(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    double m = *mid;
    if (v.size() % 2 == 0)
      m = (m + *std::max_element(v.begin(), mid)) / 2;
    return m;
  }
};

struct Table {
  std::mutex mutex;
  std::map<std::string, Entry> calls;
  int64_t runs = 0;
  double runSeconds = 0;
  double firstRunSeconds = 0;
};

Table &table() {
  static Table *t = new Table; // read by the exit handler: never destroyed
  return *t;
}

/// -1 until DIST_RT_PROFILE is read, then 0 or 1.
std::atomic<int> profilingOn{-1};
/// Timed calls open on this thread (only the outermost one is recorded).
thread_local int callDepth = 0;

void printAtExit() {
  std::string report = dist_rt::profileReport();
  if (report.empty())
    return;
  const char *target = std::getenv("DIST_RT_PROFILE");
  FILE *out = stderr;
  if (target && std::strcmp(target, "1") != 0) {
    out = std::fopen(target, "w");
    if (!out) {
      std::fprintf(stderr,
                   "warning: dist_rt: DIST_RT_PROFILE=%s: cannot write the "
                   "profile there (%s); it follows on stderr\n",
                   target, std::strerror(errno));
      out = stderr;
    }
  }
  std::fputs(report.c_str(), out);
  if (out != stderr)
    std::fclose(out);
}

int readSetting() {
  const char *e = std::getenv("DIST_RT_PROFILE");
  int on = e && *e && std::strcmp(e, "0") != 0 ? 1 : 0;
  int expected = -1;
  if (profilingOn.compare_exchange_strong(expected, on) && on)
    std::atexit(printAtExit);
  return profilingOn.load();
}

} // namespace

bool dist_rt::profiling() {
  int on = profilingOn.load(std::memory_order_relaxed);
  if (on < 0)
    on = readSetting();
  return on == 1;
}

void dist_rt::setProfiling(bool on) {
  profilingOn.store(on ? 1 : 0, std::memory_order_relaxed);
}

void dist_rt::profileReset() {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.calls.clear();
  t.runs = 0;
  t.runSeconds = 0;
  t.firstRunSeconds = 0;
}

std::string dist_rt::profileReport() {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (t.calls.empty() && t.runs == 0)
    return "";
  std::vector<std::pair<std::string, Entry>> rows(t.calls.begin(),
                                                  t.calls.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.seconds > b.second.seconds;
  });
  double inCalls = 0;
  for (const auto &row : rows)
    inCalls += row.second.seconds;
  // Shares of the runs' time when there were runs, else of the calls'.
  double whole = t.runs > 0 ? t.runSeconds : inCalls;
  std::string text;
  char line[512];
  if (t.runs > 0)
    std::snprintf(line, sizeof line,
                  "dist_rt profile: %lld model runs, %.3f ms (the first "
                  "%.3f ms, the others %.3f ms each), %.1f%% of it in "
                  "runtime calls\n",
                  static_cast<long long>(t.runs), t.runSeconds * 1e3,
                  t.firstRunSeconds * 1e3,
                  t.runs > 1 ? (t.runSeconds - t.firstRunSeconds) * 1e3 /
                                   static_cast<double>(t.runs - 1)
                             : t.runSeconds * 1e3,
                  whole > 0 ? 100.0 * inCalls / whole : 0.0);
  else
    std::snprintf(line, sizeof line,
                  "dist_rt profile: runtime calls outside model runs, %.3f "
                  "ms\n",
                  inCalls * 1e3);
  text += line;
  text += "  share   total ms     calls  first us   us/call  median us  "
          "GFLOP/s  call\n";
  auto share = [&](double s) { return whole > 0 ? 100.0 * s / whole : 0.0; };
  for (const auto &[name, e] : rows) {
    // The later calls' mean and median (the first call's alone if no
    // other), the rate at the median.
    double later = e.calls > 1 ? e.seconds - e.firstSeconds : e.seconds;
    double laterCalls = static_cast<double>(e.calls > 1 ? e.calls - 1 : 1);
    double median = e.median();
    double callFlops = e.flops / static_cast<double>(e.calls);
    char rate[32] = "-";
    if (callFlops > 0 && median > 0)
      std::snprintf(rate, sizeof rate, "%.1f", callFlops / median * 1e-9);
    std::snprintf(line, sizeof line,
                  "%6.1f%% %10.3f %9lld %9.2f %9.2f %10.2f %8s  %s\n",
                  share(e.seconds), e.seconds * 1e3,
                  static_cast<long long>(e.calls), e.firstSeconds * 1e6,
                  later * 1e6 / laterCalls, median * 1e6, rate, name.c_str());
    text += line;
  }
  if (t.runs > 0) {
    double outside = std::max(0.0, t.runSeconds - inCalls);
    std::snprintf(line, sizeof line,
                  "%6.1f%% %10.3f %9lld %9s %9.2f %10s %8s  outside runtime "
                  "calls (generated loops, copies)\n",
                  share(outside), outside * 1e3, static_cast<long long>(t.runs),
                  "-", outside * 1e6 / t.runs, "-", "-");
    text += line;
  }
  return text;
}

dist_rt::ProfileScope::ProfileScope(const char *kind, bool run)
    : kind_(kind), run_(run) {
  if (!profiling())
    return;
  // A call inside a timed call is part of that one's time.
  if (!run_) {
    counted_ = true;
    if (callDepth++ > 0)
      return;
  }
  active_ = true;
  shape_[0] = '\0';
  start_ = std::chrono::steady_clock::now();
}

void dist_rt::ProfileScope::describe(double flops, const char *format, ...) {
  flops_ = flops;
  va_list args;
  va_start(args, format);
  std::vsnprintf(shape_, sizeof shape_, format, args);
  va_end(args);
}

dist_rt::ProfileScope::~ProfileScope() {
  if (counted_)
    --callDepth;
  if (!active_)
    return;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (run_) {
    if (t.runs++ == 0)
      t.firstRunSeconds = seconds;
    t.runSeconds += seconds;
    return;
  }
  Entry &e = t.calls[std::string(kind_) + (shape_[0] ? " " : "") + shape_];
  if (e.calls++ == 0)
    e.firstSeconds = seconds;
  else
    e.addLater(seconds);
  e.seconds += seconds;
  e.flops += flops_;
}
