//===- blas.cpp - Strided batched gemm on OpenBLAS and oneDNN ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_gemm_f32/f64. OpenBLAS (libopenblas.so.0, Debian's
// pthread build) is loaded with dlopen on the first call and its CBLAS
// entry points are resolved with dlsym, so the runtime never links it at
// build time. Each matrix is handed to row-major cblas_?gemm with beta = 1
// when it has a unit stride in one dimension (transposed or not); other
// layouts are packed into temporary contiguous copies. Products run on the
// runtime's thread pool, by matrix or by slices of C; OpenBLAS keeps one
// thread.
// When OpenBLAS cannot be loaded a plain loop computes the same result.
//
// A batch whose matrices share one operand (a weight broadcast over the
// batch dimensions of a MatMul) runs as one product: folded into the rows
// (or columns) of the other operand where strides allow, else on gathered
// copies (gemmBatched), so no weight is read once per matrix.
//
// f32 products of at least kMinDnnlWork multiply-adds go to oneDNN's
// dnnl_sgemm instead (Debian's libdnnl2, also loaded with dlopen, kept to
// one OpenMP thread per call; OpenBLAS when it is missing or when
// DIST_RT_NO_DNNL is set). Measured on this project's machine (AMD EPYC,
// AVX-512), OpenBLAS 0.3.21 against oneDNN 2.6, one thread: the small
// products of the benchmark models are at OpenBLAS's peak or near it
// (ResNet's im2col products 16x256x144 at 101 GFLOP/s against 96, 32x64x288
// 112 against 96, 64x64x64 107 against 94), oneDNN is ahead on larger ones
// (256x768x256 103 against 91, the MLP's three products 0.76 ms against
// 0.93 untransposed, 0.89 against 0.93 with the weight transposed). The
// same binaries of bench/cpu_inference.sh's GPT-style LM, interleaved runs
// with and without DIST_RT_NO_DNNL: 11.1-11.3 ms against 12.1-12.3 at one
// thread, 5.7-6.0 against 6.4-6.6 at two; its training step 35.9-36.2 ms
// against 37.8-38.1 at one thread. On hosts without AVX-512, products of
// few rows whose B rows lie a multiple of 2 KiB apart stay on OpenBLAS
// (dnnlSuits). On hosts with AVX2 but not AVX-512, f32 products on a
// constant weight (a parameter file's) run on the weight packed once
// (sgemm_packed.cpp, packedSuits).
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "profile.h"
#include "simd_activation.h"

#include "dist_rt/kernels.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include <dlfcn.h>
#include <strings.h>

namespace {

//===----------------------------------------------------------------------===//
// Loading OpenBLAS
//===----------------------------------------------------------------------===//

/// CBLAS enum values (cblas.h).
constexpr int kCblasRowMajor = 101;
constexpr int kCblasNoTrans = 111;
constexpr int kCblasTrans = 112;

/// cblas_sgemm/cblas_dgemm with 32-bit indices (libopenblas.so.0 is the
/// LP64 build). The CBLAS enums are passed as int.
template <typename T>
using GemmFn = void (*)(int order, int transA, int transB, int m, int n, int k,
                        T alpha, const T *a, int lda, const T *b, int ldb,
                        T beta, T *c, int ldc);
/// cblas_sgemv/cblas_dgemv (same conventions).
template <typename T>
using GemvFn = void (*)(int order, int trans, int m, int n, T alpha, const T *a,
                        int lda, const T *x, int incx, T beta, T *y, int incy);
using SetNumThreadsFn = void (*)(int numThreads);
using CoreNameFn = char *(*)();

/// oneDNN's row-major sgemm (dnnl.h; dnnl_dim_t is int64_t, the status 0
/// on success) and OpenMP's per-thread team size, from the libgomp that
/// libdnnl.so.2 loads.
using DnnlSgemmFn = int (*)(char transA, char transB, int64_t m, int64_t n,
                            int64_t k, float alpha, const float *a, int64_t lda,
                            const float *b, int64_t ldb, float beta, float *c,
                            int64_t ldc);
using OmpSetNumThreadsFn = void (*)(int);
using OmpGetMaxThreadsFn = int (*)();

/// The resolved entry points; published once by loadBlas.
struct BlasApi {
  GemmFn<float> sgemm = nullptr;
  GemmFn<double> dgemm = nullptr;
  /// Optional: products of one row or column (see gemvOne).
  GemvFn<float> sgemv = nullptr;
  GemvFn<double> dgemv = nullptr;
  SetNumThreadsFn setNumThreads = nullptr;
  /// OpenBLAS's kernel set ("SkylakeX", "Haswell", ...), where it has one.
  CoreNameFn coreName = nullptr;
  /// Set when libdnnl.so.2 loaded (see kMinDnnlWork).
  DnnlSgemmFn dnnlSgemm = nullptr;
  OmpSetNumThreadsFn ompSetNumThreads = nullptr;
  OmpGetMaxThreadsFn ompGetMaxThreads = nullptr;
};

BlasApi blasApi;
/// Set (with release order) once blasApi is filled in.
std::atomic<bool> blasLoaded{false};
std::once_flag blasOnce;
std::atomic<bool> forceBuiltin{false};

/// OpenBLAS's kernel sets by the x86 vector extensions their sgemm kernels
/// need (OpenBLAS compares the names without regard to case). Names not
/// listed count as below AVX.
struct CoreTypeLevel {
  const char *name;
  dist_rt::SimdLevel level;
};
constexpr CoreTypeLevel kCoreTypeLevels[] = {
    {"SkylakeX", dist_rt::SimdLevel::Avx512},
    {"CooperLake", dist_rt::SimdLevel::Avx512},
    {"SapphireRapids", dist_rt::SimdLevel::Avx512},
    {"Haswell", dist_rt::SimdLevel::Avx2},
    {"Zen", dist_rt::SimdLevel::Avx2},
    {"SandyBridge", dist_rt::SimdLevel::Avx},
    {"Bulldozer", dist_rt::SimdLevel::Avx},
    {"Piledriver", dist_rt::SimdLevel::Avx},
    {"Steamroller", dist_rt::SimdLevel::Avx},
    {"Excavator", dist_rt::SimdLevel::Avx},
};

dist_rt::SimdLevel coreTypeLevel(const char *name) {
  for (const CoreTypeLevel &c : kCoreTypeLevels)
    if (strcasecmp(name, c.name) == 0)
      return c.level;
  return dist_rt::SimdLevel::None;
}

/// Chooses OpenBLAS's kernels before it loads; returns the environment's
/// own OPENBLAS_CORETYPE (nullopt when unset) for loadBlas to put back
/// afterwards. See chooseOpenblasCoreType; OPENBLAS_NUM_THREADS=1, set
/// below when unset, stays.
std::optional<std::string> pickCoreType() {
  const char *given = std::getenv("OPENBLAS_CORETYPE");
  std::optional<std::string> saved;
  if (given)
    saved = given;
  std::string chosen = dist_rt::chooseOpenblasCoreType(
      given, std::getenv("DIST_RT_OPENBLAS_CORETYPE"), dist_rt::hostSimdLevel());
  if (!chosen.empty())
    setenv("OPENBLAS_CORETYPE", chosen.c_str(), 1);
  // The runtime's pool does the threading (gemmBatched); without this
  // OpenBLAS would start one idle thread per core when it loads.
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  return saved;
}

void loadBlas() {
  std::optional<std::string> savedCoreType = pickCoreType();
  void *handle = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  // OpenBLAS read its core type when it loaded.
  if (savedCoreType)
    setenv("OPENBLAS_CORETYPE", savedCoreType->c_str(), 1);
  else
    unsetenv("OPENBLAS_CORETYPE");
  const char *problem = nullptr;
  if (!handle) {
    problem = dlerror();
  } else {
    BlasApi api;
    api.sgemm = reinterpret_cast<GemmFn<float>>(dlsym(handle, "cblas_sgemm"));
    api.dgemm = reinterpret_cast<GemmFn<double>>(dlsym(handle, "cblas_dgemm"));
    api.sgemv = reinterpret_cast<GemvFn<float>>(dlsym(handle, "cblas_sgemv"));
    api.dgemv = reinterpret_cast<GemvFn<double>>(dlsym(handle, "cblas_dgemv"));
    api.setNumThreads = reinterpret_cast<SetNumThreadsFn>(
        dlsym(handle, "openblas_set_num_threads"));
    api.coreName =
        reinterpret_cast<CoreNameFn>(dlsym(handle, "openblas_get_corename"));
    // OpenBLAS ignores a core type it does not know (or cannot run here)
    // without a word and detects one itself.
    const char *forced = std::getenv("DIST_RT_OPENBLAS_CORETYPE");
    const char *running = api.coreName ? api.coreName() : nullptr;
    if (forced && *forced && running && strcasecmp(forced, running) != 0)
      std::fprintf(stderr,
                   "warning: dist_rt: DIST_RT_OPENBLAS_CORETYPE=%s: OpenBLAS "
                   "runs its %s kernels instead (it does not know or cannot "
                   "run that kernel set)\n",
                   forced, running);
    if (!api.sgemm || !api.dgemm) {
      problem = "cblas_sgemm or cblas_dgemm is missing";
      // Keep the handle: unloading a threaded library is not worth the risk.
    } else {
      // oneDNN is optional (larger f32 products, see kMinDnnlWork).
      if (!std::getenv("DIST_RT_NO_DNNL"))
        if (void *dnnl = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL)) {
          api.dnnlSgemm =
              reinterpret_cast<DnnlSgemmFn>(dlsym(dnnl, "dnnl_sgemm"));
          api.ompSetNumThreads = reinterpret_cast<OmpSetNumThreadsFn>(
              dlsym(dnnl, "omp_set_num_threads"));
          api.ompGetMaxThreads = reinterpret_cast<OmpGetMaxThreadsFn>(
              dlsym(dnnl, "omp_get_max_threads"));
          if (!api.dnnlSgemm || !api.ompSetNumThreads || !api.ompGetMaxThreads)
            api.dnnlSgemm = nullptr;
        }
      blasApi = api;
      blasLoaded.store(true, std::memory_order_release);
      // The runtime's pool does the threading (see gemmBatched).
      if (api.setNumThreads)
        api.setNumThreads(1);
      return;
    }
  }
  std::fprintf(stderr,
               "warning: dist_rt: cannot load libopenblas.so.0 (%s); matrix "
               "products use a slow built-in loop\n",
               problem ? problem : "unknown error");
}

/// Returns the loaded API, or NULL when the built-in loops must be used.
const BlasApi *blas() {
  std::call_once(blasOnce, loadBlas);
  if (forceBuiltin.load(std::memory_order_relaxed) ||
      !blasLoaded.load(std::memory_order_acquire))
    return nullptr;
  return &blasApi;
}

/// Calls of gemmBatched that went to the thread pool (spreadGemmCalls).
std::atomic<int64_t> spreadCalls{0};
/// Calls of gemmBatched whose batch became one product (foldedGemmCalls).
std::atomic<int64_t> foldedCalls{0};
/// Calls of gemmBatched run on gathered copies (gatheredGemmCalls).
std::atomic<int64_t> gatheredCalls{0};
/// Products that oneDNN ran (dnnlGemmCalls).
std::atomic<int64_t> dnnlCalls{0};
/// Products of one row or column the library's gemv ran (gemvGemmCalls).
std::atomic<int64_t> gemvCalls{0};

/// f32 products of at least this many multiply-adds go to oneDNN when it
/// loads (see the file comment), unless dnnlSuits says otherwise.
constexpr int64_t kMinDnnlWork = int64_t(1) << 20;

/// Whether oneDNN's sgemm is the one to take for a product of enough work
/// with m rows and B's rows `ldbBytes` apart. On hosts without AVX-512 its
/// AVX2 kernels read B in place when m is small, and when B's rows are a
/// multiple of 2 KiB apart they fall to half speed or less (cache sets
/// aliasing): on an AMD EPYC (Zen 3), one thread, 197 x n x 768 ran at
/// 29-33 GFLOP/s for n = 1024, 2048, 3072 and 4096 but 74-78 for n = 1032,
/// 2056 and 3080, and 40 for n = 1536; OpenBLAS ran all of them at 46-79.
/// From m = 512 rows on it was as fast as OpenBLAS again (n = 3072: 29, 46,
/// 69, 73 GFLOP/s at m = 256, 384, 512, 768). Transformers' linear layers
/// are such products (ViT-B/16's MLP is 197 x 3072 x 768): ViT-B/16 ran
/// 1.2-1.3x faster with them on OpenBLAS (see docs/status.md).
bool dnnlSuits(int64_t m, int64_t ldbBytes) {
  static const bool avx512 =
      dist_rt::hostSimdLevel() == dist_rt::SimdLevel::Avx512;
  return avx512 || m >= 512 || ldbBytes % 2048 != 0;
}

GemmFn<float> gemmFn(const BlasApi &api, float *) { return api.sgemm; }
GemmFn<double> gemmFn(const BlasApi &api, double *) { return api.dgemm; }
GemvFn<float> gemvFn(const BlasApi &api, float *) { return api.sgemv; }
GemvFn<double> gemvFn(const BlasApi &api, double *) { return api.dgemv; }

//===----------------------------------------------------------------------===//
// Matrix views
//===----------------------------------------------------------------------===//

/// A rows x cols matrix with element strides.
template <typename T>
struct View {
  T *ptr;
  int64_t rows;
  int64_t cols;
  int64_t rowStride;
  int64_t colStride;

  T &at(int64_t i, int64_t j) const {
    return ptr[i * rowStride + j * colStride];
  }
  View transposed() const { return {ptr, cols, rows, colStride, rowStride}; }
};

/// How a view is passed to row-major CBLAS.
struct BlasOperand {
  bool transposed;
  int64_t ld;
};

bool fitsInt(int64_t value) { return value >= 0 && value <= INT_MAX; }

/// Returns true if `view` can be passed to row-major CBLAS as is, either
/// plain (unit column stride) or transposed (unit row stride), and says
/// how. A dimension of extent 1 may have any stride.
template <typename T>
bool asBlasOperand(const View<T> &view, bool allowTranspose, BlasOperand &out) {
  int64_t rows = std::max<int64_t>(view.rows, 1);
  int64_t cols = std::max<int64_t>(view.cols, 1);
  if (view.colStride == 1 || view.cols <= 1) {
    int64_t ld = view.rows <= 1 ? cols : view.rowStride;
    if (ld >= cols && fitsInt(ld)) {
      out = {false, ld};
      return true;
    }
  }
  if (allowTranspose && (view.rowStride == 1 || view.rows <= 1)) {
    int64_t ld = view.cols <= 1 ? rows : view.colStride;
    if (ld >= rows && fitsInt(ld)) {
      out = {true, ld};
      return true;
    }
  }
  return false;
}

/// A temporary contiguous row-major copy of a view, in allocator memory.
template <typename T>
class PackedCopy {
public:
  PackedCopy() = default;
  PackedCopy(const PackedCopy &) = delete;
  PackedCopy &operator=(const PackedCopy &) = delete;
  ~PackedCopy() { _mlir_memref_to_llvm_free(buffer); }

  /// Copies `source` into the buffer. Returns false when out of memory.
  bool pack(const View<T> &source) {
    size_t count =
        static_cast<size_t>(source.rows) * static_cast<size_t>(source.cols);
    buffer = static_cast<T *>(_mlir_memref_to_llvm_alloc(count * sizeof(T)));
    if (!buffer)
      return false;
    view = {buffer, source.rows, source.cols, source.cols, 1};
    for (int64_t i = 0; i < source.rows; ++i)
      for (int64_t j = 0; j < source.cols; ++j)
        view.at(i, j) = source.at(i, j);
    return true;
  }

  /// Copies the buffer back into `target` (the view it was packed from).
  void unpack(const View<T> &target) const {
    for (int64_t i = 0; i < target.rows; ++i)
      for (int64_t j = 0; j < target.cols; ++j)
        target.at(i, j) = view.at(i, j);
  }

  View<T> view{};

private:
  T *buffer = nullptr;
};

//===----------------------------------------------------------------------===//
// One matrix product
//===----------------------------------------------------------------------===//

/// C = 0 (every element of the view).
template <typename T>
void zeroView(const View<T> &c) {
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t j = 0; j < c.cols; ++j)
      c.at(i, j) = T(0);
}

/// C += A * B with plain loops; any strides. `overwrite`: C = A * B.
template <typename T>
void gemmBuiltin(const View<const T> &a, const View<const T> &b,
                 const View<T> &c, bool overwrite) {
  if (overwrite)
    zeroView(c);
  for (int64_t i = 0; i < c.rows; ++i) {
    for (int64_t p = 0; p < a.cols; ++p) {
      T aip = a.at(i, p);
      for (int64_t j = 0; j < c.cols; ++j)
        c.at(i, j) += aip * b.at(p, j);
    }
  }
}

/// A product of one row (m = 1) or one column (n = 1) as the library's
/// matrix-vector product, on operands gemmOne made CBLAS-ready; false
/// where the library has none or the vector's stride cannot be passed.
/// Both libraries' gemm runs such a product several times slower than
/// gemv: a classifier's [1, 1280] x [1280, 1000] (MobileNetV2's head), in
/// OpenBLAS's sgemv against its sgemm (either layout of the weight), took
/// 46-51 us against 185-325 with the weight in cache, 137-181 against
/// 375-434 from memory; inside the model 166 us against oneDNN's sgemm's
/// 217, onnxruntime's Gemm 123 (AMD EPYC, family 26, one thread).
template <typename T>
bool gemvOne(const BlasApi &api, const View<const T> &a, const BlasOperand &aOp,
             const View<const T> &b, const BlasOperand &bOp, const View<T> &c,
             const BlasOperand &cOp, bool overwrite) {
  GemvFn<T> gemv = gemvFn(api, static_cast<T *>(nullptr));
  int64_t m = c.rows, n = c.cols, k = a.cols;
  if (!gemv)
    return false;
  // The matrix (its CBLAS layout), the vector and C's stride.
  const T *matrix, *x;
  int64_t ld, incx, incy, rows, cols;
  bool trans;
  if (m == 1) {
    // C[0, j] = sum over k of a[0, k] * B[k, j]: y = op(B) x.
    matrix = b.ptr, ld = bOp.ld, x = a.ptr, incy = 1;
    incx = aOp.transposed ? aOp.ld : 1;
    // B stored [k, n] (B^T times x) or, transposed, [n, k].
    trans = !bOp.transposed;
    rows = bOp.transposed ? n : k, cols = bOp.transposed ? k : n;
  } else {
    // C[i, 0] = sum over k of A[i, k] * b[k, 0]: y = op(A) x.
    matrix = a.ptr, ld = aOp.ld, x = b.ptr, incy = cOp.ld;
    incx = bOp.transposed ? 1 : bOp.ld;
    trans = aOp.transposed;
    rows = aOp.transposed ? k : m, cols = aOp.transposed ? m : k;
  }
  if (incx < 1 || incy < 1 || !fitsInt(incx) || !fitsInt(incy) ||
      ld < std::max<int64_t>(cols, 1) || !fitsInt(ld))
    return false;
  gemv(kCblasRowMajor, trans ? kCblasTrans : kCblasNoTrans,
       static_cast<int>(rows), static_cast<int>(cols), T(1), matrix,
       static_cast<int>(ld), x, static_cast<int>(incx), overwrite ? T(0) : T(1),
       c.ptr, static_cast<int>(incy));
  gemvCalls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

/// C (m x n) += A (m x k) * B (k x n) on OpenBLAS when `api` is set;
/// `overwrite`: C = A * B (BLAS's beta = 0: C is neither read nor needs
/// zeroing first).
template <typename T>
void gemmOne(const BlasApi *api, const View<const T> &a, const View<const T> &b,
             const View<T> &c, bool overwrite) {
  int64_t m = c.rows, n = c.cols, k = a.cols;
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    if (overwrite)
      zeroView(c);
    return;
  }
  if (!api || !fitsInt(m) || !fitsInt(n) || !fitsInt(k)) {
    gemmBuiltin(a, b, c, overwrite);
    return;
  }

  // C must be row-major for CBLAS. A column-major C is handled by computing
  // C^T += B^T * A^T instead; anything else goes through a packed copy.
  BlasOperand cOp;
  if (!asBlasOperand(c, /*allowTranspose=*/false, cOp)) {
    if (asBlasOperand(c.transposed(), /*allowTranspose=*/false, cOp)) {
      gemmOne<T>(api, b.transposed(), a.transposed(), c.transposed(),
                 overwrite);
      return;
    }
    PackedCopy<T> packedC;
    if (!packedC.pack(c)) {
      gemmBuiltin(a, b, c, overwrite);
      return;
    }
    gemmOne<T>(api, a, b, packedC.view, overwrite);
    packedC.unpack(c);
    return;
  }

  PackedCopy<T> packedA, packedB;
  View<const T> aView = a, bView = b;
  BlasOperand aOp, bOp;
  if (!asBlasOperand(a, /*allowTranspose=*/true, aOp)) {
    if (!packedA.pack({const_cast<T *>(a.ptr), a.rows, a.cols, a.rowStride,
                       a.colStride})) {
      gemmBuiltin(a, b, c, overwrite);
      return;
    }
    aView = {packedA.view.ptr, m, k, k, 1};
    aOp = {false, k};
  }
  if (!asBlasOperand(b, /*allowTranspose=*/true, bOp)) {
    if (!packedB.pack({const_cast<T *>(b.ptr), b.rows, b.cols, b.rowStride,
                       b.colStride})) {
      gemmBuiltin(a, b, c, overwrite);
      return;
    }
    bView = {packedB.view.ptr, k, n, n, 1};
    bOp = {false, n};
  }
  if ((m == 1 || n == 1) &&
      gemvOne<T>(*api, aView, aOp, bView, bOp, c, cOp, overwrite))
    return;
  if (std::is_same<T, float>::value && api->dnnlSgemm &&
      double(m) * double(n) * double(k) >= double(kMinDnnlWork) &&
      dnnlSuits(m, bOp.ld * int64_t(sizeof(T)))) {
    // One OpenMP thread per call (the runtime's pool does the threading),
    // and the caller's OpenMP setting back afterwards: a program embedding
    // the model may share this libgomp.
    int callerThreads = api->ompGetMaxThreads();
    if (callerThreads != 1)
      api->ompSetNumThreads(1);
    int status = api->dnnlSgemm(
        aOp.transposed ? 'T' : 'N', bOp.transposed ? 'T' : 'N', m, n, k, 1.0f,
        reinterpret_cast<const float *>(aView.ptr), aOp.ld,
        reinterpret_cast<const float *>(bView.ptr), bOp.ld,
        overwrite ? 0.0f : 1.0f, reinterpret_cast<float *>(c.ptr), cOp.ld);
    if (callerThreads != 1)
      api->ompSetNumThreads(callerThreads);
    if (status == 0) {
      dnnlCalls.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // Any failure (it validates its arguments first): OpenBLAS does it.
  }
  gemmFn(*api, static_cast<T *>(nullptr))(
      kCblasRowMajor, aOp.transposed ? kCblasTrans : kCblasNoTrans,
      bOp.transposed ? kCblasTrans : kCblasNoTrans, static_cast<int>(m),
      static_cast<int>(n), static_cast<int>(k), T(1), aView.ptr,
      static_cast<int>(aOp.ld), bView.ptr, static_cast<int>(bOp.ld),
      overwrite ? T(0) : T(1), c.ptr, static_cast<int>(cOp.ld));
}

//===----------------------------------------------------------------------===//
// Batches
//===----------------------------------------------------------------------===//

/// True when the (stride, extent) dimensions of a view address no element
/// twice: ordered by stride, each steps past everything the smaller ones
/// span.
bool stridesAreDisjoint(std::array<std::pair<int64_t, int64_t>, 3> dims) {
  for (auto &[stride, extent] : dims)
    stride = stride < 0 ? -stride : stride;
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;
  for (auto [stride, extent] : dims) {
    if (extent <= 1)
      continue;
    if (stride < span)
      return false;
    span += (extent - 1) * stride;
  }
  return true;
}

/// Smallest number of multiply-adds worth a task of its own: below it the
/// pool's hand-off costs more than the work.
constexpr int64_t kMinTaskWork = 1 << 16;
/// Smallest extent of C's split dimension in one task (the micro-kernels
/// work on 16-wide panels).
constexpr int64_t kMinTaskExtent = 16;

/// All arguments of one dist_rt_gemm_* call, and how it is cut into tasks:
/// `parts` slices of C's rows (or columns, `splitCols`) per matrix.
template <typename T>
struct BatchedGemm {
  const BlasApi *api;
  int64_t m, n, k;
  const T *a;
  int64_t aBatch, aRow, aCol;
  const T *b;
  int64_t bBatch, bRow, bCol;
  T *c;
  int64_t cBatch, cRow, cCol;
  int64_t parts = 1;
  bool splitCols = false;
  /// First matrix of the tasks (when batches are run one at a time).
  int64_t firstBatch = 0;
  /// C = A * B instead of C += A * B (for the tasks of this run).
  bool overwrite = false;

  /// Task `task`: slice task % parts of matrix firstBatch + task / parts.
  void runTask(int64_t task) const {
    int64_t t = firstBatch + task / parts, part = task % parts;
    int64_t extent = splitCols ? n : m;
    int64_t begin = extent * part / parts, end = extent * (part + 1) / parts;
    const T *aT = a + t * aBatch, *bT = b + t * bBatch;
    T *cT = c + t * cBatch;
    if (splitCols) {
      gemmOne<T>(api, {aT, m, k, aRow, aCol},
                 {bT + begin * bCol, k, end - begin, bRow, bCol},
                 {cT + begin * cCol, m, end - begin, cRow, cCol}, overwrite);
    } else {
      gemmOne<T>(api, {aT + begin * aRow, end - begin, k, aRow, aCol},
                 {bT, k, n, bRow, bCol},
                 {cT + begin * cRow, end - begin, n, cRow, cCol}, overwrite);
    }
  }

  static void runRange(void *ctx, int64_t begin, int64_t end) {
    const auto *self = static_cast<const BatchedGemm *>(ctx);
    for (int64_t t = begin; t < end; ++t)
      self->runTask(t);
  }

  /// True when no two elements of the batch's C matrices share an address
  /// (so the batches may run concurrently): ordered by stride, each of the
  /// batch, row and column dimensions steps past everything the smaller ones
  /// span. That covers matrices one after another and matrices interleaved
  /// within rows (a product per head written into [B, T, H, D]).
  bool batchesAreDisjoint(int64_t batch) const {
    return stridesAreDisjoint({{{cCol, n}, {cRow, m}, {cBatch, batch}}});
  }
};

//===----------------------------------------------------------------------===//
// Untransposed copies of constant weights
//===----------------------------------------------------------------------===//

// A weight read transposed (ONNX Gemm's transB = 1, a Linear layer's
// [out, in] weight) runs slower than the same product untransposed in
// both libraries. Measured at one thread on this project's machine
// (AMD EPYC, AVX-512): 64x512x784 102-104 GFLOP/s transposed against
// 110-114 untransposed, 64x512x512 85-88 against 106-114, 128x64x512 66-68
// against 106. Weights in a parameter file's read-only mapping cannot
// change, so such a product reads a copy of the weight transposed once, on
// first use, and kept until the mapping goes. Trained weights live in
// writable buffers and are never copied.

/// Products of more rows than this stay on the libraries even on a constant
/// weight (packedSuits): there packing B is a small part of the call, and
/// the libraries were as fast or faster (dist-gemm-bench on Zen 3, rows of
/// 1024-1576 at batch 8: the packed kernel at 0.86-1.00 of the better
/// library at one thread, 0.88-1.02 at two; 128-197 rows 0.93-1.11).
constexpr int64_t kMaxPackedRows = 512;

/// A product of one row on a constant weight of this many elements or more
/// (16 MiB: it streams from memory) stays on the library's gemv (gemvOne)
/// instead of the packed copy: AlexNet's [1, 9216] x [9216, 4096] took 5.2
/// ms a call in OpenBLAS's sgemv against 8.7 on the packed weight, the
/// inference 13.5-14.0 ms against 17.7-18.0 at one thread (onnxruntime
/// 14.5-16.8) and 9.4-9.5 against 10.2-11.5 at two (onnxruntime 10.0), and
/// no second copy of its 234 MB of weights is made (AMD EPYC, family 26).
/// Smaller weights stay packed where they were: on MobileNetV2's
/// [1280, 1000] head the packed call took 54 us warm against 74 for gemv.
/// Without the library's gemv (the built-in loops) they pack whatever their
/// size.
constexpr double kMinGemvWeights = double(int64_t(1) << 22);

/// Products of fewer multiply-adds than this stay on the libraries
/// (packedSuits): packing B is cheap there, and OpenBLAS's small-matrix
/// kernels were faster on the DLRM-style model's 128 x 32 x 64 and
/// 128 x 64 x 68 (its inference 0.098 ms on the libraries, 0.109 with
/// those two on the packed kernel, one thread). Tests lower it
/// (setPackedGemmMinWork).
std::atomic<int64_t> packedMinWork{int64_t(1) << 20};

/// Products of fewer columns than this stay on the libraries (packedSuits):
/// on AVX-512 oneDNN's sgemm runs products of up to about a thousand
/// columns at 157-171 GFLOP/s on one core, and the packed kernel reached
/// 0.93-0.98 of it there (the benchmark's GPT-style LM and MLP, weights
/// in cache: their inference 5-9% slower on the packed kernel;
/// BERT-base's and ViT-B/16's 768 columns 0.95-0.98), while on wider ones
/// (1536-3072: ViT-B/16's and BERT-base's projections into the MLP and
/// ViT's QKV, ConvNeXt-T's stage 3 and 4 expansions) oneDNN drops to
/// 80-141 GFLOP/s and the packed kernel holds 150-162, 1.12-1.47 of it
/// (dist-gemm-bench on an Intel Xeon, family 6 model 207, one thread).
/// On AVX2 every width of 16 or more (see kMaxPackedRows).
std::atomic<int64_t> packedMinColumns{
    dist_rt::hostSimdLevel() == dist_rt::SimdLevel::Avx512 ? 1536 : 16};

/// Cached copies stop growing past this many bytes (a model whose weights
/// are that large keeps the transposed products).
constexpr size_t kMaxConstantCopyBytes = size_t(1) << 30;

struct ConstantCopyKey {
  const void *ptr;
  int64_t rows, cols, stride, elemSize;
  bool operator<(const ConstantCopyKey &o) const {
    return std::tie(ptr, rows, cols, stride, elemSize) <
           std::tie(o.ptr, o.rows, o.cols, o.stride, o.elemSize);
  }
};

struct ConstantMemory {
  /// Whether any range is registered, read without the lock: products in a
  /// process without parameter files (training) never take it.
  std::atomic<bool> any{false};
  std::mutex mutex;
  /// Registered ranges: base -> size.
  std::map<const char *, size_t> ranges;
  /// Copies (64-byte aligned within their storage) and their sizes.
  struct Copy {
    std::unique_ptr<char[]> storage;
    void *data;
    size_t bytes;
  };
  std::map<ConstantCopyKey, Copy> copies;
  size_t copyBytes = 0;
};

ConstantMemory &constantMemory() {
  static ConstantMemory *memory = new ConstantMemory();
  return *memory;
}

/// Whether [first, last) lies in one registered range (lock held).
bool inConstantMemory(const ConstantMemory &memory, const char *first,
                      const char *last) {
  auto range = memory.ranges.upper_bound(first);
  if (range == memory.ranges.begin())
    return false;
  --range;
  return last <= range->first + range->second;
}

/// Adds an entry of `bytes` bytes (64-byte aligned) under `key` to the
/// cache and returns it, or null when the cache is full or memory is out
/// (lock held).
void *newConstantCopy(ConstantMemory &memory, const ConstantCopyKey &key,
                      size_t bytes) {
  if (memory.copyBytes + bytes > kMaxConstantCopyBytes)
    return nullptr;
  std::unique_ptr<char[]> storage(new (std::nothrow) char[bytes + 64]);
  if (!storage)
    return nullptr;
  auto addr = reinterpret_cast<uintptr_t>(storage.get());
  void *data = storage.get() + (64 - addr % 64) % 64;
  memory.copyBytes += bytes;
  memory.copies.emplace(key,
                        ConstantMemory::Copy{std::move(storage), data, bytes});
  return data;
}

/// The untransposed copy (k x n, row-major) of the k x n matrix at `b`
/// stored transposed (element (p, j) at b[j * stride + p]), when `b` lies
/// in constant memory and the cache has room; else null.
template <typename T>
const T *untransposedConstant(const T *b, int64_t k, int64_t n,
                              int64_t stride) {
  ConstantMemory &memory = constantMemory();
  if (!memory.any.load(std::memory_order_acquire))
    return nullptr;
  std::lock_guard<std::mutex> lock(memory.mutex);
  const char *first = reinterpret_cast<const char *>(b);
  const char *last = first + ((n - 1) * stride + k) * sizeof(T);
  if (!inConstantMemory(memory, first, last))
    return nullptr;
  ConstantCopyKey key{b, k, n, stride, static_cast<int64_t>(sizeof(T))};
  auto it = memory.copies.find(key);
  if (it != memory.copies.end())
    return static_cast<const T *>(it->second.data);
  size_t bytes = static_cast<size_t>(k) * n * sizeof(T);
  T *copy = static_cast<T *>(newConstantCopy(memory, key, bytes));
  if (!copy)
    return nullptr;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p)
      copy[p * n + j] = b[j * stride + p];
  return copy;
}

template <typename T>
void gemmBatched(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t aPtr,
                 int64_t aSb, int64_t aSm, int64_t aSk, int64_t bPtr,
                 int64_t bSk, int64_t bSn, int64_t cPtr, int64_t cSb,
                 int64_t cSm, int64_t cSn, int64_t bSb, bool overwrite);

/// Whether a product of m x n x k on a constant weight runs on the packed
/// weight (sgemm_packed.cpp) rather than a library. DIST_RT_NO_PACKED_GEMM
/// keeps every product on the libraries (for comparisons).
/// Whether the loaded library has a matrix-vector product (gemvOne's).
bool libraryGemv() {
  const BlasApi *api = blas();
  return api && api->sgemv;
}

bool packedSuits(int64_t m, int64_t n, int64_t k) {
  static const bool enabled =
      dist_rt::packedSgemmAvailable() && !std::getenv("DIST_RT_NO_PACKED_GEMM");
  return enabled && m <= kMaxPackedRows &&
         (m > 1 || double(n) * double(k) < kMinGemvWeights || !libraryGemv()) &&
         n >= std::max<int64_t>(
                  16, packedMinColumns.load(std::memory_order_relaxed)) &&
         k >= 16 &&
         double(m) * double(n) * double(k) >=
             double(packedMinWork.load(std::memory_order_relaxed));
}

/// Whether a product of m x n x k on a constant A runs on the packed A
/// (sgemm_packed.cpp) rather than a library. Down to 2 rows (one row is the
/// library's gemv): a segmentation head's 1x1 convolution to 2 classes,
/// [2, 32] x [32, 128 * 128], took 308-321 us in oneDNN's sgemm (which,
/// like OpenBLAS's, packs all of B for those rows) against 78-82 us on the
/// packed filters' partial tile (AMD EPYC, family 26, one thread; with
/// the AVX2 kernels, DIST_RT_SIMD=avx2, 216-310 against 176).
bool packedASuits(int64_t m, int64_t n, int64_t k) {
  static const bool enabled = dist_rt::packedSgemmAAvailable() &&
                              !std::getenv("DIST_RT_NO_PACKED_GEMM");
  return enabled && m >= 2 && n >= 16 && k >= 8 &&
         double(m) * double(n) * double(k) >=
             double(packedMinWork.load(std::memory_order_relaxed));
}

/// C (m x n) (+)= A * B on B's packed copy when B (k x n, element (p, j)
/// at b[p * bSk + j * bSn]) is a constant weight, A has unit column stride
/// and C unit column stride; false (nothing done) otherwise.
bool gemmOnPackedConstant(int64_t m, int64_t n, int64_t k, const float *a,
                          int64_t aSm, int64_t aSk, const float *b, int64_t bSk,
                          int64_t bSn, float *c, int64_t cSm, int64_t cSn,
                          bool overwrite) {
  if (!packedSuits(m, n, k) || (aSk != 1 && k > 1) || (cSn != 1 && n > 1) ||
      (m > 1 && (aSm < k || cSm < n)) || bSk < 0 || bSn < 0 ||
      bSk > INT32_MAX || bSn > INT32_MAX ||
      forceBuiltin.load(std::memory_order_relaxed))
    return false;
  struct Args {
    const float *b;
    int64_t k, n, bSk, bSn;
  } args{b, k, n, bSk, bSn};
  // The strides share the key's last word, negative to stay apart from
  // conv.cpp's keys.
  const int64_t key[3] = {k, n, -1 - (bSk << 32 | bSn)};
  size_t srcBytes = size_t((k - 1) * bSk + (n - 1) * bSn + 1) * sizeof(float);
  const void *packed = dist_rt::derivedConstant(
      b, srcBytes, key, dist_rt::packedSgemmBytes(k, n),
      [](void *dst, const void *ctx) {
        const auto &x = *static_cast<const Args *>(ctx);
        dist_rt::packSgemmB(x.b, x.k, x.n, x.bSk, x.bSn,
                            static_cast<float *>(dst));
      },
      &args);
  if (!packed)
    return false;
  return dist_rt::packedSgemm(m, n, k, a, m > 1 ? aSm : k,
                              static_cast<const float *>(packed), c,
                              m > 1 ? cSm : n, overwrite);
}

/// C (m x n) (+)= A * B on A's packed copy when A (m x k, element (i, p)
/// at a[i * aSm + p * aSk]) is a constant weight (a convolution's filters
/// times its columns) and B and C have unit column stride; false (nothing
/// done) otherwise.
bool gemmOnPackedConstantA(int64_t batch, int64_t m, int64_t n, int64_t k,
                           const float *a, int64_t aSm, int64_t aSk,
                           const float *b, int64_t bSb, int64_t bSk,
                           int64_t bSn, float *c, int64_t cSb, int64_t cSm,
                           int64_t cSn, bool overwrite,
                           const dist_rt::PackedEpilogue *epilogue = nullptr) {
  if ((bSn != 1 && n > 1) || (cSn != 1 && n > 1) || bSk < n ||
      (m > 1 && cSm < n) ||
      (batch > 1 && !stridesAreDisjoint({{{1, n}, {cSm, m}, {cSb, batch}}})))
    return false;
  // The suitability of the whole call (a batch of images' columns).
  const float *packed = dist_rt::packedConstantA(a, m, n * batch, k, aSm, aSk);
  if (!packed)
    return false;
  for (int64_t i = 0; i < batch; ++i)
    dist_rt::packedSgemmA(m, n, k, packed, m, 0, b + i * bSb, bSk, c + i * cSb,
                          cSm, overwrite, epilogue);
  return true;
}

int64_t asInt(const void *p) {
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(p));
}

/// Temporary copies of every gathered operand stay under this many bytes.
constexpr size_t kMaxGatherBytes = size_t(256) << 20;

/// C[t] (+)= A[t] * B for t < batch, with B shared and the batch's rows of
/// A or C not evenly spaced (so not foldable in place): A's batch * m rows
/// gathered into one contiguous matrix, one product into a contiguous C,
/// and C's rows scattered back. Worth it where a product per matrix would
/// read all of B for few rows (m * (k + n) <= k * n: the copies move fewer
/// elements than B has). ViT-B/16 at batch 8: the attention's input
/// projection reads [197, 8, 768] (a view of [8, 197, 768]) by the shared
/// [768, 2304] weight, 197 products of 8 rows each. False (nothing done)
/// when the copies do not fit kMaxGatherBytes or memory is out.
template <typename T>
bool gemmGatheredRows(int64_t batch, int64_t m, int64_t n, int64_t k,
                      const T *a, int64_t aSb, int64_t aSm, int64_t aSk,
                      const T *b, int64_t bSk, int64_t bSn, T *c, int64_t cSb,
                      int64_t cSm, int64_t cSn, bool overwrite) {
  if (batch > INT_MAX / m)
    return false;
  int64_t rows = batch * m;
  double bytes = double(rows) * double(k + n) * sizeof(T);
  if (bytes > double(kMaxGatherBytes))
    return false;
  auto *pa = static_cast<T *>(
      _mlir_memref_to_llvm_alloc(static_cast<size_t>(rows * k) * sizeof(T)));
  auto *pc = static_cast<T *>(
      _mlir_memref_to_llvm_alloc(static_cast<size_t>(rows * n) * sizeof(T)));
  if (!pa || !pc) {
    _mlir_memref_to_llvm_free(pa);
    _mlir_memref_to_llvm_free(pc);
    return false;
  }
  // Row (t, i) of the strided view (element j at view + t * sb + i * sm +
  // j * sj) to or from row t * m + i of the contiguous copy.
  auto copyRows = [&](T *view, int64_t sb, int64_t sm, int64_t sj,
                      int64_t cols, T *packed, bool toPacked) {
    for (int64_t t = 0; t < batch; ++t)
      for (int64_t i = 0; i < m; ++i) {
        T *strided = view + t * sb + i * sm;
        T *row = packed + (t * m + i) * cols;
        if (toPacked)
          for (int64_t j = 0; j < cols; ++j)
            row[j] = strided[j * sj];
        else
          for (int64_t j = 0; j < cols; ++j)
            strided[j * sj] = row[j];
      }
  };
  copyRows(const_cast<T *>(a), aSb, aSm, aSk, k, pa, /*toPacked=*/true);
  if (!overwrite)
    copyRows(c, cSb, cSm, cSn, n, pc, /*toPacked=*/true);
  gemmBatched<T>(1, rows, n, k, asInt(pa), 0, k, 1, asInt(b), bSk, bSn,
                 asInt(pc), 0, n, 1, 0, overwrite);
  copyRows(c, cSb, cSm, cSn, n, pc, /*toPacked=*/false);
  _mlir_memref_to_llvm_free(pa);
  _mlir_memref_to_llvm_free(pc);
  gatheredCalls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

/// Runs every product on the runtime's thread pool, OpenBLAS itself being
/// kept to one thread: one pool for generated loops and products, so that
/// the two never compete for the cores (measured on this 2-core machine, the
/// MLP of bench/cpu_inference.sh at 2 threads: 0.78 ms with OpenBLAS's own
/// threads spinning beside the pool's, 0.50 ms with the pool alone). A
/// batch of at least as many products as threads is spread by product;
/// fewer products are each cut into slices of C's longer dimension.
template <typename T>
void gemmBatched(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t aPtr,
                 int64_t aSb, int64_t aSm, int64_t aSk, int64_t bPtr,
                 int64_t bSk, int64_t bSn, int64_t cPtr, int64_t cSb,
                 int64_t cSm, int64_t cSn, int64_t bSb, bool overwrite) {
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    // No product to add: C += 0 leaves C alone, C = 0 clears it.
    if (overwrite)
      for (int64_t t = 0; t < batch; ++t)
        zeroView<T>(
            {reinterpret_cast<T *>(static_cast<intptr_t>(cPtr)) + t * cSb, m, n,
             cSm, cSn});
    return;
  }
  // An operand shared by every matrix of the batch folds the batch into
  // the other operand's rows (or columns): a weight B shared by matrices
  // of A and C whose rows, batch after batch, are evenly spaced (a
  // [B, M, K] x [K, N] MatMul, also read through a transposing view) is one
  // product with B * M rows, so the library packs the weight once instead
  // of B times, and a row M = 1 is no longer a matrix-vector product that
  // streams the whole weight from memory: ViT-B/16's attention input
  // projection, [197, 1, 768] (a view of [1, 197, 768]) by [768, 2304], ran
  // as 197 such products per layer, 0.31x of onnxruntime in all. A shared A
  // folds the batch into the columns of B and C likewise. The stride of a
  // dimension of extent 1 is never used, so it may be anything.
  // Batches that sum into one C (overlapping C matrices) stay batches.
  if (batch > 1 && bSb == 0) {
    int64_t rowA = m == 1 ? aSb : aSm, rowC = m == 1 ? cSb : cSm;
    if (aSb == m * rowA && cSb == m * rowC && m <= INT_MAX / batch &&
        stridesAreDisjoint({{{rowC, m * batch}, {cSn, n}, {0, 1}}})) {
      m *= batch;
      aSm = rowA;
      cSm = rowC;
      batch = 1;
      foldedCalls.fetch_add(1, std::memory_order_relaxed);
    }
  } else if (batch > 1 && aSb == 0) {
    int64_t colB = n == 1 ? bSb : bSn, colC = n == 1 ? cSb : cSn;
    if (bSb == n * colB && cSb == n * colC && n <= INT_MAX / batch &&
        stridesAreDisjoint({{{cSm, m}, {colC, n * batch}, {0, 1}}})) {
      n *= batch;
      bSn = colB;
      cSn = colC;
      batch = 1;
      foldedCalls.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // A shared operand whose batch did not fold: gathered rows (or columns:
  // C^T = B^T A^T, A^T then being the shared operand) where that reads
  // less than a product per matrix would. The batches' C matrices must be
  // apart (no sum into one C).
  if (batch > 1 && (bSb == 0 || aSb == 0) &&
      stridesAreDisjoint({{{cSn, n}, {cSm, m}, {cSb, batch}}})) {
    auto *a = reinterpret_cast<const T *>(static_cast<intptr_t>(aPtr));
    auto *b = reinterpret_cast<const T *>(static_cast<intptr_t>(bPtr));
    auto *c = reinterpret_cast<T *>(static_cast<intptr_t>(cPtr));
    double dm = double(m), dn = double(n), dk = double(k);
    if (bSb == 0 && dm * (dk + dn) <= dk * dn &&
        gemmGatheredRows<T>(batch, m, n, k, a, aSb, aSm, aSk, b, bSk, bSn, c,
                            cSb, cSm, cSn, overwrite))
      return;
    if (aSb == 0 && dn * (dk + dm) <= dk * dm &&
        gemmGatheredRows<T>(batch, n, m, k, b, bSb, bSn, bSk, a, aSk, aSm, c,
                            cSb, cSn, cSm, overwrite))
      return;
  }
  // A constant f32 weight: its packed copy, on hosts and shapes where
  // that is faster than the libraries (packedSuits).
  if constexpr (std::is_same<T, float>::value) {
    if (batch == 1 &&
        gemmOnPackedConstant(
            m, n, k,
            reinterpret_cast<const float *>(static_cast<intptr_t>(aPtr)), aSm,
            aSk, reinterpret_cast<const float *>(static_cast<intptr_t>(bPtr)),
            bSk, bSn, reinterpret_cast<float *>(static_cast<intptr_t>(cPtr)),
            cSm, cSn, overwrite))
      return;
    // A constant A (a convolution's filters), shared by the batch.
    if ((batch == 1 || aSb == 0) &&
        gemmOnPackedConstantA(
            batch, m, n, k,
            reinterpret_cast<const float *>(static_cast<intptr_t>(aPtr)), aSm,
            aSk, reinterpret_cast<const float *>(static_cast<intptr_t>(bPtr)),
            bSb, bSk, bSn,
            reinterpret_cast<float *>(static_cast<intptr_t>(cPtr)), cSb, cSm,
            cSn, overwrite))
      return;
  }
  // A constant weight read transposed: its untransposed copy.
  // Not for a product of one row: the library's gemv reads either layout
  // at the same speed (gemvOne).
  if (bSk == 1 && bSn >= k && (batch == 1 || bSb == 0) && n > 1 && m > 1 &&
      !forceBuiltin.load(std::memory_order_relaxed)) {
    if (const T *copy = untransposedConstant(
            reinterpret_cast<const T *>(static_cast<intptr_t>(bPtr)), k, n,
            bSn)) {
      bPtr = asInt(copy);
      bSk = n;
      bSn = 1;
      bSb = 0;
    }
  }
  BatchedGemm<T> gemm{blas(),
                      m,
                      n,
                      k,
                      reinterpret_cast<const T *>(static_cast<intptr_t>(aPtr)),
                      aSb,
                      aSm,
                      aSk,
                      reinterpret_cast<const T *>(static_cast<intptr_t>(bPtr)),
                      bSb,
                      bSk,
                      bSn,
                      reinterpret_cast<T *>(static_cast<intptr_t>(cPtr)),
                      cSb,
                      cSm,
                      cSn};
  int64_t threads = dist_rt_get_num_threads();
  bool disjoint = batch == 1 || gemm.batchesAreDisjoint(batch);
  int64_t concurrent = disjoint ? batch : 1;
  // Multiply-adds of one product, saturated (only compared with small
  // thresholds).
  int64_t work = m;
  for (int64_t factor : {n, k})
    work = work > INT64_MAX / factor ? INT64_MAX : work * factor;
  gemm.splitCols = n > m;
  int64_t extent = gemm.splitCols ? n : m;
  if (threads > 1 && concurrent < threads) {
    int64_t wanted = (threads + concurrent - 1) / concurrent;
    int64_t byWork = std::max<int64_t>(work / kMinTaskWork, 1);
    int64_t byExtent = std::max<int64_t>(extent / kMinTaskExtent, 1);
    gemm.parts = std::min({wanted, byWork, byExtent});
  }
  int64_t tasksPerRun = (disjoint ? batch : 1) * gemm.parts;
  // A run of less than kMinTaskWork / 4 multiply-adds in all is not worth
  // spreading. Many small products together are: the DLRM-style model's
  // 128 feature interactions (9 x 32 x 9 each, 332K multiply-adds in all)
  // ran on the calling thread while the other one waited (measured at 2
  // threads: its inference 0.080-0.107 ms, a fifth of it in those products).
  int64_t runWork = work;
  if (disjoint && batch > 1)
    runWork = work > INT64_MAX / batch ? INT64_MAX : work * batch;
  bool spread = threads > 1 && tasksPerRun > 1 &&
                (gemm.parts > 1 || runWork >= kMinTaskWork / 4);
  if (spread)
    spreadCalls.fetch_add(1, std::memory_order_relaxed);
  // Setting C with batches that overlap: products summed into one C (a
  // zero batch stride) let the first set it; any other overlap clears every
  // C first and adds.
  bool summed = !disjoint && cSb == 0;
  if (overwrite && !disjoint && !summed) {
    for (int64_t t = 0; t < batch; ++t)
      zeroView<T>({gemm.c + t * cSb, m, n, cSm, cSn});
    overwrite = false;
  }
  for (int64_t t = 0; t < batch; t += disjoint ? batch : 1) {
    gemm.firstBatch = t;
    gemm.overwrite = overwrite && (disjoint || t == 0);
    if (spread)
      dist_rt_parallel_for(tasksPerRun, &BatchedGemm<T>::runRange, &gemm);
    else
      BatchedGemm<T>::runRange(&gemm, 0, tasksPerRun);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Internal API
//===----------------------------------------------------------------------===//

namespace {
dist_rt::SimdLevel detectedSimdLevel() {
  using dist_rt::SimdLevel;
#if defined(__x86_64__) || defined(__i386__)
  // libgcc's checks include the OS's support (XCR0) for the wider
  // registers.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return SimdLevel::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return SimdLevel::Avx2;
  if (__builtin_cpu_supports("avx"))
    return SimdLevel::Avx;
#endif
  return SimdLevel::None;
}
} // namespace

dist_rt::SimdLevel dist_rt::hostSimdLevel() {
  // DIST_RT_SIMD=avx2, avx or none caps the level (the kernels of a
  // smaller CPU tested on a larger one); another value is ignored, with a
  // line on stderr.
  static const SimdLevel level = [] {
    SimdLevel detected = detectedSimdLevel();
    const char *cap = std::getenv("DIST_RT_SIMD");
    SimdLevel limit = SimdLevel::Avx512;
    if (cap && std::strcmp(cap, "avx2") == 0)
      limit = SimdLevel::Avx2;
    else if (cap && std::strcmp(cap, "avx") == 0)
      limit = SimdLevel::Avx;
    else if (cap && std::strcmp(cap, "none") == 0)
      limit = SimdLevel::None;
    else if (cap && *cap)
      std::fprintf(stderr,
                   "dist_rt: warning: DIST_RT_SIMD=%s ignored (avx2, avx "
                   "or none)\n",
                   cap);
    return std::min(detected, limit);
  }();
  return level;
}

// OpenBLAS 0.3.21 picks its kernels by CPU model and family, and models it
// does not know get generic or older kernels: on this project's Intel Xeon
// (family 6 model 207) numpy's 1024^3 sgemm ran at 22-27 GFLOP/s with the
// kernels it picked and at 130-147 with OPENBLAS_CORETYPE=SkylakeX; it
// takes some AVX-512 CPUs (AMD Zen 4 and 5) for Haswell, and environments
// that run into this set OPENBLAS_CORETYPE=Haswell for every program (the
// residual CNN at one thread: 0.60 ms with the Haswell kernels, 0.36 ms with
// SkylakeX's). So the runtime names the kernel set itself, by the vector
// extensions the CPU and OS support, never by model: SkylakeX on
// AVX-512F/BW/DQ/VL, Haswell on AVX2 with FMA, SandyBridge on AVX. A core
// type from the environment is kept when it is of the host's level (Zen or
// CooperLake, say) and replaced when it is below (it would waste the
// wider units) or above (OpenBLAS would ignore it and fall back on its own
// detection). DIST_RT_OPENBLAS_CORETYPE forces any of OpenBLAS's names.
std::string dist_rt::chooseOpenblasCoreType(const char *given,
                                            const char *forced,
                                            SimdLevel host) {
  if (forced && *forced)
    return forced;
  if (given && *given && coreTypeLevel(given) == host)
    return given;
  switch (host) {
  case SimdLevel::Avx512:
    return "SkylakeX";
  case SimdLevel::Avx2:
    return "Haswell";
  case SimdLevel::Avx:
    return "SandyBridge";
  case SimdLevel::None:
    break;
  }
  // Nothing better to offer: OpenBLAS's own choice, or the given one.
  return given ? given : "";
}

bool dist_rt::blasAvailable() {
  std::call_once(blasOnce, loadBlas);
  return blasLoaded.load(std::memory_order_acquire);
}

void dist_rt::setForceBuiltinGemm(bool builtin) {
  forceBuiltin.store(builtin, std::memory_order_relaxed);
}

int64_t dist_rt::setPackedGemmMinWork(int64_t work) {
  return packedMinWork.exchange(work, std::memory_order_relaxed);
}

int64_t dist_rt::setPackedGemmMinColumns(int64_t columns) {
  return packedMinColumns.exchange(columns, std::memory_order_relaxed);
}

void dist_rt::registerConstantMemory(const void *base, size_t size) {
  if (!base || size == 0)
    return;
  ConstantMemory &memory = constantMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  memory.ranges[static_cast<const char *>(base)] = size;
  memory.any.store(true, std::memory_order_release);
}

void dist_rt::unregisterConstantMemory(const void *base) {
  ConstantMemory &memory = constantMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  auto range = memory.ranges.find(static_cast<const char *>(base));
  if (range == memory.ranges.end())
    return;
  const char *begin = range->first, *end = begin + range->second;
  for (auto it = memory.copies.begin(); it != memory.copies.end();) {
    const char *p = static_cast<const char *>(it->first.ptr);
    if (p >= begin && p < end) {
      memory.copyBytes -= it->second.bytes;
      it = memory.copies.erase(it);
    } else {
      ++it;
    }
  }
  memory.ranges.erase(range);
  memory.any.store(!memory.ranges.empty(), std::memory_order_release);
}

std::string dist_rt::blasCoreName() {
  const BlasApi *api = blas();
  if (!api || !api->coreName)
    return "";
  const char *name = api->coreName();
  return name ? name : "";
}

bool dist_rt::dnnlAvailable() {
  const BlasApi *api = blas();
  return api && api->dnnlSgemm;
}

int64_t dist_rt::dnnlGemmCalls() {
  return dnnlCalls.load(std::memory_order_relaxed);
}

int64_t dist_rt::gemvGemmCalls() {
  return gemvCalls.load(std::memory_order_relaxed);
}

int64_t dist_rt::spreadGemmCalls() {
  return spreadCalls.load(std::memory_order_relaxed);
}

int64_t dist_rt::gatheredGemmCalls() {
  return gatheredCalls.load(std::memory_order_relaxed);
}

int64_t dist_rt::foldedGemmCalls() {
  return foldedCalls.load(std::memory_order_relaxed);
}

const void *dist_rt::derivedConstant(const void *src, size_t srcBytes,
                                     const int64_t (&key)[3], size_t bytes,
                                     void (*make)(void *dst, const void *ctx),
                                     const void *ctx) {
  ConstantMemory &memory = constantMemory();
  if (!memory.any.load(std::memory_order_acquire) || bytes == 0)
    return nullptr;
  std::lock_guard<std::mutex> lock(memory.mutex);
  const char *first = static_cast<const char *>(src);
  if (!inConstantMemory(memory, first, first + srcBytes))
    return nullptr;
  // A negative stride keeps these apart from untransposedConstant's keys.
  ConstantCopyKey k{src, key[0], key[1], -1 - key[2], 0};
  auto it = memory.copies.find(k);
  if (it != memory.copies.end())
    return it->second.data;
  void *copy = newConstantCopy(memory, k, bytes);
  if (copy)
    make(copy, ctx);
  return copy;
}

const float *dist_rt::packedConstantA(const float *a, int64_t m, int64_t n,
                                      int64_t k, int64_t rowStride,
                                      int64_t colStride) {
  if (!packedASuits(m, n, k) || rowStride < 0 || colStride < 0 ||
      rowStride > INT32_MAX || colStride > INT32_MAX ||
      forceBuiltin.load(std::memory_order_relaxed))
    return nullptr;
  struct Args {
    const float *a;
    int64_t m, k, rowStride, colStride;
  } args{a, m, k, rowStride, colStride};
  // A negative first word keeps these apart from the keys of packed Bs
  // (k > 0 there) and conv.cpp's (filters > 0).
  const int64_t key[3] = {-m, k, rowStride << 32 | colStride};
  size_t srcBytes =
      size_t((m - 1) * rowStride + (k - 1) * colStride + 1) * sizeof(float);
  return static_cast<const float *>(dist_rt::derivedConstant(
      a, srcBytes, key, dist_rt::packedSgemmABytes(m, k),
      [](void *dst, const void *ctx) {
        const auto &x = *static_cast<const Args *>(ctx);
        dist_rt::packSgemmA(x.a, x.m, x.k, x.rowStride, x.colStride,
                            static_cast<float *>(dst));
      },
      &args));
}

bool dist_rt::isConstantMemory(const void *src, size_t bytes) {
  ConstantMemory &memory = constantMemory();
  if (!memory.any.load(std::memory_order_acquire))
    return false;
  std::lock_guard<std::mutex> lock(memory.mutex);
  const char *first = static_cast<const char *>(src);
  return inConstantMemory(memory, first, first + bytes);
}

size_t dist_rt::constantCopyBytes() {
  ConstantMemory &memory = constantMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  return memory.copyBytes;
}

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

namespace {

/// Names a product's shape in the profile (DIST_RT_PROFILE).
void describeGemm(dist_rt::ProfileScope &prof, int64_t batch, int64_t m,
                  int64_t n, int64_t k) {
  prof.describe(2.0 * static_cast<double>(batch) * static_cast<double>(m) *
                    static_cast<double>(n) * static_cast<double>(k),
                "%lld x [%lld x %lld] * [%lld x %lld]", (long long)batch,
                (long long)m, (long long)k, (long long)k, (long long)n);
}

} // namespace

extern "C" void dist_rt_gemm_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                                 int64_t a_ptr, int64_t a_sb, int64_t a_sm,
                                 int64_t a_sk, int64_t b_ptr, int64_t b_sk,
                                 int64_t b_sn, int64_t c_ptr, int64_t c_sb,
                                 int64_t c_sm, int64_t c_sn, int64_t b_sb) {
  dist_rt::ProfileScope prof("gemm");
  if (prof.active())
    describeGemm(prof, batch, m, n, k);
  gemmBatched<float>(batch, m, n, k, a_ptr, a_sb, a_sm, a_sk, b_ptr, b_sk, b_sn,
                     c_ptr, c_sb, c_sm, c_sn, b_sb, /*overwrite=*/false);
}

extern "C" void dist_rt_gemm_f64(int64_t batch, int64_t m, int64_t n, int64_t k,
                                 int64_t a_ptr, int64_t a_sb, int64_t a_sm,
                                 int64_t a_sk, int64_t b_ptr, int64_t b_sk,
                                 int64_t b_sn, int64_t c_ptr, int64_t c_sb,
                                 int64_t c_sm, int64_t c_sn, int64_t b_sb) {
  gemmBatched<double>(batch, m, n, k, a_ptr, a_sb, a_sm, a_sk, b_ptr, b_sk,
                      b_sn, c_ptr, c_sb, c_sm, c_sn, b_sb, /*overwrite=*/false);
}

extern "C" void dist_rt_gemm_set_f32(int64_t batch, int64_t m, int64_t n,
                                     int64_t k, int64_t a_ptr, int64_t a_sb,
                                     int64_t a_sm, int64_t a_sk, int64_t b_ptr,
                                     int64_t b_sk, int64_t b_sn, int64_t c_ptr,
                                     int64_t c_sb, int64_t c_sm, int64_t c_sn,
                                     int64_t b_sb) {
  dist_rt::ProfileScope prof("gemm (overwrite)");
  if (prof.active())
    describeGemm(prof, batch, m, n, k);
  gemmBatched<float>(batch, m, n, k, a_ptr, a_sb, a_sm, a_sk, b_ptr, b_sk, b_sn,
                     c_ptr, c_sb, c_sm, c_sn, b_sb, /*overwrite=*/true);
}

namespace {

std::atomic<size_t> imageScratchLimit{SIZE_MAX};

/// dist_rt_gemm_set_act_f32's epilogue after the product: from the
/// product's C (`src`) into the destination C (`dst`, the same memory
/// unless its columns are an image's positions).
struct ActPass {
  int64_t m, n;
  /// Null: in place, read where it is written.
  const float *src;
  int64_t sSb, sSm, sSn;
  float *dst;
  int64_t dSb, dSm, dSn, rowLen, rowStride;
  const float *bias;
  int64_t biasSi, biasSj;
  bool relu, clip;
  float lo, hi;
  /// An image's rows (rowLen > 0): the rowStride - rowLen elements after
  /// each complete one set to +0.
  bool zeroGaps = false;
  dist_rt::Gate gate = dist_rt::Gate::None;
};

#if defined(__x86_64__) || defined(__i386__)
/// out[j] = act(in[j] + bias) for j < len, 8 lanes at a time (the
/// generated loops this pass replaces were vectorised; a scalar pass here
/// made MobileNetV2 20-40% slower where the packed kernel does not apply).
__attribute__((target("avx2,fma"))) void actRunAvx2(const float *in, float *out,
                                                    int64_t len, float bias,
                                                    const ActPass &p) {
  __m256 b = _mm256_set1_ps(bias);
  int64_t j = 0;
  for (; j + 8 <= len; j += 8)
    _mm256_storeu_ps(
        out + j, dist_rt::reluClip8(_mm256_add_ps(_mm256_loadu_ps(in + j), b),
                                    p.relu, p.clip, p.lo, p.hi, p.gate));
  for (; j < len; ++j)
    out[j] =
        dist_rt::reluClip1(in[j] + bias, p.relu, p.clip, p.lo, p.hi, p.gate);
}
#endif

/// Rows [first, last) of the batch's m-row matrices, one after another.
void actRows(void *ctx, int64_t first, int64_t last) {
  const ActPass &p = *static_cast<const ActPass *>(ctx);
  for (int64_t row = first; row < last; ++row) {
    int64_t t = row / p.m, i = row % p.m;
    float *dst = p.dst + t * p.dSb + i * p.dSm;
    const float *bias = p.bias ? p.bias + i * p.biasSi : nullptr;
    int64_t run = p.rowLen > 0 ? p.rowLen : p.n;
    for (int64_t j0 = 0; j0 < p.n; j0 += run) {
      float *out = dst + (p.rowLen > 0 ? (j0 / run) * p.rowStride : j0 * p.dSn);
      const float *in =
          p.src ? p.src + t * p.sSb + i * p.sSm + j0 * p.sSn : out;
      int64_t inStride = p.src ? p.sSn : p.dSn;
      int64_t end = std::min(p.n, j0 + run);
      if (p.zeroGaps && p.rowLen > 0 && end - j0 == run)
        std::fill(out + run, out + p.rowStride, 0.0f);
#if defined(__x86_64__) || defined(__i386__)
      static const bool avx2 =
          dist_rt::hostSimdLevel() >= dist_rt::SimdLevel::Avx2;
      if (avx2 && inStride == 1 && p.dSn == 1 && (!bias || p.biasSj == 0)) {
        actRunAvx2(in, out, end - j0, bias ? bias[0] : 0.0f, p);
        continue;
      }
#endif
      for (int64_t j = j0; j < end; ++j) {
        float v = in[(j - j0) * inStride];
        if (bias)
          v += bias[j * p.biasSj];
        out[(j - j0) * p.dSn] =
            dist_rt::reluClip1(v, p.relu, p.clip, p.lo, p.hi, p.gate);
      }
    }
  }
}

} // namespace

size_t dist_rt::setGemmImageScratchLimit(size_t bytes) {
  return imageScratchLimit.exchange(bytes);
}

extern "C" void dist_rt_gemm_set_act_f32(
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_ptr, int64_t a_sb,
    int64_t a_sm, int64_t a_sk, int64_t b_ptr, int64_t b_sk, int64_t b_sn,
    int64_t c_ptr, int64_t c_sb, int64_t c_sm, int64_t c_sn, int64_t b_sb,
    int64_t bias_ptr, int64_t bias_si, int64_t bias_sj, int64_t flags, float lo,
    float hi, int64_t c_row_len, int64_t c_row_stride) {
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  dist_rt::ProfileScope prof("gemm with epilogue");
  if (prof.active())
    describeGemm(prof, batch, m, n, k);
  auto *bias = reinterpret_cast<const float *>(static_cast<intptr_t>(bias_ptr));
  bool relu = flags & DIST_RT_GEMM_RELU, clip = flags & DIST_RT_GEMM_CLIP;
  dist_rt::Gate gate = dist_rt::gateOf(flags & DIST_RT_GEMM_SILU,
                                       flags & DIST_RT_GEMM_HARDSWISH);
  // A residual: the product accumulates onto C's old values (packed tiles
  // and libraries alike load C first), the epilogue follows in place.
  bool accumulate = flags & DIST_RT_GEMM_ACCUMULATE;
  bool zeroGaps = (flags & DIST_RT_GEMM_ZERO_GAPS) && c_row_len > 0 &&
                  c_row_stride > c_row_len;
  auto *c = reinterpret_cast<float *>(static_cast<intptr_t>(c_ptr));
  auto *a = reinterpret_cast<const float *>(static_cast<intptr_t>(a_ptr));
  auto *b = reinterpret_cast<const float *>(static_cast<intptr_t>(b_ptr));
  bool image = c_row_len > 0 && c_row_len < n;
  // A constant A (the filters of a convolution's product) with a bias per
  // row: the epilogue as the packed kernel stores its tiles, C written once
  // (inside a padded image too).
  dist_rt::PackedEpilogue epilogue{bias, relu, clip, lo, hi, zeroGaps, gate};
  if ((!bias || (bias_si == 1 && bias_sj == 0)) && k > 0 &&
      (batch == 1 || a_sb == 0) && b_sn == 1 && c_sn == 1 && b_sk >= n &&
      (image || m == 1 || c_sm >= n)) {
    if (const float *packed =
            dist_rt::packedConstantA(a, m, n * batch, k, a_sm, a_sk)) {
      dist_rt::PackedImageColumns columns{0, c_row_len, c_row_stride};
      for (int64_t t = 0; t < batch; ++t)
        dist_rt::packedSgemmA(m, n, k, packed, m, 0, b + t * b_sb, b_sk,
                              c + t * c_sb, c_sm, !accumulate, &epilogue,
                              image ? &columns : nullptr);
      return;
    }
  }
  // Elsewhere the product, then the epilogue in one pass over C; an
  // image's columns through a contiguous product, or without memory for
  // it, a product per row of the image.
  ActPass pass{m, n, nullptr, 0,       0,       0,    c,    c_sb, c_sm, c_sn,
               0, 0, bias,    bias_si, bias_sj, relu, clip, lo,   hi};
  pass.zeroGaps = zeroGaps;
  pass.gate = gate;
  std::unique_ptr<void, void (*)(void *)> scratch(nullptr,
                                                  _mlir_memref_to_llvm_free);
  if (image) {
    pass.rowLen = c_row_len, pass.rowStride = c_row_stride;
    size_t bytes = size_t(batch) * size_t(m) * size_t(n) * sizeof(float);
    if (!accumulate &&
        bytes <= imageScratchLimit.load(std::memory_order_relaxed))
      scratch.reset(_mlir_memref_to_llvm_alloc(bytes));
    if (scratch) {
      auto *tmp = static_cast<float *>(scratch.get());
      pass.src = tmp;
      pass.sSb = m * n, pass.sSm = n, pass.sSn = 1;
      gemmBatched<float>(batch, m, n, k, a_ptr, a_sb, a_sm, a_sk, b_ptr, b_sk,
                         b_sn, asInt(tmp), m * n, n, 1, b_sb,
                         /*overwrite=*/true);
    } else {
      for (int64_t t = 0; t < batch; ++t)
        for (int64_t j0 = 0; j0 < n; j0 += c_row_len)
          gemmBatched<float>(
              1, m, std::min(c_row_len, n - j0), k, a_ptr + t * a_sb * 4, 0,
              a_sm, a_sk, b_ptr + (t * b_sb + j0 * b_sn) * 4, b_sk, b_sn,
              c_ptr + (t * c_sb + j0 / c_row_len * c_row_stride) * 4, 0, c_sm,
              c_sn, 0, !accumulate);
    }
  } else {
    gemmBatched<float>(batch, m, n, k, a_ptr, a_sb, a_sm, a_sk, b_ptr, b_sk,
                       b_sn, c_ptr, c_sb, c_sm, c_sn, b_sb, !accumulate);
  }
  int64_t rows = batch * m;
  // Rows spread over the threads where there is enough to share (a pass
  // over memory: 64 Ki elements a thread at least).
  if (rows > 1 && rows * n >= (int64_t(1) << 17))
    dist_rt_parallel_for(rows, actRows, &pass);
  else
    actRows(&pass, 0, rows);
}

extern "C" void dist_rt_gemm_set_f64(int64_t batch, int64_t m, int64_t n,
                                     int64_t k, int64_t a_ptr, int64_t a_sb,
                                     int64_t a_sm, int64_t a_sk, int64_t b_ptr,
                                     int64_t b_sk, int64_t b_sn, int64_t c_ptr,
                                     int64_t c_sb, int64_t c_sm, int64_t c_sn,
                                     int64_t b_sb) {
  gemmBatched<double>(batch, m, n, k, a_ptr, a_sb, a_sm, a_sk, b_ptr, b_sk,
                      b_sn, c_ptr, c_sb, c_sm, c_sn, b_sb, /*overwrite=*/true);
}
