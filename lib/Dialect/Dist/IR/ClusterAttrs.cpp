//===- ClusterAttrs.cpp - the typed unified cluster object ----------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Verifiers of `#dist.cluster` and its parts (`#dist.node`, `#dist.device`,
// `#dist.link`, `#dist.calibration` and its tables), which check the typed
// figures directly, and the cluster's own syntax: the typed form it prints,
// and the dictionary form with a cluster file's keys that earlier releases
// printed, still read (and checked key by key). The planner's C++ model of
// a cluster is converted to and from these in lib/Transforms/ClusterAttr.cpp;
// the dialect does not depend on the planner.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dist;

namespace {
double f64(const llvm::APFloat &v) { return v.convertToDouble(); }
bool positive(double v) { return v > 0 && std::isfinite(v); }
bool nonNegative(double v) { return v >= 0 && std::isfinite(v); }
} // namespace

/// The data types a peak or a calibration may name.
static bool isKnownDType(StringRef dtype) {
  return llvm::is_contained({"f64", "f32", "f16", "bf16", "i8"}, dtype);
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

LogicalResult LinkAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               llvm::APFloat bandwidth, llvm::APFloat latency) {
  if (!positive(f64(bandwidth)))
    return emitError() << "link bandwidth must be positive";
  if (!nonNegative(f64(latency)))
    return emitError() << "link latency must not be negative";
  return success();
}

LogicalResult
ThreadRatesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        DenseI64ArrayAttr threads, DenseF64ArrayAttr values) {
  if (threads.size() != values.size())
    return emitError() << "thread_rates has " << threads.size()
                       << " thread counts and " << values.size() << " values";
  for (int64_t i = 0; i < threads.size(); ++i) {
    if (threads[i] < 1 || (i > 0 && threads[i] <= threads[i - 1]))
      return emitError() << "thread_rates thread counts must be ascending "
                            "and at least 1";
    if (!nonNegative(values[i]))
      return emitError() << "thread_rates value at " << threads[i]
                         << " threads must not be negative";
  }
  return success();
}

LogicalResult
LoopRatesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      StringRef kernelClass, int64_t threads,
                      DenseF64ArrayAttr footprints, DenseF64ArrayAttr rates) {
  if (kernelClass.empty() || threads < 1)
    return emitError() << "loop_rates needs a kernel class and a thread count";
  if (footprints.size() != rates.size())
    return emitError() << "loop_rates of '" << kernelClass << "' has "
                       << footprints.size() << " footprints and "
                       << rates.size() << " rates";
  for (int64_t i = 0; i < footprints.size(); ++i) {
    if (!positive(footprints[i]) || !positive(rates[i]))
      return emitError() << "loop_rates of '" << kernelClass
                         << "' must be positive";
    if (i > 0 && footprints[i] < footprints[i - 1])
      return emitError() << "loop_rates of '" << kernelClass
                         << "' footprints must be ascending";
  }
  return success();
}

LogicalResult
GemmRatesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      StringRef dtype, int64_t threads, DenseF64ArrayAttr sizes,
                      DenseF64ArrayAttr flops, DenseI32ArrayAttr layouts,
                      DenseF64ArrayAttr m, DenseF64ArrayAttr n,
                      DenseF64ArrayAttr k, DenseF64ArrayAttr shapeFlops) {
  if (!isKnownDType(dtype))
    return emitError() << "gemm_rates has unknown data type '" << dtype << "'";
  if (threads < 1)
    return emitError() << "gemm_rates thread count must be at least 1";
  if (sizes.size() != flops.size())
    return emitError() << "gemm_rates has " << sizes.size() << " sizes and "
                       << flops.size() << " rates";
  for (int64_t i = 0; i < sizes.size(); ++i) {
    if (!positive(sizes[i]) || !positive(flops[i]))
      return emitError() << "gemm_rates sizes and rates must be positive";
    if (i > 0 && sizes[i] < sizes[i - 1])
      return emitError() << "gemm_rates sizes must be ascending";
  }
  int64_t points = layouts.size();
  if (m.size() != points || n.size() != points || k.size() != points ||
      shapeFlops.size() != points)
    return emitError() << "gemm_rates shape grid columns differ in length";
  for (int64_t i = 0; i < points; ++i) {
    if (layouts[i] < 0 || layouts[i] > 2)
      return emitError() << "gemm_rates layout must be 0 (nn), 1 (nt) or 2 "
                            "(tn), got "
                         << layouts[i];
    if (!positive(m[i]) || !positive(n[i]) || !positive(k[i]) ||
        !positive(shapeFlops[i]))
      return emitError() << "gemm_rates shape grid must be positive";
  }
  return success();
}

LogicalResult CalibrationAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, ArrayRef<GemmRatesAttr> gemm,
    ThreadRatesAttr memoryBandwidth, llvm::APFloat kernelOverhead,
    llvm::APFloat gemmCallOverhead, llvm::APFloat gemmCallFloor,
    llvm::APFloat stepOverhead, ThreadRatesAttr forkOverhead,
    ArrayRef<LoopRatesAttr> loops, ThreadRatesAttr loopFlops,
    ThreadRatesAttr directConvTap, ThreadRatesAttr directConvNarrowTap,
    ThreadRatesAttr directConvTile) {
  for (const llvm::APFloat &v :
       {kernelOverhead, gemmCallOverhead, gemmCallFloor, stepOverhead})
    if (!nonNegative(f64(v)))
      return emitError() << "calibration overheads must not be negative";
  if (!memoryBandwidth || !forkOverhead || !loopFlops || !directConvTap ||
      !directConvNarrowTap || !directConvTile)
    return emitError() << "calibration is missing a table";
  for (ThreadRatesAttr rates :
       {memoryBandwidth, directConvTap, directConvNarrowTap, loopFlops})
    for (double v : rates.getValues().asArrayRef())
      if (!positive(v))
        return emitError() << "calibration rates must be positive";
  return success();
}

LogicalResult DeviceAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, DeviceKind kind,
    StringRef model, int64_t count, int64_t cores, llvm::APFloat memory,
    llvm::APFloat memoryBandwidth, DictionaryAttr peakFlops,
    llvm::APFloat pricePerHour, StringRef isa, CalibrationAttr calibration) {
  if (count < 1 || cores < 1)
    return emitError() << "device count and cores must be at least 1";
  if (!positive(f64(memory)))
    return emitError() << "device memory must be positive";
  if (!positive(f64(memoryBandwidth)))
    return emitError() << "device memory bandwidth must be positive";
  if (!nonNegative(f64(pricePerHour)))
    return emitError() << "device price must not be negative";
  if (!peakFlops || peakFlops.empty())
    return emitError() << "device needs a peak FLOP/s for a data type";
  for (NamedAttribute peak : peakFlops) {
    auto value = dyn_cast<FloatAttr>(peak.getValue());
    if (!isKnownDType(peak.getName()))
      return emitError() << "device peak for unknown data type '"
                         << peak.getName().getValue() << "'";
    if (!value || !positive(value.getValueAsDouble()))
      return emitError() << "device peak for " << peak.getName().getValue()
                         << " must be positive";
  }
  return success();
}

LogicalResult NodeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               StringRef name, int64_t count,
                               ArrayRef<DeviceAttr> devices, LinkAttr intra) {
  if (count < 1)
    return emitError() << "node '" << name << "' count must be at least 1";
  if (devices.empty())
    return emitError() << "node '" << name << "' has no devices";
  if (!intra)
    return emitError() << "node '" << name << "' has no intra-node link";
  return success();
}

LogicalResult ClusterAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  StringRef name, ArrayRef<NodeAttr> nodes,
                                  LinkAttr inter) {
  if (nodes.empty())
    return emitError() << "cluster '" << name << "' has no nodes";
  if (!inter)
    return emitError() << "cluster '" << name << "' has no inter-node link";
  llvm::StringSet<> names;
  for (NodeAttr node : nodes)
    if (!names.insert(node.getName()).second)
      return emitError() << "cluster '" << name << "' has two nodes named '"
                         << node.getName() << "'";
  return success();
}

//===----------------------------------------------------------------------===//
// The dictionary form (a cluster file's keys)
//===----------------------------------------------------------------------===//

namespace {
/// Reads the dictionary form, reporting the first problem at the parser's
/// location (where the attribute starts).
class DictionaryReader {
public:
  DictionaryReader(AsmParser &parser, SMLoc loc)
      : parser(parser), ctx(parser.getContext()), b(ctx), loc(loc) {}

  ClusterAttr read(DictionaryAttr root);

private:
  InFlightDiagnostic error() { return parser.emitError(loc, "cluster: "); }
  bool checkKeys(DictionaryAttr dict, ArrayRef<StringRef> known,
                 const Twine &where);
  std::optional<double> number(DictionaryAttr dict, StringRef key,
                               const Twine &where, std::optional<double> def);
  std::optional<int64_t> integer(DictionaryAttr dict, StringRef key,
                                 const Twine &where, int64_t def);
  LinkAttr link(Attribute attr, const Twine &where);
  LinkAttr links(DictionaryAttr owner, StringRef key, const Twine &where,
                 double bandwidth, double latency);
  DeviceAttr device(Attribute attr, const Twine &where);
  CalibrationAttr calibration(Attribute attr, const Twine &where);
  ThreadRatesAttr threadRates(DictionaryAttr cal, StringRef key,
                              const Twine &where);
  /// [[a, b], ...] as two columns.
  bool pairs(Attribute attr, const Twine &where, SmallVectorImpl<double> &a,
             SmallVectorImpl<double> &b);

  AsmParser &parser;
  MLIRContext *ctx;
  Builder b;
  SMLoc loc;
};
} // namespace

static std::optional<double> asNumber(Attribute attr) {
  if (auto i = dyn_cast_or_null<IntegerAttr>(attr))
    return static_cast<double>(i.getValue().getSExtValue());
  if (auto f = dyn_cast_or_null<FloatAttr>(attr))
    return f.getValueAsDouble();
  return std::nullopt;
}

bool DictionaryReader::checkKeys(DictionaryAttr dict, ArrayRef<StringRef> known,
                                 const Twine &where) {
  for (NamedAttribute entry : dict)
    if (!llvm::is_contained(known, entry.getName().getValue())) {
      error() << "unknown key '" << entry.getName().getValue() << "' in "
              << where;
      return false;
    }
  return true;
}

std::optional<double> DictionaryReader::number(DictionaryAttr dict,
                                               StringRef key,
                                               const Twine &where,
                                               std::optional<double> def) {
  Attribute attr = dict.get(key);
  if (!attr) {
    if (!def)
      error() << where << " is missing field '" << key << "'";
    return def;
  }
  std::optional<double> v = asNumber(attr);
  if (!v)
    error() << key << " of " << where << " must be a number";
  return v;
}

std::optional<int64_t> DictionaryReader::integer(DictionaryAttr dict,
                                                 StringRef key,
                                                 const Twine &where,
                                                 int64_t def) {
  Attribute attr = dict.get(key);
  if (!attr)
    return def;
  auto i = dyn_cast<IntegerAttr>(attr);
  if (!i) {
    error() << key << " of " << where << " must be an integer";
    return std::nullopt;
  }
  return i.getValue().getSExtValue();
}

LinkAttr DictionaryReader::link(Attribute attr, const Twine &where) {
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict) {
    error() << where << " must be a dictionary";
    return {};
  }
  if (!checkKeys(dict, {"bandwidth", "latency"}, where))
    return {};
  std::optional<double> bw = number(dict, "bandwidth", where, std::nullopt);
  std::optional<double> lat = number(dict, "latency", where, 0.0);
  if (!bw || !lat)
    return {};
  return LinkAttr::getChecked([&] { return error(); }, ctx, llvm::APFloat(*bw),
                              llvm::APFloat(*lat));
}

LinkAttr DictionaryReader::links(DictionaryAttr owner, StringRef key,
                                 const Twine &where, double bandwidth,
                                 double latency) {
  auto defaults = [&] {
    return LinkAttr::get(ctx, llvm::APFloat(bandwidth), llvm::APFloat(latency));
  };
  Attribute attr = owner.get("links");
  if (!attr)
    return defaults();
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict) {
    error() << "links of " << where << " must be a dictionary";
    return {};
  }
  if (!checkKeys(dict, {key}, "links of " + where))
    return {};
  Attribute value = dict.get(key);
  return value ? link(value, key + " link of " + where) : defaults();
}

ThreadRatesAttr DictionaryReader::threadRates(DictionaryAttr cal, StringRef key,
                                              const Twine &where) {
  SmallVector<int64_t> threads;
  SmallVector<double> values;
  if (Attribute attr = cal.get(key)) {
    auto dict = dyn_cast<DictionaryAttr>(attr);
    if (!dict) {
      error() << key << " of " << where << " must be a dictionary";
      return {};
    }
    SmallVector<std::pair<int64_t, double>> entries;
    for (NamedAttribute entry : dict) {
      int64_t t = 0;
      std::optional<double> v = asNumber(entry.getValue());
      if (entry.getName().getValue().getAsInteger(10, t) || t < 1 || !v) {
        error() << key << " of " << where << " maps thread counts to numbers";
        return {};
      }
      entries.emplace_back(t, *v);
    }
    llvm::sort(entries);
    for (auto [t, v] : entries) {
      threads.push_back(t);
      values.push_back(v);
    }
  }
  return ThreadRatesAttr::getChecked([&] { return error(); }, ctx,
                                     b.getDenseI64ArrayAttr(threads),
                                     b.getDenseF64ArrayAttr(values));
}

bool DictionaryReader::pairs(Attribute attr, const Twine &where,
                             SmallVectorImpl<double> &a,
                             SmallVectorImpl<double> &bColumn) {
  auto list = dyn_cast<ArrayAttr>(attr);
  if (!list) {
    error() << where << " must be a list of [x, y] pairs";
    return false;
  }
  SmallVector<std::pair<double, double>> points;
  for (Attribute item : list) {
    auto pair = dyn_cast<ArrayAttr>(item);
    std::optional<double> x =
        pair && pair.size() == 2 ? asNumber(pair[0]) : std::optional<double>();
    std::optional<double> y = x ? asNumber(pair[1]) : std::nullopt;
    if (!x || !y) {
      error() << where << " must be a list of [x, y] pairs";
      return false;
    }
    points.emplace_back(*x, *y);
  }
  // Tables are looked up by x, as a cluster file's reader sorts them.
  llvm::stable_sort(points, [](auto l, auto r) { return l.first < r.first; });
  for (auto [x, y] : points) {
    a.push_back(x);
    bColumn.push_back(y);
  }
  return true;
}

CalibrationAttr DictionaryReader::calibration(Attribute attr,
                                              const Twine &whereIn) {
  std::string where = ("calibration of " + whereIn).str();
  auto cal = dyn_cast<DictionaryAttr>(attr);
  if (!cal) {
    error() << where << " must be a dictionary";
    return {};
  }
  if (!checkKeys(cal,
                 {"gemm", "memory_bandwidth", "kernel_overhead",
                  "gemm_call_overhead", "gemm_call_floor", "step_overhead",
                  "fork_overhead", "loop_bandwidth", "loop_bandwidth_threads",
                  "loop_flops", "direct_conv_tap", "direct_conv_narrow_tap",
                  "direct_conv_tile"},
                 where))
    return {};
  SmallVector<GemmRatesAttr> gemm;
  if (Attribute g = cal.get("gemm")) {
    auto byType = dyn_cast<DictionaryAttr>(g);
    if (!byType) {
      error() << "gemm of " << where << " must map data types to lists";
      return {};
    }
    for (NamedAttribute entry : byType) {
      auto list = dyn_cast<ArrayAttr>(entry.getValue());
      if (!list) {
        error() << "gemm of " << where << " must map data types to lists";
        return {};
      }
      for (Attribute item : list) {
        auto e = dyn_cast<DictionaryAttr>(item);
        std::string at =
            ("gemm " + entry.getName().getValue() + " of " + where).str();
        if (!e) {
          error() << at << " entries must be dictionaries";
          return {};
        }
        if (!checkKeys(e, {"threads", "flops_by_size", "shapes"}, at))
          return {};
        std::optional<int64_t> threads = integer(e, "threads", at, 1);
        SmallVector<double> sizes, flops, m, n, k, shapeFlops;
        SmallVector<int32_t> layouts;
        if (!threads || (e.get("flops_by_size") &&
                         !pairs(e.get("flops_by_size"),
                                "flops_by_size of " + at, sizes, flops)))
          return {};
        if (auto shapes = e.getAs<ArrayAttr>("shapes")) {
          for (Attribute s : shapes) {
            auto point = dyn_cast<ArrayAttr>(s);
            auto layout = point && point.size() == 5
                              ? dyn_cast<StringAttr>(point[0])
                              : StringAttr();
            int32_t code = !layout                     ? -1
                           : layout.getValue() == "nn" ? 0
                           : layout.getValue() == "nt" ? 1
                           : layout.getValue() == "tn" ? 2
                                                       : -1;
            std::optional<double> pm, pn, pk, pf;
            if (code >= 0) {
              pm = asNumber(point[1]);
              pn = asNumber(point[2]);
              pk = asNumber(point[3]);
              pf = asNumber(point[4]);
            }
            if (code < 0 || !pm || !pn || !pk || !pf) {
              error() << "shapes of " << at
                      << " must be [layout, m, n, k, flops] entries";
              return {};
            }
            layouts.push_back(code);
            m.push_back(*pm);
            n.push_back(*pn);
            k.push_back(*pk);
            shapeFlops.push_back(*pf);
          }
        }
        GemmRatesAttr rates = GemmRatesAttr::getChecked(
            [&] { return error(); }, ctx, entry.getName().getValue(), *threads,
            b.getDenseF64ArrayAttr(sizes), b.getDenseF64ArrayAttr(flops),
            b.getDenseI32ArrayAttr(layouts), b.getDenseF64ArrayAttr(m),
            b.getDenseF64ArrayAttr(n), b.getDenseF64ArrayAttr(k),
            b.getDenseF64ArrayAttr(shapeFlops));
        if (!rates)
          return {};
        gemm.push_back(rates);
      }
    }
  }
  SmallVector<LoopRatesAttr> loops;
  auto loopTable = [&](Attribute table, int64_t threads,
                       const Twine &at) -> bool {
    auto byClass = dyn_cast<DictionaryAttr>(table);
    if (!byClass) {
      error() << at << " must map kernel classes to lists";
      return false;
    }
    for (NamedAttribute entry : byClass) {
      SmallVector<double> footprints, rates;
      if (!pairs(entry.getValue(), entry.getName().getValue() + " of " + at,
                 footprints, rates))
        return false;
      LoopRatesAttr l = LoopRatesAttr::getChecked(
          [&] { return error(); }, ctx, entry.getName().getValue(), threads,
          b.getDenseF64ArrayAttr(footprints), b.getDenseF64ArrayAttr(rates));
      if (!l)
        return false;
      loops.push_back(l);
    }
    return true;
  };
  if (Attribute t = cal.get("loop_bandwidth"))
    if (!loopTable(t, 1, "loop_bandwidth of " + where))
      return {};
  if (Attribute t = cal.get("loop_bandwidth_threads")) {
    auto byThreads = dyn_cast<DictionaryAttr>(t);
    if (!byThreads) {
      error() << "loop_bandwidth_threads of " << where
              << " must map thread counts to tables";
      return {};
    }
    for (NamedAttribute entry : byThreads) {
      int64_t threads = 0;
      if (entry.getName().getValue().getAsInteger(10, threads) || threads < 2) {
        error() << "loop_bandwidth_threads of " << where
                << " must map thread counts of 2 or more to tables";
        return {};
      }
      if (!loopTable(entry.getValue(), threads,
                     "loop_bandwidth_threads of " + where))
        return {};
    }
  }
  std::optional<double> kernel = number(cal, "kernel_overhead", where, 0.0);
  std::optional<double> call = number(cal, "gemm_call_overhead", where, 0.0);
  std::optional<double> floor = number(cal, "gemm_call_floor", where, 0.0);
  std::optional<double> step = number(cal, "step_overhead", where, 0.0);
  if (!kernel || !call || !floor || !step)
    return {};
  ThreadRatesAttr tables[6];
  const char *keys[] = {
      "memory_bandwidth", "fork_overhead",          "loop_flops",
      "direct_conv_tap",  "direct_conv_narrow_tap", "direct_conv_tile"};
  for (int i = 0; i < 6; ++i)
    if (!(tables[i] = threadRates(cal, keys[i], where)))
      return {};
  return CalibrationAttr::getChecked(
      [&] { return error(); }, ctx, ArrayRef<GemmRatesAttr>(gemm), tables[0],
      llvm::APFloat(*kernel), llvm::APFloat(*call), llvm::APFloat(*floor),
      llvm::APFloat(*step), tables[1], ArrayRef<LoopRatesAttr>(loops),
      tables[2], tables[3], tables[4], tables[5]);
}

DeviceAttr DictionaryReader::device(Attribute attr, const Twine &where) {
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict) {
    error() << where << " must be a dictionary";
    return {};
  }
  if (!checkKeys(dict,
                 {"kind", "model", "count", "cores", "memory", "peak_flops",
                  "memory_bandwidth", "price_per_hour", "isa", "calibration"},
                 where))
    return {};
  auto kindName = dict.getAs<StringAttr>("kind");
  std::optional<DeviceKind> kind =
      kindName ? symbolizeDeviceKind(kindName.getValue()) : std::nullopt;
  if (!kind) {
    error() << "kind of " << where << " must be cpu or gpu";
    return {};
  }
  auto model = dict.getAs<StringAttr>("model");
  auto isa = dict.getAs<StringAttr>("isa");
  std::optional<int64_t> count = integer(dict, "count", where, 1);
  std::optional<int64_t> cores = integer(dict, "cores", where, 1);
  std::optional<double> memory = number(dict, "memory", where, std::nullopt);
  std::optional<double> bandwidth =
      number(dict, "memory_bandwidth", where, std::nullopt);
  std::optional<double> price = number(dict, "price_per_hour", where, 0.0);
  if (!count || !cores || !memory || !bandwidth || !price)
    return {};
  auto peaks = dict.getAs<DictionaryAttr>("peak_flops");
  if (!peaks) {
    error() << where << " is missing field 'peak_flops'";
    return {};
  }
  SmallVector<NamedAttribute> typedPeaks;
  for (NamedAttribute peak : peaks) {
    std::optional<double> v = asNumber(peak.getValue());
    if (!v) {
      error() << "peak_flops of " << where
              << " must map data types to "
                 "numbers";
      return {};
    }
    typedPeaks.push_back(b.getNamedAttr(peak.getName(), b.getF64FloatAttr(*v)));
  }
  CalibrationAttr cal;
  if (Attribute c = dict.get("calibration"))
    if (!(cal = calibration(c, where)))
      return {};
  return DeviceAttr::getChecked(
      [&] { return error(); }, ctx, *kind,
      model ? model.getValue() : StringRef(), *count, *cores,
      llvm::APFloat(*memory), llvm::APFloat(*bandwidth),
      b.getDictionaryAttr(typedPeaks), llvm::APFloat(*price),
      isa ? isa.getValue() : StringRef(), cal);
}

ClusterAttr DictionaryReader::read(DictionaryAttr root) {
  if (!checkKeys(root, {"name", "nodes", "links"}, "the cluster"))
    return {};
  auto name = root.getAs<StringAttr>("name");
  StringRef clusterName = name ? name.getValue() : "cluster";
  auto nodeList = root.getAs<ArrayAttr>("nodes");
  if (!nodeList) {
    error() << "the cluster is missing field 'nodes'";
    return {};
  }
  SmallVector<NodeAttr> nodes;
  for (auto [i, item] : llvm::enumerate(nodeList)) {
    auto dict = dyn_cast<DictionaryAttr>(item);
    if (!dict) {
      error() << "node " << i << " must be a dictionary";
      return {};
    }
    auto nodeName = dict.getAs<StringAttr>("name");
    std::string where = nodeName ? ("node '" + nodeName.getValue() + "'").str()
                                 : "node " + std::to_string(i);
    if (!checkKeys(dict, {"name", "count", "devices", "links"}, where))
      return {};
    std::optional<int64_t> count = integer(dict, "count", where, 1);
    auto deviceList = dict.getAs<ArrayAttr>("devices");
    if (!count)
      return {};
    if (!deviceList) {
      error() << where << " is missing field 'devices'";
      return {};
    }
    SmallVector<DeviceAttr> devices;
    for (auto [d, deviceItem] : llvm::enumerate(deviceList)) {
      DeviceAttr device =
          this->device(deviceItem, "device " + Twine(d) + " of " + where);
      if (!device)
        return {};
      devices.push_back(device);
    }
    // A cluster file's defaults: a link inside a node of 10 GB/s, 5 us.
    LinkAttr intra = links(dict, "intra", where, 10e9, 5e-6);
    if (!intra)
      return {};
    NodeAttr node =
        NodeAttr::getChecked([&] { return error(); }, ctx,
                             nodeName ? nodeName.getValue() : StringRef(where),
                             *count, ArrayRef<DeviceAttr>(devices), intra);
    if (!node)
      return {};
    nodes.push_back(node);
  }
  // Between nodes: 1.25 GB/s, 50 us.
  LinkAttr inter = links(root, "inter", "the cluster", 1.25e9, 50e-6);
  if (!inter)
    return {};
  return ClusterAttr::getChecked([&] { return error(); }, ctx, clusterName,
                                 ArrayRef<NodeAttr>(nodes), inter);
}

//===----------------------------------------------------------------------===//
// Syntax
//===----------------------------------------------------------------------===//

Attribute ClusterAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess())
    return {};
  // The dictionary form.
  if (succeeded(parser.parseOptionalLBrace())) {
    NamedAttrList entries;
    if (failed(parser.parseOptionalRBrace())) {
      do {
        std::string key;
        Attribute value;
        if (parser.parseKeywordOrString(&key) || parser.parseEqual() ||
            parser.parseAttribute(value))
          return {};
        entries.append(key, value);
      } while (succeeded(parser.parseOptionalComma()));
      if (parser.parseRBrace())
        return {};
    }
    if (parser.parseGreater())
      return {};
    return DictionaryReader(parser, loc)
        .read(entries.getDictionary(parser.getContext()));
  }
  // The typed form: name = "...", nodes = [...], inter = #dist.link<...>.
  std::string name;
  SmallVector<NodeAttr> nodes;
  LinkAttr inter;
  if (parser.parseKeyword("name") || parser.parseEqual() ||
      parser.parseString(&name) || parser.parseComma() ||
      parser.parseKeyword("nodes") || parser.parseEqual() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&]() -> ParseResult {
                                       NodeAttr node;
                                       if (parser.parseAttribute(node))
                                         return failure();
                                       nodes.push_back(node);
                                       return success();
                                     }) ||
      parser.parseComma() || parser.parseKeyword("inter") ||
      parser.parseEqual() || parser.parseAttribute(inter) ||
      parser.parseGreater())
    return {};
  return ClusterAttr::getChecked([&] { return parser.emitError(loc); },
                                 parser.getContext(), StringRef(name),
                                 ArrayRef<NodeAttr>(nodes), inter);
}

void ClusterAttr::print(AsmPrinter &printer) const {
  printer << "<name = ";
  printer.printString(getName());
  printer << ", nodes = [";
  llvm::interleaveComma(getNodes(), printer,
                        [&](NodeAttr node) { printer.printAttribute(node); });
  printer << "], inter = ";
  printer.printAttribute(getInter());
  printer << ">";
}
