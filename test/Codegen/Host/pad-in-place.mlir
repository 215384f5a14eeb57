// RUN: dist-opt %s --split-input-file --dist-fuse-elementwise | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-fuse-elementwise \
// RUN:   --eliminate-empty-tensors \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" --cse \
// RUN:   --canonicalize | FileCheck %s --check-prefix=BUF

// A zero pad becomes a fill of the padded tensor and an insert of its
// operand; once bufferized, the operand's producer (here a ReLU) writes
// straight into the interior of the padded buffer: no padded copy.

// CHECK-LABEL: func.func @relu_then_pad(
// CHECK-NOT: tensor.pad
// CHECK: %[[RELU:.*]] = linalg.generic
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK: tensor.insert_slice %[[RELU]] into %[[FILL]][0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 1, 1]

// BUF-LABEL: func.func @relu_then_pad(
// BUF: %[[PADDED:.*]] = memref.alloc() {{.*}} : memref<2x3x6x6xf32>
// BUF: linalg.fill {{.*}} outs(%[[PADDED]] :
// BUF: %[[INNER:.*]] = memref.subview %[[PADDED]][0, 0, 1, 1] [2, 3, 4, 4] [1, 1, 1, 1]
// BUF: linalg.generic {{.*}} ins(%{{.*}} : memref<2x3x4x4xf32{{.*}}>) outs(%[[INNER]] :
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @relu_then_pad(%x: tensor<2x3x4x4xf32>) -> tensor<2x3x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x3x4x4xf32>) outs(%e : tensor<2x3x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x3x4x4xf32>
  %p = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x3x4x4xf32> to tensor<2x3x6x6xf32>
  return %p : tensor<2x3x6x6xf32>
}

// -----

// Two products start from the same zero fill (as CSE leaves them): each
// gets a fill of its own, so neither copies the other's zeros.

// CHECK-LABEL: func.func @shared_fill(
// CHECK: %[[FA:.*]] = linalg.fill
// CHECK: %[[FB:.*]] = linalg.fill
// CHECK-DAG: linalg.matmul {{.*}} outs(%[[FA]] :
// CHECK-DAG: linalg.matmul {{.*}} outs(%[[FB]] :

// BUF-LABEL: func.func @shared_fill(
// BUF-NOT: memref.copy
// BUF: return
func.func @shared_fill(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p1 = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p2 = linalg.matmul ins(%b, %a : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %p1, %p2 : tensor<8x8xf32>, tensor<8x8xf32>
}
