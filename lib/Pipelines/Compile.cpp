//===- Compile.cpp - one compile of an ONNX model -------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The driver behind `dist-opt model.onnx`: import, the phase pipelines up
// to the requested phase, then the output (artifacts, or the IR after the
// phase), with the parameter file moved into place last.
//
//===----------------------------------------------------------------------===//

#include "dist/Pipelines/Compile.h"

#include "dist/Codegen/Emit.h"
#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/Mesh.h"
#include "dist/Import/ONNX/ONNXImporter.h"
#include "dist/Pipelines/Diagnostics.h"
#include "dist/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>
#include <map>

using namespace mlir;
using namespace mlir::dist;

namespace {
/// Writes `text` to `path` (replacing it only once written).
bool writeTextFile(const std::string &path,
                   llvm::function_ref<void(llvm::raw_ostream &)> print) {
  std::string err;
  auto out = openOutputFile(path, &err);
  if (!out) {
    reportError(err);
    return false;
  }
  print(out->os());
  out->keep();
  return true;
}

/// Moves the parameter file into place (a no-op without one).
bool commitParams(std::unique_ptr<PendingParamFile> &pending) {
  if (!pending)
    return true;
  std::string err = pending->commit();
  if (!err.empty()) {
    reportError(err);
    return false;
  }
  return true;
}

/// Where the IR-printing mode writes the parameter file: --params-file,
/// else next to the -o file, else <model>.params in the current directory.
std::string printModeParamFile(const CompileOptions &options) {
  if (!options.paramsFile.empty())
    return options.paramsFile;
  SmallString<256> p(options.outputFile != "-"
                         ? StringRef(options.outputFile)
                         : llvm::sys::path::filename(options.inputFile));
  llvm::sys::path::replace_extension(p, "params");
  return p.str().str();
}
} // namespace

namespace {
int compileOne(const CompileOptions &options, DialectRegistry &registry,
               function_ref<LogicalResult(OpPassManager &)> extraPasses);
} // namespace

int dist::runCompile(const CompileOptions &options, DialectRegistry &registry,
                     function_ref<LogicalResult(OpPassManager &)> extraPasses) {
  if (options.elasticMax <= 0 || !options.executableFile.empty())
    return compileOne(options, registry, extraPasses);
  // An elastic set: the largest layout writes every artifact (parameter
  // file, library, header, manifest), the others their executable alone,
  // all with the set in their descriptor. The largest comes last, so that
  // a layout that fails leaves no new set behind.
  // --mesh pp=P: P stages where P divides the world size, dp over the rest.
  int64_t stages = options.mesh ? options.mesh->sizeOf("pp") : 1;
  for (int64_t k = options.elasticMin; k <= options.elasticMax; ++k) {
    auto start = std::chrono::steady_clock::now();
    CompileOptions layout = options;
    layout.mesh.reset();
    layout.zero = 0;
    int64_t pp = stages > 1 && k % stages == 0 ? stages : 1;
    int64_t dp = k / pp;
    std::string spec;
    if (pp > 1)
      spec = "pp=" + std::to_string(pp);
    if (dp > 1)
      spec += (spec.empty() ? "dp=" : ",dp=") + std::to_string(dp);
    if (!spec.empty()) {
      MeshSpec mesh;
      std::string why = parseMesh(spec, mesh);
      if (!why.empty()) {
        reportError("--elastic: " + why);
        return 1;
      }
      layout.mesh = std::move(mesh);
      layout.zero = dp > 1 ? options.zero : 0;
    }
    // A layout without stages has one micro-batch.
    if (pp == 1 && layout.train) {
      layout.train->microBatches = 1;
      layout.train->globalBatch = 0;
    }
    if (k != options.elasticMax)
      layout.executableFile =
          elasticExecutable(options.name, k, options.elasticMax);
    if (int rc = compileOne(layout, registry, extraPasses)) {
      reportError("--elastic: the layout for " + std::to_string(k) + " rank" +
                  (k == 1 ? "" : "s") + " did not compile");
      return rc;
    }
    llvm::outs() << llvm::formatv(
        "elastic layout for {0} rank{1}: {2}{3} ({4:f1} s)\n", k,
        k == 1 ? "" : "s", spec.empty() ? "one process" : spec,
        layout.zero ? ", ZeRO-1" : "",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
    llvm::outs().flush();
  }
  return 0;
}

namespace {
int compileOne(const CompileOptions &options, DialectRegistry &registry,
               function_ref<LogicalResult(OpPassManager &)> extraPasses) {
  ONNXImportOptions import;
  import.maxInlineElements = options.maxInlineElements;
  // A training import keeps scalar initializers trainable.
  import.floatScalarsAsParams = options.train.has_value();
  for (const auto &entry : options.inputShapes)
    import.inputShapes[entry.getKey()] = entry.getValue();
  for (const auto &entry : options.inputValues)
    import.inputValues[entry.getKey()] = entry.getValue();
  // Tables the servers draw (--ps-init): those named are never read, so
  // that a model can declare one too large to ship; the others chosen are
  // dropped from the parameter file once the pipeline chose them.
  bool drawnTables = !options.psInit.empty() && options.psInit != "rows";
  if (drawnTables)
    for (const std::string &t : options.psTables)
      if (t != "all" && t != "auto" &&
          StringRef(t).find_first_of("*?[") == StringRef::npos)
        import.declaredParams.insert(t);
  std::string modelBytes;
  auto outPath = [&](const Twine &file) {
    SmallString<256> p(options.outDir);
    llvm::sys::path::append(p, file);
    return p.str().str();
  };
  bool toDir = options.toDirectory();
  if (toDir) {
    if (auto ec = llvm::sys::fs::create_directories(options.outDir)) {
      reportError("cannot create " + options.outDir + ": " + ec.message());
      return 1;
    }
    import.paramFile = outPath(options.name + ".params");
    // Training artifacts keep the model for `train --export-onnx`.
    if (options.train)
      import.serializedModel = &modelBytes;
  } else {
    import.paramFile = printModeParamFile(options);
  }

  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OneLineDiagnostics diagnostics(&context);
  // The parameter file is moved into place only when everything succeeded.
  std::unique_ptr<PendingParamFile> pendingParams;
  OwningOpRef<ModuleOp> module =
      importONNXFile(&context, options.inputFile, import, &pendingParams);
  if (!module) {
    if (!diagnostics.printedError())
      reportError(options.inputFile + ": import failed");
    return 1;
  }
  // What the later phases read from the IR: the mesh asked for.
  if (options.mesh)
    (*module)->setAttr(DistDialect::getMeshAttrName(),
                       MeshAttr::get(&context, *options.mesh));

  Phase upTo = options.planOnly ? Phase::Plan : options.compileTo;
  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope timingScope = timing.getRootScope();
  pm.enableTiming(timingScope);
  buildPhasePipelines(pm, options, Phase::Import, upTo);
  if (extraPasses && failed(extraPasses(pm)))
    return 1;
  if (failed(pm.run(*module))) {
    if (!diagnostics.printedError())
      reportError(options.inputFile + ": compile failed");
    return diagnostics.exitCode();
  }
  if (options.planOnly)
    return 0;
  if (drawnTables && pendingParams) {
    // The tables: marked parameters, or after lowering the signature's.
    llvm::StringSet<> tables;
    for (auto p : module->getOps<ParamOp>())
      if (p->hasAttr(kPsTableAttr))
        tables.insert(p.getSymName());
    if ((*module)->hasAttr(kSignatureAttr))
      if (FailureOr<ModelSignature> sig = getRecordedSignature(*module);
          succeeded(sig) && sig->ps)
        for (const PsLookupSignature &l : sig->ps->lookups)
          tables.insert(sig->params[l.table].name);
    std::string err = pendingParams->drop(tables);
    if (!err.empty()) {
      reportError(err);
      return 1;
    }
  }

  if (toDir) {
    if (upTo == Phase::Emit) {
      // A layout of an elastic set shares the set's parameter file and
      // model copy: its own are dropped.
      if (!options.executableFile.empty())
        return 0;
      // Executables keep the model for `train --export-onnx`.
      if (options.train && options.artifact == ArtifactKind::Exe &&
          !writeTextFile(outPath(options.name + ".onnx"),
                         [&](llvm::raw_ostream &os) { os << modelBytes; }))
        return 1;
      return commitParams(pendingParams) ? 0 : 1;
    }
    if (!writeTextFile(outPath(options.name + ".mlir"),
                       [&](llvm::raw_ostream &os) { module->print(os); }))
      return 1;
    return commitParams(pendingParams) ? 0 : 1;
  }

  std::string err;
  auto output = openOutputFile(options.outputFile, &err);
  if (!output) {
    reportError(err);
    return 1;
  }
  module->print(output->os());
  output->os() << "\n";
  if (!commitParams(pendingParams))
    return 1;
  if (options.summary)
    printModelSummary(*module, options.inputFile, llvm::errs());
  output->keep();
  return 0;
}

} // namespace

void dist::printModelSummary(ModuleOp module, StringRef modelPath,
                             llvm::raw_ostream &os) {
  int64_t opset = 0;
  if (auto info = module->getAttrOfType<DictionaryAttr>("dist.onnx"))
    if (auto o = info.getAs<IntegerAttr>("opset"))
      opset = o.getInt();
  os << "summary: model " << modelPath << " (opset " << opset << ")\n";
  auto nameOf = [](DictionaryAttr attrs, unsigned i) -> std::string {
    if (attrs)
      if (auto n = attrs.getAs<StringAttr>(DistDialect::getValueNameAttrName()))
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
    if (isa<DistDialect>(op->getDialect()) && !isa<ParamOp>(op)) {
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
  module.walk([&](ParamOp param) {
    ++numParams;
    auto t = cast<RankedTensorType>(param.getType());
    bytes += t.getNumElements() *
             ((t.getElementType().getIntOrFloatBitWidth() + 7) / 8);
  });
  os << "summary: params " << numParams << " (" << bytes << " bytes)";
  if (auto file = module->getAttrOfType<StringAttr>(
          DistDialect::getParamFileAttrName()))
    os << " in " << file.getValue();
  os << "\n";
}
