//===- Einsum.cpp - Subscripts of an einsum equation ------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements parseEinsum and formatEinsum (Einsum.h).
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/Einsum.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <map>

using namespace mlir::dist;

namespace {

bool isLabel(char c) { return llvm::isAlpha(c) || llvm::isDigit(c); }

/// One term's labels with the position of its ellipsis (-1: none).
struct Term {
  std::string labels;
  int64_t ellipsisAt = -1;
};

bool parseTerm(llvm::StringRef text, Term &term, std::string &error) {
  text = text.trim();
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == ' ') {
      ++i;
      continue;
    }
    if (c == '.') {
      if (!text.substr(i).starts_with("...")) {
        error = "a '.' that is not part of '...'";
        return false;
      }
      if (term.ellipsisAt >= 0) {
        error = "more than one '...' in a term";
        return false;
      }
      term.ellipsisAt = static_cast<int64_t>(term.labels.size());
      i += 3;
      continue;
    }
    if (!isLabel(c)) {
      error = std::string("'") + c + "' is not a subscript letter";
      return false;
    }
    term.labels.push_back(c);
    ++i;
  }
  return true;
}

/// `term` with its ellipsis replaced by the last `count` of `width` digits.
std::string expand(const Term &term, int64_t count, int64_t width) {
  if (term.ellipsisAt < 0)
    return term.labels;
  std::string digits;
  for (int64_t i = width - count; i < width; ++i)
    digits.push_back(static_cast<char>('0' + i));
  std::string out = term.labels;
  out.insert(static_cast<size_t>(term.ellipsisAt), digits);
  return out;
}

} // namespace

bool mlir::dist::parseEinsum(llvm::StringRef equation,
                             llvm::ArrayRef<int64_t> ranks,
                             EinsumSubscripts &out, std::string &error) {
  llvm::StringRef lhs = equation, rhs;
  bool hasOutput = false;
  if (size_t arrow = equation.find("->"); arrow != llvm::StringRef::npos) {
    lhs = equation.take_front(arrow);
    rhs = equation.drop_front(arrow + 2);
    hasOutput = true;
  }
  llvm::SmallVector<llvm::StringRef> parts;
  lhs.split(parts, ',');
  if (parts.size() != ranks.size()) {
    error = "the equation '" + equation.str() + "' has " +
            std::to_string(parts.size()) + " input term(s) for " +
            std::to_string(ranks.size()) + " operand(s)";
    return false;
  }
  llvm::SmallVector<Term> terms(parts.size());
  int64_t width = 0;
  bool anyEllipsis = false, anyDigit = false;
  for (auto [i, part] : llvm::enumerate(parts)) {
    if (!parseTerm(part, terms[i], error))
      return false;
    int64_t named = static_cast<int64_t>(terms[i].labels.size());
    anyDigit |= llvm::any_of(terms[i].labels, llvm::isDigit);
    if (terms[i].ellipsisAt < 0) {
      if (named != ranks[i]) {
        error = "term '" + part.trim().str() + "' names " +
                std::to_string(named) + " dimension(s) of an operand of rank " +
                std::to_string(ranks[i]);
        return false;
      }
      continue;
    }
    anyEllipsis = true;
    if (named > ranks[i]) {
      error = "term '" + part.trim().str() + "' names more dimensions than " +
              "its operand's " + std::to_string(ranks[i]);
      return false;
    }
    width = std::max(width, ranks[i] - named);
  }
  if (anyEllipsis && (anyDigit || width > 10)) {
    error = "'...' cannot stand for more than 10 dimensions";
    return false;
  }
  out.inputs.clear();
  for (auto [i, term] : llvm::enumerate(terms))
    out.inputs.push_back(expand(
        term, ranks[i] - static_cast<int64_t>(term.labels.size()), width));

  if (hasOutput) {
    Term o;
    if (!parseTerm(rhs, o, error))
      return false;
    if (o.ellipsisAt >= 0 && !anyEllipsis)
      o.ellipsisAt = -1;
    else if (o.ellipsisAt < 0 && width > 0) {
      error = "the output drops the dimensions that '...' stands for";
      return false;
    }
    out.output = expand(o, width, width);
    for (char c : out.output) {
      if (llvm::count(out.output, c) > 1) {
        error = std::string("output subscript '") + c + "' appears twice";
        return false;
      }
      if (llvm::none_of(out.inputs, [&](const std::string &in) {
            return in.find(c) != std::string::npos;
          })) {
        error = std::string("output subscript '") + c +
                "' appears in no input";
        return false;
      }
    }
    return true;
  }
  // Implicit output: the ellipsis dims, then letters used once, sorted.
  std::map<char, int> uses;
  for (const Term &t : terms)
    for (char c : t.labels)
      ++uses[c];
  out.output = expand(Term{"", 0}, width, width);
  for (auto [c, n] : uses)
    if (n == 1)
      out.output.push_back(c);
  return true;
}

std::string mlir::dist::formatEinsum(const EinsumSubscripts &subscripts) {
  std::string eq;
  for (auto [i, in] : llvm::enumerate(subscripts.inputs)) {
    if (i)
      eq.push_back(',');
    eq += in;
  }
  return eq + "->" + subscripts.output;
}
