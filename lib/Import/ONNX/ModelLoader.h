//===- ModelLoader.h - exception-safe ONNX parsing ----------------*- C++
//-*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Reads ONNX models (binary protobuf or ONNX text format) and serialized
// TensorProto files. The ONNX library's text parser throws C++ exceptions on
// malformed numbers, so these functions live in a translation unit built
// with exceptions and never let one escape.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_LIB_IMPORT_ONNX_MODELLOADER_H
#define DIST_LIB_IMPORT_ONNX_MODELLOADER_H

#include "onnx/onnx_pb.h"

#include <string>

namespace mlir::dist::detail {

/// Parses `size` bytes as a model: ONNX text format when the first
/// non-blank byte is `<` or `textFormat` is set, binary protobuf otherwise.
/// Returns an empty string on success, else a one-line error message.
std::string parseModel(const char *data, size_t size, bool textFormat,
                       onnx::ModelProto &model);

/// Parses a serialized TensorProto.
std::string parseTensor(const char *data, size_t size,
                        onnx::TensorProto &tensor);

} // namespace mlir::dist::detail

#endif // DIST_LIB_IMPORT_ONNX_MODELLOADER_H
