// RUN: dist-opt %s -p 'builtin.module(dist-device-allocations)' | FileCheck %s

// The host code's allocation, free and copy calls go to the runtime's
// device allocator; other calls stay.
// CHECK-DAG: llvm.func @dist_rt_device_alloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @dist_rt_device_free(!llvm.ptr)
// CHECK-DAG: llvm.func @dist_rt_device_memref_copy(i64, !llvm.ptr, !llvm.ptr)
// CHECK-DAG: llvm.func @other(!llvm.ptr)
// CHECK-NOT: _mlir_memref_to_llvm
// CHECK-NOT: @memrefCopy
// CHECK-LABEL: llvm.func @f
// CHECK:       %[[P:.*]] = llvm.call @dist_rt_device_alloc(%{{.*}})
// CHECK:       llvm.call @dist_rt_device_memref_copy(
// CHECK:       llvm.call @other(%[[P]])
// CHECK:       llvm.call @dist_rt_device_free(%[[P]])
llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
llvm.func @memrefCopy(i64, !llvm.ptr, !llvm.ptr)
llvm.func @other(!llvm.ptr)
llvm.func @f(%n: i64, %s: !llvm.ptr, %d: !llvm.ptr) {
  %p = llvm.call @_mlir_memref_to_llvm_alloc(%n) : (i64) -> !llvm.ptr
  llvm.call @memrefCopy(%n, %s, %d) : (i64, !llvm.ptr, !llvm.ptr) -> ()
  llvm.call @other(%p) : (!llvm.ptr) -> ()
  llvm.call @_mlir_memref_to_llvm_free(%p) : (!llvm.ptr) -> ()
  llvm.return
}
