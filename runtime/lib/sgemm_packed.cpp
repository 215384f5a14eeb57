//===- sgemm_packed.cpp - f32 products on weights packed once ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// C (+)= A * B where B is a constant weight packed once, at its first use,
// into panels of 16 columns (kept with the parameter file's other derived
// constants, see derivedConstant in blas.cpp): an AVX2/FMA micro-kernel of
// 6 rows by 16 columns over slices of 256 steps of depth, A packed per
// call by tiles of 6 rows (shared by the threads), the tasks cut by panels
// of C's columns, the next panel of B prefetched while a panel's tiles run.
//
// Why not the libraries: OpenBLAS and oneDNN pack B again at every call,
// and with the few rows of a transformer at batch 1 (128-200 tokens) that
// packing is a good part of the call; oneDNN's AVX2 kernels, reading B in
// place instead, slow down on rows 2 KiB apart (see dnnlSuits). Measured
// on an AMD EPYC (Zen 3, AVX2, no AVX-512) with dist-gemm-bench (weights
// cycled through 12 copies as in a model, best of 3 rounds), ViT-B/16's and
// BERT-base's linear layers at batch 1 (128 and 197 rows) ran at 0.93-1.11
// of the better library at one thread and 1.00-1.10 at two; a chain of 12
// linear layers of ViT-B/16's MLP shape (197 x 768 x 3072 and back) 166-170
// ms against 187-200 on the libraries, onnxruntime 160-167 in the same
// run; ViT-B/16 as a whole 1.07x onnxruntime at one thread where it was
// 0.9x (docs/status.md). Hosts with AVX-512 keep the libraries' AVX-512
// kernels (this kernel uses half their width; not measured there).
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "dist_rt/kernels.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DIST_RT_X86 1
#else
#define DIST_RT_X86 0
#endif

namespace {

/// Micro-tile: rows of A by columns of a B panel.
constexpr int64_t kRows = 6;
constexpr int64_t kPanel = 16;
/// Depth of one pass over a panel: 16 x 256 floats (16 KiB) of B stay in
/// L1 while every block of rows runs over them.
constexpr int64_t kDepth = 256;
/// Rows of one block at most: 256 x 256 floats (256 KiB) of A stay in L2
/// while the task's panels run over them. The rows are cut into blocks of
/// even size (rowsPerBlock): a last block of a few rows would stream every
/// panel of B again for them (ViT-B/16's 197 rows as 192 + 5 did).
constexpr int64_t kBlockRows = 256;

/// Rows of each block for m rows: at most kBlockRows, a multiple of 6,
/// blocks as even as that allows.
int64_t rowsPerBlock(int64_t m) {
  int64_t blocks = (m + kBlockRows - 1) / kBlockRows;
  int64_t rows = (m + blocks - 1) / blocks;
  return (rows + kRows - 1) / kRows * kRows;
}

std::atomic<int64_t> packedCalls{0};

#if DIST_RT_X86

/// row[0..16) = lo, hi, or += when `load`.
__attribute__((target("avx2,fma"), always_inline)) inline void
putRow(float *row, __m256 lo, __m256 hi, bool load) {
  if (load) {
    lo = _mm256_add_ps(lo, _mm256_loadu_ps(row));
    hi = _mm256_add_ps(hi, _mm256_loadu_ps(row + 8));
  }
  _mm256_storeu_ps(row, lo);
  _mm256_storeu_ps(row + 8, hi);
}

/// C[r, j] (+)= sum over p < depth of a[p * 6 + r] * b[p * 16 + j] for the
/// tile's 6 rows and 16 columns (A and B packed), C's rows `ldc` apart;
/// `load`: add to C, else overwrite it. `b` is 32-byte aligned. C's lines are
/// prefetched at the start and read only at the end: the tiles of a wide C
/// (ViT's QKV projection, 197 x 2304) are in no cache when their turn comes,
/// and loading them first stalled the tile (the projection ran at 48 GFLOP/s
/// against OpenBLAS's 62 on Zen 3).
__attribute__((target("avx2,fma"))) void tile6x16(int64_t depth, const float *a,
                                                  const float *b, float *c,
                                                  int64_t ldc, bool load) {
  for (int64_t r = 0; r < kRows; ++r) {
    __builtin_prefetch(c + r * ldc, 1, 3);
    __builtin_prefetch(c + r * ldc + kPanel - 1, 1, 3);
  }
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  c00 = c01 = c10 = c11 = c20 = c21 = _mm256_setzero_ps();
  c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
  // Unrolled by 4: in L1, on Zen 3, 73-79 GFLOP/s rolled against 87-92
  // unrolled (one core, whose FMA units peak at about 137).
#pragma GCC unroll 4
  for (int64_t p = 0; p < depth; ++p, a += kRows, b += kPanel) {
    __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
    __m256 x = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(x, b0, c40), c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(x, b0, c50), c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  putRow(c, c00, c01, load);
  putRow(c + ldc, c10, c11, load);
  putRow(c + 2 * ldc, c20, c21, load);
  putRow(c + 3 * ldc, c30, c31, load);
  putRow(c + 4 * ldc, c40, c41, load);
  putRow(c + 5 * ldc, c50, c51, load);
}

#endif

/// Everything the tasks of one call share; a task is a run of panels.
struct PackedCall {
  int64_t m, n, k;
  const float *a;
  int64_t lda;
  const float *packed;
  float *c;
  int64_t ldc;
  bool overwrite;
  /// A packed by tiles of 6 rows: the slice of depth d starting at p0 of
  /// tile t at apack + p0 * tiles * 6 + t * d * 6, six values (the tile's
  /// rows, those past m repeating the last) per step of depth.
  float *apack;
  int64_t tiles;
  /// Panels of B (see packSgemmB for the layout).
  int64_t panels;
};

#if DIST_RT_X86
/// dst[p * 6 + r] = rows[r][p] for p < depth, r < 6: eight steps of depth
/// at a time as an 8 x 8 transpose (two zero rows), each column's first
/// six values stored, then the rest one by one. Scalar stores, one per
/// value, were 2% of ViT-B/16's time.
__attribute__((target("avx2,fma"))) void packTile(const float *const *rows,
                                                  int64_t depth, float *dst) {
  const __m256i six = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
  const __m256 zero = _mm256_setzero_ps();
  int64_t p = 0;
  for (; p + 8 <= depth; p += 8) {
    __m256 r0 = _mm256_loadu_ps(rows[0] + p), r1 = _mm256_loadu_ps(rows[1] + p);
    __m256 r2 = _mm256_loadu_ps(rows[2] + p), r3 = _mm256_loadu_ps(rows[3] + p);
    __m256 r4 = _mm256_loadu_ps(rows[4] + p), r5 = _mm256_loadu_ps(rows[5] + p);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44),
           u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44),
           u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, zero, 0x44),
           u5 = _mm256_shuffle_ps(t4, zero, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, zero, 0x44),
           u7 = _mm256_shuffle_ps(t5, zero, 0xEE);
    float *d = dst + p * kRows;
    _mm256_maskstore_ps(d, six, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_maskstore_ps(d + 6, six, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_maskstore_ps(d + 12, six, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_maskstore_ps(d + 18, six, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_maskstore_ps(d + 24, six, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_maskstore_ps(d + 30, six, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_maskstore_ps(d + 36, six, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_maskstore_ps(d + 42, six, _mm256_permute2f128_ps(u3, u7, 0x31));
  }
  for (; p < depth; ++p)
    for (int64_t r = 0; r < kRows; ++r)
      dst[p * kRows + r] = rows[r][p];
}
#endif

/// Packs tiles [first, last) of A for every slice of depth.
void packTiles(void *ctx, int64_t first, int64_t last) {
#if DIST_RT_X86
  const PackedCall &call = *static_cast<const PackedCall *>(ctx);
  for (int64_t t = first; t < last; ++t)
    for (int64_t p0 = 0; p0 < call.k; p0 += kDepth) {
      int64_t depth = std::min(kDepth, call.k - p0);
      const float *rows[kRows];
      for (int64_t r = 0; r < kRows; ++r)
        rows[r] = call.a + std::min(t * kRows + r, call.m - 1) * call.lda + p0;
      packTile(rows, depth,
               call.apack + p0 * call.tiles * kRows + t * depth * kRows);
    }
#else
  (void)ctx, (void)first, (void)last;
#endif
}

/// Columns [16 * first, 16 * last) of C for every row: by depth slices of
/// kDepth, blocks of rows (rowsPerBlock), panels, then tiles of 6 rows. Tiles
/// at the bottom or right edge run on a local tile and copy back what lies
/// in C.
void panelRange(void *ctx, int64_t first, int64_t last) {
#if DIST_RT_X86
  const PackedCall &call = *static_cast<const PackedCall *>(ctx);
  alignas(32) float edge[kRows * kPanel];
  int64_t blockRows = rowsPerBlock(call.m);
  for (int64_t p0 = 0; p0 < call.k; p0 += kDepth) {
    int64_t depth = std::min(kDepth, call.k - p0);
    bool load = !call.overwrite || p0 > 0;
    const float *aslice = call.apack + p0 * call.tiles * kRows;
    const float *bslice = call.packed + p0 * call.panels * kPanel;
    for (int64_t i0 = 0; i0 < call.m; i0 += blockRows) {
      int64_t iEnd = std::min(call.m, i0 + blockRows);
      for (int64_t panel = first; panel < last; ++panel) {
        const float *b = bslice + panel * depth * kPanel;
        int64_t j = panel * kPanel, cols = std::min(kPanel, call.n - j);
        // The next panel's slice of B (`depth` lines of 64 bytes, right
        // after this one's) is prefetched a share per tile, so that it
        // comes from memory while this one's tiles run on theirs from L1.
        const char *next = reinterpret_cast<const char *>(
            panel + 1 < last ? b + depth * kPanel : nullptr);
        int64_t tiles = (iEnd - i0 + kRows - 1) / kRows;
        int64_t share = (depth + tiles - 1) / tiles, fetched = 0;
        for (int64_t i = i0; i < iEnd; i += kRows) {
          if (next)
            for (int64_t line = 0; line < share && fetched < depth;
                 ++line, ++fetched)
              __builtin_prefetch(next + fetched * 64, 0, 3);
          int64_t rows = std::min(kRows, iEnd - i);
          const float *a = aslice + (i / kRows) * depth * kRows;
          float *c = call.c + i * call.ldc + j;
          if (rows == kRows && cols == kPanel) {
            tile6x16(depth, a, b, c, call.ldc, load);
            continue;
          }
          if (load)
            for (int64_t r = 0; r < rows; ++r)
              std::memcpy(edge + r * kPanel, c + r * call.ldc,
                          size_t(cols) * sizeof(float));
          tile6x16(depth, a, b, edge, kPanel, load);
          for (int64_t r = 0; r < rows; ++r)
            std::memcpy(c + r * call.ldc, edge + r * kPanel,
                        size_t(cols) * sizeof(float));
        }
      }
    }
  }
#else
  (void)ctx, (void)first, (void)last;
#endif
}

} // namespace

bool dist_rt::packedSgemmAvailable() {
  static const bool available = hostSimdLevel() == SimdLevel::Avx2;
  return available;
}

size_t dist_rt::packedSgemmBytes(int64_t k, int64_t n) {
  return size_t((n + kPanel - 1) / kPanel) * size_t(k) * kPanel * sizeof(float);
}

void dist_rt::packSgemmB(const float *b, int64_t k, int64_t n,
                         int64_t rowStride, int64_t colStride, float *dst) {
  // Slice by slice of kDepth rows, panel after panel, each `depth` steps of
  // 16 values (zeros past n): a slice's panels, which the tasks run one
  // after another, lie one after another in memory, so B streams from
  // memory as one sequence (with panels of the whole depth, 48 KiB apart in
  // ViT-B/16's products, the products ran a few percent slower).
  int64_t panels = (n + kPanel - 1) / kPanel;
  for (int64_t p0 = 0; p0 < k; p0 += kDepth) {
    int64_t depth = std::min(kDepth, k - p0);
    for (int64_t panel = 0; panel < panels; ++panel) {
      float *out = dst + p0 * panels * kPanel + panel * depth * kPanel;
      int64_t j0 = panel * kPanel, cols = std::min(kPanel, n - j0);
      for (int64_t p = 0; p < depth; ++p) {
        const float *row = b + (p0 + p) * rowStride + j0 * colStride;
        for (int64_t j = 0; j < cols; ++j)
          out[p * kPanel + j] = row[j * colStride];
        for (int64_t j = cols; j < kPanel; ++j)
          out[p * kPanel + j] = 0.0f;
      }
    }
  }
}

bool dist_rt::packedSgemm(int64_t m, int64_t n, int64_t k, const float *a,
                          int64_t lda, const float *packed, float *c,
                          int64_t ldc, bool overwrite) {
  int64_t tiles = (m + kRows - 1) / kRows;
  // Packed A, one buffer per calling thread, kept for the next call.
  thread_local std::unique_ptr<float[]> apack;
  thread_local size_t apackSize = 0;
  size_t need = size_t(tiles * kRows * k);
  if (need > apackSize) {
    apack.reset(new (std::nothrow) float[need]);
    apackSize = apack ? need : 0;
    if (!apack)
      return false;
  }
  int64_t panels = (n + kPanel - 1) / kPanel;
  PackedCall call{m, n,   k,         a,           lda,   packed,
                  c, ldc, overwrite, apack.get(), tiles, panels};
  // Tasks of fewer than 2^16 multiply-adds cost more to hand off than they
  // take (blas.cpp's kMinTaskWork).
  double work = double(m) * double(n) * double(k);
  if (dist_rt_get_num_threads() > 1 && panels > 1 && work >= double(1 << 17)) {
    dist_rt_parallel_for(tiles, packTiles, &call);
    dist_rt_parallel_for(panels, panelRange, &call);
  } else {
    packTiles(&call, 0, tiles);
    panelRange(&call, 0, panels);
  }
  packedCalls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

int64_t dist_rt::packedGemmCalls() {
  return packedCalls.load(std::memory_order_relaxed);
}
