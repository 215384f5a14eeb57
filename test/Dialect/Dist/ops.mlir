// RUN: dist-opt %s | dist-opt | FileCheck %s
// RUN: dist-opt %s --mlir-print-op-generic | dist-opt | FileCheck %s

// Round trip of every op of the dist dialect in its custom syntax, with
// dynamic dimensions, optional operands present and absent, non-default
// attributes, and the distribution attributes used as discardable attributes.

// CHECK: module attributes {dist.param_file = "model.params"}
module attributes {dist.param_file = "model.params"} {

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

// CHECK: dist.param @fc1.weight {trainable} : tensor<128x784xf32>
dist.param @fc1.weight {trainable} : tensor<128x784xf32>
// CHECK: dist.param @emb.table {dist.ps_table = #dist.ps_table<rows = 1000, dim = 64, shards = 4>} : tensor<1000x64xf32>
dist.param @emb.table {dist.ps_table = #dist.ps_table<rows = 1000, dim = 64, shards = 4>} : tensor<1000x64xf32>
// CHECK: dist.param @experts.w
// CHECK-SAME: dist.expert_axis = #dist.expert_axis<dim = 0, experts = 8, mesh_axis = "ep">
// CHECK-SAME: trainable
// CHECK-SAME: : tensor<8x64x64xbf16>
dist.param @experts.w {trainable, dist.expert_axis = #dist.expert_axis<dim = 0, experts = 8, mesh_axis = "ep">} : tensor<8x64x64xbf16>
// CHECK: dist.param @scale : tensor<f32>
dist.param @scale : tensor<f32>

// CHECK-LABEL: func.func @params
func.func @params() -> (tensor<128x784xf32>, tensor<1000x64xf32>, tensor<8x64x64xbf16>, tensor<f32>) {
  // CHECK: %[[W:.+]] = dist.get_param @fc1.weight : tensor<128x784xf32>
  %w = dist.get_param @fc1.weight : tensor<128x784xf32>
  // CHECK: %[[T:.+]] = dist.get_param @emb.table {dist.placement = #dist.placement<cpu>} : tensor<1000x64xf32>
  %t = dist.get_param @emb.table {dist.placement = #dist.placement<cpu>} : tensor<1000x64xf32>
  // CHECK: %[[E:.+]] = dist.get_param @experts.w : tensor<8x64x64xbf16>
  %e = dist.get_param @experts.w : tensor<8x64x64xbf16>
  // CHECK: %[[S:.+]] = dist.get_param @scale : tensor<f32>
  %s = dist.get_param @scale : tensor<f32>
  // CHECK: return %[[W]], %[[T]], %[[E]], %[[S]]
  return %w, %t, %e, %s : tensor<128x784xf32>, tensor<1000x64xf32>, tensor<8x64x64xbf16>, tensor<f32>
}

// CHECK-LABEL: func.func @constants
// CHECK-SAME: (%[[SHAPE:.+]]: tensor<2xi64>, %[[DYN:.+]]: tensor<?xi64>)
func.func @constants(%shape: tensor<2xi64>, %dyn: tensor<?xi64>) {
  // CHECK: %[[C0:.+]] = dist.constant dense<[1, 784]> : tensor<2xi64>
  %c0 = dist.constant dense<[1, 784]> : tensor<2xi64>
  // CHECK: dist.constant dense<0.000000e+00> : tensor<4x5xf32>
  %c1 = dist.constant dense<0.0> : tensor<4x5xf32>
  // CHECK: dist.constant dense<true> : tensor<i1>
  %c2 = dist.constant dense<true> : tensor<i1>
  // Discardable attributes come before the value.
  // CHECK: dist.constant {dist.placement = #dist.placement<gpu, group = 1>} dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xui8>
  %c3 = dist.constant {dist.placement = #dist.placement<gpu, group = 1>} dense<[[1, 2], [3, 4]]> : tensor<2x2xui8>
  // CHECK: dist.constant dense_resource<blob> : tensor<3xf16>
  %c4 = dist.constant dense_resource<blob> : tensor<3xf16>
  // Without a value the result is f32 zeros.
  // CHECK: dist.constant_of_shape %[[SHAPE]] : (tensor<2xi64>) -> tensor<?x?xf32>
  %z0 = dist.constant_of_shape %shape : (tensor<2xi64>) -> tensor<?x?xf32>
  // CHECK: dist.constant_of_shape %[[C0]] {value = dense<7> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<1x784xi64>
  %z1 = dist.constant_of_shape %c0 {value = dense<7> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<1x784xi64>
  // CHECK: dist.constant_of_shape %[[DYN]] {value = dense<true> : tensor<1xi1>} : (tensor<?xi64>) -> tensor<*xi1>
  %z2 = dist.constant_of_shape %dyn {value = dense<true> : tensor<1xi1>} : (tensor<?xi64>) -> tensor<*xi1>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unary_float
// CHECK-SAME: (%[[X:.+]]: tensor<?x16xf32>, %[[H:.+]]: tensor<2x?xf16>)
func.func @unary_float(%x: tensor<?x16xf32>, %h: tensor<2x?xf16>) {
  // CHECK: dist.abs %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %0 = dist.abs %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.neg %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %1 = dist.neg %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.exp %[[H]] : (tensor<2x?xf16>) -> tensor<2x?xf16>
  %2 = dist.exp %h : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: dist.log %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %3 = dist.log %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.sqrt %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %4 = dist.sqrt %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.reciprocal %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %5 = dist.reciprocal %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.floor %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %6 = dist.floor %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.ceil %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %7 = dist.ceil %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.round %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %8 = dist.round %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.sign %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %9 = dist.sign %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.sin %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %10 = dist.sin %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.cos %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %11 = dist.cos %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.tanh %[[H]] : (tensor<2x?xf16>) -> tensor<2x?xf16>
  %12 = dist.tanh %h : (tensor<2x?xf16>) -> tensor<2x?xf16>
  // CHECK: dist.sigmoid %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %13 = dist.sigmoid %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.relu %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %14 = dist.relu %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.leaky_relu %[[X]] {alpha = 2.000000e-01 : f32} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %15 = dist.leaky_relu %x {alpha = 0.2 : f32} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // The default alpha is not printed.
  // CHECK: dist.leaky_relu %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %16 = dist.leaky_relu %x {alpha = 0.01 : f32} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.elu %[[X]] {alpha = 5.000000e-01 : f32} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %17 = dist.elu %x {alpha = 0.5 : f32} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.selu %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %18 = dist.selu %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.selu %[[X]] {alpha = 1.500000e+00 : f32, gamma = 2.000000e+00 : f32}
  %19 = dist.selu %x {alpha = 1.5 : f32, gamma = 2.0 : f32} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.celu %[[X]] {alpha = 2.000000e+00 : f32} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %20 = dist.celu %x {alpha = 2.0 : f32} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.softplus %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %21 = dist.softplus %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.softsign %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %22 = dist.softsign %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.hard_sigmoid %[[X]] {alpha = 1.000000e-01 : f32, beta = 2.500000e-01 : f32}
  %23 = dist.hard_sigmoid %x {alpha = 0.1 : f32, beta = 0.25 : f32} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.hard_swish %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %24 = dist.hard_swish %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.erf %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %25 = dist.erf %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.gelu %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %26 = dist.gelu %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.gelu %[[X]] {approximate = "tanh"} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %27 = dist.gelu %x {approximate = "tanh"} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // CHECK: dist.identity %[[X]] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %28 = dist.identity %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  // A declared type may be more static than the inferred one.
  // CHECK: dist.exp %[[X]] : (tensor<?x16xf32>) -> tensor<8x16xf32>
  %29 = dist.exp %x : (tensor<?x16xf32>) -> tensor<8x16xf32>
  return
}

// CHECK-LABEL: func.func @unary_int_bool
// CHECK-SAME: (%[[I:.+]]: tensor<4xi32>, %[[U:.+]]: tensor<4xui8>, %[[B:.+]]: tensor<?x3xi1>)
func.func @unary_int_bool(%i: tensor<4xi32>, %u: tensor<4xui8>, %b: tensor<?x3xi1>) {
  // CHECK: dist.abs %[[I]] : (tensor<4xi32>) -> tensor<4xi32>
  %0 = dist.abs %i : (tensor<4xi32>) -> tensor<4xi32>
  // CHECK: dist.abs %[[U]] : (tensor<4xui8>) -> tensor<4xui8>
  %1 = dist.abs %u : (tensor<4xui8>) -> tensor<4xui8>
  // CHECK: dist.neg %[[I]] : (tensor<4xi32>) -> tensor<4xi32>
  %2 = dist.neg %i : (tensor<4xi32>) -> tensor<4xi32>
  // CHECK: dist.sign %[[U]] : (tensor<4xui8>) -> tensor<4xui8>
  %3 = dist.sign %u : (tensor<4xui8>) -> tensor<4xui8>
  // CHECK: dist.relu %[[I]] : (tensor<4xi32>) -> tensor<4xi32>
  %4 = dist.relu %i : (tensor<4xi32>) -> tensor<4xi32>
  // CHECK: dist.not %[[B]] : (tensor<?x3xi1>) -> tensor<?x3xi1>
  %5 = dist.not %b : (tensor<?x3xi1>) -> tensor<?x3xi1>
  // CHECK: dist.identity %[[B]] : (tensor<?x3xi1>) -> tensor<?x3xi1>
  %6 = dist.identity %b : (tensor<?x3xi1>) -> tensor<?x3xi1>
  // CHECK: dist.erf %[[I]] : (tensor<4xi32>) -> tensor<4xi32>
  %7 = dist.erf %i : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// CHECK-LABEL: func.func @clip_cast
// CHECK-SAME: (%[[X:.+]]: tensor<?x4xf32>, %[[LO:.+]]: tensor<f32>, %[[HI:.+]]: tensor<1xf32>, %[[T:.+]]: tensor<1xf16>)
func.func @clip_cast(%x: tensor<?x4xf32>, %lo: tensor<f32>, %hi: tensor<1xf32>, %t: tensor<1xf16>) {
  // CHECK: dist.clip %[[X]] min %[[LO]] max %[[HI]] : (tensor<?x4xf32>, tensor<f32>, tensor<1xf32>) -> tensor<?x4xf32>
  %0 = dist.clip %x min %lo max %hi : (tensor<?x4xf32>, tensor<f32>, tensor<1xf32>) -> tensor<?x4xf32>
  // CHECK: dist.clip %[[X]] min %[[LO]] : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x4xf32>
  %1 = dist.clip %x min %lo : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x4xf32>
  // CHECK: dist.clip %[[X]] max %[[HI]] : (tensor<?x4xf32>, tensor<1xf32>) -> tensor<?x4xf32>
  %2 = dist.clip %x max %hi : (tensor<?x4xf32>, tensor<1xf32>) -> tensor<?x4xf32>
  // CHECK: dist.clip %[[X]] : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %3 = dist.clip %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  // CHECK: dist.cast %[[X]] {to = i64} : (tensor<?x4xf32>) -> tensor<?x4xi64>
  %4 = dist.cast %x {to = i64} : (tensor<?x4xf32>) -> tensor<?x4xi64>
  // CHECK: dist.cast %[[X]] {to = i1} : (tensor<?x4xf32>) -> tensor<?x4xi1>
  %5 = dist.cast %x {to = i1} : (tensor<?x4xf32>) -> tensor<?x4xi1>
  // CHECK: dist.cast %[[X]] {to = bf16} : (tensor<?x4xf32>) -> tensor<?x4xbf16>
  %6 = dist.cast %x {to = bf16} : (tensor<?x4xf32>) -> tensor<?x4xbf16>
  // CHECK: dist.cast_like %[[X]], %[[T]] : (tensor<?x4xf32>, tensor<1xf16>) -> tensor<?x4xf16>
  %7 = dist.cast_like %x, %t : (tensor<?x4xf32>, tensor<1xf16>) -> tensor<?x4xf16>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise binary and variadic ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:.+]]: tensor<4x1xf32>, %[[B:.+]]: tensor<5xf32>, %[[D:.+]]: tensor<?x5xf32>, %[[I:.+]]: tensor<3xi64>, %[[E:.+]]: tensor<i64>)
func.func @binary(%a: tensor<4x1xf32>, %b: tensor<5xf32>, %d: tensor<?x5xf32>, %i: tensor<3xi64>, %e: tensor<i64>) {
  // CHECK: dist.add %[[A]], %[[B]] : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %0 = dist.add %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  // CHECK: dist.sub %[[D]], %[[B]] : (tensor<?x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
  %1 = dist.sub %d, %b : (tensor<?x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
  // CHECK: dist.mul %[[A]], %[[D]] : (tensor<4x1xf32>, tensor<?x5xf32>) -> tensor<4x5xf32>
  %2 = dist.mul %a, %d : (tensor<4x1xf32>, tensor<?x5xf32>) -> tensor<4x5xf32>
  // CHECK: dist.div %[[I]], %[[E]] : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %3 = dist.div %i, %e : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  // The exponent may have another element type than the base.
  // CHECK: dist.pow %[[B]], %[[E]] : (tensor<5xf32>, tensor<i64>) -> tensor<5xf32>
  %4 = dist.pow %b, %e : (tensor<5xf32>, tensor<i64>) -> tensor<5xf32>
  // CHECK: dist.mod %[[I]], %[[E]] : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %5 = dist.mod %i, %e : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  // CHECK: dist.mod %[[B]], %[[B]] {fmod = 1 : i64} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %6 = dist.mod %b, %b {fmod = 1 : i64} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  // The result may stay dynamic where inference knows the size.
  // CHECK: dist.add %[[A]], %[[B]] : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<?x?xf32>
  %7 = dist.add %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<?x?xf32>
  return
}

// CHECK-LABEL: func.func @compare_logic
// CHECK-SAME: (%[[A:.+]]: tensor<4x1xf32>, %[[B:.+]]: tensor<5xf32>, %[[P:.+]]: tensor<?x5xi1>, %[[Q:.+]]: tensor<5xi1>)
func.func @compare_logic(%a: tensor<4x1xf32>, %b: tensor<5xf32>, %p: tensor<?x5xi1>, %q: tensor<5xi1>) {
  // CHECK: dist.equal %[[A]], %[[B]] : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  %0 = dist.equal %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  // Equal also takes booleans.
  // CHECK: dist.equal %[[P]], %[[Q]] : (tensor<?x5xi1>, tensor<5xi1>) -> tensor<?x5xi1>
  %1 = dist.equal %p, %q : (tensor<?x5xi1>, tensor<5xi1>) -> tensor<?x5xi1>
  // CHECK: dist.less %[[A]], %[[B]] : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  %2 = dist.less %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  // CHECK: dist.greater %[[A]], %[[B]] : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  %3 = dist.greater %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  // CHECK: dist.less_or_equal %[[A]], %[[B]] : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  %4 = dist.less_or_equal %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  // CHECK: dist.greater_or_equal %[[A]], %[[B]] : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  %5 = dist.greater_or_equal %a, %b : (tensor<4x1xf32>, tensor<5xf32>) -> tensor<4x5xi1>
  // CHECK: dist.and %[[P]], %[[Q]] : (tensor<?x5xi1>, tensor<5xi1>) -> tensor<?x5xi1>
  %6 = dist.and %p, %q : (tensor<?x5xi1>, tensor<5xi1>) -> tensor<?x5xi1>
  // CHECK: dist.or %[[P]], %[[Q]] : (tensor<?x5xi1>, tensor<5xi1>) -> tensor<?x5xi1>
  %7 = dist.or %p, %q : (tensor<?x5xi1>, tensor<5xi1>) -> tensor<?x5xi1>
  // CHECK: dist.xor %[[P]], %[[Q]] : (tensor<?x5xi1>, tensor<5xi1>) -> tensor<?x5xi1>
  %8 = dist.xor %p, %q : (tensor<?x5xi1>, tensor<5xi1>) -> tensor<?x5xi1>
  return
}

// CHECK-LABEL: func.func @variadic_where_prelu
// CHECK-SAME: (%[[A:.+]]: tensor<3xf32>, %[[B:.+]]: tensor<?xf32>, %[[C:.+]]: tensor<1xf32>, %[[COND:.+]]: tensor<2x1xi1>, %[[X:.+]]: tensor<2x3xf32>, %[[Y:.+]]: tensor<f32>, %[[IN:.+]]: tensor<2x3x4xf32>, %[[SLOPE:.+]]: tensor<3x1xf32>)
func.func @variadic_where_prelu(%a: tensor<3xf32>, %b: tensor<?xf32>, %c: tensor<1xf32>,
                                %cond: tensor<2x1xi1>, %x: tensor<2x3xf32>, %y: tensor<f32>,
                                %in: tensor<2x3x4xf32>, %slope: tensor<3x1xf32>) {
  // CHECK: dist.max %[[A]], %[[B]], %[[C]] : (tensor<3xf32>, tensor<?xf32>, tensor<1xf32>) -> tensor<3xf32>
  %0 = dist.max %a, %b, %c : (tensor<3xf32>, tensor<?xf32>, tensor<1xf32>) -> tensor<3xf32>
  // CHECK: dist.min %[[A]], %[[C]] : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
  %1 = dist.min %a, %c : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
  // CHECK: dist.sum %[[B]] : (tensor<?xf32>) -> tensor<?xf32>
  %2 = dist.sum %b : (tensor<?xf32>) -> tensor<?xf32>
  // CHECK: dist.mean %[[A]], %[[A]], %[[A]], %[[C]] : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
  %3 = dist.mean %a, %a, %a, %c : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32>
  // CHECK: dist.where %[[COND]], %[[X]], %[[Y]] : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %4 = dist.where %cond, %x, %y : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK: dist.prelu %[[IN]], %[[SLOPE]] : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %5 = dist.prelu %in, %slope : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Linear algebra, convolution and pooling
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @linalg
// CHECK-SAME: (%[[X:.+]]: tensor<?x784xf32>, %[[W:.+]]: tensor<784x128xf32>, %[[V:.+]]: tensor<784xf32>, %[[BA:.+]]: tensor<8x1x4x16xf32>, %[[BB:.+]]: tensor<3x16x5xf32>, %[[WT:.+]]: tensor<128x784xf32>, %[[BIAS:.+]]: tensor<128xf32>)
func.func @linalg(%x: tensor<?x784xf32>, %w: tensor<784x128xf32>, %v: tensor<784xf32>,
                  %ba: tensor<8x1x4x16xf32>, %bb: tensor<3x16x5xf32>,
                  %wt: tensor<128x784xf32>, %bias: tensor<128xf32>) {
  // CHECK: dist.matmul %[[X]], %[[W]] : (tensor<?x784xf32>, tensor<784x128xf32>) -> tensor<?x128xf32>
  %0 = dist.matmul %x, %w : (tensor<?x784xf32>, tensor<784x128xf32>) -> tensor<?x128xf32>
  // Vector operands lose the promoted dimension.
  // CHECK: dist.matmul %[[V]], %[[W]] : (tensor<784xf32>, tensor<784x128xf32>) -> tensor<128xf32>
  %1 = dist.matmul %v, %w : (tensor<784xf32>, tensor<784x128xf32>) -> tensor<128xf32>
  // CHECK: dist.matmul %[[X]], %[[V]] : (tensor<?x784xf32>, tensor<784xf32>) -> tensor<?xf32>
  %2 = dist.matmul %x, %v : (tensor<?x784xf32>, tensor<784xf32>) -> tensor<?xf32>
  // Batch dimensions broadcast.
  // CHECK: dist.matmul %[[BA]], %[[BB]] : (tensor<8x1x4x16xf32>, tensor<3x16x5xf32>) -> tensor<8x3x4x5xf32>
  %3 = dist.matmul %ba, %bb : (tensor<8x1x4x16xf32>, tensor<3x16x5xf32>) -> tensor<8x3x4x5xf32>
  // CHECK: dist.gemm %[[X]], %[[WT]] bias %[[BIAS]] {trans_b = 1 : i64} : (tensor<?x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<?x128xf32>
  %4 = dist.gemm %x, %wt bias %bias {trans_b = 1 : i64} : (tensor<?x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<?x128xf32>
  // CHECK: dist.gemm %[[W]], %[[X]] {alpha = 5.000000e-01 : f32, beta = 0.000000e+00 : f32, trans_a = 1 : i64, trans_b = 1 : i64} : (tensor<784x128xf32>, tensor<?x784xf32>) -> tensor<128x?xf32>
  %5 = dist.gemm %w, %x {alpha = 0.5 : f32, beta = 0.0 : f32, trans_a = 1 : i64, trans_b = 1 : i64} : (tensor<784x128xf32>, tensor<?x784xf32>) -> tensor<128x?xf32>
  return
}

// CHECK-LABEL: func.func @conv
// CHECK-SAME: (%[[X:.+]]: tensor<?x3x32x32xf32>, %[[W:.+]]: tensor<16x3x3x3xf32>, %[[B:.+]]: tensor<16xf32>, %[[GW:.+]]: tensor<6x1x3x3xf32>, %[[X1:.+]]: tensor<2x4x?xf32>, %[[W1:.+]]: tensor<8x4x5xf32>, %[[TX:.+]]: tensor<1x1x3x3xf32>, %[[TW:.+]]: tensor<1x2x3x3xf32>)
func.func @conv(%x: tensor<?x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>,
                %gw: tensor<6x1x3x3xf32>, %x1: tensor<2x4x?xf32>, %w1: tensor<8x4x5xf32>,
                %tx: tensor<1x1x3x3xf32>, %tw: tensor<1x2x3x3xf32>) {
  // CHECK: dist.conv %[[X]], %[[W]] bias %[[B]] {pads = array<i64: 1, 1, 1, 1>} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x32x32xf32>
  %0 = dist.conv %x, %w bias %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x32x32xf32>
  // CHECK: dist.conv %[[X]], %[[W]] {dilations = array<i64: 2, 2>, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x14x14xf32>
  %1 = dist.conv %x, %w {dilations = array<i64: 2, 2>, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x14x14xf32>
  // CHECK: dist.conv %[[X]], %[[W]] {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x16x16xf32>
  %2 = dist.conv %x, %w {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x16x16xf32>
  // CHECK: dist.conv %[[X]], %[[GW]] {group = 3 : i64} : (tensor<?x3x32x32xf32>, tensor<6x1x3x3xf32>) -> tensor<?x6x30x30xf32>
  %3 = dist.conv %x, %gw {group = 3 : i64} : (tensor<?x3x32x32xf32>, tensor<6x1x3x3xf32>) -> tensor<?x6x30x30xf32>
  // CHECK: dist.conv %[[X1]], %[[W1]] {auto_pad = "VALID"} : (tensor<2x4x?xf32>, tensor<8x4x5xf32>) -> tensor<2x8x?xf32>
  %4 = dist.conv %x1, %w1 {auto_pad = "VALID"} : (tensor<2x4x?xf32>, tensor<8x4x5xf32>) -> tensor<2x8x?xf32>
  // CHECK: dist.conv_transpose %[[TX]], %[[TW]] {strides = array<i64: 2, 2>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x7x7xf32>
  %5 = dist.conv_transpose %tx, %tw {strides = array<i64: 2, 2>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x7x7xf32>
  // CHECK: dist.conv_transpose %[[TX]], %[[TW]] {output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %6 = dist.conv_transpose %tx, %tw {output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  // CHECK: dist.conv_transpose %[[TX]], %[[TW]] {output_shape = array<i64: 10, 8>, strides = array<i64: 3, 2>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x10x8xf32>
  %7 = dist.conv_transpose %tx, %tw {output_shape = array<i64: 10, 8>, strides = array<i64: 3, 2>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x10x8xf32>
  return
}

// CHECK-LABEL: func.func @pool
// CHECK-SAME: (%[[X:.+]]: tensor<1x3x32x32xf32>, %[[D:.+]]: tensor<?x64x7x7xf32>)
func.func @pool(%x: tensor<1x3x32x32xf32>, %d: tensor<?x64x7x7xf32>) {
  // CHECK: dist.max_pool %[[X]] {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x32x32xf32>) -> (tensor<1x3x16x16xf32>, tensor<1x3x16x16xi64>)
  %0, %1 = dist.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x32x32xf32>) -> (tensor<1x3x16x16xf32>, tensor<1x3x16x16xi64>)
  // 32 + 1 - 3 = 30, ceil(30 / 2) + 1 = 16.
  // CHECK: dist.max_pool %[[X]] {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 0, 0>, storage_order = 1 : i64, strides = array<i64: 2, 2>} : (tensor<1x3x32x32xf32>) -> (tensor<1x3x16x16xf32>, tensor<1x3x16x16xi64>)
  %2, %3 = dist.max_pool %x {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 0, 0>, storage_order = 1 : i64, strides = array<i64: 2, 2>} : (tensor<1x3x32x32xf32>) -> (tensor<1x3x16x16xf32>, tensor<1x3x16x16xi64>)
  // CHECK: dist.average_pool %[[X]] {kernel_shape = array<i64: 3, 3>} : (tensor<1x3x32x32xf32>) -> tensor<1x3x30x30xf32>
  %4 = dist.average_pool %x {kernel_shape = array<i64: 3, 3>} : (tensor<1x3x32x32xf32>) -> tensor<1x3x30x30xf32>
  // CHECK: dist.average_pool %[[D]] {auto_pad = "SAME_LOWER", count_include_pad = 1 : i64, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<?x64x7x7xf32>) -> tensor<?x64x4x4xf32>
  %5 = dist.average_pool %d {auto_pad = "SAME_LOWER", count_include_pad = 1 : i64, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<?x64x7x7xf32>) -> tensor<?x64x4x4xf32>
  // CHECK: dist.global_average_pool %[[D]] : (tensor<?x64x7x7xf32>) -> tensor<?x64x1x1xf32>
  %6 = dist.global_average_pool %d : (tensor<?x64x7x7xf32>) -> tensor<?x64x1x1xf32>
  // CHECK: dist.global_max_pool %[[X]] : (tensor<1x3x32x32xf32>) -> tensor<1x3x1x1xf32>
  %7 = dist.global_max_pool %x : (tensor<1x3x32x32xf32>) -> tensor<1x3x1x1xf32>
  return
}

//===----------------------------------------------------------------------===//
// Normalisation, dropout, softmax
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @norms
// CHECK-SAME: (%[[X:.+]]: tensor<?x16x8x8xf32>, %[[C:.+]]: tensor<16xf32>, %[[S:.+]]: tensor<?x8x64xf32>, %[[G:.+]]: tensor<64xf32>, %[[H:.+]]: tensor<2x8x64xf16>, %[[GH:.+]]: tensor<8x64xf16>)
func.func @norms(%x: tensor<?x16x8x8xf32>, %c: tensor<16xf32>, %s: tensor<?x8x64xf32>, %g: tensor<64xf32>,
                 %h: tensor<2x8x64xf16>, %gh: tensor<8x64xf16>) {
  // CHECK: dist.batch_norm %[[X]], %[[C]], %[[C]], %[[C]], %[[C]] : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
  %0:3 = dist.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
  // CHECK: dist.batch_norm %[[X]], %[[C]], %[[C]], %[[C]], %[[C]] {epsilon = 1.000000e-03 : f32, momentum = 9.900000e-01 : f32, training_mode = 1 : i64}
  %1:3 = dist.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-03 : f32, momentum = 0.99 : f32, training_mode = 1 : i64} : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
  // CHECK: dist.layer_norm %[[S]], %[[G]] bias %[[G]] : (tensor<?x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<?x8x64xf32>, tensor<?x8x1xf32>, tensor<?x8x1xf32>)
  %2:3 = dist.layer_norm %s, %g bias %g {axis = -1 : i64} : (tensor<?x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<?x8x64xf32>, tensor<?x8x1xf32>, tensor<?x8x1xf32>)
  // The statistics of an f16 input are kept in f32 (stash_type 1) or f16 (10).
  // CHECK: dist.layer_norm %[[H]], %[[GH]] {axis = 1 : i64, epsilon = 9.99999997E-7 : f32} : (tensor<2x8x64xf16>, tensor<8x64xf16>) -> (tensor<2x8x64xf16>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  %3:3 = dist.layer_norm %h, %gh {axis = 1 : i64, epsilon = 1.0e-06 : f32} : (tensor<2x8x64xf16>, tensor<8x64xf16>) -> (tensor<2x8x64xf16>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  // CHECK: dist.layer_norm %[[H]], %[[GH]] {axis = -2 : i64, stash_type = 10 : i64} : (tensor<2x8x64xf16>, tensor<8x64xf16>) -> (tensor<2x8x64xf16>, tensor<2x1x1xf16>, tensor<2x1x1xf16>)
  %4:3 = dist.layer_norm %h, %gh {axis = -2 : i64, stash_type = 10 : i64} : (tensor<2x8x64xf16>, tensor<8x64xf16>) -> (tensor<2x8x64xf16>, tensor<2x1x1xf16>, tensor<2x1x1xf16>)
  // CHECK: dist.instance_norm %[[X]], %[[C]], %[[C]] {epsilon = 1.000000e-03 : f32} : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
  %5 = dist.instance_norm %x, %c, %c {epsilon = 1.0e-03 : f32} : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
  return
}

// CHECK-LABEL: func.func @dropout_softmax
// CHECK-SAME: (%[[X:.+]]: tensor<?x10xf32>, %[[R:.+]]: tensor<f32>, %[[T:.+]]: tensor<i1>)
func.func @dropout_softmax(%x: tensor<?x10xf32>, %r: tensor<f32>, %t: tensor<i1>) {
  // CHECK: dist.dropout %[[X]] : (tensor<?x10xf32>) -> (tensor<?x10xf32>, tensor<?x10xi1>)
  %0:2 = dist.dropout %x : (tensor<?x10xf32>) -> (tensor<?x10xf32>, tensor<?x10xi1>)
  // CHECK: dist.dropout %[[X]] ratio %[[R]] training %[[T]] {seed = 42 : i64} : (tensor<?x10xf32>, tensor<f32>, tensor<i1>) -> (tensor<?x10xf32>, tensor<?x10xi1>)
  %1:2 = dist.dropout %x ratio %r training %t {seed = 42 : i64} : (tensor<?x10xf32>, tensor<f32>, tensor<i1>) -> (tensor<?x10xf32>, tensor<?x10xi1>)
  // CHECK: dist.dropout %[[X]] training %[[T]] : (tensor<?x10xf32>, tensor<i1>) -> (tensor<?x10xf32>, tensor<?x10xi1>)
  %2:2 = dist.dropout %x training %t : (tensor<?x10xf32>, tensor<i1>) -> (tensor<?x10xf32>, tensor<?x10xi1>)
  // CHECK: dist.softmax %[[X]] : (tensor<?x10xf32>) -> tensor<?x10xf32>
  %3 = dist.softmax %x {axis = -1 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
  // CHECK: dist.softmax %[[X]] {axis = 0 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
  %4 = dist.softmax %x {axis = 0 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
  // CHECK: dist.log_softmax %[[X]] {axis = 1 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
  %5 = dist.log_softmax %x {axis = 1 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
  return
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reductions
// CHECK-SAME: (%[[X:.+]]: tensor<?x10xf32>, %[[I:.+]]: tensor<4x5x6xi32>, %[[RT:.+]]: tensor<2xi64>)
func.func @reductions(%x: tensor<?x10xf32>, %i: tensor<4x5x6xi32>, %rt: tensor<2xi64>) {
  // CHECK: %[[AXIS1:.+]] = dist.constant dense<1> : tensor<1xi64>
  %axis1 = dist.constant dense<1> : tensor<1xi64>
  // CHECK: %[[AXES:.+]] = dist.constant dense<[0, -1]> : tensor<2xi64>
  %axes = dist.constant dense<[0, -1]> : tensor<2xi64>
  // CHECK: %[[NONE:.+]] = dist.constant dense<> : tensor<0xi64>
  %none = dist.constant dense<> : tensor<0xi64>
  // CHECK: dist.reduce_sum %[[X]] axes %[[AXIS1]] {keepdims = 0 : i64} : (tensor<?x10xf32>, tensor<1xi64>) -> tensor<?xf32>
  %0 = dist.reduce_sum %x axes %axis1 {keepdims = 0 : i64} : (tensor<?x10xf32>, tensor<1xi64>) -> tensor<?xf32>
  // CHECK: dist.reduce_mean %[[X]] axes %[[AXIS1]] : (tensor<?x10xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %1 = dist.reduce_mean %x axes %axis1 : (tensor<?x10xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  // Without axes every dimension is reduced.
  // CHECK: dist.reduce_max %[[X]] : (tensor<?x10xf32>) -> tensor<1x1xf32>
  %2 = dist.reduce_max %x : (tensor<?x10xf32>) -> tensor<1x1xf32>
  // CHECK: dist.reduce_min %[[I]] axes %[[AXES]] {keepdims = 0 : i64} : (tensor<4x5x6xi32>, tensor<2xi64>) -> tensor<5xi32>
  %3 = dist.reduce_min %i axes %axes {keepdims = 0 : i64} : (tensor<4x5x6xi32>, tensor<2xi64>) -> tensor<5xi32>
  // CHECK: dist.reduce_prod %[[I]] axes %[[NONE]] {noop_with_empty_axes = 1 : i64} : (tensor<4x5x6xi32>, tensor<0xi64>) -> tensor<4x5x6xi32>
  %4 = dist.reduce_prod %i axes %none {noop_with_empty_axes = 1 : i64} : (tensor<4x5x6xi32>, tensor<0xi64>) -> tensor<4x5x6xi32>
  // CHECK: dist.reduce_sum_square %[[I]] axes %[[NONE]] {keepdims = 0 : i64} : (tensor<4x5x6xi32>, tensor<0xi64>) -> tensor<i32>
  %5 = dist.reduce_sum_square %i axes %none {keepdims = 0 : i64} : (tensor<4x5x6xi32>, tensor<0xi64>) -> tensor<i32>
  // Axes known only at run time.
  // CHECK: dist.reduce_l2 %[[I]] axes %[[RT]] : (tensor<4x5x6xi32>, tensor<2xi64>) -> tensor<?x?x?xi32>
  %6 = dist.reduce_l2 %i axes %rt : (tensor<4x5x6xi32>, tensor<2xi64>) -> tensor<?x?x?xi32>
  // CHECK: dist.reduce_log_sum_exp %[[X]] axes %[[RT]] {keepdims = 0 : i64} : (tensor<?x10xf32>, tensor<2xi64>) -> tensor<f32>
  %7 = dist.reduce_log_sum_exp %x axes %rt {keepdims = 0 : i64} : (tensor<?x10xf32>, tensor<2xi64>) -> tensor<f32>
  // CHECK: dist.arg_max %[[X]] {axis = 1 : i64, keepdims = 0 : i64} : (tensor<?x10xf32>) -> tensor<?xi64>
  %8 = dist.arg_max %x {axis = 1 : i64, keepdims = 0 : i64} : (tensor<?x10xf32>) -> tensor<?xi64>
  // CHECK: dist.arg_min %[[I]] {axis = -1 : i64, select_last_index = 1 : i64} : (tensor<4x5x6xi32>) -> tensor<4x5x1xi64>
  %9 = dist.arg_min %i {axis = -1 : i64, select_last_index = 1 : i64} : (tensor<4x5x6xi32>) -> tensor<4x5x1xi64>
  return
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reshape_like
// CHECK-SAME: (%[[X:.+]]: tensor<?x4x4xf32>, %[[S:.+]]: tensor<3xi64>, %[[Y:.+]]: tensor<1x3x1xf32>)
func.func @reshape_like(%x: tensor<?x4x4xf32>, %s: tensor<3xi64>, %y: tensor<1x3x1xf32>) {
  // CHECK: %[[SHAPE:.+]] = dist.constant dense<[0, -1]> : tensor<2xi64>
  %shape = dist.constant dense<[0, -1]> : tensor<2xi64>
  // CHECK: dist.reshape %[[X]], %[[SHAPE]] : (tensor<?x4x4xf32>, tensor<2xi64>) -> tensor<?x16xf32>
  %0 = dist.reshape %x, %shape : (tensor<?x4x4xf32>, tensor<2xi64>) -> tensor<?x16xf32>
  // CHECK: dist.reshape %[[X]], %[[S]] {allowzero = 1 : i64} : (tensor<?x4x4xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %1 = dist.reshape %x, %s {allowzero = 1 : i64} : (tensor<?x4x4xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  // CHECK: dist.flatten %[[X]] : (tensor<?x4x4xf32>) -> tensor<?x16xf32>
  %2 = dist.flatten %x {axis = 1 : i64} : (tensor<?x4x4xf32>) -> tensor<?x16xf32>
  // CHECK: dist.flatten %[[X]] {axis = 0 : i64} : (tensor<?x4x4xf32>) -> tensor<1x?xf32>
  %3 = dist.flatten %x {axis = 0 : i64} : (tensor<?x4x4xf32>) -> tensor<1x?xf32>
  // CHECK: dist.transpose %[[X]] {perm = array<i64: 0, 2, 1>} : (tensor<?x4x4xf32>) -> tensor<?x4x4xf32>
  %4 = dist.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<?x4x4xf32>) -> tensor<?x4x4xf32>
  // Without perm the dimensions are reversed.
  // CHECK: dist.transpose %[[X]] : (tensor<?x4x4xf32>) -> tensor<4x4x?xf32>
  %5 = dist.transpose %x : (tensor<?x4x4xf32>) -> tensor<4x4x?xf32>
  // CHECK: %[[A0:.+]] = dist.constant dense<0> : tensor<1xi64>
  %a0 = dist.constant dense<0> : tensor<1xi64>
  // CHECK: dist.squeeze %[[Y]] axes %[[A0]] : (tensor<1x3x1xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  %6 = dist.squeeze %y axes %a0 : (tensor<1x3x1xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  // CHECK: dist.squeeze %[[Y]] : (tensor<1x3x1xf32>) -> tensor<3xf32>
  %7 = dist.squeeze %y : (tensor<1x3x1xf32>) -> tensor<3xf32>
  // CHECK: %[[AXES:.+]] = dist.constant dense<[0, -1]> : tensor<2xi64>
  %axes = dist.constant dense<[0, -1]> : tensor<2xi64>
  // CHECK: dist.unsqueeze %[[X]], %[[AXES]] : (tensor<?x4x4xf32>, tensor<2xi64>) -> tensor<1x?x4x4x1xf32>
  %8 = dist.unsqueeze %x, %axes : (tensor<?x4x4xf32>, tensor<2xi64>) -> tensor<1x?x4x4x1xf32>
  // A -1 entry whose size depends on a dynamic dimension is unknown, so any
  // declared size is compatible with it.
  // CHECK: %[[INFER:.+]] = dist.constant dense<[-1, 2]> : tensor<2xi64>
  %infer = dist.constant dense<[-1, 2]> : tensor<2xi64>
  // CHECK: dist.reshape %[[X]], %[[INFER]] : (tensor<?x4x4xf32>, tensor<2xi64>) -> tensor<?x2xf32>
  %9 = dist.reshape %x, %infer : (tensor<?x4x4xf32>, tensor<2xi64>) -> tensor<?x2xf32>
  // CHECK: dist.reshape %[[X]], %[[INFER]] : (tensor<?x4x4xf32>, tensor<2xi64>) -> tensor<8x2xf32>
  %10 = dist.reshape %x, %infer : (tensor<?x4x4xf32>, tensor<2xi64>) -> tensor<8x2xf32>
  return
}

// CHECK-LABEL: func.func @concat_split_slice
// CHECK-SAME: (%[[A:.+]]: tensor<1xi64>, %[[B:.+]]: tensor<?xi64>, %[[X:.+]]: tensor<?x6xf32>, %[[Y:.+]]: tensor<2x6xf32>, %[[Z:.+]]: tensor<?x10xf32>)
func.func @concat_split_slice(%a: tensor<1xi64>, %b: tensor<?xi64>, %x: tensor<?x6xf32>, %y: tensor<2x6xf32>, %z: tensor<?x10xf32>) {
  // CHECK: dist.concat %[[A]], %[[A]] {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %0 = dist.concat %a, %a {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  // CHECK: dist.concat %[[A]], %[[B]] {axis = 0 : i64} : (tensor<1xi64>, tensor<?xi64>) -> tensor<?xi64>
  %1 = dist.concat %a, %b {axis = 0 : i64} : (tensor<1xi64>, tensor<?xi64>) -> tensor<?xi64>
  // CHECK: dist.concat %[[X]], %[[Y]] {axis = -2 : i64} : (tensor<?x6xf32>, tensor<2x6xf32>) -> tensor<?x6xf32>
  %2 = dist.concat %x, %y {axis = -2 : i64} : (tensor<?x6xf32>, tensor<2x6xf32>) -> tensor<?x6xf32>
  // CHECK: dist.split %[[X]] {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<?x6xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>)
  %3:2 = dist.split %x {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<?x6xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>)
  // The last part is smaller.
  // CHECK: dist.split %[[Z]] {axis = 1 : i64, num_outputs = 4 : i64} : (tensor<?x10xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x1xf32>)
  %4:4 = dist.split %z {axis = 1 : i64, num_outputs = 4 : i64} : (tensor<?x10xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x3xf32>, tensor<?x1xf32>)
  // CHECK: %[[SIZES:.+]] = dist.constant dense<[1, 5]> : tensor<2xi64>
  %sizes = dist.constant dense<[1, 5]> : tensor<2xi64>
  // CHECK: dist.split %[[X]] sizes %[[SIZES]] {axis = -1 : i64, num_outputs = 2 : i64} : (tensor<?x6xf32>, tensor<2xi64>) -> (tensor<?x1xf32>, tensor<?x5xf32>)
  %5:2 = dist.split %x sizes %sizes {axis = -1 : i64, num_outputs = 2 : i64} : (tensor<?x6xf32>, tensor<2xi64>) -> (tensor<?x1xf32>, tensor<?x5xf32>)
  // CHECK: %[[START:.+]] = dist.constant dense<2> : tensor<1xi64>
  %start = dist.constant dense<2> : tensor<1xi64>
  // CHECK: %[[END:.+]] = dist.constant dense<7> : tensor<1xi64>
  %end = dist.constant dense<7> : tensor<1xi64>
  // CHECK: %[[AXIS:.+]] = dist.constant dense<1> : tensor<1xi64>
  %axis = dist.constant dense<1> : tensor<1xi64>
  // CHECK: %[[STEP:.+]] = dist.constant dense<2> : tensor<1xi32>
  %step = dist.constant dense<2> : tensor<1xi32>
  // CHECK: dist.slice %[[Z]], %[[START]], %[[END]] axes %[[AXIS]] : (tensor<?x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x5xf32>
  %6 = dist.slice %z, %start, %end axes %axis : (tensor<?x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x5xf32>
  // CHECK: dist.slice %[[Z]], %[[START]], %[[END]] axes %[[AXIS]] steps %[[STEP]] : (tensor<?x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi32>) -> tensor<?x3xf32>
  %7 = dist.slice %z, %start, %end axes %axis steps %step : (tensor<?x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi32>) -> tensor<?x3xf32>
  // Without axes the bounds apply to the leading dimensions.
  // CHECK: dist.slice %[[Y]], %[[START]], %[[END]] : (tensor<2x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<0x6xf32>
  %8 = dist.slice %y, %start, %end : (tensor<2x6xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<0x6xf32>
  // CHECK: dist.slice %[[Y]], %[[START]], %[[END]] steps %[[STEP]] : (tensor<2x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi32>) -> tensor<0x6xf32>
  %9 = dist.slice %y, %start, %end steps %step : (tensor<2x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi32>) -> tensor<0x6xf32>
  return
}

// CHECK-LABEL: func.func @gather_scatter
// CHECK-SAME: (%[[TABLE:.+]]: tensor<1000x64xf32>, %[[IDS:.+]]: tensor<?x8xi64>, %[[D:.+]]: tensor<3x3xf32>, %[[IDX:.+]]: tensor<3x2xi32>, %[[U:.+]]: tensor<3x2xf32>)
func.func @gather_scatter(%table: tensor<1000x64xf32>, %ids: tensor<?x8xi64>, %d: tensor<3x3xf32>,
                          %idx: tensor<3x2xi32>, %u: tensor<3x2xf32>) {
  // CHECK: dist.gather %[[TABLE]], %[[IDS]] {dist.ps_table = #dist.ps_table<rows = 1000, dim = 64, shards = 4>} : (tensor<1000x64xf32>, tensor<?x8xi64>) -> tensor<?x8x64xf32>
  %0 = dist.gather %table, %ids {axis = 0 : i64, dist.ps_table = #dist.ps_table<rows = 1000, dim = 64, shards = 4>} : (tensor<1000x64xf32>, tensor<?x8xi64>) -> tensor<?x8x64xf32>
  // CHECK: dist.gather %[[D]], %[[IDX]] {axis = 1 : i64} : (tensor<3x3xf32>, tensor<3x2xi32>) -> tensor<3x3x2xf32>
  %1 = dist.gather %d, %idx {axis = 1 : i64} : (tensor<3x3xf32>, tensor<3x2xi32>) -> tensor<3x3x2xf32>
  // CHECK: dist.gather_elements %[[D]], %[[IDX]] {axis = 1 : i64} : (tensor<3x3xf32>, tensor<3x2xi32>) -> tensor<3x2xf32>
  %2 = dist.gather_elements %d, %idx {axis = 1 : i64} : (tensor<3x3xf32>, tensor<3x2xi32>) -> tensor<3x2xf32>
  // CHECK: dist.scatter_elements %[[D]], %[[IDX]], %[[U]] {axis = 1 : i64} : (tensor<3x3xf32>, tensor<3x2xi32>, tensor<3x2xf32>) -> tensor<3x3xf32>
  %3 = dist.scatter_elements %d, %idx, %u {axis = 1 : i64} : (tensor<3x3xf32>, tensor<3x2xi32>, tensor<3x2xf32>) -> tensor<3x3xf32>
  // CHECK: dist.scatter_elements %[[D]], %[[IDX]], %[[U]] {axis = -1 : i64, reduction = "add"} : (tensor<3x3xf32>, tensor<3x2xi32>, tensor<3x2xf32>) -> tensor<3x3xf32>
  %4 = dist.scatter_elements %d, %idx, %u {axis = -1 : i64, reduction = "add"} : (tensor<3x3xf32>, tensor<3x2xi32>, tensor<3x2xf32>) -> tensor<3x3xf32>
  return
}

// ScatterND: tuples of one index pick rows (updates [2, 3]); tuples of
// two pick elements (updates [2]).
// CHECK-LABEL: func.func @scatter_nd
func.func @scatter_nd(%d: tensor<3x3xf32>, %rows: tensor<2x1xi64>, %u: tensor<2x3xf32>,
                      %pairs: tensor<2x2xi64>, %v: tensor<2xf32>) {
  // CHECK: dist.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  %0 = dist.scatter_nd %d, %rows, %u : (tensor<3x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  // CHECK: dist.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} {reduction = "mul"} : (tensor<3x3xf32>, tensor<2x2xi64>, tensor<2xf32>) -> tensor<3x3xf32>
  %1 = dist.scatter_nd %d, %pairs, %v {reduction = "mul"} : (tensor<3x3xf32>, tensor<2x2xi64>, tensor<2xf32>) -> tensor<3x3xf32>
  return
}

// CHECK-LABEL: func.func @expand_tile_pad
// CHECK-SAME: (%[[X:.+]]: tensor<3x1xf32>, %[[Y:.+]]: tensor<2x3xf32>, %[[V:.+]]: tensor<f32>, %[[RT:.+]]: tensor<4xi64>, %[[RT2:.+]]: tensor<2xi64>)
func.func @expand_tile_pad(%x: tensor<3x1xf32>, %y: tensor<2x3xf32>, %v: tensor<f32>, %rt: tensor<4xi64>, %rt2: tensor<2xi64>) {
  // CHECK: %[[SHAPE:.+]] = dist.constant dense<[2, 1, 4]> : tensor<3xi64>
  %shape = dist.constant dense<[2, 1, 4]> : tensor<3xi64>
  // CHECK: dist.expand %[[X]], %[[SHAPE]] : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %0 = dist.expand %x, %shape : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  // CHECK: %[[REPEATS:.+]] = dist.constant dense<[2, 1]> : tensor<2xi64>
  %repeats = dist.constant dense<[2, 1]> : tensor<2xi64>
  // CHECK: dist.tile %[[Y]], %[[REPEATS]] : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
  %1 = dist.tile %y, %repeats : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
  // CHECK: %[[PADS:.+]] = dist.constant dense<1> : tensor<4xi64>
  %pads = dist.constant dense<1> : tensor<4xi64>
  // CHECK: dist.pad %[[Y]], %[[PADS]] value %[[V]] : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  %2 = dist.pad %y, %pads value %v {mode = "constant"} : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  // CHECK: %[[PAXES:.+]] = dist.constant dense<-1> : tensor<1xi32>
  %paxes = dist.constant dense<-1> : tensor<1xi32>
  // CHECK: %[[P2:.+]] = dist.constant dense<[0, 2]> : tensor<2xi64>
  %p2 = dist.constant dense<[0, 2]> : tensor<2xi64>
  // CHECK: dist.pad %[[Y]], %[[P2]] axes %[[PAXES]] {mode = "reflect"} : (tensor<2x3xf32>, tensor<2xi64>, tensor<1xi32>) -> tensor<2x5xf32>
  %3 = dist.pad %y, %p2 axes %paxes {mode = "reflect"} : (tensor<2x3xf32>, tensor<2xi64>, tensor<1xi32>) -> tensor<2x5xf32>
  // Pads known only at run time.
  // CHECK: dist.pad %[[Y]], %[[RT2]] value %[[V]] axes %[[PAXES]] {mode = "edge"} : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>, tensor<1xi32>) -> tensor<2x?xf32>
  %4 = dist.pad %y, %rt2 value %v axes %paxes {mode = "edge"} : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>, tensor<1xi32>) -> tensor<2x?xf32>
  // CHECK: dist.pad %[[Y]], %[[RT]] {mode = "wrap"} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<?x?xf32>
  %5 = dist.pad %y, %rt {mode = "wrap"} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<?x?xf32>
  return
}

// CHECK-LABEL: func.func @shape_queries
// CHECK-SAME: (%[[X:.+]]: tensor<?x784xf32>, %[[U:.+]]: tensor<*xf32>)
func.func @shape_queries(%x: tensor<?x784xf32>, %u: tensor<*xf32>) {
  // CHECK: dist.shape %[[X]] : (tensor<?x784xf32>) -> tensor<2xi64>
  %0 = dist.shape %x : (tensor<?x784xf32>) -> tensor<2xi64>
  // CHECK: dist.shape %[[X]] {end = 1 : i64, start = -2 : i64} : (tensor<?x784xf32>) -> tensor<1xi64>
  %1 = dist.shape %x {start = -2 : i64, end = 1 : i64} : (tensor<?x784xf32>) -> tensor<1xi64>
  // CHECK: dist.shape %[[U]] : (tensor<*xf32>) -> tensor<?xi64>
  %2 = dist.shape %u : (tensor<*xf32>) -> tensor<?xi64>
  // CHECK: dist.size %[[X]] : (tensor<?x784xf32>) -> tensor<i64>
  %3 = dist.size %x : (tensor<?x784xf32>) -> tensor<i64>
  return
}

// CHECK-LABEL: func.func @range_topk_misc
// CHECK-SAME: (%[[S:.+]]: tensor<i64>, %[[L:.+]]: tensor<i64>, %[[D:.+]]: tensor<i64>, %[[X:.+]]: tensor<3x4xf32>, %[[M:.+]]: tensor<?x4x4xf32>, %[[I:.+]]: tensor<3xi64>, %[[V:.+]]: tensor<2xf32>)
func.func @range_topk_misc(%s: tensor<i64>, %l: tensor<i64>, %d: tensor<i64>, %x: tensor<3x4xf32>,
                           %m: tensor<?x4x4xf32>, %i: tensor<3xi64>, %v: tensor<2xf32>) {
  // CHECK: dist.range %[[S]], %[[L]], %[[D]] : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %0 = dist.range %s, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  // CHECK: %[[F0:.+]] = dist.constant dense<0.000000e+00> : tensor<f32>
  %f0 = dist.constant dense<0.0> : tensor<f32>
  // CHECK: %[[F1:.+]] = dist.constant dense<1.000000e+00> : tensor<f32>
  %f1 = dist.constant dense<1.0> : tensor<f32>
  // CHECK: %[[FD:.+]] = dist.constant dense<3.000000e-01> : tensor<f32>
  %fd = dist.constant dense<0.3> : tensor<f32>
  // CHECK: dist.range %[[F0]], %[[F1]], %[[FD]] : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  %1 = dist.range %f0, %f1, %fd : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  // CHECK: %[[K:.+]] = dist.constant dense<2> : tensor<1xi64>
  %k = dist.constant dense<2> : tensor<1xi64>
  // CHECK: dist.top_k %[[X]], %[[K]] : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %2:2 = dist.top_k %x, %k {axis = -1 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  // CHECK: dist.top_k %[[X]], %[[K]] {axis = 0 : i64, largest = 0 : i64, sorted = 0 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  %3:2 = dist.top_k %x, %k {axis = 0 : i64, largest = 0 : i64, sorted = 0 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  // CHECK: dist.trilu %[[M]] {upper = 0 : i64} : (tensor<?x4x4xf32>) -> tensor<?x4x4xf32>
  %4 = dist.trilu %m {upper = 0 : i64} : (tensor<?x4x4xf32>) -> tensor<?x4x4xf32>
  // CHECK: dist.trilu %[[M]] k %[[S]] : (tensor<?x4x4xf32>, tensor<i64>) -> tensor<?x4x4xf32>
  %5 = dist.trilu %m k %s : (tensor<?x4x4xf32>, tensor<i64>) -> tensor<?x4x4xf32>
  // CHECK: dist.cum_sum %[[M]], %[[S]] : (tensor<?x4x4xf32>, tensor<i64>) -> tensor<?x4x4xf32>
  %6 = dist.cum_sum %m, %s : (tensor<?x4x4xf32>, tensor<i64>) -> tensor<?x4x4xf32>
  // CHECK: %[[CA:.+]] = dist.constant dense<-1> : tensor<i32>
  %ca = dist.constant dense<-1> : tensor<i32>
  // CHECK: dist.cum_sum %[[M]], %[[CA]] {exclusive = 1 : i64, reverse = 1 : i64} : (tensor<?x4x4xf32>, tensor<i32>) -> tensor<?x4x4xf32>
  %7 = dist.cum_sum %m, %ca {exclusive = 1 : i64, reverse = 1 : i64} : (tensor<?x4x4xf32>, tensor<i32>) -> tensor<?x4x4xf32>
  // CHECK: %[[DEPTH:.+]] = dist.constant dense<10> : tensor<i64>
  %depth = dist.constant dense<10> : tensor<i64>
  // CHECK: dist.one_hot %[[I]], %[[DEPTH]], %[[V]] : (tensor<3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<3x10xf32>
  %8 = dist.one_hot %i, %depth, %v {axis = -1 : i64} : (tensor<3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<3x10xf32>
  // CHECK: dist.one_hot %[[I]], %[[D]], %[[V]] {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<?x3xf32>
  %9 = dist.one_hot %i, %d, %v {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<?x3xf32>
  return
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @losses
// CHECK-SAME: (%[[S:.+]]: tensor<?x10xf32>, %[[Y:.+]]: tensor<?xi64>, %[[W:.+]]: tensor<10xf32>, %[[S3:.+]]: tensor<2x10x5xf32>, %[[Y3:.+]]: tensor<2x5xi32>)
func.func @losses(%s: tensor<?x10xf32>, %y: tensor<?xi64>, %w: tensor<10xf32>,
                  %s3: tensor<2x10x5xf32>, %y3: tensor<2x5xi32>) {
  // CHECK: dist.softmax_cross_entropy_loss %[[S]], %[[Y]] : (tensor<?x10xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x10xf32>)
  %0:2 = dist.softmax_cross_entropy_loss %s, %y {reduction = "mean"} : (tensor<?x10xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<?x10xf32>)
  // CHECK: dist.softmax_cross_entropy_loss %[[S3]], %[[Y3]] weights %[[W]] {ignore_index = -100 : i64, reduction = "none"} : (tensor<2x10x5xf32>, tensor<2x5xi32>, tensor<10xf32>) -> (tensor<2x5xf32>, tensor<2x10x5xf32>)
  %1:2 = dist.softmax_cross_entropy_loss %s3, %y3 weights %w {ignore_index = -100 : i64, reduction = "none"} : (tensor<2x10x5xf32>, tensor<2x5xi32>, tensor<10xf32>) -> (tensor<2x5xf32>, tensor<2x10x5xf32>)
  // CHECK: dist.nll_loss %[[S]], %[[Y]] {reduction = "sum"} : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
  %2 = dist.nll_loss %s, %y {reduction = "sum"} : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
  // CHECK: dist.nll_loss %[[S3]], %[[Y3]] weight %[[W]] {ignore_index = 0 : i64, reduction = "none"} : (tensor<2x10x5xf32>, tensor<2x5xi32>, tensor<10xf32>) -> tensor<2x5xf32>
  %3 = dist.nll_loss %s3, %y3 weight %w {ignore_index = 0 : i64, reduction = "none"} : (tensor<2x10x5xf32>, tensor<2x5xi32>, tensor<10xf32>) -> tensor<2x5xf32>
  return
}

//===----------------------------------------------------------------------===//
// Distribution attributes
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @dist_attrs
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>, %[[W:.+]]: tensor<8x64x64xf32>)
func.func @dist_attrs(%x: tensor<?x64xf32>, %w: tensor<8x64x64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[R:.+]] = dist.relu %[[X]] {dist.placement = #dist.placement<gpu, group = 0>, dist.stage = #dist.stage<0 of 2>} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %r = dist.relu %x {dist.placement = #dist.placement<gpu, group = 0>, dist.stage = #dist.stage<0 of 2>} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  // The default group -1 (any) is not printed.
  // CHECK: dist.identity %[[R]] {dist.placement = #dist.placement<cpu>, dist.stage = #dist.stage<1 of 2>}
  %i = dist.identity %r {dist.placement = #dist.placement<cpu, group = -1>, dist.stage = #dist.stage<1 of 2>} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  // CHECK: dist.matmul %[[X]], %[[W]] {dist.expert_axis = #dist.expert_axis<dim = 0, experts = 8, mesh_axis = "ep">} : (tensor<?x64xf32>, tensor<8x64x64xf32>) -> tensor<8x?x64xf32>
  %m = dist.matmul %x, %w {dist.expert_axis = #dist.expert_axis<dim = 0, experts = 8, mesh_axis = "ep">} : (tensor<?x64xf32>, tensor<8x64x64xf32>) -> tensor<8x?x64xf32>
  return %i : tensor<?x64xf32>
}

// The mesh a module is compiled for and the plan it was given (module
// attributes in a compile; here on ops, for the round trip).
// CHECK-LABEL: func.func @mesh_and_plan
// CHECK: dist.identity %{{.*}} {dist.mesh = #dist.mesh<dp = 2, tp = 4>}
// CHECK: dist.identity %{{.*}} {dist.plan = #dist.plan<objective = step_time, search = exact, dp = 2, tp = 1, pp = 2, micro_batches = 4, recompute = false, global_batch = 64, training = true, step_s = 0.0125, throughput = 5120.0, cost_per_hour = 0.0, devices_used = 4, stages = [#dist.plan_stage<first_layer = 0, last_layer = 3, first_name = "/embed", last_name = "/h.1", device_type = "n/cpu", device_kind = cpu, units = 2, dp = 2, tp = 1, recompute = false, compute_s = 0.005, comm_s = 0.001, memory_bytes = 1048576.0, throughput = 5120.0>, #dist.plan_stage<first_layer = 4, last_layer = 7, first_name = "/h.2", last_name = "/head", device_type = "n/cpu", device_kind = cpu, units = 2, dp = 2, tp = 1, recompute = true, compute_s = 0.006, comm_s = 0.001, memory_bytes = 2097152.0, throughput = 6000.0>]>}
func.func @mesh_and_plan(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dist.identity %x {dist.mesh = #dist.mesh<dp = 2, tp = 4>} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = dist.identity %0 {dist.plan = #dist.plan<objective = step_time, search = exact, dp = 2, tp = 1, pp = 2, micro_batches = 4, recompute = false, global_batch = 64, training = true, step_s = 1.25e-02, throughput = 5120.0, cost_per_hour = 0.0, devices_used = 4, stages = [#dist.plan_stage<first_layer = 0, last_layer = 3, first_name = "/embed", last_name = "/h.1", device_type = "n/cpu", device_kind = cpu, units = 2, dp = 2, tp = 1, recompute = false, compute_s = 5.0e-03, comm_s = 1.0e-03, memory_bytes = 1048576.0, throughput = 5120.0>, #dist.plan_stage<first_layer = 4, last_layer = 7, first_name = "/h.2", last_name = "/head", device_type = "n/cpu", device_kind = cpu, units = 2, dp = 2, tp = 1, recompute = true, compute_s = 6.0e-03, comm_s = 1.0e-03, memory_bytes = 2097152.0, throughput = 6000.0>]>} : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

}

{-#
  dialect_resources: {
    builtin: {
      blob: "0x02000000003C00400042"
    }
  }
#-}

// String tensors (ONNX STRING) are cast and moved like any tensor.
// CHECK-LABEL: func.func @strings
// CHECK: dist.cast %{{.*}} {to = !dist.string} : (tensor<3xf32>) -> tensor<3x!dist.string>
// CHECK: dist.reshape %{{.*}} -> tensor<1x3x!dist.string>
func.func @strings(%x: tensor<3xf32>) -> tensor<1x3x!dist.string> {
  %s = dist.cast %x {to = !dist.string} : (tensor<3xf32>) -> tensor<3x!dist.string>
  %shape = dist.constant dense<[1, 3]> : tensor<2xi64>
  %r = dist.reshape %s, %shape : (tensor<3x!dist.string>, tensor<2xi64>) -> tensor<1x3x!dist.string>
  return %r : tensor<1x3x!dist.string>
}

// Sequences and optionals (ONNX seq/optional values) pass through identity.
// CHECK-LABEL: func.func @sequence_and_optional
// CHECK: dist.identity %{{.*}} : (!dist.sequence<tensor<?x4xf32>>) -> !dist.sequence<tensor<?x4xf32>>
// CHECK: dist.identity %{{.*}} : (!dist.optional<tensor<5xf32>>) -> !dist.optional<tensor<5xf32>>
func.func @sequence_and_optional(%s: !dist.sequence<tensor<?x4xf32>>, %o: !dist.optional<tensor<5xf32>>) -> (!dist.sequence<tensor<?x4xf32>>, !dist.optional<tensor<5xf32>>) {
  %0 = dist.identity %s : (!dist.sequence<tensor<?x4xf32>>) -> !dist.sequence<tensor<?x4xf32>>
  %1 = dist.identity %o : (!dist.optional<tensor<5xf32>>) -> !dist.optional<tensor<5xf32>>
  return %0, %1 : !dist.sequence<tensor<?x4xf32>>, !dist.optional<tensor<5xf32>>
}

// Transfers between pipeline stages.
// CHECK-LABEL: func.func @send_recv
// CHECK: %[[H:.+]] = dist.recv from 0 tag 3 : tensor<8x16xf32>
// CHECK: dist.send %[[H]] to 2 tag 4 : tensor<8x16xf32>
func.func @send_recv() attributes {dist.pipeline_action = {action = "forward", stage = 1 : i64}} {
  %h = dist.recv from 0 tag 3 : tensor<8x16xf32>
  dist.send %h to 2 tag 4 : tensor<8x16xf32>
  return
}
