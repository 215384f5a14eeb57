//===- dist-npy-fuzzer.cpp - libFuzzer target for the .npy reader ---------===//
// SPDX-License-Identifier: Apache-2.0
//
// Feeds arbitrary bytes to dist_rt_npy_read, the reader behind an artifact's
// --input/--data files and checkpoints. A rejected file must get a one-line
// error; an accepted one must describe exactly the bytes it holds, and
// writing it back and reading that again must give the same array.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "dist_rt/dist_rt.h"
#include "dist_rt/npy.h"

using namespace dist_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static MemFile file("input.npy");
  static TempDir dir;
  file.write(data, size);
  dist_rt_npy_array_t array{};
  if (dist_rt_status_t status = dist_rt_npy_read(file.path(), &array)) {
    checkOneLine(dist_rt_status_message(status));
    dist_rt_status_free(status);
    return 0;
  }
  uint64_t elements = 1;
  for (uint32_t d = 0; d < array.rank; ++d) {
    if (array.dims[d] < 0)
      finding("negative extent", std::to_string(array.dims[d]));
    elements *= static_cast<uint64_t>(array.dims[d]);
  }
  if (!array.data || array.nbytes != elements * dist_rt_dtype_size(array.dtype))
    finding("size does not match the shape", std::to_string(array.nbytes));
  touch(array.data, array.nbytes);

  std::string copy = dir.path() + "/copy.npy";
  if (dist_rt_status_t status = dist_rt_npy_write(
          copy.c_str(), array.dtype, array.rank, array.dims, array.data))
    finding("cannot write back what was read", dist_rt_status_message(status));
  dist_rt_npy_array_t again{};
  if (dist_rt_status_t status = dist_rt_npy_read(copy.c_str(), &again))
    finding("cannot read back what was written",
            dist_rt_status_message(status));
  if (again.dtype != array.dtype || again.rank != array.rank ||
      again.nbytes != array.nbytes ||
      (array.rank &&
       std::memcmp(again.dims, array.dims, array.rank * sizeof(int64_t))) ||
      std::memcmp(again.data, array.data, array.nbytes))
    finding("the array changed when written and read back", "");
  dist_rt_npy_free(&again);
  dist_rt_npy_free(&array);
  return 0;
}
