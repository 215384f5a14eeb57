//===- profile.h - Where a model's run spends its time ----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// With DIST_RT_PROFILE set (1: to stderr, any other value but 0: a file of
// that name), every model run and every runtime call it makes (products,
// convolutions) is timed, and the process prints at exit a table of the
// calls by kind and shape: calls, total time, the first call's (loading
// libraries, packing weights), the later calls' mean and median time and
// GFLOP/s at the median, share of the runs' time, and the time the runs
// spent outside them (the generated loops). Off by default: a relaxed atomic
// load per call. Internal to the runtime library; tests switch it on with
// setProfiling.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_LIB_PROFILE_H
#define DIST_RT_LIB_PROFILE_H

#include <chrono>
#include <cstdint>
#include <string>

namespace dist_rt {

/// Whether calls are timed (DIST_RT_PROFILE, or setProfiling).
bool profiling();
/// Switches timing on or off for this process (tests); nothing is printed
/// at exit unless DIST_RT_PROFILE asked for it.
void setProfiling(bool on);
/// The table of what was recorded so far (empty when nothing was).
std::string profileReport();
/// Forgets what was recorded.
void profileReset();

/// Times its scope: a model run (`run` true) or a runtime call, whose
/// shape `describe` sets; calls made inside another timed call are not
/// counted twice.
class ProfileScope {
public:
  explicit ProfileScope(const char *kind, bool run = false);
  ~ProfileScope();
  ProfileScope(const ProfileScope &) = delete;
  ProfileScope &operator=(const ProfileScope &) = delete;

  /// Whether this scope is timed (build its description only then).
  bool active() const { return active_; }
  /// Names the call's shape (printf format) and its floating-point
  /// operations.
  void describe(double flops, const char *format, ...)
      __attribute__((format(printf, 3, 4)));

private:
  const char *kind_;
  bool run_;
  bool active_ = false;
  /// Whether this scope holds a level of the thread's call depth.
  bool counted_ = false;
  double flops_ = 0;
  /// Set only when active (describe): not cleared on every call.
  char shape_[160];
  std::chrono::steady_clock::time_point start_;
};

} // namespace dist_rt

#endif // DIST_RT_LIB_PROFILE_H
