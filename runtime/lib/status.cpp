//===- status.cpp - Runtime status objects ----------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Implements dist_rt_status_t: a heap-allocated code plus one-line message
// that is returned by every fallible runtime call, and the internal helpers
// used to build messages. Allocation failures fall back to a static
// OUT_OF_MEMORY status so that an error is never lost.
//
//===----------------------------------------------------------------------===//

#include "status.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

/// A status object. The message is stored inline right after the struct.
struct dist_rt_status {
  dist_rt_status_code_t code;
  /// Points into the same allocation (or to a string literal for the static
  /// out-of-memory status).
  const char *message;
};

namespace {

/// Returned when a status itself cannot be allocated. Never freed.
dist_rt_status outOfMemoryStatus = {DIST_RT_ERROR_OUT_OF_MEMORY,
                                    "out of memory while reporting an error"};

} // namespace

//===----------------------------------------------------------------------===//
// Internal helpers
//===----------------------------------------------------------------------===//

dist_rt_status_t dist_rt::makeStatus(dist_rt_status_code_t code,
                                     const char *format, ...) {
  va_list args;
  va_start(args, format);
  va_list argsCopy;
  va_copy(argsCopy, args);
  int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);

  // A formatting failure only happens on a broken format string; keep the
  // code and say what went wrong rather than losing the error.
  static const char formatFailed[] = "error message could not be formatted";
  size_t messageSize =
      length < 0 ? sizeof(formatFailed) : static_cast<size_t>(length) + 1;
  void *memory = std::malloc(sizeof(dist_rt_status) + messageSize);
  if (!memory) {
    va_end(argsCopy);
    return &outOfMemoryStatus;
  }
  char *message = static_cast<char *>(memory) + sizeof(dist_rt_status);
  if (length < 0)
    std::memcpy(message, formatFailed, sizeof(formatFailed));
  else
    std::vsnprintf(message, messageSize, format, argsCopy);
  va_end(argsCopy);
  for (char *c = message; *c; ++c)
    if (*c == '\n' || *c == '\r')
      *c = ' ';

  auto *status = static_cast<dist_rt_status *>(memory);
  status->code = code;
  status->message = message;
  return status;
}

void dist_rt::escapeForMessage(const char *bytes, size_t len, char *buffer,
                               size_t bufferSize) {
  if (bufferSize == 0)
    return;
  static const char ellipsis[] = "...";
  static const char hexDigits[] = "0123456789abcdef";
  // Reserve room for the terminator and a possible ellipsis.
  size_t limit =
      bufferSize > sizeof(ellipsis) ? bufferSize - sizeof(ellipsis) : 0;
  size_t out = 0;
  size_t i = 0;
  for (; i < len; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    bool plain = c >= 0x20 && c < 0x7f && c != '\'' && c != '\\';
    size_t width = plain ? 1 : 4;
    if (out + width > limit)
      break;
    if (plain) {
      buffer[out++] = static_cast<char>(c);
    } else {
      buffer[out++] = '\\';
      buffer[out++] = 'x';
      buffer[out++] = hexDigits[c >> 4];
      buffer[out++] = hexDigits[c & 0xf];
    }
  }
  if (i < len && out + sizeof(ellipsis) <= bufferSize) {
    std::memcpy(buffer + out, ellipsis, sizeof(ellipsis) - 1);
    out += sizeof(ellipsis) - 1;
  }
  buffer[out < bufferSize ? out : bufferSize - 1] = '\0';
}

namespace {

/// Adapts the XSI variant of strerror_r, which returns an int.
[[maybe_unused]] const char *pickStrerror(int result, const char *buffer) {
  return result == 0 ? buffer : "unknown error";
}

/// Adapts the GNU variant of strerror_r, which returns a string.
[[maybe_unused]] const char *pickStrerror(const char *result, const char *) {
  return result ? result : "unknown error";
}

} // namespace

const char *dist_rt::describeErrno(int errnum, char *buffer,
                                   size_t bufferSize) {
  if (bufferSize == 0)
    return "unknown error";
  buffer[0] = '\0';
  return pickStrerror(strerror_r(errnum, buffer, bufferSize), buffer);
}

std::string dist_rt::formatShape(uint32_t rank, const int64_t *dims) {
  std::string text = "[";
  for (uint32_t d = 0; d < rank; ++d) {
    if (d != 0)
      text += ',';
    text += dims[d] < 0 ? std::string("?") : std::to_string(dims[d]);
  }
  text += ']';
  return text;
}

std::string dist_rt::describeType(uint32_t dtype, uint32_t rank,
                                  const int64_t *dims) {
  return formatShape(rank, dims) + " (" + dist_rt_dtype_name(dtype) + ")";
}

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

extern "C" dist_rt_status_code_t dist_rt_status_code(dist_rt_status_t status) {
  return status ? status->code : DIST_RT_OK;
}

extern "C" const char *dist_rt_status_message(dist_rt_status_t status) {
  return status ? status->message : "ok";
}

extern "C" void dist_rt_status_free(dist_rt_status_t status) {
  if (!status || status == &outOfMemoryStatus)
    return;
  std::free(status);
}

//===----------------------------------------------------------------------===//
// Sanitizer defaults
//===----------------------------------------------------------------------===//
//
// Only in sanitizer builds (-DDIST_SANITIZE), and in this file because
// every program that links the runtime links it. Open MPI loads its
// components with dlopen and unloads them in MPI_Finalize; what they keep
// until exit is then reported as leaked from "<unknown module>", with a
// stack the frame-pointer unwinder cannot follow, so the suppressions of
// Open MPI's libraries (scripts/sanitizer/lsan.supp) cannot match it.
// Programs that link the runtime (artifacts, its tools and tests) therefore
// record allocation stacks with the slower DWARF unwinder, which sees the
// MPI frames; they allocate little, so this costs them little. ASAN_OPTIONS
// still overrides it.
//
//===----------------------------------------------------------------------===//

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DIST_RT_ADDRESS_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define DIST_RT_ADDRESS_SANITIZER 1
#endif

#ifdef DIST_RT_ADDRESS_SANITIZER
extern "C" __attribute__((visibility("default"), used))
const char *__asan_default_options() {
  return "fast_unwind_on_malloc=0";
}
#endif
