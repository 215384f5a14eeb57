//===- CostModelTest.cpp - AnalyticCostModel --------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// How the analytic cost model reads a device's calibration: generated-loop
// throughput per kernel class, working-set size and thread count.
//
//===----------------------------------------------------------------------===//

#include "dist/Analysis/CostModel.h"

#include <gtest/gtest.h>

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
  PhaseWork &w = layer.fwd;
  // 1e5 bytes per sample in one elementwise kernel.
  w.bytes = 1e5;
  w.classBytes[static_cast<int>(KernelClass::Elementwise)] = 1e5;
  w.classLogFootprintWeighted[static_cast<int>(KernelClass::Elementwise)] =
      1e5 * std::log(1e5);
  w.kernels = 1;
  double one = cm.phaseTimeS(layer, w, dev, 1, 1, 1);
  double two = cm.phaseTimeS(layer, w, dev, 1, 1, 2);
  EXPECT_NEAR(one, 1e5 / 10e9 + 1e-9, 1e-15);
  EXPECT_NEAR(two, 1e5 / 16e9 + 1e-9, 1e-15);
}

} // namespace
