//===- ProfileTest.cpp - Tests for the runtime's profile ---------*- C++
//-*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for DIST_RT_PROFILE's table (profile.h): runtime calls
// are counted by kind and shape, a call inside a timed call is not counted
// again, and nothing is recorded while profiling is off.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/kernels.h"

#include "RuntimeTestUtils.h"
#include "profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace dist_rt_test;

namespace {

/// Switches profiling on, with an empty table, for one test.
class ProfileTest : public ::testing::Test {
protected:
  void SetUp() override {
    dist_rt::setProfiling(true);
    dist_rt::profileReset();
  }
  void TearDown() override {
    dist_rt::setProfiling(false);
    dist_rt::profileReset();
  }
};

/// The report's line that ends with `call`, or "".
std::string lineOf(const std::string &report, const std::string &call) {
  size_t at = report.find(call + "\n");
  if (at == std::string::npos)
    return "";
  size_t begin = report.rfind('\n', at);
  return report.substr(begin == std::string::npos ? 0 : begin + 1,
                       at + call.size() - (begin + 1));
}

TEST_F(ProfileTest, CountsCallsByShape) {
  std::vector<float> a(2 * 3, 1.0f), b(3 * 4, 1.0f), c(2 * 4);
  for (int i = 0; i < 3; ++i)
    dist_rt_gemm_set_f32(1, 2, 4, 3, asInt(a.data()), 0, 3, 1, asInt(b.data()),
                         4, 1, asInt(c.data()), 0, 4, 1, 0);
  dist_rt_gemm_f32(1, 2, 4, 3, asInt(a.data()), 0, 3, 1, asInt(b.data()), 4, 1,
                   asInt(c.data()), 0, 4, 1, 0);
  EXPECT_EQ(c[0], 6.0f);
  std::string report = dist_rt::profileReport();
  // No model ran: shares are of the calls' time.
  EXPECT_EQ(
      report.rfind("dist_rt profile: runtime calls outside model runs", 0), 0u)
      << report;
  std::string set = lineOf(report, "gemm (overwrite) 1 x [2 x 3] * [3 x 4]");
  ASSERT_FALSE(set.empty()) << report;
  // share, total ms, calls, the first call's us, the later calls' mean.
  char share[16];
  double totalMs = 0, firstUs = -1, meanUs = -1;
  long long calls = 0;
  ASSERT_EQ(std::sscanf(set.c_str(), "%15s %lf %lld %lf %lf", share, &totalMs,
                        &calls, &firstUs, &meanUs),
            5)
      << set;
  EXPECT_EQ(calls, 3);
  EXPECT_GE(firstUs, 0.0);
  EXPECT_GE(meanUs, 0.0);
  // The total is the first call and two of the mean (printed rounded).
  EXPECT_NEAR(totalMs * 1e3, firstUs + 2 * meanUs, 1.0) << set;
  EXPECT_FALSE(lineOf(report, "gemm 1 x [2 x 3] * [3 x 4]").empty()) << report;
  EXPECT_EQ(report.find("outside runtime calls"), std::string::npos);
}

// The median of the later calls stands for the typical call where a few
// are slow (another layer's first call, its filters packed): here 8 quick
// calls (a 200 us spin each: long enough that the printed median, two
// decimals of a microsecond, gives the rate to well within 5%) and 2 that
// each take 30 ms.
TEST_F(ProfileTest, MedianLeavesOutTheSlowCalls) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < 11; ++i) {
    dist_rt::ProfileScope call("call");
    call.describe(1e6, "shape %d", 7);
    if (i == 0 || i == 3 || i == 8) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    } else {
      Clock::time_point until = Clock::now() + std::chrono::microseconds(200);
      while (Clock::now() < until) {
      }
    }
  }
  std::string report = dist_rt::profileReport();
  std::string line = lineOf(report, "call shape 7");
  ASSERT_FALSE(line.empty()) << report;
  char share[16];
  double totalMs = 0, firstUs = -1, meanUs = -1, medianUs = -1, gflops = -1;
  long long calls = 0;
  ASSERT_EQ(std::sscanf(line.c_str(), "%15s %lf %lld %lf %lf %lf %lf", share,
                        &totalMs, &calls, &firstUs, &meanUs, &medianUs,
                        &gflops),
            7)
      << line;
  EXPECT_EQ(calls, 11);
  EXPECT_GE(firstUs, 30000.0);
  // The mean of the 10 later calls holds the two slow ones: 6 ms or more.
  EXPECT_GE(meanUs, 6000.0) << line;
  EXPECT_GE(medianUs, 200.0) << line;
  EXPECT_LT(medianUs, 5000.0) << line;
  // The rate is the call's flops at the median time.
  EXPECT_NEAR(gflops, 1e6 / (medianUs * 1e-6) * 1e-9, 0.05 * gflops + 0.1)
      << line;
}

TEST_F(ProfileTest, NestedCallsCountOnce) {
  {
    dist_rt::ProfileScope outer("outer");
    ASSERT_TRUE(outer.active());
    outer.describe(1e6, "shape %d", 1);
    dist_rt::ProfileScope inner("inner");
    EXPECT_FALSE(inner.active());
  }
  {
    dist_rt::ProfileScope run("model run", /*run=*/true);
    dist_rt::ProfileScope call("call");
    EXPECT_TRUE(call.active());
  }
  std::string report = dist_rt::profileReport();
  EXPECT_FALSE(lineOf(report, "outer shape 1").empty()) << report;
  EXPECT_FALSE(lineOf(report, "call").empty()) << report;
  EXPECT_EQ(report.find("inner"), std::string::npos) << report;
  EXPECT_EQ(report.rfind("dist_rt profile: 1 model runs", 0), 0u) << report;
  EXPECT_NE(report.find("outside runtime calls"), std::string::npos);
}

TEST_F(ProfileTest, NothingRecordedWhenOff) {
  dist_rt::setProfiling(false);
  std::vector<float> a(4, 1.0f), b(4, 1.0f), c(4);
  dist_rt_gemm_set_f32(1, 2, 2, 2, asInt(a.data()), 0, 2, 1, asInt(b.data()), 2,
                       1, asInt(c.data()), 0, 2, 1, 0);
  dist_rt::ProfileScope scope("scope");
  EXPECT_FALSE(scope.active());
  EXPECT_EQ(dist_rt::profileReport(), "");
}

} // namespace
