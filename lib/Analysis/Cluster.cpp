//===- Cluster.cpp - The unified cluster object ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reading cluster files (YAML, and JSON as the subset of YAML it is) with
// llvm::yaml::Stream, checking them against the schema with one-line
// "<file>:<line>:<col>: <what>" errors, writing them back as YAML or one-line
// JSON, and detecting the local machine (CPU from /proc and sysconf, GPUs
// through a dlopen'ed CUDA driver).
//
//===----------------------------------------------------------------------===//

#include "dist/Analysis/Cluster.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>
#include <tuple>

#if defined(__linux__)
#include <dlfcn.h>
#endif
#include <unistd.h>

using namespace mlir;
using namespace mlir::dist;
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

//===----------------------------------------------------------------------===//
// Numbers with units
//===----------------------------------------------------------------------===//

namespace {
/// What a number measures, which decides the units it may carry.
enum class UnitKind { None, Size, Bandwidth, Time, Flops };

/// A unit as a power of ten times a power of two. Decimal units are applied
/// to the decimal exponent of the text, so "5us" reads as exactly 5e-6.
struct UnitScale {
  int exp10 = 0;
  int exp2 = 0;
};

enum class QuantityStatus { Ok, NotANumber, BadUnit, OutOfRange };
} // namespace

static std::optional<UnitScale> lookupSizeUnit(StringRef unit) {
  if (unit == "B")
    return UnitScale{0, 0};
  if (unit == "KB" || unit == "kB")
    return UnitScale{3, 0};
  if (unit == "MB")
    return UnitScale{6, 0};
  if (unit == "GB")
    return UnitScale{9, 0};
  if (unit == "TB")
    return UnitScale{12, 0};
  if (unit == "KiB")
    return UnitScale{0, 10};
  if (unit == "MiB")
    return UnitScale{0, 20};
  if (unit == "GiB")
    return UnitScale{0, 30};
  if (unit == "TiB")
    return UnitScale{0, 40};
  return std::nullopt;
}

static std::optional<UnitScale> lookupUnit(StringRef unit, UnitKind kind) {
  if (unit.empty())
    return UnitScale{};
  switch (kind) {
  case UnitKind::None:
    return std::nullopt;
  case UnitKind::Size:
    return lookupSizeUnit(unit);
  case UnitKind::Bandwidth:
    if (!unit.consume_back("/s"))
      return std::nullopt;
    return lookupSizeUnit(unit);
  case UnitKind::Time:
    if (unit == "s")
      return UnitScale{0, 0};
    if (unit == "ms")
      return UnitScale{-3, 0};
    if (unit == "us")
      return UnitScale{-6, 0};
    if (unit == "ns")
      return UnitScale{-9, 0};
    return std::nullopt;
  case UnitKind::Flops: {
    UnitScale scale;
    bool hasPrefix = true;
    switch (unit.front()) {
    case 'K':
      scale.exp10 = 3;
      break;
    case 'M':
      scale.exp10 = 6;
      break;
    case 'G':
      scale.exp10 = 9;
      break;
    case 'T':
      scale.exp10 = 12;
      break;
    case 'P':
      scale.exp10 = 15;
      break;
    default:
      hasPrefix = false;
      break;
    }
    StringRef rest = hasPrefix ? unit.drop_front() : unit;
    if ((rest.empty() && hasPrefix) || rest == "FLOP/s" || rest == "FLOPS")
      return scale;
    return std::nullopt;
  }
  }
  llvm_unreachable("unknown unit kind");
}

/// Parses "<number>[ ]<unit>" where the number is a decimal with an optional
/// exponent. The decimal exponent of the unit is folded into the text before
/// conversion, so the result is the double nearest to the written value.
static QuantityStatus parseQuantity(StringRef text, UnitKind kind,
                                    double &value, StringRef &unitOut) {
  StringRef s = text.trim();
  size_t pos = 0, size = s.size();
  std::string mantissa;
  if (pos < size && (s[pos] == '+' || s[pos] == '-')) {
    if (s[pos] == '-')
      mantissa.push_back('-');
    ++pos;
  }
  size_t digits = 0;
  size_t intStart = pos;
  for (; pos < size && llvm::isDigit(s[pos]); ++pos)
    ++digits;
  StringRef intPart = s.slice(intStart, pos);
  StringRef fracPart;
  if (pos < size && s[pos] == '.') {
    size_t fracStart = ++pos;
    for (; pos < size && llvm::isDigit(s[pos]); ++pos)
      ++digits;
    fracPart = s.slice(fracStart, pos);
  }
  if (digits == 0)
    return QuantityStatus::NotANumber;
  mantissa += intPart.empty() ? StringRef("0") : intPart;
  if (!fracPart.empty())
    mantissa += "." + fracPart.str();

  long long exponent = 0;
  if (pos < size && (s[pos] == 'e' || s[pos] == 'E')) {
    size_t expPos = pos + 1;
    bool negative = false;
    if (expPos < size && (s[expPos] == '+' || s[expPos] == '-'))
      negative = s[expPos++] == '-';
    size_t expDigits = expPos;
    while (expPos < size && llvm::isDigit(s[expPos]))
      ++expPos;
    if (expPos > expDigits) {
      if (s.slice(expDigits, expPos).getAsInteger(10, exponent) ||
          exponent > 100000)
        return QuantityStatus::OutOfRange;
      if (negative)
        exponent = -exponent;
      pos = expPos;
    }
  }

  StringRef unit = s.drop_front(pos).ltrim();
  unitOut = unit;
  std::optional<UnitScale> scale = lookupUnit(unit, kind);
  if (!scale)
    return QuantityStatus::BadUnit;

  std::string number = mantissa + "e" + std::to_string(exponent + scale->exp10);
  double result = 0;
  if (StringRef(number).getAsDouble(result))
    return QuantityStatus::OutOfRange;
  result = std::ldexp(result, scale->exp2);
  if (!std::isfinite(result))
    return QuantityStatus::OutOfRange;
  value = result;
  return QuantityStatus::Ok;
}

/// Prints `value` with the fewest digits that read back as the same double.
static std::string formatNumber(double value) {
  char buffer[64];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

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

std::optional<ClusterSpec> dist::clusterFromJson(const std::string &json,
                                                 std::string &error) {
  // JSON is YAML: one parser, one set of messages.
  return parseCluster(json, "<json>", error);
}

//===----------------------------------------------------------------------===//
// Writing
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

//===----------------------------------------------------------------------===//
// Local detection
//===----------------------------------------------------------------------===//

namespace {
// The few CUDA driver entry points used, declared here so that no CUDA header
// is needed. CUresult is an int-sized enum and CUdevice an int.
using CuInitFn = int (*)(unsigned);
using CuDeviceGetCountFn = int (*)(int *);
using CuDeviceGetFn = int (*)(int *, int);
using CuDeviceGetNameFn = int (*)(char *, int, int);
using CuDeviceTotalMemFn = int (*)(size_t *, int);
using CuDeviceGetAttributeFn = int (*)(int *, int, int);

// CUdevice_attribute values.
constexpr int cuAttrMultiprocessorCount = 16;
constexpr int cuAttrClockRateKHz = 13;
constexpr int cuAttrMemoryClockRateKHz = 36;
constexpr int cuAttrGlobalMemoryBusWidthBits = 37;
} // namespace

/// Adds one GPU DeviceSpec per distinct model found by the CUDA driver.
/// Without libcuda.so.1 or without devices nothing is added.
static void appendCudaDevices(std::vector<DeviceSpec> &devices) {
#if defined(__linux__)
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return;
  auto cuInit = reinterpret_cast<CuInitFn>(dlsym(library, "cuInit"));
  auto cuDeviceGetCount =
      reinterpret_cast<CuDeviceGetCountFn>(dlsym(library, "cuDeviceGetCount"));
  auto cuDeviceGet =
      reinterpret_cast<CuDeviceGetFn>(dlsym(library, "cuDeviceGet"));
  auto cuDeviceGetName =
      reinterpret_cast<CuDeviceGetNameFn>(dlsym(library, "cuDeviceGetName"));
  auto cuDeviceTotalMem = reinterpret_cast<CuDeviceTotalMemFn>(
      dlsym(library, "cuDeviceTotalMem_v2"));
  auto cuDeviceGetAttribute = reinterpret_cast<CuDeviceGetAttributeFn>(
      dlsym(library, "cuDeviceGetAttribute"));
  if (!cuInit || !cuDeviceGetCount || !cuDeviceGet || !cuDeviceGetName ||
      !cuDeviceTotalMem || !cuDeviceGetAttribute) {
    dlclose(library);
    return;
  }
  // The driver stays loaded once initialized: unloading it is not supported.
  int count = 0;
  if (cuInit(0) != 0 || cuDeviceGetCount(&count) != 0)
    return;

  std::map<std::string, size_t> indexByModel;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    int device = 0;
    char name[256] = {};
    if (cuDeviceGet(&device, ordinal) != 0 ||
        cuDeviceGetName(name, sizeof(name) - 1, device) != 0)
      continue;
    std::string model = StringRef(name).trim().str();
    auto known = indexByModel.find(model);
    if (known != indexByModel.end()) {
      ++devices[known->second].count;
      continue;
    }

    size_t memoryBytes = 0;
    int sms = 0, clockKHz = 0, memoryClockKHz = 0, busWidthBits = 0;
    if (cuDeviceTotalMem(&memoryBytes, device) != 0)
      memoryBytes = 0;
    if (cuDeviceGetAttribute(&sms, cuAttrMultiprocessorCount, device) != 0)
      sms = 0;
    if (cuDeviceGetAttribute(&clockKHz, cuAttrClockRateKHz, device) != 0)
      clockKHz = 0;
    if (cuDeviceGetAttribute(&memoryClockKHz, cuAttrMemoryClockRateKHz,
                             device) != 0)
      memoryClockKHz = 0;
    if (cuDeviceGetAttribute(&busWidthBits, cuAttrGlobalMemoryBusWidthBits,
                             device) != 0)
      busWidthBits = 0;

    // Estimates: 128 FP32 lanes per SM doing one FMA per cycle, and a DDR
    // memory bus. Unknown attributes fall back to typical values.
    double clockHz = clockKHz > 0 ? clockKHz * 1e3 : 1.5e9;
    double memoryClockHz = memoryClockKHz > 0 ? memoryClockKHz * 1e3 : 1.5e9;
    double busBytes = busWidthBits > 0 ? busWidthBits / 8.0 : 256.0 / 8.0;
    DeviceSpec gpu;
    gpu.kind = DevKind::GPU;
    gpu.model = model.empty() ? "gpu" : model;
    gpu.count = 1;
    gpu.cores = sms > 0 ? sms : 1;
    gpu.memoryBytes =
        memoryBytes > 0 ? double(memoryBytes) : 1024.0 * 1024 * 1024;
    gpu.peakFlops["f32"] = gpu.cores * 128.0 * 2.0 * clockHz;
    gpu.memoryBandwidthBytesPerS = 2.0 * memoryClockHz * busBytes;
    gpu.pricePerHour = 0;
    indexByModel[model] = devices.size();
    devices.push_back(std::move(gpu));
  }
#else
  (void)devices;
#endif
}

ClusterSpec dist::detectLocalCluster() {
  DeviceSpec cpu;
  cpu.kind = DevKind::CPU;

  // Model and clock from /proc/cpuinfo; the highest "cpu MHz" seen is the
  // closest to the sustained clock.
  double clockMHz = 0;
  if (llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> cpuInfo =
          llvm::MemoryBuffer::getFileAsStream("/proc/cpuinfo")) {
    StringRef text = (*cpuInfo)->getBuffer();
    while (!text.empty()) {
      auto [line, rest] = text.split('\n');
      text = rest;
      auto [key, value] = line.split(':');
      key = key.trim();
      value = value.trim();
      double mhz = 0;
      if (key == "model name" && cpu.model.empty())
        cpu.model = value.str();
      else if (key == "cpu MHz" && !value.getAsDouble(mhz) && mhz > clockMHz)
        clockMHz = mhz;
    }
  }
  if (cpu.model.empty())
    cpu.model = "cpu";
  double clockHz = clockMHz > 0 ? clockMHz * 1e6 : 2.5e9;

  int64_t threads = std::thread::hardware_concurrency();
  if (threads <= 0) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    threads = online > 0 ? online : 1;
  }
  cpu.cores = threads;

  long pages = sysconf(_SC_PHYS_PAGES);
  long pageSize = sysconf(_SC_PAGE_SIZE);
  cpu.memoryBytes = pages > 0 && pageSize > 0 ? double(pages) * double(pageSize)
                                              : 1024.0 * 1024 * 1024;

  // FLOP per cycle per hardware thread for f32: one FMA unit, 2 FLOP per lane.
  double flopsPerCycle = 8;
  cpu.isa = "generic";
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    cpu.isa = "avx512";
    flopsPerCycle = 32;
  } else if (__builtin_cpu_supports("avx2")) {
    cpu.isa = "avx2";
    flopsPerCycle = 16;
  } else {
    cpu.isa = "sse";
    flopsPerCycle = 8;
  }
#endif
  double f32 = double(cpu.cores) * clockHz * flopsPerCycle;
  cpu.peakFlops["f32"] = f32;
  cpu.peakFlops["f64"] = f32 / 2;
  // An estimate until `dist-opt calibrate` measures it.
  cpu.memoryBandwidthBytesPerS = std::min(10e9 * double(cpu.cores), 100e9);
  cpu.pricePerHour = 0;

  NodeSpec node;
  node.name = "local";
  node.count = 1;
  node.devices.push_back(std::move(cpu));
  node.intraLink = {20e9, 1e-6};
  appendCudaDevices(node.devices);

  ClusterSpec spec;
  spec.name = "local";
  spec.source = "local";
  spec.nodes.push_back(std::move(node));
  spec.interLink = {1.25e9, 50e-6};
  return spec;
}
