//===- Cluster.cpp - The unified cluster object ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The cluster object's own operations: the names of device kinds and GEMM
// layouts, the indexing of measured GEMM shapes into per-layout grids, a
// device's peak for a data type and the cluster's device counts. Reading and
// writing cluster files and detecting the local machine live in
// ClusterParse.cpp, ClusterWrite.cpp and ClusterDetect.cpp.
//
//===----------------------------------------------------------------------===//

#include "dist/Planner/Cluster.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// ClusterSpec helpers
//===----------------------------------------------------------------------===//

const char *dist::stringifyDevKind(DevKind kind) {
  switch (kind) {
  case DevKind::CPU:
    return "cpu";
  case DevKind::GPU:
    return "gpu";
  }
  llvm_unreachable("unknown device kind");
}

const char *dist::stringifyGemmLayout(GemmLayout layout) {
  switch (layout) {
  case GemmLayout::NN:
    return "nn";
  case GemmLayout::NT:
    return "nt";
  case GemmLayout::TN:
    return "tn";
  }
  llvm_unreachable("unknown GEMM layout");
}

std::optional<GemmLayout> dist::parseGemmLayout(std::string_view text) {
  if (text == "nn")
    return GemmLayout::NN;
  if (text == "nt")
    return GemmLayout::NT;
  if (text == "tn")
    return GemmLayout::TN;
  return std::nullopt;
}

/// "MxNxK" of a grid point.
static std::string shapeText(const GemmShapePoint &p) {
  char buffer[96];
  std::snprintf(buffer, sizeof(buffer), "%gx%gx%g", p.m, p.n, p.k);
  return buffer;
}

bool dist::isPowerOfTwoExtent(double v) {
  if (!(v >= 1) || v > 9.0e15 || v != std::floor(v))
    return false;
  auto i = static_cast<uint64_t>(v);
  return (i & (i - 1)) == 0;
}

/// Builds `grid` from the points of `shapes` in `layout` that `select`
/// accepts. Returns "" or what is wrong, naming the layout as `what`.
template <typename Select>
static std::string indexGrid(const std::vector<GemmShapePoint> &shapes,
                             GemmLayout layout, Select select,
                             const std::string &what, GemmShapeGrid &grid) {
  grid = GemmShapeGrid();
  std::set<double> ms, ns, ks;
  size_t count = 0;
  for (const GemmShapePoint &p : shapes) {
    if (p.layout != layout || !select(p))
      continue;
    ++count;
    ms.insert(p.m);
    ns.insert(p.n);
    ks.insert(p.k);
  }
  if (!count)
    return "";
  grid.m.assign(ms.begin(), ms.end());
  grid.n.assign(ns.begin(), ns.end());
  grid.k.assign(ks.begin(), ks.end());
  grid.logFlops.assign(ms.size() * ns.size() * ks.size(), std::nan(""));
  auto indexIn = [](const std::vector<double> &axis, double v) {
    return static_cast<size_t>(std::lower_bound(axis.begin(), axis.end(), v) -
                               axis.begin());
  };
  for (const GemmShapePoint &p : shapes) {
    if (p.layout != layout || !select(p))
      continue;
    size_t at = (indexIn(grid.m, p.m) * grid.n.size() + indexIn(grid.n, p.n)) *
                    grid.k.size() +
                indexIn(grid.k, p.k);
    if (!std::isnan(grid.logFlops[at])) {
      grid = GemmShapeGrid();
      return what + " has the shape " + shapeText(p) + " twice";
    }
    grid.logFlops[at] = std::log(p.flops);
  }
  if (count != ms.size() * ns.size() * ks.size()) {
    grid = GemmShapeGrid();
    return what + " has " + std::to_string(count) +
           " shapes, not every combination of its " +
           std::to_string(ms.size()) + " m, " + std::to_string(ns.size()) +
           " n and " + std::to_string(ks.size()) + " k values";
  }
  return "";
}

std::string dist::indexGemmShapes(GemmCalibration &cal) {
  auto aligned = [](const GemmShapePoint &p) {
    return isPowerOfTwoExtent(p.m) && isPowerOfTwoExtent(p.n) &&
           isPowerOfTwoExtent(p.k);
  };
  auto unaligned = [&](const GemmShapePoint &p) { return !aligned(p); };
  for (int l = 0; l < kNumGemmLayouts; ++l) {
    auto layout = static_cast<GemmLayout>(l);
    std::string name = std::string("layout ") + stringifyGemmLayout(layout);
    std::string error = indexGrid(cal.shapes, layout, aligned,
                                  name + " (powers of two)", cal.grids[l]);
    if (error.empty())
      error = indexGrid(cal.shapes, layout, unaligned, name + " (other sizes)",
                        cal.unalignedGrids[l]);
    if (!error.empty()) {
      for (int i = 0; i < kNumGemmLayouts; ++i)
        cal.grids[i] = cal.unalignedGrids[i] = GemmShapeGrid();
      return error;
    }
  }
  return "";
}

double DeviceSpec::peakFlopsFor(const std::string &dtype) const {
  auto it = peakFlops.find(dtype);
  if (it != peakFlops.end())
    return it->second;
  it = peakFlops.find("f32");
  if (it != peakFlops.end())
    return it->second;
  // No f32 either: the slowest listed type is the safe guess.
  double slowest = 0;
  for (const auto &entry : peakFlops)
    if (slowest == 0 || entry.second < slowest)
      slowest = entry.second;
  return slowest;
}

int64_t ClusterSpec::deviceCount(DevKind kind) const {
  int64_t total = 0;
  for (const NodeSpec &node : nodes)
    for (const DeviceSpec &device : node.devices)
      if (device.kind == kind)
        total += node.count * device.count;
  return total;
}

int64_t ClusterSpec::totalDevices() const {
  int64_t total = 0;
  for (const NodeSpec &node : nodes)
    for (const DeviceSpec &device : node.devices)
      total += node.count * device.count;
  return total;
}

int64_t ClusterSpec::totalNodes() const {
  int64_t total = 0;
  for (const NodeSpec &node : nodes)
    total += node.count;
  return total;
}
