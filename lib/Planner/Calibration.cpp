//===- Calibration.cpp - Merge dist-calibrate measurements -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// See Calibration.h. The JSON layout is the one runtime/tools/
// dist-calibrate.cpp prints:
//   {"version":1, "cores":N, "gemm":{"f32":[{"threads":1,
//    "flops_by_size":[[size, flops], ...],
//    "shapes":[["nn"|"nt"|"tn", m, n, k, flops], ...]}, ...], ...},
//    "memory_bandwidth":{"1":bytes_per_s, ...}, "kernel_overhead":s,
//    "fork_overhead":{"2":s, ...},
//    "direct_conv_tap":{"1":s, ...}, "direct_conv_narrow_tap":{...},
//    "direct_conv_tile":{...} (on AVX-512 only),
//    "loop_bandwidth":{"in_place":[[footprint, bytes_per_s], ...]},
//    "loop_bandwidth_threads":{"2":{"in_place":[...]}, ...},
//    "step_overhead":s}
//
//===----------------------------------------------------------------------===//

#include "dist/Planner/Calibration.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>

using namespace mlir::dist;

namespace {
bool positive(std::optional<double> v) {
  return v && std::isfinite(*v) && *v > 0;
}

/// Reads a {class: [[footprint, bytes/s], ...]} table into `table`.
bool parseLoopTable(
    const llvm::json::Object &object, const std::string &where,
    std::map<std::string, std::vector<std::pair<double, double>>> &table,
    std::string &error) {
  for (const auto &[kind, list] : object) {
    const llvm::json::Array *points = list.getAsArray();
    if (!points) {
      error = where + "." + kind.str() + ": expected an array";
      return false;
    }
    auto &out = table[kind.str()];
    for (const llvm::json::Value &p : *points) {
      const llvm::json::Array *pair = p.getAsArray();
      if (!pair || pair->size() != 2 || !positive((*pair)[0].getAsNumber()) ||
          !positive((*pair)[1].getAsNumber())) {
        error = where + "." + kind.str() +
                ": expected [footprint, bytes_per_s] pairs of positive numbers";
        return false;
      }
      out.emplace_back(*(*pair)[0].getAsNumber(), *(*pair)[1].getAsNumber());
    }
    std::sort(out.begin(), out.end());
  }
  return true;
}
} // namespace

std::optional<DeviceCalibration>
mlir::dist::parseCalibrationJson(const std::string &text, std::string &error) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    error =
        "calibration output is not JSON: " + llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root) {
    error = "calibration output is not a JSON object";
    return std::nullopt;
  }
  DeviceCalibration cal;
  const llvm::json::Object *gemm = root->getObject("gemm");
  if (!gemm) {
    error = "calibration output has no 'gemm' object";
    return std::nullopt;
  }
  for (const auto &[dtype, list] : *gemm) {
    const llvm::json::Array *entries = list.getAsArray();
    if (!entries) {
      error = "gemm." + dtype.str() + ": expected an array";
      return std::nullopt;
    }
    for (size_t i = 0; i < entries->size(); ++i) {
      std::string where = "gemm." + dtype.str() + "[" + std::to_string(i) + "]";
      const llvm::json::Object *e = (*entries)[i].getAsObject();
      std::optional<int64_t> threads =
          e ? e->getInteger("threads") : std::nullopt;
      const llvm::json::Array *pts = e ? e->getArray("flops_by_size") : nullptr;
      if (!threads || *threads < 1 || !pts) {
        error = where + ": expected {threads, flops_by_size}";
        return std::nullopt;
      }
      GemmCalibration g;
      g.threads = *threads;
      for (const llvm::json::Value &p : *pts) {
        const llvm::json::Array *pair = p.getAsArray();
        if (!pair || pair->size() != 2 || !positive((*pair)[0].getAsNumber()) ||
            !positive((*pair)[1].getAsNumber())) {
          error = where + ".flops_by_size: expected [size, flops] pairs of "
                          "positive numbers";
          return std::nullopt;
        }
        g.flopsBySize.emplace_back(*(*pair)[0].getAsNumber(),
                                   *(*pair)[1].getAsNumber());
      }
      std::sort(g.flopsBySize.begin(), g.flopsBySize.end());
      if (const llvm::json::Array *shapes = e->getArray("shapes")) {
        for (const llvm::json::Value &v : *shapes) {
          const llvm::json::Array *p = v.getAsArray();
          std::optional<llvm::StringRef> name =
              p && p->size() == 5 ? (*p)[0].getAsString() : std::nullopt;
          std::optional<GemmLayout> layout =
              name ? parseGemmLayout(
                         std::string_view(name->data(), name->size()))
                   : std::nullopt;
          if (!layout || !positive((*p)[1].getAsNumber()) ||
              !positive((*p)[2].getAsNumber()) ||
              !positive((*p)[3].getAsNumber()) ||
              !positive((*p)[4].getAsNumber())) {
            error = where + ".shapes: expected [layout, m, n, k, flops] lists "
                            "(layout nn, nt or tn; positive numbers)";
            return std::nullopt;
          }
          g.shapes.push_back({*layout, *(*p)[1].getAsNumber(),
                              *(*p)[2].getAsNumber(), *(*p)[3].getAsNumber(),
                              *(*p)[4].getAsNumber()});
        }
        std::string gridError = indexGemmShapes(g);
        if (!gridError.empty()) {
          error = where + ".shapes: " + gridError;
          return std::nullopt;
        }
      }
      cal.gemm[dtype.str()].push_back(std::move(g));
    }
    std::sort(cal.gemm[dtype.str()].begin(), cal.gemm[dtype.str()].end(),
              [](const GemmCalibration &a, const GemmCalibration &b) {
                return a.threads < b.threads;
              });
  }
  if (const llvm::json::Object *bw = root->getObject("memory_bandwidth")) {
    for (const auto &[key, value] : *bw) {
      int64_t threads = 0;
      if (!llvm::to_integer(key.str(), threads, 10) || threads < 1 ||
          !positive(value.getAsNumber())) {
        error = "memory_bandwidth." + key.str() +
                ": expected a positive number keyed by a thread count";
        return std::nullopt;
      }
      cal.memoryBandwidthByThreads[threads] = *value.getAsNumber();
    }
  }
  for (const CalibrationThreadMap &m : kDirectConvMaps) {
    const llvm::json::Object *map = root->getObject(m.key);
    if (!map)
      continue;
    for (const auto &[key, value] : *map) {
      int64_t threads = 0;
      std::optional<double> v = value.getAsNumber();
      if (!llvm::to_integer(key.str(), threads, 10) || threads < 1 || !v ||
          !std::isfinite(*v) || *v < 0 || (*v == 0 && !m.allowZero)) {
        error = std::string(m.key) + "." + key.str() + ": expected seconds (" +
                (m.allowZero ? "not negative" : "positive") +
                ") keyed by a thread count";
        return std::nullopt;
      }
      (cal.*m.field)[threads] = *v;
    }
  }
  if (const llvm::json::Object *fork = root->getObject("fork_overhead")) {
    for (const auto &[key, value] : *fork) {
      int64_t threads = 0;
      if (!llvm::to_integer(key.str(), threads, 10) || threads < 2 ||
          !value.getAsNumber() || !std::isfinite(*value.getAsNumber()) ||
          *value.getAsNumber() < 0) {
        error = "fork_overhead." + key.str() +
                ": expected seconds (not negative) keyed by a thread count of "
                "at least 2";
        return std::nullopt;
      }
      cal.forkOverheadByThreads[threads] = *value.getAsNumber();
    }
  }
  if (const llvm::json::Object *loops = root->getObject("loop_bandwidth"))
    if (!parseLoopTable(*loops, "loop_bandwidth", cal.loopBandwidth, error))
      return std::nullopt;
  if (const llvm::json::Object *byThreads =
          root->getObject("loop_bandwidth_threads")) {
    for (const auto &[key, value] : *byThreads) {
      int64_t threads = 0;
      const llvm::json::Object *table = value.getAsObject();
      std::string where = "loop_bandwidth_threads." + key.str();
      if (!llvm::to_integer(key.str(), threads, 10) || threads < 2 || !table) {
        error = where + ": expected a table keyed by a thread count of at "
                        "least 2";
        return std::nullopt;
      }
      if (!parseLoopTable(*table, where, cal.loopBandwidthByThreads[threads],
                          error))
        return std::nullopt;
    }
  }
  if (std::optional<double> k = root->getNumber("kernel_overhead"))
    cal.kernelOverheadS = *k;
  if (std::optional<double> s = root->getNumber("step_overhead"))
    cal.stepOverheadS = *s;
  if (std::optional<double> g = root->getNumber("gemm_call_overhead"))
    cal.gemmCallOverheadS = *g;
  if (std::optional<double> g = root->getNumber("gemm_call_floor"))
    cal.gemmCallFloorS = *g;
  if (cal.kernelOverheadS < 0 || cal.stepOverheadS < 0 ||
      cal.gemmCallOverheadS < 0 || cal.gemmCallFloorS < 0) {
    error = "overheads must not be negative";
    return std::nullopt;
  }
  return cal;
}

void mlir::dist::applyGpuCalibration(ClusterSpec &cluster,
                                     const DeviceCalibration &cal) {
  for (NodeSpec &node : cluster.nodes)
    for (DeviceSpec &dev : node.devices) {
      if (dev.kind != DevKind::GPU)
        continue;
      DeviceCalibration kept = cal;
      // tf32 has no peak_flops type: kept out of the calibration the
      // cluster file carries too, whose gemm types are the cluster's.
      kept.gemm.erase("tf32");
      dev.calibration = kept;
      for (const auto &[threads, bw] : cal.memoryBandwidthByThreads)
        dev.memoryBandwidthBytesPerS = bw;
      for (const auto &[dtype, list] : kept.gemm) {
        double best = 0;
        for (const GemmCalibration &g : list)
          for (const auto &[size, flops] : g.flopsBySize)
            best = std::max(best, flops);
        if (best > 0)
          dev.peakFlops[dtype] = best;
      }
    }
}

void mlir::dist::applyCalibration(ClusterSpec &cluster,
                                  const DeviceCalibration &cal) {
  for (NodeSpec &node : cluster.nodes) {
    for (DeviceSpec &dev : node.devices) {
      if (dev.kind != DevKind::CPU)
        continue;
      dev.calibration = cal;
      for (const auto &[threads, bw] : cal.memoryBandwidthByThreads)
        dev.memoryBandwidthBytesPerS =
            std::max(dev.memoryBandwidthBytesPerS, bw);
      for (const auto &[dtype, list] : cal.gemm)
        for (const GemmCalibration &g : list)
          for (const auto &[size, flops] : g.flopsBySize)
            dev.peakFlops[dtype] = std::max(dev.peakFlops[dtype], flops);
    }
  }
}
