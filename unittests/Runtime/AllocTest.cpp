//===- AllocTest.cpp - Tests for the allocator and memrefCopy ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// GoogleTest tests for the caching allocator that generated code calls
// (_mlir_memref_to_llvm_*), dist_rt_alloc_owns/trim, and memrefCopy on
// contiguous and strided views. Each allocator test uses its own sizes so
// that blocks cached by earlier tests do not matter.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/kernels.h"

#include "RuntimeTestUtils.h"
#include "internal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <sys/mman.h>

using namespace dist_rt_test;

namespace {

bool isAligned(const void *ptr, size_t alignment) {
  return reinterpret_cast<uintptr_t>(ptr) % alignment == 0;
}

//===----------------------------------------------------------------------===//
// Allocator
//===----------------------------------------------------------------------===//

TEST(AllocTest, BlocksAreAlignedAndUsable) {
  for (size_t size :
       {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{4095},
        size_t{4097}, size_t{100000}, size_t{3} << 20}) {
    SCOPED_TRACE(size);
    auto *block = static_cast<uint8_t *>(_mlir_memref_to_llvm_alloc(size));
    ASSERT_NE(block, nullptr);
    EXPECT_TRUE(isAligned(block, 64));
    EXPECT_TRUE(dist_rt_alloc_owns(block));
    if (size)
      std::memset(block, 0x5a, size);
    _mlir_memref_to_llvm_free(block);
  }
}

TEST(AllocTest, FreedBlockIsReusedForTheSameSizeClass) {
  void *first = _mlir_memref_to_llvm_alloc(1000);
  ASSERT_NE(first, nullptr);
  _mlir_memref_to_llvm_free(first);
  // 1000 and 1020 round up to the same 1024-byte class.
  void *second = _mlir_memref_to_llvm_alloc(1020);
  EXPECT_EQ(second, first);
  _mlir_memref_to_llvm_free(second);

  // Above 4 KiB classes are quarter steps of a power of two: 70000 and
  // 81920 both fall into (65536, 81920].
  void *large = _mlir_memref_to_llvm_alloc(70000);
  ASSERT_NE(large, nullptr);
  _mlir_memref_to_llvm_free(large);
  void *again = _mlir_memref_to_llvm_alloc(81920);
  EXPECT_EQ(again, large);
  _mlir_memref_to_llvm_free(again);
}

TEST(AllocTest, RepeatedCyclesReuseTheSameBlocks) {
  const size_t sizes[] = {192, 5000, 300000};
  std::vector<void *> firstRound;
  for (size_t size : sizes)
    firstRound.push_back(_mlir_memref_to_llvm_alloc(size));
  for (void *block : firstRound)
    _mlir_memref_to_llvm_free(block);
  for (int round = 0; round < 5; ++round) {
    std::vector<void *> blocks;
    for (size_t size : sizes)
      blocks.push_back(_mlir_memref_to_llvm_alloc(size));
    EXPECT_EQ(std::set<void *>(blocks.begin(), blocks.end()),
              std::set<void *>(firstRound.begin(), firstRound.end()));
    for (void *block : blocks)
      _mlir_memref_to_llvm_free(block);
  }
}

TEST(AllocTest, DifferentClassesGetDifferentBlocks) {
  void *small = _mlir_memref_to_llvm_alloc(2048);
  _mlir_memref_to_llvm_free(small);
  void *bigger = _mlir_memref_to_llvm_alloc(2112);
  EXPECT_NE(bigger, small);
  _mlir_memref_to_llvm_free(bigger);
}

TEST(AllocTest, OwnsOnlyLiveBlockStarts) {
  auto *block = static_cast<char *>(_mlir_memref_to_llvm_alloc(256));
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(dist_rt_alloc_owns(block), 1);
  EXPECT_EQ(dist_rt_alloc_owns(block + 64), 0);
  int onStack = 0;
  EXPECT_EQ(dist_rt_alloc_owns(&onStack), 0);
  EXPECT_EQ(dist_rt_alloc_owns(nullptr), 0);
  EXPECT_EQ(dist_rt_alloc_owns(reinterpret_cast<void *>(0xdeadbeef)), 0);
  std::vector<float> heap(16);
  EXPECT_EQ(dist_rt_alloc_owns(heap.data()), 0);
  _mlir_memref_to_llvm_free(block);
  EXPECT_EQ(dist_rt_alloc_owns(block), 0);
}

TEST(AllocTest, HonoursLargerAlignments) {
  for (size_t alignment : {size_t{16}, size_t{64}, size_t{128}, size_t{256},
                           size_t{4096}, size_t{65536}}) {
    SCOPED_TRACE(alignment);
    void *block = _mlir_memref_to_llvm_aligned_alloc(alignment, 200);
    ASSERT_NE(block, nullptr);
    EXPECT_TRUE(isAligned(block, std::max<size_t>(alignment, 64)));
    EXPECT_TRUE(dist_rt_alloc_owns(block));
    _mlir_memref_to_llvm_free(block);
    // A cached block of the same class is only reused with its alignment.
    void *again = _mlir_memref_to_llvm_aligned_alloc(alignment, 200);
    EXPECT_TRUE(isAligned(again, std::max<size_t>(alignment, 64)));
    _mlir_memref_to_llvm_free(again);
  }
  // A non-power-of-two alignment is rounded up.
  void *odd = _mlir_memref_to_llvm_aligned_alloc(100, 10);
  EXPECT_TRUE(isAligned(odd, 128));
  _mlir_memref_to_llvm_free(odd);
}

TEST(AllocTest, ZeroSizedBlocksAreDistinct) {
  void *a = _mlir_memref_to_llvm_alloc(0);
  void *b = _mlir_memref_to_llvm_alloc(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  _mlir_memref_to_llvm_free(a);
  _mlir_memref_to_llvm_free(b);
}

TEST(AllocTest, DoubleAndForeignFreesAreIgnored) {
  void *block = _mlir_memref_to_llvm_alloc(3000);
  _mlir_memref_to_llvm_free(block);
  _mlir_memref_to_llvm_free(block);
  int onStack = 0;
  _mlir_memref_to_llvm_free(&onStack);
  _mlir_memref_to_llvm_free(nullptr);
  // Had the double free cached the block twice, both would be the same.
  void *first = _mlir_memref_to_llvm_alloc(3000);
  void *second = _mlir_memref_to_llvm_alloc(3000);
  EXPECT_NE(first, second);
  _mlir_memref_to_llvm_free(first);
  _mlir_memref_to_llvm_free(second);
}

TEST(AllocTest, TrimKeepsLiveBlocks) {
  void *live = _mlir_memref_to_llvm_alloc(9000);
  void *cached = _mlir_memref_to_llvm_alloc(9000);
  std::memset(live, 1, 9000);
  _mlir_memref_to_llvm_free(cached);
  dist_rt_alloc_trim();
  EXPECT_EQ(dist_rt_alloc_owns(live), 1);
  EXPECT_EQ(dist_rt_alloc_owns(cached), 0);
  EXPECT_EQ(static_cast<uint8_t *>(live)[8999], 1);
  void *fresh = _mlir_memref_to_llvm_alloc(9000);
  EXPECT_NE(fresh, nullptr);
  EXPECT_NE(fresh, live);
  _mlir_memref_to_llvm_free(fresh);
  _mlir_memref_to_llvm_free(live);
}

TEST(AllocTest, LargeBlocksAreReusedAtAnySize) {
  // Freed large blocks are the arena's again: a later block of another size
  // may take their memory (size classes would never share it).
  auto *a = static_cast<char *>(_mlir_memref_to_llvm_alloc(size_t{3} << 20));
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(isAligned(a, 4096));
  _mlir_memref_to_llvm_free(a);
  EXPECT_EQ(dist_rt_alloc_owns(a), 0);
  auto *b = static_cast<char *>(_mlir_memref_to_llvm_alloc(size_t{2} << 20));
  auto *c = static_cast<char *>(_mlir_memref_to_llvm_alloc(size_t{1} << 20));
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  // The lowest free range that held 3 MiB holds 2 MiB at or below it.
  EXPECT_LE(b, a);
  EXPECT_EQ(dist_rt_alloc_owns(b), 1);
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(c);
}

TEST(AllocTest, ArenaTakesTheLowestFitAndMergesNeighbours) {
  constexpr size_t kPage = dist_rt::Arena::kPageBytes;
  dist_rt::Arena arena(16 * kPage);
  char *a = arena.allocate(4 * kPage);
  char *b = arena.allocate(4 * kPage);
  char *c = arena.allocate(4 * kPage);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(isAligned(a, kPage));
  // One chunk, carved in address order.
  EXPECT_EQ(b, a + 4 * kPage);
  EXPECT_EQ(c, b + 4 * kPage);
  std::memset(a, 1, 12 * kPage);
  // a and b freed in either order merge: 8 pages at a.
  arena.release(b, 4 * kPage);
  arena.release(a, 4 * kPage);
  EXPECT_EQ(arena.allocate(8 * kPage), a);
  arena.release(a, 8 * kPage);
  arena.release(c, 4 * kPage);
  // The whole chunk is one range again, from its start.
  EXPECT_EQ(arena.allocate(16 * kPage), a);
  arena.release(a, 16 * kPage);
  // A hole of 2 pages below a larger one: 3 pages skip it, 2 take it.
  char *p = arena.allocate(2 * kPage);
  char *q = arena.allocate(kPage);
  arena.release(p, 2 * kPage);
  char *r = arena.allocate(3 * kPage);
  EXPECT_EQ(r, q + kPage);
  EXPECT_EQ(arena.allocate(2 * kPage), p);
}

TEST(AllocTest, ArenaKeepsChunksApartAndTrimsOnlyFreeOnes) {
  constexpr size_t kPage = dist_rt::Arena::kPageBytes;
  dist_rt::Arena arena(4 * kPage);
  char *first = arena.allocate(4 * kPage);
  char *second = arena.allocate(4 * kPage);
  char *big = arena.allocate(10 * kPage); // A chunk of its own size.
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_NE(big, nullptr);
  std::memset(big, 3, 10 * kPage);
  arena.release(first, 4 * kPage);
  arena.release(second, 4 * kPage);
  // Two free chunks never make one range, even where the system placed
  // them next to each other: 8 pages need a chunk of their own.
  char *eight = arena.allocate(8 * kPage);
  ASSERT_NE(eight, nullptr);
  EXPECT_NE(eight, first);
  EXPECT_NE(eight, second);
  arena.release(eight, 8 * kPage);
  arena.trim();
  unsigned char resident = 0;
  // The free chunks are unmapped (mincore fails with ENOMEM), the live one
  // keeps its contents.
  EXPECT_EQ(mincore(first, kPage, &resident), -1);
  EXPECT_EQ(mincore(second, kPage, &resident), -1);
  EXPECT_EQ(mincore(big, kPage, &resident), 0);
  EXPECT_EQ(big[10 * kPage - 1], 3);
}

TEST(AllocTest, LargeBlocksNeverOverlap) {
  // A deterministic mix of sizes allocated and freed out of order, as a
  // model's activations are: every live block keeps its own contents.
  struct Live {
    uint8_t *block;
    size_t size;
    uint8_t tag;
  };
  std::vector<Live> live;
  uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1103515245u + 12345u;
    return state >> 8;
  };
  int failures = 0;
  for (int i = 0; i < 400; ++i) {
    if (live.size() < 12 && (live.empty() || next() % 3 != 0)) {
      size_t size = 200000 + next() % (size_t{6} << 20);
      auto *block = static_cast<uint8_t *>(_mlir_memref_to_llvm_alloc(size));
      ASSERT_NE(block, nullptr);
      auto tag = static_cast<uint8_t>(i);
      std::memset(block, tag, size);
      live.push_back({block, size, tag});
      continue;
    }
    size_t victim = next() % live.size();
    const Live &old = live[victim];
    for (size_t at : {size_t{0}, old.size / 2, old.size - 1})
      failures += old.block[at] != old.tag;
    _mlir_memref_to_llvm_free(old.block);
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
  }
  for (const Live &old : live) {
    for (size_t at : {size_t{0}, old.size / 2, old.size - 1})
      failures += old.block[at] != old.tag;
    _mlir_memref_to_llvm_free(old.block);
  }
  EXPECT_EQ(failures, 0);
}

#if defined(__SANITIZE_ADDRESS__)
#define ALLOC_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALLOC_TEST_ASAN 1
#endif
#endif

#ifdef ALLOC_TEST_ASAN
// Arena blocks come from mmap, which AddressSanitizer does not watch: the
// allocator poisons a page after each block and the blocks it frees.
TEST(AllocTest, ArenaOverflowsAndStaleReadsAreReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto *block = static_cast<char *>(_mlir_memref_to_llvm_alloc(300000));
  ASSERT_NE(block, nullptr);
  block[299999] = 1;
  EXPECT_DEATH(
      {
        volatile char *past = block + 300000;
        *past = 1;
      },
      "AddressSanitizer");
  _mlir_memref_to_llvm_free(block);
  EXPECT_DEATH(
      {
        volatile char *stale = block;
        (void)*stale;
      },
      "AddressSanitizer");
}
#endif

TEST(AllocTest, ConcurrentUseNeverSharesABlock) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 2000;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      std::vector<uint8_t *> held;
      for (int i = 0; i < kIterations; ++i) {
        size_t size = 64 + static_cast<size_t>((i * 37 + t * 11) % 9000);
        auto *block = static_cast<uint8_t *>(_mlir_memref_to_llvm_alloc(size));
        if (!block) {
          ++failures;
          continue;
        }
        std::memset(block, t + 1, 64);
        held.push_back(block);
        if (held.size() > 8) {
          uint8_t *old = held.front();
          held.erase(held.begin());
          for (int b = 0; b < 64; ++b)
            if (old[b] != t + 1)
              ++failures;
          _mlir_memref_to_llvm_free(old);
        }
      }
      for (uint8_t *block : held)
        _mlir_memref_to_llvm_free(block);
    });
  }
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
}

//===----------------------------------------------------------------------===//
// memrefCopy
//===----------------------------------------------------------------------===//

/// Calls memrefCopy on two ranked descriptors of the same rank.
void copyMemref(int64_t elemSize, std::vector<int64_t> &src,
                std::vector<int64_t> &dst, int64_t rank) {
  UnrankedMemref srcUnranked{rank, src.data()};
  UnrankedMemref dstUnranked{rank, dst.data()};
  memrefCopy(elemSize, &srcUnranked, &dstUnranked);
}

TEST(MemrefCopyTest, ContiguousWithOffsets) {
  std::vector<float> source(20), target(20, -1.f);
  for (size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<float>(i);
  // Copy the 2x3 block starting at element 4 into target starting at 10.
  std::vector<int64_t> src =
      memrefWords(source.data(), source.data(), 4, {2, 3}, {3, 1});
  std::vector<int64_t> dst =
      memrefWords(target.data(), target.data(), 10, {2, 3}, {3, 1});
  copyMemref(sizeof(float), src, dst, 2);
  for (int i = 0; i < 20; ++i) {
    float expected = i >= 10 && i < 16 ? static_cast<float>(i - 6) : -1.f;
    EXPECT_EQ(target[i], expected) << i;
  }
}

TEST(MemrefCopyTest, TransposedSourceIntoContiguousTarget) {
  // source is a 3x4 row-major matrix; view it as its 4x3 transpose.
  std::vector<double> source(12), target(12, 0.0);
  for (size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<double>(i) + 0.5;
  std::vector<int64_t> src =
      memrefWords(nullptr, source.data(), 0, {4, 3}, {1, 4});
  std::vector<int64_t> dst =
      memrefWords(nullptr, target.data(), 0, {4, 3}, {3, 1});
  copyMemref(sizeof(double), src, dst, 2);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(target[i * 3 + j], source[j * 4 + i]) << i << "," << j;
}

TEST(MemrefCopyTest, StridedSourceAndTargetWithOffsets) {
  // Every second element of every second row of a 6x8 int16 matrix,
  // starting at (1, 1), into every third element of a padded target.
  std::vector<int16_t> source(48), target(64, -1);
  for (size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<int16_t>(i);
  std::vector<int64_t> src =
      memrefWords(nullptr, source.data(), 9, {3, 4}, {16, 2});
  std::vector<int64_t> dst =
      memrefWords(nullptr, target.data(), 2, {3, 4}, {15, 3});
  copyMemref(sizeof(int16_t), src, dst, 2);
  std::vector<int16_t> expected(64, -1);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      expected[2 + i * 15 + j * 3] = source[9 + i * 16 + j * 2];
  EXPECT_EQ(target, expected);
}

TEST(MemrefCopyTest, ChannelSliceOfABatch) {
  // A contiguous [2, 3, 2, 2] into channels 1..3 of a [2, 5, 2, 2] target
  // (a batch-2 concatenation's slice: the trailing three dims are one row
  // per image), and a [2, 3, 2] into columns 0..1 of a [2, 3, 3] target
  // (rows with a gap after each: nothing to merge past the innermost dim).
  std::vector<float> source(24), target(40, -1.f);
  for (size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<float>(i);
  std::vector<int64_t> src =
      memrefWords(nullptr, source.data(), 0, {2, 3, 2, 2}, {12, 4, 2, 1});
  std::vector<int64_t> dst =
      memrefWords(nullptr, target.data(), 4, {2, 3, 2, 2}, {20, 4, 2, 1});
  copyMemref(sizeof(float), src, dst, 4);
  std::vector<float> expected(40, -1.f);
  for (int n = 0; n < 2; ++n)
    for (int r = 0; r < 12; ++r)
      expected[4 + n * 20 + r] = source[n * 12 + r];
  EXPECT_EQ(target, expected);

  std::vector<float> narrow(12), wide(18, -1.f);
  for (size_t i = 0; i < narrow.size(); ++i)
    narrow[i] = static_cast<float>(i) + 0.5f;
  std::vector<int64_t> nsrc =
      memrefWords(nullptr, narrow.data(), 0, {2, 3, 2}, {6, 2, 1});
  std::vector<int64_t> wdst =
      memrefWords(nullptr, wide.data(), 0, {2, 3, 2}, {9, 3, 1});
  copyMemref(sizeof(float), nsrc, wdst, 3);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(wide[i * 3 + j], j < 2 ? narrow[i * 2 + j] : -1.f)
          << i << "," << j;
}

TEST(MemrefCopyTest, UnitDimensionsWithAnyStride) {
  // [2, 1, 3, 4] whose extent-1 dim has a stride that addresses nothing,
  // into rows 0 and 2 of a [4, 12] target.
  std::vector<float> source(24), target(48, -1.f);
  for (size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<float>(i) * 2.f;
  std::vector<int64_t> src =
      memrefWords(nullptr, source.data(), 0, {2, 1, 3, 4}, {12, 999, 4, 1});
  std::vector<int64_t> dst =
      memrefWords(nullptr, target.data(), 0, {2, 1, 3, 4}, {24, 7, 4, 1});
  copyMemref(sizeof(float), src, dst, 4);
  std::vector<float> expected(48, -1.f);
  for (int n = 0; n < 2; ++n)
    for (int r = 0; r < 12; ++r)
      expected[n * 24 + r] = source[n * 12 + r];
  EXPECT_EQ(target, expected);
}

TEST(MemrefCopyTest, LongRowsOnTwoThreads) {
  // 16 rows of 8,192 floats (32 KiB each, 512 KiB in all) into every other
  // row of a target: spread over the runtime's threads, row by row.
  int32_t saved = dist_rt_get_num_threads();
  dist_rt_set_num_threads(2);
  const int64_t rows = 16, cols = 8192;
  std::vector<float> source(rows * cols), target(2 * rows * cols, -1.f);
  for (size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<float>(i % 100003);
  std::vector<int64_t> src =
      memrefWords(nullptr, source.data(), 0, {4, 4, cols}, {4 * cols, cols, 1});
  std::vector<int64_t> dst = memrefWords(nullptr, target.data(), cols,
                                         {4, 4, cols}, {8 * cols, 2 * cols, 1});
  copyMemref(sizeof(float), src, dst, 3);
  dist_rt_set_num_threads(saved);
  for (int64_t r = 0; r < 2 * rows; ++r)
    for (int64_t j = 0; j < cols; j += 511) {
      float expected = r % 2 ? source[(r / 2) * cols + j] : -1.f;
      ASSERT_EQ(target[r * cols + j], expected) << r << "," << j;
    }
}

TEST(MemrefCopyTest, BroadcastSourceRank3) {
  // A zero stride repeats the source along that dimension.
  std::vector<uint8_t> source = {1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> target(2 * 3 * 2, 0);
  std::vector<int64_t> src =
      memrefWords(nullptr, source.data(), 0, {2, 3, 2}, {0, 2, 1});
  std::vector<int64_t> dst =
      memrefWords(nullptr, target.data(), 0, {2, 3, 2}, {6, 2, 1});
  copyMemref(1, src, dst, 3);
  EXPECT_EQ(target, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}));
}

TEST(MemrefCopyTest, ScalarAndEmpty) {
  int64_t source = 42, target = 0;
  std::vector<int64_t> src = memrefWords(&source, &source, 0, {}, {});
  std::vector<int64_t> dst = memrefWords(&target, &target, 0, {}, {});
  copyMemref(sizeof(int64_t), src, dst, 0);
  EXPECT_EQ(target, 42);

  // Nothing is touched for an empty view, even through bogus pointers.
  std::vector<int64_t> emptySrc =
      memrefWords(reinterpret_cast<void *>(0xdeadbeef),
                  reinterpret_cast<void *>(0xdeadbeef), 0, {0, 5}, {5, 1});
  std::vector<int64_t> emptyDst =
      memrefWords(reinterpret_cast<void *>(0xdeadbeef),
                  reinterpret_cast<void *>(0xdeadbeef), 0, {0, 5}, {1, 7});
  copyMemref(4, emptySrc, emptyDst, 2);
}

TEST(MemrefCopyTest, WideElements) {
  // 16-byte elements (say complex<double>) in a reversed-stride view.
  struct Wide {
    double re, im;
  };
  std::vector<Wide> source(4), target(4);
  for (int i = 0; i < 4; ++i)
    source[i] = {static_cast<double>(i), -static_cast<double>(i)};
  std::vector<int64_t> src = memrefWords(nullptr, source.data(), 3, {4}, {-1});
  std::vector<int64_t> dst = memrefWords(nullptr, target.data(), 0, {4}, {1});
  copyMemref(sizeof(Wide), src, dst, 1);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(target[i].re, 3.0 - i);
    EXPECT_EQ(target[i].im, -(3.0 - i));
  }
}

} // namespace
