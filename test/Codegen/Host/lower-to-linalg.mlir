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
