//===- Calibrate.cpp - dist-opt calibrate ---------------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// `dist-opt calibrate -o local.yaml` measures this machine for the cost
// model: the runtime's kernels through dist-calibrate (GEMM, bandwidth,
// overheads, the direct convolution), generated loops per kernel class by
// compiling and timing small probe models (they need the compiler, hence
// here and not in the runtime's tool), and all_reduce between two local
// ranks (dist-calibrate-comm under mpirun). It writes the detected local
// cluster with the measurements as a cluster file.
//
//===----------------------------------------------------------------------===//

#include "dist/Pipelines/Calibrate.h"

#include "dist/Import/ONNX/ONNXImporter.h"
#include "dist/Pipelines/Compile.h"
#include "dist/Pipelines/Diagnostics.h"
#include "dist/Planner/Calibration.h"
#include "dist/Planner/Cluster.h"
#include "dist/Transforms/LayerCosts.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"

#include <thread>

#include <unistd.h>

using namespace mlir;
using namespace mlir::dist;
using namespace llvm;

namespace {

/// A temporary file (closed, empty), removed when this goes out of scope;
/// `path` is empty when it could not be created.
struct ScratchFile {
  SmallString<128> path;
  ScratchFile(StringRef stem, StringRef extension) {
    int fd;
    if (sys::fs::createTemporaryFile(stem, extension, fd, path)) {
      path.clear();
      return;
    }
    sys::Process::SafelyCloseFileDescriptor(fd);
  }
  ~ScratchFile() {
    if (!path.empty())
      sys::fs::remove(path);
  }
  ScratchFile(const ScratchFile &) = delete;
  ScratchFile &operator=(const ScratchFile &) = delete;
};
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
  ScratchFile params("dist-probe", "params");
  if (params.path.empty())
    return std::nullopt;
  opts.paramFile = params.path.str().str();
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
    reportError("cannot create a temporary directory");
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
        reportError(Twine(model) + ": " + ec.message());
        return false;
      }
      os << probe.onnxText;
    }
    CompileOptions options;
    options.inputFile = model.str().str();
    options.outDir = out.str().str();
    options.name = probe.kernelClass;
    if (runCompile(options, registry) != 0) {
      reportError(Twine("calibration probe '") + probe.kernelClass +
                  "' failed to compile");
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
        reportError(Twine("calibration probe '") + probe.kernelClass +
                    "' has no cost at batch " + Twine(n));
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
        reportError(Twine("cannot write ") + input);
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
          reportError(Twine("calibration probe '") + kernelClass +
                      "' failed to run" + (execError.empty() ? "" : ": ") +
                      execError);
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
          reportError(Twine("calibration probe '") + kernelClass +
                      "' printed no latency");
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

/// Runs the dist-calibrate tool `exe` with `args` (after --json) and
/// --quick / --quiet as asked, waiting at most `timeoutS` seconds (0: no
/// limit), and parses the JSON it writes. On failure returns nullopt and
/// sets `error` to one phrase: the run failed (exit code), its output
/// cannot be read, or what is wrong with it.
std::optional<dist::DeviceCalibration>
runCalibrateTool(StringRef exe, ArrayRef<std::string> args, bool quick,
                 bool quiet, unsigned timeoutS, std::string &error) {
  ScratchFile json("dist-calibrate", "json");
  if (json.path.empty()) {
    error = "cannot create a temporary file";
    return std::nullopt;
  }
  std::vector<std::string> argStorage = {exe.str(), "--json",
                                         json.path.str().str()};
  argStorage.insert(argStorage.end(), args.begin(), args.end());
  if (quick)
    argStorage.push_back("--quick");
  if (quiet)
    argStorage.push_back("--quiet");
  SmallVector<StringRef> argRefs(argStorage.begin(), argStorage.end());
  std::string execError;
  int rc = sys::ExecuteAndWait(exe, argRefs, std::nullopt, {}, timeoutS, 0,
                               &execError);
  if (rc != 0) {
    error = (Twine("calibration failed") +
             (execError.empty() ? "" : ": " + execError) + " (exit " +
             Twine(rc) + ")")
                .str();
    return std::nullopt;
  }
  auto buffer = MemoryBuffer::getFile(json.path);
  if (!buffer) {
    error =
        "cannot read the calibration output: " + buffer.getError().message();
    return std::nullopt;
  }
  return dist::parseCalibrationJson((*buffer)->getBuffer().str(), error);
}

/// Measures GPU 0 with `dist-calibrate --gpu 0` when the cluster detected
/// one, and puts the figures on its GPU devices (applyGpuCalibration).
/// When the run fails, says so in one warning line and keeps the estimates.
void calibrateGpus(dist::ClusterSpec &cluster, StringRef exe, bool quick,
                   bool quiet) {
  if (cluster.deviceCount(dist::DevKind::GPU) == 0)
    return;
  auto warn = [&](const Twine &why) {
    reportWarning("calibrate: the GPU was not measured (" + why +
                  "); its figures stay estimates");
  };
  std::string error;
  std::optional<dist::DeviceCalibration> cal =
      runCalibrateTool(exe, {"--gpu", "0"}, quick, quiet,
                       /*timeoutS=*/600, error);
  if (!cal)
    return warn(error);
  dist::applyGpuCalibration(cluster, *cal);
}

/// Times all_reduce between two local MPI ranks (dist-calibrate-comm under
/// mpirun) and stores the alpha-beta fit as the node's intra link. Without
/// mpirun, or when the run fails, says so in one warning line and keeps the
/// default link.
void calibrateCollectives(dist::ClusterSpec &cluster, StringRef toolDir,
                          bool quick, bool quiet) {
  auto warn = [&](const Twine &why) {
    reportWarning("calibrate: collectives not measured (" + why +
                  "); the intra-node link keeps its default figures");
  };
  llvm::ErrorOr<std::string> mpirun = sys::findProgramByName("mpirun");
  if (!mpirun)
    return warn("mpirun not found");
  SmallString<256> exe(toolDir);
  sys::path::append(exe, "dist-calibrate-comm");
  if (!sys::fs::can_execute(exe))
    return warn(Twine(exe) + " is missing");
  ScratchFile json("dist-calibrate-comm", "json");
  ScratchFile log("dist-calibrate-comm", "log");
  if (json.path.empty() || log.path.empty())
    return warn("cannot create a temporary file");
  std::vector<std::string> argStorage = {*mpirun};
  if (::getuid() == 0)
    argStorage.push_back("--allow-run-as-root");
  for (const char *a :
       {"--oversubscribe", "--mca", "btl", "self,vader", "-np", "2"})
    argStorage.push_back(a);
  argStorage.push_back(exe.str().str());
  argStorage.push_back("--json");
  argStorage.push_back(json.path.str().str());
  if (quick)
    argStorage.push_back("--quick");
  SmallVector<StringRef> args(argStorage.begin(), argStorage.end());
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log.path),
                                          StringRef(log.path)};
  std::string execError;
  int rc = sys::ExecuteAndWait(*mpirun, args, std::nullopt, redirects,
                               /*SecondsToWait=*/120, 0, &execError);
  if (rc != 0) {
    std::string detail;
    if (auto text = MemoryBuffer::getFile(log.path)) {
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
  auto text = MemoryBuffer::getFile(json.path);
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

} // namespace

/// `dist-opt calibrate -o local.yaml`: measures this machine with the
/// runtime's dist-calibrate tool (next to dist-opt) and writes the detected
/// local cluster with the measurements as a cluster file.
int dist::calibrateMain(int argc, char **argv, DialectRegistry &registry) {
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
    reportError("--threads-max: must not be negative");
    return 1;
  }
  // Opened first so that an unwritable path fails before measuring; the
  // file replaces an existing one only once everything succeeded.
  std::string err;
  auto out = openOutputFile(output, &err);
  if (!out) {
    reportError(err);
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
    reportError(Twine("the calibration tool ") + exe +
                " is missing (build the dist-calibrate target)");
    return 1;
  }
  std::vector<std::string> toolArgs;
  if (threadsMax > 0)
    toolArgs = {"--threads-max", std::to_string(threadsMax)};
  std::string error;
  std::optional<dist::DeviceCalibration> cal =
      runCalibrateTool(exe, toolArgs, quick, quiet, /*timeoutS=*/0, error);
  if (!cal) {
    reportError(error);
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
  calibrateGpus(cluster, exe, quick, quiet);
  calibrateCollectives(cluster, sys::path::parent_path(exe), quick, quiet);
  out->os() << dist::clusterToYaml(cluster);
  out->keep();
  if (!quiet)
    errs() << "calibrate: wrote " << output << "\n";
  return 0;
}
