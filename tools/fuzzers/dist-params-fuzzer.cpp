//===- dist-params-fuzzer.cpp - libFuzzer target for parameter files ------===//
// SPDX-License-Identifier: Apache-2.0
//
// Feeds arbitrary bytes to dist_rt_params_open, which maps an artifact's
// <model>.params file (dist_rt/param_format.h). A rejected file must get a
// one-line error; an accepted one must describe entries that lie inside the
// file, aligned, each found again by its name.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "dist_rt/dist_rt.h"
#include "dist_rt/param_format.h"

using namespace dist_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static MemFile file("model.params");
  file.write(data, size);
  dist_rt_params_t params = nullptr;
  if (dist_rt_status_t status = dist_rt_params_open(file.path(), &params)) {
    checkOneLine(dist_rt_status_message(status));
    dist_rt_status_free(status);
    if (params)
      finding("a failed open returned a handle", "");
    return 0;
  }
  size_t count = dist_rt_params_count(params);
  for (size_t i = 0; i < count; ++i) {
    dist_rt_param_info_t info{};
    if (dist_rt_status_t status = dist_rt_params_get(params, i, &info))
      finding("an entry of an accepted file is unreadable",
              dist_rt_status_message(status));
    if (std::strlen(info.name) != info.name_len)
      finding("name length", info.name);
    if (info.rank > DIST_RT_PARAM_MAX_RANK)
      finding("rank", std::to_string(info.rank));
    uint64_t elements = 1;
    for (uint32_t d = 0; d < info.rank; ++d) {
      if (info.dims[d] < 0)
        finding("negative extent", info.name);
      elements *= static_cast<uint64_t>(info.dims[d]);
    }
    if (info.nbytes != elements * dist_rt_dtype_size(info.dtype))
      finding("size does not match the shape", info.name);
    if (reinterpret_cast<uintptr_t>(info.data) % DIST_RT_PARAM_ALIGNMENT)
      finding("unaligned data", info.name);
    touch(info.data, info.nbytes);
    dist_rt_param_info_t found{};
    if (dist_rt_status_t status =
            dist_rt_params_find(params, info.name, &found))
      finding("an entry is not found by its name",
              dist_rt_status_message(status));
    if (found.data != info.data)
      finding("the name finds another entry", info.name);
  }
  dist_rt_param_info_t none{};
  if (dist_rt_status_t status = dist_rt_params_get(params, count, &none)) {
    checkOneLine(dist_rt_status_message(status));
    dist_rt_status_free(status);
  } else {
    finding("an entry past the end was returned", std::to_string(count));
  }
  dist_rt_params_release(params);
  return 0;
}
