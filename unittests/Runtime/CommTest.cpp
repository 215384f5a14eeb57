//===- CommTest.cpp - Tests for communicators and collectives ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for dist_rt/comm.h with the SELF backend, in one process
// and without MPI: option defaults, the world's lifetime, every collective's
// result (in place too) on each supported dtype, messages a rank sends to
// itself, splitting a 1-rank world into a {1,1} mesh, and the argument
// checks with their messages. The MPI backend is tested under mpirun by
// test/Runtime/collectives.test.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/comm.h"

#include "RuntimeTestUtils.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

using dist_rt_test::contains;
using dist_rt_test::StatusPtr;

/// Gives each test a reference to a SELF world.
class CommTest : public ::testing::Test {
protected:
  void SetUp() override {
    dist_rt_world_options_t options;
    dist_rt_world_options_initialize(&options);
    options.backend = DIST_RT_COMM_SELF;
    StatusPtr status(dist_rt_world_init(nullptr, nullptr, &options, &world));
    ASSERT_EQ(status, nullptr) << dist_rt_status_message(status.get());
    ASSERT_NE(world, nullptr);
  }
  void TearDown() override { dist_rt_comm_release(world); }

  /// Expects `status` to fail with `code`; returns its message.
  static std::string
  errorOf(dist_rt_status_t rawStatus,
          dist_rt_status_code_t code = DIST_RT_ERROR_INVALID_ARGUMENT) {
    StatusPtr status(rawStatus);
    EXPECT_NE(status, nullptr);
    if (!status)
      return {};
    EXPECT_EQ(dist_rt_status_code(status.get()), code)
        << dist_rt_status_message(status.get());
    std::string message = dist_rt_status_message(status.get());
    EXPECT_EQ(message.find('\n'), std::string::npos);
    return message;
  }

  dist_rt_comm_t world = nullptr;
};

/// Expects success.
#define EXPECT_OK(call)                                                        \
  do {                                                                         \
    StatusPtr status_(call);                                                   \
    EXPECT_EQ(status_, nullptr) << dist_rt_status_message(status_.get());      \
  } while (false)

//===----------------------------------------------------------------------===//
// Options and the world
//===----------------------------------------------------------------------===//

TEST(CommOptionsTest, Defaults) {
  dist_rt_world_options_t options;
  std::memset(&options, 0x5a, sizeof(options));
  dist_rt_world_options_initialize(&options);
  EXPECT_EQ(options.timeout_s, 300.0);
  EXPECT_EQ(options.backend, DIST_RT_COMM_AUTO);
  dist_rt_world_options_initialize(nullptr);
}

TEST(CommOptionsTest, StatusCodeIsLast) {
  // DIST_RT_ERROR_COMM was appended; the earlier codes keep their values.
  EXPECT_EQ(static_cast<int>(DIST_RT_ERROR_INTERNAL), 6);
  EXPECT_EQ(static_cast<int>(DIST_RT_ERROR_COMM), 7);
}

TEST_F(CommTest, WorldIsSharedAndSelf) {
  EXPECT_EQ(dist_rt_comm_rank(world), 0);
  EXPECT_EQ(dist_rt_comm_size(world), 1);
  dist_rt_comm_t again = nullptr;
  EXPECT_OK(dist_rt_world_init(nullptr, nullptr, nullptr, &again));
  EXPECT_EQ(again, world);
  dist_rt_comm_release(again);
  dist_rt_comm_retain(world);
  dist_rt_comm_release(world);
  EXPECT_EQ(dist_rt_comm_size(world), 1);
}

TEST_F(CommTest, FinalizeIsIdempotentAndTheWorldCanBeRecreated) {
  // The test's own reference keeps the old world alive after finalize.
  EXPECT_OK(dist_rt_world_finalize());
  EXPECT_OK(dist_rt_world_finalize());
  EXPECT_EQ(dist_rt_comm_size(world), 1);
  dist_rt_world_options_t options;
  dist_rt_world_options_initialize(&options);
  options.backend = DIST_RT_COMM_SELF;
  dist_rt_comm_t fresh = nullptr;
  EXPECT_OK(dist_rt_world_init(nullptr, nullptr, &options, &fresh));
  ASSERT_NE(fresh, nullptr);
  EXPECT_NE(fresh, world);
  dist_rt_comm_release(fresh);
}

TEST(CommWorldTest, BadOptions) {
  dist_rt_world_options_t options;
  dist_rt_world_options_initialize(&options);
  dist_rt_comm_t world = reinterpret_cast<dist_rt_comm_t>(0x1);

  options.timeout_s = -1;
  StatusPtr negative(dist_rt_world_init(nullptr, nullptr, &options, &world));
  EXPECT_EQ(world, nullptr);
  ASSERT_NE(negative, nullptr);
  EXPECT_EQ(dist_rt_status_code(negative.get()),
            DIST_RT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(dist_rt_status_message(negative.get()), "timeout_s"));

  options.timeout_s = std::nan("");
  StatusPtr nan(dist_rt_world_init(nullptr, nullptr, &options, &world));
  ASSERT_NE(nan, nullptr);
  EXPECT_TRUE(contains(dist_rt_status_message(nan.get()), "timeout_s"));

  dist_rt_world_options_initialize(&options);
  options.backend = 42;
  StatusPtr backend(dist_rt_world_init(nullptr, nullptr, &options, &world));
  ASSERT_NE(backend, nullptr);
  EXPECT_TRUE(
      contains(dist_rt_status_message(backend.get()), "unknown backend 42"));

  StatusPtr noOut(dist_rt_world_init(nullptr, nullptr, nullptr, nullptr));
  ASSERT_NE(noOut, nullptr);
  EXPECT_TRUE(contains(dist_rt_status_message(noOut.get()), "out_world"));
}

TEST(CommWorldTest, NullCommunicator) {
  EXPECT_EQ(dist_rt_comm_rank(nullptr), -1);
  EXPECT_EQ(dist_rt_comm_size(nullptr), 0);
  dist_rt_comm_retain(nullptr);
  dist_rt_comm_release(nullptr);
}

TEST(CommWorldDeathTest, AbortExitsWithTheCode) {
  // Without MPI, abort is _Exit(code). Threadsafe style: the child runs
  // only this test, not in a fork of a process that may have threads.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(dist_rt_world_abort(7), ::testing::ExitedWithCode(7), "");
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr uint32_t code = DIST_RT_DTYPE_FLOAT;
};
template <>
struct DTypeOf<double> {
  static constexpr uint32_t code = DIST_RT_DTYPE_DOUBLE;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr uint32_t code = DIST_RT_DTYPE_INT32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr uint32_t code = DIST_RT_DTYPE_INT64;
};

/// Runs every collective on the 1-rank `comm` with element type T.
template <typename T>
void checkAllCollectives(dist_rt_comm_t comm) {
  const uint32_t dtype = DTypeOf<T>::code;
  const std::vector<T> input = {T(3), T(-1), T(7), T(0), T(42)};
  const int64_t count = static_cast<int64_t>(input.size());

  for (dist_rt_reduce_op_t op :
       {DIST_RT_REDUCE_SUM, DIST_RT_REDUCE_MAX, DIST_RT_REDUCE_MIN,
        DIST_RT_REDUCE_PROD, DIST_RT_REDUCE_AVG}) {
    std::vector<T> recv(input.size(), T(-99));
    EXPECT_OK(
        dist_rt_all_reduce(comm, input.data(), recv.data(), count, dtype, op));
    EXPECT_EQ(recv, input) << "op " << op;
    std::vector<T> inPlace = input;
    EXPECT_OK(dist_rt_all_reduce(comm, inPlace.data(), inPlace.data(), count,
                                 dtype, op));
    EXPECT_EQ(inPlace, input) << "op " << op;
  }

  std::vector<T> gathered(input.size(), T(-99));
  EXPECT_OK(
      dist_rt_all_gather(comm, input.data(), gathered.data(), count, dtype));
  EXPECT_EQ(gathered, input);

  std::vector<T> scattered(input.size(), T(-99));
  EXPECT_OK(dist_rt_reduce_scatter(comm, input.data(), scattered.data(), count,
                                   dtype, DIST_RT_REDUCE_SUM));
  EXPECT_EQ(scattered, input);

  std::vector<T> exchanged(input.size(), T(-99));
  EXPECT_OK(
      dist_rt_all_to_all(comm, input.data(), exchanged.data(), count, dtype));
  EXPECT_EQ(exchanged, input);

  std::vector<T> broadcast = input;
  EXPECT_OK(dist_rt_broadcast(comm, broadcast.data(), count, dtype, 0));
  EXPECT_EQ(broadcast, input);

  // Sends to itself are buffered; tags are separate queues, each in order.
  std::vector<T> second = {T(1), T(2)};
  EXPECT_OK(dist_rt_send(comm, input.data(), count, dtype, 0, 1));
  EXPECT_OK(dist_rt_send(comm, second.data(), 2, dtype, 0, 1));
  EXPECT_OK(dist_rt_send(comm, second.data(), 2, dtype, 0, 2));
  std::vector<T> received(input.size(), T(-99));
  std::vector<T> receivedSecond(2, T(-99));
  EXPECT_OK(dist_rt_recv(comm, receivedSecond.data(), 2, dtype, 0, 2));
  EXPECT_EQ(receivedSecond, second);
  EXPECT_OK(dist_rt_recv(comm, received.data(), count, dtype, 0, 1));
  EXPECT_EQ(received, input);
  receivedSecond.assign(2, T(-99));
  EXPECT_OK(dist_rt_recv(comm, receivedSecond.data(), 2, dtype, 0, 1));
  EXPECT_EQ(receivedSecond, second);

  EXPECT_OK(dist_rt_barrier(comm));
}

TEST_F(CommTest, CollectivesOnEachDType) {
  checkAllCollectives<float>(world);
  checkAllCollectives<double>(world);
  checkAllCollectives<int32_t>(world);
  checkAllCollectives<int64_t>(world);
}

TEST_F(CommTest, EmptyBuffersMayBeNull) {
  EXPECT_OK(dist_rt_all_reduce(world, nullptr, nullptr, 0, DIST_RT_DTYPE_FLOAT,
                               DIST_RT_REDUCE_SUM));
  EXPECT_OK(
      dist_rt_all_gather(world, nullptr, nullptr, 0, DIST_RT_DTYPE_INT64));
  EXPECT_OK(dist_rt_broadcast(world, nullptr, 0, DIST_RT_DTYPE_INT32, 0));
  EXPECT_OK(dist_rt_send(world, nullptr, 0, DIST_RT_DTYPE_DOUBLE, 0, 0));
  EXPECT_OK(dist_rt_recv(world, nullptr, 0, DIST_RT_DTYPE_DOUBLE, 0, 0));
}

TEST_F(CommTest, RecvMismatches) {
  float value = 1;
  std::string none =
      errorOf(dist_rt_recv(world, &value, 1, DIST_RT_DTYPE_FLOAT, 0, 9));
  EXPECT_EQ(none, "rank 0: recv: no message from rank 0 (itself) with tag 9 "
                  "was sent");

  float pair[2] = {1, 2};
  EXPECT_OK(dist_rt_send(world, pair, 2, DIST_RT_DTYPE_FLOAT, 0, 3));
  std::string length =
      errorOf(dist_rt_recv(world, pair, 1, DIST_RT_DTYPE_FLOAT, 0, 3));
  EXPECT_EQ(length, "rank 0: recv: expected 1 float32 elements from rank 0 "
                    "with tag 3, got 2 float32 elements");
}

//===----------------------------------------------------------------------===//
// Mesh split
//===----------------------------------------------------------------------===//

TEST_F(CommTest, SplitMeshOfOneRank) {
  const int64_t mesh[2] = {1, 1};
  dist_rt_comm_t axes[2] = {nullptr, nullptr};
  EXPECT_OK(dist_rt_comm_split_mesh(world, mesh, 2, axes));
  for (dist_rt_comm_t axis : axes) {
    ASSERT_NE(axis, nullptr);
    EXPECT_NE(axis, world);
    EXPECT_EQ(dist_rt_comm_rank(axis), 0);
    EXPECT_EQ(dist_rt_comm_size(axis), 1);
    checkAllCollectives<float>(axis);
  }
  EXPECT_NE(axes[0], axes[1]);
  dist_rt_comm_release(axes[0]);
  dist_rt_comm_release(axes[1]);
}

TEST_F(CommTest, SplitMeshErrors) {
  dist_rt_comm_t axes[3] = {nullptr, nullptr, nullptr};
  const int64_t square[2] = {2, 2};
  EXPECT_EQ(errorOf(dist_rt_comm_split_mesh(world, square, 2, axes)),
            "rank 0: split_mesh: mesh 2x2 needs 4 ranks, the world has 1");
  EXPECT_EQ(axes[0], nullptr);
  EXPECT_EQ(axes[1], nullptr);

  const int64_t three[3] = {1, 3, 1};
  EXPECT_EQ(errorOf(dist_rt_comm_split_mesh(world, three, 3, axes)),
            "rank 0: split_mesh: mesh 1x3x1 needs 3 ranks, the world has 1");

  const int64_t zero[2] = {1, 0};
  EXPECT_TRUE(contains(errorOf(dist_rt_comm_split_mesh(world, zero, 2, axes)),
                       "mesh_shape[1] must be at least 1 (got 0)"));

  const int64_t huge[3] = {INT64_MAX, 4, 4};
  EXPECT_TRUE(contains(errorOf(dist_rt_comm_split_mesh(world, huge, 3, axes)),
                       "needs more than"));

  EXPECT_TRUE(contains(errorOf(dist_rt_comm_split_mesh(world, square, 0, axes)),
                       "num_axes"));
  EXPECT_TRUE(
      contains(errorOf(dist_rt_comm_split_mesh(world, nullptr, 2, axes)),
               "mesh_shape is NULL"));
  EXPECT_TRUE(
      contains(errorOf(dist_rt_comm_split_mesh(world, square, 2, nullptr)),
               "out_axis_comms is NULL"));
  EXPECT_EQ(errorOf(dist_rt_comm_split_mesh(nullptr, square, 2, axes)),
            "split_mesh: comm is NULL");

  // Splitting an axis communicator says "the communicator".
  const int64_t one[1] = {1};
  dist_rt_comm_t axis = nullptr;
  EXPECT_OK(dist_rt_comm_split_mesh(world, one, 1, &axis));
  EXPECT_EQ(errorOf(dist_rt_comm_split_mesh(axis, square, 2, axes)),
            "rank 0: split_mesh: mesh 2x2 needs 4 ranks, the communicator "
            "has 1");
  dist_rt_comm_release(axis);
}

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

TEST_F(CommTest, NullArguments) {
  float data[4] = {1, 2, 3, 4};
  EXPECT_EQ(
      errorOf(dist_rt_all_reduce(nullptr, data, data, 4, DIST_RT_DTYPE_FLOAT,
                                 DIST_RT_REDUCE_SUM)),
      "all_reduce: comm is NULL");
  EXPECT_EQ(errorOf(dist_rt_barrier(nullptr)), "barrier: comm is NULL");
  EXPECT_EQ(
      errorOf(dist_rt_all_reduce(world, nullptr, data, 4, DIST_RT_DTYPE_FLOAT,
                                 DIST_RT_REDUCE_SUM)),
      "rank 0: all_reduce: send is NULL");
  EXPECT_EQ(
      errorOf(dist_rt_all_gather(world, data, nullptr, 4, DIST_RT_DTYPE_FLOAT)),
      "rank 0: all_gather: recv is NULL");
  EXPECT_EQ(
      errorOf(dist_rt_broadcast(world, nullptr, 4, DIST_RT_DTYPE_FLOAT, 0)),
      "rank 0: broadcast: buf is NULL");
  EXPECT_EQ(errorOf(dist_rt_send(world, nullptr, 1, DIST_RT_DTYPE_FLOAT, 0, 0)),
            "rank 0: send: buf is NULL");
}

TEST_F(CommTest, BadDTypeCountAndReduction) {
  int64_t data[4] = {1, 2, 3, 4};
  int64_t out[4] = {};
  EXPECT_EQ(errorOf(dist_rt_all_reduce(world, data, out, 4, DIST_RT_DTYPE_BOOL,
                                       DIST_RT_REDUCE_SUM)),
            "rank 0: all_reduce: unsupported dtype bool (code 9); expected "
            "float32, float64, int32 or int64");
  EXPECT_TRUE(contains(errorOf(dist_rt_all_to_all(world, data, out, 1, 12345)),
                       "all_to_all: unsupported dtype"));
  EXPECT_EQ(errorOf(dist_rt_all_reduce(
                world, data, out, -1, DIST_RT_DTYPE_INT64, DIST_RT_REDUCE_SUM)),
            "rank 0: all_reduce: count must not be negative (got -1)");
  EXPECT_EQ(errorOf(dist_rt_reduce_scatter(
                world, data, out, -3, DIST_RT_DTYPE_INT64, DIST_RT_REDUCE_SUM)),
            "rank 0: reduce_scatter: count_per_rank must not be negative "
            "(got -3)");
  EXPECT_TRUE(contains(
      errorOf(dist_rt_all_reduce(world, data, out, 4, DIST_RT_DTYPE_INT64,
                                 static_cast<dist_rt_reduce_op_t>(7))),
      "all_reduce: unknown reduction 7"));
  EXPECT_TRUE(contains(
      errorOf(dist_rt_all_reduce(world, data, out, INT64_MAX,
                                 DIST_RT_DTYPE_INT64, DIST_RT_REDUCE_SUM)),
      "do not fit in memory"));
}

TEST_F(CommTest, BadRootPeerAndTag) {
  int32_t data[2] = {1, 2};
  EXPECT_EQ(errorOf(dist_rt_broadcast(world, data, 2, DIST_RT_DTYPE_INT32, 1)),
            "rank 0: broadcast: root 1 is out of range (the communicator has "
            "1 rank)");
  EXPECT_TRUE(contains(
      errorOf(dist_rt_broadcast(world, data, 2, DIST_RT_DTYPE_INT32, -1)),
      "root -1 is out of range"));
  EXPECT_TRUE(
      contains(errorOf(dist_rt_send(world, data, 2, DIST_RT_DTYPE_INT32, 3, 0)),
               "send: peer 3 is out of range"));
  EXPECT_TRUE(contains(
      errorOf(dist_rt_recv(world, data, 2, DIST_RT_DTYPE_INT32, -2, 0)),
      "recv: peer -2 is out of range"));
  EXPECT_EQ(errorOf(dist_rt_send(world, data, 2, DIST_RT_DTYPE_INT32, 0, -1)),
            "rank 0: send: tag -1 is out of range (expected 0 to 32767)");
  EXPECT_TRUE(contains(
      errorOf(dist_rt_recv(world, data, 2, DIST_RT_DTYPE_INT32, 0, 32768)),
      "tag 32768 is out of range"));
}

TEST_F(CommTest, OverlappingBuffers) {
  float data[8] = {};
  EXPECT_EQ(
      errorOf(dist_rt_all_reduce(world, data, data + 1, 4, DIST_RT_DTYPE_FLOAT,
                                 DIST_RT_REDUCE_SUM)),
      "rank 0: all_reduce: send and recv overlap");
  EXPECT_TRUE(contains(errorOf(dist_rt_all_gather(world, data, data + 2, 4,
                                                  DIST_RT_DTYPE_FLOAT)),
                       "all_gather: send and recv overlap"));
  // Adjacent buffers do not overlap.
  EXPECT_OK(dist_rt_all_to_all(world, data, data + 4, 4, DIST_RT_DTYPE_FLOAT));
}

} // namespace
