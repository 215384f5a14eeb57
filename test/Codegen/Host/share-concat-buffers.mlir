// RUN: dist-opt %s --split-input-file --dist-share-concat-buffers | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-share-concat-buffers --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// A dense block of three layers: each layer reads the concatenation of
// all the features before it (channels last) and adds 2 channels. The
// longest concatenation is built once, from one empty tensor, each piece
// inserted right after it is made; the shorter ones are its leading
// channels. Once bufferized, one buffer holds them all and each piece is
// copied into it once.
#id = affine_map<(d0, d1) -> (d0, d1)>
#sum = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @dense_block(
// CHECK-SAME: %[[X0:.*]]: tensor<4x3xf32>
// CHECK: %[[X1:.*]] = linalg.generic
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x9xf32>
// CHECK-NOT: tensor.empty() : tensor<4x
// CHECK: %[[S0:.*]] = tensor.insert_slice %[[X0]] into %[[E]][0, 0] [4, 3] [1, 1]
// CHECK: %[[S1:.*]] = tensor.insert_slice %[[X1]] into %[[S0]][0, 3] [4, 2] [1, 1]
// CHECK: %[[C1:.*]] = tensor.extract_slice %[[S1]][0, 0] [4, 5] [1, 1] : tensor<4x9xf32> to tensor<4x5xf32>
// CHECK: %[[X2:.*]] = linalg.generic {{.*}} ins(%[[C1]] : tensor<4x5xf32>)
// CHECK: %[[S2:.*]] = tensor.insert_slice %[[X2]] into %[[S1]][0, 5] [4, 2] [1, 1]
// CHECK: %[[C2:.*]] = tensor.extract_slice %[[S2]][0, 0] [4, 7] [1, 1] : tensor<4x9xf32> to tensor<4x7xf32>
// CHECK: %[[X3:.*]] = linalg.generic {{.*}} ins(%[[C2]] : tensor<4x7xf32>)
// CHECK: %[[S3:.*]] = tensor.insert_slice %[[X3]] into %[[S2]][0, 7] [4, 2] [1, 1]
// CHECK-NOT: tensor.insert_slice
// CHECK: return %[[S3]]
// BUF-LABEL: func.func @dense_block(
// BUF: %[[B:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x9xf32>
// BUF-NOT: memref.alloc() {{.*}} : memref<4x5xf32>
// BUF-NOT: memref.alloc() {{.*}} : memref<4x7xf32>
// BUF-COUNT-4: memref.copy
// BUF-NOT: memref.copy
// BUF: return %[[B]]
func.func @dense_block(%x0: tensor<4x3xf32>) -> tensor<4x9xf32> {
  %e2 = tensor.empty() : tensor<4x2xf32>
  %x1 = linalg.generic {indexing_maps = [#sum, #id], iterator_types = ["parallel", "parallel"]} ins(%x0 : tensor<4x3xf32>) outs(%e2 : tensor<4x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x2xf32>
  %e5 = tensor.empty() : tensor<4x5xf32>
  %a0 = tensor.insert_slice %x0 into %e5[0, 0] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x5xf32>
  %c1 = tensor.insert_slice %x1 into %a0[0, 3] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x5xf32>
  %x2 = linalg.generic {indexing_maps = [#sum, #id], iterator_types = ["parallel", "parallel"]} ins(%c1 : tensor<4x5xf32>) outs(%e2 : tensor<4x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x2xf32>
  %e7 = tensor.empty() : tensor<4x7xf32>
  %b0 = tensor.insert_slice %x0 into %e7[0, 0] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x7xf32>
  %b1 = tensor.insert_slice %x1 into %b0[0, 3] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x7xf32>
  %c2 = tensor.insert_slice %x2 into %b1[0, 5] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x7xf32>
  %x3 = linalg.generic {indexing_maps = [#sum, #id], iterator_types = ["parallel", "parallel"]} ins(%c2 : tensor<4x7xf32>) outs(%e2 : tensor<4x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x2xf32>
  %e9 = tensor.empty() : tensor<4x9xf32>
  %d0 = tensor.insert_slice %x0 into %e9[0, 0] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x9xf32>
  %d1 = tensor.insert_slice %x1 into %d0[0, 3] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x9xf32>
  %d2 = tensor.insert_slice %x2 into %d1[0, 5] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x9xf32>
  %c3 = tensor.insert_slice %x3 into %d2[0, 7] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x9xf32>
  return %c3 : tensor<4x9xf32>
}

// -----

// Concatenations whose pieces are not the first of another's (another
// order, another dim, a piece left out) stay as they are.
// CHECK-LABEL: func.func @unrelated(
// CHECK-COUNT-3: tensor.empty()
// CHECK-NOT: tensor.extract_slice
// CHECK: return
func.func @unrelated(%a: tensor<4x3xf32>, %b: tensor<4x2xf32>, %c: tensor<4x2xf32>) -> (tensor<4x5xf32>, tensor<4x7xf32>, tensor<4x7xf32>) {
  %e5 = tensor.empty() : tensor<4x5xf32>
  %a0 = tensor.insert_slice %a into %e5[0, 0] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x5xf32>
  %ab = tensor.insert_slice %b into %a0[0, 3] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x5xf32>
  %e7 = tensor.empty() : tensor<4x7xf32>
  %b0 = tensor.insert_slice %a into %e7[0, 0] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x7xf32>
  %b1 = tensor.insert_slice %c into %b0[0, 3] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x7xf32>
  %acb = tensor.insert_slice %b into %b1[0, 5] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x7xf32>
  %e7b = tensor.empty() : tensor<4x7xf32>
  %c0 = tensor.insert_slice %c into %e7b[0, 0] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x7xf32>
  %c1 = tensor.insert_slice %a into %c0[0, 2] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x7xf32>
  %cab = tensor.insert_slice %b into %c1[0, 5] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x7xf32>
  return %ab, %acb, %cab : tensor<4x5xf32>, tensor<4x7xf32>, tensor<4x7xf32>
}
