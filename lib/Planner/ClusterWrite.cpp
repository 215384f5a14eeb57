//===- ClusterWrite.cpp - Cluster files out, and the JSON form in ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// Writing a cluster back as YAML that loadClusterFile reads unchanged
// (calibration tables included) and as the one-line JSON that the
// `#dist.cluster` attribute carries, and reading that JSON back through the
// cluster-file parser.
//
//===----------------------------------------------------------------------===//

#include "ClusterInternal.h"
#include "dist/Planner/Cluster.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/YAMLParser.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::cluster_file;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// YAML
//===----------------------------------------------------------------------===//

/// A string as a YAML scalar: plain when that reads back unchanged,
/// double-quoted otherwise.
static std::string yamlString(StringRef text) {
  bool plain = !text.empty() && llvm::isAlpha(text.front()) &&
               llvm::all_of(text, [](char c) {
                 return llvm::isAlnum(c) || c == '-' || c == '_' || c == '.';
               });
  std::string lower = text.lower();
  if (lower == "null" || lower == "true" || lower == "false" ||
      lower == "yes" || lower == "no" || lower == "on" || lower == "off" ||
      lower == "y" || lower == "n")
    plain = false;
  if (plain)
    return text.str();
  return "\"" + llvm::yaml::escape(text, /*EscapePrintable=*/false) + "\"";
}

static std::string linkToYaml(const LinkSpec &link) {
  return "{bandwidth: " + formatNumber(link.bandwidthBytesPerS) +
         ", latency: " + formatNumber(link.latencyS) + "}";
}

/// `{threads: value, ...}` and a newline.
static void emitThreadMap(const std::map<int64_t, double> &map,
                          llvm::raw_ostream &os) {
  os << "{";
  llvm::interleave(
      map, os,
      [&](const std::pair<const int64_t, double> &entry) {
        os << entry.first << ": " << formatNumber(entry.second);
      },
      ", ");
  os << "}\n";
}

static void calibrationToYaml(const DeviceCalibration &calibration,
                              llvm::raw_ostream &os) {
  const char *indent = "          ";
  os << "        calibration:\n";
  if (!calibration.gemm.empty()) {
    os << indent << "gemm:\n";
    for (const auto &[dtype, entries] : calibration.gemm) {
      os << indent << "  " << yamlString(dtype) << ":";
      if (entries.empty()) {
        os << " []\n";
        continue;
      }
      os << "\n";
      for (const GemmCalibration &entry : entries) {
        os << indent << "    - threads: " << entry.threads << "\n";
        os << indent << "      flops_by_size: [";
        llvm::interleave(
            entry.flopsBySize, os,
            [&](const std::pair<double, double> &point) {
              os << "[" << formatNumber(point.first) << ", "
                 << formatNumber(point.second) << "]";
            },
            ", ");
        os << "]\n";
        if (entry.shapes.empty())
          continue;
        os << indent << "      shapes: [";
        llvm::interleave(
            entry.shapes, os,
            [&](const GemmShapePoint &p) {
              os << "[" << stringifyGemmLayout(p.layout) << ", "
                 << formatNumber(p.m) << ", " << formatNumber(p.n) << ", "
                 << formatNumber(p.k) << ", " << formatNumber(p.flops) << "]";
            },
            ", ");
        os << "]\n";
      }
    }
  }
  if (!calibration.memoryBandwidthByThreads.empty()) {
    os << indent << "memory_bandwidth: ";
    emitThreadMap(calibration.memoryBandwidthByThreads, os);
  }
  auto emitLoopTable =
      [&](const std::map<std::string, std::vector<std::pair<double, double>>>
              &table,
          const std::string &in) {
        for (const auto &[kind, points] : table) {
          os << in << kind << ": [";
          llvm::interleave(
              points, os,
              [&](const std::pair<double, double> &point) {
                os << "[" << formatNumber(point.first) << ", "
                   << formatNumber(point.second) << "]";
              },
              ", ");
          os << "]\n";
        }
      };
  if (!calibration.loopBandwidth.empty()) {
    os << indent << "loop_bandwidth:\n";
    emitLoopTable(calibration.loopBandwidth, std::string(indent) + "  ");
  }
  if (!calibration.loopBandwidthByThreads.empty()) {
    os << indent << "loop_bandwidth_threads:\n";
    for (const auto &[threads, table] : calibration.loopBandwidthByThreads) {
      os << indent << "  " << threads << ":\n";
      emitLoopTable(table, std::string(indent) + "    ");
    }
  }
  if (!calibration.loopFlopsByThreads.empty()) {
    os << indent << "loop_flops: ";
    emitThreadMap(calibration.loopFlopsByThreads, os);
  }
  for (const CalibrationThreadMap &m : kDirectConvMaps) {
    if ((calibration.*m.field).empty())
      continue;
    os << indent << m.key << ": ";
    emitThreadMap(calibration.*m.field, os);
  }
  os << indent
     << "kernel_overhead: " << formatNumber(calibration.kernelOverheadS)
     << "\n";
  os << indent << "step_overhead: " << formatNumber(calibration.stepOverheadS)
     << "\n";
  if (calibration.gemmCallOverheadS > 0)
    os << indent
       << "gemm_call_overhead: " << formatNumber(calibration.gemmCallOverheadS)
       << "\n";
  if (calibration.gemmCallFloorS > 0)
    os << indent
       << "gemm_call_floor: " << formatNumber(calibration.gemmCallFloorS)
       << "\n";
  if (!calibration.forkOverheadByThreads.empty()) {
    os << indent << "fork_overhead: ";
    emitThreadMap(calibration.forkOverheadByThreads, os);
  }
}

std::string dist::clusterToYaml(const ClusterSpec &spec) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "name: " << yamlString(spec.name) << "\n";
  os << "nodes:" << (spec.nodes.empty() ? " []" : "") << "\n";
  for (const NodeSpec &node : spec.nodes) {
    os << "  - name: " << yamlString(node.name) << "\n";
    os << "    count: " << node.count << "\n";
    os << "    devices:" << (node.devices.empty() ? " []" : "") << "\n";
    for (const DeviceSpec &device : node.devices) {
      const char *indent = "        ";
      os << "      - kind: " << stringifyDevKind(device.kind) << "\n";
      if (!device.model.empty())
        os << indent << "model: " << yamlString(device.model) << "\n";
      os << indent << "count: " << device.count << "\n";
      os << indent << "cores: " << device.cores << "\n";
      os << indent << "memory: " << formatNumber(device.memoryBytes) << "\n";
      os << indent << "peak_flops: {";
      llvm::interleave(
          device.peakFlops, os,
          [&](const std::pair<const std::string, double> &peak) {
            os << yamlString(peak.first) << ": " << formatNumber(peak.second);
          },
          ", ");
      os << "}\n";
      os << indent << "memory_bandwidth: "
         << formatNumber(device.memoryBandwidthBytesPerS) << "\n";
      os << indent << "price_per_hour: " << formatNumber(device.pricePerHour)
         << "\n";
      if (!device.isa.empty())
        os << indent << "isa: " << yamlString(device.isa) << "\n";
      if (device.calibration)
        calibrationToYaml(*device.calibration, os);
    }
    os << "    links:\n";
    os << "      intra: " << linkToYaml(node.intraLink) << "\n";
  }
  os << "links:\n";
  os << "  inter: " << linkToYaml(spec.interLink) << "\n";
  return out;
}
//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

static llvm::json::Value jsonString(const std::string &text) {
  if (llvm::json::isUTF8(text))
    return text;
  return llvm::json::fixUTF8(text);
}

static llvm::json::Value linkToJson(const LinkSpec &link) {
  return llvm::json::Object{{"bandwidth", link.bandwidthBytesPerS},
                            {"latency", link.latencyS}};
}

static llvm::json::Value calibrationToJson(const DeviceCalibration &cal) {
  llvm::json::Object gemm;
  for (const auto &[dtype, entries] : cal.gemm) {
    llvm::json::Array list;
    for (const GemmCalibration &entry : entries) {
      llvm::json::Array points;
      for (const auto &[size, flops] : entry.flopsBySize)
        points.push_back(llvm::json::Array{size, flops});
      llvm::json::Object e{{"threads", entry.threads},
                           {"flops_by_size", std::move(points)}};
      if (!entry.shapes.empty()) {
        llvm::json::Array shapes;
        for (const GemmShapePoint &p : entry.shapes)
          shapes.push_back(llvm::json::Array{stringifyGemmLayout(p.layout), p.m,
                                             p.n, p.k, p.flops});
        e["shapes"] = std::move(shapes);
      }
      list.push_back(std::move(e));
    }
    gemm[dtype] = std::move(list);
  }
  llvm::json::Object bandwidth;
  for (const auto &[threads, bytesPerS] : cal.memoryBandwidthByThreads)
    bandwidth[std::to_string(threads)] = bytesPerS;
  llvm::json::Object result{{"kernel_overhead", cal.kernelOverheadS},
                            {"step_overhead", cal.stepOverheadS}};
  if (cal.gemmCallOverheadS > 0)
    result["gemm_call_overhead"] = cal.gemmCallOverheadS;
  if (cal.gemmCallFloorS > 0)
    result["gemm_call_floor"] = cal.gemmCallFloorS;
  if (!cal.gemm.empty())
    result["gemm"] = std::move(gemm);
  if (!cal.memoryBandwidthByThreads.empty())
    result["memory_bandwidth"] = std::move(bandwidth);
  if (!cal.forkOverheadByThreads.empty()) {
    llvm::json::Object fork;
    for (const auto &[threads, seconds] : cal.forkOverheadByThreads)
      fork[std::to_string(threads)] = seconds;
    result["fork_overhead"] = std::move(fork);
  }
  auto loopTable =
      [](const std::map<std::string, std::vector<std::pair<double, double>>>
             &table) {
        llvm::json::Object loops;
        for (const auto &[kind, points] : table) {
          llvm::json::Array list;
          for (const auto &[footprint, bytesPerS] : points)
            list.push_back(llvm::json::Array{footprint, bytesPerS});
          loops[kind] = std::move(list);
        }
        return loops;
      };
  if (!cal.loopBandwidth.empty())
    result["loop_bandwidth"] = loopTable(cal.loopBandwidth);
  if (!cal.loopBandwidthByThreads.empty()) {
    llvm::json::Object byThreads;
    for (const auto &[threads, table] : cal.loopBandwidthByThreads)
      byThreads[std::to_string(threads)] = loopTable(table);
    result["loop_bandwidth_threads"] = std::move(byThreads);
  }
  if (!cal.loopFlopsByThreads.empty()) {
    llvm::json::Object flops;
    for (const auto &[threads, flopsPerS] : cal.loopFlopsByThreads)
      flops[std::to_string(threads)] = flopsPerS;
    result["loop_flops"] = std::move(flops);
  }
  for (const CalibrationThreadMap &m : kDirectConvMaps) {
    if ((cal.*m.field).empty())
      continue;
    llvm::json::Object map;
    for (const auto &[threads, seconds] : cal.*m.field)
      map[std::to_string(threads)] = seconds;
    result[m.key] = std::move(map);
  }
  return result;
}

std::string dist::clusterToJson(const ClusterSpec &spec) {
  llvm::json::Array nodes;
  for (const NodeSpec &node : spec.nodes) {
    llvm::json::Array devices;
    for (const DeviceSpec &device : node.devices) {
      llvm::json::Object peaks;
      for (const auto &[dtype, flops] : device.peakFlops)
        peaks[dtype] = flops;
      llvm::json::Object object{
          {"kind", stringifyDevKind(device.kind)},
          {"count", device.count},
          {"cores", device.cores},
          {"memory", device.memoryBytes},
          {"peak_flops", std::move(peaks)},
          {"memory_bandwidth", device.memoryBandwidthBytesPerS},
          {"price_per_hour", device.pricePerHour}};
      if (!device.model.empty())
        object["model"] = jsonString(device.model);
      if (!device.isa.empty())
        object["isa"] = jsonString(device.isa);
      if (device.calibration)
        object["calibration"] = calibrationToJson(*device.calibration);
      devices.push_back(std::move(object));
    }
    nodes.push_back(llvm::json::Object{
        {"name", jsonString(node.name)},
        {"count", node.count},
        {"devices", std::move(devices)},
        {"links", llvm::json::Object{{"intra", linkToJson(node.intraLink)}}}});
  }
  llvm::json::Value root = llvm::json::Object{
      {"name", jsonString(spec.name)},
      {"nodes", std::move(nodes)},
      {"links", llvm::json::Object{{"inter", linkToJson(spec.interLink)}}}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << root;
  return out;
}

std::optional<ClusterSpec> dist::clusterFromJson(const std::string &json,
                                                 std::string &error) {
  // JSON is YAML: one parser, one set of messages.
  return parseCluster(json, "<json>", error);
}
