//===- PlanReportInternal.h - Helpers of the plan reports -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Internal to lib/Planner: the formatting of times, sizes and rates and the
// lookups of layers, stages and device types that plan.json (PlanJson.cpp),
// the summary (PlanSummary.cpp) and plan.html (PlanHtml.cpp) share. They
// tolerate plans that name layers or device types the request does not
// have, as a plan read back from plan.json may. Implemented in
// PlanReport.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_LIB_ANALYSIS_PLANREPORTINTERNAL_H
#define DIST_LIB_ANALYSIS_PLANREPORTINTERNAL_H

#include "dist/Planner/Planner.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::dist::plan_report {

/// printf-style formatting into a string.
template <typename... Ts>
std::string strFormat(const char *format, Ts... values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format(format, values...);
  return text;
}

/// Milliseconds of `seconds` with a precision that suits the magnitude, or
/// "n/a" when not finite.
std::string formatMs(double seconds);

/// "512 B", "3.2 KiB", "12.5 MiB", "1.50 GiB"; "n/a" when not finite.
std::string formatBytes(double bytes);

/// A rate or amount with `decimals` decimals, or "n/a" when not finite.
std::string formatFixed(double value, int decimals);

/// `text` as valid UTF-8 (invalid sequences replaced), as llvm::json and
/// HTML both need.
std::string validUtf8(llvm::StringRef text);

/// The device types of the request's cluster (none without a cluster).
std::vector<DeviceType> deviceTypesOf(const PlanRequest &req);

/// Number of layers the plan or the request knows about.
int64_t numLayers(const Plan &plan, const PlanRequest &req);

/// Stage of layer `layer`, or -1 when the plan does not place it.
int64_t stageOfLayer(const Plan &plan, int64_t layer);

/// Name of layer `layer` for messages, control characters replaced by '?'
/// ("layer <i>" when the request has no name for it).
std::string layerName(const PlanRequest &req, int64_t layer);

/// Label of device type `type` ("device type <i>" when not in the cluster).
std::string deviceLabel(llvm::ArrayRef<DeviceType> types, int64_t type);

/// Memory of one device of type `type`, 0 when unknown.
double deviceMemoryBytes(llvm::ArrayRef<DeviceType> types, int64_t type);

/// Forward FLOPs of one sample of `layer`.
double fwdFlopsPerSample(const LayerCost &layer);

/// All parameter bytes of `layer`: trained, frozen and sparse tables.
double allParamBytes(const LayerCost &layer);

/// `layers a..b "first" .. "last"` (or `layer a "name"`) for stage `stage`.
std::string describeLayerRange(const StagePlan &stage, const PlanRequest &req);

} // namespace mlir::dist::plan_report

#endif // DIST_LIB_ANALYSIS_PLANREPORTINTERNAL_H
