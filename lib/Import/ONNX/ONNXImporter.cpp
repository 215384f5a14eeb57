//===- ONNXImporter.cpp - ONNX model to dist IR ---------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Builds a module with one `func.func @main` from an ONNX graph. Each node
// becomes dist ops in the newest-opset form (older opsets' attributes are
// materialised as constant operands), result types come from the dialect's
// inference, and ops are folded as they are built so the shape sub-graphs
// exporters write collapse where their inputs are known. Initializers are
// materialised on first use: small ones as `dist.constant`, the rest as
// `dist.param` whose bytes go to the parameter file.
//
//===----------------------------------------------------------------------===//

#include "dist/Import/ONNX/ONNXImporter.h"

#include "ModelLoader.h"
#include "ParamWriter.h"
#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist_rt/param_format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace mlir::dist;

//===----------------------------------------------------------------------===//
// Option parsing
//===----------------------------------------------------------------------===//

std::string mlir::dist::parseInputShapeOption(StringRef text,
                                              ONNXImportOptions &opts) {
  auto [name, dims] = text.split('=');
  if (name.empty() || !text.contains('='))
    return "--input-shape '" + text.str() +
           "': expected NAME=D0,D1,... (use ? for a dynamic dimension)";
  std::vector<int64_t> shape;
  if (!dims.trim().empty()) {
    SmallVector<StringRef> parts;
    dims.split(parts, ',');
    for (StringRef p : parts) {
      p = p.trim();
      int64_t v;
      if (p == "?" || p == "-1")
        shape.push_back(ShapedType::kDynamic);
      else if (!p.getAsInteger(10, v) && v >= 0)
        shape.push_back(v);
      else
        return "--input-shape '" + text.str() + "': '" + p.str() +
               "' is not a dimension size (a non-negative integer or ?)";
    }
  }
  opts.inputShapes[name] = std::move(shape);
  return "";
}

std::string mlir::dist::parseInputValueOption(StringRef text,
                                              ONNXImportOptions &opts) {
  auto [name, file] = text.split('=');
  if (name.empty() || file.empty())
    return "--input-value '" + text.str() + "': expected NAME=FILE";
  opts.inputValues[name] = file.str();
  return "";
}

bool mlir::dist::looksLikeONNXFile(StringRef path) {
  StringRef ext = llvm::sys::path::extension(path);
  if (ext == ".onnx" || ext == ".onnxtxt" || ext == ".onnxtext" || ext == ".pb")
    return true;
  if (ext == ".mlir")
    return false;
  // Another name (`model.bin`, `model`): by content. A serialized protobuf
  // is binary (ModelProto starts with the ir_version tag 0x08) and ONNX
  // text starts with its `<...>` header; MLIR is text that never does.
  // (A slice past the end would read as NULs: ask for no more than is
  // there.)
  uint64_t size = 0;
  if (llvm::sys::fs::file_size(path, size) || size == 0)
    return false;
  auto read = llvm::MemoryBuffer::getFileSlice(
      path, std::min<uint64_t>(size, 512), 0, /*IsVolatile=*/false);
  if (!read)
    return false;
  StringRef head = (*read)->getBuffer();
  StringRef text = head.ltrim();
  if (text.starts_with("<"))
    return true;
  return llvm::any_of(head, [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' &&
           c != '\v';
  });
}

//===----------------------------------------------------------------------===//
// Types and tensors
//===----------------------------------------------------------------------===//

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

Type onnxElementType(MLIRContext *ctx, int32_t code) {
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

std::string onnxTypeName(int32_t code) {
  if (onnx::TensorProto_DataType_IsValid(code))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(code));
  return "type code " + std::to_string(code);
}

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

/// A tensor's bytes, either borrowed from the model or owned.
struct TensorData {
  std::string owned;
  std::unique_ptr<llvm::MemoryBuffer> mapped;
  const char *data = nullptr;
  size_t size = 0;
  ArrayRef<char> bytes() const { return {data, size}; }
};

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
// The importer
//===----------------------------------------------------------------------===//

namespace {
class Importer {
public:
  Importer(MLIRContext *ctx, StringRef path, const ONNXImportOptions &opts,
           std::optional<llvm::MemoryBufferRef> buffer = std::nullopt)
      : ctx(ctx), builder(ctx), path(path.str()), opts(opts),
        fileLoc(FileLineColLoc::get(ctx, path, 0, 0)), buffer(buffer) {}

  OwningOpRef<ModuleOp> run();
  void setPending(std::unique_ptr<PendingParamFile> *p) { pending = p; }

private:
  // Model-level steps.
  LogicalResult load();
  LogicalResult checkOpsets();
  LogicalResult importGraph(ModuleOp module);
  LogicalResult importNode(const onnx::NodeProto &node, int64_t index);

  // Errors.
  InFlightDiagnostic error(Location loc) { return emitError(loc); }
  InFlightDiagnostic error() { return emitError(fileLoc); }

  // Tensors.
  LogicalResult readTensorData(const onnx::TensorProto &t, Location loc,
                               StringRef what, TensorData &out);
  FailureOr<RankedTensorType> tensorType(const onnx::TensorProto &t,
                                         Location loc, StringRef what);
  FailureOr<Value> materializeTensor(const onnx::TensorProto &t, Location loc,
                                     StringRef what, bool mayInline,
                                     StringRef paramName = {});
  FailureOr<DenseElementsAttr> tensorAttr(const onnx::TensorProto &t,
                                          Location loc, StringRef what);
  FailureOr<Value> lookup(StringRef name, Location loc);
  /// The values of node input `name` when it is a constant (an initializer
  /// or a Constant node's output), as doubles; failure (with an error
  /// naming `what`) otherwise.
  FailureOr<SmallVector<double>> constantInput(StringRef name, Location loc,
                                               StringRef what);
  /// The value of initializer or Constant-node output `name`, or null (an
  /// unreadable initializer also reports why, as `what`, at `loc`).
  DenseElementsAttr constantAttrOf(StringRef name, Location loc,
                                   StringRef what);
  /// Resize (opset 10+) and Upsample as gathers along each resized axis.
  struct ResizeSpec {
    std::string mode, coordinates, nearestMode, aspectPolicy;
    int64_t antialias = 0;
    std::optional<SmallVector<int64_t>> axes;
    std::optional<SmallVector<double>> scalesAttr;
    double cubicA = -0.75;
    double extrapolation = 0;
    bool excludeOutside = false;
  };
  FailureOr<Value> importResize(const onnx::NodeProto &node, Location loc,
                                Value x, const ResizeSpec &spec);
  /// One element of a 1-D integer tensor evaluated at import time: a
  /// known value, or dimension `dim` of `of` (unknown until run time).
  struct ShapeEntry {
    std::optional<int64_t> value;
    Value of;
    int64_t dim = -1;
  };
  /// Evaluates the 1-D integer tensor `name` through constants, Shape,
  /// Slice, Concat, Gather, Cast, Squeeze, Unsqueeze and Identity nodes;
  /// nullopt when it depends on anything else. Emits no diagnostics.
  std::optional<SmallVector<ShapeEntry>> evalShapeVector(StringRef name,
                                                         int depth);

  // Op construction.
  Value constI64(ArrayRef<int64_t> values, Location loc, bool scalar = false);
  Value constScalar(Type elt, double value, Location loc);
  FailureOr<SmallVector<Value>> create(StringRef opName, Location loc,
                                       ArrayRef<Value> operands,
                                       ArrayRef<NamedAttribute> attrs,
                                       unsigned numResults,
                                       ArrayRef<int32_t> segments = {});

  MLIRContext *ctx;
  OpBuilder builder;
  std::string path;
  const ONNXImportOptions &opts;
  Location fileLoc;
  std::optional<llvm::MemoryBufferRef> buffer;
  std::unique_ptr<PendingParamFile> *pending = nullptr;
  onnx::ModelProto model;
  int64_t opset = 0;
  ParamWriter params;
  llvm::StringMap<Value> values;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  llvm::StringMap<onnx::TensorProto> boundInputs;
  Block *body = nullptr;
  ModuleOp moduleOp;
  func::FuncOp funcOp;
  int64_t nodeCount = 0;
};
} // namespace

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
// Tensors
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
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(funcOp);
    ParamOp::create(builder, loc, builder.getStringAttr(name),
                    TypeAttr::get(*type), UnitAttr());
  }
  return GetParamOp::create(builder, loc, *type,
                            FlatSymbolRefAttr::get(ctx, name))
      .getResult();
}

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

FailureOr<Value> Importer::importResize(const onnx::NodeProto &node,
                                        Location loc, Value x,
                                        const ResizeSpec &spec) {
  StringRef type = node.op_type();
  auto t = dyn_cast<RankedTensorType>(x.getType());
  if (!t)
    return error(loc) << type << " needs a ranked input";
  int64_t rank = t.getRank();
  if (spec.mode != "nearest" && spec.mode != "linear" &&
      spec.mode != "bilinear" && spec.mode != "cubic")
    return error(loc) << type << " mode '" << spec.mode
                      << "' is not one of nearest, linear, cubic";
  // Linear and cubic interpolate; nearest picks.
  bool linear = spec.mode != "nearest";
  static const char *const kCoordinates[] = {
      "half_pixel",        "pytorch_half_pixel",   "align_corners",
      "asymmetric",        "half_pixel_symmetric", "tf_half_pixel_for_nn",
      "tf_crop_and_resize"};
  if (!llvm::is_contained(kCoordinates, spec.coordinates))
    return error(loc) << type << " coordinate_transformation_mode '"
                      << spec.coordinates << "' is not supported";
  static const char *const kNearest[] = {"round_prefer_floor",
                                         "round_prefer_ceil", "floor", "ceil"};
  if (!linear && !llvm::is_contained(kNearest, spec.nearestMode))
    return error(loc) << type << " nearest_mode '" << spec.nearestMode
                      << "' is not one of round_prefer_floor, "
                         "round_prefer_ceil, floor, ceil";
  if (spec.aspectPolicy != "stretch")
    return error(loc) << type << " keep_aspect_ratio_policy '"
                      << spec.aspectPolicy
                      << "' is not supported (only stretch is)";
  if (linear && !isa<FloatType>(t.getElementType()))
    return error(loc) << type << " in " << spec.mode
                      << " mode needs a float input";

  // The resized axes (opset 18's `axes`, else all).
  SmallVector<int64_t> axes;
  if (spec.axes) {
    for (int64_t a : *spec.axes) {
      if (a < -rank || a >= rank)
        return error(loc) << type << " axis " << a << " is out of range for a "
                          << rank << "-D input";
      a = a < 0 ? a + rank : a;
      if (llvm::is_contained(axes, a))
        return error(loc) << type << " axis " << a << " is repeated";
      axes.push_back(a);
    }
  } else {
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  }
  if (axes.empty())
    return error(loc) << type << " needs an input of rank 1 or more";
  // Scales or sizes: constants, one per resized axis.
  auto inputName = [&](int i) -> std::string {
    return i < node.input_size() ? node.input(i) : std::string();
  };
  bool legacyInputs = type == "Upsample" || opset < 11;
  std::string scalesName = inputName(legacyInputs ? 1 : 2);
  std::string sizesName = legacyInputs ? std::string() : inputName(3);
  SmallVector<double> scales, sizes, roi;
  if (spec.coordinates == "tf_crop_and_resize") {
    std::string roiName = legacyInputs ? std::string() : inputName(1);
    if (roiName.empty())
      return error(loc) << type << " with tf_crop_and_resize needs 'roi'";
    FailureOr<SmallVector<double>> v =
        constantInput(roiName, loc, type.str() + " 'roi'");
    if (failed(v))
      return failure();
    roi = *v;
    if (roi.size() != 2 * axes.size())
      return error(loc) << type << " 'roi' has " << roi.size() << " values for "
                        << axes.size() << " axes (expected starts then ends)";
  }
  if (spec.scalesAttr) {
    scales = *spec.scalesAttr;
  } else if (!scalesName.empty()) {
    FailureOr<SmallVector<double>> v =
        constantInput(scalesName, loc, type.str() + " 'scales'");
    if (failed(v))
      return failure();
    scales = *v;
  }
  // Axes whose size `sizes` takes from the input itself (PyTorch exports
  // interpolate(size=...) as Concat(Slice(Shape(x)), sizes)).
  SmallVector<bool> keepAxis;
  if (!sizesName.empty()) {
    std::optional<SmallVector<ShapeEntry>> v = evalShapeVector(sizesName, 0);
    if (!v)
      return error(loc) << type
                        << " 'sizes' must be a constant, or built from "
                           "constants and the input's own shape";
    if (v->size() != axes.size())
      return error(loc) << type << " has " << v->size() << " sizes for "
                        << axes.size() << " axes";
    for (const ShapeEntry &e : *v) {
      keepAxis.push_back(!e.value && e.of == x &&
                         e.dim == axes[keepAxis.size()]);
      if (!e.value && !keepAxis.back())
        return error(loc) << type << " 'sizes' takes dimension " << e.dim
                          << " of another tensor, unknown at compile time";
      sizes.push_back(e.value ? static_cast<double>(*e.value) : 0);
    }
  }
  // An empty scales tensor next to sizes counts as absent.
  if (!sizes.empty() && !scales.empty())
    return error(loc) << type << " takes 'scales' or 'sizes', not both";
  if (sizes.empty() && scales.empty())
    return error(loc) << type << " needs 'scales' or 'sizes'";
  size_t given = sizes.empty() ? scales.size() : sizes.size();
  if (given != axes.size())
    return error(loc) << type << " has " << given << " "
                      << (sizes.empty() ? "scales" : "sizes") << " for "
                      << axes.size() << " axes";
  // Antialiasing only changes linear (and cubic) downsampling.
  if (linear && spec.antialias != 0) {
    for (size_t i = 0; i < given; ++i)
      if (sizes.empty() ? scales[i] < 1
                        : sizes[i] < t.getDimSize(axes[i]) ||
                              ShapedType::isDynamic(t.getDimSize(axes[i])))
        return error(loc) << type
                          << " with antialias is not supported when "
                             "downsampling";
  }

  Value out = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i];
    int64_t inSize = t.getDimSize(axis);
    double scale;
    int64_t outSize;
    if (sizes.empty()) {
      scale = scales[i];
      if (!(scale > 0) || !std::isfinite(scale))
        return error(loc) << type << " scale " << scale << " for axis " << axis
                          << " is not positive";
      if (scale == 1 && roi.empty())
        continue;
      if (ShapedType::isDynamic(inSize))
        return error(loc) << type << " resizes axis " << axis
                          << ", whose size is not known at compile time";
      outSize = static_cast<int64_t>(std::floor(inSize * scale));
    } else {
      if (keepAxis[i])
        continue;
      if (sizes[i] < 1 || sizes[i] != std::floor(sizes[i]))
        return error(loc) << type << " size " << sizes[i] << " for axis "
                          << axis << " is not a positive integer";
      outSize = static_cast<int64_t>(sizes[i]);
      if (ShapedType::isDynamic(inSize))
        return error(loc) << type << " resizes axis " << axis
                          << ", whose size is not known at compile time";
      if (outSize == inSize && roi.empty())
        continue;
      scale = static_cast<double>(outSize) / inSize;
    }
    if (outSize < 1)
      return error(loc) << type << " gives axis " << axis << " of size "
                        << inSize << " an output size of " << outSize;
    // Where output index o samples the input (ONNX's reference
    // implementation, whose "output width" is scale * input size).
    double width = scale * inSize;
    auto source = [&](int64_t o) -> double {
      double d = static_cast<double>(o);
      const std::string &m = spec.coordinates;
      if (m == "asymmetric")
        return d / scale;
      if (m == "align_corners")
        return width == 1 ? 0 : d * (inSize - 1) / (width - 1);
      if (m == "pytorch_half_pixel")
        return width == 1 ? -0.5 : (d + 0.5) / scale - 0.5;
      if (m == "tf_half_pixel_for_nn")
        return (d + 0.5) / scale;
      if (m == "tf_crop_and_resize") {
        double start = roi[i], end = roi[i + axes.size()];
        return outSize > 1
                   ? start * (inSize - 1) +
                         d * (end - start) * (inSize - 1) / (outSize - 1)
                   : 0.5 * (start + end) * (inSize - 1);
      }
      if (m == "half_pixel_symmetric") {
        double adjustment = outSize / width;
        double offset = inSize / 2.0 * (1 - adjustment);
        return offset + (d + 0.5) / scale - 0.5;
      }
      return (d + 0.5) / scale - 0.5; // half_pixel
    };
    auto clampIndex = [&](int64_t v) {
      return std::clamp<int64_t>(v, 0, inSize - 1);
    };
    // Taps per output: 1 (nearest), 2 (linear) or 4 (cubic) input indices
    // (clamped: the reference pads the edges) and their weights.
    int taps = spec.mode == "cubic" ? 4 : linear ? 2 : 1;
    std::vector<SmallVector<int64_t>> index(taps,
                                            SmallVector<int64_t>(outSize));
    std::vector<SmallVector<double>> weight(taps, SmallVector<double>(outSize));
    for (int64_t o = 0; o < outSize; ++o) {
      double src = source(o);
      double base = std::floor(src);
      double r = src - base;
      auto b = static_cast<int64_t>(base);
      if (taps == 1) {
        bool up;
        if (r == 0)
          up = false;
        else if (spec.nearestMode == "round_prefer_floor")
          up = r > 0.5;
        else if (spec.nearestMode == "round_prefer_ceil")
          up = r >= 0.5;
        else
          up = spec.nearestMode == "ceil";
        index[0][o] = clampIndex(up ? b + 1 : b);
        weight[0][o] = 1;
        continue;
      }
      SmallVector<double, 4> w;
      SmallVector<int64_t, 4> at;
      if (taps == 2) {
        w = {1 - r, r};
        at = {b, b + 1};
      } else {
        double a = spec.cubicA, s1 = r + 1, s2 = 1 - r, s3 = 2 - r;
        w = {((a * s1 - 5 * a) * s1 + 8 * a) * s1 - 4 * a,
             ((a + 2) * r - (a + 3)) * r * r + 1,
             ((a + 2) * s2 - (a + 3)) * s2 * s2 + 1,
             ((a * s3 - 5 * a) * s3 + 8 * a) * s3 - 4 * a};
        at = {b - 1, b, b + 1, b + 2};
      }
      if (spec.excludeOutside) {
        double total = 0;
        for (int k = 0; k < taps; ++k) {
          if (at[k] < 0 || at[k] >= inSize)
            w[k] = 0;
          total += w[k];
        }
        for (int k = 0; k < taps && total != 0; ++k)
          w[k] /= total;
      }
      for (int k = 0; k < taps; ++k) {
        index[k][o] = clampIndex(at[k]);
        weight[k][o] = w[k];
      }
    }
    auto axisAttr =
        builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis));
    Value sum;
    for (int k = 0; k < taps; ++k) {
      auto g = create("dist.gather", loc, {out, constI64(index[k], loc)},
                      {axisAttr}, 1);
      if (failed(g))
        return failure();
      if (taps == 1) {
        sum = (*g)[0];
        break;
      }
      // The tap's weights along `axis`.
      SmallVector<int64_t> wShape(rank, 1);
      wShape[axis] = outSize;
      auto wType = RankedTensorType::get(wShape, t.getElementType());
      auto ft = cast<FloatType>(t.getElementType());
      SmallVector<APFloat> values;
      for (double v : weight[k]) {
        bool lost;
        APFloat f(v);
        f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        values.push_back(f);
      }
      Value wk = ConstantOp::create(builder, loc, wType,
                                    DenseElementsAttr::get(wType, values));
      auto term = create("dist.mul", loc, {(*g)[0], wk}, {}, 1);
      if (failed(term))
        return failure();
      if (!sum) {
        sum = (*term)[0];
        continue;
      }
      auto added = create("dist.add", loc, {sum, (*term)[0]}, {}, 1);
      if (failed(added))
        return failure();
      sum = (*added)[0];
    }
    out = sum;
    // tf_crop_and_resize: samples outside the input take
    // extrapolation_value.
    SmallVector<double> outside;
    for (int64_t o = 0; o < outSize && !roi.empty(); ++o) {
      double src = source(o);
      outside.push_back(src < 0 || src > inSize - 1 ? 1 : 0);
    }
    if (llvm::is_contained(outside, 1.0)) {
      if (!isa<FloatType>(t.getElementType()))
        return error(loc) << type << " extrapolation needs a float input";
      SmallVector<int64_t> mShape(rank, 1);
      mShape[axis] = outSize;
      auto mType = RankedTensorType::get(mShape, t.getElementType());
      auto ft = cast<FloatType>(t.getElementType());
      SmallVector<APFloat> keep, fill;
      for (double v : outside) {
        bool lost;
        APFloat k(1 - v), f(v * spec.extrapolation);
        k.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        keep.push_back(k);
        fill.push_back(f);
      }
      Value keepC = ConstantOp::create(builder, loc, mType,
                                       DenseElementsAttr::get(mType, keep));
      Value fillC = ConstantOp::create(builder, loc, mType,
                                       DenseElementsAttr::get(mType, fill));
      auto kept = create("dist.mul", loc, {out, keepC}, {}, 1);
      if (failed(kept))
        return failure();
      auto filled = create("dist.add", loc, {(*kept)[0], fillC}, {}, 1);
      if (failed(filled))
        return failure();
      out = (*filled)[0];
    }
  }
  // A resize that changes nothing still defines a new value.
  if (out == x) {
    auto id = create("dist.identity", loc, {x}, {}, 1);
    if (failed(id))
      return failure();
    out = (*id)[0];
  }
  return out;
}

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

FailureOr<SmallVector<Value>> Importer::create(StringRef opName, Location loc,
                                               ArrayRef<Value> operands,
                                               ArrayRef<NamedAttribute> attrs,
                                               unsigned numResults,
                                               ArrayRef<int32_t> segments) {
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

PendingParamFile::~PendingParamFile() {
  if (!committed)
    std::remove(tempPath.c_str());
}

std::string PendingParamFile::commit() {
  if (committed)
    return "";
  if (std::rename(tempPath.c_str(), path.c_str()) != 0)
    return path +
           ": cannot move parameter file into place: " + std::strerror(errno);
  committed = true;
  return "";
}

OwningOpRef<ModuleOp>
mlir::dist::importONNXFile(MLIRContext *context, StringRef path,
                           const ONNXImportOptions &opts,
                           std::unique_ptr<PendingParamFile> *pending) {
  context->loadDialect<DistDialect, func::FuncDialect>();
  Importer importer(context, path, opts);
  importer.setPending(pending);
  return importer.run();
}

OwningOpRef<ModuleOp>
mlir::dist::importONNXBuffer(MLIRContext *context, llvm::MemoryBufferRef buffer,
                             const ONNXImportOptions &opts) {
  context->loadDialect<DistDialect, func::FuncDialect>();
  Importer importer(context, buffer.getBufferIdentifier(), opts, buffer);
  return importer.run();
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

namespace {
/// First opset of the default domain defining each supported op.
const llvm::StringMap<int64_t> &opSinceVersions() {
  static const llvm::StringMap<int64_t> table = {
      {"Abs", 1},
      {"Neg", 1},
      {"Exp", 1},
      {"Log", 1},
      {"Sqrt", 1},
      {"Reciprocal", 1},
      {"Floor", 1},
      {"Ceil", 1},
      {"Round", 11},
      {"Sign", 9},
      {"Sin", 7},
      {"Cos", 7},
      {"IsNaN", 9},
      {"Einsum", 12},
      {"IsInf", 10},
      {"DepthToSpace", 1},
      {"Resize", 10},
      {"Upsample", 7},
      {"SpaceToDepth", 1},
      {"Tan", 7},
      {"Asin", 7},
      {"Acos", 7},
      {"Atan", 7},
      {"Sinh", 9},
      {"Cosh", 9},
      {"Asinh", 9},
      {"Acosh", 9},
      {"Atanh", 9},
      {"Tanh", 1},
      {"Sigmoid", 1},
      {"Relu", 1},
      {"LeakyRelu", 1},
      {"Elu", 1},
      {"Selu", 1},
      {"Celu", 12},
      {"Softplus", 1},
      {"Softsign", 1},
      {"HardSigmoid", 1},
      {"HardSwish", 14},
      {"Erf", 9},
      {"Gelu", 20},
      {"Not", 1},
      {"Identity", 1},
      {"Clip", 1},
      {"Cast", 1},
      {"CastLike", 15},
      {"PRelu", 1},
      {"Add", 1},
      {"Sub", 1},
      {"Mul", 1},
      {"Div", 1},
      {"Pow", 1},
      {"Mod", 10},
      {"Max", 1},
      {"Min", 1},
      {"Sum", 1},
      {"Mean", 1},
      {"Equal", 1},
      {"Less", 1},
      {"Greater", 1},
      {"LessOrEqual", 12},
      {"GreaterOrEqual", 12},
      {"And", 1},
      {"Or", 1},
      {"Xor", 1},
      {"Where", 9},
      {"MatMul", 1},
      {"Gemm", 1},
      {"Conv", 1},
      {"ConvTranspose", 1},
      {"MaxPool", 1},
      {"AveragePool", 1},
      {"GlobalAveragePool", 1},
      {"GlobalMaxPool", 1},
      {"BatchNormalization", 1},
      {"LayerNormalization", 17},
      {"InstanceNormalization", 1},
      {"Dropout", 1},
      {"Softmax", 1},
      {"LogSoftmax", 1},
      {"ReduceSum", 1},
      {"ReduceMean", 1},
      {"ReduceMax", 1},
      {"ReduceMin", 1},
      {"ReduceProd", 1},
      {"ReduceSumSquare", 1},
      {"ReduceL2", 1},
      {"ReduceLogSumExp", 1},
      {"ArgMax", 1},
      {"ArgMin", 1},
      {"Reshape", 1},
      {"Flatten", 1},
      {"Transpose", 1},
      {"Squeeze", 1},
      {"Unsqueeze", 1},
      {"Concat", 1},
      {"Split", 1},
      {"Slice", 1},
      {"Gather", 1},
      {"GatherElements", 11},
      {"ScatterElements", 11},
      {"Expand", 8},
      {"Tile", 1},
      {"Pad", 1},
      {"Shape", 1},
      {"Size", 1},
      {"ConstantOfShape", 9},
      {"Constant", 1},
      {"Range", 11},
      {"TopK", 1},
      {"Trilu", 14},
      {"CumSum", 11},
      {"OneHot", 9},
      {"SoftmaxCrossEntropyLoss", 12},
      {"NegativeLogLikelihoodLoss", 12}};
  return table;
}

/// ONNX op -> dist mnemonic for ops that map one to one with the same
/// operands and no attribute changes beyond copying.
const llvm::StringMap<StringRef> &directOps() {
  static const llvm::StringMap<StringRef> table = {
      {"Abs", "abs"},
      {"Neg", "neg"},
      {"Exp", "exp"},
      {"Log", "log"},
      {"Sqrt", "sqrt"},
      {"Reciprocal", "reciprocal"},
      {"Floor", "floor"},
      {"Ceil", "ceil"},
      {"Round", "round"},
      {"Sign", "sign"},
      {"Sin", "sin"},
      {"Cos", "cos"},
      {"Einsum", "einsum"},
      {"Tan", "tan"},
      {"Asin", "asin"},
      {"Acos", "acos"},
      {"Atan", "atan"},
      {"Sinh", "sinh"},
      {"Cosh", "cosh"},
      {"Asinh", "asinh"},
      {"Acosh", "acosh"},
      {"Atanh", "atanh"},
      {"Tanh", "tanh"},
      {"Sigmoid", "sigmoid"},
      {"Relu", "relu"},
      {"Softplus", "softplus"},
      {"Softsign", "softsign"},
      {"HardSwish", "hard_swish"},
      {"Erf", "erf"},
      {"Not", "not"},
      {"Identity", "identity"},
      {"LeakyRelu", "leaky_relu"},
      {"Elu", "elu"},
      {"Selu", "selu"},
      {"Celu", "celu"},
      {"HardSigmoid", "hard_sigmoid"},
      {"Gelu", "gelu"},
      {"CastLike", "cast_like"},
      {"PRelu", "prelu"},
      {"Add", "add"},
      {"Sub", "sub"},
      {"Mul", "mul"},
      {"Div", "div"},
      {"Pow", "pow"},
      {"Mod", "mod"},
      {"Max", "max"},
      {"Min", "min"},
      {"Sum", "sum"},
      {"Mean", "mean"},
      {"Equal", "equal"},
      {"Less", "less"},
      {"Greater", "greater"},
      {"LessOrEqual", "less_or_equal"},
      {"GreaterOrEqual", "greater_or_equal"},
      {"And", "and"},
      {"Or", "or"},
      {"Xor", "xor"},
      {"Where", "where"},
      {"MatMul", "matmul"},
      {"GlobalAveragePool", "global_average_pool"},
      {"GlobalMaxPool", "global_max_pool"},
      {"InstanceNormalization", "instance_norm"},
      {"Flatten", "flatten"},
      {"Transpose", "transpose"},
      {"Concat", "concat"},
      {"Gather", "gather"},
      {"GatherElements", "gather_elements"},
      {"ScatterElements", "scatter_elements"},
      {"Expand", "expand"},
      {"Tile", "tile"},
      {"Shape", "shape"},
      {"Size", "size"},
      {"ConstantOfShape", "constant_of_shape"},
      {"Range", "range"},
      {"Trilu", "trilu"},
      {"CumSum", "cum_sum"},
      {"OneHot", "one_hot"},
      {"ArgMax", "arg_max"},
      {"ArgMin", "arg_min"},
      {"Reshape", "reshape"},
      {"Gemm", "gemm"},
      {"Conv", "conv"},
      {"ConvTranspose", "conv_transpose"},
      {"AveragePool", "average_pool"},
      {"InstanceNormalization", "instance_norm"},
      {"LayerNormalization", "layer_norm"},
      {"NegativeLogLikelihoodLoss", "nll_loss"},
      {"SoftmaxCrossEntropyLoss", "softmax_cross_entropy_loss"}};
  return table;
}

/// Attributes copied verbatim (ONNX name -> dist name) per kind.
struct AttrSpec {
  const char *onnxName;
  const char *distName;
  enum Kind { Int, Float, String, Ints, Tensor } kind;
};

const llvm::StringMap<std::vector<AttrSpec>> &copiedAttrs() {
  using K = AttrSpec::Kind;
  static const std::vector<AttrSpec> convAttrs = {
      {"auto_pad", "auto_pad", K::String},
      {"dilations", "dilations", K::Ints},
      {"group", "group", K::Int},
      {"kernel_shape", "kernel_shape", K::Ints},
      {"pads", "pads", K::Ints},
      {"strides", "strides", K::Ints},
      {"output_padding", "output_padding", K::Ints},
      {"output_shape", "output_shape", K::Ints}};
  static const std::vector<AttrSpec> poolAttrs = {
      {"auto_pad", "auto_pad", K::String},
      {"ceil_mode", "ceil_mode", K::Int},
      {"count_include_pad", "count_include_pad", K::Int},
      {"dilations", "dilations", K::Ints},
      {"kernel_shape", "kernel_shape", K::Ints},
      {"pads", "pads", K::Ints},
      {"storage_order", "storage_order", K::Int},
      {"strides", "strides", K::Ints}};
  static const std::vector<AttrSpec> lossAttrs = {
      {"ignore_index", "ignore_index", K::Int},
      {"reduction", "reduction", K::String}};
  static const llvm::StringMap<std::vector<AttrSpec>> table = {
      {"LeakyRelu", {{"alpha", "alpha", K::Float}}},
      {"Elu", {{"alpha", "alpha", K::Float}}},
      {"Celu", {{"alpha", "alpha", K::Float}}},
      {"Selu", {{"alpha", "alpha", K::Float}, {"gamma", "gamma", K::Float}}},
      {"HardSigmoid",
       {{"alpha", "alpha", K::Float}, {"beta", "beta", K::Float}}},
      {"Gelu", {{"approximate", "approximate", K::String}}},
      {"Mod", {{"fmod", "fmod", K::Int}}},
      {"Einsum", {{"equation", "equation", K::String}}},
      {"Gemm",
       {{"alpha", "alpha", K::Float},
        {"beta", "beta", K::Float},
        {"transA", "trans_a", K::Int},
        {"transB", "trans_b", K::Int}}},
      {"Conv", convAttrs},
      {"ConvTranspose", convAttrs},
      {"AveragePool", poolAttrs},
      {"MaxPool", poolAttrs},
      {"InstanceNormalization", {{"epsilon", "epsilon", K::Float}}},
      {"LayerNormalization",
       {{"axis", "axis", K::Int},
        {"epsilon", "epsilon", K::Float},
        {"stash_type", "stash_type", K::Int}}},
      {"Flatten", {{"axis", "axis", K::Int}}},
      {"Transpose", {{"perm", "perm", K::Ints}}},
      {"Concat", {{"axis", "axis", K::Int}}},
      {"Gather", {{"axis", "axis", K::Int}}},
      {"GatherElements", {{"axis", "axis", K::Int}}},
      {"ScatterElements",
       {{"axis", "axis", K::Int}, {"reduction", "reduction", K::String}}},
      {"Shape", {{"start", "start", K::Int}, {"end", "end", K::Int}}},
      {"ConstantOfShape", {{"value", "value", K::Tensor}}},
      {"Trilu", {{"upper", "upper", K::Int}}},
      {"CumSum",
       {{"exclusive", "exclusive", K::Int}, {"reverse", "reverse", K::Int}}},
      {"OneHot", {{"axis", "axis", K::Int}}},
      {"ArgMax",
       {{"axis", "axis", K::Int},
        {"keepdims", "keepdims", K::Int},
        {"select_last_index", "select_last_index", K::Int}}},
      {"ArgMin",
       {{"axis", "axis", K::Int},
        {"keepdims", "keepdims", K::Int},
        {"select_last_index", "select_last_index", K::Int}}},
      {"Reshape", {{"allowzero", "allowzero", K::Int}}},
      {"NegativeLogLikelihoodLoss", lossAttrs},
      {"SoftmaxCrossEntropyLoss", lossAttrs}};
  return table;
}

const char *attrTypeName(int type) {
  switch (type) {
  case onnx::AttributeProto::FLOAT:
    return "a float";
  case onnx::AttributeProto::INT:
    return "an int";
  case onnx::AttributeProto::STRING:
    return "a string";
  case onnx::AttributeProto::INTS:
    return "a list of ints";
  case onnx::AttributeProto::FLOATS:
    return "a list of floats";
  case onnx::AttributeProto::TENSOR:
    return "a tensor";
  default:
    return "another kind";
  }
}
} // namespace

LogicalResult Importer::importNode(const onnx::NodeProto &node, int64_t index) {
  std::string label =
      node.name().empty() ? "#" + std::to_string(index) : node.name();
  Location loc = NameLoc::get(builder.getStringAttr(label),
                              FileLineColLoc::get(ctx, path, index + 1, 0));
  StringRef type = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return error(loc) << "op '" << type << "' is in domain '" << node.domain()
                      << "', which is not supported (only the default ONNX "
                         "domain is)";
  auto since = opSinceVersions().find(type);
  if (since == opSinceVersions().end())
    return error(loc) << "unsupported op '" << type << "' (opset " << opset
                      << ")";
  if (since->second > opset)
    return error(loc) << "op '" << type << "' does not exist in opset " << opset
                      << " (it was added in opset " << since->second << ")";

  // Attributes, with kind checks.
  llvm::StringMap<const onnx::AttributeProto *> attrMap;
  for (const onnx::AttributeProto &a : node.attribute())
    attrMap[a.name()] = &a;
  bool attrError = false;
  auto getAttr = [&](StringRef name, int kind) -> const onnx::AttributeProto * {
    auto it = attrMap.find(name);
    if (it == attrMap.end())
      return nullptr;
    const onnx::AttributeProto *a = it->second;
    // Attributes written without a type field: infer from the set field.
    int actual = a->type();
    if (actual == onnx::AttributeProto::UNDEFINED) {
      if (a->has_f())
        actual = onnx::AttributeProto::FLOAT;
      else if (a->has_i())
        actual = onnx::AttributeProto::INT;
      else if (a->has_s())
        actual = onnx::AttributeProto::STRING;
      else if (a->has_t())
        actual = onnx::AttributeProto::TENSOR;
      else if (a->ints_size())
        actual = onnx::AttributeProto::INTS;
      else if (a->floats_size())
        actual = onnx::AttributeProto::FLOATS;
    }
    if (actual != kind) {
      if (!attrError)
        error(loc) << "attribute '" << name << "' of " << type << " must be "
                   << attrTypeName(kind) << ", got " << attrTypeName(actual);
      attrError = true;
      return nullptr;
    }
    return a;
  };
  auto intAttr = [&](StringRef name) -> std::optional<int64_t> {
    if (auto *a = getAttr(name, onnx::AttributeProto::INT))
      return a->i();
    return std::nullopt;
  };
  auto floatAttr = [&](StringRef name) -> std::optional<float> {
    if (auto *a = getAttr(name, onnx::AttributeProto::FLOAT))
      return a->f();
    return std::nullopt;
  };
  auto intsAttr = [&](StringRef name) -> std::optional<SmallVector<int64_t>> {
    if (auto *a = getAttr(name, onnx::AttributeProto::INTS))
      return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
    return std::nullopt;
  };
  auto stringAttr = [&](StringRef name) -> std::optional<std::string> {
    if (auto *a = getAttr(name, onnx::AttributeProto::STRING))
      return a->s();
    return std::nullopt;
  };

  // Opsets before 7 had an explicit, axis-aligned broadcast for binary ops:
  // B's dims line up with A's from `axis` on (default: the trailing dims).
  // It is rewritten below into numpy broadcasting by appending size-1 dims
  // to B. Gemm's C broadcasts unidirectionally in every opset.
  bool legacyBroadcast =
      opset < 7 && intAttr("broadcast").value_or(0) != 0 && type != "Gemm";
  std::optional<int64_t> legacyAxis =
      opset < 7 ? intAttr("axis") : std::nullopt;

  // Inputs ("" marks an absent optional input).
  SmallVector<Value> in;
  // Resize's and Upsample's roi, scales and sizes are read as constants
  // below, never materialised (a float initializer would become a
  // parameter).
  bool resizeLike = type == "Resize" || type == "Upsample";
  for (const std::string &name : node.input()) {
    if (name.empty() || (resizeLike && !in.empty())) {
      in.push_back(Value());
      continue;
    }
    FailureOr<Value> v = lookup(name, loc);
    if (failed(v))
      return failure();
    in.push_back(*v);
  }
  // Attributes that later opsets turned into inputs are errors there (they
  // would otherwise be ignored silently).
  {
    struct Moved {
      const char *op;
      int64_t since;
      const char *attr;
    };
    static const Moved moved[] = {{"ReduceSum", 13, "axes"},
                                  {"ReduceMean", 18, "axes"},
                                  {"ReduceMax", 18, "axes"},
                                  {"ReduceMin", 18, "axes"},
                                  {"ReduceProd", 18, "axes"},
                                  {"ReduceL2", 18, "axes"},
                                  {"ReduceSumSquare", 18, "axes"},
                                  {"ReduceLogSumExp", 18, "axes"},
                                  {"Squeeze", 13, "axes"},
                                  {"Unsqueeze", 13, "axes"},
                                  {"Split", 13, "split"},
                                  {"Slice", 10, "starts"},
                                  {"Slice", 10, "ends"},
                                  {"Slice", 10, "axes"},
                                  {"Pad", 11, "pads"},
                                  {"Pad", 11, "value"},
                                  {"TopK", 10, "k"},
                                  {"Clip", 11, "min"},
                                  {"Clip", 11, "max"},
                                  {"Dropout", 12, "ratio"}};
    for (const Moved &m : moved)
      if (type == m.op && opset >= m.since && attrMap.count(m.attr))
        return error(loc) << "attribute '" << m.attr << "' of " << type
                          << " is an input since opset " << m.since
                          << " (model opset " << opset << ")";
  }

  // Inputs an op takes only from some opset on (older opsets had attributes).
  {
    struct Limit {
      const char *op;
      int64_t since;
      int maxBefore;
    };
    static const Limit limits[] = {{"ReduceSum", 13, 1},
                                   {"ReduceMean", 18, 1},
                                   {"ReduceMax", 18, 1},
                                   {"ReduceMin", 18, 1},
                                   {"ReduceProd", 18, 1},
                                   {"ReduceL2", 18, 1},
                                   {"ReduceSumSquare", 18, 1},
                                   {"ReduceLogSumExp", 18, 1},
                                   {"Squeeze", 13, 1},
                                   {"Unsqueeze", 13, 1},
                                   {"Split", 13, 1},
                                   {"Slice", 10, 1},
                                   {"Pad", 11, 1},
                                   {"TopK", 10, 1},
                                   {"Clip", 11, 1},
                                   {"Dropout", 12, 1}};
    for (const Limit &l : limits)
      if (type == l.op &&
          opset<l.since &&static_cast<int>(in.size())> l.maxBefore)
        return error(loc) << type << " takes at most " << l.maxBefore
                          << " input" << (l.maxBefore == 1 ? "" : "s")
                          << " before opset " << l.since << ", got "
                          << in.size() << " (opset " << opset << ")";
  }
  // Appends `count` size-1 dims to v.
  auto appendUnitDims = [&](Value v, int64_t count) -> FailureOr<Value> {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || count <= 0)
      return v;
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < count; ++i)
      axes.push_back(t.getRank() + i);
    auto r = create("dist.unsqueeze", loc, {v, constI64(axes, loc)}, {}, 1);
    if (failed(r))
      return failure();
    return (*r)[0];
  };
  if (legacyBroadcast && in.size() >= 2 && in[0] && in[1]) {
    auto a = dyn_cast<RankedTensorType>(in[0].getType());
    auto b = dyn_cast<RankedTensorType>(in[1].getType());
    if (!a || !b)
      return error(loc) << type
                        << " with the legacy 'broadcast' attribute "
                           "needs ranked inputs";
    int64_t axis = legacyAxis.value_or(a.getRank() - b.getRank());
    if (axis < 0)
      axis += a.getRank();
    if (axis < 0 || axis + b.getRank() > a.getRank())
      return error(loc) << "broadcast axis " << axis << " does not fit a "
                        << b.getRank() << "-D input into a " << a.getRank()
                        << "-D one";
    auto r = appendUnitDims(in[1], a.getRank() - axis - b.getRank());
    if (failed(r))
      return failure();
    in[1] = *r;
  }
  // PRelu before opset 7: a 1-D slope of size C applies along the channel
  // dim 1.
  if (type == "PRelu" && opset < 7 && in.size() == 2 && in[0] && in[1]) {
    auto x = dyn_cast<RankedTensorType>(in[0].getType());
    auto sl = dyn_cast<RankedTensorType>(in[1].getType());
    if (x && sl && sl.getRank() == 1 && x.getRank() >= 3 &&
        sl.getDimSize(0) != 1 && sl.getDimSize(0) == x.getDimSize(1)) {
      auto r = appendUnitDims(in[1], x.getRank() - 2);
      if (failed(r))
        return failure();
      in[1] = *r;
    }
  }
  auto input = [&](size_t i) { return i < in.size() ? in[i] : Value(); };
  auto need = [&](size_t n) -> LogicalResult {
    for (size_t i = 0; i < n; ++i)
      if (!input(i))
        return error(loc) << type << " needs input #" << i;
    return success();
  };
  SmallVector<Value> present;
  for (Value v : in)
    if (v)
      present.push_back(v);

  SmallVector<NamedAttribute> attrs;
  auto addI = [&](StringRef name, int64_t v) {
    attrs.push_back(builder.getNamedAttr(name, builder.getI64IntegerAttr(v)));
  };
  auto addF = [&](StringRef name, float v) {
    attrs.push_back(builder.getNamedAttr(name, builder.getF32FloatAttr(v)));
  };
  // Copy the attributes that map one to one.
  if (auto it = copiedAttrs().find(type); it != copiedAttrs().end()) {
    for (const AttrSpec &spec : it->second) {
      switch (spec.kind) {
      case AttrSpec::Int:
        if (auto v = intAttr(spec.onnxName))
          addI(spec.distName, *v);
        break;
      case AttrSpec::Float:
        if (auto v = floatAttr(spec.onnxName))
          addF(spec.distName, *v);
        break;
      case AttrSpec::String:
        if (auto v = stringAttr(spec.onnxName))
          attrs.push_back(
              builder.getNamedAttr(spec.distName, builder.getStringAttr(*v)));
        break;
      case AttrSpec::Ints:
        if (auto v = intsAttr(spec.onnxName))
          attrs.push_back(builder.getNamedAttr(
              spec.distName, builder.getDenseI64ArrayAttr(*v)));
        break;
      case AttrSpec::Tensor:
        if (auto *a = getAttr(spec.onnxName, onnx::AttributeProto::TENSOR)) {
          FailureOr<DenseElementsAttr> t = tensorAttr(
              a->t(), loc, "attribute '" + std::string(spec.onnxName) + "'");
          if (failed(t))
            return failure();
          attrs.push_back(builder.getNamedAttr(spec.distName, *t));
        }
        break;
      }
    }
  }
  if (attrError)
    return failure();

  auto distName = [&](StringRef mnemonic) {
    return ("dist." + mnemonic).str();
  };
  FailureOr<SmallVector<Value>> results = failure();
  Type elt0 = input(0) ? getElementTypeOrSelf(input(0).getType()) : Type();
  // Attribute -> constant operand conversion for older opsets.
  auto intsOperand = [&](StringRef name) -> Value {
    if (auto v = intsAttr(name))
      return constI64(*v, loc);
    return Value();
  };

  if (type == "Constant") {
    const onnx::AttributeProto *valueAttr = nullptr;
    for (const onnx::AttributeProto &a : node.attribute())
      valueAttr = &a;
    if (node.attribute_size() != 1 || !valueAttr)
      return error(loc) << "Constant needs exactly one value attribute";
    StringRef name = valueAttr->name();
    if (name == "value") {
      if (!getAttr("value", onnx::AttributeProto::TENSOR))
        return failure();
      if (node.output_size() < 1 || node.output(0).empty())
        return error(loc) << "Constant has no output";
      FailureOr<Value> v = materializeTensor(
          valueAttr->t(), loc, "Constant value", true, node.output(0));
      if (failed(v))
        return failure();
      results = SmallVector<Value>{*v};
    } else if (name == "value_float" || name == "value_int") {
      Type elt = name == "value_float" ? Type(builder.getF32Type())
                                       : Type(builder.getI64Type());
      if ((name == "value_float" && !floatAttr(name)) ||
          (name == "value_int" && !intAttr(name)))
        return failure();
      double v = name == "value_float" ? valueAttr->f()
                                       : static_cast<double>(valueAttr->i());
      if (name == "value_int") {
        auto t = RankedTensorType::get({}, elt);
        results = SmallVector<Value>{ConstantOp::create(
            builder, loc, t,
            DenseElementsAttr::get(t, ArrayRef<int64_t>{valueAttr->i()}))};
      } else {
        results = SmallVector<Value>{constScalar(elt, v, loc)};
      }
    } else if (name == "value_ints") {
      auto v = intsAttr(name);
      if (!v)
        return failure();
      results = SmallVector<Value>{constI64(*v, loc)};
    } else if (name == "value_floats") {
      if (!getAttr(name, onnx::AttributeProto::FLOATS))
        return failure();
      SmallVector<float> v(valueAttr->floats().begin(),
                           valueAttr->floats().end());
      auto t = RankedTensorType::get({(int64_t)v.size()}, builder.getF32Type());
      results = SmallVector<Value>{ConstantOp::create(
          builder, loc, t, DenseElementsAttr::get(t, ArrayRef<float>(v)))};
    } else {
      return error(loc) << "Constant with attribute '" << name
                        << "' is not supported (string and sparse constants)";
    }
  } else if (type == "Cast") {
    if (failed(need(1)))
      return failure();
    auto to = intAttr("to");
    if (!to)
      return attrError ? failure()
                       : (error(loc) << "Cast needs attribute 'to'", failure());
    Type toType = onnxElementType(ctx, static_cast<int32_t>(*to));
    if (!toType)
      return error(loc) << "Cast to " << onnxTypeName(static_cast<int32_t>(*to))
                        << " is not supported";
    attrs.push_back(builder.getNamedAttr("to", TypeAttr::get(toType)));
    results = create("dist.cast", loc, {input(0)}, attrs, 1);
  } else if (type == "Clip") {
    if (failed(need(1)))
      return failure();
    Value lo = input(1), hi = input(2);
    if (opset < 11) {
      if (auto v = floatAttr("min"))
        lo = constScalar(elt0, *v, loc);
      if (auto v = floatAttr("max"))
        hi = constScalar(elt0, *v, loc);
    }
    SmallVector<Value> ops{input(0)};
    if (lo)
      ops.push_back(lo);
    if (hi)
      ops.push_back(hi);
    results =
        create("dist.clip", loc, ops, attrs, 1, {1, lo ? 1 : 0, hi ? 1 : 0});
  } else if (type == "Dropout") {
    if (failed(need(1)))
      return failure();
    Value ratio = input(1), training = input(2);
    if (opset < 12)
      if (auto r = floatAttr("ratio"))
        ratio = constScalar(builder.getF32Type(), *r, loc);
    if (auto seed = intAttr("seed"))
      addI("seed", *seed);
    SmallVector<Value> ops{input(0)};
    if (ratio)
      ops.push_back(ratio);
    if (training)
      ops.push_back(training);
    results = create("dist.dropout", loc, ops, attrs, 2,
                     {1, ratio ? 1 : 0, training ? 1 : 0});
  } else if (type == "MaxPool") {
    if (failed(need(1)))
      return failure();
    if (!intsAttr("kernel_shape"))
      return attrError
                 ? failure()
                 : (error(loc) << "MaxPool needs attribute 'kernel_shape'",
                    failure());
    // count_include_pad is not a MaxPool attribute.
    llvm::erase_if(attrs, [](NamedAttribute a) {
      return a.getName() == "count_include_pad";
    });
    results = create("dist.max_pool", loc, {input(0)}, attrs, 2);
  } else if (type == "AveragePool") {
    if (failed(need(1)))
      return failure();
    if (!intsAttr("kernel_shape"))
      return attrError
                 ? failure()
                 : (error(loc) << "AveragePool needs attribute 'kernel_shape'",
                    failure());
    llvm::erase_if(
        attrs, [](NamedAttribute a) { return a.getName() == "storage_order"; });
    results = create("dist.average_pool", loc, {input(0)}, attrs, 1);
  } else if (type == "BatchNormalization") {
    if (failed(need(5)))
      return failure();
    if (auto e = floatAttr("epsilon"))
      addF("epsilon", *e);
    if (auto m = floatAttr("momentum"))
      addF("momentum", *m);
    if (opset < 9)
      if (auto spatial = intAttr("spatial"); spatial && *spatial != 1)
        return error(loc) << "BatchNormalization with spatial=0 is not "
                             "supported";
    int64_t training = opset >= 14 ? intAttr("training_mode").value_or(0)
                                   : (node.output_size() > 1 ? 1 : 0);
    if (opset < 14)
      for (int i = 3; i < node.output_size(); ++i)
        if (!node.output(i).empty())
          return error(loc) << "BatchNormalization output #" << i
                            << " (saved mean/variance) is not supported";
    addI("training_mode", training);
    results =
        create("dist.batch_norm", loc,
               {input(0), input(1), input(2), input(3), input(4)}, attrs, 3);
  } else if (type == "LayerNormalization") {
    if (failed(need(2)))
      return failure();
    results = create("dist.layer_norm", loc, present, attrs, 3);
  } else if (type == "Softmax" || type == "LogSoftmax") {
    if (failed(need(1)))
      return failure();
    StringRef op = type == "Softmax" ? "dist.softmax" : "dist.log_softmax";
    int64_t axis = intAttr("axis").value_or(opset >= 13 ? -1 : 1);
    auto ranked = dyn_cast<RankedTensorType>(input(0).getType());
    bool lastAxis = ranked && (axis == -1 || axis == ranked.getRank() - 1);
    if (opset >= 13 || lastAxis) {
      results =
          create(op, loc, {input(0)},
                 {builder.getNamedAttr("axis", builder.getI64IntegerAttr(
                                                   opset >= 13 ? axis : -1))},
                 1);
    } else {
      // Older opsets flatten to [prod(:axis), prod(axis:)] first.
      auto flat = create(
          "dist.flatten", loc, {input(0)},
          {builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis))}, 1);
      if (failed(flat))
        return failure();
      auto soft = create(
          op, loc, {(*flat)[0]},
          {builder.getNamedAttr("axis", builder.getI64IntegerAttr(-1))}, 1);
      if (failed(soft))
        return failure();
      auto shape = create("dist.shape", loc, {input(0)}, {}, 1);
      if (failed(shape))
        return failure();
      results = create("dist.reshape", loc, {(*soft)[0], (*shape)[0]}, {}, 1);
    }
  } else if (type.starts_with("Reduce")) {
    if (failed(need(1)))
      return failure();
    static const llvm::StringMap<StringRef> reduces = {
        {"ReduceSum", "reduce_sum"},
        {"ReduceMean", "reduce_mean"},
        {"ReduceMax", "reduce_max"},
        {"ReduceMin", "reduce_min"},
        {"ReduceProd", "reduce_prod"},
        {"ReduceSumSquare", "reduce_sum_square"},
        {"ReduceL2", "reduce_l2"},
        {"ReduceLogSumExp", "reduce_log_sum_exp"}};
    bool axesInput = opset >= (type == "ReduceSum" ? 13 : 18);
    Value axes = axesInput ? input(1) : intsOperand("axes");
    if (auto k = intAttr("keepdims"))
      addI("keepdims", *k);
    if (axesInput)
      if (auto n = intAttr("noop_with_empty_axes"))
        addI("noop_with_empty_axes", *n);
    SmallVector<Value> ops{input(0)};
    if (axes)
      ops.push_back(axes);
    results = create(distName(reduces.lookup(type)), loc, ops, attrs, 1);
  } else if (type == "Squeeze" || type == "Unsqueeze") {
    if (failed(need(1)))
      return failure();
    Value axes = opset >= 13 ? input(1) : intsOperand("axes");
    if (type == "Unsqueeze" && !axes)
      return attrError ? failure()
                       : (error(loc) << "Unsqueeze needs axes", failure());
    SmallVector<Value> ops{input(0)};
    if (axes)
      ops.push_back(axes);
    results = create(type == "Squeeze" ? "dist.squeeze" : "dist.unsqueeze", loc,
                     ops, attrs, 1);
  } else if (type == "Split") {
    if (failed(need(1)))
      return failure();
    Value split = opset >= 13 ? input(1) : intsOperand("split");
    int64_t n = node.output_size();
    if (auto num = intAttr("num_outputs"); num && *num != n)
      return error(loc) << "Split has num_outputs = " << *num << " but " << n
                        << " outputs";
    addI("axis", intAttr("axis").value_or(0));
    addI("num_outputs", n);
    SmallVector<Value> ops{input(0)};
    if (split)
      ops.push_back(split);
    results = create("dist.split", loc, ops, attrs, n);
  } else if (type == "Slice") {
    if (failed(need(1)))
      return failure();
    Value starts = input(1), ends = input(2), axes = input(3), steps = input(4);
    if (opset < 10) {
      starts = intsOperand("starts");
      ends = intsOperand("ends");
      axes = intsOperand("axes");
      steps = Value();
    }
    if (!starts || !ends)
      return attrError
                 ? failure()
                 : (error(loc) << "Slice needs starts and ends", failure());
    SmallVector<Value> ops{input(0), starts, ends};
    if (axes)
      ops.push_back(axes);
    if (steps)
      ops.push_back(steps);
    results = create("dist.slice", loc, ops, attrs, 1,
                     {1, 1, 1, axes ? 1 : 0, steps ? 1 : 0});
  } else if (type == "Pad") {
    if (failed(need(1)))
      return failure();
    std::string mode = stringAttr("mode").value_or("constant");
    Value pads = input(1), value = input(2), axes = input(3);
    if (opset < 11) {
      pads = intsOperand("pads");
      if (mode == "constant")
        value = constScalar(elt0, floatAttr("value").value_or(0.0f), loc);
    }
    if (!pads)
      return attrError ? failure()
                       : (error(loc) << "Pad needs pads", failure());
    attrs.push_back(builder.getNamedAttr("mode", builder.getStringAttr(mode)));
    SmallVector<Value> ops{input(0), pads};
    if (value)
      ops.push_back(value);
    if (axes)
      ops.push_back(axes);
    results = create("dist.pad", loc, ops, attrs, 1,
                     {1, 1, value ? 1 : 0, axes ? 1 : 0});
  } else if (type == "TopK") {
    if (failed(need(1)))
      return failure();
    Value k = input(1);
    if (opset < 10) {
      auto kv = intAttr("k");
      if (!kv)
        return attrError
                   ? failure()
                   : (error(loc) << "TopK needs attribute 'k'", failure());
      k = constI64({*kv}, loc);
    }
    if (!k)
      return error(loc) << "TopK needs input K";
    for (StringRef a : {"axis", "largest", "sorted"})
      if (auto v = intAttr(a))
        addI(a, *v);
    results = create("dist.top_k", loc, {input(0), k}, attrs, 2);
  } else if (type == "Einsum" && !attrMap.count("equation")) {
    return error(loc) << "Einsum needs attribute 'equation'";
  } else if (type == "IsNaN") {
    // x != x, the one value unequal to itself (the emitted code keeps NaN
    // semantics: no nnan flag).
    if (failed(need(1)))
      return failure();
    auto same = create("dist.equal", loc, {input(0), input(0)}, {}, 1);
    if (failed(same))
      return failure();
    results = create("dist.not", loc, {(*same)[0]}, {}, 1);
  } else if (type == "IsInf") {
    // x == +inf (detect_positive, default 1) or x == -inf (detect_negative,
    // default 1).
    if (failed(need(1)))
      return failure();
    bool pos = intAttr("detect_positive").value_or(1) != 0;
    bool neg = intAttr("detect_negative").value_or(1) != 0;
    if (attrError)
      return failure();
    SmallVector<Value> hits;
    for (auto [want, sign] : {std::pair(pos, 1.0), std::pair(neg, -1.0)}) {
      if (!want)
        continue;
      Value inf = constScalar(
          elt0, sign * std::numeric_limits<double>::infinity(), loc);
      auto eq = create("dist.equal", loc, {input(0), inf}, {}, 1);
      if (failed(eq))
        return failure();
      hits.push_back((*eq)[0]);
    }
    if (hits.empty()) {
      // Neither: all false, shaped like x.
      auto eq = create("dist.equal", loc, {input(0), input(0)}, {}, 1);
      if (failed(eq))
        return failure();
      auto t = create("dist.not", loc, {(*eq)[0]}, {}, 1);
      if (failed(t))
        return failure();
      results = create("dist.and", loc, {(*eq)[0], (*t)[0]}, {}, 1);
    } else if (hits.size() == 1) {
      results = SmallVector<Value>{hits[0]};
    } else {
      results = create("dist.or", loc, hits, {}, 1);
    }
  } else if (type == "DepthToSpace" || type == "SpaceToDepth") {
    // Reshape, transpose, reshape (ONNX's definitions); the batch may be
    // dynamic (a 0 in a shape copies it), the other dims must be known.
    if (failed(need(1)))
      return failure();
    auto t = dyn_cast<RankedTensorType>(input(0).getType());
    std::optional<int64_t> bs = intAttr("blocksize");
    std::string mode = stringAttr("mode").value_or("DCR");
    if (attrError)
      return failure();
    if (!bs || *bs < 1)
      return error(loc) << type << " needs a positive 'blocksize'";
    if (!t || t.getRank() != 4 ||
        llvm::any_of(t.getShape().drop_front(), ShapedType::isDynamic))
      return error(loc) << type
                        << " needs a 4-D input whose channels, height and "
                           "width are known";
    if (mode != "DCR" && mode != "CRD")
      return error(loc) << "DepthToSpace mode '" << mode
                        << "' is not DCR or CRD";
    int64_t b = *bs, c = t.getDimSize(1), h = t.getDimSize(2),
            w = t.getDimSize(3);
    SmallVector<int64_t> split, perm, merged;
    if (type == "DepthToSpace") {
      if (c % (b * b) != 0)
        return error(loc) << "DepthToSpace: " << c
                          << " channels are not a multiple of blocksize^2 = "
                          << b * b;
      if (mode == "DCR") {
        split = {0, b, b, c / (b * b), h, w};
        perm = {0, 3, 4, 1, 5, 2};
      } else {
        split = {0, c / (b * b), b, b, h, w};
        perm = {0, 1, 4, 2, 5, 3};
      }
      merged = {0, c / (b * b), h * b, w * b};
    } else {
      if (h % b != 0 || w % b != 0)
        return error(loc) << "SpaceToDepth: height " << h << " and width " << w
                          << " are not multiples of blocksize " << b;
      split = {0, c, h / b, b, w / b, b};
      perm = {0, 3, 5, 1, 2, 4};
      merged = {0, c * b * b, h / b, w / b};
    }
    auto r1 =
        create("dist.reshape", loc, {input(0), constI64(split, loc)}, {}, 1);
    if (failed(r1))
      return failure();
    auto tr = create(
        "dist.transpose", loc, {(*r1)[0]},
        {builder.getNamedAttr("perm", builder.getDenseI64ArrayAttr(perm))}, 1);
    if (failed(tr))
      return failure();
    results =
        create("dist.reshape", loc, {(*tr)[0], constI64(merged, loc)}, {}, 1);
  } else if (resizeLike) {
    if (failed(need(1)))
      return failure();
    ResizeSpec spec;
    // Upsample and Resize-10 map output index o to o / scale and take the
    // floor for nearest (Upsample's definition).
    bool legacy = type == "Upsample" || opset < 11;
    spec.mode = stringAttr("mode").value_or("nearest");
    spec.coordinates = legacy ? "asymmetric"
                              : stringAttr("coordinate_transformation_mode")
                                    .value_or("half_pixel");
    spec.nearestMode =
        legacy ? "floor"
               : stringAttr("nearest_mode").value_or("round_prefer_floor");
    spec.antialias = intAttr("antialias").value_or(0);
    spec.cubicA = floatAttr("cubic_coeff_a").value_or(-0.75f);
    spec.extrapolation = floatAttr("extrapolation_value").value_or(0.0f);
    spec.excludeOutside = intAttr("exclude_outside").value_or(0) != 0;
    spec.axes = intsAttr("axes");
    spec.aspectPolicy =
        stringAttr("keep_aspect_ratio_policy").value_or("stretch");
    if (type == "Upsample" && opset < 9)
      if (auto *a = getAttr("scales", onnx::AttributeProto::FLOATS))
        spec.scalesAttr =
            SmallVector<double>(a->floats().begin(), a->floats().end());
    if (attrError)
      return failure();
    FailureOr<Value> r = importResize(node, loc, input(0), spec);
    if (failed(r))
      return failure();
    results = SmallVector<Value>{*r};
  } else if (auto it = directOps().find(type); it != directOps().end()) {
    if (present.empty())
      return error(loc) << type << " needs at least one input";
    unsigned numResults = type == "SoftmaxCrossEntropyLoss" ? 2 : 1;
    if (type == "LayerNormalization")
      numResults = 3;
    // Optional inputs in the middle are not allowed by these ops.
    for (size_t i = 0; i < in.size(); ++i)
      if (!in[i] && i + 1 < in.size() && in[i + 1])
        return error(loc) << type << " input #" << i
                          << " is empty but a later input is given";
    results = create(distName(it->second), loc, present, attrs, numResults);
  } else {
    return error(loc) << "unsupported op '" << type << "' (opset " << opset
                      << ")";
  }
  if (failed(results))
    return failure();

  // Map node outputs to results.
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string &name = node.output(i);
    if (name.empty())
      continue;
    if (i >= static_cast<int>(results->size()))
      return error(loc) << type << " output #" << i << " ('" << name
                        << "') is not supported";
    if (values.count(name) || initializers.count(name))
      return error(loc) << "value '" << name
                        << "' is defined more than once (ONNX graphs are SSA)";
    values[name] = (*results)[i];
  }
  return success();
}
