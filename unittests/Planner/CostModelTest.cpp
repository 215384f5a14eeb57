//===- CostModelTest.cpp - AnalyticCostModel --------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// How the analytic cost model reads a device's calibration: generated-loop
// throughput per kernel class, working-set size and thread count.
//
//===----------------------------------------------------------------------===//

#include "dist/Planner/CostModel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace mlir::dist;

namespace {

DeviceSpec calibratedCpu() {
  DeviceSpec dev;
  dev.kind = DevKind::CPU;
  dev.cores = 4;
  dev.memoryBytes = 1e9;
  dev.peakFlops = {{"f32", 1e11}};
  dev.memoryBandwidthBytesPerS = 1e10;
  DeviceCalibration cal;
  cal.memoryBandwidthByThreads = {{1, 5e9}};
  cal.loopBandwidth["elementwise"] = {{1e5, 10e9}, {1e7, 4e9}};
  cal.loopBandwidth["reduction"] = {{1e5, 2e9}};
  cal.loopBandwidthByThreads[2]["elementwise"] = {{1e5, 16e9}, {1e7, 8e9}};
  cal.kernelOverheadS = 1e-9;
  dev.calibration = cal;
  return dev;
}

/// `bytes` per sample moved by one elementwise kernel touching as much.
PhaseWork elementwiseWork(double bytes) {
  PhaseWork w;
  w.bytes = bytes;
  w.classBytes[static_cast<int>(KernelClass::Elementwise)] = bytes;
  w.classLogFootprintWeighted[static_cast<int>(KernelClass::Elementwise)] =
      bytes * std::log(bytes);
  w.kernels = 1;
  return w;
}

TEST(CostModel, LoopThroughputFollowsTheThreadCount) {
  AnalyticCostModel cm;
  DeviceSpec dev = calibratedCpu();
  EXPECT_DOUBLE_EQ(cm.loopBytesPerS(dev, KernelClass::Elementwise, 1e5, 1),
                   10e9);
  EXPECT_DOUBLE_EQ(cm.loopBytesPerS(dev, KernelClass::Elementwise, 1e5, 2),
                   16e9);
  // 3 and 4 threads: the largest measured count below (2).
  EXPECT_DOUBLE_EQ(cm.loopBytesPerS(dev, KernelClass::Elementwise, 1e5, 4),
                   16e9);
  // 0 means all cores.
  EXPECT_DOUBLE_EQ(cm.loopBytesPerS(dev, KernelClass::Elementwise, 1e7, 0),
                   8e9);
  // Linear in log(footprint) between points, clamped outside.
  EXPECT_NEAR(cm.loopBytesPerS(dev, KernelClass::Elementwise, 1e6, 1), 7e9,
              1e-3 * 7e9);
  EXPECT_DOUBLE_EQ(cm.loopBytesPerS(dev, KernelClass::Elementwise, 1e9, 1),
                   4e9);
  // A class without a threaded table keeps its one-thread figures.
  EXPECT_DOUBLE_EQ(cm.loopBytesPerS(dev, KernelClass::Reduction, 1e5, 2), 2e9);
  // A class without any table: streaming bandwidth of one thread.
  EXPECT_DOUBLE_EQ(cm.loopBytesPerS(dev, KernelClass::Window, 1e5, 2), 5e9);
}

TEST(CostModel, LoopTimeUsesTheThreadedTable) {
  AnalyticCostModel cm;
  DeviceSpec dev = calibratedCpu();
  LayerCost layer;
  PhaseWork w = elementwiseWork(1e5);
  double one = cm.phaseTimeS(layer, w, dev, 1, 1, 1);
  double two = cm.phaseTimeS(layer, w, dev, 1, 1, 2);
  EXPECT_NEAR(one, 1e5 / 10e9 + 1e-9, 1e-15);
  EXPECT_NEAR(two, 1e5 / 16e9 + 1e-9, 1e-15);
}

TEST(CostModel, LoopArithmeticUsesTheCalibratedFlops) {
  AnalyticCostModel cm;
  DeviceSpec dev = calibratedCpu();
  // Uncalibrated: half the vector peak of the threads' share of the cores.
  EXPECT_DOUBLE_EQ(cm.loopFlopsPerS(dev, 1), 1e11 / 4 * 0.5);
  EXPECT_DOUBLE_EQ(cm.loopFlopsPerS(dev, 2), 1e11 / 2 * 0.5);
  dev.calibration->loopFlopsByThreads = {{1, 5e9}, {2, 9e9}};
  EXPECT_DOUBLE_EQ(cm.loopFlopsPerS(dev, 1), 5e9);
  EXPECT_DOUBLE_EQ(cm.loopFlopsPerS(dev, 2), 9e9);
  // The largest measured count below; 0 means all cores.
  EXPECT_DOUBLE_EQ(cm.loopFlopsPerS(dev, 3), 9e9);
  EXPECT_DOUBLE_EQ(cm.loopFlopsPerS(dev, 0), 9e9);
  // Only larger counts measured: scaled down.
  dev.calibration->loopFlopsByThreads = {{2, 8e9}};
  EXPECT_DOUBLE_EQ(cm.loopFlopsPerS(dev, 1), 4e9);

  // A kernel is priced at its bytes or its arithmetic, whichever is slower;
  // transcendental functions' FLOPs at loop_flops, others at half the
  // vector peak.
  dev.calibration->loopFlopsByThreads = {{1, 5e9}, {2, 9e9}};
  LayerCost layer;
  PhaseWork w = elementwiseWork(1e5);
  w.otherFlops = w.mathFlops = 1e3; // 0.2 us of arithmetic < 10 us of bytes
  EXPECT_NEAR(cm.phaseTimeS(layer, w, dev, 1, 1, 1), 1e5 / 10e9 + 1e-9, 1e-15);
  w.otherFlops = w.mathFlops = 1e5; // 20 us of arithmetic > 10 us of bytes
  EXPECT_NEAR(cm.phaseTimeS(layer, w, dev, 1, 1, 1), 1e5 / 5e9 + 1e-9, 1e-15);
  EXPECT_NEAR(cm.phaseTimeS(layer, w, dev, 1, 1, 2), 1e5 / 9e9 + 1e-9, 1e-15);
  // 1e6 plain FLOPs at 12.5 GFLOP/s (80 us) beside the 20 us.
  w.otherFlops = 1.1e6;
  EXPECT_NEAR(cm.phaseTimeS(layer, w, dev, 1, 1, 1),
              1e6 / 12.5e9 + 1e5 / 5e9 + 1e-9, 1e-15);
}

TEST(CostModel, DirectConvolutionAtTheCalibratedRates) {
  AnalyticCostModel cm;
  DeviceSpec dev = calibratedCpu();
  dev.isa = "avx512";
  // The benchmark CNN's second convolution per image: 16 tiles of 144 taps.
  GemmWork g;
  g.m = 256;
  g.n = 16;
  g.k = 144;
  g.batchDim = 1;
  g.directTileTaps = 16 * 144;
  g.directItems = 16;
  // Without direct_conv rates: a product on the grid (none here).
  EXPECT_LT(cm.gemmTimeS(dev, g, 8, 1, 1), 0);
  dev.calibration->directConvTapByThreads = {{1, 2.5e-9}, {2, 3e-9}};
  dev.calibration->directConvNarrowTapByThreads = {{1, 3e-9}};
  dev.calibration->directConvTileByThreads = {{1, 2e-8}, {2, 2.4e-8}};
  // 8 images: 128 tiles of 144 taps.
  EXPECT_NEAR(cm.gemmTimeS(dev, g, 8, 1, 1), 128 * (144 * 2.5e-9 + 2e-8),
              1e-15);
  // Two threads share the tiles at two threads' rates.
  EXPECT_NEAR(cm.gemmTimeS(dev, g, 8, 1, 2), 64 * (144 * 3e-9 + 2.4e-8), 1e-15);
  // 3 tiles on 2 threads: the longest share is 2 tiles.
  EXPECT_NEAR(cm.gemmTimeS(dev, g, 3.0 / 16, 1, 2), 2 * (144 * 3e-9 + 2.4e-8),
              1e-15);
  // Narrow tiles at their own rate; each map at a count above its measured
  // ones takes its largest measured (narrow taps: 1, tiles: 2).
  g.directNarrow = true;
  EXPECT_NEAR(cm.gemmTimeS(dev, g, 8, 1, 4), 32 * (144 * 3e-9 + 2.4e-8),
              1e-15);
  // Only on a device whose codegen runs the direct kernel.
  dev.isa = "avx2";
  EXPECT_LT(cm.gemmTimeS(dev, g, 8, 1, 1), 0);
}

TEST(CostModel, InPlaceLoopsSkipTheProbesWriteAllocate) {
  AnalyticCostModel cm;
  DeviceSpec dev = calibratedCpu();
  LayerCost layer;
  PhaseWork w = elementwiseWork(1e7);
  double fresh = cm.phaseTimeS(layer, w, dev, 1, 1, 1);
  // One kernel's overhead (1 ns) besides the bytes.
  EXPECT_NEAR(fresh, 1e7 / 4e9 + 1e-9, 1e-12);
  w.inPlace = true;
  // The probes' rates count 2 of the 3 bytes a fresh output moves.
  EXPECT_NEAR(cm.phaseTimeS(layer, w, dev, 1, 1, 1), 1e7 / 4e9 * 2 / 3 + 1e-9,
              1e-12);
  // Without loop probes the bandwidth is the data sheet's: bytes are bytes.
  DeviceSpec sheet = dev;
  sheet.calibration.reset();
  w.inPlace = false;
  double sheetFresh = cm.phaseTimeS(layer, w, sheet, 1, 1, 1);
  w.inPlace = true;
  EXPECT_DOUBLE_EQ(cm.phaseTimeS(layer, w, sheet, 1, 1, 1), sheetFresh);
}

TEST(CostModel, InPlaceLoopsUseTheirOwnTableWhenMeasured) {
  AnalyticCostModel cm;
  DeviceSpec dev = calibratedCpu();
  dev.calibration->loopBandwidth["in_place"] = {{1e5, 30e9}, {1e7, 12e9}};
  dev.calibration->loopBandwidthByThreads[2]["in_place"] = {{1e7, 20e9}};
  LayerCost layer;
  PhaseWork w = elementwiseWork(1e7);
  w.inPlace = true;
  // The measured in-place rate at the footprint, with no share taken off;
  // whatever class the update's kernels were counted under.
  EXPECT_NEAR(cm.phaseTimeS(layer, w, dev, 1, 1, 1), 1e7 / 12e9 + 1e-9, 1e-12);
  PhaseWork r = w;
  std::swap(r.classBytes[0], r.classBytes[1]);
  std::swap(r.classLogFootprintWeighted[0], r.classLogFootprintWeighted[1]);
  EXPECT_NEAR(cm.phaseTimeS(layer, r, dev, 1, 1, 1), 1e7 / 12e9 + 1e-9, 1e-12);
  // Two threads read the threaded table.
  EXPECT_NEAR(cm.phaseTimeS(layer, w, dev, 1, 1, 2), 1e7 / 20e9 + 1e-9, 1e-12);
  // Kernels that write fresh outputs never read it.
  w.inPlace = false;
  EXPECT_NEAR(cm.phaseTimeS(layer, w, dev, 1, 1, 1), 1e7 / 4e9 + 1e-9, 1e-12);
  EXPECT_DOUBLE_EQ(cm.tableBytesPerS(dev, "in_place", 1e5, 1), 30e9);
  EXPECT_DOUBLE_EQ(cm.tableBytesPerS(dev, "window", 1e5, 1), 0);
}

} // namespace

namespace {

/// A device whose f32 GEMM grid (layouts nn and nt, m and n in {16, 256},
/// k = 64) runs at `base` FLOP/s times 1 (m = 16) or 4 (m = 256), and half
/// that in nt; measured at 1 and 2 threads (2 threads: twice as fast).
DeviceSpec gridCpu(double base) {
  DeviceSpec dev;
  dev.kind = DevKind::CPU;
  dev.cores = 2;
  dev.memoryBytes = 1e9;
  dev.peakFlops = {{"f32", 1e12}};
  dev.memoryBandwidthBytesPerS = 1e10;
  DeviceCalibration cal;
  for (int64_t threads : {1, 2}) {
    GemmCalibration g;
    g.threads = threads;
    g.flopsBySize = {{64, 1e9}};
    for (GemmLayout layout : {GemmLayout::NN, GemmLayout::NT})
      for (double m : {16.0, 256.0})
        for (double n : {16.0, 256.0})
          g.shapes.push_back(
              {layout, m, n, 64,
               base * (m == 16 ? 1 : 4) * (layout == GemmLayout::NT ? 0.5 : 1) *
                   threads});
    EXPECT_EQ(indexGemmShapes(g), "");
    cal.gemm["f32"].push_back(g);
  }
  cal.forkOverheadByThreads = {{2, 1e-6}};
  dev.calibration = cal;
  return dev;
}

/// Equal within rounding (the grid interpolates in log space).
#define EXPECT_REL(a, b) EXPECT_NEAR((a), (b), 1e-12 * std::fabs(b))

double flopsOf(const GemmWork &g) { return 2 * g.count * g.m * g.n * g.k; }

TEST(CostModel, GemmTimeInterpolatesTheShapeGrid) {
  AnalyticCostModel cm;
  DeviceSpec dev = gridCpu(1e9);
  GemmWork g;
  g.m = 16;
  g.n = 16;
  g.k = 64;
  g.batchDim = 1; // m grows with the samples
  // On grid points: exactly the measured rate.
  EXPECT_REL(cm.gemmTimeS(dev, g, 1, 1, 1), flopsOf(g) / 1e9);
  GemmWork big = g;
  big.m = 256;
  EXPECT_REL(cm.gemmTimeS(dev, g, 16, 1, 1), flopsOf(big) / 4e9);
  // Between points: geometric in the rate (m = 64 is halfway in log).
  GemmWork mid = g;
  mid.m = 64;
  EXPECT_NEAR(cm.gemmTimeS(dev, g, 4, 1, 1), flopsOf(mid) / 2e9, 1e-12);
  // Transposed B: the nt grid.
  GemmWork nt = g;
  nt.layout = GemmLayout::NT;
  EXPECT_REL(cm.gemmTimeS(dev, nt, 1, 1, 1), flopsOf(g) / 0.5e9);
  // A layout that was not measured uses nn.
  GemmWork tn = g;
  tn.layout = GemmLayout::TN;
  EXPECT_REL(cm.gemmTimeS(dev, tn, 1, 1, 1), flopsOf(g) / 1e9);
  // Below the grid: sqrt of the shortfall (m = 4 of 16: half the rate).
  GemmWork small = g;
  small.m = 4;
  EXPECT_NEAR(cm.gemmTimeS(dev, small, 1, 1, 1), flopsOf(small) / 0.5e9, 1e-15);
  // Above it: the edge's rate.
  EXPECT_REL(cm.gemmTimeS(dev, g, 64, 1, 1), 2.0 * 1024 * 16 * 64 / 4e9);
  // Two threads: that grid.
  EXPECT_REL(cm.gemmTimeS(dev, g, 1, 1, 2), flopsOf(g) / 2e9);
  // A batch of products (count grows with the samples) on two threads runs
  // one product per thread at the one-thread rate.
  GemmWork batched = g;
  batched.batchDim = 0;
  batched.count = 1;
  EXPECT_REL(cm.gemmTimeS(dev, batched, 4, 1, 2), 4 * flopsOf(g) / (1e9 * 2));
  // Products summed into one output (a convolution's weight gradient) run
  // one after another, each on both threads: the two-thread grid's rate,
  // here made 1.5x the one-thread rate (not 2x) to tell the two apart.
  DeviceSpec sublinear = dev;
  for (GemmCalibration &cal : sublinear.calibration->gemm["f32"]) {
    if (cal.threads != 2)
      continue;
    for (GemmShapePoint &p : cal.shapes)
      p.flops *= 0.75;
    ASSERT_EQ(indexGemmShapes(cal), "");
  }
  GemmWork summed = batched;
  summed.summed = true;
  EXPECT_REL(cm.gemmTimeS(sublinear, summed, 4, 1, 2), 4 * flopsOf(g) / 1.5e9);
  EXPECT_REL(cm.gemmTimeS(sublinear, batched, 4, 1, 2),
             4 * flopsOf(g) / (1e9 * 2));
  EXPECT_REL(cm.gemmTimeS(sublinear, summed, 4, 1, 1), 4 * flopsOf(g) / 1e9);
  // Tensor parallelism splits n (the rate here depends on m only).
  GemmWork wide = g;
  wide.n = 256;
  GemmWork half = g;
  half.n = 128;
  EXPECT_REL(cm.gemmTimeS(dev, wide, 1, 2, 1), flopsOf(half) / 1e9);
  // No shape grid: no answer (the size-based model takes over).
  DeviceSpec plain = calibratedCpu();
  EXPECT_LT(cm.gemmTimeS(plain, g, 1, 1, 1), 0);
}

// With a calibrated call floor, a product below the grid takes the floor
// plus its FLOP share of what the edge product takes beyond it; the
// products of one batched call share the dispatch overhead.
TEST(CostModel, GemmTimeBelowTheGridStartsFromTheCallFloor) {
  AnalyticCostModel cm;
  DeviceSpec dev = gridCpu(1e9);
  dev.calibration->gemmCallFloorS = 50e-9;
  GemmWork g;
  g.m = 4; // of 16: the edge is 16x16x64 at 1 GFLOP/s
  g.n = 16;
  g.k = 64;
  g.batchDim = 1;
  double edgeS = 2.0 * 16 * 16 * 64 / 1e9;
  EXPECT_REL(cm.gemmTimeS(dev, g, 1, 1, 1), 50e-9 + (edgeS - 50e-9) / 4);
  // Two short dimensions: the share of both.
  GemmWork tiny = g;
  tiny.n = 2;
  EXPECT_REL(cm.gemmTimeS(dev, tiny, 1, 1, 1), 50e-9 + (edgeS - 50e-9) / 32);
  // On the grid the floor changes nothing.
  GemmWork on = g;
  on.m = 16;
  EXPECT_REL(cm.gemmTimeS(dev, on, 1, 1, 1), edgeS);
  // 8 products of one call, 10 ns of dispatch each beyond the first.
  dev.calibration->gemmCallOverheadS = 10e-9;
  GemmWork batch = tiny;
  batch.batchDim = 0;
  double one = 50e-9 + (edgeS - 50e-9) / 32;
  EXPECT_REL(cm.gemmTimeS(dev, batch, 8, 1, 1), 8 * (one - 10e-9) + 10e-9);
}

TEST(CostModel, GemmTimeReadsAliasingStridesOffThePowerOfTwoGrid) {
  // nt products at one thread: powers of two 64 and 1024 for m, n and k at
  // 1 GFLOP/s, other sizes (48 and 1000) at 3 GFLOP/s.
  DeviceSpec dev = gridCpu(1e9);
  GemmCalibration g;
  g.threads = 1;
  g.flopsBySize = {{64, 1e9}};
  for (const auto &[dims, flops] :
       {std::pair(std::vector<double>{64, 1024}, 1e9),
        std::pair(std::vector<double>{48, 1000}, 3e9)})
    for (double m : dims)
      for (double n : dims)
        for (double k : dims)
          g.shapes.push_back({GemmLayout::NT, m, n, k, flops});
  ASSERT_EQ(indexGemmShapes(g), "");
  ASSERT_EQ(g.grids[1].m, (std::vector<double>{64, 1024}));
  ASSERT_EQ(g.unalignedGrids[1].m, (std::vector<double>{48, 1000}));
  dev.calibration->gemm["f32"] = {g};
  AnalyticCostModel cm;
  GemmWork w;
  w.layout = GemmLayout::NT;
  w.m = 64;
  w.n = 512;
  // B's row stride k = 784 floats does not alias: the other grid.
  w.k = 784;
  EXPECT_REL(cm.gemmTimeS(dev, w, 1, 1, 1), flopsOf(w) / 3e9);
  // k = 512 floats (2 KiB rows) aliases: the power-of-two grid.
  w.k = 512;
  EXPECT_REL(cm.gemmTimeS(dev, w, 1, 1, 1), flopsOf(w) / 1e9);
  // In nt only k is a row stride: n = 512 with k = 784 stays off it.
  w.k = 784;
  w.n = 1024;
  EXPECT_REL(cm.gemmTimeS(dev, w, 1, 1, 1), flopsOf(w) / 3e9);
  // f64 rows of 256 elements are 2 KiB too.
  AnalyticCostModel f64("f64");
  w.k = 256;
  EXPECT_REL(f64.gemmTimeS(dev, w, 1, 1, 1), flopsOf(w) / 1e9);
  EXPECT_REL(cm.gemmTimeS(dev, w, 1, 1, 1), flopsOf(w) / 3e9);
  // A file with only the other grid (a hand-written one of other sizes)
  // reads aliasing products off it as well.
  GemmCalibration odd = g;
  odd.shapes.erase(std::remove_if(odd.shapes.begin(), odd.shapes.end(),
                                  [](const GemmShapePoint &p) {
                                    return isPowerOfTwoExtent(p.m);
                                  }),
                   odd.shapes.end());
  ASSERT_EQ(indexGemmShapes(odd), "");
  dev.calibration->gemm["f32"] = {odd};
  w.k = 512;
  EXPECT_REL(cm.gemmTimeS(dev, w, 1, 1, 1), flopsOf(w) / 3e9);
  w.k = 256;
  // A file without the other grid reads every product off the one it has.
  GemmCalibration old = g;
  old.shapes.erase(std::remove_if(old.shapes.begin(), old.shapes.end(),
                                  [](const GemmShapePoint &p) {
                                    return !isPowerOfTwoExtent(p.m);
                                  }),
                   old.shapes.end());
  ASSERT_EQ(indexGemmShapes(old), "");
  dev.calibration->gemm["f32"] = {old};
  EXPECT_REL(cm.gemmTimeS(dev, w, 1, 1, 1), flopsOf(w) / 1e9);
}

TEST(CostModel, PhaseTimeAddsGridProductsAndForks) {
  AnalyticCostModel cm;
  DeviceSpec dev = gridCpu(1e9);
  LayerCost layer;
  PhaseWork &w = layer.fwd;
  GemmWork g;
  g.m = 16;
  g.n = 16;
  g.k = 64;
  g.batchDim = 1;
  w.gemms = {g, g};
  w.gemmFlops = 2 * flopsOf(g);
  w.gemmLogSizeWeighted = w.gemmFlops * std::log(16.0);
  w.gemmCalls = 2;
  w.kernels = 3;
  w.parallelKernels = 2;
  // One thread: the products at the grid's rate (no call overhead beyond
  // the measured rate), three kernels at the uncalibrated 0.2 us, no fork.
  EXPECT_REL(cm.phaseTimeS(layer, w, dev, 1, 1, 1),
             2 * flopsOf(g) / 1e9 + 3 * 2e-7);
  // Two threads: twice the rate, and two forks of 1 us.
  EXPECT_REL(cm.phaseTimeS(layer, w, dev, 1, 1, 2),
             2 * flopsOf(g) / 2e9 + 2e-6 + 3 * 2e-7);
  EXPECT_DOUBLE_EQ(cm.forkOverheadS(dev, 1), 0);
  EXPECT_DOUBLE_EQ(cm.forkOverheadS(dev, 2), 1e-6);
  // Uncalibrated forks cost 2 us.
  DeviceSpec plain = calibratedCpu();
  EXPECT_DOUBLE_EQ(cm.forkOverheadS(plain, 2), 2e-6);
}

} // namespace
