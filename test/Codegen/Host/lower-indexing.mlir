// RUN: dist-opt %s --dist-lower-to-linalg | FileCheck %s

// Gather reads the data with tensor.extract inside a generic over the result,
// the indices being a regular input.
// CHECK-LABEL: func.func @gather(
// CHECK-NOT: dist.
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}} : tensor<3x2xi32>)
// CHECK: arith.index_cast
// CHECK: tensor.extract %{{.*}} : tensor<3x4xf32>
// CHECK: linalg.yield
// CHECK-NOT: dist.
func.func @gather(%d: tensor<3x4xf32>, %i: tensor<3x2xi32>) -> tensor<3x3x2xf32> {
  %0 = dist.gather %d, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi32>) -> tensor<3x3x2xf32>
  return %0 : tensor<3x3x2xf32>
}

// CHECK-LABEL: func.func @gather_scalar_index
// CHECK: linalg.generic
// CHECK: tensor.extract
// CHECK-NOT: dist.
func.func @gather_scalar_index(%d: tensor<5x4xf32>, %i: tensor<i64>) -> tensor<4xf32> {
  %0 = dist.gather %d, %i {axis = 0 : i64} : (tensor<5x4xf32>, tensor<i64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// ScatterElements: a loop nest over the updates carrying the tensor.
// CHECK-LABEL: func.func @scatter_add
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tensor.extract
// CHECK: arith.addf
// CHECK: tensor.insert
// CHECK: scf.yield
// CHECK-NOT: dist.
func.func @scatter_add(%d: tensor<3x3xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>) -> tensor<3x3xf32> {
  %0 = dist.scatter_elements %d, %i, %u {axis = -1 : i64, reduction = "add"} : (tensor<3x3xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// ScatterND: a loop nest over the updates (the tuples, then the slice's
// positions) carrying the tensor; each element reads its tuple's indices
// and writes at them, combined with what is there for a reduction.
// CHECK-LABEL: func.func @scatter_nd_rows
// CHECK: scf.for %[[T:.*]] = {{.*}} iter_args(
// CHECK: scf.for %[[J:.*]] = {{.*}} iter_args(%[[ACC:.*]] = 
// CHECK: %[[IDX:.*]] = tensor.extract %{{.*}}[%[[T]], %{{.*}}] : tensor<2x1xi64>
// CHECK: call @dist_rt_index_error
// CHECK: %[[U:.*]] = tensor.extract %{{.*}}[%[[T]], %[[J]]]
// CHECK: %[[OLD:.*]] = tensor.extract %[[ACC]][%{{.*}}, %[[J]]]
// CHECK: %[[MAX:.*]] = arith.maximumf %[[OLD]], %[[U]]
// CHECK: tensor.insert %[[MAX]] into %[[ACC]][%{{.*}}, %[[J]]]
// CHECK: scf.yield
// CHECK-NOT: dist.
func.func @scatter_nd_rows(%d: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = dist.scatter_nd %d, %i, %u {reduction = "max"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @expand
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-NOT: dist.
func.func @expand(%x: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %s = dist.constant dense<[2, 1, 4]> : tensor<3xi64>
  %0 = dist.expand %x, %s : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @tile
// CHECK: linalg.generic
// CHECK: arith.remui
// CHECK: tensor.extract
// CHECK-NOT: dist.
func.func @tile(%x: tensor<2x3xf32>) -> tensor<4x6xf32> {
  %r = dist.constant dense<[2, 2]> : tensor<2xi64>
  %0 = dist.tile %x, %r : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// Constant padding becomes tensor.pad with the run-time pad value.
// CHECK-LABEL: func.func @pad_constant
// CHECK-SAME: %[[V:[^:]+]]: tensor<f32>
// CHECK: %[[S:.+]] = tensor.extract %[[V]][] : tensor<f32>
// CHECK: tensor.pad
// CHECK-SAME: low[1, 1] high[1, 1]
// CHECK: tensor.yield %[[S]]
// CHECK-NOT: dist.
func.func @pad_constant(%y: tensor<2x3xf32>, %v: tensor<f32>) -> tensor<4x5xf32> {
  %p = dist.constant dense<1> : tensor<4xi64>
  %0 = dist.pad %y, %p value %v {mode = "constant"} : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// Negative pads crop first.
// CHECK-LABEL: func.func @pad_crop
// CHECK: tensor.extract_slice %{{.*}}[0, 1] [2, 2] [1, 1]
// CHECK: tensor.pad
// CHECK-NOT: dist.
func.func @pad_crop(%y: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %axes = dist.constant dense<1> : tensor<1xi64>
  %p = dist.constant dense<[-1, 2]> : tensor<2xi64>
  %0 = dist.pad %y, %p axes %axes {mode = "constant"} : (tensor<2x3xf32>, tensor<2xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @pad_reflect
// CHECK: linalg.generic
// CHECK: arith.remsi
// CHECK: tensor.extract
// CHECK-NOT: dist.
func.func @pad_reflect(%y: tensor<2x3xf32>) -> tensor<2x5xf32> {
  %axes = dist.constant dense<-1> : tensor<1xi32>
  %p = dist.constant dense<[0, 2]> : tensor<2xi64>
  %0 = dist.pad %y, %p axes %axes {mode = "reflect"} : (tensor<2x3xf32>, tensor<2xi64>, tensor<1xi32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @constant_of_shape
// CHECK: tensor.extract
// CHECK: arith.index_cast
// CHECK: tensor.empty(%{{.*}}) : tensor<?x4xi64>
// CHECK: linalg.fill
// CHECK-NOT: dist.
func.func @constant_of_shape(%s: tensor<2xi64>) -> tensor<?x4xi64> {
  %0 = dist.constant_of_shape %s {value = dense<7> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<?x4xi64>
  return %0 : tensor<?x4xi64>
}

// CHECK-LABEL: func.func @range
// CHECK: arith.ceildivsi
// CHECK: linalg.generic
// CHECK: linalg.index 0
// CHECK-NOT: dist.
func.func @range(%s: tensor<i64>, %l: tensor<i64>, %d: tensor<i64>) -> tensor<?xi64> {
  %0 = dist.range %s, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// TopK: loops over the rows and an insertion into the best k.
// CHECK-LABEL: func.func @top_k
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.cmpf ogt
// CHECK: scf.if
// CHECK-NOT: dist.
func.func @top_k(%x: tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
  %k = dist.constant dense<2> : tensor<1xi64>
  %0:2 = dist.top_k %x, %k {axis = -1 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  return %0#0, %0#1 : tensor<3x2xf32>, tensor<3x2xi64>
}

// CHECK-LABEL: func.func @trilu
// CHECK: linalg.generic
// CHECK: linalg.index 1
// CHECK: linalg.index 2
// CHECK: arith.cmpi sle
// CHECK: arith.select
// CHECK-NOT: dist.
func.func @trilu(%m: tensor<?x4x4xf32>) -> tensor<?x4x4xf32> {
  %0 = dist.trilu %m {upper = 0 : i64} : (tensor<?x4x4xf32>) -> tensor<?x4x4xf32>
  return %0 : tensor<?x4x4xf32>
}

// CHECK-LABEL: func.func @cum_sum
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.addf
// CHECK-NOT: dist.
func.func @cum_sum(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = dist.constant dense<-1> : tensor<i32>
  %0 = dist.cum_sum %x, %a {exclusive = 1 : i64, reverse = 1 : i64} : (tensor<2x3xf32>, tensor<i32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @one_hot
// CHECK: linalg.generic
// CHECK: arith.cmpi eq
// CHECK: arith.select
// CHECK-NOT: dist.
func.func @one_hot(%i: tensor<3xi64>, %v: tensor<2xf32>) -> tensor<3x10xf32> {
  %depth = dist.constant dense<10> : tensor<i64>
  %0 = dist.one_hot %i, %depth, %v {axis = -1 : i64} : (tensor<3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<3x10xf32>
  return %0 : tensor<3x10xf32>
}

// CHECK-LABEL: func.func @nll_mean
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "reduction"]
// CHECK: arith.divf
// CHECK: tensor.from_elements
// CHECK-NOT: dist.
func.func @nll_mean(%x: tensor<2x10x5xf32>, %t: tensor<2x5xi32>, %w: tensor<10xf32>) -> tensor<f32> {
  %0 = dist.nll_loss %x, %t weight %w {ignore_index = 0 : i64, reduction = "mean"} : (tensor<2x10x5xf32>, tensor<2x5xi32>, tensor<10xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @sce_none
// CHECK: math.exp
// CHECK: math.log
// CHECK: linalg.generic
// CHECK: arith.negf
// CHECK-NOT: dist.
func.func @sce_none(%s: tensor<?x10xf32>, %y: tensor<?xi64>) -> (tensor<?xf32>, tensor<?x10xf32>) {
  %0:2 = dist.softmax_cross_entropy_loss %s, %y {reduction = "none"} : (tensor<?x10xf32>, tensor<?xi64>) -> (tensor<?xf32>, tensor<?x10xf32>)
  return %0#0, %0#1 : tensor<?xf32>, tensor<?x10xf32>
}
