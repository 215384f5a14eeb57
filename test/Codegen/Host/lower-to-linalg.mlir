// RUN: dist-opt %s --split-input-file --verify-diagnostics --dist-lower-to-linalg | FileCheck %s

// Parameters become leading read-only arguments of every function (named
// by dist.param), the functions get a C interface that does not inline
// them (so the graph is compiled once), elementwise ops become
// linalg.generic on tensors, and unsigned element types signless with
// unsigned arithmetic.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: tensor<4xf32> {bufferization.writable = false, dist.param = "w"}
// CHECK-SAME: tensor<4xf32> {bufferization.writable = false}
// CHECK-SAME: attributes {llvm.emit_c_interface, passthrough = ["noinline"]}
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK-LABEL: func.func @unsigned(
// CHECK-SAME: tensor<4xi8>
// CHECK: arith.divui
module {
  dist.param @w : tensor<4xf32>
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %w = dist.get_param @w : tensor<4xf32>
    %y = dist.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
  func.func @unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
    %q = dist.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
    return %q : tensor<4xui8>
  }
}

// -----

// What codegen has no lowering for fails at the op, naming it.
func.func @strings(%x: tensor<3xf32>) -> tensor<3x!dist.string> {
  // expected-error @+1 {{not supported by codegen}}
  %s = dist.cast %x {to = !dist.string} : (tensor<3xf32>) -> tensor<3x!dist.string>
  return %s : tensor<3x!dist.string>
}

// -----

// Einsum with three batch subscripts leading the output and both operands
// (MaxViT's window attention): they fold into one, so that the product has
// a single batch loop (dist-contractions-to-runtime's GEMM takes at most
// two), and the result expands back.
// CHECK-LABEL: func.func @einsum_batch_run(
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3], [4]] : tensor<1x4x2x7x8xf32> into tensor<8x7x8xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3], [4]] : tensor<1x4x2x5x8xf32> into tensor<8x5x8xf32>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<8x7x5xf32>)
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1, 2], [3], [4]] output_shape [1, 4, 2, 7, 5] : tensor<8x7x5xf32> into tensor<1x4x2x7x5xf32>
func.func @einsum_batch_run(%q: tensor<1x4x2x7x8xf32>, %k: tensor<1x4x2x5x8xf32>) -> tensor<1x4x2x7x5xf32> {
  %0 = dist.einsum %q, %k {equation = "bghid,bghjd->bghij"} : (tensor<1x4x2x7x8xf32>, tensor<1x4x2x5x8xf32>) -> tensor<1x4x2x7x5xf32>
  return %0 : tensor<1x4x2x7x5xf32>
}

// -----

// Two batch subscripts stay two loops (the GEMM runs the outer one), and
// batch subscripts in another order in one operand do not fold.
// CHECK-LABEL: func.func @einsum_two_batches(
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-LABEL: func.func @einsum_batch_order(
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]
func.func @einsum_two_batches(%q: tensor<4x2x7x8xf32>, %k: tensor<4x2x5x8xf32>) -> tensor<4x2x7x5xf32> {
  %0 = dist.einsum %q, %k {equation = "ghid,ghjd->ghij"} : (tensor<4x2x7x8xf32>, tensor<4x2x5x8xf32>) -> tensor<4x2x7x5xf32>
  return %0 : tensor<4x2x7x5xf32>
}
func.func @einsum_batch_order(%q: tensor<1x4x2x7x8xf32>, %k: tensor<1x2x4x5x8xf32>) -> tensor<1x4x2x7x5xf32> {
  %0 = dist.einsum %q, %k {equation = "bghid,bhgjd->bghij"} : (tensor<1x4x2x7x8xf32>, tensor<1x2x4x5x8xf32>) -> tensor<1x4x2x7x5xf32>
  return %0 : tensor<1x4x2x7x5xf32>
}

// -----

// Reshapes whose target shape is read as the program runs, of a dynamic
// batch (ShuffleNetV2's channel shuffle as PyTorch exports it): the batch
// is the one dimension of unknown size on each side and the static
// dimensions before and after it have equal products, so it stays a group
// of its own and the rest expands or collapses as static shapes do. Two
// unknown dimensions, static parts that would need both, or static parts
// of no elements (which leave the unknown sizes free) take tensor.reshape.
// CHECK-LABEL: func.func @shuffle_dynamic_batch(
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] output_shape [%{{.*}}, 2, 58, 28, 28] : tensor<?x116x28x28xf32> into tensor<?x2x58x28x28xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] : tensor<?x58x2x28x28xf32> into tensor<?x116x28x28xf32>
// CHECK-NOT: tensor.reshape
// CHECK-LABEL: func.func @reshape_not_a_view(
// CHECK: tensor.reshape
// CHECK: tensor.reshape
// CHECK: tensor.reshape
// CHECK-NOT: tensor.expand_shape
func.func @shuffle_dynamic_batch(%x: tensor<?x116x28x28xf32>, %s: tensor<5xi64>, %t: tensor<4xi64>) -> tensor<?x116x28x28xf32> {
  %0 = dist.reshape %x, %s : (tensor<?x116x28x28xf32>, tensor<5xi64>) -> tensor<?x2x58x28x28xf32>
  %1 = dist.transpose %0 {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<?x2x58x28x28xf32>) -> tensor<?x58x2x28x28xf32>
  %2 = dist.reshape %1, %t : (tensor<?x58x2x28x28xf32>, tensor<4xi64>) -> tensor<?x116x28x28xf32>
  return %2 : tensor<?x116x28x28xf32>
}
func.func @reshape_not_a_view(%x: tensor<?x6x4xf32>, %y: tensor<?x?x4xf32>, %s: tensor<4xi64>, %t: tensor<2xi64>, %z: tensor<?x0x4xf32>) -> (tensor<?x4x2x3xf32>, tensor<?x4xf32>, tensor<?x0x2x2xf32>) {
  %0 = dist.reshape %x, %s : (tensor<?x6x4xf32>, tensor<4xi64>) -> tensor<?x4x2x3xf32>
  %1 = dist.reshape %y, %t : (tensor<?x?x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %2 = dist.reshape %z, %s : (tensor<?x0x4xf32>, tensor<4xi64>) -> tensor<?x0x2x2xf32>
  return %0, %1, %2 : tensor<?x4x2x3xf32>, tensor<?x4xf32>, tensor<?x0x2x2xf32>
}
