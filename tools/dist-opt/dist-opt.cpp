//===- dist-opt.cpp - dist-opt driver -------------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `dist-opt model.onnx [options]` imports an ONNX model (binary or text
// format), optionally runs a pass pipeline and prints dist IR.
// `dist-opt file.mlir --some-pass` behaves like mlir-opt.
//
//===----------------------------------------------------------------------===//

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/Transforms/Passes.h"
#include "dist/Import/ONNX/ONNXImporter.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

using namespace mlir;
using namespace llvm;

namespace {
/// Renders a location the way importer errors name places: the model file,
/// then the node (or value) name.
std::string renderLocation(Location loc) {
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

/// Keeps a message on one line: control characters and the Unicode line
/// separators (NEL, LS, PS) become spaces (messages may quote model bytes).
std::string oneLine(StringRef text) {
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

/// Prints the first error as one `error: <place>: <message>` line.
struct OneLineDiagnostics {
  explicit OneLineDiagnostics(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Error) {
            if (!printed) {
              std::string place = renderLocation(diag.getLocation());
              llvm::errs() << "error: "
                           << oneLine((place.empty() ? "" : place + ": ") +
                                      diag.str())
                           << "\n";
            }
            printed = true;
          } else if (diag.getSeverity() == DiagnosticSeverity::Warning) {
            std::string place = renderLocation(diag.getLocation());
            llvm::errs() << "warning: " << (place.empty() ? "" : place + ": ")
                         << oneLine(diag.str()) << "\n";
          }
          return success();
        }) {}
  ScopedDiagnosticHandler handler;
  bool printed = false;
};

/// Whether the command line names an ONNX model as its input.
bool hasONNXInput(int argc, char **argv) {
  static const char *valueOptions[] = {
      "-o",           "--params-file", "-params-file", "--input-shape",
      "-input-shape", "--input-value", "-input-value", "-p"};
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    if (llvm::is_contained(valueOptions, arg)) {
      ++i;
      continue;
    }
    if (arg.starts_with("-"))
      continue;
    return dist::looksLikeONNXFile(arg);
  }
  return false;
}

void printSummary(ModuleOp module, StringRef modelPath, raw_ostream &os) {
  int64_t opset = 0;
  if (auto info = module->getAttrOfType<DictionaryAttr>("dist.onnx"))
    if (auto o = info.getAs<IntegerAttr>("opset"))
      opset = o.getInt();
  os << "summary: model " << modelPath << " (opset " << opset << ")\n";
  auto nameOf = [](DictionaryAttr attrs, unsigned i) -> std::string {
    if (attrs)
      if (auto n = attrs.getAs<StringAttr>(
              dist::DistDialect::getValueNameAttrName()))
        return n.str();
    return "#" + std::to_string(i);
  };
  module.walk([&](func::FuncOp func) {
    auto type = func.getFunctionType();
    for (unsigned i = 0; i < type.getNumInputs(); ++i)
      os << "summary: input " << nameOf(func.getArgAttrDict(i), i) << ": "
         << type.getInput(i) << "\n";
    for (unsigned i = 0; i < type.getNumResults(); ++i)
      os << "summary: output " << nameOf(func.getResultAttrDict(i), i) << ": "
         << type.getResult(i) << "\n";
  });
  std::map<std::string, int64_t> counts;
  int64_t total = 0;
  module.walk([&](Operation *op) {
    if (isa<dist::DistDialect>(op->getDialect()) && !isa<dist::ParamOp>(op)) {
      ++counts[op->getName().getStringRef().str()];
      ++total;
    }
  });
  os << "summary: ops " << total << " (";
  bool first = true;
  for (auto &[name, count] : counts) {
    os << (first ? "" : ", ") << name << " x" << count;
    first = false;
  }
  os << ")\n";
  int64_t numParams = 0, bytes = 0;
  module.walk([&](dist::ParamOp param) {
    ++numParams;
    auto t = cast<RankedTensorType>(param.getType());
    bytes += t.getNumElements() *
             ((t.getElementType().getIntOrFloatBitWidth() + 7) / 8);
  });
  os << "summary: params " << numParams << " (" << bytes << " bytes)";
  if (auto file = module->getAttrOfType<StringAttr>(
          dist::DistDialect::getParamFileAttrName()))
    os << " in " << file.getValue();
  os << "\n";
}

int importMain(int argc, char **argv, DialectRegistry &registry) {
  cl::OptionCategory category("dist-opt ONNX import options");
  cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.onnx>"),
                                 cl::Required, cl::cat(category));
  cl::opt<std::string> outputFile("o", cl::desc("Output file for the IR"),
                                  cl::value_desc("file"), cl::init("-"),
                                  cl::cat(category));
  cl::opt<std::string> paramsFile(
      "params-file",
      cl::desc("Where to write the parameter file (default: next to the -o "
               "file, or <model>.params in the current directory)"),
      cl::value_desc("file"), cl::cat(category));
  cl::list<std::string> inputShapes(
      "input-shape",
      cl::desc("Fix an input's shape: NAME=D0,D1,... (? keeps a dimension "
               "dynamic; nothing after = is a scalar). Repeatable"),
      cl::value_desc("name=dims"), cl::cat(category));
  cl::list<std::string> inputValues(
      "input-value",
      cl::desc("Bind an input to the constant in a serialized TensorProto "
               "file: NAME=FILE. Repeatable"),
      cl::value_desc("name=file"), cl::cat(category));
  cl::opt<bool> summary("summary",
                        cl::desc("Print a summary of the model to stderr"),
                        cl::cat(category));
  cl::opt<int64_t> maxInline(
      "max-inline-elements",
      cl::desc("Tensors up to this size stay in the IR as constants"),
      cl::init(4096), cl::cat(category));
  PassPipelineCLParser passPipeline("", "Passes to run after import", "p");
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::ParseCommandLineOptions(
      argc, argv,
      "dist-opt: import ONNX models into the dist dialect, or run passes on "
      "MLIR files like mlir-opt\n");

  dist::ONNXImportOptions opts;
  opts.maxInlineElements = maxInline;
  for (const std::string &s : inputShapes) {
    std::string err = dist::parseInputShapeOption(s, opts);
    if (!err.empty()) {
      errs() << "error: " << err << "\n";
      return 1;
    }
  }
  for (const std::string &s : inputValues) {
    std::string err = dist::parseInputValueOption(s, opts);
    if (!err.empty()) {
      errs() << "error: " << err << "\n";
      return 1;
    }
  }
  if (!paramsFile.empty()) {
    opts.paramFile = paramsFile;
  } else if (outputFile != "-") {
    SmallString<256> p(outputFile.getValue());
    sys::path::replace_extension(p, "params");
    opts.paramFile = p.str().str();
  } else {
    SmallString<256> p(sys::path::filename(inputFile.getValue()));
    sys::path::replace_extension(p, "params");
    opts.paramFile = p.str().str();
  }

  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OneLineDiagnostics diagnostics(&context);

  // The parameter file is moved into place only when everything succeeded.
  std::unique_ptr<dist::PendingParamFile> pendingParams;
  OwningOpRef<ModuleOp> module =
      dist::importONNXFile(&context, inputFile, opts, &pendingParams);
  if (!module) {
    if (!diagnostics.printed)
      errs() << "error: " << inputFile << ": import failed\n";
    return 1;
  }
  if (passPipeline.hasAnyOccurrences()) {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return 1;
    auto onError = [&](const Twine &msg) {
      errs() << "error: " << oneLine(msg.str()) << "\n";
      return failure();
    };
    if (failed(passPipeline.addToPipeline(pm, onError)))
      return 1;
    if (failed(pm.run(*module))) {
      if (!diagnostics.printed)
        errs() << "error: " << inputFile << ": pass pipeline failed\n";
      return 1;
    }
  }
  std::string err;
  auto output = openOutputFile(outputFile, &err);
  if (!output) {
    errs() << "error: " << oneLine(err) << "\n";
    return 1;
  }
  module->print(output->os());
  output->os() << "\n";
  if (pendingParams) {
    std::string commitErr = pendingParams->commit();
    if (!commitErr.empty()) {
      errs() << "error: " << oneLine(commitErr) << "\n";
      return 1;
    }
  }
  if (summary)
    printSummary(*module, inputFile, errs());
  output->keep();
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  DialectRegistry registry;
  registerAllDialects(registry);
  registry.insert<dist::DistDialect>();
  registerAllPasses();
  dist::registerDistPasses();
  if (hasONNXInput(argc, argv))
    return importMain(argc, argv, registry);
  return asMainReturnCode(MlirOptMain(
      argc, argv, "dist-opt: the dist dialect's optimizer driver\n", registry));
}
