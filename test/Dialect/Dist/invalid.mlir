// RUN: dist-opt %s -split-input-file -verify-diagnostics

// One case per verifier and type-inference error of the dist dialect. Type
// inference is the shape verifier: a failed inference is reported with its
// reason, then with MLIR's "failed to infer returned types".

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'dist.param' op parameter 'w' must have a static shape, got 'tensor<?x4xf32>'}}
dist.param @w : tensor<?x4xf32>

// -----

func.func @param_not_in_module() {
  // expected-error @+1 {{'dist.param' op expects parent op 'builtin.module'}}
  dist.param @w : tensor<3x4xf32>
  return
}

// -----

func.func @get_param_unknown() {
  // expected-error @+1 {{'dist.get_param' op refers to unknown parameter @missing}}
  %0 = dist.get_param @missing : tensor<3x4xf32>
  return
}

// -----

dist.param @w : tensor<3x4xf32>
func.func @get_param_wrong_type() {
  // expected-error @+1 {{'dist.get_param' op result type 'tensor<4x3xf32>' does not match parameter @w of type 'tensor<3x4xf32>'}}
  %0 = dist.get_param @w : tensor<4x3xf32>
  return
}

// -----

dist.param @w : tensor<3x4xf32>
func.func @get_param_dynamic_type() {
  // expected-error @+1 {{'dist.get_param' op result type 'tensor<?x4xf32>' does not match parameter @w of type 'tensor<3x4xf32>'}}
  %0 = dist.get_param @w : tensor<?x4xf32>
  return
}

// -----

func.func @constant_of_shape_value() {
  %s = dist.constant dense<[2, 3]> : tensor<2xi64>
  // expected-error @+2 {{'value' must hold exactly one element, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.constant_of_shape %s {value = dense<[1, 2]> : tensor<2xi64>} : (tensor<2xi64>) -> tensor<2x3xi64>
  return
}

// -----

func.func @constant_of_shape_negative() {
  %s = dist.constant dense<[2, -3]> : tensor<2xi64>
  // expected-error @+2 {{shape has a negative dimension -3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.constant_of_shape %s : (tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

// The shape operand is a 1-D tensor.
func.func @constant_of_shape_rank(%s: tensor<2x1xi64>) {
  // expected-error @+2 {{'input' must be a 1-D tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.constant_of_shape %s : (tensor<2x1xi64>) -> tensor<*xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Declared result types and ODS constraints
//===----------------------------------------------------------------------===//

func.func @result_incompatible_shape(%x: tensor<4xf32>) {
  // expected-error @+2 {{'dist.relu' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.relu %x : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @result_incompatible_rank(%a: tensor<?x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error @+2 {{'dist.matmul' op inferred type(s) 'tensor<?x16xf32>' are incompatible with return type(s) of operation 'tensor<?x16x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.matmul %a, %b : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16x1xf32>
  return
}

// -----

func.func @result_incompatible_element(%x: tensor<4xf32>, %e: tensor<i64>) {
  // expected-error @+2 {{'dist.pow' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xf64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.pow %x, %e : (tensor<4xf32>, tensor<i64>) -> tensor<4xf64>
  return
}

// -----

func.func @result_incompatible_reduce(%x: tensor<3x4xf32>) {
  %axes = dist.constant dense<1> : tensor<1xi64>
  // expected-error @+2 {{'dist.reduce_sum' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<3x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.reduce_sum %x axes %axes {keepdims = 0 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  return
}

// -----

func.func @sqrt_of_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{'dist.sqrt' op operand #0 must be tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = dist.sqrt %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @neg_of_unsigned(%x: tensor<4xui8>) {
  // expected-error @+1 {{'dist.neg' op operand #0 must be tensor of}}
  %0 = dist.neg %x : (tensor<4xui8>) -> tensor<4xui8>
  return
}

// -----

func.func @not_of_float(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dist.not' op operand #0 must be tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = dist.not %x : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @and_of_int(%x: tensor<4xi32>) {
  // expected-error @+1 {{'dist.and' op operand #0 must be tensor of 1-bit signless integer values}}
  %0 = dist.and %x, %x : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_result_not_bool(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dist.equal' op result #0 must be tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = dist.equal %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @unary_result_element(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dist.relu' op requires the same element type for all operands and results}}
  %0 = dist.relu %x : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @add_mixed_elements(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+1 {{'dist.add' op requires the same element type for all operands and results}}
  %0 = dist.add %x, %y : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @less_mixed_elements(%x: tensor<4xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{'dist.less' op requires the same element type for all operands}}
  %0 = dist.less %x, %y : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi1>
  return
}

// -----

func.func @shape_result_not_i64(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'dist.shape' op result #0 must be tensor of 64-bit signless integer values, but got 'tensor<2xi32>'}}
  %0 = dist.shape %x : (tensor<2x3xf32>) -> tensor<2xi32>
  return
}

// -----

func.func @max_no_operands() {
  // expected-error @+1 {{'dist.max' op expected 1 or more operands, but found 0}}
  %0 = dist.max : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_no_operands() {
  // expected-error @+1 {{'dist.concat' op expected 1 or more operands, but found 0}}
  %0 = dist.concat {axis = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

func.func @gelu_approximate(%x: tensor<4xf32>) {
  // expected-error @+2 {{'approximate' must be "none" or "tanh", got "fast"}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gelu %x {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @clip_bound_element(%x: tensor<4xf32>, %lo: tensor<f16>) {
  // expected-error @+2 {{'min' element type differs from the input's}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.clip %x min %lo : (tensor<4xf32>, tensor<f16>) -> tensor<4xf32>
  return
}

// -----

func.func @clip_bound_not_scalar(%x: tensor<4xf32>, %hi: tensor<2xf32>) {
  // expected-error @+2 {{'max' must be a scalar}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.clip %x max %hi : (tensor<4xf32>, tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_target(%x: tensor<4xf32>) {
  // expected-error @+2 {{cast target must be an integer, float or string type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.cast %x {to = index} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_result_element(%x: tensor<4xf32>) {
  // expected-error @+2 {{'dist.cast' op inferred type(s) 'tensor<4xi32>' are incompatible with return type(s) of operation 'tensor<4xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.cast %x {to = i32} : (tensor<4xf32>) -> tensor<4xi64>
  return
}

// -----

func.func @add_not_broadcastable(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes [4, 3] and [4] are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.add %a, %b : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @equal_not_broadcastable(%a: tensor<2x3xi64>, %b: tensor<3x3xi64>) {
  // expected-error @+2 {{operand shapes [2, 3] and [3, 3] are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.equal %a, %b : (tensor<2x3xi64>, tensor<3x3xi64>) -> tensor<?x3xi1>
  return
}

// -----

func.func @sum_not_broadcastable(%a: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operand shapes [3] and [4] are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.sum %a, %a, %b : (tensor<3xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

// ONNX defines Mod on floats only with fmod = 1 (C fmod).
func.func @mod_float_without_fmod(%a: tensor<3xf32>) {
  // expected-error @+2 {{'fmod' must be 1 for floating-point operands}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.mod %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @where_element_types(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xf16>) {
  // expected-error @+2 {{'x' and 'y' must have the same element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.where %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  return
}

// -----

func.func @where_not_broadcastable(%c: tensor<2xi1>, %x: tensor<3xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{operand shapes [2] and [3] are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.where %c, %x, %y : (tensor<2xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @prelu_slope_rank(%x: tensor<3x4x5xf32>, %s: tensor<2x3x4x5xf32>) {
  // expected-error @+2 {{slope shape [2, 3, 4, 5] has more dimensions than [3, 4, 5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.prelu %x, %s : (tensor<3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<3x4x5xf32>
  return
}

// -----

func.func @prelu_slope_shape(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>) {
  // expected-error @+2 {{slope shape [3] does not broadcast to [2, 3, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.prelu %x, %s : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{operands must have at least one dimension}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.matmul %a, %b : (tensor<f32>, tensor<3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{contraction dimensions differ: [2, 3] x [4, 5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_vector_contraction(%a: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{contraction dimensions differ: [3] x [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.matmul %a, %b : (tensor<3xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x5xf32>) {
  // expected-error @+2 {{operand shapes [2] and [3] are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x5xf32>) -> tensor<?x4x5xf32>
  return
}

// -----

func.func @gemm_element_types(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+2 {{operands must have the same element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gemm %a, %b : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @gemm_a_rank(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'A' must be a matrix, got shape [2, 3, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gemm %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm_b_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'B' must be a matrix, got shape [3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gemm %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x?xf32>
  return
}

// -----

func.func @gemm_contraction(%a: tensor<2x3xf32>, %b: tensor<5x4xf32>) {
  // expected-error @+2 {{contraction dimensions differ: 3 vs 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gemm %a, %b {trans_b = 1 : i64} : (tensor<2x3xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm_bias_shape(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<3xf32>) {
  // expected-error @+2 {{'C' shape [3] does not broadcast to [2, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gemm %a, %b bias %c : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @gemm_bias_rank(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<1x2x4xf32>) {
  // expected-error @+2 {{'C' shape [1, 2, 4] has more dimensions than [2, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gemm %a, %b bias %c : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<1x2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

func.func @conv_element_types(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf16>) {
  // expected-error @+2 {{input and weight element types differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf16>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_weight_grad_batch(%x: tensor<2x3x8x8xf32>, %dy: tensor<4x16x6x6xf32>) {
  // expected-error @+2 {{input batch 2 differs from the output gradient's 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv_weight_grad %x, %dy {kernel_shape = array<i64: 3, 3>} : (tensor<2x3x8x8xf32>, tensor<4x16x6x6xf32>) -> tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv_weight_grad_rank(%x: tensor<2x3x8xf32>, %dy: tensor<2x16x6x6xf32>) {
  // expected-error @+2 {{input must be N x C x 2 spatial dims, got shape [2, 3, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv_weight_grad %x, %dy {kernel_shape = array<i64: 3, 3>} : (tensor<2x3x8xf32>, tensor<2x16x6x6xf32>) -> tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv_group(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{'group' must be positive, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {group = 0 : i64} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_input_rank(%x: tensor<3x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{input must be N x C x D1 ..., got shape [3, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w : (tensor<3x8xf32>, tensor<16x3x3x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @conv_weight_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3xf32>) {
  // expected-error @+2 {{weight must have at least 3 dimensions, got shape [16, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w : (tensor<1x3x8x8xf32>, tensor<16x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @conv_rank_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3xf32>) {
  // expected-error @+2 {{input rank 4 differs from weight rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w : (tensor<1x3x8x8xf32>, tensor<16x3x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<16x4x3x3xf32>) {
  // expected-error @+2 {{input has 3 channels, weight expects 4 (group 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w : (tensor<1x3x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_group_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{input has 3 channels, weight expects 6 (group 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {group = 2 : i64} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_group_output_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<16x1x3x3xf32>) {
  // expected-error @+2 {{output channels 16 not divisible by group 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {group = 3 : i64} : (tensor<1x3x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{bias must be 1-D of size 16, got shape [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w bias %b : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<8xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_bias_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<1x16xf32>) {
  // expected-error @+2 {{bias must be 1-D of size 16, got shape [1, 16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w bias %b : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<1x16xf32>) -> tensor<1x16x6x6xf32>
  return
}

// -----

func.func @conv_kernel_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{kernel has 3 spatial dimensions, input has 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {kernel_shape = array<i64: 3, 3, 3>} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x?x?xf32>
  return
}

// -----

func.func @conv_kernel_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{'kernel_shape' disagrees with the weight's shape [16, 3, 3, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {kernel_shape = array<i64: 3, 5>} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x?x?xf32>
  return
}

// -----

func.func @conv_strides_length(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{'strides' has 1 values, expected 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {strides = array<i64: 2>} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x?x?xf32>
  return
}

// -----

func.func @conv_dilations_length(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{'dilations' has 3 values, expected 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {dilations = array<i64: 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x?x?xf32>
  return
}

// -----

func.func @conv_pads_length(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{'pads' has 2 values, expected 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {pads = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x?x?xf32>
  return
}

// -----

func.func @conv_auto_pad(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{unknown auto_pad 'SAME'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {auto_pad = "SAME"} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x?x?xf32>
  return
}

// -----

func.func @conv_stride_zero(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{kernel, strides and dilations must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {strides = array<i64: 1, 0>} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x?x?xf32>
  return
}

// -----

func.func @conv_negative_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{pads must be non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {pads = array<i64: 0, -1, 0, 0>} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x?x?xf32>
  return
}

// -----

func.func @conv_window_too_large(%x: tensor<1x3x8x4xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+2 {{window of size 5 is larger than the padded input size 4 in spatial dimension 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv %x, %w {dilations = array<i64: 1, 2>} : (tensor<1x3x8x4xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x?x?xf32>
  return
}

// -----

func.func @conv_transpose_channels(%x: tensor<1x2x3x3xf32>, %w: tensor<1x4x3x3xf32>) {
  // expected-error @+2 {{input has 2 channels, weight expects 1 (group 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv_transpose %x, %w : (tensor<1x2x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x5x5xf32>
  return
}

// -----

func.func @conv_transpose_bias(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{bias must be 1-D of size 8, got shape [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv_transpose %x, %w bias %b {group = 2 : i64} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>) -> tensor<1x8x5x5xf32>
  return
}

// -----

func.func @conv_transpose_output_padding(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) {
  // expected-error @+2 {{'output_padding' has 1 values, expected 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv_transpose %x, %w {output_padding = array<i64: 1>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x?x?xf32>
  return
}

// -----

func.func @conv_transpose_output_shape(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) {
  // expected-error @+2 {{'output_shape' has 3 values, expected 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv_transpose %x, %w {output_shape = array<i64: 6, 6, 6>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x?x?xf32>
  return
}

// -----

func.func @conv_transpose_strides_length(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) {
  // expected-error @+2 {{'strides' has 3 values, expected 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv_transpose %x, %w {strides = array<i64: 2, 2, 2>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x?x?xf32>
  return
}

// -----

func.func @conv_transpose_stride_zero(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) {
  // expected-error @+2 {{strides and dilations must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv_transpose %x, %w {strides = array<i64: 0, 1>} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<1x4x?x?xf32>
  return
}

// -----

func.func @conv_transpose_output_size(%x: tensor<1x2x3x1xf32>, %w: tensor<2x4x1x1xf32>) {
  // expected-error @+2 {{output size -1 in spatial dimension 1 is not positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.conv_transpose %x, %w {pads = array<i64: 0, 1, 0, 1>} : (tensor<1x2x3x1xf32>, tensor<2x4x1x1xf32>) -> tensor<1x4x?x?xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

func.func @max_pool_input_rank(%x: tensor<3x8xf32>) {
  // expected-error @+2 {{input must be N x C x D1 ..., got shape [3, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.max_pool %x {kernel_shape = array<i64: 2>} : (tensor<3x8xf32>) -> (tensor<*xf32>, tensor<*xi64>)
  return
}

// -----

func.func @max_pool_ceil_mode(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'ceil_mode' must be 0 or 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.max_pool %x {ceil_mode = 2 : i64, kernel_shape = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> (tensor<1x3x?x?xf32>, tensor<1x3x?x?xi64>)
  return
}

// -----

func.func @max_pool_kernel_rank(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{kernel has 1 spatial dimensions, input has 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.max_pool %x {kernel_shape = array<i64: 2>} : (tensor<1x3x8x8xf32>) -> (tensor<1x3x?x?xf32>, tensor<1x3x?x?xi64>)
  return
}

// -----

func.func @max_pool_window_too_large(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{window of size 9 is larger than the padded input size 8 in spatial dimension 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.max_pool %x {kernel_shape = array<i64: 9, 2>} : (tensor<1x3x8x8xf32>) -> (tensor<1x3x?x?xf32>, tensor<1x3x?x?xi64>)
  return
}

// -----

func.func @average_pool_auto_pad(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{unknown auto_pad 'same_upper'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.average_pool %x {auto_pad = "same_upper", kernel_shape = array<i64: 3, 3>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x?x?xf32>
  return
}

// -----

func.func @average_pool_pads_length(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'pads' has 3 values, expected 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.average_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x?x?xf32>
  return
}

// -----

func.func @average_pool_kernel_zero(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{kernel, strides and dilations must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.average_pool %x {kernel_shape = array<i64: 0, 3>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x?x?xf32>
  return
}

// -----

func.func @average_pool_result(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'dist.average_pool' op inferred type(s) 'tensor<1x3x4x4xf32>' are incompatible with return type(s) of operation 'tensor<1x3x3x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x3x3xf32>
  return
}

// -----

func.func @global_pool_input_rank(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{input must be N x C x D1 ..., got shape [2, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.global_average_pool %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Normalisation, dropout, softmax
//===----------------------------------------------------------------------===//

func.func @batch_norm_input_rank(%x: tensor<4xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{input must be N x C x ..., got shape [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = dist.batch_norm %x, %c, %c, %c, %c : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @batch_norm_scale(%x: tensor<2x16x4x4xf32>, %s: tensor<8xf32>, %c: tensor<16xf32>) {
  // expected-error @+2 {{'scale' must be 1-D of size 16, got shape [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = dist.batch_norm %x, %s, %c, %c, %c : (tensor<2x16x4x4xf32>, tensor<8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_var_rank(%x: tensor<2x?xf32>, %c: tensor<16xf32>, %v: tensor<2x16xf32>) {
  // expected-error @+2 {{'input_var' must be 1-D of size C, got shape [2, 16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = dist.batch_norm %x, %c, %c, %c, %v : (tensor<2x?xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x16xf32>) -> (tensor<2x?xf32>, tensor<16xf32>, tensor<2x16xf32>)
  return
}

// -----

func.func @layer_norm_stash_type(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{unsupported 'stash_type' 7}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = dist.layer_norm %x, %g {stash_type = 7 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{'axis' 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = dist.layer_norm %x, %g {axis = 2 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+2 {{'scale' shape [4] does not broadcast to [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = dist.layer_norm %x, %g : (tensor<2x8xf32>, tensor<4xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @layer_norm_bias(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<2x8xf32>) {
  // expected-error @+2 {{'bias' shape [2, 8] has more dimensions than [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = dist.layer_norm %x, %g bias %b : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

// The statistics have the stash type (f32 by default), not the input type.
func.func @layer_norm_stats_type(%x: tensor<2x8xf16>, %g: tensor<8xf16>) {
  // expected-error @+2 {{'dist.layer_norm' op inferred type(s) 'tensor<2x8xf16>', 'tensor<2x1xf32>', 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf16>', 'tensor<2x1xf16>', 'tensor<2x1xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = dist.layer_norm %x, %g : (tensor<2x8xf16>, tensor<8xf16>) -> (tensor<2x8xf16>, tensor<2x1xf16>, tensor<2x1xf16>)
  return
}

// -----

// scale and B have one element per channel, as for batch_norm.
func.func @instance_norm_scale(%x: tensor<2x3x8x8xf32>, %s: tensor<5xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'scale' must be 1-D of size 3, got shape [5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.instance_norm %x, %s, %b : (tensor<2x3x8x8xf32>, tensor<5xf32>, tensor<3xf32>) -> tensor<2x3x8x8xf32>
  return
}

// -----

func.func @dropout_ratio_range(%x: tensor<4xf32>) {
  %r = dist.constant dense<1.0> : tensor<f32>
  // expected-error @+2 {{'ratio' must be in [0, 1), got 1.000000}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.dropout %x ratio %r : (tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @dropout_ratio_scalar(%x: tensor<4xf32>, %r: tensor<2xf32>) {
  // expected-error @+2 {{'ratio' must be a scalar}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.dropout %x ratio %r : (tensor<4xf32>, tensor<2xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return
}

// -----

func.func @dropout_mask_type(%x: tensor<4xf32>) {
  // expected-error @+2 {{'dist.dropout' op inferred type(s) 'tensor<4xf32>', 'tensor<4xi1>' are incompatible with return type(s) of operation 'tensor<4xf32>', 'tensor<5xi1>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.dropout %x : (tensor<4xf32>) -> (tensor<4xf32>, tensor<5xi1>)
  return
}

// -----

// The axis is checked as for the other ops with an axis attribute.
func.func @softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'axis' 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.softmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// The axis is checked as for the other ops with an axis attribute.
func.func @log_softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'axis' -3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.log_softmax %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

func.func @reduce_axis_range(%x: tensor<3x4xf32>) {
  %axes = dist.constant dense<2> : tensor<1xi64>
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.reduce_mean %x axes %axes : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @reduce_axis_repeated(%x: tensor<3x4xf32>) {
  %axes = dist.constant dense<[1, -1]> : tensor<2xi64>
  // expected-error @+2 {{axis -1 is repeated}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.reduce_max %x axes %axes : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x1xf32>
  return
}

// -----

func.func @arg_max_axis(%x: tensor<3x4xf32>) {
  // expected-error @+2 {{'axis' 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.arg_max %x {axis = 2 : i64} : (tensor<3x4xf32>) -> tensor<3x4xi64>
  return
}

// -----

func.func @arg_min_axis(%x: tensor<3x4xf32>) {
  // expected-error @+2 {{'axis' -3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.arg_min %x {axis = -3 : i64} : (tensor<3x4xf32>) -> tensor<3x4xi64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

func.func @reshape_two_infers(%x: tensor<2x3xf32>) {
  %s = dist.constant dense<[-1, -1]> : tensor<2xi64>
  // expected-error @+2 {{shape has more than one -1 entry}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @reshape_copy_missing_dim(%x: tensor<2x3xf32>) {
  %s = dist.constant dense<[6, 1, 0]> : tensor<3xi64>
  // expected-error @+2 {{shape entry 2 copies a dimension the input (rank 2) does not have}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.reshape %x, %s : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<6x1x?xf32>
  return
}

// -----

func.func @reshape_invalid_entry(%x: tensor<2x3xf32>) {
  %s = dist.constant dense<[-2, 3]> : tensor<2xi64>
  // expected-error @+2 {{shape has invalid entry -2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  return
}

// -----

func.func @reshape_infer_not_divisible(%x: tensor<2x3xf32>) {
  %s = dist.constant dense<[4, -1]> : tensor<2xi64>
  // expected-error @+2 {{cannot reshape [2, 3] into [4, -1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x?xf32>
  return
}

// -----

func.func @reshape_element_count(%x: tensor<2x3xf32>) {
  %s = dist.constant dense<[4, 2]> : tensor<2xi64>
  // expected-error @+2 {{cannot reshape [2, 3] (6 elements) into [4, 2] (8 elements)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return
}

// -----

// The dynamic dimension is carried over symbolically, so the static parts must
// match.
func.func @reshape_element_count_symbolic(%x: tensor<?x3xf32>) {
  %s = dist.shape %x {end = 1 : i64} : (tensor<?x3xf32>) -> tensor<1xi64>
  %four = dist.constant dense<4> : tensor<1xi64>
  %c = dist.concat %s, %four {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  // expected-error @+2 {{cannot reshape [?, 3] (3 elements) into [?, 4] (4 elements)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.reshape %x, %c : (tensor<?x3xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  return
}

// -----

func.func @reshape_allowzero_infer(%x: tensor<2x3xf32>) {
  %s = dist.constant dense<[0, -1]> : tensor<2xi64>
  // expected-error @+2 {{cannot reshape [2, 3] into [0, -1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.reshape %x, %s {allowzero = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

// The shape operand is a 1-D tensor.
func.func @reshape_shape_rank(%x: tensor<6xf32>) {
  %s = dist.constant dense<[[2], [3]]> : tensor<2x1xi64>
  // expected-error @+2 {{'shape' must be a 1-D tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.reshape %x, %s : (tensor<6xf32>, tensor<2x1xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @flatten_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'axis' 3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.flatten %x {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<?x?xf32>
  return
}

// -----

func.func @transpose_perm_length(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'perm' has 2 entries for an input of rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  return
}

// -----

func.func @transpose_not_permutation(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'perm' [0, 0, 1] is not a permutation}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.transpose %x {perm = array<i64: 0, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  return
}

// -----

func.func @transpose_perm_range(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'perm' [0, 3, 1] is not a permutation}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.transpose %x {perm = array<i64: 0, 3, 1>} : (tensor<2x3x4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @squeeze_axis_range(%x: tensor<1x3x1xf32>) {
  %a = dist.constant dense<3> : tensor<1xi64>
  // expected-error @+2 {{axis 3 is out of range for rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.squeeze %x axes %a : (tensor<1x3x1xf32>, tensor<1xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @squeeze_axis_repeated(%x: tensor<1x3x1xf32>) {
  %a = dist.constant dense<[0, -3]> : tensor<2xi64>
  // expected-error @+2 {{axis -3 is repeated}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.squeeze %x axes %a : (tensor<1x3x1xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @squeeze_not_one(%x: tensor<1x3x1xf32>) {
  %a = dist.constant dense<1> : tensor<1xi64>
  // expected-error @+2 {{cannot squeeze dimension 1 of size 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.squeeze %x axes %a : (tensor<1x3x1xf32>, tensor<1xi64>) -> tensor<1x1xf32>
  return
}

// -----

func.func @unsqueeze_axis_range(%x: tensor<2x3xf32>) {
  %a = dist.constant dense<3> : tensor<1xi64>
  // expected-error @+2 {{axis 3 is out of range for result rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.unsqueeze %x, %a : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @unsqueeze_axis_repeated(%x: tensor<3xf32>) {
  %a = dist.constant dense<[2, -1]> : tensor<2xi64>
  // expected-error @+2 {{axis -1 is repeated}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.unsqueeze %x, %a : (tensor<3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2xi64>) {
  // expected-error @+2 {{'axis' 1 is out of range for rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.concat %a, %a {axis = 1 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<*xi64>
  return
}

// -----

func.func @concat_ranks(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{operands have different ranks [2, 3] and [3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{operand shapes [2, 3] and [2, 4] differ outside axis 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x?xf32>
  return
}

// -----

func.func @concat_result(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+2 {{'dist.concat' op inferred type(s) 'tensor<5x3xf32>' are incompatible with return type(s) of operation 'tensor<4x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @split_num_outputs(%x: tensor<4xf32>) {
  // expected-error @+2 {{'num_outputs' must be positive, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  dist.split %x {num_outputs = 0 : i64} : (tensor<4xf32>) -> ()
  return
}

// -----

func.func @split_axis(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{'axis' 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.split %x {axis = 2 : i64, num_outputs = 2 : i64} : (tensor<2x6xf32>) -> (tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

func.func @split_sizes_count(%x: tensor<2x6xf32>) {
  %s = dist.constant dense<[1, 2, 3]> : tensor<3xi64>
  // expected-error @+2 {{'split' has 3 sizes for 2 outputs}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.split %x sizes %s {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<2x6xf32>, tensor<3xi64>) -> (tensor<2x?xf32>, tensor<2x?xf32>)
  return
}

// -----

func.func @split_negative_size(%x: tensor<2x6xf32>) {
  %s = dist.constant dense<[7, -1]> : tensor<2xi64>
  // expected-error @+2 {{'split' has a negative size -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.split %x sizes %s {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> (tensor<2x?xf32>, tensor<2x?xf32>)
  return
}

// -----

func.func @split_sizes_sum(%x: tensor<2x6xf32>) {
  %s = dist.constant dense<[2, 3]> : tensor<2xi64>
  // expected-error @+2 {{'split' sizes add up to 5, dimension 1 has size 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.split %x sizes %s {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @split_too_many_parts(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{cannot split dimension of size 2 into 3 non-empty parts}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = dist.split %x {num_outputs = 3 : i64} : (tensor<2x6xf32>) -> (tensor<?x6xf32>, tensor<?x6xf32>, tensor<?x6xf32>)
  return
}

// -----

func.func @split_result_count(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{'dist.split' op inferred type(s) 'tensor<2x3xf32>', 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.split %x {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<2x6xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @slice_axis_range(%x: tensor<4x6xf32>) {
  %s = dist.constant dense<0> : tensor<1xi64>
  %a = dist.constant dense<2> : tensor<1xi64>
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.slice %x, %s, %s axes %a : (tensor<4x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @slice_axis_repeated(%x: tensor<4x6xf32>) {
  %s = dist.constant dense<[0, 0]> : tensor<2xi64>
  %a = dist.constant dense<[0, -2]> : tensor<2xi64>
  // expected-error @+2 {{axis -2 is repeated}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.slice %x, %s, %s axes %a : (tensor<4x6xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @slice_lengths(%x: tensor<4x6xf32>) {
  %s = dist.constant dense<0> : tensor<1xi64>
  %e = dist.constant dense<[2, 3]> : tensor<2xi64>
  // expected-error @+2 {{starts, ends, axes and steps must have the same length}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.slice %x, %s, %e : (tensor<4x6xf32>, tensor<1xi64>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @slice_step_zero(%x: tensor<4x6xf32>) {
  %s = dist.constant dense<0> : tensor<1xi64>
  %e = dist.constant dense<3> : tensor<1xi64>
  %z = dist.constant dense<0> : tensor<1xi64>
  // expected-error @+2 {{slice step must not be zero}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.slice %x, %s, %e steps %z : (tensor<4x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x6xf32>
  return
}

// -----

// Rows 3 and 1: a negative step stops before the end.
func.func @slice_result(%x: tensor<4x6xf32>) {
  %s = dist.constant dense<-1> : tensor<1xi64>
  %e = dist.constant dense<0> : tensor<1xi64>
  %st = dist.constant dense<-2> : tensor<1xi64>
  // expected-error @+2 {{'dist.slice' op inferred type(s) 'tensor<2x6xf32>' are incompatible with return type(s) of operation 'tensor<3x6xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.slice %x, %s, %e steps %st : (tensor<4x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x6xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<5x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{'axis' 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gather %x, %i {axis = 2 : i64} : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @gather_index_range(%x: tensor<5x4xf32>) {
  %i = dist.constant dense<[0, 5]> : tensor<2xi64>
  // expected-error @+2 {{index 5 is out of range for axis 0 of size 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gather %x, %i : (tensor<5x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @gather_negative_index_range(%x: tensor<5x4xf32>) {
  %i = dist.constant dense<-5> : tensor<i32>
  // expected-error @+2 {{index -5 is out of range for axis 1 of size 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gather %x, %i {axis = 1 : i64} : (tensor<5x4xf32>, tensor<i32>) -> tensor<5xf32>
  return
}

// -----

func.func @gather_elements_rank(%x: tensor<3x3xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{data and indices must have the same rank, got [3, 3] and [3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gather_elements %x, %i : (tensor<3x3xf32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @gather_elements_axis(%x: tensor<3x3xf32>, %i: tensor<3x2xi64>) {
  // expected-error @+2 {{'axis' 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.gather_elements %x, %i {axis = 2 : i64} : (tensor<3x3xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  return
}

// -----

func.func @scatter_elements_types(%x: tensor<3x3xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf16>) {
  // expected-error @+2 {{updates and data must have the same element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.scatter_elements %x, %i, %u : (tensor<3x3xf32>, tensor<3x2xi64>, tensor<3x2xf16>) -> tensor<3x3xf32>
  return
}

// -----

func.func @scatter_elements_updates_shape(%x: tensor<3x3xf32>, %i: tensor<3x2xi64>, %u: tensor<3x3xf32>) {
  // expected-error @+2 {{updates shape [3, 3] differs from indices shape [3, 2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.scatter_elements %x, %i, %u : (tensor<3x3xf32>, tensor<3x2xi64>, tensor<3x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @scatter_elements_rank(%x: tensor<3x3xf32>, %i: tensor<6xi64>, %u: tensor<6xf32>) {
  // expected-error @+2 {{data and indices must have the same rank, got [3, 3] and [6]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.scatter_elements %x, %i, %u : (tensor<3x3xf32>, tensor<6xi64>, tensor<6xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @scatter_elements_reduction(%x: tensor<3x3xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>) {
  // expected-error @+2 {{unknown reduction 'sub'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.scatter_elements %x, %i, %u {reduction = "sub"} : (tensor<3x3xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @scatter_nd_updates_shape(%x: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) {
  // expected-error @+2 {{updates shape [2, 3] differs from indices.shape[:-1] + data.shape[k:] = [2, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.scatter_nd %x, %i, %u : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @scatter_nd_tuple_length(%x: tensor<3x4xf32>, %i: tensor<2x3xi64>, %u: tensor<2xf32>) {
  // expected-error @+2 {{index tuples of length 3 into data of rank 2 (1 to 2 allowed)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.scatter_nd %x, %i, %u : (tensor<3x4xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @scatter_nd_reduction(%x: tensor<3x4xf32>, %i: tensor<2x2xi64>, %u: tensor<2xf32>) {
  // expected-error @+2 {{unknown reduction 'sub'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.scatter_nd %x, %i, %u {reduction = "sub"} : (tensor<3x4xf32>, tensor<2x2xi64>, tensor<2xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @expand_not_broadcastable(%x: tensor<3x2xf32>) {
  %s = dist.constant dense<[3, 4]> : tensor<2xi64>
  // expected-error @+2 {{operand shapes [3, 2] and [3, 4] are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.expand %x, %s : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @tile_repeats_length(%x: tensor<2x3xf32>, %r: tensor<3xi64>) {
  // expected-error @+2 {{'repeats' has 3 entries for an input of rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.tile %x, %r : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @tile_negative_repeat(%x: tensor<2x3xf32>) {
  %r = dist.constant dense<[2, -1]> : tensor<2xi64>
  // expected-error @+2 {{'repeats' has a negative entry -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.tile %x, %r : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x?xf32>
  return
}

// -----

func.func @pad_mode(%x: tensor<2x3xf32>, %p: tensor<4xi64>) {
  // expected-error @+2 {{unknown pad mode 'symmetric'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.pad %x, %p {mode = "symmetric"} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @pad_value_type(%x: tensor<2x3xf32>, %p: tensor<4xi64>, %v: tensor<i64>) {
  // expected-error @+2 {{constant value element type differs from the input's}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.pad %x, %p value %v : (tensor<2x3xf32>, tensor<4xi64>, tensor<i64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @pad_axis(%x: tensor<2x3xf32>, %p: tensor<2xi64>) {
  %a = dist.constant dense<2> : tensor<1xi64>
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.pad %x, %p axes %a : (tensor<2x3xf32>, tensor<2xi64>, tensor<1xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @pad_pads_length(%x: tensor<2x3xf32>, %p: tensor<2xi64>) {
  // expected-error @+2 {{'pads' has 2 entries, expected 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.pad %x, %p : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @pad_negative_result(%x: tensor<2x3xf32>) {
  %p = dist.constant dense<[0, -2, 0, -2]> : tensor<4xi64>
  // expected-error @+2 {{padding makes dimension 1 negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.pad %x, %p : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<2x?xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Shape queries and generators
//===----------------------------------------------------------------------===//

func.func @shape_result(%x: tensor<?x4xf32>) {
  // expected-error @+2 {{'dist.shape' op inferred type(s) 'tensor<1xi64>' are incompatible with return type(s) of operation 'tensor<2xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.shape %x {start = -1 : i64} : (tensor<?x4xf32>) -> tensor<2xi64>
  return
}

// -----

func.func @size_result(%x: tensor<?x4xf32>) {
  // expected-error @+2 {{'dist.size' op inferred type(s) 'tensor<i64>' are incompatible with return type(s) of operation 'tensor<1xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.size %x : (tensor<?x4xf32>) -> tensor<1xi64>
  return
}

// -----

func.func @range_element_types(%s: tensor<i64>, %l: tensor<i32>, %d: tensor<i64>) {
  // expected-error @+2 {{start, limit and delta must have the same element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.range %s, %l, %d : (tensor<i64>, tensor<i32>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

func.func @range_not_scalar(%s: tensor<i64>, %l: tensor<2xi64>, %d: tensor<i64>) {
  // expected-error @+2 {{start, limit and delta must be scalars}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.range %s, %l, %d : (tensor<i64>, tensor<2xi64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

func.func @range_delta_zero(%s: tensor<f32>, %l: tensor<f32>) {
  %d = dist.constant dense<0.0> : tensor<f32>
  // expected-error @+2 {{'delta' must not be zero}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.range %s, %l, %d : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  return
}

// -----

// ceil((8 - 1) / 3) = 3 elements.
func.func @range_result() {
  %s = dist.constant dense<1> : tensor<i64>
  %l = dist.constant dense<8> : tensor<i64>
  %d = dist.constant dense<3> : tensor<i64>
  // expected-error @+2 {{'dist.range' op inferred type(s) 'tensor<3xi64>' are incompatible with return type(s) of operation 'tensor<4xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.range %s, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<4xi64>
  return
}

// -----

func.func @top_k_axis(%x: tensor<3x4xf32>, %k: tensor<1xi64>) {
  // expected-error @+2 {{'axis' 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.top_k %x, %k {axis = 2 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<*xf32>, tensor<*xi64>)
  return
}

// -----

func.func @top_k_k_count(%x: tensor<3x4xf32>) {
  %k = dist.constant dense<[1, 2]> : tensor<2xi64>
  // expected-error @+2 {{'k' must hold one value}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.top_k %x, %k : (tensor<3x4xf32>, tensor<2xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  return
}

// -----

func.func @top_k_negative(%x: tensor<3x4xf32>) {
  %k = dist.constant dense<-1> : tensor<1xi64>
  // expected-error @+2 {{'k' must be non-negative, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.top_k %x, %k : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  return
}

// -----

func.func @top_k_too_large(%x: tensor<3x4xf32>) {
  %k = dist.constant dense<5> : tensor<1xi64>
  // expected-error @+2 {{'k' 5 exceeds the axis size 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.top_k %x, %k : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  return
}

// -----

// Trilu works on the last two dimensions.
func.func @trilu_rank(%x: tensor<4xf32>) {
  // expected-error @+2 {{input must have at least 2 dimensions}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.trilu %x : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cum_sum_axis_scalar(%x: tensor<3x4xf32>) {
  %a = dist.constant dense<[0, 1]> : tensor<2xi64>
  // expected-error @+2 {{'axis' must be a scalar}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.cum_sum %x, %a : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @cum_sum_axis_range(%x: tensor<3x4xf32>) {
  %a = dist.constant dense<2> : tensor<i32>
  // expected-error @+2 {{'axis' 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.cum_sum %x, %a : (tensor<3x4xf32>, tensor<i32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @one_hot_values(%i: tensor<3xi64>, %d: tensor<i64>, %v: tensor<3xf32>) {
  // expected-error @+2 {{'values' must hold exactly two elements}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.one_hot %i, %d, %v : (tensor<3xi64>, tensor<i64>, tensor<3xf32>) -> tensor<3x?xf32>
  return
}

// -----

func.func @one_hot_depth_scalar(%i: tensor<3xi64>, %v: tensor<2xf32>) {
  %d = dist.constant dense<[4, 5]> : tensor<2xi64>
  // expected-error @+2 {{'depth' must be a scalar}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.one_hot %i, %d, %v : (tensor<3xi64>, tensor<2xi64>, tensor<2xf32>) -> tensor<3x?xf32>
  return
}

// -----

func.func @one_hot_depth_positive(%i: tensor<3xi64>, %v: tensor<2xf32>) {
  %d = dist.constant dense<0.0> : tensor<f32>
  // expected-error @+2 {{'depth' must be positive, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.one_hot %i, %d, %v : (tensor<3xi64>, tensor<f32>, tensor<2xf32>) -> tensor<3x?xf32>
  return
}

// -----

func.func @one_hot_axis(%i: tensor<3xi64>, %d: tensor<i64>, %v: tensor<2xf32>) {
  // expected-error @+2 {{'axis' 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.one_hot %i, %d, %v {axis = 2 : i64} : (tensor<3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<*xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

func.func @loss_reduction(%s: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+2 {{unknown reduction 'avg'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.softmax_cross_entropy_loss %s, %y {reduction = "avg"} : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x10xf32>)
  return
}

// -----

func.func @loss_scores_rank(%s: tensor<10xf32>, %y: tensor<i64>) {
  // expected-error @+2 {{scores must be N x C x ..., got shape [10]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.softmax_cross_entropy_loss %s, %y : (tensor<10xf32>, tensor<i64>) -> (tensor<f32>, tensor<10xf32>)
  return
}

// -----

func.func @loss_labels_rank(%s: tensor<4x10xf32>, %y: tensor<4x5xi64>) {
  // expected-error @+2 {{labels shape [4, 5] does not match scores shape [4, 10]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = dist.softmax_cross_entropy_loss %s, %y : (tensor<4x10xf32>, tensor<4x5xi64>) -> (tensor<f32>, tensor<4x10xf32>)
  return
}

// -----

func.func @loss_labels_shape(%s: tensor<2x10x5xf32>, %y: tensor<2x6xi64>) {
  // expected-error @+2 {{labels shape [2, 6] does not match scores shape [2, 10, 5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.nll_loss %s, %y : (tensor<2x10x5xf32>, tensor<2x6xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_weights(%s: tensor<4x10xf32>, %y: tensor<4xi64>, %w: tensor<5xf32>) {
  // expected-error @+2 {{weights must be 1-D of size C}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.nll_loss %s, %y weight %w : (tensor<4x10xf32>, tensor<4xi64>, tensor<5xf32>) -> tensor<f32>
  return
}

// -----

func.func @loss_reduction_none_result(%s: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+2 {{'dist.nll_loss' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.nll_loss %s, %y {reduction = "none"} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Distribution attributes
//===----------------------------------------------------------------------===//

func.func @stage_index(%x: tensor<4xf32>) {
  // expected-error @+1 {{stage index 4 is out of range [0, 4)}}
  %0 = dist.relu %x {dist.stage = #dist.stage<4 of 4>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @stage_negative_index(%x: tensor<4xf32>) {
  // expected-error @+1 {{stage index -1 is out of range [0, 2)}}
  %0 = dist.relu %x {dist.stage = #dist.stage<-1 of 2>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @stage_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{stage count must be positive, got 0}}
  %0 = dist.relu %x {dist.stage = #dist.stage<0 of 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @placement_group(%x: tensor<4xf32>) {
  // expected-error @+1 {{placement group must be -1 (any) or >= 0, got -2}}
  %0 = dist.relu %x {dist.placement = #dist.placement<gpu, group = -2>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @ps_table_positive(%x: tensor<4xf32>) {
  // expected-error @+1 {{parameter-server table needs positive rows, dim and shards, got 100, 0, 2}}
  %0 = dist.relu %x {dist.ps_table = #dist.ps_table<rows = 100, dim = 0, shards = 2>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @ps_table_shards(%x: tensor<4xf32>) {
  // expected-error @+1 {{parameter-server table has more shards (4) than rows (2)}}
  %0 = dist.relu %x {dist.ps_table = #dist.ps_table<rows = 2, dim = 64, shards = 4>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @expert_axis_dim(%x: tensor<4xf32>) {
  // expected-error @+1 {{expert dimension must be non-negative, got -1}}
  %0 = dist.relu %x {dist.expert_axis = #dist.expert_axis<dim = -1, experts = 8, mesh_axis = "ep">} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @expert_axis_experts(%x: tensor<4xf32>) {
  // expected-error @+1 {{expert count must be positive, got 0}}
  %0 = dist.relu %x {dist.expert_axis = #dist.expert_axis<dim = 0, experts = 0, mesh_axis = "ep">} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @expert_axis_mesh_axis(%x: tensor<4xf32>) {
  // expected-error @+1 {{expert axis needs a mesh axis name}}
  %0 = dist.relu %x {dist.expert_axis = #dist.expert_axis<dim = 0, experts = 8, mesh_axis = "">} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @mesh_axis(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown mesh axis 'ep' (expected dp: data parallel, tp: tensor parallel, pp: pipeline stages)}}
  %0 = dist.relu %x {dist.mesh = #dist.mesh<ep = 2>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @mesh_twice(%x: tensor<4xf32>) {
  // expected-error @+1 {{axis 'dp' appears twice}}
  %0 = dist.relu %x {dist.mesh = #dist.mesh<dp = 2, dp = 2>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @mesh_size(%x: tensor<4xf32>) {
  // expected-error @+1 {{the size of axis 'tp' must be an integer from 1 to 1048576, got '0'}}
  %0 = dist.relu %x {dist.mesh = #dist.mesh<tp = 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @plan_stages(%x: tensor<4xf32>) {
  // expected-error @+1 {{plan stage 1 does not start where stage 0 ends}}
  %0 = dist.relu %x {dist.plan = #dist.plan<objective = cost, search = greedy, dp = 1, tp = 1, pp = 2, micro_batches = 1, recompute = false, global_batch = 8, training = false, step_s = 1.0, throughput = 8.0, cost_per_hour = 2.0, devices_used = 2, stages = [#dist.plan_stage<first_layer = 0, last_layer = 1, first_name = "a", last_name = "b", device_type = "n/g", device_kind = gpu, units = 1, dp = 1, tp = 1, recompute = false, compute_s = 1.0, comm_s = 0.0, memory_bytes = 1.0, throughput = 8.0>, #dist.plan_stage<first_layer = 3, last_layer = 4, first_name = "c", last_name = "d", device_type = "n/g", device_kind = gpu, units = 1, dp = 1, tp = 1, recompute = false, compute_s = 1.0, comm_s = 0.0, memory_bytes = 1.0, throughput = 8.0>]>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @plan_stage_units(%x: tensor<4xf32>) {
  // expected-error @+1 {{plan stage has 2 units for dp 2 x tp 2}}
  %0 = dist.relu %x {dist.stage_plan = #dist.plan_stage<first_layer = 0, last_layer = 1, first_name = "a", last_name = "b", device_type = "n/g", device_kind = gpu, units = 2, dp = 2, tp = 2, recompute = false, compute_s = 1.0, comm_s = 0.0, memory_bytes = 1.0, throughput = 8.0>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Only value-preserving ops take sequences.
func.func @sequence_into_relu(%s: !dist.sequence<tensor<4xf32>>) {
  // expected-error @+1 {{operand #0 must be tensor of}}
  %0 = dist.relu %s : (!dist.sequence<tensor<4xf32>>) -> !dist.sequence<tensor<4xf32>>
  return
}

// -----

func.func @send_to_itself(%x: tensor<4xf32>) attributes {dist.pipeline_action = {action = "forward", stage = 1 : i64}} {
  // expected-error @+1 {{'dist.send' op peer stage 1 is the stage of the enclosing function}}
  dist.send %x to 1 tag 0 : tensor<4xf32>
  return
}

// -----

func.func @recv_negative_tag() {
  // expected-error @+1 {{'dist.recv' op tag must not be negative, got -1}}
  %0 = dist.recv from 0 tag -1 : tensor<4xf32>
  return
}

// -----

func.func @send_dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'dist.send' op operand #0 must be statically shaped tensor of any type values, but got 'tensor<?xf32>'}}
  dist.send %x to 1 tag 0 : tensor<?xf32>
  return
}

// -----

func.func @scatter_nd_scalar_indices(%x: tensor<3x4xf32>, %i: tensor<i64>, %u: tensor<3x4xf32>) {
  // expected-error @+2 {{indices must have rank 1 or more}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dist.scatter_nd %x, %i, %u : (tensor<3x4xf32>, tensor<i64>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}
