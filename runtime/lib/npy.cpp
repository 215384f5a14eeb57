//===- npy.cpp - NumPy .npy reader and writer -------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_npy_read/write/free. The header dictionary is parsed
// by a small recursive-descent parser that accepts exactly the Python
// literal subset NumPy writes ({'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }) and rejects everything else with a message that says
// what was expected. Files are read with plain read(2) so that pipes work
// too; writes go to a temporary file in the target directory that is
// renamed over the target once complete.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "dist_rt/npy.h"

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using dist_rt::makeStatus;
using dist_rt::writeFully;

namespace {

//===----------------------------------------------------------------------===//
// Format constants
//===----------------------------------------------------------------------===//

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
/// Headers are padded so that the data starts on this boundary.
constexpr size_t kHeaderAlignment = 64;
/// Largest header this reader accepts; NumPy's own headers are far smaller.
constexpr uint32_t kMaxHeaderSize = 1u << 20;
/// Alignment of the data buffers this reader returns.
constexpr size_t kDataAlignment = 64;

/// One supported element type.
struct NpyType {
  /// NumPy kind character ('f', 'i', 'u' or 'b').
  char kind;
  /// Size in bytes.
  unsigned size;
  /// DIST_RT_DTYPE_* code.
  uint32_t dtype;
};

constexpr NpyType kTypes[] = {
    {'f', 2, DIST_RT_DTYPE_FLOAT16}, {'f', 4, DIST_RT_DTYPE_FLOAT},
    {'f', 8, DIST_RT_DTYPE_DOUBLE},  {'i', 1, DIST_RT_DTYPE_INT8},
    {'i', 2, DIST_RT_DTYPE_INT16},   {'i', 4, DIST_RT_DTYPE_INT32},
    {'i', 8, DIST_RT_DTYPE_INT64},   {'u', 1, DIST_RT_DTYPE_UINT8},
    {'u', 2, DIST_RT_DTYPE_UINT16},  {'u', 4, DIST_RT_DTYPE_UINT32},
    {'u', 8, DIST_RT_DTYPE_UINT64},  {'b', 1, DIST_RT_DTYPE_BOOL},
};

const NpyType *findTypeByDtype(uint32_t dtype) {
  for (const NpyType &type : kTypes)
    if (type.dtype == dtype)
      return &type;
  return nullptr;
}

bool hostIsLittleEndian() {
  uint16_t probe = 1;
  unsigned char first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

/// Renders text taken from a file for a message.
std::string escaped(const std::string &text, size_t limit = 96) {
  std::vector<char> buffer(limit);
  dist_rt::escapeForMessage(text.data(), text.size(), buffer.data(),
                            buffer.size());
  return buffer.data();
}

/// Decodes a 'descr' string such as "<f4" into a dtype code. On failure
/// returns false and sets `error`.
bool decodeDescr(const std::string &descr, uint32_t &dtype,
                 std::string &error) {
  std::string quoted = "'" + escaped(descr) + "'";
  if (descr.size() < 2) {
    error = "unsupported dtype " + quoted;
    return false;
  }
  char order = descr[0];
  std::string code = descr.substr(1);
  if (order == '>' || (order == '=' && !hostIsLittleEndian())) {
    error = "big-endian dtype " + quoted + " is not supported";
    return false;
  }
  if (order != '<' && order != '|' && order != '=') {
    error = "unsupported dtype " + quoted + " (unknown byte order)";
    return false;
  }
  if (code == "?")
    code = "b1";
  char kind = code[0];
  unsigned size = 0;
  for (size_t i = 1; i < code.size(); ++i) {
    if (code[i] < '0' || code[i] > '9' || size > 1000) {
      size = 0;
      break;
    }
    size = size * 10 + static_cast<unsigned>(code[i] - '0');
  }
  for (const NpyType &type : kTypes) {
    if (type.kind == kind && type.size == size) {
      dtype = type.dtype;
      return true;
    }
  }
  error = "unsupported dtype " + quoted +
          " (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)";
  return false;
}

//===----------------------------------------------------------------------===//
// Header parser
//===----------------------------------------------------------------------===//

/// The fields of a .npy header.
struct Header {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// Parses the header dictionary. Accepts single- or double-quoted strings,
/// whitespace anywhere between tokens, trailing commas and Python 2 'L'
/// suffixes on integers.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text(text) {}

  /// Returns true on success; otherwise `error` says what is wrong.
  bool parse(Header &header, std::string &error);

private:
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }
  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[pos]; }

  /// Sets `error` to "expected <what> at offset N".
  bool fail(const char *what) {
    error = std::string("expected ") + what + " at offset " +
            std::to_string(pos) + " of the header dictionary";
    return false;
  }
  bool consume(char c, const char *what) {
    skipSpace();
    if (peek() != c)
      return fail(what);
    ++pos;
    return true;
  }
  bool parseString(std::string &out);
  bool parseBool(bool &out);
  bool parseShape(std::vector<int64_t> &out);

  const std::string &text;
  size_t pos = 0;
  std::string error;
};

bool HeaderParser::parseString(std::string &out) {
  skipSpace();
  char quote = peek();
  if (quote != '\'' && quote != '"')
    return fail("a quoted string");
  size_t start = ++pos;
  while (!atEnd() && text[pos] != quote) {
    if (text[pos] == '\\')
      return fail("a string without escapes");
    ++pos;
  }
  if (atEnd())
    return fail("the end of a string");
  out = text.substr(start, pos - start);
  ++pos;
  return true;
}

bool HeaderParser::parseBool(bool &out) {
  skipSpace();
  if (text.compare(pos, 4, "True") == 0) {
    out = true;
    pos += 4;
    return true;
  }
  if (text.compare(pos, 5, "False") == 0) {
    out = false;
    pos += 5;
    return true;
  }
  return fail("True or False");
}

bool HeaderParser::parseShape(std::vector<int64_t> &out) {
  if (!consume('(', "'(' starting the shape tuple"))
    return false;
  out.clear();
  while (true) {
    skipSpace();
    if (peek() == ')') {
      ++pos;
      return true;
    }
    if (peek() < '0' || peek() > '9')
      return fail("a non-negative integer in the shape");
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      int digit = peek() - '0';
      if (value > (INT64_MAX - digit) / 10)
        return fail("a shape extent that fits in 64 bits");
      value = value * 10 + digit;
      ++pos;
    }
    if (peek() == 'L' || peek() == 'l')
      ++pos;
    if (out.size() >= DIST_RT_NPY_MAX_RANK)
      return fail("at most 64 dimensions");
    out.push_back(value);
    skipSpace();
    if (peek() == ',') {
      ++pos;
      continue;
    }
    if (peek() != ')')
      return fail("',' or ')' in the shape tuple");
  }
}

bool HeaderParser::parse(Header &header, std::string &errorOut) {
  bool haveDescr = false, haveOrder = false, haveShape = false;
  auto finish = [&](bool ok) {
    if (!ok)
      errorOut = error;
    return ok;
  };
  if (!consume('{', "'{' starting the header dictionary"))
    return finish(false);
  while (true) {
    skipSpace();
    if (peek() == '}') {
      ++pos;
      break;
    }
    size_t keyPos = pos;
    std::string key;
    if (!parseString(key) || !consume(':', "':' after a key"))
      return finish(false);
    bool *seen = nullptr;
    bool ok = false;
    if (key == "descr") {
      seen = &haveDescr;
      skipSpace();
      if (peek() == '[' || peek() == '{') {
        error = "structured dtypes are not supported";
        return finish(false);
      }
      ok = parseString(header.descr);
    } else if (key == "fortran_order") {
      seen = &haveOrder;
      ok = parseBool(header.fortranOrder);
    } else if (key == "shape") {
      seen = &haveShape;
      ok = parseShape(header.shape);
    } else {
      error = "unexpected key '" + escaped(key) + "' at offset " +
              std::to_string(keyPos) + " of the header dictionary";
      return finish(false);
    }
    if (!ok)
      return finish(false);
    if (*seen) {
      error = "duplicate key '" + key + "' in the header dictionary";
      return finish(false);
    }
    *seen = true;
    skipSpace();
    if (peek() == ',') {
      ++pos;
      continue;
    }
    if (!consume('}', "',' or '}' in the header dictionary"))
      return finish(false);
    break;
  }
  skipSpace();
  if (!atEnd()) {
    fail("the end of the header after the dictionary");
    return finish(false);
  }
  const char *missing = !haveDescr   ? "descr"
                        : !haveOrder ? "fortran_order"
                        : !haveShape ? "shape"
                                     : nullptr;
  if (missing) {
    error = std::string("no '") + missing + "' key in the header dictionary";
    return finish(false);
  }
  return finish(true);
}

//===----------------------------------------------------------------------===//
// File helpers
//===----------------------------------------------------------------------===//

using dist_rt::readFully;

/// Closes `fd` when it goes out of scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};

dist_rt_status_t ioError(const char *path, const char *what, int error) {
  char errorText[128];
  return makeStatus(
      DIST_RT_ERROR_IO, "%s: %s: %s", path, what,
      dist_rt::describeErrno(error, errorText, sizeof(errorText)));
}

dist_rt_status_t formatError(const char *path, const std::string &detail) {
  return makeStatus(DIST_RT_ERROR_FORMAT, "%s: %s", path, detail.c_str());
}

dist_rt_status_t truncatedData(const char *path, const std::string &shapeText,
                               uint32_t dtype, uint64_t nbytes,
                               uint64_t available) {
  return makeStatus(DIST_RT_ERROR_FORMAT,
                    "%s: truncated data: shape %s (%s) needs %" PRIu64
                    " bytes of data but the file has %" PRIu64,
                    path, shapeText.c_str(), dist_rt_dtype_name(dtype), nbytes,
                    available);
}

/// Reads and checks the file; fills `array` on success.
dist_rt_status_t readNpy(const char *path, dist_rt_npy_array_t &array) {
  int fd;
  do {
    fd = ::open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return ioError(path, "cannot open", errno);
  FdCloser closer{fd};

  // Magic, version and header length.
  unsigned char prefix[12];
  int64_t got = readFully(fd, prefix, 8);
  if (got < 0)
    return ioError(path, "cannot read", errno);
  if (got == 0)
    return formatError(path, "file is empty (not a .npy file)");
  if (got < static_cast<int64_t>(kMagicSize) ||
      std::memcmp(prefix, kMagic, kMagicSize) != 0) {
    std::string found(reinterpret_cast<char *>(prefix),
                      static_cast<size_t>(got < 6 ? got : 6));
    return formatError(path, "bad magic '" + escaped(found) +
                                 "' (expected '\\x93NUMPY'); not a .npy file");
  }
  if (got < 8)
    return formatError(path, "truncated header: the file ends inside the "
                             "format version");
  unsigned major = prefix[6], minor = prefix[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return formatError(
        path, "unsupported .npy format version " + std::to_string(major) + "." +
                  std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  size_t lengthSize = major == 1 ? 2 : 4;
  got = readFully(fd, prefix + 8, lengthSize);
  if (got < 0)
    return ioError(path, "cannot read", errno);
  if (got < static_cast<int64_t>(lengthSize))
    return formatError(path, "truncated header: the file ends inside the "
                             "header length");
  uint32_t headerSize =
      static_cast<uint32_t>(prefix[8]) | static_cast<uint32_t>(prefix[9]) << 8;
  if (lengthSize == 4)
    headerSize |= static_cast<uint32_t>(prefix[10]) << 16 |
                  static_cast<uint32_t>(prefix[11]) << 24;
  if (headerSize > kMaxHeaderSize)
    return formatError(path, "header length " + std::to_string(headerSize) +
                                 " is larger than the supported " +
                                 std::to_string(kMaxHeaderSize) + " bytes");

  // The header dictionary.
  std::string headerText(headerSize, '\0');
  got = readFully(fd, &headerText[0], headerSize);
  if (got < 0)
    return ioError(path, "cannot read", errno);
  if (got < static_cast<int64_t>(headerSize))
    return formatError(
        path, "truncated header: expected " + std::to_string(headerSize) +
                  " header bytes, the file has " + std::to_string(got));
  Header header;
  std::string error;
  if (!HeaderParser(headerText).parse(header, error))
    return formatError(path, "malformed header: " + error + " (header: '" +
                                 escaped(headerText, 160) + "')");
  uint32_t dtype = 0;
  if (!decodeDescr(header.descr, dtype, error))
    return formatError(path, error);
  if (header.fortranOrder)
    return formatError(path, "fortran_order is True; only C-order arrays "
                             "are supported (save with "
                             "numpy.ascontiguousarray)");

  // The data.
  uint64_t count = 1;
  bool overflow = false;
  for (int64_t dim : header.shape)
    overflow |=
        __builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count);
  uint64_t nbytes = 0;
  overflow |= __builtin_mul_overflow(count, uint64_t{dist_rt_dtype_size(dtype)},
                                     &nbytes);
  std::string shapeText = dist_rt::formatShape(
      static_cast<uint32_t>(header.shape.size()), header.shape.data());
  if (overflow || nbytes > SIZE_MAX - kDataAlignment)
    return formatError(path, "shape " + shapeText + " is too large");

  // A regular file is checked for the data before anything is allocated:
  // a header of a few bytes must not make the reader ask for gigabytes.
  // (Pipes cannot say; their data is read into what the shape needs.)
  struct stat st;
  off_t offset = ::lseek(fd, 0, SEEK_CUR);
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && offset >= 0) {
    uint64_t available =
        st.st_size > offset ? static_cast<uint64_t>(st.st_size - offset) : 0;
    if (available < nbytes)
      return truncatedData(path, shapeText, dtype, nbytes, available);
  }

  auto rank = static_cast<uint32_t>(header.shape.size());
  int64_t *dims = nullptr;
  if (rank != 0) {
    dims = static_cast<int64_t *>(std::malloc(rank * sizeof(int64_t)));
    if (!dims)
      return makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY,
                        "%s: out of memory for the shape", path);
    std::memcpy(dims, header.shape.data(), rank * sizeof(int64_t));
  }
  void *data = nullptr;
  size_t allocSize = nbytes == 0
                         ? kDataAlignment
                         : (static_cast<size_t>(nbytes) + kDataAlignment - 1) &
                               ~(kDataAlignment - 1);
  if (posix_memalign(&data, kDataAlignment, allocSize) != 0) {
    std::free(dims);
    return makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY,
                      "%s: out of memory for %" PRIu64 " bytes of data", path,
                      nbytes);
  }
  got = readFully(fd, data, static_cast<size_t>(nbytes));
  if (got < 0 || static_cast<uint64_t>(got) < nbytes) {
    int readError = errno;
    std::free(data);
    std::free(dims);
    if (got < 0)
      return ioError(path, "cannot read", readError);
    return truncatedData(path, shapeText, dtype, nbytes,
                         static_cast<uint64_t>(got));
  }
  array.dtype = dtype;
  array.rank = rank;
  array.dims = dims;
  array.data = data;
  array.nbytes = nbytes;
  return nullptr;
}

/// Builds the padded header (magic, version, length and dictionary).
std::string buildHeader(const NpyType &type, uint32_t rank,
                        const int64_t *dims) {
  std::string dict = "{'descr': '";
  dict += type.size == 1 ? '|' : '<';
  dict += type.kind;
  dict += std::to_string(type.size);
  dict += "', 'fortran_order': False, 'shape': (";
  for (uint32_t d = 0; d < rank; ++d) {
    if (d != 0)
      dict += ", ";
    dict += std::to_string(dims[d]);
  }
  if (rank == 1)
    dict += ',';
  dict += "), }";

  // Version 1.0 stores the length in 2 bytes; fall back to 2.0 beyond that.
  size_t prefixSize = kMagicSize + 2 + 2;
  size_t total = (prefixSize + dict.size() + 1 + kHeaderAlignment - 1) /
                 kHeaderAlignment * kHeaderAlignment;
  unsigned major = 1;
  if (total - prefixSize > 0xffff) {
    major = 2;
    prefixSize = kMagicSize + 2 + 4;
    total = (prefixSize + dict.size() + 1 + kHeaderAlignment - 1) /
            kHeaderAlignment * kHeaderAlignment;
  }
  size_t dictSize = total - prefixSize;
  dict.append(dictSize - dict.size() - 1, ' ');
  dict += '\n';

  std::string header(kMagic, kMagicSize);
  header += static_cast<char>(major);
  header += '\0';
  for (size_t i = 0; i < prefixSize - kMagicSize - 2; ++i)
    header += static_cast<char>((dictSize >> (8 * i)) & 0xff);
  return header + dict;
}

/// Checks what writing a tensor of `dtype` and `dims` to `path` needs and
/// returns its .npy header and data size.
dist_rt_status_t prepareNpyWrite(const char *path, uint32_t dtype,
                                 uint32_t rank, const int64_t *dims,
                                 bool hasData, std::string &header,
                                 uint64_t &nbytes) {
  const NpyType *type = findTypeByDtype(dtype);
  if (!type)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: cannot write dtype %s (%" PRIu32
                      "): it has no .npy equivalent",
                      path, dist_rt_dtype_name(dtype), dtype);
  if (!hostIsLittleEndian())
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: writing .npy files is only supported on "
                      "little-endian hosts",
                      path);
  if (rank > DIST_RT_NPY_MAX_RANK)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: rank %" PRIu32 " exceeds the maximum of %d", path,
                      rank, DIST_RT_NPY_MAX_RANK);
  if (rank != 0 && !dims)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: dims is NULL for rank %" PRIu32, path, rank);
  uint64_t count = 1;
  bool overflow = false;
  for (uint32_t d = 0; d < rank; ++d) {
    if (dims[d] < 0)
      return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                        "%s: dim %" PRIu32 " is negative (%" PRId64 ")", path,
                        d, dims[d]);
    overflow |=
        __builtin_mul_overflow(count, static_cast<uint64_t>(dims[d]), &count);
  }
  nbytes = 0;
  overflow |= __builtin_mul_overflow(count, uint64_t{type->size}, &nbytes);
  if (overflow || nbytes > SIZE_MAX)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: shape %s is too large", path,
                      dist_rt::formatShape(rank, dims).c_str());
  if (nbytes != 0 && !hasData)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: data is NULL for %" PRIu64 " bytes", path, nbytes);
  header = buildHeader(*type, rank, dims);
  return nullptr;
}

dist_rt_status_t writeNpy(const char *path, uint32_t dtype, uint32_t rank,
                          const int64_t *dims, const void *data,
                          const dist_rt::NpyRowReader *readRows = nullptr,
                          int64_t rowsPerPiece = 0) {
  std::string header;
  uint64_t nbytes = 0;
  if (dist_rt_status_t status = prepareNpyWrite(
          path, dtype, rank, dims, data || readRows, header, nbytes))
    return status;
  std::string tempPath = std::string(path) + ".tmp.XXXXXX";
  int fd = ::mkstemp(&tempPath[0]);
  if (fd < 0)
    return ioError(path, "cannot create a temporary file next to it", errno);
  // The temporary file is created 0600; give it the usual mode.
  (void)::fchmod(fd, 0644);
  bool ok = writeFully(fd, header.data(), header.size());
  int error = errno;
  if (ok && readRows) {
    // Pieces of rowsPerPiece rows of the leading dimension.
    int64_t rows = rank ? dims[0] : 1;
    uint64_t rowBytes = rows ? nbytes / static_cast<uint64_t>(rows) : 0;
    int64_t piece = std::max<int64_t>(1, rowsPerPiece);
    std::vector<char> buffer(static_cast<size_t>(
        rowBytes * static_cast<uint64_t>(std::min<int64_t>(piece, rows))));
    for (int64_t first = 0; ok && first < rows; first += piece) {
      int64_t n = std::min(piece, rows - first);
      if (dist_rt_status_t status = (*readRows)(first, n, buffer.data())) {
        ::close(fd);
        ::unlink(tempPath.c_str());
        return status;
      }
      ok = writeFully(fd, buffer.data(),
                      static_cast<size_t>(rowBytes * static_cast<uint64_t>(n)));
    }
    error = errno;
  } else if (ok && nbytes != 0) {
    ok = writeFully(fd, data, static_cast<size_t>(nbytes));
    error = errno;
  }
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (!ok) {
    ::unlink(tempPath.c_str());
    return ioError(path, "cannot write", error);
  }
  if (::rename(tempPath.c_str(), path) != 0) {
    error = errno;
    ::unlink(tempPath.c_str());
    return ioError(path, "cannot rename the temporary file onto it", error);
  }
  return nullptr;
}

} // namespace

bool dist_rt::writeFully(int fd, const void *buffer, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t put =
        ::write(fd, static_cast<const char *>(buffer) + done, size - done);
    if (put < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    done += static_cast<size_t>(put);
  }
  return true;
}

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" dist_rt_status_t dist_rt_npy_read(const char *path,
                                             dist_rt_npy_array_t *out_array) {
  if (!out_array)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_npy_read: out_array is NULL");
  std::memset(out_array, 0, sizeof(*out_array));
  if (!path)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_npy_read: path is NULL");
  return dist_rt::guardStatus(path, [&] { return readNpy(path, *out_array); });
}

extern "C" dist_rt_status_t dist_rt_npy_write(const char *path, uint32_t dtype,
                                              uint32_t rank,
                                              const int64_t *dims,
                                              const void *data) {
  if (!path)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_npy_write: path is NULL");
  return dist_rt::guardStatus(
      path, [&] { return writeNpy(path, dtype, rank, dims, data); });
}

dist_rt_status_t dist_rt::writeNpyRows(const char *path, uint32_t dtype,
                                       uint32_t rank, const int64_t *dims,
                                       int64_t rowsPerPiece,
                                       const NpyRowReader &readRows) {
  return dist_rt::guardStatus(path, [&] {
    return writeNpy(path, dtype, rank, dims, nullptr, &readRows, rowsPerPiece);
  });
}

dist_rt_status_t dist_rt::writeNpyPieces(const char *path, uint32_t dtype,
                                         uint32_t rank, const int64_t *dims,
                                         bool withHeader,
                                         const std::vector<NpyPiece> &pieces) {
  return dist_rt::guardStatus(path, [&]() -> dist_rt_status_t {
    std::string header;
    uint64_t nbytes = 0;
    if (dist_rt_status_t status =
            prepareNpyWrite(path, dtype, rank, dims, true, header, nbytes))
      return status;
    for (const NpyPiece &piece : pieces)
      if (piece.offset > nbytes || piece.bytes > nbytes - piece.offset)
        return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                          "%s: a piece of %" PRIu64 " bytes at %" PRIu64
                          " is outside the %" PRIu64 " bytes of data",
                          path, piece.bytes, piece.offset, nbytes);
    // Shared with the writers of the other pieces: never truncated.
    int fd = ::open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return ioError(path, "cannot open for writing", errno);
    auto writeAt = [&](const void *data, uint64_t bytes, uint64_t offset) {
      for (uint64_t done = 0; done < bytes;) {
        ssize_t put = ::pwrite(fd, static_cast<const char *>(data) + done,
                               static_cast<size_t>(bytes - done),
                               static_cast<off_t>(offset + done));
        if (put < 0 && errno == EINTR)
          continue;
        if (put <= 0)
          return false;
        done += static_cast<uint64_t>(put);
      }
      return true;
    };
    // A file left by an earlier checkpoint (a recycled directory) is
    // overwritten in place; its size is set once, by the header's writer.
    struct stat st;
    uint64_t total = header.size() + nbytes;
    bool ok =
        !withHeader || ((::fstat(fd, &st) == 0 &&
                         (static_cast<uint64_t>(st.st_size) == total ||
                          ::ftruncate(fd, static_cast<off_t>(total)) == 0)) &&
                        writeAt(header.data(), header.size(), 0));
    for (size_t k = 0; ok && k < pieces.size(); ++k)
      ok = writeAt(pieces[k].data, pieces[k].bytes,
                   header.size() + pieces[k].offset);
    int error = errno;
    if (::close(fd) != 0 && ok) {
      ok = false;
      error = errno;
    }
    if (!ok)
      return ioError(path, "cannot write", error);
    return nullptr;
  });
}

extern "C" void dist_rt_npy_free(dist_rt_npy_array_t *array) {
  if (!array)
    return;
  std::free(array->dims);
  std::free(array->data);
  std::memset(array, 0, sizeof(*array));
}

int64_t dist_rt::readFully(int fd, void *buffer, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t got = ::read(fd, static_cast<char *>(buffer) + done, size - done);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (got == 0)
      break;
    done += static_cast<size_t>(got);
  }
  return static_cast<int64_t>(done);
}
