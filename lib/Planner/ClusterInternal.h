//===- ClusterInternal.h - Numbers with units in cluster files --*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Internal to lib/Planner: the numbers of cluster files, which the parser
// (ClusterParse.cpp) reads with their units ("80GiB", "5us", "312 TFLOP/s")
// and the YAML writer (ClusterWrite.cpp) prints back so that they read as
// the same doubles. Implemented in ClusterUnits.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_LIB_ANALYSIS_CLUSTERINTERNAL_H
#define DIST_LIB_ANALYSIS_CLUSTERINTERNAL_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::dist::cluster_file {

/// What a number measures, which decides the units it may carry.
enum class UnitKind { None, Size, Bandwidth, Time, Flops };

/// How parseQuantity went.
enum class QuantityStatus { Ok, NotANumber, BadUnit, OutOfRange };

/// Parses "<number>[ ]<unit>" where the number is a decimal with an optional
/// exponent. The decimal exponent of the unit is folded into the text before
/// conversion, so the result is the double nearest to the written value.
QuantityStatus parseQuantity(llvm::StringRef text, UnitKind kind, double &value,
                             llvm::StringRef &unitOut);

/// Prints `value` with the fewest digits that read back as the same double.
std::string formatNumber(double value);

} // namespace mlir::dist::cluster_file

#endif // DIST_LIB_ANALYSIS_CLUSTERINTERNAL_H
