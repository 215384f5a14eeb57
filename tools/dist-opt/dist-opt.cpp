//===- dist-opt.cpp - dist-opt driver -------------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `dist-opt model.onnx [options]` imports an ONNX model (binary or text
// format), optionally runs a pass pipeline and prints dist IR.
// `dist-opt file.mlir --some-pass` behaves like mlir-opt.
//
//===----------------------------------------------------------------------===//

#include "dist/Analysis/Calibration.h"
#include "dist/Analysis/Cluster.h"
#include "dist/Codegen/Emit.h"
#include "dist/Codegen/Passes.h"
#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/Transforms/Passes.h"
#include "dist/Import/ONNX/ONNXImporter.h"
#include "dist/Transforms/LayerCosts.h"
#include "dist/Transforms/Passes.h"

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
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>
#include <optional>
#include <thread>

#include <unistd.h>

namespace mlir::dist::test {
void registerTestPlanPasses();
} // namespace mlir::dist::test

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
              first = diag.str();
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
  std::string first;
  /// Exit code: 3 when the first error says code generation does not
  /// support something (see the README), 1 otherwise.
  int exitCode() const {
    return StringRef(first).contains("not supported by codegen") ? 3 : 1;
  }
};

/// Whether the command line names an ONNX model as its input.
bool hasONNXInput(int argc, char **argv) {
  static const char *valueOptions[] = {"-o",
                                       "--params-file",
                                       "-params-file",
                                       "--input-shape",
                                       "-input-shape",
                                       "--input-value",
                                       "-input-value",
                                       "-p",
                                       "--name",
                                       "-name",
                                       "--emit",
                                       "-emit",
                                       "--cluster",
                                       "--plan",
                                       "--objective",
                                       "--planner",
                                       "--global-batch",
                                       "--min-throughput",
                                       "--plan-threads"};
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

/// A C identifier made from `text` (the artifacts' name and API prefix).
std::string cIdentifier(StringRef text) {
  std::string s;
  for (char c : text)
    s += isAlnum(c) ? c : '_';
  if (s.empty() || isDigit(s[0]))
    s = "m_" + s;
  return s;
}

std::string defaultRuntimeLib() {
  std::string exe = sys::fs::getMainExecutable(nullptr, nullptr);
  SmallString<256> p(sys::path::parent_path(sys::path::parent_path(exe)));
  sys::path::append(p, "lib", "libdist_rt.a");
  return p.str().str();
}

/// Runs dist-build-train-step on `module`.
LogicalResult addTrainStep(ModuleOp module,
                           const dist::BuildTrainStepPassOptions &train) {
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  pm.addPass(dist::createBuildTrainStepPass(train));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  return pm.run(module);
}

/// `dist-opt model.onnx -o DIR`: import, lower, emit and link.
/// What the planning flags asked for; `enabled` when any was given.
struct PlanningOptions {
  bool enabled = false;
  std::string cluster = "local";
  dist::PlanPassOptions pass;
  /// --mesh ("" when not given) and the gradient bucket size: the module is
  /// partitioned (dist-partition) after planning when a mesh is given.
  std::string mesh;
  int64_t gradBucketBytes = 4 << 20;
  /// --zero: ZeRO stage (0 or 1).
  int64_t zero = 0;
  /// --plan given (auto or a file) without --mesh, and compiling past the
  /// plan: the plan's data- and tensor-parallel degrees become the mesh.
  bool applyLayout = false;
};

/// Splits the forward graph for the tp axis of `mesh` (a no-op without
/// one, or when done already) and says what was split on stderr.
LogicalResult splitTensorParallel(ModuleOp module, const dist::MeshSpec &mesh) {
  if (mesh.sizeOf("tp") == 1 || module->hasAttr(dist::kTensorParallelAttr))
    return success();
  dist::TensorParallelStats stats;
  if (failed(dist::partitionTensorParallel(module, mesh, &stats)))
    return failure();
  errs() << "tensor parallel over tp=" << mesh.sizeOf("tp") << ": "
         << stats.columnRow << " column/row-split region(s), " << stats.gathered
         << " gathered output layer(s), " << stats.embeddings
         << " vocabulary-parallel embedding(s); " << stats.params
         << " parameter(s) split\n";
  return success();
}

/// Builds the training step, at the per-rank batch when --mesh splits a
/// static batch.
LogicalResult addTrainStepForMesh(ModuleOp module,
                                  const dist::BuildTrainStepPassOptions &train,
                                  const PlanningOptions &planning) {
  if (planning.mesh.empty())
    return addTrainStep(module, train);
  dist::MeshSpec mesh;
  if (!dist::parseMesh(planning.mesh, mesh).empty())
    return failure();
  // Tensor parallelism splits the forward graph; the step's backward pass
  // then follows from the gradient rules of the collectives it inserted.
  if (failed(splitTensorParallel(module, mesh)))
    return failure();
  return dist::buildTrainStepForMesh(
      module, mesh, [&] { return addTrainStep(module, train); });
}

/// Runs dist-partition on `module` for `--mesh`; a no-op without one.
LogicalResult partitionForMesh(ModuleOp module,
                               const PlanningOptions &planning) {
  if (planning.mesh.empty())
    return success();
  dist::MeshSpec mesh;
  if (!dist::parseMesh(planning.mesh, mesh).empty() ||
      failed(splitTensorParallel(module, mesh)))
    return failure();
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  dist::PartitionPassOptions opts;
  opts.mesh = planning.mesh;
  opts.bucketBytes = planning.gradBucketBytes;
  opts.zero = planning.zero;
  pm.addPass(dist::createPartitionPass(opts));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  return pm.run(module);
}

/// Loads `--cluster` ("local" detects this machine).
std::optional<dist::ClusterSpec> loadCluster(StringRef spec) {
  if (spec == "local")
    return dist::detectLocalCluster();
  std::string error;
  std::optional<dist::ClusterSpec> c = dist::loadClusterFile(spec.str(), error);
  if (!c)
    errs() << "error: " << oneLine(error) << "\n";
  return c;
}

/// Attaches the cluster to `module`, plans it and, when `outDir` is set,
/// writes plan.json and plan.html there; prints the summary to stdout.
FailureOr<dist::Plan> planAndReport(ModuleOp module,
                                    const PlanningOptions &planning,
                                    StringRef outDir, raw_ostream &summaryOs) {
  std::optional<dist::ClusterSpec> cluster = loadCluster(planning.cluster);
  if (!cluster)
    return failure();
  auto attr = dist::ClusterAttr::get(module.getContext(), *cluster);
  if (!attr) {
    errs() << "error: internal: the cluster does not convert to IR\n";
    return failure();
  }
  module->setAttr(dist::DistDialect::getClusterAttrName(), attr);
  FailureOr<std::unique_ptr<dist::ModulePlan>> planned =
      dist::planModule(module, planning.pass);
  if (failed(planned))
    return failure();
  const dist::ModulePlan &mp = **planned;
  summaryOs << dist::planSummary(mp.plan, mp.request);
  summaryOs.flush();
  if (outDir.empty())
    return mp.plan;
  auto write = [&](StringRef file, const std::string &text) {
    SmallString<256> path(outDir);
    sys::path::append(path, file);
    std::string err;
    auto out = openOutputFile(path, &err);
    if (!out) {
      errs() << "error: " << oneLine(err) << "\n";
      return false;
    }
    out->os() << text;
    out->keep();
    return true;
  };
  if (!write("plan.json", dist::planToJson(mp.plan, mp.request)) ||
      !write("plan.html", dist::planToHtml(mp.plan, mp.request)))
    return failure();
  return mp.plan;
}

/// The --mesh that runs `plan`'s layout ("" for one process), or failure
/// with an error when dist-opt cannot partition it.
FailureOr<std::string> meshFromPlan(const dist::Plan &plan) {
  if (plan.stages.size() != 1) {
    errs() << "error: --plan: the plan has " << plan.stages.size()
           << " pipeline stages, and dist-opt partitions data and tensor "
              "parallelism only; give the layout with --mesh (e.g. --mesh "
              "dp=2), or plan for a cluster of one device type\n";
    return failure();
  }
  const dist::StagePlan &stage = plan.stages.front();
  std::string mesh;
  if (stage.dp > 1)
    mesh = "dp=" + std::to_string(stage.dp);
  if (stage.tp > 1)
    mesh += (mesh.empty() ? "tp=" : ",tp=") + std::to_string(stage.tp);
  return mesh;
}

/// Everything between import and codegen: with --plan and no --mesh, plans
/// a copy of the module first and takes the mesh from the plan; builds the
/// training step (at the per-rank batch); plans and reports (once); and
/// partitions for the mesh.
LogicalResult
prepareModule(ModuleOp module,
              const std::optional<dist::BuildTrainStepPassOptions> &train,
              PlanningOptions planning, StringRef outDir,
              raw_ostream &summaryOs) {
  bool planned = false;
  if (planning.applyLayout) {
    OwningOpRef<ModuleOp> probe(module.clone());
    if (train && failed(addTrainStep(*probe, *train)))
      return failure();
    // The summary is printed once the plan is known to compile (a failure
    // is one error line); plan.json and plan.html are written either way.
    std::string summary;
    raw_string_ostream summaryBuffer(summary);
    FailureOr<dist::Plan> plan =
        planAndReport(*probe, planning, outDir, summaryBuffer);
    if (failed(plan))
      return failure();
    FailureOr<std::string> mesh = meshFromPlan(*plan);
    if (failed(mesh))
      return failure();
    const dist::StagePlan &stage = plan->stages.front();
    if (planning.zero == 1 && stage.dp == 1) {
      errs() << "error: --zero 1: the plan has no data parallelism (dp 1) "
                "to shard the optimizer state over\n";
      return failure();
    }
    summaryOs << summary;
    planning.mesh = *mesh;
    planned = true;
    if (mesh->empty())
      summaryOs << "layout: one process (the plan uses one device)\n";
    else
      summaryOs << "layout: --mesh " << *mesh << " (run with mpirun -np "
                << stage.dp * stage.tp << ")\n";
    summaryOs.flush();
  }
  if (train && failed(addTrainStepForMesh(module, *train, planning)))
    return failure();
  if (planning.enabled && !planned &&
      failed(planAndReport(module, planning, outDir, summaryOs)))
    return failure();
  return partitionForMesh(module, planning);
}

int compileMain(StringRef inputFile, StringRef outDir, StringRef emit,
                StringRef conv, StringRef nameOpt, StringRef paramsFile,
                StringRef runtimeLib, StringRef runtimeInclude,
                dist::ONNXImportOptions opts,
                const std::optional<dist::BuildTrainStepPassOptions> &train,
                const PlanningOptions &planning, DialectRegistry &registry) {
  if (!paramsFile.empty()) {
    errs() << "error: --params-file is not used with -o DIR (the parameter "
              "file is written into DIR)\n";
    return 1;
  }
  std::string name =
      cIdentifier(nameOpt.empty() ? sys::path::stem(inputFile) : nameOpt);
  if (!nameOpt.empty() && name != nameOpt) {
    errs() << "error: --name '" << nameOpt
           << "' is not a C identifier (letters, digits, _)\n";
    return 1;
  }
  if (StringRef(name).starts_with("dist_rt")) {
    errs() << "error: --name '" << name
           << "': names starting with dist_rt are reserved for the runtime\n";
    return 1;
  }
  if (auto ec = sys::fs::create_directories(outDir)) {
    errs() << "error: cannot create " << outDir << ": " << ec.message() << "\n";
    return 1;
  }
  SmallString<256> paramPath(outDir);
  sys::path::append(paramPath, name + ".params");
  opts.paramFile = paramPath.str().str();
  std::string modelBytes;
  if (train)
    opts.serializedModel = &modelBytes;

  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OneLineDiagnostics diagnostics(&context);
  std::unique_ptr<dist::PendingParamFile> pendingParams;
  OwningOpRef<ModuleOp> module =
      dist::importONNXFile(&context, inputFile, opts, &pendingParams);
  if (!module) {
    if (!diagnostics.printed)
      errs() << "error: " << inputFile << ": import failed\n";
    return 1;
  }
  auto outPath = [&](const Twine &file) {
    SmallString<256> p(outDir);
    sys::path::append(p, file);
    return p.str().str();
  };
  auto writeText = [&](const std::string &path, auto &&print) {
    std::string err;
    auto out = openOutputFile(path, &err);
    if (!out) {
      errs() << "error: " << oneLine(err) << "\n";
      return false;
    }
    print(out->os());
    out->keep();
    return true;
  };
  auto commitParams = [&]() {
    if (!pendingParams)
      return true;
    std::string err = pendingParams->commit();
    if (!err.empty()) {
      errs() << "error: " << oneLine(err) << "\n";
      return false;
    }
    return true;
  };
  if (failed(prepareModule(*module, train, planning, outDir, outs())))
    return diagnostics.exitCode();
  if (emit == "plan")
    return 0;
  if (emit == "dist") {
    if (!writeText(outPath(name + ".mlir"),
                   [&](raw_ostream &os) { module->print(os); }))
      return 1;
    return commitParams() ? 0 : 1;
  }

  auto signature = dist::getModelSignature(*module);
  auto entryName = dist::getEntryName(*module);
  if (failed(signature) || failed(entryName))
    return diagnostics.exitCode();
  bool hasParams = !signature->params.empty();

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  dist::HostCodegenOptions cgOpts;
  cgOpts.convKernel = conv.str();
  cgOpts.entrySymbol = "dist_model_entry_" + name;
  // The graph function gets a name that cannot clash with C's main.
  cgOpts.entryName = "dist_graph_" + name;
  if (failed(SymbolTable::replaceAllSymbolUses(
          StringAttr::get(&context, *entryName),
          StringAttr::get(&context, cgOpts.entryName), *module)))
    return 1;
  module->lookupSymbol<func::FuncOp>(*entryName).setSymName(cgOpts.entryName);
  std::string trainName = dist::getTrainStepName(*module);
  if (!trainName.empty()) {
    cgOpts.trainEntryName = "dist_train_" + name;
    cgOpts.trainEntrySymbol = "dist_model_train_" + name;
    if (failed(SymbolTable::replaceAllSymbolUses(
            StringAttr::get(&context, trainName),
            StringAttr::get(&context, cgOpts.trainEntryName), *module)))
      return 1;
    module->lookupSymbol<func::FuncOp>(trainName).setSymName(
        cgOpts.trainEntryName);
  }
  dist::buildHostCodegenPipeline(pm, cgOpts);
  if (failed(pm.run(*module))) {
    if (!diagnostics.printed)
      errs() << "error: " << inputFile << ": code generation failed\n";
    return diagnostics.exitCode();
  }
  if (emit == "mlir") {
    if (!writeText(outPath(name + ".mlir"),
                   [&](raw_ostream &os) { module->print(os); }))
      return 1;
    return commitParams() ? 0 : 1;
  }
  if (emit == "llvm") {
    std::string ir;
    if (failed(dist::emitLLVMIR(*module, name, ir)))
      return diagnostics.exitCode();
    if (!writeText(outPath(name + ".ll"), [&](raw_ostream &os) { os << ir; }))
      return 1;
    return commitParams() ? 0 : 1;
  }
  if (emit == "obj") {
    if (failed(dist::emitObjectFile(*module, name, outPath(name + ".o"))))
      return diagnostics.exitCode();
    return commitParams() ? 0 : 1;
  }
  SmallString<128> obj;
  int fd;
  if (sys::fs::createTemporaryFile("dist-opt-" + name, "o", fd, obj)) {
    errs() << "error: cannot create a temporary file\n";
    return 1;
  }
  sys::Process::SafelyCloseFileDescriptor(fd);
  auto removeObj = llvm::make_scope_exit([&] { sys::fs::remove(obj); });
  if (failed(dist::emitObjectFile(*module, name, obj)))
    return diagnostics.exitCode();
  dist::EmitOptions emitOpts;
  emitOpts.name = name;
  emitOpts.outDir = outDir.str();
  emitOpts.paramFileName = hasParams ? name + ".params" : "";
  emitOpts.runtimeLib =
      runtimeLib.empty() ? defaultRuntimeLib() : runtimeLib.str();
  emitOpts.runtimeInclude =
      runtimeInclude.empty() ? DIST_RUNTIME_INCLUDE_DIR : runtimeInclude.str();
  const char *cc = getenv("CC");
  emitOpts.cc = cc && *cc ? cc : "cc";
  emitOpts.entrySymbol = cgOpts.entrySymbol;
  emitOpts.trainEntrySymbol = cgOpts.trainEntrySymbol;
  if (train)
    emitOpts.onnxFileName = name + ".onnx";
  if (!sys::fs::exists(emitOpts.runtimeLib)) {
    errs() << "error: the runtime library " << emitOpts.runtimeLib
           << " does not exist (build the dist_rt_static target or pass "
              "--runtime-lib)\n";
    return 1;
  }
  if (failed(dist::linkArtifacts(*module, *signature, emitOpts, obj)))
    return diagnostics.exitCode();
  // Training artifacts keep the model for `train --export-onnx`.
  if (train && !writeText(outPath(emitOpts.onnxFileName),
                          [&](raw_ostream &os) { os << modelBytes; }))
    return 1;
  return commitParams() ? 0 : 1;
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
  cl::opt<std::string> emit(
      "emit",
      cl::desc("With -o DIR: what to write: exe (default: executable, shared "
               "library, header, manifest, parameters), obj, llvm, mlir "
               "(lowered), dist (imported IR)"),
      cl::value_desc("kind"), cl::cat(category));
  cl::opt<std::string> conv(
      "conv",
      cl::desc("With -o DIR: how 2-D f32 convolutions run: auto (default: "
               "direct when this CPU has AVX-512), direct (the runtime's "
               "direct convolution) or im2col (im2col + GEMM)"),
      cl::init("auto"), cl::value_desc("kind"), cl::cat(category));
  cl::opt<std::string> modelName(
      "name",
      cl::desc("Name of the artifacts and prefix of the C API (default: the "
               "model file's stem)"),
      cl::value_desc("name"), cl::cat(category));
  cl::opt<std::string> runtimeLib(
      "runtime-lib", cl::desc("The runtime library to link (libdist_rt.a)"),
      cl::value_desc("file"), cl::cat(category), cl::Hidden);
  cl::opt<std::string> runtimeInclude(
      "runtime-include", cl::desc("The runtime's include directory"),
      cl::value_desc("dir"), cl::cat(category), cl::Hidden);
  cl::OptionCategory trainCategory("dist-opt training options (with --train)");
  cl::opt<bool> trainFlag(
      "train",
      cl::desc("Also compile a training step (executable: `train` command)"),
      cl::cat(trainCategory));
  cl::opt<std::string> loss(
      "loss",
      cl::desc("Loss on the output: mse, cross_entropy (default), bce, or "
               "model (the output is the loss)"),
      cl::init("cross_entropy"), cl::cat(trainCategory));
  cl::opt<std::string> lossOutput(
      "loss-output",
      cl::desc("Output the loss applies to (default: the first)"),
      cl::value_desc("name"), cl::cat(trainCategory));
  cl::opt<int64_t> ignoreIndex(
      "ignore-index", cl::desc("Label cross_entropy ignores (default -100)"),
      cl::init(-100), cl::cat(trainCategory));
  cl::opt<std::string> optimizer(
      "optimizer",
      cl::desc("sgd (default), momentum, adam or adamw (torch.optim)"),
      cl::init("sgd"), cl::cat(trainCategory));
  cl::opt<double> lr("lr", cl::desc("Learning rate (default 1e-3)"),
                     cl::init(1e-3), cl::cat(trainCategory));
  cl::opt<double> momentum(
      "momentum", cl::desc("Momentum of --optimizer=momentum (default 0.9)"),
      cl::init(0.9), cl::cat(trainCategory));
  cl::opt<double> beta1("beta1", cl::desc("Adam beta1 (default 0.9)"),
                        cl::init(0.9), cl::cat(trainCategory));
  cl::opt<double> beta2("beta2", cl::desc("Adam beta2 (default 0.999)"),
                        cl::init(0.999), cl::cat(trainCategory));
  cl::opt<double> eps("eps", cl::desc("Adam epsilon (default 1e-8)"),
                      cl::init(1e-8), cl::cat(trainCategory));
  cl::opt<double> weightDecay(
      "weight-decay",
      cl::desc("Weight decay (default: 0.01 for adamw, 0 otherwise)"),
      cl::init(-1), cl::cat(trainCategory));
  cl::opt<std::string> lrSchedule(
      "lr-schedule", cl::desc("constant (default), cosine or warmup-linear"),
      cl::init("constant"), cl::cat(trainCategory));
  cl::opt<int64_t> warmupSteps(
      "warmup-steps", cl::desc("Warm-up steps of --lr-schedule=warmup-linear"),
      cl::init(0), cl::cat(trainCategory));
  cl::opt<double> clipGradNorm(
      "clip-grad-norm",
      cl::desc("Clip the global gradient norm to this value (0: off)"),
      cl::init(0), cl::cat(trainCategory));
  cl::list<std::string> freeze(
      "freeze",
      cl::desc("Initializers to keep as they are (no gradient, no update): "
               "names or glob patterns, comma-separated or repeated, e.g. "
               "--freeze='pe,encoder.*'"),
      cl::value_desc("names"), cl::CommaSeparated, cl::cat(trainCategory));
  cl::OptionCategory planCategory("dist-opt planning options");
  cl::opt<std::string> meshOpt(
      "mesh",
      cl::desc("Partition for this device mesh, e.g. dp=2 (data parallel over "
               "2 ranks); run the result with mpirun -np <ranks>"),
      cl::value_desc("axis=size,..."), cl::cat(planCategory));
  cl::opt<double> gradBucketMbOpt(
      "grad-bucket-mb",
      cl::desc("Size of a fused gradient all-reduce bucket in MiB (default "
               "4)"),
      cl::init(4.0), cl::cat(planCategory));
  cl::opt<int64_t> zeroOpt(
      "zero",
      cl::desc("ZeRO stage with --mesh dp=N: 1 shards the optimizer state "
               "over the dp ranks (default 0: every rank keeps all of it)"),
      cl::init(0), cl::cat(planCategory));
  cl::opt<std::string> clusterOpt(
      "cluster",
      cl::desc("Cluster to plan for: local (default: detect this machine) or "
               "a cluster file (YAML or JSON)"),
      cl::value_desc("local|file"), cl::init("local"), cl::cat(planCategory));
  cl::opt<std::string> planOpt(
      "plan",
      cl::desc("compile the planner's layout (its dp and tp degrees "
               "become the mesh): auto searches a plan, FILE applies a "
               "plan.json edited by hand (rejected with the reason when it "
               "does not fit); without --plan, --cluster only reports one"),
      cl::value_desc("auto|file"), cl::cat(planCategory));
  cl::opt<std::string> objectiveOpt(
      "objective",
      cl::desc("step-time (default) or cost (money per hour at "
               "--min-throughput)"),
      cl::init("step-time"), cl::cat(planCategory));
  cl::opt<double> minThroughputOpt(
      "min-throughput",
      cl::desc("Samples per second the cost objective must reach"), cl::init(0),
      cl::cat(planCategory));
  cl::opt<std::string> plannerOpt(
      "planner", cl::desc("Search: exact (default), rl, greedy or exhaustive"),
      cl::init("exact"), cl::cat(planCategory));
  cl::opt<int64_t> globalBatchOpt(
      "global-batch",
      cl::desc("Samples per step to plan for (default: the model's batch)"),
      cl::init(0), cl::cat(planCategory));
  cl::opt<int64_t> planThreadsOpt(
      "plan-threads",
      cl::desc("CPU threads per rank the cost model assumes (default: all "
               "cores)"),
      cl::init(0), cl::cat(planCategory));
  cl::opt<bool> psTablesOpt(
      "ps-tables",
      cl::desc("Plan embedding tables as parameter-server tables with "
               "row-wise updates (HeterPS)"),
      cl::cat(planCategory));
  PassPipelineCLParser passPipeline("", "Passes to run after import", "p");
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::ParseCommandLineOptions(
      argc, argv,
      "dist-opt: import ONNX models into the dist dialect, or run passes on "
      "MLIR files like mlir-opt\n");

  // `-o DIR` (a directory, or a name without extension) or --emit compiles;
  // otherwise the imported IR is printed.
  bool compile = false;
  if (!emit.empty()) {
    compile = true;
  } else if (emit.empty() && outputFile != "-") {
    StringRef out = outputFile.getValue();
    compile = out.ends_with("/") || sys::fs::is_directory(out) ||
              (!sys::fs::exists(out) && !sys::path::has_extension(out));
  }
  // Printing the imported IR over an existing file that is not MLIR would
  // destroy it (a mistyped output directory, say).
  if (!compile && outputFile != "-" && sys::fs::is_regular_file(outputFile) &&
      sys::path::extension(outputFile) != ".mlir") {
    errs() << "error: -o " << outputFile
           << ": exists and is not a directory (pass a directory to compile "
              "the model, or a .mlir file for the imported IR)\n";
    return 1;
  }
  if (compile && outputFile == "-") {
    errs() << "error: --emit=" << emit << " needs -o DIR\n";
    return 1;
  }
  if (!emit.empty() &&
      !llvm::is_contained({"exe", "obj", "llvm", "mlir", "dist", "plan"},
                          emit.getValue())) {
    errs() << "error: unknown --emit kind '" << emit
           << "' (expected exe, obj, llvm, mlir, dist or plan)\n";
    return 1;
  }
  if (!llvm::is_contained({"auto", "direct", "im2col"}, conv.getValue())) {
    errs() << "error: unknown --conv kind '" << conv
           << "' (expected auto, direct or im2col)\n";
    return 1;
  }
  PlanningOptions planning;
  {
    cl::Option *planFlags[] = {&clusterOpt,       &planOpt,    &objectiveOpt,
                               &minThroughputOpt, &plannerOpt, &globalBatchOpt,
                               &planThreadsOpt,   &psTablesOpt};
    for (cl::Option *o : planFlags)
      planning.enabled |= o->getNumOccurrences() > 0;
    planning.enabled |= emit == "plan";
    planning.cluster = clusterOpt;
    planning.pass.objective = objectiveOpt;
    planning.pass.minThroughput = minThroughputOpt;
    planning.pass.strategy = plannerOpt;
    planning.pass.globalBatch = globalBatchOpt;
    planning.pass.threads = planThreadsOpt;
    planning.pass.psTables = psTablesOpt;
    // The plan prices convolutions as codegen will run them.
    planning.pass.conv = conv;
    if (!planOpt.empty() && planOpt != "auto")
      planning.pass.planFile = planOpt;
    if (!dist::parseObjective(objectiveOpt)) {
      errs() << "error: --objective: unknown objective '" << objectiveOpt
             << "' (expected step-time or cost)\n";
      return 1;
    }
    if (!dist::parsePlanStrategy(plannerOpt)) {
      errs() << "error: --planner: unknown planner '" << plannerOpt
             << "' (expected exact, rl, greedy or exhaustive)\n";
      return 1;
    }
    if (objectiveOpt == "cost" && !(minThroughputOpt > 0)) {
      errs() << "error: --min-throughput: the cost objective needs a "
                "positive throughput (samples/s)\n";
      return 1;
    }
    if (minThroughputOpt.getNumOccurrences() && objectiveOpt != "cost") {
      errs() << "error: --min-throughput: only used with --objective=cost\n";
      return 1;
    }
    if (globalBatchOpt < 0 || planThreadsOpt < 0) {
      errs() << "error: --"
             << (globalBatchOpt < 0 ? "global-batch" : "plan-threads")
             << ": must not be negative\n";
      return 1;
    }
    if (meshOpt.getNumOccurrences()) {
      dist::MeshSpec mesh;
      std::string why = dist::parseMesh(meshOpt, mesh);
      if (!why.empty()) {
        errs() << "error: --mesh: " << why << "\n";
        return 1;
      }
      planning.mesh = meshOpt;
    }
    if (planOpt.getNumOccurrences()) {
      if (meshOpt.getNumOccurrences()) {
        errs() << "error: --mesh and --plan both give the layout: use --mesh "
                  "for a layout by hand, --plan for the planner's\n";
        return 1;
      }
      // --emit=plan stops at the plan; anything further compiles its
      // layout.
      planning.applyLayout = emit != "plan";
    }
    if (!(gradBucketMbOpt > 0) || gradBucketMbOpt > 1024 * 1024) {
      errs() << "error: --grad-bucket-mb: must be a positive size in MiB, "
                "got "
             << gradBucketMbOpt << "\n";
      return 1;
    }
    planning.gradBucketBytes =
        std::max<int64_t>(1, static_cast<int64_t>(gradBucketMbOpt * 1048576));
    if (zeroOpt.getNumOccurrences()) {
      if (zeroOpt != 0 && zeroOpt != 1) {
        errs() << "error: --zero: the ZeRO stage must be 0 or 1 (optimizer "
                  "state sharding), got "
               << zeroOpt << "\n";
        return 1;
      }
      // With --plan the mesh is known once planned (prepareModule).
      if (zeroOpt == 1 && planning.mesh.empty() && !planning.applyLayout) {
        errs() << "error: --zero 1 needs --mesh with a dp axis (e.g. --mesh "
                  "dp=2)\n";
        return 1;
      }
      planning.zero = zeroOpt;
    }
    if (!planning.pass.planFile.empty() &&
        !sys::fs::exists(planning.pass.planFile)) {
      errs() << "error: --plan: " << planning.pass.planFile
             << ": no such file\n";
      return 1;
    }
  }
  std::optional<dist::BuildTrainStepPassOptions> train;
  {
    cl::Option *trainOnly[] = {&loss,         &lossOutput,
                               &ignoreIndex,  &optimizer,
                               &lr,           &momentum,
                               &beta1,        &beta2,
                               &eps,          &weightDecay,
                               &lrSchedule,   &warmupSteps,
                               &clipGradNorm, std::addressof(freeze)};
    for (cl::Option *o : trainOnly)
      if (o->getNumOccurrences() && !trainFlag) {
        errs() << "error: --" << o->ArgStr << " needs --train\n";
        return 1;
      }
    if (trainFlag) {
      if (weightDecay.getNumOccurrences() && !(weightDecay >= 0)) {
        errs() << "error: --weight-decay: must not be negative\n";
        return 1;
      }
      dist::BuildTrainStepPassOptions t;
      t.loss = loss;
      t.lossOutput = lossOutput;
      t.ignoreIndex = ignoreIndex;
      t.optimizer = optimizer;
      t.lr = lr;
      t.lrSchedule = lrSchedule;
      t.warmupSteps = warmupSteps;
      t.momentum = momentum;
      t.beta1 = beta1;
      t.beta2 = beta2;
      t.eps = eps;
      t.weightDecay = weightDecay;
      t.clipGradNorm = clipGradNorm;
      t.freeze.assign(freeze.begin(), freeze.end());
      std::string option;
      std::string why = dist::checkTrainStepOptions(t, option);
      if (!why.empty()) {
        errs() << "error: --" << option << ": " << why << "\n";
        return 1;
      }
      train = t;
      // Options that the chosen loss, optimizer or schedule never reads:
      // said, not silently dropped.
      auto unused = [&](cl::Option &o, bool used, const std::string &why) {
        if (o.getNumOccurrences() && !used)
          errs() << "warning: --" << o.ArgStr << " has no effect with " << why
                 << "\n";
      };
      unused(warmupSteps, t.lrSchedule == "warmup-linear",
             "--lr-schedule=" + t.lrSchedule);
      unused(ignoreIndex, t.loss == "cross_entropy", "--loss=" + t.loss);
      unused(momentum, t.optimizer == "momentum", "--optimizer=" + t.optimizer);
      bool adam = t.optimizer == "adam" || t.optimizer == "adamw";
      unused(beta1, adam, "--optimizer=" + t.optimizer);
      unused(beta2, adam, "--optimizer=" + t.optimizer);
      unused(eps, adam, "--optimizer=" + t.optimizer);
    }
  }
  dist::ONNXImportOptions opts;
  opts.maxInlineElements = maxInline;
  opts.floatScalarsAsParams = train.has_value();
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
  // An empty --name (an unset shell variable, say) is refused rather than
  // quietly replaced by the file's stem.
  if (compile && modelName.getNumOccurrences() && modelName.empty()) {
    errs() << "error: --name is empty (give a C identifier, or leave the "
              "option out to use the model file's stem)\n";
    return 1;
  }
  if (compile)
    return compileMain(inputFile, outputFile,
                       emit.empty() ? std::string("exe") : emit.getValue(),
                       conv, modelName, paramsFile, runtimeLib, runtimeInclude,
                       std::move(opts), train, planning, registry);
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
  // The IR may go to stdout: the summary goes to stderr.
  if (failed(prepareModule(*module, train, planning, "", errs())))
    return 1;
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
/// A micro-model whose generated loops stand for one kernel class, with a
/// dynamic batch N; `rowShape` is the shape of one batch row of input x.
struct LoopProbe {
  const char *kernelClass;
  const char *onnxText;
  std::vector<int64_t> rowShape;
  /// Measures the FLOP/s of transcendental functions instead of bytes/s
  /// (DeviceCalibration::loopFlopsByThreads).
  bool arithmetic = false;
};

const LoopProbe kLoopProbes[] = {
    {"elementwise",
     "<ir_version: 8, opset_import: [\"\" : 17]>\n"
     "g (float[N,1024] x) => (float[N,1024] y) <float c = {0.5}> {\n"
     "  t = Mul(x, c)\n  u = Add(t, c)\n  y = Relu(u)\n}\n",
     {1024}},
    {"reduction",
     "<ir_version: 8, opset_import: [\"\" : 17]>\n"
     "g (float[N,1024] x) => (float[N,1024] y, float[1024] z) {\n"
     "  y = Softmax <axis = -1> (x)\n"
     "  ax = Constant <value = int64[1] {0}> ()\n"
     "  z = ReduceSum <keepdims = 0> (x, ax)\n}\n",
     {1024}},
    {"movement",
     "<ir_version: 8, opset_import: [\"\" : 17]>\n"
     "g (float[N,32,32] x) => (float[N,32,32] y, float[N,34,34] z) {\n"
     "  y = Transpose <perm = [0, 2, 1]> (x)\n"
     "  pd = Constant <value = int64[6] {0, 1, 1, 0, 1, 1}> ()\n"
     "  z = Pad(x, pd)\n}\n",
     {32, 32}},
    {"window",
     "<ir_version: 8, opset_import: [\"\" : 17]>\n"
     "g (float[N,16,16,16] x) => (float[N,16,16,16] y) {\n"
     "  y = MaxPool <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x)\n}\n",
     {16, 16, 16}},
    // GELU as transformers export it: arithmetic-bound while its tensor
    // stays in cache (measured on the GPT-style LM, whose GELU over 256 x
    // 1024 floats ran at 0.34 ns an element at one thread, where the
    // elementwise probe's bandwidth prices it at 0.06 and half the vector
    // peak at 0.15).
    {"arithmetic",
     "<ir_version: 8, opset_import: [\"\" : 17]>\n"
     "g (float[N,1024] x) => (float[N,1024] y) <float h = {0.5}, "
     "float r = {0.70710678}, float one = {1.0}> {\n"
     "  t = Mul(x, r)\n  e = Erf(t)\n  u = Add(e, one)\n  v = Mul(x, u)\n"
     "  y = Mul(v, h)\n}\n",
     {1024},
     /*arithmetic=*/true},
};

/// Writes an f32 .npy of `shape` with values in [0, 1).
bool writeNpy(StringRef path, ArrayRef<int64_t> shape) {
  std::string dims;
  int64_t n = 1;
  for (int64_t d : shape) {
    dims += std::to_string(d) + ", ";
    n *= d;
  }
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (ec)
    return false;
  os << "\x93NUMPY" << '\x01' << '\x00';
  uint16_t len = static_cast<uint16_t>(header.size());
  os.write(reinterpret_cast<const char *>(&len), 2);
  os << header;
  std::vector<float> row(4096);
  for (size_t i = 0; i < row.size(); ++i)
    row[i] = static_cast<float>((i * 37) % 101) / 101.0f;
  for (int64_t done = 0; done < n;) {
    int64_t k = std::min<int64_t>(n - done, row.size());
    os.write(reinterpret_cast<const char *>(row.data()), k * sizeof(float));
    done += k;
  }
  return !os.has_error();
}

/// Bytes the cost model counts for one run of the probe at batch `n`; its
/// FLOPs in transcendental functions go to `flopsOut`.
std::optional<double> probeBytes(StringRef modelPath, int64_t n,
                                 DialectRegistry &registry, int64_t *kernelsOut,
                                 double *flopsOut) {
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  dist::ONNXImportOptions opts;
  SmallString<128> params;
  int fd;
  if (sys::fs::createTemporaryFile("dist-probe", "params", fd, params))
    return std::nullopt;
  sys::Process::SafelyCloseFileDescriptor(fd);
  auto removeParams = llvm::make_scope_exit([&] { sys::fs::remove(params); });
  opts.paramFile = params.str().str();
  OwningOpRef<ModuleOp> module =
      dist::importONNXFile(&context, modelPath, opts, nullptr);
  if (!module)
    return std::nullopt;
  func::FuncOp func = dist::findPlannedFunction(*module);
  if (!func || failed(dist::bindBatch(func, n)))
    return std::nullopt;
  FailureOr<dist::FunctionCosts> costs = dist::collectLayerCosts(func);
  if (failed(costs))
    return std::nullopt;
  double bytes = 0, flops = 0;
  int64_t kernels = 0;
  for (const dist::LayerCost &l : costs->layers) {
    bytes += l.fwd.bytes;
    flops += l.fwd.mathFlops;
    kernels += l.fwd.kernels;
  }
  if (kernelsOut)
    *kernelsOut = std::max<int64_t>(1, kernels);
  if (flopsOut)
    *flopsOut = flops * n;
  return bytes * n;
}

/// Measures the throughput of generated loops per kernel class at a few
/// working-set sizes and thread counts (1, powers of two, `threadsMax`) by
/// compiling and timing the probes. Without `quick` every point is timed
/// in three passes over all probes, and keeps its median: this machine's
/// memory bandwidth drops for seconds at a time (the elementwise probe at
/// 64 MiB and one thread ran at 36 and 14 GB/s in two calibrations), and
/// a point timed inside such a spell priced its kernels for a slower
/// machine.
bool calibrateLoops(dist::DeviceCalibration &cal, int64_t threadsMax,
                    bool quick, bool quiet, DialectRegistry &registry) {
  SmallString<128> dir;
  if (sys::fs::createUniqueDirectory("dist-calibrate-loops", dir)) {
    errs() << "error: cannot create a temporary directory\n";
    return false;
  }
  auto removeDir =
      llvm::make_scope_exit([&] { sys::fs::remove_directories(dir); });
  // Below about 128 KiB a kernel has too little work to go to the pool.
  std::vector<double> footprints = {256.0 * 1024, 4.0 * 1024 * 1024};
  if (!quick) {
    footprints.insert(footprints.begin(), 64.0 * 1024);
    footprints.push_back(64.0 * 1024 * 1024);
  }
  std::vector<int64_t> threadCounts = {1};
  for (int64_t t = 2; t < threadsMax && !quick; t *= 2)
    threadCounts.push_back(t);
  if (threadsMax > 1)
    threadCounts.push_back(threadsMax);
  const int passes = quick ? 1 : 3;

  // One timed point: a probe at one batch, at every thread count.
  struct Point {
    const LoopProbe *probe;
    std::string exe;
    int64_t batch;
    double bytes;
    double flops;
    int64_t kernels;
    /// Bytes/s (the arithmetic probe: FLOP/s) of each pass per entry of
    /// threadCounts.
    std::vector<std::vector<double>> bytesPerS;
  };
  std::vector<Point> points;
  for (const LoopProbe &probe : kLoopProbes) {
    SmallString<256> model(dir), out(dir);
    sys::path::append(model, std::string(probe.kernelClass) + ".onnxtext");
    sys::path::append(out, probe.kernelClass);
    {
      std::error_code ec;
      raw_fd_ostream os(model, ec);
      if (ec) {
        errs() << "error: " << model << ": " << ec.message() << "\n";
        return false;
      }
      os << probe.onnxText;
    }
    if (compileMain(model, out, "exe", "auto", probe.kernelClass, "", "", "",
                    dist::ONNXImportOptions(), std::nullopt, PlanningOptions(),
                    registry) != 0) {
      errs() << "error: calibration probe '" << probe.kernelClass
             << "' failed to compile\n";
      return false;
    }
    SmallString<256> exe(out);
    sys::path::append(exe, probe.kernelClass);
    int64_t rowElems = 1;
    for (int64_t d : probe.rowShape)
      rowElems *= d;
    for (double target : footprints) {
      // Input plus output of a row, roughly.
      int64_t n =
          std::max<int64_t>(1, static_cast<int64_t>(target / (8.0 * rowElems)));
      int64_t kernels = 1;
      double flops = 0;
      std::optional<double> bytes =
          probeBytes(model, n, registry, &kernels, &flops);
      if (!bytes || (probe.arithmetic && !(flops > 0))) {
        errs() << "error: calibration probe '" << probe.kernelClass
               << "' has no cost at batch " << n << "\n";
        return false;
      }
      points.push_back({&probe, exe.str().str(), n, *bytes, flops, kernels,
                        std::vector<std::vector<double>>(threadCounts.size())});
    }
  }

  SmallString<256> input(dir), stdoutFile(dir);
  sys::path::append(input, "x.npy");
  sys::path::append(stdoutFile, "bench.txt");
  std::string inputArg = "x=" + input.str().str();
  // Outputs go to the temporary directory, never the caller's one.
  std::string outputArg = dir.str().str();
  for (int pass = 1; pass <= passes; ++pass) {
    for (Point &point : points) {
      const char *kernelClass = point.probe->kernelClass;
      std::vector<int64_t> shape = {point.batch};
      shape.insert(shape.end(), point.probe->rowShape.begin(),
                   point.probe->rowShape.end());
      if (!writeNpy(input, shape)) {
        errs() << "error: cannot write " << input << "\n";
        return false;
      }
      int64_t iterations = std::clamp<int64_t>(
          static_cast<int64_t>(0.15 / (point.bytes / 1e10)), 5, 5000);
      std::string iterArg = std::to_string(iterations);
      for (size_t t = 0; t < threadCounts.size(); ++t) {
        std::string threadsArg = std::to_string(threadCounts[t]);
        SmallVector<StringRef> args = {point.exe,   "--input",      inputArg,
                                       "--threads", threadsArg,     "--bench",
                                       iterArg,     "--output-dir", outputArg};
        std::optional<StringRef> redirects[] = {
            std::nullopt, StringRef(stdoutFile), std::nullopt};
        std::string execError;
        if (sys::ExecuteAndWait(point.exe, args, std::nullopt, redirects, 0, 0,
                                &execError) != 0) {
          errs() << "error: calibration probe '" << kernelClass
                 << "' failed to run" << (execError.empty() ? "" : ": ")
                 << execError << "\n";
          return false;
        }
        auto text = MemoryBuffer::getFile(stdoutFile);
        double ms = 0;
        if (text) {
          StringRef rest = (*text)->getBuffer();
          size_t at = rest.find("latency_ms_median=");
          if (at != StringRef::npos)
            rest.substr(at + 18)
                .take_until([](char c) { return c == ' ' || c == '\n'; })
                .getAsDouble(ms);
        }
        if (!(ms > 0)) {
          errs() << "error: calibration probe '" << kernelClass
                 << "' printed no latency\n";
          return false;
        }
        // The run's fixed cost is not loop time.
        double seconds = std::max(ms * 1e-3 - cal.stepOverheadS, 1e-9);
        bool arithmetic = point.probe->arithmetic;
        double rate = (arithmetic ? point.flops : point.bytes) / seconds;
        point.bytesPerS[t].push_back(rate);
        if (!quiet)
          errs() << "calibrate: loops " << kernelClass << " "
                 << format("%.0f", point.bytes / 1024) << " KiB, "
                 << threadCounts[t]
                 << (threadCounts[t] == 1 ? " thread" : " threads")
                 << (passes > 1 ? " (pass " + std::to_string(pass) + " of " +
                                      std::to_string(passes) + ")"
                                : std::string())
                 << ": " << format("%.1f", rate / 1e9)
                 << (arithmetic ? " GFLOP/s\n" : " GB/s\n");
      }
    }
  }

  // A point's footprint is what one kernel of the probe touches, as the
  // cost model looks it up.
  for (const LoopProbe &probe : kLoopProbes) {
    for (size_t t = 0; t < threadCounts.size(); ++t) {
      std::vector<std::pair<double, double>> list;
      for (Point &point : points) {
        if (point.probe != &probe)
          continue;
        std::vector<double> &passRates = point.bytesPerS[t];
        auto middle = passRates.begin() + passRates.size() / 2;
        std::nth_element(passRates.begin(), middle, passRates.end());
        list.emplace_back(point.bytes / point.kernels, *middle);
      }
      std::sort(list.begin(), list.end());
      if (probe.arithmetic) {
        // The fastest working set is the arithmetic-bound one (the largest
        // is memory-bound, the smallest overhead-bound).
        double best = 0;
        for (const auto &[footprint, flopsPerS] : list)
          best = std::max(best, flopsPerS);
        cal.loopFlopsByThreads[threadCounts[t]] = best;
        continue;
      }
      if (threadCounts[t] == 1)
        cal.loopBandwidth[probe.kernelClass] = std::move(list);
      else
        cal.loopBandwidthByThreads[threadCounts[t]][probe.kernelClass] =
            std::move(list);
    }
  }
  return true;
}

/// Times all_reduce between two local MPI ranks (dist-calibrate-comm under
/// mpirun) and stores the alpha-beta fit as the node's intra link. Without
/// mpirun, or when the run fails, says so in one warning line and keeps the
/// default link.
void calibrateCollectives(dist::ClusterSpec &cluster, StringRef toolDir,
                          bool quick, bool quiet) {
  auto warn = [&](const Twine &why) {
    errs() << "warning: calibrate: collectives not measured (" << why
           << "); the intra-node link keeps its default figures\n";
  };
  llvm::ErrorOr<std::string> mpirun = sys::findProgramByName("mpirun");
  if (!mpirun)
    return warn("mpirun not found");
  SmallString<256> exe(toolDir);
  sys::path::append(exe, "dist-calibrate-comm");
  if (!sys::fs::can_execute(exe))
    return warn(Twine(exe) + " is missing");
  SmallString<128> json;
  int fd;
  if (sys::fs::createTemporaryFile("dist-calibrate-comm", "json", fd, json))
    return warn("cannot create a temporary file");
  sys::Process::SafelyCloseFileDescriptor(fd);
  auto removeJson = llvm::make_scope_exit([&] { sys::fs::remove(json); });
  std::vector<std::string> argStorage = {*mpirun};
  if (::getuid() == 0)
    argStorage.push_back("--allow-run-as-root");
  for (const char *a :
       {"--oversubscribe", "--mca", "btl", "self,vader", "-np", "2"})
    argStorage.push_back(a);
  argStorage.push_back(exe.str().str());
  argStorage.push_back("--json");
  argStorage.push_back(json.str().str());
  if (quick)
    argStorage.push_back("--quick");
  SmallVector<StringRef> args(argStorage.begin(), argStorage.end());
  SmallString<128> log;
  if (sys::fs::createTemporaryFile("dist-calibrate-comm", "log", fd, log))
    return warn("cannot create a temporary file");
  sys::Process::SafelyCloseFileDescriptor(fd);
  auto removeLog = llvm::make_scope_exit([&] { sys::fs::remove(log); });
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string execError;
  int rc = sys::ExecuteAndWait(*mpirun, args, std::nullopt, redirects,
                               /*SecondsToWait=*/120, 0, &execError);
  if (rc != 0) {
    std::string detail;
    if (auto text = MemoryBuffer::getFile(log)) {
      StringRef t = (*text)->getBuffer().trim();
      detail =
          t.substr(t.rfind('\n') == StringRef::npos ? 0 : t.rfind('\n') + 1)
              .str();
    }
    if (rc == -2)
      return warn("mpirun timed out after 120 s");
    return warn("mpirun exited with " + Twine(rc) +
                (detail.empty() ? "" : ": " + oneLine(detail)));
  }
  auto text = MemoryBuffer::getFile(json);
  llvm::Expected<llvm::json::Value> parsed =
      text ? llvm::json::parse((*text)->getBuffer())
           : llvm::Expected<llvm::json::Value>(
                 llvm::createStringError("no output"));
  if (!parsed) {
    std::string why = llvm::toString(parsed.takeError());
    return warn("bad output: " + why);
  }
  const llvm::json::Object *obj = parsed->getAsObject();
  std::optional<double> latency =
      obj ? obj->getNumber("latency_s") : std::nullopt;
  std::optional<double> bandwidth =
      obj ? obj->getNumber("bandwidth_bytes_per_s") : std::nullopt;
  if (!latency || !bandwidth || !(*latency >= 0) || !(*bandwidth > 0))
    return warn("output without latency_s / bandwidth_bytes_per_s");
  for (dist::NodeSpec &node : cluster.nodes)
    node.intraLink = {*bandwidth, *latency};
  if (!quiet)
    errs() << "calibrate: all_reduce between 2 local ranks: latency "
           << format("%.2f", *latency * 1e6) << " us, bandwidth "
           << format("%.2f", *bandwidth / 1e9) << " GB/s\n";
}

/// `dist-opt calibrate -o local.yaml`: measures this machine with the
/// runtime's dist-calibrate tool (next to dist-opt) and writes the detected
/// local cluster with the measurements as a cluster file.
int calibrateMain(int argc, char **argv, DialectRegistry &registry) {
  cl::OptionCategory category("dist-opt calibrate options");
  cl::opt<std::string> output("o", cl::desc("Cluster file to write"),
                              cl::value_desc("file"), cl::Required,
                              cl::cat(category));
  cl::opt<int64_t> threadsMax(
      "threads-max",
      cl::desc("Largest thread count to measure (default: all "
               "cores)"),
      cl::init(0), cl::cat(category));
  cl::opt<bool> quick("quick", cl::desc("Fewer sizes, shorter runs"),
                      cl::cat(category));
  cl::opt<bool> quiet("quiet", cl::desc("No progress lines"),
                      cl::cat(category));
  cl::opt<std::string> tool(
      "calibrate-tool", cl::desc("The dist-calibrate executable"),
      cl::value_desc("file"), cl::cat(category), cl::Hidden);
  // The probes are compiled with the normal pipeline, which reads these.
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "dist-opt calibrate: measure this machine for the cost "
      "model\n");
  if (threadsMax < 0) {
    errs() << "error: --threads-max: must not be negative\n";
    return 1;
  }
  // Opened first so that an unwritable path fails before measuring; the
  // file replaces an existing one only once everything succeeded.
  std::string err;
  auto out = openOutputFile(output, &err);
  if (!out) {
    errs() << "error: " << oneLine(err) << "\n";
    return 1;
  }
  std::string exe = tool;
  if (exe.empty()) {
    std::string self = sys::fs::getMainExecutable(nullptr, nullptr);
    SmallString<256> p(sys::path::parent_path(self));
    sys::path::append(p, "dist-calibrate");
    exe = p.str().str();
  }
  if (!sys::fs::can_execute(exe)) {
    errs() << "error: the calibration tool " << exe
           << " is missing (build the dist-calibrate target)\n";
    return 1;
  }
  SmallString<128> json;
  int fd;
  if (sys::fs::createTemporaryFile("dist-calibrate", "json", fd, json)) {
    errs() << "error: cannot create a temporary file\n";
    return 1;
  }
  sys::Process::SafelyCloseFileDescriptor(fd);
  auto removeJson = llvm::make_scope_exit([&] { sys::fs::remove(json); });
  std::vector<std::string> argStorage = {exe, "--json", json.str().str()};
  if (threadsMax > 0) {
    argStorage.push_back("--threads-max");
    argStorage.push_back(std::to_string(threadsMax));
  }
  if (quick)
    argStorage.push_back("--quick");
  if (quiet)
    argStorage.push_back("--quiet");
  SmallVector<StringRef> args(argStorage.begin(), argStorage.end());
  std::string execError;
  int rc = sys::ExecuteAndWait(exe, args, std::nullopt, {}, 0, 0, &execError);
  if (rc != 0) {
    errs() << "error: calibration failed"
           << (execError.empty() ? "" : ": " + execError) << " (exit " << rc
           << ")\n";
    return 1;
  }
  auto buffer = MemoryBuffer::getFile(json);
  if (!buffer) {
    errs() << "error: cannot read the calibration output: "
           << buffer.getError().message() << "\n";
    return 1;
  }
  std::string error;
  std::optional<dist::DeviceCalibration> cal =
      dist::parseCalibrationJson((*buffer)->getBuffer().str(), error);
  if (!cal) {
    errs() << "error: " << oneLine(error) << "\n";
    return 1;
  }
  int64_t loopThreadsMax = threadsMax;
  if (loopThreadsMax == 0)
    loopThreadsMax = std::max<int64_t>(
        1, static_cast<int64_t>(std::thread::hardware_concurrency()));
  if (!calibrateLoops(*cal, loopThreadsMax, quick, quiet, registry))
    return 1;
  dist::ClusterSpec cluster = dist::detectLocalCluster();
  dist::applyCalibration(cluster, *cal);
  calibrateCollectives(cluster, sys::path::parent_path(exe), quick, quiet);
  out->os() << dist::clusterToYaml(cluster);
  out->keep();
  if (!quiet)
    errs() << "calibrate: wrote " << output << "\n";
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  DialectRegistry registry;
  registerAllDialects(registry);
  registry.insert<dist::DistDialect>();
  dist::registerCollectiveBufferization(registry);
  dist::registerShardGradients(registry);
  registerAllPasses();
  dist::registerDistPasses();
  dist::registerDistCodegenPasses();
  dist::registerHostCodegenPipeline();
  dist::registerDistTransformsPasses();
  dist::test::registerTestPlanPasses();
  if (argc >= 2 && StringRef(argv[1]) == "calibrate")
    return calibrateMain(argc - 1, argv + 1, registry);
  if (hasONNXInput(argc, argv))
    return importMain(argc, argv, registry);
  return asMainReturnCode(MlirOptMain(
      argc, argv, "dist-opt: the dist dialect's optimizer driver\n", registry));
}
