//===- CommandLine.cpp - dist-opt's flags ---------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The compile flags (CommandLine.h): their declarations, grouped as --help
// shows them, the checks that need several of them at once, and the help
// text. Closed sets parse through their enum tables, so a wrong value is
// reported while parsing; everything else is checked in getOptions(), in
// the order users meet it.
//
//===----------------------------------------------------------------------===//

#include "dist/Pipelines/CommandLine.h"

#include "dist/Import/ONNX/ONNXImporter.h"
#include "dist/Pipelines/Diagnostics.h"
#include "dist/Pipelines/Pipelines.h"
#include "dist/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::dist;
namespace cl = llvm::cl;

namespace mlir::dist {
namespace {
/// --emit: what a compile into a directory writes (the phase it stops
/// after, and for emit, the kind of artifact).
enum class EmitKind { Exe, Obj, LLVM, Mlir, Dist, Plan };
} // namespace

template <>
struct EnumOptionTraits<EmitKind> {
  static llvm::ArrayRef<EnumOptionValue<EmitKind>> values() {
    static const EnumOptionValue<EmitKind> table[] = {
        {EmitKind::Exe, "exe",
         "executable, shared library, header, manifest, parameters"},
        {EmitKind::Obj, "obj", "the object file"},
        {EmitKind::LLVM, "llvm", "the optimised LLVM IR"},
        {EmitKind::Mlir, "mlir", "the lowered IR (--compile-to=host-codegen)"},
        {EmitKind::Dist, "dist", "the dist IR (--compile-to=partition)"},
        {EmitKind::Plan, "plan", "plan.json and plan.html only"}};
    return table;
  }
  static constexpr const char *noun = "emit kind";
  static constexpr const char *passPrefix = "";
  static constexpr bool nounNamesFlag = true;
};
} // namespace mlir::dist

DIST_ENUM_OPTION_PARSER(mlir::dist::EmitKind)

namespace {
/// The --help groups, in the order they print.
enum Group { Input, Target, Training, Planning, Distribution, Output };
const char *const kGroupNames[] = {"Input",    "Target",       "Training",
                                   "Planning", "Distribution", "Output"};

/// A C identifier made from `text` (the artifacts' name and API prefix).
std::string cIdentifier(StringRef text) {
  std::string s;
  for (char c : text)
    s += llvm::isAlnum(c) ? c : '_';
  if (s.empty() || llvm::isDigit(s[0]))
    s = "m_" + s;
  return s;
}
} // namespace

//===----------------------------------------------------------------------===//
// The flags
//===----------------------------------------------------------------------===//

struct CompileCommandLine::Flags {
  cl::OptionCategory categories[6] = {
      cl::OptionCategory("dist-opt input options"),
      cl::OptionCategory("dist-opt target options"),
      cl::OptionCategory("dist-opt training options (with --train)"),
      cl::OptionCategory("dist-opt planning options"),
      cl::OptionCategory("dist-opt distribution options"),
      cl::OptionCategory("dist-opt output options")};
  cl::OptionCategory &cat(Group g) { return categories[g]; }

  //===--- Input ----------------------------------------------------------===//
  cl::opt<std::string> inputFile{cl::Positional, cl::desc("<model.onnx>"),
                                 cl::Required, cl::cat(cat(Input))};
  cl::list<std::string> inputShapes{
      "input-shape",
      cl::desc("Fix an input's shape: NAME=D0,D1,... (? keeps a dimension "
               "dynamic; nothing after = is a scalar). Repeatable"),
      cl::value_desc("name=dims"), cl::cat(cat(Input))};
  cl::list<std::string> inputValues{
      "input-value",
      cl::desc("Bind an input to the constant in a serialized TensorProto "
               "file: NAME=FILE. Repeatable"),
      cl::value_desc("name=file"), cl::cat(cat(Input))};
  cl::opt<int64_t> maxInline{
      "max-inline-elements",
      cl::desc("Tensors up to this size stay in the IR as constants "
               "(default 4096)"),
      cl::init(4096), cl::cat(cat(Input))};
  cl::opt<bool> summary{"summary",
                        cl::desc("Print a summary of the model to stderr"),
                        cl::cat(cat(Input))};

  //===--- Target ---------------------------------------------------------===//
  cl::opt<ConvKernel> conv{
      "conv",
      cl::desc("How 2-D f32 convolutions run (default auto: channels-last "
               "images on oneDNN for inference where oneDNN loads here, "
               "else nchw)"),
      cl::init(ConvKernel::Auto), enumOptionValues<ConvKernel>(),
      cl::cat(cat(Target))};
  cl::opt<Precision> precision{
      "precision",
      cl::desc("How a CUDA model's f32 matrix products round their operands "
               "(default fp32, PyTorch's default; tf32 and bf16 use tensor "
               "cores with f32 accumulation, every other op and the "
               "weights stay f32)"),
      cl::init(Precision::Fp32), enumOptionValues<Precision>(),
      cl::cat(cat(Target))};
  cl::opt<std::string> target{
      "target",
      cl::desc("Where the model runs: host (this CPU, the default) or "
               "cuda[:sm_80,sm_90] (NVIDIA GPUs of those architectures; "
               "default sm_80 and sm_90; the toolkit from CUDA_HOME, else "
               "/usr/local/cuda)"),
      cl::value_desc("host|cuda[:archs]"), cl::init("host"),
      cl::cat(cat(Target))};
  cl::opt<std::string> runtimeLib{
      "runtime-lib", cl::desc("The runtime library to link (libdist_rt.a)"),
      cl::value_desc("file"), cl::cat(cat(Target)), cl::Hidden};
  cl::opt<std::string> runtimeInclude{
      "runtime-include", cl::desc("The runtime's include directory"),
      cl::value_desc("dir"), cl::cat(cat(Target)), cl::Hidden};

  //===--- Training -------------------------------------------------------===//
  cl::opt<bool> train{
      "train",
      cl::desc("Also compile a training step (executable: `train` command)"),
      cl::cat(cat(Training))};
  cl::opt<LossKind> loss{"loss",
                         cl::desc("Loss on the output (default cross_entropy)"),
                         cl::init(LossKind::CrossEntropy),
                         enumOptionValues<LossKind>(), cl::cat(cat(Training))};
  cl::opt<std::string> lossOutput{
      "loss-output",
      cl::desc("Output the loss applies to (default: the first)"),
      cl::value_desc("name"), cl::cat(cat(Training))};
  cl::opt<int64_t> ignoreIndex{
      "ignore-index", cl::desc("Label cross_entropy ignores (default -100)"),
      cl::init(-100), cl::cat(cat(Training))};
  cl::opt<OptimizerKind> optimizer{
      "optimizer", cl::desc("torch.optim optimizer (default sgd)"),
      cl::init(OptimizerKind::SGD), enumOptionValues<OptimizerKind>(),
      cl::cat(cat(Training))};
  cl::opt<double> lr{"lr", cl::desc("Learning rate (default 1e-3)"),
                     cl::init(1e-3), cl::cat(cat(Training))};
  cl::opt<double> momentum{
      "momentum", cl::desc("Momentum of --optimizer=momentum (default 0.9)"),
      cl::init(0.9), cl::cat(cat(Training))};
  cl::opt<double> beta1{"beta1", cl::desc("Adam beta1 (default 0.9)"),
                        cl::init(0.9), cl::cat(cat(Training))};
  cl::opt<double> beta2{"beta2", cl::desc("Adam beta2 (default 0.999)"),
                        cl::init(0.999), cl::cat(cat(Training))};
  cl::opt<double> eps{"eps", cl::desc("Adam epsilon (default 1e-8)"),
                      cl::init(1e-8), cl::cat(cat(Training))};
  cl::opt<double> weightDecay{
      "weight-decay",
      cl::desc("Weight decay (default: 0.01 for adamw, 0 otherwise)"),
      cl::init(-1), cl::cat(cat(Training))};
  cl::opt<LRScheduleKind> lrSchedule{
      "lr-schedule", cl::desc("Learning-rate schedule (default constant)"),
      cl::init(LRScheduleKind::Constant), enumOptionValues<LRScheduleKind>(),
      cl::cat(cat(Training))};
  cl::opt<int64_t> warmupSteps{
      "warmup-steps",
      cl::desc("Warm-up steps of --lr-schedule=warmup-linear (default 0)"),
      cl::init(0), cl::cat(cat(Training))};
  cl::opt<double> clipGradNorm{
      "clip-grad-norm",
      cl::desc("Clip the global gradient norm to this value (default 0: off)"),
      cl::init(0), cl::cat(cat(Training))};
  cl::list<std::string> freeze{
      "freeze",
      cl::desc("Initializers to keep as they are (no gradient, no update): "
               "names or glob patterns, comma-separated or repeated"),
      cl::value_desc("names"), cl::CommaSeparated, cl::cat(cat(Training))};

  //===--- Planning -------------------------------------------------------===//
  cl::opt<std::string> cluster{
      "cluster",
      cl::desc("Cluster to plan for: local (default: detect this machine) "
               "or a cluster file (YAML or JSON)"),
      cl::value_desc("local|file"), cl::init("local"), cl::cat(cat(Planning))};
  cl::opt<std::string> plan{
      "plan",
      cl::desc("Compile the planner's layout: auto searches one, FILE "
               "applies a plan.json (without --plan, --cluster only reports)"),
      cl::value_desc("auto|file"), cl::cat(cat(Planning))};
  cl::opt<Objective> objective{
      "objective", cl::desc("What the plan minimises (default step-time)"),
      cl::init(Objective::StepTime), enumOptionValues<Objective>(),
      cl::cat(cat(Planning))};
  cl::opt<double> minThroughput{
      "min-throughput",
      cl::desc("Samples per second the cost objective must reach"), cl::init(0),
      cl::cat(cat(Planning))};
  cl::opt<PlanStrategy> planner{
      "planner", cl::desc("The search (default exact)"),
      cl::init(PlanStrategy::Exact), enumOptionValues<PlanStrategy>(),
      cl::cat(cat(Planning))};
  cl::opt<int64_t> globalBatch{
      "global-batch",
      cl::desc("Samples per step to plan for (default: the model's batch)"),
      cl::init(0), cl::cat(cat(Planning))};
  cl::opt<int64_t> planThreads{
      "plan-threads",
      cl::desc("CPU threads per rank the cost model assumes (default: all "
               "cores)"),
      cl::init(0), cl::cat(cat(Planning))};

  //===--- Distribution ---------------------------------------------------===//
  cl::opt<std::string> mesh{
      "mesh",
      cl::desc("Partition for this device mesh, e.g. dp=2,tp=2; run the "
               "result with mpirun -np <ranks>"),
      cl::value_desc("axis=size,..."), cl::cat(cat(Distribution))};
  cl::opt<std::string> elastic{
      "elastic",
      cl::desc("Compile a data-parallel layout for every world size from MIN "
               "to MAX ranks (with --zero 1 if given; with --mesh pp=P, P "
               "pipeline stages where P divides the size): the executable "
               "picks the one for the ranks it is started with (dist-launch "
               "restarts a job on another size after a failure)"),
      cl::value_desc("MIN:MAX"), cl::cat(cat(Distribution))};
  cl::opt<double> gradBucketMb{
      "grad-bucket-mb",
      cl::desc("Size of a fused gradient all-reduce bucket in MiB (default "
               "4)"),
      cl::init(4.0), cl::cat(cat(Distribution))};
  cl::opt<int64_t> microBatches{
      "micro-batches",
      cl::desc("Micro-batches per training step of a pipeline (mesh axis "
               "pp; default 2 per stage, fewer where the batch per dp rank "
               "does not split)"),
      cl::init(0), cl::cat(cat(Distribution))};
  cl::opt<PipelineSchedule> schedule{
      "schedule", cl::desc("Pipeline schedule (default 1f1b)"),
      cl::init(PipelineSchedule::OneFOneB),
      enumOptionValues<PipelineSchedule>(), cl::cat(cat(Distribution))};
  cl::opt<std::string> ppSplit{
      "pp-split",
      cl::desc("Pipeline stage boundaries: layers per stage (e.g. 3,5) or "
               "the names of the layers that start stages 1.. (default: "
               "stages of equal FLOPs)"),
      cl::value_desc("counts|names"), cl::cat(cat(Distribution))};
  cl::opt<std::string> psTables{
      "ps-tables",
      cl::desc("Embedding tables on parameter servers: all, auto (those of "
               "1 MiB or more), or names and glob patterns, comma-separated; "
               "run with `<model> ps-server` beside `<model> train`"),
      cl::value_desc("all|auto|names"), cl::cat(cat(Distribution))};
  cl::opt<std::string> psOptimizer{
      "ps-optimizer",
      cl::desc("The servers' per-row update of the tables: sgd, adagrad or "
               "adam (lazy, as torch.optim.SparseAdam); default: --optimizer "
               "with --lr"),
      cl::value_desc("sgd|adagrad|adam"), cl::cat(cat(Distribution))};
  cl::opt<std::string> psInit{
      "ps-init",
      cl::desc("How the servers create the tables' rows: rows (the model's "
               "values, the default), or uniform:LOW,HIGH or normal:MEAN,STD "
               "drawn per row when first touched (the tables are then not "
               "read from the model nor written to the parameter file; a "
               "table named in --ps-tables may be a graph input of that "
               "shape)"),
      cl::value_desc("rows|uniform:LOW,HIGH|normal:MEAN,STD"),
      cl::cat(cat(Distribution))};
  cl::opt<int64_t> zero{
      "zero",
      cl::desc("ZeRO stage: 1 shards the optimizer state over the dp ranks "
               "(default 0)"),
      cl::init(0), cl::cat(cat(Distribution))};

  //===--- Output ---------------------------------------------------------===//
  cl::opt<std::string> output{
      "o",
      cl::desc("A directory: compile into it; a file (or - by default): "
               "write the IR there"),
      cl::value_desc("dir|file"), cl::init("-"), cl::cat(cat(Output))};
  cl::opt<Phase> compileTo{
      "compile-to",
      cl::desc("Stop after this phase and write its IR (default: emit with "
               "-o DIR, partition otherwise)"),
      enumOptionValues<Phase>(), cl::cat(cat(Output))};
  cl::opt<EmitKind> emit{
      "emit",
      cl::desc("With -o DIR: what to write (default exe; mlir = "
               "--compile-to=host-codegen, dist = --compile-to=partition)"),
      enumOptionValues<EmitKind>(), cl::cat(cat(Output))};
  cl::opt<std::string> name{
      "name",
      cl::desc("Name of the artifacts and prefix of the C API (default: the "
               "model file's stem)"),
      cl::value_desc("name"), cl::cat(cat(Output))};
  cl::opt<std::string> paramsFile{
      "params-file",
      cl::desc("Where printed IR's parameter file goes (default: next to "
               "the -o file, or <model>.params here)"),
      cl::value_desc("file"), cl::cat(cat(Output))};
  PassPipelineCLParser passPipeline{"", "Passes to run after the last phase",
                                    "p"};

  /// The flags in --help order, with the group of each.
  std::vector<std::pair<Group, cl::Option *>> ordered() {
    return {{Input, std::addressof(inputFile)},
            {Input, std::addressof(inputShapes)},
            {Input, std::addressof(inputValues)},
            {Input, std::addressof(maxInline)},
            {Input, std::addressof(summary)},
            {Target, std::addressof(target)},
            {Target, std::addressof(conv)},
            {Target, std::addressof(precision)},
            {Training, std::addressof(train)},
            {Training, std::addressof(loss)},
            {Training, std::addressof(lossOutput)},
            {Training, std::addressof(ignoreIndex)},
            {Training, std::addressof(optimizer)},
            {Training, std::addressof(lr)},
            {Training, std::addressof(momentum)},
            {Training, std::addressof(beta1)},
            {Training, std::addressof(beta2)},
            {Training, std::addressof(eps)},
            {Training, std::addressof(weightDecay)},
            {Training, std::addressof(lrSchedule)},
            {Training, std::addressof(warmupSteps)},
            {Training, std::addressof(clipGradNorm)},
            {Training, std::addressof(freeze)},
            {Planning, std::addressof(cluster)},
            {Planning, std::addressof(plan)},
            {Planning, std::addressof(objective)},
            {Planning, std::addressof(minThroughput)},
            {Planning, std::addressof(planner)},
            {Planning, std::addressof(globalBatch)},
            {Planning, std::addressof(planThreads)},
            {Distribution, std::addressof(mesh)},
            {Distribution, std::addressof(gradBucketMb)},
            {Distribution, std::addressof(zero)},
            {Distribution, std::addressof(elastic)},
            {Distribution, std::addressof(microBatches)},
            {Distribution, std::addressof(schedule)},
            {Distribution, std::addressof(ppSplit)},
            {Distribution, std::addressof(psTables)},
            {Distribution, std::addressof(psOptimizer)},
            {Distribution, std::addressof(psInit)},
            {Output, std::addressof(output)},
            {Output, std::addressof(compileTo)},
            {Output, std::addressof(emit)},
            {Output, std::addressof(name)},
            {Output, std::addressof(paramsFile)}};
  }
};

CompileCommandLine::CompileCommandLine() : flags(std::make_unique<Flags>()) {
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
}

CompileCommandLine::~CompileCommandLine() = default;

void CompileCommandLine::parse(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv,
                              "dist-opt: compile ONNX models into "
                              "distributed executables\n");
}

bool CompileCommandLine::hasExtraPasses() const {
  return flags->passPipeline.hasAnyOccurrences();
}

LogicalResult CompileCommandLine::addExtraPasses(OpPassManager &pm) const {
  if (!hasExtraPasses())
    return success();
  return flags->passPipeline.addToPipeline(pm, [](const Twine &msg) {
    reportError(msg);
    return failure();
  });
}

//===----------------------------------------------------------------------===//
// Checks across flags
//===----------------------------------------------------------------------===//

std::optional<CompileOptions> CompileCommandLine::getOptions() const {
  Flags &f = *flags;
  CompileOptions options;
  options.inputFile = f.inputFile;
  options.summary = f.summary;
  options.conv = f.conv;
  options.runtimeLib = f.runtimeLib;
  options.runtimeInclude = f.runtimeInclude;
  auto fail = [](const Twine &message) {
    reportError(message);
    return std::nullopt;
  };

  // Where the output goes: a directory (-o DIR, a name without an
  // extension, or --emit) compiles into it; otherwise the IR is printed.
  bool emitGiven = f.emit.getNumOccurrences() > 0;
  bool compileToGiven = f.compileTo.getNumOccurrences() > 0;
  StringRef out = f.output.getValue();
  bool toDir = emitGiven;
  if (!toDir && out != "-")
    toDir =
        out.ends_with("/") || llvm::sys::fs::is_directory(out) ||
        (!llvm::sys::fs::exists(out) && !llvm::sys::path::has_extension(out));
  // Printing the IR over an existing file that is not MLIR would destroy
  // it (a mistyped output directory, say).
  if (!toDir && out != "-" && llvm::sys::fs::is_regular_file(out) &&
      llvm::sys::path::extension(out) != ".mlir")
    return fail("-o " + out +
                ": exists and is not a directory (pass a directory to "
                "compile the model, or a .mlir file for the imported IR)");
  if (emitGiven && out == "-")
    return fail("--emit=" + stringifyEnumOption(f.emit.getValue()) +
                " needs -o DIR");
  if (compileToGiven && emitGiven)
    return fail("--compile-to and --emit both say where to stop: give one");
  if (toDir)
    options.outDir = out.str();
  else
    options.outputFile = out.str();
  options.compileTo = toDir ? Phase::Emit : Phase::Partition;
  if (compileToGiven)
    options.compileTo = f.compileTo;
  if (!toDir && options.compileTo == Phase::Emit)
    return fail("--compile-to=emit needs -o DIR");
  if (emitGiven) {
    switch (f.emit.getValue()) {
    case EmitKind::Exe:
      break;
    case EmitKind::Obj:
      options.artifact = ArtifactKind::Obj;
      break;
    case EmitKind::LLVM:
      options.artifact = ArtifactKind::LLVM;
      break;
    case EmitKind::Mlir:
      options.compileTo = Phase::HostCodegen;
      break;
    case EmitKind::Dist:
      options.compileTo = Phase::Partition;
      break;
    case EmitKind::Plan:
      options.compileTo = Phase::Plan;
      options.planOnly = true;
      break;
    }
  }

  // Planning: any planning flag (or --emit=plan) turns the planner on.
  bool planning = options.planOnly;
  for (cl::Option *o : std::initializer_list<cl::Option *>{
           &f.cluster, &f.plan, &f.objective, &f.minThroughput, &f.planner,
           &f.globalBatch, &f.planThreads})
    planning |= o->getNumOccurrences() > 0;
  PlanningOptions p;
  p.cluster = f.cluster;
  p.objective = f.objective;
  p.minThroughput = f.minThroughput;
  p.strategy = f.planner;
  p.globalBatch = f.globalBatch;
  p.threads = f.planThreads;
  p.psTables = !f.psTables.empty();
  if (!f.plan.empty() && f.plan != "auto")
    p.planFile = f.plan;
  if (p.objective == Objective::Cost && !(p.minThroughput > 0))
    return fail("--min-throughput: the cost objective needs a positive "
                "throughput (samples/s)");
  if (f.minThroughput.getNumOccurrences() && p.objective != Objective::Cost)
    return fail("--min-throughput: only used with --objective=cost");
  if (p.globalBatch < 0 || p.threads < 0)
    return fail(Twine("--") +
                (p.globalBatch < 0 ? "global-batch" : "plan-threads") +
                ": must not be negative");
  if (f.mesh.getNumOccurrences()) {
    MeshSpec mesh;
    std::string why = parseMesh(f.mesh, mesh);
    if (!why.empty())
      return fail("--mesh: " + why);
    options.mesh = std::move(mesh);
  }
  if (f.plan.getNumOccurrences()) {
    if (f.mesh.getNumOccurrences())
      return fail("--mesh and --plan both give the layout: use --mesh for a "
                  "layout by hand, --plan for the planner's");
    // --emit=plan stops at the plan; anything further compiles its layout.
    p.applyLayout = !options.planOnly;
  }
  if (!(f.gradBucketMb > 0) || f.gradBucketMb > 1024 * 1024) {
    std::string given;
    llvm::raw_string_ostream(given) << f.gradBucketMb.getValue();
    return fail("--grad-bucket-mb: must be a positive size in MiB, got " +
                given);
  }
  options.gradBucketBytes =
      std::max<int64_t>(1, static_cast<int64_t>(f.gradBucketMb * 1048576));
  if (f.zero.getNumOccurrences()) {
    if (f.zero != 0 && f.zero != 1)
      return fail("--zero: the ZeRO stage must be 0 or 1 (optimizer state "
                  "sharding), got " +
                  Twine(f.zero.getValue()));
    // With --plan the mesh is known once planned (dist-plan checks it).
    if (f.zero == 1 && !options.mesh && !p.applyLayout &&
        !f.elastic.getNumOccurrences())
      return fail("--zero 1 needs --mesh with a dp axis (e.g. --mesh dp=2)");
    options.zero = f.zero;
  }
  if (f.elastic.getNumOccurrences()) {
    StringRef lo, hi;
    std::tie(lo, hi) = StringRef(f.elastic).split(':');
    int64_t min = 0, max = 0;
    if (lo.getAsInteger(10, min) || hi.getAsInteger(10, max) || min < 1 ||
        max < min || max > 1024)
      return fail("--elastic: expected MIN:MAX world sizes with 1 <= MIN <= "
                  "MAX <= 1024 (e.g. 2:4), got '" +
                  f.elastic.getValue() + "'");
    if (!f.train)
      return fail("--elastic: layouts for training jobs: needs --train");
    if (!toDir || options.compileTo != Phase::Emit ||
        options.artifact != ArtifactKind::Exe)
      return fail("--elastic writes one executable per layout: give -o DIR "
                  "(and no --compile-to or --emit)");
    // --mesh pp=P: the layouts of P | N ranks have P stages.
    bool stagesOnly = options.mesh && options.mesh->axes.size() == 1 &&
                      options.mesh->axes[0] == "pp";
    if ((f.mesh.getNumOccurrences() && !stagesOnly) ||
        f.plan.getNumOccurrences())
      return fail("--elastic: the layouts are data-parallel over every world "
                  "size (dp=MIN..MAX), with --mesh pp=P pipeline stages where "
                  "P divides it; --mesh with other axes and --plan are not "
                  "supported with it yet");
    if (f.psTables.getNumOccurrences())
      return fail("--elastic: parameter-server tables are not supported "
                  "with it yet");
    if (stagesOnly && options.zero == 1)
      return fail(
          "--elastic with --mesh pp=" + Twine(options.mesh->sizeOf("pp")) +
          ": ZeRO with pipeline stages is not supported yet (drop "
          "--zero 1)");
    options.elasticMin = min;
    options.elasticMax = max;
    if (options.zero == 1 && max < 2)
      return fail("--zero 1 needs layouts of 2 or more ranks (--elastic " +
                  f.elastic.getValue() + ")");
  }
  if (!p.planFile.empty() && !llvm::sys::fs::exists(p.planFile))
    return fail("--plan: " + p.planFile + ": no such file");
  // Into a directory, the reports go there and the summary to stdout;
  // printed IR keeps stdout for itself.
  if (toDir) {
    p.reportDir = options.outDir;
    p.summary = SummaryStream::Stdout;
  }
  if (planning)
    options.planning = std::move(p);

  // Pipeline stages: the mesh's pp axis.
  int64_t stagesAsked = options.mesh ? options.mesh->sizeOf("pp") : 1;
  for (cl::Option *o : std::initializer_list<cl::Option *>{
           &f.microBatches, &f.schedule, &f.ppSplit})
    if (o->getNumOccurrences() && stagesAsked < 2 &&
        !(o == &f.schedule && p.applyLayout))
      return fail("--" + o->ArgStr +
                  " needs pipeline stages (e.g. --mesh pp=2" +
                  (o == &f.schedule ? ", or a --plan with stages)" : ")"));
  if (stagesAsked > 1 && !f.train)
    return fail("--mesh: pipeline stages (pp=" + Twine(stagesAsked) +
                ") need --train; pipelined inference is not supported yet");
  if (f.microBatches.getNumOccurrences() && f.microBatches < 1)
    return fail("--micro-batches: must be at least 1, got " +
                Twine(f.microBatches.getValue()));
  options.schedule = f.schedule;
  options.ppSplit = f.ppSplit;

  // Parameter-server tables.
  for (StringRef t : llvm::split(f.psTables.getValue(), ','))
    if (!t.trim().empty())
      options.psTables.push_back(t.trim().str());
  if (f.psTables.getNumOccurrences() && options.psTables.empty())
    return fail("--ps-tables: give all, auto, or table names");
  if (f.psOptimizer.getNumOccurrences()) {
    if (options.psTables.empty())
      return fail("--ps-optimizer needs --ps-tables");
    if (!f.train)
      return fail("--ps-optimizer needs --train");
    if (f.psOptimizer != "sgd" && f.psOptimizer != "adagrad" &&
        f.psOptimizer != "adam")
      return fail("--ps-optimizer: '" + f.psOptimizer +
                  "' is not one of sgd, adagrad, adam");
    options.psOptimizer = f.psOptimizer;
  }
  if (f.psInit.getNumOccurrences()) {
    if (options.psTables.empty())
      return fail("--ps-init needs --ps-tables");
    if (!f.train)
      return fail("--ps-init needs --train (an inference artifact reads the "
                  "tables a training run saved)");
    PsInit init;
    std::string why = parsePsInit(f.psInit, init);
    if (!why.empty())
      return fail("--ps-init: " + why);
    options.psInit = f.psInit;
  }

  // Training.
  for (cl::Option *o : std::initializer_list<cl::Option *>{
           &f.loss, &f.lossOutput, &f.ignoreIndex, &f.optimizer, &f.lr,
           &f.momentum, &f.beta1, &f.beta2, &f.eps, &f.weightDecay,
           &f.lrSchedule, &f.warmupSteps, &f.clipGradNorm,
           std::addressof(f.freeze)})
    if (o->getNumOccurrences() && !f.train)
      return fail("--" + o->ArgStr + " needs --train");
  if (f.train) {
    if (f.weightDecay.getNumOccurrences() && !(f.weightDecay >= 0))
      return fail("--weight-decay: must not be negative");
    TrainOptions &t = options.train.emplace(TrainOptions::from(f));
    if (stagesAsked > 1) {
      // 0: two per stage, fewer where the batch does not split.
      t.microBatches =
          f.microBatches.getNumOccurrences() ? f.microBatches.getValue() : 0;
      t.globalBatch = f.globalBatch;
    }
    std::string option;
    std::string why = checkTrainStepOptions(t.toPassOptions(), option);
    if (!why.empty())
      return fail("--" + option + ": " + why);
    // Options that the chosen loss, optimizer or schedule never reads:
    // said, not silently dropped.
    auto unused = [&](cl::Option &o, bool used, const std::string &why) {
      if (o.getNumOccurrences() && !used)
        reportWarning("--" + o.ArgStr + " has no effect with " + why);
    };
    std::string schedule =
        "--lr-schedule=" + stringifyEnumOption(t.lrSchedule).str();
    std::string lossText = "--loss=" + stringifyEnumOption(t.loss).str();
    std::string optText =
        "--optimizer=" + stringifyEnumOption(t.optimizer).str();
    unused(f.warmupSteps, t.lrSchedule == LRScheduleKind::WarmupLinear,
           schedule);
    unused(f.ignoreIndex, t.loss == LossKind::CrossEntropy, lossText);
    unused(f.momentum, t.optimizer == OptimizerKind::Momentum, optText);
    bool adam = t.optimizer == OptimizerKind::Adam ||
                t.optimizer == OptimizerKind::AdamW;
    unused(f.beta1, adam, optText);
    unused(f.beta2, adam, optText);
    unused(f.eps, adam, optText);
    if (!options.psTables.empty()) {
      // The servers update the tables' rows with a constant rate.
      if (options.psOptimizer.empty()) {
        if (t.optimizer != OptimizerKind::SGD &&
            t.optimizer != OptimizerKind::Adam)
          return fail("--ps-tables with " + optText +
                      ": the servers apply sgd, adagrad or adam to the "
                      "tables' rows; choose one with --ps-optimizer");
        options.psOptimizer = stringifyEnumOption(t.optimizer).str();
      }
      if (t.lrSchedule != LRScheduleKind::Constant)
        return fail("--ps-tables with " + schedule +
                    ": the servers apply a constant learning rate");
    }
  }

  // Target.
  if (StringRef target = f.target.getValue(); target != "host") {
    StringRef kind, archs;
    std::tie(kind, archs) = target.split(':');
    if (kind != "cuda")
      return fail("--target=" + target +
                  ": unknown target (host, or cuda[:sm_80,sm_90,...])");
    CudaTargetOptions cuda;
    if (target.contains(':') && archs.trim().empty())
      return fail("--target=" + target +
                  ": give the architectures after ':' (e.g. cuda:sm_90)");
    for (StringRef a : llvm::split(archs, ',')) {
      a = a.trim();
      if (a.empty() && archs.empty())
        continue;
      if (!llvm::is_contained(supportedCudaChips(), a))
        return fail("--target=" + target + ": '" + a +
                    "' is not a CUDA architecture dist-opt compiles for (" +
                    llvm::join(supportedCudaChips(), ", ") + ")");
      if (!llvm::is_contained(cuda.chips, a.str()))
        cuda.chips.push_back(a.str());
    }
    if (cuda.chips.empty())
      cuda.chips = {"sm_80", "sm_90"};
    // The toolkit: CUDA_HOME, else /usr/local/cuda.
    const char *home = std::getenv("CUDA_HOME");
    bool fromEnv = home && *home;
    cuda.toolkit = fromEnv ? home : "/usr/local/cuda";
    for (const char *part :
         {"bin/ptxas", "bin/fatbinary", "nvvm/libdevice/libdevice.10.bc"}) {
      SmallString<256> path(cuda.toolkit);
      llvm::sys::path::append(path, part);
      if (!llvm::sys::fs::exists(path))
        return fail("--target=cuda: no CUDA toolkit at " + cuda.toolkit +
                    (fromEnv ? " (CUDA_HOME)" : "") + ": " + part +
                    " is missing (install the CUDA toolkit or set "
                    "CUDA_HOME to it)");
    }
    // dp and tp meshes run one GPU per rank with NCCL; the rest is the
    // host target's.
    if ((options.mesh && options.mesh->sizeOf("pp") > 1) || p.applyLayout ||
        f.psTables.getNumOccurrences() || f.elastic.getNumOccurrences())
      return fail("--target=cuda: a model compiled for GPUs takes --mesh "
                  "dp=N,tp=M; pipeline stages (pp), --plan, --ps-tables and "
                  "--elastic are not supported with it yet");
    if (f.conv.getNumOccurrences())
      return fail("--conv chooses the CPU's convolution kernel; it has no "
                  "effect with --target=cuda");
    cuda.precision = f.precision;
    options.cuda = std::move(cuda);
  } else if (f.precision.getNumOccurrences() &&
             f.precision != Precision::Fp32) {
    return fail(
        "--precision=" + stringifyEnumOption<Precision>(f.precision).str() +
        ": the host target's products are f32; tf32 and bf16 need "
        "--target=cuda");
  }

  // Import.
  options.maxInlineElements = f.maxInline;
  {
    ONNXImportOptions import;
    for (const std::string &s : f.inputShapes) {
      std::string err = parseInputShapeOption(s, import);
      if (!err.empty())
        return fail(err);
    }
    for (const std::string &s : f.inputValues) {
      std::string err = parseInputValueOption(s, import);
      if (!err.empty())
        return fail(err);
    }
    for (const auto &entry : import.inputShapes)
      options.inputShapes[entry.getKey()] = entry.getValue();
    for (const auto &entry : import.inputValues)
      options.inputValues[entry.getKey()] = entry.getValue();
  }

  // Output.
  // An empty --name (an unset shell variable, say) is refused rather than
  // quietly replaced by the file's stem.
  if (toDir && f.name.getNumOccurrences() && f.name.empty())
    return fail("--name is empty (give a C identifier, or leave the option "
                "out to use the model file's stem)");
  if (toDir) {
    if (!f.paramsFile.empty())
      return fail("--params-file is not used with -o DIR (the parameter file "
                  "is written into DIR)");
    std::string name = cIdentifier(
        f.name.empty() ? llvm::sys::path::stem(f.inputFile) : f.name);
    if (!f.name.empty() && name != f.name)
      return fail("--name '" + f.name +
                  "' is not a C identifier (letters, digits, _)");
    if (StringRef(name).starts_with("dist_rt"))
      return fail("--name '" + name +
                  "': names starting with dist_rt are reserved for the "
                  "runtime");
    options.name = name;
  } else {
    options.paramsFile = f.paramsFile;
  }
  if (options.conv == ConvKernel::Auto && !options.cuda)
    options.conv = resolveConvKernel(/*training=*/options.train.has_value());
  return options;
}

//===----------------------------------------------------------------------===//
// Help
//===----------------------------------------------------------------------===//

void CompileCommandLine::printHelp(llvm::raw_ostream &os) const {
  os << "OVERVIEW: dist-opt compiles ONNX models into distributed "
        "executables\n\n"
        "USAGE: dist-opt <model.onnx> -o <dir> [options]   compile (every "
        "phase)\n"
        "       dist-opt <model.onnx> [options]            print the IR "
        "after --compile-to\n"
        "       dist-opt <file.mlir> [passes]              run passes, "
        "like mlir-opt\n"
        "       dist-opt calibrate -o <cluster.yaml>       measure this "
        "machine for the planner\n"
        "       dist-opt --help-mlir                       every pass and "
        "pipeline, and MLIR's flags\n\n";
  os << "PHASES (in order; --compile-to=<phase> stops after one, and "
        "dist-<phase>-pipeline runs it on a .mlir file):\n";
  for (const PhaseInfo &info : getPhases())
    os << llvm::formatv("  {0,-13} {1}\n", info.name, info.summary);
  auto argText = [](cl::Option *o) -> std::string {
    if (o->getFormattingFlag() == cl::Positional)
      return o->HelpStr.str();
    // Single-letter flags take their value after a space (-o out/).
    bool letter = o->ArgStr.size() == 1;
    std::string text = (letter ? "-" : "--") + o->ArgStr.str();
    if (!o->ValueStr.empty())
      text += (letter ? " <" : "=<") + o->ValueStr.str() + ">";
    return text;
  };
  std::vector<std::pair<Group, cl::Option *>> order = flags->ordered();
  // The values of closed sets, listed after their flag.
  auto values = [&](cl::Option *o) -> std::string {
    std::string list;
    auto add = [&](auto *opt) {
      for (unsigned i = 0, e = opt->getParser().getNumOptions(); i < e; ++i)
        list += (i ? "|" : "") + opt->getParser().getOption(i).str();
    };
    if (o == &flags->conv)
      add(&flags->conv);
    else if (o == &flags->precision)
      add(&flags->precision);
    else if (o == &flags->loss)
      add(&flags->loss);
    else if (o == &flags->optimizer)
      add(&flags->optimizer);
    else if (o == &flags->lrSchedule)
      add(&flags->lrSchedule);
    else if (o == &flags->objective)
      add(&flags->objective);
    else if (o == &flags->planner)
      add(&flags->planner);
    else if (o == &flags->compileTo)
      add(&flags->compileTo);
    else if (o == &flags->emit)
      add(&flags->emit);
    return list;
  };
  for (int g = Input; g <= Output; ++g) {
    os << "\n" << llvm::StringRef(kGroupNames[g]).upper() << ":\n";
    for (auto &[group, o] : order) {
      if (group != g)
        continue;
      std::string text = argText(o);
      std::string list = values(o);
      if (!list.empty())
        text = "--" + o->ArgStr.str() + "=<" + list + ">";
      else if (o->ValueStr.empty() &&
               o->getFormattingFlag() != cl::Positional &&
               o->getValueExpectedFlag() != cl::ValueDisallowed &&
               o != &flags->summary && o != &flags->train)
        text += "=<n>";
      if (o->getFormattingFlag() == cl::Positional)
        text = "<model.onnx>";
      StringRef help = o == &flags->inputFile
                           ? "The model: binary ONNX or ONNX text format"
                           : o->HelpStr;
      if (text.size() > 30)
        os << "  " << text << "\n" << std::string(33, ' ') << help << "\n";
      else
        os << llvm::formatv("  {0,-30} {1}\n", text, help);
    }
    if (g == Output)
      os << llvm::formatv("  {0,-30} {1}\n", "-p <pipeline>",
                          "Passes to run after the last phase (printing "
                          "mode; see --help-mlir)");
  }
  os << "\nThe executable a compile writes explains its own commands: "
        "<dir>/<name> --help, <dir>/<name> train --help.\n";
}

//===----------------------------------------------------------------------===//
// Mode
//===----------------------------------------------------------------------===//

bool dist::hasONNXInput(int argc, char **argv) {
  // The flags that take a value, which may come as the next argument
  // (--mesh dp=2): that argument is not the input.
  static const char *valueFlags[] = {"o",
                                     "p",
                                     "input-shape",
                                     "input-value",
                                     "max-inline-elements",
                                     "conv",
                                     "precision",
                                     "target",
                                     "runtime-lib",
                                     "runtime-include",
                                     "loss",
                                     "loss-output",
                                     "ignore-index",
                                     "optimizer",
                                     "lr",
                                     "momentum",
                                     "beta1",
                                     "beta2",
                                     "eps",
                                     "weight-decay",
                                     "lr-schedule",
                                     "warmup-steps",
                                     "clip-grad-norm",
                                     "freeze",
                                     "cluster",
                                     "plan",
                                     "objective",
                                     "min-throughput",
                                     "planner",
                                     "global-batch",
                                     "plan-threads",
                                     "mesh",
                                     "grad-bucket-mb",
                                     "zero",
                                     "compile-to",
                                     "emit",
                                     "name",
                                     "params-file"};
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    if (arg.starts_with("-")) {
      StringRef flag = arg.ltrim('-');
      if (!flag.contains('=') && llvm::is_contained(valueFlags, flag))
        ++i;
      continue;
    }
    return looksLikeONNXFile(arg);
  }
  return false;
}
