//===- ThreadsTest.cpp - Tests for the thread count and pool ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for dist_rt_set/get_num_threads and dist_rt_parallel_for:
// every index is visited exactly once for many sizes and thread counts, the
// chunks are contiguous and at most as many as threads, nested loops run
// serially on the calling thread, loops started concurrently from several
// threads all complete, short loops back to back each finish before they
// return, and an index error that generated code reports from any thread of
// a loop reaches the run that started it.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/kernels.h"

#include "internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

/// Restores the thread count a test changed.
class ThreadsTest : public ::testing::Test {
protected:
  void SetUp() override { saved = dist_rt_get_num_threads(); }
  void TearDown() override { dist_rt_set_num_threads(saved); }
  int32_t saved = 0;
};

/// Records what a parallel loop did.
struct Recorder {
  explicit Recorder(int64_t n) : visits(static_cast<size_t>(n)) {}

  std::vector<std::atomic<int>> visits;
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::vector<std::thread::id> threadIds;

  static void body(void *ctx, int64_t begin, int64_t end) {
    auto *self = static_cast<Recorder *>(ctx);
    for (int64_t i = begin; i < end; ++i)
      self->visits[static_cast<size_t>(i)].fetch_add(1);
    std::lock_guard<std::mutex> lock(self->mutex);
    self->chunks.emplace_back(begin, end);
    self->threadIds.push_back(std::this_thread::get_id());
  }
};

/// Checks that `recorder` saw every index once, in at most `maxChunks`
/// non-empty contiguous chunks that tile [0, n).
void expectCovered(Recorder &recorder, int64_t n, int64_t maxChunks) {
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(recorder.visits[static_cast<size_t>(i)].load(), 1)
        << "index " << i;
  std::vector<std::pair<int64_t, int64_t>> chunks = recorder.chunks;
  std::sort(chunks.begin(), chunks.end());
  EXPECT_LE(static_cast<int64_t>(chunks.size()), maxChunks);
  int64_t next = 0;
  for (const auto &chunk : chunks) {
    EXPECT_EQ(chunk.first, next);
    EXPECT_LT(chunk.first, chunk.second);
    next = chunk.second;
  }
  EXPECT_EQ(next, n);
}

TEST_F(ThreadsTest, SetAndGet) {
  dist_rt_set_num_threads(3);
  EXPECT_EQ(dist_rt_get_num_threads(), 3);
  dist_rt_set_num_threads(1);
  EXPECT_EQ(dist_rt_get_num_threads(), 1);
  unsigned hardware = std::thread::hardware_concurrency();
  dist_rt_set_num_threads(0);
  EXPECT_EQ(dist_rt_get_num_threads(),
            hardware ? static_cast<int32_t>(hardware) : 1);
  dist_rt_set_num_threads(-5);
  EXPECT_GE(dist_rt_get_num_threads(), 1);
}

TEST_F(ThreadsTest, CoversEveryIndexOnce) {
  for (int32_t threads : {1, 2, 3, 4, 7, 16}) {
    dist_rt_set_num_threads(threads);
    for (int64_t n : {1, 2, 3, 5, 16, 100, 1000, 10007}) {
      SCOPED_TRACE(testing::Message() << threads << " threads, n = " << n);
      Recorder recorder(n);
      dist_rt_parallel_for(n, &Recorder::body, &recorder);
      expectCovered(recorder, n, std::min<int64_t>(n, threads));
      if (threads > 1 && n >= threads) {
        // The pool is idle here, so the loop really was split evenly.
        EXPECT_EQ(static_cast<int64_t>(recorder.chunks.size()),
                  std::min<int64_t>(n, threads));
        for (const auto &chunk : recorder.chunks) {
          int64_t size = chunk.second - chunk.first;
          EXPECT_GE(size, n / threads);
          EXPECT_LE(size, n / threads + 1);
        }
      }
    }
  }
}

TEST_F(ThreadsTest, EmptyAndNegativeRangesDoNothing) {
  dist_rt_set_num_threads(4);
  Recorder recorder(1);
  dist_rt_parallel_for(0, &Recorder::body, &recorder);
  dist_rt_parallel_for(-3, &Recorder::body, &recorder);
  EXPECT_TRUE(recorder.chunks.empty());
}

TEST_F(ThreadsTest, CallerTakesPartAndWorkersAreReused) {
  std::thread::id caller = std::this_thread::get_id();
  std::vector<std::thread::id> everSeen;
  for (int32_t threads : {4, 2, 4}) {
    dist_rt_set_num_threads(threads);
    for (int round = 0; round < 50; ++round) {
      Recorder recorder(4000);
      dist_rt_parallel_for(4000, &Recorder::body, &recorder);
      expectCovered(recorder, 4000, threads);
      // The caller always runs a chunk; at most threads - 1 workers join.
      std::vector<std::thread::id> ids = recorder.threadIds;
      EXPECT_NE(std::find(ids.begin(), ids.end(), caller), ids.end());
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      EXPECT_LE(static_cast<int64_t>(ids.size()), threads);
      for (std::thread::id id : ids)
        if (std::find(everSeen.begin(), everSeen.end(), id) == everSeen.end())
          everSeen.push_back(id);
    }
  }
  // Workers are persistent: 150 loops did not start 150 sets of threads.
  // Earlier tests may have grown the pool to 15 workers, or to one per
  // hardware thread.
  size_t poolBound = std::max<size_t>(16, std::thread::hardware_concurrency());
  EXPECT_LE(everSeen.size(), poolBound);
}

/// Runs an inner loop from inside every chunk of an outer one.
struct NestedRecorder {
  std::atomic<int> innerChunks{0};
  std::atomic<int> innerOnOtherThread{0};
  std::atomic<int64_t> innerIndices{0};

  static void inner(void *ctx, int64_t begin, int64_t end) {
    auto *pair =
        static_cast<std::pair<NestedRecorder *, std::thread::id> *>(ctx);
    pair->first->innerChunks.fetch_add(1);
    pair->first->innerIndices.fetch_add(end - begin);
    if (std::this_thread::get_id() != pair->second)
      pair->first->innerOnOtherThread.fetch_add(1);
  }

  static void outer(void *ctx, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      std::pair<NestedRecorder *, std::thread::id> pair(
          static_cast<NestedRecorder *>(ctx), std::this_thread::get_id());
      dist_rt_parallel_for(100, &NestedRecorder::inner, &pair);
    }
  }
};

TEST_F(ThreadsTest, NestedLoopsRunSeriallyOnTheCallingThread) {
  dist_rt_set_num_threads(4);
  NestedRecorder recorder;
  dist_rt_parallel_for(8, &NestedRecorder::outer, &recorder);
  // One inner chunk [0, 100) per outer index, each on its own thread.
  EXPECT_EQ(recorder.innerChunks.load(), 8);
  EXPECT_EQ(recorder.innerIndices.load(), 800);
  EXPECT_EQ(recorder.innerOnOtherThread.load(), 0);
}

TEST_F(ThreadsTest, ConcurrentCallersAllComplete) {
  dist_rt_set_num_threads(3);
  constexpr int kCallers = 4;
  constexpr int kRounds = 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&failures] {
      for (int round = 0; round < kRounds; ++round) {
        int64_t n = 50 + round;
        auto recorder = std::make_unique<Recorder>(n);
        dist_rt_parallel_for(n, &Recorder::body, recorder.get());
        for (int64_t i = 0; i < n; ++i)
          if (recorder->visits[static_cast<size_t>(i)].load() != 1)
            ++failures;
        if (recorder->chunks.size() > 3)
          ++failures;
      }
    });
  }
  for (std::thread &caller : callers)
    caller.join();
  EXPECT_EQ(failures.load(), 0);
}

/// Writes each index's square into a caller-owned array.
void squares(void *ctx, int64_t begin, int64_t end) {
  auto *out = static_cast<int64_t *>(ctx);
  for (int64_t i = begin; i < end; ++i)
    out[i] = i * i;
}

TEST_F(ThreadsTest, BackToBackShortLoopsFinishBeforeReturning) {
  // Many tiny loops in a row, each on a fresh stack array: a loop must not
  // return while a worker is still writing, whether the workers were
  // spinning (loops back to back) or asleep (after a pause longer than
  // their spin). More threads than cores makes late workers likely.
  for (int32_t threads : {2, 5}) {
    dist_rt_set_num_threads(threads);
    int failures = 0;
    for (int round = 0; round < 4000; ++round) {
      if (round % 500 == 499)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      int64_t n = 1 + round % 13;
      int64_t out[13];
      std::fill(out, out + 13, int64_t{-1});
      dist_rt_parallel_for(n, &squares, out);
      for (int64_t i = 0; i < 13; ++i)
        if (out[i] != (i < n ? i * i : -1))
          ++failures;
    }
    EXPECT_EQ(failures, 0) << threads << " threads";
  }
}

/// Reports index `i` as out of range for index 3 (any thread).
void reportThird(void *ctx, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    if (i == 3)
      dist_rt_index_error(i + 100, 7, reinterpret_cast<intptr_t>(ctx));
}

TEST_F(ThreadsTest, IndexErrorsReachTheRunFromEveryThread) {
  static const char kNode[] = "/emb/Gather";
  for (int32_t threads : {1, 4}) {
    dist_rt_set_num_threads(threads);
    dist_rt::RunErrors errors;
    {
      dist_rt::RunErrorScope scope(errors);
      // Index 3 is in the last of 4 chunks: a worker's, when there are
      // workers.
      dist_rt_parallel_for(
          4, &reportThird,
          const_cast<char *>(static_cast<const char *>(kNode)));
      // Only the first error is kept.
      dist_rt_index_error(-9, 2, reinterpret_cast<intptr_t>(kNode));
    }
    EXPECT_TRUE(errors.failed.load()) << threads << " threads";
    EXPECT_EQ(errors.message,
              "node '/emb/Gather': index 103 is out of range for an axis of 7 "
              "(valid: -7 to 6)");
    // After the scope, a loop's errors no longer go to it (they are
    // printed to stderr).
    static const char kOther[] = "/other";
    dist_rt_parallel_for(4, &reportThird,
                         const_cast<char *>(static_cast<const char *>(kOther)));
    EXPECT_NE(errors.message.find("/emb/Gather"), std::string::npos);
  }
}

} // namespace
