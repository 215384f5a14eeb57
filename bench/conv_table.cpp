//===- conv_table.cpp - Convolutions: the runtime call against products ---===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-conv-bench: times the ways a one-group convolution of real CNNs
// (ResNet-50, MobileNetV2, EfficientNet-B0 and DenseNet-121 at 224x224: every
// distinct 1x1 layer, the k x k ones of ResNet-50 and DenseNet-121, and the
// stems) can run with its bias and activation, as generated code calls
// them:
//   writable the way codegen takes without the call, on filters in writable
//            memory (training's; the products then run on OpenBLAS or
//            oneDNN): for a k x k kernel the im2col columns of the whole
//            (padded) image first, then dist_rt_gemm_set_act_f32 (out[b] =
//            W x cols[b] with the bias and activation, one call for the
//            batch), as dist-fuse-product-epilogues makes codegen's
//            product and its elementwise loop (--fused-epilogue 0:
//            dist_rt_gemm_set_f32, then one pass as that loop; the columns
//            here come from a plain loop, codegen's from a vectorised one,
//            so this way can read slower than it runs in a model);
//   product  the same on the filters registered as constant memory, as a
//            parameter file's mapping is, so that the runtime may pack them
//            once (sgemm_packed.cpp; --constant-weights 0 leaves them
//            writable);
//   call     dist_rt_conv2d_f32 on those filters, the bias and the
//            activation applied as it stores: on a CPU with AVX-512 the
//            AVX-512 tiles or products by panels, whichever its first calls
//            timed faster (--call-kernel product: always the products),
//            elsewhere products by panels of output positions
//            (columns, product and activation per panel, in cache; the
//            packed filters' tiles apply them as they store). With
//            --padded-output 1 it writes its output inside a buffer with a
//            border of 1, as a layer before a padded 3x3 one does in a
//            model (rows of the output apart).
//   nhwc     dist_rt_conv2d_nhwc_f32 (oneDNN, conv_nhwc.cpp) on the same
//            images channels-last and unpadded (it pads), the filters
//            constant or not as for `call`: what a channels-last layout
//            of the images would run.
// Prints, per thread count and batch, each layer's GFLOP/s each way and
// call / product, call / writable and nhwc / call, then their geometric
// means per model. Each layer is timed in ROUNDS rounds alternating the ways,
// and a way's figure is its best round (the machine's noise only slows). Checks
// that they agree.
//
//   dist-conv-bench [--threads 1,2] [--batches 1,8] [--rounds 3]
//                   [--min-time 0.1] [--models resnet50,mobilenet_v2,...]
//                   [--constant-weights 1] [--padded-output 0]
//                   [--call-kernel auto|product] [--fused-epilogue 1]
//                   [--layers C:F:HW[:K[:S]],...]
//
// --layers times layers of one's own (C channels to F filters on HW x HW
// images, a K x K kernel at stride S, ReLU6 after) instead of the models'.
//
// Codegen's choice per host (runtime_abi::directConvApplies and
// LowerToLinalg's) weighs this table with whole models (docs/status.md:
// on an AVX2 CPU the k x k rows favoured the call, ResNet-50 as a whole did
// not gain, so codegen keeps its columns there). (An AVX2 pointwise kernel, 4
// filters by 24 positions, measured 0.46 to 0.88 of the product path,
// geometric mean 0.63 to 0.69 per model, on an AVX2 AMD EPYC at one
// thread: not kept.)
//
// Exits with 0 once the table is printed (whatever the figures), 1 when the
// two ways disagree, 2 on a usage error.
//
//===----------------------------------------------------------------------===//

#include "dist_rt/dist_rt.h"
#include "dist_rt/kernels.h"

#include "bench_timing.h"
#include "internal.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

using dist_bench::asInt;
using dist_bench::secondsPerCall;
using dist_bench::splitList;

/// A convolution of c channels to f filters on h x h images, a k x k kernel
/// at stride s padded by k / 2, then ReLU6 (`clip`) or ReLU.
struct Layer {
  int64_t c, f, h;
  bool clip;
  int64_t k = 1, s = 1;
};

/// The distinct pointwise layers of each model at 224x224 (torchvision),
/// then ResNet-50's k x k ones and the stems.
std::map<std::string, std::vector<Layer>> layersByModel() {
  std::map<std::string, std::vector<Layer>> m;
  m["resnet50"] = {{64, 64, 56, false},         {64, 256, 56, false},
                   {256, 64, 56, false},        {256, 128, 56, false},
                   {128, 512, 28, false},       {512, 128, 28, false},
                   {512, 256, 28, false},       {256, 1024, 14, false},
                   {1024, 256, 14, false},      {1024, 512, 14, false},
                   {512, 2048, 7, false},       {2048, 512, 7, false},
                   {3, 64, 224, false, 7, 2},   {64, 64, 56, false, 3, 1},
                   {128, 128, 56, false, 3, 2}, {128, 128, 28, false, 3, 1},
                   {256, 256, 28, false, 3, 2}, {256, 256, 14, false, 3, 1},
                   {512, 512, 14, false, 3, 2}, {512, 512, 7, false, 3, 1}};
  m["mobilenet_v2"] = {
      {32, 16, 112, true},  {16, 96, 112, true},     {24, 144, 56, true},
      {144, 24, 56, true},  {32, 192, 28, true},     {192, 32, 28, true},
      {64, 384, 14, true},  {384, 64, 14, true},     {96, 576, 14, true},
      {576, 96, 14, true},  {160, 960, 7, true},     {960, 160, 7, true},
      {320, 1280, 7, true}, {3, 32, 224, true, 3, 2}};
  m["efficientnet_b0"] = {{16, 96, 112, false}, {96, 24, 56, false},
                          {144, 24, 56, false}, {144, 40, 28, false},
                          {240, 40, 28, false}, {240, 80, 14, false},
                          {480, 80, 14, false}, {480, 112, 14, false},
                          {672, 192, 7, false}, {1152, 320, 7, false}};
  m["densenet121"] = {{64, 128, 56, false},     {256, 128, 56, false},
                      {128, 128, 28, false},    {512, 128, 28, false},
                      {256, 128, 14, false},    {1024, 128, 14, false},
                      {512, 128, 7, false},     {1024, 128, 7, false},
                      {256, 128, 56, false},    {512, 256, 28, false},
                      {1024, 512, 14, false},   {128, 32, 56, false, 3, 1},
                      {128, 32, 7, false, 3, 1}};
  return m;
}

/// The whole image's im2col columns, as codegen materialises them:
/// cols[b, (ci, i, j), y * ow + x] = in[b, ci, y*s + i, x*s + j] of the
/// padded input (hp x hp).
struct Columns {
  const float *in;
  float *cols;
  int64_t c, hp, k, s, oh;
};

void columnsChunk(void *ctx, int64_t begin, int64_t end) {
  const auto &cc = *static_cast<const Columns *>(ctx);
  int64_t taps = cc.c * cc.k * cc.k, p = cc.oh * cc.oh;
  for (int64_t row = begin; row < end; ++row) {
    int64_t b = row / taps, t = row % taps;
    int64_t ci = t / (cc.k * cc.k), i = t / cc.k % cc.k, j = t % cc.k;
    const float *x = cc.in + (b * cc.c + ci) * cc.hp * cc.hp + i * cc.hp + j;
    float *d = cc.cols + row * p;
    for (int64_t y = 0; y < cc.oh; ++y)
      for (int64_t xo = 0; xo < cc.oh; ++xo)
        d[y * cc.oh + xo] = x[y * cc.s * cc.hp + xo * cc.s];
  }
}

/// The generated code's bias-and-activation pass after a product, over
/// planes [begin, end) of `positions` values each.
struct Epilogue {
  float *out;
  const float *bias;
  int64_t f, positions;
  bool clip;
};

void epilogueChunk(void *ctx, int64_t begin, int64_t end) {
  const auto &e = *static_cast<const Epilogue *>(ctx);
  for (int64_t plane = begin; plane < end; ++plane) {
    float *o = e.out + plane * e.positions;
    float b = e.bias[plane % e.f];
    float hi = e.clip ? 6.0f : INFINITY;
    for (int64_t i = 0; i < e.positions; ++i) {
      float v = o[i] + b;
      v = v < 0.0f ? 0.0f : v;
      o[i] = v > hi ? hi : v;
    }
  }
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: dist-conv-bench [--threads 1,2] [--batches 1,8] "
                       "[--rounds N] [--min-time S] [--models M,...] "
                       "[--layers C:F:HW[:K[:S]],...] "
                       "[--constant-weights 0|1] [--padded-output 0|1] "
                       "[--call-kernel auto|product] "
                       "[--fused-epilogue 0|1]\n");
  std::exit(2);
}

std::vector<int> positiveList(const char *v) {
  std::vector<int> out;
  for (const std::string &t : splitList(v)) {
    int n = std::atoi(t.c_str());
    if (n < 1)
      usage();
    out.push_back(n);
  }
  if (out.empty())
    usage();
  return out;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> threadCounts = {1, 2}, batches = {1, 8};
  std::vector<std::string> models = {"resnet50", "mobilenet_v2",
                                     "efficientnet_b0", "densenet121"};
  int rounds = 3;
  double minTime = 0.1;
  bool constantWeights = true, paddedOutput = false, fusedEpilogue = true;
  std::vector<Layer> ownLayers;
  dist_rt::ConvKernel callKernel = dist_rt::ConvKernel::Auto;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc)
      usage();
    const char *v = argv[++i];
    if (a == "--threads") {
      threadCounts = positiveList(v);
    } else if (a == "--batches") {
      batches = positiveList(v);
    } else if (a == "--rounds") {
      rounds = std::atoi(v);
      if (rounds < 1)
        usage();
    } else if (a == "--min-time") {
      minTime = std::atof(v);
      if (!(minTime > 0))
        usage();
    } else if (a == "--models") {
      models = splitList(v);
    } else if (a == "--layers") {
      // Layers of one's own, "C:F:HW[:K[:S]]" each (ReLU6 after each),
      // timed as the model "layers".
      std::vector<Layer> own;
      for (const std::string &t : splitList(v)) {
        long long c = 0, f = 0, h = 0, k = 1, st = 1;
        int got = std::sscanf(t.c_str(), "%lld:%lld:%lld:%lld:%lld", &c, &f, &h,
                              &k, &st);
        if (got < 3 || c < 1 || f < 1 || h < 1 || k < 1 || st < 1)
          usage();
        own.push_back({c, f, h, true, k, st});
      }
      ownLayers = own;
      models = {"layers"};
    } else if (a == "--constant-weights") {
      if (std::strcmp(v, "0") != 0 && std::strcmp(v, "1") != 0)
        usage();
      constantWeights = *v == '1';
    } else if (a == "--call-kernel") {
      if (std::strcmp(v, "auto") == 0)
        callKernel = dist_rt::ConvKernel::Auto;
      else if (std::strcmp(v, "product") == 0)
        callKernel = dist_rt::ConvKernel::Product;
      else
        usage();
    } else if (a == "--fused-epilogue") {
      if (std::strcmp(v, "0") != 0 && std::strcmp(v, "1") != 0)
        usage();
      fusedEpilogue = *v == '1';
    } else if (a == "--padded-output") {
      if (std::strcmp(v, "0") != 0 && std::strcmp(v, "1") != 0)
        usage();
      paddedOutput = *v == '1';
    } else {
      usage();
    }
  }
  std::map<std::string, std::vector<Layer>> all = layersByModel();
  if (!ownLayers.empty())
    all["layers"] = ownLayers;
  for (const std::string &m : models)
    if (!all.count(m)) {
      std::fprintf(stderr,
                   "error: --models: unknown model '%s' (resnet50, "
                   "mobilenet_v2, efficientnet_b0, densenet121)\n",
                   m.c_str());
      return 2;
    }
  dist_rt::setConvKernel(callKernel);
  std::printf("runtime call: %s\n",
              callKernel == dist_rt::ConvKernel::Product
                  ? "products by panels (--call-kernel product)"
              : __builtin_cpu_supports("avx512f")
                  ? "AVX-512 tiles or products by panels, timed per shape"
                  : "products by panels (no AVX-512 on this CPU)");
  std::printf("convolutions with bias and activation; best of %d rounds "
              "of >= %.2f s (GFLOP/s)\n",
              rounds, minTime);
  int failures = 0;
  for (int threads : threadCounts)
    for (int n : batches) {
      std::printf("\nthreads=%d batch=%d\n", threads, n);
      std::printf("%-16s %5s %5s %4s %5s  %8s %8s %8s  %s  %s  %8s  %s\n",
                  "model", "c", "f", "hw", "kxk/s", "writable", "product",
                  "call", "call/product", "call/writable", "nhwc", "nhwc/call");
      for (const std::string &model : models) {
        double logSum = 0, logSumWritable = 0, logSumNhwc = 0;
        int count = 0;
        for (const Layer &l : all[model]) {
          int64_t hp = l.h + l.k / 2 * 2, oh = (hp - l.k) / l.s + 1;
          int64_t p = oh * oh, taps = l.c * l.k * l.k;
          bool direct = l.k == 1 && l.s == 1;
          std::vector<float> x(size_t(n * l.c * hp * hp)),
              w(size_t(l.f * taps));
          std::vector<float> bias(size_t(l.f)), a(size_t(n * l.f * p));
          // The call's output, inside a border of 1 with --padded-output.
          int64_t border = paddedOutput ? 1 : 0, pw = oh + 2 * border;
          std::vector<float> b(size_t(n * l.f * pw * pw));
          float *bOut = b.data() + border * (pw + 1);
          std::vector<float> cols(direct ? 0 : size_t(n * taps * p));
          // The padded input, its border 0 (the channels-last call pads).
          int64_t pad = l.k / 2;
          for (size_t i = 0; i < x.size(); ++i) {
            int64_t r = int64_t(i) / hp % hp, q = int64_t(i) % hp;
            bool inside = r >= pad && r < hp - pad && q >= pad && q < hp - pad;
            x[i] = inside ? float(int64_t(i * 7919 % 23) - 11) / 16 : 0.0f;
          }
          // The same images channels-last, unpadded, and their output.
          std::vector<float> xl(size_t(n * l.c * l.h * l.h)),
              ol(size_t(n * l.f * p));
          for (int64_t b = 0; b < n; ++b)
            for (int64_t ci = 0; ci < l.c; ++ci)
              for (int64_t r = 0; r < l.h; ++r)
                for (int64_t q = 0; q < l.h; ++q)
                  xl[size_t(((b * l.h + r) * l.h + q) * l.c + ci)] =
                      x[size_t(((b * l.c + ci) * hp + r + pad) * hp + q + pad)];
          for (size_t i = 0; i < w.size(); ++i)
            w[i] = float(int64_t(i * 104729 % 19) - 9) / 64;
          for (size_t i = 0; i < bias.size(); ++i)
            bias[i] = float(int64_t(i % 7) - 3) / 4;
          // The same weights never registered (the libraries' products).
          std::vector<float> wCopy = w;
          if (constantWeights)
            dist_rt::registerConstantMemory(w.data(), w.size() * sizeof(float));
          Epilogue e{a.data(), bias.data(), l.f, p, l.clip};
          Columns cc{x.data(), cols.data(), l.c, hp, l.k, l.s, oh};
          auto productOn = [&](const std::vector<float> &weights) {
            const float *bm = x.data();
            if (!direct) {
              dist_rt_parallel_for(n * taps, columnsChunk, &cc);
              bm = cols.data();
            }
            if (fusedEpilogue) {
              dist_rt_gemm_set_act_f32(
                  n, l.f, p, taps, asInt(weights.data()), 0, taps, 1, asInt(bm),
                  p, 1, asInt(a.data()), l.f * p, p, 1, taps * p,
                  asInt(bias.data()), 1, 0,
                  DIST_RT_GEMM_RELU | (l.clip ? DIST_RT_GEMM_CLIP : 0), 0.0f,
                  6.0f, 0, 0);
              return;
            }
            dist_rt_gemm_set_f32(n, l.f, p, taps, asInt(weights.data()), 0,
                                 taps, 1, asInt(bm), p, 1, asInt(a.data()),
                                 l.f * p, p, 1, taps * p);
            dist_rt_parallel_for(n * l.f, epilogueChunk, &e);
          };
          auto product = [&] { productOn(w); };
          auto writable = [&] { productOn(wCopy); };
          auto call = [&] {
            dist_rt_conv2d_f32(
                n, l.c, hp, hp, l.f, l.k, l.k, l.s, l.s, 1, 1, oh, oh,
                asInt(x.data()), l.c * hp * hp, hp * hp, hp, asInt(w.data()),
                asInt(bias.data()), asInt(bOut), l.f * pw * pw, pw * pw, pw,
                0.0f, 6.0f,
                DIST_RT_CONV_RELU | (l.clip ? DIST_RT_CONV_CLIP : 0));
          };
          auto nhwc = [&] {
            dist_rt_conv2d_nhwc_f32(
                1, n, l.c, l.h, l.h, l.f, l.k, l.k, l.s, l.s, 1, 1, pad, pad,
                pad, pad, oh, oh, asInt(xl.data()), asInt(w.data()),
                asInt(bias.data()), asInt(ol.data()), 0.0f, 6.0f,
                DIST_RT_CONV_RELU | (l.clip ? DIST_RT_CONV_CLIP : 0));
          };
          dist_rt_set_num_threads(threads);
          product();
          call();
          nhwc();
          double worst = 0;
          for (size_t i = 0; i < a.size(); ++i)
            worst = std::max(
                worst,
                double(std::fabs(
                    a[i] - bOut[i / p * pw * pw + i % p / oh * pw + i % oh])));
          double worstNhwc = 0;
          for (size_t i = 0; i < a.size(); ++i) {
            int64_t b = int64_t(i) / (l.f * p), fo = int64_t(i) / p % l.f;
            int64_t at = int64_t(i) % p;
            worstNhwc = std::max(
                worstNhwc,
                double(std::fabs(a[i] - ol[size_t((b * p + at) * l.f + fo)])));
          }
          for (auto [way, diff] : {std::pair{"call", worst},
                                   std::pair{"channels-last call", worstNhwc}})
            if (diff > 1e-3) {
              std::fprintf(stderr,
                           "error: %s %lldx%lld on %lld: the %s and product "
                           "differ by %g\n",
                           model.c_str(), (long long)l.c, (long long)l.f,
                           (long long)l.h, way, diff);
              ++failures;
            }
          double flops = 2.0 * double(n) * double(l.f) * double(taps) * p;
          double best[4] = {0, 0, 0, 0};
          for (int r = 0; r < rounds; ++r) {
            best[0] =
                std::max(best[0], flops / secondsPerCall(product, minTime));
            best[1] = std::max(best[1], flops / secondsPerCall(call, minTime));
            best[2] =
                std::max(best[2], flops / secondsPerCall(writable, minTime));
            best[3] = std::max(best[3], flops / secondsPerCall(nhwc, minTime));
          }
          if (constantWeights)
            dist_rt::unregisterConstantMemory(w.data());
          double ratio = best[1] / best[0], overWritable = best[1] / best[2];
          logSum += std::log(ratio);
          logSumWritable += std::log(overWritable);
          logSumNhwc += std::log(best[3] / best[1]);
          ++count;
          std::printf(
              "%-16s %5lld %5lld %4lld %3lld/%lld  %8.1f %8.1f %8.1f  %12.2f  "
              "%13.2f  %8.1f  %9.2f\n",
              model.c_str(), (long long)l.c, (long long)l.f, (long long)l.h,
              (long long)l.k, (long long)l.s, best[2] / 1e9, best[0] / 1e9,
              best[1] / 1e9, ratio, overWritable, best[3] / 1e9,
              best[3] / best[1]);
          std::fflush(stdout);
        }
        if (count)
          std::printf("%-16s geomean call/product %.2f, call/writable %.2f, "
                      "nhwc/call %.2f over %d layers\n",
                      model.c_str(), std::exp(logSum / count),
                      std::exp(logSumWritable / count),
                      std::exp(logSumNhwc / count), count);
      }
    }
  return failures ? 1 : 0;
}
