//===- Passes.td - dist code generation passes -------------*- tablegen -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Passes that lower the dist graph to linalg/tensor/arith/math and on to the
// LLVM dialect for the host CPU.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_CODEGEN_PASSES_TD
#define DIST_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToLinalgPass : Pass<"dist-lower-to-linalg", "::mlir::ModuleOp"> {
  let summary = "lower dist graph ops to linalg, tensor, arith and math";
  let description = [{
    Converts every dist op in the module's functions to upstream tensor-level
    ops: elementwise ops become `linalg.generic` with broadcasting indexing
    maps, matrix products and convolutions become contraction generics,
    reductions become reduction generics, the reshape family becomes
    `tensor` reshapes and slices. Unsigned element types become signless
    integers with unsigned arithmetic. Each `dist.get_param` becomes a leading
    function argument named by a `dist.param` argument attribute, and the
    `dist.param` declarations are removed (the module keeps
    `dist.param_file`).

    Pre-condition: shapes are inferred (ranked tensors everywhere).
    Post-condition: no dist op is left. An op or an attribute combination
    the code generator does not handle gives an error containing
    "not supported by codegen" at the op and the pass fails.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect"
  ];
  let options = [
    Option<"convKernel", "conv", "::mlir::dist::ConvKernel",
           "::mlir::dist::ConvKernel::Auto",
           "How 2-D f32 convolutions run: 'direct' (linalg.conv_2d_nchw_fchw, "
           "for the runtime's direct convolution), 'im2col' (im2col + "
           "GEMM) or 'auto' (direct when the host CPU has AVX-512F, which "
           "the runtime's kernel needs to be fast)",
           "::mlir::dist::enumOptionValues<::mlir::dist::ConvKernel>()">
  ];
  let statistics = [
    Statistic<"numLowered", "num-lowered", "Number of dist ops lowered">,
  ];
}

def FuseElementwisePass : Pass<"dist-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "fuse elementwise linalg ops into their elementwise consumers";
  let description = [{
    Applies upstream elementwise fusion, restricted so that a producer is
    fused only into an all-parallel consumer. Contractions therefore keep a
    plain multiply-accumulate body and are still recognised by
    `dist-contractions-to-runtime`; bias and activation chains collapse into
    one loop nest each. Upstream fuses only single-use producers here (it
    would otherwise compute the producer twice); a producer with other users
    after its first elementwise consumer, read element for element, is
    fused into that consumer, which also yields the producer's result for
    them (AdamW's moments and parameter update become one loop).

    Transposes around f32/f64 products are folded into the product instead
    of being copied: `product(transpose(x), y)` reads `x` through a permuted
    indexing map, and `transpose(product)` (the product's only user, the
    product starting from a fill) writes the transposed result directly.
    Both fire only when the runtime's strided GEMM still runs the product
    (`classifyGemmLoops`).

    Then, to keep copies out of the bufferized code: a splat constant of
    4096 elements or more that an op writes into (an scf.for's initial
    value, a destination-style init, an insert's destination) becomes a
    `linalg.fill` of its own for each such op, a parallel loop instead of a
    serial copy of a global; a `linalg.fill` with
    several users is cloned so that each user has its own (one-shot
    bufferization would copy the shared one for all but one), and a
    constant `tensor.pad` becomes a fill of the padded tensor plus a
    `tensor.insert_slice` of its operand, which empty-tensor elimination
    turns into the producer writing into the padded buffer. Run it after
    CSE, which would merge the fills again.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def ApproximateMathPass : Pass<"dist-approximate-math", "::mlir::func::FuncOp"> {
  let summary = "replace f32 erf and exp by upstream's polynomial "
                "approximations";
  let description = [{
    glibc's libmvec has no vector erf, so `math.erf` stays a scalar libm
    call inside vectorised loops (measured: 10% of a GPT's run time in
    `erff`), and its vector expf is the 8-wide AVX2 one (8% of the GPT's
    inference, part of it scalar `expf` calls). Upstream's polynomial
    approximations are plain arithmetic that LLVM vectorises at the CPU's
    full width; they stay within the ONNX backend tests' tolerance (exp:
    within 6 ulp of the exact result, test/Codegen/e2e/exp-approximation.test).
  }];
  let dependentDialects = ["::mlir::math::MathDialect", "::mlir::arith::ArithDialect"];
}

def FillBordersPass : Pass<"dist-fill-borders", "::mlir::func::FuncOp"> {
  let summary = "fill only the border of a padded buffer whose interior is "
                "overwritten next";
  let description = [{
    A zero pad bufferizes to a fill of the whole padded buffer, then the
    operand's producer (or a copy) writing the interior. Where the next
    write through the buffer is an op that overwrites a static unit-stride
    interior subview without reading it (an all-parallel `linalg.generic`
    whose output block argument is unused, or a `memref.copy` into it), and
    nothing else uses the buffer in between, the fill becomes fills of the
    border slabs around that interior: the interior is written once instead
    of twice.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
}

def SinkTransposesPass : Pass<"dist-sink-transposes", "::mlir::func::FuncOp"> {
  let summary = "move transposes down through elementwise ops so that they "
                "cancel";
  let description = [{
    With `--conv=nhwc` every 2-D convolution reads a channels-last copy of
    its NCHW input and transposes its channels-last output back
    (LowerLinearAlgebra's channelsLastConvolution). On tensors, before
    elementwise fusion, this pass moves those transposes down the graph:
    an elementwise generic (all loops parallel, an identity output map, a
    fresh init) that reads `transpose(x)` through an identity map, and
    no other full-size operand that is not the same transpose, runs in
    `x`'s order instead and its result is transposed (its broadcast
    operands' maps composed with the permutation); a constant `tensor.pad`
    of a transpose pads the transpose's input; a concatenation (a chain of
    `tensor.insert_slice`) of transposes concatenates their inputs, a part
    that is not transposed transposed on its own; a reshape that splits
    dims of a transpose splits its input's, one that merges them merges its
    input's, after a permutation of the merged dims' order where the
    transpose had another (ShuffleNet's channel shuffle becomes a
    permutation of each pixel's channels); slices of a transpose slice its
    input; two transposes in a row become one, or none when they cancel.
    What stays before another op (a pooling or reduction generic) is read
    through that op's indexing map instead of being copied, and a pooling
    result that only transposes read, directly or through constant pads
    and slices, is written transposed. Between two convolutions of a
    residual, dense or channel-shuffle network the ReLU, the residual add,
    the concatenation, the split, the shuffle and the pooling then run on
    the channels-last images and no transpose is left; one stays at the
    network's input and where a channels-last image meets an op it cannot
    cross (a flatten into a matrix). With `convs-only`, only in a function
    with a channels-last convolution (the lowering's
    `dist.channels_last_conv` generics), as dist-opt runs it: the
    transposes of a transformer's heads stay for dist-fuse-elementwise to
    fold into its products.
  }];
  let options = [
    Option<"convsOnly", "convs-only", "bool", /*default=*/"false",
           "leave functions without a channels-last convolution alone">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ShareConcatBuffersPass
    : Pass<"dist-share-concat-buffers", "::mlir::func::FuncOp"> {
  let summary = "build growing concatenations in one buffer";
  let description = [{
    A concatenation as lowered is a chain of tensor.insert_slice ops into
    a tensor.empty, one piece after another along one dim. Where the
    pieces of one chain are the first pieces of a longer chain, in the
    same order and places (a dense block: every layer concatenates its
    output with all the features before it), the longer chain is built
    once, each piece inserted as soon as it exists, and each shorter
    chain's result becomes the tensor.extract_slice of it that holds its
    pieces. One-shot bufferization then writes each piece once into one
    buffer instead of copying every earlier piece again at every layer.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def ReuseInputBuffersPass
    : Pass<"dist-reuse-input-buffers", "::mlir::func::FuncOp"> {
  let summary = "write an elementwise result over one of its inputs' "
                "buffers where bufferization can";
  let description = [{
    An all-parallel generic on tensors with at least two inputs of its
    result's type (a residual connection's Add), one init (a tensor.empty
    that its body does not read) and identity maps gets as its init the
    earliest-made of those inputs (not a constant, not a function
    argument, made in the same block). One-shot bufferization then writes
    the result over that input's buffer when nothing reads the input
    afterwards, and into a fresh buffer otherwise, without a copy either
    way. Results inserted into larger tensors (pads, concatenations) keep
    their init: empty-tensor elimination writes them in place there.
    After it, the call of the channels-last convolution that makes the
    other operand accumulates onto the residual
    (dist-contractions-to-runtime). With `convs-only`, only in a function
    with a channels-last convolution (the lowering's
    `dist.channels_last_conv` generics), as dist-opt runs it.
  }];
  let options = [
    Option<"convsOnly", "convs-only", "bool", /*default=*/"false",
           "leave functions without a channels-last convolution alone">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def FuseRowsPass : Pass<"dist-fuse-rows", "::mlir::func::FuncOp"> {
  let summary = "compute a normalisation's passes over blocks of rows in "
                "one loop";
  let description = [{
    Finds all-parallel `linalg.generic` ops that read a row statistic (the
    result of a reduction over trailing dimensions, directly or through
    maps over the kept dimensions: a LayerNorm's mean and variance, a
    softmax's maximum and sum) and tiles each over blocks of rows (about
    16 KiB per row-wise tensor) with `scf.forall`, fusing into the loop
    the producers that work row by row: the reductions, the maps between
    them, their fills and elementwise producers. Each pass over a block
    then reads it from L1 instead of the whole tensor from L2 or memory. A
    fused producer with users outside the loop has its whole result
    yielded by the loop; contractions are never fused.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HoistParallelDimsPass
    : Pass<"dist-hoist-parallel-dims", "::mlir::func::FuncOp"> {
  let summary = "order the parallel loops of a reduction before its "
                "reduction loops";
  let description = [{
    In every `linalg.generic` with a reduction dimension, moves the
    parallel dimensions in front of the reduction ones (relative order
    kept) so that convert-linalg-to-parallel-loops makes an outermost
    `scf.parallel` that runs on the runtime's threads: a batch
    normalisation's statistics over N, H, W of an NCHW tensor then split
    over C. The innermost dimension never moves (it is the contiguous one
    that LLVM vectorises). On buffers, the trailing reduction dimensions
    that every operand lays out contiguously then merge into one loop
    (H and W of those statistics), so the innermost reduction is long; so
    do the trailing dimensions of an elementwise `linalg.generic` whose
    innermost loop is shorter than a vector of f32 (the update of a
    [F, C, 3, 3] convolution weight), so that LLVM vectorises it.

    With `innermost` (the CUDA target) the innermost dimension moves too:
    each GPU thread runs one parallel iteration, so a bias gradient's sum
    over rows becomes one kernel over its columns (reads coalesced across a
    warp) instead of a launch per row.
  }];
  let options = [
    Option<"innermost", "innermost", "bool", /*default=*/"false",
           "move the innermost parallel dimension in front as well">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
}

def StridedCopiesToLoopsPass
    : Pass<"dist-strided-copies-to-loops", "::mlir::func::FuncOp"> {
  let summary = "rewrite memref.copy into or out of strided views as "
                "linalg.copy";
  let description = [{
    A `memref.copy` whose source or target has a non-identity layout (the
    interior of a padded buffer, an inserted slice) becomes `linalg.copy`,
    which lowers to parallel loops with a vectorised innermost row instead
    of the runtime's row-by-row memcpy walk on one thread. Copies between
    identity-layout buffers stay `memref.copy` (one memcpy), and so do
    copies between contiguous views and copies whose rows (the trailing
    dimensions contiguous on both sides) are at least 4 KiB: one memcpy
    per row (a batch's concatenation slices).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def RegisterAccumulatorsPass
    : Pass<"dist-register-accumulators", "::mlir::func::FuncOp"> {
  let summary = "carry an innermost loop's reduction accumulator in a "
                "register and let LLVM vectorise it";
  let description = [{
    An innermost `scf.for` that loads and stores one memref element at
    loop-invariant indices (a reduction over the innermost dimension, as
    convert-linalg-to-parallel-loops lowers it) carries that value as an
    `iter_arg` instead: one load before the loop, one store after. An
    `arith.addf`/`arith.mulf` combining it becomes `reassoc` and the loop
    gets LLVM's vectorize hint, so the reduction runs in vector lanes; so
    does a float maximum or minimum, unchanged (it is associative).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ExpandArithPass : Pass<"dist-expand-arith"> {
  let summary = "expand the arith ops that convert-arith-to-llvm does not "
                "lower, keeping float maximum and minimum";
  let description = [{
    Upstream's `arith-expand` without its float min/max expansions:
    `arith.maximumf` and friends become LLVM's intrinsics, which LLVM's loop
    vectoriser turns into vector reductions (a softmax's row maximum); the
    compare-and-select expansion stays scalar.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def HoistInvariantLoadsPass
    : Pass<"dist-hoist-invariant-loads", "::mlir::func::FuncOp"> {
  let summary = "move loads at loop-invariant indices out of innermost loops";
  let description = [{
    In every innermost `scf.for` with a static trip count of at least one, a
    `memref.load` whose memref and indices are defined outside the loop moves
    before the loop when every store in the loop writes a memref of another
    element type (a gather's row index, i64, in a loop writing f32): LLVM
    cannot prove that such a store leaves the loaded value alone, keeps the
    load in the loop and cannot vectorise it.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def OutlineLoopsPass
    : Pass<"dist-outline-loops", "::mlir::ModuleOp"> {
  let summary = "move every loop nest left in a function into one of its own";
  let description = [{
    Every outermost loop (`scf.for`, `scf.while`, `scf.parallel`) of a
    function that the compiler did not outline itself (functions with
    internal linkage are outlined bodies) moves into a private function
    `<function>_loop<N>[_<node>]` with internal linkage and LLVM's
    `noinline`, called in its place: the loop's operands and the values it
    uses from above become arguments (constants are cloned in, so trip
    counts stay static), its results the function's results. Why: LLVM's
    loop passes scale with the size of the function around a loop times the
    number of loops in it; a 121-layer network's graph function held 472
    serial loops (copies into concatenations, fills) and IndVarSimplify alone
    took 239 s of its 251 s at O3. One function per loop nest keeps LLVM's
    time linear in the model.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect"
  ];
  let statistics = [
    Statistic<"numOutlined", "num-outlined", "Number of loop nests outlined">,
  ];
}

def DropParamResultsPass
    : Pass<"dist-drop-param-results", "::mlir::func::FuncOp"> {
  let summary = "drop bufferized results that are updated parameters";
  let description = [{
    After one-shot bufferization a training step returns every parameter it
    updated in place as the argument's own buffer (results marked
    `dist.param_update` by dist-lower-to-linalg). Those results carry no
    information, so this pass removes them from the function type and its
    return. Upstream's drop-equivalent-buffer-results skips public
    functions, and the entry points are public. Any other result that is an
    argument (an output that is an input or a parameter) is returned as a
    fresh copy: the runtime owns and frees what an entry returns.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"
  ];
}

def ContractionsToRuntimePass
    : Pass<"dist-contractions-to-runtime", "::mlir::ModuleOp"> {
  let summary = "call the runtime's BLAS-backed GEMM for f32/f64 contractions";
  let description = [{
    On bufferized IR, rewrites every linalg op that is a contraction with at
    most one batch, one M, one N and one K dimension, a multiply-add body and
    an f32 or f64 element type into a call of `dist_rt_gemm_f32` /
    `dist_rt_gemm_f64`, passing base pointers and element strides (a batch
    stride of 0 broadcasts an operand); a second, outer batch dimension (a
    product per head of a [B, H, M, N] result) becomes an `scf.for` around
    the call. Other contractions stay loops. A
    contraction whose fresh output buffer was last filled with +0.0 calls
    `dist_rt_gemm_set_f32` / `dist_rt_gemm_set_f64` (C = A * B) instead, and
    the fill goes. Convolutions become calls of the runtime's convolution
    entry points (see the file's comments), and a channels-last 2-D max
    pooling (its window generic reading [n, y*sh + i*dh, x*sw + j*dw, c])
    a call of `dist_rt_maxpool2d_nhwc_f32`, which clips each window to the
    image: an input bordered with -inf becomes a dense image that the layer
    before writes (a convolution's ReLU then goes into its call).

    Measured on this machine (one thread, 512x512x512 f32): OpenBLAS with
    the SkylakeX kernel 204-217 GFLOP/s against 160-204 for a transform-
    dialect tiled and vectorised kernel, so library calls win; the runtime
    selects the AVX-512 kernel that Debian's OpenBLAS 0.3.21 misdetects.

    With `target=cuda` (the CUDA target, on device buffers) the same
    products call `dist_rt_cuda_gemm_*` instead, which run them with
    cuBLASLt on the device; convolutions and weight gradients stay loops
    (kernels) there. Their `precision` picks the f32 products' callee:
    `dist_rt_cuda_gemm[_set]_f32` (fp32), `..._f32_tf32` or `..._f32_bf16`
    (operands rounded to TF32 or bf16 on tensor cores, f32 accumulation).
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"host\"",
           "whose library runs the products: host (OpenBLAS) or cuda "
           "(cuBLASLt)">,
    Option<"precision", "precision", "::mlir::dist::Precision",
           "::mlir::dist::Precision::Fp32",
           "how cuBLASLt rounds the operands of f32 products (target=cuda)",
           "::mlir::dist::enumOptionValues<::mlir::dist::Precision>()">,
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"
  ];
  let statistics = [
    Statistic<"numCalls", "num-calls", "Number of contractions turned into calls">,
  ];
}

def FuseProductEpiloguesPass
    : Pass<"dist-fuse-product-epilogues", "::mlir::ModuleOp"> {
  let summary = "fold a product's bias and ReLU / Clip loop into its "
                "runtime call";
  let description = [{
    After dist-contractions-to-runtime: where a `dist_rt_gemm_set_f32` call
    writes a fresh static buffer T (or a collapsed view of it) whose only
    reader is the next all-parallel `linalg.generic` (directly or through
    one expand_shape view), and that loop writes a fresh buffer O, or a
    static interior of one (a padded buffer), as O = act(T [+ bias]) with
    the bias along the product's rows or columns and act any of ReLU, a
    lower and an upper bound (the runtime epilogue's exact semantics), the
    call becomes `dist_rt_gemm_set_act_f32` writing O (an interior's rows
    as an image's), and the loop goes; T goes too, or stays for later ops
    when the first of them overwrites it without reading. Between the call
    and the loop only ops that write no memory, O's allocation and view
    (moved before the call) and fills of O's allocation apart from O (the
    border slabs of dist-fill-borders) may stand. A loop that also adds O's
    own old value (O = act(T + bias + O), the Add of a residual connection
    that bufferization wrote over its dead operand) folds too, the call
    accumulating onto O (DIST_RT_GEMM_ACCUMULATE), when O is a whole
    allocation that the product does not read and that no op between the
    call and the loop uses, through views either.
    The runtime applies a per-row bias and the activation as its packed
    kernel stores the tiles (a convolution's filters as A on AVX2 hosts),
    elsewhere in one pass over O after the product.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect"
  ];
  let statistics = [
    Statistic<"numFused", "num-fused", "Number of epilogue loops folded into product calls">,
  ];
}

def FusePointwiseDepthwisePass
    : Pass<"dist-fuse-pointwise-depthwise", "::mlir::ModuleOp"> {
  let summary = "make a 1x1 convolution call and the depthwise call that "
                "reads its output one call";
  let description = [{
    After dist-contractions-to-runtime: where a `dist_rt_conv2d_nhwc_f32`
    call P of one group, a 1x1 kernel, unit strides and no padding writes a
    whole allocation M (through reshapes of identity layout), and the next
    call to read M is a `dist_rt_conv2d_nhwc_f32` call D of one channel and
    one filter a group, as many groups as P has filters, on M's images (the
    same batch, rows and columns), neither accumulating nor transposed, and
    no op uses M after P but D, M's views, sizes, addresses and dealloc,
    the pair becomes one `dist_rt_conv2d_nhwc_pwdw_f32` call with both
    calls' operands in D's place, where D's output is an allocation apart
    from P's input and no op between them touches P's input, filters or
    bias (P's batch is passed as what it is computed from, not M's size).
    The runtime then runs both in bands of rows that keep M's rows
    in the cache; M is left without uses for the canonicalizer.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect"
  ];
  let statistics = [
    Statistic<"numFused", "num-fused", "Number of pointwise-depthwise call pairs made one call">,
  ];
}

def FreeAfterLastUsePass
    : Pass<"dist-free-after-last-use", "::mlir::func::FuncOp"> {
  let summary = "move each buffer's dealloc right after its last use";
  let description = [{
    Ownership-based deallocation frees every buffer at the end of its block,
    so a model's function holds all of its intermediate buffers until it
    returns. This pass moves each `memref.dealloc` of a `memref.alloc` in the
    same block right after the last op of that block that uses the buffer:
    through any chain of results (views, casts, the pointer that
    `memref.extract_aligned_pointer_as_index` takes out of it and the calls
    that receive it, a handle that a call returns and a later call waits on),
    through memory that such a value is stored into, and through the results
    of a region op whose region yields it. A buffer that reaches a
    terminator of its own block, another dealloc or a block outside its own
    keeps its dealloc where it is. Runs after the passes that turn ops into
    runtime calls, which read the deallocs at the end of the block.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
  let statistics = [
    Statistic<"numMoved", "num-moved", "Number of deallocs moved earlier">,
  ];
}

def ParallelizeLoopsPass
    : Pass<"dist-parallelize-loops", "::mlir::ModuleOp"> {
  let summary = "run outermost scf.parallel loops on the runtime's thread pool";
  let description = [{
    Outlines each outermost `scf.parallel` of a function into a function
    `(ctx, begin, end)` over the linearised outer dimensions and calls
    `dist_rt_parallel_for`; the captured values travel in a context struct
    on the stack (memrefs as LLVM descriptors through unrealized casts that
    the memref lowering folds). Loops with less estimated work than
    `min-work` scalar operations run on the calling thread, as nested
    `scf.for` loops whose innermost asks LLVM to vectorise it (checked at
    run time instead when a trip count is dynamic). See ParallelizeLoops.cpp
    for why the runtime's pool and not async or OpenMP.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"32768",
           "smallest estimated number of scalar operations worth a fork">,
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"
  ];
  let statistics = [
    Statistic<"numOutlined", "num-outlined", "Number of loops outlined">,
  ];
}

def StripMeshPass : Pass<"dist-strip-mesh", "::mlir::ModuleOp"> {
  let summary = "drop the shard.grid mesh declarations after bufferization";
  let description = [{
    Bufferization turns every `shard.all_reduce` into calls of the runtime
    (dist_rt_mesh_all_reduce_start / _wait), which reads the mesh from the
    model descriptor. The `shard.grid` declarations left over are removed;
    any other shard op still present is an error (not supported by host
    codegen).
  }];
}

def AddEntryWrapperPass : Pass<"dist-add-entry-wrapper", "::mlir::ModuleOp"> {
  let summary = "add the packed entry point that the runtime calls";
  let description = [{
    On a module in the LLVM dialect whose entry function was converted with
    `llvm.emit_c_interface`, adds `llvm.func @<symbol>(%args: !llvm.ptr)`
    that loads the argument pointers from the array `args` (params, then
    inputs, then the result buffer) and calls `_mlir_ciface_<entry>`.
    When that C interface is the entry's only user, the entry becomes
    internal and always inlined into it (its body compiled once, and no
    call with one argument per descriptor field).

    With `pipeline`, wraps instead every function of a pipeline stage that
    the module's recorded signature (`dist.signature`) lists, each under
    the symbol recorded for it.
  }];
  let options = [
    Option<"pipeline", "pipeline", "bool", "false",
           "wrap the pipeline stages' functions of dist.signature">,
    Option<"entryName", "entry", "std::string", /*default=*/"\"main\"",
           "name of the function to wrap">,
    Option<"symbolName", "symbol", "std::string",
           /*default=*/"\"dist_model_entry\"", "name of the wrapper">,
    Option<"ifPresent", "if-present", "bool", "false",
           "do nothing when the module has no such function (a training "
           "step's wrapper for a module without one)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def RecordSignaturePass : Pass<"dist-record-signature", "::mlir::ModuleOp"> {
  let summary = "record the model's interface before lowering";
  let description = [{
    Reads the interface of the dist module (its parameters, the inputs and
    outputs of its public entry function, the training step's inputs,
    outputs, parameter roles and optimizer, the mesh and how inference uses
    the dp axis; see getModelSignature in dist/Codegen/Emit.h) and records
    it as the module attribute `dist.signature`, with the symbols of the
    packed entry points the runtime will call (`entry-symbol`, and
    `train-symbol` when the module has a step), from which
    dist-emit-artifacts writes the model descriptor, header and manifest
    once the functions are lowered.

    Pre-condition: a dist module with one public entry function (and at
    most one step). Fails naming what is missing or unsupported (an element
    type without an ONNX code).
  }];
  let options = [
    Option<"entrySymbol", "entry-symbol", "std::string",
           "\"dist_model_entry\"", "the entry function's packed entry point">,
    Option<"trainSymbol", "train-symbol", "std::string",
           "\"dist_model_train\"", "the training step's packed entry point">,
    Option<"device", "device", "std::string", "\"\"",
           "where the compiled code runs: \"\" (the host) or \"cuda\"">,
    Option<"precision", "precision", "std::string", "\"\"",
           "a CUDA model's product precision (fp32, tf32, bf16), for the "
           "manifest">,
  ];
  let statistics = [
    Statistic<"numParams", "num-params", "Number of parameters recorded">,
    Statistic<"numTensors", "num-tensors",
              "Number of inputs and outputs recorded">,
  ];
}

def RenameEntriesPass : Pass<"dist-rename-entries", "::mlir::ModuleOp"> {
  let summary = "give the entry functions the artifact's names";
  let description = [{
    Renames the public entry function to `dist_graph_<name>` and the
    training step to `dist_train_<name>`, with every use, so that neither
    clashes with C's `main` nor with another model's symbols in one
    process. A no-op with an empty `name`.
  }];
  let options = [
    Option<"modelName", "name", "std::string", "\"\"",
           "the model's name (a C identifier)">,
  ];
}

def EmitArtifactsPass : Pass<"dist-emit-artifacts", "::mlir::ModuleOp"> {
  let summary = "write the model's object, executable and library";
  let description = [{
    On a module lowered to the LLVM dialect that carries `dist.signature`
    (dist-record-signature): translates it to LLVM IR, optimises it at O3
    for the host CPU and, by `kind`, writes `<out-dir>/<name>.ll` (llvm),
    `<name>.o` (obj) or the deployable artifacts (exe): the executable
    `<name>`, `lib<name>.so`, the header `<name>.h` and the manifest
    `<name>.json`, linked with `cc` (or `$CC`) against the runtime library.
    Everything is built under temporary names and moved into place only
    when both links succeed. The parameter file `<name>.params` is expected
    next to them when the model has parameters. With `elastic-min/max` the
    descriptor and manifest list the executables of an elastic layout set;
    with `executable-file` only that executable is linked.
  }];
  let options = [
    Option<"outDir", "out-dir", "std::string", "\".\"",
           "the directory to write into (created if missing)">,
    Option<"modelName", "name", "std::string", "\"model\"",
           "the artifacts' name and the C API's prefix">,
    Option<"kind", "kind", "::mlir::dist::ArtifactKind",
           "::mlir::dist::ArtifactKind::Exe", "what to write",
           "::mlir::dist::enumOptionValues<::mlir::dist::ArtifactKind>()">,
    Option<"runtimeLib", "runtime-lib", "std::string", "\"\"",
           "the runtime library (default: lib/libdist_rt.a beside bin/)">,
    Option<"runtimeInclude", "runtime-include", "std::string", "\"\"",
           "the runtime's include directory (default: the source tree's)">,
    Option<"onnxFile", "onnx-file", "std::string", "\"\"",
           "the file name of the model's ONNX copy in out-dir (training "
           "artifacts keep it for `train --export-onnx`)">,
    Option<"elasticMin", "elastic-min", "int64_t", "0",
           "the smallest world size of the elastic layout set the "
           "executable belongs to (dist-opt --elastic; 0: none)">,
    Option<"elasticMax", "elastic-max", "int64_t", "0",
           "the largest world size of that set">,
    Option<"executableFile", "executable-file", "std::string", "\"\"",
           "link only the executable, under this file name (a layout of "
           "an elastic set other than the largest)">,
  ];
}

//===----------------------------------------------------------------------===//
// The CUDA target (lib/Codegen/Gpu)
//===----------------------------------------------------------------------===//

def MapLoopsToGpuPass
    : Pass<"dist-map-loops-to-gpu", "::mlir::func::FuncOp"> {
  let summary = "run every outermost loop nest on buffers as a GPU launch";
  let description = [{
    Each outermost `scf.parallel` without results has its dimensions
    collapsed into one and becomes a `gpu.launch` of blocks of `threads`
    threads, one iteration per thread behind a bounds check (none when the
    loop is empty); the loops inside run sequentially in each thread. A
    parallel loop whose body is one `scf.for` reducing into one element
    per iteration (`acc[i] = acc[i] op v(k)`, op an f32 add, mul, maximumf
    or minimumf; other stores indexed by k; 32 or more trips) is a row
    reduction instead: one block per iteration, each thread reducing every
    blockDim-th k, `gpu.all_reduce` combining the partial results (warp
    shuffles and shared memory) and thread 0 updating `acc[i]`; an
    outermost `scf.for` that is such a reduction on its own (a loss's sum
    into a scalar) is one block likewise. Any other outermost `scf.for` or
    `scf.while` without results runs in a launch of one thread, unless it
    holds parallel loops: then it stays on the host and those are launched
    on each trip. Every `memref.get_global` becomes
    a device buffer holding a copy of the global (made outside loops, freed
    at the end of its block unless the function returns it). A loop nest
    holding an op that has no GPU lowering (a call) stays on the host, with
    a warning naming it; one whose only such ops are calls of the runtime's
    device library (`dist_rt_cuda_*`: an outer batch of products) stays on
    the host quietly, those calls launching the device's work. The
    runtime's error reports (`dist_rt_index_error`, `dist_rt_shape_error`)
    do not keep a nest on the host: each call site records a flag and its
    varying operands in a device buffer, which the host checks after the
    launch and reports. First, an outermost perfect nest of `scf.for` (or
    reduction-free `scf.parallel`) loops with no parallel loop below it
    becomes one `scf.parallel` over the variables along which iterations
    write disjoint elements (each written buffer indexed by the variable
    itself at one position in every access, through one identity-layout
    memref) around `scf.for` loops over the others: a scatter-add over
    rows that may repeat runs a thread per column.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "256",
           "threads per block (1..1024)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def GpuFatBinaryPass : Pass<"dist-gpu-fat-binary", "::mlir::ModuleOp"> {
  let summary = "merge each gpu.binary's cubins into one fat binary";
  let description = [{
    After `gpu-module-to-binary` with format `bin`: the cubins of a
    `gpu.binary` (one per `#nvvm.target` chip) become one CUDA fat binary,
    made by the toolkit's `fatbinary`, held as the binary's only object, so
    that the driver loads the image for the GPU it runs on. A binary with
    objects of other formats or targets is an error.
  }];
  let options = [
    Option<"toolkit", "toolkit", "std::string", "\"/usr/local/cuda\"",
           "the CUDA toolkit holding bin/fatbinary">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def DeviceAllocationsPass
    : Pass<"dist-device-allocations", "::mlir::ModuleOp"> {
  let summary = "allocate and copy the host code's buffers through the "
                "runtime's device allocator";
  let description = [{
    On the LLVM dialect, after `finalize-memref-to-llvm` with generic
    functions: the calls of `_mlir_memref_to_llvm_alloc`, `_aligned_alloc`,
    `_free` and `memrefCopy` become calls of the runtime's
    `dist_rt_device_alloc`, `dist_rt_device_aligned_alloc`,
    `dist_rt_device_free` and `dist_rt_device_memref_copy`, so that every
    buffer of a CUDA target's host code is memory its kernels can read.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // DIST_CODEGEN_PASSES_TD
