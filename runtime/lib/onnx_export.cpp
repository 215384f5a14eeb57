//===- onnx_export.cpp - Write the trained model back as ONNX ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// `train --export-onnx`: copies the model the artifact was compiled from
// (kept as <name>.onnx next to it) with every initializer that is a frozen
// or trained parameter replaced by its current value. The runtime has no
// protobuf dependency, so this edits the wire format directly: ModelProto
// field 7 (graph) -> GraphProto field 5 (initializer, a TensorProto) whose
// field 8 (name) names a parameter is re-encoded as dims (1), data_type (2),
// name (8) and raw_data (9, little-endian); every other field is copied
// byte for byte. That is all it takes, and it keeps everything the compiler
// did not look at (metadata, functions, other initializers) intact.
//
// Tables on parameter servers are never whole in the worker: their rows
// are streamed from the servers, a piece at a time, into `<dest>.data`
// (ONNX external data: data_location (14) EXTERNAL and external_data (13)
// entries location, offset and length), beside the model. Tables that the
// model declared as graph inputs without values (dist-opt --ps-init)
// become initializers; their graph inputs are dropped.
//
//===----------------------------------------------------------------------===//

#include "driver.h"
#include "internal.h"
#include "model_internal.h"

#include "dist_rt/model.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

/// Protobuf wire types.
enum : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

bool readVarint(const uint8_t *&p, const uint8_t *end, uint64_t &value) {
  value = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t byte = *p++;
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return true;
  }
  return false;
}

void writeVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

/// One field of a message: its number, wire type, the bytes of the whole
/// field (tag included) and, for length-delimited fields, the payload.
struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  const uint8_t *begin = nullptr, *end = nullptr;
  const uint8_t *payload = nullptr;
  size_t payloadSize = 0;
  /// The value of a varint field.
  uint64_t varint = 0;
};

/// Reads the field at `p`; false on malformed or truncated input.
bool nextField(const uint8_t *&p, const uint8_t *end, Field &f) {
  f.begin = p;
  uint64_t tag;
  if (!readVarint(p, end, tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
    return false;
  f.number = static_cast<uint32_t>(tag >> 3);
  f.wire = static_cast<uint32_t>(tag & 7);
  uint64_t v;
  switch (f.wire) {
  case kVarint:
    if (!readVarint(p, end, f.varint))
      return false;
    break;
  case kFixed64:
    if (end - p < 8)
      return false;
    p += 8;
    break;
  case kFixed32:
    if (end - p < 4)
      return false;
    p += 4;
    break;
  case kBytes:
    if (!readVarint(p, end, v) || v > static_cast<uint64_t>(end - p))
      return false;
    f.payload = p;
    f.payloadSize = static_cast<size_t>(v);
    p += v;
    break;
  default:
    return false;
  }
  f.end = p;
  return true;
}

void writeBytesField(std::string &out, uint32_t number, const void *data,
                     size_t size) {
  writeVarint(out, (static_cast<uint64_t>(number) << 3) | kBytes);
  writeVarint(out, size);
  out.append(static_cast<const char *>(data), size);
}

void writeVarintField(std::string &out, uint32_t number, uint64_t value) {
  writeVarint(out, (static_cast<uint64_t>(number) << 3) | kVarint);
  writeVarint(out, value);
}

/// The TensorProto of parameter `t` under `name`.
std::string encodeTensor(const std::string &name, const dist_rt_tensor_t &t) {
  std::string out;
  size_t count = 1;
  for (uint32_t i = 0; i < t.rank; ++i) {
    writeVarintField(out, 1, static_cast<uint64_t>(t.dims[i]));
    count *= static_cast<size_t>(t.dims[i]);
  }
  writeVarintField(out, 2, t.dtype);
  writeBytesField(out, 8, name.data(), name.size());
  writeBytesField(out, 9, t.data, count * dist_rt_dtype_size(t.dtype));
  return out;
}

/// The external data file of the tables (see the header's comment),
/// written beside the model under a temporary name and moved into place by
/// commit(); removed when not committed.
class TableData {
public:
  TableData(dist_rt_model_t model, const std::string &dest)
      : model(model), path(dest + ".data") {
    size_t slash = path.rfind('/');
    location = slash == std::string::npos ? path : path.substr(slash + 1);
  }
  TableData(const TableData &) = delete;
  TableData &operator=(const TableData &) = delete;
  ~TableData() {
    if (fd >= 0)
      ::close(fd);
    if (!tempPath.empty())
      ::unlink(tempPath.c_str());
  }

  /// Streams table `index` (named `name`) from the servers and returns its
  /// TensorProto, pointing at the rows in the file.
  bool add(uint32_t index, const std::string &name, std::string &tensor,
           std::string &error) {
    if (fd < 0) {
      tempPath = path + ".tmp.XXXXXX";
      fd = ::mkstemp(&tempPath[0]);
      if (fd < 0) {
        tempPath.clear();
        error = dist_rt::driver::errnoMessage(
            "--export-onnx: cannot create a file next to '" + path + "'",
            errno);
        return false;
      }
      (void)::fchmod(fd, 0644);
    }
    const dist_rt_tensor_desc_t &t = dist_rt_model_desc(model)->params[index];
    int64_t rows = t.dims[0], dim = t.dims[1];
    uint64_t start = offset;
    const int64_t piece = 4096;
    std::vector<float> buffer(static_cast<size_t>(piece * dim));
    for (int64_t first = 0; first < rows; first += piece) {
      int64_t n = std::min(piece, rows - first);
      if (dist_rt_status_t status = dist_rt::model_impl::psReadRows(
              *model, index, first, n, buffer.data())) {
        error = dist_rt_status_message(status);
        dist_rt_status_free(status);
        return false;
      }
      size_t bytes = static_cast<size_t>(n * dim) * sizeof(float);
      if (!dist_rt::writeFully(fd, buffer.data(), bytes)) {
        error = dist_rt::driver::errnoMessage(
            "--export-onnx: cannot write '" + path + "'", errno);
        return false;
      }
      offset += bytes;
    }
    tensor.clear();
    writeVarintField(tensor, 1, static_cast<uint64_t>(rows));
    writeVarintField(tensor, 1, static_cast<uint64_t>(dim));
    writeVarintField(tensor, 2, DIST_RT_DTYPE_FLOAT);
    writeBytesField(tensor, 8, name.data(), name.size());
    auto entry = [&](const std::string &key, const std::string &value) {
      std::string e;
      writeBytesField(e, 1, key.data(), key.size());
      writeBytesField(e, 2, value.data(), value.size());
      writeBytesField(tensor, 13, e.data(), e.size());
    };
    entry("location", location);
    entry("offset", std::to_string(start));
    entry("length", std::to_string(offset - start));
    writeVarintField(tensor, 14, 1); // EXTERNAL
    return true;
  }

  /// Moves the file into place (nothing when no table was added).
  bool commit(std::string &error) {
    if (fd < 0)
      return true;
    bool ok = ::fsync(fd) == 0;
    ok = ::close(fd) == 0 && ok;
    fd = -1;
    if (!ok || ::rename(tempPath.c_str(), path.c_str()) != 0) {
      error = dist_rt::driver::errnoMessage(
          "--export-onnx: cannot write '" + path + "'", errno);
      return false;
    }
    tempPath.clear();
    return true;
  }

private:
  dist_rt_model_t model;
  std::string path, location, tempPath;
  int fd = -1;
  uint64_t offset = 0;
};

} // namespace

bool dist_rt::driver::exportOnnx(dist_rt_model_t model,
                                 const WholeParams &params,
                                 const std::string &source,
                                 const std::string &dest, std::string &error) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
                "raw_data is little-endian");
  const dist_rt_model_desc_t &desc = *dist_rt_model_desc(model);
  std::string bytes;
  // Protobuf's own limit for one message.
  if (!readWholeFile(source, size_t{2} << 30, bytes, error))
    return false;
  // Parameters that go back into the model, by name.
  std::map<std::string, uint32_t> wanted;
  for (uint32_t i = 0; i < desc.num_params; ++i)
    if (desc.train->param_roles[i] != DIST_RT_PARAM_STATE)
      wanted[desc.params[i].name] = i;

  auto malformed = [&](const char *what) {
    error = source + ": not a valid ONNX model (" + what + ")";
    return false;
  };
  const auto *p = reinterpret_cast<const uint8_t *>(bytes.data());
  const uint8_t *end = p + bytes.size();
  std::string out;
  TableData tables(model, dest);
  bool sawGraph = false;
  while (p < end) {
    Field f;
    if (!nextField(p, end, f))
      return malformed("truncated or corrupt model");
    if (f.number != 7 || f.wire != kBytes) {
      out.append(reinterpret_cast<const char *>(f.begin), f.end - f.begin);
      continue;
    }
    sawGraph = true;
    std::string graph;
    const uint8_t *g = f.payload, *gend = f.payload + f.payloadSize;
    // The name (field `nameField`) and data type (field 2, TensorProto's)
    // of the message `m`.
    auto nameOf = [](const Field &m, uint32_t nameField, std::string &name,
                     uint64_t &dataType) {
      const uint8_t *t = m.payload, *tend = m.payload + m.payloadSize;
      while (t < tend) {
        Field tf;
        if (!nextField(t, tend, tf))
          return false;
        if (tf.number == nameField && tf.wire == kBytes)
          name.assign(reinterpret_cast<const char *>(tf.payload),
                      tf.payloadSize);
        if (tf.number == 2 && tf.wire == kVarint)
          dataType = tf.varint;
      }
      return true;
    };
    // Tables declared as graph inputs (dist-opt --ps-init) become
    // initializers: their graph inputs are dropped, the values appended.
    std::map<std::string, uint32_t> declared = wanted;
    for (const uint8_t *q = g; q < gend;) {
      Field gf;
      std::string name;
      uint64_t dataType = 0;
      if (!nextField(q, gend, gf))
        return malformed("corrupt graph");
      if (gf.number == 5 && gf.wire == kBytes && nameOf(gf, 8, name, dataType))
        declared.erase(name);
    }
    for (auto it = declared.begin(); it != declared.end();)
      it = desc.train->param_roles[it->second] == DIST_RT_PARAM_PS
               ? std::next(it)
               : declared.erase(it);
    while (g < gend) {
      Field gf;
      if (!nextField(g, gend, gf))
        return malformed("corrupt graph");
      bool replaced = false;
      if (gf.number == 11 && gf.wire == kBytes) {
        // A graph input (ValueInfoProto, name in field 1).
        std::string name;
        uint64_t unused = 0;
        if (!nameOf(gf, 1, name, unused))
          return malformed("corrupt graph input");
        replaced = declared.count(name) != 0;
      }
      if (gf.number == 5 && gf.wire == kBytes) {
        // An initializer: find its name and data type.
        std::string name;
        uint64_t dataType = 0;
        if (!nameOf(gf, 8, name, dataType))
          return malformed("corrupt initializer");
        auto it = wanted.find(name);
        if (it != wanted.end() &&
            desc.train->param_roles[it->second] == DIST_RT_PARAM_PS) {
          std::string tensor;
          if (!tables.add(it->second, name, tensor, error))
            return false;
          writeBytesField(graph, 5, tensor.data(), tensor.size());
          wanted.erase(it);
          replaced = true;
        } else if (it != wanted.end()) {
          dist_rt_tensor_t value;
          if (dist_rt_status_t status = params.get(it->second, value)) {
            error = dist_rt_status_message(status);
            dist_rt_status_free(status);
            return false;
          }
          if (dataType != value.dtype) {
            error = source + ": initializer '" + name + "' has data type " +
                    std::to_string(dataType) + ", the compiled parameter " +
                    std::to_string(value.dtype);
            return false;
          }
          std::string tensor = encodeTensor(name, value);
          writeBytesField(graph, 5, tensor.data(), tensor.size());
          wanted.erase(it);
          replaced = true;
        }
      }
      if (!replaced)
        graph.append(reinterpret_cast<const char *>(gf.begin),
                     gf.end - gf.begin);
    }
    for (const auto &[name, index] : declared) {
      std::string tensor;
      if (!tables.add(index, name, tensor, error))
        return false;
      writeBytesField(graph, 5, tensor.data(), tensor.size());
      wanted.erase(name);
    }
    writeBytesField(out, 7, graph.data(), graph.size());
  }
  if (!sawGraph)
    return malformed("no graph");
  if (!wanted.empty()) {
    error = "parameter '" + wanted.begin()->first +
            "' is not an initializer of " + source +
            ", so it cannot be exported";
    return false;
  }
  // The tables' data first: the model never names a missing file.
  return tables.commit(error) && writeFileAtomically(dest, out, error);
}
