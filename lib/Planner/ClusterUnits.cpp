//===- ClusterUnits.cpp - Numbers with units in cluster files -------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reading the numbers of cluster files with their units (sizes in decimal
// and binary multiples, bandwidths, times, FLOP/s) to the double nearest to
// the written value, and printing doubles with the fewest digits that read
// back the same. ClusterInternal.h declares them.
//
//===----------------------------------------------------------------------===//

#include "ClusterInternal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::cluster_file;
using llvm::StringRef;

namespace {
/// A unit as a power of ten times a power of two. Decimal units are applied
/// to the decimal exponent of the text, so "5us" reads as exactly 5e-6.
struct UnitScale {
  int exp10 = 0;
  int exp2 = 0;
};
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

QuantityStatus cluster_file::parseQuantity(StringRef text, UnitKind kind,
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

std::string cluster_file::formatNumber(double value) {
  char buffer[64];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}
