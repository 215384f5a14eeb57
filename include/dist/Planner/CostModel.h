//===- CostModel.h - Time and memory of layers on devices -------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// The global cost model: how long a layer's forward, backward and update
// take on a device, how much memory it holds there, and what communication
// costs (alpha-beta model per collective and topology). Plain C++ over the
// cluster model; the IR side (CostOpInterface) produces the LayerCost
// records it consumes.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_PLANNER_COSTMODEL_H
#define DIST_PLANNER_COSTMODEL_H

#include "dist/Planner/Cluster.h"

#include <string>
#include <vector>

namespace mlir::dist {

/// Classes of generated loop nests, which reach different throughputs:
/// elementwise chains, reductions (softmax, norms, reduce_*), data movement
/// (transpose, gather, concat, slice, pad, im2col) and windowed kernels
/// (pooling, direct convolutions).
enum class KernelClass { Elementwise, Reduction, Movement, Window };
constexpr int kNumKernelClasses = 4;
/// "elementwise", "reduction", "movement", "window" (the keys of a
/// calibration's loop_bandwidth).
const char *stringifyKernelClass(KernelClass c);

/// One matrix product as codegen hands it to the runtime's GEMM: `count`
/// products of m x n x k in `layout` per call. Shapes are at ONE sample:
/// `batchDim` says which figure grows with the samples (0: count, the
/// products per image or head; 1: m; 2: n; 3: k).
struct GemmWork {
  double count = 1;
  double m = 1, n = 1, k = 1;
  int batchDim = 0;
  GemmLayout layout = GemmLayout::NN;
  /// The `count` products are summed into one output (a convolution's
  /// weight gradient): they run one after another, each on every thread.
  bool summed = false;
  /// A convolution that runs as the runtime's direct kernel on AVX-512
  /// (dist_rt/conv_plan.h), per sample: its 16 x 16 tile-taps and its tiles
  /// (0 for any other product), and whether its tiles are narrower than one
  /// row of 16 positions. Priced at the calibrated direct_conv rates where
  /// the device has them, else as the product above.
  double directTileTaps = 0, directItems = 0;
  bool directNarrow = false;
};

/// Generated-loop work of part of a phase (see PhaseWork's fields of the
/// same names).
struct LoopWork {
  double bytes = 0;
  double classBytes[kNumKernelClasses] = {0, 0, 0, 0};
  double classLogFootprintWeighted[kNumKernelClasses] = {0, 0, 0, 0};
  int64_t kernels = 0;
  int64_t parallelKernels = 0;
};

/// Work of one phase (forward or backward) of a layer for ONE sample.
struct PhaseWork {
  double gemmFlops = 0;  ///< FLOPs in matrix products and convolutions
  double otherFlops = 0; ///< FLOPs in everything else
  /// Of otherFlops, those of transcendental functions (exp, erf, tanh...;
  /// detail::isTranscendental), priced at the calibrated loop_flops.
  double mathFlops = 0;
  double bytes = 0; ///< memory traffic of the non-GEMM kernels
  /// Sum over the layer's matrix products of flops * log(size) where size
  /// is the geometric mean of M, N, K at batch 1 (so that the cost model
  /// can pick an efficiency per size); 0 when gemmFlops is 0.
  double gemmLogSizeWeighted = 0;
  /// Share of M in each product that grows with the batch (1: M scales
  /// with samples, 0: fixed); used to rescale the size with the batch.
  double gemmBatchScaling = 1;
  int64_t kernels = 0; ///< generated kernels (loop nests) launched
  /// Those of `kernels` with enough work to fork onto the runtime's thread
  /// pool (with more than one thread each costs a dispatch).
  int64_t parallelKernels = 0;
  int64_t gemmCalls = 0;
  /// The products one by one (their FLOPs are also in gemmFlops), for
  /// devices whose calibration has a shape grid.
  std::vector<GemmWork> gemms;
  /// `bytes` split by kernel class, and per class the sum of bytes *
  /// log(footprint per sample) of its kernels (footprint: the bytes one
  /// kernel touches), so the cost model can pick a throughput per working-set
  /// size.
  double classBytes[kNumKernelClasses] = {0, 0, 0, 0};
  double classLogFootprintWeighted[kNumKernelClasses] = {0, 0, 0, 0};
  /// Bytes of tensors filled with a constant before a kernel accumulates
  /// into them (a product's zeroed output, an embedding gradient's zero
  /// table), also in `bytes`, and their bytes * log(bytes per fill). Priced
  /// as one memset on the calling thread, whatever the thread count: codegen
  /// copies a scatter's zero table from a constant (LLVM makes it a memset);
  /// a product's output fill is small next to the product.
  double fillBytes = 0;
  double fillLogFootprintWeighted = 0;
  /// The kernels write only buffers they have read (an optimizer update
  /// rewriting parameters and state): no write-allocate traffic.
  bool inPlace = false;
  /// Loop work that only 2-D f32 convolutions run as im2col + GEMM add:
  /// the column copies, the bias broadcast into the output and a ReLU run
  /// as its own kernel. Not in the fields above. A CPU with AVX-512
  /// (DeviceSpec::isa "avx512") runs those convolutions as the runtime's
  /// direct convolution instead, which reads the padded input in place,
  /// adds the bias and applies the ReLU (the code generator's choice on
  /// such a host, LowerLinearAlgebra.cpp); the cost model adds this work
  /// on other devices.
  LoopWork im2colOnly;
};

/// Costs of one layer, as the cost op interface reports them.
struct LayerCost {
  std::string name; ///< e.g. "/h.0/attn" (common prefix of its ops' names)
  int64_t numOps = 0;
  PhaseWork fwd;
  PhaseWork bwd; ///< zero for inference
  /// Optimizer update of the layer's parameters, per STEP (not per sample);
  /// zero when unknown (the model then estimates Adam's traffic).
  PhaseWork update;
  double paramBytes = 0;       ///< dense parameters (trained ones)
  double frozenParamBytes = 0; ///< constants, running statistics
  double sparseParamBytes = 0; ///< embedding tables looked up by index
  /// Bytes of embedding rows touched per sample (pull/push volume).
  double sparseRowBytesPerSample = 0;
  double activationBytes = 0; ///< per sample, kept for backward
  double inputBytes = 0;      ///< per sample, activations entering
  double outputBytes = 0;     ///< per sample, activations leaving
  /// Megatron-style column/row split applies (matmul-dominated layer).
  bool tensorParallel = false;
  /// Embedding lookup on a large table (HeterPS: IO-bound, CPU-friendly).
  bool sparse = false;
};

/// Collectives the runtime provides.
enum class Collective {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast
};

/// Topology a collective runs over.
enum class Topology { Ring, Tree, Hierarchical };

/// Abstract cost model.
class CostModel {
public:
  virtual ~CostModel();

  /// Seconds for `phase` of `layer` over `samples` samples on one device of
  /// `dev` with tensor-parallel degree `tp` (work split tp ways) and
  /// `threads` CPU threads (ignored on GPUs; 0 means all cores).
  virtual double phaseTimeS(const LayerCost &layer, const PhaseWork &phase,
                            const DeviceSpec &dev, double samples, int64_t tp,
                            int64_t threads) const = 0;

  /// Seconds for the optimizer update of the layer's parameters, sharded
  /// over `shards` devices (ZeRO-1; 1 = unsharded).
  virtual double updateTimeS(const LayerCost &layer, const DeviceSpec &dev,
                             int64_t shards, int64_t threads) const = 0;

  /// Seconds for a collective of `bytes` (per rank, the full buffer) over
  /// `ranks` ranks on `link`.
  virtual double collectiveTimeS(Collective kind, double bytes, int64_t ranks,
                                 const LinkSpec &link,
                                 Topology topo = Topology::Ring) const = 0;

  /// Seconds to send `bytes` point to point.
  virtual double p2pTimeS(double bytes, const LinkSpec &link) const = 0;

  /// Fixed cost of one generated kernel forking onto `threads` threads of
  /// the runtime's pool (0 for one thread).
  virtual double forkOverheadS(const DeviceSpec &, int64_t) const { return 0; }

  /// Fixed cost of one step call (runtime overhead).
  virtual double stepOverheadS(const DeviceSpec &dev) const = 0;
};

/// Roofline model per kernel class, using the device's calibration when it
/// has one (GEMM FLOP/s by size and thread count, streaming bandwidth by
/// thread count, per-kernel overhead) and data-sheet peaks otherwise.
class AnalyticCostModel : public CostModel {
public:
  /// `dtype` selects the peak/calibration entry ("f32" by default).
  explicit AnalyticCostModel(std::string dtype = "f32");

  double phaseTimeS(const LayerCost &layer, const PhaseWork &phase,
                    const DeviceSpec &dev, double samples, int64_t tp,
                    int64_t threads) const override;
  double updateTimeS(const LayerCost &layer, const DeviceSpec &dev,
                     int64_t shards, int64_t threads) const override;
  double collectiveTimeS(Collective kind, double bytes, int64_t ranks,
                         const LinkSpec &link,
                         Topology topo = Topology::Ring) const override;
  double p2pTimeS(double bytes, const LinkSpec &link) const override;
  double stepOverheadS(const DeviceSpec &dev) const override;
  double forkOverheadS(const DeviceSpec &dev, int64_t threads) const override;

  /// GEMM FLOP/s of `dev` at problem size `size` (geometric mean of M, N,
  /// K) with `threads` threads.
  double gemmFlopsPerS(const DeviceSpec &dev, double size,
                       int64_t threads) const;
  /// Seconds for the product `g` at `samples` samples (see GemmWork) with
  /// its n (or k, when n carries the batch) divided by `split`, from the
  /// shape grid of `dev`'s calibration; a negative value when `dev` has no
  /// shape grid.
  double gemmTimeS(const DeviceSpec &dev, const GemmWork &g, double samples,
                   double split, int64_t threads) const;
  /// Streaming bandwidth of `dev` with `threads` threads.
  double bandwidthBytesPerS(const DeviceSpec &dev, int64_t threads) const;
  /// Throughput of generated loops of class `c` touching `footprint` bytes
  /// with `threads` threads (loops with enough work run on the runtime's
  /// pool): the calibrated table of the largest measured thread count not
  /// above `threads` when the device has loop measurements, else the
  /// streaming bandwidth of one thread.
  double loopBytesPerS(const DeviceSpec &dev, KernelClass c, double footprint,
                       int64_t threads = 1) const;
  /// The calibrated loop table `key` ("elementwise", ..., "in_place") at
  /// `footprint` and `threads` as loopBytesPerS reads it, or 0 when the
  /// device has no such table.
  double tableBytesPerS(const DeviceSpec &dev, const char *key,
                        double footprint, int64_t threads = 1) const;
  /// Rate of transcendental functions' FLOPs (Costs.cpp's units) in
  /// generated loops with `threads` threads: the calibration's loop_flops
  /// of the largest measured thread count not above `threads`, else
  /// plainLoopFlopsPerS.
  double loopFlopsPerS(const DeviceSpec &dev, int64_t threads = 1) const;
  /// Rate of other arithmetic in generated loops: half the vector peak of
  /// `threads` cores.
  double plainLoopFlopsPerS(const DeviceSpec &dev, int64_t threads = 1) const;

private:
  std::string dtype;
};

/// Predicted time of one step of the whole model in one process on one
/// device of `dev` with `threads` threads: every layer's forward (and, when
/// training, backward and update) at `batch` samples, plus the step overhead.
double predictStepTimeS(const std::vector<LayerCost> &layers,
                        const DeviceSpec &dev, int64_t batch, int64_t threads,
                        bool training, const CostModel &cm);

} // namespace mlir::dist

#endif // DIST_PLANNER_COSTMODEL_H
