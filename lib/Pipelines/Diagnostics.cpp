//===- Diagnostics.cpp - one renderer for every error ---------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Renders MLIR diagnostics as dist-opt's one-line errors (Diagnostics.h).
//
//===----------------------------------------------------------------------===//

#include "dist/Pipelines/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dist;

std::string dist::renderLocation(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    std::string inner = renderLocation(name.getChildLoc());
    auto file = dyn_cast<FileLineColLoc>(name.getChildLoc());
    std::string what = file && file.getLine() > 0 ? "node" : "value";
    std::string s = inner.empty() ? "" : inner + ": ";
    return s + what + " '" + name.getName().str() + "'";
  }
  // Line numbers of imported ops are node indices; the node name says more.
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return file.getFilename().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    return fused.getLocations().empty()
               ? ""
               : renderLocation(fused.getLocations().front());
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return renderLocation(call.getCallee());
  return "";
}

std::string dist::oneLine(StringRef text) {
  std::string s;
  s.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      s += ' ';
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) == 0x85) {
      s += ' ';
      ++i;
    } else if (c == 0xe2 && i + 2 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(text[i + 2]) == 0xa8 ||
                static_cast<unsigned char>(text[i + 2]) == 0xa9)) {
      s += ' ';
      i += 2;
    } else {
      s += static_cast<char>(c);
    }
  }
  return s;
}

void dist::reportError(const Twine &message) {
  llvm::errs() << "error: " << oneLine(message.str()) << "\n";
}

void dist::reportWarning(const Twine &message) {
  llvm::errs() << "warning: " << oneLine(message.str()) << "\n";
}

OneLineDiagnostics::OneLineDiagnostics(MLIRContext *ctx)
    : handler(ctx, [this](Diagnostic &diag) {
        std::string place = renderLocation(diag.getLocation());
        std::string text = (place.empty() ? "" : place + ": ") + diag.str();
        if (diag.getSeverity() == DiagnosticSeverity::Error) {
          if (!printed) {
            first = diag.str();
            llvm::errs() << "error: " << oneLine(text) << "\n";
          }
          printed = true;
        } else if (diag.getSeverity() == DiagnosticSeverity::Warning) {
          llvm::errs() << "warning: " << oneLine(text) << "\n";
        }
        return success();
      }) {}

int OneLineDiagnostics::exitCode() const {
  return StringRef(first).contains("not supported by codegen") ? 3 : 1;
}
