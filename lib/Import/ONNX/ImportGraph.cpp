//===- ImportGraph.cpp - ONNX model and graph import ----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The model-level steps of the ONNX importer: loading and parsing the model,
// checking its opset imports, typing graph inputs and outputs (tensors,
// sequences and optionals, `--input-shape` and `--input-value` applied),
// building `func.func @main` node by node, and finishing the module (the
// parameter file, the `dist.onnx` model information).
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "ModelLoader.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::detail;

static constexpr int64_t kDyn = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

LogicalResult Importer::load() {
  std::unique_ptr<llvm::MemoryBuffer> file;
  llvm::MemoryBufferRef contents;
  if (buffer) {
    contents = *buffer;
  } else {
    auto read = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
    if (!read)
      return error() << "cannot open model: " << read.getError().message();
    file = std::move(*read);
    contents = file->getMemBufferRef();
  }
  StringRef ext = llvm::sys::path::extension(path);
  bool text = ext == ".onnxtxt" || ext == ".onnxtext";
  std::string err = mlir::dist::detail::parseModel(
      contents.getBufferStart(), contents.getBufferSize(), text, model);
  if (!err.empty())
    return error() << err;
  if (!model.has_graph())
    return error() << "not a valid ONNX model (it has no graph)";
  return success();
}

LogicalResult Importer::checkOpsets() {
  bool haveDefault = false;
  for (const onnx::OperatorSetIdProto &set : model.opset_import()) {
    if (set.domain().empty() || set.domain() == "ai.onnx") {
      opset = set.version();
      haveDefault = true;
    }
  }
  if (!haveDefault)
    return error() << "model imports no version of the default ONNX opset";
  if (opset < 1 || opset > 21)
    return error() << "unsupported ONNX opset version " << opset
                   << " (supported: 1 to 21)";
  return success();
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

/// Type of a graph input/output from its ValueInfo (null when not a tensor).
static FailureOr<Type> onnxType(MLIRContext *ctx, const onnx::TypeProto &type,
                                std::string &why);

static FailureOr<Type> valueInfoType(MLIRContext *ctx,
                                     const onnx::ValueInfoProto &vi,
                                     std::string &why) {
  if (!vi.has_type()) {
    why = "has no type";
    return failure();
  }
  return onnxType(ctx, vi.type(), why);
}

/// Tensor, seq(tensor) and optional(tensor | seq) types.
static FailureOr<Type> onnxType(MLIRContext *ctx, const onnx::TypeProto &type,
                                std::string &why) {
  if (type.has_sequence_type()) {
    const onnx::TypeProto &elt = type.sequence_type().elem_type();
    FailureOr<Type> inner = onnxType(ctx, elt, why);
    if (failed(inner))
      return failure();
    auto tensor = dyn_cast<TensorType>(*inner);
    if (!tensor) {
      why = "is a sequence of non-tensors, which is not supported";
      return failure();
    }
    return Type(SequenceType::get(ctx, tensor));
  }
  if (type.has_optional_type()) {
    FailureOr<Type> inner =
        onnxType(ctx, type.optional_type().elem_type(), why);
    if (failed(inner))
      return failure();
    return Type(OptionalType::get(ctx, *inner));
  }
  if (!type.has_tensor_type()) {
    why = "is not a tensor, sequence or optional value (maps and sparse "
          "tensors are not supported)";
    return failure();
  }
  const auto &tt = type.tensor_type();
  Type elt = onnxElementType(ctx, tt.elem_type());
  if (!elt) {
    why = "has unsupported element type " + onnxTypeName(tt.elem_type());
    return failure();
  }
  if (!tt.has_shape())
    return Type(UnrankedTensorType::get(elt));
  SmallVector<int64_t> dims;
  for (const auto &d : tt.shape().dim())
    dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value()
                                                           : kDyn);
  return Type(RankedTensorType::get(dims, elt));
}

/// `declared` where it has static sizes that `inferred` (of the same rank
/// and element type) leaves dynamic, with `inferred`'s static sizes kept;
/// null when that adds nothing.
static Type moreStatic(Type declared, Type inferred) {
  auto d = dyn_cast<RankedTensorType>(declared);
  auto i = dyn_cast<RankedTensorType>(inferred);
  if (!d || !i || d.getRank() != i.getRank() ||
      d.getElementType() != i.getElementType())
    return {};
  SmallVector<int64_t> shape(i.getShape());
  bool gained = false;
  for (auto [k, x] : llvm::enumerate(shape))
    if (ShapedType::isDynamic(x) && !d.isDynamicDim(k)) {
      x = d.getDimSize(k);
      gained = true;
    }
  return gained ? RankedTensorType::get(shape, i.getElementType(),
                                        i.getEncoding())
                : Type();
}

/// Whether `op`'s output shape depends on the values of an operand that is
/// not a constant, in a way code generation checks as the program runs
/// (lib/Codegen/Host/RuntimeChecks.cpp and its callers): only such ops take
/// a declared shape. Elsewhere a declaration that disagrees with the data
/// (a batch fixed at export) would go unchecked.
static bool takesDeclaredShape(Operation *op) {
  auto runtime = [](Value v) {
    return v && !v.getDefiningOp<ConstantOp>();
  };
  // Split, the reductions, Squeeze and Unsqueeze check the shape-fixing
  // input, not the data's extents: those must be known.
  auto t = op->getNumOperands()
               ? dyn_cast<RankedTensorType>(op->getOperand(0).getType())
               : RankedTensorType();
  bool staticData = t && t.hasStaticShape();
  if (auto split = dyn_cast<SplitOp>(op))
    return staticData && runtime(split.getSplit());
  if (auto oneHot = dyn_cast<OneHotOp>(op))
    return runtime(oneHot.getDepth());
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
          ReduceSumSquareOp, ReduceL2Op, ReduceLogSumExpOp>(op))
    return staticData &&
           runtime(op->getNumOperands() > 1 ? op->getOperand(1) : Value());
  if (auto squeeze = dyn_cast<SqueezeOp>(op))
    return staticData && runtime(squeeze.getAxes());
  if (auto unsqueeze = dyn_cast<UnsqueezeOp>(op))
    return staticData && runtime(unsqueeze.getAxes());
  if (auto pad = dyn_cast<PadOp>(op))
    return runtime(pad.getPads()) || runtime(pad.getAxes());
  if (auto slice = dyn_cast<SliceOp>(op))
    return runtime(slice.getAxes()) || runtime(slice.getSteps());
  return false;
}

LogicalResult Importer::importGraph(ModuleOp module) {
  const onnx::GraphProto &graph = model.graph();
  for (const onnx::TensorProto &t : graph.initializer()) {
    if (t.name().empty())
      return error() << "initializer #" << initializers.size()
                     << " has no name";
    initializers[t.name()] = &t;
  }
  // Graph inputs, minus initializers (IR < 4 lists them as inputs too) and
  // inputs bound to constant values.
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  // Per argument, the ONNX name of each dimension left dynamic ("" for
  // none); empty when it has none.
  SmallVector<SmallVector<std::string>> argDimNames;
  llvm::StringSet<> inputNames;
  // Graph inputs that are tables without values (opts.declaredParams).
  SmallVector<std::pair<std::string, RankedTensorType>> declaredInputs;
  for (const onnx::ValueInfoProto &vi : graph.input()) {
    inputNames.insert(vi.name());
    if (initializers.count(vi.name()))
      continue;
    Location loc = NameLoc::get(builder.getStringAttr(vi.name()), fileLoc);
    if (auto it = opts.inputValues.find(vi.name());
        it != opts.inputValues.end()) {
      auto buffer = llvm::MemoryBuffer::getFile(it->second, false, false);
      if (!buffer)
        return error(loc) << "--input-value: cannot open '" << it->second
                          << "': " << buffer.getError().message();
      onnx::TensorProto &t = boundInputs[vi.name()];
      std::string err = mlir::dist::detail::parseTensor(
          (*buffer)->getBufferStart(), (*buffer)->getBufferSize(), t);
      if (!err.empty())
        return error(loc) << "--input-value '" << it->second << "': " << err;
      t.set_name(vi.name());
      continue;
    }
    std::string why;
    FailureOr<Type> type = valueInfoType(ctx, vi, why);
    if (failed(type))
      return error(loc) << "graph input '" << vi.name() << "' " << why;
    if (auto it = opts.inputShapes.find(vi.name());
        it != opts.inputShapes.end()) {
      const std::vector<int64_t> &shape = it->second;
      if (!isa<TensorType>(*type))
        return error(loc) << "--input-shape names input '" << vi.name()
                          << "', which is not a tensor but " << *type;
      if (auto ranked = dyn_cast<RankedTensorType>(*type)) {
        if (ranked.getRank() != static_cast<int64_t>(shape.size()))
          return error(loc) << "--input-shape gives input '" << vi.name()
                            << "' rank " << shape.size()
                            << ", the model declares rank " << ranked.getRank();
        for (auto [i, d] : llvm::enumerate(ranked.getShape()))
          if (!ShapedType::isDynamic(d) && !ShapedType::isDynamic(shape[i]) &&
              d != shape[i])
            return error(loc) << "--input-shape gives input '" << vi.name()
                              << "' size " << shape[i] << " in dimension " << i
                              << ", the model declares " << d;
      }
      int64_t numel = 1;
      for (int64_t d : shape)
        if (!ShapedType::isDynamic(d) &&
            __builtin_mul_overflow(numel, d, &numel))
          return error(loc) << "--input-shape gives input '" << vi.name()
                            << "' more elements than fit in 64 bits";
      *type = RankedTensorType::get(shape, getElementTypeOrSelf(*type));
    }
    if (opts.declaredParams.count(vi.name())) {
      // A table the parameter servers fill: a parameter of this shape.
      auto ranked = dyn_cast<RankedTensorType>(*type);
      if (!ranked || !ranked.hasStaticShape())
        return error(loc) << "graph input '" << vi.name() << "' has type "
                          << *type
                          << "; a table without values needs a static shape "
                             "(give it with --input-shape="
                          << vi.name() << "=ROWS,DIM)";
      declaredInputs.push_back({vi.name(), ranked});
      continue;
    }
    argTypes.push_back(*type);
    argNames.push_back(vi.name());
    SmallVector<std::string> dimNames;
    if (auto ranked = dyn_cast<RankedTensorType>(*type);
        ranked && vi.type().has_tensor_type() &&
        vi.type().tensor_type().has_shape() &&
        vi.type().tensor_type().shape().dim_size() == ranked.getRank()) {
      const auto &shape = vi.type().tensor_type().shape();
      bool any = false;
      for (int64_t d = 0; d < ranked.getRank(); ++d) {
        const auto &dim = shape.dim(static_cast<int>(d));
        std::string name = ranked.isDynamicDim(d) && dim.has_dim_param()
                               ? dim.dim_param()
                               : "";
        any |= !name.empty();
        dimNames.push_back(name);
      }
      if (!any)
        dimNames.clear();
    }
    argDimNames.push_back(std::move(dimNames));
  }
  for (const auto &entry : opts.inputShapes)
    if (!inputNames.count(entry.getKey()))
      return error() << "--input-shape names '" << entry.getKey().str()
                     << "', which is not a graph input";
  for (const auto &entry : opts.inputValues)
    if (!inputNames.count(entry.getKey()))
      return error() << "--input-value names '" << entry.getKey().str()
                     << "', which is not a graph input";

  builder.setInsertionPointToEnd(module.getBody());
  funcOp = func::FuncOp::create(builder, fileLoc, "main",
                                builder.getFunctionType(argTypes, {}));
  body = funcOp.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    funcOp.setArgAttr(i, DistDialect::getValueNameAttrName(),
                      builder.getStringAttr(name));
    if (!argDimNames[i].empty()) {
      SmallVector<Attribute> dims;
      for (const std::string &d : argDimNames[i])
        dims.push_back(builder.getStringAttr(d));
      funcOp.setArgAttr(i, DistDialect::getDimNamesAttrName(),
                        builder.getArrayAttr(dims));
    }
    values[name] = body->getArgument(i);
  }
  builder.setInsertionPointToStart(body);
  for (auto &[name, type] : declaredInputs) {
    Location loc = NameLoc::get(builder.getStringAttr(name), fileLoc);
    values[name] = declareParam(name, type, loc);
  }
  for (auto &entry : boundInputs) {
    Location loc = NameLoc::get(builder.getStringAttr(entry.getKey()), fileLoc);
    FailureOr<Value> v =
        materializeTensor(entry.getValue(), loc,
                          "--input-value '" + entry.getKey().str() + "'", true);
    if (failed(v))
      return failure();
    values[entry.getKey()] = *v;
  }

  for (const onnx::NodeProto &node : graph.node()) {
    if (failed(importNode(node, nodeCount)))
      return failure();
    ++nodeCount;
  }

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const onnx::ValueInfoProto &vi : graph.output()) {
    Location loc = NameLoc::get(builder.getStringAttr(vi.name()), fileLoc);
    if (!values.count(vi.name()) && !initializers.count(vi.name()))
      return error(loc) << "graph output '" << vi.name() << "' is not defined";
    FailureOr<Value> v = lookup(vi.name(), loc);
    if (failed(v))
      return failure();
    // The model's declared type must agree with what inference found.
    std::string why;
    FailureOr<Type> declared = valueInfoType(ctx, vi, why);
    if (vi.has_type() && failed(declared))
      return error(loc) << "graph output '" << vi.name() << "' " << why;
    if (succeeded(declared) &&
        !areCompatibleInferredTypes(*declared, v->getType()))
      return error(loc) << "graph output '" << vi.name()
                        << "': the model declares " << *declared
                        << " but its value has type " << v->getType();
    // Where the shape depends on the values of inputs fed at run time
    // (split sizes, reduction or unsqueeze axes, pads, a one-hot depth),
    // the declared shape is what the model promises: the op takes it, and
    // code generation checks at run time that the inputs agree.
    if (succeeded(declared))
      if (auto r = dyn_cast<OpResult>(*v);
          r && takesDeclaredShape(r.getOwner()))
        if (Type refined = moreStatic(*declared, r.getType()))
          r.setType(refined);
    results.push_back(*v);
    resultTypes.push_back(v->getType());
  }
  func::ReturnOp::create(builder, fileLoc, results);
  funcOp.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  for (auto [i, vi] : llvm::enumerate(graph.output()))
    funcOp.setResultAttr(i, DistDialect::getValueNameAttrName(),
                         builder.getStringAttr(vi.name()));

  // Remove ops left dead by folding.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (op.use_empty() && isMemoryEffectFree(&op) &&
        !op.hasTrait<OpTrait::IsTerminator>())
      op.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> Importer::run() {
  if (failed(load()) || failed(checkOpsets()))
    return nullptr;
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  moduleOp = *module;
  builder.setInsertionPointToEnd(module->getBody());
  if (failed(importGraph(*module))) {
    params.abort();
    return nullptr;
  }
  if (failed(mlir::verify(*module))) {
    params.abort();
    return nullptr;
  }
  if (params.isOpen()) {
    std::string err = pending ? params.finish() : params.commit();
    if (!err.empty()) {
      error() << err;
      return nullptr;
    }
    if (pending)
      *pending = std::make_unique<PendingParamFile>(params.getTempPath(),
                                                    params.getPath());
    module->getOperation()->setAttr(DistDialect::getParamFileAttrName(),
                                    builder.getStringAttr(opts.paramFile));
  }
  SmallVector<NamedAttribute> info{
      builder.getNamedAttr("opset", builder.getI64IntegerAttr(opset)),
      builder.getNamedAttr("ir_version",
                           builder.getI64IntegerAttr(model.ir_version())),
      builder.getNamedAttr("nodes", builder.getI64IntegerAttr(nodeCount))};
  if (!model.producer_name().empty())
    info.push_back(builder.getNamedAttr(
        "producer",
        builder.getStringAttr(
            StringRef(model.producer_name() + " " + model.producer_version())
                .trim())));
  module->getOperation()->setAttr("dist.onnx", builder.getDictionaryAttr(info));
  if (opts.serializedModel)
    *opts.serializedModel = model.SerializeAsString();
  return module;
}
