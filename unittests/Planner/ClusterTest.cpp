//===- ClusterTest.cpp - cluster file parsing, writing and detection ------===//
// SPDX-License-Identifier: Apache-2.0
//
// Checks that cluster files in YAML and JSON parse to the right numbers (with
// units converted), that clusterToYaml and clusterToJson read back unchanged,
// that each kind of mistake gives a one-line "file:line:col: what" error at
// the right place, and that detecting the local machine gives sane figures.
//
//===----------------------------------------------------------------------===//

#include "dist/Planner/Cluster.h"
#include "dist/Planner/Calibration.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

using namespace mlir::dist;

namespace {

const char *fullExample = R"(name: mixed
nodes:
  - name: gpu-node
    count: 4
    devices:
      - kind: gpu
        model: H100-SXM
        count: 8
        cores: 132
        memory: 80GiB
        peak_flops: {f32: 67T, bf16: 989T}
        memory_bandwidth: 3.35TB/s
        price_per_hour: 2.5
    links:
      intra: {bandwidth: 450GB/s, latency: 2us}
  - name: cpu-node
    count: 2
    devices:
      - kind: cpu
        model: Xeon 8480
        cores: 112
        memory: 512GiB
        peak_flops: {f64: 4.3e12, f32: 8.6 TFLOP/s}
        memory_bandwidth: 307.2e9
        isa: avx512
        calibration:
          gemm:
            f32:
              - threads: 1
                flops_by_size: [[256, 1.1e11], [64, 5.1e10]]
              - threads: 4
                flops_by_size: [[64, 1.9e11]]
          memory_bandwidth: {1: 1.2e10, 2: 1.8e10}
          kernel_overhead: 2.0e-7
          gemm_call_overhead: 25ns
          gemm_call_floor: 50ns
          step_overhead: 5us
links:
  inter: {bandwidth: 25GB/s, latency: 5us}
)";

// The same cluster written as JSON, with units in strings.
const char *fullExampleJson = R"({
  "name": "mixed",
  "nodes": [
    {"name": "gpu-node", "count": 4,
     "devices": [{"kind": "gpu", "model": "H100-SXM", "count": 8,
                  "cores": 132, "memory": "80GiB",
                  "peak_flops": {"f32": "67T", "bf16": "989T"},
                  "memory_bandwidth": "3.35TB/s", "price_per_hour": 2.5}],
     "links": {"intra": {"bandwidth": "450GB/s", "latency": "2us"}}},
    {"name": "cpu-node", "count": 2,
     "devices": [{"kind": "cpu", "model": "Xeon 8480", "cores": 112,
                  "memory": "512GiB",
                  "peak_flops": {"f64": 4.3e12, "f32": "8.6 TFLOP/s"},
                  "memory_bandwidth": 307.2e9, "isa": "avx512",
                  "calibration": {
                    "gemm": {"f32": [
                      {"threads": 1,
                       "flops_by_size": [[256, 1.1e11], [64, 5.1e10]]},
                      {"threads": 4, "flops_by_size": [[64, 1.9e11]]}]},
                    "memory_bandwidth": {"1": 1.2e10, "2": 1.8e10},
                    "kernel_overhead": 2.0e-7,
                    "gemm_call_overhead": "25ns",
                    "gemm_call_floor": "50ns",
                    "step_overhead": "5us"}}]}
  ],
  "links": {"inter": {"bandwidth": "25GB/s", "latency": "5us"}}
})";

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "dist-cluster-test-" + name;
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

ClusterSpec parseOk(const std::string &text, const std::string &source) {
  std::string error;
  std::optional<ClusterSpec> spec = parseCluster(text, source, error);
  EXPECT_TRUE(spec.has_value()) << error;
  EXPECT_EQ(error, "");
  return spec ? *spec : ClusterSpec();
}

std::string parseError(const std::string &text) {
  std::string error;
  std::optional<ClusterSpec> spec = parseCluster(text, "c.yaml", error);
  EXPECT_FALSE(spec.has_value());
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

void expectSameLink(const LinkSpec &a, const LinkSpec &b) {
  EXPECT_EQ(a.bandwidthBytesPerS, b.bandwidthBytesPerS);
  EXPECT_EQ(a.latencyS, b.latencyS);
}

void expectSameCalibration(const DeviceCalibration &a,
                           const DeviceCalibration &b) {
  ASSERT_EQ(a.gemm.size(), b.gemm.size());
  for (const auto &[dtype, entries] : a.gemm) {
    auto other = b.gemm.find(dtype);
    ASSERT_NE(other, b.gemm.end()) << dtype;
    ASSERT_EQ(entries.size(), other->second.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      EXPECT_EQ(entries[i].threads, other->second[i].threads);
      EXPECT_EQ(entries[i].flopsBySize, other->second[i].flopsBySize);
    }
  }
  EXPECT_EQ(a.memoryBandwidthByThreads, b.memoryBandwidthByThreads);
  EXPECT_EQ(a.kernelOverheadS, b.kernelOverheadS);
  EXPECT_EQ(a.gemmCallOverheadS, b.gemmCallOverheadS);
  EXPECT_EQ(a.gemmCallFloorS, b.gemmCallFloorS);
  EXPECT_EQ(a.stepOverheadS, b.stepOverheadS);
  EXPECT_EQ(a.loopBandwidth, b.loopBandwidth);
  EXPECT_EQ(a.loopBandwidthByThreads, b.loopBandwidthByThreads);
}

void expectSameCluster(const ClusterSpec &a, const ClusterSpec &b) {
  EXPECT_EQ(a.name, b.name);
  expectSameLink(a.interLink, b.interLink);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t n = 0; n < a.nodes.size(); ++n) {
    const NodeSpec &x = a.nodes[n], &y = b.nodes[n];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.count, y.count);
    expectSameLink(x.intraLink, y.intraLink);
    ASSERT_EQ(x.devices.size(), y.devices.size());
    for (size_t d = 0; d < x.devices.size(); ++d) {
      const DeviceSpec &p = x.devices[d], &q = y.devices[d];
      EXPECT_EQ(p.kind, q.kind);
      EXPECT_EQ(p.model, q.model);
      EXPECT_EQ(p.count, q.count);
      EXPECT_EQ(p.cores, q.cores);
      EXPECT_EQ(p.memoryBytes, q.memoryBytes);
      EXPECT_EQ(p.peakFlops, q.peakFlops);
      EXPECT_EQ(p.memoryBandwidthBytesPerS, q.memoryBandwidthBytesPerS);
      EXPECT_EQ(p.pricePerHour, q.pricePerHour);
      EXPECT_EQ(p.isa, q.isa);
      ASSERT_EQ(p.calibration.has_value(), q.calibration.has_value());
      if (p.calibration)
        expectSameCalibration(*p.calibration, *q.calibration);
    }
  }
}

/// A one-device cluster whose device has `field: value`, for unit checks.
std::string withDeviceField(const std::string &field,
                            const std::string &value) {
  std::string text = "nodes:\n"
                     "  - name: n\n"
                     "    devices:\n"
                     "      - kind: cpu\n";
  if (field != "memory")
    text += "        memory: 1GB\n";
  if (field != "peak_flops")
    text += "        peak_flops: {f32: 1T}\n";
  if (field != "memory_bandwidth")
    text += "        memory_bandwidth: 1GB/s\n";
  text += "        " + field + ": " + value + "\n";
  return text;
}

double parseMemory(const std::string &value) {
  ClusterSpec spec = parseOk(withDeviceField("memory", value), "m.yaml");
  return spec.nodes.empty() ? -1 : spec.nodes[0].devices[0].memoryBytes;
}

double parseBandwidth(const std::string &value) {
  ClusterSpec spec =
      parseOk(withDeviceField("memory_bandwidth", value), "b.yaml");
  return spec.nodes.empty() ? -1
                            : spec.nodes[0].devices[0].memoryBandwidthBytesPerS;
}

double parseFlops(const std::string &value) {
  ClusterSpec spec =
      parseOk(withDeviceField("peak_flops", "{f32: " + value + "}"), "f.yaml");
  return spec.nodes.empty() ? -1 : spec.nodes[0].devices[0].peakFlops["f32"];
}

double parseLatency(const std::string &value) {
  std::string text = withDeviceField("memory", "1GB") +
                     "links:\n  inter: {bandwidth: 1GB/s, latency: " + value +
                     "}\n";
  ClusterSpec spec = parseOk(text, "l.yaml");
  return spec.interLink.latencyS;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

TEST(Cluster, ParsesFullExample) {
  ClusterSpec spec = parseOk(fullExample, "mixed.yaml");
  EXPECT_EQ(spec.name, "mixed");
  EXPECT_EQ(spec.source, "mixed.yaml");
  ASSERT_EQ(spec.nodes.size(), 2u);

  const NodeSpec &gpuNode = spec.nodes[0];
  EXPECT_EQ(gpuNode.name, "gpu-node");
  EXPECT_EQ(gpuNode.count, 4);
  ASSERT_EQ(gpuNode.devices.size(), 1u);
  const DeviceSpec &gpu = gpuNode.devices[0];
  EXPECT_EQ(gpu.kind, DevKind::GPU);
  EXPECT_EQ(gpu.model, "H100-SXM");
  EXPECT_EQ(gpu.count, 8);
  EXPECT_EQ(gpu.cores, 132);
  EXPECT_EQ(gpu.memoryBytes, 80.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(gpu.peakFlops.size(), 2u);
  EXPECT_EQ(gpu.peakFlops.at("f32"), 67e12);
  EXPECT_EQ(gpu.peakFlops.at("bf16"), 989e12);
  EXPECT_EQ(gpu.memoryBandwidthBytesPerS, 3.35e12);
  EXPECT_EQ(gpu.pricePerHour, 2.5);
  EXPECT_EQ(gpu.isa, "");
  EXPECT_FALSE(gpu.calibration.has_value());
  EXPECT_EQ(gpuNode.intraLink.bandwidthBytesPerS, 450e9);
  EXPECT_EQ(gpuNode.intraLink.latencyS, 2e-6);

  const NodeSpec &cpuNode = spec.nodes[1];
  EXPECT_EQ(cpuNode.name, "cpu-node");
  EXPECT_EQ(cpuNode.count, 2);
  ASSERT_EQ(cpuNode.devices.size(), 1u);
  const DeviceSpec &cpu = cpuNode.devices[0];
  EXPECT_EQ(cpu.kind, DevKind::CPU);
  EXPECT_EQ(cpu.model, "Xeon 8480");
  EXPECT_EQ(cpu.count, 1);
  EXPECT_EQ(cpu.cores, 112);
  EXPECT_EQ(cpu.memoryBytes, 512.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(cpu.peakFlops.at("f64"), 4.3e12);
  EXPECT_EQ(cpu.peakFlops.at("f32"), 8.6e12);
  EXPECT_EQ(cpu.memoryBandwidthBytesPerS, 307.2e9);
  EXPECT_EQ(cpu.pricePerHour, 0);
  EXPECT_EQ(cpu.isa, "avx512");
  // No links on the node: the documented defaults.
  EXPECT_EQ(cpuNode.intraLink.bandwidthBytesPerS, 10e9);
  EXPECT_EQ(cpuNode.intraLink.latencyS, 5e-6);

  ASSERT_TRUE(cpu.calibration.has_value());
  const DeviceCalibration &cal = *cpu.calibration;
  ASSERT_EQ(cal.gemm.size(), 1u);
  const std::vector<GemmCalibration> &f32 = cal.gemm.at("f32");
  ASSERT_EQ(f32.size(), 2u);
  EXPECT_EQ(f32[0].threads, 1);
  // Sorted by size.
  ASSERT_EQ(f32[0].flopsBySize.size(), 2u);
  EXPECT_EQ(f32[0].flopsBySize[0], std::make_pair(64.0, 5.1e10));
  EXPECT_EQ(f32[0].flopsBySize[1], std::make_pair(256.0, 1.1e11));
  EXPECT_EQ(f32[1].threads, 4);
  ASSERT_EQ(f32[1].flopsBySize.size(), 1u);
  EXPECT_EQ(f32[1].flopsBySize[0], std::make_pair(64.0, 1.9e11));
  ASSERT_EQ(cal.memoryBandwidthByThreads.size(), 2u);
  EXPECT_EQ(cal.memoryBandwidthByThreads.at(1), 1.2e10);
  EXPECT_EQ(cal.memoryBandwidthByThreads.at(2), 1.8e10);
  EXPECT_EQ(cal.kernelOverheadS, 2.0e-7);
  EXPECT_DOUBLE_EQ(cal.gemmCallOverheadS, 25e-9);
  EXPECT_DOUBLE_EQ(cal.gemmCallFloorS, 50e-9);
  EXPECT_EQ(cal.stepOverheadS, 5e-6);

  EXPECT_EQ(spec.interLink.bandwidthBytesPerS, 25e9);
  EXPECT_EQ(spec.interLink.latencyS, 5e-6);
}

TEST(Cluster, CountsDevicesAcrossNodeCounts) {
  ClusterSpec spec = parseOk(fullExample, "mixed.yaml");
  EXPECT_EQ(spec.deviceCount(DevKind::GPU), 4 * 8);
  EXPECT_EQ(spec.deviceCount(DevKind::CPU), 2 * 1);
  EXPECT_EQ(spec.totalDevices(), 34);
  EXPECT_EQ(spec.totalNodes(), 6);

  ClusterSpec manual;
  NodeSpec a;
  a.count = 3;
  DeviceSpec gpus;
  gpus.kind = DevKind::GPU;
  gpus.count = 2;
  DeviceSpec cpus;
  cpus.kind = DevKind::CPU;
  cpus.count = 1;
  a.devices = {gpus, cpus};
  NodeSpec b;
  b.count = 5;
  cpus.count = 2;
  b.devices = {cpus};
  manual.nodes = {a, b};
  EXPECT_EQ(manual.deviceCount(DevKind::GPU), 6);
  EXPECT_EQ(manual.deviceCount(DevKind::CPU), 3 + 10);
  EXPECT_EQ(manual.totalDevices(), 19);
  EXPECT_EQ(manual.totalNodes(), 8);
  EXPECT_EQ(ClusterSpec().totalDevices(), 0);
}

TEST(Cluster, PeakFlopsForFallsBackToF32) {
  DeviceSpec device;
  device.peakFlops = {{"f32", 10e12}, {"bf16", 40e12}};
  EXPECT_EQ(device.peakFlopsFor("bf16"), 40e12);
  EXPECT_EQ(device.peakFlopsFor("f32"), 10e12);
  EXPECT_EQ(device.peakFlopsFor("i8"), 10e12);
  EXPECT_STREQ(stringifyDevKind(DevKind::CPU), "cpu");
  EXPECT_STREQ(stringifyDevKind(DevKind::GPU), "gpu");
}

TEST(Cluster, ConvertsUnits) {
  EXPECT_EQ(parseMemory("100"), 100.0);
  EXPECT_EQ(parseMemory("100B"), 100.0);
  EXPECT_EQ(parseMemory("2KB"), 2e3);
  EXPECT_EQ(parseMemory("3MB"), 3e6);
  EXPECT_EQ(parseMemory("16GB"), 16e9);
  EXPECT_EQ(parseMemory("2TB"), 2e12);
  EXPECT_EQ(parseMemory("1KiB"), 1024.0);
  EXPECT_EQ(parseMemory("1.5 MiB"), 1.5 * 1024 * 1024);
  EXPECT_EQ(parseMemory("80GiB"), 80.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(parseMemory("1TiB"), 1024.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(parseMemory("8.589934592e10"), 8.589934592e10);
  EXPECT_EQ(parseMemory("\"80GiB\""), 80.0 * 1024 * 1024 * 1024);

  EXPECT_EQ(parseBandwidth("25GB/s"), 25e9);
  EXPECT_EQ(parseBandwidth("1.25GB/s"), 1.25e9);
  EXPECT_EQ(parseBandwidth("1GiB/s"), 1024.0 * 1024 * 1024);
  EXPECT_EQ(parseBandwidth("500MB/s"), 500e6);
  EXPECT_EQ(parseBandwidth("2.5e12"), 2.5e12);
  EXPECT_EQ(parseBandwidth("3.35TB/s"), 3.35e12);

  EXPECT_EQ(parseFlops("67T"), 67e12);
  EXPECT_EQ(parseFlops("1.5G"), 1.5e9);
  EXPECT_EQ(parseFlops("2TFLOPS"), 2e12);
  EXPECT_EQ(parseFlops("3 PFLOP/s"), 3e15);
  EXPECT_EQ(parseFlops("4e12"), 4e12);
  EXPECT_EQ(parseFlops("500M"), 500e6);
  EXPECT_EQ(parseFlops("7K"), 7e3);

  EXPECT_EQ(parseLatency("5us"), 5e-6);
  EXPECT_EQ(parseLatency("1ms"), 1e-3);
  EXPECT_EQ(parseLatency("10ns"), 10e-9);
  EXPECT_EQ(parseLatency("0.5s"), 0.5);
  EXPECT_EQ(parseLatency("2e-6"), 2e-6);
  EXPECT_EQ(parseLatency("0"), 0.0);
}

TEST(Cluster, JsonFormParsesEqual) {
  ClusterSpec fromYaml = parseOk(fullExample, "mixed.yaml");
  std::string error;
  std::optional<ClusterSpec> fromJson = clusterFromJson(fullExampleJson, error);
  ASSERT_TRUE(fromJson.has_value()) << error;
  expectSameCluster(fromYaml, *fromJson);
}

TEST(Cluster, LoadsFile) {
  std::string path = tempPath("mixed.yaml");
  writeFile(path, fullExample);
  std::string error;
  std::optional<ClusterSpec> spec = loadClusterFile(path, error);
  ASSERT_TRUE(spec.has_value()) << error;
  EXPECT_EQ(spec->source, path);
  expectSameCluster(*spec, parseOk(fullExample, "mixed.yaml"));
  std::remove(path.c_str());
}

TEST(Cluster, MissingFileIsAnError) {
  std::string path = tempPath("does-not-exist.yaml");
  std::string error;
  EXPECT_FALSE(loadClusterFile(path, error).has_value());
  EXPECT_EQ(error.rfind(path + ": cannot open file", 0), 0u) << error;
}

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST(Cluster, RoundTripsThroughYaml) {
  ClusterSpec spec = parseOk(fullExample, "mixed.yaml");
  std::string yaml = clusterToYaml(spec);
  ClusterSpec back = parseOk(yaml, "written.yaml");
  expectSameCluster(spec, back);
  // Written twice, the same text.
  EXPECT_EQ(clusterToYaml(back), yaml);

  std::string path = tempPath("written.yaml");
  writeFile(path, yaml);
  std::string error;
  std::optional<ClusterSpec> loaded = loadClusterFile(path, error);
  ASSERT_TRUE(loaded.has_value()) << error;
  expectSameCluster(spec, *loaded);
  std::remove(path.c_str());
}

TEST(Cluster, RoundTripsThroughJson) {
  ClusterSpec spec = parseOk(fullExample, "mixed.yaml");
  std::string json = clusterToJson(spec);
  EXPECT_EQ(json.find('\n'), std::string::npos);
  EXPECT_EQ(json.front(), '{');
  std::string error;
  std::optional<ClusterSpec> back = clusterFromJson(json, error);
  ASSERT_TRUE(back.has_value()) << error << "\n" << json;
  expectSameCluster(spec, *back);
  EXPECT_EQ(clusterToJson(*back), json);
}

TEST(Cluster, RoundTripsAwkwardValues) {
  ClusterSpec spec;
  spec.name = "odd: \"name\" # with symbols";
  NodeSpec node;
  node.name = "true";
  node.count = 3;
  node.intraLink = {1.0 / 3.0, 0.1};
  DeviceSpec device;
  device.kind = DevKind::GPU;
  device.model = "Intel(R) Xeon(R) Platinum 8480+ @ 2.0GHz\ttab";
  device.count = 2;
  device.cores = 7;
  device.memoryBytes = 123456789.123;
  device.peakFlops = {{"f16", 1e15 / 7.0}, {"i8", 2.0e15}};
  device.memoryBandwidthBytesPerS = 0.1 + 0.2;
  device.pricePerHour = 1.0 / 3.0;
  device.isa = "avx2";
  DeviceCalibration calibration;
  calibration.gemm["f64"] = {};
  calibration.kernelOverheadS = 1.0 / 7.0 * 1e-6;
  calibration.gemmCallOverheadS = 1.0 / 3.0 * 1e-7;
  calibration.gemmCallFloorS = 1.0 / 7.0 * 1e-7;
  calibration.loopBandwidth["reduction"] = {{262144.5, 4.1e9 / 3.0},
                                            {6.7e7, 3.8e9}};
  calibration.loopBandwidth["window"] = {{524288, 6.9e9}};
  calibration.loopBandwidthByThreads[2]["reduction"] = {{262144.5, 8.2e9}};
  calibration.loopBandwidthByThreads[7]["elementwise"] = {{1e5, 1.0 / 3.0},
                                                          {2e6, 3e10}};
  device.calibration = calibration;
  node.devices.push_back(device);
  spec.nodes.push_back(node);
  spec.interLink = {1e10 / 3.0, 0};

  ClusterSpec fromYaml = parseOk(clusterToYaml(spec), "odd.yaml");
  expectSameCluster(spec, fromYaml);
  std::string error;
  std::optional<ClusterSpec> fromJson =
      clusterFromJson(clusterToJson(spec), error);
  ASSERT_TRUE(fromJson.has_value()) << error;
  expectSameCluster(spec, *fromJson);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(Cluster, UnknownKeySuggestsTheClosest) {
  EXPECT_EQ(parseError("nodes:\n"
                       "  - name: n\n"
                       "    devices:\n"
                       "      - kind: cpu\n"
                       "        memory: 1GB\n"
                       "        peak_flops: {f32: 1T}\n"
                       "        memory_bandwith: 1GB/s\n"),
            "c.yaml:7:9: unknown key 'memory_bandwith' in device 0 of node "
            "'n' (did you mean 'memory_bandwidth'?)");
  EXPECT_EQ(parseError("name: x\n"
                       "colour: red\n"
                       "nodes: []\n"),
            "c.yaml:2:1: unknown key 'colour' in cluster");
  EXPECT_EQ(parseError("nodes:\n"
                       "  - name: n\n"
                       "    devices:\n"
                       "      - kind: cpu\n"
                       "        memory: 1GB\n"
                       "        peak_flops: {fp32: 1T}\n"
                       "        memory_bandwidth: 1GB/s\n"),
            "c.yaml:6:22: unknown key 'fp32' in peak_flops (did you mean "
            "'f32'?)");
  EXPECT_EQ(parseError("nodes:\n"
                       "  - name: n\n"
                       "    devices:\n"
                       "      - kind: cpu\n"
                       "        memory: 1GB\n"
                       "        peak_flops: {f32: 1T}\n"
                       "        memory_bandwidth: 1GB/s\n"
                       "links:\n"
                       "  inter: {bandwith: 1GB/s, latency: 1us}\n"),
            "c.yaml:9:11: unknown key 'bandwith' in link 'inter' (did you "
            "mean 'bandwidth'?)");
}

TEST(Cluster, MissingFieldsNameThePlace) {
  EXPECT_EQ(parseError("name: x\n"
                       "nodes:\n"
                       "  - name: gpu-node\n"
                       "    count: 2\n"),
            "c.yaml:3:5: node 'gpu-node' is missing field 'devices'");
  EXPECT_EQ(parseError("name: x\n"), "c.yaml:1:1: cluster is missing field "
                                     "'nodes'");
  EXPECT_EQ(parseError("nodes:\n"
                       "  - name: n\n"
                       "    devices:\n"
                       "      - kind: cpu\n"
                       "        peak_flops: {f32: 1T}\n"
                       "        memory_bandwidth: 1GB/s\n"),
            "c.yaml:4:9: device 0 of node 'n' is missing field 'memory'");
  EXPECT_EQ(parseError("nodes:\n"
                       "  - count: 2\n"
                       "    devices: []\n"),
            "c.yaml:2:5: node 0 is missing field 'name'");
}

TEST(Cluster, WrongTypesAreReported) {
  EXPECT_EQ(parseError(withDeviceField("memory", "[1, 2]")),
            "c.yaml:7:9: expected a number for 'memory'");
  EXPECT_EQ(parseError(withDeviceField("memory", "lots")),
            "c.yaml:7:17: expected a number for 'memory'");
  EXPECT_EQ(parseError("nodes: 5\n"), "c.yaml:1:8: expected a list for "
                                      "'nodes'");
  EXPECT_EQ(parseError("nodes:\n"
                       "  - name: n\n"
                       "    count: 1.5\n"
                       "    devices: []\n"),
            "c.yaml:3:12: expected an integer for 'count'");
}

TEST(Cluster, NonPositiveValuesAreReported) {
  EXPECT_EQ(parseError(withDeviceField("memory_bandwidth", "0")),
            "c.yaml:7:27: memory_bandwidth must be positive");
  EXPECT_EQ(parseError(withDeviceField("memory", "-1GB")),
            "c.yaml:7:17: memory must be positive");
  EXPECT_EQ(parseError(withDeviceField("price_per_hour", "-0.5")),
            "c.yaml:8:25: price_per_hour must not be negative");
  EXPECT_EQ(
      parseError(withDeviceField("calibration", "{gemm_call_floor: -5ns}")),
      "c.yaml:8:40: gemm_call_floor must not be negative");
  EXPECT_EQ(
      parseError(withDeviceField("calibration", "{gemm_call_overhead: -1us}")),
      "c.yaml:8:43: gemm_call_overhead must not be negative");
  EXPECT_EQ(parseError("nodes:\n"
                       "  - name: n\n"
                       "    count: 0\n"
                       "    devices: []\n"),
            "c.yaml:3:12: count must be at least 1");
  EXPECT_EQ(parseError("nodes:\n"
                       "  - name: n\n"
                       "    devices: []\n"),
            "c.yaml:3:5: devices of node 'n' must not be empty");
}

TEST(Cluster, BadUnitsAreReported) {
  EXPECT_EQ(parseError(withDeviceField("memory", "1GB") +
                       "links:\n"
                       "  inter: {bandwidth: 25Gbps, latency: 5us}\n"),
            "c.yaml:9:22: unknown unit 'Gbps' in '25Gbps'");
  EXPECT_EQ(parseError(withDeviceField("memory", "16 gigs")),
            "c.yaml:7:17: unknown unit 'gigs' in '16 gigs'");
  // A size unit where a time is expected.
  EXPECT_EQ(parseError(withDeviceField("memory", "1GB") +
                       "links:\n"
                       "  inter: {bandwidth: 1GB/s, latency: 5GB}\n"),
            "c.yaml:9:38: unknown unit 'GB' in '5GB'");
}

TEST(Cluster, NamesAreText) {
  // Found by dist-cluster-fuzzer: a name that is not UTF-8 came back
  // changed from clusterToJson; control characters are refused alike.
  const std::string nodes = "nodes:\n  - name: n\n    devices: [{kind: cpu, "
                            "memory: 1GiB, peak_flops: {f32: 1T}, "
                            "memory_bandwidth: 1GB/s}]\n";
  const std::string refused =
      "'name' must be UTF-8 text without control characters";
  EXPECT_EQ(parseError("name: \"a\x80\xfe\"\n" + nodes),
            "c.yaml:1:7: " + refused);
  EXPECT_EQ(parseError("name: \"a\\0b\"\n" + nodes), "c.yaml:1:7: " + refused);
  EXPECT_EQ(parseError("name: c\nnodes:\n  - name: \"n\\e[31m\"\n"
                       "    devices: [{kind: cpu, memory: 1GiB, "
                       "peak_flops: {f32: 1T}, memory_bandwidth: 1GB/s}]\n"),
            "c.yaml:3:11: " + refused);
  // Any UTF-8 text and tabs are names.
  ClusterSpec spec = parseOk("name: \"caf\xc3\xa9\\tx\"\n" + nodes, "c.yaml");
  EXPECT_EQ(spec.name, "caf\xc3\xa9\tx");
}

TEST(Cluster, UnknownKindAndDuplicateNodes) {
  EXPECT_EQ(parseError("nodes:\n"
                       "  - name: n\n"
                       "    devices:\n"
                       "      - kind: tpu\n"
                       "        memory: 1GB\n"
                       "        peak_flops: {f32: 1T}\n"
                       "        memory_bandwidth: 1GB/s\n"),
            "c.yaml:4:15: unknown device kind 'tpu' (expected cpu or gpu)");
  const char *device = "    devices: [{kind: cpu, memory: 1GB, peak_flops: "
                       "{f32: 1T}, memory_bandwidth: 1GB/s}]\n";
  EXPECT_EQ(parseError(std::string("nodes:\n") + "  - name: a\n" + device +
                       "  - name: a\n" + device),
            "c.yaml:4:11: duplicate node name 'a'");
}

TEST(Cluster, EmptyAndNonMappingFiles) {
  EXPECT_EQ(parseError(""), "c.yaml:1:1: empty file");
  EXPECT_EQ(parseError("# nothing here\n\n"), "c.yaml:1:1: empty file");
  EXPECT_EQ(parseError("- a\n- b\n"),
            "c.yaml:1:1: expected a mapping at the top level");
  EXPECT_EQ(parseError("hello\n"),
            "c.yaml:1:1: expected a mapping at the top level");
}

TEST(Cluster, YamlSyntaxErrorsHaveALocation) {
  std::string error = parseError("name: x\n"
                                 "nodes:\n"
                                 "  - name: @a\n");
  EXPECT_EQ(error.rfind("c.yaml:3:11: ", 0), 0u) << error;
  EXPECT_NE(error.find("unrecognized character"), std::string::npos) << error;

  std::string unclosed = parseError("nodes: [a, b\n");
  EXPECT_EQ(unclosed.rfind("c.yaml:", 0), 0u) << unclosed;
}

TEST(Cluster, ErrorsNameTheFile) {
  std::string path = tempPath("bad.yaml");
  writeFile(path, "nodes: 5\n");
  std::string error;
  EXPECT_FALSE(loadClusterFile(path, error).has_value());
  EXPECT_EQ(error, path + ":1:8: expected a list for 'nodes'");
  std::remove(path.c_str());

  EXPECT_FALSE(clusterFromJson("{\"nodes\": 5}", error).has_value());
  EXPECT_EQ(error, "<json>:1:11: expected a list for 'nodes'");
}

//===----------------------------------------------------------------------===//
// Local detection
//===----------------------------------------------------------------------===//

TEST(Cluster, DetectsTheLocalMachine) {
  ClusterSpec spec = detectLocalCluster();
  EXPECT_EQ(spec.source, "local");
  ASSERT_EQ(spec.nodes.size(), 1u);
  const NodeSpec &node = spec.nodes[0];
  EXPECT_EQ(node.name, "local");
  EXPECT_EQ(node.count, 1);
  ASSERT_GE(node.devices.size(), 1u);
  const DeviceSpec &cpu = node.devices[0];
  EXPECT_EQ(cpu.kind, DevKind::CPU);
  EXPECT_GE(cpu.cores, 1);
  EXPECT_GT(cpu.memoryBytes, 0);
  EXPECT_GT(cpu.peakFlopsFor("f32"), 0);
  EXPECT_GT(cpu.peakFlopsFor("f64"), 0);
  EXPECT_LE(cpu.peakFlopsFor("f64"), cpu.peakFlopsFor("f32"));
  EXPECT_GT(cpu.memoryBandwidthBytesPerS, 0);
  EXPECT_LE(cpu.memoryBandwidthBytesPerS, 100e9);
  EXPECT_FALSE(cpu.isa.empty());
  EXPECT_FALSE(cpu.model.empty());
  EXPECT_EQ(node.intraLink.bandwidthBytesPerS, 20e9);
  EXPECT_EQ(node.intraLink.latencyS, 1e-6);
  EXPECT_EQ(spec.interLink.bandwidthBytesPerS, 1.25e9);
  EXPECT_EQ(spec.interLink.latencyS, 50e-6);
  for (const DeviceSpec &device : node.devices) {
    EXPECT_GE(device.count, 1);
    EXPECT_GT(device.memoryBytes, 0);
    EXPECT_GT(device.peakFlopsFor("f32"), 0);
    EXPECT_GT(device.memoryBandwidthBytesPerS, 0);
  }
  EXPECT_EQ(spec.deviceCount(DevKind::CPU), 1);

  // What was detected can be written and read back.
  ClusterSpec back = parseOk(clusterToYaml(spec), "local.yaml");
  expectSameCluster(spec, back);
}

} // namespace

/// A one-CPU cluster file up to its device's `calibration:` key (line 8);
/// the calibration's keys follow at an indent of 10.
static std::string calibrationHead() {
  return "nodes:\n"
         "  - name: n\n"
         "    devices:\n"
         "      - kind: cpu\n"
         "        memory: 1GB\n"
         "        peak_flops: {f32: 1T}\n"
         "        memory_bandwidth: 1GB/s\n"
         "        calibration:\n";
}

TEST(Cluster, LoopTablesPerThreadCount) {
  const std::string head = calibrationHead();
  ClusterSpec spec =
      parseOk(head + "          loop_bandwidth:\n"
                     "            elementwise: [[4KiB, 1GB/s]]\n"
                     "          loop_bandwidth_threads:\n"
                     "            4:\n"
                     "              elementwise: [[4KiB, 3GB/s], "
                     "[1KiB, 2GB/s]]\n",
              "c.yaml");
  ASSERT_EQ(spec.nodes.size(), 1u);
  const DeviceCalibration &cal = *spec.nodes[0].devices[0].calibration;
  ASSERT_EQ(cal.loopBandwidthByThreads.size(), 1u);
  // Sorted by footprint.
  std::vector<std::pair<double, double>> want = {{1024, 2e9}, {4096, 3e9}};
  EXPECT_EQ(cal.loopBandwidthByThreads.at(4).at("elementwise"), want);
  // The in-place update's table (dist-calibrate's) sits beside the classes.
  ClusterSpec inPlace = parseOk(
      head + "          loop_bandwidth:\n"
             "            in_place: [[64MiB, 60GB/s], [4MiB, 200GB/s]]\n",
      "c.yaml");
  std::vector<std::pair<double, double>> wantInPlace = {{4 << 20, 200e9},
                                                        {64 << 20, 60e9}};
  EXPECT_EQ(
      inPlace.nodes[0].devices[0].calibration->loopBandwidth.at("in_place"),
      wantInPlace);
  EXPECT_EQ(parseError(head + "          loop_bandwidth_threads:\n"
                              "            1:\n"
                              "              elementwise: [[4KiB, 1GB/s]]\n"),
            "c.yaml:10:13: expected a thread count >= 2, got '1'");
  EXPECT_EQ(parseError(head + "          loop_bandwidth_threads:\n"
                              "            2:\n"
                              "              vector: [[4KiB, 1GB/s]]\n"),
            "c.yaml:11:15: unknown key 'vector' in "
            "loop_bandwidth_threads.2");
  EXPECT_EQ(parseError(head + "          loop_bandwidth_threads:\n"
                              "            2:\n"
                              "              window: [[4KiB, -1GB/s]]\n"),
            "c.yaml:11:31: bandwidth must be positive");
  EXPECT_EQ(parseError(head + "          loop_bandwidth_threads:\n"
                              "            2:\n"
                              "              window: [[4KiB, 1GB/s]]\n"
                              "            2:\n"
                              "              window: [[4KiB, 1GB/s]]\n"),
            "c.yaml:12:13: duplicate thread count '2' in "
            "loop_bandwidth_threads");
}

TEST(Cluster, GemmShapeGridAndForkOverhead) {
  const std::string head = calibrationHead();
  const std::string gemm = "          gemm:\n"
                           "            f32:\n"
                           "              - threads: 1\n"
                           "                flops_by_size: [[64, 1T]]\n";
  // A full 2 x 1 x 2 grid in layout nt, given in any order.
  ClusterSpec spec = parseOk(
      head + gemm +
          "                shapes: [[nt, 8, 64, 64, 2G], [nt, 8, 64, 8, 1G],"
          " [nt, 64, 64, 8, 3G], [nt, 64, 64, 64, 4G]]\n"
          "          fork_overhead: {2: 1.5us, 4: 3us}\n"
          "          loop_flops: {1: 50GFLOP/s, 2: 9e10}\n",
      "c.yaml");
  const DeviceCalibration &cal = *spec.nodes[0].devices[0].calibration;
  const std::vector<GemmShapePoint> &shapes = cal.gemm.at("f32")[0].shapes;
  ASSERT_EQ(shapes.size(), 4u);
  EXPECT_EQ(shapes[0].layout, GemmLayout::NT);
  EXPECT_EQ(shapes[0].m, 8);
  EXPECT_EQ(shapes[0].n, 64);
  EXPECT_EQ(shapes[0].k, 64);
  EXPECT_EQ(shapes[0].flops, 2e9);
  std::map<int64_t, double> fork = {{2, 1.5e-6}, {4, 3e-6}};
  EXPECT_EQ(cal.forkOverheadByThreads, fork);
  std::map<int64_t, double> loopFlops = {{1, 5e10}, {2, 9e10}};
  EXPECT_EQ(cal.loopFlopsByThreads, loopFlops);
  // Written back as read.
  ClusterSpec again = parseOk(clusterToYaml(spec), "again.yaml");
  EXPECT_EQ(again.nodes[0].devices[0].calibration->loopFlopsByThreads,
            loopFlops);

  // Written and read back: the same figures.
  ClusterSpec back = parseOk(clusterToYaml(spec), "written.yaml");
  const DeviceCalibration &cal2 = *back.nodes[0].devices[0].calibration;
  ASSERT_EQ(cal2.gemm.at("f32")[0].shapes.size(), 4u);
  EXPECT_EQ(cal2.gemm.at("f32")[0].shapes[3].flops, 4e9);
  EXPECT_EQ(cal2.gemm.at("f32")[0].shapes[3].layout, GemmLayout::NT);
  EXPECT_EQ(cal2.forkOverheadByThreads, fork);

  EXPECT_EQ(
      parseError(head + gemm + "                shapes: [[xy, 8, 8, 8, 1G]]\n"),
      "c.yaml:13:27: expected a [layout, m, n, k, flops] list in "
      "'shapes' (layout nn, nt or tn)");
  EXPECT_EQ(parseError(head + gemm +
                       "                shapes: [[nn, 8, 8, 8, 1G], "
                       "[nn, 16, 16, 8, 1G]]\n"),
            "c.yaml:13:17: 'shapes': layout nn (powers of two) has 2 "
            "shapes, not every combination of its 2 m, 2 n and 1 k values");
  EXPECT_EQ(parseError(head + gemm +
                       "                shapes: [[nn, 8, 8, 8, 1G], "
                       "[nn, 8, 8, 8, 2G]]\n"),
            "c.yaml:13:17: 'shapes': layout nn (powers of two) has the shape "
            "8x8x8 twice");
  // Points with any other size form a grid of their own, which must be
  // complete as well; the power-of-two grid beside it is not touched.
  EXPECT_EQ(parseError(head + gemm +
                       "                shapes: [[nn, 8, 8, 8, 1G], "
                       "[nn, 10, 10, 10, 1G], [nn, 12, 12, 10, 1G]]\n"),
            "c.yaml:13:17: 'shapes': layout nn (other sizes) has 2 shapes, "
            "not every combination of its 2 m, 2 n and 1 k values");
  EXPECT_EQ(
      parseError(head + gemm + "                shapes: [[nn, 8, 0, 8, 1G]]\n"),
      "c.yaml:13:34: n must be positive");
  EXPECT_EQ(parseError(head + "          fork_overhead: {1: 1us}\n"),
            "c.yaml:9:27: expected a thread count >= 2, got '1'");
  EXPECT_EQ(parseError(head + "          loop_flops: {0: 1GFLOP/s}\n"),
            "c.yaml:9:24: expected a thread count >= 1, got '0'");
  EXPECT_EQ(parseError(head + "          loop_flops: {1: -1GFLOP/s}\n"),
            "c.yaml:9:27: loop_flops must be positive");
}

TEST(Cluster, DirectConvolutionRates) {
  const std::string head = calibrationHead();
  ClusterSpec spec =
      parseOk(head + "          direct_conv_tap: {1: 2.6ns, 2: "
                     "2.9e-9}\n"
                     "          direct_conv_narrow_tap: {1: 2.8ns}\n"
                     "          direct_conv_tile: {1: 0, 2: 20ns}\n",
              "c.yaml");
  const DeviceCalibration &cal = *spec.nodes[0].devices[0].calibration;
  std::map<int64_t, double> tap = {{1, 2.6e-9}, {2, 2.9e-9}};
  std::map<int64_t, double> narrow = {{1, 2.8e-9}};
  std::map<int64_t, double> tile = {{1, 0}, {2, 2e-8}};
  EXPECT_EQ(cal.directConvTapByThreads, tap);
  EXPECT_EQ(cal.directConvNarrowTapByThreads, narrow);
  EXPECT_EQ(cal.directConvTileByThreads, tile);
  // Written back as read, in YAML and in JSON.
  ClusterSpec back = parseOk(clusterToYaml(spec), "back.yaml");
  const DeviceCalibration &cal2 = *back.nodes[0].devices[0].calibration;
  EXPECT_EQ(cal2.directConvTapByThreads, tap);
  EXPECT_EQ(cal2.directConvNarrowTapByThreads, narrow);
  EXPECT_EQ(cal2.directConvTileByThreads, tile);
  std::string error;
  std::optional<ClusterSpec> json = clusterFromJson(clusterToJson(spec), error);
  ASSERT_TRUE(json) << error;
  const DeviceCalibration &cal3 = *json->nodes[0].devices[0].calibration;
  EXPECT_EQ(cal3.directConvTapByThreads, tap);
  EXPECT_EQ(cal3.directConvNarrowTapByThreads, narrow);
  EXPECT_EQ(cal3.directConvTileByThreads, tile);
  // A time per tap must be positive; a time per tile may be 0.
  EXPECT_EQ(parseError(head + "          direct_conv_tap: {1: 0}\n"),
            "c.yaml:9:32: direct_conv_tap must be positive");
  EXPECT_EQ(parseError(head + "          direct_conv_tile: {1: -1ns}\n"),
            "c.yaml:9:33: direct_conv_tile must not be negative");
  EXPECT_EQ(parseError(head + "          direct_conv_tap: {0: 1ns}\n"),
            "c.yaml:9:29: expected a thread count >= 1, got '0'");

  // As dist-calibrate writes them.
  std::optional<DeviceCalibration> fromTool = parseCalibrationJson(
      "{\"gemm\": {}, \"direct_conv_tap\": {\"1\": 2.6e-9}, "
      "\"direct_conv_narrow_tap\": {\"1\": 2.8e-9}, "
      "\"direct_conv_tile\": {\"1\": 0}}",
      error);
  ASSERT_TRUE(fromTool) << error;
  EXPECT_EQ(fromTool->directConvTapByThreads.at(1), 2.6e-9);
  EXPECT_EQ(fromTool->directConvTileByThreads.at(1), 0);
  EXPECT_FALSE(parseCalibrationJson(
      "{\"gemm\": {}, \"direct_conv_narrow_tap\": {\"1\": 0}}", error));
  EXPECT_EQ(error, "direct_conv_narrow_tap.1: expected seconds (positive) "
                   "keyed by a thread count");
}

TEST(Cluster, CalibrationJsonCarriesLoopTables) {
  const std::string head = "{\"gemm\": {}, ";
  std::string error;
  std::optional<DeviceCalibration> cal = parseCalibrationJson(
      head + "\"loop_bandwidth\": {\"in_place\": [[67108864, 6e10], "
             "[262144, 2e11]]}, \"loop_bandwidth_threads\": {\"2\": "
             "{\"in_place\": [[262144, 3e11]]}}}",
      error);
  ASSERT_TRUE(cal) << error;
  std::vector<std::pair<double, double>> one = {{262144, 2e11},
                                                {67108864, 6e10}};
  EXPECT_EQ(cal->loopBandwidth.at("in_place"), one);
  std::vector<std::pair<double, double>> two = {{262144, 3e11}};
  EXPECT_EQ(cal->loopBandwidthByThreads.at(2).at("in_place"), two);
  EXPECT_FALSE(parseCalibrationJson(
      head + "\"loop_bandwidth\": {\"in_place\": [[0, 6e10]]}}", error));
  EXPECT_EQ(error, "loop_bandwidth.in_place: expected [footprint, "
                   "bytes_per_s] pairs of positive numbers");
  EXPECT_FALSE(parseCalibrationJson(
      head + "\"loop_bandwidth_threads\": {\"1\": {\"in_place\": []}}}",
      error));
  EXPECT_EQ(error, "loop_bandwidth_threads.1: expected a table keyed by a "
                   "thread count of at least 2");
}

// What `dist-calibrate --gpu` writes (its schema, one thread) goes on the
// GPU devices only: the copy bandwidth and the fastest product per type
// replace the estimates (lower ones too: a data sheet's peak is not what
// the products reach), tf32 stays out of the cluster's types, and the
// cluster file carries it all back.
TEST(Cluster, GpuCalibrationGoesOnTheGpus) {
  std::string error;
  std::optional<DeviceCalibration> cal = parseCalibrationJson(
      "{\"version\": 1, \"device\": \"gpu\", \"name\": \"H200\", \"gemm\": "
      "{\"f32\": [{\"threads\": 1, \"flops_by_size\": [[256, 5e12], [4096, "
      "4.5e13]]}], \"tf32\": [{\"threads\": 1, \"flops_by_size\": [[4096, "
      "3e14]]}], \"bf16\": [{\"threads\": 1, \"flops_by_size\": [[4096, "
      "6e14]]}]}, \"memory_bandwidth\": {\"1\": 3.9e12}, \"kernel_overhead\": "
      "6e-6, \"gemm_call_floor\": 9e-6}",
      error);
  ASSERT_TRUE(cal) << error;
  ClusterSpec cluster;
  NodeSpec node;
  DeviceSpec cpu;
  cpu.kind = DevKind::CPU;
  cpu.peakFlops = {{"f32", 1e12}};
  cpu.memoryBandwidthBytesPerS = 5e10;
  cpu.memoryBytes = 16e9;
  DeviceSpec gpu;
  gpu.kind = DevKind::GPU;
  gpu.model = "H200";
  gpu.cores = 132;
  gpu.memoryBytes = 141e9;
  gpu.peakFlops = {{"f32", 6.7e13}};
  gpu.memoryBandwidthBytesPerS = 4.8e12;
  node.devices = {cpu, gpu};
  node.intraLink = {2e10, 1e-6};
  cluster.nodes = {node};
  cluster.interLink = {1.25e9, 5e-5};
  applyGpuCalibration(cluster, *cal);
  const DeviceSpec &c = cluster.nodes[0].devices[0];
  const DeviceSpec &g = cluster.nodes[0].devices[1];
  EXPECT_FALSE(c.calibration);
  EXPECT_EQ(c.peakFlops.at("f32"), 1e12);
  EXPECT_EQ(c.memoryBandwidthBytesPerS, 5e10);
  ASSERT_TRUE(g.calibration);
  EXPECT_EQ(g.peakFlops.at("f32"), 4.5e13);
  EXPECT_EQ(g.peakFlops.at("bf16"), 6e14);
  EXPECT_EQ(g.peakFlops.count("tf32"), 0u);
  EXPECT_EQ(g.calibration->gemm.count("tf32"), 0u);
  EXPECT_EQ(g.memoryBandwidthBytesPerS, 3.9e12);
  EXPECT_EQ(g.calibration->kernelOverheadS, 6e-6);
  std::optional<ClusterSpec> back =
      parseCluster(clusterToYaml(cluster), "calibrated.yaml", error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->nodes[0].devices[1].peakFlops.at("bf16"), 6e14);
  EXPECT_EQ(back->nodes[0].devices[1].memoryBandwidthBytesPerS, 3.9e12);
}
