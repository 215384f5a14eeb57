//===- status.h - Internal helpers for runtime status objects ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Helpers that the runtime implementation uses to build dist_rt_status_t
// objects. Internal to the runtime library; not installed and not part of
// the C API.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_LIB_STATUS_H
#define DIST_RT_LIB_STATUS_H

#include "dist_rt/dist_rt.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace dist_rt {

/// Builds a status with `code` and a printf-style message. Newlines in the
/// formatted text are replaced by spaces so the message stays on one line.
/// Never returns NULL: if the allocation fails, a shared, statically
/// allocated OUT_OF_MEMORY status is returned instead (freeing it is a
/// no-op). `code` must not be DIST_RT_OK.
dist_rt_status_t makeStatus(dist_rt_status_code_t code, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/// Writes a printable, quoted-safe rendering of the `len` bytes at `bytes`
/// into `buffer` (always NUL-terminated). Non-printable bytes, quotes and
/// backslashes are escaped as \xNN; the text is cut with "..." when it does
/// not fit. Meant for putting names read from files into messages.
void escapeForMessage(const char *bytes, size_t len, char *buffer,
                      size_t bufferSize);

/// Returns a description of the errno value `errnum` that is safe to call
/// from several threads. The result is written into `buffer` or points to
/// static storage.
const char *describeErrno(int errnum, char *buffer, size_t bufferSize);

/// Renders a shape for messages as "[64,784]" ("[]" for a scalar); negative
/// extents (dynamic dimensions) are shown as "?".
std::string formatShape(uint32_t rank, const int64_t *dims);

/// Renders a shape and element type for messages: "[?,784] (float32)".
std::string describeType(uint32_t dtype, uint32_t rank, const int64_t *dims);

} // namespace dist_rt

#endif // DIST_RT_LIB_STATUS_H
