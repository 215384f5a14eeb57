//===- ClusterAttr.cpp - the cluster object as IR and as C++ --------------===//
// SPDX-License-Identifier: Apache-2.0
//
// ClusterSpec <-> #dist.cluster (ClusterAttr.h): field by field, figure by
// figure; no text in between.
//
//===----------------------------------------------------------------------===//

#include "dist/Transforms/ClusterAttr.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// C++ to IR
//===----------------------------------------------------------------------===//

namespace {
LinkAttr linkToAttr(MLIRContext *ctx, const LinkSpec &link) {
  return LinkAttr::get(ctx, llvm::APFloat(link.bandwidthBytesPerS),
                       llvm::APFloat(link.latencyS));
}

ThreadRatesAttr ratesToAttr(Builder &b, const std::map<int64_t, double> &map) {
  SmallVector<int64_t> threads;
  SmallVector<double> values;
  for (auto [t, v] : map) {
    threads.push_back(t);
    values.push_back(v);
  }
  return ThreadRatesAttr::get(b.getContext(), b.getDenseI64ArrayAttr(threads),
                              b.getDenseF64ArrayAttr(values));
}

void appendLoops(
    Builder &b, int64_t threads,
    const std::map<std::string, std::vector<std::pair<double, double>>> &table,
    SmallVectorImpl<LoopRatesAttr> &out) {
  for (const auto &[kernelClass, points] : table) {
    SmallVector<double> footprints, rates;
    for (auto [f, r] : points) {
      footprints.push_back(f);
      rates.push_back(r);
    }
    out.push_back(LoopRatesAttr::get(b.getContext(), kernelClass, threads,
                                     b.getDenseF64ArrayAttr(footprints),
                                     b.getDenseF64ArrayAttr(rates)));
  }
}

CalibrationAttr calibrationToAttr(Builder &b, const DeviceCalibration &cal) {
  MLIRContext *ctx = b.getContext();
  SmallVector<GemmRatesAttr> gemm;
  for (const auto &[dtype, entries] : cal.gemm)
    for (const GemmCalibration &entry : entries) {
      SmallVector<double> sizes, flops, m, n, k, shapeFlops;
      SmallVector<int32_t> layouts;
      for (auto [size, f] : entry.flopsBySize) {
        sizes.push_back(size);
        flops.push_back(f);
      }
      for (const GemmShapePoint &p : entry.shapes) {
        layouts.push_back(static_cast<int32_t>(p.layout));
        m.push_back(p.m);
        n.push_back(p.n);
        k.push_back(p.k);
        shapeFlops.push_back(p.flops);
      }
      gemm.push_back(GemmRatesAttr::get(
          ctx, dtype, entry.threads, b.getDenseF64ArrayAttr(sizes),
          b.getDenseF64ArrayAttr(flops), b.getDenseI32ArrayAttr(layouts),
          b.getDenseF64ArrayAttr(m), b.getDenseF64ArrayAttr(n),
          b.getDenseF64ArrayAttr(k), b.getDenseF64ArrayAttr(shapeFlops)));
    }
  SmallVector<LoopRatesAttr> loops;
  appendLoops(b, 1, cal.loopBandwidth, loops);
  for (const auto &[threads, table] : cal.loopBandwidthByThreads)
    appendLoops(b, threads, table, loops);
  return CalibrationAttr::get(
      ctx, gemm, ratesToAttr(b, cal.memoryBandwidthByThreads),
      llvm::APFloat(cal.kernelOverheadS), llvm::APFloat(cal.gemmCallOverheadS),
      llvm::APFloat(cal.gemmCallFloorS), llvm::APFloat(cal.stepOverheadS),
      ratesToAttr(b, cal.forkOverheadByThreads), loops,
      ratesToAttr(b, cal.loopFlopsByThreads),
      ratesToAttr(b, cal.directConvTapByThreads),
      ratesToAttr(b, cal.directConvNarrowTapByThreads),
      ratesToAttr(b, cal.directConvTileByThreads));
}
} // namespace

ClusterAttr dist::clusterToAttr(MLIRContext *ctx, const ClusterSpec &cluster) {
  Builder b(ctx);
  SmallVector<NodeAttr> nodes;
  for (const NodeSpec &node : cluster.nodes) {
    SmallVector<DeviceAttr> devices;
    for (const DeviceSpec &d : node.devices) {
      SmallVector<NamedAttribute> peaks;
      for (const auto &[dtype, flops] : d.peakFlops)
        peaks.push_back(b.getNamedAttr(dtype, b.getF64FloatAttr(flops)));
      devices.push_back(DeviceAttr::get(
          ctx, d.kind == DevKind::GPU ? DeviceKind::GPU : DeviceKind::CPU,
          d.model, d.count, d.cores, llvm::APFloat(d.memoryBytes),
          llvm::APFloat(d.memoryBandwidthBytesPerS), b.getDictionaryAttr(peaks),
          llvm::APFloat(d.pricePerHour), d.isa,
          d.calibration ? calibrationToAttr(b, *d.calibration)
                        : CalibrationAttr()));
    }
    nodes.push_back(NodeAttr::get(ctx, node.name, node.count, devices,
                                  linkToAttr(ctx, node.intraLink)));
  }
  return ClusterAttr::get(ctx, cluster.name, nodes,
                          linkToAttr(ctx, cluster.interLink));
}

//===----------------------------------------------------------------------===//
// IR to C++
//===----------------------------------------------------------------------===//

namespace {
LinkSpec linkFromAttr(LinkAttr link) {
  return {link.getBandwidth().convertToDouble(),
          link.getLatency().convertToDouble()};
}

std::map<int64_t, double> ratesFromAttr(ThreadRatesAttr rates) {
  std::map<int64_t, double> map;
  for (auto [t, v] : llvm::zip(rates.getThreads().asArrayRef(),
                               rates.getValues().asArrayRef()))
    map[t] = v;
  return map;
}

std::optional<DeviceCalibration> calibrationFromAttr(CalibrationAttr attr,
                                                     std::string &error) {
  DeviceCalibration cal;
  for (GemmRatesAttr g : attr.getGemm()) {
    GemmCalibration entry;
    entry.threads = g.getThreads();
    for (auto [size, flops] :
         llvm::zip(g.getSizes().asArrayRef(), g.getFlops().asArrayRef()))
      entry.flopsBySize.emplace_back(size, flops);
    for (int64_t i = 0; i < g.getLayouts().size(); ++i) {
      GemmShapePoint p;
      p.layout = static_cast<GemmLayout>(g.getLayouts()[i]);
      p.m = g.getM()[i];
      p.n = g.getN()[i];
      p.k = g.getK()[i];
      p.flops = g.getShapeFlops()[i];
      entry.shapes.push_back(p);
    }
    std::string why = indexGemmShapes(entry);
    if (!why.empty()) {
      error = "gemm " + g.getDtype().str() + " at " +
              std::to_string(g.getThreads()) + " threads: " + why;
      return std::nullopt;
    }
    cal.gemm[g.getDtype().str()].push_back(std::move(entry));
  }
  cal.memoryBandwidthByThreads = ratesFromAttr(attr.getMemoryBandwidth());
  cal.kernelOverheadS = attr.getKernelOverhead().convertToDouble();
  cal.gemmCallOverheadS = attr.getGemmCallOverhead().convertToDouble();
  cal.gemmCallFloorS = attr.getGemmCallFloor().convertToDouble();
  cal.stepOverheadS = attr.getStepOverhead().convertToDouble();
  cal.forkOverheadByThreads = ratesFromAttr(attr.getForkOverhead());
  for (LoopRatesAttr l : attr.getLoops()) {
    std::vector<std::pair<double, double>> points;
    for (auto [f, r] :
         llvm::zip(l.getFootprints().asArrayRef(), l.getRates().asArrayRef()))
      points.emplace_back(f, r);
    if (l.getThreads() == 1)
      cal.loopBandwidth[l.getKernelClass().str()] = std::move(points);
    else
      cal.loopBandwidthByThreads[l.getThreads()][l.getKernelClass().str()] =
          std::move(points);
  }
  cal.loopFlopsByThreads = ratesFromAttr(attr.getLoopFlops());
  cal.directConvTapByThreads = ratesFromAttr(attr.getDirectConvTap());
  cal.directConvNarrowTapByThreads =
      ratesFromAttr(attr.getDirectConvNarrowTap());
  cal.directConvTileByThreads = ratesFromAttr(attr.getDirectConvTile());
  return cal;
}
} // namespace

std::optional<ClusterSpec> dist::clusterFromAttr(ClusterAttr attr,
                                                 std::string &error) {
  ClusterSpec spec;
  spec.name = attr.getName().str();
  spec.source = "the module's dist.cluster";
  spec.interLink = linkFromAttr(attr.getInter());
  for (NodeAttr n : attr.getNodes()) {
    NodeSpec node;
    node.name = n.getName().str();
    node.count = n.getCount();
    node.intraLink = linkFromAttr(n.getIntra());
    for (DeviceAttr d : n.getDevices()) {
      DeviceSpec device;
      device.kind =
          d.getKind() == DeviceKind::GPU ? DevKind::GPU : DevKind::CPU;
      device.model = d.getModel().str();
      device.count = d.getCount();
      device.cores = d.getCores();
      device.memoryBytes = d.getMemory().convertToDouble();
      device.memoryBandwidthBytesPerS =
          d.getMemoryBandwidth().convertToDouble();
      device.pricePerHour = d.getPricePerHour().convertToDouble();
      device.isa = d.getIsa().str();
      for (NamedAttribute peak : d.getPeakFlops())
        device.peakFlops[peak.getName().str()] =
            cast<FloatAttr>(peak.getValue()).getValueAsDouble();
      if (CalibrationAttr cal = d.getCalibration()) {
        std::optional<DeviceCalibration> c = calibrationFromAttr(cal, error);
        if (!c) {
          error = "calibration of node '" + node.name + "': " + error;
          return std::nullopt;
        }
        device.calibration = std::move(*c);
      }
      node.devices.push_back(std::move(device));
    }
    spec.nodes.push_back(std::move(node));
  }
  return spec;
}
