// RUN: dist-opt %s --split-input-file --dist-strided-copies-to-loops | FileCheck %s
// RUN: dist-opt %s --split-input-file --dist-strided-copies-to-loops \
// RUN:   --convert-linalg-to-parallel-loops | FileCheck %s --check-prefix=LOOPS

// A tensor.pad bufferizes to a fill and a copy into the interior view: that
// copy becomes linalg.copy, then parallel loops with the row innermost.
// CHECK-LABEL: func.func @pad_interior(
// CHECK-SAME: %[[X:.*]]: memref<8x16x16x16xf32>, %[[P:.*]]: memref<8x16x18x18xf32>)
// CHECK: %[[V:.*]] = memref.subview %[[P]][0, 0, 1, 1] [8, 16, 16, 16] [1, 1, 1, 1]
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%[[X]] : memref<8x16x16x16xf32>) outs(%[[V]] : memref<8x16x16x16xf32, strided<[5184, 324, 18, 1], offset: 19>>)
// LOOPS-LABEL: func.func @pad_interior(
// LOOPS: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}, %[[W:.*]]) =
// LOOPS: memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[W]]] : memref<8x16x16x16xf32>
// LOOPS: memref.store {{.*}} : memref<8x16x16x16xf32, strided<[5184, 324, 18, 1], offset: 19>>
func.func @pad_interior(%x: memref<8x16x16x16xf32>, %p: memref<8x16x18x18xf32>) {
  %v = memref.subview %p[0, 0, 1, 1] [8, 16, 16, 16] [1, 1, 1, 1] : memref<8x16x18x18xf32> to memref<8x16x16x16xf32, strided<[5184, 324, 18, 1], offset: 19>>
  memref.copy %x, %v : memref<8x16x16x16xf32> to memref<8x16x16x16xf32, strided<[5184, 324, 18, 1], offset: 19>>
  return
}

// -----

// A copy out of a strided view too.
// CHECK-LABEL: func.func @slice_out(
// CHECK: linalg.copy ins(%{{.*}} : memref<4x8xf32, strided<[16, 1], offset: 8>>) outs(%{{.*}} : memref<4x8xf32>)
func.func @slice_out(%x: memref<4x16xf32>, %y: memref<4x8xf32>) {
  %v = memref.subview %x[0, 8] [4, 8] [1, 1] : memref<4x16xf32> to memref<4x8xf32, strided<[16, 1], offset: 8>>
  memref.copy %v, %y : memref<4x8xf32, strided<[16, 1], offset: 8>> to memref<4x8xf32>
  return
}

// -----

// Between whole buffers (identity layouts, static or dynamic) the copy stays
// one memcpy.
// CHECK-LABEL: func.func @whole(
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<64x512xf32> to memref<64x512xf32>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<?x512xf32> to memref<?x512xf32>
// CHECK-NOT: linalg.copy
func.func @whole(%a: memref<64x512xf32>, %b: memref<64x512xf32>, %c: memref<?x512xf32>, %d: memref<?x512xf32>) {
  memref.copy %a, %b : memref<64x512xf32> to memref<64x512xf32>
  memref.copy %c, %d : memref<?x512xf32> to memref<?x512xf32>
  return
}

// -----

// A batch-1 concatenation's channel slice is contiguous (an offset, no
// gaps): the copy into it stays memref.copy, which lowers to one memcpy.
// A slice of a batch of 2 has a gap between its images, but each image's
// part is one contiguous row of 25 KiB: that copy stays memref.copy too
// (one memcpy per image, see @long_rows).
// CHECK-LABEL: func.func @contiguous_slice(
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<1x32x14x14xf32> to memref<1x32x14x14xf32, strided<[50176, 196, 14, 1], offset: 12544>>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<2x32x14x14xf32> to memref<2x32x14x14xf32, strided<[50176, 196, 14, 1], offset: 12544>>
// CHECK-NOT: linalg.copy
func.func @contiguous_slice(%x: memref<1x32x14x14xf32>, %cat: memref<1x256x14x14xf32>, %x2: memref<2x32x14x14xf32>, %cat2: memref<2x256x14x14xf32>) {
  %v = memref.subview %cat[0, 64, 0, 0] [1, 32, 14, 14] [1, 1, 1, 1] : memref<1x256x14x14xf32> to memref<1x32x14x14xf32, strided<[50176, 196, 14, 1], offset: 12544>>
  memref.copy %x, %v : memref<1x32x14x14xf32> to memref<1x32x14x14xf32, strided<[50176, 196, 14, 1], offset: 12544>>
  %w = memref.subview %cat2[0, 64, 0, 0] [2, 32, 14, 14] [1, 1, 1, 1] : memref<2x256x14x14xf32> to memref<2x32x14x14xf32, strided<[50176, 196, 14, 1], offset: 12544>>
  memref.copy %x2, %w : memref<2x32x14x14xf32> to memref<2x32x14x14xf32, strided<[50176, 196, 14, 1], offset: 12544>>
  return
}

// -----

// A batch-8 concatenation's channel slice: rows of 32 x 7 x 7 floats
// (6,272 bytes) contiguous on both sides, 8 of them. The copy stays
// memref.copy (the runtime copies each row with one memcpy); rows of 7 x 7
// floats (one channel) become linalg.copy.
// CHECK-LABEL: func.func @long_rows(
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<8x32x7x7xf32> to memref<8x32x7x7xf32, strided<[3136, 49, 7, 1], offset: 1568>>
// CHECK: linalg.copy ins(%{{.*}} : memref<8x1x7x7xf32>)
// CHECK-NOT: memref.copy
func.func @long_rows(%x: memref<8x32x7x7xf32>, %c: memref<8x64x7x7xf32>, %y: memref<8x1x7x7xf32>) {
  %v = memref.subview %c[0, 32, 0, 0] [8, 32, 7, 7] [1, 1, 1, 1] : memref<8x64x7x7xf32> to memref<8x32x7x7xf32, strided<[3136, 49, 7, 1], offset: 1568>>
  memref.copy %x, %v : memref<8x32x7x7xf32> to memref<8x32x7x7xf32, strided<[3136, 49, 7, 1], offset: 1568>>
  %w = memref.subview %c[0, 5, 0, 0] [8, 1, 7, 7] [1, 1, 1, 1] : memref<8x64x7x7xf32> to memref<8x1x7x7xf32, strided<[3136, 49, 7, 1], offset: 245>>
  memref.copy %y, %w : memref<8x1x7x7xf32> to memref<8x1x7x7xf32, strided<[3136, 49, 7, 1], offset: 245>>
  return
}
