//===- FuzzUtil.h - shared helpers of the file-format fuzzers ---*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The readers under test take paths, as the artifacts call them. Each input
// is written to an anonymous in-memory file (memfd) and handed over as
// /proc/self/fd/N, or to files in a private directory under $TMPDIR for the
// readers of directories, so no run leaves anything behind and none pays
// for a disk.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_TOOLS_FUZZERS_FUZZUTIL_H
#define DIST_TOOLS_FUZZERS_FUZZUTIL_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace dist_fuzz {

/// Stops the run with a message: libFuzzer records the input that got here.
[[noreturn]] inline void finding(const char *what, const std::string &detail) {
  std::fprintf(stderr, "FINDING: %s: %s\n", what, detail.c_str());
  std::abort();
}

/// An error a reader returns must be one line naming the place (the
/// project's rule for bad input): non-empty, without a newline.
inline void checkOneLine(const std::string &message) {
  if (message.empty())
    finding("empty error message", "");
  if (message.find('\n') != std::string::npos)
    finding("error message spans lines", message);
}

/// Replaces the contents of one in-memory file.
class MemFile {
public:
  explicit MemFile(const char *name) {
    fd_ = ::memfd_create(name, 0);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::exit(1);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  const char *path() const { return path_.c_str(); }
  void write(const uint8_t *data, size_t size) {
    if (::ftruncate(fd_, 0) != 0 ||
        ::pwrite(fd_, data, size, 0) != static_cast<ssize_t>(size)) {
      std::perror("memfd write");
      std::exit(1);
    }
  }

private:
  int fd_ = -1;
  std::string path_;
};

/// A private directory under $TMPDIR (or /tmp), removed at exit.
class TempDir {
public:
  TempDir() {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/dist-fuzz-XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::string command = "rm -rf '" + path_ + "'";
    (void)std::system(command.c_str());
  }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

/// Writes `size` bytes to `path` (replacing it).
inline void writeFile(const std::string &path, const void *data, size_t size) {
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file || std::fwrite(data, 1, size, file) != size ||
      std::fclose(file) != 0) {
    std::perror(path.c_str());
    std::exit(1);
  }
}

/// Reads every byte of [data, data + size) so the sanitizer sees any that
/// is not really there.
inline void touch(const void *data, uint64_t size) {
  const volatile unsigned char *bytes =
      static_cast<const volatile unsigned char *>(data);
  unsigned sum = 0;
  for (uint64_t i = 0; i < size; ++i)
    sum += bytes[i];
  (void)sum;
}

} // namespace dist_fuzz

#endif // DIST_TOOLS_FUZZERS_FUZZUTIL_H
