//===- CostModel.cpp - Roofline cost model over the cluster ----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// AnalyticCostModel predicts the time of a layer's phase as the sum of three
// terms, each matching how generated code runs it today:
//  - matrix products and convolutions are calls into the runtime's GEMM
//    (OpenBLAS or oneDNN on CPU, cuBLAS on GPU): each product's FLOPs over
//    the FLOP/s measured on a grid of shapes for its operand layout,
//    interpolated in log(m), log(n), log(k), when the device's calibration
//    has the grid; else FLOPs over the throughput at the geometric-mean size
//    (calibrated: interpolated in log(size); uncalibrated: a share of the
//    peak). The grid matters: on the 2-core EPYC this was written on, a
//    64x512x784 product with B transposed (ONNX Gemm, transB=1) runs 20%
//    slower than untransposed, and thin products well below square ones of
//    the same FLOPs; the size-only model was 16-26% low on the MLP.
//  - every other kernel is a fused loop nest: its memory traffic over the
//    throughput calibrated for its kernel class, working-set size and
//    thread count (loops with enough work run on the runtime's pool), or
//    its arithmetic at a fraction of the vector peak when that is slower,
//    plus a fixed per-kernel cost, and with more than one thread the
//    calibrated cost of forking a loop onto the pool for each kernel with
//    enough work to be forked.
//  - collectives follow the alpha-beta model per topology.
//
//===----------------------------------------------------------------------===//

#include "dist/Planner/CostModel.h"
#include "dist_rt/conv_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>

using namespace mlir::dist;

CostModel::~CostModel() = default;

namespace {

/// The time in-place loop bytes take at a loop probe's rate. The probes
/// write a fresh output, which the CPU reads before it writes it
/// (write-allocate): past the caches 3 bytes move per 2 the probe counts.
/// In-place kernels move only what they count. Measured on the DLRM-style
/// model's AdamW step at one thread: its 100000-row table's fused update
/// moves 7 x 12.8 MB in 2.1 ms (43 GB/s) where the elementwise probe runs at
/// 24 GB/s at that footprint.
constexpr double kInPlaceProbeShare = 2.0 / 3.0;
/// The calibration's loop table of in-place updates (dist-calibrate), which
/// replaces the share above where present: the AdamW tables of the DLRM
/// model stream at 60-70 GB/s on the 2-core EPYC (Zen 5), faster than even
/// the write-allocate correction makes of the probe (51 GB/s).
constexpr const char *kInPlaceTable = "in_place";

/// Share of the data-sheet GEMM peak reached without calibration.
constexpr double kUncalibratedGemmEfficiency = 0.6;
/// Share of the data-sheet bandwidth reached by streaming kernels.
constexpr double kUncalibratedBandwidthEfficiency = 0.7;
/// Share of the vector peak reached by generated elementwise code on plain
/// arithmetic (multiplies, adds, divisions), and on transcendental
/// functions when the calibration has no loop_flops.
constexpr double kElementwiseComputeEfficiency = 0.5;
/// Per-kernel fixed cost when uncalibrated: loop setup on CPU, a launch on
/// GPU.
constexpr double kCpuKernelOverheadS = 2e-7;
constexpr double kGpuKernelOverheadS = 5e-6;
/// Cost of forking a loop onto the pool when uncalibrated (measured on a
/// 2-core EPYC: 1.5-2.5 us).
constexpr double kCpuForkOverheadS = 2e-6;
/// Working sets up to this size are taken to stay in one core's cache.
constexpr double kCoreCacheBytes = 1 << 20;
/// Per-GEMM-call fixed cost when uncalibrated (library dispatch).
constexpr double kCpuGemmCallOverheadS = 2e-6;
constexpr double kGpuGemmCallOverheadS = 8e-6;

int64_t effectiveThreads(const DeviceSpec &dev, int64_t threads) {
  if (dev.kind != DevKind::CPU)
    return 1;
  int64_t cores = std::max<int64_t>(1, dev.cores);
  if (threads <= 0)
    return cores;
  return std::min(threads, cores);
}

/// Interpolates y at x in log-log space over sorted (x, y) points, clamping
/// outside the range.
double interpolateLogLog(const std::vector<std::pair<double, double>> &pts,
                         double x) {
  if (pts.empty())
    return 0;
  if (x <= pts.front().first)
    return pts.front().second * std::min(1.0, x / pts.front().first);
  if (x >= pts.back().first)
    return pts.back().second;
  for (size_t i = 1; i < pts.size(); ++i) {
    if (x > pts[i].first)
      continue;
    double x0 = std::log(pts[i - 1].first), x1 = std::log(pts[i].first);
    double y0 = std::log(pts[i - 1].second), y1 = std::log(pts[i].second);
    double t = x1 > x0 ? (std::log(x) - x0) / (x1 - x0) : 0;
    return std::exp(y0 + t * (y1 - y0));
  }
  return pts.back().second;
}

/// The calibration entry with a shape grid whose thread count is closest to
/// `t` (null when there is none).
const GemmCalibration *shapeGrid(const DeviceSpec &dev,
                                 const std::string &dtype, int64_t t) {
  if (!dev.calibration)
    return nullptr;
  auto it = dev.calibration->gemm.find(dtype);
  if (it == dev.calibration->gemm.end())
    it = dev.calibration->gemm.find("f32");
  if (it == dev.calibration->gemm.end())
    return nullptr;
  const GemmCalibration *best = nullptr;
  for (const GemmCalibration &g : it->second)
    if (!g.shapes.empty() &&
        (!best || std::llabs(g.threads - t) < std::llabs(best->threads - t)))
      best = &g;
  return best;
}

/// Position of log(v) among the sorted axis values: the bracketing indices
/// and the weight of the upper one, clamped to the ends.
struct AxisPos {
  size_t lo = 0, hi = 0;
  double w = 0;
};
AxisPos locate(const std::vector<double> &axis, double v) {
  AxisPos p;
  if (axis.size() < 2 || v <= axis.front())
    return p;
  if (v >= axis.back()) {
    p.lo = p.hi = axis.size() - 1;
    return p;
  }
  size_t i = std::upper_bound(axis.begin(), axis.end(), v) - axis.begin();
  p.lo = i - 1;
  p.hi = i;
  p.w = (std::log(v) - std::log(axis[p.lo])) /
        (std::log(axis[p.hi]) - std::log(axis[p.lo]));
  return p;
}

/// Row strides whose byte size is a multiple of this make the rows of an
/// operand collide in the L1 cache's sets (4 KiB aliasing): measured on
/// this project's EPYC (f32, one thread), 64x64xK with B transposed runs at
/// 54-66 GFLOP/s for K = 1024 and 101 for 512 but at 146-149 for 768 and
/// 1000, and 64x1024x1024 untransposed at 168 against 213 for 1000.
constexpr double kAliasingStrideBytes = 2048;

/// True when a row stride of `elements` elements of `elemBytes` each is a
/// multiple of kAliasingStrideBytes.
bool aliasingStride(double elements, double elemBytes) {
  double bytes = elements * elemBytes;
  return bytes >= kAliasingStrideBytes &&
         std::fmod(bytes, kAliasingStrideBytes) == 0;
}

/// True when an operand of an m x n x k product in `layout` (contiguous,
/// row-major, as the runtime passes it on) has an aliasing row stride: A's
/// is k ("nn", "nt") or m ("tn"), B's is n ("nn", "tn") or k ("nt").
bool aliasingOperands(GemmLayout layout, double m, double n, double k,
                      double elemBytes) {
  switch (layout) {
  case GemmLayout::NN:
    return aliasingStride(k, elemBytes) || aliasingStride(n, elemBytes);
  case GemmLayout::NT:
    return aliasingStride(k, elemBytes);
  case GemmLayout::TN:
    return aliasingStride(m, elemBytes) || aliasingStride(n, elemBytes);
  }
  return false;
}

/// Bytes of one element of `dtype` (4 when unknown).
double elementBytes(const std::string &dtype) {
  if (dtype == "f64" || dtype == "i64")
    return 8;
  if (dtype == "f16" || dtype == "bf16")
    return 2;
  if (dtype == "i8")
    return 1;
  return 4;
}

/// FLOP/s of an m x n x k product in `layout` on the grid `g` (indexed by
/// indexGemmShapes): trilinear in log(m), log(n), log(k) on log(FLOP/s).
/// Below the grid, with a calibrated `floorS` (the time of a lone 1x1x1
/// call), a product takes floorS plus its share, by FLOPs, of what the
/// product at the grid's edge (each short dimension raised to the grid's
/// smallest) takes beyond floorS: measured on this project's EPYC at one
/// thread, a 9x9x32 product with B transposed took 110-118 ns, this rule
/// says 114 and the square-root rule that applies without a floor 176
/// (there a dimension costs efficiency like the square root of its
/// shortfall). Above the grid the throughput stays at the edge. A product whose
/// operands have aliasing row strides reads the power-of-two grid, any other
/// the grid of other sizes; either takes the other grid when its own was not
/// measured. A layout that was not measured uses "nn".
double gridFlops(const GemmCalibration &g, GemmLayout layout, double m,
                 double n, double k, double elemBytes, double floorS = 0) {
  bool aliasing = aliasingOperands(layout, m, n, k, elemBytes);
  auto pick = [&](GemmLayout l) -> const GemmShapeGrid * {
    const GemmShapeGrid *pow2 = &g.grids[static_cast<int>(l)];
    const GemmShapeGrid *other = &g.unalignedGrids[static_cast<int>(l)];
    if (aliasing)
      return pow2->logFlops.empty() ? other : pow2;
    return other->logFlops.empty() ? pow2 : other;
  };
  const GemmShapeGrid *grid = pick(layout);
  if (grid->logFlops.empty())
    grid = pick(GemmLayout::NN);
  if (grid->logFlops.empty())
    return 0;
  AxisPos am = locate(grid->m, m), an = locate(grid->n, n),
          ak = locate(grid->k, k);
  size_t nn = grid->n.size(), nk = grid->k.size();
  double logFlops = 0;
  for (int corner = 0; corner < 8; ++corner) {
    bool hm = corner & 1, hn = corner & 2, hk = corner & 4;
    double w = (hm ? am.w : 1 - am.w) * (hn ? an.w : 1 - an.w) *
               (hk ? ak.w : 1 - ak.w);
    if (w == 0)
      continue;
    size_t i = hm ? am.hi : am.lo, j = hn ? an.hi : an.lo,
           l = hk ? ak.hi : ak.lo;
    logFlops += w * grid->logFlops[(i * nn + j) * nk + l];
  }
  double flops = std::exp(logFlops);
  double edge[] = {std::max(m, grid->m.front()), std::max(n, grid->n.front()),
                   std::max(k, grid->k.front())};
  double work = 2 * std::max(m, 1.0) * std::max(n, 1.0) * std::max(k, 1.0);
  double edgeWork = 2 * edge[0] * edge[1] * edge[2];
  if (floorS > 0 && edgeWork > work) {
    double edgeS = edgeWork / flops;
    double s = floorS + std::max(edgeS - floorS, 0.0) * work / edgeWork;
    return work / s;
  }
  for (auto [v, lo] :
       {std::pair(m, grid->m.front()), std::pair(n, grid->n.front()),
        std::pair(k, grid->k.front())})
    if (v < lo)
      flops *= std::sqrt(std::max(v, 1.0) / lo);
  return flops;
}

} // namespace

const char *mlir::dist::stringifyKernelClass(KernelClass c) {
  switch (c) {
  case KernelClass::Elementwise:
    return "elementwise";
  case KernelClass::Reduction:
    return "reduction";
  case KernelClass::Movement:
    return "movement";
  case KernelClass::Window:
    return "window";
  }
  return "elementwise";
}

AnalyticCostModel::AnalyticCostModel(std::string dtype)
    : dtype(std::move(dtype)) {}

double AnalyticCostModel::gemmFlopsPerS(const DeviceSpec &dev, double size,
                                        int64_t threads) const {
  int64_t t = effectiveThreads(dev, threads);
  if (dev.calibration) {
    auto it = dev.calibration->gemm.find(dtype);
    if (it == dev.calibration->gemm.end())
      it = dev.calibration->gemm.find("f32");
    if (it != dev.calibration->gemm.end() && !it->second.empty()) {
      // The measured thread count closest to t (below it when possible).
      // The measured thread count closest to t (lists need not be sorted),
      // scaled linearly to t when there is no exact match.
      const GemmCalibration *best = nullptr;
      for (const GemmCalibration &g : it->second)
        if (!g.flopsBySize.empty() &&
            (!best ||
             std::llabs(g.threads - t) < std::llabs(best->threads - t)))
          best = &g;
      double flops = best ? interpolateLogLog(best->flopsBySize, size) : 0;
      if (flops > 0) {
        if (best->threads != t && best->threads > 0)
          flops *= static_cast<double>(t) / best->threads;
        return flops;
      }
    }
  }
  double peak = dev.peakFlopsFor(dtype);
  if (dev.kind == DevKind::CPU)
    peak *= static_cast<double>(t) / std::max<int64_t>(1, dev.cores);
  // Small products do not reach the peak: ramp up to size 512.
  double ramp = std::min(1.0, std::max(0.05, size / 512.0));
  return peak * kUncalibratedGemmEfficiency * std::sqrt(ramp);
}

double AnalyticCostModel::gemmTimeS(const DeviceSpec &dev, const GemmWork &g,
                                    double samples, double split,
                                    int64_t threads) const {
  if (dev.kind != DevKind::CPU)
    return -1;
  int64_t t = effectiveThreads(dev, threads);
  if (g.directTileTaps > 0 && dev.isa == "avx512" && dev.calibration) {
    // The direct convolution at its calibrated rates (one thread's share of
    // the work at t threads: the largest measured count up to t, else the
    // smallest), its tiles spread over the threads as dist_rt_parallel_for
    // spreads them.
    auto at = [&](const std::map<int64_t, double> &m) {
      auto it = m.upper_bound(t);
      return it != m.begin() ? std::prev(it)->second : it->second;
    };
    const DeviceCalibration &cal = *dev.calibration;
    const auto &taps = g.directNarrow ? cal.directConvNarrowTapByThreads
                                      : cal.directConvTapByThreads;
    if (!taps.empty() && !cal.directConvTileByThreads.empty()) {
      double scale = samples / std::max(split, 1.0);
      double items = std::max(1.0, std::round(g.directItems * scale));
      return dist_rt::conv_plan::imbalance(static_cast<int64_t>(items), t) *
             (g.directTileTaps * scale * at(taps) +
              items * at(cal.directConvTileByThreads)) /
             static_cast<double>(t);
    }
  }
  const GemmCalibration *grid = shapeGrid(dev, dtype, t);
  if (!grid)
    return -1;
  double count = g.count, m = g.m, n = g.n, k = g.k;
  double *scaled[] = {&count, &m, &n, &k};
  *scaled[std::clamp(g.batchDim, 0, 3)] *= samples;
  if (split > 1)
    *(g.batchDim == 2 ? &k : &n) /= split;
  count = std::max(count, 0.0);
  m = std::max(m, 1.0);
  n = std::max(n, 1.0);
  k = std::max(k, 1.0);
  double flops = 2.0 * m * n * k;
  // The grid times one product per call; the products of one batched call
  // share its dispatch (a tiny product's time is mostly overhead: the
  // DLRM-style model's 9x9x32 interactions take 118 ns alone, 94 in a
  // batch). Never below half a grid product.
  double callOverhead =
      dev.calibration ? dev.calibration->gemmCallOverheadS : 0.0;
  double floorS = dev.calibration ? dev.calibration->gemmCallFloorS : 0.0;
  auto batchS = [&](double productS) {
    if (count <= 1 || g.summed || productS <= 0)
      return count * productS;
    return count * std::max(productS - callOverhead, productS / 2) +
           std::min(callOverhead, productS / 2);
  };
  // A batch of at least as many products as threads is spread by product,
  // each on one thread (runtime/lib/blas.cpp), unless the products sum into
  // one output; otherwise every product uses all threads.
  if (t > 1 && count >= t && !g.summed) {
    const GemmCalibration *one = shapeGrid(dev, dtype, 1);
    double rate =
        gridFlops(*one, g.layout, m, n, k, elementBytes(dtype), floorS);
    if (one->threads != 1)
      rate /= static_cast<double>(one->threads);
    return rate > 0 ? batchS(flops / rate) / t : -1;
  }
  double rate =
      gridFlops(*grid, g.layout, m, n, k, elementBytes(dtype), floorS);
  if (grid->threads != t && grid->threads > 0)
    rate *= static_cast<double>(t) / grid->threads;
  return rate > 0 ? batchS(flops / rate) : -1;
}

double AnalyticCostModel::bandwidthBytesPerS(const DeviceSpec &dev,
                                             int64_t threads) const {
  int64_t t = effectiveThreads(dev, threads);
  if (dev.calibration && !dev.calibration->memoryBandwidthByThreads.empty()) {
    const auto &bw = dev.calibration->memoryBandwidthByThreads;
    auto it = bw.upper_bound(t);
    if (it != bw.begin())
      return std::prev(it)->second;
    // Only larger thread counts were measured: scale down.
    return it->second * static_cast<double>(t) / it->first;
  }
  double peak = dev.memoryBandwidthBytesPerS * kUncalibratedBandwidthEfficiency;
  if (dev.kind == DevKind::CPU && dev.cores > 1)
    peak *= std::min(1.0, 2.0 * t / dev.cores); // Few cores saturate it.
  return peak;
}

double AnalyticCostModel::loopFlopsPerS(const DeviceSpec &dev,
                                        int64_t threads) const {
  int64_t t = effectiveThreads(dev, threads);
  if (dev.kind == DevKind::CPU && dev.calibration &&
      !dev.calibration->loopFlopsByThreads.empty()) {
    // The largest measured thread count up to t, else the smallest scaled
    // down (arithmetic scales with the cores).
    const auto &rates = dev.calibration->loopFlopsByThreads;
    auto it = rates.upper_bound(t);
    if (it != rates.begin())
      return std::prev(it)->second;
    return it->second * static_cast<double>(t) / it->first;
  }
  return plainLoopFlopsPerS(dev, threads);
}

double AnalyticCostModel::plainLoopFlopsPerS(const DeviceSpec &dev,
                                             int64_t threads) const {
  double peak = dev.peakFlopsFor(dtype);
  if (dev.kind == DevKind::CPU)
    peak *= static_cast<double>(effectiveThreads(dev, threads)) /
            std::max<int64_t>(1, dev.cores);
  return peak * kElementwiseComputeEfficiency;
}

double AnalyticCostModel::loopBytesPerS(const DeviceSpec &dev, KernelClass c,
                                        double footprint,
                                        int64_t threads) const {
  double rate =
      tableBytesPerS(dev, stringifyKernelClass(c), footprint, threads);
  return rate > 0 ? rate : bandwidthBytesPerS(dev, 1);
}

double AnalyticCostModel::tableBytesPerS(const DeviceSpec &dev, const char *key,
                                         double footprint,
                                         int64_t threads) const {
  if (dev.calibration) {
    const std::vector<std::pair<double, double>> *pts = nullptr;
    int64_t t = effectiveThreads(dev, threads);
    // The largest measured thread count in [2, t] that has this class.
    for (const auto &[measured, table] :
         dev.calibration->loopBandwidthByThreads)
      if (measured <= t)
        if (auto it = table.find(key); it != table.end() && !it->second.empty())
          pts = &it->second;
    if (!pts)
      if (auto it = dev.calibration->loopBandwidth.find(key);
          it != dev.calibration->loopBandwidth.end() && !it->second.empty())
        pts = &it->second;
    if (pts) {
      // Linear in log(footprint), clamped at the ends.
      if (footprint <= pts->front().first)
        return pts->front().second;
      if (footprint >= pts->back().first)
        return pts->back().second;
      for (size_t i = 1; i < pts->size(); ++i) {
        if (footprint > (*pts)[i].first)
          continue;
        double x0 = std::log((*pts)[i - 1].first),
               x1 = std::log((*pts)[i].first);
        double f = x1 > x0 ? (std::log(footprint) - x0) / (x1 - x0) : 0;
        return (*pts)[i - 1].second +
               f * ((*pts)[i].second - (*pts)[i - 1].second);
      }
    }
  }
  return 0;
}

double AnalyticCostModel::phaseTimeS(const LayerCost &layer,
                                     const PhaseWork &phase,
                                     const DeviceSpec &dev, double samples,
                                     int64_t tp, int64_t threads) const {
  (void)layer;
  if (samples <= 0)
    return 0;
  bool cpu = dev.kind == DevKind::CPU;
  // Tensor parallelism splits the products (and the elementwise work on
  // their sharded outputs) of layers that support it.
  double split = layer.tensorParallel
                     ? static_cast<double>(std::max<int64_t>(1, tp))
                     : 1.0;
  double time = 0;
  // Products one by one on the calibrated shape grid when there is one.
  double gridS = 0;
  bool onGrid = !phase.gemms.empty();
  for (const GemmWork &g : phase.gemms) {
    double s = gemmTimeS(dev, g, samples, split, threads);
    if (s < 0) {
      onGrid = false;
      break;
    }
    gridS += s;
  }
  if (onGrid) {
    time += gridS;
  } else if (phase.gemmFlops > 0) {
    double logSize = phase.gemmLogSizeWeighted / phase.gemmFlops;
    double size = std::exp(logSize) *
                  std::pow(samples, phase.gemmBatchScaling / 3.0) /
                  std::cbrt(split);
    double flops = phase.gemmFlops * samples / split;
    time += flops / gemmFlopsPerS(dev, size, threads);
    time +=
        phase.gemmCalls * (cpu ? kCpuGemmCallOverheadS : kGpuGemmCallOverheadS);
  }
  // Generated loops: on the runtime's pool on CPU; memory or arithmetic
  // bound, whichever is slower.
  // Convolutions through im2col where the device has no direct kernel
  // (see PhaseWork::im2colOnly).
  const LoopWork none;
  const LoopWork &im2col = cpu && dev.isa == "avx512" ? none : phase.im2colOnly;
  double memoryS = 0;
  double classified = 0;
  if (cpu) {
    // Per kernel class at the class's working-set size; calibrated
    // throughputs already include the arithmetic of the measured kernels.
    bool probed =
        dev.calibration && (!dev.calibration->loopBandwidth.empty() ||
                            !dev.calibration->loopBandwidthByThreads.empty());
    // In-place kernels at the rate measured for them when the calibration
    // has it, else at the fresh-output probes' rate less their
    // write-allocate traffic.
    bool inPlaceTable =
        phase.inPlace &&
        tableBytesPerS(dev, kInPlaceTable, kCoreCacheBytes, threads) > 0;
    double share =
        phase.inPlace && probed && !inPlaceTable ? kInPlaceProbeShare : 1.0;
    for (int c = 0; c < kNumKernelClasses; ++c) {
      double b = phase.classBytes[c] + im2col.classBytes[c];
      if (b <= 0)
        continue;
      classified += b;
      double footprint = std::exp((phase.classLogFootprintWeighted[c] +
                                   im2col.classLogFootprintWeighted[c]) /
                                  b) *
                         samples / split;
      double rate = inPlaceTable
                        ? tableBytesPerS(dev, kInPlaceTable, footprint, threads)
                        : loopBytesPerS(dev, static_cast<KernelClass>(c),
                                        footprint, threads);
      memoryS += share * b * samples / split / rate;
    }
  }
  double filled = 0;
  if (cpu && phase.fillBytes > 0) {
    // One memset per fill on the calling thread: at the generated loops'
    // rate while it fits a core's cache, else at streaming bandwidth (the
    // filled buffer was last touched a step ago; measured on the DLRM-style
    // model: its 24 MB of embedding gradients fill at 19 GB/s, the one-
    // thread triad's figure, not the 55 GB/s of a hot 13 MB loop).
    filled = phase.fillBytes;
    double footprint =
        std::exp(phase.fillLogFootprintWeighted / phase.fillBytes) * samples /
        split;
    double rate =
        footprint <= kCoreCacheBytes
            ? loopBytesPerS(dev, KernelClass::Elementwise, footprint, 1)
            : bandwidthBytesPerS(dev, 1);
    memoryS += phase.fillBytes * samples / split / rate;
  }
  memoryS += std::max(0.0, phase.bytes + im2col.bytes - classified - filled) *
             samples / split / bandwidthBytesPerS(dev, threads);
  // Transcendental functions at the calibrated arithmetic rate, other
  // arithmetic (an optimizer update's multiplies, divisions and square
  // roots) at half the vector peak: the MLP's AdamW update ran at its
  // bytes' pace, where pricing its FLOPs at the GELU probe's rate made the
  // training step 20% slow.
  double plainFlops = std::max(0.0, phase.otherFlops - phase.mathFlops);
  double computeS = (plainFlops / plainLoopFlopsPerS(dev, threads) +
                     phase.mathFlops / loopFlopsPerS(dev, threads)) *
                    samples / split;
  time += std::max(memoryS, computeS);
  if (cpu)
    time += (phase.parallelKernels + im2col.parallelKernels) *
            forkOverheadS(dev, threads);
  double overhead = cpu ? kCpuKernelOverheadS : kGpuKernelOverheadS;
  if (dev.calibration && dev.calibration->kernelOverheadS > 0)
    overhead = dev.calibration->kernelOverheadS;
  time += (phase.kernels + im2col.kernels) * overhead;
  return time;
}

double AnalyticCostModel::updateTimeS(const LayerCost &layer,
                                      const DeviceSpec &dev, int64_t shards,
                                      int64_t threads) const {
  double n = static_cast<double>(std::max<int64_t>(1, shards));
  if (layer.update.bytes > 0 || layer.update.kernels > 0)
    return phaseTimeS(layer, layer.update, dev, 1.0 / n, 1, threads);
  // Adam: read parameter, gradient and two moments, write three.
  double bytes = 7.0 * layer.paramBytes / n;
  return bytes / bandwidthBytesPerS(dev, threads);
}

double AnalyticCostModel::collectiveTimeS(Collective kind, double bytes,
                                          int64_t ranks, const LinkSpec &link,
                                          Topology topo) const {
  if (ranks <= 1 || bytes <= 0)
    return 0;
  double p = static_cast<double>(ranks);
  double alpha = link.latencyS;
  double beta = link.bandwidthBytesPerS > 0 ? 1.0 / link.bandwidthBytesPerS : 0;
  // Steps and per-rank volume of the ring algorithms; the tree variants
  // trade bandwidth for log(p) latency.
  double steps = 0, volume = 0;
  switch (kind) {
  case Collective::AllReduce:
    steps = 2 * (p - 1);
    volume = 2 * (p - 1) / p * bytes;
    break;
  case Collective::AllGather:
  case Collective::ReduceScatter:
  case Collective::AllToAll:
    steps = p - 1;
    volume = (p - 1) / p * bytes;
    break;
  case Collective::Broadcast:
    steps = p - 1;
    volume = bytes;
    break;
  }
  if (topo == Topology::Tree) {
    double levels = std::ceil(std::log2(p));
    steps = (kind == Collective::AllReduce ? 2 : 1) * levels;
    volume = (kind == Collective::AllReduce ? 2 : 1) * bytes;
  }
  return steps * alpha + volume * beta;
}

double AnalyticCostModel::p2pTimeS(double bytes, const LinkSpec &link) const {
  if (bytes <= 0)
    return 0;
  return link.latencyS +
         (link.bandwidthBytesPerS > 0 ? bytes / link.bandwidthBytesPerS : 0);
}

double AnalyticCostModel::stepOverheadS(const DeviceSpec &dev) const {
  if (dev.calibration && dev.calibration->stepOverheadS > 0)
    return dev.calibration->stepOverheadS;
  return dev.kind == DevKind::CPU ? 5e-6 : 2e-5;
}

double AnalyticCostModel::forkOverheadS(const DeviceSpec &dev,
                                        int64_t threads) const {
  int64_t t = effectiveThreads(dev, threads);
  if (dev.kind != DevKind::CPU || t <= 1)
    return 0;
  if (dev.calibration && !dev.calibration->forkOverheadByThreads.empty()) {
    // The largest measured count not above t, else the smallest measured.
    const auto &byThreads = dev.calibration->forkOverheadByThreads;
    auto it = byThreads.upper_bound(t);
    return it != byThreads.begin() ? std::prev(it)->second
                                   : byThreads.begin()->second;
  }
  return kCpuForkOverheadS;
}

double mlir::dist::predictStepTimeS(const std::vector<LayerCost> &layers,
                                    const DeviceSpec &dev, int64_t batch,
                                    int64_t threads, bool training,
                                    const CostModel &cm) {
  double samples = static_cast<double>(std::max<int64_t>(1, batch));
  double t = cm.stepOverheadS(dev);
  for (const LayerCost &l : layers) {
    t += cm.phaseTimeS(l, l.fwd, dev, samples, 1, threads);
    if (training) {
      t += cm.phaseTimeS(l, l.bwd, dev, samples, 1, threads);
      t += cm.updateTimeS(l, dev, 1, threads);
    }
  }
  return t;
}
