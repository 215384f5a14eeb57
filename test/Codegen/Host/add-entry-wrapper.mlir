// RUN: dist-opt %s --split-input-file --verify-diagnostics \
// RUN:   --dist-add-entry-wrapper="entry=f symbol=dist_model_entry_m" | FileCheck %s

// The packed entry point the runtime calls: args[0..2) are the two memref
// descriptors (parameters, then inputs), args[2] the buffer for the result
// descriptor, which the C interface takes first.
// The C interface being the entry's only caller, the entry becomes
// internal and always inlined into it, its noinline gone (other
// passthrough attributes stay).
// CHECK: llvm.func internal @f(
// CHECK-SAME: always_inline
// CHECK-SAME: passthrough = ["nounwind"]
// CHECK-NOT: noinline
// CHECK: llvm.func @dist_model_entry_m(%[[ARGS:.*]]: !llvm.ptr)
// CHECK: %[[S2:.*]] = llvm.getelementptr %[[ARGS]][2]
// CHECK: %[[R:.*]] = llvm.load %[[S2]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[S0:.*]] = llvm.getelementptr %[[ARGS]][0]
// CHECK: %[[A:.*]] = llvm.load %[[S0]]
// CHECK: %[[S1:.*]] = llvm.getelementptr %[[ARGS]][1]
// CHECK: %[[B:.*]] = llvm.load %[[S1]]
// CHECK: llvm.call @_mlir_ciface_f(%[[R]], %[[A]], %[[B]])
// CHECK: llvm.return
module {
  llvm.func @f(%a: !llvm.ptr, %b: !llvm.ptr) -> !llvm.struct<(ptr, ptr, i64)>
      attributes {passthrough = ["noinline", "nounwind"]} {
    %u = llvm.mlir.undef : !llvm.struct<(ptr, ptr, i64)>
    llvm.return %u : !llvm.struct<(ptr, ptr, i64)>
  }
  llvm.func @_mlir_ciface_f(%r: !llvm.ptr, %a: !llvm.ptr, %b: !llvm.ptr) {
    %v = llvm.call @f(%a, %b) : (!llvm.ptr, !llvm.ptr) -> !llvm.struct<(ptr, ptr, i64)>
    llvm.store %v, %r : !llvm.struct<(ptr, ptr, i64)>, !llvm.ptr
    llvm.return
  }
}

// -----

// An entry that something else calls too stays public and out of line.
// CHECK-LABEL: llvm.func @f(
// CHECK-SAME: passthrough = ["noinline"]
// CHECK-LABEL: llvm.func @other(
module {
  llvm.func @f(%a: !llvm.ptr) attributes {passthrough = ["noinline"]} {
    llvm.return
  }
  llvm.func @_mlir_ciface_f(%a: !llvm.ptr) {
    llvm.call @f(%a) : (!llvm.ptr) -> ()
    llvm.return
  }
  llvm.func @other(%a: !llvm.ptr) {
    llvm.call @f(%a) : (!llvm.ptr) -> ()
    llvm.return
  }
}

// -----

// An entry without the C interface (llvm.emit_c_interface) cannot be
// wrapped.
// expected-error @+1 {{no C interface for entry function 'f'}}
module {
  llvm.func @f(%a: !llvm.ptr) {
    llvm.return
  }
}
