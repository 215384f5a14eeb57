//===- bench_timing.h - Helpers of the C++ benchmarks -----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What dist-gemm-bench (gemm_table.cpp) and dist-conv-bench
// (conv_table.cpp) share: timing a call, a pointer as the runtime's i64
// arguments take it, and comma-separated option lists.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_BENCH_TIMING_H
#define DIST_BENCH_TIMING_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dist_bench {

/// A pointer as the runtime's entry points take it (an i64).
inline int64_t asInt(const void *p) {
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(p));
}

/// Seconds per call of `fn`: calls repeated for at least `minTime`
/// seconds after one warm-up call.
inline double secondsPerCall(const std::function<void()> &fn, double minTime) {
  fn();
  using Clock = std::chrono::steady_clock;
  int64_t calls = 0;
  auto start = Clock::now();
  double elapsed = 0;
  do {
    fn();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < minTime);
  return elapsed / double(calls);
}

/// The non-empty items of a comma-separated list.
inline std::vector<std::string> splitList(const char *arg) {
  std::vector<std::string> out;
  std::string cur;
  for (const char *p = arg;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!cur.empty())
        out.push_back(cur);
      cur.clear();
      if (!*p)
        break;
    } else {
      cur += *p;
    }
  }
  return out;
}

} // namespace dist_bench

#endif // DIST_BENCH_TIMING_H
