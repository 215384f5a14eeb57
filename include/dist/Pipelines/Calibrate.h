//===- Calibrate.h - dist-opt calibrate -------------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// `dist-opt calibrate -o local.yaml`: measures this machine for the cost
// model and writes it as a cluster file (Calibrate.cpp says what it
// measures and how).
//
//===----------------------------------------------------------------------===//

#ifndef DIST_PIPELINES_CALIBRATE_H
#define DIST_PIPELINES_CALIBRATE_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::dist {

/// Runs `dist-opt calibrate` with its own arguments (argv[0] is
/// "calibrate"). Returns the exit code.
int calibrateMain(int argc, char **argv, DialectRegistry &registry);

} // namespace mlir::dist

#endif // DIST_PIPELINES_CALIBRATE_H
