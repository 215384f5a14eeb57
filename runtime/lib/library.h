//===- library.h - Libraries the runtime loads with dlopen ------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The runtime links no optional library: MPI, NCCL, ZeroMQ, OpenBLAS, the
// CUDA driver and cuBLASLt are loaded with dlopen when first needed, their
// entry points looked up with resolveSymbol.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_LIBRARY_H
#define DIST_RT_LIBRARY_H

#include <dlfcn.h>

namespace dist_rt {

/// Sets `out` to the symbol `name` of the library `handle` (from dlopen),
/// as the function pointer (or object address) type `T`. Returns whether
/// the library has it.
template <typename T>
bool resolveSymbol(void *handle, const char *name, T &out) {
  out = reinterpret_cast<T>(dlsym(handle, name));
  return out != nullptr;
}

} // namespace dist_rt

#endif // DIST_RT_LIBRARY_H
