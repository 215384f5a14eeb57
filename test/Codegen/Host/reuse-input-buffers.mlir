// RUN: dist-opt %s --split-input-file --dist-reuse-input-buffers | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-reuse-input-buffers --one-shot-bufferize | FileCheck %s --check-prefix=BUF
// RUN: dist-opt %s --split-input-file --dist-reuse-input-buffers=convs-only=true | FileCheck %s --check-prefix=ONLY

// dist-reuse-input-buffers gives an elementwise generic of two or more
// inputs of its result's type its earliest-made such input as its init,
// so that bufferization writes the result over that input's buffer when
// nothing reads it afterwards (a residual connection's Add).

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @residual_add(
// CHECK: %[[X:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: arith.negf
// CHECK: %[[C:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}} ins(%[[C]], %[[X]] : tensor<4x8xf32>, tensor<4x8xf32>) outs(%[[X]] : tensor<4x8xf32>)
// CHECK: arith.addf
// With convs-only (as dist-opt runs it), a function without a
// channels-last convolution keeps its inits.
// ONLY-LABEL: func.func @residual_add(
// ONLY: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// ONLY: arith.mulf
// ONLY: linalg.generic {{.*}} outs(%[[E]] : tensor<4x8xf32>)
// ONLY-NEXT: ^bb0
// ONLY-NEXT: arith.addf
// BUF-LABEL: func.func @residual_add(
// BUF: linalg.generic {{.*}} outs(%[[XB:[a-z0-9_]+]] : memref<4x8xf32>)
// BUF: arith.negf
// BUF: linalg.generic {{.*}} outs(%[[CB:[a-z0-9_]+]] : memref<4x8xf32>)
// BUF: arith.mulf
// BUF: linalg.generic {{.*}} ins(%[[CB]], %[[XB]] : memref<4x8xf32>, memref<4x8xf32>) outs(%[[XB]] : memref<4x8xf32>)
func.func @residual_add(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %x : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %o: f32):
    %s = arith.addf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// When the chosen input is read afterwards, bufferization writes the
// result into a fresh buffer and copies nothing (the body does not read
// its init).
// ONLY-LABEL: func.func @input_read_after(
// CHECK-LABEL: func.func @input_read_after(
// CHECK: %[[X:.*]] = linalg.generic
// CHECK: linalg.generic {{.*}} outs(%[[X]] : tensor<4x8xf32>)
// BUF-LABEL: func.func @input_read_after(
// BUF-NOT: memref.copy
// BUF: return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @input_read_after(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %o: f32):
    %s = arith.addf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r, %x : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Kept: one input of the result's type (the other broadcast), inputs that
// are only function arguments and constants, a body that reads its init,
// and a result inserted into a larger tensor.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @kept(
// CHECK-COUNT-5: outs(%[[E:[a-z0-9_]+]] : tensor<4x8xf32>)
// CHECK-NOT: outs(%[[E]]
// CHECK: return
func.func @kept(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %v: tensor<8xf32>, %big: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %cst = arith.constant dense<1.0> : tensor<4x8xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %bcast = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %v : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %o: f32):
    %s = arith.addf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %args = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b, %cst : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %in3: f32, %o: f32):
    %s = arith.addf %in, %in2 : f32
    %t = arith.addf %s, %in3 : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %reads = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %bcast : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %o: f32):
    %s = arith.addf %in, %in2 : f32
    %t = arith.addf %s, %o : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %reads : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %o: f32):
    %s = arith.addf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %ins = tensor.insert_slice %sum into %big[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<8x8xf32>
  return %bcast, %args, %reads, %ins : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>
}
