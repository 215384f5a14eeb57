//===- RecordSignature.cpp - the model's interface ------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Reads the interface of a dist module (parameters, inputs, outputs, the
// training step, the mesh) before it is lowered, and records it on the
// module as `dist.signature` (dist-record-signature), from which
// dist-emit-artifacts writes the descriptor, header and manifest after
// lowering.
//
//===----------------------------------------------------------------------===//

#include "dist/Codegen/Emit.h"
#include "dist/Codegen/Passes.h"
#include "dist/Codegen/RuntimeABI.h"
#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/Mesh.h"
#include "dist/Transforms/PipelineSchedule.h"
#include "dist_rt/model.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSwitch.h"

#define DEBUG_TYPE "dist-record-signature"

namespace mlir::dist {
#define GEN_PASS_DEF_RECORDSIGNATUREPASS
#include "dist/Codegen/Passes.h.inc"
} // namespace mlir::dist

using namespace mlir;
using namespace mlir::dist;

static std::optional<unsigned> onnxDType(Type t) {
  if (t.isF32())
    return 1;
  if (t.isF64())
    return 11;
  if (t.isF16())
    return 10;
  if (t.isBF16())
    return 16;
  if (auto i = dyn_cast<IntegerType>(t)) {
    bool u = i.isUnsigned();
    switch (i.getWidth()) {
    case 1:
      return 9;
    case 8:
      return u ? 2 : 3;
    case 16:
      return u ? 4 : 5;
    case 32:
      return u ? 12 : 6;
    case 64:
      return u ? 13 : 7;
    }
  }
  return std::nullopt;
}

FailureOr<std::string> dist::getEntryName(ModuleOp module) {
  func::FuncOp entry;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.isExternal() || !f.isPublic() || f->hasAttr("dist.train_step") ||
        f->hasAttr(kPipelineActionAttr))
      continue;
    if (entry) {
      module.emitError("the module has more than one public function");
      return failure();
    }
    entry = f;
  }
  if (!entry) {
    module.emitError("the module has no public function to compile");
    return failure();
  }
  return entry.getSymName().str();
}

std::string dist::getTrainStepName(ModuleOp module) {
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal() && f->hasAttr("dist.train_step"))
      return f.getSymName().str();
  return "";
}

static void readTrainConfig(DictionaryAttr cfg, TrainSignature &train);
template <typename DescribeFunc>
static FailureOr<ModelSignature>
getPipelineSignature(ModuleOp module, DictionaryAttr attr, ModelSignature sig,
                     DescribeFunc &describeFunc);

FailureOr<ModelSignature> dist::getModelSignature(ModuleOp module) {
  ModelSignature sig;
  if (std::optional<MeshSpec> mesh = getModuleMesh(module)) {
    sig.meshAxes = mesh->axes;
    sig.meshShape = mesh->shape;
  }
  auto entryName = getEntryName(module);
  if (failed(entryName))
    return failure();
  auto entry = module.lookupSymbol<func::FuncOp>(*entryName);
  auto describe = [&](Location loc, StringRef name,
                      Type type) -> FailureOr<TensorSignature> {
    auto t = dyn_cast<RankedTensorType>(type);
    if (!t) {
      emitError(loc) << "'" << name << "' has type " << type
                     << ", which is not supported by codegen";
      return failure();
    }
    auto code = onnxDType(t.getElementType());
    if (!code) {
      emitError(loc) << "'" << name << "' has element type "
                     << t.getElementType()
                     << ", which is not supported by codegen";
      return failure();
    }
    TensorSignature s;
    s.name = name.str();
    s.dtype = *code;
    for (int64_t d : t.getShape())
      s.dims.push_back(ShapedType::isDynamic(d) ? -1 : d);
    return s;
  };
  for (auto p : module.getOps<dist::ParamOp>()) {
    auto s = describe(p.getLoc(), p.getSymName(), p.getType());
    if (failed(s))
      return failure();
    if (auto shard = p->getAttrOfType<DictionaryAttr>(kParamShardAttr)) {
      auto axis = shard.getAs<IntegerAttr>("axis");
      auto dim = shard.getAs<IntegerAttr>("dim");
      auto blocks = shard.getAs<IntegerAttr>("blocks");
      if (!axis || !dim || !blocks || dim.getInt() < 0 ||
          dim.getInt() >= static_cast<int64_t>(s->dims.size()) ||
          blocks.getInt() < 1 || axis.getInt() < 0)
        return p.emitError("malformed ") << kParamShardAttr << " " << shard;
      s->shardAxis = axis.getInt();
      s->shardDim = dim.getInt();
      s->shardBlocks = blocks.getInt();
    }
    sig.params.push_back(*s);
  }
  auto nameOf = [](DictionaryAttr attrs, StringRef prefix, unsigned i) {
    if (attrs)
      if (auto n = attrs.getAs<StringAttr>(DistDialect::getValueNameAttrName()))
        return n.str();
    return (prefix + Twine(i)).str();
  };
  // Inputs (all but `dropTrailing` trailing arguments) and outputs of `f`.
  auto describeFunc = [&](func::FuncOp f, unsigned dropTrailing,
                          std::vector<TensorSignature> &ins,
                          std::vector<TensorSignature> &outs) {
    auto type = f.getFunctionType();
    for (unsigned i = 0; i + dropTrailing < type.getNumInputs(); ++i) {
      auto s = describe(f.getLoc(), nameOf(f.getArgAttrDict(i), "input", i),
                        type.getInput(i));
      if (failed(s))
        return failure();
      if (auto names = f.getArgAttrOfType<ArrayAttr>(
              i, DistDialect::getDimNamesAttrName());
          names && names.size() == s->dims.size())
        for (Attribute n : names)
          s->dimNames.push_back(isa<StringAttr>(n) ? cast<StringAttr>(n).str()
                                                   : "");
      ins.push_back(*s);
    }
    for (unsigned i = 0; i < type.getNumResults(); ++i) {
      auto s = describe(f.getLoc(), nameOf(f.getResultAttrDict(i), "output", i),
                        type.getResult(i));
      if (failed(s))
        return failure();
      outs.push_back(*s);
    }
    return success();
  };
  if (failed(describeFunc(entry, 0, sig.inputs, sig.outputs)))
    return failure();
  if (auto split = entry->getAttrOfType<IntegerAttr>(kInferBatchSplitAttr)) {
    // The function runs on a dp rank's rows; callers pass the whole batch.
    sig.inferBatchSplit = split.getInt();
    for (auto *group : {&sig.inputs, &sig.outputs})
      for (TensorSignature &t : *group) {
        if (t.dims.empty())
          return entry.emitError("an inference function split over dp has "
                                 "a scalar input or output '")
                 << t.name << "'";
        if (t.dims[0] >= 0)
          t.dims[0] *= sig.inferBatchSplit;
      }
  } else if (auto whole =
                 entry->getAttrOfType<StringAttr>(kInferBatchWholeAttr)) {
    sig.batchWhole = whole.str();
  }
  // Lookups on the parameter server: the entry's arguments the runtime
  // fills with pulled rows (the step's have the same names).
  for (unsigned i = 0; i < entry.getNumArguments(); ++i) {
    auto rows = entry.getArgAttrOfType<DictionaryAttr>(i, kPsRowsAttr);
    if (!rows)
      continue;
    auto ids = rows.getAs<StringAttr>("ids");
    auto table = rows.getAs<StringAttr>("table");
    auto cols = rows.getAs<DenseI64ArrayAttr>("cols");
    auto param =
        table ? module.lookupSymbol<dist::ParamOp>(table.getValue()) : nullptr;
    if (!ids || !cols || !param || !param->hasAttr(kPsTableAttr))
      return entry.emitError("malformed ") << kPsRowsAttr << " " << rows,
             failure();
    PsSignature &ps = sig.ps ? *sig.ps : sig.ps.emplace();
    PsLookupSignature l;
    l.rows = sig.inputs[i].name;
    l.ids = ids.str();
    l.cols.assign(cols.asArrayRef().begin(), cols.asArrayRef().end());
    for (auto [k, p] : llvm::enumerate(module.getOps<dist::ParamOp>()))
      if (p == param)
        l.table = static_cast<unsigned>(k);
    ps.lookups.push_back(std::move(l));
  }
  if (sig.ps)
    if (auto cfg = module->getAttrOfType<DictionaryAttr>(kPsOptimizerAttr)) {
      if (auto a = cfg.getAs<StringAttr>("optimizer"))
        sig.ps->optimizer = a.str();
      if (auto a = cfg.getAs<StringAttr>("init"))
        sig.ps->init = a.str();
      for (auto [key, field] : {std::pair{"lr", &sig.ps->lr},
                                {"beta1", &sig.ps->beta1},
                                {"beta2", &sig.ps->beta2},
                                {"eps", &sig.ps->eps},
                                {"init_a", &sig.ps->initA},
                                {"init_b", &sig.ps->initB}})
        if (auto a = cfg.getAs<FloatAttr>(key))
          *field = a.getValueAsDouble();
    }
  if (auto pipeline = module->getAttrOfType<DictionaryAttr>("dist.pipeline")) {
    if (sig.ps)
      return module.emitError("tables on the parameter server (--ps-tables) "
                              "with pipeline stages are not supported"),
             failure();
    return getPipelineSignature(module, pipeline, std::move(sig), describeFunc);
  }
  std::string trainName = getTrainStepName(module);
  if (trainName.empty())
    return sig;
  auto step = module.lookupSymbol<func::FuncOp>(trainName);
  TrainSignature train;
  // The step's trailing arguments are the learning rate and step number.
  if (step.getNumArguments() < 2 || step.getNumResults() < 1) {
    step.emitError("a training step takes lr and step scalars and returns "
                   "the loss");
    return failure();
  }
  if (failed(describeFunc(step, 2, train.inputs, train.outputs)))
    return failure();
  for (auto p : module.getOps<dist::ParamOp>())
    train.paramRoles.push_back(p->hasAttr(kPsTableAttr) ? DIST_RT_PARAM_PS
                               : p.getState()           ? DIST_RT_PARAM_STATE
                               : p.getTrainable()       ? DIST_RT_PARAM_TRAINED
                                                        : DIST_RT_PARAM_FROZEN);
  readTrainConfig(step->getAttrOfType<DictionaryAttr>("dist.train"), train);
  sig.train = std::move(train);
  return sig;
}

static void readTrainConfig(DictionaryAttr cfg, TrainSignature &train) {
  if (cfg) {
    if (auto a = cfg.getAs<StringAttr>("optimizer"))
      train.optimizer = a.str();
    if (auto a = cfg.getAs<StringAttr>("loss"))
      train.loss = a.str();
    if (auto a = cfg.getAs<FloatAttr>("lr"))
      train.lr = a.getValueAsDouble();
    if (auto a = cfg.getAs<StringAttr>("lr_schedule"))
      train.lrSchedule = a.getValue() == "cosine" ? DIST_RT_LR_COSINE
                         : a.getValue() == "warmup-linear"
                             ? DIST_RT_LR_WARMUP_LINEAR
                             : DIST_RT_LR_CONSTANT;
    if (auto a = cfg.getAs<IntegerAttr>("warmup_steps"))
      train.warmupSteps = a.getInt();
    if (auto a = cfg.getAs<IntegerAttr>("label_classes"))
      train.labelClasses = a.getInt();
    if (auto a = cfg.getAs<IntegerAttr>("ignore_index"))
      train.ignoreIndex = a.getInt();
  }
}

/// The action code (DIST_RT_PIPELINE_*) of a stage function's action name.
static std::optional<unsigned> pipelineActionCode(StringRef action) {
  return llvm::StringSwitch<std::optional<unsigned>>(action)
      .Case("forward", DIST_RT_PIPELINE_FORWARD)
      .Case("backward", DIST_RT_PIPELINE_BACKWARD)
      .Case("backward_input", DIST_RT_PIPELINE_BACKWARD_INPUT)
      .Case("backward_weight", DIST_RT_PIPELINE_BACKWARD_WEIGHT)
      .Case("update", DIST_RT_PIPELINE_UPDATE)
      .Case("sync", DIST_RT_PIPELINE_SYNC)
      .Case("norm", DIST_RT_PIPELINE_NORM)
      .Default(std::nullopt);
}

template <typename DescribeFunc>
static FailureOr<ModelSignature>
getPipelineSignature(ModuleOp module, DictionaryAttr attr, ModelSignature sig,
                     DescribeFunc &describeFunc) {
  std::optional<PipelineInfo> info = readPipelineAttr(attr);
  if (!info)
    return module.emitError("malformed dist.pipeline ") << attr, failure();
  PipelineSignature pp;
  pp.stages = info->stages;
  pp.microBatches = info->microBatches;
  pp.schedule = static_cast<unsigned>(info->schedule);
  TrainSignature train;
  llvm::StringMap<int64_t> writer;
  for (auto f : module.getOps<func::FuncOp>()) {
    auto action = f->getAttrOfType<DictionaryAttr>(kPipelineActionAttr);
    if (!action)
      continue;
    auto stage = action.getAs<IntegerAttr>("stage");
    auto name = action.getAs<StringAttr>("action");
    std::optional<unsigned> code =
        name ? pipelineActionCode(name.getValue()) : std::nullopt;
    if (!stage || !code || stage.getInt() < 0 || stage.getInt() >= pp.stages)
      return f.emitError("malformed ") << kPipelineActionAttr << " " << action,
             failure();
    PipelineFunctionSignature fn;
    fn.funcName = f.getSymName().str();
    fn.stage = static_cast<unsigned>(stage.getInt());
    fn.action = *code;
    if (failed(describeFunc(f, 0, fn.inputs, fn.outputs)))
      return failure();
    // The step's data inputs: every input a stage function reads that is
    // neither a scalar of the step, nor kept between actions, nor the
    // gradient norm the runtime sums over the stages.
    for (const TensorSignature &t : fn.inputs) {
      StringRef n = t.name;
      if (n == "lr" || n == "step" || n.starts_with("stash.") ||
          n == "grad_norm.total")
        continue;
      if (llvm::none_of(train.inputs, [&](const TensorSignature &in) {
            return in.name == t.name;
          }))
        train.inputs.push_back(t);
    }
    f.walk([&](dist::SetParamOp set) { writer[set.getName()] = fn.stage; });
    pp.functions.push_back(std::move(fn));
  }
  // The data loader reads the model's inputs at the whole batch.
  for (TensorSignature &t : train.inputs)
    if (!t.dims.empty() && t.dims[0] >= 0)
      t.dims[0] *= pp.microBatches;
  TensorSignature loss;
  loss.name = "loss";
  loss.dtype = 1;
  train.outputs.push_back(loss);
  for (auto p : module.getOps<dist::ParamOp>()) {
    train.paramRoles.push_back(p.getState()       ? DIST_RT_PARAM_STATE
                               : p.getTrainable() ? DIST_RT_PARAM_TRAINED
                                                  : DIST_RT_PARAM_FROZEN);
    auto it = writer.find(p.getSymName());
    pp.paramStages.push_back(it == writer.end() ? -1 : it->second);
  }
  readTrainConfig(attr.getAs<DictionaryAttr>("train"), train);
  sig.train = std::move(train);
  sig.pipeline = std::move(pp);
  return sig;
}

//===----------------------------------------------------------------------===//
// dist.signature
//===----------------------------------------------------------------------===//

namespace {
/// {name, dtype, dims[, dim_names][, shard = [axis, dim, blocks]]}
DictionaryAttr tensorToAttr(Builder &b, const TensorSignature &t) {
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("name", b.getStringAttr(t.name)),
      b.getNamedAttr("dtype", b.getI64IntegerAttr(t.dtype)),
      b.getNamedAttr("dims", b.getDenseI64ArrayAttr(t.dims))};
  if (!t.dimNames.empty()) {
    SmallVector<StringRef> names(t.dimNames.begin(), t.dimNames.end());
    entries.push_back(b.getNamedAttr("dim_names", b.getStrArrayAttr(names)));
  }
  if (t.shardAxis >= 0)
    entries.push_back(b.getNamedAttr(
        "shard",
        b.getDenseI64ArrayAttr({t.shardAxis, t.shardDim, t.shardBlocks})));
  return b.getDictionaryAttr(entries);
}

ArrayAttr tensorsToAttr(Builder &b, const std::vector<TensorSignature> &ts) {
  SmallVector<Attribute> items;
  for (const TensorSignature &t : ts)
    items.push_back(tensorToAttr(b, t));
  return b.getArrayAttr(items);
}

std::optional<TensorSignature> tensorFromAttr(Attribute attr) {
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict)
    return std::nullopt;
  auto name = dict.getAs<StringAttr>("name");
  auto dtype = dict.getAs<IntegerAttr>("dtype");
  auto dims = dict.getAs<DenseI64ArrayAttr>("dims");
  if (!name || !dtype || !dims)
    return std::nullopt;
  TensorSignature t;
  t.name = name.str();
  t.dtype = static_cast<unsigned>(dtype.getInt());
  t.dims.assign(dims.asArrayRef().begin(), dims.asArrayRef().end());
  if (auto names = dict.getAs<ArrayAttr>("dim_names"))
    for (Attribute n : names) {
      auto s = dyn_cast<StringAttr>(n);
      if (!s)
        return std::nullopt;
      t.dimNames.push_back(s.str());
    }
  if (auto shard = dict.getAs<DenseI64ArrayAttr>("shard")) {
    if (shard.size() != 3)
      return std::nullopt;
    t.shardAxis = shard[0];
    t.shardDim = shard[1];
    t.shardBlocks = shard[2];
  }
  return t;
}

bool tensorsFromAttr(Attribute attr, std::vector<TensorSignature> &out) {
  auto array = dyn_cast_or_null<ArrayAttr>(attr);
  if (!array)
    return false;
  for (Attribute a : array) {
    std::optional<TensorSignature> t = tensorFromAttr(a);
    if (!t)
      return false;
    out.push_back(std::move(*t));
  }
  return true;
}
} // namespace

DictionaryAttr dist::signatureToAttr(MLIRContext *ctx,
                                     const ModelSignature &sig) {
  Builder b(ctx);
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("params", tensorsToAttr(b, sig.params)),
      b.getNamedAttr("inputs", tensorsToAttr(b, sig.inputs)),
      b.getNamedAttr("outputs", tensorsToAttr(b, sig.outputs))};
  if (!sig.meshAxes.empty()) {
    SmallVector<StringRef> axes(sig.meshAxes.begin(), sig.meshAxes.end());
    entries.push_back(b.getNamedAttr("mesh_axes", b.getStrArrayAttr(axes)));
    entries.push_back(
        b.getNamedAttr("mesh_shape", b.getDenseI64ArrayAttr(sig.meshShape)));
  }
  if (sig.inferBatchSplit > 0)
    entries.push_back(b.getNamedAttr("infer_batch_split",
                                     b.getI64IntegerAttr(sig.inferBatchSplit)));
  if (!sig.batchWhole.empty())
    entries.push_back(
        b.getNamedAttr("batch_whole", b.getStringAttr(sig.batchWhole)));
  if (!sig.entrySymbol.empty())
    entries.push_back(
        b.getNamedAttr("entry_symbol", b.getStringAttr(sig.entrySymbol)));
  if (!sig.trainSymbol.empty())
    entries.push_back(
        b.getNamedAttr("train_symbol", b.getStringAttr(sig.trainSymbol)));
  if (!sig.device.empty())
    entries.push_back(b.getNamedAttr("device", b.getStringAttr(sig.device)));
  if (!sig.precision.empty())
    entries.push_back(
        b.getNamedAttr("precision", b.getStringAttr(sig.precision)));
  if (sig.pipeline) {
    const PipelineSignature &pp = *sig.pipeline;
    SmallVector<Attribute> fns;
    for (const PipelineFunctionSignature &fn : pp.functions)
      fns.push_back(b.getDictionaryAttr({
          b.getNamedAttr("func", b.getStringAttr(fn.funcName)),
          b.getNamedAttr("symbol", b.getStringAttr(fn.symbol)),
          b.getNamedAttr("stage", b.getI64IntegerAttr(fn.stage)),
          b.getNamedAttr("action", b.getI64IntegerAttr(fn.action)),
          b.getNamedAttr("inputs", tensorsToAttr(b, fn.inputs)),
          b.getNamedAttr("outputs", tensorsToAttr(b, fn.outputs)),
      }));
    entries.push_back(b.getNamedAttr(
        "pipeline",
        b.getDictionaryAttr({
            b.getNamedAttr("stages", b.getI64IntegerAttr(pp.stages)),
            b.getNamedAttr("micro_batches",
                           b.getI64IntegerAttr(pp.microBatches)),
            b.getNamedAttr("schedule", b.getI64IntegerAttr(pp.schedule)),
            b.getNamedAttr("param_stages",
                           b.getDenseI64ArrayAttr(pp.paramStages)),
            b.getNamedAttr("functions", b.getArrayAttr(fns)),
        })));
  }
  if (sig.ps) {
    SmallVector<Attribute> lookups;
    for (const PsLookupSignature &l : sig.ps->lookups)
      lookups.push_back(b.getDictionaryAttr({
          b.getNamedAttr("rows", b.getStringAttr(l.rows)),
          b.getNamedAttr("ids", b.getStringAttr(l.ids)),
          b.getNamedAttr("table", b.getI64IntegerAttr(l.table)),
          b.getNamedAttr("cols", b.getDenseI64ArrayAttr(l.cols)),
      }));
    entries.push_back(b.getNamedAttr(
        "ps",
        b.getDictionaryAttr({
            b.getNamedAttr("lookups", b.getArrayAttr(lookups)),
            b.getNamedAttr("optimizer", b.getStringAttr(sig.ps->optimizer)),
            b.getNamedAttr("lr", b.getF64FloatAttr(sig.ps->lr)),
            b.getNamedAttr("beta1", b.getF64FloatAttr(sig.ps->beta1)),
            b.getNamedAttr("beta2", b.getF64FloatAttr(sig.ps->beta2)),
            b.getNamedAttr("eps", b.getF64FloatAttr(sig.ps->eps)),
            b.getNamedAttr("init", b.getStringAttr(sig.ps->init)),
            b.getNamedAttr("init_a", b.getF64FloatAttr(sig.ps->initA)),
            b.getNamedAttr("init_b", b.getF64FloatAttr(sig.ps->initB)),
        })));
  }
  if (sig.train) {
    const TrainSignature &t = *sig.train;
    SmallVector<int64_t> roles(t.paramRoles.begin(), t.paramRoles.end());
    entries.push_back(b.getNamedAttr(
        "train",
        b.getDictionaryAttr({
            b.getNamedAttr("inputs", tensorsToAttr(b, t.inputs)),
            b.getNamedAttr("outputs", tensorsToAttr(b, t.outputs)),
            b.getNamedAttr("param_roles", b.getDenseI64ArrayAttr(roles)),
            b.getNamedAttr("optimizer", b.getStringAttr(t.optimizer)),
            b.getNamedAttr("loss", b.getStringAttr(t.loss)),
            b.getNamedAttr("lr", b.getF64FloatAttr(t.lr)),
            b.getNamedAttr("lr_schedule", b.getI64IntegerAttr(t.lrSchedule)),
            b.getNamedAttr("warmup_steps", b.getI64IntegerAttr(t.warmupSteps)),
            b.getNamedAttr("label_classes",
                           b.getI64IntegerAttr(t.labelClasses)),
            b.getNamedAttr("ignore_index", b.getI64IntegerAttr(t.ignoreIndex)),
        })));
  }
  return b.getDictionaryAttr(entries);
}

FailureOr<ModelSignature> dist::getRecordedSignature(ModuleOp module) {
  auto dict = module->getAttrOfType<DictionaryAttr>(kSignatureAttr);
  if (!dict)
    return module.emitError("the module has no '")
               << kSignatureAttr
               << "' attribute (dist-record-signature adds it before "
                  "lowering)",
           failure();
  auto malformed = [&]() {
    return module.emitError("malformed '") << kSignatureAttr << "' attribute",
           failure();
  };
  ModelSignature sig;
  if (!tensorsFromAttr(dict.get("params"), sig.params) ||
      !tensorsFromAttr(dict.get("inputs"), sig.inputs) ||
      !tensorsFromAttr(dict.get("outputs"), sig.outputs))
    return malformed();
  if (auto axes = dict.getAs<ArrayAttr>("mesh_axes")) {
    auto shape = dict.getAs<DenseI64ArrayAttr>("mesh_shape");
    if (!shape || shape.size() != static_cast<int64_t>(axes.size()))
      return malformed();
    for (Attribute a : axes) {
      auto s = dyn_cast<StringAttr>(a);
      if (!s)
        return malformed();
      sig.meshAxes.push_back(s.str());
    }
    sig.meshShape.assign(shape.asArrayRef().begin(), shape.asArrayRef().end());
  }
  if (auto split = dict.getAs<IntegerAttr>("infer_batch_split"))
    sig.inferBatchSplit = split.getInt();
  if (auto whole = dict.getAs<StringAttr>("batch_whole"))
    sig.batchWhole = whole.str();
  if (auto symbol = dict.getAs<StringAttr>("entry_symbol"))
    sig.entrySymbol = symbol.str();
  if (auto symbol = dict.getAs<StringAttr>("train_symbol"))
    sig.trainSymbol = symbol.str();
  if (auto device = dict.getAs<StringAttr>("device"))
    sig.device = device.str();
  if (auto precision = dict.getAs<StringAttr>("precision"))
    sig.precision = precision.str();
  if (auto pipeline = dict.getAs<DictionaryAttr>("pipeline")) {
    PipelineSignature pp;
    auto stages = pipeline.getAs<IntegerAttr>("stages");
    auto micro = pipeline.getAs<IntegerAttr>("micro_batches");
    auto schedule = pipeline.getAs<IntegerAttr>("schedule");
    auto paramStages = pipeline.getAs<DenseI64ArrayAttr>("param_stages");
    auto fns = pipeline.getAs<ArrayAttr>("functions");
    if (!stages || !micro || !schedule || !paramStages || !fns)
      return malformed();
    pp.stages = stages.getInt();
    pp.microBatches = micro.getInt();
    pp.schedule = static_cast<unsigned>(schedule.getInt());
    pp.paramStages.assign(paramStages.asArrayRef().begin(),
                          paramStages.asArrayRef().end());
    for (Attribute a : fns) {
      auto fd = dyn_cast<DictionaryAttr>(a);
      if (!fd)
        return malformed();
      PipelineFunctionSignature fn;
      auto func = fd.getAs<StringAttr>("func");
      auto symbol = fd.getAs<StringAttr>("symbol");
      auto stage = fd.getAs<IntegerAttr>("stage");
      auto action = fd.getAs<IntegerAttr>("action");
      if (!func || !symbol || !stage || !action ||
          !tensorsFromAttr(fd.get("inputs"), fn.inputs) ||
          !tensorsFromAttr(fd.get("outputs"), fn.outputs))
        return malformed();
      fn.funcName = func.str();
      fn.symbol = symbol.str();
      fn.stage = static_cast<unsigned>(stage.getInt());
      fn.action = static_cast<unsigned>(action.getInt());
      pp.functions.push_back(std::move(fn));
    }
    sig.pipeline = std::move(pp);
  }
  if (auto ps = dict.getAs<DictionaryAttr>("ps")) {
    PsSignature p;
    auto lookups = ps.getAs<ArrayAttr>("lookups");
    auto optimizer = ps.getAs<StringAttr>("optimizer");
    auto init = ps.getAs<StringAttr>("init");
    if (!lookups || !optimizer || !init)
      return malformed();
    p.optimizer = optimizer.str();
    p.init = init.str();
    for (auto [key, field] : {std::pair{"lr", &p.lr},
                              {"beta1", &p.beta1},
                              {"beta2", &p.beta2},
                              {"eps", &p.eps},
                              {"init_a", &p.initA},
                              {"init_b", &p.initB}}) {
      auto a = ps.getAs<FloatAttr>(key);
      if (!a)
        return malformed();
      *field = a.getValueAsDouble();
    }
    for (Attribute a : lookups) {
      auto d = dyn_cast<DictionaryAttr>(a);
      auto rows = d ? d.getAs<StringAttr>("rows") : nullptr;
      auto ids = d ? d.getAs<StringAttr>("ids") : nullptr;
      auto table = d ? d.getAs<IntegerAttr>("table") : nullptr;
      auto cols = d ? d.getAs<DenseI64ArrayAttr>("cols") : nullptr;
      if (!rows || !ids || !table || !cols || table.getInt() < 0 ||
          table.getInt() >= static_cast<int64_t>(sig.params.size()))
        return malformed();
      PsLookupSignature l;
      l.rows = rows.str();
      l.ids = ids.str();
      l.table = static_cast<unsigned>(table.getInt());
      l.cols.assign(cols.asArrayRef().begin(), cols.asArrayRef().end());
      p.lookups.push_back(std::move(l));
    }
    sig.ps = std::move(p);
  }
  if (auto train = dict.getAs<DictionaryAttr>("train")) {
    TrainSignature t;
    auto roles = train.getAs<DenseI64ArrayAttr>("param_roles");
    auto optimizer = train.getAs<StringAttr>("optimizer");
    auto loss = train.getAs<StringAttr>("loss");
    auto lr = train.getAs<FloatAttr>("lr");
    auto schedule = train.getAs<IntegerAttr>("lr_schedule");
    auto warmup = train.getAs<IntegerAttr>("warmup_steps");
    auto classes = train.getAs<IntegerAttr>("label_classes");
    auto ignore = train.getAs<IntegerAttr>("ignore_index");
    if (!tensorsFromAttr(train.get("inputs"), t.inputs) ||
        !tensorsFromAttr(train.get("outputs"), t.outputs) || !roles ||
        !optimizer || !loss || !lr || !schedule || !warmup || !classes ||
        !ignore)
      return malformed();
    for (int64_t r : roles.asArrayRef())
      t.paramRoles.push_back(static_cast<uint8_t>(r));
    t.optimizer = optimizer.str();
    t.loss = loss.str();
    t.lr = lr.getValueAsDouble();
    t.lrSchedule = static_cast<unsigned>(schedule.getInt());
    t.warmupSteps = warmup.getInt();
    t.labelClasses = classes.getInt();
    t.ignoreIndex = ignore.getInt();
    sig.train = std::move(t);
  }
  return sig;
}

//===----------------------------------------------------------------------===//
// dist-record-signature
//===----------------------------------------------------------------------===//

namespace {
struct RecordSignaturePass
    : public dist::impl::RecordSignaturePassBase<RecordSignaturePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<ModelSignature> sig = getModelSignature(module);
    if (failed(sig))
      return signalPassFailure();
    sig->entrySymbol = entrySymbol;
    sig->device = device;
    sig->precision = precision;
    if (sig->train && !sig->pipeline)
      sig->trainSymbol = trainSymbol;
    if (sig->pipeline)
      for (auto [k, fn] : llvm::enumerate(sig->pipeline->functions))
        fn.symbol = (trainSymbol + "_pp" + Twine(k)).str();
    numParams += sig->params.size();
    numTensors += sig->inputs.size() + sig->outputs.size();
    module->setAttr(kSignatureAttr, signatureToAttr(&getContext(), *sig));
  }
};
} // namespace
