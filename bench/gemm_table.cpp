//===- gemm_table.cpp - dist-opt's products against OpenBLAS and oneDNN ---===//
// SPDX-License-Identifier: Apache-2.0
//
// dist-gemm-bench: times the runtime's product entry point as generated code
// calls it (dist_rt_gemm_set_f32, C = A * B, the runtime's thread pool)
// beside OpenBLAS's cblas_sgemm and oneDNN's dnnl_sgemm called directly
// with their own threads, at the shapes of real models' products:
// ViT-B/16 (197 tokens per image) and a BERT-base encoder (sequence 128) at
// batch 1 and 8, ConvNeXt-T's channel-last linear layers at 224x224, and
// (--models resnet) ResNet-50's pointwise convolutions on channels-last
// images at batch 8.
// Batched rows (the attention's heads) are one runtime call and one library
// call per matrix. Prints, per thread count, GFLOP/s of each and dist-opt's
// share of the best library; the libraries are the same ones the runtime
// loads, with the kernel set the runtime chose (its OpenBLAS core type is
// printed). Each shape is timed in ROUNDS rounds alternating the three, and
// a method's figure is its best round (the machine's noise only slows).
//
//   dist-gemm-bench [--threads 1,2] [--rounds 3] [--min-time 0.15]
//                   [--models vit,bert,convnext,heads,small,resnet]
//                   [--weight-copies 12] [--constant-weights 1]
//
// A weight (the shared B) is read from one of WEIGHT_COPIES copies in
// turn, one call after another, as a model reads each layer's own weights:
// with the default 12 (a ViT-B/16's or BERT-base's layers) they come from
// memory as they do in the model, not from a cache that holds the one
// matrix a loop of calls keeps reading (1). Shared weights are registered
// as constant memory, as a parameter file's mapping is in a model, so the
// runtime may pack them once (sgemm_packed.cpp); --constant-weights 0
// leaves them writable (the runtime then calls the libraries, as for
// training).
//
// Exits with 0 once the table is printed (whatever the figures), 1 when a
// library or a result is wrong, 2 on a usage error.
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
#include <string>
#include <vector>

#include <dlfcn.h>

namespace {

using dist_bench::asInt;
using dist_bench::secondsPerCall;
using dist_bench::splitList;

/// One product: batch matrices C[b] (m x n) = A[b] (m x k) * B (k x n), B
/// shared when `sharedB`, else one per matrix.
struct Shape {
  const char *model;
  const char *what;
  int64_t batch, m, n, k;
  bool sharedB;
};

std::vector<Shape> shapesOf(const std::string &model) {
  std::vector<Shape> s;
  if (model == "vit") {
    for (int64_t b : {1, 8}) {
      int64_t t = 197 * b;
      const char *tag = b == 1 ? "vit b1" : "vit b8";
      s.push_back({tag, "qkv projection", 1, t, 2304, 768, true});
      s.push_back({tag, "attention output", 1, t, 768, 768, true});
      s.push_back({tag, "mlp up", 1, t, 3072, 768, true});
      s.push_back({tag, "mlp down", 1, t, 768, 3072, true});
      s.push_back({tag, "scores (heads)", 12 * b, 197, 197, 64, false});
      s.push_back({tag, "context (heads)", 12 * b, 197, 64, 197, false});
    }
  } else if (model == "bert") {
    for (int64_t b : {1, 8}) {
      int64_t t = 128 * b;
      const char *tag = b == 1 ? "bert b1" : "bert b8";
      s.push_back({tag, "q/k/v/output projection", 1, t, 768, 768, true});
      s.push_back({tag, "ffn up", 1, t, 3072, 768, true});
      s.push_back({tag, "ffn down", 1, t, 768, 3072, true});
      s.push_back({tag, "scores (heads)", 12 * b, 128, 128, 64, false});
      s.push_back({tag, "context (heads)", 12 * b, 128, 64, 128, false});
    }
  } else if (model == "convnext") {
    const int64_t side[] = {56, 28, 14, 7}, dims[] = {96, 192, 384, 768};
    for (int i = 0; i < 4; ++i) {
      int64_t t = side[i] * side[i], d = dims[i];
      s.push_back({"convnext-t", i == 0   ? "stage 1 up"
                                 : i == 1 ? "stage 2 up"
                                 : i == 2 ? "stage 3 up"
                                          : "stage 4 up",
                   1, t, 4 * d, d, true});
      s.push_back({"convnext-t", i == 0   ? "stage 1 down"
                                 : i == 1 ? "stage 2 down"
                                 : i == 2 ? "stage 3 down"
                                          : "stage 4 down",
                   1, t, d, 4 * d, true});
    }
  } else if (model == "resnet") {
    // ResNet-50's pointwise (1 x 1, stride 1) convolutions at batch 8 on
    // channels-last images: every pixel a row.
    const int64_t side[] = {56, 28, 14, 7}, width[] = {64, 128, 256, 512};
    const char *up[] = {"stage 1 up", "stage 2 up", "stage 3 up", "stage 4 up"};
    const char *down[] = {"stage 1 down", "stage 2 down", "stage 3 down",
                          "stage 4 down"};
    for (int i = 0; i < 4; ++i) {
      int64_t t = 8 * side[i] * side[i], d = width[i];
      s.push_back({"resnet-50 b8", up[i], 1, t, 4 * d, d, true});
      s.push_back({"resnet-50 b8", down[i], 1, t, d, 4 * d, true});
    }
  } else if (model == "heads") {
    // Classifier heads (ImageNet's 1000 classes) at batch 1 to 64: few rows
    // on a weight read once per call.
    for (int64_t k : {1280, 2048})
      for (int64_t m : {1, 8, 32, 64})
        s.push_back({k == 1280 ? "head 1280" : "head 2048",
                     m == 1    ? "batch 1"
                     : m == 8  ? "batch 8"
                     : m == 32 ? "batch 32"
                               : "batch 64",
                     1, m, 1000, k, true});
  } else if (model == "small") {
    // The benchmark models' own products (bench/export_bench_models.py),
    // whose weights stay in cache: the MLP at batch 64, the GPT-style LM's
    // 256 tokens (4 x 64, d = 256, vocabulary 1024).
    s.push_back({"mlp b64", "layer 1", 1, 64, 512, 784, true});
    s.push_back({"mlp b64", "layer 2", 1, 64, 512, 512, true});
    s.push_back({"gpt", "qkv projection", 1, 256, 768, 256, true});
    s.push_back({"gpt", "attention output", 1, 256, 256, 256, true});
    s.push_back({"gpt", "mlp up", 1, 256, 1024, 256, true});
    s.push_back({"gpt", "mlp down", 1, 256, 256, 1024, true});
  }
  return s;
}

using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float *,
                            int, const float *, int, float, float *, int);
using SetThreads = void (*)(int);
using CoreName = char *(*)();
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float,
                          const float *, int64_t, const float *, int64_t,
                          float, float *, int64_t);

struct Libraries {
  CblasSgemm sgemm = nullptr;
  SetThreads openblasThreads = nullptr;
  CoreName coreName = nullptr;
  DnnlSgemm dnnl = nullptr;
  SetThreads ompThreads = nullptr;
};

void usage() {
  std::fprintf(stderr,
               "usage: dist-gemm-bench [--threads 1,2] [--rounds N] "
               "[--min-time S] [--models vit,bert,convnext,heads,small,resnet] "
               "[--weight-copies N] [--constant-weights 0|1]\n");
  std::exit(2);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> threadCounts = {1, 2};
  std::vector<std::string> models = {"vit", "bert", "convnext"};
  int rounds = 3;
  int copies = 12;
  bool constantWeights = true;
  double minTime = 0.15;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc)
      usage();
    const char *v = argv[++i];
    if (a == "--threads") {
      threadCounts.clear();
      for (const std::string &t : splitList(v)) {
        int n = std::atoi(t.c_str());
        if (n < 1)
          usage();
        threadCounts.push_back(n);
      }
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
    } else if (a == "--constant-weights") {
      std::string w = v;
      if (w != "0" && w != "1")
        usage();
      constantWeights = w == "1";
    } else if (a == "--weight-copies") {
      copies = std::atoi(v);
      if (copies < 1)
        usage();
    } else {
      usage();
    }
  }
  std::vector<Shape> shapes;
  for (const std::string &m : models) {
    std::vector<Shape> s = shapesOf(m);
    if (s.empty()) {
      std::fprintf(stderr,
                   "error: --models: unknown model '%s' (vit, bert, "
                   "convnext, heads, small, resnet)\n",
                   m.c_str());
      return 2;
    }
    shapes.insert(shapes.end(), s.begin(), s.end());
  }

  // The runtime loads OpenBLAS first (its kernel choice), then the same
  // handles are opened here.
  {
    float one = 1, out = 0;
    dist_rt_gemm_set_f32(1, 1, 1, 1, asInt(&one), 0, 1, 1, asInt(&one), 1, 1,
                         asInt(&out), 0, 1, 1, 0);
    if (out != 1) {
      std::fprintf(stderr, "error: the runtime's 1x1 product gave %g\n", out);
      return 1;
    }
  }
  Libraries lib;
  void *ob = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  void *dn = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!ob || !dn) {
    std::fprintf(stderr, "error: cannot load %s: %s\n",
                 !ob ? "libopenblas.so.0" : "libdnnl.so.2", dlerror());
    return 1;
  }
  lib.sgemm = reinterpret_cast<CblasSgemm>(dlsym(ob, "cblas_sgemm"));
  lib.openblasThreads =
      reinterpret_cast<SetThreads>(dlsym(ob, "openblas_set_num_threads"));
  lib.coreName = reinterpret_cast<CoreName>(dlsym(ob, "openblas_get_corename"));
  lib.dnnl = reinterpret_cast<DnnlSgemm>(dlsym(dn, "dnnl_sgemm"));
  lib.ompThreads = reinterpret_cast<SetThreads>(dlsym(dn, "omp_set_num_threads"));
  if (!lib.sgemm || !lib.openblasThreads || !lib.dnnl || !lib.ompThreads) {
    std::fprintf(stderr, "error: a library entry point is missing\n");
    return 1;
  }
  std::printf("OpenBLAS kernels: %s; one runtime call against the libraries' "
              "own threads; weights read from %d copies in turn; best of %d "
              "rounds of >= %.2f s\n",
              lib.coreName ? lib.coreName() : "?", copies, rounds, minTime);

  int failures = 0;
  for (int threads : threadCounts) {
    std::printf("\nthreads=%d (GFLOP/s)\n", threads);
    std::printf("%-11s %-24s %5s %5s %5s %5s  %8s %8s %8s  %s\n", "model",
                "product", "batch", "m", "n", "k", "dist-opt", "OpenBLAS",
                "oneDNN", "dist/best");
    double logSum = 0;
    int count = 0;
    for (const Shape &s : shapes) {
      size_t aSize = size_t(s.batch * s.m * s.k);
      size_t bSize = size_t((s.sharedB ? 1 : s.batch) * s.k * s.n);
      size_t cSize = size_t(s.batch * s.m * s.n);
      int64_t nb = s.sharedB ? copies : 1;
      std::vector<float> a(aSize), b(bSize * size_t(nb)), c(cSize), ref(cSize);
      for (size_t i = 0; i < aSize; ++i)
        a[i] = float(int64_t(i * 7919 % 23) - 11) / 16;
      for (size_t i = 0; i < b.size(); ++i)
        b[i] = float(int64_t(i % bSize * 104729 % 19) - 9) / 16;
      int64_t bSb = s.sharedB ? 0 : s.k * s.n;
      // Each way reads the copies in turn (copy 0 first).
      int64_t turn[3] = {0, 0, 0};
      auto weights = [&](int way) {
        const float *w = b.data() + size_t(turn[way] % nb) * bSize;
        ++turn[way];
        return w;
      };
      auto runDist = [&] {
        dist_rt_set_num_threads(threads);
        dist_rt_gemm_set_f32(s.batch, s.m, s.n, s.k, asInt(a.data()), s.m * s.k,
                             s.k, 1, asInt(weights(0)), s.n, 1, asInt(c.data()),
                             s.m * s.n, s.n, 1, bSb);
      };
      auto runOpenblas = [&] {
        const float *w = weights(1);
        for (int64_t t = 0; t < s.batch; ++t)
          lib.sgemm(101, 111, 111, int(s.m), int(s.n), int(s.k), 1.0f,
                    a.data() + t * s.m * s.k, int(s.k), w + t * bSb, int(s.n),
                    0.0f, c.data() + t * s.m * s.n, int(s.n));
      };
      auto runDnnl = [&] {
        const float *w = weights(2);
        for (int64_t t = 0; t < s.batch; ++t)
          lib.dnnl('N', 'N', s.m, s.n, s.k, 1.0f, a.data() + t * s.m * s.k, s.k,
                   w + t * bSb, s.n, 0.0f, c.data() + t * s.m * s.n, s.n);
      };
      // A shared weight is a model's constant (a parameter file's
      // read-only mapping), which the runtime may pack once: registered
      // as such, and every copy used once before the timing.
      if (s.sharedB && constantWeights)
        dist_rt::registerConstantMemory(b.data(), b.size() * sizeof(float));
      for (int64_t i = 1; i < nb; ++i)
        runDist();
      // Same results from all three (exact small integers over 16: the
      // sums are exact in f32 up to these sizes, up to ordering).
      runOpenblas();
      ref = c;
      std::fill(c.begin(), c.end(), 0.0f);
      runDist();
      double worst = 0;
      for (size_t i = 0; i < cSize; ++i)
        worst = std::max(worst, double(std::fabs(c[i] - ref[i])));
      if (worst > 1e-3) {
        std::fprintf(stderr, "error: %s %s: the runtime's result differs from "
                             "OpenBLAS's by %g\n",
                     s.model, s.what, worst);
        ++failures;
      }
      double best[3] = {0, 0, 0};
      double flops = 2.0 * double(s.batch) * double(s.m) * double(s.n) *
                     double(s.k);
      for (int r = 0; r < rounds; ++r) {
        best[0] = std::max(best[0], flops / secondsPerCall(runDist, minTime));
        lib.openblasThreads(threads);
        best[1] =
            std::max(best[1], flops / secondsPerCall(runOpenblas, minTime));
        lib.openblasThreads(1);
        lib.ompThreads(threads);
        best[2] = std::max(best[2], flops / secondsPerCall(runDnnl, minTime));
        lib.ompThreads(1);
      }
      if (s.sharedB && constantWeights)
        dist_rt::unregisterConstantMemory(b.data());
      double ratio = best[0] / std::max(best[1], best[2]);
      logSum += std::log(ratio);
      ++count;
      std::printf("%-11s %-24s %5lld %5lld %5lld %5lld  %8.1f %8.1f %8.1f  "
                  "%.2f\n",
                  s.model, s.what, (long long)s.batch, (long long)s.m,
                  (long long)s.n, (long long)s.k, best[0] / 1e9, best[1] / 1e9,
                  best[2] / 1e9, ratio);
      std::fflush(stdout);
    }
    if (count)
      std::printf("geomean dist/best, threads=%d: %.2f over %d products\n",
                  threads, std::exp(logSum / count), count);
  }
  return failures ? 1 : 0;
}
