//===- Emit.h - objects and deployable artifacts ----------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Turns a module lowered to the LLVM dialect into an object file for the
// host CPU (in-process: translation, LLVM O3, object emission), and links
// the artifacts a deployment picks up: an executable, a shared library with
// a C header, and a JSON manifest, next to the parameter file.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_CODEGEN_EMIT_H
#define DIST_CODEGEN_EMIT_H

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::dist {

/// One tensor of the model's interface, recorded before lowering.
struct TensorSignature {
  std::string name;
  /// ONNX TensorProto data type code (DIST_RT_DTYPE_*).
  unsigned dtype = 0;
  /// Dimensions; -1 for a dimension known only at run time.
  std::vector<int64_t> dims;
  /// ONNX names of the dimensions (dist.dim_names; "" for none), empty when
  /// no dimension has one.
  std::vector<std::string> dimNames;
  /// Parameters split by tensor parallelism (kParamShardAttr): mesh axis
  /// (-1: replicated), dimension and blocks; `dims` are the local ones.
  int64_t shardAxis = -1, shardDim = 0, shardBlocks = 1;
};

/// The training step of a module built by dist-build-train-step.
struct TrainSignature {
  /// Data inputs (without the trailing lr and step scalars) and outputs.
  std::vector<TensorSignature> inputs, outputs;
  /// DIST_RT_PARAM_* role per parameter, in parameter order.
  std::vector<uint8_t> paramRoles;
  std::string optimizer, loss;
  double lr = 0;
  /// DIST_RT_LR_* code.
  unsigned lrSchedule = 0;
  int64_t warmupSteps = 0;
  /// Classes of a cross_entropy label (dist_rt_train_desc_t::label_classes;
  /// 0: no check) and the label it ignores.
  int64_t labelClasses = 0;
  int64_t ignoreIndex = -100;
};

/// One function of a pipeline stage (dist-split-stages): the function, the
/// packed entry point dist-add-entry-wrapper gives it, its stage and
/// DIST_RT_PIPELINE_* action, and its inputs and outputs by name (see
/// dist_rt_pipeline_fn_t).
struct PipelineFunctionSignature {
  std::string funcName, symbol;
  unsigned stage = 0, action = 0;
  std::vector<TensorSignature> inputs, outputs;
};

/// A training step cut into pipeline stages.
struct PipelineSignature {
  int64_t stages = 1, microBatches = 1;
  /// dist_rt::pipeline::ScheduleKind.
  unsigned schedule = 0;
  std::vector<PipelineFunctionSignature> functions;
  /// Per parameter, the stage whose functions write it, or -1.
  std::vector<int64_t> paramStages;
};

/// A lookup of a table on the parameter server (dist-ps-lookups): the
/// input `rows` takes the rows pulled for elements `cols` of each sample
/// of input `ids` from the table that parameter `table` declares.
struct PsLookupSignature {
  std::string rows, ids;
  unsigned table = 0;
  std::vector<int64_t> cols;
};

/// The tables on the parameter server: their lookups and the servers'
/// per-row update (`dist.ps_optimizer`).
struct PsSignature {
  std::vector<PsLookupSignature> lookups;
  std::string optimizer = "sgd";
  double lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  /// How the servers create rows (PsInit): "rows" (the parameter file's),
  /// "uniform" in [initA, initB) or "normal" of mean initA and std initB.
  std::string init = "rows";
  double initA = 0, initB = 0;
};

/// The model's interface: parameters (in the entry function's argument
/// order), inputs and outputs, and the training step when there is one.
struct ModelSignature {
  std::vector<TensorSignature> params, inputs, outputs;
  std::optional<TrainSignature> train;
  /// The training step's pipeline stages, when it was cut into them (then
  /// `train` describes the whole step: its data inputs and loss).
  std::optional<PipelineSignature> pipeline;
  /// The lookups of tables on the parameter server, when there are any.
  std::optional<PsSignature> ps;
  /// The mesh the module was partitioned for (`shard.grid @mesh` with
  /// `dist.mesh_axes`, see dist-partition); empty when it was not.
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshShape;
  /// Inference under the dp axis: the dp size when each dp rank runs its
  /// rows of the batch (`dist.infer_batch_split`; the dims above are the
  /// whole batch's), else 0 with `batchWhole` saying why when the module
  /// has a dp axis.
  int64_t inferBatchSplit = 0;
  std::string batchWhole;
  /// The packed entry points the artifacts call (dist-add-entry-wrapper's
  /// symbols), recorded by dist-record-signature; the step's only when
  /// there is one.
  std::string entrySymbol, trainSymbol;
  /// Where the compiled code runs: "" (the host) or "cuda" (its buffers
  /// are the runtime's device memory: dist_rt_model_desc_t::device).
  std::string device;
  /// A CUDA model's product precision ("fp32", "tf32", "bf16"; --precision).
  std::string precision;
};

/// Reads the signature of the (single, public) entry function of a dist
/// module and its parameters. Fails with an error naming the problem (no
/// entry function, an element type without an ONNX code, ...).
FailureOr<ModelSignature> getModelSignature(ModuleOp module);

/// Name of the public entry function of a dist module ("main" for
/// imported models); the training step (`dist.train_step`) is not one.
FailureOr<std::string> getEntryName(ModuleOp module);

/// Name of the training step function, or "" when there is none.
std::string getTrainStepName(ModuleOp module);

/// Module attribute holding the signature that dist-record-signature read
/// before lowering (a dictionary: params, inputs, outputs, train, mesh).
inline constexpr llvm::StringLiteral kSignatureAttr = "dist.signature";
/// The signature as that attribute, and back (failure with an error when
/// the module has none or it is malformed).
DictionaryAttr signatureToAttr(MLIRContext *ctx, const ModelSignature &sig);
FailureOr<ModelSignature> getRecordedSignature(ModuleOp module);

struct EmitOptions {
  /// Model name: file stem of the artifacts and prefix of the C API.
  std::string name;
  /// Output directory (created if missing).
  std::string outDir;
  /// File name of the parameter file inside outDir ("" when there is none).
  std::string paramFileName;
  /// Runtime static library (libdist_rt.a) and public headers.
  std::string runtimeLib, runtimeInclude;
  /// C compiler driver used to link (defaultLinkDriver()).
  std::string cc;
  /// Symbol of the packed entry point in the object.
  std::string entrySymbol;
  /// Symbol of the packed training step ("" when there is none).
  std::string trainEntrySymbol;
  /// File name of the copy of the ONNX model inside outDir ("": none).
  std::string onnxFileName;
  /// The elastic layout set (dist-opt --elastic=MIN:MAX) the executable
  /// belongs to; 0: none.
  int64_t elasticMin = 0, elasticMax = 0;
  /// When set, only the executable is linked, under this file name (one
  /// layout of an elastic set beside the set's full artifacts).
  std::string executableFile;
};

/// The executable of an elastic set's layout for `ranks` ranks: `<name>`
/// for the largest, `<name>.dp<ranks>` for the others.
std::string elasticExecutable(llvm::StringRef name, int64_t ranks,
                              int64_t maxRanks);

/// Translates `module` (LLVM dialect) to LLVM IR for the host, optimises it
/// at O3 for the host CPU and returns the textual IR (`asText`) or writes
/// an object file to `objPath`.
LogicalResult emitLLVMIR(ModuleOp module, llvm::StringRef name,
                         std::string &llvmIRText);
/// Large modules are split into partitions whose code is generated on
/// threads of their own (DIST_OPT_CODEGEN_THREADS=N: N partitions whatever
/// the size, 1: none).
LogicalResult emitObjectFile(ModuleOp module, llvm::StringRef name,
                             llvm::StringRef objPath);

/// The runtime library beside this executable's directory
/// (`<bin>/../lib/libdist_rt.a`) and the runtime's public headers in the
/// source tree: what artifacts link against unless told otherwise.
std::string defaultRuntimeLib();
std::string defaultRuntimeInclude();
/// The C compiler driver that links artifacts: $CC if set, else "cc", or in
/// a sanitizer build (-DDIST_SANITIZE) the compiler the runtime was built
/// with, whose sanitizer runtime the artifacts need.
std::string defaultLinkDriver();

/// Writes <outDir>/<name>.h and <name>.json, compiles the C glue and links
/// <outDir>/<name> (executable) and <outDir>/lib<name>.so from `objPath`
/// and the runtime. Errors are emitted on `module`'s location.
LogicalResult linkArtifacts(ModuleOp module, const ModelSignature &sig,
                            const EmitOptions &options,
                            llvm::StringRef objPath);

} // namespace mlir::dist

#endif // DIST_CODEGEN_EMIT_H
