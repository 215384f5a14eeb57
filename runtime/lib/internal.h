//===- internal.h - Helpers shared by the runtime sources -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Declarations that several runtime sources share but that are not part of
// the C API: strided copies, a deleter for malloc'ed buffers, a write loop
// for file descriptors, the link between the thread count and OpenBLAS, a
// switch that tests use to pick the built-in gemm, and a guard that turns
// C++ exceptions into statuses at the C API boundary. Internal to the
// runtime library (hidden visibility); tests reach them by linking the
// static library.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_LIB_INTERNAL_H
#define DIST_RT_LIB_INTERNAL_H

#include "simd_activation.h"
#include "status.h"

#include "dist_rt/comm.h"
#include "dist_rt/model.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#include <exception>
#include <new>
#include <string>
#define DIST_RT_HAS_EXCEPTIONS 1
#else
#define DIST_RT_HAS_EXCEPTIONS 0
#endif

namespace dist_rt {

//===----------------------------------------------------------------------===//
// Communicators (comm.cpp)
//===----------------------------------------------------------------------===//

/// Starts sending `count` elements to `peer` without waiting for it (see
/// CommBackend::startSend; dist_rt_send's checks); `*out_request` (null
/// when already complete) must then be polled with commTestSend, and `buf`
/// kept, until done.
dist_rt_status_t commStartSend(dist_rt_comm_t comm, const void *buf,
                               int64_t count, uint32_t dtype, int32_t peer,
                               int32_t tag, void **out_request);
/// Sets `*out_done` once the send `request` has completed.
dist_rt_status_t commTestSend(dist_rt_comm_t comm, void *request,
                              bool *out_done);
/// The deadline of each operation on `comm` in seconds (0: none).
double commTimeoutSeconds(dist_rt_comm_t comm);

//===----------------------------------------------------------------------===//
// Mesh (mesh.cpp)
//===----------------------------------------------------------------------===//

/// Concatenates `bytes` bytes (a multiple of 4) of `src` from every rank of
/// mesh axis `axis`, in coordinate order, into `dst` on every rank of it.
/// Collective over the axis; runs after the collectives already started.
dist_rt_status_t meshGatherBytes(int64_t axis, const void *src, void *dst,
                                 int64_t bytes);

/// Seconds this process has waited in dist_rt_pp_recv so far.
double pipelineRecvWaitSeconds();

/// Waits until every pipeline send (dist_rt_pp_send) of this rank has been
/// received, or the deadline of the pipeline communicator passes.
dist_rt_status_t pipelineFinishSends();

/// Copies `bytes` bytes of `buf` on the rank of pipeline stage `rootStage`
/// to every stage's rank (nothing when one process runs every stage).
dist_rt_status_t pipelineBroadcast(void *buf, int64_t bytes, int64_t rootStage);

//===----------------------------------------------------------------------===//
// Thread pool (threads.cpp)
//===----------------------------------------------------------------------===//

/// The items [*begin, *end) of chunk `chunk` when dist_rt_parallel_for cuts
/// `n` items into `chunks` runs: runs of equal length, the first n % chunks
/// one longer. Kernels that choose how to cut their work weigh these runs.
inline void parallelChunkRange(int64_t n, int64_t chunks, int64_t chunk,
                               int64_t *begin, int64_t *end) {
  int64_t base = n / chunks, extra = n % chunks;
  *begin = chunk * base + (chunk < extra ? chunk : extra);
  *end = *begin + base + (chunk < extra ? 1 : 0);
}

/// The threads a dist_rt_parallel_for called here would run on: 1 inside a
/// parallel loop (nested loops run serially), else the thread count.
int64_t parallelThreads();

//===----------------------------------------------------------------------===//
// Errors met by generated code during a run (threads.cpp)
//===----------------------------------------------------------------------===//

/// The first error that generated code reported (dist_rt_index_error)
/// while a run was going on.
struct RunErrors {
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::string message;
};

/// Fails the run going on on this thread with `text` (the first error
/// wins), or prints it as an error line outside a run.
void failRun(const char *text);

/// Whether the run going on on this thread has failed.
bool runFailed();

/// Makes `errors` the destination of dist_rt_index_error on the calling
/// thread, and on the pool's workers while they run its loops, for the
/// lifetime of the guard.
class RunErrorScope {
public:
  explicit RunErrorScope(RunErrors &errors);
  ~RunErrorScope();
  RunErrorScope(const RunErrorScope &) = delete;
  RunErrorScope &operator=(const RunErrorScope &) = delete;

private:
  RunErrors *previous;
};

//===----------------------------------------------------------------------===//
// Class labels of a cross_entropy training step (model.cpp)
//===----------------------------------------------------------------------===//

/// The first element (row-major index) of the int64 tensor `labels` that
/// is neither a class in [0, train.label_classes) nor
/// train.label_ignore_index, or -1 when there is none or the step does not
/// check labels.
int64_t firstBadLabel(const dist_rt_train_desc_t &train,
                      const dist_rt_tensor_t &labels);

//===----------------------------------------------------------------------===//
// Parameters split by tensor parallelism (model.cpp)
//===----------------------------------------------------------------------===//

/// The split of parameter `index` ({-1, 0, 1} when it is whole).
dist_rt_param_shard_t paramShard(const dist_rt_model_desc_t &desc,
                                 uint32_t index);
/// The extents of the whole parameter `index` (the local ones unless split).
std::vector<int64_t> paramFullDims(const dist_rt_model_desc_t &desc,
                                   uint32_t index);
/// One chunk of this rank's part of a split parameter: `bytes` bytes at
/// `localOffset` in its part and at `wholeOffset` in the whole tensor.
struct ParamChunk {
  int64_t localOffset;
  int64_t wholeOffset;
  int64_t bytes;
};
/// The chunks of this rank's part of split parameter `index`, in order.
std::vector<ParamChunk> paramChunks(const dist_rt_model_desc_t &desc,
                                    uint32_t index);
/// Copies this rank's part of split parameter `index` from the whole
/// tensor `full` into `local`.
void sliceParam(const dist_rt_model_desc_t &desc, uint32_t index,
                const void *full, void *local);
/// Assembles the whole split parameter `index` of `model` in `full` from
/// every rank's part; collective over the parameter's mesh axis.
dist_rt_status_t gatherParam(dist_rt_model_t model, uint32_t index,
                             std::vector<char> &full);

//===----------------------------------------------------------------------===//
// Strided copies (alloc.cpp)
//===----------------------------------------------------------------------===//

/// Copies the `rank`-dimensional array of `sizes` elements of `elemSize`
/// bytes from `src` to `dst`. Strides are in elements and may be zero or
/// negative; `src` and `dst` point to the element at index 0. Contiguous
/// row-major operands are copied with one memcpy.
void copyStrided(size_t elemSize, uint32_t rank, const int64_t *sizes,
                 const char *src, const int64_t *srcStrides, char *dst,
                 const int64_t *dstStrides);

/// Returns true when `strides` are the contiguous row-major strides of
/// `sizes` (dimensions of extent 1 may have any stride; an array without
/// elements is contiguous).
bool isContiguous(uint32_t rank, const int64_t *sizes, const int64_t *strides);

//===----------------------------------------------------------------------===//
// Allocator (alloc.cpp)
//===----------------------------------------------------------------------===//

/// The large blocks of the allocator that generated code calls: address-
/// ordered first fit over chunks obtained with mmap (address space, backed
/// by pages only once written). A request takes the lowest free range that
/// holds it, and a freed block merges with the free ranges next to it in
/// its chunk. Not thread-safe (the allocator's mutex guards it).
class Arena {
public:
  /// Arena blocks are whole pages.
  static constexpr size_t kPageBytes = 4096;

  /// Chunks of at least `chunkBytes` each.
  explicit Arena(size_t chunkBytes = size_t{64} << 20)
      : chunkBytes(chunkBytes) {}
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;
  /// Gives every chunk back, live blocks included.
  ~Arena();

  /// A page-aligned block of `bytes` (a multiple of kPageBytes), or null.
  char *allocate(size_t bytes);
  /// Returns a block that allocate(bytes) gave.
  void release(char *block, size_t bytes);
  /// Gives the chunks that are wholly free back to the system.
  void trim();

private:
  /// The chunk holding `at`, by base address.
  std::map<char *, size_t>::iterator chunkOf(char *at);

  size_t chunkBytes;
  /// Chunks by base address.
  std::map<char *, size_t> chunks;
  /// Free ranges by address; each lies in one chunk.
  std::map<char *, size_t> freeRanges;
};

//===----------------------------------------------------------------------===//
// Buffers and files (npy.cpp)
//===----------------------------------------------------------------------===//

/// Frees a buffer from malloc or posix_memalign; for std::unique_ptr.
struct FreeDeleter {
  void operator()(void *buffer) const { std::free(buffer); }
};

/// Writes all `size` bytes to `fd`, retrying short and interrupted writes.
/// Returns false with errno set on failure.
bool writeFully(int fd, const void *buffer, size_t size);

/// Reads up to `size` bytes from `fd`, retrying short and interrupted reads.
/// Returns the number of bytes read (less than `size` only at end of file),
/// or -1 with errno set.
int64_t readFully(int fd, void *buffer, size_t size);

/// Fills `out` with rows [first, first + count) of the leading dimension of
/// a tensor being written.
using NpyRowReader =
    std::function<dist_rt_status_t(int64_t first, int64_t count, void *out)>;

/// Writes a .npy file as dist_rt_npy_write does (to a temporary name, then
/// renamed), its data read in pieces of `rowsPerPiece` rows of the leading
/// dimension, so that the whole tensor is never in memory at once.
dist_rt_status_t writeNpyRows(const char *path, uint32_t dtype, uint32_t rank,
                              const int64_t *dims, int64_t rowsPerPiece,
                              const NpyRowReader &readRows);

/// `bytes` bytes of a tensor's data, at `offset` in it.
struct NpyPiece {
  uint64_t offset;
  const void *data;
  uint64_t bytes;
};

/// Writes `pieces` of a tensor of `dtype` and `dims` into the .npy file
/// `path`, in place (no temporary file), with its header when `withHeader`.
/// The file is created when missing; an existing one is overwritten in
/// place, the header's writer setting its size, so that several processes
/// can each write their pieces of one tensor into it.
dist_rt_status_t writeNpyPieces(const char *path, uint32_t dtype, uint32_t rank,
                                const int64_t *dims, bool withHeader,
                                const std::vector<NpyPiece> &pieces);

//===----------------------------------------------------------------------===//
// Convolution (conv.cpp)
//===----------------------------------------------------------------------===//

/// The kernels of dist_rt_conv2d_f32: its own choice, the AVX-512 tiles
/// vectorised over output positions or over filters, the AVX2 depthwise
/// rows (where they apply: the choice falls back otherwise), the plain
/// loop, or products by panels of output positions.
enum class ConvKernel { Auto, Positions, Filters, Plain, Avx2, Product };
/// Makes dist_rt_conv2d_f32 use `kernel`. For tests; not meant to be
/// changed while convolutions run.
void setConvKernel(ConvKernel kernel);
/// Whether, on an AVX-512 host, the first calls of each geometry time the
/// tiles against products by panels and the rest take the faster (conv.cpp;
/// on unless DIST_RT_CONV_TUNE=0). For tests, as setConvKernel.
void setConvTuning(bool on);
/// Makes the position-vectorised tiles take panels of at most `bytes` of
/// input, and the products panels of at most `bytes` of columns and
/// outputs (0: half the host's L2 cache). For tests, as setConvKernel.
void setConvPanelBytes(size_t bytes);
/// How many convolution calls so far ran as products by panels (for
/// tests).
int64_t productConvCalls();

//===----------------------------------------------------------------------===//
// OpenBLAS (blas.cpp)
//===----------------------------------------------------------------------===//

/// Loads OpenBLAS if that was not tried yet and says whether it is usable.
bool blasAvailable();

/// When `builtin` is true, gemm calls use the built-in loops even if
/// OpenBLAS is loaded. For tests; not meant to be toggled while gemms run.
void setForceBuiltinGemm(bool builtin);

/// When `plain` is true, dist_rt_conv2d_nhwc_f32 runs its plain loop even
/// where oneDNN loaded (conv_nhwc.cpp). For tests.
void setForcePlainNhwcConv(bool plain);
/// Channels-last convolutions that oneDNN ran (conv_nhwc.cpp).
int64_t dnnlConvolutionCalls();
/// Transposed channels-last convolutions run as one product and a copy
/// (conv_nhwc.cpp's upsamplingProduct).
int64_t upsamplingProductCalls();
/// Channels-last 1x1 convolutions of one-pixel images run as products
/// (conv_nhwc.cpp's onePixelProduct).
int64_t onePixelProductCalls();
/// Channels-last convolutions whose sum ran apart from oneDNN's primitive
/// (conv_nhwc.cpp's sumApartChunks).
int64_t sumApartCalls();
/// Pointwise-depthwise pairs that ran in bands
/// (dist_rt_conv2d_nhwc_pwdw_f32).
int64_t pointwiseDepthwiseBandCalls();
/// The L2 cache size the channels-last convolutions weigh their ways
/// against (sums apart, pointwise-depthwise bands; 0: the host's, as the C
/// library reads it). For tests.
void setNhwcCacheBytes(int64_t bytes);
/// Channels-last convolutions that a Winograd primitive ran (conv_nhwc.cpp).
int64_t winogradConvolutionCalls();
/// Channels-last convolutions run one image a part (conv_nhwc.cpp's
/// imagesApart).
int64_t imagesApartCalls();
/// Whether oneDNN loads here and makes a Winograd primitive for a 3x3
/// convolution of 16 channels (AVX-512, not capped by DNNL_MAX_CPU_ISA).
bool nhwcWinogradOffered();
/// How 3x3 convolutions choose Winograd's algorithm: 0 never, 1 wherever
/// oneDNN offers it, 2 by measurement, 3 wherever offered and one image a
/// part (imagesApart), -1 as DIST_RT_WINOGRAD says. For tests.
void setNhwcWinograd(int mode);

/// Declares [base, base + size) read-only until the matching
/// unregisterConstantMemory (a parameter file's mapping): products whose
/// weight lies there and is read transposed use a cached untransposed copy.
void registerConstantMemory(const void *base, size_t size);
/// Ends the range starting at `base` and drops its cached copies.
void unregisterConstantMemory(const void *base);
/// Data derived from the read-only bytes [src, src + srcBytes) by `make`
/// (which writes `bytes` bytes at `dst`, 64-byte aligned), computed once
/// and cached under (src, key) until src's range is unregistered: returned
/// when the source lies in memory registered with registerConstantMemory
/// and the cache has room, null otherwise (the caller then derives it
/// itself). The dist_rt_conv2d_f32 kernels cache their packed weights
/// this way (conv.cpp).
const void *derivedConstant(const void *src, size_t srcBytes,
                            const int64_t (&key)[3], size_t bytes,
                            void (*make)(void *dst, const void *ctx),
                            const void *ctx);
/// Whether [src, src + bytes) lies in memory registered with
/// registerConstantMemory.
bool isConstantMemory(const void *src, size_t bytes);
/// Bytes held by cached copies (for tests).
size_t constantCopyBytes();
/// OpenBLAS's kernel set for this process ("SkylakeX", ...; loads it), or
/// "" with the built-in loops (for tests).
std::string blasCoreName();
/// The x86 vector extensions a kernel can use here, in increasing order.
enum class SimdLevel { None, Avx, Avx2, Avx512 };
/// This CPU's level (cpuid, with the OS's support for the registers),
/// capped by DIST_RT_SIMD=avx2, avx or none (a smaller CPU's kernels
/// tested on a larger one).
SimdLevel hostSimdLevel();
/// The OPENBLAS_CORETYPE the runtime loads OpenBLAS with, from the
/// environment's OPENBLAS_CORETYPE (`given`) and DIST_RT_OPENBLAS_CORETYPE
/// (`forced`), either null, and the host's level (see blas.cpp); "" leaves
/// the choice to OpenBLAS.
std::string chooseOpenblasCoreType(const char *given, const char *forced,
                                   SimdLevel host);
/// How many gemm calls so far were spread over the thread pool (for tests).
int64_t spreadGemmCalls();
/// How many gemm calls so far ran their batch as one product, folded into
/// the rows or columns of the operand not shared (for tests).
int64_t foldedGemmCalls();
/// How many gemm calls so far gathered the rows (or columns) of a batch
/// sharing an operand into one product (for tests).
int64_t gatheredGemmCalls();
/// Whether oneDNN's sgemm loaded (see blas.cpp), and how many products
/// it ran so far (for tests).
bool dnnlAvailable();
int64_t dnnlGemmCalls();
/// How many products of one row or column the library's gemv ran so far
/// (for tests).
int64_t gemvGemmCalls();

/// f32 products on constant weights packed once (sgemm_packed.cpp): whether
/// this host runs them (AVX2 and FMA, or AVX-512), the bytes of the packed
/// copy of a k x n B, packing it (element (p, j) at
/// b[p * rowStride + j * colStride]), and C (m x n, rows ldc apart) = or +=
/// A (m x k, rows lda apart, unit column stride) * B from the packed copy,
/// spread over the thread pool by panels of 16 columns (48 on AVX-512;
/// false, nothing done, when memory for packing A is out).
bool packedSgemmAvailable();
/// Whether this host runs the products on a constant A below (as
/// packedSgemmAvailable: tiles of 6 rows by 16 columns on AVX2, 8 by 48 on
/// AVX-512).
bool packedSgemmAAvailable();
size_t packedSgemmBytes(int64_t k, int64_t n);
void packSgemmB(const float *b, int64_t k, int64_t n, int64_t rowStride,
                int64_t colStride, float *dst);
bool packedSgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                 const float *packed, float *c, int64_t ldc, bool overwrite);
/// The same with A the constant (a convolution's filters, out = W x cols):
/// the bytes of the packed copy of an m x k A, packing it (element (i, p)
/// at a[i * rowStride + p * colStride]), and C (m x n, rows ldc apart) = or
/// += rows [firstRow, firstRow + m) (firstRow a multiple of the tiles' rows,
/// 6 or 8: 24 suits both) of the A
/// packed for `packedRows` rows * B (k x n, rows ldb apart, unit column
/// stride), B's panels packed as the tasks reach them (nothing allocated),
/// then the epilogue when there is one: per element of C, v = (old C unless
/// overwriting) + sum + bias[row] (bias indexed from firstRow's row, null
/// for none), then v * gate(v) when `gate` names one (SiLU, HardSwish),
/// max(v, 0) when `relu`, v clamped to [lo, hi] when `clip` (NaN kept by
/// all).
struct PackedEpilogue {
  const float *bias;
  bool relu, clip;
  float lo, hi;
  /// C's columns an image's (PackedImageColumns): the rowStride - rowLen
  /// elements after each of its rows set to +0 (DIST_RT_GEMM_ZERO_GAPS).
  bool zeroGaps = false;
  Gate gate = Gate::None;
};
size_t packedSgemmABytes(int64_t m, int64_t k);
void packSgemmA(const float *a, int64_t m, int64_t k, int64_t rowStride,
                int64_t colStride, float *dst);
/// C's columns as output positions [first, first + n) of an image whose
/// rows hold rowLen positions, rowStride apart (a convolution's output
/// written inside a padded buffer): column j of C at c + the place of
/// position first + j less that of position first. B's columns stay
/// contiguous.
struct PackedImageColumns {
  int64_t first, rowLen, rowStride;
};
void packedSgemmA(int64_t m, int64_t n, int64_t k, const float *packed,
                  int64_t packedRows, int64_t firstRow, const float *b,
                  int64_t ldb, float *c, int64_t ldc, bool overwrite,
                  const PackedEpilogue *epilogue = nullptr,
                  const PackedImageColumns *image = nullptr);
/// Rows per block of packedSgemmA's tasks for an m x n product shared by
/// `threads` threads (for tests).
int64_t packedSgemmABlockRows(int64_t m, int64_t n, int64_t threads);
/// A constant A's packed copy (cached with the parameter file's other
/// derived constants), when A (m x k, element (i, p) at a[i * rowStride +
/// p * colStride]) lies in constant memory and a product of m x n x k
/// suits the packed kernel on this host; null otherwise (blas.cpp).
const float *packedConstantA(const float *a, int64_t m, int64_t n, int64_t k,
                             int64_t rowStride, int64_t colStride);
/// How many products ran on packed weights so far (for tests).
int64_t packedGemmCalls();
/// Sets the fewest multiply-adds a product needs to run on a packed weight
/// (2^20 unless a test lowers it; not meant to be changed while gemms run)
/// and returns the value it had.
int64_t setPackedGemmMinWork(int64_t work);
/// Sets the fewest columns a product needs to run on a packed weight (16;
/// 1536 on AVX-512, see packedSuits in blas.cpp) and returns the value it
/// had.
int64_t setPackedGemmMinColumns(int64_t columns);
/// Sets both for a scope (a test's), the previous values back at its end.
class PackedGemmMinWorkScope {
public:
  explicit PackedGemmMinWorkScope(int64_t work, int64_t columns = 16)
      : saved(setPackedGemmMinWork(work)),
        savedColumns(setPackedGemmMinColumns(columns)) {}
  ~PackedGemmMinWorkScope() {
    setPackedGemmMinWork(saved);
    setPackedGemmMinColumns(savedColumns);
  }
  PackedGemmMinWorkScope(const PackedGemmMinWorkScope &) = delete;
  PackedGemmMinWorkScope &operator=(const PackedGemmMinWorkScope &) = delete;

private:
  int64_t saved, savedColumns;
};

/// dist_rt_gemm_set_act_f32 writes a padded image's positions through a
/// temporary product of at most this many bytes (default: any), else (or
/// without memory for it) by a product per row of the image; returns the
/// previous bound. For tests.
size_t setGemmImageScratchLimit(size_t bytes);

//===----------------------------------------------------------------------===//
// Exception guard
//===----------------------------------------------------------------------===//

/// Runs `body` (which returns a dist_rt_status_t) and turns any C++
/// exception it throws into a status whose message starts with `function`,
/// so that no exception crosses the C API.
template <typename Body>
dist_rt_status_t guardStatus(const char *function, Body &&body) {
#if DIST_RT_HAS_EXCEPTIONS
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY, "%s: out of memory",
                      function);
  } catch (const std::exception &error) {
    return makeStatus(DIST_RT_ERROR_INTERNAL, "%s: unexpected exception: %s",
                      function, error.what());
  } catch (...) {
    return makeStatus(DIST_RT_ERROR_INTERNAL, "%s: unexpected exception",
                      function);
  }
#else
  (void)function;
  return body();
#endif
}

/// The directory of the executable or shared library holding `desc`
/// (where its parameter file and other artifacts are found).
std::string modelDirectory(const dist_rt_model_desc_t *desc);

/// The node-local rank a launcher gives this process (Open MPI, MPICH/Hydra,
/// Slurm), or `fallback`.
int launcherLocalRank(int fallback);

/// Makes the process's world, when dist_rt_world_init creates it with the
/// AUTO backend under a launcher, NCCL's instead of MPI's: a CUDA model's
/// mesh, whose collectives move device buffers.
void preferNcclWorld();

/// The options every world_init of the runtime uses: defaults, with the
/// timeout of DIST_RT_COMM_TIMEOUT (seconds) when set. The first call of
/// dist_rt_world_init decides them for the process.
dist_rt_status_t worldOptionsFromEnvironment(dist_rt_world_options_t &options);

/// Rows of the global batch B that this dp rank takes, over B / dp (1 when
/// the batch splits evenly). Averages over the dp axis
/// (dist_rt_mesh_all_reduce_start with AVERAGE: the loss and the
/// gradients, each a mean over the rank's rows) weight each rank's share
/// by it, so that they are means over the global batch.
void setDataParallelRowWeight(double weight);

} // namespace dist_rt

#endif // DIST_RT_LIB_INTERNAL_H
