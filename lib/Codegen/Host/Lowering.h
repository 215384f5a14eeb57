//===- Lowering.h - shared helpers of the dist-to-linalg lowering -*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Helpers shared by the op-family lowering files (Lower*.cpp) and the
// populate functions each of them provides.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_LIB_CODEGEN_HOST_LOWERING_H
#define DIST_LIB_CODEGEN_HOST_LOWERING_H

#include "dist/Dialect/Dist/IR/DistDialect.h"
#include "dist/Dialect/Dist/IR/ShapeUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::dist::codegen {

/// Converts unsigned integer element types to signless ones (arith and
/// linalg only accept signless integers); everything else is kept.
class DistTypeConverter : public TypeConverter {
public:
  DistTypeConverter();
};

/// Element type of a shaped value or type.
Type elemTypeOf(Value v);
/// Whether `t` (an original, unconverted element type) is an unsigned int.
bool isUnsignedInt(Type t);
/// `t` with unsigned integers made signless.
Type toSignless(Type t);
/// Ranked tensor type with a signless element type.
RankedTensorType toSignless(RankedTensorType t);

/// Emits "<what> is not supported by codegen" at `op` and returns failure.
LogicalResult notSupported(Operation *op, const Twine &what);

/// Sizes of the ranked tensor `v` (constants for static dims).
SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value v);
/// `tensor.empty` of `type` whose dynamic dims come from `sizes` (one entry
/// per dimension; static entries are ignored for static dims).
Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                  ArrayRef<OpFoldResult> sizes);
/// `linalg.fill` of `scalar` into an empty tensor.
Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   ArrayRef<OpFoldResult> sizes, Value scalar);
/// A scalar constant of the (signless) element type `t`: float or integer.
Value scalarConst(OpBuilder &b, Location loc, Type t, double value);
/// Lowest / highest value of `t` (-inf/+inf for floats).
Value lowestConst(OpBuilder &b, Location loc, Type t, bool isUnsigned);
Value highestConst(OpBuilder &b, Location loc, Type t, bool isUnsigned);
/// Converts scalar `v` from the original element type `from` to `to`
/// (numeric conversion with ONNX Cast semantics; bool is i1).
Value convertScalar(OpBuilder &b, Location loc, Value v, Type from, Type to);
/// Index-typed value of an integer scalar (sign-extended).
Value toIndex(OpBuilder &b, Location loc, Value v);
/// Index as OpFoldResult.
Value ofrToValue(OpBuilder &b, Location loc, OpFoldResult ofr);
/// The buffer `v` is a view of: through subviews, casts and reshapes (any
/// chain of view ops) to the allocation, global or argument.
Value rootBuffer(Value v);
/// The memref whose aligned pointer, plus its offset (folded away where it
/// is 0), the i64 `v` is, as dist-contractions-to-runtime builds a runtime
/// call's pointer operand; null otherwise.
Value pointerSource(Value v);
/// The ops that the uses of `op`'s results end in through index arithmetic
/// (index_cast, addi, muli): the calls that take a pointer, stride or size
/// made from them, or other users.
SmallVector<Operation *> addressEnds(Operation *op);
/// The declaration of runtime function `name` taking `args`' types and
/// returning nothing, added to `op`'s module on first use.
func::FuncOp runtimeFunction(Operation *op, StringRef name, ValueRange args);
/// Whether the body of `op` (two inputs, one init) is `yield out + a * b`
/// with float ops, in either operand order: a contraction that
/// dist-contractions-to-runtime turns into a GEMM call.
bool isMulAddBody(linalg::GenericOp op);
/// The last op of SiLU on `v` when the only users of `v` are the ops of
/// LowerElementwise's Sigmoid on it and a Mul of it by that sigmoid:
/// mulf(v, divf(1, addf(exp(negf v), 1))), operands of the adds and the
/// mul in either order, each op used once. Null otherwise. `chain`, when
/// given, receives its five ops (for passes that fold them into a call).
arith::MulFOp siluOf(Value v, SmallVectorImpl<Operation *> *chain = nullptr);
/// The last op of HardSwish on `v` when the only users of `v` are the ops
/// of LowerElementwise's HardSwish (or of a HardSigmoid of alpha 1/6 and
/// beta 1/2 and a Mul by its input): mulf(v, maximumf(0, minimumf(1,
/// addf(mulf(v, 1/6), 1/2)))), the constants f32, operands in either order,
/// the minimum and maximum in either order, each op used once. Null
/// otherwise. `chain`, when given, receives its five ops.
arith::MulFOp hardSwishOf(Value v,
                          SmallVectorImpl<Operation *> *chain = nullptr);
/// Whether `op` writes all of `v` without reading it: a fill, a copy or a
/// transpose into it, a parallel generic whose only output is `v` through an
/// identity map, not also an input, and whose body ignores the output's old
/// value, or a view of all of `v` marked kCallOverwritesAttr.
bool overwritesWithoutReading(Operation *op, Value v);
/// Marks a reshape view that dist-contractions-to-runtime made as the
/// output of one runtime call that writes all of it without reading it
/// (a grouped convolution writing its activation's buffer).
inline constexpr llvm::StringLiteral kCallOverwritesAttr =
    "dist.call_overwrites";
/// Marks the channels-last convolution generic that LowerLinearAlgebra
/// makes (strides and dilations, [sh, sw, dh, dw] or [sd, sh, sw, dd, dh,
/// dw]) for dist-contractions-to-runtime.
inline constexpr llvm::StringLiteral kChannelsLastConvAttr =
    "dist.channels_last_conv";
/// The same for a transposed convolution's generic (ConvTranspose).
inline constexpr llvm::StringLiteral kChannelsLastConvTransposeAttr =
    "dist.channels_last_conv_transpose";
/// Whether `op` is a channels-last convolution's generic, transposed or not.
inline bool isChannelsLastConv(Operation *op) {
  return op->hasAttr(kChannelsLastConvAttr) ||
         op->hasAttr(kChannelsLastConvTransposeAttr);
}
/// Whether `root` holds a channels-last convolution (isChannelsLastConv):
/// the layout passes leave the rest (a transformer's transposes) as they
/// are.
inline bool hasChannelsLastConv(Operation *root) {
  return root
      ->walk([](Operation *op) {
        return isChannelsLastConv(op) ? WalkResult::interrupt()
                                      : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Loops of a contraction as the runtime's strided batched GEMM sees them:
/// out[batch, m, n] += lhs[batch, m, k] * rhs[batch, k, n], each operand's
/// dims in any order (strides), batch, m or n possibly absent (-1).
struct GemmLoops {
  int64_t batch = -1, m = -1, n = -1, k = -1;
  /// A second batch loop, outer to `batch` (a [B, H, M, N] product over
  /// heads): the runtime's GEMM runs once per index of it; -1 when none.
  int64_t outerBatch = -1;
  /// Per loop, the dim of lhs / rhs / out it indexes (-1: none).
  SmallVector<int64_t> lhsDims, rhsDims, outDims;
};
/// Classifies the loops of a contraction with indexing maps `maps` (lhs,
/// rhs, out) and iterators `iters`: one reduction loop, at most two batch
/// loops (the outer one looped over around the GEMM call), pure dim
/// expressions. The batch may be a
/// second reduction loop, outer to k in both inputs, when the output is one
/// matrix: the products are summed into it (outDims[batch] is -1, so the
/// runtime gets a zero output batch stride). nullopt when the runtime's
/// GEMM cannot run it.
std::optional<GemmLoops> classifyGemmLoops(ArrayRef<AffineMap> maps,
                                           ArrayRef<utils::IteratorType> iters);
/// Size of dimension `i` of the ranked tensor `v` as an index value.
Value dimValue(OpBuilder &b, Location loc, Value v, int64_t i);
/// `v` as type `t` (a tensor.cast when the types differ).
Value castTensor(OpBuilder &b, Location loc, Value v, Type t);
/// Scalar x + y, x - y, x * y for float or integer (signless) scalars.
Value addScalars(OpBuilder &b, Location loc, Value x, Value y);
Value subScalars(OpBuilder &b, Location loc, Value x, Value y);
Value mulScalars(OpBuilder &b, Location loc, Value x, Value y);
/// Pads the spatial dims (2..) of an N,C,... tensor by `begin`/`end` with
/// `pad`; negative amounts crop.
Value padSpatial(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> begin,
                 ArrayRef<int64_t> end, Value pad);

/// Output sizes of a broadcasting (numpy rules) elementwise op producing
/// `resultType` from `operands`. Where operands have sizes unknown at
/// compile time on the same axis, the size is their minimum (nothing is read
/// outside an operand) and code reporting any difference through the
/// runtime's dist_rt_shape_error (the run then fails naming the node) is
/// built at `b`'s insertion point.
SmallVector<OpFoldResult> broadcastSizes(OpBuilder &b, Location loc,
                                         RankedTensorType resultType,
                                         ValueRange operands);

/// The address (an i64) of a constant NUL-terminated global holding the
/// ONNX node name of `loc` ("?" when none), one global per distinct name in
/// `module`, for the runtime's error reports.
Value nodeNameAddress(OpBuilder &b, Location loc, ModuleOp module);
/// The address (an i64) of a constant NUL-terminated global holding `text`
/// (one global per distinct text in `module`).
Value stringAddress(OpBuilder &b, Location loc, ModuleOp module,
                    StringRef text);

//===- Run-time checks of inputs that shapes depend on (RuntimeChecks.cpp) ===//
//
// An op whose output shape depends on the values of an input fed at run
// time (split sizes, a one-hot depth, axes) takes the shape the model
// declares (the importer refines its result type); these checks make the
// run fail, naming the node and the input, when the values disagree.

/// The ONNX name of operand `i` of `op`: a function argument's dist.name,
/// or the name of the node that computes it ("?" when unknown).
std::string operandName(Operation *op, unsigned i);
/// Compares the elements of the integer or float tensor `value` (operand
/// `i` of `op`, converted; rank 0 or 1, static) with `expected` and reports
/// the first that differs through dist_rt_value_error.
void checkOperandValues(OpBuilder &b, Location loc, Operation *op, unsigned i,
                        Value value, ArrayRef<int64_t> expected);
/// The set of axes held by the rank-1 integer tensor `axes` (operand `i`
/// of `op`, converted) as a bit mask over [0, rank), negative axes counted
/// from the end; reports through dist_rt_axes_error when an axis repeats,
/// lies outside the rank, or the mask is none of `valid`. Returns the mask
/// (i64).
Value checkAxesOperand(OpBuilder &b, Location loc, Operation *op, unsigned i,
                       Value axes, int64_t rank, ArrayRef<uint64_t> valid);
/// Checks at run time that the extent `got` (an index) that operand `i` of
/// `op` gives output axis `axis` is the declared `expected`, through
/// dist_rt_extent_error.
void checkExtent(OpBuilder &b, Location loc, Operation *op, unsigned i,
                 int64_t axis, Value got, int64_t expected);
/// Fails the run through dist_rt_unsupported_error ("<what> is not
/// supported by codegen", naming `op`'s node) when the i1 `bad` holds.
void reportUnsupportedIf(OpBuilder &b, Location loc, Operation *op, Value bad,
                         StringRef what);
/// Fails the run through dist_rt_input_error ("node '<node>': input
/// '<operand i>' <what>") when the i1 `bad` holds.
void reportInputErrorIf(OpBuilder &b, Location loc, Operation *op, unsigned i,
                        Value bad, StringRef what);
/// The masks of the `count`-element subsets of [0, rank) for which
/// `gives(mask)` holds (rank <= 16).
SmallVector<uint64_t> axisSubsets(int64_t rank, int64_t count,
                                  function_ref<bool(uint64_t)> gives);
/// The private declaration of runtime function `name` in `module`, added
/// with `type` when missing.
func::FuncOp runtimeCallee(ModuleOp module, StringRef name, FunctionType type);
/// Indexing map reading an operand of type `operandType` in a loop nest over
/// `resultType` with numpy broadcasting (size-1 dims read index 0).
AffineMap broadcastMap(MLIRContext *ctx, RankedTensorType operandType,
                       RankedTensorType resultType);

using ScalarBodyFn =
    function_ref<Value(OpBuilder &b, Location loc, ValueRange args)>;

/// Builds a broadcasting elementwise `linalg.generic` over `resultType`
/// (signless) from `operands`; `body` maps the operands' scalars to the
/// result scalar.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange operands, ScalarBodyFn body);
/// Same with explicit output sizes.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ArrayRef<OpFoldResult> sizes, ValueRange operands,
                       ScalarBodyFn body);

/// Reshapes `v` to `resultType` (same element count), using expand/collapse
/// when a reassociation exists, else collapse to 1-D and expand. `sizes`
/// gives the result's dimensions (needed for dynamic result dims).
Value reshapeTo(OpBuilder &b, Location loc, Value v,
                RankedTensorType resultType, ArrayRef<OpFoldResult> sizes);

/// Integer contents of an original (unconverted) operand produced by a
/// constant.
std::optional<SmallVector<int64_t>> constInts(Value v);

// Populate functions, one per op family.
void populateElementwiseLowering(TypeConverter &tc, RewritePatternSet &p);
/// `directConv`: 2-D f32 convolutions (and their weight gradients) may
/// become linalg.conv_2d_nchw_fchw / _ngchw_gfchw for the runtime's direct
/// convolution (targets with AVX-512); `directDepthwise`: those with one
/// input channel a group and a kernel larger than 3x3 may (targets with
/// AVX2 and FMA too).
/// `channelsLast`: 2-D f32 convolutions become transposes to channels-last
/// images around a channels-last convolution generic (see
/// channelsLastConvolution), which dist-contractions-to-runtime turns into
/// dist_rt_conv2d_nhwc_f32 and dist-sink-transposes cancels across the
/// graph.
void populateLinearAlgebraLowering(TypeConverter &tc, RewritePatternSet &p,
                                   bool directConv, bool directDepthwise,
                                   bool channelsLast);
void populateShapeLowering(TypeConverter &tc, RewritePatternSet &p);
void populateReductionLowering(TypeConverter &tc, RewritePatternSet &p);
void populateIndexingLowering(TypeConverter &tc, RewritePatternSet &p);

} // namespace mlir::dist::codegen

#endif // DIST_LIB_CODEGEN_HOST_LOWERING_H
