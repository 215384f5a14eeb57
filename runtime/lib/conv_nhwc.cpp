//===- conv_nhwc.cpp - Channels-last convolutions on oneDNN -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_conv2d_nhwc_f32: a 2-D f32 convolution (any groups,
// strides, dilations and padding) of dense channels-last images, run by
// oneDNN's convolution primitive (Debian's libdnnl2, loaded with dlopen on
// the first call like blas.cpp's dnnl_sgemm; dnnl.h only at build time).
//
// Why oneDNN and not the runtime's own kernels (conv.cpp): on channels-last
// images its brgemm convolutions run near the core's peak on every layer
// shape of the zoo's networks, where conv.cpp's kernels on NCHW planes do
// not. Measured on an AMD EPYC (family 26, AVX-512), one thread, one image,
// the layer alone (`dist-conv-bench`'s nhwc column, and a standalone
// program over oneDNN's formats): ResNet-50's 3x3 and 1x1 layers 241-308
// GFLOP/s against 163-225 for dist_rt_conv2d_f32, MobileNetV2's 16 -> 96
// pointwise layer on 112 x 112 206-215 against 125-131, its stride-2 depthwise
// layer on 96 x 113 x 113 77 us against 173 (286 in the model); oneDNN on NCHW
// images instead runs its im2col products (150-200 GFLOP/s, depthwise 3.5);
// on its blocked nChw16c layout as fast as channels-last. Strided images
// (an interior of a padded buffer, a channel slice) make oneDNN fall back
// to its reference loops (0.2-0.6 GFLOP/s), so images here are dense and
// the padding is oneDNN's.
//
// A 1x1 convolution of one-pixel images (a squeeze-excitation layer) runs
// as one product instead (onePixelProduct), and an upsampling whose kernel
// is its stride as a product and a copy (upsamplingProduct).
//
// A 3x3 convolution at unit strides may run on oneDNN's Winograd
// primitive instead of its direct one, on blocked images reordered in and
// out, where timing both once says it is faster (winogradFaster;
// DIST_RT_WINOGRAD=0 or 1 decides instead).
//
// dist_rt_conv2d_nhwc_pwdw_f32 runs a 1x1 convolution and the depthwise
// one that reads its output in bands of rows, the wide image between them
// kept in the cache (pwdwBands).
//
// Primitives are made once per shape, flags and part and cached;
// filters in memory registered as constant (a parameter file's mapping)
// are reordered into the primitive's blocked layout once
// (derivedConstant), other filters on every call. With several threads a
// call runs as parts on the runtime's thread pool, each a single-threaded
// primitive (see convDnnl), not on oneDNN's OpenMP threads. Without oneDNN (not
// installed, DIST_RT_NO_DNNL set, or a shape it refuses) a plain loop computes
// the same result, with a warning once.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "profile.h"

#include "dist_rt/kernels.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <tuple>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {

/// oneDNN's C entry points this file calls (resolved with dlsym).
struct DnnlApi {
#define DIST_DNNL_FN(name) decltype(&::name) name = nullptr;
#define DIST_DNNL_FNS(X)                                                       \
  X(dnnl_engine_create)                                                        \
  X(dnnl_stream_create)                                                        \
  X(dnnl_memory_desc_init_by_tag)                                              \
  X(dnnl_dilated_convolution_forward_desc_init)                                \
  X(dnnl_dilated_deconvolution_forward_desc_init)                              \
  X(dnnl_primitive_attr_create)                                                \
  X(dnnl_primitive_attr_destroy)                                               \
  X(dnnl_post_ops_create)                                                      \
  X(dnnl_post_ops_destroy)                                                     \
  X(dnnl_post_ops_append_sum)                                                  \
  X(dnnl_post_ops_append_eltwise)                                              \
  X(dnnl_primitive_attr_set_post_ops)                                          \
  X(dnnl_primitive_attr_set_scratchpad_mode)                                   \
  X(dnnl_primitive_desc_create)                                                \
  X(dnnl_primitive_desc_destroy)                                               \
  X(dnnl_primitive_desc_query_md)                                              \
  X(dnnl_primitive_desc_query)                                                 \
  X(dnnl_primitive_create)                                                     \
  X(dnnl_memory_create)                                                        \
  X(dnnl_memory_set_data_handle)                                               \
  X(dnnl_memory_desc_get_size)                                                 \
  X(dnnl_memory_desc_equal)                                                    \
  X(dnnl_primitive_execute)                                                    \
  X(dnnl_stream_wait)                                                          \
  X(dnnl_reorder_primitive_desc_create)                                        \
  X(dnnl_primitive_destroy)                                                    \
  X(dnnl_memory_destroy)
  DIST_DNNL_FNS(DIST_DNNL_FN)
#undef DIST_DNNL_FN
  void (*ompSetNumThreads)(int) = nullptr;
  int (*ompGetMaxThreads)() = nullptr;
  dnnl_engine_t engine = nullptr;
};

DnnlApi dnnlApi;
bool dnnlLoaded = false;
std::once_flag dnnlOnce;
/// Set by tests: the plain loop even where oneDNN loaded.
std::atomic<bool> forcePlain{false};
std::atomic<int64_t> dnnlConvCalls{0};
/// Calls that upsamplingProduct ran.
std::atomic<int64_t> upsamplingCalls{0};
/// Calls whose sum ran apart (sumApartChunks), pointwise-depthwise pairs
/// that ran in bands (pwdwBands), and the L2 cache size both weigh calls
/// against when a test sets one.
std::atomic<int64_t> sumApartRuns{0};
std::atomic<int64_t> bandRuns{0};
/// 1x1 convolutions of one-pixel images run as products (onePixelProduct).
std::atomic<int64_t> onePixelProducts{0};
std::atomic<int64_t> forcedCacheBytes{0};
/// Calls that a Winograd primitive ran (a part of them at least), and
/// calls run one image a part (imagesApart).
std::atomic<int64_t> winogradRuns{0};
std::atomic<int64_t> imageApartRuns{0};

void loadDnnl() {
  if (std::getenv("DIST_RT_NO_DNNL"))
    return;
  void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return;
  DnnlApi api;
  bool all = true;
#define DIST_DNNL_SYM(name)                                                    \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(h, #name));            \
  all = all && api.name;
  DIST_DNNL_FNS(DIST_DNNL_SYM)
#undef DIST_DNNL_SYM
  api.ompSetNumThreads =
      reinterpret_cast<void (*)(int)>(dlsym(h, "omp_set_num_threads"));
  api.ompGetMaxThreads =
      reinterpret_cast<int (*)()>(dlsym(h, "omp_get_max_threads"));
  if (!all || !api.ompSetNumThreads || !api.ompGetMaxThreads ||
      api.dnnl_engine_create(&api.engine, dnnl_cpu, 0) != dnnl_success)
    return; // Keep the handle (see blas.cpp).
  dnnlApi = api;
  dnnlLoaded = true;
}

const DnnlApi *dnnl() {
  std::call_once(dnnlOnce, loadDnnl);
  return dnnlLoaded && !forcePlain.load(std::memory_order_relaxed) ? &dnnlApi
                                                                   : nullptr;
}

/// A call's geometry (dist_rt_conv2d_nhwc_f32's or
/// dist_rt_conv3d_nhwc_f32's arguments but the pointers). Spatial arrays
/// run (depth, rows, columns); a 2-D call has depth 1 everywhere.
struct Shape {
  /// 2 or 3 spatial dimensions.
  int spatial;
  /// A transposed convolution (DIST_RT_CONV_TRANSPOSED): `c` counts the
  /// input channels a group and `f` the output channels, as for the others.
  bool transposed;
  int64_t groups, n, c, f;
  int64_t in[3], out[3], k[3], st[3], dil[3], padL[3], padR[3];
  int64_t flags;
  float lo, hi;
  bool bias;
  /// Which of a call's parts (see convDnnl) this is: parts of one shape
  /// run at once, each on a primitive of its own.
  int part;
  /// How a 3x3 convolution that Winograd's algorithm can run chooses it
  /// (winogradSetting; 0 for every other shape): primitives made under
  /// one setting are not run under another.
  int winograd = 0;
  /// Filters outside constant memory (reordered on every call), for such a
  /// 3x3 convolution only: winogradFaster times their reorder too. (Filters
  /// in constant memory are also reordered on every call once the cache of
  /// copies is full: not counted.)
  bool varyingFilters = false;
  auto tie() const {
    auto arr = [](const int64_t (&a)[3]) { return std::tie(a[0], a[1], a[2]); };
    return std::tuple_cat(
        std::tie(spatial, transposed, groups, n, c, f), arr(in), arr(out),
        arr(k), arr(st), arr(dil), arr(padL), arr(padR),
        std::tie(flags, lo, hi, bias, part, winograd, varyingFilters));
  }
  bool operator<(const Shape &o) const { return tie() < o.tie(); }
  int64_t inPositions() const { return in[0] * in[1] * in[2]; }
  int64_t outPositions() const { return out[0] * out[1] * out[2]; }
  int64_t taps() const { return k[0] * k[1] * k[2]; }
};

/// A primitive made for one Shape, with the memory objects its calls point
/// at their buffers (one call at a time: `run`).
struct Primitive {
  dnnl_primitive_t conv = nullptr, reorder = nullptr;
  dnnl_memory_t src = nullptr, wts = nullptr, plainWts = nullptr,
                bias = nullptr, dst = nullptr, scratchpad = nullptr;
  /// The primitive's filter layout differs from [groups*f, c, kh, kw].
  bool reorderWeights = false;
  size_t wtsBytes = 0;
  /// A hash of that layout: primitives of one layer (its parts, batch
  /// sizes) whose layouts agree share the filters reordered once.
  int64_t layoutHash = 0;
  /// The reordered filters of writable weights (remade every call).
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> scratchWts;
  /// The bytes of the primitive's scratchpad (dnnl_scratchpad_mode_user;
  /// 0: none), which it finds in its running thread's (threadScratchpad).
  size_t scratchpadBytes = 0;
  /// A run's seconds where winogradFaster timed this primitive against the
  /// other (0: not timed).
  double seconds = 0;
  /// A Winograd primitive (dnnl_convolution_winograd), which runs on
  /// images in oneDNN's blocked nChw16c layout only: `src` and `dst` are
  /// blocked images in the thread's scratch after its scratchpad, the
  /// call's image is reordered into `src` (toBlockedSrc, from `plainSrc`),
  /// the old output into `dst` when accumulating (toBlockedDst), and the
  /// result out of it (fromBlockedDst, to `plainDst`).
  bool winograd = false;
  dnnl_primitive_t toBlockedSrc = nullptr, toBlockedDst = nullptr,
                   fromBlockedDst = nullptr;
  dnnl_memory_t plainSrc = nullptr, plainDst = nullptr;
  size_t blockedSrcBytes = 0, blockedDstBytes = 0;
  std::mutex run;
};

std::mutex cacheMutex;
/// Never freed: oneDNN's objects live as long as the process (and stay
/// reachable for leak checkers).
auto &cache = *new std::map<Shape, std::unique_ptr<Primitive>>;

void destroyPrimitive(const DnnlApi &api, Primitive &p);

/// Makes the primitive for `s` (with Winograd's algorithm on blocked
/// images when `winograd`), or returns null when oneDNN refuses it.
std::unique_ptr<Primitive> makePrimitive(const DnnlApi &api, const Shape &s,
                                         bool winograd) {
  bool grouped = s.groups > 1;
  int sp = s.spatial, first = 3 - sp;
  // [n, channels, spatial...] and filters [g?, o, i, spatial...] with the
  // spatial dimensions this call has (the last `sp` of depth, rows,
  // columns).
  dnnl_dims_t srcDims = {s.n, s.groups * s.c}, dstDims = {s.n, s.groups * s.f};
  // oneDNN's o and i: a transposed convolution's filters are ONNX's
  // [groups*c, f, k...], whose plain layout is i before o (iohw).
  int64_t o = s.f, i = s.c;
  dnnl_dims_t wDims = {s.groups, o, i}, wDimsFlat = {o, i};
  dnnl_dims_t strides, dilates, padL, padR;
  for (int d = 0; d < sp; ++d) {
    srcDims[2 + d] = s.in[first + d];
    dstDims[2 + d] = s.out[first + d];
    wDims[3 + d] = wDimsFlat[2 + d] = s.k[first + d];
    strides[d] = s.st[first + d];
    // oneDNN's dilation counts the skipped taps (0: none).
    dilates[d] = s.dil[first + d] - 1;
    padL[d] = s.padL[first + d];
    padR[d] = s.padR[first + d];
  }
  dnnl_dims_t biasDims = {s.groups * s.f};
  dnnl_format_tag_t plainImage = sp == 3 ? dnnl_ndhwc : dnnl_nhwc;
  dnnl_format_tag_t image = winograd ? dnnl_nChw16c : plainImage;
  dnnl_format_tag_t plainW =
      s.transposed ? (sp == 3 ? (grouped ? dnnl_giodhw : dnnl_iodhw)
                              : (grouped ? dnnl_giohw : dnnl_iohw))
                   : (sp == 3 ? (grouped ? dnnl_goidhw : dnnl_oidhw)
                              : (grouped ? dnnl_goihw : dnnl_oihw));
  int wRank = 2 + sp + (grouped ? 1 : 0);
  dnnl_memory_desc_t srcMd, dstMd, plainSrcMd, plainDstMd, wMd, plainWMd,
      biasMd;
  bool ok =
      api.dnnl_memory_desc_init_by_tag(&srcMd, 2 + sp, srcDims, dnnl_f32,
                                       image) == dnnl_success &&
      api.dnnl_memory_desc_init_by_tag(&dstMd, 2 + sp, dstDims, dnnl_f32,
                                       image) == dnnl_success &&
      api.dnnl_memory_desc_init_by_tag(&plainSrcMd, 2 + sp, srcDims, dnnl_f32,
                                       plainImage) == dnnl_success &&
      api.dnnl_memory_desc_init_by_tag(&plainDstMd, 2 + sp, dstDims, dnnl_f32,
                                       plainImage) == dnnl_success &&
      api.dnnl_memory_desc_init_by_tag(&wMd, wRank, grouped ? wDims : wDimsFlat,
                                       dnnl_f32,
                                       dnnl_format_tag_any) == dnnl_success &&
      api.dnnl_memory_desc_init_by_tag(&plainWMd, wRank,
                                       grouped ? wDims : wDimsFlat, dnnl_f32,
                                       plainW) == dnnl_success &&
      api.dnnl_memory_desc_init_by_tag(&biasMd, 1, biasDims, dnnl_f32,
                                       dnnl_a) == dnnl_success;
  if (!ok)
    return nullptr;
  // One descriptor or the other: dnnl_primitive_desc_create reads its kind.
  dnnl_convolution_desc_t convDesc;
  dnnl_deconvolution_desc_t deconvDesc;
  const void *desc = nullptr;
  if (s.transposed) {
    if (api.dnnl_dilated_deconvolution_forward_desc_init(
            &deconvDesc, dnnl_forward_inference, dnnl_deconvolution_direct,
            &srcMd, &wMd, s.bias ? &biasMd : nullptr, &dstMd, strides, dilates,
            padL, padR) != dnnl_success)
      return nullptr;
    desc = &deconvDesc;
  } else {
    if (api.dnnl_dilated_convolution_forward_desc_init(
            &convDesc, dnnl_forward_inference,
            winograd ? dnnl_convolution_winograd : dnnl_convolution_direct,
            &srcMd, &wMd, s.bias ? &biasMd : nullptr, &dstMd, strides, dilates,
            padL, padR) != dnnl_success)
      return nullptr;
    desc = &convDesc;
  }

  // The flags' epilogue, in dist_rt_conv2d_f32's order: the old output,
  // SiLU or HardSwish, ReLU, Clip.
  dnnl_post_ops_t ops = nullptr;
  dnnl_primitive_attr_t attr = nullptr;
  if (api.dnnl_post_ops_create(&ops) != dnnl_success)
    return nullptr;
  ok = true;
  if (s.flags & DIST_RT_CONV_ACCUMULATE)
    ok = ok && api.dnnl_post_ops_append_sum(ops, 1.0f) == dnnl_success;
  if (s.flags & DIST_RT_CONV_SILU)
    ok = ok && api.dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_swish,
                                                1.0f, 0.0f) == dnnl_success;
  else if (s.flags & DIST_RT_CONV_HARDSWISH)
    ok = ok &&
         api.dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_hardswish,
                                          0.0f, 0.0f) == dnnl_success;
  if (s.flags & DIST_RT_CONV_RELU)
    ok = ok && api.dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu,
                                                0.0f, 0.0f) == dnnl_success;
  if (s.flags & DIST_RT_CONV_CLIP)
    ok = ok && api.dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_clip_v2,
                                                s.lo, s.hi) == dnnl_success;
  // The scratchpad a thread's (threadScratchpad).
  ok = ok && api.dnnl_primitive_attr_create(&attr) == dnnl_success &&
       api.dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success &&
       api.dnnl_primitive_attr_set_scratchpad_mode(
           attr, dnnl_scratchpad_mode_user) == dnnl_success;
  dnnl_primitive_desc_t pd = nullptr;
  ok = ok && api.dnnl_primitive_desc_create(&pd, desc, attr, api.engine,
                                            nullptr) == dnnl_success;
  api.dnnl_post_ops_destroy(ops);
  if (attr)
    api.dnnl_primitive_attr_destroy(attr);
  if (!ok)
    return nullptr;

  auto p = std::make_unique<Primitive>();
  const dnnl_memory_desc_t *pdW =
      api.dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  ok = pdW && api.dnnl_primitive_create(&p->conv, pd) == dnnl_success &&
       api.dnnl_memory_create(&p->src, &srcMd, api.engine, DNNL_MEMORY_NONE) ==
           dnnl_success &&
       api.dnnl_memory_create(&p->dst, &dstMd, api.engine, DNNL_MEMORY_NONE) ==
           dnnl_success &&
       api.dnnl_memory_create(&p->wts, pdW, api.engine, DNNL_MEMORY_NONE) ==
           dnnl_success &&
       (!s.bias || api.dnnl_memory_create(&p->bias, &biasMd, api.engine,
                                          DNNL_MEMORY_NONE) == dnnl_success);
  if (ok) {
    const dnnl_memory_desc_t *scratchMd =
        api.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t bytes = scratchMd ? api.dnnl_memory_desc_get_size(scratchMd) : 0;
    if (bytes > 0) {
      p->scratchpadBytes = bytes;
      ok = api.dnnl_memory_create(&p->scratchpad, scratchMd, api.engine,
                                  DNNL_MEMORY_NONE) == dnnl_success;
    }
  }
  if (ok) {
    p->reorderWeights = !api.dnnl_memory_desc_equal(pdW, &plainWMd);
    p->wtsBytes = api.dnnl_memory_desc_get_size(pdW);
    // FNV-1a over the layout's defining fields.
    uint64_t hash = 1469598103934665603ull;
    auto mix = [&](int64_t v) {
      hash = (hash ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    };
    mix(pdW->ndims);
    mix(pdW->format_kind);
    if (pdW->format_kind == dnnl_format_kind_wino) {
      const dnnl_wino_desc_t &wino = pdW->format_desc.wino_desc;
      for (int64_t v :
           {int64_t(wino.wino_format), int64_t(wino.r), int64_t(wino.alpha),
            int64_t(wino.ic), int64_t(wino.oc), int64_t(wino.ic_block),
            int64_t(wino.oc_block), int64_t(wino.ic2_block),
            int64_t(wino.oc2_block), int64_t(wino.size)})
        mix(v);
    }
    for (int i = 0; i < pdW->ndims; ++i) {
      mix(pdW->dims[i]);
      mix(pdW->padded_dims[i]);
    }
    if (pdW->format_kind == dnnl_blocked) {
      const dnnl_blocking_desc_t &blk = pdW->format_desc.blocking;
      for (int i = 0; i < pdW->ndims; ++i)
        mix(blk.strides[i]);
      mix(blk.inner_nblks);
      for (int i = 0; i < blk.inner_nblks; ++i) {
        mix(blk.inner_blks[i]);
        mix(blk.inner_idxs[i]);
      }
    }
    mix(static_cast<int64_t>(p->wtsBytes));
    p->layoutHash = static_cast<int64_t>(hash);
  }
  if (ok && p->reorderWeights) {
    dnnl_primitive_desc_t rpd = nullptr;
    ok = api.dnnl_reorder_primitive_desc_create(&rpd, &plainWMd, api.engine,
                                                pdW, api.engine,
                                                nullptr) == dnnl_success &&
         api.dnnl_primitive_create(&p->reorder, rpd) == dnnl_success &&
         api.dnnl_memory_create(&p->plainWts, &plainWMd, api.engine,
                                DNNL_MEMORY_NONE) == dnnl_success;
    if (rpd)
      api.dnnl_primitive_desc_destroy(rpd);
  }
  // A Winograd primitive's images in and out of their blocked layout.
  auto reorder = [&](const dnnl_memory_desc_t &from,
                     const dnnl_memory_desc_t &to, dnnl_primitive_t &made) {
    dnnl_primitive_desc_t rpd = nullptr;
    bool done = api.dnnl_reorder_primitive_desc_create(
                    &rpd, &from, api.engine, &to, api.engine, nullptr) ==
                    dnnl_success &&
                api.dnnl_primitive_create(&made, rpd) == dnnl_success;
    if (rpd)
      api.dnnl_primitive_desc_destroy(rpd);
    return done;
  };
  if (ok && winograd) {
    p->winograd = true;
    p->blockedSrcBytes = api.dnnl_memory_desc_get_size(&srcMd);
    p->blockedDstBytes = api.dnnl_memory_desc_get_size(&dstMd);
    ok = api.dnnl_memory_create(&p->plainSrc, &plainSrcMd, api.engine,
                                DNNL_MEMORY_NONE) == dnnl_success &&
         api.dnnl_memory_create(&p->plainDst, &plainDstMd, api.engine,
                                DNNL_MEMORY_NONE) == dnnl_success &&
         reorder(plainSrcMd, srcMd, p->toBlockedSrc) &&
         reorder(dstMd, plainDstMd, p->fromBlockedDst) &&
         (!(s.flags & DIST_RT_CONV_ACCUMULATE) ||
          reorder(plainDstMd, dstMd, p->toBlockedDst));
  }
  api.dnnl_primitive_desc_destroy(pd);
  // A primitive half made is dropped whole (oneDNN refuses a shape once,
  // not on every call: the cache keeps the null).
  if (!ok) {
    destroyPrimitive(api, *p);
    return nullptr;
  }
  return p;
}

/// Frees `p`'s oneDNN objects (a primitive that lost to another).
void destroyPrimitive(const DnnlApi &api, Primitive &p) {
  for (dnnl_primitive_t *prim : {&p.conv, &p.reorder, &p.toBlockedSrc,
                                 &p.toBlockedDst, &p.fromBlockedDst})
    if (*prim)
      api.dnnl_primitive_destroy(std::exchange(*prim, nullptr));
  for (dnnl_memory_t *mem : {&p.src, &p.wts, &p.plainWts, &p.bias, &p.dst,
                             &p.scratchpad, &p.plainSrc, &p.plainDst})
    if (*mem)
      api.dnnl_memory_destroy(std::exchange(*mem, nullptr));
}

/// Runs `prim` (single-threaded use: the caller holds prim.run).
bool execute(const DnnlApi &api, dnnl_primitive_t prim, int nargs,
             const dnnl_exec_arg_t *args) {
  thread_local dnnl_stream_t stream = nullptr;
  if (!stream) {
    if (api.dnnl_stream_create(&stream, api.engine,
                               dnnl_stream_default_flags) != dnnl_success)
      return false;
    // A thread's stream lives as long as the process, also after its
    // thread ends (and stays reachable for leak checkers).
    static std::mutex streamsMutex;
    static auto &streams = *new std::vector<dnnl_stream_t>;
    std::lock_guard<std::mutex> lock(streamsMutex);
    streams.push_back(stream);
  }
  return api.dnnl_primitive_execute(prim, stream, nargs, args) ==
             dnnl_success &&
         api.dnnl_stream_wait(stream) == dnnl_success;
}

/// What derivedConstant's `make` needs to reorder filters.
struct ReorderJob {
  const DnnlApi *api;
  Primitive *prim;
  const float *weights;
  bool ok = true;
};

void reorderInto(void *dst, const void *ctx) {
  auto *job = const_cast<ReorderJob *>(static_cast<const ReorderJob *>(ctx));
  const DnnlApi &api = *job->api;
  Primitive &p = *job->prim;
  api.dnnl_memory_set_data_handle(p.plainWts,
                                  const_cast<float *>(job->weights));
  api.dnnl_memory_set_data_handle(p.wts, dst);
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, p.plainWts}, {DNNL_ARG_TO, p.wts}};
  job->ok = execute(api, p.reorder, 2, args);
}

/// The calling thread's scratchpad for oneDNN's primitives, at least
/// `bytes` long (null when memory is out). One buffer a thread, shared by
/// the primitives that run there in turn, as oneDNN's own scratchpad is,
/// but never by two threads at once: with oneDNN's, parts of one call
/// running at once on the pool crashed its AVX2 grouped 3-D convolution.
/// Freed when the thread ends.
void *threadScratchpad(size_t bytes) {
  struct Buffer {
    void *data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffer;
  if (buffer.size < bytes) {
    size_t size = (bytes + 4095) / 4096 * 4096;
    void *data = std::aligned_alloc(4096, size);
    if (!data)
      return nullptr;
    std::free(buffer.data);
    buffer.data = data;
    buffer.size = size;
  }
  return buffer.data;
}

/// Bytes rounded up to whole pages (the parts of a thread's scratch).
size_t pages(size_t bytes) { return (bytes + 4095) / 4096 * 4096; }

/// Runs `p` on `in` and `out` with its filters in its layout already
/// (`weights`), on one thread; false when oneDNN fails. The caller holds
/// p.run.
bool runPrepared(const DnnlApi &api, Primitive &p, const float *in,
                 const void *weights, const float *bias, float *out) {
  size_t padBytes = pages(p.scratchpadBytes),
         srcBytes = pages(p.blockedSrcBytes),
         total = padBytes + srcBytes + pages(p.blockedDstBytes);
  char *scratch = nullptr;
  if (total > 0) {
    scratch = static_cast<char *>(threadScratchpad(total));
    if (!scratch)
      return false;
  }
  if (p.winograd) {
    api.dnnl_memory_set_data_handle(p.plainSrc, const_cast<float *>(in));
    api.dnnl_memory_set_data_handle(p.plainDst, out);
    api.dnnl_memory_set_data_handle(p.src, scratch + padBytes);
    api.dnnl_memory_set_data_handle(p.dst, scratch + padBytes + srcBytes);
    dnnl_exec_arg_t toSrc[2] = {{DNNL_ARG_FROM, p.plainSrc},
                                {DNNL_ARG_TO, p.src}};
    dnnl_exec_arg_t toDst[2] = {{DNNL_ARG_FROM, p.plainDst},
                                {DNNL_ARG_TO, p.dst}};
    if (!execute(api, p.toBlockedSrc, 2, toSrc) ||
        (p.toBlockedDst && !execute(api, p.toBlockedDst, 2, toDst)))
      return false;
  } else {
    api.dnnl_memory_set_data_handle(p.src, const_cast<float *>(in));
    api.dnnl_memory_set_data_handle(p.dst, out);
  }
  api.dnnl_memory_set_data_handle(p.wts, const_cast<void *>(weights));
  dnnl_exec_arg_t args[5] = {
      {DNNL_ARG_SRC, p.src}, {DNNL_ARG_WEIGHTS, p.wts}, {DNNL_ARG_DST, p.dst}};
  int nargs = 3;
  if (bias) {
    api.dnnl_memory_set_data_handle(p.bias, const_cast<float *>(bias));
    args[nargs++] = {DNNL_ARG_BIAS, p.bias};
  }
  if (p.scratchpad) {
    api.dnnl_memory_set_data_handle(p.scratchpad, scratch);
    args[nargs++] = {DNNL_ARG_SCRATCHPAD, p.scratchpad};
  }
  if (!execute(api, p.conv, nargs, args))
    return false;
  if (!p.winograd)
    return true;
  dnnl_exec_arg_t fromDst[2] = {{DNNL_ARG_FROM, p.dst},
                                {DNNL_ARG_TO, p.plainDst}};
  return execute(api, p.fromBlockedDst, 2, fromDst);
}

/// Runs `p` (made for `s`) on one thread; false when oneDNN fails.
bool runPrimitive(const DnnlApi &api, Primitive &p, const Shape &s,
                  const float *in, const float *w, const float *bias,
                  float *out) {
  std::lock_guard<std::mutex> lock(p.run);
  const void *weights = w;
  if (p.reorderWeights) {
    ReorderJob job{&api, &p, w};
    // Filters of the same bytes in another layout differ: the layout's
    // hash keys them.
    int64_t key[3] = {0x6e687763 /* "nhwc" */, p.layoutHash,
                      s.groups * s.f * s.c};
    size_t wBytes = size_t(s.groups * s.f * s.c * s.taps()) * sizeof(float);
    weights =
        dist_rt::derivedConstant(w, wBytes, key, p.wtsBytes, reorderInto, &job);
    if (!job.ok)
      return false;
    if (!weights) {
      if (!p.scratchWts)
        p.scratchWts.reset(std::aligned_alloc(64, (p.wtsBytes + 63) / 64 * 64));
      if (!p.scratchWts)
        return false;
      reorderInto(p.scratchWts.get(), &job);
      if (!job.ok)
        return false;
      weights = p.scratchWts.get();
    }
  }
  return runPrepared(api, p, in, weights, bias, out);
}

/// DIST_RT_WINOGRAD, read once: how a 3x3 convolution that oneDNN can run
/// with Winograd's algorithm chooses it (winogradCandidate). "0": never;
/// "1": wherever oneDNN offers it; unset or "auto": by measurement
/// (winogradFaster). A test's setting (setNhwcWinograd) overrides it.
enum WinogradSetting {
  kWinogradNever = 1,
  kWinogradAlways,
  kWinogradMeasured,
  /// A test's: always, and one image a part (imagesApart).
  kWinogradImagesApart
};
std::atomic<int> forcedWinograd{0};

int winogradSetting() {
  static const int fromEnv = [] {
    const char *v = std::getenv("DIST_RT_WINOGRAD");
    if (!v || !*v || std::strcmp(v, "auto") == 0)
      return int(kWinogradMeasured);
    if (std::strcmp(v, "0") == 0)
      return int(kWinogradNever);
    if (std::strcmp(v, "1") == 0)
      return int(kWinogradAlways);
    std::fprintf(stderr,
                 "dist_rt: warning: DIST_RT_WINOGRAD=%s ignored (0, 1 or "
                 "auto)\n",
                 v);
    return int(kWinogradMeasured);
  }();
  int forced = forcedWinograd.load(std::memory_order_relaxed);
  return forced ? forced : fromEnv;
}

/// A convolution Winograd's algorithm computes: 2-D, one group, 3x3 taps
/// at unit strides and dilations (oneDNN decides the rest: it runs them
/// on AVX-512 only).
bool winogradCandidate(const Shape &s) {
  return s.spatial == 2 && !s.transposed && s.groups == 1 && s.k[1] == 3 &&
         s.k[2] == 3 && s.st[1] == 1 && s.st[2] == 1 && s.dil[1] == 1 &&
         s.dil[2] == 1;
}

/// Whether `wino` runs `s` faster than `direct`, each timed on scratch
/// images and filters in its own layout (the reorders of a Winograd
/// primitive's images included, and of its filters where they vary from
/// call to call: 32 -> 32 channels on 2 images of 14 x 14, filters
/// reordered on every call, took 361 us on Winograd's primitive against
/// 22 on the direct one): the fastest of three runs each (one where the
/// two take over 20 ms), taken in turn after one untimed run, and
/// Winograd's at least 5% faster. oneDNN's
/// Winograd convolutions do 2.25 (F(2x2, 3x3)) or 4 (F(4x4, 3x3)) times
/// fewer products than the direct ones but read filters 1.8 or 4 times as
/// large and transform tiles, so which wins depends on the shape and the
/// host: ResNet-50's 3x3 layers at one thread, each from a cold cache,
/// took 0.85 ms against 1.00 (64 channels on 56 x 56, one image), 4.9
/// against 7.6 (128 on 28 x 28, 8 images) and 8.7 against 8.0 (512 on 7 x
/// 7, 8 images: 37.7 MB of transformed filters) on an AMD EPYC (family
/// 26, AVX-512). False when a run fails or memory is out; otherwise sets
/// each primitive's `seconds`.
bool winogradFaster(const DnnlApi &api, const Shape &s, Primitive &direct,
                    Primitive &wino) {
  int64_t C = s.groups * s.c, F = s.groups * s.f;
  std::vector<float> in(size_t(s.n * s.inPositions() * C), 0.25f),
      out(size_t(s.n * s.outPositions() * F)), bias(size_t(F), 0.5f), w;
  // Filters in a primitive's layout: zeros (their values do not change
  // the time), unless they are reordered on every call, then from plain
  // ones as the calls will. oneDNN's reorder into the Winograd layout took
  // 190 ms for 512 x 512 x 3 x 3 filters.
  if (s.varyingFilters)
    w.assign(size_t(F * s.c * s.taps()), 0.125f);
  auto prepare =
      [&](Primitive &p,
          std::unique_ptr<void, Primitive::Free> &buf) -> const void * {
    size_t bytes = p.reorderWeights
                       ? p.wtsBytes
                       : size_t(F * s.c * s.taps()) * sizeof(float);
    buf.reset(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    if (buf)
      std::memset(buf.get(), 0, bytes);
    return buf.get();
  };
  std::unique_ptr<void, Primitive::Free> directW, winoW;
  const void *dw = prepare(direct, directW), *ww = prepare(wino, winoW);
  if (!dw || !ww)
    return false;
  const float *b = s.bias ? bias.data() : nullptr;
  double best[2] = {1e30, 1e30};
  for (int round = 0; round < 4; ++round) {
    for (int which = 0; which < 2; ++which) {
      Primitive &p = which ? wino : direct;
      auto start = std::chrono::steady_clock::now();
      bool ran = true;
      {
        std::lock_guard<std::mutex> lock(p.run);
        if (s.varyingFilters && p.reorderWeights) {
          ReorderJob job{&api, &p, w.data()};
          reorderInto(const_cast<void *>(which ? ww : dw), &job);
          ran = job.ok;
        }
        ran = ran &&
              runPrepared(api, p, in.data(), which ? ww : dw, b, out.data());
      }
      double took = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
      if (!ran)
        return false;
      if (round > 0)
        best[which] = std::min(best[which], took);
    }
    // Large calls (VGG's layers on 8 images) are timed once each, so that
    // the choice takes a fraction of a second a shape. Not by their first
    // runs: those fault in the scratch (the Winograd primitive's after the
    // direct one's), and U-Net's 128 -> 64 layer on 8 images of 64 x 64
    // went direct by them, 20.4 ms a call against 14.6.
    if (round > 0 && best[0] + best[1] > 0.02)
      break;
  }
  direct.seconds = best[0];
  wino.seconds = best[1];
  return best[1] < 0.95 * best[0];
}

/// Shapes whose Winograd primitive won or lost (winogradFaster), with
/// `part` 0: a call's parts of one geometry are timed once.
auto &winogradWins = *new std::map<Shape, bool>;

/// The cached primitive of `s` (made on first use, on one OpenMP thread:
/// the runtime's threads run the parts of a call), or null when oneDNN
/// refuses the shape.
Primitive *primitiveFor(const DnnlApi &api, const Shape &s) {
  std::lock_guard<std::mutex> lock(cacheMutex);
  auto it = cache.find(s);
  if (it == cache.end()) {
    int before = api.ompGetMaxThreads();
    api.ompSetNumThreads(1);
    // A geometry timed before (another part of a call) makes its winner
    // alone.
    bool candidate = s.winograd != 0 && s.winograd != kWinogradNever;
    Shape key = s;
    key.part = 0;
    auto known = s.winograd == kWinogradMeasured ? winogradWins.find(key)
                                                 : winogradWins.end();
    bool decided = known != winogradWins.end();
    std::unique_ptr<Primitive> made;
    if (!decided || !known->second)
      made = makePrimitive(api, s, /*winograd=*/false);
    if (candidate && (!decided || known->second))
      if (auto wino = makePrimitive(api, s, /*winograd=*/true)) {
        bool use = !made || s.winograd != kWinogradMeasured;
        if (!use) {
          known =
              winogradWins.emplace(key, winogradFaster(api, s, *made, *wino))
                  .first;
          use = known->second;
        }
        if (!use) {
          destroyPrimitive(api, *wino);
        } else {
          if (made)
            destroyPrimitive(api, *made);
          made = std::move(wino);
        }
      }
    if (!made && decided)
      made = makePrimitive(api, s, /*winograd=*/false);
    api.ompSetNumThreads(before);
    it = cache.emplace(s, std::move(made)).first;
  }
  return it->second.get();
}

/// Whether the `n` images of each thread's part of `s` (split by images)
/// run faster one at a time: oneDNN's Winograd primitive for one image
/// (F(2x2, 3x3) where it picks F(4x4, 3x3) for more) won on layers where
/// the one for the whole part lost. Alone, one thread, DenseNet's 128 ->
/// 32 channels on 8 images of 28 x 28 took 1.78 ms direct, 1.88 on
/// Winograd's primitive for 8 images and 8 x 0.14 on the one for one
/// image; 14 x 14 0.42, 0.40 and 8 x 0.039 (AMD EPYC, family 26). Taken
/// by the times winogradFaster measured for both shapes, where it timed
/// them, with a 5% margin.
bool imagesApart(const DnnlApi &api, const Shape &s, int64_t n) {
  if (n < 2)
    return false;
  if (s.winograd == kWinogradImagesApart)
    return true;
  if (s.winograd != kWinogradMeasured)
    return false;
  Shape whole = s, one = s;
  whole.n = n;
  one.n = 1;
  whole.part = one.part = 0;
  Primitive *w = primitiveFor(api, whole);
  if (!w || w->seconds <= 0)
    return false;
  Primitive *o = primitiveFor(api, one);
  return o && o->seconds > 0 && double(n) * o->seconds < 0.95 * w->seconds;
}

void plainRows(void *ctx, int64_t begin, int64_t end);

/// One part of a call: its own shape and where its images start.
struct Part {
  Shape shape;
  int64_t inOffset, outOffset;
  Primitive *prim;
  /// A part of the filters (convDnnl's split of a small image): its first
  /// filter; it writes its share of the output's channels through a dense
  /// scratch image.
  int64_t firstFilter = 0;
  bool filterPart = false;
  /// A part of a call whose sum runs apart (sumApartChunks): the primitive
  /// (made without the sum and the activation) writes a scratch image that
  /// addApart then adds to the old output.
  bool sumApart = false;
};

struct PartsJob {
  const DnnlApi *api;
  std::vector<Part> parts;
  const float *in, *w, *bias;
  float *out;
  /// The output's channels (all groups').
  int64_t filters;
  /// Set when a part fell back to the plain loop.
  std::atomic<bool> fellBack{false};
  /// The call's flags and clip bounds (the epilogue of sumApart parts).
  int64_t flags = 0;
  float lo = 0.0f, hi = 0.0f;
};

struct PlainJob {
  const Shape *s;
  const float *in, *w, *bias;
  float *out;
};

/// old[i] = the epilogue of `flags` (ACCUMULATE with RELU or CLIP, see
/// sumApartChunks) on old[i] + part[i]: one sequential pass that the
/// compiler vectorises.
void addApart(float *old, const float *part, int64_t count, int64_t flags,
              float lo, float hi) {
  if (flags & DIST_RT_CONV_CLIP) {
    bool relu = flags & DIST_RT_CONV_RELU;
    for (int64_t i = 0; i < count; ++i) {
      float v = old[i] + part[i];
      if (relu)
        v = v > 0.0f ? v : 0.0f;
      v = v > lo ? v : lo;
      old[i] = v < hi ? v : hi;
    }
  } else if (flags & DIST_RT_CONV_RELU) {
    for (int64_t i = 0; i < count; ++i) {
      float v = old[i] + part[i];
      old[i] = v > 0.0f ? v : 0.0f;
    }
  } else {
    for (int64_t i = 0; i < count; ++i)
      old[i] += part[i];
  }
}

/// The L2 cache's bytes a core as the C library reads them (1 MiB where it
/// reads none or less than 256 KiB), or a test's (setNhwcCacheBytes).
int64_t l2CacheBytes() {
  static const int64_t host = [] {
    long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return bytes >= 256 * 1024 ? int64_t(bytes) : int64_t(1024 * 1024);
  }();
  int64_t forced = forcedCacheBytes.load(std::memory_order_relaxed);
  return forced > 0 ? forced : host;
}

/// Parts a call is split into when its sum runs apart from oneDNN's
/// primitive, 0 when it runs there. oneDNN's sum post-op reads the old
/// output tile by tile (a block of filters of each pixel, the pixel's
/// other filters later), slowly once the old output is out of cache; a
/// primitive without the sum writing a scratch part, then one sequential
/// pass adding it to the old output, ran the last layer of ResNet-50's
/// bottleneck block (64 -> 256 on 56 x 56, its input and the block's input
/// made by the block's first two layers just before) on 8 images in
/// 5.7-6.1 ms against 8.1-8.3, on 2 images in 1.3-1.5 against 1.8-1.9,
/// and the 128 -> 512 one on 8 images of 28 x 28 in 4.9-5.3 against
/// 5.8-6.0; on one image (3.2 MB, in cache) neither way gained (AMD EPYC,
/// family 26, 1 MiB of L2, one thread). So only where the output is larger
/// than four times the L2 cache, the filters small beside it (each part
/// reads them again) and the output has 64 channels or more (MobileNetV2's
/// 24 gained nothing). Parts are whole rows of one image, each at most
/// twice the L2 cache, their count a multiple of the threads where the
/// rows allow.
int64_t sumApartChunks(const Shape &s, int threads) {
  int64_t l2 = l2CacheBytes();
  const int64_t allowed =
      DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_RELU | DIST_RT_CONV_CLIP;
  if (!(s.flags & DIST_RT_CONV_ACCUMULATE) || (s.flags & ~allowed) ||
      s.transposed || s.groups != 1 || s.f < 64)
    return 0;
  int d = 3 - s.spatial;
  int64_t filterBytes = s.f * s.c * s.taps() * int64_t(sizeof(float));
  int64_t rowBytes = s.outPositions() / s.out[d] * s.f * int64_t(sizeof(float));
  int64_t imageBytes = rowBytes * s.out[d];
  if (filterBytes > l2 / 4 || s.n * imageBytes <= 4 * l2)
    return 0;
  int64_t perImage = (imageBytes + 2 * l2 - 1) / (2 * l2);
  while ((s.n * perImage) % threads != 0 && perImage < s.out[d])
    ++perImage;
  return std::min(perImage, s.out[d]);
}

void runPart(void *ctx, int64_t begin, int64_t end) {
  auto &job = *static_cast<PartsJob *>(ctx);
  // This thread's own OpenMP team size (an ICV of the calling thread).
  job.api->ompSetNumThreads(1);
  for (int64_t i = begin; i < end; ++i) {
    const Part &part = job.parts[size_t(i)];
    const Shape &s = part.shape;
    const float *in = job.in + part.inOffset;
    float *out = job.out + part.outOffset;
    const float *w = job.w, *bias = job.bias;
    // A part of the filters writes a dense image of its channels (oneDNN
    // runs channel slices of a wider image on its reference loops), then
    // copies it into its slice; it starts from the old values there when
    // accumulating.
    thread_local std::vector<float> scratch;
    int64_t pixels = s.n * s.outPositions(), F = job.filters;
    if (part.sumApart) {
      scratch.resize(size_t(pixels * s.f));
      float *old = out;
      out = scratch.data();
      if (!runPrimitive(*job.api, *part.prim, s, in, w, bias, out)) {
        job.fellBack.store(true, std::memory_order_relaxed);
        PlainJob plain{&s, in, w, bias, out};
        plainRows(&plain, 0, s.n * s.out[3 - s.spatial]);
      }
      addApart(old, out, pixels * s.f, job.flags, job.lo, job.hi);
      continue;
    }
    if (part.filterPart) {
      w += part.firstFilter * s.c * s.taps();
      if (bias)
        bias += part.firstFilter;
      scratch.resize(size_t(pixels * s.f));
      if (s.flags & DIST_RT_CONV_ACCUMULATE)
        for (int64_t p = 0; p < pixels; ++p)
          std::memcpy(&scratch[size_t(p * s.f)], out + p * F + part.firstFilter,
                      size_t(s.f) * sizeof(float));
      out = scratch.data();
    }
    if (!runPrimitive(*job.api, *part.prim, s, in, w, bias, out)) {
      // oneDNN failed on a primitive it made: this part on the plain loop
      // (the other parts' outputs stand, none is accumulated twice).
      job.fellBack.store(true, std::memory_order_relaxed);
      PlainJob plain{&s, in, w, bias, out};
      plainRows(&plain, 0, s.n * s.out[3 - s.spatial]);
    }
    if (part.filterPart)
      for (int64_t p = 0; p < pixels; ++p)
        std::memcpy(job.out + p * F + part.firstFilter,
                    &scratch[size_t(p * s.f)], size_t(s.f) * sizeof(float));
  }
}

/// The input rows [first, last] that output rows [y0, y1) of `s` read
/// along spatial dimension `d`, and the padding a part computing just those
/// output rows from just those input rows has there; false when the rows
/// read only padding or a part would need negative padding (a transposed
/// convolution whose kernel is shorter than its stride).
bool partRows(const Shape &s, int d, int64_t y0, int64_t y1, int64_t &first,
              int64_t &last, int64_t &padL, int64_t &padR) {
  int64_t st = s.st[d], reach = (s.k[d] - 1) * s.dil[d];
  if (!s.transposed) {
    int64_t r0 = y0 * st - s.padL[d], r1 = (y1 - 1) * st - s.padL[d] + reach;
    first = std::max<int64_t>(r0, 0);
    last = std::min<int64_t>(r1, s.in[d] - 1);
    padL = first - r0;
    padR = r1 - last;
    return last >= first;
  }
  // Input row i reaches output rows i*st - padL .. i*st - padL + reach.
  auto floorDiv = [](int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
  };
  first = std::max<int64_t>(0, floorDiv(y0 + s.padL[d] - reach + st - 1, st));
  last = std::min<int64_t>(s.in[d] - 1, floorDiv(y1 - 1 + s.padL[d], st));
  if (last < first)
    return false;
  padL = s.padL[d] + y0 - first * st;
  padR = (last - first) * st + reach + 1 - padL - (y1 - y0);
  return padL >= 0 && padR >= 0;
}

/// Runs the call on oneDNN; false when oneDNN refuses its shape (nothing
/// written: the caller then runs the plain loop). `how`, where given,
/// names what ran other than one direct primitive a part (the profile's
/// ", Winograd" and ", one image a part", else ""). With several threads
/// the call is split on the runtime's thread pool, each part a
/// single-threaded primitive: by images when there are several, else by
/// output rows (depth planes in 3-D: a part reads the input rows its
/// windows cover, padded by oneDNN where they reach past the image).
/// Measured against oneDNN's own OpenMP threads on this project's 2-core
/// machine (AMD EPYC, family 26), EfficientNet-B0 at two threads: 6.0-6.8
/// ms with OpenMP (its threads and the pool's taking turns on the cores;
/// 8.8-9.7 with OMP_WAIT_POLICY=passive) against 4.6-5.0 for the NCHW
/// kernels.
bool convDnnl(const DnnlApi &api, const Shape &s, int threads, const float *in,
              const float *w, const float *bias, float *out,
              const char **how = nullptr) {
  int64_t C = s.groups * s.c, F = s.groups * s.f;
  // The outermost spatial dimension, along which one image splits.
  int d = 3 - s.spatial;
  int64_t inPlane = s.inPositions() / s.in[d] * C,
          outPlane = s.outPositions() / s.out[d] * F;
  int64_t parts = 1;
  bool byImages = false, byFilters = false;
  if (threads > 1 && s.n > 1) {
    parts = std::min<int64_t>(threads, s.n);
    byImages = true;
  } else if (threads > 1) {
    parts = std::min<int64_t>(threads, s.out[d]);
    // A small image whose rows do not split evenly splits by filters, in
    // blocks of 16, where each part keeps at least 32: EfficientNet-B0's
    // 7 x 7 layers ran 1.46-1.64 times as fast on two threads as on one
    // with 3 and 4 rows a part (AMD EPYC, family 26).
    if (s.groups == 1 && !s.transposed && s.out[d] % threads != 0 &&
        s.out[d] < 8 * threads && s.f >= 32 * threads) {
      parts = threads;
      byFilters = true;
    }
  }
  PartsJob job{&api, {}, in, w, bias, out, F, {}};
  job.flags = s.flags;
  job.lo = s.lo;
  job.hi = s.hi;
  // Output rows [y0, y1) of image `image` as a part of one image; false
  // where partRows refuses them.
  auto rowPart = [&](int64_t image, int64_t y0, int64_t y1, Part &part) {
    int64_t first, last, padL, padR;
    if (!partRows(s, d, y0, y1, first, last, padL, padR))
      return false;
    part.shape.n = 1;
    part.shape.in[d] = last - first + 1;
    part.shape.padL[d] = padL;
    part.shape.padR[d] = padR;
    part.shape.out[d] = y1 - y0;
    part.inOffset = image * s.inPositions() * C + first * inPlane;
    part.outOffset = image * s.outPositions() * F + y0 * outPlane;
    return true;
  };
  // A sum that runs apart: whole rows of one image a part, on primitives
  // without the sum and the activation, one for each thread that runs
  // parts of this shape (dist_rt_parallel_for's equal chunks).
  if (int64_t chunks = sumApartChunks(s, threads)) {
    int64_t count = s.n * chunks;
    for (int64_t p = 0; p < count; ++p) {
      Part part{s, 0, 0, nullptr};
      int64_t image = p / chunks, c = p % chunks;
      if (!rowPart(image, s.out[d] * c / chunks, s.out[d] * (c + 1) / chunks,
                   part)) {
        job.parts.clear();
        break;
      }
      part.shape.flags = 0;
      part.shape.lo = part.shape.hi = 0.0f;
      part.shape.part = int(p * std::min<int64_t>(threads, count) / count);
      part.sumApart = true;
      part.prim = primitiveFor(api, part.shape);
      if (!part.prim)
        return false;
      job.parts.push_back(part);
    }
    if (!job.parts.empty()) {
      parts = 0;
      sumApartRuns.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // Every image a part of its own where that is faster (imagesApart),
  // each thread's in a row.
  bool apart = false;
  if (parts > 0 && (byImages || threads == 1) && s.n % parts == 0 &&
      imagesApart(api, s, s.n / parts)) {
    for (int64_t i = 0; i < s.n; ++i) {
      Part part{s, 0, 0, nullptr};
      part.shape.n = 1;
      part.shape.part = int(i * parts / s.n);
      part.inOffset = i * s.inPositions() * C;
      part.outOffset = i * s.outPositions() * F;
      part.prim = primitiveFor(api, part.shape);
      if (!part.prim)
        return false;
      job.parts.push_back(part);
    }
    parts = 0;
    apart = true;
    imageApartRuns.fetch_add(1, std::memory_order_relaxed);
  }
  // Images that do not split evenly over the threads: each thread takes as
  // many whole images as the others, then its share of the rows of each
  // image left over, its parts in a row so that dist_rt_parallel_for's
  // equal chunks give it just those. GoogLeNet on a batch of 3 took 1.44
  // times less time on two threads than on one with 1 and 2 images a
  // thread (onnxruntime 1.67).
  if (parts > 0 && byImages && s.n % threads != 0 && s.out[d] >= threads) {
    int64_t whole = s.n / threads, left = s.n % threads;
    for (int64_t t = 0; t < threads; ++t) {
      if (whole > 0) {
        Part part{s, 0, 0, nullptr};
        part.shape.n = whole;
        part.inOffset = t * whole * s.inPositions() * C;
        part.outOffset = t * whole * s.outPositions() * F;
        job.parts.push_back(part);
      }
      for (int64_t j = 0; j < left; ++j) {
        Part part{s, 0, 0, nullptr};
        if (!rowPart(threads * whole + j, s.out[d] * t / threads,
                     s.out[d] * (t + 1) / threads, part)) {
          job.parts.clear();
          break;
        }
        job.parts.push_back(part);
      }
      if (job.parts.empty())
        break;
    }
    for (size_t p = 0; p < job.parts.size(); ++p) {
      Part &part = job.parts[p];
      part.shape.part = int(p);
      part.prim = primitiveFor(api, part.shape);
      if (!part.prim)
        return false;
    }
    if (!job.parts.empty())
      parts = 0;
  }
  for (int64_t p = 0; p < parts; ++p) {
    Part part{s, 0, 0, nullptr};
    part.shape.part = int(p);
    if (byFilters) {
      auto edge = [&](int64_t q) { return (s.f * q / parts + 8) / 16 * 16; };
      int64_t f0 = p == 0 ? 0 : edge(p),
              f1 = p + 1 == parts ? s.f : edge(p + 1);
      part.shape.f = f1 - f0;
      part.firstFilter = f0;
      part.filterPart = true;
    } else if (byImages) {
      int64_t n0 = s.n * p / parts, n1 = s.n * (p + 1) / parts;
      part.shape.n = n1 - n0;
      part.inOffset = n0 * s.inPositions() * C;
      part.outOffset = n0 * s.outPositions() * F;
    } else if (parts > 1 && !rowPart(0, s.out[d] * p / parts,
                                     s.out[d] * (p + 1) / parts, part)) {
      // The call is not split.
      job.parts.clear();
      part = Part{s, 0, 0, nullptr};
      part.shape.part = 0;
      part.prim = primitiveFor(api, part.shape);
      if (!part.prim)
        return false;
      job.parts.push_back(part);
      break;
    }
    part.prim = primitiveFor(api, part.shape);
    if (!part.prim)
      return false;
    job.parts.push_back(part);
  }
  // runPart sets its thread's OpenMP team to one; the caller's (which runs
  // parts too) is set back after.
  int before = api.ompGetMaxThreads();
  if (job.parts.size() == 1)
    runPart(&job, 0, 1);
  else
    dist_rt_parallel_for(int64_t(job.parts.size()), runPart, &job);
  api.ompSetNumThreads(before);
  if (!job.fellBack.load(std::memory_order_relaxed))
    dnnlConvCalls.fetch_add(1, std::memory_order_relaxed);
  bool wino = std::any_of(job.parts.begin(), job.parts.end(),
                          [](const Part &part) { return part.prim->winograd; });
  if (wino)
    winogradRuns.fetch_add(1, std::memory_order_relaxed);
  if (how)
    *how = wino ? (apart ? ", Winograd, one image a part" : ", Winograd")
                : (apart ? ", one image a part" : "");
  return true;
}

/// The epilogue of dist_rt_conv2d_f32's flags on one value (`old` the
/// output's previous value, read only when accumulating).
float epilogue(float v, float old, int64_t flags, float lo, float hi) {
  if (flags & DIST_RT_CONV_ACCUMULATE)
    v += old;
  if (flags & DIST_RT_CONV_SILU)
    v = v * (1.0f / (1.0f + std::exp(-v)));
  else if (flags & DIST_RT_CONV_HARDSWISH)
    v = v * std::max(0.0f, std::min(1.0f, v * (1.0f / 6.0f) + 0.5f));
  // NaN becomes 0 under ReLU and lo under Clip, as in oneDNN's epilogue.
  if (flags & DIST_RT_CONV_RELU)
    v = v > 0.0f ? v : 0.0f;
  if (flags & DIST_RT_CONV_CLIP) {
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
  }
  return v;
}

/// The plain loop over [begin, end) of (image, outermost output row)
/// pairs: output rows in 2-D, depth planes in 3-D.
void plainRows(void *ctx, int64_t begin, int64_t end) {
  const PlainJob &j = *static_cast<const PlainJob *>(ctx);
  const Shape &s = *j.s;
  int64_t C = s.groups * s.c, F = s.groups * s.f;
  int d = 3 - s.spatial;
  // Where output position `o` along dimension `i` reads tap `t`: an input
  // position, or -1 outside the image (or, transposed, between strides).
  auto source = [&](int i, int64_t o, int64_t t) -> int64_t {
    if (!s.transposed) {
      int64_t r = o * s.st[i] + t * s.dil[i] - s.padL[i];
      return r >= 0 && r < s.in[i] ? r : -1;
    }
    int64_t q = o + s.padL[i] - t * s.dil[i];
    if (q < 0 || q % s.st[i])
      return -1;
    q /= s.st[i];
    return q < s.in[i] ? q : -1;
  };
  for (int64_t row = begin; row < end; ++row) {
    int64_t b = row / s.out[d], outer = row % s.out[d];
    int64_t lo[3] = {0, 0, 0}, hi[3] = {s.out[0], s.out[1], s.out[2]};
    lo[d] = outer;
    hi[d] = outer + 1;
    for (int64_t z = lo[0]; z < hi[0]; ++z)
      for (int64_t y = lo[1]; y < hi[1]; ++y)
        for (int64_t x = lo[2]; x < hi[2]; ++x)
          for (int64_t g = 0; g < s.groups; ++g)
            for (int64_t o = 0; o < s.f; ++o) {
              int64_t fo = g * s.f + o;
              float acc = j.bias ? j.bias[fo] : 0.0f;
              for (int64_t tz = 0; tz < s.k[0]; ++tz) {
                int64_t iz = source(0, z, tz);
                for (int64_t ty = 0; iz >= 0 && ty < s.k[1]; ++ty) {
                  int64_t iy = source(1, y, ty);
                  for (int64_t tx = 0; iy >= 0 && tx < s.k[2]; ++tx) {
                    int64_t ix = source(2, x, tx);
                    if (ix < 0)
                      continue;
                    const float *px =
                        j.in +
                        (((b * s.in[0] + iz) * s.in[1] + iy) * s.in[2] + ix) *
                            C +
                        g * s.c;
                    int64_t tap = (tz * s.k[1] + ty) * s.k[2] + tx;
                    // Filters [groups*f, c, k...], or transposed [groups*c,
                    // f, k...].
                    for (int64_t ci = 0; ci < s.c; ++ci) {
                      int64_t filter = s.transposed ? (g * s.c + ci) * s.f + o
                                                    : fo * s.c + ci;
                      acc += px[ci] * j.w[filter * s.taps() + tap];
                    }
                  }
                }
              }
              float *po =
                  j.out +
                  (((b * s.out[0] + z) * s.out[1] + y) * s.out[2] + x) * F + fo;
              *po = epilogue(acc, *po, s.flags, s.lo, s.hi);
            }
  }
}

/// What reorderUpsampling's `make` reads.
struct UpsamplingJob {
  const Shape *s;
  const float *weights;
};

/// ONNX's [c, f, taps] filters of a transposed convolution as [c, taps, f]
/// (the product's columns in the order its output rows hold them).
void reorderUpsampling(void *dst, const void *ctx) {
  const auto &job = *static_cast<const UpsamplingJob *>(ctx);
  const Shape &s = *job.s;
  int64_t taps = s.taps();
  auto *out = static_cast<float *>(dst);
  for (int64_t ci = 0; ci < s.c; ++ci)
    for (int64_t o = 0; o < s.f; ++o)
      for (int64_t t = 0; t < taps; ++t)
        out[(ci * taps + t) * s.f + o] = job.weights[(ci * s.f + o) * taps + t];
}

/// Whether `s` is an upsampling that upsamplingProduct runs: a transposed
/// convolution of one group whose kernel is its stride (no dilation, no
/// padding), so that every output position takes one tap of one input
/// position.
bool isUpsampling(const Shape &s) {
  if (!s.transposed || s.groups != 1)
    return false;
  for (int i = 0; i < 3; ++i)
    if (s.k[i] != s.st[i] || s.dil[i] != 1 || s.padL[i] || s.padR[i] ||
        s.out[i] != s.in[i] * s.st[i])
      return false;
  return true;
}

/// Runs the upsampling `s` (isUpsampling) as one product of every input
/// position's channels by the filters, [positions, c] x [c, taps * f]
/// (the runtime's GEMM), then copies each position's taps * f results to
/// the output rows they belong to (f contiguous values a tap, a tap's row
/// of kw taps contiguous too), adding the bias and applying the epilogue
/// as it goes. oneDNN's deconvolution ran U-Net's 2x2 upsamplings
/// at 45-73 GFLOP/s (AMD EPYC, family 26, one thread), a third of its
/// convolutions' speed. False when memory is out (nothing written).
bool upsamplingProduct(const Shape &s, const float *in, const float *w,
                       const float *bias, float *out) {
  int64_t taps = s.taps(), cols = taps * s.f;
  int64_t positions = s.n * s.inPositions();
  size_t wBytes = size_t(s.c * cols) * sizeof(float);
  UpsamplingJob job{&s, w};
  int64_t key[3] = {0x75707361 /* "upsa" */, taps, s.f};
  const auto *reordered = static_cast<const float *>(dist_rt::derivedConstant(
      w, wBytes, key, wBytes, reorderUpsampling, &job));
  thread_local std::vector<float> filters, columns, product;
  try {
    if (!reordered) {
      filters.resize(size_t(s.c * cols));
      reorderUpsampling(filters.data(), &job);
      reordered = filters.data();
    }
    if (bias) {
      columns.resize(size_t(cols));
      for (int64_t t = 0; t < taps; ++t)
        std::memcpy(&columns[size_t(t * s.f)], bias,
                    size_t(s.f) * sizeof(float));
    }
    product.resize(size_t(positions * cols));
  } catch (const std::bad_alloc &) {
    return false;
  }
  auto ptr = [](const void *p) { return int64_t(intptr_t(p)); };
  dist_rt_gemm_set_f32(1, positions, cols, s.c, ptr(in), 0, s.c, 1,
                       ptr(reordered), cols, 1, ptr(product.data()), 0, cols, 1,
                       0);
  // The bias and the epilogue as the copy stores (the product's own
  // epilogue pass over a bias per column took 7% of U-Net's inference).
  struct CopyJob {
    const Shape *s;
    const float *product, *bias;
    float *out;
  } copy{&s, product.data(), bias ? columns.data() : nullptr, out};
  // Rows of input positions: (image, depth, row) triples, each writing its
  // taps' output rows.
  dist_rt_parallel_for(
      s.n * s.in[0] * s.in[1],
      [](void *ctx, int64_t begin, int64_t end) {
        const CopyJob &j = *static_cast<const CopyJob *>(ctx);
        const Shape &s = *j.s;
        int64_t F = s.f, taps = s.taps(), run = s.k[2] * F;
        for (int64_t r = begin; r < end; ++r) {
          int64_t b = r / (s.in[0] * s.in[1]), z = r / s.in[1] % s.in[0],
                  y = r % s.in[1];
          for (int64_t x = 0; x < s.in[2]; ++x) {
            const float *src = j.product + ((r * s.in[2] + x) * taps) * F;
            for (int64_t tz = 0; tz < s.k[0]; ++tz)
              for (int64_t ty = 0; ty < s.k[1]; ++ty) {
                float *dst =
                    j.out + (((b * s.out[0] + z * s.st[0] + tz) * s.out[1] +
                              y * s.st[1] + ty) *
                                 s.out[2] +
                             x * s.st[2]) *
                                F;
                int64_t tap = tz * s.k[1] + ty;
                const float *from = src + tap * run;
                const float *cb = j.bias ? j.bias + tap * run : nullptr;
                if (!s.flags && !cb) {
                  std::memcpy(dst, from, size_t(run) * sizeof(float));
                } else if (!s.flags) {
                  for (int64_t i = 0; i < run; ++i)
                    dst[i] = from[i] + cb[i];
                } else {
                  for (int64_t i = 0; i < run; ++i)
                    dst[i] = epilogue(from[i] + (cb ? cb[i] : 0.0f), dst[i],
                                      s.flags, s.lo, s.hi);
                }
              }
          }
        }
      },
      &copy);
  upsamplingCalls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

} // namespace

namespace dist_rt {

void setForcePlainNhwcConv(bool plain) {
  forcePlain.store(plain, std::memory_order_relaxed);
}

int64_t dnnlConvolutionCalls() {
  return dnnlConvCalls.load(std::memory_order_relaxed);
}

int64_t upsamplingProductCalls() {
  return upsamplingCalls.load(std::memory_order_relaxed);
}

int64_t sumApartCalls() { return sumApartRuns.load(std::memory_order_relaxed); }

int64_t onePixelProductCalls() {
  return onePixelProducts.load(std::memory_order_relaxed);
}

int64_t pointwiseDepthwiseBandCalls() {
  return bandRuns.load(std::memory_order_relaxed);
}

void setNhwcCacheBytes(int64_t bytes) {
  forcedCacheBytes.store(bytes, std::memory_order_relaxed);
}

int64_t winogradConvolutionCalls() {
  return winogradRuns.load(std::memory_order_relaxed);
}

bool nhwcWinogradOffered() {
  const DnnlApi *api = dnnl();
  if (!api)
    return false;
  Shape s{};
  s.spatial = 2;
  s.groups = s.n = 1;
  s.c = s.f = 16;
  for (int d = 0; d < 3; ++d) {
    s.in[d] = s.out[d] = d == 0 ? 1 : 8;
    s.k[d] = d == 0 ? 1 : 3;
    s.st[d] = s.dil[d] = 1;
    s.padL[d] = s.padR[d] = d == 0 ? 0 : 1;
  }
  std::lock_guard<std::mutex> lock(cacheMutex);
  auto made = makePrimitive(*api, s, /*winograd=*/true);
  if (made)
    destroyPrimitive(*api, *made);
  return made != nullptr;
}

int64_t imagesApartCalls() {
  return imageApartRuns.load(std::memory_order_relaxed);
}

void setNhwcWinograd(int mode) {
  forcedWinograd.store(mode < 0    ? 0
                       : mode == 0 ? int(kWinogradNever)
                       : mode == 1 ? int(kWinogradAlways)
                       : mode == 2 ? int(kWinogradMeasured)
                                   : int(kWinogradImagesApart),
                       std::memory_order_relaxed);
}

} // namespace dist_rt

namespace {

/// A 1x1 convolution of one-pixel images (a squeeze-excitation block's two
/// layers after its global pooling, a head's layer after the network's):
/// a product of [images, c] by the filters' [f, c] transposed, which
/// dist_rt_gemm_set_act_f32 runs with the epilogue as it stores (filters
/// registered as constant are packed once there). oneDNN spends its time
/// around such a call, not in it: from a cold cache, as a model calls
/// them, one thread, the layer alone, 1152 -> 48 on one image took 27-32
/// us on oneDNN against 15-18 as a product, 48 -> 1152 59-63 against
/// 32-35, on 16 images 62-67 against 32-36 and 123-126 against 66-70,
/// 1024 -> 1024 on 64 images 4.0-4.8 ms against 0.9-1.1; two threads, 960
/// -> 1280 on 8 images 0.54-0.60 ms against 0.25-0.29 (AMD EPYC, family
/// 26). EfficientNet-B0 on one image, 32 such calls, 10.37 -> 10.11 ms
/// (medians of four runs each, a slow period) at one thread, 7.38 -> 7.13
/// at two. On images of 7 x 7 pixels oneDNN's primitive is the faster
/// (192 -> 1152: 115-120 us against 160-235), so only one pixel.
bool onePixelPointwise(const Shape &s) {
  if (s.transposed || s.groups != 1 || s.taps() != 1 || s.inPositions() != 1 ||
      s.outPositions() != 1)
    return false;
  for (int d = 0; d < 3; ++d)
    if (s.padL[d] != 0 || s.padR[d] != 0)
      return false;
  return true;
}

void onePixelProduct(const Shape &s, const float *in, const float *w,
                     const float *bias, float *out) {
  int64_t flags = 0;
  if (s.flags & DIST_RT_CONV_ACCUMULATE)
    flags |= DIST_RT_GEMM_ACCUMULATE;
  if (s.flags & DIST_RT_CONV_SILU)
    flags |= DIST_RT_GEMM_SILU;
  if (s.flags & DIST_RT_CONV_HARDSWISH)
    flags |= DIST_RT_GEMM_HARDSWISH;
  // out[i, o] = sum over j of in[i, j] * w[o, j] (+ bias[o]).
  dist_rt_gemm_set_act_f32(1, s.n, s.f, s.c, int64_t(intptr_t(in)), 0, s.c, 1,
                           int64_t(intptr_t(w)), 1, s.c, int64_t(intptr_t(out)),
                           0, s.f, 1, 0, int64_t(intptr_t(bias)), 0, 1, flags,
                           0.0f, 0.0f, 0, 0);
  // ReLU and Clip as oneDNN's post-ops apply them (NaN becomes 0 and the
  // lower bound; the product's epilogue keeps NaN): n * f values.
  if (s.flags & (DIST_RT_CONV_RELU | DIST_RT_CONV_CLIP)) {
    int64_t bounds = s.flags & (DIST_RT_CONV_RELU | DIST_RT_CONV_CLIP);
    for (int64_t i = 0, count = s.n * s.f; i < count; ++i)
      out[i] = epilogue(out[i], 0.0f, bounds, s.lo, s.hi);
  }
  onePixelProducts.fetch_add(1, std::memory_order_relaxed);
}

/// Both entry points: runs `s` on oneDNN, else on the plain loop.
void runConv(Shape &s, int64_t in_ptr, int64_t w_ptr, int64_t bias_ptr,
             int64_t out_ptr) {
  s.lo = (s.flags & DIST_RT_CONV_CLIP) ? s.lo : 0.0f;
  s.hi = (s.flags & DIST_RT_CONV_CLIP) ? s.hi : 0.0f;
  s.bias = bias_ptr != 0;
  s.part = 0;
  s.winograd = winogradCandidate(s) ? winogradSetting() : 0;
  s.varyingFilters =
      s.winograd != 0 &&
      !dist_rt::isConstantMemory(reinterpret_cast<const void *>(w_ptr),
                                 size_t(s.groups * s.f * s.c * s.taps()) *
                                     sizeof(float));
  int threads = int(dist_rt::parallelThreads());
  dist_rt::ProfileScope prof(s.transposed     ? "transposed conv channels-last"
                             : s.spatial == 3 ? "conv3d channels-last"
                                              : "conv2d channels-last");
  // The profile's name of the call (`how`: the algorithm where it is not
  // the direct one).
  auto describe = [&](const char *how) {
    // A transposed convolution does the work of the convolution that it
    // transposes: every input position by every tap.
    double positions =
        double(s.transposed ? s.inPositions() : s.outPositions());
    char in[64], out[64], k[64], st[64];
    auto dims = [&](char *buf, const int64_t (&v)[3]) {
      if (s.spatial == 3)
        std::snprintf(buf, 64, "%lldx%lldx%lld", (long long)v[0],
                      (long long)v[1], (long long)v[2]);
      else
        std::snprintf(buf, 64, "%lldx%lld", (long long)v[1], (long long)v[2]);
    };
    dims(in, s.in);
    dims(out, s.out);
    dims(k, s.k);
    dims(st, s.st);
    prof.describe(2.0 * double(s.n * s.groups * s.f) * positions *
                      double(s.c * s.taps()),
                  "n%lld, %lld -> %lld channels%s, %s -> %s, kernel %s, "
                  "strides %s%s",
                  (long long)s.n, (long long)(s.groups * s.c),
                  (long long)(s.groups * s.f), s.groups > 1 ? " grouped" : "",
                  in, out, k, st, how);
  };
  if (prof.active())
    describe("");
  const auto *in = reinterpret_cast<const float *>(in_ptr);
  const auto *wt = reinterpret_cast<const float *>(w_ptr);
  const auto *bias = reinterpret_cast<const float *>(bias_ptr);
  auto *out = reinterpret_cast<float *>(out_ptr);
  if (s.c > 0 && s.taps() > 0 && isUpsampling(s) &&
      !forcePlain.load(std::memory_order_relaxed) &&
      upsamplingProduct(s, in, wt, bias, out))
    return;
  if (s.c > 0 && onePixelPointwise(s) &&
      !forcePlain.load(std::memory_order_relaxed)) {
    onePixelProduct(s, in, wt, bias, out);
    return;
  }
  if (s.c > 0 && s.taps() > 0)
    if (const DnnlApi *api = dnnl()) {
      const char *how = "";
      if (convDnnl(*api, s, threads, in, wt, bias, out, &how)) {
        if (*how && prof.active())
          describe(how);
        return;
      }
    }
  static std::once_flag warned;
  if (!forcePlain.load(std::memory_order_relaxed))
    std::call_once(warned, [] {
      std::fprintf(stderr, "warning: dist_rt: oneDNN (libdnnl.so.2) cannot "
                           "run a channels-last convolution here; a slow "
                           "plain loop runs it\n");
    });
  PlainJob job{&s, in, wt, bias, out};
  dist_rt_parallel_for(s.n * s.out[3 - s.spatial], plainRows, &job);
}

/// A buffer of floats aligned to a page, grown on demand (not cleared,
/// not kept when it grows); null when memory is out. The wide image
/// between a pair's two halves lives in one, aligned as the arena's blocks
/// are (std::vector's are aligned to 16 bytes only, and oneDNN's kernels
/// load and store whole cache lines).
class AlignedFloats {
public:
  AlignedFloats() = default;
  AlignedFloats(const AlignedFloats &) = delete;
  AlignedFloats &operator=(const AlignedFloats &) = delete;
  ~AlignedFloats() { std::free(data_); }
  float *get(int64_t count) {
    size_t bytes = (size_t(count) * sizeof(float) + 4095) / 4096 * 4096;
    if (bytes > bytes_) {
      void *data = std::aligned_alloc(4096, bytes);
      if (!data)
        return nullptr;
      std::free(data_);
      data_ = static_cast<float *>(data);
      bytes_ = bytes;
    }
    return data_;
  }

private:
  float *data_ = nullptr;
  size_t bytes_ = 0;
};

/// One band of dist_rt_conv2d_nhwc_pwdw_f32: output rows of one image and
/// the two primitives that make them. The depthwise half reads the band's
/// rows of the wide image [first, last]; where the thread's previous band
/// of the same image read rows from `first` on, those `kept` rows move to
/// the front of its buffer and the pointwise half makes only the rows
/// after them (the halo rows are not made twice).
struct Band {
  Shape pw, dw;
  Primitive *pwPrim = nullptr, *dwPrim = nullptr;
  int64_t inOffset = 0, outOffset = 0;
  /// Rows kept from the previous band and where they start in its buffer.
  int64_t kept = 0, keptFrom = 0;
};

struct BandsJob {
  const DnnlApi *api;
  std::vector<Band> bands;
  const float *in, *w1, *b1, *w2, *b2;
  float *out;
  /// Floats in a row of the wide image, and the most rows a band reads.
  int64_t rowFloats = 0, maxRows = 0;
  std::atomic<bool> failed{false};
};

void runBands(void *ctx, int64_t begin, int64_t end) {
  auto &job = *static_cast<BandsJob *>(ctx);
  job.api->ompSetNumThreads(1);
  // The band's rows of the wide image: at most half the L2 cache
  // (pwdwBands).
  thread_local AlignedFloats buffer;
  // Sized once for the largest band: the rows a band keeps stay put.
  float *wide = buffer.get(job.maxRows * job.rowFloats);
  if (!wide) {
    job.failed.store(true, std::memory_order_relaxed);
    return;
  }
  for (int64_t i = begin; i < end; ++i) {
    if (job.failed.load(std::memory_order_relaxed))
      return;
    const Band &b = job.bands[size_t(i)];
    // pwdwBands keeps rows only from a band of the same chunk; a chunk
    // cut otherwise fails the call (it then runs unfused).
    int64_t kept = i > begin ? b.kept : 0;
    if (kept > 0)
      std::memmove(wide, wide + b.keptFrom * job.rowFloats,
                   size_t(kept * job.rowFloats) * sizeof(float));
    bool ok = kept == b.kept &&
              runPrimitive(*job.api, *b.pwPrim, b.pw, job.in + b.inOffset,
                           job.w1, job.b1, wide + kept * job.rowFloats);
    if (!ok || !runPrimitive(*job.api, *b.dwPrim, b.dw, wide, job.w2, job.b2,
                             job.out + b.outOffset))
      job.failed.store(true, std::memory_order_relaxed);
  }
}

/// Runs the pair `pw` then `dw` (whole calls, see
/// dist_rt_conv2d_nhwc_pwdw_f32) in bands of output rows, each band's
/// pointwise rows kept in the cache between the two; false where the
/// intermediate image fits the cache anyway, oneDNN is missing or refuses
/// a band's shape, or it failed (then `out` is to be written again).
///
/// The pointwise layers of inverted residual blocks (MobileNetV2,
/// EfficientNet) widen the image six times, and the depthwise layer after
/// reads the wide image once: written out and read back it costs both
/// layers most of their time on large images. Measured on an AMD EPYC
/// (family 26, 1 MiB of L2 a core), EfficientNet-B0's layers with SiLU on
/// 8 images, the pair alone against its two calls: 16 -> 96 on 112 x 112
/// and the stride-2 3x3 layer 8.0 against 12.3 ms at one thread, 4.0
/// against 5.9 at two; 24 -> 144 on 56 x 56 and a 3x3 layer 5.4 against
/// 6.9; 112 -> 672 on 14 x 14 and a 5x5 layer 3.2 against 3.6 (3.8 when
/// each band made its halo rows again: hence the rows kept). Bands of
/// half the L2 cache beat quarter and whole ones; where the wide image
/// is at most four times the cache (EfficientNet's 7 x 7 layers, 1.8 MB
/// on 8 images) the pair runs as its two calls through a scratch image.
bool pwdwBands(const DnnlApi &api, const Shape &pw, const Shape &dw,
               int threads, const float *in, const float *w1, const float *b1,
               const float *w2, const float *b2, float *out) {
  int64_t l2 = l2CacheBytes();
  int64_t h = pw.in[1], w = pw.in[2], e = pw.f;
  int64_t rowBytes = w * e * int64_t(sizeof(float));
  if (pw.n * h * rowBytes <= 4 * l2)
    return false;
  // Output rows a band: as many as keep its pointwise rows within half
  // the L2 cache, at least one.
  int64_t reach = (dw.k[1] - 1) * dw.dil[1] + 1;
  int64_t budget = std::max<int64_t>(1, l2 / 2 / rowBytes);
  int64_t rows =
      std::clamp<int64_t>((budget - reach) / dw.st[1] + 1, 1, dw.out[1]);
  int64_t perImage = (dw.out[1] + rows - 1) / rows;
  while ((pw.n * perImage) % threads != 0 && perImage < dw.out[1])
    ++perImage;
  int64_t count = pw.n * perImage;
  int64_t slots = std::min<int64_t>(threads, count);
  BandsJob job{&api, {}, in, w1, b1, w2, b2, out, w * e, {}};
  job.bands.reserve(size_t(count));
  // The thread that runs each band: dist_rt_parallel_for's chunks.
  std::vector<int> slotOf(size_t(count), 0);
  for (int64_t r = 0; r < slots; ++r) {
    int64_t begin, end;
    dist_rt::parallelChunkRange(count, slots, r, &begin, &end);
    for (int64_t p = begin; p < end; ++p)
      slotOf[size_t(p)] = int(r);
  }
  int64_t prevFirst = 0, prevLast = -1;
  for (int64_t p = 0; p < count; ++p) {
    int64_t image = p / perImage, c = p % perImage;
    int64_t y0 = dw.out[1] * c / perImage, y1 = dw.out[1] * (c + 1) / perImage;
    Band b{pw, dw};
    int64_t first, last, padL, padR;
    if (!partRows(dw, 1, y0, y1, first, last, padL, padR))
      return false;
    int slot = slotOf[size_t(p)];
    bool follows = c > 0 && slotOf[size_t(p - 1)] == slot &&
                   first >= prevFirst && first <= prevLast && last > prevLast;
    b.kept = follows ? prevLast - first + 1 : 0;
    b.keptFrom = follows ? first - prevFirst : 0;
    prevFirst = first;
    prevLast = last;
    b.pw.n = b.dw.n = 1;
    b.pw.in[1] = b.pw.out[1] = last - first + 1 - b.kept;
    b.dw.in[1] = last - first + 1;
    job.maxRows = std::max(job.maxRows, b.dw.in[1]);
    b.dw.padL[1] = padL;
    b.dw.padR[1] = padR;
    b.dw.out[1] = y1 - y0;
    b.pw.part = b.dw.part = slot;
    b.inOffset = (image * h + first + b.kept) * w * pw.c;
    b.outOffset = (image * dw.out[1] + y0) * dw.out[2] * e;
    b.pwPrim = primitiveFor(api, b.pw);
    b.dwPrim = primitiveFor(api, b.dw);
    if (!b.pwPrim || !b.dwPrim)
      return false;
    job.bands.push_back(b);
  }
  if (slots == 1) {
    int before = api.ompGetMaxThreads();
    runBands(&job, 0, count);
    api.ompSetNumThreads(before);
  } else {
    dist_rt_parallel_for(count, runBands, &job);
  }
  if (job.failed.load(std::memory_order_relaxed))
    return false;
  bandRuns.fetch_add(1, std::memory_order_relaxed);
  return true;
}

} // namespace

extern "C" void dist_rt_conv2d_nhwc_f32(
    int64_t groups, int64_t n, int64_t c, int64_t h, int64_t w, int64_t f,
    int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
    int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t oh, int64_t ow,
    int64_t in_ptr, int64_t w_ptr, int64_t bias_ptr, int64_t out_ptr, float lo,
    float hi, int64_t flags) {
  if (n <= 0 || oh <= 0 || ow <= 0 || groups <= 0 || f <= 0)
    return;
  Shape s{2,           (flags & DIST_RT_CONV_TRANSPOSED) != 0,
          groups,      n,
          c,           f,
          {1, h, w},   {1, oh, ow},
          {1, kh, kw}, {1, sh, sw},
          {1, dh, dw}, {0, pt, pl},
          {0, pb, pr}, flags & ~int64_t(DIST_RT_CONV_TRANSPOSED),
          lo,          hi,
          false,       0};
  runConv(s, in_ptr, w_ptr, bias_ptr, out_ptr);
}

extern "C" void dist_rt_conv3d_nhwc_f32(
    int64_t groups, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w,
    int64_t f, int64_t kd, int64_t kh, int64_t kw, int64_t sd, int64_t sh,
    int64_t sw, int64_t dd, int64_t dh, int64_t dw, int64_t pf, int64_t pt,
    int64_t pl, int64_t pk, int64_t pb, int64_t pr, int64_t od, int64_t oh,
    int64_t ow, int64_t in_ptr, int64_t w_ptr, int64_t bias_ptr,
    int64_t out_ptr, float lo, float hi, int64_t flags) {
  if (n <= 0 || od <= 0 || oh <= 0 || ow <= 0 || groups <= 0 || f <= 0)
    return;
  Shape s{3,
          (flags & DIST_RT_CONV_TRANSPOSED) != 0,
          groups,
          n,
          c,
          f,
          {d, h, w},
          {od, oh, ow},
          {kd, kh, kw},
          {sd, sh, sw},
          {dd, dh, dw},
          {pf, pt, pl},
          {pk, pb, pr},
          flags & ~int64_t(DIST_RT_CONV_TRANSPOSED),
          lo,
          hi,
          false,
          0};
  runConv(s, in_ptr, w_ptr, bias_ptr, out_ptr);
}

extern "C" void dist_rt_conv2d_nhwc_pwdw_f32(
    int64_t n, int64_t c, int64_t h, int64_t w, int64_t e, int64_t w1_ptr,
    int64_t b1_ptr, float lo1, float hi1, int64_t flags1, int64_t kh,
    int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t pt,
    int64_t pl, int64_t pb, int64_t pr, int64_t oh, int64_t ow, int64_t w2_ptr,
    int64_t b2_ptr, float lo2, float hi2, int64_t flags2, int64_t in_ptr,
    int64_t out_ptr) {
  if (n <= 0 || oh <= 0 || ow <= 0 || e <= 0)
    return;
  const int64_t kept =
      ~int64_t(DIST_RT_CONV_ACCUMULATE | DIST_RT_CONV_TRANSPOSED);
  auto clip = [](int64_t flags, float v) {
    return (flags & DIST_RT_CONV_CLIP) ? v : 0.0f;
  };
  Shape pw{2,
           false,
           1,
           n,
           c,
           e,
           {1, h, w},
           {1, h, w},
           {1, 1, 1},
           {1, 1, 1},
           {1, 1, 1},
           {0, 0, 0},
           {0, 0, 0},
           flags1 & kept,
           clip(flags1, lo1),
           clip(flags1, hi1),
           b1_ptr != 0,
           0};
  Shape dwS{2,
            false,
            e,
            n,
            1,
            1,
            {1, h, w},
            {1, oh, ow},
            {1, kh, kw},
            {1, sh, sw},
            {1, dh, dw},
            {0, pt, pl},
            {0, pb, pr},
            flags2 & kept,
            clip(flags2, lo2),
            clip(flags2, hi2),
            b2_ptr != 0,
            0};
  dist_rt::ProfileScope prof("conv2d pointwise+depthwise channels-last");
  if (prof.active())
    prof.describe(2.0 * double(n) *
                      (double(h * w * c * e) + double(oh * ow * e * kh * kw)),
                  "n%lld, %lld -> %lld channels, %lldx%lld -> %lldx%lld, "
                  "depthwise kernel %lldx%lld, strides %lldx%lld",
                  (long long)n, (long long)c, (long long)e, (long long)h,
                  (long long)w, (long long)oh, (long long)ow, (long long)kh,
                  (long long)kw, (long long)sh, (long long)sw);
  const auto *in = reinterpret_cast<const float *>(in_ptr);
  auto *out = reinterpret_cast<float *>(out_ptr);
  if (c > 0 && !forcePlain.load(std::memory_order_relaxed))
    if (const DnnlApi *api = dnnl())
      if (pwdwBands(*api, pw, dwS, int(dist_rt::parallelThreads()), in,
                    reinterpret_cast<const float *>(w1_ptr),
                    reinterpret_cast<const float *>(b1_ptr),
                    reinterpret_cast<const float *>(w2_ptr),
                    reinterpret_cast<const float *>(b2_ptr), out))
        return;
  // The two calls through the whole intermediate image (kept by the
  // thread for the next call where it is small).
  thread_local AlignedFloats small;
  AlignedFloats large;
  int64_t count = n * h * w * e;
  float *mid = count * int64_t(sizeof(float)) <= 4 * l2CacheBytes()
                   ? small.get(count)
                   : large.get(count);
  if (!mid)
    throw std::bad_alloc(); // dist_rt_main reports it.
  runConv(pw, in_ptr, w1_ptr, b1_ptr, int64_t(intptr_t(mid)));
  runConv(dwS, int64_t(intptr_t(mid)), w2_ptr, b2_ptr, out_ptr);
}
