//===- Emit.cpp - objects and deployable artifacts ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// In-process LLVM IR translation, O3 optimisation and object emission for
// the host CPU, then the artifact directory: C glue holding the model
// descriptor, a self-contained C header, a JSON manifest, and the link of
// the executable and the shared library against the runtime.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Emit.h"
#include "dist/Codegen/RuntimeABI.h"
#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/Mesh.h"
#include "dist_rt/model.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/DiagnosticHandler.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Operator.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/IPO/AlwaysInliner.h"
#include "llvm/Transforms/IPO/GlobalDCE.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"
#include "llvm/Transforms/Instrumentation/AddressSanitizer.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

using namespace mlir;
using namespace mlir::dist;

static const char *numpyName(unsigned dtype) {
  switch (dtype) {
  case 1:
    return "float32";
  case 2:
    return "uint8";
  case 3:
    return "int8";
  case 4:
    return "uint16";
  case 5:
    return "int16";
  case 6:
    return "int32";
  case 7:
    return "int64";
  case 9:
    return "bool";
  case 10:
    return "float16";
  case 11:
    return "float64";
  case 12:
    return "uint32";
  case 13:
    return "uint64";
  case 16:
    return "bfloat16";
  }
  return "unknown";
}

//===----------------------------------------------------------------------===//
// LLVM IR and objects
//===----------------------------------------------------------------------===//

static_assert(runtime_abi::kModelABIVersion == DIST_RT_MODEL_ABI_VERSION,
              "RuntimeABI.h and dist_rt/model.h disagree");

namespace {
/// Host target machine (PIC so the object goes into the shared library).
std::unique_ptr<llvm::TargetMachine> hostTargetMachine(std::string &err) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // The post-RA list scheduler is quadratic in block size: measured 3.7 s
    // of a 7.5 s compile of a 2-layer GPT (one large function), for no
    // measurable run-time gain on these loop nests.
    auto &opts = llvm::cl::getRegisteredOptions();
    // The pass honours the option only when it was given (has a position).
    if (auto *o = opts.lookup("post-RA-scheduler"))
      if (o->getNumOccurrences() == 0)
        (void)o->addOccurrence(1, "post-RA-scheduler", "false");
    return true;
  }();
  (void)initialized;
  llvm::Triple triple(llvm::sys::getProcessTriple());
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target)
    return nullptr;
  llvm::SubtargetFeatures features;
  for (auto &f : llvm::sys::getHostCPUFeatures())
    features.AddFeature(f.first(), f.second);
  // Strided stores as scalar stores, not AVX-512 scatters: the zeros a
  // padded convolution input needs in its border columns (one element a
  // row) became vscatterqps of 8 rows, slower than 8 stores on this
  // project's Intel Xeon (family 6 model 207; scatters are microcoded on
  // AMD's Zen 4 too): one such loop of MobileNetV2 took 1.01% of its
  // samples with scatters, 0.61% with stores.
  features.AddFeature("prefer-no-scatter", true);
  llvm::TargetOptions opts;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(), opts,
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

/// Drops LLVM's "loop not vectorized" warnings. The innermost loops of
/// parallel loop bodies ask for vectorisation (ParallelizeLoops.cpp); where
/// LLVM cannot vectorise one, the scalar loop it keeps is correct, so the
/// warning would only be noise for the user. Everything else is reported.
struct DropOptimizationFailures : llvm::DiagnosticHandler {
  bool handleDiagnostics(const llvm::DiagnosticInfo &info) override {
    return info.getKind() == llvm::DK_OptimizationFailure;
  }
};

/// The module in LLVM IR for `tm` before any optimisation, its
/// floating-point operations allowed to contract.
std::unique_ptr<llvm::Module> translate(ModuleOp module, llvm::StringRef name,
                                        llvm::LLVMContext &llvmCtx,
                                        llvm::TargetMachine &tm) {
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  llvmCtx.setDiagnosticHandler(std::make_unique<DropOptimizationFailures>());
  // Interface names (dist.name, dist.param) mean nothing to LLVM.
  module.walk([](LLVM::LLVMFuncOp f) {
    auto strip = [](DictionaryAttr d) -> DictionaryAttr {
      if (!d)
        return d;
      NamedAttrList kept;
      for (NamedAttribute a : d)
        if (!a.getName().strref().starts_with("dist."))
          kept.push_back(a);
      return kept.getDictionary(d.getContext());
    };
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      f.setArgAttrs(i, strip(f.getArgAttrDict(i)));
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      f.setResultAttrs(i, strip(f.getResultAttrDict(i)));
  });
  auto llvmModule = translateModuleToLLVMIR(module, llvmCtx, name);
  if (!llvmModule)
    return nullptr;
  llvmModule->setDataLayout(tm.createDataLayout());
  llvmModule->setTargetTriple(tm.getTargetTriple());
  for (llvm::Function &f : *llvmModule) {
    if (f.isDeclaration())
      continue;
    // Nothing compares the addresses of the module's internal functions,
    // so identical ones may become one (mergeAndInline).
    if (f.hasLocalLinkage())
      f.setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    f.addFnAttr("target-cpu", tm.getTargetCPU());
    f.addFnAttr("target-features", tm.getTargetFeatureString());
    // Contraction forms FMAs, as onnxruntime's kernels do; NaN and
    // infinity semantics are kept (no nnan/ninf). No reassociation here:
    // it let LLVM regroup log_softmax's (x - max) - log(sum) into
    // x - (max + log(sum)), which rounds to 0 for logits near 1e4 (and a
    // cross-entropy loss of 0 that trained the wrong way). The float
    // reductions the vectoriser needs it for get it on their combiners
    // (dist-register-accumulators); measured without it here: benchmark
    // inference and training step times unchanged (GPT 5.40 / 17.9 ms,
    // residual CNN 0.263 / 1.94 ms at one thread).
    for (llvm::Instruction &inst : llvm::instructions(f))
      if (isa<llvm::FPMathOperator>(inst)) {
        inst.setHasAllowContract(true);
        inst.setHasNoSignedZeros(true);
        inst.setHasApproxFunc(true);
      }
  }
  return llvmModule;
}

/// What must see the whole module before it is split for optimisation
/// (parallelOptimizeAndCodegen): identical functions merged into one, and the
/// always-inline ones (an entry inside its C interface, see
/// dist-add-entry-wrapper) inlined. Outlined loop nests repeat in deep
/// networks: DenseNet-121's 266 functions are 142 distinct ones (a dense
/// block's layers share their shapes), and the copies were 73% of the
/// instructions that LLVM optimised and compiled.
void mergeAndInline(llvm::Module &m) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::MergeFunctionsPass());
  mpm.addPass(llvm::AlwaysInlinerPass());
  mpm.addPass(llvm::GlobalDCEPass());
  mpm.run(m, mam);
}

/// LLVM's O3 pipeline for `tm` on `m`.
void optimize(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, pto);
  // Vector math (exp, log, sin, ...) from glibc's libmvec.
  llvm::TargetLibraryInfoImpl tlii(tm.getTargetTriple());
  tlii.addVectorizableFunctionsFromVecLib(llvm::VectorLibrary::LIBMVEC,
                                          tm.getTargetTriple());
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
#if DIST_ARTIFACT_ADDRESS_SANITIZER
  // A sanitizer build instruments the generated code too (it links the
  // instrumented runtime): an access of a generated kernel outside a
  // buffer is reported like one of the runtime's. Globals stay out of the
  // linker's garbage collection so that the partitions of a split module
  // (DIST_OPT_CODEGEN_THREADS) register theirs independently.
  for (llvm::Function &f : m)
    if (!f.isDeclaration())
      f.addFnAttr(llvm::Attribute::SanitizeAddress);
  pb.registerOptimizerLastEPCallback([](llvm::ModulePassManager &mpm,
                                        llvm::OptimizationLevel,
                                        llvm::ThinOrFullLTOPhase) {
    mpm.addPass(llvm::AddressSanitizerPass(llvm::AddressSanitizerOptions{},
                                           /*UseGlobalGC=*/false,
                                           /*UseOdrIndicator=*/false));
  });
#endif
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}
} // namespace

LogicalResult dist::emitLLVMIR(ModuleOp module, llvm::StringRef name,
                               std::string &text) {
  std::string err;
  auto tm = hostTargetMachine(err);
  if (!tm)
    return module.emitError() << "no target for the host: " << err;
  llvm::LLVMContext llvmCtx;
  auto llvmModule = translate(module, name, llvmCtx, *tm);
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");
  mergeAndInline(*llvmModule);
  optimize(*llvmModule, *tm);
  llvm::raw_string_ostream os(text);
  llvmModule->print(os, nullptr);
  return success();
}

namespace {
/// Machine code for `m` into `out`; false when the target cannot emit
/// object files.
bool codegen(llvm::Module &m, llvm::TargetMachine &tm,
             llvm::raw_pwrite_stream &out) {
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, out, nullptr,
                             llvm::CodeGenFileType::ObjectFile))
    return false;
  pm.run(m);
  return true;
}

/// Instructions (before optimisation) of a partition worth a thread of its
/// own: the benchmark models have 1K-4K in all, ViT-B/16 9K, DenseNet-121
/// 16K (after mergeAndInline).
constexpr size_t kMinPartInstructions = 2000;
/// Partitions per thread: SplitModule assigns functions by their names'
/// hashes, so a few partitions can be far apart in size; more of them, taken
/// by the threads in turn, even out. DenseNet-121 on two threads, three runs
/// each: 4.7-5.4 s with two partitions, 4.0-4.5 s with four or six.
constexpr unsigned kPartsPerThread = 4;

/// Optimises `m` and generates its code in `parts` partitions on up to
/// `threads` threads, and combines their objects into `objPath` (`cc -r`,
/// then the partitions' hidden symbols made local again with objcopy, so
/// that two models' objects link into one program as before). Returns
/// false, having written nothing, when a step fails: the caller then works
/// on one thread. LLVM's O3 pipeline and its code generation are two thirds
/// of a compile and work function by function (DenseNet-121, one thread:
/// 1.8 s and 1.3 s of 5.0 s); what needs the whole module ran before
/// (mergeAndInline). Upstream's splitCodeGen (llvm/CodeGen/ParallelCG.h) is
/// gone from LLVM 22, so this is its recipe: SplitModule with local symbols
/// externalised (hidden), each part through bitcode into a context of its
/// own.
bool parallelOptimizeAndCodegen(const llvm::Module &m, unsigned parts,
                                unsigned threads, StringRef objPath) {
  // SplitModule externalises local symbols: on a copy, so that a fallback
  // on one thread generates the module as it was.
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(m);
  SmallVector<SmallString<0>> bitcode;
  llvm::SplitModule(
      *copy, parts,
      [&](std::unique_ptr<llvm::Module> part) {
        SmallString<0> &buf = bitcode.emplace_back();
        llvm::raw_svector_ostream os(buf);
        llvm::WriteBitcodeToFile(*part, os);
      },
      /*PreserveLocals=*/false);
  SmallVector<std::string> objects(bitcode.size());
  llvm::scope_exit removeObjects([&] {
    for (const std::string &o : objects)
      if (!o.empty())
        llvm::sys::fs::remove(o);
  });
  for (std::string &o : objects) {
    SmallString<128> path;
    int fd;
    if (llvm::sys::fs::createTemporaryFile("dist-opt-part", "o", fd, path))
      return false;
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    o = std::string(path);
  }
  std::atomic<bool> ok{true};
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < bitcode.size();) {
      llvm::LLVMContext ctx;
      ctx.setDiagnosticHandler(std::make_unique<DropOptimizationFailures>());
      auto parsed = llvm::parseBitcodeFile(
          llvm::MemoryBufferRef(StringRef(bitcode[i].data(), bitcode[i].size()),
                                "part"),
          ctx);
      std::string err;
      auto tm = hostTargetMachine(err);
      std::error_code ec;
      llvm::raw_fd_ostream out(objects[i], ec, llvm::sys::fs::OF_None);
      if (!parsed || !tm || ec) {
        if (!parsed)
          llvm::consumeError(parsed.takeError());
        ok = false;
        return;
      }
      optimize(**parsed, *tm);
      if (!codegen(**parsed, *tm, out))
        ok = false;
      out.flush();
      if (out.has_error()) {
        out.clear_error();
        ok = false;
      }
    }
  };
  {
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < std::min<size_t>(threads, bitcode.size()); ++t)
      workers.emplace_back(work);
    for (std::thread &t : workers)
      t.join();
  }
  if (!ok)
    return false;
  std::string cc = defaultLinkDriver();
  auto run = [](ArrayRef<std::string> args) {
    auto program = llvm::sys::findProgramByName(args[0]);
    if (!program)
      return false;
    SmallVector<StringRef> argv(args.begin(), args.end());
    std::optional<StringRef> quiet[] = {StringRef(""), StringRef(""),
                                        StringRef("")};
    return llvm::sys::ExecuteAndWait(*program, argv, std::nullopt, quiet) == 0;
  };
  std::vector<std::string> link{cc, "-r", "-nostdlib", "-o", objPath.str()};
  link.insert(link.end(), objects.begin(), objects.end());
  if (!run(link) ||
      !run({"objcopy", "--localize-hidden", objPath.str()})) {
    llvm::sys::fs::remove(objPath);
    return false;
  }
  return true;
}
} // namespace

LogicalResult dist::emitObjectFile(ModuleOp module, llvm::StringRef name,
                                   llvm::StringRef objPath) {
  std::string err;
  auto tm = hostTargetMachine(err);
  if (!tm)
    return module.emitError() << "no target for the host: " << err;
  llvm::LLVMContext llvmCtx;
  auto llvmModule = translate(module, name, llvmCtx, *tm);
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");
  mergeAndInline(*llvmModule);
  // Large modules: up to kPartsPerThread partitions per hardware thread,
  // of at least kMinPartInstructions each. DIST_OPT_CODEGEN_THREADS=N makes
  // it N partitions whatever the size (1: none).
  size_t instructions = llvmModule->getInstructionCount();
  unsigned threads = llvm::hardware_concurrency().compute_thread_count();
  unsigned parts = threads < 2 ? 1
                               : static_cast<unsigned>(std::min<size_t>(
                                     size_t(threads) * kPartsPerThread,
                                     instructions / kMinPartInstructions));
  if (const char *env = std::getenv("DIST_OPT_CODEGEN_THREADS"); env && *env) {
    unsigned forced = 0;
    if (StringRef(env).getAsInteger(10, forced) || forced < 1 || forced > 64)
      module.emitWarning() << "DIST_OPT_CODEGEN_THREADS='" << env
                           << "' is not a number from 1 to 64; ignored";
    else
      parts = forced;
  }
  if (parts > 1) {
    if (parallelOptimizeAndCodegen(*llvmModule, parts, threads, objPath))
      return success();
    module.emitWarning() << "code generation on " << parts
                         << " threads failed (cc -r or objcopy missing?); "
                            "generating on one";
  }
  std::error_code ec;
  llvm::ToolOutputFile out(objPath, ec, llvm::sys::fs::OF_None);
  if (ec)
    return module.emitError()
           << "cannot write " << objPath << ": " << ec.message();
  optimize(*llvmModule, *tm);
  if (!codegen(*llvmModule, *tm, out.os()))
    return module.emitError("the host target cannot emit object files");
  out.os().flush();
  if (out.os().has_error())
    return module.emitError() << "cannot write " << objPath;
  out.keep();
  return success();
}

//===----------------------------------------------------------------------===//
// Artifacts
//===----------------------------------------------------------------------===//

namespace {
std::string cString(StringRef s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += c;
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\%03o", c);
      r += buf;
    } else {
      r += c;
    }
  }
  return r + "\"";
}

std::string dimsText(const TensorSignature &t) {
  std::string s = "[";
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (i)
      s += ",";
    s += t.dims[i] < 0 ? "?" : std::to_string(t.dims[i]);
  }
  return s + "]";
}

std::string glueSource(const ModelSignature &sig, const EmitOptions &o) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "/* Generated by dist-opt: descriptor and C API of model '" << o.name
     << "'. */\n"
     << "#include \"dist_rt/dist_rt.h\"\n#include \"dist_rt/model.h\"\n\n"
     << "extern void " << o.entrySymbol << "(void **args);\n";
  if (sig.train && !sig.pipeline)
    os << "extern void " << o.trainEntrySymbol << "(void **args);\n";
  if (sig.pipeline)
    for (const PipelineFunctionSignature &fn : sig.pipeline->functions)
      os << "extern void " << fn.symbol << "(void **args);\n";
  os << "\n";
  auto table = [&](StringRef kind, const std::vector<TensorSignature> &ts) {
    for (size_t i = 0; i < ts.size(); ++i) {
      os << "static const int64_t " << kind << i << "_dims[] = {";
      for (int64_t d : ts[i].dims)
        os << d << ", ";
      os << "0};\n";
      if (!ts[i].dimNames.empty()) {
        os << "static const char *const " << kind << i << "_dim_names[] = {";
        for (const std::string &n : ts[i].dimNames)
          os << (n.empty() ? std::string("NULL") : cString(n)) << ", ";
        os << "NULL};\n";
      }
    }
    if (ts.empty())
      return;
    os << "static const dist_rt_tensor_desc_t " << kind << "s[] = {\n";
    for (size_t i = 0; i < ts.size(); ++i)
      os << "  {" << cString(ts[i].name) << ", " << ts[i].dtype << ", "
         << ts[i].dims.size() << ", " << kind << i << "_dims, "
         << (ts[i].dimNames.empty() ? std::string("NULL")
                                    : (kind + Twine(i) + "_dim_names").str())
         << "},\n";
    os << "};\n";
  };
  table("param", sig.params);
  table("input", sig.inputs);
  table("output", sig.outputs);
  auto ref = [&](StringRef kind, const std::vector<TensorSignature> &ts) {
    return ts.empty() ? std::string("0, NULL")
                      : std::to_string(ts.size()) + ", " + kind.str() + "s";
  };
  if (sig.pipeline) {
    const PipelineSignature &pp = *sig.pipeline;
    for (auto [k, fn] : llvm::enumerate(pp.functions)) {
      table("pp" + std::to_string(k) + "_input", fn.inputs);
      table("pp" + std::to_string(k) + "_output", fn.outputs);
    }
    os << "static const dist_rt_pipeline_fn_t pipeline_fns[] = {\n";
    for (auto [k, fn] : llvm::enumerate(pp.functions))
      os << "  {" << cString(fn.funcName) << ", " << fn.stage << ", "
         << fn.action << ", "
         << ref("pp" + std::to_string(k) + "_input", fn.inputs) << ", "
         << ref("pp" + std::to_string(k) + "_output", fn.outputs) << ", "
         << fn.symbol << "},\n";
    os << "};\nstatic const int32_t param_stages[] = {";
    for (int64_t s : pp.paramStages)
      os << s << ", ";
    os << "0};\n";
    os << "static const dist_rt_pipeline_desc_t pipeline_desc = {" << pp.stages
       << ", " << pp.microBatches << ", " << pp.schedule << ", "
       << pp.functions.size() << ", pipeline_fns, param_stages};\n";
  }
  if (sig.train) {
    const TrainSignature &t = *sig.train;
    table("train_input", t.inputs);
    table("train_output", t.outputs);
    os << "static const uint8_t param_roles[] = {";
    for (uint8_t r : t.paramRoles)
      os << unsigned(r) << ", ";
    os << "0};\n";
    os << "static const dist_rt_train_desc_t train_desc = {\n"
       << "  param_roles,\n  " << ref("train_input", t.inputs) << ",\n  "
       << ref("train_output", t.outputs) << ",\n  "
       << (sig.pipeline ? std::string("NULL") : o.trainEntrySymbol) << ",\n  "
       << llvm::formatv("{0:e}", t.lr).str() << ", " << t.lrSchedule << ", "
       << t.warmupSteps << ",\n  " << cString(t.optimizer) << ", "
       << cString(t.loss) << ",\n  "
       << (o.onnxFileName.empty() ? std::string("NULL")
                                  : cString(o.onnxFileName))
       << ",\n  " << t.labelClasses << ", " << t.ignoreIndex << ",\n  "
       << (sig.pipeline ? "&pipeline_desc" : "NULL") << "};\n";
  }
  if (!sig.meshShape.empty()) {
    os << "static const int64_t mesh_shape[] = {";
    for (int64_t d : sig.meshShape)
      os << d << ", ";
    os << "0};\nstatic const char *const mesh_axis_names[] = {";
    for (const std::string &a : sig.meshAxes)
      os << cString(a) << ", ";
    os << "NULL};\n";
  }
  bool anyShard = llvm::any_of(
      sig.params, [](const TensorSignature &t) { return t.shardAxis >= 0; });
  if (anyShard) {
    os << "static const dist_rt_param_shard_t param_shards[] = {\n";
    for (const TensorSignature &t : sig.params)
      os << "  {" << t.shardAxis << ", " << t.shardDim << ", " << t.shardBlocks
         << "},\n";
    os << "};\n";
  }
  if (sig.ps) {
    const PsSignature &ps = *sig.ps;
    for (auto [k, l] : llvm::enumerate(ps.lookups)) {
      os << "static const int64_t ps_cols" << k << "[] = {";
      for (int64_t c : l.cols)
        os << c << ", ";
      os << "0};\n";
    }
    os << "static const dist_rt_ps_lookup_t ps_lookups[] = {\n";
    for (auto [k, l] : llvm::enumerate(ps.lookups))
      os << "  {" << cString(l.rows) << ", " << cString(l.ids) << ", "
         << l.table << ", " << l.cols.size() << ", ps_cols" << k << "},\n";
    os << "};\nstatic const dist_rt_ps_desc_t ps_desc = {" << ps.lookups.size()
       << ", ps_lookups, " << cString(ps.optimizer) << ", "
       << llvm::formatv("{0:e}, {1:e}, {2:e}, {3:e}", ps.lr, ps.beta1, ps.beta2,
                        ps.eps)
              .str()
       << ", " << cString(ps.init) << ", "
       << llvm::formatv("{0:e}, {1:e}", ps.initA, ps.initB).str() << "};\n";
  }
  if (o.elasticMax > 0) {
    os << "static const char *const elastic_executables[] = {";
    for (int64_t k = o.elasticMin; k <= o.elasticMax; ++k)
      os << cString(elasticExecutable(o.name, k, o.elasticMax)) << ", ";
    os << "};\nstatic const dist_rt_elastic_desc_t elastic_desc = {"
       << o.elasticMin << ", " << o.elasticMax << ", elastic_executables};\n";
  }
  os << "\nconst dist_rt_model_desc_t " << o.name << "_model_desc = {\n"
     << "  DIST_RT_MODEL_ABI_VERSION, " << cString(o.name) << ", "
     << (o.paramFileName.empty() ? std::string("NULL")
                                 : cString(o.paramFileName))
     << ",\n  " << ref("param", sig.params) << ",\n  "
     << ref("input", sig.inputs) << ",\n  " << ref("output", sig.outputs)
     << ",\n  " << o.entrySymbol << ",\n  "
     << (sig.train ? "&train_desc" : "NULL") << ",\n  "
     << (sig.meshShape.empty() ? std::string("0, NULL, NULL")
                               : std::to_string(sig.meshShape.size()) +
                                     ", mesh_shape, mesh_axis_names")
     << ",\n  " << (anyShard ? "param_shards" : "NULL") << ",\n  "
     << (sig.inferBatchSplit > 1 ? 1 : 0) << ",\n  "
     << (sig.ps ? "&ps_desc" : "NULL") << ",\n  "
     << (o.elasticMax > 0 ? "&elastic_desc" : "NULL") << ",\n  "
     << (sig.device == "cuda" ? "DIST_RT_DEVICE_CUDA" : "DIST_RT_DEVICE_HOST")
     << "};\n\n";
  os << "#ifdef DIST_MODEL_MAIN\n"
     << "int main(int argc, char **argv) {\n"
     << "  return dist_rt_main(argc, argv, &" << o.name << "_model_desc);\n"
     << "}\n#else\n"
     << "#include \"" << o.name << ".h\"\n"
     << "_Static_assert(sizeof(" << o.name
     << "_tensor_t) == sizeof(dist_rt_tensor_t), \"tensor layout\");\n"
     << o.name << "_status_t " << o.name
     << "_model_create(const char *param_path, "
     << "int32_t num_threads, " << o.name << "_model_t **out_model) {\n"
     << "  dist_rt_model_options_t opts;\n"
     << "  dist_rt_model_options_initialize(&opts);\n"
     << "  opts.param_path = param_path;\n"
     << "  opts.num_threads = num_threads;\n"
     << "  return (" << o.name << "_status_t)dist_rt_model_create(&" << o.name
     << "_model_desc, &opts, (dist_rt_model_t *)out_model);\n}\n";
  if (sig.device == "cuda")
    os << o.name << "_status_t " << o.name
       << "_model_create_cuda(const char *param_path, int32_t device, "
       << "uint32_t device_tensors, " << o.name << "_model_t **out_model) {\n"
       << "  dist_rt_model_options_t opts;\n"
       << "  dist_rt_model_options_initialize(&opts);\n"
       << "  opts.param_path = param_path;\n"
       << "  opts.device = device;\n"
       << "  opts.device_tensors = device_tensors;\n"
       << "  return (" << o.name << "_status_t)dist_rt_model_create(&" << o.name
       << "_model_desc, &opts, (dist_rt_model_t *)out_model);\n}\n";
  os << o.name << "_status_t " << o.name << "_model_run(" << o.name
     << "_model_t *model, const " << o.name
     << "_tensor_t *inputs, size_t num_inputs, const " << o.name
     << "_tensor_t **out_outputs) {\n"
     << "  return (" << o.name
     << "_status_t)dist_rt_model_run((dist_rt_model_t)model, "
        "(const dist_rt_tensor_t *)inputs, num_inputs, "
        "(const dist_rt_tensor_t **)out_outputs);\n}\n"
     << "void " << o.name << "_model_destroy(" << o.name
     << "_model_t *model) {\n"
     << "  dist_rt_model_destroy((dist_rt_model_t)model);\n}\n"
     << "const char *" << o.name << "_status_message(" << o.name
     << "_status_t status) {\n"
     << "  return dist_rt_status_message((dist_rt_status_t)status);\n}\n"
     << "void " << o.name << "_status_free(" << o.name
     << "_status_t status) {\n"
     << "  dist_rt_status_free((dist_rt_status_t)status);\n}\n"
     << "#endif\n";
  return s;
}

std::string headerSource(const ModelSignature &sig, const EmitOptions &o) {
  std::string guard = StringRef(o.name).upper() + "_H";
  std::string up = StringRef(o.name).upper();
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "/* Generated by dist-opt: C API of model '" << o.name << "'.\n"
     << " *\n * Link with lib" << o.name << ".so. The parameter file "
     << (o.paramFileName.empty() ? std::string("(none)") : o.paramFileName)
     << " is found next to the library unless a path is given.\n *\n"
     << " * Inputs, in order:\n";
  for (auto &t : sig.inputs)
    os << " *   " << t.name << ": " << numpyName(t.dtype) << " " << dimsText(t)
       << "\n";
  os << " * Outputs, in order:\n";
  for (auto &t : sig.outputs)
    os << " *   " << t.name << ": " << numpyName(t.dtype) << " " << dimsText(t)
       << "\n";
  os << " *\n * Errors: every call that can fail returns a status; NULL means "
        "success.\n * A non-NULL status holds a one-line message and must be "
        "freed with\n * "
     << o.name
     << "_status_free.\n *\n * Thread-safety: a model may be used "
        "by one thread at a time; distinct\n * models are "
        "independent.\n */\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include <stddef.h>\n#include <stdint.h>\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
     << "/* Element types (ONNX TensorProto codes). */\n"
     << "#define " << up << "_FLOAT 1\n#define " << up << "_UINT8 2\n"
     << "#define " << up << "_INT8 3\n#define " << up << "_UINT16 4\n"
     << "#define " << up << "_INT16 5\n#define " << up << "_INT32 6\n"
     << "#define " << up << "_INT64 7\n#define " << up << "_BOOL 9\n"
     << "#define " << up << "_FLOAT16 10\n#define " << up << "_DOUBLE 11\n"
     << "#define " << up << "_UINT32 12\n#define " << up << "_UINT64 13\n\n"
     << "#define " << up << "_NUM_INPUTS " << sig.inputs.size() << "\n"
     << "#define " << up << "_NUM_OUTPUTS " << sig.outputs.size() << "\n\n"
     << "/* A dense row-major tensor. */\n"
     << "typedef struct " << o.name << "_tensor_t {\n"
     << "  uint32_t dtype;      /* element type code */\n"
     << "  uint32_t rank;       /* number of dimensions */\n"
     << "  const int64_t *dims; /* rank extents */\n"
     << "  void *data;          /* elements, row-major */\n"
     << "} " << o.name << "_tensor_t;\n\n"
     << "typedef struct " << o.name << "_model " << o.name << "_model_t;\n"
     << "typedef struct " << o.name << "_status *" << o.name << "_status_t;\n\n"
     << "/* Loads the model: maps the parameter file (param_path, or NULL "
        "for the\n * one next to the library) and sets the thread count (0: "
        "all cores). */\n"
     << o.name << "_status_t " << o.name
     << "_model_create(const char *param_path, int32_t num_threads, " << o.name
     << "_model_t **out_model);\n\n";
  if (sig.device == "cuda")
    os << "/* The same on CUDA GPU `device` (-1: $DIST_RT_DEVICE, else 0). "
          "With\n * device_tensors nonzero, inputs may be device memory and "
          "the outputs\n * are device memory (CUDA managed memory), owned by "
          "the model; with 0,\n * host tensors in and out as above. */\n"
       << o.name << "_status_t " << o.name
       << "_model_create_cuda(const char *param_path, int32_t device, "
       << "uint32_t device_tensors, " << o.name << "_model_t **out_model);\n\n";
  os << "/* Runs the model on inputs (in the order above). *out_outputs "
        "points to\n * the outputs, owned by the model and valid until the "
        "next run or destroy. */\n"
     << o.name << "_status_t " << o.name << "_model_run(" << o.name
     << "_model_t *model, const " << o.name
     << "_tensor_t *inputs, size_t num_inputs, const " << o.name
     << "_tensor_t **out_outputs);\n\n"
     << "/* Frees the model and its outputs. NULL is a no-op. */\n"
     << "void " << o.name << "_model_destroy(" << o.name
     << "_model_t *model);\n\n"
     << "/* One-line message of a status (\"ok\" for NULL). */\n"
     << "const char *" << o.name << "_status_message(" << o.name
     << "_status_t status);\n"
     << "void " << o.name << "_status_free(" << o.name
     << "_status_t status);\n\n"
     << "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << " */\n";
  return s;
}

llvm::json::Value manifest(const ModelSignature &sig, const EmitOptions &o) {
  auto list = [](const std::vector<TensorSignature> &ts) {
    llvm::json::Array a;
    for (auto &t : ts) {
      llvm::json::Array shape;
      for (int64_t d : t.dims)
        shape.push_back(d);
      llvm::json::Object entry{{"name", t.name},
                               {"dtype", numpyName(t.dtype)},
                               {"shape", std::move(shape)}};
      if (!t.dimNames.empty()) {
        // The ONNX names of dynamic dimensions (null where none): equal
        // names must get equal sizes.
        llvm::json::Array names;
        for (const std::string &n : t.dimNames)
          names.push_back(n.empty() ? llvm::json::Value(nullptr)
                                    : llvm::json::Value(n));
        entry["dim_names"] = std::move(names);
      }
      a.push_back(std::move(entry));
    }
    return a;
  };
  llvm::json::Value train(nullptr);
  if (sig.train) {
    const TrainSignature &t = *sig.train;
    static const char *const schedules[] = {"constant", "cosine",
                                            "warmup-linear"};
    llvm::json::Array trained, state;
    for (size_t i = 0; i < t.paramRoles.size(); ++i) {
      if (t.paramRoles[i] == DIST_RT_PARAM_TRAINED)
        trained.push_back(sig.params[i].name);
      if (t.paramRoles[i] == DIST_RT_PARAM_STATE)
        state.push_back(sig.params[i].name);
    }
    train = llvm::json::Object{{"inputs", list(t.inputs)},
                               {"outputs", list(t.outputs)},
                               {"optimizer", t.optimizer},
                               {"loss", t.loss},
                               {"lr", t.lr},
                               {"lr_schedule", schedules[t.lrSchedule % 3]},
                               {"warmup_steps", t.warmupSteps},
                               {"trained_params", std::move(trained)},
                               {"optimizer_state", std::move(state)}};
    if (t.labelClasses > 0) {
      (*train.getAsObject())["label_classes"] = t.labelClasses;
      (*train.getAsObject())["ignore_index"] = t.ignoreIndex;
    }
  }
  return llvm::json::Object{
      {"name", o.name},
      {"inputs", list(sig.inputs)},
      {"outputs", list(sig.outputs)},
      {"train", std::move(train)},
      {"device", sig.device.empty() ? "host" : sig.device},
      {"precision", sig.precision.empty() ? llvm::json::Value(nullptr)
                                          : llvm::json::Value(sig.precision)},
      {"mesh", sig.meshShape.empty() ? llvm::json::Value(nullptr) : [&] {
         llvm::json::Object mesh;
         for (size_t a = 0; a < sig.meshShape.size(); ++a)
           mesh[sig.meshAxes[a]] = sig.meshShape[a];
         return llvm::json::Value(std::move(mesh));
       }()},
      {"inference_batch",
       sig.inferBatchSplit <= 1 && sig.batchWhole.empty()
           ? llvm::json::Value(nullptr)
       : sig.inferBatchSplit > 1
           ? llvm::json::Value(
                 llvm::json::Object{{"split_over_dp", sig.inferBatchSplit}})
           : llvm::json::Value(llvm::json::Object{{"split_over_dp", 1},
                                                  {"why", sig.batchWhole}})},
      {"ps", !sig.ps ? llvm::json::Value(nullptr) : [&] {
         // The tables that went to the servers, and what reads them.
         llvm::json::Array tables, lookups;
         for (const PsLookupSignature &l : sig.ps->lookups) {
           const TensorSignature &t = sig.params[l.table];
           if (llvm::none_of(tables, [&](const llvm::json::Value &v) {
                 return v.getAsObject()->getString("name") == t.name;
               }))
             tables.push_back(llvm::json::Object{
                 {"name", t.name}, {"rows", t.dims[0]}, {"dim", t.dims[1]}});
           lookups.push_back(llvm::json::Object{
               {"rows", l.rows}, {"ids", l.ids}, {"table", t.name},
               {"ids_per_sample", static_cast<int64_t>(l.cols.size())}});
         }
         return llvm::json::Value(llvm::json::Object{
             {"tables", std::move(tables)},
             {"lookups", std::move(lookups)},
             {"optimizer", sig.ps->optimizer},
             {"lr", sig.ps->lr},
             {"init", sig.ps->init == "rows"
                          ? llvm::json::Value("rows")
                          : llvm::json::Value(llvm::json::Object{
                                {"distribution", sig.ps->init},
                                {"a", sig.ps->initA},
                                {"b", sig.ps->initB}})}});
       }()},
      {"params_file", o.paramFileName.empty()
                          ? llvm::json::Value(nullptr)
                          : llvm::json::Value(o.paramFileName)},
      {"executable", o.name},
      {"elastic", o.elasticMax <= 0 ? llvm::json::Value(nullptr) : [&] {
         // The executable of each world size.
         llvm::json::Object files;
         for (int64_t k = o.elasticMin; k <= o.elasticMax; ++k)
           files[std::to_string(k)] =
               elasticExecutable(o.name, k, o.elasticMax);
         return llvm::json::Value(
             llvm::json::Object{{"min_ranks", o.elasticMin},
                                {"max_ranks", o.elasticMax},
                                {"executables", std::move(files)}});
       }()},
      {"library", "lib" + o.name + ".so"},
      {"header", o.name + ".h"}};
}

LogicalResult writeFile(ModuleOp module, StringRef path, StringRef text) {
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return module.emitError()
           << "cannot write " << path << ": " << ec.message();
  out.os() << text;
  out.os().flush();
  if (out.os().has_error())
    return module.emitError() << "cannot write " << path;
  out.keep();
  return success();
}

/// A program to run: its arguments (args[0] the program) and what it does,
/// for the error message.
struct Tool {
  std::vector<std::string> args;
  StringRef what;
};

/// The line of a failed tool's output that says most: the first one naming
/// an undefined symbol or an error, else the first.
std::string firstErrorLine(StringRef logPath) {
  auto buf = llvm::MemoryBuffer::getFile(logPath);
  if (!buf)
    return "";
  StringRef text = (*buf)->getBuffer();
  for (StringRef line : llvm::split(text, '\n'))
    if (line.contains("undefined reference") ||
        (line.contains("error") && !line.contains("collect2")))
      return line.str();
  return text.split('\n').first.str();
}

/// Runs `tools` side by side (the executable's and the shared library's
/// links each take a core: on DenseNet-121 0.45 s and 0.43 s one after the
/// other) and fails with the first failed tool's first output line.
LogicalResult runTools(ModuleOp module, ArrayRef<Tool> tools) {
  struct Running {
    llvm::sys::ProcessInfo info;
    SmallString<128> log;
    std::string startError;
  };
  SmallVector<Running> running(tools.size());
  llvm::scope_exit removeLogs([&] {
    for (Running &r : running)
      if (!r.log.empty())
        llvm::sys::fs::remove(r.log);
  });
  std::optional<std::string> error;
  for (auto [tool, r] : llvm::zip_equal(tools, running)) {
    // findProgramByName takes a name with a slash (CC=/path/to/cc) as it
    // is, there or not.
    auto program = llvm::sys::findProgramByName(tool.args[0]);
    if (!program || !llvm::sys::fs::can_execute(*program)) {
      error = ("cannot " + tool.what + ": '" + tool.args[0] +
               "' not found (install gcc or set CC)")
                  .str();
      break;
    }
    llvm::sys::fs::createTemporaryFile("dist-opt-link", "log", r.log);
    std::optional<StringRef> redirects[] = {std::nullopt, StringRef(r.log),
                                            StringRef(r.log)};
    SmallVector<StringRef> argv(tool.args.begin(), tool.args.end());
    bool failedToStart = false;
    r.info = llvm::sys::ExecuteNoWait(*program, argv, std::nullopt, redirects,
                                      0, &r.startError, &failedToStart);
    if (failedToStart) {
      error = ("cannot " + tool.what + ": " + tool.args[0] +
               " failed: " + r.startError)
                  .str();
      break;
    }
  }
  // Every started tool is waited for, also after a failure.
  for (auto [tool, r] : llvm::zip_equal(tools, running)) {
    if (r.info.Pid == llvm::sys::ProcessInfo::InvalidPid)
      continue;
    std::string waitError;
    llvm::sys::ProcessInfo done =
        llvm::sys::Wait(r.info, std::nullopt, &waitError);
    if (done.ReturnCode == 0 || error)
      continue;
    std::string line = firstErrorLine(r.log);
    error = ("cannot " + tool.what + ": " + tool.args[0] + " failed" +
             (line.empty() ? ": " + waitError : ": " + line))
                .str();
  }
  if (error)
    return module.emitError() << *error;
  return success();
}
} // namespace

std::string dist::elasticExecutable(StringRef name, int64_t ranks,
                                    int64_t maxRanks) {
  if (ranks == maxRanks)
    return name.str();
  return (name + ".dp" + Twine(ranks)).str();
}

LogicalResult dist::linkArtifacts(ModuleOp module, const ModelSignature &sig,
                                  const EmitOptions &o, StringRef objPath) {
  SmallString<256> dir(o.outDir);
  auto path = [&](const Twine &file) {
    SmallString<256> p(dir);
    llvm::sys::path::append(p, file);
    return std::string(p);
  };
  // Everything is built under temporary names (the header in a private
  // directory) and moved into place only when both links succeeded, so a
  // failure leaves an earlier build of the same name intact.
  SmallString<128> tmpDir;
  if (llvm::sys::fs::createUniqueDirectory("dist-opt-" + o.name, tmpDir))
    return module.emitError("cannot create a temporary directory");
  llvm::scope_exit removeTmp(
      [&] { llvm::sys::fs::remove_directories(tmpDir); });
  auto tmpPath = [&](const Twine &file) {
    SmallString<256> p(tmpDir);
    llvm::sys::path::append(p, file);
    return std::string(p);
  };
  std::string header = headerSource(sig, o);
  if (failed(writeFile(module, tmpPath(o.name + ".h"), header)))
    return failure();
  std::string json;
  llvm::raw_string_ostream js(json);
  js << llvm::formatv("{0:2}", manifest(sig, o)) << "\n";

  SmallString<128> glue;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("dist-opt-" + o.name, "c", fd, glue))
    return module.emitError("cannot create a temporary file");
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  llvm::scope_exit removeGlue([&] { llvm::sys::fs::remove(glue); });
  if (failed(writeFile(module, glue, glueSource(sig, o))))
    return failure();

  std::vector<std::string> common{"-O2",
                                  "-I" + o.runtimeInclude,
                                  "-I" + std::string(tmpDir),
                                  glue.str().str(),
                                  objPath.str(),
                                  o.runtimeLib};
  // The runtime loads what else it uses (MPI, OpenBLAS, CUDA) with dlopen.
  common.insert(common.end(), {"-lstdc++", "-lm", "-lpthread", "-ldl"});
  // A sanitizer build's runtime needs the sanitizers' own runtime.
  for (llvm::StringRef flag :
       llvm::split(llvm::StringRef(DIST_ARTIFACT_FLAGS), ' '))
    if (!flag.empty())
      common.push_back(flag.str());
  // Executable (linked to a temporary name first: nothing half-written is
  // left under the final name).
  std::string exe = path(o.executableFile.empty() ? o.name : o.executableFile),
              exeTmp = exe + ".tmp";
  std::vector<std::string> exeArgs{o.cc, "-DDIST_MODEL_MAIN", "-o", exeTmp};
  exeArgs.insert(exeArgs.end(), common.begin(), common.end());
  // One layout of an elastic set: its executable alone.
  if (!o.executableFile.empty()) {
    if (failed(runTools(module, {{exeArgs, "link the executable"}}))) {
      llvm::sys::fs::remove(exeTmp);
      return failure();
    }
    if (auto ec = llvm::sys::fs::rename(exeTmp, exe))
      return module.emitError()
             << "cannot write " << exe << ": " << ec.message();
    return success();
  }
  // Shared library exporting only <name>_*.
  SmallString<128> vs;
  if (llvm::sys::fs::createTemporaryFile("dist-opt-exports", "map", fd, vs))
    return module.emitError("cannot create a temporary file");
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  llvm::scope_exit removeVs([&] { llvm::sys::fs::remove(vs); });
  if (failed(
          writeFile(module, vs, "{ global: " + o.name + "_*; local: *; };\n")))
    return failure();
  std::string lib = path("lib" + o.name + ".so"), libTmp = lib + ".tmp";
  std::vector<std::string> libArgs{
      o.cc, "-shared", "-fPIC", "-Wl,--version-script=" + vs.str().str(),
      "-o", libTmp};
  libArgs.insert(libArgs.end(), common.begin(), common.end());
  if (failed(runTools(module, {{exeArgs, "link the executable"},
                               {libArgs, "link the shared library"}}))) {
    llvm::sys::fs::remove(exeTmp);
    llvm::sys::fs::remove(libTmp);
    return failure();
  }
  if (failed(writeFile(module, path(o.name + ".h"), header)) ||
      failed(writeFile(module, path(o.name + ".json"), json))) {
    llvm::sys::fs::remove(exeTmp);
    llvm::sys::fs::remove(libTmp);
    return failure();
  }
  if (auto ec = llvm::sys::fs::rename(exeTmp, exe))
    return module.emitError() << "cannot write " << exe << ": " << ec.message();
  if (auto ec = llvm::sys::fs::rename(libTmp, lib))
    return module.emitError() << "cannot write " << lib << ": " << ec.message();
  return success();
}
