//===- Values.cpp - tensors, values and op construction -------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// The value side of the ONNX importer: ONNX element types, reading tensor
// data (inline, typed fields or external files), materialising initializers
// as `dist.constant` or as `dist.param` whose bytes go to the parameter file,
// resolving names to values, evaluating constants and the small shape
// sub-graphs exporters write, and creating ops with inferred result types,
// verified and folded as they are built.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <limits>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::detail;

//===----------------------------------------------------------------------===//
// Element types and tensor bytes
//===----------------------------------------------------------------------===//

Type mlir::dist::detail::onnxElementType(MLIRContext *ctx, int32_t code) {
  switch (code) {
  case onnx::TensorProto::FLOAT:
    return Float32Type::get(ctx);
  case onnx::TensorProto::UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case onnx::TensorProto::INT8:
    return IntegerType::get(ctx, 8);
  case onnx::TensorProto::UINT16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case onnx::TensorProto::INT16:
    return IntegerType::get(ctx, 16);
  case onnx::TensorProto::INT32:
    return IntegerType::get(ctx, 32);
  case onnx::TensorProto::INT64:
    return IntegerType::get(ctx, 64);
  case onnx::TensorProto::BOOL:
    return IntegerType::get(ctx, 1);
  case onnx::TensorProto::FLOAT16:
    return Float16Type::get(ctx);
  case onnx::TensorProto::DOUBLE:
    return Float64Type::get(ctx);
  case onnx::TensorProto::UINT32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case onnx::TensorProto::UINT64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  case onnx::TensorProto::BFLOAT16:
    return BFloat16Type::get(ctx);
  case onnx::TensorProto::STRING:
    return StringType::get(ctx);
  default:
    return {};
  }
}

std::string mlir::dist::detail::onnxTypeName(int32_t code) {
  if (onnx::TensorProto_DataType_IsValid(code))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(code));
  return "type code " + std::to_string(code);
}

namespace {
/// Bytes per element in the parameter file / raw buffers (bool: one byte).
size_t elementBytes(int32_t code) {
  switch (code) {
  case onnx::TensorProto::BOOL:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
    return 1;
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    return 2;
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return 4;
  default:
    return 8;
  }
}

/// Little-endian copy of the typed repeated field of a TensorProto.
template <typename Src, typename Dst>
void packField(const google::protobuf::RepeatedField<Src> &field,
               std::string &out) {
  out.resize(field.size() * sizeof(Dst));
  char *p = out.data();
  for (Src v : field) {
    Dst d = static_cast<Dst>(v);
    std::memcpy(p, &d, sizeof(Dst));
    p += sizeof(Dst);
  }
}
} // namespace

//===----------------------------------------------------------------------===//
// Tensors and initializers
//===----------------------------------------------------------------------===//

FailureOr<RankedTensorType> Importer::tensorType(const onnx::TensorProto &t,
                                                 Location loc, StringRef what) {
  Type elt = onnxElementType(ctx, t.data_type());
  if (!elt)
    return error(loc) << what << " has unsupported data type "
                      << onnxTypeName(t.data_type());
  SmallVector<int64_t> dims;
  for (int64_t d : t.dims()) {
    if (d < 0)
      return error(loc) << what << " has a negative dimension " << d;
    dims.push_back(d);
  }
  return RankedTensorType::get(dims, elt);
}

LogicalResult Importer::readTensorData(const onnx::TensorProto &t, Location loc,
                                       StringRef what, TensorData &out) {
  // Element count with overflow checks.
  uint64_t numel = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d && numel > std::numeric_limits<uint64_t>::max() /
                                   static_cast<uint64_t>(d)))
      return error(loc) << what << " has an invalid shape";
    numel *= static_cast<uint64_t>(d);
  }
  size_t eltBytes = elementBytes(t.data_type());
  uint64_t expected = numel * eltBytes;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0, length = 0;
    bool haveLength = false;
    for (const auto &kv : t.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset" || kv.key() == "length") {
        unsigned long long v;
        if (StringRef(kv.value()).getAsInteger(10, v))
          return error(loc) << what << " has an invalid external-data "
                            << kv.key() << " '" << kv.value() << "'";
        (kv.key() == "offset" ? offset : length) = v;
        haveLength |= kv.key() == "length";
      }
    }
    if (location.empty())
      return error(loc) << what << " is external data without a location";
    if (llvm::sys::path::is_absolute(location) ||
        llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location),
                                            llvm::sys::path::end(location)),
                           ".."))
      return error(loc) << what << ": external data location '" << location
                        << "' must be a relative path inside the model's "
                           "directory";
    SmallString<256> file(llvm::sys::path::parent_path(path));
    llvm::sys::path::append(file, location);
    if (!haveLength)
      length = expected;
    if (length != expected)
      return error(loc) << what << ": external data length " << length
                        << " does not match its shape (" << expected
                        << " bytes)";
    uint64_t fileSize;
    if (std::error_code ec = llvm::sys::fs::file_size(file, fileSize))
      return error(loc) << what << ": cannot open external data '" << file
                        << "': " << ec.message();
    if (offset > fileSize || length > fileSize - offset)
      return error(loc) << what << ": external data [" << offset << ", "
                        << offset + length << ") lies outside '" << file
                        << "' (" << fileSize << " bytes)";
    if (length == 0) {
      out.data = "";
      out.size = 0;
      return success();
    }
    auto slice = llvm::MemoryBuffer::getFileSlice(file, length, offset);
    if (!slice)
      return error(loc) << what << ": cannot read external data '" << file
                        << "': " << slice.getError().message();
    out.mapped = std::move(*slice);
    out.data = out.mapped->getBufferStart();
    out.size = out.mapped->getBufferSize();
    return success();
  }
  if (t.has_raw_data()) {
    out.data = t.raw_data().data();
    out.size = t.raw_data().size();
  } else {
    switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      packField<float, float>(t.float_data(), out.owned);
      break;
    case onnx::TensorProto::DOUBLE:
      packField<double, double>(t.double_data(), out.owned);
      break;
    case onnx::TensorProto::INT64:
      packField<int64_t, int64_t>(t.int64_data(), out.owned);
      break;
    case onnx::TensorProto::UINT32:
      packField<uint64_t, uint32_t>(t.uint64_data(), out.owned);
      break;
    case onnx::TensorProto::UINT64:
      packField<uint64_t, uint64_t>(t.uint64_data(), out.owned);
      break;
    case onnx::TensorProto::INT32:
      packField<int32_t, int32_t>(t.int32_data(), out.owned);
      break;
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      packField<int32_t, uint16_t>(t.int32_data(), out.owned);
      break;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
      packField<int32_t, uint8_t>(t.int32_data(), out.owned);
      break;
    case onnx::TensorProto::BOOL:
      packField<int32_t, uint8_t>(t.int32_data(), out.owned);
      for (char &c : out.owned)
        c = c ? 1 : 0;
      break;
    default:
      return error(loc) << what << " has unsupported data type "
                        << onnxTypeName(t.data_type());
    }
    out.data = out.owned.data();
    out.size = out.owned.size();
  }
  if (out.size != expected)
    return error(loc) << what << " holds " << out.size
                      << " bytes of data, its shape needs " << expected;
  return success();
}

FailureOr<DenseElementsAttr>
Importer::tensorAttr(const onnx::TensorProto &t, Location loc, StringRef what) {
  FailureOr<RankedTensorType> type = tensorType(t, loc, what);
  if (failed(type))
    return failure();
  TensorData data;
  if (failed(readTensorData(t, loc, what, data)))
    return failure();
  if (type->getElementType().isInteger(1)) {
    SmallVector<bool> bits;
    for (char c : data.bytes())
      bits.push_back(c != 0);
    return DenseElementsAttr::get(*type, ArrayRef<bool>(bits));
  }
  bool splat = false;
  if (!DenseElementsAttr::isValidRawBuffer(*type, data.bytes(), splat))
    return error(loc) << what << " has malformed data";
  return DenseElementsAttr::getFromRawBuffer(*type, data.bytes());
}

FailureOr<Value> Importer::materializeTensor(const onnx::TensorProto &t,
                                             Location loc, StringRef what,
                                             bool mayInline,
                                             StringRef paramName) {
  FailureOr<RankedTensorType> type = tensorType(t, loc, what);
  if (failed(type))
    return failure();
  // A table whose rows the parameter servers create: its bytes are never
  // read (they may not even be there, as external data left behind).
  if (!t.name().empty() && opts.declaredParams.count(t.name()))
    return declareParam(t.name(), *type, loc);
  int64_t numel = type->getNumElements();
  bool isFloat = isa<FloatType>(type->getElementType());
  bool inlineIt =
      numel <= opts.maxInlineElements &&
      (mayInline || !isFloat || (numel <= 1 && !opts.floatScalarsAsParams));
  if (inlineIt) {
    FailureOr<DenseElementsAttr> attr = tensorAttr(t, loc, what);
    if (failed(attr))
      return failure();
    return ConstantOp::create(builder, loc, *type, *attr).getResult();
  }
  // A parameter: bytes to the file, a declaration in the module.
  // A parameter is named after the tensor, else after the value it defines.
  std::string name = !paramName.empty() ? paramName.str() : t.name();
  if (name.empty())
    return error(loc) << what << " has no name to store it under";
  if (!params.isOpen()) {
    if (opts.paramFile.empty())
      return error(loc) << what
                        << " needs a parameter file (pass --params-file)";
    std::string err = params.open(opts.paramFile);
    if (!err.empty())
      return error() << err;
  }
  TensorData data;
  if (failed(readTensorData(t, loc, what, data)))
    return failure();
  std::string err =
      params.add(name, t.data_type(), type->getShape(), data.bytes());
  if (!err.empty())
    return error(loc) << what << ": " << err;
  return declareParam(name, *type, loc);
}

Value Importer::declareParam(StringRef name, RankedTensorType type,
                             Location loc) {
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(funcOp);
    ParamOp::create(builder, loc, builder.getStringAttr(name),
                    TypeAttr::get(type), UnitAttr());
  }
  return GetParamOp::create(builder, loc, type,
                            FlatSymbolRefAttr::get(ctx, name))
      .getResult();
}

//===----------------------------------------------------------------------===//
// Names, constants and shape vectors
//===----------------------------------------------------------------------===//

FailureOr<Value> Importer::lookup(StringRef name, Location loc) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  auto init = initializers.find(name);
  if (init != initializers.end()) {
    FailureOr<Value> v = materializeTensor(
        *init->second, loc, "initializer '" + name.str() + "'", false);
    if (failed(v))
      return failure();
    values[name] = *v;
    return *v;
  }
  return error(loc) << "input '" << name
                    << "' is not produced by any node, graph input or "
                       "initializer";
}

DenseElementsAttr Importer::constantAttrOf(StringRef name, Location loc,
                                           StringRef what) {
  if (auto init = initializers.find(name); init != initializers.end()) {
    FailureOr<DenseElementsAttr> a = tensorAttr(*init->second, loc, what);
    return succeeded(a) ? *a : DenseElementsAttr();
  }
  if (auto it = values.find(name); it != values.end())
    if (auto c = it->second.getDefiningOp<ConstantOp>())
      return dyn_cast<DenseElementsAttr>(c.getValue());
  return {};
}

FailureOr<SmallVector<double>>
Importer::constantInput(StringRef name, Location loc, StringRef what) {
  if (!initializers.count(name) && !values.count(name))
    return error(loc) << "input '" << name
                      << "' is not produced by any node, graph input or "
                         "initializer";
  DenseElementsAttr attr = constantAttrOf(name, loc, what);
  if (!attr && initializers.count(name))
    return failure(); // tensorAttr said why.
  if (!attr)
    return error(loc) << what
                      << " must be a constant (an initializer or a "
                         "Constant node), not computed at run time";
  SmallVector<double> out;
  if (isa<FloatType>(attr.getElementType())) {
    for (const APFloat &f : attr.getValues<APFloat>())
      out.push_back(f.convertToDouble());
  } else if (attr.getElementType().isInteger()) {
    for (const APInt &i : attr.getValues<APInt>())
      out.push_back(static_cast<double>(i.getSExtValue()));
  } else {
    return error(loc) << what << " must hold numbers";
  }
  return out;
}

std::optional<SmallVector<Importer::ShapeEntry>>
Importer::evalShapeVector(StringRef name, int depth) {
  if (name.empty() || depth > 32)
    return std::nullopt;
  // Constants.
  DenseElementsAttr attr;
  {
    ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
    attr = constantAttrOf(name, fileLoc, "initializer");
  }
  if (attr) {
    if (!attr.getElementType().isInteger() ||
        cast<ShapedType>(attr.getType()).getRank() > 1)
      return std::nullopt;
    SmallVector<ShapeEntry> out;
    for (const APInt &i : attr.getValues<APInt>())
      out.push_back({i.getSExtValue(), Value(), -1});
    return out;
  }
  // The node that defines it.
  const onnx::NodeProto *def = nullptr;
  for (const onnx::NodeProto &n : model.graph().node())
    if (llvm::is_contained(n.output(), name.str()))
      def = &n;
  if (!def || def->input_size() == 0)
    return std::nullopt;
  StringRef op = def->op_type();
  auto constInts = [&](int i) -> std::optional<SmallVector<int64_t>> {
    if (i >= def->input_size() || def->input(i).empty())
      return SmallVector<int64_t>{};
    auto v = evalShapeVector(def->input(i), depth + 1);
    if (!v)
      return std::nullopt;
    SmallVector<int64_t> out;
    for (const ShapeEntry &e : *v) {
      if (!e.value)
        return std::nullopt;
      out.push_back(*e.value);
    }
    return out;
  };
  auto intAttrOf = [&](StringRef attrName) -> std::optional<int64_t> {
    for (const onnx::AttributeProto &a : def->attribute())
      if (a.name() == attrName)
        return a.i();
    return std::nullopt;
  };
  if (op == "Shape") {
    auto it = values.find(def->input(0));
    if (it == values.end())
      return std::nullopt;
    auto t = dyn_cast<RankedTensorType>(it->second.getType());
    if (!t)
      return std::nullopt;
    int64_t rank = t.getRank();
    int64_t start = intAttrOf("start").value_or(0);
    int64_t end = intAttrOf("end").value_or(rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    SmallVector<ShapeEntry> out;
    for (int64_t d = start; d < end; ++d) {
      if (ShapedType::isDynamic(t.getDimSize(d)))
        out.push_back({std::nullopt, it->second, d});
      else
        out.push_back({t.getDimSize(d), Value(), -1});
    }
    return out;
  }
  if (op == "Identity" || op == "Cast" || op == "Squeeze" || op == "Unsqueeze")
    return evalShapeVector(def->input(0), depth + 1);
  if (op == "Concat") {
    SmallVector<ShapeEntry> out;
    for (const std::string &in : def->input()) {
      auto v = evalShapeVector(in, depth + 1);
      if (!v)
        return std::nullopt;
      out.append(v->begin(), v->end());
    }
    return out;
  }
  auto data = evalShapeVector(def->input(0), depth + 1);
  if (!data)
    return std::nullopt;
  auto n = static_cast<int64_t>(data->size());
  if (op == "Gather") {
    auto idx = constInts(1);
    if (!idx || intAttrOf("axis").value_or(0) != 0)
      return std::nullopt;
    SmallVector<ShapeEntry> out;
    for (int64_t i : *idx) {
      if (i < -n || i >= n)
        return std::nullopt;
      out.push_back((*data)[i < 0 ? i + n : i]);
    }
    return out;
  }
  if (op == "Slice") {
    auto starts = constInts(1), ends = constInts(2), axes = constInts(3),
         steps = constInts(4);
    if (!starts || !ends || !axes || !steps || starts->size() != 1 ||
        ends->size() != 1 ||
        (axes->size() == 1 && (*axes)[0] != 0 && (*axes)[0] != -1) ||
        axes->size() > 1 || steps->size() > 1)
      return std::nullopt;
    int64_t step = steps->empty() ? 1 : (*steps)[0];
    if (step == 0)
      return std::nullopt;
    // ONNX's (numpy's) clamping of the bounds.
    auto bound = [&](int64_t v, bool isEnd) {
      if (v < 0)
        v += n;
      if (step > 0)
        return std::clamp<int64_t>(v, 0, n);
      return std::clamp<int64_t>(v, isEnd ? -1 : 0, n - 1);
    };
    int64_t b = bound((*starts)[0], false), e = bound((*ends)[0], true);
    SmallVector<ShapeEntry> out;
    for (int64_t i = b; step > 0 ? i < e : i > e; i += step)
      out.push_back((*data)[i]);
    return out;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Op construction
//===----------------------------------------------------------------------===//

Value Importer::constI64(ArrayRef<int64_t> data, Location loc, bool scalar) {
  auto type = RankedTensorType::get(
      scalar ? ArrayRef<int64_t>{} : ArrayRef<int64_t>{(int64_t)data.size()},
      builder.getI64Type());
  return ConstantOp::create(builder, loc, type,
                            DenseElementsAttr::get(type, data));
}

Value Importer::constScalar(Type elt, double value, Location loc) {
  auto type = RankedTensorType::get({}, elt);
  Attribute a;
  if (auto ft = dyn_cast<FloatType>(elt))
    a = FloatAttr::get(ft, value);
  else
    a = IntegerAttr::get(elt, static_cast<int64_t>(value));
  return ConstantOp::create(builder, loc, type,
                            DenseElementsAttr::get(type, a));
}

namespace {
template <unsigned N>
bool takesAtLeast(OperationName name) {
  return name.hasTrait<OpTrait::NOperands<N>::template Impl>() ||
         name.hasTrait<OpTrait::AtLeastNOperands<N>::template Impl>();
}
template <unsigned... Ns>
unsigned leastOperands(OperationName name,
                       std::integer_sequence<unsigned, Ns...>) {
  unsigned least = 0;
  ((takesAtLeast<Ns + 2>(name) ? (void)(least = Ns + 2) : (void)0), ...);
  return least;
}
} // namespace

unsigned Importer::minOperands(StringRef opName) {
  OperationName name(opName, ctx);
  if (name.hasTrait<OpTrait::OneOperand>() ||
      name.hasTrait<OpTrait::AtLeastNOperands<1>::Impl>())
    return 1;
  // ODS writes NOperands / AtLeastNOperands for two operands and more.
  return leastOperands(name, std::make_integer_sequence<unsigned, 7>());
}

FailureOr<SmallVector<Value>> Importer::create(StringRef opName, Location loc,
                                               ArrayRef<Value> operands,
                                               ArrayRef<NamedAttribute> attrs,
                                               unsigned numResults,
                                               ArrayRef<int32_t> segments) {
  // Inference reads the operands the op declares: a node short of them
  // (an ONNX input left empty) is refused before it.
  if (unsigned least = minOperands(opName); operands.size() < least)
    return error(loc) << opName << " takes at least " << least
                      << " operands, got " << operands.size();
  OperationState state(loc, opName);
  state.addOperands(operands);
  // Placeholder result types; inference replaces them below.
  state.addTypes(SmallVector<Type>(
      numResults, UnrankedTensorType::get(Float32Type::get(ctx))));
  Operation *op = builder.create(state);
  for (const NamedAttribute &a : attrs)
    op->setAttr(a.getName(), a.getValue());
  if (!segments.empty())
    op->setAttr("operandSegmentSizes", builder.getDenseI32ArrayAttr(segments));
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  SmallVector<Type> types;
  if (!infer || failed(infer.inferReturnTypes(
                    ctx, loc, op->getOperands(), op->getRawDictionaryAttrs(),
                    op->getPropertiesStorage(), op->getRegions(), types))) {
    op->erase();
    return failure();
  }
  if (types.size() != numResults) {
    op->erase();
    return error(loc) << "internal error: " << opName << " inferred "
                      << types.size() << " results, expected " << numResults;
  }
  for (auto [r, t] : llvm::zip(op->getResults(), types))
    r.setType(t);
  SmallVector<Value> results(op->getResults());
  // Invalid operand element types and the like: report at the node now.
  if (failed(mlir::verify(op, /*verifyRecursively=*/false))) {
    op->erase();
    return failure();
  }
  // Fold as we build so shape sub-graphs collapse.
  SmallVector<OpFoldResult> folded;
  if (succeeded(op->fold(folded)) && folded.size() == numResults) {
    SmallVector<Value> repl;
    for (auto [r, f] : llvm::zip(op->getResults(), folded)) {
      if (auto v = dyn_cast<Value>(f)) {
        repl.push_back(v);
        continue;
      }
      auto attr = dyn_cast<ElementsAttr>(cast<Attribute>(f));
      if (!attr || attr.getType() != r.getType()) {
        repl.clear();
        break;
      }
      repl.push_back(ConstantOp::create(builder, loc, r.getType(), attr));
    }
    if (repl.size() == numResults) {
      op->erase();
      return repl;
    }
    // Some results did not fold: keep the op; unused constants made above
    // are removed by the final clean-up.
  }
  return results;
}
