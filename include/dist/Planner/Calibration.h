//===- Calibration.h - Merge dist-calibrate measurements --------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// `dist-opt calibrate` runs the runtime's measuring tool (dist-calibrate,
// built from runtime/tools) and stores what it printed as the calibration of
// the local CPU device. This is the parsing half.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_PLANNER_CALIBRATION_H
#define DIST_PLANNER_CALIBRATION_H

#include "dist/Planner/Cluster.h"

#include <optional>
#include <string>

namespace mlir::dist {

/// Parses dist-calibrate's JSON output. Returns nullopt with a one-line
/// `error` naming the offending key when it is malformed.
std::optional<DeviceCalibration> parseCalibrationJson(const std::string &json,
                                                      std::string &error);

/// Stores `cal` on every CPU device of `cluster` and raises the devices'
/// bandwidth and f32/f64 peaks to the measured figures when those are
/// higher (a data-sheet estimate below a measurement is wrong).
void applyCalibration(ClusterSpec &cluster, const DeviceCalibration &cal);

/// The same for the GPU devices of `cluster`, from `dist-calibrate --gpu`:
/// the calibration is attached, the copy bandwidth becomes the memory
/// bandwidth, and the fastest product of each precision the peak FLOP/s of
/// its data type (f32, bf16; tf32, which the cluster file has no type
/// for, stays in the calibration only).
void applyGpuCalibration(ClusterSpec &cluster, const DeviceCalibration &cal);

} // namespace mlir::dist

#endif // DIST_PLANNER_CALIBRATION_H
