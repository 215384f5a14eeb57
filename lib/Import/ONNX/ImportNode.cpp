//===- ImportNode.cpp - one ONNX node to dist ops -------------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Importer::importNode: checks the node against the opset table, reads its
// inputs and attributes (rejecting attributes that the model's opset turned
// into inputs, and rewriting the explicit broadcasting of opsets before 7),
// copies the attributes the table lists, then dispatches on the op type to
// the op importer registered for it (Import<Family>.cpp) or, for ops that
// map one to one, to importDirect, and binds the node's outputs to the
// results. Also the attribute readers and helpers of NodeImport.
//
//===----------------------------------------------------------------------===//

#include "NodeImport.h"

#include "dist/Dialect/Dist/IR/DistDialect.h"

#include <cassert>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::detail;

//===----------------------------------------------------------------------===//
// NodeImport
//===----------------------------------------------------------------------===//

static const char *attrTypeName(int type) {
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

SmallVector<Value> NodeImport::present() const {
  SmallVector<Value> given;
  for (Value v : in)
    if (v)
      given.push_back(v);
  return given;
}

LogicalResult NodeImport::need(size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (!input(i))
      return error() << type << " needs input #" << i;
  return success();
}

const onnx::AttributeProto *NodeImport::getAttr(StringRef name, int kind) {
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
      error() << "attribute '" << name << "' of " << type << " must be "
              << attrTypeName(kind) << ", got " << attrTypeName(actual);
    attrError = true;
    return nullptr;
  }
  return a;
}

std::optional<int64_t> NodeImport::intAttr(StringRef name) {
  if (auto *a = getAttr(name, onnx::AttributeProto::INT))
    return a->i();
  return std::nullopt;
}

std::optional<float> NodeImport::floatAttr(StringRef name) {
  if (auto *a = getAttr(name, onnx::AttributeProto::FLOAT))
    return a->f();
  return std::nullopt;
}

std::optional<SmallVector<int64_t>> NodeImport::intsAttr(StringRef name) {
  if (auto *a = getAttr(name, onnx::AttributeProto::INTS))
    return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
  return std::nullopt;
}

std::optional<std::string> NodeImport::stringAttr(StringRef name) {
  if (auto *a = getAttr(name, onnx::AttributeProto::STRING))
    return a->s();
  return std::nullopt;
}

Value NodeImport::intsOperand(StringRef name) {
  if (auto v = intsAttr(name))
    return constI64(*v);
  return Value();
}

void NodeImport::addI(StringRef name, int64_t v) {
  attrs.push_back(builder.getNamedAttr(name, builder.getI64IntegerAttr(v)));
}

void NodeImport::addF(StringRef name, float v) {
  attrs.push_back(builder.getNamedAttr(name, builder.getF32FloatAttr(v)));
}

FailureOr<Value> NodeImport::appendUnitDims(Value v, int64_t count) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || count <= 0)
    return v;
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < count; ++i)
    axes.push_back(t.getRank() + i);
  auto r = create("dist.unsqueeze", {v, constI64(axes)}, {}, 1);
  if (failed(r))
    return failure();
  return (*r)[0];
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

NodeResults mlir::dist::detail::importDirect(NodeImport &n) {
  SmallVector<Value> present = n.present();
  if (present.empty())
    return n.error() << n.type << " needs at least one input";
  // Optional inputs in the middle are not allowed by these ops.
  for (size_t i = 0; i < n.in.size(); ++i)
    if (!n.in[i] && i + 1 < n.in.size() && n.in[i + 1])
      return n.error() << n.type << " input #" << i
                       << " is empty but a later input is given";
  std::string distName = NodeImport::distName(n.entry.direct);
  if (unsigned least = n.imp.minOperands(distName); present.size() < least)
    return n.error() << n.type << " needs at least " << least << " inputs, got "
                     << present.size();
  return n.create(distName, present, n.attrs, n.entry.directResults);
}

/// The op importers of every family, by ONNX op type.
static const NodeImporterMap &nodeImporters() {
  static const NodeImporterMap importers = [] {
    NodeImporterMap map;
    populateConstantImporters(map);
    populateElementwiseImporters(map);
    populateLinearAlgebraImporters(map);
    populateReductionImporters(map);
    populateShapeImporters(map);
    populateIndexingImporters(map);
#ifndef NDEBUG
    for (const auto &importer : map)
      assert(lookupOpsetEntry(importer.getKey()) &&
             "an op importer for an op missing from the opset table");
    for (const auto &entry : getOpsetTable())
      assert((map.count(entry.getKey()) || !entry.getValue().direct.empty()) &&
             "an op in the opset table with no way to import it");
#endif
    return map;
  }();
  return importers;
}

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
  const OpsetEntry *entry = lookupOpsetEntry(type);
  if (!entry)
    return error(loc) << "unsupported op '" << type << "' (opset " << opset
                      << ")";
  if (entry->since > opset)
    return error(loc) << "op '" << type << "' does not exist in opset " << opset
                      << " (it was added in opset " << entry->since << ")";

  NodeImport n(*this, node, loc, *entry);
  for (const onnx::AttributeProto &a : node.attribute())
    n.attrMap[a.name()] = &a;

  // Opsets before 7 had an explicit, axis-aligned broadcast for binary ops:
  // B's dims line up with A's from `axis` on (default: the trailing dims).
  // It is rewritten below into numpy broadcasting by appending size-1 dims
  // to B. Gemm's C broadcasts unidirectionally in every opset.
  bool legacyBroadcast =
      opset < 7 && n.intAttr("broadcast").value_or(0) != 0 && type != "Gemm";
  std::optional<int64_t> legacyAxis =
      opset < 7 ? n.intAttr("axis") : std::nullopt;

  // Inputs ("" marks an absent optional input). Resize's and Upsample's
  // roi, scales and sizes are read as constants by their importer, never
  // materialised (a float initializer would become a parameter).
  for (const std::string &name : node.input()) {
    if (name.empty() || (entry->constantOperands && !n.in.empty())) {
      n.in.push_back(Value());
      continue;
    }
    FailureOr<Value> v = lookup(name, loc);
    if (failed(v))
      return failure();
    n.in.push_back(*v);
  }
  // Attributes that later opsets turned into inputs are errors there (they
  // would otherwise be ignored silently); before, the op takes one input.
  if (entry->inputsSince != 0 && opset >= entry->inputsSince) {
    for (const char *attr : entry->inputAttrs)
      if (n.attrMap.count(attr))
        return error(loc) << "attribute '" << attr << "' of " << type
                          << " is an input since opset " << entry->inputsSince
                          << " (model opset " << opset << ")";
  }
  if (entry->inputsSince != 0 && opset < entry->inputsSince && n.in.size() > 1)
    return error(loc) << type << " takes at most 1 input before opset "
                      << entry->inputsSince << ", got " << n.in.size()
                      << " (opset " << opset << ")";

  if (legacyBroadcast && n.in.size() >= 2 && n.in[0] && n.in[1]) {
    auto a = dyn_cast<RankedTensorType>(n.in[0].getType());
    auto b = dyn_cast<RankedTensorType>(n.in[1].getType());
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
    auto r = n.appendUnitDims(n.in[1], a.getRank() - axis - b.getRank());
    if (failed(r))
      return failure();
    n.in[1] = *r;
  }

  // Copy the attributes that map one to one.
  for (const AttrSpec &spec : entry->copiedAttrs) {
    switch (spec.kind) {
    case AttrSpec::Int:
      if (auto v = n.intAttr(spec.onnxName))
        n.addI(spec.distName, *v);
      break;
    case AttrSpec::Float:
      if (auto v = n.floatAttr(spec.onnxName))
        n.addF(spec.distName, *v);
      break;
    case AttrSpec::String:
      if (auto v = n.stringAttr(spec.onnxName))
        n.attrs.push_back(
            builder.getNamedAttr(spec.distName, builder.getStringAttr(*v)));
      break;
    case AttrSpec::Ints:
      if (auto v = n.intsAttr(spec.onnxName))
        n.attrs.push_back(builder.getNamedAttr(
            spec.distName, builder.getDenseI64ArrayAttr(*v)));
      break;
    case AttrSpec::Tensor:
      if (auto *a = n.getAttr(spec.onnxName, onnx::AttributeProto::TENSOR)) {
        FailureOr<DenseElementsAttr> t = tensorAttr(
            a->t(), loc, "attribute '" + std::string(spec.onnxName) + "'");
        if (failed(t))
          return failure();
        n.attrs.push_back(builder.getNamedAttr(spec.distName, *t));
      }
      break;
    }
  }
  if (n.attrError)
    return failure();

  NodeResults results = failure();
  if (NodeImporter importer = nodeImporters().lookup(type))
    results = importer(n);
  else if (!entry->direct.empty())
    results = importDirect(n);
  else
    return error(loc) << "unsupported op '" << type << "' (opset " << opset
                      << ")";
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
