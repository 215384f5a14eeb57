//===- params.cpp - Read-only parameter-file reader -------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_params_t: maps a parameter file (layout in
// dist_rt/param_format.h) read-only, validates the header and every index
// entry, and serves descriptors whose data pointers point straight into the
// mapping. Names and dims are decoded once into owned, host-order storage so
// that lookups never touch unaligned little-endian bytes. No exceptions: all
// allocations use malloc or nothrow new and failures become statuses.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "status.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using dist_rt::makeStatus;

/// A mapped, validated parameter file. Immutable after
/// dist_rt_params_open returns it, except for the reference count.
struct dist_rt_params {
  std::atomic<size_t> refCount{1};
  /// Copy of the path given to dist_rt_params_open, used in messages.
  char *path = nullptr;
  /// The read-only mapping of the whole file.
  const uint8_t *mapping = nullptr;
  size_t mappingSize = 0;
  /// Number of parameters; the length of `infos` and `sortedByName`.
  size_t count = 0;
  /// One descriptor per entry, in file order.
  dist_rt_param_info_t *infos = nullptr;
  /// Entry indices sorted by name, for binary search.
  size_t *sortedByName = nullptr;
  /// NUL-terminated copies of all names, back to back.
  char *nameStorage = nullptr;
  /// Host-order copies of all dims, back to back.
  int64_t *dimStorage = nullptr;

  ~dist_rt_params() {
    std::free(dimStorage);
    std::free(nameStorage);
    std::free(sortedByName);
    std::free(infos);
    if (mapping) {
      dist_rt::unregisterConstantMemory(mapping);
      munmap(const_cast<uint8_t *>(mapping), mappingSize);
    }
    std::free(path);
  }
};

namespace {

/// Room for a name rendered into a message, including the terminator.
constexpr size_t kMessageNameSize = 128;

/// Smallest possible index entry: name_len, dtype, rank, data_offset and
/// nbytes with an empty name and rank 0.
constexpr uint64_t kMinEntrySize = 4 + 4 + 4 + 8 + 8;

uint32_t readLE32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

uint64_t readLE64(const uint8_t *p) {
  return static_cast<uint64_t>(readLE32(p)) |
         static_cast<uint64_t>(readLE32(p + 4)) << 32;
}

/// Duplicates a C string with malloc; returns NULL on allocation failure.
char *copyString(const char *s) {
  size_t size = std::strlen(s) + 1;
  auto *copy = static_cast<char *>(std::malloc(size));
  if (copy)
    std::memcpy(copy, s, size);
  return copy;
}

dist_rt_status_t outOfMemory(const char *path, const char *what) {
  return makeStatus(DIST_RT_ERROR_OUT_OF_MEMORY,
                    "%s: out of memory while allocating %s", path, what);
}

/// Reads the index of a mapped file. Holds the state shared by the checks
/// of all entries so messages can name the file and the entry.
class IndexReader {
public:
  IndexReader(const char *path, const uint8_t *base, uint64_t fileSize,
              uint64_t indexOffset)
      : path(path), base(base), fileSize(fileSize), indexOffset(indexOffset),
        pos(indexOffset) {}

  /// Parses and validates entry `index` at the current position, fills
  /// `info` (with `name` pointing into the mapping, not NUL-terminated, and
  /// `dims` left NULL) and advances past it. Returns NULL on success.
  dist_rt_status_t readEntry(size_t index, dist_rt_param_info_t &info);

  /// Offset just past the last entry read.
  uint64_t position() const { return pos; }

private:
  /// Checks that `size` bytes of `field` are available at the current
  /// position.
  dist_rt_status_t need(size_t index, const char *field, uint64_t size);

  /// Builds a FORMAT status prefixed with the path, entry index and name.
  dist_rt_status_t entryError(size_t index, const char *name, size_t nameLen,
                              const char *format, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 5, 6)))
#endif
      ;

  const char *path;
  const uint8_t *base;
  uint64_t fileSize;
  uint64_t indexOffset;
  uint64_t pos;
};

dist_rt_status_t IndexReader::need(size_t index, const char *field,
                                   uint64_t size) {
  if (size <= fileSize - pos)
    return nullptr;
  return makeStatus(DIST_RT_ERROR_FORMAT,
                    "%s: entry %zu: index is truncated: %s needs %" PRIu64
                    " bytes at offset %" PRIu64
                    " but the file ends at %" PRIu64,
                    path, index, field, size, pos, fileSize);
}

dist_rt_status_t IndexReader::entryError(size_t index, const char *name,
                                         size_t nameLen, const char *format,
                                         ...) {
  char detail[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(detail, sizeof(detail), format, args);
  va_end(args);
  char escaped[kMessageNameSize];
  dist_rt::escapeForMessage(name, nameLen, escaped, sizeof(escaped));
  return makeStatus(DIST_RT_ERROR_FORMAT, "%s: entry %zu ('%s'): %s", path,
                    index, escaped, detail);
}

dist_rt_status_t IndexReader::readEntry(size_t index,
                                        dist_rt_param_info_t &info) {
  if (dist_rt_status_t status = need(index, "name length", 4))
    return status;
  uint32_t nameLen = readLE32(base + pos);
  pos += 4;
  if (dist_rt_status_t status = need(index, "name", nameLen))
    return status;
  const char *name = reinterpret_cast<const char *>(base + pos);
  pos += nameLen;
  if (std::memchr(name, '\0', nameLen))
    return entryError(index, name, nameLen, "name contains a NUL byte");

  if (dist_rt_status_t status = need(index, "dtype and rank", 8))
    return status;
  uint32_t dtype = readLE32(base + pos);
  uint32_t rank = readLE32(base + pos + 4);
  pos += 8;
  uint64_t elementSize = dist_rt_dtype_size(dtype);
  if (elementSize == 0)
    return entryError(index, name, nameLen, "unknown dtype %" PRIu32, dtype);
  if (rank > DIST_RT_PARAM_MAX_RANK)
    return entryError(index, name, nameLen,
                      "rank %" PRIu32 " exceeds the maximum of %d", rank,
                      DIST_RT_PARAM_MAX_RANK);

  if (dist_rt_status_t status = need(index, "dims", uint64_t{rank} * 8))
    return status;
  uint64_t numElements = 1;
  bool overflow = false;
  for (uint32_t d = 0; d < rank; ++d) {
    auto dim = static_cast<int64_t>(readLE64(base + pos + 8 * uint64_t{d}));
    if (dim < 0)
      return entryError(index, name, nameLen,
                        "dim %" PRIu32 " is negative (%" PRId64 ")", d, dim);
    overflow |= __builtin_mul_overflow(numElements, static_cast<uint64_t>(dim),
                                       &numElements);
  }
  pos += uint64_t{rank} * 8;
  uint64_t expectedBytes = 0;
  overflow |= __builtin_mul_overflow(numElements, elementSize, &expectedBytes);
  if (overflow)
    return entryError(index, name, nameLen,
                      "the byte size of the dims overflows 64 bits");

  if (dist_rt_status_t status = need(index, "data offset and size", 16))
    return status;
  uint64_t dataOffset = readLE64(base + pos);
  uint64_t nbytes = readLE64(base + pos + 8);
  pos += 16;
  if (nbytes != expectedBytes)
    return entryError(index, name, nameLen,
                      "nbytes is %" PRIu64 " but the dims and dtype %" PRIu32
                      " need %" PRIu64,
                      nbytes, dtype, expectedBytes);
  uint64_t dataEnd = 0;
  if (__builtin_add_overflow(dataOffset, nbytes, &dataEnd))
    return entryError(index, name, nameLen,
                      "data at offset %" PRIu64 " (%" PRIu64
                      " bytes) lies outside the file (size %" PRIu64 ")",
                      dataOffset, nbytes, fileSize);
  if (dataEnd > fileSize)
    return entryError(index, name, nameLen,
                      "data [%" PRIu64 ", %" PRIu64
                      ") lies outside the file (size %" PRIu64 ")",
                      dataOffset, dataEnd, fileSize);
  if (dataOffset < DIST_RT_PARAM_HEADER_SIZE)
    return entryError(index, name, nameLen,
                      "data offset %" PRIu64
                      " overlaps the header (the first %d bytes)",
                      dataOffset, DIST_RT_PARAM_HEADER_SIZE);
  if (dataEnd > indexOffset)
    return entryError(index, name, nameLen,
                      "data [%" PRIu64 ", %" PRIu64
                      ") overlaps the index at offset %" PRIu64,
                      dataOffset, dataEnd, indexOffset);
  if (dataOffset % DIST_RT_PARAM_ALIGNMENT != 0)
    return entryError(index, name, nameLen,
                      "data offset %" PRIu64 " is not aligned to %d bytes",
                      dataOffset, DIST_RT_PARAM_ALIGNMENT);

  info.name = name;
  info.name_len = nameLen;
  info.dtype = dtype;
  info.rank = rank;
  info.dims = nullptr;
  info.data = base + dataOffset;
  info.nbytes = nbytes;
  return nullptr;
}

/// Maps `path` read-only into `params`. Returns NULL on success.
dist_rt_status_t mapFile(const char *path, dist_rt_params &params) {
  int fd;
  do {
    fd = ::open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  char errorText[128];
  if (fd < 0) {
    int error = errno;
    return makeStatus(
        DIST_RT_ERROR_IO, "%s: cannot open: %s", path,
        dist_rt::describeErrno(error, errorText, sizeof(errorText)));
  }

  dist_rt_status_t status = nullptr;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int error = errno;
    status =
        makeStatus(DIST_RT_ERROR_IO, "%s: cannot stat: %s", path,
                   dist_rt::describeErrno(error, errorText, sizeof(errorText)));
  } else if (!S_ISREG(st.st_mode)) {
    status = makeStatus(DIST_RT_ERROR_IO, "%s: not a regular file", path);
  } else if (st.st_size == 0) {
    status = makeStatus(DIST_RT_ERROR_FORMAT,
                        "%s: file is empty (a parameter file needs at least "
                        "the %d-byte header)",
                        path, DIST_RT_PARAM_HEADER_SIZE);
  } else if (st.st_size < DIST_RT_PARAM_HEADER_SIZE) {
    status = makeStatus(
        DIST_RT_ERROR_FORMAT,
        "%s: file is too small for the header (%" PRIu64 " bytes, need %d)",
        path, static_cast<uint64_t>(st.st_size), DIST_RT_PARAM_HEADER_SIZE);
  } else if (static_cast<uint64_t>(st.st_size) > SIZE_MAX) {
    status = makeStatus(DIST_RT_ERROR_IO,
                        "%s: file is too large to map (%" PRIu64 " bytes)",
                        path, static_cast<uint64_t>(st.st_size));
  } else {
    auto size = static_cast<size_t>(st.st_size);
    void *mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int error = errno;
      status = makeStatus(
          DIST_RT_ERROR_IO, "%s: cannot map %zu bytes: %s", path, size,
          dist_rt::describeErrno(error, errorText, sizeof(errorText)));
    } else {
      params.mapping = static_cast<const uint8_t *>(mapping);
      params.mappingSize = size;
      dist_rt::registerConstantMemory(mapping, size);
    }
  }
  ::close(fd);
  return status;
}

/// Validates the mapped file in `params` and builds its descriptors.
/// Returns NULL on success.
dist_rt_status_t loadIndex(dist_rt_params &params) {
  const char *path = params.path;
  const uint8_t *base = params.mapping;
  uint64_t fileSize = params.mappingSize;

  // Header.
  if (std::memcmp(base, DIST_RT_PARAM_MAGIC, DIST_RT_PARAM_MAGIC_SIZE) != 0) {
    char found[4 * DIST_RT_PARAM_MAGIC_SIZE + 1];
    dist_rt::escapeForMessage(reinterpret_cast<const char *>(base),
                              DIST_RT_PARAM_MAGIC_SIZE, found, sizeof(found));
    return makeStatus(DIST_RT_ERROR_FORMAT,
                      "%s: bad magic '%s' (expected '%s'); not a dist-opt "
                      "parameter file",
                      path, found, DIST_RT_PARAM_MAGIC);
  }
  uint64_t count = readLE64(base + 8);
  uint64_t indexOffset = readLE64(base + 16);
  uint64_t recordedSize = readLE64(base + 24);
  if (recordedSize != fileSize)
    return makeStatus(DIST_RT_ERROR_FORMAT,
                      "%s: header records a file size of %" PRIu64
                      " bytes but the file has %" PRIu64
                      " bytes (truncated or overwritten?)",
                      path, recordedSize, fileSize);
  if (indexOffset > fileSize)
    return makeStatus(DIST_RT_ERROR_FORMAT,
                      "%s: index offset %" PRIu64
                      " lies outside the file (size %" PRIu64 ")",
                      path, indexOffset, fileSize);
  if (indexOffset < DIST_RT_PARAM_HEADER_SIZE)
    return makeStatus(DIST_RT_ERROR_FORMAT,
                      "%s: index offset %" PRIu64
                      " overlaps the header (the first %d bytes)",
                      path, indexOffset, DIST_RT_PARAM_HEADER_SIZE);
  // Bounding the count by the index size also bounds every allocation below
  // by the file size.
  uint64_t maxCount = (fileSize - indexOffset) / kMinEntrySize;
  if (count > maxCount)
    return makeStatus(
        DIST_RT_ERROR_FORMAT,
        "%s: header declares %" PRIu64 " parameters but the %" PRIu64
        "-byte index at offset %" PRIu64 " has room for at most %" PRIu64,
        path, count, fileSize - indexOffset, indexOffset, maxCount);
  params.count = static_cast<size_t>(count);
  if (count == 0)
    return nullptr;

  // Pass 1: validate every entry and measure the owned storage.
  params.infos = static_cast<dist_rt_param_info_t *>(
      std::calloc(params.count, sizeof(dist_rt_param_info_t)));
  if (!params.infos)
    return outOfMemory(path, "the parameter descriptors");
  IndexReader reader(path, base, fileSize, indexOffset);
  size_t nameBytes = 0;
  size_t numDims = 0;
  for (size_t i = 0; i < params.count; ++i) {
    if (dist_rt_status_t status = reader.readEntry(i, params.infos[i]))
      return status;
    nameBytes += params.infos[i].name_len + 1;
    numDims += params.infos[i].rank;
  }
  if (reader.position() != fileSize)
    return makeStatus(
        DIST_RT_ERROR_FORMAT,
        "%s: %" PRIu64 " unexpected bytes after the last of the %" PRIu64
        " index entries (index ends at %" PRIu64 ", file size %" PRIu64 ")",
        path, fileSize - reader.position(), count, reader.position(), fileSize);

  // Pass 2: copy names and dims into owned storage.
  params.nameStorage = static_cast<char *>(std::malloc(nameBytes));
  if (!params.nameStorage)
    return outOfMemory(path, "the parameter names");
  if (numDims != 0) {
    params.dimStorage =
        static_cast<int64_t *>(std::malloc(numDims * sizeof(int64_t)));
    if (!params.dimStorage)
      return outOfMemory(path, "the parameter dims");
  }
  char *nextName = params.nameStorage;
  int64_t *nextDims = params.dimStorage;
  for (size_t i = 0; i < params.count; ++i) {
    dist_rt_param_info_t &info = params.infos[i];
    // In the file the dims follow the name, dtype and rank.
    const uint8_t *fileDims =
        reinterpret_cast<const uint8_t *>(info.name) + info.name_len + 8;
    std::memcpy(nextName, info.name, info.name_len);
    nextName[info.name_len] = '\0';
    info.name = nextName;
    nextName += info.name_len + 1;
    if (info.rank != 0) {
      for (uint32_t d = 0; d < info.rank; ++d)
        nextDims[d] = static_cast<int64_t>(readLE64(fileDims + 8 * size_t{d}));
      info.dims = nextDims;
      nextDims += info.rank;
    }
  }

  // Sort by name for lookups; equal neighbours are duplicates.
  params.sortedByName =
      static_cast<size_t *>(std::malloc(params.count * sizeof(size_t)));
  if (!params.sortedByName)
    return outOfMemory(path, "the name index");
  for (size_t i = 0; i < params.count; ++i)
    params.sortedByName[i] = i;
  const dist_rt_param_info_t *infos = params.infos;
  std::sort(params.sortedByName, params.sortedByName + params.count,
            [infos](size_t lhs, size_t rhs) {
              int order = std::strcmp(infos[lhs].name, infos[rhs].name);
              return order != 0 ? order < 0 : lhs < rhs;
            });
  for (size_t i = 1; i < params.count; ++i) {
    size_t first = params.sortedByName[i - 1];
    size_t second = params.sortedByName[i];
    if (std::strcmp(infos[first].name, infos[second].name) == 0) {
      char escaped[kMessageNameSize];
      dist_rt::escapeForMessage(infos[first].name, infos[first].name_len,
                                escaped, sizeof(escaped));
      return makeStatus(DIST_RT_ERROR_FORMAT,
                        "%s: entries %zu and %zu have the same name '%s'", path,
                        first, second, escaped);
    }
  }
  return nullptr;
}

/// Zeroes `*info` if it is not NULL.
void clearInfo(dist_rt_param_info_t *info) {
  if (info)
    std::memset(info, 0, sizeof(*info));
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" size_t dist_rt_dtype_size(uint32_t dtype) {
  switch (dtype) {
  case DIST_RT_DTYPE_UINT8:
  case DIST_RT_DTYPE_INT8:
  case DIST_RT_DTYPE_BOOL:
    return 1;
  case DIST_RT_DTYPE_UINT16:
  case DIST_RT_DTYPE_INT16:
  case DIST_RT_DTYPE_FLOAT16:
  case DIST_RT_DTYPE_BFLOAT16:
    return 2;
  case DIST_RT_DTYPE_FLOAT:
  case DIST_RT_DTYPE_INT32:
  case DIST_RT_DTYPE_UINT32:
    return 4;
  case DIST_RT_DTYPE_INT64:
  case DIST_RT_DTYPE_DOUBLE:
  case DIST_RT_DTYPE_UINT64:
    return 8;
  default:
    return 0;
  }
}

extern "C" const char *dist_rt_dtype_name(uint32_t dtype) {
  switch (dtype) {
  case DIST_RT_DTYPE_FLOAT:
    return "float32";
  case DIST_RT_DTYPE_UINT8:
    return "uint8";
  case DIST_RT_DTYPE_INT8:
    return "int8";
  case DIST_RT_DTYPE_UINT16:
    return "uint16";
  case DIST_RT_DTYPE_INT16:
    return "int16";
  case DIST_RT_DTYPE_INT32:
    return "int32";
  case DIST_RT_DTYPE_INT64:
    return "int64";
  case DIST_RT_DTYPE_BOOL:
    return "bool";
  case DIST_RT_DTYPE_FLOAT16:
    return "float16";
  case DIST_RT_DTYPE_DOUBLE:
    return "float64";
  case DIST_RT_DTYPE_UINT32:
    return "uint32";
  case DIST_RT_DTYPE_UINT64:
    return "uint64";
  case DIST_RT_DTYPE_BFLOAT16:
    return "bfloat16";
  default:
    return "unknown";
  }
}

extern "C" dist_rt_status_t dist_rt_params_open(const char *path,
                                                dist_rt_params_t *out_params) {
  if (!out_params)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_params_open: out_params is NULL");
  *out_params = nullptr;
  if (!path)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_params_open: path is NULL");

  auto *params = new (std::nothrow) dist_rt_params();
  if (!params)
    return outOfMemory(path, "the parameter handle");
  params->path = copyString(path);
  if (!params->path) {
    delete params;
    return outOfMemory(path, "the parameter handle");
  }
  dist_rt_status_t status = mapFile(path, *params);
  if (!status)
    status = loadIndex(*params);
  if (status) {
    delete params;
    return status;
  }
  *out_params = params;
  return nullptr;
}

extern "C" void dist_rt_params_retain(dist_rt_params_t params) {
  if (params)
    params->refCount.fetch_add(1, std::memory_order_relaxed);
}

extern "C" void dist_rt_params_release(dist_rt_params_t params) {
  if (params && params->refCount.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete params;
}

extern "C" size_t dist_rt_params_count(dist_rt_params_t params) {
  return params ? params->count : 0;
}

extern "C" dist_rt_status_t dist_rt_params_get(dist_rt_params_t params,
                                               size_t index,
                                               dist_rt_param_info_t *out_info) {
  clearInfo(out_info);
  if (!params)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_params_get: params is NULL");
  if (!out_info)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: dist_rt_params_get: out_info is NULL", params->path);
  if (index >= params->count)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: parameter index %zu is out of range (the file has "
                      "%zu parameters)",
                      params->path, index, params->count);
  *out_info = params->infos[index];
  return nullptr;
}

extern "C" dist_rt_status_t
dist_rt_params_find(dist_rt_params_t params, const char *name,
                    dist_rt_param_info_t *out_info) {
  clearInfo(out_info);
  if (!params)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "dist_rt_params_find: params is NULL");
  if (!name)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: dist_rt_params_find: name is NULL", params->path);
  if (!out_info)
    return makeStatus(DIST_RT_ERROR_INVALID_ARGUMENT,
                      "%s: dist_rt_params_find: out_info is NULL",
                      params->path);
  const dist_rt_param_info_t *infos = params->infos;
  const size_t *end = params->sortedByName + params->count;
  const size_t *it =
      std::lower_bound(static_cast<const size_t *>(params->sortedByName), end,
                       name, [infos](size_t index, const char *key) {
                         return std::strcmp(infos[index].name, key) < 0;
                       });
  if (it == end || std::strcmp(infos[*it].name, name) != 0) {
    char escaped[kMessageNameSize];
    dist_rt::escapeForMessage(name, std::strlen(name), escaped,
                              sizeof(escaped));
    return makeStatus(DIST_RT_ERROR_NOT_FOUND, "%s: no parameter named '%s'",
                      params->path, escaped);
  }
  *out_info = infos[*it];
  return nullptr;
}
