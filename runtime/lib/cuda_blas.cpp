//===- cuda_blas.cpp - Matrix products of CUDA models through cuBLASLt ----===//
// SPDX-License-Identifier: Apache-2.0
//
// dist_rt_cuda_gemm_* (kernels.h): the products of a CUDA model
// (dist-contractions-to-runtime{target=cuda}) on the device's stream with
// cuBLASLt, which is loaded with dlopen on the first product
// (libcublasLt.so.13, else .so.12, or the file DIST_RT_CUBLASLT names), so
// that the runtime loads and runs where CUDA's libraries are missing.
// Why a library call and not a generated kernel: the generated kernels are
// one thread per output element with no tiling or shared memory; cuBLASLt
// is what PyTorch's products run on (the peer the issue measures against).
//
// The products are fp32 (or fp64) with fp32 (fp64) accumulation, no TF32:
// the outputs match the host target's and PyTorch's with TF32 off.
// cuBLAS is column-major: a row-major output is computed as its transpose
// (C^T = B^T A^T), operands with a unit stride in either dimension go in
// as they are, transposed or not (planProduct), and an operand with none
// is packed on the host (managed memory) first. Descriptors and the
// algorithm heuristic's choice are cached per shape and layout, so the
// steady state does no set-up. Each product waits for its stream, as the
// kernel launches do (the host code may read its output next).
//
//===----------------------------------------------------------------------===//

#include "cuda_internal.h"
#include "dist_rt/kernels.h"
#include "internal.h"
#include "library.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#if DIST_RT_HAVE_CUDA && __has_include(<cublasLt.h>)
#define DIST_RT_HAVE_CUBLASLT 1
#include <cublasLt.h>
#include <dlfcn.h>
#else
#define DIST_RT_HAVE_CUBLASLT 0
#endif

using dist_rt::cuda::GemmShape;
using dist_rt::cuda::LtOperand;
using dist_rt::cuda::LtProblem;

namespace {

/// How a f32 product rounds its operands on the tensor cores (dist-opt's
/// --precision): none (CUBLAS_COMPUTE_32F), TF32 or bf16, accumulating in
/// f32 either way.
enum class Rounding : int64_t { None = 0, Tf32 = 1, Bf16 = 2 };

/// X (r x c, element strides sr and sc) as a stored column-major matrix:
/// X itself (unit row stride) or its transpose (unit column stride).
std::optional<LtOperand> columnMajor(int64_t r, int64_t c, int64_t sr,
                                     int64_t sc) {
  if (sr < 0 || sc < 0)
    return std::nullopt;
  int64_t r1 = std::max<int64_t>(r, 1), c1 = std::max<int64_t>(c, 1);
  LtOperand o;
  if ((r <= 1 || sr == 1) && (c <= 1 || sc >= r1)) {
    o.rows = r;
    o.cols = c;
    o.ld = c <= 1 ? r1 : sc;
    return o;
  }
  if ((c <= 1 || sc == 1) && (r <= 1 || sr >= c1)) {
    o.transpose = true;
    o.rows = c;
    o.cols = r;
    o.ld = r <= 1 ? c1 : sr;
    return o;
  }
  return std::nullopt;
}

} // namespace

std::optional<LtProblem> dist_rt::cuda::planProduct(const GemmShape &s) {
  LtProblem p;
  p.batch = s.batch;
  std::optional<LtOperand> a, b, c = columnMajor(s.m, s.n, s.cSm, s.cSn);
  if (c && !c->transpose) {
    p.m = s.m;
    p.n = s.n;
    a = columnMajor(s.m, s.k, s.aSm, s.aSk);
    b = columnMajor(s.k, s.n, s.bSk, s.bSn);
  } else {
    // A row-major C: compute C^T = B^T A^T, column-major.
    c = columnMajor(s.n, s.m, s.cSn, s.cSm);
    if (!c || c->transpose)
      return std::nullopt;
    p.swapped = true;
    p.m = s.n;
    p.n = s.m;
    a = columnMajor(s.n, s.k, s.bSn, s.bSk);
    b = columnMajor(s.k, s.m, s.aSk, s.aSm);
  }
  if (!a || !b)
    return std::nullopt;
  p.k = s.k;
  p.a = *a;
  p.b = *b;
  p.c = *c;
  p.a.batchStride = p.swapped ? s.bSb : s.aSb;
  p.b.batchStride = p.swapped ? s.aSb : s.bSb;
  p.c.batchStride = s.cSb;
  if (p.a.batchStride < 0 || p.b.batchStride < 0 || p.c.batchStride < 0)
    return std::nullopt;
  return p;
}

#if DIST_RT_HAVE_CUBLASLT

namespace {

/// The cuBLASLt entry points used.
struct LtApi {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtGetStatusString) statusString = nullptr;
  decltype(&cublasLtMatmulDescCreate) descCreate = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) descSet = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layoutSet = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) prefCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) prefSet = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
};

/// A product's descriptors and algorithm, made on its first call.
struct Prepared {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

/// The process's cuBLASLt: the library, a handle, a workspace and the
/// prepared products (never destroyed: one device per process).
struct Lt {
  std::mutex mutex;
  bool tried = false;
  /// Why cuBLASLt cannot be used ("" once it is loaded).
  std::string problem;
  LtApi api;
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = size_t{32} << 20;
  std::map<std::array<int64_t, 16>, Prepared> prepared;
};

Lt &lt() {
  static Lt *l = new Lt();
  return *l;
}

/// Loads cuBLASLt and makes the handle and workspace; sets l.problem when
/// it cannot. Called with l.mutex held.
void load(Lt &l) {
  l.tried = true;
  const char *path = std::getenv("DIST_RT_CUBLASLT");
  void *lib = nullptr;
  std::string tried;
  for (const char *name : {path, "libcublasLt.so.13", "libcublasLt.so.12"}) {
    if (!name || !*name)
      continue;
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib)
      break;
    if (!tried.empty())
      tried += "; ";
    const char *why = dlerror();
    tried += why ? why : name;
    if (name == path)
      break; // the file the user named, or nothing
  }
  if (!lib) {
    l.problem = "matrix products need cuBLASLt (CUDA's libcublasLt), which "
                "does not load: " +
                tried;
    return;
  }
  LtApi &a = l.api;
  if (!(dist_rt::resolveSymbol(lib, "cublasLtCreate", a.create) &&
        dist_rt::resolveSymbol(lib, "cublasLtGetStatusString",
                               a.statusString) &&
        dist_rt::resolveSymbol(lib, "cublasLtMatmulDescCreate", a.descCreate) &&
        dist_rt::resolveSymbol(lib, "cublasLtMatmulDescSetAttribute",
                               a.descSet) &&
        dist_rt::resolveSymbol(lib, "cublasLtMatrixLayoutCreate",
                               a.layoutCreate) &&
        dist_rt::resolveSymbol(lib, "cublasLtMatrixLayoutSetAttribute",
                               a.layoutSet) &&
        dist_rt::resolveSymbol(lib, "cublasLtMatmulPreferenceCreate",
                               a.prefCreate) &&
        dist_rt::resolveSymbol(lib, "cublasLtMatmulPreferenceSetAttribute",
                               a.prefSet) &&
        dist_rt::resolveSymbol(lib, "cublasLtMatmulAlgoGetHeuristic",
                               a.heuristic) &&
        dist_rt::resolveSymbol(lib, "cublasLtMatmul", a.matmul))) {
    l.problem = "the cuBLASLt library found lacks cublasLtMatmul's API";
    return;
  }
  if (cublasStatus_t st = a.create(&l.handle); st != CUBLAS_STATUS_SUCCESS) {
    l.problem = std::string("cuBLASLt does not start: ") + a.statusString(st);
    return;
  }
  std::string error;
  l.workspace = dist_rt::cuda::allocate(l.workspaceBytes, error);
  if (!l.workspace) {
    l.problem = "cuBLASLt's workspace: " + error;
    return;
  }
}

/// Fails the run with "CUDA: cuBLASLt <what>: <status>".
void failLt(const Lt &l, const char *what, cublasStatus_t st) {
  std::string text = std::string("CUDA: cuBLASLt ") + what + ": " +
                     (l.api.statusString ? l.api.statusString(st) : "error");
  dist_rt::failRun(text.c_str());
}

/// The descriptors and algorithm of `p` for elements of `bytes` bytes,
/// made and cached on first use; null (the run failed) when cuBLASLt
/// refuses them. Called with l.mutex held.
const Prepared *prepare(Lt &l, const LtProblem &p, int bytes,
                        Rounding rounding) {
  std::array<int64_t, 16> key{bytes,
                              p.a.transpose,
                              p.b.transpose,
                              p.m,
                              p.n,
                              p.k,
                              p.batch,
                              p.a.ld,
                              p.b.ld,
                              p.c.ld,
                              p.a.batchStride,
                              p.b.batchStride,
                              p.c.batchStride,
                              p.a.rows,
                              p.b.rows,
                              static_cast<int64_t>(rounding)};
  auto it = l.prepared.find(key);
  if (it != l.prepared.end())
    return &it->second;
  const LtApi &a = l.api;
  cudaDataType_t type = bytes == 8 ? CUDA_R_64F : CUDA_R_32F;
  cublasComputeType_t compute =
      bytes == 8 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  if (bytes == 4 && rounding == Rounding::Tf32)
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (bytes == 4 && rounding == Rounding::Bf16)
    compute = CUBLAS_COMPUTE_32F_FAST_16BF;
  Prepared pr;
  cublasStatus_t st = a.descCreate(&pr.op, compute, type);
  if (st != CUBLAS_STATUS_SUCCESS) {
    failLt(l, "descriptor", st);
    return nullptr;
  }
  cublasOperation_t ta = p.a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = p.b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  a.descSet(pr.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  a.descSet(pr.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
  int32_t count = static_cast<int32_t>(p.batch);
  for (auto [layout, o] : {std::pair{&pr.a, &p.a}, std::pair{&pr.b, &p.b},
                           std::pair{&pr.c, &p.c}}) {
    st = a.layoutCreate(layout, type, static_cast<uint64_t>(o->rows),
                        static_cast<uint64_t>(o->cols), o->ld);
    if (st != CUBLAS_STATUS_SUCCESS) {
      failLt(l, "matrix layout", st);
      return nullptr;
    }
    if (p.batch > 1) {
      int64_t stride = o->batchStride;
      a.layoutSet(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                  sizeof(count));
      a.layoutSet(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                  sizeof(stride));
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  a.prefCreate(&pref);
  uint64_t ws = l.workspaceBytes;
  a.prefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  st = a.heuristic(l.handle, pr.op, pr.a, pr.b, pr.c, pr.c, pref, 1, &result,
                   &found);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    failLt(l, "has no algorithm for the product",
           st == CUBLAS_STATUS_SUCCESS ? CUBLAS_STATUS_NOT_SUPPORTED : st);
    return nullptr;
  }
  pr.algo = result.algo;
  return &l.prepared.emplace(key, pr).first->second;
}

/// D = alpha * op(A) op(B) + beta * C with D = C, on the device's stream,
/// then waits for it. `aPtr` and `bPtr` are the problem's operands (the
/// caller's swapped when p.swapped).
void matmul(const LtProblem &p, int bytes, int64_t aPtr, int64_t bPtr,
            int64_t cPtr, bool set, Rounding rounding) {
  void *stream = dist_rt::cuda::currentStream();
  if (!stream) {
    dist_rt::failRun("no GPU is open");
    return;
  }
  Lt &l = lt();
  {
    std::lock_guard<std::mutex> lock(l.mutex);
    if (!l.tried)
      load(l);
    if (!l.problem.empty()) {
      std::string text = "CUDA: " + l.problem;
      dist_rt::failRun(text.c_str());
      return;
    }
    const Prepared *pr = prepare(l, p, bytes, rounding);
    if (!pr)
      return;
    float alpha32 = 1.0f, beta32 = set ? 0.0f : 1.0f;
    double alpha64 = 1.0, beta64 = set ? 0.0 : 1.0;
    const void *alpha = bytes == 8 ? static_cast<const void *>(&alpha64)
                                   : static_cast<const void *>(&alpha32);
    const void *beta = bytes == 8 ? static_cast<const void *>(&beta64)
                                  : static_cast<const void *>(&beta32);
    auto *c = reinterpret_cast<void *>(cPtr);
    cublasStatus_t st = l.api.matmul(
        l.handle, pr->op, alpha, reinterpret_cast<const void *>(aPtr), pr->a,
        reinterpret_cast<const void *>(bPtr), pr->b, beta, c, pr->c, c, pr->c,
        &pr->algo, l.workspace, l.workspaceBytes,
        static_cast<cudaStream_t>(stream));
    if (st != CUBLAS_STATUS_SUCCESS) {
      failLt(l, "product", st);
      return;
    }
  }
  std::string error = dist_rt::cuda::synchronize();
  if (!error.empty()) {
    std::string text = "CUDA: a product failed: " + error;
    dist_rt::failRun(text.c_str());
  }
}

/// Element (t, i, j) of a strided batch of matrices at `base`.
template <typename T>
T &at(int64_t base, int64_t t, int64_t i, int64_t j, int64_t sb, int64_t si,
      int64_t sj) {
  return reinterpret_cast<T *>(base)[t * sb + i * si + j * sj];
}

/// The product with every operand packed into a contiguous row-major
/// device buffer on the host (managed memory, once the stream is idle),
/// for layouts cuBLAS cannot take; C gets the packed result back.
template <typename T>
void packedProduct(const GemmShape &s, int64_t a, int64_t b, int64_t c,
                   bool set, Rounding rounding) {
  std::string error = dist_rt::cuda::synchronize();
  if (!error.empty()) {
    std::string text = "CUDA: a kernel failed: " + error;
    dist_rt::failRun(text.c_str());
    return;
  }
  int64_t ba = s.aSb == 0 ? 1 : s.batch, bb = s.bSb == 0 ? 1 : s.batch;
  size_t sizes[] = {static_cast<size_t>(ba * s.m * s.k) * sizeof(T),
                    static_cast<size_t>(bb * s.k * s.n) * sizeof(T),
                    static_cast<size_t>(s.batch * s.m * s.n) * sizeof(T)};
  void *blocks[3] = {nullptr, nullptr, nullptr};
  for (int i = 0; i < 3; ++i) {
    blocks[i] = dist_rt::cuda::allocate(std::max<size_t>(sizes[i], 1), error);
    if (!blocks[i]) {
      for (void *blk : blocks)
        dist_rt::cuda::release(blk);
      std::string text = "CUDA: a packed product's operand: " + error;
      dist_rt::failRun(text.c_str());
      return;
    }
  }
  auto pa = reinterpret_cast<int64_t>(blocks[0]);
  auto pb = reinterpret_cast<int64_t>(blocks[1]);
  auto pc = reinterpret_cast<int64_t>(blocks[2]);
  for (int64_t t = 0; t < ba; ++t)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t p = 0; p < s.k; ++p)
        at<T>(pa, t, i, p, s.m * s.k, s.k, 1) =
            at<T>(a, t, i, p, s.aSb, s.aSm, s.aSk);
  for (int64_t t = 0; t < bb; ++t)
    for (int64_t p = 0; p < s.k; ++p)
      for (int64_t j = 0; j < s.n; ++j)
        at<T>(pb, t, p, j, s.k * s.n, s.n, 1) =
            at<T>(b, t, p, j, s.bSb, s.bSk, s.bSn);
  GemmShape packed{s.batch,
                   s.m,
                   s.n,
                   s.k,
                   ba == 1 ? 0 : s.m * s.k,
                   s.k,
                   1,
                   bb == 1 ? 0 : s.k * s.n,
                   s.n,
                   1,
                   s.m * s.n,
                   s.n,
                   1};
  std::optional<LtProblem> p = dist_rt::cuda::planProduct(packed);
  if (p)
    matmul(*p, sizeof(T), p->swapped ? pb : pa, p->swapped ? pa : pb, pc,
           /*set=*/true, rounding);
  if (!p || dist_rt::runFailed()) {
    if (!p)
      dist_rt::failRun("CUDA: a packed product has no cuBLAS layout");
  } else {
    // Batches whose C matrices coincide (c_sb = 0) sum their products.
    for (int64_t t = 0; t < s.batch; ++t)
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          T v = at<T>(pc, t, i, j, s.m * s.n, s.n, 1);
          T &dst = at<T>(c, t, i, j, s.cSb, s.cSm, s.cSn);
          dst = set && (s.cSb != 0 || t == 0) ? v : dst + v;
        }
  }
  for (void *blk : blocks)
    dist_rt::cuda::release(blk);
}

/// dist_rt_cuda_gemm_* for elements of type T.
template <typename T>
void product(const GemmShape &s, int64_t a, int64_t b, int64_t c, bool set,
             Rounding rounding = Rounding::None) {
  if (dist_rt::runFailed() || s.batch <= 0 || s.m <= 0 || s.n <= 0)
    return;
  if (s.k <= 0) {
    if (!set)
      return;
    // C = 0: no product to run; the host clears C once the stream is idle.
    if (std::string error = dist_rt::cuda::synchronize(); !error.empty()) {
      std::string text = "CUDA: a kernel failed: " + error;
      dist_rt::failRun(text.c_str());
      return;
    }
    for (int64_t t = 0; t < s.batch; ++t)
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j)
          at<T>(c, t, i, j, s.cSb, s.cSm, s.cSn) = T(0);
    return;
  }
  std::optional<LtProblem> p = dist_rt::cuda::planProduct(s);
  if (!p) {
    packedProduct<T>(s, a, b, c, set, rounding);
    return;
  }
  int64_t first = p->swapped ? b : a, second = p->swapped ? a : b;
  if (s.batch == 1 || s.cSb != 0) {
    matmul(*p, sizeof(T), first, second, c, set, rounding);
    return;
  }
  // Every batch writes the same C: one product after the other, the first
  // setting C (when `set`), the rest adding to it.
  LtProblem one = *p;
  one.batch = 1;
  int64_t firstSb = one.a.batchStride * int64_t(sizeof(T));
  int64_t secondSb = one.b.batchStride * int64_t(sizeof(T));
  for (int64_t t = 0; t < s.batch && !dist_rt::runFailed(); ++t)
    matmul(one, sizeof(T), first + t * firstSb, second + t * secondSb, c,
           set && t == 0, rounding);
}

} // namespace

#else // !DIST_RT_HAVE_CUBLASLT

namespace {
template <typename T>
void product(const GemmShape &, int64_t, int64_t, int64_t, bool,
             Rounding = Rounding::None) {
  dist_rt::failRun("CUDA: this runtime was built without cuBLASLt "
                   "(cublasLt.h was not found)");
}
} // namespace

#endif // DIST_RT_HAVE_CUBLASLT

extern "C" void dist_rt_cuda_gemm_f32(int64_t batch, int64_t m, int64_t n,
                                      int64_t k, int64_t a, int64_t a_sb,
                                      int64_t a_sm, int64_t a_sk, int64_t b,
                                      int64_t b_sk, int64_t b_sn, int64_t c,
                                      int64_t c_sb, int64_t c_sm, int64_t c_sn,
                                      int64_t b_sb) {
  product<float>(
      {batch, m, n, k, a_sb, a_sm, a_sk, b_sb, b_sk, b_sn, c_sb, c_sm, c_sn}, a,
      b, c, /*set=*/false);
}

extern "C" void dist_rt_cuda_gemm_f64(int64_t batch, int64_t m, int64_t n,
                                      int64_t k, int64_t a, int64_t a_sb,
                                      int64_t a_sm, int64_t a_sk, int64_t b,
                                      int64_t b_sk, int64_t b_sn, int64_t c,
                                      int64_t c_sb, int64_t c_sm, int64_t c_sn,
                                      int64_t b_sb) {
  product<double>(
      {batch, m, n, k, a_sb, a_sm, a_sk, b_sb, b_sk, b_sn, c_sb, c_sm, c_sn}, a,
      b, c, /*set=*/false);
}

extern "C" void dist_rt_cuda_gemm_set_f32(int64_t batch, int64_t m, int64_t n,
                                          int64_t k, int64_t a, int64_t a_sb,
                                          int64_t a_sm, int64_t a_sk, int64_t b,
                                          int64_t b_sk, int64_t b_sn, int64_t c,
                                          int64_t c_sb, int64_t c_sm,
                                          int64_t c_sn, int64_t b_sb) {
  product<float>(
      {batch, m, n, k, a_sb, a_sm, a_sk, b_sb, b_sk, b_sn, c_sb, c_sm, c_sn}, a,
      b, c, /*set=*/true);
}

extern "C" void dist_rt_cuda_gemm_set_f64(int64_t batch, int64_t m, int64_t n,
                                          int64_t k, int64_t a, int64_t a_sb,
                                          int64_t a_sm, int64_t a_sk, int64_t b,
                                          int64_t b_sk, int64_t b_sn, int64_t c,
                                          int64_t c_sb, int64_t c_sm,
                                          int64_t c_sn, int64_t b_sb) {
  product<double>(
      {batch, m, n, k, a_sb, a_sm, a_sk, b_sb, b_sk, b_sn, c_sb, c_sm, c_sn}, a,
      b, c, /*set=*/true);
}

// The f32 products of a model compiled with --precision=tf32 or bf16.
#define DIST_RT_CUDA_GEMM_ROUNDED(NAME, SET, ROUNDING)                         \
  extern "C" void NAME(                                                        \
      int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a, int64_t a_sb, \
      int64_t a_sm, int64_t a_sk, int64_t b, int64_t b_sk, int64_t b_sn,       \
      int64_t c, int64_t c_sb, int64_t c_sm, int64_t c_sn, int64_t b_sb) {     \
    product<float>({batch, m, n, k, a_sb, a_sm, a_sk, b_sb, b_sk, b_sn, c_sb,  \
                    c_sm, c_sn},                                               \
                   a, b, c, SET, ROUNDING);                                    \
  }
DIST_RT_CUDA_GEMM_ROUNDED(dist_rt_cuda_gemm_f32_tf32, false, Rounding::Tf32)
DIST_RT_CUDA_GEMM_ROUNDED(dist_rt_cuda_gemm_set_f32_tf32, true, Rounding::Tf32)
DIST_RT_CUDA_GEMM_ROUNDED(dist_rt_cuda_gemm_f32_bf16, false, Rounding::Bf16)
DIST_RT_CUDA_GEMM_ROUNDED(dist_rt_cuda_gemm_set_f32_bf16, true, Rounding::Bf16)
#undef DIST_RT_CUDA_GEMM_ROUNDED
