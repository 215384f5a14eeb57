//===- sgemm_packed.cpp - f32 products on weights packed once ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// C (+)= A * B where B is a constant weight packed once, at its first use,
// into panels of 16 columns (kept with the parameter file's other derived
// constants, see derivedConstant in blas.cpp): an AVX2/FMA micro-kernel of
// 6 rows by 16 columns over slices of 256 steps of depth, A packed per
// call by tiles of 6 rows (shared by the threads), the tasks cut by panels
// of C's columns, the next panel of B prefetched while a panel's tiles run;
// on AVX-512 panels of 48 columns and tiles of 8 rows (BTiles).
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
// 0.9x (docs/status.md). On AVX-512 the same scheme runs an AVX-512 tile
// of 8 rows by 48 columns (see BTiles): on an Intel Xeon (family 6 model
// 207) at one thread ViT-B/16's and BERT-base's linear layers at batch 1
// ran at 0.93-0.98 of oneDNN's sgemm on 768 columns and 1.12-1.20 on 2304
// and 3072 (where oneDNN drops to 133-141 GFLOP/s), so only products of
// 1536 columns or more run here on such hosts (packedMinColumns in
// blas.cpp).
//
// Products whose A is the constant (a convolution's filters times its
// columns, generated code's im2col path and conv.cpp's products by panels)
// run the same micro-kernel on A packed once and B packed as the tasks
// reach it, in chunks of panels read row by row (packing one panel of 16
// columns at a time read every row of B as a stream of its own), with the
// bias, the old output and the activation applied as tiles are stored
// (conv.cpp), into outputs inside padded buffers too (a tile that crosses
// rows of the image stored run by run). The libraries pack the filters
// again at every call. Measured on the AVX2 AMD EPYC at one thread, whole
// models against the same build on the libraries (6-7 alternating rounds,
// three sets): MobileNetV2 0.90-0.92x the time, EfficientNet-B0 0.93-0.95x,
// ResNet-50 0.98-1.03x (within the noise); at two threads 0.95-0.98x.
// On AVX-512 the same scheme runs tiles of 8 rows by 48 columns (tileA512),
// whose first block of rows packs each full panel of B as it reads it (a
// pass of its own waited on B); where oneDNN's sgemm then ran the product
// and the runtime a pass for the bias and ReLU6 after it, MobileNetV2 took
// 0.84-0.88x the time at one thread, 0.89-0.91x at two (Intel Xeon, family
// 6 model 207; the same executable alternating with
// DIST_RT_NO_PACKED_GEMM=1), ResNet-50 1.00-1.03x.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "simd_activation.h"

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

/// Rows of each block for m rows: at most kBlockRows, a multiple of the
/// tile's `tileRows`, blocks as even as that allows.
int64_t rowsPerBlock(int64_t m, int64_t tileRows = kRows) {
  int64_t blocks = (m + kBlockRows - 1) / kBlockRows;
  int64_t rows = (m + blocks - 1) / blocks;
  return (rows + tileRows - 1) / tileRows * tileRows;
}

/// The shape of the constant-B products' tiles on this host (packSgemmB's
/// layout follows it): 6 rows by panels of 16 columns on AVX2, 8 rows by
/// panels of 48 on AVX-512 (24 of its 32 vector registers accumulate, as
/// the AVX2 tile's 12 of 16 do; three loads of B and eight broadcasts of A
/// a step). `depth`: the steps of one slice, a panel's slice of B (16 KiB
/// and 48 KiB) staying in L1 or close while a block's tiles run over it.
/// Measured on an Intel Xeon (family 6 model 207, AVX-512) with
/// dist-gemm-bench, ViT-B/16's and BERT-base's linear layers at batch 1,
/// one thread: 8 x 48 at 150-162 GFLOP/s, 6 x 64 at 153-161, 12 x 32 at
/// 149-152 (depth 128 no better: 140-158); in L1 alone the 8 x 48 and
/// 12 x 32 tiles reach 172.
struct BTiles {
  int64_t rows, panel, depth;
};

const BTiles &bTiles() {
  static const BTiles tiles =
      dist_rt::hostSimdLevel() == dist_rt::SimdLevel::Avx512
          ? BTiles{8, 48, 256}
          : BTiles{kRows, kPanel, kDepth};
  return tiles;
}

std::atomic<int64_t> packedCalls{0};

/// Whether a product of `work` multiply-adds cut into `tasks` tasks goes to
/// the thread pool: tasks of fewer than 2^16 multiply-adds cost more to
/// hand off than they take (blas.cpp's kMinTaskWork).
bool spreads(int64_t tasks, double work) {
  return dist_rt_get_num_threads() > 1 && tasks > 1 && work >= double(1 << 17);
}

#if DIST_RT_X86

/// What a tile applies as it stores the last slice of depth (packedSgemmA's
/// epilogue): v = (old C when loading) + sum + bias[r], then v * gate(v)
/// when `gate` names one, max(v, 0) when `relu`, v clamped to [lo, hi]
/// when `clip` (NaN kept by all, as conv.cpp's activate).
struct TileEpilogue {
  /// The tile's rows' biases (zeros past the last row).
  const float *bias;
  bool relu, clip;
  float lo, hi;
  dist_rt::Gate gate = dist_rt::Gate::None;
};

/// The epilogue on one vector of row `r`.
__attribute__((target("avx2,fma"), always_inline)) inline __m256
finish(__m256 v, int64_t r, const TileEpilogue &e) {
  v = _mm256_add_ps(v, _mm256_broadcast_ss(e.bias + r));
  return dist_rt::reluClip8(v, e.relu, e.clip, e.lo, e.hi, e.gate);
}

/// The first `n` (0 to 8) lanes of `v` stored at `dst`, by 4, 2 and 1 lanes
/// (masked stores are microcoded on Zen 3).
__attribute__((target("avx2,fma"), always_inline)) inline void
storeFirst(float *dst, __m256 v, int64_t n) {
  if (n >= 8) {
    _mm256_storeu_ps(dst, v);
    return;
  }
  __m128 x = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(dst, x);
    x = _mm256_extractf128_ps(v, 1);
    dst += 4, n -= 4;
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64 *>(dst), x);
    x = _mm_movehl_ps(x, x);
    dst += 2, n -= 2;
  }
  if (n >= 1)
    _mm_store_ss(dst, x);
}

/// The first `n` (0 to 8) floats at `src` in the low lanes, zeros above
/// (masked loads are fast where masked stores are not; nothing past
/// src[n - 1] is touched).
__attribute__((target("avx2,fma"), always_inline)) inline __m256
loadFirst(const float *src, int64_t n) {
  if (n >= 8)
    return _mm256_loadu_ps(src);
  static const int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                    0,  0,  0,  0,  0,  0,  0,  0};
  __m256i mask = _mm256_loadu_si256(
      reinterpret_cast<const __m256i *>(lanes + 8 - std::max<int64_t>(n, 0)));
  return _mm256_maskload_ps(src, mask);
}

/// A tile whose columns cross rows of an image (PackedImageColumns): its
/// first column is `x0` columns into a row of `rowLen`, and each next row
/// starts `gap` floats after the last one ends.
struct RowSplit {
  int64_t x0, rowLen, gap;
};

/// buf[0..cols) = a split tile's row of C from `row`, run by run (buf
/// holds 24 floats).
__attribute__((target("avx2,fma"), always_inline)) inline void
loadRuns(const float *row, float *buf, int64_t cols, const RowSplit &s) {
  const float *at = row;
  for (int64_t q = 0, x = s.x0; q < cols;) {
    int64_t len = std::min(cols - q, s.rowLen - x);
    const float *src = at;
    float *dst = buf + q;
    int64_t left = len;
    if (left >= 8) {
      _mm256_storeu_ps(dst, _mm256_loadu_ps(src));
      dst += 8, src += 8, left -= 8;
    }
    if (left > 0)
      _mm256_storeu_ps(dst, loadFirst(src, left));
    q += len;
    at += len + s.gap;
    x = 0;
  }
}

/// Lanes [s, s + 8) of the 16 lanes (lo, hi), s in [0, 16) (lanes past
/// the 16th undefined).
__attribute__((target("avx2,fma"), always_inline)) inline __m256
lanesFrom(__m256 lo, __m256 hi, int64_t s) {
  if (s == 0)
    return lo;
  if (s == 8)
    return hi;
  __m256i idx = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                 _mm256_set1_epi32(int32_t(s)));
  __m256i within = _mm256_and_si256(idx, _mm256_set1_epi32(7));
  __m256 fromHi =
      _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(7)));
  return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, within),
                          _mm256_permutevar8x32_ps(hi, within), fromHi);
}

/// The row's `cols` values (lo, hi) stored by runs within rows of the
/// image from `row`, moved into place in registers (through memory, each
/// run's load spanned two stores and stalled: MobileNetV2's 7 x 7 layers
/// ran 20% slower into a padded output than into a plain one).
__attribute__((target("avx2,fma"), always_inline)) inline void
storeRuns(float *row, __m256 lo, __m256 hi, int64_t cols, const RowSplit &s) {
  float *at = row;
  for (int64_t q = 0, x = s.x0; q < cols;) {
    int64_t len = std::min(cols - q, s.rowLen - x);
    __m256 v = lanesFrom(lo, hi, q);
    if (len >= 8) {
      _mm256_storeu_ps(at, v);
      if (len > 8)
        storeFirst(at + 8, lanesFrom(lo, hi, q + 8), len - 8);
    } else {
      storeFirst(at, v, len);
    }
    q += len;
    at += len + s.gap;
    x = 0;
  }
}

/// row[0..cols) (cols <= 8 * kVecs) = the row's vectors (the old values
/// added when `load`), through the epilogue when there is one; by runs
/// within rows of the image when `split`.
template <int kVecs>
__attribute__((target("avx2,fma"), always_inline)) inline void
putRow(float *row, int64_t r, __m256 lo, __m256 hi, bool load,
       const TileEpilogue *e, int64_t cols, const RowSplit *split) {
  if (split) {
    alignas(32) float buf[24];
    if (load) {
      loadRuns(row, buf, cols, *split);
      lo = _mm256_add_ps(lo, _mm256_load_ps(buf));
      if (kVecs == 2)
        hi = _mm256_add_ps(hi, _mm256_load_ps(buf + 8));
    }
    if (e) {
      lo = finish(lo, r, *e);
      if (kVecs == 2)
        hi = finish(hi, r, *e);
    }
    storeRuns(row, lo, kVecs == 2 ? hi : lo, cols, *split);
    return;
  }
  if (cols == 8 * kVecs) {
    if (load) {
      lo = _mm256_add_ps(lo, _mm256_loadu_ps(row));
      if (kVecs == 2)
        hi = _mm256_add_ps(hi, _mm256_loadu_ps(row + 8));
    }
    if (e) {
      lo = finish(lo, r, *e);
      if (kVecs == 2)
        hi = finish(hi, r, *e);
    }
    _mm256_storeu_ps(row, lo);
    if (kVecs == 2)
      _mm256_storeu_ps(row + 8, hi);
    return;
  }
  int64_t nLo = std::min<int64_t>(cols, 8), nHi = cols - nLo;
  if (load) {
    lo = _mm256_add_ps(lo, loadFirst(row, nLo));
    if (kVecs == 2 && nHi > 0)
      hi = _mm256_add_ps(hi, loadFirst(row + 8, nHi));
  }
  if (e) {
    lo = finish(lo, r, *e);
    if (kVecs == 2)
      hi = finish(hi, r, *e);
  }
  storeFirst(row, lo, nLo);
  if (kVecs == 2 && nHi > 0)
    storeFirst(row + 8, hi, nHi);
}

/// C[r, j] (+)= sum over p < depth of a[p * 6 + r] * b[p * 16 + j] for the
/// tile's 6 rows and 8 * kVecs columns (A and B packed, B's steps 16 values
/// apart whatever kVecs), C's rows `ldc` apart, of which the first `rows`
/// rows and `cols` columns are stored (by runs within rows of an image when
/// `split`); `load`: add to C, else overwrite it; `e`: the epilogue, or
/// null. `b` is 32-byte aligned. C's
/// lines are prefetched at the start and read only at the end: the tiles of
/// a wide C (ViT's QKV projection, 197 x 2304) are in no cache when their
/// turn comes, and loading them first stalled the tile (the projection ran
/// at 48 GFLOP/s against OpenBLAS's 62 on Zen 3). Eight columns (kVecs = 1)
/// serve the last panel of a B of 8 or fewer columns more: a convolution's
/// 49 positions (7 x 7) as 3 x 16 + 8 instead of 4 x 16.
template <int kVecs>
__attribute__((target("avx2,fma"))) void
tileKernel(int64_t depth, const float *a, const float *b, float *c, int64_t ldc,
           bool load, const TileEpilogue *e, int64_t rows = kRows,
           int64_t cols = 8 * kVecs, const RowSplit *split = nullptr) {
  for (int64_t r = 0; r < rows; ++r) {
    __builtin_prefetch(c + r * ldc, 1, 3);
    if (kVecs == 2)
      __builtin_prefetch(c + r * ldc + kPanel - 1, 1, 3);
  }
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  c00 = c01 = c10 = c11 = c20 = c21 = _mm256_setzero_ps();
  c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
  // Unrolled by 4: in L1, on Zen 3, 73-79 GFLOP/s rolled against 87-92
  // unrolled (one core, whose FMA units peak at about 137).
#pragma GCC unroll 4
  for (int64_t p = 0; p < depth; ++p, a += kRows, b += kPanel) {
    __m256 b0 = _mm256_load_ps(b);
    __m256 b1 = kVecs == 2 ? _mm256_load_ps(b + 8) : b0;
    __m256 x = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(x, b0, c00);
    if (kVecs == 2)
      c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10);
    if (kVecs == 2)
      c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20);
    if (kVecs == 2)
      c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30);
    if (kVecs == 2)
      c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(x, b0, c40);
    if (kVecs == 2)
      c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(x, b0, c50);
    if (kVecs == 2)
      c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  putRow<kVecs>(c, 0, c00, c01, load, e, cols, split);
  if (rows > 1)
    putRow<kVecs>(c + ldc, 1, c10, c11, load, e, cols, split);
  if (rows > 2)
    putRow<kVecs>(c + 2 * ldc, 2, c20, c21, load, e, cols, split);
  if (rows > 3)
    putRow<kVecs>(c + 3 * ldc, 3, c30, c31, load, e, cols, split);
  if (rows > 4)
    putRow<kVecs>(c + 4 * ldc, 4, c40, c41, load, e, cols, split);
  if (rows > 5)
    putRow<kVecs>(c + 5 * ldc, 5, c50, c51, load, e, cols, split);
}

/// The full tile without an epilogue (the constant-B products).
__attribute__((target("avx2,fma"))) inline void
tile6x16(int64_t depth, const float *a, const float *b, float *c, int64_t ldc,
         bool load) {
  tileKernel<2>(depth, a, b, c, ldc, load, nullptr);
}

/// One step of depth of tile512: acc[r] += a[r] * b's V vectors.
template <int R, int V>
__attribute__((target("avx512f"), always_inline)) inline void
step512(const float *a, const float *b, __m512 (&acc)[R][V]) {
  __m512 bv[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v)
    bv[v] = _mm512_load_ps(b + 16 * v);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    __m512 x = _mm512_set1_ps(a[r]);
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
  }
}

/// C[r, j] (+)= sum over p < depth of a[p * R + r] * b[p * W + j] for R
/// rows and 16V columns (V 512-bit vectors a row; W >= 16V, the panel's
/// width, so that the first vectors of a wider panel serve its last
/// columns), C's rows `ldc` apart, all stored; `load`: add to C, else
/// overwrite it. `b` is 64-byte aligned. As tileKernel, C's lines are
/// prefetched first and read last; `fetchLines` lines from `fetch` are
/// prefetched as it runs.
template <int R, int V, int W = 16 * V>
__attribute__((target("avx512f"))) void
tile512(int64_t depth, const float *a, const float *b, float *c, int64_t ldc,
        bool load, const char *fetch, int64_t fetchLines) {
  for (int64_t r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      __builtin_prefetch(c + r * ldc + 16 * v + (v + 1 == V ? 15 : 0), 1, 3);
  __m512 acc[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      acc[r][v] = _mm512_setzero_ps();
  // One line of `fetch` every 4 steps (a burst of them at the start of
  // the tile filled the line fill buffers and stalled).
  int64_t p = 0;
  for (; p + 4 <= depth; p += 4) {
    if (fetchLines > 0) {
      __builtin_prefetch(fetch, 0, 3);
      fetch += 64, --fetchLines;
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q, a += R, b += W)
      step512<R, V>(a, b, acc);
  }
  for (; p < depth; ++p, a += R, b += W)
    step512<R, V>(a, b, acc);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    float *row = c + r * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      __m512 x = acc[r][v];
      if (load)
        x = _mm512_add_ps(x, _mm512_loadu_ps(row + 16 * v));
      _mm512_storeu_ps(row + 16 * v, x);
    }
  }
}

/// One full tile of the constant-B products in the host's shape (bTiles).
/// An AVX-512 tile prefetches up to `fetchLines` lines from `fetch` as it
/// runs; returns how many it did. `cols`: the columns of C that matter, of
/// which an AVX-512 tile computes only the vectors they need (the last
/// panel of 256 columns is 16 of 48: GPT-style products of 256 columns ran
/// at 0.84 of oneDNN computing all 48).
inline int64_t bTile(const BTiles &t, int64_t depth, const float *a,
                     const float *b, float *c, int64_t ldc, bool load,
                     const char *fetch = nullptr, int64_t fetchLines = 0,
                     int64_t cols = 48) {
  if (t.panel == kPanel) {
    tile6x16(depth, a, b, c, ldc, load);
    return 0;
  }
  int64_t lines = std::min(fetchLines, depth / 4);
  if (cols > 32)
    tile512<8, 3>(depth, a, b, c, ldc, load, fetch, lines);
  else if (cols > 16)
    tile512<8, 2, 48>(depth, a, b, c, ldc, load, fetch, lines);
  else
    tile512<8, 1, 48>(depth, a, b, c, ldc, load, fetch, lines);
  return lines;
}

/// Lanes [s, s + 16) of a row's vectors `v` (s < 16 * V; lanes past the
/// row's last vector undefined).
template <int V>
__attribute__((target("avx512f"), always_inline)) inline __m512
lanes512(const __m512 (&v)[V], int64_t s) {
  // The vectors picked by constant indices, so that the tile's
  // accumulators stay in registers.
  int64_t q = s / 16, shift = s % 16;
  __m512 first = v[0], second = v[V > 1 ? 1 : 0];
  if (V > 1 && q == 1)
    first = v[V > 1 ? 1 : 0], second = v[V - 1];
  if (V > 2 && q == 2)
    first = v[V - 1];
  if (shift == 0)
    return first;
  __m512i idx = _mm512_add_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(int32_t(shift)));
  return _mm512_permutex2var_ps(first, idx, second);
}

/// The lines of B's rows that the next chunk of a constant-A product packs
/// (blockPanelRange), prefetched into L2 a few at a time as the current
/// chunk's tiles run: packing a chunk otherwise waited on B (MobileNetV2's
/// 144 -> 24 layer on 56 x 56, B 1.8 MB: a third of the call's samples in
/// packChunk512's loads).
struct LineFetch {
  /// The row being fetched, its next line, lines per row, row stride.
  const char *row;
  int64_t line, lines, rowBytes;
  /// Lines left, and lines per four steps of a tile.
  int64_t left, perFourSteps;

  void issue(int64_t n) {
    for (; n > 0 && left > 0; --n, --left) {
      __builtin_prefetch(row + line * 64, 0, 2);
      if (++line == lines)
        line = 0, row += rowBytes;
    }
  }

  /// A share of each fetch there is.
  static void issueBoth(LineFetch *a, LineFetch *b) {
    if (a)
      a->issue(a->perFourSteps);
    if (b)
      b->issue(b->perFourSteps);
  }
};

/// The first `n` (at least 1) lanes of `x` stored at `dst` (row `r` of a
/// tile): the old values added when `load`, then the epilogue `e`, if any.
__attribute__((target("avx512f"), always_inline)) inline void
put512(float *dst, __m512 x, int64_t n, bool load, const TileEpilogue *e,
       int64_t r) {
  __mmask16 mask = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
  if (load)
    x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, dst));
  if (e)
    x = dist_rt::reluClip16(_mm512_add_ps(x, _mm512_set1_ps(e->bias[r])),
                            e->relu, e->clip, e->lo, e->hi, e->gate);
  _mm512_mask_storeu_ps(dst, mask, x);
}

/// Lanes [16F + shift, 16F + shift + 16) of each of a tile's `rows` rows
/// of accumulators (vectors F and F + 1; `idx` the lanes' indices, shift
/// + 0 to 15) stored at `dst` under `mask`, rows `ldc` apart.
template <int F, int V>
__attribute__((target("avx512f"), always_inline)) inline void
storePiece(const __m512 (&acc)[8][V], int64_t rows, float *dst, int64_t ldc,
           __mmask16 mask, __m512i idx) {
  constexpr int G = F + 1 < V ? F + 1 : F;
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r)
    if (r < rows)
      _mm512_mask_storeu_ps(dst + r * ldc, mask,
                            _mm512_permutex2var_ps(acc[r][F], idx, acc[r][G]));
}

/// The tileKernel of the constant-A products on AVX-512: C[r, j] (+)= sum
/// over p < depth of a[p * 8 + r] * b[p * 48 + j] for the tile's `rows`
/// (at most 8) rows and `cols` (at most 16 * V) columns, then the epilogue
/// `e` when there is one; B's steps 48 values apart (a panel of bTiles'
/// width, `b` 64-byte aligned), C's rows `ldc` apart, by runs within rows
/// of an image when `split`. Partial rows and columns are stored with
/// masks (fast on AVX-512, unlike AVX2's masked stores on Zen 3).
template <int V>
__attribute__((target("avx512f"))) void
tileA512(int64_t depth, const float *a, const float *b, float *c, int64_t ldc,
         bool load, const TileEpilogue *e, int64_t rows, int64_t cols,
         const RowSplit *split, LineFetch *fetch, LineFetch *fetchA,
         const float *src = nullptr, int64_t srcStep = 0) {
  for (int64_t r = 0; r < rows; ++r)
    for (int v = 0; v < V; ++v)
      __builtin_prefetch(c + r * ldc + 16 * v, 1, 3);
  __m512 acc[8][V];
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      acc[r][v] = _mm512_setzero_ps();
  int64_t p = 0;
  if (src) {
    // The panel packed as the tile reads it (see blockPanelRange).
    float *dst = const_cast<float *>(b);
    for (; p < depth; ++p, a += 8, dst += 48, src += srcStep) {
      if ((p & 3) == 0)
        LineFetch::issueBoth(fetch, fetchA);
      __m512 bv[V];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        bv[v] = _mm512_loadu_ps(src + 16 * v);
        _mm512_store_ps(dst + 16 * v, bv[v]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) {
        __m512 x = _mm512_set1_ps(a[r]);
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v)
          acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
      }
    }
  }
  if ((fetch && fetch->left > 0) || (fetchA && fetchA->left > 0)) {
    for (; p + 4 <= depth; p += 4) {
      LineFetch::issueBoth(fetch, fetchA);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q, a += 8, b += 48)
        step512<8, V>(a, b, acc);
    }
  }
#pragma GCC unroll 4
  for (; p < depth; ++p, a += 8, b += 48)
    step512<8, V>(a, b, acc);
  // An image's runs within the tile's rows, alike in every row: where C's
  // old values are not read, the epilogue goes over every accumulator
  // whole, then piece by piece of each run (a vector's worth at most) the
  // tile's rows take the piece's lanes and store them. Finding the runs,
  // picking the lanes and applying the epilogue again in every row made
  // the tiles that cross a 14 x 14 or 28 x 28 image's rows 1.4x to 1.8x
  // slower than plain ones (MobileNetV2's expansions, written into the
  // padded inputs of its depthwise layers, with depths of 16 to 64); now
  // 1.08x to 1.14x (one thread, Intel Xeon family 6 model 207, the two
  // alternated in one process), MobileNetV2 1.09x to 1.12x faster with
  // the residual Adds folded too (eight alternated runs).
  if (split && !load) {
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v)
        if (e && r < rows)
          acc[r][v] = dist_rt::reluClip16(
              _mm512_add_ps(acc[r][v], _mm512_set1_ps(e->bias[r])), e->relu,
              e->clip, e->lo, e->hi, e->gate);
    const __m512i iota =
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t q = 0, x = split->x0, at = 0; q < cols;) {
      int64_t len = std::min(cols - q, split->rowLen - x);
      for (int64_t s = 0; s < len; s += 16) {
        int64_t n = len - s, from = q + s;
        __mmask16 mask = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
        __m512i idx =
            _mm512_add_epi32(iota, _mm512_set1_epi32(int32_t(from % 16)));
        float *dst = c + at + s;
        // The piece's lanes start in vector from / 16.
        switch (from / 16) {
        case 0:
          storePiece<0>(acc, rows, dst, ldc, mask, idx);
          break;
        case 1:
          storePiece<(V > 1 ? 1 : 0)>(acc, rows, dst, ldc, mask, idx);
          break;
        default:
          storePiece<(V > 2 ? 2 : 0)>(acc, rows, dst, ldc, mask, idx);
          break;
        }
      }
      q += len;
      at += len + split->gap;
      x = 0;
    }
    return;
  }
  // Rows by constant indices (see lanes512).
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) {
    if (r >= rows)
      break;
    float *row = c + r * ldc;
    if (!split) {
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v)
        if (16 * v < cols)
          put512(row + 16 * v, acc[r][v], cols - 16 * v, load, e, r);
      continue;
    }
    float *at = row;
    for (int64_t q = 0, x = split->x0; q < cols;) {
      int64_t len = std::min(cols - q, split->rowLen - x);
      for (int64_t s = 0; s < len; s += 16)
        put512(at + s, lanes512<V>(acc[r], q + s), len - s, load, e, r);
      q += len;
      at += len + split->gap;
      x = 0;
    }
  }
}

/// The constant-A products' last panel where it has fewer than 16 columns
/// (an image of 7 x 7 or 14 x 14 positions is 48 + 1 or 4 x 48 + 4): 16
/// rows (two tiles of A, `a0` and `a1`, the same when `rows` <= 8) as
/// the lanes of a vector, one vector per column of B (NC >= cols, B's
/// columns past `cols` zeros), two sums per column (even and odd steps)
/// for NC <= 4, then C[r, j] (+)= the sums and the epilogue, element by
/// element, column j at its place in the image's rows when `split`. A
/// tile of 8 rows by one vector did 16 times the multiply-adds for one
/// column (ResNet-50's and MobileNetV2's 7 x 7 layers).
template <int NC>
__attribute__((target("avx512f,avx512dq"))) void
tileA512Narrow(int64_t depth, const float *a0, const float *a1, const float *b,
               float *c, int64_t ldc, bool load, const TileEpilogue *e,
               int64_t rows, int64_t cols, const RowSplit *split) {
  constexpr int Sums = NC <= 4 ? 2 : 1;
  __m512 acc[Sums][NC];
#pragma GCC unroll 2
  for (int h = 0; h < Sums; ++h)
#pragma GCC unroll 16
    for (int j = 0; j < NC; ++j)
      acc[h][j] = _mm512_setzero_ps();
  int64_t p = 0;
  for (; p + Sums <= depth; p += Sums) {
#pragma GCC unroll 2
    for (int h = 0; h < Sums; ++h) {
      int64_t q = p + h;
      __m512 av = _mm512_insertf32x8(
          _mm512_castps256_ps512(_mm256_loadu_ps(a0 + q * 8)),
          _mm256_loadu_ps(a1 + q * 8), 1);
#pragma GCC unroll 16
      for (int j = 0; j < NC; ++j)
        acc[h][j] =
            _mm512_fmadd_ps(av, _mm512_set1_ps(b[q * 48 + j]), acc[h][j]);
    }
  }
  for (; p < depth; ++p) {
    __m512 av =
        _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(a0 + p * 8)),
                           _mm256_loadu_ps(a1 + p * 8), 1);
#pragma GCC unroll 16
    for (int j = 0; j < NC; ++j)
      acc[0][j] = _mm512_fmadd_ps(av, _mm512_set1_ps(b[p * 48 + j]), acc[0][j]);
  }
  alignas(64) float sums[NC][16];
#pragma GCC unroll 16
  for (int j = 0; j < NC; ++j)
    _mm512_store_ps(sums[j], Sums == 2
                                 ? _mm512_add_ps(acc[0][j], acc[Sums - 1][j])
                                 : acc[0][j]);
  for (int64_t j = 0; j < cols; ++j) {
    int64_t at = j;
    if (split)
      at += (split->x0 + j) / split->rowLen * split->gap;
    for (int64_t r = 0; r < rows; ++r) {
      float *dst = c + r * ldc + at;
      float v = sums[j][r];
      if (load)
        v = *dst + v;
      if (e)
        v = dist_rt::reluClip1(v + e->bias[r], e->relu, e->clip, e->lo, e->hi,
                               e->gate);
      *dst = v;
    }
  }
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
  /// A packed by tiles of R = shape.rows rows: the slice of depth d
  /// starting at p0 of tile t at apack + p0 * tiles * R + t * d * R, R
  /// values (the tile's rows, those past m repeating the last) per step of
  /// depth.
  float *apack;
  int64_t tiles;
  /// Panels of B (see packSgemmB for the layout).
  int64_t panels;
  /// The tiles' shape (bTiles).
  BTiles shape;
};

#if DIST_RT_X86
/// dst[p * stride + r] = rows[r][p] for p < depth, r < n (n <= 8): eight
/// steps of depth at a time as an 8 x 8 transpose (rows past n read as
/// row n - 1 and not stored), each column's first n values stored, then
/// the rest one by one. Scalar stores, one per value, were 2% of
/// ViT-B/16's time.
__attribute__((target("avx2,fma"))) void packRows(const float *const *rows,
                                                  int64_t n, int64_t depth,
                                                  float *dst, int64_t stride) {
  static const int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                    0,  0,  0,  0,  0,  0,  0,  0};
  const __m256i first =
      _mm256_loadu_si256(reinterpret_cast<const __m256i *>(lanes + 8 - n));
  const float *in[8];
  for (int64_t r = 0; r < 8; ++r)
    in[r] = rows[std::min(r, n - 1)];
  int64_t p = 0;
  for (; p + 8 <= depth; p += 8) {
    __m256 r0 = _mm256_loadu_ps(in[0] + p), r1 = _mm256_loadu_ps(in[1] + p);
    __m256 r2 = _mm256_loadu_ps(in[2] + p), r3 = _mm256_loadu_ps(in[3] + p);
    __m256 r4 = _mm256_loadu_ps(in[4] + p), r5 = _mm256_loadu_ps(in[5] + p);
    __m256 r6 = _mm256_loadu_ps(in[6] + p), r7 = _mm256_loadu_ps(in[7] + p);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44),
           u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44),
           u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44),
           u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44),
           u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    // Column q of the 8 x 8 block: the steps p + q of the eight rows.
    const __m256 cols[8] = {_mm256_permute2f128_ps(u0, u4, 0x20),
                            _mm256_permute2f128_ps(u1, u5, 0x20),
                            _mm256_permute2f128_ps(u2, u6, 0x20),
                            _mm256_permute2f128_ps(u3, u7, 0x20),
                            _mm256_permute2f128_ps(u0, u4, 0x31),
                            _mm256_permute2f128_ps(u1, u5, 0x31),
                            _mm256_permute2f128_ps(u2, u6, 0x31),
                            _mm256_permute2f128_ps(u3, u7, 0x31)};
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q)
      _mm256_maskstore_ps(dst + (p + q) * stride, first, cols[q]);
  }
  for (; p < depth; ++p)
    for (int64_t r = 0; r < n; ++r)
      dst[p * stride + r] = rows[r][p];
}
#endif

/// Packs tiles [first, last) of A for every slice of depth.
void packTiles(void *ctx, int64_t first, int64_t last) {
#if DIST_RT_X86
  const PackedCall &call = *static_cast<const PackedCall *>(ctx);
  const int64_t tileRows = call.shape.rows, sliceDepth = call.shape.depth;
  for (int64_t t = first; t < last; ++t)
    for (int64_t p0 = 0; p0 < call.k; p0 += sliceDepth) {
      int64_t depth = std::min(sliceDepth, call.k - p0);
      const float *rows[16];
      for (int64_t r = 0; r < tileRows; ++r)
        rows[r] =
            call.a + std::min(t * tileRows + r, call.m - 1) * call.lda + p0;
      float *dst =
          call.apack + p0 * call.tiles * tileRows + t * depth * tileRows;
      for (int64_t r0 = 0; r0 < tileRows; r0 += 8)
        packRows(rows + r0, std::min<int64_t>(8, tileRows - r0), depth,
                 dst + r0, tileRows);
    }
#else
  (void)ctx, (void)first, (void)last;
#endif
}

/// Panels [first, last) of C's columns for every row: by slices of depth,
/// blocks of rows (rowsPerBlock), panels, then tiles, in the host's shape
/// (bTiles). Tiles at the bottom or right edge run on a local tile and copy
/// back what lies in C.
void panelRange(void *ctx, int64_t first, int64_t last) {
#if DIST_RT_X86
  const PackedCall &call = *static_cast<const PackedCall *>(ctx);
  const BTiles &shape = call.shape;
  const int64_t tileRows = shape.rows, width = shape.panel;
  alignas(64) float edge[8 * 48];
  int64_t blockRows = rowsPerBlock(call.m, tileRows);
  for (int64_t p0 = 0; p0 < call.k; p0 += shape.depth) {
    int64_t depth = std::min(shape.depth, call.k - p0);
    bool load = !call.overwrite || p0 > 0;
    const float *aslice = call.apack + p0 * call.tiles * tileRows;
    const float *bslice = call.packed + p0 * call.panels * width;
    for (int64_t i0 = 0; i0 < call.m; i0 += blockRows) {
      int64_t iEnd = std::min(call.m, i0 + blockRows);
      for (int64_t panel = first; panel < last; ++panel) {
        const float *b = bslice + panel * depth * width;
        int64_t j = panel * width, cols = std::min(width, call.n - j);
        // The next panel's slice of B (right after this one's) is
        // prefetched a share per tile, so that it comes from memory while
        // this one's tiles run on theirs from L1.
        const char *next = reinterpret_cast<const char *>(
            panel + 1 < last ? b + depth * width : nullptr);
        int64_t lines = depth * width / 16;
        int64_t tiles = (iEnd - i0 + tileRows - 1) / tileRows;
        int64_t share = (lines + tiles - 1) / tiles, fetched = 0;
        for (int64_t i = i0; i < iEnd; i += tileRows) {
          int64_t rows = std::min(tileRows, iEnd - i);
          const float *a = aslice + (i / tileRows) * depth * tileRows;
          float *c = call.c + i * call.ldc + j;
          bool full = rows == tileRows && cols == width;
          // An AVX-512 tile prefetches its share as it runs (a burst of
          // them before the tile filled the line fill buffers and stalled:
          // ViT's and BERT's products ran at 135-148 GFLOP/s against
          // 150-162); an AVX2 tile's share goes first.
          int64_t want = next ? std::min(share, lines - fetched) : 0;
          const char *fetch = want > 0 ? next + fetched * 64 : nullptr;
          fetched += want;
          if (width == kPanel)
            for (int64_t line = 0; line < want; ++line)
              __builtin_prefetch(fetch + line * 64, 0, 3);
          if (full) {
            int64_t done =
                bTile(shape, depth, a, b, c, call.ldc, load, fetch, want);
            for (int64_t line = done; line < want && width != kPanel; ++line)
              __builtin_prefetch(fetch + line * 64, 0, 3);
            continue;
          }
          if (load)
            for (int64_t r = 0; r < rows; ++r)
              std::memcpy(edge + r * width, c + r * call.ldc,
                          size_t(cols) * sizeof(float));
          int64_t done =
              bTile(shape, depth, a, b, edge, width, load, fetch, want, cols);
          for (int64_t line = done; line < want && width != kPanel; ++line)
            __builtin_prefetch(fetch + line * 64, 0, 3);
          for (int64_t r = 0; r < rows; ++r)
            std::memcpy(c + r * call.ldc, edge + r * width,
                        size_t(cols) * sizeof(float));
        }
      }
    }
  }
#else
  (void)ctx, (void)first, (void)last;
#endif
}

/// A constant A packed once and B packed per call (packedSgemmA): one task
/// is a run of (block of rows, panel) pairs, block-major, so that a thread
/// works panel after panel of one block while that block's slice of A
/// stays in L2.
struct PackedACall {
  int64_t m, n, k;
  /// A packed by packSgemmA (the layout of PackedCall::apack) for
  /// `tiles` tiles of shape.rows rows; this call's rows start at tile
  /// `firstTile`.
  const float *apack;
  int64_t tiles, firstTile;
  const float *b;
  int64_t ldb;
  float *c;
  int64_t ldc;
  bool overwrite;
  const dist_rt::PackedEpilogue *epilogue;
  /// C's columns as positions [col0, col0 + n) of an image whose rows of
  /// rowLen positions lie rowStride apart in C (c at col0's place; B's
  /// columns stay contiguous); a plain C when rowLen is 0.
  int64_t col0, rowLen, rowStride;
  int64_t blockRows, panels;
  /// The tiles' shape (bTiles: the constant-B products' on this host).
  BTiles shape;
};

/// B's panels one chunk packs at most: 128 KiB at a full slice of depth,
/// more panels at shallower ones (every panel of a 16-deep B of 2048
/// columns), in L2 while the block's tiles run over them.
constexpr int64_t kChunkFloats = 32 * 1024;
/// The widest panel (AVX-512's, bTiles).
constexpr int64_t kMaxPanel = 48;
/// Panels of a chunk at most (at the 8 steps of depth a product has at the
/// least here, kChunkFloats hold 256).
constexpr int64_t kMaxChunkPanels = 256;

/// Depths up to this many steps run the tiles of a chunk row after row of
/// tiles (each tile's 6 rows of C written left to right over the chunk's
/// panels) rather than panel after panel: with so few steps per tile the
/// stores of C are most of the work, and 6 rows streaming to memory go
/// faster than a block's 96-256 rows advancing 64 bytes each (MobileNetV2's
/// 16 -> 96 layer on 112 x 112, dist-conv-bench, Zen 3, one thread: 21-25
/// GFLOP/s panel after panel, 32-49 with chunks in this order; the noise of
/// that machine is wide).
constexpr int64_t kShallowDepth = 64;

/// Packs the panels of B that start at its column `j0` and are `widths`
/// columns wide (16 or fewer, one after another) over `depth` steps from
/// `src` (rows ldb apart), each `depth` steps of 16 values (zeros past its
/// width); every row of B read left to right.
#if DIST_RT_X86
__attribute__((target("avx2,fma")))
#endif
void packChunk(const float *src, int64_t ldb, int64_t depth,
               const int64_t *widths, int64_t panels, float *dst) {
#if DIST_RT_X86
  for (int64_t p = 0; p < depth; ++p, src += ldb) {
    float *out = dst + p * kPanel;
    const float *in = src;
    for (int64_t q = 0; q < panels; ++q, out += depth * kPanel) {
      int64_t w = widths[q];
      if (w == kPanel) {
        _mm256_store_ps(out, _mm256_loadu_ps(in));
        _mm256_store_ps(out + 8, _mm256_loadu_ps(in + 8));
      } else {
        std::memcpy(out, in, size_t(w) * sizeof(float));
        std::fill(out + w, out + kPanel, 0.0f);
      }
      in += w;
    }
  }
#else
  (void)src, (void)ldb, (void)depth, (void)widths, (void)panels, (void)dst;
#endif
}

/// packChunk for AVX-512's panels of 48 columns (`widths` 48 or fewer).
#if DIST_RT_X86
__attribute__((target("avx512f")))
#endif
void packChunk512(const float *src, int64_t ldb, int64_t depth,
                  const int64_t *widths, int64_t panels, float *dst) {
#if DIST_RT_X86
  for (int64_t p = 0; p < depth; ++p, src += ldb) {
    float *out = dst + p * kMaxPanel;
    const float *in = src;
    for (int64_t q = 0; q < panels; ++q, out += depth * kMaxPanel) {
      int64_t w = widths[q];
#pragma GCC unroll 3
      for (int64_t v = 0; v < 3; ++v) {
        int64_t n = std::clamp<int64_t>(w - 16 * v, 0, 16);
        __mmask16 mask = __mmask16((uint32_t(1) << n) - 1);
        _mm512_store_ps(out + 16 * v, _mm512_maskz_loadu_ps(mask, in + 16 * v));
      }
      in += w;
    }
  }
#else
  (void)src, (void)ldb, (void)depth, (void)widths, (void)panels, (void)dst;
#endif
}

/// Sets to +0 the `gap` floats after each image row that ends among a
/// tile's `cols` columns (the first `x0` positions into a row of `rowLen`),
/// for its `rows` rows of C (`ldc` apart), while their lines are in cache:
/// a padded buffer's borders (DIST_RT_GEMM_ZERO_GAPS; loops of their own
/// stored one element to a line, 4% of MobileNetV2). A masked store each
/// (gaps are a border's 1 or 2 columns; as loops GCC made them memset
/// calls, as slow as the loops were).
#if DIST_RT_X86
__attribute__((target("avx2,fma")))
#endif
void zeroGaps(float *c, int64_t ldc, int64_t rows, int64_t cols, int64_t x0,
              int64_t rowLen, int64_t gap) {
#if DIST_RT_X86
  static const int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                    0,  0,  0,  0,  0,  0,  0,  0};
  __m256i mask = _mm256_loadu_si256(
      reinterpret_cast<const __m256i *>(lanes + 8 - std::min<int64_t>(gap, 8)));
  for (int64_t q = rowLen - 1 - x0, k = 0; q < cols; q += rowLen, ++k)
    for (int64_t r = 0; r < rows; ++r) {
      float *at = c + r * ldc + q + k * gap + 1;
      _mm256_maskstore_ps(at, mask, _mm256_setzero_ps());
      if (gap > 8)
        std::fill_n(at + 8, gap - 8, 0.0f);
    }
#else
  for (int64_t q = rowLen - 1 - x0, k = 0; q < cols; q += rowLen, ++k)
    for (int64_t r = 0; r < rows; ++r)
      std::fill_n(c + r * ldc + q + k * gap + 1, gap, 0.0f);
#endif
}

/// Pairs [first, last) of (block, panel), block-major: for each block's
/// run of panels, slice by slice of depth, chunks of panels of B packed
/// (packChunk) into a buffer of the thread's, then the block's tiles over
/// them; the epilogue, if any, on the last slice.
#if DIST_RT_X86
__attribute__((target("avx2,fma")))
#endif
void blockPanelRange(void *ctx, int64_t first, int64_t last) {
#if DIST_RT_X86
  const PackedACall &call = *static_cast<const PackedACall *>(ctx);
  const int64_t tileRows = call.shape.rows, width = call.shape.panel;
  // The thread's chunk buffer, kept for the next call; without memory for
  // it, chunks of one panel on the stack.
  thread_local std::unique_ptr<float[]> chunkBuffer;
  alignas(64) float onStack[kDepth * kMaxPanel];
  if (!chunkBuffer)
    chunkBuffer.reset(new (std::nothrow) float[kChunkFloats + 16]);
  float *chunk = onStack;
  int64_t chunkFloats = kDepth * width;
  if (chunkBuffer) {
    auto addr = reinterpret_cast<uintptr_t>(chunkBuffer.get());
    chunk = chunkBuffer.get() + (64 - addr % 64) % 64 / sizeof(float);
    chunkFloats = kChunkFloats;
  }
  const dist_rt::PackedEpilogue *ep = call.epilogue;
  for (int64_t t = first; t < last;) {
    int64_t block = t / call.panels, runFirst = t % call.panels;
    int64_t runEnd = std::min(call.panels, runFirst + (last - t));
    t += runEnd - runFirst;
    int64_t i0 = block * call.blockRows;
    int64_t iEnd = std::min(call.m, i0 + call.blockRows);
    for (int64_t p0 = 0; p0 < call.k; p0 += kDepth) {
      int64_t depth = std::min(kDepth, call.k - p0);
      bool load = !call.overwrite || p0 > 0;
      bool lastSlice = p0 + depth >= call.k;
      const float *aslice = call.apack + p0 * call.tiles * tileRows +
                            call.firstTile * depth * tileRows;
      int64_t perChunk = std::clamp<int64_t>(chunkFloats / (depth * width), 1,
                                             kMaxChunkPanels);
      for (int64_t c0 = runFirst; c0 < runEnd; c0 += perChunk) {
        int64_t c1 = std::min(runEnd, c0 + perChunk);
        int64_t j0 = c0 * width;
        // Each panel's width, place in C and, for an image, its first
        // column's place in its row (one division a chunk).
        int64_t offsets[kMaxChunkPanels], widths[kMaxChunkPanels],
            xs[kMaxChunkPanels];
        int64_t x = 0, offset = j0, firstX = 0;
        if (call.rowLen > 0) {
          firstX = call.col0 % call.rowLen;
          int64_t q = call.col0 + j0;
          x = q % call.rowLen;
          offset =
              (q / call.rowLen - call.col0 / call.rowLen) * call.rowStride + x -
              firstX;
        }
        for (int64_t panel = c0; panel < c1; ++panel) {
          int64_t w = std::min(width, call.n - panel * width);
          widths[panel - c0] = w;
          offsets[panel - c0] = offset;
          xs[panel - c0] = x;
          offset += w, x += w;
          while (call.rowLen > 0 && x >= call.rowLen)
            x -= call.rowLen, offset += call.rowStride - call.rowLen;
        }
        // On AVX-512 the full panels are packed by the first block of rows'
        // tiles as they read them (packing first, in a pass of its own,
        // waited on B: a third of the tiles' time where a block has few
        // rows, as MobileNetV2's 24 on 56 x 56), the last, narrower one
        // here.
        if (width == kPanel)
          packChunk(call.b + p0 * call.ldb + j0, call.ldb, depth, widths,
                    c1 - c0, chunk);
        else if (widths[c1 - c0 - 1] < width)
          packChunk512(call.b + p0 * call.ldb + (c1 - 1) * width, call.ldb,
                       depth, widths + (c1 - c0 - 1), 1,
                       chunk + (c1 - c0 - 1) * depth * width);
        // The next chunk's lines of B, fetched as this chunk's tiles run.
        LineFetch lineFetch{}, *fetch = nullptr;
        if (width != kPanel && c1 < runEnd) {
          int64_t from = c1 * width;
          int64_t to =
              std::min(call.n, std::min(runEnd, c1 + perChunk) * width);
          const char *first =
              reinterpret_cast<const char *>(call.b + p0 * call.ldb + from);
          // Whole lines from the one holding the first column.
          int64_t skew = reinterpret_cast<uintptr_t>(first) % 64;
          int64_t lines = (skew + (to - from) * 4 + 63) / 64;
          int64_t tiles = (c1 - c0) * ((iEnd - i0 + tileRows - 1) / tileRows);
          int64_t total = lines * depth;
          lineFetch = LineFetch{
              first - skew,
              0,
              lines,
              call.ldb * 4,
              total,
              std::max<int64_t>(1, (total * 4 + tiles * depth - 1) /
                                       std::max<int64_t>(1, tiles * depth))};
          fetch = &lineFetch;
        }
        // One tile: rows [i, i + tileRows) by the chunk's panel `panel`.
        auto runTile = [&](int64_t i,
                           int64_t panel) __attribute__((always_inline)) {
          int64_t rows = std::min(tileRows, iEnd - i);
          int64_t cols = widths[panel - c0];
          const float *a = aslice + (i / tileRows) * depth * tileRows;
          const float *b = chunk + (panel - c0) * depth * width;
          float *c = call.c + i * call.ldc + offsets[panel - c0];
          // A last panel of fewer than 16 columns on AVX-512: 16 rows at a
          // time (tileA512Narrow), the tile of the pair's first 8.
          bool narrow = width != kPanel && cols < 16;
          if (narrow) {
            if ((i - i0) % 16 != 0)
              return;
            rows = std::min<int64_t>(16, iEnd - i);
          }
          float bias[16] = {};
          TileEpilogue e{bias, false, false, 0.0f, 0.0f};
          const TileEpilogue *te = nullptr;
          if (ep && lastSlice) {
            for (int64_t r = 0; r < rows && ep->bias; ++r)
              bias[r] = ep->bias[i + r];
            e = TileEpilogue{bias,   ep->relu, ep->clip,
                             ep->lo, ep->hi,   ep->gate};
            te = &e;
          }
          // The next tile's slice of A (after this one's), fetched as this
          // tile runs where it comes next and from memory: a block's first
          // panel, panel after panel (ResNet-50's filters, 100 MB, stream
          // from memory at every inference).
          LineFetch aFetch{}, *fetchA = nullptr;
          if (width != kPanel && depth > kShallowDepth && panel == c0 &&
              i + tileRows < iEnd) {
            int64_t lines = depth * tileRows * 4 / 64;
            aFetch = LineFetch{
                reinterpret_cast<const char *>(a + depth * tileRows),
                0,
                lines,
                0,
                lines,
                std::max<int64_t>(1, (lines * 4 + depth - 1) / depth)};
            fetchA = &aFetch;
          }
          RowSplit split{xs[panel - c0], call.rowLen,
                         call.rowStride - call.rowLen};
          const RowSplit *sp = call.rowLen > 0 && split.x0 + cols > call.rowLen
                                   ? &split
                                   : nullptr;
          if (narrow) {
            const float *a1 = rows > tileRows ? a + depth * tileRows : a;
            if (cols == 1)
              tileA512Narrow<1>(depth, a, a1, b, c, call.ldc, load, te, rows,
                                cols, sp);
            else if (cols <= 2)
              tileA512Narrow<2>(depth, a, a1, b, c, call.ldc, load, te, rows,
                                cols, sp);
            else if (cols <= 4)
              tileA512Narrow<4>(depth, a, a1, b, c, call.ldc, load, te, rows,
                                cols, sp);
            else if (cols <= 8)
              tileA512Narrow<8>(depth, a, a1, b, c, call.ldc, load, te, rows,
                                cols, sp);
            else
              tileA512Narrow<15>(depth, a, a1, b, c, call.ldc, load, te, rows,
                                 cols, sp);
          } else if (width != kPanel) {
            if (cols == width && i == i0)
              tileA512<3>(depth, a, b, c, call.ldc, load, te, rows, cols, sp,
                          fetch, fetchA, call.b + p0 * call.ldb + panel * width,
                          call.ldb);
            else if (cols > 32)
              tileA512<3>(depth, a, b, c, call.ldc, load, te, rows, cols, sp,
                          fetch, fetchA);
            else if (cols > 16)
              tileA512<2>(depth, a, b, c, call.ldc, load, te, rows, cols, sp,
                          fetch, fetchA);
            else
              tileA512<1>(depth, a, b, c, call.ldc, load, te, rows, cols, sp,
                          fetch, fetchA);
          } else if (cols > 8) {
            tileKernel<2>(depth, a, b, c, call.ldc, load, te, rows, cols, sp);
          } else {
            tileKernel<1>(depth, a, b, c, call.ldc, load, te, rows, cols, sp);
          }
          // The gaps after the image's rows that end in this tile, while
          // their lines are in cache (a padded buffer's borders: loops of
          // their own stored an element to a line, 4% of MobileNetV2).
          if (te && ep->zeroGaps && call.rowLen > 0)
            zeroGaps(c, call.ldc, rows, cols, xs[panel - c0], call.rowLen,
                     call.rowStride - call.rowLen);
        };
        if (depth <= kShallowDepth) {
          for (int64_t i = i0; i < iEnd; i += tileRows)
            for (int64_t panel = c0; panel < c1; ++panel)
              runTile(i, panel);
        } else {
          for (int64_t panel = c0; panel < c1; ++panel)
            for (int64_t i = i0; i < iEnd; i += tileRows)
              runTile(i, panel);
        }
      }
    }
  }
#else
  (void)ctx, (void)first, (void)last;
#endif
}

} // namespace

/// Rows of each block of packedSgemmA's (block, panel) tasks when the pool
/// cuts them into `chunks` runs (dist_rt_parallel_for's, equal in count):
/// rowsPerBlock's blocks, or a multiple of `chunks` blocks, whichever
/// leaves the busiest thread the least work by the tiles' count of vector
/// steps. Panels alone were uneven where a block has few: DenseNet-121's
/// 1x1 products on 7 x 7 (a panel of 48 and one of 1) ran one thread's
/// share on one thread and on 14 x 14 (4 + 1) three panels against one, so
/// that two threads ran DenseNet-121 1.1x faster than one.
namespace {
int64_t spreadBlockRows(int64_t m, int64_t n, const BTiles &shape,
                        int64_t chunks) {
  const int64_t tileRows = shape.rows, width = shape.panel;
  int64_t panels = (n + width - 1) / width;
  // A tile's work: its steps of vectors of 16 (a narrow last panel's tiles
  // run 16 rows as the vector, a step per column), and a few for its
  // loads of A and stores.
  auto taskWork = [&](int64_t rows, int64_t panel) {
    int64_t cols = std::min(width, n - panel * width);
    if (width != kPanel && cols < 16)
      return double((rows + 15) / 16 * (cols + 2));
    return double((rows + tileRows - 1) / tileRows *
                  ((cols + 15) / 16 * tileRows + 2));
  };
  auto busiest = [&](int64_t blockRows) {
    int64_t tasks = (m + blockRows - 1) / blockRows * panels;
    int64_t runs = std::min(tasks, chunks);
    double most = 0;
    for (int64_t r = 0; r < runs; ++r) {
      int64_t begin = 0, end = 0;
      dist_rt::parallelChunkRange(tasks, runs, r, &begin, &end);
      double work = 0;
      for (int64_t t = begin; t < end; ++t) {
        int64_t i0 = t / panels * blockRows;
        work += taskWork(std::min(blockRows, m - i0), t % panels);
      }
      most = std::max(most, work);
    }
    return most;
  };
  int64_t best = rowsPerBlock(m, tileRows);
  double bestWork = busiest(best);
  int64_t first = (m + best - 1) / best;
  // Up to 4 blocks a thread beyond rowsPerBlock's (more only even out
  // what a few already do, and each candidate is weighed task by task).
  int64_t least = (first + chunks - 1) / chunks * chunks;
  for (int64_t blocks = least; blocks <= least + 3 * chunks; blocks += chunks) {
    int64_t rows =
        ((m + blocks - 1) / blocks + tileRows - 1) / tileRows * tileRows;
    if ((m + rows - 1) / rows < blocks)
      break;
    // More blocks pack and read B again: only for a clear gain.
    double work = busiest(rows);
    if (work < 0.97 * bestWork)
      best = rows, bestWork = work;
  }
  return best;
}
} // namespace

int64_t dist_rt::packedSgemmABlockRows(int64_t m, int64_t n, int64_t threads) {
  const BTiles &shape = bTiles();
  return threads > 1 ? spreadBlockRows(m, n, shape, threads)
                     : rowsPerBlock(m, shape.rows);
}

size_t dist_rt::packedSgemmABytes(int64_t m, int64_t k) {
  int64_t rows = bTiles().rows;
  return size_t((m + rows - 1) / rows) * size_t(k) * rows * sizeof(float);
}

void dist_rt::packSgemmA(const float *a, int64_t m, int64_t k,
                         int64_t rowStride, int64_t colStride, float *dst) {
  // Slice by slice of kDepth steps, tile after tile of the host's rows
  // (bTiles), a value per row per step (zeros past m): the layout
  // packTiles gives A per call.
  const int64_t rows = bTiles().rows, tiles = (m + rows - 1) / rows;
  for (int64_t p0 = 0; p0 < k; p0 += kDepth) {
    int64_t depth = std::min(kDepth, k - p0);
    for (int64_t t = 0; t < tiles; ++t) {
      float *out = dst + p0 * tiles * rows + t * depth * rows;
      for (int64_t p = 0; p < depth; ++p)
        for (int64_t r = 0; r < rows; ++r) {
          int64_t i = t * rows + r;
          out[p * rows + r] =
              i < m ? a[i * rowStride + (p0 + p) * colStride] : 0.0f;
        }
    }
  }
}

void dist_rt::packedSgemmA(int64_t m, int64_t n, int64_t k, const float *packed,
                           int64_t packedRows, int64_t firstRow, const float *b,
                           int64_t ldb, float *c, int64_t ldc, bool overwrite,
                           const PackedEpilogue *epilogue,
                           const PackedImageColumns *image) {
  const BTiles &shape = bTiles();
  int64_t panels = (n + shape.panel - 1) / shape.panel;
  int64_t blockRows = rowsPerBlock(m, shape.rows);
  int64_t blocks = (m + blockRows - 1) / blockRows;
  bool spread =
      spreads(std::max(blocks * panels, (m + shape.rows - 1) / shape.rows),
              double(m) * double(n) * double(k));
  if (int64_t threads = dist_rt::parallelThreads(); spread && threads > 1) {
    blockRows = spreadBlockRows(m, n, shape, threads);
    blocks = (m + blockRows - 1) / blockRows;
  }
  PackedACall call{m,
                   n,
                   k,
                   packed,
                   (packedRows + shape.rows - 1) / shape.rows,
                   firstRow / shape.rows,
                   b,
                   ldb,
                   c,
                   ldc,
                   overwrite,
                   epilogue,
                   image ? image->first : 0,
                   image ? image->rowLen : 0,
                   image ? image->rowStride : 0,
                   blockRows,
                   panels,
                   shape};
  if (spread)
    dist_rt_parallel_for(blocks * panels, blockPanelRange, &call);
  else
    blockPanelRange(&call, 0, blocks * panels);
  packedCalls.fetch_add(1, std::memory_order_relaxed);
}

bool dist_rt::packedSgemmAvailable() {
  static const bool available = hostSimdLevel() == SimdLevel::Avx2 ||
                                hostSimdLevel() == SimdLevel::Avx512;
  return available;
}

bool dist_rt::packedSgemmAAvailable() { return packedSgemmAvailable(); }

size_t dist_rt::packedSgemmBytes(int64_t k, int64_t n) {
  int64_t width = bTiles().panel;
  return size_t((n + width - 1) / width) * size_t(k) * width * sizeof(float);
}

void dist_rt::packSgemmB(const float *b, int64_t k, int64_t n,
                         int64_t rowStride, int64_t colStride, float *dst) {
  // Slice by slice of the host's depth (bTiles), panel after panel of its
  // width, each `depth` steps of `width` values (zeros past n): a slice's
  // panels, which the tasks run one after another, lie one after another in
  // memory, so B streams from memory as one sequence (with panels of the
  // whole depth, 48 KiB apart in ViT-B/16's products, the products ran a
  // few percent slower).
  const BTiles &shape = bTiles();
  int64_t width = shape.panel;
  int64_t panels = (n + width - 1) / width;
  for (int64_t p0 = 0; p0 < k; p0 += shape.depth) {
    int64_t depth = std::min(shape.depth, k - p0);
    for (int64_t panel = 0; panel < panels; ++panel) {
      float *out = dst + p0 * panels * width + panel * depth * width;
      int64_t j0 = panel * width, cols = std::min(width, n - j0);
      for (int64_t p = 0; p < depth; ++p) {
        const float *row = b + (p0 + p) * rowStride + j0 * colStride;
        for (int64_t j = 0; j < cols; ++j)
          out[p * width + j] = row[j * colStride];
        for (int64_t j = cols; j < width; ++j)
          out[p * width + j] = 0.0f;
      }
    }
  }
}

bool dist_rt::packedSgemm(int64_t m, int64_t n, int64_t k, const float *a,
                          int64_t lda, const float *packed, float *c,
                          int64_t ldc, bool overwrite) {
  const BTiles &shape = bTiles();
  int64_t tiles = (m + shape.rows - 1) / shape.rows;
  // Packed A, one buffer per calling thread, kept for the next call.
  thread_local std::unique_ptr<float[]> apack;
  thread_local size_t apackSize = 0;
  size_t need = size_t(tiles * shape.rows * k);
  if (need > apackSize) {
    apack.reset(new (std::nothrow) float[need]);
    apackSize = apack ? need : 0;
    if (!apack)
      return false;
  }
  int64_t panels = (n + shape.panel - 1) / shape.panel;
  PackedCall call{m,   n,         k,           a,     lda,    packed, c,
                  ldc, overwrite, apack.get(), tiles, panels, shape};
  if (spreads(panels, double(m) * double(n) * double(k))) {
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
