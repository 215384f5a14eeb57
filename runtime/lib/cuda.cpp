//===- cuda.cpp - The runtime's CUDA layer ----------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What a CUDA model (dist-opt --target=cuda) needs at run time:
//
// - The CUDA driver, loaded with dlopen (libcuda.so.1) when a model asks
//   for a GPU, so that the runtime and every artifact load and run on
//   machines without one; cuda.h gives the types at build time. One device
//   per process, its primary context current on every thread that uses it,
//   one stream for the kernels.
// - The mgpu* functions MLIR's GPU lowering calls (gpu-to-llvm): module
//   loads, kernel launches, streams, events, memory. Debian ships no MLIR
//   CUDA runtime (ENVIRONMENT.md), and ours differs where it must: a
//   module's load, which the lowering makes a global constructor, only
//   records the image (constructors run before any model opens a GPU, and
//   on machines without one); the image is loaded on the first launch.
// - A caching allocator of device memory (dist_rt_device_*), which the
//   host code of a CUDA model allocates from (dist-device-allocations):
//   blocks are CUDA managed memory, which kernels and the host code left
//   on the host can both use; freed blocks wait on size-class lists so the
//   steady state allocates nothing from the driver.
//
// Errors in calls from generated code (a launch the driver rejects, device
// memory exhausted, a kernel's illegal address) fail the run going on with
// one message (dist_rt::failRun); the launches after it are skipped and
// the run returns that error. An allocation the device cannot hold is
// served from host memory so that the host code does not fault before the
// run returns its error.
//
// Without cuda.h at build time (CMake did not find it) the layer only
// reports that it was not built.
//
//===----------------------------------------------------------------------===//

#include "cuda_internal.h"
#include "dist_rt/kernels.h"
#include "internal.h"
#include "library.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#if DIST_RT_HAVE_CUDA
#include <cuda.h>
#include <dlfcn.h>
#endif

namespace {

/// Rounds a request up to its size class: 256 bytes up to 1 MiB, then
/// 1/8 of the next power of two (at most 12.5% more than asked).
[[maybe_unused]] size_t sizeClass(size_t bytes) {
  if (bytes <= (size_t{1} << 20))
    return (bytes + 255) & ~size_t{255};
  size_t p = 1;
  while (p < bytes)
    p <<= 1;
  size_t step = p >> 3;
  return (bytes + step - 1) / step * step;
}

} // namespace

#if DIST_RT_HAVE_CUDA

namespace {

/// The driver entry points used, resolved once from libcuda.so.1.
struct Driver {
  decltype(&cuInit) init = nullptr;
  decltype(&cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&cuDeviceGet) deviceGet = nullptr;
  decltype(&cuDeviceGetName) deviceGetName = nullptr;
  decltype(&cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&cuModuleLoadData) moduleLoadData = nullptr;
  decltype(&cuModuleUnload) moduleUnload = nullptr;
  decltype(&cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&cuLaunchKernel) launchKernel = nullptr;
  decltype(&cuStreamCreate) streamCreate = nullptr;
  decltype(&cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&cuEventCreate) eventCreate = nullptr;
  decltype(&cuEventDestroy) eventDestroy = nullptr;
  decltype(&cuEventRecord) eventRecord = nullptr;
  decltype(&cuEventSynchronize) eventSynchronize = nullptr;
  decltype(&cuStreamWaitEvent) streamWaitEvent = nullptr;
  decltype(&cuMemAllocManaged) memAllocManaged = nullptr;
  decltype(&cuMemFree) memFree = nullptr;
  decltype(&cuMemcpy) memcpy = nullptr;
  decltype(&cuMemsetD32) memsetD32 = nullptr;
  decltype(&cuMemsetD16) memsetD16 = nullptr;
  decltype(&cuMemGetInfo) memGetInfo = nullptr;
  decltype(&cuGetErrorString) errorString = nullptr;
};

/// The process's GPU: the driver, the device, its stream and memory.
struct Gpu {
  std::mutex mutex;
  Driver api;
  bool loaded = false;
  /// Why the driver cannot be used ("" once it is loaded and initialised).
  std::string driverProblem;
  int ordinal = -1;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::string name;
  /// Live blocks and their size classes; freed blocks by size class.
  std::unordered_map<const void *, size_t> live;
  std::multimap<size_t, void *> freeBlocks;
  /// Host blocks handed out when the device was out of memory.
  std::unordered_map<const void *, size_t> hostFallback;
};

Gpu &gpu() {
  static Gpu *g = new Gpu(); // never destroyed: kernels may outlive main
  return *g;
}

std::string describe(CUresult r) {
  const char *text = nullptr;
  Gpu &g = gpu();
  if (g.api.errorString)
    g.api.errorString(r, &text);
  return text ? std::string(text) : "CUDA error " + std::to_string(r);
}

/// Loads and initialises the driver once. Holds g.mutex.
void loadDriver(Gpu &g) {
  if (g.loaded || !g.driverProblem.empty())
    return;
  void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    g.driverProblem = std::string("no CUDA driver on this machine (") +
                      (why ? why : "libcuda.so.1 not found") + ")";
    return;
  }
  Driver &a = g.api;
  bool ok =
      dist_rt::resolveSymbol(handle, "cuInit", a.init) &&
      dist_rt::resolveSymbol(handle, "cuDeviceGetCount", a.deviceGetCount) &&
      dist_rt::resolveSymbol(handle, "cuDeviceGet", a.deviceGet) &&
      dist_rt::resolveSymbol(handle, "cuDeviceGetName", a.deviceGetName) &&
      dist_rt::resolveSymbol(handle, "cuDeviceGetAttribute",
                             a.deviceGetAttribute) &&
      dist_rt::resolveSymbol(handle, "cuDevicePrimaryCtxRetain",
                             a.primaryCtxRetain) &&
      dist_rt::resolveSymbol(handle, "cuCtxSetCurrent", a.ctxSetCurrent) &&
      dist_rt::resolveSymbol(handle, "cuModuleLoadData", a.moduleLoadData) &&
      dist_rt::resolveSymbol(handle, "cuModuleUnload", a.moduleUnload) &&
      dist_rt::resolveSymbol(handle, "cuModuleGetFunction",
                             a.moduleGetFunction) &&
      dist_rt::resolveSymbol(handle, "cuLaunchKernel", a.launchKernel) &&
      dist_rt::resolveSymbol(handle, "cuStreamCreate", a.streamCreate) &&
      dist_rt::resolveSymbol(handle, "cuStreamSynchronize",
                             a.streamSynchronize) &&
      dist_rt::resolveSymbol(handle, "cuEventCreate", a.eventCreate) &&
      dist_rt::resolveSymbol(handle, "cuEventDestroy_v2", a.eventDestroy) &&
      dist_rt::resolveSymbol(handle, "cuEventRecord", a.eventRecord) &&
      dist_rt::resolveSymbol(handle, "cuEventSynchronize",
                             a.eventSynchronize) &&
      dist_rt::resolveSymbol(handle, "cuStreamWaitEvent", a.streamWaitEvent) &&
      dist_rt::resolveSymbol(handle, "cuMemAllocManaged", a.memAllocManaged) &&
      dist_rt::resolveSymbol(handle, "cuMemFree_v2", a.memFree) &&
      dist_rt::resolveSymbol(handle, "cuMemcpy", a.memcpy) &&
      dist_rt::resolveSymbol(handle, "cuMemsetD32_v2", a.memsetD32) &&
      dist_rt::resolveSymbol(handle, "cuMemsetD16_v2", a.memsetD16) &&
      dist_rt::resolveSymbol(handle, "cuMemGetInfo_v2", a.memGetInfo) &&
      dist_rt::resolveSymbol(handle, "cuGetErrorString", a.errorString);
  if (!ok) {
    g.driverProblem = "the CUDA driver (libcuda.so.1) lacks the entry points "
                      "this runtime needs; update the driver";
    return;
  }
  if (CUresult r = a.init(0); r != CUDA_SUCCESS) {
    g.driverProblem = "the CUDA driver cannot start: " + describe(r);
    return;
  }
  g.loaded = true;
}

/// Makes the device's context current on the calling thread.
bool makeCurrent() {
  thread_local CUcontext current = nullptr;
  Gpu &g = gpu();
  if (!g.context)
    return false;
  if (current == g.context)
    return true;
  if (g.api.ctxSetCurrent(g.context) != CUDA_SUCCESS)
    return false;
  current = g.context;
  return true;
}

/// Fails the run going on with "CUDA: <what>: <driver's message>".
void fail(const char *what, CUresult r) {
  std::string text = std::string("CUDA: ") + what + ": " + describe(r);
  dist_rt::failRun(text.c_str());
}

/// A kernel image recorded by mgpuModuleLoad, loaded on first use.
struct LazyModule {
  const void *image;
  size_t size;
  CUmodule module = nullptr;
  std::mutex mutex;
  std::map<std::string, CUfunction> functions;
};

} // namespace

std::string dist_rt::cuda::open(int ordinal) {
  Gpu &g = gpu();
  std::lock_guard<std::mutex> lock(g.mutex);
  bool byLocalRank = ordinal == kLocalRankDevice;
  if (ordinal < 0) {
    ordinal = 0;
    if (const char *env = std::getenv("DIST_RT_DEVICE"); env && *env) {
      byLocalRank = false;
      char *end = nullptr;
      long v = std::strtol(env, &end, 10);
      if (*end || v < 0 || v > 1024)
        return "DIST_RT_DEVICE=" + std::string(env) + " is not a device number";
      ordinal = static_cast<int>(v);
    }
  }
  if (g.context) {
    if (g.ordinal == ordinal)
      return "";
    return "device " + std::to_string(g.ordinal) +
           " is already open in this process (one GPU per process)";
  }
  loadDriver(g);
  if (!g.loaded)
    return g.driverProblem;
  Driver &a = g.api;
  int count = 0;
  if (CUresult r = a.deviceGetCount(&count); r != CUDA_SUCCESS)
    return "cannot count the GPUs: " + describe(r);
  if (count == 0)
    return "no GPU on this machine";
  // The GPU the NCCL backend takes for this rank (comm_nccl.cpp).
  if (byLocalRank)
    ordinal = dist_rt::launcherLocalRank(0) % count;
  if (ordinal >= count)
    return "there is no device " + std::to_string(ordinal) +
           " (this machine has " + std::to_string(count) + " GPU" +
           (count == 1 ? "" : "s") + ": 0 to " + std::to_string(count - 1) +
           ")";
  if (CUresult r = a.deviceGet(&g.device, ordinal); r != CUDA_SUCCESS)
    return "device " + std::to_string(ordinal) + ": " + describe(r);
  if (CUresult r = a.primaryCtxRetain(&g.context, g.device);
      r != CUDA_SUCCESS) {
    g.context = nullptr;
    return "device " + std::to_string(ordinal) +
           ": cannot create a context: " + describe(r);
  }
  if (!makeCurrent()) {
    g.context = nullptr;
    return "device " + std::to_string(ordinal) +
           ": cannot make its context current";
  }
  if (CUresult r = a.streamCreate(&g.stream, CU_STREAM_NON_BLOCKING);
      r != CUDA_SUCCESS)
    return "device " + std::to_string(ordinal) +
           ": cannot create a stream: " + describe(r);
  char name[256] = {0};
  a.deviceGetName(name, sizeof(name) - 1, g.device);
  g.name = std::string(name) + " (device " + std::to_string(ordinal) + ")";
  g.ordinal = ordinal;
  return "";
}

std::string dist_rt::cuda::deviceName() {
  Gpu &g = gpu();
  std::lock_guard<std::mutex> lock(g.mutex);
  return g.name;
}

void *dist_rt::cuda::allocate(size_t bytes, std::string &error) {
  Gpu &g = gpu();
  size_t size = sizeClass(bytes ? bytes : 1);
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!g.context) {
    error = "no GPU is open";
    return nullptr;
  }
  auto it = g.freeBlocks.find(size);
  if (it != g.freeBlocks.end()) {
    void *block = it->second;
    g.freeBlocks.erase(it);
    g.live[block] = size;
    return block;
  }
  if (!makeCurrent()) {
    error = "cannot make the GPU's context current";
    return nullptr;
  }
  CUdeviceptr p = 0;
  CUresult r = g.api.memAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL);
  if (r == CUDA_ERROR_OUT_OF_MEMORY && !g.freeBlocks.empty()) {
    // Give the cached blocks back to the driver and try once more.
    for (auto &entry : g.freeBlocks)
      g.api.memFree(reinterpret_cast<CUdeviceptr>(entry.second));
    g.freeBlocks.clear();
    r = g.api.memAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL);
  }
  if (r != CUDA_SUCCESS) {
    size_t freeBytes = 0, totalBytes = 0;
    g.api.memGetInfo(&freeBytes, &totalBytes);
    char text[256];
    std::snprintf(text, sizeof(text),
                  "GPU out of memory allocating %zu bytes on %s (%zu MiB free "
                  "of %zu MiB): %s",
                  bytes, g.name.c_str(), freeBytes >> 20, totalBytes >> 20,
                  describe(r).c_str());
    error = text;
    return nullptr;
  }
  void *block = reinterpret_cast<void *>(p);
  g.live[block] = size;
  return block;
}

void dist_rt::cuda::release(void *block) {
  if (!block)
    return;
  Gpu &g = gpu();
  std::lock_guard<std::mutex> lock(g.mutex);
  auto it = g.live.find(block);
  if (it != g.live.end()) {
    g.freeBlocks.emplace(it->second, block);
    g.live.erase(it);
    return;
  }
  auto host = g.hostFallback.find(block);
  if (host != g.hostFallback.end()) {
    std::free(block);
    g.hostFallback.erase(host);
  }
}

bool dist_rt::cuda::owns(const void *p) {
  Gpu &g = gpu();
  std::lock_guard<std::mutex> lock(g.mutex);
  return g.live.count(p) || g.hostFallback.count(p);
}

std::string dist_rt::cuda::copy(void *dst, const void *src, size_t bytes) {
  if (!bytes)
    return "";
  Gpu &g = gpu();
  if (!makeCurrent())
    return "no GPU is open";
  // cuMemcpy (unified addressing) takes host, managed and device pointers
  // alike; it is synchronous with respect to the host, after the kernels
  // launched before it on the legacy stream. Ours is non-blocking, so it is
  // waited for first.
  if (CUresult r = g.api.streamSynchronize(g.stream); r != CUDA_SUCCESS)
    return describe(r);
  if (CUresult r = g.api.memcpy(reinterpret_cast<CUdeviceptr>(dst),
                                reinterpret_cast<CUdeviceptr>(src), bytes);
      r != CUDA_SUCCESS)
    return describe(r);
  return "";
}

std::string dist_rt::cuda::synchronize() {
  Gpu &g = gpu();
  if (!makeCurrent())
    return "no GPU is open";
  if (CUresult r = g.api.streamSynchronize(g.stream); r != CUDA_SUCCESS)
    return describe(r);
  return "";
}

void *dist_rt::cuda::currentStream() {
  return makeCurrent() ? gpu().stream : nullptr;
}

//===----------------------------------------------------------------------===//
// MLIR's GPU runtime calls (gpu-to-llvm)
//===----------------------------------------------------------------------===//

extern "C" void *mgpuModuleLoad(void *data, size_t size) {
  auto *m = new LazyModule();
  m->image = data;
  m->size = size;
  return m;
}

extern "C" void *mgpuModuleLoadJIT(void *data, int /*optLevel*/) {
  // PTX images are not emitted by dist-opt (dist-gpu-fat-binary keeps
  // cubins); cuModuleLoadData JIT-compiles PTX all the same.
  return mgpuModuleLoad(data, std::strlen(static_cast<const char *>(data)) + 1);
}

extern "C" void mgpuModuleUnload(void *module) {
  // Runs as a global destructor, when the driver may be gone: the image
  // stays loaded until the process ends.
  (void)module;
}

extern "C" void *mgpuModuleGetFunction(void *module, const char *name) {
  auto *m = static_cast<LazyModule *>(module);
  if (dist_rt::runFailed() || !m)
    return nullptr;
  if (!makeCurrent()) {
    dist_rt::failRun("CUDA: a kernel was launched before a GPU was opened "
                     "(dist_rt_model_create opens it)");
    return nullptr;
  }
  Gpu &g = gpu();
  std::lock_guard<std::mutex> lock(m->mutex);
  if (!m->module) {
    CUresult r = g.api.moduleLoadData(&m->module, m->image);
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU) {
      int major = 0, minor = 0;
      g.api.deviceGetAttribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g.device);
      g.api.deviceGetAttribute(
          &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g.device);
      char text[256];
      std::snprintf(text, sizeof(text),
                    "CUDA: the artifact has no kernels for %s (sm_%d%d); "
                    "compile it with --target=cuda:sm_%d%d",
                    g.name.c_str(), major, minor, major, minor);
      dist_rt::failRun(text);
      m->module = nullptr;
      return nullptr;
    }
    if (r != CUDA_SUCCESS) {
      m->module = nullptr;
      fail("cannot load the kernels", r);
      return nullptr;
    }
  }
  auto it = m->functions.find(name);
  if (it != m->functions.end())
    return it->second;
  CUfunction fn = nullptr;
  if (CUresult r = g.api.moduleGetFunction(&fn, m->module, name);
      r != CUDA_SUCCESS) {
    fail("kernel not found", r);
    return nullptr;
  }
  m->functions.emplace(name, fn);
  return fn;
}

extern "C" void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                                 intptr_t gridZ, intptr_t blockX,
                                 intptr_t blockY, intptr_t blockZ, int32_t smem,
                                 void *stream, void **params, void **extra,
                                 size_t /*paramsCount*/) {
  if (!function || dist_rt::runFailed())
    return;
  Gpu &g = gpu();
  CUresult r = g.api.launchKernel(
      static_cast<CUfunction>(function), static_cast<unsigned>(gridX),
      static_cast<unsigned>(gridY), static_cast<unsigned>(gridZ),
      static_cast<unsigned>(blockX), static_cast<unsigned>(blockY),
      static_cast<unsigned>(blockZ), static_cast<unsigned>(smem),
      stream ? static_cast<CUstream>(stream) : g.stream, params, extra);
  if (r != CUDA_SUCCESS)
    fail("kernel launch", r);
}

extern "C" void *mgpuStreamCreate(void) {
  // The kernels of a model run in order on the device's one stream.
  makeCurrent();
  return gpu().stream;
}

extern "C" void mgpuStreamDestroy(void *) {}

extern "C" void mgpuStreamSynchronize(void *stream) {
  if (dist_rt::runFailed() || !makeCurrent())
    return;
  Gpu &g = gpu();
  if (CUresult r = g.api.streamSynchronize(
          stream ? static_cast<CUstream>(stream) : g.stream);
      r != CUDA_SUCCESS)
    fail("a kernel failed", r);
}

extern "C" void mgpuStreamWaitEvent(void *stream, void *event) {
  if (dist_rt::runFailed() || !makeCurrent())
    return;
  if (CUresult r = gpu().api.streamWaitEvent(static_cast<CUstream>(stream),
                                             static_cast<CUevent>(event), 0);
      r != CUDA_SUCCESS)
    fail("stream wait", r);
}

extern "C" void *mgpuEventCreate(void) {
  CUevent event = nullptr;
  if (!makeCurrent())
    return nullptr;
  if (CUresult r = gpu().api.eventCreate(&event, CU_EVENT_DISABLE_TIMING);
      r != CUDA_SUCCESS)
    fail("event", r);
  return event;
}

extern "C" void mgpuEventDestroy(void *event) {
  if (event && makeCurrent())
    gpu().api.eventDestroy(static_cast<CUevent>(event));
}

extern "C" void mgpuEventSynchronize(void *event) {
  if (!event || dist_rt::runFailed())
    return;
  if (CUresult r = gpu().api.eventSynchronize(static_cast<CUevent>(event));
      r != CUDA_SUCCESS)
    fail("a kernel failed", r);
}

extern "C" void mgpuEventRecord(void *event, void *stream) {
  if (!event || dist_rt::runFailed())
    return;
  if (CUresult r = gpu().api.eventRecord(static_cast<CUevent>(event),
                                         static_cast<CUstream>(stream));
      r != CUDA_SUCCESS)
    fail("event", r);
}

extern "C" void mgpuSetDefaultDevice(int32_t) {}

#else // !DIST_RT_HAVE_CUDA

std::string dist_rt::cuda::open(int) {
  return "this runtime was built without CUDA (cuda.h was not found)";
}
std::string dist_rt::cuda::deviceName() { return ""; }
void *dist_rt::cuda::allocate(size_t, std::string &error) {
  error = "this runtime was built without CUDA";
  return nullptr;
}
void dist_rt::cuda::release(void *) {}
bool dist_rt::cuda::owns(const void *) { return false; }
std::string dist_rt::cuda::copy(void *, const void *, size_t) {
  return "this runtime was built without CUDA";
}
std::string dist_rt::cuda::synchronize() {
  return "this runtime was built without CUDA";
}
void *dist_rt::cuda::currentStream() { return nullptr; }

#endif // DIST_RT_HAVE_CUDA

//===----------------------------------------------------------------------===//
// The CUDA target's host code (dist-device-allocations)
//===----------------------------------------------------------------------===//

namespace {

/// A block for generated code: device memory, or host memory once the run
/// has failed (out of device memory), so that the host code runs on to the
/// end of the run without faulting.
void *deviceBlock(size_t bytes) {
  std::string error;
  void *block = dist_rt::cuda::allocate(bytes, error);
  if (block)
    return block;
  dist_rt::failRun(error.c_str());
#if DIST_RT_HAVE_CUDA
  size_t size = sizeClass(bytes ? bytes : 1);
  void *host = std::aligned_alloc(256, size);
  if (!host) {
    std::fprintf(stderr, "error: out of host memory (%zu bytes) after: %s\n",
                 size, error.c_str());
    std::exit(1);
  }
  Gpu &g = gpu();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.hostFallback[host] = size;
  return host;
#else
  std::fprintf(stderr, "error: %s\n", error.c_str());
  std::exit(1);
#endif
}

struct RankedHeader {
  char *allocated;
  char *aligned;
  int64_t offset;
};

struct Unranked {
  int64_t rank;
  void *descriptor;
};

/// Whether a view of `rank` sizes and strides is contiguous row-major.
bool contiguous(int64_t rank, const int64_t *sizes, const int64_t *strides) {
  int64_t run = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != run)
      return false;
    run *= sizes[d];
  }
  return true;
}

} // namespace

extern "C" void *dist_rt_device_alloc(size_t size) { return deviceBlock(size); }

extern "C" void *dist_rt_device_aligned_alloc(size_t alignment, size_t size) {
  // Device blocks are 256-byte aligned (the driver's, and the size classes
  // keep it); larger alignments are not asked for by the lowering.
  (void)alignment;
  return deviceBlock(size);
}

extern "C" void dist_rt_device_free(void *ptr) { dist_rt::cuda::release(ptr); }

extern "C" void dist_rt_device_memref_copy(int64_t elemSize, void *src,
                                           void *dst) {
  auto *s = static_cast<Unranked *>(src);
  auto *d = static_cast<Unranked *>(dst);
  int64_t rank = s->rank;
  auto *sh = static_cast<RankedHeader *>(s->descriptor);
  auto *dh = static_cast<RankedHeader *>(d->descriptor);
  const auto *sizes = reinterpret_cast<const int64_t *>(sh + 1);
  const int64_t *srcStrides = sizes + rank;
  const int64_t *dstStrides = reinterpret_cast<const int64_t *>(dh + 1) + rank;
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i)
    count *= sizes[i];
  if (count == 0 || dist_rt::runFailed())
    return;
  char *from = sh->aligned + sh->offset * elemSize;
  char *to = dh->aligned + dh->offset * elemSize;
  if (contiguous(rank, sizes, srcStrides) &&
      contiguous(rank, sizes, dstStrides)) {
    std::string error =
        dist_rt::cuda::copy(to, from, static_cast<size_t>(count * elemSize));
    if (!error.empty()) {
      std::string text = "CUDA: copy: " + error;
      dist_rt::failRun(text.c_str());
    }
    return;
  }
  // Strided: the host walks the rows of managed memory once the kernels
  // that write it are done.
  std::string error = dist_rt::cuda::synchronize();
  if (!error.empty()) {
    std::string text = "CUDA: a kernel failed: " + error;
    dist_rt::failRun(text.c_str());
    return;
  }
  memrefCopy(elemSize, src, dst);
}
