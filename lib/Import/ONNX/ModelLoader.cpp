//===- ModelLoader.cpp - exception-safe ONNX parsing ----------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Built with -fexceptions: wraps ONNX's text parser (which throws from
// std::stoll and friends on malformed numbers) and protobuf parsing so that
// malformed input becomes an error message, never an escaping exception.
//
//===----------------------------------------------------------------------===//

#include "ModelLoader.h"

#include "onnx/defs/parser.h"

#include <exception>
#include <string>

using namespace mlir::dist::detail;

/// Keeps messages on one line.
static std::string oneLine(std::string s) {
  for (char &c : s)
    if (c == '\n' || c == '\r')
      c = ' ';
  while (!s.empty() && s.back() == ' ')
    s.pop_back();
  return s;
}

std::string mlir::dist::detail::parseModel(const char *data, size_t size,
                                           bool textFormat,
                                           onnx::ModelProto &model) {
  if (size == 0)
    return "file is empty";
  size_t first = 0;
  while (first < size && (data[first] == ' ' || data[first] == '\t' ||
                          data[first] == '\n' || data[first] == '\r'))
    ++first;
  bool text = textFormat || (first < size && data[first] == '<');
  if (!text) {
    if (size > static_cast<size_t>(INT32_MAX))
      return "model is larger than 2 GiB; store weights as external data";
    try {
      if (!model.ParseFromArray(data, static_cast<int>(size)))
        return "not a valid ONNX model (protobuf parse failed: truncated or "
               "corrupt file)";
    } catch (...) {
      return "not a valid ONNX model";
    }
    return "";
  }
  // The text parser needs a NUL-terminated string without embedded NULs.
  std::string buffer(data, size);
  if (buffer.find('\0') != std::string::npos)
    return "not a valid ONNX text model (contains NUL bytes)";
  onnx::OnnxParser parser(buffer.c_str());
  try {
    onnx::Status status = parser.Parse(model);
    if (!status.IsOK())
      return "ONNX text parse error: " + oneLine(status.ErrorMessage());
    if (!parser.EndOfInput())
      return "ONNX text parse error: unexpected text after the graph";
    return "";
  } catch (const std::exception &e) {
    // std::stoll and friends throw on numbers out of range.
    std::string where;
    try {
      where = " at position " + parser.GetCurrentPos();
    } catch (...) {
    }
    return "ONNX text parse error" + where + ": bad number (" +
           oneLine(e.what()) + ")";
  } catch (...) {
    return "ONNX text parse error";
  }
}

std::string mlir::dist::detail::parseTensor(const char *data, size_t size,
                                            onnx::TensorProto &tensor) {
  try {
    if (size > static_cast<size_t>(INT32_MAX) ||
        !tensor.ParseFromArray(data, static_cast<int>(size)))
      return "not a valid serialized TensorProto";
    return "";
  } catch (...) {
    return "not a valid serialized TensorProto";
  }
}
