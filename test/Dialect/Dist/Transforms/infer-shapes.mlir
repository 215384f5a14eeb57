// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(dist-infer-shapes))' | FileCheck %s

// Types left dynamic by a producer are refined once the operands are known,
// and the function signature follows.
// CHECK-LABEL: func.func @refine
// CHECK-SAME: -> tensor<4x16xf32>
func.func @refine(%x: tensor<4x4x4xf32>) -> tensor<?x?xf32> {
  %s = dist.constant dense<[4, 16]> : tensor<2xi64>
  // CHECK: dist.reshape {{.*}} -> tensor<4x16xf32>
  %r = dist.reshape %x, %s : (tensor<4x4x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  // CHECK: dist.relu {{.*}} -> tensor<4x16xf32>
  %y = dist.relu %r : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @unranked
// CHECK: dist.add {{.*}} -> tensor<2x3xf32>
func.func @unranked(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<*xf32> {
  %0 = dist.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// Split sizes known only at run time leave the parts' extents dynamic,
// except when the dimension is empty: sizes are not negative, so every part
// is empty too (ONNX's test_split_zero_size_splits).
// CHECK-LABEL: func.func @split_runtime_sizes
// CHECK: dist.split {{.*}} -> (tensor<2x?xf32>, tensor<2x?xf32>)
// CHECK: dist.split {{.*}} -> (tensor<0xf32>, tensor<0xf32>, tensor<0xf32>)
func.func @split_runtime_sizes(%x: tensor<2x6xf32>, %s: tensor<2xi64>,
                               %e: tensor<0xf32>, %t: tensor<3xi64>) {
  %0:2 = dist.split %x sizes %s {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> (tensor<*xf32>, tensor<*xf32>)
  %1:3 = dist.split %e sizes %t {axis = 0 : i64, num_outputs = 3 : i64} : (tensor<0xf32>, tensor<3xi64>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return
}
