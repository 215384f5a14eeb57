//===- alloc.cpp - Caching allocator and memref copies ----------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements the allocator that MLIR's memref lowering calls from generated
// code (_mlir_memref_to_llvm_alloc/_aligned_alloc/_free) and MLIR's
// memrefCopy. Freed small blocks are kept on per-size-class free lists so
// that a model that runs repeatedly stops asking the system for memory
// after its first run. Large blocks (a layer's activations) are carved from
// an arena, lowest address first, and merge with their free neighbours when
// freed: buffers freed after their last use (dist-free-after-last-use) are
// then handed to later layers of any size, so that a model's activations
// stay within about its peak live bytes, in cache, rather than one block
// per size ever used (MobileNetV2's activations: 24.7 MB of size-class
// blocks, 10.0 MB of arena). Every block handed out is recorded, which
// lets the model runner ask whether an output buffer came from here
// (dist_rt_alloc_owns).
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "dist_rt/kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <sanitizer/asan_interface.h>
#include <sys/mman.h>

static_assert(sizeof(void *) == sizeof(int64_t),
              "memref descriptors are read as 64-bit words");

namespace {

//===----------------------------------------------------------------------===//
// Size classes
//===----------------------------------------------------------------------===//

/// Every block is aligned to at least this many bytes, and small sizes are
/// rounded up to a multiple of it.
constexpr size_t kMinAlignment = 64;

/// Above this size, classes are four steps per power of two.
constexpr size_t kSmallLimit = 4096;

/// Rounds `size` up to its size class: a multiple of 64 up to 4 KiB, then
/// 2^k + j * 2^(k-2) for j in 1..4. Returns 0 when the size is too large to
/// round. A size of 0 gets the smallest class.
size_t roundToClass(size_t size) {
  if (size <= kSmallLimit)
    return size == 0 ? kMinAlignment
                     : (size + kMinAlignment - 1) & ~(kMinAlignment - 1);
  if (size > (SIZE_MAX >> 2))
    return 0;
  // size lies in (2^k, 2^(k+1)] with k >= 12.
  unsigned k = 63 - static_cast<unsigned>(__builtin_clzll(
                        static_cast<unsigned long long>(size - 1)));
  size_t step = size_t{1} << (k - 2);
  return (size + step - 1) & ~(step - 1);
}

/// Rounds `alignment` up to a power of two of at least kMinAlignment and
/// returns its log2, or 0 when it is too large.
unsigned alignmentLog2(size_t alignment) {
  if (alignment <= kMinAlignment)
    return 6;
  if (alignment > (SIZE_MAX >> 2))
    return 0;
  unsigned log2 = 63 -
                  static_cast<unsigned>(__builtin_clzll(
                      static_cast<unsigned long long>(alignment - 1))) +
                  1;
  return log2;
}

//===----------------------------------------------------------------------===//
// Arena
//===----------------------------------------------------------------------===//

/// Blocks of at least this many bytes (with an alignment of at most a page)
/// come from the arena; smaller ones from the size-class lists, which keep
/// the arena from being cut into slivers by descriptors and scalars.
constexpr size_t kArenaMinBytes = 256 * 1024;

#if defined(__SANITIZE_ADDRESS__)
#define DIST_RT_ARENA_REDZONE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DIST_RT_ARENA_REDZONE 1
#endif
#endif
/// Under AddressSanitizer every arena block is followed by a poisoned page,
/// and freed blocks are poisoned, so that reads and writes past a block's
/// end or after its free are reported as with malloc's blocks (the arena's
/// memory comes from mmap, which ASan does not watch).
#ifdef DIST_RT_ARENA_REDZONE
constexpr size_t kArenaRedzone = 4096;
#else
constexpr size_t kArenaRedzone = 0;
#endif

} // namespace

namespace dist_rt {

// Chunks are unpoisoned before they go back: the system may map the same
// addresses again later, for anyone.
Arena::~Arena() {
  for (auto &chunk : chunks) {
    ASAN_UNPOISON_MEMORY_REGION(chunk.first, chunk.second);
    munmap(chunk.first, chunk.second);
  }
}

std::map<char *, size_t>::iterator Arena::chunkOf(char *at) {
  auto chunk = chunks.upper_bound(at);
  return chunk == chunks.begin() ? chunks.end() : std::prev(chunk);
}

char *Arena::allocate(size_t bytes) {
  for (auto range = freeRanges.begin(); range != freeRanges.end(); ++range) {
    if (range->second < bytes)
      continue;
    char *block = range->first;
    size_t rest = range->second - bytes;
    freeRanges.erase(range);
    if (rest)
      freeRanges.emplace(block + bytes, rest);
    return block;
  }
  size_t bytesNew = std::max(bytes, chunkBytes);
  void *base = mmap(nullptr, bytesNew, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return nullptr;
  auto *block = static_cast<char *>(base);
  chunks.emplace(block, bytesNew);
  if (bytesNew > bytes)
    freeRanges.emplace(block + bytes, bytesNew - bytes);
  return block;
}

void Arena::release(char *block, size_t bytes) {
  auto chunk = chunkOf(block);
  char *chunkEnd = chunk->first + chunk->second;
  auto next = freeRanges.lower_bound(block);
  if (next != freeRanges.end() && next->first == block + bytes &&
      next->first < chunkEnd) {
    bytes += next->second;
    next = freeRanges.erase(next);
  }
  if (next != freeRanges.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == block && prev->first >= chunk->first) {
      prev->second += bytes;
      return;
    }
  }
  freeRanges.emplace(block, bytes);
}

void Arena::trim() {
  for (auto chunk = chunks.begin(); chunk != chunks.end();) {
    auto range = freeRanges.find(chunk->first);
    if (range == freeRanges.end() || range->second != chunk->second) {
      ++chunk;
      continue;
    }
    freeRanges.erase(range);
    ASAN_UNPOISON_MEMORY_REGION(chunk->first, chunk->second);
    munmap(chunk->first, chunk->second);
    chunk = chunks.erase(chunk);
  }
}

} // namespace dist_rt

namespace {

using dist_rt::Arena;

//===----------------------------------------------------------------------===//
// CachingAllocator
//===----------------------------------------------------------------------===//

/// A thread-safe allocator that caches freed small blocks per (size class,
/// alignment) and carves large ones from an Arena. One global instance that
/// is never destroyed, so blocks may still be freed from static destructors
/// at exit.
class CachingAllocator {
public:
  void *allocate(size_t size, size_t alignment);
  void release(void *ptr);
  bool owns(const void *ptr);
  void trim();

private:
  /// What is known about a block handed out at least once.
  struct Block {
    /// The free-list key: the rounded size with the log2 of the alignment
    /// in its low six bits (rounded sizes are multiples of 64); for an
    /// arena block, its size in bytes (a multiple of kPageBytes).
    size_t key;
    /// False while the block waits on a free list.
    bool live;
    /// Whether the block is the arena's.
    bool arena;
  };

  std::mutex mutex;
  /// Every block obtained from the system and not yet returned to it.
  std::unordered_map<const void *, Block> blocks;
  /// Free blocks by key.
  std::unordered_map<size_t, std::vector<void *>> freeLists;
  Arena arena;
};

void *CachingAllocator::allocate(size_t size, size_t alignment) {
  size_t rounded = roundToClass(size);
  unsigned log2 = alignmentLog2(alignment);
  if (rounded == 0 || log2 == 0)
    return nullptr;
  size_t key = rounded | log2;
  if (size >= kArenaMinBytes && log2 <= 12) {
    size_t bytes = ((size + Arena::kPageBytes - 1) & ~(Arena::kPageBytes - 1)) +
                   kArenaRedzone;
    std::lock_guard<std::mutex> lock(mutex);
#if DIST_RT_HAS_EXCEPTIONS
    try {
      char *block = arena.allocate(bytes);
      if (block) {
        try {
          blocks.emplace(block, Block{bytes, true, true});
        } catch (...) {
          arena.release(block, bytes);
          throw;
        }
        ASAN_UNPOISON_MEMORY_REGION(block, size);
        ASAN_POISON_MEMORY_REGION(block + size, bytes - size);
      }
      return block;
    } catch (...) {
      return nullptr;
    }
#else
    char *block = arena.allocate(bytes);
    if (block) {
      blocks.emplace(block, Block{bytes, true, true});
      ASAN_UNPOISON_MEMORY_REGION(block, size);
      ASAN_POISON_MEMORY_REGION(block + size, bytes - size);
    }
    return block;
#endif
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto list = freeLists.find(key);
    if (list != freeLists.end() && !list->second.empty()) {
      void *ptr = list->second.back();
      list->second.pop_back();
      blocks.find(ptr)->second.live = true;
      return ptr;
    }
  }

  void *ptr = nullptr;
  if (posix_memalign(&ptr, size_t{1} << log2, rounded) != 0)
    return nullptr;
  std::lock_guard<std::mutex> lock(mutex);
#if DIST_RT_HAS_EXCEPTIONS
  try {
    blocks.emplace(ptr, Block{key, true, false});
  } catch (...) {
    std::free(ptr);
    return nullptr;
  }
#else
  blocks.emplace(ptr, Block{key, true, false});
#endif
  return ptr;
}

void CachingAllocator::release(void *ptr) {
  if (!ptr)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  auto block = blocks.find(ptr);
  // Unknown pointers and double frees are ignored rather than corrupting
  // the free lists.
  if (block == blocks.end() || !block->second.live)
    return;
  if (block->second.arena) {
    size_t bytes = block->second.key;
    blocks.erase(block);
    ASAN_POISON_MEMORY_REGION(ptr, bytes);
#if DIST_RT_HAS_EXCEPTIONS
    try {
      arena.release(static_cast<char *>(ptr), bytes);
    } catch (...) {
      // Could not record the free range: its pages stay unused.
    }
#else
    arena.release(static_cast<char *>(ptr), bytes);
#endif
    return;
  }
  block->second.live = false;
#if DIST_RT_HAS_EXCEPTIONS
  try {
    freeLists[block->second.key].push_back(ptr);
  } catch (...) {
    // Could not cache it: give it back to the system instead.
    blocks.erase(block);
    std::free(ptr);
  }
#else
  freeLists[block->second.key].push_back(ptr);
#endif
}

bool CachingAllocator::owns(const void *ptr) {
  if (!ptr)
    return false;
  std::lock_guard<std::mutex> lock(mutex);
  auto block = blocks.find(ptr);
  return block != blocks.end() && block->second.live;
}

void CachingAllocator::trim() {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &entry : freeLists) {
    for (void *ptr : entry.second) {
      blocks.erase(ptr);
      std::free(ptr);
    }
  }
  freeLists.clear();
  arena.trim();
}

CachingAllocator &allocator() {
  // Deliberately leaked; see CachingAllocator.
  static CachingAllocator *instance = new CachingAllocator();
  return *instance;
}

//===----------------------------------------------------------------------===//
// Strided copy helpers
//===----------------------------------------------------------------------===//

/// Copies `count` elements of `ElemSize` bytes between strided rows (strides
/// in bytes).
template <size_t ElemSize>
void copyRow(const char *src, int64_t srcStride, char *dst, int64_t dstStride,
             int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(dst + i * dstStride, src + i * srcStride, ElemSize);
}

void copyRowAnySize(size_t elemSize, const char *src, int64_t srcStride,
                    char *dst, int64_t dstStride, int64_t count) {
  switch (elemSize) {
  case 1:
    return copyRow<1>(src, srcStride, dst, dstStride, count);
  case 2:
    return copyRow<2>(src, srcStride, dst, dstStride, count);
  case 4:
    return copyRow<4>(src, srcStride, dst, dstStride, count);
  case 8:
    return copyRow<8>(src, srcStride, dst, dstStride, count);
  default:
    for (int64_t i = 0; i < count; ++i)
      std::memcpy(dst + i * dstStride, src + i * srcStride, elemSize);
  }
}

/// Contiguous rows at least this long, and copies at least this large in
/// all, are spread over the runtime's threads (one memcpy per row): on one
/// thread, a batch-8 DenseNet-121 at two threads ran 3-6% slower than with
/// its concatenation slices copied by parallel loops.
constexpr size_t kSpreadRowBytes = 4096;
constexpr size_t kSpreadTotalBytes = 256 * 1024;

struct RowCopy {
  size_t rowBytes;
  uint32_t outer;
  const int64_t *sizes;
  const char *src;
  const int64_t *srcStrides;
  char *dst;
  const int64_t *dstStrides;
  size_t elemSize;

  static void run(void *ctx, int64_t begin, int64_t end) {
    const auto *c = static_cast<const RowCopy *>(ctx);
    for (int64_t row = begin; row < end; ++row) {
      int64_t rest = row, srcOff = 0, dstOff = 0;
      for (uint32_t d = c->outer; d-- > 0;) {
        int64_t i = rest % c->sizes[d];
        rest /= c->sizes[d];
        srcOff += i * c->srcStrides[d];
        dstOff += i * c->dstStrides[d];
      }
      std::memcpy(c->dst + dstOff * static_cast<int64_t>(c->elemSize),
                  c->src + srcOff * static_cast<int64_t>(c->elemSize),
                  c->rowBytes);
    }
  }
};

/// Copies the rows of a view whose innermost dimension is contiguous on
/// both sides on the runtime's threads when they are long and many (see
/// kSpreadRowBytes); false (nothing done) otherwise.
bool spreadRows(size_t elemSize, uint32_t rank, const int64_t *sizes,
                const char *src, const int64_t *srcStrides, char *dst,
                const int64_t *dstStrides) {
  if (rank < 2 || srcStrides[rank - 1] != 1 || dstStrides[rank - 1] != 1)
    return false;
  size_t rowBytes = static_cast<size_t>(sizes[rank - 1]) * elemSize;
  int64_t rows = 1;
  for (uint32_t d = 0; d + 1 < rank; ++d)
    rows *= sizes[d];
  if (rowBytes < kSpreadRowBytes || rows < 2 ||
      rowBytes * static_cast<size_t>(rows) < kSpreadTotalBytes ||
      dist_rt_get_num_threads() < 2)
    return false;
  RowCopy copy{rowBytes,   rank - 1, sizes,      src,
               srcStrides, dst,      dstStrides, elemSize};
  dist_rt_parallel_for(rows, &RowCopy::run, &copy);
  return true;
}

/// The fixed part of an MLIR ranked memref descriptor; `rank` sizes and
/// `rank` strides follow it.
struct RankedDescriptorHeader {
  char *allocated;
  char *aligned;
  int64_t offset;
};

/// MLIR's UnrankedMemRefType.
struct UnrankedDescriptor {
  int64_t rank;
  void *descriptor;
};

} // namespace

//===----------------------------------------------------------------------===//
// Internal API
//===----------------------------------------------------------------------===//

bool dist_rt::isContiguous(uint32_t rank, const int64_t *sizes,
                           const int64_t *strides) {
  for (uint32_t d = 0; d < rank; ++d)
    if (sizes[d] == 0)
      return true;
  int64_t expected = 1;
  for (uint32_t d = rank; d-- > 0;) {
    if (sizes[d] != 1 && strides[d] != expected)
      return false;
    expected *= sizes[d];
  }
  return true;
}

void dist_rt::copyStrided(size_t elemSize, uint32_t rank, const int64_t *sizes,
                          const char *src, const int64_t *srcStrides, char *dst,
                          const int64_t *dstStrides) {
  int64_t total = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    if (sizes[d] <= 0)
      return;
    total *= sizes[d];
  }
  if (isContiguous(rank, sizes, srcStrides) &&
      isContiguous(rank, sizes, dstStrides)) {
    std::memcpy(dst, src, static_cast<size_t>(total) * elemSize);
    return;
  }

  // Trailing dimensions laid out contiguously on both sides are one row:
  // a batch's channel slice of an NCHW concatenation ([N, Cs, H, W] within
  // [N, C, H, W]) is N memcpy calls of Cs*H*W elements, not N*Cs*H of W.
  // Dimensions of extent 1 are dropped first (their strides address
  // nothing), as the compiler's dist-strided-copies-to-loops counts rows.
  int64_t mergedSizes[16], mergedSrc[16], mergedDst[16];
  if (rank <= 16) {
    uint32_t r = 0;
    for (uint32_t d = 0; d < rank; ++d) {
      if (sizes[d] == 1)
        continue;
      mergedSizes[r] = sizes[d];
      mergedSrc[r] = srcStrides[d];
      mergedDst[r] = dstStrides[d];
      ++r;
    }
    if (r == 0) {
      mergedSizes[0] = 1;
      mergedSrc[0] = mergedDst[0] = 1;
      r = 1;
    }
    while (r > 1 && mergedSrc[r - 1] == 1 && mergedDst[r - 1] == 1 &&
           mergedSrc[r - 2] == mergedSizes[r - 1] &&
           mergedDst[r - 2] == mergedSizes[r - 1]) {
      mergedSizes[r - 2] *= mergedSizes[r - 1];
      mergedSrc[r - 2] = 1;
      mergedDst[r - 2] = 1;
      --r;
    }
    rank = r;
    sizes = mergedSizes;
    srcStrides = mergedSrc;
    dstStrides = mergedDst;
  }

  if (spreadRows(elemSize, rank, sizes, src, srcStrides, dst, dstStrides))
    return;

  // Walk all but the innermost dimension with an odometer; copy one
  // innermost row per step. Offsets are kept in bytes.
  auto byteStride = [elemSize](int64_t stride) {
    return stride * static_cast<int64_t>(elemSize);
  };
  uint32_t inner = rank - 1;
  int64_t rowLength = sizes[inner];
  int64_t srcRowStride = byteStride(srcStrides[inner]);
  int64_t dstRowStride = byteStride(dstStrides[inner]);
  bool rowsContiguous = srcStrides[inner] == 1 && dstStrides[inner] == 1;

  int64_t smallIndex[16] = {0};
  std::vector<int64_t> largeIndex;
  int64_t *index = smallIndex;
  if (rank > 16) {
    largeIndex.assign(rank, 0);
    index = largeIndex.data();
  }
  int64_t srcOffset = 0;
  int64_t dstOffset = 0;
  while (true) {
    if (rowsContiguous)
      std::memcpy(dst + dstOffset, src + srcOffset,
                  static_cast<size_t>(rowLength) * elemSize);
    else
      copyRowAnySize(elemSize, src + srcOffset, srcRowStride, dst + dstOffset,
                     dstRowStride, rowLength);
    uint32_t d = inner;
    for (; d > 0; --d) {
      uint32_t dim = d - 1;
      if (++index[dim] < sizes[dim]) {
        srcOffset += byteStride(srcStrides[dim]);
        dstOffset += byteStride(dstStrides[dim]);
        break;
      }
      srcOffset -= (sizes[dim] - 1) * byteStride(srcStrides[dim]);
      dstOffset -= (sizes[dim] - 1) * byteStride(dstStrides[dim]);
      index[dim] = 0;
    }
    if (d == 0)
      return;
  }
}

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocator().allocate(size, kMinAlignment);
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                    size_t size) {
  return allocator().allocate(size, alignment);
}

extern "C" void _mlir_memref_to_llvm_free(void *ptr) {
  allocator().release(ptr);
}

extern "C" int dist_rt_alloc_owns(const void *ptr) {
  return allocator().owns(ptr) ? 1 : 0;
}

extern "C" void dist_rt_alloc_trim(void) { allocator().trim(); }

extern "C" void memrefCopy(int64_t elem_size, void *src, void *dst) {
  auto *srcMemref = static_cast<UnrankedDescriptor *>(src);
  auto *dstMemref = static_cast<UnrankedDescriptor *>(dst);
  auto rank = static_cast<uint32_t>(srcMemref->rank);
  auto *srcHeader =
      static_cast<RankedDescriptorHeader *>(srcMemref->descriptor);
  auto *dstHeader =
      static_cast<RankedDescriptorHeader *>(dstMemref->descriptor);
  const auto *srcSizes = reinterpret_cast<const int64_t *>(srcHeader + 1);
  const int64_t *srcStrides = srcSizes + rank;
  const auto *dstSizes = reinterpret_cast<const int64_t *>(dstHeader + 1);
  const int64_t *dstStrides = dstSizes + rank;
  auto elemSize = static_cast<size_t>(elem_size);
  dist_rt::copyStrided(
      elemSize, rank, srcSizes,
      srcHeader->aligned + srcHeader->offset * elem_size, srcStrides,
      dstHeader->aligned + dstHeader->offset * elem_size, dstStrides);
}
