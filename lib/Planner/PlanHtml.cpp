//===- PlanHtml.cpp - plan.html, the plan as a page -----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Renders plan.html: one self-contained page (no scripts, no network) with
// summary tables, a placement diagram of the layers on the device types and
// a timeline of one step, both as inline SVG with <title> tooltips. Long
// names are shortened and crowded timelines merge their bars.
//
//===----------------------------------------------------------------------===//

#include "PlanReportInternal.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <iterator>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::plan_report;
using llvm::ArrayRef;
using llvm::StringRef;

/// Width of both diagrams (SVG user units; the page scales them down).
static constexpr double kSvgWidth = 1200;
/// Most bars the timeline draws; the longest events of each stage are kept.
static constexpr size_t kMaxTimelineBars = 2000;
/// Approximate advance of one character of the 10px diagram font.
static constexpr double kCharWidth = 6.2;

/// `text` with HTML's special characters as entities and control
/// characters as '?', in valid UTF-8.
static std::string escapeHtml(StringRef text) {
  std::string result;
  result.reserve(text.size());
  for (char c : validUtf8(text)) {
    switch (c) {
    case '&':
      result += "&amp;";
      break;
    case '<':
      result += "&lt;";
      break;
    case '>':
      result += "&gt;";
      break;
    case '"':
      result += "&quot;";
      break;
    case '\'':
      result += "&#39;";
      break;
    case '\n':
      result += c;
      break;
    default:
      result += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
    }
  }
  return result;
}

/// At most `maxChars` characters of `text`, keeping its end (layer names
/// differ at the end) behind "..." when it is cut. Counts bytes, which is
/// close enough for a label; never cuts inside a UTF-8 sequence.
static std::string shortenFront(StringRef text, size_t maxChars) {
  if (text.size() <= maxChars)
    return text.str();
  if (maxChars <= 3)
    return "";
  size_t start = text.size() - (maxChars - 3);
  while (start < text.size() && (text[start] & 0xC0) == 0x80)
    ++start;
  return "..." + text.substr(start).str();
}

/// Same, keeping the beginning (device labels).
static std::string shortenBack(StringRef text, size_t maxChars) {
  if (text.size() <= maxChars)
    return text.str();
  if (maxChars <= 3)
    return "";
  size_t end = maxChars - 3;
  while (end > 0 && (text[end] & 0xC0) == 0x80)
    --end;
  return text.substr(0, end).str() + "...";
}

/// An SVG coordinate with two decimals.
static std::string coord(double value) {
  if (!std::isfinite(value))
    return "0";
  return strFormat("%.2f", value);
}

/// Fill color of stage `stage`: hues a golden angle apart.
static std::string stageColor(int64_t stage) {
  double hue = std::fmod(static_cast<double>(stage) * 137.508 + 210.0, 360.0);
  return strFormat("hsl(%.0f,60%%,%d%%)", hue, stage % 2 ? 70 : 60);
}

/// Fill color of a timeline bar of kind `what`.
static std::string eventColor(StringRef what,
                              const std::vector<std::string> &otherKinds) {
  if (what == "fwd")
    return "#4e79a7";
  if (what == "bwd")
    return "#f28e2b";
  if (what == "update")
    return "#59a14f";
  if (what == "allreduce")
    return "#e15759";
  if (what == "send")
    return "#9c755f";
  static const char *const palette[] = {"#76b7b2", "#edc948", "#b07aa1",
                                        "#ff9da7", "#bab0ac", "#8cd17d"};
  auto it = llvm::find(otherKinds, what);
  size_t index = it == otherKinds.end() ? 0 : it - otherKinds.begin();
  return palette[index % std::size(palette)];
}

/// A step of 1, 2 or 5 times a power of ten, at least `minStep`.
static double niceStep(double minStep) {
  if (!(minStep > 0) || !std::isfinite(minStep))
    return 1;
  double power = std::pow(10.0, std::floor(std::log10(minStep)));
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (factor * power >= minStep * (1 - 1e-9))
      return factor * power;
  return 10 * power;
}

/// `value` written with as many decimals as `step` needs.
static std::string formatTick(double value, double step) {
  int decimals = 0;
  if (step < 1)
    decimals = std::min(6, static_cast<int>(std::ceil(-std::log10(step))));
  return strFormat("%.*f", decimals, value);
}

/// One `<tr><th>name</th><td>value</td></tr>` (value already escaped).
static void summaryRow(llvm::raw_ostream &os, StringRef name,
                       const std::string &valueHtml) {
  os << "<tr><th>" << escapeHtml(name) << "</th><td>" << valueHtml
     << "</td></tr>\n";
}

/// The table of the plan's settings and predicted figures.
static void writeSummaryTable(llvm::raw_ostream &os, const Plan &plan,
                              const PlanRequest &req,
                              ArrayRef<DeviceType> types) {
  os << "<table class=\"summary\">\n";
  summaryRow(os, "Objective", escapeHtml(stringifyObjective(plan.objective)));
  summaryRow(os, "Search", escapeHtml(stringifyPlanStrategy(plan.strategy)));
  if (req.cluster)
    summaryRow(os, "Cluster",
               escapeHtml(req.cluster->name) + " (" +
                   std::to_string(req.cluster->totalDevices()) +
                   " devices in " + std::to_string(types.size()) +
                   " device types)");
  summaryRow(os, "Global batch",
             std::to_string(req.globalBatch) +
                 (req.training ? " (training)" : " (inference)"));
  if (plan.objective == Objective::Cost)
    summaryRow(os, "Throughput floor",
               formatFixed(req.minThroughput, 1) + " samples/s");
  summaryRow(os, "Degrees",
             "dp " + std::to_string(plan.dp) + ", tp " +
                 std::to_string(plan.tp) + ", pp " + std::to_string(plan.pp));
  summaryRow(os, "Micro-batches", std::to_string(plan.microBatches));
  summaryRow(os, "Recompute", plan.recompute ? "on" : "off");
  summaryRow(os, "Predicted step time", formatMs(plan.stepTimeS) + " ms");
  summaryRow(os, "Throughput", formatFixed(plan.throughput, 1) + " samples/s");
  summaryRow(os, "Cost", formatFixed(plan.costPerHour, 2) + " per hour");
  summaryRow(os, "Devices used",
             std::to_string(plan.devicesUsed) +
                 (req.cluster
                      ? " of " + std::to_string(req.cluster->totalDevices())
                      : std::string()));
  summaryRow(os, "Planning",
             formatMs(plan.planningTimeS) + " ms, " +
                 std::to_string(plan.evaluated) + " candidate plans");
  os << "</table>\n";
}

/// One row per stage: layers, device type, units, times, memory.
static void writeStageTable(llvm::raw_ostream &os, const Plan &plan,
                            const PlanRequest &req,
                            ArrayRef<DeviceType> types) {
  os << "<h2>Stages</h2>\n<table class=\"stages\">\n"
     << "<tr><th>Stage</th><th>Layers</th><th>Device type</th>"
     << "<th>Units</th><th>dp</th><th>tp</th><th>Recompute</th>"
     << "<th>Compute ms</th><th>Comm ms</th><th>Memory per device</th>"
     << "<th>Capacity</th><th>Samples/s</th></tr>\n";
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const StagePlan &stage = plan.stages[i];
    double capacity = deviceMemoryBytes(types, stage.deviceType);
    bool over = capacity > 0 && stage.memoryBytesPerDevice > capacity;
    os << "<tr><td><span class=\"swatch\" style=\"background:"
       << stageColor(static_cast<int64_t>(i)) << "\"></span>" << i
       << "</td><td>" << escapeHtml(describeLayerRange(stage, req))
       << "</td><td class=\"device\">"
       << escapeHtml(deviceLabel(types, stage.deviceType))
       << "</td><td class=\"num\">" << stage.units << "</td><td class=\"num\">"
       << stage.dp << "</td><td class=\"num\">" << stage.tp << "</td><td>"
       << (stage.recompute ? "yes" : "no") << "</td><td class=\"num\">"
       << formatMs(stage.computeTimeS) << "</td><td class=\"num\">"
       << formatMs(stage.commTimeS) << "</td><td class=\"num"
       << (over ? " over" : "") << "\">"
       << formatBytes(stage.memoryBytesPerDevice) << "</td><td class=\"num\">"
       << (capacity > 0 ? formatBytes(capacity) : "n/a")
       << "</td><td class=\"num\">" << formatFixed(stage.throughput, 1)
       << "</td></tr>\n";
  }
  os << "</table>\n";
}

/// The placement diagram: one row per device type, the layers in order
/// along x, each drawn in the row of its stage's device type and colored by
/// stage; sparse layers are hatched.
static void writePlacementSvg(llvm::raw_ostream &os, const Plan &plan,
                              const PlanRequest &req,
                              ArrayRef<DeviceType> types) {
  const double leftW = 250, rightW = 16, top = 8;
  const double plotW = kSvgWidth - leftW - rightW;
  int64_t layers = numLayers(plan, req);
  double boxW = plotW / static_cast<double>(std::max<int64_t>(layers, 1));

  // Labels run along wide boxes, up narrow ones, and are left out of boxes
  // too narrow for the font.
  enum class LabelMode { Horizontal, Vertical, None };
  LabelMode mode = boxW >= 48   ? LabelMode::Horizontal
                   : boxW >= 11 ? LabelMode::Vertical
                                : LabelMode::None;
  const double boxH = mode == LabelMode::Vertical ? 96 : 28;
  const double rowH = boxH + 12;

  // Rows: every device type of the cluster, plus any a stage names that the
  // cluster does not have.
  int64_t rows = static_cast<int64_t>(types.size());
  for (const StagePlan &stage : plan.stages)
    rows = std::max(rows, stage.deviceType + 1);
  std::vector<int64_t> unitsUsed(static_cast<size_t>(rows), 0);
  for (const StagePlan &stage : plan.stages)
    if (stage.deviceType >= 0)
      unitsUsed[stage.deviceType] += stage.units;

  const double bandY = top + static_cast<double>(rows) * rowH + 4;
  const double bandH = 16;
  const double axisY = bandY + bandH + 6;
  const double legendY = axisY + 30;
  const double height = legendY + 18;

  os << "<svg id=\"placement\" xmlns=\"http://www.w3.org/2000/svg\" width=\""
     << coord(kSvgWidth) << "\" height=\"" << coord(height)
     << "\" viewBox=\"0 0 " << coord(kSvgWidth) << " " << coord(height)
     << "\" role=\"img\" aria-label=\"placement of layers on device types\">\n"
     << "<defs><pattern id=\"sparse-hatch\" width=\"6\" height=\"6\" "
        "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        "<rect width=\"2.5\" height=\"6\" fill=\"#000\" fill-opacity=\"0.3\"/>"
        "</pattern></defs>\n";

  for (int64_t row = 0; row < rows; ++row) {
    double y = top + static_cast<double>(row) * rowH;
    std::string label = deviceLabel(types, row);
    int64_t units =
        row < static_cast<int64_t>(types.size()) ? types[row].units : 0;
    os << "<rect class=\"row\" x=\"0\" y=\"" << coord(y) << "\" width=\""
       << coord(kSvgWidth) << "\" height=\"" << coord(rowH - 4) << "\" fill=\""
       << (row % 2 ? "#f7f7f7" : "#efefef") << "\"/>\n"
       << "<text x=\"8\" y=\"" << coord(y + rowH / 2 - 6)
       << "\" font-size=\"12\" font-weight=\"bold\"><title>"
       << escapeHtml(label) << "</title>" << escapeHtml(shortenBack(label, 34))
       << "</text>\n"
       << "<text x=\"8\" y=\"" << coord(y + rowH / 2 + 9)
       << "\" font-size=\"10\" fill=\"#555\">" << units << " units, "
       << unitsUsed[row] << " used</text>\n";
  }

  for (int64_t layer = 0; layer < layers; ++layer) {
    int64_t stageIndex = stageOfLayer(plan, layer);
    if (stageIndex < 0)
      continue;
    const StagePlan &stage = plan.stages[stageIndex];
    if (stage.deviceType < 0)
      continue;
    const LayerCost *cost = layer < static_cast<int64_t>(req.layers.size())
                                ? &req.layers[layer]
                                : nullptr;
    std::string name = layerName(req, layer);
    double x = leftW + static_cast<double>(layer) * boxW;
    double y = top + static_cast<double>(stage.deviceType) * rowH +
               (rowH - 4 - boxH) / 2;
    double w = std::max(boxW - (boxW >= 4 ? 1 : 0), 0.5);

    os << "<rect class=\"layer\" x=\"" << coord(x) << "\" y=\"" << coord(y)
       << "\" width=\"" << coord(w) << "\" height=\"" << coord(boxH)
       << "\" fill=\"" << stageColor(stageIndex) << "\"><title>"
       << escapeHtml("layer " + std::to_string(layer) + " \"" + name +
                     "\"\nstage " + std::to_string(stageIndex) + " on " +
                     deviceLabel(types, stage.deviceType));
    if (cost)
      os << escapeHtml(
          "\nforward " + strFormat("%.4g", fwdFlopsPerSample(*cost) / 1e9) +
          " GFLOP/sample, parameters " + formatBytes(allParamBytes(*cost)) +
          ", activations " + formatBytes(cost->activationBytes) + "/sample" +
          (cost->sparse ? "\nsparse (embedding lookup)" : ""));
    os << "</title></rect>\n";
    if (cost && cost->sparse)
      os << "<rect class=\"sparse\" x=\"" << coord(x) << "\" y=\"" << coord(y)
         << "\" width=\"" << coord(w) << "\" height=\"" << coord(boxH)
         << "\" fill=\"url(#sparse-hatch)\" stroke=\"#000\" "
            "stroke-width=\"1\" pointer-events=\"none\"/>\n";

    if (mode == LabelMode::None)
      continue;
    double cx = x + w / 2, cy = y + boxH / 2;
    double room = (mode == LabelMode::Horizontal ? w : boxH) - 6;
    size_t maxChars = static_cast<size_t>(std::max(room / kCharWidth, 0.0));
    std::string text = shortenFront(name, maxChars);
    if (text.empty() || text == "...")
      text = std::to_string(layer);
    if (text.size() > maxChars)
      continue;
    os << "<text class=\"label\" x=\"" << coord(cx) << "\" y=\"" << coord(cy)
       << "\" font-size=\"10\" text-anchor=\"middle\" "
          "dominant-baseline=\"central\" pointer-events=\"none\"";
    if (mode == LabelMode::Vertical)
      os << " transform=\"rotate(-90 " << coord(cx) << " " << coord(cy)
         << ")\"";
    os << ">" << escapeHtml(text) << "</text>\n";
  }

  // The stage band under the rows.
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const StagePlan &stage = plan.stages[i];
    double x = leftW + static_cast<double>(stage.firstLayer) * boxW;
    double w =
        static_cast<double>(stage.lastLayer - stage.firstLayer + 1) * boxW;
    os << "<rect class=\"stage\" x=\"" << coord(x) << "\" y=\"" << coord(bandY)
       << "\" width=\"" << coord(std::max(w, 0.5)) << "\" height=\""
       << coord(bandH) << "\" fill=\"" << stageColor(static_cast<int64_t>(i))
       << "\"><title>"
       << escapeHtml("stage " + std::to_string(i) + ": " +
                     describeLayerRange(stage, req) + " on " +
                     deviceLabel(types, stage.deviceType) + " x" +
                     std::to_string(stage.units))
       << "</title></rect>\n";
    std::string label = "S" + std::to_string(i);
    if (w >= static_cast<double>(label.size()) * kCharWidth + 4)
      os << "<text x=\"" << coord(x + w / 2) << "\" y=\""
         << coord(bandY + bandH / 2)
         << "\" font-size=\"10\" text-anchor=\"middle\" "
            "dominant-baseline=\"central\" pointer-events=\"none\">"
         << label << "</text>\n";
  }
  os << "<text x=\"8\" y=\"" << coord(bandY + bandH / 2)
     << "\" font-size=\"11\" dominant-baseline=\"central\">stages</text>\n";

  // Layer index axis.
  if (layers > 0) {
    double step = std::max(niceStep(50 / boxW), 1.0);
    os << "<text x=\"8\" y=\"" << coord(axisY + 14)
       << "\" font-size=\"11\">layer</text>\n";
    for (double index = 0; index < static_cast<double>(layers); index += step) {
      double x = leftW + (index + 0.5) * boxW;
      os << "<line x1=\"" << coord(x) << "\" y1=\"" << coord(axisY)
         << "\" x2=\"" << coord(x) << "\" y2=\"" << coord(axisY + 4)
         << "\" stroke=\"#555\"/><text x=\"" << coord(x) << "\" y=\""
         << coord(axisY + 14) << "\" font-size=\"10\" text-anchor=\"middle\">"
         << strFormat("%.0f", index) << "</text>\n";
    }
  } else {
    os << "<text x=\"" << coord(leftW) << "\" y=\"" << coord(axisY + 14)
       << "\" font-size=\"11\">the plan has no layers</text>\n";
  }

  // Legend for the hatching.
  bool anySparse = llvm::any_of(
      req.layers, [](const LayerCost &layer) { return layer.sparse; });
  if (anySparse)
    os << "<rect x=\"" << coord(leftW) << "\" y=\"" << coord(legendY)
       << "\" width=\"14\" height=\"12\" fill=\"url(#sparse-hatch)\" "
          "stroke=\"#000\"/><text x=\""
       << coord(leftW + 20) << "\" y=\"" << coord(legendY + 10)
       << "\" font-size=\"11\">sparse layer (embedding lookup)</text>\n";
  os << "</svg>\n";
}

namespace {
/// A bar of the timeline: one event, or adjacent events of one kind in one
/// lane merged when the timeline has more events than it draws.
struct TimelineBar {
  const TimelineEvent *event = nullptr; ///< the first event
  double startS = 0;
  double endS = 0;
  int64_t lastMicroBatch = -1;
  size_t events = 1;
};
} // namespace

/// Merges, in each lane and for each kind, bars that start at most `gapS`
/// after the previous one ends. Returns the number of bars left.
static size_t mergeBars(std::vector<std::vector<TimelineBar>> &lanes,
                        double gapS) {
  size_t count = 0;
  for (std::vector<TimelineBar> &bars : lanes) {
    llvm::sort(bars, [](const TimelineBar &a, const TimelineBar &b) {
      if (a.event->what != b.event->what)
        return a.event->what < b.event->what;
      if (a.startS != b.startS)
        return a.startS < b.startS;
      return a.event < b.event;
    });
    std::vector<TimelineBar> merged;
    for (const TimelineBar &bar : bars) {
      if (!merged.empty() && merged.back().event->what == bar.event->what &&
          bar.startS - merged.back().endS <= gapS) {
        TimelineBar &last = merged.back();
        last.endS = std::max(last.endS, bar.endS);
        last.lastMicroBatch = bar.lastMicroBatch;
        last.events += bar.events;
        continue;
      }
      merged.push_back(bar);
    }
    bars = std::move(merged);
    count += bars.size();
  }
  return count;
}

/// The timeline of one step: one lane per stage, one bar per event colored
/// by kind, a time axis in ms and a legend.
static void writeTimelineSvg(llvm::raw_ostream &os, const Plan &plan,
                             ArrayRef<DeviceType> types) {
  const double leftW = 170, rightW = 30, top = 8;
  const double plotW = kSvgWidth - leftW - rightW;

  // Lanes and the events worth drawing.
  int64_t lanes = static_cast<int64_t>(plan.stages.size());
  double endS = std::isfinite(plan.stepTimeS) ? plan.stepTimeS : 0;
  std::vector<const TimelineEvent *> drawable;
  for (const TimelineEvent &event : plan.timeline) {
    if (event.stage < 0 || !std::isfinite(event.startS) ||
        !std::isfinite(event.endS))
      continue;
    drawable.push_back(&event);
    lanes = std::max(lanes, event.stage + 1);
    endS = std::max(endS, event.endS);
  }
  if (!(endS > 0))
    endS = 1e-3;
  lanes = std::max<int64_t>(lanes, 1);
  std::vector<std::vector<TimelineBar>> byLane(static_cast<size_t>(lanes));
  for (const TimelineEvent *event : drawable)
    byLane[event->stage].push_back(
        {event, event->startS, event->endS, event->microBatch, 1});

  // Too many events: merge those of one kind that are closer than a pixel,
  // then two, four, ... until the bars fit.
  size_t bars = drawable.size();
  double mergeGapS = -1;
  for (double gapS = endS / plotW; bars > kMaxTimelineBars; gapS *= 2) {
    bars = mergeBars(byLane, gapS);
    mergeGapS = gapS;
    if (gapS > endS)
      break;
  }
  // A timeline with more lanes and kinds than bars keeps the first bars.
  size_t dropped = 0;
  if (bars > kMaxTimelineBars) {
    size_t share = std::max<size_t>(kMaxTimelineBars / byLane.size(), 1);
    for (std::vector<TimelineBar> &laneBars : byLane) {
      if (laneBars.size() > share) {
        dropped += laneBars.size() - share;
        laneBars.resize(share);
      }
    }
  }

  // Kinds in legend order: the known ones, then the others by name.
  const char *const knownKinds[] = {"fwd", "bwd", "update", "allreduce",
                                    "send"};
  std::vector<std::string> otherKinds;
  std::vector<std::string> kinds;
  for (const char *kind : knownKinds)
    if (llvm::any_of(plan.timeline, [&](const TimelineEvent &event) {
          return event.what == kind;
        }))
      kinds.push_back(kind);
  for (const TimelineEvent &event : plan.timeline)
    if (!llvm::is_contained(knownKinds, StringRef(event.what)) &&
        !llvm::is_contained(otherKinds, event.what))
      otherKinds.push_back(event.what);
  llvm::sort(otherKinds);
  kinds.insert(kinds.end(), otherKinds.begin(), otherKinds.end());

  const double laneH =
      std::clamp(std::floor(720.0 / static_cast<double>(lanes)), 7.0, 26.0);
  const double barH = std::max(laneH - 4, laneH * 0.75);
  const double axisY = top + static_cast<double>(lanes) * laneH + 2;
  const double legendY = axisY + 34;
  const double height = legendY + 20;
  const double endMs = endS * 1e3;
  const double scale = plotW / endMs;

  os << "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\""
     << coord(kSvgWidth) << "\" height=\"" << coord(height)
     << "\" viewBox=\"0 0 " << coord(kSvgWidth) << " " << coord(height)
     << "\" role=\"img\" aria-label=\"timeline of one step\">\n";

  // Lanes and their labels; small lanes label every few.
  double fontSize = std::min(12.0, laneH - 2);
  int64_t labelEvery =
      fontSize >= 7 ? 1 : static_cast<int64_t>(std::ceil(9.0 / laneH));
  fontSize = std::max(fontSize, 7.0);
  for (int64_t lane = 0; lane < lanes; ++lane) {
    double y = top + static_cast<double>(lane) * laneH;
    os << "<rect class=\"lane\" x=\"" << coord(leftW) << "\" y=\"" << coord(y)
       << "\" width=\"" << coord(plotW) << "\" height=\"" << coord(laneH)
       << "\" fill=\"" << (lane % 2 ? "#f7f7f7" : "#efefef") << "\"/>\n";
    if (lane % labelEvery)
      continue;
    std::string label = "S" + std::to_string(lane);
    if (lane < static_cast<int64_t>(plan.stages.size()) && laneH >= 12)
      label += " " + shortenBack(
                         deviceLabel(types, plan.stages[lane].deviceType), 22);
    os << "<text x=\"" << coord(leftW - 6) << "\" y=\"" << coord(y + laneH / 2)
       << "\" font-size=\"" << coord(fontSize)
       << "\" text-anchor=\"end\" dominant-baseline=\"central\">"
       << escapeHtml(label) << "</text>\n";
  }

  // Bars.
  for (size_t lane = 0; lane < byLane.size(); ++lane) {
    for (const TimelineBar &bar : byLane[lane]) {
      const TimelineEvent &event = *bar.event;
      double x = leftW + std::max(bar.startS * 1e3, 0.0) * scale;
      double w =
          std::max(std::max(bar.endS - bar.startS, 0.0) * 1e3 * scale, 0.6);
      double y = top + static_cast<double>(lane) * laneH + (laneH - barH) / 2;
      std::string title =
          "stage " + std::to_string(event.stage) + " " + event.what;
      std::string label;
      if (bar.events > 1) {
        label = event.microBatch >= 0 && bar.lastMicroBatch >= 0
                    ? std::to_string(event.microBatch) + ".." +
                          std::to_string(bar.lastMicroBatch)
                    : "";
        title += ", " + std::to_string(bar.events) + " events";
        if (!label.empty())
          title += " (micro-batches " + label + ")";
      } else if (event.microBatch >= 0) {
        label = std::to_string(event.microBatch);
        title += ", micro-batch " + label;
      }
      title += ": " + formatMs(bar.startS) + " .. " + formatMs(bar.endS) +
               " ms (" + formatMs(bar.endS - bar.startS) + " ms)";
      os << "<rect class=\"bar\" x=\"" << coord(x) << "\" y=\"" << coord(y)
         << "\" width=\"" << coord(w) << "\" height=\"" << coord(barH)
         << "\" fill=\"" << eventColor(event.what, otherKinds) << "\"><title>"
         << escapeHtml(title) << "</title></rect>\n";
      if (!label.empty() && barH >= 10 &&
          w >= static_cast<double>(label.size()) * kCharWidth + 4)
        os << "<text x=\"" << coord(x + w / 2) << "\" y=\""
           << coord(y + barH / 2)
           << "\" font-size=\"10\" fill=\"#fff\" text-anchor=\"middle\" "
              "dominant-baseline=\"central\" pointer-events=\"none\">"
           << label << "</text>\n";
    }
  }

  // The step's end.
  if (plan.stepTimeS > 0 && std::isfinite(plan.stepTimeS)) {
    double x = leftW + plan.stepTimeS * 1e3 * scale;
    os << "<line x1=\"" << coord(x) << "\" y1=\"" << coord(top) << "\" x2=\""
       << coord(x) << "\" y2=\"" << coord(axisY)
       << "\" stroke=\"#333\" stroke-dasharray=\"4 3\"><title>predicted step "
       << formatMs(plan.stepTimeS) << " ms</title></line>\n";
  }

  // Time axis.
  double step = niceStep(endMs / 10);
  os << "<line x1=\"" << coord(leftW) << "\" y1=\"" << coord(axisY)
     << "\" x2=\"" << coord(leftW + plotW) << "\" y2=\"" << coord(axisY)
     << "\" stroke=\"#555\"/>\n";
  for (double t = 0; t <= endMs * (1 + 1e-9); t += step) {
    double x = leftW + t * scale;
    os << "<line x1=\"" << coord(x) << "\" y1=\"" << coord(axisY) << "\" x2=\""
       << coord(x) << "\" y2=\"" << coord(axisY + 4)
       << "\" stroke=\"#555\"/><text x=\"" << coord(x) << "\" y=\""
       << coord(axisY + 15) << "\" font-size=\"10\" text-anchor=\"middle\">"
       << formatTick(t, step) << "</text>\n";
  }
  os << "<text x=\"" << coord(leftW - 14) << "\" y=\"" << coord(axisY + 15)
     << "\" font-size=\"10\" text-anchor=\"end\">ms</text>\n";

  // Legend.
  double x = leftW;
  for (const std::string &kind : kinds) {
    os << "<rect x=\"" << coord(x) << "\" y=\"" << coord(legendY)
       << "\" width=\"14\" height=\"12\" fill=\""
       << eventColor(kind, otherKinds) << "\"/><text x=\"" << coord(x + 18)
       << "\" y=\"" << coord(legendY + 10) << "\" font-size=\"11\">"
       << escapeHtml(kind) << "</text>\n";
    x += 30 + static_cast<double>(kind.size()) * kCharWidth;
  }
  if (kinds.empty())
    os << "<text x=\"" << coord(leftW) << "\" y=\"" << coord(legendY + 10)
       << "\" font-size=\"11\">the plan has no timeline</text>\n";
  os << "</svg>\n";
  if (mergeGapS >= 0)
    os << "<p class=\"note\">The timeline draws its " << drawable.size()
       << " events as " << bars - dropped
       << " bars: events of one kind in a lane at most " << formatMs(mergeGapS)
       << " ms apart are merged"
       << (dropped ? " and the last bars of crowded lanes are left out" : "")
       << "; plan.json lists every event.</p>\n";
}

std::string mlir::dist::planToHtml(const Plan &plan, const PlanRequest &req) {
  std::vector<DeviceType> types = deviceTypesOf(req);
  std::string clusterName =
      req.cluster ? validUtf8(req.cluster->name) : std::string("?");
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
        "charset=\"utf-8\">\n"
     << "<title>dist-opt plan for " << escapeHtml(clusterName)
     << "</title>\n<style>\n"
     << "body{font-family:system-ui,sans-serif;margin:24px;color:#222;"
        "background:#fff}\n"
     << "h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
     << "table{border-collapse:collapse;font-size:13px}\n"
     << "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;"
        "vertical-align:top}\n"
     << "table.summary th{background:#f4f4f4}\n"
     << "td.num{text-align:right;font-variant-numeric:tabular-nums;"
        "white-space:nowrap}\n"
     << "td.device{white-space:nowrap}\n"
     << "td.over{color:#b00;font-weight:bold}\n"
     << ".swatch{display:inline-block;width:10px;height:10px;"
        "margin-right:6px;border:1px solid #888}\n"
     << "svg{display:block;max-width:100%;height:auto;"
        "font-family:system-ui,sans-serif}\n"
     << ".note{color:#666;font-size:12px}\n"
     << "</style>\n</head>\n<body>\n"
     << "<h1>" << (req.training ? "Training" : "Inference")
     << " plan for cluster " << escapeHtml(clusterName) << "</h1>\n";
  writeSummaryTable(os, plan, req, types);
  os << "<h2>Placement</h2>\n<p class=\"note\">One row per device type; the "
        "layers in order, each in the row of its stage's device type and "
        "colored by stage. Hover a box for details.</p>\n";
  writePlacementSvg(os, plan, req, types);
  os << "<h2>Timeline of one step</h2>\n<p class=\"note\">One lane per stage "
        "(one device of the stage); bars are colored by kind and numbered by "
        "micro-batch. Hover a bar for details.</p>\n";
  writeTimelineSvg(os, plan, types);
  writeStageTable(os, plan, req, types);
  os << "</body>\n</html>\n";
  return text;
}
