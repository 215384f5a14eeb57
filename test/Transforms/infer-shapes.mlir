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
