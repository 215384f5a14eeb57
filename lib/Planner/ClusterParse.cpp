//===- ClusterParse.cpp - Reading cluster files ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reading cluster files (YAML, and JSON as the subset of YAML it is) with
// llvm::yaml::Stream and checking them against the schema with one-line
// "<file>:<line>:<col>: <what>" errors: unknown keys with a suggestion,
// missing fields, numbers with the wrong units, malformed calibration
// tables. loadClusterFile and parseCluster; clusterFromJson uses the same
// parser (ClusterWrite.cpp).
//
//===----------------------------------------------------------------------===//

#include "ClusterInternal.h"
#include "dist/Planner/Cluster.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <algorithm>
#include <tuple>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::cluster_file;
using llvm::SMLoc;
using llvm::StringRef;
using llvm::Twine;

//===----------------------------------------------------------------------===//
// Defaults
//===----------------------------------------------------------------------===//

/// Links used when a cluster file does not give them.
static constexpr double defaultIntraBandwidthBytesPerS = 10e9;
static constexpr double defaultIntraLatencyS = 5e-6;
static constexpr double defaultInterBandwidthBytesPerS = 1.25e9;
static constexpr double defaultInterLatencyS = 50e-6;

/// Data types a peak or a calibration may be given for.
static const StringRef dataTypes[] = {"f64", "f32", "f16", "bf16", "i8"};

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {
/// A YAML node copied out of the streaming llvm::yaml parser, so that the
/// schema checks can look fields up in any order.
struct YamlValue {
  enum class Kind { Null, Scalar, Map, Seq };
  Kind kind = Kind::Null;
  /// The text of a scalar, quotes and escapes resolved.
  std::string scalar;
  /// Where the value is. A collection or null that is the value of a map
  /// entry points at its key, which reads better in messages.
  SMLoc loc;
  /// For map entries: the key and where it is.
  std::string key;
  SMLoc keyLoc;
  /// Entries of a map (in order) or items of a sequence.
  std::vector<YamlValue> children;

  const YamlValue *lookup(StringRef name) const {
    for (const YamlValue &child : children)
      if (child.key == name)
        return &child;
    return nullptr;
  }
};

/// Turns the text of a cluster file into a ClusterSpec. The first error,
/// YAML syntax or schema, is kept in `error`.
class ClusterParser {
public:
  ClusterParser(llvm::SourceMgr &sourceMgr, StringRef sourceName)
      : sourceMgr(sourceMgr), sourceName(sourceName.str()) {}

  std::optional<ClusterSpec> parse(StringRef text);

  std::string error;

private:
  static void handleDiagnostic(const llvm::SMDiagnostic &diag, void *context);

  bool fail(SMLoc loc, const Twine &message);
  bool convert(llvm::yaml::Node *node, SMLoc fallback, YamlValue &out);

  bool checkKeys(const YamlValue &map, llvm::ArrayRef<StringRef> known,
                 const std::string &where);
  bool expectMap(const YamlValue &value, StringRef field);
  bool expectSeq(const YamlValue &value, StringRef field);
  bool readString(const YamlValue &value, StringRef field, std::string &out);
  bool readInt(const YamlValue &value, StringRef field, int64_t minValue,
               int64_t &out);
  bool readQuantity(const YamlValue &value, StringRef field, UnitKind unit,
                    bool allowZero, double &out);

  bool parseNode(const YamlValue &value, size_t index, NodeSpec &node);
  bool parseDevice(const YamlValue &value, const std::string &where,
                   DeviceSpec &device);
  bool parseLink(const YamlValue &value, StringRef name, LinkSpec &link);
  bool parseCalibration(const YamlValue &value, DeviceCalibration &calibration);
  /// A map from thread counts (at least `minThreads`) to quantities of
  /// `unit` (memory_bandwidth, fork_overhead).
  bool parseThreadMap(const YamlValue &value, const std::string &field,
                      int64_t minThreads, UnitKind unit, bool allowZero,
                      std::map<int64_t, double> &out);
  /// The thread count a per-thread-count map's `entry` is keyed by: at
  /// least `min`, not `taken` already (`field` names the map in errors).
  bool readThreadKey(const YamlValue &entry, int64_t min,
                     const std::string &field,
                     llvm::function_ref<bool(int64_t)> taken, int64_t &threads);
  /// A loop_bandwidth table: kernel class -> [[footprint, bandwidth], ...].
  bool parseLoopTable(
      const YamlValue &value, const std::string &field,
      std::map<std::string, std::vector<std::pair<double, double>>> &table);

  llvm::SourceMgr &sourceMgr;
  std::string sourceName;
};
} // namespace

/// " (did you mean 'x'?)" for the closest of `candidates` within an edit
/// distance of 2, or "".
static std::string suggest(StringRef word,
                           llvm::ArrayRef<StringRef> candidates) {
  StringRef best;
  unsigned bestDistance = 3;
  for (StringRef candidate : candidates) {
    unsigned distance = word.edit_distance(candidate, true, 2);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best.empty())
    return "";
  return (" (did you mean '" + best + "'?)").str();
}

/// Whether `text` holds nothing but blank lines and comments.
static bool isBlank(StringRef text) {
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    line = line.trim();
    if (!line.empty() && !line.starts_with("#"))
      return false;
    text = rest;
  }
  return true;
}

/// Makes a message one line, lower-case first, without trailing period.
static std::string normalizeMessage(StringRef message) {
  std::string result = message.trim().str();
  for (char &c : result)
    if (c == '\n' || c == '\r')
      c = ' ';
  while (!result.empty() && (result.back() == '.' || result.back() == '!'))
    result.pop_back();
  if (result.size() >= 2 && llvm::isUpper(result[0]) &&
      !llvm::isUpper(result[1]))
    result[0] = llvm::toLower(result[0]);
  return result;
}

void ClusterParser::handleDiagnostic(const llvm::SMDiagnostic &diag,
                                     void *context) {
  auto *self = static_cast<ClusterParser *>(context);
  if (!self->error.empty())
    return;
  int line = std::max(diag.getLineNo(), 1);
  int column = std::max(diag.getColumnNo() + 1, 1);
  self->error = (Twine(self->sourceName) + ":" + Twine(line) + ":" +
                 Twine(column) + ": " + normalizeMessage(diag.getMessage()))
                    .str();
}

bool ClusterParser::fail(SMLoc loc, const Twine &message) {
  if (!error.empty())
    return false;
  unsigned line = 1, column = 1;
  if (loc.isValid() && sourceMgr.FindBufferContainingLoc(loc))
    std::tie(line, column) = sourceMgr.getLineAndColumn(loc);
  error = (Twine(sourceName) + ":" + Twine(line) + ":" + Twine(column) + ": " +
           normalizeMessage(message.str()))
              .str();
  return false;
}

bool ClusterParser::convert(llvm::yaml::Node *node, SMLoc fallback,
                            YamlValue &out) {
  out.loc = fallback;
  if (!node || llvm::isa<llvm::yaml::NullNode>(node)) {
    out.kind = YamlValue::Kind::Null;
    return true;
  }
  SMLoc start = node->getSourceRange().Start;
  if (start.isValid())
    out.loc = start;

  if (auto *scalar = llvm::dyn_cast<llvm::yaml::ScalarNode>(node)) {
    llvm::SmallString<64> storage;
    out.kind = YamlValue::Kind::Scalar;
    out.scalar = scalar->getValue(storage).str();
    return true;
  }
  if (auto *block = llvm::dyn_cast<llvm::yaml::BlockScalarNode>(node)) {
    out.kind = YamlValue::Kind::Scalar;
    out.scalar = block->getValue().str();
    return true;
  }
  if (auto *map = llvm::dyn_cast<llvm::yaml::MappingNode>(node)) {
    out.kind = YamlValue::Kind::Map;
    for (llvm::yaml::KeyValueNode &entry : *map) {
      llvm::yaml::Node *keyNode = entry.getKey();
      if (!keyNode || !error.empty())
        return false;
      auto *keyScalar = llvm::dyn_cast<llvm::yaml::ScalarNode>(keyNode);
      if (!keyScalar) {
        SMLoc keyLoc = keyNode->getSourceRange().Start;
        return fail(keyLoc.isValid() ? keyLoc : out.loc,
                    "expected a scalar key");
      }
      YamlValue child;
      llvm::SmallString<64> storage;
      child.key = keyScalar->getValue(storage).str();
      child.keyLoc = keyScalar->getSourceRange().Start;
      if (!convert(entry.getValue(), child.keyLoc, child))
        return false;
      if (child.kind != YamlValue::Kind::Scalar)
        child.loc = child.keyLoc;
      out.children.push_back(std::move(child));
    }
    return error.empty();
  }
  if (auto *seq = llvm::dyn_cast<llvm::yaml::SequenceNode>(node)) {
    out.kind = YamlValue::Kind::Seq;
    for (llvm::yaml::Node &item : *seq) {
      YamlValue child;
      if (!convert(&item, out.loc, child))
        return false;
      out.children.push_back(std::move(child));
    }
    return error.empty();
  }
  if (llvm::isa<llvm::yaml::AliasNode>(node))
    return fail(out.loc, "yaml aliases are not supported");
  return fail(out.loc, "unsupported yaml node");
}

bool ClusterParser::checkKeys(const YamlValue &map,
                              llvm::ArrayRef<StringRef> known,
                              const std::string &where) {
  for (size_t i = 0, e = map.children.size(); i < e; ++i) {
    const YamlValue &entry = map.children[i];
    if (!llvm::is_contained(known, StringRef(entry.key)))
      return fail(entry.keyLoc, "unknown key '" + entry.key + "' in " + where +
                                    suggest(entry.key, known));
    for (size_t j = 0; j < i; ++j)
      if (map.children[j].key == entry.key)
        return fail(entry.keyLoc,
                    "duplicate key '" + entry.key + "' in " + where);
  }
  return true;
}

bool ClusterParser::expectMap(const YamlValue &value, StringRef field) {
  if (value.kind != YamlValue::Kind::Map)
    return fail(value.loc, "expected a mapping for '" + field + "'");
  return true;
}

bool ClusterParser::expectSeq(const YamlValue &value, StringRef field) {
  if (value.kind != YamlValue::Kind::Seq)
    return fail(value.loc, "expected a list for '" + field + "'");
  return true;
}

bool ClusterParser::readString(const YamlValue &value, StringRef field,
                               std::string &out) {
  if (value.kind != YamlValue::Kind::Scalar)
    return fail(value.loc, "expected a string for '" + field + "'");
  // Names and models end up in reports, plan.json and plan.html: text only
  // (bytes that are not UTF-8 do not survive being written as JSON and read
  // back; control characters other than tabs cut or garble the reports).
  if (!llvm::json::isUTF8(value.scalar) ||
      llvm::any_of(value.scalar, [](char c) {
        return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f;
      }))
    return fail(value.loc, "'" + field +
                               "' must be UTF-8 text without control "
                               "characters");
  out = value.scalar;
  return true;
}

bool ClusterParser::readInt(const YamlValue &value, StringRef field,
                            int64_t minValue, int64_t &out) {
  int64_t result = 0;
  if (value.kind != YamlValue::Kind::Scalar ||
      StringRef(value.scalar).trim().getAsInteger(10, result))
    return fail(value.loc, "expected an integer for '" + field + "'");
  if (result < minValue)
    return fail(value.loc, field + " must be at least " + Twine(minValue));
  out = result;
  return true;
}

bool ClusterParser::readQuantity(const YamlValue &value, StringRef field,
                                 UnitKind unit, bool allowZero, double &out) {
  if (value.kind != YamlValue::Kind::Scalar)
    return fail(value.loc, "expected a number for '" + field + "'");
  double result = 0;
  StringRef unitText;
  switch (parseQuantity(value.scalar, unit, result, unitText)) {
  case QuantityStatus::Ok:
    break;
  case QuantityStatus::NotANumber:
    return fail(value.loc, "expected a number for '" + field + "'");
  case QuantityStatus::BadUnit:
    return fail(value.loc, "unknown unit '" + unitText + "' in '" +
                               StringRef(value.scalar).trim() + "'");
  case QuantityStatus::OutOfRange:
    return fail(value.loc, "'" + field + "' is out of range");
  }
  if (allowZero ? result < 0 : result <= 0)
    return fail(value.loc, field + (allowZero ? " must not be negative"
                                              : " must be positive"));
  out = result;
  return true;
}

bool ClusterParser::parseLink(const YamlValue &value, StringRef name,
                              LinkSpec &link) {
  if (!expectMap(value, name))
    return false;
  std::string where = ("link '" + name + "'").str();
  if (!checkKeys(value, {"bandwidth", "latency"}, where))
    return false;
  const YamlValue *bandwidth = value.lookup("bandwidth");
  if (!bandwidth)
    return fail(value.loc, where + " is missing field 'bandwidth'");
  const YamlValue *latency = value.lookup("latency");
  if (!latency)
    return fail(value.loc, where + " is missing field 'latency'");
  return readQuantity(*bandwidth, "bandwidth", UnitKind::Bandwidth,
                      /*allowZero=*/false, link.bandwidthBytesPerS) &&
         readQuantity(*latency, "latency", UnitKind::Time,
                      /*allowZero=*/true, link.latencyS);
}

bool ClusterParser::readThreadKey(const YamlValue &entry, int64_t min,
                                  const std::string &field,
                                  llvm::function_ref<bool(int64_t)> taken,
                                  int64_t &threads) {
  if (StringRef(entry.key).trim().getAsInteger(10, threads) || threads < min)
    return fail(entry.keyLoc,
                "expected a thread count >= " + std::to_string(min) +
                    ", got '" + entry.key + "'");
  if (taken(threads))
    return fail(entry.keyLoc,
                "duplicate thread count '" + entry.key + "' in " + field);
  return true;
}

bool ClusterParser::parseLoopTable(
    const YamlValue &value, const std::string &field,
    std::map<std::string, std::vector<std::pair<double, double>>> &table) {
  if (!expectMap(value, field) ||
      !checkKeys(value,
                 {"elementwise", "reduction", "movement", "window", "in_place"},
                 field))
    return false;
  for (const YamlValue &perClass : value.children) {
    std::string where = field + "." + perClass.key;
    if (!expectSeq(perClass, where))
      return false;
    auto &points = table[perClass.key];
    for (const YamlValue &pair : perClass.children) {
      if (pair.kind != YamlValue::Kind::Seq || pair.children.size() != 2)
        return fail(pair.loc, "expected a [footprint, bandwidth] pair in '" +
                                  where + "'");
      double footprint = 0, bytesPerS = 0;
      if (!readQuantity(pair.children[0], "footprint", UnitKind::Size,
                        /*allowZero=*/false, footprint) ||
          !readQuantity(pair.children[1], "bandwidth", UnitKind::Bandwidth,
                        /*allowZero=*/false, bytesPerS))
        return false;
      points.emplace_back(footprint, bytesPerS);
    }
    std::sort(points.begin(), points.end());
  }
  return true;
}

bool ClusterParser::parseThreadMap(const YamlValue &value,
                                   const std::string &field, int64_t minThreads,
                                   UnitKind unit, bool allowZero,
                                   std::map<int64_t, double> &out) {
  if (!expectMap(value, field))
    return false;
  for (const YamlValue &entry : value.children) {
    int64_t threads = 0;
    if (!readThreadKey(
            entry, minThreads, field,
            [&](int64_t t) { return out.count(t) != 0; }, threads))
      return false;
    double quantity = 0;
    if (!readQuantity(entry, field, unit, allowZero, quantity))
      return false;
    out[threads] = quantity;
  }
  return true;
}

bool ClusterParser::parseCalibration(const YamlValue &value,
                                     DeviceCalibration &calibration) {
  if (!expectMap(value, "calibration") ||
      !checkKeys(value,
                 {"gemm", "memory_bandwidth", "kernel_overhead",
                  "gemm_call_overhead", "gemm_call_floor", "fork_overhead",
                  "step_overhead", "loop_bandwidth", "loop_bandwidth_threads",
                  "loop_flops", kDirectConvMaps[0].key, kDirectConvMaps[1].key,
                  kDirectConvMaps[2].key},
                 "calibration"))
    return false;

  if (const YamlValue *gemm = value.lookup("gemm")) {
    if (!expectMap(*gemm, "gemm") || !checkKeys(*gemm, dataTypes, "gemm"))
      return false;
    for (const YamlValue &perType : gemm->children) {
      std::string field = "gemm." + perType.key;
      if (!expectSeq(perType, field))
        return false;
      std::vector<GemmCalibration> &entries = calibration.gemm[perType.key];
      for (const YamlValue &item : perType.children) {
        GemmCalibration entry;
        if (!expectMap(item, field) ||
            !checkKeys(item, {"threads", "flops_by_size", "shapes"},
                       "gemm entry"))
          return false;
        if (const YamlValue *threads = item.lookup("threads"))
          if (!readInt(*threads, "threads", 1, entry.threads))
            return false;
        if (const YamlValue *bySize = item.lookup("flops_by_size")) {
          if (!expectSeq(*bySize, "flops_by_size"))
            return false;
          for (const YamlValue &pair : bySize->children) {
            if (pair.kind != YamlValue::Kind::Seq || pair.children.size() != 2)
              return fail(pair.loc,
                          "expected a [size, flops] pair in 'flops_by_size'");
            double size = 0, flops = 0;
            if (!readQuantity(pair.children[0], "size", UnitKind::None,
                              /*allowZero=*/false, size) ||
                !readQuantity(pair.children[1], "flops", UnitKind::Flops,
                              /*allowZero=*/false, flops))
              return false;
            entry.flopsBySize.emplace_back(size, flops);
          }
          std::sort(entry.flopsBySize.begin(), entry.flopsBySize.end());
        }
        if (const YamlValue *shapes = item.lookup("shapes")) {
          if (!expectSeq(*shapes, "shapes"))
            return false;
          for (const YamlValue &point : shapes->children) {
            const char *expected =
                "expected a [layout, m, n, k, flops] list in 'shapes' "
                "(layout nn, nt or tn)";
            if (point.kind != YamlValue::Kind::Seq ||
                point.children.size() != 5 ||
                point.children[0].kind != YamlValue::Kind::Scalar)
              return fail(point.loc, expected);
            std::optional<GemmLayout> layout =
                parseGemmLayout(point.children[0].scalar);
            if (!layout)
              return fail(point.children[0].loc, expected);
            GemmShapePoint p;
            p.layout = *layout;
            if (!readQuantity(point.children[1], "m", UnitKind::None,
                              /*allowZero=*/false, p.m) ||
                !readQuantity(point.children[2], "n", UnitKind::None,
                              /*allowZero=*/false, p.n) ||
                !readQuantity(point.children[3], "k", UnitKind::None,
                              /*allowZero=*/false, p.k) ||
                !readQuantity(point.children[4], "flops", UnitKind::Flops,
                              /*allowZero=*/false, p.flops))
              return false;
            entry.shapes.push_back(p);
          }
          std::string gridError = indexGemmShapes(entry);
          if (!gridError.empty())
            return fail(shapes->loc, "'shapes': " + gridError);
        }
        entries.push_back(std::move(entry));
      }
    }
  }

  if (const YamlValue *bandwidth = value.lookup("memory_bandwidth"))
    if (!parseThreadMap(*bandwidth, "memory_bandwidth", 1, UnitKind::Bandwidth,
                        /*allowZero=*/false,
                        calibration.memoryBandwidthByThreads))
      return false;

  if (const YamlValue *loops = value.lookup("loop_bandwidth"))
    if (!parseLoopTable(*loops, "loop_bandwidth", calibration.loopBandwidth))
      return false;
  if (const YamlValue *byThreads = value.lookup("loop_bandwidth_threads")) {
    if (!expectMap(*byThreads, "loop_bandwidth_threads"))
      return false;
    for (const YamlValue &entry : byThreads->children) {
      int64_t threads = 0;
      if (!readThreadKey(
              entry, 2, "loop_bandwidth_threads",
              [&](int64_t t) {
                return calibration.loopBandwidthByThreads.count(t) != 0;
              },
              threads))
        return false;
      if (!parseLoopTable(entry, "loop_bandwidth_threads." + entry.key,
                          calibration.loopBandwidthByThreads[threads]))
        return false;
    }
  }

  if (const YamlValue *flops = value.lookup("loop_flops"))
    if (!parseThreadMap(*flops, "loop_flops", 1, UnitKind::Flops,
                        /*allowZero=*/false, calibration.loopFlopsByThreads))
      return false;
  for (const CalibrationThreadMap &m : kDirectConvMaps)
    if (const YamlValue *map = value.lookup(m.key))
      if (!parseThreadMap(*map, m.key, 1, UnitKind::Time, m.allowZero,
                          calibration.*m.field))
        return false;
  if (const YamlValue *fork = value.lookup("fork_overhead"))
    if (!parseThreadMap(*fork, "fork_overhead", 2, UnitKind::Time,
                        /*allowZero=*/true, calibration.forkOverheadByThreads))
      return false;
  if (const YamlValue *overhead = value.lookup("kernel_overhead"))
    if (!readQuantity(*overhead, "kernel_overhead", UnitKind::Time,
                      /*allowZero=*/true, calibration.kernelOverheadS))
      return false;
  if (const YamlValue *overhead = value.lookup("step_overhead"))
    if (!readQuantity(*overhead, "step_overhead", UnitKind::Time,
                      /*allowZero=*/true, calibration.stepOverheadS))
      return false;
  if (const YamlValue *overhead = value.lookup("gemm_call_overhead"))
    if (!readQuantity(*overhead, "gemm_call_overhead", UnitKind::Time,
                      /*allowZero=*/true, calibration.gemmCallOverheadS))
      return false;
  if (const YamlValue *floor = value.lookup("gemm_call_floor"))
    if (!readQuantity(*floor, "gemm_call_floor", UnitKind::Time,
                      /*allowZero=*/true, calibration.gemmCallFloorS))
      return false;
  return true;
}

bool ClusterParser::parseDevice(const YamlValue &value,
                                const std::string &where, DeviceSpec &device) {
  if (value.kind != YamlValue::Kind::Map)
    return fail(value.loc, "expected a mapping for " + where);
  if (!checkKeys(value,
                 {"kind", "model", "count", "cores", "memory", "peak_flops",
                  "memory_bandwidth", "price_per_hour", "isa", "calibration"},
                 where))
    return false;
  for (StringRef required :
       {"kind", "memory", "peak_flops", "memory_bandwidth"})
    if (!value.lookup(required))
      return fail(value.loc, where + " is missing field '" + required + "'");

  const YamlValue &kindValue = *value.lookup("kind");
  std::string kind;
  if (!readString(kindValue, "kind", kind))
    return false;
  if (kind == "cpu")
    device.kind = DevKind::CPU;
  else if (kind == "gpu")
    device.kind = DevKind::GPU;
  else
    return fail(kindValue.loc,
                "unknown device kind '" + kind + "' (expected cpu or gpu)");

  if (const YamlValue *model = value.lookup("model"))
    if (!readString(*model, "model", device.model))
      return false;
  if (const YamlValue *count = value.lookup("count"))
    if (!readInt(*count, "count", 1, device.count))
      return false;
  if (const YamlValue *cores = value.lookup("cores"))
    if (!readInt(*cores, "cores", 1, device.cores))
      return false;
  if (!readQuantity(*value.lookup("memory"), "memory", UnitKind::Size,
                    /*allowZero=*/false, device.memoryBytes))
    return false;

  const YamlValue &peaks = *value.lookup("peak_flops");
  if (!expectMap(peaks, "peak_flops") ||
      !checkKeys(peaks, dataTypes, "peak_flops"))
    return false;
  if (peaks.children.empty())
    return fail(peaks.loc, "peak_flops must not be empty");
  for (const YamlValue &peak : peaks.children) {
    double flops = 0;
    if (!readQuantity(peak, "peak_flops." + peak.key, UnitKind::Flops,
                      /*allowZero=*/false, flops))
      return false;
    device.peakFlops[peak.key] = flops;
  }

  if (!readQuantity(*value.lookup("memory_bandwidth"), "memory_bandwidth",
                    UnitKind::Bandwidth, /*allowZero=*/false,
                    device.memoryBandwidthBytesPerS))
    return false;
  if (const YamlValue *price = value.lookup("price_per_hour"))
    if (!readQuantity(*price, "price_per_hour", UnitKind::None,
                      /*allowZero=*/true, device.pricePerHour))
      return false;
  if (const YamlValue *isa = value.lookup("isa"))
    if (!readString(*isa, "isa", device.isa))
      return false;
  if (const YamlValue *calibration = value.lookup("calibration")) {
    DeviceCalibration parsed;
    if (!parseCalibration(*calibration, parsed))
      return false;
    device.calibration = std::move(parsed);
  }
  return true;
}

bool ClusterParser::parseNode(const YamlValue &value, size_t index,
                              NodeSpec &node) {
  if (value.kind != YamlValue::Kind::Map)
    return fail(value.loc, "expected a mapping for node " + Twine(index));
  const YamlValue *name = value.lookup("name");
  std::string where = name && name->kind == YamlValue::Kind::Scalar
                          ? "node '" + name->scalar + "'"
                          : "node " + std::to_string(index);
  if (!checkKeys(value, {"name", "count", "devices", "links"}, where))
    return false;
  if (!name)
    return fail(value.loc, where + " is missing field 'name'");
  if (!readString(*name, "name", node.name))
    return false;
  if (const YamlValue *count = value.lookup("count"))
    if (!readInt(*count, "count", 1, node.count))
      return false;

  const YamlValue *devices = value.lookup("devices");
  if (!devices)
    return fail(value.loc, where + " is missing field 'devices'");
  if (!expectSeq(*devices, "devices"))
    return false;
  if (devices->children.empty())
    return fail(devices->loc, "devices of " + where + " must not be empty");
  for (size_t i = 0, e = devices->children.size(); i < e; ++i) {
    DeviceSpec device;
    if (!parseDevice(devices->children[i],
                     "device " + std::to_string(i) + " of " + where, device))
      return false;
    node.devices.push_back(std::move(device));
  }

  node.intraLink = {defaultIntraBandwidthBytesPerS, defaultIntraLatencyS};
  if (const YamlValue *links = value.lookup("links")) {
    if (!expectMap(*links, "links") ||
        !checkKeys(*links, {"intra"}, "links of " + where))
      return false;
    if (const YamlValue *intra = links->lookup("intra"))
      if (!parseLink(*intra, "intra", node.intraLink))
        return false;
  }
  return true;
}

std::optional<ClusterSpec> ClusterParser::parse(StringRef text) {
  sourceMgr.setDiagHandler(handleDiagnostic, this);
  if (isBlank(text)) {
    fail(SMLoc(), "empty file");
    return std::nullopt;
  }

  llvm::yaml::Stream stream(llvm::MemoryBufferRef(text, sourceName), sourceMgr,
                            /*ShowColors=*/false);
  SMLoc start = SMLoc::getFromPointer(text.data());
  YamlValue root;
  llvm::yaml::document_iterator document = stream.begin();
  if (document == stream.end()) {
    fail(start, "empty file");
    return std::nullopt;
  }
  bool converted = convert(document->getRoot(), start, root);
  if (error.empty() && (!converted || stream.failed()))
    fail(start, "malformed yaml");
  if (!error.empty())
    return std::nullopt;

  if (root.kind == YamlValue::Kind::Null) {
    fail(start, "empty file");
    return std::nullopt;
  }
  if (root.kind != YamlValue::Kind::Map) {
    fail(root.loc, "expected a mapping at the top level");
    return std::nullopt;
  }
  if (!checkKeys(root, {"name", "nodes", "links"}, "cluster"))
    return std::nullopt;

  ClusterSpec spec;
  spec.name = "cluster";
  spec.source = sourceName;
  if (const YamlValue *name = root.lookup("name"))
    if (!readString(*name, "name", spec.name))
      return std::nullopt;

  const YamlValue *nodes = root.lookup("nodes");
  if (!nodes) {
    fail(root.loc, "cluster is missing field 'nodes'");
    return std::nullopt;
  }
  if (!expectSeq(*nodes, "nodes"))
    return std::nullopt;
  if (nodes->children.empty()) {
    fail(nodes->loc, "nodes must not be empty");
    return std::nullopt;
  }
  for (size_t i = 0, e = nodes->children.size(); i < e; ++i) {
    const YamlValue &item = nodes->children[i];
    NodeSpec node;
    if (!parseNode(item, i, node))
      return std::nullopt;
    for (const NodeSpec &other : spec.nodes) {
      if (other.name == node.name) {
        fail(item.lookup("name")->loc,
             "duplicate node name '" + node.name + "'");
        return std::nullopt;
      }
    }
    spec.nodes.push_back(std::move(node));
  }

  spec.interLink = {defaultInterBandwidthBytesPerS, defaultInterLatencyS};
  if (const YamlValue *links = root.lookup("links")) {
    if (!expectMap(*links, "links") || !checkKeys(*links, {"inter"}, "links"))
      return std::nullopt;
    if (const YamlValue *inter = links->lookup("inter"))
      if (!parseLink(*inter, "inter", spec.interLink))
        return std::nullopt;
  }
  return spec;
}

std::optional<ClusterSpec> dist::parseCluster(const std::string &text,
                                              const std::string &sourceName,
                                              std::string &error) {
  llvm::SourceMgr sourceMgr;
  ClusterParser parser(sourceMgr, sourceName);
  std::optional<ClusterSpec> spec = parser.parse(text);
  if (!spec)
    error = parser.error;
  return spec;
}

std::optional<ClusterSpec> dist::loadClusterFile(const std::string &path,
                                                 std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = path + ": cannot open file: " + buffer.getError().message();
    return std::nullopt;
  }
  return parseCluster((*buffer)->getBuffer().str(), path, error);
}
