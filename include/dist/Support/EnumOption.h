//===- EnumOption.h - closed option sets as typed enums ---------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Every closed set of choices a user writes (a loss, an optimizer, a
// schedule, a convolution kernel, a planning objective or strategy) is a C++
// enum with one table of names (`EnumOptionTraits<T>`). The table gives the
// `cl::values` of dist-opt's flags and of the passes' options (the same
// spelling in both) and the one-line error for a name not in it:
//
//   error: --loss: unknown loss 'hinge' (expected mse, cross_entropy, bce or
//   model)
//
// `DIST_ENUM_OPTION_PARSER(T)` makes that table the `llvm::cl::parser` of T,
// so that `cl::opt<T>` and a pass `Option<..., "T", ...>` both parse through
// it; an unknown name prints the error above (instead of LLVM's "Cannot find
// option named"), and the command line or the pass pipeline fails.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_SUPPORT_ENUMOPTION_H
#define DIST_SUPPORT_ENUMOPTION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::dist {

/// One value of a closed option set: its enumerator, the name users write,
/// and a one-line description for --help.
template <typename T>
struct EnumOptionValue {
  T value;
  const char *name;
  const char *help;
};

/// Specialised for every enum parsed as an option:
///   static llvm::ArrayRef<EnumOptionValue<T>> values();
///   static constexpr const char *noun;   // "loss", "conv kernel", ...
///   /// Prefix of the error when a pass option, not a flag, is wrong ("" or
///   /// "dist-build-train-step option "; the option's name follows it).
///   static constexpr const char *passPrefix;
///   /// Whether the flag's error names the flag inside the noun ("unknown
///   /// --emit kind 'x'") instead of in front of it ("--loss: unknown loss").
///   static constexpr bool nounNamesFlag;
template <typename T>
struct EnumOptionTraits;

/// The name users write for `value`.
template <typename T>
llvm::StringRef stringifyEnumOption(T value) {
  for (const EnumOptionValue<T> &v : EnumOptionTraits<T>::values())
    if (v.value == value)
      return v.name;
  return "";
}

/// The enumerator named `name`, if any.
template <typename T>
std::optional<T> symbolizeEnumOption(llvm::StringRef name) {
  for (const EnumOptionValue<T> &v : EnumOptionTraits<T>::values())
    if (name == v.name)
      return v.value;
  return std::nullopt;
}

/// "a, b, c or d": the names of T, for messages.
template <typename T>
std::string listEnumOptionNames() {
  std::string s;
  llvm::ArrayRef<EnumOptionValue<T>> values = EnumOptionTraits<T>::values();
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0)
      s += i + 1 == values.size() ? " or " : ", ";
    s += values[i].name;
  }
  return s;
}

/// What is wrong with `given` as a value of T, as dist-opt words it for
/// flag `flag` (with its dashes) or, with `flag` empty, for a pass option
/// named `option`.
template <typename T>
std::string unknownEnumOptionMessage(llvm::StringRef flag,
                                     llvm::StringRef option,
                                     llvm::StringRef given) {
  using Traits = EnumOptionTraits<T>;
  std::string what = "unknown ";
  if (!flag.empty() && Traits::nounNamesFlag)
    what += flag.str() + " kind";
  else
    what += Traits::noun;
  what += " '" + given.str() + "' (expected " + listEnumOptionNames<T>() + ")";
  if (flag.empty())
    return Traits::passPrefix[0]
               ? std::string(Traits::passPrefix) + option.str() + ": " + what
               : what;
  return Traits::nounNamesFlag ? what : flag.str() + ": " + what;
}

/// The `cl::values` of T (its table), as a modifier of an option's
/// declaration: `cl::opt<T> loss("loss", enumOptionValues<T>(), ...)`, or a
/// pass option's additional flags in ODS.
template <typename T>
struct EnumOptionValues {
  template <class Opt>
  void apply(Opt &o) const {
    for (const EnumOptionValue<T> &v : EnumOptionTraits<T>::values())
      o.getParser().addLiteralOption(v.name, v.value, v.help);
  }
};
template <typename T>
EnumOptionValues<T> enumOptionValues() {
  return {};
}

namespace detail {
/// Whether `option` is one of a pass's options (they live in a private
/// sub-command) rather than a flag of the tool.
inline bool isPassOption(const llvm::cl::Option &option) {
  return !option.Subs.empty() &&
         !option.Subs.count(&llvm::cl::SubCommand::getTopLevel()) &&
         !option.Subs.count(&llvm::cl::SubCommand::getAll());
}

/// llvm::cl's generic enum parser with dist-opt's error for an unknown
/// name. Same members as `llvm::cl::parser<T>`'s primary template, which
/// MLIR's pass options rely on (`Values`, `addLiteralOption`).
template <typename T>
class EnumOptionParser : public llvm::cl::generic_parser_base {
protected:
  class OptionInfo : public GenericOptionInfo {
  public:
    OptionInfo(llvm::StringRef name, T v, llvm::StringRef helpStr)
        : GenericOptionInfo(name, helpStr), V(v) {}
    llvm::cl::OptionValue<T> V;
  };
  llvm::SmallVector<OptionInfo, 8> Values;

public:
  EnumOptionParser(llvm::cl::Option &o) : generic_parser_base(o) {}
  using parser_data_type = T;

  unsigned getNumOptions() const override { return unsigned(Values.size()); }
  llvm::StringRef getOption(unsigned n) const override {
    return Values[n].Name;
  }
  llvm::StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &
  getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// Returns true (after printing one `error:` line) on an unknown name.
  bool parse(llvm::cl::Option &o, llvm::StringRef argName, llvm::StringRef arg,
             T &v) {
    llvm::StringRef given = Owner.hasArgStr() ? arg : argName;
    for (const OptionInfo &info : Values)
      if (info.Name == given) {
        v = info.V.getValue();
        return false;
      }
    bool pass = isPassOption(o);
    std::string flag = pass ? "" : "--" + o.ArgStr.str();
    llvm::errs() << "error: "
                 << unknownEnumOptionMessage<T>(flag, o.ArgStr, given) << "\n";
    return true;
  }

  template <class DT>
  void addLiteralOption(llvm::StringRef name, const DT &v,
                        llvm::StringRef helpStr) {
    Values.push_back(OptionInfo(name, static_cast<T>(v), helpStr));
    AddLiteralOption(Owner, name);
  }

  void removeLiteralOption(llvm::StringRef name) {
    unsigned n = findOption(name);
    assert(n != Values.size() && "option not found");
    Values.erase(Values.begin() + n);
  }
};
} // namespace detail
} // namespace mlir::dist

/// Makes EnumOptionTraits<T>'s table the llvm::cl parser of T. Use at global
/// scope, after the traits, in the header that declares T.
#define DIST_ENUM_OPTION_PARSER(T)                                             \
  template <>                                                                  \
  class llvm::cl::parser<T>                                                    \
      : public ::mlir::dist::detail::EnumOptionParser<T> {                     \
  public:                                                                      \
    using ::mlir::dist::detail::EnumOptionParser<T>::EnumOptionParser;         \
  };

#endif // DIST_SUPPORT_ENUMOPTION_H
