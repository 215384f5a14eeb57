// RUN: dist-opt %s --split-input-file --dist-fuse-pointwise-depthwise | FileCheck %s

// The 1x1 call (Clip) and the stride-2 depthwise call (SiLU) on its
// output, M written through a reshape and read whole: one call with the
// pointwise operands, the depthwise ones, then the two images.
// CHECK-LABEL: func.func @fused(
// CHECK: %[[K0:.*]] = arith.constant 0 : i64
// CHECK: %[[K1:.*]] = arith.constant 1 : i64
// CHECK: %[[K2:.*]] = arith.constant 2 : i64
// CHECK: %[[K3:.*]] = arith.constant 3 : i64
// CHECK: %[[K4:.*]] = arith.constant 4 : i64
// CHECK: %[[K6:.*]] = arith.constant 6 : i64
// CHECK: %[[K8:.*]] = arith.constant 8 : i64
// CHECK: %[[K9:.*]] = arith.constant 9 : i64
// CHECK: %[[K16:.*]] = arith.constant 16 : i64
// CHECK: %[[K32:.*]] = arith.constant 32 : i64
// CHECK: %[[K33:.*]] = arith.constant 33 : i64
// CHECK: %[[LO:.*]] = arith.constant 0.0{{.*}} : f32
// CHECK: %[[HI:.*]] = arith.constant 6.0{{.*}} : f32
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x8x8x32xf32>
// CHECK: %[[PXA:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK-NEXT: %[[PXB:.*]] = arith.addi %[[PXA]]
// CHECK-NEXT: %[[PX:.*]] = arith.index_cast %[[PXB]]
// CHECK: %[[PW1A:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK-NEXT: %[[PW1B:.*]] = arith.addi %[[PW1A]]
// CHECK-NEXT: %[[PW1:.*]] = arith.index_cast %[[PW1B]]
// CHECK: %[[PW2A:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK-NEXT: %[[PW2B:.*]] = arith.addi %[[PW2A]]
// CHECK-NEXT: %[[PW2:.*]] = arith.index_cast %[[PW2B]]
// CHECK-NOT: call @dist_rt_conv2d_nhwc_f32(
// CHECK: %[[POA:.*]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK-NEXT: %[[POB:.*]] = arith.addi %[[POA]]
// CHECK-NEXT: %[[PO:.*]] = arith.index_cast %[[POB]]
// CHECK-NEXT: call @dist_rt_conv2d_nhwc_pwdw_f32(%[[K2]], %[[K8]], %[[K16]], %[[K16]], %[[K32]], %[[PW1]], %[[K0]], %[[LO]], %[[HI]], %[[K4]], %[[K3]], %[[K3]], %[[K2]], %[[K2]], %[[K1]], %[[K1]], %[[K1]], %[[K1]], %[[K0]], %[[K0]], %[[K8]], %[[K8]], %[[PW2]], %[[K0]], %[[LO]], %[[HI]], %[[K8]], %[[PX]], %[[PO]]) : (i64, i64, i64, i64, i64, i64, i64, f32, f32, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64, i64, i64) -> ()
// CHECK-NOT: call @dist_rt_conv2d_nhwc_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @fused(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// M read again after the depthwise call: kept.
// CHECK-LABEL: func.func @read_after(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @read_after(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  call @use(%pmid2) : (i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// A call between the two reads M: kept.
// CHECK-LABEL: func.func @read_between(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @read_between(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %q_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %q_b = arith.addi %q_a, %c0 : index
  %q = arith.index_cast %q_b : index to i64
  call @use(%q) : (i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// A load of M: kept.
// CHECK-LABEL: func.func @loaded(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @loaded(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %ld = memref.load %mid[%c0, %c0, %c0, %c0] : memref<2x16x16x32xf32>
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// A 3x3 first call: kept.
// CHECK-LABEL: func.func @not_pointwise(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @not_pointwise(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k3, %k3, %k1, %k1, %k1, %k1, %k1, %k1, %k1, %k1, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// A strided first call: kept.
// CHECK-LABEL: func.func @strided_pointwise(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @strided_pointwise(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k2, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// Two channels a group (grouped, not depthwise): kept.
// CHECK-LABEL: func.func @grouped(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @grouped(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k16, %k2, %k2, %k16, %k16, %k2, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// An accumulating depthwise call: kept.
// CHECK-LABEL: func.func @accumulates(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @accumulates(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k9) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// A transposed first call: kept.
// CHECK-LABEL: func.func @transposed(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @transposed(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k32) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// Fewer groups than the first call's filters: kept.
// CHECK-LABEL: func.func @channels_differ(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @channels_differ(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k16, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// Other rows than the first call wrote: kept.
// CHECK-LABEL: func.func @rows_differ(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @rows_differ(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k8, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// The batch differs: kept.
// CHECK-LABEL: func.func @batch_differs(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @batch_differs(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k1, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// The depthwise call writes the buffer the first call reads: kept.
// CHECK-LABEL: func.func @in_place(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @in_place(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// A call between the two takes the first call's input (it may write
// it): kept.
// CHECK-LABEL: func.func @input_reused(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @input_reused(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %inbuf = memref.alloc() : memref<2x16x16x8xf32>
  memref.copy %x, %inbuf : memref<2x16x16x8xf32> to memref<2x16x16x8xf32>
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %inbuf : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %q_a = memref.extract_aligned_pointer_as_index %inbuf : memref<2x16x16x8xf32> -> index
  %q_b = arith.addi %q_a, %c0 : index
  %q = arith.index_cast %q_b : index to i64
  call @use(%q) : (i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// A copy between the two writes the first call's input: kept.
// CHECK-LABEL: func.func @input_copied(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @input_copied(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %inbuf = memref.alloc() : memref<2x16x16x8xf32>
  memref.copy %x, %inbuf : memref<2x16x16x8xf32> to memref<2x16x16x8xf32>
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %inbuf : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.copy %x, %inbuf : memref<2x16x16x8xf32> to memref<2x16x16x8xf32>
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}

// -----

// The first call's input read whole before it, in an allocation: fused.
// CHECK-LABEL: func.func @input_buffer(
// CHECK: %[[K0:.*]] = arith.constant 0 : i64
// CHECK: %[[K1:.*]] = arith.constant 1 : i64
// CHECK: %[[K2:.*]] = arith.constant 2 : i64
// CHECK: %[[K3:.*]] = arith.constant 3 : i64
// CHECK: %[[K4:.*]] = arith.constant 4 : i64
// CHECK: %[[K6:.*]] = arith.constant 6 : i64
// CHECK: %[[K8:.*]] = arith.constant 8 : i64
// CHECK: %[[K9:.*]] = arith.constant 9 : i64
// CHECK: %[[K16:.*]] = arith.constant 16 : i64
// CHECK: %[[K32:.*]] = arith.constant 32 : i64
// CHECK: %[[K33:.*]] = arith.constant 33 : i64
// CHECK: %[[LO:.*]] = arith.constant 0.0{{.*}} : f32
// CHECK: %[[HI:.*]] = arith.constant 6.0{{.*}} : f32
// CHECK: %[[IN:.*]] = memref.alloc() : memref<2x16x16x8xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x8x8x32xf32>
// CHECK: %[[PXA:.*]] = memref.extract_aligned_pointer_as_index %[[IN]]
// CHECK-NEXT: %[[PXB:.*]] = arith.addi %[[PXA]]
// CHECK-NEXT: %[[PX:.*]] = arith.index_cast %[[PXB]]
// CHECK: %[[PW1A:.*]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK-NEXT: %[[PW1B:.*]] = arith.addi %[[PW1A]]
// CHECK-NEXT: %[[PW1:.*]] = arith.index_cast %[[PW1B]]
// CHECK: %[[PW2A:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK-NEXT: %[[PW2B:.*]] = arith.addi %[[PW2A]]
// CHECK-NEXT: %[[PW2:.*]] = arith.index_cast %[[PW2B]]
// CHECK-NOT: call @dist_rt_conv2d_nhwc_f32(
// CHECK: %[[POA:.*]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK-NEXT: %[[POB:.*]] = arith.addi %[[POA]]
// CHECK-NEXT: %[[PO:.*]] = arith.index_cast %[[POB]]
// CHECK-NEXT: call @dist_rt_conv2d_nhwc_pwdw_f32(%[[K2]], %[[K8]], %[[K16]], %[[K16]], %[[K32]], %[[PW1]], %[[K0]], %[[LO]], %[[HI]], %[[K4]], %[[K3]], %[[K3]], %[[K2]], %[[K2]], %[[K1]], %[[K1]], %[[K1]], %[[K1]], %[[K0]], %[[K0]], %[[K8]], %[[K8]], %[[PW2]], %[[K0]], %[[LO]], %[[HI]], %[[K8]], %[[PX]], %[[PO]]) : (i64, i64, i64, i64, i64, i64, i64, f32, f32, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64, i64, i64) -> ()
// CHECK-NOT: call @dist_rt_conv2d_nhwc_f32(
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func private @use(i64)
func.func @input_buffer(%x: memref<2x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>) -> memref<2x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %inbuf = memref.alloc() : memref<2x16x16x8xf32>
  memref.copy %x, %inbuf : memref<2x16x16x8xf32> to memref<2x16x16x8xf32>
  %mid = memref.alloc() : memref<2x16x16x32xf32>
  %out = memref.alloc() : memref<2x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [2, 16, 16, 1, 32] : memref<2x16x16x32xf32> into memref<2x16x16x1x32xf32>
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<2x16x16x1x32xf32> -> index
  %pmid_b = arith.addi %pmid_a, %c0 : index
  %pmid = arith.index_cast %pmid_b : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %inbuf : memref<2x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %k2, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<2x16x16x32xf32> -> index
  %pmid2_b = arith.addi %pmid2_a, %c0 : index
  %pmid2 = arith.index_cast %pmid2_b : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<2x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %k2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<2x16x16x32xf32>
  return %out : memref<2x8x8x32xf32>
}


// -----

// A dynamic batch, each call's read from another allocation of the same
// size (bufferization's dims of dead buffers): fused, the pointwise
// call's batch passed on; the wide allocation goes.
// CHECK-LABEL: func.func @dynamic_batch(
// CHECK: %[[D:.*]] = memref.dim %arg0
// CHECK-NOT: memref.alloc(%[[D]]) : memref<?x16x16x32xf32>
// CHECK: %[[N:.*]] = arith.index_cast %[[D]] : index to i64
// CHECK-NEXT: call @dist_rt_conv2d_nhwc_pwdw_f32(%[[N]],
// CHECK-NOT: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func @dynamic_batch(%x: memref<?x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>, %d2: index) -> memref<?x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %d = memref.dim %x, %c0 : memref<?x16x16x8xf32>
  %mid = memref.alloc(%d) : memref<?x16x16x32xf32>
  %out = memref.alloc(%d) : memref<?x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [%d, 16, 16, 1, 32] : memref<?x16x16x32xf32> into memref<?x16x16x1x32xf32>
  %nv = memref.dim %midv, %c0 : memref<?x16x16x1x32xf32>
  %n1 = arith.index_cast %nv : index to i64
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<?x16x16x1x32xf32> -> index
  %pmid = arith.index_cast %pmid_a : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<?x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %n1, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<?x16x16x32xf32> -> index
  %pmid2 = arith.index_cast %pmid2_a : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<?x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  %no = memref.dim %out, %c0 : memref<?x8x8x32xf32>
  %n2 = arith.index_cast %no : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %n2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<?x16x16x32xf32>
  return %out : memref<?x8x8x32xf32>
}

// -----

// Batches of allocations of different sizes: kept.
// CHECK-LABEL: func.func @batch_unknown(
// CHECK-COUNT-2: call @dist_rt_conv2d_nhwc_f32(
// CHECK-NOT: call @dist_rt_conv2d_nhwc_pwdw_f32(
func.func private @dist_rt_conv2d_nhwc_f32(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64)
func.func @batch_unknown(%x: memref<?x16x16x8xf32>, %w1: memref<32x8x1x1xf32>, %w2: memref<32x1x3x3xf32>, %d2: index) -> memref<?x8x8x32xf32> {
  %k0 = arith.constant 0 : i64
  %k1 = arith.constant 1 : i64
  %k2 = arith.constant 2 : i64
  %k3 = arith.constant 3 : i64
  %k4 = arith.constant 4 : i64
  %k6 = arith.constant 6 : i64
  %k8 = arith.constant 8 : i64
  %k9 = arith.constant 9 : i64
  %k16 = arith.constant 16 : i64
  %k32 = arith.constant 32 : i64
  %k33 = arith.constant 33 : i64
  %c0 = arith.constant 0 : index
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %d = memref.dim %x, %c0 : memref<?x16x16x8xf32>
  %mid = memref.alloc(%d) : memref<?x16x16x32xf32>
  %out = memref.alloc(%d2) : memref<?x8x8x32xf32>
  %midv = memref.expand_shape %mid [[0], [1], [2], [3, 4]] output_shape [%d, 16, 16, 1, 32] : memref<?x16x16x32xf32> into memref<?x16x16x1x32xf32>
  %nv = memref.dim %midv, %c0 : memref<?x16x16x1x32xf32>
  %n1 = arith.index_cast %nv : index to i64
  %pmid_a = memref.extract_aligned_pointer_as_index %midv : memref<?x16x16x1x32xf32> -> index
  %pmid = arith.index_cast %pmid_a : index to i64
  %px_a = memref.extract_aligned_pointer_as_index %x : memref<?x16x16x8xf32> -> index
  %px_b = arith.addi %px_a, %c0 : index
  %px = arith.index_cast %px_b : index to i64
  %pw1_a = memref.extract_aligned_pointer_as_index %w1 : memref<32x8x1x1xf32> -> index
  %pw1_b = arith.addi %pw1_a, %c0 : index
  %pw1 = arith.index_cast %pw1_b : index to i64
  %pw2_a = memref.extract_aligned_pointer_as_index %w2 : memref<32x1x3x3xf32> -> index
  %pw2_b = arith.addi %pw2_a, %c0 : index
  %pw2 = arith.index_cast %pw2_b : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k1, %n1, %k8, %k16, %k16, %k32, %k1, %k1, %k1, %k1, %k1, %k1, %k0, %k0, %k0, %k0, %k16, %k16, %px, %pw1, %k0, %pmid, %lo, %hi, %k4) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  %pmid2_a = memref.extract_aligned_pointer_as_index %mid : memref<?x16x16x32xf32> -> index
  %pmid2 = arith.index_cast %pmid2_a : index to i64
  %pout_a = memref.extract_aligned_pointer_as_index %out : memref<?x8x8x32xf32> -> index
  %pout_b = arith.addi %pout_a, %c0 : index
  %pout = arith.index_cast %pout_b : index to i64
  %no = memref.dim %out, %c0 : memref<?x8x8x32xf32>
  %n2 = arith.index_cast %no : index to i64
  call @dist_rt_conv2d_nhwc_f32(%k32, %n2, %k1, %k16, %k16, %k1, %k3, %k3, %k2, %k2, %k1, %k1, %k1, %k1, %k0, %k0, %k8, %k8, %pmid2, %pw2, %k0, %pout, %lo, %hi, %k8) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f32, f32, i64) -> ()
  memref.dealloc %mid : memref<?x16x16x32xf32>
  return %out : memref<?x8x8x32xf32>
}
