//===- Cluster.h - The unified cluster object -------------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The machines a model is planned for: nodes, the devices in each node
// (kind, model, count, memory, peak FLOP/s per data type, memory bandwidth,
// price per device-hour), the links inside a node and between nodes, and the
// measurements `dist-opt calibrate` took. A plain C++ model, usable without
// IR: the planner and the cost model read it, and the `#dist.cluster`
// attribute on a module carries its JSON form.
//
// Units are SI base units throughout: bytes, bytes per second, seconds,
// FLOP per second, currency units per device-hour.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_PLANNER_CLUSTER_H
#define DIST_PLANNER_CLUSTER_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::dist {

/// Kind of compute device.
enum class DevKind { CPU, GPU };

/// "cpu" / "gpu".
const char *stringifyDevKind(DevKind kind);

/// A point-to-point or collective link: alpha-beta model.
struct LinkSpec {
  double bandwidthBytesPerS = 0; ///< > 0
  double latencyS = 0;           ///< >= 0
};

/// Operand layout of a matrix product C[m, n] = A * B: "nn" (A is [m, k]
/// and B is [k, n], both row-major), "nt" (B stored as [n, k], as ONNX
/// Gemm's transB and Linear weights give it) or "tn" (A stored as [k, m],
/// as a weight gradient reads its input).
enum class GemmLayout { NN, NT, TN };
constexpr int kNumGemmLayouts = 3;
const char *stringifyGemmLayout(GemmLayout layout);
std::optional<GemmLayout> parseGemmLayout(std::string_view text);

/// FLOP/s measured for one product shape.
struct GemmShapePoint {
  GemmLayout layout = GemmLayout::NN;
  double m = 0, n = 0, k = 0, flops = 0;
};

/// One layout's part of a shape grid, indexed for lookups: the sorted
/// values of m, n and k, and log(FLOP/s) of shape (m[i], n[j], k[l]) at
/// (i * n.size() + j) * k.size() + l. Empty when the layout was not
/// measured.
struct GemmShapeGrid {
  std::vector<double> m, n, k;
  std::vector<double> logFlops;
};

/// GEMM throughput measured at one thread count (CPU) for one data type:
/// square products at a few sizes (the cost model interpolates by the
/// geometric mean of M, N and K) and, when `dist-opt calibrate` measured
/// them, a grid of shapes per layout (every combination of a few values of
/// M, N and K), which the cost model interpolates in M, N and K.
struct GemmCalibration {
  int64_t threads = 1;
  /// (geometric-mean size, FLOP/s) pairs sorted by size.
  std::vector<std::pair<double, double>> flopsBySize;
  /// The shape grid; empty when not measured.
  std::vector<GemmShapePoint> shapes;
  /// The points of `shapes` whose m, n and k are all powers of two, per
  /// layout, built by indexGemmShapes.
  GemmShapeGrid grids[kNumGemmLayouts];
  /// The other points of `shapes` (none in a file written before they were
  /// measured), per layout. Row strides of a power of two elements make a
  /// product's loads collide in the cache (4 KiB aliasing): on this
  /// project's EPYC a 64x64x1024 product with B transposed runs at 54-66
  /// GFLOP/s and a 64x64x1000 one at 149. So the cost model reads products
  /// whose leading dimensions are such strides off `grids` and the others
  /// off this grid.
  GemmShapeGrid unalignedGrids[kNumGemmLayouts];
};

/// Checks that the points of `cal.shapes` whose dimensions are all powers
/// of two, and separately the other points, cover for each layout present
/// every combination of the m, n and k values they use, once each, and
/// builds `cal.grids` and `cal.unalignedGrids` from them. Returns "" or what
/// is wrong.
std::string indexGemmShapes(GemmCalibration &cal);

/// True when `v` is a positive power of two.
bool isPowerOfTwoExtent(double v);

/// What `dist-opt calibrate` measured on one device type.
struct DeviceCalibration {
  /// Per data type ("f32", "f64", ...): GEMM throughput per thread count.
  std::map<std::string, std::vector<GemmCalibration>> gemm;
  /// Streaming memory bandwidth (bytes/s) per thread count.
  std::map<int64_t, double> memoryBandwidthByThreads;
  /// Cost of one generated elementwise op over N f32 elements at one
  /// thread, as fixed overhead plus per-element time.
  double kernelOverheadS = 0;
  /// Fixed cost of one call into the runtime's GEMM beyond its products'
  /// (dispatch), seconds: the shape grid times single products, so a batch
  /// of N products costs N grid products less N - 1 of this.
  double gemmCallOverheadS = 0;
  /// Time of a lone 1x1x1 product call, seconds: a product smaller than the
  /// shape grid costs this plus its share of the time above it at the
  /// grid's edge (see gridFlops in CostModel.cpp). 0: not measured.
  double gemmCallFloorS = 0;
  /// Fixed cost of one call of a model step (argument marshalling, buffer
  /// setup), seconds.
  double stepOverheadS = 0;
  /// Fixed cost of one loop forked onto the runtime's pool (waking the
  /// workers, joining them), seconds, per thread count (keys >= 2).
  std::map<int64_t, double> forkOverheadByThreads;
  /// Throughput of generated (compiler-emitted) loops per kernel class
  /// ("elementwise", "reduction", "movement", "window"; see
  /// CostModel.h KernelClass): (footprint bytes, bytes/s) pairs sorted by
  /// footprint, measured at one thread on small models dist-opt compiles.
  /// "in_place" is the optimizer update's fused loop, which rewrites its
  /// arrays where it read them (dist-calibrate's AdamW-shaped loop; its
  /// footprint is that of all four arrays).
  std::map<std::string, std::vector<std::pair<double, double>>> loopBandwidth;
  /// The same tables measured with more threads (keys >= 2): generated
  /// loops with enough work run on the runtime's thread pool.
  std::map<int64_t,
           std::map<std::string, std::vector<std::pair<double, double>>>>
      loopBandwidthByThreads;
  /// Rate of transcendental functions in generated loops per thread count,
  /// in the cost model's FLOPs (Costs.cpp's elementCost: erf counts 12):
  /// the erf FLOPs of a GELU (erf, adds and multiplies) over its time, on
  /// the fastest of the probe's working sets. Without it the cost model
  /// takes half the vector peak, as for other arithmetic.
  std::map<int64_t, double> loopFlopsByThreads;
  /// The runtime's direct convolution (AVX-512; dist_rt/conv_plan.h) per
  /// thread count, as one thread's share of the work: seconds per 16 x 16
  /// tile-tap of tiles one row of 16 positions wide, of narrower tiles (and
  /// of the position-vectorised kernel), and per tile beyond its taps.
  /// Without them the cost model prices such a convolution as a product on
  /// the GEMM shape grid.
  std::map<int64_t, double> directConvTapByThreads;
  std::map<int64_t, double> directConvNarrowTapByThreads;
  std::map<int64_t, double> directConvTileByThreads;
};

/// The thread maps of DeviceCalibration that the YAML, JSON and
/// dist-calibrate forms all spell the same way, with their keys and
/// whether 0 is a valid value.
struct CalibrationThreadMap {
  const char *key;
  std::map<int64_t, double> DeviceCalibration::*field;
  bool allowZero;
};
inline constexpr CalibrationThreadMap kDirectConvMaps[] = {
    {"direct_conv_tap", &DeviceCalibration::directConvTapByThreads, false},
    {"direct_conv_narrow_tap", &DeviceCalibration::directConvNarrowTapByThreads,
     false},
    {"direct_conv_tile", &DeviceCalibration::directConvTileByThreads, true}};

/// One kind of device in a node (`count` identical devices).
struct DeviceSpec {
  DevKind kind = DevKind::CPU;
  std::string model;      ///< e.g. "Xeon 8480", "H100-SXM"
  int64_t count = 1;      ///< devices of this spec in the node (>= 1)
  int64_t cores = 1;      ///< CPU: hardware threads per device; GPU: SMs
  double memoryBytes = 0; ///< per device (> 0)
  /// Peak FLOP/s per data type ("f32", "f16", "bf16", "f64", "i8"), per
  /// device; at least one entry.
  std::map<std::string, double> peakFlops;
  double memoryBandwidthBytesPerS = 0; ///< per device (> 0)
  double pricePerHour = 0;             ///< per device-hour (>= 0)
  std::string isa;                     ///< CPU vector ISA ("avx512", ...)
  std::optional<DeviceCalibration> calibration;

  /// Peak FLOP/s for `dtype`, falling back to f32 when the type is absent.
  double peakFlopsFor(const std::string &dtype) const;
};

/// A node type (`count` identical nodes).
struct NodeSpec {
  std::string name;
  int64_t count = 1;
  std::vector<DeviceSpec> devices;
  /// Link between devices of this node (NVLink, shared memory, PCIe).
  LinkSpec intraLink;
};

/// The whole cluster.
struct ClusterSpec {
  std::string name;
  std::vector<NodeSpec> nodes;
  /// Link between nodes (network).
  LinkSpec interLink;
  /// Where the spec came from (file path or "local"), for messages.
  std::string source;

  /// Total number of devices of `kind` over all nodes.
  int64_t deviceCount(DevKind kind) const;
  int64_t totalDevices() const;
  int64_t totalNodes() const;
};

/// Loads a cluster file (YAML; JSON is accepted since it is YAML). On error
/// returns nullopt and sets `error` to one line "<file>:<line>:<col>: <what>",
/// e.g. "c.yaml:7:5: unknown key 'bandwith' in device (did you mean
/// 'bandwidth'?)" or "c.yaml:3:1: node 'gpu' is missing field 'devices'".
///
/// Keys are snake_case: `name` (default "cluster"), `nodes` (required list of
/// `name`, `count` (default 1), `devices`, `links: {intra: ...}`), devices
/// with `kind` (cpu | gpu), `model`, `count` (default 1), `cores` (default 1),
/// `memory`, `peak_flops` (map of f64/f32/f16/bf16/i8), `memory_bandwidth`,
/// `price_per_hour` (default 0), `isa` and `calibration`, and a top-level
/// `links: {inter: ...}`. A link is `{bandwidth: ..., latency: ...}`.
/// A missing intra-node link defaults to 10 GB/s and 5 us, a missing
/// inter-node link to 1.25 GB/s and 50 us.
///
/// Numbers are plain SI base units or strings with units: sizes B, KB, MB,
/// GB, TB (powers of 1000) and KiB, MiB, GiB, TiB (powers of 1024);
/// bandwidths are sizes followed by "/s"; latencies s, ms, us, ns; FLOP/s a
/// K, M, G, T or P prefix, optionally followed by "FLOP/s" or "FLOPS".
std::optional<ClusterSpec> loadClusterFile(const std::string &path,
                                           std::string &error);
/// Same from a string; `sourceName` is used in messages.
std::optional<ClusterSpec> parseCluster(const std::string &text,
                                        const std::string &sourceName,
                                        std::string &error);

/// Detects this machine: cores, memory, vector ISA, CPU model, and GPUs
/// through the CUDA driver (dlopen'ed libcuda.so.1) when one is present.
/// Peak figures are estimates from the ISA and clock unless `calibrated`
/// data is merged in by the caller: CPU f32 peak is hardware threads x clock
/// x FLOP per cycle (32 with AVX-512, 16 with AVX2, 8 otherwise), f64 half
/// of it, memory bandwidth 10 GB/s per thread up to 100 GB/s; GPU f32 peak is
/// SMs x 128 x 2 x clock and bandwidth 2 x memory clock x bus width. The
/// intra-node link is shared memory (20 GB/s, 1 us), the inter-node link
/// 1.25 GB/s and 50 us. Never fails: without libcuda only the CPU is listed.
ClusterSpec detectLocalCluster();

/// Writes `spec` as YAML that loadClusterFile reads back unchanged.
std::string clusterToYaml(const ClusterSpec &spec);
/// Writes `spec` as one-line JSON (the payload of `#dist.cluster`), and
/// reads it back.
std::string clusterToJson(const ClusterSpec &spec);
std::optional<ClusterSpec> clusterFromJson(const std::string &json,
                                           std::string &error);

} // namespace mlir::dist

#endif // DIST_PLANNER_CLUSTER_H
