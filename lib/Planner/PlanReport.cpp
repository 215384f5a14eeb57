//===- PlanReport.cpp - Helpers shared by the plan reports ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The formatting and lookups that plan.json, the summary and plan.html
// share (PlanReportInternal.h declares them): milliseconds, byte counts and
// rates as people read them, valid UTF-8, and the layers, stages and device
// types of a plan, including ones the request does not know. The reports
// themselves live in PlanJson.cpp, PlanSummary.cpp and PlanHtml.cpp.
//
//===----------------------------------------------------------------------===//

#include "PlanReportInternal.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::plan_report;
using llvm::ArrayRef;
using llvm::StringRef;

static constexpr double kKiB = 1024.0;
static constexpr double kMiB = 1024.0 * kKiB;
static constexpr double kGiB = 1024.0 * kMiB;

std::string plan_report::formatMs(double seconds) {
  double ms = seconds * 1e3;
  if (!std::isfinite(ms))
    return "n/a";
  double mag = std::fabs(ms);
  if (mag >= 1000)
    return strFormat("%.0f", ms);
  if (mag >= 100)
    return strFormat("%.1f", ms);
  if (mag >= 1)
    return strFormat("%.2f", ms);
  return strFormat("%.3g", ms);
}

std::string plan_report::formatBytes(double bytes) {
  if (!std::isfinite(bytes))
    return "n/a";
  double mag = std::fabs(bytes);
  if (mag >= kGiB)
    return strFormat("%.2f GiB", bytes / kGiB);
  if (mag >= kMiB)
    return strFormat("%.1f MiB", bytes / kMiB);
  if (mag >= kKiB)
    return strFormat("%.1f KiB", bytes / kKiB);
  return strFormat("%.0f B", bytes);
}

std::string plan_report::formatFixed(double value, int decimals) {
  if (!std::isfinite(value))
    return "n/a";
  return strFormat("%.*f", decimals, value);
}

std::string plan_report::validUtf8(StringRef text) {
  if (llvm::json::isUTF8(text))
    return text.str();
  return llvm::json::fixUTF8(text);
}

std::vector<DeviceType> plan_report::deviceTypesOf(const PlanRequest &req) {
  if (!req.cluster)
    return {};
  return listDeviceTypes(*req.cluster);
}

int64_t plan_report::numLayers(const Plan &plan, const PlanRequest &req) {
  return std::max<int64_t>(plan.layerStage.size(), req.layers.size());
}

int64_t plan_report::stageOfLayer(const Plan &plan, int64_t layer) {
  if (layer < 0 || layer >= static_cast<int64_t>(plan.layerStage.size()))
    return -1;
  int64_t stage = plan.layerStage[layer];
  if (stage < 0 || stage >= static_cast<int64_t>(plan.stages.size()))
    return -1;
  return stage;
}

std::string plan_report::layerName(const PlanRequest &req, int64_t layer) {
  if (layer < 0 || layer >= static_cast<int64_t>(req.layers.size()) ||
      req.layers[layer].name.empty())
    return "layer " + std::to_string(layer);
  std::string name = validUtf8(req.layers[layer].name);
  for (char &c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return name;
}

std::string plan_report::deviceLabel(ArrayRef<DeviceType> types, int64_t type) {
  if (type >= 0 && type < static_cast<int64_t>(types.size()))
    return validUtf8(types[type].label);
  return "device type " + std::to_string(type);
}

double plan_report::deviceMemoryBytes(ArrayRef<DeviceType> types,
                                      int64_t type) {
  if (type >= 0 && type < static_cast<int64_t>(types.size()) &&
      types[type].spec)
    return types[type].spec->memoryBytes;
  return 0;
}

double plan_report::fwdFlopsPerSample(const LayerCost &layer) {
  return layer.fwd.gemmFlops + layer.fwd.otherFlops;
}

double plan_report::allParamBytes(const LayerCost &layer) {
  return layer.paramBytes + layer.frozenParamBytes + layer.sparseParamBytes;
}

std::string plan_report::describeLayerRange(const StagePlan &stage,
                                            const PlanRequest &req) {
  if (stage.firstLayer == stage.lastLayer)
    return strFormat("layer %lld \"%s\"",
                     static_cast<long long>(stage.firstLayer),
                     layerName(req, stage.firstLayer).c_str());
  return strFormat("layers %lld..%lld \"%s\" .. \"%s\"",
                   static_cast<long long>(stage.firstLayer),
                   static_cast<long long>(stage.lastLayer),
                   layerName(req, stage.firstLayer).c_str(),
                   layerName(req, stage.lastLayer).c_str());
}
