// RUN: dist-opt %s --split-input-file --dist-fill-borders | FileCheck %s

// A zero-padded NCHW buffer whose interior a ReLU then writes whole: the
// fill becomes fills of the top and bottom rows and of the left and right
// columns of the rows between; the interior is written once.
// CHECK-LABEL: func.func @padded_relu(
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<1x2x6x7xf32>
// CHECK-NOT: linalg.fill {{.*}} outs(%[[BUF]] :
// CHECK: %[[TOP:.*]] = memref.subview %[[BUF]][0, 0, 0, 0] [1, 2, 1, 7] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[TOP]] :
// CHECK: %[[BOTTOM:.*]] = memref.subview %[[BUF]][0, 0, 5, 0] [1, 2, 1, 7] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[BOTTOM]] :
// CHECK: %[[LEFT:.*]] = memref.subview %[[BUF]][0, 0, 1, 0] [1, 2, 4, 1] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[LEFT]] :
// CHECK: %[[RIGHT:.*]] = memref.subview %[[BUF]][0, 0, 1, 6] [1, 2, 4, 1] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[RIGHT]] :
// CHECK-NOT: linalg.fill
// CHECK: memref.subview %[[BUF]][0, 0, 1, 1] [1, 2, 4, 5] [1, 1, 1, 1]
// CHECK: linalg.generic
#id = affine_map<(n, c, h, w) -> (n, c, h, w)>
func.func @padded_relu(%x: memref<1x2x4x5xf32>, %o: memref<1x2x6x7xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %buf = memref.alloc() : memref<1x2x6x7xf32>
  linalg.fill ins(%zero : f32) outs(%buf : memref<1x2x6x7xf32>)
  %in = memref.subview %buf[0, 0, 1, 1] [1, 2, 4, 5] [1, 1, 1, 1] : memref<1x2x6x7xf32> to memref<1x2x4x5xf32, strided<[84, 42, 7, 1], offset: 8>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x2x4x5xf32>) outs(%in : memref<1x2x4x5xf32, strided<[84, 42, 7, 1], offset: 8>>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %buf, %o : memref<1x2x6x7xf32> to memref<1x2x6x7xf32>
  return
}

// -----

// A copy into the interior (a model input padded), a pad only at the end
// of the rows and columns: the two high slabs.
// CHECK-LABEL: func.func @copied_high_pad(
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<2x3x5x5xf32>
// CHECK: %[[BOTTOM:.*]] = memref.subview %[[BUF]][0, 0, 4, 0] [2, 3, 1, 5] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[BOTTOM]] :
// CHECK: %[[RIGHT:.*]] = memref.subview %[[BUF]][0, 0, 0, 4] [2, 3, 4, 1] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[RIGHT]] :
// CHECK-NOT: linalg.fill
// CHECK: memref.copy
func.func @copied_high_pad(%x: memref<2x3x4x4xf32>, %o: memref<2x3x5x5xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %buf = memref.alloc() : memref<2x3x5x5xf32>
  linalg.fill ins(%zero : f32) outs(%buf : memref<2x3x5x5xf32>)
  %in = memref.subview %buf[0, 0, 0, 0] [2, 3, 4, 4] [1, 1, 1, 1] : memref<2x3x5x5xf32> to memref<2x3x4x4xf32, strided<[75, 25, 5, 1]>>
  memref.copy %x, %in : memref<2x3x4x4xf32> to memref<2x3x4x4xf32, strided<[75, 25, 5, 1]>>
  memref.copy %buf, %o : memref<2x3x5x5xf32> to memref<2x3x5x5xf32>
  return
}

// -----

// A transpose into the interior (a model's NCHW input image made
// channels-last for a stem whose padding is low only): the two low slabs.
// CHECK-LABEL: func.func @transposed_low_pad(
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<1x5x5x3xf32>
// CHECK: %[[TOP:.*]] = memref.subview %[[BUF]][0, 0, 0, 0] [1, 1, 5, 3] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[TOP]] :
// CHECK: %[[LEFT:.*]] = memref.subview %[[BUF]][0, 1, 0, 0] [1, 4, 1, 3] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[LEFT]] :
// CHECK-NOT: linalg.fill
// CHECK: linalg.transpose
func.func @transposed_low_pad(%x: memref<1x3x4x4xf32>, %o: memref<1x5x5x3xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %buf = memref.alloc() : memref<1x5x5x3xf32>
  linalg.fill ins(%zero : f32) outs(%buf : memref<1x5x5x3xf32>)
  %in = memref.subview %buf[0, 1, 1, 0] [1, 4, 4, 3] [1, 1, 1, 1] : memref<1x5x5x3xf32> to memref<1x4x4x3xf32, strided<[75, 15, 3, 1], offset: 18>>
  linalg.transpose ins(%x : memref<1x3x4x4xf32>) outs(%in : memref<1x4x4x3xf32, strided<[75, 15, 3, 1], offset: 18>>) permutation = [0, 2, 3, 1]
  memref.copy %buf, %o : memref<1x5x5x3xf32> to memref<1x5x5x3xf32>
  return
}

// -----

// The whole fill stays when the interior's writer reads its old value (an
// accumulation), when the buffer is read between the fill and the write,
// when the interior is written through a strided view, and when the buffer
// is an argument (anything may alias it).
// CHECK-LABEL: func.func @accumulating(
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : memref<1x2x6x6xf32>)
// CHECK-LABEL: func.func @read_between(
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : memref<1x2x6x6xf32>)
// CHECK-LABEL: func.func @strided_interior(
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : memref<1x2x6x6xf32>)
// CHECK-LABEL: func.func @argument(
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : memref<1x2x6x6xf32>)
#id = affine_map<(n, c, h, w) -> (n, c, h, w)>
func.func @accumulating(%x: memref<1x2x4x4xf32>, %o: memref<1x2x6x6xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %buf = memref.alloc() : memref<1x2x6x6xf32>
  linalg.fill ins(%zero : f32) outs(%buf : memref<1x2x6x6xf32>)
  %in = memref.subview %buf[0, 0, 1, 1] [1, 2, 4, 4] [1, 1, 1, 1] : memref<1x2x6x6xf32> to memref<1x2x4x4xf32, strided<[72, 36, 6, 1], offset: 7>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x2x4x4xf32>) outs(%in : memref<1x2x4x4xf32, strided<[72, 36, 6, 1], offset: 7>>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  }
  memref.copy %buf, %o : memref<1x2x6x6xf32> to memref<1x2x6x6xf32>
  return
}
func.func @read_between(%x: memref<1x2x4x4xf32>, %o: memref<1x2x6x6xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %buf = memref.alloc() : memref<1x2x6x6xf32>
  linalg.fill ins(%zero : f32) outs(%buf : memref<1x2x6x6xf32>)
  memref.copy %buf, %o : memref<1x2x6x6xf32> to memref<1x2x6x6xf32>
  %in = memref.subview %buf[0, 0, 1, 1] [1, 2, 4, 4] [1, 1, 1, 1] : memref<1x2x6x6xf32> to memref<1x2x4x4xf32, strided<[72, 36, 6, 1], offset: 7>>
  memref.copy %x, %in : memref<1x2x4x4xf32> to memref<1x2x4x4xf32, strided<[72, 36, 6, 1], offset: 7>>
  return
}
func.func @strided_interior(%x: memref<1x2x2x2xf32>, %o: memref<1x2x6x6xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %buf = memref.alloc() : memref<1x2x6x6xf32>
  linalg.fill ins(%zero : f32) outs(%buf : memref<1x2x6x6xf32>)
  %in = memref.subview %buf[0, 0, 1, 1] [1, 2, 2, 2] [1, 1, 2, 2] : memref<1x2x6x6xf32> to memref<1x2x2x2xf32, strided<[72, 36, 12, 2], offset: 7>>
  memref.copy %x, %in : memref<1x2x2x2xf32> to memref<1x2x2x2xf32, strided<[72, 36, 12, 2], offset: 7>>
  memref.copy %buf, %o : memref<1x2x6x6xf32> to memref<1x2x6x6xf32>
  return
}
func.func @argument(%x: memref<1x2x4x4xf32>, %buf: memref<1x2x6x6xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%zero : f32) outs(%buf : memref<1x2x6x6xf32>)
  %in = memref.subview %buf[0, 0, 1, 1] [1, 2, 4, 4] [1, 1, 1, 1] : memref<1x2x6x6xf32> to memref<1x2x4x4xf32, strided<[72, 36, 6, 1], offset: 7>>
  memref.copy %x, %in : memref<1x2x4x4xf32> to memref<1x2x4x4xf32, strided<[72, 36, 6, 1], offset: 7>>
  return
}

// -----

// A rank-reducing interior view (the batch dim dropped): the slabs are
// still cut in the buffer's rank, from the view's offsets and sizes.
// CHECK-LABEL: func.func @rank_reducing_view(
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<1x2x4x4xf32>
// CHECK: memref.subview %[[BUF]][0, 0, 0, 0] [1, 2, 1, 4] [1, 1, 1, 1]
// CHECK: memref.subview %[[BUF]][0, 0, 3, 0] [1, 2, 1, 4] [1, 1, 1, 1]
// CHECK: memref.subview %[[BUF]][0, 0, 1, 0] [1, 2, 2, 1] [1, 1, 1, 1]
// CHECK: memref.subview %[[BUF]][0, 0, 1, 3] [1, 2, 2, 1] [1, 1, 1, 1]
// CHECK-NOT: linalg.fill {{.*}} outs(%[[BUF]] :
// CHECK: memref.copy
func.func @rank_reducing_view(%x: memref<2x2x2xf32>, %o: memref<1x2x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %buf = memref.alloc() : memref<1x2x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%buf : memref<1x2x4x4xf32>)
  %in = memref.subview %buf[0, 0, 1, 1] [1, 2, 2, 2] [1, 1, 1, 1] : memref<1x2x4x4xf32> to memref<2x2x2xf32, strided<[16, 4, 1], offset: 5>>
  memref.copy %x, %in : memref<2x2x2xf32> to memref<2x2x2xf32, strided<[16, 4, 1], offset: 5>>
  memref.copy %buf, %o : memref<1x2x4x4xf32> to memref<1x2x4x4xf32>
  return
}

// -----

// A dynamic batch: the padded buffer holds %n images, the interior all %n
// of them. The slabs span the %n images too (the batch dimension lies
// whole in the interior: no slab along it). Left alone: an interior of %m
// images (another size), one from image 1 on, and one of 1 image (a static
// size), which leave images of the buffer unwritten.
// CHECK-LABEL: func.func @dynamic_batch(
// CHECK-SAME: %[[N:[^:]*]]: index
// CHECK: %[[BUF:.*]] = memref.alloc(%[[N]]) : memref<?x2x6x7xf32>
// CHECK-NOT: linalg.fill {{.*}} outs(%[[BUF]] :
// CHECK: %[[TOP:.*]] = memref.subview %[[BUF]][0, 0, 0, 0] [%[[N]], 2, 1, 7] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[TOP]] :
// CHECK: %[[BOTTOM:.*]] = memref.subview %[[BUF]][0, 0, 5, 0] [%[[N]], 2, 1, 7] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[BOTTOM]] :
// CHECK: %[[LEFT:.*]] = memref.subview %[[BUF]][0, 0, 1, 0] [%[[N]], 2, 4, 1] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[LEFT]] :
// CHECK: %[[RIGHT:.*]] = memref.subview %[[BUF]][0, 0, 1, 6] [%[[N]], 2, 4, 1] [1, 1, 1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[RIGHT]] :
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic
// CHECK-LABEL: func.func @dynamic_batch_other_size(
// CHECK: %[[BUF:.*]] = memref.alloc(%{{.*}}) : memref<?x2x6x7xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[BUF]] :
// CHECK-NOT: linalg.fill
// CHECK-LABEL: func.func @dynamic_batch_offset(
// CHECK: %[[BUF:.*]] = memref.alloc(%{{.*}}) : memref<?x2x6x7xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[BUF]] :
// CHECK-NOT: linalg.fill
// CHECK-LABEL: func.func @dynamic_batch_one_image(
// CHECK: %[[BUF:.*]] = memref.alloc(%{{.*}}) : memref<?x2x6x7xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[BUF]] :
// CHECK-NOT: linalg.fill
#id = affine_map<(n, c, h, w) -> (n, c, h, w)>
func.func @dynamic_batch(%x: memref<?x2x4x5xf32>, %n: index) -> memref<?x2x6x7xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %buf = memref.alloc(%n) : memref<?x2x6x7xf32>
  linalg.fill ins(%zero : f32) outs(%buf : memref<?x2x6x7xf32>)
  %in = memref.subview %buf[0, 0, 1, 1] [%n, 2, 4, 5] [1, 1, 1, 1] : memref<?x2x6x7xf32> to memref<?x2x4x5xf32, strided<[84, 42, 7, 1], offset: 8>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<?x2x4x5xf32>) outs(%in : memref<?x2x4x5xf32, strided<[84, 42, 7, 1], offset: 8>>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  return %buf : memref<?x2x6x7xf32>
}

func.func @dynamic_batch_other_size(%x: memref<?x2x4x5xf32>, %n: index, %m: index) -> memref<?x2x6x7xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %buf = memref.alloc(%n) : memref<?x2x6x7xf32>
  linalg.fill ins(%zero : f32) outs(%buf : memref<?x2x6x7xf32>)
  %in = memref.subview %buf[0, 0, 1, 1] [%m, 2, 4, 5] [1, 1, 1, 1] : memref<?x2x6x7xf32> to memref<?x2x4x5xf32, strided<[84, 42, 7, 1], offset: 8>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<?x2x4x5xf32>) outs(%in : memref<?x2x4x5xf32, strided<[84, 42, 7, 1], offset: 8>>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  return %buf : memref<?x2x6x7xf32>
}

func.func @dynamic_batch_offset(%x: memref<?x2x4x5xf32>, %n: index) -> memref<?x2x6x7xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %buf = memref.alloc(%n) : memref<?x2x6x7xf32>
  linalg.fill ins(%zero : f32) outs(%buf : memref<?x2x6x7xf32>)
  %in = memref.subview %buf[1, 0, 1, 1] [%n, 2, 4, 5] [1, 1, 1, 1] : memref<?x2x6x7xf32> to memref<?x2x4x5xf32, strided<[84, 42, 7, 1], offset: 92>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<?x2x4x5xf32>) outs(%in : memref<?x2x4x5xf32, strided<[84, 42, 7, 1], offset: 92>>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  return %buf : memref<?x2x6x7xf32>
}

func.func @dynamic_batch_one_image(%x: memref<1x2x4x5xf32>, %n: index) -> memref<?x2x6x7xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %buf = memref.alloc(%n) : memref<?x2x6x7xf32>
  linalg.fill ins(%zero : f32) outs(%buf : memref<?x2x6x7xf32>)
  %in = memref.subview %buf[0, 0, 1, 1] [1, 2, 4, 5] [1, 1, 1, 1] : memref<?x2x6x7xf32> to memref<1x2x4x5xf32, strided<[84, 42, 7, 1], offset: 8>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x2x4x5xf32>) outs(%in : memref<1x2x4x5xf32, strided<[84, 42, 7, 1], offset: 8>>) {
  ^bb0(%a: f32, %b: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  return %buf : memref<?x2x6x7xf32>
}
