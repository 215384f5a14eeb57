//===- ClusterDetect.cpp - Detecting the local machine --------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// detectLocalCluster: this machine as a one-node cluster, with the CPU's
// model, clock, hardware threads, memory and vector ISA from /proc/cpuinfo,
// sysconf and the compiler's CPU checks, and the GPUs the CUDA driver
// reports through a dlopen'ed libcuda.so.1 (no CUDA header or library at
// build time). The peak figures are estimates until `dist-opt calibrate`
// measures them.
//
//===----------------------------------------------------------------------===//

#include "dist/Planner/Cluster.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <map>
#include <thread>

#if defined(__linux__)
#include <dlfcn.h>
#endif
#include <unistd.h>

using namespace mlir;
using namespace mlir::dist;
using llvm::StringRef;

namespace {
// The few CUDA driver entry points used, declared here so that no CUDA header
// is needed. CUresult is an int-sized enum and CUdevice an int.
using CuInitFn = int (*)(unsigned);
using CuDeviceGetCountFn = int (*)(int *);
using CuDeviceGetFn = int (*)(int *, int);
using CuDeviceGetNameFn = int (*)(char *, int, int);
using CuDeviceTotalMemFn = int (*)(size_t *, int);
using CuDeviceGetAttributeFn = int (*)(int *, int, int);

// CUdevice_attribute values.
constexpr int cuAttrMultiprocessorCount = 16;
constexpr int cuAttrClockRateKHz = 13;
constexpr int cuAttrMemoryClockRateKHz = 36;
constexpr int cuAttrGlobalMemoryBusWidthBits = 37;
} // namespace

/// Adds one GPU DeviceSpec per distinct model found by the CUDA driver.
/// Without libcuda.so.1 or without devices nothing is added.
static void appendCudaDevices(std::vector<DeviceSpec> &devices) {
#if defined(__linux__)
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return;
  auto cuInit = reinterpret_cast<CuInitFn>(dlsym(library, "cuInit"));
  auto cuDeviceGetCount =
      reinterpret_cast<CuDeviceGetCountFn>(dlsym(library, "cuDeviceGetCount"));
  auto cuDeviceGet =
      reinterpret_cast<CuDeviceGetFn>(dlsym(library, "cuDeviceGet"));
  auto cuDeviceGetName =
      reinterpret_cast<CuDeviceGetNameFn>(dlsym(library, "cuDeviceGetName"));
  auto cuDeviceTotalMem = reinterpret_cast<CuDeviceTotalMemFn>(
      dlsym(library, "cuDeviceTotalMem_v2"));
  auto cuDeviceGetAttribute = reinterpret_cast<CuDeviceGetAttributeFn>(
      dlsym(library, "cuDeviceGetAttribute"));
  if (!cuInit || !cuDeviceGetCount || !cuDeviceGet || !cuDeviceGetName ||
      !cuDeviceTotalMem || !cuDeviceGetAttribute) {
    dlclose(library);
    return;
  }
  // The driver stays loaded once initialized: unloading it is not supported.
  int count = 0;
  if (cuInit(0) != 0 || cuDeviceGetCount(&count) != 0)
    return;

  std::map<std::string, size_t> indexByModel;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    int device = 0;
    char name[256] = {};
    if (cuDeviceGet(&device, ordinal) != 0 ||
        cuDeviceGetName(name, sizeof(name) - 1, device) != 0)
      continue;
    std::string model = StringRef(name).trim().str();
    auto known = indexByModel.find(model);
    if (known != indexByModel.end()) {
      ++devices[known->second].count;
      continue;
    }

    size_t memoryBytes = 0;
    int sms = 0, clockKHz = 0, memoryClockKHz = 0, busWidthBits = 0;
    if (cuDeviceTotalMem(&memoryBytes, device) != 0)
      memoryBytes = 0;
    if (cuDeviceGetAttribute(&sms, cuAttrMultiprocessorCount, device) != 0)
      sms = 0;
    if (cuDeviceGetAttribute(&clockKHz, cuAttrClockRateKHz, device) != 0)
      clockKHz = 0;
    if (cuDeviceGetAttribute(&memoryClockKHz, cuAttrMemoryClockRateKHz,
                             device) != 0)
      memoryClockKHz = 0;
    if (cuDeviceGetAttribute(&busWidthBits, cuAttrGlobalMemoryBusWidthBits,
                             device) != 0)
      busWidthBits = 0;

    // Estimates: 128 FP32 lanes per SM doing one FMA per cycle, and a DDR
    // memory bus. Unknown attributes fall back to typical values.
    double clockHz = clockKHz > 0 ? clockKHz * 1e3 : 1.5e9;
    double memoryClockHz = memoryClockKHz > 0 ? memoryClockKHz * 1e3 : 1.5e9;
    double busBytes = busWidthBits > 0 ? busWidthBits / 8.0 : 256.0 / 8.0;
    DeviceSpec gpu;
    gpu.kind = DevKind::GPU;
    gpu.model = model.empty() ? "gpu" : model;
    gpu.count = 1;
    gpu.cores = sms > 0 ? sms : 1;
    gpu.memoryBytes =
        memoryBytes > 0 ? double(memoryBytes) : 1024.0 * 1024 * 1024;
    gpu.peakFlops["f32"] = gpu.cores * 128.0 * 2.0 * clockHz;
    gpu.memoryBandwidthBytesPerS = 2.0 * memoryClockHz * busBytes;
    gpu.pricePerHour = 0;
    indexByModel[model] = devices.size();
    devices.push_back(std::move(gpu));
  }
#else
  (void)devices;
#endif
}

ClusterSpec dist::detectLocalCluster() {
  DeviceSpec cpu;
  cpu.kind = DevKind::CPU;

  // Model and clock from /proc/cpuinfo; the highest "cpu MHz" seen is the
  // closest to the sustained clock.
  double clockMHz = 0;
  if (llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> cpuInfo =
          llvm::MemoryBuffer::getFileAsStream("/proc/cpuinfo")) {
    StringRef text = (*cpuInfo)->getBuffer();
    while (!text.empty()) {
      auto [line, rest] = text.split('\n');
      text = rest;
      auto [key, value] = line.split(':');
      key = key.trim();
      value = value.trim();
      double mhz = 0;
      if (key == "model name" && cpu.model.empty())
        cpu.model = value.str();
      else if (key == "cpu MHz" && !value.getAsDouble(mhz) && mhz > clockMHz)
        clockMHz = mhz;
    }
  }
  if (cpu.model.empty())
    cpu.model = "cpu";
  double clockHz = clockMHz > 0 ? clockMHz * 1e6 : 2.5e9;

  int64_t threads = std::thread::hardware_concurrency();
  if (threads <= 0) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    threads = online > 0 ? online : 1;
  }
  cpu.cores = threads;

  long pages = sysconf(_SC_PHYS_PAGES);
  long pageSize = sysconf(_SC_PAGE_SIZE);
  cpu.memoryBytes = pages > 0 && pageSize > 0 ? double(pages) * double(pageSize)
                                              : 1024.0 * 1024 * 1024;

  // FLOP per cycle per hardware thread for f32: one FMA unit, 2 FLOP per lane.
  double flopsPerCycle = 8;
  cpu.isa = "generic";
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    cpu.isa = "avx512";
    flopsPerCycle = 32;
  } else if (__builtin_cpu_supports("avx2")) {
    cpu.isa = "avx2";
    flopsPerCycle = 16;
  } else {
    cpu.isa = "sse";
    flopsPerCycle = 8;
  }
#endif
  double f32 = double(cpu.cores) * clockHz * flopsPerCycle;
  cpu.peakFlops["f32"] = f32;
  cpu.peakFlops["f64"] = f32 / 2;
  // An estimate until `dist-opt calibrate` measures it.
  cpu.memoryBandwidthBytesPerS = std::min(10e9 * double(cpu.cores), 100e9);
  cpu.pricePerHour = 0;

  NodeSpec node;
  node.name = "local";
  node.count = 1;
  node.devices.push_back(std::move(cpu));
  node.intraLink = {20e9, 1e-6};
  appendCudaDevices(node.devices);

  ClusterSpec spec;
  spec.name = "local";
  spec.source = "local";
  spec.nodes.push_back(std::move(node));
  spec.interLink = {1.25e9, 50e-6};
  return spec;
}
